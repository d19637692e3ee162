"""Estimators: scikit-learn compatibility, model selection, bad input."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor
from structlearn.losses import LOSSES, Projection

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def ranking_data(n=120, k=4, d=5, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    S = X @ rng.randn(d, k) + 0.3 * rng.randn(n, k)
    Y = np.argsort(np.argsort(-S, axis=1), axis=1) + 1
    return X, Y


def ordinal_data(n=150, d=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    z = X @ rng.randn(d) + 0.3 * rng.randn(n)
    y = np.digitize(z, [-1.0, 0.0, 1.0]) * 10 + 5  # labels 5, 15, 25, 35
    return X, y


def multilabel_data(n=150, k=4, d=5, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    Y = (X @ rng.randn(d, k) + 0.3 * rng.randn(n, k) > 0).astype(int)
    return X, Y


TASKS = {
    "ranker-perm": (lambda **kw: LabelRanker(**kw), ranking_data),
    "ranker-birkhoff": (lambda **kw: LabelRanker(polytope="birkhoff", **kw), ranking_data),
    "ordinal": (lambda **kw: OrdinalRegressor(**kw), ordinal_data),
    "multilabel": (lambda **kw: MultiLabelClassifier(**kw), multilabel_data),
}


# ----------------------------------------------------------------- behaviour
@pytest.mark.parametrize("task", list(TASKS))
def test_every_applicable_loss_learns(task):
    make, data = TASKS[task]
    X, y = data()
    baseline = make(loss="squared", max_iter=50).fit(X, y).score(X, y)
    for loss in LOSSES:
        est = make(loss=loss, max_iter=40, random_state=0)
        try:
            est.fit(X, y)
        except ValueError as exc:
            assert loss in ("crf", "hinge-slack") and task.startswith("ranker"), exc
            continue
        score = est.score(X, y)
        if loss == "squared":
            # the structure-blind baseline of Blondel (2019): weaker, as in the paper
            assert score > (0.6 if task.startswith("ranker") else -0.5), (loss, score)
        elif task.startswith("ranker"):
            assert score > 0.75, (loss, score)
        elif task == "ordinal":
            assert score > -0.35, (loss, score)
        else:
            assert score > 0.6, (loss, score)
    assert np.isfinite(baseline)


def test_calibrated_and_map_decoding_agree_for_map_based_losses():
    X, Y = ranking_data()
    a = LabelRanker(loss="hinge", decoding="map", random_state=0, max_iter=20).fit(X, Y)
    b = clone(a).set_params(decoding="calibrated").fit(X, Y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_sparse_and_dense_inputs_give_the_same_model():
    X, y = ordinal_data()
    a = OrdinalRegressor(loss="crf").fit(X, y)
    b = OrdinalRegressor(loss="crf").fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    np.testing.assert_array_equal(a.predict(X), b.predict(sp.csr_matrix(X)))


def test_ordinal_classes_and_probabilities():
    X, y = ordinal_data()
    est = OrdinalRegressor(loss="crf").fit(X, y)
    np.testing.assert_array_equal(est.classes_, [5, 15, 25, 35])
    assert set(np.unique(est.predict(X))) <= {5, 15, 25, 35}
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    est = OrdinalRegressor(loss="sparsemap").fit(X, y)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-8)
    assert (P == 0).mean() > 0.3  # SparseMAP gives sparse distributions
    assert not hasattr(OrdinalRegressor(loss="hinge").fit(X, y), "predict_proba")
    # string labels with a given order work too
    ys = np.array(["a-low", "b-mid", "c-high", "d-top"])[(y - 5) // 10]
    est = OrdinalRegressor().fit(X, ys)
    assert est.score(X, ys) > -0.5


def test_multilabel_bounds_are_respected():
    X, Y = multilabel_data(k=5)
    Y[Y.sum(axis=1) > 2] = [1, 1, 0, 0, 0]
    Y[Y.sum(axis=1) < 1] = [0, 0, 0, 0, 1]
    for loss in ["projection", "crf", "hinge", "sparsemap"]:
        est = MultiLabelClassifier(min_labels=1, max_labels=2, loss=loss,
                                   random_state=0).fit(X, Y)
        counts = est.predict(X).sum(axis=1)
        assert counts.min() >= 1 and counts.max() <= 2, loss
    P = MultiLabelClassifier(min_labels=1, max_labels=2, loss="crf").fit(X, Y).predict_proba(X)
    s = P.sum(axis=1)
    assert np.all((s >= 1 - 1e-9) & (s <= 2 + 1e-9))


def test_predict_sparse_returns_a_distribution():
    X, Y = ranking_data()
    est = LabelRanker(loss="sparsemap").fit(X, Y)
    out = est.predict_sparse(X[:5])
    assert len(out) == 5
    for dist in out:
        w = np.array([wt for _, wt in dist])
        assert np.all(w > 0) and np.isclose(w.sum(), 1.0)
        for ranks, _ in dist:
            assert sorted(ranks) == [1, 2, 3, 4]
    M = LabelRanker(polytope="birkhoff", loss="sparsemap").fit(X, Y).predict_marginals(X[:3])
    np.testing.assert_allclose(M.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(M.sum(axis=2), 1.0, atol=1e-6)


def _bounded(X, Y, lo, hi):
    keep = (Y.sum(axis=1) >= lo) & (Y.sum(axis=1) <= hi)
    return X[keep], Y[keep]


@pytest.mark.parametrize("make", [
    lambda: (LabelRanker(loss="sparsemap"), ranking_data()),
    lambda: (LabelRanker(polytope="birkhoff", loss="sparsemap"), ranking_data()),
    lambda: (OrdinalRegressor(loss="sparsemap"), ordinal_data()),
    lambda: (MultiLabelClassifier(loss="sparsemap"), multilabel_data()),
    lambda: (MultiLabelClassifier(loss="sparsemap", min_labels=1, max_labels=3),
             _bounded(*multilabel_data(), 1, 3)),
])
def test_predict_sparse_batch_equals_row_by_row_supports(make):
    # the batched kernel against the row-wise solver it replaced
    est, (X, Y) = make()
    est.fit(X, Y)
    out = est.predict_sparse(X[:20])
    theta = est.decision_function(X[:20]) if not isinstance(est, OrdinalRegressor) \
        else est._part_scores(X[:20])
    assert len(out) == 20
    for row, dist in zip(theta, out):
        _, V, w, _ = est.structure_.sparsemap_support(row)
        labels = est._vertices_to_labels(V)
        assert len(dist) == len(w)
        for (lab, wt), lab_ref, w_ref in zip(dist, labels, w):
            np.testing.assert_array_equal(lab, lab_ref)
            assert wt == float(w_ref)


def test_warm_start_continues_from_previous_solution():
    X, Y = ranking_data()
    est = LabelRanker(loss="projection", max_iter=3, warm_start=True)
    est.fit(X, Y)
    first = est.objective_
    est.fit(X, Y)
    assert est.objective_ < first
    cold = LabelRanker(loss="projection", max_iter=3).fit(X, Y)
    assert np.isclose(cold.objective_, first)


@pytest.mark.parametrize("loss", ["hinge", "perceptron", "poslearn"])
def test_random_state_determinism(loss):
    X, Y = multilabel_data()
    a = MultiLabelClassifier(loss=loss, random_state=3, max_iter=5).fit(X, Y)
    b = MultiLabelClassifier(loss=loss, random_state=3, max_iter=5).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = MultiLabelClassifier(loss=loss, random_state=4, max_iter=5).fit(X, Y)
    assert not np.array_equal(a.coef_, c.coef_)


def test_pickle_round_trip():
    X, Y = ranking_data()
    est = LabelRanker(polytope="birkhoff", loss=Projection(set="birkhoff", geometry="kl")).fit(X, Y)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.predict(X), est2.predict(X))


def test_n_jobs_gives_the_same_model():
    X, Y = ranking_data(n=200)
    a = LabelRanker(loss="sparsemap", n_jobs=1).fit(X, Y)
    b = LabelRanker(loss="sparsemap", n_jobs=2).fit(X, Y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)


# ---------------------------------------------------------- model selection
def test_grid_search_over_losses_and_loss_params_in_a_pipeline():
    X, Y = ranking_data()
    pipe = make_pipeline(StandardScaler(), LabelRanker(polytope="birkhoff"))
    grid = GridSearchCV(pipe, {
        "labelranker__loss": ["hinge", "sparsemap",
                              Projection(set="row-stochastic", geometry="kl")],
        "labelranker__alpha": [1e-3, 1e-1],
    }, cv=3)
    grid.fit(X, Y)
    assert grid.best_score_ > 0.7
    grid2 = GridSearchCV(LabelRanker(polytope="birkhoff", loss=Projection()),
                         {"loss__geometry": ["euclidean", "kl"]}, cv=3).fit(X, Y)
    assert grid2.best_params_["loss__geometry"] in ("euclidean", "kl")


def test_cross_validate_with_structlearn_scorers():
    from sklearn.metrics import make_scorer

    from structlearn.metrics import hamming_loss, kendall_tau

    X, Y = ranking_data()
    res = cross_validate(LabelRanker(), X, Y, cv=KFold(3),
                         scoring={"tau": make_scorer(kendall_tau)})
    assert np.all(res["test_tau"] > 0.7)
    X, Y = multilabel_data()
    res = cross_validate(MultiLabelClassifier(loss="crf"), X, Y, cv=3,
                         scoring=make_scorer(hamming_loss, greater_is_better=False))
    assert np.all(-res["test_score"] < 0.2)


# ------------------------------------------------------- scikit-learn checks
# The checks every estimator fails by design, with the reasons, are
# structlearn.estimator_checks.expected_failed_checks (scikit-learn's own
# mechanism); every other check must pass, with the defaults and with the
# settings that change what the checks see (decoding, loss).  CI runs this on
# the newest and the oldest supported scikit-learn.
@pytest.mark.parametrize("est", [
    OrdinalRegressor(),
    OrdinalRegressor(loss="crf", max_iter=50),
    OrdinalRegressor(loss="crf", max_iter=50, decoding="map"),
    OrdinalRegressor(loss="hinge", max_iter=5, random_state=0),
    MultiLabelClassifier(),
    MultiLabelClassifier(loss="crf", max_iter=50),
    MultiLabelClassifier(loss="sparsemap", max_iter=50, decoding="map"),
    MultiLabelClassifier(loss="hinge", max_iter=5, random_state=0),
    MultiLabelClassifier(max_labels=2, max_iter=50),
    MultiLabelClassifier(loss="crf", max_iter=50, decoding="map"),
    LabelRanker(max_iter=50),
], ids=lambda e: f"{type(e).__name__}-{e.loss}-{e.decoding}"
                 + ("-bounded" if getattr(e, "max_labels", None) else ""))
def test_check_estimator(est):
    from structlearn.estimator_checks import expected_failed_checks

    expected = expected_failed_checks(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, expected_failed_checks=expected, on_fail=None)
    failed = sorted({r["check_name"] for r in results if r["status"] == "failed"})
    assert failed == [], failed


@pytest.mark.parametrize("est, checks", [
    (OrdinalRegressor(), ["check_classifiers_train", "check_classifiers_classes",
                          "check_sample_weight_equivalence_on_dense_data"]),
    (MultiLabelClassifier(), ["check_classifier_multioutput",
                              "check_classifiers_multilabel_output_format_predict_proba"]),
], ids=lambda v: type(v).__name__ if not isinstance(v, list) else "")
def test_design_failures_of_the_defaults_are_real(est, checks):
    """The reasons given for the defaults are not stale: without them those
    checks fail (and the same checks pass where the reason says they do)."""
    from structlearn.estimator_checks import expected_failed_checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert set(checks) <= failed
    assert set(checks) <= set(expected_failed_checks(est))
    assert not set(checks) & set(expected_failed_checks(est.set_params(loss="crf",
                                                                        decoding="map")))


@pytest.mark.parametrize("task", ["ranker-perm", "ranker-birkhoff", "multilabel"])
def test_invariants_with_valid_targets(task):
    make, data = TASKS[task]
    X, y = data()
    est = make(loss="sparsemap", max_iter=30)
    assert est.fit(X, y) is est
    assert est.n_features_in_ == X.shape[1]
    pred = est.predict(X)
    # refitting gives the same model (idempotence), params untouched
    params = est.get_params()
    np.testing.assert_array_equal(est.fit(X, y).predict(X), pred)
    assert est.get_params() == params
    # predictions of a subset / a permutation are the subset / permutation
    np.testing.assert_array_equal(est.predict(X[10:20]), pred[10:20])
    perm = np.random.RandomState(0).permutation(len(X))
    np.testing.assert_array_equal(est.predict(X[perm]), pred[perm])
    # sparse, float32, Fortran-ordered and read-only inputs
    for Xv in [sp.csr_matrix(X), sp.csc_matrix(X), X.astype(np.float32),
               np.asfortranarray(X)]:
        np.testing.assert_array_equal(clone(est).fit(Xv, y).predict(Xv), pred)
    Xro = X.copy()
    Xro.setflags(write=False)
    clone(est).fit(Xro, y).predict(Xro)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :1])
    with pytest.raises(ValueError, match="NaN"):
        est.predict(np.full_like(X, np.nan))


# --------------------------------------------------------------- bad input
BAD_FITS = [
    ("ranker", LabelRanker(), np.zeros((3, 2)), np.array([[1, 1, 2], [1, 2, 3], [2, 1, 3]]),
     "row 0 is not a permutation"),
    ("ranker", LabelRanker(), np.zeros((2, 2)), np.array([[1, 2, 4], [1, 2, 3]]),
     "out of range"),
    ("ranker", LabelRanker(), np.zeros((2, 2)), np.array([[1.5, 2, 3], [1, 2, 3]]),
     "non-integer"),
    ("ranker", LabelRanker(), np.zeros((3, 2)), np.array([[1, 2, 3], [1, 2, 3]]),
     "3 samples but y has 2"),
    ("ranker", LabelRanker(loss="crf"), np.zeros((2, 2)), np.array([[1, 2], [2, 1]]),
     "intractable"),
    ("ranker", LabelRanker(loss="hinge-slack"), np.zeros((2, 2)), np.array([[1, 2], [2, 1]]),
     "approx-slack"),
    ("ranker", LabelRanker(polytope="simplex"), np.zeros((2, 2)), np.array([[1, 2], [2, 1]]),
     "polytope"),
    ("ordinal", OrdinalRegressor(), np.zeros((3, 2)), np.array([2, 2, 2]), "at least 2 classes"),
    ("ordinal", OrdinalRegressor(), np.zeros((3, 2)), np.array([1, 2]), "3 samples but y has 2"),
    ("ordinal", OrdinalRegressor(), np.zeros((3, 2)), np.array([0.1, 0.25, 0.7]), "continuous"),
    ("ordinal", OrdinalRegressor(loss="nope"), np.zeros((2, 2)), np.array([0, 1]), "unknown loss"),
    ("ordinal", OrdinalRegressor(alpha=-1), np.zeros((2, 2)), np.array([0, 1]), "alpha"),
    ("ordinal", OrdinalRegressor(decoding="mode"), np.zeros((2, 2)), np.array([0, 1]), "decoding"),
    ("ordinal", OrdinalRegressor(solver="lbfgs", loss="hinge"), np.zeros((2, 2)),
     np.array([0, 1]), "smooth"),
    ("ordinal", OrdinalRegressor(), np.array([[0, np.nan], [1, 1]]), np.array([0, 1]), "NaN"),
    ("ordinal", OrdinalRegressor(), np.array([[0, np.inf], [1, 1]]), np.array([0, 1]), "infinity"),
    ("multilabel", MultiLabelClassifier(), np.zeros((2, 2)), np.array([[0, 2], [1, 0]]),
     r"Y\[0, 1\] = 2"),
    ("multilabel", MultiLabelClassifier(min_labels=3, max_labels=2), np.zeros((2, 2)),
     np.array([[0, 1, 1], [1, 0, 1]]), "min_labels=3 is larger than max_labels=2"),
    ("multilabel", MultiLabelClassifier(max_labels=1), np.zeros((2, 2)),
     np.array([[0, 1, 1], [1, 0, 0]]), "row 0 of Y has 2 labels"),
    ("multilabel", MultiLabelClassifier(), np.zeros((2, 2)), np.array([1, 0]), "2-D 0/1 indicator"),
    ("multilabel", MultiLabelClassifier(loss=Projection(set="birkhoff")), np.zeros((2, 2)),
     np.array([[0, 1], [1, 0]]), "valid sets"),
]


@pytest.mark.parametrize("task,est,X,y,match", BAD_FITS,
                         ids=[f"{t}-{m[:25]}" for t, _, _, _, m in BAD_FITS])
def test_bad_input_raises_and_leaves_fitted_estimator_unchanged(task, est, X, y, match):
    make, data = TASKS["ranker-perm" if task == "ranker" else task]
    Xg, yg = data()
    est = clone(est)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    # a fitted estimator (with valid settings) keeps its model after a failed fit
    good = make(loss="hinge", max_iter=3, random_state=0).fit(Xg, yg)
    before = good.predict(Xg).copy()
    coef = good.coef_.copy()
    bad_params = {k: v for k, v in est.get_params().items()
                  if k in ("loss", "alpha", "decoding", "solver", "min_labels", "max_labels",
                           "polytope")}
    good.set_params(**bad_params)
    with pytest.raises(ValueError):
        good.fit(X, y)
    np.testing.assert_array_equal(good.coef_, coef)
    good.set_params(**{k: make().get_params()[k] for k in bad_params})
    good.set_params(loss="hinge")
    np.testing.assert_array_equal(good.predict(Xg), before)


def test_predict_checks_feature_count_and_unseen_labels():
    X, y = ordinal_data()
    est = OrdinalRegressor().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    # integer labels unseen in training are placed in the order (half a
    # step below the next class); a non-integer one is not a class
    pos = np.searchsorted(est.classes_, [5, 15, 99]) - 0.5
    pred = np.searchsorted(est.classes_, est.predict(X[:3]))
    assert est.score(X[:3], np.array([5, 15, 99])) == pytest.approx(-np.abs(pos - pred).mean())
    with pytest.raises(ValueError, match="unseen in training at position 1: 15.5"):
        est.score(X[:3], np.array([est.classes_[0], 15.5, 99]))


@pytest.mark.parametrize("loss", ["hinge", "hinge-slack", "poslearn", "crf"])
def test_cutting_plane_solver_in_estimators(loss):
    X, y = ordinal_data()
    est = OrdinalRegressor(loss=loss, solver="cutting-plane", alpha=1e-2, tol=1e-3).fit(X, y)
    assert est.solver_ == "cutting-plane"
    assert est.score(X, y) > -0.3
    with pytest.raises(ValueError, match="averaged perceptron"):
        OrdinalRegressor(loss="perceptron", solver="cutting-plane").fit(X, y)
    with pytest.raises(ValueError, match="alpha > 0"):
        OrdinalRegressor(loss=loss, solver="cutting-plane", alpha=0.0).fit(X, y)


def test_ordinal_shared_weights_is_a_parallel_threshold_model():
    X, y = ordinal_data()
    est = OrdinalRegressor(loss="crf", shared_weights=True).fit(X, y)
    assert est.coef_.shape == (1, X.shape[1])
    theta = est.predict_marginals(X[:5])  # threshold marginals are monotone
    assert np.all(np.diff(theta, axis=1) <= 1e-12)
    parts = est._part_scores(X[:5])
    # thresholds differ only by their intercepts
    np.testing.assert_allclose(parts - parts[:, :1], (est.intercept_ - est.intercept_[0])[None, :]
                               .repeat(5, axis=0), atol=1e-10)
    assert est.score(X, y) > -0.3
    for solver in ["sgd", "cutting-plane"]:
        e = OrdinalRegressor(loss="hinge", shared_weights=True, solver=solver,
                             random_state=0, alpha=1e-2).fit(X, y)
        assert e.coef_.shape == (1, X.shape[1]) and e.score(X, y) > -0.4
    with pytest.raises(ValueError, match="shared_weights"):
        OrdinalRegressor(shared_weights="yes").fit(X, y)


def test_tied_weights_gradient_matches_finite_differences():
    from structlearn.losses import CRF
    from structlearn.solvers import LinearProblem, loss_value_and_grad, objective
    from structlearn.solvers._problem import _grad_W, _scores
    from structlearn.structures import OrderSimplex

    X, y = ordinal_data()
    y = np.searchsorted(np.unique(y), y)
    st, loss, alpha = OrderSimplex(4), CRF(), 0.1
    tie = np.ones((3, 1))
    rng = np.random.RandomState(0)
    W, b = rng.randn(1, X.shape[1]), rng.randn(3)
    _, G = loss_value_and_grad(loss, _scores(X, W, b, tie), y, st)
    gW = _grad_W(G, X, tie) / len(X) + alpha * W
    D = rng.randn(*W.shape)
    h = 1e-6
    pb = LinearProblem(X, y, st, loss, 1, tie=tie)
    fd = (objective(pb, pb.pack(W + h * D, b), alpha)
          - objective(pb, pb.pack(W - h * D, b), alpha)) / (2 * h)
    assert np.isclose(fd, np.sum(gW * D), rtol=1e-5)
