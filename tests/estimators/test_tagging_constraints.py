"""Transition constraints, partial labels and forced decoding of SequenceTagger.

The restricted oracles of the chain are checked against enumeration by
``tests/structures/test_structure_properties.py`` (the ``chain4x3_allowed``
and ``chain4x3_known`` instances); here: the schemes' rules, the losses on
partial targets against brute force, and the estimator end to end.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from structlearn import SequenceTagger
from structlearn.estimators._tagging import allowed_transitions
from structlearn.losses import CRF, Hinge, SparseMAP, get_loss
from structlearn.structures import Chain

LOSSES = ["perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn", "crf",
          "sparsemap", "m-sparsemap", "projection", "squared"]


# ------------------------------------------------------------------ schemes
def _bio_ok(prev, nxt):
    """BIO written out: I-X continues a chunk of type X."""
    if nxt.startswith("I-"):
        return prev in ("B-" + nxt[2:], "I-" + nxt[2:])
    return True


def _bioes_ok(prev, nxt):
    p, q = prev[0], nxt[0]
    if p in "BI":
        return q in "IE" and prev[2:] == nxt[2:]
    return q in "OBS"


def test_schemes_follow_their_definitions():
    tags = ["B-NP", "B-VP", "I-NP", "I-VP", "O"]
    trans, start, end = allowed_transitions("BIO", tags)
    for a, p in enumerate(tags):
        for b, q in enumerate(tags):
            assert trans[a, b] == _bio_ok(p, q), (p, q)
    assert list(start) == [True, True, False, False, True]
    assert end.all()
    assert (allowed_transitions("iob2", tags)[0] == trans).all()

    trans1, start1, _ = allowed_transitions("IOB1", tags)
    assert not trans1[tags.index("O"), tags.index("B-NP")]
    assert trans1[tags.index("I-NP"), tags.index("B-NP")]
    assert not trans1[tags.index("I-VP"), tags.index("B-NP")]
    assert trans1[tags.index("O"), tags.index("I-NP")]
    assert list(start1) == [False, False, True, True, True]

    tags4 = ["B-X", "E-X", "I-X", "O", "S-X", "B-Y", "E-Y"]
    trans4, start4, end4 = allowed_transitions("BIOES", tags4)
    for a, p in enumerate(tags4):
        for b, q in enumerate(tags4):
            assert trans4[a, b] == _bioes_ok(p, q), (p, q)
    assert [t for t, s in zip(tags4, start4) if s] == ["B-X", "O", "S-X", "B-Y"]
    assert [t for t, e in zip(tags4, end4) if e] == ["E-X", "O", "S-X", "E-Y"]
    bilou = ["B-X", "I-X", "L-X", "O", "U-X"]
    trans5, _, end5 = allowed_transitions("BILOU", bilou)
    assert trans5[0, 2] and not trans5[0, 3] and trans5[2, 4] and not end5[1]


def test_scheme_and_matrix_errors():
    with pytest.raises(ValueError, match="'NP' does not follow the BIO scheme"):
        allowed_transitions("BIO", ["B-NP", "NP", "O"])
    with pytest.raises(ValueError, match="scheme name"):
        allowed_transitions("BIOLU", ["O"])
    with pytest.raises(ValueError, match=r"\(2, 2\) boolean matrix"):
        allowed_transitions(np.ones((3, 3), bool), ["a", "b"])
    with pytest.raises(ValueError, match="boolean matrix"):
        allowed_transitions(np.full((2, 2), 0.5), ["a", "b"])
    with pytest.raises(ValueError, match="scheme name"):
        allowed_transitions(3, ["a", "b"])


# --------------------------------------------------- losses on partial targets
def _chain_and_truth(seed, K=3, L=4):
    rng = np.random.default_rng(seed)
    allowed = (rng.random((K, K)) < 0.7, np.ones(K, bool), np.ones(K, bool))
    allowed[0][:, 0] = True  # tag 0 may always follow: some sequence is allowed
    sets = np.array([[1] * K, [1, 1] + [0] * (K - 2)], bool)
    y = np.array([-1, 0, -2, -1][:L])
    ch = Chain(K, np.array([0, L]), allowed=allowed, label_sets=sets)
    theta = rng.normal(size=ch.n_parts)
    ok = [s for s in itertools.product(range(K), repeat=L)
          if all(allowed[0][a, b] for a, b in zip(s, s[1:]))]
    cons = [s for s in ok if s[1] == 0 and s[2] in (0, 1)]
    return ch, theta, y, ok, cons


def _score(ch, theta, s):
    return float(Chain(ch.n_tags, ch.tok_off).scores(theta, np.array(s))[0])


@pytest.mark.parametrize("seed", range(4))
def test_crf_partial_likelihood_is_a_difference_of_log_partitions(seed):
    ch, theta, y, ok, cons = _chain_and_truth(seed)
    value, grad = CRF().partial_value_and_grad(theta, y, ch)
    ref = logsumexp([_score(ch, theta, s) for s in ok]) - \
        logsumexp([_score(ch, theta, s) for s in cons])
    assert value[0] == pytest.approx(ref, rel=1e-10)
    eps = 1e-6
    for j in np.random.default_rng(seed).choice(ch.n_parts, 12, replace=False):
        e = np.zeros(ch.n_parts)
        e[j] = eps
        fd = (CRF().partial_value_and_grad(theta + e, y, ch)[0][0]
              - CRF().partial_value_and_grad(theta - e, y, ch)[0][0]) / (2 * eps)
        assert grad[j] == pytest.approx(fd, abs=1e-6)


@pytest.mark.parametrize("loss", [Hinge(), SparseMAP(), get_loss("perceptron"),
                                  get_loss("poslearn"), get_loss("hinge-slack")])
@pytest.mark.parametrize("seed", range(3))
def test_other_losses_use_the_constrained_map_completion(loss, seed):
    ch, theta, y, ok, cons = _chain_and_truth(seed)
    best = max(cons, key=lambda s: _score(ch, theta, s))
    assert list(ch.complete(theta, y)) == list(best)
    v, g = loss.partial_value_and_grad(theta, y, ch)
    v_ref, g_ref = loss.value_and_grad(theta, np.array(best), ch)
    np.testing.assert_allclose(v, v_ref)
    np.testing.assert_allclose(g, g_ref)


def test_fully_labelled_targets_are_their_own_completion():
    ch, theta, _, ok, _ = _chain_and_truth(0)
    y = np.array(ok[3])
    assert list(ch.complete(theta, y)) == list(y)
    v, g = CRF().partial_value_and_grad(theta, y, ch)
    v_ref, g_ref = CRF().value_and_grad(theta, y, ch)
    np.testing.assert_allclose(v, v_ref, rtol=1e-10)
    np.testing.assert_allclose(g, g_ref, atol=1e-12)


# --------------------------------------------------------------- estimator
WORDS = {"the": "B-NP", "a": "B-NP", "big": "I-NP", "dog": "I-NP", "cat": "I-NP",
         "ran": "B-VP", "has": "B-VP", "been": "I-VP", "sleeping": "I-VP", ".": "O",
         "and": "O"}


def _toy(n, seed=0):
    """Sentences of NP VP NP . chunks; the features are the words alone, so an
    unconstrained tagger has no evidence against O -> I-X at unseen words."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n):
        ws = ["the" if rng.random() < .5 else "a"] + (["big"] if rng.random() < .5 else []) \
            + ["dog" if rng.random() < .5 else "cat", "ran" if rng.random() < .5 else "has"] \
            + (["been", "sleeping"] if rng.random() < .5 else []) + ["."]
        X.append([{"w": w} for w in ws])
        Y.append([WORDS[w] for w in ws])
    return X, Y


