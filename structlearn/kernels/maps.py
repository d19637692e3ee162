"""MAP oracles and small dynamic programmes for the vector-output structures.

Every ``*_map`` function has the oracle signature ``oracle(eta, params, out)``
used by the generic SparseMAP solvers (:mod:`structlearn.kernels.sparsemap`):
it writes the vertex vector of a highest-scoring structure into ``out``.
Ties are broken deterministically (stable sorts, lowest index first).
"""

import numpy as np
from numba import njit

from ._math import logaddexp
from .assignment import linear_assignment
from ._lazy import njit_on_first_call
from .sparsemap import ORACLE_SIGNATURE

NEG_INF = -np.inf


# --------------------------------------------------------------------- oracles
@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def cube_map(eta, params, out):
    """Unit cube: every part with a positive score is on."""
    for i in range(eta.shape[0]):
        out[i] = 1.0 if eta[i] > 0.0 else 0.0


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def knapsack_map(eta, params, out):
    """Subsets of size in ``[params[0], params[1]]`` (Blondel 2019, Sec. 4).

    Take the ``lower`` best parts whatever their sign, then keep adding the
    next best while it is positive and the count is below ``upper``.
    """
    lower = int(params[0])
    upper = int(params[1])
    order = np.argsort(-eta, kind="mergesort")
    out[:] = 0.0
    for r in range(eta.shape[0]):
        i = order[r]
        if r < lower or (r < upper and eta[i] > 0.0):
            out[i] = 1.0
        else:
            break


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def order_simplex_map(eta, params, out):
    """Order simplex, ``k - 1`` thresholds: class ``j`` has ``phi_i = 1[j > i]``.

    Class scores are prefix sums ``s_0 = 0, s_j = s_{j-1} + eta_{j-1}``; the
    first maximiser wins.
    """
    best = 0
    best_score = 0.0
    s = 0.0
    for j in range(1, eta.shape[0] + 1):
        s += eta[j - 1]
        if s > best_score:
            best_score = s
            best = j
    for i in range(eta.shape[0]):
        out[i] = 1.0 if i < best else 0.0


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def permutahedron_map(eta, params, out):
    """Permutahedron induced by ``w = params`` (non-increasing): sort ``eta``."""
    order = np.argsort(-eta, kind="mergesort")
    for r in range(eta.shape[0]):
        out[order[r]] = params[r]


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def birkhoff_map(eta, params, out):
    """Birkhoff polytope: linear assignment of labels (rows) to ranks."""
    k = int(params[0])
    perm = linear_assignment(eta.reshape((k, k)))
    out[:] = 0.0
    for i in range(k):
        out[i * k + perm[i]] = 1.0


# ------------------------------------------------------------- log-partitions
@njit(cache=True, nogil=True)
def knapsack_log_partition_batch(Theta, lower, upper):
    """Log-partition and marginals over subsets with ``lower <= |S| <= upper``.

    Forward table ``F[i, c]`` = log-sum over subsets of the first ``i`` parts
    of size ``c``; backward table ``B[i, c]`` the same for parts ``i..k-1``.
    ``mu_i = sum_{c1 + 1 + c2 in [lower, upper]} exp(F[i, c1] + theta_i +
    B[i + 1, c2] - log Z)``.  ``O(k^3)`` per row, for the small ``k`` of
    multilabel problems.
    """
    n, k = Theta.shape
    logZ = np.empty(n)
    Mu = np.zeros((n, k))
    F = np.empty((k + 1, k + 1))
    B = np.empty((k + 2, k + 1))
    for r in range(n):
        th = Theta[r]
        F[:, :] = NEG_INF
        F[0, 0] = 0.0
        for i in range(k):
            for c in range(k + 1):
                v = F[i, c]
                if c > 0:
                    v = logaddexp(v, F[i, c - 1] + th[i])
                F[i + 1, c] = v
        B[:, :] = NEG_INF
        B[k, 0] = 0.0
        for i in range(k - 1, -1, -1):
            for c in range(k + 1):
                v = B[i + 1, c]
                if c > 0:
                    v = logaddexp(v, B[i + 1, c - 1] + th[i])
                B[i, c] = v
        lz = NEG_INF
        for c in range(lower, upper + 1):
            lz = logaddexp(lz, F[k, c])
        logZ[r] = lz
        for i in range(k):
            acc = NEG_INF
            for c1 in range(i + 1):
                if F[i, c1] == NEG_INF:
                    continue
                for c2 in range(k - i):
                    tot = c1 + 1 + c2
                    if tot < lower or tot > upper:
                        continue
                    acc = logaddexp(acc, F[i, c1] + th[i] + B[i + 1, c2])
            Mu[r, i] = np.exp(acc - lz)
    return logZ, Mu


