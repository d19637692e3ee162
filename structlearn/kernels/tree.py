"""Dependency-tree kernels on a flat, ragged batch layout.

A sentence has ``n >= 1`` words ``1..n``; node ``0`` is the root.

* Arc scores of one sentence are an ``(n, n + 1)`` row-major matrix ``S``
  with ``S[m - 1, h]`` the score of the arc head ``h`` -> modifier ``m``
  (``h`` in ``0..n``).  The self-loop entries ``S[m - 1, m]`` are part of the
  layout but never of a tree: their values are ignored and marginals and
  encodings are zero there.
* A tree is a head array ``heads`` (int64, length ``n``) with
  ``heads[m - 1]`` in ``0..n`` the head of word ``m`` (CoNLL-U convention).
  Its encoding ``phi`` is the ``(n, n + 1)`` 0/1 matrix with
  ``phi[m - 1, heads[m - 1]] = 1``, so the score of a tree is
  ``<S, phi(heads)>``.
* A batch is flat and ragged: ``word_off`` (int64, ``n_sent + 1``) with
  ``n_i = word_off[i + 1] - word_off[i]``; head arrays are flat int64
  arrays indexed by ``word_off``; the arc scores of sentence ``i`` are
  ``theta[arc_off[i]:arc_off[i + 1]]`` (length ``n_i (n_i + 1)``, reshaped to
  ``(n_i, n_i + 1)``), ``arc_off = tree_arc_offsets(word_off)``.

Scores must be finite (forbidding arcs with ``-inf`` is not supported).
``single_root=True`` restricts to trees in which exactly one word has head
``0``; ``projective=True`` to projective trees (no crossing arcs when drawn
above the sentence with the root at position 0 on the left).

Algorithms
----------
* Non-projective MAP (:func:`~structlearn.kernels.tree_map.mst_heads`): Chu-Liu-Edmonds in the dense
  ``O(n^2)`` formulation of Tarjan (1977): every (contracted) node picks its
  best incoming arc once, cycles are contracted by merging the incoming-arc
  rows of their members (``O(n)`` per member), then the contraction tree is
  expanded top-down.  Arcs carry *lexicographic* keys ``(-penalty, score)``
  with an integer penalty; CLE is exact over any totally ordered abelian
  group, so integer penalties give exact constraints without big-M floating
  point arithmetic.  The single-root constraint gives every root arc
  penalty 1: the optimum then has the fewest root children, i.e. one, and
  is the best single-root tree.  This is the classical "subtract a large
  constant from the root arcs" reduction (discussed by Zmigrod, Vieira &
  Cotterell 2020, *Please Mind the Root*) made exact; no loop over root
  children is needed.  A forbidden arc (violators) gets penalty ``n + 1``,
  more than any number of root arcs.  ``O(n^2)`` time and memory for both
  variants.
* Projective MAP (:func:`~structlearn.kernels.tree_map.eisner_heads`): Eisner's first-order algorithm,
  ``O(n^3)`` time, ``O(n^2)`` memory.  Single root: the incomplete spans of
  the root are built from the empty left part only, so the root gets exactly
  one child.
* Non-projective marginals (:func:`~structlearn.kernels.tree_marginals.matrix_tree`): the matrix-tree theorem
  (Koo, Globerson, Carreras & Collins 2007; Tutte), with the determinant of
  the Laplacian computed by a subtraction-free elimination (Kron reduction
  with the pivot recomputed as a column sum, the GTH trick of Grassmann,
  Taksar & Heyman 1985) instead of an LU factorisation, and the marginals
  as the reverse-mode derivative of that elimination.  See
  :func:`~structlearn.kernels.tree_marginals.matrix_tree` for why: LU cancels catastrophically as soon as the
  per-word best heads form a cycle with large score gaps.  ``O(n^3)`` time,
  ``O(n^3 / 3)`` memory (states of the elimination).
* Projective marginals (:func:`~structlearn.kernels.tree_marginals.inside_outside`): Eisner's inside algorithm
  in log space and its reverse-mode derivative (outside), ``O(n^3)``.
* Violators (:func:`best_trees_excluding`, :func:`second_best_tree`): one
  MAP call with one forbidden arc per word: ``O(n^3)`` non-projective,
  ``O(n^4)`` projective.

Tie-breaking (deterministic; strict ``>`` comparisons in increasing index
order everywhere):

* CLE: a node takes the incoming arc of the lowest head index among equal
  keys; a contracted node takes, for every source, the arc into the cycle
  member popped first off the search path (the most recently reached one)
  among equal adjusted keys; new search paths start at the lowest word not
  yet attached.  Which of several tied optimal trees is returned follows
  from these rules; there is no simpler characterisation.
* Eisner: every chart item keeps its smallest optimal split point.
* :func:`second_best_tree`: the violator of the smallest word ``m`` among
  equal scores.

All kernels are plain ``@njit(cache=True, nogil=True)`` functions on
float64/int64 arrays; batch kernels loop over sentences (callers split
batches across threads, as for the other kernels of this package).

Modules: this one holds the layout, the violators, the batch kernels, the
SparseMAP oracle and the head-simplex projection; the MAP algorithms (CLE,
Eisner) are in ``kernels.tree_map``, the marginals
(matrix-tree, inside-outside) in ``kernels.tree_marginals``
and the head-array checks in ``kernels.tree_validation``.
"""

