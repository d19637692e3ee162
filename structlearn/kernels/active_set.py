"""SparseMAP by the active-set method (Algorithm 2 of the paper).

:func:`sparsemap_active_set_warm` is the one active-set implementation,
generic over the MAP oracle; :func:`sparsemap_active_set` starts it from the
MAP vertex and :func:`sparsemap_active_set_batch` runs it row by row.  Its
steps are in ``structlearn.kernels._active_set_steps``, their linear
algebra in ``structlearn.kernels._active_set_factor``.  See
:mod:`structlearn.kernels.sparsemap` for the problem and the oracle
convention.
"""

import numpy as np
from numba import types

from ._active_set_steps import (
    _cold_start,
    _collect_support,
    _enter_factor,
    _find_duplicate,
    _grow,
    _most_violating_vertex,
    _null_space_step,
    _pairwise_step,
    _push_vertex,
    _solve_restricted_qp,
    _step_towards_restricted,
    _warm_start,
)
from ._lazy import njit_on_first_call
from ._sparsemap_types import _ORACLE, _RESULT, score_scale


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
      ``G + c 1 1^T``, O(m^2) per iteration -- see
      ``structlearn.kernels._active_set_factor``); if the solution lies
      in the simplex it becomes the iterate and the oracle is asked for the
      vertex of best linearised score, which is added unless the Frank-Wolfe
      gap
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

    The body is the sequence of named steps of
    ``structlearn.kernels._active_set_steps``.

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
    m0 = V0.shape[0]
    if m0 > 0 and V0.shape[1] != p:
        raise ValueError("initial vertices must have as many parts as eta")
    # The state (see the notes in _active_set_steps): the by-slot and
    # by-position arrays start with ``ca`` entries and grow up to ``cap``.
    ca = min(cap, max(12, m0 + 4))
    # vertex store, by slot (rows of V and nzi are written by _store_vertex
    # before they are read); every slot free
    V = np.empty((ca, p))
    nzi = np.empty((ca, p), dtype=np.int64)
    nnz = np.zeros(ca, dtype=np.int64)
    nnzu = np.zeros(ca, dtype=np.int64)
    nrm2 = np.zeros(ca)
    free = np.empty(ca, dtype=np.int64)
    for i in range(ca):
        free[i] = ca - 1 - i
    # active positions
    slot = np.zeros(ca, dtype=np.int64)
    G = np.zeros((ca, ca))
    Lf = np.zeros((ca, ca))
    w1 = np.zeros(ca)
    ws = np.zeros(ca)
    scores = np.zeros(ca)
    y = np.zeros(ca)
    # work arrays by position
    y_hat = np.zeros(ca)
    d = np.zeros(ca)
    lrow = np.zeros(ca)
    t1 = np.zeros(ca)
    t2 = np.zeros(ca)
    lin = np.zeros(ca)
    keep = np.zeros(ca, dtype=np.bool_)
    # fixed size
    out = np.zeros(p)
    onz = np.zeros(p, dtype=np.int64)
    u = np.zeros(n_unary)
    adj = eta.copy()

    # 1. The start: m active positions, all in the factor ...
    m, c, nfree = _warm_start(eta, n_unary, V0, w0, V, nzi, nnz, nnzu, nrm2, free, slot, G,
                              Lf, w1, ws, scores, y, lrow, onz)
    if m == 0:
        c, nfree = _cold_start(eta, n_unary, oracle, params, nfree, V, nzi, nnz, nnzu, nrm2,
                               free, slot, G, Lf, w1, ws, scores, y, out, onz)
        m = 1
    pending = False  # ... plus a dependent candidate at position m
    polish = False   # the last step was a pairwise (polishing) step
    scale = score_scale(eta)

    # 2. The iterations.
    n_iter = 0
    for it in range(max_iter):
        n_iter = it + 1
        if pending:
            m, nfree, pending, ok = _null_space_step(m, nfree, c, scale, free, slot, G, Lf, w1,
                                                     ws, scores, y, d, lrow, t1, keep)
            if not ok:
                break
            continue
        if not polish and not _solve_restricted_qp(m, c, G, Lf, w1, ws, scores, y, y_hat,
                                                   t1, t2):
            m, nfree = _step_towards_restricted(m, nfree, free, slot, G, Lf, w1, ws, scores, y,
                                                y_hat, keep)
            continue
        # The iterate is the restricted optimum: certify it or improve it.
        gap, k_o, nrm_o = _most_violating_vertex(eta, n_unary, oracle, params, m, V, nzi,
                                                 nnzu, slot, scores, y, out, onz, u, adj)
        if gap <= tol * scale:
            break
        dup = _find_duplicate(V, slot, nrm2, m, out, onz, k_o, nrm_o)
        if dup < 0:
            # A new vertex: it enters with weight zero.
            if m >= cap:  # cannot happen: Gc is nonsingular, so m <= n_unary + 1
                break
            if m >= ca:
                ca2 = min(cap, 2 * ca + 8)
                (V, nzi, nnz, nnzu, nrm2, free, slot, G, Lf, w1, ws, scores, y,
                 y_hat, d, lrow, t1, t2, lin, keep, nfree) = _grow(
                    ca, ca2, nfree, V, nzi, nnz, nnzu, nrm2, free, slot, G, Lf, w1, ws,
                    scores, y, y_hat, d, lrow, t1, t2, lin, keep)
                ca = ca2
            nfree = _push_vertex(eta, n_unary, m, nfree, out, k_o, nrm_o, V, nzi, nnz, nnzu,
                                 nrm2, free, slot, G, scores, onz)
            y[m] = 0.0
            m, pending = _enter_factor(m, c, G, Lf, w1, ws, scores, d, lrow, t1)
            polish = False
            continue
        # The best vertex is already active although the gap exceeds the
        # tolerance: the restricted solution is off by rounding.
        m, nfree, ok = _pairwise_step(m, nfree, dup, scale, V, nzi, nnzu, free, slot, G, Lf,
                                      w1, ws, scores, y, lin, keep, u)
        if not ok:
            break
        polish = True

    # 3. The support (with a dependent candidate left over when max_iter
    # ran out, at weight zero).
    mu, verts, weights = _collect_support(p, m + 1 if pending else m, V, slot, y)
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
        for j in range(p):
            Mu[i, j] = mu[j]
    return Mu


