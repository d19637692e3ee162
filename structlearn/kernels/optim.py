"""Numba kernels of the first-order solvers (:mod:`structlearn.solvers`).

L-BFGS: the two-loop recursion over single-precision correction pairs, the
storage of a pair, the penalised gradient; SGD: the sparse step with its
lazy iterate average.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def lbfgs_two_loop(g, S, Y, rho, order, gamma):
    """:func:`structlearn.solvers._lbfgs._two_loop` in one pass over ``q`` per correction pair: the
    update with pair ``j`` is fused with the dot product of the next pair
    (no temporaries, the single-precision pairs read once per loop)."""
    n = len(g)
    m = len(order)
    q = np.empty(n)
    a = np.zeros(m)
    # first loop (newest pair first): a_j = rho_j <s_j, q>; q -= a_j y_j
    if m == 0:
        for i in range(n):
            q[i] = -gamma * g[i]
        return q
    r = order[m - 1]
    acc = 0.0
    for i in range(n):
        q[i] = -g[i]
        acc += S[r, i] * q[i]
    a[m - 1] = rho[r] * acc
    for j in range(m - 1, -1, -1):
        r = order[j]
        aj = a[j]
        if j > 0:
            rn = order[j - 1]
            acc = 0.0
            for i in range(n):
                qi = q[i] - aj * Y[r, i]
                q[i] = qi
                acc += S[rn, i] * qi
            a[j - 1] = rho[rn] * acc
        else:
            # last update of the first loop, fused with the scaling by gamma
            # and the first dot product of the second loop
            r0 = order[0]
            acc = 0.0
            for i in range(n):
                qi = gamma * (q[i] - aj * Y[r, i])
                q[i] = qi
                acc += Y[r0, i] * qi
    # second loop (oldest pair first): b = rho_j <y_j, q>; q += (a_j - b) s_j
    b = rho[order[0]] * acc
    for j in range(m):
        r = order[j]
        c = a[j] - b
        if j + 1 < m:
            rn = order[j + 1]
            acc = 0.0
            for i in range(n):
                qi = q[i] + c * S[r, i]
                q[i] = qi
                acc += Y[rn, i] * qi
            b = rho[rn] * acc
        else:
            for i in range(n):
                q[i] += c * S[r, i]
    return q


@njit(cache=True, nogil=True)
def store_correction_pair(s, y_new, y_old, S_row, Y_row):
    """Store the correction pair ``(s, y_new - y_old)`` rounded to single
    precision in ``S_row, Y_row``; returns ``(s^T y, y^T y)`` of the stored
    (rounded) pair, one pass, no temporaries."""
    sy = 0.0
    yy = 0.0
    for i in range(len(s)):
        si = np.float32(s[i])
        yi = np.float32(y_new[i] - y_old[i])
        S_row[i] = si
        Y_row[i] = yi
        yd = np.float64(yi)
        sy += yd * np.float64(si)
        yy += yd * yd
    return sy, yy


@njit(cache=True, nogil=True)
def penalized_grad(g, z, pen, scale, alpha):
    """``(scale * g + alpha * z_P, ||z_P||^2)`` in one pass (a new array)."""
    out = np.empty(len(g))
    sq = 0.0
    for i in range(len(g)):
        gi = scale * g[i]
        if pen[i]:
            zi = z[i]
            gi += alpha * zi
            sq += zi * zi
        out[i] = gi
    return out, sq


@njit(cache=True, nogil=True)
def sgd_sparse_step(v, a, pen, cols, vals, coef_pen, coef_free, s_prev, n_prev):
    """``v[c] -= coef * g`` over the entries ``(cols, vals)`` of a gradient
    (duplicates allowed) and ``a[c] -= prefix * coef * g`` for the lazy
    average (``solvers._sgd._ScaledIterate``); ``coef`` and ``prefix`` differ between
    penalised and free coordinates.  Returns whether any entry was non-zero."""
    any_nz = False
    for e in range(len(cols)):
        gv = vals[e]
        if gv != 0.0:
            any_nz = True
            c = cols[e]
            if pen[c]:
                d = -coef_pen * gv
                a[c] += s_prev * d
            else:
                d = -coef_free * gv
                a[c] += n_prev * d
            v[c] += d
    return any_nz
