"""Block steps of the block-coordinate Frank-Wolfe dual solver.

:func:`structlearn.solvers.bcfw` keeps, for every training example ``i``, a
working set of vertices of its block of the dual of ``min_z lam/2 ||z||^2 +
1/n sum_i loss_i(A_i z)``.  A vertex's slope lies in the span of the
example's own features, ``A_i^T a_v`` with ``a_v`` in part space, so it is
given here as the *entries* ``(cols, vals)`` of ``A_i^T a_v`` (duplicates
allowed), and a step touches only those coordinates of ``z``.

The working sets live in flat arrays (a *pool*).  Vertex ``v`` has the
offset ``c[v]``, the weight ``beta[v]``, its part-space slope at
``pspan[v, 0]:pspan[v, 1]`` of ``(pids, pvals)`` (indices into the
example's score block) and its weight-space slope at ``espan[v,
0]:espan[v, 1]`` of ``(eloc, evals)``, whose indices are *local*: they
point into the example's column list ``ucols[uspan[i, 0]:uspan[i, 1]]``,
the union of the weight coordinates its vertices touch.  The vertices of
an example share most of their coordinates (on 2,000 CoNLL-2000 sentences
after 40 epochs the union is 6.5 times smaller than the entries), so a
visit reads ``z`` once per coordinate of the union and works on a small
local copy.  Example ``i`` owns the vertices ``xlo[i]:xhi[i]`` (the first
of them the ground truth's zero piece) and, during an epoch, the vertex
``extra[i]`` its oracle found (``-1``: none new), appended at the end of
the pool; :func:`compact_pool` rewrites the vertices by example at the end
of an epoch without those of weight zero (their entries and column lists
stay where they are until the unused ones are more than half of the
arrays).  Each example's Gram matrix of its vertices' slopes is kept too
(``kpool``; see :func:`working_set_steps`).
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
def _block_vertices(i, xlo, xhi, extra, vid):
    """The vertices of example ``i`` into ``vid``; returns how many."""
    m = 0
    for v in range(xlo[i], xhi[i]):
        vid[m] = v
        m += 1
    if extra[i] >= 0:
        vid[m] = extra[i]
        m += 1
    return m


@njit(cache=True, nogil=True)
def _gram_column(kpool, k0, D, col, vid, m, loc, vals, espan, dense):
    """Fill row and column ``col`` of an example's Gram matrix (stored at
    ``kpool[k0:]`` with leading dimension ``D``) of the slopes of the
    vertices ``vid[:m]`` (local entries ``loc``); ``dense`` is a zero
    scratch array of the size of the example's column list, returned so."""
    v = vid[col]
    for e in range(espan[v, 0], espan[v, 1]):
        dense[loc[e]] += vals[e]
    for b in range(m):
        u = vid[b]
        s = 0.0
        for e in range(espan[u, 0], espan[u, 1]):
            s += vals[e] * dense[loc[e]]
        kpool[k0 + b * D + col] = s
        kpool[k0 + col * D + b] = s
    for e in range(espan[v, 0], espan[v, 1]):
        dense[loc[e]] = 0.0


@njit(cache=True, nogil=True)
def _most(lo, hi):
    most = 1
    for i in range(len(lo)):
        most = max(most, hi[i] - lo[i])
    return most


@njit(cache=True, nogil=True)
def gram_blocks(xptr, uspan, loc, vals, espan):
    """Every example's Gram matrix of its vertices' slopes, with room for
    one more vertex: returns ``(kpool, kptr, kdim)``, example ``i``'s matrix
    at ``kpool[kptr[i]:]`` with leading dimension ``kdim[i]``."""
    n = len(xptr) - 1
    kdim = np.empty(n, dtype=np.int64)
    kptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        kdim[i] = xptr[i + 1] - xptr[i] + 1
        kptr[i + 1] = kptr[i] + kdim[i] * kdim[i]
    kpool = np.zeros(kptr[n])
    vid = np.empty(_most(xptr[:-1], xptr[1:]) + 1, dtype=np.int64)
    dense = np.zeros(_most(uspan[:n, 0], uspan[:n, 1]))
    for i in range(n):
        m = xptr[i + 1] - xptr[i]
        for a in range(m):
            vid[a] = xptr[i] + a
        for col in range(m):
            _gram_column(kpool, kptr[i], kdim[i], col, vid, m, loc, vals, espan, dense)
    return kpool, kptr, kdim


