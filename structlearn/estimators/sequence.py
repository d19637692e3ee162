"""Sequence tagging with a linear-chain model."""

import time
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._validation import check_solution, describe, interruptible
from ..feature_extraction import TokenVectorizer
from ..feature_maps import RaggedBatch, TokenFeatureMap, Tokens, checked_tokens
from ..feature_selection import DictRestrictor, SelectionProblem, SequenceArrayRestrictor
from ..kernels.linear import narrow_ints, observed_support
from ..losses import get_loss
from ..solvers import RaggedProblem, n_workers, thread_map
from ..structures.chain import Chain
from ._base import StructuredLinearModel, choose_solver
from ._crfsuite import CRFsuiteCompatMixin
from ._tagging import allowed_transitions, first_violation, label_array, label_codes

FEATURE_SUPPORTS = ("observed", "all")


def _check_label_sequences(y, n, partial=False, name="y"):
    """Validate y: a sequence of ``n`` label sequences; returns a list of
    lists.  With ``partial``, a position may also be None (unknown) or a set
    of labels (one of them)."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise ValueError(f"{name} must be a list of label sequences, got "
                         f"{type(y).__name__}.")
    if len(y) != n:
        raise ValueError(f"X has {n} sequences but {name} has {len(y)}.")
    out = []
    for i, seq in enumerate(y):
        if isinstance(seq, (str, bytes, Mapping, set, frozenset)) or \
                not hasattr(seq, "__len__") or getattr(seq, "ndim", 1) != 1:
            raise ValueError(f"{name}[{i}] must be a sequence of labels (a list), got "
                             f"{describe(seq)}.")
        seq = list(seq)
        for t, lab in enumerate(seq):
            if partial and (lab is None or isinstance(lab, (set, frozenset))):
                for m in (lab or ()):
                    _check_label(m, f"a label in the set {name}[{i}][{t}]")
                continue
            _check_label(lab, f"{name}[{i}][{t}]")
        out.append(seq)
    return out


def _check_label(lab, where):
    if lab is None or (isinstance(lab, (float, np.floating)) and not np.isfinite(lab)):
        raise ValueError(f"{where} is {lab!r}; labels must be hashable non-missing "
                         f"values (None and sets mark unknown labels in fit's y and in "
                         f"predict's known= only).")
    try:
        hash(lab)
    except TypeError:
        raise ValueError(f"{where} = {lab!r} is not hashable.") from None


def _sorted_labels(labels):
    try:
        return sorted(labels)
    except TypeError:  # mixed types: a stable, documented order
        return sorted(labels, key=lambda v: (type(v).__name__, repr(v)))


def _drop_empty(tok_off):
    """Offsets of the non-empty sequences (their tokens are unchanged)."""
    lengths = np.diff(tok_off)
    keep = np.flatnonzero(lengths > 0)
    return keep, np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)


def observed_pairs(indptr, indices, labels, n_features, n_labels, tokens=None):
    """The observed (feature, label) support of the tokens ``tokens`` (a
    bool mask; None: all) whose label is known (``labels >= 0``): the
    pairs of the tokens that take part in the training loss (the weights of
    the other pairs would only be penalised, or, worse, pushed by the
    others' marginals, so that a sequence of weight 0 would change the
    model)."""
    known = labels >= 0
    if tokens is not None:
        known &= tokens
    if not known.all():
        lengths = np.diff(indptr)
        indices = np.ascontiguousarray(indices[np.repeat(known, lengths)])
        indptr = np.concatenate([[0], np.cumsum(lengths[known])]).astype(np.int64)
        labels = np.ascontiguousarray(labels[known])
    return observed_support(indptr, indices, labels, n_features, n_labels)


def chain_problem(tokens, tok_off, y, n_tags, sup_ptr, sup_label, loss, fit_intercept=True,
                  n_jobs=None, transitions=True, allowed=None, label_sets=None,
                  sample_weight=None):
    """The training problem of a linear-chain model: the generic
    :class:`~structlearn.solvers.RaggedProblem` over the token feature map
    (:class:`~structlearn.feature_maps.TokenFeatureMap`; ``tokens`` a
    :class:`~structlearn.feature_maps.Tokens` or a sparse token matrix)
    and :class:`~structlearn.structures.Chain` structures (restricted by
    ``allowed`` transitions; ``y`` may hold partial-label codes over
    ``label_sets``, see :meth:`~structlearn.structures.Chain.complete`;
    ``sample_weight``: one weight per sequence, or None)."""
    if not isinstance(tokens, Tokens):
        tokens = Tokens.from_csr(tokens, sup_ptr)
    fmap = TokenFeatureMap(tokens, tok_off, n_tags, sup_ptr, sup_label, fit_intercept,
                           transitions)
    K = int(n_tags)
    return RaggedProblem(fmap, y, loss, lambda off, warm: Chain(
        K, off, warm, allowed=allowed, label_sets=label_sets), n_jobs,
        sample_weight=sample_weight)


class TokenSequenceTags:
    """scikit-learn tags of the estimators that take lists of token
    sequences (not 2-D arrays) and require y."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = False
        tags.target_tags.required = True
        tags.non_deterministic = False
        return tags


