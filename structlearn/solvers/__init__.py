"""Solvers for ``min_z (1/n) sum_i w_i loss(theta_i(z), y_i) + alpha/2 ||z_P||^2``.

The example weights ``w_i >= 0`` (mean 1; all 1 without ``sample_weight``)
belong to the problem: ``sum_i w_i loss_i / sum_i w_i`` is the weighted mean
loss, integer weights are the same objective as repeated examples and a
weight 0 the same as a removed example (see :mod:`._protocol`).

A solver sees the training problem only through a *problem* object (see
:class:`LinearProblem`): the parameter vector ``z``, which of its entries are
penalised (``P``), and ``value_and_grad(z, idx)`` -- the per-sample loss
values of the samples ``idx`` and the gradient of their **sum** with respect
to ``z`` (the chain rule ``A^T dloss/dtheta`` is the problem's business).
That keeps one implementation of each solver for every task: fixed-size
outputs (:class:`LinearProblem`), chains and trees (their estimators define
problems over flat ragged data).

* :func:`lbfgs` for smooth losses (CRF, SparseMAP, projections, squared).
* :func:`owlqn`: OWL-QN (Andrew & Gao 2007) for the smooth losses with an
  L1 or elastic-net penalty ``alpha (l1_ratio ||z_P||_1 + (1 - l1_ratio)/2
  ||z_P||^2)``, with its :func:`pseudo_gradient`.
* :func:`sgd`: stochastic subgradient descent with iterate averaging on the
  same regularised objective, for the non-smooth max-margin losses; with
  ``perceptron=True`` the averaged perceptron (Collins 2002);
  :func:`sgd_warm_up`, a few of its passes as a starting point for
  :func:`lbfgs`.
* :func:`cutting_plane`: the bundle / 1-slack cutting-plane method, which
  trains any convex loss (in particular the max-margin ones) to a certified
  duality gap on its true objective.
* :func:`bcfw`: block-coordinate Frank-Wolfe on the dual of the max-margin
  and SparseMAP losses, to a certified duality gap.
* :func:`online_prox_grad`: the online proximal-gradient algorithm of
  Martins et al. (2011) with budget-driven group-lasso shrinkage (the
  *sparseptron* with the perceptron loss): a different objective, ``sum_i
  loss_i(z)`` plus group penalties given as arrays, whose sparsity pattern
  is the output (:class:`~structlearn.feature_selection.GroupLassoSelector`);
  with its proximity operators :func:`soft_threshold` and
  :func:`group_soft_threshold`; :func:`online_prox_grad_streamed` runs it
  on a problem that extracts its features as the steps need them, with
  the weights of the features that fired only (:class:`HashedAtomWeights`).

One module per solver (``_lbfgs``, ``_owlqn``, ``_sgd``, ``_cutting_plane``,
``_bcfw``, ``_sparseptron``), the fixed-size problem in ``_problem``, the
thread pools in ``_threads``; their Numba kernels are in
:mod:`structlearn.kernels.optim`, :mod:`structlearn.kernels.dual` and
:mod:`structlearn.kernels.selection`.
"""

from ._bcfw import DualState, bcfw
from ._cutting_plane import cutting_plane
from ._lbfgs import lbfgs
from ._owlqn import owlqn, pseudo_gradient
from ._problem import LinearProblem, loss_value_and_grad, objective
from ._protocol import DualProblem, Problem, SparseProblem
from ._ragged import RaggedProblem
from ._sgd import sgd, sgd_warm_up
from ._sparseptron import (HashedAtomWeights, group_soft_threshold, online_prox_grad,
                           online_prox_grad_streamed, soft_threshold)
from ._threads import blas_threads, n_workers, split_concat, thread_map

__all__ = ["DualProblem", "DualState", "HashedAtomWeights", "LinearProblem", "Problem", "RaggedProblem",
           "SparseProblem", "bcfw", "blas_threads", "cutting_plane", "group_soft_threshold",
           "lbfgs", "loss_value_and_grad", "n_workers", "objective", "online_prox_grad",
           "online_prox_grad_streamed",
           "owlqn", "pseudo_gradient", "sgd", "sgd_warm_up", "soft_threshold", "split_concat",
           "thread_map"]
