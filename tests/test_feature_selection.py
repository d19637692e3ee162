"""Tests of structlearn.feature_selection (Martins et al. 2011)."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.pipeline import make_pipeline

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SequenceTagger)
from structlearn.feature_selection import (ArrayRestrictor, DictRestrictor,
                                           GroupLassoSelector, SelectedSentences,
                                           SelectionProblem, SequenceArrayRestrictor,
                                           TemplateRestrictor)
from structlearn.feature_selection._selector import _layers_of_order
from structlearn.losses import Perceptron, get_loss
from structlearn.solvers import (LinearProblem, group_soft_threshold, online_prox_grad,
                                 soft_threshold)
from structlearn.solvers._sparseptron import _AtomWeights, _Layer
from structlearn.structures import UnitCube

from test_estimators import multilabel_data, ordinal_data, ranking_data
from test_parsing import toy_data as parse_data


# --------------------------------------------------------------- proximal maps
def _prox_by_solver(v, penalty):
    """argmin_x 1/2 ||x - v||^2 + penalty(x) by a generic solver (smoothed
    norms, then a polish): the reference for the closed forms."""
    def f(x):
        return 0.5 * np.sum((x - v) ** 2) + penalty(x)
    best = None
    for x0 in (v, np.zeros_like(v), 0.5 * v):
        r = minimize(f, x0, method="Powell", options={"xtol": 1e-10, "ftol": 1e-14,
                                                       "maxiter": 20000})
        if best is None or r.fun < best.fun:
            best = r
    return best.x, best.fun


def test_soft_threshold_is_the_l1_prox():
    rng = np.random.RandomState(0)
    v = rng.randn(7) * 2
    tau = 0.8
    closed = soft_threshold(v, tau)
    np.testing.assert_allclose(closed, np.sign(v) * np.maximum(np.abs(v) - tau, 0))
    x, fx = _prox_by_solver(v, lambda x: tau * np.abs(x).sum())
    f_closed = 0.5 * np.sum((closed - v) ** 2) + tau * np.abs(closed).sum()
    assert f_closed <= fx + 1e-8
    np.testing.assert_allclose(closed, x, atol=1e-4)


def test_group_soft_threshold_is_the_group_lasso_prox():
    rng = np.random.RandomState(1)
    v = rng.randn(9)
    groups = np.array([0, 0, 0, 1, 1, -1, 2, 2, 2])
    d = np.array([1.0, 2.0, 0.5])
    tau = 0.9
    closed = group_soft_threshold(v, groups, tau, d)

    def pen(x):
        return tau * sum(d[m] * np.linalg.norm(x[groups == m]) for m in range(3))

    x, fx = _prox_by_solver(v, pen)
    f_closed = 0.5 * np.sum((closed - v) ** 2) + pen(closed)
    assert f_closed <= fx + 1e-8
    np.testing.assert_allclose(closed, x, atol=1e-3)
    # Eq. 14 group by group: zeroed when ||v_m|| <= tau d_m, else scaled
    for m in range(3):
        nm = np.linalg.norm(v[groups == m])
        expect = 0 * v[groups == m] if nm <= tau * d[m] else \
            (nm - tau * d[m]) / nm * v[groups == m]
        np.testing.assert_allclose(closed[groups == m], expect)
    assert closed[5] == v[5]                         # not penalised
    # singleton groups with unit weights: the soft-thresholding of Eq. 13
    np.testing.assert_allclose(group_soft_threshold(v, np.arange(9), tau),
                               soft_threshold(v, tau))


# --------------------------------------------------------- budget shrinkage
@pytest.mark.parametrize("budget", [1, 3, 7, 20])
def test_budget_driven_shrinkage_keeps_at_most_budget_groups(budget):
    rng = np.random.RandomState(budget)
    M, P = 12, 80
    atom_of = rng.randint(0, M, size=P)
    w = _AtomWeights(atom_of, M)
    w.step(np.arange(P), rng.randn(P), 1.0)
    d = rng.uniform(0.5, 3.0, size=M)
    layer = _Layer(np.arange(M), d, budget)
    before = layer.group_norms(w.norms())
    theta_before = w.theta()
    tau = layer.budget_prox(w)
    after = layer.group_norms(w.norms())
    assert np.count_nonzero(after) <= budget
    if np.count_nonzero(before) > budget:
        assert tau > 0
        # the kept groups are the ``budget`` largest by norm / d, and the
        # step is exactly Eq. 14 with threshold tau
        top = np.argsort(-before / d)[:budget]
        assert set(np.flatnonzero(after)) <= set(top)
        np.testing.assert_allclose(w.theta(), group_soft_threshold(theta_before, atom_of,
                                                                    tau, d), atol=1e-12)
    else:
        assert tau == 0 and np.array_equal(after, before)


def _eager_reference(problem, groups, d, budget, n_epochs, K, eta0, seed):
    """Algorithm 1 with dense weights and explicit proximal steps."""
    rng = np.random.RandomState(seed)
    theta = np.zeros(problem.n_params)
    t = 0
    for epoch in range(1, n_epochs + 1):
        eta = eta0 / epoch
        for i in rng.permutation(problem.n_samples):
            t += 1
            _, g = problem.value_and_grad(theta, np.array([i]))
            theta = theta - eta * g     # (a deleted group is all zero here)
            if t % K == 0:
                theta = _eager_budget(theta, groups, d, budget)
    return _eager_budget(theta, groups, d, budget)


def _eager_budget(theta, groups, d, budget):
    nz = groups >= 0
    norms = np.sqrt(np.bincount(groups[nz], weights=theta[nz] ** 2, minlength=len(d)))
    r = norms / d
    if np.count_nonzero(r) <= budget:
        return theta
    s = np.sort(r)[::-1]
    return group_soft_threshold(theta, groups, 0.5 * (s[budget - 1] + s[budget]), d)


def _multilabel_problem(loss=None, seed=0):
    X, Y = multilabel_data(n=60, k=4, d=6, seed=seed)
    return LinearProblem(X, Y, UnitCube(4), loss or Perceptron(), 4)


def test_scaled_lazy_weights_equal_eager_updates():
    pb = _multilabel_problem()
    q, d_in = pb.shape_W
    groups = np.concatenate([np.tile(np.arange(d_in), q), np.full(pb.n_params - q * d_in, -1)])
    M = d_in
    d = np.maximum(1.0, np.log2(np.bincount(groups[groups >= 0])))
    lazy, history = online_prox_grad(pb, groups, [(np.arange(M), d, 3)], n_epochs=3, K=7,
                                     eta0=0.5, random_state=4)
    eager = _eager_reference(pb, groups, d, 3, 3, 7, 0.5, 4)
    np.testing.assert_allclose(lazy, eager, atol=1e-10)
    assert len(history) == 3 * 60 // 7 + 1
    assert np.count_nonzero(np.bincount(groups[groups >= 0],
                                        weights=lazy[groups >= 0] ** 2)) <= 3


def test_sparseptron_is_invariant_to_the_step_size_up_to_scale():
    """Footnote 7: with the perceptron loss, eta0 only scales the weights."""
    X, y = ordinal_data(n=80, d=6)
    a = GroupLassoSelector(OrdinalRegressor(), budget=3, K=10, eta0=1.0,
                           random_state=0).fit(X, y)
    b = GroupLassoSelector(OrdinalRegressor(), budget=3, K=10, eta0=0.01,
                           random_state=0).fit(X, y)
    np.testing.assert_allclose(b.coef_, 0.01 * a.coef_, rtol=1e-8, atol=1e-12)
    assert a.selected_groups_ == b.selected_groups_
    # not so for the hinge loss, whose margin does not scale
    c = GroupLassoSelector(OrdinalRegressor(), loss="hinge", budget=3, K=10, eta0=1.0,
                           random_state=0).fit(X, y)
    d = GroupLassoSelector(OrdinalRegressor(), loss="hinge", budget=3, K=10, eta0=0.01,
                           random_state=0).fit(X, y)
    assert not np.allclose(d.coef_, 0.01 * c.coef_)


# -------------------------------------------------------------- penalties
def test_l1_and_sparse_group_lasso_budgets():
    X, Y = multilabel_data(n=80, k=4, d=8)
    l1 = GroupLassoSelector(MultiLabelClassifier(), penalty="l1", budget=5, K=10,
                            random_state=0).fit(X, Y)
    assert l1.n_weights_selected_ <= 5 + 4        # + the unpenalised intercepts
    W = l1.coef_[:32].reshape(4, 8)
    assert np.count_nonzero(W) <= 5
    np.testing.assert_array_equal(l1.support_, np.any(W != 0, axis=0))
    sgl = GroupLassoSelector(MultiLabelClassifier(), penalty="sparse-group-lasso",
                             budget=3, feature_budget=6, K=10, random_state=0).fit(X, Y)
    W = sgl.coef_[:32].reshape(4, 8)
    assert np.count_nonzero(np.any(W != 0, axis=0)) <= 3
    assert np.count_nonzero(W) <= 6


def test_coarse_to_fine_groups_and_their_split():
    names = ["p0", "p0|p1", "w0", "w0|p0", "w0|w1"]
    order = [("p0", "p0|p1"), ("p0", "w0|p0"), ("w0", "w0|p0"), ("w0", "w0|w1")]
    closure, layers = _layers_of_order(names, order)
    assert closure[0] == {0, 1, 3} and closure[2] == {2, 3, 4} and closure[1] == {1}
    for members in layers:   # each set holds non-overlapping groups
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                assert not closure[a] & closure[b]
    assert sorted(g for m in layers for g in m) == list(range(5))
    # a fine template is selected only with all its coarser ones
    X, y = ordinal_data(n=120, d=5)
    order = [("x0", "x1"), ("x0", "x2"), ("x3", "x2"), ("x3", "x4")]
    for budget in (1, 2, 3, 5):
        sel = GroupLassoSelector(OrdinalRegressor(), penalty="coarse-to-fine", order=order,
                                 budget=budget, K=15, random_state=1).fit(X, y)
        chosen = set(sel.selected_groups_)
        for coarse, fine in order:
            if fine in chosen:
                assert coarse in chosen, (budget, chosen)


# ----------------------------------------------------------- the estimators
def _tagging_data(n=60, seed=0):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n):
        L = rng.randint(1, 6)
        words = rng.choice(["the", "cat", "sat", "on", "mat"], size=L)
        X.append([{"w": w, "noise": f"n{rng.randint(50)}", "x": float(rng.rand() < 0.5),
                   "cap": bool(rng.rand() < 0.5)} for w in words])
        y.append(["D" if w in ("the", "on") else "N" for w in words])
    return X, y


def test_sequence_template_selection_drops_the_noise_keys():
    X, y = _tagging_data()
    sel = GroupLassoSelector(SequenceTagger(), budget=1, K=20, random_state=0).fit(X, y)
    assert sel.selected_groups_ == ["w"]
    Xs = sel.transform(X)
    assert all(set(tok) == {"w"} for seq in Xs for tok in seq)
    assert sel.n_features_selected_ == int(sel.get_support().sum()) == 5
    pipe = make_pipeline(GroupLassoSelector(SequenceTagger(), budget=1, K=20,
                                            random_state=0),
                         SequenceTagger(loss="hinge", max_iter=5, random_state=0))
    pipe.fit(X, y)
    assert pipe.score(X, y) == 1.0
    assert pipe[-1].vectorizer_.template_names_ == ["w"]


def test_sequence_label_groups_drop_single_features():
    X, y = _tagging_data()
    sel = GroupLassoSelector(SequenceTagger(), groups="label", budget=3, K=20,
                             random_state=0).fit(X, y)
    assert len(sel.selected_groups_) <= 3
    assert {"w=the", "w=on"} <= set(sel.selected_groups_)     # the determiners
    kept = {f"{k}={v}" if isinstance(v, str) else k
            for seq in sel.transform(X) for tok in seq for k, v in tok.items()}
    assert kept == set(sel.selected_groups_)


def test_sequence_array_input_and_user_groups():
    rng = np.random.RandomState(0)
    X = [rng.randn(rng.randint(1, 5), 6) for _ in range(50)]
    y = [list((x[:, 0] + x[:, 1] > 0).astype(int)) for x in X]
    groups = ["a", "a", "b", "b", "c", "c"]
    sel = GroupLassoSelector(SequenceTagger(), groups=groups, budget=1, K=20,
                             random_state=0).fit(X, y)
    assert sel.selected_groups_ == ["a"]
    Xs = sel.transform(X)
    assert all(x.shape[1] == 2 for x in Xs)
    np.testing.assert_array_equal(Xs[3], X[3][:, :2])


@pytest.mark.parametrize("make, data", [(LabelRanker, ranking_data),
                                        (OrdinalRegressor, ordinal_data),
                                        (MultiLabelClassifier, multilabel_data)])
def test_dense_estimators_in_a_pipeline(make, data):
    X, Y = data()
    rng = np.random.RandomState(0)
    X = np.hstack([X, rng.randn(len(X), 4)])          # four noise columns
    sel = GroupLassoSelector(make(), budget=X.shape[1] - 4, K=20, random_state=0)
    Xs = sel.fit_transform(X, Y)
    assert Xs.shape == (len(X), sel.n_features_selected_)
    np.testing.assert_array_equal(Xs, X[:, sel.get_support()])
    assert sel.n_features_selected_ <= X.shape[1] - 4
    pipe = make_pipeline(GroupLassoSelector(make(), budget=3, K=20, random_state=0),
                         make(loss="hinge", max_iter=10, random_state=0))
    pipe.fit(X, Y)
    assert pipe.predict(X[:5]) is not None


def test_parser_template_selection_and_pipeline():
    X, y = parse_data(40)
    sel = GroupLassoSelector(DependencyParser(), budget=4, K=10, random_state=0).fit(X, y)
    assert 1 <= len(sel.selected_groups_) <= 4
    Xs = sel.transform(X)
    assert isinstance(Xs, SelectedSentences)
    assert set(Xs.arc_templates) == set(sel.selected_groups_)
    parser = DependencyParser(loss="perceptron", max_iter=5).fit(Xs, y)
    names = parser.vectorizer_.template_names_
    assert {names[t] for t in parser.vectorizer_.templates_} <= set(sel.selected_groups_)
    pipe = make_pipeline(GroupLassoSelector(DependencyParser(), budget=4, K=10,
                                            random_state=0),
                         DependencyParser(loss="perceptron", max_iter=5))
    assert pipe.fit(X, y).score(X, y) > 0.9
    with pytest.raises(ValueError, match="template"):
        GroupLassoSelector(DependencyParser(), penalty="l1", budget=4).fit(X, y)


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, match", [
    (dict(budget=0), "budget must be an integer >= 1"),
    (dict(budget=2.5), "budget must be an integer"),
    (dict(K=0), "K must be an integer >= 1"),
    (dict(K=-3), "K must be"),
    (dict(n_epochs=0), "n_epochs"),
    (dict(eta0=0.0), "eta0"),
    (dict(penalty="elastic"), "penalty must be one of"),
    (dict(groups="words"), "groups must be one of"),
    (dict(groups=["a", "b"]), "one group per input column"),
    (dict(groups=["a", None, "b", "b"]), "do not cover the features"),
    (dict(penalty="sparse-group-lasso"), "feature_budget"),
    (dict(penalty="coarse-to-fine"), "order"),
    (dict(penalty="coarse-to-fine", order=[("x0", "nope")]), "unknown group 'nope'"),
    (dict(penalty="coarse-to-fine", order=[("x0", "x1"), ("x1", "x0")]), "cycle"),
    (dict(group_weights=[1.0, -1.0, 1.0, 1.0]), "group_weights"),
])
def test_bad_parameters_raise_clear_errors(params, match):
    X, y = ordinal_data(n=40, d=4)
    sel = GroupLassoSelector(OrdinalRegressor(), **params)
    with pytest.raises(ValueError, match=match):
        sel.fit(X, y)
    assert not hasattr(sel, "support_")


def test_not_an_estimator_and_not_fitted():
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ValueError, match="structlearn estimator"):
        GroupLassoSelector(LogisticRegression()).fit(np.ones((3, 2)), [0, 1, 0])
    with pytest.raises(NotFittedError):
        GroupLassoSelector(OrdinalRegressor()).transform(np.ones((3, 2)))
    X, y = ordinal_data(n=40, d=4)
    sel = GroupLassoSelector(OrdinalRegressor(), budget=2, K=5).fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        sel.transform(np.ones((3, 5)))


def test_pickle_clone_and_grid_search_over_the_budget():
    import pickle

    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    X, y = _tagging_data(40)
    sel = GroupLassoSelector(SequenceTagger(), budget=2, K=20, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(sel))
    assert again.transform(X) == sel.transform(X)
    assert again.selected_groups_ == sel.selected_groups_
    c = clone(sel)
    assert not hasattr(c, "support_") and c.get_params()["budget"] == 2
    pipe = make_pipeline(GroupLassoSelector(SequenceTagger(), K=20, random_state=0),
                         SequenceTagger(loss="perceptron", max_iter=3, random_state=0))
    grid = GridSearchCV(pipe, {"grouplassoselector__budget": [1, 3]}, cv=2).fit(X, y)
    assert grid.best_params_["grouplassoselector__budget"] in (1, 3)
    assert grid.score(X, y) > 0.9


# ------------------------------------------------------- the public hook
@pytest.mark.parametrize("make, data, restrictor", [
    (LabelRanker, ranking_data, ArrayRestrictor),
    (OrdinalRegressor, ordinal_data, ArrayRestrictor),
    (MultiLabelClassifier, multilabel_data, ArrayRestrictor),
    (SequenceTagger, _tagging_data, DictRestrictor),
    (DependencyParser, lambda: parse_data(20), TemplateRestrictor),
])
def test_selection_problem_is_the_estimators_public_hook(make, data, restrictor):
    X, y = data()
    sp = make().selection_problem(X, y)
    assert isinstance(sp, SelectionProblem) and type(sp.restrictor) is restrictor
    assert sp.param_column.shape == (sp.problem.n_params,)
    assert sp.param_column.max() < sp.n_columns
    assert sp.column_template.shape == (sp.n_columns,)
    assert sp.column_template.max() < len(sp.template_names)
    assert (sp.column_names is None) == (make is DependencyParser)
    if sp.column_names is not None:
        assert len(sp.column_names()) == sp.n_columns
    # the default loss is the estimator's; a given one is used
    assert type(sp.problem.loss) is type(get_loss(make().loss))
    sp2 = make().selection_problem(X, y, loss="perceptron")
    assert isinstance(sp2.problem.loss, Perceptron)
    assert not hasattr(make(), "_selection_setup")


def test_sequence_array_input_hook_restrictor():
    rng = np.random.RandomState(0)
    X = [rng.randn(3, 4) for _ in range(5)]
    y = [[0, 1, 0]] * 5
    sp = SequenceTagger().selection_problem(X, y)
    assert type(sp.restrictor) is SequenceArrayRestrictor and sp.n_columns == 4


def test_any_estimator_with_the_hook_can_be_selected_for():
    """The selector reads only ``selection_problem``: a foreign estimator
    delegating to it gives the same selection."""
    from sklearn.base import BaseEstimator

    class Wrapped(BaseEstimator):
        def __init__(self, loss="hinge"):
            self.loss = loss

        def selection_problem(self, X, y, loss=None):
            return OrdinalRegressor(loss=self.loss).selection_problem(X, y, loss)

    X, y = ordinal_data(n=60, d=5)
    a = GroupLassoSelector(OrdinalRegressor(), budget=2, K=10, random_state=0).fit(X, y)
    b = GroupLassoSelector(Wrapped(), budget=2, K=10, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.selected_groups_ == b.selected_groups_


def test_selection_problem_checks_its_arrays():
    pb = _multilabel_problem()
    with pytest.raises(ValueError, match="param_column"):
        SelectionProblem(pb, np.zeros(3, dtype=int), 6, np.arange(6), list("abcdef"),
                         ArrayRestrictor(6))
    with pytest.raises(ValueError, match="column_template"):
        SelectionProblem(pb, np.full(pb.n_params, -1), 6, np.arange(6), list("abc"),
                         ArrayRestrictor(6))


def test_former_private_names_still_import():
    """Pickled selectors name the restrictors by their former private names."""
    import structlearn.feature_selection as fs

    assert fs._DictRestrictor is DictRestrictor and fs._ArrayRestrictor is ArrayRestrictor
    assert fs._TemplateRestrictor is TemplateRestrictor
    assert fs._SequenceArrayRestrictor is SequenceArrayRestrictor
    assert fs.soft_threshold is soft_threshold
    assert fs.group_soft_threshold is group_soft_threshold


@pytest.mark.parametrize("atom_of, layers, match", [
    (np.zeros(3, dtype=int), [(np.arange(1), np.ones(1), 1)], "one atom per parameter"),
    (None, [(np.arange(6), np.ones(6))], "triple"),
    (None, [(np.arange(6), np.ones(6), 0)], "budget"),
    (None, [(np.arange(6), np.ones(6), 2.5)], "budget"),
    (None, [(np.arange(6), np.ones(5), 2)], "group_weights has 5"),
    (None, [(np.arange(6), -np.ones(6), 2)], "positive"),
    (None, [(np.arange(6), np.ones(6), 2), (np.arange(5), np.ones(5), 2)], "same atoms"),
    (None, [(np.arange(4), np.ones(4), 2)], "atom_of names atom 5"),
])
def test_online_prox_grad_checks_the_group_structure(atom_of, layers, match):
    pb = _multilabel_problem()
    if atom_of is None:
        q, d_in = pb.shape_W
        atom_of = np.concatenate([np.tile(np.arange(d_in), q),
                                  np.full(pb.n_params - q * d_in, -1)])
    with pytest.raises(ValueError, match=match):
        online_prox_grad(pb, atom_of, layers, n_epochs=1, K=5)


# ------------------------------------------------------- streamed selection
def _window_data(n=150, seed=3, numeric=True):
    """Tagging data with window templates (as CoNLL chunking features):
    word and POS unigrams / bigrams around the token, a numeric and a
    boolean feature, and noise; tags depend on the POS."""
    rng = np.random.RandomState(seed)
    vocab = [f"w{j}" for j in range(40)]
    pos_of = {w: "DNVP"[j % 4] for j, w in enumerate(vocab)}
    X, y = [], []
    for _ in range(n):
        L = rng.randint(1, 9)
        words = list(rng.choice(vocab, size=L))
        pos = [pos_of[w] if rng.rand() < 0.9 else "X" for w in words]

        def at(a, t):
            return a[t] if 0 <= t < L else "_"

        seq = []
        for t in range(L):
            seq.append({"w[0]": words[t], "w[-1]": at(words, t - 1), "w[1]": at(words, t + 1),
                        "pos[0]": pos[t], "pos[-1]": at(pos, t - 1),
                        "pos[-1,0]": at(pos, t - 1) + "|" + pos[t],
                        "noise": f"n{rng.randint(30)}"})
            if numeric:
                seq[-1].update({"len": float(len(words[t])), "first": t == 0})
        X.append(seq)
        y.append(["B" if p == "D" else "I" if p in "NX" else "O" for p in pos])
    return X, y


def _streamed_vs_materialised_weights(X, y, budget, K, loss, tagger):
    """The weights of the streamed and of the materialised sparseptron (same
    layers), as {(template, inner key, label): weight} and the dense tails."""
    from structlearn.solvers import online_prox_grad_streamed

    sp = tagger.selection_problem(X, y, loss)
    st = tagger.selection_stream(X, y, loss)
    names = list(sp.template_names)
    assert st.template_names == names
    pc = sp.param_column
    atom_of = np.where(pc >= 0, sp.column_template[np.maximum(pc, 0)], -1)
    sizes = np.bincount(atom_of[atom_of >= 0], minlength=len(names))
    np.testing.assert_array_equal(st.template_sizes, sizes)
    d = np.maximum(1.0, np.log2(np.maximum(sizes, 1)))
    layers = [(np.arange(len(names)), d, budget)]
    z, hist_m = online_prox_grad(sp.problem, atom_of, layers, 3, K, 1.0, 0)
    w, hist_s = online_prox_grad_streamed(st, layers, 3, K, 1.0, 0)
    # materialised: (column -> (template, inner key)) from the vectorizer's table
    vec = sp.restrictor.vectorizer
    pair_of = {}
    for (k, s), j in vec._columns.items():
        if j >= 0 and (type(s) is str or type(s) is tuple):
            pair_of[j] = (k, s)
    fmap = sp.problem.fmap
    S = fmap.n_support
    label = fmap.sup_label
    mat = {}
    for p in range(S):
        if z[p] != 0:
            k, s = pair_of[int(pc[p])]
            mat[(k, s, int(label[p]))] = z[p]
    fh, tmpl, theta = w.rows()
    by_hash = {st.feature_hash(k, s): (k, s) for (k, s) in pair_of.values()}
    streamed = {}
    for h, row in zip(fh, theta):
        k, s = by_hash[int(h)]
        for lab in np.flatnonzero(row):
            streamed[(k, s, int(lab))] = row[lab]
    return mat, streamed, z[S:], w.dense, hist_m, hist_s


@pytest.mark.parametrize("loss, budget, K, tagger, numeric", [
    ("perceptron", 3, 40, SequenceTagger(), True),
    ("perceptron", 3, 40, SequenceTagger(), False),    # str values only: the fast scan
    ("perceptron", 5, 25, SequenceTagger(feature_support="all"), True),
    ("hinge", 4, 30, SequenceTagger(fit_intercept=False), False),
    ("perceptron", 2, 50, SequenceTagger(transitions=False), True),
])
def test_streamed_selection_takes_the_materialised_steps(loss, budget, K, tagger, numeric):
    X, y = _window_data(numeric=numeric)
    mat, streamed, tail_m, tail_s, hist_m, hist_s = _streamed_vs_materialised_weights(
        X, y, budget, K, get_loss(loss), tagger)
    assert len(mat) > 20
    assert set(streamed) == set(mat)
    for key, v in mat.items():
        assert streamed[key] == pytest.approx(v, rel=1e-9, abs=1e-12), key
    np.testing.assert_allclose(tail_s, tail_m, rtol=1e-9, atol=1e-12)
    assert [h[:2] for h in hist_s] == [h[:2] for h in hist_m]


@pytest.mark.parametrize("numeric", [True, False])
def test_streamed_selector_selects_the_same_templates(numeric):
    X, y = _window_data(120, seed=5, numeric=numeric)
    for kw in (dict(budget=3, K=30), dict(budget=5, K=40, loss="hinge"),
               dict(penalty="coarse-to-fine", order=[("pos[0]", "pos[-1,0]"),
                                                     ("w[0]", "w[1]")], budget=4, K=30)):
        a = GroupLassoSelector(SequenceTagger(), random_state=0, **kw).fit(X, y)
        b = GroupLassoSelector(SequenceTagger(), random_state=0, stream=True, **kw).fit(X, y)
        assert b.selected_groups_ == a.selected_groups_
        assert b.group_names_ == a.group_names_
        np.testing.assert_allclose(b.group_norms_, a.group_norms_, rtol=1e-9)
        assert b.n_weights_selected_ == a.n_weights_selected_
        assert [h[1] for h in b.history_] == [h[1] for h in a.history_]
        assert b.transform(X) == a.transform(X)
        assert b.support_ is None and b.coef_ is None
        with pytest.raises(ValueError, match="stream=True"):
            b.get_support()
        with pytest.raises(ValueError, match="stream=True"):
            b.get_feature_names_out()


def test_streamed_selection_with_partial_labels_and_empty_sequences():
    X, y = _window_data(80, seed=7)
    X = X + [[]]
    y = [list(s) for s in y] + [[]]
    y[0][0] = None
    y[1][-1] = {"B", "I"}
    a = GroupLassoSelector(SequenceTagger(), budget=3, K=20, random_state=1).fit(X, y)
    b = GroupLassoSelector(SequenceTagger(), budget=3, K=20, random_state=1,
                           stream=True).fit(X, y)
    assert b.selected_groups_ == a.selected_groups_
    np.testing.assert_allclose(b.group_norms_, a.group_norms_, rtol=1e-9)


def test_streamed_selection_refuses_what_it_cannot_stream():
    X, y = _window_data(30)
    with pytest.raises(ValueError, match="groups='template'"):
        GroupLassoSelector(SequenceTagger(), groups="label", stream=True).fit(X, y)
    with pytest.raises(ValueError, match="groups='template'"):
        GroupLassoSelector(SequenceTagger(), penalty="l1", stream=True).fit(X, y)
    nested = [[dict(tok, d={"a": "x"}) for tok in seq] for seq in X]
    with pytest.raises(ValueError, match="cannot stream"):
        GroupLassoSelector(SequenceTagger(), stream=True).fit(nested, y)
    with pytest.raises(ValueError, match="cannot stream"):
        GroupLassoSelector(SequenceTagger(min_freq=2), stream=True).fit(X, y)
    arrays = [np.ones((len(s), 3)) for s in X]
    with pytest.raises(ValueError, match="cannot stream"):
        GroupLassoSelector(SequenceTagger(), stream=True).fit(arrays, y)
    with pytest.raises(ValueError, match="stream must be"):
        GroupLassoSelector(SequenceTagger(), stream="yes").fit(X, y)
    bad = [list(s) for s in X]
    bad[4] = list(bad[4])
    bad[4][0] = dict(bad[4][0], w=None)
    with pytest.raises(ValueError, match=r"sequence 4, position 0"):
        GroupLassoSelector(SequenceTagger(), stream=True).fit(bad, y)
