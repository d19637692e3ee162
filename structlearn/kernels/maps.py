"""MAP oracles and small dynamic programmes for the vector-output structures.

Every ``*_map`` function has the oracle signature ``oracle(eta, params, out)``
used by the generic SparseMAP solvers (:mod:`structlearn.kernels.sparsemap`):
it writes the vertex vector of a highest-scoring structure into ``out``.
Ties are broken deterministically (stable sorts, lowest index first).
"""

import numpy as np
from numba import njit

from ._math import logaddexp
from .assignment import _assignment_into, _assignment_with_duals, linear_assignment
from ._lazy import njit_on_first_call
from .sparsemap import ORACLE_SIGNATURE

NEG_INF = -np.inf
#: the score of a forbidden (label, rank) entry of a linear assignment
BIRKHOFF_FORBIDDEN = -1e100


# ------------------------------------------------------------- sorts, MAPs
@njit(cache=True, nogil=True)
def order_desc(eta, order):
    """Write the indices of ``eta`` largest first, ties by index (the order
    of ``np.argsort(-eta, kind="mergesort")``) into ``order``; a stable
    insertion sort without allocation up to 32 parts (the oracles run it
    thousands of times per mini-batch), the merge sort beyond."""
    k = eta.shape[0]
    if k > 32:
        order[:] = np.argsort(-eta, kind="mergesort")
        return
    for j in range(k):
        v = eta[j]
        q = j
        while q > 0 and eta[order[q - 1]] < v:
            order[q] = order[q - 1]
            q -= 1
        order[q] = j


@njit(cache=True, nogil=True)
def order_desc_warm(eta, order):
    """:func:`order_desc` started from the permutation already in ``order``
    (a previous sort, of nearby scores): an insertion sort on the key
    (``eta`` descending, index ascending), which defines one order, so the
    result is :func:`order_desc`'s; ``O(k)`` when little moved."""
    k = eta.shape[0]
    if k > 32:
        order_desc(eta, order)
        return
    for j in range(1, k):
        i = order[j]
        v = eta[i]
        q = j
        while q > 0:
            w = eta[order[q - 1]]
            if w > v or (w == v and order[q - 1] < i):
                break
            order[q] = order[q - 1]
            q -= 1
        order[q] = i


# The MAP oracles' bodies, plain Numba functions (with workspaces where they
# sort or solve an assignment): the approximate-slack search
# (:mod:`structlearn.kernels.approx_slack`) calls them directly.
@njit(cache=True, nogil=True)
def cube_map_into(eta, params, out):
    """:func:`cube_map`."""
    for i in range(eta.shape[0]):
        out[i] = 1.0 if eta[i] > 0.0 else 0.0


@njit(cache=True, nogil=True)
def order_simplex_map_into(eta, params, out):
    """:func:`order_simplex_map`."""
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


@njit(cache=True, nogil=True)
def knapsack_map_into(eta, params, out, order, warm):
    """:func:`knapsack_map` with the workspace ``order`` (k int64); ``warm``:
    it holds a previous call's sort (:func:`order_desc_warm`)."""
    lower = int(params[0])
    upper = int(params[1])
    if warm:
        order_desc_warm(eta, order)
    else:
        order_desc(eta, order)
    out[:] = 0.0
    for r in range(eta.shape[0]):
        i = order[r]
        if r < lower or (r < upper and eta[i] > 0.0):
            out[i] = 1.0
        else:
            break


@njit(cache=True, nogil=True)
def permutahedron_map_into(eta, params, out, order, warm):
    """:func:`permutahedron_map` with the workspace ``order`` (k int64);
    ``warm``: it holds a previous call's sort (:func:`order_desc_warm`)."""
    if warm:
        order_desc_warm(eta, order)
    else:
        order_desc(eta, order)
    for r in range(eta.shape[0]):
        out[order[r]] = params[r]


@njit(cache=True, nogil=True)
def birkhoff_map_into(eta, params, out, iwork, fwork, warm):
    """:func:`birkhoff_map` with the workspaces ``iwork`` (int64, at least
    ``4 k + 3`` entries) and ``fwork`` (float64, at least ``5 k + 3``; its
    first ``2 k`` receive the assignment's duals ``a``, ``b``, which
    :func:`birkhoff_runner_up_from_duals` can reuse); ``warm``: they hold a
    previous solve, which is warm-started (see
    :func:`structlearn.kernels.assignment._assignment_into`)."""
    k = int(params[0])
    perm = iwork[:k]
    _assignment_into(eta.reshape((k, k)), perm, fwork[:k], fwork[k:2 * k],
                     fwork[2 * k:5 * k + 3], iwork[k:4 * k + 3], warm)
    out[:] = 0.0
    for i in range(k):
        out[i * k + perm[i]] = 1.0