def _valid_bio(seq):
    prev = "O"
    for t in seq:
        if t.startswith("I-") and prev[2:] != t[2:]:
            return False
        prev = t
    return True


@pytest.mark.parametrize("loss", LOSSES)
def test_every_loss_decodes_allowed_sequences_only(loss):
    X, Y = _toy(40)
    est = SequenceTagger(loss=loss, constraints="BIO", random_state=0, max_iter=20).fit(X, Y)
    # unseen words: no feature, the constraints alone keep I-X after B-X / I-X
    Xn = [[{"w": "zzz"}, {"w": "dog"}, {"w": "."}, {"w": "qq"}, {"w": "sleeping"}]]
    for decoding in ("map", "calibrated"):
        est.set_params(decoding=decoding)
        assert all(_valid_bio(s) for s in est.predict(X[:10] + Xn))
    assert est.allowed_transitions_.shape == (len(est.classes_),) * 2
    assert not est.allowed_start_[est.classes_.index("I-NP")]
    # the unconstrained model on the same data is free to break the rule
    free = SequenceTagger(loss=loss, random_state=0, max_iter=20).fit(X, Y)
    assert free.allowed_transitions_.all()


def test_constraints_matrix_and_gold_errors():
    X, Y = _toy(10)
    classes = sorted({t for s in Y for t in s})
    M = np.ones((len(classes),) * 2, bool)
    M[classes.index("O"), classes.index("B-NP")] = False
    with pytest.raises(ValueError, match=r"y\[\d+\]\[0\] = 'B-NP' cannot follow"
                       r"|y\[\d+\]\[\d+\] = 'B-NP' cannot follow"):
        SequenceTagger(constraints=M).fit(X + [[{"w": "."}, {"w": "the"}]],
                                         Y + [["O", "B-NP"]])
    Yb = [list(s) for s in Y]
    Yb[3][0] = "I-NP"
    with pytest.raises(ValueError, match=r"y\[3\]\[0\] = 'I-NP' cannot start a sequence"):
        SequenceTagger(constraints="BIO").fit(X, Yb)
    with pytest.raises(ValueError, match="does not follow the BIO scheme"):
        SequenceTagger(constraints="BIO").fit([[{"w": "a"}]], [["NP"]])