@njit(cache=True, nogil=True)
def working_set_steps(z, avg, ex, xlo, xhi, extra, kdone, kpool, kptr, kdim, uspan, ucols,
                      loc, vals, espan, c, beta, lam, n, step0, max_inner, gaps, d_ell):
    """Exact block steps over each block's working set, one block after another.

    Block ``j`` is example ``i = ex[j]``; its working set is the pool's
    vertices of that example (see the module docstring), vertex ``v`` with
    offset ``c[v]``, weight ``beta[v]`` (an example's weights sum to one)
    and slope ``g_v = A_i^T a_v`` given as the local entries
    ``espan[v, 0]:espan[v, 1]`` of ``(loc, vals)``.  With the other blocks
    fixed, the dual restricted to the working set is the concave quadratic

        f(beta) = 1/n sum_v beta_v c_v - lam/2 ||w||^2,
        w = w_rest - 1/(lam n) sum_v beta_v g_v,

    whose partial derivatives are ``h_v / n`` with ``h_v = c_v + <g_v, w>``
    (the value of piece ``v`` at the current scores).  It is maximised by
    pairwise steps (SMO): move weight from the worst weighted vertex to the
    best one by the exact line search, until their values agree to 1e-12
    or ``max_inner`` steps; ``h`` is kept current through the Gram matrix
    of the block's slopes.  The Gram matrices persist between visits
    (``kpool``, laid out as by :func:`gram_blocks`): only the column of the
    oracle's new vertex is computed, at the example's first visit after the
    oracle found it (``kdone[i]`` then turns True).  ``z`` then moves by
    ``-1/(lam n) sum_v dbeta_v g_v`` and ``avg`` takes the lazy weighted
    average of the iterates (step ``t`` weighted ``t``, Lacoste-Julien et
    al. 2013; block ``j`` is step ``t = step0 + j + 1``): with ``T_t = t (t
    + 1) / 2``, a step that changes ``z`` by ``delta`` adds ``T_{t-1}
    delta`` to ``avg``, so that ``sum_t t z_t = T_t z_t - avg``.

    ``gaps[j]`` receives the block's Frank-Wolfe gap over its working set
    before the steps, ``sum_v beta_v (max h - h_v) / n``, and ``d_ell[j]``
    the change of its offset ``l_j = 1/n sum_v beta_v c_v``.
    """
    most = 1
    most_u = 1
    for j in range(len(ex)):
        i = ex[j]
        most = max(most, xhi[i] - xlo[i] + 1)
        most_u = max(most_u, uspan[i, 1] - uspan[i, 0])
    vid = np.empty(most, dtype=np.int64)
    h = np.empty(most)
    old = np.empty(most)
    b_ = np.empty(most)
    zl = np.empty(most_u)           # the example's coordinates of z
    dz = np.zeros(most_u)           # and their change
    scale = lam * n
    for j in range(len(ex)):
        i = ex[j]
        m = _block_vertices(i, xlo, xhi, extra, vid)
        k0, D = kptr[i], kdim[i]
        u0, U = uspan[i, 0], uspan[i, 1] - uspan[i, 0]
        if extra[i] >= 0 and not kdone[i]:
            _gram_column(kpool, k0, D, m - 1, vid, m, loc, vals, espan, dz)
            kdone[i] = True
        for k in range(U):
            zl[k] = z[ucols[u0 + k]]
        for a in range(m):
            v = vid[a]
            s = 0.0
            for e in range(espan[v, 0], espan[v, 1]):
                s += vals[e] * zl[loc[e]]
            h[a] = c[v] + s
            old[a] = beta[v]
            b_[a] = beta[v]
        hmax = h[0]
        for a in range(1, m):
            hmax = max(hmax, h[a])
        gap = 0.0
        for a in range(m):
            gap += b_[a] * (hmax - h[a])
        gaps[j] = gap / n
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
            curv = (kpool[k0 + up * D + up] + kpool[k0 + dn * D + dn]
                    - 2.0 * kpool[k0 + up * D + dn])
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
                h[a] -= gamma / scale * (kpool[k0 + a * D + up] - kpool[k0 + a * D + dn])
        t = step0 + j + 1
        weight = 0.5 * (t - 1) * t  # T_{t-1}
        de = 0.0
        moved = False
        for a in range(m):
            db = b_[a] - old[a]
            if db != 0.0:
                moved = True
                v = vid[a]
                beta[v] = b_[a]
                coef = -db / scale
                for e in range(espan[v, 0], espan[v, 1]):
                    dz[loc[e]] += coef * vals[e]
                de += db * c[v] / n
        if moved:
            for k in range(U):
                delta = dz[k]
                if delta != 0.0:
                    col = ucols[u0 + k]
                    z[col] += delta
                    avg[col] += weight * delta
                    dz[k] = 0.0
        d_ell[j] = de


