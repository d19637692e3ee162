"""Dependency-tree MAP kernels: Chu-Liu-Edmonds (non-projective) and Eisner
(projective), each with one optionally forbidden arc (the violators).

The layout, the constraints and the tie-breaking rules are those of
:mod:`structlearn.kernels.tree`.
"""

import numpy as np
from numba import njit


# --------------------------------------------------- Chu-Liu-Edmonds (MST)
@njit(cache=True, nogil=True)
def _find(uf, x):
    """Union-find root of ``x`` with path compression."""
    r = x
    while uf[r] != r:
        r = uf[r]
    while uf[x] != r:
        nx = uf[x]
        uf[x] = r
        x = nx
    return r


@njit(cache=True, nogil=True)
def _better(k1, s1, k2, s2):
    """Lexicographic ``(k1, s1) > (k2, s2)``."""
    return k1 > k2 or (k1 == k2 and s1 > s2)


@njit(cache=True, nogil=True)
def _cle_best_in(a, wk, ws, uf):
    """Original source of the best arc into the top-level node ``a`` (lowest
    index on ties), skipping sources inside ``a``.  ``O(n)``."""
    bx = -1
    for x in range(wk.shape[1]):
        if _find(uf, x) == a:
            continue
        if bx < 0 or _better(wk[a, x], ws[a, x], wk[a, bx], ws[a, bx]):
            bx = x
    return bx


@njit(cache=True, nogil=True)
def _cle_merge(c, kids, k0, k1, wk, ws, wt, ch_k, ch_s, uf):
    """Incoming-arc row of the contracted node ``c`` with members
    ``kids[k0:k1]``: for every source outside ``c`` the best arc into a
    member, its key reduced by the key of that member's cycle arc (first
    member on ties).  ``O((k1 - k0) n)``."""
    for x in range(wk.shape[1]):
        if _find(uf, x) == c:
            continue
        for j in range(k0, k1):
            v = kids[j]
            kk = wk[v, x] - ch_k[v]
            ss = ws[v, x] - ch_s[v]
            if j == k0 or _better(kk, ss, wk[c, x], ws[c, x]):
                wk[c, x] = kk
                ws[c, x] = ss
                wt[c, x] = wt[v, x]


@njit(cache=True, nogil=True)
def _cle_expand(n, nxt, parent, kids, kid_off, ch_src, ch_tgt, out, off):
    """Heads from the contraction tree: top-level nodes keep their chosen
    arc; inside a contracted node the member containing the target of the
    node's arc takes that arc, the other members their cycle arcs.
    Contracted nodes are handled from the last created down, i.e. parents
    before children.  ``O(n^2)`` at most."""
    M = parent.shape[0]
    f_src = np.empty(M, dtype=np.int64)
    f_tgt = np.empty(M, dtype=np.int64)
    for v in range(1, nxt):
        if parent[v] < 0:
            f_src[v] = ch_src[v]
            f_tgt[v] = ch_tgt[v]
    for c in range(nxt - 1, n, -1):
        u = f_tgt[c]
        while parent[u] != c:
            u = parent[u]
        for j in range(kid_off[c - n - 1], kid_off[c - n]):
            v = kids[j]
            f_src[v] = ch_src[v]
            f_tgt[v] = ch_tgt[v]
        f_src[u] = f_src[c]
        f_tgt[u] = f_tgt[c]
    for m in range(1, n + 1):
        out[off + m - 1] = f_src[m]


