"""Numba kernels for projections onto structured polytopes.

Every public function is a plain ``@njit(cache=True)`` function working on
float64 (and int64) numpy arrays.  Input validation (shapes, finiteness,
dtype, contiguity, ``0 <= lower <= upper <= k``, sorted weights) is the
caller's job; the kernels only guarantee that they never index out of
bounds on inputs of valid shape.

Euclidean projections
    :func:`isotonic_decreasing`, :func:`project_simplex`,
    :func:`project_knapsack`, :func:`project_permutahedron`,
    :func:`project_birkhoff`.

KL (Bregman) projections of ``exp(theta - 1)``
    :func:`project_knapsack_kl`, :func:`sinkhorn`.

The two Birkhoff solvers alternate exact row/column dual sweeps with
Newton steps on the dual and are warm-started from the LP duals of the
assignment problem (:mod:`structlearn.kernels.assignment`); see their
docstrings.

Each has a ``*_batch`` counterpart that treats the rows of a 2-D array as
independent problems.  The batch versions use plain loops: the per-row
problems are tiny, so thread start-up would dominate, and ``parallel=True``
would tie callers (e.g. joblib workers) to numba's threading layer.

References
----------
.. [1] M. Blondel. "Structured prediction with projection oracles."
   NeurIPS 2019.
.. [2] M. Blondel, V. Seguy, A. Rolet. "Smooth and sparse optimal
   transport." AISTATS 2018.
.. [3] D. A. Lorenz, P. Manns, C. Meyer. "Quadratically regularized
   optimal transport." Applied Mathematics & Optimization 83, 2021
   (semismooth Newton on the dual of a quadratic transport problem).
"""

import numpy as np
from numba import njit

from ._math import logaddexp
from .assignment import _assignment_with_duals

__all__ = [
    "isotonic_decreasing",
    "isotonic_decreasing_batch",
    "project_simplex",
    "project_simplex_batch",
    "project_knapsack",
    "project_knapsack_batch",
    "project_knapsack_kl",
    "project_knapsack_kl_batch",
    "project_permutahedron",
    "project_permutahedron_batch",
    "project_birkhoff",
    "project_birkhoff_batch",
    "sinkhorn",
    "sinkhorn_batch",
]

_EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------
# Isotonic regression
# ---------------------------------------------------------------------------


@njit(cache=True)
def isotonic_decreasing(y):
    """Least-squares isotonic regression with a non-increasing constraint.

    Solves ``argmin_v ||v - y||^2`` subject to ``v[0] >= v[1] >= ... >=
    v[k-1]`` with the pool-adjacent-violators algorithm.

    Parameters
    ----------
    y : ndarray of shape (k,), float64
        Values to regress.

    Returns
    -------
    v : ndarray of shape (k,), float64
        The non-increasing fit.

    Notes
    -----
    Runs in O(k): every element is pushed once on a stack of blocks and
    each merge pops one block.
    """
    k = y.shape[0]
    out = np.empty(k)
    if k == 0:
        return out
    # Stack of pooled blocks: running sum, size and value (mean).
    sums = np.empty(k)
    counts = np.empty(k, dtype=np.int64)
    means = np.empty(k)
    top = -1
    for i in range(k):
        top += 1
        sums[top] = y[i]
        counts[top] = 1
        means[top] = y[i]
        # A block whose mean exceeds its left neighbour's violates the
        # non-increasing order; pooling them is optimal (PAV lemma).
        while top > 0 and means[top - 1] < means[top]:
            sums[top - 1] += sums[top]
            counts[top - 1] += counts[top]
            means[top - 1] = sums[top - 1] / counts[top - 1]
            top -= 1
    pos = 0
    for b in range(top + 1):
        for _ in range(counts[b]):
            out[pos] = means[b]
            pos += 1
    return out


