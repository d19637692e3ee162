"""The chain structure under every loss, and the SequenceTagger estimator."""

import itertools
import pickle
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from structlearn import SequenceTagger
from structlearn.estimators.sequence import chain_problem
from structlearn.losses import (CRF, Hinge, PosLearn, Projection, SparseMAP,
                                Squared, get_loss)
from structlearn.solvers import objective
from structlearn.structures.chain import Chain

K = 3
LENGTHS = [1, 3, 4, 2]


def batch(seed=0, lengths=LENGTHS, k=K, scale=1.5):
    rng = np.random.RandomState(seed)
    tok_off = np.concatenate([[0], np.cumsum(lengths)])
    st = Chain(k, tok_off)
    theta = scale * rng.randn(st.n_parts)
    y = rng.randint(k, size=tok_off[-1])
    return st, theta, y


def all_sequences(L, k):
    return [np.array(s) for s in itertools.product(range(k), repeat=L)]


SMOOTH = {
    "crf": CRF(), "sparsemap": SparseMAP(), "m-sparsemap": SparseMAP(margin=True),
    "projection": Projection(), "cube-euclidean": Projection(set="cube"),
    "cube-kl": Projection(set="cube", geometry="kl"), "squared": Squared(),
}


@pytest.mark.parametrize("name", list(SMOOTH))
def test_smooth_loss_gradients_match_finite_differences(name):
    loss = SMOOTH[name]
    st, theta, y = batch(1)
    vals, G = loss.value_and_grad(theta, y, st)
    assert vals.shape == (st.n,) and G.shape == theta.shape
    assert np.all(vals >= -1e-9)
    rng = np.random.RandomState(2)
    for _ in range(3):
        D = rng.randn(st.n_parts)
        h = 1e-6
        fp = loss.value_and_grad(theta + h * D, y, st)[0].sum()
        fm = loss.value_and_grad(theta - h * D, y, st)[0].sum()
        assert np.isclose((fp - fm) / (2 * h), np.sum(G * D), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", ["perceptron", "hinge", "hinge-slack",
                                  "hinge-approx-slack", "poslearn", "crf", "sparsemap",
                                  "m-sparsemap", "projection"])
def test_losses_vanish_at_a_confident_correct_prediction(name):
    loss = get_loss(name)
    st, _, y = batch(3)
    theta = 20.0 * st.encode(y)
    vals, G = loss.value_and_grad(theta, y, st)
    assert np.all(vals >= -1e-9)
    assert np.allclose(vals, 0.0, atol=1e-6), vals
    # and are positive where the prediction is wrong
    theta_bad = 20.0 * st.encode((y + 1) % K)
    assert np.all(loss.value_and_grad(theta_bad, y, st)[0] > 0.1)


def test_slack_losses_are_ordered_approx_le_exact_le_poslearn():
    for seed in range(5):
        st, theta, y = batch(seed, lengths=[2, 5, 3, 4])
        approx = Hinge("approx-slack").value_and_grad(theta, y, st)[0]
        exact = Hinge("slack").value_and_grad(theta, y, st)[0]
        pos = PosLearn().value_and_grad(theta, y, st)[0]
        assert np.all(approx <= exact + 1e-9)
        assert np.all(exact <= pos + 1e-9)


def test_exact_slack_loss_matches_brute_force():
    st, theta, y = batch(4, lengths=[3, 4])
    vals = Hinge("slack").value_and_grad(theta, y, st)[0]
    for i in range(st.n):
        a, b = st.tok_off[i], st.tok_off[i + 1]
        one = Chain(K, [0, b - a])
        th = theta[st.part_off[i]:st.part_off[i + 1]]
        s_true = one.scores(th, y[a:b])[0]
        best = max(np.sum(s != y[a:b]) * max(1 - s_true + one.scores(th, s)[0], 0)
                   for s in all_sequences(b - a, K))
        assert np.isclose(vals[i], best)


