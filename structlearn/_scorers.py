"""Scorer objects for the task metrics, for ``GridSearchCV(scoring=...)``.

Re-exported by :mod:`structlearn.metrics`; see :func:`get_scorer`.

scikit-learn's string scorers (``scoring="accuracy"``, ``"f1"``, ...)
compare ``y`` with ``predict(X)`` as flat label arrays, so on lists of tag
sequences or head arrays they fail and cross-validation records NaN.  The
scorers here call the structured metrics of :mod:`structlearn.metrics` on
the same predictions.  All but one are built with
:func:`sklearn.metrics.make_scorer`, so they behave exactly like
scikit-learn's own scorers (``sample_weight`` and metadata routing, one
``predict`` call shared by the scorers of a ``scoring`` dict).  The
exception is ``neg_mean_absolute_error``, which needs the fitted
estimator's ``classes_`` to measure errors in steps of the learnt class
order (:class:`OrdinalMAEScorer`).

Adding a scorer for a new metric is one entry of ``_SCORERS`` below.
"""

import copy

from sklearn.metrics import make_scorer
from sklearn.utils.metadata_routing import MetadataRequest

from .metrics import (
    _ordinal_mae,
    chunk_f1,
    hamming_loss,
    kendall_tau,
    las,
    sequence_accuracy_score,
    spearman_rho,
    token_accuracy,
    uas,
)

__all__ = [
    "OrdinalMAEScorer",
    "get_scorer",
    "get_scorer_names",
    "span_f1_scorer",
    "token_accuracy_scorer",
    "sequence_accuracy_scorer",
    "uas_scorer",
    "las_scorer",
    "kendall_tau_scorer",
    "spearman_rho_scorer",
    "neg_mean_absolute_error_scorer",
    "neg_hamming_loss_scorer",
]


class OrdinalMAEScorer:
    """Negative mean absolute error in steps of the estimator's class order.

    ``scorer(estimator, X, y)`` returns ``-mean_absolute_error(y,
    estimator.predict(X), classes=estimator.classes_)``: the error of a
    prediction is the distance between the positions of the true and
    predicted labels in ``classes_``, the order an
    :class:`~structlearn.OrdinalRegressor` learnt (so string labels and
    non-contiguous numbers are measured on the ordinal scale).  An
    estimator without ``classes_`` (a regressor) is scored on the numeric
    difference ``|y - predict(X)|``.  Negated so that greater is better,
    as scikit-learn's model selection expects.

    Use the ready-made instance ``neg_mean_absolute_error_scorer`` or
    ``get_scorer("neg_mean_absolute_error")``.

    Examples
    --------
    With the classes 1 < 2 < 5, predicting 1 for a 5 is two steps off:

    >>> from structlearn import OrdinalRegressor
    >>> from structlearn.metrics import get_scorer, mean_absolute_error
    >>> X = [[0.0], [1.0], [2.0], [3.0]]
    >>> y = [1, 2, 5, 5]
    >>> est = OrdinalRegressor().fit(X, y)
    >>> est.classes_.tolist()
    [1, 2, 5]
    >>> scorer = get_scorer("neg_mean_absolute_error")
    >>> scorer(est, X, y) == -mean_absolute_error(
    ...     y, est.predict(X), classes=est.classes_)
    True
    """

    def __init__(self):
        self._sample_weight_request = None

    def __call__(self, estimator, X, y_true, sample_weight=None):
        """Score ``estimator`` on ``(X, y_true)``.

        Parameters
        ----------
        estimator : fitted estimator
            Has ``predict`` and, for class-order aware errors,
            ``classes_``.
        X : array-like
            Input samples.
        y_true : array-like of shape (n_samples,)
            True ordinal labels.  A label missing from ``estimator.classes_``
            (e.g. a rare class absent from a cross-validation training
            fold) is placed between its neighbours in the sorted order, half
            a step below the next class (as
            :meth:`structlearn.OrdinalRegressor.score`).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the samples in the mean.

        Returns
        -------
        score : float
            Minus the mean absolute error (0 is perfect).

        Raises
        ------
        ValueError
            If a label of ``y_true`` is not in ``estimator.classes_`` and
            cannot be placed (the classes are not sorted, e.g. an ordered
            categorical, or the label is not comparable with them), or as
            :func:`structlearn.metrics.mean_absolute_error`.
        """
        classes = getattr(estimator, "classes_", None)
        y_pred = estimator.predict(X)
        return -_ordinal_mae(y_true, y_pred, classes, sample_weight, place_unseen=True)

    def __repr__(self):
        return "OrdinalMAEScorer()"

    def set_score_request(self, *, sample_weight=None):
        """Request ``sample_weight`` under scikit-learn's metadata routing.

        Parameters
        ----------
        sample_weight : bool, str or None, default=None
            True to receive the ``sample_weight`` given to the
            meta-estimator (``cross_validate(..., params=...)``), False to
            ignore it, a string to receive metadata of that name, None to
            raise an error if it is passed.

        Returns
        -------
        self : OrdinalMAEScorer
        """
        self._sample_weight_request = sample_weight
        return self

    def get_metadata_routing(self):
        """The metadata this scorer consumes (scikit-learn routing).

        Returns
        -------
        request : sklearn.utils.metadata_routing.MetadataRequest
            ``sample_weight`` for the ``score`` method, as set by
            :meth:`set_score_request`.
        """
        request = MetadataRequest(owner=self)
        request.score.add_request(param="sample_weight",
                                  alias=self._sample_weight_request)
        return request

    def _accept_sample_weight(self):
        # scikit-learn asks scorers this when it passes sample_weight
        # without metadata routing.
        return True


