"""Dependency-tree kernels on a flat, ragged batch layout.

A sentence has ``n >= 1`` words ``1..n``; node ``0`` is the root.

* Arc scores of one sentence are an ``(n, n + 1)`` row-major matrix ``S``
  with ``S[m - 1, h]`` the score of the arc head ``h`` -> modifier ``m``
  (``h`` in ``0..n``).  The self-loop entries ``S[m - 1, m]`` are part of the
  layout but never of a tree: their values are ignored and marginals and
  encodings are zero there.
* A tree is a head array ``heads`` (int64, length ``n``) with
  ``heads[m - 1]`` in ``0..n`` the head of word ``m`` (CoNLL-U convention).
  Its encoding ``phi`` is the ``(n, n + 1)`` 0/1 matrix with
  ``phi[m - 1, heads[m - 1]] = 1``, so the score of a tree is
  ``<S, phi(heads)>``.
* A batch is flat and ragged: ``word_off`` (int64, ``n_sent + 1``) with
  ``n_i = word_off[i + 1] - word_off[i]``; head arrays are flat int64
  arrays indexed by ``word_off``; the arc scores of sentence ``i`` are
  ``theta[arc_off[i]:arc_off[i + 1]]`` (length ``n_i (n_i + 1)``, reshaped to
  ``(n_i, n_i + 1)``), ``arc_off = tree_arc_offsets(word_off)``.

Scores must be finite (forbidding arcs with ``-inf`` is not supported).
``single_root=True`` restricts to trees in which exactly one word has head
``0``; ``projective=True`` to projective trees (no crossing arcs when drawn
above the sentence with the root at position 0 on the left).

Algorithms
----------
* Non-projective MAP (:func:`mst_heads`): Chu-Liu-Edmonds in the dense
  ``O(n^2)`` formulation of Tarjan (1977): every (contracted) node picks its
  best incoming arc once, cycles are contracted by merging the incoming-arc
  rows of their members (``O(n)`` per member), then the contraction tree is
  expanded top-down.  Arcs carry *lexicographic* keys ``(-penalty, score)``
  with an integer penalty; CLE is exact over any totally ordered abelian
  group, so integer penalties give exact constraints without big-M floating
  point arithmetic.  The single-root constraint gives every root arc
  penalty 1: the optimum then has the fewest root children, i.e. one, and
  is the best single-root tree.  This is the classical "subtract a large
  constant from the root arcs" reduction (discussed by Zmigrod, Vieira &
  Cotterell 2020, *Please Mind the Root*) made exact; no loop over root
  children is needed.  A forbidden arc (violators) gets penalty ``n + 1``,
  more than any number of root arcs.  ``O(n^2)`` time and memory for both
  variants.
* Projective MAP (:func:`eisner_heads`): Eisner's first-order algorithm,
  ``O(n^3)`` time, ``O(n^2)`` memory.  Single root: the incomplete spans of
  the root are built from the empty left part only, so the root gets exactly
  one child.
* Non-projective marginals (:func:`matrix_tree`): the matrix-tree theorem
  (Koo, Globerson, Carreras & Collins 2007; Tutte), with the determinant of
  the Laplacian computed by a subtraction-free elimination (Kron reduction
  with the pivot recomputed as a column sum, the GTH trick of Grassmann,
  Taksar & Heyman 1985) instead of an LU factorisation, and the marginals
  as the reverse-mode derivative of that elimination.  See
  :func:`matrix_tree` for why: LU cancels catastrophically as soon as the
  per-word best heads form a cycle with large score gaps.  ``O(n^3)`` time,
  ``O(n^3 / 3)`` memory (states of the elimination).
* Projective marginals (:func:`inside_outside`): Eisner's inside algorithm
  in log space and its reverse-mode derivative (outside), ``O(n^3)``.
* Violators (:func:`best_trees_excluding`, :func:`second_best_tree`): one
  MAP call with one forbidden arc per word: ``O(n^3)`` non-projective,
  ``O(n^4)`` projective.

Tie-breaking (deterministic; strict ``>`` comparisons in increasing index
order everywhere):

* CLE: a node takes the incoming arc of the lowest head index among equal
  keys; a contracted node takes, for every source, the arc into the cycle
  member popped first off the search path (the most recently reached one)
  among equal adjusted keys; new search paths start at the lowest word not
  yet attached.  Which of several tied optimal trees is returned follows
  from these rules; there is no simpler characterisation.
* Eisner: every chart item keeps its smallest optimal split point.
* :func:`second_best_tree`: the violator of the smallest word ``m`` among
  equal scores.

All kernels are plain ``@njit(cache=True, nogil=True)`` functions on
float64/int64 arrays; batch kernels loop over sentences (callers split
batches across threads, as for the other kernels of this package).
"""

import numpy as np
from numba import njit

