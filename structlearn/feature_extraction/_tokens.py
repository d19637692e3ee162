"""Token feature extraction for sequence models: :class:`TokenVectorizer`.

How feature dicts become features and what a template is: see the
``structlearn.feature_extraction`` package docstring.
"""

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_int, describe
from ._dicts import (
    _BLOCK,
    _NUM,
    _assemble,
    _by_template,
    _column_table,
    _Encoded,
    _name,
    _names_may_collide,
    _PairTable,
    _scan,
    _sorted_ids,
    _virtual_ids,
    _water_fill,
    _where,
)

__all__ = ["TokenVectorizer"]


def _first_place(X, key, value):
    """``"sequence i, position t"`` of the first token of ``X`` holding ``key``
    (with the str ``value``, alone or in a list, when it is one)."""
    for i, seq in enumerate(X):
        for t, tok in enumerate(seq):
            if isinstance(tok, Mapping) and key in tok:
                v = tok[key]
                if type(value) is not str or v == value or \
                        (isinstance(v, (list, tuple, set, frozenset)) and value in v):
                    return _where(i, t)
    return "nowhere"


def _shared_name(X, name, first, second):
    """Raise the error of two top-level keys producing one feature name."""
    (k1, s1), (k2, s2) = first, second

    def what(k, s):
        value = "a number" if type(s) is tuple else repr(s)
        return f"key {k!r} with value {value} (first at {_first_place(X, k, s)})"

    raise ValueError(
        f"two different keys produce the feature name {name!r}: {what(k1, s1)} and "
        f"{what(k2, s2)}.  Features of different keys must have different names "
        f"(they would share one column): rename one of the keys.")


class TokenVectorizer(BaseEstimator):
    """Sparse token-feature matrix, with the template of every column.

    See the ``structlearn.feature_extraction`` module docstring for how
    feature dicts are turned into features and what a template is.

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

    Notes
    -----
    :meth:`transform` returns ``(Xtok, tok_off)``: a sparse matrix of
    *tokens* (the rows of all sequences, stacked) and the offsets of the
    sequences, not a 2-D table with one row per sample; scikit-learn's
    ``set_output`` (a DataFrame with one row per input row) does not apply
    and the class has no ``set_output``.  :meth:`get_feature_names_out`
    names the columns of ``Xtok``.

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
                    # column identity = feature name within a template (a
                    # list item "k=a" and the str "a" of key k are one
                    # feature), columns ordered by (template, name); two
                    # templates producing one name are an error.
                    vocab = {}
                    owner = {}
                    cand_group = []
                    for g, k in enumerate(cand_tmpl):
                        inners, ids = by_tmpl[k]
                        for name, p, s in sorted(zip([_name(k, s) for s in inners], ids,
                                                     inners), key=lambda e: e[:2]):
                            c = vocab.get(name)
                            if c is None:
                                c = vocab[name] = len(cand_group)
                                owner[name] = (k, s)
                                cand_group.append(g)
                            elif owner[name][0] != k:
                                _shared_name(X, name, owner[name], (k, s))
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
                # distinct names per template (one per pair unless names collide)
                distinct = ((lambda k: len({_name(k, s) for s in by_tmpl[k][0]}))
                            if _names_may_collide(by_tmpl) else
                            (lambda k: len(by_tmpl[k][0])))
                counts = np.array([distinct(k) for k in cand_tmpl], dtype=np.int64)
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
                    columns.names = {(owner[name][0], name): int(new_col[c])
                                     for name, c in vocab.items() if new_col[c] >= 0}
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
        """Names of the columns of the matrix :meth:`transform` returns.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Array input only: names of the ``n_features_in_`` input
            columns, returned as the output names (the columns are kept in
            order).  None: ``"x0", "x1", ...``.  Feature dicts name their
            own features: it must be None for them.

        Returns
        -------
        ndarray of str objects
            ``feature_names_out_`` (see the class docstring), or
            ``input_features`` for array input.
        """
        check_is_fitted(self, "templates_")
        if input_features is None:
            return self.feature_names_out_.copy()
        if self.input_type_ != "array":
            raise ValueError("input_features must be None for feature-dict input: the "
                             "features are named from the dicts (key=value).")
        if isinstance(input_features, (str, bytes)):
            raise ValueError(f"input_features must be a list of {self.n_features_in_} "
                             f"column names, got the string {input_features!r}.")
        names = np.asarray(input_features, dtype=object)
        if names.ndim != 1 or len(names) != self.n_features_in_:
            raise ValueError(f"input_features should have length equal to the number of "
                             f"input columns ({self.n_features_in_}), got shape "
                             f"{names.shape}.")
        return names

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

    def _keep_columns(self, keep):
        """Keep only the columns ``keep`` (a boolean mask, dict input),
        renumbered in order: their features map to their new columns, the
        others are dropped at transform like unseen features.  In place
        (e.g. to store a sparse model's vocabulary only,
        :meth:`structlearn.SequenceTagger.sparsify`)."""
        check_is_fitted(self, "templates_")
        keep = np.asarray(keep, dtype=bool)
        n_cols = len(self.templates_)
        if self.input_type_ != "dict" or keep.shape != (n_cols,):
            raise ValueError(f"_keep_columns takes a boolean mask of the {n_cols} "
                             f"columns of a vectorizer fitted on feature dicts.")
        new_col = np.cumsum(keep) - 1
        new_col[~keep] = -1
        if self._columns is not None:
            table = self._columns
            cols = new_col.tolist()
            for pair in list(table):
                c = table[pair]
                if c >= 0:
                    if cols[c] >= 0:
                        table[pair] = cols[c]
                    else:
                        del table[pair]
            if table.names is not None:
                table.names = {name: cols[c] for name, c in table.names.items()
                               if cols[c] >= 0}
        else:
            self.hash_buckets_ = self.hash_buckets_[keep]
        if self._feature_names is not None:
            self._feature_names = self._feature_names[keep]
        self._vocabulary = None
        self.templates_ = self.templates_[keep]
        return self
