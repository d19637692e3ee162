"""Brute-force tests of the output structures (``structlearn.structures``).

Every oracle of every structure is compared with enumeration of *all*
structures (all vertices of the marginal polytope) on small instances:
MAP, encoding, task costs, top-2, PosLearn and slack-scaling violators,
CRF marginals, Euclidean/KL projections, SparseMAP (active set and
conditional-gradient variants), the SparseMAP Jacobian-vector product and
calibrated decoding.

The references are written independently of the library: vertex vectors,
task costs and per-position costs are built here from the documented
definitions, projections onto convex hulls are solved by a generic
penalised NNLS (Euclidean) or SLSQP (KL) over the enumerated vertices and
certified by first-order optimality conditions.  Where ties are possible
(integer scores) the tests compare optimal *values*, never argmax identity.
"""

import functools
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize, nnls
from scipy.special import logsumexp, softmax, xlogy

from structlearn.kernels.sparsemap import sparsemap_jvp
from structlearn.structures import (
    Birkhoff,
    Knapsack,
    OrderSimplex,
    Permutahedron,
    UnitCube,
)

ATOL = 1e-9


# ---------------------------------------------------------------------------
# enumeration of every structure, with reference costs written from the docs
# ---------------------------------------------------------------------------
class Case:
    """A structure, all its labels and vertex vectors, and reference costs.

    Parameters
    ----------
    structure : Structure
    labels : ndarray (N,) or (N, k)
        Every label in the structure's encoding.
    Phi : ndarray (N, p)
        Vertex vectors, built here from the documented encoding.
    task_cost : callable (A, B) -> (m,)
        Reference task cost ``L(A_i, B_i)``.
    positions : ndarray (N, n_positions)
        Value of every PosLearn position of every label.
    position_cost : callable (c, v_new, v_true) -> L_c
    slack, crf : bool
        Whether exact slack scaling / marginal inference must be available.
    """

    def __init__(self, structure, labels, Phi, task_cost, positions,
                 position_cost, slack, crf):
        self.S = structure
        self.labels = labels
        self.Phi = np.asarray(Phi, dtype=np.float64)
        self.task_cost = task_cost
        self.positions = positions
        self.position_cost = position_cost
        self.slack = slack
        self.crf = crf
        self._index = {self.key(y): i for i, y in enumerate(labels)}
        assert len(self._index) == len(labels)
        # full pairwise task-cost matrix C[a, b] = L(labels[a], labels[b])
        N = len(labels)
        A, B = np.repeat(np.arange(N), N), np.tile(np.arange(N), N)
        self.C = task_cost(labels[A], labels[B]).reshape(N, N)

    @property
    def N(self):
        return len(self.labels)

    @staticmethod
    def key(y):
        return tuple(np.atleast_1d(np.asarray(y)).astype(np.int64).tolist())

    def index(self, Y, n=None):
        """Enumeration indices of labels ``Y``; fails on any invalid label."""
        Y = np.asarray(Y)
        assert np.issubdtype(Y.dtype, np.integer), f"labels have dtype {Y.dtype}"
        assert Y.shape[1:] == self.labels.shape[1:], (Y.shape, self.labels.shape)
        if n is not None:
            assert len(Y) == n
        out = np.empty(len(Y), dtype=np.int64)
        for i, y in enumerate(Y):
            k = self.key(y)
            assert k in self._index, f"row {i}: {y!r} is not a valid label"
            out[i] = self._index[k]
        return out

    def vertex_index(self, V):
        """Enumeration indices of vertex vectors ``V`` (rows); fails if not vertices."""
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        assert V.shape[1] == self.Phi.shape[1]
        d = np.abs(V[:, None, :] - self.Phi[None, :, :]).max(axis=2)
        idx = d.argmin(axis=1)
        bad = d[np.arange(len(V)), idx] > 1e-9
        assert not bad.any(), f"not a vertex of the {self.S.name}: {V[bad]}"
        return idx


def _subsets(k):
    return np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.int64).reshape(-1, k)


def _rank_vectors(k):
    return np.array(list(itertools.permutations(range(1, k + 1))),
                    dtype=np.int64).reshape(-1, k)


def _hamming(A, B):
    return np.abs(A - B).sum(axis=1).astype(np.float64)


def _unit_cost(c, v_new, v_true):
    return np.ones(np.shape(v_new))


def cube_case(k):
    Y = _subsets(k)
    return Case(UnitCube(k), Y, Y, _hamming, Y, _unit_cost, slack=True, crf=True)


def knapsack_case(k, lower, upper):
    Y = _subsets(k)
    Y = Y[(Y.sum(axis=1) >= lower) & (Y.sum(axis=1) <= upper)]
    return Case(Knapsack(k, lower, upper), Y, Y, _hamming, Y, _unit_cost,
                slack=True, crf=True)


def order_case(k):
    y = np.arange(k, dtype=np.int64)
    Phi = (y[:, None] > np.arange(k - 1)[None, :]).astype(np.float64)

    def cost(A, B):
        return np.abs(A - B).astype(np.float64)

    # positions are the thresholds: y' differs at t iff phi_t differs
    return Case(OrderSimplex(k), y, Phi, cost, Phi, _unit_cost, slack=True, crf=True)


