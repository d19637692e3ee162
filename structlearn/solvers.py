"""Solvers for ``min_W (1/n) sum_i loss(theta_i, y_i) + alpha/2 ||W||^2``.

The linear model is ``theta_i = W x_i + b`` (``W``: (n_parts, n_features),
intercept ``b`` unpenalised).  Solvers only see a loss through
``value_and_grad`` and apply the chain rule ``G^T X``.

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


def loss_value_and_grad(loss, theta, y, structure, n_jobs=None):
    """Evaluate ``loss`` on a batch, split across threads when ``n_jobs != 1``.

    The oracles are Numba kernels that release the GIL or vectorised NumPy,
    so threads (joblib's threading backend) parallelise them.
    """
    n = len(theta)
    n_workers = effective_n_jobs(n_jobs) if n_jobs not in (None, 1) else 1
    if n_workers == 1 or n < 2 * n_workers:
        return loss.value_and_grad(theta, y, structure)
    chunks = np.array_split(np.arange(n), n_workers)
    res = Parallel(n_jobs=n_workers, prefer="threads")(
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


def objective(X, y, W, b, structure, loss, alpha, n_jobs=None, tie=None):
    """Regularised empirical risk at ``(W, b)``."""
    vals, _ = loss_value_and_grad(loss, _scores(X, W, b, tie), y, structure, n_jobs)
    return float(vals.mean() + 0.5 * alpha * np.sum(W * W))


def lbfgs(X, y, structure, loss, alpha, W0, b0, fit_intercept=True, max_iter=500,
          tol=1e-6, n_jobs=None, verbose=0, tie=None):
    """L-BFGS on the regularised objective (smooth losses).

    Returns
    -------
    W, b, n_iter, objective_value
    """
    n, d = X.shape
    q, p = W0.shape[0], b0.shape[0]
    t0 = time.perf_counter()
    calls = [0]

    def unpack(z):
        W = z[:q * d].reshape(q, d)
        b = z[q * d:] if fit_intercept else np.zeros(p)
        return W, b

    def fun(z):
        W, b = unpack(z)
        vals, G = loss_value_and_grad(loss, _scores(X, W, b, tie), y, structure, n_jobs)
        f = vals.mean() + 0.5 * alpha * np.sum(W * W)
        gW = _grad_W(G, X, tie) / n + alpha * W
        g = gW.ravel()
        if fit_intercept:
            g = np.concatenate([g, G.mean(axis=0)])
        calls[0] += 1
        if verbose > 1:
            print(f"[lbfgs] eval {calls[0]:4d}  objective {f:.6g}  "
                  f"({time.perf_counter() - t0:.1f}s)")
        return f, g

    z0 = W0.ravel()
    if fit_intercept:
        z0 = np.concatenate([z0, b0])
    res = scipy.optimize.minimize(
        fun, z0, jac=True, method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": tol * 1e-3})
    W, b = unpack(res.x)
    if verbose:
        print(f"[lbfgs] {res.nit} iterations, objective {res.fun:.6g}, "
              f"{time.perf_counter() - t0:.2f}s: {res.message}")
    if not res.success and res.nit >= max_iter:
        warnings.warn(f"L-BFGS did not converge in max_iter={max_iter} iterations; "
                      f"increase max_iter or tol.", ConvergenceWarning)
    return W.copy(), b.copy(), int(res.nit), float(res.fun)


def sgd(X, y, structure, loss, alpha, W0, b0, fit_intercept=True, max_iter=50,
        tol=1e-4, batch_size=16, random_state=None, n_jobs=None, verbose=0,
        perceptron=False, tie=None, patience=3):
    """Stochastic subgradient descent with iterate averaging.

    Minimises the same regularised objective as :func:`lbfgs` with steps
    ``eta_t = eta_0 / (1 + alpha eta_0 t)`` (``eta_0 = 1 / mean ||x||^2``)
    and returns the Polyak average of the iterates from the second epoch on.
    With ``perceptron=True`` it is the averaged perceptron: unit steps, no
    penalty, averaging over all updates.  Stops when the objective of the
    averaged model has not improved on its best value by more than ``tol``
    (relative) for ``patience`` consecutive epochs (perceptron: when an epoch
    makes no update).

    Returns
    -------
    W, b, n_epochs, objective_value
    """
    rng = np.random.RandomState(random_state)
    n, d = X.shape
    W = W0.copy()
    b = b0.copy()
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    else:
        sq = np.einsum("ij,ij->i", X, X)
    eta0 = 1.0 / (float(np.mean(sq)) + (1.0 if fit_intercept else 0.0) + 1e-12)
    reg = 0.0 if perceptron else alpha
    W_avg = W.copy()
    b_avg = b.copy()
    n_avg = 0
    t = 0
    best = np.inf
    stalled = 0
    f = np.nan
    t0 = time.perf_counter()
    epoch = 0
    for epoch in range(1, max_iter + 1):
        order = rng.permutation(n)
        n_updates = 0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            Xb = X[idx]
            theta = _scores(Xb, W, b, tie)
            vals, G = loss.value_and_grad(theta, y[idx], structure)
            if perceptron:
                # a mistake is a wrong prediction, even at zero loss (ties)
                if np.any(G != 0):
                    n_updates += 1
                    W -= _grad_W(G, Xb, tie)
                    if fit_intercept:
                        b -= G.sum(axis=0)
            else:
                eta = eta0 / (1.0 + reg * eta0 * t)
                gW = _grad_W(G, Xb, tie) / len(idx)
                W *= 1.0 - eta * reg
                W -= eta * gW
                if fit_intercept:
                    b -= eta * G.mean(axis=0)
            t += 1
            if perceptron or epoch > 1 or max_iter == 1:
                n_avg += 1
                W_avg += (W - W_avg) / n_avg
                b_avg += (b - b_avg) / n_avg
        if perceptron:
            if verbose:
                print(f"[perceptron] epoch {epoch}: {n_updates} updating batches "
                      f"({time.perf_counter() - t0:.1f}s)")
            if n_updates == 0:
                break
            continue
        if epoch == 1 and max_iter > 1:
            continue
        f = objective(X, y, W_avg, b_avg, structure, loss, reg, n_jobs, tie)
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
        f = objective(X, y, W_avg, b_avg, structure, loss, 0.0, n_jobs, tie)
    return W_avg, b_avg, epoch, float(f)


def cutting_plane(X, y, structure, loss, alpha, W0, b0, fit_intercept=True,
                  max_iter=300, tol=1e-4, n_jobs=None, verbose=0, tie=None):
    """Bundle (1-slack cutting-plane) method on the regularised objective.

    ``J(z) = alpha/2 ||z||^2 + R(z)`` with ``R`` the mean loss, for
    ``z = (W, b)``.  Each iteration evaluates ``R`` and a subgradient ``a_t``
    on the whole training set (one batched oracle pass) and adds the plane
    ``R(z) >= <a_t, z> + c_t``; the next iterate minimises
    ``alpha/2 ||z||^2 + max_t (<a_t, z> + c_t)`` (Teo et al. 2010; the
    1-slack formulation of Joachims et al. 2009 for structural SVMs).  Its
    dual, ``max_{q in simplex} <c, q> - ||A^T q||^2 / (2 alpha)``, is a
    SparseMAP problem over the explicit set of planes, solved by the library's
    active-set solver.  Stops when the gap between the best objective seen
    and the model's lower bound is below ``tol`` (relative).

    The intercept is penalised like the weights here (as in liblinear):
    an unpenalised block would add an equality constraint to the dual.

    Returns
    -------
    W, b, n_iter, objective_value
    """
    if alpha <= 0:
        raise ValueError("solver='cutting-plane' needs alpha > 0.")
    n, d = X.shape
    q, p = W0.shape[0], b0.shape[0]
    t0 = time.perf_counter()

    def unpack(z):
        W = z[:q * d].reshape(q, d)
        b = z[q * d:] if fit_intercept else np.zeros(p)
        return W, b

    z = W0.ravel().copy()
    if fit_intercept:
        z = np.concatenate([z, b0])
    planes, offsets = [], []
    basis = []   # orthonormal basis of span(planes)
    coords = []  # coordinates of each plane in that basis (ragged rows)
    best_J, best_z = np.inf, z.copy()
    lower = -np.inf
    it = 0
    for it in range(1, max_iter + 1):
        W, b = unpack(z)
        vals, G = loss_value_and_grad(loss, _scores(X, W, b, tie), y, structure, n_jobs)
        R = float(vals.mean())
        a = (_grad_W(G, X, tie) / n).ravel()
        if fit_intercept:
            a = np.concatenate([a, G.mean(axis=0)])
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
    W, b = unpack(best_z)
    return W.copy(), b.copy(), it, float(best_J)
