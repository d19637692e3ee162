"""The structure interface: oracles over one output space.

A structure holds no training state.  Its methods take a batch of part
scores ``theta`` of shape ``(n_samples, n_parts)`` and labels in the
structure's own encoding (documented per class) and return batched results.

Every structure defines a *task cost* ``L(y', y)`` that is affine in the
encoding of ``y'``: ``L(y', y) = <phi(y'), cost_vector(phi(y))> + c(y)`` with
``L(y, y) = 0``.  That one fact gives cost-augmented MAP
(``argmax(theta + cost_vector(phi(y)))``), margin-SparseMAP, and calibrated
decoding (``argmax(-cost_vector(mu))``, Blondel 2019, Sec. 5) for every
structure at once.
"""

import warnings

import numpy as np

from ..kernels.approx_slack import approx_slack_batch
from ..kernels.slack_search import LINE_RTOL, SHIFT, hinge_bound_rows
from ..kernels.sparsemap import (
    SUPPORT_CODE_DTYPE,
    VARIANTS,
    sparsemap_active_set,
    sparsemap_active_set_batch,
    sparsemap_active_set_ragged,
    sparsemap_active_set_warm_ragged,
    sparsemap_conditional_gradient,
    sparsemap_support_batch,
)

#: Loss names that need only a MAP oracle (usable on every structure).
MAP_LOSSES = ("perceptron", "hinge", "hinge-approx-slack", "poslearn",
              "sparsemap", "m-sparsemap", "projection", "squared")


def slack_hinge(structure, theta, phi, phi_hat):
    """The slack-scaled hinge ``L(y')[1 - s(y) + s(y')]_+`` at the
    labelings ``phi_hat = phi(y')`` and its gradient in ``theta``
    (``L(y') (phi(y') - phi(y))`` where positive)."""
    c = structure.cost_vector(phi)
    L = structure.dot(phi_hat - phi, c)
    margin = 1.0 - structure.dot(theta, phi - phi_hat)
    active = (margin > 0) & (L > 0)
    value = np.where(active, L * margin, 0.0)
    grad = structure.per_sample(np.where(active, L, 0.0)) * (phi_hat - phi)
    return value, grad


class IntractableError(ValueError):
    """Raised when a structure cannot provide an oracle a loss needs."""


class SupportCache:
    """Warm-start cache of the active-set solver for one ragged batch.

    Holds, per variant of the problem (e.g. ``'sparsemap'``: unary parts
    penalised; ``'projection'``: every part penalised), the support of the
    last solve of every structure of the batch: the vertices as compact
    int16 *codes* (one per row of the vertex's unary block: a tag per token
    of a chain, a head per word of a tree, flat), their weights and the
    per-structure vertex offsets.  The next solve of the same batch (e.g.
    the next L-BFGS evaluation, with nearby scores) starts from it instead
    of from the MAP vertex; the solution is the same optimum.  A cache
    belongs to one batch (its order and sizes) and must not be shared
    between threads.
    """

    def __init__(self):
        self.entries = {}

    def get(self, key, n):
        entry = self.entries.get(key)
        if entry is None or len(entry[2]) != n + 1:
            return None
        return entry

    def put(self, key, codes, weights, sup_off):
        self.entries[key] = (codes, weights, sup_off)

    def clear(self):
        self.entries.clear()

    @property
    def nbytes(self):
        return sum(a.nbytes for e in self.entries.values() for a in e)


class RangeCaches:
    """One :class:`SupportCache` per contiguous range of a training
    problem's examples, for the passes that come back to the same ranges
    (the dual solver's certificate passes a fixed chunking every epoch):
    their active-set solves start from the previous pass's supports.  A
    cache is keyed by the range's first example and length, so it only ever
    serves the same examples in the same order."""

    def __init__(self):
        self._caches = {}

    def get(self, idx):
        """The cache of the examples ``idx`` (int array) if they are an
        ascending contiguous range, else None (e.g. a random mini-batch)."""
        if len(idx) == 0 or idx[-1] - idx[0] + 1 != len(idx) or \
                not np.all(np.diff(idx) == 1):
            return None
        return self._caches.setdefault((int(idx[0]), len(idx)), SupportCache())


