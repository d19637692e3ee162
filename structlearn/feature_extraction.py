"""Token feature extraction for sequence models.

:class:`TokenVectorizer` turns a list of sequences into ONE sparse CSR matrix
holding the tokens of all sequences, one row per token, plus an offsets array
``tok_off`` (``tok_off[i]:tok_off[i + 1]`` are the rows of sequence ``i``).
It also records, for every output column, the *template* the column came
from, so that features can be grouped per template (e.g. for group-sparse
feature selection).

Two input forms are accepted (they cannot be mixed):

**Feature dicts** (the format of python-crfsuite / sklearn-crfsuite): ``X`` is
a list of sequences, each a list (or tuple) of per-token dicts.  A dict
``{key: value}`` yields features as follows (``key`` must be a ``str``):

==========================  ==================================  ============
value                       feature(s) produced                 value
==========================  ==================================  ============
``str`` ``v``               ``"key=v"``                         1.0
``int`` / ``float`` ``x``   ``"key"``                           ``float(x)``
``True``                    ``"key"``                           1.0
``False``                   nothing (absent)                    --
``dict`` ``{sub: w}``       features of ``{"key:sub": w}``      as for ``w``
                            (recursively)
``list``/``tuple``/``set``  one ``"key=s"`` per string ``s``    1.0 each
of strings
==========================  ==================================  ============

Notes on the conventions:

* python-crfsuite's documentation describes a string value as
  ``{"key=value": 1.0}``; its implementation actually joins key and value
  with ``":"``.  Here the documented ``"="`` is used, so ``"w[0]=the"`` reads
  unambiguously as "template ``w[0]`` has value ``the``".  A list of strings
  is treated like several string values (python-crfsuite likewise gives
  ``{"k": "a"}`` and ``{"k": ["a"]}`` the same attribute), so
  ``{"k": ["a", "b"]}`` is ``{"k=a": 1, "k=b": 1}``; a string repeated in the
  list counts once per occurrence (value 2.0 for two); python-crfsuite
  likewise passes the attribute once per occurrence.
* Nested dicts join the key path with ``":"`` as python-crfsuite does:
  ``{"k": {"sub": "v", "n": 2.0}}`` gives ``"k:sub=v"`` (1.0) and ``"k:n"``
  (2.0).
* Values equal to 0 (and ``False``) are dropped: the matrix is sparse and a
  zero feature is the same as an absent one.  A feature that only ever
  occurs with value 0 does not "occur" for ``min_freq`` and gets no column.
* The same feature name produced twice for one token (e.g. ``"k": "a"`` and
  ``"k=a": 1.0``) is summed.
* numpy scalars (``np.float64``, ``np.int32``, ``np.bool_``, ``np.str_``)
  are accepted like their Python counterparts.  ``None``, bytes, complex
  numbers, lists of non-strings and any other type are rejected with a
  ``ValueError``, as are NaN / infinite values.  python-crfsuite's alternative
  item format (a bare list of feature-name strings instead of a dict) is not
  accepted: write ``{name: 1.0}`` or ``{name: True}``.

**Template of a feature** = the *top-level* dict key it came from, whatever
the value type: ``"w[0]=the"`` belongs to template ``"w[0]"``, ``"len"`` (a
number) to ``"len"``, and ``"k:sub=v"`` (nested) to ``"k"``.  Nested dicts
and lists are therefore ways to put a whole bag of features into one group;
the number of templates is bounded by the number of distinct top-level keys.
(If two templates produce the same feature name, e.g. key ``"a=b"`` with a
number and key ``"a"`` with the string ``"b"``, they share one column, which
is assigned to the template whose name sorts first.)

**Arrays**: ``X`` is a list of 2-D numpy arrays and/or scipy.sparse matrices
of shape ``(n_tokens_i, d)`` with the same ``d``.  Column ``j`` is its own
template ``"xj"``; ``min_freq`` and ``n_features`` do not apply.

Output columns are always ordered by template: ``templates_`` is
non-decreasing, so the columns of template ``g`` form one contiguous block.
"""

import array
import numbers
import threading
from collections.abc import Mapping
from itertools import chain

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import murmurhash3_32
from sklearn.utils.validation import check_is_fitted

from ._validation import check_int, describe
from .kernels.arcs import TEMPLATES, arc_feature_ids, build_table, gold_arc_keys, template_names
from .kernels.tree_validation import validate_heads

