"""Feature dicts -> CSR: the scan behind :class:`TokenVectorizer`.

The per-token feature dicts (conventions in the ``structlearn.feature_extraction``
package docstring) are scanned into a table of ``(top-level key, inner
key) -> id`` pairs (:class:`_PairTable`; a C-speed scan with a Python
fallback that also produces the error messages), the ids are mapped to
columns (a vocabulary, or per-template feature hashing) and the entries
assembled into CSR parts (:class:`_Encoded`).
"""

import array
import numbers
import threading
from collections.abc import Mapping
from itertools import chain

import numpy as np
import scipy.sparse as sp
from sklearn.utils import murmurhash3_32

from .._validation import describe
from ..kernels.hashing import murmurhash3_32_many

_INF = float("inf")
#: inner-table key of the numeric / boolean feature named exactly like its
#: top-level key (the empty suffix); a tuple never equals a string value.
_NUM = ("",)
#: entries remapped at a time in :func:`_assemble`
_BLOCK = 1 << 20
#: number of buckets of a template hashed with the full 31-bit hash.
_FULL_HASH = 2 ** 31


def _where(i, t):
    return f"sequence {i}, position {t} (X[{i}][{t}])"


def _expand_value(v, suffix, i, t, path):
    """Features of a value that is not a plain str/int/float/bool.

    Returns a list of ``(inner_key, value)`` with ``inner_key = (suffix,)``,
    the name of the feature being ``top_level_key + suffix``.  ``path`` is the
    key path for error messages.
    """
    if isinstance(v, (bool, np.bool_)):
        return [((suffix,), 1.0)] if v else []
    if isinstance(v, str):
        return [((suffix + "=" + str(v),), 1.0)]
    if isinstance(v, numbers.Real):
        try:
            x = float(v)
        except (OverflowError, TypeError, ValueError):
            x = _INF
        if not (-_INF < x < _INF):
            raise ValueError(f"{_where(i, t)}: feature {path!r} has a non-finite value "
                             f"{v!r}; NaN and infinite values are not allowed.")
        return [((suffix,), x)] if x != 0.0 else []
    if isinstance(v, Mapping):
        out = []
        for sk, sv in v.items():
            if not isinstance(sk, str):
                raise ValueError(f"{_where(i, t)}: nested key {sk!r} under {path!r} is "
                                 f"{type(sk).__name__}; feature keys must be str.")
            out.extend(_expand_value(sv, suffix + ":" + sk, i, t, path + ":" + sk))
        return out
    if isinstance(v, (list, tuple, set, frozenset)):
        out = []
        for s in v:
            if not isinstance(s, str):
                raise ValueError(f"{_where(i, t)}: feature {path!r} is a "
                                 f"{type(v).__name__} containing {s!r} of type "
                                 f"{type(s).__name__}; a list/tuple/set value must hold "
                                 f"only strings.")
            out.append(((suffix + "=" + str(s),), 1.0))
        return out
    raise ValueError(f"{_where(i, t)}: feature {path!r} has a value of unsupported type "
                     f"{type(v).__name__} ({v!r}); expected str, int, float, bool, a dict "
                     f"or a list/tuple/set of str.")


class _Slow(Exception):
    """Raised by the fast scan for any entry it does not handle itself; the
    slow scan then redoes the whole input (and produces the error messages)."""


#: side table of the fast scan: (id, value) of the numeric entries whose value
#: is neither 0 nor 1, in scan order (per thread: several scans may run at once)
_SIDE = threading.local()


