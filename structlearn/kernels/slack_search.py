"""The search of approximate slack scaling, written once for every kernel.

Approximate slack scaling (Sarawagi & Gupta 2008, Sec. 3; the choices are in
:class:`structlearn.losses.Hinge`) minimises over ``lambda`` in ``[lambda_l,
lambda_u]``

    F(lambda) = H(lambda) - 2 sqrt(xi lambda),
    H(lambda) = max_{y != y_i} s(y) + lambda L(y),

each evaluation of ``H`` one call of the cost-augmented top-2 oracle; the
loss is the largest slack hinge ``L(y)(1 - s(y_i) + s(y))`` among the
labelings met.  The search is the same on every structure, only the oracle
differs, so it is written here once as an *ask / tell* driver over a small
state vector, and each kernel
(:func:`structlearn.kernels.approx_slack.approx_slack_batch`,
:func:`structlearn.kernels.chain.approx_slack_batch`) runs the loop::

    search_init(st, s_true, lam_l, L_max, L_eps, L_gap, n_search)
    while True:
        lam = search_next(st)            # < 0: the search is over
        if lam < 0:
            break
        s, L = <the oracle's labeling at lam: score under theta, cost>
        if search_tell(st, s, L):        # a new largest slack hinge
            <keep the labeling>

(the driver cannot call the oracle itself: Numba would compile it once per
oracle, or dispatch through first-class functions, ~0.5 ms per call).  The
reference written with the structures' batched oracles,
:meth:`structlearn.structures.base.Structure.approx_slack_search`, makes the
same decisions with the same formulas, and the kernels are tested equal to
it.

The line search: breakpoints, not golden section.  The paper minimises the
convex ``F`` (Claim 3.2) by "efficient line search algorithms such as Golden
Search".  ``H`` is the maximum of the lines ``s(y) + lambda L(y)`` and each
oracle call returns the line that is the maximum at the point asked, so the
pieces of ``H`` at the minimum are found, not narrowed down to a tolerance.
The bracket ``[a, b]`` keeps the
lines found at its ends; the next point is where they cross, ``c = (s_a -
s_b) / (L_b - L_a)``.  If the labeling found at ``c`` lies on the two lines
(``H(c)`` equals their value), ``H`` is their maximum on all of ``[a, b]``
and no other labeling is the oracle's answer anywhere inside: the search is
over.  Otherwise the new line is a new piece of ``H`` with a slope between
the ends', and ``F``'s subgradient there, ``L_c - sqrt(xi / c)``, says on
which side the minimum lies (zero: ``c`` is the minimum, the search is over).
The point asked for is not the crossing itself but a millionth of the
bracket to its right: at the crossing the two end labelings tie by
construction, and so may others (on the permutahedron, every permutation
that ranks the two swapped labels next to each other), and oracles break
such ties differently (a warm-started sort, a fresh one); a little to the
right the tie is broken towards the larger cost, by every oracle alike.  A
line above both end lines anywhere in the bracket is above them at their
crossing (it is below them at the ends, they form a V), so a new piece of
``H`` always contains the crossing; it is missed only when it ends less
than the shift to the right of the crossing, however far it reaches to
the left -- the price of a deterministic tie-break.  Every call but the
last finds a new piece, so the search ends after at most the number of
pieces inside the bracket; on CoNLL-2000 chains during an SGD fit it made
4.5 calls per sentence against golden section's 8.6 with skips (14
without), and the losses met summed to within 0.1 % of golden section's
(both 0.3-0.4 % below the exact slack loss;
``benchmarks/micro/bench_aslack_quality.py``); ``n_search`` caps the calls
after the two ends.

Stopping when nothing better can be met.  Every labeling lies below both end
lines: ``s(y) <= H(a) - a L(y)`` and ``s(y) <= H(b) - b L(y)``, so its slack
hinge is at most ``max_L L (1 - s(y_i) + min(H(a) - a L, H(b) - b L))``
(two concave quadratics) over the costs it can have.  Everything the search
can still meet lies strictly between the ends' costs, at least the smallest
cost gap ``L_gap`` from each (``L_gap = 0`` where that gap is not known
exactly: only the strict bracket is used).  When this bound is at most the
largest slack hinge met, no call can change the result, and the search
stops: the result is the one the search without this test would return
(but for exact ties), with fewer calls.

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
result, ``y_i`` and a zero loss, is the reference's, which does not stop).
Late in training most rows are such.
"""

import numpy as np
from numba import njit

__all__ = ["SEARCH_STATE", "hinge_bound", "hinge_bound_rows", "search_best", "search_calls", "search_init",
           "search_next", "search_tell"]

#: relative tolerance of "the labeling at the crossing lies on the end lines"
#: (the two lines' values there agree only up to round-off)
LINE_RTOL = 1e-12
#: the point asked for is this fraction of the way from the crossing to the
#: bracket's upper end (module docstring: ties at the crossing)
SHIFT = 1e-6

# the slots of the state vector
(_E, _N, _A, _B, _SA, _LA, _SB, _LB, _XI, _BEST, _STRUE, _LAML, _LMAX, _LEPS, _LGAP,
 _LAM, _CALLS) = range(17)
#: length of the state vector
SEARCH_STATE = 17


