"""Input and parameter checks shared by the estimators and transformers.

Every check raises a ValueError that names the argument, what is wrong
with it and where (row, column, sequence, position), before any work is
done and before any fitted attribute is touched.
"""

import functools
import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_array


def check_int(name, value, minimum=1, allow_none=False):
    """Raise a ValueError naming ``name`` unless ``value`` is an integer
    (not a bool) of at least ``minimum`` (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}"
                         f"{' or None' if allow_none else ''}, got {value!r}.")


def describe(obj):
    """A short description of an object for error messages."""
    if isinstance(obj, np.ndarray):
        return f"a {obj.ndim}-D numpy array of dtype {obj.dtype} and shape {obj.shape}"
    if sp.issparse(obj):
        return f"a scipy.sparse matrix of shape {obj.shape}"
    text = repr(obj)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(obj).__name__} {text}"


def index_str(index):
    """``[i]`` / ``[i, j]`` of a numpy index tuple."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def as_array(obj, name):
    """``np.asarray(obj)``; a ragged nesting of lists is a ValueError naming
    the first row whose length differs from the first row's."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(obj)
    except ValueError as exc:
        if isinstance(obj, (list, tuple)) and obj:
            lengths = [len(r) if hasattr(r, "__len__") and not isinstance(r, (str, bytes))
                       else None for r in obj]
            bad = next((i for i, n in enumerate(lengths) if n != lengths[0]), None)
            if bad is not None:
                raise ValueError(
                    f"{name} is ragged: row {bad} has "
                    f"{'no length' if lengths[bad] is None else f'{lengths[bad]} entries'} "
                    f"but row 0 has {lengths[0]}; {name} must be rectangular.") from None
        raise ValueError(f"{name} could not be converted to an array: {exc}") from None


def _array_like(obj):
    """Whether ``obj`` could hold an array: a sparse matrix, an ndarray or a
    sized sequence -- not None, a string, a mapping or a generator."""
    if sp.issparse(obj):   # (checked first: a DOK matrix is a dict)
        return True
    return not (obj is None or isinstance(obj, (str, bytes, Mapping))
                or not (hasattr(obj, "__len__") or hasattr(obj, "__array__")))


def as_target_array(y, name, what, allow_sparse=False):
    """The target ``y`` as an ndarray.

    None, strings, dicts, ragged nestings and (unless ``allow_sparse``)
    scipy.sparse matrices are ValueErrors naming ``name``; ``what`` says
    what was expected (e.g. "a 2-D array of rank vectors").
    """
    if not _array_like(y):
        raise ValueError(f"{name} must be {what}, got {describe(y)}.")
    if sp.issparse(y):
        if allow_sparse:
            return y.toarray()
        raise ValueError(f"{name} is a scipy.sparse matrix; expected {what} as a dense "
                         f"array (use {name}.toarray()).")
    return as_array(y, name)


def check_finite_matrix(X, name="X"):
    """Raise a ValueError naming the first NaN or infinite entry of a float
    ndarray or CSR matrix (``name[row, column]``), or the first row whose
    squared norm overflows float64 (the solvers and the oracles compute
    with squared norms; such features must be rescaled)."""
    if sp.issparse(X):
        data, indptr = X.data, X.indptr
        bad = ~np.isfinite(data)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(indptr, k, side="right") - 1)
            _raise_non_finite(name, (row, int(X.indices[k])), data[k])
        rows = np.repeat(np.arange(X.shape[0]), np.diff(indptr))
        with np.errstate(over="ignore"):
            sq = np.bincount(rows, weights=data * data, minlength=X.shape[0])
    else:
        bad = ~np.isfinite(X)
        if bad.any():
            idx = tuple(np.argwhere(bad)[0])
            _raise_non_finite(name, idx, X[idx])
        with np.errstate(over="ignore"):
            sq = np.einsum("ij,ij->i", X, X) if X.ndim == 2 else X * X
    check_row_norms(sq, lambda r: f"{name} row {r}")


def _raise_non_finite(name, idx, value):
    kind = "NaN" if np.isnan(value) else "an infinite value (infinity)"
    raise ValueError(f"{name} contains {kind} at {name}{index_str(idx)}; "
                     f"NaN and infinite values are not allowed.")


def check_row_norms(sq_norms, where):
    """Raise a ValueError for the first non-finite squared norm of a row of
    features; ``where(row)`` names the row."""
    bad = ~np.isfinite(sq_norms)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where(r)} is too large: the squared norm of its features "
                         f"overflows float64; rescale the features.")


def check_matrix(X, name="X"):
    """Validate a feature matrix: a float64 ndarray or CSR matrix with at
    least one row and one column, finite, of moderate size, from a real
    numeric input (bool, int, float or object holding numbers).

    A dense result is C-contiguous (copied if need be), so that a model
    does not depend on the memory layout of its input: BLAS sums a
    column-major or strided matrix (a DataFrame's values, a column slice)
    in another order than a C-contiguous one, which changes weights in their
    last digits.

    Strings (even numeric ones), bytes, dates and structured dtypes are
    rejected rather than converted.
    """
    if not _array_like(X):
        raise ValueError(f"{name} must be a 2-D array or sparse matrix of shape "
                         f"(n_samples, n_features), got {describe(X)}.")
    if not sp.issparse(X) and isinstance(X, (list, tuple)):
        X = as_array(X, name)
    dtype = getattr(X, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind not in "biufcO":
        raise ValueError(f"{name} has dtype {dtype}; expected real numbers (bool, int or "
                         f"float). Strings, bytes and dates are not converted.")
    if isinstance(X, np.ndarray) and dtype.kind == "O":
        for idx, v in np.ndenumerate(X):
            if v is None or isinstance(v, (numbers.Real, np.bool_)):
                continue
            where = f"{name}{index_str(idx)} = {v!r:.40}"
            if isinstance(v, (str, bytes)):
                raise ValueError(f"{where} is a {type(v).__name__}, not a real number.")
            # (the wording of float()'s error, which scikit-learn's checks expect)
            raise TypeError(f"{where} is not a number: float() argument must be a string "
                            f"or a real number, not '{type(v).__name__}'.")
    with np.errstate(all="ignore"):
        X = check_array(X, accept_sparse="csr", dtype=np.float64, order="C",
                        ensure_all_finite=False, ensure_min_samples=1, input_name=name)
    check_finite_matrix(X, name)
    return X


def check_solution(z, objective, estimator):
    """Raise a ValueError (before the estimator is touched) when training
    ended with non-finite weights or objective."""
    if not np.all(np.isfinite(z)) or (objective is not None
                                      and not np.isfinite(objective)):
        raise ValueError(f"{estimator} training diverged (non-finite weights or "
                         f"objective); rescale the features or increase alpha.")


def check_sample_weight(sample_weight, n_samples):
    """``sample_weight`` as a float array of ``n_samples`` non-negative finite
    weights with a positive sum (or None).

    Every use is a weighted average (a score, a metric), which does not
    change when all weights are scaled: weights of extreme magnitude (a
    maximum above 1e150 or below 1e-150, whose sums or products with the
    values would overflow or underflow) are divided by their maximum."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight)
    if w.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must contain real numbers; got dtype {w.dtype}.")
    w = w.astype(np.float64)
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight must be a 1-D array of length n_samples="
                         f"{n_samples}; got shape {w.shape}.")
    bad = np.flatnonzero(~np.isfinite(w))
    if len(bad):
        raise ValueError(f"sample_weight[{bad[0]}] is {w[bad[0]]}: weights must be finite "
                         f"(not NaN or infinite).")
    bad = np.flatnonzero(w < 0)
    if len(bad):
        raise ValueError(f"sample_weight[{bad[0]}] = {w[bad[0]]} is negative: weights must "
                         f"be non-negative.")
    top = w.max(initial=0.0)
    if top <= 0:
        raise ValueError("sample_weight must have a positive sum (the weights are all zero).")
    if not 1e-150 <= top <= 1e150:
        w = w / top
    return w


