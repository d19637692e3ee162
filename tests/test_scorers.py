"""Scorers of structlearn.metrics through cross_validate and GridSearchCV.

Every scorer must give, on each test fold, the value its metric gives on
the same fold's predictions, recomputed here from the fold's fitted
estimator (cross_validate) or from an estimator refitted on the same split
with the same parameters (GridSearchCV).  Data: the bundled real data sets.
"""

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SegmentTagger, SequenceTagger)
from structlearn.datasets import (load_ewt, load_ewt_constructions, load_label_ranking,
                                  load_wine_quality, pos_token_features)
from structlearn.metrics import (OrdinalMAEScorer, chunk_f1, get_scorer, get_scorer_names,
                                 hamming_loss, kendall_tau, mean_absolute_error,
                                 sequence_accuracy_score, spearman_rho, token_accuracy, uas)
from structlearn.metrics import las  # noqa: E402
from structlearn import metrics

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# scorer name -> (metric, sign)
METRICS = {
    "span_f1": (chunk_f1, 1),
    "token_accuracy": (token_accuracy, 1),
    "sequence_accuracy": (sequence_accuracy_score, 1),
    "uas": (uas, 1),
    "las": (las, 1),
    "kendall_tau": (kendall_tau, 1),
    "spearman_rho": (spearman_rho, 1),
    "neg_hamming_loss": (hamming_loss, -1),
}


def _bio_from_upos(upos):
    """IOB2 chunk tags from gold UPOS: runs of PROPN are NAME chunks, runs
    of NUM are NUM chunks (a small real span-labelling task)."""
    tags, prev = [], None
    for u in upos:
        typ = {"PROPN": "NAME", "NUM": "NUM"}.get(u)
        tags.append("O" if typ is None else ("I-" if prev == typ else "B-") + typ)
        prev = typ
    return tags


def _chunk_data(n=60):
    sents = load_ewt("train")[:n]
    return [pos_token_features(s.forms) for s in sents], [_bio_from_upos(s.upos) for s in sents]


def _to_spans(tags):
    """(start, end exclusive, type) spans of IOB2 tags (valid IOB2 only)."""
    spans, start = [], None
    for t, tag in enumerate(list(tags) + ["O"]):
        if start is not None and not tag.startswith("I-"):
            spans.append((start, t, tags[start][2:]))
            start = None
        if tag.startswith("B-"):
            start = t
    return spans


def _parse_data(n=40):
    sents = load_ewt("train")[:n]
    return [s.tokens for s in sents], [s.heads for s in sents]


def _labelled_parse_data(n=40):
    sents = load_ewt("train")[:n]
    return [s.tokens for s in sents], [(s.heads, s.deprels) for s in sents]


def _ordinal_data():
    X, y = load_wine_quality("red")
    keep = np.isin(y, [5, 6, 7])
    X, y = X[keep][:240], y[keep][:240]
    # non-contiguous labels: a step on the class order is not a unit of y
    return X, np.array([{5: 1, 6: 2, 7: 5}[v] for v in y])


def _multilabel_data():
    texts, Y, _ = load_ewt_constructions("train")
    return texts[:240], Y[:240]


# name -> (estimator factory, data loader, scorer names)
CASES = {
    "tagger-pos": (lambda: SequenceTagger(loss="crf", max_iter=15, random_state=0),
                   lambda: (lambda s: ([pos_token_features(x.forms) for x in s],
                                       [list(x.upos) for x in s]))(load_ewt("train")[:60]),
                   ["token_accuracy", "sequence_accuracy"]),
    "tagger-chunks": (lambda: SequenceTagger(loss="crf", max_iter=15, random_state=0),
                      _chunk_data, ["span_f1", "token_accuracy"]),
    "segmenter-tags": (lambda: SegmentTagger(loss="crf", max_iter=15, random_state=0),
                       _chunk_data, ["span_f1", "token_accuracy"]),
    "segmenter-spans": (lambda: SegmentTagger(loss="crf", max_iter=15, random_state=0),
                        lambda: (lambda X, y: (X, [_to_spans(t) for t in y]))(*_chunk_data()),
                        ["span_f1"]),
    "parser": (lambda: DependencyParser(loss="perceptron", max_iter=3, random_state=0),
               _parse_data, ["uas"]),
    "parser-labelled": (lambda: DependencyParser(loss="perceptron", max_iter=3,
                                                 random_state=0),
                        _labelled_parse_data, ["uas", "las"]),
    "ranker": (lambda: make_pipeline(StandardScaler(), LabelRanker(random_state=0)),
               lambda: load_label_ranking("iris"), ["kendall_tau", "spearman_rho"]),
    "ordinal": (lambda: make_pipeline(StandardScaler(), OrdinalRegressor(random_state=0)),
                _ordinal_data, ["neg_mean_absolute_error"]),
    "multilabel": (lambda: make_pipeline(TfidfVectorizer(),
                                         MultiLabelClassifier(alpha=1e-3, random_state=0)),
                   _multilabel_data, ["neg_hamming_loss"]),
}


