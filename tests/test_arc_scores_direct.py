"""The fused arc scores (``ArcVectorizer.arc_scores``, what ``DependencyParser``
predicts with) against the materialised arc features (what it trains on), and
the arc feature keys against a plain-Python statement of their definition."""

import numpy as np
import pytest

from structlearn import DependencyParser
from structlearn.feature_extraction import ArcVectorizer
from structlearn.feature_maps import ArcFeatureMap
from structlearn.kernels.arcs import (BETWEEN_ATTRS, N_BASE, TEMPLATE_ITEMS, TEMPLATES,
                                      arc_keys, arc_scores, key_buffer_size,
                                      template_names)
from structlearn.kernels.tree import map_batch, tree_arc_offsets

UPOS = ["DET", "NOUN", "ADJ", "VERB", "ADP", "PRON", "PUNCT"]


def random_sentences(rng, n_sent, max_len, vocab=12, lengths=None):
    X, y = [], []
    for i in range(n_sent):
        n = lengths[i] if lengths is not None else rng.randint(1, max_len + 1)
        toks = []
        for _ in range(n):
            w = rng.randint(vocab)
            toks.append({"form": f"W{w}", "lemma": f"l{w % 5}", "upos": UPOS[rng.randint(7)],
                         "xpos": f"X{rng.randint(10)}",
                         "feats": None if rng.rand() < 0.5 else {"Num": "Sing"}})
        X.append(toks)
        heads = [0] * n   # a random tree: each word attaches to an earlier one or the root
        order = rng.permutation(n) + 1
        for j, m in enumerate(order[1:], start=1):
            heads[m - 1] = int(order[rng.randint(j)])
        y.append(heads)
    return X, y


def materialised(vec, A, off, a, b, coef):
    return arc_scores(*vec.arc_features(A, off, a, b), coef)


@pytest.mark.parametrize("kw", [{}, {"min_freq": 2},
                                # a conjoined template without its plain one
                                {"templates": [template_names()[N_BASE + 11],
                                               template_names()[3], template_names()[62]]},
                                {"templates": [template_names()[t] for t in
                                               (11, N_BASE + 11, 62, N_BASE + 62, 0)]}])
def test_fused_scores_are_the_materialised_scores_bit_for_bit(kw):
    rng = np.random.RandomState(0)
    X, y = random_sentences(rng, 60, 12)
    vec = ArcVectorizer(**kw).fit(X, y)
    coef = rng.randn(vec.n_features_)
    # unseen words (unknown ids), long sentences, one-word sentences
    Xt, _ = random_sentences(rng, 12, 0, vocab=40, lengths=[1, 1, 70, 2, 3, 1, 45, 5, 1, 9,
                                                            33, 1])
    for data in (X, Xt):
        A, off = vec.transform(data)
        for a, b in ((0, len(data)), (1, 3), (len(data) - 1, len(data))):
            fused = vec.arc_scores(A, off, a, b, coef)
            ref = materialised(vec, A, off, a, b, coef)
            assert fused.shape == ref.shape
            assert np.array_equal(fused, ref)
    assert np.any(materialised(vec, *vec.transform(Xt), 0, len(Xt), coef) != 0)


def _mix(h, v):
    """splitmix64-style step on Python ints (the definition of the keys)."""
    M = (1 << 64) - 1
    x = h ^ ((v + 0x9E3779B97F4A7C15 + (h << 6) + (h >> 2)) & M)
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def reference_keys(A, n, h, m):
    """Keys of the arc h -> m written from the templates' definition, one
    template at a time (signed 64-bit, as the kernels store them)."""
    def attr(p, a):
        return 2 if p == 0 else 0 if p < 0 or p > n else int(A[p - 1, a])

    def signed(x):
        return x - (1 << 64) if x >= 1 << 63 else x

    d = abs(h - m)
    dd = (d if d <= 5 else 6 if d <= 10 else 7) + (8 if h < m else 0)
    where = {0: h, 1: m, 2: h - 1, 3: h + 1, 4: m - 1, 5: m + 1}
    out = []
    for t, items in enumerate(TEMPLATE_ITEMS):
        x = _mix(0, t + 1)
        for p, a in items:
            x = _mix(x, attr(where[p], a))
        out += [signed(x | 1), signed(_mix(x, 1000 + dd) | 1)]
    lo, hi = min(h, m), max(h, m)
    for bi, a in enumerate(BETWEEN_ATTRS):
        base = _mix(_mix(_mix(0, len(TEMPLATE_ITEMS) + bi + 1), attr(h, a)), attr(m, a))
        tags = []
        for b in range(lo + 1, hi):
            if attr(b, a) not in tags:
                tags.append(attr(b, a))
        for v in tags:
            x = _mix(base, v) | 1
            out += [signed(x), signed(_mix(x, 1000 + dd) | 1)]
    return out


