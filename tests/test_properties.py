"""Property-based tests (hypothesis) of every oracle and every loss.

Every structure of :mod:`structlearn.structures` is drawn at small sizes
(batches of one or two samples; chains and trees with ragged lengths,
including length-1 sequences and one-word sentences), with scores drawn
from several regimes (continuous, integer with ties, all equal, and up to
1e6 in magnitude).  The properties are checked against enumeration of every
vertex of the marginal polytope (all subsets, classes, permutations, tag
sequences, trees) or against first-order optimality certificates:

* MAP (``argmax``): a valid structure whose score is the enumerated maximum;
  on larger instances, at least the score of random valid structures.
* top-2 (``second_best``), exact slack scaling (``slack_violator``),
  calibrated decoding: the enumerated optimum of their definitions.
* projections (every set and geometry a structure offers): feasible, and the
  variational inequality ``<grad, v - u> <= tol`` for every vertex ``v`` of
  the set (Euclidean: ``grad = theta - u``; KL: ``theta - 1 - log u``);
  product sets (boxes, row simplices) factor by factor.
* SparseMAP: in the polytope, the optimality certificate of
  ``max <theta, mu> - 1/2 ||mu_U||^2``, and ``sparsemap_support``'s
  distribution: weights on the simplex over valid vertices whose mean is mu.
* CRF: ``log Z`` and marginals equal brute-force ``logsumexp`` / expectations,
  marginals satisfy the per-position sum rules, ``grad log Z = mu`` by
  finite differences.
* losses: non-negative, zero at a confident correct score vector, equal to
  their enumerated definitions (perceptron, hinge, slack scaling, PosLearn,
  CRF), Fenchel-Young identities and the bound ``L >= D_Psi(phi(y), mu)``,
  subgradient inequality (convexity) everywhere, gradients equal to central
  finite differences for the smooth losses.
* robustness: every oracle and loss on scores up to 1e6, all-equal scores,
  one label / one class pair / one tag / one token / one word: finite
  results, valid outputs.

RuntimeWarnings (overflow, 0/0, log 0) raised inside the library fail these
tests.  ``HYPOTHESIS_PROFILE=dev PROPERTY_EXAMPLES_SCALE=10`` runs a deeper,
randomised search (the examples it found are kept as regressions at the end).

Brute-force helpers come from the other test modules (``tree_brute``,
``test_chain_kernels.phi_ref``, ``test_structures.hull_weights``).
"""

import functools
import itertools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as hs
from hypothesis.extra import numpy as hnp
from scipy.special import logsumexp, softmax

from structlearn.kernels.sparsemap import sparsemap_jvp
from structlearn.losses import (
    CRF,
    Hinge,
    Perceptron,
    PosLearn,
    Projection,
    SparseMAP,
    Squared,
)
from structlearn.structures import (
    Birkhoff,
    Chain,
    IntractableError,
    Knapsack,
    OrderSimplex,
    Permutahedron,
    Tree,
    UnitCube,
)
from structlearn.structures.base import SupportCache
from test_chain_kernels import phi_ref as chain_phi
from test_structures import hull_weights
from tree_brute import all_trees, is_projective, is_tree

# overflow, 0/0 or log(0) inside an oracle is a robustness defect even when
# the final result happens to be finite
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def cfg(max_examples=60):
    """Per-test hypothesis settings (the profile is set in conftest.py);
    ``PROPERTY_EXAMPLES_SCALE=10`` multiplies the examples for a deeper run."""
    scale = float(os.environ.get("PROPERTY_EXAMPLES_SCALE", "1"))
    return settings(max_examples=max(1, int(max_examples * scale)),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
#: round-off allowance of exact (closed-form / combinatorial) oracles,
#: relative to the magnitude of the quantities summed (a few hundred ulps)
EXACT = 1e-12
#: stopping tolerance of the active-set / conditional-gradient SparseMAP
#: solvers (library default): Frank-Wolfe gap <= SOLVER_TOL (1 + max|theta|)
SOLVER_TOL = 1e-9
#: stopping tolerance of the Birkhoff projections (``Birkhoff(tol=1e-9)``):
#: largest row / column sum violation
BIRKHOFF_TOL = 1e-9


# ---------------------------------------------------------------------------
# enumeration of the vertices of every structure (independent of the library)
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _subsets(k, lower, upper):
    Y = np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.int64).reshape(-1, k)
    Y = Y[(Y.sum(axis=1) >= lower) & (Y.sum(axis=1) <= upper)]
    return list(Y), Y.astype(np.float64)


@functools.lru_cache(maxsize=None)
def _classes(k):
    y = np.arange(k)
    return list(y), (y[:, None] > np.arange(k - 1)[None, :]).astype(np.float64)


@functools.lru_cache(maxsize=None)
def _ranks(k):
    return [np.array(r, dtype=np.int64) for r in itertools.permutations(range(1, k + 1))]


@functools.lru_cache(maxsize=None)
def _permutahedron(k):
    R = _ranks(k)
    w = np.arange(k, 0, -1, dtype=np.float64)
    return R, np.array([w[r - 1] for r in R]).reshape(len(R), k)


@functools.lru_cache(maxsize=None)
def _birkhoff(k):
    R = _ranks(k)
    Phi = np.zeros((len(R), k, k))
    for a, r in enumerate(R):
        Phi[a, np.arange(k), r - 1] = 1.0
    return R, Phi.reshape(len(R), k * k)


@functools.lru_cache(maxsize=None)
def _sequences(L, K):
    S = [np.array(s, dtype=np.int64) for s in itertools.product(range(K), repeat=L)]
    return S, np.array([chain_phi(s, K) for s in S])


def tree_phi(heads):
    n = len(heads)
    P = np.zeros((n, n + 1))
    P[np.arange(n), np.asarray(heads)] = 1.0
    return P.ravel()


@functools.lru_cache(maxsize=None)
def _trees(n, single_root, projective):
    H = [h for h in all_trees(n, single_root, projective)]
    return H, np.array([tree_phi(h) for h in H])


# ---------------------------------------------------------------------------
# instances: a structure bound to a batch, with per-sample brute force
# ---------------------------------------------------------------------------
class Inst:
    """A structure and a batch shape, with everything the properties need
    per sample: vertices (labels and vectors), the unary (penalised) parts,
    the task cost and PosLearn positions written from the documentation."""

    ragged = False

    def __init__(self, kind, st, n, **kw):
        self.kind, self.st, self.n = kind, st, n
        self.kw = kw

    def __repr__(self):
        return f"Inst({self.kind}, n={self.n}, {self.kw})"

    # layout ------------------------------------------------------------
    def sizes(self):
        return [self.st.n_parts] * self.n

    @property
    def total(self):
        return int(sum(self.sizes()))

    def shape(self, flat):
        return np.asarray(flat, dtype=np.float64).reshape(self.n, self.st.n_parts)

    def split(self, a):
        return [np.asarray(a, dtype=np.float64)[i] for i in range(self.n)]

    def join(self, blocks):
        return np.stack(blocks)

    def split_labels(self, y):
        return [np.asarray(y)[i] for i in range(self.n)]

    def join_labels(self, labels):
        return np.array(labels)

    def unary(self, i):
        """Mask of the parts of sample ``i`` penalised by SparseMAP."""
        return np.ones(self.sizes()[i], dtype=bool)

    # brute force -------------------------------------------------------
    def vertices(self, i):
        raise NotImplementedError

    def label_index(self, i, label):
        labels, _ = self.vertices(i)
        for a, lab in enumerate(labels):
            if np.array_equal(np.asarray(lab), np.asarray(label)):
                return a
        raise AssertionError(f"{label!r} is not a valid label of sample {i} of {self}")

    def cost(self, i, a, b):
        """Reference task cost L(a, b) of two labels of sample ``i``."""
        return float(np.sum(np.asarray(a) != np.asarray(b)))

    def positions(self, label):
        """PosLearn positions of a label and their values."""
        return np.atleast_1d(np.asarray(label))

    def position_cost(self, c, new, true):
        return 1.0

    def normal(self, i, phi, set_=None):
        """A direction of the normal cone at the vertex ``phi`` (of the
        marginal polytope, or of the projection set ``set_``) whose unique
        maximiser over the set is ``phi``: ``2 phi - 1`` for 0/1 vertices."""
        return 2.0 * phi - 1.0

    # projection sets as products of small polytopes: (indices, vertices)
    def set_factors(self, i, set_):
        p = self.sizes()[i]
        if set_ == "cube":
            return [(np.array([j]), np.array([[0.0], [1.0]])) for j in range(p)]
        return [(np.arange(p), self.vertices(i)[1])]


