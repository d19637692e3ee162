"""Dependency parsing: first-order arc-factored models with any structured loss."""

import time
import warnings
from collections.abc import Mapping

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import as_array, check_int, check_solution, describe, interruptible
from ..feature_extraction import ArcVectorizer, check_sentences
from ..feature_maps import ArcFeatureMap
from ..feature_selection import SelectionProblem, TemplateRestrictor
from ..kernels.tree import projective_trees, tree_arc_offsets
from ..kernels.tree_validation import validate_heads
from ..losses import get_loss
from ..metrics import las, uas
from ..solvers import RaggedProblem, n_workers, thread_map
from ..structures.chain import Chain
from ..structures.tree import Tree
from ._arc_labels import label_features, split_targets
from ._base import StructuredLinearModel

def _arc_balanced_ranges(word_off, n_threads):
    """Contiguous sentence ranges with about equal numbers of arcs
    (``sum n_i (n_i + 1)``), enough for ``n_threads`` threads to share the
    work evenly (4 per thread) and at most 256 sentences each on average."""
    n_sent = len(word_off) - 1
    n = np.diff(word_off)
    k = int(min(n_sent, max(4 * n_threads, -(-n_sent // 256))))
    cum = np.cumsum(n * (n + 1))
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, k) / k, side="right")
    bounds = np.unique(np.concatenate(([0], cuts, [n_sent])))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def _coef_probe(coef):
    """About 4,096 of the weights (a stride through them, the last included):
    what the cached weight table is checked against."""
    step = max(1, len(coef) // 4096)
    return np.concatenate((coef[::step], coef[-1:]))


def parser_problem(feature_map, heads, loss, single_root, projective, n_jobs=None,
                   sample_weight=None):
    """The training problem of an arc-factored parser: the generic
    :class:`~structlearn.solvers.RaggedProblem` over the arc feature map
    (:class:`~structlearn.feature_maps.ArcFeatureMap`) and
    :class:`~structlearn.structures.Tree` structures."""
    return RaggedProblem(feature_map, heads, loss,
                         lambda off, warm: Tree(off, single_root, projective, warm),
                         n_jobs, sample_weight=sample_weight)


def _check_head_lists(y, n_sentences):
    """y as a list of ``n_sentences`` head arrays (not yet checked as trees)."""
    if y is None or isinstance(y, (str, bytes, Mapping)) or not hasattr(y, "__len__"):
        raise ValueError(f"y must be a list of head arrays, got {describe(y)}.")
    if len(y) != n_sentences:
        raise ValueError(f"X has {n_sentences} sentences but y has {len(y)} head arrays.")
    return list(y)


def _check_heads_input(X, y, single_root, deprels=None):
    """Validated flat heads and word offsets of (X, y)."""
    if y is None:
        raise ValueError("DependencyParser requires y (a list of head arrays), got None.")
    check_sentences(X)
    y = _check_head_lists(y, len(X))
    for i, (sent, h) in enumerate(zip(X, y)):
        toks = getattr(sent, "tokens", sent)
        n = len(toks) if isinstance(toks, (list, tuple)) else None
        if not hasattr(h, "__len__") or isinstance(h, (str, bytes, Mapping)):
            raise ValueError(f"y[{i}] must be an array of heads, got {describe(h)}.")
        if n is not None and n != len(h):
            what = "its (heads, deprels) pair has" if deprels is not None else \
                "its head array has"
            raise ValueError(f"sentence {i} has {n} words but {what} "
                             f"{len(h)} entries.")
        a = as_array(h, f"y[{i}]")
        # validate_heads takes integer-valued numbers; these would be cast
        if a.dtype.kind in "bc" or (a.dtype.kind == "f" and not np.all(np.isfinite(a))):
            raise ValueError(f"sentence {i} ({len(h)} words): heads must be integers, "
                             f"got {a.tolist()} (dtype {a.dtype}).")
    heads, word_off = validate_heads(y, single_root)
    return heads, word_off


class DependencyParser(StructuredLinearModel):
    """First-order (arc-factored) dependency parser trained with any structured loss.

    The score of a tree is the sum of its arcs' scores ``<w, f(h, m)>``
    over the first-order features of McDonald et al. (2005)
    (:class:`structlearn.feature_extraction.ArcVectorizer`).  Decoding is
    the maximum spanning arborescence (Chu-Liu-Edmonds) or, with
    ``projective=True``, Eisner's algorithm; marginals come from the
    matrix-tree theorem (Koo et al. 2007) or inside-outside.

    ``fit`` takes ``sample_weight``, one weight per sentence (the parser's
    and the labeller's); there is no ``class_weight``: a sentence's loss is
    one joint loss over its tree.

    Parameters
    ----------
    loss : str or Loss, default='crf'
        'perceptron' (averaged), 'hinge', 'hinge-approx-slack', 'poslearn',
        'crf', 'sparsemap', 'm-sparsemap', 'projection' (Euclidean projection
        onto the arborescence polytope, i.e. the SparseMAP solve),
        'squared', or a loss object such as
        ``Projection(set='simplex', geometry='kl')`` (the head-selection
        superset).  'hinge-slack' raises: exact slack-scaled inference has no
        known polynomial algorithm for trees (Sarawagi & Gupta 2008).
    alpha : float or 'auto', default=1e-5
        L2 penalty of the mean loss, ``alpha/2 ||w||^2``.
        ``'auto'``: chosen by cross-validation (see :class:`structlearn.LabelRanker`).
    projective : bool, default=False
        Decode (Eisner) and normalise over projective trees only.  ``fit``
        warns when training trees are non-projective: they lie outside that
        set, so their losses cannot vanish (projectivize them first, or keep
        ``projective=False``).
    single_root : bool, default=True
        Exactly one word attaches to the root (the UD convention).
    solver, max_iter, tol, decoding, random_state, n_jobs, verbose, warm_start
        As in :class:`structlearn.SequenceTagger` ('calibrated' decoding:
        the maximum tree under the loss's arc marginals).
    min_freq : int, default=1
        Keep arc features seen on at least this many gold arcs.
    templates : list of str or None, default=None
        Arc templates to use (names as in ``vectorizer_.template_names_``);
        None: all, or the templates carried by ``X`` when it is the output
        of a :class:`structlearn.feature_selection.GroupLassoSelector`
        (:class:`structlearn.feature_selection.SelectedSentences`), so that
        a selector followed by a parser is a two-step pipeline.

    Attributes
    ----------
    vectorizer_ : ArcVectorizer
    coef_ : ndarray (n_features,)
    labeller_ : SequenceTagger
        Labelled parsers only (absent after a fit on head arrays): the
        second stage, whose tags are the DEPRELs (``labeller_.classes_``).
    label_fit_time_ : float
        Labelled parsers only: seconds of the second stage's fit.
    n_iter_, objective_, solver_, loss_, duality_gap_
        ``duality_gap_``: the relative duality gap at the stop, for
        ``solver='bcfw'`` and ``'lbfgs'`` (every weight is penalised, so the
        L-BFGS point certifies ``||grad P||^2 / (2 alpha P)``: the docstring of
        ``structlearn.solvers.lbfgs``); None for SGD.

    Notes
    -----
    X is a list of sentences, each a list of token dicts with at least
    ``form`` (and ideally ``lemma``, ``upos``, ``xpos``) or a
    :class:`structlearn.datasets.ConlluSentence`; y is a list of head arrays
    in the CoNLL-U convention (1-based heads, 0 = the root).  Gold trees are
    validated (range, cycles, roots).  Training caches the feature ids of
    every candidate arc (about ``4 * 40`` bytes per arc: ``sum_i n_i^2``
    arcs), so a pass over the data is two sparse sweeps.

    **Labelled parsing.**  With y a list of ``(heads, deprels)`` pairs
    (:func:`structlearn.datasets.conllu_targets` reads them from CoNLL-U
    sentences) the parser is labelled: ``predict`` returns ``(heads,
    deprels)`` pairs and ``score`` is the LAS.  The heads are predicted
    exactly as by an unlabelled parser (the same fit, the same weights);
    a second stage then labels every word's incoming arc: a
    :class:`structlearn.SequenceTagger` over the sentence's words (tags =
    DEPRELs) on features of the arc -- the dependent's and the head's
    form, lemma, UPOS and XPOS, the dependent's morphological features,
    direction and binned distance, head-dependent conjunctions, the head's
    head, the dependent's children and nearest siblings -- trained on the
    gold trees with this parser's loss, ``alpha``, solver and iteration
    budget (so every loss labels), and applied to the predicted trees.
    The head-selection losses (``Projection(set='simplex')``) label every
    word on its own (a tagger without transitions, trained by SparseMAP --
    per-word sparsemax -- for the Euclidean geometry or by the CRF --
    per-word softmax -- for KL).

    Why a second stage rather than a labelled first-order model (a score
    per arc and relation inside MAP, marginals and SparseMAP): measured in
    ``benchmarks/results/parsing_labelled.md``, the second stage costs a
    fraction of the parser's fit and a few MB, and on gold trees labels
    about 94 % of the words right (Danish-DDT trained on 564 sentences:
    labeller 39 s of a 213 s fit, 4 MB peak, 93.8 % of labels on gold
    heads, LAS 73.7 for UAS 77.2).  A joint model repeats the arc-score
    sweep, the bulk of every pass, once per relation (L = 36 to 51 in UD
    treebanks): an estimated 36 x the epoch time there (48 s instead of
    1.3 s per pass) and ``sum_i n_i^2 x L`` part scores (2.1 GB of float64
    for EWT's training set: 5.3 M arcs x 51 relations), for a model whose first-order
    labels see the same arc features the second stage sees, without the
    siblings and children.
    """

    #: SparseMAP and m-SparseMAP by BCFW at ``alpha * n >= 1`` (2,000 EWT
    #: sentences at ``alpha * n = 2``: 0.91x the CRF's L-BFGS fit, L-BFGS on
    #: SparseMAP 2.1x BCFW's time; docs/benchmarks.rst)
    _auto_dual = ("unary",)

    _lbfgs_period = 10

    def __init__(self, loss="crf", alpha=1e-5, projective=False, single_root=True,
                 solver="auto", max_iter=None, tol=None, decoding="map", min_freq=1,
                 templates=None, random_state=None, n_jobs=None, verbose=0,
                 warm_start=False):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=False, solver=solver,
                         max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.projective = projective
        self.single_root = single_root
        self.min_freq = min_freq
        self.templates = templates

    def _check_parser_params(self):
        for name in ("projective", "single_root"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}.")
        check_int("min_freq", self.min_freq)

    # ------------------------------------------------------------------ fit
    @interruptible
    def fit(self, X, y, sample_weight=None):
        """Fit the parser (and, for labelled targets, its arc labeller).

        Parameters
        ----------
        X : list of sentences (lists of token dicts, or ConlluSentence)
        y : list of head arrays, or list of ``(heads, deprels)`` pairs
            Head arrays (1-based heads, 0 = root) train an unlabelled
            parser.  ``(heads, deprels)`` pairs (the DEPRELs a list of
            strings, one per word) train a labelled one: the parser on the
            heads and the labeller on the gold arcs, both with this
            estimator's loss, ``alpha`` and solver.  Every sentence must
            have the same kind of target.
        sample_weight : array-like of shape (n_sentences,), default=None
            Non-negative per-sentence weights ``w_i`` (the parser's and
            the labeller's): the objective is ``sum_i w_i loss_i / sum_i
            w_i`` plus the penalty (integer weights: the sentences
            repeated; a weight 0: the sentence removed).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Naming the sentence (and word), when y mixes head arrays and
            pairs, a pair's heads and DEPRELs differ in length, a DEPREL is
            not a non-empty string, or a gold tree is invalid.  Nothing of a
            fitted estimator is changed then.
        """
        if self._check_alpha():
            return self._fit_auto_alpha(X, y, sample_weight)
        t_start = time.perf_counter()
        loss = get_loss(self.loss)
        solver = self._check_params(loss)
        check_sentences(X)
        y, deprels = split_targets(y, len(X))
        sw = self._fit_weights(sample_weight, y, len(X))
        warm = self.warm_start and hasattr(self, "vectorizer_")
        labeller = label_time = None
        if deprels is not None:
            self._check_parser_params()
            _check_heads_input(X, y, self.single_root, deprels)
            t_label = time.perf_counter()
            labeller = self._fit_labeller(X, y, deprels, loss, warm, sw)
            label_time = time.perf_counter() - t_label
        heads, word_off, vec, cache = self._prepare(X, y, loss, warm)
        if self.verbose:
            print(f"[DependencyParser] {len(word_off) - 1} sentences, {word_off[-1]} words, "
                  f"{cache.arc_off[-1]} arcs, {vec.n_features_} features, arc cache "
                  f"{cache.nbytes / 2**20:.0f} MB ({time.perf_counter() - t_start:.1f}s)")
        # Everything is validated: only now touch the estimator's state.
        def problem_with(lossobj):
            return parser_problem(cache, heads, lossobj, self.single_root, self.projective,
                                  self.n_jobs, sample_weight=sw)

        problem = problem_with(loss)
        solver = self._dual_when_auto(solver, loss, problem.n_samples)
        z0 = self._initial_point(problem, loss, Tree, self.coef_ if warm else None,
                                 problem_with, solver)
        z, n_iter, obj = self._run_solver(solver, problem, z0, loss, (heads, word_off))
        vec._release_table()   # trained: prediction reads a weight table instead
        check_solution(z, obj, "DependencyParser")
        self.__dict__.pop("_weights_cache", None)
        self.coef_ = np.array(z, dtype=np.float64)
        self.vectorizer_ = vec
        self.n_features_in_ = vec.n_features_
        self._record_fit(loss, solver, n_iter, obj, t_start)
        if labeller is None:  # an unlabelled refit of a labelled parser
            self.__dict__.pop("labeller_", None)
            self.__dict__.pop("label_fit_time_", None)
        else:
            self.labeller_ = labeller
            self.label_fit_time_ = label_time
        return self

    def _label_loss(self, loss):
        """The labeller's loss and whether it scores label bigrams: the
        parser's loss on a chain.  A loss the chain cannot take -- the
        head-selection losses (``Projection(set='simplex')``: every word's
        head on its own) -- has as labelling analogue a loss that scores
        every word's label on its own: a chain without transitions trained
        with SparseMAP (per-word sparsemax: the Euclidean projection onto
        each word's simplex) or, for a KL geometry, the CRF (per-word
        softmax).  The loss is asked what it can do (``check``), not what
        it is.  A chain takes the parser's own ``loss`` parameter (a name
        or the same instance), so the labeller's parameters read as the
        parser's."""
        try:
            loss.check(Chain(1, np.array([0, 1])))
        except ValueError:
            return loss.local_analogue(), False
        return self.loss, True

    def _fit_labeller(self, X, heads, deprels, loss, warm, sample_weight=None):
        """The second stage: a SequenceTagger over each sentence's words
        labelling the gold arcs, trained with the parser's loss and
        hyper-parameters (a new tagger, or the fitted one when warm)."""
        from .sequence import SequenceTagger

        old = getattr(self, "labeller_", None) if warm else None
        label_loss, transitions = self._label_loss(loss)
        tagger = old if old is not None else SequenceTagger(
            loss=label_loss, transitions=transitions, alpha=self.alpha, solver=self.solver,
            max_iter=self.max_iter, tol=self.tol, decoding=self.decoding,
            random_state=self.random_state, n_jobs=self.n_jobs, verbose=self.verbose,
            warm_start=self.warm_start)
        return tagger.fit(label_features(X, heads), deprels, sample_weight=sample_weight)

    def _prepare(self, X, y, loss, warm):
        """Validated heads, the (fitted) vectorizer and the arc cache of X."""
        self._check_parser_params()
        heads, word_off = _check_heads_input(X, y, self.single_root)
        loss.check(Tree(np.array([0, 1]), single_root=self.single_root,
                        projective=self.projective))
        if self.projective:
            proj = projective_trees(heads, word_off)
            if not proj.all():
                bad = np.flatnonzero(~proj)
                warnings.warn(
                    f"{len(bad)} of {len(proj)} training trees are non-projective "
                    f"(the first: sentence {bad[0]}), but projective=True decodes and "
                    "normalises over projective trees only: these gold trees lie outside "
                    "that set, so the model cannot reproduce them and their losses do not "
                    "vanish. Use projective=False, or projectivize the training trees.",
                    UserWarning, stacklevel=3)
        if warm:
            vec = self.vectorizer_
            A, _ = vec.transform(X)
        else:
            templates = self.templates
            if templates is None:
                templates = getattr(X, "arc_templates", None)
            vec = ArcVectorizer(min_freq=self.min_freq, templates=templates)
            A, _ = vec.fit_transform(X, list(y))
        n_threads = n_workers(self.n_jobs, len(word_off) - 1)
        return heads, word_off, vec, ArcFeatureMap(vec, A, word_off, n_threads)

    def selection_problem(self, X, y, loss=None):
        """The training problem on (X, y) with the arc feature of every
        weight: the hook of feature selection.

        :class:`~structlearn.feature_selection.GroupLassoSelector` calls it
        on a clone of its estimator and reads nothing else of it.  Every
        weight is an arc feature (a column) of the vectorizer fitted on the
        sentences, grouped by its arc template.  The features are computed
        from the sentences, so only whole templates can be dropped: the
        ``restrictor`` returns the sentences as
        :class:`~structlearn.feature_selection.SelectedSentences` carrying
        the kept templates, and there are no label-based groups
        (``column_names`` is None).  It trains nothing.

        Parameters
        ----------
        X, y
            Training sentences and head sequences, as for :meth:`fit`.
        loss : str, Loss or None, default=None
            The loss of the problem (:func:`structlearn.losses.get_loss`);
            None: the estimator's ``loss``.

        Returns
        -------
        SelectionProblem
            The :class:`~structlearn.feature_selection.SelectionProblem`.
        """
        loss = get_loss(self.loss if loss is None else loss)
        heads, word_off, vec, cache = self._prepare(X, y, loss, warm=False)
        problem = parser_problem(cache, heads, loss, self.single_root, self.projective,
                                 self.n_jobs)
        n = vec.n_features_
        return SelectionProblem(problem, param_column=np.arange(n), n_columns=n,
                                column_template=vec.templates_.astype(np.int64),
                                template_names=list(vec.template_names_),
                                restrictor=TemplateRestrictor(list(vec.template_names_)))

    # -------------------------------------------------------------- predict
    def _scored(self, X):
        """Token attributes and word offsets of X, and sentence ranges to score
        on threads."""
        check_is_fitted(self, "coef_")
        A, word_off = self.vectorizer_.transform(X)
        n_threads = n_workers(self.n_jobs, len(word_off) - 1)
        return A, word_off, _arc_balanced_ranges(word_off, n_threads), n_threads

    def _per_chunk(self, X, fn):
        """``fn(theta, structure)`` per range of sentences, the arc scores
        computed without materialising the arc features
        (:meth:`ArcVectorizer.arc_scores`); results concatenated per sentence
        by :meth:`_split`."""
        A, word_off, ranges, n_threads = self._scored(X)
        weights = self._weight_table()

        def run(ab):
            a, b = ab
            st = Tree(word_off[a:b + 1] - word_off[a], single_root=self.single_root,
                      projective=self.projective)
            return fn(self.vectorizer_.arc_scores(A, word_off, a, b, weights), st)

        return word_off, thread_map(run, ranges, n_threads)

    def _weight_table(self):
        """The weight table of ``coef_`` (``ArcVectorizer._weight_table``: every
        feature's key beside its weight, so that a lookup at predict costs
        one cache miss, not two), built on the first prediction and kept in
        a private attribute while ``coef_`` and ``vectorizer_`` are the same
        objects with the same weights (a sample of them is compared: assign
        ``coef_`` a new array to change it).  Not pickled, not cloned:
        ``fit`` and unpickling start without it."""
        coef = self.coef_
        probe = _coef_probe(coef)
        cached = self.__dict__.get("_weights_cache")
        if cached is not None and cached[0] is coef and cached[1] is self.vectorizer_ \
                and np.array_equal(cached[2], probe):
            return cached[3]
        self.__dict__.pop("_weights_cache", None)   # free the old table first
        weights = self.vectorizer_._weight_table(coef)
        self._weights_cache = (coef, self.vectorizer_, probe, weights)
        return weights

    def __getstate__(self):
        state = dict(super().__getstate__())   # a copy: never the live __dict__
        state.pop("_weights_cache", None)
        return state

    def _split(self, word_off, flat_parts, per="word"):
        off = word_off if per == "word" else tree_arc_offsets(word_off)
        flat = np.concatenate(flat_parts)
        return [flat[off[i]:off[i + 1]] for i in range(len(off) - 1)]

    def decision_function(self, X):
        """Arc scores: a list of (n, n + 1) arrays, ``[m - 1, h]`` = score of
        ``h -> m`` (self-loop entries are 0 and never used)."""
        word_off, parts = self._per_chunk(X, lambda theta, st: theta)
        n = np.diff(word_off)
        return [s.reshape(k, k + 1) for s, k in zip(self._split(word_off, parts, "arc"), n)]

    @interruptible
    def predict(self, X):
        """Predicted trees, in the form of the targets ``fit`` was given.

        Parameters
        ----------
        X : list of sentences (lists of token dicts, or ConlluSentence)

        Returns
        -------
        list
            Unlabelled parser: a head array (int, 1-based, 0 = root; always
            a valid tree) per sentence.  Labelled parser: a ``(heads,
            deprels)`` pair per sentence, the DEPRELs (list of str) labelling
            the predicted arcs.
        """
        heads = self._predict_heads(X)
        if getattr(self, "labeller_", None) is None:
            return heads
        deprels = self.labeller_.predict(label_features(X, heads))
        return [(h, list(d)) for h, d in zip(heads, deprels)]

    def _predict_heads(self, X):
        if self.decoding == "calibrated":
            def decode(theta, st):
                return st.calibrated_decode(self.loss_.mean(theta, st))
        else:
            def decode(theta, st):
                return st.argmax(theta)
        word_off, parts = self._per_chunk(X, decode)
        return self._split(word_off, parts)

    def predict_marginals(self, X):
        """Arc marginals under the loss (matrix-tree / inside-outside for
        'crf', SparseMAP or projected marginals, MAP indicators for the
        max-margin losses): a list of (n, n + 1) arrays."""
        word_off, parts = self._per_chunk(X, lambda theta, st: self.loss_.mean(theta, st))
        n = np.diff(word_off)
        return [m.reshape(k, k + 1) for m, k in zip(self._split(word_off, parts, "arc"), n)]

    def predict_sparse(self, X, max_iter=1000, tol=1e-9):
        """SparseMAP distribution over trees of every sentence: a list of
        ``[(heads, weight), ...]`` sorted by decreasing weight."""
        A, word_off, _, _ = self._scored(X)
        weights = self._weight_table()
        out = []
        for i in range(len(word_off) - 1):
            theta = self.vectorizer_.arc_scores(A, word_off, i, i + 1, weights)
            n = word_off[i + 1] - word_off[i]
            st = Tree(np.array([0, n]), single_root=self.single_root,
                      projective=self.projective)
            _, V, wts, _ = st.sparsemap_support(theta, max_iter=max_iter, tol=tol)
            keep = wts > 0
            trees = [(st.decode(v), float(wt)) for v, wt in zip(V[keep], wts[keep])]
            out.append(sorted(trees, key=lambda p: -p[1]))
        return out

    def score(self, X, y, sample_weight=None):
        """Attachment score of the predicted trees: LAS for a labelled
        parser, UAS for an unlabelled one.

        Parameters
        ----------
        X : list of sentences
        y : list
            Head arrays (unlabelled parser) or ``(heads, deprels)`` pairs
            (labelled parser).
        sample_weight : array-like of shape (n_sentences,), default=None
            Per-sentence weights (each word weighted by its sentence's).

        Returns
        -------
        float
            Labelled parser: :func:`structlearn.metrics.las` (HEAD and the
            universal part of DEPREL correct, punctuation included, as the
            CoNLL 2018 shared task scores).  Unlabelled:
            :func:`structlearn.metrics.uas`.

        Raises
        ------
        ValueError
            If y's kind does not match the parser's (a labelled parser is
            scored on pairs, an unlabelled one on head arrays).
        """
        check_is_fitted(self, "coef_")
        check_sentences(X, tokens=True)  # X's errors before y's
        labelled = getattr(self, "labeller_", None) is not None
        heads, deprels = split_targets(y, len(X))
        if labelled and deprels is None:
            raise ValueError("This parser is labelled: score it on (heads, deprels) "
                             "pairs (or use structlearn.metrics.uas on the heads).")
        if not labelled and deprels is not None:
            raise ValueError("This parser is unlabelled (fitted on head arrays): y holds "
                             "(heads, deprels) pairs; score it on head arrays.")
        pred = self.predict(X)
        if labelled:
            return las(list(zip(heads, deprels)), pred, sample_weight=sample_weight)
        return uas(_check_head_lists(heads, len(pred)), pred, sample_weight=sample_weight)
