"""Kernels of the segment feature map (``structlearn.feature_maps.SegmentFeatureMap``).

The parameters are ``z = [w_in, w_first, w_last (S support weights each),
length (M K), transitions (K K), start (K), end (K), bias (K, with an
intercept)]``; the score layout is that of :mod:`structlearn.kernels.segments`.
A segment ``(s, e, k)`` reads the support weights of label ``k`` of every
token inside it (``w_in``), of its first token (``w_first``) and of its last
(``w_last``), its length weight and the label bias.  Token rows are the CSR
arrays of :mod:`structlearn.kernels.linear` (``indptr``; per nonzero ``j``
its support entries ``nz_start[j] .. + nz_len[j]`` with labels
``sup_label``; values ``data``, empty for binary features).
"""

import numpy as np
from numba import njit

from ._lazy import njit_inner


@njit(cache=True, nogil=True)
def segment_assemble_scores(U_in, U_first, U_last, W_len, trans, start, end, bias, tok_off,
                            part_off, K, M, Mk):
    """Flat segmentation scores from per-token label scores: the segment
    ``(s, e, k)`` scores ``sum_{t=s..e} U_in[t, k] + U_first[s, k] +
    U_last[e, k] + W_len[e - s, k] + bias[k]``; the transition, start and
    end scores are copied into every block.  Entries that stand for no
    segment (longer than ``Mk[k]`` or starting before the first token) are 0."""
    n = tok_off.shape[0] - 1
    theta = np.zeros(part_off[n])
    for i in range(n):
        o = tok_off[i]
        L = tok_off[i + 1] - o
        base = part_off[i]
        for e in range(L):
            for k in range(K):
                acc = U_last[o + e, k] + bias[k]
                for ln in range(min(Mk[k], e + 1)):
                    s = e - ln
                    acc += U_in[o + s, k]
                    theta[base + (e * M + ln) * K + k] = acc + U_first[o + s, k] + W_len[ln, k]
        tr = base + L * M * K
        for a in range(K):
            for b in range(K):
                theta[tr + a * K + b] = trans[a, b]
        for k in range(K):
            theta[tr + K * K + k] = start[k]
            theta[tr + K * K + K + k] = end[k]
    return theta


@njit_inner()
def _reduce_one(G, base, L, K, M, G_in, G_first, G_last, g_len, g_b, o):
    """Add the segment parts of one block of ``G`` to the per-token label
    gradients (rows ``o..o+L-1``), the length and the bias gradients."""
    diff = np.zeros((L + 1, K))   # segment sums as a difference array
    for e in range(L):
        for ln in range(min(M, e + 1)):
            s = e - ln
            for k in range(K):
                g = G[base + (e * M + ln) * K + k]
                if g != 0.0:
                    diff[s, k] += g
                    diff[e + 1, k] -= g
                    G_first[o + s, k] += g
                    G_last[o + e, k] += g
                    g_len[ln, k] += g
                    g_b[k] += g
    for k in range(K):
        run = 0.0
        for t in range(L):
            run += diff[t, k]
            G_in[o + t, k] += run


@njit(cache=True, nogil=True)
def segment_reduce_grad(G, tok_off, part_off, K, M):
    """The transpose of :func:`segment_assemble_scores`: per-token gradients
    of ``U_in``, ``U_first``, ``U_last`` and the gradients of ``W_len``,
    the transitions, start, end and bias."""
    n = tok_off.shape[0] - 1
    T = tok_off[n]
    G_in = np.zeros((T, K))
    G_first = np.zeros((T, K))
    G_last = np.zeros((T, K))
    g_len = np.zeros((M, K))
    g_tr = np.zeros((K, K))
    g_st = np.zeros(K)
    g_en = np.zeros(K)
    g_b = np.zeros(K)
    for i in range(n):
        o = tok_off[i]
        L = tok_off[i + 1] - o
        base = part_off[i]
        _reduce_one(G, base, L, K, M, G_in, G_first, G_last, g_len, g_b, o)
        tr = base + L * M * K
        for a in range(K):
            for b in range(K):
                g_tr[a, b] += G[tr + a * K + b]
        for k in range(K):
            g_st[k] += G[tr + K * K + k]
            g_en[k] += G[tr + K * K + K + k]
    return G_in, G_first, G_last, g_len, g_tr, g_st, g_en, g_b


@njit_inner()
def _n_entries(indptr, nz_len, t0, t1):
    n = 0
    for j in range(indptr[t0], indptr[t1]):
        n += nz_len[j]
    return n


@njit_inner()
def _token_entries(indptr, nz_start, nz_len, data, sup_label, t, Gt, shift, cols, vals, o):
    """Entries ``x_tj * Gt[label]`` of token row ``t``'s support weights
    (offset by ``shift``; zero entries skipped); the new write position."""
    binary = len(data) == 0
    for j in range(indptr[t], indptr[t + 1]):
        x = 1.0 if binary else data[j]
        s0 = nz_start[j]
        for s in range(s0, s0 + nz_len[j]):
            v = Gt[sup_label[s]]
            if v != 0.0:
                cols[o] = shift + s
                vals[o] = x * v
                o += 1
    return o


