"""The named steps of the active-set SparseMAP solver.

:func:`structlearn.kernels.active_set.sparsemap_active_set_warm` is the
sequence

1. the start: :func:`_warm_start` from the given support, or
   :func:`_cold_start` from the MAP vertex if nothing of it is kept;
2. per iteration, one of

   * :func:`_null_space_step`, while a candidate vertex is affinely
     dependent on the active set (pending; degenerate supports);
   * :func:`_solve_restricted_qp` on the active set and, if its solution
     leaves the simplex, :func:`_step_towards_restricted` (line search and
     drop);
   * :func:`_most_violating_vertex` (the MAP oracle on the gradient) and the
     Frank-Wolfe gap test -- the certificate and only convergence test --
     then, for a new vertex, :func:`_push_vertex` and :func:`_enter_factor`
     (:func:`_grow` the arrays first if full) or, if the vertex is already
     active, :func:`_pairwise_step`;

3. :func:`_collect_support`.

All steps are plain jitted functions (``kernels._lazy.njit_inner``: no
Python entry point, only the drivers call them) on the solver's arrays
(see the notes on the state below) and the linear algebra of
:mod:`structlearn.kernels._active_set_factor`; the vertex-storage helpers
(sparse nonzero lists, duplicate test, Gram rows) come first.
"""

import numpy as np

from ._active_set_factor import (
    _append_threshold,
    _chol_accept,
    _chol_append,
    _drop,
    _kkt_solve,
    _null_direction,
)
from ._arrays import grow_rows
from ._lazy import njit_inner

# ------------------------------------------------------------------------
# Vertex storage
# ------------------------------------------------------------------------


@njit_inner()
def _store_vertex(V, nzi, nnz, nnzu, nrm2, sl, out, n_unary, onz, k_o, nrm_o):
    """Store ``out`` in slot ``sl`` with the list of its nonzeros
    ``onz[:k_o]`` (increasing, so the unary ones lead) and its squared norm
    ``nrm_o`` (see :func:`_nonzeros`)."""
    for j in range(out.shape[0]):
        V[sl, j] = out[j]
    ku = 0
    for k in range(k_o):
        q = onz[k]
        nzi[sl, k] = q
        if q < n_unary:
            ku += 1
    nnz[sl] = k_o
    nnzu[sl] = ku
    nrm2[sl] = nrm_o


@njit_inner()
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


@njit_inner()
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


@njit_inner()
def _sparse_dot(a, out, onz, k_o):
    """``a @ out`` over the nonzeros ``onz[:k_o]`` of ``out``."""
    acc = 0.0
    for k in range(k_o):
        q = onz[k]
        acc += a[q] * out[q]
    return acc


@njit_inner()
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


@njit_inner()
def _grow_square(A, n):
    B = np.zeros((n, n), dtype=A.dtype)
    k = A.shape[0]
    for i in range(k):
        for j in range(k):
            B[i, j] = A[i, j]
    return B


# ------------------------------------------------------------------------
# The state of one solve.
#
# Vertex storage is by *slot* (a stored vertex never moves); everything else
# by *position* in the active set (position ``i`` <-> row ``i`` of the
# factor, see :mod:`structlearn.kernels._active_set_factor`).  The arrays
# are locals of the solver (allocated there), passed explicitly to the
# steps, which mutate them in place, always in this order (bundling them in
# a named tuple made small solves twice as slow: reference counting of every
# member at every access):
#
# * vertex store, by slot: ``V`` (vertex vectors), ``nzi``, ``nnz``,
#   ``nnzu`` (their nonzero indices, count and unary count), ``nrm2``
#   (squared norms), ``free`` (stack of free slots, ``nfree`` of them);
# * active positions: ``slot``, ``G`` (Gram matrix of the unary parts),
#   ``Lf``, ``w1``, ``ws`` (factor of ``G + c 1 1^T`` and its solves),
#   ``scores`` (``<eta, a_i>``), ``y`` (weights);
# * work arrays by position: ``y_hat`` (restricted solution), ``d``
#   (null-space direction), ``lrow`` (new factor row), ``t1``, ``t2``,
#   ``lin`` (linearised scores), ``keep`` (mask of a drop);
# * fixed size: ``out`` and ``onz`` (the oracle's vertex and its nonzeros),
#   ``u`` (unary marginals ``M_I y``), ``adj`` (gradient ``eta - [u; 0]``).
#
# The by-slot and by-position arrays start small and are enlarged by
# :func:`_grow` up to ``n_unary + 2`` positions (allocating that up front
# costs more than a whole solve on well-scaled problems).
# ------------------------------------------------------------------------


