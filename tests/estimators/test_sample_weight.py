"""``sample_weight`` in ``fit`` and ``class_weight``: the objective ``sum_i w_i
loss_i / sum_i w_i + penalty`` is that of the repeated examples (integer
weights) and of the data without the examples of weight 0; every solver
that certifies its optimum reaches it (within its certificate)."""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.class_weight import compute_sample_weight

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SegmentTagger, SequenceTagger)
from structlearn.datasets import load_ewt, load_ewt_pos
from test_estimators import multilabel_data, ordinal_data, ranking_data
from test_segment_tagger import segment_data


def _repeat(X, y, w):
    """The examples repeated ``w_i`` times, in place (order kept)."""
    idx = np.repeat(np.arange(len(w)), w)
    if isinstance(X, list):
        return [X[i] for i in idx], [y[i] for i in idx]
    return X[idx], y[idx]


def _weights(n, seed=0, zeros=True):
    w = np.random.RandomState(seed).randint(0 if zeros else 1, 4, n)
    w[:2] = (2, 3)        # (never all zeros, some repeats)
    return w


def _dist_bound(est):
    """The certified bound of ``||z - z*||`` (strong convexity of the
    objective: ``||z - z*||^2 <= 2 (P(z) - P*) / alpha``; L-BFGS's gap with
    every coordinate penalised, BCFW's and the cutting planes')."""
    return np.sqrt(2.0 * est.duality_gap_ * est.objective_ / est.alpha)


# --------------------------------------------- integer weights == repetition
FIXED = [
    ("ordinal-crf-lbfgs", lambda: OrdinalRegressor(loss="crf", solver="lbfgs", tol=1e-9),
     ordinal_data),
    ("ordinal-hinge-bcfw", lambda: OrdinalRegressor(loss="hinge", solver="bcfw", tol=1e-7,
                                                    max_iter=500, random_state=0),
     ordinal_data),
    ("ordinal-hinge-cutting-plane", lambda: OrdinalRegressor(
        loss="hinge", solver="cutting-plane", tol=1e-7), ordinal_data),
    ("multilabel-sparsemap-bcfw", lambda: MultiLabelClassifier(
        loss="sparsemap", solver="bcfw", tol=1e-7, max_iter=500, random_state=0),
     multilabel_data),
    ("multilabel-projection-lbfgs", lambda: MultiLabelClassifier(solver="lbfgs", tol=1e-9),
     multilabel_data),
    ("ranker-sparsemap-lbfgs", lambda: LabelRanker(loss="sparsemap", solver="lbfgs",
                                                   tol=1e-9), ranking_data),
]


@pytest.mark.parametrize("make,data", [f[1:] for f in FIXED], ids=[f[0] for f in FIXED])
def test_integer_weights_equal_repeated_examples_fixed_size(make, data):
    X, y = data(n=60)
    w = _weights(len(X))
    # every coordinate penalised: the solvers' certificates bound the distance
    a = make().set_params(alpha=0.05, fit_intercept=False).fit(X, y, sample_weight=w)
    b = make().set_params(alpha=0.05, fit_intercept=False).fit(*_repeat(X, y, w))
    assert a.duality_gap_ is not None and b.duality_gap_ is not None
    dist = np.linalg.norm(a.coef_ - b.coef_)
    assert dist <= _dist_bound(a) + _dist_bound(b) + 1e-7, dist
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-5)
    # and the weights did something: the unweighted model is another one
    c = make().set_params(alpha=0.05, fit_intercept=False).fit(X, y)
    assert np.linalg.norm(c.coef_ - b.coef_) > 10 * (dist + 1e-6)


def _ragged(kind):
    if kind.startswith("tagger"):
        # "tagger-short": 15 sentences for SparseMAP by BCFW to tol=1e-6,
        # which took most of this module's time on 30 (issue 20).  The hinge
        # keeps 30: on 15 every margin is met at alpha=0.05, so the weights
        # would change nothing and the last check could not tell them apart
        X, y = load_ewt_pos("train")
        n = 15 if kind == "tagger-short" else 30
        return X[:n], y[:n]
    if kind == "segments":
        return segment_data(n=30)
    train = load_ewt("train")[:20]
    return train, [s.heads for s in train]


