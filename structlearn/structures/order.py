"""Ordinal regression: the order simplex."""

import numpy as np
from scipy.special import logsumexp, softmax

from ..kernels.approx_slack import ORDER_SIMPLEX
from ..kernels.maps import order_simplex_map
from ..kernels.projections import isotonic_decreasing_batch
from .base import Structure


class OrderSimplex(Structure):
    """``k`` ordered classes encoded by ``k - 1`` thresholds (all-threshold).

    Labels are class indices ``0..k-1`` (shape (n,)); ``phi(y)_t = 1[y > t]``
    for ``t = 0..k-2``, so the marginal polytope is
    ``{1 >= u_1 >= ... >= u_{k-1} >= 0}``.  The task cost is the absolute
    error ``|y' - y|``, which is the Hamming distance between encodings:
    ``cost_vector(phi) = 1 - 2 phi``.  Class scores are prefix sums of
    ``theta``, so MAP, marginals and slack scaling enumerate the ``k``
    classes.
    """

    sparsemap_by_projection = True
    name = "order simplex"
    marginal_set = "order-simplex"
    projection_sets = {"order-simplex": ("euclidean", "kl"), "cube": ("euclidean", "kl")}
    has_exact_slack = True

    def __init__(self, n_classes):
        if n_classes < 2:
            raise ValueError(f"the order simplex needs at least 2 classes, got {n_classes}.")
        self.n_classes = int(n_classes)
        self.n_parts = self.n_classes - 1

    def all_outputs(self, max_outputs=100_000):
        """The classes ``0..n_classes - 1``."""
        self._check_count(self.n_classes, max_outputs, "the order simplex")
        return np.arange(self.n_classes, dtype=np.int64)

    def class_scores(self, theta):
        """Scores of the ``k`` classes, ``s_0 = 0, s_j = sum_{t<j} theta_t``."""
        theta = np.asarray(theta, dtype=np.float64)
        return np.concatenate([np.zeros((len(theta), 1)), np.cumsum(theta, axis=1)], axis=1)

    def encode(self, y):
        y = np.asarray(y, dtype=np.int64)
        return (y[:, None] > np.arange(self.n_parts)[None, :]).astype(np.float64)

    def argmax(self, theta):
        return np.argmax(self.class_scores(theta), axis=1)

    def decode(self, phi):
        return np.rint(np.asarray(phi).sum(axis=1)).astype(np.int64)

    def _oracle(self):
        return order_simplex_map

    def cost_vector(self, phi):
        return 1.0 - 2.0 * np.asarray(phi, dtype=np.float64)

    def cost_bounds(self):
        return float(self.n_classes - 1), 1.0

    def class_probabilities(self, theta):
        """CRF distribution over the ``k`` classes."""
        return softmax(self.class_scores(theta), axis=1)

    def marginals_and_log_partition(self, theta):
        S = self.class_scores(theta)
        p = softmax(S, axis=1)
        # mu_t = P(y > t) = 1 - sum_{j <= t} p_j
        mu = 1.0 - np.cumsum(p, axis=1)[:, :-1]
        return np.clip(mu, 0.0, 1.0), logsumexp(S, axis=1)

    def marginals(self, theta):
        return self.marginals_and_log_partition(theta)[0]

    def _approx_slack_family(self):
        return ORDER_SIMPLEX

    def _runner_up(self, theta, best):
        S = self.class_scores(theta)
        S[np.arange(len(S)), best] = -np.inf
        return np.argmax(S, axis=1)

    def poslearn_violators(self, theta, y):
        """Positions are the thresholds; a violator crosses threshold ``t``."""
        S = self.class_scores(theta)
        y = np.asarray(y, dtype=np.int64)
        n, k = S.shape
        costs = np.ones((n, k - 1))
        scores = np.empty((n, k - 1))
        labels = np.empty((n, k - 1), dtype=np.int64)
        pre_arg = np.zeros(n, dtype=np.int64)
        # best class <= t (prefix) and > t (suffix)
        suf_best = np.empty((n, k), dtype=np.int64)
        suf_best[:, k - 1] = k - 1
        for j in range(k - 2, -1, -1):
            prev = suf_best[:, j + 1]
            suf_best[:, j] = np.where(S[:, j] >= S[np.arange(n), prev], j, prev)
        rows = np.arange(n)
        for t in range(k - 1):
            better = S[:, t] > S[rows, pre_arg]
            pre_arg = np.where(better, t, pre_arg)
            lab = np.where(y > t, pre_arg, suf_best[:, t + 1])
            labels[:, t] = lab
            scores[:, t] = S[rows, lab]
        phis = (labels[:, :, None] > np.arange(k - 1)[None, None, :]).astype(np.float64)
        return costs, scores, phis

    def slack_violator(self, theta, y):
        S = self.class_scores(theta)
        y = np.asarray(y, dtype=np.int64)
        rows = np.arange(len(S))
        L = np.abs(np.arange(self.n_classes)[None, :] - y[:, None])
        val = L * (1.0 - S[rows, y][:, None] + S)
        return self.encode(np.argmax(val, axis=1))

    def _project(self, theta, set, geometry):
        if set == "cube":
            if geometry == "euclidean":
                return np.clip(theta, 0.0, 1.0)
            return np.exp(np.minimum(theta - 1.0, 0.0))
        if geometry == "euclidean":
            # isotonic regression then clipping to [0, 1] (Blondel 2019, App.)
            return np.clip(isotonic_decreasing_batch(theta), 0.0, 1.0)
        # KL: pooling blocks minimise sum KL(u, v_i) at the geometric mean of
        # v_i, i.e. the arithmetic mean of log v_i = theta_i - 1, so PAV runs
        # in the log domain; the upper bound 1 is then a clip.
        return np.exp(np.minimum(isotonic_decreasing_batch(theta - 1.0), 0.0))
