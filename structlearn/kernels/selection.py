"""Numba kernels of the sparseptron (:mod:`structlearn.feature_selection`):
weights stored per atom (group of parameters) as ``theta_p = c_a xi_p``,
so that shrinking a whole group is one scalar product (Martins et al.
2011, Sec. 4)."""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def atom_step(xi, atom_of, scale, sq, members_ptr, members, cols, vals, eta):
    """Gradient step ``theta -= eta g`` on the scaled atoms; returns whether
    any entry of ``g`` was non-zero.  A deleted atom (``scale == 0``) touched
    by the gradient restarts from zero weights."""
    moved = False
    for e in range(len(cols)):
        g = vals[e]
        if g == 0.0:
            continue
        moved = True
        p = cols[e]
        a = atom_of[p]
        if a < 0:
            xi[p] -= eta * g
            continue
        c = scale[a]
        if c == 0.0:
            for q in range(members_ptr[a], members_ptr[a + 1]):
                xi[members[q]] = 0.0
            scale[a] = 1.0
            sq[a] = 0.0
            c = 1.0
        old = xi[p]
        new = old - eta * g / c
        xi[p] = new
        sq[a] += new * new - old * old
    return moved


@njit(cache=True, nogil=True)
def atom_gather(xi, atom_of, scale, params, out):
    """``out[p] = theta_p`` for the parameters ``params``."""
    for k in range(len(params)):
        p = params[k]
        a = atom_of[p]
        out[p] = xi[p] if a < 0 else scale[a] * xi[p]


@njit(cache=True, nogil=True)
def atom_fold(xi, scale, sq, members_ptr, members, tiny):
    """Fold scales below ``tiny`` (but not 0) into the weights."""
    for a in range(len(scale)):
        c = scale[a]
        if c != 0.0 and abs(c) < tiny:
            for q in range(members_ptr[a], members_ptr[a + 1]):
                xi[members[q]] *= c
            sq[a] *= c * c
            scale[a] = 1.0


# ------------------------------------------------ streamed (hashed) weights
# The streamed sparseptron keeps the weights of a feature (all its labels)
# as one row of ``W``, found by the feature's 64-bit hash in an
# open-addressing index (``keys``: the hash, -1 = empty; ``slot_row``: the
# row).  A row exists only once one of its weights got a non-zero update
# and its template (atom) is alive: rows of deleted atoms are dropped by
# :func:`stream_compact` after every proximal step.

@njit(cache=True, nogil=True)
def mix64(h):
    """A 64-bit finaliser (splitmix64) of the integer ``h``: spreads the
    bits of a hash over the index, and combines a feature hash with a
    label into a pair key."""
    z = np.uint64(h) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z)


@njit(cache=True, nogil=True)
def pair_key(fh, k):
    """Key of the (feature, label) pair of the feature hash ``fh`` and label
    ``k`` (the support set of the streamed sparseptron)."""
    return mix64(fh ^ mix64(k + 1))


@njit(cache=True, nogil=True)
def token_pair_keys(indptr, efh, labels, out):
    """``out[e] = pair_key(efh[e], labels[t])`` for the entries ``e`` of
    every token ``t`` (``labels[t] < 0``: unlabelled, key 0)."""
    for t in range(len(indptr) - 1):
        lab = labels[t]
        for e in range(indptr[t], indptr[t + 1]):
            out[e] = pair_key(efh[e], lab) if lab >= 0 else 0


@njit(cache=True, nogil=True)
def _find_row(keys, slot_row, fh):
    mask = len(keys) - 1
    s = mix64(fh) & mask
    while True:
        k = keys[s]
        if k == fh:
            return slot_row[s]
        if k == -1:
            return -1
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def stream_index(keys, slot_row, row_fh, n_rows):
    """Rebuild the index of the rows ``0..n_rows-1`` (``keys`` all -1 on
    entry is not required: it is cleared here)."""
    keys[:] = -1
    mask = len(keys) - 1
    for r in range(n_rows):
        fh = row_fh[r]
        s = mix64(fh) & mask
        while keys[s] != -1:
            s = (s + 1) & mask
        keys[s] = fh
        slot_row[s] = r


