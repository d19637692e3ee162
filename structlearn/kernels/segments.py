"""Semi-Markov (segmentation) kernels on a flat, ragged batch layout.

A batch holds ``n`` sequences of lengths ``L_i >= 1``; a *segmentation* of a
sequence cuts it into segments of ``1..M`` consecutive tokens (``M`` the
maximum segment length), each with one of ``K`` labels (Sarawagi & Cohen
2004).  Its score adds one score per segment, the transition scores between
consecutive segments' labels and start / end scores:

* ``tok_off`` (int64, ``n + 1``): token offsets, as for chains;
* ``Mk`` (int64, ``K``): the longest segment of each label (``M = max Mk``
  sizes the layout; a segment of label ``k`` longer than ``Mk[k]`` is not
  part of any segmentation, like one that would start before the first
  token);
* a segmentation is one int64 *code* per token: ``2 k + 1`` where the token
  starts a segment of label ``k``, ``2 k`` where it continues one (so the
  first token's code is odd, and a segment is a maximal run that starts at
  an odd code and continues with even codes of the same label);
* ``part_off`` (int64, ``n + 1``): part offsets; the block of sequence ``i``
  has ``L M K + K K + 2 K`` entries.  Inside the block starting at ``base``:

  - ``seg[e, l, k]`` (the segment of label ``k`` and length ``l + 1``
    ending at token ``e``) at ``base + (e M + l) K + k`` -- the entries with
    ``l > e`` or ``l >= Mk[k]`` stand for no segment and are never part of a segmentation
    (their scores are ignored, their marginals and encodings are 0);
  - ``trans[a, b]`` at ``base + L M K + a K + b``;
  - ``start[k]`` at ``base + L M K + K K + k``;
  - ``end[k]`` at ``base + L M K + K K + K + k``.

The vertex ``phi(y)`` uses the same layout (segment indicators, transition
counts, start and end one-hots).  The segment parts lead every block, so
``n_unary = L M K`` is the SparseMAP convention of
:mod:`structlearn.kernels.sparsemap` (only they are penalised).

Recursions (``O(L M K + L K^2)`` per sequence): ``V[e, k]``, the best (or,
in log space, the total) score of the segmentations of tokens ``0..e``
whose last segment ends at ``e`` with label ``k``, is ``max_l seg[e, l, k]
+ P[e - l, k]``, with ``P[s, k] = max_a V[s - 1, a] + trans[a, k]`` the
score of entering a segment of label ``k`` at token ``s`` (``start[k]``
for ``s = 0``).  Ties: strict ``>`` in
increasing index order, so the shortest last segment and then the lowest
label win.  Scores are finite; the log-space recursions shift every sum
by its largest term (see :func:`_marginals_into`).
"""

import numpy as np
from numba import njit

from ._math import fast_exp, logaddexp
from ._lazy import njit_inner, njit_on_first_call
from .sparsemap import ORACLE_SIGNATURE

NEG_INF = -np.inf


@njit(cache=True, nogil=True)
def segment_part_offsets(tok_off, K, M):
    """Part offsets of a batch: block ``i`` has ``L_i M K + K K + 2 K`` parts."""
    n = tok_off.shape[0] - 1
    off = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        off[i + 1] = off[i] + (tok_off[i + 1] - tok_off[i]) * M * K + K * K + 2 * K
    return off


@njit_inner(inline="always")
def _forward(theta, base, L, K, M, Mk):
    """The max-sum forward recursion of one sequence: ``V`` (see the module
    docstring), ``P[s, k]`` -- the best score of entering a segment of
    label ``k`` at token ``s``: ``start[k]`` for ``s = 0``, else the max
    over the previous label ``a`` of ``V[s - 1, a] + trans[a, k]`` -- and
    the back-pointers (length index of the last segment, previous label).
    ``O(L K^2 + L M K)``."""
    tr = base + L * M * K
    V = np.full((L, K), NEG_INF)
    P = np.full((L, K), NEG_INF)
    bl = np.zeros((L, K), dtype=np.int64)
    bk = np.zeros((L, K), dtype=np.int64)   # previous label of a segment starting at s
    for e in range(L):
        # segments starting at e: V[0..e-1] is complete
        for k in range(K):
            if e == 0:
                P[0, k] = theta[tr + K * K + k]
                continue
            best = NEG_INF
            for a in range(K):
                v = V[e - 1, a] + theta[tr + a * K + k]
                if v > best:
                    best = v
                    bk[e, k] = a
            P[e, k] = best
        for k in range(K):
            best = NEG_INF
            for ln in range(min(Mk[k], e + 1)):
                v = theta[base + (e * M + ln) * K + k] + P[e - ln, k]
                if v > best:
                    best = v
                    bl[e, k] = ln
            V[e, k] = best
    return V, P, bl, bk


