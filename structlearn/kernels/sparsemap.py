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

from ._lazy import njit_on_first_call

#: Signature of every MAP oracle: ``oracle(eta, params, out) -> None``.
ORACLE_SIGNATURE = types.void(types.float64[::1], types.float64[::1], types.float64[::1])
# The solvers take the oracle as a *typed* first-class function.  With an
# explicit signature Numba compiles each solver once for all oracles and can
# cache it on disk; an untyped dispatcher argument would be recompiled in
# every process.
_ORACLE = types.FunctionType(ORACLE_SIGNATURE)
_RESULT = types.Tuple((types.float64[::1], types.float64[:, ::1], types.float64[::1],
                       types.int64))




# ------------------------------------------------------------------------
# Incrementally factorised KKT system of the active set.
#
# The problem restricted to the affine hull of the ``m`` active vertices is
# ``max_{1^T y = 1} s^T y - 1/2 y^T G y`` (``s_i = <eta, a_i>``, ``G`` the
# Gram matrix of the *unary* parts), with KKT system (Eq. 9)
# ``[[G, 1], [1^T, 0]] [y; tau] = [s; 1]``.  On ``1^T y = 1`` the matrix
# ``G`` can be replaced by ``Gc = G + c 1 1^T`` (``c > 0``; ``tau`` shifts by
# ``c``).  ``Gc`` is the Gram matrix of the *augmented* unary parts
# ``[u_i; sqrt(c)]``, hence positive definite exactly when the active
# vertices are affinely independent in the unary subspace -- there is no
# reference vertex, so any vertex can leave the set at the same cost.  The
# solver keeps
#
# * ``Lf``: the lower Cholesky factor ``Gc = Lf Lf^T`` (row ``i`` belongs to
#   active position ``i``).  A vertex enters by appending one row (a forward
#   substitution, O(m^2)); vertex ``j`` leaves by deleting row ``j`` and
#   restoring triangularity with Givens rotations of columns ``(k, k+1)``,
#   ``k = j..m-2`` (O((m-j) m)).
# * ``w1 = Lf^{-1} 1`` and ``ws = Lf^{-1} s``, updated in O(m) by the same
#   operations (``Lf w = b`` stays true when a row of both is deleted and the
#   column rotations are applied to ``w``).
#
# Then ``Gc y + t 1 = s, 1^T y = 1`` gives ``t = (w1.ws - 1) / (w1.w1)`` and
# ``y = Lf^{-T} (ws - t w1)``: one back substitution, O(m^2), plus one step
# of iterative refinement against the exact ``G`` when the solution is
# (nearly) feasible, i.e. when it is about to become the iterate and enter
# the gap test.  The old version rebuilt and refactorised the reduced
# Hessian of a null-space parametrisation every iteration, O(m^3).
#
# ``c`` is fixed for a solve: the squared norm of the first vertex's unary
# part (1 if it is zero), so that the augmented coordinate has the scale of
# the unary ones and ``Gc`` is not worse conditioned than the reduced
# Hessian.
# ------------------------------------------------------------------------


@njit(cache=True)
def _forward(Lf, m, b, x):
    """``x[:m] = Lf[:m, :m]^{-1} b[:m]`` (lower triangular)."""
    for i in range(m):
        acc = b[i]
        for k in range(i):
            acc -= Lf[i, k] * x[k]
        x[i] = acc / Lf[i, i]


@njit(cache=True)
def _backward(Lf, m, v, x):
    """``x[:m] = Lf[:m, :m]^{-T} v[:m]`` (row-oriented; ``v`` untouched)."""
    for i in range(m):
        x[i] = v[i]
    for i in range(m - 1, -1, -1):
        xi = x[i] / Lf[i, i]
        x[i] = xi
        for k in range(i):
            x[k] -= Lf[i, k] * xi


