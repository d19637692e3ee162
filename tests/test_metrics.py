"""Tests for structlearn.metrics."""

import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import scipy.sparse as sp
from scipy.stats import kendalltau, spearmanr
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import classification_report
from sklearn.metrics import hamming_loss as sk_hamming_loss
from sklearn.metrics import make_scorer
from sklearn.model_selection import KFold, cross_val_score, cross_validate
from sklearn.neighbors import KNeighborsClassifier

import structlearn.metrics as M
from structlearn.metrics import (
    chunk_f1,
    chunk_precision_recall_f1,
    flat_classification_report,
    hamming_loss,
    kendall_tau,
    las,
    mean_absolute_error,
    spearman_rho,
    token_accuracy,
    uas,
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


# ---------------------------------------------------------------------------
# sequence metrics
# ---------------------------------------------------------------------------
def chunks_of(tags, scheme="auto"):
    """The (start, end, type) chunks decoded from one tag sequence."""
    return sorted(M._extract_chunks(tags, "y", 0, M._CHUNK_PREFIXES[scheme], scheme))


def test_sequence_metrics_in_all():
    for name in ("token_accuracy", "chunk_f1", "chunk_precision_recall_f1",
                 "flat_classification_report", "uas"):
        assert name in M.__all__


def test_token_accuracy():
    yt = [["DT", "NN", "VB"], ["NN"]]
    yp = [["DT", "VB", "VB"], ["VB"]]
    assert token_accuracy(yt, yp) == 0.5
    assert token_accuracy(yt, yt) == 1.0
    # sequence weights apply to every token of the sequence
    assert token_accuracy(yt, yp, sample_weight=[1, 0]) == pytest.approx(2 / 3)
    assert token_accuracy(yt, yp, sample_weight=[1, 3]) == pytest.approx(2 / 6)
    # arrays, tuples and empty sequences are fine
    assert token_accuracy([np.array([1, 2]), ()], [(1, 3), []]) == 0.5


@pytest.mark.parametrize("yt, yp, match", [
    ([["a", "b"], ["c"]], [["a", "b"], ["c", "d"]],
     "sequence 1 has 1 labels in y_true but 2 in y_pred"),
    ([["a"]], [["a"], ["b"]], "y_true has 1 sequences but y_pred has 2"),
    (["a", "b"], ["a", "b"], r"y_true\[0\] is 'a', not a sequence"),
    ("ab", "ab", "must be a list of sequences"),
    (np.array([1, 2]), np.array([1, 2]), "1-D array"),
    ([], [], "empty"),
    ([[]], [[]], "No token to score"),
])
def test_token_accuracy_bad_input(yt, yp, match):
    with pytest.raises(ValueError, match=match):
        token_accuracy(yt, yp)


def test_chunk_decoding_conlleval_rules():
    # IOB2
    assert chunks_of(["B-NP", "I-NP", "O", "B-VP", "B-NP", "B-NP"]) == [
        (0, 1, "NP"), (3, 3, "VP"), (4, 4, "NP"), (5, 5, "NP")]
    # I- without a preceding B- starts a chunk (after O, or at the start)
    assert chunks_of(["I-NP", "I-NP", "O", "I-PP", "I-NP"]) == [
        (0, 1, "NP"), (3, 3, "PP"), (4, 4, "NP")]
    # a type change inside I- tags ends one chunk and starts another
    assert chunks_of(["B-NP", "I-VP", "I-VP", "I-NP"]) == [
        (0, 0, "NP"), (1, 2, "VP"), (3, 3, "NP")]
    # IOB1: B- only between adjacent chunks of the same type
    assert chunks_of(["I-NP", "I-NP", "B-NP", "I-NP", "O", "I-VP"], "IOB1") == [
        (0, 1, "NP"), (2, 3, "NP"), (5, 5, "VP")]
    # IOBES: S- is a one-token chunk, E- ends a chunk
    assert chunks_of(["S-NP", "B-VP", "I-VP", "E-VP", "S-NP", "S-NP"], "IOBES") == [
        (0, 0, "NP"), (1, 3, "VP"), (4, 4, "NP"), (5, 5, "NP")]
    assert chunks_of(["B-NP", "E-NP", "B-NP", "E-NP"]) == [(0, 1, "NP"), (2, 3, "NP")]
    # after E-/S-, an I- or E- starts a new chunk; E- after O starts one too
    assert chunks_of(["B-NP", "E-NP", "I-NP", "E-NP"]) == [(0, 1, "NP"), (2, 3, "NP")]
    assert chunks_of(["S-NP", "I-NP", "O", "E-NP"]) == [
        (0, 0, "NP"), (1, 1, "NP"), (3, 3, "NP")]
    # B- then S- of the same type: two chunks
    assert chunks_of(["B-NP", "S-NP"]) == [(0, 0, "NP"), (1, 1, "NP")]
    # type-less tags, as conlleval accepts them
    assert chunks_of(["B", "I", "O", "I"]) == [(0, 1, ""), (3, 3, "")]
    # types may contain '-'; chunks end at the end of the sequence
    assert chunks_of(["B-A-B", "I-A-B"]) == [(0, 1, "A-B")]
    assert chunks_of([]) == [] and chunks_of(["O", "O"]) == []


def test_chunk_precision_recall_f1_hand_case():
    yt = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP", "I-NP"]]
    yp = [["B-NP", "I-NP", "O", "B-NP"], ["B-PP", "I-NP", "I-NP"]]
    # true: NP(0-1) VP(3) | PP(0) NP(1-2);  pred: NP(0-1) NP(3) | PP(0) NP(1-2)
    overall, per_type = chunk_precision_recall_f1(yt, yp)
    assert (overall["n_true"], overall["n_pred"], overall["n_correct"]) == (4, 4, 3)
    assert overall["precision"] == overall["recall"] == overall["f1"] == 0.75
    assert list(per_type) == ["NP", "PP", "VP"]
    assert per_type["NP"] == {"precision": 2 / 3, "recall": 1.0, "f1": 0.8,
                              "n_true": 2, "n_pred": 3, "n_correct": 2}
    assert per_type["PP"]["f1"] == 1.0
    assert per_type["VP"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                              "n_true": 1, "n_pred": 0, "n_correct": 0}
    assert chunk_f1(yt, yp) == 0.75
    assert chunk_f1(yt, yp, average="macro") == pytest.approx((0.8 + 1 + 0) / 3)
    # weighting the second sentence by 0 leaves NP(0-1) right, NP(3) wrong
    o, _ = chunk_precision_recall_f1(yt, yp, sample_weight=[1, 0])
    assert (o["precision"], o["recall"]) == (0.5, 0.5)


def test_chunk_f1_boundaries_and_types_must_match():
    yt = [["B-NP", "I-NP", "I-NP"]]
    assert chunk_f1(yt, [["B-NP", "I-NP", "O"]]) == 0.0       # wrong end
    assert chunk_f1(yt, [["O", "B-NP", "I-NP"]]) == 0.0       # wrong start
    assert chunk_f1(yt, [["B-VP", "I-VP", "I-VP"]]) == 0.0    # wrong type
    assert chunk_f1(yt, [["I-NP", "I-NP", "I-NP"]]) == 1.0    # IOB1 spelling
    # predicted chunk split in two: 0 correct of 2 predicted, 1 true
    o, _ = chunk_precision_recall_f1(yt, [["B-NP", "B-NP", "I-NP"]])
    assert (o["n_true"], o["n_pred"], o["n_correct"]) == (1, 2, 0)
    # mixed schemes in true/pred decode to the same chunks
    assert chunk_f1([["B-NP", "I-NP", "O", "B-VP"]],
                    [["B-NP", "E-NP", "O", "S-VP"]]) == 1.0
    # conlleval gives 0 when there is no chunk at all
    assert chunk_f1([["O", "O"]], [["O", "O"]]) == 0.0
    # precision 1, recall 1/2
    o, _ = chunk_precision_recall_f1([["B-NP", "O", "B-NP"]], [["B-NP", "O", "O"]])
    assert (o["precision"], o["recall"], o["f1"]) == (1.0, 0.5, pytest.approx(2 / 3))


@pytest.mark.parametrize("kwargs, yt, yp, match", [
    ({}, [["B-NP", "X-NP"]], [["O", "O"]], r"y_true\[0\]\[1\] = 'X-NP' is not a valid"),
    ({}, [["O"], ["O", "NP"]], [["O"], ["O", "O"]], r"y_true\[1\]\[1\] = 'NP'"),
    ({}, [["O"]], [["O-NP"]], r"y_pred\[0\]\[0\] = 'O-NP'"),
    ({"scheme": "IOB2"}, [["B-NP"]], [["S-NP"]], r"y_pred\[0\]\[0\] = 'S-NP' is not a valid IOB2"),
    ({}, [["B-NP"]], [[1]], r"y_pred\[0\]\[0\] is 1; chunk tags must be strings"),
    ({"scheme": "BILOU"}, [["O"]], [["O"]], "scheme must be one of"),
    ({"average": "weighted"}, [["O"]], [["O"]], "average must be"),
    ({}, [["O", "O"]], [["O"]], "sequence 0 has 2 labels in y_true but 1 in y_pred"),
])
def test_chunk_f1_bad_input(kwargs, yt, yp, match):
    with pytest.raises(ValueError, match=match):
        chunk_f1(yt, yp, **kwargs)


def _render(spans, n, scheme):
    """Tags of non-overlapping (start, end, type) spans in a scheme."""
    tags = ["O"] * n
    prev_end = {}
    for s, e, t in spans:
        for k in range(s, e + 1):
            tags[k] = "I-" + t
        if scheme == "IOB2":
            tags[s] = "B-" + t
        elif scheme == "IOB1":
            if prev_end.get(s - 1) == t:
                tags[s] = "B-" + t
        else:  # IOBES
            if s == e:
                tags[s] = "S-" + t
            else:
                tags[s], tags[e] = "B-" + t, "E-" + t
        prev_end[e] = t
    return tags


@st.composite
def span_sequences(draw):
    n = draw(st.integers(0, 12))
    spans, k = [], 0
    while k < n:
        if draw(st.booleans()):
            length = draw(st.integers(1, n - k))
            spans.append((k, k + length - 1, draw(st.sampled_from(["NP", "VP", "PP"]))))
            k += length
        else:
            k += 1
    return n, spans


@settings(max_examples=80, deadline=None)
@given(data=st.lists(span_sequences(), min_size=1, max_size=4),
       other=st.lists(span_sequences(), min_size=4, max_size=4))
def test_chunk_schemes_decode_to_the_same_spans(data, other):
    for scheme in ("IOB1", "IOB2", "IOBES"):
        for n, spans in data:
            assert chunks_of(_render(spans, n, scheme), scheme) == sorted(spans)
    y2 = [_render(sp_, n, "IOB2") for n, sp_ in data]
    y1 = [_render(sp_, n, "IOB1") for n, sp_ in data]
    ye = [_render(sp_, n, "IOBES") for n, sp_ in data]
    has_chunks = any(sp_ for _, sp_ in data)
    assert chunk_f1(y2, y1) == chunk_f1(y2, ye) == (1.0 if has_chunks else 0.0)
    # symmetry and range against a random prediction of the same lengths
    yp = []
    for (n, _), (_, sp2) in zip(data, other):
        yp.append(_render([s for s in sp2 if s[1] < n], n, "IOB2"))
    f = chunk_f1(y2, yp)
    assert 0.0 <= f <= 1.0 and f == pytest.approx(chunk_f1(yp, y2))
    o, _ = chunk_precision_recall_f1(y2, yp)
    o_rev, _ = chunk_precision_recall_f1(yp, y2)
    assert o["precision"] == o_rev["recall"] and o["recall"] == o_rev["precision"]


def test_flat_classification_report_matches_sklearn():
    yt = [["DT", "NN"], ["VB", "NN", "DT"]]
    yp = [["DT", "VB"], ["VB", "NN", "NN"]]
    flat_t, flat_p = ["DT", "NN", "VB", "NN", "DT"], ["DT", "VB", "VB", "NN", "NN"]
    assert flat_classification_report(yt, yp) == classification_report(flat_t, flat_p)
    assert flat_classification_report(yt, yp, labels=["NN", "VB"], digits=4) == (
        classification_report(flat_t, flat_p, labels=["NN", "VB"], digits=4))
    d = flat_classification_report(yt, yp, output_dict=True)
    assert d["accuracy"] == pytest.approx(token_accuracy(yt, yp))
    dw = flat_classification_report(yt, yp, output_dict=True, sample_weight=[0, 1],
                                    zero_division=0)
    assert dw["accuracy"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="sequence 1"):
        flat_classification_report(yt, [["DT", "NN"], ["VB"]])


def test_uas():
    heads = [[2, 0, 2], [0, 1]]
    pred = [[2, 0, 1], [0, 1]]
    assert uas(heads, pred) == pytest.approx(4 / 5)
    assert uas(heads, heads) == 1.0
    upos = [["PRON", "VERB", "PUNCT"], ["VERB", "PUNCT"]]
    assert uas(heads, pred, upos, exclude_punct=True) == 1.0
    assert uas(heads, pred, upos) == pytest.approx(4 / 5)  # punctuation included
    words = [["I", "ran", "."], ["Go", "!?"]]
    assert uas(heads, pred, words, exclude_punct=True) == 1.0
    assert uas(heads, pred, sample_weight=[0, 1]) == 1.0
    assert uas([np.array([2, 0]), (0, 1)], [[2.0, 0], [1, 0]]) == 0.5


@pytest.mark.parametrize("args, kwargs, match", [
    (([[2, 0]], [[2, 0, 1]]), {}, "sequence 0 has 2 labels in y_true_heads but 3"),
    (([[2, 0]], [[2, 3]]), {}, r"y_pred_heads\[0\]\[1\] = 3 is outside 0..2"),
    (([[2, -1]], [[2, 0]]), {}, r"y_true_heads\[0\]\[1\] = -1 is outside"),
    (([[2, 0]], [[1.5, 0]]), {}, r"y_pred_heads\[0\]\[0\] = 1.5 is not an integer"),
    (([[2, 0]], [["2", 0]]), {}, r"y_pred_heads\[0\]\[0\] = '2' is not an integer"),
    (([[2, 0]], [[2, 0]]), {"exclude_punct": True}, "needs words_or_upos"),
    (([[2, 0]], [[2, 0]], [["X"]]), {"exclude_punct": True},
     "sequence 0 has 1 labels in words_or_upos but 2"),
    (([[0]], [[0]], [["PUNCT"]]), {"exclude_punct": True}, "No token to score"),
])
def test_uas_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        uas(*args, **kwargs)


class MemorizingTagger(BaseEstimator):
    """Toy sequence model: the most frequent label of each word in training."""

    def fit(self, X, y):
        from collections import Counter, defaultdict

        counts = defaultdict(Counter)
        for words, labels in zip(X, y):
            for w, lab in zip(words, labels):
                counts[w][lab] += 1
        self.table_ = {w: c.most_common(1)[0][0] for w, c in counts.items()}
        self.default_ = Counter(lab for labels in y for lab in labels).most_common(1)[0][0]
        return self

    def predict(self, X):
        return [[self.table_.get(w, self.default_) for w in words] for words in X]


class LeftHeadParser(BaseEstimator):
    """Toy parser: every word depends on its left neighbour, word 1 on the root."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        return [list(range(len(words))) for words in X]


def test_sequence_scorers_in_cross_validate():
    rng = np.random.default_rng(7)
    vocab = {"the": "B-NP", "a": "B-NP", "dog": "I-NP", "cat": "I-NP",
             "runs": "B-VP", "sleeps": "B-VP", "in": "B-PP", ".": "O"}
    words = list(vocab)
    X = [list(rng.choice(words, size=rng.integers(1, 8))) for _ in range(40)]
    y = [[vocab[w] for w in s] for s in X]
    scoring = {"acc": make_scorer(token_accuracy), "f1": make_scorer(chunk_f1),
               "macro_f1": make_scorer(chunk_f1, average="macro", scheme="IOB2")}
    res = cross_validate(MemorizingTagger(), X, y, scoring=scoring, cv=4)
    assert np.allclose(res["test_acc"], 1.0) and np.allclose(res["test_f1"], 1.0)
    assert np.allclose(res["test_macro_f1"], 1.0)
    # noisy labels: scores drop but stay in [0, 1]
    y_noisy = [[lab if rng.random() > 0.3 else "O" for lab in s] for s in y]
    res = cross_validate(MemorizingTagger(), X, y_noisy, scoring=scoring, cv=4)
    for key in ("test_acc", "test_f1"):
        assert np.all(res[key] >= 0) and np.all(res[key] <= 1) and res[key].mean() < 1
    # a parser scored by UAS
    heads = [list(range(len(s))) for s in X]  # left-branching gold trees
    res = cross_validate(LeftHeadParser(), X, heads, scoring=make_scorer(uas), cv=4)
    assert np.allclose(res["test_score"], 1.0)
    heads_right = [[0] + [1] * (len(s) - 1) for s in X]
    res = cross_validate(LeftHeadParser(), X, heads_right, scoring=make_scorer(uas), cv=4)
    assert np.all(res["test_score"] < 1.0)


def test_hamming_loss_names_the_bad_entry_of_sparse_input():
    bad = sp.csr_matrix(np.array([[0, 0, 1], [0, 3, 0]]))
    with pytest.raises(ValueError, match=r"Y_true must be a binary.*Y_true\[1, 1\] = 3"):
        hamming_loss(bad, np.zeros((2, 3)))
    nan = sp.csr_matrix(np.array([[0.0, 1.0], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match=r"NaN at Y_pred\[1, 0\]"):
        hamming_loss(np.zeros((2, 2)), nan)


# ---------------------------------------------------------------------------
# labelled attachment score
# ---------------------------------------------------------------------------
def _conllu_words(text):
    """Per word (HEAD, DEPREL) of a CoNLL-U text, read line by line: comment
    lines, multiword-token lines (ID n-m) and empty nodes (ID n.k) skipped."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if "-" in cols[0] or "." in cols[0]:
            continue
        out.append((cols[6], cols[7]))
    return out


def _write_words(sents, targets):
    """CoNLL-U text of sentences (with their multiword tokens) carrying
    ``targets``, formatted here (not by write_conllu)."""
    lines = []
    for s, (heads, rels) in zip(sents, targets):
        first = {int(m["id"].split("-")[0]): m["id"] for m in s.multiword_tokens}
        for j, t in enumerate(s.tokens, start=1):
            if j in first:
                lines.append(f"{first[j]}\tx\t_\t_\t_\t_\t_\t_\t_\t_")
            lines.append(f"{j}\t{t['form']}\t_\t_\t_\t_\t{heads[j - 1]}\t{rels[j - 1]}\t_\t_")
        lines.append("")
    return "\n".join(lines) + "\n"


def test_las_matches_a_per_word_count_over_conllu_files():
    from structlearn.datasets import load_ewt

    sents = load_ewt("test")
    assert sum(len(s.multiword_tokens) for s in sents) > 0
    rng = np.random.RandomState(0)
    gold = [(s.heads, s.deprels) for s in sents]
    rels = sorted({r for _, d in gold for r in d})
    pred = []
    for h, d in gold:   # perturb: some heads, some relations, some subtypes only
        h2 = [rng.randint(0, len(h) + 1) if rng.rand() < 0.15 else x for x in h]
        d2 = [rels[rng.randint(len(rels))] if rng.rand() < 0.15 else
              (r.split(":")[0] + ":xx" if rng.rand() < 0.1 else r) for r in d]
        pred.append((h2, d2))
    g = _conllu_words(_write_words(sents, gold))
    p = _conllu_words(_write_words(sents, pred))
    assert len(g) == len(p) == sum(len(s) for s in sents)
    uni = np.mean([a[0] == b[0] and a[1].split(":")[0] == b[1].split(":")[0]
                   for a, b in zip(g, p)])
    full = np.mean([a == b for a, b in zip(g, p)])
    heads_only = np.mean([a[0] == b[0] for a, b in zip(g, p)])
    assert 0.5 < full < uni < heads_only < 1
    assert las(gold, pred) == pytest.approx(uni, abs=1e-12)
    assert las(gold, pred, full_labels=True) == pytest.approx(full, abs=1e-12)
    assert uas(gold, pred) == pytest.approx(heads_only, abs=1e-12)
    assert uas([h for h, _ in gold], pred) == uas(gold, pred)


def test_las_small_cases_by_hand():
    gold = [([2, 0, 2, 2], ["nsubj", "root", "obj", "punct"]), ([0], ["root"])]
    # word 3: right head, subtype only differs; word 4: right relation, wrong head
    pred = [([2, 0, 2, 1], ["nsubj", "root", "obj:dir", "punct"]), ([0], ["dep"])]
    assert las(gold, pred) == pytest.approx(3 / 5)
    assert las(gold, pred, full_labels=True) == pytest.approx(2 / 5)
    assert uas(gold, pred) == pytest.approx(4 / 5)
    upos = [["PRON", "VERB", "NOUN", "PUNCT"], ["INTJ"]]
    assert las(gold, pred, upos, exclude_punct=True) == pytest.approx(3 / 4)
    assert las(gold, pred, sample_weight=[0, 1]) == 0.0
    assert las(gold, pred, sample_weight=[1, 0]) == pytest.approx(3 / 4)
    assert las(gold, gold) == 1.0
    assert "las" in M.__all__


@pytest.mark.parametrize("args, kwargs, match", [
    (([[2, 0]], [([2, 0], ["a", "b"])]), {}, r"y_true\[0\] must be a \(heads, deprels\)"),
    (([([2, 0], ["a"])], [([2, 0], ["a", "b"])]), {}, r"y_true\[0\] has 2 heads but 1"),
    (([([2, 0], ["a", None])], [([2, 0], ["a", "b"])]), {}, "word 2: deprel must be"),
    (([([2, 0], ["a", "b"])], [([2, 0], ["a", "b"]), ([0], ["c"])]), {},
     "1 sequences but"),
    (([([2, 0], ["a", "b"])], [([3, 0], ["a", "b"])]), {}, r"y_pred\[0\]\[0\] = 3"),
    (([([2, 0], ["a", "b"])], [([2, 0], ["a", "b"])]), {"exclude_punct": True},
     "needs words_or_upos"),
    (([([2, 0], ["a", "b"])], [([2, 0], ["a", "b"])]), {"full_labels": "yes"}, "bool"),
])
def test_las_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        las(*args, **kwargs)


# ------------------------------------------------- extreme sample weights
def _metric_cases():
    from structlearn import metrics as M
    rng = np.random.RandomState(0)
    R1 = np.array([rng.permutation(4) + 1 for _ in range(8)])
    R2 = np.array([rng.permutation(4) + 1 for _ in range(8)])
    B1, B2 = (rng.rand(8, 3) > 0.5).astype(int), (rng.rand(8, 3) > 0.5).astype(int)
    o1, o2 = rng.randint(0, 4, 8), rng.randint(0, 4, 8)
    s1 = [["B-NP", "I-NP", "O"], ["B-VP", "O"], ["O", "B-NP"]] * 2
    s2 = [["B-NP", "O", "O"], ["B-VP", "O"], ["B-NP", "I-NP"]] * 2
    h1 = [[2, 0, 2], [0, 1], [2, 0]] * 2
    h2 = [[2, 0, 1], [0, 1], [0, 1]] * 2
    d1 = [(h, ["a"] * len(h)) for h in h1]
    d2 = [(h, ["a"] * len(h)) for h in h2]
    return [("kendall_tau", M.kendall_tau, (R1, R2), 8),
            ("spearman_rho", M.spearman_rho, (R1, R2), 8),
            ("hamming_loss", M.hamming_loss, (B1, B2), 8),
            ("mean_absolute_error", M.mean_absolute_error, (o1, o2), 8),
            ("chunk_f1", M.chunk_f1, (s1, s2), 6),
            ("sequence_accuracy_score", M.sequence_accuracy_score, (s1, s2), 6),
            ("token_accuracy", M.token_accuracy, (s1, s2), 6),
            ("flat_accuracy_score", M.flat_accuracy_score, (s1, s2), 6),
            ("uas", M.uas, (h1, h2), 6),
            ("las", M.las, (d1, d2), 6)]


@pytest.mark.parametrize("case", _metric_cases(), ids=lambda c: c[0])
@pytest.mark.parametrize("scale", [1e308, np.finfo(float).max, 1e-300, 5e-324])
def test_extreme_uniform_weights_give_the_unweighted_value(case, scale):
    """A weighted average does not depend on the weights' scale: uniform
    weights of 1e308 (whose sum overflows) or of a subnormal size give the
    unweighted value, not NaN."""
    _, metric, args, n = case
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = metric(*args, sample_weight=np.full(n, scale))
    assert np.isfinite(got)
    assert got == pytest.approx(metric(*args), rel=1e-12)
