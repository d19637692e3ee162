"""The training-problem protocol: what the solvers read from a problem.

Every solver reads :class:`Problem`; the optional parts are protocols of
their own, each named for the solver that uses it:

* **example weights** (``sample_weight``): the objective is ``sum_i w_i
  loss_i / sum_i w_i + alpha/2 ||z_P||^2``.  A problem stores its weights
  normalised to mean 1 (``normalized_weights``; None: every weight
  1), so that ``sum_i w_i = n`` and the objective is ``(1/n) sum_i w_i
  loss_i + ...``: the solvers that average ``value_and_grad`` over the
  examples (L-BFGS, OWL-QN, the cutting planes, SGD, the perceptron and the
  sparseptron) need nothing else, because ``value_and_grad`` (and
  ``sparse_value_and_grad``) return the *weighted* losses ``w_i loss_i``
  and the gradient of their sum.  Only the dual solver :func:`bcfw` reads
  the weights themselves (:func:`example_weights`): ``pieces`` returns the
  unweighted losses and score gradients (the pieces of ``loss_i``), and
  each dual block carries its share ``w_i / n`` of the objective.
  Integer weights are the same objective as repeating the examples, and a
  weight 0 the same as removing the example;

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
    """``min_z (1/n) sum_i w_i loss_i(z) + alpha/2 ||z_P||^2`` (``w_i``:
    the example weights, mean 1)."""

    #: number of examples ``n``
    n_samples: int
    #: None (every weight 1) or the example weights ``w``, normalised to
    #: mean 1 (``normalized_weights``); optional: a problem without the
    #: attribute is unweighted
    sample_weight: np.ndarray
    #: length of ``z``
    n_params: int
    #: bool mask ``P`` of the penalised parameters
    penalized: np.ndarray

    def value_and_grad(self, z, idx=None):
        """Weighted loss values ``w_i loss_i`` of the examples ``idx`` (all
        when None) and the gradient of their sum in ``z``."""

    def sq_norms(self):
        """Per example, a bound of the squared norm of its gradient's
        image (the SGD step size)."""


@runtime_checkable
class SparseProblem(Problem, Protocol):
    """A problem whose mini-batch gradients are sparse in ``z``."""

    def params_of(self, idx):
        """The parameters the examples ``idx`` read (with repeats)."""

    def sparse_value_and_grad(self, v, idx, scale):
        """Weighted losses of ``idx`` at ``z`` = ``v`` with the penalised
        parameters times ``scale``, and the gradient of their sum as
        entries ``(cols, vals)``."""


@runtime_checkable
class DualProblem(Problem, Protocol):
    """A problem the dual solver can train: it sees examples, not parts."""

    #: the loss (its ``piecewise_affine`` / ``dual_quadratic`` declarations)
    loss: object

    def part_sizes(self):
        """Size of every example's score block."""

    def pieces(self, z, idx):
        """*Unweighted* losses of ``idx`` at ``z``, their flat scores and
        score gradients (the dual solver weights each block itself)."""

    def block_entries(self, idx, D):
        """Per example of ``idx``, the entries of ``A_i^T D_i``:
        ``(cols, vals, ptr)``."""


def normalized_weights(sample_weight, n_samples):
    """Checked example weights normalised to mean 1, or None for None (or
    all weights equal: the unweighted problem, computed exactly as without
    weights).  ``sample_weight`` must be non-negative and finite with a
    positive sum (the estimators check it first, with
    :func:`structlearn._validation.check_sample_weight`)."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n_samples,) or not np.all(np.isfinite(w)) or np.any(w < 0) \
            or not w.sum() > 0:
        raise ValueError(f"sample_weight must be {n_samples} non-negative finite weights "
                         f"with a positive sum.")
    if np.all(w == w[0]):
        return None
    # (divide by the maximum first: a sum of huge weights would overflow)
    w = w / w.max()
    return w * (n_samples / w.sum())


def example_weights(problem):
    """The problem's example weights (mean 1) as an array: ones when it has
    none."""
    w = getattr(problem, "sample_weight", None)
    return np.ones(problem.n_samples) if w is None else w
