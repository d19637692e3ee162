"""Block steps of the block-coordinate Frank-Wolfe dual solver.

:func:`structlearn.solvers.bcfw` keeps, for every training example ``i``, a
working set of vertices of its block of the dual of ``min_z lam/2 ||z||^2 +
1/n sum_i loss_i(A_i z)``.  A vertex's slope is ``A_i^T a_v`` with ``a_v``
sparse in part space (a violator differs from the truth on a few parts).

The working sets live in flat arrays (a *pool*).  Example ``i`` owns a
list of *parts*, the union of the parts its vertices touch: the slots
``qspan[i, 0]:qspan[i, 1]``, slot ``q`` holding the part's index
``qpart[q]`` in the example's score block and its column of ``A_i``, the
entries ``qe[q, 0]:qe[q, 1]`` of ``(qcols, qvals)`` (coordinates of ``z``).
Vertex ``v`` has the offset ``c[v]``, the weight ``beta[v]`` and its slope
``a_v`` as the entries ``pspan[v, 0]:pspan[v, 1]`` of ``(pids, pvals)``
(part indices in the score block) with ``ploc`` the same parts' positions
in the example's list.  A visit computes the scores of the example's parts
once (one read of ``z`` per entry of its list) and every vertex's value
from them, so its cost does not grow with the number of vertices the way
weight-space slopes would (on 2,000 CoNLL-2000 sentences after 40 epochs
the vertices' weight-space entries are 6.5 times more than the
coordinates they touch).  Example ``i`` owns the vertices ``xlo[i]:xhi[i]``
(the first of them the ground truth's zero piece) and, during an epoch,
the vertex ``extra[i]`` its oracle found (``-1``: none new), appended at
the end of the pool.  :func:`compact_pool` rewrites the vertices by example
at the end of an epoch without those of weight zero; part lists and
entries stay where they are until the unused ones are more than half of
their arrays.  Each example's Gram matrix of its vertices' slopes is kept
too (``kpool``; see :func:`working_set_steps`).
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
    ``ptr[i]:ptr[i+1]``.  Weight rows and intercepts whose gradient is
    exactly zero give no entries: the solver's part columns are unit
    score vectors, each touching one weight row of the ``q``."""
    n, q = Dt.shape
    p = D.shape[1] if D.shape[0] == n else 0
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        rows = 0
        for r in range(q):
            if Dt[i, r] != 0.0:
                rows += 1
        bias = 0
        for k in range(p):
            if D[i, k] != 0.0:
                bias += 1
        ptr[i + 1] = ptr[i] + rows * (indptr[i + 1] - indptr[i]) + bias
    cols = np.empty(ptr[n], dtype=np.int64)
    vals = np.empty(ptr[n])
    for i in range(n):
        o = ptr[i]
        for r in range(q):
            g = Dt[i, r]
            if g == 0.0:
                continue
            for e in range(indptr[i], indptr[i + 1]):
                cols[o] = r * n_cols + indices[e]
                vals[o] = g * data[e]
                o += 1
        for k in range(p):
            if D[i, k] != 0.0:
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
def _most(lo, hi):
    most = 1
    for i in range(len(lo)):
        most = max(most, hi[i] - lo[i])
    return most


@njit(cache=True, nogil=True)
def _part_scores(x, q0, q1, qe, qcols, qvals, out):
    """``out[q - q0] = <A_q, x>`` for the slots ``q0:q1``."""
    for q in range(q0, q1):
        s = 0.0
        for e in range(qe[q, 0], qe[q, 1]):
            s += qvals[e] * x[qcols[e]]
        out[q - q0] = s


@njit(cache=True, nogil=True)
def _vertex_value(v, pspan, ploc, pvals, th):
    s = 0.0
    for k in range(pspan[v, 0], pspan[v, 1]):
        s += pvals[k] * th[ploc[k]]
    return s