import numpy as np
from numba import njit

from ._lazy import njit_inner, njit_on_first_call
from .sparsemap import ENCODE_SIGNATURE, ORACLE_SIGNATURE, block_params
from .tree_map import _eisner_into, _map_into, _mst_into
from .projections import project_simplex
from .tree_marginals import _inside_outside_hm, _lse_terms, _mtt_linear, _mtt_log, _to_layout


# ------------------------------------------------------------------ layout
@njit(cache=True, nogil=True)
def tree_arc_offsets(word_off):
    """Arc offsets of a batch: ``arc_off[i + 1] - arc_off[i] = n_i (n_i + 1)``.

    Parameters
    ----------
    word_off : int64 array, shape (n_sent + 1,)

    Returns
    -------
    arc_off : int64 array, shape (n_sent + 1,)
    """
    n_sent = word_off.shape[0] - 1
    arc_off = np.zeros(n_sent + 1, dtype=np.int64)
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        arc_off[i + 1] = arc_off[i] + n * (n + 1)
    return arc_off


@njit(cache=True, nogil=True)
def _block(theta, arc_off, word_off, i):
    """Sentence ``i``'s scores as a fresh C-contiguous ``(n, n + 1)`` array."""
    n = word_off[i + 1] - word_off[i]
    return theta[arc_off[i]:arc_off[i + 1]].copy().reshape((n, n + 1))


@njit(cache=True, nogil=True)
def _tree_score(S, heads, off):
    """``<S, phi(heads[off:off + n])>`` (summed in word order)."""
    n = S.shape[0]
    total = 0.0
    for m in range(1, n + 1):
        total += S[m - 1, heads[off + m - 1]]
    return total


@njit(cache=True, nogil=True)
def tree_score(S, heads):
    """Score ``<S, phi(heads)>`` of one tree.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    heads : int64 array, shape (n,)

    Returns
    -------
    float
    """
    return _tree_score(S, heads, 0)


@njit(cache=True, nogil=True)
def projective_trees(heads, word_off):
    """Which trees of a batch are projective (boolean array, one per sentence).

    A tree is projective when no two of its arcs cross, the root arc
    included (the root is position 0, left of every word): arcs spanning
    ``[a1, b1]`` and ``[a2, b2]`` cross when ``a1 < a2 < b1 < b2``.  This is
    the set Eisner's algorithm searches (``projective=True``); it equals
    "every word between a head and its modifier descends from the head".
    ``O(n^2)`` per sentence.
    """
    n_sent = len(word_off) - 1
    out = np.ones(n_sent, dtype=np.bool_)
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        for m1 in range(1, n + 1):
            h1 = heads[o + m1 - 1]
            a1, b1 = min(h1, m1), max(h1, m1)
            for m2 in range(1, n + 1):
                h2 = heads[o + m2 - 1]
                a2, b2 = min(h2, m2), max(h2, m2)
                if a1 < a2 and a2 < b1 and b1 < b2:
                    out[i] = False
                    break
            if not out[i]:
                break
    return out