@njit_inner()
def _grow(ca, ca2, nfree, V, nzi, nnz, nnzu, nrm2, free, slot, G, Lf, w1, ws, scores, y,
          y_hat, d, lrow, t1, t2, lin, keep):
    """The by-slot and by-position arrays enlarged from ``ca`` to ``ca2``
    positions (contents kept), with the new slots ``ca2 - 1 .. ca`` pushed
    on the free stack.  Returns them (in the order of the notes above) and
    the new ``nfree``."""
    free = grow_rows(free, ca2)
    for i in range(ca2 - 1, ca - 1, -1):
        free[nfree] = i
        nfree += 1
    return (grow_rows(V, ca2), grow_rows(nzi, ca2), grow_rows(nnz, ca2),
            grow_rows(nnzu, ca2), grow_rows(nrm2, ca2), free,
            grow_rows(slot, ca2), _grow_square(G, ca2), _grow_square(Lf, ca2),
            grow_rows(w1, ca2), grow_rows(ws, ca2), grow_rows(scores, ca2),
            grow_rows(y, ca2),
            grow_rows(y_hat, ca2), grow_rows(d, ca2), grow_rows(lrow, ca2),
            grow_rows(t1, ca2), grow_rows(t2, ca2), grow_rows(lin, ca2),
            grow_rows(keep, ca2), nfree)


# ------------------------------------------------------------------------
# Steps shared by the start and the iterations
# ------------------------------------------------------------------------


@njit_inner()
def _push_vertex(eta, n_unary, m, nfree, vertex, k_o, nrm_o, V, nzi, nnz, nnzu, nrm2, free,
                 slot, G, scores, onz):
    """Store ``vertex`` (nonzeros ``onz[:k_o]``, squared norm ``nrm_o``) in
    a free slot as active position ``m``: its row and column of the Gram
    matrix and its score ``<eta, vertex>`` (the factor is not touched).
    Returns the new ``nfree``."""
    nfree -= 1
    sl = free[nfree]
    slot[m] = sl
    _store_vertex(V, nzi, nnz, nnzu, nrm2, sl, vertex, n_unary, onz, k_o, nrm_o)
    _gram_append(G, V, slot, m, nzi, nnzu)
    scores[m] = _sparse_dot(eta, vertex, onz, k_o)
    return nfree


@njit_inner()
def _factor_first(G, Lf, w1, ws, scores):
    """Start the factor with position 0 alone: fix ``c`` (the squared norm
    of its unary part, 1 if zero, see the notes of
    :mod:`structlearn.kernels._active_set_factor`) and return it."""
    g = G[0, 0]
    c = g if g > 0.0 else 1.0
    Lf[0, 0] = np.sqrt(g + c)
    w1[0] = 1.0 / Lf[0, 0]
    ws[0] = scores[0] / Lf[0, 0]
    return c


@njit_inner()
def _enter_factor(m, c, G, Lf, w1, ws, scores, d, lrow, t1):
    """Factorise position ``m`` (stored by :func:`_push_vertex`) if its
    augmented unary part is affinely independent of the active ones;
    otherwise compute the null-space direction ``d`` of the dependency and
    leave the position *pending* (for :func:`_null_space_step`).  Returns
    ``(m, pending)``."""
    piv = _chol_append(Lf, G, c, m, lrow)
    if piv > _append_threshold(G, c, m):
        _chol_accept(Lf, scores, w1, ws, m, lrow, piv)
        return m + 1, False
    _null_direction(Lf, m, lrow, d, t1)
    return m, True


