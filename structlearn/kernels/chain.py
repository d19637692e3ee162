"""Linear-chain (sequence labelling) kernels on a flat, ragged batch layout.

A batch holds ``n`` sequences of lengths ``L_i >= 1`` over ``K >= 1`` tags.

* ``tok_off`` (int64, ``n + 1``): token offsets, ``tok_off[0] = 0``; the tags
  of sequence ``i`` are ``y[tok_off[i]:tok_off[i + 1]]`` in flat int64 arrays.
* ``part_off`` (int64, ``n + 1``): part offsets; the block of sequence ``i``
  has ``L_i K + K K + 2 K`` entries.  Inside the block starting at ``base``:

  - ``unary[t, k]`` at ``base + t K + k``,
  - ``trans[a, b]`` (tag ``a`` at ``t - 1`` followed by ``b`` at ``t``) at
    ``base + L K + a K + b``,
  - ``start[k]`` at ``base + L K + K K + k``,
  - ``end[k]`` at ``base + L K + K K + K + k``.

The score of a tag sequence is ``sum_t unary[t, y_t] + sum_{t >= 1}
trans[y_{t-1}, y_t] + start[y_0] + end[y_{L-1}]``, i.e. ``<theta, phi(y)>``
with the vertex ``phi(y)`` in the same layout (unary indicators, transition
*counts*, start and end one-hots).  The unaries come first in every block,
so ``n_unary = L K`` is exactly the solver convention of
:mod:`structlearn.kernels.sparsemap` (only unaries are penalised).

Scores are assumed finite; all max/log-sum-exp recursions subtract their
running maximum, so large magnitudes (``|theta| ~ 1e6``) give no overflow
and no NaN.  :func:`forward_backward_batch` runs scaled-probability
recursions and falls back to log space per sequence when the score range is
too large for them (or a normaliser underflows).

Tie-breaking (all argmax computations use strict ``>`` in increasing index
order, so the *lowest* index wins):

* Viterbi picks the lowest final tag, then while backtracking the lowest
  best predecessor.  Among exactly tied optima this returns the sequence that
  is smallest in *reverse* lexicographic order (compare ``y_{L-1}`` first,
  then ``y_{L-2}``, ...).
* Backward pointers (used by max-marginal violators and :func:`second_best_batch`)
  pick the lowest best successor.
* :func:`second_best_batch` scans deviation positions left to right and
  tags upwards; :func:`poslearn_batch` takes the lowest violating tag;
  :func:`slack_violator_batch` the smallest number of errors.

The batch kernels are plain loops over sequences and release the GIL
(``nogil=True``): as for the other kernels of this package, callers split
batches across threads (:func:`structlearn.solvers.thread_map`), and ``parallel=True``
would tie them to numba's threading layer (the default workqueue layer is
not safe to enter from several threads at once).
"""

import numpy as np
from numba import njit

from ._lazy import njit_inner, njit_on_first_call
from ._math import fast_exp
from ._sparsemap_types import FORBIDDEN, FORBIDDEN_CUT
from .sparsemap import ENCODE_SIGNATURE, ORACLE_SIGNATURE, block_params
from .slack_search import (SEARCH_STATE, search_calls, search_init, search_next,
                           search_tell)

NEG_INF = -np.inf

# FORBIDDEN, FORBIDDEN_CUT: see _sparsemap_types; parts at or below the cut
# are left out of the score ranges of the scaled forward-backward (their
# exponentials are exactly 0), so constraints do not push sequences to the
# slower log-space recursion.


# ------------------------------------------------------------------ helpers
@njit_inner(inline="always")
def _forward_max(theta, base, L, K):
    """Forward Viterbi table ``delta[t, k]`` (best prefix score ending in tag
    ``k`` at ``t``, unary included) and back-pointers ``bp[t, k]``."""
    tr = base + L * K
    st = tr + K * K
    delta = np.empty((L, K))
    bp = np.zeros((L, K), dtype=np.int64)
    for k in range(K):
        delta[0, k] = theta[st + k] + theta[base + k]
    for t in range(1, L):
        # a outer, b inner: rows of ``trans`` are read contiguously; strict
        # ``>`` with increasing a keeps the lowest best predecessor.
        d0 = delta[t - 1, 0]
        for b in range(K):
            delta[t, b] = d0 + theta[tr + b]
        for a in range(1, K):
            da = delta[t - 1, a]
            row = tr + a * K
            for b in range(K):
                v = da + theta[row + b]
                if v > delta[t, b]:
                    delta[t, b] = v
                    bp[t, b] = a
        u = base + t * K
        for b in range(K):
            delta[t, b] += theta[u + b]
    return delta, bp


