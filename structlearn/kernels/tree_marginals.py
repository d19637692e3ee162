"""Dependency-tree marginals: the matrix-tree theorem (non-projective) and
inside-outside (projective).

The layout and the algorithms' choices are described in
:mod:`structlearn.kernels.tree`.
"""

import numpy as np
from numba import njit

from ._math import logaddexp

#: Linear-space matrix-tree elimination is used when every modifier row of
#: ``S`` spans at most this much (so ``exp(S - rowmax) >= 2.6e-261`` never
#: underflows); otherwise the log-space elimination.
MTT_LINEAR_SPAN = 600.0


# ------------------------------------------------------- matrix-tree theorem
# The words are eliminated in the order n, n-1, ..., 1 from the weights
# A[h, m] of the arcs h -> m (h in 0..k, m in 1..k, h != m, k the current
# number of words); eliminating k (Kron reduction of the Laplacian):
#
#     D_k = sum_{h=1..k-1} A[h, k]  (+ A[0, k] unless single root and k > 1)
#     A[h, m] += A[h, k] A[k, m] / D_k      for h in 0..k-1, m in 1..k-1, h != m
#     logZ += log D_k
#
# The states before every elimination are kept (state k, nodes 0..k, at
# ``off[k]`` of a flat buffer) for the reverse pass, which turns the
# marginals ``mu'`` of the reduced graph into those of the graph before
# eliminating k, with r = A[h,k] A[k,m] / (D_k A'[h,m]) the share of the
# path through k in the reduced weight A'[h,m] and T = sum mu' r:
#
#     mu[h, m] = mu'[h, m] A[h, m] / A'[h, m]
#     mu[k, m] = sum_h mu'[h, m] r[h, m]
#     mu[h, k] = p_h (1 - T) + sum_m mu'[h, m] r[h, m],  p_h = A[h, k] / D_k
#
# (p_0 = 0 when the root weight is not part of the pivot).  Everything is a
# probability or an expected count, bounded by n.


@njit(cache=True, nogil=True)
def _snapshot_offsets(n):
    """Offsets of the elimination states: state ``k`` (nodes ``0..k``,
    before eliminating ``k``) is ``(k + 1) x (k + 1)`` at ``off[k]``."""
    off = np.zeros(n + 2, dtype=np.int64)
    for k in range(1, n + 1):
        off[k + 1] = off[k] + (k + 1) * (k + 1)
    return off


@njit(cache=True, nogil=True)
def _save_state(A, k, buf, off):
    """Copy ``A[0:k+1, 0:k+1]`` into state ``k`` of ``buf``."""
    p = off[k]
    for h in range(k + 1):
        for m in range(k + 1):
            buf[p + h * (k + 1) + m] = A[h, m]


@njit(cache=True, nogil=True)
def _root_in_pivot(single_root, k):
    """Whether the root weight is part of the pivot of word ``k``."""
    return (not single_root) or k == 1


@njit(cache=True, nogil=True)
def _mtt_forward_linear(S, single_root):
    """Elimination on ``exp(S - rowmax)``; returns ``(ok, logZ, buf, off,
    pivots)``.  ``ok`` is False when a modifier row spans more than
    ``MTT_LINEAR_SPAN`` or a pivot is not finite and positive."""
    n = S.shape[0]
    N = n + 1
    A = np.zeros((N, N))
    off = _snapshot_offsets(n)
    buf = np.empty(off[n + 1])
    D = np.zeros(N)
    logZ = 0.0
    for m in range(1, N):
        hi = -np.inf
        lo = np.inf
        for h in range(N):
            if h != m:
                hi = max(hi, S[m - 1, h])
                lo = min(lo, S[m - 1, h])
        if not (hi - lo <= MTT_LINEAR_SPAN):
            return False, 0.0, buf, off, D
        logZ += hi
        for h in range(N):
            if h != m:
                A[h, m] = np.exp(S[m - 1, h] - hi)
    for k in range(n, 0, -1):
        _save_state(A, k, buf, off)
        d = A[0, k] if _root_in_pivot(single_root, k) else 0.0
        for h in range(1, k):
            d += A[h, k]
        if not (d > 0.0 and d < np.inf):
            return False, 0.0, buf, off, D
        D[k] = d
        logZ += np.log(d)
        for h in range(k):
            f = A[h, k] / d
            for m in range(1, k):
                if m != h:
                    A[h, m] += f * A[k, m]
    return True, logZ, buf, off, D


