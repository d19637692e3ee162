"""Numba kernels for the linear assignment problem (maximisation).

The solver is the shortest-augmenting-path form of the Hungarian algorithm
(Kuhn-Munkres with Jonker-Volgenant style Dijkstra searches on reduced
costs), O(k^3) for a ``k x k`` matrix.

Forbidden entries
-----------------
An entry can be disabled either with ``-inf`` or with a very large negative
finite number such as ``-1e300``:

* ``-inf`` is fully supported.  Disabled entries have infinite reduced
  cost and are never selected while a finite assignment exists.  If none
  exists, a valid permutation is still returned (some rows are then
  matched through forbidden entries) but it carries no optimality
  guarantee.
* A large negative finite penalty ``-M`` works as long as an assignment
  avoiding all penalised entries exists: augmenting paths are then always
  found through unpenalised entries, so the potentials never absorb
  ``M`` and no precision is lost.  ``M`` must leave ``k * M`` finite in
  float64 (``M = 1e300`` is fine up to ``k = 179``).

``+inf`` and NaN scores are not supported.

References
----------
.. [1] R. Jonker, A. Volgenant. "A shortest augmenting path algorithm for
   dense and sparse linear assignment problems." Computing 38, 1987.
.. [2] D. F. Crouse. "On implementing 2D rectangular assignment
   algorithms." IEEE Trans. Aerospace and Electronic Systems 52, 2016.
"""

import numpy as np
from numba import njit

__all__ = ["linear_assignment", "linear_assignment_batch"]


@njit(cache=True, nogil=True)
def _assignment_with_duals(score, perm, a, b):
    """Maximum-score assignment with LP dual certificate.

    Parameters
    ----------
    score : ndarray of shape (k, k), float64
        Scores; ``-inf`` marks forbidden entries.
    perm : ndarray of shape (k,), int64
        Output: ``perm[i]`` is the column assigned to row ``i``.
    a, b : ndarray of shape (k,), float64
        Output: dual potentials with ``a[i] + b[j] >= score[i, j]`` for all
        entries and equality on ``(i, perm[i])`` (when a finite assignment
        exists), certifying optimality.

    Notes
    -----
    Internally minimises ``cost = -score`` with potentials ``u`` (rows) and
    ``v`` (columns) keeping ``cost[i, j] - u[i] - v[j] >= 0``.  Rows are
    inserted one by one; each insertion runs a Dijkstra search on reduced
    costs from the new row until a free column is reached, then flips the
    alternating path.  Arrays use 1-based row/column ids with slot 0 as the
    virtual root, which removes special cases from the path bookkeeping.
    Ties are broken towards the smallest column index, so the result is
    deterministic.
    """
    k = score.shape[0]
    # a computed False: a literal one would compile _assignment_into once
    # more, for the type Literal[bool](False)
    _assignment_into(score, perm, a, b, np.empty(3 * (k + 1)),
                     np.empty(3 * (k + 1), dtype=np.int64), k < 0)