class Fixed(Inst):
    pass


class CubeInst(Fixed):
    def vertices(self, i):
        st = self.st
        return _subsets(st.n_labels, st.lower, st.upper)


class OrderInst(Fixed):
    def vertices(self, i):
        return _classes(self.st.n_classes)

    def cost(self, i, a, b):
        return float(abs(int(a) - int(b)))

    def positions(self, label):
        return (int(label) > np.arange(self.st.n_parts)).astype(np.int64)


class PermInst(Fixed):
    def vertices(self, i):
        return _permutahedron(self.st.n_labels)

    def cost(self, i, a, b):
        w = self.st.weights
        return 0.5 * float(np.sum((w[np.asarray(a) - 1] - w[np.asarray(b) - 1]) ** 2))

    def position_cost(self, c, new, true):
        w = self.st.weights
        return 0.5 * (w[new - 1] - w[true - 1]) ** 2


class BirkhoffInst(Fixed):
    def vertices(self, i):
        return _birkhoff(self.st.n_labels)

    def set_factors(self, i, set_):
        k = self.st.n_labels
        if set_ == "row-stochastic":
            return [(np.arange(r * k, (r + 1) * k), np.eye(k)) for r in range(k)]
        return super().set_factors(i, set_)


class Ragged(Inst):
    ragged = True

    def sizes(self):
        return list(self.st.block_sizes)

    def shape(self, flat):
        return np.asarray(flat, dtype=np.float64).reshape(-1)

    def split(self, a):
        a = np.asarray(a, dtype=np.float64)
        o = self.st.part_off
        return [a[o[i]:o[i + 1]] for i in range(self.n)]

    def join(self, blocks):
        return np.concatenate(blocks)

    def split_labels(self, y):
        o = self.st.pos_off
        return [np.asarray(y)[o[i]:o[i + 1]] for i in range(self.n)]

    def join_labels(self, labels):
        return np.concatenate([np.asarray(lab, dtype=np.int64) for lab in labels])


class ChainInst(Ragged):
    def vertices(self, i):
        return _sequences(int(self.st.lengths[i]), self.st.n_tags)

    def unary(self, i):
        L, K = int(self.st.lengths[i]), self.st.n_tags
        mask = np.zeros(self.sizes()[i], dtype=bool)
        mask[:L * K] = True
        return mask

    def normal(self, i, phi, set_=None):
        L, K = int(self.st.lengths[i]), self.st.n_tags
        if set_ == "cube":
            # the box [0, upper]: out at the bounds, 0 strictly inside
            upper = np.ones(len(phi))
            upper[L * K:L * K + K * K] = L - 1
            return np.where(upper == 0, 0.0, np.where(phi == upper, 1.0,
                                                      np.where(phi == 0, -1.0, 0.0)))
        # +1 / -1 on the unary parts (the tags decide the sequence)
        return np.where(self.unary(i), 2.0 * phi - 1.0, 0.0)

    def set_factors(self, i, set_):
        if set_ == "cube":
            L, K = int(self.st.lengths[i]), self.st.n_tags
            upper = np.ones(self.sizes()[i])
            upper[L * K:L * K + K * K] = L - 1
            return [(np.array([j]), np.unique([[0.0], [u]], axis=0))
                    for j, u in enumerate(upper)]
        return super().set_factors(i, set_)


class TreeInst(Ragged):
    def vertices(self, i):
        return _trees(int(self.st.lengths[i]), self.st.single_root, self.st.projective)

    def normal(self, i, phi, set_=None):
        # +1 on the tree's arcs, -1 on every other arc (self-loops: 0)
        n = int(self.st.lengths[i])
        th = (2.0 * phi - 1.0).reshape(n, n + 1)
        th[np.arange(n), np.arange(1, n + 1)] = 0.0
        return th.ravel()

    def set_factors(self, i, set_):
        if set_ == "simplex":
            n = int(self.st.lengths[i])
            out = []
            for m in range(1, n + 1):
                heads = [h for h in range(n + 1) if h != m]
                out.append((np.array([(m - 1) * (n + 1) + h for h in heads]), np.eye(n)))
                out.append((np.array([(m - 1) * (n + 1) + m]), np.zeros((1, 1))))
            return out
        return super().set_factors(i, set_)


DEFAULT_KW = {"cube": dict(k=3), "knapsack": dict(k=3, lower=1, upper=2),
              "order": dict(k=3), "perm": dict(k=3), "birkhoff": dict(k=3),
              "chain": dict(K=2, lengths=[2]),
              "tree": dict(lengths=[2], single_root=True, projective=False)}


def make_inst(kind, n=1, **kw):
    if kind == "cube":
        return CubeInst(kind, UnitCube(kw["k"]), n, **kw)
    if kind == "knapsack":
        return CubeInst(kind, Knapsack(kw["k"], kw["lower"], kw["upper"]), n, **kw)
    if kind == "order":
        return OrderInst(kind, OrderSimplex(kw["k"]), n, **kw)
    if kind == "perm":
        return PermInst(kind, Permutahedron(kw["k"]), n, **kw)
    if kind == "birkhoff":
        return BirkhoffInst(kind, Birkhoff(kw["k"]), n, **kw)
    if kind == "chain":
        lengths = kw["lengths"]
        return ChainInst(kind, Chain(kw["K"], np.concatenate([[0], np.cumsum(lengths)])),
                         len(lengths), **kw)
    if kind == "tree":
        lengths = kw["lengths"]
        return TreeInst(kind, Tree(np.concatenate([[0], np.cumsum(lengths)]),
                                   single_root=kw["single_root"],
                                   projective=kw["projective"]), len(lengths), **kw)
    raise ValueError(kind)


KINDS = ("cube", "knapsack", "order", "perm", "birkhoff", "chain", "tree")
CRF_KINDS = ("cube", "knapsack", "order", "chain", "tree")


@hs.composite
def instances(draw, kinds=KINDS, big=False):
    """Small instances (every vertex enumerable); ``big``: larger ones, for
    the properties that only need random vertices."""
    kind = draw(hs.sampled_from(kinds))
    n = draw(hs.integers(1, 2))
    if kind in ("cube", "knapsack"):
        k = draw(hs.integers(1, 12 if big else 4))
        if kind == "cube":
            return make_inst(kind, n, k=k)
        lower = draw(hs.integers(0, k))
        upper = draw(hs.integers(lower, k))
        return make_inst(kind, n, k=k, lower=lower, upper=upper)
    if kind == "order":
        return make_inst(kind, n, k=draw(hs.integers(2, 12 if big else 5)))
    if kind == "perm":
        return make_inst(kind, n, k=draw(hs.integers(1, 9 if big else 4)))
    if kind == "birkhoff":
        return make_inst(kind, n, k=draw(hs.integers(1, 6 if big else 3)))
    if kind == "chain":
        K = draw(hs.integers(1, 4 if big else 3))
        lengths = draw(hs.lists(hs.integers(1, 8 if big else 3), min_size=1, max_size=2))
        return make_inst(kind, K=K, lengths=lengths)
    lengths = draw(hs.lists(hs.integers(1, 7 if big else 3), min_size=1, max_size=2))
    return make_inst(kind, lengths=lengths, single_root=draw(hs.booleans()),
                     projective=draw(hs.booleans()))