@njit_inner()
def _backward_max(theta, base, L, K):
    """Backward Viterbi table ``gamma[t, k]`` (best score of positions
    ``t + 1 ..`` plus ``end``, given tag ``k`` at ``t``; unary of ``t`` not
    included) and successor pointers ``bp[t, k]``."""
    tr = base + L * K
    en = tr + K * K + K
    gamma = np.empty((L, K))
    bp = np.zeros((L, K), dtype=np.int64)
    for k in range(K):
        gamma[L - 1, k] = theta[en + k]
    nxt = np.empty(K)
    for t in range(L - 2, -1, -1):
        u = base + (t + 1) * K
        for b in range(K):
            nxt[b] = theta[u + b] + gamma[t + 1, b]
        for a in range(K):
            row = tr + a * K
            best = theta[row] + nxt[0]
            arg = 0
            for b in range(1, K):
                v = theta[row + b] + nxt[b]
                if v > best:
                    best = v
                    arg = b
            gamma[t, a] = best
            bp[t, a] = arg
    return gamma, bp


@njit_inner()
def _viterbi_into(theta, base, L, K, y, yoff):
    """Write the Viterbi sequence of one block into ``y[yoff:yoff + L]``;
    returns its score."""
    delta, bp = _forward_max(theta, base, L, K)
    en = base + L * K + K * K + K
    best = delta[L - 1, 0] + theta[en]
    k = 0
    for j in range(1, K):
        v = delta[L - 1, j] + theta[en + j]
        if v > best:
            best = v
            k = j
    y[yoff + L - 1] = k
    for t in range(L - 1, 0, -1):
        k = bp[t, k]
        y[yoff + t - 1] = k
    return best


@njit_inner()
def _score_seq(theta, base, L, K, y, yoff):
    tr = base + L * K
    st = tr + K * K
    en = st + K
    s = theta[st + y[yoff]] + theta[en + y[yoff + L - 1]]
    for t in range(L):
        s += theta[base + t * K + y[yoff + t]]
    for t in range(1, L):
        s += theta[tr + y[yoff + t - 1] * K + y[yoff + t]]
    return s


@njit_inner()
def _add_encoding(y, yoff, L, K, out, base, w):
    """``out[block] += w * phi(y)`` for one sequence."""
    tr = base + L * K
    st = tr + K * K
    en = st + K
    for t in range(L):
        out[base + t * K + y[yoff + t]] += w
    for t in range(1, L):
        out[tr + y[yoff + t - 1] * K + y[yoff + t]] += w
    out[st + y[yoff]] += w
    out[en + y[yoff + L - 1]] += w


@njit_inner()
def _max_min(x, start, n):
    """Largest and smallest of ``x[start:start + n]`` (``n >= 1``), leaving
    out forbidden parts (``<= FORBIDDEN_CUT``) unless all are."""
    hi = x[start]
    lo = hi
    for j in range(start + 1, start + n):
        v = x[j]
        if v > hi:
            hi = v
        if v < lo and v > FORBIDDEN_CUT:
            lo = v
    if lo <= FORBIDDEN_CUT:  # the first entry was forbidden
        lo = hi
        for j in range(start, start + n):
            if x[j] < lo and x[j] > FORBIDDEN_CUT:
                lo = x[j]
    return hi, lo


@njit_inner()
def _lse(x, n):
    m = x[0]
    for i in range(1, n):
        if x[i] > m:
            m = x[i]
    if m == NEG_INF:
        return NEG_INF
    acc = 0.0
    for i in range(n):
        acc += np.exp(x[i] - m)
    return m + np.log(acc)


# ------------------------------------------------------------ batch kernels
@njit(cache=True, nogil=True)
def encode_batch(y, part_off, tok_off, K):
    """Vertex vectors ``phi(y_i)`` of a batch, flat in the block layout."""
    n = tok_off.shape[0] - 1
    phi = np.zeros(part_off[n])
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        _add_encoding(y, tok_off[i], L, K, phi, part_off[i], 1.0)
    return phi


@njit(cache=True, nogil=True)
def score_batch(theta, y, part_off, tok_off, K):
    """Scores ``<theta_i, phi(y_i)>`` of the given sequences, shape ``(n,)``."""
    n = tok_off.shape[0] - 1
    s = np.empty(n)
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        s[i] = _score_seq(theta, part_off[i], L, K, y, tok_off[i])
    return s


@njit(cache=True, nogil=True)
def viterbi_batch(theta, part_off, tok_off, K):
    """MAP tag sequences (flat int64), ``O(L K^2)`` each.

    Ties: lowest final tag, then lowest best predecessor while backtracking
    (reverse-lexicographically smallest optimum).
    """
    n = tok_off.shape[0] - 1
    y = np.empty(tok_off[n], dtype=np.int64)
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        _viterbi_into(theta, part_off[i], L, K, y, tok_off[i])
    return y


# Largest total score range (transitions + worst token's unaries + start +
# end, each ``max - min``) for which the scaled-probability forward-backward
# is used.  Below it every scaled forward / backward entry is a normal float
# (``alpha_hat >= exp(-range) / K^2``, ``beta_hat >= exp(-range) / K``,
# ``beta_hat <= K^2 exp(range)``), so the fast path keeps full relative
# accuracy; above it (or on any bad normaliser) the sequence is recomputed
# in log space.
_SCALED_MAX_RANGE = 600.0
_TINY = 2.2250738585072014e-308  # smallest normal double


