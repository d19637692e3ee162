"""SegmentTagger: the semi-Markov estimator, end to end."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, cross_validate

from structlearn import SegmentTagger
from structlearn.estimators._spans import _segments_to_tags, _tags_to_segments
from structlearn.metrics import chunk_f1


def segment_data(n=60, seed=0):
    """Sequences of chunks: a chunk of type A is 'the' + nouns, of type B
    'to' + verbs; 'x' tokens are outside.  Learnable from the first word
    and the word kinds."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        toks, tags = [], []
        for _ in range(rng.randint(1, 5)):
            kind = rng.randint(3)
            if kind == 2:
                toks.append({"w": "x"})
                tags.append("O")
                continue
            head, body, lab = ("the", "noun", "A") if kind == 0 else ("to", "verb", "B")
            m = rng.randint(0, 3)
            toks += [{"w": head}] + [{"w": body} for _ in range(m)]
            tags += [f"B-{lab}"] + [f"I-{lab}"] * m
        X.append(toks)
        y.append(tags)
    return X, y


def fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


@pytest.mark.parametrize("loss", ["crf", "hinge", "perceptron", "sparsemap", "m-sparsemap",
                                  "projection", "hinge-slack", "hinge-approx-slack",
                                  "poslearn", "squared"])
def test_segment_tagger_learns_chunks_with_every_loss(loss):
    X, y = segment_data()
    est = fit(SegmentTagger(loss=loss, alpha=1e-3, max_iter=60, random_state=0), X, y)
    pred = est.predict(X)
    # the averaged perceptron stops on its tol rule after 5 epochs here (the
    # chain tagger's perceptron gets .915 on these data)
    # 'squared' regresses each candidate segment's indicator on its own: with
    # word-only features '[the]' is a whole chunk in some sequences and the
    # start of a longer one in others, and MAP over the regressed scores
    # prefers short segments (it converges, to F1 .26; see the docstring)
    bar = {"perceptron": 0.85, "squared": 0.2}.get(loss, 0.97)
    assert chunk_f1(y, pred) > bar, loss
    assert est.score(X, y) == pytest.approx(chunk_f1(y, pred))
    assert est.max_length_ == 3 and est.scheme_ == "bio"
    assert est.label_max_length_ == {"A": 3, "B": 3, "O": 1}


def test_one_max_length_for_every_label():
    X, y = segment_data(30)
    est = fit(SegmentTagger(loss="hinge", max_length=4, max_iter=30, random_state=0), X, y)
    assert est.label_max_length_ == {"A": 4, "B": 4, "O": 4}
    assert chunk_f1(y, est.predict(X)) > 0.95
    with pytest.raises(ValueError, match="longer than max_length=2"):
        SegmentTagger(max_length=2).fit(X, y)


def test_every_loss_of_the_menu_is_tested_on_segments():
    from structlearn.losses import LOSSES

    tested = test_segment_tagger_learns_chunks_with_every_loss.pytestmark[0].args[1]
    assert set(LOSSES) == set(tested)


def test_spans_in_spans_out_and_predict_spans():
    X, y = segment_data(40, seed=1)
    spans = [[(s, e, lab) for s, e, lab, chunk in _tags_to_segments(t, i) if chunk]
             for i, t in enumerate(y)]
    est = fit(SegmentTagger(alpha=1e-3), X, spans)
    assert est.scheme_ == "spans"
    pred = est.predict(X)
    assert pred == est.predict_spans(X)
    assert all(isinstance(s, tuple) and len(s) == 3 for seq in pred for s in seq)
    assert est.score(X, spans) > 0.97
    # the same model from tags predicts the same spans
    tagged = fit(SegmentTagger(alpha=1e-3), X, y)
    assert tagged.predict_spans(X) == pred


@pytest.mark.parametrize("scheme", ["bio", "iob1", "iobes"])
def test_tag_schemes_round_trip(scheme):
    rng = np.random.RandomState(2)
    for _ in range(50):
        segs, t = [], 0
        for _ in range(rng.randint(1, 6)):
            if rng.rand() < 0.3:
                segs.append((t, t + 1, "O", False))
                t += 1
                continue
            n = rng.randint(1, 4)
            segs.append((t, t + n, rng.choice(["NP", "VP"]), True))
            t += n
        tags = _segments_to_tags(segs, scheme)
        assert len(tags) == t
        assert _tags_to_segments(tags, 0) == segs


def test_bad_targets_name_what_is_wrong():
    X, y = segment_data(5)
    with pytest.raises(ValueError, match="longer than max_length=1"):
        SegmentTagger(max_length=1).fit(X, y)
    spans = [[(0, 1, "A"), (0, 2, "B")]] + [[]] * 4
    with pytest.raises(ValueError, match="overlaps"):
        SegmentTagger(scheme="spans").fit(X, spans)
    with pytest.raises(ValueError, match="3 tokens in X but 2 tags"):
        SegmentTagger().fit([[{"w": "a"}] * 3], [["O", "O"]])
    with pytest.raises(ValueError, match="scheme must be"):
        SegmentTagger(scheme="bilou").fit(X, y)
    with pytest.raises(ValueError, match=r"y\[0\]\[1\] = 'X-NP' is not a valid"):
        SegmentTagger().fit([[{"w": "a"}] * 2], [["B-NP", "X-NP"]])