# ---------------------------------------------------------------- violators
@njit(cache=True, nogil=True)
def _excluding_into(S, heads, hoff, single_root, projective, out, ooff, row):
    """Rows of :func:`best_trees_excluding` into ``out[ooff:ooff + n*n]``."""
    n = S.shape[0]
    for m in range(1, n + 1):
        base = ooff + (m - 1) * n
        if _map_into(S, single_root, projective, m, heads[hoff + m - 1], row, np.int64(0)):
            for j in range(n):
                out[base + j] = row[j]
        else:
            for j in range(n):
                out[base + j] = -1


@njit(cache=True, nogil=True)
def best_trees_excluding(S, heads, single_root, projective):
    """For every word ``m``, the best tree in which ``m``'s head differs
    from ``heads[m - 1]`` (max-marginal violators, e.g. PosLearn).

    One MAP call per word with the arc ``heads[m - 1] -> m`` forbidden (an
    integer penalty in CLE, an unbuildable chart item in Eisner; no
    ``-inf`` arithmetic).  ``O(n^3)`` non-projective, ``O(n^4)`` projective.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    heads : int64 array, shape (n,)
    single_root, projective : bool

    Returns
    -------
    trees : int64 array, shape (n, n)
        Row ``m - 1`` holds the head array of the violator of word ``m``,
        or ``-1`` everywhere when no such tree exists (for valid ``heads``
        this happens only when ``n == 1``).
        Ties as in :func:`~structlearn.kernels.tree_map.mst_heads` / :func:`~structlearn.kernels.tree_map.eisner_heads`.
    """
    n = S.shape[0]
    out = np.empty(n * n, dtype=np.int64)
    row = np.empty(n, dtype=np.int64)
    zero = np.int64(0)   # a literal 0 would compile the callee once more
    _excluding_into(S, heads, zero, single_root, projective, out, zero, row)
    return out.reshape((n, n))


@njit(cache=True, nogil=True)
def _second_best_into(S, heads, hoff, single_root, projective, out, ooff):
    """Best tree different from ``heads[hoff:hoff + n]`` into
    ``out[ooff:ooff + n]``; returns whether one exists (else copies heads)."""
    n = S.shape[0]
    row = np.empty(n, dtype=np.int64)
    best = -np.inf
    found = False
    for m in range(1, n + 1):
        if _map_into(S, single_root, projective, m, heads[hoff + m - 1], row, np.int64(0)):
            v = _tree_score(S, row, 0)
            if not found or v > best:
                best = v
                found = True
                for j in range(n):
                    out[ooff + j] = row[j]
    if not found:
        for j in range(n):
            out[ooff + j] = heads[hoff + j]
    return found


@njit(cache=True, nogil=True)
def second_best_tree(S, heads, single_root, projective):
    """Best tree different from ``heads`` (not necessarily the MAP tree).

    Every other tree differs from ``heads`` at some word, so this is the best
    of the rows of :func:`best_trees_excluding` (smallest ``m`` on equal
    scores).  ``O(n^3)`` non-projective, ``O(n^4)`` projective.

    Parameters
    ----------
    S : float64 array, shape (n, n + 1)
    heads : int64 array, shape (n,)
    single_root, projective : bool

    Returns
    -------
    tree : int64 array, shape (n,)
        The second tree, a copy of ``heads`` when none exists.
    exists : bool
        False when ``heads`` is the only tree (``n == 1``).
    """
    n = S.shape[0]
    out = np.empty(n, dtype=np.int64)
    zero = np.int64(0)
    ok = _second_best_into(S, heads, zero, single_root, projective, out, zero)
    return out, ok


