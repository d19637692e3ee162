"""The training problem of the fixed-size structures: ``theta = T W x + b``."""

import numpy as np
import scipy.sparse as sp

from ..kernels.dual import outer_entries
from ._protocol import normalized_weights
from ._threads import n_workers, thread_map


def _take(y, idx):
    return y[idx]


def loss_value_and_grad(loss, theta, y, structure, n_jobs=None):
    """Evaluate ``loss`` on a batch of fixed-size rows, split across threads
    (:func:`thread_map`)."""
    n = len(theta)
    k = n_workers(n_jobs, n)
    if k == 1:
        return loss.value_and_grad(theta, y, structure)
    chunks = np.array_split(np.arange(n), k)
    res = thread_map(lambda c: loss.value_and_grad(theta[c], _take(y, c), structure),
                     chunks, k)
    return np.concatenate([r[0] for r in res]), np.vstack([r[1] for r in res])


def _scores(X, W, b, tie=None):
    """``theta = X W^T T^T + b``; ``tie`` (n_parts, n_rows) maps weight rows
    to parts (None: one weight row per part)."""
    theta = X @ W.T
    if sp.issparse(theta):
        theta = theta.toarray()
    theta = np.asarray(theta)
    if tie is not None:
        theta = theta @ tie.T
    return theta + b


def _grad_W(G, X, tie=None):
    """Chain rule ``T^T G^T X`` for a gradient ``G`` w.r.t. the part scores."""
    if tie is not None:
        G = G @ tie
    g = X.T @ G  # (n_features, n_rows), works for sparse X
    return np.asarray(g).T


class LinearProblem:
    """Training problem of a fixed-size structure: ``theta_i = T W x_i + b``.

    ``z = [W.ravel(), b]`` (``b`` only with ``fit_intercept``); ``W`` is
    penalised, ``b`` is not.

    Parameters
    ----------
    X : ndarray or sparse matrix (n_samples, n_features)
    y : targets in the structure's encoding
    structure, loss : the output structure and the loss
    n_weight_rows : int
        Rows of ``W`` (``n_parts`` unless weights are tied).
    fit_intercept : bool
    tie : ndarray (n_parts, n_weight_rows) or None
    n_jobs : int or None
        Threads for the oracles on full passes.
    sample_weight : array-like (n_samples,) or None
        Example weights ``w_i >= 0`` (the objective ``sum_i w_i loss_i /
        sum_i w_i + alpha/2 ||z_P||^2``); kept normalised to mean 1 as
        ``self.sample_weight`` (None: unweighted), see
        :mod:`structlearn.solvers._protocol`.
    """

    def __init__(self, X, y, structure, loss, n_weight_rows, fit_intercept=True,
                 tie=None, n_jobs=None, sample_weight=None):
        self.X, self.y, self.structure, self.loss = X, y, structure, loss
        #: whether the loss is differentiable here (``Loss.differentiable``)
        self.differentiable = loss.differentiable(type(structure))
        self.sample_weight = normalized_weights(sample_weight, X.shape[0])
        self.tie, self.n_jobs, self.fit_intercept = tie, n_jobs, fit_intercept
        self.n_samples, d = X.shape
        self.shape_W = (n_weight_rows, d)
        self.n_parts = structure.n_parts
        n_w = n_weight_rows * d
        self.n_params = n_w + (self.n_parts if fit_intercept else 0)
        self.penalized = np.zeros(self.n_params, dtype=bool)
        self.penalized[:n_w] = True

    def pack(self, W, b):
        z = np.asarray(W, dtype=np.float64).ravel()
        return np.concatenate([z, b]) if self.fit_intercept else z.copy()

    def unpack(self, z):
        q, d = self.shape_W
        W = z[:q * d].reshape(q, d)
        b = z[q * d:] if self.fit_intercept else np.zeros(self.n_parts)
        return W, b

    def sq_norms(self):
        """``||x_i||^2`` (+1 with an intercept), for SGD step sizes."""
        if sp.issparse(self.X):
            sq = np.asarray(self.X.multiply(self.X).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", self.X, self.X)
        return sq + (1.0 if self.fit_intercept else 0.0)

    def value_and_grad(self, z, idx=None):
        """Weighted loss values ``w_i loss_i`` of samples ``idx`` (all if
        None) and the gradient of their sum with respect to ``z``."""
        W, b = self.unpack(z)
        if idx is None:
            X, y, n_jobs = self.X, self.y, self.n_jobs
        else:
            X, y, n_jobs = self.X[idx], self.y[idx], None
        vals, G = loss_value_and_grad(self.loss, _scores(X, W, b, self.tie), y,
                                      self.structure, n_jobs)
        if self.sample_weight is not None:
            w = self.sample_weight if idx is None else self.sample_weight[idx]
            vals = vals * w
            G = G * w[:, None]
        gW = _grad_W(G, X, self.tie)
        g = self.pack(gW, G.sum(axis=0)) if self.fit_intercept else gW.ravel()
        return vals, g

    # The per-example view of the dual solver (:func:`bcfw`): the score
    # vector of example i is one block of ``n_parts`` entries.
    def part_sizes(self):
        """Size of every example's score vector (its dual block)."""
        return np.full(self.n_samples, self.n_parts, dtype=np.int64)

    def unary_sizes(self):
        """Per example, the leading parts of its block that a quadratic
        loss penalises (SparseMAP's ``U``)."""
        return np.full(self.n_samples, self.structure.n_unary, dtype=np.int64)

    def pieces(self, z, idx):
        """Unweighted losses of the samples ``idx`` at ``z``, with their
        scores and score gradients as flat arrays of blocks (the maximising
        affine piece of each max-margin loss; :func:`bcfw` weights the
        blocks itself)."""
        W, b = self.unpack(z)
        X = self.X[idx]
        theta = _scores(X, W, b, self.tie)
        vals, G = loss_value_and_grad(self.loss, theta, self.y[idx], self.structure,
                                      self.n_jobs)
        return vals, theta.ravel(), np.asarray(G, dtype=np.float64).ravel()

    def block_entries(self, idx, D):
        """Per sample ``i`` of ``idx``, the entries ``(cols, vals)`` of
        ``A_i^T D_i`` (the gradient in ``z`` of ``<D_i, theta_i>``) for a flat
        array ``D`` of score-space blocks; returns ``(cols, vals, ptr)``."""
        X = sp.csr_matrix(self.X[idx])
        D = np.ascontiguousarray(np.reshape(D, (len(idx), self.n_parts)))
        Dt = np.ascontiguousarray(D @ self.tie if self.tie is not None else D)
        q, d = self.shape_W
        return outer_entries(X.indptr.astype(np.int64), X.indices.astype(np.int64),
                             X.data.astype(np.float64), Dt, d,
                             D if self.fit_intercept else np.zeros((0, 0)), q * d)


def objective(problem, z, alpha):
    """Regularised empirical risk ``(1/n) sum_i w_i loss_i + alpha/2
    ||z_P||^2`` (the weights of mean 1: the weighted mean loss)."""
    vals, _ = problem.value_and_grad(z)
    zp = z[problem.penalized]
    return float(vals.mean() + 0.5 * alpha * zp @ zp)
