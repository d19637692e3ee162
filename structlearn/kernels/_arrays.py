"""Array helpers that several kernel modules share."""

import numpy as np

from ._lazy import njit_inner


@njit_inner()
def grow_rows(A, n):
    """``A`` (1-D or 2-D, C-contiguous) with its first dimension enlarged to
    ``n`` (new rows zero): the growth of the kernels' work arrays (the
    active set's supports, the parser's arc-feature buffers).  Copied by a
    loop over the flat arrays: a slice assignment ``B[:k] = A`` compiles
    Numba's shape-mismatch error message (string formatting, about 1 s of a
    first fit)."""
    B = np.zeros((n,) + A.shape[1:], dtype=A.dtype)
    Af = A.reshape(A.size)
    Bf = B.reshape(B.size)
    for i in range(A.size):
        Bf[i] = Af[i]
    return B
