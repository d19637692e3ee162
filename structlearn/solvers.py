"""Solvers for ``min_z (1/n) sum_i loss(theta_i(z), y_i) + alpha/2 ||z_P||^2``.

A solver sees the training problem only through a *problem* object (see
:class:`LinearProblem`): the parameter vector ``z``, which of its entries are
penalised (``P``), and ``value_and_grad(z, idx)`` -- the per-sample loss
values of the samples ``idx`` and the gradient of their **sum** with respect
to ``z`` (the chain rule ``A^T dloss/dtheta`` is the problem's business).
That keeps one implementation of each solver for every task: fixed-size
outputs (:class:`LinearProblem`), chains and trees (their estimators define
problems over flat ragged data).

* :func:`lbfgs` for smooth losses (CRF, SparseMAP, projections, squared).
* :func:`sgd`: stochastic subgradient descent with iterate averaging on the
  same regularised objective, for the non-smooth max-margin losses; with
  ``perceptron=True`` the averaged perceptron (Collins 2002).
* :func:`cutting_plane`: the bundle / 1-slack cutting-plane method, which
  trains any convex loss (in particular the max-margin ones) to a certified
  duality gap on its true objective.
"""

import numbers
import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from .kernels.dual import (add_oracle_vertices, add_parts, compact_pool, gram_blocks,
                           outer_entries, part_lists, working_set_steps,
                           working_set_values)
from .kernels.maps import explicit_vertices_map
from .kernels.sparsemap import sparsemap_active_set


def _take(y, idx):
    return y[idx]


