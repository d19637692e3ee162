"""Numba kernels of the linear models over flat ragged data.

Plain serial kernels that release the GIL: callers parallelise over chunks
of sequences with threads (:func:`structlearn.solvers.thread_map`); Numba's
own threading layers are not safe to enter from several threads at once.

*Support-restricted weights.*  Token scores ``U[t, k] = sum_a x[t, a]
w[a, k]`` where only the (feature, label) pairs of a *support* carry a weight
(CRFsuite's default: the pairs seen in training).  The support is stored as a
CSR pattern over features: the pairs of feature ``a`` are ``s in
sup_ptr[a]:sup_ptr[a+1]`` with label ``sup_label[s]`` and weight ``w[s]``.
A dense model is the support of every pair.  The scoring kernels are bound
by cache misses on the (randomly accessed) word features, hence the
per-entry support offsets (one random access per entry fewer).

*Chain score assembly.*  A chain batch is scored in the flat block layout of
:mod:`structlearn.kernels.chain` (per sequence: unaries ``L x K``, then
transitions ``K x K``, start ``K``, end ``K``); the transition, start and end
scores are model weights shared by every sequence, copied into each block,
and their gradients are summed back.
"""

import numpy as np
from numba import njit

from ._lazy import njit_inner
from .chain import (_add_encoding, _fb_logspace_seq, _fb_scaled_seq, _fb_scaled_work,
                    _score_seq, max_length)


@njit(cache=True, nogil=True)
def support_entries(indices, sup_ptr, nz_start, nz_len):
    """For every stored entry of a CSR matrix, where its feature's support
    starts and how long it is, written into ``nz_start`` (int32) and
    ``nz_len`` (any integer dtype holding the longest support, see
    :func:`narrow_ints`): the kernels below then read the support
    sequentially instead of looking ``sup_ptr`` up at random."""
    for j in range(len(indices)):
        a = indices[j]
        nz_start[j] = sup_ptr[a]
        nz_len[j] = sup_ptr[a + 1] - sup_ptr[a]


@njit_inner()
def _add_row_scores(j0, j1, nz_start, nz_len, data, sup_label, w, stride, out, o):
    """``out[o + k] += x_j w[stride * s]`` over the stored entries ``j0..j1-1``
    of one row and the support entries ``s`` of their features (labels
    ``k = sup_label[s]``).

    The support loop indexes with unsigned integers, for which Numba emits
    no negative-index wraparound (a third of the loop's time).  ``stride``
    2 reads weights stored beside their gradients
    (:func:`chain_crf_value_grad`).
    """
    binary = len(data) == 0
    one = np.uint64(1)
    step = np.uint64(stride)
    for j in range(j0, j1):
        s = np.uint64(nz_start[j])
        s_end = s + np.uint64(nz_len[j])
        x = 1.0 if binary else data[j]
        while s < s_end:
            out[o + np.uint64(sup_label[s])] += x * w[step * s]
            s += one


@njit_inner()
def _add_row_grad(j0, j1, nz_start, nz_len, data, sup_label, G, o, g, stride, offset):
    """``g[stride * s + offset] += x_j G[o + sup_label[s]]``: the gradient of
    :func:`_add_row_scores` for the row-gradient ``G[o:o + K]``."""
    binary = len(data) == 0
    one = np.uint64(1)
    step = np.uint64(stride)
    off = np.uint64(offset)
    for j in range(j0, j1):
        s = np.uint64(nz_start[j])
        s_end = s + np.uint64(nz_len[j])
        x = 1.0 if binary else data[j]
        while s < s_end:
            g[step * s + off] += x * G[o + np.uint64(sup_label[s])]
            s += one


@njit(cache=True, nogil=True)
def support_scores(indptr, nz_start, nz_len, data, sup_label, w, n_labels):
    """``U`` (n_rows, n_labels) for CSR rows and support-restricted weights.

    ``nz_start, nz_len`` from :func:`support_entries`; ``data`` the CSR
    values, or an empty array when every value is 1 (binary features: the
    common case of indicator templates, which then need no value array).
    ``sup_label`` may be any integer dtype (see :func:`narrow_ints`).
    """
    n = len(indptr) - 1
    U = np.zeros(n * n_labels)
    for t in range(n):
        # np.int64(...): a literal constant would compile its own
        # specialisation of the callee (Numba's literal dispatch)
        _add_row_scores(indptr[t], indptr[t + 1], nz_start, nz_len, data, sup_label, w,
                        np.int64(1), U, np.uint64(t * n_labels))
    return U.reshape((n, n_labels))