__all__ = ["ArcVectorizer", "TokenVectorizer"]

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
    a feature name, see :func:`_names_may_collide`) maps names to columns, so
    that a pair unseen in fit whose name is known still finds its column.
    """

    def __init__(self, grow, names=None):
        super().__init__()
        self.grow = grow
        self.names = names

    def __reduce__(self):
        return (_restore_pair_table, (self.grow, dict(self), self.names))

    def unseen(self, k, inner):
        """Column of a pair missing from a fitted table (-1: none)."""
        return -1 if self.names is None else self.names.get(_name(k, inner), -1)

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
        off, mod = offsets[g], mods[g]
        out[ids] = [off + murmurhash3_32(_name(k, s), positive=True) % mod for s in inners]
    return out


class TokenVectorizer(BaseEstimator):
    """Sparse token-feature matrix, with the template of every column.

    See the module docstring for how feature dicts are turned into features
    and what a template is.

    Parameters
    ----------
    min_freq : int, default=1
        Keep only features occurring (with a non-zero value) in at least this
        many tokens of the data passed to ``fit``.  With hashing the count is
        per hashed column.  Ignored for array input.
    n_features : int or None, default=None
        ``None``: one column per distinct feature seen in fit (a vocabulary).
        An int: feature hashing with at most ``n_features`` columns, so the
        fitted vectorizer and the model built on it stay bounded however many
        distinct features there are.  Every column still belongs to exactly one
        template: each template seen in fit gets its own range of hash
        buckets (see ``hash_moduli_``); only buckets occupied in fit become
        columns.  Templates with few distinct features get the full 31-bit
        hash range (practically collision-free), the larger ones share the rest
        of the budget evenly.  ``n_features`` must be at least the number of
        templates.  Features of templates unseen in fit, and features falling
        into a bucket left empty in fit, are dropped at transform.  (Fit and
        transform still build a transient table of the distinct names in the
        data they are given, which is smaller than the dicts themselves.)
        Ignored for array input.
    dtype : numpy float dtype, default=np.float64
        dtype of the output matrix.

    Attributes
    ----------
    input_type_ : {"dict", "array"}
        Input form seen in fit.
    vocabulary_ : dict or None
        Feature name -> column (dict input without hashing), else None.
        Built on first access: the fitted vectorizer itself keeps a table of
        ``(key, value)`` pairs, which :meth:`transform` looks up in C without
        forming the names.
    feature_names_out_ : ndarray of str objects
        Name of every column (built on first access, as ``vocabulary_``).  With hashing: ``"<template>#<bucket>"``, the
        bucket being numbered within the template's range.  For arrays:
        ``"x0", "x1", ...``.
    template_names_ : list of str
        Sorted names of the templates that produced a non-zero feature in fit
        (for arrays ``"x0", "x1", ...``, one per column).  A template whose
        features were all removed by ``min_freq`` stays listed but owns no
        column (``np.bincount(templates_, minlength=len(template_names_))``
        can contain zeros).
    templates_ : ndarray of int64
        ``templates_[j]`` is the index in ``template_names_`` of column ``j``'s
        template; non-decreasing.
    hash_moduli_ : ndarray of int64 or None
        With hashing, number of hash buckets of each template; else None.
    hash_buckets_ : ndarray of int64 or None
        With hashing, the (template offset + bucket) id of each column, sorted.
    n_features_in_ : int
        Number of input columns (array input only).

    Examples
    --------
    >>> X = [[{"w": "the", "len": 3}, {"w": "cat", "len": 3, "cap": False}], []]
    >>> Xtok, tok_off = TokenVectorizer().fit_transform(X)
    >>> Xtok.shape, tok_off.tolist()
    ((2, 3), [0, 2, 2])
    """

    def __init__(self, min_freq=1, n_features=None, dtype=np.float64):
        self.min_freq = min_freq
        self.n_features = n_features
        self.dtype = dtype

    # ---------------------------------------------------------- validation
    def _check_params(self):
        check_int("min_freq", self.min_freq)
        check_int("n_features", self.n_features, allow_none=True)
        try:
            dtype = np.dtype(self.dtype)
        except TypeError:
            dtype = None
        if dtype is None or dtype.kind != "f":
            raise ValueError(f"dtype must be a numpy floating dtype, got {self.dtype!r}.")
        return dtype

    @staticmethod
    def _input_type(X):
        """'dict', 'array', or None when every sequence is an empty list/tuple
        (compatible with both); raises ValueError for anything else."""
        if isinstance(X, (str, bytes)):
            raise ValueError(
                f"X must be a list of sequences, got a {type(X).__name__}. Expected a "
                f"list whose items are sequences: lists of per-token feature dicts, or "
                f"2-D arrays / sparse matrices of shape (n_tokens, n_features).")
        if isinstance(X, np.ndarray) or sp.issparse(X):
            raise ValueError(
                f"X must be a list of sequences, got {describe(X)}. Pass a list of 2-D "
                f"arrays or sparse matrices, one (n_tokens, n_features) block per "
                f"sequence (a single sequence: [X]).")
        if isinstance(X, Mapping) or not isinstance(X, (list, tuple)):
            raise ValueError(
                f"X must be a list of sequences, got {describe(X)}. Expected a list "
                f"whose items are lists of per-token feature dicts, or 2-D arrays / "
                f"sparse matrices of shape (n_tokens, n_features).")
        if len(X) == 0:
            raise ValueError("X is empty: expected at least one sequence.")
        first_dict = first_array = None
        for i, seq in enumerate(X):
            if isinstance(seq, np.ndarray) or sp.issparse(seq):
                if first_array is None:
                    first_array = i
            elif isinstance(seq, (list, tuple)):
                if len(seq) and first_dict is None:
                    first_dict = i
            elif isinstance(seq, Mapping):
                raise ValueError(
                    f"sequence {i} (X[{i}]) is a dict; X must be a list of sequences, "
                    f"each a list of per-token feature dicts. If X is a single sequence, "
                    f"wrap it in a list: [X].")
            else:
                raise ValueError(
                    f"sequence {i} (X[{i}]) is {describe(seq)}; each sequence must be a "
                    f"list of per-token feature dicts, or a 2-D array / sparse matrix of "
                    f"shape (n_tokens, n_features).")
            if first_dict is not None and first_array is not None:
                raise ValueError(
                    f"X mixes sequences of feature dicts (e.g. sequence {first_dict}) and "
                    f"arrays / sparse matrices (e.g. sequence {first_array}); use one form "
                    f"for all sequences.")
        if first_array is not None:
            return "array"
        return "dict" if first_dict is not None else None   # None: only empty lists

    @staticmethod
    def _scan_arrays(X, n_cols=None):
        """Validate array sequences and stack them; returns (csr, tok_off)."""
        blocks = []
        lengths = np.zeros(len(X), dtype=np.int64)
        any_sparse = False
        for i, seq in enumerate(X):
            if isinstance(seq, (list, tuple)):   # empty list: a 0-token sequence
                lengths[i] = 0
                continue
            if sp.issparse(seq):
                if seq.ndim != 2:
                    raise ValueError(f"sequence {i} (X[{i}]) is {seq.ndim}-D; expected "
                                     f"a 2-D matrix (n_tokens, n_features).")
                if seq.dtype.kind not in "biuf":
                    raise ValueError(f"sequence {i} (X[{i}]) has dtype {seq.dtype}; "
                                     f"expected a real numeric dtype.")
                block = sp.csr_matrix(seq, dtype=np.float64)
                any_sparse = True
                bad = ~np.isfinite(block.data)
                if bad.any():
                    row = int(np.searchsorted(block.indptr, np.flatnonzero(bad)[0],
                                              side="right") - 1)
                    raise ValueError(f"{_where(i, row)}: the sparse matrix contains NaN "
                                     f"or infinite values.")
            else:
                if seq.ndim != 2:
                    raise ValueError(f"sequence {i} (X[{i}]) is a {seq.ndim}-D array of "
                                     f"shape {seq.shape}; expected a 2-D array (n_tokens, "
                                     f"n_features), one row per token.")
                if seq.dtype.kind not in "biuf":
                    raise ValueError(f"sequence {i} (X[{i}]) has dtype {seq.dtype}; "
                                     f"expected a real numeric dtype.")
                block = np.asarray(seq, dtype=np.float64)
                bad_rows = ~np.isfinite(block).all(axis=1)
                if bad_rows.any():
                    row = int(np.flatnonzero(bad_rows)[0])
                    raise ValueError(f"{_where(i, row)}: the array contains NaN or "
                                     f"infinite values.")
            if n_cols is None:
                n_cols = block.shape[1]
            elif block.shape[1] != n_cols:
                raise ValueError(f"sequence {i} (X[{i}]) has {block.shape[1]} columns, "
                                 f"expected {n_cols} (as the previous sequences / as in "
                                 f"fit).")
            lengths[i] = block.shape[0]
            blocks.append(block)
        if n_cols is None:   # only empty lists
            n_cols = 0
        tok_off = np.zeros(len(X) + 1, dtype=np.int64)
        np.cumsum(lengths, out=tok_off[1:])
        if not blocks:
            return sp.csr_matrix((0, n_cols), dtype=np.float64), tok_off
        if any_sparse:
            M = sp.vstack([sp.csr_matrix(b) for b in blocks], format="csr")
        else:
            M = sp.csr_matrix(np.vstack(blocks))
        M.sum_duplicates()
        M.eliminate_zeros()
        return M, tok_off

    # ----------------------------------------------------------------- fit
    def fit(self, X, y=None):
        """Learn the columns (and their templates) from ``X``.

        Parameters
        ----------
        X : list of sequences
            Lists of per-token feature dicts, or 2-D arrays / sparse matrices.
        y : ignored

        Returns
        -------
        self
        """
        self._fit(X, transform=False)
        return self

    def fit_transform(self, X, y=None):
        """Fit, then return ``(Xtok, tok_off)`` for ``X`` (one scan of ``X``).

        Returns
        -------
        Xtok : scipy.sparse.csr_matrix of shape (n_tokens_total, n_columns)
        tok_off : ndarray of int64, shape (len(X) + 1,)
        """
        return self._fit(X, transform=True)

    def _fit(self, X, transform, raw=False):
        dtype = self._check_params()
        kind = self._input_type(X) or "dict"
        hash_moduli = hash_buckets = columns = names = None
        if kind == "array":
            M, tok_off = self._scan_arrays(X)
            d = M.shape[1]
            if d == 0:
                raise ValueError("X has no columns (or only empty sequences): no "
                                 "features to learn.")
            template_names = [f"x{j}" for j in range(d)]
            templates = np.arange(d, dtype=np.int64)
            names = np.array(template_names, dtype=object)
            state = dict(n_features_in_=d)
            if M.dtype != dtype:
                M = M.astype(dtype)
            enc = _Encoded(M.indptr, M.indices, M.data, tok_off, d)
        else:
            table = _PairTable(grow=True)
            codes, nz_pos, nz_val, indptr, tok_off = _scan(X, table)
            by_tmpl = _by_template(table)
            if not by_tmpl:
                raise ValueError("X contains no features (no token has a non-zero "
                                 "feature): nothing to learn.")
            cand_tmpl = sorted(by_tmpl)
            n_codes = len(table)
            col_of_code = np.full(n_codes, -1, dtype=np.int64)
            unique = False
            vocab = None
            if self.n_features is None:
                if _names_may_collide(by_tmpl):
                    # column identity = feature name, columns ordered by
                    # (template, name); a name produced by several templates
                    # goes to the first of them in sorted order.
                    vocab = {}
                    cand_group = []
                    for g, k in enumerate(cand_tmpl):
                        inners, ids = by_tmpl[k]
                        for name, p in sorted(zip([_name(k, s) for s in inners], ids)):
                            c = vocab.get(name)
                            if c is None:
                                c = vocab[name] = len(cand_group)
                                cand_group.append(g)
                            col_of_code[p] = c
                    cand_group = np.asarray(cand_group, dtype=np.int64)
                else:
                    # one column per pair, without building the names: within
                    # a template, the numeric feature "k" sorts before "k=..."
                    # and "k=a" before "k=b" exactly as their values do.
                    unique = True
                    sizes = []
                    start = 0
                    for k in cand_tmpl:
                        ids = _sorted_ids(*by_tmpl.pop(k))
                        col_of_code[ids] = np.arange(start, start + len(ids))
                        start += len(ids)
                        sizes.append(len(ids))
                    cand_group = np.repeat(np.arange(len(cand_tmpl), dtype=np.int64), sizes)
                # aliases share the id of their canonical pair: nothing to map
            else:
                if self.n_features < len(cand_tmpl):
                    raise ValueError(
                        f"n_features={self.n_features} is smaller than the number of "
                        f"templates seen in fit ({len(cand_tmpl)}); every template needs "
                        f"at least one column.")
                gid = {k: g for g, k in enumerate(cand_tmpl)}
                counts = np.array([len({_name(k, s) for s in by_tmpl[k][0]})
                                   for k in cand_tmpl], dtype=np.int64)
                mods = _water_fill(counts, int(self.n_features))
                offsets = np.concatenate(([0], np.cumsum(mods)))
                virt = _virtual_ids(by_tmpl, n_codes, gid, mods, offsets)
                used = virt >= 0
                cand_virt, col_of_code[used] = np.unique(virt[used], return_inverse=True)
                cand_group = np.searchsorted(offsets, cand_virt, side="right") - 1
            del by_tmpl
            n_cand = len(cand_group)
            indptr, indices, data = _assemble(col_of_code, codes, nz_pos, nz_val, indptr,
                                              n_cand, dtype, binary_ok=raw and unique)
            del codes
            counts = np.zeros(n_cand, dtype=np.int64)   # (bincount casts to intp: in blocks)
            for a in range(0, len(indices), _BLOCK):
                counts += np.bincount(indices[a:a + _BLOCK], minlength=n_cand)
            keep = counts >= self.min_freq
            del counts
            if not keep.any():
                raise ValueError(f"no feature occurs in at least min_freq={self.min_freq} "
                                 f"tokens; lower min_freq.")
            new_col = np.arange(n_cand, dtype=np.int64)
            if not keep.all():
                new_col = np.cumsum(keep) - 1
                new_col[~keep] = -1
                ent = keep[indices]
                cum = np.concatenate(([0], np.cumsum(ent)))
                indices = new_col[indices[ent]].astype(indices.dtype)
                indptr = cum[indptr].astype(indptr.dtype)
                if data is not None:
                    data = data[ent]
                del ent
            enc = _Encoded(indptr, indices, data, tok_off, int(keep.sum()))
            templates = cand_group[keep]
            template_names = list(cand_tmpl)
            if self.n_features is None:
                col_of_code = np.append(new_col, -1)[col_of_code]
                columns = _column_table(table, col_of_code, template_names)
                if vocab is not None:     # names shared by several pairs
                    columns.names = {name: int(new_col[c]) for name, c in vocab.items()
                                     if new_col[c] >= 0}
                    del vocab
            else:
                hash_moduli = mods
                hash_buckets = cand_virt[keep]
                local = hash_buckets - offsets[templates]
                names = np.array([f"{template_names[g]}#{b}"
                                  for g, b in zip(templates.tolist(), local.tolist())],
                                 dtype=object)
            del table
            state = {}
        # everything succeeded: only now touch the estimator's state
        for attr in ("n_features_in_",):
            if attr in self.__dict__:
                delattr(self, attr)
        self.input_type_ = kind
        self._columns = columns
        self._feature_names = names
        self._vocabulary = None
        self.template_names_ = template_names
        self.templates_ = np.asarray(templates, dtype=np.int64)
        self.hash_moduli_ = hash_moduli
        self.hash_buckets_ = hash_buckets
        for attr, value in state.items():
            setattr(self, attr, value)
        if not transform:
            return None
        return enc if raw else enc.csr(dtype)

    # ------------------------------------------------------ column names
    @property
    def vocabulary_(self):
        """dict or None: feature name -> column (dict input without hashing),
        else None.  Built from the fitted pair table on first access."""
        check_is_fitted(self, "templates_")
        if self._columns is None:
            return None
        if self._vocabulary is None:
            self._vocabulary = {name: j for j, name in enumerate(self.feature_names_out_)}
            for (k, s), j in self._columns.items():      # names shared by two pairs
                if type(s) is str or type(s) is tuple:
                    self._vocabulary.setdefault(_name(k, s), j)
        return self._vocabulary

    @property
    def feature_names_out_(self):
        """ndarray of str objects: the name of every column (see the class
        docstring).  Built from the fitted pair table on first access."""
        check_is_fitted(self, "templates_")
        if self._feature_names is None:
            names = np.empty(len(self.templates_), dtype=object)
            for (k, s), j in self._columns.items():
                if type(s) is str or type(s) is tuple:
                    names[j] = _name(k, s)
            self._feature_names = names
        return self._feature_names

    # ----------------------------------------------------------- transform
    def transform(self, X):
        """Encode ``X`` with the columns learnt in fit.

        Features unseen in fit (or of templates unseen in fit) are dropped.

        Returns
        -------
        Xtok : scipy.sparse.csr_matrix of shape (n_tokens_total, n_columns)
        tok_off : ndarray of int64, shape (len(X) + 1,)
            Rows ``tok_off[i]:tok_off[i + 1]`` of ``Xtok`` are sequence ``i``.
        """
        dtype = self._check_params()
        return self._transform(X).csr(dtype)

    def _transform(self, X, raw=False):
        """:meth:`transform` as :class:`_Encoded` parts; with ``raw`` the
        entries may be unsorted within a row and ``data`` is None when every
        value is 1 (what the support kernels read)."""
        check_is_fitted(self, "templates_")
        dtype = self._check_params()
        kind = self._input_type(X) or self.input_type_
        if kind != self.input_type_:
            raise ValueError(
                f"X holds {'arrays' if kind == 'array' else 'feature dicts'} but the "
                f"vectorizer was fitted on "
                f"{'arrays' if self.input_type_ == 'array' else 'feature dicts'}.")
        n_cols = len(self.templates_)
        if kind == "array":
            M, tok_off = self._scan_arrays(X, n_cols=self.n_features_in_)
            if M.shape[1] != self.n_features_in_:   # only empty sequences
                M = sp.csr_matrix((M.shape[0], self.n_features_in_))
            M = M.astype(dtype, copy=False)
            return _Encoded(M.indptr, M.indices, M.data, tok_off, n_cols)
        if self._columns is not None:
            codes, nz_pos, nz_val, indptr, tok_off = _scan(X, self._columns)
            col_of_code = None
        else:
            table = _PairTable(grow=True)
            codes, nz_pos, nz_val, indptr, tok_off = _scan(X, table)
            gid = {k: g for g, k in enumerate(self.template_names_)}
            mods = self.hash_moduli_
            offsets = np.concatenate(([0], np.cumsum(mods)))
            virt = _virtual_ids(_by_template(table), len(table), gid, mods, offsets)
            del table
            pos = np.minimum(np.searchsorted(self.hash_buckets_, virt), n_cols - 1)
            col_of_code = np.where((virt >= 0) & (self.hash_buckets_[pos] == virt), pos, -1)
        indptr, indices, data = _assemble(col_of_code, codes, nz_pos, nz_val, indptr, n_cols,
                                          dtype, binary_ok=raw and col_of_code is None)
        return _Encoded(indptr, indices, data, tok_off, n_cols)

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns (see ``feature_names_out_``)."""
        check_is_fitted(self, "templates_")
        return self.feature_names_out_.copy()

    def _item_column(self, k, v):
        """Column of the feature of the dict item ``k: v`` (-1: none; dict
        input without hashing), or None when the value expands into several
        features (a dict or a list)."""
        table = self._columns
        if isinstance(v, str):
            pair = (k, str(v))
        elif isinstance(v, (numbers.Real, np.bool_)):
            pair = (k, _NUM)
        else:
            return None
        c = table.get(pair)
        return table.unseen(*pair) if c is None else c


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