def permutahedron_case(k, weights=None):
    w = np.arange(k, 0, -1, dtype=np.float64) if weights is None else np.asarray(weights, float)
    R = _rank_vectors(k)
    Phi = w[R - 1]

    def cost(A, B):
        return 0.5 * ((w[A - 1] - w[B - 1]) ** 2).sum(axis=1)

    def position_cost(c, v_new, v_true):
        return 0.5 * (w[np.asarray(v_new) - 1] - w[np.asarray(v_true) - 1]) ** 2

    S = Permutahedron(k) if weights is None else Permutahedron(k, weights=w)
    return Case(S, R, Phi, cost, R, position_cost, slack=False, crf=False)


def birkhoff_case(k):
    R = _rank_vectors(k)
    P = np.zeros((len(R), k, k))
    for a, r in enumerate(R):
        P[a, np.arange(k), r - 1] = 1.0

    def cost(A, B):
        return (A != B).sum(axis=1).astype(np.float64)

    return Case(Birkhoff(k), R, P.reshape(len(R), k * k), cost, R, _unit_cost,
                slack=False, crf=False)


CASE_SPECS = {
    "cube1": lambda: cube_case(1),
    "cube3": lambda: cube_case(3),
    "cube5": lambda: cube_case(5),
    "knapsack3_0_3": lambda: knapsack_case(3, 0, 3),
    "knapsack4_1_2": lambda: knapsack_case(4, 1, 2),
    "knapsack5_2_4": lambda: knapsack_case(5, 2, 4),
    "knapsack5_0_1": lambda: knapsack_case(5, 0, 1),
    "knapsack4_2_2": lambda: knapsack_case(4, 2, 2),
    "knapsack5_4_5": lambda: knapsack_case(5, 4, 5),
    "knapsack3_3_3": lambda: knapsack_case(3, 3, 3),  # a single structure
    "knapsack3_0_0": lambda: knapsack_case(3, 0, 0),  # a single structure
    "order2": lambda: order_case(2),
    "order3": lambda: order_case(3),
    "order5": lambda: order_case(5),
    "perm1": lambda: permutahedron_case(1),
    "perm2": lambda: permutahedron_case(2),
    "perm3": lambda: permutahedron_case(3),
    "perm5": lambda: permutahedron_case(5),
    # non-default, non-integer weights (the class accepts any decreasing w)
    "perm4w": lambda: permutahedron_case(4, [3.5, 2.0, 1.5, -1.0]),
    "birkhoff1": lambda: birkhoff_case(1),
    "birkhoff2": lambda: birkhoff_case(2),
    "birkhoff3": lambda: birkhoff_case(3),
    "birkhoff4": lambda: birkhoff_case(4),
}
ALL = list(CASE_SPECS)
RANKING = [n for n in ALL if n.startswith(("perm", "birkhoff"))]
NON_RANKING = [n for n in ALL if n not in RANKING]


@functools.lru_cache(maxsize=None)
def get_case(name):
    return CASE_SPECS[name]()


@pytest.fixture(params=ALL)
def case(request):
    return get_case(request.param)


def thetas(case, n=6, seeds=(0, 1, 2)):
    """Batches of part scores: Gaussian, wide Gaussian, and integer (ties)."""
    p = case.S.n_parts
    for seed in seeds:
        rng = np.random.RandomState(seed)
        yield rng.randn(n, p)
        yield 3.0 * rng.randn(n, p)
        yield rng.randint(-2, 3, size=(n, p)).astype(np.float64)


def _frozen(*arrays):
    return [np.array(a, copy=True) for a in arrays]


def _assert_unchanged(before, after):
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b, err_msg="an oracle modified its input")


# ---------------------------------------------------------------------------
# reference projections onto the convex hull of the enumerated vertices
# ---------------------------------------------------------------------------
def hull_weights(V, u):
    """Convex weights q >= 0, sum 1, minimising ||q V - u|| (penalised NNLS)."""
    N = len(V)
    M = 1e4 * (1.0 + np.abs(V).max() + np.abs(u).max())
    A = np.vstack([V.T, M * np.ones((1, N))])
    b = np.append(u, M)
    q, _ = nnls(A, b, maxiter=200 * N)
    return q


def hull_projection(V, theta):
    """Euclidean projection of ``theta`` onto conv(V), certified optimal."""
    if len(V) == 1:
        return V[0].copy()
    q = hull_weights(V, theta)
    mu = q @ V / q.sum()
    # polish: exact affine projection restricted to the identified support
    sup = q > 1e-10 * q.max()
    Vs = V[sup]
    m = len(Vs)
    K = np.zeros((m + 1, m + 1))
    K[:m, :m] = Vs @ Vs.T
    K[:m, m] = K[m, :m] = 1.0
    sol = np.linalg.lstsq(K, np.append(Vs @ theta, 1.0), rcond=None)[0]
    if sol[:m].min() >= -1e-12:
        mu_pol = sol[:m] @ Vs
        if np.sum((mu_pol - theta) ** 2) <= np.sum((mu - theta) ** 2) + 1e-12:
            mu = mu_pol
    assert_euclidean_certificate(V, theta, mu)
    return mu


def assert_in_hull(V, u, tol=1e-7):
    if len(V) == 1:
        np.testing.assert_allclose(u, V[0], atol=tol)
        return
    q = hull_weights(V, u)
    np.testing.assert_allclose(q.sum(), 1.0, atol=tol)
    np.testing.assert_allclose(q @ V, u, atol=tol, err_msg="point is not in the hull")


