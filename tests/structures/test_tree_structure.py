"""The dependency-tree structure (``structlearn.structures.tree.Tree``).

Checked against brute force on ragged batches of small sentences (mixed
lengths, including one-word sentences): all head arrays of a sentence are
enumerated, the trees kept (and filtered for a single root / projectivity),
then scored, summed over and maximised with plain numpy.  Every loss of
:mod:`structlearn.losses` is evaluated on tree batches, the smooth ones
checked by finite differences.
"""


import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from scipy.special import logsumexp

from structlearn.kernels.tree_validation import validate_heads
from structlearn.losses import (
    CRF,
    Hinge,
    Perceptron,
    PosLearn,
    Projection,
    SparseMAP,
    Squared,
)
from structlearn.structures.base import IntractableError
from structlearn.structures.tree import Tree
from tree_brute import all_trees, is_projective, is_tree

CONFIGS = [(single, proj) for single in (True, False) for proj in (False, True)]
CONFIG_IDS = [f"{'single' if s else 'multi'}-{'proj' if p else 'nonproj'}"
              for s, p in CONFIGS]
LENGTHS = [1, 3, 5, 2, 1, 4]
SMALL = [1, 2, 3, 4, 1, 3]


# ---------------------------------------------------------------------------
# Brute force
# ---------------------------------------------------------------------------
def onehot(H, n):
    """Flat encodings ``(T, n (n + 1))`` of the head arrays in ``H``."""
    phi = np.zeros((len(H), n, n + 1))
    for t, heads in enumerate(H):
        phi[t, np.arange(n), heads] = 1.0
    return phi.reshape(len(H), -1)


def assert_tree(heads, single_root, projective):
    heads = tuple(int(h) for h in heads)
    assert all(0 <= h <= len(heads) and h != m for m, h in enumerate(heads, start=1))
    assert is_tree(heads)
    if single_root:
        assert heads.count(0) == 1
    if projective:
        assert is_projective(heads)


def make(lengths=LENGTHS, single_root=True, projective=False, seed=0, scale=1.0):
    """A Tree batch, random scores and random gold trees."""
    rng = np.random.default_rng(seed)
    word_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    st = Tree(word_off, single_root=single_root, projective=projective)
    theta = rng.normal(scale=scale, size=st.n_parts)
    gold = []
    for n in lengths:
        H = all_trees(n, single_root, projective)
        gold.append(H[rng.integers(len(H))])
    y, _ = validate_heads(gold, single_root)
    return st, theta, y


def sentences(st, theta, y):
    """Per sentence: ``(n, flat scores, gold heads, enumerated trees, encodings)``."""
    for i in range(st.n):
        n = int(st.lengths[i])
        H = all_trees(n, st.single_root, st.projective)
        yield (n, theta[st.part_off[i]:st.part_off[i + 1]],
               y[st.word_off[i]:st.word_off[i + 1]], H, onehot(H, n))


def block_of(st, a, i):
    return np.asarray(a)[st.part_off[i]:st.part_off[i + 1]]


def index_of(H, heads):
    return int(np.flatnonzero((H == np.asarray(heads)).all(axis=1))[0])


# ---------------------------------------------------------------------------
# Construction, layout, encoding
# ---------------------------------------------------------------------------
def test_enumeration_counts():
    # n^(n-1) single-root and (n+1)^(n-1) trees (Cayley); projective:
    # binom(3n, n) / (2n + 1) trees, of which 1, 2, 7, 30 have a single root
    # (for n = 3: root child 1 or 3 with 3 subtrees each, or 2 with one).
    assert [len(all_trees(n, True, False)) for n in range(1, 5)] == [1, 2, 9, 64]
    assert [len(all_trees(n, False, False)) for n in range(1, 5)] == [1, 3, 16, 125]
    assert [len(all_trees(n, True, True)) for n in range(1, 5)] == [1, 2, 7, 30]
    assert [len(all_trees(n, False, True)) for n in range(1, 5)] == [1, 3, 12, 55]