# ---------------------------------------------------------------- parsing
def check_sentences(X):
    """Raise a ValueError unless ``X`` is a non-empty list (or tuple) of
    sentences (a 1-D object array of them is also accepted)."""
    if isinstance(X, np.ndarray) and X.ndim == 1 and X.dtype == object:
        pass
    elif X is None or isinstance(X, (str, bytes, Mapping, np.ndarray)) or sp.issparse(X) \
            or not isinstance(X, (list, tuple)):
        raise ValueError(f"X must be a list of sentences (lists of token dicts or "
                         f"ConlluSentence objects), got {describe(X)}.")
    if len(X) == 0:
        raise ValueError("X is empty: at least one sentence is needed.")


def _sentence_tokens(sent, i):
    """The token dicts of a sentence (a list of dicts or a ConlluSentence)."""
    toks = getattr(sent, "tokens", sent)
    if isinstance(toks, (str, bytes, Mapping)) or not hasattr(toks, "__len__") or \
            sp.issparse(toks) or getattr(toks, "ndim", 1) != 1:
        raise ValueError(f"sentence {i} (X[{i}]) must be a list of token dicts or a "
                         f"ConlluSentence, got {describe(sent)}.")
    return toks


def _feats_string(feats):
    """Canonical string of a token's morphological features: a CoNLL-U
    FEATS dict (as :func:`structlearn.datasets.read_conllu` gives) or
    string, ``"_"`` when missing."""
    if feats is None:
        return "_"
    if isinstance(feats, Mapping):
        return "|".join(f"{k}={v}" for k, v in sorted(feats.items())) or "_"
    return str(feats)