def test_arc_keys_follow_their_definition():
    rng = np.random.RandomState(1)
    n = 9
    A = rng.randint(0, 6, size=(n + 2, 6)).astype(np.int32)   # repeated tags
    size = key_buffer_size(len(TEMPLATES), n)
    buf, tb = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
    for h, m in [(0, 1), (0, 9), (3, 4), (4, 3), (1, 9), (9, 1), (2, 8), (7, 2)]:
        c = arc_keys(A, 2, n, h, m, TEMPLATES, buf, tb)   # the sentence starts at row 2
        assert buf[:c].tolist() == reference_keys(A[2:], n, h, m)


@pytest.mark.parametrize("kw", [{}, {"min_freq": 2},
                                {"templates": [template_names()[N_BASE + 11],
                                               template_names()[3], template_names()[62]]}])
def test_arc_feature_ids_are_the_known_keys_of_each_arc_in_order(kw):
    # independent of the batch kernel: every key of arc_keys (one arc at a
    # time, no table), its column id its rank among the vectorizer's sorted
    # keys, kept when it is one of them
    rng = np.random.RandomState(3)
    X, y = random_sentences(rng, 50, 10)
    vec = ArcVectorizer(**kw).fit(X, y)
    keys = np.asarray(vec._keys)
    Xt, _ = random_sentences(rng, 6, 0, vocab=30, lengths=[1, 2, 14, 3, 30, 1])
    for data in (X[:10], Xt):
        A, off = vec.transform(data)
        for a, b in ((0, len(data)), (2, 4)):
            indptr, ids = vec.arc_features(A, off, a, b)
            r = 0
            for i in range(a, b):
                n = off[i + 1] - off[i]
                buf = np.empty(key_buffer_size(len(TEMPLATES), n), dtype=np.int64)
                tb = np.empty(len(buf), dtype=np.int64)
                for m in range(1, n + 1):
                    for h in range(n + 1):
                        want = []
                        if h != m:
                            c = arc_keys(A, off[i], n, h, m, TEMPLATES, buf, tb)
                            pos = np.searchsorted(keys, buf[:c])
                            hit = (pos < len(keys)) & (keys[np.minimum(pos, len(keys) - 1)]
                                                       == buf[:c])
                            want = pos[hit].tolist()
                        assert ids[indptr[r]:indptr[r + 1]].tolist() == want, (i, h, m)
                        r += 1
            assert r == len(indptr) - 1
    assert len(ids) > 0


def test_parser_predicts_from_fused_scores_what_the_materialised_scores_give():
    rng = np.random.RandomState(2)
    X, y = random_sentences(rng, 80, 10)
    labels = [[UPOS[k % 3] for k in range(len(h))] for h in y]
    Xt, yt = random_sentences(rng, 30, 25, vocab=30)
    for target in (y, list(zip(y, labels))):     # unlabelled and labelled
        est = DependencyParser(loss="perceptron", max_iter=3, random_state=0).fit(X, target)
        vec = est.vectorizer_
        A, off = vec.transform(Xt)
        fm = ArcFeatureMap(vec, A, off, 1)
        theta = np.concatenate([arc_scores(p, i, est.coef_) for p, i in fm.chunks])
        ref = map_batch(theta, tree_arc_offsets(off), off, True, False)
        for n_jobs in (1, 2):
            est.set_params(n_jobs=n_jobs)
            pred = est.predict(Xt)
            heads = [p[0] if isinstance(p, tuple) else p for p in pred]
            assert np.array_equal(np.concatenate(heads), ref)
            scores = est.decision_function(Xt)
            assert np.array_equal(np.concatenate([s.ravel() for s in scores]), theta)