@njit(cache=True, nogil=True)
def support_grad(indptr, nz_start, nz_len, data, sup_label, G, g):
    """Add to ``g`` the gradient in ``w`` of ``sum_{t,k} G[t, k] U[t, k]``
    (``G`` C-contiguous).

    Rows of ``G`` that are all zero are skipped (a perceptron or hinge
    gradient is zero at every correctly predicted token).
    """
    n = len(indptr) - 1
    K = G.shape[1]
    Gf = G.reshape(-1)
    for t in range(n):
        nonzero = False
        for k in range(K):
            if G[t, k] != 0.0:
                nonzero = True
                break
        if nonzero:
            _add_row_grad(indptr[t], indptr[t + 1], nz_start, nz_len, data, sup_label, Gf,
                          np.uint64(t * K), g, np.int64(1), np.int64(0))


@njit(cache=True, nogil=True)
def support_grad_entries(indptr, nz_start, nz_len, data, sup_label, G):
    """:func:`support_grad` as entries ``(cols, vals)`` of the support
    weights (duplicates allowed, zero entries skipped)."""
    n = len(indptr) - 1
    binary = len(data) == 0
    n_out = 0
    for t in range(n):
        Gt = G[t]
        for j in range(indptr[t], indptr[t + 1]):
            s0 = nz_start[j]
            for s in range(s0, s0 + nz_len[j]):
                if Gt[sup_label[s]] != 0.0:
                    n_out += 1
    cols = np.empty(n_out, dtype=np.int64)
    vals = np.empty(n_out)
    o = 0
    for t in range(n):
        Gt = G[t]
        for j in range(indptr[t], indptr[t + 1]):
            s0 = nz_start[j]
            x = 1.0 if binary else data[j]
            for s in range(s0, s0 + nz_len[j]):
                v = Gt[sup_label[s]]
                if v != 0.0:
                    cols[o] = s
                    vals[o] = x * v
                    o += 1
    return cols, vals


@njit(cache=True, nogil=True)
def support_param_ids(indptr, nz_start, nz_len):
    """The support weights read by :func:`support_scores` for these rows
    (with repeats)."""
    n_out = 0
    for j in range(indptr[0], indptr[len(indptr) - 1]):
        n_out += nz_len[j]
    out = np.empty(n_out, dtype=np.int64)
    o = 0
    for j in range(indptr[0], indptr[len(indptr) - 1]):
        s0 = nz_start[j]
        for s in range(s0, s0 + nz_len[j]):
            out[o] = s
            o += 1
    return out


def narrow_dtype(n_values):
    """Smallest integer dtype holding the values ``0..n_values - 1``."""
    for dt in (np.uint8, np.int16, np.int32):
        if n_values <= np.iinfo(dt).max + 1:
            return np.dtype(dt)
    return np.dtype(np.int64)


def narrow_ints(a, n_values):
    """``a`` (values in ``0..n_values - 1``) in the smallest integer dtype
    that holds them: the support kernels read one label and one length per
    support entry, and narrower arrays are faster to stream and smaller
    (``uint8`` for up to 256 tags)."""
    return np.ascontiguousarray(a, dtype=narrow_dtype(n_values))


@njit(cache=True, nogil=True)
def select_entries(indptr, nz_start, nz_len, data, rows):
    """The CSR rows ``rows`` of (indptr, nz_start, nz_len, data) as new
    arrays (``data`` may be empty: binary features)."""
    m = len(rows)
    new_ptr = np.zeros(m + 1, dtype=np.int64)
    for i in range(m):
        r = rows[i]
        new_ptr[i + 1] = new_ptr[i] + indptr[r + 1] - indptr[r]
    nnz = new_ptr[m]
    st = np.empty(nnz, dtype=nz_start.dtype)
    ln = np.empty(nnz, dtype=nz_len.dtype)
    dat = np.empty(nnz if len(data) else 0, dtype=data.dtype)
    for i in range(m):
        r = rows[i]
        o = new_ptr[i]
        for j in range(indptr[r], indptr[r + 1]):
            st[o] = nz_start[j]
            ln[o] = nz_len[j]
            if len(data):
                dat[o] = data[j]
            o += 1
    return new_ptr, st, ln, dat


@njit(cache=True, nogil=True)
def chain_part_offsets(tok_off, n_tags):
    """Block offsets of the flat chain layout for sequences at ``tok_off``."""
    n = len(tok_off) - 1
    K = n_tags
    part_off = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        part_off[i + 1] = part_off[i] + L * K + K * K + 2 * K
    return part_off


