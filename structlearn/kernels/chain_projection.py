"""The Euclidean projection onto the chain polytope of a long chain, by
coupled pieces.

The projection (``loss='projection'`` of the taggers; every part
penalised) of one chain block ``theta = (a, b)`` -- ``a`` the ``L x K``
unary scores, ``b`` the ``d = K^2 + 2K`` transition, start and end scores --
is

    min_{mu in M}  1/2 ||u - a||^2 + 1/2 ||c - b||^2

with ``u`` the per-position marginals and ``c`` the transition *counts*
summed over the sequence (with the start and end marginals).  The
quadratic on ``c`` couples every position, so the certified splitting of
SparseMAP (:mod:`structlearn.kernels.chain_split`) does not apply as it
is; but the coupling has only ``d`` dimensions.  With the positions where
the optimum is integral fixed to their tags, ``mu`` is a product of
distributions over the short *pieces* between them, and the objective is
block-diagonal in the pieces' weights plus the rank-``d`` term in ``c``.

:func:`chain_projection_pieces` solves that problem by Wolfe's active-set
(minimum-norm-point) method over the product of the pieces' simplices:
each major iteration adds, for every piece at once, the piece's
Frank-Wolfe vertex (a Viterbi over the piece with its fixed neighbours)
where it improves; each minor iteration minimises the objective on the
affine hulls of the supports and steps towards that point as far as the
weights stay non-negative, dropping a vertex that blocks.  The affine
minimiser is a Schur complement in the transition residual ``r = c - b``:
per piece ``p`` (vertices ``Y_p``, unary agreements ``D_p = U_p^T U_p``,
counts ``A_p``), with ``K_p = [[D_p, 1], [1^T, 0]]`` and its
pseudo-inverse,

    w_p = x_p - P_p A_p^T r + N_p s_p,

``N_p`` the null directions of ``K_p`` -- vertices affinely dependent in
their unary parts, which change ``c`` with ``u`` fixed; they occur at the
optimum, where the dual in ``r`` is not differentiable -- and

    (I + sum_p A_p P_p A_p^T) r - B s = sum_p A_p x_p - b_eff,   B^T r = 0,

``B`` the columns ``A_p N_p``, ``b_eff`` the scores less the counts of the
fixed positions.  The pieces' factors are cached and the ``d x d`` matrix
is updated as supports change; each minor iteration solves it on the
transitions that some support vertex uses.

Which positions to fix and the certificate on the whole chain are the
caller's (``structures.Chain``): the returned point is optimal for the
problem with those positions fixed, and optimal for the whole chain iff
its Frank-Wolfe gap there (one Viterbi) vanishes.
"""

import numpy as np
from numba import njit

from ._arrays import grow_rows
from .chain import _viterbi_into

#: Vertex slots a piece starts with (doubled when it needs more).
PIECE_SLOTS = 8


@njit(cache=True, nogil=True)
def _vertex_counts(Y, yo, s, e, fixed, L, K, out):
    """Indices, among the ``d`` transition / start / end parts, of the
    counts of the piece vertex ``Y[yo:yo + e - s]`` (tags of positions
    ``s..e-1``; the edges to the fixed neighbours included), repeats
    counting; returns how many."""
    n = 0
    out[n] = K * K + Y[yo] if s == 0 else fixed[s - 1] * K + Y[yo]
    n += 1
    for t in range(e - s - 1):
        out[n] = Y[yo + t] * K + Y[yo + t + 1]
        n += 1
    last = Y[yo + e - s - 1]
    out[n] = K * K + K + last if e == L else last * K + fixed[e]
    return n + 1


@njit(cache=True, nogil=True)
def _piece_viterbi(Ug, r, s, e, fixed, L, K, Y, yo):
    """The piece's vertex minimising ``<grad, v>`` (``grad``: ``Ug`` on the
    unary parts, ``r`` on the counts), written into ``Y[yo:]``; returns
    that minimum.  (The chain's Viterbi on the piece as a block of its own,
    scores negated, the edges to the fixed neighbours as its start and end
    scores.)"""
    n = e - s
    KK = K * K
    eta = np.empty(n * K + KK + 2 * K)
    for t in range(n):
        for k in range(K):
            eta[t * K + k] = -Ug[s + t, k]
    for j in range(KK):
        eta[n * K + j] = -r[j]
    for k in range(K):
        eta[n * K + KK + k] = -(r[KK + k] if s == 0 else r[fixed[s - 1] * K + k])
        eta[n * K + KK + K + k] = -(r[KK + K + k] if e == L else r[k * K + fixed[e]])
    return -_viterbi_into(eta, np.int64(0), n, K, Y, yo)