@njit_inner()
def _fb_logspace_seq(theta, base, L, K, mu):
    """Log-space forward-backward of one block: writes its marginals into
    ``mu[base:base + L K + K K + 2 K]`` (overwriting) and returns ``logZ``.
    ``O(L K^2)`` exponentials; robust to any finite magnitude."""
    tr = base + L * K
    st = tr + K * K
    en = st + K
    for j in range(base, en + K):
        mu[j] = 0.0
    alpha = np.empty((L, K))
    beta = np.empty((L, K))
    mx = np.empty(K)
    acc = np.empty(K)
    for k in range(K):
        alpha[0, k] = theta[st + k] + theta[base + k]
    for t in range(1, L):
        for b in range(K):
            mx[b] = alpha[t - 1, 0] + theta[tr + b]
        for a in range(1, K):
            row = tr + a * K
            for b in range(K):
                v = alpha[t - 1, a] + theta[row + b]
                if v > mx[b]:
                    mx[b] = v
        acc[:] = 0.0
        for a in range(K):
            row = tr + a * K
            for b in range(K):
                acc[b] += np.exp(alpha[t - 1, a] + theta[row + b] - mx[b])
        u = base + t * K
        for b in range(K):
            alpha[t, b] = theta[u + b] + mx[b] + np.log(acc[b])
    for k in range(K):
        beta[L - 1, k] = theta[en + k]
    nxt = np.empty(K)
    for t in range(L - 2, -1, -1):
        u = base + (t + 1) * K
        for b in range(K):
            nxt[b] = theta[u + b] + beta[t + 1, b]
        for a in range(K):
            row = tr + a * K
            for b in range(K):
                acc[b] = theta[row + b] + nxt[b]
            beta[t, a] = _lse(acc, K)
    for k in range(K):
        acc[k] = alpha[L - 1, k] + theta[en + k]
    lz = _lse(acc, K)
    for t in range(L):
        u = base + t * K
        for k in range(K):
            mu[u + k] = np.exp(alpha[t, k] + beta[t, k] - lz)
    for t in range(1, L):
        u = base + t * K
        for b in range(K):
            nxt[b] = theta[u + b] + beta[t, b] - lz
        for a in range(K):
            row = tr + a * K
            at = alpha[t - 1, a]
            for b in range(K):
                mu[row + b] += np.exp(at + theta[row + b] + nxt[b])
    for k in range(K):
        mu[st + k] = mu[base + k]
        mu[en + k] = mu[base + (L - 1) * K + k]
    return lz


@njit(cache=True, nogil=True)
def max_length(tok_off):
    """The longest sequence of a batch (at least 1)."""
    Lmax = 1
    for i in range(len(tok_off) - 1):
        L = tok_off[i + 1] - tok_off[i]
        if L > Lmax:
            Lmax = L
    return Lmax


@njit_inner()
def _fb_scaled_work(Lmax, K):
    """Work arrays of :func:`_fb_scaled_seq` for sequences of up to ``Lmax``
    tokens: ``eT, eTt, xi`` ``(K, K)``; ``eS, eE, w`` ``(K,)``; ``eU, alpha,
    beta`` ``(Lmax, K)``; ``lc`` ``(Lmax,)``; the transition cache ``tprev``
    (no block yet) and ``tval``."""
    return (np.empty((K, K)), np.empty((K, K)), np.empty((K, K)), np.empty(K),
            np.empty(K), np.empty(K), np.empty((Lmax, K)), np.empty((Lmax, K)),
            np.empty((Lmax, K)), np.empty(Lmax), np.full(1, -1, dtype=np.int64),
            np.empty(2))


