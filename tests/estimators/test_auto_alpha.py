"""alpha='auto': the penalty chosen by internal cross-validation (issue 21)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold
from sklearn.utils import check_random_state

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SegmentTagger, SequenceTagger)
from test_parsing import toy_data as parse_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _ordinal(n=90, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 4)
    y = np.digitize(X @ np.array([1.0, -0.5, 0.2, 0.0]) + 0.7 * rng.randn(n), [-0.7, 0.0, 0.7])
    return X, y


def test_auto_alpha_scores_the_folds_as_cold_fits_do_and_refits_the_best():
    """The warm-started path gives the scores of independent cold fits on
    the same folds (a strictly convex loss, L-BFGS to a tight tolerance);
    alpha_ is the best mean score's penalty and the model is the fit with
    that penalty on all the data."""
    X, y = _ordinal()
    est = OrdinalRegressor(loss="crf", alpha="auto", tol=1e-10, random_state=0).fit(X, y)
    alphas = est.cv_alphas_
    assert est.alpha == "auto" and est.cv_scores_.shape == (len(alphas), 3)
    assert est.alpha_ == alphas[np.argmax(est.cv_scores_.mean(axis=1))]
    # the same folds, each fit from scratch
    seed = int(check_random_state(0).randint(np.iinfo(np.int32).max))
    folds = StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y)
    for f, (tr, va) in enumerate(folds):
        for i, a in enumerate(alphas):
            cold = OrdinalRegressor(loss="crf", alpha=a, tol=1e-10).fit(X[tr], y[tr])
            assert cold.score(X[va], y[va]) == pytest.approx(est.cv_scores_[i, f], abs=1e-9)
    ref = OrdinalRegressor(loss="crf", alpha=est.alpha_, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    # the choice moves with the data: pure noise wants a stronger penalty
    rng = np.random.RandomState(1)
    noise = OrdinalRegressor(loss="crf", alpha="auto", random_state=0).fit(
        rng.randn(90, 30), y)
    assert noise.alpha_ > est.alpha_


def test_auto_alpha_is_reproducible_and_clones_keep_auto():
    X, y = _ordinal()
    a = OrdinalRegressor(alpha="auto", random_state=3).fit(X, y)
    b = OrdinalRegressor(alpha="auto", random_state=3).fit(X, y)
    np.testing.assert_array_equal(a.cv_scores_, b.cv_scores_)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert clone(a).get_params()["alpha"] == "auto"


@pytest.mark.parametrize("make, data", [
    (lambda: LabelRanker(alpha="auto", max_iter=30, random_state=0), "ranker"),
    (lambda: MultiLabelClassifier(loss="crf", alpha="auto", random_state=0), "multilabel"),
    (lambda: SequenceTagger(alpha="auto", random_state=0), "tagger"),
    (lambda: SegmentTagger(alpha="auto", random_state=0), "segments"),
    (lambda: DependencyParser(alpha="auto", max_iter=20, random_state=0), "parser"),
], ids=["ranker", "multilabel", "tagger", "segments", "parser"])
def test_auto_alpha_on_every_kind_of_target(make, data):
    """Every estimator, those without warm_start (SegmentTagger) too."""
    rng = np.random.RandomState(0)
    if data == "segments":
        X = [[{"w": w} for w in s.split()] for s in ["a b c", "b c", "c a b a", "a a"]] * 6
        y = [["B-X", "I-X", "O"], ["B-Y", "O"], ["O", "B-X", "I-X", "O"], ["B-Y", "I-Y"]] * 6
    elif data == "parser":
        X, y = parse_data(30)
    elif data == "tagger":
        words = ["the", "a", "cat", "dog", "sat", "ran"]
        X = [[{"w": w} for w in rng.choice(words, rng.randint(2, 6))] for _ in range(30)]
        y = [["D" if t["w"] in ("the", "a") else "N" if t["w"] in ("cat", "dog") else "V"
              for t in s] for s in X]
    else:
        X = rng.randn(60, 3)
        S = X @ rng.randn(3, 4)
        y = np.argsort(np.argsort(-S, axis=1), axis=1) + 1 if data == "ranker" \
            else (S > 0).astype(int)
    est = make().fit(X, y)
    assert est.alpha_ in est.cv_alphas_
    assert np.all(np.isfinite(est.cv_scores_))
    assert est.score(X, y) >= est.cv_scores_.mean(axis=1).max() - 0.2


@pytest.mark.parametrize("alpha", ["aut", -1.0, np.nan, True, None, [1e-3]])
def test_bad_alpha_is_a_value_error_naming_it(alpha):
    X, y = _ordinal()
    est = OrdinalRegressor(alpha=1e-3).fit(X, y)
    coef = est.coef_.copy()
    with pytest.raises(ValueError, match=r"alpha must be a non-negative finite number or "
                                         r"'auto', got"):
        est.set_params(alpha=alpha).fit(X, y)
    np.testing.assert_array_equal(est.coef_, coef)


def test_auto_alpha_needs_enough_samples():
    X, y = _ordinal(n=5)
    with pytest.raises(ValueError, match="at least 6 samples; got 5"):
        OrdinalRegressor(alpha="auto").fit(X, y)


def test_auto_alpha_in_a_pipeline_and_a_grid_search():
    """In a Pipeline (which sets and removes its own attributes on the step)
    and under GridSearchCV, as any estimator."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = _ordinal()
    pipe = make_pipeline(StandardScaler(), OrdinalRegressor(alpha="auto", random_state=0))
    pipe.fit(X, y)
    assert pipe[-1].alpha_ in pipe[-1].cv_alphas_
    search = GridSearchCV(pipe, {"ordinalregressor__loss": ["crf", "projection"]}, cv=3,
                          error_score="raise").fit(X, y)
    assert search.best_estimator_[-1].alpha == "auto"


def test_auto_alpha_on_a_tagger_with_a_tag_of_one_sequence():
    """A tag that occurs in one sequence only is missing from the training
    part of the fold that holds it: the fold's score counts it as an error
    (CoNLL-2000's I-INTJ made alpha='auto' raise before)."""
    rng = np.random.RandomState(0)
    words = ["the", "a", "cat", "dog", "sat", "ran"]
    X = [[{"w": w} for w in rng.choice(words, rng.randint(2, 6))] for _ in range(30)]
    y = [["D" if t["w"] in ("the", "a") else "N" if t["w"] in ("cat", "dog") else "V"
          for t in s] for s in X]
    y[4][0] = "RARE"
    est = SequenceTagger(alpha="auto", max_iter=20).fit(X, y)
    assert "RARE" in est.classes_
    assert np.all(np.isfinite(est.cv_scores_))