def sentence_attributes(X, vocabularies=None, prefix_length=5):
    """Token attribute strings of sentences: one list per attribute of
    :data:`structlearn.kernels.arcs.ATTRIBUTES` (form lower-cased, lemma,
    UPOS, XPOS, form prefix, FEATS), plus word offsets.

    A token is a dict with at least ``"form"``; missing ``lemma``, ``upos``,
    ``xpos``, ``feats`` (or None, CoNLL-U's ``_``) read as ``"_"``.
    """
    check_sentences(X)
    cols = ([], [], [], [], [], [])
    word_off = [0]
    for i, sent in enumerate(X):
        toks = _sentence_tokens(sent, i)
        if len(toks) == 0:
            raise ValueError(f"sentence {i} is empty; a dependency tree needs at least "
                             f"one word.")
        for t, tok in enumerate(toks):
            if not isinstance(tok, Mapping):
                raise ValueError(f"sentence {i}, word {t + 1}: expected a token dict with "
                                 f"a 'form', got {describe(tok)}.")
            form = tok.get("form")
            if not isinstance(form, str):
                raise ValueError(f"sentence {i}, word {t + 1}: the token needs a str "
                                 f"'form', got {form!r}.")
            low = form.lower()
            cols[0].append(low)
            for c, key in ((1, "lemma"), (2, "upos"), (3, "xpos")):
                v = tok.get(key)
                if v is not None and not isinstance(v, str):
                    raise ValueError(f"sentence {i}, word {t + 1}: {key!r} must be a str "
                                     f"or None, got {describe(v)}.")
                cols[c].append("_" if v is None else v)
            cols[4].append(low[:prefix_length])
            feats = tok.get("feats")
            if feats is not None and not isinstance(feats, (str, Mapping)):
                raise ValueError(f"sentence {i}, word {t + 1}: 'feats' must be a dict, a "
                                 f"str or None, got {describe(feats)}.")
            cols[5].append(_feats_string(feats))
        word_off.append(len(cols[0]))
    return cols, np.asarray(word_off, dtype=np.int64)