def test_construction_and_layout():
    st = Tree([0, 1, 4, 6])
    assert st.name == "tree" and st.single_root and not st.projective
    assert st.n == 3 and st.n_samples(None) == 3
    assert_array_equal(st.word_off, [0, 1, 4, 6])
    assert_array_equal(st.lengths, [1, 3, 2])
    assert_array_equal(st.part_off, [0, 2, 14, 20])
    assert_array_equal(st.block_sizes, [2, 12, 6])
    assert_array_equal(st.n_unary, st.block_sizes)
    assert st.n_parts == 20 and st.warm_cache is None
    assert not st.has_exact_slack and st.marginal_set == "tree"
    assert st.projection_sets == {"tree": ("euclidean",), "simplex": ("euclidean", "kl")}
    # self-loops [m - 1, m] are masked out of the arcs
    for i, n in enumerate(st.lengths):
        mask = st.block(st.arc_mask, i)
        assert mask.shape == (n, n + 1)
        assert_array_equal(mask, ~np.eye(n, n + 1, k=1, dtype=bool))
    st2 = Tree(np.array([0, 2, 3]), single_root=0, projective=1)
    assert st2.single_root is False and st2.projective is True
    assert "single_root=False" in repr(st2)


@pytest.mark.parametrize("word_off", [[], [0], [0, 0], [0, 2, 2], [0, 3, 1], [1, 3],
                                      [[0, 1, 2]], [0, 1.5], [0, -1]])
def test_bad_construction_raises(word_off):
    with pytest.raises(ValueError):
        Tree(word_off)


def test_bad_scores_and_labels_raise():
    st, theta, y = make()
    with pytest.raises(ValueError, match="flat array of 72 arc parts"):
        st.argmax(theta[:-1])
    with pytest.raises(ValueError, match="flat array of 72 arc parts"):
        st.marginals(np.zeros((2, st.n_parts)))
    assert_array_equal(st.argmax(theta[None]), st.argmax(theta))  # batch of one row
    with pytest.raises(ValueError, match="16 heads"):
        st.encode(y[:-1])
    bad = y.copy()
    bad[1] = 4  # sentence 1 has 3 words
    with pytest.raises(ValueError, match=r"sentence 1 \(3 words\): head 4 of word 1"):
        st.encode(bad)
    bad[1] = -1
    with pytest.raises(ValueError, match="out of range"):
        st.scores(theta, bad)


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_encode_decode_scores(single_root, projective):
    st, theta, y = make(single_root=single_root, projective=projective, seed=1)
    phi = st.encode(y)
    assert phi.shape == (st.n_parts,)
    assert_array_equal(phi[~st.arc_mask], 0.0)
    assert_array_equal(st.sum_parts(phi), st.lengths)
    assert_array_equal(st.decode(phi), y)
    assert_allclose(st.scores(theta, y), st.dot(theta, phi))
    for i, (n, th, yi, _, _) in enumerate(sentences(st, theta, y)):
        assert st.scores(theta, y)[i] == pytest.approx(th.reshape(n, n + 1)[np.arange(n), yi].sum())
    # decode ignores the self-loop entries
    noisy = np.where(st.arc_mask, phi, 100.0)
    assert_array_equal(st.decode(noisy), y)
    # per-sample helpers
    assert_array_equal(st.per_sample(np.arange(st.n)), np.repeat(np.arange(st.n), st.block_sizes))
    assert_allclose(st.unary_sq(theta), st.dot(theta, theta))


