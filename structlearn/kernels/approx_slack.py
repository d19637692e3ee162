"""Approximate slack scaling on fixed-size structures, one Numba call per batch.

:func:`approx_slack_batch` runs the search of
:meth:`structlearn.structures.base.Structure.approx_slack_search` (Sarawagi &
Gupta 2008, Sec. 3; the choices are in :class:`structlearn.losses.Hinge`)
row by row on the vertex vectors ``phi``, generic over the structure: it
sees one only through its MAP oracle and its runner-up oracle
(:mod:`structlearn.kernels.maps`), chosen by a family code.  Compiled once
for every family, with direct calls to the oracles: passing them as typed
first-class functions costs ~0.5 ms of dispatch per call from Python (more
than the whole search on a mini-batch of 32), and passing dispatchers
specialises the search per oracle but cannot be cached on disk.  Chains
have their own kernel on tag sequences
(``structlearn.kernels.chain.approx_slack_batch``).
"""

import numpy as np
from numba import njit, types

from ._lazy import njit_on_first_call
from .slack_search import (
    SEARCH_STATE, search_best, search_calls, search_init, search_next, search_tell)
from .maps import (
    birkhoff_map_into,
    birkhoff_runner_up_from_duals,
    cube_map_into,
    knapsack_map_into,
    knapsack_runner_up,
    order_simplex_map_into,
    order_simplex_runner_up,
    permutahedron_map_into,
    permutahedron_runner_up,
)

__all__ = ["approx_slack_batch", "CUBE", "KNAPSACK", "ORDER_SIMPLEX", "PERMUTAHEDRON",
           "BIRKHOFF"]

#: family codes: the structure whose oracles the search calls
CUBE, KNAPSACK, ORDER_SIMPLEX, PERMUTAHEDRON, BIRKHOFF = range(5)


@njit(cache=True, nogil=True, inline="always")
def family_map(family, eta, params, out, iwork, fwork, warm):
    """The MAP oracle of the structure family ``family``, with the
    workspaces ``iwork`` (int64) and ``fwork`` (float64) of ``4 p + 3``
    entries (``p`` parts): no allocation, and inlined (twice as fast), as
    the search calls it up to ``n_search + 2`` times per row.  ``warm``:
    the workspaces hold the previous call's solve (the assignment of the
    Birkhoff polytope is warm-started from it, the sorts of the knapsack and
    the permutahedron start from its order)."""
    if family == CUBE:
        cube_map_into(eta, params, out)
    elif family == KNAPSACK:
        knapsack_map_into(eta, params, out, iwork, warm)
    elif family == ORDER_SIMPLEX:
        order_simplex_map_into(eta, params, out)
    elif family == PERMUTAHEDRON:
        permutahedron_map_into(eta, params, out, iwork, warm)
    else:
        birkhoff_map_into(eta, params, out, iwork, fwork, warm)


@njit(cache=True, nogil=True, inline="always")
def family_runner_up(family, eta, params, best, out, fwork):
    """The runner-up oracle of the structure family ``family``, called right
    after :func:`family_map` at the same ``eta`` returned ``best``: the
    Birkhoff polytope's reads the assignment duals that solve left in
    ``fwork`` instead of solving it again (the runner-up in 0.65-0.68x the
    time at k = 8, 16; ``benchmarks/results/birkhoff_runner_up_ab.md``)."""
    if family == CUBE or family == KNAPSACK:
        knapsack_runner_up(eta, params, best, out)
    elif family == ORDER_SIMPLEX:
        order_simplex_runner_up(eta, params, best, out)
    elif family == PERMUTAHEDRON:
        permutahedron_runner_up(eta, params, best, out)
    else:
        k = int(params[0])
        birkhoff_runner_up_from_duals(eta, params, best, out, fwork[:k], fwork[k:2 * k])


@njit_on_first_call(
    types.Tuple((types.float64[:, ::1], types.float64[::1], types.float64[:, ::1],
                 types.float64))(
        types.float64[:, ::1], types.float64[:, ::1], types.float64[:, ::1], types.int64,
        types.float64[::1], types.int64, types.float64, types.float64, types.float64,
        types.float64),
    cache=True, nogil=True)