@njit(cache=True, nogil=True)
def stream_scores(indptr, efh, eval_, etmpl, keys, slot_row, W, scale, out):
    """``out[t, k] = sum_e val_e c_a(e) W[row(e), k]`` over the entries of
    every token (a feature without a row has zero weights); ``eval_``
    empty: every value is 1."""
    K = W.shape[1]
    has_val = len(eval_) > 0
    for t in range(len(indptr) - 1):
        for k in range(K):
            out[t, k] = 0.0
        for e in range(indptr[t], indptr[t + 1]):
            r = _find_row(keys, slot_row, efh[e])
            if r < 0:
                continue
            s = scale[etmpl[e]]
            if has_val:
                s *= eval_[e]
            for k in range(K):
                out[t, k] += s * W[r, k]


@njit(cache=True, nogil=True)
def stream_step(indptr, efh, eval_, etmpl, GU, eta, keys, slot_row, W, row_fh, row_tmpl,
                n_rows, scale, sq, sup_ptr, sup_keys, check_support):
    """Gradient step ``theta -= eta g`` on the hashed rows, ``g`` the
    entries ``val_e GU[t, k]`` of every token's features; a (feature,
    label) pair outside the support (``sup_keys[sup_ptr[a]:sup_ptr[a+1]]``,
    sorted, of the feature's atom ``a``; only with ``check_support``)
    gets none.  A missing row is created (the caller leaves room for one
    per entry); an atom with ``scale == 0`` (deleted: it has no rows)
    restarts from zero.  Returns ``(moved, n_rows)``."""
    K = W.shape[1]
    has_val = len(eval_) > 0
    mask = len(keys) - 1
    moved = False
    for t in range(len(indptr) - 1):
        for e in range(indptr[t], indptr[t + 1]):
            fh = efh[e]
            a = etmpl[e]
            v = eval_[e] if has_val else 1.0
            r = -2
            for k in range(K):
                g = GU[t, k] * v
                if g == 0.0:
                    continue
                if check_support:
                    key = pair_key(fh, k)
                    lo = sup_ptr[a]
                    hi = sup_ptr[a + 1]
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if sup_keys[mid] < key:
                            lo = mid + 1
                        else:
                            hi = mid
                    if lo == sup_ptr[a + 1] or sup_keys[lo] != key:
                        continue
                moved = True
                if r == -2:
                    # find the row, or make one
                    s = mix64(fh) & mask
                    while True:
                        kk = keys[s]
                        if kk == fh:
                            r = slot_row[s]
                            break
                        if kk == -1:
                            r = n_rows
                            n_rows += 1
                            keys[s] = fh
                            slot_row[s] = r
                            row_fh[r] = fh
                            row_tmpl[r] = a
                            for j in range(K):
                                W[r, j] = 0.0
                            break
                        s = (s + 1) & mask
                c = scale[a]
                if c == 0.0:
                    scale[a] = 1.0
                    sq[a] = 0.0
                    c = 1.0
                old = W[r, k]
                new = old - eta * g / c
                W[r, k] = new
                sq[a] += new * new - old * old
    return moved, n_rows


@njit(cache=True, nogil=True)
def stream_compact(W, row_fh, row_tmpl, n_rows, scale, sq, keys, slot_row, tiny):
    """After a proximal step: drop the rows of deleted atoms (``scale ==
    0``), fold scales below ``tiny`` into their rows, and rebuild the
    index.  Returns the number of rows kept."""
    for a in range(len(scale)):
        c = scale[a]
        if c != 0.0 and abs(c) < tiny:
            sq[a] *= c * c
    m = 0
    K = W.shape[1]
    for r in range(n_rows):
        a = row_tmpl[r]
        c = scale[a]
        if c == 0.0:
            continue
        f = c if abs(c) < tiny else 1.0
        for k in range(K):
            W[m, k] = W[r, k] * f
        row_fh[m] = row_fh[r]
        row_tmpl[m] = a
        m += 1
    for a in range(len(scale)):
        c = scale[a]
        if c != 0.0 and abs(c) < tiny:
            scale[a] = 1.0
    stream_index(keys, slot_row, row_fh, m)
    return m


@njit(cache=True, nogil=True)
def stream_sq_norms(W, row_tmpl, n_rows, n_atoms):
    """``||xi_a||^2`` of every atom, recomputed from its rows."""
    out = np.zeros(n_atoms)
    K = W.shape[1]
    for r in range(n_rows):
        s = 0.0
        for k in range(K):
            s += W[r, k] * W[r, k]
        out[row_tmpl[r]] += s
    return out