@njit_inner()
def _exp_trans(theta, tr, K):
    """``exp(trans - max trans)`` and the max: the transition factors of the
    sum-product recursions."""
    mt = NEG_INF
    for j in range(K * K):
        mt = max(mt, theta[tr + j])
    et = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            et[a, b] = fast_exp(theta[tr + a * K + b] - mt)
    return et, mt


@njit_inner()
def _log_enter(row, et, mt, theta, tr, K, forward, out):
    """``out[k] = log sum_a exp(row[a] + trans[a, k])`` (``forward``) or
    ``log sum_b exp(trans[k, b] + row[b])``, as ``K`` products with the
    precomputed transition factors after shifting ``row`` by its max.
    Where that sum underflows (scores spread over more than ~640 nats) the
    entry is recomputed exactly with pairwise ``logaddexp``."""
    m = NEG_INF
    for a in range(K):
        m = max(m, row[a])
    er = np.empty(K)
    for a in range(K):
        er[a] = fast_exp(row[a] - m)
    for k in range(K):
        acc = 0.0
        for a in range(K):
            acc += er[a] * (et[a, k] if forward else et[k, a])
        if acc > 1e-280:
            out[k] = m + mt + np.log(acc)
            continue
        v = NEG_INF
        for a in range(K):
            v = logaddexp(v, row[a] + (theta[tr + a * K + k] if forward
                                       else theta[tr + k * K + a]))
        out[k] = v


@njit_inner()
def _viterbi_into(theta, base, L, K, M, Mk, y, yoff):
    V, _, bl, bk = _forward(theta, base, L, K, M, Mk)
    en = base + L * M * K + K * K + K
    best = NEG_INF
    k = 0
    for a in range(K):
        v = V[L - 1, a] + theta[en + a]
        if v > best:
            best = v
            k = a
    e = L - 1
    while e >= 0:
        ln = bl[e, k]
        s = e - ln
        y[yoff + s] = 2 * k + 1
        for t in range(s + 1, e + 1):
            y[yoff + t] = 2 * k
        k_prev = bk[s, k]
        e = s - 1
        k = k_prev
    return best


@njit_inner()
def _segment_at(y, yoff, L, t):
    """``(end, label)`` of the segment starting at token ``t``."""
    k = y[yoff + t] // 2
    e = t
    while e + 1 < L and y[yoff + e + 1] % 2 == 0:
        e += 1
    return e, k


@njit_inner()
def _add_encoding(y, yoff, L, K, M, out, base, w):
    tr = base + L * M * K
    t = np.int64(0)
    prev = -1
    while t < L:
        e, k = _segment_at(y, yoff, L, t)
        out[base + (e * M + (e - t)) * K + k] += w
        if prev < 0:
            out[tr + K * K + k] += w
        else:
            out[tr + prev * K + k] += w
        prev = k
        t = e + 1
    out[tr + K * K + K + prev] += w


@njit_inner()
def _score(theta, base, L, K, M, y, yoff):
    tr = base + L * M * K
    total = 0.0
    t = np.int64(0)
    prev = -1
    while t < L:
        e, k = _segment_at(y, yoff, L, t)
        total += theta[base + (e * M + (e - t)) * K + k]
        total += theta[tr + K * K + k] if prev < 0 else theta[tr + prev * K + k]
        prev = k
        t = e + 1
    return total + theta[tr + K * K + K + prev]


