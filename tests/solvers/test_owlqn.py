"""OWL-QN (``solvers.owlqn``) against independent optima.

The reference solves the same L1 / elastic-net problem in the split form
``z = u - v`` with ``u, v >= 0`` on the penalised coordinates, a smooth
bound-constrained problem, by scipy's L-BFGS-B.  The pseudo-gradient is
checked against the projection of 0 onto the subdifferential interval.
"""

import numpy as np
import pytest

from structlearn.losses import get_loss
from structlearn.solvers import LinearProblem, lbfgs, owlqn, pseudo_gradient
from structlearn.structures.cube import UnitCube
from l1_reference import split_reference


def multilabel_problem(loss, fit_intercept=True, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 12))
    Y = (X[:, :4] + 0.7 * rng.normal(size=(40, 4)) > 0).astype(float)
    return LinearProblem(X, Y, UnitCube(4), get_loss(loss), 4, fit_intercept)


def objective_l1(problem, z, alpha, l1_ratio):
    pen = problem.penalized
    vals, _ = problem.value_and_grad(z)
    zp = z[pen]
    return float(vals.mean() + alpha * l1_ratio * np.abs(zp).sum()
                 + 0.5 * alpha * (1 - l1_ratio) * zp @ zp)


def test_pseudo_gradient_is_the_minimum_norm_subgradient():
    rng = np.random.default_rng(1)
    z = rng.normal(size=200)
    z[rng.random(200) < 0.5] = 0.0
    g = rng.normal(size=200)
    lam = rng.random(200) * (rng.random(200) < 0.8)
    pg = pseudo_gradient(g, z, lam)
    # subdifferential of g_i + lam_i |z_i|: a point where z_i != 0, the
    # interval [g_i - lam_i, g_i + lam_i] at 0; its minimum-norm element
    lo = np.where(z > 0, g + lam, np.where(z < 0, g - lam, g - lam))
    hi = np.where(z > 0, g + lam, np.where(z < 0, g - lam, g + lam))
    assert np.array_equal(pg, np.clip(0.0, lo, hi))
    assert np.array_equal(pseudo_gradient(g, z, 0.0), g)


@pytest.mark.parametrize("loss", ["squared", "crf"])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_owlqn_reaches_the_split_formulation_optimum(loss, l1_ratio):
    problem = multilabel_problem(loss)
    alpha = 0.05
    z, n_iter, f, pg_max, gap = owlqn(problem, alpha, np.zeros(problem.n_params),
                                      l1_ratio=l1_ratio, tol=1e-9, max_iter=2000)
    z_ref, f_ref = split_reference(problem, alpha, l1_ratio)
    assert n_iter > 0
    assert f == pytest.approx(objective_l1(problem, z, alpha, l1_ratio), rel=1e-12)
    assert f <= f_ref + 1e-9 * abs(f_ref)
    assert f_ref - f <= 1e-6 * abs(f_ref)
    np.testing.assert_allclose(z, z_ref, atol=2e-4)
    # exact zeros where the reference is (numerically) zero, and the L1
    # penalty sets some penalised weights to zero
    pen = problem.penalized
    assert np.all(z[pen & (np.abs(z_ref) < 1e-7)] == 0.0)
    assert np.count_nonzero(z[pen] == 0.0) > 0
    assert gap is None  # the intercepts are not penalised: no strong convexity bound
    # KKT from the smooth gradient
    n = problem.n_samples
    _, g = problem.value_and_grad(z)
    g = g / n + alpha * (1 - l1_ratio) * pen * z
    c1 = alpha * l1_ratio
    nz = z != 0
    assert np.all(np.abs(g[pen & ~nz]) <= c1 + 1e-6)
    np.testing.assert_allclose(g[pen & nz], -c1 * np.sign(z[pen & nz]), atol=1e-5)
    np.testing.assert_allclose(g[~pen], 0.0, atol=1e-5)


def test_owlqn_without_l1_is_the_l2_optimum():
    problem = multilabel_problem("crf")
    alpha = 0.05
    z, _, f, _, _ = owlqn(problem, alpha, np.zeros(problem.n_params), l1_ratio=0.0,
                          tol=1e-10, max_iter=2000)
    z_ref, _, f_ref = lbfgs(problem, alpha, np.zeros(problem.n_params), tol=1e-10,
                            max_iter=2000)
    assert f == pytest.approx(f_ref, rel=1e-10)
    np.testing.assert_allclose(z, z_ref, atol=1e-5)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_owlqn_strong_convexity_bound_brackets_the_optimum():
    # every coordinate penalised (no intercept): P(z) - min P <= ||pg||^2 / (2 mu)
    problem = multilabel_problem("crf", fit_intercept=False)
    alpha, r = 0.05, 0.5
    _, f_ref = split_reference(problem, alpha, r)
    for max_iter in (3, 8, 300):
        z, _, f, pg_max, gap = owlqn(problem, alpha, np.zeros(problem.n_params),
                                     l1_ratio=r, tol=1e-12, max_iter=max_iter)
        assert gap is not None
        assert f - f_ref <= gap * f + 1e-12
    assert gap < 1e-10


def test_owlqn_rejects_bad_parameters():
    problem = multilabel_problem("squared")
    with pytest.raises(ValueError, match="l1_ratio"):
        owlqn(problem, 0.1, np.zeros(problem.n_params), l1_ratio=1.5)
    with pytest.raises(ValueError, match="alpha"):
        owlqn(problem, -1.0, np.zeros(problem.n_params), l1_ratio=0.5)
