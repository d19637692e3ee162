"""Structured losses: small stateless objects over (theta, y, structure).

Every loss implements ``value_and_grad(theta, y, structure)`` returning the
per-sample loss values (n,) and the gradient (or a subgradient) with respect
to ``theta`` (n, n_parts), and ``mean(theta, structure)``: the prediction map
``grad Omega*(theta)`` of the loss (MAP vertex, CRF marginals, SparseMAP or
projected marginals, or ``theta`` itself for the squared loss) used by
calibrated decoding.

Two families:

* **Fenchel-Young** (Niculae et al. 2018, Sec. 4; Blondel 2019):
  ``loss = Omega*(theta) + Omega(phi(y)) - <theta, phi(y)>`` with gradient
  ``grad Omega*(theta) - phi(y)``.  Perceptron (Omega = 0), CRF (negative
  entropy), SparseMAP (``1/2 ||u||^2``), projections onto a set ``C``
  (``Psi + I_C``, Euclidean or KL), squared loss (``C = R^p``).  Cost
  augmentation (hinge, margin-SparseMAP) evaluates the base loss at
  ``theta + cost_vector(phi(y))``, since every structure's cost is affine in
  the encoding.
* **Max-margin with other scalings** (Sarawagi & Gupta 2008): slack scaling
  (exact where the structure has a polynomial algorithm), approximate slack
  scaling (Sec. 3), and PosLearn (Sec. 4).

Losses are scikit-learn estimators only for ``get_params``/``set_params``, so
``GridSearchCV`` can search ``loss__geometry`` and friends.
"""

import numpy as np
from sklearn.base import BaseEstimator

from .structures.base import IntractableError, slack_hinge