def test_crf_loss_is_the_negative_log_likelihood():
    st, theta, y = batch(5, lengths=[3, 2])
    vals = CRF().value_and_grad(theta, y, st)[0]
    for i in range(st.n):
        a, b = st.tok_off[i], st.tok_off[i + 1]
        one = Chain(K, [0, b - a])
        th = theta[st.part_off[i]:st.part_off[i + 1]]
        scores = np.array([one.scores(th, s)[0] for s in all_sequences(b - a, K)])
        logZ = np.log(np.exp(scores - scores.max()).sum()) + scores.max()
        assert np.isclose(vals[i], logZ - one.scores(th, y[a:b])[0])


def test_projections_lie_in_their_sets():
    st, theta, y = batch(6, scale=3.0)
    mu = st.project(theta, "cube", "euclidean")
    ub = np.where(st.unary_mask, 1.0, 0.0)
    assert mu.min() >= 0
    mu_c = st.project(theta, "marginal")
    # the chain-polytope projection: unary marginals sum to one per token
    np.testing.assert_allclose(st.unary(mu_c).sum(axis=1), 1.0, atol=1e-8)
    with pytest.raises(ValueError, match="cannot project"):
        st.project(theta, "simplex")
    assert ub.sum() == st.tok_off[-1] * K


def test_calibrated_decoding_is_the_per_token_argmax():
    st, theta, y = batch(7)
    mu = st.marginals(theta)
    np.testing.assert_array_equal(st.calibrated_decode(mu), st.unary(mu).argmax(axis=1))


# ------------------------------------------------------------ training problem
def toy_problem(loss, fit_intercept=True, support="observed"):
    rng = np.random.RandomState(0)
    X = [[{"w": rng.choice(["a", "b", "c", "d"]), "x": float(rng.randn())}
          for _ in range(rng.randint(1, 5))] for _ in range(12)]
    y = [[int(t["w"] in "ab") + int(t["x"] > 0) for t in s] for s in X]
    est = SequenceTagger(loss=loss, feature_support=support, fit_intercept=fit_intercept)
    return est, X, y


@pytest.mark.parametrize("support", ["observed", "all"])
def test_chain_problem_gradient_matches_finite_differences(support):
    from structlearn.feature_extraction import TokenVectorizer

    est, X, y = toy_problem("crf", support=support)
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    flat = np.concatenate([np.asarray(s) for s in y])
    sup_ptr, sup_label = est._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    pb = chain_problem(Xtok, tok_off, flat, 3, sup_ptr, sup_label, CRF())
    rng = np.random.RandomState(1)
    z = rng.randn(pb.n_params)
    vals, g = pb.value_and_grad(z)
    alpha = 0.1
    g_obj = g / pb.n_samples + alpha * z * pb.penalized
    D = rng.randn(pb.n_params)
    h = 1e-6
    fd = (objective(pb, z + h * D, alpha) - objective(pb, z - h * D, alpha)) / (2 * h)
    assert np.isclose(fd, g_obj @ D, rtol=1e-5)
    # subsets add up to the full gradient
    v1, g1 = pb.value_and_grad(z, np.arange(0, 6))
    v2, g2 = pb.value_and_grad(z, np.arange(6, 12))
    np.testing.assert_allclose(g1 + g2, g, atol=1e-10)
    np.testing.assert_allclose(np.concatenate([v1, v2]), vals)
    # the sparse form at z = scale * v (bias unscaled): same losses and
    # gradient entries, and the scores read only the parameters params_of names
    idx = np.array([1, 4, 7])
    v3, g3 = pb.value_and_grad(z, idx)
    v = z / 0.4
    v[~pb.penalized] = z[~pb.penalized]
    v4, cols, gv = pb.sparse_value_and_grad(v, idx, 0.4)
    np.testing.assert_allclose(v4, v3, rtol=1e-10)
    np.testing.assert_allclose(np.bincount(cols, weights=gv, minlength=pb.n_params), g3,
                               atol=1e-10)
    read = np.zeros(pb.n_params, dtype=bool)
    read[pb.params_of(idx)] = True
    z_other = np.where(read, z, rng.randn(pb.n_params))
    np.testing.assert_allclose(pb.value_and_grad(z_other, idx)[0], v3, rtol=1e-12)


