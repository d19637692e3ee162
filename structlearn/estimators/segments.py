"""Segmentation (semi-Markov) tagging: labelled spans from token features."""

import time

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_sample_weight, check_solution, interruptible
from ..feature_extraction import TokenVectorizer
from ..feature_maps import RaggedBatch, SegmentFeatureMap, checked_tokens
from ..feature_selection import DictRestrictor, SelectionProblem, SequenceArrayRestrictor
from ..kernels.linear import narrow_ints
from ..losses import get_loss
from ..solvers import RaggedProblem, n_workers, thread_map
from ..structures.segments import Segments
from ._base import StructuredLinearModel
from ._spans import (SCHEMES, _is_span_list, _segments_to_tags, segment_penalties,
                     targets_to_segments)
from .sequence import TokenSequenceTags, _drop_empty, _sorted_labels, observed_pairs

class SegmentTagger(TokenSequenceTags, StructuredLinearModel):
    """Labelled segmentation by a semi-Markov model, with any structured loss.

    A segment's score sums the weights of the features of the tokens inside
    it, of its first and last tokens and of its length (plus a label bias,
    with ``fit_intercept``); transitions score consecutive segments' labels
    (Sarawagi & Cohen 2004;
    :class:`~structlearn.feature_maps.SegmentFeatureMap`).  The task cost is
    Sarawagi & Gupta's segment cost (2008, Sec. 4.3.2) with unit precision
    and recall penalties (:class:`~structlearn.structures.Segments`).

    X is a list of sequences of token feature dicts (as for
    :class:`SequenceTagger`).  y is a list of tag sequences in a chunk
    scheme ('bio' = IOB2, 'iob1', 'iobes'; chunks are read by the conlleval
    rules of :func:`structlearn.metrics.chunk_f1`, and every 'O' token is a
    one-token segment labelled 'O') or a list of span lists
    ``[(start, end, label), ...]`` (``end`` exclusive; tokens outside every
    span are ``outside`` segments of one token).  ``predict`` answers in the
    format ``fit`` saw; :meth:`predict_spans` always gives spans.

    ``fit`` takes ``sample_weight``, one weight per sequence.  There is no
    ``class_weight``: a sequence's loss is one joint loss over its
    segmentation, not a sum of per-span terms (the span costs
    ``precision_penalty`` / ``recall_penalty`` are the way to weigh the
    errors on the labels).

    Parameters
    ----------
    loss : str or Loss, default='crf'
        Any loss of :func:`structlearn.losses.get_loss`: 'perceptron',
        'hinge', 'hinge-slack', 'hinge-approx-slack', 'poslearn', 'crf',
        'sparsemap', 'm-sparsemap', 'projection', 'squared'.  The
        slack-scaled and PosLearn violators are those of
        :class:`~structlearn.structures.Segments` (PosLearn's positions
        are the spans).  'squared' regresses every candidate segment's
        indicator separately, a poor surrogate when candidates overlap: on
        the toy chunks of the tests it converges to span F1 .26 where the
        other losses reach 1.
    alpha, solver, max_iter, tol, random_state, n_jobs, verbose
        As in :class:`SequenceTagger`.
    fit_intercept : bool or 'auto', default='auto'
        A per-label bias on every segment (unpenalised, except by
        ``solver='bcfw'`` and ``'cutting-plane'``).  'auto' leaves it out
        but with a loss that scores parts on their own ('squared'): it is
        redundant, twice -- a label's bias can move into its length weights
        (every length the label allows) or into its column of transition
        weights and its start weight without changing the score of any
        segmentation -- so it changes only the penalty.  Without it the
        CRF's L-BFGS certifies its point and, on the first 1,000 / 3,000
        CoNLL-2000 sentences, took 86 / 129 iterations instead of 190 / 252
        (0.35x / 0.41x the time) for span F1 90.74 / 92.70 instead of
        90.69 / 92.61 (docs/benchmarks.rst).  (It was True in earlier
        development versions.)
    max_length : int or None, default=None
        The longest segment.  None: per label, the longest segment of that
        label in the training data (so the one-token 'O' segments cost one
        part per token; on CoNLL-2000 this divides the segment parts by
        ~3); an int: that length for every label (a longer training chunk
        is an error).
    scheme : {'auto', 'bio', 'iob1', 'iobes', 'spans'}, default='auto'
        How y is given, and so how ``predict`` answers: 'auto' takes spans
        when y's sequences hold 3-tuples, 'iobes' when a tag starts with
        'E-' or 'S-', else 'bio'.  (Reading tags does not depend on it.)
    outside : str, default='O'
        The label of the tokens outside every span (span input only).
    precision_penalty, recall_penalty : float or dict, default=1.0
        Sarawagi & Gupta's segment cost (2008, Sec. 4.3.2), which the
        max-margin losses scale margins with: a predicted segment whose span
        is not a gold one costs its label's precision penalty plus the
        recall penalty of every gold segment starting inside it.  A float
        for every label, or ``{label: penalty}`` (unlisted labels: 1).
    mismatch_penalty : float or dict, default=1.0
        The cost of a gold span predicted with another label: a float for
        every pair, or ``{(gold_label, predicted_label): penalty}``
        (unlisted pairs: 1).  Exact slack scaling ('hinge-slack') needs
        integer penalties.
    min_freq, n_features
        As in :class:`SequenceTagger`.

    Attributes
    ----------
    classes_ : list
        Segment labels, sorted (chunk types and the one-token labels).
    max_length_ : int
        The longest segment of any label.
    label_max_length_ : dict
        The longest segment of each label.
    scheme_ : str
    vectorizer_ : TokenVectorizer
    n_iter_, objective_, solver_, loss_, duality_gap_
    """

    _auto_dual = ()

    def _auto_intercept(self, loss):
        """``fit_intercept='auto'``: a per-label bias only for a loss that
        scores parts on their own (with the others it is redundant with the
        length and transition weights, see the parameter)."""
        return not loss.output_scores_only(Segments)

    #: two SGD passes before 'auto''s L-BFGS on 5,000 sequences or more
    #: (as SequenceTagger; docs/benchmarks.rst)
    _lbfgs_warm_up = 2

    def __init__(self, loss="crf", alpha=1e-4, fit_intercept="auto", solver="auto",
                 max_iter=None, tol=None, max_length=None, scheme="auto", outside="O",
                 precision_penalty=1.0, recall_penalty=1.0, mismatch_penalty=1.0,
                 min_freq=1, n_features=None, random_state=None, n_jobs=None, verbose=0):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept, solver=solver,
                         max_iter=max_iter, tol=tol, decoding="map",
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=False)
        self.max_length = max_length
        self.scheme = scheme
        self.outside = outside
        self.precision_penalty = precision_penalty
        self.recall_penalty = recall_penalty
        self.mismatch_penalty = mismatch_penalty
        self.min_freq = min_freq
        self.n_features = n_features

    # ------------------------------------------------------------ targets
    def _scheme_of(self, y):
        if self.scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {SCHEMES}, got {self.scheme!r}.")
        if self.scheme != "auto":
            return self.scheme
        for seq in y:
            if _is_span_list(seq):
                return "spans"
        tags = {t for seq in y for t in seq if isinstance(t, str)}
        return "iobes" if any(t[:2] in ("E-", "S-") for t in tags) else "bio"

    def _segments(self, y, lengths, scheme):
        """Per sequence, ``[(start, end, label, is_chunk)]`` covering it."""
        return targets_to_segments(y, lengths, scheme, self.outside)

    # ------------------------------------------------------------------ fit
    @interruptible
    def fit(self, X, y, sample_weight=None):
        """Fit the segmenter (see the class docstring for X and y).

        ``sample_weight`` (array-like of shape (n_sequences,), default None):
        non-negative per-sequence weights ``w_i``, the objective ``sum_i w_i
        loss_i / sum_i w_i`` plus the penalty (integer weights: the
        sequences repeated; a weight 0: the sequence removed)."""
        if self._check_alpha():
            return self._fit_auto_alpha(X, y, sample_weight)
        t_start = time.perf_counter()
        loss = get_loss(self.loss)
        solver = self._check_params(loss)
        TokenVectorizer._input_type(X)   # (X's errors before the weights')
        d = self._prepare(X, y, loss, self._fit_weights(sample_weight, y, len(X)))
        problem = d["problem_with"](loss)
        solver = self._dual_when_auto(solver, loss, problem.n_samples)
        z0 = self._initial_point(problem, loss, Segments, None, d["problem_with"], solver)
        if self.verbose:
            print(f"[SegmentTagger] {problem.n_samples} sequences, {len(d['codes'])} tokens, "
                  f"{len(d['classes'])} labels, segments up to {d['M']} tokens, "
                  f"{problem.n_params} parameters")
        z, n_iter, obj = self._run_solver(solver, problem, z0, loss,
                                          (d["codes"], d["kept_off"]))
        check_solution(z, obj, "SegmentTagger")
        self._z = np.array(z, dtype=np.float64)
        self._sup_ptr, self._sup_label = d["sup_ptr"], d["sup_label"]
        self.classes_ = list(d["classes"])
        #: the labels that were chunks in training (the others are one-token
        #: segments such as 'O': not spans)
        self._chunk_labels = {s[2] for seq in d["segs"] for s in seq if s[3]}
        self.max_length_ = int(d["Mk"].max())
        self.label_max_length_ = dict(zip(self.classes_, d["Mk"].tolist()))
        self.scheme_ = d["scheme"]
        self.vectorizer_ = d["vec"]
        self.n_features_in_ = d["n_cols"]
        self._record_fit(loss, solver, n_iter, obj, t_start)
        return self

    def _prepare(self, X, y, loss, sample_weight=None):
        """Checked targets, vectorised tokens, the feature map and a
        ``problem_with(loss)`` builder (nothing of the estimator is set)."""
        if y is None:
            raise ValueError("SegmentTagger requires y to be passed, but the target y is "
                             "None.")
        TokenVectorizer._input_type(X)
        if len(y) != len(X):
            raise ValueError(f"X has {len(X)} sequences but y has {len(y)}.")
        scheme = self._scheme_of(y)
        vec = TokenVectorizer(min_freq=self.min_freq, n_features=self.n_features)
        enc = vec._fit(X, transform=True, raw=True)
        segs = self._segments(y, np.diff(enc.tok_off), scheme)
        classes = _sorted_labels({s[2] for seq in segs for s in seq})
        if not classes:
            raise ValueError("all training sequences are empty: nothing to learn from.")
        index = {c: k for k, c in enumerate(classes)}
        K = len(classes)
        M = self.max_length
        if M is None:
            M = np.zeros(K, dtype=np.int64)
            for seq in segs:
                for s, e, label, _ in seq:
                    M[index[label]] = max(M[index[label]], e - s)
        elif not isinstance(M, (int, np.integer)) or isinstance(M, bool) or M < 1:
            raise ValueError(f"max_length must be a positive integer or None, got {M!r}.")
        codes = self._codes(segs, index, M)
        Mk = np.ascontiguousarray(np.broadcast_to(M, (K,)), dtype=np.int64)
        cost = segment_penalties(self.precision_penalty, self.recall_penalty,
                                 self.mismatch_penalty, classes)
        loss.check(Segments(K, [0, 1], Mk, **cost))
        keep, kept_off = _drop_empty(enc.tok_off)
        sw = self._kept_weights(sample_weight, keep)
        tokens = None if sample_weight is None else \
            np.repeat(sample_weight > 0, np.diff(enc.tok_off))
        sup_ptr, sup_label = observed_pairs(enc.indptr, enc.indices, codes // 2,
                                            enc.n_cols, K, tokens)
        sup_label = narrow_ints(sup_label, K)
        fmap = SegmentFeatureMap(checked_tokens(enc, sup_ptr), kept_off, K, Mk, sup_ptr,
                                 sup_label, self._intercept(loss))

        def problem_with(lossobj):
            return RaggedProblem(fmap, codes, lossobj,
                                 lambda off, warm: Segments(K, off, Mk, warm_cache=warm, **cost),
                                 self.n_jobs, sample_weight=sw)

        return dict(vec=vec, n_cols=enc.n_cols, segs=segs, classes=classes, Mk=Mk, codes=codes,
                    kept_off=kept_off, sup_ptr=sup_ptr, sup_label=sup_label, scheme=scheme,
                    problem_with=problem_with)

    def selection_problem(self, X, y, loss=None):
        """The training problem on (X, y) with the input column of every
        weight: the hook of feature selection (see
        :meth:`SequenceTagger.selection_problem`).  A feature's inside,
        first-token and last-token weights belong to its column; the
        length, transition, start / end and bias weights to none."""
        loss = get_loss(self.loss if loss is None else loss)
        d = self._prepare(X, y, loss)
        problem = d["problem_with"](loss)
        vec = d["vec"]
        cols = np.repeat(np.arange(d["n_cols"]), np.diff(d["sup_ptr"]))
        param_column = np.concatenate([cols, cols, cols,
                                       np.full(problem.n_params - 3 * len(cols), -1)])
        return SelectionProblem(problem, param_column, d["n_cols"], vec.templates_,
                                vec.template_names_,
                                DictRestrictor(vec) if vec.input_type_ == "dict"
                                else SequenceArrayRestrictor(d["n_cols"]),
                                column_names=lambda: list(vec.feature_names_out_))

    def _codes(self, segs, index, M):
        codes = []
        for i, seq in enumerate(segs):
            for s, e, label, _ in seq:
                k = index[label]
                if np.ndim(M) == 0 and e - s > M:
                    raise ValueError(f"y[{i}]: the segment {(s, e, label)!r} is longer than "
                                     f"max_length={M}.")
                codes += [2 * k + 1] + [2 * k] * (e - s - 1)
        return np.asarray(codes, dtype=np.int64)

    # -------------------------------------------------------------- predict
    def _map_batches(self, X, fn):
        """``fn(theta, structure)`` over the non-empty sequences of X, in
        chunks on ``n_jobs`` threads; the concatenated flat results, the
        kept sequences' indices and offsets, and every sequence's length."""
        check_is_fitted(self, "_z")
        enc = self.vectorizer_._transform(X, raw=True)
        lengths = np.diff(enc.tok_off)
        keep, kept_off = _drop_empty(enc.tok_off)
        if len(keep) == 0:
            return None, keep, kept_off, lengths
        K, M = len(self.classes_), self.max_length_
        Mk = np.array([self.label_max_length_[c] for c in self.classes_], dtype=np.int64)
        fmap = SegmentFeatureMap(checked_tokens(enc, self._sup_ptr), kept_off, K, Mk,
                                 self._sup_ptr, self._sup_label,
                                 len(self._z) > 3 * int(self._sup_ptr[-1]) + M * K + K * K
                                 + 2 * K)
        n_threads = n_workers(self.n_jobs, len(keep))

        def run(ab):
            off = kept_off[ab[0]:ab[1] + 1] - kept_off[ab[0]]
            st = Segments(K, off, Mk)
            return fn(fmap.scores(self._z, RaggedBatch(fmap.contiguous(*ab), off, None, st)),
                      st)

        flat = np.concatenate(thread_map(run, fmap.chunk_ranges(n_threads), n_threads))
        return flat, keep, kept_off, lengths

    def _decode(self, X):
        """Per sequence the predicted ``[(start, end, label, is_chunk)]``."""
        codes, keep, kept_off, lengths = self._map_batches(X, lambda th, st: st.argmax(th))
        out = [[] for _ in lengths]
        for j, i in enumerate(keep):
            c = codes[kept_off[j]:kept_off[j + 1]]
            segs, t = [], 0
            while t < len(c):
                e = t
                while e + 1 < len(c) and c[e + 1] % 2 == 0:
                    e += 1
                label = self.classes_[c[t] // 2]
                segs.append((t, e + 1, label, label in self._chunk_labels))
                t = e + 1
            out[i] = segs
        return out

    def predict_marginals(self, X):
        """Per-token label marginals: a list of (L, n_labels) arrays, the
        expected covering of each token by a segment of each label under
        the loss's prediction map (CRF marginals, SparseMAP, the MAP
        segmentation's indicators for the max-margin losses; raw scores
        for 'squared'), columns in the order of ``classes_``."""
        K, M = len(self.classes_), self.max_length_

        def covering(theta, st):
            mu = self.loss_.mean(theta, st)
            out = []
            for i, L in enumerate(st.lengths):
                seg = mu[st.part_off[i]:st.part_off[i] + L * M * K].reshape(L, M, K)
                diff = np.zeros((L + 1, K))      # segment (e - l .. e) covers its tokens
                for ln in range(min(M, L)):
                    diff[:L - ln] += seg[ln:, ln]
                    diff[ln + 1:] -= seg[ln:, ln]
                out.append(np.cumsum(diff[:L], axis=0))
            return np.concatenate(out)

        flat, keep, kept_off, lengths = self._map_batches(X, covering)
        out = [np.zeros((int(L), K)) for L in lengths]
        for j, i in enumerate(keep):
            out[i] = flat[kept_off[j]:kept_off[j + 1]]
        return out

    def predict_spans(self, X):
        """Predicted spans: per sequence a list of ``(start, end, label)``
        (``end`` exclusive), without the one-token outside segments."""
        return [[(s, e, lab) for s, e, lab, chunk in segs if chunk]
                for segs in self._decode(X)]

    @interruptible
    def predict(self, X):
        """Predicted tags in the fitted scheme, or spans if fitted on spans."""
        if self.scheme_ == "spans":
            return self.predict_spans(X)
        return [_segments_to_tags(segs, self.scheme_) for segs in self._decode(X)]

    def score(self, X, y, sample_weight=None):
        """Span F1 of the predictions (exact span and label matches); with
        ``sample_weight`` (one per sequence) every span counts with its
        sequence's weight."""
        check_is_fitted(self, "_z")
        lengths = [len(x) for x in X]
        w = check_sample_weight(sample_weight, len(lengths))
        gold = self._segments(y, lengths, self.scheme_)
        gold = {(i, s, e, lab) for i, seq in enumerate(gold) for s, e, lab, c in seq if c}
        pred = {(i, s, e, lab) for i, seq in enumerate(self.predict_spans(X))
                for s, e, lab in seq}
        if w is not None:
            gold = {g for g in gold if w[g[0]] > 0}
            pred = {p for p in pred if w[p[0]] > 0}
        if not gold and not pred:
            return 1.0

        def total(spans):
            return float(len(spans)) if w is None else float(sum(w[t[0]] for t in spans))

        return 2.0 * total(gold & pred) / (total(gold) + total(pred))
