"""Block-coordinate Frank-Wolfe on the dual, for the max-margin and SparseMAP losses."""

import numbers
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from ..kernels.dual import (add_oracle_vertices, add_parts, compact_pool, gram_blocks,
                            part_lists, working_set_steps, working_set_values)
from ._protocol import example_weights
from ._sgd import _batches


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
        # every example's share of the objective is 1 / nw[i] (w_i / n with
        # the weights of mean 1; inf: a weight 0, no share)
        w = example_weights(problem)
        self.nw = np.full(n, np.inf)
        np.divide(float(n), w, out=self.nw, where=w > 0)

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
        """``z = -1/lam sum_i A_i^T m_i / nw_i``, ``m_i = sum_v beta_v a_v``
        (compacted pool; ``1 / nw_i`` the example's share, ``1/n``
        unweighted)."""
        n = len(self.xlo)
        nv = int(self.top[0])
        pos, vert = self._entries(self.pspan, nv)
        owner = np.repeat(np.arange(n), self.xhi - self.xlo)[vert]
        slot = self.qspan[owner, 0] + self.ploc[pos]
        coef = np.bincount(slot, weights=self.beta[vert] * self.pvals[pos] / self.nw[owner],
                           minlength=int(self.top[2]))
        epos, eslot = self._entries(self.qe, int(self.top[2]))
        z = np.zeros(n_params)
        np.add.at(z, self.qcols[epos], coef[eslot] * self.qvals[epos] * (-1.0 / lam))
        return z

    def offset(self):
        """``l = sum_i (sum_v beta_v (c_v + Q_vv / 2) - beta_i^T Q beta_i / 2)
        / nw_i`` (compacted pool; ``Q = 0`` without a quadratic dual)."""
        n = len(self.xlo)
        nv = int(self.top[0])
        owner = np.repeat(np.arange(n), self.xhi - self.xlo)
        total = float((self.beta[:nv] * self.c[:nv]) @ (1.0 / self.nw[owner]))
        if len(self.nu):
            for i in range(n):
                b = self.beta[self.xlo[i]:self.xhi[i]]
                m, D = len(b), int(self.kdim[i])
                Q = self.qq[self.kptr[i]:self.kptr[i] + D * D].reshape(D, D)[:m, :m]
                total += 0.5 * float(b @ np.diag(Q) - b @ Q @ b) / self.nw[i]
        return total

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

    Trains ``min_z P(z) = alpha/2 ||z||^2 + 1/n sum_i w_i loss_i(A_i z)`` for a
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

    **Example weights** (``problem.sample_weight``, mean 1; ``w_i = 1``
    without).  Example ``i``'s share of the objective is ``s_i = w_i / n``
    instead of ``1/n``, and the same derivation gives ``w = -1/lam sum_i s_i
    A_i^T m_i`` and ``l = sum_i s_i l_i``: every ``1/n`` above becomes the
    block's own ``s_i``.  A block step on example ``i`` then changes the
    dual by ``s_i (<A_i w, dm> + dl_i) - s_i^2 / (2 lam) ||A_i^T dm||^2``,
    i.e. the unweighted step with ``n`` replaced by ``n / w_i`` (the kernel's
    ``nw``): its line search, gap and offset stay exact.  The primal value of
    the certificate weights the oracle's losses the same way, so the gap is
    still ``P - D`` of the weighted problem.  Examples of weight 0 have no
    share: they are never visited and cost no oracle call.

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
    rng = check_random_state(random_state)
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
    w = example_weights(problem)
    active = np.flatnonzero(w > 0)
    avg_useful = 0 if pool.nu.size else 2
    fresh = None  # the losses of the certificate's oracle pass, when it served as one

    def primal(x, keep=False, chunk=1024):
        # the weighted losses by the oracle, in chunks (no gradient), of the
        # examples of positive weight; ``keep``: the maximising pieces join
        # the working sets, as an oracle pass would (the next epoch then
        # needs none of its own)
        parts = []
        for s in range(0, len(active), chunk):
            idx = active[s:s + chunk]
            vals, theta, G = problem.pieces(x, idx)
            if keep:
                pool.add(idx, vals, np.asarray(theta, dtype=np.float64),
                         np.asarray(G, dtype=np.float64))
            parts.append(vals)
        vals = np.concatenate(parts) if parts else np.zeros(0)
        loss_sum = float((vals * w[active]).sum())
        if not exact:  # the restricted loss P_S (see Choices)
            vals = np.maximum(vals, pool.values(x)[active])
        return float((vals * w[active]).sum() / n + 0.5 * lam * x @ x), loss_sum

    def steps_over(ex):
        """Block steps on the examples ``ex``, in order; returns their
        block gaps."""
        nonlocal steps, ell_tot, ell_wsum
        gaps = np.empty(len(ex))
        d_ell = np.empty(len(ex))
        working_set_steps(z, avg, ex, *pool.arrays(), lam, pool.nw, steps, int(max_inner),
                          gaps, d_ell, avg_useful > 0)
        ell_path = ell_tot + np.cumsum(d_ell)
        t = steps + 1 + np.arange(len(ex))
        ell_wsum += float(t @ ell_path)
        ell_tot = float(ell_path[-1])
        steps += len(ex)
        return gaps

    for epoch in range(1, max_iter + 1):
        order = rng.permutation(n)
        if len(active) < n:     # (the examples of weight 0 have no share)
            order = order[w[order] > 0]
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
                est_loss += float(np.sum(vals * w[idx]))
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