# ------------------------------------------------------------------------
# 1. The start
# ------------------------------------------------------------------------


@njit_inner()
def _warm_start(eta, n_unary, V0, w0, V, nzi, nnz, nnzu, nrm2, free, slot, G, Lf, w1, ws,
                scores, y, lrow, onz):
    """Active set from the support ``V0`` with weights ``w0``, factorised
    vertex by vertex: non-positive weights are skipped, a duplicate adds its
    weight to the active copy, a vertex affinely dependent on the kept ones
    is left out (with its weight), and at most ``ca - 1`` vertices are kept
    (``ca`` the current capacity).  The kept weights are renormalised to
    sum to one.  Returns ``(m, c, nfree)``; ``m = 0`` when nothing was
    kept."""
    ca = slot.shape[0]
    nfree = ca
    m = np.int64(0)   # (a literal 0 would compile its callees once more for it)
    c = 1.0
    for j in range(V0.shape[0]):
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
        nfree = _push_vertex(eta, n_unary, m, nfree, vj, k_o, nrm_o, V, nzi, nnz, nnzu, nrm2,
                             free, slot, G, scores, onz)
        if m == 0:
            c = _factor_first(G, Lf, w1, ws, scores)
            y[0] = wj
            m = 1
            continue
        piv = _chol_append(Lf, G, c, m, lrow)
        if piv > _append_threshold(G, c, m):
            _chol_accept(Lf, scores, w1, ws, m, lrow, piv)
            y[m] = wj
            m += 1
        else:  # affinely dependent on the kept ones: leave it out
            free[nfree] = slot[m]
            nfree += 1
    if m > 0:
        total = 0.0
        for i in range(m):
            total += y[i]
        for i in range(m):
            y[i] /= total
    return m, c, nfree


@njit_inner()
def _cold_start(eta, n_unary, oracle, params, nfree, V, nzi, nnz, nnzu, nrm2, free, slot, G,
                Lf, w1, ws, scores, y, out, onz):
    """Active set ``{MAP vertex}`` with weight one (the oracle on ``eta``,
    its vertex left in ``out``).  Returns ``(c, nfree)``."""
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
    scores[0] = np.dot(eta, out)
    y[0] = 1.0
    return _factor_first(G, Lf, w1, ws, scores), nfree


# ------------------------------------------------------------------------
# 2. The iterations
# ------------------------------------------------------------------------


@njit_inner()
def _null_space_step(m, nfree, c, scale, free, slot, G, Lf, w1, ws, scores, y, d, lrow, t1,
                     keep):
    """Simplex step for the pending candidate at position ``m``.

    Its unary part depends affinely on the active ones, so the objective is
    linear along the null-space direction ``d`` (``sum(d) = 0``, ``U d =
    0``): go uphill (on a flat slope, keep the newest vertex) until a weight
    hits zero, and drop that vertex.  If the candidate survives it enters
    the factor, or stays pending if it is still dependent in floating
    point.  Returns ``(m, nfree, pending, ok)``; ``ok`` is False (and the
    candidate still pending) if no weight blocks, which cannot happen.
    """
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
        return m, nfree, True, False
    for i in range(n):
        y[i] = max(0.0, y[i] + gamma * d[i])
        keep[i] = not (i == blocking or (d[i] < 0.0 and y[i] <= 1e-14))
    n, m, nfree = _drop(keep, n, m, Lf, w1, ws, G, scores, y, slot, free, nfree)
    pending = False
    if n > m:
        # The candidate survived (now at position m): factorise it.
        m, pending = _enter_factor(m, c, G, Lf, w1, ws, scores, d, lrow, t1)
    return m, nfree, pending, True


@njit_inner()
def _solve_restricted_qp(m, c, G, Lf, w1, ws, scores, y, y_hat, t1, t2):
    """Maximise the objective on the affine hull of the active set
    (:func:`~structlearn.kernels._active_set_factor._kkt_solve`, into
    ``y_hat``).  If the solution lies in the simplex it becomes the
    iterate ``y`` and True is returned; otherwise ``y`` is unchanged (see
    :func:`_step_towards_restricted`)."""
    _kkt_solve(Lf, G, c, scores, w1, ws, m, y_hat, t1, t2, -1e-8)
    for i in range(m):
        if y_hat[i] < 0.0:
            return False
    for i in range(m):
        y[i] = y_hat[i]
    return True


