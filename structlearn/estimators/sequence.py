"""Sequence tagging with a linear-chain model."""

import time
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._validation import check_row_norms, check_solution, describe
from ..feature_extraction import TokenVectorizer, _Encoded, _where
from ..kernels.linear import (
    chain_assemble_scores,
    chain_block_entries, chain_part_columns,
    chain_crf_value_grad,
    chain_reduce_grad,
    observed_support,
    narrow_dtype,
    narrow_ints,
    select_entries,
    support_entries,
    support_grad,
    support_grad_entries,
    support_param_ids,
    support_scores,
)
from ..losses import get_loss
from ..solvers import n_workers, split_concat, thread_map
from ..structures.base import RangeCaches, SupportCache
from ..structures.chain import Chain
from ._base import StructuredLinearModel

FEATURE_SUPPORTS = ("observed", "all")


def _check_label_sequences(y, n):
    """Validate y: a sequence of ``n`` label sequences; returns a list of lists."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise ValueError(f"y must be a list of label sequences, got {type(y).__name__}.")
    if len(y) != n:
        raise ValueError(f"X has {n} sequences but y has {len(y)}.")
    out = []
    for i, seq in enumerate(y):
        if isinstance(seq, (str, bytes, Mapping, set, frozenset)) or \
                not hasattr(seq, "__len__") or getattr(seq, "ndim", 1) != 1:
            raise ValueError(f"y[{i}] must be a sequence of labels (a list), got "
                             f"{describe(seq)}.")
        seq = list(seq)
        for t, lab in enumerate(seq):
            if lab is None or (isinstance(lab, (float, np.floating)) and not np.isfinite(lab)):
                raise ValueError(f"y[{i}][{t}] is {lab!r}; labels must be hashable "
                                 f"non-missing values.")
            try:
                hash(lab)
            except TypeError:
                raise ValueError(f"y[{i}][{t}] = {lab!r} is not hashable.") from None
        out.append(seq)
    return out


def _sorted_labels(labels):
    try:
        return sorted(labels)
    except TypeError:  # mixed types: a stable, documented order
        return sorted(labels, key=lambda v: (type(v).__name__, repr(v)))


#: Sequences per chunk of a full pass: bounds the memory of the flat part
#: arrays (which hold a K x K transition block per sequence).
CHUNK_SEQUENCES = 256


def _drop_empty(tok_off):
    """Offsets of the non-empty sequences (their tokens are unchanged)."""
    lengths = np.diff(tok_off)
    keep = np.flatnonzero(lengths > 0)
    return keep, np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)


class _Tokens:
    """Token features ready for the support kernels: CSR ``indptr`` and
    ``data`` (empty when every value is 1: binary features need no values)
    plus each entry's support offsets (:func:`support_entries`).  The column
    indices themselves are not kept -- the kernels only read the supports."""

    def __init__(self, indptr, data, nz_start, nz_len, sup_ptr):
        self.indptr, self.data = indptr, data
        self.nz_start, self.nz_len = nz_start, nz_len
        self.sup_ptr = sup_ptr

    @classmethod
    def from_csr(cls, X, sup_ptr):
        """From a scipy.sparse token matrix."""
        X = X.tocsr()
        return cls.from_encoded(_Encoded(X.indptr, X.indices, X.data, None, X.shape[1]),
                                sup_ptr)

    @classmethod
    def from_encoded(cls, enc, sup_ptr):
        """From the :class:`~structlearn.feature_extraction._Encoded` parts of
        a :class:`TokenVectorizer`."""
        data = enc.data
        if data is None or np.all(data == 1.0):
            data = np.empty(0, dtype=np.float64)
        nnz = len(enc.indices)
        nz_start = np.empty(nnz, dtype=np.int32 if sup_ptr[-1] < 2 ** 31 else np.int64)
        nz_len = np.empty(nnz, dtype=narrow_dtype(int(np.diff(sup_ptr).max(initial=0)) + 1))
        support_entries(enc.indices, sup_ptr, nz_start, nz_len)
        return cls(np.asarray(enc.indptr, dtype=np.int64),
                   np.ascontiguousarray(data, dtype=np.float64), nz_start, nz_len, sup_ptr)

    @property
    def n_rows(self):
        return len(self.indptr) - 1

    def select(self, rows):
        """The rows ``rows`` (copies)."""
        indptr, nz_start, nz_len, data = select_entries(
            self.indptr, self.nz_start, self.nz_len, self.data, np.asarray(rows, dtype=np.int64))
        return _Tokens(indptr, data, nz_start, nz_len, self.sup_ptr)

    def sq_norms(self):
        """``||x_t||^2`` per row."""
        if len(self.data) == 0:
            return np.diff(self.indptr).astype(np.float64)
        csum = np.concatenate([[0.0], np.cumsum(self.data ** 2)])
        return csum[self.indptr[1:]] - csum[self.indptr[:-1]]


def _checked_tokens(enc, sup_ptr):
    """:meth:`_Tokens.from_encoded`, after checking that no token's features
    are too large to compute with (their squared norm overflows)."""
    tokens = _Tokens.from_encoded(enc, sup_ptr)
    tok_off = enc.tok_off

    def where(row):
        i = int(np.searchsorted(tok_off, row, side="right") - 1)
        return _where(i, row - int(tok_off[i]))

    with np.errstate(over="ignore"):
        check_row_norms(tokens.sq_norms(), where)
    return tokens


class _ChainBatch:
    """Token rows, token offsets (from 0) and tags of a batch of non-empty
    sequences; ``indptr`` may index into larger shared arrays."""

    def __init__(self, indptr, tokens, tok_off, y, n_tags):
        self.indptr, self.tokens = indptr, tokens
        self.tok_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        self.y = y
        self.structure = Chain(n_tags, self.tok_off)

    @classmethod
    def contiguous(cls, tokens, tok_off, y, n_tags, a, b):
        """Sequences ``a..b-1`` without copying the token data."""
        t0, t1 = tok_off[a], tok_off[b]
        return cls(tokens.indptr[t0:t1 + 1], tokens, tok_off[a:b + 1] - t0,
                   None if y is None else y[t0:t1], n_tags)

    @classmethod
    def select(cls, tokens, tok_off, y, n_tags, seqs):
        """Any subset of sequences (copies their token rows)."""
        starts, ends = tok_off[seqs], tok_off[seqs + 1]
        lengths = ends - starts
        rows = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])
        off = np.concatenate([[0], np.cumsum(lengths)])
        sub = tokens.select(rows)
        return cls(sub.indptr, sub, off, None if y is None else y[rows], n_tags)


def _contiguous_chunks(tokens, tok_off, y, n_tags, n_min=1):
    """Split a batch into contiguous chunks of about CHUNK_SEQUENCES sequences."""
    n = len(tok_off) - 1
    n_chunks = max(n_min, -(-n // CHUNK_SEQUENCES))
    bounds = np.linspace(0, n, min(n_chunks, n) + 1).astype(np.int64)
    return [_ChainBatch.contiguous(tokens, tok_off, y, n_tags, a, b)
            for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class ChainProblem:
    """Training problem of a linear-chain model (see :mod:`structlearn.solvers`).

    ``z = [w (support), transitions (K*K), start (K), end (K), bias (K)]``;
    everything but the bias is penalised (the transition weights are weights
    of label-bigram features, as in CRFsuite).  A full pass runs over chunks
    of at most ``CHUNK_SEQUENCES`` sequences (bounded memory), in ``n_jobs``
    threads.  With a loss that runs the active-set solver, each chunk's
    structure carries a ``SupportCache``, so that the solves of a
    full pass start from the supports found at the previous one.  With
    ``transitions=False`` the transition, start and end weights are held at
    zero: every gradient and every set of gradient entries the problem
    returns is zero there, so that no solver moves them.
    """

    def __init__(self, X, tok_off, y, n_tags, sup_ptr, sup_label, loss,
                 fit_intercept=True, n_jobs=None, transitions=True):
        self.tokens = X if isinstance(X, _Tokens) else _Tokens.from_csr(X, sup_ptr)
        self.tok_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.K = int(n_tags)
        self.sup_ptr, self.sup_label = sup_ptr, sup_label
        self.loss, self.fit_intercept = loss, fit_intercept
        self.n_samples = len(self.tok_off) - 1
        self.n_support = int(sup_ptr[-1])
        K = self.K
        self.n_params = self.n_support + K * K + 2 * K + (K if fit_intercept else 0)
        self.penalized = np.zeros(self.n_params, dtype=bool)
        self.penalized[:self.n_support + K * K + 2 * K] = True
        #: the parameters held at zero (``transitions=False``): a slice of z
        self.frozen = slice(self.n_support, self.n_support + (0 if transitions else K * K + 2 * K))
        self.n_threads = n_workers(n_jobs, self.n_samples)
        self.chunks = _contiguous_chunks(self.tokens, self.tok_off, self.y, K,
                                         self.n_threads)
        if loss.uses_active_set(Chain):
            # The chunks persist across evaluations of full passes: each
            # active-set solve starts from the supports of the previous
            # evaluation of the same sentences (mini-batches are not cached).
            for batch in self.chunks:
                batch.structure.warm_cache = SupportCache()
        #: the warm-start caches of :meth:`pieces`, with the active set
        self.piece_caches = RangeCaches() if loss.uses_active_set(Chain) else None

    def unpack(self, z):
        K, S = self.K, self.n_support
        w = z[:S]
        trans = z[S:S + K * K].reshape(K, K)
        start = z[S + K * K:S + K * K + K]
        end = z[S + K * K + K:S + K * K + 2 * K]
        bias = z[S + K * K + 2 * K:] if self.fit_intercept else np.zeros(K)
        return w, trans, start, end, bias

    def scores(self, z, batch, scale=1.0):
        """Scores of a batch; ``scale`` multiplies the penalised weights
        (everything but the bias)."""
        w, trans, start, end, bias = self.unpack(z)
        tk = batch.tokens
        U = support_scores(batch.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label,
                           w, self.K)
        if scale != 1.0:
            U *= scale
            trans, start, end = scale * trans, scale * start, scale * end
        U += bias
        return chain_assemble_scores(U, np.ascontiguousarray(trans), start, end,
                                     batch.tok_off, batch.structure.part_off)

    def _batch_value_and_grad(self, z, batch, g):
        """Loss values of a batch; adds the gradient of their sum to ``g``."""
        theta = self.scores(z, batch)
        st = batch.structure
        vals, G = self.loss.value_and_grad(theta, batch.y, st)
        del theta
        GU, gtr, gst, gen = chain_reduce_grad(np.ascontiguousarray(G, dtype=np.float64),
                                              batch.tok_off, st.part_off, self.K)
        del G
        K, S = self.K, self.n_support
        tk = batch.tokens
        support_grad(batch.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label, GU,
                     g[:S])
        g[S:S + K * K] += gtr.ravel()
        g[S + K * K:S + K * K + K] += gst
        g[S + K * K + K:S + K * K + 2 * K] += gen
        if self.fit_intercept:
            g[S + K * K + 2 * K:] += GU.sum(axis=0)
        return vals

    def _crf_group_value_and_grad(self, z, batches):
        """:meth:`_group_value_and_grad` of the CRF loss, fused per sequence
        (:func:`~structlearn.kernels.linear.chain_crf_value_grad`: the same
        numbers as the generic path, without batch-sized score and marginal
        arrays, and with each weight beside its gradient)."""
        w, trans, start, end, bias = self.unpack(z)
        K, S = self.K, self.n_support
        wg = np.empty(2 * S)
        wg[0::2] = w
        wg[1::2] = 0.0
        rest = np.zeros(K * K + 3 * K)  # the layout of z[S:], bias last
        trans = np.ascontiguousarray(trans)
        vals = []
        for batch in batches:
            tk = batch.tokens
            vals.append(chain_crf_value_grad(batch.indptr, tk.nz_start, tk.nz_len, tk.data,
                                             self.sup_label, wg, trans, start, end, bias,
                                             batch.tok_off, batch.y, rest))
        g = np.empty(self.n_params)
        g[:S] = wg[1::2]
        g[S:] = rest[:self.n_params - S]  # without an intercept, no bias entries
        return np.concatenate(vals), g

    def params_of(self, idx):
        """Parameters read by the scores of sequences ``idx`` (with repeats):
        the support weights of their tokens' features, and every transition,
        start, end and bias weight."""
        batch = _ChainBatch.select(self.tokens, self.tok_off, self.y, self.K,
                                   np.asarray(idx, dtype=np.int64))
        tk = batch.tokens
        return np.concatenate([support_param_ids(batch.indptr, tk.nz_start, tk.nz_len),
                               np.arange(self.n_support, self.n_params)])

    def sparse_value_and_grad(self, v, idx, scale):
        """Losses of the sequences ``idx`` at ``z`` = ``v`` with the penalised
        weights times ``scale``, and their summed gradient as entries
        ``(cols, vals)`` (see :func:`structlearn.solvers.sgd`)."""
        batch = _ChainBatch.select(self.tokens, self.tok_off, self.y, self.K,
                                   np.asarray(idx, dtype=np.int64))
        theta = self.scores(v, batch, scale)
        st = batch.structure
        vals, G = self.loss.value_and_grad(theta, batch.y, st)
        GU, gtr, gst, gen = chain_reduce_grad(np.ascontiguousarray(G, dtype=np.float64),
                                              batch.tok_off, st.part_off, self.K)
        tk = batch.tokens
        cols, gv = support_grad_entries(batch.indptr, tk.nz_start, tk.nz_len, tk.data,
                                        self.sup_label, GU)
        tail = [gtr.ravel(), gst, gen] + ([GU.sum(axis=0)] if self.fit_intercept else [])
        tail = np.concatenate(tail)
        tail[:self.frozen.stop - self.n_support] = 0.0
        nz = np.flatnonzero(tail)
        return vals, np.concatenate([cols, self.n_support + nz]), \
            np.concatenate([gv, tail[nz]])

    # The per-example view of the dual solver (:func:`structlearn.solvers.bcfw`):
    # sequence i's dual block is its flat score block.
    def part_sizes(self):
        """Size of every sequence's flat score block."""
        K = self.K
        return np.diff(self.tok_off) * K + K * K + 2 * K

    def unary_sizes(self):
        """Per sequence, the unary parts that lead its score block (the
        parts SparseMAP penalises)."""
        return np.diff(self.tok_off) * self.K

    def pieces(self, z, idx):
        """Losses of the sequences ``idx`` at ``z``, their flat scores and
        score gradients (split over ``n_jobs`` threads; the same numbers
        for any thread count)."""
        idx = np.asarray(idx, dtype=np.int64)

        def run(sub):
            batch = _ChainBatch.select(self.tokens, self.tok_off, self.y, self.K, sub)
            if self.piece_caches is not None:
                batch.structure.warm_cache = self.piece_caches.get(sub)
            theta = self.scores(z, batch)
            vals, G = self.loss.value_and_grad(theta, batch.y, batch.structure)
            return vals, theta, np.asarray(G, dtype=np.float64)

        return split_concat(run, idx, self.n_threads)

    def block_entries(self, idx, D):
        """Per sequence of ``idx``, the entries of ``A_i^T D_i`` for a flat
        array ``D`` of their score blocks; ``(cols, vals, ptr)``."""
        idx = np.asarray(idx, dtype=np.int64)
        sizes = self.part_sizes()[idx]
        part_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        tk = self.tokens
        cols, vals, ptr = chain_block_entries(
            tk.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label,
            np.ascontiguousarray(D), self.tok_off[idx], part_off, self.K, self.n_support,
            self.fit_intercept)
        if self.frozen.stop > self.frozen.start:
            vals[(cols >= self.frozen.start) & (cols < self.frozen.stop)] = 0.0
        return cols, vals, ptr

    def part_columns(self, rep, parts):
        """Per ``k``, the column of ``A_i`` of part ``parts[k]`` (an index
        into the flat score block) of sequence ``rep[k]``: the entries of
        ``A_i^T e_p``; ``(cols, vals, ptr)``."""
        rep = np.asarray(rep, dtype=np.int64)
        tk = self.tokens
        cols, vals, ptr = chain_part_columns(
            tk.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label, self.tok_off[rep],
            np.diff(self.tok_off)[rep], np.asarray(parts, dtype=np.int64), self.K,
            self.n_support, self.fit_intercept)
        if self.frozen.stop > self.frozen.start:
            vals[(cols >= self.frozen.start) & (cols < self.frozen.stop)] = 0.0
        return cols, vals, ptr

    def _group_value_and_grad(self, z, batches):
        if self.loss.gibbs_likelihood:
            vals, g = self._crf_group_value_and_grad(z, batches)
        else:
            g = np.zeros(self.n_params)
            vals = np.concatenate([self._batch_value_and_grad(z, b, g) for b in batches])
        g[self.frozen] = 0.0
        return vals, g

    def sq_norms(self):
        """Per-sequence ``sum_t (||x_t||^2 + 1) + L + 1`` (SGD step size)."""
        sq = self.tokens.sq_norms() + 1.0
        per_tok = np.concatenate([[0.0], np.cumsum(sq)])
        lengths = np.diff(self.tok_off)
        return per_tok[self.tok_off[1:]] - per_tok[self.tok_off[:-1]] + lengths + 1.0

    def value_and_grad(self, z, idx=None):
        if idx is not None:
            batch = _ChainBatch.select(self.tokens, self.tok_off, self.y, self.K,
                                       np.asarray(idx, dtype=np.int64))
            return self._group_value_and_grad(z, [batch])
        if self.n_threads == 1:
            return self._group_value_and_grad(z, self.chunks)
        # one task per thread (contiguous chunks), each with its own gradient
        bounds = np.linspace(0, len(self.chunks), self.n_threads + 1).astype(int)
        res = thread_map(lambda ab: self._group_value_and_grad(z, self.chunks[ab[0]:ab[1]]),
                         zip(bounds[:-1], bounds[1:]), self.n_threads)
        return np.concatenate([r[0] for r in res]), sum(r[1] for r in res)


