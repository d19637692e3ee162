"""Streamed template selection for linear chains: the features of a few
hundred sequences at a time, hashed on the fly (Martins et al. 2011's
point that a feature needs no weight until it fires)."""

from itertools import chain

import numpy as np

from ..feature_extraction._dicts import _NUM, _by_template, _PairTable, _scan
from ..kernels.linear import chain_assemble_scores, chain_reduce_grad
from ..kernels.selection import stream_scores, stream_step, token_pair_keys
from ..structures.chain import Chain

__all__ = ["StreamedChainProblem"]

#: sequences whose features are extracted at a time
CHUNK_SEQUENCES = 256


class NotStreamable(Exception):
    """The input cannot be streamed with the same features as the
    vectorizer would give (see :meth:`StreamedChainProblem.count`)."""


class _Batch:
    """The hashed features of a few sequences: per token the entries
    ``indptr[t]:indptr[t + 1]`` with their feature hash ``efh``, template
    ``etmpl`` and value ``eval_`` (empty: all 1); ``tok_off`` per sequence."""

    __slots__ = ("indptr", "efh", "etmpl", "eval_", "tok_off")


class StreamedChainProblem:
    """The training problem of a linear chain on feature dicts, with the
    features extracted as the steps need them.

    The features are those of :class:`~structlearn.feature_extraction.TokenVectorizer`
    (the same scan of the dicts, ``feature_extraction._dicts._scan``,
    run on ``CHUNK_SEQUENCES`` sequences at a time), each identified by
    the 64-bit hash of its ``(template, inner key)`` pair instead of a
    vocabulary column; a feature's weights are ``HashedAtomWeights`` rows,
    made when it first gets a non-zero update.  One counting pass
    (:meth:`count`) finds the templates, and the (feature, label) pairs of
    the model's support as a sorted array of 64-bit keys per template (8
    bytes a pair, against the vectorizer's vocabulary, token matrix and
    dense weights): the streamed model has the parameters of the
    materialised one, so it takes the same steps.

    Parameters
    ----------
    X : list of sequences of feature dicts
        The non-empty training sequences (``len(X[i]) == tok_off[i + 1] -
        tok_off[i]``).
    y : int64 array
        Flat label codes of their tokens (< 0: partial, see
        ``estimators._tagging.label_codes``).
    tok_off : int64 array
    n_labels : int
    loss : Loss
    label_sets, allowed
        Of the :class:`~structlearn.structures.Chain` structures.
    fit_intercept, transitions : bool
    observed : bool
        ``feature_support='observed'``: the (feature, label) pairs seen on
        labelled tokens; else all of them.
    """

    def __init__(self, X, y, tok_off, n_labels, loss, label_sets=None, allowed=None,
                 fit_intercept=True, transitions=True, observed=True):
        self.X = X
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.pos_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        self.n_samples = len(self.pos_off) - 1
        self.n_labels = K = int(n_labels)
        self.loss = loss
        self.label_sets = label_sets
        self.allowed = allowed
        self.fit_intercept = fit_intercept
        self.transitions = transitions
        self.observed = observed
        self.partial = bool(len(self.y) and self.y.min() < 0)
        #: transitions (K * K), start, end (K each), bias (K): never penalised
        self.n_dense = K * K + 2 * K + (K if fit_intercept else 0)
        self._tid = {}
        self.template_names = None

    # ---------------------------------------------------------- extraction
    def _extract(self, seqs, grow):
        """The hashed features of ``seqs`` (:class:`_Batch`); with ``grow``
        new templates get ids (the counting pass)."""
        tokens = list(chain.from_iterable(seqs))
        if set(map(type, tokens)) <= {dict}:
            keys = set(chain.from_iterable(tokens))
            values = set(map(type, chain.from_iterable(map(dict.values, tokens))))
            if values <= {str} and set(map(type, keys)) <= {str}:
                return self._extract_str(seqs, tokens, keys, grow)
        return self._extract_any(seqs, grow)

    def _extract_str(self, seqs, tokens, keys, grow):
        """:meth:`_extract` when every value is a str: the feature of the
        item ``k: v`` is the pair ``(k, v)`` with value 1 (the vectorizer's
        rule for a str), hashed at C speed without a table of pairs."""
        tid = self._tid
        new = keys.difference(tid)
        if new and grow:
            for k in sorted(new):
                tid[k] = len(tid)
        elif new:       # (not possible: the counting pass saw every key)
            return self._extract_any(seqs, grow)
        lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        n = int(lens.sum())
        b = _Batch()
        b.indptr = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
        b.efh = np.fromiter(map(hash, chain.from_iterable(map(dict.items, tokens))),
                            dtype=np.int64, count=n)
        b.etmpl = np.fromiter(map(tid.__getitem__, chain.from_iterable(tokens)),
                              dtype=np.int64, count=n)
        b.eval_ = np.empty(0)
        b.tok_off = np.concatenate(([0], np.cumsum([len(x) for x in seqs]))).astype(np.int64)
        return b

    def _extract_any(self, seqs, grow):
        """:meth:`_extract` for any feature dicts: the vectorizer's scan
        (``feature_extraction._dicts._scan``) on a table of
        the pairs of these sequences only."""
        table = _PairTable(grow=True)
        codes, nz_pos, nz_val, indptr, tok_off = _scan(seqs, table)
        n_ids = len(table) + 1
        fh_of = np.zeros(n_ids, dtype=np.int64)
        tmpl_of = np.full(n_ids, -1, dtype=np.int64)
        tid = self._tid
        for k, (inners, ids) in _by_template(table).items():
            if any(type(s) is tuple and s != _NUM for s in inners):
                raise NotStreamable("a nested dict value")
            g = tid.get(k)
            if g is None:
                if not grow:
                    continue
                g = tid[k] = len(tid)
            ids = np.asarray(ids, dtype=np.int64)
            fh_of[ids] = [hash((k, s)) for s in inners]
            tmpl_of[ids] = g
        del table
        codes = np.asarray(codes, dtype=np.int64)
        tm = np.where(codes >= 0, tmpl_of[codes], -1)
        keep = tm >= 0
        b = _Batch()
        if len(nz_pos):
            vals = np.ones(len(codes))
            vals[nz_pos] = nz_val
            b.eval_ = np.ascontiguousarray(vals[keep])
        else:
            b.eval_ = np.empty(0)
        cum = np.concatenate(([0], np.cumsum(keep)))
        b.indptr = cum[indptr].astype(np.int64)
        b.efh = np.ascontiguousarray(fh_of[codes[keep]])
        b.etmpl = np.ascontiguousarray(tm[keep])
        b.tok_off = np.asarray(tok_off, dtype=np.int64)
        return b

    def _chunks(self, order):
        for a in range(0, len(order), CHUNK_SEQUENCES):
            idx = order[a:a + CHUNK_SEQUENCES]
            yield idx, [self.X[i] for i in idx]

    def count(self):
        """The counting pass: the templates (sorted names, as the
        vectorizer's ``template_names_``), and per template the sorted keys
        of its (feature, label) pairs in the support (``sup_ptr``,
        ``sup_keys``; with ``observed=False``, of its features) and its
        number of weights (``template_sizes``).

        Raises ``NotStreamable`` when two distinct features could
        share a name (nested dict values, or a key ``"a=b"`` beside a key
        ``"a"``), which the vectorizer merges into one column."""
        parts = {}
        merged = {}
        for idx, seqs in self._chunks(np.arange(self.n_samples)):
            b = self._extract(seqs, grow=True)
            if self.observed:
                labels = np.concatenate([self.y[self.pos_off[i]:self.pos_off[i + 1]]
                                         for i in idx])
                keys = np.empty(len(b.efh), dtype=np.int64)
                token_pair_keys(b.indptr, b.efh, labels, keys)
                lab = np.repeat(labels >= 0, np.diff(b.indptr))
                keys, tm = keys[lab], b.etmpl[lab]
            else:
                keys, tm = b.efh, b.etmpl
            order = np.argsort(tm, kind="stable")
            tm, keys = tm[order], keys[order]
            bounds = np.flatnonzero(np.diff(tm)) + 1
            for g, ks in zip(tm[np.concatenate(([0], bounds))] if len(tm) else [],
                             np.split(keys, bounds)):
                g = int(g)
                lst = parts.setdefault(g, [])
                lst.append(np.unique(ks))
                if sum(map(len, lst)) > 2 * len(merged.get(g, ())) + (1 << 16):
                    merged[g] = np.unique(np.concatenate([merged.get(g, np.empty(0, np.int64))]
                                                         + lst))
                    lst.clear()
        names = list(self._tid)
        keyset = set(names)
        for k in names:
            for pos, ch in enumerate(k):
                if ch == "=" and k[:pos] in keyset:
                    raise NotStreamable(f"keys {k[:pos]!r} and {k!r}")
        order = sorted(range(len(names)), key=names.__getitem__)
        self.template_names = [names[g] for g in order]
        new_id = np.empty(len(names), dtype=np.int64)
        new_id[order] = np.arange(len(names))
        self._tid = {k: int(new_id[g]) for k, g in self._tid.items()}
        sizes = np.zeros(len(names), dtype=np.int64)
        keys = []
        for g in order:
            ks = np.unique(np.concatenate([merged.get(g, np.empty(0, np.int64))]
                                          + parts.get(g, [])))
            parts.pop(g, None)
            merged.pop(g, None)
            sizes[new_id[g]] = len(ks) if self.observed else len(ks) * self.n_labels
            keys.append(ks if self.observed else ks[:0])
        self.n_atoms = len(names)
        self.template_sizes = sizes
        self.sup_ptr = np.concatenate(([0], np.cumsum([len(k) for k in keys]))).astype(np.int64)
        self.sup_keys = np.concatenate(keys) if keys else np.empty(0, np.int64)
        return self

    # --------------------------------------------------------------- steps
    def steps(self, orders, weights):
        """For every example of the ``orders`` (one per epoch) in turn, a
        function ``step(eta)`` taking its gradient step on ``weights``; the
        features are extracted a chunk of the order at a time."""
        for order in orders:
            for idx, seqs in self._chunks(order):
                b = self._extract(seqs, grow=False)
                for j, i in enumerate(idx):
                    yield _Step(self, b, j, int(i), weights)

    def _step(self, b, j, i, w, eta):
        K = self.n_labels
        t0, t1 = b.tok_off[j], b.tok_off[j + 1]
        L = int(t1 - t0)
        indptr = b.indptr[t0:t1 + 1]
        w.reserve(indptr[-1] - indptr[0])
        U = np.empty((L, K))
        stream_scores(indptr, b.efh, b.eval_, b.etmpl, w.keys, w.slot_row, w.W, w.scale, U)
        dense = w.dense
        trans = dense[:K * K].reshape(K, K)
        start, end = dense[K * K:K * K + K], dense[K * K + K:K * K + 2 * K]
        if self.fit_intercept:
            U += dense[K * K + 2 * K:]
        struct = Chain(K, np.array([0, L], dtype=np.int64), None, allowed=self.allowed,
                       label_sets=self.label_sets)
        theta = chain_assemble_scores(U, trans, start, end, struct.tok_off, struct.part_off)
        y = self.y[self.pos_off[i]:self.pos_off[i + 1]]
        if self.partial:
            _, G = self.loss.partial_value_and_grad(theta, y, struct)
        else:
            _, G = self.loss.value_and_grad(theta, y, struct)
        GU, gtr, gst, gen = chain_reduce_grad(np.ascontiguousarray(G, dtype=np.float64),
                                              struct.tok_off, struct.part_off, K)
        moved, w.n_rows = stream_step(indptr, b.efh, b.eval_, b.etmpl, GU, eta, w.keys,
                                      w.slot_row, w.W, w.row_fh, w.row_tmpl, w.n_rows,
                                      w.scale, w.sq, self.sup_ptr, self.sup_keys,
                                      self.observed)
        tail = [gtr.ravel(), gst, gen] + ([GU.sum(axis=0)] if self.fit_intercept else [])
        tail = np.concatenate(tail)
        if not self.transitions:
            tail[:K * K + 2 * K] = 0.0
        nz = np.flatnonzero(tail)
        dense[nz] -= eta * tail[nz]
        return bool(moved) or len(nz) > 0

    # ------------------------------------------------------------- results
    def feature_hash(self, template, inner):
        """The hash identifying the feature ``(template, inner key)`` (a str
        value, or ``_NUM`` for a number) in the weights' rows."""
        return hash((template, inner))


class _Step:
    """One example's gradient step, ``step(eta)``."""

    __slots__ = ("problem", "batch", "j", "i", "weights")

    def __init__(self, problem, batch, j, i, weights):
        self.problem, self.batch, self.j, self.i, self.weights = problem, batch, j, i, weights

    def __call__(self, eta):
        return self.problem._step(self.batch, self.j, self.i, self.weights, eta)
