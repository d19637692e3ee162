"""Numba types of the SparseMAP solvers' arguments and results.

Shared by the solvers (:mod:`structlearn.kernels.active_set`,
:mod:`structlearn.kernels.conditional_gradient`,
:mod:`structlearn.kernels.sparsemap_ragged`) and the oracles that are passed
to them; re-exported by :mod:`structlearn.kernels.sparsemap`.
"""

import numpy as np
from numba import types

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
