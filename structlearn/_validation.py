"""Input and parameter checks shared by the estimators and transformers.

Every check raises a ValueError that names the argument, what is wrong
with it and where (row, column, sequence, position), before any work is
done and before any fitted attribute is touched.
"""

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


def as_target_array(y, name, what, allow_sparse=False):
    """The target ``y`` as an ndarray.

    None, strings, dicts, ragged nestings and (unless ``allow_sparse``)
    scipy.sparse matrices are ValueErrors naming ``name``; ``what`` says
    what was expected (e.g. "a 2-D array of rank vectors").
    """
    if not sp.issparse(y) and (   # (a DOK matrix is a dict)
            y is None or isinstance(y, (str, bytes, Mapping))
            or not (hasattr(y, "__len__") or hasattr(y, "__array__"))):
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

    Strings (even numeric ones), bytes, dates and structured dtypes are
    rejected rather than converted.
    """
    if not sp.issparse(X) and (   # (a DOK matrix is a dict)
            X is None or isinstance(X, (str, bytes, Mapping))
            or not (hasattr(X, "__len__") or hasattr(X, "__array__"))):
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
        X = check_array(X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False,
                        ensure_min_samples=1, input_name=name)
    check_finite_matrix(X, name)
    return X


def check_solution(z, objective, estimator):
    """Raise a ValueError (before the estimator is touched) when training
    ended with non-finite weights or objective."""
    if not np.all(np.isfinite(z)) or (objective is not None
                                      and not np.isfinite(objective)):
        raise ValueError(f"{estimator} training diverged (non-finite weights or "
                         f"objective); rescale the features or increase alpha.")