@njit(cache=True)
def _chol_delete(Lf, m, j, w1, ws):
    """Remove position ``j`` from the factor ``Lf[:m, :m]`` of ``Gc`` (and
    from ``w1 = Lf^{-1} 1``, ``ws = Lf^{-1} s``).  The factor then has
    ``m - 1`` rows."""
    # Drop row j: rows j..m-2 then have one entry right of the diagonal.
    for i in range(j, m - 1):
        for k in range(i + 2):
            Lf[i, k] = Lf[i + 1, k]
    for k in range(m):
        Lf[m - 1, k] = 0.0
    # Column rotations (k, k+1) zero the superdiagonal; the last column
    # ends up zero and is dropped (so is the last entry of Q^T w).
    for k in range(j, m - 1):
        a = Lf[k, k]
        b = Lf[k, k + 1]
        r = np.hypot(a, b)
        if r == 0.0:
            continue
        cs = a / r
        sn = b / r
        Lf[k, k] = r
        Lf[k, k + 1] = 0.0
        for i in range(k + 1, m - 1):
            x = Lf[i, k]
            z = Lf[i, k + 1]
            Lf[i, k] = cs * x + sn * z
            Lf[i, k + 1] = cs * z - sn * x
        x = w1[k]
        z = w1[k + 1]
        w1[k] = cs * x + sn * z
        w1[k + 1] = cs * z - sn * x
        x = ws[k]
        z = ws[k + 1]
        ws[k] = cs * x + sn * z
        ws[k + 1] = cs * z - sn * x
    w1[m - 1] = 0.0
    ws[m - 1] = 0.0


@njit(cache=True)
def _chol_append(Lf, G, c, m, l):
    """Try to append position ``m`` (whose row/column of ``G`` is filled)
    to the factor of the first ``m`` positions.

    Returns the pivot -- the squared distance of the augmented unary part
    ``[u_m; sqrt(c)]`` to the span of the active ones; ``l[:m]`` holds the
    new factor row.  The caller accepts the row (:func:`_chol_accept`) if
    the pivot is above its round-off threshold.
    """
    for i in range(m):
        l[i] = G[i, m] + c
    _forward(Lf, m, l, l)
    piv = G[m, m] + c
    for i in range(m):
        piv -= l[i] * l[i]
    return piv


@njit(cache=True)
def _chol_accept(Lf, scores, w1, ws, m, l, piv):
    lmm = np.sqrt(piv)
    a1 = 1.0
    a2 = scores[m]
    for k in range(m):
        Lf[m, k] = l[k]
        a1 -= l[k] * w1[k]
        a2 -= l[k] * ws[k]
    Lf[m, m] = lmm
    w1[m] = a1 / lmm
    ws[m] = a2 / lmm


@njit(cache=True)
def _append_threshold(G, c, m):
    """Round-off threshold for the pivot of position ``m``: relative to the
    spread ``max_i ||u_i - u_0||^2`` of the unary parts (as the reduced
    Hessian pivots were) plus a term for the cancellation in ``G + c``."""
    gmax = 0.0
    hmax = 0.0
    for i in range(m + 1):
        gmax = max(gmax, G[i, i])
        hmax = max(hmax, G[i, i] - 2.0 * G[i, 0] + G[0, 0])
    return 1e-10 * hmax + 1e-12 * (gmax + c)


@njit(cache=True)
def _kkt_solve(Lf, G, c, scores, w1, ws, m, y_hat, t1, t2, refine_below):
    """Maximiser of the objective on the affine hull of the ``m`` (affinely
    independent, factorised) active vertices, written to ``y_hat[:m]`` (may
    have negative entries).  One step of iterative refinement is made unless
    ``min(y_hat) < refine_below`` (a clearly infeasible solution only sets a
    line-search direction)."""
    n11 = 0.0
    n1s = 0.0
    for i in range(m):
        n11 += w1[i] * w1[i]
        n1s += w1[i] * ws[i]
    t = (n1s - 1.0) / n11
    for i in range(m):
        t1[i] = ws[i] - t * w1[i]
    _backward(Lf, m, t1, y_hat)
    ymin = np.inf
    for i in range(m):
        ymin = min(ymin, y_hat[i])
    if ymin < refine_below:
        return
    # residual of [[Gc, 1], [1^T, 0]] [y; t] = [s; 1] with the exact G
    tot = 0.0
    for i in range(m):
        tot += y_hat[i]
    r2 = 1.0 - tot
    for i in range(m):
        acc = scores[i] - t - c * tot
        for k in range(m):
            acc -= G[i, k] * y_hat[k]
        t1[i] = acc
    _forward(Lf, m, t1, t2)
    a = 0.0
    for i in range(m):
        a += w1[i] * t2[i]
    dt = (a - r2) / n11
    for i in range(m):
        t2[i] -= dt * w1[i]
    _backward(Lf, m, t2, t1)
    for i in range(m):
        y_hat[i] += t1[i]


