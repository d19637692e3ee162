"""Labelled segmentations: semi-Markov chains (Sarawagi & Cohen 2004)."""

import numpy as np

from ..kernels.segments import (
    check_segment_codes,
    segment_cost_batch,
    segment_decode_batch,
    segment_encode_batch,
    segment_map,
    segment_marginals_batch,
    segment_part_offsets,
    segment_score_batch,
    segment_viterbi_batch,
)
from ..kernels.segment_violators import (
    segment_poslearn_batch,
    segment_second_best_batch,
    segment_slack_violator_batch,
)
from ..kernels.sparsemap import block_params
from .base import IntractableError, RaggedStructure


def _penalties(value, K, name):
    if value is None:
        return np.ones(K)
    value = np.asarray(value, dtype=np.float64)
    if value.shape != (K,) or not np.all(np.isfinite(value)) or np.any(value < 0):
        raise ValueError(f"{name} must be {K} finite non-negative penalties (one per "
                         f"label), got {value!r}.")
    return np.ascontiguousarray(value)


class Segments(RaggedStructure):
    """Labelled segmentations of a batch of sequences (semi-Markov chains).

    A segmentation cuts a sequence of ``L`` tokens into segments of
    ``1..max_length`` tokens, each with one of ``n_labels`` labels; its
    score adds a score per segment, the transition scores between the
    labels of consecutive segments and start / end scores (the layout and
    the codes -- ``2 k + 1`` where a token starts a segment of label ``k``,
    ``2 k`` where it continues one -- are documented in
    ``structlearn.kernels.segments``).  Inference: semi-Markov Viterbi
    (MAP), forward-backward (marginals, log-partition), SparseMAP by the
    active set of ``structures.base.RaggedStructure``
    (its warm start is not used: a segmentation is not one code per row of
    the segment block).

    The task cost is that of Sarawagi & Gupta (2008, Sec. 4.3.2), a sum
    over the predicted segments: a segment whose span is a gold segment's
    costs ``mismatch[gold label, label]``; any other costs its label's
    ``precision`` penalty plus the ``recall`` penalty of every gold segment
    that starts inside it.  The defaults -- penalties of 1 and ``mismatch =
    1 - I`` -- count the wrong predicted segments plus the missed gold
    ones (a mislabelled span counts once), the segment analogue of the
    Hamming cost.

    Parameters
    ----------
    n_labels : int
    tok_off : int array (n_sequences + 1,)
        Token offsets (every length >= 1).
    max_length : int or array of n_labels ints
        The longest segment, of every label or per label (a label whose
        segments are always one token long, e.g. an 'outside' label, costs
        one part per token instead of ``max(max_length)``).
    precision, recall : arrays of n_labels non-negative floats, optional
    mismatch : (n_labels, n_labels) array, optional
        Non-negative, zero on the diagonal.
    warm_cache : None
        Accepted for the protocol of the training problems (unused).
    """

    name = "segments"
    scores_name = "segmentation"
    example = "sequence"
    projection_sets = {"segments": ("euclidean",)}
    marginal_set = "segments"
    interaction_parts = True
    #: the supports are not stored between solves (see the class docstring)
    warm_supports = False

    def __init__(self, n_labels, tok_off, max_length, precision=None, recall=None,
                 mismatch=None, warm_cache=None):
        self.n_labels = K = int(n_labels)
        if K < 1:
            raise ValueError(f"n_labels must be >= 1, got {n_labels}.")
        Mk = np.broadcast_to(np.asarray(max_length), (K,)) if np.ndim(max_length) == 0 \
            else np.asarray(max_length)
        if Mk.shape != (K,) or not np.issubdtype(Mk.dtype, np.integer) or Mk.min() < 1:
            raise ValueError(f"max_length must be a positive integer or {K} of them (one per "
                             f"label), got {max_length!r}.")
        #: the longest segment of each label, and of all
        # (a writeable copy: the kernels take it, and a read-only array -- the
        # caller's, passed through -- would compile each of them once more)
        self.label_max = np.array(Mk, dtype=np.int64)
        self.max_length = int(Mk.max())
        self.tok_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        lengths = np.diff(self.tok_off)
        if len(lengths) == 0 or lengths.min() < 1:
            raise ValueError("a Segments batch needs at least one sequence, each of "
                             "length >= 1.")
        self.lengths = lengths
        self.n = len(lengths)
        self.part_off = segment_part_offsets(self.tok_off, K, self.max_length)
        self.n_parts = int(self.part_off[-1])
        self.block_sizes = np.diff(self.part_off)
        self._mask = None
        self.precision = _penalties(precision, K, "precision")
        self.recall = _penalties(recall, K, "recall")
        if mismatch is None:
            mismatch = 1.0 - np.eye(K)
        mismatch = np.asarray(mismatch, dtype=np.float64)
        if mismatch.shape != (K, K) or not np.all(np.isfinite(mismatch)) \
                or np.any(mismatch < 0) or np.any(np.diag(mismatch) != 0):
            raise ValueError(f"mismatch must be a ({K}, {K}) non-negative matrix with a zero "
                             f"diagonal, got {mismatch!r}.")
        self.mismatch = np.ascontiguousarray(mismatch)
        self.warm_cache = warm_cache

    # ------------------------------------------------------------- layout
    @property
    def n_unary(self):
        """The segment parts lead every block (the parts SparseMAP penalises)."""
        return self.lengths * self.max_length * self.n_labels

    @property
    def pos_off(self):
        return self.tok_off

    def unary_sq(self, mu):
        mu = np.asarray(mu, dtype=np.float64)
        return self.sum_parts(np.where(self._unary_mask(), mu * mu, 0.0))

    def _unary_mask(self):
        """The segment parts of every block (computed once)."""
        if self._mask is None:
            local = np.arange(self.n_parts) - np.repeat(self.part_off[:-1], self.block_sizes)
            self._mask = local < np.repeat(self.n_unary, self.block_sizes)
        return self._mask

    def _y(self, y):
        y = np.ascontiguousarray(y, dtype=np.int64)
        if y.shape != (int(self.tok_off[-1]),):
            raise ValueError(f"segmentations must be a flat array of {int(self.tok_off[-1])} "
                             f"token codes, got shape {y.shape}.")
        i, t, reason = check_segment_codes(y, self.tok_off, self.n_labels, self.label_max)
        if reason:
            why = {1: f"a label outside 0..{self.n_labels - 1}",
                   2: "a first token that does not start a segment",
                   3: "a continuation with another label",
                   4: "a segment longer than its label's max_length "
                      f"{int(self.label_max[int(y[self.tok_off[i] + t]) // 2])}"}[int(reason)]
            raise ValueError(f"invalid segmentation code {int(y[self.tok_off[i] + t])} at "
                             f"sequence {i}, token {t}: {why}.")
        return y

    # ----------------------------------------------------------- encoding
    def all_outputs(self, max_outputs=100_000):
        """Every segmentation of the batch's one sequence (rows of codes)."""
        L = self._one_example()
        K, M, Mk = self.n_labels, self.max_length, self.label_max
        count = [1] + [0] * L          # segmentations of the first t tokens
        for t in range(1, L + 1):
            count[t] = sum(count[t - ln] for k in range(K)
                           for ln in range(1, min(int(Mk[k]), t) + 1))
        self._check_count(count[L], max_outputs, f"a sequence of {L} tokens")

        def rest(t):
            if t == L:
                yield []
                return
            for ln in range(1, min(M, L - t) + 1):
                for k in range(K):
                    if ln > Mk[k]:
                        continue
                    for tail in rest(t + ln):
                        yield [2 * k + 1] + [2 * k] * (ln - 1) + tail

        return np.array(list(rest(0)), dtype=np.int64).reshape(-1, L)

    def encode(self, y):
        return segment_encode_batch(self._y(y), self.part_off, self.tok_off, self.n_labels,
                                    self.max_length)

    def decode(self, phi):
        return segment_decode_batch(np.ascontiguousarray(phi, dtype=np.float64),
                                    self.part_off, self.tok_off, self.n_labels,
                                    self.max_length)

    def argmax(self, theta):
        return segment_viterbi_batch(self._theta(theta), self.part_off, self.tok_off,
                                     self.n_labels, self.max_length, self.label_max)

    def scores(self, theta, y):
        return segment_score_batch(self._theta(theta), self._y(y), self.part_off,
                                   self.tok_off, self.n_labels, self.max_length)

    def marginals_and_log_partition(self, theta):
        return segment_marginals_batch(self._theta(theta), self.part_off, self.tok_off,
                                       self.n_labels, self.max_length, self.label_max)

    # --------------------------------------------------------------- cost
    def cost_vector(self, phi):
        """The segment cost of the gold segmentation ``phi`` as a part vector
        (see the class docstring)."""
        return segment_cost_batch(self.decode(phi), self.part_off, self.tok_off,
                                  self.n_labels, self.max_length, self.precision,
                                  self.recall, self.mismatch)

    def cost(self, y_pred, y_true):
        return self.dot(self.encode(y_pred), self.cost_vector(self.encode(y_true)))

    def cost_bounds(self):
        """Per sequence an upper bound of the cost (every token a wrong
        segment that also misses a gold one), and the smallest positive
        penalty."""
        top = max(float(self.precision.max()) + float(self.recall.max()),
                  float(self.mismatch.max()))
        pos = self._positive_penalties()
        return self.lengths * max(top, 1e-12), float(pos.min()) if len(pos) else 1.0

    def _positive_penalties(self):
        pos = np.concatenate([self.precision, self.recall, self.mismatch.ravel()])
        return pos[pos > 0]

    def cost_gap(self):
        """The smallest positive penalty where every penalty is a whole
        multiple of it (every cost then is), else 0: two sums of unrelated
        penalties can be closer than any one of them."""
        pos = self._positive_penalties()
        if not len(pos):
            return 1.0
        q = pos / pos.min()
        return float(pos.min()) if np.all(q == np.round(q)) else 0.0

    # ------------------------------------------------------------ oracles
    def second_best(self, theta, y):
        """The best segmentation other than ``y`` (a 2-best semi-Markov
        Viterbi; ``y`` itself where it is the only segmentation)."""
        y2, _ = segment_second_best_batch(self._theta(theta), self._y(y), self.part_off,
                                          self.tok_off, self.n_labels, self.max_length,
                                          self.label_max)
        return y2

    def poslearn_value_and_grad(self, theta, y):
        """PosLearn with the segment cost: one violator per span ``(s, e)``,
        from forward and backward semi-Markov Viterbi max-marginals
        (Sarawagi & Gupta 2008, Sec. 4.3.2)."""
        y = self._y(y)
        cost = self.cost_vector(self.encode(y))
        return segment_poslearn_batch(self._theta(theta), y, cost, self.part_off,
                                      self.tok_off, self.n_labels, self.max_length,
                                      self.label_max)

    @property
    def has_exact_slack(self):
        """Exact slack scaling needs integer penalties (a Viterbi over the
        accumulated cost, as for the Hamming cost of chains); the default
        penalties are."""
        return all(np.array_equal(v, np.round(v))
                   for v in (self.precision, self.recall, self.mismatch))

    def slack_violator(self, theta, y):
        """Exact slack scaling by a semi-Markov Viterbi over (token, label,
        accumulated cost), for integer penalties; ``O((L M K + L K^2) C)``
        with ``C`` the largest cost a segmentation can reach."""
        if not self.has_exact_slack:
            raise IntractableError(
                "exact slack scaling on segmentations needs integer precision, recall "
                "and mismatch penalties (its Viterbi runs over the accumulated cost); "
                "use loss='hinge-approx-slack' or loss='poslearn' for real-valued ones.")
        y = self._y(y)
        icost = np.rint(self.cost_vector(self.encode(y))).astype(np.int64)
        y_hat = segment_slack_violator_batch(self._theta(theta), y, icost, self.part_off,
                                             self.tok_off, self.n_labels, self.max_length,
                                             self.label_max)
        return self.encode(y_hat)

    def _project(self, theta, set, geometry):
        return self._marginal_projection(theta)

    # ---------------------------------------------------------- SparseMAP
    def _oracles(self):
        return segment_map, None

    def _oracle_params(self):
        return block_params(self.tok_off, np.concatenate(
            [[float(self.n_labels), float(self.max_length)], self.label_max.astype(float)]))