@njit_inner(fastmath={"reassoc", "contract"})
def _fb_scaled_seq(theta, base, L, K, mu, work):
    """Scaled-probability forward-backward of one block (as in CRFsuite).

    The transition matrix, start / end vectors and each token's unaries are
    exponentiated once, shifted by their maxima; ``alpha_hat[t]`` is
    normalised to sum 1 by ``c_t`` and ``beta_hat`` uses the same scale
    factors, so the marginals are ``alpha_hat * beta_hat`` and the expected
    transition counts ``sum_t alpha_hat[t-1, a] eT[a, b] eU[t, b]
    beta_hat[t, b] / c_t``.  Only ``O(L K + K^2)`` exponentials and
    ``3 L K^2`` multiply-adds; the forward and backward steps are written
    as dot products over contiguous rows, which LLVM vectorises when
    allowed to reassociate sums (``fastmath={"reassoc", "contract"}``,
    ~20% faster at K = 22; no finite-math flags, so the NaN/inf checks
    below stand).

    Writes (overwrites) the block of ``mu`` and returns ``(ok, logZ)``; ``ok`` is False (block of ``mu`` partially
    written) when the score range exceeds ``_SCALED_MAX_RANGE`` or a
    normaliser is zero, subnormal or not finite: the caller then uses
    :func:`_fb_logspace_seq`.  ``work``: the work arrays of
    :func:`_fb_scaled_work`, for sequences of up to ``Lmax`` tokens; its
    ``tprev`` (int64, ``(1,)``) and ``tval`` (``(2,)``) cache the offset,
    maximum and range of the transition block ``eT`` was last computed from
    (``tprev[0] < 0``: none): when the transitions of this block are
    bitwise equal to those (transitions shared across sequences, as in a
    CRF), their ``K^2`` exponentials are reused.
    """
    eT, eTt, xi, eS, eE, w, eU, alpha, beta, lc, tprev, tval = work
    tr = base + L * K
    st = tr + K * K
    en = st + K
    # -- exponentiate, shifted by maxima; total score range for the check
    p = tprev[0]
    same = p >= 0
    if same:
        for j in range(K * K):
            if theta[tr + j] != theta[p + j]:
                same = False
                break
    if same:
        mT = tval[0]
        hi_lo_T = tval[1]
        rng = hi_lo_T
    else:
        mT, lo = _max_min(theta, tr, K * K)
        hi_lo_T = mT - lo
        rng = hi_lo_T
    mS, lo = _max_min(theta, st, K)
    rng += mS - lo
    mE, lo = _max_min(theta, en, K)
    rng += mE - lo
    shift = mS + mE + (L - 1) * mT
    rU = 0.0
    for t in range(L):
        u = base + t * K
        hi, lo = _max_min(theta, u, K)
        if not (hi - lo <= rU):
            rU = hi - lo
        shift += hi
        for k in range(K):
            eU[t, k] = fast_exp(theta[u + k] - hi)
    rng += rU
    if not (rng <= _SCALED_MAX_RANGE):  # also catches NaN / inf scores
        return False, 0.0
    if same:
        tprev[0] = tr
    else:
        for a in range(K):
            row = tr + a * K
            for b in range(K):
                e = fast_exp(theta[row + b] - mT)
                eT[a, b] = e
                eTt[b, a] = e
        tprev[0] = tr
        tval[0] = mT
        tval[1] = hi_lo_T
    for a in range(K):
        for b in range(K):
            xi[a, b] = 0.0
    for k in range(K):
        eS[k] = fast_exp(theta[st + k] - mS)
        eE[k] = fast_exp(theta[en + k] - mE)
    # -- forward: alpha_hat[t] sums to 1, lc[t] its normaliser
    logc = 0.0
    c = 0.0
    for k in range(K):
        v = eS[k] * eU[0, k]
        alpha[0, k] = v
        c += v
    if not (c >= _TINY and c < np.inf):
        return False, 0.0
    inv = 1.0 / c
    for k in range(K):
        alpha[0, k] *= inv
    lc[0] = c
    logc += np.log(c)
    for t in range(1, L):
        cur = alpha[t]
        prev = alpha[t - 1]
        ut = eU[t]
        c = 0.0
        for b in range(K):  # cur[b] = <eT[:, b], prev> (contiguous rows of eTt)
            cb = eTt[b]
            v = 0.0
            for a in range(K):
                v += cb[a] * prev[a]
            v *= ut[b]
            cur[b] = v
            c += v
        if not (c >= _TINY and c < np.inf):
            return False, 0.0
        inv = 1.0 / c
        for b in range(K):
            cur[b] *= inv
        lc[t] = c
        logc += np.log(c)
    c = 0.0
    for k in range(K):
        c += alpha[L - 1, k] * eE[k]
    if not (c >= _TINY and c < np.inf):
        return False, 0.0
    lz = logc + np.log(c) + shift
    # -- backward with the same scale factors, fused with the transition
    # counts xi[a, b] = sum_t alpha_hat[t-1, a] w_t[b], w_t = eU beta_hat / c_t
    inv = 1.0 / c
    for k in range(K):
        beta[L - 1, k] = eE[k] * inv
    for t in range(L - 1, 0, -1):
        inv = 1.0 / lc[t]
        bt = beta[t]
        ut = eU[t]
        for b in range(K):
            w[b] = ut[b] * bt[b] * inv
        prev = alpha[t - 1]
        for a in range(K):
            f = prev[a]
            xa = xi[a]
            for b in range(K):
                xa[b] += f * w[b]
        nb = beta[t - 1]
        for a in range(K):  # nb[a] = <eT[a, :], w> (contiguous rows)
            ra = eT[a]
            v = 0.0
            for b in range(K):
                v += ra[b] * w[b]
            nb[a] = v
    # -- write marginals
    for t in range(L):
        u = base + t * K
        at = alpha[t]
        bt = beta[t]
        for k in range(K):
            mu[u + k] = at[k] * bt[k]
    for a in range(K):
        row = tr + a * K
        for b in range(K):
            mu[row + b] = xi[a, b] * eT[a, b]
    for k in range(K):
        mu[st + k] = mu[base + k]
        mu[en + k] = mu[base + (L - 1) * K + k]
    return True, lz


