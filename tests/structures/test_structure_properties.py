"""One property test for every output structure, by enumerating its outputs.

Every structure can list its outputs on small instances
(``Structure.all_outputs``); the oracles must then agree with brute force
over that list: MAP, encoding, the task cost (affine in the predicted
vertex), top-2, the exact slack-scaling violator, PosLearn (an upper bound
of the slack loss, Sarawagi & Gupta 2008 Claim 4.1, with a gradient that
finite differences confirm), CRF marginals and log-partition, and SparseMAP
(a distribution over enumerated vertices meeting the optimality
certificate).  Fixed-size structures take a batch of one sample, ragged ones
(chains, trees, segmentations) a batch of one sequence.  The structure-
specific suites keep their independent references (vertex vectors and costs
written from the definitions); this one covers every structure with the
same checks, so that a new structure is tested by adding one line below.
"""

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from structlearn.structures import (
    Birkhoff,
    Chain,
    IntractableError,
    Knapsack,
    OrderSimplex,
    Permutahedron,
    Segments,
    Tree,
    UnitCube,
)
from structlearn.structures.base import RaggedStructure

STRUCTURES = {
    "cube3": lambda: UnitCube(3),
    "knapsack4_1_2": lambda: Knapsack(4, 1, 2),
    "order4": lambda: OrderSimplex(4),
    "perm3": lambda: Permutahedron(3),
    "perm4w": lambda: Permutahedron(4, weights=[3.5, 2.0, 1.5, -1.0]),
    "birkhoff3": lambda: Birkhoff(3),
    "chain3x3": lambda: Chain(3, np.array([0, 3])),
    "chain1x2": lambda: Chain(2, np.array([0, 1])),
    # transition constraints (start, end, bigrams) and forced labels
    "chain4x3_allowed": lambda: Chain(3, np.array([0, 4]), allowed=(
        np.array([[1, 1, 0], [1, 0, 1], [1, 1, 1]], bool), np.array([1, 0, 1], bool),
        np.array([1, 1, 0], bool))),
    "chain4x3_known": lambda: Chain(3, np.array([0, 4]), allowed=(
        np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool), np.ones(3, bool),
        np.ones(3, bool)), known=np.array([-1, 1, -2, -1]),
        label_sets=np.array([[1, 1, 1], [1, 0, 1]], bool)),
    "tree3": lambda: Tree(np.array([0, 3]), single_root=False),
    "tree4_single_root": lambda: Tree(np.array([0, 4]), single_root=True),
    "tree4_projective": lambda: Tree(np.array([0, 4]), projective=True),
    "segments4": lambda: Segments(2, [0, 4], 2),
    "segments3_penalties": lambda: Segments(3, [0, 3], 3, precision=[1, 2, 0],
                                            recall=[2, 1, 1],
                                            mismatch=[[0, 1, 2], [3, 0, 1], [1, 1, 0]]),
    "segments3_real_penalties": lambda: Segments(2, [0, 3], 3, precision=[0.5, 1.5],
                                                 recall=[0.25, 1.0],
                                                 mismatch=[[0, 0.7], [1.3, 0]]),
    "segments1_label": lambda: Segments(1, [0, 3], 2),
    "segments_label_lengths": lambda: Segments(3, [0, 4], [1, 3, 2]),
}


class View:
    """A structure with its enumerated outputs, seen through one interface:
    one example, scores ``theta`` and vertices as flat vectors."""

    def __init__(self, S):
        self.S = S
        self.ragged = isinstance(S, RaggedStructure)
        self.Y = S.all_outputs()
        self.Phi = np.stack([self.phi(y) for y in self.Y])
        self.p = self.Phi.shape[1]
        nu = int(S.n_unary[0]) if self.ragged else S.n_unary
        self.unary = np.arange(self.p) < nu

    def batch(self, a):      # one example's array -> the structure's batch layout
        return np.asarray(a) if self.ragged else np.asarray(a)[None]

    def one(self, a):        # the structure's batch layout -> one example's array
        return np.asarray(a) if self.ragged else np.asarray(a)[0]

    def phi(self, y):
        return self.one(self.S.encode(self.batch(y)))

    def theta(self, seed, scale=1.0):
        return scale * np.random.RandomState(seed).randn(self.p)

    def index(self, y):
        hits = [i for i, z in enumerate(self.Y) if np.array_equal(z, y)]
        assert len(hits) == 1, f"{y!r} is not one of the enumerated outputs"
        return hits[0]

    def cost(self, y_pred, y_true):
        return float(self.S.cost(self.batch(y_pred), self.batch(y_true))[0])


