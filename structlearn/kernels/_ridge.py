"""Dense Cholesky solves for the Newton steps of the Birkhoff-polytope solvers.

Shared by :mod:`structlearn.kernels.birkhoff` (Euclidean projection) and
:mod:`structlearn.kernels.sinkhorn` (KL projection): both take Newton steps
on a dual whose (generalised) Hessian is singular, solved by
:func:`_ridge_solve`.  Hand-written so that the solvers need no LAPACK call.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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


@njit(cache=True, nogil=True)
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
