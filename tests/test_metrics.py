"""Tests for structlearn.metrics."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import scipy.sparse as sp
from scipy.stats import kendalltau, spearmanr
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import hamming_loss as sk_hamming_loss
from sklearn.metrics import make_scorer
from sklearn.model_selection import KFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier

import structlearn.metrics as M
from structlearn.metrics import (
    hamming_loss,
    kendall_tau,
    mean_absolute_error,
    spearman_rho,
)


def random_rankings(rng, n, k):
    """n random rank vectors (permutations of 1..k)."""
    return np.argsort(rng.random((n, k)), axis=1).argsort(axis=1) + 1


# ---------------------------------------------------------------------------
# rank correlations
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3, 5, 16])
def test_rank_correlations_match_scipy_per_row(k):
    rng = np.random.default_rng(k)
    Yt, Yp = random_rankings(rng, 60, k), random_rankings(rng, 60, k)
    taus = [kendalltau(a, b)[0] for a, b in zip(Yt, Yp)]
    rhos = [spearmanr(a, b)[0] for a, b in zip(Yt, Yp)]
    assert kendall_tau(Yt, Yp) == pytest.approx(np.mean(taus), abs=1e-12)
    assert spearman_rho(Yt, Yp) == pytest.approx(np.mean(rhos), abs=1e-12)
    for i in range(5):  # single rows, too
        assert kendall_tau(Yt[i:i + 1], Yp[i:i + 1]) == pytest.approx(taus[i])
        assert spearman_rho(Yt[i:i + 1], Yp[i:i + 1]) == pytest.approx(rhos[i])


@pytest.mark.parametrize("metric", [kendall_tau, spearman_rho])
def test_perfect_and_reversed_rankings(metric):
    rng = np.random.default_rng(0)
    Y = random_rankings(rng, 30, 6)
    assert metric(Y, Y) == 1.0
    assert metric(Y, 7 - Y) == -1.0
    assert metric([[1, 2]], [[2, 1]]) == -1.0


def test_known_values():
    assert kendall_tau([[1, 2, 3]], [[1, 3, 2]]) == pytest.approx(1 / 3)
    assert spearman_rho([[1, 2, 3]], [[1, 3, 2]]) == pytest.approx(0.5)
    # mean over rows
    assert kendall_tau([[1, 2, 3], [1, 2, 3]], [[1, 2, 3], [3, 2, 1]]) == 0.0


def test_rank_metrics_accept_integral_floats_and_lists():
    Y = [[1.0, 2.0, 3.0], [3.0, 1.0, 2.0]]
    assert kendall_tau(Y, np.array(Y, dtype=int)) == 1.0
    assert spearman_rho(np.array(Y, dtype=np.float32), Y) == 1.0


def test_kendall_chunking_gives_same_result(monkeypatch):
    rng = np.random.default_rng(1)
    Yt, Yp = random_rankings(rng, 257, 7), random_rankings(rng, 257, 7)
    full = kendall_tau(Yt, Yp)
    monkeypatch.setattr(M, "_KENDALL_CHUNK_ENTRIES", 50)  # 2 rows per chunk
    assert kendall_tau(Yt, Yp) == pytest.approx(full, abs=1e-14)


def test_kendall_tau_is_fast_on_large_inputs():
    rng = np.random.default_rng(2)
    Yt, Yp = random_rankings(rng, 40_000, 16), random_rankings(rng, 40_000, 16)
    start = time.perf_counter()
    tau = kendall_tau(Yt, Yp)
    rho = spearman_rho(Yt, Yp)
    assert time.perf_counter() - start < 5.0
    assert abs(tau) < 0.02 and abs(rho) < 0.02  # independent random rankings
    ref = np.mean([kendalltau(a, b)[0] for a, b in zip(Yt[:200], Yp[:200])])
    assert kendall_tau(Yt[:200], Yp[:200]) == pytest.approx(ref)


def test_rank_metrics_sample_weight():
    Yt = np.array([[1, 2, 3], [1, 2, 3]])
    Yp = np.array([[1, 2, 3], [3, 2, 1]])
    assert kendall_tau(Yt, Yp, sample_weight=[3, 1]) == pytest.approx(0.5)
    assert spearman_rho(Yt, Yp, sample_weight=[1, 0]) == 1.0


@pytest.mark.parametrize("metric", [kendall_tau, spearman_rho])
@pytest.mark.parametrize(
    "Y_true, Y_pred, match",
    [
        ([[1, 2, 3]], [[1, 2, 3], [1, 2, 3]], "different shapes"),
        ([1, 2, 3], [1, 2, 3], "2-D"),
        ([[1], [1]], [[1], [1]], "at least 2 labels"),
        ([[1, 2, 3], [1, 1, 3]], [[1, 2, 3], [1, 2, 3]], "Y_true row 1 is not a permutation"),
        ([[1, 2, 3], [1, 2, 3]], [[1, 2, 3], [0, 1, 2]], "Y_pred row 1 is not a permutation"),
        ([[1, 2, 4]], [[1, 2, 3]], "row 0 is not a permutation of 1..3"),
        ([[1.5, 2, 3]], [[1, 2, 3]], "row 0 contains non-integer"),
        ([[np.nan, 2, 3]], [[1, 2, 3]], "NaN"),
        ([["a", "b"]], [[1, 2]], "must contain numbers"),
        (np.zeros((0, 3)), np.zeros((0, 3)), "empty"),
    ],
)
def test_rank_metrics_bad_input(metric, Y_true, Y_pred, match):
    with pytest.raises(ValueError, match=match):
        metric(Y_true, Y_pred)


def test_sample_weight_errors():
    Y = [[1, 2], [2, 1]]
    with pytest.raises(ValueError, match="sample_weight"):
        kendall_tau(Y, Y, sample_weight=[1.0])
    with pytest.raises(ValueError, match="non-negative"):
        spearman_rho(Y, Y, sample_weight=[1.0, -1.0])
    with pytest.raises(ValueError, match="positive sum"):
        kendall_tau(Y, Y, sample_weight=[0, 0])


# ---------------------------------------------------------------------------
# ordinal MAE
# ---------------------------------------------------------------------------
def test_mae_numeric():
    assert mean_absolute_error([1, 2, 3], [1, 3, 1]) == 1.0
    assert mean_absolute_error(np.array([[1.5], [2.0]]), [1, 2]) == 0.25
    assert mean_absolute_error([1, 2], [3, 2], sample_weight=[1, 3]) == 0.5


def test_mae_with_classes_uses_index_distance():
    classes = ["low", "mid", "high"]
    assert mean_absolute_error(["low", "high"], ["mid", "low"], classes=classes) == 1.5
    # non-contiguous numeric labels: 1 -> 5 is 2 steps, not 4
    assert mean_absolute_error([1, 5, 2], [5, 5, 1], classes=[1, 2, 5]) == 1.0
    assert mean_absolute_error([1, 5, 2], [5, 5, 1]) == pytest.approx(5 / 3)
    # object arrays with mixed types still work element-wise
    mixed = np.array(["a", 1], dtype=object)
    assert mean_absolute_error(mixed, mixed[::-1], classes=["a", 1]) == 1.0


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([1, 2], [1]), {}, "different lengths"),
        (([], []), {}, "empty"),
        ((["a", "b"], ["a", "b"]), {}, "non-numeric.*classes"),
        (([1, 2], [1, np.nan]), {}, "y_pred contains NaN"),
        ((["a", "z"], ["a", "b"]), {"classes": ["a", "b"]},
         "y_true contains labels not in classes: 'z'"),
        ((["a", "b"], ["a", "b"]), {"classes": ["a", "b", "a"]}, "duplicated"),
        (([[1, 2]], [[1, 2]]), {}, "1-D"),
    ],
)
def test_mae_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        mean_absolute_error(*args, **kwargs)


# ---------------------------------------------------------------------------
# hamming loss
# ---------------------------------------------------------------------------
def test_hamming_loss_matches_sklearn_and_handles_sparse():
    rng = np.random.default_rng(3)
    Yt = rng.integers(0, 2, (50, 7))
    Yp = rng.integers(0, 2, (50, 7))
    expected = sk_hamming_loss(Yt, Yp)
    assert hamming_loss(Yt, Yp) == pytest.approx(expected)
    assert hamming_loss(sp.csr_matrix(Yt), Yp) == pytest.approx(expected)
    assert hamming_loss(sp.csr_matrix(Yt), sp.csc_matrix(Yp)) == pytest.approx(expected)
    assert hamming_loss(Yt.astype(bool), Yt) == 0.0
    assert hamming_loss([[1, 0], [0, 0]], [[1, 1], [0, 0]], sample_weight=[1, 0]) == 0.5


@pytest.mark.parametrize(
    "Y_true, Y_pred, match",
    [
        ([[0, 1]], [[0, 1, 1]], "different shapes"),
        ([0, 1], [0, 1], "2-D"),
        ([[0, 2]], [[0, 1]], "Y_true must be a binary"),
        ([[0, 1]], [[0.5, 1]], "Y_pred must be a binary"),
    ],
)
def test_hamming_loss_bad_input(Y_true, Y_pred, match):
    with pytest.raises(ValueError, match=match):
        hamming_loss(Y_true, Y_pred)


# ---------------------------------------------------------------------------
# make_scorer / cross_val_score
# ---------------------------------------------------------------------------
class RankByRegression(RegressorMixin, BaseEstimator):
    """Toy label ranker: regress each rank, then re-rank the predictions."""

    def fit(self, X, Y):
        self.model_ = Ridge(alpha=1.0).fit(X, Y)
        return self

    def predict(self, X):
        scores = self.model_.predict(X)
        return np.argsort(np.argsort(scores, axis=1), axis=1) + 1


def test_rank_scorers_in_cross_val_score():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 3))
    Y = np.argsort(np.argsort(-X @ rng.normal(size=(3, 4)), axis=1), axis=1) + 1
    # the labels' utilities are linear in X, so a linear ranker scores well
    for metric in (kendall_tau, spearman_rho):
        scores = cross_val_score(
            RankByRegression(), X, Y, scoring=make_scorer(metric), cv=KFold(4)
        )
        assert scores.shape == (4,)
        assert np.all(scores > 0.5) and np.all(scores <= 1.0)


def test_mae_scorer_in_cross_val_score():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 2))
    levels = np.array(["low", "mid", "high"])
    y = levels[np.digitize(X[:, 0], [-0.5, 0.5])]
    scorer = make_scorer(
        mean_absolute_error, greater_is_better=False, classes=list(levels)
    )
    cv = KFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(LogisticRegression(), X, y, scoring=scorer, cv=cv)
    assert np.all(scores <= 0) and np.all(scores > -0.5)


def test_hamming_scorer_in_cross_val_score():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(90, 3))
    Y = (X[:, :2] > 0).astype(int)
    scorer = make_scorer(hamming_loss, greater_is_better=False)
    scores = cross_val_score(KNeighborsClassifier(3), X, Y, scoring=scorer, cv=3)
    assert np.all(scores <= 0) and np.all(scores > -0.3)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), k=st.integers(2, 7), n=st.integers(1, 6))
def test_rank_correlation_properties(data, k, n):
    perms = st.permutations(list(range(1, k + 1)))
    Yt = np.array(data.draw(st.lists(perms, min_size=n, max_size=n)))
    Yp = np.array(data.draw(st.lists(perms, min_size=n, max_size=n)))
    tau, rho = kendall_tau(Yt, Yp), spearman_rho(Yt, Yp)
    assert -1.0 <= tau <= 1.0 and -1.0 <= rho <= 1.0
    assert tau == pytest.approx(kendall_tau(Yp, Yt))
    assert rho == pytest.approx(spearman_rho(Yp, Yt))
    # reversing every predicted ranking flips the sign
    assert kendall_tau(Yt, k + 1 - Yp) == pytest.approx(-tau)
    assert spearman_rho(Yt, k + 1 - Yp) == pytest.approx(-rho)