def _brute_force(est, x, known):
    """The best sequence under the fitted scores among those agreeing with
    ``known`` and the constraints, by enumeration."""
    U = est.decision_function([x])[0]
    K = len(est.classes_)
    idx = {c: k for k, c in enumerate(est.classes_)}
    best, arg = -np.inf, None
    for s in itertools.product(range(K), repeat=len(x)):
        if not est.allowed_start_[s[0]] or not est.allowed_end_[s[-1]] or not all(
                est.allowed_transitions_[a, b] for a, b in zip(s, s[1:])):
            continue
        if any(k is not None and (
                (isinstance(k, set) and est.classes_[c] not in k) or
                (not isinstance(k, set) and idx[k] != c)) for k, c in zip(known, s)):
            continue
        v = U[np.arange(len(s)), s].sum() + est.start_[s[0]] + est.end_[s[-1]] + sum(
            est.transition_[a, b] for a, b in zip(s, s[1:]))
        if v > best:
            best, arg = v, s
    return [est.classes_[c] for c in arg]


@pytest.mark.parametrize("loss", ["crf", "hinge", "sparsemap"])
def test_forced_decoding_is_the_best_agreeing_sequence(loss):
    X, Y = _toy(30)
    est = SequenceTagger(loss=loss, constraints="BIO", random_state=0, max_iter=20).fit(X, Y)
    rng = np.random.default_rng(1)
    for x in X[:6]:
        known = [None] * len(x)
        for t in rng.choice(len(x), 2, replace=False):
            known[t] = rng.choice(est.classes_) if rng.random() < .5 else \
                set(rng.choice(est.classes_, 2, replace=False))
        try:
            ref = _brute_force(est, x, known)
        except TypeError:   # no agreeing sequence: predict must say so
            with pytest.raises(ValueError, match="no tag sequence agrees"):
                est.predict([x], known=[known])
            continue
        assert est.predict([x], known=[known])[0] == ref
    assert est.predict(X[:3], known=None) == est.predict(X[:3])


def test_forced_decoding_errors():
    X, Y = _toy(10)
    est = SequenceTagger(constraints="BIO").fit(X, Y)
    x = X[0]
    with pytest.raises(ValueError, match=r"known\[0\] has 1 entries"):
        est.predict([x], known=[["O"]])
    with pytest.raises(ValueError, match=r"known\[0\]\[0\] = 'B-PER' is not a tag"):
        est.predict([x], known=[["B-PER"] + [None] * (len(x) - 1)])
    with pytest.raises(ValueError, match=r"known\[0\]: no tag sequence agrees"):
        est.predict([x], known=[["I-VP"] + [None] * (len(x) - 1)])
    with pytest.raises(ValueError, match="empty set"):
        est.predict([x], known=[[set()] + [None] * (len(x) - 1)])


@pytest.mark.parametrize("loss", LOSSES)
def test_partial_labels_train_every_loss(loss):
    """A quarter of the tags hidden (None) or blurred to a pair of tags: the
    tagger still learns every word's tag from its labelled occurrences."""
    X, Y = _toy(60)
    rng = np.random.default_rng(0)
    Yp = []
    for s in Y:
        s = list(s)
        for t in range(len(s)):
            r = rng.random()
            if r < .15:
                s[t] = None
            elif r < .25:
                s[t] = {s[t], "O"}
        Yp.append(s)
    est = SequenceTagger(loss=loss, constraints="BIO", random_state=0, max_iter=30)
    est.fit(X, Yp)
    assert est.duality_gap_ is None
    assert est.solver_ in ("lbfgs", "sgd")
    Xt, Yt = _toy(30, seed=5)
    acc = np.mean([a == b for p, q in zip(est.predict(Xt), Yt) for a, b in zip(p, q)])
    assert acc > (0.8 if loss == "squared" else 0.95), acc