# --------------------------------------------------------------------- oracles
@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def cube_map(eta, params, out):
    """Unit cube: every part with a positive score is on."""
    cube_map_into(eta, params, out)


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def knapsack_map(eta, params, out):
    """Subsets of size in ``[params[0], params[1]]`` (Blondel 2019, Sec. 4).

    Take the ``lower`` best parts whatever their sign, then keep adding the
    next best while it is positive and the count is below ``upper``.
    """
    # cold (computed False: a literal would compile another specialisation)
    knapsack_map_into(eta, params, out, np.empty(eta.shape[0], dtype=np.int64), out.size < 0)


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def order_simplex_map(eta, params, out):
    """Order simplex, ``k - 1`` thresholds: class ``j`` has ``phi_i = 1[j > i]``.

    Class scores are prefix sums ``s_0 = 0, s_j = s_{j-1} + eta_{j-1}``; the
    first maximiser wins.
    """
    order_simplex_map_into(eta, params, out)


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def permutahedron_map(eta, params, out):
    """Permutahedron induced by ``w = params`` (non-increasing): sort ``eta``."""
    # cold (computed False: a literal would compile another specialisation)
    permutahedron_map_into(eta, params, out, np.empty(eta.shape[0], dtype=np.int64),
                           out.size < 0)


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


@njit(cache=True, nogil=True)
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


# ----------------------------------------------------------- runner-up oracles
# ``runner_up(eta, params, best, out)``: given the vertex ``best`` of a
# highest-scoring structure (the MAP oracle's output), write the vertex of
# the best structure different from it into ``out`` (``best`` itself where
# no other structure exists).  The Numba form of each structure's
# ``_runner_up`` (the numpy reference they are tested equal to), with the
# same tie-breaking; :func:`structlearn.kernels.approx_slack.approx_slack_search`
# calls them.
@njit(cache=True, nogil=True)
def knapsack_runner_up(eta, params, best, out):
    """Knapsack / unit cube: the second-best vertex is adjacent to the best
    one, a single flip (if the count stays within ``params = [lower,
    upper]``) or a swap of a member for a non-member; the best flip wins
    ties with the best swap, the first index wins ties among flips, the
    first (member, non-member) pair in row-major order among swaps."""
    lower = params[0]
    upper = params[1]
    k = eta.shape[0]
    cnt = 0.0
    for j in range(k):
        out[j] = best[j]
        cnt += best[j]
    fv = NEG_INF
    fi = -1
    for j in range(k):
        d = 1.0 - 2.0 * best[j]
        if lower <= cnt + d <= upper:
            v = eta[j] * d
            if fi < 0 or v > fv:
                fv = v
                fi = j
    sv = NEG_INF
    si = -1
    sj = -1
    for i in range(k):
        if best[i] != 1.0:
            continue
        for j in range(k):
            if best[j] == 0.0:
                v = eta[j] - eta[i]
                if si < 0 or v > sv:
                    sv = v
                    si = i
                    sj = j
    if fi >= 0 and fv >= sv:
        out[fi] = 1.0 - best[fi]
    elif si >= 0:
        out[si] = 0.0
        out[sj] = 1.0


@njit(cache=True, nogil=True)
def order_simplex_runner_up(eta, params, best, out):
    """Order simplex: the best class other than the MAP's (first maximiser
    of the prefix-sum class scores)."""
    k1 = eta.shape[0]
    b = 0
    for t in range(k1):
        if best[t] > 0.5:
            b += 1
    arg = -1
    top = NEG_INF
    s = 0.0
    for j in range(k1 + 1):
        if j > 0:
            s += eta[j - 1]
        if j != b and (arg < 0 or s > top):
            top = s
            arg = j
    for t in range(k1):
        out[t] = 1.0 if t < arg else 0.0