@njit(cache=True)
def isotonic_decreasing_batch(Theta):
    """Row-wise :func:`isotonic_decreasing`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64

    Returns
    -------
    V : ndarray of shape (n, p), float64
        ``V[i] = isotonic_decreasing(Theta[i])``.
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        out[i, :] = isotonic_decreasing(Theta[i])
    return out


# ---------------------------------------------------------------------------
# Simplex
# ---------------------------------------------------------------------------


@njit(cache=True)
def _simplex_threshold(x):
    """Return ``tau`` with ``sum(max(x - tau, 0)) == 1``.

    Parameters
    ----------
    x : ndarray of shape (k,), float64, k >= 1

    Returns
    -------
    tau : float
    """
    k = x.shape[0]
    s = np.sort(x)
    # For every j, sum(max(x - t, 0)) >= sum of the j largest (x_i - t),
    # so t_j = (sum of j largest - 1) / j never exceeds the true threshold
    # and equals it for the true support size.  Hence tau = max_j t_j; the
    # max is more robust to rounding than searching for the support size.
    csum = 0.0
    tau = -np.inf
    for j in range(k):
        csum += s[k - 1 - j]
        t = (csum - 1.0) / (j + 1)
        if t > tau:
            tau = t
    return tau


@njit(cache=True)
def project_simplex(theta):
    """Euclidean projection onto the probability simplex.

    Solves ``argmin_u ||u - theta||^2`` s.t. ``u >= 0, sum(u) = 1``
    exactly by sorting (O(k log k)).

    Parameters
    ----------
    theta : ndarray of shape (k,), float64, k >= 1

    Returns
    -------
    u : ndarray of shape (k,), float64
    """
    k = theta.shape[0]
    out = np.empty(k)
    if k == 0:
        return out
    tau = _simplex_threshold(theta)
    for i in range(k):
        d = theta[i] - tau
        out[i] = d if d > 0.0 else 0.0
    return out


@njit(cache=True)
def project_simplex_batch(Theta):
    """Row-wise :func:`project_simplex`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64

    Returns
    -------
    U : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        out[i, :] = project_simplex(Theta[i])
    return out


# ---------------------------------------------------------------------------
# Knapsack polytope {u in [0, 1]^k : lower <= sum(u) <= upper}
# ---------------------------------------------------------------------------


@njit(cache=True)
def _capped_sum(theta, tau):
    """Return ``sum(clip(theta - tau, 0, 1))``."""
    s = 0.0
    for i in range(theta.shape[0]):
        d = theta[i] - tau
        if d >= 1.0:
            s += 1.0
        elif d > 0.0:
            s += d
    return s


@njit(cache=True)
def _project_capped_simplex(theta, m):
    """Euclidean projection onto ``{u in [0, 1]^k : sum(u) = m}``.

    The solution is ``clip(theta - tau, 0, 1)``; ``f(tau) = sum(clip(theta -
    tau, 0, 1))`` is continuous, non-increasing and piecewise linear with
    breakpoints ``theta_i - 1`` and ``theta_i``.  A binary search over the
    sorted breakpoints finds the segment containing the root, where ``f`` is
    affine, so ``tau`` is obtained exactly from one linear equation.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    m : float
        Target sum.

    Returns
    -------
    u : ndarray of shape (k,), float64
    """
    k = theta.shape[0]
    out = np.empty(k)
    if m <= 0.0:
        out[:] = 0.0
        return out
    if m >= k:
        out[:] = 1.0
        return out
    bp = np.empty(2 * k)
    for i in range(k):
        bp[i] = theta[i] - 1.0
        bp[k + i] = theta[i]
    bp.sort()
    # Largest j with f(bp[j]) >= m.  f(bp[-1]) = 0 < m, so j <= 2k - 2 and
    # the segment [bp[j], bp[j+1]] exists; if rounding makes f(bp[0]) < m
    # the first segment is used and tau is clipped into it below.
    lo_idx = 0
    hi_idx = 2 * k - 1
    while hi_idx - lo_idx > 1:
        mid = (lo_idx + hi_idx) // 2
        if _capped_sum(theta, bp[mid]) >= m:
            lo_idx = mid
        else:
            hi_idx = mid
    lo = bp[lo_idx]
    hi = bp[lo_idx + 1]
    # Classify with the very same float expressions used for the
    # breakpoints so that the classification matches the sorted order.
    n_one = 0
    n_mid = 0
    s_mid = 0.0
    for i in range(k):
        if theta[i] - 1.0 >= hi:
            n_one += 1
        elif theta[i] > lo:
            n_mid += 1
            s_mid += theta[i]
    if n_mid > 0:
        tau = (s_mid + n_one - m) / n_mid
        if tau < lo:
            tau = lo
        elif tau > hi:
            tau = hi
    else:
        # f is flat on the segment (only possible through rounding).
        tau = lo
    for i in range(k):
        d = theta[i] - tau
        if d >= 1.0:
            out[i] = 1.0
        elif d > 0.0:
            out[i] = d
        else:
            out[i] = 0.0
    return out


@njit(cache=True)
def project_knapsack(theta, lower, upper):
    """Euclidean projection onto the knapsack polytope.

    Solves ``argmin_u ||u - theta||^2`` over
    ``{u in [0, 1]^k : lower <= sum(u) <= upper}`` exactly
    ([1]_, Prop. 3): clip to the cube; if the sum violates a bound, project
    onto the capped simplex whose sum equals that bound.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    lower, upper : float
        Bounds on the sum, ``0 <= lower <= upper <= k``.

    Returns
    -------
    u : ndarray of shape (k,), float64
    """
    k = theta.shape[0]
    out = np.empty(k)
    s = 0.0
    for i in range(k):
        v = theta[i]
        if v < 0.0:
            v = 0.0
        elif v > 1.0:
            v = 1.0
        out[i] = v
        s += v
    if s > upper:
        return _project_capped_simplex(theta, upper)
    if s < lower:
        return _project_capped_simplex(theta, lower)
    return out


