"""Label ranking: the permutahedron and the Birkhoff polytope.

Labels are rank vectors ``y`` of shape (n, k): ``y[i, j]`` is the rank of
label ``j`` for sample ``i``, 1 = best (the scikit-lr convention).
"""

import itertools
import math

import numpy as np
from scipy.special import softmax

from ..kernels.approx_slack import BIRKHOFF, PERMUTAHEDRON
from ..kernels.assignment import linear_assignment_batch
from ..kernels.maps import (
    BIRKHOFF_FORBIDDEN,
    birkhoff_map,
    permutahedron_map,
    permutahedron_poslearn_batch,
)
from ..kernels.projections import (
    project_birkhoff_batch,
    project_permutahedron_batch,
    project_simplex_batch,
    sinkhorn_batch,
)
from .base import Structure

# Score given to a forbidden (label, rank) entry of a linear assignment.
_FORBIDDEN = BIRKHOFF_FORBIDDEN


def _ranks_from_order(order):
    """Rank vectors (1 = best) from rows listing labels best-first."""
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, order.shape[1] + 1)[None, :], axis=1)
    return ranks


class Permutahedron(Structure):
    """Rankings with one score per label: the permutahedron induced by ``w``.

    ``phi(y)_j = w_{y_j}`` with ``w = (k, k-1, ..., 1)`` by default, so MAP
    is a sort of the scores and the Euclidean projection is a sort plus
    isotonic regression (Blondel 2019, Sec. 4).  The task cost is
    ``||phi(y') - phi(y)||^2 / 2`` (half the squared rank distance, i.e.
    Spearman's footrule squared), ``cost_vector(phi) = -phi``.  Marginal
    inference is #P-hard and exact slack scaling has no known polynomial
    algorithm, so 'crf' and 'hinge-slack' raise.

    PosLearn positions are the labels, with ``L_j(r) = (w_r - w_{y_j})^2 / 2``
    so that the positions' costs add up to the task cost.
    """

    sparsemap_by_projection = True
    name = "permutahedron"
    marginal_set = "permutahedron"
    projection_sets = {"permutahedron": ("euclidean",)}

    def __init__(self, n_labels, weights=None):
        if weights is None:
            weights = np.arange(n_labels, 0, -1, dtype=np.float64)
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n_labels,):
            raise ValueError(f"weights must have shape ({n_labels},), got {w.shape}.")
        if np.any(np.diff(w) >= 0):
            raise ValueError("permutahedron weights must be strictly decreasing.")
        self.n_labels = int(n_labels)
        self.n_parts = self.n_labels
        self.weights = w

    def all_outputs(self, max_outputs=100_000):
        """Every ranking, as rank vectors (values ``1..n_labels``)."""
        k = self.n_labels
        self._check_count(math.factorial(k), max_outputs, f"{k} labels' rankings")
        return np.array(list(itertools.permutations(range(1, k + 1))),
                        dtype=np.int64).reshape(-1, k)

    def encode(self, y):
        return self.weights[np.asarray(y, dtype=np.int64) - 1]

    def decode(self, phi):
        # weights are strictly decreasing: rank r+1 <-> weights[r]
        d = np.abs(np.asarray(phi)[:, :, None] - self.weights[None, None, :])
        return np.argmin(d, axis=2) + 1

    def argmax(self, theta):
        return _ranks_from_order(np.argsort(-np.asarray(theta), axis=1, kind="stable"))

    def _oracle(self):
        return permutahedron_map

    def _oracle_params(self):
        return self.weights

    def cost_vector(self, phi):
        return -np.asarray(phi, dtype=np.float64)

    def cost_bounds(self):
        """``L_max`` (the reversal) and the smallest gap between distinct costs.

        With integer weights every cost ``sum w^2 - <w_pi, w>`` is an
        integer, so the gap is 1.  Otherwise the gap is found by enumerating
        the permutations for ``k <= 8``; beyond that the smallest single-swap
        cost ``min (w_a - w_b)^2`` divided by ``k`` is used, a heuristic
        (the gap only sets the upper end of the approximate-slack search).
        """
        w = self.weights
        L_max = 0.5 * float(np.sum((w - w[::-1]) ** 2))
        if np.all(w == np.round(w)):
            return L_max, 1.0
        if self.n_labels <= 8:
            from itertools import permutations
            costs = np.unique(np.round([0.5 * np.sum((w[list(p)] - w) ** 2)
                                        for p in permutations(range(self.n_labels))], 12))
            return L_max, float(np.min(np.diff(costs))) if len(costs) > 1 else 1.0
        gaps = np.diff(w) ** 2
        return L_max, float(gaps.min()) / self.n_labels

    def cost_gap(self):
        """1 with integer weights (every cost is an integer), else 0: the
        gap of ``cost_bounds`` is a heuristic for ``k > 8``, and for ``k <=
        8`` an enumeration rounded to 12 decimals, which merges distinct
        costs of small weights (weights ~1e-5 give costs ~1e-10)."""
        w = self.weights
        return 1.0 if np.all(w == np.round(w)) else 0.0

    def _approx_slack_family(self):
        return PERMUTAHEDRON

    def _runner_up(self, th, best):
        # The second-best vertex is adjacent to the best one: a swap of the
        # labels at two consecutive ranks.
        if self.n_labels < 2:
            return best
        order = np.argsort(-th, axis=1, kind="stable")
        srt = np.take_along_axis(th, order, axis=1)
        dw = self.weights[:-1] - self.weights[1:]
        loss = (srt[:, :-1] - srt[:, 1:]) * dw  # score lost by each swap
        r = np.argmin(loss, axis=1)
        rows = np.arange(len(th))
        a, b = order[rows, r].copy(), order[rows, r + 1].copy()
        order[rows, r], order[rows, r + 1] = b, a
        return _ranks_from_order(order)

    def poslearn_violators(self, theta, y):
        costs, scores, ranks0 = permutahedron_poslearn_batch(
            np.ascontiguousarray(theta, dtype=np.float64),
            np.ascontiguousarray(np.asarray(y, dtype=np.int64) - 1), self.weights)
        return costs, scores, self.weights[ranks0]

    def _project(self, theta, set, geometry):
        return project_permutahedron_batch(theta, self.weights)


