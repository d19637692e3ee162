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

from ._arrays import grow_rows
from ._math import _float_of_bits, prefetch

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
_HEAD_SIDE = (H, H_PREV, H_NEXT)
for _items in TEMPLATE_ITEMS:  # sentence_states relies on it
    _sides = [p in _HEAD_SIDE for p, _ in _items]
    if _sides != sorted(_sides, reverse=True):
        raise AssertionError(f"template {_items}: head-side items must come first")
del _items, _sides
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


@njit(cache=True, nogil=True, inline="always")
def _head_items(T, t):
    """Number of leading items of template ``t`` read at the head's side
    (``h``, ``h-1``, ``h+1``); the others read the modifier's side."""
    c = 0
    for j in range(T[t, 0]):
        p = T[t, 1 + 2 * j]
        if p != H and p != H_PREV and p != H_NEXT:
            break
        c += 1
    return c


@njit(cache=True, nogil=True, inline="always")
def _position(p, h, m):
    """Sentence position of the relative position ``p`` of the arc ``h -> m``."""
    return h if p == H else m if p == M else h - 1 if p == H_PREV else \
        h + 1 if p == H_NEXT else m - 1 if p == M_PREV else m + 1


@njit(cache=True, nogil=True)
def sentence_states(A, w0, n, T, S):
    """Per template and sentence position, the hash of the template's items
    on one side of an arc: the first step of every arc feature key.

    Every template reads its head-side items first (checked at import).
    ``S[t, p]`` (``p = 0..n``) is the hash state of template ``t`` after its
    head-side items with the head at ``p``; for a template without head-side
    items (it reads only the modifier's side) it is the template's whole
    plain hash with the modifier at ``p``.  The plain hash of ``t`` on the
    arc ``h -> m`` is then :func:`_plain_hash`: ``S[t, h]`` continued over
    the modifier-side items (or ``S[t, m]``).  ``S`` needs ``(T.shape[0],
    n + 1)`` entries (uint64).
    """
    for t in range(T.shape[0]):
        nh = _head_items(T, t)
        stop = T[t, 0] if nh == 0 else nh
        for p in range(n + 1):
            x = _mix(np.uint64(0), t + 1)
            for j in range(stop):
                x = _mix(x, _attr(A, w0, n, _position(T[t, 1 + 2 * j], p, p),
                                  T[t, 2 + 2 * j]))
            S[t, p] = x


@njit(cache=True, nogil=True, inline="always")
def _plain_hash(S, A, w0, n, T, t, nh, h, m):
    """Plain hash of template ``t`` (``nh`` head-side items) on the arc
    ``h -> m``, from :func:`sentence_states`."""
    if nh == 0:
        return S[t, m]
    x = S[t, h]
    for j in range(nh, T[t, 0]):
        x = _mix(x, _attr(A, w0, n, _position(T[t, 1 + 2 * j], h, m), T[t, 2 + 2 * j]))
    return x


@njit(cache=True, nogil=True, inline="always")
def _plain_key(x):
    """Key of a plain feature of hash ``x`` (non-zero, int64)."""
    return np.int64(x | np.uint64(1))


@njit(cache=True, nogil=True, inline="always")
def _dd_key(x, dd):
    """Key of the feature of hash ``x`` conjoined with direction-distance ``dd``."""
    return np.int64(_mix(x, 1000 + dd) | np.uint64(1))


@njit(cache=True, nogil=True, inline="always")
def _between_base(A, w0, n, t, attr, h, m):
    """Hash state of in-between template ``t`` (attribute ``attr``) on the arc
    ``h -> m`` before the in-between word's attribute."""
    return _mix(_mix(_mix(np.uint64(0), t + 1), _attr(A, w0, n, h, attr)),
                _attr(A, w0, n, m, attr))


@njit(cache=True, nogil=True, inline="always")
def _between_key(base, v):
    """Plain key of an in-between feature (its direction-distance key is
    ``_dd_key(np.uint64(key), dd)``)."""
    return np.int64(_mix(base, v) | np.uint64(1))


