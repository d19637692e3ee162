"""The bundle (1-slack cutting-plane) method, for any convex loss."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..kernels.maps import explicit_vertices_map
from ..kernels.sparsemap import sparsemap_active_set


def cutting_plane(problem, alpha, z0, max_iter=300, tol=1e-4, verbose=0, return_gap=False):
    """Bundle (1-slack cutting-plane) method on the regularised objective.

    ``J(z) = alpha/2 ||z||^2 + R(z)`` with ``R`` the (weighted, see
    ``problem.sample_weight``) mean loss.  Each
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
    z, n_iter, objective_value (and, with ``return_gap``, the relative
    duality gap at the stop)
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
    if return_gap:
        rel = max(best_J - lower, 0.0) / max(abs(best_J), 1e-300)
        return best_z.copy(), it, float(best_J), float(rel)
    return best_z.copy(), it, float(best_J)
