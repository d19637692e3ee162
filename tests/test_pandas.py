"""pandas in, pandas out: DataFrame column names (``feature_names_in_``),
ordered categorical targets, Series targets, and the feature names and
``set_output`` of the selector and the vectorizers.

The references are scikit-learn's own estimators (the same errors and
warnings on the same column changes), fits on the equivalent NumPy arrays,
and the data themselves (the columns a selector keeps, the attribute a
vectorizer column holds)."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SequenceTagger)
from structlearn.feature_extraction import ArcVectorizer, TokenVectorizer
from structlearn.feature_selection import GroupLassoSelector
from structlearn.kernels.arcs import ATTRIBUTES

from test_estimators import multilabel_data, ordinal_data, ranking_data
from test_feature_selection import _tagging_data
from test_parsing import toy_data as parse_data

COLUMNS = ["age", "income", "height", "weight"]

ESTIMATORS = {
    "ordinal": (lambda: OrdinalRegressor(max_iter=50), ordinal_data),
    "ranker": (lambda: LabelRanker(max_iter=50), ranking_data),
    "multilabel": (lambda: MultiLabelClassifier(max_iter=50), multilabel_data),
}


def _frame(X, index=None):
    return pd.DataFrame(X[:, :len(COLUMNS)], columns=COLUMNS, index=index)


def _methods(est):
    """The methods of a fitted estimator that take X (and y for score)."""
    out = [est.predict, est.decision_function, est.predict_marginals]
    if hasattr(est, "predict_proba"):
        out.append(est.predict_proba)
    return out


def _call_all(est, X, y):
    for method in _methods(est):
        method(X)
    est.score(X, y)


# --------------------------------------------------------- feature names
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_dataframe_columns_are_recorded_and_the_model_is_the_arrays(name):
    make, data = ESTIMATORS[name]
    X, Y = data()
    Xa = X[:, :len(COLUMNS)]
    est = make().fit(_frame(X), Y)
    np.testing.assert_array_equal(est.feature_names_in_, COLUMNS)
    assert est.n_features_in_ == len(COLUMNS)
    ref = make().fit(Xa, Y)
    assert not hasattr(ref, "feature_names_in_")
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(est.predict(_frame(X)), ref.predict(Xa))
    # refitting on an array forgets the names, as scikit-learn's estimators do
    est.fit(Xa, Y)
    assert not hasattr(est, "feature_names_in_")
    assert est.n_features_in_ == len(COLUMNS)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("change", ["reordered", "renamed", "dropped"])
def test_changed_columns_raise_as_in_scikit_learn(name, change):
    make, data = ESTIMATORS[name]
    X, Y = data()
    est = make().fit(_frame(X), Y)
    Xf = _frame(X)
    if change == "reordered":
        Xbad = Xf[["income", "age", "height", "weight"]]
    elif change == "renamed":
        Xbad = Xf.rename(columns={"height": "Height"})
    else:
        Xbad = Xf.drop(columns="weight")
    # scikit-learn's own message for the same change
    ref = LogisticRegression().fit(Xf, np.arange(len(X)) % 2)
    with pytest.raises(ValueError) as expected:
        ref.predict(Xbad)
    for method in _methods(est):
        with pytest.raises(ValueError) as got:
            method(Xbad)
        assert str(got.value) == str(expected.value), method.__name__
    with pytest.raises(ValueError) as got:
        est.score(Xbad, Y)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_names_appearing_or_disappearing_warn_as_in_scikit_learn(name):
    make, data = ESTIMATORS[name]
    X, Y = data()
    Xa, Xf = X[:, :len(COLUMNS)], _frame(X)
    y01 = np.arange(len(X)) % 2
    for fit_X, predict_X in ((Xf, Xa), (Xa, Xf)):
        est = make().fit(fit_X, Y)
        ref = LogisticRegression().fit(fit_X, y01)
        with warnings.catch_warnings(record=True) as expected:
            warnings.simplefilter("always")
            ref.predict(predict_X)
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            pred = est.predict(predict_X)
        want = [str(w.message).replace("LogisticRegression", type(est).__name__)
                for w in expected]
        assert len(want) == 1
        assert [str(w.message) for w in got] == want
        # the values are used as they are, by position
        np.testing.assert_array_equal(pred, make().fit(Xa, Y).predict(Xa))


def test_same_columns_in_the_same_order_give_no_warning():
    X, y = ordinal_data()
    est = OrdinalRegressor().fit(_frame(X), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _call_all(est, _frame(X[::-1]), y[::-1])


def test_selection_problem_names_the_groups_by_the_columns():
    X, y = ordinal_data()
    setup = OrdinalRegressor().selection_problem(_frame(X), y)
    assert setup.template_names == COLUMNS
    assert setup.column_names() == COLUMNS
    setup = OrdinalRegressor().selection_problem(X, y)
    assert setup.template_names == [f"x{j}" for j in range(X.shape[1])]


# ------------------------------------------------------------- targets
LEVELS = ["low", "medium", "high"]


def _ordinal_levels(n=150, seed=0):
    """X and labels low < medium < high, whose alphabetical order (high <
    low < medium) is not the true one."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    z = X @ np.array([2.0, -1.0, 0.5]) + 0.3 * rng.randn(n)
    codes = np.digitize(z, [-1.0, 1.0])
    return X, codes, np.array(LEVELS)[codes]


