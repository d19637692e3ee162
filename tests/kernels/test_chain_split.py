"""Chain SparseMAP by certified splitting equals the active set on the
whole chain (structlearn.kernels.chain_split, Chain.sparsemap)."""

import numpy as np
import pytest

import structlearn.structures.chain as chain_mod
from structlearn.kernels.chain import chain_map
from structlearn.kernels.chain_split import (
    chain_sparsemap_gap,
    chain_solve_pieces,
    sparsemap_chain_split,
)
from structlearn.kernels.sparsemap import sparsemap_active_set
from structlearn.structures import Chain
from structlearn.structures.base import RaggedStructure, SupportCache


def _objective(eta, mu, L, K):
    return eta @ mu - 0.5 * mu[:L * K] @ mu[:L * K]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("min_gap", [0.0, 1.0, 1e9])
def test_split_equals_whole_chain(seed, min_gap):
    # min_gap 0: every MAP tag guessed certain (most guesses wrong, the
    # certificate must drop them); 1e9: no split (the plain active set)
    rng = np.random.default_rng(seed)
    for _ in range(15):
        K = int(rng.integers(1, 5))
        L = int(rng.integers(1, 25))
        eta = rng.normal(scale=rng.choice([0.3, 1.0, 3.0, 10.0]), size=L * K + K * K + 2 * K)
        ref = sparsemap_active_set(eta, L * K, chain_map, np.array([L, K], float), 1000,
                                   1e-9)[0]
        mu = np.empty_like(eta)
        sparsemap_chain_split(eta, L, K, chain_map, 1000, 1e-9, min_gap, mu)
        np.testing.assert_allclose(mu[:L * K], ref[:L * K], atol=1e-7)
        assert abs(_objective(eta, mu, L, K) - _objective(eta, ref, L, K)) < 1e-7
        # the joined point is in the polytope: rows of the unary block,
        # start and end sum to one, transition counts to L - 1
        np.testing.assert_allclose(mu[:L * K].reshape(L, K).sum(1), 1.0, atol=1e-9)
        assert abs(mu[L * K:L * K + K * K].sum() - (L - 1)) < 1e-9
        assert abs(mu[-2 * K:-K].sum() - 1) < 1e-9 and abs(mu[-K:].sum() - 1) < 1e-9
        assert mu.min() > -1e-12


def test_fixed_positions_are_exact_restriction():
    # with positions fixed by hand, the joined pieces are the optimum of the
    # problem restricted to those tags: brute force over the restriction by
    # the whole-chain active set with the other tags forbidden at them
    rng = np.random.default_rng(7)
    K, L = 3, 9
    eta = rng.normal(size=L * K + K * K + 2 * K)
    split = -np.ones(L, dtype=np.int64)
    split[[0, 3, 4, 8]] = [1, 0, 2, 2]
    mu = np.empty_like(eta)
    chain_solve_pieces(eta, L, K, split, chain_map, 1000, 1e-10, mu)
    restricted = eta.copy()
    for t in np.flatnonzero(split >= 0):
        restricted[t * K:(t + 1) * K] -= 1e4
        restricted[t * K + split[t]] += 1e4
    ref = sparsemap_active_set(restricted, L * K, chain_map, np.array([L, K], float),
                               1000, 1e-12)[0]
    np.testing.assert_allclose(mu[:L * K], ref[:L * K], atol=1e-7)
    assert abs(_objective(eta, mu, L, K) - _objective(eta, ref, L, K)) < 1e-6
    # its gap on the unrestricted problem is a real Frank-Wolfe gap (>= 0)
    assert chain_sparsemap_gap(eta, L, K, mu, np.empty(L, dtype=np.int64)) >= -1e-9


def test_chain_sparsemap_long_and_short_batch(monkeypatch):
    # a batch mixing split (long) and whole (short) sequences, warm cache
    # on, equals the active set on every sequence
    monkeypatch.setattr(chain_mod, "SPLIT_MIN_LENGTH", 20)
    rng = np.random.default_rng(3)
    tok_off = np.concatenate(([0], np.cumsum([3, 40, 7, 60, 1, 25])))
    ch = Chain(4, tok_off, warm_cache=SupportCache())
    theta = rng.normal(scale=3.0, size=ch.n_parts)
    ref = RaggedStructure.sparsemap(ch, theta)
    for _ in range(2):  # the second call warm-starts the short sequences
        mu = ch.sparsemap(theta)
        np.testing.assert_allclose(mu[ch.unary_mask], ref[ch.unary_mask], atol=1e-7)
        np.testing.assert_allclose(ch.dot(theta, mu) - 0.5 * ch.unary_sq(mu),
                                   ch.dot(theta, ref) - 0.5 * ch.unary_sq(ref), atol=1e-7)


@pytest.mark.parametrize("all_long", [True, False])
def test_split_solve_stopped_at_max_iter_warns(monkeypatch, all_long):
    # the split kernel counts the sequences with a piece solve that ran out
    # of iterations, and Chain.sparsemap turns them into a ConvergenceWarning
    # (as the whole-chain active set does); converged solves are silent
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from structlearn.kernels.chain_split import sparsemap_chain_split_batch
    from structlearn.kernels.linear import chain_part_offsets
    monkeypatch.setattr(chain_mod, "SPLIT_MIN_LENGTH", 20)
    rng = np.random.default_rng(5)
    lengths = [40, 60] if all_long else [3, 40, 60]
    tok_off = np.concatenate(([0], np.cumsum(lengths)))
    ch = Chain(4, tok_off)
    theta = 0.3 * rng.normal(size=ch.n_parts)   # near-uniform: many vertices
    _, n_capped = sparsemap_chain_split_batch(theta, chain_part_offsets(tok_off, 4), tok_off,
                                              4, chain_map, 2, 1e-9, chain_mod.SPLIT_MIN_GAP)
    assert n_capped > 0
    with pytest.warns(ConvergenceWarning, match="stopped at max_iter=2"):
        capped = ch.sparsemap(theta, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        exact = ch.sparsemap(theta)
    assert np.abs(capped - exact).max() > 1e-6
