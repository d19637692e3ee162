"""Ordinal regression."""

import warnings

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import column_or_1d

from sklearn.utils.class_weight import compute_sample_weight

from .._validation import as_target_array, check_sample_weight
from ..metrics import _ordinal_mae
from ..losses import get_loss
from ..structures import OrderSimplex
from ._base import StructuredLinearModel


def _has_distribution(est):
    """Whether the loss's prediction map lies in the order simplex (its
    threshold marginals then give class probabilities)."""
    loss = est.loss_ if hasattr(est, "loss_") else get_loss(est.loss)
    return loss.mean_set(OrderSimplex) == "marginal"


def _check_ordinal_labels(y, n_samples):
    """y as a 1-D array of ``n_samples`` labels (a column vector is
    flattened with a warning); missing (None, NaN) and complex labels are
    errors naming their position."""
    y = as_target_array(y, "y", "a 1-D array of ordinal labels (n_samples,)")
    if y.ndim == 2 and y.shape[1] == 1:
        y = column_or_1d(y, warn=True)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D (n_samples,), got shape {y.shape}.")
    if len(y) != n_samples:
        raise ValueError(f"X has {n_samples} samples but y has {len(y)}.")
    if y.dtype.kind == "c":
        raise ValueError(f"y has complex labels (dtype {y.dtype}); ordinal labels must be "
                         f"real numbers or strings.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        bad = int(np.argwhere(~np.isfinite(y))[0, 0])
        raise ValueError(f"y has a non-finite label at position {bad}.")
    if y.dtype.kind == "O":
        for i, label in enumerate(y):
            if label is None or (isinstance(label, (float, np.floating))
                                 and not np.isfinite(label)):
                raise ValueError(f"y has a missing label at position {i}: {label!r}.")
            if isinstance(label, (complex, np.complexfloating)):
                raise ValueError(f"y has a complex label at position {i}: {label!r}.")
    return y


def _ordered_categories(y):
    """The categories of an ordered pandas categorical ``y`` (a
    ``pd.Categorical`` or a Series of that dtype) as an ndarray, lowest
    first; None for anything else (unordered categoricals included).  Read
    from the dtype's ``ordered`` and ``categories``, without importing
    pandas."""
    dtype = getattr(y, "dtype", None)
    if getattr(dtype, "ordered", None) is True and hasattr(dtype, "categories"):
        return np.asarray(dtype.categories)
    return None


def _categorical_classes(y, categories):
    """``(classes, y_idx)`` for labels ``y`` of an ordered categorical: the
    categories that occur in ``y``, in the categorical's order."""
    rank = {c: r for r, c in enumerate(categories.tolist())}
    pos = np.fromiter((rank[v] for v in y.tolist()), dtype=np.int64, count=len(y))
    used = np.unique(pos)
    return categories[used], np.searchsorted(used, pos)


def _sorted_classes(y):
    """``(classes, y_idx)``: the distinct labels of ``y`` sorted, and the
    position of every label among them.

    String labels are sorted alphabetically, which is rarely their order
    (``'high' < 'low' < 'medium'``): that fit warns, naming the order it
    uses and how to give another (an ordered pandas categorical)."""
    try:
        classes, y_idx = np.unique(y, return_inverse=True)
    except TypeError as exc:
        first = type(y[0])
        i = next((i for i, v in enumerate(y) if type(v) is not first), 0)
        raise ValueError(f"ordinal labels must be sortable: y[0] is "
                         f"{first.__name__} but y[{i}] = {y[i]!r} is "
                         f"{type(y[i]).__name__} ({exc}).") from exc
    if len(classes) > 2 and all(isinstance(c, str) for c in classes.tolist()):
        shown = classes.tolist() if len(classes) <= 8 else classes[:8].tolist() + ["..."]
        warnings.warn(f"OrdinalRegressor orders string labels alphabetically: {shown}. "
                      f"If that is not their order, pass y as an ordered pandas "
                      f"categorical (pd.Categorical(y, categories=[lowest, ..., "
                      f"highest], ordered=True)) or as integers.", UserWarning,
                      stacklevel=4)
    return classes, y_idx


class OrdinalRegressor(ClassifierMixin, StructuredLinearModel):
    """Ordinal regression on the order simplex (all-threshold encoding).

    ``k`` ordered classes are encoded by ``k - 1`` thresholds,
    ``phi(y)_t = 1[y > t]`` (Blondel 2019), each threshold with its own
    linear score.  Any sortable labels work: ``classes_`` holds them in
    order and non-contiguous values are fine (the model sees class indices).
    An *ordered* pandas categorical ``y`` (``pd.Categorical(...,
    ordered=True)`` or a Series of that dtype) defines the order instead:
    ``classes_`` holds its categories that occur in ``y``, lowest first
    (e.g. ``['low', 'medium', 'high']``, not the alphabetical ``['high',
    'low', 'medium']``).  Unordered categoricals, Series and arrays are
    sorted.

    A DataFrame ``X`` has its column names recorded in
    ``feature_names_in_``; ``predict``, ``score`` and the other methods
    raise a ValueError on renamed or reordered columns (and warn, as
    scikit-learn does, when names appear or disappear).

    ``score`` returns the **negative mean absolute error measured in class
    positions** (so that larger is better, as scikit-learn scorers expect);
    for contiguous integer labels this is minus the usual MAE.

    Parameters
    ----------
    loss : str or Loss, default='projection'
        Any of 'perceptron', 'hinge', 'hinge-slack' (exact), 'hinge-approx-slack',
        'poslearn', 'crf', 'sparsemap', 'm-sparsemap', 'projection'
        (onto the order simplex: isotonic regression), 'squared', or a loss
        object such as ``Projection(set='cube', geometry='kl')``.
    alpha : float or 'auto', default=1e-3
        Penalty of the **mean** loss (``alpha/2 ||w||^2`` with the default
        ``l1_ratio=0``).  mord penalises the **sum** of the losses, so mord's
        ``alpha`` on ``n`` training rows is ``n`` times stronger: ``mord_alpha
        = alpha * n`` gives the same balance (``alpha = mord_alpha / n``).
        ``'auto'``: chosen by cross-validation (see :class:`structlearn.LabelRanker`).
    l1_ratio, fit_intercept, solver, max_iter, tol, random_state, n_jobs, verbose, warm_start
        See :class:`structlearn.LabelRanker`.
    decoding : {'map', 'calibrated'}, default='calibrated'
        'calibrated' predicts ``1 + #{t : mu_t > 1/2}`` from the loss's
        marginals (the median class: optimal for absolute error).
    shared_weights : bool, default=False
        If True, all thresholds share one weight vector and differ only in
        their intercepts, ``theta_t = w.x + b_t`` (parallel thresholds):
        ``n_features`` weights instead of ``(n_classes - 1) n_features``,
        better on small training sets.  This is the parametrisation of
        mord's ``LogisticAT``, not its loss: mord sums a logistic loss per
        threshold (each threshold a separate binary problem), while
        ``loss='crf'`` here is the likelihood of one distribution over the
        ``k`` classes (the Gibbs distribution on the order simplex), so the
        fitted probabilities differ on the same rows.
    class_weight : dict, 'balanced' or None, default=None
        Weights of the classes, as in scikit-learn: a dict ``{class:
        weight}`` (classes absent from it weigh 1), or ``'balanced'``,
        ``n_samples / (n_classes * count(class))`` from the training labels
        (:func:`sklearn.utils.class_weight.compute_sample_weight`).  An
        example's weight is its class's weight times its ``sample_weight``
        in ``fit`` (the balanced weights count the examples, not their
        sample weights, as scikit-learn's classifiers do).  With imbalanced
        classes, 'balanced' trades some mean absolute error for a lower
        error on the rare classes (docs/benchmarks.rst, "Class weights").

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The classes, lowest first: sorted, or in the order of an ordered
        categorical ``y``.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Column names of a DataFrame ``X`` (with string column names) given
        to ``fit``; absent otherwise.
    coef_ : ndarray of shape (n_classes - 1, n_features)
        One row per threshold, or a single row with ``shared_weights=True``.
    intercept_ : ndarray of shape (n_classes - 1,)
    """

    def __init__(self, loss="projection", alpha=1e-3, fit_intercept=True, solver="auto",
                 max_iter=None, tol=None, decoding="calibrated", random_state=None,
                 n_jobs=None, verbose=0, warm_start=False, shared_weights=False,
                 l1_ratio=0.0, class_weight=None):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                         solver=solver, max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.l1_ratio = l1_ratio
        self.shared_weights = shared_weights
        self.class_weight = class_weight

    def _fit_weights(self, sample_weight, y, n_samples):
        """``sample_weight`` times the weights of ``class_weight``."""
        w = check_sample_weight(sample_weight, n_samples)
        cw = self.class_weight
        if cw is None:
            return w
        if not (isinstance(cw, dict) or (isinstance(cw, str) and cw == "balanced")):
            raise ValueError(f"class_weight must be None, 'balanced' or a dict "
                             f"{{class: weight}}, got {cw!r}.")
        y = _check_ordinal_labels(y, n_samples)
        by_class = compute_sample_weight(cw, y)
        try:
            return check_sample_weight(by_class if w is None else w * by_class, n_samples)
        except ValueError as exc:
            raise ValueError(f"the weights from class_weight={cw!r}"
                             + ("" if w is None else " times sample_weight")
                             + f" are invalid: {exc}") from None

    def _weight_tying(self, structure):
        if not isinstance(self.shared_weights, (bool, np.bool_)):
            raise ValueError(f"shared_weights must be True or False, got "
                             f"{self.shared_weights!r}.")
        if self.shared_weights:
            return np.ones((structure.n_parts, 1))
        return None

    def _prepare_targets(self, y, n_samples):
        categories = _ordered_categories(y)
        y = _check_ordinal_labels(y, n_samples)
        if categories is not None:
            classes, y_idx = _categorical_classes(y, categories)
        elif y.dtype.kind == "f" and type_of_target(y) == "continuous":
            raise ValueError("y looks continuous (non-integer floats); ordinal "
                             "regression needs discrete ordered labels.")
        else:
            classes, y_idx = _sorted_classes(y)
        if len(classes) < 2:
            raise ValueError(f"ordinal regression needs at least 2 classes; got 1 "
                             f"class: {classes.tolist()}.")
        return y_idx.astype(np.int64), OrderSimplex(len(classes)), {"classes_": classes}

    def _auto_strata(self, y):
        """alpha='auto' stratifies its folds by class."""
        y_idx, _, _ = self._prepare_targets(y, len(y))
        return y_idx

    def _labels_to_output(self, labels):
        return self.classes_[labels]

    def _vertices_to_labels(self, V):
        return list(self.classes_[self.structure_.decode(V)])

    def decision_function(self, X):
        """Class scores ``s_j = sum_{t<j} theta_t`` (MAP = argmax).

        Shape (n_samples, n_classes), or (n_samples,) with the single
        threshold score for two classes, as scikit-learn classifiers do.  The
        threshold (part) scores are ``predict_marginals``' input and
        ``coef_``'s rows.
        """
        theta = self._part_scores(X)  # checks fitted first
        S = self.structure_.class_scores(theta)
        if S.shape[1] == 2:
            return S[:, 1]
        return S

    @available_if(_has_distribution)
    def predict_proba(self, X):
        """Class probabilities implied by the loss.

        CRF: the Gibbs distribution over classes.  SparseMAP / projection
        onto the order simplex: ``p_j = mu_{j-1} - mu_j`` from the
        (monotone) threshold marginals, a sparse distribution.
        """
        theta = self._part_scores(X)
        st = self.structure_
        if self.loss_.gibbs_likelihood:
            return st.class_probabilities(theta)
        mu = self.loss_.mean(theta, st)
        n = len(mu)
        ext = np.hstack([np.ones((n, 1)), mu, np.zeros((n, 1))])
        return np.clip(ext[:, :-1] - ext[:, 1:], 0.0, 1.0)

    def score(self, X, y, sample_weight=None):
        """Negative mean absolute error in class positions (steps of the
        order of ``classes_``).

        A label missing from ``classes_`` -- a rare class absent from a
        cross-validation training fold -- is placed between its neighbours
        in the sorted order, half a step below the next class (half a step
        beyond the first or the last class), so that every candidate of a
        search is scored on the same folds instead of failing.  When the
        classes are not in sorted order (an ordered categorical), or the
        label is not comparable with them or not an integer like them, it
        is a ValueError naming the label and its position."""
        pred = self.predict(X)
        y = _check_ordinal_labels(y, len(pred))
        return -_ordinal_mae(y, pred, self.classes_, sample_weight, place_unseen=True,
                             true_name="y")
