"""The approximate-slack line search (kernels.slack_search) on explicit sets
of labelings: each labeling is a line ``s + lambda L`` and the oracle is the
maximum over them, so ``H``, ``F`` and the slack hinges are known exactly."""

import numpy as np
import pytest

from structlearn.kernels import slack_search as ss


def _lines(rng, n_lab, L_max, integer=True):
    """Scores and costs of ``n_lab`` labelings other than the truth (score
    0), costs in ``1..L_max`` (integers) or ``(0, L_max]``."""
    L = (rng.integers(1, L_max + 1, n_lab) if integer
         else rng.uniform(0.05, L_max, n_lab)).astype(float)
    s = rng.normal(scale=rng.choice([0.3, 1.0, 3.0]), size=n_lab) - 0.4 * L
    return s, L


def _run(search_next, search_tell, s, L, s_true, lam_l, L_max, L_eps, gap, n_search):
    """The driver's loop with the oracle ``argmax_j s_j + lam L_j``; returns
    the labelings met (in order), the largest slack hinge, the state."""
    st = np.zeros(ss.SEARCH_STATE)
    ss.search_init(st, s_true, lam_l, L_max, L_eps, gap, n_search)
    met, lams = [], []
    while True:
        lam = search_next(st)
        if lam < 0:
            break
        v = s + lam * L
        j = int(np.flatnonzero(v == v.max())[-1])
        met.append(j)
        lams.append(lam)
        search_tell(st, s[j], L[j])
    return met, lams, ss.search_best(st), st


def _F_argmin_labelings(s, L, xi, lo, hi):
    """The labelings that are the maximum of ``H`` where ``F = H - 2
    sqrt(xi lambda)`` is smallest on ``[lo, hi]``: ``F`` is convex, and its
    minimum lies at a breakpoint of ``H``, an end, or inside a piece ``j``
    at ``xi / L_j^2``; all these candidates are evaluated."""
    cand = [lo, hi]
    for i in range(len(s)):
        for j in range(len(s)):
            if L[i] != L[j]:
                cand.append((s[i] - s[j]) / (L[j] - L[i]))
    cand.extend(xi / L ** 2)
    cand = np.array([c for c in cand if lo <= c <= hi])
    H = np.max(s[None, :] + cand[:, None] * L[None, :], axis=1)
    F = H - 2.0 * np.sqrt(xi * cand)
    at = cand[np.isclose(F, F.min(), rtol=1e-9, atol=1e-9)]
    out = set()
    for lam in at:
        v = s + lam * L
        out.update(np.flatnonzero(np.isclose(v, v.max(), rtol=1e-9, atol=1e-9)).tolist())
    return out


@pytest.mark.parametrize("integer", [True, False])
def test_hinge_bound_bounds_every_labeling_below_the_two_lines(integer):
    # brute force: every labeling below both end lines with a cost in
    # [L_a + gap, L_b - gap] has a slack hinge at most the bound, and the
    # bound is attained by a point of that region (it is tight)
    rng = np.random.default_rng(0)
    tight = 0
    for _ in range(300):
        a, b = np.sort(rng.uniform(0.01, 3.0, 2))
        L_a, L_b = np.sort(rng.integers(0, 12, 2)).astype(float)
        if L_b == L_a:
            continue
        s_a, s_b = rng.normal(scale=3.0, size=2)
        m = rng.normal(scale=2.0)
        gap = 1.0 if integer else 0.0
        bound = ss.hinge_bound(s_a, L_a, a, s_b, L_b, b, m, gap)
        Ls = (np.arange(L_a + 1, L_b) if integer
              else np.linspace(L_a, L_b, 2001))
        if len(Ls) == 0:
            assert bound == -np.inf
            continue
        top = np.minimum(s_a + a * L_a - a * Ls, s_b + b * L_b - b * Ls)
        for frac in (1.0, 0.7, 0.0):   # points at and below the lines
            g = Ls * (m + top - (1.0 - frac) * rng.random(len(Ls)))
            assert np.all(g <= bound + 1e-9 * (1 + abs(bound)))
        if not integer:
            g = Ls * (m + top)
            tight += bool(np.isclose(g.max(), bound, rtol=1e-5, atol=1e-6))
    if not integer:
        assert tight > 50