@njit(cache=True, nogil=True)
def _mtt_forward_log(S, single_root):
    """Elimination on the log-weights ``S``; returns ``(logZ, buf, off,
    log_pivots)``.  Stable for any finite scores."""
    n = S.shape[0]
    N = n + 1
    W = np.zeros((N, N))
    for m in range(1, N):
        for h in range(N):
            if h != m:
                W[h, m] = S[m - 1, h]
    off = _snapshot_offsets(n)
    buf = np.empty(off[n + 1])
    LD = np.zeros(N)
    logZ = 0.0
    for k in range(n, 0, -1):
        _save_state(W, k, buf, off)
        use_root = _root_in_pivot(single_root, k)
        hi = W[0, k] if use_root else -np.inf
        for h in range(1, k):
            hi = max(hi, W[h, k])
        acc = np.exp(W[0, k] - hi) if use_root else 0.0
        for h in range(1, k):
            acc += np.exp(W[h, k] - hi)
        ld = hi + np.log(acc)
        LD[k] = ld
        logZ += ld
        for h in range(k):
            lf = W[h, k] - ld
            for m in range(1, k):
                if m != h:
                    W[h, m] = logaddexp(W[h, m], lf + W[k, m])
    return logZ, buf, off, LD


@njit(cache=True, nogil=True)
def _quot(x, d, logspace):
    """``x / d`` in the representation of the weights (linear or log)."""
    return x - d if logspace else x / d


@njit(cache=True, nogil=True)
def _prob(x, y, z, logspace):
    """The positive real ``x y / z`` (a ratio of weights, at most ~1) from
    weights in either representation (``y = 1`` / ``0`` for ``x / z``)."""
    return np.exp(x + y - z) if logspace else x * y / z


@njit(cache=True, nogil=True)
def _mtt_backward(buf, off, piv, n, single_root, logspace):
    """Reverse pass of the elimination: the arc marginals ``mu[h, m]``
    (``(n + 1, n + 1)``) from the saved states and pivots."""
    N = n + 1
    one = 0.0 if logspace else 1.0
    mu = np.zeros((N, N))
    R = np.zeros(N)
    rowk = np.zeros(N)
    for k in range(1, N):
        pb = off[k]              # state before eliminating k, (k+1) x (k+1)
        kb = k + 1
        pa = off[k - 1]          # state after, k x k (empty for k = 1)
        d = piv[k]
        T = 0.0
        for h in range(k):
            R[h] = 0.0
            rowk[h] = 0.0
        for h in range(k):
            f = _quot(buf[pb + h * kb + k], d, logspace)
            for m in range(1, k):
                if m == h:
                    continue
                g = mu[h, m]
                if g == 0.0:
                    continue
                a = buf[pa + h * k + m]
                mu[h, m] = g * _prob(buf[pb + h * kb + m], one, a, logspace)
                gr = g * _prob(f, buf[pb + k * kb + m], a, logspace)
                R[h] += gr
                rowk[m] += gr
                T += gr
        for h in range(k):
            p = 0.0
            if h >= 1 or _root_in_pivot(single_root, k):
                p = _prob(buf[pb + h * kb + k], one, d, logspace)
            mu[h, k] = max(p * (1.0 - T) + R[h], 0.0)
        for m in range(1, k):
            mu[k, m] = rowk[m]
    return mu


@njit(cache=True, nogil=True)
def _mtt_linear(S, single_root):
    """:func:`matrix_tree` by the linear-space elimination; returns ``(ok,
    logZ, mu[h, m])``, ``ok`` False (and ``mu`` empty) when it cannot
    compute them (then :func:`_mtt_log`)."""
    n = S.shape[0]
    ok, logZ, buf, off, D = _mtt_forward_linear(S, single_root)
    if ok and np.isfinite(logZ):
        # np.bool_: a literal True/False would compile the backward pass
        # twice (Numba's literal dispatch), ~1 CPU s of a cold first fit
        return True, logZ, _mtt_backward(buf, off, D, n, single_root, np.bool_(False))
    return False, 0.0, np.empty((0, 0))


