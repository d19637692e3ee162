"""The group-lasso feature selector (see the package docstring)."""

import numbers
import time

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_int, interruptible
from ..losses import get_loss
from ..solvers import online_prox_grad, online_prox_grad_streamed
from ._problem import (
    ArrayRestrictor,
    DictRestrictor,
    SequenceArrayRestrictor,
    TemplateRestrictor,
)

__all__ = ["GroupLassoSelector"]

PENALTIES = ("group-lasso", "l1", "sparse-group-lasso", "coarse-to-fine")
GROUPINGS = ("template", "label")


def _layers_of_order(names, order):
    """Coarse-to-fine groups: for every group ``a``, the set of groups
    ``b`` with ``a <= b`` (itself and every finer group), and a split of
    these overlapping groups into sets of non-overlapping ones."""
    index = {n: i for i, n in enumerate(names)}
    M = len(names)
    finer = [set() for _ in range(M)]
    if isinstance(order, (str, bytes)) or not hasattr(order, "__iter__"):
        raise ValueError(f"order must be a list of (coarse, fine) group-name pairs, got "
                         f"{order!r}.")
    for pair in order:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"order must hold (coarse, fine) pairs, got {pair!r}.")
        a, b = pair
        for x in (a, b):
            if x not in index:
                raise ValueError(f"unknown group {x!r} in order; the groups are "
                                 f"{names[:5]!r}{' ...' if len(names) > 5 else ''}.")
        if a == b:
            raise ValueError(f"order pair {pair!r} relates a group to itself.")
        finer[index[a]].add(index[b])
    # transitive closure with a cycle check (depth-first, memoised)
    closure = [None] * M
    state = [0] * M          # 0 new, 1 on the stack, 2 done

    def close(a):
        if state[a] == 2:
            return closure[a]
        if state[a] == 1:
            raise ValueError(f"order has a cycle through group {names[a]!r}.")
        state[a] = 1
        out = {a}
        for b in finer[a]:
            out |= close(b)
        state[a] = 2
        closure[a] = out
        return out

    for a in range(M):
        close(a)
    # greedy split into non-overlapping sets, coarsest (largest) groups first
    layers = []
    for a in sorted(range(M), key=lambda g: (-len(closure[g]), g)):
        for members in layers:
            if all(not (closure[a] & closure[b]) for b in members):
                members.append(a)
                break
        else:
            layers.append([a])
    return closure, layers


def _is_table(restrictor):
    """Whether the selector's input is a 2-D table (array, sparse matrix,
    DataFrame) rather than sequences or sentences."""
    return isinstance(restrictor, ArrayRestrictor) and \
        not isinstance(restrictor, SequenceArrayRestrictor)


def _transform_output(est):
    """The container ``transform`` output is configured to (``set_output``
    of ``est``, else the global ``transform_output``): 'default', 'pandas'
    or 'polars'."""
    own = getattr(est, "_sklearn_output_config", {}).get("transform")
    return get_config()["transform_output"] if own is None else own


def _input_feature_names(est, input_features):
    """The names of the input columns of a selector fitted on a 2-D ``X``:
    ``input_features`` checked against what fit saw, or the names of fit."""
    fitted = getattr(est, "feature_names_in_", None)
    n = est.n_features_in_
    if input_features is None:
        if fitted is not None:
            return np.asarray(fitted, dtype=object)
        return np.array([f"x{j}" for j in range(n)], dtype=object)
    if isinstance(input_features, (str, bytes)):
        raise ValueError(f"input_features must be a list of {n} column names, got the "
                         f"string {input_features!r}.")
    names = np.asarray(input_features, dtype=object)
    if names.ndim != 1 or len(names) != n:
        raise ValueError(f"input_features should have length equal to the number of "
                         f"features ({n}), got shape {names.shape}.")
    if fitted is not None and not np.array_equal(names, fitted):
        raise ValueError(f"input_features is not equal to feature_names_in_: "
                         f"{names.tolist()[:5]} vs {list(fitted)[:5]}.")
    return names