@njit(cache=True, nogil=True)
def _arc_keys_states(S, A, w0, n, h, m, T, out, tout):
    """:func:`arc_keys` from the sentence's :func:`sentence_states` ``S``."""
    dd = _dir_dist(h, m)
    nt = T.shape[0]
    k = 0
    for t in range(nt):
        x = _plain_hash(S, A, w0, n, T, t, _head_items(T, t), h, m)
        out[k] = _plain_key(x)
        out[k + 1] = _dd_key(x, dd)
        tout[k] = t
        tout[k + 1] = t + N_BASE
        k += 2
    # in-between POS, once per distinct tag, in the order of first occurrence
    lo, hi = (h, m) if h < m else (m, h)
    if hi - lo > 1:
        for bi in range(len(BETWEEN_ATTRS)):
            attr = BETWEEN_ATTRS[bi]
            t = nt + bi
            base = _between_base(A, w0, n, t, attr, h, m)
            for b in range(lo + 1, hi):
                v = _attr(A, w0, n, b, attr)
                seen = False
                for c in range(lo + 1, b):
                    if _attr(A, w0, n, c, attr) == v:
                        seen = True
                        break
                if not seen:
                    x = _between_key(base, v)
                    out[k] = x
                    out[k + 1] = _dd_key(np.uint64(x), dd)
                    tout[k] = t
                    tout[k + 1] = t + N_BASE
                    k += 2
    return k


@njit(cache=True, nogil=True)
def arc_keys(A, w0, n, h, m, T, out, tout):
    """Feature keys of the arc ``h -> m`` into ``out`` and their templates
    into ``tout``; returns their count.

    ``out`` and ``tout`` need :func:`key_buffer_size` slots.  Keys are
    non-zero 64-bit hashes stored as int64, in pairs (plain, conjoined with
    direction and distance): the templates in order, then the in-between
    templates once per distinct tag (in the order of first occurrence).
    One arc at a time (it hashes the whole sentence's
    :func:`sentence_states`): the batch kernels share those per sentence.
    """
    S = np.empty((T.shape[0], n + 1), dtype=np.uint64)
    sentence_states(A, w0, n, T, S)
    return _arc_keys_states(S, A, w0, n, h, m, T, out, tout)


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
    max_n = np.int64(0)  # a literal 0 would compile key_buffer_size once more
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        total += n * key_buffer_size(T.shape[0], n)
        max_n = max(max_n, n)
    keys = np.empty(total, dtype=np.int64)
    tmpl = np.empty(total, dtype=np.int16)
    buf = np.empty(key_buffer_size(T.shape[0], max_n), dtype=np.int64)
    tbuf = np.empty(len(buf), dtype=np.int64)
    S = np.empty((T.shape[0], max_n + 1), dtype=np.uint64)
    k = 0
    for i in range(n_sent):
        w0 = word_off[i]
        n = word_off[i + 1] - w0
        sentence_states(A, w0, n, T, S)
        for m in range(1, n + 1):
            c = _arc_keys_states(S, A, w0, n, heads[w0 + m - 1], m, T, buf, tbuf)
            for j in range(c):
                keys[k] = buf[j]
                tmpl[k] = tbuf[j]
                k += 1
    return keys[:k], tmpl[:k]


#: Slots per bucket of a table (:func:`fill_table`): 4 keys and their 4
#: values, 64 bytes, one cache line.
BUCKET = 4