@njit(cache=True, nogil=True)
def _forward_backward_impl(theta, part_off, tok_off, K, force_logspace):
    """Forward-backward of a batch; returns ``(mu, logZ, n_logspace)`` with
    ``n_logspace`` the number of sequences computed in log space."""
    n = tok_off.shape[0] - 1
    mu = np.zeros(part_off[n])
    logZ = np.empty(n)
    work = _fb_scaled_work(max_length(tok_off), K)
    n_log = 0
    for i in range(n):
        base = part_off[i]
        L = tok_off[i + 1] - tok_off[i]
        ok = False
        if not force_logspace:
            ok, lz = _fb_scaled_seq(theta, base, L, K, mu, work)
        if not ok:
            lz = _fb_logspace_seq(theta, base, L, K, mu)
            n_log += 1
        logZ[i] = lz
    return mu, logZ, n_log


@njit(cache=True, nogil=True)
def forward_backward_batch(theta, part_off, tok_off, K):
    """CRF marginals and log-partition by forward-backward.

    Returns ``mu`` (flat, block layout: unary marginals, *expected*
    transition counts, start and end marginals) and ``logZ`` of shape
    ``(n,)``.  Scaled-probability recursions (:func:`_fb_scaled_seq`,
    ``O(L K + K^2)`` exponentials and ``O(L K^2)`` multiply-adds per
    sequence); a sequence whose score range is too large for them, or whose
    normalisers underflow, is recomputed in log space
    (:func:`_fb_logspace_seq`), so huge magnitudes stay exact and NaN-free.
    """
    mu, logZ, _ = _forward_backward_impl(theta, part_off, tok_off, K, False)
    return mu, logZ


@njit(cache=True, nogil=True)
def forward_backward_logspace_batch(theta, part_off, tok_off, K):
    """Same as :func:`forward_backward_batch`, every sequence in log space
    (reference implementation, ``O(L K^2)`` exponentials per sequence)."""
    mu, logZ, _ = _forward_backward_impl(theta, part_off, tok_off, K, True)
    return mu, logZ


@njit(cache=True, nogil=True)
def max_marginals_batch(theta, part_off, tok_off, K):
    """``M[tok, k]`` = best score of a sequence with tag ``k`` at that token,
    shape ``(N_tok, K)``: forward plus backward Viterbi tables."""
    n = tok_off.shape[0] - 1
    M = np.empty((tok_off[n], K))
    for i in range(n):
        L = tok_off[i + 1] - tok_off[i]
        delta, _ = _forward_max(theta, part_off[i], L, K)
        gamma, _ = _backward_max(theta, part_off[i], L, K)
        o = tok_off[i]
        for t in range(L):
            for k in range(K):
                M[o + t, k] = delta[t, k] + gamma[t, k]
    return M


@njit_inner()
def _backward_max_into(theta, base, L, K, gamma, nxt):
    """The table ``gamma`` of :func:`_backward_max` (flat, ``gamma[t K +
    k]``) into a workspace, without the successor pointers: a reduction
    with no branch (the pointers of one path are recovered by
    :func:`_next_tag`, the same comparisons), 1.5x faster."""
    tr = base + L * K
    en = tr + K * K + K
    o = (L - 1) * K
    for k in range(K):
        gamma[o + k] = theta[en + k]
    for t in range(L - 2, -1, -1):
        u = base + (t + 1) * K
        o = t * K
        for b in range(K):
            nxt[b] = theta[u + b] + gamma[o + K + b]
        for a in range(K):
            row = tr + a * K
            best = theta[row] + nxt[0]
            for b in range(1, K):
                v = theta[row + b] + nxt[b]
                best = v if v > best else best
            gamma[o + a] = best


@njit(cache=True, nogil=True, inline="always")
def _next_tag(theta, base, L, K, gamma, t, a):
    """The successor pointer of :func:`_backward_max` at ``(t, a)``: the best
    tag at ``t + 1`` after ``a`` (lowest on ties), from ``gamma``."""
    row = base + L * K + a * K
    u = base + (t + 1) * K
    o = (t + 1) * K
    best = theta[row] + (theta[u] + gamma[o])
    arg = 0
    for b in range(1, K):
        v = theta[row + b] + (theta[u + b] + gamma[o + b])
        if v > best:
            best = v
            arg = b
    return arg


@njit_inner()
def _second_best_into(theta, base, L, K, y, o, y2, o2, gamma, nxt):
    """Write the best tag sequence of the block at ``base`` different from
    ``y[o:o + L]`` into ``y2[o2:o2 + L]`` (``K >= 2``; see
    :func:`second_best_batch`), with the workspaces ``gamma`` (``L K``
    floats) and ``nxt`` (``K``)."""
    tr = base + L * K
    st = tr + K * K
    _backward_max_into(theta, base, L, K, gamma, nxt)
    best = NEG_INF
    bj = -1
    bk = -1
    prefix = 0.0  # score of y[:j] (start and transitions inside it)
    for j in range(L):
        yj = y[o + j]
        u = base + j * K
        for k in range(K):
            if k == yj:
                continue
            if j == 0:
                v = theta[st + k]
            else:
                v = prefix + theta[tr + y[o + j - 1] * K + k]
            v += theta[u + k] + gamma[j * K + k]
            if v > best or bj < 0:
                best = v
                bj = j
                bk = k
        if j == 0:
            prefix = theta[st + yj] + theta[u + yj]
        else:
            prefix += theta[tr + y[o + j - 1] * K + yj] + theta[u + yj]
    for t in range(bj):
        y2[o2 + t] = y[o + t]
    k = bk
    y2[o2 + bj] = k
    for t in range(bj, L - 1):
        k = _next_tag(theta, base, L, K, gamma, t, k)
        y2[o2 + t + 1] = k


