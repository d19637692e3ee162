"""DependencyParser and the arc features."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from structlearn import DependencyParser
from structlearn.datasets import load_ewt
from structlearn.estimators.parsing import parser_problem
from structlearn.feature_maps import ArcFeatureMap
from structlearn.feature_extraction import ArcVectorizer
from structlearn.kernels.arcs import (BETWEEN_ATTRS, N_TEMPLATES, TEMPLATES, arc_keys,
                                      gold_arc_keys, key_buffer_size, template_names)
from structlearn.kernels.tree_validation import validate_heads
from structlearn.losses import CRF, Projection
from structlearn.metrics import uas
from structlearn.solvers import objective
from tree_brute import is_projective, is_tree

ALL_LOSSES = ["perceptron", "hinge", "hinge-approx-slack", "poslearn", "crf", "sparsemap",
              "m-sparsemap", "projection", "squared",
              Projection(set="simplex"), Projection(set="simplex", geometry="kl")]


def toy_data(n_sent=30, seed=0):
    """Sentences whose head is determined by the POS pattern (learnable)."""
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n_sent):
        n = rng.randint(1, 7)
        pos = rng.choice(["DET", "NOUN", "ADJ"], size=n).tolist()
        toks = [{"form": f"w{rng.randint(5)}", "lemma": "l", "upos": p, "xpos": p}
                for p in pos]
        # every word attaches to the word before it; the first to the root
        X.append(toks)
        y.append(list(range(n)))
    return X, y


@pytest.fixture(scope="module")
def ewt():
    tr, te = load_ewt("train"), load_ewt("test")
    return ([s.tokens for s in tr], [s.heads for s in tr],
            [s.tokens for s in te], [s.heads for s in te])


# ------------------------------------------------------------------ features
def test_template_names_and_table():
    names = template_names()
    assert len(names) == N_TEMPLATES == 2 * (len(TEMPLATES) + len(BETWEEN_ATTRS))
    assert len(set(names)) == len(names)
    assert names[0] == "h.form" and names[-1] == "h.xpos+between.xpos+m.xpos|dir+dist"
    assert "h.upos+m.upos" in names and "h.xpos+m.xpos|dir+dist" in names


def test_arc_keys_depend_on_direction_distance_and_dedupe_between_tags():
    A = np.array([[3, 3, 3, 3, 3, 3], [4, 4, 5, 5, 4, 4], [4, 4, 5, 6, 4, 4],
                  [6, 6, 7, 7, 6, 6]],
                 dtype=np.int32)
    size = key_buffer_size(len(TEMPLATES), 4)
    buf, tb = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    nt = len(TEMPLATES)
    k14 = arc_keys(A, 0, 4, 1, 4, TEMPLATES, buf, tb)
    keys14, t14 = buf[:k14].copy(), tb[:k14].copy()
    # words 2 and 3 between: one UPOS (5) -> one pair, two XPOS (5, 6) -> two
    assert k14 == 2 * nt + 2 + 4
    assert list(t14[2 * nt:]) == [nt, nt + nt + 2, nt + 1, nt + 1 + nt + 2,
                                  nt + 1, nt + 1 + nt + 2]
    assert np.all(t14[:2 * nt:2] == np.arange(nt))            # plain templates
    assert np.all(t14[1:2 * nt:2] == np.arange(nt) + nt + 2)  # with dir+dist
    k41 = arc_keys(A, 0, 4, 4, 1, TEMPLATES, buf, tb)
    assert not set(keys14) & set(buf[:k41])  # direction flips every key
    assert np.all(keys14 != 0) and len(set(keys14)) == k14
    k12 = arc_keys(A, 0, 4, 1, 2, TEMPLATES, buf, tb)
    assert k12 == 2 * nt      # adjacent: no in-between feature
    # a template reading only the head has the same plain key for 1->2 and
    # 1->3, and different direction-distance keys
    keys12 = buf[:k12].copy()
    arc_keys(A, 0, 4, 1, 3, TEMPLATES, buf, tb)
    assert keys12[0] == buf[0] and keys12[1] != buf[1]


def test_vectorizer_finds_every_gold_feature_and_drops_unseen_ones():
    X, y = toy_data()
    vec = ArcVectorizer().fit(X, y)
    A, off = vec.transform(X)
    heads, _ = validate_heads(y, True)
    keys, tmpl = gold_arc_keys(A, off, heads, TEMPLATES)
    assert vec.n_features_ == len(np.unique(keys))
    assert len(vec.templates_) == vec.n_features_
    assert vec.templates_.min() >= 0 and vec.templates_.max() < N_TEMPLATES
    indptr, ids = vec.arc_features(A, off, 0, len(X))
    # gold arcs keep all their features
    arc_off = np.concatenate([[0], np.cumsum([len(h) * (len(h) + 1) for h in y])])
    for i, h in enumerate(y):
        n = len(h)
        for m in range(1, n + 1):
            r = arc_off[i] + (m - 1) * (n + 1) + h[m - 1]
            size = key_buffer_size(len(TEMPLATES), n)
            buf, tb = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
            c = arc_keys(A, off[i], n, h[m - 1], m, TEMPLATES, buf, tb)
            assert indptr[r + 1] - indptr[r] == len(set(buf[:c]))
        # self-loops have no features
        for m in range(1, n + 1):
            r = arc_off[i] + (m - 1) * (n + 1) + m
            assert indptr[r + 1] == indptr[r]
    assert ids.min() >= 0 and ids.max() < vec.n_features_
    # unknown words: fewer known features, never an error
    A2, off2 = vec.transform([[{"form": "zzz", "upos": "X"}, {"form": "w1", "upos": "NOUN"}]])
    assert A2[0, 0] == 1  # unknown form id
    indptr2, _ = vec.arc_features(A2, off2, 0, 1)
    assert len(indptr2) == 2 * 3 + 1


def test_vectorizer_min_freq_and_errors():
    X, y = toy_data()
    v1, v2 = ArcVectorizer().fit(X, y), ArcVectorizer(min_freq=3).fit(X, y)
    assert 0 < v2.n_features_ < v1.n_features_
    with pytest.raises(ValueError, match="min_freq"):
        ArcVectorizer(min_freq=0).fit(X, y)
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        ArcVectorizer().fit([X[0], []], [y[0], []])
    with pytest.raises(ValueError, match="'form'"):
        ArcVectorizer().fit([[{"upos": "X"}]], [[0]])
    with pytest.raises(ValueError, match="token dict"):
        ArcVectorizer().fit([["word"]], [[0]])
    # lengths that only agree in total are caught per sentence
    two = [[{"form": "a"}, {"form": "b"}], [{"form": "c"}]]
    with pytest.raises(ValueError, match="sentence 0 has 2 words but its head array has 1"):
        ArcVectorizer().fit(two, [[0], [0, 1]])
    with pytest.raises(ValueError, match="2 sentences but heads has 1"):
        ArcVectorizer().fit(two, [[0, 1]])
    with pytest.raises(ValueError, match="sentence 0"):   # head 7 does not exist
        ArcVectorizer().fit(two, [[0, 7], [0]])


def test_vectorizer_reads_any_mapping_as_a_token_or_its_feats():
    """Plain dicts take a fast path (no ``Mapping`` ABC check): any other
    mapping must read the same, and a feats value of another type must
    still raise, naming the sentence and the word."""
    from types import MappingProxyType

    X, y = toy_data()
    for s in X:
        for i, t in enumerate(s):
            t["feats"] = None if i % 3 == 0 else ("Num=Sing" if i % 3 == 1 else
                                                  {"Num": "Plur", "Case": "Nom"})
    vec = ArcVectorizer().fit(X, y)
    proxies = [[MappingProxyType({**t, "feats": MappingProxyType(t["feats"])
                                  if isinstance(t["feats"], dict) else t["feats"]})
                for t in s] for s in X]
    A, off = vec.transform(X)
    A2, off2 = vec.transform(proxies)
    assert np.array_equal(A, A2) and np.array_equal(off, off2)
    assert (A[:, 5] > 2).all()   # every FEATS value (dict, str, "_") was seen at fit
    bad = [s[:] for s in X]
    bad[1][0] = {**bad[1][0], "feats": 3}
    with pytest.raises(ValueError, match=r"sentence 1, word 1: 'feats' must be a dict"):
        vec.transform(bad)
    bad[1][0] = ("form", "x")
    with pytest.raises(ValueError, match=r"sentence 1, word 1: expected a token dict"):
        vec.transform(bad)


def test_vectorizer_templates_restrict_the_features_and_bad_names_raise():
    from structlearn.kernels.arcs import template_names

    X, y = toy_data()
    names = template_names()
    keep = [names[0], names[5], names[70]]
    full, sub = ArcVectorizer().fit(X, y), ArcVectorizer(templates=keep).fit(X, y)
    kept = {names[t] for t in sub.templates_}
    assert kept <= set(keep) and kept
    # exactly the features of those templates, in the same (key) order
    mask = np.isin(full.templates_, [names.index(k) for k in keep])
    assert sub.n_features_ == int(mask.sum())
    for bad, match in [(["nope"], "unknown arc templates \\['nope'\\]"),
                       ([], "templates is empty"), ("h.form", "list of template names")]:
        with pytest.raises(ValueError, match=match):
            ArcVectorizer(templates=bad).fit(X, y)
        with pytest.raises(ValueError, match=match):
            DependencyParser(templates=bad).fit(X, y)


def test_feats_dicts_and_strings_give_the_same_attribute():
    a = [{"form": "x", "feats": {"Number": "Sing", "Case": "Nom"}}, {"form": "y"}]
    b = [{"form": "x", "feats": "Case=Nom|Number=Sing"}, {"form": "y", "feats": None}]
    vec = ArcVectorizer().fit([a], [[0, 1]])
    A1, _ = vec.transform([a])
    A2, _ = vec.transform([b])
    np.testing.assert_array_equal(A1, A2)
    assert A1[0, 5] >= 3 and A1[1, 5] == vec.vocabularies_[5]["_"]


def test_fit_transform_equals_fit_then_transform():
    X, y = toy_data(15)
    A1, off1 = ArcVectorizer().fit_transform(X, y)
    vec = ArcVectorizer().fit(X, y)
    A2, off2 = vec.transform(X)
    np.testing.assert_array_equal(A1, A2)
    np.testing.assert_array_equal(off1, off2)


# ------------------------------------------------------------------ problem
def make_problem(loss, X, y, single_root=True, projective=False):
    vec = ArcVectorizer().fit(X, y)
    A, off = vec.transform(X)
    heads, _ = validate_heads(y, single_root)
    cache = ArcFeatureMap(vec, A, off, 1)
    return parser_problem(cache, heads, loss, single_root, projective)


@pytest.mark.parametrize("projective", [False, True])
def test_parser_problem_gradient_matches_finite_differences(projective):
    X, y = toy_data(12)
    pb = make_problem(CRF(), X, y, projective=projective)
    rng = np.random.RandomState(0)
    z = rng.randn(pb.n_params)
    vals, g = pb.value_and_grad(z)
    alpha = 0.1
    g_obj = g / pb.n_samples + alpha * z
    D = rng.randn(pb.n_params)
    h = 1e-6
    fd = (objective(pb, z + h * D, alpha) - objective(pb, z - h * D, alpha)) / (2 * h)
    assert np.isclose(fd, g_obj @ D, rtol=1e-5)
    # mini-batches of any sentences add up to the full pass
    v1, g1 = pb.value_and_grad(z, np.array([0, 2, 4, 6, 8, 10]))
    v2, g2 = pb.value_and_grad(z, np.array([1, 3, 5, 7, 9, 11]))
    np.testing.assert_allclose(g1 + g2, g, atol=1e-10)
    np.testing.assert_allclose(np.sort(np.concatenate([v1, v2])), np.sort(vals))
    # the sparse form at z = scale * v: the same losses and gradient entries
    idx = np.array([0, 3, 4, 11])
    v3, g3 = pb.value_and_grad(z, idx)
    v4, cols, gv = pb.sparse_value_and_grad(z / 0.37, idx, 0.37)
    np.testing.assert_allclose(v4, v3, rtol=1e-10)
    np.testing.assert_allclose(np.bincount(cols, weights=gv, minlength=pb.n_params), g3,
                               atol=1e-10)
    assert np.all(gv != 0)


@pytest.mark.parametrize("loss, cached", [("sparsemap", True), ("m-sparsemap", True),
                                          ("projection", True),
                                          (Projection(set="tree"), True),
                                          (Projection(set="simplex"), False), ("crf", False)],
                         ids=str)
def test_active_set_losses_get_warm_caches(loss, cached):
    from structlearn.losses import get_loss

    X, y = toy_data(6)
    pb = make_problem(get_loss(loss), X, y)
    assert all((b.structure.warm_cache is not None) == cached for b in pb.chunks)


def test_sq_norms_count_the_gold_tree_features():
    X, y = toy_data(8)
    pb = make_problem(CRF(), X, y)
    sq = pb.sq_norms()
    for i, h in enumerate(y):
        c, lo, hi = pb.fmap.locate(i)
        indptr = pb.fmap.chunks[c][0]
        n = len(h)
        count = sum(indptr[lo + (m - 1) * (n + 1) + h[m - 1] + 1]
                    - indptr[lo + (m - 1) * (n + 1) + h[m - 1]] for m in range(1, n + 1))
        assert sq[i] == count + 1.0


# ---------------------------------------------------------------- estimator
@pytest.mark.parametrize("loss", ALL_LOSSES, ids=str)
def test_every_loss_learns_the_toy_grammar_and_predicts_trees(loss):
    X, y = toy_data(40)
    kw = {"max_iter": 20} if loss in ("perceptron", "hinge", "hinge-approx-slack",
                                      "poslearn") else {}
    est = DependencyParser(loss=loss, alpha=1e-3, random_state=0, **kw).fit(X, y)
    Xt, yt = toy_data(20, seed=1)
    pred = est.predict(Xt)
    assert all(is_tree(h, True) for h in pred)
    assert est.score(Xt, yt) > 0.9


@pytest.mark.slow  # the full-EWT fixture; ~52 s warm at load 8 (issue 20); CI runs it
def test_projective_and_multi_root_options(ewt):
    X, y, Xt, yt = ewt
    n_nonproj = sum(not is_projective(h) for h in y[:200])
    assert n_nonproj > 0
    est = DependencyParser(loss="perceptron", projective=True, max_iter=2, random_state=0)
    with pytest.warns(UserWarning, match=f"{n_nonproj} of 200 training trees are "
                                         "non-projective"):
        est.fit(X[:200], y[:200])
    pred = est.predict(Xt[:100])
    assert all(is_tree(h, True) and is_projective(h) for h in pred)
    # projective gold trees, or projective=False: no warning
    proj = [i for i in range(200) if is_projective(y[i])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est.fit([X[i] for i in proj], [y[i] for i in proj])
        DependencyParser(loss="perceptron", max_iter=2, random_state=0).fit(X[:200], y[:200])
    est = DependencyParser(loss="perceptron", single_root=False, max_iter=2,
                           random_state=0).fit(X[:200], y[:200])
    assert all(is_tree(h, single_root=False) for h in est.predict(Xt[:100]))


@pytest.mark.slow  # ~70 s warm at load 8 (issue 20: the fast suite); CI runs it
def test_parser_beats_the_left_neighbour_baseline_on_ewt(ewt):
    X, y, Xt, yt = ewt
    est = DependencyParser(loss="perceptron", max_iter=5, n_jobs=2, random_state=0)
    est.fit(X, y)
    baseline = uas(yt, [list(range(len(h))) for h in yt])
    score = est.score(Xt, yt)
    assert baseline < 0.2
    assert score > 0.70 > baseline + 0.5


def test_marginals_sparse_outputs_and_decision_function():
    X, y = toy_data(30)
    Xt, _ = toy_data(5, seed=2)
    crf = DependencyParser(loss="crf", alpha=1e-2).fit(X, y)
    mu = crf.predict_marginals(Xt)
    S = crf.decision_function(Xt)
    for m, s, sent in zip(mu, S, Xt):
        n = len(sent)
        assert m.shape == s.shape == (n, n + 1)
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-9)
        assert np.all(np.diag(m[:, 1:]) == 0)
        np.testing.assert_allclose(m[:, 0].sum(), 1.0, atol=1e-9)  # single root
    sm = DependencyParser(loss="sparsemap", alpha=1e-2).fit(X, y)
    for dist, sent in zip(sm.predict_sparse(Xt), Xt):
        assert abs(sum(w for _, w in dist) - 1.0) < 1e-9
        assert all(is_tree(h, True) for h, _ in dist)
        assert all(w1 >= w2 for (_, w1), (_, w2) in zip(dist, dist[1:]))
    cal = DependencyParser(loss=Projection(set="simplex", geometry="kl"),
                           decoding="calibrated", alpha=1e-2).fit(X, y)
    assert all(is_tree(h, True) for h in cal.predict(Xt))


def test_hinge_slack_is_refused_with_a_clear_error():
    X, y = toy_data(5)
    with pytest.raises(ValueError, match="slack"):
        DependencyParser(loss="hinge-slack").fit(X, y)


@pytest.mark.parametrize("y_bad, match", [
    ([[0, 5]], "out of range|range"),
    ([[0]], "2 words but its head array has 1"),
    ([[2, 1]], "cycle|root"),
    ([[0, 0]], "root"),
])
def test_bad_gold_trees_raise_before_any_work(y_bad, match):
    X = [[{"form": "a", "upos": "X"}, {"form": "b", "upos": "Y"}]]
    with pytest.raises(ValueError, match=match):
        DependencyParser().fit(X, y_bad)


def test_bad_input_errors_and_failed_fit_leaves_the_model_unchanged():
    X, y = toy_data(10)
    est = DependencyParser(loss="perceptron", max_iter=3, random_state=0).fit(X, y)
    coef = est.coef_.copy()
    with pytest.raises(ValueError, match="10 sentences but y has 9"):
        est.fit(X, y[:9])
    with pytest.raises(ValueError, match="sentence 10 .0 words.: a sentence needs at least"):
        est.fit(X + [[]], y + [[]])
    with pytest.raises(ValueError, match=r"y\[9\] must be an array of heads"):
        est.fit(X, y[:-1] + ["abc"])
    with pytest.raises(ValueError, match="bool"):
        clone(est).set_params(projective="yes").fit(X, y)
    with pytest.raises(ValueError, match="min_freq must be an integer >= 1"):
        clone(est).set_params(min_freq=0).fit(X, y)
    np.testing.assert_array_equal(est.coef_, coef)
    with pytest.raises(ValueError, match="list of sentences"):
        est.predict("a sentence")


def test_sklearn_integration_and_warm_start():
    X, y = toy_data(30)
    grid = GridSearchCV(DependencyParser(max_iter=5, random_state=0),
                        {"loss": ["perceptron", "hinge"]}, cv=2).fit(X, y)
    assert grid.best_score_ > 0.8
    est = DependencyParser(loss="perceptron", max_iter=1, warm_start=True, random_state=0)
    est.fit(X, y)
    vec = est.vectorizer_
    est.fit(X, y)
    assert est.vectorizer_ is vec
    assert clone(est).get_params()["loss"] == "perceptron"


def test_conllu_sentences_are_accepted_directly():
    train = load_ewt("train")[:60]
    heads = [s.heads for s in train]
    a = DependencyParser(loss="perceptron", max_iter=2, random_state=0).fit(train, heads)
    b = DependencyParser(loss="perceptron", max_iter=2, random_state=0).fit(
        [s.tokens for s in train], heads)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert [list(h) for h in a.predict(train[:5])] == [list(h) for h in b.predict(
        [s.tokens for s in train[:5]])]


# ----------------------------------------------------------------- labelled
def labelled_toy_data(n_sent=30, seed=0):
    """toy_data with relations that follow from the words: a word's
    relation is its UPOS (lower-cased) after a determiner head, ``other``
    otherwise, with a subtype when its form is w0; the root's is 'root'."""
    X, y = toy_data(n_sent, seed)
    out = []
    for toks, heads in zip(X, y):
        rels = []
        for m, h in enumerate(heads, start=1):
            if h == 0:
                rels.append("root")
                continue
            rel = toks[m - 1]["upos"].lower() if toks[h - 1]["upos"] == "DET" else "other"
            rels.append(rel + (":w0" if toks[m - 1]["form"] == "w0" else ""))
        out.append((heads, rels))
    return X, out


