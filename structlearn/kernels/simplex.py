"""Euclidean and KL projections onto the simplex and the knapsack polytope.

Every public function is a plain ``@njit(cache=True)`` function working on
float64 numpy arrays; input validation (``0 <= lower <= upper <= k``) is the
caller's job (see :mod:`structlearn.kernels.projections`).

Euclidean projections (exact, by sorting)
    :func:`project_simplex` onto the probability simplex;
    :func:`project_knapsack` onto ``{u in [0, 1]^k : lower <= sum(u) <=
    upper}`` [1]_.

KL (Bregman) projection of ``exp(theta - 1)``
    :func:`project_knapsack_kl`.

Each has a ``*_batch`` counterpart that treats the rows of a 2-D array as
independent problems.

References
----------
.. [1] M. Blondel. "Structured prediction with projection oracles."
   NeurIPS 2019.
"""

import numpy as np
from numba import njit

from ._math import logaddexp

__all__ = [
    "project_simplex",
    "project_simplex_batch",
    "project_knapsack",
    "project_knapsack_batch",
    "project_knapsack_kl",
    "project_knapsack_kl_batch",
]


# ---------------------------------------------------------------------------
# Simplex
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _simplex_threshold(x):
    """Return ``tau`` with ``sum(max(x - tau, 0)) == 1``.

    Parameters
    ----------
    x : ndarray of shape (k,), float64, k >= 1

    Returns
    -------
    tau : float
    """
    k = x.shape[0]
    # argsort, not sort: the Birkhoff projection's line search argsorts too,
    # and each of np.sort / np.argsort compiles its own quicksort (~2 CPU s
    # of a cold first fit)
    order = np.argsort(x)
    # For every j, sum(max(x - t, 0)) >= sum of the j largest (x_i - t),
    # so t_j = (sum of j largest - 1) / j never exceeds the true threshold
    # and equals it for the true support size.  Hence tau = max_j t_j; the
    # max is more robust to rounding than searching for the support size.
    csum = 0.0
    tau = -np.inf
    for j in range(k):
        csum += x[order[k - 1 - j]]
        t = (csum - 1.0) / (j + 1)
        if t > tau:
            tau = t
    return tau


@njit(cache=True, nogil=True)
def project_simplex(theta):
    """Euclidean projection onto the probability simplex.

    Solves ``argmin_u ||u - theta||^2`` s.t. ``u >= 0, sum(u) = 1``
    exactly by sorting (O(k log k)).

    Parameters
    ----------
    theta : ndarray of shape (k,), float64, k >= 1

    Returns
    -------
    u : ndarray of shape (k,), float64
    """
    k = theta.shape[0]
    out = np.empty(k)
    if k == 0:
        return out
    tau = _simplex_threshold(theta)
    for i in range(k):
        d = theta[i] - tau
        out[i] = d if d > 0.0 else 0.0
    return out


@njit(cache=True, nogil=True)
def project_simplex_batch(Theta):
    """Row-wise :func:`project_simplex`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64

    Returns
    -------
    U : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        row = project_simplex(Theta[i])
        for j in range(row.shape[0]):
            out[i, j] = row[j]
    return out


# ---------------------------------------------------------------------------
# Knapsack polytope {u in [0, 1]^k : lower <= sum(u) <= upper}
# ---------------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _capped_sum(theta, tau):
    """Return ``sum(clip(theta - tau, 0, 1))``."""
    s = 0.0
    for i in range(theta.shape[0]):
        d = theta[i] - tau
        if d >= 1.0:
            s += 1.0
        elif d > 0.0:
            s += d
    return s


@njit(cache=True, nogil=True)
def _project_capped_simplex(theta, m):
    """Euclidean projection onto ``{u in [0, 1]^k : sum(u) = m}``.

    The solution is ``clip(theta - tau, 0, 1)``; ``f(tau) = sum(clip(theta -
    tau, 0, 1))`` is continuous, non-increasing and piecewise linear with
    breakpoints ``theta_i - 1`` and ``theta_i``.  A binary search over the
    sorted breakpoints finds the segment containing the root, where ``f`` is
    affine, so ``tau`` is obtained exactly from one linear equation.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    m : float
        Target sum.

    Returns
    -------
    u : ndarray of shape (k,), float64
    """
    k = theta.shape[0]
    out = np.empty(k)
    if m <= 0.0:
        out[:] = 0.0
        return out
    if m >= k:
        out[:] = 1.0
        return out
    bp = np.empty(2 * k)
    for i in range(k):
        bp[i] = theta[i] - 1.0
        bp[k + i] = theta[i]
    bp.sort()
    # Largest j with f(bp[j]) >= m.  f(bp[-1]) = 0 < m, so j <= 2k - 2 and
    # the segment [bp[j], bp[j+1]] exists; if rounding makes f(bp[0]) < m
    # the first segment is used and tau is clipped into it below.
    lo_idx = 0
    hi_idx = 2 * k - 1
    while hi_idx - lo_idx > 1:
        mid = (lo_idx + hi_idx) // 2
        if _capped_sum(theta, bp[mid]) >= m:
            lo_idx = mid
        else:
            hi_idx = mid
    lo = bp[lo_idx]
    hi = bp[lo_idx + 1]
    # Classify with the very same float expressions used for the
    # breakpoints so that the classification matches the sorted order.
    n_one = 0
    n_mid = 0
    s_mid = 0.0
    for i in range(k):
        if theta[i] - 1.0 >= hi:
            n_one += 1
        elif theta[i] > lo:
            n_mid += 1
            s_mid += theta[i]
    if n_mid > 0:
        tau = (s_mid + n_one - m) / n_mid
        if tau < lo:
            tau = lo
        elif tau > hi:
            tau = hi
    else:
        # f is flat on the segment (only possible through rounding).
        tau = lo
    for i in range(k):
        d = theta[i] - tau
        if d >= 1.0:
            out[i] = 1.0
        elif d > 0.0:
            out[i] = d
        else:
            out[i] = 0.0
    return out


@njit(cache=True, nogil=True)
def project_knapsack(theta, lower, upper):
    """Euclidean projection onto the knapsack polytope.

    Solves ``argmin_u ||u - theta||^2`` over
    ``{u in [0, 1]^k : lower <= sum(u) <= upper}`` exactly
    ([1]_, Prop. 3): clip to the cube; if the sum violates a bound, project
    onto the capped simplex whose sum equals that bound.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    lower, upper : float
        Bounds on the sum, ``0 <= lower <= upper <= k``.

    Returns
    -------
    u : ndarray of shape (k,), float64
    """
    k = theta.shape[0]
    out = np.empty(k)
    s = 0.0
    for i in range(k):
        v = theta[i]
        if v < 0.0:
            v = 0.0
        elif v > 1.0:
            v = 1.0
        out[i] = v
        s += v
    if s > upper:
        return _project_capped_simplex(theta, upper)
    if s < lower:
        return _project_capped_simplex(theta, lower)
    return out


@njit(cache=True, nogil=True)
def project_knapsack_batch(Theta, lower, upper):
    """Row-wise :func:`project_knapsack`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64
    lower, upper : float

    Returns
    -------
    U : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        row = project_knapsack(Theta[i], lower, upper)
        for j in range(row.shape[0]):
            out[i, j] = row[j]
    return out


