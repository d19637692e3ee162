"""Linear chains: tag sequences with unary, transition, start and end parts."""

import contextlib
import itertools
import threading

import numpy as np

from ..kernels.chain import (
    FORBIDDEN,
    approx_slack_batch,
    chain_block_params,
    chain_offsets,
    chain_encode_codes,
    chain_map,
    encode_batch,
    forward_backward_batch,
    poslearn_batch,
    score_batch,
    second_best_batch,
    slack_violator_batch,
    viterbi_batch,
)
from ..kernels.chain_projection import chain_projection_pieces
from ..kernels.chain_split import sparsemap_chain_split_batch
from ..kernels.linear import (
    chain_part_offsets,
    chain_transition_upper,
    chain_unary_mask,
    chain_unary_view,
)
from .base import RaggedStructure, _warn_capped

#: Sequences at least this long are solved by certified splitting in
#: SparseMAP (``structlearn.kernels.chain_split``); shorter ones by the
#: warm-started active set on the whole sequence.
SPLIT_MIN_LENGTH = 128
#: The max-marginal gap (best tag over the second best) at which a position
#: is guessed certain; the certificate makes the result independent of it.
SPLIT_MIN_GAP = 2.0
#: Unconstrained sequences at least this long are projected onto the chain
#: polytope as coupled pieces (``structlearn.kernels.chain_projection``);
#: shorter ones by the active set on the whole sequence, which a fit
#: warm-starts from the previous evaluation's support: measured as fast in
#: a fit below this length (sequences of 450 tokens: 5.8 s against 8.0 with
#: the pieces; of 1,000: 16.4 against 14.9), while from a cold start the
#: pieces win from ~400 tokens and the active set stops at its iteration cap
#: near 1,000.
PROJECTION_PIECES_MIN_LENGTH = 1000
#: L-BFGS evaluations of the projection's dual (each one split SparseMAP
#: solve) that place the pieces (``Chain._projection_pieces``).  scipy's
#: L-BFGS-B, not ``solvers.lbfgs`` (which the dual fits as a one-example
#: problem, :class:`_ProjectionDual`): with ours, 25 iterations, a chain of
#: 2,000 CoNLL-2000 tokens ended in the capped fallback, with scipy's 30
#: evaluations certified -- not investigated further.
PROJECTION_DUAL_EVALS = 30
#: On chains of thousands of tokens rounding can keep the pieces' gap above
#: ``tol`` times the scores' scale (measured 3e-8 to 8e-8 against 2e-8 on
#: 2,000 CoNLL-2000 tokens, an objective of 1.6e5); a gap within this
#: factor of the bound is accepted there.
PROJECTION_ROUNDING = 100.0

