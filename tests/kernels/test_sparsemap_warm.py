"""Warm-started active set: same optimum as a cold start, from any start."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import structlearn.estimators.sequence as seqmod
import structlearn.solvers._ragged as ragged
from structlearn import SequenceTagger
from structlearn.estimators.sequence import chain_problem
from structlearn.feature_extraction import TokenVectorizer
from structlearn.kernels.chain import chain_encode_codes, chain_map, encode_batch
from structlearn.kernels.linear import chain_part_offsets
from structlearn.kernels.sparsemap import (
    sparsemap_active_set,
    sparsemap_active_set_ragged,
    sparsemap_active_set_warm,
    sparsemap_active_set_warm_ragged,
)
from structlearn.losses import Projection, SparseMAP
from structlearn.structures.base import SupportCache
from structlearn.structures.chain import Chain


def warm_chain(st, theta, nu, *start):
    """The generic warm ragged kernel on a chain batch (supports as tags)."""
    params, params_off = st._oracle_params()
    return sparsemap_active_set_warm_ragged(
        theta, st.part_off, nu, chain_map, chain_encode_codes, params, params_off,
        st.lengths.astype(np.int64), np.full(st.n, st.n_tags, dtype=np.int64), 1000, 1e-9,
        *start)


def check_chain_supports(st, mu, tags, w, sup_off):
    """The cached tag sequences and weights of every sequence reproduce mu."""
    V = st.encode_supports(tags, sup_off)
    pos = 0
    for i in range(st.n):
        a, b = st.part_off[i], st.part_off[i + 1]
        m = sup_off[i + 1] - sup_off[i]
        Vi = V[pos:pos + m * (b - a)].reshape(m, b - a)
        pos += m * (b - a)
        check_support(mu[a:b], Vi, w[sup_off[i]:sup_off[i + 1]])


def random_batch(seed, n=12, k=4, max_len=7, scale=1.0):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(1, max_len + 1, size=n)
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    st = Chain(k, tok_off)
    return st, rng


def vertices(tags_list, K):
    """Vertex vectors (rows) of the tag sequences (all of the same length)."""
    L = len(tags_list[0])
    tok_off = np.arange(0, L * len(tags_list) + 1, L, dtype=np.int64)
    part_off = chain_part_offsets(tok_off, K)
    flat = encode_batch(np.concatenate(tags_list).astype(np.int64), part_off, tok_off, K)
    return flat.reshape(len(tags_list), -1)


def check_support(mu, V, w):
    assert np.all(w > 0) and np.isclose(w.sum(), 1.0)
    np.testing.assert_allclose(w @ V, mu, atol=1e-10)


# ----------------------------------------------------------------- kernel
@pytest.mark.parametrize("n_unary_all", [False, True])
def test_warm_kernel_from_bad_starts_reaches_the_cold_optimum(n_unary_all):
    rng = np.random.RandomState(0)
    K = 3
    for L in [1, 2, 5, 8]:
        p = L * K + K * K + 2 * K
        nu = p if n_unary_all else L * K
        params = np.array([float(L), float(K)])
        for trial in range(6):
            eta = rng.randn(p) * [0.3, 1.0, 4.0][trial % 3]
            mu_c, Vc, wc, _ = sparsemap_active_set(eta, nu, chain_map, params, 1000, 1e-9)
            starts = []
            # a support found for very different scores
            _, Vo, wo, _ = sparsemap_active_set(rng.randn(p) * 3, nu, chain_map, params,
                                                1000, 1e-9)
            starts.append((Vo, wo))
            # many random vertices: most affinely dependent on earlier ones,
            # with duplicates and zero / negative weights
            tags = [rng.randint(K, size=L) for _ in range(4 * L * K + 3)]
            tags += tags[:3]
            Vr = vertices(tags, K)
            wr = rng.rand(len(tags))
            wr[::5] = 0.0
            wr[1] = -1.0
            starts.append((Vr, wr))
            # the cold optimum itself, and it plus dependent extra vertices
            starts.append((Vc, wc))
            starts.append((np.vstack([Vc, Vr]), np.concatenate([wc, rng.rand(len(Vr))])))
            # all weights zero: a cold start
            starts.append((Vr, np.zeros(len(Vr))))
            # nothing
            starts.append((np.zeros((0, p)), np.zeros(0)))
            for V0, w0 in starts:
                mu, V, w, _ = sparsemap_active_set_warm(
                    eta, nu, chain_map, params, 1000, 1e-9,
                    np.ascontiguousarray(V0, dtype=float),
                    np.ascontiguousarray(w0, dtype=float))
                np.testing.assert_allclose(mu, mu_c, atol=1e-8)
                check_support(mu, V, w)


def test_warm_kernel_from_an_affinely_dependent_set():
    # L = 2, K = 2: u(00) + u(11) = u(01) + u(10), all four given
    K, L = 2, 2
    p = L * K + K * K + 2 * K
    params = np.array([float(L), float(K)])
    V0 = vertices([np.array(t) for t in [(0, 0), (1, 1), (0, 1), (1, 0)]], K)
    rng = np.random.RandomState(3)
    for _ in range(20):
        eta = rng.randn(p)
        mu_c = sparsemap_active_set(eta, L * K, chain_map, params, 1000, 1e-9)[0]
        mu, V, w, _ = sparsemap_active_set_warm(eta, L * K, chain_map, params, 1000, 1e-9,
                                                V0, np.full(4, 0.25))
        np.testing.assert_allclose(mu, mu_c, atol=1e-8)
        check_support(mu, V, w)


def _empty_start(st):
    return (np.zeros(0, dtype=np.int16), np.zeros(0), np.zeros(st.n + 1, dtype=np.int64))


def test_cold_kernel_is_the_warm_kernel_with_an_empty_start():
    st, rng = random_batch(1)
    params, params_off = st._oracle_params()
    theta = 2 * rng.randn(st.n_parts)
    nu = st.n_unary.astype(np.int64)
    mu_c, _ = sparsemap_active_set_ragged(theta, st.part_off, nu, chain_map, params,
                                          params_off, 1000, 1e-9)
    mu_w, _, _, _, _ = warm_chain(st, theta, nu, *_empty_start(st))
    np.testing.assert_array_equal(mu_w, mu_c)


def test_warm_chain_kernel_returns_supports_that_reproduce_mu():
    st, rng = random_batch(2, n=20)
    params, params_off = st._oracle_params()
    nu = st.n_unary.astype(np.int64)
    start = _empty_start(st)
    for rep in range(4):
        theta = [0.2, 1.0, 5.0, 1.0][rep] * rng.randn(st.n_parts)
        mu_c, _ = sparsemap_active_set_ragged(theta, st.part_off, nu, chain_map, params,
                                              params_off, 1000, 1e-9)
        mu, tags, w, sup_off, n_capped = warm_chain(st, theta, nu, *start)
        assert n_capped == 0
        start = (tags, w, sup_off)
        np.testing.assert_allclose(mu, mu_c, atol=1e-8)
        assert sup_off[0] == 0 and np.all(np.diff(sup_off) >= 1)
        assert len(w) == sup_off[-1]
        assert len(tags) == np.sum(np.diff(sup_off) * st.lengths)
        check_chain_supports(st, mu, tags, w, sup_off)


# ------------------------------------------------------------------ chain
@pytest.mark.parametrize("kind", ["sparsemap", "projection"])
def test_chain_warm_cache_gives_the_cold_solution(kind):
    st, rng = random_batch(4, n=15, k=5)
    cold = Chain(st.n_tags, st.tok_off)

    def solve(s, theta):
        if kind == "sparsemap":
            return s.sparsemap(theta)
        return s.project(theta, "chain", "euclidean")

    st.warm_cache = SupportCache()
    thetas = [rng.randn(st.n_parts), 10 * rng.randn(st.n_parts), 0.05 * rng.randn(st.n_parts)]
    thetas.append(thetas[0] + 1e-3 * rng.randn(st.n_parts))
    thetas.append(thetas[0])
    for theta in thetas:
        mu_c = solve(cold, theta)
        mu_w = solve(st, theta)  # the first one with an empty cache
        np.testing.assert_allclose(mu_w, mu_c, atol=1e-8)
        tags, w, sup_off = st.warm_cache.entries[kind]
        assert tags.dtype == np.int16 and len(w) == sup_off[-1]
        # the stored tag sequences reproduce mu
        check_chain_supports(st, mu_w, tags, w, sup_off)
    assert cold.warm_cache is None


def test_chain_cache_holds_the_kernel_supports_and_wrong_batch_is_ignored():
    st, rng = random_batch(5, n=6, k=3)
    st.warm_cache = SupportCache()
    theta = rng.randn(st.n_parts)
    st.sparsemap(theta)
    tags, w, sup_off = st.warm_cache.entries["sparsemap"]
    assert tags.dtype == np.int16 and tags.min() >= 0 and tags.max() < 3
    # the same supports as the single-structure solver, as tag sequences
    V = st.encode_supports(tags, sup_off)
    pos = 0
    for i in range(st.n):
        a, b = st.part_off[i], st.part_off[i + 1]
        _, Vi, wi, _ = sparsemap_active_set(theta[a:b].copy(), int(st.n_unary[i]), chain_map,
                                            np.array([float(st.lengths[i]), 3.0]), 1000, 1e-9)
        m = sup_off[i + 1] - sup_off[i]
        assert m == len(wi)
        np.testing.assert_allclose(w[sup_off[i]:sup_off[i + 1]], wi, rtol=1e-12)
        np.testing.assert_array_equal(V[pos:pos + m * (b - a)].reshape(m, b - a), Vi)
        pos += m * (b - a)
    # a cache entry of another batch size is not used (cold start)
    other, _ = random_batch(6, n=4, k=3)
    other.warm_cache = st.warm_cache
    th2 = rng.randn(other.n_parts)
    np.testing.assert_allclose(other.sparsemap(th2),
                               Chain(3, other.tok_off).sparsemap(th2), atol=1e-8)


@pytest.mark.parametrize("loss", [SparseMAP(), SparseMAP(margin=True), Projection()])
def test_losses_with_a_warm_cache_match_cold(loss):
    st, rng = random_batch(7, n=10, k=4)
    y = rng.randint(4, size=st.tok_off[-1])
    cold = Chain(4, st.tok_off)
    st.warm_cache = SupportCache()
    for scale in [1.0, 3.0, 1.0]:
        theta = scale * rng.randn(st.n_parts)
        v_c, g_c = loss.value_and_grad(theta, y, cold)
        for _ in range(2):
            v_w, g_w = loss.value_and_grad(theta, y, st)
            np.testing.assert_allclose(v_w, v_c, rtol=1e-10, atol=1e-8)
            np.testing.assert_allclose(g_w, g_c, atol=1e-8)


# -------------------------------------------------------------- estimator
def _sequence_data(seed=0, n=40):
    rng = np.random.RandomState(seed)
    X = [[{"w": str(rng.choice(list("abcdef"))), "x": float(rng.randn())}
          for _ in range(rng.randint(1, 8))] for _ in range(n)]
    y = [[("A", "B", "C")[(t["w"] in "abc") + (t["x"] > 0.3)] for t in s] for s in X]
    return X, y


@pytest.mark.parametrize("loss", ["sparsemap", "projection"])
def test_chain_problem_second_evaluation_is_warm_and_equal(loss):
    X, y = _sequence_data()
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    flat = np.array([{"A": 0, "B": 1, "C": 2}[t] for s in y for t in s])
    est = SequenceTagger()
    sup_ptr, sup_label = est._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    lossobj = seqmod.get_loss(loss)
    pb = chain_problem(Xtok, tok_off, flat, 3, sup_ptr, sup_label, lossobj)
    assert all(isinstance(b.structure.warm_cache, SupportCache) for b in pb.chunks)
    rng = np.random.RandomState(1)
    z = rng.randn(pb.n_params)
    v1, g1 = pb.value_and_grad(z)  # cold (empty caches)
    assert all(b.structure.warm_cache.entries for b in pb.chunks)
    v2, g2 = pb.value_and_grad(z)  # warm, from the optimal supports
    np.testing.assert_allclose(v2, v1, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-8)
    pb.value_and_grad(5 * rng.randn(pb.n_params))  # far away
    v3, g3 = pb.value_and_grad(z)  # warm from a bad start
    np.testing.assert_allclose(v3, v1, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(g3, g1, rtol=1e-10, atol=1e-8)
    # mini-batches are not cached, and give the same values
    vi, _ = pb.value_and_grad(z, np.arange(5))
    np.testing.assert_allclose(vi, v1[:5], rtol=1e-10, atol=1e-8)


def test_crf_problem_has_no_cache():
    X, y = _sequence_data(n=8)
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    flat = np.array([{"A": 0, "B": 1, "C": 2}[t] for s in y for t in s])
    sup_ptr, sup_label = SequenceTagger()._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    pb = chain_problem(Xtok, tok_off, flat, 3, sup_ptr, sup_label, seqmod.get_loss("crf"))
    assert all(b.structure.warm_cache is None for b in pb.chunks)


@pytest.mark.parametrize("loss", ["sparsemap", "m-sparsemap"])
def test_tagger_fit_with_and_without_cache_gives_the_same_objective(loss, monkeypatch):
    X, y = _sequence_data(1, n=60)

    def fit(max_iter, tol=None):
        # with the per-tag bias: without it L-BFGS stops on this small set on
        # a failed line search 4e-4 above the optimum (SparseMAP's transition
        # marginals are not unique: the loss is not differentiable in the
        # transition weights), where the two paths need not meet
        est = SequenceTagger(loss=loss, alpha=1e-2, max_iter=max_iter, random_state=0,
                             tol=tol, fit_intercept=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return est.fit(X, y)

    # the first iterations follow the same path (the solves agree to their
    # tolerance) ...
    warm = fit(8)
    monkeypatch.setattr(ragged, "SupportCache", lambda: None)
    cold = fit(8)
    np.testing.assert_allclose(warm.objective_, cold.objective_, rtol=1e-10)
    monkeypatch.undo()
    # ... later the two L-BFGS paths may part by rounding (the solves agree
    # to 1e-9, not to the last bit), so the converged fits are compared
    warm = fit(1000)
    monkeypatch.setattr(ragged, "SupportCache", lambda: None)
    cold = fit(1000)
    np.testing.assert_allclose(warm.objective_, cold.objective_, rtol=1e-4)
    assert warm.predict(X) == cold.predict(X)


def test_lbfgs_gives_no_gap_where_the_loss_is_not_differentiable():
    # SparseMAP on a chain penalises the unary parts only: its transition
    # marginals are not unique, the gradient is one subgradient among many
    # and ||grad||^2 / (2 alpha) no certificate (here 0.9 at a point 4e-4
    # above the optimum, which BCFW certifies); the CRF's is.
    from structlearn.losses import get_loss
    from structlearn.structures import Tree
    from structlearn.structures.chain import Chain

    assert not get_loss("sparsemap").differentiable(Chain)
    assert not get_loss("m-sparsemap").differentiable(Chain)
    assert get_loss("sparsemap").differentiable(Tree)       # every arc penalised
    assert get_loss("projection").differentiable(Chain)     # every part penalised
    assert get_loss("crf").differentiable(Chain) and not get_loss("hinge").differentiable(Chain)
    X, y = _sequence_data(1, n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # random_state: L-BFGS starts from one perceptron epoch in random
        # order, and on this non-smooth objective where it stops depends on
        # it (unseeded, 1 fit in ~10 stopped 2e-3 above the optimum)
        smap = SequenceTagger(loss="sparsemap", alpha=1e-2, solver="lbfgs",
                              random_state=0).fit(X, y)
        ref = SequenceTagger(loss="sparsemap", alpha=1e-2, solver="bcfw", tol=1e-6,
                             max_iter=2000, random_state=0).fit(X, y)
        crf = SequenceTagger(loss="crf", alpha=1e-2, random_state=0).fit(X, y)
    assert smap.duality_gap_ is None and ref.duality_gap_ <= 1e-6
    assert smap.objective_ <= ref.objective_ * (1 + 1e-3)
    assert crf.duality_gap_ is not None and crf.duality_gap_ < 1e-3


@pytest.mark.parametrize("single_root, projective", [(True, False), (False, True)])
def test_tree_warm_cache_gives_the_cold_optimum(single_root, projective):
    from structlearn.structures import Tree

    rng = np.random.RandomState(0)
    lengths = rng.randint(1, 7, size=15)
    wo = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    warm = Tree(wo, single_root=single_root, projective=projective)
    cold = Tree(wo, single_root=single_root, projective=projective)
    warm.warm_cache = SupportCache()
    theta = rng.randn(warm.n_parts)
    for rep in range(4):
        theta = theta + 0.3 * rng.randn(warm.n_parts)
        ref = cold.sparsemap(theta)
        np.testing.assert_allclose(warm.sparsemap(theta), ref, atol=1e-8)
        np.testing.assert_allclose(warm.project(theta, set="tree"), ref, atol=1e-8)
    codes, w, sup_off = warm.warm_cache.get("sparsemap", warm.n)
    assert len(codes) == np.sum(np.diff(sup_off) * lengths)  # one head per word
    assert np.all(codes <= np.repeat(lengths, np.diff(sup_off) * lengths))


def test_uses_active_set_follows_the_structures_marginal_set():
    from structlearn.losses import get_loss
    from structlearn.structures import OrderSimplex, Tree

    for cls, own in ((Chain, "chain"), (Tree, "tree")):
        assert get_loss("sparsemap").uses_active_set(cls)
        assert get_loss("projection").uses_active_set(cls)          # set='marginal'
        assert Projection(set=own).uses_active_set(cls)
        assert not get_loss("crf").uses_active_set(cls)
        assert not get_loss("hinge").uses_active_set(cls)
    assert not Projection(set="cube").uses_active_set(Chain)
    assert not Projection(set="simplex", geometry="kl").uses_active_set(Tree)
    assert not Projection(set="tree").uses_active_set(Chain)
    # a fixed-size structure's projection is its own algorithm, not the active set
    assert not Projection().uses_active_set(OrderSimplex)
    assert get_loss("sparsemap").uses_active_set(OrderSimplex)


@pytest.mark.parametrize("warm", [False, True])
def test_a_solve_stopped_at_max_iter_warns(warm):
    """The active set reports the solves that ran out of iterations (their
    marginals are approximate) and the structure turns that into one
    ConvergenceWarning; converged solves are silent.  Both kernels (cold, and
    warm with a support cache) count them."""
    st, rng = random_batch(3, n=6, k=5, max_len=40)
    st.warm_cache = SupportCache() if warm else None
    theta = 0.3 * rng.randn(st.n_parts)   # near-uniform scores: many vertices
    params, params_off = st._oracle_params()
    nu = st.block_sizes.astype(np.int64)   # every part penalised: the projection
    if warm:
        *_, n_capped = warm_chain(st, theta, nu, *_empty_start(st))
        assert n_capped == 0
    _, n_capped = sparsemap_active_set_ragged(theta, st.part_off, nu, chain_map, params,
                                              params_off, 3, 1e-9)
    assert 0 < n_capped <= st.n
    with pytest.warns(ConvergenceWarning, match="stopped at max_iter=3"):
        capped = st._active_set(theta, st.block_sizes, max_iter=3, key="projection")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        exact = st._active_set(theta, st.block_sizes, key="projection-exact")
    assert np.abs(capped - exact).max() > 1e-6   # the capped marginals are not exact