from ._lazy import njit_on_first_call
from .sparsemap import ENCODE_SIGNATURE, ORACLE_SIGNATURE, block_params

#: Linear-space matrix-tree elimination is used when every modifier row of
#: ``S`` spans at most this much (so ``exp(S - rowmax) >= 2.6e-261`` never
#: underflows); otherwise the log-space elimination.
MTT_LINEAR_SPAN = 600.0

#: Error codes of :func:`check_heads`.
HEADS_OK = 0
HEADS_EMPTY = 1
HEADS_OUT_OF_RANGE = 2
HEADS_SELF_LOOP = 3
HEADS_NO_ROOT = 4
HEADS_SEVERAL_ROOTS = 5
HEADS_CYCLE = 6


# ------------------------------------------------------------------ layout
@njit(cache=True, nogil=True)
def tree_arc_offsets(word_off):
    """Arc offsets of a batch: ``arc_off[i + 1] - arc_off[i] = n_i (n_i + 1)``.

    Parameters
    ----------
    word_off : int64 array, shape (n_sent + 1,)

    Returns
    -------
    arc_off : int64 array, shape (n_sent + 1,)
    """
    n_sent = word_off.shape[0] - 1
    arc_off = np.zeros(n_sent + 1, dtype=np.int64)
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        arc_off[i + 1] = arc_off[i] + n * (n + 1)
    return arc_off


@njit(cache=True, nogil=True)
def _block(theta, arc_off, word_off, i):
    """Sentence ``i``'s scores as a fresh C-contiguous ``(n, n + 1)`` array."""
    n = word_off[i + 1] - word_off[i]
    return theta[arc_off[i]:arc_off[i + 1]].copy().reshape((n, n + 1))


@njit(cache=True, nogil=True)
def _tree_score(S, heads, off):
    """``<S, phi(heads[off:off + n])>`` (summed in word order)."""
    n = S.shape[0]
    total = 0.0
    for m in range(1, n + 1):
        total += S[m - 1, heads[off + m - 1]]
    return total


@njit(cache=True, nogil=True)
def tree_score(S, heads):
    """Score ``<S, phi(heads)>`` of one tree.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    heads : int64 array, shape (n,)

    Returns
    -------
    float
    """
    return _tree_score(S, heads, 0)


@njit(cache=True, nogil=True)
def projective_trees(heads, word_off):
    """Which trees of a batch are projective (boolean array, one per sentence).

    A tree is projective when no two of its arcs cross, the root arc
    included (the root is position 0, left of every word): arcs spanning
    ``[a1, b1]`` and ``[a2, b2]`` cross when ``a1 < a2 < b1 < b2``.  This is
    the set Eisner's algorithm searches (``projective=True``); it equals
    "every word between a head and its modifier descends from the head".
    ``O(n^2)`` per sentence.
    """
    n_sent = len(word_off) - 1
    out = np.ones(n_sent, dtype=np.bool_)
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        for m1 in range(1, n + 1):
            h1 = heads[o + m1 - 1]
            a1, b1 = min(h1, m1), max(h1, m1)
            for m2 in range(1, n + 1):
                h2 = heads[o + m2 - 1]
                a2, b2 = min(h2, m2), max(h2, m2)
                if a1 < a2 and a2 < b1 and b1 < b2:
                    out[i] = False
                    break
            if not out[i]:
                break
    return out


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
    nk = 0
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
    _mst_into(S, single_root, -1, -1, heads, 0)
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
    top = _push(stack, 0, 0, 0, N - 1)
    while top > 0:
        top -= 1
        kind = stack[top, 0]
        s = stack[top, 1]
        t = stack[top, 2]
        if s == t:
            continue
        if kind == 0:                    # Cr[s, t] = Ir[s, k] + Cr[k, t]
            k = bCr[s, t]
            top = _push(stack, top, 2, s, k)
            top = _push(stack, top, 0, k, t)
        elif kind == 1:                  # Cl[s, t] = Cl[s, k] + Il[k, t]
            k = bCl[s, t]
            top = _push(stack, top, 1, s, k)
            top = _push(stack, top, 3, k, t)
        else:                            # I[s, t] = arc + Cr[s, k] + Cl[k + 1, t]
            if kind == 2:
                out[off + t - 1] = s
            else:
                out[off + s - 1] = t
            k = bI[s, t]
            top = _push(stack, top, 0, s, k)
            top = _push(stack, top, 1, k + 1, t)


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
    _eisner_into(S, single_root, -1, -1, heads, 0)
    return heads


@njit(cache=True, nogil=True)
def _map_into(S, single_root, projective, fm, fh, out, off):
    """MAP tree without the arc ``fh -> fm`` (none if ``fm < 1``); returns
    whether such a tree exists."""
    if projective:
        ok, _ = _eisner_into(S, single_root, fm, fh, out, off)
        return ok
    return _mst_into(S, single_root, fm, fh, out, off)