class GroupLassoSelector(TransformerMixin, BaseEstimator):
    """Group-lasso feature selection by the online proximal-gradient
    algorithm (the sparseptron with the default perceptron loss).

    See the :mod:`structlearn.feature_selection` docstring for the groups
    and the penalties, and :func:`structlearn.solvers.online_prox_grad` for
    the algorithm and the choices made where the paper is silent.

    Parameters
    ----------
    estimator : a structlearn estimator
        Defines the input, the features and their templates, the output
        structure and (unless ``loss`` is given) the loss.  It is cloned;
        only its training problem is used, through its public hook
        ``selection_problem(X, y, loss)`` (a :class:`SelectionProblem`;
        any estimator with that method can be given).
    budget : int, default=30
        Groups kept by the budget-driven proximal steps (``penalty='l1'``:
        non-zero weights; ``'coarse-to-fine'``: the pseudo-budget).
    penalty : {'group-lasso', 'l1', 'sparse-group-lasso', 'coarse-to-fine'}
    groups : {'template', 'label'} or array-like, default='template'
        'template': the estimator's templates; 'label': one group per
        feature (all its label-conjoined weights); an array (array input
        only): the group name of every input column.
    feature_budget : int or None
        ``penalty='sparse-group-lasso'``: non-zero weights kept by the L1
        part (required there, ignored otherwise).
    order : list of (str, str) or None
        ``penalty='coarse-to-fine'``: pairs ``(coarse, fine)`` of group names.
    group_weights : 'log2', 'uniform' or array-like, default='log2'
        ``d_m``: ``max(1, log2 |G_m|)``, 1, or one value per group (in the
        order of ``group_names_``).
    loss : str, Loss or None, default='perceptron'
        The loss of the gradient steps; None: the estimator's.
    n_epochs : int, default=5
    K : int, default=1000
        Examples between proximal steps.
    eta0 : float, default=1.0
    random_state : int, RandomState or None
    verbose : int, default=0
    stream : bool, default=False
        Select templates without materialising the features: the
        estimator's hook ``selection_stream(X, y, loss)`` (e.g.
        :meth:`structlearn.SequenceTagger.selection_stream`, for feature
        dicts) extracts and hashes the features of a few hundred sequences
        at a time and the weights are kept only for the features that
        fired in a live template
        (:func:`~structlearn.solvers.online_prox_grad_streamed`): the same
        algorithm and the same selection, in a fraction of the memory.
        Needs ``groups='template'`` and ``penalty='group-lasso'`` or
        ``'coarse-to-fine'``, and an input the hook can stream (a
        ValueError says why not).  The streamed selector has no column
        vocabulary: ``support_``, ``coef_`` and ``n_features_selected_``
        are None, :meth:`get_support` and :meth:`get_feature_names_out`
        raise; :meth:`transform` keeps the selected templates' keys.

    Attributes
    ----------
    group_names_ : list of str
    selected_groups_ : list of str
        Names of the groups with a non-zero weight.
    group_norms_ : ndarray (n_groups,)
        ``||theta_m||_2`` of every group at the end.
    support_ : ndarray of bool (n_columns,) or None
        Columns (features) kept by :meth:`transform`: those of the selected
        groups; with ``'l1'`` and ``'sparse-group-lasso'``, those with a
        non-zero weight.
    n_features_selected_ : int
    n_weights_selected_ : int
        Non-zero weights of the selection model.
    coef_ : ndarray (n_params,) or None
        The selection model's weights (in the estimator's parameter layout;
        None with ``stream=True``).
    history_ : list of (t, n_nonzero_weights, thresholds)
        After each proximal step: examples seen, non-zero weights, and the
        threshold ``eta_t sigma_jt`` of each set of groups.
    n_features_in_ : int
        Columns of a 2-D ``X`` (array, sparse matrix or DataFrame) seen in
        fit; absent for sequence and sentence input.
    feature_names_in_ : ndarray of str objects
        Column names of a DataFrame ``X`` (string names) seen in fit;
        absent otherwise.

    Notes
    -----
    **Pandas and pipelines (2-D input).**  With a 2-D ``X`` the selector
    behaves as scikit-learn's own selectors: :meth:`transform` checks the
    column names against ``feature_names_in_`` (renamed or reordered
    columns raise a ValueError), :meth:`get_feature_names_out` gives the
    names of the kept columns (so ``Pipeline.get_feature_names_out`` works
    through it) and ``set_output(transform="pandas")`` makes
    :meth:`transform` return a DataFrame of the kept columns with ``X``'s
    index.

    **Sequences and sentences.**  For the input of
    :class:`~structlearn.SequenceTagger` (lists of feature dicts or of 2-D
    arrays) and :class:`~structlearn.DependencyParser` (sentences),
    :meth:`transform` returns sequences again, which are no table:
    ``set_output`` cannot apply and a container output other than
    ``'default'`` is a ValueError at :meth:`transform`.
    :meth:`get_feature_names_out` then names the kept features as the
    estimator's vectorizer names its columns
    (:meth:`structlearn.feature_extraction.TokenVectorizer.get_feature_names_out`:
    ``"key=value"`` for dicts, ``"x<j>"`` for array columns); the parser's
    arc features are hashed and have no names (its kept templates are
    ``selected_groups_``).
    """

    def __init__(self, estimator, budget=30, penalty="group-lasso", groups="template",
                 feature_budget=None, order=None, group_weights="log2", loss="perceptron",
                 n_epochs=5, K=1000, eta0=1.0, random_state=None, verbose=0,
                 stream=False):
        self.estimator = estimator
        self.budget = budget
        self.penalty = penalty
        self.groups = groups
        self.feature_budget = feature_budget
        self.order = order
        self.group_weights = group_weights
        self.loss = loss
        self.n_epochs = n_epochs
        self.K = K
        self.eta0 = eta0
        self.random_state = random_state
        self.verbose = verbose
        self.stream = stream

    # ---------------------------------------------------------- validation
    def _check_params(self):
        if not callable(getattr(self.estimator, "selection_problem", None)):
            raise ValueError(f"estimator must be a structlearn estimator (LabelRanker, "
                             f"OrdinalRegressor, MultiLabelClassifier, SequenceTagger or "
                             f"DependencyParser) or have a selection_problem(X, y, loss) "
                             f"method, got {type(self.estimator).__name__}.")
        if self.penalty not in PENALTIES:
            raise ValueError(f"penalty must be one of {PENALTIES}, got {self.penalty!r}.")
        check_int("budget", self.budget)
        check_int("K", self.K)
        check_int("n_epochs", self.n_epochs)
        if self.penalty == "sparse-group-lasso":
            if self.feature_budget is None:
                raise ValueError("penalty='sparse-group-lasso' needs feature_budget (the "
                                 "number of non-zero weights its L1 part keeps).")
            check_int("feature_budget", self.feature_budget)
        if self.penalty == "coarse-to-fine" and self.order is None:
            raise ValueError("penalty='coarse-to-fine' needs order: (coarse, fine) pairs "
                             "of group names.")
        if not isinstance(self.eta0, numbers.Real) or isinstance(self.eta0, bool) or \
                not (np.isfinite(self.eta0) and self.eta0 > 0):
            raise ValueError(f"eta0 must be a positive number, got {self.eta0!r}.")
        if isinstance(self.groups, str) and self.groups not in GROUPINGS:
            raise ValueError(f"groups must be one of {GROUPINGS} or an array of group "
                             f"names per column, got {self.groups!r}.")
        loss = get_loss(self.estimator.loss if self.loss is None else self.loss)
        return loss

    def _column_groups(self, setup):
        """Group id of every column, group names, and whether transform
        works by templates."""
        groups = self.groups
        if isinstance(groups, str) and groups == "template":
            names = list(setup.template_names)
            return setup.column_template, names, True
        if isinstance(groups, str):      # 'label': one group per column
            if setup.column_names is None:
                raise ValueError("groups='label' is not available for this estimator: "
                                 "its features have no labels to group over; use "
                                 "groups='template'.")
            return np.arange(setup.n_columns), list(setup.column_names()), False
        arr = np.asarray(groups, dtype=object)
        if not isinstance(setup.restrictor, ArrayRestrictor):
            raise ValueError("an array of groups needs array input (one group per "
                             "column); for feature dicts use groups='template' or "
                             "'label'.")
        if arr.ndim != 1 or len(arr) != setup.n_columns:
            raise ValueError(f"groups must give one group per input column: expected "
                             f"{setup.n_columns} entries, got shape {arr.shape}.")
        missing = [j for j, g in enumerate(arr)
                   if g is None or (isinstance(g, float) and not np.isfinite(g))]
        if missing:
            raise ValueError(f"groups do not cover the features: columns {missing[:5]} have "
                             f"no group (None / NaN).")
        names, col_group = np.unique(arr.astype(str), return_inverse=True)
        return col_group.astype(np.int64), [str(n) for n in names], False

    def _group_weights(self, sizes):
        gw = self.group_weights
        if isinstance(gw, str):
            if gw == "log2":
                return np.maximum(1.0, np.log2(np.maximum(sizes, 1)))
            if gw == "uniform":
                return np.ones(len(sizes))
            raise ValueError(f"group_weights must be 'log2', 'uniform' or an array, got "
                             f"{gw!r}.")
        w = np.asarray(gw, dtype=np.float64)
        if w.shape != (len(sizes),) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"group_weights must hold one positive finite weight per "
                             f"group ({len(sizes)}), got shape {w.shape}.")
        return w

    def _template_layers(self, names, sizes, d):
        """The layers of the group penalties whose atoms are the groups
        ('group-lasso', 'coarse-to-fine'), ``sizes`` the weights per group."""
        M = len(names)
        if self.penalty == "group-lasso":
            return [(np.arange(M), d, self.budget)]
        closure, sets = _layers_of_order(names, self.order)
        layers = []
        for members in sets:
            atom_group = np.full(M, -1, dtype=np.int64)
            for k, a in enumerate(members):
                atom_group[sorted(closure[a])] = k
            # d of the union group G_a: from its size (or the given d_a)
            union_sizes = np.array([sizes[sorted(closure[a])].sum() for a in members])
            dk = self._group_weights(union_sizes) if isinstance(self.group_weights, str) \
                else d[members]
            bk = max(1, int(round(self.budget * len(members) / M)))
            layers.append((atom_group, dk, bk))
        return layers

    def _fit_streamed(self, est, X, y, loss, t_start):
        """:meth:`fit` with ``stream=True`` (see the class docstring)."""
        if not (isinstance(self.groups, str) and self.groups == "template") or \
                self.penalty not in ("group-lasso", "coarse-to-fine"):
            raise ValueError("stream=True selects whole templates: it needs "
                             "groups='template' and penalty='group-lasso' or "
                             "'coarse-to-fine'.")
        hook = getattr(est, "selection_stream", None)
        problem = hook(X, y, loss) if callable(hook) else None
        if problem is None:
            raise ValueError(
                f"stream=True: {type(est).__name__} cannot stream this input (streaming "
                f"needs a SequenceTagger on feature dicts without nested dict values, "
                f"with n_features=None and min_freq=1); use stream=False.")
        names = list(problem.template_names)
        M = len(names)
        sizes = problem.template_sizes
        d = self._group_weights(sizes)
        layers = self._template_layers(names, sizes, d)
        if self.verbose:
            print(f"[GroupLassoSelector] streamed: {problem.n_samples} examples, "
                  f"{int(sizes.sum())} weights, {M} groups, penalty={self.penalty}, "
                  f"loss={loss}")
        weights, history = online_prox_grad_streamed(problem, layers, self.n_epochs,
                                                     self.K, float(self.eta0),
                                                     self.random_state, self.verbose)
        weights.refresh_norms()
        gnorm = weights.norms()
        selected = [names[m] for m in np.flatnonzero(gnorm > 0)]
        self.group_names_ = names
        self.group_norms_ = gnorm
        self.selected_groups_ = selected
        self.support_ = None
        self.n_features_selected_ = None
        self.n_weights_selected_ = weights.n_nonzero()
        self.coef_ = None
        self.history_ = history
        self.n_groups_ = M
        self._by_template = True
        self._kept_templates = selected
        self._restrictor = DictRestrictor(None)
        for attr in ("n_features_in_", "feature_names_in_"):
            self.__dict__.pop(attr, None)
        if self.verbose:
            print(f"[GroupLassoSelector] {len(selected)} of {M} groups, "
                  f"{self.n_weights_selected_} non-zero weights "
                  f"({time.perf_counter() - t_start:.1f}s)")
        return self

    # ----------------------------------------------------------------- fit
    @interruptible
    def fit(self, X, y):
        """Select groups on (X, y).

        Returns
        -------
        self
        """
        t_start = time.perf_counter()
        loss = self._check_params()
        est = clone(self.estimator)
        if not isinstance(self.stream, (bool, np.bool_)):
            raise ValueError(f"stream must be True or False, got {self.stream!r}.")
        if self.stream:
            return self._fit_streamed(est, X, y, loss, t_start)
        setup = est.selection_problem(X, y, loss)
        col_group, names, by_template = self._column_groups(setup)
        if isinstance(setup.restrictor, TemplateRestrictor) and (
                not by_template or self.penalty in ("l1", "sparse-group-lasso")):
            raise ValueError("DependencyParser features are arc templates computed from "
                             "the sentences: only template-level selection "
                             "(groups='template', penalty='group-lasso' or "
                             "'coarse-to-fine') can be applied to its input.")
        M = len(names)
        pc = setup.param_column
        param_group = np.where(pc >= 0, col_group[np.maximum(pc, 0)], -1)
        sizes = np.bincount(param_group[param_group >= 0], minlength=M)
        d = self._group_weights(sizes)
        penalized = np.flatnonzero(param_group >= 0)
        # atoms: the finest sets of weights the groups are unions of
        if self.penalty in ("group-lasso", "coarse-to-fine"):
            atom_of = param_group
            layers = self._template_layers(names, sizes, d)
        else:   # single weights are the atoms
            atom_of = np.full(len(pc), -1, dtype=np.int64)
            atom_of[penalized] = np.arange(len(penalized))
            singles = (np.arange(len(penalized)), np.ones(len(penalized)),
                       self.budget if self.penalty == "l1" else self.feature_budget)
            if self.penalty == "l1":
                layers = [singles]
            else:
                layers = [(param_group[penalized], d, self.budget), singles]
        if self.verbose:
            print(f"[GroupLassoSelector] {setup.problem.n_samples} examples, "
                  f"{setup.n_columns} features, {len(pc)} weights, {M} groups, "
                  f"penalty={self.penalty}, loss={loss}")
        theta, history = online_prox_grad(setup.problem, atom_of, layers, self.n_epochs,
                                          self.K, float(self.eta0), self.random_state,
                                          self.verbose)
        nz = theta != 0
        gnorm = np.sqrt(np.bincount(param_group[param_group >= 0],
                                    weights=theta[param_group >= 0] ** 2, minlength=M))
        if self.penalty in ("l1", "sparse-group-lasso"):
            support = np.zeros(setup.n_columns, dtype=bool)
            support[pc[nz & (pc >= 0)]] = True
        else:
            support = (gnorm > 0)[col_group]
        selected = [names[m] for m in np.flatnonzero(gnorm > 0)]
        kept_templates = sorted({setup.template_names[t]
                                 for t in setup.column_template[support]})
        # everything succeeded: only now touch the selector's state
        self.group_names_ = names
        self.group_norms_ = gnorm
        self.selected_groups_ = selected
        self.support_ = support
        self.n_features_selected_ = int(support.sum())
        self.n_weights_selected_ = int(nz.sum())
        self.coef_ = theta
        self.history_ = history
        self.n_groups_ = M
        self._by_template = by_template and self.penalty in ("group-lasso", "coarse-to-fine")
        self._kept_templates = kept_templates
        self._restrictor = setup.restrictor
        if _is_table(setup.restrictor):
            validate_data(self, X, reset=True, skip_check_array=True)
        else:
            for attr in ("n_features_in_", "feature_names_in_"):
                self.__dict__.pop(attr, None)
        if self.verbose:
            print(f"[GroupLassoSelector] {len(selected)} of {M} groups, "
                  f"{self.n_features_selected_} of {setup.n_columns} features, "
                  f"{self.n_weights_selected_} non-zero weights "
                  f"({time.perf_counter() - t_start:.1f}s)")
        return self

    def get_support(self, indices=False):
        """Mask (or indices) of the kept columns of the estimator's features."""
        check_is_fitted(self, "support_")
        self._check_columns()
        return np.flatnonzero(self.support_) if indices else self.support_.copy()

    def transform(self, X):
        """X without the features of unselected groups, in X's own form:
        feature dicts lose the keys of unselected templates (or the items of
        unselected features), arrays their columns; parser sentences come
        back as :class:`SelectedSentences` carrying the selected templates."""
        check_is_fitted(self, "support_")
        if _is_table(self._restrictor):
            validate_data(self, X, reset=False, skip_check_array=True)
        else:
            container = _transform_output(self)
            if container != "default":
                raise ValueError(
                    f"set_output(transform={container!r}) does not apply to this "
                    f"selector: it was fitted on sequences or sentences, and transform "
                    f"returns them in the same form, not a 2-D table. Use "
                    f"set_output(transform='default').")
        return self._restrictor.transform(X, self.support_, self._kept_templates,
                                          self._by_template)

    def get_feature_names_out(self, input_features=None):
        """Names of the features kept by :meth:`transform`.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            2-D input only: the names of the input columns.  None: the
            ``feature_names_in_`` seen in fit, or ``"x0", "x1", ...``.  When
            given they must be as many as the columns seen in fit (and equal
            to ``feature_names_in_`` when that exists).

        Returns
        -------
        ndarray of str objects
            The names of the kept columns, in input order.  For sequence
            input (see the class Notes): the kept features as the
            estimator's vectorizer names them; ``input_features`` must then
            be None.

        Raises
        ------
        ValueError
            For wrong ``input_features``, or for parser sentences, whose
            hashed arc features have no names (the kept templates are
            ``selected_groups_``).
        """
        check_is_fitted(self, "support_")
        self._check_columns()
        if _is_table(self._restrictor):
            names = _input_feature_names(self, input_features)
        elif input_features is not None:
            raise ValueError("input_features applies to 2-D input only; this selector "
                             "was fitted on sequences or sentences, whose feature names "
                             "come from the estimator's vectorizer. Pass None.")
        elif isinstance(self._restrictor, DictRestrictor):
            names = np.asarray(self._restrictor.vectorizer.get_feature_names_out(),
                               dtype=object)
        elif isinstance(self._restrictor, SequenceArrayRestrictor):
            names = np.array([f"x{j}" for j in range(len(self.support_))], dtype=object)
        elif isinstance(self._restrictor, TemplateRestrictor):
            raise ValueError(
                "the parser's arc features are hashed and have no names, so this "
                "selector has no output feature names; the kept arc templates are "
                f"selected_groups_ ({len(self.selected_groups_)} of {self.n_groups_}).")
        else:
            raise ValueError(f"the estimator's input ({type(self._restrictor).__name__}) "
                             f"has no feature names; see support_ and selected_groups_.")
        return names[self.support_]

    def _check_columns(self):
        if self.support_ is None:
            raise ValueError(
                "this selector was fitted with stream=True, which keeps no column "
                "vocabulary: it has no column mask or feature names; the kept "
                f"templates are selected_groups_ ({len(self.selected_groups_)} of "
                f"{self.n_groups_}).")

    def fit_transform(self, X, y=None, **fit_params):
        return self.fit(X, y).transform(X)