class Birkhoff(Structure):
    """Rankings with one score per (label, rank): the Birkhoff polytope.

    ``phi(y)`` is the ``k x k`` permutation matrix with ``P[j, y_j - 1] = 1``,
    flattened row-major; MAP is a linear assignment.  The task cost is the
    number of labels at a wrong rank, ``k - <P', P>``
    (``cost_vector(P) = -P``), so calibrated decoding is a linear assignment
    on the projected marginals.  Projection sets: the Birkhoff polytope
    (Euclidean by a dual method: exact block-coordinate sweeps plus
    semismooth Newton steps; KL by Sinkhorn with Newton steps), the row-stochastic
    superset (row-wise simplex projection / softmax) and the unit cube.

    SparseMAP penalises every part, so its marginals are the Euclidean
    projection onto the polytope, computed by the dual method (the active
    set still gives :meth:`sparsemap_support`'s distributions).

    PosLearn positions are the labels (``L_j = 1`` for any wrong rank): the
    violator of label ``j`` is the MAP if it misplaces ``j``, otherwise the
    assignment with entry ``(j, y_j)`` forbidden (Sarawagi & Gupta's
    ``n``-MAP-calls scheme).
    """

    #: every part is penalised, so SparseMAP is the Euclidean projection:
    #: the dual method, not the active set (whose KKT system grows with the
    #: support, up to k^2 vertices: 7x slower fits at k = 16)
    sparsemap_by_projection = True
    name = "Birkhoff polytope"
    marginal_set = "birkhoff"
    projection_sets = {"birkhoff": ("euclidean", "kl"),
                       "row-stochastic": ("euclidean", "kl"),
                       "cube": ("euclidean", "kl")}

    def __init__(self, n_labels, max_iter=10000, tol=1e-9):
        self.n_labels = int(n_labels)
        self.n_parts = self.n_labels ** 2
        self.max_iter = max_iter
        self.tol = tol

    def all_outputs(self, max_outputs=100_000):
        """Every ranking, as rank vectors (values ``1..n_labels``)."""
        k = self.n_labels
        self._check_count(math.factorial(k), max_outputs, f"{k} labels' rankings")
        return np.array(list(itertools.permutations(range(1, k + 1))),
                        dtype=np.int64).reshape(-1, k)

    def encode(self, y):
        y = np.asarray(y, dtype=np.int64)
        n, k = y.shape
        phi = np.zeros((n, k, k))
        phi[np.arange(n)[:, None], np.arange(k)[None, :], y - 1] = 1.0
        return phi.reshape(n, k * k)

    def decode(self, phi):
        k = self.n_labels
        return np.argmax(np.asarray(phi).reshape(len(phi), k, k), axis=2) + 1

    def argmax(self, theta):
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        return linear_assignment_batch(theta, self.n_labels) + 1

    def _oracle(self):
        return birkhoff_map

    def _oracle_params(self):
        return np.array([self.n_labels], dtype=np.float64)

    def cost_vector(self, phi):
        return -np.asarray(phi, dtype=np.float64)

    def cost_bounds(self):
        return float(self.n_labels), 1.0

    def _best_with_forbidden(self, theta, label, rank0):
        """Best assignment with entry (label, rank0[i]) forbidden, per row."""
        k = self.n_labels
        th = theta.reshape(len(theta), k, k).copy()
        th[np.arange(len(theta)), label, rank0] = _FORBIDDEN
        y = self.argmax(th.reshape(len(theta), k * k))
        ok = y[:, label] - 1 != rank0
        return y, ok

    def _approx_slack_family(self):
        return BIRKHOFF

    def _runner_up(self, th, cur):
        # Murty-style: the best assignment that differs from the MAP in row j,
        # over all rows j.
        if self.n_labels < 2:
            return cur
        top_score = np.full(len(th), -np.inf)
        top = cur.copy()
        for j in range(self.n_labels):
            cand, ok = self._best_with_forbidden(th, j, cur[:, j] - 1)
            s = np.where(ok, self.scores(th, cand), -np.inf)
            better = s > top_score
            top[better] = cand[better]
            top_score = np.maximum(top_score, s)
        return top

    def poslearn_violators(self, theta, y):
        theta = np.asarray(theta, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        n, k = y.shape
        best = self.argmax(theta)
        best_score = self.scores(theta, best)
        costs = np.ones((n, k))
        scores = np.empty((n, k))
        phis = np.empty((n, k, k * k))
        for j in range(k):
            wrong = best[:, j] != y[:, j]
            viol = best.copy()
            sc = best_score.copy()
            need = ~wrong
            if need.any():
                cand, ok = self._best_with_forbidden(theta[need], j, y[need, j] - 1)
                viol[need] = cand
                sc[need] = np.where(ok, self.scores(theta[need], cand), -np.inf)
            scores[:, j] = sc
            phis[:, j, :] = self.encode(viol)
        return costs, scores, phis

    def _project(self, theta, set, geometry):
        k = self.n_labels
        n = len(theta)
        if set == "cube":
            if geometry == "euclidean":
                return np.clip(theta, 0.0, 1.0)
            return np.exp(np.minimum(theta - 1.0, 0.0))
        if set == "row-stochastic":
            rows = theta.reshape(n * k, k)
            if geometry == "euclidean":
                return project_simplex_batch(np.ascontiguousarray(rows)).reshape(n, k * k)
            # KL onto the simplex of exp(theta - 1) is the softmax
            return softmax(rows, axis=1).reshape(n, k * k)
        if geometry == "euclidean":
            return project_birkhoff_batch(theta, k, self.max_iter, self.tol)
        return sinkhorn_batch(theta, k, self.max_iter, self.tol)