# ------------------------------------------------------- matrix-tree theorem
# The words are eliminated in the order n, n-1, ..., 1 from the weights
# A[h, m] of the arcs h -> m (h in 0..k, m in 1..k, h != m, k the current
# number of words); eliminating k (Kron reduction of the Laplacian):
#
#     D_k = sum_{h=1..k-1} A[h, k]  (+ A[0, k] unless single root and k > 1)
#     A[h, m] += A[h, k] A[k, m] / D_k      for h in 0..k-1, m in 1..k-1, h != m
#     logZ += log D_k
#
# The states before every elimination are kept (state k, nodes 0..k, at
# ``off[k]`` of a flat buffer) for the reverse pass, which turns the
# marginals ``mu'`` of the reduced graph into those of the graph before
# eliminating k, with r = A[h,k] A[k,m] / (D_k A'[h,m]) the share of the
# path through k in the reduced weight A'[h,m] and T = sum mu' r:
#
#     mu[h, m] = mu'[h, m] A[h, m] / A'[h, m]
#     mu[k, m] = sum_h mu'[h, m] r[h, m]
#     mu[h, k] = p_h (1 - T) + sum_m mu'[h, m] r[h, m],  p_h = A[h, k] / D_k
#
# (p_0 = 0 when the root weight is not part of the pivot).  Everything is a
# probability or an expected count, bounded by n.


@njit(cache=True, nogil=True)
def _snapshot_offsets(n):
    """Offsets of the elimination states: state ``k`` (nodes ``0..k``,
    before eliminating ``k``) is ``(k + 1) x (k + 1)`` at ``off[k]``."""
    off = np.zeros(n + 2, dtype=np.int64)
    for k in range(1, n + 1):
        off[k + 1] = off[k] + (k + 1) * (k + 1)
    return off


@njit(cache=True, nogil=True)
def _save_state(A, k, buf, off):
    """Copy ``A[0:k+1, 0:k+1]`` into state ``k`` of ``buf``."""
    p = off[k]
    for h in range(k + 1):
        for m in range(k + 1):
            buf[p + h * (k + 1) + m] = A[h, m]


@njit(cache=True, nogil=True)
def _root_in_pivot(single_root, k):
    """Whether the root weight is part of the pivot of word ``k``."""
    return (not single_root) or k == 1


@njit(cache=True, nogil=True)
def _mtt_forward_linear(S, single_root):
    """Elimination on ``exp(S - rowmax)``; returns ``(ok, logZ, buf, off,
    pivots)``.  ``ok`` is False when a modifier row spans more than
    ``MTT_LINEAR_SPAN`` or a pivot is not finite and positive."""
    n = S.shape[0]
    N = n + 1
    A = np.zeros((N, N))
    off = _snapshot_offsets(n)
    buf = np.empty(off[n + 1])
    D = np.zeros(N)
    logZ = 0.0
    for m in range(1, N):
        hi = -np.inf
        lo = np.inf
        for h in range(N):
            if h != m:
                hi = max(hi, S[m - 1, h])
                lo = min(lo, S[m - 1, h])
        if not (hi - lo <= MTT_LINEAR_SPAN):
            return False, 0.0, buf, off, D
        logZ += hi
        for h in range(N):
            if h != m:
                A[h, m] = np.exp(S[m - 1, h] - hi)
    for k in range(n, 0, -1):
        _save_state(A, k, buf, off)
        d = A[0, k] if _root_in_pivot(single_root, k) else 0.0
        for h in range(1, k):
            d += A[h, k]
        if not (d > 0.0 and d < np.inf):
            return False, 0.0, buf, off, D
        D[k] = d
        logZ += np.log(d)
        for h in range(k):
            f = A[h, k] / d
            for m in range(1, k):
                if m != h:
                    A[h, m] += f * A[k, m]
    return True, logZ, buf, off, D


@njit(cache=True, nogil=True)
def _lae(a, b):
    """``log(exp(a) + exp(b))`` for finite ``a``, ``b``."""
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True, nogil=True)
def _mtt_forward_log(S, single_root):
    """Elimination on the log-weights ``S``; returns ``(logZ, buf, off,
    log_pivots)``.  Stable for any finite scores."""
    n = S.shape[0]
    N = n + 1
    W = np.zeros((N, N))
    for m in range(1, N):
        for h in range(N):
            if h != m:
                W[h, m] = S[m - 1, h]
    off = _snapshot_offsets(n)
    buf = np.empty(off[n + 1])
    LD = np.zeros(N)
    logZ = 0.0
    for k in range(n, 0, -1):
        _save_state(W, k, buf, off)
        use_root = _root_in_pivot(single_root, k)
        hi = W[0, k] if use_root else -np.inf
        for h in range(1, k):
            hi = max(hi, W[h, k])
        acc = np.exp(W[0, k] - hi) if use_root else 0.0
        for h in range(1, k):
            acc += np.exp(W[h, k] - hi)
        ld = hi + np.log(acc)
        LD[k] = ld
        logZ += ld
        for h in range(k):
            lf = W[h, k] - ld
            for m in range(1, k):
                if m != h:
                    W[h, m] = _lae(W[h, m], lf + W[k, m])
    return logZ, buf, off, LD


