"""Sequence tagging with a linear-chain model."""

import numbers
import time

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ..feature_extraction import TokenVectorizer
from ..kernels.linear import (
    chain_assemble_scores,
    chain_reduce_grad,
    support_grad,
    support_scores,
)
from ..losses import CRF, Perceptron, Projection, SparseMAP, get_loss
from ..solvers import n_workers
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
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
            raise ValueError(f"y[{i}] must be a sequence of labels (a list), got "
                             f"{type(seq).__name__}.")
        seq = list(seq)
        for t, lab in enumerate(seq):
            if lab is None or (isinstance(lab, float) and not np.isfinite(lab)):
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


class _ChainBatch:
    """Flat arrays of one batch of non-empty sequences."""

    def __init__(self, X, tok_off, y, n_tags):
        self.X = X
        self.tok_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        self.y = y
        self.structure = Chain(n_tags, self.tok_off)

    @classmethod
    def select(cls, X, tok_off, y, n_tags, seqs):
        starts, ends = tok_off[seqs], tok_off[seqs + 1]
        lengths = ends - starts
        rows = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])
        off = np.concatenate([[0], np.cumsum(lengths)])
        return cls(X[rows], off, None if y is None else y[rows], n_tags)


class ChainProblem:
    """Training problem of a linear-chain model (see :mod:`structlearn.solvers`).

    ``z = [w (support), transitions (K*K), start (K), end (K), bias (K)]``;
    everything but the bias is penalised (the transition weights are weights
    of label-bigram features, as in CRFsuite).
    """

    def __init__(self, X, tok_off, y, n_tags, sup_ptr, sup_label, loss,
                 fit_intercept=True, n_jobs=None):
        self.X = X.tocsr()
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
        k = n_workers(n_jobs, self.n_samples)
        chunks = np.array_split(np.arange(self.n_samples), k)
        self.chunks = [_ChainBatch.select(self.X, self.tok_off, self.y, K, c)
                       for c in chunks if len(c)]

    def unpack(self, z):
        K, S = self.K, self.n_support
        w = z[:S]
        trans = z[S:S + K * K].reshape(K, K)
        start = z[S + K * K:S + K * K + K]
        end = z[S + K * K + K:S + K * K + 2 * K]
        bias = z[S + K * K + 2 * K:] if self.fit_intercept else np.zeros(K)
        return w, trans, start, end, bias

    def scores(self, z, batch):
        w, trans, start, end, bias = self.unpack(z)
        X = batch.X
        U = support_scores(X.indptr, X.indices, X.data, self.sup_ptr, self.sup_label,
                           w, self.K)
        U += bias
        return chain_assemble_scores(U, np.ascontiguousarray(trans), start, end,
                                     batch.tok_off, batch.structure.part_off)

    def _batch_value_and_grad(self, z, batch):
        theta = self.scores(z, batch)
        st = batch.structure
        vals, G = self.loss.value_and_grad(theta, batch.y, st)
        GU, gtr, gst, gen = chain_reduce_grad(np.ascontiguousarray(G, dtype=np.float64),
                                              batch.tok_off, st.part_off, self.K)
        X = batch.X
        gw = support_grad(X.indptr, X.indices, X.data, self.sup_ptr, self.sup_label, GU)
        parts = [gw, gtr.ravel(), gst, gen]
        if self.fit_intercept:
            parts.append(GU.sum(axis=0))
        return vals, np.concatenate(parts)

    def sq_norms(self):
        """Per-sequence ``sum_t (||x_t||^2 + 1) + L + 1`` (SGD step size)."""
        sq = np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel() + 1.0
        per_tok = np.concatenate([[0.0], np.cumsum(sq)])
        lengths = np.diff(self.tok_off)
        return per_tok[self.tok_off[1:]] - per_tok[self.tok_off[:-1]] + lengths + 1.0

    def value_and_grad(self, z, idx=None):
        if idx is None:
            if len(self.chunks) == 1:
                return self._batch_value_and_grad(z, self.chunks[0])
            res = Parallel(n_jobs=len(self.chunks), prefer="threads")(
                delayed(self._batch_value_and_grad)(z, b) for b in self.chunks)
            return np.concatenate([r[0] for r in res]), np.sum([r[1] for r in res], axis=0)
        batch = _ChainBatch.select(self.X, self.tok_off, self.y, self.K,
                                   np.asarray(idx, dtype=np.int64))
        return self._batch_value_and_grad(z, batch)


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
        A per-tag bias (unpenalised).
    solver : {'auto', 'lbfgs', 'sgd', 'cutting-plane'}, default='auto'
        'auto': L-BFGS for smooth losses, averaged SGD (averaged perceptron
        for 'perceptron') otherwise.
    max_iter : int, default=None
        L-BFGS iterations (500), SGD epochs (50), cutting-plane iterations (300).
    tol : float, default=None
        L-BFGS: stop when the objective decreased by less than ``tol``
        (relative, default 1e-5) over the last 10 iterations -- CRFsuite's
        ``delta``/``period`` rule.  SGD and cutting plane: as in
        :class:`structlearn.LabelRanker`.
    decoding : {'map', 'calibrated'}, default='map'
        'map' is Viterbi on the scores; 'calibrated' predicts each token's
        most probable tag under the loss's marginals (optimal for token
        accuracy, Blondel 2019, Sec. 5; it may produce tag bigrams never seen
        in training, e.g. ``O I-NP``).
    feature_support : {'observed', 'all'}, default='observed'
        Which (feature, tag) pairs carry a weight: those seen in the training
        data (CRFsuite's default; far fewer parameters) or every pair.
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
    n_iter_, objective_, solver_, loss_

    Notes
    -----
    X is a list of sequences, each a list of per-token feature dicts exactly
    as sklearn-crfsuite takes them (see
    :class:`structlearn.feature_extraction.TokenVectorizer` for the
    conventions), or a list of 2-D arrays / sparse matrices with one row per
    token.  y is a list of label sequences.  **Empty sequences** are allowed:
    they carry no information for training and are predicted as ``[]``.
    """

    _lbfgs_period = 10

    def __init__(self, loss="crf", alpha=1e-4, fit_intercept=True, solver="auto",
                 max_iter=None, tol=None, decoding="map", feature_support="observed",
                 min_freq=1, n_features=None, random_state=None, n_jobs=None,
                 verbose=0, warm_start=False):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                         solver=solver, max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.feature_support = feature_support
        self.min_freq = min_freq
        self.n_features = n_features

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
        if y is None:
            raise ValueError("SequenceTagger requires y to be passed, but the target y "
                             "is None.")
        loss = get_loss(self.loss)
        if self.feature_support not in FEATURE_SUPPORTS:
            raise ValueError(f"feature_support must be one of {FEATURE_SUPPORTS}, got "
                             f"{self.feature_support!r}.")
        solver = self._check_params(loss)
        warm = self.warm_start and hasattr(self, "vectorizer_")
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError(f"X must be a list of sequences, got {type(X).__name__}.")
        y = _check_label_sequences(y, len(X))
        if warm:
            vec = self.vectorizer_
            Xtok, tok_off = vec.transform(X)
        else:
            vec = TokenVectorizer(min_freq=self.min_freq, n_features=self.n_features)
            Xtok, tok_off = vec.fit_transform(X)
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
        keep = np.flatnonzero(lengths > 0)
        Xtok = Xtok.tocsr()
        if warm:
            sup_ptr, sup_label = self._sup_ptr, self._sup_label
        else:
            sup_ptr, sup_label = self._make_support(Xtok, y_int, K)
        loss.check(Chain(K, [0, 1]))
        # Everything is validated: only now touch the estimator's state.
        batch = _ChainBatch.select(Xtok, tok_off, y_int, K, keep)
        problem = ChainProblem(batch.X, batch.tok_off, batch.y, K, sup_ptr, sup_label,
                               loss, self.fit_intercept, self.n_jobs)
        if warm and len(self._z) == problem.n_params:
            z0 = self._z.copy()
        else:
            z0 = np.zeros(problem.n_params)
        if self.verbose:
            print(f"[SequenceTagger] {problem.n_samples} sequences, {len(y_int)} tokens, "
                  f"{K} tags, {Xtok.shape[1]} features, {problem.n_params} parameters")
        z, n_iter, obj = self._run_solver(solver, problem, z0, loss)
        self._set_model(z, problem, vec, classes, sup_ptr, sup_label, Xtok.shape[1])
        self.loss_ = loss
        self.solver_ = solver
        self.n_iter_ = n_iter
        self.objective_ = obj
        if self.verbose:
            print(f"[SequenceTagger] fit with loss={loss}, solver={solver} in "
                  f"{time.perf_counter() - t_start:.2f}s")
        return self

    def _make_support(self, X, y_int, K):
        d = X.shape[1]
        if self.feature_support == "all":
            sup_ptr = np.arange(0, (d + 1) * K, K, dtype=np.int64)
            sup_label = np.tile(np.arange(K, dtype=np.int64), d)
            return sup_ptr, sup_label
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        keys = np.unique(X.indices.astype(np.int64) * K + y_int[rows])
        feat, lab = keys // K, keys % K
        sup_ptr = np.zeros(d + 1, dtype=np.int64)
        np.cumsum(np.bincount(feat, minlength=d), out=sup_ptr[1:])
        return sup_ptr, np.ascontiguousarray(lab, dtype=np.int64)

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
        """Token matrix of X split into non-empty chain batches."""
        check_is_fitted(self)
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError(f"X must be a list of sequences, got {type(X).__name__}.")
        Xtok, tok_off = self.vectorizer_.transform(X)
        lengths = np.diff(tok_off)
        keep = np.flatnonzero(lengths > 0)
        return Xtok.tocsr(), tok_off, lengths, keep

    def _theta(self, batch):
        K = len(self.classes_)
        X = batch.X
        w = self._z[:self._n_support]
        U = support_scores(X.indptr, X.indices, X.data, self._sup_ptr, self._sup_label,
                           w, K) + self.intercept_
        return chain_assemble_scores(U, np.ascontiguousarray(self.transition_), self.start_,
                                     self.end_, batch.tok_off, batch.structure.part_off)

    def _split(self, flat, lengths, keep, fill):
        """Per-sequence pieces of a flat per-token array (empty ones as fill)."""
        out = [fill() for _ in range(len(lengths))]
        off = 0
        for i in keep:
            out[i] = flat[off:off + lengths[i]]
            off += lengths[i]
        return out

    def _predict_flat(self, X):
        Xtok, tok_off, lengths, keep = self._batches(X)
        if len(keep) == 0:
            return np.zeros(0, dtype=np.int64), lengths, keep
        batch = _ChainBatch.select(Xtok, tok_off, None, len(self.classes_), keep)
        theta = self._theta(batch)
        st = batch.structure
        if self.decoding == "map":
            tags = st.argmax(theta)
        else:
            tags = st.calibrated_decode(self.loss_.mean(theta, st))
        return tags, lengths, keep

    def predict(self, X):
        """Predicted tag sequences (a list of lists of labels)."""
        tags, lengths, keep = self._predict_flat(X)
        classes = np.asarray(self.classes_, dtype=object)
        return [list(seq) for seq in self._split(classes[tags], lengths, keep, list)]

    def decision_function(self, X):
        """Token scores ``U`` per sequence: a list of (L, n_tags) arrays.

        The sequence score adds ``transition_``, ``start_`` and ``end_``.
        """
        Xtok, tok_off, lengths, keep = self._batches(X)
        K = len(self.classes_)
        X_ = Xtok
        U = support_scores(X_.indptr, X_.indices, X_.data, self._sup_ptr, self._sup_label,
                           self._z[:self._n_support], K) + self.intercept_
        return [U[tok_off[i]:tok_off[i + 1]] for i in range(len(lengths))]

    def predict_marginals(self, X):
        """Per-token tag marginals: a list of (L, n_tags) arrays.

        CRF marginals (``loss='crf'``), SparseMAP or projected marginals, the
        MAP indicators (perceptron and hinge losses) or raw scores ('squared').
        """
        Xtok, tok_off, lengths, keep = self._batches(X)
        K = len(self.classes_)
        if len(keep) == 0:
            return [np.zeros((0, K)) for _ in lengths]
        batch = _ChainBatch.select(Xtok, tok_off, None, K, keep)
        st = batch.structure
        mu = st.unary(self.loss_.mean(self._theta(batch), st))
        return self._split(mu, lengths, keep, lambda: np.zeros((0, K)))

    def predict_sparse(self, X):
        """SparseMAP distribution over tag sequences for each input.

        Returns
        -------
        list of list of (tag sequence, weight)
            The sequences in each SparseMAP support with their probabilities
            (they sum to one); ``[([], 1.0)]`` for an empty input sequence.
        """
        Xtok, tok_off, lengths, keep = self._batches(X)
        K = len(self.classes_)
        classes = np.asarray(self.classes_, dtype=object)
        out = [[([], 1.0)] for _ in lengths]
        for i in keep:
            batch = _ChainBatch.select(Xtok, tok_off, None, K, np.array([i]))
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