@njit(cache=True, nogil=True)
def _cle(S, pen, out, off):
    """Maximum arborescence for the keys ``(-pen[m-1, h], S[m-1, h])``.

    Writes the heads into ``out[off:off + n]``.  Dense Tarjan-style
    Chu-Liu-Edmonds, ``O(n^2)`` (see the module docstring): a search path
    follows best incoming arcs backwards from an unattached node; reaching
    the root or an attached node attaches the whole path, reaching the path
    again closes a cycle, which is contracted into a new node that continues
    the path.

    Node ids: ``0`` root, ``1..n`` words, ``n + 1 ..`` contracted nodes (at
    most ``n - 1`` of them).  Row ``v`` of ``wk``/``ws``/``wt`` holds, for
    every *original* source ``x``, the best adjusted key of an arc from ``x``
    into ``v`` and the original word it enters; ``uf`` maps nodes to the
    top-level node containing them.
    """
    n = S.shape[0]
    N = n + 1
    M = 2 * n + 1
    wk = np.empty((M, N), dtype=np.int64)
    ws = np.empty((M, N))
    wt = np.empty((M, N), dtype=np.int64)
    for m in range(1, N):
        for x in range(N):
            wk[m, x] = -pen[m - 1, x]
            ws[m, x] = S[m - 1, x]
            wt[m, x] = m
    uf = np.arange(M)
    parent = np.full(M, -1, dtype=np.int64)
    ch_src = np.zeros(M, dtype=np.int64)     # chosen in-arc: original head
    ch_tgt = np.zeros(M, dtype=np.int64)     # ... and original modifier
    ch_k = np.zeros(M, dtype=np.int64)       # ... and its adjusted key
    ch_s = np.zeros(M)
    done = np.zeros(M, dtype=np.bool_)       # attached (a path to the root)
    onpath = np.zeros(M, dtype=np.bool_)
    done[0] = True
    path = np.empty(M, dtype=np.int64)
    kids = np.empty(M, dtype=np.int64)
    kid_off = np.zeros(N, dtype=np.int64)    # kids of node n + j: kid_off[j-1]:kid_off[j]
    nxt = N
    nk = np.int64(0)  # not a literal 0: _cle_merge(..., k0=nk) compiles once
    for start in range(1, N):
        a = _find(uf, start)
        if done[a]:
            continue
        path[0] = a
        top = 1
        onpath[a] = True
        while True:
            a = path[top - 1]
            bx = _cle_best_in(a, wk, ws, uf)
            ch_src[a] = bx
            ch_tgt[a] = wt[a, bx]
            ch_k[a] = wk[a, bx]
            ch_s[a] = ws[a, bx]
            b = _find(uf, bx)
            if done[b]:
                for j in range(top):
                    done[path[j]] = True
                    onpath[path[j]] = False
                break
            if not onpath[b]:
                path[top] = b
                top += 1
                onpath[b] = True
                continue
            # The path from b to its top is a cycle: contract it into c.
            c = nxt
            nxt += 1
            k0 = nk
            while True:
                top -= 1
                v = path[top]
                onpath[v] = False
                kids[nk] = v
                nk += 1
                parent[v] = c
                uf[v] = c
                if v == b:
                    break
            kid_off[c - n] = nk
            _cle_merge(c, kids, k0, nk, wk, ws, wt, ch_k, ch_s, uf)
            path[top] = c
            top += 1
            onpath[c] = True
    _cle_expand(n, nxt, parent, kids, kid_off, ch_src, ch_tgt, out, off)


@njit(cache=True, nogil=True)
def _mst_into(S, single_root, fm, fh, out, off):
    """Best (single-root) tree without the arc ``fh -> fm`` (none if
    ``fm < 1``) into ``out[off:off + n]``; returns whether one exists."""
    n = S.shape[0]
    pen = np.zeros((n, n + 1), dtype=np.int64)
    if single_root:
        for m in range(n):
            pen[m, 0] = 1
    if fm >= 1:
        pen[fm - 1, fh] += n + 1
    _cle(S, pen, out, off)
    if fm >= 1 and out[off + fm - 1] == fh:
        return False
    if single_root:
        nroot = 0
        for m in range(n):
            if out[off + m] == 0:
                nroot += 1
        if nroot != 1:
            return False
    return True


@njit(cache=True, nogil=True)
def mst_heads(S, single_root):
    """Maximum spanning arborescence (non-projective MAP tree).

    Chu-Liu-Edmonds, dense Tarjan formulation, ``O(n^2)`` time and memory.
    The single-root variant is exact: root arcs carry an integer penalty in
    a lexicographic ``(-penalty, score)`` key, so the optimum has one root
    child and is the best such tree (no big-M floating point constant).

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
        ``S[m - 1, h]`` is the score of the arc ``h -> m``.
    single_root : bool
        Exactly one word attached to the root.

    Returns
    -------
    heads : int64 array, shape (n,)

    Notes
    -----
    Ties: lowest head index when a node picks its incoming arc, first
    contracted member when a cycle's arcs are merged (deterministic; see
    the module docstring).
    """
    heads = np.empty(S.shape[0], dtype=np.int64)
    none = np.int64(-1)   # literals would compile the callees once more
    _mst_into(S, single_root, none, none, heads, np.int64(0))
    return heads


# ----------------------------------------------------------------- Eisner
@njit(cache=True, nogil=True)
def _push(stack, top, kind, s, t):
    stack[top, 0] = kind
    stack[top, 1] = s
    stack[top, 2] = t
    return top + 1


@njit(cache=True, nogil=True)
def _eisner_backtrack(bCr, bCl, bI, out, off):
    """Heads of the best tree from Eisner's split points into
    ``out[off:off + n]``; an explicit stack of items ``(kind, s, t)``,
    kind 0 = Cr, 1 = Cl, 2 = Ir, 3 = Il.  ``O(n)``."""
    N = bCr.shape[0]
    stack = np.empty((4 * N, 3), dtype=np.int64)
    # the kinds as np.int64: literals would compile _push once per value
    k_cr, k_cl, k_ir, k_il = np.int64(0), np.int64(1), np.int64(2), np.int64(3)
    top = _push(stack, k_cr, k_cr, k_cr, N - 1)
    while top > 0:
        top -= 1
        kind = stack[top, 0]
        s = stack[top, 1]
        t = stack[top, 2]
        if s == t:
            continue
        if kind == 0:                    # Cr[s, t] = Ir[s, k] + Cr[k, t]
            k = bCr[s, t]
            top = _push(stack, top, k_ir, s, k)
            top = _push(stack, top, k_cr, k, t)
        elif kind == 1:                  # Cl[s, t] = Cl[s, k] + Il[k, t]
            k = bCl[s, t]
            top = _push(stack, top, k_cl, s, k)
            top = _push(stack, top, k_il, k, t)
        else:                            # I[s, t] = arc + Cr[s, k] + Cl[k + 1, t]
            if kind == 2:
                out[off + t - 1] = s
            else:
                out[off + s - 1] = t
            k = bI[s, t]
            top = _push(stack, top, k_cr, s, k)
            top = _push(stack, top, k_cl, k + 1, t)


