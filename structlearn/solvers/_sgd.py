"""Averaged stochastic subgradient descent and the averaged perceptron."""

import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from ..kernels.optim import sgd_sparse_step
from ._problem import objective
from ._protocol import example_weights


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
    # (a weighted example's gradient is its weight times the unweighted one)
    eta_init = 1.0 / (float(np.mean(example_weights(problem) * problem.sq_norms())) + 1e-12)
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
        moved = sgd_sparse_step(self.v, self.a if self.averaging else self.v, self.pen,
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


def sgd_warm_up(problem, alpha, z0, epochs=2, batch_size=16, random_state=None, verbose=0):
    """A starting point for L-BFGS: ``epochs`` passes of the schedule of
    :func:`~structlearn.solvers.sgd`, returning the average of the last
    pass's iterates.

    On large sequence problems L-BFGS spends about a third of its
    iterations on the way from zero to the region its quasi-Newton model
    fits; a few cheap stochastic passes cover most of it (UD EWT UPOS CRF:
    145 -> 106 L-BFGS iterations after two passes, CoNLL-2000: 159 -> 119,
    to the same stopping rule and objective; docs/benchmarks.rst, *A
    stochastic warm-up for L-BFGS*).  The step size is calibrated as in
    :func:`~structlearn.solvers.sgd`, with shorter trials (500 examples, two
    passes: the warm-up only needs a reasonable step, and the full trials
    cost more than the passes themselves).  No objective is evaluated:
    L-BFGS's first evaluation is the next one.  The objective is convex, so
    the warm-up changes the path to the optimum and the time, not the
    optimum.

    ``random_state`` orders the examples; None gives a fixed order (so that
    an L-BFGS fit stays deterministic).

    Returns
    -------
    z : ndarray
        The averaged iterate of the last pass.
    """
    rng = check_random_state(0 if random_state is None else random_state)
    t0 = time.perf_counter()
    z0 = np.array(z0, dtype=np.float64)
    eta0 = _calibrate_eta0(problem, alpha, z0, rng, batch_size, n_sub=500, passes=2)
    it = _ScaledIterate(z0, problem.penalized)
    t = 0
    for epoch in range(1, epochs + 1):
        if epoch == epochs:
            it.start_averaging()
        t, _ = _sgd_pass(it, problem, _batches(rng.permutation(problem.n_samples), batch_size),
                         eta0, alpha, t)
    if verbose:
        print(f"[sgd warm-up] {epochs} epochs, step size {eta0:.3g} "
              f"({time.perf_counter() - t0:.1f}s)")
    return it.average()


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

    **Example weights** (``problem.sample_weight``, mean 1): the examples are
    visited uniformly, each epoch a permutation as without weights, and
    each example's gradient is its weight times its loss's (the problem's
    ``value_and_grad`` is weighted): the mean step is the gradient of the
    weighted objective.  (Sampling examples in proportion to their weights
    instead would lower the variance with very unequal weights, but it
    would no longer be an epoch over the data, and a repeated example would
    not behave as its copies.)  An example of weight 0 takes no gradient
    step (its mini-batch still shrinks the weights).  The averaged
    perceptron's update is the weighted sum of its mini-batch's updates.
    Integer weights define the same objective as repeated examples, but the
    runs differ (other permutations): equal up to SGD's noise.

    A step costs the size of its gradient, not of ``z``: the iterate and its
    average are kept in the scaled, lazy form of ``_ScaledIterate``,
    and problems with a ``sparse_value_and_grad`` method hand over the
    gradient as entries.

    Returns
    -------
    z, n_epochs, objective_value
    """
    rng = check_random_state(random_state)
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