REGIMES = ("normal", "ties", "constant", "huge", "mixed", "constant-huge")


@hs.composite
def scores(draw, inst, regimes=("normal", "ties", "constant")):
    """A batch of part scores in the structure's layout.

    'normal': floats in [-4, 4]; 'ties': integers in [-2, 2]; 'constant':
    all equal (unit scale); 'constant-huge': all equal to +-1e6; 'huge':
    floats up to 1e6 in magnitude; 'mixed': 1e6-scale and unit-scale
    entries together.
    """
    regime = draw(hs.sampled_from(regimes))
    n = inst.total
    if regime == "normal":
        el = hs.floats(-4, 4, allow_nan=False, allow_subnormal=False)
    elif regime == "ties":
        el = hs.integers(-2, 2).map(float)
    elif regime.startswith("constant"):
        values = [1e6, -1e6] if regime == "constant-huge" else [0.0, 1.0, -3.0, 2.5]
        return inst.shape(np.full(n, draw(hs.sampled_from(values))))
    elif regime == "huge":
        el = hs.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)
    else:
        el = hs.one_of(hs.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
                       hs.floats(-1, 1, allow_nan=False, allow_subnormal=False))
    flat = draw(hnp.arrays(np.float64, n, elements=el))
    return inst.shape(flat)


@hs.composite
def labels_of(draw, inst):
    """A valid label per sample (drawn from the enumeration)."""
    out = []
    for i in range(inst.n):
        labels, _ = inst.vertices(i)
        out.append(labels[draw(hs.integers(0, len(labels) - 1))])
    return inst.join_labels(out)


@hs.composite
def problems(draw, kinds=KINDS, regimes=("normal", "ties", "constant")):
    inst = draw(instances(kinds))
    theta = draw(scores(inst, regimes))
    return inst, theta


def scale_of(theta):
    return 1.0 + float(np.max(np.abs(theta)))


def sample_scores(inst, theta, i):
    """Scores of every vertex of sample ``i``."""
    _, Phi = inst.vertices(i)
    return Phi @ inst.split(theta)[i]


# ---------------------------------------------------------------------------
# membership and optimality certificates
# ---------------------------------------------------------------------------
def assert_in_factor(V, u, tol):
    if len(V) == 1:
        np.testing.assert_allclose(u, V[0], atol=tol)
    elif V.shape[1] == 1:           # an interval
        assert V.min() - tol <= u[0] <= V.max() + tol, (u, V.ravel())
    elif np.array_equal(V, np.eye(len(V))):   # a simplex
        assert u.min() >= -tol and abs(u.sum() - 1.0) <= tol, u
    else:
        q = hull_weights(V, u)
        np.testing.assert_allclose(q.sum(), 1.0, atol=tol)
        np.testing.assert_allclose(q @ V, u, atol=tol, err_msg="not in the polytope")


def assert_in_set(factors, u, tol):
    for idx, V in factors:
        assert_in_factor(V, u[idx], tol)


def vi_gap(factors, g, u):
    """max over vertices v of the set of <g, v - u> (factor by factor);
    single-point factors are skipped (their gap is 0 whatever g is)."""
    gap = 0.0
    for idx, V in factors:
        if len(V) > 1:
            gap += float(np.max((V - u[idx]) @ g[idx]))
    return gap


# ---------------------------------------------------------------------------
# 1. MAP
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@cfg(80)
@given(data=hs.data())
def test_map_is_a_vertex_attaining_the_enumerated_maximum(kind, data):
    inst, theta = data.draw(problems((kind,), REGIMES), label="problem")
    st = inst.st
    y = st.argmax(theta)
    phi = st.encode(y)
    s = st.scores(theta, y)
    assert np.all(np.isfinite(s))
    np.testing.assert_array_equal(st.decode(phi), y)
    np.testing.assert_allclose(st.cost(y, y), 0.0)
    for i, (lab, th, ph) in enumerate(zip(inst.split_labels(y), inst.split(theta),
                                          inst.split(phi))):
        a = inst.label_index(i, lab)          # a valid structure
        _, Phi = inst.vertices(i)
        np.testing.assert_array_equal(ph, Phi[a])
        best = np.max(Phi @ th)
        tol = EXACT * (1.0 + np.abs(th).sum())
        assert abs(Phi[a] @ th - best) <= tol, (Phi[a] @ th, best)
        assert abs(s[i] - best) <= tol


def random_label(inst, i, rng):
    """A random valid label of sample ``i`` without enumeration."""
    st = inst.st
    if inst.kind in ("cube", "knapsack"):
        y = np.zeros(st.n_labels, dtype=np.int64)
        y[rng.choice(st.n_labels, rng.randint(st.lower, st.upper + 1), replace=False)] = 1
        return y
    if inst.kind == "order":
        return rng.randint(st.n_classes)
    if inst.kind in ("perm", "birkhoff"):
        return rng.permutation(st.n_labels) + 1
    if inst.kind == "chain":
        return rng.randint(st.n_tags, size=int(st.lengths[i]))
    n = int(st.lengths[i])
    heads = np.zeros(n, dtype=np.int64)
    if st.projective:
        def build(lo, hi, parent):
            # a projective subtree over the words lo..hi, attached to parent
            if lo > hi:
                return
            r = rng.randint(lo, hi + 1)
            heads[r - 1] = parent
            build(lo, r - 1, r)
            build(r + 1, hi, r)
        if st.single_root or n == 1:
            build(1, n, 0)
        else:
            # consecutive spans, one root child each
            cuts = np.sort(rng.choice(np.arange(1, n), rng.randint(0, n), replace=False))
            bounds = [0, *cuts.tolist(), n]
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                build(lo + 1, hi, 0)
        return heads
    order = rng.permutation(n) + 1
    for j, m in enumerate(order):
        if j == 0 or (not st.single_root and rng.rand() < 0.3):
            heads[m - 1] = 0
        else:
            heads[m - 1] = order[rng.randint(j)]
    return heads


def valid_label(inst, i, lab):
    st = inst.st
    lab = np.asarray(lab)
    if inst.kind in ("cube", "knapsack"):
        return set(lab.tolist()) <= {0, 1} and st.lower <= lab.sum() <= st.upper
    if inst.kind == "order":
        return 0 <= int(lab) < st.n_classes
    if inst.kind in ("perm", "birkhoff"):
        return sorted(lab.tolist()) == list(range(1, st.n_labels + 1))
    if inst.kind == "chain":
        return len(lab) == st.lengths[i] and lab.min() >= 0 and lab.max() < st.n_tags
    return (len(lab) == st.lengths[i] and is_tree(lab, st.single_root)
            and (not st.projective or is_projective(lab)))


@pytest.mark.parametrize("kind", KINDS)
@cfg(50)
@given(seed=hs.integers(0, 2**31 - 1), data=hs.data())
def test_map_beats_random_vertices_on_larger_instances(kind, seed, data):
    inst = data.draw(instances((kind,), big=True), label="inst")
    theta = data.draw(scores(inst, REGIMES))
    st = inst.st
    rng = np.random.RandomState(seed)
    y = st.argmax(theta)
    s = st.scores(theta, y)
    for i, lab in enumerate(inst.split_labels(y)):
        assert valid_label(inst, i, lab), lab
    for _ in range(20):
        cand = [random_label(inst, i, rng) for i in range(inst.n)]
        for i, c in enumerate(cand):
            assert valid_label(inst, i, c), c   # the generator itself
        yc = inst.join_labels(cand)
        sc = st.scores(theta, yc)
        tol = EXACT * (1.0 + np.abs(theta).sum())
        assert np.all(s >= sc - tol), (s, sc)