@njit(cache=True, nogil=True)
def fill_table(table, keys, values):
    """Fill ``table`` (int64, zeros, ``2 * BUCKET * n_buckets`` entries,
    ``n_buckets`` a power of two, at least twice as many slots as keys, the
    data 64-byte aligned: ``feature_extraction._arcs._new_table``) with the
    distinct non-zero ``keys`` and their ``values``, as an open-addressing
    table of buckets (linear probing over buckets): bucket ``b`` holds up to
    :data:`BUCKET` keys at ``8 b .. 8 b + 3``, filled in order (empty: key
    0), and their values at ``8 b + 4 .. 8 b + 7``.  A key's home bucket is
    read from its bits above the lowest (every key is odd: with bit 0 in
    the index only the odd buckets would be homes).

    Two tables are built: the feature table (value: the feature's column id,
    ``values = arange(n)``), which the training path reads, and at predict
    the weight table (value: the bits of the feature's weight,
    ``coef.view(np.int64)``), which the fused kernel reads.  A bucket is one
    cache line holding keys and values: with 5.5 M features (EWT) the table
    is far larger than the caches and a lookup costs one cache miss (on EWT
    1.1 % of the keys sit past their home bucket and 4.8 % of the buckets
    are full), and comparing a bucket's four keys needs no branch per slot
    (:func:`_lookup_all`).
    """
    mask = len(table) // (2 * BUCKET) - 1
    for i in range(len(keys)):
        key = keys[i]
        b = np.int64((np.uint64(key) >> np.uint64(1)) & np.uint64(mask))
        while table[2 * BUCKET * b + BUCKET - 1] != 0:
            b = (b + 1) & mask
        o = 2 * BUCKET * b
        j = 0
        while table[o + j] != 0:
            j += 1
        table[o + j] = key
        table[o + BUCKET + j] = values[i]


@njit(cache=True, nogil=True, inline="always")
def _find(table, key):
    """Index in ``table`` (:func:`fill_table`) of the value of ``key``, -1 if
    absent."""
    mask = len(table) // (2 * BUCKET) - 1
    b = np.int64((np.uint64(key) >> np.uint64(1)) & np.uint64(mask))
    while True:
        o = 2 * BUCKET * b
        for j in range(BUCKET):
            k = table[o + j]
            if k == key:
                return o + BUCKET + j
            if k == 0:
                return -1
        b = (b + 1) & mask


@njit(cache=True, nogil=True)
def _template_kinds(T):
    """Per template: its head-side item count and whether it reads only one
    side of the arc (the head's or the modifier's); and the two-sided
    templates in order.  (A loop, not ``np.flatnonzero``: that would be one
    more NumPy function to compile on a first fit, 0.4 s.)"""
    nt = T.shape[0]
    nh = np.empty(nt, dtype=np.int64)
    one_side = np.empty(nt, dtype=np.bool_)
    n_pair = 0
    for t in range(nt):
        nh[t] = _head_items(T, t)
        one_side[t] = nh[t] == 0 or nh[t] == T[t, 0]
        n_pair += not one_side[t]
    pair = np.empty(n_pair, dtype=np.int64)
    n_pair = 0
    for t in range(nt):
        if not one_side[t]:
            pair[n_pair] = t
            n_pair += 1
    return nh, one_side, pair