@njit(cache=True, nogil=True)
def _quot(x, d, logspace):
    """``x / d`` in the representation of the weights (linear or log)."""
    return x - d if logspace else x / d


@njit(cache=True, nogil=True)
def _prob(x, y, z, logspace):
    """The positive real ``x y / z`` (a ratio of weights, at most ~1) from
    weights in either representation (``y = 1`` / ``0`` for ``x / z``)."""
    return np.exp(x + y - z) if logspace else x * y / z


@njit(cache=True, nogil=True)
def _mtt_backward(buf, off, piv, n, single_root, logspace):
    """Reverse pass of the elimination: the arc marginals ``mu[h, m]``
    (``(n + 1, n + 1)``) from the saved states and pivots."""
    N = n + 1
    one = 0.0 if logspace else 1.0
    mu = np.zeros((N, N))
    R = np.zeros(N)
    rowk = np.zeros(N)
    for k in range(1, N):
        pb = off[k]              # state before eliminating k, (k+1) x (k+1)
        kb = k + 1
        pa = off[k - 1]          # state after, k x k (empty for k = 1)
        d = piv[k]
        T = 0.0
        for h in range(k):
            R[h] = 0.0
            rowk[h] = 0.0
        for h in range(k):
            f = _quot(buf[pb + h * kb + k], d, logspace)
            for m in range(1, k):
                if m == h:
                    continue
                g = mu[h, m]
                if g == 0.0:
                    continue
                a = buf[pa + h * k + m]
                mu[h, m] = g * _prob(buf[pb + h * kb + m], one, a, logspace)
                gr = g * _prob(f, buf[pb + k * kb + m], a, logspace)
                R[h] += gr
                rowk[m] += gr
                T += gr
        for h in range(k):
            p = 0.0
            if h >= 1 or _root_in_pivot(single_root, k):
                p = _prob(buf[pb + h * kb + k], one, d, logspace)
            mu[h, k] = max(p * (1.0 - T) + R[h], 0.0)
        for m in range(1, k):
            mu[k, m] = rowk[m]
    return mu


@njit(cache=True, nogil=True)
def _matrix_tree_impl(S, single_root, force_log):
    """:func:`matrix_tree` with the log-space path forced on request;
    returns ``(logZ, mu[h, m])``."""
    n = S.shape[0]
    if not force_log:
        ok, logZ, buf, off, D = _mtt_forward_linear(S, single_root)
        if ok and np.isfinite(logZ):
            return logZ, _mtt_backward(buf, off, D, n, single_root, False)
    logZ, buf, off, LD = _mtt_forward_log(S, single_root)
    return logZ, _mtt_backward(buf, off, LD, n, single_root, True)


@njit(cache=True, nogil=True)
def _to_layout(muhm, out, base):
    """Write ``muhm[h, m]`` into the flat ``(n, n + 1)`` block at ``base``."""
    N = muhm.shape[0]
    for m in range(1, N):
        row = base + (m - 1) * N
        for h in range(N):
            out[row + h] = muhm[h, m] if h != m else 0.0


@njit(cache=True, nogil=True)
def matrix_tree(S, single_root):
    """Log-partition function and arc marginals of non-projective trees.

    The matrix-tree theorem (Koo, Globerson, Carreras & Collins 2007):
    ``Z = det L`` for the root-deleted Laplacian ``L`` of the weights
    ``A[h, m] = exp(S[m - 1, h])``; with a single root, ``Z = det L^`` where
    the first row of the word-only Laplacian is replaced by the root weights.

    Stability.  The scores of each modifier row are shifted by their maximum
    before exponentiating (a tree has one arc per modifier, so the shifts add
    back to ``logZ``).  That alone does not make an LU determinant safe:
    when the per-word best heads form a cycle, ``det L`` is a tiny difference
    of ``O(1)`` products (e.g. ``(1 + e1)(1 + e2) - 1``) and LU loses all
    digits once the gaps exceed ~35 nats.  Here ``det L`` is the product of
    the pivots of a Gaussian elimination of the words (in order ``n..1``)
    in which every pivot is recomputed as the sum of the current in-weights
    of the eliminated word (columns of a Laplacian sum to zero and Kron
    reduction keeps it a Laplacian): only sums, products and quotients of
    positive numbers, hence relative accuracy (GTH).  With a single root,
    the pivots leave out the root weights, which are carried along as the
    first-order coefficient in a root-weight scaling ``t`` (the coefficient
    of ``t`` in ``Z(t)`` is the single-root partition function); the last
    pivot is the effective root weight of the last word.  The marginals are
    the reverse-mode derivative of ``logZ`` through the elimination: at
    every step they are marginals of the reduced graph, bounded by one, so
    errors stay absolute ``O(n^2 eps)``.

    The elimination runs in linear space when every modifier row spans at
    most ``MTT_LINEAR_SPAN`` (no weight underflows) and in log space
    otherwise (about eight times slower), so any finite scores are safe
    (tested up to ``|S| ~ 1e5``).

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    single_root : bool

    Returns
    -------
    logZ : float
    mu : float64 array, shape (n, n + 1)
        ``mu[m - 1, h]`` the marginal probability of the arc ``h -> m``
        (0 on the self-loop entries); every row sums to one.

    Notes
    -----
    ``O(n^3)`` time; the elimination states are kept for the reverse pass,
    ``O(n^3 / 3)`` memory.
    """
    n = S.shape[0]
    logZ, muhm = _matrix_tree_impl(S, single_root, False)
    mu = np.empty(n * (n + 1))
    _to_layout(muhm, mu, 0)
    return logZ, mu.reshape((n, n + 1))