@njit_inner()
def _marginals_into(theta, base, L, K, M, Mk, mu):
    """Log-partition of one sequence; its marginals (segments, transition
    counts, start, end) written into ``mu[base:...]``.

    Sum-product forward (``A``, ``P``: the log-space ``V`` and ``P`` of the
    module docstring) and backward (``B[e, k]``: the completions after a
    segment of label ``k`` ending at ``e``; ``C[s, k]``: a segment of label
    ``k`` starting at ``s`` and its completions) recursions.  Sums over
    segment lengths are shifted by their max (one exponential per term,
    one logarithm per sum); sums over labels multiply precomputed
    transition factors (:func:`_log_enter`), so that the ``L K^2`` terms
    cost no transcendental function."""
    tr = base + L * M * K
    st = tr + K * K
    en = st + K
    et, mt = _exp_trans(theta, tr, K)
    A = np.full((L, K), NEG_INF)
    P = np.empty((L, K))
    v = np.empty(M)
    for e in range(L):
        if e == 0:
            for k in range(K):
                P[0, k] = theta[st + k]
        else:
            # np.bool_ / np.int64 constants: a literal would compile a
            # specialisation of the callee per value (Numba's literal dispatch)
            _log_enter(A[e - 1], et, mt, theta, tr, K, np.bool_(True), P[e])
        for k in range(K):
            n_l = min(Mk[k], e + 1)
            m = NEG_INF
            for ln in range(n_l):
                v[ln] = theta[base + (e * M + ln) * K + k] + P[e - ln, k]
                m = max(m, v[ln])
            acc = 0.0
            for ln in range(n_l):
                acc += fast_exp(v[ln] - m)
            A[e, k] = m + np.log(acc)
    logZ = NEG_INF
    for k in range(K):
        logZ = logaddexp(logZ, A[L - 1, k] + theta[en + k])
    B = np.empty((L, K))
    C = np.full((L + 1, K), NEG_INF)
    for s in range(L - 1, -1, -1):
        if s == L - 1:
            for k in range(K):
                B[s, k] = theta[en + k]
        else:
            _log_enter(C[s + 1], et, mt, theta, tr, K, np.bool_(False), B[s])
        for k in range(K):
            n_l = min(Mk[k], L - s)
            m = NEG_INF
            for ln in range(n_l):
                v[ln] = theta[base + ((s + ln) * M + ln) * K + k] + B[s + ln, k]
                m = max(m, v[ln])
            acc = 0.0
            for ln in range(n_l):
                acc += fast_exp(v[ln] - m)
            C[s, k] = m + np.log(acc)
    for e in range(L):
        for ln in range(min(M, e + 1)):
            s = e - ln
            for k in range(K):
                if ln < Mk[k]:
                    p = base + (e * M + ln) * K + k
                    mu[p] = fast_exp(P[s, k] + theta[p] + B[e, k] - logZ)
    # transition counts: sum_j exp(A[j, a] + trans[a, b] + C[j + 1, b] - logZ),
    # as products of shifted factors where the shift is safe (a product
    # that underflows then stands for less than 1e-290), else exactly
    ea = np.empty(K)
    eb = np.empty(K)
    T = np.zeros((K, K))
    for j in range(L - 1):
        mA = NEG_INF
        mC = NEG_INF
        for a in range(K):
            mA = max(mA, A[j, a])
            mC = max(mC, C[j + 1, a])
        shift = mA + mC + mt - logZ
        if shift < 30.0:
            f = fast_exp(shift)
            for a in range(K):
                ea[a] = fast_exp(A[j, a] - mA) * f
                eb[a] = fast_exp(C[j + 1, a] - mC)
            for a in range(K):
                for b in range(K):
                    T[a, b] += ea[a] * et[a, b] * eb[b]
        else:
            for a in range(K):
                for b in range(K):
                    T[a, b] += fast_exp(A[j, a] + theta[tr + a * K + b] + C[j + 1, b] - logZ)
    for a in range(K):
        for b in range(K):
            mu[tr + a * K + b] = T[a, b]
    for k in range(K):
        mu[st + k] = fast_exp(theta[st + k] + C[0, k] - logZ)
        mu[en + k] = fast_exp(A[L - 1, k] + theta[en + k] - logZ)
    return logZ


# ------------------------------------------------------------- batch kernels
@njit(cache=True, nogil=True)
def segment_encode_batch(y, part_off, tok_off, K, M):
    """Flat encodings ``phi(y)`` of a batch of segmentations."""
    out = np.zeros(part_off[-1])
    for i in range(tok_off.shape[0] - 1):
        _add_encoding(y, tok_off[i], tok_off[i + 1] - tok_off[i], K, M, out, part_off[i], 1.0)
    return out


@njit(cache=True, nogil=True)
def segment_score_batch(theta, y, part_off, tok_off, K, M):
    """``<theta_i, phi(y_i)>`` per sequence."""
    n = tok_off.shape[0] - 1
    out = np.empty(n)
    for i in range(n):
        out[i] = _score(theta, part_off[i], tok_off[i + 1] - tok_off[i], K, M, y, tok_off[i])
    return out


@njit(cache=True, nogil=True)
def segment_viterbi_batch(theta, part_off, tok_off, K, M, Mk):
    """The best segmentation of every sequence (flat codes)."""
    n = tok_off.shape[0] - 1
    y = np.empty(tok_off[n], dtype=np.int64)
    for i in range(n):
        _viterbi_into(theta, part_off[i], tok_off[i + 1] - tok_off[i], K, M, Mk, y, tok_off[i])
    return y