class Structure:
    """Base class of output structures.

    Subclasses set ``n_parts`` and implement the oracles; the generic
    SparseMAP solver only needs ``_oracle`` and ``_oracle_params``.
    """

    #: name used in error messages
    name = "structure"
    #: sets accepted by :meth:`project`, mapping to the geometries supported
    projection_sets = {}
    #: whether exact slack-scaling inference exists
    has_exact_slack = False
    #: whether the Euclidean projection onto the marginal polytope is the
    #: SparseMAP active set with every part penalised (chains, trees)
    active_set_projection = False
    #: whether some parts lie outside the unary (penalised) ones of
    #: SparseMAP's quadratic (a chain's or a segmentation's transitions)
    interaction_parts = False

    # ------------------------------------------------------------ encoding
    @property
    def n_unary(self):
        """Parts penalised by SparseMAP's quadratic term (all of them here)."""
        return self.n_parts

    def all_outputs(self, max_outputs=100_000):
        """Every output of the structure, for brute-force checks on small
        instances: the labels as a batch (one output per row; for a ragged
        structure, a batch of one example, one row of codes per output).

        Raises ValueError when there are more than ``max_outputs``.
        """
        raise NotImplementedError

    @staticmethod
    def _check_count(count, max_outputs, what):
        if count > max_outputs:
            raise ValueError(f"{what} has {count} outputs, more than max_outputs="
                             f"{max_outputs}: enumeration is for small instances.")

    def encode(self, y):
        """Vertex vectors ``phi(y)`` of shape (n, n_parts)."""
        raise NotImplementedError

    def decode(self, phi):
        """Labels of vertex vectors (inverse of :meth:`encode`)."""
        raise NotImplementedError

    def argmax(self, theta):
        """MAP labels for each row of ``theta``."""
        raise NotImplementedError

    def scores(self, theta, y):
        """``<theta_i, phi(y_i)>`` for each row."""
        return self.dot(theta, self.encode(y))

    # ------------------------------------------------- per-sample arithmetic
    # Losses do their arithmetic on part vectors through these four methods,
    # so a structure chooses its batch layout: fixed-size structures use
    # (n, n_parts) arrays; ragged ones (chains, trees) one flat array of
    # concatenated per-sample blocks.
    def n_samples(self, theta):
        """Number of samples in a batch of part vectors."""
        return len(theta)

    def sum_parts(self, a):
        """Per-sample sums over parts, shape (n,)."""
        return np.asarray(a).sum(axis=1)

    def dot(self, a, b):
        """Per-sample inner products ``<a_i, b_i>``."""
        return np.einsum("ij,ij->i", a, b)

    def per_sample(self, v):
        """Broadcast per-sample values (n,) against a batch of part vectors."""
        return np.asarray(v)[:, None]

    def unary_sq(self, mu):
        """Per-sample ``||mu_U||^2`` over the unary (penalised) parts."""
        mu = np.asarray(mu)[:, :self.n_unary]
        return np.einsum("ij,ij->i", mu, mu)

    # ---------------------------------------------------------------- cost
    def cost_vector(self, phi):
        """Affine map ``phi(y) -> V phi(y) + b`` defining the task cost.

        Accepts any point of the marginal polytope, which is how calibrated
        decoding uses it.
        """
        raise NotImplementedError

    def cost(self, y_pred, y_true):
        """Task cost ``L(y_pred, y_true)`` per row (0 when equal)."""
        phi_t = self.encode(y_true)
        c = self.cost_vector(phi_t)
        return (np.einsum("ij,ij->i", self.encode(y_pred), c)
                - np.einsum("ij,ij->i", phi_t, c))

    #: largest possible cost and smallest gap between distinct costs; they
    #: bound the lambda search of approximate slack scaling.
    def cost_bounds(self):
        raise NotImplementedError

    def cost_gap(self):
        """The smallest gap between distinct costs where ``cost_bounds``
        knows it exactly (or a lower bound of it), else 0.  The
        approximate-slack search stops where no labeling it can still meet
        beats the best met, a bound that assumes no two distinct costs are
        closer than this (``structlearn.kernels.slack_search``)."""
        return self.cost_bounds()[1]

    # ---------------------------------------------------- inference oracles
    def marginals(self, theta):
        """CRF marginals ``E_p[phi(Y)]`` under ``p(y) ~ exp <theta, phi(y)>``."""
        raise IntractableError(
            f"marginal inference on the {self.name} is intractable (#P-hard); "
            f"the 'crf' loss is not available here. Losses that work: "
            f"{', '.join(MAP_LOSSES)}.")

    def check_marginals(self):
        """Raise :class:`IntractableError` where :meth:`marginals` is
        intractable, computing nothing (the CRF loss's check: computing
        marginals on a toy instance would compile the marginal kernels for
        nothing, seconds on a cold start).  A structure with marginals
        overrides ``marginals_and_log_partition``."""
        if type(self).marginals_and_log_partition is Structure.marginals_and_log_partition:
            Structure.marginals(self, None)  # raises IntractableError

    def log_partition(self, theta):
        """``log sum_y exp <theta, phi(y)>`` per row."""
        return self.marginals_and_log_partition(theta)[1]

    def marginals_and_log_partition(self, theta):
        self.marginals(theta)  # raises where intractable
        raise NotImplementedError

    def second_best(self, theta, y):
        """Best structure different from ``y`` (the top-2 oracle).

        Where the MAP differs from ``y`` it is the answer; elsewhere the
        structure's ``_runner_up`` gives the second-best structure.
        """
        theta = np.asarray(theta, dtype=np.float64)
        best = self.argmax(theta)
        same = np.all((best == np.asarray(y)).reshape(len(best), -1), axis=1)
        if same.any():
            best[same] = self._runner_up(theta[same], best[same])
        return best

    def approx_slack_violator(self, theta, y, n_search=12, epsilon=1e-3):
        """The approximate slack-scaling violator (Sarawagi & Gupta 2008,
        Sec. 3; the choices are in :class:`structlearn.losses.Hinge`): the
        encodings of the labelings with the largest slack hinge met by a
        line search over ``lambda`` (``structlearn.kernels.slack_search``)
        with at most ``n_search`` evaluations of the cost-augmented top-2
        oracle after the ends of ``[epsilon / L_max, lambda_u]``;
        ``phi(y)`` where none is violated.

        Fixed-size structures (``_approx_slack_family``) run the search
        in one Numba call over the batch
        (``structlearn.kernels.approx_slack.approx_slack_batch``);
        chains override this method with their own kernel; the others run
        :meth:`approx_slack_search`, the reference the kernels are tested
        equal to.
        """
        if self._approx_slack_family() is None:
            return self.approx_slack_search(theta, y, n_search, epsilon)
        return self._approx_slack_kernel(theta, y, n_search, epsilon)[0]

    def approx_slack_value_and_grad(self, theta, y, n_search=12, epsilon=1e-3):
        """Approximate slack-scaling hinge loss and its gradient in
        ``theta`` at the violator of :meth:`approx_slack_violator`: one
        Numba call on the fixed-size structures, else the violator and
        ``slack_hinge``."""
        if self._approx_slack_family() is None:
            phi_hat = self.approx_slack_violator(theta, y, n_search, epsilon)
            return slack_hinge(self, theta, self.encode(y), phi_hat)
        return self._approx_slack_kernel(theta, y, n_search, epsilon)[1:3]

    def _approx_slack_family(self):
        """The family code of the Numba search
        (:mod:`structlearn.kernels.approx_slack`), or None."""
        return None

    def _approx_slack_kernel(self, theta, y, n_search, epsilon):
        phi = np.ascontiguousarray(self.encode(y), dtype=np.float64)
        params = self._oracle_params()
        # the cost bounds are a function of the oracle's parameters, kept
        # with them: 20 us of numpy per call on the permutahedron (a fifth
        # of a hinge mini-batch), an enumeration of k! permutations with
        # non-integer weights
        key = (self.n_parts, params.tobytes())
        cached = self.__dict__.get("_approx_slack_bounds")
        if cached is None or cached[0] != key:
            L_max, L_eps = self.cost_bounds()
            cached = (key, float(L_max), float(L_eps), float(self.cost_gap()))
            self.__dict__["_approx_slack_bounds"] = cached
        return approx_slack_batch(
            np.ascontiguousarray(theta, dtype=np.float64), phi,
            np.ascontiguousarray(self.cost_vector(phi)), self._approx_slack_family(),
            params, int(n_search), float(epsilon), cached[1], cached[2], cached[3])

    def approx_slack_search(self, theta, y, n_search=12, epsilon=1e-3):
        """The search of :meth:`approx_slack_violator` written with the
        batched oracles (:meth:`second_best`), for every structure: the
        reference the Numba searches are tested equal to, and the search of
        the structures without a kernel (trees, segmentations).  The
        breakpoint search of ``structlearn.kernels.slack_search``, the same
        decisions by the same formulas, run on every row of the batch at
        once (a row whose search is over is still evaluated, ignored); unlike
        the kernels it does not stop a row after its first call when nothing
        is violated (the result is the same).
        """
        structure = self
        phi = structure.encode(y)
        n = structure.n_samples(theta)
        c = structure.cost_vector(phi)
        s_true = structure.dot(theta, phi)
        m = 1.0 - s_true
        L_max, L_eps = structure.cost_bounds()
        gap = structure.cost_gap()
        # L_max = 0: a single structure (e.g. one label to rank), nothing is
        # violated; any positive bound keeps the search below free of 0/0
        L_max = np.where(np.asarray(L_max, dtype=float) > 0, L_max, 1.0)

        best_phi = phi.copy()
        best_g = np.zeros(n)

        def evaluate(lam, rows):
            cand = structure.encode(
                structure.second_best(theta + structure.per_sample(lam) * c, y))
            s = structure.dot(theta, cand)
            L = structure.dot(cand - phi, c)
            g = L * (1.0 - s_true + s)
            better = rows & (g > best_g)
            best_phi[...] = np.where(structure.per_sample(better), cand, best_phi)
            best_g[better] = g[better]
            return s, L

        every = np.ones(n, dtype=bool)
        lam_l = np.broadcast_to(epsilon / np.asarray(L_max, dtype=float), (n,)).copy()
        s_a, L_a = evaluate(lam_l, every)
        # the MAP's score, bounded by H(lam_l) (kernels.slack_search: one
        # oracle call fewer, lam_u at most epsilon / L_eps larger)
        s_map = np.maximum(s_true, s_a + lam_l * L_a)
        xi = best_g.copy()
        lam_u = np.maximum((s_map - s_true + 1.0 - xi / L_max) / L_eps, lam_l)
        s_b, L_b = evaluate(lam_u, every)
        xi = best_g.copy()

        # the bracket [a, b] and the lines found at its ends; each step
        # asks where the two lines cross
        a, b = lam_l, lam_u
        active = every.copy()
        for _ in range(n_search):
            with np.errstate(divide="ignore", invalid="ignore"):
                cross = (s_a - s_b) / (L_b - L_a)
            active &= (L_b != L_a) & (a < cross) & (cross < b)
            # stop where nothing left to meet can beat the best met
            active &= hinge_bound_rows(s_a, L_a, a, s_b, L_b, b, m, float(gap),
                                       active) > best_g
            if not active.any():
                break
            lam = np.where(active, cross + SHIFT * (b - cross), lam_l)
            s, L = evaluate(lam, active)
            h = s + lam * L
            on = np.maximum(s_a + lam * L_a, s_b + lam * L_b)
            active &= h > on + LINE_RTOL * (np.abs(h) + 1.0)
            d = L - np.sqrt(xi / lam)
            left = active & (d > 0.0)    # F increases at lam: minimum on its left
            right = active & (d < 0.0)
            active = left | right
            b = np.where(left, lam, b)
            s_b = np.where(left, s, s_b)
            L_b = np.where(left, L, L_b)
            a = np.where(right, lam, a)
            s_a = np.where(right, s, s_a)
            L_a = np.where(right, L, L_a)
        return best_phi

    def _runner_up(self, theta, best):
        """Second-best structures of rows whose MAP is ``best``."""
        raise NotImplementedError

    def poslearn_value_and_grad(self, theta, y):
        """PosLearn loss values and gradient (see :class:`~structlearn.losses.PosLearn`).

        The default builds them from :meth:`poslearn_violators`; structures
        with a fused kernel override it.
        """
        phi = self.encode(y)
        costs, scores, phis = self.poslearn_violators(theta, y)
        s_true = self.dot(theta, phi)
        with np.errstate(invalid="ignore"):
            margin = costs * (1.0 - s_true[:, None] + scores)
        active = np.isfinite(margin) & (margin > 0)
        value = np.where(active, margin, 0.0).sum(axis=1)
        coef = np.where(active, costs, 0.0)
        grad = np.einsum("nc,ncp->np", coef, phis) - coef.sum(axis=1)[:, None] * phi
        return value, grad

    def poslearn_violators(self, theta, y):
        """Per-position most violating structures (Sarawagi & Gupta, Sec. 4).

        For each position ``c`` of the decomposed cost
        ``L(y', y) = sum_c L_c(y'_c)``, the structure ``y^c`` with
        ``y^c_c != y_c`` maximising ``L_c(y^c_c) (1 - s(y) + s(y^c))``.

        Returns
        -------
        costs : ndarray (n, n_positions)
            ``L_c(y^c_c)``.
        scores : ndarray (n, n_positions)
            ``s(y^c)``; ``-inf`` where no structure differs at ``c``.
        phis : ndarray (n, n_positions, n_parts)
            Encodings of the violators.
        """
        raise NotImplementedError

    def slack_violator(self, theta, y):
        """Exact slack-scaling violator ``argmax_y' L(y', y)(1 - s(y) + s(y'))``.

        Returns the encodings of the maximisers (``phi(y)`` where nothing is
        violated).
        """
        raise IntractableError(
            f"exact slack-scaling inference has no polynomial algorithm on the "
            f"{self.name}; use loss='hinge-approx-slack' (Sarawagi & Gupta 2008, "
            f"Sec. 3) or loss='poslearn'.")

    # ------------------------------------------------------------ projection
    def check_projection(self, set, geometry):
        """Resolve ``set`` ('marginal' = the marginal polytope) and validate."""
        if geometry not in ("euclidean", "kl"):
            raise ValueError(
                f"geometry must be 'euclidean' or 'kl', got {geometry!r}.")
        if set == "marginal":
            set = self.marginal_set
        if set not in self.projection_sets:
            raise ValueError(
                f"cannot project onto {set!r} for the {self.name}; valid sets: "
                f"'marginal' (= {self.marginal_set!r}), "
                f"{', '.join(repr(s) for s in self.projection_sets)}.")
        if geometry not in self.projection_sets[set]:
            raise IntractableError(
                f"no {geometry} projection onto the {set} is implemented "
                f"(available: {', '.join(self.projection_sets[set])}).")
        return set

    def project(self, theta, set="marginal", geometry="euclidean"):
        """Euclidean or KL (Bregman) projection of each row of ``theta``.

        Euclidean: ``argmin_{u in C} ||u - theta||^2``.  KL:
        ``argmin_{u in C} KL(u, exp(theta - 1))`` (Blondel 2019, Eq. 5).
        """
        set = self.check_projection(set, geometry)
        return self._project(np.ascontiguousarray(theta, dtype=np.float64),
                             set, geometry)

    # --------------------------------------------------------------- SparseMAP
    def _oracle(self):
        raise NotImplementedError

    def _oracle_params(self):
        return np.zeros(1)

    #: When every part is unary, SparseMAP's marginals are the Euclidean
    #: projection onto the marginal polytope (Niculae et al. 2018, Eq. 5 with
    #: ``M = A``; Blondel 2019).  Structures with an exact projection faster
    #: than the active set set this to True and :meth:`sparsemap` uses it.
    sparsemap_by_projection = False

    def sparsemap(self, theta, max_iter=1000, tol=1e-9):
        """SparseMAP marginals of each row.

        The generic active-set solver over the MAP oracle, or, where
        ``sparsemap_by_projection`` is True, the structure's exact Euclidean
        projection onto its marginal polytope (the same point, computed by a
        dedicated algorithm).  :meth:`sparsemap_support` always runs an
        active-set or conditional-gradient solver, since it returns the
        distribution over structures as well.
        """
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if self.sparsemap_by_projection and self.n_unary == self.n_parts:
            return self._project(theta, self.marginal_set, "euclidean")
        return sparsemap_active_set_batch(theta, self.n_unary, self._oracle(),
                                          self._oracle_params(), max_iter, tol)

    def sparsemap_support(self, theta, method="active-set", max_iter=1000, tol=1e-9):
        """SparseMAP of one score vector with its sparse distribution.

        Parameters
        ----------
        theta : ndarray of shape (n_parts,)
        method : {'active-set', 'vanilla', 'away-step', 'pairwise'}
            The active-set method (default) or a conditional-gradient variant.

        Returns
        -------
        mu : ndarray (n_parts,)
        vertices : ndarray (n_active, n_parts)
        weights : ndarray (n_active,)
        n_iter : int
        """
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if method == "active-set":
            return sparsemap_active_set(theta, self.n_unary, self._oracle(),
                                        self._oracle_params(), max_iter, tol)
        if method not in VARIANTS:
            raise ValueError(
                f"method must be 'active-set' or one of {sorted(VARIANTS)}, "
                f"got {method!r}.")
        return sparsemap_conditional_gradient(
            theta, self.n_unary, self._oracle(), self._oracle_params(),
            VARIANTS[method], max_iter, tol)

    def sparsemap_supports(self, theta, max_iter=1000, tol=1e-9):
        """The active-set SparseMAP of every row with its distribution,
        in one kernel call (:meth:`sparsemap_support` row by row).

        Returns
        -------
        mu : ndarray (n, n_parts)
        vertices : ndarray (n_vertices, n_parts)
            The supports of all rows, one after another.
        weights : ndarray (n_vertices,)
        sup_off : ndarray of int (n + 1,)
            Row ``i``'s support is ``vertices[sup_off[i]:sup_off[i + 1]]``.
        """
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if theta.ndim != 2 or theta.shape[1] != self.n_parts:
            raise ValueError(f"scores must have shape (n_samples, {self.n_parts}), "
                             f"got {theta.shape}.")
        return sparsemap_support_batch(theta, self.n_unary, self._oracle(),
                                       self._oracle_params(), int(max_iter), float(tol))

    # ---------------------------------------------------------------- decoding
    def complete(self, theta, y):
        """Targets with their unlabelled positions completed (see
        :meth:`structlearn.structures.Chain.complete`); structures without
        partial labels take fully labelled targets only."""
        return y

    def target_marginals_and_log_partition(self, theta, y):
        """The CRF marginals and log-partition over the outputs consistent
        with partially labelled targets (chains only)."""
        raise IntractableError(f"partially labelled targets are not supported on the "
                               f"{self.name}.")

    def calibrated_decode(self, mu):
        """Calibrated decoding ``argmax(-cost_vector(mu))`` (Blondel 2019, Sec. 5)."""
        return self.argmax(-self.cost_vector(mu))