@njit(cache=True, nogil=True)
def _assignment_into(score, perm, a, b, fwork, iwork, warm):
    """:func:`_assignment_with_duals` with the workspaces ``fwork`` (float64)
    and ``iwork`` (int64) of ``3 (k + 1)`` entries each (no allocation).

    ``warm``: the workspaces hold the state of a previous solve of the same
    size (another score matrix), which is reused: the column potentials are
    kept, the row potentials recomputed (``u_i = min_j cost_ij - v_j``, a
    feasible pair), the previous pairs that stay tight kept, and only the
    other rows inserted -- a few Dijkstra searches instead of ``k`` when
    the scores moved little (the approximate-slack search's steps).  The
    assignment is the same as a cold solve's where the optimum is unique
    (ties may break differently)."""
    k = score.shape[0]
    inf = np.inf
    u = fwork[:k + 1]
    v = fwork[k + 1:2 * k + 2]
    minv = fwork[2 * k + 2:3 * k + 3]
    # col_owner[j]: 1-based row matched to column j (0 = free).
    col_owner = iwork[:k + 1]
    # way[j]: previous column on the shortest alternating path to column j.
    way = iwork[k + 1:2 * k + 2]
    # used[j] != 0: column j is in the search tree
    used = iwork[2 * k + 2:3 * k + 3]
    if warm:
        for i in range(1, k + 1):
            m = inf
            for j in range(1, k + 1):
                c = -score[i - 1, j - 1] - v[j]
                if c < m:
                    m = c
            u[i] = m
        for j in range(1, k + 1):
            i = col_owner[j]
            if i != 0 and -score[i - 1, j - 1] - v[j] != u[i]:
                col_owner[j] = 0   # no longer tight: row i is inserted again
    else:
        for j in range(k + 1):
            u[j] = 0.0
            v[j] = 0.0
            col_owner[j] = 0
            way[j] = 0
    for i in range(1, k + 1):
        if warm:
            matched = False
            for j in range(1, k + 1):
                if col_owner[j] == i:
                    matched = True
                    break
            if matched:
                continue
        col_owner[0] = i
        j0 = 0
        for j in range(k + 1):
            minv[j] = inf
            used[j] = 0
        while True:
            used[j0] = 1
            i0 = col_owner[j0]
            delta = inf
            j1 = -1
            for j in range(1, k + 1):
                if not used[j]:
                    cur = -score[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            if j1 == -1:
                # Every remaining column is reachable only through forbidden
                # (infinite-cost) entries: no finite assignment exists.  Take
                # the first free-to-visit column with a zero potential shift
                # so that potentials stay finite and a valid permutation is
                # still produced.
                for j in range(1, k + 1):
                    if not used[j]:
                        j1 = j
                        break
                way[j1] = j0
                delta = 0.0
            for j in range(k + 1):
                if used[j]:
                    u[col_owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if col_owner[j0] == 0:
                break
        # Flip the alternating path back to the root.
        while j0 != 0:
            j1 = way[j0]
            col_owner[j0] = col_owner[j1]
            j0 = j1
    for j in range(1, k + 1):
        perm[col_owner[j] - 1] = j - 1
    # Potentials of the minimisation problem become, with a sign flip,
    # the potentials of the maximisation problem.
    for i in range(k):
        a[i] = -u[i + 1]
        b[i] = -v[i + 1]


@njit(cache=True, nogil=True)
def linear_assignment(score):
    """Solve the linear assignment problem (maximisation).

    Parameters
    ----------
    score : ndarray of shape (k, k), float64
        Score matrix.  Entries equal to ``-inf`` (or a very large negative
        number, see the module docstring) are forbidden.

    Returns
    -------
    perm : ndarray of shape (k,), int64
        ``perm[i]`` is the column assigned to row ``i``, maximising
        ``sum_i score[i, perm[i]]``.  Always a permutation of ``range(k)``.
    """
    k = score.shape[0]
    perm = np.empty(k, dtype=np.int64)
    if k == 0:
        return perm
    a = np.empty(k)
    b = np.empty(k)
    _assignment_with_duals(score, perm, a, b)
    return perm


@njit(cache=True, nogil=True)
def linear_assignment_batch(Theta, k):
    """Row-wise :func:`linear_assignment` on flattened matrices.

    Parameters
    ----------
    Theta : ndarray of shape (n, k * k), float64
        Each row is a row-major flattened ``k x k`` score matrix.
    k : int

    Returns
    -------
    perms : ndarray of shape (n, k), int64
    """
    n = Theta.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    # Copy into a C-contiguous buffer rather than reshaping, so that any
    # memory layout of Theta compiles and works.
    buf = np.empty((k, k))
    perm = np.empty(k, dtype=np.int64)
    a = np.empty(k)
    b = np.empty(k)
    for t in range(n):
        if k == 0:
            break
        for i in range(k):
            for j in range(k):
                buf[i, j] = Theta[t, i * k + j]
        _assignment_with_duals(buf, perm, a, b)
        for i in range(k):
            out[t, i] = perm[i]
    return out