# ---------------------------------------------------------- inside-outside
@njit(cache=True, nogil=True)
def _lse_terms(x, n):
    """``log(sum(exp(x[:n])))`` for finite ``x`` and ``n >= 1``."""
    hi = x[0]
    for i in range(1, n):
        if x[i] > hi:
            hi = x[i]
    acc = 0.0
    for i in range(n):
        acc += np.exp(x[i] - hi)
    return hi + np.log(acc)


@njit(cache=True, nogil=True)
def _inside(S, single_root):
    """Log-space Eisner inside charts ``(Cr, Cl, Ir, Il, B)``; ``B[s, t]``
    is the log-sum over splits shared by ``Ir[s, t]`` and ``Il[s, t]``, and
    ``Cr[0, n]`` is ``logZ``."""
    n = S.shape[0]
    N = n + 1
    Cr = np.zeros((N, N))
    Cl = np.zeros((N, N))
    Ir = np.zeros((N, N))
    Il = np.zeros((N, N))
    B = np.zeros((N, N))
    tmp = np.empty(N)
    for w in range(1, N):
        for s in range(N - w):
            t = s + w
            if single_root and s == 0:
                b = Cl[1, t]                 # the root's only split: k = 0
            else:
                for k in range(s, t):
                    tmp[k - s] = Cr[s, k] + Cl[k + 1, t]
                b = _lse_terms(tmp, t - s)
            B[s, t] = b
            Ir[s, t] = b + S[t - 1, s]
            for k in range(s + 1, t + 1):
                tmp[k - s - 1] = Ir[s, k] + Cr[k, t]
            Cr[s, t] = _lse_terms(tmp, t - s)
            if s >= 1:
                Il[s, t] = b + S[s - 1, t]
                for k in range(s, t):
                    tmp[k - s] = Cl[s, k] + Il[k, t]
                Cl[s, t] = _lse_terms(tmp, t - s)
    return Cr, Cl, Ir, Il, B


@njit(cache=True, nogil=True)
def _outside_marginals(Cr, Cl, Ir, Il, B, single_root):
    """Reverse pass of :func:`_inside`: adjoints ``d logZ / d item``
    (expected uses, in ``[0, 1]``) from the widest span down; within a
    span the complete items before the incomplete ones (``Cr[s, t]`` uses
    ``Ir[s, t]``).  Returns ``mu[h, m]``, the adjoints of the arcs."""
    N = Cr.shape[0]
    n = N - 1
    gCr = np.zeros((N, N))
    gCl = np.zeros((N, N))
    gIr = np.zeros((N, N))
    gIl = np.zeros((N, N))
    gCr[0, n] = 1.0
    mu = np.zeros((N, N))
    for w in range(n, 0, -1):
        for s in range(N - w):
            t = s + w
            g = gCr[s, t]
            if g != 0.0:
                for k in range(s + 1, t + 1):
                    q = g * np.exp(Ir[s, k] + Cr[k, t] - Cr[s, t])
                    gIr[s, k] += q
                    gCr[k, t] += q
            if s >= 1:
                g = gCl[s, t]
                if g != 0.0:
                    for k in range(s, t):
                        q = g * np.exp(Cl[s, k] + Il[k, t] - Cl[s, t])
                        gCl[s, k] += q
                        gIl[k, t] += q
                mu[t, s] = gIl[s, t]
            mu[s, t] = gIr[s, t]
            g = gIr[s, t] + gIl[s, t]
            if g == 0.0:
                continue
            if single_root and s == 0:
                gCl[1, t] += g
            else:
                for k in range(s, t):
                    q = g * np.exp(Cr[s, k] + Cl[k + 1, t] - B[s, t])
                    gCr[s, k] += q
                    gCl[k + 1, t] += q
    return mu


