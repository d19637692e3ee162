"""Loss-augmented oracles of semi-Markov chains: top-2, the exact
slack-scaling violator and PosLearn's per-span violators.

The layout, codes and tie-breaking are those of
:mod:`structlearn.kernels.segments`.  The task cost is a part vector
``cost`` over the segment parts (Sarawagi & Gupta 2008, Sec. 4.3.2; see
:func:`~structlearn.kernels.segments.segment_cost_batch`); a
segmentation's cost is the sum of its segments' costs.
"""

import numpy as np
from numba import njit

from .segments import _add_encoding, _forward, _score

NEG_INF = -np.inf


@njit(cache=True, nogil=True)
def _backward_max(theta, base, L, K, M, Mk):
    """Backward max-sum recursion of one sequence.

    ``B[e, k]``: the best score of the completions after a segment of label
    ``k`` ending at token ``e`` (the transition into the next segment, the
    rest of the segmentation and the end score; ``end[k]`` for ``e = L -
    1``).  ``C[s, b]``: the best score of a segment of label ``b`` starting
    at ``s`` plus ``B`` at its end.  Back-pointers: ``nb[e, k]``, the next
    segment's label, and ``cl[s, b]``, the length index of the segment that
    starts at ``s``.  ``O(L M K + L K^2)``; ties as in the forward pass
    (strict ``>`` in increasing index order)."""
    tr = base + L * M * K
    en = tr + K * K + K
    B = np.full((L, K), NEG_INF)
    C = np.full((L + 1, K), NEG_INF)
    nb = np.zeros((L, K), dtype=np.int64)
    cl = np.zeros((L + 1, K), dtype=np.int64)
    for s in range(L - 1, -1, -1):
        for k in range(K):
            if s == L - 1:
                B[s, k] = theta[en + k]
                continue
            best = NEG_INF
            for b in range(K):
                v = theta[tr + k * K + b] + C[s + 1, b]
                if v > best:
                    best = v
                    nb[s, k] = b
            B[s, k] = best
        for k in range(K):
            best = NEG_INF
            for ln in range(min(Mk[k], L - s)):
                e = s + ln
                v = theta[base + (e * M + ln) * K + k] + B[e, k]
                if v > best:
                    best = v
                    cl[s, k] = ln
            C[s, k] = best
    return B, C, nb, cl


# ----------------------------------------------------------------- top-2
@njit(cache=True, nogil=True)
def _backtrack2(Vl, Vr, Pa, Pr, L, k, r, y, yoff):
    """Write the path of the 2-best forward tables ending at ``(L - 1, k,
    rank r)``."""
    e = L - 1
    while e >= 0:
        ln = Vl[e, k, r]
        rp = Vr[e, k, r]
        s = e - ln
        y[yoff + s] = 2 * k + 1
        for t in range(s + 1, e + 1):
            y[yoff + t] = 2 * k
        if s == 0:
            break
        a = Pa[s, k, rp]
        r = Pr[s, k, rp]
        k = a
        e = s - 1


@njit(cache=True, nogil=True)
def _push2(score, arg, rank, v, a, r):
    """Offer the candidate ``(v, a, r)`` to a 2-best entry (``score[0] >=
    score[1]`` with their back-pointers ``arg``, ``rank``); ties keep the
    earlier candidate."""
    if v > score[0]:
        score[1], arg[1], rank[1] = score[0], arg[0], rank[0]
        score[0], arg[0], rank[0] = v, a, r
    elif v > score[1]:
        score[1], arg[1], rank[1] = v, a, r


@njit(cache=True, nogil=True)
def _second_best_into(theta, base, L, K, M, Mk, y, yoff, out):
    """The best segmentation of one sequence other than ``y`` (written into
    ``out``; ``y`` itself when it is the only segmentation).

    A 2-best Viterbi: every table entry keeps its two best *distinct*
    partial segmentations -- candidates that differ in their last segment
    or in the entry (and rank) they extend are different paths -- so the
    best and second-best complete segmentations are read off the end.
    Returns the score of the segmentation written."""
    tr = base + L * M * K
    st = tr + K * K
    en = st + K
    V = np.full((L, K, 2), NEG_INF)
    Vl = np.zeros((L, K, 2), dtype=np.int64)
    Vr = np.zeros((L, K, 2), dtype=np.int64)
    P = np.full((L, K, 2), NEG_INF)
    Pa = np.zeros((L, K, 2), dtype=np.int64)
    Pr = np.zeros((L, K, 2), dtype=np.int64)
    for e in range(L):
        for k in range(K):
            if e == 0:
                P[0, k, 0] = theta[st + k]
                continue
            for a in range(K):
                for r in range(2):
                    _push2(P[e, k], Pa[e, k], Pr[e, k],
                           V[e - 1, a, r] + theta[tr + a * K + k], a, r)
        for k in range(K):
            for ln in range(min(Mk[k], e + 1)):
                for r in range(2):
                    _push2(V[e, k], Vl[e, k], Vr[e, k],
                           theta[base + (e * M + ln) * K + k] + P[e - ln, k, r], ln, r)
    b0 = NEG_INF
    b1 = NEG_INF
    k0 = 0
    r0 = 0
    k1 = 0
    r1 = 0
    for k in range(K):
        for r in range(2):
            v = V[L - 1, k, r] + theta[en + k]
            if v > b0:
                b1 = b0
                k1 = k0
                r1 = r0
                b0 = v
                k0 = k
                r0 = r
            elif v > b1:
                b1 = v
                k1 = k
                r1 = r
    _backtrack2(Vl, Vr, Pa, Pr, L, k0, r0, out, yoff)
    same = True
    for t in range(L):
        if out[yoff + t] != y[yoff + t]:
            same = False
            break
    if not same:
        return b0
    if b1 == NEG_INF:        # a single segmentation (L = K = 1 or M = K = 1)
        return b0
    _backtrack2(Vl, Vr, Pa, Pr, L, k1, r1, out, yoff)
    return b1