@njit(cache=True, nogil=True, inline="always")
def _bucket(table, key):
    """Index in ``table`` of the home bucket of ``key`` (:func:`fill_table`)."""
    mask = np.uint64(len(table) // (2 * BUCKET) - 1)
    return 2 * BUCKET * np.int64((np.uint64(key) >> np.uint64(1)) & mask)


#: How many lookups ahead :func:`_lookup_all` prefetches (16 and 64 measured
#: slower than 32 on EWT; ``benchmarks/micro/bench_weight_table.py``).
PREFETCH_AHEAD = 32


@njit(cache=True, nogil=True)
def _lookup_all(table, keys, known, vals, c, missing):
    """Look up ``keys[:c]`` in ``table``: whether each is known into
    ``known``, its value (``missing`` if unknown) into ``vals`` (int64: a
    column id of the feature table, or a weight's bits in the weight
    table).  The home bucket of the key :data:`PREFETCH_AHEAD` places on is
    prefetched, so that about that many memory loads are in flight at any
    time.  A bucket's four keys are compared and its value selected without
    a branch per slot; only a full bucket without the key goes on to the
    next (see :func:`fill_table`).  (Called, not inlined with
    ``inline="always"``: the same speed, measured, and compiled once instead
    of in each caller; its callers count ``c`` from ``np.int64(0)``, as a
    literal 0 would compile it once more.)"""
    for j in range(min(PREFETCH_AHEAD, c)):
        prefetch(table, _bucket(table, keys[j]))
    for j in range(c):
        if j + PREFETCH_AHEAD < c:
            prefetch(table, _bucket(table, keys[j + PREFETCH_AHEAD]))
        key = keys[j]
        o = _bucket(table, key)
        h0 = np.int64(table[o] == key)
        h1 = np.int64(table[o + 1] == key)
        h2 = np.int64(table[o + 2] == key)
        h3 = np.int64(table[o + 3] == key)
        hit = h0 | h1 | h2 | h3
        v = (table[o + 4] & -h0) | (table[o + 5] & -h1) | (table[o + 6] & -h2) \
            | (table[o + 7] & -h3)
        if hit == 0 and table[o + 3] != 0:   # a full bucket: look further
            i = _find(table, key)
            hit = np.int64(i >= 0)
            v = table[i] if i >= 0 else 0
        known[j] = hit != 0
        vals[j] = v if hit != 0 else missing


@njit(cache=True, nogil=True)
def _modifier_values(A, w0, n, T, pair, nh, V):
    """``V[ti, m, j]``: the attribute id read by the ``j``-th modifier-side
    item of two-sided template ``pair[ti]`` with the modifier at ``m`` (it
    does not depend on the head), so that an arc's plain hash is
    ``S[t, h]`` mixed with ``V[ti, m, :]``, as in :func:`_plain_hash`."""
    for ti in range(len(pair)):
        t = pair[ti]
        for m in range(1, n + 1):
            for j in range(nh[t], T[t, 0]):
                V[ti, m, j - nh[t]] = _attr(A, w0, n, _position(T[t, 1 + 2 * j], 0, m),
                                            T[t, 2 + 2 * j])


@njit(cache=True, nogil=True)
def _one_sided_values(table, S, n, nh, one_side, dd_implies_plain, missing,
                      WP, KP, WD, keys, known, vals, src):
    """Values (weights' bits or column ids, see :func:`_lookup_all`) of the
    one-sided templates' features of a sentence, each looked up once, not
    once per arc: ``WP[t, p]`` the plain feature's with the head (or the
    modifier) at ``p`` and ``KP[t, p]`` whether it is known; ``WD[t, p,
    dd]`` its direction-distance feature's, for every ``dd`` an arc of the
    sentence has at ``p`` (``missing``: unknown, or not looked up, the plain
    feature being unknown and ``dd_implies_plain``)."""
    nt = len(one_side)
    c = np.int64(0)
    for t in range(nt):
        if one_side[t]:
            for p in range(n + 1):
                keys[c] = _plain_key(S[t, p])
                c += 1
    _lookup_all(table, keys, known, vals, c, missing)
    c = np.int64(0)
    for t in range(nt):
        if one_side[t]:
            for p in range(n + 1):
                WP[t, p] = vals[c]
                KP[t, p] = known[c]
                c += 1
    WDf = WD.reshape(-1)
    span = WD.shape[1] * 16
    need = np.zeros(16, dtype=np.bool_)
    c = np.int64(0)
    for t in range(nt):
        if not one_side[t]:
            continue
        head = nh[t] > 0
        for p in range(0 if head else 1, n + 1):   # heads 0..n, modifiers 1..n
            need[:] = False
            for q in range(1 if head else 0, n + 1):
                if q != p:
                    need[_dir_dist(p, q) if head else _dir_dist(q, p)] = True
            for dd in range(16):
                if need[dd]:
                    WDf[t * span + p * 16 + dd] = missing
                    if KP[t, p] or not dd_implies_plain:
                        keys[c] = _dd_key(S[t, p], dd)
                        src[c] = t * span + p * 16 + dd
                        c += 1
    _lookup_all(table, keys, known, vals, c, missing)
    for j in range(c):
        WDf[src[j]] = vals[j]


@njit(cache=True, nogil=True)
def _between_values(table, A, w0, n, nt, dd_implies_plain, missing,
                    tags, n_tags, keys, known, vals, src, HX, PK, PV,
                    bstart, bcount, BV):
    """Values (weights' bits or column ids, see :func:`_lookup_all`) of the known
    in-between features of every arc of a sentence: those of the arc
    ``(m - 1) * (n + 1) + h`` are ``BV[bstart[r]:bstart[r] + bcount[r]]``,
    in the order of :func:`arc_keys` (per attribute, per distinct tag in
    the order of first occurrence: plain, then direction-distance).  The
    pairs ``lo < hi`` are walked outward, one in-between word joining the
    distinct tags at a time, which the arcs ``lo -> hi`` and ``hi -> lo``
    share.  Returns ``BV`` (a larger copy when it had to grow)."""
    nb = len(BETWEEN_ATTRS)
    bcount[:n * (n + 1)] = 0
    k = np.int64(0)
    for lo in range(n - 1):
        n_tags[:] = 0
        for hi in range(lo + 2, n + 1):
            for bi in range(nb):   # word hi - 1 joins the in-between words
                v = _attr(A, w0, n, hi - 1, BETWEEN_ATTRS[bi])
                new = True
                for q in range(n_tags[bi]):
                    if tags[bi, q] == v:
                        new = False
                        break
                if new:
                    tags[bi, n_tags[bi]] = v
                    n_tags[bi] += 1
            # plain keys of both arcs, then their direction-distance keys
            c = np.int64(0)
            for side in range(2):
                h, m = (lo, hi) if side == 0 else (hi, lo)
                if m == 0:
                    continue
                for bi in range(nb):
                    base = _between_base(A, w0, n, nt + bi, BETWEEN_ATTRS[bi], h, m)
                    for q in range(n_tags[bi]):
                        x = _between_key(base, tags[bi, q])
                        HX[c] = np.uint64(x)
                        keys[c] = x
                        c += 1
            _lookup_all(table, keys, PK, PV, c, missing)
            n_plain = c
            c = np.int64(0)
            j = 0
            for side in range(2):
                h, m = (lo, hi) if side == 0 else (hi, lo)
                if m == 0:
                    continue
                dd = _dir_dist(h, m)
                for bi in range(nb):
                    for q in range(n_tags[bi]):
                        src[j] = -1
                        if PK[j] or not dd_implies_plain:
                            keys[c] = _dd_key(HX[j], dd)
                            src[j] = c
                            c += 1
                        j += 1
            _lookup_all(table, keys, known, vals, c, missing)
            if k + 2 * n_plain > len(BV):
                BV = grow_rows(BV, max(2 * len(BV), k + 2 * n_plain))
            j = 0
            for side in range(2):
                h, m = (lo, hi) if side == 0 else (hi, lo)
                if m == 0:
                    continue
                r = (m - 1) * (n + 1) + h
                bstart[r] = k
                for bi in range(nb):
                    for q in range(n_tags[bi]):
                        if PK[j]:
                            BV[k] = PV[j]
                            k += 1
                        if src[j] >= 0 and known[src[j]]:
                            BV[k] = vals[src[j]]
                            k += 1
                        j += 1
                bcount[r] = k - bstart[r]
    return BV


@njit(cache=True, nogil=True)
def _row_values(table, S, n, m, npair, pair, nmv, V, dd_implies_plain, missing,
                ddh, keys, known, vals, src, HX, DK, PK, PV, DV):
    """Values (weights' bits or column ids, see :func:`_lookup_all`) of the
    two-sided templates' features of the arcs into ``m``: with ``hh`` the
    rank of head ``h`` among the heads ``0..n`` but ``m`` (``h`` below
    ``m``, ``h - 1`` above), ``PV[ti * n + hh]`` (known: ``PK``) is the
    plain feature's of template ``pair[ti]`` on the arc ``h -> m``, ``DV``
    its direction-distance feature's (``missing``: unknown or not looked
    up); ``ddh[h]``: the direction-distance of ``h -> m``.  A template's
    hashes are computed for every head at once (``h = m`` included, not
    used): loops without branches, which vectorise; then the keys of the
    whole row are looked up (:func:`_lookup_all`), so that the loads
    overlap."""
    n1 = n + 1
    for h in range(n1):
        ddh[h] = _dir_dist(h, m)
    for ti in range(npair):
        t = pair[ti]
        o = ti * n1
        for h in range(n1):
            HX[o + h] = S[t, h]
        for j in range(nmv[ti]):
            v = V[ti, m, j]
            for h in range(n1):
                HX[o + h] = _mix(HX[o + h], v)
        for h in range(n1):
            DK[o + h] = _dd_key(HX[o + h], ddh[h])
    c = np.int64(0)
    for ti in range(npair):
        o = ti * n1
        for h in range(n1):
            if h != m:
                keys[c] = _plain_key(HX[o + h])
                c += 1
    _lookup_all(table, keys, PK, PV, c, missing)
    c = np.int64(0)
    idx = 0
    for ti in range(npair):
        o = ti * n1
        for h in range(n1):
            if h == m:
                continue
            DV[idx] = missing
            if PK[idx] or not dd_implies_plain:
                keys[c] = DK[o + h]
                src[c] = idx
                c += 1
            idx += 1
    _lookup_all(table, keys, known, vals, c, missing)
    for j in range(c):
        DV[src[j]] = vals[j]


@njit(cache=True, nogil=True)
def _arc_values(A, word_off, a, b, T, table, dd_implies_plain, ids_out):
    """The one pass over the arcs of sentences ``a..b-1`` that both the
    scores (:func:`arc_scores_direct`) and the feature ids
    (:func:`arc_feature_ids`) make: every arc's features looked up in
    ``table`` (:func:`fill_table`) in the order of :func:`arc_keys`.

    With ``ids_out`` false, ``table`` is a weight table (values: the
    weights' bits) and the result is ``(theta, indptr, ids)`` with ``theta``
    the arc scores -- the weights of the known features added in that order,
    so bit for bit :func:`arc_scores` of the ids -- and ``indptr``, ``ids``
    empty; with it true, ``table`` is a feature table (values: column ids),
    ``theta`` is empty and ``indptr``, ``ids`` are the known features'
    column ids per arc.

    What is saved is work, not features:

    * a template reading one side of the arc (10 read only the head, 10
      only the modifier) has one plain key per word and one
      direction-distance key per (word, direction-distance), each looked up
      once per sentence (:func:`_one_sided_values`);
    * with ``dd_implies_plain`` (true when a direction-distance feature is
      only kept with its plain feature: ``min_freq`` counts a plain feature
      on every gold arc its conjoined one is on, so it holds unless
      ``templates`` keeps a conjoined template without its plain one), the
      direction-distance key of an unknown plain feature is not looked up;
    * a two-sided template's modifier-side attribute ids are read once per
      word (:func:`_modifier_values`), so an arc's plain hash is its head's
      state mixed with them, without the per-item position logic;
    * the keys of a whole modifier row are computed, then looked up with a
      rolling prefetch (:func:`_row_values`): the table is far larger than
      the caches, and the loads overlap;
    * the in-between templates walk every pair ``lo < hi`` outward
      (:func:`_between_values`);
    * the scores of a row are summed for all its heads at once, template
      by template (each arc's sum still in the order of :func:`arc_keys`:
      the same floating-point additions, in a loop over the heads that
      vectorises).
    """
    nt = T.shape[0]
    nh, one_side, pair = _template_kinds(T)
    npair = len(pair)
    pidx = np.full(nt, -1, dtype=np.int64)   # template -> its index in pair
    nmv = np.empty(npair, dtype=np.int64)    # its modifier-side item count
    for ti in range(npair):
        pidx[pair[ti]] = ti
        nmv[ti] = T[pair[ti], 0] - nh[pair[ti]]
    n_arcs = 0
    max_n = np.int64(0)
    for i in range(a, b):
        n = word_off[i + 1] - word_off[i]
        n_arcs += n * (n + 1)
        max_n = max(max_n, n)
    theta = np.zeros(0 if ids_out else n_arcs)
    indptr = np.zeros(n_arcs + 1 if ids_out else 0, dtype=np.int64)
    ids = np.empty(max(16, n_arcs * 8) if ids_out else 0, dtype=np.int32)
    S = np.empty((nt, max_n + 1), dtype=np.uint64)
    V = np.zeros((max(npair, 1), max_n + 1, _MAX_ITEMS), dtype=np.int64)
    WP = np.empty((nt, max_n + 1), dtype=np.int64)
    KP = np.zeros((nt, max_n + 1), dtype=np.bool_)
    WD = np.empty((nt, max_n + 1, 16), dtype=np.int64)
    nb = len(BETWEEN_ATTRS)
    tags = np.empty((nb, max_n + 1), dtype=np.int64)
    n_tags = np.zeros(nb, dtype=np.int64)
    size = max((max_n + 1) * max(npair, 1), nt * (max_n + 1) * 16, 4 * nb * (max_n + 1))
    keys = np.empty(size, dtype=np.int64)          # a batch of lookups,
    known = np.empty(size, dtype=np.bool_)         # whether found,
    vals = np.empty(size, dtype=np.int64)    # their values,
    src = np.empty(size, dtype=np.int64)           # what each lookup is for
    HX = np.empty(size, dtype=np.uint64)           # plain hashes of a row
    PK = np.zeros(size, dtype=np.bool_)            # whether known,
    PV = np.empty(size, dtype=np.int64)      # their values,
    DV = np.empty(size, dtype=np.int64)      # direction-distance values
    hr = np.empty(max_n + 1, dtype=np.int64)       # the heads of a row,
    ddh = np.empty(max_n + 1, dtype=np.int64)      # direction-distance per head
    DK = np.empty(size, dtype=np.int64)            # direction-distance keys of a row
    rs = np.empty(max_n + 1)                       # the scores of a row
    bstart = np.empty(max_n * (max_n + 1), dtype=np.int64)
    bcount = np.zeros(max_n * (max_n + 1), dtype=np.int64)
    BV = np.empty(1024, dtype=np.int64)
    missing = np.int64(-1) if ids_out else np.int64(0)   # 0: the bits of 0.0
    r0 = np.int64(0)
    k = np.int64(0)   # ids written
    for i in range(a, b):
        w0 = word_off[i]
        n = word_off[i + 1] - w0
        sentence_states(A, w0, n, T, S)
        _modifier_values(A, w0, n, T, pair, nh, V)
        _one_sided_values(table, S, n, nh, one_side, dd_implies_plain, missing,
                          WP, KP, WD, keys, known, vals, src)
        BV = _between_values(table, A, w0, n, nt, dd_implies_plain, missing, tags,
                             n_tags, keys, known, vals, src, HX, PK, PV, bstart, bcount, BV)
        for m in range(1, n + 1):
            _row_values(table, S, n, m, npair, pair, nmv, V, dd_implies_plain, missing,
                        ddh, keys, known, vals, src, HX, DK, PK, PV, DV)
            if ids_out and k + (n + 1) * (2 * nt + 4 * nb * (n + 1)) > len(ids):
                ids = grow_rows(ids, max(2 * len(ids),
                                         k + (n + 1) * (2 * nt + 4 * nb * (n + 1))))
            if ids_out:
                hh = 0
                for h in range(n + 1):
                    ra = (m - 1) * (n + 1) + h
                    if h == m:
                        indptr[r0 + ra + 1] = k
                        continue
                    dd = ddh[h]
                    for t in range(nt):
                        if one_side[t]:
                            p = m if nh[t] == 0 else h
                            f = WP[t, p]
                            g = WD[t, p, dd]
                        else:
                            f = PV[pidx[t] * n + hh]
                            g = DV[pidx[t] * n + hh]
                        if f >= 0:
                            ids[k] = f
                            k += 1
                        if g >= 0:
                            ids[k] = g
                            k += 1
                    for q in range(bcount[ra]):
                        ids[k] = BV[bstart[ra] + q]
                        k += 1
                    indptr[r0 + ra + 1] = k
                    hh += 1
            else:
                # the scores of the row's arcs, each a sum in the order of
                # arc_keys (bit for bit arc_scores), summed for all heads at
                # once: a template's values are contiguous over the heads
                for hh in range(n):
                    hr[hh] = hh if hh < m else hh + 1
                    rs[hh] = 0.0
                for t in range(nt):   # (the values are weights' bits: _float_of_bits)
                    if one_side[t] and nh[t] == 0:   # the modifier's side
                        wp = _float_of_bits(WP[t, m])
                        for hh in range(n):
                            rs[hh] += wp
                            rs[hh] += _float_of_bits(WD[t, m, ddh[hr[hh]]])
                    elif one_side[t]:                # the head's side
                        for hh in range(n):
                            h = hr[hh]
                            rs[hh] += _float_of_bits(WP[t, h])
                            rs[hh] += _float_of_bits(WD[t, h, ddh[h]])
                    else:
                        o = pidx[t] * n
                        for hh in range(n):
                            rs[hh] += _float_of_bits(PV[o + hh])
                            rs[hh] += _float_of_bits(DV[o + hh])
                for hh in range(n):
                    ra = (m - 1) * (n + 1) + hr[hh]
                    s = rs[hh]
                    for q in range(bcount[ra]):
                        s += _float_of_bits(BV[bstart[ra] + q])
                    theta[r0 + ra] = s
        r0 += n * (n + 1)
    return theta, indptr, ids[:k].copy()


def arc_feature_ids(A, word_off, a, b, T, table, dd_implies_plain):
    """Column ids of the known features of every arc of sentences ``a..b-1``
    (``table``: the feature table, key -> column id; ``dd_implies_plain``:
    see ``_arc_values``).

    Arcs in the tree kernels' layout (per sentence an ``(n, n + 1)`` block,
    modifier-major; self-loops have no features).  Returns ``(indptr,
    ids)``: the ids of arc ``r`` (relative to the first arc of sentence
    ``a``) are ``ids[indptr[r]:indptr[r + 1]]`` (int32), in the order of
    ``arc_keys``.  (A Python function: a jitted wrapper would compile
    ``_arc_values`` once more, inlined into it.)
    """
    _, indptr, ids = _arc_values(A, word_off, a, b, T, table, dd_implies_plain, True)
    return indptr, ids


def arc_scores_direct(A, word_off, a, b, T, table, dd_implies_plain):
    """Arc scores of sentences ``a..b-1`` straight from the token attributes:
    :func:`arc_scores` of :func:`arc_feature_ids`, bit for bit, without
    materialising the features (see :func:`_arc_values`).

    The weights are read from a weight table (:func:`fill_table` with the
    weights' bits as values: the keys of the feature table that
    :func:`arc_feature_ids` reads, each beside its feature's weight), so a
    known feature costs one cache miss, not a second one into the weight
    vector.  Returns theta in the tree kernels' layout (per sentence an
    ``(n, n + 1)`` block, modifier-major; self-loops 0.0).
    """
    return _arc_values(A, word_off, a, b, T, table, dd_implies_plain, False)[0]


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