@njit(cache=True, nogil=True)
def _same_slope(pids, pvals, p0, p1, ids, vs, q0, q1):
    if p1 - p0 != q1 - q0:
        return False
    for k in range(p1 - p0):
        if pids[p0 + k] != ids[q0 + k] or pvals[p0 + k] != vs[q0 + k]:
            return False
    return True


@njit(cache=True, nogil=True)
def add_oracle_vertices(ex, loss_vals, theta, G, boff, ncols, nvals, nptr, xlo, xhi, extra,
                        c, beta, pspan, pids, pvals, espan, loc, evals, uspan, ucols, where,
                        top):
    """Append each example's oracle vertex to the pool, unless its working
    set holds it already.

    Example ``ex[j]`` had the loss ``loss_vals[j]`` at the scores
    ``theta[boff[j]:boff[j+1]]``, where the maximising piece's slope in part
    space is ``G`` (same layout) and in weight space the entries
    ``nptr[j]:nptr[j+1]`` of ``(ncols, nvals)`` (global coordinates); its
    offset is the value minus ``<theta, G>``.  Coordinates new to the
    example extend its column list, which moves to the end of ``ucols``.
    ``top`` holds the pool's used sizes (vertices, part entries, weight
    entries, column-list entries); the pool arrays must have room for
    ``len(ex)`` more vertices, the nonzeros of ``G``, ``len(ncols)`` entries
    and, in ``ucols``, the examples' column lists plus ``len(ncols)``.
    ``where`` (as long as ``z``, all ``-1``) is scratch, returned so.

    A vertex is the one held already when its part-space slope is the same
    and its offset agrees to a relative 1e-9 (the offset is recomputed at
    other scores each time, so it carries their rounding)."""
    nv, npe, nwe, nu = top[0], top[1], top[2], top[3]
    for j in range(len(ex)):
        i = ex[j]
        extra[i] = -1
        q0 = npe
        s = 0.0
        for r in range(boff[j], boff[j + 1]):
            g = G[r]
            if g != 0.0:
                pids[npe] = r - boff[j]
                pvals[npe] = g
                npe += 1
                s += theta[r] * g
        cv = loss_vals[j] - s
        dup = False
        for v in range(xlo[i], xhi[i]):
            if abs(c[v] - cv) <= 1e-9 * max(1.0, abs(cv)) and _same_slope(
                    pids, pvals, pspan[v, 0], pspan[v, 1], pids, pvals, q0, npe):
                dup = True
                break
        if dup:
            npe = q0
            continue
        c[nv] = cv
        beta[nv] = 0.0
        pspan[nv, 0], pspan[nv, 1] = q0, npe
        # local coordinates: the example's list, extended at the end of ucols
        u0, u1 = uspan[i, 0], uspan[i, 1]
        for k in range(u1 - u0):
            where[ucols[u0 + k]] = k
        U = u1 - u0
        grows = False
        for e in range(nptr[j], nptr[j + 1]):
            if where[ncols[e]] < 0:
                grows = True
                break
        if grows:
            for k in range(U):
                ucols[nu + k] = ucols[u0 + k]
            uspan[i, 0] = nu
            u0 = nu
        espan[nv, 0] = nwe
        for e in range(nptr[j], nptr[j + 1]):
            col = ncols[e]
            if where[col] < 0:
                where[col] = U
                ucols[u0 + U] = col
                U += 1
            loc[nwe] = where[col]
            evals[nwe] = nvals[e]
            nwe += 1
        espan[nv, 1] = nwe
        uspan[i, 1] = u0 + U
        if grows:
            nu = u0 + U
        for k in range(U):
            where[ucols[u0 + k]] = -1
        extra[i] = nv
        nv += 1
    top[0], top[1], top[2], top[3] = nv, npe, nwe, nu