def n_workers(n_jobs, n_items):
    """Number of threads worth using for ``n_items`` independent items."""
    if n_jobs in (None, 1):
        return 1
    return max(1, min(effective_n_jobs(n_jobs), n_items // 2))


_BLAS = []


def blas_threads(n_jobs):
    """Context manager limiting BLAS to the threads ``n_jobs`` allows (one for
    ``None``), for the matrix products of a fit or a prediction.

    ``n_jobs`` bounds every thread an estimator uses.  On an idle machine the
    products of these models (tall, thin ``X @ W.T`` and ``X.T @ G``) are as
    fast on one BLAS thread as on several; on a loaded one (other processes
    or parallel folds on the same cores) OpenBLAS threads spin and wait, and
    a multilabel fit on ``yeast`` ran 12x slower with two BLAS threads than
    with one (``benchmarks/bench_blas_threads.py``).
    """
    if not _BLAS:
        from threadpoolctl import ThreadpoolController  # a scikit-learn dependency
        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=effective_n_jobs(1 if n_jobs is None else n_jobs),
                          user_api="blas")


_POOLS = {}
_POOLS_LOCK = threading.Lock()
os.register_at_fork(after_in_child=_POOLS.clear)  # a forked child has no pool threads


def thread_map(fn, items, n_threads):
    """``[fn(x) for x in items]`` on ``n_threads`` threads.

    The oracles are Numba kernels that release the GIL (or vectorised
    NumPy), so threads parallelise them.  The threads belong to a persistent
    pool per thread count: joblib's threading backend costs about 10 ms per
    call, too much for solvers that make hundreds of full passes.  A call
    from inside a pool thread runs serially (no nested waits on the pool).
    """
    items = list(items)
    if n_threads <= 1 or len(items) <= 1 or \
            threading.current_thread().name.startswith("structlearn-"):
        return [fn(x) for x in items]
    with _POOLS_LOCK:
        pool = _POOLS.get(n_threads)
        if pool is None:
            pool = _POOLS[n_threads] = ThreadPoolExecutor(
                n_threads, thread_name_prefix=f"structlearn-{n_threads}")
    return list(pool.map(fn, items))


def split_concat(fn, idx, n_threads):
    """``fn(idx)`` computed on ``idx`` split into contiguous parts over
    ``n_threads`` threads (:func:`thread_map`), its tuple of arrays
    concatenated part after part -- the same numbers for any thread count
    when ``fn`` is per example."""
    k = n_workers(n_threads, len(idx))
    res = thread_map(fn, np.array_split(idx, k), k) if k > 1 else [fn(idx)]
    return tuple(np.concatenate([r[i] for r in res]) for i in range(len(res[0])))


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
    """

    def __init__(self, X, y, structure, loss, n_weight_rows, fit_intercept=True,
                 tie=None, n_jobs=None):
        self.X, self.y, self.structure, self.loss = X, y, structure, loss
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
        """Loss values of samples ``idx`` (all if None) and the gradient of
        their sum with respect to ``z``."""
        W, b = self.unpack(z)
        if idx is None:
            X, y, n_jobs = self.X, self.y, self.n_jobs
        else:
            X, y, n_jobs = self.X[idx], self.y[idx], None
        vals, G = loss_value_and_grad(self.loss, _scores(X, W, b, self.tie), y,
                                      self.structure, n_jobs)
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
        """Losses of the samples ``idx`` at ``z``, with their scores and
        score gradients as flat arrays of blocks (the maximising affine
        piece of each max-margin loss)."""
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
    """Regularised empirical risk ``mean loss + alpha/2 ||z_P||^2``."""
    vals, _ = problem.value_and_grad(z)
    zp = z[problem.penalized]
    return float(vals.mean() + 0.5 * alpha * zp @ zp)


def _two_loop(g, S, Y, rho, order, gamma):
    """``-H g`` for the L-BFGS inverse-Hessian approximation (Nocedal &
    Wright, Algorithm 7.4); ``order``: rows of ``S, Y`` oldest first."""
    return _two_loop_kernel(g, S, Y, rho, np.asarray(order, dtype=np.int64), gamma)


@njit(cache=True, nogil=True)
def _two_loop_kernel(g, S, Y, rho, order, gamma):
    """:func:`_two_loop` in one pass over ``q`` per correction pair: the
    update with pair ``j`` is fused with the dot product of the next pair
    (no temporaries, the single-precision pairs read once per loop)."""
    n = len(g)
    m = len(order)
    q = np.empty(n)
    a = np.zeros(m)
    # first loop (newest pair first): a_j = rho_j <s_j, q>; q -= a_j y_j
    if m == 0:
        for i in range(n):
            q[i] = -gamma * g[i]
        return q
    r = order[m - 1]
    acc = 0.0
    for i in range(n):
        q[i] = -g[i]
        acc += S[r, i] * q[i]
    a[m - 1] = rho[r] * acc
    for j in range(m - 1, -1, -1):
        r = order[j]
        aj = a[j]
        if j > 0:
            rn = order[j - 1]
            acc = 0.0
            for i in range(n):
                qi = q[i] - aj * Y[r, i]
                q[i] = qi
                acc += S[rn, i] * qi
            a[j - 1] = rho[rn] * acc
        else:
            # last update of the first loop, fused with the scaling by gamma
            # and the first dot product of the second loop
            r0 = order[0]
            acc = 0.0
            for i in range(n):
                qi = gamma * (q[i] - aj * Y[r, i])
                q[i] = qi
                acc += Y[r0, i] * qi
    # second loop (oldest pair first): b = rho_j <y_j, q>; q += (a_j - b) s_j
    b = rho[order[0]] * acc
    for j in range(m):
        r = order[j]
        c = a[j] - b
        if j + 1 < m:
            rn = order[j + 1]
            acc = 0.0
            for i in range(n):
                qi = q[i] + c * S[r, i]
                q[i] = qi
                acc += Y[rn, i] * qi
            b = rho[rn] * acc
        else:
            for i in range(n):
                q[i] += c * S[r, i]
    return q


@njit(cache=True, nogil=True)
def _store_pair(s, y_new, y_old, S_row, Y_row):
    """Store the correction pair ``(s, y_new - y_old)`` rounded to single
    precision in ``S_row, Y_row``; returns ``(s^T y, y^T y)`` of the stored
    (rounded) pair, one pass, no temporaries."""
    sy = 0.0
    yy = 0.0
    for i in range(len(s)):
        si = np.float32(s[i])
        yi = np.float32(y_new[i] - y_old[i])
        S_row[i] = si
        Y_row[i] = yi
        yd = np.float64(yi)
        sy += yd * np.float64(si)
        yy += yd * yd
    return sy, yy


@njit(cache=True, nogil=True)
def _penalized_grad(g, z, pen, scale, alpha):
    """``(scale * g + alpha * z_P, ||z_P||^2)`` in one pass (a new array)."""
    out = np.empty(len(g))
    sq = 0.0
    for i in range(len(g)):
        gi = scale * g[i]
        if pen[i]:
            zi = z[i]
            gi += alpha * zi
            sq += zi * zi
        out[i] = gi
    return out, sq


def _cubic_min(a, fa, da, b, fb, db):
    """Minimiser of the cubic interpolating ``f, f'`` at ``a`` and ``b``
    (None when it does not exist)."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    disc = d1 * d1 - da * db
    if not disc >= 0.0:
        return None
    d2 = np.copysign(np.sqrt(disc), b - a)
    den = db - da + 2.0 * d2
    if den == 0.0:
        return None
    t = b - (b - a) * (db + d2 - d1) / den
    return t if np.isfinite(t) else None


def _wolfe_search(fun, z, f0, g0, d, step, c1=1e-4, c2=0.9, max_evals=20):
    """Step along ``d`` meeting the strong Wolfe conditions (Nocedal &
    Wright, Algorithms 3.5 and 3.6, cubic interpolation safeguarded to the
    middle 80% of the bracket).  A non-finite objective counts as too large.

    Returns ``(step, f, g, n_evals)``; ``step`` is 0 when no point with
    sufficient decrease was found in ``max_evals`` evaluations.
    """
    dphi0 = float(g0 @ d)

    def phi(a):
        f, g = fun(z + a * d)
        f = float(f)
        if not np.isfinite(f):
            f = np.inf
        return f, g, float(g @ d) if np.isfinite(f) else np.nan

    best = (0.0, f0, g0)  # best point with sufficient decrease
    lo, f_lo, d_lo = 0.0, f0, dphi0
    hi = f_hi = d_hi = None
    a = step
    for k in range(1, max_evals + 1):
        f, g, dphi = phi(a)
        armijo = f <= f0 + c1 * a * dphi0
        if armijo and f < best[1]:
            best = (a, f, g)
        if not armijo or f >= f_lo:
            hi, f_hi, d_hi = a, f, dphi
        else:
            if abs(dphi) <= -c2 * dphi0:
                return a, f, g, k
            if dphi * (a - lo) >= 0:
                hi, f_hi, d_hi = lo, f_lo, d_lo
            lo, f_lo, d_lo = a, f, dphi
        if hi is None:  # still expanding
            a *= 4.0
            continue
        width = hi - lo
        t = None
        if np.isfinite(f_hi) and np.isfinite(d_hi):
            t = _cubic_min(lo, f_lo, d_lo, hi, f_hi, d_hi)
        a_min, a_max = sorted((lo + 0.1 * width, hi - 0.1 * width))
        a = lo + 0.5 * width if t is None or not a_min <= t <= a_max else t
        if abs(width) <= 1e-16 * max(1.0, abs(lo)):
            break
    a, f, g = best
    return a, f, g, max_evals


def lbfgs(problem, alpha, z0, max_iter=500, tol=1e-6, verbose=0, history=10, period=None,
          return_gap=False):
    """L-BFGS on the regularised objective (smooth losses).

    Limited-memory BFGS (Nocedal & Wright, Algorithm 7.5) with a strong
    Wolfe line search; the first step has unit length in ``z``, later ones
    try the unit step first.  With ``period=None``, ``tol`` is the gradient
    tolerance (``max_i |grad_i| <= tol``) and the relative objective
    tolerance is ``tol * 1e-3``.  With an integer ``period``, the run stops
    when the objective decreased by less than ``tol`` (relative) over the
    last ``period`` iterations -- CRFsuite's ``delta``/``period`` rule,
    suited to large sparse models whose gradient norm decreases slowly.
    ``history`` is the number of correction pairs kept, in single
    precision (memory ``2 * (history + 1) * n_params`` float32).  A correction
    pair with ``s^T y <= 0`` (numerically) is skipped, so the approximation
    stays positive definite.

    **A duality gap for free.**  Every loss here is a maximum over a convex
    set, ``loss_i(theta) = max_mu <a_i(mu), theta> + h_i(mu)`` with ``h_i``
    concave (the CRF: the entropy; SparseMAP: minus half the squared norm of
    the penalised marginals), and the oracle's gradient is ``a_i(mu_i)`` at
    the maximiser.  Those maximisers are a dual point (see :func:`bcfw`)
    with ``w(mu) = -grad L(z) / alpha``, and its dual value is ``L(z) -
    <grad L(z), z> - ||grad L(z)||^2 / (2 alpha)``; so when every coordinate
    is penalised,

        P(z) - D(mu(z)) = ||grad P(z)||^2 / (2 alpha),

    a certified bound on ``P(z) - min P``.  With ``return_gap`` the relative
    gap ``||grad P||^2 / (2 alpha P)`` at the returned point is returned too
    (None when some coordinates are not penalised: the dual point is then
    not feasible, or when ``alpha`` is 0).  It is printed with ``verbose``.

    Returns
    -------
    z, n_iter, objective_value[, relative_gap]
    """
    n = problem.n_samples
    pen = problem.penalized
    t0 = time.perf_counter()
    calls = [0]
    certify = alpha > 0 and bool(np.all(pen))

    def rel_gap(f, g):
        return float(g @ g) / (2.0 * alpha * max(f, 1e-300)) if certify else None

    def fun(z):
        vals, g = problem.value_and_grad(z)
        g, sq = _penalized_grad(g, z, pen, 1.0 / n, alpha)
        calls[0] += 1
        if verbose > 1:
            print(f"[lbfgs] evaluation {calls[0]:4d}  ({time.perf_counter() - t0:.1f}s)")
        return vals.mean() + 0.5 * alpha * sq, g

    z = np.array(z0, dtype=np.float64)
    f, g = fun(z)
    m = max(1, int(history))
    # correction pairs in single precision: half the memory of the history
    # (2 * (history + 1) * n_params floats, the solver's largest array); their
    # curvatures are computed from the stored (rounded) pairs, so the
    # implicit inverse Hessian is the BFGS matrix of exactly those pairs
    S = np.empty((m + 1, len(z)), dtype=np.float32)
    Y = np.empty((m + 1, len(z)), dtype=np.float32)
    rho = np.empty(m + 1)
    order = []  # rows of S, Y in use, oldest first
    gamma = 1.0
    trace = [f]
    ftol = tol * 1e-3
    message = "maximum number of iterations reached"
    converged = False
    it = 0
    if not np.isfinite(f):
        raise ValueError(f"the objective is not finite at the initial point ({f}).")
    if period is None and np.max(np.abs(g), initial=0.0) <= tol:
        converged, message = True, "gradient below tol"
        max_iter = 0
    for it in range(1, max_iter + 1):
        d = _two_loop(g, S, Y, rho, order, gamma)
        gd = float(g @ d)
        if not gd < 0:  # not a descent direction: restart from the gradient
            order = []
            d = -g
            gd = -float(g @ g)
        step = 1.0
        if not order:  # first step (or restart): unit length in z
            step = min(1.0, 1.0 / max(np.sqrt(-gd), 1e-300))
        a, f_new, g_new, _ = _wolfe_search(fun, z, f, g, d, step)
        if a == 0.0:
            message = "the line search found no decrease"
            converged = True
            it -= 1
            break
        s = a * d
        z += s
        # the new pair goes into a row not in use (there is one more row
        # than pairs kept); it joins the history only if its curvature is
        # positive, and then the oldest pair leaves
        r = min(set(range(m + 1)).difference(order))
        sy, yy = _store_pair(s, g_new, g, S[r], Y[r])
        if sy > 1e-10 * yy and np.isfinite(sy) and np.isfinite(yy):
            if len(order) == m:
                order.pop(0)
            rho[r] = 1.0 / sy
            order.append(r)
            gamma = sy / yy
        f_old, f, g = f, f_new, g_new
        trace.append(f)
        if verbose:
            gap = f"  relative gap {rel_gap(f, g):.3g}" if certify else ""
            print(f"[lbfgs] iteration {it:4d}  objective {f:.6g}{gap}  "
                  f"({time.perf_counter() - t0:.1f}s)")
        if period is not None:
            if len(trace) > period + 1 and \
                    trace[-period - 1] - f <= tol * max(abs(f), 1e-12):
                converged, message = True, "period rule"
                break
        elif np.max(np.abs(g)) <= tol:
            converged, message = True, "gradient below tol"
            break
        elif f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
            converged, message = True, "relative decrease below tol * 1e-3"
            break
    if verbose:
        print(f"[lbfgs] {it} iterations, {calls[0]} evaluations, objective {f:.6g}, "
              f"{time.perf_counter() - t0:.2f}s: {message}")
    if not converged:
        warnings.warn(f"L-BFGS did not converge in max_iter={max_iter} iterations; "
                      f"increase max_iter or tol.", ConvergenceWarning)
    if return_gap:
        return z, int(it), float(f), rel_gap(f, g)
    return z, int(it), float(f)


def _calibrate_eta0(problem, alpha, z0, rng, batch_size, n_sub=1000, passes=4,
                    factor=4.0, max_trials=10, max_lengthen=2):
    """Initial SGD step size by trial runs on a subsample (after Bottou 2012).

    Each trial runs the schedule that :func:`sgd` will run -- steps
    ``eta / (1 + alpha eta t)`` on mini-batches, for ``passes`` passes over
    (at most) ``n_sub`` samples, averaging the iterates of the last pass --
    and scores the averaged model by the regularised objective on those
    samples.  Starting from ``1 / mean ||x||^2``, the step is multiplied by
    ``factor`` while that improves the score, then divided by it while that
    does, and the best-scoring step is returned.

    Two choices here are deliberate (measured in docs/losses.rst, "SGD's step"):

    * the score is the *averaged* model's after several passes, as in the
      run, because averaging turns large steps' noise into progress:
      scoring one pass of constant steps by its last iterate picked steps
      ~4x below the best for 10 epochs of the margin-scaled hinge, and two
      passes still picked 4x too small a step for the slack-scaled hinge
      and PosLearn (UD EWT, CoNLL-2000), whose early iterates move more;
      four passes cost about as much as two or three epochs of a 10,000
      example set;
    * when no trial improves on the starting point, the trials are made
      longer (``passes`` doubled, at most ``max_lengthen`` times), and the
      best step is kept even if none does.  A loss that sums one hinge per
      position (PosLearn) starts where every structure ties, so its
      subgradient is no descent direction and a short trial from there may
      increase the objective for *every* step; the former rule ("halve
      until the objective decreases") then halved to its floor (1.6e-6 on
      UD EWT, where ~1e-2 is right) and training stalled at the start.
    """
    n = problem.n_samples
    sub = np.sort(rng.choice(n, min(n, n_sub), replace=False))
    pen = problem.penalized

    def obj(z):
        vals, _ = problem.value_and_grad(z, sub)
        zp = z[pen]
        return float(vals.mean() + 0.5 * alpha * zp @ zp)

    batches = _batches(sub, batch_size)

    def trial(eta):
        it = _ScaledIterate(z0, pen)
        t = 0
        for p in range(passes):
            if p == passes - 1:
                it.start_averaging()
            t, _ = _sgd_pass(it, problem, batches, eta, alpha, t)
        f = obj(it.average())
        return f if np.isfinite(f) else np.inf

    def search(eta):
        scores = {eta: trial(eta)}
        for direction in (factor, 1.0 / factor):
            e, f_prev = eta, scores[eta]
            while len(scores) < max_trials:
                e *= direction
                scores[e] = trial(e)
                if not scores[e] < f_prev:
                    break
                f_prev = scores[e]
            if min(scores, key=scores.get) != eta:   # improved going up: done
                break
        best = min(scores, key=scores.get)
        return best, scores[best]

    f0 = obj(np.asarray(z0, dtype=np.float64))
    eta_init = 1.0 / (float(np.mean(problem.sq_norms())) + 1e-12)
    for _ in range(max_lengthen + 1):
        best, f_best = search(eta_init)
        if f_best < f0:
            break
        # no step made progress: the trial is too short to leave the start
        passes *= 2
    if not np.isfinite(f_best):
        raise FloatingPointError("SGD: every trial step size gave a non-finite objective; "
                                 "check the features' scale.")
    return best


@njit(cache=True, nogil=True)
def _sparse_step(v, a, pen, cols, vals, coef_pen, coef_free, s_prev, n_prev):
    """``v[c] -= coef * g`` over the entries ``(cols, vals)`` of a gradient
    (duplicates allowed) and ``a[c] -= prefix * coef * g`` for the lazy
    average (``_ScaledIterate``); ``coef`` and ``prefix`` differ between
    penalised and free coordinates.  Returns whether any entry was non-zero."""
    any_nz = False
    for e in range(len(cols)):
        gv = vals[e]
        if gv != 0.0:
            any_nz = True
            c = cols[e]
            if pen[c]:
                d = -coef_pen * gv
                a[c] += s_prev * d
            else:
                d = -coef_free * gv
                a[c] += n_prev * d
            v[c] += d
    return any_nz


class _ScaledIterate:
    """SGD iterate ``z`` and its running average, with sparse updates.

    The penalised coordinates are stored as ``z_P = s v_P`` so that the L2
    shrinkage ``z_P *= 1 - eta alpha`` of a step is one scalar product
    (``s``), and a gradient step touches only the gradient's entries
    (Bottou 2010; Shalev-Shwartz et al. 2011).  The average is lazy too
    (Xu 2011, in the scaled form): with ``S`` the sum of the scales ``s`` over
    the averaged steps and ``N`` their number, every step adds
    ``prefix * delta`` to ``a`` (``prefix`` = ``S`` resp. ``N`` before the
    step), so that the sum of the averaged iterates is ``S v_P - a_P`` on
    penalised and ``N v_F - a_F`` on free coordinates.  When ``s`` falls
    below 1e-3 the partial sum is moved into ``acc`` and ``s`` folded into
    ``v`` (a dense pass, rare: ``s`` decays like ``1 / (1 + alpha eta_0 t)``),
    which keeps ``v``, ``S`` and ``a`` in a range without cancellation.
    """

    #: fold the scale into the weights below this value
    FOLD = 1e-3

    def __init__(self, z0, penalized):
        self.v = np.array(z0, dtype=np.float64)
        self.pen = np.ascontiguousarray(penalized, dtype=np.bool_)
        self.all_pen = bool(self.pen.all())
        self.s = 1.0
        self.averaging = False
        self.a = self.acc = np.zeros(0)
        self.S = self.N = 0.0
        self.n_avg = 0

    def start_averaging(self):
        """Average the iterates after every following step."""
        self.a = np.zeros_like(self.v)
        self.acc = np.zeros_like(self.v)
        self.averaging = True
        self.S = self.N = 0.0
        self.n_avg = 0

    def _scaled(self, x, s_pen, s_free):
        """``x`` times ``s_pen`` on penalised, ``s_free`` on free coordinates."""
        if self.all_pen:
            return x * s_pen
        out = x * s_free
        out[self.pen] = x[self.pen] * s_pen
        return out

    def current(self):
        """The iterate ``z`` (a new array)."""
        return self.v.copy() if self.s == 1.0 else self._scaled(self.v, self.s, 1.0)

    def _partial_sum(self):
        """Sum of the averaged iterates since the last fold."""
        return self._scaled(self.v, self.S, self.N) - self.a

    def average(self):
        """The average of the iterates since :meth:`start_averaging` (the
        current iterate if no step was averaged)."""
        if not self.averaging or self.n_avg == 0:
            return self.current()
        return (self.acc + self._partial_sum()) / self.n_avg

    def _fold(self):
        if self.averaging:
            self.acc += self._partial_sum()
            self.a[:] = 0.0
            self.S = self.N = 0.0
        self.v = self.current()
        self.s = 1.0

    def value_and_grad(self, problem, idx):
        """Losses of the samples ``idx`` and their summed gradient at ``z`` as
        entries ``(cols, vals)``.  Problems with a
        ``sparse_value_and_grad(v, idx, scale)`` method (the weights being
        ``v`` with the penalised coordinates times ``scale``) provide them
        directly; otherwise they are read off the dense gradient."""
        sparse = getattr(problem, "sparse_value_and_grad", None)
        if sparse is not None:
            return sparse(self.v, idx, self.s)
        z = self.v if self.s == 1.0 else self.current()
        vals, g = problem.value_and_grad(z, idx)
        cols = np.flatnonzero(g)
        return vals, cols, g[cols]

    def step(self, cols, vals, eta, alpha, scale):
        """``z_P *= 1 - eta alpha`` then ``z -= scale * g``; returns whether
        the gradient had a non-zero entry."""
        if alpha:
            shrink = 1.0 - eta * alpha
            if shrink <= 0.0:       # the penalised part is zeroed
                self._fold()
                self.v[self.pen] = 0.0
            else:
                self.s *= shrink
                if self.s < self.FOLD:
                    self._fold()
        # (not averaging: the prefixes are 0, and ``v`` stands in for ``a``)
        moved = _sparse_step(self.v, self.a if self.averaging else self.v, self.pen,
                             np.asarray(cols, dtype=np.int64),
                             np.asarray(vals, dtype=np.float64), scale / self.s, scale,
                             self.S, self.N)
        if self.averaging:
            self.S += self.s
            self.N += 1.0
            self.n_avg += 1
        return moved


def _batches(order, batch_size):
    """Consecutive mini-batches of ``order``, each sorted."""
    return [np.sort(order[s:s + batch_size]) for s in range(0, len(order), batch_size)]


def _sgd_pass(it, problem, batches, eta0, alpha, t, perceptron=False):
    """One pass of :func:`sgd` over ``batches`` from step ``t`` of the
    schedule ``eta_t = eta0 / (1 + alpha eta0 t)`` (each step: shrink the
    penalised weights, then move by ``eta_t`` times the batch's mean
    gradient); with ``perceptron=True``, unit steps on the summed update and
    no shrinkage.  Returns the next step number and how many steps moved
    the weights."""
    moved = 0
    for idx in batches:
        _, cols, vals = it.value_and_grad(problem, idx)
        if perceptron:
            # a mistake is a wrong prediction, even at zero loss (ties); the
            # update touches only the features of wrong tokens / arcs
            moved += it.step(cols, vals, 1.0, 0.0, 1.0)
        else:
            eta = eta0 / (1.0 + alpha * eta0 * t)
            moved += it.step(cols, vals, eta, alpha, eta / len(idx))
        t += 1
    return t, moved


def sgd(problem, alpha, z0, max_iter=50, tol=1e-4, batch_size=16, random_state=None,
        verbose=0, perceptron=False, patience=3):
    """Stochastic subgradient descent with iterate averaging.

    Minimises the same regularised objective as :func:`lbfgs` with steps
    ``eta_t = eta_0 / (1 + alpha eta_0 t)``, ``eta_0`` calibrated by trial
    passes on a subsample (``_calibrate_eta0``), and returns the Polyak
    average of the iterates from the second epoch on.  With
    ``perceptron=True`` it is the averaged perceptron: unit steps, no
    penalty, averaging over all updates (mini-batches of ``batch_size``
    examples: the update is the sum of their perceptron updates).  Stops when
    the objective of the averaged model has not improved on its best value by
    more than ``tol`` (relative) for ``patience`` consecutive epochs
    (perceptron: when an epoch makes no update).

    A step costs the size of its gradient, not of ``z``: the iterate and its
    average are kept in the scaled, lazy form of ``_ScaledIterate``,
    and problems with a ``sparse_value_and_grad`` method hand over the
    gradient as entries.

    Returns
    -------
    z, n_epochs, objective_value
    """
    rng = np.random.RandomState(random_state)
    n = problem.n_samples
    z0 = np.array(z0, dtype=np.float64)
    reg = 0.0 if perceptron else alpha
    eta0 = 1.0 if perceptron else _calibrate_eta0(problem, reg, z0, rng, batch_size)
    if verbose and not perceptron:
        print(f"[sgd] initial step size {eta0:.3g}")
    it = _ScaledIterate(z0, problem.penalized)
    if perceptron or max_iter == 1:
        it.start_averaging()
    best = np.inf
    stalled = 0
    f = np.nan
    t0 = time.perf_counter()
    t = 0
    epoch = 0
    for epoch in range(1, max_iter + 1):
        if epoch == 2 and not perceptron:
            it.start_averaging()
        t, n_updates = _sgd_pass(it, problem, _batches(rng.permutation(n), batch_size),
                                 eta0, reg, t, perceptron)
        if perceptron:
            if verbose:
                print(f"[perceptron] epoch {epoch}: {n_updates} updating batches "
                      f"({time.perf_counter() - t0:.1f}s)")
            if n_updates == 0:
                break
            continue
        if epoch == 1 and max_iter > 1:
            continue
        f = objective(problem, it.average(), reg)
        if verbose:
            print(f"[sgd] epoch {epoch}: objective {f:.6g} "
                  f"({time.perf_counter() - t0:.1f}s)")
        # patience rule (as scikit-learn's SGD): stop after `patience` epochs
        # without an improvement of more than tol (relative) on the best
        if f < best - tol * max(1.0, abs(best)):
            stalled = 0
        else:
            stalled += 1
            if stalled >= patience:
                break
        best = min(best, f)
    else:
        if not perceptron and max_iter > 1:
            warnings.warn(f"SGD did not converge: it stopped on its epoch budget "
                          f"(max_iter={max_iter}) while the objective still improved by "
                          f"more than tol={tol} (objective {f:.6g}), so the model is not "
                          f"at the optimum of its loss; increase max_iter or tol, or use "
                          f"solver='lbfgs' (smooth losses) or solver='bcfw' (max-margin "
                          f"losses, with a certified duality gap).", ConvergenceWarning)
    z_avg = it.average()
    if perceptron:
        f = objective(problem, z_avg, 0.0)
    return z_avg, epoch, float(f)


def cutting_plane(problem, alpha, z0, max_iter=300, tol=1e-4, verbose=0, return_gap=False):
    """Bundle (1-slack cutting-plane) method on the regularised objective.

    ``J(z) = alpha/2 ||z||^2 + R(z)`` with ``R`` the mean loss.  Each
    iteration evaluates ``R`` and a subgradient ``a_t`` on the whole training
    set (one batched oracle pass) and adds the plane
    ``R(z) >= <a_t, z> + c_t``; the next iterate minimises
    ``alpha/2 ||z||^2 + max_t (<a_t, z> + c_t)`` (Teo et al. 2010; the
    1-slack formulation of Joachims et al. 2009 for structural SVMs).  Its
    dual, ``max_{q in simplex} <c, q> - ||A^T q||^2 / (2 alpha)``, is a
    SparseMAP problem over the explicit set of planes, solved by the library's
    active-set solver.  Stops when the gap between the best objective seen
    and the model's lower bound is below ``tol`` (relative).

    Every parameter is penalised here, the intercept included (as in
    liblinear): an unpenalised block would add an equality constraint to the
    dual.

    Returns
    -------
    z, n_iter, objective_value (and, with ``return_gap``, the relative
    duality gap at the stop)
    """
    if alpha <= 0:
        raise ValueError("solver='cutting-plane' needs alpha > 0.")
    n = problem.n_samples
    t0 = time.perf_counter()
    z = np.array(z0, dtype=np.float64)
    planes, offsets = [], []
    basis = []   # orthonormal basis of span(planes)
    coords = []  # coordinates of each plane in that basis (ragged rows)
    best_J, best_z = np.inf, z.copy()
    lower = -np.inf
    it = 0
    for it in range(1, max_iter + 1):
        vals, g = problem.value_and_grad(z)
        R = float(vals.mean())
        a = g / n
        J = 0.5 * alpha * float(z @ z) + R
        if J < best_J:
            best_J, best_z = J, z.copy()
        planes.append(a)
        offsets.append(R - float(a @ z))
        # Gram-Schmidt (twice, for stability) gives the plane's coordinates,
        # so that ||A^T q||^2 = ||C^T q||^2 with C small and dense.
        r = a.copy()
        co = []
        if basis:
            Bm = np.asarray(basis)
            co = Bm @ r
            r -= Bm.T @ co
            co2 = Bm @ r
            r -= Bm.T @ co2
            co = list(co + co2)
        norm = float(np.linalg.norm(r))
        if norm > 1e-10 * max(1.0, float(np.linalg.norm(a))):
            basis.append(r / norm)
            co.append(norm)
        coords.append(co)
        C = np.zeros((len(planes), len(basis)))
        for j, cj in enumerate(coords):
            C[j, :len(cj)] = cj
        c = np.asarray(offsets)
        # Dual master problem as SparseMAP over the explicit vertices
        # [C_j / sqrt(alpha); c_j].
        V = np.hstack([C / np.sqrt(alpha), c[:, None]])
        params = np.concatenate([[len(V), V.shape[1]], V.ravel()])
        eta = np.zeros(V.shape[1])
        eta[-1] = 1.0
        _, support, dual_w, _ = sparsemap_active_set(
            eta, V.shape[1] - 1, explicit_vertices_map, params, 10000, 1e-12)
        # plane weights from the support rows
        qfull = np.zeros(len(V))
        for s_row, w in zip(support, dual_w):
            qfull[int(np.argmin(np.abs(V - s_row).sum(axis=1)))] += w
        A = np.asarray(planes)
        z = -(A.T @ qfull) / alpha
        lower = float(c @ qfull) - float(z @ z) * alpha / 2
        gap = best_J - lower
        if verbose:
            print(f"[cutting-plane] iter {it}: objective {best_J:.6g}, lower bound "
                  f"{lower:.6g}, gap {gap:.3g} ({time.perf_counter() - t0:.1f}s)")
        if gap <= tol * max(abs(best_J), 1e-12):
            break
    else:
        warnings.warn(f"cutting-plane did not reach the duality gap tol={tol} in "
                      f"max_iter={max_iter} iterations (gap {best_J - lower:.3g}); "
                      f"increase max_iter, alpha or tol.", ConvergenceWarning)
    if return_gap:
        rel = max(best_J - lower, 0.0) / max(abs(best_J), 1e-300)
        return best_z.copy(), it, float(best_J), float(rel)
    return best_z.copy(), it, float(best_J)


class DualState:
    """The dual iterate of :func:`bcfw`, kept for ``warm_start``.

    The working sets in flat arrays: example ``i`` owns the vertices
    ``xptr[i]:xptr[i+1]`` (the first the ground truth's zero piece), vertex
    ``v`` has the offset ``c[v]``, the weight ``beta[v]`` and the slope
    ``a_v`` in part space, the entries ``pptr[v]:pptr[v+1]`` of ``(pids,
    pvals)`` (indices into the example's score block).  They depend on the
    targets and the loss only (``key``), not on ``alpha`` or the features,
    so a refit with another ``alpha`` or other features starts from the same
    dual point.
    """

    def __init__(self, xptr, c, beta, pptr, pids, pvals, key):
        self.xptr, self.c, self.beta = xptr, c, beta
        self.pptr, self.pids, self.pvals = pptr, pids, pvals
        self.key = key

    @property
    def n_samples(self):
        return len(self.xptr) - 1

    @property
    def sets(self):
        """Per example, ``(c, ids, vals, beta)``: its vertices' offsets,
        part-space slopes (lists of index and value arrays) and weights."""
        out = []
        for i in range(self.n_samples):
            vs = range(self.xptr[i], self.xptr[i + 1])
            out.append((self.c[vs.start:vs.stop],
                        [self.pids[self.pptr[v]:self.pptr[v + 1]] for v in vs],
                        [self.pvals[self.pptr[v]:self.pptr[v + 1]] for v in vs],
                        self.beta[vs.start:vs.stop]))
        return out


def _grow(a, need):
    """``a`` with room for at least ``need`` entries (doubling)."""
    if len(a) >= need:
        return a
    b = np.empty((max(need, 2 * len(a)),) + a.shape[1:], dtype=a.dtype)
    b[:len(a)] = a
    return b


class _Pool:
    """The working sets of :func:`bcfw` as flat arrays (the layout of
    :mod:`structlearn.kernels.dual`): per vertex its offset, weight and
    part-space slope; per example the list of parts its vertices touch,
    with their columns of ``A_i`` (``problem.block_entries`` of a unit
    score vector, computed once, when a vertex first touches the part),
    and the Gram matrix of its vertices' slopes."""

    #: unused entries tolerated beyond half of an array before the
    #: compaction rewrites the entries and part lists
    slack = 4096

    def __init__(self, problem, state=None):
        n = problem.n_samples
        self.problem = problem
        self.sizes = np.asarray(problem.part_sizes(), dtype=np.int64)
        # a quadratic dual (``loss.dual_quadratic``): per example, the
        # number of leading parts of its score block the loss penalises
        self.nu = np.zeros(0, dtype=np.int64)
        if problem.loss.dual_quadratic == "unary":
            self.nu = np.asarray(problem.unary_sizes(), dtype=np.int64)
        elif problem.loss.dual_quadratic == "all":
            self.nu = self.sizes.copy()
        if np.any(self.nu > self.sizes[:len(self.nu)]) or np.any(self.nu < 0):
            raise ValueError("unary_sizes() must lie between 0 and part_sizes().")
        self.acc = np.zeros(problem.n_params)  # scratch of the kernels
        self.pwhere = np.full(int(self.sizes.max(initial=1)), -1, dtype=np.int64)
        if state is None:  # every example: its zero piece, with all the weight
            xptr = np.arange(n + 1, dtype=np.int64)
            self.c, self.beta = np.zeros(n), np.ones(n)
            self.pspan = np.zeros((n, 2), dtype=np.int64)
            self.pids, self.pvals = np.zeros(0, dtype=np.int64), np.zeros(0)
        else:
            xptr = state.xptr
            self.c, self.beta = state.c.copy(), state.beta.copy()
            self.pspan = np.stack([state.pptr[:-1], state.pptr[1:]], axis=1)
            self.pids, self.pvals = state.pids.copy(), state.pvals.copy()
        self.qspan, self.qpart, self.ploc = part_lists(xptr, self.pspan, self.pids,
                                                       self.pwhere)
        owner = np.repeat(np.arange(n), self.qspan[:, 1] - self.qspan[:, 0])
        self.qcols, self.qvals, qptr = self._columns(owner, self.qpart)
        self.qe = np.stack([qptr[:-1], qptr[1:]], axis=1).astype(np.int64)
        self.xlo, self.xhi = xptr[:-1].copy(), xptr[1:].copy()
        self.extra = np.full(n, -1, dtype=np.int64)
        self.top = np.array([len(self.c), len(self.pids), len(self.qpart), len(self.qcols)],
                            dtype=np.int64)
        self.kpool, self.kptr, self.kdim, self.qq = gram_blocks(
            xptr, self.qspan, self.qe, self.qcols, self.qvals, self.pspan, self.pids,
            self.ploc, self.pvals, self.acc, self.nu)
        self.kdone = np.ones(n, dtype=np.bool_)

    def _columns(self, rep, parts, batch=1024):
        """The columns of ``A_i`` of the parts ``parts`` of examples ``rep``:
        ``(cols, vals, ptr)`` -- the problem's ``part_columns`` where it has
        one, else ``block_entries`` of unit score vectors."""
        if hasattr(self.problem, "part_columns"):
            cols, vals, ptr = self.problem.part_columns(rep, parts)
            return (np.asarray(cols, dtype=np.int64), np.asarray(vals, dtype=np.float64),
                    np.asarray(ptr, dtype=np.int64))
        out = [(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(1, dtype=np.int64))]
        for s in range(0, len(rep), batch):
            r = rep[s:s + batch]
            boff = np.concatenate([[0], np.cumsum(self.sizes[r])]).astype(np.int64)
            D = np.zeros(boff[-1])
            D[boff[:-1] + parts[s:s + batch]] = 1.0
            out.append(self.problem.block_entries(r, D))
        lens = np.concatenate([np.diff(o[2]) for o in out]).astype(np.int64)
        return (np.concatenate([o[0] for o in out]).astype(np.int64),
                np.concatenate([o[1] for o in out]).astype(np.float64),
                np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))

    def arrays(self):
        """The arrays :func:`working_set_steps` reads."""
        return (self.xlo, self.xhi, self.extra, self.kdone, self.kpool, self.kptr,
                self.kdim, self.qspan, self.qe, self.qcols, self.qvals, self.pspan,
                self.pids, self.ploc, self.pvals, self.c, self.beta, self.acc, self.qq,
                self.nu)

    def add(self, idx, loss_vals, theta, G):
        """Each example's oracle vertex joins its working set."""
        idx = np.asarray(idx, dtype=np.int64)
        nv, npe = int(self.top[0]), int(self.top[1])
        need_v = nv + len(idx)
        self.c, self.beta = _grow(self.c, need_v), _grow(self.beta, need_v)
        self.pspan = _grow(self.pspan, need_v)
        need_p = npe + int(np.count_nonzero(G))
        self.pids, self.pvals = _grow(self.pids, need_p), _grow(self.pvals, need_p)
        self.ploc = _grow(self.ploc, need_p)
        boff = np.concatenate([[0], np.cumsum(self.sizes[idx])]).astype(np.int64)
        rep, parts = add_oracle_vertices(
            idx, np.asarray(loss_vals, dtype=np.float64), theta, G, boff, self.xlo, self.xhi,
            self.extra, self.c, self.beta, self.pspan, self.pids, self.pvals, self.qspan,
            self.qpart, self.pwhere, self.top)
        ncols, nvals, nptr = self._columns(rep, parts)
        need_q = int(self.top[2]) + len(parts) + int(
            (self.qspan[idx, 1] - self.qspan[idx, 0]).sum())
        self.qpart, self.qe = _grow(self.qpart, need_q), _grow(self.qe, need_q)
        need_qe = int(self.top[3]) + len(ncols)
        self.qcols, self.qvals = _grow(self.qcols, need_qe), _grow(self.qvals, need_qe)
        add_parts(idx, rep, parts, ncols, nvals, nptr, self.extra, self.pspan, self.pids,
                  self.ploc, self.qspan, self.qpart, self.qe, self.qcols, self.qvals,
                  self.pwhere, self.top)
        self.kdone[idx] = False

    def compact(self):
        """End of an epoch: the vertices of weight zero leave (the zero
        pieces stay); returns the examples' vertex offsets."""
        n = len(self.xlo)
        (xptr, self.c, self.beta, self.pspan, self.pids, self.pvals, self.ploc, self.qspan,
         self.qpart, self.qe, self.qcols, self.qvals, self.kpool, self.kptr,
         self.kdim, self.qq) = compact_pool(
            self.xlo, self.xhi, self.extra, self.c, self.beta, self.pspan, self.pids,
            self.pvals, self.ploc, self.qspan, self.qpart, self.qe, self.qcols, self.qvals,
            self.kpool, self.kptr, self.kdim, self.qq, self.top, n, self.pwhere, self.slack)
        self.xlo, self.xhi = xptr[:-1].copy(), xptr[1:].copy()
        self.extra[:] = -1
        self.kdone[:] = True
        return xptr

    def _entries(self, span, nv):
        """Positions of the used entries of the first ``nv`` rows of a span
        array, and each one's row."""
        lens = span[:nv, 1] - span[:nv, 0]
        pos = np.repeat(span[:nv, 0] - np.cumsum(lens) + lens, lens) + np.arange(lens.sum())
        return pos, np.repeat(np.arange(nv), lens)

    def primal_point(self, lam, n_params):
        """``z = -1/(lam n) sum_i A_i^T m_i``, ``m_i = sum_v beta_v a_v``
        (compacted pool)."""
        n = len(self.xlo)
        nv = int(self.top[0])
        pos, vert = self._entries(self.pspan, nv)
        owner = np.repeat(np.arange(n), self.xhi - self.xlo)[vert]
        slot = self.qspan[owner, 0] + self.ploc[pos]
        coef = np.bincount(slot, weights=self.beta[vert] * self.pvals[pos],
                           minlength=int(self.top[2]))
        epos, eslot = self._entries(self.qe, int(self.top[2]))
        z = np.zeros(n_params)
        np.add.at(z, self.qcols[epos], coef[eslot] * self.qvals[epos] * (-1.0 / (lam * n)))
        return z

    def offset(self):
        """``l = 1/n sum_i (sum_v beta_v (c_v + Q_vv / 2) - beta_i^T Q beta_i / 2)``
        (compacted pool; ``Q = 0`` without a quadratic dual)."""
        n = len(self.xlo)
        nv = int(self.top[0])
        total = float(self.beta[:nv] @ self.c[:nv])
        if len(self.nu):
            for i in range(n):
                b = self.beta[self.xlo[i]:self.xhi[i]]
                m, D = len(b), int(self.kdim[i])
                Q = self.qq[self.kptr[i]:self.kptr[i] + D * D].reshape(D, D)[:m, :m]
                total += 0.5 * float(b @ np.diag(Q) - b @ Q @ b)
        return total / n

    def values(self, x):
        """Per example, the largest value at ``x`` of its working set's
        pieces (compacted pool)."""
        xptr = np.concatenate([self.xlo[:1], self.xhi])
        return working_set_values(xptr, self.c, self.pspan, self.ploc, self.pvals,
                                  self.qspan, self.qe, self.qcols, self.qvals, x)

    def state(self, key):
        """The dual iterate: the compacted pool's vertices (not the ones a
        last certificate added, of weight zero), part-space slopes packed."""
        xptr = np.concatenate([self.xlo[:1], self.xhi])
        nv = int(xptr[-1])
        pos, vert = self._entries(self.pspan, nv)
        lens = self.pspan[:nv, 1] - self.pspan[:nv, 0]
        pptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return DualState(xptr, self.c[:nv].copy(), self.beta[:nv].copy(), pptr,
                         self.pids[pos], self.pvals[pos], key)