@njit(cache=True, nogil=True)
def second_best_batch(theta, y, part_off, tok_off, K):
    """Best tag sequence different from the given ``y`` (not necessarily MAP).

    Every ``y' != y`` has a first position ``j`` with ``y'_j = k != y_j``;
    the best such ``y'`` is ``y_{<j}``, then ``k``, then the best suffix
    (backward Viterbi).  Maximising over ``(j, k)`` is ``O(L K)`` on top of
    the ``O(L K^2)`` backward pass.  Ties: smallest ``j``, then smallest
    ``k``.  Returns ``(y2, exists)``; with ``K == 1`` no other sequence
    exists, ``exists[i]`` is False and ``y2`` copies ``y``.
    """
    n = tok_off.shape[0] - 1
    y2 = y.copy()
    exists = np.zeros(n, dtype=np.bool_)
    if K < 2:
        return y2, exists
    Lmax = 0
    for i in range(n):
        Lmax = max(Lmax, tok_off[i + 1] - tok_off[i])
    gamma = np.empty(Lmax * K)
    nxt = np.empty(K)
    for i in range(n):
        o = tok_off[i]
        _second_best_into(theta, part_off[i], tok_off[i + 1] - o, K, y, o, y2, o, gamma, nxt)
        exists[i] = True
    return y2, exists


@njit_inner()
def _approx_slack_eval(theta, theta_or, base, L, K, y, o, lam, aug, cand, gamma, nxt):
    """One evaluation of the approximate-slack search on the sequence at
    ``base`` / ``o``: the best labeling other than ``y`` at the cost-augmented
    scores ``theta_or + lam [k != y_t]`` into ``cand``; returns its score
    under ``theta`` and its Hamming cost."""
    for t in range(L):
        for k in range(K):
            aug[t * K + k] = theta_or[base + t * K + k] + (lam if k != y[o + t] else 0.0)
    zero = np.int64(0)   # a literal 0 would compile the callees once more
    _second_best_into(aug, zero, L, K, y, o, cand, zero, gamma, nxt)
    s = _score_seq(theta, base, L, K, cand, zero)
    Lc = 0.0
    for t in range(L):
        if cand[t] != y[o + t]:
            Lc += 1.0
    return s, Lc


@njit(cache=True, nogil=True)
def approx_slack_batch(theta, theta_or, y, part_off, tok_off, K, n_search, epsilon):
    """The approximate slack-scaling violator of every sequence (Sarawagi &
    Gupta 2008, Sec. 3) with the Hamming cost, in one call.

    The search of :meth:`structlearn.structures.base.Structure.approx_slack_search`
    (the reference, written with the structure's batched oracles), run per
    sequence by the driver of :mod:`structlearn.kernels.slack_search`:
    ``F(lambda)`` is evaluated by the best sequence different from ``y`` at
    the cost-augmented scores ``theta_or + lambda [k != y_t]``
    (``theta_or``: the scores the oracles see, ``theta`` plus the
    constraints' offsets), each candidate scored with ``theta``; the
    interval is ``[epsilon / L, lambda_u]`` (``L`` the length, the largest
    cost; the smallest cost gap is 1, exact), searched by the driver's
    breakpoint search with at most ``n_search`` evaluations after the two
    ends.  Returns per token the
    tags of the labeling with the largest slack hinge met (``y`` where none
    is positive), and the number of oracle evaluations made.
    """
    n = tok_off.shape[0] - 1
    best_y = y.copy()
    if K < 2:
        return best_y, 0.0
    Lmax_all = 0
    for i in range(n):
        Lmax_all = max(Lmax_all, tok_off[i + 1] - tok_off[i])
    cand = np.empty(Lmax_all, dtype=np.int64)
    gamma = np.empty(Lmax_all * K)
    nxt = np.empty(K)
    st = np.zeros(SEARCH_STATE)
    for i in range(n):
        base = part_off[i]
        o = tok_off[i]
        L = tok_off[i + 1] - o
        p = part_off[i + 1] - base
        aug = theta_or[base:base + p].copy()
        s_true = _score_seq(theta, base, L, K, y, o)
        L_max = float(L)
        search_init(st, s_true, epsilon / L_max, L_max, 1.0, 1.0, n_search)
        while True:
            lam = search_next(st)
            if lam < 0.0:
                break
            s, Lc = _approx_slack_eval(theta, theta_or, base, L, K, y, o, lam, aug, cand,
                                       gamma, nxt)
            if search_tell(st, s, Lc):
                for t in range(L):
                    best_y[o + t] = cand[t]
    return best_y, search_calls(st)


