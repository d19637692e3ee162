"""Isotonic regression and the Euclidean projection onto the permutahedron.

Every public function is a plain ``@njit(cache=True)`` function working on
float64 numpy arrays; input validation is the caller's job (see
:mod:`structlearn.kernels.projections`).

* :func:`isotonic_decreasing`: least-squares non-increasing fit by
  pool-adjacent-violators (the projection onto the order cone; the order
  simplex projection of :mod:`structlearn.structures.order` is built on it).
* :func:`project_permutahedron`: one sort plus one isotonic regression [1]_.

Each has a ``*_batch`` counterpart that treats the rows of a 2-D array as
independent problems.

References
----------
.. [1] M. Blondel. "Structured prediction with projection oracles."
   NeurIPS 2019.
"""

import numpy as np
from numba import njit

__all__ = [
    "isotonic_decreasing",
    "isotonic_decreasing_batch",
    "project_permutahedron",
    "project_permutahedron_batch",
]


# ---------------------------------------------------------------------------
# Isotonic regression
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def isotonic_decreasing(y):
    """Least-squares isotonic regression with a non-increasing constraint.

    Solves ``argmin_v ||v - y||^2`` subject to ``v[0] >= v[1] >= ... >=
    v[k-1]`` with the pool-adjacent-violators algorithm.

    Parameters
    ----------
    y : ndarray of shape (k,), float64
        Values to regress.

    Returns
    -------
    v : ndarray of shape (k,), float64
        The non-increasing fit.

    Notes
    -----
    Runs in O(k): every element is pushed once on a stack of blocks and
    each merge pops one block.
    """
    k = y.shape[0]
    out = np.empty(k)
    if k == 0:
        return out
    # Stack of pooled blocks: running sum, size and value (mean).
    sums = np.empty(k)
    counts = np.empty(k, dtype=np.int64)
    means = np.empty(k)
    top = -1
    for i in range(k):
        top += 1
        sums[top] = y[i]
        counts[top] = 1
        means[top] = y[i]
        # A block whose mean exceeds its left neighbour's violates the
        # non-increasing order; pooling them is optimal (PAV lemma).
        while top > 0 and means[top - 1] < means[top]:
            sums[top - 1] += sums[top]
            counts[top - 1] += counts[top]
            means[top - 1] = sums[top - 1] / counts[top - 1]
            top -= 1
    pos = 0
    for b in range(top + 1):
        for _ in range(counts[b]):
            out[pos] = means[b]
            pos += 1
    return out


@njit(cache=True, nogil=True)
def isotonic_decreasing_batch(Theta):
    """Row-wise :func:`isotonic_decreasing`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64

    Returns
    -------
    V : ndarray of shape (n, p), float64
        ``V[i] = isotonic_decreasing(Theta[i])``.
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        row = isotonic_decreasing(Theta[i])
        for j in range(row.shape[0]):
            out[i, j] = row[j]
    return out


# ---------------------------------------------------------------------------
# Permutahedron
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _permutahedron_sorted_w(theta, w_sorted):
    """Projection onto the permutahedron; ``w_sorted`` non-increasing."""
    k = theta.shape[0]
    out = np.empty(k)
    if k == 0:
        return out
    # mergesort: ties are resolved by position, so the output is
    # deterministic (the projection itself does not depend on tie order).
    perm = np.argsort(-theta, kind="mergesort")
    z = np.empty(k)
    for r in range(k):
        z[r] = theta[perm[r]] - w_sorted[r]
    v = isotonic_decreasing(z)
    for r in range(k):
        out[perm[r]] = theta[perm[r]] - v[r]
    return out


@njit(cache=True, nogil=True)
def _sorted_decreasing(w):
    """``w`` in non-increasing order, by the stable argsort that
    :func:`_permutahedron_sorted_w` uses anyway (``np.sort`` would compile
    a second sort algorithm, seconds on a cold start)."""
    return w[np.argsort(-w, kind="mergesort")]


@njit(cache=True, nogil=True)
def project_permutahedron(theta, w):
    """Euclidean projection onto the permutahedron induced by ``w``.

    The permutahedron is the convex hull of all permutations of ``w``.  The
    projection is computed by sorting and one isotonic regression [1]_.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    w : ndarray of shape (k,), float64
        Weights, expected in non-increasing order.  They are re-sorted
        internally anyway (the polytope does not depend on their order), so
        unsorted weights give the same, correct, result.

    Returns
    -------
    mu : ndarray of shape (k,), float64
    """
    return _permutahedron_sorted_w(theta, _sorted_decreasing(w))


@njit(cache=True, nogil=True)
def project_permutahedron_batch(Theta, w):
    """Row-wise :func:`project_permutahedron` with shared weights.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64
    w : ndarray of shape (p,), float64

    Returns
    -------
    Mu : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    w_sorted = _sorted_decreasing(w)
    for i in range(n):
        row = _permutahedron_sorted_w(Theta[i], w_sorted)
        for j in range(row.shape[0]):
            out[i, j] = row[j]
    return out
