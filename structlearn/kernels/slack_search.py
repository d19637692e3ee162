"""The search of approximate slack scaling, written once for every kernel.

Approximate slack scaling (Sarawagi & Gupta 2008, Sec. 3; the choices are in
:class:`structlearn.losses.Hinge`) minimises over ``lambda`` in ``[lambda_l,
lambda_u]``

    F(lambda) = H(lambda) - 2 sqrt(xi lambda),
    H(lambda) = max_{y != y_i} s(y) + lambda L(y),

by golden section, each evaluation of ``H`` one call of the cost-augmented
top-2 oracle; the loss is the largest slack hinge ``L(y)(1 - s(y_i) + s(y))``
among the labelings met.  The search is the same on every structure, only
the oracle differs, so it is written here once as an *ask / tell* driver
over a small state vector, and each kernel
(:func:`structlearn.kernels.approx_slack.approx_slack_batch`,
:func:`structlearn.kernels.chain.approx_slack_batch`) runs the loop::

    search_init(st, s_true, lam_l, L_max, L_eps, n_search)
    while True:
        lam = search_next(st)            # < 0: the search is over
        if lam < 0:
            break
        s, L = <the oracle's labeling at lam: score under theta, cost>
        if search_tell(st, s, L):        # a new largest slack hinge
            <keep the labeling>

(the driver cannot call the oracle itself: Numba would compile it once per
oracle, or dispatch through first-class functions, ~0.5 ms per call).

Skipped evaluations.  ``H`` is the maximum of the lines ``s(y) + lambda
L(y)``, hence convex: where the oracle returned labelings on the same line
``(s, L)`` at two points ``p < q``, ``H`` is that line on all of ``[p, q]``
and the oracle's labeling at any point between them lies on it too (a line
reaching ``H`` inside ``[p, q]`` and below it at both ends is the same
line).  Every golden-section point falls between two points already
evaluated (the bracket ends and the inner points), so when those two have the
same line (the same slope ``L`` already implies it: two parallel lines
cannot each be the maximum somewhere without coinciding; both are compared)
the driver answers the evaluation itself -- the same ``s``, ``L``,
``F`` and slack hinge as the oracle's, which is then not called.  Once the
bracket sits inside one piece of ``H`` the rest of the search costs nothing.
The labelings met are the reference's
(:meth:`structlearn.structures.base.Structure.approx_slack_search`, which
calls the oracle every time) except for exact ties between different
labelings with the same score and cost.

The upper end without a MAP call.  Sarawagi & Gupta set ``lambda_u = (s(y_1)
- s(y_i) + 1 - xi / L_max) / L_eps`` with ``y_1`` the MAP, one more oracle
call per row.  The first evaluation already bounds the MAP's score: ``H(lambda_l)
= max_{y != y_i} s(y) + lambda_l L(y)`` is at least the score of every
labeling other than ``y_i`` (costs are non-negative), so ``s(y_1) <=
max(s(y_i), H(lambda_l))``, at most ``lambda_l L_max = epsilon`` above it.
The driver uses that bound: ``lambda_u`` is then at most ``epsilon / L_eps``
larger than the paper's, which their argument allows (any ``lambda_u`` at
least theirs is sufficient), and the reference does the same.

Rows with nothing violated.  For the same reason, when ``H(lambda_l) <=
s(y_i) - 1`` every labeling other than ``y_i`` has a margin of at least 1,
so no slack hinge is positive: the search stops after that one call (the
result, ``y_i`` and a zero loss, is the reference's).  Late in training most
rows are such.
"""

import numpy as np
from numba import njit

__all__ = ["SEARCH_STATE", "search_best", "search_calls", "search_init", "search_next",
           "search_tell"]

_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0

# the slots of the state vector
(_E, _N, _A, _B, _X1, _X2, _F1, _F2, _SA, _LA, _SB, _LB, _S1, _L1, _S2, _L2,
 _XI, _BEST, _STRUE, _SMAP, _LAML, _LMAX, _LEPS, _LAM, _LEFT, _X1N, _X2N,
 _CALLS) = range(28)
#: length of the state vector
SEARCH_STATE = 28


@njit(cache=True, nogil=True, inline="always")
def search_init(st, s_true, lam_l, L_max, L_eps, n_search):
    """Start a search (one row) in the state vector ``st`` (float64, of
    :data:`SEARCH_STATE` entries): ``s_true = s(y_i)``, ``lam_l`` the lower end, ``L_max`` / ``L_eps`` the largest cost
    and the smallest gap between distinct costs, ``n_search`` golden-section
    evaluations after the two ends.  The count of oracle calls
    (:func:`search_calls`) carries over from row to row."""
    st[_E] = -2.0
    st[_N] = n_search
    st[_XI] = 0.0
    st[_BEST] = 0.0
    st[_STRUE] = s_true
    st[_LAML] = lam_l
    st[_LMAX] = L_max
    st[_LEPS] = L_eps
    st[_A] = lam_l
    st[_B] = lam_l