def test_weight_table_holds_every_feature_beside_its_weight():
    from structlearn.kernels.arcs import BUCKET, _find

    rng = np.random.RandomState(3)
    X, y = random_sentences(rng, 40, 10)
    vec = ArcVectorizer().fit(X, y)
    coef = rng.randn(vec.n_features_)
    table = vec._weight_table(coef).table
    assert table.ctypes.data % 64 == 0   # a bucket is one cache line
    keys = vec._keys_by_id()
    assert len(np.unique(keys)) == vec.n_features_ and np.all(keys != 0)
    weights = table.view(np.float64)
    for f in rng.choice(vec.n_features_, 50, replace=False):
        i = _find(table, keys[f])
        # the value sits in the key's bucket, BUCKET entries after its key
        assert i >= 0 and table[i - BUCKET] == keys[f] and weights[i] == coef[f]
        assert (i // (2 * BUCKET)) == ((i - BUCKET) // (2 * BUCKET))
        assert vec.arc_features(*vec.transform(X[:1]), 0, 1)[1].dtype == np.int32
    assert _find(table, np.int64(12345678901)) == -1
    key_slots = table.reshape(-1, 2 * BUCKET)[:, :BUCKET]
    assert np.count_nonzero(key_slots) == vec.n_features_
    with pytest.raises(ValueError, match="coef must have shape"):
        vec._weight_table(coef[:-1])


@pytest.mark.parametrize("home", [3, 15])   # 15: the last bucket, probing wraps around
def test_table_lookups_follow_keys_into_the_next_buckets(home):
    """Keys that share a home bucket overflow into the next ones: the
    branch-free bucket compare of ``_lookup_all`` and ``_find`` must follow
    them there, and report absent keys (also of that home) as unknown --
    checked against a dict."""
    from structlearn.feature_extraction._arcs import _new_table
    from structlearn.kernels.arcs import BUCKET, _find, _lookup_all

    n_buckets = 16
    # the home bucket of a key is (key >> 1) & (n_buckets - 1); keys odd
    same = [(((j * n_buckets + home) << 1) | 1) for j in range(1, 4 * BUCKET + 2)]
    rng = np.random.RandomState(0)
    other = [int(k) | 1 for k in rng.randint(1, 2**62, size=8)]
    keys = np.array(same[:3 * BUCKET] + other, dtype=np.int64)
    values = rng.randint(0, 10**9, size=len(keys)).astype(np.int64)
    table = _new_table(keys, values)
    assert len(table) == 2 * BUCKET * n_buckets
    truth = dict(zip(keys.tolist(), values.tolist()))
    probe = np.array(same + other + [int(k) | 1 for k in rng.randint(1, 2**62, size=8)],
                     dtype=np.int64)
    known = np.zeros(len(probe), dtype=np.bool_)
    vals = np.zeros(len(probe), dtype=np.int64)
    _lookup_all(table, probe, known, vals, np.int64(len(probe)), np.int64(-7))
    for key, kn, v in zip(probe.tolist(), known, vals):
        assert kn == (key in truth) and v == truth.get(key, -7)
        i = _find(table, np.int64(key))
        assert (i >= 0) == (key in truth) and (i < 0 or table[i] == truth[key])


def test_parser_weight_table_follows_coef_and_is_not_pickled():
    import pickle

    rng = np.random.RandomState(4)
    X, y = random_sentences(rng, 50, 9)
    Xt, _ = random_sentences(rng, 15, 0, vocab=30, lengths=[1, 2, 60, 1, 7, 3, 1, 12, 5, 1,
                                                            40, 2, 9, 1, 4])
    est = DependencyParser(loss="perceptron", max_iter=2, random_state=0).fit(X, y)
    # the feature table is released after the fit, rebuilt when needed
    assert "_table_cache" not in est.vectorizer_.__dict__

    def reference(est):
        vec = est.vectorizer_
        A, off = vec.transform(Xt)
        return materialised(vec, A, off, 0, len(Xt), est.coef_)

    def fused(est):
        return np.concatenate([s.ravel() for s in est.decision_function(Xt)])

    assert np.array_equal(fused(est), reference(est))
    table = est._weights_cache[3]
    assert np.array_equal(fused(est), reference(est)) and est._weights_cache[3] is table
    # a new coef_ array, and the same array changed in place: a new table
    est.coef_ = est.coef_ * 2.0
    assert np.array_equal(fused(est), reference(est))
    est.coef_[:] = rng.randn(len(est.coef_))
    assert np.array_equal(fused(est), reference(est))
    # pickles carry neither the weight table nor the feature table (its keys)
    blob = pickle.dumps(est)
    assert len(blob) < est.vectorizer_._table.nbytes
    est2 = pickle.loads(blob)
    assert "_weights_cache" in est.__dict__ and "_weights_cache" not in est2.__dict__
    assert np.array_equal(fused(est2), reference(est))
    assert np.array_equal(est2.vectorizer_._table, est.vectorizer_._table)
    # a refit (warm start too) replaces the table
    est.set_params(warm_start=True).fit(X, y)
    assert np.array_equal(fused(est), reference(est))


def test_vectorizer_unpickles_a_pickled_feature_table():
    """Pickles made when the vectorizer's state held the feature table itself."""
    rng = np.random.RandomState(5)
    X, y = random_sentences(rng, 30, 8)
    vec = ArcVectorizer().fit(X, y)
    state = {k: v for k, v in vec.__dict__.items() if k not in ("_keys", "_table_cache")}
    # their layout: one slot per key (key at 2 s, its column id at 2 s + 1),
    # twice as many slots as keys, in hash order
    keys = vec._keys_by_id()
    n_slots = 1 << int(np.ceil(np.log2(2 * len(keys))))
    table = np.zeros(2 * n_slots, dtype=np.int64)
    slots = rng.choice(n_slots, len(keys), replace=False)
    table[2 * slots], table[2 * slots + 1] = keys, np.arange(len(keys))
    state["_table"] = table
    old = ArcVectorizer.__new__(ArcVectorizer)
    old.__setstate__(state)          # a state with '_table', as older pickles have
    A, off = vec.transform(X)
    coef = rng.randn(vec.n_features_)
    assert np.array_equal(old.arc_scores(A, off, 0, len(X), coef),
                          materialised(vec, A, off, 0, len(X), coef))