@njit(cache=True, nogil=True)
def _inside_outside_hm(S, single_root):
    """Projective inside-outside; returns ``(logZ, mu[h, m])``."""
    Cr, Cl, Ir, Il, B = _inside(S, single_root)
    return Cr[0, S.shape[0]], _outside_marginals(Cr, Cl, Ir, Il, B, single_root)


@njit(cache=True, nogil=True)
def inside_outside(S, single_root):
    """Log-partition function and arc marginals of projective trees.

    Eisner's inside recursions in log space (log-sum-exp with the running
    maximum subtracted, so any finite scores are safe) and their reverse-mode
    derivative (outside pass); ``O(n^3)`` time, ``O(n^2)`` memory.  With a
    single root the root's incomplete spans use the empty left part only.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    single_root : bool

    Returns
    -------
    logZ : float
    mu : float64 array, shape (n, n + 1)
        Arc marginals in the score layout (0 on self-loop entries).
    """
    n = S.shape[0]
    logZ, muhm = _inside_outside_hm(S, single_root)
    mu = np.empty(n * (n + 1))
    _to_layout(muhm, mu, 0)
    return logZ, mu.reshape((n, n + 1))


# ---------------------------------------------------------------- violators
@njit(cache=True, nogil=True)
def _excluding_into(S, heads, hoff, single_root, projective, out, ooff, row):
    """Rows of :func:`best_trees_excluding` into ``out[ooff:ooff + n*n]``."""
    n = S.shape[0]
    for m in range(1, n + 1):
        base = ooff + (m - 1) * n
        if _map_into(S, single_root, projective, m, heads[hoff + m - 1], row, 0):
            for j in range(n):
                out[base + j] = row[j]
        else:
            for j in range(n):
                out[base + j] = -1


@njit(cache=True, nogil=True)
def best_trees_excluding(S, heads, single_root, projective):
    """For every word ``m``, the best tree in which ``m``'s head differs
    from ``heads[m - 1]`` (max-marginal violators, e.g. PosLearn).

    One MAP call per word with the arc ``heads[m - 1] -> m`` forbidden (an
    integer penalty in CLE, an unbuildable chart item in Eisner; no
    ``-inf`` arithmetic).  ``O(n^3)`` non-projective, ``O(n^4)`` projective.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    heads : int64 array, shape (n,)
    single_root, projective : bool

    Returns
    -------
    trees : int64 array, shape (n, n)
        Row ``m - 1`` holds the head array of the violator of word ``m``,
        or ``-1`` everywhere when no such tree exists (for valid ``heads``
        this happens only when ``n == 1``).
        Ties as in :func:`mst_heads` / :func:`eisner_heads`.
    """
    n = S.shape[0]
    out = np.empty(n * n, dtype=np.int64)
    row = np.empty(n, dtype=np.int64)
    _excluding_into(S, heads, 0, single_root, projective, out, 0, row)
    return out.reshape((n, n))


@njit(cache=True, nogil=True)
def _second_best_into(S, heads, hoff, single_root, projective, out, ooff):
    """Best tree different from ``heads[hoff:hoff + n]`` into
    ``out[ooff:ooff + n]``; returns whether one exists (else copies heads)."""
    n = S.shape[0]
    row = np.empty(n, dtype=np.int64)
    best = -np.inf
    found = False
    for m in range(1, n + 1):
        if _map_into(S, single_root, projective, m, heads[hoff + m - 1], row, 0):
            v = _tree_score(S, row, 0)
            if not found or v > best:
                best = v
                found = True
                for j in range(n):
                    out[ooff + j] = row[j]
    if not found:
        for j in range(n):
            out[ooff + j] = heads[hoff + j]
    return found


@njit(cache=True, nogil=True)
def second_best_tree(S, heads, single_root, projective):
    """Best tree different from ``heads`` (not necessarily the MAP tree).

    Every other tree differs from ``heads`` at some word, so this is the best
    of the rows of :func:`best_trees_excluding` (smallest ``m`` on equal
    scores).  ``O(n^3)`` non-projective, ``O(n^4)`` projective.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    heads : int64 array, shape (n,)
    single_root, projective : bool

    Returns
    -------
    tree : int64 array, shape (n,)
        The second tree, a copy of ``heads`` when none exists.
    exists : bool
        False when ``heads`` is the only tree (``n == 1``).
    """
    n = S.shape[0]
    out = np.empty(n, dtype=np.int64)
    ok = _second_best_into(S, heads, 0, single_root, projective, out, 0)
    return out, ok


