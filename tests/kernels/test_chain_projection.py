"""The projection onto the chain polytope as coupled pieces equals the active
set on the whole chain (structlearn.kernels.chain_projection,
Chain._marginal_projection on long chains)."""

import numpy as np
import pytest

import structlearn.structures.chain as chain_mod
from structlearn.kernels.chain_projection import chain_projection_pieces
from structlearn.structures import Chain
from structlearn.structures.base import RaggedStructure


def _whole(theta, tok_off, K, known=None, tol=1e-12):
    """The projection by the active set on every whole sequence (the
    reference), to a tight tolerance."""
    ch = Chain(K, tok_off, known=known)
    return ch._active_set(ch._theta(theta), ch.block_sizes, 100_000, tol)


def _objective(theta, mu):
    return 0.5 * np.sum((mu - theta) ** 2)


@pytest.mark.parametrize("seed", range(8))
def test_fixed_positions_are_the_restricted_projection(seed):
    # with positions fixed by hand, the pieces' point is the projection
    # onto the chain polytope restricted to those tags -- the active set on
    # the whole chain with the other tags forbidden there (``known``)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        K = int(rng.integers(2, 5))
        L = int(rng.integers(2, 30))
        theta = rng.normal(scale=rng.choice([0.3, 1.0, 3.0]), size=L * K + K * K + 2 * K)
        fixed = np.where(rng.random(L) < 0.3, rng.integers(0, K, L), -1).astype(np.int64)
        mu = np.empty_like(theta)
        _, _, converged = chain_projection_pieces(theta, L, K, fixed, theta[L * K:].copy(),
                                                  1000, 1e-10, mu)
        assert converged
        known = np.where(fixed >= 0, fixed, -1)
        ref = _whole(theta, np.array([0, L]), K, known=known)
        np.testing.assert_allclose(mu, ref, atol=1e-6)
        assert abs(_objective(theta, mu) - _objective(theta, ref)) < 1e-7 * (1 + _objective(
            theta, ref))
        # a point of the polytope: per-position marginals, counts of L - 1
        # transitions, one start and one end
        U = mu[:L * K].reshape(L, K)
        np.testing.assert_allclose(U.sum(1), 1.0, atol=1e-9)
        assert abs(mu[L * K:L * K + K * K].sum() - (L - 1)) < 1e-9
        assert abs(mu[-2 * K:-K].sum() - 1) < 1e-9 and abs(mu[-K:].sum() - 1) < 1e-9
        assert mu.min() > -1e-12
        for t in np.flatnonzero(fixed >= 0):
            assert U[t, fixed[t]] == 1.0


def test_every_position_fixed_is_that_sequence():
    rng = np.random.default_rng(0)
    K, L = 3, 6
    theta = rng.normal(size=L * K + K * K + 2 * K)
    y = rng.integers(0, K, L).astype(np.int64)
    mu = np.empty_like(theta)
    assert chain_projection_pieces(theta, L, K, y, theta[L * K:].copy(), 10, 1e-9,
                                   mu) == (0, 0, True)
    np.testing.assert_array_equal(mu, Chain(K, np.array([0, L])).encode(y))