# ---------------------------------------------------------------------------
# Inference oracles vs brute force
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_argmax_matches_brute_force(single_root, projective, seed):
    st, theta, y = make(single_root=single_root, projective=projective, seed=seed)
    pred = st.argmax(theta)
    s_pred = st.scores(theta, pred)
    for i, (n, th, _, H, V) in enumerate(sentences(st, theta, y)):
        assert_tree(pred[st.word_off[i]:st.word_off[i + 1]], single_root, projective)
        assert s_pred[i] == pytest.approx((V @ th).max(), abs=1e-12)


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_marginals_and_log_partition_match_brute_force(single_root, projective):
    st, theta, y = make(single_root=single_root, projective=projective, seed=2, scale=2.0)
    mu, logZ = st.marginals_and_log_partition(theta)
    assert_allclose(st.marginals(theta), mu)
    assert_allclose(st.log_partition(theta), logZ)
    for i, (n, th, _, H, V) in enumerate(sentences(st, theta, y)):
        s = V @ th
        p = np.exp(s - logsumexp(s))
        assert logZ[i] == pytest.approx(logsumexp(s), abs=1e-10)
        assert_allclose(block_of(st, mu, i), p @ V, atol=1e-10)


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_second_best_matches_brute_force(single_root, projective):
    st, theta, y = make(single_root=single_root, projective=projective, seed=3)
    for labels in (y, st.argmax(theta)):
        y2 = st.second_best(theta, labels)
        s2 = st.scores(theta, y2)
        for i, (n, th, yi, H, V) in enumerate(sentences(st, theta, labels)):
            y2i = y2[st.word_off[i]:st.word_off[i + 1]]
            if len(H) == 1:  # one-word sentences: the only tree
                assert_array_equal(y2i, yi)
                continue
            assert_tree(y2i, single_root, projective)
            assert not np.array_equal(y2i, yi)
            other = (H != yi).any(axis=1)
            assert s2[i] == pytest.approx((V[other] @ th).max(), abs=1e-12)


def brute_poslearn(n, th, yi, H, V):
    """PosLearn value and gradient of one sentence by enumeration."""
    s = V @ th
    phi = V[index_of(H, yi)]
    value, grad = 0.0, np.zeros_like(th)
    for m in range(n):
        cand = np.flatnonzero(H[:, m] != yi[m])
        if len(cand) == 0:
            continue
        j = cand[np.argmax(s[cand])]
        margin = 1.0 - phi @ th + s[j]
        if margin > 0:
            value += margin
            grad += V[j] - phi
    return value, grad


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("seed", [4, 5])
def test_poslearn_matches_brute_force(single_root, projective, seed):
    st, theta, y = make(single_root=single_root, projective=projective, seed=seed,
                        scale=0.5)
    value, grad = st.poslearn_value_and_grad(theta, y)
    assert value.shape == (st.n,) and grad.shape == (st.n_parts,)
    assert PosLearn().value_and_grad(theta, y, st)[0] == pytest.approx(value)
    viol, off = st.word_violators(theta, y)
    assert_array_equal(off, np.concatenate([[0], np.cumsum(st.lengths ** 2)]))
    for i, args in enumerate(sentences(st, theta, y)):
        v, g = brute_poslearn(*args)
        assert value[i] == pytest.approx(v, abs=1e-10)
        assert_allclose(block_of(st, grad, i), g, atol=1e-12)
        n, yi = args[0], args[2]
        rows = viol[off[i]:off[i + 1]].reshape(n, n)
        for m in range(n):
            if n == 1:
                assert_array_equal(rows[m], -1)
            else:
                assert_tree(rows[m], single_root, projective)
                assert rows[m, m] != yi[m]


def test_slack_scaling_raises_a_clear_error():
    st, theta, y = make()
    with pytest.raises(IntractableError, match="dependency trees.*hinge-approx-slack"):
        Hinge(scaling="slack").check(st)
    with pytest.raises(ValueError, match="not implemented for dependency trees"):
        st.slack_violator(theta, y)


