"""L-BFGS with a Wolfe line search, for the smooth losses."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels.optim import lbfgs_two_loop, penalized_grad, store_correction_pair


def _two_loop(g, S, Y, rho, order, gamma):
    """``-H g`` for the L-BFGS inverse-Hessian approximation (Nocedal &
    Wright, Algorithm 7.4); ``order``: rows of ``S, Y`` oldest first."""
    return lbfgs_two_loop(g, S, Y, rho, np.asarray(order, dtype=np.int64), gamma)


class _History:
    """The limited-memory inverse-Hessian approximation shared by L-BFGS and
    OWL-QN: the last ``m`` correction pairs ``(s, y)`` in single precision
    (half the memory: ``2 * (m + 1) * n`` float32, the solvers' largest
    array), their curvatures ``rho = 1 / s^T y`` computed from the stored
    (rounded) pairs -- so the implicit matrix is the BFGS matrix of exactly
    those pairs -- and the scaling ``gamma = s^T y / y^T y`` of the newest
    pair (Nocedal & Wright, eq. 7.20)."""

    def __init__(self, n, m):
        m = max(1, int(m))
        self.m = m
        self.S = np.empty((m + 1, n), dtype=np.float32)
        self.Y = np.empty((m + 1, n), dtype=np.float32)
        self.rho = np.empty(m + 1)
        self.order = []  # rows of S, Y in use, oldest first
        self.gamma = 1.0

    def direction(self, g):
        """``-H g``."""
        return _two_loop(g, self.S, self.Y, self.rho, self.order, self.gamma)

    def reset(self):
        """Forget every pair (the next direction is ``-gamma g``)."""
        self.order = []

    def initial_step(self, gd):
        """The first trial step along a direction with slope ``gd``: the
        unit step, or without pairs (first iteration, restart) the step of
        unit length in ``z`` (at most 1), as libLBFGS (``1 / ||g||``)."""
        if self.order:
            return 1.0
        return min(1.0, 1.0 / max(np.sqrt(-gd), 1e-300))

    def update(self, s, g_new, g_old):
        """Add the pair ``(s, g_new - g_old)`` if its curvature is positive
        (so the approximation stays positive definite); the oldest pair
        leaves when ``m`` are kept."""
        # the new pair goes into a row not in use (there is one more row
        # than pairs kept); it joins the history only if its curvature is
        # positive, and then the oldest pair leaves
        r = min(set(range(self.m + 1)).difference(self.order))
        sy, yy = store_correction_pair(s, g_new, g_old, self.S[r], self.Y[r])
        if sy > 1e-10 * yy and np.isfinite(sy) and np.isfinite(yy):
            if len(self.order) == self.m:
                self.order.pop(0)
            self.rho[r] = 1.0 / sy
            self.order.append(r)
            self.gamma = sy / yy


def _period_rule(trace, period, tol):
    """CRFsuite's ``delta``/``period`` stopping rule: the objective decreased
    by less than ``tol`` (relative) over the last ``period`` iterations."""
    return len(trace) > period + 1 and trace[-period - 1] - trace[-1] <= \
        tol * max(abs(trace[-1]), 1e-12)


def _cubic_min(a, fa, da, b, fb, db):
    """Minimiser of the cubic interpolating ``f, f'`` at ``a`` and ``b``
    (None when it does not exist)."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    if not disc >= 0.0:
        return None
    d2 = np.copysign(np.sqrt(disc), b - a)
    den = db - da + 2.0 * d2
    if den == 0.0:
        return None
    t = b - (b - a) * (db + d2 - d1) / den
    return t if np.isfinite(t) else None


def _wolfe_search(fun, z, f0, g0, d, step, c1=1e-4, c2=0.9, max_evals=20):
    """Step along ``d`` meeting the strong Wolfe conditions (Nocedal &
    Wright, Algorithms 3.5 and 3.6, cubic interpolation safeguarded to the
    middle 80% of the bracket).  A non-finite objective counts as too large.

    Returns ``(step, f, g, n_evals)``; ``step`` is 0 when no point with
    sufficient decrease was found in ``max_evals`` evaluations.
    """
    dphi0 = float(g0 @ d)

    def phi(a):
        f, g = fun(z + a * d)
        f = float(f)
        if not np.isfinite(f):
            f = np.inf
        return f, g, float(g @ d) if np.isfinite(f) else np.nan

    best = (0.0, f0, g0)  # best point with sufficient decrease
    lo, f_lo, d_lo = 0.0, f0, dphi0
    hi = f_hi = d_hi = None
    a = step
    for k in range(1, max_evals + 1):
        f, g, dphi = phi(a)
        armijo = f <= f0 + c1 * a * dphi0
        if armijo and f < best[1]:
            best = (a, f, g)
        if not armijo or f >= f_lo:
            hi, f_hi, d_hi = a, f, dphi
        else:
            if abs(dphi) <= -c2 * dphi0:
                return a, f, g, k
            if dphi * (a - lo) >= 0:
                hi, f_hi, d_hi = lo, f_lo, d_lo
            lo, f_lo, d_lo = a, f, dphi
        if hi is None:  # still expanding
            a *= 4.0
            continue
        width = hi - lo
        t = None
        if np.isfinite(f_hi) and np.isfinite(d_hi):
            t = _cubic_min(lo, f_lo, d_lo, hi, f_hi, d_hi)
        a_min, a_max = sorted((lo + 0.1 * width, hi - 0.1 * width))
        a = lo + 0.5 * width if t is None or not a_min <= t <= a_max else t
        if abs(width) <= 1e-16 * max(1.0, abs(lo)):
            break
    a, f, g = best
    return a, f, g, max_evals