class SequenceTagger(TokenSequenceTags, CRFsuiteCompatMixin, StructuredLinearModel):
    """Sequence tagger: a linear-chain model trained with any structured loss.

    Token (unary) scores ``U[t, k] = <w_k, x_t> + b_k``, transition scores
    ``T[k', k]`` and start/end scores; the loss is chosen among the library's
    structured losses, so the same class is a CRF (``loss='crf'``, the model
    of CRFsuite), a structured perceptron, a structured SVM with margin,
    slack, approximate-slack or PosLearn scaling, or a SparseMAP / projection
    model.

    ``fit`` takes ``sample_weight``, one weight per sequence.  There is no
    ``class_weight``: a sequence's loss is one joint loss over its tag
    sequence (the CRF's likelihood, a structured hinge), not a sum of
    per-token terms, so a per-tag weight has no faithful place in it.

    Parameters
    ----------
    loss : str or Loss, default='crf'
        'perceptron' (averaged), 'hinge', 'hinge-slack' (exact, Hamming
        cost), 'hinge-approx-slack', 'poslearn', 'crf', 'sparsemap',
        'm-sparsemap', 'projection' (Euclidean projection onto the chain
        polytope, by the active-set solver), 'squared', or a loss object such
        as ``Projection(set='cube', geometry='kl')`` (the cheap box superset).
    alpha : float or 'auto', default=1e-4
        Penalty of the mean loss: ``alpha * (l1_ratio * ||w||_1 + (1 -
        l1_ratio) / 2 * ||w||^2)`` (every weight but the per-tag bias).
        CRFsuite minimises the *sum* of the losses plus ``c1 ||w||_1 + c2
        ||w||^2``; on ``n`` training sequences that is ``n`` times this
        objective with ``alpha = (c1 + 2 c2) / n`` and ``l1_ratio = c1 / (c1
        + 2 c2)``, i.e. ``c1 = n * alpha * l1_ratio`` and ``c2 = n * alpha *
        (1 - l1_ratio) / 2`` (L2 only: ``alpha = 2 c2 / n``).
        sklearn-crfsuite's parameter names (``c1``, ``c2``, ``algorithm``,
        ``max_iterations``, ``all_possible_states``, ...) raise a TypeError
        that names the equivalent here.
        ``'auto'``: chosen by cross-validation over the sequences (see
        :class:`structlearn.LabelRanker`).
    l1_ratio : float in [0, 1], default=0.0
        Share of the L1 penalty (the elastic-net mixing, as in
        scikit-learn): 0 is the L2 model, 1 pure L1 (CRFsuite's ``c1``
        alone).  With ``l1_ratio > 0`` the loss must be smooth ('crf',
        'sparsemap', 'm-sparsemap', 'projection', 'squared') and the solver
        is OWL-QN (``solver='auto'`` or ``'owlqn'``).  Many weights are then
        exactly zero (``n_nonzero_``), and the fitted model drops them: the
        (feature, tag) pairs with zero weight leave the support and, for
        feature dicts, features left without weights leave the vocabulary
        (``coef_`` has fewer columns), so the stored model's size scales
        with the non-zeros and predictions are unchanged.  Except with
        ``warm_start=True``, which keeps every feature for the next fit.
    fit_intercept : bool or 'auto', default='auto'
        A per-tag bias (unpenalised, except by ``solver='bcfw'`` and
        ``'cutting-plane'``, which penalise every weight).  'auto': a bias
        only when ``transitions=False`` or with a loss that scores parts on
        their own ('squared', a projection onto the cube).  Otherwise the
        bias adds nothing to the model: a tag's bias can move into its
        column of transition weights and its start weight without changing
        the score of any sequence, and those losses see only the sequences'
        scores (``Loss.output_scores_only``), so it changes only the
        penalty (the bias is free, those weights are penalised).  Without it
        every solver optimises the same objective, L-BFGS certifies its
        point by a duality gap, the model is CRFsuite's, the CRF's L-BFGS
        takes 6-26 % fewer iterations (scores within 0.1 point of the
        bias's on eight of nine tagging sets, 0.16 F1 lower on Dutch NER)
        and SGD reaches lower objectives in the same epochs
        (docs/benchmarks.rst).
        (It was True in earlier development versions.)
    solver : {'auto', 'lbfgs', 'sgd', 'bcfw', 'cutting-plane', 'owlqn'}, default='auto'
        'auto': OWL-QN when ``l1_ratio > 0``
        (:func:`structlearn.solvers.owlqn`, which no other solver replaces);
        else BCFW for 'sparsemap' and 'm-sparsemap' when ``alpha *
        n_sequences >= 1`` (on CoNLL-2000 at ``alpha * n = 2`` about half the
        CRF's L-BFGS fit time, where L-BFGS on these losses takes about four
        times it; with a per-tag bias, which BCFW penalises too, the model
        differs slightly from the L-BFGS one), L-BFGS for the other smooth
        losses, averaged SGD (averaged perceptron for 'perceptron') otherwise.
        On 5,000 sequences or more, 'auto''s L-BFGS starts from two passes
        of SGD rather than from zeros (the same optimum in fewer
        iterations: UD EWT's CRF fit in about three quarters of the time,
        docs/benchmarks.rst); ``solver='lbfgs'`` always starts from zeros.
        :class:`SegmentTagger` does the same; :class:`DependencyParser`
        does not (measured not to pay there).
        'bcfw' trains the max-margin and SparseMAP losses to a certified
        duality gap (see :class:`structlearn.LabelRanker`); at
        small ``alpha`` on large data the max-margin losses need many epochs
        (docs/benchmarks.rst).
    max_iter : int, default=None
        L-BFGS iterations (500), SGD epochs (50), BCFW epochs (200),
        cutting-plane iterations (300).
    tol : float, default=None
        L-BFGS and OWL-QN: stop when the objective decreased by less than
        ``tol`` (relative, default 1e-5) over the last 10 iterations --
        CRFsuite's ``delta``/``period`` rule.  SGD, BCFW and cutting plane: as in
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
    constraints : None, {'BIO', 'IOB2', 'IOB1', 'BIOES', 'BILOU'} or array-like of bool, default=None
        Allowed tag transitions, in training and in decoding.  A scheme name
        derives them from the tag names (``'O'`` and ``'<prefix>-<type>'``):
        in BIO (= IOB2) ``I-X`` may only follow ``B-X`` or ``I-X`` and cannot
        start a sequence; in IOB1 ``B-X`` may only follow ``B-X`` or ``I-X``
        (it separates adjacent chunks of one type) and cannot start one; in
        BIOES / BILOU inside tags must be continued by ``I-X`` / ``E-X``
        (``L-X``) of the same type, every other tag by ``O``, ``B-*`` or
        ``S-*`` (``U-*``), sequences start outside a chunk and end with
        ``O``, ``E`` or ``S``.  A (n_tags, n_tags) boolean matrix over
        ``classes_`` (the sorted tags; row: previous tag, column: next)
        allows exactly its True entries and leaves start and end free.  Every
        loss and decoding then works on the allowed sequences only (the
        forbidden parts' scores are ``-1e9``: Viterbi, forward-backward,
        SparseMAP and the violators never use them, and calibrated decoding
        maximises the expected accuracy over allowed sequences); gold
        training sequences that break them are an error.  None: no
        constraint.
    min_freq : int, default=1
        Dict features seen in fewer training tokens are dropped.
    n_features : int or None, default=None
        Hash dict features into this many columns (bounded memory for huge
        feature spaces); None keeps a vocabulary.
    random_state, n_jobs, verbose, warm_start
        As in :class:`structlearn.LabelRanker`.  ``random_state`` also
        orders the SGD passes that start ``solver='auto'``'s L-BFGS on large
        data (None: a fixed order, so that those fits stay deterministic).
        ``n_jobs`` runs the oracles
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
    allowed_transitions_ : ndarray of bool (n_tags, n_tags)
        The transitions ``constraints`` allow (all True without).
    allowed_start_, allowed_end_ : ndarray of bool (n_tags,)
    state_features_ : dict
        ``{(attribute, tag): weight}`` of the non-zero token weights, with
        sklearn-crfsuite's attribute names (``key:value`` for string
        features); ``transition_features_``: ``{(tag, next_tag): weight}``.
    n_iter_, objective_, solver_, loss_, duality_gap_
    n_nonzero_ : int
        Number of non-zero weights (token features, transitions, start /
        end, bias) at the end of the fit.
        ``duality_gap_``: the relative duality gap at the stop, for
        ``solver='bcfw'``, and for ``'lbfgs'`` without a per-tag bias
        (``fit_intercept=False``, or 'auto' with transitions and a loss of
        sequence scores) and a differentiable loss (not SparseMAP, whose
        transition marginals are not unique: ``Loss.differentiable``)
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

    **Partial labels**: a position of a training sequence may be ``None``
    (its tag is unknown) or a set of tags (one of them, e.g. ``{'B-PER',
    'B-ORG'}``).  The CRF then maximises the likelihood of the labels given,
    marginalising over every completion (``log Z - log Z_y``, Tsuboi et al.
    2008); every other loss is taken against the best-scoring completion
    under the current weights (the latent structured SVM's imputation, Yu &
    Joachims 2009).  Both objectives are non-convex: the solvers with a
    duality gap ('bcfw', 'cutting-plane') are not available ('auto' falls
    back to L-BFGS or SGD) and ``duality_gap_`` is None.  With
    ``feature_support='observed'``, weights exist for the (feature, tag)
    pairs of the labelled positions.  **Forced decoding**:
    ``predict(X, known=...)`` and ``predict_marginals(X, known=...)`` take
    the same per-token None / tag / set entries and decode only among the
    sequences that agree with them.
    """

    #: SparseMAP and m-SparseMAP by BCFW at ``alpha * n >= 1`` (docs/benchmarks.rst:
    #: CoNLL-2000); note that BCFW penalises a per-tag bias as well
    _auto_dual = ("unary",)

    _lbfgs_period = 10
    #: two SGD passes before 'auto''s L-BFGS on 5,000 sequences or more
    _lbfgs_warm_up = 2

    def __init__(self, loss="crf", alpha=1e-4, fit_intercept="auto", solver="auto",
                 max_iter=None, tol=None, decoding="map", feature_support="observed",
                 min_freq=1, n_features=None, random_state=None, n_jobs=None,
                 verbose=0, warm_start=False, transitions=True, constraints=None,
                 l1_ratio=0.0):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                         solver=solver, max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.feature_support = feature_support
        self.min_freq = min_freq
        self.n_features = n_features
        self.transitions = transitions
        self.constraints = constraints
        self.l1_ratio = l1_ratio

    # ------------------------------------------------------------------ fit
    @interruptible
    def fit(self, X, y, sample_weight=None):
        """Fit the tagger.

        Parameters
        ----------
        X : list of sequences of feature dicts, or list of 2-D arrays / sparse matrices
        y : list of label sequences (any hashable labels)
        sample_weight : array-like of shape (n_sequences,), default=None
            Non-negative per-sequence weights ``w_i``: the objective is
            ``sum_i w_i loss_i / sum_i w_i`` plus the penalty, each
            sequence's loss being its joint structured loss (None: every
            weight 1).  Integer weights give the model of the sequences
            repeated that many times, a weight 0 that of the data without
            the sequence.

        Returns
        -------
        self
        """
        if self._check_alpha():
            return self._fit_auto_alpha(X, y, sample_weight)
        t_start = time.perf_counter()
        loss = get_loss(self.loss)
        solver = self._check_params(loss)
        warm = self.warm_start and hasattr(self, "vectorizer_")
        TokenVectorizer._input_type(X)   # (X's errors before the weights')
        sw = self._fit_weights(sample_weight, y, len(X))
        (vec, tokens, kept_off, y_int, classes, sup_ptr, sup_label, d, sets,
         allowed, keep) = self._prepare(X, y, loss, warm, sw)
        sw = self._kept_weights(sw, keep)
        K = len(classes)
        def problem_with(lossobj):
            return chain_problem(tokens, kept_off, y_int, K, sup_ptr, sup_label, lossobj,
                                 self._intercept(loss), self.n_jobs, self.transitions,
                                 allowed, sets, sample_weight=sw)

        problem = problem_with(loss)
        solver = self._dual_when_auto(solver, loss, problem.n_samples)
        if problem.partial and solver in ("bcfw", "cutting-plane"):
            # their certificates assume fixed targets; partial targets are
            # completed anew at every evaluation
            if self.solver != "auto":
                raise ValueError(
                    f"solver={self.solver!r} needs fully labelled targets (its duality "
                    f"gap assumes fixed targets); y has unknown or set-valued labels. "
                    f"Use solver='lbfgs' (smooth losses), 'sgd' or 'auto'.")
            solver = choose_solver("auto", loss, self.alpha)
        z0 = self._initial_point(problem, loss, Chain,
                                 problem.fmap.with_layout_of(self._z) if warm else None,
                                 problem_with, solver)
        z0[problem.fmap.frozen] = 0.0  # a warm start from a model with transitions
        if self.verbose:
            print(f"[SequenceTagger] {problem.n_samples} sequences, {len(y_int)} tokens, "
                  f"{K} tags, {d} features, {problem.n_params} parameters")
        z, n_iter, obj = self._run_solver(solver, problem, z0, loss, (y_int, kept_off))
        check_solution(z, obj, "SequenceTagger")
        self._set_model(z, problem, vec, classes, sup_ptr, sup_label, d)
        self._allowed = allowed
        K = len(classes)
        ones = np.ones(K, dtype=bool)
        self.allowed_transitions_, self.allowed_start_, self.allowed_end_ = \
            (a.copy() for a in allowed) if allowed is not None else \
            (np.ones((K, K), dtype=bool), ones, ones.copy())
        if self.l1_ratio > 0 and not self.warm_start:
            self.sparsify()
        self._record_fit(loss, solver, n_iter, obj, t_start)
        return self

    def _transitions(self):
        """``transitions``, checked."""
        if not isinstance(self.transitions, (bool, np.bool_)):
            raise TypeError(f"transitions must be True or False, got "
                            f"{self.transitions!r}.")
        return bool(self.transitions)

    def _auto_intercept(self, loss):
        """``fit_intercept='auto'``: a per-tag bias only without transitions
        or for a loss that scores parts on their own (otherwise it is
        redundant, see the parameter's description)."""
        return not self._transitions() or not loss.output_scores_only(Chain)

    def _check_inputs(self, X, y):
        """The checks of the parameters and of (X, y) that need no pass over
        the features: X's input kind and the label sequences."""
        if y is None:
            raise ValueError("SequenceTagger requires y to be passed, but the target y "
                             "is None.")
        self._transitions()
        if self.feature_support not in FEATURE_SUPPORTS:
            raise ValueError(f"feature_support must be one of {FEATURE_SUPPORTS}, got "
                             f"{self.feature_support!r}.")
        kind = TokenVectorizer._input_type(X)
        y = _check_label_sequences(y, len(X), partial=True)
        for i, (xs, ys) in enumerate(zip(X, y)):  # cheap check before any work
            n_tok = len(xs) if isinstance(xs, (list, tuple)) else \
                xs.shape[0] if len(xs.shape) == 2 else None
            if n_tok is not None and n_tok != len(ys):
                raise ValueError(f"sequence {i} has {n_tok} tokens in X but {len(ys)} "
                                 f"labels in y.")
        return kind, y

    def _label_codes(self, y, tok_off, loss, index=None):
        """The tag codes of ``y`` (partial labels: codes < 0; None: any tag, a
        set: one of its tags), the label sets and classes, the non-empty
        sequences and their offsets, and the allowed transitions -- checked
        against the loss and the constraints."""
        y_int, sets, classes = label_codes(y, index)
        K = len(classes)
        keep, kept_off = _drop_empty(tok_off)
        loss.check(Chain(K, [0, 1]))
        allowed = allowed_transitions(self.constraints, classes)
        self._check_feasible(Chain(K, kept_off, allowed=allowed, label_sets=sets), y_int,
                             [s for s in y if len(s)], keep, allowed, "y")
        return y_int, sets, classes, keep, kept_off, allowed

    def _prepare(self, X, y, loss, warm, sample_weight=None):
        """Validated training data: the (fitted) vectorizer, the token
        features, the offsets of the non-empty sequences, the tags, the
        classes and the weight support."""
        _, y = self._check_inputs(X, y)
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
        index = None
        if warm:
            classes = list(self.classes_)
            index = {c: k for k, c in enumerate(classes)}
            plain = {lab for lab in flat
                     if lab is not None and not isinstance(lab, (set, frozenset))}
            unknown = [lab for lab in plain if lab not in index]
            if unknown:
                raise ValueError(f"warm_start: labels {unknown[:5]!r} were not seen in the "
                                 f"first fit (classes_ = {classes!r}).")
        y_int, sets, classes, keep, kept_off, allowed = self._label_codes(y, tok_off, loss,
                                                                          index)
        K = len(classes)
        if warm:
            sup_ptr, sup_label = self._sup_ptr, self._sup_label
        else:
            live = None if sample_weight is None else \
                np.repeat(sample_weight > 0, np.diff(tok_off))
            sup_ptr, sup_label = self._make_support(enc.indptr, enc.indices, enc.n_cols,
                                                    y_int, K, live)
            sup_label = narrow_ints(sup_label, K)
        d = enc.n_cols
        tokens = checked_tokens(enc, sup_ptr)
        del enc  # the kernels read the supports, not the column indices
        return vec, tokens, kept_off, y_int, classes, sup_ptr, sup_label, d, sets, allowed, keep

    def _check_feasible(self, chain, codes, seqs, keep, allowed, name):
        """A ValueError naming the first sequence whose (partial) labels no
        tag sequence allowed by the constraints agrees with."""
        if chain.n == 0 or (allowed is None and codes.min(initial=0) >= 0):
            return
        ok = chain.target_feasible(codes)
        if ok.all():
            return
        j = int(np.flatnonzero(~ok)[0])
        i = int(keep[j])
        seq_codes = codes[chain.tok_off[j]:chain.tok_off[j + 1]]
        bad = first_violation(seq_codes, allowed) if seq_codes.min() >= 0 and \
            allowed is not None else None
        if bad is not None:
            t, what = bad
            raise ValueError(f"{name}[{i}][{t}] = {seqs[j][t]!r} {what} under "
                             f"constraints={self.constraints!r}"
                             + (f" (after {seqs[j][t - 1]!r})" if what.startswith("cannot follow")
                                else "") + ".")
        raise ValueError(f"{name}[{i}]: no tag sequence agrees with its partial labels "
                         f"and constraints={self.constraints!r}.")

    def selection_problem(self, X, y, loss=None):
        """The training problem on (X, y) with the input column of every
        weight: the hook of feature selection.

        :class:`~structlearn.feature_selection.GroupLassoSelector` calls it
        on a clone of its estimator and reads nothing else of it.  The
        columns are the features of the vectorizer fitted on X, with their
        templates (the top-level dict keys; for arrays, every column is its
        own template); the weights of a feature's (feature, tag) pairs
        belong to its column, the transitions and start / end / bias
        weights to none.  It trains nothing.

        Parameters
        ----------
        X, y
            Training data, as for :meth:`fit`.
        loss : str, Loss or None, default=None
            The loss of the problem (:func:`structlearn.losses.get_loss`);
            None: the estimator's ``loss``.

        Returns
        -------
        SelectionProblem
            The :class:`~structlearn.feature_selection.SelectionProblem`
            (its ``restrictor`` drops the unselected keys or items of the
            token dicts, or the unselected columns of every sequence's
            array).
        """
        loss = get_loss(self.loss if loss is None else loss)
        (vec, tokens, kept_off, y_int, classes, sup_ptr, sup_label, d, sets,
         allowed, _) = self._prepare(X, y, loss, warm=False)
        problem = chain_problem(tokens, kept_off, y_int, len(classes), sup_ptr, sup_label,
                                loss, self._intercept(loss), self.n_jobs, self.transitions,
                                allowed, sets)
        param_column = np.concatenate([np.repeat(np.arange(d), np.diff(sup_ptr)),
                                       np.full(problem.n_params - problem.fmap.n_support, -1)])
        restrictor = DictRestrictor(vec) if vec.input_type_ == "dict" else \
            SequenceArrayRestrictor(d)
        return SelectionProblem(problem, param_column, d, vec.templates_,
                                vec.template_names_, restrictor,
                                column_names=lambda: list(vec.feature_names_out_))

    def selection_stream(self, X, y, loss=None):
        """The training problem on (X, y) with the features extracted as
        they are needed: the streamed hook of feature selection.

        :class:`~structlearn.feature_selection.GroupLassoSelector` (with
        ``stream=True``) calls it instead of :meth:`selection_problem` to
        select whole templates without building the vectorizer's
        vocabulary, token matrix and weights (see
        :class:`~structlearn.feature_selection.StreamedChainProblem`).

        Returns
        -------
        StreamedChainProblem or None
            Counted (its templates and support known); None when the
            features of ``X`` cannot be streamed as the vectorizer would
            extract them: arrays, ``n_features`` (hashing), ``min_freq >
            1``, nested dict values, or a key ``"a=b"`` beside a key ``"a"``.
        """
        from ..feature_selection._stream import NotStreamable, StreamedChainProblem

        loss = get_loss(self.loss if loss is None else loss)
        kind, y = self._check_inputs(X, y)
        TokenVectorizer(min_freq=self.min_freq, n_features=self.n_features)._check_params()
        if kind != "dict" or self.n_features is not None or self.min_freq != 1:
            return None
        tok_off = np.concatenate([[0], np.cumsum([len(s) for s in X])]).astype(np.int64)
        y_int, sets, classes, keep, kept_off, allowed = self._label_codes(y, tok_off, loss)
        K = len(classes)
        problem = StreamedChainProblem([X[i] for i in keep], y_int, kept_off, K, loss, sets,
                                       allowed, self._intercept(loss), self.transitions,
                                       self.feature_support == "observed")
        try:
            problem.count()
        except NotStreamable:
            return None
        except ValueError:
            # a bad token: the full scan names its place in X
            from ..feature_extraction._dicts import _PairTable, _scan
            _scan(X, _PairTable(grow=True))
            raise
        if not problem.template_names:
            raise ValueError("X contains no features (no token has a non-zero "
                             "feature): nothing to learn.")
        return problem

    def _make_support(self, indptr, indices, d, y_int, K, tokens=None):
        if self.feature_support == "all":
            sup_ptr = np.arange(0, (d + 1) * K, K, dtype=np.int64)
            sup_label = np.tile(np.arange(K, dtype=np.int64), d)
            return sup_ptr, sup_label
        # the pairs of the labelled tokens of the sequences of positive weight
        return observed_pairs(indptr, indices, y_int, d, K, tokens)

    def _set_model(self, z, problem, vec, classes, sup_ptr, sup_label, d):
        w, trans, start, end, bias = problem.fmap.unpack(z)
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
        self._n_support = problem.fmap.n_support

    def sparsify(self):
        """Drop the zero weights from the fitted model.

        The (feature, tag) pairs whose weight is zero leave the weight
        support, and, for feature dicts, the features left without any
        weight leave the vectorizer's vocabulary (``coef_`` loses their
        columns; unknown features are ignored at prediction, as before), so
        the stored model's size scales with its non-zero weights.  The
        scores, hence every prediction, are unchanged.  :meth:`fit` calls it
        after an L1 fit (``l1_ratio > 0``) unless ``warm_start=True``: a
        later warm-started fit would only train the weights that are left.

        Returns
        -------
        self
        """
        check_is_fitted(self)
        S, d = self._n_support, len(self._sup_ptr) - 1
        w, tail = self._z[:S], self._z[S:]
        keep = w != 0
        feat = np.repeat(np.arange(d), np.diff(self._sup_ptr))
        counts = np.bincount(feat[keep], minlength=d)
        vec = self.vectorizer_
        if vec.input_type_ == "dict":  # array input keeps its width
            columns = counts > 0
            vec._keep_columns(columns)
            counts = counts[columns]
        sup_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(self._sup_ptr.dtype)
        sup_label = self._sup_label[keep]
        d = len(counts)
        w = w[keep]
        self._sup_ptr, self._sup_label = sup_ptr, sup_label
        self._z = np.concatenate([w, tail])
        self._n_support = len(w)
        self.coef_ = sp.csr_matrix((w.copy(), (sup_label, np.repeat(np.arange(d),
                                                                    counts))),
                                   shape=(len(self.classes_), d))
        self.n_features_in_ = d
        return self

    # -------------------------------------------------------------- predict
    def _batches(self, X):
        """Token matrix of X; offsets of its non-empty sequences."""
        check_is_fitted(self)
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError(f"X must be a list of sequences, got {type(X).__name__}.")
        enc = self.vectorizer_._transform(X, raw=True)
        lengths = np.diff(enc.tok_off)
        keep, kept_off = _drop_empty(enc.tok_off)
        return checked_tokens(enc, self._sup_ptr), kept_off, lengths, keep

    def _prediction_map(self, tokens, kept_off):
        """The token feature map of the fitted model over ``tokens``."""
        K = len(self.classes_)
        fit_intercept = len(self._z) > self._n_support + K * K + 2 * K
        return TokenFeatureMap(tokens, kept_off, K, self._sup_ptr, self._sup_label,
                               fit_intercept)

    def _batch(self, fmap, a, b, known=None):
        """Sequences ``a..b-1`` as a batch (no targets) with its chain,
        restricted by the constraints and the forced labels ``known``
        (``(codes, sets)`` over every token of ``fmap``, or None)."""
        off = fmap.pos_off[a:b + 1] - fmap.pos_off[a]
        codes, sets = (None, None) if known is None else \
            (known[0][fmap.pos_off[a]:fmap.pos_off[b]], known[1])
        chain = Chain(fmap.K, off, allowed=getattr(self, "_allowed", None), known=codes,
                      label_sets=sets)
        return RaggedBatch(fmap.contiguous(a, b), off, None, chain)

    def _known_codes(self, known, X, lengths, keep):
        """Validated forced labels of ``predict(X, known=...)`` as ``(codes,
        sets)`` over the tokens of X, or None."""
        if known is None:
            return None
        known = _check_label_sequences(known, len(X), partial=True, name="known")
        for i, (L, seq) in enumerate(zip(lengths, known)):
            if len(seq) != L:
                raise ValueError(f"known[{i}] has {len(seq)} entries but sequence {i} of X "
                                 f"has {L} tokens.")
        index = {c: k for k, c in enumerate(self.classes_)}
        codes, sets, _ = label_codes(known, index, name="known")
        kept_off = np.concatenate([[0], np.cumsum(lengths[keep])]).astype(np.int64)
        self._check_feasible(Chain(len(index), kept_off, allowed=getattr(self, "_allowed", None),
                                   label_sets=sets),
                             codes, [known[i] for i in keep], keep,
                             getattr(self, "_allowed", None), "known")
        return codes, sets

    def _per_chunk(self, Xtok, kept_off, fn, known=None):
        """``fn(theta, batch)`` -> per-token rows, over chunks (threads
        with n_jobs)."""
        fmap = self._prediction_map(Xtok, kept_off)
        n_threads = n_workers(self.n_jobs, len(kept_off) - 1)
        chunks = [self._batch(fmap, a, b, known) for a, b in fmap.chunk_ranges(n_threads)]

        def run(batch):
            return fn(fmap.scores(self._z, batch), batch.structure)

        parts = [run(b) for b in chunks] if n_threads == 1 else \
            thread_map(run, chunks, n_threads)
        return np.concatenate(parts)

    def _split(self, flat, lengths, keep, fill):
        """Per-sequence pieces of a flat per-token array (empty ones as fill)."""
        out = [fill() for _ in range(len(lengths))]
        off = 0
        for i in keep:
            out[i] = flat[off:off + lengths[i]]
            off += lengths[i]
        return out

    def _decode(self, theta, st):
        if self.decoding == "map":
            return st.argmax(theta)
        return st.calibrated_decode(self.loss_.mean(theta, st))

    @interruptible
    def predict(self, X, known=None):
        """Predicted tag sequences (a list of lists of labels).

        Parameters
        ----------
        X : list of sequences
        known : list of sequences or None, default=None
            Forced decoding: aligned with X, per token a tag (forced),
            ``None`` (free) or a set of tags (one of them); the prediction is
            the best sequence that agrees with them (and the constraints).
            A sequence no allowed tag sequence agrees with is an error.
        """
        Xtok, kept_off, lengths, keep = self._batches(X)
        if len(keep) == 0:
            return [[] for _ in lengths]
        tags = self._per_chunk(Xtok, kept_off, self._decode,
                               self._known_codes(known, X, lengths, keep))
        classes = label_array(self.classes_)
        return [list(seq) for seq in self._split(classes[tags], lengths, keep, list)]

    def decision_function(self, X):
        """Token scores ``U`` per sequence: a list of (L, n_tags) arrays.

        The sequence score adds ``transition_``, ``start_`` and ``end_``.
        """
        check_is_fitted(self)
        enc = self.vectorizer_._transform(X, raw=True)
        tok_off = enc.tok_off
        tokens = checked_tokens(enc, self._sup_ptr)
        fmap = self._prediction_map(tokens, tok_off)
        U = fmap.unary_scores(self._z[:self._n_support], fmap.contiguous(0, len(tok_off) - 1))
        U += self.intercept_
        return [U[tok_off[i]:tok_off[i + 1]] for i in range(len(tok_off) - 1)]

    def predict_marginals(self, X, known=None, as_dicts=False):
        """Per-token tag marginals: a list of (L, n_tags) arrays.

        CRF marginals (``loss='crf'``), SparseMAP or projected marginals, the
        MAP indicators (perceptron and hinge losses) or raw scores ('squared'),
        over the sequences the constraints allow and that agree with
        ``known`` (as in :meth:`predict`).  With ``as_dicts=True``, per
        sequence a list of ``{tag: marginal}`` dicts, one per token (the
        format of sklearn-crfsuite's ``predict_marginals``).
        """
        if as_dicts:
            return self._marginal_dicts(self.predict_marginals(X, known))
        Xtok, kept_off, lengths, keep = self._batches(X)
        K = len(self.classes_)
        if len(keep) == 0:
            return [np.zeros((0, K)) for _ in lengths]

        def marginals(theta, st):
            return st.unary(self.loss_.mean(theta, st))

        mu = self._per_chunk(Xtok, kept_off, marginals,
                             self._known_codes(known, X, lengths, keep))
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
        classes = label_array(self.classes_)
        out = [[([], 1.0)] for _ in lengths]
        fmap = self._prediction_map(Xtok, kept_off)
        for j, i in enumerate(keep):
            batch = self._batch(fmap, j, j + 1)
            st = batch.structure
            _, V, wts, _ = st.sparsemap_support(fmap.scores(self._z, batch))
            out[i] = [(list(classes[st.decode(v)]), float(wt)) for v, wt in zip(V, wts)]
        return out

    def score(self, X, y, sample_weight=None):
        """Token accuracy of ``predict(X)`` against ``y``.

        A label in ``y`` that was not seen in training counts as an error
        (the tagger cannot predict it), as in scikit-learn's
        ``accuracy_score``: a validation fold of a cross-validation (or of
        ``alpha='auto'``) may hold a rare tag its training part lacks.
        """
        from ..metrics import token_accuracy

        check_is_fitted(self)
        TokenVectorizer._input_type(X)
        y = _check_label_sequences(y, len(X))
        return token_accuracy(y, self.predict(X), sample_weight=sample_weight)