@njit(cache=True, nogil=True)
def segment_marginals_batch(theta, part_off, tok_off, K, M, Mk):
    """Marginals (flat, the layout of ``theta``) and log-partition of every
    sequence."""
    n = tok_off.shape[0] - 1
    mu = np.zeros(part_off[n])
    logZ = np.empty(n)
    for i in range(n):
        logZ[i] = _marginals_into(theta, part_off[i], tok_off[i + 1] - tok_off[i], K, M, Mk,
                                  mu)
    return mu, logZ


@njit(cache=True, nogil=True)
def check_segment_codes(y, tok_off, K, Mk):
    """First invalid token of a batch of segmentation codes, as ``(sequence,
    token, reason)`` with reason 1: label out of range, 2: the first token
    does not start a segment, 3: a continuation changes the label, 4: a
    segment longer than its label's ``Mk``; ``(-1, -1, 0)`` when every
    code is valid."""
    for i in range(tok_off.shape[0] - 1):
        o = tok_off[i]
        L = tok_off[i + 1] - o
        run = 0
        for t in range(L):
            c = y[o + t]
            if c < 0 or c // 2 >= K:
                return i, t, 1
            if c % 2 == 1:
                run = 1
            elif t == 0:
                return i, t, 2
            elif c // 2 != y[o + t - 1] // 2:
                return i, t, 3
            else:
                run += 1
            if run > Mk[c // 2]:
                return i, t, 4
    return -1, -1, 0


@njit(cache=True, nogil=True)
def segment_decode_batch(phi, part_off, tok_off, K, M):
    """Segmentation codes of vertices ``phi`` (their segment indicators; an
    entry above 1/2 marks a segment)."""
    n = tok_off.shape[0] - 1
    y = np.zeros(tok_off[n], dtype=np.int64)
    for i in range(n):
        o = tok_off[i]
        L = tok_off[i + 1] - o
        base = part_off[i]
        for e in range(L):
            for ln in range(min(M, e + 1)):
                for k in range(K):
                    if phi[base + (e * M + ln) * K + k] > 0.5:
                        s = e - ln
                        y[o + s] = 2 * k + 1
                        for t in range(s + 1, e + 1):
                            y[o + t] = 2 * k
    return y


@njit(cache=True, nogil=True)
def segment_cost_batch(y, part_off, tok_off, K, M, precision, recall, mismatch):
    """The cost vector of every sequence's gold segmentation ``y`` (Sarawagi
    & Gupta 2008, Sec. 4.3.2): a predicted segment ``(s, e, k)`` costs
    ``mismatch[k', k]`` when the gold has the span ``(s, e)`` with label
    ``k'``, else ``precision[k]`` plus ``recall[k']`` for every gold segment
    ``(s', e', k')`` that starts inside it (``s <= s' <= e``).  The
    segmentation's cost is the sum over its segments, ``<phi(y'),
    cost>``; transition, start and end parts cost nothing."""
    cost = np.zeros(part_off[-1])
    for i in range(tok_off.shape[0] - 1):
        o = tok_off[i]
        L = tok_off[i + 1] - o
        base = part_off[i]
        gold_end = np.full(L, -1, dtype=np.int64)
        gold_lab = np.full(L, -1, dtype=np.int64)
        rsum = np.zeros(L + 1)  # prefix sums of the recall penalties of gold starts
        t = np.int64(0)
        while t < L:
            e, k = _segment_at(y, o, L, t)
            gold_end[t] = e
            gold_lab[t] = k
            t = e + 1
        for t in range(L):
            rsum[t + 1] = rsum[t] + (recall[gold_lab[t]] if gold_lab[t] >= 0 else 0.0)
        for e in range(L):
            for ln in range(min(M, e + 1)):
                s = e - ln
                for k in range(K):
                    p = base + (e * M + ln) * K + k
                    if gold_end[s] == e:
                        cost[p] = mismatch[gold_lab[s], k]
                    else:
                        cost[p] = precision[k] + rsum[e + 1] - rsum[s]
    return cost


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def segment_map(eta, params, out):
    """MAP oracle of one sequence for the active set, ``params = [L, K, M,
    Mk[0], ..., Mk[K - 1]]``: writes ``phi(argmax)`` (the tie-breaking of
    :func:`segment_viterbi_batch`)."""
    L = int(params[0])
    K = int(params[1])
    M = int(params[2])
    Mk = np.empty(K, dtype=np.int64)
    for k in range(K):
        Mk[k] = int(params[3 + k])
    y = np.empty(L, dtype=np.int64)
    zero = np.int64(0)   # a literal 0 would compile the callees once more
    _viterbi_into(eta, zero, L, K, M, Mk, y, zero)
    out[:] = 0.0
    _add_encoding(y, zero, L, K, M, out, zero, 1.0)
