"""The generic solvers on small problems with known solutions."""

import threading
import warnings

import numpy as np
import pytest
import scipy.optimize
import scipy.special
from sklearn.exceptions import ConvergenceWarning

from structlearn.solvers import lbfgs, thread_map
from structlearn.solvers._lbfgs import _wolfe_search
from structlearn.solvers._sgd import _ScaledIterate


class FunctionProblem:
    """A 'problem' whose single sample's loss is ``f`` (nothing penalised)."""

    n_samples = 1

    def __init__(self, f, n, penalized=None):
        self.f = f
        self.penalized = np.zeros(n, dtype=bool) if penalized is None else penalized
        self.calls = 0

    def value_and_grad(self, z, idx=None):
        self.calls += 1
        v, g = self.f(z)
        return np.array([v]), g


def rosenbrock(z):
    a, b = z[:-1], z[1:]
    v = np.sum(100.0 * (b - a ** 2) ** 2 + (1 - a) ** 2)
    g = np.zeros_like(z)
    g[:-1] = -400.0 * a * (b - a ** 2) - 2.0 * (1 - a)
    g[1:] += 200.0 * (b - a ** 2)
    return v, g


def logistic_problem(seed=0, n=200, d=15):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sign(X @ rng.randn(d) + 0.5 * rng.randn(n))

    class P:
        n_samples = n
        penalized = np.ones(d, dtype=bool)

        def value_and_grad(self, z, idx=None):
            A, b = (X, y) if idx is None else (X[idx], y[idx])
            m = b * (A @ z)
            vals = np.logaddexp(0.0, -m)
            return vals, A.T @ (-b * scipy.special.expit(-m))

        def sq_norms(self):
            return np.einsum("ij,ij->i", X, X)

    return P()


def test_lbfgs_minimises_rosenbrock():
    pb = FunctionProblem(rosenbrock, 6)
    z, n_iter, f = lbfgs(pb, 0.0, np.full(6, -1.2), max_iter=500, tol=1e-8)
    np.testing.assert_allclose(z, np.ones(6), atol=1e-5)
    assert f < 1e-10
    assert n_iter < 200


@pytest.mark.parametrize("alpha", [1e-3, 1e-1])
def test_lbfgs_matches_scipy_on_regularised_logistic_regression(alpha):
    pb = logistic_problem()

    def obj(z):
        v, g = pb.value_and_grad(z)
        return v.mean() + 0.5 * alpha * z @ z, g / pb.n_samples + alpha * z

    ref = scipy.optimize.minimize(obj, np.zeros(15), jac=True, method="L-BFGS-B",
                                  options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000))
    z, _, f = lbfgs(pb, alpha, np.zeros(15), tol=1e-9)
    assert f == pytest.approx(ref.fun, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(z, ref.x, atol=1e-5)


def test_lbfgs_period_rule_stops_on_a_stalled_objective():
    pb = logistic_problem()
    alpha = 1e-2
    z_tight, it_tight, f_tight = lbfgs(pb, alpha, np.zeros(15), tol=1e-12, period=5)
    z_loose, it_loose, f_loose = lbfgs(pb, alpha, np.zeros(15), tol=1e-2, period=5)
    assert it_loose < it_tight
    assert it_loose > 5            # the rule needs `period` iterations of history
    assert f_loose >= f_tight - 1e-12
    assert (f_loose - f_tight) / f_tight < 1e-1


@pytest.mark.parametrize("max_iter", [1, 3, 8, 40])
def test_lbfgs_relative_gap_bounds_the_suboptimality(max_iter):
    # the certificate ||grad P||^2 / (2 alpha P) at any point bounds
    # (P - min P) / P, with min P from scipy; at the optimum it vanishes
    pb = logistic_problem(seed=3)
    alpha = 1e-2

    def obj(z):
        v, g = pb.value_and_grad(z)
        return v.mean() + 0.5 * alpha * z @ z, g / pb.n_samples + alpha * z

    best = scipy.optimize.minimize(obj, np.zeros(15), jac=True, method="L-BFGS-B",
                                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000)).fun
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        z, _, f, gap = lbfgs(pb, alpha, np.zeros(15), tol=1e-12, max_iter=max_iter,
                             return_gap=True)
    _, g = obj(z)
    assert f == pytest.approx(obj(z)[0], rel=1e-12)
    assert gap == pytest.approx(g @ g / (2 * alpha * f), rel=1e-9)
    assert (f - best) / f <= gap + 1e-12
    if max_iter == 40:
        assert gap < 1e-9
    else:
        assert gap > 1e-6  # a point short of the optimum has a visible gap