class SequenceTagger(StructuredLinearModel):
    """Sequence tagger: a linear-chain model trained with any structured loss.

    Token (unary) scores ``U[t, k] = <w_k, x_t> + b_k``, transition scores
    ``T[k', k]`` and start/end scores; the loss is chosen among the library's
    structured losses, so the same class is a CRF (``loss='crf'``, the model
    of CRFsuite), a structured perceptron, a structured SVM with margin,
    slack, approximate-slack or PosLearn scaling, or a SparseMAP / projection
    model.

    Parameters
    ----------
    loss : str or Loss, default='crf'
        'perceptron' (averaged), 'hinge', 'hinge-slack' (exact, Hamming
        cost), 'hinge-approx-slack', 'poslearn', 'crf', 'sparsemap',
        'm-sparsemap', 'projection' (Euclidean projection onto the chain
        polytope, by the active-set solver), 'squared', or a loss object such
        as ``Projection(set='cube', geometry='kl')`` (the cheap box superset).
    alpha : float, default=1e-4
        L2 penalty of the mean loss, ``alpha/2 ||w||^2``.  CRFsuite's
        ``c2`` on ``n`` training sequences corresponds to ``alpha = 2 c2 / n``.
    fit_intercept : bool, default=True
        A per-tag bias (unpenalised, except by ``solver='bcfw'`` and
        ``'cutting-plane'``, which penalise every weight).
    solver : {'auto', 'lbfgs', 'sgd', 'bcfw', 'cutting-plane'}, default='auto'
        'auto': BCFW for 'sparsemap' and 'm-sparsemap' when ``alpha *
        n_sequences >= 1`` (on CoNLL-2000 at ``alpha * n = 2`` about half the
        CRF's L-BFGS fit time, where L-BFGS on these losses takes about four
        times it; BCFW penalises the per-tag bias too, so the model differs
        slightly from the L-BFGS one), L-BFGS for the other smooth losses,
        averaged SGD (averaged perceptron for 'perceptron') otherwise.
        'bcfw' trains the max-margin and SparseMAP losses to a certified
        duality gap (see :class:`structlearn.LabelRanker`); at
        small ``alpha`` on large data the max-margin losses need many epochs
        (docs/benchmarks.rst).
    max_iter : int, default=None
        L-BFGS iterations (500), SGD epochs (50), BCFW epochs (200),
        cutting-plane iterations (300).
    tol : float, default=None
        L-BFGS: stop when the objective decreased by less than ``tol``
        (relative, default 1e-5) over the last 10 iterations -- CRFsuite's
        ``delta``/``period`` rule.  SGD, BCFW and cutting plane: as in
        :class:`structlearn.LabelRanker`.
    decoding : {'map', 'calibrated'}, default='map'
        'map' is Viterbi on the scores; 'calibrated' predicts each token's
        most probable tag under the loss's marginals (optimal for token
        accuracy, Blondel 2019, Sec. 5; it may produce tag bigrams never seen
        in training, e.g. ``O I-NP``).
    feature_support : {'observed', 'all'}, default='observed'
        Which (feature, tag) pairs carry a weight: those seen in the training
        data (CRFsuite's default; far fewer parameters) or every pair.
    transitions : bool, default=True
        Whether the model scores tag bigrams (transition, start and end
        weights).  With False those weights are held at zero, so every
        token's tag is scored on its own features alone, while the loss still
        sees whole sequences (e.g. slack scaling weighs a sequence's hinge by
        its total Hamming cost): the ablation of Sarawagi & Gupta (2008,
        Sec. 5.2), their explanation of when margin scaling wins.
    min_freq : int, default=1
        Dict features seen in fewer training tokens are dropped.
    n_features : int or None, default=None
        Hash dict features into this many columns (bounded memory for huge
        feature spaces); None keeps a vocabulary.
    random_state, n_jobs, verbose, warm_start
        As in :class:`structlearn.LabelRanker`.  ``n_jobs`` runs the oracles
        of sequence chunks in threads.  ``warm_start=True`` continues from the
        fitted weights: the feature vocabulary, tag set and support of the
        first fit are kept (new features are ignored, new tags are an error).

    Attributes
    ----------
    classes_ : list
        Tags, sorted.
    vectorizer_ : TokenVectorizer
        Maps X to a token feature matrix; ``vectorizer_.templates_`` gives the
        template (dict key) of each feature.
    coef_ : scipy.sparse.csr_matrix of shape (n_tags, n_features)
        Token feature weights (zero outside the support).
    intercept_ : ndarray (n_tags,)
    transition_ : ndarray (n_tags, n_tags)
        ``transition_[a, b]``: score of tag ``b`` following tag ``a``.
    start_, end_ : ndarray (n_tags,)
    n_iter_, objective_, solver_, loss_, duality_gap_
        ``duality_gap_``: the relative duality gap at the stop, for
        ``solver='bcfw'``, and for ``'lbfgs'`` with ``fit_intercept=False``
        (the unpenalised per-tag bias leaves L-BFGS's point without a
        feasible dual point); None otherwise.

    Notes
    -----
    X is a list of sequences, each a list of per-token feature dicts exactly
    as sklearn-crfsuite takes them (see
    :class:`structlearn.feature_extraction.TokenVectorizer` for the
    conventions), or a list of 2-D arrays / sparse matrices with one row per
    token.  y is a list of label sequences.  **Empty sequences** are allowed:
    they carry no information for training and are predicted as ``[]``.
    """

    #: SparseMAP and m-SparseMAP by BCFW at ``alpha * n >= 1`` (docs/benchmarks.rst:
    #: CoNLL-2000); note that BCFW penalises the per-tag bias as well
    _auto_dual = ("unary",)

    _lbfgs_period = 10

    def __init__(self, loss="crf", alpha=1e-4, fit_intercept=True, solver="auto",
                 max_iter=None, tol=None, decoding="map", feature_support="observed",
                 min_freq=1, n_features=None, random_state=None, n_jobs=None,
                 verbose=0, warm_start=False, transitions=True):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                         solver=solver, max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.feature_support = feature_support
        self.min_freq = min_freq
        self.n_features = n_features
        self.transitions = transitions

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Fit the tagger.

        Parameters
        ----------
        X : list of sequences of feature dicts, or list of 2-D arrays / sparse matrices
        y : list of label sequences (any hashable labels)

        Returns
        -------
        self
        """
        t_start = time.perf_counter()
        loss = get_loss(self.loss)
        solver = self._check_params(loss)
        warm = self.warm_start and hasattr(self, "vectorizer_")
        vec, tokens, kept_off, y_int, classes, sup_ptr, sup_label, d = \
            self._prepare(X, y, loss, warm)
        K = len(classes)
        def problem_with(lossobj):
            return ChainProblem(tokens, kept_off, y_int, K, sup_ptr, sup_label, lossobj,
                                self.fit_intercept, self.n_jobs, self.transitions)

        problem = problem_with(loss)
        solver = self._dual_when_auto(solver, loss, problem.n_samples)
        z0 = self._initial_point(problem, loss, Chain, self._z if warm else None,
                                 problem_with, solver)
        z0[problem.frozen] = 0.0  # a warm start from a model with transitions
        if self.verbose:
            print(f"[SequenceTagger] {problem.n_samples} sequences, {len(y_int)} tokens, "
                  f"{K} tags, {d} features, {problem.n_params} parameters")
        z, n_iter, obj = self._run_solver(solver, problem, z0, loss, (y_int, kept_off))
        check_solution(z, obj, "SequenceTagger")
        self._set_model(z, problem, vec, classes, sup_ptr, sup_label, d)
        self._record_fit(loss, solver, n_iter, obj, t_start)
        return self

    def _prepare(self, X, y, loss, warm):
        """Validated training data: the (fitted) vectorizer, the token
        features, the offsets of the non-empty sequences, the tags, the
        classes and the weight support."""
        if y is None:
            raise ValueError("SequenceTagger requires y to be passed, but the target y "
                             "is None.")
        if not isinstance(self.transitions, (bool, np.bool_)):
            raise TypeError(f"transitions must be True or False, got "
                            f"{self.transitions!r}.")
        if self.feature_support not in FEATURE_SUPPORTS:
            raise ValueError(f"feature_support must be one of {FEATURE_SUPPORTS}, got "
                             f"{self.feature_support!r}.")
        TokenVectorizer._input_type(X)
        y = _check_label_sequences(y, len(X))
        for i, (xs, ys) in enumerate(zip(X, y)):  # cheap check before any work
            n_tok = len(xs) if isinstance(xs, (list, tuple)) else \
                xs.shape[0] if len(xs.shape) == 2 else None
            if n_tok is not None and n_tok != len(ys):
                raise ValueError(f"sequence {i} has {n_tok} tokens in X but {len(ys)} "
                                 f"labels in y.")
        if warm:
            vec = self.vectorizer_
            enc = vec._transform(X, raw=True)
        else:
            vec = TokenVectorizer(min_freq=self.min_freq, n_features=self.n_features)
            enc = vec._fit(X, transform=True, raw=True)
        tok_off = enc.tok_off
        lengths = np.diff(tok_off)
        for i, (L, seq) in enumerate(zip(lengths, y)):
            if L != len(seq):
                raise ValueError(f"sequence {i} has {L} tokens in X but {len(seq)} "
                                 f"labels in y.")
        flat = [lab for seq in y for lab in seq]
        if not flat:
            raise ValueError("all training sequences are empty: nothing to learn from.")
        if warm:
            classes = list(self.classes_)
            index = {c: k for k, c in enumerate(classes)}
            unknown = [lab for lab in set(flat) if lab not in index]
            if unknown:
                raise ValueError(f"warm_start: labels {unknown[:5]!r} were not seen in the "
                                 f"first fit (classes_ = {classes!r}).")
        else:
            classes = _sorted_labels(set(flat))
            index = {c: k for k, c in enumerate(classes)}
        K = len(classes)
        y_int = np.fromiter((index[lab] for lab in flat), dtype=np.int64, count=len(flat))
        keep, kept_off = _drop_empty(tok_off)
        if warm:
            sup_ptr, sup_label = self._sup_ptr, self._sup_label
        else:
            sup_ptr, sup_label = self._make_support(enc.indptr, enc.indices, enc.n_cols, y_int, K)
            sup_label = narrow_ints(sup_label, K)
        loss.check(Chain(K, [0, 1]))
        d = enc.n_cols
        tokens = _checked_tokens(enc, sup_ptr)
        del enc  # the kernels read the supports, not the column indices
        return vec, tokens, kept_off, y_int, classes, sup_ptr, sup_label, d

    def _selection_setup(self, X, y, loss):
        """The training problem of ``loss`` on (X, y) for feature selection
        (:class:`structlearn.feature_selection.GroupLassoSelector`): the
        weights of a feature's (feature, tag) pairs belong to its column."""
        from ..feature_selection import (SelectionSetup, _DictRestrictor,
                                         _SequenceArrayRestrictor)

        vec, tokens, kept_off, y_int, classes, sup_ptr, sup_label, d = \
            self._prepare(X, y, loss, warm=False)
        problem = ChainProblem(tokens, kept_off, y_int, len(classes), sup_ptr, sup_label,
                               loss, self.fit_intercept, self.n_jobs, self.transitions)
        param_column = np.concatenate([np.repeat(np.arange(d), np.diff(sup_ptr)),
                                       np.full(problem.n_params - problem.n_support, -1)])
        restrictor = _DictRestrictor(vec) if vec.input_type_ == "dict" else \
            _SequenceArrayRestrictor(d)
        return SelectionSetup(problem, param_column, d, vec.templates_,
                              vec.template_names_, restrictor,
                              column_names=lambda: list(vec.feature_names_out_))

    def _make_support(self, indptr, indices, d, y_int, K):
        if self.feature_support == "all":
            sup_ptr = np.arange(0, (d + 1) * K, K, dtype=np.int64)
            sup_label = np.tile(np.arange(K, dtype=np.int64), d)
            return sup_ptr, sup_label
        return observed_support(indptr, indices, y_int, d, K)

    def _set_model(self, z, problem, vec, classes, sup_ptr, sup_label, d):
        w, trans, start, end, bias = problem.unpack(z)
        K = len(classes)
        feat = np.repeat(np.arange(d), np.diff(sup_ptr))
        self.coef_ = sp.csr_matrix((w.copy(), (sup_label, feat)), shape=(K, d))
        self.transition_ = trans.copy()
        self.start_ = start.copy()
        self.end_ = end.copy()
        self.intercept_ = bias.copy()
        self.classes_ = list(classes)
        self.vectorizer_ = vec
        self.n_features_in_ = d
        self._sup_ptr, self._sup_label = sup_ptr, sup_label
        self._z = np.array(z, dtype=np.float64)
        self._n_support = problem.n_support

    # -------------------------------------------------------------- predict
    def _batches(self, X):
        """Token matrix of X; offsets of its non-empty sequences."""
        check_is_fitted(self)
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError(f"X must be a list of sequences, got {type(X).__name__}.")
        enc = self.vectorizer_._transform(X, raw=True)
        lengths = np.diff(enc.tok_off)
        keep, kept_off = _drop_empty(enc.tok_off)
        return _checked_tokens(enc, self._sup_ptr), kept_off, lengths, keep

    def _token_scores(self, indptr, tokens):
        U = support_scores(indptr, tokens.nz_start, tokens.nz_len, tokens.data,
                           self._sup_label, self._z[:self._n_support], len(self.classes_))
        return U + self.intercept_

    def _theta(self, batch):
        U = self._token_scores(batch.indptr, batch.tokens)
        return chain_assemble_scores(U, np.ascontiguousarray(self.transition_), self.start_,
                                     self.end_, batch.tok_off, batch.structure.part_off)

    def _per_chunk(self, Xtok, kept_off, fn):
        """``fn(batch)`` -> per-token rows, over chunks (threads with n_jobs)."""
        K = len(self.classes_)
        n_threads = n_workers(self.n_jobs, len(kept_off) - 1)
        chunks = _contiguous_chunks(Xtok, kept_off, None, K, n_threads)
        if n_threads == 1:
            parts = [fn(b) for b in chunks]
        else:
            parts = thread_map(fn, chunks, n_threads)
        return np.concatenate(parts)

    def _split(self, flat, lengths, keep, fill):
        """Per-sequence pieces of a flat per-token array (empty ones as fill)."""
        out = [fill() for _ in range(len(lengths))]
        off = 0
        for i in keep:
            out[i] = flat[off:off + lengths[i]]
            off += lengths[i]
        return out

    def _decode(self, batch):
        theta = self._theta(batch)
        st = batch.structure
        if self.decoding == "map":
            return st.argmax(theta)
        return st.calibrated_decode(self.loss_.mean(theta, st))

    def predict(self, X):
        """Predicted tag sequences (a list of lists of labels)."""
        Xtok, kept_off, lengths, keep = self._batches(X)
        if len(keep) == 0:
            return [[] for _ in lengths]
        tags = self._per_chunk(Xtok, kept_off, self._decode)
        classes = np.asarray(self.classes_, dtype=object)
        return [list(seq) for seq in self._split(classes[tags], lengths, keep, list)]

    def decision_function(self, X):
        """Token scores ``U`` per sequence: a list of (L, n_tags) arrays.

        The sequence score adds ``transition_``, ``start_`` and ``end_``.
        """
        check_is_fitted(self)
        enc = self.vectorizer_._transform(X, raw=True)
        tok_off = enc.tok_off
        tokens = _checked_tokens(enc, self._sup_ptr)
        U = self._token_scores(tokens.indptr, tokens)
        return [U[tok_off[i]:tok_off[i + 1]] for i in range(len(tok_off) - 1)]

    def predict_marginals(self, X):
        """Per-token tag marginals: a list of (L, n_tags) arrays.

        CRF marginals (``loss='crf'``), SparseMAP or projected marginals, the
        MAP indicators (perceptron and hinge losses) or raw scores ('squared').
        """
        Xtok, kept_off, lengths, keep = self._batches(X)
        K = len(self.classes_)
        if len(keep) == 0:
            return [np.zeros((0, K)) for _ in lengths]

        def marginals(batch):
            st = batch.structure
            return st.unary(self.loss_.mean(self._theta(batch), st))

        mu = self._per_chunk(Xtok, kept_off, marginals)
        return self._split(mu, lengths, keep, lambda: np.zeros((0, K)))

    def predict_sparse(self, X):
        """SparseMAP distribution over tag sequences for each input.

        Returns
        -------
        list of list of (tag sequence, weight)
            The sequences in each SparseMAP support with their probabilities
            (they sum to one); ``[([], 1.0)]`` for an empty input sequence.
        """
        Xtok, kept_off, lengths, keep = self._batches(X)
        K = len(self.classes_)
        classes = np.asarray(self.classes_, dtype=object)
        out = [[([], 1.0)] for _ in lengths]
        for j, i in enumerate(keep):
            batch = _ChainBatch.contiguous(Xtok, kept_off, None, K, j, j + 1)
            st = batch.structure
            _, V, wts, _ = st.sparsemap_support(self._theta(batch))
            out[i] = [(list(classes[st.decode(v)]), float(wt)) for v, wt in zip(V, wts)]
        return out

    def score(self, X, y, sample_weight=None):
        """Token accuracy of ``predict(X)`` against ``y``.

        Labels in ``y`` that were not seen in training are an error (the
        tagger cannot predict them, so the accuracy would be misleading).
        """
        from ..metrics import token_accuracy

        check_is_fitted(self)
        TokenVectorizer._input_type(X)
        y = _check_label_sequences(y, len(X))
        known = set(self.classes_)
        for i, seq in enumerate(y):
            for t, lab in enumerate(seq):
                if lab not in known:
                    raise ValueError(f"y[{i}][{t}] = {lab!r} was not seen in training "
                                     f"(classes_ = {self.classes_!r}).")
        return token_accuracy(y, self.predict(X), sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = False
        tags.target_tags.required = True
        tags.non_deterministic = False
        return tags