def _count_las(gold, pred, full):
    """LAS by a per-word loop (relations without subtypes unless full)."""
    good = total = 0
    for (hg, dg), (hp, dp) in zip(gold, pred):
        for a, b, r, s in zip(hg, hp, dg, dp):
            total += 1
            good += int(a) == int(b) and (r == s if full else
                                          r.split(":")[0] == s.split(":")[0])
    return good / total


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=str)
def test_every_loss_labels_arcs_with_its_own_loss(loss):
    X, y = labelled_toy_data(40)
    kw = {"max_iter": 20} if loss in ("perceptron", "hinge", "hinge-approx-slack",
                                      "poslearn") else {}
    est = DependencyParser(loss=loss, alpha=1e-3, random_state=0, **kw).fit(X, y)
    # the second stage is trained with the parser's loss and hyper-parameters
    lab = est.labeller_
    if isinstance(loss, Projection):  # head selection -> each word's label on its own
        assert lab.loss == ("sparsemap" if loss.geometry == "euclidean" else "crf")
        assert lab.transitions is False
    else:
        assert lab.loss == loss and lab.transitions is True
    assert (lab.alpha, lab.solver, lab.max_iter) == (1e-3, "auto", kw.get("max_iter"))
    assert lab.classes_ == sorted({r for _, d in y for r in d})
    Xt, yt = labelled_toy_data(20, seed=1)
    pred = est.predict(Xt)
    assert all(isinstance(p, tuple) and len(p) == 2 for p in pred)
    assert all(is_tree(h, True) and len(d) == len(h) and all(isinstance(r, str) for r in d)
               for h, d in pred)
    score = est.score(Xt, yt)
    assert score == pytest.approx(_count_las(yt, pred, full=False))
    assert score > 0.85


