"""SparseMAP on long chains by exact splitting at certain positions.

The chain SparseMAP problem (Niculae et al. 2018; unary parts penalised,
transitions, start and end linear) is

    max_{mu in M}  <eta, mu> - 1/2 ||mu_U||^2 .

On a chain the marginal polytope is the local polytope of the per-position
unary and per-edge pairwise marginals (the aggregated transition counts, start
and end parts are linear images of them), and the objective only reads the
per-position unaries quadratically.  If the optimum puts all of position
``t``'s mass on tag ``k``, the optimum is also the optimum of the problem
restricted to ``mu_t = e_k``, and that restricted polytope is the product of
the chain polytopes left and right of ``t`` with the edges into and out of
``t`` fixed: the problem splits exactly into two chains, the left one with
end scores ``trans[:, k]`` and the right one with start scores ``trans[k, :]``.

:func:`sparsemap_chain_split` guesses such positions (a max-marginal gap of
at least ``min_gap`` between the best and the second-best tag), solves the
pieces between them with the active set (short problems: the support, and
with it the active set's per-iteration cost, stays small), joins them and
**certifies** the joined point with the full chain's own Frank-Wolfe gap
(one Viterbi on the gradient ``eta - [mu_U; 0]``), the test the active set
itself stops on.  Where the certificate fails, the split positions at which
the certifying Viterbi path leaves the split tag are dropped (their pieces
merge) and the pieces are solved again; with no split left this is the
plain active set on the whole chain.  The result is therefore the optimum to
the active set's tolerance either way; the guess only decides the speed.

The Euclidean projection onto the chain polytope (every part penalised,
including the transition *counts* summed over the sequence) does not split
this way: its quadratic term on the counts couples all positions.
"""

import numpy as np
from numba import types

from ._lazy import njit_on_first_call
from ._sparsemap_types import _ORACLE, score_scale
from .active_set import sparsemap_active_set
from .chain import _backward_max, _forward_max, _viterbi_into


@njit_on_first_call(
    types.void(types.float64[::1], types.int64, types.int64, types.float64,
               types.int64[::1]), cache=True, nogil=True)
def chain_split_guess(eta, L, K, min_gap, split):
    """``split[t]`` = the MAP tag at ``t`` where its max-marginal beats
    every other tag's by at least ``min_gap``, else -1 (one chain block of
    length ``L`` at the start of ``eta``)."""
    delta, _ = _forward_max(eta, 0, L, K)
    gamma, _ = _backward_max(eta, 0, L, K)
    for t in range(L):
        best = -np.inf
        second = -np.inf
        arg = 0
        for k in range(K):
            v = delta[t, k] + gamma[t, k]
            if v > best:
                second = best
                best = v
                arg = k
            elif v > second:
                second = v
        split[t] = arg if best - second >= min_gap else -1


@njit_on_first_call(
    types.UniTuple(types.int64, 2)(
        types.float64[::1], types.int64, types.int64, types.int64[::1], _ORACLE,
        types.int64, types.float64, types.float64[::1]), cache=True, nogil=True)
def chain_solve_pieces(eta, L, K, split, oracle, max_iter, tol, mu):
    """SparseMAP of one chain block with the positions ``split[t] >= 0``
    fixed to that tag: the pieces between them solved independently by the
    active set (each to ``tol / n_pieces``, so that their gaps add up to at
    most ``tol`` relative to the block's scale) and joined into ``mu``
    (the block's full layout, overwritten).  Returns the number of pieces
    and how many of their solves stopped at ``max_iter`` unconverged."""
    tr = L * K
    st = tr + K * K
    en = st + K
    mu[:] = 0.0
    n_pieces = 0
    n_capped = 0
    t = 0
    while t < L:
        if split[t] >= 0:
            t += 1
            continue
        while t < L and split[t] < 0:
            t += 1
        n_pieces += 1
    tol_p = tol / max(1, n_pieces)
    t = 0
    while t < L:
        k = split[t]
        if k >= 0:   # a fixed position
            mu[t * K + k] = 1.0
            if t == 0:
                mu[st + k] = 1.0
            elif split[t - 1] >= 0:
                mu[tr + split[t - 1] * K + k] += 1.0
            if t == L - 1:
                mu[en + k] = 1.0
            t += 1
            continue
        a = t
        while t < L and split[t] < 0:
            t += 1
        b = t
        n = b - a
        ptr = n * K
        pst = ptr + K * K
        pen = pst + K
        e = np.empty(pen + K)
        # element loops, not slice copies (which compile Numba's
        # string-formatting shape errors)
        for j in range(ptr):
            e[j] = eta[a * K + j]
        for j in range(pst - ptr):
            e[ptr + j] = eta[tr + j]
        for c in range(K):
            e[pst + c] = eta[st + c] if a == 0 else eta[tr + split[a - 1] * K + c]
            e[pen + c] = eta[en + c] if b == L else eta[tr + c * K + split[b]]
        params = np.array([float(n), float(K)])
        m, _, _, n_iter = sparsemap_active_set(e, ptr, oracle, params, max_iter, tol_p)
        if n_iter >= max_iter:
            n_capped += 1
        for j in range(ptr):
            mu[a * K + j] = m[j]
        for j in range(K * K):
            mu[tr + j] += m[ptr + j]
        for c in range(K):
            if a == 0:
                mu[st + c] = m[pst + c]
            else:
                mu[tr + split[a - 1] * K + c] += m[pst + c]
            if b == L:
                mu[en + c] = m[pen + c]
            else:
                mu[tr + c * K + split[b]] += m[pen + c]
    return n_pieces, n_capped


