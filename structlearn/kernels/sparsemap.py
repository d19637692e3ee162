"""SparseMAP solvers, written once and generic over a MAP oracle.

Niculae, Martins, Blondel & Cardie (2018), *SparseMAP: Differentiable Sparse
Structured Inference*, Appendix A.  The problem is

    max_{y in simplex}  theta^T y - 1/2 ||M y||^2 ,      theta = A^T eta,

i.e. over the marginal polytope ``max_{[u; v] in M_A} eta_U^T u + eta_F^T v
- 1/2 ||u||^2``.  A structure is represented by its vertex vector
``a_s = [m_s; n_s]`` of length ``p``; the first ``n_unary`` entries are the
*unary* parts (penalised by the quadratic term), the remaining ones the
higher-order parts (e.g. chain transitions) which enter only linearly.

Every solver here takes the oracle as a first-class Numba function with the
signature ``oracle(eta, params, out)``: it writes into ``out`` (length ``p``)
the vertex vector of a structure maximising ``eta^T a_s``.  ``params`` is a
float64 array of structure parameters (bounds, weights, sizes) the oracle
reads.  Passing a different oracle gives a different specialisation of the
same code, so there is exactly one active-set implementation in the library.
"""

import numpy as np
from numba import njit, types

#: Signature of every MAP oracle: ``oracle(eta, params, out) -> None``.
ORACLE_SIGNATURE = types.void(types.float64[::1], types.float64[::1], types.float64[::1])
# The solvers take the oracle as a *typed* first-class function.  With an
# explicit signature Numba compiles each solver once for all oracles and can
# cache it on disk; an untyped dispatcher argument would be recompiled in
# every process.
_ORACLE = types.FunctionType(ORACLE_SIGNATURE)
_RESULT = types.Tuple((types.float64[::1], types.float64[:, ::1], types.float64[::1],
                       types.int64))


@njit(cache=True)
def _kkt_solve(G, s, m, H, R, y_hat, d):
    """Maximise the objective restricted to the affine hull of the active set.

    The restricted problem over the weights ``y`` of the ``m`` active vertices
    is ``max_{1^T y = 1} s^T y - 1/2 y^T G y`` (``s_i = <eta, a_i>``, ``G``
    the Gram matrix of the *unary* parts), whose KKT system is Eq. (9),
    ``[[G, 1], [1^T, 0]] [y; tau] = [s; 1]``.  It is solved by the null-space
    method: with vertex 0 as reference, ``y = e_0 + sum_i w_i (e_i - e_0)``
    and ``H w = r`` for the reduced Hessian ``H_ij = (u_i - u_0)^T (u_j -
    u_0)`` (``i, j >= 1``), factorised by Cholesky.

    ``H`` (hence the KKT matrix) is singular exactly when the unary parts of
    the active vertices are affinely dependent, which happens whenever some
    parts are not penalised (chains: different tag sequences can have
    affinely dependent unary indicators).  The factorisation then stops at
    the first dependent column ``j`` and returns a direction ``d`` with
    ``sum(d) = 0`` and ``U_A d = 0`` (``d_j = 1``, supported on vertices
    ``0..j``): the objective is linear along it.

    Returns 0 when solved (``y_hat[:m]`` filled, may have negative entries)
    and 1 when singular (``d[:m]`` filled).  ``H`` and ``R`` are work arrays.
    """
    n = m - 1
    if n == 0:
        y_hat[0] = 1.0
        return 0
    g00 = G[0, 0]
    gmax = 0.0
    for i in range(m):
        gmax = max(gmax, G[i, i])
    hmax = 0.0
    for i in range(n):
        gi0 = G[i + 1, 0]
        for j in range(i + 1):
            h = (G[i + 1, j + 1] - gi0) - (G[0, j + 1] - g00)
            H[i, j] = h
            H[j, i] = h
        hmax = max(hmax, H[i, i])
    # A pivot (squared distance of u_j - u_0 to the span of the previous
    # differences) below this is round-off: the column is dependent.  The
    # second term covers the cancellation in forming H from G.
    thr = 1e-10 * hmax + 1e-12 * gmax
    for j in range(n):
        for k in range(j):
            acc = H[j, k]
            for q in range(k):
                acc -= R[j, q] * R[k, q]
            R[j, k] = acc / R[k, k]
        dj = H[j, j]
        for q in range(j):
            dj -= R[j, q] * R[j, q]
        if dj <= thr:
            # H[:j, :j] z = -H[:j, j]; since R[:j, :j] R[j, :j]^T = H[:j, j],
            # only the back substitution R[:j, :j]^T z = -R[j, :j] remains.
            for i in range(m):
                d[i] = 0.0
            for k in range(j - 1, -1, -1):
                acc = -R[j, k]
                for q in range(k + 1, j):
                    acc -= R[q, k] * d[q + 1]
                d[k + 1] = acc / R[k, k]
            d[j + 1] = 1.0
            tot = 0.0
            for k in range(1, j + 2):
                tot += d[k]
            d[0] = -tot
            return 1
        R[j, j] = np.sqrt(dj)
    # Right-hand side r_i = s_i - s_0 - (u_i - u_0)^T u_0, then one step of
    # iterative refinement (the termination test is on the gradient, so the
    # residual of this solve matters).
    r = np.empty(n)
    for i in range(n):
        r[i] = (s[i + 1] - s[0]) - (G[i + 1, 0] - g00)
    w = _chol_solve(R, r, n)
    res = np.empty(n)
    for i in range(n):
        acc = r[i]
        for j in range(n):
            acc -= H[i, j] * w[j]
        res[i] = acc
    corr = _chol_solve(R, res, n)
    tot = 0.0
    for i in range(n):
        w[i] += corr[i]
        y_hat[i + 1] = w[i]
        tot += w[i]
    y_hat[0] = 1.0 - tot
    return 0