@njit(cache=True, nogil=True)
def chain_assemble_scores(U, trans, start, end, tok_off, part_off):
    """Flat chain scores from token scores ``U`` and shared transition scores."""
    n = len(tok_off) - 1
    K = U.shape[1]
    theta = np.empty(part_off[n])
    for i in range(n):
        base = part_off[i]
        t0 = tok_off[i]
        L = tok_off[i + 1] - t0
        for t in range(L):
            for k in range(K):
                theta[base + t * K + k] = U[t0 + t, k]
        o = base + L * K
        for a in range(K):
            for b in range(K):
                theta[o + a * K + b] = trans[a, b]
        o += K * K
        for k in range(K):
            theta[o + k] = start[k]
            theta[o + K + k] = end[k]
    return theta


@njit(cache=True, nogil=True)
def chain_scores(indptr, nz_start, nz_len, data, sup_label, w, trans, start, end, bias, scale,
                 tok_off, part_off):
    """Flat chain scores of a batch straight from its token rows: the
    numbers of :func:`support_scores` (times ``scale``, plus ``bias``) and
    :func:`chain_assemble_scores` (the shared scores times ``scale``) in one
    kernel, each sequence's unaries written into its block (no ``(n_tokens,
    K)`` intermediate, and one kernel fewer to compile for a prediction)."""
    n = len(tok_off) - 1
    K = len(bias)
    theta = np.empty(part_off[n])
    for i in range(n):
        base = part_off[i]
        t0 = tok_off[i]
        L = tok_off[i + 1] - t0
        tr = base + L * K
        _unary_scores_into(indptr, nz_start, nz_len, data, sup_label, w, np.int64(1), scale,
                           bias, t0, L, theta, base, tr)
        for a in range(K):
            for b in range(K):
                theta[tr + a * K + b] = scale * trans[a, b]
        o = tr + K * K
        for k in range(K):
            theta[o + k] = scale * start[k]
            theta[o + K + k] = scale * end[k]
    return theta


@njit(cache=True, nogil=True)
def chain_reduce_grad(G, tok_off, part_off, n_tags):
    """Split a flat chain gradient into token (N, K) and summed shared parts."""
    n = len(tok_off) - 1
    K = n_tags
    GU = chain_unary_view(G, tok_off, part_off, n_tags)
    gtrans = np.zeros((K, K))
    gstart = np.zeros(K)
    gend = np.zeros(K)
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        o = part_off[i] + L * K
        for a in range(K):
            for b in range(K):
                gtrans[a, b] += G[o + a * K + b]
        o += K * K
        for k in range(K):
            gstart[k] += G[o + k]
            gend[k] += G[o + K + k]
    return GU, gtrans, gstart, gend


@njit(cache=True, nogil=True)
def chain_unary_mask(tok_off, part_off, n_tags):
    """Boolean mask of the unary parts of a flat chain batch."""
    n = len(tok_off) - 1
    K = n_tags
    mask = np.zeros(part_off[n], dtype=np.bool_)
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        for j in range(part_off[i], part_off[i] + L * K):
            mask[j] = True
    return mask


@njit(cache=True, nogil=True)
def chain_transition_upper(tok_off, part_off, n_tags):
    """Upper bounds of each part over the chain polytope.

    1 for unary, start and end parts; ``L - 1`` for the transition counts
    of a sequence of length ``L``.
    """
    n = len(tok_off) - 1
    K = n_tags
    ub = np.ones(part_off[n])
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        o = part_off[i] + L * K
        for j in range(o, o + K * K):
            ub[j] = L - 1.0
    return ub


@njit(cache=True, nogil=True)
def chain_unary_view(a, tok_off, part_off, n_tags):
    """Unary blocks of a flat chain array as one (N_tok, K) array (a copy)."""
    n = len(tok_off) - 1
    K = n_tags
    U = np.empty((tok_off[n], K))
    for i in range(n):
        base = part_off[i]
        t0 = tok_off[i]
        L = tok_off[i + 1] - t0
        for t in range(L):
            for k in range(K):
                U[t0 + t, k] = a[base + t * K + k]
    return U