RAGGED = [
    # the fused CRF path (the weights inside its kernel)
    ("tagger-crf-lbfgs", lambda: SequenceTagger(loss="crf", solver="lbfgs", tol=1e-8,
                                                fit_intercept=False), "tagger"),
    ("tagger-hinge-bcfw", lambda: SequenceTagger(loss="hinge", solver="bcfw", tol=1e-6,
                                                 max_iter=400, random_state=0), "tagger"),
    ("tagger-sparsemap-bcfw", lambda: SequenceTagger(loss="sparsemap", solver="bcfw",
                                                     tol=1e-6, max_iter=400,
                                                     random_state=0), "tagger-short"),
    ("segments-crf-lbfgs", lambda: SegmentTagger(loss="crf", solver="lbfgs", tol=1e-8,
                                                 fit_intercept=False), "segments"),
    ("parser-crf-lbfgs", lambda: DependencyParser(loss="crf", solver="lbfgs", tol=1e-8),
     "parser"),
]


def _model(est):
    return est._z if hasattr(est, "_z") else est.coef_


def _same_predictions(a, b):
    return all(np.array_equal(p, q) for p, q in zip(a, b)) and len(a) == len(b)


@pytest.mark.parametrize("make,kind", [f[1:] for f in RAGGED], ids=[f[0] for f in RAGGED])
def test_integer_weights_equal_repeated_sequences(make, kind):
    X, y = _ragged(kind)
    w = _weights(len(X), zeros=False)
    a = make().set_params(alpha=0.05).fit(X, y, sample_weight=w)
    b = make().set_params(alpha=0.05).fit(*_repeat(X, y, w))
    assert a.duality_gap_ is not None
    dist = np.linalg.norm(_model(a) - _model(b))
    assert dist <= _dist_bound(a) + _dist_bound(b) + 1e-7, dist
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-5)
    assert _same_predictions(a.predict(X), b.predict(X))
    c = make().set_params(alpha=0.05).fit(X, y)
    assert np.linalg.norm(_model(c) - _model(b)) > 10 * (dist + 1e-6)


@pytest.mark.parametrize("make,kind", [f[1:] for f in RAGGED[:3]], ids=[f[0] for f in RAGGED[:3]])
def test_zero_weight_sequences_are_removed_sequences(make, kind):
    X, y = _ragged(kind)
    w = _weights(len(X), seed=1)
    assert (w == 0).any()
    keep = np.flatnonzero(w > 0)
    a = make().set_params(alpha=0.05).fit(X, y, sample_weight=(w > 0).astype(float))
    b = make().set_params(alpha=0.05).fit([X[i] for i in keep], [y[i] for i in keep])
    # (the removed sequences' features have weights in a: zero ones)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-5)
    assert _same_predictions(a.predict(X), b.predict(X))


@pytest.mark.parametrize("make,data", [f[1:] for f in FIXED[:3]], ids=[f[0] for f in FIXED[:3]])
def test_zero_weights_equal_removed_examples_fixed_size(make, data):
    X, y = data(n=60)
    w = _weights(len(X), seed=2)
    assert (w == 0).any()
    a = make().set_params(alpha=0.05, fit_intercept=False).fit(X, y, sample_weight=w)
    b = make().set_params(alpha=0.05, fit_intercept=False).fit(X[w > 0], y[w > 0],
                                                               sample_weight=w[w > 0])
    assert np.linalg.norm(a.coef_ - b.coef_) <= _dist_bound(a) + _dist_bound(b) + 1e-7


@pytest.mark.parametrize("est", [OrdinalRegressor(loss="crf"), MultiLabelClassifier(),
                                 OrdinalRegressor(loss="hinge", random_state=0, max_iter=5),
                                 OrdinalRegressor(loss="hinge", solver="bcfw",
                                                  random_state=0)],
                         ids=["crf-lbfgs", "multilabel", "hinge-sgd", "hinge-bcfw"])