@njit(cache=True)
def project_knapsack_batch(Theta, lower, upper):
    """Row-wise :func:`project_knapsack`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64
    lower, upper : float

    Returns
    -------
    U : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        out[i, :] = project_knapsack(Theta[i], lower, upper)
    return out


@njit(cache=True)
def _kl_capped_simplex(theta, m):
    """KL projection of ``exp(theta - 1)`` onto ``{u in [0,1]^k, sum u = m}``.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    m : float
        Target sum.

    Returns
    -------
    u : ndarray of shape (k,), float64
        ``min(1, exp(theta - 1 - tau))`` with ``sum(u) = m``.
    """
    k = theta.shape[0]
    out = np.empty(k)
    if m <= 0.0:
        # The KL objective has no minimiser with positive entries; the
        # infimum over the feasible set {0} is attained at zero.
        out[:] = 0.0
        return out
    if m >= k:
        out[:] = 1.0
        return out
    order = np.argsort(-theta, kind="mergesort")
    # Suffix log-sum-exp of theta - 1 in decreasing order, computed
    # pairwise so that scores of any magnitude neither overflow nor
    # underflow.
    lse = np.empty(k + 1)
    lse[k] = -np.inf
    for c in range(k - 1, -1, -1):
        lse[c] = logaddexp(theta[order[c]] - 1.0, lse[c + 1])
    # With the c largest coordinates capped at 1, sum(u) = m gives
    # tau_c = lse[c] - log(m - c).  Since min(1, x) <= 1 and min(1, x) <= x,
    # the true sum g(tau) is below c + exp(-tau) * sum_{i >= c} exp(theta_i
    # - 1) for every c, so every tau_c >= tau*, with equality for the true
    # number of capped coordinates (which is < m).  Hence tau* = min tau_c.
    tau = np.inf
    c = 0
    while c < k and c < m:
        t = lse[c] - np.log(m - c)
        if t < tau:
            tau = t
        c += 1
    for i in range(k):
        d = theta[i] - 1.0 - tau
        out[i] = 1.0 if d >= 0.0 else np.exp(d)
    return out


@njit(cache=True)
def project_knapsack_kl(theta, lower, upper):
    """KL projection of ``exp(theta - 1)`` onto the knapsack polytope.

    Solves ``argmin_u KL(u, exp(theta - 1))`` over
    ``{u in [0, 1]^k : lower <= sum(u) <= upper}`` with the generalised KL
    divergence ``KL(u, v) = sum(u log(u / v) - u + v)``.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    lower, upper : float
        Bounds on the sum, ``0 <= lower <= upper <= k``.

    Returns
    -------
    u : ndarray of shape (k,), float64
        ``min(1, exp(theta - 1 - tau))`` for the optimal ``tau``
        (``tau = 0`` when the sum constraint is inactive); all zeros when
        the active bound is 0.
    """
    k = theta.shape[0]
    out = np.empty(k)
    s = 0.0
    for i in range(k):
        d = theta[i] - 1.0
        v = 1.0 if d >= 0.0 else np.exp(d)
        out[i] = v
        s += v
    if s > upper:
        return _kl_capped_simplex(theta, upper)
    if s < lower:
        return _kl_capped_simplex(theta, lower)
    return out


@njit(cache=True)
def project_knapsack_kl_batch(Theta, lower, upper):
    """Row-wise :func:`project_knapsack_kl`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64
    lower, upper : float

    Returns
    -------
    U : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        out[i, :] = project_knapsack_kl(Theta[i], lower, upper)
    return out


# ---------------------------------------------------------------------------
# Permutahedron
# ---------------------------------------------------------------------------


@njit(cache=True)
def _permutahedron_sorted_w(theta, w_sorted):
    """Projection onto the permutahedron; ``w_sorted`` non-increasing."""
    k = theta.shape[0]
    out = np.empty(k)
    if k == 0:
        return out
    # mergesort: ties are resolved by position, so the output is
    # deterministic (the projection itself does not depend on tie order).
    perm = np.argsort(-theta, kind="mergesort")
    z = np.empty(k)
    for r in range(k):
        z[r] = theta[perm[r]] - w_sorted[r]
    v = isotonic_decreasing(z)
    for r in range(k):
        out[perm[r]] = theta[perm[r]] - v[r]
    return out


@njit(cache=True)
def project_permutahedron(theta, w):
    """Euclidean projection onto the permutahedron induced by ``w``.

    The permutahedron is the convex hull of all permutations of ``w``.  The
    projection is computed by sorting and one isotonic regression [1]_.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    w : ndarray of shape (k,), float64
        Weights, expected in non-increasing order.  They are re-sorted
        internally anyway (the polytope does not depend on their order), so
        unsorted weights give the same, correct, result.

    Returns
    -------
    mu : ndarray of shape (k,), float64
    """
    w_sorted = -np.sort(-w)
    return _permutahedron_sorted_w(theta, w_sorted)