class Chain(RaggedStructure):
    """A batch of linear chains over ``n_tags`` tags.

    Unlike the fixed-size structures, a chain structure is bound to the
    lengths of the sequences of one batch (``tok_off``), and part vectors of
    the batch are one **flat** array: per sequence of length ``L`` a block of
    ``L*K`` unary scores (row-major, token x tag), ``K*K`` transition scores
    (previous tag x tag), ``K`` start and ``K`` end scores.  A tag sequence
    ``y`` (flat int array over all tokens) is encoded as unary indicators,
    transition *counts*, start and end indicators, so
    ``<theta, phi(y)> = sum_t U[t, y_t] + sum_t T[y_{t-1}, y_t] + S[y_0] + E[y_{L-1}]``.

    The task cost is the Hamming loss on tags,
    ``L(y', y) = sum_t [y'_t != y_t] = <phi(y'), cost_vector(phi(y))>`` with
    ``cost_vector = 1 - phi`` on the unary parts and 0 elsewhere; calibrated
    decoding is therefore the per-token argmax of the unary marginals.

    SparseMAP penalises the unary parts only (Niculae et al. 2018, Sec. 3:
    ``Omega(mu) = 1/2 ||mu_U||^2``); the transition parts enter linearly.

    Projection sets: ``'chain'`` (the marginal polytope; Euclidean only, by
    the active-set solver with every part penalised, and on unconstrained
    chains of ``PROJECTION_PIECES_MIN_LENGTH`` tokens or more by coupled
    pieces, ``Chain._projection_pieces``) and ``'cube'`` -- the
    box of the parts' ranges, ``[0, 1]`` for unary, start and end parts and
    ``[0, L - 1]`` for the transition counts, a superset of the chain
    polytope in which projection is a clip (Euclidean) or ``min(exp(theta -
    1), upper)`` (KL).

    Parameters
    ----------
    n_tags : int
    tok_off : array of int (n_sequences + 1,)
        Token offsets of the sequences (every length >= 1).
    warm_cache : SupportCache or None
        The warm starts of the active set, owned by the training problem
        that binds this structure to a batch (see
        ``structures.base.RaggedStructure``).
    allowed : tuple of bool arrays ``(transitions (K, K), start (K,), end (K,))`` or None
        Allowed tag bigrams, first and last tags (transition constraints,
        e.g. BIO's ``O -> I-X`` forbidden).  The chain is then restricted
        to the sequences that respect them: every oracle (MAP, marginals,
        top-2, slack and PosLearn violators, SparseMAP, projections) sees
        ``FORBIDDEN`` (-1e9) added to the scores of
        the forbidden parts.  None: every sequence.
    known : array of int (N_tok,) or None
        Forced decoding: per token a tag (``>= 0``) or ``-1 - s`` for the
        tags allowed by row ``s`` of ``label_sets``; restricts the chain like
        ``allowed``.
    label_sets : bool array (n_sets, K) or None
        The tag sets that negative codes refer to, in ``known`` and in
        partially labelled targets (see :meth:`complete`).
    """

    name = "chain"
    scores_name = "chain"
    example = "sequence"
    has_exact_slack = True
    projection_sets = {"chain": ("euclidean",), "cube": ("euclidean", "kl")}
    marginal_set = "chain"
    interaction_parts = True

    def __init__(self, n_tags, tok_off, warm_cache=None, allowed=None, known=None,
                 label_sets=None):
        self.n_tags = int(n_tags)
        self.tok_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        lengths = np.diff(self.tok_off)
        if len(lengths) == 0 or lengths.min() < 1:
            raise ValueError("a Chain batch needs at least one sequence, each of "
                             "length >= 1.")
        self.lengths = lengths
        self.n = len(lengths)
        self.part_off = chain_part_offsets(self.tok_off, self.n_tags)
        self.n_parts = int(self.part_off[-1])
        self.block_sizes = np.diff(self.part_off)
        self._mask = None
        self.warm_cache = warm_cache
        self.allowed = allowed
        self.known = None if known is None else np.ascontiguousarray(known, dtype=np.int64)
        K = self.n_tags
        self.label_sets = (np.ones((1, K), dtype=np.bool_) if label_sets is None else
                           np.ascontiguousarray(label_sets, dtype=np.bool_))
        #: whether scores are restricted (``allowed`` or ``known``)
        self.constrained = allowed is not None or known is not None
        self._offsets = None

    # -------------------------------------------------------- restriction
    def transition_penalties(self):
        """The score offsets ``(transitions (K, K), start (K,), end (K,))``
        of ``allowed``: 0 where allowed, ``FORBIDDEN`` elsewhere."""
        return self._penalties()

    def _penalties(self):
        K = self.n_tags
        if self.allowed is None:
            return np.zeros((K, K)), np.zeros(K), np.zeros(K)
        return tuple(np.where(np.asarray(a, dtype=bool), 0.0, FORBIDDEN)
                     for a in self.allowed)

    def _restriction(self, codes):
        trans, start, end = self._penalties()
        return chain_offsets(self.part_off, self.tok_off, self.n_tags, trans, start, end,
                             codes, self.label_sets)

    @property
    def offsets(self):
        """The flat score offsets of ``allowed`` and ``known`` (0 where allowed)."""
        if self._offsets is None:
            codes = self.known if self.known is not None else np.zeros(0, dtype=np.int64)
            self._offsets = self._restriction(codes)
        return self._offsets

    def _theta(self, theta):
        theta = super()._theta(theta)
        return theta + self.offsets if self.constrained else theta

    def _target_scores(self, theta, y):
        """Scores restricted to the outputs consistent with the (partial)
        targets ``y`` and the constraints (``known`` is not applied: the
        targets are)."""
        theta = super()._theta(theta)
        return theta + self._restriction(self._y(y))

    def complete(self, theta, y):
        """Partially labelled targets completed by the constrained MAP.

        ``y`` holds per token a tag (``>= 0``) or ``-1 - s``: one of the tags
        of ``label_sets[s]`` (row 0 of the default sets is every tag).  The
        completion is the highest-scoring sequence that agrees with ``y``
        and the constraints (the latent structured SVM's imputation, Yu &
        Joachims 2009); a fully labelled ``y`` comes back as it is.
        """
        y = self._y(y)
        if len(y) == 0 or y.min() >= 0:
            return y
        return viterbi_batch(self._target_scores(theta, y), self.part_off, self.tok_off,
                             self.n_tags)

    def target_marginals_and_log_partition(self, theta, y):
        """Marginals and log-partition of the CRF restricted to the
        sequences consistent with the (partial) targets ``y`` (see
        :meth:`complete`); for a fully labelled sequence, its indicator
        vector and its score."""
        return forward_backward_batch(self._target_scores(theta, y), self.part_off,
                                      self.tok_off, self.n_tags)

    def target_feasible(self, y):
        """Per sequence, whether some tag sequence agrees with the (partial)
        targets ``y`` and the constraints."""
        zero = np.zeros(self.n_parts)
        theta = self._target_scores(zero, y)
        best = score_batch(theta, viterbi_batch(theta, self.part_off, self.tok_off,
                                                self.n_tags),
                           self.part_off, self.tok_off, self.n_tags)
        return best > FORBIDDEN / 2

    # ------------------------------------------------------------- layout
    @property
    def unary_mask(self):
        if self._mask is None:
            self._mask = chain_unary_mask(self.tok_off, self.part_off, self.n_tags)
        return self._mask

    @property
    def n_unary(self):
        return self.lengths * self.n_tags

    @property
    def cost_mask(self):
        return self.unary_mask

    @property
    def pos_off(self):
        return self.tok_off

    def unary_sq(self, mu):
        mu = np.asarray(mu, dtype=np.float64)
        return self.sum_parts(np.where(self.unary_mask, mu * mu, 0.0))

    def unary(self, a):
        """Unary blocks of a flat part array as (N_tok, K)."""
        return chain_unary_view(np.ascontiguousarray(a, dtype=np.float64),
                                self.tok_off, self.part_off, self.n_tags)

    def _y(self, y):
        return np.ascontiguousarray(y, dtype=np.int64)

    # ----------------------------------------------------------- encoding
    def all_outputs(self, max_outputs=100_000):
        """Every tag sequence of the batch's one sequence (rows of tags)
        that the constraints and forced labels allow."""
        L = self._one_example()
        self._check_count(self.n_tags ** L, max_outputs, f"a chain of {L} tokens")
        Y = np.array(list(itertools.product(range(self.n_tags), repeat=L)),
                     dtype=np.int64).reshape(-1, L)
        if self.constrained:  # the sequences that use no forbidden part
            Y = Y[[self.offsets @ self.encode(y) > FORBIDDEN / 2 for y in Y]]
        return Y

    def encode(self, y):
        return encode_batch(self._y(y), self.part_off, self.tok_off, self.n_tags)

    def decode(self, phi):
        return np.argmax(self.unary(phi), axis=1).astype(np.int64)

    def argmax(self, theta):
        return viterbi_batch(self._theta(theta), self.part_off, self.tok_off, self.n_tags)

    def scores(self, theta, y):
        return score_batch(self._theta(theta), self._y(y), self.part_off,
                           self.tok_off, self.n_tags)

    # ------------------------------------------------------------ oracles
    def marginals_and_log_partition(self, theta):
        return forward_backward_batch(self._theta(theta), self.part_off, self.tok_off,
                                      self.n_tags)

    def second_best(self, theta, y):
        y2, _ = second_best_batch(self._theta(theta), self._y(y), self.part_off,
                                  self.tok_off, self.n_tags)
        return y2

    def approx_slack_violator(self, theta, y, n_search=12, epsilon=1e-3):
        """The approximate slack-scaling search of
        :meth:`Structure.approx_slack_search` (the reference it is tested
        against) in one Numba call over the batch
        (``structlearn.kernels.chain.approx_slack_batch``)."""
        raw = np.ascontiguousarray(super()._theta(theta))
        tags, _ = approx_slack_batch(raw, self._theta(raw), self._y(y), self.part_off,
                                     self.tok_off, self.n_tags, int(n_search),
                                     float(epsilon))
        return self.encode(tags)

    def poslearn_value_and_grad(self, theta, y):
        """PosLearn with the Hamming cost: one violator per token, from
        forward and backward Viterbi max-marginals (Sarawagi & Gupta 2008,
        Sec. 4.3.1)."""
        return poslearn_batch(self._theta(theta), self._y(y), self.part_off,
                              self.tok_off, self.n_tags)

    def slack_violator(self, theta, y):
        """Exact slack scaling for the Hamming cost by a DP over
        (position, tag, number of errors)."""
        y_hat = slack_violator_batch(self._theta(theta), self._y(y), self.part_off,
                                     self.tok_off, self.n_tags)
        return self.encode(y_hat)

    # --------------------------------------------------------- projection
    def _project(self, theta, set, geometry):
        if set == "cube":
            theta = self._theta(theta)
            upper = chain_transition_upper(self.tok_off, self.part_off, self.n_tags)
            if geometry == "euclidean":
                return np.clip(theta, 0.0, upper)
            return np.minimum(np.exp(np.minimum(theta - 1.0, 700.0)), upper)
        # Euclidean projection onto the chain polytope: SparseMAP with every
        # part penalised.
        return self._marginal_projection(theta)

    def _marginal_projection(self, theta, max_iter=1000, tol=1e-9):
        """The Euclidean projection onto the chain polytope.  Unconstrained
        sequences of at least ``PROJECTION_PIECES_MIN_LENGTH`` tokens are
        solved as coupled pieces (:meth:`_projection_pieces`), the others by
        the (warm-started) active set of ``RaggedStructure``."""
        long = self.lengths >= PROJECTION_PIECES_MIN_LENGTH
        if self.constrained or not long.any():
            return super()._marginal_projection(theta)
        theta = self._theta(theta)
        mu = np.empty_like(theta)
        self._active_set_on(theta, np.flatnonzero(~long), True, max_iter, tol,
                            "projection-short", mu)
        n_capped = 0
        for i in np.flatnonzero(long):
            a, b = self.part_off[i], self.part_off[i + 1]
            mu[a:b], capped = self._projection_pieces(theta[a:b], int(self.lengths[i]),
                                                      max_iter, tol)
            n_capped += capped
        _warn_capped(n_capped, max_iter)
        return mu

    def _projection_pieces(self, theta, L, max_iter, tol):
        """The projection of one chain block ``theta`` (``L`` tokens) as
        coupled pieces: returns ``(mu, capped)``.

        1. *Where to split.*  With ``g = b - c*`` (``b`` the transition,
           start and end scores, ``c*`` the optimum's counts) the optimum is
           a SparseMAP solution (unary parts penalised) with transition
           scores ``g``, so SparseMAP at ``g*`` is integral where the
           projection is.  ``g*`` minimises the strongly convex, non-smooth
           dual ``F(g) = 1/2 ||g - b||^2 + SparseMAP value(a, g)``, gradient
           ``g - b + c(g)``; ``PROJECTION_DUAL_EVALS`` L-BFGS evaluations
           (:class:`_ProjectionDual`) from ``b`` minus the counts of the MAP
           sequence (each one split SparseMAP, :meth:`sparsemap`) give a ``g`` whose SparseMAP is
           integral at those positions (measured: the same positions on
           CoNLL-2000 chains of 200-1,000 tokens), which are fixed.
        2. *The pieces*, coupled through the counts
           (``kernels.chain_projection.chain_projection_pieces``).
        3. *Certificate.*  The joined point's Frank-Wolfe gap on the whole
           chain (one Viterbi) must be at most ``tol`` times the scores'
           scale; where it is not, the fixed positions that the certifying
           path leaves are freed and step 2 runs again.  With none to free
           the pieces are optimal up to their own tolerance: their point is
           kept if its gap is within ``PROJECTION_ROUNDING`` times the bound
           (rounding, on thousands of tokens); otherwise, or with every
           position free, the chain is solved by the active set on the
           whole sequence (capped at ``max_iter``, as before this path).

        The choice of fixed positions only decides the speed; the result is
        certified either way.
        """
        from scipy.optimize import minimize

        from ..solvers._threads import blas_threads

        K = self.n_tags
        nU = L * K
        a, b = theta[:nU], theta[nU:]
        one = Chain(K, np.array([0, L]))
        dual = _ProjectionDual(one, a, b)

        def fun(z):   # F in z = g - b (scipy's L-BFGS-B: see the note below)
            v, c = dual.value_and_grad(z)
            return float(v[0]) + 0.5 * float(z @ z), c + z

        z = minimize(fun, -one.encode(one.argmax(theta))[nU:], jac=True, method="L-BFGS-B",
                     options=dict(maxiter=PROJECTION_DUAL_EVALS,
                                  maxfun=PROJECTION_DUAL_EVALS)).x
        g = b + z
        U = one.sparsemap(np.concatenate([a, g]))[:nU].reshape(L, K)
        fixed = np.where(U.max(axis=1) > 1.0 - 1e-9, U.argmax(axis=1), -1).astype(np.int64)
        limit = tol * (1.0 + np.abs(theta).max())
        mu = np.empty_like(theta)
        # its linear algebra is small: one BLAS thread (two took twice the
        # time on 1,000 tokens).  The limit is process-wide, so only the main
        # thread sets it: worker threads of a fit run under the fit's limit.
        limit_blas = threading.current_thread() is threading.main_thread()
        while True:
            try:
                with blas_threads(1) if limit_blas else contextlib.nullcontext():
                    _, _, converged = chain_projection_pieces(theta, L, K, fixed, g,
                                                              int(max_iter), float(tol), mu)
            except np.linalg.LinAlgError:   # a singular subproblem (not seen): the fallback
                break
            r = theta - mu
            path = one.argmax(r)
            gap = float(r @ one.encode(path)) - float(r @ mu)
            if gap <= limit:
                return mu, 0   # certified
            free = (fixed >= 0) & (path != fixed)
            if not free.any() or not (fixed >= 0).any():
                if converged and gap <= PROJECTION_ROUNDING * limit:
                    return mu, 0   # the pieces' optimum, to rounding's floor
                break
            fixed[free] = -1
        mu = one._active_set(theta, one.block_sizes, max_iter, tol, key="projection")
        return mu, 0

    # ---------------------------------------------------------- SparseMAP
    def sparsemap(self, theta, max_iter=1000, tol=1e-9):
        """SparseMAP marginals of every sequence.  Sequences of at least
        ``SPLIT_MIN_LENGTH`` tokens are split at the positions whose
        solution is integral, the pieces solved apart and the join
        certified by the whole chain's Frank-Wolfe gap
        (``structlearn.kernels.chain_split``: linear in the length where
        the solution is certain at regular intervals); the others by the
        (warm-started) active set of ``RaggedStructure``."""
        long = self.lengths >= SPLIT_MIN_LENGTH
        if not long.any():
            return super().sparsemap(theta, max_iter, tol)
        theta = self._theta(theta)
        oracle, _ = self._oracles()
        if long.all():
            mu, n_capped = sparsemap_chain_split_batch(theta, self.part_off, self.tok_off,
                                                       self.n_tags, oracle, int(max_iter),
                                                       float(tol), SPLIT_MIN_GAP)
            _warn_capped(n_capped, max_iter)
            return mu
        # the long sequences apart; the short ones as a batch of their own
        mu = np.empty_like(theta)
        self._active_set_on(theta, np.flatnonzero(~long), False, max_iter, tol,
                            "sparsemap-short", mu)
        lng = np.flatnonzero(long)
        lparts = self._block_index(lng)
        ltok = np.concatenate(([0], np.cumsum(self.lengths[lng])))
        mu[lparts], n_capped = sparsemap_chain_split_batch(
            np.ascontiguousarray(theta[lparts]), chain_part_offsets(ltok, self.n_tags), ltok,
            self.n_tags, oracle, int(max_iter), float(tol), SPLIT_MIN_GAP)
        _warn_capped(n_capped, max_iter)
        return mu

    def _active_set_on(self, theta, seqs, every_part, max_iter, tol, key, mu):
        """The warm-started active set on the sequences ``seqs`` only, as a
        batch of their own, into their blocks of ``mu``: SparseMAP, or with
        ``every_part`` the projection.  The batch's warm cache is shared
        under its own ``key`` (the same sequences at every call on the same
        batch)."""
        if len(seqs) == 0:
            return
        parts = self._block_index(seqs)
        sub = Chain(self.n_tags, np.concatenate(([0], np.cumsum(self.lengths[seqs]))),
                    warm_cache=self.warm_cache)
        mu[parts] = sub._active_set(theta[parts], sub.block_sizes if every_part else
                                    sub.n_unary, max_iter, tol, key=key)

    def _block_index(self, seqs):
        """The flat part indices of the blocks of sequences ``seqs``."""
        sizes = self.block_sizes[seqs]
        ends = np.cumsum(sizes)
        return np.repeat(self.part_off[seqs] - (ends - sizes), sizes) + np.arange(ends[-1])

    def _oracles(self):
        return chain_map, chain_encode_codes

    def _oracle_params(self):
        return chain_block_params(self.tok_off, self.n_tags)

    @property
    def code_width(self):
        """A support is a tag per token."""
        return np.full(self.n, self.n_tags, dtype=np.int64)

    def _support_layout(self, sup_off):
        """Token and part offsets of the support vertices as a chain batch
        (vertex ``j`` of sequence ``i`` is a sequence of length ``L_i``)."""
        vlen = np.repeat(self.lengths, np.diff(sup_off))
        vtok_off = np.zeros(len(vlen) + 1, dtype=np.int64)
        np.cumsum(vlen, out=vtok_off[1:])
        return vtok_off, chain_part_offsets(vtok_off, self.n_tags)

    def encode_supports(self, tags, sup_off):
        """Flat vertex vectors of supports given as tag sequences (as stored
        in a ``SupportCache``)."""
        vtok_off, vpart_off = self._support_layout(sup_off)
        return encode_batch(np.ascontiguousarray(tags, dtype=np.int64), vpart_off,
                            vtok_off, self.n_tags)


class _ProjectionDual:
    """The dual of the projection onto one chain's polytope
    (``Chain._projection_pieces``) in the solvers' problem form: in ``z = g
    - b``, ``F = SparseMAP value(a, b + z) + 1/2 ||z||^2`` -- one example,
    every parameter penalised, ``alpha = 1``; the example's gradient is
    SparseMAP's counts ``c``."""

    n_samples = 1
    sample_weight = None

    def __init__(self, chain, a, b):
        self.chain, self.a, self.b = chain, a, b
        self.n_params = len(b)
        self.penalized = np.ones(len(b), dtype=bool)

    def value_and_grad(self, z, idx=None):
        g = self.b + z
        mu = self.chain.sparsemap(np.concatenate([self.a, g]))
        n = len(self.a)
        u, c = mu[:n], mu[n:]
        return np.array([float(self.a @ u + g @ c - 0.5 * u @ u)]), c

    def sq_norms(self):
        return np.array([float(self.chain.lengths[0] + 1)])