@njit(cache=True, nogil=True)
def _gram_column(kpool, k0, D, col, vid, m, q0, q1, qe, qcols, qvals, pspan, ploc, pvals,
                 acc, sq):
    """Fill row and column ``col`` of an example's Gram matrix (stored at
    ``kpool[k0:]`` with leading dimension ``D``) of the slopes of the
    vertices ``vid[:m]``, whose parts are the slots ``q0:q1``: the slope of
    vertex ``col`` is summed into ``acc`` (zeros, as long as ``z``; returned
    so), its inner products with the parts' columns go to ``sq``."""
    v = vid[col]
    for k in range(pspan[v, 0], pspan[v, 1]):
        q = q0 + ploc[k]
        for e in range(qe[q, 0], qe[q, 1]):
            acc[qcols[e]] += pvals[k] * qvals[e]
    _part_scores(acc, q0, q1, qe, qcols, qvals, sq)
    for b in range(m):
        s = _vertex_value(vid[b], pspan, ploc, pvals, sq)
        kpool[k0 + b * D + col] = s
        kpool[k0 + col * D + b] = s
    for k in range(pspan[v, 0], pspan[v, 1]):
        q = q0 + ploc[k]
        for e in range(qe[q, 0], qe[q, 1]):
            acc[qcols[e]] = 0.0


@njit(cache=True, nogil=True)
def _quad_column(qq, k0, D, col, vid, m, nu, pspan, pids, ploc, pvals, sp):
    """Row and column ``col`` of an example's Gram matrix of its vertices'
    slopes restricted to the penalised parts (score-block index below
    ``nu``; stored at ``qq[k0:]`` like ``kpool``); ``sp`` is a zero scratch
    array as long as the example's part list, returned so."""
    v = vid[col]
    for k in range(pspan[v, 0], pspan[v, 1]):
        if pids[k] < nu:
            sp[ploc[k]] = pvals[k]
    for b in range(m):
        s = _vertex_value(vid[b], pspan, ploc, pvals, sp)
        qq[k0 + b * D + col] = s
        qq[k0 + col * D + b] = s
    for k in range(pspan[v, 0], pspan[v, 1]):
        sp[ploc[k]] = 0.0


@njit(cache=True, nogil=True)
def gram_blocks(xptr, qspan, qe, qcols, qvals, pspan, pids, ploc, pvals, acc, nu):
    """Every example's Gram matrix of its vertices' slopes, with room for
    one more vertex: returns ``(kpool, kptr, kdim, qq)``, example ``i``'s
    matrix at ``kpool[kptr[i]:]`` with leading dimension ``kdim[i]``, and
    ``qq`` the same matrices restricted to each example's first ``nu[i]``
    parts (the penalised ones of a quadratic dual; ``nu`` empty: ``qq`` is
    empty)."""
    n = len(xptr) - 1
    kdim = np.empty(n, dtype=np.int64)
    kptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        kdim[i] = xptr[i + 1] - xptr[i] + 1
        kptr[i + 1] = kptr[i] + kdim[i] * kdim[i]
    kpool = np.zeros(kptr[n])
    quad = len(nu) > 0
    qq = np.zeros(kptr[n] if quad else 0)
    vid = np.empty(_most(xptr[:-1], xptr[1:]) + 1, dtype=np.int64)
    sq = np.empty(_most(qspan[:n, 0], qspan[:n, 1]))
    sp = np.zeros(len(sq))
    for i in range(n):
        m = xptr[i + 1] - xptr[i]
        for a in range(m):
            vid[a] = xptr[i] + a
        for col in range(m):
            _gram_column(kpool, kptr[i], kdim[i], col, vid, m, qspan[i, 0], qspan[i, 1], qe,
                         qcols, qvals, pspan, ploc, pvals, acc, sq)
            if quad:
                _quad_column(qq, kptr[i], kdim[i], col, vid, m, nu[i], pspan, pids, ploc,
                             pvals, sp)
    return kpool, kptr, kdim, qq