# ---------------------------------------------------------- SparseMAP oracle
@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def tree_map(eta, params, out):
    """MAP oracle for one sentence, ``params = [n, single_root, projective]``.

    ``eta`` and ``out`` are flat ``(n, n + 1)`` arc-score blocks; writes
    ``phi(argmax)`` (tie-breaking of :func:`mst_heads` or
    :func:`eisner_heads`) into ``out`` after zeroing it.
    """
    n = int(params[0])
    single_root = params[1] != 0.0
    projective = params[2] != 0.0
    S = eta.reshape((n, n + 1))
    heads = np.empty(n, dtype=np.int64)
    _map_into(S, single_root, projective, -1, -1, heads, 0)
    out[:] = 0.0
    for m in range(1, n + 1):
        out[(m - 1) * (n + 1) + heads[m - 1]] = 1.0


def tree_block_params(word_off, single_root, projective):
    """Per-sentence ``[n_i, single_root, projective]`` for :func:`tree_map`,
    as :func:`~structlearn.kernels.sparsemap.block_params` lays them out."""
    return block_params(np.asarray(word_off, dtype=np.int64),
                        np.array([1.0 if single_root else 0.0, 1.0 if projective else 0.0]))


# ------------------------------------------------------------ batch kernels
@njit(cache=True, nogil=True)
def map_batch(theta, arc_off, word_off, single_root, projective):
    """MAP tree of every sentence (:func:`mst_heads`, or :func:`eisner_heads`
    when ``projective``); flat int64 heads."""
    heads = np.empty(word_off[-1], dtype=np.int64)
    for i in range(word_off.shape[0] - 1):
        S = _block(theta, arc_off, word_off, i)
        _map_into(S, single_root, projective, -1, -1, heads, word_off[i])
    return heads


@njit(cache=True, nogil=True)
def marginals_batch(theta, arc_off, word_off, single_root, projective):
    """Arc marginals and log-partition of every sentence (:func:`matrix_tree`,
    or :func:`inside_outside` when ``projective``).

    Returns ``(mu, logZ)``: flat marginals in the layout of ``theta`` and
    the log-partition function of every sentence.
    """
    n_sent = word_off.shape[0] - 1
    mu = np.zeros(arc_off[n_sent])
    logZ = np.empty(n_sent)
    for i in range(n_sent):
        S = _block(theta, arc_off, word_off, i)
        if projective:
            lz, muhm = _inside_outside_hm(S, single_root)
        else:
            lz, muhm = _matrix_tree_impl(S, single_root, False)
        logZ[i] = lz
        _to_layout(muhm, mu, arc_off[i])
    return mu, logZ


@njit(cache=True, nogil=True)
def poslearn_violators_batch(theta, heads, arc_off, word_off, single_root, projective):
    """:func:`best_trees_excluding` for every sentence.

    Returns a flat int64 array of length ``sum_i n_i^2``: sentence ``i``'s
    ``(n_i, n_i)`` matrix of violators, row-major, at offset
    ``sum_{j < i} n_j^2`` (rows of ``-1`` where no violator exists).
    """
    n_sent = word_off.shape[0] - 1
    total = 0
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        total += n * n
    out = np.empty(total, dtype=np.int64)
    pos = 0
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        S = _block(theta, arc_off, word_off, i)
        row = np.empty(n, dtype=np.int64)
        _excluding_into(S, heads, word_off[i], single_root, projective, out, pos, row)
        pos += n * n
    return out


@njit(cache=True, nogil=True)
def second_best_batch(theta, heads, arc_off, word_off, single_root, projective):
    """:func:`second_best_tree` for every sentence.

    Returns ``(heads2, exists)``: flat int64 heads (a copy of ``heads`` for
    sentences without another tree) and a boolean per sentence.
    """
    n_sent = word_off.shape[0] - 1
    out = np.empty(word_off[n_sent], dtype=np.int64)
    exists = np.zeros(n_sent, dtype=np.bool_)
    for i in range(n_sent):
        S = _block(theta, arc_off, word_off, i)
        exists[i] = _second_best_into(S, heads, word_off[i], single_root, projective,
                                      out, word_off[i])
    return out, exists


@njit(cache=True, nogil=True)
def encode_heads_batch(heads, arc_off, word_off):
    """Flat encodings ``phi(heads_i)`` in the layout of ``theta``."""
    n_sent = word_off.shape[0] - 1
    phi = np.zeros(arc_off[n_sent])
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        for m in range(1, n + 1):
            phi[arc_off[i] + (m - 1) * (n + 1) + heads[o + m - 1]] = 1.0
    return phi


@njit(cache=True, nogil=True)
def score_heads_batch(theta, heads, arc_off, word_off):
    """Scores ``<theta_i, phi(heads_i)>`` of every sentence."""
    n_sent = word_off.shape[0] - 1
    scores = np.zeros(n_sent)
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        acc = 0.0
        for m in range(1, n + 1):
            acc += theta[arc_off[i] + (m - 1) * (n + 1) + heads[o + m - 1]]
        scores[i] = acc
    return scores


