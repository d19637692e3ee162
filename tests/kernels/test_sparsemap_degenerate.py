"""SparseMAP active set on degenerate supports.

When some parts are not penalised (chain transitions), vertices can differ
while their unary parts are affinely dependent, so the KKT matrix of the
active set is singular.  ``sparsemap_active_set`` must then take null-space
(simplex) steps and still stop only at an optimum.  Every solution here is
certified by the Frank-Wolfe gap over *all* enumerated vertices (for a
concave objective, ``f* - f(mu) <= max_v <grad f(mu), v - mu>``), and some
are compared with a generic QP (SLSQP) over the enumerated vertices.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import minimize

from structlearn.kernels.chain import chain_map
from structlearn.kernels.maps import explicit_vertices_map
from structlearn.kernels.sparsemap import sparsemap_active_set


# ---------------------------------------------------------------- helpers
def phi(seq, K):
    """Chain vertex in the flat block layout of ``structlearn.kernels.chain``:
    unary one-hots, transition counts, start and end one-hots."""
    L = len(seq)
    v = np.zeros(L * K + K * K + 2 * K)
    for t, k in enumerate(seq):
        v[t * K + k] = 1.0
    for a, b in zip(seq[:-1], seq[1:]):
        v[L * K + a * K + b] += 1.0
    v[L * K + K * K + seq[0]] = 1.0
    v[L * K + K * K + K + seq[-1]] = 1.0
    return v


_PHI = {}


def all_vertices(L, K):
    if (L, K) not in _PHI:
        _PHI[L, K] = np.array([phi(s, K) for s in itertools.product(range(K), repeat=L)])
    return _PHI[L, K]


def objective(eta, mu, nu):
    return eta @ mu - 0.5 * mu[:nu] @ mu[:nu]


def fw_gap(eta, mu, nu, Phi):
    grad = eta.copy()
    grad[:nu] -= mu[:nu]
    return np.max(Phi @ grad) - grad @ mu


def qp_reference(eta, nu, Phi):
    """max_q <Phi eta, q> - 1/2 ||U q||^2 over the simplex by SLSQP."""
    U = Phi[:, :nu].T
    c = Phi @ eta
    m = len(Phi)

    def f(q):
        r = U @ q
        return 0.5 * r @ r - c @ q

    def g(q):
        return U.T @ (U @ q) - c

    res = minimize(f, np.full(m, 1.0 / m), jac=g, method="SLSQP", bounds=[(0.0, 1.0)] * m,
                   constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1.0,
                                 "jac": lambda q: np.ones(m)}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    q = np.clip(res.x, 0.0, None)
    q /= q.sum()
    return Phi.T @ q


def affinely_independent(V, nu):
    A = np.hstack([V[:, :nu], np.ones((len(V), 1))])
    return np.linalg.matrix_rank(A, tol=1e-9) == len(V)


def check_solution(eta, nu, Phi, mu, V, w, gap_tol=1e-9):
    """Support made of genuine vertices, weights on the simplex, mu their
    combination, affinely independent support, optimal by the FW gap."""
    assert np.all(w > 0) and abs(w.sum() - 1.0) < 1e-12
    for v in V:
        assert np.min(np.abs(Phi - v).max(axis=1)) < 1e-12
    assert_allclose(w @ V, mu, atol=1e-12)
    assert affinely_independent(V, nu)
    scale = 1.0 + np.max(np.abs(eta))
    assert fw_gap(eta, mu, nu, Phi) <= gap_tol * scale


def chain_solve(eta, L, K, tol=1e-12):
    return sparsemap_active_set(np.ascontiguousarray(eta, dtype=float), L * K, chain_map,
                                np.array([L, K], dtype=float), 1000, tol)


# ------------------------------------------------------- the reproduction
def test_reported_degenerate_chain_block():
    # Block 2 (L = 4, K = 2) of make_batch(2, K=2, scale=1.5, max_len=4) in
    # tests/test_chain_kernels.py: the old solver stopped at the support
    # 0101, 0011, 0111, 0001 (u(0101) + u(0011) = u(0111) + u(0001)), ~0.018
    # away from optimality.
    K, scale = 2, 1.5
    rng = np.random.RandomState(2)
    lengths = np.array([1] + list(rng.randint(1, 5, size=4)))
    sizes = lengths * K + K * K + 2 * K
    off = np.concatenate([[0], np.cumsum(sizes)])
    theta = scale * rng.randn(off[-1])
    L = int(lengths[2])
    assert L == 4
    eta = theta[off[2]:off[3]]
    Phi = all_vertices(L, K)
    mu, V, w, _ = chain_solve(eta, L, K)
    check_solution(eta, L * K, Phi, mu, V, w)
    ref = qp_reference(eta, L * K, Phi)
    assert abs(objective(eta, mu, L * K) - objective(eta, ref, L * K)) < 1e-6
    assert objective(eta, mu, L * K) >= objective(eta, ref, L * K) - 1e-9


def test_dependent_chain_vertices_identity():
    # The dependency of the report, checked on the encoding itself.
    K, L = 2, 4
    u = {s: phi([int(c) for c in s], K)[:L * K] for s in ["0101", "0011", "0111", "0001"]}
    assert_allclose(u["0101"] + u["0011"], u["0111"] + u["0001"])
    full = {s: phi([int(c) for c in s], K) for s in u}
    assert not np.allclose(full["0101"] + full["0011"], full["0111"] + full["0001"])


# ----------------------------------------------------- random chain problems
@pytest.mark.parametrize("K", [2, 3])
def test_random_chains_unpenalised_transitions(K):
    rng = np.random.RandomState(10 + K)
    n_checked_qp = 0
    for trial in range(200):
        L = int(rng.randint(1, 6 if K == 2 else 5))
        Phi = all_vertices(L, K)
        nu = L * K
        scale = [0.3, 1.0, 1.5, 3.0][trial % 4]
        eta = scale * rng.randn(Phi.shape[1])
        if trial % 5 == 0:  # strong transitions: many tied/dependent supports
            eta[nu:] *= 4.0
        if trial % 7 == 0:  # integer scores: exact ties in the oracle
            eta = np.round(eta)
        mu, V, w, n_iter = chain_solve(eta, L, K)
        assert n_iter < 1000
        check_solution(eta, nu, Phi, mu, V, w)
        if trial % 25 == 0 and len(Phi) <= 81:
            ref = qp_reference(eta, nu, Phi)
            assert objective(eta, mu, nu) >= objective(eta, ref, nu) - 1e-6
            n_checked_qp += 1
    assert n_checked_qp >= 4


def test_random_chains_match_qp_reference():
    rng = np.random.RandomState(0)
    for _ in range(20):
        K = int(rng.randint(2, 4))
        L = int(rng.randint(2, 5 if K == 2 else 4))
        Phi = all_vertices(L, K)
        nu = L * K
        eta = 1.5 * rng.randn(Phi.shape[1])
        mu, V, w, _ = chain_solve(eta, L, K)
        ref = qp_reference(eta, nu, Phi)
        assert abs(objective(eta, mu, nu) - objective(eta, ref, nu)) < 1e-6


# -------------------------------------------- explicit, dependent vertices
def explicit_solve(eta, nu, P, max_iter=1000, tol=1e-12):
    params = np.concatenate([[len(P), P.shape[1]], P.ravel()])
    return sparsemap_active_set(np.ascontiguousarray(eta, dtype=float), nu,
                                explicit_vertices_map, params, max_iter, tol)


@pytest.mark.parametrize("seed", range(8))
def test_explicit_vertices_low_dim_unaries(seed):
    # 12 vertices whose unary parts live in R^2: any 4 are affinely
    # dependent, the unpenalised parts make them distinct.
    rng = np.random.RandomState(seed)
    nu, n_rest, t = 2, 3, 12
    P = np.hstack([rng.randn(t, nu), rng.randn(t, n_rest)])
    for eta_scale in [0.5, 2.0, 10.0]:
        eta = eta_scale * rng.randn(nu + n_rest)
        mu, V, w, _ = explicit_solve(eta, nu, P)
        check_solution(eta, nu, P, mu, V, w)
        assert len(V) <= nu + 1
        ref = qp_reference(eta, nu, P)
        assert abs(objective(eta, mu, nu) - objective(eta, ref, nu)) < 1e-6


@pytest.mark.parametrize("seed", range(6))
def test_explicit_vertices_duplicated_and_dependent(seed):
    # Original points, exact duplicates, midpoints of pairs (dependent in
    # every coordinate) and copies with the same unary part but other
    # unpenalised parts (dependent in the unary coordinates only).
    rng = np.random.RandomState(100 + seed)
    nu, n_rest, t = 3, 2, 6
    base = np.hstack([rng.randint(-2, 3, size=(t, nu)), rng.randn(t, n_rest)]).astype(float)
    mids = np.array([(base[i] + base[j]) / 2 for i in range(t) for j in range(i + 1, t)])
    same_u = base.copy()
    same_u[:, nu:] = rng.randn(t, n_rest)
    P = np.vstack([base, base, mids, same_u])
    P = P[rng.permutation(len(P))]
    for eta_scale in [0.3, 1.0, 5.0]:
        eta = eta_scale * rng.randn(nu + n_rest)
        mu, V, w, _ = explicit_solve(eta, nu, P)
        check_solution(eta, nu, P, mu, V, w)
        # same optimum as over the distinct points
        U = np.unique(P, axis=0)
        ref = qp_reference(eta, nu, U)
        assert abs(objective(eta, mu, nu) - objective(eta, ref, nu)) < 1e-6


def test_explicit_vertices_identical_unaries_is_an_lp():
    # All unary parts equal: the quadratic term is constant, the problem is
    # the LP over the unpenalised parts; the solver must end at its optimum.
    rng = np.random.RandomState(3)
    nu, t = 4, 9
    P = np.hstack([np.tile(rng.randn(nu), (t, 1)), rng.randn(t, 3)])
    for _ in range(10):
        eta = rng.randn(nu + 3)
        mu, V, w, _ = explicit_solve(eta, nu, P)
        best = np.max(P @ eta)
        assert abs(eta @ mu - best) < 1e-10
        check_solution(eta, nu, P, mu, V, w)
        assert len(V) == 1


def test_explicit_vertices_no_unary_parts():
    rng = np.random.RandomState(4)
    P = rng.randn(7, 3)
    for _ in range(10):
        eta = rng.randn(3)
        mu, V, w, _ = explicit_solve(eta, 0, P)
        assert abs(eta @ mu - np.max(P @ eta)) < 1e-10
        assert len(V) == 1


def test_explicit_vertices_cutting_plane_dual_shape():
    # The cutting-plane dual: unary = plane coordinates, one unpenalised
    # offset, eta = e_last; many planes with rank-deficient coordinates.
    rng = np.random.RandomState(5)
    C = rng.randn(15, 2) @ rng.randn(2, 4)  # rank 2 in R^4
    c = rng.randn(15)
    P = np.hstack([C, c[:, None]])
    eta = np.zeros(5)
    eta[-1] = 1.0
    mu, V, w, _ = explicit_solve(eta, 4, P, max_iter=10000)
    check_solution(eta, 4, P, mu, V, w)
    ref = qp_reference(eta, 4, P)
    assert abs(objective(eta, mu, 4) - objective(eta, ref, 4)) < 1e-6


# ------------------------------------------- large supports (incremental factor)
def _chain_certificate(eta, L, K, mu):
    """Frank-Wolfe gap of ``mu`` over *all* K^L tag sequences (Viterbi on the
    gradient is the exact linear maximiser over the chain polytope)."""
    nu = L * K
    grad = np.array(eta, dtype=float)
    grad[:nu] -= mu[:nu]
    out = np.zeros(len(eta))
    chain_map(grad, np.array([L, K], dtype=float), out)
    return grad @ out - grad @ mu


def _check_chain_support(V, w, mu, L, K):
    nu = L * K
    assert np.all(w > 0) and abs(w.sum() - 1.0) < 1e-12
    for v in V:  # genuine vertices: the encoding of their decoded sequence
        U = v[:nu].reshape(L, K)
        assert np.all((U == 0) | (U == 1)) and np.all(U.sum(axis=1) == 1)
        assert_allclose(v, phi(list(U.argmax(axis=1)), K))
    assert_allclose(w @ V, mu, atol=1e-12)
    assert affinely_independent(V, nu)


def test_large_chain_matches_pairwise_conditional_gradient():
    # Many active vertices (the factor grows past its initial capacity and
    # loses arbitrary positions, including the first): optimal by the exact
    # certificate, and consistent with pairwise Frank-Wolfe.
    from structlearn.kernels.sparsemap import sparsemap_conditional_gradient
    K, L = 10, 20
    nu = L * K
    rng = np.random.RandomState(0)
    eta = 0.05 * rng.randn(nu + K * K + 2 * K)
    mu, V, w, n_iter = chain_solve(eta, L, K)
    assert n_iter < 1000 and len(V) > 60
    _check_chain_support(V, w, mu, L, K)
    scale = 1.0 + np.max(np.abs(eta))
    assert _chain_certificate(eta, L, K, mu) <= 1e-12 * scale
    params = np.array([L, K], dtype=float)
    mu_pw, _, _, _ = sparsemap_conditional_gradient(eta, nu, chain_map, params, 2, 3000, 1e-12)
    gap_pw = _chain_certificate(eta, L, K, mu_pw)
    assert gap_pw < 1e-2
    # f* - f(mu_pw) <= gap_pw, and by 1-strong concavity in the unary part
    # 1/2 ||u* - u_pw||^2 <= f* - f(mu_pw).
    f_as, f_pw = objective(eta, mu, nu), objective(eta, mu_pw, nu)
    assert f_pw - 1e-12 <= f_as <= f_pw + gap_pw
    assert np.linalg.norm(mu[:nu] - mu_pw[:nu]) <= np.sqrt(2.0 * gap_pw) + 1e-9


def test_near_uniform_chain_converges():
    # The regime of SparseMAP training from zero weights: tiny scores, a
    # support of hundreds of vertices.  Must reach the gap tolerance.
    K, L = 20, 30
    nu = L * K
    eta = 0.01 * np.random.RandomState(0).randn(nu + K * K + 2 * K)
    mu, V, w, n_iter = sparsemap_active_set(eta, nu, chain_map, np.array([L, K], dtype=float),
                                            20000, 1e-9)
    assert n_iter < 20000 and len(V) > 300
    _check_chain_support(V, w, mu, L, K)
    scale = 1.0 + np.max(np.abs(eta))
    assert _chain_certificate(eta, L, K, mu) <= 1e-9 * scale


def test_zero_scores_chain():
    # eta = 0: the minimum-norm point is the uniform unary marginal.
    K, L = 6, 5
    eta = np.zeros(L * K + K * K + 2 * K)
    mu, V, w, _ = chain_solve(eta, L, K)
    assert_allclose(mu[:L * K], 1.0 / K, atol=1e-10)
    _check_chain_support(V, w, mu, L, K)