# ---------------------------------------------------------- SparseMAP oracle
# One oracle per algorithm, chosen in Python (tree_map_oracle): an oracle
# that branched on ``projective`` at run time compiled Eisner's algorithm
# (1.6 s) into every non-projective parser's first SparseMAP fit.
@njit_inner()
def _encode_heads_into(heads, n, out):
    """``out`` (flat ``(n, n + 1)``) zeroed, then 1 at every arc of ``heads``."""
    out[:] = 0.0
    for m in range(1, n + 1):
        out[(m - 1) * (n + 1) + heads[m - 1]] = 1.0


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def tree_map_mst(eta, params, out):
    """Non-projective MAP oracle for one sentence (Chu-Liu-Edmonds, ties as
    :func:`~structlearn.kernels.tree_map.mst_heads`), ``params = [n,
    single_root, projective]`` (``projective`` not read).  ``eta`` and
    ``out`` are flat ``(n, n + 1)`` arc-score blocks; writes
    ``phi(argmax)`` into ``out``."""
    n = int(params[0])
    heads = np.empty(n, dtype=np.int64)
    none = np.int64(-1)   # literals would compile the callees once more
    _mst_into(eta.reshape((n, n + 1)), params[1] != 0.0, none, none, heads, np.int64(0))
    _encode_heads_into(heads, n, out)


@njit_on_first_call(ORACLE_SIGNATURE, cache=True)
def tree_map_eisner(eta, params, out):
    """Projective MAP oracle for one sentence (Eisner, ties as
    :func:`~structlearn.kernels.tree_map.eisner_heads`); as
    :func:`tree_map_mst` otherwise."""
    n = int(params[0])
    heads = np.empty(n, dtype=np.int64)
    none = np.int64(-1)
    _eisner_into(eta.reshape((n, n + 1)), params[1] != 0.0, none, none, heads, np.int64(0))
    _encode_heads_into(heads, n, out)


def tree_map_oracle(projective):
    """The SparseMAP MAP oracle of trees: :func:`tree_map_eisner` for
    projective ones, else :func:`tree_map_mst`."""
    return tree_map_eisner if projective else tree_map_mst


def tree_block_params(word_off, single_root, projective):
    """Per-sentence ``[n_i, single_root, projective]`` for :func:`tree_map`,
    as :func:`~structlearn.kernels.sparsemap.block_params` lays them out."""
    return block_params(np.asarray(word_off, dtype=np.int64),
                        np.array([1.0 if single_root else 0.0, 1.0 if projective else 0.0]))


# ------------------------------------------------------------ batch kernels
# One kernel per algorithm, chosen in Python: a kernel that branched on
# ``projective`` at run time would compile both algorithms (Eisner and
# Chu-Liu-Edmonds, inside-outside and the matrix-tree theorem) on a cold
# start, although a model uses one (benchmarks/micro/bench_compile.py).
def map_batch(theta, arc_off, word_off, single_root, projective):
    """MAP tree of every sentence (:func:`~structlearn.kernels.tree_map.mst_heads`, or :func:`~structlearn.kernels.tree_map.eisner_heads`
    when ``projective``); flat int64 heads."""
    kernel = _map_batch_eisner if projective else _map_batch_mst
    return kernel(theta, arc_off, word_off, bool(single_root))


@njit(cache=True, nogil=True)
def _map_batch_mst(theta, arc_off, word_off, single_root):
    heads = np.empty(word_off[-1], dtype=np.int64)
    for i in range(word_off.shape[0] - 1):
        S = _block(theta, arc_off, word_off, i)
        _mst_into(S, single_root, np.int64(-1), np.int64(-1), heads, word_off[i])
    return heads


@njit(cache=True, nogil=True)
def _map_batch_eisner(theta, arc_off, word_off, single_root):
    heads = np.empty(word_off[-1], dtype=np.int64)
    for i in range(word_off.shape[0] - 1):
        S = _block(theta, arc_off, word_off, i)
        _eisner_into(S, single_root, np.int64(-1), np.int64(-1), heads, word_off[i])
    return heads


def marginals_batch(theta, arc_off, word_off, single_root, projective):
    """Arc marginals and log-partition of every sentence (:func:`~structlearn.kernels.tree_marginals.matrix_tree`,
    or :func:`~structlearn.kernels.tree_marginals.inside_outside` when ``projective``).

    Returns ``(mu, logZ)``: flat marginals in the layout of ``theta`` and
    the log-partition function of every sentence.
    """
    if projective:
        return _marginals_batch_inside_outside(theta, arc_off, word_off, bool(single_root))
    mu, logZ, left = _marginals_batch_matrix_tree(theta, arc_off, word_off, bool(single_root))
    if len(left):
        _marginals_batch_matrix_tree_log(theta, arc_off, word_off, bool(single_root), left,
                                         mu, logZ)
    return mu, logZ


