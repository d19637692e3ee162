"""Evaluation metrics for structured outputs.

All metrics follow the scikit-learn calling convention ``metric(y_true,
y_pred, **kwargs)``.  For model selection, ready-made scorers (greater is
better) are available by name, :func:`get_scorer` (names:
:func:`get_scorer_names`), or as module attributes (``span_f1_scorer``,
``token_accuracy_scorer``, ``sequence_accuracy_scorer``, ``uas_scorer``,
``kendall_tau_scorer``, ``spearman_rho_scorer``,
``neg_mean_absolute_error_scorer``, ``neg_hamming_loss_scorer``)::

    from sklearn.model_selection import GridSearchCV
    from structlearn.metrics import get_scorer
    search = GridSearchCV(SequenceTagger(), {"alpha": [1e-4, 1e-3]},
                          scoring=get_scorer("span_f1"))

scikit-learn's string scorers (``scoring="f1"``) do not understand lists of
sequences and record NaN for tagging and parsing.  Other metric arguments
go through :func:`sklearn.metrics.make_scorer`, e.g.
``make_scorer(flat_f1_score, average="weighted", labels=tags)``.

The names ``flat_accuracy_score``, ``flat_precision_score``,
``flat_recall_score``, ``flat_f1_score``, ``flat_fbeta_score``,
``flat_classification_report`` and ``sequence_accuracy_score`` are those
of ``sklearn_crfsuite.metrics``, with the same arguments.

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

Sequence outputs (tagging, chunking, parsing) are **lists of sequences**: one
sample is one sentence and its target is a list of labels (tags, or head
indices with 1-based positions and 0 = root), so ``y[i][t]`` is the label of
token ``t`` of sentence ``i``.  For these metrics ``sample_weight`` weights
whole sentences.
"""


import bisect
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import hamming_loss as _sk_hamming_loss
from sklearn.metrics import mean_absolute_error as _sk_mean_absolute_error

from ._validation import check_indicator_matrix, check_rank_matrix, check_sample_weight

__all__ = [
    "kendall_tau",
    "spearman_rho",
    "mean_absolute_error",
    "hamming_loss",
    "token_accuracy",
    "chunk_f1",
    "chunk_precision_recall_f1",
    "span_classification_report",
    "flat_classification_report",
    "flat_accuracy_score",
    "flat_precision_score",
    "flat_recall_score",
    "flat_f1_score",
    "flat_fbeta_score",
    "sequence_accuracy_score",
    "uas",
    "las",
    # scorers (defined in structlearn._scorers)
    "get_scorer",
    "get_scorer_names",
    "OrdinalMAEScorer",
    "span_f1_scorer",
    "token_accuracy_scorer",
    "sequence_accuracy_scorer",
    "uas_scorer",
    "kendall_tau_scorer",
    "spearman_rho_scorer",
    "neg_mean_absolute_error_scorer",
    "neg_hamming_loss_scorer",
    "las_scorer",
]

# Upper bound on the number of (row, label pair) entries materialised at once
# by ``kendall_tau``; keeps memory at a few tens of MB for any input size.
_KENDALL_CHUNK_ENTRIES = 1 << 22


# ---------------------------------------------------------------------------
# input validation helpers
# ---------------------------------------------------------------------------
def _check_rank_pair(Y_true, Y_pred):
    Y_true = check_rank_matrix(Y_true, "Y_true")
    Y_pred = check_rank_matrix(Y_pred, "Y_pred")
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
    w = check_sample_weight(sample_weight, n)
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
    w = check_sample_weight(sample_weight, n)
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


def _integral(v):
    return isinstance(v, numbers.Real) and float(v).is_integer()


def _unseen_position(v, classes):
    """The position of a label missing from ``classes`` (sorted): half a
    step before the first class above it; None when ``v`` or the classes
    cannot be compared (their order is then unknown), or when the classes
    are integers and ``v`` is not (a continuous target, not a class)."""
    try:
        if not all(a < b for a, b in zip(classes, classes[1:])):
            return None
        if all(_integral(c) for c in classes) and not _integral(v):
            return None
        return bisect.bisect_left(classes, v) - 0.5
    except TypeError:
        return None


def _class_indices(y, classes, name, place_unseen=False):
    """Map the labels in ``y`` to their positions in ``classes``; with
    ``place_unseen``, a label missing from sorted ``classes`` sits half a
    step below the next class (:func:`_unseen_position`)."""
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
    if missing and place_unseen:
        placed = {v: _unseen_position(v, list(classes)) for v in missing}
        if all(p is not None for p in placed.values()):
            lookup = {**lookup, **placed}
            missing = []
    if missing:
        shown = ", ".join(repr(v) for v in missing[:5])
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        first = next(i for i, v in enumerate(y.tolist()) if v == missing[0])
        if place_unseen:
            raise ValueError(
                f"{name} has a label unseen in training at position {first}: "
                f"{missing[0]!r}, whose place in the order of the classes is unknown "
                f"(they are not sorted, or it is not comparable with them, or not an "
                f"integer like them); classes are {list(classes)!r}.")
        raise ValueError(
            f"{name} contains labels not in classes: {shown}{more} (the first at "
            f"position {first}). classes={list(classes)!r}."
        )
    mapped = np.array([lookup[v] for v in values],
                      dtype=np.float64 if len(lookup) > len(classes) else np.int64)
    if uniq is not None:
        return mapped[np.ravel(inverse)]
    return mapped


