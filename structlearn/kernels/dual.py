"""Block steps of the block-coordinate Frank-Wolfe dual solver.

:func:`structlearn.solvers.bcfw` keeps, for every training example ``i``, a
working set of vertices of its block of the dual of ``min_z lam/2 ||z||^2 +
1/n sum_i loss_i(A_i z)``.  A vertex's slope lies in the span of the
example's own features, ``A_i^T a_v`` with ``a_v`` in part space, so it is
given here as the *entries* ``(cols, vals)`` of ``A_i^T a_v`` (duplicates
allowed), and a step touches only those coordinates of ``z``.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def outer_entries(indptr, indices, data, Dt, n_cols, D, bias_off):
    """Entries of ``A_i^T d_i`` for fixed-size linear rows
    ``theta_i = W x_i + b`` (``W`` row-major ``(q, n_cols)``; ``Dt`` the
    weight-row gradients ``(n, q)``, ``D`` the part gradients ``(n, p)`` for
    the intercept at ``bias_off``, or an empty array without intercept).

    Returns ``(cols, vals, ptr)``, the entries of row ``i`` at
    ``ptr[i]:ptr[i+1]``."""
    n, q = Dt.shape
    p = D.shape[1] if D.shape[0] == n else 0
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + q * (indptr[i + 1] - indptr[i]) + p
    cols = np.empty(ptr[n], dtype=np.int64)
    vals = np.empty(ptr[n])
    for i in range(n):
        o = ptr[i]
        for r in range(q):
            g = Dt[i, r]
            for e in range(indptr[i], indptr[i + 1]):
                cols[o] = r * n_cols + indices[e]
                vals[o] = g * data[e]
                o += 1
        for k in range(p):
            cols[o] = bias_off + k
            vals[o] = D[i, k]
            o += 1
    return cols, vals, ptr


@njit(cache=True, nogil=True)
def _scatter(acc, mark, touched, cols, vals, e0, e1):
    """Sum the entries ``e0:e1`` into ``acc`` (marking new coordinates);
    returns how many coordinates were newly touched."""
    m = 0
    for e in range(e0, e1):
        c = cols[e]
        if not mark[c]:
            mark[c] = True
            touched[m] = c
            m += 1
        acc[c] += vals[e]
    return m


@njit(cache=True, nogil=True)
def _clear(acc, mark, touched, m):
    for r in range(m):
        c = touched[r]
        acc[c] = 0.0
        mark[c] = False


@njit(cache=True, nogil=True)
def _gram_column(K, have, col, v0, m, acc, mark, touched, cols, vals, vptr):
    """Fill row and column ``col`` of the Gram matrix ``K`` of the slopes of
    vertices ``v0..v0+m-1`` (entries ``vptr``)."""
    k = _scatter(acc, mark, touched, cols, vals, vptr[v0 + col], vptr[v0 + col + 1])
    for b in range(m):
        if have[b]:
            continue
        s = 0.0
        for e in range(vptr[v0 + b], vptr[v0 + b + 1]):
            s += vals[e] * acc[cols[e]]
        K[b, col] = s
        K[col, b] = s
    _clear(acc, mark, touched, k)
    have[col] = True


@njit(cache=True, nogil=True)
def working_set_steps(z, avg, acc, mark, touched, cols, vals, vptr, bptr, c, beta, lam, n,
                      step0, max_inner, gaps, d_ell):
    """Exact block steps over each block's working set, one block after another.

    Block ``j`` of a batch owns the vertices ``bptr[j]:bptr[j+1]`` (its
    working set, the ground truth's zero piece among them), vertex ``v``
    with offset ``c[v]``, weight ``beta[v]`` (the block's weights sum to one)
    and slope ``g_v = A_j^T a_v`` given as the entries
    ``vptr[v]:vptr[v+1]`` of ``(cols, vals)``.  With the other blocks fixed,
    the dual restricted to the working set is the concave quadratic

        f(beta) = 1/n sum_v beta_v c_v - lam/2 ||w||^2,
        w = w_rest - 1/(lam n) sum_v beta_v g_v,

    whose partial derivatives are ``h_v / n`` with ``h_v = c_v + <g_v, w>``
    (the value of piece ``v`` at the current scores).  It is maximised by
    pairwise steps (SMO): move weight from the worst weighted vertex to the
    best one by the exact line search, until their values agree to 1e-12
    or ``max_inner`` steps; ``h`` is kept current through the Gram matrix
    of the block's slopes, whose columns are computed when a step first
    needs them.  ``z`` then moves by ``-1/(lam n) sum_v
    dbeta_v g_v`` and ``avg`` takes the lazy weighted average of the
    iterates (step ``t`` weighted ``t``, Lacoste-Julien et al. 2013; block
    ``j`` is step ``t = step0 + j + 1``): with ``T_t = t (t + 1) / 2``, a step
    that changes ``z`` by ``delta`` adds ``T_{t-1} delta`` to ``avg``, so that
    ``sum_t t z_t = T_t z_t - avg``.

    ``acc`` (zeros) and ``mark`` (False) are scratch arrays of the size of
    ``z``, returned as they were given; ``touched`` holds at least as many
    integers as the largest vertex has entries.

    ``gaps[j]`` receives the block's Frank-Wolfe gap over its working set
    before the steps, ``sum_v beta_v (max h - h_v) / n``, and ``d_ell[j]``
    the change of its offset ``l_j = 1/n sum_v beta_v c_v``.
    """
    for j in range(len(bptr) - 1):
        v0 = bptr[j]
        m = bptr[j + 1] - v0
        h = np.empty(m)
        for a in range(m):
            s = 0.0
            for e in range(vptr[v0 + a], vptr[v0 + a + 1]):
                s += vals[e] * z[cols[e]]
            h[a] = c[v0 + a] + s
        # the Gram matrix of the slopes, a column when a step first needs it
        # (a step reads the columns of its two vertices; most visits move
        # weight among a few of them, so this is O(m) columns short of m^2)
        K = np.empty((m, m))
        have = np.zeros(m, dtype=np.bool_)
        old = beta[v0:v0 + m].copy()
        b_ = beta[v0:v0 + m]
        hmax = h.max()
        gap = 0.0
        for a in range(m):
            gap += b_[a] * (hmax - h[a])
        gaps[j] = gap / n
        scale = lam * n
        for it in range(max_inner):
            up = 0
            for a in range(1, m):
                if h[a] > h[up]:
                    up = a
            dn = -1
            for a in range(m):
                if b_[a] > 0.0 and (dn < 0 or h[a] < h[dn]):
                    dn = a
            if dn < 0 or up == dn:
                break
            diff = h[up] - h[dn]
            if not diff > 1e-12 * max(1.0, abs(h[up])):
                break
            for col in (up, dn):
                if not have[col]:
                    _gram_column(K, have, col, v0, m, acc, mark, touched, cols, vals, vptr)
            curv = K[up, up] + K[dn, dn] - 2.0 * K[up, dn]
            gamma = b_[dn]
            if curv > 0.0 and scale * diff / curv < gamma:
                gamma = scale * diff / curv
            if gamma <= 0.0:
                break
            b_[up] += gamma
            b_[dn] -= gamma
            if b_[dn] < 1e-15:
                b_[up] += b_[dn]
                b_[dn] = 0.0
            for a in range(m):
                h[a] -= gamma / scale * (K[a, up] - K[a, dn])
        t = step0 + j + 1
        weight = 0.5 * (t - 1) * t  # T_{t-1}
        de = 0.0
        for a in range(m):
            db = b_[a] - old[a]
            if db != 0.0:
                coef = -db / scale
                for e in range(vptr[v0 + a], vptr[v0 + a + 1]):
                    delta = coef * vals[e]
                    z[cols[e]] += delta
                    avg[cols[e]] += weight * delta
                de += db * c[v0 + a] / n
        d_ell[j] = de