@njit(cache=True, nogil=True, inline="always")
def search_calls(st):
    """Oracle calls asked for since the state vector was zeroed."""
    return st[_CALLS]


@njit(cache=True, nogil=True, inline="always")
def _record(st, s, L):
    """The evaluation at the pending point ``st[_LAM]`` gave the line
    ``(s, L)``: update ``F`` at the inner points and the bracket's lines."""
    e = st[_E]
    lam = st[_LAM]
    f = s + lam * L - 2.0 * np.sqrt(st[_XI] * lam)
    if e == 0.0:
        st[_F1] = f
        st[_S1] = s
        st[_L1] = L
    elif e == 1.0:
        st[_F2] = f
        st[_S2] = s
        st[_L2] = L
    else:
        if st[_LEFT] != 0.0:
            st[_F2] = st[_F1]
            st[_S2] = st[_S1]
            st[_L2] = st[_L1]
            st[_F1] = f
            st[_S1] = s
            st[_L1] = L
        else:
            st[_F1] = st[_F2]
            st[_S1] = st[_S2]
            st[_L1] = st[_L2]
            st[_F2] = f
            st[_S2] = s
            st[_L2] = L
        st[_X1] = st[_X1N]
        st[_X2] = st[_X2N]
    st[_E] = e + 1.0


@njit(cache=True, nogil=True, inline="always")
def search_next(st):
    """The next ``lambda`` at which to call the oracle, or -1.0 when the
    search is over; evaluations whose answer is known (see the module
    docstring) are done here without the oracle."""
    while True:
        e = st[_E]
        if e == -2.0:
            lam = st[_LAML]
            break
        if e == -1.0:
            lam = max((st[_SMAP] - st[_STRUE] + 1.0 - st[_XI] / st[_LMAX]) / st[_LEPS],
                      st[_LAML])
            a = st[_A]
            st[_B] = lam
            st[_X1] = lam - _GOLDEN * (lam - a)
            st[_X2] = a + _GOLDEN * (lam - a)
            break
        if e >= st[_N]:
            return -1.0
        # the new point and the lines of its two evaluated neighbours
        if e == 0.0:
            lam = st[_X1]
            sp, Lp, sq, Lq = st[_SA], st[_LA], st[_SB], st[_LB]
        elif e == 1.0:
            lam = st[_X2]
            sp, Lp, sq, Lq = st[_S1], st[_L1], st[_SB], st[_LB]
        else:
            a = st[_A]
            b = st[_B]
            if st[_F1] <= st[_F2]:
                st[_LEFT] = 1.0
                b = st[_X2]
                st[_B] = b
                st[_SB] = st[_S2]
                st[_LB] = st[_L2]
                st[_X2N] = st[_X1]
                lam = b - _GOLDEN * (b - a)
                st[_X1N] = lam
                sp, Lp, sq, Lq = st[_SA], st[_LA], st[_S1], st[_L1]
            else:
                st[_LEFT] = 0.0
                a = st[_X1]
                st[_A] = a
                st[_SA] = st[_S1]
                st[_LA] = st[_L1]
                st[_X1N] = st[_X2]
                lam = a + _GOLDEN * (b - a)
                st[_X2N] = lam
                sp, Lp, sq, Lq = st[_S2], st[_L2], st[_SB], st[_LB]
        st[_LAM] = lam
        if sp == sq and Lp == Lq:
            _record(st, sp, Lp)   # H is this line between the neighbours
            continue
        break
    st[_LAM] = lam
    st[_CALLS] += 1.0
    return lam


@njit(cache=True, nogil=True, inline="always")
def search_tell(st, s, L):
    """The oracle's labeling at the ``lambda`` of :func:`search_next` has
    score ``s`` (under ``theta``) and cost ``L``; True when its slack hinge
    ``L (1 - s_true + s)`` is the largest met (the kernel keeps it then)."""
    g = L * (1.0 - st[_STRUE] + s)
    better = g > st[_BEST]
    if better:
        st[_BEST] = g
    e = st[_E]
    if e < 0.0:
        # the two ends: xi is the largest slack hinge met so far
        st[_XI] = st[_BEST]
        if e == -2.0:
            st[_SA] = s
            # H(lam_l) bounds the MAP's score (module docstring) ...
            h = s + st[_LAML] * L
            st[_SMAP] = max(st[_STRUE], h)
            if h <= st[_STRUE] - 1.0:
                # ... and certifies that nothing is violated: done
                st[_E] = max(st[_N], 0.0)
                return better
            st[_LA] = L
        else:
            st[_SB] = s
            st[_LB] = L
        st[_E] = e + 1.0
    else:
        _record(st, s, L)
    return better


@njit(cache=True, nogil=True, inline="always")
def search_best(st):
    """The largest slack hinge met (0 where none is positive)."""
    return st[_BEST]
