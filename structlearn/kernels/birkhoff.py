"""Euclidean projection onto the Birkhoff polytope (doubly stochastic matrices).

:func:`project_birkhoff` alternates exact row/column dual sweeps with
semismooth Newton steps on the dual and is warm-started from the LP duals of
the assignment problem (:mod:`structlearn.kernels.assignment`); see its
docstring.  :func:`project_birkhoff_batch` treats the rows of a 2-D array as
flattened independent problems.  Plain ``@njit(cache=True)`` functions;
input validation is the caller's job (see
:mod:`structlearn.kernels.projections`).

References
----------
.. [2] M. Blondel, V. Seguy, A. Rolet. "Smooth and sparse optimal
   transport." AISTATS 2018.
.. [3] D. A. Lorenz, P. Manns, C. Meyer. "Quadratically regularized
   optimal transport." Applied Mathematics & Optimization 83, 2021
   (semismooth Newton on the dual of a quadratic transport problem).
"""

import numpy as np
from numba import njit

from ._ridge import _ridge_solve
from .assignment import _assignment_with_duals
from .simplex import _simplex_threshold

__all__ = ["project_birkhoff", "project_birkhoff_batch"]

_EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------
# Birkhoff polytope (doubly stochastic matrices)
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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
            for i in range(k):   # (a loop: a slice copy compiles Numba's
                a[i] = a_new[i]  # string-formatting shape errors, ~3 s cold)
                b[i] = b_new[i]
            err = _birkhoff_primal(X, a, b, P)
            if err < tol_eff:
                return it + 1
    _birkhoff_primal(X, a, b, P)
    return max_iter + 1


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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
