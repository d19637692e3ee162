"""Numba types of the SparseMAP solvers' arguments and results.

Shared by the solvers (:mod:`structlearn.kernels.active_set`,
:mod:`structlearn.kernels.conditional_gradient`,
:mod:`structlearn.kernels.sparsemap_ragged`) and the oracles that are passed
to them; re-exported by :mod:`structlearn.kernels.sparsemap`.
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

#: dtype of the compact codes of cached support vertices: one small int per
#: row of a vertex's unary block (a tag, a head), so rows of at most 32767
#: entries.
SUPPORT_CODE_DTYPE = np.int16
#: Signature of a support decoder's inverse: ``encode(codes, params, out)``
#: writes the vertex vector of the structure whose unary rows take the
#: arguments ``codes`` into ``out`` (which it zeroes first).
ENCODE_SIGNATURE = types.void(types.int16[::1], types.float64[::1], types.float64[::1])


#: The score added to a forbidden part (a transition outside the allowed
#: ones, a tag outside a token's allowed set; see
#: :func:`structlearn.kernels.chain.chain_offsets`): far below any score a
#: model reaches, yet finite, so that ``0 * FORBIDDEN`` stays 0 in the
#: losses' arithmetic and every recursion stays NaN-free.  Scores at or
#: below ``FORBIDDEN_CUT`` are left out of the score scales of the solvers'
#: tolerances and of the ranges of the scaled forward-backward.
FORBIDDEN = -1e9
FORBIDDEN_CUT = -1e8


@njit(cache=True, nogil=True)
def score_scale(eta):
    """``1 + max |eta_j|`` over the parts that are not forbidden: the scale
    of the active set's and conditional gradient's tolerances."""
    m = 0.0
    for j in range(eta.shape[0]):
        v = eta[j]
        if v > FORBIDDEN_CUT and abs(v) > m:
            m = abs(v)
    return 1.0 + m