@njit(cache=True)
def _chol_solve(R, b, n):
    """Solve ``R R^T x = b`` for the lower-triangular ``R[:n, :n]``."""
    x = b[:n].copy()
    for i in range(n):
        acc = x[i]
        for k in range(i):
            acc -= R[i, k] * x[k]
        x[i] = acc / R[i, i]
    for i in range(n - 1, -1, -1):
        acc = x[i]
        for k in range(i + 1, n):
            acc -= R[k, i] * x[k]
        x[i] = acc / R[i, i]
    return x


@njit(cache=True)
def _compact(V, G, s, y, m, keep):
    """Keep the active structures with ``keep[i]`` (in order); returns the
    new size.  ``V``, ``G``, ``s`` and ``y`` are compacted in place."""
    idx = np.empty(m, dtype=np.int64)
    k = 0
    for i in range(m):
        if keep[i]:
            idx[k] = i
            k += 1
    # idx[a] >= a and increasing: forward copying never overwrites a source.
    for a in range(k):
        ia = idx[a]
        if ia != a:
            V[a, :] = V[ia, :]
            s[a] = s[ia]
            y[a] = y[ia]
    for a in range(k):
        for b in range(k):
            G[a, b] = G[idx[a], idx[b]]
    return k


@njit(_RESULT(types.float64[::1], types.int64, _ORACLE, types.float64[::1], types.int64,
              types.float64), cache=True)