@njit(cache=True, nogil=True)
def _marginals_batch_matrix_tree(theta, arc_off, word_off, single_root):
    """:func:`marginals_batch` (non-projective) in linear space; returns
    ``(mu, logZ, left)``, ``left`` the sentences the linear elimination
    cannot compute (:func:`~structlearn.kernels.tree_marginals._mtt_linear`),
    whose marginals and ``logZ`` :func:`_marginals_batch_matrix_tree_log`
    fills in.  Two kernels, as for the chain CRF: Numba compiles the
    log-space elimination only for the first data that needs it (about
    1-2 s of a first parser fit otherwise)."""
    n_sent = word_off.shape[0] - 1
    mu = np.zeros(arc_off[n_sent])
    logZ = np.empty(n_sent)
    left = np.empty(n_sent, dtype=np.int64)
    n_left = 0
    for i in range(n_sent):
        S = _block(theta, arc_off, word_off, i)
        ok, lz, muhm = _mtt_linear(S, single_root)
        if ok:
            logZ[i] = lz
            _to_layout(muhm, mu, arc_off[i])
        else:
            logZ[i] = np.nan
            left[n_left] = i
            n_left += 1
    return mu, logZ, left[:n_left]


@njit(cache=True, nogil=True)
def _marginals_batch_matrix_tree_log(theta, arc_off, word_off, single_root, sents, mu, logZ):
    """The sentences ``sents`` of :func:`_marginals_batch_matrix_tree` in log
    space, into ``mu`` and ``logZ``."""
    for i in sents:
        S = _block(theta, arc_off, word_off, i)
        lz, muhm = _mtt_log(S, single_root)
        logZ[i] = lz
        _to_layout(muhm, mu, arc_off[i])


@njit(cache=True, nogil=True)
def _marginals_batch_inside_outside(theta, arc_off, word_off, single_root):
    n_sent = word_off.shape[0] - 1
    mu = np.zeros(arc_off[n_sent])
    logZ = np.empty(n_sent)
    for i in range(n_sent):
        S = _block(theta, arc_off, word_off, i)
        lz, muhm = _inside_outside_hm(S, single_root)
        logZ[i] = lz
        _to_layout(muhm, mu, arc_off[i])
    return mu, logZ


@njit(cache=True, nogil=True)
def poslearn_violators_batch(theta, heads, arc_off, word_off, single_root, projective):
    """:func:`best_trees_excluding` for every sentence.

    Returns a flat int64 array of length ``sum_i n_i^2``: sentence ``i``'s
    ``(n_i, n_i)`` matrix of violators, row-major, at offset
    ``sum_{j < i} n_j^2`` (rows of ``-1`` where no violator exists).
    """
    n_sent = word_off.shape[0] - 1
    total = 0
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        total += n * n
    out = np.empty(total, dtype=np.int64)
    pos = 0
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        S = _block(theta, arc_off, word_off, i)
        row = np.empty(n, dtype=np.int64)
        _excluding_into(S, heads, word_off[i], single_root, projective, out, pos, row)
        pos += n * n
    return out


@njit(cache=True, nogil=True)
def second_best_batch(theta, heads, arc_off, word_off, single_root, projective):
    """:func:`second_best_tree` for every sentence.

    Returns ``(heads2, exists)``: flat int64 heads (a copy of ``heads`` for
    sentences without another tree) and a boolean per sentence.
    """
    n_sent = word_off.shape[0] - 1
    out = np.empty(word_off[n_sent], dtype=np.int64)
    exists = np.zeros(n_sent, dtype=np.bool_)
    for i in range(n_sent):
        S = _block(theta, arc_off, word_off, i)
        exists[i] = _second_best_into(S, heads, word_off[i], single_root, projective,
                                      out, word_off[i])
    return out, exists


