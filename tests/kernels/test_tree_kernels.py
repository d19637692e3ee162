"""Tests for the dependency-tree kernels in ``structlearn.kernels.tree``.

Every kernel is checked against brute force: all head arrays in
``{0..n}^n`` for ``n <= 5`` are enumerated, the trees (acyclic, every word
reaches the root) kept and filtered for a single root / projectivity, and
encoded, scored, summed over and maximised with plain numpy.  SparseMAP is
compared with a generic QP over the convex hull of the enumerated vertices.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import nnls
from scipy.special import logsumexp

from structlearn.kernels.sparsemap import sparsemap_active_set, sparsemap_active_set_ragged
from structlearn.kernels.tree import (
    best_trees_excluding,
    encode_heads_batch,
    map_batch,
    marginals_batch,
    poslearn_violators_batch,
    projective_trees,
    score_heads_batch,
    second_best_batch,
    second_best_tree,
    tree_arc_offsets,
    tree_block_params,
    tree_map_oracle,
    tree_score,
)
from structlearn.kernels.tree_map import eisner_heads, mst_heads
from structlearn.kernels.tree_marginals import (
    MTT_LINEAR_SPAN,
    _matrix_tree_impl,
    _mtt_forward_linear,
    inside_outside,
    matrix_tree,
)
from structlearn.kernels.tree_validation import (
    HEADS_CYCLE,
    HEADS_NO_ROOT,
    HEADS_OK,
    HEADS_OUT_OF_RANGE,
    HEADS_SELF_LOOP,
    HEADS_SEVERAL_ROOTS,
    check_heads,
    validate_heads,
)
from test_structures import hull_projection
from tree_brute import all_trees, is_projective, is_tree

SEEDS = [0, 1, 2]
NS = [1, 2, 3, 4, 5]
CONFIGS = [(single, proj) for single in (False, True) for proj in (False, True)]


# ---------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------
def encode(H, n):
    """``(T, n, n + 1)`` encodings of the rows of ``H``."""
    phi = np.zeros((len(H), n, n + 1))
    for t, heads in enumerate(H):
        phi[t, np.arange(n), heads] = 1.0
    return phi


def brute_scores(S, H):
    n = S.shape[0]
    return S[np.arange(n)[None, :], H].sum(axis=1)


def brute_marginals(S, H):
    n = S.shape[0]
    sc = brute_scores(S, H)
    logZ = logsumexp(sc)
    p = np.exp(sc - logZ)
    return logZ, np.einsum("t,tmh->mh", p, encode(H, n))


def random_scores(rng, n, scale=1.0):
    return rng.normal(scale=scale, size=(n, n + 1))


def map_fn(projective):
    return eisner_heads if projective else mst_heads


def marg_fn(projective):
    return inside_outside if projective else matrix_tree


def assert_valid(heads, n, single_root, projective):
    assert heads.shape == (n,) and heads.dtype == np.int64
    assert is_tree(heads)
    assert not any(heads[m - 1] == m for m in range(1, n + 1))
    if single_root:
        assert np.sum(heads == 0) == 1
    if projective:
        assert is_projective(heads)


# ---------------------------------------------------------------------------
# Enumeration sanity
# ---------------------------------------------------------------------------
def test_enumeration_counts():
    for n in NS:
        assert len(all_trees(n, False, False)) == (n + 1) ** (n - 1)     # Cayley
        assert len(all_trees(n, True, False)) == n ** (n - 1)
    # Projective: binom(3n, n) / (2n + 1) and the single-root numbers.
    assert [len(all_trees(n, False, True)) for n in NS] == [1, 3, 12, 55, 273]
    assert [len(all_trees(n, True, True)) for n in NS] == [1, 2, 7, 30, 143]


# ---------------------------------------------------------------------------
# MAP
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("single_root,projective", CONFIGS)
@pytest.mark.parametrize("seed", SEEDS)
def test_map_matches_brute_force(single_root, projective, seed):
    rng = np.random.default_rng(seed)
    for n in NS:
        H = all_trees(n, single_root, projective)
        for _ in range(4):
            S = random_scores(rng, n)
            S[np.arange(n), np.arange(1, n + 1)] = 100.0     # self-loops are ignored
            sc = brute_scores(S, H)
            heads = map_fn(projective)(S, single_root)
            assert_array_equal(heads, H[np.argmax(sc)])
            assert tree_score(S, heads) == pytest.approx(sc.max(), abs=1e-12)


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_map_ties(single_root, projective):
    """Integer scores: many ties; the returned tree is valid and optimal."""
    rng = np.random.default_rng(7)
    for n in NS:
        H = all_trees(n, single_root, projective)
        for _ in range(15):
            S = rng.integers(-2, 3, size=(n, n + 1)).astype(float)
            heads = map_fn(projective)(S, single_root)
            assert_valid(heads, n, single_root, projective)
            assert tree_score(S, heads) == brute_scores(S, H).max()
            # Deterministic.
            assert_array_equal(map_fn(projective)(S.copy(), single_root), heads)
        # All-equal scores.
        heads = map_fn(projective)(np.zeros((n, n + 1)), single_root)
        assert_valid(heads, n, single_root, projective)


def test_mst_contracts_nested_cycles():
    """Best heads form nested cycles; the single-root optimum is not the
    multi-root optimum with root arcs dropped."""
    n = 6
    S = np.full((n, n + 1), -5.0)
    for m, h in [(1, 2), (2, 1), (3, 4), (4, 3), (5, 6), (6, 5)]:
        S[m - 1, h] = 10.0
    S[0, 3] = 9.0                # cycle (1 2) prefers entering from 3
    S[2, 5] = 8.0
    S[:, 0] = [1.0, 0.5, 2.0, 1.5, 3.0, 0.0]
    for single_root in (False, True):
        H = all_trees(n, single_root, False)
        sc = brute_scores(S, H)
        heads = mst_heads(S, single_root)
        assert_valid(heads, n, single_root, False)
        assert tree_score(S, heads) == pytest.approx(sc.max())


# ---------------------------------------------------------------------------
# Marginals
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("single_root,projective", CONFIGS)
@pytest.mark.parametrize("seed", SEEDS)
def test_marginals_match_brute_force(single_root, projective, seed):
    rng = np.random.default_rng(100 + seed)
    for n in NS:
        H = all_trees(n, single_root, projective)
        for scale in (0.5, 3.0):
            S = random_scores(rng, n, scale)
            S[np.arange(n), np.arange(1, n + 1)] = np.nan       # never read
            logZ, mu = marg_fn(projective)(S, single_root)
            ref_logZ, ref_mu = brute_marginals(np.nan_to_num(S), H)
            assert logZ == pytest.approx(ref_logZ, abs=1e-10)
            assert mu.shape == (n, n + 1)
            assert_allclose(mu, ref_mu, atol=1e-10)
            assert_allclose(mu.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("single_root", [False, True])
def test_matrix_tree_linear_and_log_paths_agree(single_root):
    rng = np.random.default_rng(5)
    for n in [1, 2, 3, 5, 12, 30]:
        S = random_scores(rng, n, 2.0)
        lz_lin, mu_lin = _matrix_tree_impl(S, single_root, False)
        lz_log, mu_log = _matrix_tree_impl(S, single_root, True)
        assert lz_lin == pytest.approx(lz_log, abs=1e-10 * max(1.0, abs(lz_log)))
        assert_allclose(mu_lin, mu_log, atol=1e-12)
        if n <= 5:
            ref_logZ, _ = brute_marginals(S, all_trees(n, single_root, False))
            assert lz_log == pytest.approx(ref_logZ, abs=1e-10)


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_logZ_gradient_is_mu(single_root, projective):
    rng = np.random.default_rng(11)
    eps = 1e-5
    for n in [2, 4]:
        S = random_scores(rng, n)
        _, mu = marg_fn(projective)(S, single_root)
        grad = np.zeros_like(S)
        for m in range(n):
            for h in range(n + 1):
                if h == m + 1:
                    continue
                Sp, Sm = S.copy(), S.copy()
                Sp[m, h] += eps
                Sm[m, h] -= eps
                grad[m, h] = (marg_fn(projective)(Sp, single_root)[0]
                              - marg_fn(projective)(Sm, single_root)[0]) / (2 * eps)
        assert_allclose(mu, grad, atol=1e-7)


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_marginals_stable_for_large_scores(single_root, projective):
    rng = np.random.default_rng(21)
    for n in NS:
        H = all_trees(n, single_root, projective)
        for _ in range(4):
            S = random_scores(rng, n, 1e3)
            logZ, mu = marg_fn(projective)(S, single_root)
            assert np.isfinite(logZ) and np.all(np.isfinite(mu))
            ref_logZ, ref_mu = brute_marginals(S, H)
            assert logZ == pytest.approx(ref_logZ, rel=1e-12)
            assert_allclose(mu, ref_mu, atol=1e-9)
    # Large sentences: finite, normalised, between the MAP score and the MAP
    # score plus the log of the number of trees.
    for n in [20, 45]:
        S = random_scores(rng, n, 1e3)
        logZ, mu = marg_fn(projective)(S, single_root)
        best = tree_score(S, map_fn(projective)(S, single_root))
        assert np.isfinite(logZ) and np.all(np.isfinite(mu))
        assert best - 1e-9 * abs(best) <= logZ <= best + n * np.log(n + 1)
        assert_allclose(mu.sum(axis=1), 1.0, atol=1e-9)
        assert mu.min() >= 0.0


@pytest.mark.parametrize("single_root", [False, True])
def test_matrix_tree_dominant_cycle(single_root):
    """Each word's best head is the other word: the row-max-shifted
    Laplacian is singular to machine precision (an LU determinant gives 0)."""
    for big in [40.0, 1e3, 1e5]:
        S = np.array([[0.0, 0.0, big], [0.0, big, 0.0]])
        logZ, mu = matrix_tree(S, single_root)
        assert logZ == pytest.approx(big + np.log(2.0), rel=1e-14)
        assert_allclose(mu, [[0.5, 0.0, 0.5], [0.5, 0.5, 0.0]], atol=1e-14)
    n = 5
    S = np.zeros((n, n + 1))
    for m in range(1, n + 1):
        S[m - 1, m % n + 1] = 800.0                  # cycle 1 <- 2 <- ... <- 5 <- 1
    S[:, 0] = np.arange(n)
    for big in [1.0, 500.0, 800.0]:
        S2 = np.where(S == 800.0, big, S)
        # Spans up to MTT_LINEAR_SPAN run in linear space, larger in log space.
        assert _mtt_forward_linear(S2, single_root)[0] == (big <= MTT_LINEAR_SPAN)
        logZ, mu = matrix_tree(S2, single_root)
        ref_logZ, ref_mu = brute_marginals(S2, all_trees(n, single_root, False))
        assert logZ == pytest.approx(ref_logZ, rel=1e-13)
        assert_allclose(mu, ref_mu, atol=1e-12)


# ---------------------------------------------------------------------------
# Violators
# ---------------------------------------------------------------------------
def brute_excluding(S, H, heads):
    n = S.shape[0]
    sc = brute_scores(S, H)
    rows = np.full((n, n), -1, dtype=np.int64)
    for m in range(n):
        keep = H[:, m] != heads[m]
        if keep.any():
            rows[m] = H[keep][np.argmax(sc[keep])]
    return rows


@pytest.mark.parametrize("single_root,projective", CONFIGS)
@pytest.mark.parametrize("seed", SEEDS)
def test_violators_match_brute_force(single_root, projective, seed):
    rng = np.random.default_rng(200 + seed)
    for n in NS:
        H = all_trees(n, single_root, projective)
        for _ in range(3):
            S = random_scores(rng, n)
            sc = brute_scores(S, H)
            gold = H[rng.integers(len(H))]
            for heads in (gold, H[np.argmax(sc)]):
                rows = best_trees_excluding(S, heads, single_root, projective)
                assert_array_equal(rows, brute_excluding(S, H, heads))
                tree, exists = second_best_tree(S, heads, single_root, projective)
                others = ~(H == heads).all(axis=1)
                assert exists == others.any()
                if exists:
                    assert_array_equal(tree, H[others][np.argmax(sc[others])])
                else:
                    assert_array_equal(tree, heads)


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_violators_with_ties(single_root, projective):
    rng = np.random.default_rng(31)
    for n in NS:
        H = all_trees(n, single_root, projective)
        for _ in range(6):
            S = rng.integers(-1, 2, size=(n, n + 1)).astype(float)
            sc = brute_scores(S, H)
            heads = H[rng.integers(len(H))]
            rows = best_trees_excluding(S, heads, single_root, projective)
            for m in range(n):
                keep = H[:, m] != heads[m]
                if not keep.any():
                    assert (rows[m] == -1).all()
                    continue
                assert_valid(rows[m], n, single_root, projective)
                assert rows[m, m] != heads[m]
                assert tree_score(S, rows[m]) == sc[keep].max()
            tree, exists = second_best_tree(S, heads, single_root, projective)
            others = ~(H == heads).all(axis=1)
            assert exists == others.any()
            if exists:
                assert not np.array_equal(tree, heads)
                assert tree_score(S, tree) == sc[others].max()


def test_violators_single_word():
    S = np.array([[0.3, 0.0]])
    heads = np.array([0], dtype=np.int64)
    for single_root in (False, True):
        for projective in (False, True):
            assert_array_equal(best_trees_excluding(S, heads, single_root, projective), [[-1]])
            tree, exists = second_best_tree(S, heads, single_root, projective)
            assert not exists
            assert_array_equal(tree, heads)


# ---------------------------------------------------------------------------
# SparseMAP oracle
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_tree_map_oracle(single_root, projective):
    rng = np.random.default_rng(41)
    for n in NS:
        H = all_trees(n, single_root, projective)
        params = np.array([n, float(single_root), float(projective)])
        for _ in range(3):
            eta = rng.normal(size=n * (n + 1))
            out = np.full(n * (n + 1), 7.0)
            tree_map_oracle(projective)(eta, params, out)
            best = H[np.argmax(brute_scores(eta.reshape(n, n + 1), H))]
            assert_array_equal(out, encode(best[None], n).ravel())


def sparsemap_qp_ref(V, eta):
    """``argmin ||mu - eta||^2`` over the convex hull of the rows of ``V``:
    penalised NNLS over the simplex weights, polished on its support and
    certified (``test_structures.hull_projection``; SLSQP over the 125
    multi-root trees of 4 words took ~10 s a call, issue 20)."""
    return hull_projection(V, eta)


def in_hull_residual(V, x, penalty=1e4):
    A = np.vstack([V.T, penalty * np.ones((1, len(V)))])
    q, _ = nnls(A, np.concatenate([x, [penalty]]), maxiter=50 * len(V))
    return np.max(np.abs(V.T @ q - x))


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_sparsemap_matches_brute_force(single_root, projective):
    rng = np.random.default_rng(51)
    for n in [1, 2, 3, 4]:
        H = all_trees(n, single_root, projective)
        V = encode(H, n).reshape(len(H), -1)
        params = np.array([n, float(single_root), float(projective)])
        for scale in (0.3, 1.0):
            eta = rng.normal(scale=scale, size=n * (n + 1))
            mu, verts, weights, _ = sparsemap_active_set(eta, n * (n + 1),
                                                         tree_map_oracle(projective), params,
                                                         500, 1e-12)
            assert weights.sum() == pytest.approx(1.0)
            # Feasible and optimal: <eta - mu, v - mu> <= 0 for every vertex.
            assert in_hull_residual(V, mu) < 1e-8
            assert np.max((V - mu) @ (eta - mu)) <= 1e-9
            assert_allclose(mu, sparsemap_qp_ref(V, eta), atol=1e-5)


# ---------------------------------------------------------------------------
# Batch kernels
# ---------------------------------------------------------------------------
LENGTHS = [1, 3, 5, 2, 1, 4, 5]


def make_batch(seed, lengths=LENGTHS, scale=1.0):
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, dtype=np.int64)
    word_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    arc_off = tree_arc_offsets(word_off)
    theta = rng.normal(scale=scale, size=arc_off[-1])
    blocks = [theta[arc_off[i]:arc_off[i + 1]].reshape(n, n + 1)
              for i, n in enumerate(lengths)]
    return theta, arc_off, word_off, blocks


def test_arc_offsets_and_block_params():
    word_off = np.array([0, 1, 4, 9], dtype=np.int64)
    assert_array_equal(tree_arc_offsets(word_off), [0, 2, 14, 44])
    params, off = tree_block_params(word_off, True, False)
    assert_array_equal(off, [0, 3, 6, 9])
    assert_array_equal(params.reshape(-1, 3), [[1, 1, 0], [3, 1, 0], [5, 1, 0]])


@pytest.mark.parametrize("single_root", [False, True])
def test_batch_marginals_mix_linear_and_log_space_sentences(single_root):
    """The non-projective batch computes what the linear elimination cannot
    (a row spanning more than MTT_LINEAR_SPAN) in a second, log-space kernel:
    every sentence against brute force, wherever it sits in the batch."""
    theta, arc_off, word_off, blocks = make_batch(71)
    for i in (1, 4, 6):                    # huge spans: these go to log space
        blocks[i] *= 1e4
    mu, logZ = marginals_batch(theta, arc_off, word_off, single_root, False)
    for i, S in enumerate(blocks):
        ref_logZ, ref_mu = brute_marginals(S, all_trees(len(S), single_root, False))
        assert logZ[i] == pytest.approx(ref_logZ, rel=1e-12, abs=1e-12)
        assert_allclose(mu[arc_off[i]:arc_off[i + 1]].reshape(S.shape), ref_mu, atol=1e-9)


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_batch_agrees_with_single_calls(single_root, projective):
    theta, arc_off, word_off, blocks = make_batch(61)
    heads = map_batch(theta, arc_off, word_off, single_root, projective)
    mu, logZ = marginals_batch(theta, arc_off, word_off, single_root, projective)
    assert mu.shape == theta.shape and logZ.shape == (len(blocks),)
    rng = np.random.default_rng(62)
    gold = []
    for S in blocks:
        H = all_trees(len(S), single_root, projective)
        gold.append(H[rng.integers(len(H))])
    gold = np.concatenate(gold)
    viol = poslearn_violators_batch(theta, gold, arc_off, word_off, single_root, projective)
    assert viol.shape == (sum(len(S) ** 2 for S in blocks),)
    second, exists = second_best_batch(theta, gold, arc_off, word_off, single_root, projective)
    phi = encode_heads_batch(heads, arc_off, word_off)
    scores = score_heads_batch(theta, heads, arc_off, word_off)
    vpos = 0
    for i, S in enumerate(blocks):
        n = len(S)
        w = slice(word_off[i], word_off[i + 1])
        a = slice(arc_off[i], arc_off[i + 1])
        assert_array_equal(heads[w], map_fn(projective)(S.copy(), single_root))
        lz, m = marg_fn(projective)(S.copy(), single_root)
        assert logZ[i] == lz
        assert_array_equal(mu[a], m.ravel())
        rows = best_trees_excluding(S.copy(), gold[w].copy(), single_root, projective)
        assert_array_equal(viol[vpos:vpos + n * n], rows.ravel())
        vpos += n * n
        tree, ok = second_best_tree(S.copy(), gold[w].copy(), single_root, projective)
        assert exists[i] == ok
        assert_array_equal(second[w], tree)
        assert_array_equal(phi[a], encode(heads[w][None], n).ravel())
        assert scores[i] == pytest.approx(tree_score(S.copy(), heads[w].copy()))
        assert scores[i] == pytest.approx(phi[a] @ theta[a])
    # A sentence of one word has a single tree.
    assert not exists[0] and not exists[4]
    assert exists[1:4].all()


@pytest.mark.parametrize("single_root,projective", CONFIGS)
def test_sparsemap_ragged_batch(single_root, projective):
    theta, arc_off, word_off, blocks = make_batch(71, lengths=[1, 3, 2, 4])
    params, params_off = tree_block_params(word_off, single_root, projective)
    n_unary = np.diff(arc_off).astype(np.int64)
    oracle = tree_map_oracle(projective)
    mu, n_capped = sparsemap_active_set_ragged(theta, arc_off, n_unary, oracle, params,
                                               params_off, 500, 1e-12)
    assert n_capped == 0
    for i, S in enumerate(blocks):
        n = len(S)
        single, _, _, _ = sparsemap_active_set(S.ravel().copy(), n * (n + 1), oracle,
                                               params[3 * i:3 * i + 3].copy(), 500, 1e-12)
        assert_allclose(mu[arc_off[i]:arc_off[i + 1]], single, atol=1e-12)


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------
def test_check_heads_codes():
    def code(heads_list, single_root):
        heads = np.concatenate([np.asarray(h, dtype=np.int64) for h in heads_list])
        word_off = np.concatenate([[0], np.cumsum([len(h) for h in heads_list])])
        return check_heads(heads, word_off.astype(np.int64), single_root)

    assert code([[0], [2, 0, 2]], True) == (HEADS_OK, -1, 0)
    assert code([[0], [2, 0, 4]], False) == (HEADS_OUT_OF_RANGE, 1, 3)
    assert code([[0], [2, 2, 0]], False) == (HEADS_SELF_LOOP, 1, 2)
    assert code([[0, 0, 1]], False)[0] == HEADS_OK
    assert code([[0, 0, 1]], True) == (HEADS_SEVERAL_ROOTS, 0, 2)
    assert code([[2, 1]], False) == (HEADS_NO_ROOT, 0, 0)
    c, i, m = code([[0], [0, 3, 4, 2]], False)
    assert (c, i) == (HEADS_CYCLE, 1) and m in (2, 3, 4)


def test_validate_heads_accepts_and_returns_layout():
    heads, word_off = validate_heads([[0], np.array([2, 0, 2]), (0, 1)], single_root=False)
    assert_array_equal(heads, [0, 2, 0, 2, 0, 1])
    assert_array_equal(word_off, [0, 1, 4, 6])
    assert heads.dtype == np.int64 and word_off.dtype == np.int64


@pytest.mark.parametrize("heads_list,single_root,pattern", [
    ([[0], []], False, r"sentence 1 .*at least one word"),
    ([[0], [0, 5, 1]], False, r"sentence 1 .*head 5 of word 2 is out of range 0\.\.3"),
    ([[0, -1]], False, r"sentence 0 .*head -1 of word 2 is out of range"),
    ([[0, 2]], False, r"sentence 0 .*word 2 is its own head"),
    ([[2, 1]], False, r"sentence 0 .*no word is attached to the root"),
    ([[0], [0, 0, 1]], True, r"sentence 1 .*several words are attached to the root \[1, 2\]"),
    ([[0, 1], [0, 3, 4, 2]], False, r"sentence 1 .*cycle through words \[2, 3, 4\]"),
    ([[0, 3, 2]], True, r"sentence 0 .*cycle through words \[2, 3\]"),
    ([[0, 1.5]], False, r"sentence 0 .*integers"),
])
def test_validate_heads_errors(heads_list, single_root, pattern):
    with pytest.raises(ValueError, match=pattern):
        validate_heads(heads_list, single_root)


def test_validate_heads_several_roots_allowed():
    validate_heads([[0, 0, 1]], single_root=False)


def _projective_by_descent(heads):
    """Every word between a head and its modifier descends from the head
    (the other characterisation of projectivity; root = 0)."""
    def descends(w, h):
        while w != 0:
            if w == h:
                return True
            w = heads[w - 1]
        return h == 0
    for m, h in enumerate(heads, start=1):
        for w in range(min(h, m) + 1, max(h, m)):
            if not descends(w, h):
                return False
    return True


def test_projective_trees_matches_the_descendant_definition():
    # every tree of up to 5 words (multi-root, so single-root ones too), in
    # one ragged batch: 1 + 3 + 16 + 125 + 1296 trees, of which the
    # non-projective ones appear from 3 words on
    batch = [t for n in range(1, 6) for t in all_trees(n, False, False)]
    word_off = np.concatenate([[0], np.cumsum([len(t) for t in batch])]).astype(np.int64)
    got = projective_trees(np.concatenate(batch).astype(np.int64), word_off)
    want = np.array([_projective_by_descent(list(t)) for t in batch])
    assert_array_equal(got, want)
    assert 0 < (~want).sum() < len(batch)
    n_proj = sum(len(all_trees(n, False, True)) for n in range(1, 6))
    assert got.sum() == n_proj
