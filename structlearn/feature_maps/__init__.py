"""Joint feature maps ``theta = A(x) z`` of the variable-length structures.

A feature map turns the parameter vector ``z`` into the scores ``theta`` of
the parts of a batch of examples (in the layout of the batch's structure)
and carries score gradients back to ``z``.  It is the one place that knows
how the features of an example meet the weights; the training problem
(:class:`structlearn.solvers.RaggedProblem`) handles batches, threads and
losses, and the structures handle inference.  The protocol
(:class:`FeatureMap`):

* ``n_samples``, ``n_params``, ``penalized`` (bool mask of the penalised
  parameters), ``pos_off`` (per example, the offsets of its positions --
  tokens, words -- into the flat targets);
* ``chunk_ranges(n_min)``: contiguous example ranges ``(a, b)`` of a full
  pass (bounded memory, at least ``n_min`` of them where possible);
  ``contiguous(a, b)`` and ``select(idx)``: the map's handle on those
  examples' features (the ``data`` of a :class:`RaggedBatch`);
* ``scores(z, batch, scale=1.0)``: the flat part scores of a batch, with
  the penalised parameters multiplied by ``scale``;
* ``backprop(G, batch, g)``: ``g += A^T G`` (dense) and
  ``backprop_entries(G, batch)``: the same as entries ``(cols, vals)``
  (duplicates allowed), touching only the batch's features;
* ``params_of(idx)``: the parameters the scores of examples ``idx`` read;
* ``sq_norms(y)``: per example, a bound of the squared norm of a score
  gradient's image (the SGD step size);
* for the dual solver: ``part_sizes()``, ``unary_sizes()``,
  ``block_entries(idx, D)`` and ``part_columns(rep, parts)`` (see
  :func:`structlearn.solvers.bcfw`);
* optionally ``gibbs_value_and_grad(z, batches)``: the value and gradient
  of a loss that declares ``gibbs_likelihood`` (the CRF) by a fused kernel.

:class:`TokenFeatureMap` scores the tokens of linear chains (with label
transitions), :class:`ArcFeatureMap` the arcs of dependency trees and
:class:`SegmentFeatureMap` the segments of semi-Markov models (from the
same token features).
"""

from ._arcs import ArcFeatureMap
from ._base import FeatureMap, RaggedBatch
from ._segments import SegmentFeatureMap
from ._tokens import TokenFeatureMap, Tokens, checked_tokens

__all__ = ["ArcFeatureMap", "FeatureMap", "RaggedBatch", "SegmentFeatureMap",
           "TokenFeatureMap", "Tokens", "checked_tokens"]