@njit(cache=True, nogil=True)
def segment_second_best_batch(theta, y, part_off, tok_off, K, M, Mk):
    """Top-2 oracle: per sequence, the best segmentation different from
    ``y`` (``y`` where it is the only one), with its score."""
    n = tok_off.shape[0] - 1
    out = np.empty(tok_off[n], dtype=np.int64)
    scores = np.empty(n)
    for i in range(n):
        scores[i] = _second_best_into(theta, part_off[i], tok_off[i + 1] - tok_off[i], K, M,
                                      Mk, y, tok_off[i], out)
    return out, scores


# ------------------------------------------------------------ exact slack
@njit(cache=True, nogil=True)
def _max_cost(icost, base, L, K, M, Mk):
    """The largest cost of a segmentation of one sequence (a max-sum DP over
    the segment costs alone)."""
    best = np.zeros(L + 1, dtype=np.int64)   # best[t]: tokens 0..t-1
    for e in range(L):
        b = -1
        for ln in range(min(M, e + 1)):
            for k in range(K):
                if ln >= Mk[k]:
                    continue
                v = icost[base + (e * M + ln) * K + k] + best[e - ln]
                if v > b:
                    b = v
        best[e + 1] = b
    return best[L]


@njit(cache=True, nogil=True)
def _slack_violator_into(theta, y, icost, base, L, K, M, Mk, yoff, out):
    """Exact slack-scaling violator of one sequence: ``argmax_{y'} c(y')
    (1 - s(y) + s(y'))`` for integer segment costs ``icost``.

    A semi-Markov Viterbi over (token, label, accumulated cost): ``V[e, k,
    c]`` is the best score of the segmentations of tokens ``0..e`` whose
    last segment ends at ``e`` with label ``k`` and whose cost is ``c``.
    The cost ``c >= 1`` maximising ``c (1 - s(y) + best_c)`` is chosen
    (the smallest on ties) and its segmentation backtracked; ``y`` itself
    when no cost gives a positive value.  ``O((L M K + L K^2) C)`` for the
    largest reachable cost ``C``."""
    tr = base + L * M * K
    st = tr + K * K
    en = st + K
    C = _max_cost(icost, base, L, K, M, Mk)
    for t in range(L):
        out[yoff + t] = y[yoff + t]
    if C < 1:
        return
    V = np.full((L, K, C + 1), NEG_INF)
    bl = np.zeros((L, K, C + 1), dtype=np.int64)
    P = np.full((L, K, C + 1), NEG_INF)
    bk = np.zeros((L, K, C + 1), dtype=np.int64)
    for e in range(L):
        for k in range(K):
            if e == 0:
                P[0, k, 0] = theta[st + k]
                continue
            for c in range(C + 1):
                best = NEG_INF
                for a in range(K):
                    v = V[e - 1, a, c] + theta[tr + a * K + k]
                    if v > best:
                        best = v
                        bk[e, k, c] = a
                P[e, k, c] = best
        for k in range(K):
            for ln in range(min(Mk[k], e + 1)):
                p = base + (e * M + ln) * K + k
                cs = icost[p]
                sc = theta[p]
                for c in range(cs, C + 1):
                    v = sc + P[e - ln, k, c - cs]
                    if v > V[e, k, c]:
                        V[e, k, c] = v
                        bl[e, k, c] = ln
    s_y = _score(theta, base, L, K, M, y, yoff)
    best_val = 0.0
    best_c = -1
    best_k = 0
    for c in range(1, C + 1):
        for k in range(K):
            v = V[L - 1, k, c] + theta[en + k]
            if v == NEG_INF:
                continue
            val = c * (1.0 - s_y + v)
            if val > best_val:
                best_val = val
                best_c = c
                best_k = k
    if best_c < 0:
        return
    e = L - 1
    k = best_k
    c = best_c
    while e >= 0:
        ln = bl[e, k, c]
        s = e - ln
        out[yoff + s] = 2 * k + 1
        for t in range(s + 1, e + 1):
            out[yoff + t] = 2 * k
        c -= icost[base + (e * M + ln) * K + k]
        if s == 0:
            break
        k = bk[s, k, c]
        e = s - 1