@njit(cache=True, nogil=True)
def observed_support(indptr, indices, y, n_features, n_labels):
    """Support of the (feature, label) pairs that co-occur in the data.

    Returns ``(sup_ptr, sup_label)`` (labels sorted within each feature),
    using one boolean row of ``n_labels`` per feature and no sort.
    """
    seen = np.zeros((n_features, n_labels), dtype=np.bool_)
    counts = np.zeros(n_features + 1, dtype=np.int64)
    for t in range(len(indptr) - 1):
        k = y[t]
        for j in range(indptr[t], indptr[t + 1]):
            a = indices[j]
            if not seen[a, k]:
                seen[a, k] = True
                counts[a + 1] += 1
    for a in range(n_features):   # prefix sums in place (np.cumsum: one more
        counts[a + 1] += counts[a]  # kernel to compile on a first fit, ~0.3 s)
    sup_ptr = counts
    sup_label = np.empty(sup_ptr[-1], dtype=np.int64)
    for a in range(n_features):
        s = sup_ptr[a]
        for k in range(n_labels):
            if seen[a, k]:
                sup_label[s] = k
                s += 1
    return sup_ptr, sup_label


def chain_crf_value_grad(indptr, nz_start, nz_len, data, sup_label, wg, trans, start,
                         end, bias, tok_off, y, g_rest, sw):
    """CRF losses of a chain batch and their summed gradient, one sequence
    at a time.

    The same computation as scoring the batch (:func:`support_scores`,
    :func:`chain_assemble_scores`), running :class:`structlearn.losses.CRF`
    on it (forward-backward of :mod:`structlearn.kernels.chain`) and
    reducing the gradient (:func:`chain_reduce_grad`, :func:`support_grad`),
    but each sequence's scores and marginals live in one small block that
    stays in cache, instead of batch-sized arrays that go through memory
    three times.  The forward-backward recursions are the chain kernels'
    own: the scaled ones (:func:`~structlearn.kernels.chain._fb_scaled_seq`)
    in :func:`_crf_scaled_pass`; a sequence whose score range is too large
    for them is left out of that pass and computed in log space by
    :func:`_crf_logspace_pass` -- a second kernel, so that Numba compiles
    the log-space recursions only for the first data that needs them
    (about 2 s of a first fit otherwise).

    ``wg`` (``2 * n_support``) holds support weight ``s`` at ``2 s``; the
    gradient in it is added at ``2 s + 1``.  Side by side, a weight and its
    gradient share a cache line, which the gradient pass of a sequence
    then finds in cache after its scoring pass (the supports of the word
    features are scattered at random over the weights: separate arrays
    cost one more cache miss per entry).  On CoNLL-2000 an evaluation
    takes 0.90x the generic path's time (``benchmarks/micro/bench_crf_eval.py``).
    The gradient in ``[transitions (K*K), start (K), end (K), bias (K)]``
    is added to ``g_rest``.  ``sw`` holds the sequences' weights: sequence
    ``i``'s loss and gradient are multiplied by ``sw[i]`` (a sequence of
    weight 0 is skipped).  Returns the per-sequence weighted losses
    ``sw[i] max(log Z - s(y), 0)``.
    """
    vals = np.empty(len(tok_off) - 1)
    left = _crf_scaled_pass(indptr, nz_start, nz_len, data, sup_label, wg, trans, start,
                            end, bias, tok_off, y, g_rest, sw, vals)
    if len(left):
        _crf_logspace_pass(indptr, nz_start, nz_len, data, sup_label, wg, trans, start,
                           end, bias, tok_off, y, g_rest, sw, vals, left)
    return vals


@njit(cache=True, nogil=True, inline="always")
def _crf_blocks(tok_off, trans, start, end):
    """Work blocks of :func:`chain_crf_value_grad` (scores ``theta``,
    marginals ``mu``) sized for the longest sequence, with the transition,
    start and end scores written once: a sequence of length ``L`` has its
    block at ``base = (Lmax - L) K``, so those scores sit at the same place
    ``Lmax K`` for every sequence (the scaled recursions reuse their
    exponentials)."""
    K = len(start)
    Lmax = max_length(tok_off)
    theta = np.empty(Lmax * K + K * K + 2 * K)
    mu = np.empty(Lmax * K + K * K + 2 * K)
    tr = Lmax * K
    for a in range(K):
        for b in range(K):
            theta[tr + a * K + b] = trans[a, b]
    for k in range(K):
        theta[tr + K * K + k] = start[k]
        theta[tr + K * K + K + k] = end[k]
    return theta, mu, Lmax


