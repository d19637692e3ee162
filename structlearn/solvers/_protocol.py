"""The training-problem protocol: what the solvers read from a problem.

Every solver reads :class:`Problem`; the optional parts are protocols of
their own, each named for the solver that uses it:

* :class:`SparseProblem` -- sparse stochastic steps (:func:`sgd`, the
  averaged perceptron, the sparseptron :func:`online_prox_grad`): without
  it they read the dense gradient of a mini-batch;
* :class:`DualProblem` -- the dual solver :func:`bcfw`, which also uses
  ``part_columns(rep, parts)`` where a problem has it (else
  ``block_entries`` of unit score vectors) and, for a loss with
  ``dual_quadratic = 'unary'``, ``unary_sizes()``.

:class:`~structlearn.solvers.LinearProblem` (fixed-size structures) is a
:class:`DualProblem`; :class:`~structlearn.solvers.RaggedProblem`
(variable-length structures) is both.
"""

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Problem(Protocol):
    """``min_z (1/n) sum_i loss_i(z) + alpha/2 ||z_P||^2``."""

    #: number of examples ``n``
    n_samples: int
    #: length of ``z``
    n_params: int
    #: bool mask ``P`` of the penalised parameters
    penalized: np.ndarray

    def value_and_grad(self, z, idx=None):
        """Loss values of the examples ``idx`` (all when None) and the
        gradient of their sum in ``z``."""

    def sq_norms(self):
        """Per example, a bound of the squared norm of its gradient's
        image (the SGD step size)."""


@runtime_checkable
class SparseProblem(Problem, Protocol):
    """A problem whose mini-batch gradients are sparse in ``z``."""

    def params_of(self, idx):
        """The parameters the examples ``idx`` read (with repeats)."""

    def sparse_value_and_grad(self, v, idx, scale):
        """Losses of ``idx`` at ``z`` = ``v`` with the penalised parameters
        times ``scale``, and the gradient of their sum as entries
        ``(cols, vals)``."""


@runtime_checkable
class DualProblem(Problem, Protocol):
    """A problem the dual solver can train: it sees examples, not parts."""

    #: the loss (its ``piecewise_affine`` / ``dual_quadratic`` declarations)
    loss: object

    def part_sizes(self):
        """Size of every example's score block."""

    def pieces(self, z, idx):
        """Losses of ``idx`` at ``z``, their flat scores and score
        gradients."""

    def block_entries(self, idx, D):
        """Per example of ``idx``, the entries of ``A_i^T D_i``:
        ``(cols, vals, ptr)``."""