@njit_on_first_call(
    types.float64(types.float64[::1], types.int64, types.int64, types.float64[::1],
                  types.int64[::1]), cache=True, nogil=True)
def chain_sparsemap_gap(eta, L, K, mu, v):
    """The Frank-Wolfe gap of ``mu`` for the chain SparseMAP problem of one
    block: ``max_y <g, phi(y)> - <g, mu>`` with ``g = eta - [mu_U; 0]``
    (one Viterbi, its path written into ``v``)."""
    g = eta.copy()
    for j in range(L * K):
        g[j] -= mu[j]
    zero = np.int64(0)   # a literal 0 would compile the callee once more
    best = _viterbi_into(g, zero, L, K, v, zero)
    s = 0.0
    for j in range(g.shape[0]):
        s += g[j] * mu[j]
    return best - s


@njit_on_first_call(
    types.UniTuple(types.int64, 3)(
        types.float64[::1], types.int64, types.int64, _ORACLE, types.int64,
        types.float64, types.float64, types.float64[::1]), cache=True, nogil=True)
def sparsemap_chain_split(eta, L, K, oracle, max_iter, tol, min_gap, mu):
    """Chain SparseMAP of one block (unary parts penalised) by certified
    splitting (module doc); writes the marginals into ``mu`` and returns
    ``(rounds, n_pieces, n_capped)``: the number of piece solves, the
    pieces of the accepted one (1 piece and no split: the plain active set)
    and how many of those stopped at ``max_iter`` unconverged."""
    split = np.empty(L, dtype=np.int64)
    chain_split_guess(eta, L, K, min_gap, split)
    v = np.empty(L, dtype=np.int64)
    limit = tol * score_scale(eta)
    rounds = 0
    while True:
        rounds += 1
        n_pieces, n_capped = chain_solve_pieces(eta, L, K, split, oracle, max_iter, tol,
                                                mu)
        n_split = 0
        for t in range(L):
            if split[t] >= 0:
                n_split += 1
        if n_split == 0:
            return rounds, n_pieces, n_capped
        if chain_sparsemap_gap(eta, L, K, mu, v) <= limit:
            return rounds, n_pieces, n_capped
        dropped = 0
        for t in range(L):
            if split[t] >= 0 and v[t] != split[t]:
                split[t] = -1
                dropped += 1
        if dropped == 0:   # the pieces' own tolerance: solve the whole chain
            split[:] = -1


@njit_on_first_call(
    types.Tuple((types.float64[::1], types.int64))(
        types.float64[::1], types.int64[::1], types.int64[::1], types.int64,
        _ORACLE, types.int64, types.float64, types.float64),
    cache=True, nogil=True)
def sparsemap_chain_split_batch(theta, part_off, tok_off, K, oracle, max_iter, tol,
                                min_gap):
    """:func:`sparsemap_chain_split` on every block of a flat chain batch;
    returns the marginals and the number of blocks with a piece solve
    stopped at ``max_iter`` unconverged."""
    n = tok_off.shape[0] - 1
    mu = np.zeros(theta.shape[0])
    n_capped = 0
    for i in range(n):
        a = part_off[i]
        b = part_off[i + 1]
        m = np.empty(b - a)
        _, _, capped = sparsemap_chain_split(theta[a:b].copy(), tok_off[i + 1] - tok_off[i],
                                             K, oracle, max_iter, tol, min_gap, m)
        if capped > 0:
            n_capped += 1
        for j in range(b - a):
            mu[a + j] = m[j]
    return mu, n_capped