@njit(cache=True, nogil=True)
def _kl_capped_simplex(theta, m):
    """KL projection of ``exp(theta - 1)`` onto ``{u in [0,1]^k, sum u = m}``.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    m : float
        Target sum.

    Returns
    -------
    u : ndarray of shape (k,), float64
        ``min(1, exp(theta - 1 - tau))`` with ``sum(u) = m``.
    """
    k = theta.shape[0]
    out = np.empty(k)
    if m <= 0.0:
        # The KL objective has no minimiser with positive entries; the
        # infimum over the feasible set {0} is attained at zero.
        out[:] = 0.0
        return out
    if m >= k:
        out[:] = 1.0
        return out
    order = np.argsort(-theta, kind="mergesort")
    # Suffix log-sum-exp of theta - 1 in decreasing order, computed
    # pairwise so that scores of any magnitude neither overflow nor
    # underflow.
    lse = np.empty(k + 1)
    lse[k] = -np.inf
    for c in range(k - 1, -1, -1):
        lse[c] = logaddexp(theta[order[c]] - 1.0, lse[c + 1])
    # With the c largest coordinates capped at 1, sum(u) = m gives
    # tau_c = lse[c] - log(m - c).  Since min(1, x) <= 1 and min(1, x) <= x,
    # the true sum g(tau) is below c + exp(-tau) * sum_{i >= c} exp(theta_i
    # - 1) for every c, so every tau_c >= tau*, with equality for the true
    # number of capped coordinates (which is < m).  Hence tau* = min tau_c.
    tau = np.inf
    c = 0
    while c < k and c < m:
        t = lse[c] - np.log(m - c)
        if t < tau:
            tau = t
        c += 1
    for i in range(k):
        d = theta[i] - 1.0 - tau
        out[i] = 1.0 if d >= 0.0 else np.exp(d)
    return out


@njit(cache=True, nogil=True)
def project_knapsack_kl(theta, lower, upper):
    """KL projection of ``exp(theta - 1)`` onto the knapsack polytope.

    Solves ``argmin_u KL(u, exp(theta - 1))`` over
    ``{u in [0, 1]^k : lower <= sum(u) <= upper}`` with the generalised KL
    divergence ``KL(u, v) = sum(u log(u / v) - u + v)``.

    Parameters
    ----------
    theta : ndarray of shape (k,), float64
    lower, upper : float
        Bounds on the sum, ``0 <= lower <= upper <= k``.

    Returns
    -------
    u : ndarray of shape (k,), float64
        ``min(1, exp(theta - 1 - tau))`` for the optimal ``tau``
        (``tau = 0`` when the sum constraint is inactive); all zeros when
        the active bound is 0.
    """
    k = theta.shape[0]
    out = np.empty(k)
    s = 0.0
    for i in range(k):
        d = theta[i] - 1.0
        v = 1.0 if d >= 0.0 else np.exp(d)
        out[i] = v
        s += v
    if s > upper:
        return _kl_capped_simplex(theta, upper)
    if s < lower:
        return _kl_capped_simplex(theta, lower)
    return out


@njit(cache=True, nogil=True)
def project_knapsack_kl_batch(Theta, lower, upper):
    """Row-wise :func:`project_knapsack_kl`.

    Parameters
    ----------
    Theta : ndarray of shape (n, p), float64
    lower, upper : float

    Returns
    -------
    U : ndarray of shape (n, p), float64
    """
    n = Theta.shape[0]
    out = np.empty((n, Theta.shape[1]))
    for i in range(n):
        row = project_knapsack_kl(Theta[i], lower, upper)
        for j in range(row.shape[0]):
            out[i, j] = row[j]
    return out