class _PairTable(dict):
    """``(top-level key, inner key) -> id`` of every feature (see
    :func:`_name` for inner keys), looked up in C by the fast scan.

    ``grow=True`` (fit): a new pair gets the next id (``len(self)``; ids of
    aliases leave gaps).  ``grow=False`` (transform): the values are columns
    and an unseen pair maps to -1 (dropped) without being stored.

    Besides the canonical pairs the table holds *aliases* that let the fast
    scan look numeric values up in C: ``(key, True)`` -- equal to ``(key, 1)``
    and ``(key, 1.0)`` -- maps to the id of the numeric feature ``key``
    (value 1), and ``(key, False)`` -- equal to ``(key, 0)`` -- to -1
    (a zero value is no feature).  :meth:`__missing__` handles every other
    numeric value (id in the table, value in :data:`_SIDE`) and raises
    :class:`_Slow` for anything unusual.

    ``names`` (fitted tables only, None unless two distinct pairs may share
    a feature name, see :func:`_names_may_collide`) maps ``(key, name)`` to
    columns, so that a pair unseen in fit whose name is known in its
    template still finds its column.
    """

    def __init__(self, grow, names=None):
        super().__init__()
        self.grow = grow
        self.names = names

    def __reduce__(self):
        return (_restore_pair_table, (self.grow, dict(self), self.names))

    def unseen(self, k, inner):
        """Column of a pair missing from a fitted table (-1: none)."""
        return -1 if self.names is None else self.names.get((k, _name(k, inner)), -1)

    def __missing__(self, pair):
        k, v = pair
        if type(k) is not str:
            raise _Slow
        if type(v) is str:
            if not self.grow:
                return self.unseen(k, v)
            j = self[pair] = len(self)
            return j
        if not isinstance(v, (numbers.Real, np.bool_)):
            raise _Slow
        try:
            x = float(v)
        except (OverflowError, TypeError, ValueError):
            raise _Slow from None
        if not (-_INF < x < _INF):
            raise _Slow
        if x == 0.0:
            if self.grow:
                self[pair] = -1
            return -1
        num = (k, _NUM)
        j = self.get(num)
        if j is None:
            if not self.grow:
                j = self.unseen(k, _NUM)
                if j < 0:
                    return -1
            else:
                j = self[num] = len(self)
        if x == 1.0:
            if self.grow:
                self[pair] = j
            return j
        side = _SIDE.entries
        side.append(j)
        side.append(x)
        return -2 - (len(side) // 2 - 1)


def _restore_pair_table(grow, items, names=None):
    table = _PairTable(grow, names)
    table.update(items)
    return table


def _scan_fast(X, table):
    """Entries of every token looked up in ``table`` at C speed (a miss calls
    ``table.__missing__``).  Returns ``(codes, nz_pos, nz_val, indptr,
    tok_off)`` like :func:`_scan_slow`; raises :class:`_Slow` (or TypeError,
    for a non-dict token or an unhashable value) when the slow scan is
    needed."""
    tokens = list(chain.from_iterable(X))
    tok_off = np.zeros(len(X) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, X), dtype=np.int64, count=len(X)), out=tok_off[1:])
    indptr = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)),
              out=indptr[1:])
    n_entries = int(indptr[-1])
    # ids < len(table) + 2 per entry (a pair and its alias), side codes > -2 - n
    small = len(table) + 2 * n_entries + 2 < 2 ** 31
    _SIDE.entries = side = []
    try:
        codes = np.fromiter(map(table.__getitem__,
                                chain.from_iterable(map(dict.items, tokens))),
                            dtype=np.int32 if small else np.int64, count=n_entries)
    finally:
        _SIDE.entries = None
    del tokens
    nz_pos = np.flatnonzero(codes <= -2)
    if len(nz_pos):
        side = np.asarray(side, dtype=np.float64).reshape(-1, 2)
        k = -2 - codes[nz_pos]
        codes[nz_pos] = side[k, 0].astype(codes.dtype)
        nz_val = side[k, 1]
    else:
        nz_val = np.empty(0, dtype=np.float64)
    return codes, nz_pos, nz_val, indptr, tok_off