@njit(cache=True)
def _null_direction(Lf, m, l, d, z):
    """Affine dependency of position ``m`` on the factorised positions:
    ``Gc z = Gc[:m, m]`` (``Lf^T z = l``), ``d = [-z / sum(z); 1]`` so that
    ``sum(d) = 0`` and ``U d = 0`` up to round-off."""
    _backward(Lf, m, l, z)
    tot = 0.0
    for i in range(m):
        tot += z[i]
    if abs(tot) < 0.5:  # not a genuine dependency (cannot happen)
        tot = 1.0
    for i in range(m):
        d[i] = -z[i] / tot
    d[m] = 1.0


@njit(cache=True)
def _drop(keep, n, mf, Lf, w1, ws, G, scores, y, slot, free, nfree):
    """Remove the positions ``i < n`` with ``not keep[i]``: from the factor
    (positions ``< mf``, highest first), then compact ``G``, ``scores``,
    ``y`` and the slot map, returning freed slots to ``free``.  Returns
    ``(new n, new mf, new nfree)``."""
    for i in range(min(mf, n) - 1, -1, -1):
        if not keep[i]:
            _chol_delete(Lf, mf, i, w1, ws)
            mf -= 1
    k = 0
    for i in range(n):
        if keep[i]:
            if k != i:
                slot[k] = slot[i]
                scores[k] = scores[i]
                y[k] = y[i]
                for b in range(n):
                    G[k, b] = G[i, b]
            k += 1
        else:
            free[nfree] = slot[i]
            nfree += 1
    k = 0
    for i in range(n):
        if keep[i]:
            if k != i:
                for a in range(n):
                    G[a, k] = G[a, i]
            k += 1
    return k, mf, nfree


@njit(cache=True)
def _store_vertex(V, nzi, nnz, nnzu, nrm2, sl, out, n_unary, onz, k_o, nrm_o):
    """Store ``out`` in slot ``sl`` with the list of its nonzeros
    ``onz[:k_o]`` (increasing, so the unary ones lead) and its squared norm
    ``nrm_o`` (see :func:`_nonzeros`)."""
    V[sl, :] = out
    ku = 0
    for k in range(k_o):
        q = onz[k]
        nzi[sl, k] = q
        if q < n_unary:
            ku += 1
    nnz[sl] = k_o
    nnzu[sl] = ku
    nrm2[sl] = nrm_o


@njit(cache=True)
def _gram_append(G, V, slot, m, nzi, nnzu):
    """Row and column ``m`` of the Gram matrix of the active vertices'
    unary parts, for the vertex just stored in slot ``slot[m]`` (its unary
    nonzeros are ``nzi[sl, :nnzu[sl]]``, see :func:`_store_vertex`)."""
    sl = slot[m]
    for i in range(m + 1):
        si = slot[i]
        g = 0.0
        for k in range(nnzu[sl]):
            q = nzi[sl, k]
            g += V[si, q] * V[sl, q]
        G[i, m] = g
        G[m, i] = g


@njit(cache=True)
def _find_duplicate(V, slot, nrm2, m, out, onz, k_o, nrm_o):
    """Position among the ``m`` active vertices of a vertex equal to ``out``
    (nonzeros ``onz[:k_o]``, squared norm ``nrm_o``), or -1.  A sparse
    distance filter (exact for 0/1 vertices) runs first; the dense exact
    test only for the vertices that pass it."""
    p = out.shape[0]
    for i in range(m):
        si = slot[i]
        acc = 0.0
        for k in range(k_o):
            q = onz[k]
            acc += V[si, q] * out[q]
        dist2 = nrm2[si] - 2.0 * acc + nrm_o
        if dist2 <= 1e-8 * (nrm2[si] + nrm_o) + 1e-20:
            same = True
            for q in range(p):
                if abs(V[si, q] - out[q]) >= 1e-12:
                    same = False
                    break
            if same:
                return i
    return -1