class Loss(BaseEstimator):
    """Base class.

    Capabilities a loss declares (so that solvers and estimators need not
    ask for its type):

    * ``smooth``: differentiable in the scores, so L-BFGS may be used;
    * ``piecewise_affine``: a maximum of finitely many functions affine in
      the scores, ``max_y c(y) + <a(y), theta>``, whose ``value_and_grad``
      returns the value and slope ``a`` of a maximising piece -- the oracle
      of the dual solver :func:`structlearn.solvers.bcfw`;
    * ``perceptron_update``: trained by the averaged perceptron (unit steps,
      no penalty), never by a regularised solver, whose optimum would be 0;
    * ``lbfgs_history``: the number of L-BFGS correction pairs the loss is
      best trained with, or None for the estimator's default;
    * ``dual_quadratic``: None, or ``'unary'`` for a loss ``max_{mu in C}
      c(mu) + <mu - phi(y), theta> - 1/2 ||mu_U||^2 + 1/2 ||phi(y)_U||^2``
      over a convex set ``C`` holding ``phi(y)``, with ``c`` affine, where
      ``U`` keeps the structure's penalised (unary) parts, and whose
      ``value_and_grad`` returns the value and ``mu* - phi(y)`` of the
      maximiser: SparseMAP and m-SparseMAP; ``'all'`` for the same with
      every part penalised: the Euclidean projection losses.  The dual solver then trains it too (its dual is a
      concave quadratic over the same sets; see
      :func:`structlearn.solvers.bcfw`);
    * ``exact_oracle`` (piecewise-affine losses): whether ``value_and_grad``
      finds a maximising piece, so that its value is the loss; False for an
      approximate violator, whose value is a lower bound of the loss (the
      dual solver then measures its certificate differently);
    * ``gibbs_likelihood``: the loss is the negative log-likelihood of the
      Gibbs distribution, ``log Z(theta) - <theta, phi(y)>`` with gradient
      ``mu(theta) - phi(y)`` (the marginals), so that a training problem may
      evaluate it by its own fused forward-backward and an estimator may
      report that distribution's probabilities.  A subclass that changes
      ``value_and_grad`` sets it to False.

    and four methods of the structure class: :meth:`mean_set` (where the
    prediction map lands: a distribution's marginals or not),
    :meth:`uses_active_set` (whether training runs the SparseMAP active set
    on every example), :meth:`output_scores_only` (whether the loss sees
    the scores only through the outputs' scores) and :meth:`differentiable`
    (whether its gradient vanishes at the optimum, which L-BFGS's duality
    gap needs).  Estimators ask these questions, never a loss's type.
    """

    smooth = False
    piecewise_affine = False
    dual_quadratic = None
    exact_oracle = True
    perceptron_update = False
    lbfgs_history = None
    gibbs_likelihood = False
    name = "loss"

    def check(self, structure):
        """Raise a ValueError now if ``structure`` lacks an oracle we need."""

    def mean_set(self, structure_cls):
        """Where :meth:`mean` maps the scores on ``structure_cls``.

        ``'marginal'`` when the result lies in the structure's marginal
        polytope (it holds the marginals of a distribution over the
        outputs), the name of another of the structure's projection sets
        (e.g. ``'cube'``: per-part values in ``[0, 1]``), or None when it is
        no distribution's marginals (the MAP vertex, raw scores).
        """
        return None

    def uses_active_set(self, structure_cls):
        """Whether training evaluates the SparseMAP active set on every
        example (so that warm-started supports pay off)."""
        return False

    def differentiable(self, structure_cls):
        """Whether the loss is differentiable in the scores on
        ``structure_cls``, so that the gradient vanishes at the optimum and
        L-BFGS's duality gap (``||grad||^2 / (2 alpha)``) certifies it: the
        smooth losses, but for a quadratic on the unary parts only
        (SparseMAP, m-SparseMAP) on a structure with other parts (a chain's
        transitions), whose marginals there are not unique -- the gradient
        is then one subgradient among many and the gap a bound that need
        not vanish at the optimum."""
        return bool(self.smooth) and not (
            self.dual_quadratic == "unary" and getattr(structure_cls, "interaction_parts", False))

    def output_scores_only(self, structure_cls):
        """Whether the loss depends on the scores ``theta`` only through the
        outputs' scores ``<theta, phi(y)>``, so that a change of ``theta``
        that leaves the score of every output unchanged (e.g. a chain's
        per-tag bias moved into its transition weights) leaves the loss
        unchanged: a maximum (or, PosLearn, a sum of maxima) over outputs of
        their cost-augmented scores -- every piecewise-affine loss here,
        whose slopes are differences of outputs' feature vectors; a new one
        whose slopes are not must override this -- or a prediction map onto
        the marginal polytope (a maximum over mixtures of outputs: the CRF,
        SparseMAP, the projections onto it); not a loss that scores parts
        on their own (squared, a projection onto the cube)."""
        return self.piecewise_affine or self.mean_set(structure_cls) == "marginal"

    def local_analogue(self):
        """The name of the loss that scores each part of an output on its
        own in this loss's geometry, for a stage whose structure has no
        interactions: per-part sparsemax ('sparsemap' on a chain without
        transitions) for the Euclidean losses, per-part softmax ('crf')
        for the entropic ones."""
        return "sparsemap"

    def value_and_grad(self, theta, y, structure):
        raise NotImplementedError

    def partial_value_and_grad(self, theta, y, structure):
        """The loss against partially labelled targets ``y`` (codes of the
        structure's ``complete``: positions whose label is unknown or one
        of a set).

        By default the targets are completed by the constrained MAP -- the
        best-scoring output that agrees with them -- and the loss is taken
        against that completion, as the latent structured SVM does (Yu &
        Joachims 2009): the max-margin, perceptron, SparseMAP, projection
        and squared losses.  The objective is then no longer convex, and
        the solvers give no certificate.  A loss with a likelihood
        (:class:`CRF`) marginalises over the completions instead.
        """
        return self.value_and_grad(theta, structure.complete(theta, y), structure)

    def mean(self, theta, structure):
        """The loss's prediction map ``grad Omega*(theta)`` (see module doc)."""
        return structure.encode(structure.argmax(theta))

    def __str__(self):
        return self.name


class Perceptron(Loss):
    """Structured perceptron loss ``max_y' s(y') - s(y)`` (Collins 2002).

    Trained by the averaged perceptron algorithm (no regularisation: with an
    L2 penalty the minimiser of this loss is ``w = 0``).
    """

    name = "perceptron"
    piecewise_affine = True
    perceptron_update = True

    def value_and_grad(self, theta, y, structure):
        phi = structure.encode(y)
        phi_hat = structure.encode(structure.argmax(theta))
        # >= 0 exactly: the MAP's score and <theta, phi_hat> are summed in
        # different orders, so a near-tie can leave a negative round-off
        return np.maximum(structure.dot(theta, phi_hat - phi), 0.0), phi_hat - phi