@pytest.fixture(params=list(STRUCTURES), scope="module")
def view(request):
    return View(STRUCTURES[request.param]())


SEEDS = [0, 1, 2]


def test_outputs_are_distinct_vertices_that_decode_back(view):
    assert len({v.tobytes() for v in view.Phi}) == len(view.Y)
    for y, phi in zip(view.Y, view.Phi):
        np.testing.assert_array_equal(view.one(view.S.decode(view.batch(phi))), y)
    th = view.theta(0)
    for y, phi in zip(view.Y, view.Phi):
        assert view.S.scores(view.batch(th), view.batch(y))[0] == pytest.approx(phi @ th)


@pytest.mark.parametrize("seed", SEEDS)
def test_argmax_attains_the_enumerated_maximum(view, seed):
    th = view.theta(seed)
    y = view.one(view.S.argmax(view.batch(th)))
    assert view.Phi[view.index(y)] @ th == pytest.approx((view.Phi @ th).max(), abs=1e-12)


def test_cost_is_affine_in_the_prediction_and_bounded(view):
    S = view.S
    bound, eps = S.cost_bounds()
    bound = float(np.atleast_1d(bound)[0])
    positive = []
    for y in view.Y[:: max(1, len(view.Y) // 12)]:
        c = view.one(S.cost_vector(view.batch(view.phi(y))))
        costs = np.array([view.cost(z, y) for z in view.Y])
        # affine: <phi(y'), cost_vector(phi(y))> up to a constant in y'
        offset = costs - view.Phi @ c
        np.testing.assert_allclose(offset, offset[0], atol=1e-12)
        assert view.cost(y, y) == 0.0 and costs.min() >= 0.0
        assert costs.max() <= bound + 1e-12
        positive += list(costs[costs > 0])
    if positive:
        assert eps <= min(positive) + 1e-12


def test_cost_gap_bounds_the_gap_between_distinct_costs(view):
    # the approximate-slack search stops on a bound that assumes no two
    # distinct costs (against one truth) are closer than cost_gap()
    S = view.S
    gap = S.cost_gap()
    assert gap >= 0.0
    for y in view.Y[:: max(1, len(view.Y) // 12)]:
        costs = np.sort(np.array([view.cost(z, y) for z in view.Y]))
        d = np.diff(costs)
        d = d[d > 1e-12]
        if len(d):
            assert gap <= d.min() + 1e-12


@pytest.mark.parametrize("scale", [1.0, 1e-5, 1e-7])
def test_cost_gap_of_the_permutahedron_with_small_weights(scale):
    # the enumerated gap of cost_bounds rounds costs to 12 decimals, which
    # merges the distinct costs of small weights: cost_gap must not use it
    from itertools import permutations
    w = scale * np.array([3.5, 2.0, 1.5, -1.0])
    S = Permutahedron(4, weights=w)
    costs = np.sort([0.5 * np.sum((w[list(p)] - w) ** 2) for p in permutations(range(4))])
    d = np.diff(costs)
    assert S.cost_gap() <= d[d > 0].min()
    assert Permutahedron(4).cost_gap() == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_second_best_is_the_best_other_output(view, seed):
    th = view.theta(seed)
    scores = view.Phi @ th
    for y in [view.Y[int(np.argmax(scores))], view.Y[seed % len(view.Y)]]:
        y2 = view.one(view.S.second_best(view.batch(th), view.batch(y)))
        others = scores[[not np.array_equal(z, y) for z in view.Y]]
        if len(others) == 0:
            np.testing.assert_array_equal(y2, y)
            continue
        assert not np.array_equal(y2, y)
        assert view.Phi[view.index(y2)] @ th == pytest.approx(others.max(), abs=1e-10)


def _slack_values(view, th, y):
    s_y = view.phi(y) @ th
    return np.array([view.cost(z, y) * (1.0 - s_y + phi @ th)
                     for z, phi in zip(view.Y, view.Phi)])


@pytest.mark.parametrize("seed", SEEDS)
def test_slack_violator_maximises_the_slack_scaled_margin(view, seed):
    S = view.S
    th = view.theta(seed, 0.3)
    y = view.Y[(7 * seed) % len(view.Y)]
    if not S.has_exact_slack:
        with pytest.raises(IntractableError):
            S.slack_violator(view.batch(th), view.batch(y))
        return
    phi_hat = view.one(S.slack_violator(view.batch(th), view.batch(y)))
    z = view.Y[view.index(view.one(S.decode(view.batch(phi_hat))))]
    got = view.cost(z, y) * (1.0 - view.phi(y) @ th + phi_hat @ th)
    assert got == pytest.approx(max(_slack_values(view, th, y).max(), 0.0), abs=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_poslearn_bounds_the_slack_loss_and_its_gradient_is_exact(view, seed):
    S = view.S
    th = view.theta(seed, 0.3)
    y = view.Y[(5 * seed + 1) % len(view.Y)]
    value, grad = S.poslearn_value_and_grad(view.batch(th), view.batch(y))
    value, grad = float(value[0]), view.one(grad)
    assert value >= max(_slack_values(view, th, y).max(), 0.0) - 1e-10   # Claim 4.1
    d = np.random.RandomState(seed + 10).randn(view.p)
    h = 1e-7
    v2 = float(S.poslearn_value_and_grad(view.batch(th + h * d), view.batch(y))[0][0])
    assert (v2 - value) / h == pytest.approx(grad @ d, abs=1e-5)


def test_check_marginals_agrees_with_marginals_and_computes_nothing(view, monkeypatch):
    # the CRF loss's up-front check: raises exactly where marginals do,
    # without running (and so compiling) the marginal kernels
    S = view.S
    try:
        S.marginals_and_log_partition(view.batch(view.theta(0)))
        tractable = True
    except IntractableError:
        tractable = False

    def fail(*args):
        raise AssertionError("check_marginals computed marginals")

    monkeypatch.setattr(S, "marginals_and_log_partition", fail, raising=False)
    monkeypatch.setattr(S, "marginals", fail, raising=False)
    if tractable:
        S.check_marginals()
    else:
        with pytest.raises(IntractableError, match="#P-hard"):
            S.check_marginals()


@pytest.mark.parametrize("seed", SEEDS)
def test_marginals_are_the_gibbs_expectation(view, seed):
    S = view.S
    th = view.theta(seed)
    try:
        mu, logZ = S.marginals_and_log_partition(view.batch(th))
    except IntractableError as e:      # rankings: #P-hard, said so
        assert "#P-hard" in str(e)
        return
    scores = view.Phi @ th
    assert float(np.atleast_1d(logZ)[0]) == pytest.approx(logsumexp(scores), abs=1e-10)
    np.testing.assert_allclose(view.one(mu), softmax(scores) @ view.Phi, atol=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_sparsemap_is_certified_over_the_enumerated_vertices(view, seed):
    S = view.S
    th = view.theta(seed)
    mu = view.one(S.sparsemap(view.batch(th)))
    # optimality of max <theta, mu> - 1/2 ||mu_U||^2 over the hull: no vertex
    # improves the linearisation at mu
    g = th - np.where(view.unary, mu, 0.0)
    assert (view.Phi @ g).max() <= g @ mu + 1e-7
    # and mu is a distribution over enumerated vertices
    mu2, V, w, _ = S.sparsemap_support(th)     # one score vector, flat
    mu2, V, w = np.ravel(mu2), np.reshape(V, (-1, view.p)), np.ravel(w)
    for v in V[w > 0]:
        assert np.abs(view.Phi - v).max(axis=1).min() < 1e-9
    assert np.all(w >= -1e-12) and w.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(w @ V, mu2, atol=1e-8)
    np.testing.assert_allclose(mu2[view.unary], mu[view.unary], atol=1e-6)