@njit(cache=True, nogil=True, inline="always")
def _unary_scores_into(indptr, nz_start, nz_len, data, sup_label, w, stride, scale, bias, t0,
                       L, theta, base, tr):
    """Unary scores of the sequence of ``L`` tokens from row ``t0`` into
    ``theta[base:tr]``: ``scale <w_k, x_t> + bias[k]``, the support weights
    read at ``stride`` (:func:`_add_row_scores`)."""
    K = len(bias)
    for j in range(base, tr):
        theta[j] = 0.0
    for t in range(L):
        u = base + t * K
        _add_row_scores(indptr[t0 + t], indptr[t0 + t + 1], nz_start, nz_len, data,
                        sup_label, w, stride, theta, np.uint64(u))
        for k in range(K):
            theta[u + k] = theta[u + k] * scale + bias[k]


@njit(cache=True, nogil=True, inline="always")
def _crf_add_grad(indptr, nz_start, nz_len, data, sup_label, wg, y, t0, L, K, theta, mu,
                  base, tr, lz, g_rest, wi):
    """The loss of one sequence of weight ``wi`` from its log-partition
    ``lz`` and marginals ``mu``, with its gradient (marginals minus the gold
    encoding, times ``wi``) added to ``wg`` and ``g_rest``."""
    v = lz - _score_seq(theta, base, L, K, y, t0)
    _add_encoding(y, t0, L, K, mu, base, -1.0)
    if wi != 1.0:
        for j in range(base, tr + K * K + 2 * K):
            mu[j] *= wi
    o_b = K * K + 2 * K
    for t in range(L):
        u = base + t * K
        for k in range(K):
            g_rest[o_b + k] += mu[u + k]
        _add_row_grad(indptr[t0 + t], indptr[t0 + t + 1], nz_start, nz_len, data,
                      sup_label, mu, np.uint64(u), wg, np.int64(2), np.int64(1))
    for j in range(K * K + 2 * K):
        g_rest[j] += mu[tr + j]
    return wi * v if v > 0.0 else 0.0


@njit(cache=True, nogil=True)
def _crf_scaled_pass(indptr, nz_start, nz_len, data, sup_label, wg, trans, start, end,
                     bias, tok_off, y, g_rest, sw, vals):
    """:func:`chain_crf_value_grad` with the scaled recursions; returns the
    sequences they cannot compute (left out: no value, no gradient)."""
    n = len(tok_off) - 1
    K = len(bias)
    theta, mu, Lmax = _crf_blocks(tok_off, trans, start, end)
    work = _fb_scaled_work(Lmax, K)
    tr = Lmax * K
    left = np.empty(n, dtype=np.int64)
    n_left = 0
    for i in range(n):
        t0 = tok_off[i]
        L = tok_off[i + 1] - t0
        base = (Lmax - L) * K
        if sw[i] == 0.0:
            vals[i] = 0.0
            continue
        _unary_scores_into(indptr, nz_start, nz_len, data, sup_label, wg, np.int64(2), 1.0,
                           bias, t0, L, theta, base, tr)
        ok, lz = _fb_scaled_seq(theta, base, L, K, mu, work)
        if ok:
            vals[i] = _crf_add_grad(indptr, nz_start, nz_len, data, sup_label, wg, y, t0,
                                    L, K, theta, mu, base, tr, lz, g_rest, sw[i])
        else:
            left[n_left] = i
            n_left += 1
    return left[:n_left]


@njit(cache=True, nogil=True)
def _crf_logspace_pass(indptr, nz_start, nz_len, data, sup_label, wg, trans, start, end,
                       bias, tok_off, y, g_rest, sw, vals, seqs):
    """:func:`chain_crf_value_grad` of the sequences ``seqs`` in log space."""
    K = len(bias)
    theta, mu, Lmax = _crf_blocks(tok_off, trans, start, end)
    tr = Lmax * K
    for i in seqs:
        t0 = tok_off[i]
        L = tok_off[i + 1] - t0
        base = (Lmax - L) * K
        _unary_scores_into(indptr, nz_start, nz_len, data, sup_label, wg, np.int64(2), 1.0,
                           bias, t0, L, theta, base, tr)
        lz = _fb_logspace_seq(theta, base, L, K, mu)
        vals[i] = _crf_add_grad(indptr, nz_start, nz_len, data, sup_label, wg, y, t0, L,
                                K, theta, mu, base, tr, lz, g_rest, sw[i])