# ---------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------
LOSSES = {
    "perceptron": Perceptron(),
    "hinge": Hinge(),
    "hinge-approx-slack": Hinge(scaling="approx-slack"),
    "poslearn": PosLearn(),
    "crf": CRF(),
    "sparsemap": SparseMAP(),
    "m-sparsemap": SparseMAP(margin=True),
    "projection": Projection(),
    "projection-tree": Projection(set="tree"),
    "simplex-euclidean": Projection(set="simplex", geometry="euclidean"),
    "simplex-kl": Projection(set="simplex", geometry="kl"),
    "squared": Squared(),
}
SMOOTH = ["crf", "sparsemap", "m-sparsemap", "projection-tree", "simplex-euclidean",
          "simplex-kl", "squared"]


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_every_loss_evaluates_on_a_tree_batch(name, single_root, projective):
    loss = LOSSES[name]
    st, theta, y = make(single_root=single_root, projective=projective, seed=6)
    loss.check(st)
    value, grad = loss.value_and_grad(theta, y, st)
    assert value.shape == (st.n,) and grad.shape == (st.n_parts,)
    assert np.all(np.isfinite(value)) and np.all(value >= -1e-9)
    assert loss.mean(theta, st).shape == (st.n_parts,)
    if name == "squared":
        assert_allclose(grad, theta - st.encode(y))
        assert_allclose(loss.value_and_grad(st.encode(y), y, st)[0], 0.0)
        return
    assert_array_equal(grad[~st.arc_mask], 0.0)
    # one-word sentences have a single tree: nothing to learn
    assert_allclose(value[st.lengths == 1], 0.0, atol=1e-12)
    # zero (up to exp(-20)) at a confident correct prediction, positive at a
    # confident wrong one
    good = loss.value_and_grad(20.0 * st.encode(y), y, st)[0]
    assert_allclose(good, 0.0, atol=1e-6)
    wrong = st.second_best(20.0 * st.encode(y), y)
    bad = loss.value_and_grad(20.0 * st.encode(wrong), y, st)[0]
    assert np.all(bad[st.lengths > 1] > 0.1)


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_loss_values_match_brute_force(single_root, projective):
    st, theta, y = make(SMALL, single_root=single_root, projective=projective, seed=7)
    perc = Perceptron().value_and_grad(theta, y, st)[0]
    hinge = Hinge().value_and_grad(theta, y, st)[0]
    crf = CRF().value_and_grad(theta, y, st)[0]
    approx = Hinge(scaling="approx-slack").value_and_grad(theta, y, st)[0]
    pos = PosLearn().value_and_grad(theta, y, st)[0]
    for i, (n, th, yi, H, V) in enumerate(sentences(st, theta, y)):
        s = V @ th
        s_y = s[index_of(H, yi)]
        ham = (H != yi).sum(axis=1)
        assert perc[i] == pytest.approx(s.max() - s_y, abs=1e-10)
        assert hinge[i] == pytest.approx((s + ham).max() - s_y, abs=1e-10)
        assert crf[i] == pytest.approx(logsumexp(s) - s_y, abs=1e-10)
        exact = (ham * np.maximum(1.0 - s_y + s, 0.0)).max()
        assert -1e-12 <= approx[i] <= exact + 1e-9
        assert exact <= pos[i] + 1e-9


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_smooth_loss_gradients_match_finite_differences(name, single_root, projective):
    loss = LOSSES[name]
    st, theta, y = make(SMALL, single_root=single_root, projective=projective, seed=8)
    _, grad = loss.value_and_grad(theta, y, st)
    rng = np.random.default_rng(9)
    h = 1e-6
    for _ in range(3):
        d = rng.normal(size=st.n_parts)
        fp = loss.value_and_grad(theta + h * d, y, st)[0]
        fm = loss.value_and_grad(theta - h * d, y, st)[0]
        assert_allclose((fp - fm) / (2 * h), st.dot(grad, d), rtol=1e-4, atol=1e-6,
                        err_msg=name)