@njit(cache=True, nogil=True)
def working_set_steps(z, avg, ex, xlo, xhi, extra, kdone, kpool, kptr, kdim, qspan, qe, qcols,
                      qvals, pspan, pids, ploc, pvals, c, beta, acc, qq, nu, lam, nw, step0,
                      max_inner, gaps, d_ell, track_avg=True):
    """Exact block steps over each block's working set, one block after another.

    Block ``j`` is example ``i = ex[j]``; its working set is the pool's
    vertices of that example (see the module docstring), vertex ``v`` with
    offset ``c[v]``, weight ``beta[v]`` (an example's weights sum to one)
    and slope ``g_v = A_i^T a_v``.  With the other blocks fixed, the dual
    restricted to the working set is the concave quadratic

        f(beta) = 1/n sum_v beta_v (c_v + Q_vv / 2) - beta^T Q beta / (2n) - lam/2 ||w||^2,
        w = w_rest - 1/(lam n) sum_v beta_v g_v,

    with ``n = nw[i]``: the example's share of the objective is ``1 / nw[i]``
    (``nw[i] = n / w_i`` for example weights ``w`` of mean 1; the number of
    examples without weights; ``inf`` for a weight 0: the block is skipped,
    its gap and offset change 0),

    where ``Q`` is the Gram matrix of the slopes restricted to the
    example's first ``nu[i]`` parts (the parts a quadratic loss such as
    SparseMAP penalises, see :func:`structlearn.solvers.bcfw`; ``nu``
    empty: no such term, ``Q = 0``).  Its partial derivatives are ``h_v /
    n`` with ``h_v = c_v + <a_v, A_i w> + Q_vv / 2 - (Q beta)_v`` (the
    value of piece ``v`` at the current scores, computed from the scores
    of the example's parts, and the quadratic's slope).  It is maximised
    by pairwise steps (SMO): move weight from the worst weighted vertex to
    the best one by the exact line search, until their values agree to
    1e-12 or ``max_inner`` steps; ``h`` is kept current through the Gram
    matrices of the block's slopes.  The Gram matrices persist between
    visits (``kpool`` and ``qq``, laid out as by ``gram_blocks``): only the
    column of the oracle's new vertex is computed, at the example's first
    visit after the oracle found it (``kdone[i]`` then turns True).  ``z``
    then moves by ``-1/(lam n) A_i^T sum_v dbeta_v a_v`` and ``avg`` takes
    the lazy weighted average of the iterates (step ``t`` weighted ``t``,
    Lacoste-Julien et al. 2013; block ``j`` is step ``t = step0 + j + 1``):
    with ``T_t = t (t + 1) / 2``, a step that changes ``z`` by ``delta``
    adds ``T_{t-1} delta`` to ``avg``, so that ``sum_t t z_t = T_t z_t -
    avg`` (``track_avg`` False: ``avg`` is left alone).  ``acc`` is a zero
    scratch array as long as ``z``, returned so.

    ``gaps[j]`` receives the block's Frank-Wolfe gap over its working set
    before the steps, ``sum_v beta_v (max h - h_v) / n``, and ``d_ell[j]``
    the change of its offset ``l_j = 1/n (sum_v beta_v (c_v + Q_vv / 2) -
    beta^T Q beta / 2)``.
    """
    quad = len(nu) > 0
    most = 1
    most_q = 1
    for j in range(len(ex)):
        i = ex[j]
        most = max(most, xhi[i] - xlo[i] + 1)
        most_q = max(most_q, qspan[i, 1] - qspan[i, 0])
    vid = np.empty(most, dtype=np.int64)
    h = np.empty(most)
    old = np.empty(most)
    b_ = np.empty(most)
    th = np.empty(most_q)            # the scores of the example's parts
    dm = np.zeros(most_q)            # the change of its m_i, in part space
    sp = np.zeros(most_q)            # scratch of _quad_column
    for j in range(len(ex)):
        i = ex[j]
        n = nw[i]
        if not n < np.inf:      # a weight 0: no share of the objective
            gaps[j] = 0.0
            d_ell[j] = 0.0
            continue
        scale = lam * n
        m = _block_vertices(i, xlo, xhi, extra, vid)
        k0, D = kptr[i], kdim[i]
        q0, q1 = qspan[i, 0], qspan[i, 1]
        if extra[i] >= 0 and not kdone[i]:
            _gram_column(kpool, k0, D, m - 1, vid, m, q0, q1, qe, qcols, qvals, pspan, ploc,
                         pvals, acc, th)
            if quad:
                _quad_column(qq, k0, D, m - 1, vid, m, nu[i], pspan, pids, ploc, pvals, sp)
            kdone[i] = True
        _part_scores(z, q0, q1, qe, qcols, qvals, th)
        for a in range(m):
            v = vid[a]
            h[a] = c[v] + _vertex_value(v, pspan, ploc, pvals, th)
            old[a] = beta[v]
            b_[a] = beta[v]
        if quad:
            for a in range(m):
                s = 0.5 * qq[k0 + a * D + a]
                for b in range(m):
                    s -= qq[k0 + a * D + b] * b_[b]
                h[a] += s
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
            if quad:
                cq = curv / scale + (qq[k0 + up * D + up] + qq[k0 + dn * D + dn]
                                     - 2.0 * qq[k0 + up * D + dn])
                if cq > 0.0 and diff / cq < gamma:
                    gamma = diff / cq
            elif curv > 0.0 and scale * diff / curv < gamma:
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
            if quad:
                for a in range(m):
                    h[a] -= gamma * (qq[k0 + a * D + up] - qq[k0 + a * D + dn])
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
                for k in range(pspan[v, 0], pspan[v, 1]):
                    dm[ploc[k]] += coef * pvals[k]
                de += db * c[v] / n
        if moved and quad:
            for a in range(m):
                db = b_[a] - old[a]
                s = 0.5 * db * qq[k0 + a * D + a]
                for b in range(m):
                    s -= 0.5 * qq[k0 + a * D + b] * (b_[a] * b_[b] - old[a] * old[b])
                de += s / n
        if moved:
            for q in range(q0, q1):
                f = dm[q - q0]
                if f != 0.0:
                    if track_avg:
                        for e in range(qe[q, 0], qe[q, 1]):
                            delta = f * qvals[e]
                            z[qcols[e]] += delta
                            avg[qcols[e]] += weight * delta
                    else:
                        for e in range(qe[q, 0], qe[q, 1]):
                            z[qcols[e]] += f * qvals[e]
                    dm[q - q0] = 0.0
        d_ell[j] = de