@njit(cache=True, nogil=True)
def localize(xptr, espan, cols, where):
    """Column lists and local entries for vertices given with global
    coordinates (example ``i``'s vertices ``xptr[i]:xptr[i+1]``, entries
    ``espan``); returns ``(uspan, ucols, loc)``."""
    n = len(xptr) - 1
    uspan = np.zeros((n, 2), dtype=np.int64)
    ucols = np.empty(len(cols), dtype=np.int64)
    loc = np.empty(len(cols), dtype=np.int64)
    nu = 0
    for i in range(n):
        uspan[i, 0] = nu
        for v in range(xptr[i], xptr[i + 1]):
            for e in range(espan[v, 0], espan[v, 1]):
                col = cols[e]
                if where[col] < 0:
                    where[col] = nu - uspan[i, 0]
                    ucols[nu] = col
                    nu += 1
                loc[e] = where[col]
        uspan[i, 1] = nu
        for k in range(uspan[i, 0], nu):
            where[ucols[k]] = -1
    return uspan, ucols[:nu], loc


@njit(cache=True, nogil=True)
def _kept(i, k, xlo, xhi, extra, beta):
    """Vertex ``k`` (local index) of example ``i`` if it stays (the zero
    piece, or a positive weight), else ``-1``."""
    v = xlo[i] + k if k < xhi[i] - xlo[i] else extra[i]
    if v < 0 or (k > 0 and not beta[v] > 0.0):
        return -1
    return v


@njit(cache=True, nogil=True)
def _move(span, ids, vals, ids2, vals2, o):
    """Copy a vertex's entries to ``o`` of the new arrays; returns the end."""
    for e in range(span[0], span[1]):
        ids2[o], vals2[o] = ids[e], vals[e]
        o += 1
    return o


