"""Multilabel classification."""

import numbers

import numpy as np
from sklearn.base import ClassifierMixin, MultiOutputMixin
from sklearn.utils.metaestimators import available_if

from .._validation import check_indicator_matrix, check_sample_weight
from ..losses import get_loss
from ..structures import Knapsack, UnitCube
from ._base import StructuredLinearModel


def _has_marginals(est):
    """Whether the loss's prediction map gives per-label marginals (a
    point of the cube or the knapsack polytope), not a MAP vertex."""
    loss = est.loss_ if hasattr(est, "loss_") else get_loss(est.loss)
    structure_cls = type(est.structure_) if hasattr(est, "structure_") else Knapsack
    return loss.mean_set(structure_cls) is not None


class MultiLabelClassifier(MultiOutputMixin, ClassifierMixin, StructuredLinearModel):
    """Multilabel classification on the unit cube or the knapsack polytope.

    ``Y`` is an (n_samples, n_labels) indicator matrix of 0/1 values.  With
    ``min_labels``/``max_labels`` the output space is the label subsets of
    bounded size (knapsack polytope, Blondel 2019), enforced in training and
    in prediction.

    ``score`` is the subset accuracy, as scikit-learn computes it for
    multilabel targets.

    ``fit`` takes ``sample_weight`` (one weight per example).  There is no
    ``class_weight``: an example's loss is one joint loss over its whole
    label vector (a CRF or SparseMAP over the cube, with the label-count
    bounds), not a sum of per-label terms, so a per-label weight has no
    faithful place in it; weight the examples instead (e.g. with
    :func:`sklearn.utils.class_weight.compute_sample_weight` of a column).

    Parameters
    ----------
    min_labels : int, default=0
    max_labels : int or None, default=None
        Bounds on the number of labels per sample (None: no upper bound).
    loss : str or Loss, default='projection'
        Any of 'perceptron', 'hinge', 'hinge-slack' (exact, ``O(k^2)``),
        'hinge-approx-slack', 'poslearn', 'crf' (independent logistic
        regressions on the cube; a count DP on the knapsack), 'sparsemap',
        'm-sparsemap', 'projection', 'squared', or a loss object such as
        ``Projection(set='cube', geometry='kl')``.
    alpha, l1_ratio, fit_intercept, solver, max_iter, tol, random_state, n_jobs,
    verbose, warm_start
        See :class:`structlearn.LabelRanker`.
    decoding : {'map', 'calibrated'}, default='calibrated'
        'calibrated': Hamming-calibrated decoding, ``MAP(mu - 1/2)``
        (``1[mu_i > 1/2]`` on the cube).

    Attributes
    ----------
    n_labels_ : int
    classes_ : ndarray of shape (n_labels,)
        Label indices ``0..k-1`` (scikit-learn's multilabel convention).
    coef_ : ndarray of shape (n_labels, n_features)
    intercept_ : ndarray of shape (n_labels,)
    """

    def __init__(self, min_labels=0, max_labels=None, loss="projection", alpha=1e-3,
                 fit_intercept=True, solver="auto", max_iter=None, tol=None,
                 decoding="calibrated", random_state=None, n_jobs=None, verbose=0,
                 warm_start=False, l1_ratio=0.0):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                         solver=solver, max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.l1_ratio = l1_ratio
        self.min_labels = min_labels
        self.max_labels = max_labels

    def _prepare_targets(self, y, n_samples):
        Y = check_indicator_matrix(y, "Y", n_samples)
        k = Y.shape[1]
        lo, hi = self.min_labels, self.max_labels
        if not isinstance(lo, numbers.Integral) or lo < 0:
            raise ValueError(f"min_labels must be a non-negative integer, got {lo!r}.")
        if hi is not None and (not isinstance(hi, numbers.Integral) or hi < 0):
            raise ValueError(f"max_labels must be a non-negative integer or None, got {hi!r}.")
        hi_eff = k if hi is None else hi
        if lo > hi_eff:
            raise ValueError(f"min_labels={lo} is larger than max_labels={hi_eff}.")
        if hi_eff > k:
            raise ValueError(f"max_labels={hi} exceeds the number of labels {k}.")
        Yi = Y.astype(np.int64)
        counts = Yi.sum(axis=1)
        out = (counts < lo) | (counts > hi_eff)
        if out.any():
            i = int(np.argmax(out))
            raise ValueError(f"row {i} of Y has {counts[i]} labels, outside "
                             f"[min_labels={lo}, max_labels={hi_eff}].")
        st = UnitCube(k) if (lo == 0 and hi_eff == k) else Knapsack(k, lo, hi_eff)
        return Yi, st, {"n_labels_": k, "classes_": np.arange(k)}

    def _labels_to_output(self, labels):
        return labels

    def _vertices_to_labels(self, V):
        return list(self.structure_.decode(V))

    @available_if(_has_marginals)
    def predict_proba(self, X):
        """Per-label marginals from the loss (CRF, SparseMAP or projection)."""
        return self.predict_marginals(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.target_tags.single_output = False
        tags.target_tags.multi_output = True
        return tags

    def score(self, X, y, sample_weight=None):
        """Subset accuracy (all labels right)."""
        from sklearn.metrics import accuracy_score
        pred = self.predict(X)
        Y = check_indicator_matrix(y, "Y", len(pred))
        if Y.shape[1] != self.n_labels_:
            raise ValueError(f"Y has {Y.shape[1]} labels (columns) but the model was "
                             f"fitted on {self.n_labels_} (n_labels_).")
        w = check_sample_weight(sample_weight, len(pred))
        return float(accuracy_score(Y.astype(np.int64), pred, sample_weight=w))
