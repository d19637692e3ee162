"""MurmurHash3 (x86, 32 bit) of many byte strings in one call.

The hashed :class:`~structlearn.feature_extraction.TokenVectorizer` maps
every feature name to a bucket by ``murmurhash3_32(name, positive=True)``
(scikit-learn's hash, seed 0, of the name's UTF-8 bytes).  Hashing the
names one Python call at a time cost more than the rest of a hashed
transform; :func:`murmurhash3_32_many` hashes a buffer of concatenated
names at C speed and gives the same values (a test compares them with
scikit-learn's on random ASCII and non-ASCII names).
"""

import numpy as np
from numba import njit

_MASK = np.uint64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _MASK


@njit(cache=True, nogil=True)
def _murmur(buf, a, b, seed):
    c1 = np.uint64(0xCC9E2D51)
    c2 = np.uint64(0x1B873593)
    h = np.uint64(seed) & _MASK
    n = b - a
    nblocks = n // 4
    for i in range(nblocks):
        j = a + 4 * i
        k = (np.uint64(buf[j]) | (np.uint64(buf[j + 1]) << np.uint64(8))
             | (np.uint64(buf[j + 2]) << np.uint64(16)) | (np.uint64(buf[j + 3]) << np.uint64(24)))
        k = (k * c1) & _MASK
        k = _rotl32(k, 15)
        k = (k * c2) & _MASK
        h ^= k
        h = _rotl32(h, 13)
        h = (h * np.uint64(5) + np.uint64(0xE6546B64)) & _MASK
    t = a + 4 * nblocks
    rem = n & 3
    k = np.uint64(0)
    if rem == 3:
        k ^= np.uint64(buf[t + 2]) << np.uint64(16)
    if rem >= 2:
        k ^= np.uint64(buf[t + 1]) << np.uint64(8)
    if rem >= 1:
        k ^= np.uint64(buf[t])
        k = (k * c1) & _MASK
        k = _rotl32(k, 15)
        k = (k * c2) & _MASK
        h ^= k
    h ^= np.uint64(n)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & _MASK
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & _MASK
    h ^= h >> np.uint64(16)
    return h


@njit(cache=True, nogil=True)
def murmurhash3_32_many(buf, off, seed, offset, modulus):
    """``offset + murmurhash3_32(buf[off[i]:off[i + 1]], seed) % modulus``
    for every ``i`` (the hash as an unsigned 32-bit integer, as
    scikit-learn's ``positive=True``), as int64."""
    n = off.shape[0] - 1
    out = np.empty(n, dtype=np.int64)
    m = np.uint64(modulus)
    for i in range(n):
        out[i] = offset + np.int64(_murmur(buf, off[i], off[i + 1], seed) % m)
    return out