@njit(cache=True)
def _sparse_dot(a, out, onz, k_o):
    """``a @ out`` over the nonzeros ``onz[:k_o]`` of ``out``."""
    acc = 0.0
    for k in range(k_o):
        q = onz[k]
        acc += a[q] * out[q]
    return acc


@njit(cache=True)
def _nonzeros(out, onz):
    """Indices of the nonzeros of ``out`` into ``onz``; returns their count
    and the squared norm."""
    k_o = 0
    nrm_o = 0.0
    for q in range(out.shape[0]):
        v = out[q]
        if v != 0.0:
            onz[k_o] = q
            k_o += 1
            nrm_o += v * v
    return k_o, nrm_o


@njit(cache=True)
def _grow_rows(A, n):
    """``A`` with its first dimension enlarged to ``n`` (new rows zero)."""
    B = np.zeros((n,) + A.shape[1:], dtype=A.dtype)
    B[:A.shape[0]] = A
    return B


@njit(cache=True)
def _grow_square(A, n):
    B = np.zeros((n, n), dtype=A.dtype)
    k = A.shape[0]
    B[:k, :k] = A
    return B


@njit_on_first_call(
    _RESULT(types.float64[::1], types.int64, _ORACLE, types.float64[::1], types.int64,
            types.float64, types.float64[:, ::1], types.float64[::1]), cache=True)
