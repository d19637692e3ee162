"""Multilabel structures: the unit cube and the knapsack polytope."""

import itertools

import numpy as np

from ..kernels.maps import (
    cube_map,
    knapsack_log_partition_batch,
    knapsack_map,
    knapsack_slack_violator_batch,
)
from ..kernels.approx_slack import CUBE, KNAPSACK
from ..kernels.projections import project_knapsack_batch, project_knapsack_kl_batch
from .base import Structure


def _clip_cube(theta, geometry):
    if geometry == "euclidean":
        return np.clip(theta, 0.0, 1.0)
    return np.exp(np.minimum(theta - 1.0, 0.0))


class Knapsack(Structure):
    """Label subsets of bounded size, ``{u in [0,1]^k : lower <= sum u <= upper}``.

    Labels are 0/1 indicator rows of shape (n, k); ``phi(y) = y``.  The task
    cost is the Hamming distance, ``cost_vector(phi) = 1 - 2 phi``.  Exact
    slack scaling is polynomial (``O(k^2)``: best removals/additions for each
    pair of counts); marginal inference is an ``O(k^3)`` dynamic programme over
    counts.

    Parameters
    ----------
    n_labels : int
    lower, upper : int
        Bounds on the number of active labels, ``0 <= lower <= upper <= k``.
    """

    sparsemap_by_projection = True
    name = "knapsack polytope"
    marginal_set = "knapsack"
    projection_sets = {"knapsack": ("euclidean", "kl"), "cube": ("euclidean", "kl")}
    has_exact_slack = True

    def __init__(self, n_labels, lower=0, upper=None):
        upper = n_labels if upper is None else upper
        if not 0 <= lower <= upper <= n_labels:
            raise ValueError(
                f"label-count bounds must satisfy 0 <= min_labels <= max_labels <= "
                f"n_labels={n_labels}; got min_labels={lower}, max_labels={upper}.")
        self.n_labels = int(n_labels)
        self.lower = int(lower)
        self.upper = int(upper)
        self.n_parts = self.n_labels

    # encoding ---------------------------------------------------------------
    def all_outputs(self, max_outputs=100_000):
        """Every label set with ``lower..upper`` labels, as 0/1 rows."""
        k = self.n_labels
        self._check_count(2 ** k, max_outputs, f"a knapsack of {k} labels")
        Y = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int64).reshape(-1, k)
        size = Y.sum(axis=1)
        return Y[(size >= self.lower) & (size <= self.upper)]

    def encode(self, y):
        return np.asarray(y, dtype=np.float64)

    def decode(self, phi):
        return (np.asarray(phi) > 0.5).astype(np.int64)

    def argmax(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        order = np.argsort(-theta, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(self.n_labels)[None, :], axis=1)
        on = (rank < self.lower) | ((rank < self.upper) & (theta > 0))
        return on.astype(np.int64)

    def _oracle(self):
        return knapsack_map

    def _oracle_params(self):
        return np.array([self.lower, self.upper], dtype=np.float64)

    # cost -------------------------------------------------------------------
    def cost_vector(self, phi):
        return 1.0 - 2.0 * np.asarray(phi, dtype=np.float64)

    def cost_bounds(self):
        return float(self.n_labels), 1.0

    # oracles ----------------------------------------------------------------
    def marginals_and_log_partition(self, theta):
        logZ, mu = knapsack_log_partition_batch(
            np.ascontiguousarray(theta, dtype=np.float64), self.lower, self.upper)
        return mu, logZ

    def marginals(self, theta):
        return self.marginals_and_log_partition(theta)[0]

    def _approx_slack_family(self):
        return KNAPSACK

    def _runner_up(self, th, yy):
        # The second-best vertex is adjacent to the best one on the polytope:
        # a single flip (if the count stays within bounds) or a swap.
        n, k = th.shape
        cnt = yy.sum(axis=1)
        flip = th * (1 - 2 * yy)
        new_cnt = cnt[:, None] + (1 - 2 * yy)
        flip = np.where((new_cnt >= self.lower) & (new_cnt <= self.upper), flip, -np.inf)
        # swaps: drop a member i, add a non-member j (count unchanged)
        swap = th[:, None, :] - th[:, :, None]  # [i, j] = th_j - th_i
        valid = (yy[:, :, None] == 1) & (yy[:, None, :] == 0)
        swap = np.where(valid, swap, -np.inf).reshape(n, k * k)
        fi = np.argmax(flip, axis=1)
        si = np.argmax(swap, axis=1)
        rows = np.arange(n)
        fv = flip[rows, fi]
        sv = swap[rows, si]
        out = yy.copy()
        use_flip = (fv >= sv) & np.isfinite(fv)
        use_swap = ~use_flip & np.isfinite(sv)
        out[rows[use_flip], fi[use_flip]] ^= 1
        r = rows[use_swap]
        out[r, si[use_swap] // k] = 0
        out[r, si[use_swap] % k] = 1
        return out

    def poslearn_violators(self, theta, y):
        theta = np.asarray(theta, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        n, k = theta.shape
        costs = np.ones((n, k))
        scores = np.empty((n, k))
        phis = np.empty((n, k, k))
        for c in range(k):
            forced = theta.copy()
            forced[:, c] = np.where(y[:, c] == 1, -np.inf, np.inf)
            yc = self.argmax(forced)
            ok = yc[:, c] != y[:, c]
            scores[:, c] = np.where(ok, self.scores(theta, yc), -np.inf)
            phis[:, c, :] = yc
        return costs, scores, phis

    def slack_violator(self, theta, y):
        return knapsack_slack_violator_batch(
            np.ascontiguousarray(theta, dtype=np.float64),
            np.ascontiguousarray(y, dtype=np.float64), self.lower, self.upper)

    def _project(self, theta, set, geometry):
        if set == "cube":
            return _clip_cube(theta, geometry)
        if geometry == "euclidean":
            return project_knapsack_batch(theta, float(self.lower), float(self.upper))
        return project_knapsack_kl_batch(theta, float(self.lower), float(self.upper))


class UnitCube(Knapsack):
    """All label subsets: the unit cube ``[0, 1]^k`` (plain multilabel).

    Same encoding and cost as :class:`Knapsack` without count bounds; MAP,
    marginals (independent sigmoids) and projections (clipping) are closed
    forms.
    """

    name = "unit cube"
    marginal_set = "cube"
    projection_sets = {"cube": ("euclidean", "kl")}

    def __init__(self, n_labels):
        super().__init__(n_labels, 0, n_labels)

    def argmax(self, theta):
        return (np.asarray(theta) > 0).astype(np.int64)

    def _oracle(self):
        return cube_map

    def _approx_slack_family(self):
        return CUBE

    def marginals_and_log_partition(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        mu = 0.5 * (1.0 + np.tanh(0.5 * theta))  # stable sigmoid
        logZ = np.logaddexp(0.0, theta).sum(axis=1)
        return mu, logZ

    def _project(self, theta, set, geometry):
        return _clip_cube(theta, geometry)