def mean_absolute_error(y_true, y_pred, *, classes=None, sample_weight=None):
    """Mean absolute error for ordinal labels.

    (:class:`~structlearn.OrdinalRegressor`'s ``score`` and
    ``neg_mean_absolute_error_scorer`` measure it against the estimator's
    ``classes_``, placing a label unseen in training between its
    neighbours: see :meth:`structlearn.OrdinalRegressor.score`.)

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
        be numeric and the error is ``|y_true - y_pred|``: then this is
        :func:`sklearn.metrics.mean_absolute_error` (which computes it),
        after a validation that names the offending label.
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
    return _ordinal_mae(y_true, y_pred, classes, sample_weight)


def _ordinal_mae(y_true, y_pred, classes, sample_weight, place_unseen=False,
                 true_name="y_true"):
    """:func:`mean_absolute_error`; with ``place_unseen`` (the estimator's
    score and scorer: ``classes`` is its ``classes_``), labels missing from
    sorted ``classes`` are placed between their neighbours
    (:func:`_class_indices`)."""
    y_true = _as_1d(y_true, "y_true")
    y_pred = _as_1d(y_pred, "y_pred")
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(
            f"y_true and y_pred have different lengths: {y_true.shape[0]} vs "
            f"{y_pred.shape[0]}."
        )
    if y_true.shape[0] == 0:
        raise ValueError("y_true and y_pred are empty (0 samples).")
    w = check_sample_weight(sample_weight, y_true.shape[0])
    if classes is not None:
        if isinstance(classes, np.ndarray) or sp.issparse(classes):
            classes = _as_1d(classes, "classes").tolist()
        else:
            classes = list(classes)  # keep mixed-type lists as they are
        if len(classes) == 0:
            raise ValueError("classes is empty.")
        t = _class_indices(y_true, classes, true_name, place_unseen)
        p = _class_indices(y_pred, classes, "y_pred", place_unseen)
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
        # numeric labels: scikit-learn's mean absolute error
        return float(_sk_mean_absolute_error(arrays[0], arrays[1], sample_weight=w))
    return _average(err, w)


# ---------------------------------------------------------------------------
# multilabel classification
# ---------------------------------------------------------------------------
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
        ``make_scorer(hamming_loss, greater_is_better=False)``): the value
        of :func:`sklearn.metrics.hamming_loss`, which computes it, after a
        validation that names the first entry that is not 0 or 1.

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
    Y_true = check_indicator_matrix(Y_true, "Y_true", keep_sparse=True)
    Y_pred = check_indicator_matrix(Y_pred, "Y_pred", keep_sparse=True)
    if Y_true.shape != Y_pred.shape:
        raise ValueError(
            f"Y_true and Y_pred have different shapes: {Y_true.shape} vs "
            f"{Y_pred.shape}."
        )
    w = check_sample_weight(sample_weight, Y_true.shape[0])
    # the arithmetic is scikit-learn's; ours is the validation, which names
    # the offending entry
    return float(_sk_hamming_loss(Y_true, Y_pred, sample_weight=w))


# ---------------------------------------------------------------------------
# sequence labelling
# ---------------------------------------------------------------------------
def _as_sequence_list(y, name):
    """Validate a list of label sequences; return a list of lists."""
    if isinstance(y, (str, bytes)) or sp.issparse(y):
        raise ValueError(
            f"{name} must be a list of sequences (one list of labels per "
            f"sentence); got {type(y).__name__}."
        )
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype != object:
        raise ValueError(
            f"{name} must be a list of sequences (one list of labels per "
            f"sentence); got a 1-D array of {y.dtype} labels. Wrap a single "
            "sequence in a list: [labels]."
        )
    try:
        seqs = list(y)
    except TypeError:
        raise ValueError(
            f"{name} must be a list of sequences; got {type(y).__name__}."
        ) from None
    out = []
    for i, seq in enumerate(seqs):
        if isinstance(seq, (str, bytes)) or np.ndim(seq) == 0:
            raise ValueError(
                f"{name}[{i}] is {seq!r}, not a sequence of labels; {name} "
                "must be a list of sequences (wrap a single sequence in a "
                "list: [labels])."
            )
        if isinstance(seq, np.ndarray):
            if seq.ndim != 1:
                raise ValueError(
                    f"{name}[{i}] must be 1-D; got shape {seq.shape}."
                )
            out.append(seq.tolist())
        else:
            out.append(list(seq))
    return out


def _check_sequence_pair(y_true, y_pred, names=("y_true", "y_pred")):
    """Validate two aligned lists of sequences of equal lengths."""
    a = _as_sequence_list(y_true, names[0])
    b = _as_sequence_list(y_pred, names[1])
    if len(a) != len(b):
        raise ValueError(
            f"{names[0]} has {len(a)} sequences but {names[1]} has {len(b)}."
        )
    if len(a) == 0:
        raise ValueError(f"{names[0]} and {names[1]} are empty (0 sequences).")
    for i, (s, t) in enumerate(zip(a, b)):
        if len(s) != len(t):
            raise ValueError(
                f"sequence {i} has {len(s)} labels in {names[0]} but {len(t)} "
                f"in {names[1]}."
            )
    return a, b


def token_accuracy(y_true, y_pred, *, sample_weight=None):
    """Fraction of correctly labelled tokens over all sequences.

    Parameters
    ----------
    y_true : list of sequences
        True label sequences, one per sample (sentence).
    y_pred : list of sequences
        Predicted label sequences; ``y_pred[i]`` must have the length of
        ``y_true[i]``.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sequence; every token of sequence ``i`` counts with
        weight ``sample_weight[i]``.

    Returns
    -------
    accuracy : float
        ``sum_i w_i * correct_i / sum_i w_i * len_i`` in ``[0, 1]`` (a
        micro average: long sentences weigh more).

    Raises
    ------
    ValueError
        If the inputs are not lists of sequences, have different numbers of
        sequences, a pair of sequences differs in length (the message names
        the sequence) or there is no token to score.

    Examples
    --------
    >>> token_accuracy([["DT", "NN"], ["VB"]], [["DT", "VB"], ["VB"]])
    0.6666666666666666
    """
    a, b = _check_sequence_pair(y_true, y_pred)
    w = check_sample_weight(sample_weight, len(a))
    lengths = np.array([len(s) for s in a], dtype=np.float64)
    correct = np.array([sum(p == q for p, q in zip(s, t)) for s, t in zip(a, b)],
                       dtype=np.float64)
    if w is None:
        w = np.ones(len(a))
    total = float(np.dot(w, lengths))
    if total <= 0:
        raise ValueError("No token to score: all sequences are empty (or have "
                         "zero weight).")
    return float(np.dot(w, correct)) / total


_CHUNK_PREFIXES = {
    "auto": frozenset("BIOES"),
    "IOB1": frozenset("BIO"),
    "IOB2": frozenset("BIO"),
    "IOBES": frozenset("BIOES"),
}


def _split_tag(tag, name, i, t, allowed, scheme):
    """``"B-NP"`` -> ``("B", "NP")``; ``"O"`` -> ``("O", "")``."""
    if not isinstance(tag, str):
        raise ValueError(
            f"{name}[{i}][{t}] is {tag!r}; chunk tags must be strings such as "
            "'B-NP', 'I-NP' or 'O'."
        )
    prefix, sep, ctype = tag.partition("-")
    if prefix not in allowed or (prefix == "O" and sep):
        raise ValueError(
            f"{name}[{i}][{t}] = {tag!r} is not a valid {scheme} chunk tag "
            f"(expected 'O' or one of {sorted(allowed - {'O'})} followed by "
            "'-TYPE')."
        )
    return prefix, ctype


def _chunk_ends(prev_prefix, prev_type, prefix, ctype):
    """Whether a chunk ends between the previous token and this one."""
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return prev_prefix != "O" and prev_type != ctype


def _chunk_starts(prev_prefix, prev_type, prefix, ctype):
    """Whether a chunk starts at this token."""
    if prefix in ("B", "S"):
        return True
    if prefix in ("I", "E") and prev_prefix in ("O", "E", "S"):
        return True
    return prefix != "O" and prev_type != ctype


def _extract_chunks(seq, name, i, allowed, scheme):
    """Set of ``(start, end, type)`` chunks of one tag sequence (conlleval)."""
    chunks = []
    prev_prefix, prev_type = "O", ""
    start = None
    for t, tag in enumerate(list(seq) + [None]):
        if tag is None:  # sentence boundary: behaves like an "O"
            prefix, ctype = "O", ""
        else:
            prefix, ctype = _split_tag(tag, name, i, t, allowed, scheme)
        if start is not None and _chunk_ends(prev_prefix, prev_type, prefix, ctype):
            chunks.append((start, t - 1, prev_type))
            start = None
        if _chunk_starts(prev_prefix, prev_type, prefix, ctype):
            start = t
        prev_prefix, prev_type = prefix, ctype
    return chunks


def _check_scheme(scheme):
    if scheme not in _CHUNK_PREFIXES:
        raise ValueError(
            f"scheme must be one of {sorted(_CHUNK_PREFIXES)}; got {scheme!r}."
        )


def _prf(n_correct, n_pred, n_true):
    precision = n_correct / n_pred if n_pred > 0 else 0.0
    recall = n_correct / n_true if n_true > 0 else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall > 0 else 0.0)
    return {"precision": float(precision), "recall": float(recall),
            "f1": float(f1), "n_true": n_true, "n_pred": n_pred,
            "n_correct": n_correct}


def _holds_spans(seqs):
    """Whether a list of sequences holds span lists (a non-empty sequence
    whose first element is a tuple or list) rather than tag sequences."""
    return any(len(s) > 0 and isinstance(s[0], (tuple, list)) for s in seqs)


def _check_span_list(seq, name, i):
    """Chunks ``(start, end - 1, type)`` of one span list ``[(start, end,
    type), ...]`` (``end`` exclusive)."""
    chunks = []
    for j, span in enumerate(seq):
        if not isinstance(span, (tuple, list)) or len(span) != 3:
            raise ValueError(
                f"{name}[{i}][{j}] is {span!r}; a span must be a (start, end, "
                "label) triple (end exclusive)."
            )
        start, end, label = span
        for what, v in (("start", start), ("end", end)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(
                    v, (int, np.integer)):
                raise ValueError(
                    f"{name}[{i}][{j}] = {span!r}: {what} must be an integer; "
                    f"got {v!r}."
                )
        if not 0 <= start < end:
            raise ValueError(
                f"{name}[{i}][{j}] = {span!r}: need 0 <= start < end (end is "
                "exclusive)."
            )
        try:
            hash(label)
        except TypeError:
            raise ValueError(
                f"{name}[{i}][{j}] = {span!r}: the label must be hashable."
            ) from None
        chunks.append((int(start), int(end) - 1, label))
    return chunks


def _chunk_lists(y_true, y_pred, scheme):
    """Per sequence, the chunks ``(first, last, type)`` of ``y_true`` and
    ``y_pred``: decoded from aligned tag sequences, or read from span lists
    (then only the numbers of sequences must agree)."""
    a = _as_sequence_list(y_true, "y_true")
    b = _as_sequence_list(y_pred, "y_pred")
    spans_a, spans_b = _holds_spans(a), _holds_spans(b)
    if spans_a or spans_b:
        for name, seqs, spans in (("y_true", a, spans_a), ("y_pred", b, spans_b)):
            for i, seq in enumerate(seqs):
                if len(seq) > 0 and not isinstance(seq[0], (tuple, list)):
                    other = "y_pred" if name == "y_true" else "y_true"
                    raise ValueError(
                        f"{name}[{i}] is a tag sequence but {other} holds span "
                        "lists; give both as tags or both as (start, end, "
                        "label) span lists."
                    )
        if len(a) != len(b):
            raise ValueError(
                f"y_true has {len(a)} sequences but y_pred has {len(b)}."
            )
        if len(a) == 0:
            raise ValueError("y_true and y_pred are empty (0 sequences).")
        return ([_check_span_list(s, "y_true", i) for i, s in enumerate(a)],
                [_check_span_list(s, "y_pred", i) for i, s in enumerate(b)])
    a, b = _check_sequence_pair(a, b)
    allowed = _CHUNK_PREFIXES[scheme]
    return ([_extract_chunks(s, "y_true", i, allowed, scheme)
             for i, s in enumerate(a)],
            [_extract_chunks(t, "y_pred", i, allowed, scheme)
             for i, t in enumerate(b)])


def chunk_precision_recall_f1(y_true, y_pred, *, scheme="auto",
                              sample_weight=None):
    """Chunk (span) precision, recall and F1, overall and per chunk type.

    Chunks are decoded from the tag sequences with the rules of the CoNLL
    ``conlleval`` script, so IOB1, IOB2 and (with the usual IOBES extension)
    IOBES tags are all handled.  With ``(p, P)`` the previous and current
    prefixes and ``(s, S)`` their chunk types (``""`` for ``O`` and at the
    sentence boundaries, which behave like ``O``):

    - a chunk **ends** before the current token if ``p`` is ``E`` or ``S``;
      or ``p`` is ``B``/``I`` and ``P`` is ``B``, ``S`` or ``O``; or
      ``p`` is not ``O`` and the type changes (``s != S``);
    - a chunk **starts** at the current token if ``P`` is ``B`` or ``S``
      (``B-`` always starts a chunk); or ``P`` is ``I``/``E`` and ``p`` is
      ``O``, ``E`` or ``S`` (so an ``I-`` without a preceding ``B-`` starts
      one); or ``P`` is not ``O`` and the type changes.

    A predicted chunk is correct when a true chunk has the same first token,
    last token and type.  On B/I/O and I/E/O tags this is exactly
    ``conlleval``; the ``S``/``E`` rules follow its IOBES-aware variants.

    Both arguments may instead be **span lists**, one per sentence, of
    ``(start, end, type)`` triples with ``end`` exclusive (the output of
    :meth:`structlearn.SegmentTagger.predict_spans`, and of ``predict`` for
    a segmenter fitted on spans); the chunks are then the spans themselves.

    Parameters
    ----------
    y_true : list of sequences of str, or list of span lists
        True chunk tags (``"B-NP"``, ``"I-NP"``, ``"O"``, ...), one sequence
        per sentence.  A tag is a prefix (``B``, ``I``, ``O``, ``E``, ``S``),
        optionally followed by ``-`` and the chunk type.  Or true spans
        ``[(start, end, type), ...]`` per sentence.
    y_pred : list of sequences of str, or list of span lists
        Predicted chunk tags, aligned with ``y_true`` (or predicted spans
        when ``y_true`` holds spans).
    scheme : {"auto", "IOB1", "IOB2", "IOBES"}, default="auto"
        Tagging scheme; only restricts the accepted prefixes (``B I O`` for
        IOB1/IOB2, ``B I O E S`` for IOBES and auto), as the decoding rules
        above handle all of them.  Ignored for span lists.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sentence; chunk counts are weighted sums.

    Returns
    -------
    overall : dict
        ``precision``, ``recall``, ``f1`` (floats in ``[0, 1]``; 0 when
        undefined, as in conlleval), ``n_true``, ``n_pred``, ``n_correct``
        (numbers of true, predicted and correct chunks).
    per_type : dict
        ``{chunk type: dict with the same keys}`` for every type occurring
        in ``y_true`` or ``y_pred``, sorted by type.

    Raises
    ------
    ValueError
        If the inputs are not aligned lists of sequences (naming the
        sequence), a tag is invalid for ``scheme`` (naming the sequence and
        position), a span is not a ``(start, end, type)`` triple with
        ``0 <= start < end``, one argument holds spans and the other tags,
        or ``scheme`` is unknown.

    See Also
    --------
    chunk_f1 : The overall F1 alone, for use as a scorer.
    span_classification_report : The per-type numbers as a table.

    Examples
    --------
    >>> overall, per_type = chunk_precision_recall_f1(
    ...     [["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "I-NP", "O", "B-NP"]])
    >>> overall["precision"], overall["recall"], per_type["NP"]["f1"]
    (0.5, 0.5, 0.6666666666666666)
    """
    _check_scheme(scheme)
    true_chunks_all, pred_chunks_all = _chunk_lists(y_true, y_pred, scheme)
    w = check_sample_weight(sample_weight, len(true_chunks_all))
    counts = {}  # type -> [correct, pred, true]
    for i, (true_chunks, pred_chunks) in enumerate(zip(true_chunks_all,
                                                       pred_chunks_all)):
        wi = 1 if w is None else float(w[i])
        true_set = set(true_chunks)
        for c in true_chunks:
            counts.setdefault(c[2], [0, 0, 0])[2] += wi
        for c in pred_chunks:
            row = counts.setdefault(c[2], [0, 0, 0])
            row[1] += wi
            if c in true_set:
                row[0] += wi
    try:
        types = sorted(counts)
    except TypeError:  # span labels of mixed, unorderable types
        types = sorted(counts, key=repr)
    per_type = {k: _prf(*counts[k]) for k in types}
    totals = [sum(v[j] for v in counts.values()) for j in range(3)]
    return _prf(*totals), per_type


def chunk_f1(y_true, y_pred, *, scheme="auto", average="micro",
             sample_weight=None):
    """Chunk (span) F1 score with the CoNLL ``conlleval`` chunk definition.

    The standard metric of the CoNLL-2000 chunking and CoNLL-2003 NER tasks:
    the harmonic mean of the precision and recall of the predicted chunks,
    a chunk counting as correct only if its first token, last token and
    type all match a true chunk.  See :func:`chunk_precision_recall_f1` for
    the decoding rules of IOB1 / IOB2 / IOBES tags.

    Parameters
    ----------
    y_true : list of sequences of str, or list of span lists
        True chunk tags, one sequence per sentence (e.g. ``["B-NP", "I-NP",
        "O"]``), or true ``(start, end, type)`` spans per sentence (``end``
        exclusive).
    y_pred : list of sequences of str, or list of span lists
        Predicted chunk tags (or spans), aligned with ``y_true``.
    scheme : {"auto", "IOB1", "IOB2", "IOBES"}, default="auto"
        Tagging scheme (restricts the accepted prefixes).
    average : {"micro", "macro"}, default="micro"
        ``"micro"``: F1 of the pooled chunk counts (conlleval's overall
        score).  ``"macro"``: unweighted mean of the per-type F1 over the
        types occurring in ``y_true`` or ``y_pred``.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sentence.

    Returns
    -------
    f1 : float
        In ``[0, 1]`` (conlleval reports it multiplied by 100).  As in
        conlleval, it is 0 when there is no true and no predicted chunk.

    Raises
    ------
    ValueError
        As :func:`chunk_precision_recall_f1`, or for an unknown ``average``.

    Examples
    --------
    >>> chunk_f1([["B-NP", "I-NP", "O"]], [["B-NP", "I-NP", "O"]])
    1.0
    >>> chunk_f1([["B-NP", "I-NP", "O"]], [["B-NP", "B-NP", "O"]])
    0.0
    """
    if average not in ("micro", "macro"):
        raise ValueError(
            f"average must be 'micro' or 'macro'; got {average!r}."
        )
    overall, per_type = chunk_precision_recall_f1(
        y_true, y_pred, scheme=scheme, sample_weight=sample_weight)
    if average == "micro":
        return overall["f1"]
    if not per_type:
        return 0.0
    return float(np.mean([v["f1"] for v in per_type.values()]))


def span_classification_report(y_true, y_pred, *, scheme="auto", digits=2,
                               output_dict=False, sample_weight=None):
    """Per-type span precision, recall, F1 and support, as a table.

    The span counterpart of :func:`sklearn.metrics.classification_report`
    (and of ``seqeval``'s report): one row per chunk type, with the chunks
    decoded and matched as in :func:`chunk_precision_recall_f1`, then three
    averages: ``micro avg`` (the pooled counts: conlleval's overall score,
    :func:`chunk_f1`), ``macro avg`` (unweighted mean over the types) and
    ``weighted avg`` (mean weighted by the types' supports).

    Parameters
    ----------
    y_true : list of sequences of str, or list of span lists
        True chunk tags (or ``(start, end, type)`` spans), one sequence per
        sentence.
    y_pred : list of sequences of str, or list of span lists
        Predicted chunk tags (or spans), aligned with ``y_true``.
    scheme : {"auto", "IOB1", "IOB2", "IOBES"}, default="auto"
        Tagging scheme (restricts the accepted prefixes).
    digits : int, default=2
        Number of digits of the formatted floats (text output only).
    output_dict : bool, default=False
        Return a dict instead of the text table.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sentence; supports are then weighted chunk counts.

    Returns
    -------
    report : str or dict
        The table, or ``{row: {"precision", "recall", "f1-score",
        "support"}}`` with a row per chunk type (every type occurring in
        ``y_true`` or ``y_pred``, sorted) and the rows ``"micro avg"``,
        ``"macro avg"`` and ``"weighted avg"``.  ``support`` is the number
        of true chunks; a type that is only predicted has support 0 and
        recall 0.

    Raises
    ------
    ValueError
        As :func:`chunk_precision_recall_f1`, or if ``digits`` is not a
        non-negative integer.

    See Also
    --------
    chunk_precision_recall_f1 : The same numbers with the chunk counts.
    flat_classification_report : Per-tag (token-level) report.

    Examples
    --------
    >>> print(span_classification_report(
    ...     [["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "O"]]))
                  precision    recall  f1-score   support
    <BLANKLINE>
             LOC       0.00      0.00      0.00         1
             PER       1.00      1.00      1.00         1
    <BLANKLINE>
       micro avg       1.00      0.50      0.67         2
       macro avg       0.50      0.50      0.50         2
    weighted avg       0.50      0.50      0.50         2
    <BLANKLINE>
    """
    if isinstance(digits, (bool, np.bool_)) or not isinstance(
            digits, (int, np.integer)) or digits < 0:
        raise ValueError(f"digits must be a non-negative integer; got {digits!r}.")
    overall, per_type = chunk_precision_recall_f1(
        y_true, y_pred, scheme=scheme, sample_weight=sample_weight)

    def row(d):
        return {"precision": d["precision"], "recall": d["recall"],
                "f1-score": d["f1"], "support": d["n_true"]}

    rows = {k: row(v) for k, v in per_type.items()}
    total = overall["n_true"]
    averages = {"micro avg": row(overall)}
    keys = ("precision", "recall", "f1-score")
    if rows:
        averages["macro avg"] = {
            **{k: float(np.mean([r[k] for r in rows.values()])) for k in keys},
            "support": total}
        supports = np.array([r["support"] for r in rows.values()], dtype=float)
        averages["weighted avg"] = {
            **{k: (float(np.dot(supports, [r[k] for r in rows.values()]))
                   / supports.sum() if supports.sum() > 0 else 0.0)
               for k in keys},
            "support": total}
    else:
        zero = {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 0}
        averages["macro avg"] = dict(zero)
        averages["weighted avg"] = dict(zero)
    if output_dict:
        return {**rows, **averages}

    names = [str(k) for k in rows] + list(averages)
    width = max(len(n) for n in names)
    head = ["precision", "recall", "f1-score", "support"]
    lines = [" " * (width + 1) + "".join(f"{h:>10}" for h in head), ""]

    def fmt(name, r):
        sup = r["support"]
        sup = f"{sup:.0f}" if float(sup).is_integer() else f"{sup:.{digits}f}"
        vals = "".join(f"{r[k]:>10.{digits}f}" for k in keys)
        return f"{name:>{width}} {vals}{sup:>10}"

    lines += [fmt(str(k), r) for k, r in rows.items()]
    lines.append("")
    lines += [fmt(k, r) for k, r in averages.items()]
    return "\n".join(lines) + "\n"


def flat_classification_report(y_true, y_pred, labels=None, digits=2,
                               **kwargs):
    """Per-label precision/recall/F1 report over all tokens of all sequences.

    Flattens the sequences and calls
    :func:`sklearn.metrics.classification_report`.

    Parameters
    ----------
    y_true : list of sequences
        True label sequences.
    y_pred : list of sequences
        Predicted label sequences, aligned with ``y_true``.
    labels : array-like, default=None
        Labels to include in the report (e.g. all tags except ``"O"``).
    digits : int, default=2
        Number of digits of the formatted floats.
    **kwargs
        Passed to :func:`sklearn.metrics.classification_report`
        (``target_names``, ``output_dict``, ``zero_division``, ...).  A
        ``sample_weight`` given per sequence is expanded to its tokens.

    Returns
    -------
    report : str or dict
        As returned by :func:`~sklearn.metrics.classification_report`.

    Raises
    ------
    ValueError
        If the inputs are not aligned lists of sequences (naming the
        sequence).
    """
    from sklearn.metrics import classification_report

    a, b = _check_sequence_pair(y_true, y_pred)
    flat_true = [v for s in a for v in s]
    flat_pred = [v for s in b for v in s]
    if kwargs.get("sample_weight") is not None:
        w = check_sample_weight(kwargs["sample_weight"], len(a))
        kwargs["sample_weight"] = np.repeat(w, [len(s) for s in a])
    return classification_report(flat_true, flat_pred, labels=labels,
                                 digits=digits, **kwargs)


def _flatten_pair(y_true, y_pred, sample_weight):
    """Aligned flat label lists of two lists of sequences, and the
    per-token weights (each sequence's weight repeated on its tokens)."""
    a, b = _check_sequence_pair(y_true, y_pred)
    w = check_sample_weight(sample_weight, len(a))
    flat_true = [v for s in a for v in s]
    flat_pred = [v for s in b for v in s]
    if not flat_true:
        raise ValueError("No token to score: all sequences are empty.")
    if w is not None:
        w = np.repeat(w, [len(s) for s in a])
    return flat_true, flat_pred, w


def flat_accuracy_score(y_true, y_pred, *, sample_weight=None):
    """Accuracy over the tokens of all sequences (sklearn-crfsuite's name).

    The fraction of tokens whose predicted label is the true one, the
    sequences being flattened into one list of tokens: the same number as
    :func:`token_accuracy`, under the name ``sklearn_crfsuite.metrics``
    uses.

    Parameters
    ----------
    y_true : list of sequences
        True label sequences, one per sentence.
    y_pred : list of sequences
        Predicted label sequences, aligned with ``y_true``.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sequence, given to each of its tokens.

    Returns
    -------
    accuracy : float
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        If the inputs are not aligned lists of sequences (naming the
        sequence) or hold no token.

    Examples
    --------
    >>> flat_accuracy_score([["DT", "NN"], ["VB"]], [["DT", "VB"], ["VB"]])
    0.6666666666666666
    """
    from sklearn.metrics import accuracy_score

    t, p, w = _flatten_pair(y_true, y_pred, sample_weight)
    return float(accuracy_score(t, p, sample_weight=w))


_FLAT_PRF_DOC = """{title} over the tokens of all sequences (sklearn-crfsuite's name).

    Flattens the sequences into one list of tokens and calls
    :func:`sklearn.metrics.{sk}` with the same ``labels``, ``pos_label``,
    ``average`` and ``zero_division`` semantics, as
    ``sklearn_crfsuite.metrics.{name}`` does.  For tag sets, pass
    ``average`` ("micro", "macro", "weighted" or None for per-label
    values) and usually ``labels`` (e.g. every tag but ``"O"``): the
    default ``average="binary"`` is for two labels only, ``pos_label``
    being the positive one.

    Parameters
    ----------
    y_true : list of sequences
        True label sequences, one per sentence.
    y_pred : list of sequences
        Predicted label sequences, aligned with ``y_true``.{beta}
    labels : array-like, default=None
        The labels to include (and their order when ``average=None``).
    pos_label : int, float, bool or str, default=1
        The positive label for ``average="binary"``.
    average : {{"binary", "micro", "macro", "weighted"}} or None, \
default="binary"
        As in :func:`sklearn.metrics.{sk}` (``"samples"`` does not apply
        to flattened tokens).
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sequence, given to each of its tokens.
    zero_division : {{"warn", 0.0, 1.0, nan}}, default="warn"
        As in :func:`sklearn.metrics.{sk}`.

    Returns
    -------
    score : float or ndarray of shape (n_labels,)
        The score, or one score per label when ``average=None``.

    Raises
    ------
    ValueError
        If the inputs are not aligned lists of sequences (naming the
        sequence) or hold no token, or as :func:`sklearn.metrics.{sk}`.

    Examples
    --------
    >>> y_true = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]]
    >>> y_pred = [["B-PER", "O", "O"], ["O", "B-LOC"]]
    >>> float({name}(y_true, y_pred, average="micro",{extra}
    ...     labels=["B-PER", "I-PER", "B-LOC"]))
    {value}
    """


def _flat_prf(metric, y_true, y_pred, sample_weight, **kwargs):
    t, p, w = _flatten_pair(y_true, y_pred, sample_weight)
    out = metric(t, p, sample_weight=w, **kwargs)
    return out if isinstance(out, np.ndarray) else float(out)


def flat_precision_score(y_true, y_pred, *, labels=None, pos_label=1,
                         average="binary", sample_weight=None,
                         zero_division="warn"):
    from sklearn.metrics import precision_score

    return _flat_prf(precision_score, y_true, y_pred, sample_weight,
                     labels=labels, pos_label=pos_label, average=average,
                     zero_division=zero_division)


def flat_recall_score(y_true, y_pred, *, labels=None, pos_label=1,
                      average="binary", sample_weight=None,
                      zero_division="warn"):
    from sklearn.metrics import recall_score

    return _flat_prf(recall_score, y_true, y_pred, sample_weight,
                     labels=labels, pos_label=pos_label, average=average,
                     zero_division=zero_division)


def flat_f1_score(y_true, y_pred, *, labels=None, pos_label=1,
                  average="binary", sample_weight=None, zero_division="warn"):
    from sklearn.metrics import f1_score

    return _flat_prf(f1_score, y_true, y_pred, sample_weight, labels=labels,
                     pos_label=pos_label, average=average,
                     zero_division=zero_division)


def flat_fbeta_score(y_true, y_pred, beta, *, labels=None, pos_label=1,
                     average="binary", sample_weight=None,
                     zero_division="warn"):
    from sklearn.metrics import fbeta_score

    return _flat_prf(fbeta_score, y_true, y_pred, sample_weight, beta=beta,
                     labels=labels, pos_label=pos_label, average=average,
                     zero_division=zero_division)


_BETA_DOC = """
    beta : float
        The weight of recall (``beta > 1`` favours recall), as in
        :func:`sklearn.metrics.fbeta_score`."""

flat_precision_score.__doc__ = _FLAT_PRF_DOC.format(
    title="Precision", sk="precision_score", name="flat_precision_score",
    beta="", extra="", value="1.0")
flat_recall_score.__doc__ = _FLAT_PRF_DOC.format(
    title="Recall", sk="recall_score", name="flat_recall_score", beta="",
    extra="", value="0.6666666666666666")
flat_f1_score.__doc__ = _FLAT_PRF_DOC.format(
    title="F1 score", sk="f1_score", name="flat_f1_score", beta="", extra="",
    value="0.8")
flat_fbeta_score.__doc__ = _FLAT_PRF_DOC.format(
    title="F-beta score", sk="fbeta_score", name="flat_fbeta_score",
    beta=_BETA_DOC, extra=" beta=2.0,", value="0.7142857142857143")


def sequence_accuracy_score(y_true, y_pred, *, sample_weight=None):
    """Fraction of sequences predicted entirely right (sklearn-crfsuite's name).

    A sequence counts as correct only when every one of its labels is.

    Parameters
    ----------
    y_true : list of sequences
        True label sequences, one per sentence.
    y_pred : list of sequences
        Predicted label sequences, aligned with ``y_true``.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sequence.

    Returns
    -------
    accuracy : float
        In ``[0, 1]``.  (``sklearn_crfsuite.metrics.sequence_accuracy_score``
        returns 0 for no sequence; here that is an error.)

    Raises
    ------
    ValueError
        If the inputs are not aligned lists of sequences (naming the
        sequence) or are empty.

    Examples
    --------
    >>> sequence_accuracy_score([["DT", "NN"], ["VB"]], [["DT", "VB"], ["VB"]])
    0.5
    """
    a, b = _check_sequence_pair(y_true, y_pred)
    w = check_sample_weight(sample_weight, len(a))
    exact = np.array([s == t for s, t in zip(a, b)], dtype=np.float64)
    return _average(exact, w)


# Dependency parsing (structlearn._parsing_metrics) and the scorers use the
# metrics above, so they are imported last.
from ._parsing_metrics import las, uas  # noqa: E402
from ._scorers import (  # noqa: E402
    OrdinalMAEScorer,
    get_scorer,
    get_scorer_names,
    kendall_tau_scorer,
    las_scorer,
    neg_hamming_loss_scorer,
    neg_mean_absolute_error_scorer,
    sequence_accuracy_scorer,
    span_f1_scorer,
    spearman_rho_scorer,
    token_accuracy_scorer,
    uas_scorer,
)