class _GenericCRF(CRF):
    """The CRF loss, declared not to be the Gibbs likelihood: the chain
    problem then takes the generic path (batch scores, the loss object,
    reduced gradient)."""

    gibbs_likelihood = False


@pytest.mark.parametrize("support", ["observed", "all"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_fused_crf_pass_equals_the_generic_path(support, fit_intercept, scale):
    # the fused per-sequence CRF kernel (chain_crf_value_grad) against the
    # loss object on batch scores; scale 1e4 sends sequences to the
    # log-space fallback of forward-backward
    from structlearn.feature_extraction import TokenVectorizer

    est, X, y = toy_problem("crf", support=support, fit_intercept=fit_intercept)
    X, y = X + [[{"w": "a", "x": 2.5}]], y + [[1]]  # a one-token sequence
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    flat = np.concatenate([np.asarray(s) for s in y])
    sup = est._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    for n_jobs in (1, 2):
        fused = chain_problem(Xtok, tok_off, flat, 3, *sup, CRF(), fit_intercept, n_jobs)
        generic = chain_problem(Xtok, tok_off, flat, 3, *sup, _GenericCRF(), fit_intercept,
                                n_jobs)
        assert fused._fused and not generic._fused
        z = scale * np.random.RandomState(n_jobs).randn(fused.n_params)
        for idx in (None, np.array([0, 5, 5, 12])):
            v1, g1 = fused.value_and_grad(z, idx)
            v2, g2 = generic.value_and_grad(z, idx)
            np.testing.assert_allclose(v1, v2, rtol=1e-11, atol=1e-9 * scale)
            np.testing.assert_allclose(g1, g2, rtol=1e-11, atol=1e-11)
            assert np.all(v1 >= 0)


# ------------------------------------------------------------------ estimator
def test_tagger_learns_a_toy_task_with_every_loss():
    _, X, y = toy_problem("crf")
    for loss in ["perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn",
                 "crf", "sparsemap", "m-sparsemap", "projection", "squared"]:
        # the squared loss regresses the encoding: decode it per token
        decoding = "calibrated" if loss == "squared" else "map"
        est = SequenceTagger(loss=loss, alpha=1e-3, random_state=0, max_iter=100,
                             decoding=decoding)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X * 5, y * 5)
        assert est.score(X, y) >= 0.75, loss
        pred = est.predict(X)
        assert [len(p) for p in pred] == [len(s) for s in X]
        assert set(lab for p in pred for lab in p) <= set(est.classes_)


def test_tagger_outputs_and_attributes():
    _, X, y = toy_problem("crf")
    est = SequenceTagger(loss="crf").fit(X, y)
    assert est.classes_ == [0, 1, 2]
    marg = est.predict_marginals(X)
    assert len(marg) == len(X)
    for m, s in zip(marg, X):
        assert m.shape == (len(s), 3)
        np.testing.assert_allclose(m.sum(axis=1), 1.0)
    scores = est.decision_function(X)
    assert [s.shape for s in scores] == [(len(s), 3) for s in X]
    assert est.transition_.shape == (3, 3) and est.start_.shape == (3,)
    assert est.coef_.shape == (3, est.vectorizer_.transform(X)[0].shape[1])
    # MAP decoding = Viterbi on the unary + transition scores
    for s, sc, p in zip(X, scores, est.predict(X)):
        best = max(all_sequences(len(s), 3), key=lambda q: sc[np.arange(len(q)), q].sum()
                   + est.transition_[q[:-1], q[1:]].sum() + est.start_[q[0]] + est.end_[q[-1]])
        assert list(best) == p
    sp_est = SequenceTagger(loss="sparsemap").fit(X, y)
    dists = sp_est.predict_sparse(X)
    for d, s in zip(dists, X):
        assert np.isclose(sum(w for _, w in d), 1.0)
        assert all(len(seq) == len(s) for seq, _ in d)
    m = sp_est.predict_marginals(X)[0]
    mix = sum(w * np.eye(3)[seq] for seq, w in dists[0])
    np.testing.assert_allclose(m, mix, atol=1e-7)


def test_string_labels_and_empty_sequences():
    X = [[{"w": "a"}, {"w": "b"}], [], [{"w": "b"}]] * 4
    y = [["A", "B"], [], ["B"]] * 4
    est = SequenceTagger(alpha=1e-3).fit(X, y)
    assert est.classes_ == ["A", "B"]
    assert est.predict(X[:3]) == [["A", "B"], [], ["B"]]
    assert est.predict_marginals(X[:3])[1].shape == (0, 2)
    with pytest.raises(ValueError, match="empty|no features"):
        SequenceTagger().fit([[], []], [[], []])


def test_array_input():
    rng = np.random.RandomState(0)
    X = [rng.randn(rng.randint(1, 6), 4) for _ in range(30)]
    y = [list((x[:, 0] > 0).astype(int)) for x in X]
    est = SequenceTagger(alpha=1e-3, feature_support="all").fit(X, y)
    assert est.score(X, y) > 0.9
    import scipy.sparse as sp
    assert est.predict([sp.csr_matrix(x) for x in X]) == est.predict(X)


def test_bad_input_is_rejected_with_clear_errors_and_state_unchanged():
    _, X, y = toy_problem("crf")
    est = SequenceTagger().fit(X, y)
    before = est.predict(X)
    coef = est.coef_.copy()
    bad = [
        (X[:-1], y, "sequences"),
        (X, y[:-1], "sequences"),
        (X, [s[:-1] if i == 3 else s for i, s in enumerate(y)], "sequence 3"),
        (X, ["abc"] + y[1:], r"y\[0\]"),
        ([[{"w": "a"}, "oops"]] + X[1:], [[0, 0]] + y[1:], "position 1"),
        ([[{"x": float("nan")}]] + X[1:], [[0]] + y[1:], "(?i)nan|finite"),
        (X, [[float("nan")] * len(y[0])] + y[1:], "non-missing"),
    ]
    for Xb, yb, msg in bad:
        with pytest.raises(ValueError, match=msg):
            est.fit(Xb, yb)
        assert est.predict(X) == before
        assert (est.coef_ != coef).nnz == 0
    # a label unseen in training is an error of the tagger, not of the input
    assert est.score(X, [[7] * len(s) for s in X]) == 0.0
    y_rare = [list(s) for s in y]
    y_rare[0][0] = 7
    n_tok = sum(len(s) for s in y)
    want = est.score(X, y) - (est.predict(X)[0][0] == y[0][0]) / n_tok
    assert est.score(X, y_rare) == pytest.approx(want)
    with pytest.raises(ValueError, match="feature_support"):
        SequenceTagger(feature_support="some").fit(X, y)
    with pytest.raises(ValueError, match="list of sequences"):
        est.predict("a sentence")


def test_warm_start_continues_and_pickle_round_trips():
    _, X, y = toy_problem("crf")
    est = SequenceTagger(loss="hinge", max_iter=2, warm_start=True, random_state=0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
        z1 = est._z.copy()
        est.fit(X, y)
    assert not np.allclose(est._z, z1)  # continued from the previous weights
    with pytest.raises(ValueError, match="not seen in the first fit"):
        est.fit(X, [[5] * len(s) for s in X])
    est2 = pickle.loads(pickle.dumps(est))
    assert est2.predict(X) == est.predict(X)
    a = SequenceTagger(loss="hinge", random_state=3, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pa = a.fit(X, y)._z
        pb = clone(a).fit(X, y)._z
    np.testing.assert_array_equal(pa, pb)


def test_n_jobs_gives_the_same_model():
    _, X, y = toy_problem("crf")
    from structlearn.feature_extraction import TokenVectorizer

    a = SequenceTagger(loss="crf", n_jobs=1).fit(X * 3, y * 3)
    b = SequenceTagger(loss="crf", n_jobs=2).fit(X * 3, y * 3)
    assert np.isclose(a.objective_, b.objective_, rtol=1e-7)
    assert a.predict(X) == b.predict(X)
    # the threaded pass computes the same loss and gradient
    Xtok, tok_off = TokenVectorizer().fit_transform(X * 3)
    flat = np.concatenate([np.asarray(s) for s in y * 3])
    sup = a._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    p1 = chain_problem(Xtok, tok_off, flat, 3, *sup, CRF(), n_jobs=1)
    p2 = chain_problem(Xtok, tok_off, flat, 3, *sup, CRF(), n_jobs=2)
    assert len(p2.chunks) == 2
    z = np.random.RandomState(0).randn(p1.n_params)
    v1, g1 = p1.value_and_grad(z)
    v2, g2 = p2.value_and_grad(z)
    np.testing.assert_allclose(v1, v2, rtol=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-10)


def _words(sentences):
    return [[{"w": w} for w in s] for s in sentences]


def test_pipeline_grid_search_over_losses_and_cross_validate_with_span_f1():
    from structlearn.metrics import chunk_f1

    rng = np.random.RandomState(0)
    vocab = {"the": "B-NP", "a": "B-NP", "dog": "I-NP", "cat": "I-NP", "runs": "B-VP",
             "sleeps": "B-VP", "now": "O"}
    words = list(vocab)
    sents = [list(rng.choice(words, size=rng.randint(2, 7))) for _ in range(60)]
    y = [[vocab[w] for w in s] for s in sents]
    pipe = Pipeline([("features", FunctionTransformer(_words)),
                     ("tagger", SequenceTagger(alpha=1e-3, random_state=0))])
    scorer = make_scorer(chunk_f1)
    grid = GridSearchCV(pipe, {"tagger__loss": ["crf", "sparsemap", "hinge"]},
                        scoring=scorer, cv=KFold(3))
    grid.fit(sents, y)
    assert grid.best_score_ > 0.95
    res = cross_validate(pipe, sents, y, scoring={"f1": scorer}, cv=KFold(3))
    assert res["test_f1"].min() > 0.95


def _token_task(seed=0, n=40, d=6, k=3):
    """Array-input sequences whose tags depend on the tokens' own features."""
    rng = np.random.RandomState(seed)
    W = rng.randn(d, k)
    X, y = [], []
    for _ in range(n):
        L = rng.randint(1, 6)
        x = rng.randn(L, d)
        X.append(x)
        y.append(list(np.argmax(x @ W + 0.8 * rng.randn(L, k), axis=1)))
    return X, y


@pytest.mark.parametrize("loss,solver", [("crf", "lbfgs"), ("hinge", "sgd"),
                                         ("hinge", "bcfw"), ("hinge-slack", "bcfw"),
                                         ("perceptron", "auto")])
def test_without_transitions_the_bigram_weights_stay_zero(loss, solver):
    X, y = _token_task()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = SequenceTagger(loss=loss, solver=solver, alpha=1e-2, transitions=False,
                             max_iter=20, random_state=0).fit(X, y)
        full = SequenceTagger(loss=loss, solver=solver, alpha=1e-2, max_iter=20,
                              random_state=0).fit(X, y)
    for attr in ("transition_", "start_", "end_"):
        assert np.all(getattr(est, attr) == 0.0)
        assert np.any(getattr(full, attr) != 0.0)  # the option is what holds them
    # Viterbi with zero bigram scores is the per-token argmax of the unary scores
    for x, pred in zip(X, est.predict(X)):
        U = np.asarray(x @ est.coef_.T.toarray()) + est.intercept_
        assert list(np.argmax(U, axis=1)) == list(pred)


def test_crf_without_transitions_is_token_logistic_regression():
    # With the bigram weights held at zero the chain CRF factorises over
    # tokens: its optimum is multinomial logistic regression on the tokens,
    # with C = 1 / (alpha * n_sequences) (mean over sequences vs sum).
    from sklearn.linear_model import LogisticRegression

    X, y = _token_task(1)
    alpha = 0.05
    est = SequenceTagger(loss="crf", alpha=alpha, transitions=False, feature_support="all",
                         tol=1e-12, max_iter=2000).fit(X, y)
    lr = LogisticRegression(C=1.0 / (alpha * len(X)), tol=1e-12, max_iter=10000)
    lr.fit(np.vstack(X), np.concatenate(y))
    np.testing.assert_allclose(est.coef_.toarray(), lr.coef_, atol=2e-4)
    # the intercepts agree up to a common shift (softmax is invariant to it)
    db = est.intercept_ - lr.intercept_
    np.testing.assert_allclose(db - db.mean(), 0.0, atol=2e-4)


def test_transitions_must_be_a_bool_and_a_failed_fit_leaves_the_model():
    X, y = _token_task()
    est = SequenceTagger(alpha=1e-2).fit(X, y)
    before = est.transition_.copy()
    with pytest.raises(TypeError, match="transitions must be True or False"):
        est.set_params(transitions="no").fit(X, y)
    np.testing.assert_array_equal(est.transition_, before)


@pytest.mark.parametrize("loss", ["crf", "hinge", "perceptron"])
def test_intercept_auto_is_a_per_tag_bias_only_without_transitions(loss):
    X, y = _token_task()
    kw = dict(loss=loss, alpha=1e-2, max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = SequenceTagger(**kw).fit(X, y)
        with_bias = SequenceTagger(fit_intercept=True, **kw).fit(X, y)
        alone = SequenceTagger(transitions=False, **kw).fit(X, y)
    assert auto.get_params()["fit_intercept"] == "auto"
    assert np.all(auto.intercept_ == 0.0)
    assert np.any(with_bias.intercept_ != 0.0) and np.any(alone.intercept_ != 0.0)
    if loss == "crf":   # every weight penalised: L-BFGS certifies its point
        assert auto.duality_gap_ is not None and with_bias.duality_gap_ is None


@pytest.mark.parametrize("loss", ["crf", "hinge", "hinge-slack", "poslearn", "perceptron",
                                  "sparsemap", "m-sparsemap", "projection", "squared",
                                  Projection(set="cube"),
                                  Projection(set="cube", geometry="kl")])
def test_a_per_tag_bias_is_redundant_for_the_losses_of_sequence_scores(loss):
    # What fit_intercept='auto' rests on: a tag's bias moved into its column
    # of transition weights and its start weight changes no sequence's
    # score, so the training losses that see only the sequences' scores
    # (Loss.output_scores_only) stay the same; the losses that score parts
    # on their own change.
    from structlearn.feature_extraction import TokenVectorizer
    from structlearn.structures.chain import Chain

    est, X, y = toy_problem("crf")
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    flat = np.concatenate([np.asarray(s) for s in y])
    sup = est._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    lossobj = get_loss(loss)
    pb = chain_problem(Xtok, tok_off, flat, 3, *sup, lossobj, True, 1)
    z = np.random.RandomState(0).randn(pb.n_params)
    zf = z.copy()
    _, trans, start, _, bias = pb.fmap.unpack(zf)
    trans += bias[None, :]
    start += bias
    bias[:] = 0.0
    v0, _ = pb.value_and_grad(z)
    v1, _ = pb.value_and_grad(zf)
    unchanged = np.allclose(v1, v0, rtol=1e-7, atol=1e-8)
    assert unchanged == lossobj.output_scores_only(Chain), str(lossobj)
    if not unchanged:
        # and 'auto' keeps the bias for them
        assert est.set_params(loss=lossobj)._intercept(lossobj)


def test_a_warm_start_moves_the_bias_into_the_transitions():
    # from a model with the per-tag bias to one without (and back): the
    # warm-start weights give the same sequence scores, so the same marginals
    import copy
    import functools

    from structlearn.feature_maps import TokenFeatureMap

    X, y = _token_task(2, n=12)
    est = SequenceTagger(alpha=1e-2, fit_intercept=True, warm_start=True).fit(X, y)
    assert np.any(est.intercept_ != 0.0)
    for target in (False, True):
        fmap = SimpleNamespace(K=len(est.classes_), n_support=int(est._sup_ptr[-1]),
                               fit_intercept=target)
        fmap.unpack = functools.partial(TokenFeatureMap.unpack, fmap)
        moved = copy.deepcopy(est)
        moved._z = TokenFeatureMap.with_layout_of(fmap, est._z)
        assert len(moved._z) == len(est._z) - (0 if target else len(est.classes_))
        for m0, m1 in zip(est.predict_marginals(X), moved.predict_marginals(X)):
            np.testing.assert_allclose(m1, m0, rtol=1e-10, atol=1e-12)
    # the refit without the bias starts there, not at zero
    warm_iters = est.set_params(fit_intercept="auto").fit(X, y).n_iter_
    assert np.all(est.intercept_ == 0.0)
    cold_iters = SequenceTagger(alpha=1e-2).fit(X, y).n_iter_
    assert warm_iters <= cold_iters


@pytest.mark.parametrize("bad", ["yes", 1, None, 0.0])
def test_fit_intercept_must_be_a_bool_or_auto_and_a_failed_fit_leaves_the_model(bad):
    X, y = _token_task()
    est = SequenceTagger(alpha=1e-2).fit(X, y)
    before = est.transition_.copy()
    with pytest.raises(ValueError, match="fit_intercept must be True or False, or 'auto'"):
        est.set_params(fit_intercept=bad).fit(X, y)
    np.testing.assert_array_equal(est.transition_, before)


def test_warm_start_from_a_model_with_transitions_drops_them():
    X, y = _token_task()
    est = SequenceTagger(loss="hinge", solver="bcfw", alpha=1e-2, warm_start=True,
                         random_state=0).fit(X, y)
    assert np.any(est.transition_ != 0.0)
    est.set_params(transitions=False).fit(X, y)
    assert np.all(est.transition_ == 0.0) and np.all(est.start_ == 0.0)
    assert est.duality_gap_ <= 1e-3  # the default tol of bcfw


@pytest.mark.parametrize("loss", ["crf", "sparsemap"])
def test_tuple_labels_come_back_as_the_labels(loss):
    """Hashable labels of any kind, tuples included, are returned as given
    (not as rows of an object array), by predict and predict_sparse."""
    X = [[{"w": w} for w in s.split()] for s in ["a b", "b a c", "c"]] * 4
    y = [[(1, "x"), (2, "y")], [(2, "y"), (1, "x"), (3, "z")], [(3, "z")]] * 4
    est = SequenceTagger(loss=loss, alpha=1e-3).fit(X, y)
    assert est.classes_ == [(1, "x"), (2, "y"), (3, "z")]
    pred = est.predict(X)
    assert pred == y
    assert all(type(lab) is tuple for seq in pred for lab in seq)
    for dist in est.predict_sparse(X[:3]):
        assert all(type(lab) is tuple for seq, _ in dist for lab in seq)
    assert est.score(X, y) == 1.0


def test_more_tasks_per_thread_give_the_same_pass(monkeypatch):
    """``RaggedProblem.value_and_grad`` splits its chunks into
    ``TASKS_PER_THREAD`` tasks per thread: the losses and the gradient do
    not depend on the split (the gradients summed in task order)."""
    from structlearn.feature_extraction import TokenVectorizer
    from structlearn.solvers import _ragged

    _, X, y = toy_problem("crf")
    X, y = X * 400, y * 400
    Xtok, tok_off = TokenVectorizer().fit_transform(X)
    flat = np.concatenate([np.asarray(s) for s in y])
    sup = SequenceTagger()._make_support(Xtok.indptr, Xtok.indices, Xtok.shape[1], flat, 3)
    p1 = chain_problem(Xtok, tok_off, flat, 3, *sup, CRF(), n_jobs=1)
    p2 = chain_problem(Xtok, tok_off, flat, 3, *sup, CRF(), n_jobs=2)
    assert len(p2.chunks) > 4
    z = np.random.RandomState(0).randn(p1.n_params)
    v1, g1 = p1.value_and_grad(z)
    for tasks in (1, 2, 4):
        monkeypatch.setattr(_ragged, "TASKS_PER_THREAD", tasks)
        v2, g2 = p2.value_and_grad(z)
        np.testing.assert_allclose(v2, v1, rtol=1e-12)
        np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-10)