@njit(cache=True, nogil=True)
def _mtt_log(S, single_root):
    """:func:`matrix_tree` by the log-space elimination; returns ``(logZ,
    mu[h, m])``."""
    logZ, buf, off, LD = _mtt_forward_log(S, single_root)
    return logZ, _mtt_backward(buf, off, LD, S.shape[0], single_root, np.bool_(True))


@njit(cache=True, nogil=True)
def _matrix_tree_impl(S, single_root, force_log):
    """:func:`matrix_tree` with the log-space path forced on request;
    returns ``(logZ, mu[h, m])``.  (The batch kernel of
    :mod:`structlearn.kernels.tree` calls :func:`_mtt_linear` and, for the
    sentences it cannot compute, :func:`_mtt_log` in a second kernel.)"""
    if not force_log:
        ok, logZ, muhm = _mtt_linear(S, single_root)
        if ok:
            return logZ, muhm
    return _mtt_log(S, single_root)


@njit(cache=True, nogil=True)
def _to_layout(muhm, out, base):
    """Write ``muhm[h, m]`` into the flat ``(n, n + 1)`` block at ``base``."""
    N = muhm.shape[0]
    for m in range(1, N):
        row = base + (m - 1) * N
        for h in range(N):
            out[row + h] = muhm[h, m] if h != m else 0.0


@njit(cache=True, nogil=True)
def matrix_tree(S, single_root):
    """Log-partition function and arc marginals of non-projective trees.

    The matrix-tree theorem (Koo, Globerson, Carreras & Collins 2007):
    ``Z = det L`` for the root-deleted Laplacian ``L`` of the weights
    ``A[h, m] = exp(S[m - 1, h])``; with a single root, ``Z = det L^`` where
    the first row of the word-only Laplacian is replaced by the root weights.

    Stability.  The scores of each modifier row are shifted by their maximum
    before exponentiating (a tree has one arc per modifier, so the shifts add
    back to ``logZ``).  That alone does not make an LU determinant safe:
    when the per-word best heads form a cycle, ``det L`` is a tiny difference
    of ``O(1)`` products (e.g. ``(1 + e1)(1 + e2) - 1``) and LU loses all
    digits once the gaps exceed ~35 nats.  Here ``det L`` is the product of
    the pivots of a Gaussian elimination of the words (in order ``n..1``)
    in which every pivot is recomputed as the sum of the current in-weights
    of the eliminated word (columns of a Laplacian sum to zero and Kron
    reduction keeps it a Laplacian): only sums, products and quotients of
    positive numbers, hence relative accuracy (GTH).  With a single root,
    the pivots leave out the root weights, which are carried along as the
    first-order coefficient in a root-weight scaling ``t`` (the coefficient
    of ``t`` in ``Z(t)`` is the single-root partition function); the last
    pivot is the effective root weight of the last word.  The marginals are
    the reverse-mode derivative of ``logZ`` through the elimination: at
    every step they are marginals of the reduced graph, bounded by one, so
    errors stay absolute ``O(n^2 eps)``.

    The elimination runs in linear space when every modifier row spans at
    most ``MTT_LINEAR_SPAN`` (no weight underflows) and in log space
    otherwise (about eight times slower), so any finite scores are safe
    (tested up to ``|S| ~ 1e5``).

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    single_root : bool

    Returns
    -------
    logZ : float
    mu : float64 array, shape (n, n + 1)
        ``mu[m - 1, h]`` the marginal probability of the arc ``h -> m``
        (0 on the self-loop entries); every row sums to one.

    Notes
    -----
    ``O(n^3)`` time; the elimination states are kept for the reverse pass,
    ``O(n^3 / 3)`` memory.
    """
    n = S.shape[0]
    logZ, muhm = _matrix_tree_impl(S, single_root, False)
    mu = np.empty(n * (n + 1))
    _to_layout(muhm, mu, 0)
    return logZ, mu.reshape((n, n + 1))


# ---------------------------------------------------------- inside-outside
@njit(cache=True, nogil=True)
def _lse_terms(x, n):
    """``log(sum(exp(x[:n])))`` for finite ``x`` and ``n >= 1``."""
    hi = x[0]
    for i in range(1, n):
        if x[i] > hi:
            hi = x[i]
    acc = 0.0
    for i in range(n):
        acc += np.exp(x[i] - hi)
    return hi + np.log(acc)