@pytest.mark.parametrize("integer", [True, False])
def test_the_search_meets_the_labelings_at_the_minimum_of_F(integer):
    # the breakpoint search minimises F exactly: with no cap and no
    # stopping bound, the labelings maximising H at F's minimum (found by
    # evaluating F at every breakpoint, end and stationary point) are met
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(400):
        L_max = int(rng.integers(3, 15))
        s, L = _lines(rng, int(rng.integers(2, 30)), L_max, integer)
        s_true, lam_l = rng.normal(scale=0.5), 1e-3 / L_max
        no_bound = ss.search_next.py_func.__globals__
        met, lams, best, st = _run_without_bound(s, L, s_true, lam_l, float(L_max),
                                                 1.0 if integer else 0.05, no_bound)
        if len(met) < 2:   # nothing violated: certified after one call
            v = s + lam_l * L
            assert v.max() <= s_true - 1.0
            assert np.all(L * (1.0 - s_true + s) <= 0.0)
            continue
        xi = st[ss._XI]
        lo, hi = lam_l, lams[1]
        want = _F_argmin_labelings(s, L, xi, lo, hi)
        # all of them: at a breakpoint both neighbouring pieces (the ends of
        # the last bracket); a miss by the shift off the crossing would show
        assert want <= set(met), (want, met)
        # and the result is the largest slack hinge among those met
        g = L * (1.0 - s_true + s)
        assert best == max(0.0, g[met].max())
        checked += 1
    assert checked > 300


def _run_without_bound(s, L, s_true, lam_l, L_max, L_eps, g):
    """The driver in Python with the stopping bound switched off."""
    saved = g["hinge_bound"]
    g["hinge_bound"] = lambda *args: np.inf
    try:
        return _run(ss.search_next.py_func, ss.search_tell.py_func, s, L, s_true, lam_l,
                    L_max, L_eps, 0.0, 1000)
    finally:
        g["hinge_bound"] = saved


@pytest.mark.parametrize("integer", [True, False])
def test_the_stopping_bound_changes_calls_not_results(integer):
    # the compiled driver (stopping bound on, gap 1 for integer costs)
    # returns the largest slack hinge of the search without the bound, with
    # fewer oracle calls
    rng = np.random.default_rng(2)
    g = ss.search_next.py_func.__globals__
    saved_calls = 0
    for _ in range(400):
        L_max = int(rng.integers(3, 15))
        s, L = _lines(rng, int(rng.integers(2, 30)), L_max, integer)
        lam_l = 1e-3 / L_max
        L_eps = 1.0 if integer else 0.05
        gap = 1.0 if integer else 0.0
        s_true = rng.normal(scale=0.5)
        met_full, _, best_full, _ = _run_without_bound(s, L, s_true, lam_l, float(L_max),
                                                       L_eps, g)
        met, _, best, _ = _run(ss.search_next, ss.search_tell, s, L, s_true, lam_l,
                               float(L_max), L_eps, gap, 1000)
        assert best == best_full
        assert len(met) <= len(met_full)
        saved_calls += len(met_full) - len(met)
    assert saved_calls > 20


def test_n_search_caps_the_calls_after_the_two_ends():
    rng = np.random.default_rng(3)
    for n_search in (0, 1, 2, 5):
        for _ in range(100):
            s, L = _lines(rng, 40, 30, True)
            met, _, _, _ = _run(ss.search_next, ss.search_tell, s, L, 0.0, 1e-3 / 30, 30.0,
                                1.0, 1.0, n_search)
            assert len(met) <= n_search + 2


def test_hinge_bound_rows_is_hinge_bound_on_the_rows_asked_for():
    # the batched reference search's stopping test
    rng = np.random.default_rng(4)
    n = 50
    a = rng.uniform(0.01, 1.0, n)
    b = a + rng.uniform(0.01, 1.0, n)
    L_a = rng.integers(0, 5, n).astype(float)
    L_b = L_a + rng.integers(0, 6, n)
    s_a, s_b, m = rng.normal(size=(3, n))
    rows = rng.random(n) < 0.7
    got = ss.hinge_bound_rows(s_a, L_a, a, s_b, L_b, b, m, 1.0, rows)
    want = [ss.hinge_bound(s_a[i], L_a[i], a[i], s_b[i], L_b[i], b[i], m[i], 1.0)
            if rows[i] else -np.inf for i in range(n)]
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got[rows]).any()