class ArcVectorizer(BaseEstimator):
    """First-order arc features of dependency parsing (McDonald et al. 2005).

    For an arc ``h -> m``: head and modifier form (lower-cased), lemma,
    UPOS, XPOS and 5-character prefix and their conjunctions, the UPOS of
    each word between them, and the UPOS of their neighbours; every template
    also conjoined with the arc's direction and binned distance (see
    :mod:`structlearn.kernels.arcs` for the list).  Features are never
    materialised as strings: tokens become rows of attribute ids and arc
    features 64-bit hashes, looked up in a table of the features of the
    *gold* arcs of the training data (as MSTParser builds its feature set);
    features of other arcs that are not in it are ignored.

    Parameters
    ----------
    min_freq : int, default=1
        Keep features seen on at least this many gold arcs.
    prefix_length : int, default=5
    templates : list of str or None, default=None
        Names of the templates to use (see ``template_names_``; e.g. the
        ``selected_groups_`` of a
        :class:`structlearn.feature_selection.GroupLassoSelector`); None: all.
        Features of the other templates get no column.

    Attributes
    ----------
    vocabularies_ : list of dict
        Attribute value -> id (ids from 3; 0 outside the sentence, 1
        unknown, 2 root), one dict per attribute.
    n_features_ : int
    templates_ : ndarray of int16, shape (``n_features_``,)
        Template index of every feature column.
    template_names_ : list of str
    """

    def __init__(self, min_freq=1, prefix_length=5, templates=None):
        self.min_freq = min_freq
        self.prefix_length = prefix_length
        self.templates = templates

    def _check_params(self):
        check_int("min_freq", self.min_freq)
        check_int("prefix_length", self.prefix_length)
        return _template_ids(self.templates)

    def _ids(self, cols, vocabularies):
        A = np.empty((len(cols[0]), len(cols)), dtype=np.int32)
        for c, (values, vocab) in enumerate(zip(cols, vocabularies)):
            get = vocab.get
            A[:, c] = np.fromiter((get(v, 1) for v in values), dtype=np.int32,
                                  count=len(values))
        return A

    def fit(self, X, heads):
        """Learn attribute vocabularies and the feature table.

        Parameters
        ----------
        X : list of sentences (lists of token dicts, or ConlluSentence)
        heads : list of head arrays (trees: 1-based heads, 0 = root), one per
            sentence and as long as it
        """
        self._fit(X, heads)
        return self

    def fit_transform(self, X, heads):
        """Fit, then return ``transform(X)`` (one scan of ``X``)."""
        return self._fit(X, heads)

    def _fit(self, X, heads):
        allowed = self._check_params()
        cols, word_off = sentence_attributes(X, prefix_length=self.prefix_length)
        if len(heads) != len(word_off) - 1:
            raise ValueError(f"X has {len(word_off) - 1} sentences but heads has "
                             f"{len(heads)} head arrays.")
        for i, (n, h) in enumerate(zip(np.diff(word_off), heads)):
            if len(h) != n:
                raise ValueError(f"sentence {i} has {n} words but its head array has "
                                 f"{len(h)} entries.")
        flat_heads, _ = validate_heads(list(heads), single_root=False)
        vocabularies = []
        for values in cols:
            vocab = {}
            for v in values:
                if v not in vocab:
                    vocab[v] = len(vocab) + 3
            vocabularies.append(vocab)
        A = self._ids(cols, vocabularies)
        keys, tmpl = gold_arc_keys(A, word_off, flat_heads, TEMPLATES)
        order = np.argsort(keys, kind="stable")
        keys, tmpl = keys[order], tmpl[order]
        del order
        first = np.concatenate(([True], keys[1:] != keys[:-1]))
        starts = np.flatnonzero(first)
        counts = np.diff(np.append(starts, len(keys)))
        keep = counts >= self.min_freq
        if allowed is not None:
            keep &= np.isin(tmpl[starts], allowed)
        if not keep.any():
            raise ValueError(f"no arc feature occurs on at least min_freq="
                             f"{self.min_freq} gold arcs"
                             f"{'' if allowed is None else ' in the given templates'}; "
                             f"lower min_freq.")
        uniq = keys[starts[keep]]
        self.templates_ = tmpl[starts[keep]].astype(np.int16)
        del keys, tmpl
        capacity = 1 << int(np.ceil(np.log2(max(16, 2 * len(uniq)))))
        self._table = build_table(uniq, capacity)
        self.vocabularies_ = vocabularies
        self.n_features_ = len(uniq)
        self.template_names_ = template_names()
        return A, word_off

    def transform(self, X):
        """Token attribute ids ``A`` (n_words, len(ATTRIBUTES)) int32 and word
        offsets."""
        check_is_fitted(self, "vocabularies_")
        cols, word_off = sentence_attributes(X, prefix_length=self.prefix_length)
        return self._ids(cols, self.vocabularies_), word_off

    def arc_features(self, A, word_off, a, b):
        """``(indptr, ids)`` of every arc of sentences ``a..b-1`` (see
        :func:`structlearn.kernels.arcs.arc_feature_ids`)."""
        return arc_feature_ids(A, word_off, a, b, TEMPLATES, self._table)


def _template_ids(templates):
    """Indices of the arc template names ``templates`` (None: None)."""
    if templates is None:
        return None
    if isinstance(templates, str) or not hasattr(templates, "__iter__"):
        raise ValueError(f"templates must be a list of template names or None, got "
                         f"{templates!r}.")
    names = template_names()
    index = {n: t for t, n in enumerate(names)}
    templates = list(templates)
    unknown = [t for t in templates if t not in index]
    if unknown:
        raise ValueError(f"unknown arc templates {unknown[:3]!r} (of {len(unknown)}); "
                         f"valid names are structlearn.kernels.arcs.template_names(), e.g. "
                         f"{names[0]!r}.")
    if not templates:
        raise ValueError("templates is empty: at least one arc template is needed.")
    return np.array(sorted(index[t] for t in templates), dtype=np.int64)