@njit(cache=True, nogil=True)
def permutahedron_runner_up(eta, params, best, out):
    """Permutahedron with weights ``params``: the second-best vertex swaps
    the labels at two consecutive ranks of the (stable) sort, the pair
    losing the least score ``(eta_a - eta_b)(w_r - w_{r+1})``, first ``r``
    on ties."""
    k = eta.shape[0]
    for j in range(k):
        out[j] = best[j]
    if k < 2:
        return
    order = np.empty(k, dtype=np.int64)
    order_desc(eta, order)
    r = 0
    low = np.inf
    for q in range(k - 1):
        v = (eta[order[q]] - eta[order[q + 1]]) * (params[q] - params[q + 1])
        if v < low:
            low = v
            r = q
    out[order[r]] = params[r + 1]
    out[order[r + 1]] = params[r]


@njit(cache=True, nogil=True)
def birkhoff_runner_up(eta, params, best, out):
    """Birkhoff polytope: the second-best assignment, from the optimal
    duals of one solve (Chegireddy & Hamacher 1987).  With reduced scores
    ``r_ij = a_i + b_j - eta_ij >= 0`` (zero on the MAP ``m``), any other
    assignment loses the ``r`` of its entries, and the second best differs
    from ``m`` by one alternating cycle of least ``r``: per row ``i``, a
    shortest path (Dijkstra on ``r``) from row ``i`` through entries off
    ``m`` back to column ``m(i)``; ``O(k^3)`` in all, where forbidding each
    MAP entry in turn (Murty's partition, the numpy reference
    ``Birkhoff._runner_up``) solves ``k`` assignments.  The first row wins
    ties between cycles, the lowest column ties inside a search (the
    reference's choice wherever the second best is unique).  The search is
    :func:`birkhoff_runner_up_from_duals`; this solves the assignment for
    its duals."""
    k = int(params[0])
    a = np.zeros(k)
    b = np.zeros(k)
    if k >= 2:
        th = np.empty((k, k))
        for r in range(k):
            for c in range(k):
                th[r, c] = eta[r * k + c]
        _assignment_with_duals(th, np.empty(k, dtype=np.int64), a, b)
    birkhoff_runner_up_from_duals(eta, params, best, out, a, b)


@njit(cache=True, nogil=True)
def birkhoff_runner_up_from_duals(eta, params, best, out, a, b):
    """:func:`birkhoff_runner_up` given optimal duals ``a``, ``b`` of the
    assignment problem at ``eta`` (``a_i + b_j >= eta_ij``, tight on
    ``best``), e.g. those the MAP solve just left in its workspace (the
    approximate-slack search asks for the runner-up at the scores its MAP
    call solved).  A cycle's reduced score is the same for every optimal
    dual pair (the duals of its rows and columns cancel), so the result
    does not depend on which pair is given, but where two cycles tie."""
    k = int(params[0])
    for q in range(k * k):
        out[q] = best[q]
    if k < 2:
        return
    m = np.empty(k, dtype=np.int64)      # the MAP's column of each row
    owner = np.empty(k, dtype=np.int64)  # and row of each column
    for r in range(k):
        for c in range(k):
            if best[r * k + c] > 0.5:
                m[r] = c
                owner[c] = r
    dist = np.empty(k)
    prev = np.empty(k, dtype=np.int64)
    done = np.empty(k, dtype=np.bool_)
    top = np.inf
    top_i = -1
    top_prev = np.empty(k, dtype=np.int64)
    for i in range(k):
        # columns reached from row i off the MAP; prev[c] = -1: from row i
        for c in range(k):
            done[c] = False
            prev[c] = -1
            dist[c] = np.inf if c == m[i] else max(a[i] + b[c] - eta[i * k + c], 0.0)
        while True:
            j = -1
            for c in range(k):
                if not done[c] and (j < 0 or dist[c] < dist[j]):
                    j = c
            if j < 0 or dist[j] >= top:
                break            # no shorter cycle through row i
            if j == m[i]:
                top = dist[j]
                top_i = i
                for c in range(k):
                    top_prev[c] = prev[c]
                break
            done[j] = True
            r = owner[j]         # the row leaving column j
            for c in range(k):
                if not done[c] and c != m[r]:
                    v = dist[j] + max(a[r] + b[c] - eta[r * k + c], 0.0)
                    if v < dist[c]:
                        dist[c] = v
                        prev[c] = j
    if top_i < 0:
        return
    # walk the cycle back from column m(top_i): the row owning prev[c]
    # (row top_i at the start of the path) moves to column c
    c = m[top_i]
    while True:
        j = top_prev[c]
        r = top_i if j < 0 else owner[j]
        out[r * k + m[r]] = 0.0
        out[r * k + c] = 1.0
        if j < 0:
            break
        c = j