@njit_inner()
def _step_towards_restricted(m, nfree, free, slot, G, Lf, w1, ws, scores, y, y_hat, keep):
    """Line search (Eq. 10): move the iterate ``y`` towards the infeasible
    restricted solution ``y_hat`` until a weight hits zero, and drop the
    vertices whose weight went down to zero.  Returns ``(m, nfree)``."""
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
    return m, nfree


@njit_inner()
def _most_violating_vertex(eta, n_unary, oracle, params, m, V, nzi, nnzu, slot, scores, y,
                           out, onz, u, adj):
    """The MAP oracle on the gradient at the iterate: ``u = M_I y``, then
    the vertex ``out`` maximising ``<eta - [u; 0], a>`` (``adj``).  Returns
    ``(gap, k_o, nrm_o)``: the Frank-Wolfe gap ``<grad, a_new - mu>`` (the
    optimality certificate, with ``<grad, mu> = s^T y - ||u||^2``) and the
    nonzero count (indices in ``onz``) and squared norm of the vertex."""
    u[:] = 0.0
    for i in range(m):
        si = slot[i]
        yi = y[i]
        for k in range(nnzu[si]):
            q = nzi[si, k]
            u[q] += yi * V[si, q]
    # (adj = eta off the unary parts since its copy by the solver)
    for q in range(n_unary):
        adj[q] = eta[q] - u[q]
    oracle(adj, params, out)
    lin_mu = -np.dot(u, u)
    for i in range(m):
        lin_mu += y[i] * scores[i]
    k_o, nrm_o = _nonzeros(out, onz)
    gap = _sparse_dot(adj, out, onz, k_o) - lin_mu
    return gap, k_o, nrm_o


@njit_inner()
def _pairwise_step(m, nfree, dup, scale, V, nzi, nnzu, free, slot, G, Lf, w1, ws, scores, y,
                   lin, keep, u):
    """Polishing step when the oracle's vertex is the active position
    ``dup`` although the gap exceeds the tolerance (the restricted solution
    is off by rounding): pairwise Frank-Wolfe step, exact line search, from
    the active vertex of lowest linearised score to it; the away vertex is
    dropped if its weight vanishes.  Returns ``(m, nfree, ok)``; ``ok`` is
    False when no step can improve the objective in floating point."""
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
        return m, nfree, False
    gpair = lin[dup] - lin[away]
    if gpair <= 0.0:
        return m, nfree, False
    du2 = G[dup, dup] - 2.0 * G[dup, away] + G[away, away]
    gamma = y[away]
    if du2 > 0.0:
        gamma = min(gamma, gpair / du2)
    gain = gamma * gpair - 0.5 * gamma * gamma * max(du2, 0.0)
    if gamma <= 0.0 or gain <= 1e-15 * scale:
        return m, nfree, False  # no progress possible in floating point
    y[dup] += gamma
    y[away] -= gamma
    if y[away] <= 1e-14:
        for i in range(m):
            keep[i] = i != away
        m, _, nfree = _drop(keep, m, m, Lf, w1, ws, G, scores, y, slot, free, nfree)
    return m, nfree, True


# ------------------------------------------------------------------------
# 3. The result
# ------------------------------------------------------------------------


@njit_inner()
def _collect_support(p, n, V, slot, y):
    """The support among the first ``n`` positions: vertices of positive
    weight (those kept at weight zero, or a dependent candidate left over
    when ``max_iter`` ran out, are not part of it), their renormalised
    weights and the marginals ``mu``.  Returns ``(mu, vertices,
    weights)``."""
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
            for j in range(p):
                verts[k, j] = V[slot[i], j]
            mu += weights[k] * verts[k]
            k += 1
    return mu, verts, weights