# ---------------------------------------------------------------------------
# 2. top-2, exact slack scaling, calibrated decoding
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@cfg(60)
@given(data=hs.data())
def test_second_best_is_the_best_other_structure(kind, data):
    inst, theta = data.draw(problems((kind,)), label="problem")
    st = inst.st
    y = data.draw(labels_of(inst))
    y2 = st.second_best(theta, y)
    for i, (lab, lab2) in enumerate(zip(inst.split_labels(y), inst.split_labels(y2))):
        sc = sample_scores(inst, theta, i)
        a, b = inst.label_index(i, lab), inst.label_index(i, lab2)
        if len(sc) == 1:
            assert a == b
            continue
        assert a != b, "the second best must differ from y"
        ref = inst.cost(i, lab2, lab)
        assert abs(st.cost(y2, y)[i] - ref) <= EXACT * (1.0 + ref)
        tol = EXACT * (1.0 + np.abs(inst.split(theta)[i]).sum())
        assert sc[b] >= np.max(np.delete(sc, a)) - tol


def slack_reference(inst, theta, i, lab):
    labels, Phi = inst.vertices(i)
    sc = Phi @ inst.split(theta)[i]
    s_y = sc[inst.label_index(i, lab)]
    L = np.array([inst.cost(i, v, lab) for v in labels])
    return L * (1.0 - s_y + sc), L


@pytest.mark.parametrize("kind", ["cube", "knapsack", "order", "chain"])
@cfg(60)
@given(data=hs.data())
def test_slack_violator_maximises_the_slack_scaled_violation(kind, data):
    inst, theta = data.draw(problems((kind,)), label="problem")
    st = inst.st
    assert st.has_exact_slack
    y = data.draw(labels_of(inst))
    phi_hat = st.slack_violator(theta, y)
    for i, (lab, ph) in enumerate(zip(inst.split_labels(y), inst.split(phi_hat))):
        labels, Phi = inst.vertices(i)
        d = np.abs(Phi - ph).max(axis=1)
        assert d.min() == 0.0, "the violator is not a vertex"
        viol, _ = slack_reference(inst, theta, i, lab)
        tol = EXACT * (1.0 + np.abs(inst.split(theta)[i]).sum()) * len(labels)
        assert viol[np.argmin(d)] >= viol.max() - tol


@pytest.mark.parametrize("kind", KINDS)
@cfg(40)
@given(data=hs.data())
def test_calibrated_decoding_minimises_the_expected_cost(kind, data):
    """At any point mu of the marginal polytope (here SparseMAP's), the
    calibrated decoder returns a structure minimising the expected cost
    ``E_mu L(y', Y) = sum_s q_s L(y', y_s)`` over the vertices."""
    inst, theta = data.draw(problems((kind,)), label="problem")
    st = inst.st
    mu = st.sparsemap(theta)
    y = st.calibrated_decode(mu)
    for i, (lab, m) in enumerate(zip(inst.split_labels(y), inst.split(mu))):
        labels, Phi = inst.vertices(i)
        q = hull_weights(Phi, m) if len(Phi) > 1 else np.ones(1)
        q = np.clip(q, 0, None) / q.sum()
        C = np.array([[inst.cost(i, a, b) for b in labels] for a in labels])
        expected = C @ q
        a = inst.label_index(i, lab)
        assert expected[a] <= expected.min() + 1e-6 * (1.0 + C.max()), (expected[a],
                                                                          expected.min())


# ---------------------------------------------------------------------------
# 3. CRF marginals and log-partition
# ---------------------------------------------------------------------------
def assert_marginal_sum_rules(inst, mu, i, tol):
    """Linear constraints every point of the marginal polytope satisfies
    (necessary conditions, checkable without enumeration)."""
    st = inst.st
    assert np.all(np.isfinite(mu))
    if inst.kind == "perm":
        # the permutahedron: sum = sum w, every k-subset sum <= top-k of w
        w = st.weights
        np.testing.assert_allclose(mu.sum(), w.sum(), atol=tol * np.abs(w).sum())
        assert np.all(np.cumsum(np.sort(mu)[::-1]) <= np.cumsum(w) + tol * np.abs(w).sum())
        return
    assert np.all(mu >= -tol)
    if inst.kind == "birkhoff":
        k = st.n_labels
        P = mu.reshape(k, k)
        np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=tol)
        np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=tol)
    elif inst.kind in ("cube", "knapsack"):
        assert np.all(mu <= 1 + tol)
        assert st.lower - tol * st.n_labels <= mu.sum() <= st.upper + tol * st.n_labels
    elif inst.kind == "order":
        assert np.all(mu <= 1 + tol) and np.all(np.diff(mu) <= tol)
    elif inst.kind == "chain":
        L, K = int(st.lengths[i]), st.n_tags
        U = mu[:L * K].reshape(L, K)
        T = mu[L * K:L * K + K * K].reshape(K, K)
        start, end = mu[L * K + K * K:L * K + K * K + K], mu[-K:]
        np.testing.assert_allclose(U.sum(axis=1), 1.0, atol=tol)
        np.testing.assert_allclose(start, U[0], atol=tol)
        np.testing.assert_allclose(end, U[-1], atol=tol)
        np.testing.assert_allclose(T.sum(), L - 1, atol=tol * L)
        # consistency: transitions into a tag = its marginals at t >= 1
        np.testing.assert_allclose(T.sum(axis=0), U[1:].sum(axis=0), atol=tol * L)
        np.testing.assert_allclose(T.sum(axis=1), U[:-1].sum(axis=0), atol=tol * L)
    elif inst.kind == "tree":
        n = int(st.lengths[i])
        M = mu.reshape(n, n + 1)
        assert np.all(M[np.arange(n), np.arange(1, n + 1)] == 0.0), "self-loop mass"
        np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=tol)
        if st.single_root:
            np.testing.assert_allclose(M[:, 0].sum(), 1.0, atol=tol)
        else:
            assert M[:, 0].sum() >= 1.0 - tol


