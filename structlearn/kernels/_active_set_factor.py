"""Incrementally factorised KKT system of the SparseMAP active set.

Linear algebra of :func:`structlearn.kernels.active_set.sparsemap_active_set_warm`
(see the notes below): a Cholesky factor that vertices enter by appending a
row and leave by Givens rotations, the restricted solve on it, the
null-space direction of an affinely dependent candidate, and the removal of
positions from the factor and the position-indexed arrays.
"""

import numpy as np

from ._lazy import njit_inner


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


@njit_inner()
def _forward(Lf, m, b, x):
    """``x[:m] = Lf[:m, :m]^{-1} b[:m]`` (lower triangular)."""
    for i in range(m):
        acc = b[i]
        for k in range(i):
            acc -= Lf[i, k] * x[k]
        x[i] = acc / Lf[i, i]


@njit_inner()
def _backward(Lf, m, v, x):
    """``x[:m] = Lf[:m, :m]^{-T} v[:m]`` (row-oriented; ``v`` untouched)."""
    for i in range(m):
        x[i] = v[i]
    for i in range(m - 1, -1, -1):
        xi = x[i] / Lf[i, i]
        x[i] = xi
        for k in range(i):
            x[k] -= Lf[i, k] * xi


@njit_inner()
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


@njit_inner()
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


@njit_inner()
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


@njit_inner()
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


@njit_inner()
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


@njit_inner()
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


@njit_inner()
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