def assert_euclidean_certificate(V, theta, mu, tol=1e-7):
    """mu = proj(theta) iff mu in conv(V) and <theta - mu, v - mu> <= 0 for all v."""
    assert_in_hull(V, mu, tol)
    scale = 1.0 + np.abs(theta).max() + np.abs(V).max()
    worst = ((V - mu) @ (theta - mu)).max()
    assert worst <= tol * scale ** 2, f"not the Euclidean projection (VI gap {worst})"


def assert_kl_certificate(V, theta, u, tol=1e-6):
    """u = argmin_{conv V} sum u log u - <u, theta> iff <log u + 1 - theta, v - u> >= 0."""
    assert_in_hull(V, u, tol)
    if len(V) == 1:
        return
    assert u.min() > 0, u
    g = np.log(u) + 1.0 - theta
    worst = ((V - u) @ g).min()
    assert worst >= -tol * (1.0 + np.abs(g).max()), f"not the KL projection (gap {worst})"


def hull_kl_projection(V, theta):
    """argmin_{u in conv V} KL(u, exp(theta - 1)) by SLSQP over simplex weights.

    With the generalised KL, ``KL(u, exp(theta - 1)) = sum(u log u - u theta)
    + const``.
    """
    N = len(V)
    if N == 1:
        return V[0].copy()

    def fun(q):
        u = np.maximum(q @ V, 0.0)
        return np.sum(xlogy(u, u) - u * theta)

    def jac(q):
        u = np.maximum(q @ V, 1e-12)
        return V @ (np.log(u) + 1.0 - theta)

    res = minimize(fun, np.full(N, 1.0 / N), jac=jac, method="SLSQP",
                   bounds=[(0.0, 1.0)] * N,
                   constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0,
                                 "jac": lambda q: np.ones((1, N))}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    q = np.clip(res.x, 0.0, None)
    return q @ V / q.sum()


def simplex_projection_rows(X):
    """Euclidean projection of each row onto the probability simplex (sorting)."""
    X = np.asarray(X, dtype=np.float64)
    k = X.shape[1]
    U = -np.sort(-X, axis=1)
    css = np.cumsum(U, axis=1) - 1.0
    ind = np.arange(1, k + 1)
    rho = (U - css / ind > 0).sum(axis=1)
    tau = css[np.arange(len(X)), rho - 1] / rho
    return np.maximum(X - tau[:, None], 0.0)


# ---------------------------------------------------------------------------
# 1. argmax
# ---------------------------------------------------------------------------
def test_argmax_attains_the_enumerated_maximum(case):
    S = case.S
    for theta in thetas(case):
        n = len(theta)
        before = _frozen(theta)
        Y = S.argmax(theta)
        _assert_unchanged(before, [theta])
        idx = case.index(Y, n)  # valid labels
        all_scores = theta @ case.Phi.T
        np.testing.assert_allclose(all_scores[np.arange(n), idx], all_scores.max(axis=1),
                                   atol=ATOL)
        np.testing.assert_allclose(S.scores(theta, Y), all_scores[np.arange(n), idx],
                                   atol=ATOL)


def test_argmax_oracle_kernel_matches_argmax(case):
    """The numba oracle used by SparseMAP also returns a maximising vertex."""
    S = case.S
    oracle, params = S._oracle(), S._oracle_params()
    for theta in thetas(case, seeds=(3,)):
        all_scores = theta @ case.Phi.T
        for i, row in enumerate(theta):
            out = np.full(S.n_parts, np.nan)
            oracle(np.ascontiguousarray(row), params, out)
            v = case.vertex_index(out)[0]
            np.testing.assert_allclose(all_scores[i, v], all_scores[i].max(), atol=ATOL)


# ---------------------------------------------------------------------------
# 2. encode / decode / scores
# ---------------------------------------------------------------------------
def test_encode_decode_scores(case):
    S = case.S
    np.testing.assert_allclose(S.encode(case.labels), case.Phi, atol=0)
    np.testing.assert_array_equal(S.decode(case.Phi), case.labels)
    rng = np.random.RandomState(0)
    idx = rng.randint(case.N, size=25)
    Y = case.labels[idx]
    np.testing.assert_array_equal(S.decode(S.encode(Y)), Y)
    assert S.encode(Y).shape == (25, S.n_parts)
    theta = rng.randn(25, S.n_parts)
    np.testing.assert_allclose(S.scores(theta, Y), np.einsum("ij,ij->i", theta, case.Phi[idx]),
                               atol=1e-12)


# ---------------------------------------------------------------------------
# 3. task cost, cost vector, cost bounds, cost-augmented MAP
# ---------------------------------------------------------------------------
def test_cost_matches_task_cost_on_all_pairs(case):
    S, N = case.S, case.N
    A, B = np.repeat(np.arange(N), N), np.tile(np.arange(N), N)
    ref = case.C.ravel()
    np.testing.assert_allclose(S.cost(case.labels[A], case.labels[B]), ref, atol=1e-12)
    np.testing.assert_allclose(S.cost(case.labels, case.labels), 0.0, atol=0)
    # the cost is affine in phi(y'): <phi(y'), cv(phi(y))> - <phi(y), cv(phi(y))>
    cv = S.cost_vector(case.Phi)
    assert cv.shape == case.Phi.shape
    affine = (np.einsum("ij,ij->i", case.Phi[A], cv[B])
              - np.einsum("ij,ij->i", case.Phi[B], cv[B]))
    np.testing.assert_allclose(affine, ref, atol=1e-12)