@njit(cache=True, nogil=True)
def _eisner_into(S, single_root, fm, fh, out, off):
    """Eisner MAP without the arc ``fh -> fm`` (none if ``fm < 1``) into
    ``out[off:off + n]``; returns ``(exists, score)``.

    Charts over nodes ``0..n``, ``[s, t]`` with ``s <= t``: complete right
    ``Cr`` (head ``s``), complete left ``Cl`` (head ``t``), incomplete
    ``Ir`` (arc ``s -> t``) and ``Il`` (arc ``t -> s``); ``ok*`` flag the
    items that can be built at all (only the forbidden arc makes one
    unbuildable).  Smallest split on ties.
    """
    n = S.shape[0]
    N = n + 1
    Cr = np.zeros((N, N))
    Cl = np.zeros((N, N))
    Ir = np.zeros((N, N))
    Il = np.zeros((N, N))
    okCr = np.zeros((N, N), dtype=np.bool_)
    okCl = np.zeros((N, N), dtype=np.bool_)
    okIr = np.zeros((N, N), dtype=np.bool_)
    okIl = np.zeros((N, N), dtype=np.bool_)
    bCr = np.zeros((N, N), dtype=np.int64)
    bCl = np.zeros((N, N), dtype=np.int64)
    bI = np.zeros((N, N), dtype=np.int64)
    for s in range(N):
        okCr[s, s] = True
        okCl[s, s] = True
    for w in range(1, N):
        for s in range(N - w):
            t = s + w
            # Incomplete items: split k, left part Cr[s, k], right Cl[k+1, t].
            kmax = s if (single_root and s == 0) else t - 1
            found = False
            best = 0.0
            bk = -1
            for k in range(s, kmax + 1):
                if okCr[s, k] and okCl[k + 1, t]:
                    v = Cr[s, k] + Cl[k + 1, t]
                    if not found or v > best:
                        best = v
                        bk = k
                        found = True
            bI[s, t] = bk
            okIr[s, t] = found and not (fm == t and fh == s)
            Ir[s, t] = best + S[t - 1, s]
            if s >= 1:
                okIl[s, t] = found and not (fm == s and fh == t)
                Il[s, t] = best + S[s - 1, t]
            # Complete right: Ir[s, k] + Cr[k, t].
            found = False
            for k in range(s + 1, t + 1):
                if okIr[s, k] and okCr[k, t]:
                    v = Ir[s, k] + Cr[k, t]
                    if not found or v > best:
                        best = v
                        bk = k
                        found = True
            okCr[s, t] = found
            Cr[s, t] = best
            bCr[s, t] = bk
            # Complete left: Cl[s, k] + Il[k, t].
            if s >= 1:
                found = False
                for k in range(s, t):
                    if okCl[s, k] and okIl[k, t]:
                        v = Cl[s, k] + Il[k, t]
                        if not found or v > best:
                            best = v
                            bk = k
                            found = True
                okCl[s, t] = found
                Cl[s, t] = best
                bCl[s, t] = bk
    if not okCr[0, n]:
        return False, 0.0
    _eisner_backtrack(bCr, bCl, bI, out, off)
    return True, Cr[0, n]


@njit(cache=True, nogil=True)
def eisner_heads(S, single_root):
    """Best projective tree (Eisner 1996), ``O(n^3)`` time, ``O(n^2)`` memory.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
        ``S[m - 1, h]`` is the score of the arc ``h -> m``.
    single_root : bool
        Exactly one word attached to the root (exact: the root's incomplete
        spans only use the empty left part).

    Returns
    -------
    heads : int64 array, shape (n,)

    Notes
    -----
    Ties: every chart item keeps its smallest optimal split point.
    """
    heads = np.empty(S.shape[0], dtype=np.int64)
    none = np.int64(-1)   # literals would compile the callees once more
    _eisner_into(S, single_root, none, none, heads, np.int64(0))
    return heads


@njit(cache=True, nogil=True)
def _map_into(S, single_root, projective, fm, fh, out, off):
    """MAP tree without the arc ``fh -> fm`` (none if ``fm < 1``); returns
    whether such a tree exists."""
    if projective:
        ok, _ = _eisner_into(S, single_root, fm, fh, out, off)
        return ok
    return _mst_into(S, single_root, fm, fh, out, off)
