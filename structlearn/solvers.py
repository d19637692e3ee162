"""Solvers for ``min_z (1/n) sum_i loss(theta_i(z), y_i) + alpha/2 ||z_P||^2``.

A solver sees the training problem only through a *problem* object (see
:class:`LinearProblem`): the parameter vector ``z``, which of its entries are
penalised (``P``), and ``value_and_grad(z, idx)`` -- the per-sample loss
values of the samples ``idx`` and the gradient of their **sum** with respect
to ``z`` (the chain rule ``A^T dloss/dtheta`` is the problem's business).
That keeps one implementation of each solver for every task: fixed-size
outputs (:class:`LinearProblem`), chains and trees (their estimators define
problems over flat ragged data).

* :func:`lbfgs` for smooth losses (CRF, SparseMAP, projections, squared).
* :func:`sgd`: stochastic subgradient descent with iterate averaging on the
  same regularised objective, for the non-smooth max-margin losses; with
  ``perceptron=True`` the averaged perceptron (Collins 2002).
* :func:`cutting_plane`: the bundle / 1-slack cutting-plane method, which
  trains any convex loss (in particular the max-margin ones) to a certified
  duality gap on its true objective.
"""

import time
import warnings

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.exceptions import ConvergenceWarning

from .kernels.maps import explicit_vertices_map
from .kernels.sparsemap import sparsemap_active_set


def _take(y, idx):
    return y[idx]