class RaggedStructure(Structure):
    """A structure bound to one ragged batch (chains, trees).

    Part vectors of the batch are one flat array of per-sample blocks at
    ``part_off`` (sizes ``block_sizes``); the cost's positions (tokens,
    words) are at ``pos_off`` (``lengths`` per sample), and ``cost_mask``
    marks the parts whose one-hot rows the Hamming cost reads.  Subclasses
    set those attributes and ``n``; this class gives the per-sample
    arithmetic the losses use and the Hamming cost.
    """

    active_set_projection = True
    #: what one example is called in messages
    example = "example"
    #: whether a support can be stored as one code per row of the unary
    #: block (then the ``warm_cache`` is used)
    warm_supports = True
    #: Optional ``SupportCache``, given by the training problem that
    #: owns it: when set, every active-set solve of this batch (SparseMAP,
    #: the projection onto the marginal polytope) starts from the supports
    #: the previous solve of the same examples stored, and stores its own.
    warm_cache = None

    # The active set over the batch, driven by what the subclass declares:
    # ``_oracles()`` (the MAP oracle of one example and the decoder of its
    # support codes, Numba functions of the signatures of
    # :mod:`structlearn.kernels.sparsemap`), ``_oracle_params()`` (the
    # per-example oracle parameters as ``(params, params_off)``),
    # ``n_unary`` (the penalised parts leading every block) and
    # ``code_width`` (a support is stored as ``lengths[i]`` rows of codes
    # below ``code_width[i]``: a tag per token, a head per word).
    def _oracles(self):
        raise NotImplementedError

    def _oracle_params(self):
        raise NotImplementedError

    def _one_example(self):
        """The length of the only example of the batch (enumeration needs one)."""
        if self.n != 1:
            raise ValueError(f"all_outputs enumerates the outputs of one {self.example}; "
                             f"this batch has {self.n}.")
        return int(self.lengths[0])

    @property
    def code_width(self):
        raise NotImplementedError

    def _active_set(self, theta, n_unary, max_iter=1000, tol=1e-9, key=None):
        """Active-set SparseMAP on every example of the batch, penalising
        the first ``n_unary[i]`` parts of block ``i``.

        Without a ``warm_cache`` (or without a ``key``), every solve starts
        cold from the MAP vertex.  With one, each solve starts from the
        support stored under ``key`` at the previous call and stores its
        own, as int16 codes (see
        :func:`structlearn.kernels.sparsemap.sparsemap_active_set_warm_ragged`);
        a batch whose codes do not fit int16 is solved cold.
        """
        theta = self._theta(theta)
        oracle, encode = self._oracles()
        params, params_off = self._oracle_params()
        n_unary = np.ascontiguousarray(n_unary, dtype=np.int64)
        cache = self.warm_cache if key is not None and self.warm_supports else None
        if cache is not None:
            width = np.ascontiguousarray(self.code_width, dtype=np.int64)
            if self.n and int(width.max()) > np.iinfo(SUPPORT_CODE_DTYPE).max:
                cache = None
        if cache is None:
            mu, n_capped = sparsemap_active_set_ragged(theta, self.part_off, n_unary, oracle,
                                                       params, params_off, int(max_iter),
                                                       float(tol))
            _warn_capped(n_capped, max_iter)
            return mu
        entry = cache.get(key, self.n)
        if entry is None:
            entry = (np.zeros(0, dtype=SUPPORT_CODE_DTYPE), np.zeros(0),
                     np.zeros(self.n + 1, dtype=np.int64))
        mu, codes, w, sup_off, n_capped = sparsemap_active_set_warm_ragged(
            theta, self.part_off, n_unary, oracle, encode, params, params_off,
            np.ascontiguousarray(self.lengths, dtype=np.int64), width, int(max_iter),
            float(tol), *entry)
        cache.put(key, codes, w, sup_off)
        _warn_capped(n_capped, max_iter)
        return mu

    def sparsemap(self, theta, max_iter=1000, tol=1e-9):
        """SparseMAP marginals of every example (active set, MAP oracle),
        warm-started from the ``warm_cache`` when there is one."""
        return self._active_set(theta, self.n_unary, max_iter, tol, key="sparsemap")

    def _marginal_projection(self, theta):
        """The Euclidean projection onto the marginal polytope: SparseMAP
        with every part penalised."""
        return self._active_set(theta, self.block_sizes, key="projection")

    def sparsemap_support(self, theta, method="active-set", max_iter=1000, tol=1e-9):
        """SparseMAP of a batch of ONE example, with its distribution.

        Returns ``(mu, vertices, weights, n_iter)`` as
        :meth:`Structure.sparsemap_support`; the rows of ``vertices`` are
        decoded with :meth:`decode`.
        """
        if self.n != 1:
            raise ValueError(f"sparsemap_support works on a {self.name} batch of one "
                             f"{self.example}, got {self.n}.")
        theta = self._theta(theta)
        oracle, _ = self._oracles()
        params, params_off = self._oracle_params()
        params = np.ascontiguousarray(params[params_off[0]:params_off[1]])
        nu = int(self.n_unary[0])
        if method == "active-set":
            return sparsemap_active_set(theta, nu, oracle, params, int(max_iter), float(tol))
        if method not in VARIANTS:
            raise ValueError(
                f"method must be 'active-set' or one of {sorted(VARIANTS)}, "
                f"got {method!r}.")
        return sparsemap_conditional_gradient(theta, nu, oracle, params, VARIANTS[method],
                                              int(max_iter), float(tol))

    #: how score-vector errors name the structure and its parts
    scores_name, parts_name = "structure", "parts"

    def _theta(self, theta):
        """``theta`` as the batch's flat float64 part vector (a batch of one
        block may come as one row)."""
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        if theta.ndim == 2 and theta.shape[0] == 1:
            theta = theta[0]
        if theta.shape != (self.n_parts,):
            raise ValueError(f"{self.scores_name} scores must be a flat array of "
                             f"{self.n_parts} {self.parts_name}, got shape {theta.shape}.")
        return theta

    def n_samples(self, theta):
        return self.n

    def sum_parts(self, a):
        return np.add.reduceat(np.asarray(a, dtype=np.float64), self.part_off[:-1])

    def dot(self, a, b):
        return self.sum_parts(np.asarray(a) * np.asarray(b))

    def per_sample(self, v):
        return np.repeat(np.asarray(v), self.block_sizes)

    def cost_vector(self, phi):
        """``1 - phi`` on the cost's parts, 0 elsewhere: with one-hot rows,
        ``<phi(y'), cost_vector(phi(y))>`` counts the wrong positions."""
        return np.where(self.cost_mask, 1.0 - np.asarray(phi, dtype=np.float64), 0.0)

    def cost(self, y_pred, y_true):
        """Hamming cost: wrong positions per sample."""
        wrong = (self._y(y_pred) != self._y(y_true)).astype(np.float64)
        return np.add.reduceat(wrong, self.pos_off[:-1])

    def cost_bounds(self):
        return self.lengths.astype(np.float64), 1.0

    def marginals(self, theta):
        return self.marginals_and_log_partition(theta)[0]


def _warn_capped(n_capped, max_iter):
    """A ConvergenceWarning when some active-set solves stopped at
    ``max_iter`` before their Frank-Wolfe gap certified them: their
    marginals are approximate.  This happens on long examples (chains of
    several hundred tokens, with every part penalised: the projection;
    see the docs' benchmarks).  The message has no counts, so Python shows
    it once per place rather than at every evaluation of a fit."""
    if n_capped:
        from sklearn.exceptions import ConvergenceWarning
        warnings.warn(f"the SparseMAP active set stopped at max_iter={max_iter} before "
                      f"convergence on some examples (typically sequences of hundreds of "
                      f"tokens): their marginals, and the loss's gradient, are "
                      f"approximate.", ConvergenceWarning, stacklevel=3)