def test_segment_tagger_in_model_selection_and_pickle():
    X, y = segment_data(45, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gs = GridSearchCV(SegmentTagger(alpha=1e-3, max_iter=30),
                          {"loss": ["crf", "hinge"]}, cv=3).fit(X, y)
        res = cross_validate(SegmentTagger(alpha=1e-3, max_iter=30), X, y, cv=3)
    assert gs.best_score_ > 0.9
    assert np.all(res["test_score"] > 0.9)
    est = gs.best_estimator_
    again = pickle.loads(pickle.dumps(est))
    assert again.predict(X) == est.predict(X)
    assert clone(est).get_params() == est.get_params()


def test_segment_cost_penalties_reach_the_structure_and_are_checked():
    from structlearn.estimators._spans import segment_penalties
    from structlearn.structures import IntractableError

    got = segment_penalties({"A": 2.0}, 0.5, {("A", "O"): 3}, ["A", "B", "O"])
    np.testing.assert_array_equal(got["precision"], [2, 1, 1])
    np.testing.assert_array_equal(got["recall"], [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(got["mismatch"], [[0, 1, 3], [1, 0, 1], [1, 1, 0]])
    X, y = segment_data(20)
    # exact slack scaling needs integer penalties: the estimator's penalties
    # reach the structure the loss checks
    with pytest.raises(IntractableError, match="integer"):
        SegmentTagger(loss="hinge-slack", recall_penalty=0.5, max_iter=2).fit(X, y)
    fit(SegmentTagger(loss="hinge-slack", recall_penalty=2, max_iter=2), X, y)
    for kw, msg in [({"precision_penalty": {"Z": 1.0}}, "not one of the training labels"),
                    ({"recall_penalty": -1.0}, "non-negative"),
                    ({"mismatch_penalty": {("A", "A"): 1.0}}, "two different"),
                    ({"mismatch_penalty": True}, "finite non-negative number")]:
        with pytest.raises(ValueError, match=msg):
            SegmentTagger(max_iter=2, **kw).fit(X, y)


def test_fit_intercept_auto_leaves_the_per_label_bias_out():
    X, y = segment_data(40, seed=3)
    auto = fit(SegmentTagger(alpha=1e-2), X, y)
    bias = fit(SegmentTagger(alpha=1e-2, fit_intercept=True), X, y)
    assert auto.get_params()["fit_intercept"] == "auto"
    assert len(bias._z) == len(auto._z) + len(auto.classes_)
    # every weight penalised: the CRF's L-BFGS certifies its point
    assert auto.duality_gap_ is not None and bias.duality_gap_ is None
    # a loss that scores parts on their own keeps it
    squared = fit(SegmentTagger(loss="squared", alpha=1e-2, max_iter=5), X, y)
    assert len(squared._z) == len(bias._z)
    before = auto._z.copy()
    with pytest.raises(ValueError, match="fit_intercept must be True or False, or 'auto'"):
        auto.set_params(fit_intercept="yes").fit(X, y)
    np.testing.assert_array_equal(auto._z, before)


@pytest.mark.parametrize("into", ["lengths", "transitions"])
def test_a_per_label_bias_is_redundant(into):
    # What fit_intercept='auto' rests on: a label's segment bias moved into
    # its length weights, or into its column of transition weights and its
    # start weight, changes no segmentation's score -- so the CRF's
    # marginals stay the same.
    import copy
    from types import SimpleNamespace

    from structlearn.feature_maps import SegmentFeatureMap

    X, y = segment_data(40, seed=3)
    est = fit(SegmentTagger(alpha=1e-2, fit_intercept=True), X, y)
    layout = SimpleNamespace(n_support=int(est._sup_ptr[-1]), K=len(est.classes_),
                             M=est.max_length_, fit_intercept=True)
    w_in, w_first, w_last, W_len, trans, start, end, b = SegmentFeatureMap.unpack(
        layout, est._z)
    assert np.any(b != 0.0)
    if into == "lengths":
        W_len = W_len + b
    else:
        trans, start = trans + b[None, :], start + b
    folded = copy.deepcopy(est)
    folded._z = np.concatenate([w_in, w_first, w_last, W_len.ravel(), trans.ravel(), start,
                                end])
    for m0, m1 in zip(est.predict_marginals(X), folded.predict_marginals(X)):
        np.testing.assert_allclose(m1, m0, rtol=1e-9, atol=1e-12)
    assert folded.predict(X) == est.predict(X)


@pytest.mark.parametrize("loss", ["crf", "hinge", "sparsemap"])
def test_predict_marginals_cover_every_token_once(loss):
    X, y = segment_data(40, seed=3)
    est = fit(SegmentTagger(loss=loss, alpha=1e-2, max_iter=30, random_state=0), X, y)
    Xt = X[:10] + [[]]
    marg = est.predict_marginals(Xt)
    assert [m.shape for m in marg] == [(len(x), len(est.classes_)) for x in Xt]
    for m in marg:
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-8)
        assert np.all(m >= -1e-10)
    if loss == "hinge":     # the MAP segmentation's indicators
        for m, segs in zip(marg, est._decode(Xt)):
            want = np.zeros_like(m)
            for s, e, lab, _ in segs:
                want[s:e, est.classes_.index(lab)] = 1.0
            np.testing.assert_array_equal(m, want)


def test_template_selection_on_segments_keeps_the_informative_template():
    from sklearn.pipeline import make_pipeline

    from structlearn.feature_selection import GroupLassoSelector

    X, y = segment_data(60, seed=4)
    rng = np.random.RandomState(0)
    X = [[dict(t, noise=str(rng.randint(20))) for t in s] for s in X]
    sel = GroupLassoSelector(SegmentTagger(), budget=1, K=20, random_state=0).fit(X, y)
    assert sel.selected_groups_ == ["w"]
    assert all(set(t) == {"w"} for s in sel.transform(X) for t in s)
    pipe = fit(make_pipeline(GroupLassoSelector(SegmentTagger(), budget=1, K=20,
                                                random_state=0),
                             SegmentTagger(loss="hinge", max_iter=20, random_state=0)), X, y)
    assert pipe.score(X, y) > 0.9
