"""The independent reference of the L1 / elastic-net tests: the split
formulation ``z = u - v``, ``u, v >= 0`` solved by scipy's L-BFGS-B."""

import numpy as np
from scipy.optimize import minimize


def split_reference(problem, alpha, l1_ratio):
    """``min P(z)`` by L-BFGS-B on ``z = u - v``, ``u, v >= 0`` where
    penalised (``v = 0`` elsewhere, ``u`` free there); returns ``(z, P)``."""
    pen = problem.penalized
    n, k = problem.n_samples, problem.n_params
    c1, c2 = alpha * l1_ratio, alpha * (1.0 - l1_ratio)
    lam = c1 * pen

    def fun(uv):
        z = uv[:k] - uv[k:]
        vals, g = problem.value_and_grad(z)
        g = g / n + c2 * pen * z
        f = vals.mean() + 0.5 * c2 * float(z[pen] @ z[pen]) + float(lam @ (uv[:k] + uv[k:]))
        return f, np.concatenate([g + lam, -g + lam])

    bounds = [(0, None) if p else (None, None) for p in pen] + \
        [(0, None) if p else (0, 0) for p in pen]
    res = minimize(fun, np.zeros(2 * k), jac=True, method="L-BFGS-B", bounds=bounds,
                   options=dict(maxiter=50000, maxfun=100000, ftol=1e-15, gtol=1e-11))
    return res.x[:k] - res.x[k:], float(res.fun)