@pytest.mark.parametrize("wrap", ["categorical", "series"])
def test_ordered_categorical_sets_the_class_order(wrap):
    X, codes, labels = _ordinal_levels()
    dtype = pd.CategoricalDtype(LEVELS, ordered=True)
    y = pd.Categorical(labels, dtype=dtype) if wrap == "categorical" else \
        pd.Series(labels, dtype=dtype, index=np.arange(len(labels))[::-1])
    est = OrdinalRegressor(loss="crf").fit(X, y)
    np.testing.assert_array_equal(est.classes_, LEVELS)
    # the model is the one of the integer codes 0 < 1 < 2
    ref = OrdinalRegressor(loss="crf").fit(X, codes)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-12)
    pred = est.predict(X)
    np.testing.assert_array_equal(pred, np.array(LEVELS)[ref.predict(X)])
    # score: minus the MAE in the categorical's positions
    rank = {c: r for r, c in enumerate(LEVELS)}
    mae = np.mean([abs(rank[p] - rank[t]) for p, t in zip(pred, labels)])
    assert est.score(X, y) == pytest.approx(-mae)
    assert est.score(X, labels) == pytest.approx(-mae)
    assert mae > 0


def test_unordered_categoricals_and_series_are_sorted_as_arrays():
    X, _, labels = _ordinal_levels()
    ref = OrdinalRegressor().fit(X, labels)
    np.testing.assert_array_equal(ref.classes_, sorted(LEVELS))
    for y in (pd.Categorical(labels, categories=LEVELS), pd.Series(labels)):
        est = OrdinalRegressor().fit(X, y)
        np.testing.assert_array_equal(est.classes_, ref.classes_)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
        assert est.score(X, y) == ref.score(X, labels)


def test_string_labels_warn_that_their_order_is_alphabetical():
    """A user's 'low' < 'medium' < 'high' as plain strings is sorted to
    high < low < medium: the fit says so (and how to give the order); an
    ordered categorical, integer labels and two string classes (the order
    only flips the sign) do not warn."""
    X, codes, labels = _ordinal_levels()
    with pytest.warns(UserWarning, match=r"alphabetically: \['high', 'low', 'medium'\].*"
                                         r"ordered pandas categorical"):
        OrdinalRegressor().fit(X, labels)
    with pytest.warns(UserWarning, match="alphabetically"):
        OrdinalRegressor().fit(X, pd.Series(labels))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        OrdinalRegressor().fit(X, pd.Categorical(labels, categories=LEVELS, ordered=True))
        OrdinalRegressor().fit(X, codes)
        two = np.where(codes > 0, "high", "low")
        OrdinalRegressor().fit(X, two)


def test_unused_categories_are_not_classes_and_missing_labels_raise():
    X, _, labels = _ordinal_levels()
    dtype = pd.CategoricalDtype(["none", "low", "medium", "high", "extreme"],
                                ordered=True)
    est = OrdinalRegressor().fit(X, pd.Categorical(labels, dtype=dtype))
    np.testing.assert_array_equal(est.classes_, LEVELS)
    y = pd.Categorical(labels, dtype=dtype)
    y[7] = np.nan
    with pytest.raises(ValueError, match="missing label at position 7"):
        OrdinalRegressor().fit(X, y)
    with pytest.raises(ValueError, match="unseen in training at position 0"):
        est.score(X[:1], pd.Categorical(["none"], dtype=dtype))