@njit(cache=True, nogil=True)
def _same_slope(pids, pvals, p0, p1, q0, q1):
    if p1 - p0 != q1 - q0:
        return False
    for k in range(p1 - p0):
        if pids[p0 + k] != pids[q0 + k] or pvals[p0 + k] != pvals[q0 + k]:
            return False
    return True


@njit(cache=True, nogil=True)
def add_oracle_vertices(ex, loss_vals, theta, G, boff, xlo, xhi, extra, c, beta, pspan, pids,
                        pvals, qspan, qpart, pwhere, top):
    """Append each example's oracle vertex to the pool, unless its working
    set holds it already; returns ``(rep, parts)``, the parts these
    vertices touch that are not yet on their examples' lists (example
    ``rep[k]``, part ``parts[k]``), whose columns :func:`add_parts` then
    stores.

    Example ``ex[j]`` had the loss ``loss_vals[j]`` at the scores
    ``theta[boff[j]:boff[j+1]]``, where the maximising piece's slope in part
    space is ``G`` (same layout); its offset is the value minus ``<theta,
    G>``.  ``top`` holds the pool's used sizes (vertices, vertex entries,
    part slots, part entries); the vertex arrays must have room for
    ``len(ex)`` more vertices and the nonzeros of ``G``.  ``pwhere`` (as
    long as the largest score block, all ``-1``) is scratch, returned so.

    A vertex is the one held already when its part-space slope is the same
    and its offset agrees to a relative 1e-9 (the offset is recomputed at
    other scores each time, so it carries their rounding)."""
    nv, npe = top[0], top[1]
    rep = np.empty(len(G), dtype=np.int64)
    parts = np.empty(len(rep), dtype=np.int64)
    nn = 0
    for j in range(len(ex)):
        i = ex[j]
        extra[i] = -1
        k0 = npe
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
                    pids, pvals, pspan[v, 0], pspan[v, 1], k0, npe):
                dup = True
                break
        if dup:
            npe = k0
            continue
        c[nv] = cv
        beta[nv] = 0.0
        pspan[nv, 0], pspan[nv, 1] = k0, npe
        for q in range(qspan[i, 0], qspan[i, 1]):
            pwhere[qpart[q]] = 1
        for k in range(k0, npe):
            if pwhere[pids[k]] < 0:
                pwhere[pids[k]] = 1
                rep[nn], parts[nn] = i, pids[k]
                nn += 1
        for q in range(qspan[i, 0], qspan[i, 1]):
            pwhere[qpart[q]] = -1
        for k in range(k0, npe):
            pwhere[pids[k]] = -1
        extra[i] = nv
        nv += 1
    top[0], top[1] = nv, npe
    return rep[:nn], parts[:nn]


