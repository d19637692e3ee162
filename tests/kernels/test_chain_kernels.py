"""Tests for the linear-chain kernels in ``structlearn.kernels.chain``.

Every kernel is checked against brute force: all ``K^L`` tag sequences of
short chains are enumerated, encoded by an independent numpy encoder and
scored by a dot product; SparseMAP is checked against a generic QP over the
convex hull of the enumerated vertices and its optimality conditions.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize, nnls
from scipy.special import logsumexp

from structlearn.kernels.chain import (
    _forward_backward_impl,
    chain_block_params,
    chain_map,
    encode_batch,
    forward_backward_batch,
    forward_backward_logspace_batch,
    max_marginals_batch,
    poslearn_batch,
    score_batch,
    second_best_batch,
    slack_violator_batch,
    viterbi_batch,
)
from structlearn.kernels.sparsemap import sparsemap_active_set, sparsemap_active_set_ragged

SEEDS = [0, 1, 2, 3]
KS = [1, 2, 3]


# ---------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------
def phi_ref(seq, K):
    """Vertex of one tag sequence: unary one-hots, transition counts, start,
    end (block layout)."""
    seq = np.asarray(seq)
    L = len(seq)
    U = np.zeros((L, K))
    U[np.arange(L), seq] = 1.0
    T = np.zeros((K, K))
    for a, b in zip(seq[:-1], seq[1:]):
        T[a, b] += 1.0
    s = np.zeros(K)
    s[seq[0]] = 1.0
    e = np.zeros(K)
    e[seq[-1]] = 1.0
    return np.concatenate([U.ravel(), T.ravel(), s, e])


class Block:
    """All sequences of one chain with their vertices and scores."""

    def __init__(self, theta_block, L, K):
        self.L, self.K = L, K
        self.theta = theta_block
        self.S = np.array(list(itertools.product(range(K), repeat=L)), dtype=np.int64)
        self.Phi = np.array([phi_ref(s, K) for s in self.S])
        self.scores = self.Phi @ theta_block

    def index(self, seq):
        return int(np.flatnonzero((self.S == np.asarray(seq)).all(axis=1))[0])

    def score(self, seq):
        return self.scores[self.index(seq)]


def make_batch(seed, K, lengths=None, scale=1.0, max_len=5):
    rng = np.random.RandomState(seed)
    if lengths is None:
        lengths = [1] + list(rng.randint(1, max_len + 1, size=4))
    lengths = np.asarray(lengths, dtype=np.int64)
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    sizes = lengths * K + K * K + 2 * K
    part_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    theta = scale * rng.randn(part_off[-1])
    blocks = [Block(theta[part_off[i]:part_off[i + 1]], int(lengths[i]), K)
              for i in range(len(lengths))]
    return rng, theta, part_off, tok_off, blocks


def random_tags(rng, tok_off, K):
    return rng.randint(0, K, size=tok_off[-1]).astype(np.int64)


def seqs(y, tok_off):
    return [y[tok_off[i]:tok_off[i + 1]] for i in range(len(tok_off) - 1)]


CASES = [(s, K) for s in SEEDS for K in KS]


# ---------------------------------------------------------------------------
# encode / score / Viterbi / chain_map
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed,K", CASES)
def test_encode_and_score(seed, K):
    rng, theta, part_off, tok_off, blocks = make_batch(seed, K)
    y = random_tags(rng, tok_off, K)
    phi = encode_batch(y, part_off, tok_off, K)
    ref = np.concatenate([phi_ref(s, K) for s in seqs(y, tok_off)])
    assert_array_equal(phi, ref)
    s = score_batch(theta, y, part_off, tok_off, K)
    dots = [phi[a:b] @ theta[a:b] for a, b in zip(part_off[:-1], part_off[1:])]
    assert_allclose(s, dots, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed,K", CASES)
def test_viterbi_and_chain_map(seed, K):
    _, theta, part_off, tok_off, blocks = make_batch(seed, K)
    y = viterbi_batch(theta, part_off, tok_off, K)
    for i, (blk, yi) in enumerate(zip(blocks, seqs(y, tok_off))):
        assert_allclose(blk.score(yi), blk.scores.max(), rtol=1e-12, atol=1e-12)
        assert blk.index(yi) == np.argmax(blk.scores)  # continuous: unique
        out = np.full(len(blk.theta), 7.0)
        chain_map(np.ascontiguousarray(blk.theta), np.array([blk.L, K], dtype=float), out)
        assert_array_equal(out, blk.Phi[np.argmax(blk.scores)])


@pytest.mark.parametrize("seed", SEEDS)
def test_viterbi_tie_breaking(seed):
    """Exact ties (integer scores): reverse-lexicographically smallest optimum."""
    K = 3
    rng, _, part_off, tok_off, blocks = make_batch(seed, K)
    theta = rng.randint(-1, 2, size=part_off[-1]).astype(float)
    y = viterbi_batch(theta, part_off, tok_off, K)
    n_tied = 0
    for i, yi in enumerate(seqs(y, tok_off)):
        blk = Block(theta[part_off[i]:part_off[i + 1]], blocks[i].L, K)
        opt = blk.S[blk.scores == blk.scores.max()]
        n_tied += len(opt) > 1
        expected = min(tuple(s[::-1]) for s in opt)[::-1]
        assert_array_equal(yi, expected)
        out = np.zeros(len(blk.theta))
        chain_map(blk.theta.copy(), np.array([blk.L, K], dtype=float), out)
        assert_array_equal(out, phi_ref(expected, K))
    assert n_tied > 0  # the tie rule was exercised
    zeros = viterbi_batch(np.zeros(part_off[-1]), part_off, tok_off, K)
    assert_array_equal(zeros, 0)


# ---------------------------------------------------------------------------
# forward-backward / max-marginals
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed,K", CASES)
def test_forward_backward(seed, K):
    _, theta, part_off, tok_off, blocks = make_batch(seed, K, scale=2.0)
    mu, logZ = forward_backward_batch(theta, part_off, tok_off, K)
    for i, blk in enumerate(blocks):
        lz = logsumexp(blk.scores)
        assert_allclose(logZ[i], lz, rtol=1e-12, atol=1e-10)
        p = np.exp(blk.scores - lz)
        assert_allclose(mu[part_off[i]:part_off[i + 1]], p @ blk.Phi, atol=1e-10)


@pytest.mark.parametrize("seed,K", CASES)
def test_max_marginals(seed, K):
    _, theta, part_off, tok_off, blocks = make_batch(seed, K)
    M = max_marginals_batch(theta, part_off, tok_off, K)
    assert M.shape == (tok_off[-1], K)
    for i, blk in enumerate(blocks):
        ref = np.array([[blk.scores[blk.S[:, t] == k].max() for k in range(K)]
                        for t in range(blk.L)])
        assert_allclose(M[tok_off[i]:tok_off[i + 1]], ref, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# second best / PosLearn / slack violator
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed,K", CASES)
@pytest.mark.parametrize("which", ["map", "random"])
def test_second_best(seed, K, which):
    rng, theta, part_off, tok_off, blocks = make_batch(seed, K)
    if which == "map":
        y = viterbi_batch(theta, part_off, tok_off, K)
    else:
        y = random_tags(rng, tok_off, K)
    y2, exists = second_best_batch(theta, y, part_off, tok_off, K)
    for i, (blk, yi, y2i) in enumerate(zip(blocks, seqs(y, tok_off), seqs(y2, tok_off))):
        others = ~(blk.S == yi).all(axis=1)
        if not others.any():
            assert K == 1 and not exists[i]
            assert_array_equal(y2i, yi)
            continue
        assert exists[i]
        assert not np.array_equal(y2i, yi)
        assert_allclose(blk.score(y2i), blk.scores[others].max(), rtol=1e-12, atol=1e-12)
    assert_array_equal(exists, K > 1)


def poslearn_ref(blk, yi):
    s_y = blk.score(yi)
    phi_y = phi_ref(yi, blk.K)
    value, grad, n_pos, n_neg = 0.0, np.zeros(len(blk.theta)), 0, 0
    for t in range(blk.L):
        mask = blk.S[:, t] != yi[t]
        if not mask.any():
            continue
        j = np.flatnonzero(mask)[np.argmax(blk.scores[mask])]
        margin = 1.0 - s_y + blk.scores[j]
        if margin > 0:
            value += margin
            grad += blk.Phi[j] - phi_y
            n_pos += 1
        else:
            n_neg += 1
    return value, grad, n_pos, n_neg


@pytest.mark.parametrize("seed,K", CASES)
def test_poslearn(seed, K):
    rng, theta0, part_off, tok_off, _ = make_batch(seed, K)
    n_pos = n_neg = 0
    for scale, which in [(1.0, "random"), (3.0, "map"), (0.3, "map"), (3.0, "random")]:
        theta = scale * theta0
        if which == "map":
            y = viterbi_batch(theta, part_off, tok_off, K)
        else:
            y = random_tags(rng, tok_off, K)
        value, grad = poslearn_batch(theta, y, part_off, tok_off, K)
        for i, yi in enumerate(seqs(y, tok_off)):
            blk = Block(theta[part_off[i]:part_off[i + 1]], len(yi), K)
            v, g, p, q = poslearn_ref(blk, yi)
            n_pos += p
            n_neg += q
            assert_allclose(value[i], v, rtol=1e-12, atol=1e-10)
            assert_array_equal(grad[part_off[i]:part_off[i + 1]], g)
    if K > 1:
        assert n_pos > 0 and n_neg > 0  # both branches exercised
    else:
        assert_array_equal(value, 0.0)
        assert_array_equal(grad, 0.0)


@pytest.mark.parametrize("seed,K", CASES)
def test_slack_violator(seed, K):
    rng, theta0, part_off, tok_off, blocks = make_batch(seed, K)
    n_pos = n_none = 0
    for scale, which in [(1.0, "random"), (1.0, "map"), (4.0, "map"), (0.2, "random")]:
        theta = scale * theta0
        if which == "map":
            y = viterbi_batch(theta, part_off, tok_off, K)
        else:
            y = random_tags(rng, tok_off, K)
        y_hat = slack_violator_batch(theta, y, part_off, tok_off, K)
        for i, (yi, yh) in enumerate(zip(seqs(y, tok_off), seqs(y_hat, tok_off))):
            blk = Block(theta[part_off[i]:part_off[i + 1]], len(yi), K)
            H = (blk.S != yi).sum(axis=1)
            obj = H * (1.0 - blk.score(yi) + blk.scores)
            best = obj.max()  # >= 0: y itself gives 0
            if best <= 1e-12:
                n_none += 1
                assert_array_equal(yh, yi)
            else:
                n_pos += 1
                assert_allclose(obj[blk.index(yh)], best, rtol=1e-12, atol=1e-10)
    assert n_none > 0
    if K > 1:
        assert n_pos > 0


# ---------------------------------------------------------------------------
# SparseMAP on chains
# ---------------------------------------------------------------------------
def sparsemap_qp_ref(blk):
    """min_q 1/2 ||U q - theta_U||^2 - <c, q> over the simplex (SLSQP),
    ``U`` the unary parts of the vertices, ``c`` their non-unary scores."""
    nu = blk.L * blk.K
    U = blk.Phi[:, :nu].T
    tU = blk.theta[:nu]
    c = blk.Phi[:, nu:] @ blk.theta[nu:]
    m = len(blk.Phi)

    def f(q):
        r = U @ q - tU
        return 0.5 * r @ r - c @ q

    def g(q):
        return U.T @ (U @ q - tU) - c

    res = minimize(f, np.full(m, 1.0 / m), jac=g, method="SLSQP",
                   bounds=[(0.0, 1.0)] * m,
                   constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0,
                                 "jac": lambda q: np.ones(m)}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    q = np.clip(res.x, 0.0, None)
    q /= q.sum()
    return blk.Phi.T @ q


def in_hull_residual(V, x, penalty=1e4):
    A = np.vstack([V.T, penalty * np.ones((1, len(V)))])
    q, _ = nnls(A, np.concatenate([x, [penalty]]), maxiter=50 * len(V))
    return np.max(np.abs(V.T @ q - x))


@pytest.mark.parametrize("seed,K", [(s, K) for s in SEEDS[:3] for K in KS])
def test_sparsemap_ragged_chain(seed, K):
    _, theta, part_off, tok_off, blocks = make_batch(seed, K, scale=1.5, max_len=4)
    lengths = np.diff(tok_off)
    n_unary = (lengths * K).astype(np.int64)
    params, params_off = chain_block_params(tok_off, K)
    assert_array_equal(params_off, 2 * np.arange(len(lengths) + 1))
    assert_array_equal(params.reshape(-1, 2), np.column_stack([lengths, np.full_like(lengths, K)]))
    mu, n_capped = sparsemap_active_set_ragged(theta, part_off, n_unary, chain_map, params,
                                               params_off, 1000, 1e-12)
    assert mu.shape == theta.shape and n_capped == 0
    for i, blk in enumerate(blocks):
        m = mu[part_off[i]:part_off[i + 1]]
        nu = n_unary[i]
        # Exactly the single-structure solver on the block.
        single, V, _, _ = sparsemap_active_set(blk.theta.copy(), nu, chain_map,
                                               params[2 * i:2 * i + 2].copy(), 1000, 1e-12)
        assert_allclose(m, single, atol=1e-12)
        # Feasible: mu lies in the convex hull of the vertices.
        assert in_hull_residual(blk.Phi, m) < 1e-6
        # Optimality: <grad, v - mu> <= 0 for every vertex, and agreement with
        # a generic QP over the enumerated vertices.  (Transitions are not
        # penalised, so supports can be affinely dependent in the unary
        # coordinates; see tests/kernels/test_sparsemap_degenerate.py.)
        grad = blk.theta.copy()
        grad[:nu] -= m[:nu]
        assert np.max((blk.Phi - m) @ grad) <= 1e-8
        assert_allclose(m, sparsemap_qp_ref(blk), atol=1e-5)


# ---------------------------------------------------------------------------
# Large magnitudes
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("K", KS)
def test_large_magnitude_no_nan(K):
    rng, theta, part_off, tok_off, blocks = make_batch(5, K, scale=1e6, max_len=5)
    y = viterbi_batch(theta, part_off, tok_off, K)
    yr = random_tags(rng, tok_off, K)
    s = score_batch(theta, y, part_off, tok_off, K)
    phi = encode_batch(y, part_off, tok_off, K)
    assert_allclose(s, [phi[a:b] @ theta[a:b] for a, b in zip(part_off[:-1], part_off[1:])],
                    rtol=1e-12)
    mu, logZ = forward_backward_batch(theta, part_off, tok_off, K)
    M = max_marginals_batch(theta, part_off, tok_off, K)
    y2, _ = second_best_batch(theta, y, part_off, tok_off, K)
    val, grad = poslearn_batch(theta, yr, part_off, tok_off, K)
    yh = slack_violator_batch(theta, yr, part_off, tok_off, K)
    for arr in (mu, logZ, M, val, grad, s):
        assert np.all(np.isfinite(arr))
    for i, blk in enumerate(blocks):
        L = blk.L
        assert_allclose(blk.score(y[tok_off[i]:tok_off[i + 1]]), blk.scores.max(), rtol=1e-12)
        top = blk.scores.max()
        assert top - 1e-9 * abs(top) <= logZ[i] <= top + L * np.log(K) + 1e-9 * abs(top)
        mu_u = mu[part_off[i]:part_off[i] + L * K].reshape(L, K)
        assert_allclose(mu_u.sum(axis=1), 1.0, atol=1e-9)
        assert np.all(mu >= 0.0)
        H = (blk.S != yr[tok_off[i]:tok_off[i + 1]]).sum(axis=1)
        obj = H * (1.0 - blk.score(yr[tok_off[i]:tok_off[i + 1]]) + blk.scores)
        assert_allclose(obj[blk.index(yh[tok_off[i]:tok_off[i + 1]])], max(obj.max(), 0.0),
                        rtol=1e-9)
    y_all = np.concatenate([b.S[np.argmax(b.scores)] for b in blocks])
    assert_array_equal(y, y_all)


# ---------------------------------------------------------------------------
# Scaled-probability forward-backward vs. its log-space fallback
# ---------------------------------------------------------------------------
def random_chain_batch(seed, K, n=40, min_len=1, max_len=30, scale=1.0, shared=False):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(min_len, max_len + 1, size=n).astype(np.int64)
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    sizes = lengths * K + K * K + 2 * K
    part_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    theta = scale * rng.randn(part_off[-1])
    if shared:  # CRF-like: transitions/start/end shared by runs of sequences
        tse = scale * rng.randn(K * K + 2 * K)
        for i in range(n):
            if rng.rand() < 0.8:
                a = part_off[i] + lengths[i] * K
                theta[a:part_off[i + 1]] = tse
    return theta, part_off, tok_off


@pytest.mark.parametrize("K", [1, 2, 5, 20, 23])
@pytest.mark.parametrize("scale,shared", [(1.0, False), (3.0, False), (1.0, True), (15.0, True)])
def test_forward_backward_scaled_matches_logspace(K, scale, shared):
    theta, part_off, tok_off = random_chain_batch(K, K, scale=scale, shared=shared)
    mu, logZ, n_log = _forward_backward_impl(theta, part_off, tok_off, K, False)
    assert n_log == 0  # moderate scores: all on the fast path
    mu_ref, logZ_ref = forward_backward_logspace_batch(theta, part_off, tok_off, K)
    assert_allclose(logZ, logZ_ref, rtol=1e-10, atol=0)
    assert np.all(mu_ref >= 0)
    assert_allclose(mu, mu_ref, rtol=1e-10, atol=0)
    mu2, logZ2 = forward_backward_batch(theta, part_off, tok_off, K)
    assert_array_equal(mu2, mu)
    assert_array_equal(logZ2, logZ)


@pytest.mark.parametrize("K", [2, 3])
def test_forward_backward_fallback_huge_scores(K):
    """Huge scores underflow the exponentiated potentials: those sequences
    (and only those) are recomputed in log space, and agree with brute force."""
    _, theta, part_off, tok_off, blocks = make_batch(7, K, scale=1.0, max_len=5)
    huge = np.array([i % 2 == 1 for i in range(len(blocks))])
    for i in np.flatnonzero(huge):
        theta[part_off[i]:part_off[i + 1]] *= 1e6
    blocks = [Block(theta[part_off[i]:part_off[i + 1]], b.L, K) for i, b in enumerate(blocks)]
    mu, logZ, n_log = _forward_backward_impl(theta, part_off, tok_off, K, False)
    assert n_log == huge.sum() > 0
    mu_log, logZ_log = forward_backward_logspace_batch(theta, part_off, tok_off, K)
    for i, blk in enumerate(blocks):
        sl = slice(part_off[i], part_off[i + 1])
        lz = logsumexp(blk.scores)
        p = np.exp(blk.scores - lz)
        assert_allclose(logZ[i], lz, rtol=1e-12, atol=1e-10)
        assert_allclose(mu[sl], p @ blk.Phi, atol=1e-9)
        assert np.all(np.isfinite(mu[sl])) and np.all(mu[sl] >= 0.0)
        if huge[i]:  # exactly the log-space result
            assert_array_equal(mu[sl], mu_log[sl])
            assert logZ[i] == logZ_log[i]
    mu2, logZ2 = forward_backward_batch(theta, part_off, tok_off, K)
    assert_array_equal(mu2, mu)
    assert_array_equal(logZ2, logZ)


def test_forward_backward_fallback_range_and_nonfinite():
    """Score ranges just under / over the fast-path bound, shared transitions
    reused after a fallback sequence, and a non-finite score (log space)."""
    K = 4
    theta, part_off, tok_off = random_chain_batch(11, K, n=6, min_len=3, max_len=8,
                                                  shared=True)
    lengths = np.diff(tok_off)
    theta[part_off[0]:part_off[0] + K] = [0.0, -580.0, -10.0, 3.0]  # under the bound
    theta[part_off[1]:part_off[1] + K] = [0.0, -700.0, -10.0, 3.0]  # over the bound
    theta[part_off[2] + lengths[2] * K] = np.inf  # non-finite transition
    mu, logZ, n_log = _forward_backward_impl(theta, part_off, tok_off, K, False)
    assert n_log == 2
    mu_log, logZ_log = forward_backward_logspace_batch(theta, part_off, tok_off, K)
    ok = np.ones(len(logZ), dtype=bool)
    ok[2] = False
    assert_allclose(logZ[ok], logZ_log[ok], rtol=1e-12)
    for i in np.flatnonzero(ok):
        sl = slice(part_off[i], part_off[i + 1])
        big = mu_log[sl] > 1e-250
        assert_allclose(mu[sl][big], mu_log[sl][big], rtol=1e-10)
        assert_allclose(mu[sl], mu_log[sl], atol=1e-250, rtol=1e-10)
    sl = slice(part_off[2], part_off[3])
    assert_array_equal(mu[sl], mu_log[sl])  # same (log-space) computation