def _check_target_shape(Y, name, n_samples, what):
    if Y.ndim != 2:
        raise ValueError(f"{name} must be {what} (n_samples, n_labels), "
                         f"got shape {Y.shape}.")
    if n_samples is not None and Y.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} samples but {name} has {Y.shape[0]} rows.")
    if Y.shape[0] == 0:
        raise ValueError(f"{name} is empty (no rows).")


def check_rank_matrix(Y, name="y", n_samples=None):
    """A matrix of rank vectors (row ``i``: the ranks of the labels, 1 = best;
    every row a permutation of ``1..k``) as an int64 array.  The first bad
    row is named; ties and partial rankings are not supported."""
    Y = as_target_array(Y, name, "a 2-D array of rank vectors (n_samples, n_labels)")
    _check_target_shape(Y, name, n_samples, "a 2-D array of rank vectors")
    k = Y.shape[1]
    if k < 2:
        raise ValueError(f"label ranking needs at least 2 labels, got {k}.")
    if not np.issubdtype(Y.dtype, np.number) or np.issubdtype(Y.dtype, np.complexfloating):
        raise ValueError(f"{name} must contain numbers (integer ranks), got dtype {Y.dtype}.")
    if not np.all(np.isfinite(Y)):
        bad = int(np.argwhere(~np.isfinite(Y))[0, 0])
        raise ValueError(f"{name} has a non-finite rank (NaN or infinity) in row {bad}.")
    if np.any(Y != np.round(Y)):
        bad = int(np.argwhere(Y != np.round(Y))[0, 0])
        raise ValueError(f"{name} row {bad} contains non-integer ranks: {Y[bad].tolist()}.")
    out = (Y < 1) | (Y > k)
    if out.any():
        bad = int(np.argwhere(out)[0, 0])
        raise ValueError(f"{name} row {bad} is not a permutation of 1..{k}: ranks out of "
                         f"range 1..{k}: {Y[bad].tolist()}.")
    Yi = Y.astype(np.int64)
    ok = np.all(np.sort(Yi, axis=1) == np.arange(1, k + 1)[None, :], axis=1)
    if not ok.all():
        bad = int(np.argmin(ok))
        raise ValueError(f"{name} row {bad} is not a permutation of 1..{k} "
                         f"(ties and partial rankings are not supported): {Yi[bad].tolist()}.")
    return Yi