@njit(cache=True, nogil=True)
def add_parts(ex, rep, parts, ncols, nvals, nptr, extra, pspan, pids, ploc, qspan, qpart, qe,
              qcols, qvals, pwhere, top):
    """Store the new parts of :func:`add_oracle_vertices` (part ``parts[k]``
    of example ``rep[k]``, its column of ``A`` the entries
    ``nptr[k]:nptr[k+1]`` of ``(ncols, nvals)``; grouped by example in the
    order of ``ex``) on their examples' lists, which move to the end of the
    slot arrays, and set the positions ``ploc`` of the examples' new
    vertices.  The slot and entry arrays must have room for the lists of
    the examples ``ex`` plus ``len(parts)`` slots and ``len(ncols)``
    entries."""
    nq, nqe = top[2], top[3]
    k = 0
    for j in range(len(ex)):
        i = ex[j]
        v = extra[i]
        if v < 0:
            continue
        q0, q1 = qspan[i, 0], qspan[i, 1]
        if k < len(rep) and rep[k] == i:        # the list grows: move it
            for q in range(q0, q1):
                qpart[nq + q - q0] = qpart[q]
                qe[nq + q - q0, 0], qe[nq + q - q0, 1] = qe[q, 0], qe[q, 1]
            q1 = nq + q1 - q0
            q0 = nq
            while k < len(rep) and rep[k] == i:
                qpart[q1] = parts[k]
                qe[q1, 0] = nqe
                for e in range(nptr[k], nptr[k + 1]):
                    qcols[nqe], qvals[nqe] = ncols[e], nvals[e]
                    nqe += 1
                qe[q1, 1] = nqe
                q1 += 1
                k += 1
            qspan[i, 0], qspan[i, 1] = q0, q1
            nq = q1
        for q in range(q0, q1):
            pwhere[qpart[q]] = q - q0
        for r in range(pspan[v, 0], pspan[v, 1]):
            ploc[r] = pwhere[pids[r]]
        for q in range(q0, q1):
            pwhere[qpart[q]] = -1
    top[2], top[3] = nq, nqe


@njit(cache=True, nogil=True)
def _kept(i, k, xlo, xhi, extra, beta):
    """Vertex ``k`` (local index) of example ``i`` if it stays (the zero
    piece, or a positive weight), else ``-1``."""
    v = xlo[i] + k if k < xhi[i] - xlo[i] else extra[i]
    if v < 0 or (k > 0 and not beta[v] > 0.0):
        return -1
    return v


@njit(cache=True, nogil=True)
def compact_pool(xlo, xhi, extra, c, beta, pspan, pids, pvals, ploc, qspan, qpart, qe, qcols,
                 qvals, kpool, kptr, kdim, qq, top, spare, pwhere, slack):
    """The pool's vertices rewritten example by example, each example's zero
    piece first, without the other vertices of weight zero, the Gram
    matrices with them; returns ``(xptr, c, beta, pspan, pids, pvals, ploc,
    qspan, qpart, qe, qcols, qvals, kpool, kptr, kdim, qq)`` with example ``i``
    at ``xptr[i]:xptr[i+1]``, the vertex arrays with room for ``spare``
    more.  The vertex entries, part lists and their entries stay in their
    arrays (the same objects are returned) unless more than half of an
    array (plus ``slack``) is unused: then all are rewritten, each part
    list reduced to the parts of the vertices that stay, with room for as
    many again plus ``slack``.  ``top`` is updated; ``pwhere`` is scratch
    as in :func:`add_oracle_vertices`."""
    n = len(xlo)
    nv = npe = nk = nq = nqe = 0
    for i in range(n):
        mi = 0
        for k in range(xhi[i] - xlo[i] + 1):
            v = _kept(i, k, xlo, xhi, extra, beta)
            if v < 0:
                continue
            mi += 1
            npe += pspan[v, 1] - pspan[v, 0]
        nv += mi
        nk += (mi + 1) * (mi + 1)
        nq += qspan[i, 1] - qspan[i, 0]
        for q in range(qspan[i, 0], qspan[i, 1]):
            nqe += qe[q, 1] - qe[q, 0]
    move = (top[1] > 2 * npe + slack or top[2] > 2 * nq + slack or top[3] > 2 * nqe + slack)
    xptr = np.zeros(n + 1, dtype=np.int64)
    c2, b2 = np.empty(nv + spare), np.empty(nv + spare)
    pspan2 = np.zeros((nv + spare, 2), dtype=np.int64)
    if move:
        pids2 = np.empty(2 * npe + slack, dtype=np.int64)
        pvals2 = np.empty(2 * npe + slack)
        ploc2 = np.empty(2 * npe + slack, dtype=np.int64)
        qspan2 = np.zeros((n, 2), dtype=np.int64)
        qpart2 = np.empty(2 * nq + slack, dtype=np.int64)
        qe2 = np.zeros((2 * nq + slack, 2), dtype=np.int64)
        qcols2 = np.empty(2 * nqe + slack, dtype=np.int64)
        qvals2 = np.empty(2 * nqe + slack)
    else:
        pids2, pvals2, ploc2 = pids, pvals, ploc
        qspan2, qpart2, qe2, qcols2, qvals2 = qspan, qpart, qe, qcols, qvals
    kpool2 = np.zeros(nk)
    quad = len(qq) > 0
    qq2 = np.zeros(nk if quad else 0)
    kptr2 = np.zeros(n + 1, dtype=np.int64)
    kdim2 = np.empty(n, dtype=np.int64)
    lk = np.empty(_most(xlo, xhi) + 1, dtype=np.int64)
    u = p = w = r = 0
    for i in range(n):
        mi = 0
        if move:
            qspan2[i, 0] = w
        for k in range(xhi[i] - xlo[i] + 1):
            v = _kept(i, k, xlo, xhi, extra, beta)
            if v < 0:
                continue
            lk[mi] = k
            mi += 1
            c2[u], b2[u] = c[v], beta[v]
            if move:
                pspan2[u, 0] = p
                for e in range(pspan[v, 0], pspan[v, 1]):
                    q = qspan[i, 0] + ploc[e]      # the part's old slot
                    part = qpart[q]
                    if pwhere[part] < 0:            # first use: copy the part
                        pwhere[part] = w - qspan2[i, 0]
                        qpart2[w] = part
                        qe2[w, 0] = r
                        for f in range(qe[q, 0], qe[q, 1]):
                            qcols2[r], qvals2[r] = qcols[f], qvals[f]
                            r += 1
                        qe2[w, 1] = r
                        w += 1
                    pids2[p], pvals2[p], ploc2[p] = pids[e], pvals[e], pwhere[part]
                    p += 1
                pspan2[u, 1] = p
            else:
                pspan2[u, 0], pspan2[u, 1] = pspan[v, 0], pspan[v, 1]
            u += 1
        if move:
            qspan2[i, 1] = w
            for q in range(qspan2[i, 0], w):
                pwhere[qpart2[q]] = -1
        xptr[i + 1] = u
        D2 = mi + 1
        kdim2[i] = D2
        kptr2[i + 1] = kptr2[i] + D2 * D2
        k0, D = kptr[i], kdim[i]
        for a in range(mi):
            for b in range(mi):
                kpool2[kptr2[i] + a * D2 + b] = kpool[k0 + lk[a] * D + lk[b]]
                if quad:
                    qq2[kptr2[i] + a * D2 + b] = qq[k0 + lk[a] * D + lk[b]]
    top[0] = nv
    if move:
        top[1], top[2], top[3] = p, w, r
    return (xptr, c2, b2, pspan2, pids2, pvals2, ploc2, qspan2, qpart2, qe2, qcols2, qvals2,
            kpool2, kptr2, kdim2, qq2)


