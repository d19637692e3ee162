"""Group-lasso feature selection with the sparseptron (Martins et al. 2011).

:class:`GroupLassoSelector` runs the online proximal-gradient algorithm of
Martins, Smith, Aguiar & Figueiredo (2011, "Structured Sparsity in
Structured Prediction", Algorithm 1) on the training problem of any of the
library's estimators: a (sub)gradient step of the loss per training example,
and every ``K`` examples a proximal step of the group regulariser whose
strength is set by a *budget* -- at most ``B`` groups survive each proximal
step (budget-driven shrinkage, Sec. 4).  With the perceptron loss (the
default) this is the *sparseptron*.  The selector is the first step of a
pipeline; the paper's debiasing refit, an unregularised (or L2) model on the
selected features, is the next step::

    make_pipeline(GroupLassoSelector(SequenceTagger(), budget=30),
                  SequenceTagger(loss="hinge"))

Groups are sets of features: the *templates* the estimators record (the
feature-dict key for :class:`~structlearn.SequenceTagger`, the arc template
for :class:`~structlearn.DependencyParser`, each column for array input),
*label-based* groups (one feature across all labels), or an array mapping
the columns of array input to group names.  A feature conjoined with a label
is a model weight; a group holds the weights of its features.

Regularisers (``penalty``), in the paper's notation ``Omega(theta) =
sum_m d_m ||theta_m||_2``:

* ``'group-lasso'``: non-overlapping groups, ``d_m = log2 |G_m|`` by
  default (the paper's choice; ``|G_m|`` counts the group's weights; at
  least 1, so that a group of one or two weights is not free);
  ``budget`` = number of groups kept.
* ``'l1'``: singleton groups (``d = 1``), ``budget`` = number of non-zero
  weights; the soft-thresholding of Eq. 13.
* ``'sparse-group-lasso'`` (Friedman et al. 2010): the group lasso (with
  ``budget``) and the L1 norm (with ``feature_budget`` non-zero weights),
  two non-overlapping sets applied in sequence.
* ``'coarse-to-fine'``: overlapping groups from a partial order on the
  groups (``order``: pairs ``(coarse, fine)``): group ``G_a`` holds the
  features of ``a`` and of every group finer than ``a``, so a fine group is
  only selected with all its coarser ones.  As in the paper, the groups are
  split into sets of non-overlapping groups (greedily, in topological
  order) whose proximal steps are applied in sequence; the pseudo-budget
  ``budget`` ignores the overlaps and is split among the sets in proportion
  to their sizes (at least 1 each).

Choices where the paper is silent or ambiguous (documented here):

* Budget threshold: groups are ranked by ``||theta_m|| / d_m`` (the quantity
  Eq. 14 compares with the threshold; with equal ``d_m`` this is the
  paper's ranking by norm) and the threshold is the mean of the ``B``-th and
  ``(B+1)``-th values, so that at most ``B`` groups survive.
* A last budget-driven proximal step runs after the final example, so the
  output model respects the budgets whatever the number of examples.
* Step sizes ``eta_t = eta0 / ceil(t / N)`` (``N`` examples, i.e. divided by
  the epoch number), the paper's suggestion; with the perceptron loss the
  selection does not depend on ``eta0`` (footnote 7).
* A deleted group restarts from zero weights the next time one of its
  features gets a non-zero gradient (the "oscillation" of the paper's
  Figure 2).

Efficiency (Sec. 4): a gradient step costs the number of weights the
example touches; a proximal step costs the number of groups (or *atoms*, the
finest sets the groups are unions of: the groups themselves, the templates
of a coarse-to-fine order, or single weights for the L1 penalties) -- each
atom is stored as ``theta_a = c_a xi_a`` with its squared norm
``||xi_a||^2`` kept up to date, so scaling or deleting a group touches no
feature.  Weights are stored densely over the estimator's parameters (the
features its vectorizer found, conjoined with the labels they were seen
with); ``history_`` records how many are non-zero after every proximal step
(the paper's memory footprint, Figure 2).
"""

import numbers
import time
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._validation import check_int
from .kernels.selection import atom_fold, atom_gather, atom_step
from .losses import get_loss

__all__ = ["GroupLassoSelector", "SelectedSentences", "group_soft_threshold",
           "soft_threshold"]