# --------------------------------------------------------------- validation
@njit(cache=True, nogil=True)
def check_heads(heads, word_off, single_root):
    """First problem in a batch of head arrays.

    Checks, per sentence and in this order: at least one word, heads in
    ``0..n``, no self-loop, at least one root child, at most one if
    ``single_root``, no cycle.  ``O(total words)``.

    Returns
    -------
    code : int
        :data:`HEADS_OK` or one of the ``HEADS_*`` error codes.
    sentence : int
        Index of the offending sentence (-1 if OK).
    word : int
        The offending word (1-based): the word with the bad head, the second
        root child, or a word on the cycle (0 when not applicable).
    """
    n_sent = word_off.shape[0] - 1
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        if n < 1:
            return HEADS_EMPTY, i, 0
        for m in range(1, n + 1):
            h = heads[o + m - 1]
            if h < 0 or h > n:
                return HEADS_OUT_OF_RANGE, i, m
            if h == m:
                return HEADS_SELF_LOOP, i, m
        first = 0
        for m in range(1, n + 1):
            if heads[o + m - 1] == 0:
                if first == 0:
                    first = m
                elif single_root:
                    return HEADS_SEVERAL_ROOTS, i, m
        if first == 0:
            return HEADS_NO_ROOT, i, 0
        mark = np.zeros(n + 1, dtype=np.int64)
        for m in range(1, n + 1):
            v = m
            while v != 0 and mark[v] == 0:
                mark[v] = m
                v = heads[o + v - 1]
            if v != 0 and mark[v] == m:
                return HEADS_CYCLE, i, v
    return HEADS_OK, -1, 0


def validate_heads(heads_list, single_root):
    """Check a list of head arrays and return them in the batch layout.

    Parameters
    ----------
    heads_list : sequence of 1-D integer array-likes
        ``heads_list[i][m - 1]`` is the head of word ``m`` of sentence ``i``.
    single_root : bool

    Returns
    -------
    heads : int64 array
        The concatenated heads.
    word_off : int64 array, shape (n_sent + 1,)

    Raises
    ------
    ValueError
        Naming the sentence and the problem: empty sentence, non-integer
        head, head out of range, self-loop, no root child, several root
        children (``single_root``), or a cycle (listing its words).
    """
    arrays = []
    for i, h in enumerate(heads_list):
        a = np.asarray(h)
        if a.ndim != 1:
            raise ValueError(f"sentence {i}: heads must be one-dimensional, got shape {a.shape}")
        if a.size and not np.issubdtype(a.dtype, np.integer):
            if not (np.issubdtype(a.dtype, np.number) and np.all(a == np.round(a))):
                raise ValueError(f"sentence {i} ({a.size} words): heads must be integers, "
                                 f"got {a.tolist()}")
        arrays.append(a.astype(np.int64))
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    word_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    heads = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    heads = np.ascontiguousarray(heads, dtype=np.int64)
    code, i, m = check_heads(heads, word_off, bool(single_root))
    if code == HEADS_OK:
        return heads, word_off
    h = arrays[i]
    n = len(h)
    where = f"sentence {i} ({n} words)"
    if code == HEADS_EMPTY:
        raise ValueError(f"{where}: a sentence needs at least one word")
    if code == HEADS_OUT_OF_RANGE:
        raise ValueError(f"{where}: head {h[m - 1]} of word {m} is out of range 0..{n}")
    if code == HEADS_SELF_LOOP:
        raise ValueError(f"{where}: word {m} is its own head (self-loop)")
    if code == HEADS_NO_ROOT:
        raise ValueError(f"{where}: no word is attached to the root (head 0)")
    if code == HEADS_SEVERAL_ROOTS:
        roots = [j + 1 for j in range(n) if h[j] == 0]
        raise ValueError(f"{where}: several words are attached to the root {roots} "
                         "but single_root=True")
    cycle = [m]
    v = int(h[m - 1])
    while v != m:
        cycle.append(v)
        v = int(h[v - 1])
    path = " -> ".join(str(v) for v in cycle + [m])
    raise ValueError(f"{where}: cycle through words {sorted(cycle)} "
                     f"(following heads: {path})")


@njit_on_first_call(ENCODE_SIGNATURE, cache=True)
def tree_encode_codes(codes, params, out):
    """Support decoder inverse of trees (see
    :func:`structlearn.kernels.sparsemap.sparsemap_active_set_warm_ragged`):
    the vertex of the head array ``codes`` (one head per word), ``params =
    [n, single_root, projective]``."""
    n = int(params[0])
    out[:] = 0.0
    for m in range(n):
        out[m * (n + 1) + codes[m]] = 1.0
