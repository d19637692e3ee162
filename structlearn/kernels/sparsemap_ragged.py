"""SparseMAP active set on flat, ragged batches of structures.

:func:`sparsemap_active_set_ragged` (cold) and
:func:`sparsemap_active_set_warm_ragged` (warm-started from supports stored
as compact codes) run :mod:`structlearn.kernels.active_set` on every
structure of a batch; :func:`block_params` lays out per-structure oracle
parameters.
"""

import numpy as np
from numba import njit, types

from ._arrays import grow_rows
from ._lazy import njit_on_first_call
from ._sparsemap_types import _ORACLE, ENCODE_SIGNATURE
from .active_set import sparsemap_active_set_warm


@njit_on_first_call(
    types.Tuple((types.float64[::1], types.int64))(
        types.float64[::1], types.int64[::1], types.int64[::1], _ORACLE,
        types.float64[::1], types.int64[::1], types.int64, types.float64),
    cache=True, nogil=True)
def sparsemap_active_set_ragged(theta, part_off, n_unary, oracle, params_flat, params_off,
                                max_iter, tol):
    """:func:`sparsemap_active_set` on a flat, ragged batch of structures.

    Structure ``i`` has scores ``theta[part_off[i]:part_off[i + 1]]``, its
    first ``n_unary[i]`` parts penalised, and oracle parameters
    ``params_flat[params_off[i]:params_off[i + 1]]``.  Returns the marginals
    in the same flat layout as ``theta`` and the number of structures whose
    solve stopped at ``max_iter`` (not converged).
    """
    n = part_off.shape[0] - 1
    mu = np.zeros(theta.shape[0])
    n_capped = 0
    w0 = np.zeros(0)   # cold starts: no support (the warm solver directly, not
    for i in range(n):  # through sparsemap_active_set, one kernel less to compile)
        a = part_off[i]
        b = part_off[i + 1]
        eta = theta[a:b].copy()
        params = params_flat[params_off[i]:params_off[i + 1]].copy()
        m, _, _, it = sparsemap_active_set_warm(eta, n_unary[i], oracle, params, max_iter,
                                                tol, np.zeros((0, b - a)), w0)
        if it >= max_iter:
            n_capped += 1
        for j in range(b - a):
            mu[a + j] = m[j]
    return mu, n_capped


@njit_on_first_call(
    types.Tuple((types.float64[::1], types.int16[::1], types.float64[::1],
                 types.int64[::1], types.int64))(
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
    MAP vertex.  Returns ``(mu, codes, weights, sup_off, n_capped)``: the
    marginals (flat, as ``theta``), the final supports in the same layout
    and the number of structures whose solve stopped at ``max_iter`` (not
    converged).
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
    n_capped = 0
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
        mi, verts, wts, it = sparsemap_active_set_warm(theta[a:a + p].copy(), n_unary[i],
                                                       oracle, params, max_iter, tol, V0,
                                                       w0[s0:s0 + m0].copy())
        if it >= max_iter:
            n_capped += 1
        for j in range(p):
            mu[a + j] = mi[j]
        k = wts.shape[0]
        s = sup_off[i]
        if s + k > wout.shape[0]:
            wout = grow_rows(wout, 2 * (s + k))
        if opos + k * R > codes.shape[0]:
            codes = grow_rows(codes, 2 * (opos + k * R))
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
    return mu, codes[:opos].copy(), wout[:sup_off[n]].copy(), sup_off, n_capped


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
