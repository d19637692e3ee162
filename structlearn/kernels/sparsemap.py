"""SparseMAP solvers, written once and generic over a MAP oracle.

Niculae, Martins, Blondel & Cardie (2018), *SparseMAP: Differentiable Sparse
Structured Inference*, Appendix A.  The problem is

    max_{y in simplex}  theta^T y - 1/2 ||M y||^2 ,      theta = A^T eta,

i.e. over the marginal polytope ``max_{[u; v] in M_A} eta_U^T u + eta_F^T v
- 1/2 ||u||^2``.  A structure is represented by its vertex vector
``a_s = [m_s; n_s]`` of length ``p``; the first ``n_unary`` entries are the
*unary* parts (penalised by the quadratic term), the remaining ones the
higher-order parts (e.g. chain transitions) which enter only linearly.

Every solver here takes the oracle as a first-class Numba function with the
signature ``oracle(eta, params, out)``: it writes into ``out`` (length ``p``)
the vertex vector of a structure maximising ``eta^T a_s``.  ``params`` is a
float64 array of structure parameters (bounds, weights, sizes) the oracle
reads.  Passing a different oracle gives a different specialisation of the
same code, so there is exactly one active-set implementation in the library.

The solvers live in one module per family and are re-exported here, so
that ``structlearn.kernels.sparsemap`` stays the one import path:

* :mod:`structlearn.kernels.active_set`: the active-set method
  (:func:`sparsemap_active_set_warm`, :func:`sparsemap_active_set`,
  :func:`sparsemap_active_set_batch`, :func:`sparsemap_support_batch`), with its steps in
  :mod:`structlearn.kernels._active_set_steps` and its incrementally
  factorised KKT system in :mod:`structlearn.kernels._active_set_factor`;
* :mod:`structlearn.kernels.sparsemap_ragged`: the active set on ragged
  batches (:func:`sparsemap_active_set_ragged`,
  :func:`sparsemap_active_set_warm_ragged`, :func:`block_params`);
* :mod:`structlearn.kernels.conditional_gradient`:
  :func:`sparsemap_conditional_gradient` (Algorithm 1);
* :mod:`structlearn.kernels._sparsemap_types`: the oracle and encoder
  signatures.

:func:`sparsemap_jvp` (plain numpy) is defined here.
"""

import numpy as np

from ._sparsemap_types import ENCODE_SIGNATURE, ORACLE_SIGNATURE, SUPPORT_CODE_DTYPE
from .active_set import (
    sparsemap_active_set,
    sparsemap_active_set_batch,
    sparsemap_active_set_warm,
    sparsemap_support_batch,
)
from .conditional_gradient import VARIANTS, sparsemap_conditional_gradient
from .sparsemap_ragged import (
    block_params,
    sparsemap_active_set_ragged,
    sparsemap_active_set_warm_ragged,
)

__all__ = [
    "ORACLE_SIGNATURE",
    "ENCODE_SIGNATURE",
    "SUPPORT_CODE_DTYPE",
    "VARIANTS",
    "sparsemap_active_set",
    "sparsemap_active_set_warm",
    "sparsemap_active_set_batch",
    "sparsemap_support_batch",
    "sparsemap_active_set_ragged",
    "sparsemap_active_set_warm_ragged",
    "sparsemap_conditional_gradient",
    "sparsemap_jvp",
    "block_params",
]


def sparsemap_jvp(vertices, weights, n_unary, d_eta):
    """Jacobian-vector product of SparseMAP (Proposition 1).

    On the support ``I`` the solution satisfies the KKT system
    ``[[M_I^T M_I, 1], [1^T, 0]] [y_I; tau] = [A_I^T eta; 1]``; differentiating
    it gives ``d y_I`` from ``[[G, 1], [1^T, 0]] [d y; d tau] = [A_I^T d_eta; 0]``
    and ``d mu_U = M_I d y``.  Where ``G = M_I^T M_I`` is invertible this is
    the paper's ``M_I D(I) A_I^T d_eta`` with
    ``D = Z - Z 1 1^T Z / (1^T Z 1)``, ``Z = G^{-1}``; solving the KKT system
    also covers supports that are affinely but not linearly independent
    (e.g. containing the zero vertex), where ``Z`` does not exist.

    Parameters
    ----------
    vertices : ndarray of shape (n_active, p)
        Support returned by a SparseMAP solver.
    weights : ndarray of shape (n_active,)
        Their weights (only the support matters).
    n_unary : int
        Number of unary parts.
    d_eta : ndarray of shape (p,)
        Direction in score space.

    Returns
    -------
    d_mu : ndarray of shape (n_unary,)
        Directional derivative of the unary marginals.
    """
    V = np.asarray(vertices, dtype=float)
    M = V[:, :n_unary]
    m = len(V)
    K = np.zeros((m + 1, m + 1))
    K[:m, :m] = M @ M.T
    K[:m, m] = 1.0
    K[m, :m] = 1.0
    rhs = np.concatenate([V @ np.asarray(d_eta, dtype=float), [0.0]])
    dy = np.linalg.lstsq(K, rhs, rcond=None)[0][:m]
    return M.T @ dy