def _subset(v, idx):
    return v[idx] if isinstance(v, np.ndarray) else [v[i] for i in idx]


def _expected(name, est, X, y):
    """The metric on est's predictions, computed without the scorer."""
    y_pred = est.predict(X)
    if name == "neg_mean_absolute_error":
        return -mean_absolute_error(y, y_pred, classes=est.classes_)
    metric, sign = METRICS[name]
    return sign * metric(y, y_pred)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cross_validate_scores_are_the_metrics(case):
    make, load, names = CASES[case]
    X, y = load()
    res = cross_validate(make(), X, y, cv=KFold(3, shuffle=True, random_state=0),
                         scoring={n: get_scorer(n) for n in names},
                         return_estimator=True, return_indices=True, error_score="raise")
    for k, (est, test) in enumerate(zip(res["estimator"], res["indices"]["test"])):
        Xt, yt = _subset(X, test), _subset(y, test)
        for n in names:
            got = res[f"test_{n}"][k]
            assert np.isfinite(got), (case, n)
            assert got == pytest.approx(_expected(n, est, Xt, yt), rel=1e-12, abs=1e-12)


def _alpha_grid(est):
    key = [k for k in est.get_params() if k == "alpha" or k.endswith("__alpha")][0]
    return key, [1e-4, 1e-1]


@pytest.mark.parametrize("case", ["tagger-chunks", "segmenter-spans", "parser", "ranker",
                                  "ordinal", "multilabel"])
def test_grid_search_scores_are_the_metrics(case):
    make, load, names = CASES[case]
    X, y = load()
    key, values = _alpha_grid(make())
    splits = list(KFold(2, shuffle=True, random_state=1).split(np.zeros((len(y), 1))))
    scoring = {n: get_scorer(n) for n in names}
    search = GridSearchCV(make(), {key: values}, scoring=scoring, refit=names[0],
                          cv=splits, error_score="raise").fit(X, y)
    for p, params in enumerate(search.cv_results_["params"]):
        for k, (train, test) in enumerate(splits):
            est = clone(make()).set_params(**params)
            est.fit(_subset(X, train), _subset(y, train))
            for n in names:
                got = search.cv_results_[f"split{k}_test_{n}"][p]
                want = _expected(n, est, _subset(X, test), _subset(y, test))
                assert got == pytest.approx(want, rel=1e-12, abs=1e-12), (case, n, params)
    # the refitted model is the one the first scorer's mean ranks best
    best = int(np.argmax(search.cv_results_[f"mean_test_{names[0]}"]))
    assert search.best_params_ == search.cv_results_["params"][best]


def test_single_scorer_in_grid_search_and_best_score():
    X, y = _chunk_data()
    splits = list(KFold(2, shuffle=True, random_state=2).split(np.zeros((len(y), 1))))
    search = GridSearchCV(SequenceTagger(loss="crf", max_iter=15, random_state=0),
                          {"alpha": [1e-4, 1e-1]}, scoring=metrics.span_f1_scorer,
                          cv=splits, error_score="raise").fit(X, y)
    means = []
    for params in search.cv_results_["params"]:
        folds = []
        for train, test in splits:
            est = SequenceTagger(loss="crf", max_iter=15, random_state=0, **params)
            est.fit(_subset(X, train), _subset(y, train))
            folds.append(chunk_f1(_subset(y, test), est.predict(_subset(X, test))))
        means.append(np.mean(folds))
    assert search.best_score_ == pytest.approx(max(means), rel=1e-12)