@pytest.mark.parametrize("kind", CRF_KINDS)
@cfg(80)
@given(data=hs.data())
def test_crf_marginals_and_log_partition_match_enumeration(kind, data):
    inst, theta = data.draw(problems((kind,), REGIMES), label="problem")
    st = inst.st
    mu, logZ = st.marginals_and_log_partition(theta)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(logZ))
    np.testing.assert_allclose(st.log_partition(theta), logZ, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(st.marginals(theta), mu, rtol=1e-12, atol=1e-12)
    for i, (m, th) in enumerate(zip(inst.split(mu), inst.split(theta))):
        _, Phi = inst.vertices(i)
        sc = Phi @ th
        scale = scale_of(th)
        # log Z: within round-off of the scores' magnitude
        assert abs(logZ[i] - logsumexp(sc)) <= EXACT * (scale + np.abs(sc).max()), \
            (logZ[i], logsumexp(sc))
        # marginals: probabilities, accurate to 1e-7 absolute (matrix-tree
        # inverses lose a few digits to the conditioning of the Laplacian)
        np.testing.assert_allclose(m, softmax(sc) @ Phi, atol=1e-7)
        assert_marginal_sum_rules(inst, m, i, 1e-7)


@pytest.mark.parametrize("kind", CRF_KINDS)
@cfg(40)
@given(seed=hs.integers(0, 2**31 - 1), data=hs.data())
def test_log_partition_gradient_is_the_marginals(kind, seed, data):
    inst, theta = data.draw(problems((kind,), ("normal", "ties")), label="problem")
    st = inst.st
    mu = st.marginals(theta)
    rng = np.random.RandomState(seed)
    h = 1e-5
    for _ in range(2):
        d = inst.shape(rng.randn(inst.total))
        fd = (st.log_partition(theta + h * d) - st.log_partition(theta - h * d)) / (2 * h)
        # central differences of a function with derivatives bounded by the
        # number of parts: O(h^2 |d|^3) error plus round-off eps*scale/h
        np.testing.assert_allclose(fd, st.dot(mu, d), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("st", [Permutahedron(3), Birkhoff(3)], ids=["perm", "birkhoff"])
def test_crf_is_refused_where_marginals_are_intractable(st):
    with pytest.raises(IntractableError, match="sparsemap"):
        CRF().check(st)
    with pytest.raises(IntractableError):
        st.log_partition(np.zeros((1, st.n_parts)))


# ---------------------------------------------------------------------------
# 4. projections
# ---------------------------------------------------------------------------
def projection_cases(st):
    out = [("marginal", "euclidean")]
    for set_, geoms in st.projection_sets.items():
        out += [(set_, g) for g in geoms]
    return out


ITERATIVE_SETS = {"birkhoff", "chain", "tree"}


PROJECTION_CASES = [(kind, set_, g) for kind in KINDS
                    for set_, g in projection_cases(make_inst(kind, **DEFAULT_KW[kind]).st)]


@pytest.mark.parametrize("kind,set_,geometry", PROJECTION_CASES)
@cfg(50)
@given(data=hs.data())
def test_projections_are_feasible_and_optimal(kind, set_, geometry, data):
    # huge scores underflow exp(theta - 1) to 0 (no interior KL certificate)
    regimes = REGIMES if geometry == "euclidean" else ("normal", "ties", "constant")
    inst, theta = data.draw(problems((kind,), regimes), label="problem")
    st = inst.st
    u = st.project(theta, set_, geometry)
    assert np.shape(u) == np.shape(theta) and np.all(np.isfinite(u))
    resolved = st.check_projection(set_, geometry)
    note(f"{resolved} {geometry}")
    for i, (ui, th) in enumerate(zip(inst.split(u), inst.split(theta))):
        factors = inst.set_factors(i, resolved)
        scale = scale_of(th)
        p = len(ui)
        if resolved == "birkhoff":
            # a point within BIRKHOFF_TOL of each of the 2k row/column sums
            feas = 2 * st.n_labels * BIRKHOFF_TOL
        elif resolved in ("chain", "tree"):
            feas = 1e-9     # convex weights of the active set, to round-off
        else:
            feas = EXACT * scale * p
        assert_in_set(factors, ui, max(feas, 1e-9))
        if geometry == "euclidean":
            # u = P_C(theta) iff <theta - u, v - u> <= 0 for every v in C
            g = th - ui
            gap = vi_gap(factors, g, ui)
        else:
            # u = argmin_C sum u log u - u theta iff <theta - 1 - log u, v - u> <= 0
            with np.errstate(divide="ignore"):
                g = th - 1.0 - np.log(ui)
            factors = [(idx, V) for idx, V in factors if len(V) > 1]
            for idx, _ in factors:
                assert np.all(ui[idx] > 0), "KL projections are interior"
            if not factors:
                continue
            gap = vi_gap(factors, g, ui)
        gmax = 1.0 + np.abs(g[np.isfinite(g)]).max()
        if resolved in ("chain", "tree"):      # the active set's Frank-Wolfe gap
            tol = SOLVER_TOL * scale
        elif resolved == "birkhoff":           # sum violations times |g|
            tol = feas * gmax
        else:
            tol = 0.0
        _log_gap(gap, resolved, geometry, scale)
        assert gap <= tol + EXACT * scale * gmax * p, gap


def _log_gap(gap, *info):
    if os.environ.get("GAPLOG"):
        with open(os.environ["GAPLOG"], "a") as f:
            f.write(" ".join(map(str, (gap, *info))) + "\n")


# ---------------------------------------------------------------------------
# 5. SparseMAP
# ---------------------------------------------------------------------------
def assert_sparsemap_optimal(inst, i, th, m):
    """mu maximises <theta, mu> - 1/2 ||mu_U||^2 over the marginal polytope
    iff mu is in it and <theta - [mu_U; 0], v - mu> <= 0 for every vertex."""
    _, Phi = inst.vertices(i)
    scale = scale_of(th)
    assert_in_factor(Phi, m, 1e-7)
    g = th - np.where(inst.unary(i), m, 0.0)
    gap = float(np.max((Phi - m) @ g))
    _log_gap(gap, "sparsemap", scale)
    # the solvers stop at a Frank-Wolfe gap below SOLVER_TOL * scale
    assert gap <= SOLVER_TOL * scale + EXACT * scale ** 2 * len(m), gap


@pytest.mark.parametrize("kind", KINDS)
@cfg(60)
@given(data=hs.data())
def test_sparsemap_marginals_are_optimal_and_in_the_polytope(kind, data):
    inst, theta = data.draw(problems((kind,), REGIMES), label="problem")
    st = inst.st
    mu = st.sparsemap(theta)
    assert np.shape(mu) == np.shape(theta)
    for i, (m, th) in enumerate(zip(inst.split(mu), inst.split(theta))):
        assert_sparsemap_optimal(inst, i, th, m)
    if st.n_unary is not None and np.all(np.asarray(st.n_unary) == np.asarray(inst.sizes())):
        # every part penalised: SparseMAP is the projection onto the polytope
        np.testing.assert_allclose(st.project(theta), mu, atol=1e-6)


@hs.composite
def single_problems(draw, kinds=KINDS, regimes=("normal", "ties", "constant")):
    """Problems of one sample (``sparsemap_support`` works on one)."""
    inst = draw(instances(kinds))
    if inst.ragged:
        inst = make_inst(inst.kind, **{**inst.kw, "lengths": inst.kw["lengths"][:1]})
    else:
        inst = make_inst(inst.kind, 1, **inst.kw)
    return inst, draw(scores(inst, regimes))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("method", ["active-set", "vanilla", "away-step", "pairwise"])
@cfg(40)
@given(data=hs.data())
def test_sparsemap_support_is_a_sparse_distribution_over_structures(kind, method, data):
    inst, theta = data.draw(single_problems((kind,)), label="problem")
    st = inst.st
    th = inst.split(theta)[0]
    max_iter = 1000
    mu, V, w, n_iter = st.sparsemap_support(th if not inst.ragged else theta,
                                            method=method, max_iter=max_iter)
    _, Phi = inst.vertices(0)
    # weights on the simplex, active vertices valid, mu their weighted sum
    assert np.all(w > 0) and abs(w.sum() - 1.0) <= 1e-9, w
    assert len(w) == len(V) >= 1
    d = np.abs(V[:, None, :] - Phi[None, :, :]).max(axis=2)
    assert np.all(d.min(axis=1) <= 1e-12), "an active vertex is not a structure"
    assert len(set(d.argmin(axis=1).tolist())) == len(V), "duplicate active vertex"
    np.testing.assert_allclose(w @ V, mu, atol=1e-9 * len(w))
    if method == "active-set" or n_iter < max_iter:
        # converged: optimal, and its unary part equals the batch solver's
        # (the objective is strictly concave in mu_U)
        assert_sparsemap_optimal(inst, 0, th, mu)
        u = inst.unary(0)
        batch = inst.split(st.sparsemap(theta))[0]
        # the batch solve is exact to round-off; a conditional-gradient
        # variant stops at a Frank-Wolfe gap g < 1e-9 (1 + max|theta|),
        # which bounds the objective gap, hence (strong concavity in mu_U)
        # ||mu_U - mu*_U|| <= sqrt(2 g)
        gap_bound = 1e-9 * scale_of(th)
        tol = 1e-7 if method == "active-set" else 1.01 * np.sqrt(2 * gap_bound) + 1e-9
        assert np.linalg.norm(mu[u] - batch[u]) <= tol


@pytest.mark.parametrize("kind", ["chain", "tree"])
@cfg(40)
@given(data=hs.data())
def test_warm_started_sparsemap_is_still_optimal(kind, data):
    """Chains and trees with a support cache: every solve starts from the
    previous solve's supports, at other scores; the result is the optimum."""
    inst, theta = data.draw(problems((kind,), REGIMES), label="problem")
    st = inst.st
    st.warm_cache = SupportCache()
    for _ in range(3):
        mu = st.sparsemap(theta)
        proj = st.project(theta, "marginal")
        for i, (m, pr, th) in enumerate(zip(inst.split(mu), inst.split(proj),
                                            inst.split(theta))):
            assert_sparsemap_optimal(inst, i, th, m)
            _, Phi = inst.vertices(i)
            assert_in_factor(Phi, pr, 1e-9)
            gap = float(np.max((Phi - pr) @ (th - pr)))
            assert gap <= SOLVER_TOL * scale_of(th) + EXACT * scale_of(th) ** 2 * len(pr)
        theta = data.draw(scores(inst, REGIMES), label="next theta")


@pytest.mark.parametrize("kind", KINDS)
@cfg(40)
@given(data=hs.data())
def test_sparsemap_jacobian_matches_finite_differences(kind, data):
    """``sparsemap_jvp`` on the active set's support: the derivative of the
    unary marginals, piecewise linear in theta; at a generic point the
    support is the same at theta +- h d and central differences are exact
    up to round-off."""
    inst, theta = data.draw(single_problems((kind,), ("normal",)), label="problem")
    st = inst.st
    rng = np.random.RandomState(data.draw(hs.integers(0, 2**31 - 1), label="seed"))
    theta = theta + 1e-3 * inst.shape(rng.randn(inst.total))
    d = inst.shape(rng.randn(inst.total))
    h = 1e-7

    def support(t):
        t = inst.split(t)[0] if not inst.ragged else t
        return st.sparsemap_support(t)

    mu, V, w, _ = support(theta)
    keys = [sorted(map(tuple, np.round(support(t)[1], 6).tolist()))
            for t in (theta, theta + h * d, theta - h * d)]
    assume(keys[0] == keys[1] == keys[2])
    u = inst.unary(0)
    nu = int(u.sum())
    jvp = sparsemap_jvp(V, w, nu, inst.split(d)[0])
    fd = (inst.split(st.sparsemap(theta + h * d))[0][u]
          - inst.split(st.sparsemap(theta - h * d))[0][u]) / (2 * h)
    # solver stopping error (SOLVER_TOL scale, exact on a fixed support up
    # to round-off) divided by h
    np.testing.assert_allclose(jvp, fd, atol=1e-5 * (1 + np.abs(d).max()))


# ---------------------------------------------------------------------------
# 6. losses
# ---------------------------------------------------------------------------
def all_losses(st):
    """Every loss (and every projection set x geometry) applicable to st."""
    out = [Perceptron(), Hinge("margin"), Hinge("approx-slack"), PosLearn(), CRF(),
           SparseMAP(), SparseMAP(margin=True), Squared()]
    if st.has_exact_slack:
        out.append(Hinge("slack"))
    out += [Projection(s, g) for s, g in projection_cases(st)]
    ok = []
    for loss in out:
        try:
            loss.check(st)
        except IntractableError:
            continue
        ok.append(loss)
    return ok


def brute_loss(inst, loss, theta, y):
    """Enumerated value of the max-margin / perceptron / CRF losses per
    sample (None where there is no closed enumeration)."""
    out = []
    for i, lab in enumerate(inst.split_labels(y)):
        labels, Phi = inst.vertices(i)
        sc = Phi @ inst.split(theta)[i]
        a = inst.label_index(i, lab)
        L = np.array([inst.cost(i, v, lab) for v in labels])
        if isinstance(loss, Perceptron):
            out.append(sc.max() - sc[a])
        elif isinstance(loss, Hinge) and loss.scaling == "margin":
            out.append(np.max(sc + L) - sc[a])
        elif isinstance(loss, Hinge):       # exact slack scaling
            out.append(np.max(L * np.maximum(1.0 - sc[a] + sc, 0.0)))
        elif isinstance(loss, CRF):
            out.append(logsumexp(sc) - sc[a])
        elif isinstance(loss, PosLearn):
            pos = np.array([inst.positions(v) for v in labels])
            p_y = inst.positions(lab)
            total = 0.0
            for c in range(len(p_y)):
                other = pos[:, c] != p_y[c]
                if other.any():
                    costs = np.array([inst.position_cost(c, v, p_y[c]) for v in pos[:, c]])
                    total += np.max(np.where(other, costs * np.maximum(
                        1.0 - sc[a] + sc, 0.0), 0.0))
            out.append(total)
        else:
            return None
    return np.array(out)


def psi(loss, inst, u):
    """The regulariser Psi of a Fenchel-Young loss, per sample."""
    if isinstance(loss, Projection) and loss.geometry == "kl":
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(u > 0, u * np.log(np.where(u > 0, u, 1.0)), 0.0)
        return np.array([b.sum() for b in inst.split(t)])
    if isinstance(loss, SparseMAP):
        return np.array([0.5 * np.sum(b[inst.unary(i)] ** 2)
                         for i, b in enumerate(inst.split(u))])
    return np.array([0.5 * np.sum(b ** 2) for b in inst.split(u)])


def bregman(loss, inst, phi, mu):
    """D_Psi(phi, mu): a lower bound of every Fenchel-Young loss with a
    (restricted) Bregman projection, ``L(theta, y) >= D_Psi(phi(y), mu)``
    (Blondel 2019, Prop. 3)."""
    out = []
    for i, (p, m) in enumerate(zip(inst.split(phi), inst.split(mu))):
        if isinstance(loss, Projection) and loss.geometry == "kl":
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / m), 0.0)
            out.append(np.sum(t - p + m))
        elif isinstance(loss, SparseMAP):
            u = inst.unary(i)
            out.append(0.5 * np.sum((p[u] - m[u]) ** 2))
        else:
            out.append(0.5 * np.sum((p - m) ** 2))
    return np.array(out)