@njit(cache=True, nogil=True)
def encode_heads_batch(heads, arc_off, word_off):
    """Flat encodings ``phi(heads_i)`` in the layout of ``theta``."""
    n_sent = word_off.shape[0] - 1
    phi = np.zeros(arc_off[n_sent])
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        for m in range(1, n + 1):
            phi[arc_off[i] + (m - 1) * (n + 1) + heads[o + m - 1]] = 1.0
    return phi


@njit(cache=True, nogil=True)
def score_heads_batch(theta, heads, arc_off, word_off):
    """Scores ``<theta_i, phi(heads_i)>`` of every sentence."""
    n_sent = word_off.shape[0] - 1
    scores = np.zeros(n_sent)
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        acc = 0.0
        for m in range(1, n + 1):
            acc += theta[arc_off[i] + (m - 1) * (n + 1) + heads[o + m - 1]]
        scores[i] = acc
    return scores


@njit_on_first_call(ENCODE_SIGNATURE, cache=True)
def tree_encode_codes(codes, params, out):
    """Support decoder inverse of trees (see
    :func:`structlearn.kernels.sparsemap.sparsemap_active_set_warm_ragged`):
    the vertex of the head array ``codes`` (one head per word), ``params =
    [n, single_root, projective]``."""
    _encode_heads_into(codes, int(params[0]), out)


# ------------------------------------------------- head-simplex, PosLearn
@njit(cache=True, nogil=True)
def row_argmax_heads(a, arc_off, word_off):
    """Per modifier, the head of the largest entry of its row, self-loop
    excluded (lowest head on ties); flat int64 heads."""
    n_sent = word_off.shape[0] - 1
    heads = np.empty(word_off[n_sent], dtype=np.int64)
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        for m in range(1, n + 1):
            base = arc_off[i] + (m - 1) * (n + 1)
            best = -1
            for h in range(n + 1):
                if h == m:
                    continue
                if best < 0 or a[base + h] > a[base + best]:
                    best = h
            heads[word_off[i] + m - 1] = best
    return heads


@njit(cache=True, nogil=True)
def head_simplex_rows(theta, arc_off, word_off, kl):
    """Projection of every modifier row, self-loop excluded, onto the
    probability simplex over its ``n`` heads: Euclidean (sort-based) or KL
    (softmax).  Self-loop entries of the result are 0."""
    n_sent = word_off.shape[0] - 1
    out = np.zeros(theta.shape[0])
    for i in range(n_sent):
        n = word_off[i + 1] - word_off[i]
        row = np.empty(n)
        for m in range(1, n + 1):
            base = arc_off[i] + (m - 1) * (n + 1)
            k = 0
            for h in range(n + 1):
                if h != m:
                    row[k] = theta[base + h]
                    k += 1
            if kl:     # the softmax of the row
                u = np.exp(row - _lse_terms(row, n))
            else:
                u = project_simplex(row)
            k = 0
            for h in range(n + 1):
                if h != m:
                    out[base + h] = u[k]
                    k += 1
    return out


@njit(cache=True, nogil=True)
def poslearn_from_violators(theta, heads, viol, arc_off, word_off):
    """PosLearn value and gradient from the violators of
    :func:`poslearn_violators_batch` (rows of -1:
    no violator, no contribution)."""
    n_sent = word_off.shape[0] - 1
    value = np.zeros(n_sent)
    grad = np.zeros(theta.shape[0])
    pos = 0
    for i in range(n_sent):
        o = word_off[i]
        n = word_off[i + 1] - o
        a = arc_off[i]
        s_y = 0.0
        for j in range(n):
            s_y += theta[a + j * (n + 1) + heads[o + j]]
        n_active = 0
        for m in range(1, n + 1):
            r = pos + (m - 1) * n
            if viol[r] < 0:
                continue
            s_v = 0.0
            for j in range(n):
                s_v += theta[a + j * (n + 1) + viol[r + j]]
            margin = 1.0 - s_y + s_v
            if margin > 0.0:
                value[i] += margin
                n_active += 1
                for j in range(n):
                    grad[a + j * (n + 1) + viol[r + j]] += 1.0
        for j in range(n):
            grad[a + j * (n + 1) + heads[o + j]] -= n_active
        pos += n * n
    return value, grad