def check_indicator_matrix(Y, name="Y", n_samples=None, keep_sparse=False):
    """A 0/1 multilabel indicator matrix, dense (or CSR with ``keep_sparse``
    and sparse input); the first bad entry is named ``name[i, j]``."""
    what = "a 2-D 0/1 indicator matrix (n_samples, n_labels)"
    if keep_sparse and sp.issparse(Y):
        Y = sp.csr_matrix(Y)
        values = Y.data

        def at(k):
            return (int(np.searchsorted(Y.indptr, k, side="right") - 1), int(Y.indices[k]))
    else:
        Y = as_target_array(Y, name, what, allow_sparse=True)
        values = Y

        def at(k):
            return np.unravel_index(k, Y.shape)
    if values.dtype.kind == "f":
        nonfinite = ~np.isfinite(values)
        if nonfinite.any():
            k = int(np.flatnonzero(nonfinite.ravel())[0])
            kind = "NaN" if np.isnan(values.ravel()[k]) else "an infinite value"
            raise ValueError(f"{name} contains {kind} at {name}{index_str(at(k))}; {name} "
                             f"must be a binary (0/1) indicator matrix.")
        frac = values != np.round(values)
        if frac.any():   # the wording scikit-learn's estimator checks expect
            k = int(np.flatnonzero(frac.ravel())[0])
            raise ValueError(f"Unknown label type: continuous ({name}{index_str(at(k))} = "
                             f"{values.ravel()[k].item()!r}); {name} must be a binary (0/1) "
                             f"indicator matrix.")
    _check_target_shape(Y, name, n_samples, "a 2-D 0/1 indicator matrix")
    if Y.shape[1] < 1:
        raise ValueError(f"{name} has no label columns.")
    if values.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric 0/1, got dtype {values.dtype}.")
    bad = ~((values == 0) | (values == 1))
    if bad.any():
        k = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"{name} must be a binary (0/1) indicator matrix; "
                         f"{name}{index_str(at(k))} = {values.ravel()[k].item()!r}.")
    return Y


def interruptible(method):
    """Let Ctrl-C reach the caller as a ``KeyboardInterrupt``.

    A SIGINT that arrives while Numba's dispatcher prepares a kernel call
    leaves a ``KeyboardInterrupt`` set when the kernel returns, which Python
    reports as ``SystemError: CPUDispatcher(...) returned a result with an
    exception set`` (the ``KeyboardInterrupt`` at the root of its chain of
    causes; a Numba kernel that unpickles its constants when first called
    adds a second ``SystemError``).  This
    decorator of the long-running public methods (``fit``, ``predict``)
    re-raises the ``KeyboardInterrupt`` itself, so that ``except
    KeyboardInterrupt`` and interactive sessions see what happened.  The
    interrupted ``fit`` leaves a fitted estimator unchanged, as any failed
    call (estimators set their fitted state only at the end).
    """
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except SystemError as exc:
            cause = exc         # (the chain may hold several SystemErrors)
            while isinstance(cause, SystemError):
                cause = cause.__cause__ if cause.__cause__ is not None else cause.__context__
            if isinstance(cause, KeyboardInterrupt):
                raise cause from None
            raise
    return wrapper