# Regression: cost_bounds used to hard-code the gap 1.0, wrong for
# non-integer permutahedron weights such as (3.5, 2, 1.5, -1).
@pytest.mark.parametrize("name", ALL)
def test_cost_bounds_bound_the_enumerated_costs(name):
    """cost_bounds() = (largest cost, smallest gap) must bound the true ones."""
    case = get_case(name)
    L_max, L_eps = case.S.cost_bounds()
    C = case.C
    assert L_max >= C.max() - 1e-12
    values = np.unique(np.round(C, 10))
    if len(values) > 1:
        assert 0 < L_eps <= np.diff(values).min() + 1e-12


def test_cost_augmented_argmax(case):
    """argmax(theta + cost_vector(phi(y))) maximises s(y') + L(y', y)."""
    S = case.S
    rng = np.random.RandomState(5)
    for theta in thetas(case, seeds=(5,)):
        n = len(theta)
        yi = rng.randint(case.N, size=n)
        aug = theta + S.cost_vector(S.encode(case.labels[yi]))
        j = case.index(S.argmax(aug), n)
        vals = theta @ case.Phi.T + case.C[:, yi].T
        np.testing.assert_allclose(vals[np.arange(n), j], vals.max(axis=1), atol=ATOL)


# ---------------------------------------------------------------------------
# 4. second best (top-2)
# ---------------------------------------------------------------------------
def test_second_best(case):
    S, N = case.S, case.N
    rng = np.random.RandomState(1)
    for theta in thetas(case):
        n = len(theta)
        rows = np.arange(n)
        all_scores = theta @ case.Phi.T
        first_opt = all_scores.argmax(axis=1)
        last_opt = N - 1 - all_scores[:, ::-1].argmax(axis=1)  # another MAP under ties
        lib_map = case.index(S.argmax(theta), n)
        rand = rng.randint(N, size=n)
        for yi in (lib_map, first_opt, last_opt, rand):
            Y = case.labels[yi]
            before = _frozen(theta, Y)
            j = case.index(S.second_best(theta, Y), n)
            _assert_unchanged(before, [theta, Y])
            if N == 1:
                continue  # no other structure exists
            assert np.all(j != yi), "second_best returned the given label"
            masked = all_scores.copy()
            masked[rows, yi] = -np.inf
            np.testing.assert_allclose(all_scores[rows, j], masked.max(axis=1), atol=ATOL)


# ---------------------------------------------------------------------------
# 5. PosLearn violators
# ---------------------------------------------------------------------------
def test_poslearn_violators(case):
    S, N = case.S, case.N
    n_pos = case.positions.shape[1]
    rng = np.random.RandomState(2)
    for theta in thetas(case):
        n = len(theta)
        all_scores = theta @ case.Phi.T
        for yi in (all_scores.argmax(axis=1), rng.randint(N, size=n)):
            Y = case.labels[yi]
            before = _frozen(theta, Y)
            costs, scores, phis = S.poslearn_violators(theta, Y)
            _assert_unchanged(before, [theta, Y])
            assert costs.shape == (n, n_pos) and scores.shape == (n, n_pos)
            assert phis.shape == (n, n_pos, S.n_parts)
            for i in range(n):
                s_true = all_scores[i, yi[i]]
                for c in range(n_pos):
                    v_true = case.positions[yi[i], c]
                    differ = case.positions[:, c] != v_true
                    if not differ.any():
                        assert scores[i, c] == -np.inf, (i, c, scores[i, c])
                        continue
                    assert np.isfinite(scores[i, c]) and np.isfinite(costs[i, c])
                    L = case.position_cost(c, case.positions[differ, c], v_true)
                    brute = np.max(L * (1.0 - s_true + all_scores[i, differ]))
                    got = costs[i, c] * (1.0 - s_true + scores[i, c])
                    np.testing.assert_allclose(got, brute, atol=ATOL,
                                               err_msg=f"row {i}, position {c}")
                    v = case.vertex_index(phis[i, c])[0]
                    assert case.positions[v, c] != v_true, (i, c)
                    np.testing.assert_allclose(scores[i, c], all_scores[i, v], atol=ATOL)
                    np.testing.assert_allclose(
                        costs[i, c], case.position_cost(c, case.positions[v, c], v_true),
                        atol=1e-12)


def test_poslearn_position_costs_add_up_to_task_cost(case):
    """Sanity of the reference: sum_c L_c(y'_c) = L(y', y)."""
    N = case.N
    A, B = np.repeat(np.arange(N), N), np.tile(np.arange(N), N)
    total = np.zeros(N * N)
    for c in range(case.positions.shape[1]):
        pa, pb = case.positions[A, c], case.positions[B, c]
        total += np.where(pa != pb, case.position_cost(c, pa, pb), 0.0)
    np.testing.assert_allclose(total, case.C.ravel(), atol=1e-12)


