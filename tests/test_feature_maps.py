"""The feature maps and the ragged training problem, against their protocol.

Every feature map is linear in the parameters, so ``backprop`` must be the
transpose of ``scores`` (``<G, A z> = <A^T G, z>``), its entries must sum to
the dense gradient, ``scale`` must scale exactly the penalised parameters,
and ``params_of`` must cover every parameter a gradient touches.
"""

import numpy as np
import pytest

from structlearn import SequenceTagger
from structlearn.feature_extraction import ArcVectorizer, TokenVectorizer
from structlearn.feature_maps import ArcFeatureMap, FeatureMap, TokenFeatureMap
from structlearn.kernels.tree_validation import validate_heads
from structlearn.losses import get_loss
from structlearn.solvers import DualProblem, Problem, RaggedProblem, SparseProblem
from structlearn.structures import Chain, Tree


def _chain(n=40, fit_intercept=True, transitions=True, seed=0):
    rng = np.random.RandomState(seed)
    X = [[{"w": rng.choice(list("abcdef")), "x": float(rng.randn())}
          for _ in range(rng.randint(1, 6))] for _ in range(n)]
    y = np.concatenate([[int(t["w"] in "abc") + int(t["x"] > 0) for t in s] for s in X])
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    sup_ptr, sup_label = SequenceTagger()._make_support(Xtok.indptr, Xtok.indices,
                                                        Xtok.shape[1], y, 3)
    from structlearn.feature_maps import Tokens
    fmap = TokenFeatureMap(Tokens.from_csr(Xtok, sup_ptr), tok_off, 3, sup_ptr, sup_label,
                           fit_intercept, transitions)
    return fmap, y, lambda off, warm: Chain(3, off, warm)


