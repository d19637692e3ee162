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
def _kkt_solve(G, b, m):
    """Solve the equality-constrained KKT system of Eq. (9).

    ``[[G, 1], [1^T, 0]] [y; tau] = [b; 1]`` restricted to the first ``m``
    active structures.  Returns ``(y, tau)``.  The system is tiny (``m`` is
    the support size), so Gaussian elimination with partial pivoting is
    fastest.  The active set is affinely independent in exact arithmetic
    (Wolfe's min-norm-point argument); if rounding makes a pivot vanish, a
    least-squares solve takes over.
    """
    n = m + 1
    K = np.zeros((n, n))
    rhs = np.zeros(n)
    for i in range(m):
        for j in range(m):
            K[i, j] = G[i, j]
        K[i, m] = 1.0
        K[m, i] = 1.0
        rhs[i] = b[i]
    rhs[m] = 1.0
    A = K.copy()
    x = rhs.copy()
    scale = 1.0
    for i in range(m):
        scale = max(scale, abs(G[i, i]))
    singular = False
    for c in range(n):
        piv = c
        best = abs(A[c, c])
        for r in range(c + 1, n):
            if abs(A[r, c]) > best:
                best = abs(A[r, c])
                piv = r
        if best <= 1e-12 * scale:
            singular = True
            break
        if piv != c:
            for j in range(n):
                tmp = A[c, j]
                A[c, j] = A[piv, j]
                A[piv, j] = tmp
            tmp = x[c]
            x[c] = x[piv]
            x[piv] = tmp
        for r in range(c + 1, n):
            f = A[r, c] / A[c, c]
            if f != 0.0:
                for j in range(c, n):
                    A[r, j] -= f * A[c, j]
                x[r] -= f * x[c]
    if singular:
        sol = np.linalg.lstsq(K, rhs)[0]
        return sol[:m].copy(), sol[m]
    for c in range(n - 1, -1, -1):
        acc = x[c]
        for j in range(c + 1, n):
            acc -= A[c, j] * x[j]
        x[c] = acc / A[c, c]
    return x[:m].copy(), x[m]


@njit(_RESULT(types.float64[::1], types.int64, _ORACLE, types.float64[::1], types.int64,
              types.float64), cache=True)
def sparsemap_active_set(eta, n_unary, oracle, params, max_iter, tol):
    """SparseMAP by the active-set method (Algorithm 2 of the paper).

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
        Tolerance on the Wolfe gap (relative to the score scale).

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
    # Affinely independent vertices in the unary subspace: at most n_unary+1
    # of them, plus one slot for the candidate being added.
    cap = n_unary + 2
    V = np.zeros((cap, p))
    G = np.zeros((cap, cap))
    scores = np.zeros(cap)
    y = np.zeros(cap)
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
    for it in range(max_iter):
        n_iter = it + 1
        y_hat, tau = _kkt_solve(G, scores, m)
        feasible = True
        for i in range(m):
            if y_hat[i] < 0.0:
                feasible = False
                break
        if feasible:
            for i in range(m):
                y[i] = y_hat[i]
            # u = M_I y ; look for a structure that improves the objective.
            u[:] = 0.0
            for i in range(m):
                u += y[i] * V[i, :n_unary]
            adj[:] = eta
            adj[:n_unary] -= u
            oracle(adj, params, out)
            val = np.dot(adj, out)
            if val <= tau + tol * scale:
                break
            # Already active (numerical stall): stop.
            dup = False
            for i in range(m):
                if np.max(np.abs(V[i] - out)) < 1e-12:
                    dup = True
                    break
            if dup or m >= cap - 1:
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
        else:
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
                y[i] = (1.0 - gamma) * y[i] + gamma * y_hat[i]
            if blocking >= 0:
                y[blocking] = 0.0
            # Drop every structure whose weight vanished (compact in place).
            k = 0
            for i in range(m):
                if y[i] > 1e-14:
                    if k != i:
                        V[k, :] = V[i, :]
                        scores[k] = scores[i]
                        y[k] = y[i]
                    k += 1
            m = k
            for i in range(m):
                for j in range(m):
                    G[i, j] = np.dot(V[i, :n_unary], V[j, :n_unary])
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