def test_lbfgs_gap_is_none_when_a_coordinate_is_not_penalised():
    pb = logistic_problem()
    pb.penalized = np.ones(15, dtype=bool)
    pb.penalized[0] = False
    *_, gap = lbfgs(pb, 1e-2, np.zeros(15), tol=1e-9, return_gap=True)
    assert gap is None
    *_, gap = lbfgs(logistic_problem(), 0.0, np.zeros(15), tol=1e-9, return_gap=True)
    assert gap is None


def test_lbfgs_minimises_a_barrier_function():
    # a barrier: +inf outside the unit ball; minimum of ||z - c||^2 inside it
    c = np.array([0.3, -0.2, 0.1])

    def f(z):
        if z @ z >= 1.0:
            return np.inf, np.full(3, np.nan)
        return float((z - c) @ (z - c) - np.log(1.0 - z @ z)), \
            2 * (z - c) + 2 * z / (1.0 - z @ z)

    pb = FunctionProblem(f, 3)
    z, _, val = lbfgs(pb, 0.0, np.zeros(3), tol=1e-10)
    ref = scipy.optimize.minimize(lambda v: f(v)[0], c * 0.5, method="Nelder-Mead",
                                  options=dict(xatol=1e-10, fatol=1e-14, maxiter=20000))
    assert np.isfinite(val)
    np.testing.assert_allclose(z, ref.x, atol=1e-5)


def test_lbfgs_warns_when_max_iter_is_reached():
    pb = FunctionProblem(rosenbrock, 4)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        lbfgs(pb, 0.0, np.full(4, -1.2), max_iter=3, tol=1e-12)


def test_lbfgs_rejects_a_non_finite_start():
    pb = FunctionProblem(lambda z: (np.nan, np.zeros(2)), 2)
    with pytest.raises(ValueError, match="not finite at the initial point"):
        lbfgs(pb, 0.0, np.zeros(2))


def test_wolfe_search_backs_off_from_non_finite_values():
    calls = []

    def fun(z):  # a quadratic with minimum at 1, undefined beyond 0.3
        calls.append(z[0])
        if z[0] > 0.3:
            return np.inf, np.array([np.nan])
        return (z[0] - 1.0) ** 2, np.array([2.0 * (z[0] - 1.0)])

    f0, g0 = fun(np.zeros(1))
    a, f, g, _ = _wolfe_search(fun, np.zeros(1), f0, g0, np.ones(1), 1.0)
    assert max(calls) > 0.3           # the unit step was tried
    assert 0.0 < a <= 0.3 and np.isfinite(f) and f < f0
    assert f <= f0 + 1e-4 * a * (g0 @ np.ones(1))


def test_wolfe_search_returns_a_strong_wolfe_step():
    rng = np.random.RandomState(0)
    for _ in range(20):
        A = rng.randn(5, 5)
        H = A @ A.T + 0.1 * np.eye(5)
        b = rng.randn(5)

        def fun(z):
            return 0.5 * z @ H @ z - b @ z, H @ z - b

        z = rng.randn(5)
        f0, g0 = fun(z)
        d = -g0
        for step in (1e-4, 1.0, 1e3):
            a, f, g, _ = _wolfe_search(fun, z, f0, g0, d, step)
            assert f <= f0 + 1e-4 * a * (g0 @ d)
            assert abs(g @ d) <= 0.9 * abs(g0 @ d) + 1e-12


