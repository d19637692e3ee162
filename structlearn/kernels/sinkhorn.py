"""KL projection of ``exp(theta - 1)`` onto the Birkhoff polytope (Sinkhorn).

:func:`sinkhorn` alternates log-domain Sinkhorn sweeps with Newton steps on
the smooth convex dual and is warm-started from the LP duals of the
assignment problem (:mod:`structlearn.kernels.assignment`); see its
docstring.  :func:`sinkhorn_batch` treats the rows of a 2-D array as
flattened independent problems.  Plain ``@njit(cache=True)`` functions;
input validation is the caller's job (see
:mod:`structlearn.kernels.projections`).
"""

import numpy as np
from numba import njit

from ._ridge import _ridge_solve
from .assignment import _assignment_with_duals

__all__ = ["sinkhorn", "sinkhorn_batch"]

_EPS = np.finfo(np.float64).eps


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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