@njit(cache=True, nogil=True)
def working_set_values(xptr, c, pspan, ploc, pvals, qspan, qe, qcols, qvals, x):
    """Per example, the largest value at ``x`` of the pieces of its
    (compacted) working set: ``max_v c_v + <a_v, A_i x>``."""
    n = len(xptr) - 1
    out = np.empty(n)
    th = np.empty(_most(qspan[:n, 0], qspan[:n, 1]))
    for i in range(n):
        _part_scores(x, qspan[i, 0], qspan[i, 1], qe, qcols, qvals, th)
        best = -np.inf
        for v in range(xptr[i], xptr[i + 1]):
            best = max(best, c[v] + _vertex_value(v, pspan, ploc, pvals, th))
        out[i] = best
    return out


@njit(cache=True, nogil=True)
def part_lists(xptr, pspan, pids, pwhere):
    """Each example's list of the parts its vertices touch, and the
    vertices' positions in it: returns ``(qspan, qpart, ploc)``."""
    n = len(xptr) - 1
    qspan = np.zeros((n, 2), dtype=np.int64)
    qpart = np.empty(len(pids), dtype=np.int64)
    ploc = np.empty(len(pids), dtype=np.int64)
    nq = 0
    for i in range(n):
        qspan[i, 0] = nq
        for v in range(xptr[i], xptr[i + 1]):
            for k in range(pspan[v, 0], pspan[v, 1]):
                if pwhere[pids[k]] < 0:
                    pwhere[pids[k]] = nq - qspan[i, 0]
                    qpart[nq] = pids[k]
                    nq += 1
                ploc[k] = pwhere[pids[k]]
        qspan[i, 1] = nq
        for q in range(qspan[i, 0], nq):
            pwhere[qpart[q]] = -1
    return qspan, qpart[:nq], ploc