def test_series_and_dataframe_targets_fit_as_arrays():
    X, y = ordinal_data()
    shuffled_index = np.random.RandomState(0).permutation(len(y))
    est = OrdinalRegressor().fit(X, pd.Series(y, index=shuffled_index))
    ref = OrdinalRegressor().fit(X, y)
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    for make, data in ((LabelRanker, ranking_data), (MultiLabelClassifier, multilabel_data)):
        X, Y = data()
        Yf = pd.DataFrame(Y, columns=[f"label{j}" for j in range(Y.shape[1])])
        est = make(max_iter=50).fit(_frame(X), Yf)
        ref = make(max_iter=50).fit(X[:, :len(COLUMNS)], Y)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
        assert est.score(_frame(X), Yf) == ref.score(X[:, :len(COLUMNS)], Y)


# ------------------------------------------------------------ selector
def _selection_data(n=200, seed=0):
    """Columns 'b' and 'e' carry the signal, the other four are noise."""
    rng = np.random.RandomState(seed)
    X = pd.DataFrame(rng.randn(n, 6), columns=list("abcdef"),
                     index=[f"row{i}" for i in rng.permutation(n)])
    y = np.digitize(2 * X["b"] - X["e"] + 0.1 * rng.randn(n), [-1.0, 1.0])
    return X, y