@njit(cache=True, nogil=True)
def poslearn_batch(theta, y, part_off, tok_off, K):
    """PosLearn loss (Sarawagi & Gupta 2008, Sec. 4) with Hamming cost.

    For each position ``t`` the violator ``y^t`` is the best sequence with
    ``y^t_t != y_t`` (max-marginals; lowest tag on ties), ``margin_t = 1 -
    s(y) + s(y^t)``.  Returns ``value[i] = sum_t max(margin_t, 0)`` and the
    flat gradient ``sum_{t: margin_t > 0} phi(y^t) - phi(y)``.

    The violators are paths in the forward and backward back-pointer trees,
    so their summed encodings are obtained by pushing path counts through the
    two trees: ``O(L K^2)`` per sequence in total rather than ``O(L^2)``
    backtracking.
    """
    n = tok_off.shape[0] - 1
    value = np.zeros(n)
    grad = np.zeros(part_off[n])
    if K < 2:
        return value, grad
    for i in range(n):
        base = part_off[i]
        o = tok_off[i]
        L = tok_off[i + 1] - o
        tr = base + L * K
        st = tr + K * K
        en = st + K
        delta, bpf = _forward_max(theta, base, L, K)
        gamma, bpb = _backward_max(theta, base, L, K)
        s_y = _score_seq(theta, base, L, K, y, o)
        kv = np.full(L, -1, dtype=np.int64)
        nv = 0
        total = 0.0
        for t in range(L):
            yt = y[o + t]
            best = NEG_INF
            bk = -1
            for k in range(K):
                if k == yt:
                    continue
                v = delta[t, k] + gamma[t, k]
                if v > best or bk < 0:
                    best = v
                    bk = k
            margin = 1.0 - s_y + best
            if margin > 0.0:
                kv[t] = bk
                nv += 1
                total += margin
        value[i] = total
        if nv == 0:
            continue
        # cntF[s, j]: violators t >= s whose prefix passes (s, j);
        # cntB[s, j]: violators t <= s whose suffix passes (s, j).
        cntF = np.zeros((L, K))
        cntB = np.zeros((L, K))
        for s in range(L - 1, -1, -1):
            if kv[s] >= 0:
                cntF[s, kv[s]] += 1.0
            if s >= 1:
                for b in range(K):
                    c = cntF[s, b]
                    if c != 0.0:
                        cntF[s - 1, bpf[s, b]] += c
        for s in range(L):
            if kv[s] >= 0:
                cntB[s, kv[s]] += 1.0
            if s <= L - 2:
                for a in range(K):
                    c = cntB[s, a]
                    if c != 0.0:
                        cntB[s + 1, bpb[s, a]] += c
        for s in range(L):
            u = base + s * K
            for j in range(K):
                c = cntF[s, j] + cntB[s, j]
                if kv[s] == j:
                    c -= 1.0
                grad[u + j] += c
        for s in range(1, L):
            for b in range(K):
                c = cntF[s, b]
                if c != 0.0:
                    grad[tr + bpf[s, b] * K + b] += c
            for a in range(K):
                c = cntB[s - 1, a]
                if c != 0.0:
                    grad[tr + a * K + bpb[s - 1, a]] += c
        for j in range(K):
            grad[st + j] += grad[base + j]
            grad[en + j] += grad[base + (L - 1) * K + j]
        _add_encoding(y, o, L, K, grad, base, -float(nv))
    return value, grad