class _FixedOrder:
    """A fitted 'estimator' with a given class order and fixed predictions."""

    def __init__(self, classes, pred):
        self.classes_ = np.asarray(classes, dtype=object)
        self.pred = pred

    def predict(self, X):
        return np.asarray(self.pred, dtype=object)


def test_mae_scorer_uses_the_estimators_class_order():
    # order small < large < huge, deliberately not alphabetical
    est = _FixedOrder(["small", "large", "huge"], ["small", "huge", "large", "huge"])
    y = ["huge", "small", "large", "large"]
    # positions: true 2, 0, 1, 1; predicted 0, 2, 1, 2 -> errors 2, 2, 0, 1
    assert get_scorer("neg_mean_absolute_error")(est, None, y) == pytest.approx(-5 / 4)
    w = np.array([1.0, 0.0, 3.0, 1.0])
    assert get_scorer("neg_mean_absolute_error")(est, None, y, sample_weight=w) == \
        pytest.approx(-(2 + 0 + 0 + 1) / 5)
    # reversing the order leaves distances unchanged; moving a class changes them
    est2 = _FixedOrder(["large", "small", "huge"], est.pred)
    # positions: true 2, 1, 0, 0; predicted 1, 2, 0, 2 -> errors 1, 1, 0, 2
    assert get_scorer("neg_mean_absolute_error")(est2, None, y) == pytest.approx(-1.0)


def test_mae_scorer_on_ordinal_regressor_counts_class_steps():
    X, y = _ordinal_data()  # classes 1 < 2 < 5
    est = make_pipeline(StandardScaler(), OrdinalRegressor(random_state=0)).fit(X, y)
    pred = est.predict(X)
    pos = {1: 0, 2: 1, 5: 2}
    steps = np.mean([abs(pos[a] - pos[b]) for a, b in zip(y, pred)])
    score = get_scorer("neg_mean_absolute_error")(est, X, y)
    assert score == pytest.approx(-steps, rel=1e-12)
    assert score == pytest.approx(est.score(X, y), rel=1e-12)  # the estimator's own score
    # some errors involve class 5, which a numeric MAE would count 3 or 4 units off
    assert np.any((y == 5) != (pred == 5))
    assert score != pytest.approx(-np.mean(np.abs(y - pred)))


def test_mae_scorer_without_classes_uses_numeric_difference():
    class Reg:
        def predict(self, X):
            return np.array([1.0, 4.0])
    assert get_scorer("neg_mean_absolute_error")(Reg(), None, [2.0, 2.0]) == -1.5


@pytest.mark.parametrize("classes, pred, y, want", [
    # positions of 2, 4, 6 among 1 < 3 < 5: 0.5, 1.5, 2.5; predicted 0, 2, 2
    ([1, 3, 5], [1, 5, 5], [2, 4, 6], 0.5),
    ([1, 3, 5], [1, 1, 5], [0, 7, 5], (0.5 + 2.5 + 0) / 3),
    (["a", "c", "e"], ["a", "e"], ["b", "z"], (0.5 + 0.5) / 2),
])
def test_mae_scorer_places_an_unseen_label_between_its_neighbours(classes, pred, y, want):
    """A class unseen in training (a rare class absent from a CV training
    fold) sits half a step below the next class of the sorted order."""
    est = _FixedOrder(classes, pred)
    assert get_scorer("neg_mean_absolute_error")(est, None, y) == pytest.approx(-want)


@pytest.mark.parametrize("classes, y, what", [
    (["small", "large", "huge"], ["huge", "medium"], r"'medium'"),   # order not sorted
    ([1, 2, 3], [1, 1.5], r"1\.5"),                                    # not a class
    ([1, 2, 3], np.array([1, "x"], dtype=object), r"'x'"),             # not comparable
])
def test_mae_scorer_names_an_unseen_label_it_cannot_place(classes, y, what):
    est = _FixedOrder(classes, [classes[0]] * len(y))
    with pytest.raises(ValueError, match=r"unseen in training at position 1: " + what):
        get_scorer("neg_mean_absolute_error")(est, None, y)