def test_labelled_fit_keeps_the_unlabelled_parser_bit_for_bit():
    X, y = labelled_toy_data(30)
    heads = [h for h, _ in y]
    plain = DependencyParser(loss="crf", alpha=1e-3).fit(X, heads)
    labelled = DependencyParser(loss="crf", alpha=1e-3).fit(X, y)
    np.testing.assert_array_equal(plain.coef_, labelled.coef_)
    assert plain.n_iter_ == labelled.n_iter_ and plain.objective_ == labelled.objective_
    assert not hasattr(plain, "labeller_")
    Xt, yt = labelled_toy_data(10, seed=3)
    ph = plain.predict(Xt)
    assert all(isinstance(h, np.ndarray) for h in ph)
    assert [list(h) for h in ph] == [list(h) for h, _ in labelled.predict(Xt)]
    assert plain.score(Xt, [h for h, _ in yt]) == uas(yt, labelled.predict(Xt))
    # an unlabelled refit of a labelled parser drops its labeller
    labelled.fit(X, heads)
    assert not hasattr(labelled, "labeller_")
    np.testing.assert_array_equal(plain.coef_, labelled.coef_)


@pytest.mark.slow  # ~70 s warm at load 8 (issue 20: the fast suite); CI runs it
def test_labeller_beats_a_most_frequent_relation_per_upos_baseline_on_ewt():
    train, test = load_ewt("train")[:400], load_ewt("test")[:150]
    y = [(s.heads, s.deprels) for s in train]
    yt = [(s.heads, s.deprels) for s in test]
    est = DependencyParser(loss="perceptron", max_iter=5, random_state=0).fit(train, y)
    pred = est.predict(test)
    las_ = est.score(test, yt)
    assert las_ == pytest.approx(_count_las(yt, pred, full=False))
    # baseline: predicted heads, the relation most frequent for the word's UPOS
    from collections import Counter
    by_upos = {}
    for s in train:
        for u, r in zip(s.upos, s.deprels):
            by_upos.setdefault(u, Counter())[r] += 1
    base = [(h, [by_upos[u].most_common(1)[0][0] for u in s.upos])
            for (h, _), s in zip(pred, test)]
    assert las_ > _count_las(yt, base, full=False) + 0.1
    assert las_ <= uas(yt, pred)


