"""Small numerical helpers shared by the kernels."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def logaddexp(a, b):
    """Overflow-free ``log(exp(a) + exp(b))`` (either may be ``-inf``)."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))