def test_grid_search_with_a_rare_class_scores_every_candidate():
    """cv=3 on data whose top class has two samples: some training folds
    lack it, and every candidate still gets a finite score (not NaN)."""
    from sklearn.model_selection import GridSearchCV, KFold

    from structlearn import OrdinalRegressor
    rng = np.random.RandomState(0)
    X = rng.randn(60, 2)
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    top = np.argsort(X[:, 0])[-2:]
    y[top] = 3
    search = GridSearchCV(OrdinalRegressor(), {"alpha": [1e-3, 1e-1]},
                          cv=KFold(3, shuffle=False), error_score="raise")
    order = np.argsort(X[:, 0])              # both rare samples in the last fold
    search.fit(X[order], y[order])
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_sample_weight_is_routed_to_the_scorers():
    X, y = _ordinal_data()
    X_seq, y_seq = _chunk_data(40)
    rng = np.random.RandomState(0)
    cv = KFold(2, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        for est, Xd, yd, name in [
                (OrdinalRegressor(random_state=0), StandardScaler().fit_transform(X), y,
                 "neg_mean_absolute_error"),
                (SequenceTagger(loss="crf", max_iter=10, random_state=0), X_seq, y_seq,
                 "span_f1")]:
            w = rng.uniform(0.0, 2.0, len(yd))
            est.set_fit_request(sample_weight=False)   # the scorers' weights only
            scorer = get_scorer(name).set_score_request(sample_weight=True)
            res = cross_validate(est, Xd, yd, cv=cv, scoring=scorer,
                                 params={"sample_weight": w}, return_estimator=True,
                                 return_indices=True, error_score="raise")
            for k, (fitted, test) in enumerate(zip(res["estimator"], res["indices"]["test"])):
                Xt, yt, wt = _subset(Xd, test), _subset(yd, test), w[test]
                pred = fitted.predict(Xt)
                if name == "span_f1":
                    want = chunk_f1(yt, pred, sample_weight=wt)
                else:
                    want = -mean_absolute_error(yt, pred, classes=fitted.classes_,
                                                sample_weight=wt)
                assert res["test_score"][k] == pytest.approx(want, rel=1e-12)
                unweighted = _expected(name, fitted, Xt, yt)
                assert res["test_score"][k] != pytest.approx(unweighted, rel=1e-9)


def test_get_scorer_names_and_errors():
    names = get_scorer_names()
    assert names == sorted(names)
    assert set(names) == set(METRICS) | {"neg_mean_absolute_error"}
    for n in names:
        s = get_scorer(n)
        assert callable(s)
        assert s is not get_scorer(n)  # a fresh copy each time
        assert pickle.loads(pickle.dumps(s)) is not None
    assert isinstance(get_scorer("neg_mean_absolute_error"), OrdinalMAEScorer)
    custom = get_scorer("uas")
    assert get_scorer(custom) is custom
    with pytest.raises(ValueError, match=r"'f1' is not a structlearn scorer name.*span_f1"):
        get_scorer("f1")
    with pytest.raises(TypeError, match="scorer name"):
        get_scorer(3)
    assert metrics.neg_mean_absolute_error_scorer is not None
    for n in names:
        assert hasattr(metrics, f"{n}_scorer")


def test_greater_is_better_signs():
    # a perfect prediction gets the best score, 1 or 0
    class Echo(BaseEstimator):
        def __init__(self, out):
            self.out = out

        def predict(self, X):
            return self.out

    tags = [["B-NP", "I-NP", "O"]]
    assert get_scorer("span_f1")(Echo(tags), None, tags) == 1.0
    assert get_scorer("uas")(Echo([[2, 0]]), None, [[2, 0]]) == 1.0
    Y = np.array([[1, 0, 1]])
    assert get_scorer("neg_hamming_loss")(Echo(Y), None, Y) == 0.0
    assert get_scorer("neg_hamming_loss")(Echo(1 - Y), None, Y) == -1.0
    R = np.array([[1, 2, 3]])
    assert get_scorer("kendall_tau")(Echo(R[:, ::-1]), None, R) == -1.0