FY_SMOOTH = (SparseMAP, Projection, Squared)
CONVEX = (Perceptron, PosLearn, CRF, SparseMAP, Projection, Squared)


def is_convex(loss):
    return isinstance(loss, CONVEX) or (isinstance(loss, Hinge)
                                        and loss.scaling != "approx-slack")


LOSS_CASES = [pytest.param(kind, loss, id=f"{kind}-{loss}") for kind in KINDS
              for loss in all_losses(make_inst(kind, **DEFAULT_KW[kind]).st)]


@pytest.mark.parametrize("kind,loss", LOSS_CASES)
@cfg(40)
@given(data=hs.data())
def test_losses_match_their_definitions(kind, loss, data):
    inst, theta = data.draw(problems((kind,)), label="problem")
    st = inst.st
    y = data.draw(labels_of(inst), label="y")
    value, grad = loss.value_and_grad(theta, y, st)
    scale = scale_of(theta)
    tol = 1e-7 * scale ** 2 * inst.total
    assert np.shape(grad) == np.shape(theta)
    assert np.all(np.isfinite(value)) and np.all(np.isfinite(grad))
    assert np.all(value >= 0.0)
    phi = st.encode(y)
    ref = brute_loss(inst, loss, theta, y)
    if isinstance(loss, Hinge) and loss.scaling == "approx-slack":
        # a lower bound of exact slack scaling, attained by a labeling met
        exact = brute_loss(inst, Hinge("slack"), theta, y)
        assert np.all(value <= exact + tol), (value, exact)
    elif ref is not None:
        np.testing.assert_allclose(value, ref, atol=tol, rtol=1e-9)
    if isinstance(loss, Hinge) and loss.scaling in ("margin", "slack"):
        # both upper-bound the task cost of the MAP prediction
        y_hat = inst.split_labels(st.argmax(theta))
        for i, (lab, yh) in enumerate(zip(inst.split_labels(y), y_hat)):
            assert value[i] >= inst.cost(i, yh, lab) - tol
    if isinstance(loss, FY_SMOOTH):
        # m-SparseMAP is SparseMAP at the cost-augmented scores
        th = theta + st.cost_vector(phi) if getattr(loss, "margin", False) else theta
        mu = loss.mean(th, st)
        np.testing.assert_allclose(grad, mu - phi, atol=1e-9 * scale)
        # the Fenchel-Young value <theta, mu - phi> - Psi(mu) + Psi(phi),
        # before the library's clip at 0: non-negative by itself
        raw = st.dot(th, mu - phi) - psi(loss, inst, mu) + psi(loss, inst, phi)
        assert np.all(raw >= -tol), raw
        np.testing.assert_allclose(value, np.maximum(raw, 0.0), atol=tol)
        assert np.all(value >= bregman(loss, inst, phi, mu) - tol)
    if isinstance(loss, CRF):
        np.testing.assert_allclose(grad, st.marginals(theta) - phi, atol=1e-12)