def n_workers(n_jobs, n_items):
    """Number of threads worth using for ``n_items`` independent items."""
    if n_jobs in (None, 1):
        return 1
    return max(1, min(effective_n_jobs(n_jobs), n_items // 2))


def loss_value_and_grad(loss, theta, y, structure, n_jobs=None):
    """Evaluate ``loss`` on a batch of fixed-size rows, split across threads.

    The oracles are Numba kernels that release the GIL or vectorised NumPy,
    so threads (joblib's threading backend) parallelise them.
    """
    n = len(theta)
    k = n_workers(n_jobs, n)
    if k == 1:
        return loss.value_and_grad(theta, y, structure)
    chunks = np.array_split(np.arange(n), k)
    res = Parallel(n_jobs=k, prefer="threads")(
        delayed(loss.value_and_grad)(theta[c], _take(y, c), structure) for c in chunks)
    return np.concatenate([r[0] for r in res]), np.vstack([r[1] for r in res])


def _scores(X, W, b, tie=None):
    """``theta = X W^T T^T + b``; ``tie`` (n_parts, n_rows) maps weight rows
    to parts (None: one weight row per part)."""
    theta = X @ W.T
    if sp.issparse(theta):
        theta = theta.toarray()
    theta = np.asarray(theta)
    if tie is not None:
        theta = theta @ tie.T
    return theta + b


def _grad_W(G, X, tie=None):
    """Chain rule ``T^T G^T X`` for a gradient ``G`` w.r.t. the part scores."""
    if tie is not None:
        G = G @ tie
    g = X.T @ G  # (n_features, n_rows), works for sparse X
    return np.asarray(g).T


class LinearProblem:
    """Training problem of a fixed-size structure: ``theta_i = T W x_i + b``.

    ``z = [W.ravel(), b]`` (``b`` only with ``fit_intercept``); ``W`` is
    penalised, ``b`` is not.

    Parameters
    ----------
    X : ndarray or sparse matrix (n_samples, n_features)
    y : targets in the structure's encoding
    structure, loss : the output structure and the loss
    n_weight_rows : int
        Rows of ``W`` (``n_parts`` unless weights are tied).
    fit_intercept : bool
    tie : ndarray (n_parts, n_weight_rows) or None
    n_jobs : int or None
        Threads for the oracles on full passes.
    """

    def __init__(self, X, y, structure, loss, n_weight_rows, fit_intercept=True,
                 tie=None, n_jobs=None):
        self.X, self.y, self.structure, self.loss = X, y, structure, loss
        self.tie, self.n_jobs, self.fit_intercept = tie, n_jobs, fit_intercept
        self.n_samples, d = X.shape
        self.shape_W = (n_weight_rows, d)
        self.n_parts = structure.n_parts
        n_w = n_weight_rows * d
        self.n_params = n_w + (self.n_parts if fit_intercept else 0)
        self.penalized = np.zeros(self.n_params, dtype=bool)
        self.penalized[:n_w] = True

    def pack(self, W, b):
        z = np.asarray(W, dtype=np.float64).ravel()
        return np.concatenate([z, b]) if self.fit_intercept else z.copy()

    def unpack(self, z):
        q, d = self.shape_W
        W = z[:q * d].reshape(q, d)
        b = z[q * d:] if self.fit_intercept else np.zeros(self.n_parts)
        return W, b

    def sq_norms(self):
        """``||x_i||^2`` (+1 with an intercept), for SGD step sizes."""
        if sp.issparse(self.X):
            sq = np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", self.X, self.X)
        return sq + (1.0 if self.fit_intercept else 0.0)

    def value_and_grad(self, z, idx=None):
        """Loss values of samples ``idx`` (all if None) and the gradient of
        their sum with respect to ``z``."""
        W, b = self.unpack(z)
        if idx is None:
            X, y, n_jobs = self.X, self.y, self.n_jobs
        else:
            X, y, n_jobs = self.X[idx], self.y[idx], None
        vals, G = loss_value_and_grad(self.loss, _scores(X, W, b, self.tie), y,
                                      self.structure, n_jobs)
        gW = _grad_W(G, X, self.tie)
        g = self.pack(gW, G.sum(axis=0)) if self.fit_intercept else gW.ravel()
        return vals, g


def objective(problem, z, alpha):
    """Regularised empirical risk ``mean loss + alpha/2 ||z_P||^2``."""
    vals, _ = problem.value_and_grad(z)
    zp = z[problem.penalized]
    return float(vals.mean() + 0.5 * alpha * zp @ zp)


def lbfgs(problem, alpha, z0, max_iter=500, tol=1e-6, verbose=0, history=10, period=None):
    """L-BFGS on the regularised objective (smooth losses).

    With ``period=None``, ``tol`` is the projected-gradient tolerance and the
    relative objective tolerance is ``tol * 1e-3``.  With an integer
    ``period``, the run stops when the objective decreased by less than
    ``tol`` (relative) over the last ``period`` iterations -- CRFsuite's
    ``delta``/``period`` rule, suited to large sparse models whose gradient
    norm decreases slowly.  ``history`` is the number of correction pairs
    kept (memory ``2 * history * n_params`` floats).

    Returns
    -------
    z, n_iter, objective_value
    """
    n = problem.n_samples
    pen = problem.penalized.astype(np.float64)
    t0 = time.perf_counter()
    calls = [0]

    def fun(z):
        vals, g = problem.value_and_grad(z)
        zp = z * pen
        f = vals.mean() + 0.5 * alpha * zp @ zp
        g = g / n + alpha * zp
        calls[0] += 1
        if verbose > 1:
            print(f"[lbfgs] eval {calls[0]:4d}  objective {f:.6g}  "
                  f"({time.perf_counter() - t0:.1f}s)")
        return f, g

    trace = []

    def callback(intermediate_result):
        f = float(intermediate_result.fun)
        trace.append(f)
        if verbose == 1:
            print(f"[lbfgs] iteration {len(trace):4d}  objective {f:.6g}  "
                  f"({time.perf_counter() - t0:.1f}s)")
        if period is not None and len(trace) > period and \
                trace[-period - 1] - f <= tol * max(abs(f), 1e-12):
            raise StopIteration

    options = {"maxiter": max_iter, "maxcor": history}
    if period is None:
        options.update(gtol=tol, ftol=tol * 1e-3)
    else:
        options.update(gtol=0.0, ftol=0.0)
    res = scipy.optimize.minimize(
        fun, np.asarray(z0, dtype=np.float64), jac=True, method="L-BFGS-B",
        options=options, callback=callback)
    converged = res.success or res.status == 99  # 99: stopped by the period rule
    if verbose:
        msg = "period rule" if res.status == 99 else res.message
        print(f"[lbfgs] {res.nit} iterations, objective {res.fun:.6g}, "
              f"{time.perf_counter() - t0:.2f}s: {msg}")
    if not converged and res.nit >= max_iter:
        warnings.warn(f"L-BFGS did not converge in max_iter={max_iter} iterations; "
                      f"increase max_iter or tol.", ConvergenceWarning)
    return np.array(res.x), int(res.nit), float(res.fun)


def _calibrate_eta0(problem, alpha, z0, rng, batch_size, n_sub=1000, max_doublings=12):
    """Initial SGD step size by trial passes on a subsample (Bottou 2012).

    Starting from ``1 / mean ||x||^2``, run one pass of SGD with a constant
    step on (at most) ``n_sub`` samples and compare the regularised objective
    on them: double the step while that improves it, halve it until the pass
    decreases the objective at all.  This adapts the step to the loss's
    gradient scale (a slack-scaled hinge has gradients ``L_max`` times
    larger than a margin-scaled one).
    """
    n = problem.n_samples
    sub = np.sort(rng.choice(n, min(n, n_sub), replace=False))
    pen = problem.penalized

    def obj(z):
        vals, _ = problem.value_and_grad(z, sub)
        zp = z[pen]
        return float(vals.mean() + 0.5 * alpha * zp @ zp)

    def trial(eta):
        z = np.array(z0, dtype=np.float64)
        for start in range(0, len(sub), batch_size):
            idx = sub[start:start + batch_size]
            _, g = problem.value_and_grad(z, idx)
            if alpha:
                z[pen] *= max(1.0 - eta * alpha, 0.0)
            z -= (eta / len(idx)) * g
        f = obj(z)
        return f if np.isfinite(f) else np.inf

    f0 = obj(np.asarray(z0, dtype=np.float64))
    eta = 1.0 / (float(np.mean(problem.sq_norms())) + 1e-12)
    f = trial(eta)
    if f < f0:
        for _ in range(max_doublings):
            f2 = trial(2.0 * eta)
            if not f2 < f:
                break
            eta, f = 2.0 * eta, f2
    else:
        for _ in range(max_doublings):
            eta /= 2.0
            if trial(eta) < f0:
                break
    return eta


def sgd(problem, alpha, z0, max_iter=50, tol=1e-4, batch_size=16, random_state=None,
        verbose=0, perceptron=False, patience=3):
    """Stochastic subgradient descent with iterate averaging.

    Minimises the same regularised objective as :func:`lbfgs` with steps
    ``eta_t = eta_0 / (1 + alpha eta_0 t)``, ``eta_0`` calibrated by trial
    passes on a subsample (:func:`_calibrate_eta0`), and returns the Polyak
    average of the iterates from the second epoch on.  With
    ``perceptron=True`` it is the averaged perceptron: unit steps, no
    penalty, averaging over all updates (mini-batches of ``batch_size``
    examples: the update is the sum of their perceptron updates).  Stops when
    the objective of the averaged model has not improved on its best value by
    more than ``tol`` (relative) for ``patience`` consecutive epochs
    (perceptron: when an epoch makes no update).

    Returns
    -------
    z, n_epochs, objective_value
    """
    rng = np.random.RandomState(random_state)
    n = problem.n_samples
    z = np.array(z0, dtype=np.float64)
    pen = problem.penalized
    reg = 0.0 if perceptron else alpha
    eta0 = 1.0 if perceptron else _calibrate_eta0(problem, reg, z, rng, batch_size)
    if verbose and not perceptron:
        print(f"[sgd] initial step size {eta0:.3g}")
    z_avg = z.copy()
    n_avg = 0
    t = 0
    # perceptron: lazy averaging (Daume 2006) -- ``u`` accumulates t * update,
    # so the average of the T iterates is ((T + 1) z - u - z0) / T without a
    # running average updated after every mini-batch
    z_start = z.copy() if perceptron else None
    u = np.zeros_like(z) if perceptron else None
    best = np.inf
    stalled = 0
    f = np.nan
    t0 = time.perf_counter()
    epoch = 0
    for epoch in range(1, max_iter + 1):
        order = rng.permutation(n)
        n_updates = 0
        for start in range(0, n, batch_size):
            idx = np.sort(order[start:start + batch_size])
            _, g = problem.value_and_grad(z, idx)
            t += 1
            if perceptron:
                # a mistake is a wrong prediction, even at zero loss (ties)
                if g.any():  # dense in-place ops beat locating the non-zeros
                    n_updates += 1
                    z -= g
                    g *= t
                    u -= g
                continue
            else:
                eta = eta0 / (1.0 + reg * eta0 * (t - 1))
                if reg:
                    z[pen] *= 1.0 - eta * reg
                z -= (eta / len(idx)) * g
            if epoch > 1 or max_iter == 1:
                n_avg += 1
                z_avg += (z - z_avg) / n_avg
        if perceptron:
            if verbose:
                print(f"[perceptron] epoch {epoch}: {n_updates} updating batches "
                      f"({time.perf_counter() - t0:.1f}s)")
            if n_updates == 0:
                break
            continue
        if epoch == 1 and max_iter > 1:
            continue
        f = objective(problem, z_avg, reg)
        if verbose:
            print(f"[sgd] epoch {epoch}: objective {f:.6g} "
                  f"({time.perf_counter() - t0:.1f}s)")
        # patience rule (as scikit-learn's SGD): stop after `patience` epochs
        # without an improvement of more than tol (relative) on the best
        if f < best - tol * max(1.0, abs(best)):
            stalled = 0
        else:
            stalled += 1
            if stalled >= patience:
                break
        best = min(best, f)
    else:
        if not perceptron and max_iter > 1:
            warnings.warn(f"SGD did not converge in max_iter={max_iter} epochs; "
                          f"increase max_iter or tol.", ConvergenceWarning)
    if perceptron:
        z_avg = ((t + 1) * z - u - z_start) / max(t, 1)
        f = objective(problem, z_avg, 0.0)
    return z_avg, epoch, float(f)


def cutting_plane(problem, alpha, z0, max_iter=300, tol=1e-4, verbose=0):
    """Bundle (1-slack cutting-plane) method on the regularised objective.

    ``J(z) = alpha/2 ||z||^2 + R(z)`` with ``R`` the mean loss.  Each
    iteration evaluates ``R`` and a subgradient ``a_t`` on the whole training
    set (one batched oracle pass) and adds the plane
    ``R(z) >= <a_t, z> + c_t``; the next iterate minimises
    ``alpha/2 ||z||^2 + max_t (<a_t, z> + c_t)`` (Teo et al. 2010; the
    1-slack formulation of Joachims et al. 2009 for structural SVMs).  Its
    dual, ``max_{q in simplex} <c, q> - ||A^T q||^2 / (2 alpha)``, is a
    SparseMAP problem over the explicit set of planes, solved by the library's
    active-set solver.  Stops when the gap between the best objective seen
    and the model's lower bound is below ``tol`` (relative).

    Every parameter is penalised here, the intercept included (as in
    liblinear): an unpenalised block would add an equality constraint to the
    dual.

    Returns
    -------
    z, n_iter, objective_value
    """
    if alpha <= 0:
        raise ValueError("solver='cutting-plane' needs alpha > 0.")
    n = problem.n_samples
    t0 = time.perf_counter()
    z = np.array(z0, dtype=np.float64)
    planes, offsets = [], []
    basis = []   # orthonormal basis of span(planes)
    coords = []  # coordinates of each plane in that basis (ragged rows)
    best_J, best_z = np.inf, z.copy()
    lower = -np.inf
    it = 0
    for it in range(1, max_iter + 1):
        vals, g = problem.value_and_grad(z)
        R = float(vals.mean())
        a = g / n
        J = 0.5 * alpha * float(z @ z) + R
        if J < best_J:
            best_J, best_z = J, z.copy()
        planes.append(a)
        offsets.append(R - float(a @ z))
        # Gram-Schmidt (twice, for stability) gives the plane's coordinates,
        # so that ||A^T q||^2 = ||C^T q||^2 with C small and dense.
        r = a.copy()
        co = []
        if basis:
            Bm = np.asarray(basis)
            co = Bm @ r
            r -= Bm.T @ co
            co2 = Bm @ r
            r -= Bm.T @ co2
            co = list(co + co2)
        norm = float(np.linalg.norm(r))
        if norm > 1e-10 * max(1.0, float(np.linalg.norm(a))):
            basis.append(r / norm)
            co.append(norm)
        coords.append(co)
        C = np.zeros((len(planes), len(basis)))
        for j, cj in enumerate(coords):
            C[j, :len(cj)] = cj
        c = np.asarray(offsets)
        # Dual master problem as SparseMAP over the explicit vertices
        # [C_j / sqrt(alpha); c_j].
        V = np.hstack([C / np.sqrt(alpha), c[:, None]])
        params = np.concatenate([[len(V), V.shape[1]], V.ravel()])
        eta = np.zeros(V.shape[1])
        eta[-1] = 1.0
        _, support, dual_w, _ = sparsemap_active_set(
            eta, V.shape[1] - 1, explicit_vertices_map, params, 10000, 1e-12)
        # plane weights from the support rows
        qfull = np.zeros(len(V))
        for s_row, w in zip(support, dual_w):
            qfull[int(np.argmin(np.abs(V - s_row).sum(axis=1)))] += w
        A = np.asarray(planes)
        z = -(A.T @ qfull) / alpha
        lower = float(c @ qfull) - float(z @ z) * alpha / 2
        gap = best_J - lower
        if verbose:
            print(f"[cutting-plane] iter {it}: objective {best_J:.6g}, lower bound "
                  f"{lower:.6g}, gap {gap:.3g} ({time.perf_counter() - t0:.1f}s)")
        if gap <= tol * max(abs(best_J), 1e-12):
            break
    else:
        warnings.warn(f"cutting-plane did not reach the duality gap tol={tol} in "
                      f"max_iter={max_iter} iterations (gap {best_J - lower:.3g}); "
                      f"increase max_iter, alpha or tol.", ConvergenceWarning)
    return best_z.copy(), it, float(best_J)
