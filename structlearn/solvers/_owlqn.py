"""OWL-QN: L-BFGS for the L1 (elastic-net) penalised smooth losses."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels.optim import penalized_grad
from ._lbfgs import _certifiable, _History, _period_rule


def pseudo_gradient(g, z, lam):
    """The pseudo-gradient of ``f(z) + sum_i lam_i |z_i|`` (Andrew & Gao,
    2007, Sec. 3.1) from the gradient ``g`` of the smooth part ``f``.

    Where ``z_i != 0`` it is the partial derivative ``g_i + lam_i
    sign(z_i)``; where ``z_i = 0`` it is the one-sided derivative that
    decreases the objective (``g_i + lam_i`` if that is negative, ``g_i -
    lam_i`` if that is positive), else 0.  It is the minimum-norm element of
    the subdifferential: the objective is minimal at ``z`` exactly when it
    is zero.

    Parameters
    ----------
    g : ndarray of shape (n,)
        Gradient of the smooth part at ``z``.
    z : ndarray of shape (n,)
        The point.
    lam : ndarray of shape (n,) or float
        Non-negative L1 weight of every coordinate (0: no L1 penalty).

    Returns
    -------
    ndarray of shape (n,)
    """
    right = g + lam   # derivative to the right of 0 (and where z > 0)
    left = g - lam    # derivative to the left of 0 (and where z < 0)
    at_zero = np.where(right < 0, right, np.where(left > 0, left, 0.0))
    return np.where(z > 0, right, np.where(z < 0, left, at_zero))


def owlqn(problem, alpha, z0, l1_ratio=1.0, max_iter=500, tol=1e-6, verbose=0, history=10,
          period=None):
    """OWL-QN on the elastic-net regularised objective (smooth losses).

    Minimises ``P(z) = (1/n) sum_i loss_i(z) + alpha * (l1_ratio *
    ||z_P||_1 + (1 - l1_ratio) / 2 * ||z_P||^2)`` over the problem's
    parameters ``z`` (``P``: ``problem.penalized``; the other coordinates,
    e.g. intercepts, are not penalised) by the orthant-wise limited-memory
    quasi-Newton method of Andrew & Gao (2007):

    * the steepest-descent direction is minus the *pseudo-gradient*
      (:func:`pseudo_gradient`), the minimum-norm subgradient of ``P``;
    * the quasi-Newton direction ``-H pg`` uses an L-BFGS inverse-Hessian
      approximation ``H`` built from the differences of the gradients of
      the smooth part only (loss plus L2 term) and is then zeroed wherever
      its sign disagrees with ``-pg``;
    * the line search (backtracking by halves from the unit step, the first
      step of unit length in ``z``) projects every trial point onto the
      orthant of the current point -- the sign of ``z_i``, or of ``-pg_i``
      where ``z_i = 0`` -- setting to zero the L1-penalised coordinates that
      would cross zero, and accepts sufficient decrease ``P(z') <= P(z) +
      1e-4 pg^T (z' - z)``.

    The zeros are exact: the returned weights are sparse.

    With ``period=None`` the run stops when the pseudo-gradient is below
    ``tol`` (``max_i |pg_i| <= tol``: a certificate of first-order
    optimality) or the relative objective decrease of an iteration is below
    ``tol * 1e-3``; with an integer ``period``, when the objective decreased
    by less than ``tol`` (relative) over the last ``period`` iterations
    (CRFsuite's ``delta``/``period`` rule).  ``history`` correction pairs are
    kept in single precision.  When ``l1_ratio < 1`` and every coordinate is
    penalised, ``P`` is ``mu = alpha (1 - l1_ratio)``-strongly convex and the
    pseudo-gradient bounds the suboptimality, ``P(z) - min P <= ||pg||^2 /
    (2 mu)``; that bound relative to ``P(z)`` is returned as ``gap`` (None
    otherwise).

    Parameters
    ----------
    problem : Problem
        The training problem (:class:`~structlearn.solvers.Problem`); the
        loss must be smooth.
    alpha : float
        Total penalty strength, >= 0.
    z0 : ndarray of shape (n_params,)
        Starting point.
    l1_ratio : float, default=1.0
        Share of the L1 penalty, in [0, 1].
    max_iter : int, default=500
        Maximum number of iterations.
    tol : float, default=1e-6
        Tolerance, see above.
    verbose : int, default=0
        Print a line per iteration (``verbose > 1``: per evaluation too).
    history : int, default=10
        Number of correction pairs.
    period : int or None, default=None
        The stopping rule, see above.

    Returns
    -------
    z : ndarray of shape (n_params,)
        The solution (exact zeros where the L1 penalty is active).
    n_iter : int
        Iterations run.
    objective : float
        ``P(z)``.
    pg_norm : float
        ``max_i |pg_i|`` at ``z``: zero exactly at a minimiser.
    gap : float or None
        The relative suboptimality bound described above.

    References
    ----------
    G. Andrew and J. Gao. Scalable training of L1-regularized log-linear
    models. ICML 2007.
    """
    if not 0.0 <= l1_ratio <= 1.0:
        raise ValueError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}.")
    if not alpha >= 0.0:
        raise ValueError(f"alpha must be non-negative, got {alpha!r}.")
    n = problem.n_samples
    pen = problem.penalized
    c1 = float(alpha) * float(l1_ratio)
    c2 = float(alpha) * (1.0 - float(l1_ratio))
    lam = c1 * pen.astype(np.float64) if c1 > 0 else 0.0
    l1_mask = pen if c1 > 0 else None
    t0 = time.perf_counter()
    calls = [0]
    strong = c2 > 0 and bool(np.all(pen)) and _certifiable(problem)

    def fun(z):
        """Objective ``P(z)`` and the gradient of its smooth part."""
        vals, g = problem.value_and_grad(z)
        g, sq = penalized_grad(g, z, pen, 1.0 / n, c2)
        calls[0] += 1
        if verbose > 1:
            print(f"[owlqn] evaluation {calls[0]:4d}  ({time.perf_counter() - t0:.1f}s)")
        f = vals.mean() + 0.5 * c2 * sq
        if c1 > 0:
            f += float(np.abs(z) @ lam)
        return float(f), g

    def rel_gap(f, pg):
        return float(pg @ pg) / (2.0 * c2 * max(f, 1e-300)) if strong else None

    z = np.array(z0, dtype=np.float64)
    f, g = fun(z)
    if not np.isfinite(f):
        raise ValueError(f"the objective is not finite at the initial point ({f}).")
    pg = pseudo_gradient(g, z, lam)
    hist = _History(len(z), history)
    trace = [f]
    ftol = tol * 1e-3
    message = "maximum number of iterations reached"
    converged = False
    it = 0
    pg_max = float(np.max(np.abs(pg), initial=0.0))
    if period is None and pg_max <= tol:
        converged, message = True, "pseudo-gradient below tol"
        max_iter = 0
    for it in range(1, max_iter + 1):
        d = hist.direction(pg)
        d[d * pg >= 0] = 0.0  # keep the components that descend along -pg
        gd = float(pg @ d)
        if not gd < 0:  # not a descent direction: restart from -pg
            hist.reset()
            d = -pg
            gd = -float(pg @ pg)
        if gd == 0.0:
            converged, message = True, "pseudo-gradient is zero"
            it -= 1
            break
        step = hist.initial_step(gd)
        if c1 > 0:
            orthant = np.where(z != 0, np.sign(z), -np.sign(pg))
        accepted = False
        for _ in range(40):
            z_new = z + step * d
            if c1 > 0:
                z_new[l1_mask & (z_new * orthant <= 0)] = 0.0
            f_new, g_new = fun(z_new)
            if np.isfinite(f_new) and f_new <= f + 1e-4 * float(pg @ (z_new - z)):
                accepted = True
                break
            step *= 0.5
        if not accepted:
            message = "the line search found no decrease"
            converged = True
            it -= 1
            break
        s = z_new - z
        hist.update(s, g_new, g)
        f_old = f
        z, f, g = z_new, f_new, g_new
        pg = pseudo_gradient(g, z, lam)
        pg_max = float(np.max(np.abs(pg), initial=0.0))
        trace.append(f)
        if verbose:
            print(f"[owlqn] iteration {it:4d}  objective {f:.6g}  |pg|_max {pg_max:.3g}  "
                  f"non-zeros {np.count_nonzero(z)}  ({time.perf_counter() - t0:.1f}s)")
        if period is not None:
            if _period_rule(trace, period, tol):
                converged, message = True, "period rule"
                break
        elif pg_max <= tol:
            converged, message = True, "pseudo-gradient below tol"
            break
        elif f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
            converged, message = True, "relative decrease below tol * 1e-3"
            break
    if verbose:
        print(f"[owlqn] {it} iterations, {calls[0]} evaluations, objective {f:.6g}, "
              f"|pg|_max {pg_max:.3g}, {np.count_nonzero(z)} non-zeros of {len(z)}, "
              f"{time.perf_counter() - t0:.2f}s: {message}")
    if not converged:
        warnings.warn(f"OWL-QN did not converge in max_iter={max_iter} iterations; "
                      f"increase max_iter or tol.", ConvergenceWarning)
    return z, int(it), float(f), pg_max, rel_gap(f, pg)