def bcfw(problem, alpha, max_iter=100, tol=1e-3, batch_size=32, random_state=None,
         verbose=0, state=None, key=None, max_inner=20, cache_passes=5, callback=None,
         check_every=1):
    r"""Block-coordinate Frank-Wolfe on the dual of a max-margin or SparseMAP objective.

    Trains ``min_z P(z) = alpha/2 ||z||^2 + 1/n sum_i loss_i(A_i z)`` for a
    loss that is a maximum of functions affine in the scores (the losses
    with ``piecewise_affine = True``: margin-, slack- and
    approximate-slack-scaled hinge, PosLearn), to a certified relative
    duality gap ``(P - D) / P <= tol``: the block-coordinate Frank-Wolfe
    method of Lacoste-Julien, Jaggi, Schmidt & Pletscher (ICML 2013) with
    their weighted averaging, in its pairwise form with a working set per
    example (Osokin, Alayrac, Lukasewitz, Dokania & Lacoste-Julien, ICML
    2016).

    **The dual, for every such loss at once.**  Write the loss of example
    ``i`` as ``loss_i(theta) = max_{y in Y_i} c_i(y) + <a_i(y), theta>``.
    For the margin-scaled hinge ``c_i(y) = L(y, y_i)`` and ``a_i(y) =
    phi(y) - phi(y_i)``; for slack scaling ``c_i(y) = L(y, y_i)`` and
    ``a_i(y) = L(y, y_i) (phi(y) - phi(y_i))``; approximate slack scaling
    searches the same pieces with a cheaper (inexact) violator; PosLearn is a
    sum over positions ``p`` of maxima over the per-position violators, i.e.
    a maximum over tuples ``(y^p)_p`` of the summed pieces.  ``y = y_i``
    gives the piece 0 in each case.  With ``theta_i = A_i z`` and Lagrange
    multipliers ``beta_i`` in the simplex over ``Y_i``, the dual is

        max_beta D = -lam/2 ||w||^2 + l,
        w = -1/(lam n) sum_i A_i^T m_i,   m_i = sum_y beta_i(y) a_i(y),
        l = 1/n sum_i l_i,                l_i = sum_y beta_i(y) c_i(y),

    and the primal iterate is ``z = w``.  The loss's own ``value_and_grad``
    is its oracle: at ``theta`` it returns the value and the slope of the
    maximising piece, so ``a_s = grad`` and ``c_s = value - <theta, grad>``.

    **The SparseMAP losses** (``loss.dual_quadratic == 'unary'``: SparseMAP
    and m-SparseMAP, Niculae et al. 2018) are maxima over the marginal
    polytope ``M_i`` of an affine function minus a quadratic,
    ``loss_i(theta) = max_{mu in M_i} c_i(mu) + <mu - phi_i, theta> - 1/2
    ||mu_U||^2 + 1/2 ||phi_{i,U}||^2`` (``c_i`` the cost, linear in ``mu``,
    for m-SparseMAP, 0 otherwise; ``U`` the penalised, unary parts; the
    Euclidean projection losses, ``dual_quadratic == 'all'`` (Blondel 2019),
    are the same with ``M_i`` replaced by their set and every part
    penalised).  With
    ``mu_i = sum_s beta_i(s) s`` over *atoms* ``s`` -- any points of
    ``M_i``, slopes ``a_s = s - phi_i`` -- the same derivation gives the
    dual

        D = -lam/2 ||w||^2 + l,  l_i = sum_s beta_i(s) (c_s + Q_ss / 2)
                                       - beta_i^T Q_i beta_i / 2,

    ``Q_i`` the Gram matrix of the atoms' slopes on the penalised parts and
    ``c_s = value - <theta, grad>`` again (the value at the atom minus its
    linear part, ``c_i(s) - <phi_U, a_U> - ||a_U||^2 / 2``), a concave
    quadratic in each block, so the block steps below stay exact line
    searches (their curvature gains ``Q``).  The loss's ``value_and_grad``
    is the oracle here too: it returns the SparseMAP solution ``mu*`` at
    the current scores as the atom, i.e. the maximiser of the block's dual
    with only ``-lam/2 ||w||^2`` linearised -- a generalised conditional
    gradient step (Bach, SIAM J. Optim. 2015); the sum of the block gaps
    over the working sets is now only an upper bound of the duality gap
    (the certificate does not use it).  The choice of atoms (solutions, not vertices) is
    ours: an atom costs one active-set solve instead of one MAP call, but a
    CoNLL-2000 SparseMAP fit certified 1e-3 in 15 epochs (58 for the
    margin-scaled hinge) and ran at 0.53x the CRF's L-BFGS fit time, where
    L-BFGS on the SparseMAP loss took 4.0x (docs/benchmarks.rst).  The
    weighted average is not kept for these losses: evaluating it is a
    second pass of active-set solves at a point far from the iterate (on
    2,000 CoNLL-2000 sentences the fit took the same 19 epochs, 22.9 s
    instead of 25.1 s without it).

    **A step on example i.**  The oracle's vertex joins the example's
    working set (the vertices with positive weight, and the zero piece).
    The dual restricted to that set, with the other examples fixed, is a
    small concave quadratic in ``beta_i``; pairwise steps -- weight moved
    from the worst weighted vertex to the best one at the current iterate,
    with the exact line search -- maximise it
    (:func:`structlearn.kernels.dual.working_set_steps`).  Usually the first
    of them is the pairwise Frank-Wolfe step towards the oracle's vertex (a
    batch's oracles ran at the batch's first iterate, so an older vertex may
    be the best by then); the others re-use the cached vertices.
    Vertices whose weight reaches zero leave the set at the end of the
    epoch.  An epoch is one pass
    with oracle calls followed by ``cache_passes`` passes that only re-solve
    the working sets (Shah, Kolmogorov & Lampert, CVPR 2015; Osokin et al.
    2016): they cost no scoring and no inference.  On 2,000 CoNLL-2000
    sentences (``alpha * n = 2``, one thread) 1, 2, 3, 5, 8 or 12 such
    passes reached a gap of 1e-3 in 91, 65, 58, 48, 45 or 44 epochs,
    49, 36, 34, 28, 31 or 35 s with weight-space working sets; with the
    part lists 3, 5, 8 or 12 took 58, 51, 48 or 43 epochs, 25.0, 25.6,
    29.9 or 28.0 s (a shared machine: within its noise): 5 is the default.

    **Choices.**

    * Every parameter is penalised, the intercept included (as in liblinear
      and :func:`cutting_plane`): an unpenalised block would add an
      equality constraint coupling all the dual blocks.
    * The working sets are kept as sparse vectors (a violator differs
      from the truth on a few parts), never as vectors of model size: in
      part space (the ``DualState``), on a per-example list of the parts
      they touch whose columns of ``A_i`` are stored once, with each
      example's Gram matrix of its vertices' slopes kept between visits; a
      visit scores the example's parts once, and a step touches only the
      coordinates of the example's features.
    * Examples are visited in mini-batches of ``batch_size`` (a random
      permutation per epoch): the oracles of a batch run together (in the
      problem's threads) at the iterate of the batch's start, then the
      steps are taken one example after another, each with the exact values
      at the current iterate.  Each step increases the dual; the batch
      composition does not depend on ``n_jobs``, so neither do the results.
    * The certificate: the primal objective (the losses by the oracle,
      values only) is evaluated at the iterate and at its weighted average
      (step ``t`` weighted ``t``) -- at the average only while it was the
      better point at one of the last two certificates; after that the
      average is no longer kept (on CoNLL-2000 it is never the better one,
      and it costs an oracle pass per certificate and a second write per
      step); the best primal
      point met is kept and its gap is measured against the best dual value
      met (the average's dual value costs nothing).  The run stops when
      that relative gap is at most ``tol``.  The pass at the iterate is an
      oracle pass for every example at once: its pieces join the working
      sets and serve as the next epoch's oracle pass (at the epoch's start
      rather than at each batch's iterate), which then runs no oracles of
      its own -- on 2,000 CoNLL-2000 sentences the certified 1e-3 came in
      the same 51 epochs, 19.0 s instead of 25.6 s.  So by default a
      certificate follows every epoch (``check_every=1``): on the full
      CoNLL-2000 training set, one thread, the gap 1e-3 took 58 epochs,
      68.4 s, against 64 epochs, 77.9 s with a certificate every 5 epochs
      (oracles per batch in between).  With ``check_every > 1`` the oracle
      pass already yields an estimate of the gap, the sum of the block
      gaps at the iterates where the blocks were visited over the losses
      met there (Lacoste-Julien et al. 2013, Sec. 4; stale, hence not a
      certificate), and the certificate is made when that estimate is
      within ``4 tol``, every ``check_every`` epochs, and after the last
      epoch.  The run stops only on a certified gap.
    * An inexact violator (``loss.exact_oracle`` False: approximate slack
      scaling) can miss the maximising piece, so its loss value at a point
      may be *below* the dual value of pieces found earlier, and a gap
      computed from it may come out negative (it did: a "gap" of 0 on the
      wine ordinal task, where the exact slack optimum lies above both
      numbers).  There the primal loss of an example is taken as the
      largest of the violator's value and the values of the pieces in the
      example's current working set, and it is compared with the dual value
      of the current iterate only (whose pieces all lie in those working
      sets).  The gap is then that of the problem restricted to the pieces
      found, ``S``: ``P_S(z) - OPT_S <= gap``, and since ``OPT_S`` is at
      most the optimum of the exact slack-scaled objective, ``P_S(z) - gap``
      is a certified lower bound of that optimum.  No certificate can say
      how far ``z`` is from the exact objective's optimum without the exact
      violator; where the structure has one, ``hinge-slack`` gives it.

    Parameters
    ----------
    problem : a training problem with ``part_sizes()``, ``pieces(z, idx)``
        and ``block_entries(idx, D)`` (see ``LinearProblem``), and
        optionally ``part_columns(rep, parts)`` (the columns of ``A_i`` of
        single parts, as entries; without it they come from
        ``block_entries`` of unit score vectors); for a loss with
        ``dual_quadratic = 'unary'`` also ``unary_sizes()``, the number of
        penalised parts leading each example's score block.
    alpha : float > 0
    max_iter : int
        Epochs: passes over the examples with oracle calls (each followed by
        ``cache_passes`` passes over the working sets).
    tol : float
        Relative duality gap.
    state : DualState or None
        A previous run's dual iterate (``warm_start``); used when its
        ``key`` equals ``key`` and its size fits, ignored otherwise.
    max_inner : int
        Pairwise steps per example visit.
    cache_passes : int
        Passes over the working sets, without oracle calls, after each
        oracle pass.
    callback : callable or None
        ``callback(epoch, objective, relative_gap)`` after every
        certificate; a true return value stops the run (no warning).
    check_every : int
        Epochs between certificates while the estimated gap is above
        ``4 tol``.  The default, 1, certifies after every epoch: the
        certificate's oracle pass is then every epoch's oracle pass (one
        pass over all examples at the epoch's start, in the problem's
        threads), and no per-batch oracles run after the first epoch.

    Returns
    -------
    z, n_epochs, objective_value, relative_gap, DualState
    """
    if not alpha > 0:
        raise ValueError("solver='bcfw' needs alpha > 0.")
    if isinstance(check_every, bool) or not isinstance(check_every, numbers.Integral) \
            or check_every < 1:
        raise ValueError(f"check_every must be a positive integer, got {check_every!r}.")
    lam = float(alpha)
    rng = np.random.RandomState(random_state)
    n = problem.n_samples
    warm = (state is not None and key is not None and state.key == key
            and state.n_samples == n)
    pool = _Pool(problem, state if warm else None)
    z = pool.primal_point(lam, problem.n_params) if warm else np.zeros(problem.n_params)
    ell_tot = pool.offset() if warm else 0.0
    avg = np.zeros(problem.n_params)
    steps = 0
    ell_wsum = 0.0  # sum_t t l_t, for the averaged dual's offset
    B = max(1, int(batch_size))
    t0 = time.perf_counter()
    best = (np.inf, z)  # smallest primal objective met, and its point
    d_best = -np.inf
    rel = np.inf
    epoch = 0

    exact = problem.loss.exact_oracle
    avg_useful = 0 if pool.nu.size else 2
    fresh = None  # the losses of the certificate's oracle pass, when it served as one

    def primal(x, keep=False, chunk=1024):
        # the losses by the oracle, in chunks (no gradient); ``keep``: the
        # maximising pieces join the working sets, as an oracle pass would
        # (the next epoch then needs none of its own)
        parts = []
        for s in range(0, n, chunk):
            idx = np.arange(s, min(n, s + chunk))
            vals, theta, G = problem.pieces(x, idx)
            if keep:
                pool.add(idx, vals, np.asarray(theta, dtype=np.float64),
                         np.asarray(G, dtype=np.float64))
            parts.append(vals)
        vals = np.concatenate(parts)
        loss_sum = float(vals.sum())
        if not exact:  # the restricted loss P_S (see Choices)
            vals = np.maximum(vals, pool.values(x))
        return float(vals.mean() + 0.5 * lam * x @ x), loss_sum

    def steps_over(ex):
        """Block steps on the examples ``ex``, in order; returns their
        block gaps."""
        nonlocal steps, ell_tot, ell_wsum
        gaps = np.empty(len(ex))
        d_ell = np.empty(len(ex))
        working_set_steps(z, avg, ex, *pool.arrays(), lam, float(n), steps, int(max_inner),
                          gaps, d_ell, avg_useful > 0)
        ell_path = ell_tot + np.cumsum(d_ell)
        t = steps + 1 + np.arange(len(ex))
        ell_wsum += float(t @ ell_path)
        ell_tot = float(ell_path[-1])
        steps += len(ex)
        return gaps

    for epoch in range(1, max_iter + 1):
        order = rng.permutation(n)
        batches = _batches(order, B)
        gap_sum = 0.0
        est_gap = est_loss = 0.0  # the oracle pass's block gaps and losses
        # The oracle pass: a batch's oracles run at the batch's first
        # iterate, then its examples step one after another -- unless the
        # last certificate's pass found every example's piece at the epoch's
        # start.  The working sets keep their vertices (zero weights
        # included) until the end of the epoch, when those of weight zero
        # leave.
        for idx in batches:
            if fresh is None:
                vals, theta, G = problem.pieces(z, idx)
                G = np.asarray(G, dtype=np.float64)
                pool.add(idx, vals, np.asarray(theta, dtype=np.float64), G)
                est_loss += float(np.sum(vals))
            gaps = steps_over(np.asarray(idx, dtype=np.int64))
            est_gap += float(gaps.sum())
        if fresh is not None:
            est_loss, fresh = fresh, None
        gap_sum += est_gap
        # passes over the working sets, in the same order, without oracles
        ex = np.concatenate(batches).astype(np.int64)
        for _ in range(cache_passes):
            gap_sum += float(steps_over(ex).sum())
        pool.compact()
        est = est_gap / max(est_loss / n + 0.5 * lam * float(z @ z), 1e-300)
        if not (est <= 4.0 * tol or epoch % check_every == 0
                or epoch == max_iter):
            if verbose:
                print(f"[bcfw] epoch {epoch}: estimated relative gap {est:.3g} "
                      f"({time.perf_counter() - t0:.1f}s)")
            continue
        # certificate: primal at the iterate and at its weighted average
        dual = -0.5 * lam * float(z @ z) + ell_tot
        p_cur, fresh = primal(z, keep=epoch < max_iter)
        # the average, while it has been the better point at one of the
        # last two certificates: on the large tasks it rarely is, and both
        # its evaluation (an oracle pass) and its upkeep (a second write per
        # step) cost; once dropped it is not taken up again
        p_avg, dual_avg = np.inf, -np.inf
        if avg_useful > 0:
            T = 0.5 * steps * (steps + 1)
            z_avg = z - avg / T
            dual_avg = -0.5 * lam * float(z_avg @ z_avg) + ell_wsum / T
            p_avg = primal(z_avg)[0]
            avg_useful = 2 if p_avg <= p_cur else avg_useful - 1
        point = (p_avg, z_avg) if p_avg <= p_cur else (p_cur, z.copy())
        if exact:
            best = min(best, point, key=lambda bz: bz[0])
            d_best = max(d_best, dual, dual_avg)
        else:  # P_S of this epoch's working sets, against their own dual
            best, d_best = point, dual
        p = best[0]
        rel = max(p - d_best, 0.0) / max(p, 1e-300)
        if verbose:
            print(f"[bcfw] epoch {epoch}: objective {p:.6g} (iterate {p_cur:.6g}, "
                  f"average {p_avg:.6g}), dual {d_best:.6g}, relative gap {rel:.3g}, "
                  f"block gaps {gap_sum:.3g}, {pool.top[0] / n:.1f} "
                  f"vertices per example ({time.perf_counter() - t0:.1f}s)")
        stop = callback is not None and callback(epoch, p, rel)
        if rel <= tol or stop:
            break
    else:
        warnings.warn(f"BCFW stopped at max_iter={max_iter} epochs with a relative "
                      f"duality gap of {rel:.3g} > tol={tol}; increase max_iter or "
                      f"tol.", ConvergenceWarning)
    p, x = best
    return x, epoch, p, float(rel), pool.state(key)