@njit_on_first_call(
    types.Tuple((types.float64[:, ::1], types.float64[:, ::1], types.float64[::1],
                 types.int64[::1]))(
        types.float64[:, ::1], types.int64, _ORACLE, types.float64[::1], types.int64,
        types.float64), cache=True, nogil=True)
def sparsemap_support_batch(Eta, n_unary, oracle, params, max_iter, tol):
    """Row-wise :func:`sparsemap_active_set` keeping the supports.

    Returns ``(Mu, vertices, weights, sup_off)``: the marginals of every
    row, and the support vertices and weights of row ``i`` at
    ``vertices[sup_off[i]:sup_off[i + 1]]`` (one Numba call for a batch
    instead of one per row).
    """
    n, p = Eta.shape
    Mu = np.empty((n, p))
    sup_off = np.zeros(n + 1, dtype=np.int64)
    V = np.empty((max(4, 2 * n), p))
    W = np.empty(V.shape[0])
    for i in range(n):
        mu, verts, wts, _ = sparsemap_active_set(Eta[i], n_unary, oracle, params, max_iter,
                                                 tol)
        # element loops, not slice copies: those compile Numba's
        # string-formatting shape errors (seconds of a cold first fit)
        for j in range(p):
            Mu[i, j] = mu[j]
        s = sup_off[i]
        k = wts.shape[0]
        if s + k > V.shape[0]:
            cap = max(2 * V.shape[0], s + k)
            V2 = np.empty((cap, p))
            W2 = np.empty(cap)
            for r in range(s):
                W2[r] = W[r]
                for j in range(p):
                    V2[r, j] = V[r, j]
            V, W = V2, W2
        for r in range(k):
            W[s + r] = wts[r]
            for j in range(p):
                V[s + r, j] = verts[r, j]
        sup_off[i + 1] = s + k
    m = sup_off[n]
    return Mu, V[:m].copy(), W[:m].copy(), sup_off