def _scan_slow(X, table):
    """Entries of every token in Python, for any input (and the errors).

    Same contract as :func:`_scan_fast`: returns ``(codes, nz_pos, nz_val,
    indptr, tok_off)`` where ``codes`` holds the id in ``table`` of every
    entry (-1: dropped), ``indptr`` delimits the tokens' entries and
    ``tok_off`` the sequences' tokens; every entry value is 1.0 except
    ``data[nz_pos] = nz_val``.  With ``table.grow`` new pairs get new ids.
    """
    grow = table.grow
    codes = array.array("q")
    nz_pos = array.array("q")
    nz_val = array.array("d")
    indptr = array.array("q", [0])
    tok_off = array.array("q", [0])
    add = codes.append
    add_pos = nz_pos.append
    add_val = nz_val.append
    add_row = indptr.append
    get = table.get

    def lookup(pair):
        j = get(pair)
        if j is None:
            if not grow:
                return table.unseen(*pair)
            j = table[pair] = len(table)
        return j

    for i, seq in enumerate(X):
        for t, tok in enumerate(seq):
            if type(tok) is not dict and not isinstance(tok, Mapping):
                raise ValueError(
                    f"{_where(i, t)}: expected a dict of features, got "
                    f"{describe(tok)}. Every token of a dict sequence "
                    f"must be a dict {{feature_key: value}}.")
            for k, v in tok.items():
                if not isinstance(k, str):
                    raise ValueError(f"{_where(i, t)}: feature key {k!r} is "
                                     f"{type(k).__name__}; feature keys must be str.")
                tv = type(v)
                if tv is str or isinstance(v, str):
                    # str subclasses (np.str_) as their str: one pair per name
                    add(lookup((k, v if tv is str else str(v))))
                elif tv is float or tv is int:
                    if v:
                        if tv is int:
                            try:
                                v = float(v)
                            except OverflowError:
                                v = _INF
                        if not (-_INF < v < _INF):
                            raise ValueError(
                                f"{_where(i, t)}: feature {k!r} has a non-finite value "
                                f"{tok[k]!r}; NaN and infinite values are not allowed.")
                        if v != 1.0:
                            add_pos(len(codes))
                            add_val(v)
                        add(lookup((k, _NUM)))
                elif tv is bool:
                    if v:
                        add(lookup((k, _NUM)))
                else:
                    for key2, x in _expand_value(v, "", i, t, k):
                        if x != 1.0:
                            add_pos(len(codes))
                            add_val(x)
                        # "=s" (a str in a list) is the str value s
                        suffix = key2[0]
                        add(lookup((k, suffix[1:] if suffix[:1] == "=" else key2)))
            add_row(len(codes))
        tok_off.append(len(indptr) - 1)
    return (np.frombuffer(codes, dtype=np.int64), np.frombuffer(nz_pos, dtype=np.int64),
            np.frombuffer(nz_val, dtype=np.float64), np.frombuffer(indptr, dtype=np.int64),
            np.frombuffer(tok_off, dtype=np.int64).copy())


def _scan(X, table):
    """:func:`_scan_fast`, or :func:`_scan_slow` when the input needs it."""
    try:
        return _scan_fast(X, table)
    except (_Slow, TypeError):
        if table.grow:
            table.clear()
        return _scan_slow(X, table)


def _name(k, inner_key):
    """Feature name of the pair ``(k, inner_key)`` (a canonical inner key)."""
    return k + ("=" + inner_key if type(inner_key) is str else inner_key[0])


def _by_template(table):
    """``{top-level key: (inner keys, ids)}`` of the canonical features (two
    lists per template: no tuple per feature)."""
    out = {}
    for (k, s), p in table.items():
        if p >= 0 and (type(s) is str or type(s) is tuple):
            entries = out.get(k)
            if entries is None:
                entries = out[k] = ([], [])
            entries[0].append(s)
            entries[1].append(p)
    return out


def _names_may_collide(by_tmpl):
    """Whether two distinct pairs might share a feature name (see the module
    docstring); False guarantees one column per pair."""
    keys = set(by_tmpl)
    for k, (inners, _) in by_tmpl.items():
        if any(type(s) is tuple and s != _NUM for s in inners):
            return True      # expanded values: "k=a" from a list and from a str
        for pos, ch in enumerate(k):
            if ch == "=" and k[:pos] in keys:
                return True
    return False