def test_selector_names_and_pandas_output_follow_the_kept_columns():
    X, y = _selection_data()
    sel = GroupLassoSelector(OrdinalRegressor(), budget=2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(sel.feature_names_in_, X.columns)
    assert sel.n_features_in_ == 6
    kept = list(X.columns[sel.get_support()])
    assert kept == ["b", "e"] == sel.selected_groups_
    np.testing.assert_array_equal(sel.get_feature_names_out(), kept)
    np.testing.assert_array_equal(sel.get_feature_names_out(list("abcdef")), kept)
    out = sel.set_output(transform="pandas").transform(X)
    pd.testing.assert_frame_equal(out, X[kept])
    assert isinstance(sel.fit_transform(X, y), pd.DataFrame)
    out = sel.set_output(transform="default").transform(X)
    np.testing.assert_array_equal(out, X[kept].to_numpy())
    with pytest.raises(ValueError, match="same order"):
        sel.transform(X[list("bacdef")])
    with pytest.raises(ValueError, match="input_features is not equal"):
        sel.get_feature_names_out(list("abcdeg"))
    with pytest.raises(ValueError, match="length equal to the number of features"):
        sel.get_feature_names_out(list("abc"))
    # array input: scikit-learn's default names
    sel = GroupLassoSelector(OrdinalRegressor(), budget=2, random_state=0).fit(X.values, y)
    assert not hasattr(sel, "feature_names_in_")
    np.testing.assert_array_equal(sel.get_feature_names_out(), ["x1", "x4"])
    np.testing.assert_array_equal(sel.get_feature_names_out(list("pqrstu")), ["q", "t"])
    with pytest.raises(NotFittedError):
        GroupLassoSelector(OrdinalRegressor()).get_feature_names_out()


def test_selector_in_a_pipeline_with_pandas_output():
    X, y = _selection_data()
    pipe = Pipeline([("scale", StandardScaler()),
                     ("select", GroupLassoSelector(OrdinalRegressor(), budget=2,
                                                   random_state=0))])
    np.testing.assert_array_equal(pipe.fit(X, y).get_feature_names_out(), ["b", "e"])
    model = make_pipeline(StandardScaler(),
                          GroupLassoSelector(OrdinalRegressor(), budget=2, random_state=0),
                          OrdinalRegressor())
    model.set_output(transform="pandas").fit(X, y)
    np.testing.assert_array_equal(model[:-1].get_feature_names_out(), ["b", "e"])
    np.testing.assert_array_equal(model[-1].feature_names_in_, ["b", "e"])
    Xt = model[:-1].transform(X)
    assert list(Xt.columns) == ["b", "e"] and list(Xt.index) == list(X.index)
    # the same model as on the two columns by hand
    ref = OrdinalRegressor().fit(StandardScaler().fit_transform(X)[:, [1, 4]], y)
    np.testing.assert_allclose(model[-1].coef_, ref.coef_, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="same order"):
        model.predict(X[list("bacdef")])


def test_selector_on_sequences_names_the_kept_features_and_refuses_pandas():
    X, y = _tagging_data()
    sel = GroupLassoSelector(SequenceTagger(), groups="label", budget=3, K=20,
                             random_state=0).fit(X, y)
    assert not hasattr(sel, "n_features_in_")
    # the names of the features left in the transformed dicts
    kept = {f"{k}={v}" if isinstance(v, str) else k
            for seq in sel.transform(X) for tok in seq for k, v in tok.items()}
    assert set(sel.get_feature_names_out()) == kept == set(sel.selected_groups_)
    with pytest.raises(ValueError, match="input_features applies to 2-D input"):
        sel.get_feature_names_out(["w"])
    sel.set_output(transform="pandas")
    with pytest.raises(ValueError, match="does not apply"):
        sel.transform(X)
    # arrays per sequence: the kept columns, named as TokenVectorizer names them
    rng = np.random.RandomState(0)
    Xa = [rng.randn(rng.randint(1, 5), 6) for _ in range(50)]
    ya = [list((x[:, 0] + x[:, 1] > 0).astype(int)) for x in Xa]
    sel = GroupLassoSelector(SequenceTagger(), groups=["a", "a", "b", "b", "c", "c"],
                             budget=1, K=20, random_state=0).fit(Xa, ya)
    np.testing.assert_array_equal(sel.get_feature_names_out(), ["x0", "x1"])


def test_selector_on_sentences_has_no_feature_names():
    X, y = parse_data(20)
    sel = GroupLassoSelector(DependencyParser(), budget=4, K=10, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="selected_groups_"):
        sel.get_feature_names_out()


# ----------------------------------------------------------- vectorizers
def test_token_vectorizer_feature_names():
    rng = np.random.RandomState(0)
    X = [rng.randn(rng.randint(1, 4), 3) for _ in range(5)]
    tv = TokenVectorizer().fit(X)
    np.testing.assert_array_equal(tv.get_feature_names_out(), ["x0", "x1", "x2"])
    np.testing.assert_array_equal(tv.get_feature_names_out(["a", "b", "c"]), ["a", "b", "c"])
    with pytest.raises(ValueError, match="length equal to the number of input columns"):
        tv.get_feature_names_out(["a", "b"])
    assert not hasattr(tv, "set_output")
    Xd = [[{"w": "the"}, {"w": "cat", "n": 2.0}]]
    tv = TokenVectorizer().fit(Xd)
    names = tv.get_feature_names_out()
    M, _ = tv.transform(Xd)
    # column j holds the feature named names[j]
    assert {names[j] for j in M[0].indices} == {"w=the"}
    assert {names[j]: v for j, v in zip(M[1].indices, M[1].data)} == {"w=cat": 1.0, "n": 2.0}
    with pytest.raises(ValueError, match="input_features must be None"):
        tv.get_feature_names_out(["w"])


def test_arc_vectorizer_names_the_attribute_columns():
    X, y = parse_data(10)
    vec = ArcVectorizer().fit(X, y)
    names = vec.get_feature_names_out()
    A, word_off = vec.transform(X)
    assert len(names) == A.shape[1] == len(ATTRIBUTES)
    tokens = [tok for sent in X for tok in sent]
    for c, name in enumerate(names):
        inverse = {i: v for v, i in vec.vocabularies_[c].items()}
        got = [inverse[i] for i in A[:, c]]
        if name == "form":
            want = [t["form"].lower() for t in tokens]
        elif name == "prefix":
            want = [t["form"].lower()[:vec.prefix_length] for t in tokens]
        else:
            want = [t.get(name) or "_" for t in tokens]
        assert got == want, name
    with pytest.raises(ValueError, match="input_features must be None"):
        vec.get_feature_names_out(["form"])
    assert not hasattr(vec, "set_output")
