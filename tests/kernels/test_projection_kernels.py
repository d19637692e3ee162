"""Tests for the projection and assignment kernels of ``structlearn.kernels``
(isotonic, simplex, birkhoff, sinkhorn, assignment).

Every kernel is checked against an independent, slow reference written
here with numpy/scipy: brute-force formulas, generic solvers over the
convex hull of enumerated vertices, or optimality (KKT / variational
inequality) conditions.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import linear_sum_assignment, minimize, nnls

from structlearn.kernels.assignment import linear_assignment, linear_assignment_batch
from structlearn.kernels.projections import (
    isotonic_decreasing,
    isotonic_decreasing_batch,
    project_birkhoff,
    project_birkhoff_batch,
    project_knapsack,
    project_knapsack_batch,
    project_knapsack_kl,
    project_knapsack_kl_batch,
    project_permutahedron,
    project_permutahedron_batch,
    project_simplex,
    project_simplex_batch,
    sinkhorn,
    sinkhorn_batch,
)

MAX_ITER = 10000
TOL = 1e-10


# ---------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------


def isotonic_decreasing_minmax(y):
    """Brute-force non-increasing isotonic regression, O(k^3).

    Uses the min-max characterisation
    ``v_i = min_{s <= i} max_{t >= i} mean(y[s:t+1])``, which shares no
    code or logic with pool-adjacent-violators.
    """
    k = len(y)
    v = np.empty(k)
    for i in range(k):
        v[i] = min(
            max(np.mean(y[s : t + 1]) for t in range(i, k)) for s in range(i + 1)
        )
    return v


def project_onto_hull(V, theta, penalty=1e4):
    """Euclidean projection of ``theta`` onto ``conv(rows of V)``.

    Solves ``min_{q in simplex} ||V^T q - theta||^2`` with NNLS, the
    equality ``sum(q) = 1`` being enforced by a heavily weighted extra row
    (error O(1 / penalty^2)).
    """
    A = np.vstack([V.T, penalty * np.ones((1, V.shape[0]))])
    b = np.concatenate([theta, [penalty]])
    q, _ = nnls(A, b, maxiter=50 * V.shape[0])
    return V.T @ q


def assert_is_euclidean_projection(x, theta, V, atol=1e-5):
    """Check ``x`` against the hull reference and the optimality condition.

    ``x`` is the projection of ``theta`` onto ``conv(V)`` iff it lies in the
    hull and ``<theta - x, v - x> <= 0`` for every vertex ``v``.
    """
    ref = project_onto_hull(V, theta)
    assert_allclose(x, ref, atol=atol)
    # Feasibility: x is (numerically) its own projection onto the hull.
    assert_allclose(project_onto_hull(V, x), x, atol=atol)
    assert np.max((V - x) @ (theta - x)) <= atol


def knapsack_vertices(k, lower, upper):
    """All vertices of ``{u in [0, 1]^k : lower <= sum(u) <= upper}``.

    At a vertex at least k - 1 box constraints are active, so all but at
    most one coordinate are 0/1; a fractional coordinate must make the sum
    hit ``lower`` or ``upper``.
    """
    verts = set()
    for bits in itertools.product([0.0, 1.0], repeat=k):
        if lower - 1e-12 <= sum(bits) <= upper + 1e-12:
            verts.add(bits)
    for i in range(k):
        for bits in itertools.product([0.0, 1.0], repeat=k - 1):
            c = sum(bits)
            for m in (lower, upper):
                frac = m - c
                if 0.0 < frac < 1.0:
                    verts.add(tuple(bits[:i]) + (frac,) + tuple(bits[i:]))
    return np.array(sorted(verts))


def permutahedron_vertices(w):
    return np.array(sorted(set(itertools.permutations(w))), dtype=float)


def permutation_matrices(k):
    eye = np.eye(k)
    return np.array([eye[list(p)].ravel() for p in itertools.permutations(range(k))])


def simplex_vertices(k):
    return np.eye(k)


def assert_kl_optimal_over_vertices(u, theta, V, atol=1e-7):
    """Optimality of the KL projection of ``exp(theta - 1)`` onto conv(V).

    For ``u > 0`` the KL objective is differentiable with gradient
    ``log(u) - theta + 1``; ``u`` is optimal iff the gradient has
    non-negative inner product with ``v - u`` for every vertex ``v``.
    """
    assert np.all(u > 0)
    grad = np.log(u) - theta + 1.0
    assert np.min((V - u) @ grad) >= -atol


def brute_force_assignment(S):
    k = S.shape[0]
    best = -np.inf
    for p in itertools.permutations(range(k)):
        best = max(best, S[np.arange(k), list(p)].sum())
    return best


def assignment_value(S, perm):
    return S[np.arange(S.shape[0]), perm].sum()


# ---------------------------------------------------------------------------
# Reference values from the specification
# ---------------------------------------------------------------------------


def test_reference_values():
    assert_allclose(
        isotonic_decreasing(np.array([0.2, 0.9, 0.5, -0.3])),
        [0.55, 0.55, 0.5, -0.3],
        atol=1e-12,
    )
    theta = np.array([0.9, 0.8, 0.7, -0.2, 1.5])
    assert_allclose(
        project_knapsack(theta, 0.0, 2.0),
        [0.433333, 0.333333, 0.233333, 0.0, 1.0],
        atol=1e-6,
    )
    assert_allclose(
        project_knapsack_kl(theta, 0.0, 2.0),
        [0.409957, 0.370945, 0.335645, 0.136463, 0.746991],
        atol=1e-6,
    )
    assert_allclose(
        project_permutahedron(
            np.array([0.3, 2.0, -1.0, 0.9]), np.array([3.0, 2.0, 1.0, 0.0])
        ),
        [1.233333, 2.933333, 0.0, 1.833333],
        atol=1e-6,
    )
    assert_allclose(
        project_birkhoff(np.random.RandomState(0).randn(3, 3), MAX_ITER, TOL),
        [
            [0.377076, 0.0, 0.622924],
            [0.223703, 0.776296, 0.0],
            [0.399221, 0.223704, 0.377076],
        ],
        atol=1e-5,
    )


# ---------------------------------------------------------------------------
# Isotonic regression
# ---------------------------------------------------------------------------


def test_isotonic_decreasing_brute_force():
    rng = np.random.RandomState(0)
    for _ in range(300):
        k = rng.randint(1, 9)
        y = rng.randn(k)
        if rng.rand() < 0.3:
            y = np.round(y)  # ties
        v = isotonic_decreasing(y)
        assert_allclose(v, isotonic_decreasing_minmax(y), atol=1e-12)
        assert np.all(np.diff(v) <= 1e-12)


def test_isotonic_decreasing_matches_slsqp():
    rng = np.random.RandomState(1)
    for _ in range(20):
        k = rng.randint(2, 9)
        y = rng.randn(k)
        cons = [
            {"type": "ineq", "fun": lambda v, i=i: v[i] - v[i + 1]}
            for i in range(k - 1)
        ]
        res = minimize(
            lambda v: np.sum((v - y) ** 2),
            np.full(k, y.mean()),
            jac=lambda v: 2 * (v - y),
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        assert_allclose(isotonic_decreasing(y), res.x, atol=1e-5)


def test_isotonic_already_sorted_and_increasing():
    y = np.array([5.0, 3.0, 3.0, -1.0])
    assert_array_equal(isotonic_decreasing(y), y)
    y = np.arange(6.0)
    assert_allclose(isotonic_decreasing(y), np.full(6, 2.5))


# ---------------------------------------------------------------------------
# Euclidean projections vs generic QP over enumerated vertices
# ---------------------------------------------------------------------------


def test_project_simplex_vs_hull():
    rng = np.random.RandomState(2)
    for _ in range(60):
        k = rng.randint(1, 6)
        theta = rng.randn(k) * rng.choice([0.1, 1.0, 5.0])
        u = project_simplex(theta)
        assert_is_euclidean_projection(u, theta, simplex_vertices(k))


@pytest.mark.parametrize("integral", [True, False])
def test_project_knapsack_vs_hull(integral):
    rng = np.random.RandomState(3 + integral)
    for _ in range(60):
        k = rng.randint(1, 6)
        if integral:
            lower = float(rng.randint(0, k + 1))
            upper = float(rng.randint(int(lower), k + 1))
        else:
            lower, upper = np.sort(rng.uniform(0, k, size=2))
        theta = rng.randn(k) * rng.choice([0.5, 1.0, 3.0]) + rng.choice([-1, 0.5, 2])
        u = project_knapsack(theta, lower, upper)
        assert_is_euclidean_projection(u, theta, knapsack_vertices(k, lower, upper))
        assert lower - 1e-9 <= u.sum() <= upper + 1e-9


def test_project_knapsack_active_sum_is_exact():
    """The threshold is solved exactly, not by a loose bisection."""
    rng = np.random.RandomState(5)
    for _ in range(200):
        k = rng.randint(1, 30)
        theta = rng.randn(k) * 3
        lower, upper = np.sort(rng.uniform(0, k, size=2))
        u = project_knapsack(theta, lower, upper)
        s = np.clip(theta, 0, 1).sum()
        if s > upper:
            assert abs(u.sum() - upper) < 1e-12 * k
        elif s < lower:
            assert abs(u.sum() - lower) < 1e-12 * k
        else:
            assert_array_equal(u, np.clip(theta, 0, 1))


def test_project_permutahedron_vs_hull():
    rng = np.random.RandomState(6)
    for _ in range(40):
        k = rng.randint(1, 6)
        w = np.sort(rng.randn(k))[::-1].copy()
        if rng.rand() < 0.3:
            w = np.round(w)  # repeated weights
        theta = rng.randn(k) * rng.choice([0.3, 1.0, 4.0])
        mu = project_permutahedron(theta, w)
        assert_is_euclidean_projection(mu, theta, permutahedron_vertices(w))


def test_project_permutahedron_unsorted_weights():
    rng = np.random.RandomState(7)
    theta = rng.randn(5)
    w = np.array([4.0, 3.0, 2.0, 1.0, 0.0])
    assert_allclose(
        project_permutahedron(theta, rng.permutation(w)),
        project_permutahedron(theta, w),
        atol=1e-14,
    )


def test_project_birkhoff_vs_hull():
    rng = np.random.RandomState(8)
    for _ in range(40):
        k = rng.randint(1, 5)
        theta = rng.randn(k, k) * rng.choice([0.1, 1.0, 5.0])
        P = project_birkhoff(theta, MAX_ITER, TOL)
        assert P.shape == (k, k)
        V = permutation_matrices(k)
        assert_is_euclidean_projection(P.ravel(), theta.ravel(), V)


def test_project_birkhoff_optimality_larger():
    """Optimality for larger k without enumerating the k! vertices.

    ``P`` is the projection iff it is doubly stochastic and
    ``<theta - P, V - P> <= 0`` for every permutation matrix ``V``; the
    maximum over ``V`` is a linear assignment problem (solved by scipy).
    """
    rng = np.random.RandomState(9)
    for k in [5, 8, 12, 20]:
        for scale in [0.1, 1.0, 10.0, 100.0]:
            theta = rng.randn(k, k) * scale
            P = project_birkhoff(theta, MAX_ITER, TOL)
            assert P.min() >= 0
            assert_allclose(P.sum(0), 1, atol=1e-9)
            assert_allclose(P.sum(1), 1, atol=1e-9)
            G = theta - P
            r, c = linear_sum_assignment(G, maximize=True)
            assert G[r, c].sum() - np.sum(G * P) <= 1e-9 * max(1.0, scale)


def test_project_birkhoff_special_matrices():
    for k in [1, 2, 5]:
        # Constant and additive scores carry no preference: uniform answer.
        u = np.arange(k, dtype=float)
        for theta in [np.zeros((k, k)), u[:, None] + 3 * u[None, :]]:
            P = project_birkhoff(theta, MAX_ITER, TOL)
            assert_allclose(P, np.full((k, k), 1.0 / k), atol=1e-12)
        # A doubly stochastic matrix is its own projection.
        D = np.full((k, k), 1.0 / k) * 0.5 + np.eye(k) * 0.5
        assert_allclose(project_birkhoff(D, MAX_ITER, TOL), D, atol=1e-12)


# ---------------------------------------------------------------------------
# KL projections
# ---------------------------------------------------------------------------


def _kl_knapsack_slsqp(theta, lower, upper):
    v = np.exp(theta - 1)
    k = len(theta)
    ones = np.ones(k)

    def obj(u):
        return np.sum(u * np.log(u / v) - u + v)

    def grad(u):
        return np.log(u / v)

    cons = [
        {"type": "ineq", "fun": lambda u: u.sum() - lower, "jac": lambda u: ones},
        {"type": "ineq", "fun": lambda u: upper - u.sum(), "jac": lambda u: -ones},
    ]
    u0 = np.full(k, min(max((lower + upper) / 2 / k, 1e-3), 1 - 1e-3))
    res = minimize(
        obj,
        u0,
        jac=grad,
        bounds=[(1e-12, 1.0)] * k,
        constraints=cons,
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x


def test_project_knapsack_kl_vs_slsqp_and_optimality():
    rng = np.random.RandomState(10)
    for _ in range(40):
        k = rng.randint(1, 6)
        lower, upper = np.sort(rng.uniform(0, k, size=2))
        if rng.rand() < 0.3:
            lower, upper = float(np.floor(lower)), float(np.ceil(upper))
        if upper == 0:
            continue
        theta = rng.randn(k) + rng.choice([-1.0, 1.0, 2.5])
        u = project_knapsack_kl(theta, lower, upper)
        assert lower - 1e-9 <= u.sum() <= upper + 1e-9
        assert np.all(u <= 1) and np.all(u > 0)
        assert_allclose(u, _kl_knapsack_slsqp(theta, lower, upper), atol=1e-5)
        assert_kl_optimal_over_vertices(u, theta, knapsack_vertices(k, lower, upper))


def test_project_knapsack_kl_edge_cases():
    theta = np.array([3.0, -2.0, 0.5])
    assert_array_equal(project_knapsack_kl(theta, 0.0, 0.0), np.zeros(3))
    assert_array_equal(project_knapsack_kl(theta, 3.0, 3.0), np.ones(3))
    # Inactive sum constraint: only the cube part.
    assert_allclose(
        project_knapsack_kl(theta, 0.0, 3.0), np.minimum(1, np.exp(theta - 1))
    )
    # The active sum is matched to rounding.
    rng = np.random.RandomState(11)
    for _ in range(100):
        k = rng.randint(1, 30)
        th = rng.randn(k) * 5
        lower, upper = np.sort(rng.uniform(0, k, size=2))
        u = project_knapsack_kl(th, lower, upper)
        s = np.minimum(1, np.exp(th - 1)).sum()
        target = upper if s > upper else lower if s < lower else s
        assert abs(u.sum() - target) < 1e-12 * k


def _assert_sinkhorn_kkt(P, theta, atol=1e-8):
    """KL projection onto Birkhoff: doubly stochastic and additive logs."""
    k = theta.shape[0]
    assert np.all(P > 0)
    assert_allclose(P.sum(0), 1, atol=atol)
    assert_allclose(P.sum(1), 1, atol=atol)
    # log P - theta + 1 = f_i + g_j  <=>  its double centring vanishes.
    L = np.log(P) - theta
    C = L - L.mean(0, keepdims=True) - L.mean(1, keepdims=True) + L.mean()
    assert np.abs(C).max() < 1e-8 * max(1.0, np.abs(theta).max())
    assert P.shape == (k, k)


def test_sinkhorn_kkt():
    rng = np.random.RandomState(12)
    for k in [1, 2, 3, 5, 10, 20]:
        for scale in [0.1, 1.0, 10.0]:
            theta = rng.randn(k, k) * scale
            _assert_sinkhorn_kkt(sinkhorn(theta, MAX_ITER, TOL), theta)


def test_sinkhorn_vs_hull_optimality():
    """Variational inequality over the enumerated permutation matrices."""
    rng = np.random.RandomState(13)
    for _ in range(20):
        k = rng.randint(1, 5)
        theta = rng.randn(k, k)
        P = sinkhorn(theta, MAX_ITER, TOL)
        V = permutation_matrices(k)
        assert_kl_optimal_over_vertices(P.ravel(), theta.ravel(), V)


def test_sinkhorn_vs_slsqp():
    rng = np.random.RandomState(14)
    k = 3
    for _ in range(3):
        theta = rng.randn(k, k)
        v = np.exp(theta - 1).ravel()
        # One column constraint is implied by the others; SLSQP needs the
        # equality constraints to be linearly independent.
        cons = [
            {"type": "eq", "fun": lambda x: x.reshape(k, k).sum(1) - 1},
            {"type": "eq", "fun": lambda x: x.reshape(k, k).sum(0)[:-1] - 1},
        ]
        res = minimize(
            lambda x: np.sum(x * np.log(x / v) - x + v),
            np.full(k * k, 1.0 / k),
            jac=lambda x: np.log(x / v),
            bounds=[(1e-12, 1)] * (k * k),
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        assert res.success, res.message
        assert_allclose(sinkhorn(theta, MAX_ITER, TOL).ravel(), res.x, atol=1e-5)


# ---------------------------------------------------------------------------
# Linear assignment
# ---------------------------------------------------------------------------


def _is_permutation(p, k):
    return (
        p.dtype == np.int64
        and p.shape == (k,)
        and sorted(p.tolist()) == list(range(k))
    )


def test_linear_assignment_vs_scipy():
    rng = np.random.RandomState(15)
    for trial in range(600):
        k = rng.randint(1, 13)
        S = rng.randn(k, k) * rng.choice([1.0, 100.0])
        if trial % 3 == 1:
            S = rng.randint(-2, 3, size=(k, k)).astype(float)  # many ties
        if trial % 3 == 2:
            S[rng.rand(k, k) < 0.4] = -np.inf
        try:
            r, c = linear_sum_assignment(S, maximize=True)
        except ValueError:  # no finite assignment
            continue
        p = linear_assignment(S)
        assert _is_permutation(p, k)
        assert_allclose(assignment_value(S, p), S[r, c].sum(), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("forbidden", [-np.inf, -1e300])
def test_linear_assignment_brute_force_with_forbidden(forbidden):
    rng = np.random.RandomState(16)
    checked = 0
    for _ in range(300):
        k = rng.randint(1, 7)
        S = rng.randn(k, k)
        mask = rng.rand(k, k) < 0.5
        S_ref = np.where(mask, -np.inf, S)
        best = brute_force_assignment(S_ref)
        if not np.isfinite(best):
            continue
        checked += 1
        p = linear_assignment(np.where(mask, forbidden, S))
        assert _is_permutation(p, k)
        assert not mask[np.arange(k), p].any()
        assert_allclose(assignment_value(S, p), best, atol=1e-9)
    assert checked > 100


def test_linear_assignment_infeasible_still_permutation():
    S = np.full((4, 4), -np.inf)
    S[0, 0] = 1.0
    S[1, 0] = 2.0
    p = linear_assignment(S)
    assert _is_permutation(p, 4)


def test_linear_assignment_deterministic_and_scale():
    rng = np.random.RandomState(17)
    S = rng.randint(0, 2, size=(8, 8)).astype(float)
    assert_array_equal(linear_assignment(S), linear_assignment(S.copy()))
    assert_array_equal(linear_assignment(np.zeros((4, 4))), np.arange(4))
    S = rng.randn(10, 10) * 1e6
    r, c = linear_sum_assignment(S, maximize=True)
    value = assignment_value(S, linear_assignment(S))
    assert_allclose(value, S[r, c].sum(), rtol=1e-12)


# ---------------------------------------------------------------------------
# Batched versions
# ---------------------------------------------------------------------------


def test_batches_match_rowwise():
    rng = np.random.RandomState(18)
    n, p = 7, 5
    Theta = rng.randn(n, p) * 2
    w = np.sort(rng.randn(p))[::-1].copy()

    def rowwise(fn, *args):
        return np.array([fn(Theta[i], *args) for i in range(n)])

    pairs = [
        (isotonic_decreasing_batch(Theta), rowwise(isotonic_decreasing)),
        (project_simplex_batch(Theta), rowwise(project_simplex)),
        (
            project_knapsack_batch(Theta, 1.0, 2.5),
            rowwise(project_knapsack, 1.0, 2.5),
        ),
        (
            project_knapsack_kl_batch(Theta, 1.0, 2.5),
            rowwise(project_knapsack_kl, 1.0, 2.5),
        ),
        (
            project_permutahedron_batch(Theta, w),
            rowwise(project_permutahedron, w),
        ),
    ]
    for batched, expected in pairs:
        assert batched.shape == (n, p)
        assert_allclose(batched, expected, atol=1e-14)

    k = 4
    Theta_sq = rng.randn(n, k * k) * 3
    Theta_sq[0, 3] = -np.inf  # forbidden entry for the assignment batch
    expected = np.array(
        [linear_assignment(Theta_sq[i].reshape(k, k)) for i in range(n)]
    )
    for arr in (Theta_sq, np.asfortranarray(Theta_sq)):
        out = linear_assignment_batch(arr, k)
        assert out.dtype == np.int64 and out.shape == (n, k)
        assert_array_equal(out, expected)
    Theta_sq[0, 3] = 0.0
    for batch, single in [
        (project_birkhoff_batch, project_birkhoff),
        (sinkhorn_batch, sinkhorn),
    ]:
        expected = np.array(
            [single(Theta_sq[i].reshape(k, k), MAX_ITER, TOL).ravel() for i in range(n)]
        )
        for arr in (Theta_sq, np.asfortranarray(Theta_sq)):
            assert_allclose(batch(arr, k, MAX_ITER, TOL), expected, atol=1e-14)


def test_batches_empty():
    empty = np.empty((0, 3))
    assert project_simplex_batch(empty).shape == (0, 3)
    assert project_birkhoff_batch(np.empty((0, 4)), 2, MAX_ITER, TOL).shape == (0, 4)
    assert linear_assignment_batch(np.empty((0, 4)), 2).shape == (0, 2)


# ---------------------------------------------------------------------------
# Robustness and edge cases
# ---------------------------------------------------------------------------


def test_large_scores_euclidean():
    rng = np.random.RandomState(19)
    for k in [1, 2, 5, 12]:
        theta = rng.randn(k) * 1e6
        u = project_simplex(theta)
        assert np.all(np.isfinite(u)) and abs(u.sum() - 1) < 1e-9 and u.min() >= 0
        u = project_knapsack(theta, min(1.0, k), min(2.5, k))
        assert np.all(np.isfinite(u)) and np.all((u >= 0) & (u <= 1))
        assert min(1.0, k) - 1e-9 <= u.sum() <= min(2.5, k) + 1e-9
        u = project_knapsack_kl(theta, min(1.0, k), min(2.5, k))
        assert np.all(np.isfinite(u)) and np.all((u >= 0) & (u <= 1))
        assert min(1.0, k) - 1e-9 <= u.sum() <= min(2.5, k) + 1e-9
        w = np.arange(k, dtype=float)[::-1].copy()
        mu = project_permutahedron(theta, w)
        assert np.all(np.isfinite(mu)) and abs(mu.sum() - w.sum()) < 1e-6
        assert np.all(np.isfinite(isotonic_decreasing(theta)))
        Theta = rng.randn(k, k) * 1e6
        P = project_birkhoff(Theta, MAX_ITER, TOL)
        assert np.all(np.isfinite(P)) and P.min() >= 0
        assert_allclose(P.sum(0), 1, atol=1e-6)
        assert_allclose(P.sum(1), 1, atol=1e-6)
        # At this scale the projection is the best permutation matrix.
        r, c = linear_sum_assignment(Theta, maximize=True)
        assert_allclose(P[r, c], 1, atol=1e-6)


def test_large_scores_sinkhorn():
    rng = np.random.RandomState(20)
    for k in [1, 2, 5, 12]:
        for scale in [1e2, 1e3]:
            theta = rng.randn(k, k) * scale
            P = sinkhorn(theta, MAX_ITER, TOL)
            assert np.all(np.isfinite(P)) and P.min() >= 0
            assert_allclose(P.sum(0), 1, atol=1e-8)
            assert_allclose(P.sum(1), 1, atol=1e-8)
    theta = np.full((3, 3), 1e3)
    assert_allclose(sinkhorn(theta, MAX_ITER, TOL), np.full((3, 3), 1 / 3), atol=1e-12)


def test_small_max_iter_is_finite():
    rng = np.random.RandomState(21)
    theta = rng.randn(6, 6) * 10
    for fn in (project_birkhoff, sinkhorn):
        for it in (0, 1):
            assert np.all(np.isfinite(fn(theta, it, TOL)))


def test_k_equals_one():
    x = np.array([-3.7])
    assert_array_equal(isotonic_decreasing(x), x)
    assert_array_equal(project_simplex(x), [1.0])
    assert_array_equal(project_knapsack(x, 0.0, 1.0), [0.0])
    assert_array_equal(project_knapsack(x, 1.0, 1.0), [1.0])
    assert_allclose(project_knapsack(np.array([0.4]), 0.0, 1.0), [0.4])
    assert_allclose(project_knapsack_kl(np.array([0.4]), 0.0, 1.0), [np.exp(-0.6)])
    assert_array_equal(project_knapsack_kl(x, 1.0, 1.0), [1.0])
    assert_array_equal(project_permutahedron(x, np.array([2.0])), [2.0])
    M = np.array([[5.0]])
    assert_array_equal(project_birkhoff(M, MAX_ITER, TOL), [[1.0]])
    assert_array_equal(sinkhorn(M, MAX_ITER, TOL), [[1.0]])
    assert_array_equal(linear_assignment(M), [0])
    assert_array_equal(linear_assignment_batch(np.array([[1.0], [2.0]]), 1), [[0], [0]])


def test_default_arguments():
    theta = np.random.RandomState(22).randn(3, 3)
    assert_allclose(project_birkhoff(theta), project_birkhoff(theta, MAX_ITER, TOL))
    assert_allclose(sinkhorn(theta), sinkhorn(theta, MAX_ITER, TOL))