# ------------------------------------------------------- permutahedron helpers
@njit(cache=True, nogil=True)
def permutahedron_max_marginals(theta, w):
    """``MM[j, r]`` = best score ``sum_i theta_i w_{rank_i}`` with label ``j``
    at (0-based) rank ``r``.

    With label ``j`` pinned, the other labels take the remaining weights in
    sorted order, so each row is two prefix sums over the sorted others:
    ``O(k^2)`` in total.
    """
    k = theta.shape[0]
    order = np.argsort(-theta, kind="mergesort")
    MM = np.empty((k, k))
    others = np.empty(k - 1, dtype=np.int64)
    pre = np.zeros(k)   # pre[r] = sum_{t<r} theta[o_t] w_t
    suf = np.zeros(k + 1)  # suf[r] = sum_{t>=r} theta[o_t] w_{t+1}
    for j in range(k):
        t = 0
        for r in range(k):
            if order[r] != j:
                others[t] = order[r]
                t += 1
        pre[0] = 0.0
        for r in range(1, k):
            pre[r] = pre[r - 1] + theta[others[r - 1]] * w[r - 1]
        suf[k - 1] = 0.0
        for r in range(k - 2, -1, -1):
            suf[r] = suf[r + 1] + theta[others[r]] * w[r + 1]
        for r in range(k):
            MM[j, r] = theta[j] * w[r] + pre[r] + suf[r]
    return MM


@njit(cache=True)
def permutahedron_pinned_ranks(theta, j, r):
    """0-based ranks of the best permutation with label ``j`` at rank ``r``."""
    k = theta.shape[0]
    order = np.argsort(-theta, kind="mergesort")
    ranks = np.empty(k, dtype=np.int64)
    ranks[j] = r
    pos = 0
    for t in range(k):
        i = order[t]
        if i == j:
            continue
        if pos == r:
            pos += 1
        ranks[i] = pos
        pos += 1
    return ranks


# ---------------------------------------------------------- exact slack (DPs)
@njit(cache=True, nogil=True)
def knapsack_slack_violator(theta, y, lower, upper):
    """Exact slack-scaling violator for Hamming cost on the knapsack set.

    A labelling differs from ``y`` by ``a`` removals and ``b`` additions; for
    fixed ``(a, b)`` the best ones remove the lowest-scoring members and add
    the highest-scoring non-members.  Maximises ``(a + b) (1 + gain)`` over
    feasible ``(a, b)`` (count within bounds), ``O(k^2)``.  Returns the 0/1
    vertex (``y`` itself when nothing is violated) and the value.
    """
    k = theta.shape[0]
    ones = np.empty(k, dtype=np.int64)
    zeros = np.empty(k, dtype=np.int64)
    n1 = 0
    n0 = 0
    for i in range(k):
        if y[i] > 0.5:
            ones[n1] = i
            n1 += 1
        else:
            zeros[n0] = i
            n0 += 1
    ones = ones[:n1]
    zeros = zeros[:n0]
    # removals: lowest theta first (gain -theta); additions: highest first
    ones = ones[np.argsort(theta[ones], kind="mergesort")]
    zeros = zeros[np.argsort(-theta[zeros], kind="mergesort")]
    A = np.zeros(n1 + 1)
    for a in range(1, n1 + 1):
        A[a] = A[a - 1] - theta[ones[a - 1]]
    Bs = np.zeros(n0 + 1)
    for b in range(1, n0 + 1):
        Bs[b] = Bs[b - 1] + theta[zeros[b - 1]]
    best_val = 0.0
    best_a = 0
    best_b = 0
    for a in range(n1 + 1):
        for b in range(n0 + 1):
            if a + b == 0:
                continue
            cnt = n1 - a + b
            if cnt < lower or cnt > upper:
                continue
            val = (a + b) * (1.0 + A[a] + Bs[b])
            if val > best_val:
                best_val = val
                best_a = a
                best_b = b
    out = y.astype(np.float64).copy()
    for t in range(best_a):
        out[ones[t]] = 0.0
    for t in range(best_b):
        out[zeros[t]] = 1.0
    return out, best_val


