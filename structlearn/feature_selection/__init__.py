"""Group-lasso feature selection with the sparseptron (Martins et al. 2011).

:class:`GroupLassoSelector` runs the online proximal-gradient algorithm of
Martins, Smith, Aguiar & Figueiredo (2011, "Structured Sparsity in
Structured Prediction", Algorithm 1) -- the solver
:func:`structlearn.solvers.online_prox_grad` -- on the training problem of
any of the library's estimators: a (sub)gradient step of the loss per
training example, and every ``K`` examples a proximal step of the group
regulariser whose strength is set by a *budget* -- at most ``B`` groups
survive each proximal step (budget-driven shrinkage, Sec. 4).  With the
perceptron loss (the default) this is the *sparseptron*.  The selector is
the first step of a pipeline; the paper's debiasing refit, an unregularised
(or L2) model on the selected features, is the next step::

    make_pipeline(GroupLassoSelector(SequenceTagger(), budget=30),
                  SequenceTagger(loss="hinge"))

**The estimators' hook.**  Every estimator has a public method
``selection_problem(X, y, loss=None)`` (e.g.
:meth:`structlearn.SequenceTagger.selection_problem`) that returns a
:class:`SelectionProblem`: its training problem on (X, y), the input column
(feature) of every parameter, the template of every column and a
*restrictor* (:class:`ArrayRestrictor`, :class:`SequenceArrayRestrictor`,
:class:`DictRestrictor`, :class:`TemplateRestrictor`) that drops the
unselected features from the estimator's own input form.  The selector
reads nothing else of the estimator, so any estimator implementing the hook
can be given.

Groups are sets of features: the *templates* the estimators record (the
feature-dict key for :class:`~structlearn.SequenceTagger`, the arc template
for :class:`~structlearn.DependencyParser`, each column for array input),
*label-based* groups (one feature across all labels), or an array mapping
the columns of array input to group names.  A feature conjoined with a label
is a model weight; a group holds the weights of its features.

Regularisers (``penalty``), in the paper's notation ``Omega(theta) =
sum_m d_m ||theta_m||_2``:

* ``'group-lasso'``: non-overlapping groups, ``d_m = log2 |G_m|`` by
  default (the paper's choice; ``|G_m|`` counts the group's weights; at
  least 1, so that a group of one or two weights is not free);
  ``budget`` = number of groups kept.
* ``'l1'``: singleton groups (``d = 1``), ``budget`` = number of non-zero
  weights; the soft-thresholding of Eq. 13.
* ``'sparse-group-lasso'`` (Friedman et al. 2010): the group lasso (with
  ``budget``) and the L1 norm (with ``feature_budget`` non-zero weights),
  two non-overlapping sets applied in sequence.
* ``'coarse-to-fine'``: overlapping groups from a partial order on the
  groups (``order``: pairs ``(coarse, fine)``): group ``G_a`` holds the
  features of ``a`` and of every group finer than ``a``, so a fine group is
  only selected with all its coarser ones.  As in the paper, the groups are
  split into sets of non-overlapping groups (greedily, in topological
  order) whose proximal steps are applied in sequence; the pseudo-budget
  ``budget`` ignores the overlaps and is split among the sets in proportion
  to their sizes (at least 1 each).

Each penalty is handed to the solver as *atoms* (the finest sets the groups
are unions of: the groups themselves, the templates of a coarse-to-fine
order, or single weights for the L1 penalties) and *layers* of
non-overlapping groups of atoms with their weights and budgets; the choices
the paper leaves open (the budget threshold, the final proximal step, the
step sizes ``eta0 / epoch``, restarting deleted groups) and the cost of the
lazily scaled weights are documented with
:func:`~structlearn.solvers.online_prox_grad`.  Weights are stored densely
over the estimator's parameters (the features its vectorizer found,
conjoined with the labels they were seen with); ``history_`` records how
many are non-zero after every proximal step (the paper's memory footprint,
Figure 2).

**Streaming** (``stream=True``, template groups of a
:class:`~structlearn.SequenceTagger` on feature dicts): the estimator's
hook ``selection_stream(X, y, loss)`` returns a
:class:`~structlearn.feature_selection.StreamedChainProblem`, which extracts the features of a few hundred
sequences at a time (the vectorizer's rules, each feature identified by a
64-bit hash) and :func:`structlearn.solvers.online_prox_grad_streamed`
keeps weights only for the features that fired in a live template -- the
same steps and selection as the materialised fit in a fraction of its
memory (no vocabulary, token matrix or dense weights).
"""

from .. import solvers as _solvers
from ._problem import (
    ArrayRestrictor,
    DictRestrictor,
    SelectedSentences,
    SelectionProblem,
    SequenceArrayRestrictor,
    TemplateRestrictor,
)
from ._selector import GroupLassoSelector
from ._stream import StreamedChainProblem

__all__ = ["ArrayRestrictor", "DictRestrictor", "GroupLassoSelector", "SelectedSentences",
           "SelectionProblem", "SequenceArrayRestrictor", "StreamedChainProblem",
           "TemplateRestrictor"]

# former names, still importable: the restrictors' private names (which
# pickled selectors refer to) and the proximity operators, now in
# structlearn.solvers with the solver that applies them
_ArrayRestrictor = ArrayRestrictor
_DictRestrictor = DictRestrictor
_SequenceArrayRestrictor = SequenceArrayRestrictor
_TemplateRestrictor = TemplateRestrictor
soft_threshold = _solvers.soft_threshold
group_soft_threshold = _solvers.group_soft_threshold