@njit(cache=True, nogil=True)
def _factor_piece(a, Y, V, vo, m, cap, s, e, Pc, Nc, mo, xc):
    """Factor a piece's KKT matrix on its ``m`` vertices (tag offsets
    ``V[vo:vo + m]`` into ``Y``): the pseudo-inverse's weight block into
    ``Pc[mo:]`` and the null directions into ``Nc[mo:]`` (row stride
    ``cap``), the weights at ``r = 0`` into ``xc[vo:]``; returns the number
    of null directions."""
    n = e - s
    Kp = np.zeros((m + 1, m + 1))
    ua = np.zeros(m)
    for i in range(m):
        for t in range(n):
            ua[i] += a[s + t, Y[V[vo + i] + t]]
        for j in range(i, m):
            agree = 0.0
            for t in range(n):
                if Y[V[vo + i] + t] == Y[V[vo + j] + t]:
                    agree += 1.0
            Kp[i, j] = agree
            Kp[j, i] = agree
        Kp[i, m] = 1.0
        Kp[m, i] = 1.0
    lam, Q = np.linalg.eigh(Kp)
    top = 1.0
    for i in range(m + 1):
        top = max(top, abs(lam[i]))
    Pm = np.zeros((m + 1, m + 1))
    k = 0
    for q in range(m + 1):
        if abs(lam[q]) > 1e-10 * top:
            for i in range(m + 1):
                vi = Q[i, q] / lam[q]
                for j in range(m + 1):
                    Pm[i, j] += vi * Q[j, q]
        else:
            for i in range(m):
                Nc[mo + i * cap + k] = Q[i, q]
            k += 1
    for i in range(m):
        x = Pm[i, m]
        for j in range(m):
            Pc[mo + i * cap + j] = Pm[i, j]
            x += Pm[i, j] * ua[j]
        xc[vo + i] = x
    return k


@njit(cache=True, nogil=True)
def _add_contribution(G, h, Y, V, vo, m, cap, s, e, fixed, L, K, Pc, mo, xc, sign, idx,
                      jdx):
    """``G += sign * A_p P_p A_p^T``, ``h += sign * A_p x_p`` for one piece."""
    for i in range(m):
        ni = _vertex_counts(Y, V[vo + i], s, e, fixed, L, K, idx)
        for q in range(ni):
            h[idx[q]] += sign * xc[vo + i]
        for j in range(m):
            nj = _vertex_counts(Y, V[vo + j], s, e, fixed, L, K, jdx)
            v = sign * Pc[mo + i * cap + j]
            for q in range(ni):
                for q2 in range(nj):
                    G[idx[q], jdx[q2]] += v


@njit(cache=True, nogil=True)
def _piece_gap(grad_u, grad_c, Y, V, vo, m, W, s, e, fixed, L, K, idx, scratch):
    """A piece's Frank-Wolfe gap (its best vertex is left at
    ``Y[scratch:]``, which must have room)."""
    cur = 0.0
    for i in range(vo, vo + m):
        v = 0.0
        for t in range(e - s):
            v += grad_u[s + t, Y[V[i] + t]]
        n = _vertex_counts(Y, V[i], s, e, fixed, L, K, idx)
        for q in range(n):
            v += grad_c[idx[q]]
        cur += W[i] * v
    return cur - _piece_viterbi(grad_u, grad_c, s, e, fixed, L, K, Y, scratch)


@njit(cache=True, nogil=True)
def _point(L, K, fixed, cfix, Y, V, vo, m, W, ps, pe, idx, u, c):
    """The marginals ``u`` and counts ``c`` of the current weights."""
    u[:] = 0.0
    for j in range(c.shape[0]):
        c[j] = cfix[j]
    for t in range(L):
        if fixed[t] >= 0:
            u[t, fixed[t]] = 1.0
    for p in range(ps.shape[0]):
        s, e = ps[p], pe[p]
        for i in range(m[p]):
            w = W[vo[p] + i]
            for t in range(e - s):
                u[s + t, Y[V[vo[p] + i] + t]] += w
            n = _vertex_counts(Y, V[vo[p] + i], s, e, fixed, L, K, idx)
            for q in range(n):
                c[idx[q]] += w