def _sorted_ids(inners, ids):
    """``ids`` in the order of their feature names, for a template whose inner
    keys are distinct str values and at most one ``_NUM``: the numeric
    feature ``"k"`` sorts before every ``"k=..."``, and ``"k=a"`` before
    ``"k=b"`` exactly as the values do (no name is built)."""
    num, strs, str_ids = [], [], []
    for s, p in zip(inners, ids):
        if type(s) is str:
            strs.append(s)
            str_ids.append(p)
        else:
            num.append(p)
    order = np.argsort(np.array(strs, dtype=object), kind="stable")
    return np.concatenate([np.asarray(num, dtype=np.int64),
                           np.asarray(str_ids, dtype=np.int64)[order]])


def _assemble(col_of_code, codes, nz_pos, nz_val, indptr, n_cols, dtype=np.float64,
              binary_ok=False):
    """CSR parts ``(indptr, indices, data)`` of the scanned entries.

    ``col_of_code`` maps the codes to columns (None: the codes are columns);
    entries mapped to -1 are dropped.  Duplicates are summed and indices
    sorted when ``binary_ok`` is False (a canonical CSR) -- otherwise the
    entries keep their scan order and ``data`` is None when every value is 1
    (the support kernels need neither sorted indices nor all-ones values;
    duplicates can only come from :func:`_names_may_collide` cases and
    expanded values, which then take the canonical route anyway).
    """
    n_rows = len(indptr) - 1
    index_dtype = np.int32 if max(n_cols, len(codes)) < 2 ** 31 - 1 else np.int64
    if col_of_code is not None:
        # in place, a block at a time (the codes are the scan's largest
        # buffer); the code -1 indexes the last entry of the map, which is -1
        if not codes.flags.writeable:
            codes = codes.copy()
        lut = np.append(np.asarray(col_of_code, dtype=codes.dtype), -1)
        for a in range(0, len(codes), _BLOCK):
            codes[a:a + _BLOCK] = lut[codes[a:a + _BLOCK]]
    idx = codes.astype(index_dtype, copy=False)
    del codes
    data = None
    if len(nz_pos) or not binary_ok:
        data = np.ones(len(idx), dtype=dtype)
        data[nz_pos] = nz_val
    keep = idx >= 0
    if not keep.all():
        cum = np.concatenate(([0], np.cumsum(keep)))
        indptr = cum[indptr]
        idx = idx[keep]
        if data is not None:
            data = data[keep]
    del keep
    indptr = indptr.astype(index_dtype)
    if data is None:
        return indptr, idx, None
    M = sp.csr_matrix((data, idx, indptr), shape=(n_rows, n_cols))
    M.sum_duplicates()
    M.eliminate_zeros()
    return M.indptr, M.indices, M.data


def _water_fill(counts, budget):
    """Bucket count of every template for feature hashing.

    ``counts[g]`` is the number of distinct features of template ``g`` seen in
    fit.  Templates with at most the water level ``L`` distinct features are
    hashed with the full 31-bit hash (they cannot produce more than
    ``counts[g]`` columns anyway, and collisions are then negligible); the
    remaining budget is split evenly among the larger templates, each getting
    ``L`` or ``L + 1`` buckets.  The total number of columns is thus at most
    ``budget``.
    """
    n = len(counts)
    mods = np.empty(n, dtype=np.int64)
    remaining, m = budget, n
    order = np.argsort(counts, kind="stable")
    for rank, g in enumerate(order):
        c = int(counts[g])
        if c <= remaining // m:
            mods[g] = _FULL_HASH
            remaining -= c
            m -= 1
            continue
        rest = order[rank:]
        level, extra = divmod(remaining, m)
        mods[rest] = level
        mods[rest[:extra]] += 1
        break
    return mods