@pytest.mark.parametrize("seed", range(4))
def test_long_and_short_batch_equals_the_active_set(monkeypatch, seed):
    # a batch mixing long sequences (pieces) and short ones (active set)
    # equals the active set on every whole sequence; the scores of a trained
    # chain are near-integral, these random ones are not: both kinds
    monkeypatch.setattr(chain_mod, "PROJECTION_PIECES_MIN_LENGTH", 15)
    rng = np.random.default_rng(seed)
    K = 3
    tok_off = np.concatenate(([0], np.cumsum([4, 40, 9, 25])))
    ch = Chain(K, tok_off)
    theta = rng.normal(scale=[0.5, 2.0, 5.0, 1.0][seed], size=ch.n_parts)
    mu = ch.project(theta)
    ref = RaggedStructure._marginal_projection(Chain(K, tok_off), theta)
    exact = _whole(theta, tok_off, K)
    np.testing.assert_allclose(mu, exact, atol=1e-6)
    np.testing.assert_allclose(ref, exact, atol=1e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_trained_scores_long_chain(monkeypatch):
    # scores of a CRF trained on the bundled EWT sample, 12 sentences joined
    # into one chain of ~200 tokens (17 tags): the pieces (whose dual has
    # kinks there: vertices affinely dependent in their unary parts) agree
    # with the active set on the whole chain
    from structlearn import SequenceTagger
    from structlearn.datasets import load_ewt_pos

    X, y = load_ewt_pos("train")
    est = SequenceTagger(loss="crf", max_iter=30).fit(X[:300], y[:300])
    toks = [t for s in X[300:312] for t in s]
    L, K = len(toks), len(est.classes_)
    U = est.decision_function([toks])[0]
    theta = np.concatenate([U.ravel(), est.transition_.ravel(), est.start_, est.end_])
    monkeypatch.setattr(chain_mod, "PROJECTION_PIECES_MIN_LENGTH", 100)
    ch = Chain(K, np.array([0, L]))
    mu = ch.project(theta)
    exact = _whole(theta, np.array([0, L]), K, tol=1e-10)
    np.testing.assert_allclose(mu, exact, atol=1e-6)


def test_constrained_chains_keep_the_active_set(monkeypatch):
    # transition constraints: the whole-sequence active set as before
    monkeypatch.setattr(chain_mod, "PROJECTION_PIECES_MIN_LENGTH", 100)
    K, L = 3, 150
    allowed = (np.ones((K, K), dtype=bool), np.ones(K, dtype=bool), np.ones(K, dtype=bool))
    allowed[0][0, 1] = False
    rng = np.random.default_rng(1)
    ch = Chain(K, np.array([0, L]), allowed=allowed)
    theta = rng.normal(size=ch.n_parts)
    mu = ch.project(theta)
    ref = RaggedStructure._marginal_projection(Chain(K, np.array([0, L]), allowed=allowed),
                                               theta)
    np.testing.assert_allclose(mu, ref, atol=1e-9)
    assert mu[L * K + 1] == 0.0   # the forbidden transition 0 -> 1


def test_a_failing_kernel_falls_back_to_the_active_set(monkeypatch):
    # a LinAlgError inside the pieces' kernel (a singular subproblem) must
    # not fail a fit: the whole-chain active set answers instead
    def singular(*args):
        raise np.linalg.LinAlgError("singular matrix")

    monkeypatch.setattr(chain_mod, "chain_projection_pieces", singular)
    monkeypatch.setattr(chain_mod, "PROJECTION_PIECES_MIN_LENGTH", 10)
    rng = np.random.default_rng(0)
    tok_off = np.array([0, 30])
    theta = rng.normal(size=Chain(3, tok_off).n_parts)
    np.testing.assert_allclose(Chain(3, tok_off).project(theta),
                               RaggedStructure._marginal_projection(Chain(3, tok_off), theta),
                               atol=1e-12)


def test_projection_dual_gradient_is_sparsemap_counts():
    # the dual that places the pieces: its gradient (SparseMAP's counts) is
    # the derivative of its value, by central differences at a random point
    # (SparseMAP's counts are unique there)
    rng = np.random.default_rng(5)
    K, L = 3, 12
    a, b = rng.normal(size=L * K), rng.normal(size=K * K + 2 * K)
    dual = chain_mod._ProjectionDual(Chain(K, np.array([0, L])), a, b)
    z = rng.normal(size=len(b))
    _, grad = dual.value_and_grad(z)
    eps = 1e-6
    for j in range(len(b)):
        e = np.zeros(len(b))
        e[j] = eps
        num = (dual.value_and_grad(z + e)[0][0] - dual.value_and_grad(z - e)[0][0]) / (2 * eps)
        assert abs(num - grad[j]) < 1e-5
    # the counts of a point of the polytope: L - 1 transitions, one start, one end
    assert abs(grad[:K * K].sum() - (L - 1)) < 1e-9 and abs(grad[K * K:].sum() - 2) < 1e-9