@njit(cache=True, nogil=True)
def _value(theta, L, K, fixed, cfix, Y, V, vo, m, W, ps, pe, idx, u, c):
    """The objective at the weights ``W`` (``u`` and ``c`` overwritten)."""
    _point(L, K, fixed, cfix, Y, V, vo, m, W, ps, pe, idx, u, c)
    f = 0.0
    for t in range(L):
        for k in range(K):
            f += 0.5 * (u[t, k] - theta[t * K + k]) ** 2
    for j in range(c.shape[0]):
        f += 0.5 * (c[j] - theta[L * K + j]) ** 2
    return f


@njit(cache=True, nogil=True)
def _affine_solve(G, h, use, Y, V, vo, m, cap, ps, pe, fixed, L, K, Pc, Nc, mo, kn, xc,
                  r, Wn, idx):
    """The affine minimiser (module doc): ``r`` and every piece's weights
    into ``Wn``."""
    d = G.shape[0]
    P = ps.shape[0]
    sub = np.empty(d, dtype=np.int64)   # the parts some support vertex uses
    ns = 0
    for j in range(d):
        if use[j] > 0:
            sub[ns] = j
            ns += 1
    nb = 0
    for p in range(P):
        nb += kn[p]
    # right-hand sides: h and the null columns B = A_p N_p, on the used parts
    R = np.zeros((ns, 1 + nb))
    pos = np.full(d, -1, dtype=np.int64)
    for q in range(ns):
        pos[sub[q]] = q
        R[q, 0] = h[sub[q]]
    col = 1
    for p in range(P):
        for kk in range(kn[p]):
            for i in range(m[p]):
                n = _vertex_counts(Y, V[vo[p] + i], ps[p], pe[p], fixed, L, K, idx)
                for q in range(n):
                    R[pos[idx[q]], col] += Nc[mo[p] + i * cap[p] + kk]
            col += 1
    Gs = np.empty((ns, ns))
    for q in range(ns):
        for q2 in range(ns):
            Gs[q, q2] = G[sub[q], sub[q2]]
    X = np.linalg.solve(Gs, R)
    s_null = np.zeros(nb)
    if nb > 0:
        # (B^T G^-1 B) s = -B^T G^-1 h, least squares (B may be rank-deficient)
        S = np.empty((nb, nb))
        rhs = np.empty(nb)
        for i in range(nb):
            v = 0.0
            for q in range(ns):
                v += R[q, 1 + i] * X[q, 0]
            rhs[i] = -v
            for j in range(nb):
                v = 0.0
                for q in range(ns):
                    v += R[q, 1 + i] * X[q, 1 + j]
                S[i, j] = v
        s_null = np.linalg.lstsq(S, rhs, rcond=1e-12)[0]
    for j in range(d):
        r[j] = h[j]   # an unused part: its row of G is the identity's
    for q in range(ns):
        v = X[q, 0]
        for i in range(nb):
            v += X[q, 1 + i] * s_null[i]
        r[sub[q]] = v
    col = 0
    for p in range(P):
        s, e = ps[p], pe[p]
        mp = m[p]
        atr = np.empty(mp)
        for i in range(mp):
            n = _vertex_counts(Y, V[vo[p] + i], s, e, fixed, L, K, idx)
            v = 0.0
            for q in range(n):
                v += r[idx[q]]
            atr[i] = v
        for i in range(mp):
            v = xc[vo[p] + i]
            for j in range(mp):
                v -= Pc[mo[p] + i * cap[p] + j] * atr[j]
            for kk in range(kn[p]):
                v += Nc[mo[p] + i * cap[p] + kk] * s_null[col + kk]
            Wn[vo[p] + i] = v
        col += kn[p]


