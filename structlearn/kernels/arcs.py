"""First-order arc features of dependency parsing, computed in Numba.

An arc ``h -> m`` of a sentence is described by conjunctions of token
attributes at the head, the modifier and their neighbours (McDonald, Crammer
& Pereira 2005, Table 1), each conjunction also conjoined with the
direction and binned distance of the arc.  Materialising them for every arc
of every sentence would take ``O(sum n^2 * n_templates)`` memory, so nothing
is stored as strings: a token is a row of small integer attribute ids (see
:data:`ATTRIBUTES`), a feature is a 64-bit hash of (template, attribute
ids[, direction-distance]), and an open-addressing table maps the hashes of
the features kept at fit time to compact column ids (``-1``: unknown
feature, ignored).  64-bit keys make collisions between distinct features
negligible (about ``m^2 / 2^65`` for ``m`` features) -- unlike hashing into
a small weight vector.

Token attribute ids: 0 = outside the sentence (the neighbour of the first or
last word), 1 = unknown value, 2 = the root (position 0), known values from
3.  Kernels are plain serial functions that release the GIL.
"""

import numpy as np
from numba import njit

#: Token attribute columns, in this order.
ATTRIBUTES = ("form", "lemma", "upos", "xpos", "prefix", "feats")
FORM, LEMMA, UPOS, XPOS, PREFIX, FEATS = range(6)
OUTSIDE, UNKNOWN, ROOT = 0, 1, 2

# positions relative to the arc
H, M, H_PREV, H_NEXT, M_PREV, M_NEXT = range(6)
_POS_NAMES = ("h", "m", "h-1", "h+1", "m-1", "m+1")
_ATTR_SHORT = ("form", "lemma", "upos", "xpos", "prefix5", "feats")


def _t(*items):
    return tuple(items)


def _pos_templates(P):
    """The templates that read a part-of-speech attribute ``P``."""
    return [
        _t((H, FORM), (H, P)), _t((H, P),), _t((H, LEMMA), (H, P)),
        _t((M, FORM), (M, P)), _t((M, P),), _t((M, LEMMA), (M, P)),
        _t((H, FORM), (H, P), (M, FORM), (M, P)),
        _t((H, P), (M, FORM), (M, P)),
        _t((H, FORM), (M, FORM), (M, P)),
        _t((H, FORM), (H, P), (M, P)),
        _t((H, FORM), (H, P), (M, FORM)),
        _t((H, P), (M, P)),
        _t((H, PREFIX), (M, P)), _t((H, P), (M, PREFIX)),
        _t((H, LEMMA), (M, P)), _t((H, P), (M, LEMMA)),
        # surrounding POS
        _t((H, P), (H_NEXT, P), (M_PREV, P), (M, P)),
        _t((H_PREV, P), (H, P), (M_PREV, P), (M, P)),
        _t((H, P), (H_NEXT, P), (M, P), (M_NEXT, P)),
        _t((H_PREV, P), (H, P), (M, P), (M_NEXT, P)),
        # their back-offs with one neighbour
        _t((H, P), (H_NEXT, P), (M, P)), _t((H_PREV, P), (H, P), (M, P)),
        _t((H, P), (M_PREV, P), (M, P)), _t((H, P), (M, P), (M_NEXT, P)),
    ]


#: Templates: tuples of (position, attribute).  The unigram, bigram and
#: surrounding-POS conjunctions of McDonald et al. (2005), every
#: POS-reading one twice, with UPOS and with XPOS (McDonald et al. use the
#: fine PTB tags -- EWT's XPOS -- and coarse ones); the in-between POS
#: templates are added separately (:data:`BETWEEN_ATTRS`).
TEMPLATE_ITEMS = tuple(
    [_t((H, FORM),), _t((H, LEMMA),), _t((H, PREFIX),),
     _t((M, FORM),), _t((M, LEMMA),), _t((M, PREFIX),),
     _t((H, FORM), (M, FORM)), _t((H, LEMMA), (M, LEMMA)), _t((H, PREFIX), (M, PREFIX)),
     # morphological features (the whole UD FEATS value)
     _t((H, FEATS), (H, UPOS)), _t((M, FEATS), (M, UPOS)),
     _t((H, FEATS), (H, UPOS), (M, UPOS)), _t((H, UPOS), (M, FEATS), (M, UPOS)),
     _t((H, FEATS), (H, UPOS), (M, FEATS), (M, UPOS))]
    + _pos_templates(UPOS) + _pos_templates(XPOS))
#: In-between templates (head POS, POS of a word strictly between head and
#: modifier, modifier POS; once per distinct tag), with UPOS and with XPOS.
BETWEEN_ATTRS = (UPOS, XPOS)
#: Base templates (each also exists conjoined with direction and distance).
N_BASE = len(TEMPLATE_ITEMS) + len(BETWEEN_ATTRS)
#: Template ``t + N_BASE`` is template ``t`` conjoined with the arc's
#: direction and binned distance (1, 2, 3, 4, 5, 6-10, > 10).
N_TEMPLATES = 2 * N_BASE
_MAX_ITEMS = 4