# ---------------------------------------------------------------------------
# 6. exact slack-scaling violator
# ---------------------------------------------------------------------------
def test_slack_violator(case):
    S, N = case.S, case.N
    rng = np.random.RandomState(3)
    if not case.slack:
        assert not S.has_exact_slack
        theta = rng.randn(2, S.n_parts)
        with pytest.raises(ValueError):
            S.slack_violator(theta, case.labels[:2])
        with pytest.raises(ValueError):
            S.slack_violator(None, None)  # how HingeLoss.check probes it
        return
    assert S.has_exact_slack
    for theta in thetas(case):
        n = len(theta)
        rows = np.arange(n)
        all_scores = theta @ case.Phi.T
        for yi in (all_scores.argmax(axis=1), rng.randint(N, size=n)):
            Y = case.labels[yi]
            before = _frozen(theta, Y)
            phis = S.slack_violator(theta, Y)
            _assert_unchanged(before, [theta, Y])
            assert phis.shape == (n, S.n_parts)
            v = case.vertex_index(phis)
            s_true = all_scores[rows, yi]
            vals = case.C[:, yi].T * (1.0 - s_true[:, None] + all_scores)  # (n, N)
            got = vals[rows, v]
            np.testing.assert_allclose(got, vals.max(axis=1), atol=ATOL)  # max >= 0 (y' = y)
            others = vals.copy()
            others[rows, yi] = -np.inf
            nothing = others.max(axis=1) < -1e-9
            # "phi(y) where nothing is violated"
            np.testing.assert_array_equal(v[nothing], yi[nothing])


