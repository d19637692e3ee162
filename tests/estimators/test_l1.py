"""L1 and elastic-net penalties of the estimators (``l1_ratio``, OWL-QN).

The tagger's solution is checked against the split formulation solved by
scipy's L-BFGS-B on the same training problem (built independently of the
fit, by ``selection_problem``) and against the optimality (KKT) conditions;
the stored sparse model against the unpruned one.
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from structlearn import MultiLabelClassifier, OrdinalRegressor, SequenceTagger
from structlearn.datasets import load_ewt_pos
from structlearn.feature_extraction import TokenVectorizer

from l1_reference import split_reference


@pytest.fixture(scope="module")
def pos_data():
    X, y = load_ewt_pos("train")
    Xt, yt = load_ewt_pos("test")
    return X[:40], y[:40], Xt[:60], yt[:60]


def kkt_violation(problem, z, alpha, l1_ratio):
    """Largest violation of the optimality conditions of the elastic net."""
    pen = problem.penalized
    _, g = problem.value_and_grad(z)
    g = g / problem.n_samples + alpha * (1 - l1_ratio) * pen * z
    c1 = alpha * l1_ratio
    nz = z != 0
    v_zero = np.abs(g[pen & ~nz]) - c1          # |grad| <= c1 at zero weights
    v_nz = np.abs(g[pen & nz] + c1 * np.sign(z[pen & nz]))
    return max(v_zero.max(initial=0.0), v_nz.max(initial=0.0),
               np.abs(g[~pen]).max(initial=0.0))


# the pure lasso (~11 s warm at load 8: OWL-QN and the L-BFGS-B reference to
# ~1e-12) runs in the whole suite (CI); the fast selection keeps the elastic
# net, the same OWL-QN path (issue 20)
@pytest.mark.parametrize("l1_ratio", [pytest.param(1.0, marks=pytest.mark.slow), 0.3])
def test_tagger_l1_reaches_the_reference_optimum(pos_data, l1_ratio):
    X, y, _, _ = pos_data
    alpha = 0.02
    # warm_start keeps the full support (no pruning), so z is comparable
    est = SequenceTagger(loss="crf", alpha=alpha, l1_ratio=l1_ratio, tol=1e-12,
                         max_iter=3000, warm_start=True).fit(X, y)
    assert est.solver_ == "owlqn"
    problem = SequenceTagger(loss="crf").selection_problem(X, y).problem
    assert problem.n_params == len(est._z)
    z_ref, f_ref = split_reference(problem, alpha, l1_ratio)
    z = est._z
    pen = problem.penalized
    vals, _ = problem.value_and_grad(z)
    f = vals.mean() + alpha * l1_ratio * np.abs(z[pen]).sum() + \
        0.5 * alpha * (1 - l1_ratio) * z[pen] @ z[pen]
    assert est.objective_ == pytest.approx(f, rel=1e-10)
    assert f <= f_ref + 1e-8 * f_ref
    assert f_ref - f <= 1e-6 * f_ref
    assert kkt_violation(problem, z, alpha, l1_ratio) < 1e-5
    assert kkt_violation(problem, z_ref, alpha, l1_ratio) < 1e-4  # the reference is one
    nnz = np.count_nonzero(z)
    assert est.n_nonzero_ == nnz
    assert nnz < 0.8 * len(z)  # L1 makes the model sparse (L2: no zero at all)


def test_l1_ratio_zero_is_the_l2_model(pos_data):
    X, y, Xt, _ = pos_data
    a = SequenceTagger(alpha=0.01).fit(X, y)
    b = SequenceTagger(alpha=0.01, l1_ratio=0.0).fit(X, y)
    assert a.solver_ == b.solver_ == "lbfgs"
    assert np.array_equal(a._z, b._z)
    assert a.coef_.shape == b.coef_.shape
    assert b.n_nonzero_ == np.count_nonzero(b._z)
    # and OWL-QN without L1 reaches the same model
    c = SequenceTagger(alpha=0.01, solver="owlqn", tol=1e-10, max_iter=2000).fit(X, y)
    d = SequenceTagger(alpha=0.01, solver="lbfgs", tol=1e-10, max_iter=2000).fit(X, y)
    assert c.objective_ == pytest.approx(d.objective_, rel=1e-8)
    # the per-tag biases are unpenalised and add the same constant to every
    # tag sequence of a given length when shifted together: compare them centred
    pen = np.zeros(len(c._z), dtype=bool)
    pen[:len(c._z) - len(c.classes_)] = True
    np.testing.assert_allclose(c._z[pen], d._z[pen], atol=1e-4)
    bc, bd = c.intercept_ - c.intercept_.mean(), d.intercept_ - d.intercept_.mean()
    np.testing.assert_allclose(bc, bd, atol=1e-4)


def _outputs(est, Xt):
    return (est.predict(Xt), est.predict_marginals(Xt), est.decision_function(Xt))


@pytest.mark.parametrize("kind", ["dict", "hashed", "array"])
def test_sparse_storage_predicts_the_same(pos_data, kind):
    X, y, Xt, _ = pos_data
    kw = dict(alpha=0.02, l1_ratio=0.7, random_state=0)
    if kind == "hashed":
        kw["n_features"] = 2000
    if kind == "array":
        vec = TokenVectorizer().fit(X + Xt)
        M, off = vec.transform(X)
        X = [M[off[i]:off[i + 1]] for i in range(len(X))]
        M, off = vec.transform(Xt)
        Xt = [M[off[i]:off[i + 1]] for i in range(len(Xt))]
    full = SequenceTagger(warm_start=True, **kw).fit(X, y)       # not pruned
    sparse = SequenceTagger(**kw).fit(X, y)
    assert np.array_equal(full._z[full._n_support:], sparse._z[sparse._n_support:])
    assert sparse._n_support == np.count_nonzero(full._z[:full._n_support])
    assert np.all(sparse._z[:sparse._n_support] != 0)
    assert sparse.n_nonzero_ == full.n_nonzero_ == np.count_nonzero(sparse._z)
    assert sparse.coef_.nnz == np.count_nonzero(full.coef_.toarray())
    if kind == "array":
        assert sparse.coef_.shape == full.coef_.shape
    else:
        # the features left without weights leave the vocabulary
        used = np.flatnonzero(np.asarray(abs(full.coef_).sum(axis=0)).ravel())
        assert sparse.coef_.shape == (full.coef_.shape[0], len(used))
        np.testing.assert_array_equal(sparse.coef_.toarray(), full.coef_.toarray()[:, used])
        names = full.vectorizer_.get_feature_names_out()[used]
        assert list(sparse.vectorizer_.get_feature_names_out()) == list(names)
    for a, b in zip(_outputs(full, Xt), _outputs(sparse, Xt)):
        for u, v in zip(a, b):
            if isinstance(u, list):
                assert u == v
            else:
                np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    # the pickle shrinks with the model (and round-trips)
    p_full, p_sparse = pickle.dumps(full), pickle.dumps(sparse)
    assert len(p_sparse) < (0.7 if kind != "array" else 0.9) * len(p_full)
    assert pickle.loads(p_sparse).predict(Xt) == sparse.predict(Xt)


def test_sparsify_by_hand_after_a_warm_started_fit(pos_data):
    X, y, Xt, _ = pos_data
    est = SequenceTagger(alpha=0.02, l1_ratio=1.0, warm_start=True).fit(X, y)
    before = est.predict(Xt)
    n = est._n_support
    est.sparsify()
    assert est._n_support < n and est.predict(Xt) == before


def test_l1_ratio_errors(pos_data):
    X, y, _, _ = pos_data
    for bad in (-0.1, 1.5, "0.5", None, np.nan, True):
        with pytest.raises(ValueError, match="l1_ratio must be a number in"):
            SequenceTagger(l1_ratio=bad).fit(X, y)
    with pytest.raises(ValueError, match="needs a smooth loss.*'crf'"):
        SequenceTagger(loss="hinge", l1_ratio=0.5).fit(X, y)
    with pytest.raises(ValueError, match="needs a smooth loss.*'crf'"):
        SequenceTagger(loss="perceptron", solver="owlqn").fit(X, y)
    for solver in ("lbfgs", "sgd", "bcfw", "cutting-plane"):
        with pytest.raises(ValueError, match="trained by solver='owlqn'"):
            SequenceTagger(l1_ratio=0.5, solver=solver).fit(X, y)


def test_auto_does_not_pick_bcfw_with_l1(pos_data):
    X, y, _, _ = pos_data
    est = SequenceTagger(loss="sparsemap", alpha=0.2, l1_ratio=0.5, max_iter=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X[:15], y[:15])
    assert est.solver_ == "owlqn"
    assert est.n_nonzero_ == np.count_nonzero(est._z)



@pytest.mark.parametrize("make", [
    lambda **kw: MultiLabelClassifier(loss="squared", **kw),
    lambda **kw: OrdinalRegressor(loss="crf", **kw),
])
def test_fixed_size_estimators_elastic_net(make):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 10))
    if isinstance(make(), MultiLabelClassifier):
        y = (X[:, :3] + 0.5 * rng.normal(size=(60, 3)) > 0).astype(int)
    else:
        y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=60), [-0.5, 0.5])
    alpha, r = 0.05, 0.6
    est = make(alpha=alpha, l1_ratio=r, tol=1e-10, max_iter=3000).fit(X, y)
    assert est.solver_ == "owlqn"
    assert est.n_nonzero_ == np.count_nonzero(est.coef_) + np.count_nonzero(est.intercept_)
    assert np.count_nonzero(est.coef_) < est.coef_.size
    problem = make().selection_problem(X, y).problem
    _, f_ref = split_reference(problem, alpha, r)
    assert est.objective_ <= f_ref + 1e-8 * f_ref
    assert f_ref - est.objective_ <= 1e-6 * f_ref
    assert clone(est).get_params()["l1_ratio"] == r
    with pytest.raises(ValueError, match="needs a smooth loss"):
        make(l1_ratio=0.5).set_params(loss="hinge").fit(X, y)