def template_names():
    """Readable names of the ``N_TEMPLATES`` (128) templates."""
    base = ["+".join(f"{_POS_NAMES[p]}.{_ATTR_SHORT[a]}" for p, a in items)
            for items in TEMPLATE_ITEMS]
    for a in BETWEEN_ATTRS:
        base.append(f"h.{_ATTR_SHORT[a]}+between.{_ATTR_SHORT[a]}+m.{_ATTR_SHORT[a]}")
    return base + [b + "|dir+dist" for b in base]


def _template_table():
    T = np.zeros((len(TEMPLATE_ITEMS), 1 + 2 * _MAX_ITEMS), dtype=np.int64)
    for t, items in enumerate(TEMPLATE_ITEMS):
        T[t, 0] = len(items)
        for j, (p, a) in enumerate(items):
            T[t, 1 + 2 * j] = p
            T[t, 2 + 2 * j] = a
    return T


TEMPLATES = _template_table()

_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_C3 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True, inline="always")
def _mix(h, v):
    """Combine a 64-bit state with a value (splitmix64 finaliser)."""
    x = h ^ (np.uint64(v) + _C1 + (h << np.uint64(6)) + (h >> np.uint64(2)))
    x = (x ^ (x >> np.uint64(30))) * _C2
    x = (x ^ (x >> np.uint64(27))) * _C3
    return x ^ (x >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _attr(A, w0, n, p, a):
    """Attribute ``a`` of position ``p`` (0 = root) of a sentence of ``n``
    words whose first row in ``A`` is ``w0``."""
    if p == 0:
        return ROOT
    if p < 0 or p > n:
        return OUTSIDE
    return A[w0 + p - 1, a]


@njit(cache=True, nogil=True, inline="always")
def _dir_dist(h, m):
    d = abs(h - m)
    b = d if d <= 5 else (6 if d <= 10 else 7)
    return b + (8 if h < m else 0)


@njit(cache=True, nogil=True)
def arc_keys(A, w0, n, h, m, T, out, tout):
    """Feature keys of the arc ``h -> m`` into ``out`` and their templates
    into ``tout``; returns their count.

    ``out`` and ``tout`` need :func:`key_buffer_size` slots.  Keys are
    non-zero 64-bit hashes stored as int64, in pairs (plain, conjoined with
    direction and distance).
    """
    dd = _dir_dist(h, m)
    nt = T.shape[0]
    k = 0
    for t in range(nt):
        x = _mix(np.uint64(0), t + 1)
        for j in range(T[t, 0]):
            p = T[t, 1 + 2 * j]
            a = T[t, 2 + 2 * j]
            pos = h if p == H else m if p == M else h - 1 if p == H_PREV else \
                h + 1 if p == H_NEXT else m - 1 if p == M_PREV else m + 1
            x = _mix(x, _attr(A, w0, n, pos, a))
        out[k] = np.int64(x | np.uint64(1))
        out[k + 1] = np.int64(_mix(x, 1000 + dd) | np.uint64(1))
        tout[k] = t
        tout[k + 1] = t + N_BASE
        k += 2
    # in-between POS, once per distinct tag
    lo, hi = (h, m) if h < m else (m, h)
    if hi - lo > 1:
        for bi in range(len(BETWEEN_ATTRS)):
            attr = BETWEEN_ATTRS[bi]
            t = nt + bi
            base = _mix(_mix(_mix(np.uint64(0), t + 1), _attr(A, w0, n, h, attr)),
                        _attr(A, w0, n, m, attr))
            start = k
            for b in range(lo + 1, hi):
                x = np.int64(_mix(base, _attr(A, w0, n, b, attr)) | np.uint64(1))
                seen = False
                for q in range(start, k, 2):
                    if out[q] == x:
                        seen = True
                        break
                if not seen:
                    out[k] = x
                    out[k + 1] = np.int64(_mix(np.uint64(x), 1000 + dd) | np.uint64(1))
                    tout[k] = t
                    tout[k + 1] = t + N_BASE
                    k += 2
    return k


@njit(cache=True, nogil=True)
def key_buffer_size(n_templates, n_words):
    """Slots :func:`arc_keys` may write for a sentence of ``n_words``."""
    return 2 * (n_templates + len(BETWEEN_ATTRS) * (n_words + 1))


@njit(cache=True, nogil=True)
def gold_arc_keys(A, word_off, heads, T):
    """Keys and templates of the features of every gold arc.

    Returns ``(keys, templates)`` (int64, int16) with one row per (gold arc,
    feature) pair, in sentence order.
    """
    n_sent = len(word_off) - 1
    total = 0
    max_n = 0
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        total += n * key_buffer_size(T.shape[0], n)
        max_n = max(max_n, n)
    keys = np.empty(total, dtype=np.int64)
    tmpl = np.empty(total, dtype=np.int16)
    buf = np.empty(key_buffer_size(T.shape[0], max_n), dtype=np.int64)
    tbuf = np.empty(len(buf), dtype=np.int64)
    k = 0
    for i in range(n_sent):
        w0 = word_off[i]
        n = word_off[i + 1] - w0
        for m in range(1, n + 1):
            c = arc_keys(A, w0, n, heads[w0 + m - 1], m, T, buf, tbuf)
            for j in range(c):
                keys[k] = buf[j]
                tmpl[k] = tbuf[j]
                k += 1
    return keys[:k], tmpl[:k]


@njit(cache=True, nogil=True)
def build_table(keys, capacity):
    """Open-addressing table (linear probing) of distinct non-zero ``keys``,
    ``capacity`` a power of two at least twice ``len(keys)``: an int64 array
    of ``2 * capacity`` entries, slot ``s`` holding the key at ``2 s`` and
    its index in ``keys`` at ``2 s + 1`` (empty slots: key 0).

    Key and id share a cache line: with 5.5 M features (EWT) the table is far
    larger than the caches and a lookup costs its cache misses -- one per
    probe instead of two per hit with separate key and id arrays.
    """
    table = np.zeros(2 * capacity, dtype=np.int64)
    mask = capacity - 1
    for i in range(len(keys)):
        key = keys[i]
        s = np.int64(np.uint64(key) & np.uint64(mask))
        while table[2 * s] != 0:
            s = (s + 1) & mask
        table[2 * s] = key
        table[2 * s + 1] = i
    return table


@njit(cache=True, nogil=True, inline="always")
def _lookup(table, key):
    mask = len(table) // 2 - 1
    s = np.int64(np.uint64(key) & np.uint64(mask))
    while True:
        k = table[2 * s]
        if k == key:
            return table[2 * s + 1]
        if k == 0:
            return -1
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def arc_feature_ids(A, word_off, a, b, T, table):
    """Column ids of the known features of every arc of sentences ``a..b-1``.

    Arcs in the tree kernels' layout (per sentence an ``(n, n + 1)`` block,
    modifier-major; self-loops have no features).  Returns ``(indptr,
    ids)``: the ids of arc ``r`` (relative to the first arc of sentence
    ``a``) are ``ids[indptr[r]:indptr[r + 1]]`` (int32).
    """
    n_arcs = 0
    max_n = 0
    for i in range(a, b):
        n = word_off[i + 1] - word_off[i]
        n_arcs += n * (n + 1)
        max_n = max(max_n, n)
    indptr = np.zeros(n_arcs + 1, dtype=np.int64)
    cap = max(16, n_arcs * 8)
    ids = np.empty(cap, dtype=np.int32)
    buf = np.empty(key_buffer_size(T.shape[0], max_n), dtype=np.int64)
    tbuf = np.empty(len(buf), dtype=np.int64)
    r = 0
    k = 0
    for i in range(a, b):
        w0 = word_off[i]
        n = word_off[i + 1] - w0
        for m in range(1, n + 1):
            for h in range(n + 1):
                if h != m:
                    c = arc_keys(A, w0, n, h, m, T, buf, tbuf)
                    if k + c > len(ids):
                        grown = np.empty(max(2 * len(ids), k + c), dtype=np.int32)
                        grown[:k] = ids[:k]
                        ids = grown
                    for j in range(c):
                        f = _lookup(table, buf[j])
                        if f >= 0:
                            ids[k] = f
                            k += 1
                r += 1
                indptr[r] = k
    return indptr, ids[:k].copy()


@njit(cache=True, nogil=True)
def arc_scores(indptr, ids, w):
    """Arc scores ``theta[r] = sum_j w[ids[j]]`` over the arcs' features."""
    n = len(indptr) - 1
    theta = np.zeros(n)
    for r in range(n):
        s = 0.0
        for j in range(indptr[r], indptr[r + 1]):
            s += w[ids[j]]
        theta[r] = s
    return theta


@njit(cache=True, nogil=True)
def arc_grad_entries(indptr, ids, G):
    """``sum_r G[r] x_r`` as entries ``(cols, vals)`` (duplicates allowed;
    arcs with ``G[r] == 0`` skipped): the sparse form of :func:`arc_grad`."""
    n_out = 0
    for r in range(len(indptr) - 1):
        if G[r] != 0.0:
            n_out += indptr[r + 1] - indptr[r]
    cols = np.empty(n_out, dtype=np.int64)
    vals = np.empty(n_out)
    o = 0
    for r in range(len(indptr) - 1):
        v = G[r]
        if v != 0.0:
            for j in range(indptr[r], indptr[r + 1]):
                cols[o] = ids[j]
                vals[o] = v
                o += 1
    return cols, vals


@njit(cache=True, nogil=True)
def arc_grad(indptr, ids, G, g):
    """Add ``sum_r G[r] x_r`` to ``g`` (zero entries of ``G`` skipped)."""
    for r in range(len(indptr) - 1):
        v = G[r]
        if v != 0.0:
            for j in range(indptr[r], indptr[r + 1]):
                g[ids[j]] += v
