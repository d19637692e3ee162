"""Direct tests of the MAP oracles and dynamic programmes in
``structlearn.kernels.maps``.

Every kernel is compared with enumeration of all the structures of small
instances, written here in plain NumPy from the docstrings: all 0/1 vectors
of the cube and knapsack sets, the ``k + 1`` vertices of the order simplex,
all ``k!`` permutations for the permutahedron and the Birkhoff polytope, all
vertices of an explicit list.  Log-partitions are checked against a
log-sum-exp over the enumerated vertices and their marginals against
finite differences.  Integer scores create exact ties, on which the
documented tie-breaking rules (stable sorts, lowest index first; first
maximiser) are checked with exact arithmetic.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp, softmax

from structlearn.kernels.maps import (
    birkhoff_map,
    cube_map,
    explicit_vertices_map,
    knapsack_log_partition_batch,
    knapsack_map,
    knapsack_slack_violator,
    knapsack_slack_violator_batch,
    order_simplex_map,
    permutahedron_map,
    permutahedron_max_marginals,
    permutahedron_pinned_ranks,
    permutahedron_poslearn_batch,
)

SEEDS = [0, 1, 2, 3]
KS = [1, 2, 3, 4, 5]


def f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def call_oracle(oracle, eta, params, p):
    out = np.full(p, 7.0)  # garbage: the oracle must write every entry
    oracle(f64(eta), f64(params), out)
    return out


def random_eta(rng, k, integer):
    if integer:  # exact ties, exact arithmetic
        return rng.randint(-2, 3, size=k).astype(np.float64)
    return rng.randn(k)


def binary_vectors(k):
    return np.array(list(itertools.product([0.0, 1.0], repeat=k))).reshape(-1, k)


def canonical_subset(V, values):
    """Among the optimal 0/1 vertices: the fewest parts, then the lowest
    indices (what stable sorting with a strict ``> 0`` test selects)."""
    opt = V[values == values.max()]
    return min(opt, key=lambda v: (v.sum(), tuple(np.flatnonzero(v))))


# ---------------------------------------------------------------------------
# MAP oracles
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_cube_map(k, seed, integer):
    rng = np.random.RandomState(seed)
    eta = random_eta(rng, k, integer)
    out = call_oracle(cube_map, eta, [0.0], k)
    V = binary_vectors(k)
    vals = V @ eta
    assert_allclose(out @ eta, vals.max(), rtol=1e-12, atol=1e-12)
    assert_array_equal(out, canonical_subset(V, vals))


def _knapsack_bounds(rng, k):
    lower = rng.randint(0, k + 1)
    return lower, rng.randint(lower, k + 1)


def _bounds_list(rng, k, *fixed):
    """A random ``(lower, upper)`` and the given ones, without repeats."""
    return list(dict.fromkeys([_knapsack_bounds(rng, k), *fixed]))


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_knapsack_map(k, seed, integer):
    rng = np.random.RandomState(seed)
    V = binary_vectors(k)
    for lower, upper in _bounds_list(rng, k, (0, k), (k, k), (0, 0), (1, 1)):
        eta = random_eta(rng, k, integer)
        out = call_oracle(knapsack_map, eta, [lower, upper], k)
        cnt = V.sum(axis=1)
        feas = V[(cnt >= lower) & (cnt <= upper)]
        vals = feas @ eta
        assert lower <= out.sum() <= upper
        assert_allclose(out @ eta, vals.max(), rtol=1e-12, atol=1e-12)
        assert_array_equal(out, canonical_subset(feas, vals))


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_order_simplex_map(k, seed, integer):
    rng = np.random.RandomState(seed)
    eta = random_eta(rng, k, integer)
    out = call_oracle(order_simplex_map, eta, [0.0], k)
    # class j in 0..k has phi_i = 1[j > i]
    V = np.array([[1.0 if j > i else 0.0 for i in range(k)] for j in range(k + 1)])
    vals = V @ eta
    assert_array_equal(out, V[np.argmax(vals)])  # the first maximiser


def _decreasing_weights(rng, k, ties):
    if ties:
        return np.sort(rng.randint(0, 3, size=k).astype(np.float64))[::-1].copy()
    return np.sort(rng.choice(np.arange(1, 3 * k + 1), size=k, replace=False)
                   .astype(np.float64))[::-1].copy()


@pytest.mark.parametrize("integer,ties", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_permutahedron_map(k, seed, integer, ties):
    rng = np.random.RandomState(seed)
    eta = random_eta(rng, k, integer)
    w = _decreasing_weights(rng, k, ties)
    out = call_oracle(permutahedron_map, eta, w, k)
    V = np.array([w[list(p)] for p in itertools.permutations(range(k))])  # out_i = w[rank_i]
    vals = V @ eta
    assert_allclose(out @ eta, vals.max(), rtol=1e-12, atol=1e-12)
    assert_array_equal(np.sort(out), np.sort(w))
    # ties: stable sort, the lowest index takes the larger weight
    opt = V[vals == vals.max()]
    assert_array_equal(out, max(map(tuple, opt)))


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_birkhoff_map(k, seed, integer):
    rng = np.random.RandomState(seed)
    eta = random_eta(rng, k * k, integer)
    if seed == 3 and k > 1:  # forbidden entries, as the Birkhoff structure writes them
        eta[rng.choice(k * k, size=k - 1, replace=False)] = -1e100
    out = call_oracle(birkhoff_map, eta, [k], k * k)
    P = out.reshape(k, k)
    assert set(np.unique(out)) <= {0.0, 1.0}
    assert_array_equal(P.sum(axis=0), 1.0)
    assert_array_equal(P.sum(axis=1), 1.0)
    E = eta.reshape(k, k)
    best = max(E[np.arange(k), list(p)].sum() for p in itertools.permutations(range(k)))
    assert_allclose(out @ eta, best, rtol=1e-12, atol=1e-12)
    assert_array_equal(call_oracle(birkhoff_map, eta, [k], k * k), out)  # deterministic


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_explicit_vertices_map(seed, integer):
    rng = np.random.RandomState(seed)
    for t, dim in [(1, 1), (1, 4), (6, 3), (9, 5)]:
        V = random_eta(rng, t * dim, integer).reshape(t, dim)
        if t > 2:
            V[-1] = V[1]  # a duplicated vertex: the first one wins
        eta = random_eta(rng, dim, integer)
        out = call_oracle(explicit_vertices_map, eta, np.r_[t, dim, V.ravel()], dim)
        assert_array_equal(out, V[np.argmax(V @ eta)])  # the first maximiser


# ---------------------------------------------------------------------------
# knapsack log-partition
# ---------------------------------------------------------------------------
def _knapsack_logZ_ref(theta, lower, upper):
    V = binary_vectors(len(theta))
    cnt = V.sum(axis=1)
    V = V[(cnt >= lower) & (cnt <= upper)]
    s = V @ theta
    return logsumexp(s), softmax(s) @ V


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_knapsack_log_partition_batch(k, seed):
    rng = np.random.RandomState(seed)
    for lower, upper in _bounds_list(rng, k, (0, k), (k, k), (0, 0), (1, k)):
        Theta = rng.randn(4, k)
        Theta[1] *= 50.0
        Theta[2] = 0.0
        logZ, Mu = knapsack_log_partition_batch(Theta, lower, upper)
        assert logZ.shape == (4,) and Mu.shape == (4, k)
        for r in range(4):
            lz, mu = _knapsack_logZ_ref(Theta[r], lower, upper)
            assert_allclose(logZ[r], lz, rtol=1e-10, atol=1e-10)
            assert_allclose(Mu[r], mu, rtol=1e-9, atol=1e-10)
        # the marginals are the gradient of the log-partition
        h = 1e-6
        th = Theta[0]
        fd = [(knapsack_log_partition_batch((th + h * e)[None], lower, upper)[0][0]
               - knapsack_log_partition_batch((th - h * e)[None], lower, upper)[0][0]) / (2 * h)
              for e in np.eye(k)]
        assert_allclose(Mu[0], fd, rtol=1e-6, atol=1e-7)


def test_knapsack_log_partition_large_scores():
    rng = np.random.RandomState(0)
    Theta = 1e4 * rng.randn(3, 5)
    logZ, Mu = knapsack_log_partition_batch(Theta, 1, 3)
    assert np.all(np.isfinite(logZ)) and np.all(np.isfinite(Mu))
    for r in range(3):
        lz, mu = _knapsack_logZ_ref(Theta[r], 1, 3)
        assert_allclose(logZ[r], lz, rtol=1e-12)
        assert_allclose(Mu[r], mu, atol=1e-9)
    # no rows
    logZ, Mu = knapsack_log_partition_batch(np.zeros((0, 4)), 0, 4)
    assert logZ.shape == (0,) and Mu.shape == (0, 4)


# ---------------------------------------------------------------------------
# permutahedron max-marginals, pinned ranks, PosLearn
# ---------------------------------------------------------------------------
def _perms(k):
    return np.array(list(itertools.permutations(range(k))), dtype=np.int64).reshape(-1, k)


def _max_marginals_ref(theta, w):
    """MM[j, r] by enumeration of the rank vectors (label j at rank r)."""
    k = len(theta)
    R = _perms(k)
    scores = w[R] @ theta
    MM = np.full((k, k), -np.inf)
    for ranks, s in zip(R, scores):
        for j in range(k):
            MM[j, ranks[j]] = max(MM[j, ranks[j]], s)
    return MM, R, scores


@pytest.mark.parametrize("integer,ties", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_permutahedron_max_marginals(k, seed, integer, ties):
    rng = np.random.RandomState(seed)
    theta = random_eta(rng, k, integer)
    w = _decreasing_weights(rng, k, ties)
    MM = permutahedron_max_marginals(theta, w)
    assert_allclose(MM, _max_marginals_ref(theta, w)[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("integer,ties", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_permutahedron_pinned_ranks(k, seed, integer, ties):
    rng = np.random.RandomState(seed)
    theta = random_eta(rng, k, integer)
    w = _decreasing_weights(rng, k, ties)
    MM, R, scores = _max_marginals_ref(theta, w)
    for j in range(k):
        for r in range(k):
            ranks = permutahedron_pinned_ranks(theta, j, r)
            assert ranks.dtype == np.int64
            assert_array_equal(np.sort(ranks), np.arange(k))
            assert ranks[j] == r
            assert_allclose(w[ranks] @ theta, MM[j, r], rtol=1e-12, atol=1e-12)
            if not ties:  # distinct weights: ties in theta go to the lowest index
                pinned = (R[:, j] == r)
                opt = R[pinned & (scores == MM[j, r])]
                assert_array_equal(ranks, min(map(tuple, opt)))


def _poslearn_ref(theta, ranks0, w):
    """Per label j: max over all rankings with j moved off its true rank t of
    ``L_j (1 - s(y) + s(y'))``, ``L_j = (w[rank'_j] - w[t])^2 / 2``; the lowest
    rank, then the lexicographically smallest ranks, among the maximisers."""
    k = len(theta)
    R = _perms(k)
    scores = w[R] @ theta
    s_true = w[ranks0] @ theta
    out = []
    for j in range(k):
        t = ranks0[j]
        moved = R[:, j] != t
        if not moved.any():
            out.append(None)
            continue
        Rj, sj = R[moved], scores[moved]
        L = 0.5 * (w[Rj[:, j]] - w[t]) ** 2
        vals = L * (1.0 - s_true + sj)
        best = vals.max()
        arg = min(range(len(Rj)), key=lambda q: (vals[q] != best, Rj[q, j], tuple(Rj[q])))
        out.append((best, L[arg], sj[arg], Rj[arg]))
    return out


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_permutahedron_poslearn_batch(k, seed, integer):
    rng = np.random.RandomState(seed)
    n = 4
    Theta = np.array([random_eta(rng, k, integer) for _ in range(n)])
    Theta[-1] = 0.0  # every ranking ties
    Ranks0 = np.array([rng.permutation(k) for _ in range(n)], dtype=np.int64)
    w = _decreasing_weights(rng, k, False)
    costs, scores, ranks = permutahedron_poslearn_batch(Theta, Ranks0, w)
    assert costs.shape == scores.shape == (n, k) and ranks.shape == (n, k, k)
    for i in range(n):
        ref = _poslearn_ref(Theta[i], Ranks0[i], w)
        s_true = w[Ranks0[i]] @ Theta[i]
        for j in range(k):
            if ref[j] is None:  # one label: no violator of its position
                assert costs[i, j] == 0.0 and scores[i, j] == -np.inf
                assert_array_equal(ranks[i, j], Ranks0[i])
                continue
            best, L, sc, rk = ref[j]
            rj = ranks[i, j]
            assert_array_equal(np.sort(rj), np.arange(k))
            assert rj[j] != Ranks0[i, j]
            assert_allclose(costs[i, j], 0.5 * (w[rj[j]] - w[Ranks0[i, j]]) ** 2, rtol=1e-12)
            assert_allclose(scores[i, j], w[rj] @ Theta[i], rtol=1e-12, atol=1e-12)
            assert_allclose(costs[i, j] * (1.0 - s_true + scores[i, j]), best, rtol=1e-12,
                            atol=1e-12)
            if integer:  # exact ties: the lowest rank, then the pinned-ranks rule
                assert costs[i, j] == L and scores[i, j] == sc
                assert_array_equal(rj, rk)


# ---------------------------------------------------------------------------
# knapsack slack-scaling violator
# ---------------------------------------------------------------------------
def _slack_ref(theta, y, lower, upper):
    """``max(0, max_{y' != y feasible} Hamming(y', y) (1 + <theta, y' - y>))``."""
    V = binary_vectors(len(theta))
    cnt = V.sum(axis=1)
    V = V[(cnt >= lower) & (cnt <= upper) & np.any(V != y, axis=1)]
    if len(V) == 0:
        return 0.0
    vals = np.abs(V - y).sum(axis=1) * (1.0 + (V - y) @ theta)
    return max(0.0, vals.max())


def _feasible_label(rng, k, lower, upper):
    y = np.zeros(k)
    y[rng.choice(k, size=rng.randint(lower, upper + 1), replace=False)] = 1.0
    return y


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", KS)
def test_knapsack_slack_violator(k, seed, integer):
    rng = np.random.RandomState(seed)
    for lower, upper in _bounds_list(rng, k, (0, k), (k, k), (1, 1 + (k > 1))):
        y = _feasible_label(rng, k, lower, upper)
        theta = random_eta(rng, k, integer) * (1.0 if integer else 0.7)
        out, val = knapsack_slack_violator(theta, y, lower, upper)
        ref = _slack_ref(theta, y, lower, upper)
        assert_allclose(val, ref, rtol=1e-12, atol=1e-12)
        assert set(np.unique(out)) <= {0.0, 1.0}
        assert lower <= out.sum() <= upper
        if ref > 0.0:
            achieved = np.abs(out - y).sum() * (1.0 + (out - y) @ theta)
            assert_allclose(achieved, ref, rtol=1e-12, atol=1e-12)
        else:  # nothing violated: y itself
            assert_array_equal(out, y)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_knapsack_slack_violator_batch(k, seed):
    rng = np.random.RandomState(seed)
    lower, upper = _knapsack_bounds(rng, k)
    n = 6
    Y = np.array([_feasible_label(rng, k, lower, upper) for _ in range(n)])
    Theta = rng.randn(n, k)
    Theta[0] = 5.0 * (2 * Y[0] - 1)  # the truth wins by a margin: no violator
    out = knapsack_slack_violator_batch(Theta, Y, lower, upper)
    assert out.shape == (n, k)
    for i in range(n):
        ref = _slack_ref(Theta[i], Y[i], lower, upper)
        if ref > 0.0:
            achieved = np.abs(out[i] - Y[i]).sum() * (1.0 + (out[i] - Y[i]) @ Theta[i])
            assert_allclose(achieved, ref, rtol=1e-12, atol=1e-12)
        else:
            assert_array_equal(out[i], Y[i])
        assert_array_equal(out[i], knapsack_slack_violator(Theta[i], Y[i], lower, upper)[0])
    assert_array_equal(out[0], Y[0])


# --------------------------------------------- warm starts (approximate slack)
@pytest.mark.parametrize("k", [1, 2, 5, 9, 40])
def test_order_desc_warm_equals_the_cold_sort(k):
    # started from the previous sort of nearby scores (the search's steps),
    # from a random permutation, and with ties: the order of the stable sort
    from structlearn.kernels.maps import order_desc_warm
    rng = np.random.default_rng(k)
    order = np.argsort(-rng.normal(size=k), kind="mergesort")
    for step in range(60):
        if step % 3 == 0:
            eta = rng.integers(-2, 3, size=k).astype(float)   # ties
        elif step % 3 == 1:
            eta = rng.normal(size=k)
        else:
            eta = eta + 0.05 * rng.normal(size=k)
        if step % 7 == 0:
            order = rng.permutation(k)
        order_desc_warm(eta, order)
        assert_array_equal(order, np.argsort(-eta, kind="mergesort"))


@pytest.mark.parametrize("k", [2, 3, 5])
def test_warm_assignment_is_optimal(k):
    # a sequence of score matrices theta + lam c, each solve warm-started
    # from the previous one (the approximate-slack search), against brute
    # force over all permutations (unique optima on continuous scores)
    from structlearn.kernels.assignment import _assignment_into
    rng = np.random.default_rng(k)
    perms = np.array(list(itertools.permutations(range(k))))
    perm = np.empty(k, dtype=np.int64)
    a, b = np.empty(k), np.empty(k)
    fwork, iwork = np.empty(3 * (k + 1)), np.empty(3 * (k + 1), dtype=np.int64)
    moved = 0
    prev = None
    for trial in range(20):
        theta, c = rng.normal(size=(k, k)), rng.random((k, k))
        for step, lam in enumerate(rng.random(8) * 5):
            S = theta + lam * c
            _assignment_into(S, perm, a, b, fwork, iwork, trial + step > 0)
            best = perms[np.argmax(S[np.arange(k), perms].sum(axis=1))]
            assert_array_equal(perm, best)
            moved += prev is not None and step > 0 and not np.array_equal(perm, prev)
            prev = perm.copy()
    assert moved > 0   # the warm start had to re-insert rows


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_birkhoff_runner_up_is_the_second_best_assignment(k):
    # the runner-up from one solve's duals against enumeration of all
    # assignments: the best one different from the MAP (continuous scores,
    # unique), also with the MAP's own score pushed up (many near-ties)
    from structlearn.kernels.maps import birkhoff_runner_up
    rng = np.random.default_rng(10 + k)
    perms = np.array(list(itertools.permutations(range(k))))
    params = np.array([float(k)])
    out = np.empty(k * k)
    for trial in range(40):
        S = rng.normal(size=(k, k))
        if trial % 2:
            S[np.arange(k), rng.permutation(k)] += 2.0
        scores = S[np.arange(k), perms].sum(axis=1)
        order = np.argsort(-scores)
        best = np.zeros((k, k))
        best[np.arange(k), perms[order[0]]] = 1.0
        second = np.zeros((k, k))
        second[np.arange(k), perms[order[1]]] = 1.0
        birkhoff_runner_up(S.ravel(), params, best.ravel(), out)
        assert_array_equal(out, second.ravel())


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6])
def test_birkhoff_runner_up_from_a_warm_solves_duals(k):
    # the approximate-slack search's path: the MAP by a warm-started solve
    # (birkhoff_map_into) along cost-augmented scores theta + lam c, then
    # the runner-up from the duals that solve left in its workspace --
    # against enumeration of all assignments
    from structlearn.kernels.maps import birkhoff_map_into, birkhoff_runner_up_from_duals
    rng = np.random.default_rng(20 + k)
    perms = np.array(list(itertools.permutations(range(k))))
    params = np.array([float(k)])
    best, out = np.empty(k * k), np.empty(k * k)
    p = k * k   # workspaces as the search sizes them: 4 p + 3 entries (p parts)
    iwork, fwork = np.empty(4 * p + 3, dtype=np.int64), np.empty(4 * p + 3)
    for trial in range(15):
        theta, c = rng.normal(size=(k, k)), rng.random((k, k))
        for step, lam in enumerate(np.sort(rng.random(6) * 3)):
            S = theta + lam * c
            birkhoff_map_into(S.ravel(), params, best, iwork, fwork, step > 0)
            order = np.argsort(-S[np.arange(k), perms].sum(axis=1))
            assert_array_equal(best.reshape(k, k).argmax(axis=1), perms[order[0]])
            birkhoff_runner_up_from_duals(S.ravel(), params, best, out, fwork[:k],
                                          fwork[k:2 * k])
            second = np.zeros((k, k))
            second[np.arange(k), perms[order[1]]] = 1.0
            assert_array_equal(out, second.ravel())