@njit(cache=True, nogil=True)
def _inside(S, single_root):
    """Log-space Eisner inside charts ``(Cr, Cl, Ir, Il, B)``; ``B[s, t]``
    is the log-sum over splits shared by ``Ir[s, t]`` and ``Il[s, t]``, and
    ``Cr[0, n]`` is ``logZ``."""
    n = S.shape[0]
    N = n + 1
    Cr = np.zeros((N, N))
    Cl = np.zeros((N, N))
    Ir = np.zeros((N, N))
    Il = np.zeros((N, N))
    B = np.zeros((N, N))
    tmp = np.empty(N)
    for w in range(1, N):
        for s in range(N - w):
            t = s + w
            if single_root and s == 0:
                b = Cl[1, t]                 # the root's only split: k = 0
            else:
                for k in range(s, t):
                    tmp[k - s] = Cr[s, k] + Cl[k + 1, t]
                b = _lse_terms(tmp, t - s)
            B[s, t] = b
            Ir[s, t] = b + S[t - 1, s]
            for k in range(s + 1, t + 1):
                tmp[k - s - 1] = Ir[s, k] + Cr[k, t]
            Cr[s, t] = _lse_terms(tmp, t - s)
            if s >= 1:
                Il[s, t] = b + S[s - 1, t]
                for k in range(s, t):
                    tmp[k - s] = Cl[s, k] + Il[k, t]
                Cl[s, t] = _lse_terms(tmp, t - s)
    return Cr, Cl, Ir, Il, B


@njit(cache=True, nogil=True)
def _outside_marginals(Cr, Cl, Ir, Il, B, single_root):
    """Reverse pass of :func:`_inside`: adjoints ``d logZ / d item``
    (expected uses, in ``[0, 1]``) from the widest span down; within a
    span the complete items before the incomplete ones (``Cr[s, t]`` uses
    ``Ir[s, t]``).  Returns ``mu[h, m]``, the adjoints of the arcs."""
    N = Cr.shape[0]
    n = N - 1
    gCr = np.zeros((N, N))
    gCl = np.zeros((N, N))
    gIr = np.zeros((N, N))
    gIl = np.zeros((N, N))
    gCr[0, n] = 1.0
    mu = np.zeros((N, N))
    for w in range(n, 0, -1):
        for s in range(N - w):
            t = s + w
            g = gCr[s, t]
            if g != 0.0:
                for k in range(s + 1, t + 1):
                    q = g * np.exp(Ir[s, k] + Cr[k, t] - Cr[s, t])
                    gIr[s, k] += q
                    gCr[k, t] += q
            if s >= 1:
                g = gCl[s, t]
                if g != 0.0:
                    for k in range(s, t):
                        q = g * np.exp(Cl[s, k] + Il[k, t] - Cl[s, t])
                        gCl[s, k] += q
                        gIl[k, t] += q
                mu[t, s] = gIl[s, t]
            mu[s, t] = gIr[s, t]
            g = gIr[s, t] + gIl[s, t]
            if g == 0.0:
                continue
            if single_root and s == 0:
                gCl[1, t] += g
            else:
                for k in range(s, t):
                    q = g * np.exp(Cr[s, k] + Cl[k + 1, t] - B[s, t])
                    gCr[s, k] += q
                    gCl[k + 1, t] += q
    return mu


@njit(cache=True, nogil=True)
def _inside_outside_hm(S, single_root):
    """Projective inside-outside; returns ``(logZ, mu[h, m])``."""
    Cr, Cl, Ir, Il, B = _inside(S, single_root)
    return Cr[0, S.shape[0]], _outside_marginals(Cr, Cl, Ir, Il, B, single_root)


@njit(cache=True, nogil=True)
def inside_outside(S, single_root):
    """Log-partition function and arc marginals of projective trees.

    Eisner's inside recursions in log space (log-sum-exp with the running
    maximum subtracted, so any finite scores are safe) and their reverse-mode
    derivative (outside pass); ``O(n^3)`` time, ``O(n^2)`` memory.  With a
    single root the root's incomplete spans use the empty left part only.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    single_root : bool

    Returns
    -------
    logZ : float
    mu : float64 array, shape (n, n + 1)
        Arc marginals in the score layout (0 on self-loop entries).
    """
    n = S.shape[0]
    logZ, muhm = _inside_outside_hm(S, single_root)
    mu = np.empty(n * (n + 1))
    _to_layout(muhm, mu, 0)
    return logZ, mu.reshape((n, n + 1))