# ---------------------------------------------------------------------------
# 7. CRF marginals and log-partition
# ---------------------------------------------------------------------------
def test_marginals_and_log_partition(case):
    S = case.S
    if not case.crf:
        theta = np.random.RandomState(0).randn(2, S.n_parts)
        for fn in (S.marginals, S.log_partition, S.marginals_and_log_partition):
            with pytest.raises(ValueError, match="crf"):
                fn(theta)
        return
    rng = np.random.RandomState(4)
    batches = list(thetas(case)) + [30.0 * rng.randn(4, S.n_parts)]
    for theta in batches:
        all_scores = theta @ case.Phi.T
        ref_logZ = logsumexp(all_scores, axis=1)
        ref_mu = softmax(all_scores, axis=1) @ case.Phi
        mu, logZ = S.marginals_and_log_partition(theta)
        np.testing.assert_allclose(logZ, ref_logZ, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(mu, ref_mu, atol=1e-10)
        np.testing.assert_allclose(S.marginals(theta), ref_mu, atol=1e-10)
        np.testing.assert_allclose(S.log_partition(theta), ref_logZ, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------
# 8. projections
# ---------------------------------------------------------------------------
KNOWN_SETS = ("cube", "knapsack", "order-simplex", "permutahedron", "birkhoff",
              "row-stochastic")


def _reference_projection(case, set_, geometry, theta):
    S = case.S
    if set_ == S.marginal_set:
        if geometry == "euclidean":
            return hull_projection(case.Phi, theta), 1e-6
        return hull_kl_projection(case.Phi, theta), 1e-4
    if set_ == "cube":
        if geometry == "euclidean":
            return np.clip(theta, 0.0, 1.0), 1e-12
        return np.minimum(np.exp(theta - 1.0), 1.0), 1e-12
    if set_ == "row-stochastic":
        k = S.n_labels
        rows = theta.reshape(k, k)
        if geometry == "euclidean":
            return simplex_projection_rows(rows).ravel(), 1e-10
        return softmax(rows, axis=1).ravel(), 1e-12
    raise AssertionError(f"no reference for {set_!r}")


def test_projection_invalid_set_or_geometry_raises(case):
    S = case.S
    theta = np.random.RandomState(0).randn(2, S.n_parts)
    with pytest.raises(ValueError):
        S.project(theta, "no-such-set", "euclidean")
    for bad in ("l2", "KL", None):
        with pytest.raises(ValueError):
            S.project(theta, "marginal", bad)
    for set_ in KNOWN_SETS:
        if set_ not in S.projection_sets:
            with pytest.raises(ValueError):
                S.project(theta, set_, "euclidean")
        else:
            for geometry in ("euclidean", "kl"):
                if geometry not in S.projection_sets[set_]:
                    with pytest.raises(ValueError):
                        S.project(theta, set_, geometry)
    assert S.marginal_set in S.projection_sets


# the enumerated references (NNLS, SLSQP over every vertex) take most of the
# time: the fast selection checks every set and geometry on one seed's
# batches, the whole suite (CI) on a second one for the marginal polytopes
@pytest.mark.parametrize("seed", [10, pytest.param(11, marks=pytest.mark.slow)])
def test_projections_match_reference(case, seed):
    S = case.S
    for set_ in ["marginal"] + list(S.projection_sets):
        resolved = S.marginal_set if set_ == "marginal" else set_
        for geometry in ("euclidean", "kl"):
            if geometry not in S.projection_sets[resolved]:
                with pytest.raises(ValueError):
                    S.project(np.zeros((1, S.n_parts)), set_, geometry)
                continue
            if seed != 10 and set_ != "marginal":
                continue
            for theta in thetas(case, n=3, seeds=(seed,)):
                before = _frozen(theta)
                U = S.project(theta, set_, geometry)
                _assert_unchanged(before, [theta])
                assert U.shape == theta.shape
                for i, row in enumerate(theta):
                    ref, tol = _reference_projection(case, resolved, geometry, row)
                    np.testing.assert_allclose(
                        U[i], ref, atol=tol,
                        err_msg=f"{S.name}: {geometry} projection onto {set_}, theta={row}")
                    if resolved == S.marginal_set:
                        if geometry == "euclidean":
                            assert_euclidean_certificate(case.Phi, row, U[i], tol=1e-7)
                        else:
                            assert_kl_certificate(case.Phi, row, U[i], tol=1e-6)


# ---------------------------------------------------------------------------
# 9. SparseMAP
# ---------------------------------------------------------------------------
def test_sparsemap_batch_is_projection_onto_marginal_polytope(case):
    S = case.S
    for theta in thetas(case, n=4, seeds=(20, 21)):
        before = _frozen(theta)
        Mu = S.sparsemap(theta)
        _assert_unchanged(before, [theta])
        assert Mu.shape == theta.shape
        for i, row in enumerate(theta):
            ref = hull_projection(case.Phi, row)
            np.testing.assert_allclose(Mu[i], ref, atol=1e-6, err_msg=f"theta={row}")


@pytest.mark.parametrize("method", ["active-set", "vanilla", "away-step", "pairwise"])
def test_sparsemap_support(case, method):
    S = case.S
    active = method == "active-set"
    # vanilla Frank-Wolfe converges sublinearly when the solution lies on a
    # face (zig-zagging): check it loosely in distance and tightly in objective
    tol = {"active-set": 1e-6, "vanilla": 1e-2}.get(method, 1e-5)
    kw = {} if active else {"max_iter": 20000, "tol": 1e-12}
    seeds = (30, 31) if active else (30,)
    for theta in thetas(case, n=3 if active else 2, seeds=seeds):
        for row in theta:
            mu, V, w, n_iter = S.sparsemap_support(row, method=method, **kw)
            ref = hull_projection(case.Phi, row)
            np.testing.assert_allclose(mu, ref, atol=tol, err_msg=f"{method}, theta={row}")
            gap = 0.5 * np.sum((mu - row) ** 2) - 0.5 * np.sum((ref - row) ** 2)
            assert gap <= 1e-5 * (1.0 + np.sum(row ** 2)), (method, row, gap)
            assert V.ndim == 2 and V.shape[1] == S.n_parts and w.shape == (len(V),)
            assert len(V) >= 1 and np.all(w > 0)
            np.testing.assert_allclose(w.sum(), 1.0, atol=1e-12)
            np.testing.assert_allclose(w @ V, mu, atol=1e-10)
            idx = case.vertex_index(V)
            assert len(set(idx.tolist())) == len(idx), "duplicate support vertices"
            assert n_iter >= 1
            if active:
                assert len(V) <= S.n_parts + 1
                # the active set is affinely independent
                assert np.linalg.matrix_rank(np.hstack([V, np.ones((len(V), 1))])) == len(V)


def test_sparsemap_support_rejects_unknown_method():
    with pytest.raises(ValueError, match="method"):
        UnitCube(3).sparsemap_support(np.zeros(3), method="frank-wolfe")


# ---------------------------------------------------------------------------
# 10. SparseMAP Jacobian-vector product
# ---------------------------------------------------------------------------
def _support_key(V):
    return frozenset(tuple(np.round(v, 9)) for v in V)


def _check_jvp(S, seeds, h=1e-6, min_checked=5):
    checked = 0
    for seed in seeds:
        rng = np.random.RandomState(seed)
        theta = rng.randn(S.n_parts) * (0.5, 1.0, 3.0)[seed % 3]
        d = rng.randn(S.n_parts)
        mu, V, w, _ = S.sparsemap_support(theta)
        _, Vp, _, _ = S.sparsemap_support(theta + h * d)
        _, Vm, _, _ = S.sparsemap_support(theta - h * d)
        if not (_support_key(V) == _support_key(Vp) == _support_key(Vm)) or w.min() < 1e-4:
            continue  # support not stable at this theta
        fd = (S.sparsemap((theta + h * d)[None])[0] - S.sparsemap((theta - h * d)[None])[0]) / (2 * h)
        jvp = sparsemap_jvp(V, w, S.n_unary, d)
        np.testing.assert_allclose(jvp, fd, atol=1e-6 * (1 + np.abs(d).max()),
                                   err_msg=f"seed {seed}, theta={theta}, support size {len(V)}")
        checked += 1
    assert checked >= min_checked, f"only {checked} stable supports"


@pytest.mark.parametrize("name", ["perm3", "perm5", "perm4w", "birkhoff3", "birkhoff4"])
def test_sparsemap_jvp_matches_finite_differences(name):
    _check_jvp(get_case(name).S, seeds=range(12))


# Regression: sparsemap_jvp used Z = pinv(M M^T), wrong when the support is
# affinely but not linearly independent (zero vertex, or a hyperplane through
# the origin); it now solves the KKT system.
@pytest.mark.parametrize("S", [UnitCube(1), OrderSimplex(3),
                               Permutahedron(3, weights=[1.0, 0.0, -1.0])],
                         ids=["cube1", "order3", "perm3-zero-sum-weights"])
def test_sparsemap_jvp_with_linearly_dependent_support(S):
    theta = {1: np.array([0.3]), 2: np.array([0.3, 0.2])}.get(
        S.n_parts, np.array([0.3, 0.2, -0.1]))
    d = np.eye(S.n_parts)[0]
    mu, V, w, _ = S.sparsemap_support(theta)
    h = 1e-6
    fd = (S.sparsemap((theta + h * d)[None])[0] - S.sparsemap((theta - h * d)[None])[0]) / (2 * h)
    np.testing.assert_allclose(sparsemap_jvp(V, w, S.n_unary, d), fd, atol=1e-6)


# ---------------------------------------------------------------------------
# 11. calibrated decoding
# ---------------------------------------------------------------------------
def test_calibrated_decode_minimises_expected_cost(case):
    S, N = case.S, case.N
    rng = np.random.RandomState(6)
    n = 8
    Q = np.zeros((n, N))
    for i in range(n):
        size = N if i % 2 else rng.randint(1, min(N, 4) + 1)
        sup = rng.choice(N, size=size, replace=False)
        Q[i, sup] = rng.dirichlet(np.ones(size))
    mu = Q @ case.Phi
    j = case.index(S.calibrated_decode(mu), n)
    expected = Q @ case.C.T  # expected[i, a] = sum_y q_y L(labels[a], y)
    np.testing.assert_allclose(expected[np.arange(n), j], expected.min(axis=1), atol=1e-9)


@pytest.mark.parametrize("constrained", [False, True])
def test_chain_approx_slack_kernel_equals_the_generic_search(constrained):
    # the Numba search of chains against the generic search over the
    # structure's batched oracles (Structure.approx_slack_search)
    from structlearn.kernels.chain import approx_slack_batch
    from structlearn.structures import Chain
    rng = np.random.default_rng(3)
    K = 3
    lengths = rng.integers(1, 15, size=200)
    tok_off = np.concatenate(([0], np.cumsum(lengths)))
    allowed = None
    if constrained:
        trans = rng.random((K, K)) > 0.3
        np.fill_diagonal(trans, True)
        allowed = (trans, np.ones(K, bool), np.ones(K, bool))
    ch = Chain(K, tok_off, allowed=allowed)
    searched = 0
    skipped = 0
    for scale in (0.3, 1.0, 3.0):
        theta = scale * rng.normal(size=ch.n_parts)
        y = ch.argmax(rng.normal(size=ch.n_parts))   # feasible targets
        if not constrained:
            flip = rng.random(len(y)) < 0.3
            y[flip] = rng.integers(0, K, flip.sum())
        theta[ch.unary_mask] += np.eye(K)[y].ravel()   # the truth scores well
        for n_search, eps in ((12, 1e-3), (3, 1e-2), (1, 1e-3)):
            got = ch.approx_slack_violator(theta, y, n_search, eps)
            ref = ch.approx_slack_search(theta, y, n_search, eps)
            np.testing.assert_array_equal(got, ref)
        # the steps after the two ends matter on these instances
        short = ch.approx_slack_search(theta, y, 0, 1e-3)
        searched += int(np.any(short != ch.approx_slack_violator(theta, y, 12, 1e-3)))
        # and most searches stopped well before the cap of 12 + 2 calls
        # (kernels.slack_search), so the equality covers the stopping rules
        raw = np.ascontiguousarray(theta)
        _, calls = approx_slack_batch(raw, ch._theta(raw), ch._y(y), ch.part_off,
                                      ch.tok_off, K, 12, 1e-3)
        skipped += calls < 7 * ch.n_samples(theta)
    assert searched > 0
    assert skipped == 3


def _fixed_size_structures():
    from structlearn.structures import (Birkhoff, Knapsack, OrderSimplex, Permutahedron,
                                        UnitCube)
    return {"cube": UnitCube(5), "knapsack": Knapsack(6, 1, 3),
            "knapsack-fixed": Knapsack(4, 2, 2), "order": OrderSimplex(6),
            "permutahedron": Permutahedron(5),
            "permutahedron-w": Permutahedron(4, [3.5, 2.0, 1.2, 0.1]),
            "birkhoff": Birkhoff(4), "single": Permutahedron(1)}


@pytest.mark.parametrize("name", list(_fixed_size_structures()))
def test_fixed_size_approx_slack_kernel_equals_the_generic_search(name):
    # the Numba search (kernels.approx_slack) against the generic search over
    # the structure's batched numpy oracles (Structure.approx_slack_search);
    # the truth is often the MAP, so the runner-up oracles are exercised
    from structlearn.structures.base import slack_hinge
    st = _fixed_size_structures()[name]
    rng = np.random.default_rng(7)
    Y_all = st.all_outputs()
    n = 150
    searched = 0
    skipped = 0
    for scale in (0.3, 1.0, 3.0):
        Y = Y_all[rng.integers(0, len(Y_all), n)]
        theta = (scale * rng.normal(size=(n, st.n_parts))
                 + 2.0 * rng.random((n, 1)) * st.encode(Y))
        for n_search, eps in ((12, 1e-3), (3, 1e-2), (1, 1e-3), (12, 0.0)):
            ref = st.approx_slack_search(theta, Y, n_search, eps)
            np.testing.assert_array_equal(st.approx_slack_violator(theta, Y, n_search, eps),
                                          ref)
            value, grad = st.approx_slack_value_and_grad(theta, Y, n_search, eps)
            v_ref, g_ref = slack_hinge(st, theta, st.encode(Y), ref)
            np.testing.assert_allclose(value, v_ref, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(grad, g_ref, rtol=1e-12, atol=1e-12)
        # the steps after the two ends matter on these instances
        short = st.approx_slack_search(theta, Y, 0, 1e-3)
        searched += int(np.any(short != st.approx_slack_violator(theta, Y, 12, 1e-3)))
        # and most searches stopped well before the cap of 12 + 2 calls
        # (kernels.slack_search), so the equality covers the stopping rules
        skipped += st._approx_slack_kernel(theta, Y, 12, 1e-3)[3] < 7 * n
    if len(Y_all) > 2 and name != "knapsack-fixed":
        assert searched > 0
    if len(Y_all) > 1:
        assert skipped == 3


@pytest.mark.parametrize("name", ["chain", "cube", "knapsack", "order", "permutahedron",
                                  "birkhoff"])
def test_approx_slack_stops_after_one_call_where_nothing_is_violated(name):
    # kernels.slack_search: H(lambda_l) <= s(y_i) - 1 certifies that every
    # other labeling has a margin of at least 1; the search then stops after
    # that one oracle call.  Rows with a large margin (certified) are mixed
    # with rows without; the kernel must still equal the reference (which
    # never stops early), and the certified rows' brute-force slack loss is 0.
    from itertools import product
    from structlearn.kernels.chain import approx_slack_batch as chain_batch
    from structlearn.structures import Chain
    rng = np.random.default_rng(11)
    n = 60
    big = rng.random(n) < 0.5          # rows whose truth wins by far
    if name == "chain":
        K, L = 3, 3
        st = Chain(K, np.arange(0, L * n + 1, L))
        y = rng.integers(0, K, n * L)
        theta = 0.3 * rng.normal(size=st.n_parts)
        theta[st.unary_mask] += (np.repeat(np.where(big, 6.0, 0.2), L)[:, None]
                                 * np.eye(K)[y]).ravel()
        Y_all = np.array(list(product(range(K), repeat=L)))
        s_all = np.stack([st.dot(theta, st.encode(np.tile(a, n))) for a in Y_all], axis=1)
        s_true = st.dot(theta, st.encode(y))
        cost = (Y_all[None, :, :] != y.reshape(n, L)[:, None, :]).sum(axis=2)
        got = st.approx_slack_violator(theta, y, 12, 1e-3)
        ref = st.approx_slack_search(theta, y, 12, 1e-3)

        def calls(rows):
            sub = Chain(K, np.arange(0, L * len(rows) + 1, L))
            th = np.concatenate([theta[st.part_off[i]:st.part_off[i + 1]] for i in rows])
            yy = np.concatenate([y[i * L:(i + 1) * L] for i in rows])
            return chain_batch(th, sub._theta(th), sub._y(yy), sub.part_off, sub.tok_off,
                               K, 12, 1e-3)[1]
    else:
        st = _fixed_size_structures()[name]
        Y_all = st.all_outputs()
        Y = Y_all[rng.integers(0, len(Y_all), n)]
        Phi_all, Phi = st.encode(Y_all), st.encode(Y)
        theta = (0.3 * rng.normal(size=(n, st.n_parts))
                 + np.where(big, 6.0, 0.3)[:, None] * (2.0 * Phi - 1.0))
        s_all = theta @ Phi_all.T
        s_true = np.einsum("ij,ij->i", theta, Phi)
        C = st.cost_vector(Phi)
        cost = Phi_all @ C.T - np.einsum("ij,ij->i", Phi, C)
        cost = cost.T
        got = st.approx_slack_violator(theta, Y, 12, 1e-3)
        ref = st.approx_slack_search(theta, Y, 12, 1e-3)

        def calls(rows):
            return st._approx_slack_kernel(theta[rows], Y[rows], 12, 1e-3)[3]
    np.testing.assert_array_equal(got, ref)
    # brute force: the exact slack loss is 0 on the certified rows only
    exact = np.max(np.maximum(cost * (1.0 - s_true[:, None] + s_all), 0.0), axis=1)
    assert np.all(exact[big] == 0.0)
    violated = np.flatnonzero(exact > 0.0)
    assert len(violated) >= n // 4
    # one oracle call per certified row; a violated row needs the search
    assert calls(np.flatnonzero(big)) == big.sum()
    assert calls(violated) >= 2 * len(violated)


@pytest.mark.parametrize("k", [2, 3, 5, 8, 12])
def test_birkhoff_sparsemap_by_projection_equals_the_active_set(k):
    # Birkhoff SparseMAP is computed by the Euclidean projection; the
    # generic active set (the previous path) is the reference
    from structlearn.kernels.sparsemap import sparsemap_active_set_batch
    from structlearn.structures import Birkhoff
    st = Birkhoff(k)
    rng = np.random.default_rng(k)
    for scale in (0.1, 1.0, 10.0):
        theta = scale * rng.normal(size=(20, k * k))
        ref = sparsemap_active_set_batch(theta, k * k, st._oracle(), st._oracle_params(),
                                         1000, 1e-9)
        np.testing.assert_allclose(st.sparsemap(theta), ref, atol=1e-7)