# ---------------------------------------------------------------------------
# SparseMAP and projections
# ---------------------------------------------------------------------------
def hull_projection(V, eta):
    """``argmin ||mu - eta||^2`` over the convex hull of the rows of ``V``."""
    t = len(V)
    res = minimize(lambda q: 0.5 * np.sum((V.T @ q - eta) ** 2), np.full(t, 1.0 / t),
                   jac=lambda q: V @ (V.T @ q - eta), method="SLSQP",
                   bounds=[(0.0, 1.0)] * t,
                   constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0,
                                 "jac": lambda q: np.ones(t)}],
                   options={"ftol": 1e-15, "maxiter": 1000})
    return V.T @ res.x


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_sparsemap_is_the_projection_onto_the_tree_polytope(single_root, projective):
    st, theta, y = make(SMALL, single_root=single_root, projective=projective, seed=10)
    mu = st.sparsemap(theta)
    assert_allclose(st.project(theta, "tree"), mu)
    assert_allclose(st.project(theta, "marginal"), mu)
    assert_allclose(SparseMAP().mean(theta, st), mu)
    assert_array_equal(mu[~st.arc_mask], 0.0)
    for i, (n, th, _, H, V) in enumerate(sentences(st, theta, y)):
        mi = block_of(st, mu, i)
        # optimal over the enumerated vertices: <theta - mu, v - mu> <= 0
        assert np.max((V - mi) @ (th - mi)) <= 1e-9
        assert_allclose(mi, hull_projection(V, th), atol=1e-5)


@pytest.mark.parametrize("method", ["active-set", "vanilla", "away-step", "pairwise"])
@pytest.mark.parametrize("single_root,projective", [(True, False), (False, True)])
def test_sparsemap_support_of_one_sentence(method, single_root, projective):
    st, theta, y = make([4], single_root=single_root, projective=projective, seed=11)
    mu, verts, weights, n_iter = st.sparsemap_support(theta, method, max_iter=3000,
                                                     tol=1e-12)
    assert weights.sum() == pytest.approx(1.0)
    assert_allclose(weights @ verts, mu, atol=1e-12)
    for v in verts:
        assert_tree(st.decode(v), single_root, projective)
        assert_array_equal(st.encode(st.decode(v)), v)
    atol = 1e-9 if method == "active-set" else 2e-3
    assert_allclose(mu, st.sparsemap(theta), atol=atol)


def test_sparsemap_support_rejects_bad_input():
    st, theta, _ = make([2, 3])
    with pytest.raises(ValueError, match="one sentence"):
        st.sparsemap_support(theta)
    one, th1, _ = make([3])
    with pytest.raises(ValueError, match="method must be"):
        one.sparsemap_support(th1, method="newton")


def _simplex_reference(v, geometry):
    k = len(v)
    if geometry == "euclidean":
        f = lambda u: 0.5 * np.sum((u - v) ** 2)  # noqa: E731
        jac = lambda u: u - v  # noqa: E731
    else:  # KL(u, exp(v - 1))
        f = lambda u: np.sum(u * np.log(np.maximum(u, 1e-300)) - u * v)  # noqa: E731
        jac = lambda u: np.log(np.maximum(u, 1e-300)) + 1.0 - v  # noqa: E731
    res = minimize(f, np.full(k, 1.0 / k), jac=jac, method="SLSQP",
                   bounds=[(0.0 if geometry == "euclidean" else 1e-12, 1.0)] * k,
                   constraints=[{"type": "eq", "fun": lambda u: u.sum() - 1.0,
                                 "jac": lambda u: np.ones(k)}],
                   options={"ftol": 1e-14, "maxiter": 1000})
    return res.x