class Hinge(Loss):
    """Structured hinge loss with margin, slack or approximate slack scaling.

    Parameters
    ----------
    scaling : {'margin', 'slack', 'approx-slack'}
        * 'margin': ``max_y' [s(y') + L(y', y)] - s(y)`` (cost-augmented MAP).
        * 'slack': ``max_y' L(y', y) [1 - s(y) + s(y')]_+`` by the structure's
          exact algorithm; structures without one raise a ValueError pointing
          to 'approx-slack'.  On a chain of ``L`` tokens and ``K`` tags the
          exact algorithm is a dynamic program over the number of errors,
          ``O(L^2 K^2)``: the one chain loss whose cost is not linear in the
          length (we know of no exact linear algorithm; 'approx-slack' is).
        * 'approx-slack': the variational approximation of Sarawagi & Gupta
          (2008, Sec. 3) using only cost-augmented top-2 MAP calls.
    n_search : int, default=12
        Most ``F(lambda)`` evaluations of the line search after the two ends
        of the interval ('approx-slack'); the search usually stops well
        before (on CoNLL-2000 chains during a fit, 4.5 oracle calls per
        sentence in all).
    epsilon : float, default=1e-3
        Tolerance defining the lower end ``lambda_l = epsilon / L_max`` of
        the search ('approx-slack').

    Notes
    -----
    Approximate slack scaling, choices where the paper is tied to its
    cutting-plane trainer: the slack ``xi`` in ``F(lambda) = max_{y != y_i}
    s(y) + lambda L(y) - 2 sqrt(xi lambda)`` is taken as the largest slack
    hinge ``L(y)(1 - s(y_i) + s(y))`` among the labelings found at the two
    ends of the interval ``[lambda_l, lambda_u]`` (Sec. 3.1 bounds, except
    that the MAP score in ``lambda_u`` is replaced by its upper bound
    ``max(s(y_i), H(lambda_l))`` from the first evaluation, which saves a
    MAP call and moves ``lambda_u`` up by at most ``epsilon / L_eps``; a
    row whose ``H(lambda_l) <= s(y_i) - 1`` has nothing violated and stops
    there); the search finds the pieces of ``H`` at ``F``'s minimum (``F``
    convex, Claim 3.2) instead of narrowing to a tolerance by the golden
    section the paper suggests: ``H`` is piecewise linear and
    each oracle call returns one of its lines, so the search asks where the
    lines found at the bracket's ends cross, keeps the side ``F``'s
    subgradient points to, and ends when no new line is found there, or
    when no labeling left to meet can beat the best met (about half
    golden section's oracle calls for the same losses;
    ``structlearn.kernels.slack_search``); among all
    labelings met, the one with the largest slack hinge defines the loss
    value and subgradient.  The value is therefore a lower bound of the exact
    slack-scaling loss, equal to it whenever the search meets the exact
    violator.
    """

    piecewise_affine = True

    @property
    def exact_oracle(self):
        """The approximate-slack search may miss the maximising piece."""
        return self.scaling != "approx-slack"

    def __init__(self, scaling="margin", n_search=12, epsilon=1e-3):
        self.scaling = scaling
        self.n_search = n_search
        self.epsilon = epsilon

    @property
    def name(self):
        return {"margin": "hinge", "slack": "hinge-slack",
                "approx-slack": "hinge-approx-slack"}.get(self.scaling, "hinge")

    def check(self, structure):
        if self.scaling not in ("margin", "slack", "approx-slack"):
            raise ValueError(
                f"Hinge scaling must be 'margin', 'slack' or 'approx-slack', "
                f"got {self.scaling!r}.")
        if self.scaling == "slack" and not structure.has_exact_slack:
            structure.slack_violator(None, None)  # raises IntractableError
        if self.scaling == "approx-slack":
            if (not isinstance(self.n_search, (int, np.integer))
                    or isinstance(self.n_search, bool) or self.n_search < 1):
                raise ValueError(f"n_search must be an integer >= 1 (the most oracle calls "
                                 f"after the two ends of the search), got {self.n_search!r}.")
            if (not isinstance(self.epsilon, (int, float, np.integer, np.floating))
                    or isinstance(self.epsilon, bool)
                    or not 0.0 < float(self.epsilon) < np.inf):
                raise ValueError(f"epsilon must be a positive finite number (the lower "
                                 f"end of the search is epsilon / L_max), got "
                                 f"{self.epsilon!r}.")

    def value_and_grad(self, theta, y, structure):
        if self.scaling == "approx-slack":
            return structure.approx_slack_value_and_grad(theta, y, self.n_search,
                                                         self.epsilon)
        phi = structure.encode(y)
        if self.scaling == "margin":
            aug = theta + structure.cost_vector(phi)
            phi_hat = structure.encode(structure.argmax(aug))
            value = structure.dot(aug, phi_hat - phi)
            # the loss is max(0, ...): where the truth's own (zero) piece is
            # the maximum -- a truth outside the decoder's set, e.g. a
            # non-projective tree under projective=True -- its slope is 0,
            # so that (value, grad) is always a piece of the loss (the dual
            # solver reads its offset off them)
            grad = np.where(structure.per_sample(value > 0), phi_hat - phi, 0.0)
            return np.maximum(value, 0.0), grad
        return slack_hinge(structure, theta, phi, structure.slack_violator(theta, y))