def _virtual_ids(by_tmpl, n_codes, gid, mods, offsets):
    """Hashed id (template offset + bucket) of every id of the table; -1
    for templates not in ``gid`` (and unused ids)."""
    out = np.full(n_codes, -1, dtype=np.int64)
    mods = mods.tolist()
    offsets = offsets.tolist()
    for k, (inners, ids) in by_tmpl.items():
        g = gid.get(k)
        if g is None:
            continue
        out[ids] = _hash_names(k, inners, offsets[g], mods[g])
    return out


def _utf8(text):
    """The UTF-8 bytes a name is hashed from; a lone surrogate (a str no
    encoding accepts, e.g. from ``bytes.decode(errors='surrogateescape')``)
    is kept as its own code units rather than failing, so every str hashes
    and every other str hashes exactly as scikit-learn's ``murmurhash3_32``
    hashes it."""
    return text.encode("utf-8", "surrogatepass")


def _hash_names(k, inners, offset, mod):
    """``offset + murmurhash3_32(_name(k, s), positive=True) % mod`` for
    every inner key ``s`` of template ``k``, hashed in one Numba call: the
    names ``k=s`` of the string values are one joined buffer
    (``sep.join``, no string per name), the few others are built one by
    one."""
    out = np.empty(len(inners), dtype=np.int64)
    sep = k + "="
    try:
        joined = sep + sep.join(inners)    # every inner key a str: the common case
        strs, values = None, inners
    except TypeError:   # numeric features and expanded values: their names by hand
        strs = [i for i, s in enumerate(inners) if type(s) is str]
        rest = np.setdiff1d(np.arange(len(inners)), strs)
        out[rest] = [offset + murmurhash3_32(_utf8(_name(k, inners[i])), positive=True) % mod
                     for i in rest.tolist()]
        values = [inners[i] for i in strs]
        if not values:
            return out
        joined = sep + sep.join(values)
    if joined.isascii():
        lens = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        sep_len = len(sep)
    else:
        lens = np.fromiter(map(len, map(_utf8, values)), dtype=np.int64,
                           count=len(values))
        sep_len = len(_utf8(sep))
    bounds = np.empty(len(values) + 1, dtype=np.int64)
    bounds[0] = 0
    np.cumsum(lens + sep_len, out=bounds[1:])
    buf = np.frombuffer(_utf8(joined), dtype=np.uint8)
    hashed = murmurhash3_32_many(buf, bounds, 0, offset, mod)
    if strs is None:
        return hashed
    out[strs] = hashed
    return out


class _Encoded:
    """CSR parts of an encoded batch: ``indptr``, ``indices``, ``data`` (None:
    every value is 1), the sequence offsets ``tok_off`` and the number of
    columns."""

    def __init__(self, indptr, indices, data, tok_off, n_cols):
        self.indptr, self.indices, self.data = indptr, indices, data
        self.tok_off, self.n_cols = tok_off, n_cols

    def csr(self, dtype=np.float64):
        """``(csr_matrix, tok_off)``, the public output form."""
        data = np.ones(len(self.indices), dtype=dtype) if self.data is None else self.data
        M = sp.csr_matrix((data, self.indices, self.indptr),
                          shape=(len(self.indptr) - 1, self.n_cols))
        if not M.has_canonical_format:
            M.sum_duplicates()
        if M.dtype != dtype:
            M = M.astype(dtype)
        return M, self.tok_off


def _column_table(table, col_of_code, template_names):
    """Turn the fit table into the fitted ``_PairTable(grow=False)``, in
    place: every pair (canonical or alias) with a column keeps it, the others
    are removed, and ``(key, False) -> -1`` aliases are added."""
    cols = np.append(col_of_code, -1).tolist()     # the -1 of zero aliases stays -1
    for pair, p in table.items():                 # values only: the size is unchanged
        table[pair] = cols[p]
    del cols
    for pair in [pair for pair, c in table.items() if c < 0]:
        del table[pair]
    for k in template_names:
        table[(k, False)] = -1
    table.grow = False
    return table