@njit(cache=True, nogil=True)
def chain_block_entries(indptr, nz_start, nz_len, data, sup_label, D, tok_lo, part_off,
                        n_tags, n_support, fit_intercept):
    """Per sequence ``i`` of a batch, the entries of ``A_i^T D_i``: the
    gradient in the chain parameters ``[w (support), transitions, start,
    end, bias]`` of ``<D_i, theta_i>`` for its flat part block ``D_i``
    (zero entries skipped; the support weights may repeat).

    Sequence ``i`` is the token rows ``tok_lo[i]..`` of the (global) CSR
    arrays, its length read off its block size in ``part_off``.

    Returns ``(cols, vals, ptr)``, the entries of sequence ``i`` at
    ``ptr[i]:ptr[i+1]``.
    """
    n = len(tok_lo)
    K = n_tags
    binary = len(data) == 0
    shared = K * K + 2 * K
    bound = 0
    for i in range(n):
        L = (part_off[i + 1] - part_off[i] - shared) // K
        t0 = tok_lo[i]
        for j in range(indptr[t0], indptr[t0 + L]):
            bound += nz_len[j]
    bound += n * (shared + K)
    cols = np.empty(bound, dtype=np.int64)
    vals = np.empty(bound)
    ptr = np.zeros(n + 1, dtype=np.int64)
    bias = np.zeros(K)
    o = 0
    for i in range(n):
        base = part_off[i]
        t0 = tok_lo[i]
        L = (part_off[i + 1] - base - shared) // K
        bias[:] = 0.0
        for t in range(L):
            row = base + t * K
            nonzero = False
            for k in range(K):
                if D[row + k] != 0.0:
                    nonzero = True
                    bias[k] += D[row + k]
            if not nonzero:  # a violator differs from the truth on few tokens
                continue
            for j in range(indptr[t0 + t], indptr[t0 + t + 1]):
                x = 1.0 if binary else data[j]
                s0 = nz_start[j]
                for s in range(s0, s0 + nz_len[j]):
                    v = D[row + sup_label[s]]
                    if v != 0.0:
                        cols[o] = s
                        vals[o] = x * v
                        o += 1
        q = base + L * K
        for r in range(shared):
            v = D[q + r]
            if v != 0.0:
                cols[o] = n_support + r
                vals[o] = v
                o += 1
        if fit_intercept:
            for k in range(K):
                if bias[k] != 0.0:
                    cols[o] = n_support + shared + k
                    vals[o] = bias[k]
                    o += 1
        ptr[i + 1] = o
    return cols[:o], vals[:o], ptr


@njit(cache=True, nogil=True)
def chain_part_columns(indptr, nz_start, nz_len, data, sup_label, tok_lo, n_tok, parts,
                       n_tags, n_support, fit_intercept):
    """Per ``k``, the column of the chain feature map for part ``parts[k]``
    of the sequence whose tokens are the (global) rows ``tok_lo[k]`` ..
    ``tok_lo[k] + n_tok[k] - 1``: the entries of ``A_i^T e_p`` in the chain
    parameters ``[w (support), transitions, start, end, bias]`` -- the same
    numbers :func:`chain_block_entries` gives for a unit score vector on
    that part.  Returns ``(cols, vals, ptr)``, part ``k``'s entries at
    ``ptr[k]:ptr[k+1]``."""
    K = n_tags
    binary = len(data) == 0
    shared = K * K + 2 * K
    bound = 0
    for k in range(len(parts)):
        p = parts[k]
        if p < n_tok[k] * K:
            t = tok_lo[k] + p // K
            for j in range(indptr[t], indptr[t + 1]):
                bound += nz_len[j]
        bound += 2
    cols = np.empty(bound, dtype=np.int64)
    vals = np.empty(bound)
    ptr = np.zeros(len(parts) + 1, dtype=np.int64)
    o = 0
    for k in range(len(parts)):
        p = parts[k]
        if p < n_tok[k] * K:
            t = tok_lo[k] + p // K
            lab = p % K
            for j in range(indptr[t], indptr[t + 1]):
                x = 1.0 if binary else data[j]
                s0 = nz_start[j]
                for s in range(s0, s0 + nz_len[j]):
                    if sup_label[s] == lab:
                        cols[o] = s
                        vals[o] = x
                        o += 1
            if fit_intercept:
                cols[o] = n_support + shared + lab
                vals[o] = 1.0
                o += 1
        else:
            cols[o] = n_support + p - n_tok[k] * K
            vals[o] = 1.0
            o += 1
        ptr[k + 1] = o
    return cols[:o], vals[:o], ptr
