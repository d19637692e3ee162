"""Projections onto structured polytopes (re-exports of the Numba kernels).

The kernels live in one module per family and are re-exported here:

* :mod:`structlearn.kernels.isotonic`: isotonic regression, permutahedron;
* :mod:`structlearn.kernels.simplex`: simplex, knapsack (Euclidean and KL);
* :mod:`structlearn.kernels.birkhoff`: Birkhoff polytope (Euclidean);
* :mod:`structlearn.kernels.sinkhorn`: Birkhoff polytope (KL, Sinkhorn);
  the two share the dense Newton solves of :mod:`structlearn.kernels._ridge`.

Every public function is a plain ``@njit(cache=True)`` function working on
float64 (and int64) numpy arrays.  Input validation (shapes, finiteness,
dtype, contiguity, ``0 <= lower <= upper <= k``, sorted weights) is the
caller's job; the kernels only guarantee that they never index out of
bounds on inputs of valid shape.

Euclidean projections
    :func:`isotonic_decreasing`, :func:`project_simplex`,
    :func:`project_knapsack`, :func:`project_permutahedron`,
    :func:`project_birkhoff`.

KL (Bregman) projections of ``exp(theta - 1)``
    :func:`project_knapsack_kl`, :func:`sinkhorn`.

The two Birkhoff solvers alternate exact row/column dual sweeps with
Newton steps on the dual and are warm-started from the LP duals of the
assignment problem (:mod:`structlearn.kernels.assignment`); see their
docstrings.

Each has a ``*_batch`` counterpart that treats the rows of a 2-D array as
independent problems.  The batch versions use plain loops: the per-row
problems are tiny, so thread start-up would dominate, and ``parallel=True``
would tie callers (e.g. joblib workers) to numba's threading layer.

References
----------
.. [1] M. Blondel. "Structured prediction with projection oracles."
   NeurIPS 2019.
.. [2] M. Blondel, V. Seguy, A. Rolet. "Smooth and sparse optimal
   transport." AISTATS 2018.
.. [3] D. A. Lorenz, P. Manns, C. Meyer. "Quadratically regularized
   optimal transport." Applied Mathematics & Optimization 83, 2021
   (semismooth Newton on the dual of a quadratic transport problem).
"""

from .birkhoff import project_birkhoff, project_birkhoff_batch
from .isotonic import (
    isotonic_decreasing,
    isotonic_decreasing_batch,
    project_permutahedron,
    project_permutahedron_batch,
)
from .simplex import (
    project_knapsack,
    project_knapsack_batch,
    project_knapsack_kl,
    project_knapsack_kl_batch,
    project_simplex,
    project_simplex_batch,
)
from .sinkhorn import sinkhorn, sinkhorn_batch

__all__ = [
    "isotonic_decreasing",
    "isotonic_decreasing_batch",
    "project_simplex",
    "project_simplex_batch",
    "project_knapsack",
    "project_knapsack_batch",
    "project_knapsack_kl",
    "project_knapsack_kl_batch",
    "project_permutahedron",
    "project_permutahedron_batch",
    "project_birkhoff",
    "project_birkhoff_batch",
    "sinkhorn",
    "sinkhorn_batch",
]