def test_partial_labels_need_a_primal_solver_and_a_labelled_position():
    X, Y = _toy(10)
    Yp = [[None] + s[1:] for s in Y]
    with pytest.raises(ValueError, match="solver='bcfw' needs fully labelled targets"):
        SequenceTagger(loss="hinge", solver="bcfw", alpha=0.1).fit(X, Yp)
    est = SequenceTagger(loss="sparsemap", alpha=0.5).fit(X, Yp)  # 'auto' would pick BCFW
    assert est.solver_ == "lbfgs"
    with pytest.raises(ValueError, match="no known label"):
        SequenceTagger().fit(X[:1], [[None] * len(X[0])])
    with pytest.raises(ValueError, match=r"y\[0\]\[1\] is None"):
        est.score(X[:1], [[Y[0][0], None] + Y[0][2:]])


def test_crf_partial_labels_recover_the_fully_labelled_model():
    """Positions whose tag is forced by the constraints and the other labels
    carry no information: hiding them leaves the CRF's optimum unchanged."""
    X, Y = _toy(30)
    kw = dict(constraints="BIO", tol=1e-10, max_iter=2000, feature_support="all")
    full = SequenceTagger(**kw).fit(X, Y)
    # {I-NP, I-VP} after an NP tag: the rules leave I-NP only
    Yp = []
    for s in Y:
        s = list(s)
        for t in range(1, len(s)):
            if s[t] == "I-NP" and s[t - 1] in ("B-NP", "I-NP"):
                s[t] = {"I-NP", "I-VP"}
        Yp.append(s)
    part = SequenceTagger(**kw).fit(X, Yp)
    np.testing.assert_allclose(part.transition_, full.transition_, atol=1e-4)
    np.testing.assert_allclose(part.coef_.toarray(), full.coef_.toarray(), atol=1e-4)


def test_fused_crf_with_constraints_matches_the_structure_path():
    """The fused CRF likelihood adds the constraints' offsets to the
    transition weights; the generic path adds them to the part scores."""
    from structlearn.estimators.sequence import chain_problem
    from structlearn.feature_extraction import TokenVectorizer

    X, Y = _toy(20)
    classes = sorted({t for s in Y for t in s})
    idx = {c: k for k, c in enumerate(classes)}
    enc = TokenVectorizer()._fit(X, transform=True, raw=True)
    K = len(classes)
    y = np.array([idx[t] for s in Y for t in s])
    allowed = allowed_transitions("BIO", classes)
    sup_ptr = np.arange(0, (enc.n_cols + 1) * K, K)
    sup_label = np.tile(np.arange(K), enc.n_cols)
    from structlearn.feature_maps import checked_tokens

    prob = chain_problem(checked_tokens(enc, sup_ptr), enc.tok_off, y, K, sup_ptr,
                         sup_label, CRF(), allowed=allowed)
    assert prob._fused
    z = np.random.default_rng(0).normal(size=prob.n_params)
    v1, g1 = prob.value_and_grad(z)
    prob._fused = False
    v2, g2 = prob.value_and_grad(z)
    np.testing.assert_allclose(v1, v2, rtol=1e-10)
    np.testing.assert_allclose(g1, g2, atol=1e-10)
    free = chain_problem(checked_tokens(enc, sup_ptr), enc.tok_off, y, K, sup_ptr,
                         sup_label, CRF())
    assert not np.allclose(free.value_and_grad(z)[0], v1)  # the constraints matter


def test_constraints_survive_the_sparse_l1_model():
    X, Y = _toy(40)
    est = SequenceTagger(constraints="BIO", l1_ratio=0.5, alpha=0.05).fit(X, Y)
    dense = SequenceTagger(constraints="BIO", alpha=0.05).fit(X, Y)
    assert est.n_nonzero_ < dense.coef_.nnz + dense.transition_.size
    Xn = [[{"w": "zzz"}, {"w": "dog"}, {"w": "."}, {"w": "qq"}, {"w": "sleeping"}]]
    assert all(_valid_bio(s) for s in est.predict(X[:10] + Xn))
    assert est.predict(Xn, known=[[None, None, None, "B-VP", None]])[0][3] == "B-VP"