@pytest.mark.parametrize("n_pairs", [0, 1, 2, 5])
def test_fused_two_loop_equals_the_textbook_recursion(n_pairs):
    """The fused kernel computes Nocedal & Wright's Algorithm 7.4 (pairs in
    a rotated row order, single-precision storage)."""
    from structlearn.solvers._lbfgs import _two_loop

    rng = np.random.RandomState(n_pairs)
    n = 37
    S = rng.randn(6, n).astype(np.float32)
    Y = (S + 0.3 * rng.randn(6, n)).astype(np.float32)
    rho = 1.0 / np.einsum("ij,ij->i", S.astype(float), Y.astype(float))
    order = list(np.roll(np.arange(6), 2)[:n_pairs])
    g, gamma = rng.randn(n), 0.7
    q = -g.copy()
    a = {}
    for r in reversed(order):
        a[r] = rho[r] * (S[r].astype(float) @ q)
        q -= a[r] * Y[r]
    q *= gamma
    for r in order:
        b = rho[r] * (Y[r].astype(float) @ q)
        q += (a[r] - b) * S[r]
    np.testing.assert_allclose(_two_loop(g, S, Y, rho, order, gamma), q, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("all_pen", [True, False])
def test_scaled_iterate_equals_eager_sgd_with_averaging(all_pen):
    """Scaled weights, sparse steps and the lazy average give the iterates
    and the average of plain dense SGD, through shrinkages, a fold of the
    scale into the weights and a zeroing step."""
    rng = np.random.RandomState(0)
    d = 40
    pen = np.ones(d, dtype=bool) if all_pen else rng.rand(d) < 0.7
    z0 = rng.randn(d)
    it = _ScaledIterate(z0, pen)
    z = z0.copy()
    iterates = []
    etas = [0.3] * 5 + [0.999] * 30 + [2.0] + [0.1] * 5   # 0.001^30 < 1e-9: a fold
    for t, eta in enumerate(etas):
        if t == 3:
            it.start_averaging()
        g = rng.randn(d) * (rng.rand(d) < 0.3)
        cols = np.flatnonzero(g)
        cols = np.concatenate([cols, cols[:2]])          # duplicate entries add up
        vals = np.concatenate([g[np.flatnonzero(g)], [0.5, -0.25]])
        g[cols[-2:]] += [0.5, -0.25]
        alpha = 1.0
        assert it.step(cols, vals, eta, alpha, 0.1)
        shrink = 1 - eta * alpha
        z[pen] *= shrink if shrink > 0 else 0.0
        z -= 0.1 * g
        if t >= 3:
            iterates.append(z.copy())
        np.testing.assert_allclose(it.current(), z, atol=1e-9)
    np.testing.assert_allclose(it.average(), np.mean(iterates, axis=0), atol=1e-9)
    assert not it.step(np.array([1, 2]), np.zeros(2), 0.1, 0.0, 1.0)


def test_thread_map_matches_serial_map_and_does_not_nest():
    items = list(range(23))
    assert thread_map(lambda x: x * x, items, 2) == [x * x for x in items]
    assert thread_map(lambda x: x + 1, iter(items), 1) == [x + 1 for x in items]

    def inner(x):
        # runs in a pool thread: a nested map must run serially, not deadlock
        return (threading.current_thread().name, thread_map(lambda v: v, [x, x], 2))

    out = thread_map(inner, items, 2)
    assert all(name.startswith("structlearn-") for name, _ in out)
    assert [r for _, r in out] == [[x, x] for x in items]


def test_fit_and_predict_run_blas_on_at_most_n_jobs_threads(monkeypatch,
                                                            original_blas_threads):
    """The fixed-size estimators' matrix products run inside
    ``blas_threads(n_jobs)``, which caps BLAS at ``n_jobs`` threads (one by
    default)."""
    from threadpoolctl import threadpool_info

    import structlearn.estimators._base as base
    from structlearn import MultiLabelClassifier
    from structlearn.solvers import blas_threads

    def blas_counts():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    with blas_threads(None):
        assert blas_counts() and all(n == 1 for n in blas_counts())
    with blas_threads(2):
        assert all(n <= 2 for n in blas_counts())

    seen = []
    real = base.blas_threads

    def recording(n_jobs):
        seen.append(n_jobs)
        return real(n_jobs)

    monkeypatch.setattr(base, "blas_threads", recording)
    rng = np.random.RandomState(0)
    X, Y = rng.randn(40, 3), (rng.rand(40, 3) > 0.5).astype(int)
    est = MultiLabelClassifier(loss="crf", n_jobs=2, max_iter=5).fit(X, Y)
    est.predict(X)
    assert seen == [2, 2]   # once around the solver, once around the scores


def test_sgd_step_calibration_returns_the_best_trial_of_its_grid():
    """The calibrated step is the one whose trial run (the run's own
    schedule, averaged over its last pass) scores best among the steps the
    search tried, checked against trials recomputed here independently."""
    from structlearn.losses import get_loss
    from structlearn.solvers import LinearProblem
    from structlearn.solvers._sgd import _calibrate_eta0
    from structlearn.structures import UnitCube

    rng = np.random.RandomState(0)
    X = rng.randn(120, 6)
    Y = (X @ rng.randn(6, 4) + 0.3 * rng.randn(120, 4) > 0).astype(float)
    problem = LinearProblem(X, Y, UnitCube(4), get_loss("hinge"), 4)
    alpha, z0 = 1e-2, np.zeros(problem.n_params)
    pen = problem.penalized

    passes = _calibrate_eta0.__defaults__[1]

    def score(eta, batch=16):
        z, t, avg = z0.copy(), 0, []
        for p in range(passes):
            for s in range(0, 120, batch):
                idx = np.arange(s, min(s + batch, 120))
                _, g = problem.value_and_grad(z, idx)
                step = eta / (1 + alpha * eta * t)
                z[pen] *= 1 - step * alpha
                z -= step / len(idx) * g
                t += 1
                if p == passes - 1:
                    avg.append(z.copy())
        za = np.mean(avg, axis=0)
        vals, _ = problem.value_and_grad(za, np.arange(120))
        return vals.mean() + 0.5 * alpha * za[pen] @ za[pen]

    eta = _calibrate_eta0(problem, alpha, z0, np.random.RandomState(0), 16)
    eta_init = 1.0 / np.mean(problem.sq_norms())
    k = np.log(eta / eta_init) / np.log(4.0)
    assert abs(k - round(k)) < 1e-9               # on the grid eta_init * 4^k
    f = score(eta)
    for nb in (eta * 4, eta / 4):                 # neighbours score no better
        assert f <= score(nb) + 1e-9


def test_sgd_trains_poslearn_from_the_all_ties_start():
    """PosLearn's subgradient at the all-zero start (every structure ties)
    is no descent direction, so a short trial increases the objective for
    every step size.  The calibration must still pick a step that trains:
    the former rule halved to its floor and 10 epochs left the objective
    where it started."""
    from structlearn import SequenceTagger
    from structlearn.datasets import load_ewt_pos

    X, y = load_ewt_pos()
    X, y = X[:400], y[:400]
    est = SequenceTagger(loss="poslearn", solver="sgd", alpha=2.0 / len(X), max_iter=10,
                         random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    # the objective at zero is the mean number of positions (every hinge is 1)
    f_start = np.mean([len(s) for s in y])
    assert est.objective_ < 0.6 * f_start


def test_lbfgs_keeps_the_correction_pairs_the_loss_declares(monkeypatch):
    """The estimator runs L-BFGS with the loss's ``lbfgs_history`` (SparseMAP:
    30) and its own default otherwise."""
    import structlearn.estimators._base as base
    from structlearn import SequenceTagger

    seen = []
    real = base.lbfgs

    def spy(*args, **kw):
        seen.append(kw["history"])
        return real(*args, **kw)

    monkeypatch.setattr(base, "lbfgs", spy)
    X = [np.eye(3)[[0, 1, 2, 1]], np.eye(3)[[2, 0]]]
    y = [["a", "b", "c", "b"], ["c", "a"]]
    for loss, expected in (("sparsemap", 30), ("m-sparsemap", 30), ("crf", 10)):
        SequenceTagger(loss=loss, max_iter=5).fit(X, y)
        assert seen[-1] == expected


@pytest.mark.parametrize("loss", ["hinge", "poslearn", "hinge-approx-slack", "sparsemap"])
def test_sgd_budget_stop_gives_one_clear_warning(loss):
    """A fit that SGD stops on its epoch budget warns once, saying so and
    naming the budget; a fit that stops by its own rule does not warn."""
    from structlearn import SequenceTagger
    from structlearn.datasets import load_ewt_pos

    X, y = load_ewt_pos()
    X, y = X[:150], y[:150]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SequenceTagger(loss=loss, solver="sgd", max_iter=3, random_state=0).fit(X, y)
    assert len(caught) == 1
    assert issubclass(caught[0].category, ConvergenceWarning)
    assert "stopped on its epoch budget (max_iter=3)" in str(caught[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SequenceTagger(loss=loss, solver="sgd", max_iter=10, tol=1e9, random_state=0).fit(X, y)
    assert caught == []