@njit(cache=True, nogil=True)
def knapsack_slack_violator_batch(Theta, Y, lower, upper):
    """Row-wise :func:`knapsack_slack_violator`; returns the vertices."""
    n, k = Theta.shape
    out = np.empty((n, k))
    for i in range(n):
        v, _ = knapsack_slack_violator(Theta[i], Y[i], lower, upper)
        for j in range(k):
            out[i, j] = v[j]
    return out


@njit(cache=True, nogil=True)
def permutahedron_poslearn_batch(Theta, Ranks0, w):
    """PosLearn violators on the permutahedron, positions = labels.

    Cost of label ``j`` at rank ``r`` (0-based) when its true rank is
    ``t``: ``L_j(r) = (w_r - w_t)^2 / 2``, the per-label share of the task
    cost ``||phi(y') - phi(y)||^2 / 2``.  For each label, maximise
    ``L_j(r) (1 - s(y) + MM[j, r])`` over ``r != t`` using the max-marginals.

    Returns ``costs (n, k)``, ``scores (n, k)`` and 0-based ``ranks
    (n, k, k)`` of the violators (``ranks[i, j]`` is the ranking violating
    position ``j``).
    """
    n, k = Theta.shape
    costs = np.zeros((n, k))
    scores = np.full((n, k), -np.inf)
    ranks = np.empty((n, k, k), dtype=np.int64)
    for i in range(n):
        th = Theta[i]
        s_true = 0.0
        for j in range(k):
            s_true += th[j] * w[Ranks0[i, j]]
        MM = permutahedron_max_marginals(th, w)
        for j in range(k):
            t = Ranks0[i, j]
            best = -np.inf
            best_r = -1
            for r in range(k):
                if r == t:
                    continue
                L = 0.5 * (w[r] - w[t]) ** 2
                val = L * (1.0 - s_true + MM[j, r])
                if val > best:
                    best = val
                    best_r = r
            if best_r < 0:
                for q in range(k):
                    ranks[i, j, q] = Ranks0[i, q]
                continue
            costs[i, j] = 0.5 * (w[best_r] - w[t]) ** 2
            scores[i, j] = MM[j, best_r]
            r = permutahedron_pinned_ranks(th, j, best_r)
            for t2 in range(r.shape[0]):
                ranks[i, j, t2] = r[t2]
    return costs, scores, ranks


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def explicit_vertices_map(eta, params, out):
    """MAP over an explicit list of vertices.

    ``params = [t, dim, V.ravel()]`` with ``V`` of shape ``(t, dim)``; writes
    the row maximising ``<eta, V_j>`` (first one on ties).  Lets the SparseMAP
    solver handle QPs over a given finite set of points, such as the dual of
    the cutting-plane solver's master problem.
    """
    t = int(params[0])
    dim = int(params[1])
    best = 0
    best_val = -np.inf
    for j in range(t):
        v = 0.0
        for c in range(dim):
            v += eta[c] * params[2 + j * dim + c]
        if v > best_val:
            best_val = v
            best = j
    for c in range(dim):
        out[c] = params[2 + best * dim + c]