def confident_theta(inst, loss, y, s):
    """A score vector at which ``loss`` vanishes for ``y`` (in the limit
    ``s -> inf`` for the entropic ones): ``grad Psi(phi(y)) + s n`` with
    ``n`` a direction of the normal cone of the loss's set at ``phi(y)``
    that makes ``phi(y)`` its unique maximiser (Fenchel-Young losses vanish
    iff ``theta`` is in the subdifferential of ``Omega = Psi + I_C`` at
    ``phi(y)``; the max-margin ones once the margin exceeds the cost)."""
    set_ = (inst.st.check_projection(loss.set, loss.geometry)
            if isinstance(loss, Projection) else None)
    blocks = []
    for i, lab in enumerate(inst.split_labels(y)):
        _, Phi = inst.vertices(i)
        phi = Phi[inst.label_index(i, lab)]
        if isinstance(loss, Projection) and loss.geometry == "kl":
            with np.errstate(divide="ignore"):
                base = np.where(phi > 0, 1.0 + np.log(phi), 0.0)
        elif isinstance(loss, Projection):
            base = phi
        elif isinstance(loss, SparseMAP):
            base = np.where(inst.unary(i), phi, 0.0)
        else:
            base = np.zeros_like(phi)
        blocks.append(base + s * inst.normal(i, phi, set_))
    return inst.shape(inst.join(blocks))


def entropic(loss):
    return isinstance(loss, CRF) or getattr(loss, "geometry", None) == "kl"


@pytest.mark.parametrize("kind,loss", LOSS_CASES)
@cfg(30)
@given(data=hs.data())
def test_losses_vanish_exactly_at_a_confident_correct_score_vector(kind, loss, data):
    inst = data.draw(instances((kind,)), label="inst")
    st = inst.st
    y = data.draw(labels_of(inst), label="y")
    phi = st.encode(y)
    # entropic losses reach 0 only in the limit, up to exp(-s) terms
    s = 40.0 if entropic(loss) else 3.0
    theta = phi if isinstance(loss, Squared) else confident_theta(inst, loss, y, s)
    value, grad = loss.value_and_grad(theta, y, st)
    p = inst.total
    # round-off of <theta, mu - phi> terms; the iterative solvers stop within
    # 1e-9 of feasibility (relative to the scale); exp(-40) for the entropic
    if entropic(loss):
        tol = 1e-12 * p
    elif isinstance(loss, Projection) and st.check_projection(loss.set, "euclidean") \
            == "birkhoff":
        tol = BIRKHOFF_TOL * s * p
    else:
        tol = EXACT * s * p
    assert np.all(np.abs(value) <= tol), value
    if isinstance(loss, (CRF, Projection, SparseMAP, Squared)):
        assert np.all(np.abs(grad) <= 1e-7), np.abs(grad).max()
    # ... and only there: the same scores cost something for any other y'
    if isinstance(loss, Hinge) and loss.scaling == "approx-slack":
        return
    for i, lab in enumerate(inst.split_labels(y)):
        labels, _ = inst.vertices(i)
        if len(labels) == 1:
            continue
        other = labels[(inst.label_index(i, lab) + 1) % len(labels)]
        y_other = inst.join_labels([other if j == i else l2
                                    for j, l2 in enumerate(inst.split_labels(y))])
        v2, _ = loss.value_and_grad(theta, y_other, st)
        assert v2[i] > 100 * tol, (loss, v2)


@pytest.mark.parametrize("kind,loss", [c for c in LOSS_CASES if is_convex(c.values[1])])
@cfg(30)
@given(data=hs.data())
def test_loss_subgradient_inequality(kind, loss, data):
    """Convex losses: L(theta + d) >= L(theta) + <g, d> for every d, with g
    the returned (sub)gradient; holds at ties and kinks too."""
    inst, theta = data.draw(problems((kind,)), label="problem")
    st = inst.st
    y = data.draw(labels_of(inst), label="y")
    value, grad = loss.value_and_grad(theta, y, st)
    rng = np.random.RandomState(data.draw(hs.integers(0, 2**31 - 1), label="seed"))
    for step in (1e-3, 0.1, 3.0):
        d = inst.shape(step * rng.randn(inst.total))
        v2, _ = loss.value_and_grad(theta + d, y, st)
        tol = 1e-6 * (scale_of(theta) + step) ** 2 * inst.total
        assert np.all(v2 >= value + st.dot(grad, d) - tol), (v2, value + st.dot(grad, d))


@pytest.mark.parametrize("kind,loss", [c for c in LOSS_CASES if c.values[1].smooth])
@cfg(30)
@given(data=hs.data())
def test_smooth_loss_gradients_match_central_differences(kind, loss, data):
    inst, theta = data.draw(problems((kind,), ("normal",)), label="problem")
    st = inst.st
    y = data.draw(labels_of(inst), label="y")
    rng = np.random.RandomState(data.draw(hs.integers(0, 2**31 - 1), label="seed"))
    # a generic point: SparseMAP on chains does not penalise the transition
    # parts, so at ties (e.g. theta = 0) the optimal transition marginals
    # form a face and the loss has a kink there (the subgradient test covers
    # kinks); a random jitter makes the maximiser unique almost surely
    theta = theta + 1e-3 * inst.shape(rng.randn(inst.total))
    _, grad = loss.value_and_grad(theta, y, st)
    h = 1e-5
    for _ in range(2):
        d = inst.shape(rng.randn(inst.total))
        fp, _ = loss.value_and_grad(theta + h * d, y, st)
        fm, _ = loss.value_and_grad(theta - h * d, y, st)
        # gradients are Lipschitz (1 for the Euclidean losses, the part
        # count for CRF/KL at these scales): the central difference is
        # exact up to O(h |d|^2) at kinks of the gradient, round-off
        # eps * |value| / h, and the iterative solvers' tolerance / h
        np.testing.assert_allclose((fp - fm) / (2 * h), st.dot(grad, d),
                                   rtol=1e-4, atol=1e-4 * inst.total)