@njit(cache=True, nogil=True)
def compact_pool(xlo, xhi, extra, c, beta, pspan, pids, pvals, espan, loc, evals, uspan,
                 ucols, kpool, kptr, kdim, top, spare, where, slack):
    """The pool's vertices rewritten example by example, each example's zero
    piece first, without the other vertices of weight zero, the Gram
    matrices with them; returns ``(xptr, c, beta, pspan, pids, pvals,
    espan, loc, evals, uspan, ucols, kpool, kptr, kdim)`` with example
    ``i`` at ``xptr[i]:xptr[i+1]``, the vertex arrays with room for
    ``spare`` more.  The entries and column lists stay in their arrays (the
    same objects are returned) unless more than half of an array (plus
    ``slack`` entries) is unused: then all are rewritten, the column lists
    rebuilt from the vertices that stay, with room for as many again plus
    ``slack``.  ``top`` is updated; ``where`` is
    scratch as in :func:`add_oracle_vertices`."""
    n = len(xlo)
    nv = npe = nwe = nk = nu = 0
    for i in range(n):
        mi = 0
        for k in range(xhi[i] - xlo[i] + 1):
            v = _kept(i, k, xlo, xhi, extra, beta)
            if v < 0:
                continue
            mi += 1
            npe += pspan[v, 1] - pspan[v, 0]
            nwe += espan[v, 1] - espan[v, 0]
        nv += mi
        nk += (mi + 1) * (mi + 1)
        nu += uspan[i, 1] - uspan[i, 0]
    move = (top[2] > 2 * nwe + slack or top[1] > 2 * npe + slack
            or top[3] > 2 * nu + slack)
    xptr = np.zeros(n + 1, dtype=np.int64)
    c2, b2 = np.empty(nv + spare), np.empty(nv + spare)
    pspan2 = np.zeros((nv + spare, 2), dtype=np.int64)
    espan2 = np.zeros((nv + spare, 2), dtype=np.int64)
    if move:
        pids2, pvals2 = np.empty(2 * npe + slack, dtype=np.int64), np.empty(2 * npe + slack)
        loc2, evals2 = np.empty(2 * nwe + slack, dtype=np.int64), np.empty(2 * nwe + slack)
        uspan2 = np.zeros((n, 2), dtype=np.int64)
        ucols2 = np.empty(2 * nu + slack, dtype=np.int64)
    else:
        pids2, pvals2, loc2, evals2 = pids, pvals, loc, evals
        uspan2, ucols2 = uspan, ucols
    kpool2 = np.zeros(nk)
    kptr2 = np.zeros(n + 1, dtype=np.int64)
    kdim2 = np.empty(n, dtype=np.int64)
    lk = np.empty(_most(xlo, xhi) + 1, dtype=np.int64)
    u = p = w = q = 0
    for i in range(n):
        mi = 0
        if move:
            uspan2[i, 0] = q
        for k in range(xhi[i] - xlo[i] + 1):
            v = _kept(i, k, xlo, xhi, extra, beta)
            if v < 0:
                continue
            lk[mi] = k
            mi += 1
            c2[u], b2[u] = c[v], beta[v]
            if move:
                pspan2[u, 0] = p
                p = _move(pspan[v], pids, pvals, pids2, pvals2, p)
                pspan2[u, 1] = p
                espan2[u, 0] = w
                for e in range(espan[v, 0], espan[v, 1]):
                    col = ucols[uspan[i, 0] + loc[e]]
                    if where[col] < 0:
                        where[col] = q - uspan2[i, 0]
                        ucols2[q] = col
                        q += 1
                    loc2[w], evals2[w] = where[col], evals[e]
                    w += 1
                espan2[u, 1] = w
            else:
                pspan2[u, 0], pspan2[u, 1] = pspan[v, 0], pspan[v, 1]
                espan2[u, 0], espan2[u, 1] = espan[v, 0], espan[v, 1]
            u += 1
        if move:
            uspan2[i, 1] = q
            for r in range(uspan2[i, 0], q):
                where[ucols2[r]] = -1
        xptr[i + 1] = u
        D2 = mi + 1
        kdim2[i] = D2
        kptr2[i + 1] = kptr2[i] + D2 * D2
        k0, D = kptr[i], kdim[i]
        for a in range(mi):
            for b in range(mi):
                kpool2[kptr2[i] + a * D2 + b] = kpool[k0 + lk[a] * D + lk[b]]
    top[0] = nv
    if move:
        top[1], top[2], top[3] = p, w, q
    return (xptr, c2, b2, pspan2, pids2, pvals2, espan2, loc2, evals2, uspan2, ucols2,
            kpool2, kptr2, kdim2)


@njit(cache=True, nogil=True)
def working_set_values(xptr, c, espan, loc, evals, uspan, ucols, x):
    """Per example, the largest value at ``x`` of the pieces of its
    (compacted) working set: ``max_v c_v + <g_v, x>``."""
    n = len(xptr) - 1
    out = np.empty(n)
    for i in range(n):
        best = -np.inf
        u0 = uspan[i, 0]
        for v in range(xptr[i], xptr[i + 1]):
            s = c[v]
            for e in range(espan[v, 0], espan[v, 1]):
                s += evals[e] * x[ucols[u0 + loc[e]]]
            best = max(best, s)
        out[i] = best
    return out
