"""SparseMAP by conditional gradient (Frank-Wolfe), for comparison.

See :mod:`structlearn.kernels.sparsemap` for the problem and the oracle
convention; the active-set method (:mod:`structlearn.kernels.active_set`)
converges in far fewer oracle calls to a sparser solution.
"""

import numpy as np
from numba import types

from ._lazy import njit_on_first_call
from ._sparsemap_types import _ORACLE, _RESULT, score_scale

#: ``variant`` codes of :func:`sparsemap_conditional_gradient` by name.
VARIANTS = {"vanilla": 0, "away-step": 1, "pairwise": 2}


@njit_on_first_call(
    _RESULT(types.float64[::1], types.int64, _ORACLE, types.float64[::1], types.int64,
            types.int64, types.float64), cache=True)
def sparsemap_conditional_gradient(eta, n_unary, oracle, params, variant, max_iter, tol):
    """SparseMAP by conditional gradient (Algorithm 1 of the paper).

    ``variant`` is 0 (vanilla Frank-Wolfe), 1 (away-step) or 2 (pairwise).
    Returns ``(mu, vertices, weights, n_iter)`` like
    :func:`sparsemap_active_set`.  Provided for comparison: the active-set
    method converges in far fewer oracle calls to a sparser solution.
    """
    p = eta.shape[0]
    cap = max_iter + 2
    V = np.zeros((cap, p))
    y = np.zeros(cap)
    out = np.zeros(p)
    oracle(eta, params, out)
    for j in range(p):
        V[0, j] = out[j]
    y[0] = 1.0
    m = 1
    mu = out.copy()
    adj = eta.copy()
    scale = score_scale(eta)
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        for j in range(p):
            adj[j] = eta[j] - mu[j] if j < n_unary else eta[j]
        oracle(adj, params, out)
        # forward direction d_F = a_s - mu; gap = <eta - [u; 0], d_F>
        gap_f = np.dot(adj, out) - np.dot(adj, mu)
        if gap_f < tol * scale:
            break
        # away vertex: the active one with the lowest linearised score
        w = 0
        worst = np.inf
        for i in range(m):
            if y[i] > 0.0:
                val = np.dot(adj, V[i])
                if val < worst:
                    worst = val
                    w = i
        gap_a = np.dot(adj, mu) - worst
        # index of the forward vertex in the active set (or a new slot)
        s = -1
        for i in range(m):
            if np.max(np.abs(V[i] - out)) < 1e-12:
                s = i
                break
        if variant == 0 or (variant == 1 and gap_f >= gap_a):
            d = out - mu
            gmax = 1.0
            mode = 0
        elif variant == 2:
            d = out - V[w]
            gmax = y[w]
            mode = 2
        else:
            d = mu - V[w]
            gmax = y[w] / (1.0 - y[w]) if y[w] < 1.0 else 1e300
            mode = 1
        du = d[:n_unary]
        denom = np.dot(du, du)
        num = np.dot(eta, d) - np.dot(mu[:n_unary], du)
        if denom <= 0.0:
            gamma = gmax
        else:
            gamma = max(0.0, min(gmax, num / denom))
        if gamma <= 0.0:
            break
        if s < 0 and mode != 1:
            s = m
            for j in range(p):
                V[m, j] = out[j]
            y[m] = 0.0
            m += 1
        if mode == 0:
            for i in range(m):
                y[i] *= 1.0 - gamma
            y[s] += gamma
        elif mode == 2:
            y[s] += gamma
            y[w] -= gamma
        else:
            for i in range(m):
                y[i] *= 1.0 + gamma
            y[w] -= gamma
        mu = mu + gamma * d
        # compact zero weights
        k = 0
        for i in range(m):
            if y[i] > 1e-14:
                if k != i:
                    for j in range(p):
                        V[k, j] = V[i, j]
                    y[k] = y[i]
                k += 1
        m = k
        if m >= cap - 1:
            break
    total = 0.0
    for i in range(m):
        total += y[i]
    weights = np.zeros(m)
    mu = np.zeros(p)
    for i in range(m):
        weights[i] = y[i] / total
        mu += weights[i] * V[i]
    return mu, V[:m].copy(), weights, n_iter