def approx_slack_batch(Theta, Phi, C, family, params, n_search, epsilon, L_max, L_eps,
                       L_gap):
    """The approximate slack-scaling violator, loss and gradient of every row.

    Parameters
    ----------
    Theta : ndarray of shape (n, p)
        Part scores.
    Phi : ndarray of shape (n, p)
        Vertices of the true structures, ``phi(y_i)``.
    C : ndarray of shape (n, p)
        Cost vectors, ``L(y', y_i) = <phi(y') - phi(y_i), C_i>``.
    family : int
        The structure family (:data:`CUBE`, ...), whose MAP and runner-up
        oracles (the best vertex different from the MAP's) evaluate
        ``F(lambda)`` at the best structure different from ``y_i`` under
        the cost-augmented scores ``Theta_i + lambda C_i`` (the MAP, or the
        runner-up where the MAP is ``y_i``).
    params : ndarray
        The oracles' parameters.
    n_search : int
        Most evaluations of ``F`` after the two ends, by the breakpoint
        search of the driver (:mod:`structlearn.kernels.slack_search`).
    epsilon : float
        ``lambda_l = epsilon / L_max``.
    L_max, L_eps : float
        Largest cost and smallest gap between distinct costs (a
        non-positive ``L_max``, a single structure, is taken as 1).
    L_gap : float
        ``L_eps`` where it is the exact gap (or a lower bound of it), else
        0: the driver's stopping bound assumes no cost lies closer than
        ``L_gap`` to another.

    Returns
    -------
    Best : ndarray of shape (n, p)
        Per row, the vertex ``phi(y')`` with the largest slack hinge
        ``L(y')(1 - s(y_i) + s(y'))`` met by the search; ``Phi_i`` where
        none is positive.
    value : ndarray of shape (n,)
        That slack hinge (0 where none is positive): the loss.
    G : ndarray of shape (n, p)
        Its gradient in ``Theta``, ``L(y') (phi(y') - Phi_i)``.
    calls : float
        Number of oracle evaluations of ``F`` made (at most ``n (n_search +
        2)``; the search stops where no call can change its result,
        :mod:`structlearn.kernels.slack_search`).
    """
    n, p = Theta.shape
    Best = Phi.copy()
    value = np.zeros(n)
    G = np.zeros((n, p))
    if L_max <= 0.0:
        L_max = 1.0
    lam_l = epsilon / L_max
    eta = np.empty(p)
    cand = np.empty(p)
    iwork = np.empty(4 * p + 3, dtype=np.int64)
    fwork = np.empty(4 * p + 3)
    st = np.zeros(SEARCH_STATE)
    # the oracles' warm flag as array entries, not literals: a literal bool
    # would compile every oracle once per value (Literal[bool] types)
    flags = np.array([False, True])
    cold = flags[0]
    warm = flags[1]
    for i in range(n):
        theta = Theta[i]
        phi = Phi[i]
        c = C[i]
        s_true = 0.0
        for j in range(p):
            s_true += theta[j] * phi[j]
        search_init(st, s_true, lam_l, L_max, L_eps, L_gap, n_search)
        first = True   # a new row: nothing to warm-start from
        while True:
            lam = search_next(st)
            if lam < 0.0:
                break
            # the best structure other than y at theta + lam c
            for j in range(p):
                eta[j] = theta[j] + lam * c[j]
            family_map(family, eta, params, cand, iwork, fwork, cold if first else warm)
            first = False
            same = True
            for j in range(p):
                if cand[j] != phi[j]:
                    same = False
                    break
            if same:
                family_runner_up(family, eta, params, phi, cand, fwork)
            s = 0.0
            L = 0.0
            for j in range(p):
                s += theta[j] * cand[j]
                L += (cand[j] - phi[j]) * c[j]
            if search_tell(st, s, L):
                for j in range(p):
                    Best[i, j] = cand[j]
                    G[i, j] = L * (cand[j] - phi[j])
        value[i] = search_best(st)
    return Best, value, G, search_calls(st)