class PosLearn(Loss):
    """PosLearn: one slack per position of the decomposed cost.

    ``sum_c max_{y': y'_c != y_c} L_c(y'_c) [1 - s(y) + s(y')]_+``
    (Sarawagi & Gupta 2008, Sec. 4).  Positions are labels (multilabel),
    thresholds (ordinal) and labels' ranks (ranking); the structure provides
    the per-position violators.
    """

    name = "poslearn"
    piecewise_affine = True

    def value_and_grad(self, theta, y, structure):
        return structure.poslearn_value_and_grad(theta, y)


class CRF(Loss):
    """Conditional random field loss ``log Z(theta) - s(y)`` (Lafferty et al. 2001).

    Needs marginal inference: available on the unit cube, the knapsack
    polytope, the order simplex, chains (forward-backward) and trees
    (matrix-tree theorem / inside-outside); a ValueError on the
    permutahedron and Birkhoff polytope (#P-hard).
    """

    smooth = True
    gibbs_likelihood = True
    name = "crf"

    def check(self, structure):
        structure.check_marginals()

    def mean_set(self, structure_cls):
        return "marginal"

    def value_and_grad(self, theta, y, structure):
        mu, logZ = structure.marginals_and_log_partition(theta)
        # log Z >= s(y) exactly; computed apart, they can cross by round-off
        # (e.g. a single structure, or scores of 1e5 and more)
        value = np.maximum(logZ - structure.scores(theta, y), 0.0)
        mu -= structure.encode(y)  # mu is ours: reuse it as the gradient
        return value, mu

    def partial_value_and_grad(self, theta, y, structure):
        """The negative log-likelihood of the partial labels:
        ``log Z(theta) - log Z_y(theta)``, where ``Z_y`` sums over the
        outputs consistent with ``y``; its gradient is the difference of the
        two marginals (the CRF of partially labelled data, e.g. Tsuboi et
        al. 2008)."""
        mu, logZ = structure.marginals_and_log_partition(theta)
        mu_y, logZ_y = structure.target_marginals_and_log_partition(theta, y)
        mu -= mu_y
        return np.maximum(logZ - logZ_y, 0.0), mu

    def mean(self, theta, structure):
        return structure.marginals(theta)

    def local_analogue(self):
        return "crf"


class SparseMAP(Loss):
    """SparseMAP loss and its margin version (Niculae et al. 2018, Sec. 4).

    ``Omega*(theta) + 1/2 ||phi(y)||^2 - <theta, phi(y)>`` with
    ``Omega*(theta) = max_{mu in M} <theta, mu> - 1/2 ||mu_U||^2`` computed
    by the generic active-set solver.  With ``margin=True`` (m-SparseMAP) the
    loss is evaluated at the cost-augmented ``theta + cost_vector(phi(y))``.

    Parameters
    ----------
    margin : bool, default=False
    max_iter : int, default=1000
        Active-set iterations per sample.
    tol : float, default=1e-9
    """

    smooth = True
    dual_quadratic = "unary"
    #: The loss is differentiable, but its gradient is only piecewise linear
    #: in the scores of the parts that ``Omega`` leaves unpenalised (chain
    #: transitions): L-BFGS keeps 30 correction pairs instead of 10.  On
    #: CoNLL-2000 (full train, alpha = 2 / n) that took 363 evaluations
    #: instead of 464 to the same stopping rule (50 pairs: 338), at 2 * 31 *
    #: n_params float32 of memory (docs/benchmarks.rst).
    lbfgs_history = 30

    def __init__(self, margin=False, max_iter=1000, tol=1e-9):
        self.margin = margin
        self.max_iter = max_iter
        self.tol = tol

    @property
    def name(self):
        return "m-sparsemap" if self.margin else "sparsemap"

    def mean_set(self, structure_cls):
        return "marginal"

    def uses_active_set(self, structure_cls):
        return True

    def value_and_grad(self, theta, y, structure):
        phi = structure.encode(y)
        if self.margin:
            theta = theta + structure.cost_vector(phi)
        mu = structure.sparsemap(theta, self.max_iter, self.tol)
        value = (structure.dot(theta, mu - phi) - 0.5 * structure.unary_sq(mu)
                 + 0.5 * structure.unary_sq(phi))
        return np.maximum(value, 0.0), mu - phi

    def mean(self, theta, structure):
        return structure.sparsemap(theta, self.max_iter, self.tol)


