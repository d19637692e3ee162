"""Numerical robustness of the estimators end to end.

Scores of magnitude up to ~1e6 (inputs scaled up after fitting, or models
fitted on large inputs), exact ties (all-zero inputs, identical rows),
one-token sequences and one-word sentences: every output is finite and
valid.  The oracles and losses alone are covered by test_properties.py.
"""

import numpy as np
import pytest

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SequenceTagger)
from structlearn.kernels.tree_validation import validate_heads
from structlearn.losses import Projection

from test_estimators import multilabel_data, ordinal_data, ranking_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FIXED = {
    "ranker-perm": (lambda loss: LabelRanker(loss=loss, max_iter=20, random_state=0),
                    ["perceptron", "hinge", "sparsemap", "projection", "squared"]),
    "ranker-birkhoff": (lambda loss: LabelRanker(polytope="birkhoff", loss=loss, max_iter=20,
                                                 random_state=0),
                        ["hinge", "sparsemap", Projection(geometry="kl")]),
    "ordinal": (lambda loss: OrdinalRegressor(loss=loss, max_iter=20, random_state=0),
                ["perceptron", "hinge", "crf", "sparsemap", Projection(geometry="kl")]),
    "multilabel": (lambda loss: MultiLabelClassifier(loss=loss, max_labels=2, max_iter=20,
                                                     random_state=0),
                   ["hinge", "hinge-slack", "crf", "sparsemap", Projection(geometry="kl")]),
}


def _data(task, n=60, d=4, k=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    S = X @ rng.randn(d, k)
    if task.startswith("ranker"):
        return X, np.argsort(np.argsort(-S, axis=1), axis=1) + 1
    if task == "ordinal":
        return X, np.digitize(S[:, 0], [-1.0, 0.0, 1.0])
    Y = (S > 0.5).astype(int)
    return X, Y * (np.cumsum(Y, axis=1) <= 2)


def _check_outputs(est, X):
    pred = est.predict(X)
    assert len(pred) == len(X)
    for out in (est.decision_function(X), est.predict_marginals(X)):
        assert np.all(np.isfinite(out))
    for dist in est.predict_sparse(X):
        w = np.array([wt for _, wt in dist])
        assert np.all(np.isfinite(w)) and np.all(w >= 0) and abs(w.sum() - 1) < 1e-6
    return pred


CASES = [(task, loss) for task, (_, losses) in FIXED.items() for loss in losses]


@pytest.mark.parametrize("task,loss", CASES, ids=[f"{t}-{getattr(l, 'name', l)}"
                                                   for t, l in CASES])
def test_huge_scores_and_ties_give_finite_valid_outputs(task, loss):
    make, _ = FIXED[task]
    X, Y = _data(task)
    est = make(loss).fit(X, Y)
    ref = _check_outputs(est, X)
    # scores of magnitude ~1e6: the predictions of a linear model do not
    # change when its scores are scaled up (MAP decoding), and every output
    # stays finite
    big = X * 1e5
    assert np.abs(est.decision_function(big)).max() > 1e4
    pred = _check_outputs(est, big)
    if est.decoding == "map":
        np.testing.assert_array_equal(np.asarray(pred), np.asarray(ref))
    # exact ties: all-zero inputs (scores = the intercepts only) and a
    # model fitted on large inputs
    _check_outputs(est, np.zeros_like(X))
    _check_outputs(make(loss).fit(X * 1e3, Y), X * 1e3)


def _tokens(words):
    return [{"w": w, "suffix": w[-2:]} for w in words]


@pytest.mark.parametrize("loss", ["crf", "perceptron", "hinge", "sparsemap",
                                  Projection(set="cube", geometry="kl")])
def test_tagger_single_tokens_single_tag_and_huge_values(loss):
    X = [_tokens(["a"]), _tokens(["b", "a"]), _tokens(["c"]), _tokens(["a", "c", "b"])]
    y = [["N"], ["V", "N"], ["V"], ["N", "V", "V"]]
    est = SequenceTagger(loss=loss, max_iter=10, random_state=0).fit(X, y)
    for seqs in (X, [_tokens(["a"])], [[{"w": "a", "x": 1e6}]]):
        pred = est.predict(seqs)
        assert [len(p) for p in pred] == [len(s) for s in seqs]
        for m in est.predict_marginals(seqs):
            assert np.all(np.isfinite(m))
    # a real-valued feature of magnitude 1e6 in training
    Xb = [[{"v": 1e6 * (i % 2) - 5e5}] for i in range(6)]
    yb = [["P"] if i % 2 else ["M"] for i in range(6)]
    big = SequenceTagger(loss=loss, max_iter=10, random_state=0).fit(Xb, yb)
    assert big.predict(Xb) == yb
    # one tag only: every prediction is that tag
    one = SequenceTagger(loss=loss, max_iter=5).fit(X, [["N"] * len(s) for s in X])
    assert all(set(p) == {"N"} for p in one.predict(X))


@pytest.mark.parametrize("loss", ["crf", "perceptron", "hinge", "sparsemap",
                                  Projection(set="simplex", geometry="kl")])
def test_parser_one_word_sentences_and_ties(loss):
    def sent(words, tags):
        return [{"form": w, "upos": t} for w, t in zip(words, tags)]

    X = [sent(["go"], ["VERB"]), sent(["dogs", "bark"], ["NOUN", "VERB"]),
         sent(["run"], ["VERB"]), sent(["big", "dogs", "bark"], ["ADJ", "NOUN", "VERB"])]
    y = [[0], [2, 0], [0], [2, 3, 0]]
    est = DependencyParser(loss=loss, max_iter=10, random_state=0).fit(X, y)
    # unknown words only: every arc scores the same (ties) except by position
    tests = X + [sent(["zzz"], ["X"]), sent(["zzz", "yyy", "xxx"], ["X", "X", "X"])]
    pred = est.predict(tests)
    validate_heads([np.asarray(h) for h in pred], True)
    assert [list(h) for h in pred[:1]] == [[0]]
    for m in est.predict_marginals(tests):
        assert np.all(np.isfinite(m))
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("make, data", [
    (lambda: MultiLabelClassifier(max_iter=50), multilabel_data),
    (lambda: LabelRanker(max_iter=50), ranking_data),
    (lambda: OrdinalRegressor(max_iter=50), ordinal_data),
])
def test_the_model_does_not_depend_on_the_memory_layout_of_X(make, data):
    # BLAS sums a column-major or strided matrix in another order than a
    # C-contiguous one (seen on AVX-512 OpenBLAS: weights 1e-12 apart), so
    # the estimators fit a C-contiguous copy
    X, Y = data()
    ref = make().fit(np.ascontiguousarray(X), Y)
    wide = np.hstack([X, X])
    for X_other in (np.asfortranarray(X), wide[:, :X.shape[1]], X[::-1][::-1]):
        est = make().fit(X_other, Y)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