def _certifiable(problem):
    """Whether a gradient-based duality gap certifies ``problem``'s optimum:
    a differentiable loss (``Loss.differentiable``; declared by the
    problem) and complete targets (partial ones make the objective
    non-convex)."""
    return getattr(problem, "differentiable", True) and not getattr(problem, "partial", False)


def lbfgs(problem, alpha, z0, max_iter=500, tol=1e-6, verbose=0, history=10, period=None,
          return_gap=False):
    """L-BFGS on the regularised objective (smooth losses).

    Limited-memory BFGS (Nocedal & Wright, Algorithm 7.5) with a strong
    Wolfe line search; the first step has unit length in ``z``, later ones
    try the unit step first.  With ``period=None``, ``tol`` is the gradient
    tolerance (``max_i |grad_i| <= tol``) and the relative objective
    tolerance is ``tol * 1e-3``.  With an integer ``period``, the run stops
    when the objective decreased by less than ``tol`` (relative) over the
    last ``period`` iterations -- CRFsuite's ``delta``/``period`` rule,
    suited to large sparse models whose gradient norm decreases slowly.
    ``history`` is the number of correction pairs kept, in single
    precision (memory ``2 * (history + 1) * n_params`` float32).  A correction
    pair with ``s^T y <= 0`` (numerically) is skipped, so the approximation
    stays positive definite.

    **A duality gap for free.**  Every loss here is a maximum over a convex
    set, ``loss_i(theta) = max_mu <a_i(mu), theta> + h_i(mu)`` with ``h_i``
    concave (the CRF: the entropy; SparseMAP: minus half the squared norm of
    the penalised marginals), and the oracle's gradient is ``a_i(mu_i)`` at
    the maximiser.  Those maximisers are a dual point (see :func:`bcfw`)
    with ``w(mu) = -grad L(z) / alpha``, and its dual value is ``L(z) -
    <grad L(z), z> - ||grad L(z)||^2 / (2 alpha)``; so when every coordinate
    is penalised,

        P(z) - D(mu(z)) = ||grad P(z)||^2 / (2 alpha),

    a certified bound on ``P(z) - min P``.  With ``return_gap`` the relative
    gap ``||grad P||^2 / (2 alpha P)`` at the returned point is returned too
    (None when some coordinates are not penalised: the dual point is then
    not feasible, when ``alpha`` is 0, or when the gap would not certify:
    a loss not differentiable there -- SparseMAP on a chain -- or partial
    targets).  It is printed with ``verbose``.

    Returns
    -------
    z, n_iter, objective_value[, relative_gap]
    """
    n = problem.n_samples
    pen = problem.penalized
    t0 = time.perf_counter()
    calls = [0]
    certify = alpha > 0 and bool(np.all(pen)) and _certifiable(problem)

    def rel_gap(f, g):
        return float(g @ g) / (2.0 * alpha * max(f, 1e-300)) if certify else None

    def fun(z):
        vals, g = problem.value_and_grad(z)
        g, sq = penalized_grad(g, z, pen, 1.0 / n, alpha)
        calls[0] += 1
        if verbose > 1:
            print(f"[lbfgs] evaluation {calls[0]:4d}  ({time.perf_counter() - t0:.1f}s)")
        return vals.mean() + 0.5 * alpha * sq, g

    z = np.array(z0, dtype=np.float64)
    f, g = fun(z)
    hist = _History(len(z), history)
    trace = [f]
    ftol = tol * 1e-3
    message = "maximum number of iterations reached"
    converged = False
    it = 0
    if not np.isfinite(f):
        raise ValueError(f"the objective is not finite at the initial point ({f}).")
    if period is None and np.max(np.abs(g), initial=0.0) <= tol:
        converged, message = True, "gradient below tol"
        max_iter = 0
    for it in range(1, max_iter + 1):
        d = hist.direction(g)
        gd = float(g @ d)
        if not gd < 0:  # not a descent direction: restart from the gradient
            hist.reset()
            d = -g
            gd = -float(g @ g)
        step = hist.initial_step(gd)
        a, f_new, g_new, _ = _wolfe_search(fun, z, f, g, d, step)
        if a == 0.0:
            message = "the line search found no decrease"
            converged = True
            it -= 1
            break
        s = a * d
        z += s
        hist.update(s, g_new, g)
        f_old, f, g = f, f_new, g_new
        trace.append(f)
        if verbose:
            gap = f"  relative gap {rel_gap(f, g):.3g}" if certify else ""
            print(f"[lbfgs] iteration {it:4d}  objective {f:.6g}{gap}  "
                  f"({time.perf_counter() - t0:.1f}s)")
        if period is not None:
            if _period_rule(trace, period, tol):
                converged, message = True, "period rule"
                break
        elif np.max(np.abs(g)) <= tol:
            converged, message = True, "gradient below tol"
            break
        elif f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
            converged, message = True, "relative decrease below tol * 1e-3"
            break
    if verbose:
        print(f"[lbfgs] {it} iterations, {calls[0]} evaluations, objective {f:.6g}, "
              f"{time.perf_counter() - t0:.2f}s: {message}")
    if not converged:
        warnings.warn(f"L-BFGS did not converge in max_iter={max_iter} iterations; "
                      f"increase max_iter or tol.", ConvergenceWarning)
    if return_gap:
        return z, int(it), float(f), rel_gap(f, g)
    return z, int(it), float(f)