@njit(cache=True, nogil=True)
def segment_block_entries(indptr, nz_start, nz_len, data, sup_label, D, tok_lo, part_off, K,
                          M, n_support, fit_intercept):
    """Per sequence ``i`` of a batch, the entries of ``A_i^T D_i`` (the
    gradient of ``<D_i, theta_i>`` in ``z``; zero entries skipped, support
    weights may repeat).  Sequence ``i`` is the token rows ``tok_lo[i]..``,
    its length read off its block size.  Returns ``(cols, vals, ptr)``."""
    n = len(tok_lo)
    S = n_support
    shared = K * K + 2 * K
    tail = 3 * S + M * K
    bound = 0
    for i in range(n):
        L = (part_off[i + 1] - part_off[i] - shared) // (M * K)
        bound += 3 * _n_entries(indptr, nz_len, tok_lo[i], tok_lo[i] + L) + M * K + shared + K
    cols = np.empty(bound, dtype=np.int64)
    vals = np.empty(bound)
    ptr = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for i in range(n):
        base = part_off[i]
        L = (part_off[i + 1] - base - shared) // (M * K)
        G3 = np.zeros((3, L, K))
        g_len = np.zeros((M, K))
        g_b = np.zeros(K)
        _reduce_one(D, base, L, K, M, G3[0], G3[1], G3[2], g_len, g_b, 0)
        for t in range(L):
            for r in range(3):
                o = _token_entries(indptr, nz_start, nz_len, data, sup_label, tok_lo[i] + t,
                                   G3[r, t], r * S, cols, vals, o)
        for q in range(M * K):
            v = g_len[q // K, q % K]
            if v != 0.0:
                cols[o] = 3 * S + q
                vals[o] = v
                o += 1
        q0 = base + L * M * K
        for r in range(shared):
            v = D[q0 + r]
            if v != 0.0:
                cols[o] = tail + r
                vals[o] = v
                o += 1
        if fit_intercept:
            for k in range(K):
                if g_b[k] != 0.0:
                    cols[o] = tail + shared + k
                    vals[o] = g_b[k]
                    o += 1
        ptr[i + 1] = o
    return cols[:o], vals[:o], ptr


@njit(cache=True, nogil=True)
def segment_part_columns(indptr, nz_start, nz_len, data, sup_label, tok_lo, n_tok, parts, K,
                         M, n_support, fit_intercept):
    """Per ``k``, the column of ``A_i`` of part ``parts[k]`` of the sequence
    whose tokens are the rows ``tok_lo[k] .. + n_tok[k] - 1`` -- what
    :func:`segment_block_entries` gives for a unit score vector on that
    part.  Returns ``(cols, vals, ptr)``."""
    S = n_support
    shared = K * K + 2 * K
    tail = 3 * S + M * K
    bound = 0
    for q in range(len(parts)):
        p = parts[q]
        if p < n_tok[q] * M * K:
            e = p // (M * K)
            s = max(e - (p // K) % M, 0)
            bound += _n_entries(indptr, nz_len, tok_lo[q] + s, tok_lo[q] + e + 1) \
                + 2 * _n_entries(indptr, nz_len, tok_lo[q] + s, tok_lo[q] + s + 1) \
                + 2 * _n_entries(indptr, nz_len, tok_lo[q] + e, tok_lo[q] + e + 1)
        bound += 2
    cols = np.empty(bound, dtype=np.int64)
    vals = np.empty(bound)
    ptr = np.zeros(len(parts) + 1, dtype=np.int64)
    unit = np.zeros(K)
    o = 0
    for q in range(len(parts)):
        p = parts[q]
        if p < n_tok[q] * M * K:
            e = p // (M * K)
            ln = (p // K) % M
            lab = p % K
            s = e - ln
            if s < 0:          # stands for no segment: an empty column
                ptr[q + 1] = o
                continue
            unit[lab] = 1.0
            for t in range(s, e + 1):
                o = _token_entries(indptr, nz_start, nz_len, data, sup_label, tok_lo[q] + t,
                                   unit, 0, cols, vals, o)
            o = _token_entries(indptr, nz_start, nz_len, data, sup_label, tok_lo[q] + s, unit,
                               S, cols, vals, o)
            o = _token_entries(indptr, nz_start, nz_len, data, sup_label, tok_lo[q] + e, unit,
                               2 * S, cols, vals, o)
            unit[lab] = 0.0
            cols[o] = 3 * S + ln * K + lab
            vals[o] = 1.0
            o += 1
            if fit_intercept:
                cols[o] = tail + shared + lab
                vals[o] = 1.0
                o += 1
        else:
            cols[o] = tail + p - n_tok[q] * M * K
            vals[o] = 1.0
            o += 1
        ptr[q + 1] = o
    return cols[:o], vals[:o], ptr