@pytest.mark.parametrize("geometry", ["euclidean", "kl"])
def test_simplex_projections_match_scipy_per_row(geometry):
    st, theta, y = make(seed=12, scale=1.5)
    u = st.project(theta, "simplex", geometry)
    assert_array_equal(u[~st.arc_mask], 0.0)
    assert np.all(u >= 0)
    for i in range(st.n):
        n = int(st.lengths[i])
        U, T = st.block(u, i), st.block(theta, i)
        assert_allclose(U.sum(axis=1), 1.0, atol=1e-12)
        for m in range(1, n + 1):
            heads = [h for h in range(n + 1) if h != m]
            ref = _simplex_reference(T[m - 1, heads], geometry)
            assert_allclose(U[m - 1, heads], ref, atol=1e-6)
    if geometry == "kl":  # closed form: per-row softmax, self-loop excluded
        masked = np.where(st.arc_mask, theta, -np.inf)
        for i in range(st.n):
            B = st.block(masked, i)
            assert_allclose(st.block(u, i), np.exp(B - logsumexp(B, axis=1, keepdims=True)))


def test_projection_set_and_geometry_errors():
    st, theta, _ = make()
    with pytest.raises(ValueError, match="cannot project onto 'cube' for the tree"):
        st.project(theta, "cube")
    with pytest.raises(IntractableError, match="no kl projection onto the tree"):
        Projection(set="tree", geometry="kl").check(st)
    with pytest.raises(IntractableError):
        Projection(geometry="kl").check(st)


# ---------------------------------------------------------------------------
# Cost and decoding
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("single_root,projective", [(True, False), (False, False)])
def test_cost_vector_gives_the_hamming_distance(single_root, projective):
    st, _, _ = make([1, 3, 2], single_root=single_root, projective=projective)
    rng = np.random.default_rng(13)
    L_max, gap = st.cost_bounds()
    assert_array_equal(L_max, st.lengths)
    assert gap == 1.0
    Hs = [all_trees(n, single_root, projective) for n in st.lengths]
    for _ in range(30):
        a = [H[rng.integers(len(H))] for H in Hs]
        b = [H[rng.integers(len(H))] for H in Hs]
        ya, yb = np.concatenate(a), np.concatenate(b)
        ham = np.array([np.sum(p != q) for p, q in zip(a, b)], dtype=float)
        c = st.cost_vector(st.encode(yb))
        assert_array_equal(c[~st.arc_mask], 0.0)
        assert_allclose(st.dot(st.encode(ya), c), ham)
        assert_allclose(st.cost(ya, yb), ham)
        assert np.all(ham <= L_max)


@pytest.mark.parametrize("single_root,projective", CONFIGS, ids=CONFIG_IDS)
def test_calibrated_decode_returns_trees_minimising_expected_cost(single_root, projective):
    st, theta, y = make(SMALL, single_root=single_root, projective=projective, seed=14)
    means = [st.marginals(theta), st.sparsemap(theta), theta,
             st.project(theta, "simplex", "euclidean"), st.project(theta, "simplex", "kl")]
    for mu in means:
        dec = st.calibrated_decode(mu)
        assert_array_equal(dec, st.argmax(-st.cost_vector(mu)))
        for i in range(st.n):
            assert_tree(dec[st.word_off[i]:st.word_off[i + 1]], single_root, projective)
    # mu a mixture of trees: the decoded tree minimises the expected Hamming cost
    rng = np.random.default_rng(15)
    for _ in range(5):
        parts, Q = [], []
        for n in st.lengths:
            H = all_trees(n, single_root, projective)
            q = rng.dirichlet(np.ones(len(H)) * 0.3)
            parts.append(q @ onehot(H, n))
            Q.append((H, q))
        mu = np.concatenate(parts)
        dec = st.calibrated_decode(mu)
        for i, (H, q) in enumerate(Q):
            expected = np.array([[np.sum(a != b) for b in H] for a in H]) @ q
            di = dec[st.word_off[i]:st.word_off[i + 1]]
            assert expected[index_of(H, di)] == pytest.approx(expected.min(), abs=1e-12)