span_f1_scorer = make_scorer(chunk_f1)
token_accuracy_scorer = make_scorer(token_accuracy)
sequence_accuracy_scorer = make_scorer(sequence_accuracy_score)
uas_scorer = make_scorer(uas)
las_scorer = make_scorer(las)
kendall_tau_scorer = make_scorer(kendall_tau)
spearman_rho_scorer = make_scorer(spearman_rho)
neg_mean_absolute_error_scorer = OrdinalMAEScorer()
neg_hamming_loss_scorer = make_scorer(hamming_loss, greater_is_better=False)

# name -> scorer; one entry per task metric.
_SCORERS = {
    "span_f1": span_f1_scorer,
    "token_accuracy": token_accuracy_scorer,
    "sequence_accuracy": sequence_accuracy_scorer,
    "uas": uas_scorer,
    "las": las_scorer,
    "kendall_tau": kendall_tau_scorer,
    "spearman_rho": spearman_rho_scorer,
    "neg_mean_absolute_error": neg_mean_absolute_error_scorer,
    "neg_hamming_loss": neg_hamming_loss_scorer,
}


def get_scorer_names():
    """Names accepted by :func:`~structlearn.metrics.get_scorer`.

    Returns
    -------
    names : list of str
        Sorted.

    Examples
    --------
    >>> "span_f1" in get_scorer_names()
    True
    """
    return sorted(_SCORERS)


def get_scorer(name):
    """A scorer for a structured task metric, by name.

    The scorers are called as ``scorer(estimator, X, y)`` and return a
    number where greater is better, so they go straight into
    ``GridSearchCV(scoring=...)``, ``cross_validate(scoring=...)`` or a
    ``scoring`` dict of several.

    ===========================  =================================  =============================
    name                         metric                             estimators
    ===========================  =================================  =============================
    ``span_f1``                  :func:`chunk_f1` (conlleval)       SequenceTagger, SegmentTagger
    ``token_accuracy``           :func:`token_accuracy`             SequenceTagger, SegmentTagger
    ``sequence_accuracy``        :func:`sequence_accuracy_score`    SequenceTagger, SegmentTagger
    ``uas``                      :func:`uas`                        DependencyParser
    ``las``                      :func:`las` (CoNLL 2018)           DependencyParser (labelled)
    ``kendall_tau``              :func:`kendall_tau`                LabelRanker
    ``spearman_rho``             :func:`spearman_rho`               LabelRanker
    ``neg_mean_absolute_error``  minus :func:`mean_absolute_error`  OrdinalRegressor
                                 in steps of ``classes_``
    ``neg_hamming_loss``         minus :func:`hamming_loss`         MultiLabelClassifier
    ===========================  =================================  =============================

    ``span_f1`` also scores a segmenter fitted on span lists (its
    predictions are then spans).  The ``neg_`` scorers are losses negated
    so that greater is better, as scikit-learn's are.

    Parameters
    ----------
    name : str or callable
        One of :func:`get_scorer_names`; a callable is returned unchanged
        (so ``get_scorer(my_scorer)`` works too).

    Returns
    -------
    scorer : callable
        A fresh copy (changing its metadata requests does not affect other
        users of the same name).

    Raises
    ------
    ValueError
        If ``name`` is not a known scorer name (the message lists them).
    TypeError
        If ``name`` is neither a string nor a callable.

    See Also
    --------
    sklearn.metrics.make_scorer : Scorers with other metric arguments, e.g.
        ``make_scorer(chunk_f1, average="macro")``.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from structlearn import SequenceTagger
    >>> search = GridSearchCV(SequenceTagger(), {"alpha": [1e-4, 1e-2]},
    ...                       scoring=get_scorer("span_f1"))
    >>> both = {"f1": get_scorer("span_f1"),
    ...         "accuracy": get_scorer("token_accuracy")}
    >>> search = GridSearchCV(SequenceTagger(), {"alpha": [1e-4, 1e-2]},
    ...                       scoring=both, refit="f1")
    """
    if callable(name):
        return name
    if not isinstance(name, str):
        raise TypeError(
            f"get_scorer takes a scorer name (str) or a callable; got "
            f"{type(name).__name__}."
        )
    try:
        scorer = _SCORERS[name]
    except KeyError:
        raise ValueError(
            f"{name!r} is not a structlearn scorer name; valid names are "
            f"{get_scorer_names()} (scikit-learn's own names are in "
            "sklearn.metrics.get_scorer_names())."
        ) from None
    return copy.deepcopy(scorer)