PENALTIES = ("group-lasso", "l1", "sparse-group-lasso", "coarse-to-fine")
GROUPINGS = ("template", "label")


# ------------------------------------------------------------ prox operators
def soft_threshold(theta, tau):
    """Proximity operator of ``tau ||theta||_1`` (Eq. 13)."""
    theta = np.asarray(theta, dtype=np.float64)
    return np.sign(theta) * np.maximum(np.abs(theta) - tau, 0.0)


def group_soft_threshold(theta, groups, tau, weights=None):
    """Proximity operator of ``tau sum_m d_m ||theta_m||_2`` (Eq. 14).

    ``groups[i]`` is the group of coordinate ``i`` (-1: not penalised);
    ``weights`` the ``d_m`` (default 1).  A group whose norm is at most
    ``tau d_m`` is zeroed, the others are scaled so that their norm
    decreases by ``tau d_m``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    groups = np.asarray(groups, dtype=np.int64)
    mask = groups >= 0
    n_groups = int(groups.max(initial=-1)) + 1
    d = np.ones(n_groups) if weights is None else np.asarray(weights, dtype=np.float64)
    norms = np.sqrt(np.bincount(groups[mask], weights=theta[mask] ** 2, minlength=n_groups))
    factor = np.zeros(n_groups)
    alive = norms > tau * d
    factor[alive] = 1.0 - tau * d[alive] / norms[alive]
    out = theta.copy()
    out[mask] *= factor[groups[mask]]
    return out


# --------------------------------------------------- estimator integration
class SelectionSetup:
    """What an estimator hands to :class:`GroupLassoSelector`.

    Attributes
    ----------
    problem : a training problem (see :mod:`structlearn.solvers`)
    param_column : ndarray of int64 (n_params,)
        Input column (feature) of every weight; -1 for weights that belong
        to no feature (transitions, biases): never penalised.
    n_columns : int
    column_template : ndarray of int64 (n_columns,)
        Template of every column.
    template_names : list of str
    restrictor : object with ``transform(X, keep, templates, by_template)``
        Drops the unselected features from the estimator's input.
    label_groups : bool
        Whether label-based groups differ from per-column groups.
    column_names : callable or None
        Returns the names of the columns (for ``groups='label'``).
    """

    def __init__(self, problem, param_column, n_columns, column_template, template_names,
                 restrictor, label_groups=True, column_names=None):
        self.problem = problem
        self.param_column = np.asarray(param_column, dtype=np.int64)
        self.n_columns = int(n_columns)
        self.column_template = np.asarray(column_template, dtype=np.int64)
        self.template_names = list(template_names)
        self.restrictor = restrictor
        self.label_groups = label_groups
        self.column_names = column_names


class SelectedSentences(list):
    """A list of sentences that carries the arc templates selected by a
    :class:`~structlearn.feature_selection.GroupLassoSelector` (``arc_templates``).

    :class:`structlearn.DependencyParser` with ``templates=None`` fits on
    these templates only, so that a selector followed by a parser is a
    pipeline.  (Slicing returns a plain list.)
    """

    def __init__(self, sentences, arc_templates):
        super().__init__(sentences)
        self.arc_templates = list(arc_templates)


class _TemplateRestrictor:
    """Parser input: the sentences themselves, marked with the templates."""

    def __init__(self, template_names):
        self.template_names = template_names

    def transform(self, X, keep, templates, by_template):
        from .feature_extraction import check_sentences

        check_sentences(X)
        return SelectedSentences(X, templates)


class _ArrayRestrictor:
    """A 2-D array / sparse matrix: the kept columns."""

    def __init__(self, n_columns):
        self.n_columns = n_columns

    def transform(self, X, keep, templates, by_template):
        from sklearn.utils import check_array

        X = check_array(X, accept_sparse="csr", dtype=None, ensure_all_finite=False)
        if X.shape[1] != self.n_columns:
            raise ValueError(f"X has {X.shape[1]} features, but the selector was fitted "
                             f"on {self.n_columns} features.")
        return X[:, np.flatnonzero(keep)]


class _SequenceArrayRestrictor(_ArrayRestrictor):
    """Sequences of 2-D arrays / sparse matrices: the kept columns of each."""

    def transform(self, X, keep, templates, by_template):
        cols = np.flatnonzero(keep)
        out = []
        for i, seq in enumerate(X):
            if isinstance(seq, (list, tuple)) and len(seq) == 0:
                out.append(seq)
                continue
            if not hasattr(seq, "shape") or len(seq.shape) != 2 or \
                    seq.shape[1] != self.n_columns:
                raise ValueError(f"sequence {i} (X[{i}]) must be a 2-D array with "
                                 f"{self.n_columns} columns, as in fit.")
            out.append(seq[:, cols])
        return out


class _DictRestrictor:
    """Sequences of feature dicts: drop the keys of unselected templates
    (``by_template``) or the items whose feature was not selected."""

    def __init__(self, vectorizer):
        self.vectorizer = vectorizer

    def transform(self, X, keep, templates, by_template):
        from .feature_extraction import TokenVectorizer

        if TokenVectorizer._input_type(X) == "array":
            raise ValueError("X holds arrays but the selector was fitted on feature dicts.")
        for i, seq in enumerate(X):
            for t, tok in enumerate(seq):
                if not isinstance(tok, Mapping):
                    raise ValueError(f"sequence {i}, position {t} (X[{i}][{t}]): expected "
                                     f"a dict of features, got {type(tok).__name__}.")
        if by_template:
            kept = set(templates)
            return [[{k: v for k, v in tok.items() if k in kept} for tok in seq]
                    for seq in X]
        column = self.vectorizer._item_column
        # a value that expands into several features (nested dict, list) is
        # kept whole when its template has a kept feature
        kept_templates = set(templates)

        def keep_item(k, v):
            c = column(k, v)
            if c is None:
                return k in kept_templates
            return c >= 0 and bool(keep[c])

        return [[{k: v for k, v in tok.items() if keep_item(k, v)} for tok in seq]
                for seq in X]


class _AtomWeights:
    """Weights ``theta_p = c_a xi_p`` for the atom ``a`` of ``p`` (Sec. 4's
    ``(xi_m, c_m, rho_m)`` representation, ``rho = c^2 ||xi||^2``);
    parameters of no atom (``atom_of < 0``) are stored as they are."""

    def __init__(self, atom_of, n_atoms):
        self.atom_of = np.ascontiguousarray(atom_of, dtype=np.int64)
        self.n_atoms = int(n_atoms)
        self.xi = np.zeros(len(self.atom_of))
        self.scale = np.ones(self.n_atoms)
        self.sq = np.zeros(self.n_atoms)
        in_atom = np.flatnonzero(self.atom_of >= 0)
        order = np.argsort(self.atom_of[in_atom], kind="stable")
        self.members = in_atom[order]
        self.members_ptr = np.zeros(self.n_atoms + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.atom_of[in_atom], minlength=self.n_atoms),
                  out=self.members_ptr[1:])

    def step(self, cols, vals, eta):
        return atom_step(self.xi, self.atom_of, self.scale, self.sq, self.members_ptr,
                          self.members, np.asarray(cols, dtype=np.int64),
                          np.asarray(vals, dtype=np.float64), float(eta))

    def gather(self, params, out):
        atom_gather(self.xi, self.atom_of, self.scale, np.asarray(params, dtype=np.int64), out)

    def theta(self):
        out = self.xi.copy()
        m = self.atom_of >= 0
        out[m] *= self.scale[self.atom_of[m]]
        return out

    def norms(self):
        """``||theta_a||`` of every atom."""
        return np.abs(self.scale) * np.sqrt(np.maximum(self.sq, 0.0))

    def scale_atoms(self, factors):
        """Multiply atom ``a`` by ``factors[a]`` (0 deletes it)."""
        self.scale *= factors
        atom_fold(self.xi, self.scale, self.sq, self.members_ptr, self.members, 1e-8)

    def refresh_norms(self):
        """Recompute ``||xi_a||^2`` exactly (rounding drift of the updates)."""
        m = self.atom_of >= 0
        self.sq = np.bincount(self.atom_of[m], weights=self.xi[m] ** 2,
                              minlength=self.n_atoms)

    def n_nonzero(self):
        """Number of non-zero weights (the model's memory footprint)."""
        return int(np.count_nonzero(self.theta()))


class _Layer:
    """A set of non-overlapping groups of atoms with weights ``d`` and a
    budget (the number of groups a proximal step leaves non-zero)."""

    def __init__(self, atom_group, weights, budget):
        self.atom_group = np.asarray(atom_group, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.budget = int(budget)

    def group_norms(self, atom_norms):
        m = self.atom_group >= 0
        return np.sqrt(np.bincount(self.atom_group[m], weights=atom_norms[m] ** 2,
                                   minlength=len(self.weights)))

    def budget_prox(self, w):
        """Budget-driven shrinkage: if more than ``budget`` groups are
        non-zero, the proximal step (Eq. 14) whose threshold is the mean of
        the ``B``-th and ``(B+1)``-th values of ``||theta_m|| / d_m``.
        Returns the threshold (0: nothing to do)."""
        gn = self.group_norms(w.norms())
        ratio = gn / self.weights
        if np.count_nonzero(ratio) <= self.budget:
            return 0.0
        top = -np.partition(-ratio, [self.budget - 1, self.budget])
        tau = 0.5 * (top[self.budget - 1] + top[self.budget])
        factor = np.zeros(len(gn))
        alive = ratio > tau
        factor[alive] = 1.0 - tau * self.weights[alive] / gn[alive]
        f_atom = np.ones(w.n_atoms)
        m = self.atom_group >= 0
        f_atom[m] = factor[self.atom_group[m]]
        w.scale_atoms(f_atom)
        return tau


def online_prox_grad(problem, weights, layers, n_epochs=5, K=1000, eta0=1.0,
                     random_state=None, verbose=0):
    """Algorithm 1 of Martins et al. (2011) with budget-driven shrinkage.

    One example at a time, in a random order per epoch: a gradient step of
    the problem's loss with ``eta_t = eta0 / epoch``, and every ``K``
    examples a budget-driven proximal step per layer (in sequence).  Uses
    the problem's ``params_of`` / ``sparse_value_and_grad`` when it has
    them (a step then costs what the example touches), its dense
    ``value_and_grad`` otherwise.

    Returns
    -------
    theta : ndarray (n_params,)
    history : list of (t, n_nonzero_weights, thresholds) after each proximal step
    """
    rng = np.random.RandomState(random_state)
    n = problem.n_samples
    sparse = hasattr(problem, "sparse_value_and_grad") and hasattr(problem, "params_of")
    buf = np.zeros(problem.n_params)
    history = []
    t = 0
    t0 = time.perf_counter()
    for epoch in range(1, n_epochs + 1):
        eta = eta0 / epoch
        n_moves = 0
        for i in rng.permutation(n):
            t += 1
            idx = np.array([i], dtype=np.int64)
            if sparse:
                weights.gather(problem.params_of(idx), buf)
                _, cols, vals = problem.sparse_value_and_grad(buf, idx, 1.0)
            else:
                _, g = problem.value_and_grad(weights.theta(), idx)
                cols = np.flatnonzero(g)
                vals = g[cols]
            n_moves += weights.step(cols, vals, eta)
            if t % K == 0:
                taus = [layer.budget_prox(weights) for layer in layers]
                history.append((t, weights.n_nonzero(), taus))
        weights.refresh_norms()
        if verbose:
            print(f"[sparseptron] epoch {epoch}: {n_moves} updates, "
                  f"{weights.n_nonzero()} non-zero weights "
                  f"({time.perf_counter() - t0:.1f}s)")
    taus = [layer.budget_prox(weights) for layer in layers]
    history.append((t, weights.n_nonzero(), taus))
    return weights.theta(), history


# ---------------------------------------------------------------- selector
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


class GroupLassoSelector(TransformerMixin, BaseEstimator):
    """Group-lasso feature selection by the online proximal-gradient
    algorithm (the sparseptron with the default perceptron loss).

    See the module docstring for the algorithm, the groups, the penalties
    and the choices made where the paper is silent.

    Parameters
    ----------
    estimator : a structlearn estimator
        Defines the input, the features and their templates, the output
        structure and (unless ``loss`` is given) the loss.  It is cloned;
        only its problem is used.
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

    Attributes
    ----------
    group_names_ : list of str
    selected_groups_ : list of str
        Names of the groups with a non-zero weight.
    group_norms_ : ndarray (n_groups,)
        ``||theta_m||_2`` of every group at the end.
    support_ : ndarray of bool (n_columns,)
        Columns (features) kept by :meth:`transform`: those of the selected
        groups; with ``'l1'`` and ``'sparse-group-lasso'``, those with a
        non-zero weight.
    n_features_selected_ : int
    n_weights_selected_ : int
        Non-zero weights of the selection model.
    coef_ : ndarray (n_params,)
        The selection model's weights (in the estimator's parameter layout).
    history_ : list of (t, n_nonzero_weights, thresholds)
        After each proximal step: examples seen, non-zero weights, and the
        threshold ``eta_t sigma_jt`` of each set of groups.
    """

    def __init__(self, estimator, budget=30, penalty="group-lasso", groups="template",
                 feature_budget=None, order=None, group_weights="log2", loss="perceptron",
                 n_epochs=5, K=1000, eta0=1.0, random_state=None, verbose=0):
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

    # ---------------------------------------------------------- validation
    def _check_params(self):
        if not hasattr(self.estimator, "_selection_setup"):
            raise ValueError(f"estimator must be a structlearn estimator (LabelRanker, "
                             f"OrdinalRegressor, MultiLabelClassifier, SequenceTagger or "
                             f"DependencyParser), got {type(self.estimator).__name__}.")
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
        if not isinstance(setup.restrictor, _ArrayRestrictor):
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

    # ----------------------------------------------------------------- fit
    def fit(self, X, y):
        """Select groups on (X, y).

        Returns
        -------
        self
        """
        t_start = time.perf_counter()
        loss = self._check_params()
        est = clone(self.estimator)
        setup = est._selection_setup(X, y, loss)
        col_group, names, by_template = self._column_groups(setup)
        if isinstance(setup.restrictor, _TemplateRestrictor) and (
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
        if self.penalty == "group-lasso":
            w = _AtomWeights(param_group, M)
            layers = [_Layer(np.arange(M), d, self.budget)]
        elif self.penalty == "coarse-to-fine":
            closure, sets = _layers_of_order(names, self.order)
            w = _AtomWeights(param_group, M)
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
                layers.append(_Layer(atom_group, dk, bk))
        else:   # single weights are the atoms
            atom_of = np.full(len(pc), -1, dtype=np.int64)
            atom_of[penalized] = np.arange(len(penalized))
            w = _AtomWeights(atom_of, len(penalized))
            singles = _Layer(np.arange(len(penalized)), np.ones(len(penalized)),
                             self.budget if self.penalty == "l1" else self.feature_budget)
            if self.penalty == "l1":
                layers = [singles]
            else:
                layers = [_Layer(param_group[penalized], d, self.budget), singles]
        if self.verbose:
            print(f"[GroupLassoSelector] {setup.problem.n_samples} examples, "
                  f"{setup.n_columns} features, {len(pc)} weights, {M} groups, "
                  f"penalty={self.penalty}, loss={loss}")
        theta, history = online_prox_grad(setup.problem, w, layers, self.n_epochs, self.K,
                                          float(self.eta0), self.random_state,
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
        if self.verbose:
            print(f"[GroupLassoSelector] {len(selected)} of {M} groups, "
                  f"{self.n_features_selected_} of {setup.n_columns} features, "
                  f"{self.n_weights_selected_} non-zero weights "
                  f"({time.perf_counter() - t_start:.1f}s)")
        return self

    def get_support(self, indices=False):
        """Mask (or indices) of the kept columns of the estimator's features."""
        check_is_fitted(self, "support_")
        return np.flatnonzero(self.support_) if indices else self.support_.copy()

    def transform(self, X):
        """X without the features of unselected groups, in X's own form:
        feature dicts lose the keys of unselected templates (or the items of
        unselected features), arrays their columns; parser sentences come
        back as :class:`SelectedSentences` carrying the selected templates."""
        check_is_fitted(self, "support_")
        return self._restrictor.transform(X, self.support_, self._kept_templates,
                                          self._by_template)

    def fit_transform(self, X, y=None, **fit_params):
        return self.fit(X, y).transform(X)