@njit(cache=True, nogil=True)
def chain_projection_pieces(theta, L, K, fixed, g0, max_major, tol, mu):
    """The projection of one chain block (module doc) with the positions
    ``fixed[t] >= 0`` fixed to that tag, into ``mu`` (the block's layout).
    The pieces start from their best vertex under the unary scores and the
    transition scores ``g0``; the solve stops when the problem's
    Frank-Wolfe gap (the pieces' summed) is at most ``tol`` times the
    scores' scale (``1 + max |theta|``), adding a vertex to every piece
    whose gap exceeds that bound's share (``1 / n_pieces``) -- or when four
    rounds in a row did not decrease the objective (rounding's floor on
    long chains: the caller's certificate tells).  Returns ``(n_major, n_minor, converged)``:
    ``converged`` is false when ``max_major`` major iterations did not
    suffice."""
    d = K * K + 2 * K
    LK = L * K
    a = theta[:LK].reshape((L, K))
    P = 0   # the pieces: maximal runs of free positions
    for t in range(L):
        if fixed[t] < 0 and (t == 0 or fixed[t - 1] >= 0):
            P += 1
    ps = np.empty(P, dtype=np.int64)
    pe = np.empty(P, dtype=np.int64)
    P = 0
    for t in range(L):
        if fixed[t] < 0 and (t == 0 or fixed[t - 1] >= 0):
            ps[P] = t
            P += 1
        if fixed[t] < 0 and (t == L - 1 or fixed[t + 1] >= 0):
            pe[P - 1] = t + 1
    cfix = np.zeros(d)   # the counts of the fixed positions
    if fixed[0] >= 0:
        cfix[K * K + fixed[0]] += 1.0
    if fixed[L - 1] >= 0:
        cfix[K * K + K + fixed[L - 1]] += 1.0
    for t in range(L - 1):
        if fixed[t] >= 0 and fixed[t + 1] >= 0:
            cfix[fixed[t] * K + fixed[t + 1]] += 1.0
    u = np.zeros((L, K))
    c = np.zeros(d)
    n_major = 0
    n_minor = 0
    converged = True
    if P > 0:
        n_major, n_minor, converged = _solve_pieces(theta, a, L, K, fixed, g0, max_major,
                                                    tol, ps, pe, cfix, u, c)
    else:   # every position fixed: the one point
        for t in range(L):
            u[t, fixed[t]] = 1.0
        for j in range(d):
            c[j] = cfix[j]
    for t in range(L):
        for k in range(K):
            mu[t * K + k] = u[t, k]
    for j in range(d):
        mu[LK + j] = c[j]
    return n_major, n_minor, converged