@njit(cache=True)
def project_permutahedron_batch(Theta, w):
    """Row-wise :func:`project_permutahedron` with shared weights.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64
    w : ndarray of shape (p,), float64

    Returns
    -------
    Mu : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    w_sorted = -np.sort(-w)
    for i in range(n):
        out[i, :] = _permutahedron_sorted_w(Theta[i], w_sorted)
    return out


# ---------------------------------------------------------------------------
# Birkhoff polytope (doubly stochastic matrices)
# ---------------------------------------------------------------------------


@njit(cache=True)
def _birkhoff_primal(X, a, b, P):
    """Fill ``P = max(X - a_i - b_j, 0)``; return the max marginal error."""
    k = X.shape[0]
    err = 0.0
    for i in range(k):
        r = 0.0
        for j in range(k):
            d = X[i, j] - a[i] - b[j]
            if d < 0.0:
                d = 0.0
            P[i, j] = d
            r += d
        if abs(r - 1.0) > err:
            err = abs(r - 1.0)
    for j in range(k):
        c = 0.0
        for i in range(k):
            c += P[i, j]
        if abs(c - 1.0) > err:
            err = abs(c - 1.0)
    return err


@njit(cache=True)
def _birkhoff_dual_objective(X, a, b):
    """Dual objective ``1/2 ||max(X - a_i - b_j, 0)||^2 + sum(a) + sum(b)``.

    Convex and piecewise quadratic in ``(a, b)``; its minimiser gives the
    projection ``P = max(X - a_i - b_j, 0)`` (its gradient is ``1 - row
    sums`` and ``1 - column sums`` of that ``P``).
    """
    k = X.shape[0]
    f = 0.0
    for i in range(k):
        f += a[i] + b[i]
        for j in range(k):
            d = X[i, j] - a[i] - b[j]
            if d > 0.0:
                f += 0.5 * d * d
    return f


@njit(cache=True)
def _cholesky_factor(A, L):
    """Cholesky factor ``A = L L^T`` of a symmetric matrix, into ``L``.

    Returns False if a pivot is not positive.  Hand-written so that the
    Birkhoff solver needs no LAPACK call (whose first use has a noticeable
    load time and whose failures would surface as exceptions).
    """
    n = A.shape[0]
    L[:, :] = 0.0
    for j in range(n):
        s = A[j, j]
        for p in range(j):
            s -= L[j, p] * L[j, p]
        if not s > 0.0:
            return False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = A[i, j]
            for p in range(j):
                s -= L[i, p] * L[j, p]
            L[i, j] = s / L[j, j]
    return True


@njit(cache=True)
def _cholesky_solve(L, rhs):
    """Solve ``L L^T x = rhs`` in place (``rhs`` <- x)."""
    n = L.shape[0]
    for i in range(n):
        s = rhs[i]
        for p in range(i):
            s -= L[i, p] * rhs[p]
        rhs[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = rhs[i]
        for p in range(i + 1, n):
            s -= L[p, i] * rhs[p]
        rhs[i] = s / L[i, i]


@njit(cache=True)
def _ridge_solve(H, d, L, g, res):
    """Solve the singular PSD system ``H x = d`` in place (``d`` <- x).

    The generalised Hessians of the Birkhoff duals always have ``(1, -1)``
    in their null space, and one more (near-)null direction per (nearly)
    disconnected block of the support.  ``H + lam I`` is factorised with
    the smallest ridge ``lam`` (relative to the largest diagonal entry)
    for which the Cholesky factorisation succeeds, so that near-null
    directions still get full Newton steps (the line searches guard
    against overly long ones); two rounds of iterative refinement against
    ``H`` itself then remove the O(lam) bias of the ridge.  ``L``, ``g``
    and ``res`` are work arrays shaped like ``H``, ``d`` and ``d``.
    Returns False if no factorisation succeeds.
    """
    n = H.shape[0]
    scale = 0.0
    for t in range(n):
        g[t] = d[t]
        if H[t, t] > scale:
            scale = H[t, t]
    if not scale > 0.0:
        return False
    lam = 1e-13 * n * scale
    ok = False
    for _ in range(8):
        for t in range(n):
            H[t, t] += lam
        ok = _cholesky_factor(H, L)
        for t in range(n):
            H[t, t] -= lam
        if ok:
            break
        lam *= 100.0
    if not ok:
        return False
    _cholesky_solve(L, d)
    for _ in range(2):
        for s in range(n):
            r = g[s]
            for t in range(n):
                r -= H[s, t] * d[t]
            res[s] = r
        _cholesky_solve(L, res)
        for s in range(n):
            d[s] += res[s]
    return True


@njit(cache=True)
def _birkhoff_line_search(X, a, b, da, db):
    """Exact minimisation of the dual objective along ``(a, b) + t (da, db)``.

    Along the ray, entry ``(i, j)`` is ``z_ij - t e_ij`` with
    ``z = X - a_i - b_j`` and ``e = da_i + db_j``, so the derivative
    ``phi'(t) = sum(da) + sum(db) - sum_active e_ij (z_ij - t e_ij)`` is
    piecewise linear and non-decreasing, with kinks where entries enter or
    leave the support.  Sweeping the sorted kinks finds its root exactly.
    An exact step matters: directions along which a block of the support
    is disconnected from the rest can be arbitrarily long.

    Returns
    -------
    t : float
        Step length, ``>= 0``.
    """
    k = X.shape[0]
    sd = 0.0
    for i in range(k):
        sd += da[i] + db[i]
    # phi'(t) = sd - B + t A on the current segment.
    A = 0.0
    B = 0.0
    ev_t = np.empty(k * k)
    ev_e = np.empty(k * k)
    ev_z = np.empty(k * k)
    ev_on = np.empty(k * k, dtype=np.bool_)
    ne = 0
    for i in range(k):
        for j in range(k):
            z = X[i, j] - a[i] - b[j]
            e = da[i] + db[j]
            if z > 0.0 or (z == 0.0 and e < 0.0):
                A += e * e
                B += e * z
                if e > 0.0:
                    # Active entry shrinking: leaves the support at z / e.
                    ev_t[ne] = z / e
                    ev_e[ne] = e
                    ev_z[ne] = z
                    ev_on[ne] = False
                    ne += 1
            elif e < 0.0:
                # Inactive entry growing: enters the support at z / e.
                ev_t[ne] = z / e
                ev_e[ne] = e
                ev_z[ne] = z
                ev_on[ne] = True
                ne += 1
    order = np.argsort(ev_t[:ne])
    t_prev = 0.0
    for q in range(ne):
        r = order[q]
        t_ev = ev_t[r]
        if A > 0.0:
            root = (B - sd) / A
            if root <= t_ev:
                return max(root, t_prev)
        elif sd - B >= 0.0:
            return t_prev
        if ev_on[r]:
            A += ev_e[r] * ev_e[r]
            B += ev_e[r] * ev_z[r]
        else:
            A -= ev_e[r] * ev_e[r]
            B -= ev_e[r] * ev_z[r]
        t_prev = t_ev
    if A > 0.0:
        return max((B - sd) / A, t_prev)
    return t_prev


@njit(cache=True)
def _birkhoff_solve(X, max_iter, tol, P):
    """Core of :func:`project_birkhoff`; returns the number of iterations.

    ``P`` (k x k) receives the solution.  A return value of ``max_iter + 1``
    means the loop ended without meeting the tolerance.
    """
    k = X.shape[0]
    scale = 1.0
    for i in range(k):
        for j in range(k):
            if abs(X[i, j]) > scale:
                scale = abs(X[i, j])
    tol_eff = max(tol, 8.0 * k * _EPS * scale)
    # Warm start.  As theta is scaled up, the projection tends to the
    # maximum-score permutation and the duals to LP duals of the assignment
    # problem, which are |theta| away from zero.  Assignment duals satisfy
    # a_i + b_j >= theta_ij with equality on the matching; shifting a by
    # -1 puts exactly 1 on the matched entries, which is the exact answer
    # whenever all other reduced costs are >= 1.
    a = np.empty(k)
    b = np.empty(k)
    perm = np.empty(k, dtype=np.int64)
    _assignment_with_duals(X, perm, a, b)
    for i in range(k):
        a[i] -= 1.0
    err = _birkhoff_primal(X, a, b, P)
    if err < tol_eff:
        return 0
    row = np.empty(k)
    H = np.empty((2 * k, 2 * k))
    L = np.empty((2 * k, 2 * k))
    d = np.empty(2 * k)
    g = np.empty(2 * k)
    res = np.empty(2 * k)
    da = np.empty(k)
    db = np.empty(k)
    a_new = np.empty(k)
    b_new = np.empty(k)
    for it in range(max_iter):
        # (1) Exact block-coordinate descent sweep (= one Dykstra cycle).
        for i in range(k):
            for j in range(k):
                row[j] = X[i, j] - b[j]
            a[i] = _simplex_threshold(row)
        for j in range(k):
            for i in range(k):
                row[i] = X[i, j] - a[i]
            b[j] = _simplex_threshold(row)
        err = _birkhoff_primal(X, a, b, P)
        if err < tol_eff:
            return it + 1
        # (2) Semismooth Newton step: H (da, db) = (row sums - 1, column
        # sums - 1), H = [[diag(r), S], [S^T, diag(c)]] with S the support
        # indicator and r, c its row/column counts.
        H[:, :] = 0.0
        for i in range(k):
            rs = 0.0
            for j in range(k):
                if P[i, j] > 0.0:
                    H[i, i] += 1.0
                    H[k + j, k + j] += 1.0
                    H[i, k + j] = 1.0
                    H[k + j, i] = 1.0
                rs += P[i, j]
            d[i] = rs - 1.0
        for j in range(k):
            cs = 0.0
            for i in range(k):
                cs += P[i, j]
            d[k + j] = cs - 1.0
        if not _ridge_solve(H, d, L, g, res):
            continue
        for i in range(k):
            da[i] = d[i]
            db[i] = d[k + i]
            a_new[i] = a[i] + da[i]
            b_new[i] = b[i] + db[i]
        # The full step is exact when the support is already right; trying
        # it first avoids the rounding of the line search's running sums.
        err_new = _birkhoff_primal(X, a_new, b_new, P)
        if err_new < tol_eff:
            return it + 1
        step = _birkhoff_line_search(X, a, b, da, db)
        for i in range(k):
            a_new[i] = a[i] + step * da[i]
            b_new[i] = b[i] + step * db[i]
        # Guard against rounding in the line search: only accept descent.
        if _birkhoff_dual_objective(X, a_new, b_new) <= _birkhoff_dual_objective(
            X, a, b
        ):
            a[:] = a_new
            b[:] = b_new
            err = _birkhoff_primal(X, a, b, P)
            if err < tol_eff:
                return it + 1
    _birkhoff_primal(X, a, b, P)
    return max_iter + 1


@njit(cache=True)
def project_birkhoff(theta, max_iter=10000, tol=1e-10):
    """Euclidean projection onto the Birkhoff polytope.

    Solves ``argmin_P ||P - theta||_F^2`` over doubly stochastic matrices.

    Parameters
    ----------
    theta : ndarray of shape (k, k), float64
    max_iter : int, default=10000
        Maximum number of iterations (one dual sweep plus one Newton step
        each; a handful is typical).
    tol : float, default=1e-10
        Stop when the largest row/column-sum violation is below ``tol``.
        The tolerance is floored at ``8 k eps max(1, max|theta|)``, the
        accuracy attainable in float64 at the scale of ``theta``.

    Returns
    -------
    P : ndarray of shape (k, k), float64
        Non-negative, with row and column sums equal to 1 within ``tol``.

    Notes
    -----
    The solution is ``P = max(theta - a_i - b_j, 0)`` where the duals
    ``(a, b)`` minimise the convex, piecewise-quadratic, C^1 function
    ``F(a, b) = 1/2 ||max(theta - a_i - b_j, 0)||^2 + sum(a) + sum(b)``
    (the dual of the projection problem, i.e. of quadratically
    regularised optimal transport with uniform marginals [2]_, [3]_).  Any
    such ``P`` is non-negative and satisfies complementary slackness, so
    only the marginals need to be driven to 1, which is the stopping test.
    Each iteration performs

    * one exact block-coordinate sweep: for fixed ``b`` the optimal
      ``a_i`` is the threshold of the simplex projection of row
      ``theta_i - b``, likewise for columns (the Euclidean counterpart of
      Sinkhorn's row/column scaling).  Alone, like Dykstra's alternating
      projections between {rows in simplex} and {columns in simplex}, it
      converges only linearly, and very slowly for large ``k`` or
      spread-out scores (thousands of sweeps for 1e-10 at k = 50);
    * one semismooth Newton step on ``F`` (generalised Hessian from the
      current support, tiny ridge for its null space) with an exact line
      search.  ``F`` is quadratic on each support pattern, so once the
      support is right the step lands on the optimum.

    The start is a shifted LP dual of the assignment problem, the limit of
    the duals as ``theta`` is scaled up; it makes large scores (1e6) as
    easy as moderate ones.  Both steps decrease ``F`` (the Newton step is
    rejected otherwise), so the iteration keeps the convergence guarantee
    of the block-coordinate method.
    """
    k = theta.shape[0]
    P = np.zeros((k, k))
    if k == 0:
        return P
    X = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            X[i, j] = theta[i, j]
    _birkhoff_solve(X, max_iter, tol, P)
    return P


@njit(cache=True)
def project_birkhoff_batch(Theta, k, max_iter=10000, tol=1e-10):
    """Row-wise :func:`project_birkhoff` on flattened matrices.

    Parameters
    ----------
    Theta : ndarray of shape (n, k * k), float64
        Each row is a row-major flattened ``k x k`` score matrix.
    k : int
    max_iter : int, default=10000
    tol : float, default=1e-10

    Returns
    -------
    P : ndarray of shape (n, k * k), float64
        Row-major flattened doubly stochastic projections.
    """
    n = Theta.shape[0]
    out = np.empty((n, k * k))
    # Copy into a C-contiguous buffer rather than reshaping, so that any
    # memory layout of Theta compiles and works.
    buf = np.empty((k, k))
    for t in range(n):
        for i in range(k):
            for j in range(k):
                buf[i, j] = Theta[t, i * k + j]
        P = project_birkhoff(buf, max_iter, tol)
        for i in range(k):
            for j in range(k):
                out[t, i * k + j] = P[i, j]
    return out


@njit(cache=True)
def _sinkhorn_primal(X, f, g, P):
    """Fill ``P = exp(X - 1 + f_i + g_j)``; return the max marginal error."""
    k = X.shape[0]
    err = 0.0
    for i in range(k):
        r = 0.0
        for j in range(k):
            v = np.exp(X[i, j] - 1.0 + f[i] + g[j])
            P[i, j] = v
            r += v
        if abs(r - 1.0) > err:
            err = abs(r - 1.0)
    for j in range(k):
        c = 0.0
        for i in range(k):
            c += P[i, j]
        if abs(c - 1.0) > err:
            err = abs(c - 1.0)
    return err


@njit(cache=True)
def _sinkhorn_dual_change(P, d, step, sd):
    """Change of the Sinkhorn dual along a step of length ``step``.

    With ``P = exp(X - 1 + f_i + g_j)`` at the current point, moving
    ``(f, g)`` by ``step * d`` changes ``G`` by
    ``sum_ij P_ij expm1(step (d_i + d_{k+j})) - step * sd``.  Evaluating the
    difference directly, rather than ``G`` itself, keeps it accurate when
    ``f`` and ``g`` are large; overflow gives ``inf``, i.e. a rejection.
    """
    k = P.shape[0]
    delta = -step * sd
    for i in range(k):
        for j in range(k):
            delta += P[i, j] * np.expm1(step * (d[i] + d[k + j]))
    return delta


@njit(cache=True)
def _sinkhorn_solve(X, max_iter, tol, P):
    """Core of :func:`sinkhorn`; returns the number of iterations.

    ``P`` (k x k) receives the solution.  A return value of ``max_iter + 1``
    means the loop ended without meeting the tolerance.
    """
    k = X.shape[0]
    scale = 1.0
    for i in range(k):
        for j in range(k):
            if abs(X[i, j]) > scale:
                scale = abs(X[i, j])
    # Entries are exp of sums of O(scale) terms, so their relative
    # accuracy, and hence that of the marginals, is about eps * scale.
    tol_eff = max(tol, 8.0 * k * _EPS * scale)
    # Warm start from LP duals of the assignment problem (a_i + b_j >=
    # theta_ij, tight on the matching): log P = theta - a_i - b_j then has
    # zeros on the matching and minus the reduced costs elsewhere, which is
    # the right picture, and the right dual scale, for spread-out scores.
    f = np.empty(k)
    g = np.empty(k)
    perm = np.empty(k, dtype=np.int64)
    _assignment_with_duals(X, perm, f, g)
    for i in range(k):
        f[i] = 0.5 - f[i]
        g[i] = 0.5 - g[i]
    H = np.empty((2 * k, 2 * k))
    L = np.empty((2 * k, 2 * k))
    d = np.empty(2 * k)
    gw = np.empty(2 * k)
    res = np.empty(2 * k)
    for it in range(max_iter):
        # (1) Sinkhorn sweep in the log domain (stabilised log-sum-exp):
        # f_i = -logsumexp_j(X_ij - 1 + g_j), then the same for columns.
        for i in range(k):
            mx = -np.inf
            for j in range(k):
                v = X[i, j] - 1.0 + g[j]
                if v > mx:
                    mx = v
            s = 0.0
            for j in range(k):
                s += np.exp(X[i, j] - 1.0 + g[j] - mx)
            f[i] = -(mx + np.log(s))
        for j in range(k):
            mx = -np.inf
            for i in range(k):
                v = X[i, j] - 1.0 + f[i]
                if v > mx:
                    mx = v
            s = 0.0
            for i in range(k):
                s += np.exp(X[i, j] - 1.0 + f[i] - mx)
            g[j] = -(mx + np.log(s))
        err = _sinkhorn_primal(X, f, g, P)
        if err < tol_eff:
            return it + 1
        # (2) Newton step on the convex dual
        # G(f, g) = sum_ij exp(X_ij - 1 + f_i + g_j) - sum(f) - sum(g),
        # whose gradient is (row sums - 1, column sums - 1) and Hessian
        # [[diag(row sums), P], [P^T, diag(column sums)]].
        H[:, :] = 0.0
        for i in range(k):
            rs = 0.0
            for j in range(k):
                H[i, k + j] = P[i, j]
                H[k + j, i] = P[i, j]
                rs += P[i, j]
            H[i, i] = rs
            d[i] = 1.0 - rs
        for j in range(k):
            cs = 0.0
            for i in range(k):
                cs += P[i, j]
            H[k + j, k + j] = cs
            d[k + j] = 1.0 - cs
        if not _ridge_solve(H, d, L, gw, res):
            continue
        # Directional derivative of G along the step (negative for a
        # descent direction; rounding may spoil that on flat problems).
        slope = 0.0
        sd = 0.0
        for i in range(k):
            for j in range(k):
                slope += P[i, j] * (d[i] + d[k + j])
        for t in range(2 * k):
            sd += d[t]
        slope -= sd
        if not slope < 0.0:
            continue
        # Backtracking (Armijo) line search on the exact change of G.
        step = 1.0
        accepted = False
        for _ in range(60):
            delta = _sinkhorn_dual_change(P, d, step, sd)
            if delta <= 1e-4 * step * slope:
                accepted = True
                break
            step *= 0.5
        if accepted and step == 1.0:
            # Far from the optimum an entry that must shrink by a factor
            # exp(-s) only loses about one unit of log-scale per Newton
            # step (the quadratic model of exp overshoots), which makes
            # Newton linear with rate 1/e.  Keep doubling the step while
            # the dual keeps decreasing to cover such distances at once.
            for _ in range(60):
                delta_next = _sinkhorn_dual_change(P, d, 2.0 * step, sd)
                # Sufficient decrease (Armijo) at the longer step, so that
                # rounding noise near the optimum cannot drive the doubling.
                if not (delta_next < delta and delta_next <= 2e-4 * step * slope):
                    break
                delta = delta_next
                step *= 2.0
        if accepted:
            for i in range(k):
                f[i] += step * d[i]
                g[i] += step * d[k + i]
            err = _sinkhorn_primal(X, f, g, P)
            if err < tol_eff:
                return it + 1
    _sinkhorn_primal(X, f, g, P)
    return max_iter + 1


@njit(cache=True)
def sinkhorn(theta, max_iter=10000, tol=1e-10):
    """KL projection of ``exp(theta - 1)`` onto the Birkhoff polytope.

    Computes the Sinkhorn-Knopp scaling
    ``P = diag(exp(f)) exp(theta - 1) diag(exp(g))`` that is doubly
    stochastic, i.e. ``argmin_P KL(P, exp(theta - 1))`` over the Birkhoff
    polytope, working on the potentials ``f, g`` in the log domain so that
    scores of any magnitude neither overflow nor underflow.

    Parameters
    ----------
    theta : ndarray of shape (k, k), float64
    max_iter : int, default=10000
        Maximum number of iterations (one scaling sweep plus one Newton
        step each).
    tol : float, default=1e-10
        Stop when the largest row/column-sum violation is below ``tol``.
        The tolerance is floored at ``8 k eps max(1, max|theta|)``.

    Returns
    -------
    P : ndarray of shape (k, k), float64
        ``P[i, j] = exp(theta[i, j] - 1 + f[i] + g[j])``, doubly stochastic
        within ``tol`` (or to the accuracy reached after ``max_iter``).

    Notes
    -----
    Plain Sinkhorn iterations converge linearly with a rate that degrades
    quickly as the scores spread out (at scale 10 and k = 10 thousands of
    sweeps are not enough for 1e-10).  Each scaling sweep is therefore
    followed by a Newton step on the smooth convex dual
    ``G(f, g) = sum exp(theta - 1 + f_i + g_j) - sum(f) - sum(g)``
    with a backtracking line search; since both steps decrease ``G`` the
    global convergence of Sinkhorn is kept, and the Newton steps give
    quadratic local convergence.
    """
    k = theta.shape[0]
    P = np.zeros((k, k))
    if k == 0:
        return P
    X = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            X[i, j] = theta[i, j]
    _sinkhorn_solve(X, max_iter, tol, P)
    return P


@njit(cache=True)
def sinkhorn_batch(Theta, k, max_iter=10000, tol=1e-10):
    """Row-wise :func:`sinkhorn` on flattened matrices.

    Parameters
    ----------
    Theta : ndarray of shape (n, k * k), float64
        Each row is a row-major flattened ``k x k`` score matrix.
    k : int
    max_iter : int, default=10000
    tol : float, default=1e-10

    Returns
    -------
    P : ndarray of shape (n, k * k), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, k * k))
    buf = np.empty((k, k))
    for t in range(n):
        for i in range(k):
            for j in range(k):
                buf[i, j] = Theta[t, i * k + j]
        P = sinkhorn(buf, max_iter, tol)
        for i in range(k):
            for j in range(k):
                out[t, i * k + j] = P[i, j]
    return out