# ---------------------------------------------------------------------------
# 7. numerical robustness: huge scores, ties, degenerate sizes
# ---------------------------------------------------------------------------
EDGE = [
    ("cube", dict(k=1)), ("knapsack", dict(k=1, lower=0, upper=1)),
    ("knapsack", dict(k=1, lower=1, upper=1)), ("knapsack", dict(k=3, lower=0, upper=0)),
    ("knapsack", dict(k=3, lower=3, upper=3)), ("order", dict(k=2)),
    ("perm", dict(k=1)), ("perm", dict(k=2)), ("birkhoff", dict(k=1)),
    ("birkhoff", dict(k=2)),
    ("chain", dict(K=1, lengths=[1])), ("chain", dict(K=1, lengths=[3, 1])),
    ("chain", dict(K=3, lengths=[1])), ("chain", dict(K=2, lengths=[1, 2])),
    *[("tree", dict(lengths=ls, single_root=sr, projective=pj))
      for ls in ([1], [1, 2], [3, 1]) for sr in (True, False) for pj in (True, False)],
]


@hs.composite
def edge_or_any(draw, kind):
    edges = [e for e in EDGE if e[0] == kind]
    if draw(hs.booleans()):
        kind, kw = draw(hs.sampled_from(edges))
        n = 1 if kind in ("chain", "tree") else draw(hs.integers(1, 2))
        return make_inst(kind, n, **kw) if kind not in ("chain", "tree") else \
            make_inst(kind, **kw)
    return draw(instances((kind,)))


@pytest.mark.parametrize("kind", KINDS)
@cfg(60)
@given(data=hs.data())
def test_every_oracle_and_loss_is_finite_and_valid_on_extreme_inputs(kind, data):
    inst = data.draw(edge_or_any(kind), label="inst")
    st = inst.st
    theta = data.draw(scores(inst, ("huge", "mixed", "constant-huge", "constant", "ties")),
                      label="theta")
    y = data.draw(labels_of(inst), label="y")
    scale = scale_of(theta)
    # MAP and top-2: valid structures, MAP optimal
    for out in (st.argmax(theta), st.second_best(theta, y),
                st.calibrated_decode(theta)):
        for i, lab in enumerate(inst.split_labels(out)):
            inst.label_index(i, lab)
    s_map = st.scores(theta, st.argmax(theta))
    for i in range(inst.n):
        best = sample_scores(inst, theta, i).max()
        assert abs(s_map[i] - best) <= EXACT * (1.0 + np.abs(inst.split(theta)[i]).sum())
    # marginals and log-partition
    try:
        mu, logZ = st.marginals_and_log_partition(theta)
    except IntractableError:
        mu = None
    if mu is not None:
        assert np.all(np.isfinite(mu)) and np.all(np.isfinite(logZ)), (mu, logZ)
        for i, m in enumerate(inst.split(mu)):
            sc = sample_scores(inst, theta, i)
            # max <= log Z <= max + log N
            tol = EXACT * (scale + np.abs(sc).max())
            assert sc.max() - tol <= logZ[i] <= sc.max() + np.log(len(sc)) + tol
            assert_marginal_sum_rules(inst, m, i, 1e-7)
            _, Phi = inst.vertices(i)
            assert_in_factor(Phi, m, 1e-6)
    # projections onto every set, both geometries
    for set_, geometry in projection_cases(st):
        u = st.project(theta, set_, geometry)
        assert np.all(np.isfinite(u)), (set_, geometry)
        resolved = st.check_projection(set_, geometry)
        for i, ui in enumerate(inst.split(u)):
            assert_in_set(inst.set_factors(i, resolved), ui, 1e-6)
    # SparseMAP
    mu = st.sparsemap(theta)
    assert np.all(np.isfinite(mu))
    for i, m in enumerate(inst.split(mu)):
        assert_in_factor(inst.vertices(i)[1], m, 1e-6)
    # every loss: finite, non-negative
    for loss in all_losses(st):
        value, grad = loss.value_and_grad(theta, y, st)
        assert np.all(np.isfinite(value)) and np.all(np.isfinite(grad)), loss
        assert np.all(value >= 0.0), (loss, value)
        assert np.shape(grad) == np.shape(theta)


@pytest.mark.parametrize("kind", KINDS)
@cfg(40)
@given(seed=hs.integers(0, 2**31 - 1), data=hs.data())
def test_oracles_are_finite_and_valid_on_larger_extreme_instances(kind, seed, data):
    """Sizes beyond enumeration (chains of 8 tokens, 7-word sentences,
    12 labels ...) with scores up to 1e6: valid MAP beating random
    structures, marginals / SparseMAP / projections finite and satisfying
    the polytope's linear constraints, every loss finite and >= 0."""
    inst = data.draw(instances((kind,), big=True), label="inst")
    st = inst.st
    theta = data.draw(scores(inst, ("huge", "mixed", "constant-huge", "ties")), label="theta")
    rng = np.random.RandomState(seed)
    y = inst.join_labels([random_label(inst, i, rng) for i in range(inst.n)])
    y_map = st.argmax(theta)
    for i, lab in enumerate(inst.split_labels(y_map)):
        assert valid_label(inst, i, lab)
    assert np.all(st.scores(theta, y_map) >= st.scores(theta, y)
                  - EXACT * (1.0 + np.abs(theta).sum()))
    for i, lab in enumerate(inst.split_labels(st.second_best(theta, y))):
        assert valid_label(inst, i, lab)
    points = [st.sparsemap(theta), st.project(theta, "marginal")]
    if kind in CRF_KINDS:
        mu, logZ = st.marginals_and_log_partition(theta)
        assert np.all(np.isfinite(logZ))
        assert np.all(logZ >= st.scores(theta, y_map) - EXACT * (1.0 + np.abs(theta).sum()))
        points.append(mu)
    for mu in points:
        for i, m in enumerate(inst.split(mu)):
            assert_marginal_sum_rules(inst, m, i, 1e-7)
    for set_, geometry in projection_cases(st):
        assert np.all(np.isfinite(st.project(theta, set_, geometry)))
    for loss in all_losses(st):
        value, grad = loss.value_and_grad(theta, y, st)
        assert np.all(np.isfinite(value)) and np.all(np.isfinite(grad)), loss
        assert np.all(value >= 0.0), (loss, value)


# ---------------------------------------------------------------------------
# 8. regressions: examples found by the properties above (deeper runs)
# ---------------------------------------------------------------------------
def _chain_1e5():
    theta = np.full(18, 131071.001)
    theta[15] = 393217.0
    return make_inst("chain", K=3, lengths=[1]), theta, np.array([0])


@pytest.mark.parametrize("loss,case", [
    # round-off: <theta, phi_hat - phi> = -1.9e-266 after a tie in the cumsum
    (Perceptron(), lambda: (make_inst("order", k=3),
                            np.array([[1.0, 1.90720517e-266]]), np.array([2]))),
    # a single structure: log Z - s(y) = -2.2e-16
    (CRF(), lambda: (make_inst("knapsack", k=3, lower=3, upper=3),
                     np.array([[1e-6, 1.0, 1e-6]]), np.array([[1, 1, 1]]))),
    # scores of 1e5: log Z - s(y) = -1.2e-10
    (CRF(), _chain_1e5),
    # one label to rank: L_max = 0 made the lambda search divide 0 by 0
    (Hinge("approx-slack"), lambda: (make_inst("perm", k=1), np.array([[1e6]]),
                                     np.array([[1]]))),
], ids=["order-perceptron-tiny", "knapsack-crf-single", "chain-crf-1e5",
        "perm1-approx-slack"])
def test_found_examples_give_non_negative_finite_losses(loss, case):
    inst, theta, y = case()
    value, grad = loss.value_and_grad(theta, y, inst.st)
    assert np.all(value >= 0.0) and np.all(np.isfinite(grad))