def sparsemap_active_set(eta, n_unary, oracle, params, max_iter, tol):
    """SparseMAP by the active-set method (Algorithm 2 of the paper).

    Each iteration either

    * solves the problem restricted to the affine hull of the active set
      (:func:`_kkt_solve`); if the solution lies in the simplex it becomes
      the iterate and the oracle is asked for the vertex of best linearised
      score, which is added unless the Frank-Wolfe gap
      ``<grad, a_new - mu> = <eta - [u; 0], a_new - mu>`` is at most
      ``tol * (1 + max|eta|)`` -- the only convergence test;
    * otherwise moves towards it until a weight vanishes (Eq. 10) and drops
      that vertex;
    * or, when the unary parts of the active vertices are affinely dependent
      (the KKT matrix is singular -- this happens when some parts are not
      penalised, e.g. chain transitions), moves along a null-space direction
      ``d`` (``sum(d) = 0``, ``U_A d = 0``) on which the objective is linear,
      in its ascent direction, until a weight vanishes, and drops that vertex
      (a simplex step).  After adding a vertex with a positive gap ``g`` to
      an optimal, nondegenerate active set the slope along ``d`` is exactly
      ``g > 0``, so this step strictly improves unless a zero weight blocks.

    If rounding makes the oracle return a vertex that is already active
    while the gap is still above the tolerance, pairwise Frank-Wolfe steps
    over the active set (exact line search) take over until a new vertex
    enters; the solver gives up only when such a step cannot improve the
    objective in floating point.

    Parameters
    ----------
    eta : ndarray of shape (p,)
        Part scores.
    n_unary : int
        Number of leading parts that are penalised by ``1/2 ||u||^2``.
    oracle : numba function ``oracle(eta, params, out)``
        MAP oracle writing the best vertex vector into ``out``.
    params : ndarray of float64
        Parameters passed through to ``oracle``.
    max_iter : int
        Maximum number of active-set iterations.
    tol : float
        Tolerance on the Frank-Wolfe gap (relative to the score scale).

    Returns
    -------
    mu : ndarray of shape (p,)
        The SparseMAP marginals ``A y*`` (unary and higher-order parts).
    vertices : ndarray of shape (n_active, p)
        The structures in the support.
    weights : ndarray of shape (n_active,)
        Their probabilities (positive, sum to one).
    n_iter : int
        Iterations used.
    """
    p = eta.shape[0]
    # After a KKT solve the active vertices are affinely independent in the
    # unary subspace: at most n_unary + 1 of them, plus one slot for the
    # candidate being added (removed again by a null-space step if dependent).
    cap = n_unary + 2
    V = np.zeros((cap, p))
    G = np.zeros((cap, cap))
    H = np.zeros((cap, cap))
    R = np.zeros((cap, cap))
    scores = np.zeros(cap)
    y = np.zeros(cap)
    y_hat = np.zeros(cap)
    d = np.zeros(cap)
    lin = np.zeros(cap)
    keep = np.zeros(cap, dtype=np.bool_)
    out = np.zeros(p)
    oracle(eta, params, out)
    V[0, :] = out
    G[0, 0] = np.dot(out[:n_unary], out[:n_unary])
    scores[0] = np.dot(eta, out)
    y[0] = 1.0
    m = 1
    scale = 1.0 + np.max(np.abs(eta))
    n_iter = 0
    u = np.zeros(n_unary)
    adj = eta.copy()
    polish = False
    for it in range(max_iter):
        n_iter = it + 1
        if not polish:
            status = _kkt_solve(G, scores, m, H, R, y_hat, d)
            if status == 1:
                # Singular KKT system: the objective is linear along d.  Go
                # uphill (on a flat slope, keep the newest vertex) until a
                # weight hits zero, and drop that vertex.
                slope = 0.0
                for i in range(m):
                    slope += d[i] * scores[i]
                if slope < -1e-14 * scale or (abs(slope) <= 1e-14 * scale and d[m - 1] < 0.0):
                    for i in range(m):
                        d[i] = -d[i]
                gamma = np.inf
                blocking = -1
                for i in range(m):
                    if d[i] < 0.0:
                        step = y[i] / (-d[i])
                        if step < gamma:
                            gamma = step
                            blocking = i
                if blocking < 0:  # cannot happen: sum(d) = 0, d != 0
                    break
                for i in range(m):
                    y[i] = max(0.0, y[i] + gamma * d[i])
                    keep[i] = not (i == blocking or (d[i] < 0.0 and y[i] <= 1e-14))
                m = _compact(V, G, scores, y, m, keep)
                continue
            feasible = True
            for i in range(m):
                if y_hat[i] < 0.0:
                    feasible = False
                    break
            if not feasible:
                # Line search (Eq. 10): move towards y_hat until a weight hits 0.
                gamma = 1.0
                blocking = -1
                for i in range(m):
                    if y_hat[i] < y[i]:
                        step = y[i] / (y[i] - y_hat[i])
                        if step < gamma:
                            gamma = step
                            blocking = i
                for i in range(m):
                    yi = (1.0 - gamma) * y[i] + gamma * y_hat[i]
                    # drop only weights that went down to zero
                    keep[i] = not (i == blocking or (y_hat[i] < y[i] and yi <= 1e-14))
                    y[i] = max(0.0, yi)
                m = _compact(V, G, scores, y, m, keep)
                continue
            for i in range(m):
                y[i] = y_hat[i]
        # u = M_I y ; look for a structure that improves the objective.
        u[:] = 0.0
        for i in range(m):
            u += y[i] * V[i, :n_unary]
        adj[:] = eta
        adj[:n_unary] -= u
        oracle(adj, params, out)
        # Frank-Wolfe gap <grad, a_new - mu>, with <grad, mu> = s^T y - ||u||^2.
        lin_mu = -np.dot(u, u)
        for i in range(m):
            lin_mu += y[i] * scores[i]
        gap = np.dot(adj, out) - lin_mu
        if gap <= tol * scale:
            break
        dup = -1
        for i in range(m):
            if np.max(np.abs(V[i] - out)) < 1e-12:
                dup = i
                break
        if dup < 0:
            if m >= cap:  # cannot happen: H is nonsingular, so m <= n_unary + 1
                break
            V[m, :] = out
            for i in range(m):
                g = np.dot(V[i, :n_unary], out[:n_unary])
                G[i, m] = g
                G[m, i] = g
            G[m, m] = np.dot(out[:n_unary], out[:n_unary])
            scores[m] = np.dot(eta, out)
            y[m] = 0.0
            m += 1
            polish = False
            continue
        # The best vertex is already active although the gap exceeds the
        # tolerance: the restricted solution is off by rounding.  Pairwise
        # step from the active vertex of lowest linearised score to it.
        for i in range(m):
            lin[i] = scores[i] - np.dot(V[i, :n_unary], u)
        away = -1
        worst = np.inf
        for i in range(m):
            if i != dup and y[i] > 0.0 and lin[i] < worst:
                worst = lin[i]
                away = i
        if away < 0:
            break
        gpair = lin[dup] - lin[away]
        if gpair <= 0.0:
            break
        du2 = G[dup, dup] - 2.0 * G[dup, away] + G[away, away]
        gamma = y[away]
        if du2 > 0.0:
            gamma = min(gamma, gpair / du2)
        gain = gamma * gpair - 0.5 * gamma * gamma * max(du2, 0.0)
        if gamma <= 0.0 or gain <= 1e-15 * scale:
            break  # no progress possible in floating point
        y[dup] += gamma
        y[away] -= gamma
        if y[away] <= 1e-14:
            for i in range(m):
                keep[i] = i != away
            m = _compact(V, G, scores, y, m, keep)
        polish = True
    # Vertices kept at weight zero are not part of the support.
    for i in range(m):
        keep[i] = y[i] > 0.0
    m = _compact(V, G, scores, y, m, keep)
    total = 0.0
    for i in range(m):
        total += y[i]
    mu = np.zeros(p)
    weights = np.zeros(m)
    for i in range(m):
        weights[i] = y[i] / total
        mu += weights[i] * V[i]
    return mu, V[:m].copy(), weights, n_iter


