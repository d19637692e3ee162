"""Evaluation metrics for structured outputs.

All metrics follow the scikit-learn calling convention ``metric(y_true,
y_pred, **kwargs)`` and can therefore be wrapped by
:func:`sklearn.metrics.make_scorer`::

    from sklearn.metrics import make_scorer
    tau_scorer = make_scorer(kendall_tau)                     # higher is better
    mae_scorer = make_scorer(mean_absolute_error, greater_is_better=False)
    hl_scorer = make_scorer(hamming_loss, greater_is_better=False)

Every metric accepts an optional ``sample_weight`` (so that scorers work
with weighted cross-validation) and validates its input, raising a
:class:`ValueError` that names the offending argument (and, for rank
matrices, the first offending row).

Conventions
-----------
Label rankings are stored as **rank vectors**: ``Y[i, j]`` is the position
of label ``j`` in the ranking of sample ``i`` (1 = most preferred), so each
row is a permutation of ``1..k``.  This is the layout used by the label
ranking benchmarks in :mod:`structlearn.datasets`.
"""


import numpy as np
import scipy.sparse as sp

__all__ = [
    "kendall_tau",
    "spearman_rho",
    "mean_absolute_error",
    "hamming_loss",
]

# Upper bound on the number of (row, label pair) entries materialised at once
# by ``kendall_tau``; keeps memory at a few tens of MB for any input size.
_KENDALL_CHUNK_ENTRIES = 1 << 22


