"""The one training problem of the variable-length structures."""

import numpy as np

from ..feature_maps._base import RaggedBatch
from ..structures.base import RangeCaches, SupportCache
from ._protocol import normalized_weights
from ._threads import n_workers, split_concat, thread_map

#: Tasks per thread of a full pass (:meth:`RaggedProblem.value_and_grad`),
#: contiguous runs of chunks that the pool's threads take in turn.  One: a
#: CRF evaluation on CoNLL-2000 with two threads took 0.53 / 0.55 / 0.56 of
#: one thread's time with 1 / 4 / 8 tasks per thread on an idle machine and
#: 0.87 / 0.83 / 0.92 beside one other busy process (15 alternating rounds,
#: ``benchmarks/micro/bench_crf_threads.py``, ``results/crf_threads_tasks.md``):
#: more, smaller tasks do not help a thread that shares its core.
TASKS_PER_THREAD = 1


class RaggedProblem:
    """Training problem of variable-length examples (see ``structlearn.solvers``).

    Examples are ragged: example ``i`` has the positions (tokens, words)
    ``pos_off[i]:pos_off[i + 1]`` of the flat targets ``y``.  The feature
    map (``structlearn.feature_maps``) turns parameters into part
    scores and score gradients back into parameter gradients;
    ``make_structure(pos_off, warm_cache)`` binds the structure to a batch
    (its position offsets, from 0) with the problem's warm starts of the
    active set (a ``SupportCache`` or None); the loss is any of
    ``structlearn.losses``.
    This class owns what is common to every ragged task:

    * **full passes** over contiguous chunks of the examples (bounded
      memory), split over ``n_jobs`` threads, each thread accumulating its
      own gradient (the Numba kernels release the GIL); a loss that
      declares ``gibbs_likelihood`` is evaluated by the map's fused
      ``gibbs_value_and_grad`` where the map has one;
    * **mini-batches** of any examples, with dense or sparse gradients
      (``value_and_grad(z, idx)``, ``sparse_value_and_grad``, for SGD);
    * **the per-example view of the dual solver** (``pieces``,
      ``block_entries``, ``part_columns``, ``part_sizes``,
      ``unary_sizes``; :func:`structlearn.solvers.bcfw`);
    * **warm starts of the active set**: with a loss that runs the
      SparseMAP active set on every example (``loss.uses_active_set``),
      each chunk's structure keeps a ``SupportCache``, so that the
      solves of a full pass start from the supports of the previous one,
      and ``pieces`` keeps one per set of examples it is asked for
      (``piece_caches``).

    Every result is the same for any number of threads.
    """

    def __init__(self, feature_map, y, loss, make_structure, n_jobs=None,
                 sample_weight=None):
        self.fmap = feature_map
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.loss = loss
        self.make_structure = make_structure
        self.pos_off = feature_map.pos_off
        self.n_samples = feature_map.n_samples
        self.sample_weight = normalized_weights(sample_weight, self.n_samples)
        #: every example's score-block size (to weight its score gradient)
        self._sizes = None if self.sample_weight is None else \
            np.asarray(feature_map.part_sizes(), dtype=np.int64)
        self.n_params = feature_map.n_params
        self.penalized = feature_map.penalized
        self.n_threads = n_workers(n_jobs, self.n_samples)
        probe = make_structure(np.array([0, 1]), None)
        active = loss.uses_active_set(type(probe))
        #: whether the loss is differentiable here (a gradient-based duality
        #: gap certifies only then: ``Loss.differentiable``)
        self.differentiable = loss.differentiable(type(probe))
        #: whether some targets are partial (negative codes, completed by
        #: the structure: ``loss.partial_value_and_grad``)
        self.partial = bool(len(self.y) and self.y.min() < 0)
        # the chunks persist across full passes: with the active set each
        # keeps the supports of its examples' previous solves
        self.chunks = [self._contiguous(a, b, SupportCache() if active else None)
                       for a, b in feature_map.chunk_ranges(self.n_threads)]
        #: the warm-start caches of :meth:`pieces`, with the active set
        self.piece_caches = RangeCaches() if active else None
        # the fused likelihood takes transition constraints (as score
        # offsets), not partial targets
        self._fused = loss.gibbs_likelihood and hasattr(feature_map, "gibbs_value_and_grad") \
            and not self.partial and getattr(probe, "known", None) is None
        self._penalties = probe.transition_penalties() \
            if getattr(probe, "allowed", None) is not None else None

    # ------------------------------------------------------------- batches
    def _contiguous(self, a, b, warm_cache=None):
        p0, p1 = self.pos_off[a], self.pos_off[b]
        off = self.pos_off[a:b + 1] - p0
        return RaggedBatch(self.fmap.contiguous(a, b), off, self.y[p0:p1],
                           self.make_structure(off, warm_cache), *self._weights(slice(a, b)))

    def _weights(self, idx):
        """The weights and score-block sizes of the examples ``idx``."""
        if self.sample_weight is None:
            return None, None
        return self.sample_weight[idx], self._sizes[idx]

    def batch(self, idx, warm_cache=None):
        """A batch of the examples ``idx`` (any, in order), its structure
        with the given warm starts (none by default: mini-batches are not
        cached)."""
        idx = np.asarray(idx, dtype=np.int64)
        starts, ends = self.pos_off[idx], self.pos_off[idx + 1]
        off = np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64)
        rows = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)]) \
            if len(idx) else np.zeros(0, dtype=np.int64)
        return RaggedBatch(self.fmap.select(idx), off, self.y[rows],
                           self.make_structure(off, warm_cache), *self._weights(idx))

    # ------------------------------------------------------ values, gradients
    def _loss(self, theta, batch):
        if self.partial:
            return self.loss.partial_value_and_grad(theta, batch.y, batch.structure)
        return self.loss.value_and_grad(theta, batch.y, batch.structure)

    def _weighted(self, vals, G, batch):
        """The losses and score gradients of a batch times its examples'
        weights (each example's score block times its weight)."""
        w = batch.sample_weight
        if w is None:
            return vals, np.ascontiguousarray(G, dtype=np.float64)
        G = np.asarray(G, dtype=np.float64)
        per_part = np.repeat(w, batch.block_sizes)
        return vals * w, np.ascontiguousarray((G.ravel() * per_part).reshape(G.shape))

    def _batch_value_and_grad(self, z, batch, g):
        """Weighted loss values of a batch; adds the gradient of their sum
        to ``g``."""
        theta = self.fmap.scores(z, batch)
        vals, G = self._weighted(*self._loss(theta, batch), batch)
        del theta
        self.fmap.backprop(G, batch, g)
        return vals

    def _group_value_and_grad(self, z, batches):
        if self._fused:
            if self._penalties is not None:
                return self.fmap.gibbs_value_and_grad(z, batches, self._penalties)
            return self.fmap.gibbs_value_and_grad(z, batches)
        g = np.zeros(self.n_params)
        vals = np.concatenate([self._batch_value_and_grad(z, b, g) for b in batches])
        return vals, g

    def value_and_grad(self, z, idx=None):
        """Weighted loss values ``w_i loss_i`` of the examples ``idx`` (all:
        a full pass) and the gradient of their sum."""
        if idx is not None:
            return self._group_value_and_grad(z, [self.batch(idx)])
        k = min(self.n_threads, len(self.chunks))
        if k == 1:
            return self._group_value_and_grad(z, self.chunks)
        # TASKS_PER_THREAD tasks per thread (contiguous chunks), each with its
        # own gradient, summed in task order
        n_tasks = min(len(self.chunks), TASKS_PER_THREAD * k)
        bounds = np.linspace(0, len(self.chunks), n_tasks + 1).astype(int)
        res = thread_map(lambda ab: self._group_value_and_grad(z, self.chunks[ab[0]:ab[1]]),
                         zip(bounds[:-1], bounds[1:]), k)
        return np.concatenate([r[0] for r in res]), sum(r[1] for r in res)

    def sparse_value_and_grad(self, v, idx, scale):
        """Weighted losses of the examples ``idx`` at ``z`` = ``v`` with the
        penalised parameters times ``scale``, and their summed gradient as entries
        ``(cols, vals)`` (see :func:`structlearn.solvers.sgd`): a step
        touches only the parameters of the examples' features."""
        batch = self.batch(idx)
        theta = self.fmap.scores(v, batch, scale)
        vals, G = self._weighted(*self._loss(theta, batch), batch)
        cols, gv = self.fmap.backprop_entries(G, batch)
        return vals, cols, gv

    def params_of(self, idx):
        """Parameters read by the scores of examples ``idx`` (with repeats)."""
        return self.fmap.params_of(idx)

    def sq_norms(self):
        """Per example, the SGD step-size norm of the feature map."""
        return self.fmap.sq_norms(self.y)

    # ------------------------------------------------- the dual solver's view
    def part_sizes(self):
        return self.fmap.part_sizes()

    def unary_sizes(self):
        return self.fmap.unary_sizes()

    def pieces(self, z, idx):
        """Unweighted losses of the examples ``idx`` at ``z``, their flat
        scores and score gradients (split over the threads; the same numbers
        for any thread count; :func:`bcfw` weights the blocks itself)."""
        idx = np.asarray(idx, dtype=np.int64)

        def run(sub):
            warm = None if self.piece_caches is None else self.piece_caches.get(sub)
            batch = self.batch(sub, warm)
            theta = self.fmap.scores(z, batch)
            vals, G = self._loss(theta, batch)
            return vals, theta, np.asarray(G, dtype=np.float64)

        return split_concat(run, idx, self.n_threads)

    def block_entries(self, idx, D):
        return self.fmap.block_entries(idx, D)

    def part_columns(self, rep, parts):
        return self.fmap.part_columns(rep, parts)