def sparsemap_active_set_warm(eta, n_unary, oracle, params, max_iter, tol, V0, w0):
    """SparseMAP by the active-set method (Algorithm 2 of the paper),
    started from a given support.

    This is the one active-set implementation; :func:`sparsemap_active_set`
    is this function started from the MAP vertex.  The start is the
    distribution ``w0`` over the vertex vectors ``V0`` (e.g. the support of
    a previous solve with nearby scores): vertices with a non-positive
    weight, duplicates (their weight is merged) and vertices whose unary
    part is affinely dependent on the ones kept before them (the factor
    would be singular; their weight is dropped) are left out, and the kept
    weights are renormalised to sum to one, which gives a feasible start.
    The method converges from any feasible start to the same optimum with
    the same Frank-Wolfe-gap termination; an empty ``V0`` (or all weights
    zero) starts from the MAP vertex.  The rows of ``V0`` must be vertex
    vectors of the polytope (as written by ``oracle``).

    Each iteration either

    * solves the problem restricted to the affine hull of the active set
      (``_kkt_solve``, on an incrementally updated Cholesky factor of
      ``G + c 1 1^T``, O(m^2) per iteration -- see the notes above
      ``_forward``); if the solution lies in the simplex it becomes
      the iterate and the oracle is asked for the vertex of best linearised
      score, which is added unless the Frank-Wolfe gap
      ``<grad, a_new - mu> = <eta - [u; 0], a_new - mu>`` is at most
      ``tol * (1 + max|eta|)`` -- the only convergence test;
    * otherwise moves towards it until a weight vanishes (Eq. 10) and drops
      that vertex;
    * or, when the new vertex's unary part is affinely dependent on the
      active ones (its pivot in the factor vanishes; the KKT matrix would be
      singular -- this happens when some parts are not penalised, e.g.
      chain transitions), moves along the null-space direction ``d``
      (``sum(d) = 0``, ``U_A d = 0``) on which the objective is linear, in
      its ascent direction, until a weight vanishes, and drops that vertex
      (a simplex step); the new vertex then enters the factor.  After
      adding a vertex with a positive gap ``g`` to an optimal,
      nondegenerate active set the slope along ``d`` is exactly ``g > 0``,
      so this step strictly improves unless a zero weight blocks.

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
    V0 : ndarray of shape (m0, p)
        Initial support (``m0 = 0``: start from the MAP vertex).
    w0 : ndarray of shape (m0,)
        Its weights (nonnegative; renormalised over the kept vertices).

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
    # The factorised vertices are affinely independent in the unary
    # subspace: at most n_unary + 1 of them, plus one position for a
    # candidate that is dependent (removed again by a null-space step).
    cap = n_unary + 2
    # Vertex storage by slot (a vertex never moves); everything else by
    # position in the active set (position i <-> row i of the factor).  The
    # arrays start small and double up to ``cap`` when the active set grows
    # (allocating ``cap x p`` up front costs more than a whole solve on
    # well-scaled problems).
    m0 = V0.shape[0]
    if m0 > 0 and V0.shape[1] != p:
        raise ValueError("initial vertices must have as many parts as eta")
    ca = min(cap, max(12, m0 + 4))
    # (rows of V and nzi are written by _store_vertex before they are read)
    V = np.empty((ca, p))
    nzi = np.empty((ca, p), dtype=np.int64)
    nnz = np.zeros(ca, dtype=np.int64)
    nnzu = np.zeros(ca, dtype=np.int64)
    nrm2 = np.zeros(ca)
    free = np.empty(ca, dtype=np.int64)
    for i in range(ca):
        free[i] = ca - 1 - i
    nfree = ca
    slot = np.zeros(ca, dtype=np.int64)
    G = np.zeros((ca, ca))
    Lf = np.zeros((ca, ca))
    w1 = np.zeros(ca)
    ws = np.zeros(ca)
    scores = np.zeros(ca)
    y = np.zeros(ca)
    y_hat = np.zeros(ca)
    d = np.zeros(ca)
    lrow = np.zeros(ca)
    t1 = np.zeros(ca)
    t2 = np.zeros(ca)
    lin = np.zeros(ca)
    keep = np.zeros(ca, dtype=np.bool_)
    out = np.zeros(p)
    onz = np.zeros(p, dtype=np.int64)
    m = 0  # active positions, all in the factor ...
    c = 1.0
    # Warm start: factorise the given vertices one by one (at most
    # ca - 1 <= cap - 1 of them can be affinely independent).
    for j in range(m0):
        wj = w0[j]
        if not (wj > 0.0):
            continue
        vj = V0[j]
        k_o, nrm_o = _nonzeros(vj, onz)
        dup = _find_duplicate(V, slot, nrm2, m, vj, onz, k_o, nrm_o)
        if dup >= 0:
            y[dup] += wj
            continue
        if m >= ca - 1:
            continue
        nfree -= 1
        sl = free[nfree]
        slot[m] = sl
        _store_vertex(V, nzi, nnz, nnzu, nrm2, sl, vj, n_unary, onz, k_o, nrm_o)
        _gram_append(G, V, slot, m, nzi, nnzu)
        g = G[m, m]
        scores[m] = _sparse_dot(eta, vj, onz, k_o)
        if m == 0:
            c = g if g > 0.0 else 1.0
            Lf[0, 0] = np.sqrt(g + c)
            w1[0] = 1.0 / Lf[0, 0]
            ws[0] = scores[0] / Lf[0, 0]
            y[0] = wj
            m = 1
            continue
        piv = _chol_append(Lf, G, c, m, lrow)
        if piv > _append_threshold(G, c, m):
            _chol_accept(Lf, scores, w1, ws, m, lrow, piv)
            y[m] = wj
            m += 1
        else:  # affinely dependent on the kept ones: leave it out
            free[nfree] = sl
            nfree += 1
    if m > 0:
        total = 0.0
        for i in range(m):
            total += y[i]
        for i in range(m):
            y[i] /= total
    else:
        # Cold start: the MAP vertex.
        oracle(eta, params, out)
        nfree -= 1
        sl = free[nfree]
        slot[0] = sl
        k_o, nrm_o = _nonzeros(out, onz)
        _store_vertex(V, nzi, nnz, nnzu, nrm2, sl, out, n_unary, onz, k_o, nrm_o)
        g00 = 0.0
        for k in range(nnzu[sl]):
            q = nzi[sl, k]
            g00 += out[q] * out[q]
        G[0, 0] = g00
        c = g00 if g00 > 0.0 else 1.0
        scores[0] = np.dot(eta, out)
        y[0] = 1.0
        Lf[0, 0] = np.sqrt(g00 + c)
        w1[0] = 1.0 / Lf[0, 0]
        ws[0] = scores[0] / Lf[0, 0]
        m = 1
    pending = False  # ... plus a dependent candidate at position m
    scale = 1.0 + np.max(np.abs(eta))
    n_iter = 0
    u = np.zeros(n_unary)
    adj = eta.copy()
    polish = False
    for it in range(max_iter):
        n_iter = it + 1
        if pending:
            # The candidate at position m depends affinely (in the unary
            # parts) on the active set: the objective is linear along d.
            # Go uphill (on a flat slope, keep the newest vertex) until a
            # weight hits zero, and drop that vertex.
            n = m + 1
            slope = 0.0
            for i in range(n):
                slope += d[i] * scores[i]
            if slope < -1e-14 * scale or (abs(slope) <= 1e-14 * scale and d[m] < 0.0):
                for i in range(n):
                    d[i] = -d[i]
            gamma = np.inf
            blocking = -1
            for i in range(n):
                if d[i] < 0.0:
                    step = y[i] / (-d[i])
                    if step < gamma:
                        gamma = step
                        blocking = i
            if blocking < 0:  # cannot happen: sum(d) = 0, d != 0
                break
            for i in range(n):
                y[i] = max(0.0, y[i] + gamma * d[i])
                keep[i] = not (i == blocking or (d[i] < 0.0 and y[i] <= 1e-14))
            n, m, nfree = _drop(keep, n, m, Lf, w1, ws, G, scores, y, slot, free, nfree)
            pending = False
            if n > m:
                # The candidate survived (now at position m): factorise it.
                piv = _chol_append(Lf, G, c, m, lrow)
                if piv > _append_threshold(G, c, m):
                    _chol_accept(Lf, scores, w1, ws, m, lrow, piv)
                    m += 1
                else:  # still dependent in floating point: another step
                    _null_direction(Lf, m, lrow, d, t1)
                    pending = True
            continue
        if not polish:
            _kkt_solve(Lf, G, c, scores, w1, ws, m, y_hat, t1, t2, -1e-8)
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
                m, _, nfree = _drop(keep, m, m, Lf, w1, ws, G, scores, y, slot, free, nfree)
                continue
            for i in range(m):
                y[i] = y_hat[i]
        # u = M_I y ; look for a structure that improves the objective.
        u[:] = 0.0
        for i in range(m):
            si = slot[i]
            yi = y[i]
            for k in range(nnzu[si]):
                q = nzi[si, k]
                u[q] += yi * V[si, q]
        # (adj = eta off the unary parts since its copy above)
        for q in range(n_unary):
            adj[q] = eta[q] - u[q]
        oracle(adj, params, out)
        # Frank-Wolfe gap <grad, a_new - mu>, with <grad, mu> = s^T y - ||u||^2.
        lin_mu = -np.dot(u, u)
        for i in range(m):
            lin_mu += y[i] * scores[i]
        k_o, nrm_o = _nonzeros(out, onz)
        gap = _sparse_dot(adj, out, onz, k_o) - lin_mu
        if gap <= tol * scale:
            break
        dup = _find_duplicate(V, slot, nrm2, m, out, onz, k_o, nrm_o)
        if dup < 0:
            if m >= cap:  # cannot happen: Gc is nonsingular, so m <= n_unary + 1
                break
            if m >= ca:
                ca2 = min(cap, 2 * ca + 8)
                V = _grow_rows(V, ca2)
                nzi = _grow_rows(nzi, ca2)
                nnz = _grow_rows(nnz, ca2)
                nnzu = _grow_rows(nnzu, ca2)
                nrm2 = _grow_rows(nrm2, ca2)
                slot = _grow_rows(slot, ca2)
                free = _grow_rows(free, ca2)
                for i in range(ca2 - 1, ca - 1, -1):
                    free[nfree] = i
                    nfree += 1
                G = _grow_square(G, ca2)
                Lf = _grow_square(Lf, ca2)
                w1 = _grow_rows(w1, ca2)
                ws = _grow_rows(ws, ca2)
                scores = _grow_rows(scores, ca2)
                y = _grow_rows(y, ca2)
                y_hat = _grow_rows(y_hat, ca2)
                d = _grow_rows(d, ca2)
                lrow = _grow_rows(lrow, ca2)
                t1 = _grow_rows(t1, ca2)
                t2 = _grow_rows(t2, ca2)
                lin = _grow_rows(lin, ca2)
                keep = _grow_rows(keep, ca2)
                ca = ca2
            nfree -= 1
            sl = free[nfree]
            slot[m] = sl
            _store_vertex(V, nzi, nnz, nnzu, nrm2, sl, out, n_unary, onz, k_o, nrm_o)
            _gram_append(G, V, slot, m, nzi, nnzu)
            scores[m] = _sparse_dot(eta, out, onz, k_o)
            y[m] = 0.0
            piv = _chol_append(Lf, G, c, m, lrow)
            if piv > _append_threshold(G, c, m):
                _chol_accept(Lf, scores, w1, ws, m, lrow, piv)
                m += 1
            else:
                _null_direction(Lf, m, lrow, d, t1)
                pending = True
            polish = False
            continue
        # The best vertex is already active although the gap exceeds the
        # tolerance: the restricted solution is off by rounding.  Pairwise
        # step from the active vertex of lowest linearised score to it.
        for i in range(m):
            si = slot[i]
            acc = 0.0
            for k in range(nnzu[si]):
                q = nzi[si, k]
                acc += V[si, q] * u[q]
            lin[i] = scores[i] - acc
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
            m, _, nfree = _drop(keep, m, m, Lf, w1, ws, G, scores, y, slot, free, nfree)
        polish = True
    # Vertices kept at weight zero are not part of the support (nor is a
    # dependent candidate left over when max_iter ran out: its weight is 0).
    n = m + 1 if pending else m
    k = 0
    total = 0.0
    for i in range(n):
        if y[i] > 0.0:
            k += 1
            total += y[i]
    mu = np.zeros(p)
    weights = np.zeros(k)
    verts = np.empty((k, p))
    k = 0
    for i in range(n):
        if y[i] > 0.0:
            weights[k] = y[i] / total
            verts[k, :] = V[slot[i]]
            mu += weights[k] * verts[k]
            k += 1
    return mu, verts, weights, n_iter


@njit_on_first_call(
    _RESULT(types.float64[::1], types.int64, _ORACLE, types.float64[::1], types.int64,
            types.float64), cache=True)
def sparsemap_active_set(eta, n_unary, oracle, params, max_iter, tol):
    """SparseMAP by the active-set method, started from the MAP vertex.

    :func:`sparsemap_active_set_warm` (the implementation: method,
    parameters, returns ``(mu, vertices, weights, n_iter)``) with an empty
    initial support.
    """
    return sparsemap_active_set_warm(eta, n_unary, oracle, params, max_iter, tol,
                                     np.zeros((0, eta.shape[0])), np.zeros(0))


@njit_on_first_call(
    types.float64[:, ::1](types.float64[:, ::1], types.int64, _ORACLE, types.float64[::1],
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


@njit_on_first_call(
    types.float64[::1](types.float64[::1], types.int64[::1], types.int64[::1], _ORACLE,
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


#: dtype of the compact codes of cached support vertices: one small int per
#: row of a vertex's unary block (a tag, a head), so rows of at most 32767
#: entries.
SUPPORT_CODE_DTYPE = np.int16
#: Signature of a support decoder's inverse: ``encode(codes, params, out)``
#: writes the vertex vector of the structure whose unary rows take the
#: arguments ``codes`` into ``out`` (which it zeroes first).
ENCODE_SIGNATURE = types.void(types.int16[::1], types.float64[::1], types.float64[::1])


@njit_on_first_call(
    types.Tuple((types.float64[::1], types.int16[::1], types.float64[::1],
                 types.int64[::1]))(
        types.float64[::1], types.int64[::1], types.int64[::1], _ORACLE,
        types.FunctionType(ENCODE_SIGNATURE), types.float64[::1], types.int64[::1],
        types.int64[::1], types.int64[::1], types.int64, types.float64,
        types.int16[::1], types.float64[::1], types.int64[::1]),
    cache=True, nogil=True)
def sparsemap_active_set_warm_ragged(theta, part_off, n_unary, oracle, encode, params_flat,
                                     params_off, n_rows, row_width, max_iter, tol,
                                     codes0, w0, sup_off0):
    """Warm-started active set on every structure of a ragged batch.

    :func:`sparsemap_active_set_warm` on structure ``i`` (scores
    ``theta[part_off[i]:part_off[i + 1]]``, first ``n_unary[i]`` parts
    penalised, oracle parameters ``params_flat[params_off[i]:params_off[i +
    1]]``), starting from a support stored compactly: each vertex as
    ``n_rows[i]`` int16 *codes*, the positions of the ones in the rows of
    width ``row_width[i]`` of its unary block (a tag per token for chains,
    a head per word for trees), which ``encode`` turns back into the vertex
    vector.  Structure ``i`` starts from the ``sup_off0[i + 1] -
    sup_off0[i]`` vertices stored one after another in ``codes0`` (after
    those of the structures before it), with weights
    ``w0[sup_off0[i]:sup_off0[i + 1]]``; an empty support starts from the
    MAP vertex.  Returns ``(mu, codes, weights, sup_off)``: the marginals
    (flat, as ``theta``) and the final supports in the same layout.
    """
    n = part_off.shape[0] - 1
    mu = np.zeros(theta.shape[0])
    sup_off = np.zeros(n + 1, dtype=np.int64)
    total_rows = 0
    for i in range(n):
        total_rows += n_rows[i]
    codes = np.zeros(max(16, 4 * total_rows), dtype=np.int16)
    wout = np.zeros(max(16, 4 * n))
    rpos = 0  # read position in codes0
    opos = 0  # write position in codes
    for i in range(n):
        a = part_off[i]
        p = part_off[i + 1] - a
        R = n_rows[i]
        W = row_width[i]
        params = params_flat[params_off[i]:params_off[i + 1]].copy()
        s0 = sup_off0[i]
        m0 = sup_off0[i + 1] - s0
        V0 = np.empty((m0, p))   # every row written by encode
        for j in range(m0):
            encode(codes0[rpos + j * R:rpos + (j + 1) * R], params, V0[j])
        rpos += m0 * R
        mi, verts, wts, _ = sparsemap_active_set_warm(theta[a:a + p].copy(), n_unary[i],
                                                      oracle, params, max_iter, tol, V0,
                                                      w0[s0:s0 + m0].copy())
        mu[a:a + p] = mi
        k = wts.shape[0]
        s = sup_off[i]
        if s + k > wout.shape[0]:
            grown = np.zeros(2 * (s + k))
            grown[:s] = wout[:s]
            wout = grown
        if opos + k * R > codes.shape[0]:
            grown_c = np.zeros(2 * (opos + k * R), dtype=np.int16)
            grown_c[:opos] = codes[:opos]
            codes = grown_c
        for j in range(k):
            wout[s + j] = wts[j]
            for t in range(R):
                best = 0
                for c in range(W):
                    if verts[j, t * W + c] > verts[j, t * W + best]:
                        best = c
                    if verts[j, t * W + best] >= 1.0:   # the one of a 0/1 row
                        break
                codes[opos + j * R + t] = best
        opos += k * R
        sup_off[i + 1] = s + k
    return mu, codes[:opos].copy(), wout[:sup_off[n]].copy(), sup_off


@njit(cache=True, nogil=True)
def block_params(off, extra):
    """Per-block oracle parameters ``[length_i, *extra]`` of a ragged batch
    whose blocks are delimited by ``off`` (e.g. token or word offsets).

    Returns ``(params_flat, params_off)`` (float64, int64 of shape
    ``(n_blocks + 1,)``) as taken by :func:`sparsemap_active_set_ragged`.
    """
    n = off.shape[0] - 1
    w = 1 + extra.shape[0]
    params = np.empty(w * n)
    params_off = np.empty(n + 1, dtype=np.int64)
    params_off[0] = 0
    for i in range(n):
        params[w * i] = float(off[i + 1] - off[i])
        for j in range(extra.shape[0]):
            params[w * i + 1 + j] = extra[j]
        params_off[i + 1] = w * (i + 1)
    return params, params_off