@njit(cache=True, nogil=True, inline="always")
def search_init(st, s_true, lam_l, L_max, L_eps, L_gap, n_search):
    """Start a search (one row) in the state vector ``st`` (float64, of
    :data:`SEARCH_STATE` entries): ``s_true = s(y_i)``, ``lam_l`` the lower
    end, ``L_max`` / ``L_eps`` the largest cost and the smallest gap between
    distinct costs (``lambda_u``), ``L_gap`` that gap where it is exact, else
    0 (the stopping bound), ``n_search`` the most evaluations after the two
    ends.  The count of oracle calls (:func:`search_calls`) carries over
    from row to row."""
    st[_E] = -2.0
    st[_N] = n_search
    st[_XI] = 0.0
    st[_BEST] = 0.0
    st[_STRUE] = s_true
    st[_LAML] = lam_l
    st[_LMAX] = L_max
    st[_LEPS] = L_eps
    st[_LGAP] = L_gap
    st[_A] = lam_l
    st[_B] = lam_l


@njit(cache=True, nogil=True, inline="always")
def search_calls(st):
    """Oracle calls asked for since the state vector was zeroed."""
    return st[_CALLS]


@njit(cache=True, nogil=True)
def hinge_bound(s_a, L_a, a, s_b, L_b, b, m, gap):
    """The largest slack hinge ``L (m + s)`` (``m = 1 - s(y_i)``) of any
    labeling below the two lines ``s + a L <= s_a + a L_a`` and ``s + b L <=
    s_b + b L_b`` (``a < b``) with a cost ``L`` in ``[L_a + gap, L_b -
    gap]``; ``-inf`` where that interval is empty, ``inf`` where ``a <=
    0``."""
    lo = L_a + gap
    hi = L_b - gap
    if lo > hi:
        return -np.inf
    if a <= 0.0:
        return np.inf   # lambda_l = 0 (epsilon = 0): no bound from line a
    Ha = s_a + a * L_a
    Hb = s_b + b * L_b
    # the lines cross at Lx: line a is the lower below it, line b above
    Lx = min(max((Hb - Ha) / (b - a), lo), hi)
    # L (m + H - lam L) is concave, largest at (m + H) / (2 lam)
    L1 = min(max((m + Ha) / (2.0 * a), lo), Lx)
    L2 = min(max((m + Hb) / (2.0 * b), Lx), hi)
    return max(L1 * (m + Ha - a * L1), L2 * (m + Hb - b * L2))


@njit(cache=True, nogil=True)
def hinge_bound_rows(s_a, L_a, a, s_b, L_b, b, m, gap, rows):
    """:func:`hinge_bound` of every row where ``rows`` is True (float64
    arrays; ``gap`` one number), ``-inf`` elsewhere: the stopping test of
    the batched reference search
    (:meth:`structlearn.structures.base.Structure.approx_slack_search`)."""
    out = np.full(a.shape[0], -np.inf)
    for i in range(a.shape[0]):
        if rows[i]:
            out[i] = hinge_bound(s_a[i], L_a[i], a[i], s_b[i], L_b[i], b[i], m[i], gap)
    return out


@njit(cache=True, nogil=True, inline="always")
def search_next(st):
    """The next ``lambda`` at which to call the oracle, or -1.0 when the
    search is over (see the module docstring)."""
    e = st[_E]
    if e == -2.0:
        lam = st[_LAML]
    elif e == -1.0:
        lam = max((max(st[_STRUE], st[_SA] + st[_LAML] * st[_LA]) - st[_STRUE] + 1.0
                   - st[_XI] / st[_LMAX]) / st[_LEPS], st[_LAML])
    else:
        if e >= st[_N]:
            return -1.0
        s_a = st[_SA]
        L_a = st[_LA]
        s_b = st[_SB]
        L_b = st[_LB]
        a = st[_A]
        b = st[_B]
        if L_b == L_a:
            return -1.0   # one line: H is that line on [a, b]
        cross = (s_a - s_b) / (L_b - L_a)
        if not (a < cross < b):
            return -1.0   # round-off: the lines are nearly parallel
        lam = cross + SHIFT * (b - cross)
        if hinge_bound(s_a, L_a, a, s_b, L_b, b, 1.0 - st[_STRUE], st[_LGAP]) <= st[_BEST]:
            return -1.0   # nothing left to meet beats the best met
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
    if e == -2.0:
        st[_SA] = s
        st[_LA] = L
        # xi: the largest slack hinge met at the ends
        st[_XI] = st[_BEST]
        st[_E] = -1.0
        if s + st[_LAML] * L <= st[_STRUE] - 1.0:
            # H(lam_l) <= s(y_i) - 1: nothing is violated, done
            st[_E] = max(st[_N], 0.0)
    elif e == -1.0:
        st[_B] = st[_LAM]
        st[_SB] = s
        st[_LB] = L
        st[_XI] = st[_BEST]
        st[_E] = 0.0
    else:
        c = st[_LAM]
        h = s + c * L
        on = max(st[_SA] + c * st[_LA], st[_SB] + c * st[_LB])
        if h <= on + LINE_RTOL * (abs(h) + 1.0):
            st[_E] = st[_N]   # H is the two end lines' maximum on [a, b]: done
            return better
        d = L - np.sqrt(st[_XI] / c)
        if d > 0.0:           # F increases at c: the minimum is left of it
            st[_B] = c
            st[_SB] = s
            st[_LB] = L
        elif d < 0.0:
            st[_A] = c
            st[_SA] = s
            st[_LA] = L
        else:
            st[_E] = st[_N]   # c is the minimum
            return better
        st[_E] = e + 1.0
    return better


@njit(cache=True, nogil=True, inline="always")
def search_best(st):
    """The largest slack hinge met (0 where none is positive)."""
    return st[_BEST]