# ---------------------------------------------------------------------------
# input validation helpers
# ---------------------------------------------------------------------------
def _check_sample_weight(sample_weight, n_samples):
    """Validate ``sample_weight`` and return it as a float array (or None)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(
            f"sample_weight must be a 1-D array of length n_samples={n_samples}; "
            f"got shape {w.shape}."
        )
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinite values.")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative.")
    if w.sum() <= 0:
        raise ValueError("sample_weight must have a positive sum.")
    return w


def _as_numeric_2d(Y, name):
    """Convert ``Y`` to a 2-D numeric ndarray or raise a ValueError."""
    if sp.issparse(Y):
        Y = Y.toarray()
    try:
        arr = np.asarray(Y)
    except Exception as exc:  # ragged nested lists, etc.
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype == object or arr.dtype.kind in "USV":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{name} must contain numbers; got dtype {arr.dtype}."
            ) from exc
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must contain numbers; got dtype {arr.dtype}.")
    if arr.ndim != 2:
        hint = (
            " For a single ranking use Y.reshape(1, -1)." if arr.ndim == 1 else ""
        )
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_labels); "
            f"got {arr.ndim}-D array with shape {arr.shape}.{hint}"
        )
    return arr


def _check_rank_matrix(Y, name):
    """Validate a matrix of rank vectors (rows = permutations of 1..k).

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_labels)
        Candidate rank matrix.
    name : str
        Argument name used in error messages.

    Returns
    -------
    Y : ndarray of shape (n_samples, n_labels), dtype int64
    """
    arr = _as_numeric_2d(Y, name)
    n, k = arr.shape
    if n == 0:
        raise ValueError(f"{name} is empty (0 samples).")
    if k < 2:
        raise ValueError(
            f"{name} must have at least 2 labels (columns) to define a ranking; "
            f"got {k}."
        )
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"{name} row {i} contains NaN or infinite values: {arr[i].tolist()}."
            )
        integral = (arr == np.round(arr)).all(axis=1)
        if not integral.all():
            i = int(np.flatnonzero(~integral)[0])
            raise ValueError(
                f"{name} row {i} contains non-integer ranks: {arr[i].tolist()}; "
                f"each row must be a permutation of 1..{k}."
            )
    ranks = arr.astype(np.int64, copy=False)
    ok = (np.sort(ranks, axis=1) == np.arange(1, k + 1)).all(axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        i = int(bad[0])
        raise ValueError(
            f"{name} row {i} is not a permutation of 1..{k} (rank vectors, "
            f"1 = best, no ties): got {ranks[i].tolist()}. "
            f"{bad.size} of {n} rows are invalid."
        )
    return ranks


def _check_rank_pair(Y_true, Y_pred):
    Y_true = _check_rank_matrix(Y_true, "Y_true")
    Y_pred = _check_rank_matrix(Y_pred, "Y_pred")
    if Y_true.shape != Y_pred.shape:
        raise ValueError(
            f"Y_true and Y_pred have different shapes: {Y_true.shape} vs "
            f"{Y_pred.shape}."
        )
    return Y_true, Y_pred


def _average(values, sample_weight):
    return float(np.average(values, weights=sample_weight))


# ---------------------------------------------------------------------------
# label ranking
# ---------------------------------------------------------------------------
def kendall_tau(Y_true, Y_pred, *, sample_weight=None):
    """Mean Kendall rank correlation between true and predicted rankings.

    For each sample the coefficient is ``(C - D) / (k (k - 1) / 2)`` where
    ``C`` and ``D`` count the concordant and discordant label pairs.  As the
    rankings are complete (no ties) this equals both Kendall's tau-a and
    tau-b (:func:`scipy.stats.kendalltau`).  The computation is vectorised
    over samples; memory use is bounded by processing rows in chunks.

    Parameters
    ----------
    Y_true : array-like of shape (n_samples, n_labels)
        True rank vectors: ``Y_true[i, j]`` is the rank of label ``j`` for
        sample ``i`` (1 = best).  Each row must be a permutation of
        ``1..n_labels``.  Integer-valued floats are accepted.
    Y_pred : array-like of shape (n_samples, n_labels)
        Predicted rank vectors, same conventions.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the samples in the average.

    Returns
    -------
    tau : float
        Mean Kendall's tau in ``[-1, 1]``; 1 for identical rankings, -1 for
        reversed rankings.

    Raises
    ------
    ValueError
        If the inputs are not 2-D, differ in shape, have fewer than two
        labels, or contain a row that is not a permutation of ``1..k``.

    See Also
    --------
    spearman_rho : Spearman's rank correlation.

    Examples
    --------
    >>> kendall_tau([[1, 2, 3]], [[1, 3, 2]])
    0.3333333333333333
    """
    Y_true, Y_pred = _check_rank_pair(Y_true, Y_pred)
    n, k = Y_true.shape
    w = _check_sample_weight(sample_weight, n)
    if k < np.iinfo(np.int16).max:  # smaller temporaries, faster indexing
        Y_true, Y_pred = Y_true.astype(np.int16), Y_pred.astype(np.int16)
    I, J = np.triu_indices(k, 1)
    n_pairs = I.size
    chunk = max(1, _KENDALL_CHUNK_ENTRIES // n_pairs)
    taus = np.empty(n, dtype=np.float64)
    for start in range(0, n, chunk):
        yt = Y_true[start:start + chunk]
        yp = Y_pred[start:start + chunk]
        # ranks are distinct, so the signs are +-1 and their product is
        # +1 for a concordant pair and -1 for a discordant one.
        st = np.sign(yt[:, I] - yt[:, J]).astype(np.int8)
        sp_ = np.sign(yp[:, I] - yp[:, J]).astype(np.int8)
        taus[start:start + chunk] = (st * sp_).sum(axis=1, dtype=np.int64)
    taus /= n_pairs
    return _average(taus, w)


def spearman_rho(Y_true, Y_pred, *, sample_weight=None):
    """Mean Spearman rank correlation between true and predicted rankings.

    For each sample ``rho = 1 - 6 sum_j d_j^2 / (k (k^2 - 1))`` with
    ``d_j = Y_true[i, j] - Y_pred[i, j]``, which equals
    :func:`scipy.stats.spearmanr` for rankings without ties.

    Parameters
    ----------
    Y_true : array-like of shape (n_samples, n_labels)
        True rank vectors (rows are permutations of ``1..n_labels``,
        1 = best).
    Y_pred : array-like of shape (n_samples, n_labels)
        Predicted rank vectors, same conventions.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the samples in the average.

    Returns
    -------
    rho : float
        Mean Spearman's rho in ``[-1, 1]``.

    Raises
    ------
    ValueError
        If the inputs are not valid rank matrices of the same shape.

    See Also
    --------
    kendall_tau : Kendall's rank correlation.

    Examples
    --------
    >>> spearman_rho([[1, 2, 3]], [[3, 2, 1]])
    -1.0
    """
    Y_true, Y_pred = _check_rank_pair(Y_true, Y_pred)
    n, k = Y_true.shape
    w = _check_sample_weight(sample_weight, n)
    d = (Y_true - Y_pred).astype(np.float64)
    rhos = 1.0 - 6.0 * np.einsum("ij,ij->i", d, d) / (k * (k * k - 1.0))
    return _average(rhos, w)


# ---------------------------------------------------------------------------
# ordinal regression
# ---------------------------------------------------------------------------
def _as_1d(y, name):
    if sp.issparse(y):
        y = y.toarray()
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of labels; got shape {arr.shape}."
        )
    return arr


def _class_indices(y, classes, name):
    """Map the labels in ``y`` to their positions in ``classes``."""
    lookup = {}
    for pos, c in enumerate(classes):
        try:
            hash(c)
        except TypeError:
            raise ValueError(
                f"classes must be a flat list of labels; got element {c!r}."
            ) from None
        if c in lookup:
            raise ValueError(f"classes contains the duplicated value {c!r}.")
        lookup[c] = pos
    try:
        uniq, inverse = np.unique(y, return_inverse=True)
    except TypeError:  # unorderable mixed types: map element by element
        uniq, inverse = None, None
    values = uniq.tolist() if uniq is not None else y.tolist()
    missing = [v for v in dict.fromkeys(values) if v not in lookup]
    if missing:
        shown = ", ".join(repr(v) for v in missing[:5])
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise ValueError(
            f"{name} contains labels not in classes: {shown}{more}. "
            f"classes={list(classes)!r}."
        )
    mapped = np.array([lookup[v] for v in values], dtype=np.int64)
    if uniq is not None:
        return mapped[np.ravel(inverse)]
    return mapped


def mean_absolute_error(y_true, y_pred, *, classes=None, sample_weight=None):
    """Mean absolute error for ordinal labels.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True ordinal labels.
    y_pred : array-like of shape (n_samples,)
        Predicted ordinal labels.
    classes : array-like of shape (n_classes,), default=None
        The ordered list of classes, lowest first.  When given, the error of
        a prediction is the distance between the *positions* of the true and
        predicted classes in this list, so non-numeric labels (``"low" <
        "mid" < "high"``) and non-contiguous numeric labels (``1, 2, 5``)
        are measured in steps on the ordinal scale.  When None, labels must
        be numeric and the error is ``|y_true - y_pred|``.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the samples in the average.

    Returns
    -------
    mae : float
        Weighted mean absolute error (lower is better; use
        ``make_scorer(mean_absolute_error, greater_is_better=False)``).

    Raises
    ------
    ValueError
        If the inputs have different lengths or are empty, if labels are
        non-numeric and ``classes`` is None, if a label is missing from
        ``classes`` or if ``classes`` has duplicates.

    Examples
    --------
    >>> mean_absolute_error([1, 2, 3], [1, 3, 1])
    1.0
    >>> mean_absolute_error(["low", "high"], ["mid", "low"],
    ...                     classes=["low", "mid", "high"])
    1.5
    """
    y_true = _as_1d(y_true, "y_true")
    y_pred = _as_1d(y_pred, "y_pred")
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(
            f"y_true and y_pred have different lengths: {y_true.shape[0]} vs "
            f"{y_pred.shape[0]}."
        )
    if y_true.shape[0] == 0:
        raise ValueError("y_true and y_pred are empty (0 samples).")
    w = _check_sample_weight(sample_weight, y_true.shape[0])
    if classes is not None:
        if isinstance(classes, np.ndarray) or sp.issparse(classes):
            classes = _as_1d(classes, "classes").tolist()
        else:
            classes = list(classes)  # keep mixed-type lists as they are
        if len(classes) == 0:
            raise ValueError("classes is empty.")
        t = _class_indices(y_true, classes, "y_true")
        p = _class_indices(y_pred, classes, "y_pred")
        err = np.abs(t - p).astype(np.float64)
    else:
        arrays = []
        for name, y in (("y_true", y_true), ("y_pred", y_pred)):
            if y.dtype.kind not in "biuf":
                try:
                    y = y.astype(np.float64)
                except (TypeError, ValueError) as exc:
                    raise ValueError(
                        f"{name} contains non-numeric labels (dtype {y.dtype}); "
                        "pass classes=[...] (the ordered class list) to measure "
                        "errors in class-index steps."
                    ) from exc
            y = y.astype(np.float64)
            if not np.all(np.isfinite(y)):
                raise ValueError(f"{name} contains NaN or infinite values.")
            arrays.append(y)
        err = np.abs(arrays[0] - arrays[1])
    return _average(err, w)


# ---------------------------------------------------------------------------
# multilabel classification
# ---------------------------------------------------------------------------
def _check_indicator(Y, name):
    """Validate a multilabel indicator matrix (dense or sparse)."""
    if sp.issparse(Y):
        Y = sp.csr_matrix(Y)
        data = Y.data
        shape = Y.shape
    else:
        Y = _as_numeric_2d(Y, name)
        data = Y
        shape = Y.shape
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {shape}.")
    bad = ~((data == 0) | (data == 1))
    if np.any(bad):
        vals = np.unique(np.asarray(data)[bad])[:5].tolist()
        raise ValueError(
            f"{name} must be a binary (0/1) multilabel indicator matrix; "
            f"found values {vals}."
        )
    return Y


def hamming_loss(Y_true, Y_pred, *, sample_weight=None):
    """Fraction of wrongly predicted label entries in multilabel outputs.

    Parameters
    ----------
    Y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True binary indicator matrix (``Y[i, j] = 1`` if sample ``i`` has
        label ``j``).
    Y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted binary indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the samples; the loss is the weighted mean over samples
        of the per-sample fraction of wrong labels.

    Returns
    -------
    loss : float
        Hamming loss in ``[0, 1]`` (lower is better; use
        ``make_scorer(hamming_loss, greater_is_better=False)``).

    Raises
    ------
    ValueError
        If the inputs are not 2-D, differ in shape or contain values other
        than 0 and 1.

    Examples
    --------
    >>> hamming_loss([[1, 0, 1], [0, 1, 0]], [[1, 1, 1], [0, 1, 0]])
    0.16666666666666666
    """
    Y_true = _check_indicator(Y_true, "Y_true")
    Y_pred = _check_indicator(Y_pred, "Y_pred")
    if Y_true.shape != Y_pred.shape:
        raise ValueError(
            f"Y_true and Y_pred have different shapes: {Y_true.shape} vs "
            f"{Y_pred.shape}."
        )
    n, k = Y_true.shape
    w = _check_sample_weight(sample_weight, n)
    if sp.issparse(Y_true) or sp.issparse(Y_pred):
        diff = sp.csr_matrix(Y_true, dtype=np.float64) - sp.csr_matrix(
            Y_pred, dtype=np.float64
        )
        wrong = np.asarray(abs(diff).sum(axis=1)).ravel()
    else:
        wrong = (Y_true != Y_pred).sum(axis=1)
    return _average(wrong / k, w)