@njit(cache=True, nogil=True)
def _solve_pieces(theta, a, L, K, fixed, g0, max_major, tol, ps, pe, cfix, u, c):
    """The active set of :func:`chain_projection_pieces`; writes the point
    into ``u`` and ``c``."""
    d = K * K + 2 * K
    LK = L * K
    P = ps.shape[0]
    scale = 1.0
    for j in range(theta.shape[0]):
        scale = max(scale, 1.0 + abs(theta[j]))
    limit = tol * scale / P
    # per piece: cap[p] vertex slots at vo[p] in the vector pools (V: the
    # vertices' offsets in Y; W, Wn: weights; xc), cap[p]^2 at mo[p] in the
    # matrix pools (Pc, Nc); a piece outgrowing its slots moves to the end
    cap = np.full(P, PIECE_SLOTS, dtype=np.int64)
    vo = np.empty(P, dtype=np.int64)
    mo = np.empty(P, dtype=np.int64)
    for p in range(P):
        vo[p] = p * PIECE_SLOTS
        mo[p] = p * PIECE_SLOTS * PIECE_SLOTS
    nv = P * PIECE_SLOTS
    nm = P * PIECE_SLOTS * PIECE_SLOTS
    V = np.zeros(nv, dtype=np.int64)
    W = np.zeros(nv)
    Wn = np.zeros(nv)
    Wc = np.zeros(nv)
    xc = np.zeros(nv)
    Pc = np.zeros(nm)
    Nc = np.zeros(nm)
    m = np.zeros(P, dtype=np.int64)
    kn = np.zeros(P, dtype=np.int64)
    Y = np.empty(max(16, 4 * L), dtype=np.int64)   # vertex tags, appended
    ny = np.int64(0)
    G = np.eye(d)
    h = np.empty(d)
    for j in range(d):
        h[j] = cfix[j] - theta[LK + j]
    use = np.zeros(d, dtype=np.int64)              # support vertices using each part
    idx = np.empty(L + 2, dtype=np.int64)
    jdx = np.empty(L + 2, dtype=np.int64)
    grad_c = np.empty(d)
    grad_u = np.empty((L, K))
    for j in range(d):
        grad_c[j] = -g0[j]
    for t in range(L):
        for k in range(K):
            grad_u[t, k] = -a[t, k]
    for p in range(P):   # the start: each piece's best vertex under (a, g0)
        s, e = ps[p], pe[p]
        if ny + (e - s) > Y.shape[0]:
            Y = grow_rows(Y, max(2 * Y.shape[0], ny + (e - s)))
        _piece_viterbi(grad_u, grad_c, s, e, fixed, L, K, Y, ny)
        V[vo[p]] = ny
        ny += e - s
        m[p] = 1
        W[vo[p]] = 1.0
        n = _vertex_counts(Y, ny - (e - s), s, e, fixed, L, K, idx)
        for q in range(n):
            use[idx[q]] += 1
        kn[p] = _factor_piece(a, Y, V, vo[p], 1, cap[p], s, e, Pc, Nc, mo[p], xc)
        _add_contribution(G, h, Y, V, vo[p], 1, cap[p], s, e, fixed, L, K, Pc, mo[p], xc,
                          1.0, idx, jdx)
    r = np.zeros(d)
    n_major = 0
    n_minor = 0
    converged = False
    f_prev = np.inf
    stalled = 0
    gaps = np.empty(P)
    while n_major < max_major:
        while True:   # minor cycle: the affine minimiser, or a step towards it
            n_minor += 1
            _affine_solve(G, h, use, Y, V, vo, m, cap, ps, pe, fixed, L, K, Pc, Nc, mo, kn,
                          xc, r, Wn, idx)
            step = 1.0
            for p in range(P):
                for i in range(vo[p], vo[p] + m[p]):
                    if Wn[i] < -1e-13:
                        step = min(step, W[i] / (W[i] - Wn[i]))
            if step >= 1.0:
                for p in range(P):
                    for i in range(vo[p], vo[p] + m[p]):
                        W[i] = max(Wn[i], 0.0)
                break
            # a bolder step first: the affine minimiser with its negative
            # weights cut (each piece renormalised), kept if it decreases the
            # objective -- one minor iteration for many blocking vertices
            bold = True
            for p in range(P):
                tot = 0.0
                for i in range(vo[p], vo[p] + m[p]):
                    Wc[i] = max(Wn[i], 0.0)
                    tot += Wc[i]
                if tot <= 0.0:
                    bold = False
                    break
                for i in range(vo[p], vo[p] + m[p]):
                    Wc[i] /= tot
            if bold:
                bold = _value(theta, L, K, fixed, cfix, Y, V, vo, m, Wc, ps, pe, idx, u, c) < \
                    _value(theta, L, K, fixed, cfix, Y, V, vo, m, W, ps, pe, idx, u, c)
            for p in range(P):
                dropped = False
                for i in range(vo[p], vo[p] + m[p]):
                    if bold:
                        W[i] = Wc[i]
                    else:
                        W[i] += step * (Wn[i] - W[i])
                    if W[i] <= 1e-14 and Wn[i] < 0.0:
                        dropped = True
                if not dropped:
                    continue
                s, e = ps[p], pe[p]
                _add_contribution(G, h, Y, V, vo[p], m[p], cap[p], s, e, fixed, L, K, Pc,
                                  mo[p], xc, -1.0, idx, jdx)
                k = vo[p]
                tot = 0.0
                for i in range(vo[p], vo[p] + m[p]):
                    if W[i] <= 1e-14 and Wn[i] < 0.0:   # a blocking vertex leaves
                        n = _vertex_counts(Y, V[i], s, e, fixed, L, K, idx)
                        for q in range(n):
                            use[idx[q]] -= 1
                        continue
                    V[k] = V[i]
                    W[k] = max(W[i], 0.0)
                    tot += W[k]
                    k += 1
                m[p] = k - vo[p]
                for i in range(vo[p], k):
                    W[i] /= tot
                kn[p] = _factor_piece(a, Y, V, vo[p], m[p], cap[p], s, e, Pc, Nc, mo[p], xc)
                _add_contribution(G, h, Y, V, vo[p], m[p], cap[p], s, e, fixed, L, K, Pc,
                                  mo[p], xc, 1.0, idx, jdx)
        n_major += 1
        # the point, its gradient and each piece's Frank-Wolfe vertex
        _point(L, K, fixed, cfix, Y, V, vo, m, W, ps, pe, idx, u, c)
        f = 0.0
        for j in range(d):
            grad_c[j] = c[j] - theta[LK + j]
            f += 0.5 * grad_c[j] * grad_c[j]
        for t in range(L):
            for k in range(K):
                grad_u[t, k] = u[t, k] - a[t, k]
                f += 0.5 * grad_u[t, k] * grad_u[t, k]
        # Vertices added to several pieces at once need not all keep a
        # positive weight (the pieces are coupled), and a round whose
        # additions were all dropped again would repeat itself; after a
        # round without progress only the piece with the largest gap gets a
        # vertex -- Wolfe's method proper, which decreases the objective.
        if ny + L > Y.shape[0]:   # room for any piece's path at ny
            Y = grow_rows(Y, max(2 * Y.shape[0], ny + L))
        single = f >= f_prev - 1e-13 * max(1.0, abs(f))
        stalled = stalled + 1 if single else 0
        f_prev = f
        total = 0.0   # the Frank-Wolfe gap of the problem: the pieces' summed
        only = 0
        for p in range(P):
            gaps[p] = _piece_gap(grad_u, grad_c, Y, V, vo[p], m[p], W, ps[p], pe[p], fixed,
                                 L, K, idx, ny)
            total += max(gaps[p], 0.0)
            if gaps[p] > gaps[only]:
                only = p
        if total <= limit * P or stalled > 3:   # certified, or at rounding's floor
            converged = True
            break
        added = 0
        for p in range(P):
            if gaps[p] <= limit or (single and p != only):
                continue
            s, e = ps[p], pe[p]
            _piece_viterbi(grad_u, grad_c, s, e, fixed, L, K, Y, ny)
            dup = False
            for i in range(vo[p], vo[p] + m[p]):
                same = True
                for t in range(e - s):
                    if Y[V[i] + t] != Y[ny + t]:
                        same = False
                        break
                if same:
                    dup = True
                    break
            if dup:
                continue
            _add_contribution(G, h, Y, V, vo[p], m[p], cap[p], s, e, fixed, L, K, Pc, mo[p],
                              xc, -1.0, idx, jdx)
            if m[p] == cap[p]:   # move the piece to the end of the pools, twice the slots
                c2 = 2 * cap[p]
                if nv + c2 > V.shape[0]:
                    size = max(2 * V.shape[0], nv + c2)
                    V = grow_rows(V, size)
                    W = grow_rows(W, size)
                    Wn = grow_rows(Wn, size)
                    Wc = grow_rows(Wc, size)
                    xc = grow_rows(xc, size)
                if nm + c2 * c2 > Pc.shape[0]:
                    size = max(2 * Pc.shape[0], nm + c2 * c2)
                    Pc = grow_rows(Pc, size)
                    Nc = grow_rows(Nc, size)
                for i in range(m[p]):
                    V[nv + i] = V[vo[p] + i]
                    W[nv + i] = W[vo[p] + i]
                vo[p] = nv
                mo[p] = nm
                cap[p] = c2
                nv += c2
                nm += c2 * c2
            V[vo[p] + m[p]] = ny
            W[vo[p] + m[p]] = 0.0
            m[p] += 1
            ny += e - s
            n = _vertex_counts(Y, ny - (e - s), s, e, fixed, L, K, idx)
            for q in range(n):
                use[idx[q]] += 1
            kn[p] = _factor_piece(a, Y, V, vo[p], m[p], cap[p], s, e, Pc, Nc, mo[p], xc)
            _add_contribution(G, h, Y, V, vo[p], m[p], cap[p], s, e, fixed, L, K, Pc, mo[p],
                              xc, 1.0, idx, jdx)
            added += 1
        if added == 0:   # only duplicates: the gap is rounding's
            converged = True
            break
    _point(L, K, fixed, cfix, Y, V, vo, m, W, ps, pe, idx, u, c)
    return n_major, n_minor, converged