@njit(cache=True, nogil=True)
def segment_slack_violator_batch(theta, y, icost, part_off, tok_off, K, M, Mk):
    """The exact slack-scaling violator of every sequence (flat codes); see
    :func:`_slack_violator_into`.  ``icost`` holds the integer costs of the
    segment parts (the layout of ``theta``)."""
    n = tok_off.shape[0] - 1
    out = np.empty(tok_off[n], dtype=np.int64)
    for i in range(n):
        _slack_violator_into(theta, y, icost, part_off[i], tok_off[i + 1] - tok_off[i], K, M,
                             Mk, tok_off[i], out)
    return out


# --------------------------------------------------------------- PosLearn
@njit(cache=True, nogil=True)
def segment_poslearn_batch(theta, y, cost, part_off, tok_off, K, M, Mk):
    """PosLearn loss on segmentations (Sarawagi & Gupta 2008, Sec. 4.3.2).

    The positions are the spans ``(s, e)``.  For a span, the violator is
    the best segmentation containing a segment ``(s, e, k)`` of positive
    cost (a span-label pair that is not a gold segment), found from the
    forward and backward Viterbi tables (max-marginals); over the labels
    ``k`` the one maximising ``cost (1 - s(y) + s(y^{s,e,k}))`` is kept
    (the lowest on ties).  Returns ``value[i] = sum_spans max(cost (1 -
    s(y) + s(y^span)), 0)`` and the flat gradient ``sum_{active spans}
    cost (phi(y^span) - phi(y))``.

    The violators are paths in the forward and backward back-pointer
    trees, so their cost-weighted encodings are summed by pushing weights
    down the two trees: ``O(L M K + L K^2)`` per sequence, no per-span
    backtracking.
    """
    n = tok_off.shape[0] - 1
    value = np.zeros(n)
    grad = np.zeros(part_off[n])
    for i in range(n):
        base = part_off[i]
        o = tok_off[i]
        L = tok_off[i + 1] - o
        tr = base + L * M * K
        st = tr + K * K
        en = st + K
        _, P, bl, bk = _forward(theta, base, L, K, M, Mk)
        B, _, nb, cl = _backward_max(theta, base, L, K, M, Mk)
        s_y = _score(theta, base, L, K, M, y, o)
        wF = np.zeros((L, K))   # weight of violators whose prefix ends at (e, k)
        wB = np.zeros((L, K))   # weight of violators whose suffix follows (e, k)
        total = 0.0
        wsum = 0.0
        for e in range(L):
            for ln in range(min(M, e + 1)):
                s = e - ln
                best = 0.0
                kk = -1
                for k in range(K):
                    p = base + (e * M + ln) * K + k
                    c = cost[p]
                    if c <= 0.0 or ln >= Mk[k]:
                        continue
                    v = c * (1.0 - s_y + P[s, k] + theta[p] + B[e, k])
                    if v > best:
                        best = v
                        kk = k
                if kk < 0:
                    continue
                p = base + (e * M + ln) * K + kk
                c = cost[p]
                total += best
                wsum += c
                grad[p] += c
                if s == 0:
                    grad[st + kk] += c
                else:
                    a = bk[s, kk]
                    grad[tr + a * K + kk] += c
                    wF[s - 1, a] += c
                wB[e, kk] += c
        value[i] = total
        if wsum == 0.0:
            continue
        for e in range(L - 1, -1, -1):       # prefixes: down the forward tree
            for k in range(K):
                w = wF[e, k]
                if w == 0.0:
                    continue
                ln = bl[e, k]
                s = e - ln
                grad[base + (e * M + ln) * K + k] += w
                if s == 0:
                    grad[st + k] += w
                else:
                    a = bk[s, k]
                    grad[tr + a * K + k] += w
                    wF[s - 1, a] += w
        for e in range(L):                   # suffixes: up the backward tree
            for k in range(K):
                w = wB[e, k]
                if w == 0.0:
                    continue
                if e == L - 1:
                    grad[en + k] += w
                    continue
                b = nb[e, k]
                ln = cl[e + 1, b]
                e2 = e + 1 + ln
                grad[tr + k * K + b] += w
                grad[base + (e2 * M + ln) * K + b] += w
                wB[e2, b] += w
        _add_encoding(y, o, L, K, M, grad, base, -wsum)
    return value, grad