class Projection(Loss):
    """Projection-based Fenchel-Young loss (Blondel 2019).

    ``S(theta, y) = <theta, mu> - Psi(mu) + Psi(phi(y)) - <theta, phi(y)>``
    with ``mu`` the Bregman projection onto ``set``: Euclidean
    (``Psi = 1/2 ||.||^2``) or KL (``Psi(u) = <u, log u>``, projecting
    ``exp(theta - 1)``).  Gradient ``mu - phi(y)``.

    Parameters
    ----------
    set : str, default='marginal'
        'marginal' (the structure's marginal polytope, the best choice) or a
        cheaper superset the structure offers ('cube', 'row-stochastic',
        'simplex' for trees: head selection).
    geometry : {'euclidean', 'kl'}, default='euclidean'
    """

    smooth = True

    @property
    def dual_quadratic(self):
        """Euclidean: ``1/2 ||mu||^2`` on every part (the dual solver trains it)."""
        return "all" if self.geometry == "euclidean" else None

    def __init__(self, set="marginal", geometry="euclidean"):
        self.set = set
        self.geometry = geometry

    @property
    def name(self):
        if self.set == "marginal" and self.geometry == "euclidean":
            return "projection"
        return f"projection[{self.set},{self.geometry}]"

    def check(self, structure):
        structure.check_projection(self.set, self.geometry)

    def mean_set(self, structure_cls):
        marginal = getattr(structure_cls, "marginal_set", None)
        return "marginal" if self.set in ("marginal", marginal) else self.set

    def uses_active_set(self, structure_cls):
        """The Euclidean projection onto the marginal polytope is an
        active-set solve where the structure says so
        (``active_set_projection``: chains, trees)."""
        return (self.geometry == "euclidean" and self.mean_set(structure_cls) == "marginal"
                and getattr(structure_cls, "active_set_projection", False))

    def value_and_grad(self, theta, y, structure):
        phi = structure.encode(y)
        mu = structure.project(theta, self.set, self.geometry)
        if self.geometry == "euclidean":
            value = (structure.dot(theta, mu - phi) - 0.5 * structure.dot(mu, mu)
                     + 0.5 * structure.dot(phi, phi))
        else:
            value = (structure.dot(theta, mu - phi) - structure.sum_parts(_xlogx(mu))
                     + structure.sum_parts(_xlogx(phi)))
        return np.maximum(value, 0.0), mu - phi

    def mean(self, theta, structure):
        return structure.project(theta, self.set, self.geometry)

    def local_analogue(self):
        return "crf" if self.geometry == "kl" else "sparsemap"


def _xlogx(u):
    """Elementwise ``u log u`` with ``0 log 0 = 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(u > 0, u * np.log(np.where(u > 0, u, 1.0)), 0.0)


class Squared(Loss):
    """Squared loss ``1/2 ||phi(y) - theta||^2``: projection onto ``R^p``.

    The baseline of Blondel (2019): no structure during training; pair it
    with ``decoding='calibrated'`` (or MAP) at prediction time.
    """

    smooth = True
    name = "squared"

    def value_and_grad(self, theta, y, structure):
        diff = theta - structure.encode(y)
        return 0.5 * structure.dot(diff, diff), diff

    def mean(self, theta, structure):
        return np.asarray(theta, dtype=np.float64)


LOSSES = {
    "perceptron": Perceptron,
    "hinge": lambda: Hinge("margin"),
    "hinge-slack": lambda: Hinge("slack"),
    "hinge-approx-slack": lambda: Hinge("approx-slack"),
    "poslearn": PosLearn,
    "crf": CRF,
    "sparsemap": SparseMAP,
    "m-sparsemap": lambda: SparseMAP(margin=True),
    "projection": Projection,
    "squared": Squared,
}


def get_loss(loss):
    """Resolve a loss name or instance to a loss object.

    Parameters
    ----------
    loss : str or Loss
        One of ``'perceptron', 'hinge', 'hinge-slack', 'hinge-approx-slack',
        'poslearn', 'crf', 'sparsemap', 'm-sparsemap', 'projection',
        'squared'``, or a :class:`Loss` instance (e.g.
        ``Projection(set='row-stochastic', geometry='kl')``).
    """
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str) and loss in LOSSES:
        return LOSSES[loss]()
    raise ValueError(
        f"unknown loss {loss!r}; use one of {', '.join(repr(k) for k in LOSSES)} "
        f"or a structlearn.losses.Loss instance.")


__all__ = ["Loss", "Perceptron", "Hinge", "PosLearn", "CRF", "SparseMAP",
           "Projection", "Squared", "get_loss", "LOSSES", "IntractableError"]