@njit(cache=True, nogil=True)
def slack_violator_batch(theta, y, part_off, tok_off, K):
    """Exact slack-scaling violator for Hamming cost ``H``.

    ``argmax_{y'} H(y', y) (1 - s(y) + s(y'))`` by a Viterbi over (position,
    number of errors, tag): ``best[e]`` is the best score with exactly ``e``
    errors, then ``e`` maximising ``e (1 - s(y) + best[e])`` is chosen
    (smallest ``e`` on ties) and its sequence backtracked.  Returns ``y``
    itself where no ``e >= 1`` gives a positive value.  ``O(L^2 K^2)`` time
    (about ``L^2 K^2 / 2`` max-plus updates) and one ``L_max (L_max + 1) K``
    work table for the batch (back-pointers are recomputed from the table
    while backtracking).
    """
    n = tok_off.shape[0] - 1
    y_hat = y.copy()
    if K < 2:
        return y_hat
    Lmax = max_length(tok_off)
    F = np.empty((Lmax, Lmax + 1, K))
    tmp = np.empty(K)
    for i in range(n):
        base = part_off[i]
        o = tok_off[i]
        L = tok_off[i + 1] - o
        tr = base + L * K
        st = tr + K * K
        en = st + K
        s_y = _score_seq(theta, base, L, K, y, o)
        # F[t, e, k]: best prefix score with tag k at t and e errors in 0..t;
        # only e <= t + 1 is ever written or read (the rest of the shared
        # work array holds stale values).  Every (t, e, k) has exactly one
        # predecessor error count (e if k == y_t, else e - 1), so each row
        # F[t - 1, ep] is relaxed into one buffer by a branch-free max-plus
        # product and scattered into F[t, ep] / F[t, ep + 1].
        y0 = y[o]
        for e in range(2):
            for k in range(K):
                F[0, e, k] = NEG_INF
        for k in range(K):
            F[0, 0 if k == y0 else 1, k] = theta[st + k] + theta[base + k]
        T = theta[tr:st].reshape((K, K))
        for t in range(1, L):
            yt = y[o + t]
            ut = theta[base + t * K:base + (t + 1) * K]
            for ep in range(t + 1):
                prev = F[t - 1, ep]
                for k in range(K):
                    tmp[k] = NEG_INF
                for a in range(K):
                    f = prev[a]
                    if f == NEG_INF:
                        continue
                    ra = T[a]
                    for k in range(K):
                        v = f + ra[k]
                        m = tmp[k]
                        tmp[k] = v if v > m else m
                nxt = F[t, ep + 1]
                for k in range(K):
                    nxt[k] = tmp[k] + ut[k]
                F[t, ep, yt] = tmp[yt] + ut[yt]
            # e = 0 only with k == y_t; e = t + 1 only with k != y_t
            for k in range(K):
                if k != yt:
                    F[t, 0, k] = NEG_INF
            F[t, t + 1, yt] = NEG_INF
        best_val = 0.0
        best_e = -1
        best_k = -1
        for e in range(1, L + 1):
            bs = NEG_INF
            bk = -1
            for k in range(K):
                v = F[L - 1, e, k]
                if v == NEG_INF:
                    continue
                v += theta[en + k]
                if v > bs:
                    bs = v
                    bk = k
            if bk < 0:
                continue
            val = e * (1.0 - s_y + bs)
            if val > best_val:
                best_val = val
                best_e = e
                best_k = bk
        if best_e < 0:
            continue
        e = best_e
        k = best_k
        for t in range(L - 1, 0, -1):
            y_hat[o + t] = k
            ep = e if k == y[o + t] else e - 1
            bv = NEG_INF
            ba = 0
            for a in range(K):
                v = F[t - 1, ep, a] + theta[tr + a * K + k]
                if v > bv:
                    bv = v
                    ba = a
            e = ep
            k = ba
        y_hat[o] = k
    return y_hat


# ------------------------------------------------------------- constraints
@njit(cache=True, nogil=True)
def chain_offsets(part_off, tok_off, K, trans_pen, start_pen, end_pen, codes, sets):
    """Flat part offsets that restrict a batch's chains to allowed outputs.

    ``trans_pen`` (K, K), ``start_pen`` and ``end_pen`` (K,) are copied into
    every block's transition, start and end parts (0 = allowed,
    :data:`FORBIDDEN` = not).  ``codes`` (flat per token, or empty for no
    unary restriction): a tag ``>= 0`` forbids every other tag at that
    token; ``-1 - s`` allows the tags of row ``s`` of the boolean ``sets``
    (n_sets, K).  Adding the result to part scores gives the scores of the
    chain restricted to the sequences that use no forbidden part.
    """
    n = tok_off.shape[0] - 1
    out = np.zeros(part_off[n])
    use_codes = codes.shape[0] > 0
    for i in range(n):
        base = part_off[i]
        o = tok_off[i]
        L = tok_off[i + 1] - o
        if use_codes:
            for t in range(L):
                c = codes[o + t]
                u = base + t * K
                for k in range(K):
                    ok = (k == c) if c >= 0 else sets[-1 - c, k]
                    if not ok:
                        out[u + k] = FORBIDDEN
        tr = base + L * K
        for a in range(K):
            for b in range(K):
                out[tr + a * K + b] = trans_pen[a, b]
        st = tr + K * K
        for k in range(K):
            out[st + k] = start_pen[k]
            out[st + K + k] = end_pen[k]
    return out


# ---------------------------------------------------------- SparseMAP oracle
@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def chain_map(eta, params, out):
    """Viterbi MAP oracle for one chain block, ``params = [L, K]``.

    Writes ``phi(argmax)`` (same tie-breaking as :func:`viterbi_batch`) into
    ``out`` after zeroing it.
    """
    L = int(params[0])
    K = int(params[1])
    y = np.empty(L, dtype=np.int64)
    zero = np.int64(0)   # a literal 0 would compile the callees once more
    _viterbi_into(eta, zero, L, K, y, zero)
    out[:] = 0.0
    _add_encoding(y, zero, L, K, out, zero, 1.0)


def chain_block_params(tok_off, K):
    """Per-sequence ``[L_i, K]`` parameters for :func:`chain_map`, as
    :func:`~structlearn.kernels.sparsemap.block_params` lays them out."""
    return block_params(np.asarray(tok_off, dtype=np.int64), np.array([float(K)]))


@njit_on_first_call(ENCODE_SIGNATURE, cache=True)
def chain_encode_codes(codes, params, out):
    """Support decoder inverse of chains (see
    :func:`structlearn.kernels.sparsemap.sparsemap_active_set_warm_ragged`):
    the vertex of the tag sequence ``codes``, ``params = [L, K]``."""
    out[:] = 0.0
    zero = np.int64(0)
    _add_encoding(codes, zero, int(params[0]), int(params[1]), out, zero, 1.0)