@pytest.mark.parametrize("y_bad, match", [
    (lambda y: y[:-1] + [y[-1][0]], r"y mixes formats: y\[0\] is a \(heads, deprels\) "
                                    r"pair but y\[9\] is a head array"),
    (lambda y: [y[0][0]] + y[1:], r"y\[0\] is a head array but y\[1\] is a \(heads"),
    (lambda y: y[:3] + [(y[3][0], y[3][1][:-1])] + y[4:], "sentence 3: .* heads but"),
    (lambda y: y[:2] + [(y[2][0], [None] + y[2][1][1:])] + y[3:],
     r"sentence 2, word 1 \(y\[2\]\[1\]\[0\]\): deprel must be a non-empty string, "
     "got None"),
    (lambda y: y[:2] + [(y[2][0], [""] + y[2][1][1:])] + y[3:], "sentence 2, word 1"),
    (lambda y: y[:2] + [(y[2][0], [7] * len(y[2][1]))] + y[3:], "got 7"),
    (lambda y: y[:1] + [([0] * len(y[1][0]), y[1][1])] + y[2:], "root"),
])
def test_bad_labelled_targets_raise_and_leave_a_fitted_parser_unchanged(y_bad, match):
    X, y = labelled_toy_data(30, seed=4)
    y = [(h, d) for h, d in y if len(h) > 1][:10]
    X = [x for x in X if len(x) > 1][:10]
    assert len(X) == len(y) == 10
    est = DependencyParser(loss="perceptron", max_iter=3, random_state=0).fit(X, y)
    coef, lab = est.coef_.copy(), est.labeller_
    lab_coef = lab.coef_.copy()
    with pytest.raises(ValueError, match=match):
        est.fit(X, y_bad(y))
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.labeller_ is lab
    assert (est.labeller_.coef_ != lab_coef).nnz == 0


def test_score_refuses_the_other_kind_of_target():
    X, y = labelled_toy_data(20)
    lab = DependencyParser(loss="perceptron", max_iter=3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="labelled: score it on"):
        lab.score(X, [h for h, _ in y])
    plain = DependencyParser(loss="perceptron", max_iter=3, random_state=0).fit(
        X, [h for h, _ in y])
    with pytest.raises(ValueError, match="unlabelled"):
        plain.score(X, y)


def test_labelled_warm_start_and_clone():
    X, y = labelled_toy_data(30)
    est = DependencyParser(loss="perceptron", max_iter=1, warm_start=True, random_state=0)
    est.fit(X, y)
    lab = est.labeller_
    est.fit(X, y)
    assert est.labeller_ is lab
    assert not hasattr(clone(est), "labeller_")