def _segmenter(n=40, fit_intercept=True, seed=0):
    from structlearn.feature_maps import SegmentFeatureMap, Tokens
    from structlearn.structures import Segments

    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        L = rng.randint(1, 7)
        X.append([{"w": rng.choice(list("abcdef")), "x": float(rng.randn())} for _ in range(L)])
        codes, t = [], 0
        while t < L:
            ln = min(rng.randint(1, 4), L - t)
            k = rng.randint(2)
            codes += [2 * k + 1] + [2 * k] * (ln - 1)
            t += ln
        y.append(codes)
    y = np.concatenate(y).astype(np.int64)
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    sup_ptr, sup_label = SequenceTagger()._make_support(Xtok.indptr, Xtok.indices,
                                                        Xtok.shape[1], y // 2, 2)
    fmap = SegmentFeatureMap(Tokens.from_csr(Xtok, sup_ptr), tok_off, 2, 3, sup_ptr,
                             sup_label, fit_intercept)
    return fmap, y, lambda off, warm: Segments(2, off, 3, warm_cache=warm)


def _parser(n=30, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        k = rng.randint(1, 7)
        X.append([{"form": f"w{rng.randint(5)}", "lemma": "l", "upos": p, "xpos": p}
                  for p in rng.choice(["DET", "NOUN", "ADJ"], size=k)])
        y.append(list(range(k)))
    vec = ArcVectorizer().fit(X, y)
    A, off = vec.transform(X)
    heads, _ = validate_heads(y, True)
    return ArcFeatureMap(vec, A, off, 1), heads, lambda off, warm: Tree(off, warm_cache=warm)


MAPS = {"tokens": _chain, "tokens-no-intercept": lambda: _chain(fit_intercept=False),
        "tokens-frozen": lambda: _chain(transitions=False), "arcs": _parser,
        "segments": _segmenter, "segments-no-intercept": lambda: _segmenter(fit_intercept=False)}


@pytest.mark.parametrize("kind", MAPS)
def test_feature_map_is_linear_and_its_backprop_the_transpose(kind):
    fmap, y, make = MAPS[kind]()
    assert isinstance(fmap, FeatureMap)
    problem = RaggedProblem(fmap, y, get_loss("crf"), make)
    rng = np.random.RandomState(1)
    idx = np.array([3, 0, 7, 7, 12])
    batch = problem.batch(idx)
    z = rng.randn(fmap.n_params)
    theta = fmap.scores(z, batch)
    assert theta.shape == (int(np.sum(fmap.part_sizes()[idx])),)
    G = rng.randn(len(theta))
    g = np.zeros(fmap.n_params)
    fmap.backprop(G, batch, g)
    frozen = getattr(fmap, "frozen", slice(0, 0))
    z_free = z.copy()
    z_free[frozen] = 0.0
    # <G, A z> = <A^T G, z> for the parameters the map does not hold at zero
    assert G @ fmap.scores(z_free, batch) == pytest.approx(g @ z_free, rel=1e-10)
    assert np.all(g[frozen] == 0.0)
    # the entries sum to the dense gradient
    cols, vals = fmap.backprop_entries(G, batch)
    np.testing.assert_allclose(np.bincount(cols, weights=vals, minlength=fmap.n_params), g,
                               atol=1e-10)
    # params_of covers every parameter the gradient touches
    touched = set(np.flatnonzero(g))
    assert touched <= set(fmap.params_of(idx).tolist())
    # scale multiplies the penalised parameters only
    zs = np.where(fmap.penalized, 2.5 * z, z)
    np.testing.assert_allclose(fmap.scores(z, batch, 2.5), fmap.scores(zs, batch), rtol=1e-12)
    # a contiguous range scores as the same examples selected one by one
    a, b = fmap.chunk_ranges(1)[0]
    whole = problem._contiguous(a, b)
    np.testing.assert_allclose(fmap.scores(z, whole),
                               fmap.scores(z, problem.batch(np.arange(a, b))), rtol=1e-12)


@pytest.mark.parametrize("kind", MAPS)
def test_ragged_problem_meets_every_solver_protocol(kind):
    fmap, y, make = MAPS[kind]()
    problem = RaggedProblem(fmap, y, get_loss("hinge"), make, n_jobs=2)
    for proto in (Problem, SparseProblem, DualProblem):
        assert isinstance(problem, proto)
    rng = np.random.RandomState(2)
    z = rng.randn(problem.n_params)
    # a full pass equals the sum of mini-batches; sparse equals dense
    vals, g = problem.value_and_grad(z)
    idx = np.arange(problem.n_samples)
    v1, g1 = problem.value_and_grad(z, idx[:11])
    v2, g2 = problem.value_and_grad(z, idx[11:])
    np.testing.assert_allclose(np.concatenate([v1, v2]), vals, rtol=1e-12)
    np.testing.assert_allclose(g1 + g2, g, atol=1e-10)
    vs, cols, gv = problem.sparse_value_and_grad(z, idx[:11], 1.0)
    np.testing.assert_allclose(vs, v1, rtol=1e-12)
    np.testing.assert_allclose(np.bincount(cols, weights=gv, minlength=problem.n_params), g1,
                               atol=1e-10)
    # the dual view: pieces' values are the losses, their score gradients
    # carried back by block_entries are the gradient
    pv, theta, G = problem.pieces(z, idx[:11])
    np.testing.assert_allclose(pv, v1, rtol=1e-12)
    c, v, ptr = problem.block_entries(idx[:11], G)
    np.testing.assert_allclose(np.bincount(c, weights=v, minlength=problem.n_params), g1,
                               atol=1e-10)
    # part_columns: the columns of A_i, i.e. block_entries of unit vectors
    sizes = fmap.part_sizes()
    rep = rng.randint(problem.n_samples, size=25)
    parts = np.array([rng.randint(sizes[i]) for i in rep])
    c, v, ptr = problem.part_columns(rep, parts)
    for k, (i, p) in enumerate(zip(rep, parts)):
        e = np.zeros(sizes[i])
        e[p] = 1.0
        cu, vu, _ = problem.block_entries([i], e)
        np.testing.assert_allclose(
            np.bincount(c[ptr[k]:ptr[k + 1]], weights=v[ptr[k]:ptr[k + 1]],
                        minlength=problem.n_params),
            np.bincount(cu, weights=vu, minlength=problem.n_params), atol=1e-12)
    assert problem.sq_norms().shape == (problem.n_samples,)


@pytest.mark.parametrize("kind", MAPS)
@pytest.mark.parametrize("loss", ["crf", "sparsemap"])
def test_ragged_problem_gradient_matches_finite_differences(kind, loss):
    from structlearn.solvers import objective

    fmap, y, make = MAPS[kind]()
    problem = RaggedProblem(fmap, y, get_loss(loss), make)
    rng = np.random.RandomState(3)
    frozen = getattr(fmap, "frozen", slice(0, 0))   # held at zero, no gradient
    z = 0.5 * rng.randn(problem.n_params)
    z[frozen] = 0.0
    _, g = problem.value_and_grad(z)
    alpha = 0.1
    g_obj = g / problem.n_samples + alpha * z * problem.penalized
    D = rng.randn(problem.n_params)
    D[frozen] = 0.0
    h = 1e-6
    fd = (objective(problem, z + h * D, alpha) - objective(problem, z - h * D, alpha)) / (2 * h)
    assert fd == pytest.approx(g_obj @ D, rel=1e-5)