def test_scaled_weights_give_the_same_fit(est):
    X, y = (multilabel_data if isinstance(est, MultiLabelClassifier) else ordinal_data)()
    w = _weights(len(X))
    a = clone(est).fit(X, y, sample_weight=w)
    b = clone(est).fit(X, y, sample_weight=w * 123.25)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    # unit weights are no weights: the same computation
    c = clone(est).fit(X, y, sample_weight=np.full(len(X), 0.5))
    np.testing.assert_array_equal(c.coef_, clone(est).fit(X, y).coef_)


def test_sgd_and_perceptron_use_the_weights():
    X, y = ordinal_data()
    w = _weights(len(X))
    for loss in ("hinge", "perceptron"):
        a = OrdinalRegressor(loss=loss, random_state=0, max_iter=5).fit(X, y, sample_weight=w)
        b = OrdinalRegressor(loss=loss, random_state=0, max_iter=5).fit(X, y)
        assert not np.allclose(a.coef_, b.coef_), loss


# ---------------------------------------------------------- class_weight
def imbalanced_ordinal(n=300, seed=0):
    """Three ordered classes, the top one rare (~5%)."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    z = X @ np.array([1.0, -0.5, 0.3]) + 0.8 * rng.randn(n)
    y = np.digitize(z, [-0.2, 2.2])
    return X, y


def test_balanced_class_weight_is_compute_sample_weight():
    X, y = imbalanced_ordinal()
    a = OrdinalRegressor(loss="crf", class_weight="balanced").fit(X, y)
    b = OrdinalRegressor(loss="crf").fit(X, y, sample_weight=compute_sample_weight("balanced", y))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # times sample_weight; a dict, classes absent from it weigh 1
    w = _weights(len(X))
    a = OrdinalRegressor(loss="crf", class_weight={2: 5.0}).fit(X, y, sample_weight=w)
    b = OrdinalRegressor(loss="crf").fit(X, y, sample_weight=w * np.where(y == 2, 5.0, 1.0))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12)


def test_weighting_a_rare_class_predicts_it_more_often():
    X, y = imbalanced_ordinal()
    assert np.mean(y == 2) < 0.1
    plain = OrdinalRegressor(loss="crf").fit(X, y)
    balanced = OrdinalRegressor(loss="crf", class_weight="balanced").fit(X, y)
    n_plain = np.sum(plain.predict(X) == 2)
    n_bal = np.sum(balanced.predict(X) == 2)
    assert n_bal > n_plain + 5, (n_plain, n_bal)
    # the rare class's recall goes up
    assert np.mean(balanced.predict(X)[y == 2] == 2) > np.mean(plain.predict(X)[y == 2] == 2)


def test_bad_class_weight():
    X, y = ordinal_data()
    with pytest.raises(ValueError, match="class_weight"):
        OrdinalRegressor(class_weight="balance").fit(X, y)
    with pytest.raises(ValueError, match="class_weight"):
        OrdinalRegressor(class_weight={5: -1.0}).fit(X, y)


# ------------------------------------------------------------- bad weights
BAD = [(np.array([-1.0]), r"sample_weight\[3\] = -1.0 is negative"),
       (np.array([np.nan]), r"sample_weight\[3\] is nan.*NaN"),
       ("short", "length"), ("zeros", "positive sum")]


def _bad(kind, n):
    if isinstance(kind, str):
        return np.ones(n - 1) if kind == "short" else np.zeros(n)
    w = np.ones(n)
    w[3] = kind[0]
    return w


@pytest.mark.parametrize("w,match", BAD, ids=["negative", "nan", "length", "zeros"])
@pytest.mark.parametrize("kind", ["ordinal", "multilabel", "tagger"])
def test_bad_weights_raise_and_leave_a_fitted_estimator_unchanged(kind, w, match):
    if kind == "tagger":
        X, y = _ragged("tagger")
        X, y = X[:10], y[:10]
        est = SequenceTagger(max_iter=5).fit(X, y)
        before = est._z.copy()
    else:
        X, y = ordinal_data() if kind == "ordinal" else multilabel_data()
        est = (OrdinalRegressor() if kind == "ordinal" else MultiLabelClassifier()).fit(X, y)
        before = est.coef_.copy()
    pred = est.predict(X)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y, sample_weight=_bad(w, len(X)))
    np.testing.assert_array_equal(est._z if kind == "tagger" else est.coef_, before)
    assert est.predict(X) == pred if kind == "tagger" else \
        np.array_equal(est.predict(X), pred)


def test_zero_weight_on_every_non_empty_sequence_is_an_error():
    X, y = _ragged("tagger")
    X, y = [[]] + X[:3], [[]] + y[:3]
    with pytest.raises(ValueError, match="every non-empty sequence"):
        SequenceTagger().fit(X, y, sample_weight=[1.0, 0.0, 0.0, 0.0])
    # the weight of an empty sequence is kept aside, not shifted onto another
    a = SequenceTagger(max_iter=30).fit(X, y, sample_weight=[5.0, 1.0, 2.0, 1.0])
    b = SequenceTagger(max_iter=30).fit(X[1:], y[1:], sample_weight=[1.0, 2.0, 1.0])
    np.testing.assert_allclose(a._z, b._z, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------ model selection
def test_pipeline_and_grid_search_route_sample_weight():
    X, y = ordinal_data()
    w = _weights(len(X))
    pipe = make_pipeline(StandardScaler(), OrdinalRegressor(loss="crf"))
    pipe.fit(X, y, ordinalregressor__sample_weight=w)
    ref = OrdinalRegressor(loss="crf").fit(StandardScaler().fit_transform(X), y,
                                           sample_weight=w)
    np.testing.assert_array_equal(pipe[-1].coef_, ref.coef_)
    grid = GridSearchCV(OrdinalRegressor(loss="crf"), {"alpha": [1e-3, 1e-1]},
                        cv=KFold(3)).fit(X, y, sample_weight=w)
    best = OrdinalRegressor(loss="crf", alpha=grid.best_params_["alpha"]).fit(
        X, y, sample_weight=w)
    np.testing.assert_array_equal(grid.best_estimator_.coef_, best.coef_)


def test_cross_validate_routes_sample_weight_with_metadata_routing():
    X, y = ordinal_data()
    w = _weights(len(X))
    cv = KFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        est = OrdinalRegressor(loss="crf").set_fit_request(sample_weight=True) \
            .set_score_request(sample_weight=True)
        res = cross_validate(est, X, y, cv=cv, params={"sample_weight": w},
                             return_estimator=True)
    for (tr, va), fitted, score in zip(cv.split(X), res["estimator"], res["test_score"]):
        ref = OrdinalRegressor(loss="crf").fit(X[tr], y[tr], sample_weight=w[tr])
        np.testing.assert_array_equal(fitted.coef_, ref.coef_)
        assert score == pytest.approx(ref.score(X[va], y[va], sample_weight=w[va]))


def test_auto_alpha_uses_the_weights():
    X, y = ordinal_data()
    w = _weights(len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = OrdinalRegressor(loss="crf", alpha="auto", random_state=0).fit(X, y, sample_weight=w)
        b = OrdinalRegressor(loss="crf", alpha="auto", random_state=0).fit(
            X, y, sample_weight=3 * w)
        c = OrdinalRegressor(loss="crf", alpha="auto", random_state=0).fit(X, y)
    np.testing.assert_allclose(a.cv_scores_, b.cv_scores_, rtol=1e-9)
    assert not np.allclose(a.cv_scores_, c.cv_scores_)
    ref = OrdinalRegressor(loss="crf", alpha=a.alpha_).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(a.coef_, ref.coef_)


def test_weighted_scores_of_the_parser_and_the_segmenter():
    X, y = segment_data(n=20)
    est = SegmentTagger(max_iter=3).fit(X, y)
    w = np.zeros(len(X))
    w[:5] = 1.0
    assert est.score(X, y, sample_weight=w) == pytest.approx(est.score(X[:5], y[:5]))
    train = load_ewt("train")[:12]
    heads = [s.heads for s in train]
    p = DependencyParser(loss="perceptron", max_iter=2, random_state=0).fit(train, heads)
    assert p.score(train, heads, sample_weight=w[:12] if len(w) >= 12 else None) == \
        pytest.approx(p.score(train[:5], heads[:5]))