@njit(types.float64[:, ::1](types.float64[:, ::1], types.int64, _ORACLE, types.float64[::1],
                            types.int64, types.float64), cache=True, nogil=True)
def sparsemap_active_set_batch(Eta, n_unary, oracle, params, max_iter, tol):
    """Row-wise :func:`sparsemap_active_set`; returns the marginals only."""
    n, p = Eta.shape
    Mu = np.empty((n, p))
    for i in range(n):
        mu, _, _, _ = sparsemap_active_set(Eta[i], n_unary, oracle, params, max_iter, tol)
        Mu[i, :] = mu
    return Mu


VARIANTS = {"vanilla": 0, "away-step": 1, "pairwise": 2}


@njit(_RESULT(types.float64[::1], types.int64, _ORACLE, types.float64[::1], types.int64,
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
    V[0, :] = out
    y[0] = 1.0
    m = 1
    mu = out.copy()
    adj = eta.copy()
    scale = 1.0 + np.max(np.abs(eta))
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        adj[:] = eta
        adj[:n_unary] -= mu[:n_unary]
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
            V[m, :] = out
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
                    V[k, :] = V[i, :]
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


def sparsemap_jvp(vertices, weights, n_unary, d_eta):
    """Jacobian-vector product of SparseMAP (Proposition 1).

    On the support ``I`` the solution satisfies the KKT system
    ``[[M_I^T M_I, 1], [1^T, 0]] [y_I; tau] = [A_I^T eta; 1]``; differentiating
    it gives ``d y_I`` from ``[[G, 1], [1^T, 0]] [d y; d tau] = [A_I^T d_eta; 0]``
    and ``d mu_U = M_I d y``.  Where ``G = M_I^T M_I`` is invertible this is
    the paper's ``M_I D(I) A_I^T d_eta`` with
    ``D = Z - Z 1 1^T Z / (1^T Z 1)``, ``Z = G^{-1}``; solving the KKT system
    also covers supports that are affinely but not linearly independent
    (e.g. containing the zero vertex), where ``Z`` does not exist.

    Parameters
    ----------
    vertices : ndarray of shape (n_active, p)
        Support returned by a SparseMAP solver.
    weights : ndarray of shape (n_active,)
        Their weights (only the support matters).
    n_unary : int
        Number of unary parts.
    d_eta : ndarray of shape (p,)
        Direction in score space.

    Returns
    -------
    d_mu : ndarray of shape (n_unary,)
        Directional derivative of the unary marginals.
    """
    V = np.asarray(vertices, dtype=float)
    M = V[:, :n_unary]
    m = len(V)
    K = np.zeros((m + 1, m + 1))
    K[:m, :m] = M @ M.T
    K[:m, m] = 1.0
    K[m, :m] = 1.0
    rhs = np.concatenate([V @ np.asarray(d_eta, dtype=float), [0.0]])
    dy = np.linalg.lstsq(K, rhs, rcond=None)[0][:m]
    return M.T @ dy


@njit(types.float64[::1](types.float64[::1], types.int64[::1], types.int64[::1], _ORACLE,
                         types.float64[::1], types.int64[::1], types.int64, types.float64),
      cache=True, nogil=True)
def sparsemap_active_set_ragged(theta, part_off, n_unary, oracle, params_flat, params_off,
                                max_iter, tol):
    """:func:`sparsemap_active_set` on a flat, ragged batch of structures.

    Structure ``i`` has scores ``theta[part_off[i]:part_off[i + 1]]``, its
    first ``n_unary[i]`` parts penalised, and oracle parameters
    ``params_flat[params_off[i]:params_off[i + 1]]``.  Returns the marginals
    in the same flat layout as ``theta``.
    """
    n = part_off.shape[0] - 1
    mu = np.zeros(theta.shape[0])
    for i in range(n):
        a = part_off[i]
        b = part_off[i + 1]
        eta = theta[a:b].copy()
        params = params_flat[params_off[i]:params_off[i + 1]].copy()
        m, _, _, _ = sparsemap_active_set(eta, n_unary[i], oracle, params, max_iter, tol)
        mu[a:b] = m
    return mu
