"""Tests of structlearn.feature_extraction.TokenVectorizer."""

import os
import pickle
import re
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import DictVectorizer

from structlearn.feature_extraction import TokenVectorizer, _water_fill

SHARED = Path(os.environ.get("STRUCTLEARN_BENCH_DATA")
              or Path(__file__).resolve().parents[2] / "shared" / "data")
CONLL = SHARED / "conll2000_chunking" / "train.txt"


# ------------------------------------------------------------------ helpers
def _token_features(tv, M, row):
    """{feature name: value} of one row (vocabulary mode)."""
    names = tv.get_feature_names_out()
    r = M.getrow(row)
    return {names[j]: v for j, v in zip(r.indices, r.data)}


def _check_canonical(M):
    assert sp.isspmatrix_csr(M) or isinstance(M, sp.csr_array)
    assert M.has_canonical_format
    assert np.all(M.data != 0)


def _check_templates(tv, n_cols):
    assert len(tv.templates_) == n_cols
    assert tv.templates_.dtype == np.int64
    assert np.all(np.diff(tv.templates_) >= 0)         # contiguous blocks
    assert tv.templates_.min() >= 0 and tv.templates_.max() < len(tv.template_names_)
    assert tv.template_names_ == sorted(tv.template_names_)
    assert isinstance(tv.template_names_, list)


def _random_dicts(rng, n_seq, n_vocab=50, keys=("w", "p", "s")):
    X = []
    for _ in range(n_seq):
        seq = []
        for _ in range(int(rng.integers(0, 6))):
            tok = {k: f"{k}{int(rng.integers(n_vocab))}" for k in keys}
            if rng.random() < 0.5:
                tok["num"] = float(rng.normal())
            seq.append(tok)
        X.append(seq)
    return X


SIMPLE = [[{"w": "the", "pos": "DT"}, {"w": "cat", "pos": "NN"}],
          [{"w": "the", "pos": "DT", "len": 3}]]


# ------------------------------------------------------------------ naming
def test_string_value_is_key_equals_value_indicator():
    tv = TokenVectorizer()
    M, off = tv.fit_transform([[{"w": "the"}, {"w": "cat"}]])
    assert _token_features(tv, M, 0) == {"w=the": 1.0}
    assert _token_features(tv, M, 1) == {"w=cat": 1.0}
    assert tv.template_names_ == ["w"]


def test_numeric_values_use_key_and_value():
    X = [[{"i": 3, "f": -0.25, "np_f": np.float32(0.5), "np_i": np.int64(-2), "one": 1.0}]]
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    assert _token_features(tv, M, 0) == {"i": 3.0, "f": -0.25, "np_f": 0.5, "np_i": -2.0,
                                         "one": 1.0}
    assert sorted(tv.template_names_) == ["f", "i", "np_f", "np_i", "one"]


def test_bool_true_is_indicator_false_is_absent():
    X = [[{"cap": True, "low": False, "nb": np.bool_(True), "nf": np.bool_(False)},
          {"cap": False}]]
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    assert _token_features(tv, M, 0) == {"cap": 1.0, "nb": 1.0}
    assert _token_features(tv, M, 1) == {}
    assert "low" not in tv.vocabulary_ and "nf" not in tv.vocabulary_
    assert tv.template_names_ == ["cap", "nb"]


def test_zero_values_are_dropped_and_never_become_columns():
    X = [[{"z": 0, "zf": 0.0, "nz": -0.0, "a": 2.0}, {"z": 1}]]
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    assert set(tv.vocabulary_) == {"a", "z"}
    assert _token_features(tv, M, 0) == {"a": 2.0}
    assert _token_features(tv, M, 1) == {"z": 1.0}
    _check_canonical(M)


def test_nested_dicts_join_keys_with_colon_and_keep_top_level_template():
    X = [[{"ctx": {"prev": "the", "n": 2.5, "flag": True, "off": False,
                   "deep": {"x": "y"}, "bag": ["a", "b"]}}]]
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    assert _token_features(tv, M, 0) == {"ctx:prev=the": 1.0, "ctx:n": 2.5,
                                         "ctx:flag": 1.0, "ctx:deep:x=y": 1.0,
                                         "ctx:bag=a": 1.0, "ctx:bag=b": 1.0}
    assert tv.template_names_ == ["ctx"]
    assert np.all(tv.templates_ == 0)


@pytest.mark.parametrize("container", [list, tuple, set, frozenset])
def test_collections_of_strings_give_one_indicator_per_string(container):
    X = [[{"suf": container(["ing", "ng"]), "w": "going"}]]
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    assert _token_features(tv, M, 0) == {"suf=ing": 1.0, "suf=ng": 1.0, "w=going": 1.0}
    g = tv.template_names_.index("suf")
    cols = [tv.vocabulary_["suf=ing"], tv.vocabulary_["suf=ng"]]
    assert np.all(tv.templates_[cols] == g)


def test_list_same_as_string_value_and_repeats_sum():
    tv = TokenVectorizer()
    M, _ = tv.fit_transform([[{"k": ["a"]}, {"k": "a"}, {"k": ["a", "b", "a"]}]])
    assert tv.vocabulary_ == {"k=a": 0, "k=b": 1}
    np.testing.assert_array_equal(M.toarray(), [[1, 0], [1, 0], [2, 1]])


@pytest.mark.parametrize("X, where", [
    ([[{"k": "a", "k=a": 2.0}]], r"key 'k' with value 'a' \(first at sequence 0, position 0 \(X\[0\]\[0\]\)\)"
     r" and key 'k=a' with value a number \(first at sequence 0, position 0 \(X\[0\]\[0\]\)\)"),
    ([[{"w": "x"}], [{"z": 1.0}, {"a": "b=c"}], [{"a=b": "c"}]],
     r"'a=b=c': key 'a' with value 'b=c' \(first at sequence 1, position 1 \(X\[1\]\[1\]\)\) and key "
     r"'a=b' with value 'c' \(first at sequence 2, position 0 \(X\[2\]\[0\]\)\)"),
    ([[{"a": ["x", "b=c"]}, {"a=b": ["c"]}]],
     r"key 'a' with value 'b=c' \(first at sequence 0, position 0 \(X\[0\]\[0\]\)\)"),
])
def test_same_name_from_two_keys_is_an_error(X, where):
    """Two keys producing one feature name would be one column: two
    different features merged (a tagger would learn nothing from them).
    Fit names both keys, their values and where they first occur, and
    leaves a fitted vectorizer unchanged."""
    tv = TokenVectorizer().fit([[{"w": "x"}]])
    with pytest.raises(ValueError, match=where):
        tv.fit(X)
    assert list(tv.get_feature_names_out()) == ["w=x"]


def test_numpy_string_and_dict_subclasses_accepted():
    X = [(OrderedDict([("w", np.str_("x"))]), {"w": "x"})]
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    assert tv.vocabulary_ == {"w=x": 0}
    assert M.toarray().ravel().tolist() == [1.0, 1.0]


def test_value_forms_of_one_feature_share_a_column_across_fit_and_transform():
    """np.str_ values and strings in lists are the str feature they name,
    whichever scan (fast or slow) reads them in fit and in transform; a name
    another key produces is not that column."""
    tv = TokenVectorizer().fit([[{"w": np.str_("a"), "k": ["b"]}, {"w": "c"}]])
    M, _ = tv.transform([[{"w": "a", "k": "b"}, {"w": ["c"], "k": np.str_("b")}]])
    assert _token_features(tv, M, 0) == {"w=a": 1.0, "k=b": 1.0}
    assert _token_features(tv, M, 1) == {"w=c": 1.0, "k=b": 1.0}
    tv = TokenVectorizer().fit([[{"k": ["b"], "z": "q"}, {"k=a": 2.0}]])
    M, _ = tv.transform([[{"k=a": 1.0}, {"k": "a"}, {"k": "b"}]])
    assert _token_features(tv, M, 0) == {"k=a": 1.0}
    assert _token_features(tv, M, 1) == {}     # ("k", "a") is not key "k=a"'s feature
    assert _token_features(tv, M, 2) == {"k=b": 1.0}


def test_matches_dictvectorizer_on_flat_features():
    rng = np.random.default_rng(0)
    X = _random_dicts(rng, 40)
    tv = TokenVectorizer()
    M, off = tv.fit_transform(X)
    flat = [tok for seq in X for tok in seq]
    dv = DictVectorizer()
    D = dv.fit_transform(flat)
    assert sorted(dv.get_feature_names_out()) == sorted(tv.get_feature_names_out())
    perm = [tv.vocabulary_[n] for n in dv.get_feature_names_out()]
    np.testing.assert_allclose(M[:, perm].toarray(), D.toarray())
    _check_canonical(M)


def test_columns_are_grouped_by_template_and_named_consistently():
    rng = np.random.default_rng(1)
    X = _random_dicts(rng, 30, keys=("b", "a|b", "a", "c"))
    tv = TokenVectorizer()
    M, _ = tv.fit_transform(X)
    _check_templates(tv, M.shape[1])
    assert tv.template_names_ == ["a", "a|b", "b", "c", "num"]
    names = tv.get_feature_names_out()
    assert names.dtype == object and len(names) == M.shape[1]
    for j, name in enumerate(names):
        tmpl = tv.template_names_[tv.templates_[j]]
        assert name == tmpl or name.startswith(tmpl + "=")
        assert tv.vocabulary_[name] == j
    # within a template the names are sorted
    for g in range(len(tv.template_names_)):
        block = list(names[tv.templates_ == g])
        assert block == sorted(block)


def test_column_order_does_not_depend_on_sequence_order():
    rng = np.random.default_rng(2)
    X = _random_dicts(rng, 30)
    for params in [{}, {"n_features": 64}]:
        a = TokenVectorizer(**params).fit(X)
        b = TokenVectorizer(**params).fit(X[::-1])
        assert list(a.get_feature_names_out()) == list(b.get_feature_names_out())
        np.testing.assert_array_equal(a.templates_, b.templates_)


# ---------------------------------------------------------------- min_freq
def test_min_freq_counts_tokens_and_filters():
    X = [[{"w": "a", "k": ["x", "x"]}, {"w": "a"}, {"w": "b", "z": 0.0}],
         [{"w": "c", "k": ["x"], "z": 1.0}, {"w": "a", "n": 0}]]
    tv = TokenVectorizer(min_freq=2)
    M, off = tv.fit_transform(X)
    # w=a: 3 tokens, k=x: 2 tokens (the repeat inside one token counts once),
    # w=b, w=c, z (the zero value does not count): 1 token -> dropped
    assert tv.vocabulary_ == {"k=x": 0, "w=a": 1}
    assert tv.template_names_ == ["k", "w", "z"]     # z is seen but has no column
    np.testing.assert_array_equal(M.toarray(), [[2, 1], [0, 1], [0, 0], [1, 0], [0, 1]])
    assert list(tv.get_feature_names_out()) == ["k=x", "w=a"]
    _check_templates(tv, M.shape[1])
    _check_canonical(M)
    # transform agrees with fit_transform
    M2, off2 = tv.transform(X)
    assert (M2 != M).nnz == 0 and np.array_equal(off, off2)


def test_min_freq_too_high_raises():
    with pytest.raises(ValueError, match="min_freq=5"):
        TokenVectorizer(min_freq=5).fit(SIMPLE)


# --------------------------------------------------------------- transform
def test_unseen_features_and_templates_ignored_at_transform():
    tv = TokenVectorizer().fit(SIMPLE)
    M, off = tv.transform([[{"w": "dog", "pos": "NN", "new": "x", "len": 2.0}], []])
    assert M.shape == (1, len(tv.vocabulary_))
    assert _token_features(tv, M, 0) == {"pos=NN": 1.0, "len": 2.0}
    assert off.tolist() == [0, 1, 1]


def test_transform_equals_fit_transform():
    rng = np.random.default_rng(3)
    X = _random_dicts(rng, 25)
    for params in [{}, {"min_freq": 2}, {"n_features": 40}, {"n_features": 40, "min_freq": 3}]:
        tv = TokenVectorizer(**params)
        M, off = tv.fit_transform(X)
        M2, off2 = tv.transform(X)
        assert (M != M2).nnz == 0
        np.testing.assert_array_equal(off, off2)
        M3, _ = TokenVectorizer(**params).fit(X).transform(X)
        assert (M != M3).nnz == 0


def _mixed_dicts(rng, n_seq):
    """Tokens with every value type the fast scan handles in C or in
    ``__missing__``: strings, bools, 0 / 1 / other numbers, numpy scalars."""
    X = []
    for _ in range(n_seq):
        seq = []
        for _ in range(int(rng.integers(0, 6))):
            tok = {"w": f"w{int(rng.integers(30))}", "p": f"p{int(rng.integers(5))}",
                   "cap": bool(rng.random() < 0.5), "one": 1.0,
                   "n": [0, 1, 2.5, -1, 0.0, True, False][int(rng.integers(7))],
                   "np": [np.float64(1.0), np.float32(0.5), np.int64(0), np.bool_(True),
                          np.bool_(False)][int(rng.integers(5))]}
            if rng.random() < 0.3:
                tok["rare"] = f"r{int(rng.integers(100))}"
            seq.append(tok)
        X.append(seq)
    return X


@pytest.mark.parametrize("params", [{}, {"min_freq": 2}, {"n_features": 40}])
def test_fast_scan_equals_slow_scan(params, monkeypatch):
    """The C-level scan and the Python scan agree in fit and transform,
    including unseen features and numbers other than 0 and 1."""
    import structlearn.feature_extraction._dicts as fe

    rng = np.random.default_rng(11)
    X, X_new = _mixed_dicts(rng, 40), _mixed_dicts(rng, 20)
    calls = []
    real_fast = fe._scan_fast

    def counting_fast(X, table):
        out = real_fast(X, table)
        calls.append(1)
        return out

    monkeypatch.setattr(fe, "_scan_fast", counting_fast)
    fast = TokenVectorizer(**params)
    M_fast, off_fast = fast.fit_transform(X)
    T_fast, _ = fast.transform(X_new)
    assert len(calls) == 2           # the fast scan handled both, no fallback

    def no_fast(X, table):
        raise fe._Slow

    monkeypatch.setattr(fe, "_scan_fast", no_fast)
    slow = TokenVectorizer(**params)
    M_slow, off_slow = slow.fit_transform(X)
    T_slow, _ = slow.transform(X_new)
    T_cross, _ = fast.transform(X_new)      # fitted by the fast scan, read slowly
    assert list(fast.get_feature_names_out()) == list(slow.get_feature_names_out())
    np.testing.assert_array_equal(fast.templates_, slow.templates_)
    np.testing.assert_array_equal(off_fast, off_slow)
    for A, B in [(M_fast, M_slow), (T_fast, T_slow), (T_cross, T_slow)]:
        _check_canonical(A)
        assert A.shape == B.shape and (A != B).nnz == 0


def test_raw_parts_hold_the_same_entries():
    """The estimators' path (unsorted entries, no all-ones data) encodes the
    same matrix as transform."""
    rng = np.random.default_rng(12)
    X = _random_dicts(rng, 30)
    X_bin = [[{k: v for k, v in tok.items() if k != "num"} for tok in seq] for seq in X]
    tv = TokenVectorizer().fit(X)
    for data in (X, X_bin):
        M, off = tv.transform(data)
        enc = tv._transform(data, raw=True)
        assert (enc.data is None) == (data is X_bin)
        R = sp.csr_matrix((np.ones(len(enc.indices)) if enc.data is None else enc.data,
                           enc.indices, enc.indptr), shape=M.shape)
        assert (R != M).nnz == 0 and np.array_equal(enc.tok_off, off)
    enc = TokenVectorizer()._fit(X_bin, transform=True, raw=True)
    assert enc.data is None


def test_vocabulary_is_built_lazily_and_not_pickled_twice():
    tv = TokenVectorizer().fit(SIMPLE)
    assert tv._vocabulary is None and tv._feature_names is None
    assert tv.vocabulary_ == {n: j for j, n in enumerate(tv.get_feature_names_out())}
    tv2 = pickle.loads(pickle.dumps(TokenVectorizer().fit(SIMPLE)))
    assert tv2.vocabulary_ == tv.vocabulary_
    with pytest.raises(NotFittedError):
        TokenVectorizer().vocabulary_
    assert not hasattr(TokenVectorizer(), "vocabulary_")


def test_dtype_parameter():
    M, _ = TokenVectorizer(dtype=np.float32).fit_transform(SIMPLE)
    assert M.dtype == np.float32
    M, _ = TokenVectorizer().fit_transform(SIMPLE)
    assert M.dtype == np.float64


# ----------------------------------------------------------------- hashing
def _decode_hashed_columns(tv):
    offsets = np.concatenate(([0], np.cumsum(tv.hash_moduli_)))
    g = np.searchsorted(offsets, tv.hash_buckets_, side="right") - 1
    return g, tv.hash_buckets_ - offsets[g]


def test_hashing_bounds_columns_and_keeps_each_column_in_one_template():
    rng = np.random.default_rng(4)
    # a big template, a medium one and a tiny one
    X = [[{"big": f"b{int(rng.integers(5000))}", "mid": f"m{int(rng.integers(60))}",
           "tiny": f"t{int(rng.integers(3))}", "num": 1.5}
          for _ in range(20)] for _ in range(100)]
    vocab_cols = TokenVectorizer().fit(X).templates_.size
    tv = TokenVectorizer(n_features=256)
    M, off = tv.fit_transform(X)
    assert vocab_cols > 1000
    assert M.shape[1] <= 256 and M.shape[1] == len(tv.templates_)
    _check_templates(tv, M.shape[1])
    _check_canonical(M)
    assert tv.vocabulary_ is None
    assert tv.template_names_ == ["big", "mid", "num", "tiny"]
    # bucket ids decode to the template recorded for the column
    g, local = _decode_hashed_columns(tv)
    np.testing.assert_array_equal(g, tv.templates_)
    assert np.all(local >= 0) and np.all(local < tv.hash_moduli_[g])
    assert np.all(np.diff(tv.hash_buckets_) > 0)
    # small templates are hashed without (practical) collisions: one column
    # per distinct value; the big one absorbs the rest of the budget
    counts = np.bincount(tv.templates_, minlength=4)
    assert counts[1] == 60 and counts[2] == 1 and counts[3] == 3
    assert counts[0] == M.shape[1] - 64
    # the tokens' features land in their template's columns
    for t in range(5):
        row = M.getrow(t)
        assert sorted(tv.templates_[row.indices].tolist()) == [0, 1, 2, 3]
    assert tv.get_feature_names_out()[0].startswith("big#")
    # no token is lost: row sums equal 3 indicators + 1.5
    np.testing.assert_allclose(np.asarray(M.sum(axis=1)).ravel(), 4.5)


def test_hashing_transform_drops_unseen_templates():
    tv = TokenVectorizer(n_features=100).fit(SIMPLE)
    M, _ = tv.transform([[{"w": "the", "unseen": "q", "pos": "DT"}]])
    M0, _ = tv.transform([[{"w": "the", "pos": "DT"}]])
    assert (M != M0).nnz == 0 and M.nnz == 2


def test_hashing_min_freq_counts_hashed_columns():
    # with n_features=2 template "w" (5 distinct values, one token each)
    # gets a single bucket, which occurs in 5 tokens
    X = [[{"w": f"v{i}", "p": "x"} for i in range(5)]]
    assert TokenVectorizer(min_freq=2).fit(X).template_names_ == ["p", "w"]
    assert TokenVectorizer(min_freq=2).fit(X).templates_.tolist() == [0]
    tv = TokenVectorizer(n_features=2, min_freq=2)
    M, _ = tv.fit_transform(X)
    assert M.shape == (5, 2) and tv.templates_.tolist() == [0, 1]
    np.testing.assert_array_equal(M.toarray(), np.ones((5, 2)))
    assert tv.hash_moduli_[1] == 1


def test_hashing_needs_one_column_per_template():
    with pytest.raises(ValueError, match="smaller than the number of templates"):
        TokenVectorizer(n_features=1).fit(SIMPLE)


@pytest.mark.parametrize("counts,budget", [([1, 1, 1], 3), ([10, 1, 500, 7], 20),
                                           ([100] * 5, 7), ([3, 4], 1000)])
def test_water_fill_respects_budget(counts, budget):
    mods = _water_fill(np.array(counts), budget)
    assert np.all(mods >= 1)
    assert np.minimum(mods, counts).sum() <= budget


# ------------------------------------------------------------------- arrays
def test_dense_and_sparse_array_input():
    rng = np.random.default_rng(5)
    A = [rng.normal(size=(3, 4)), np.zeros((0, 4)), rng.normal(size=(2, 4))]
    A[0][1, 2] = 0.0
    tv = TokenVectorizer()
    M, off = tv.fit_transform(A)
    assert off.tolist() == [0, 3, 3, 5] and off.dtype == np.int64
    np.testing.assert_allclose(M.toarray(), np.vstack(A))
    _check_canonical(M)
    assert tv.template_names_ == ["x0", "x1", "x2", "x3"]
    assert tv.templates_.tolist() == [0, 1, 2, 3]
    assert list(tv.get_feature_names_out()) == ["x0", "x1", "x2", "x3"]
    assert tv.vocabulary_ is None and tv.n_features_in_ == 4
    S = [sp.csr_matrix(A[0]), sp.coo_matrix(A[1]), A[2], []]   # mixed dense/sparse + empty
    M2, off2 = tv.transform(S)
    assert off2.tolist() == [0, 3, 3, 5, 5]
    np.testing.assert_allclose(M2.toarray(), np.vstack(A))
    M3, _ = TokenVectorizer().fit_transform([a.astype(int) for a in A])
    assert M3.dtype == np.float64


def test_array_column_mismatch_at_transform():
    tv = TokenVectorizer().fit([np.ones((2, 3))])
    with pytest.raises(ValueError, match=r"sequence 1 .*2 columns, expected 3"):
        tv.transform([np.ones((1, 3)), np.ones((1, 2))])
    M, off = tv.transform([[]])
    assert M.shape == (0, 3) and off.tolist() == [0, 0]


def test_refit_switches_input_type():
    tv = TokenVectorizer().fit([np.ones((2, 3))])
    assert tv.n_features_in_ == 3
    tv.fit(SIMPLE)
    assert not hasattr(tv, "n_features_in_") and tv.vocabulary_ is not None
    with pytest.raises(ValueError, match="fitted on feature dicts"):
        tv.transform([np.ones((2, 3))])
    tv.fit([np.ones((2, 3))])
    with pytest.raises(ValueError, match="fitted on arrays"):
        tv.transform(SIMPLE)


# ------------------------------------------------------------------ offsets
def test_offsets_with_empty_sequences():
    X = [[], [{"w": "a"}], [], [], [{"w": "b"}, {"w": "a"}, {}], []]
    tv = TokenVectorizer()
    M, off = tv.fit_transform(X)
    assert off.dtype == np.int64
    assert off.tolist() == [0, 0, 1, 1, 1, 4, 4]
    assert M.shape == (4, 2)
    np.testing.assert_array_equal(M.toarray(), [[1, 0], [0, 1], [1, 0], [0, 0]])
    for i, seq in enumerate(X):
        assert off[i + 1] - off[i] == len(seq)


# --------------------------------------------------------------- validation
def _raises(X, pattern, tv=None):
    tv = tv or TokenVectorizer()
    with pytest.raises(ValueError, match=pattern):
        tv.fit(X)


@pytest.mark.parametrize("X,pattern", [
    ("the cat", r"X must be a list of sequences, got a str"),
    (np.ones((3, 2)), r"got a 2-D numpy array of dtype float64 and shape \(3, 2\).*\[X\]"),
    (sp.csr_matrix(np.ones((3, 2))), r"got a scipy.sparse matrix"),
    ({"w": "a"}, r"X must be a list of sequences"),
    (None, r"X must be a list of sequences, got NoneType None"),
    ([], r"X is empty"),
    ([{"w": "a"}, {"w": "b"}], r"sequence 0 \(X\[0\]\) is a dict.*wrap it in a list"),
    ([[{"w": "a"}], "abc"], r"sequence 1 \(X\[1\]\) is str 'abc'"),
    ([[{"w": "a"}], 5], r"sequence 1 \(X\[1\]\) is int 5"),
    ([[{"w": "a"}], np.ones((2, 2))], r"mixes .*sequence 0.* \(e.g. sequence 1\)"),
    ([np.ones((2, 2)), [], [{"w": "a"}]], r"mixes .*sequence 2.*sequence 0"),
])
def test_invalid_X_structure(X, pattern):
    _raises(X, pattern)


@pytest.mark.parametrize("tok,pattern", [
    ("w=a", r"expected a dict of features, got str 'w=a'"),
    (["w=a"], r"expected a dict of features, got list \['w=a'\]"),
    (np.ones(3), r"expected a dict of features, got a 1-D numpy array"),
    ({1: "a"}, r"feature key 1 is int; feature keys must be str"),
    ({("a",): 1.0}, r"feature key \('a',\) is tuple"),
    ({"n": {2: "a"}}, r"nested key 2 under 'n' is int"),
    ({"w": None}, r"feature 'w' has a value of unsupported type NoneType"),
    ({"w": b"x"}, r"unsupported type bytes"),
    ({"w": 1j}, r"unsupported type complex"),
    ({"w": object()}, r"unsupported type object"),
    ({"w": [1, 2]}, r"feature 'w' is a list containing 1 of type int"),
    ({"n": {"m": [None]}}, r"feature 'n:m' is a list containing None"),
    ({"n": {"m": None}}, r"feature 'n:m' has a value of unsupported type"),
    ({"f": float("nan")}, r"feature 'f' has a non-finite value nan"),
    ({"f": float("inf")}, r"feature 'f' has a non-finite value inf"),
    ({"f": -float("inf")}, r"non-finite value -inf"),
    ({"f": np.float64("nan")}, r"feature 'f' has a non-finite value"),
    ({"f": np.float32("inf")}, r"feature 'f' has a non-finite value"),
    ({"f": 10 ** 400}, r"feature 'f' has a non-finite value"),
    ({"n": {"m": float("nan")}}, r"feature 'n:m' has a non-finite value"),
])
def test_invalid_token_names_sequence_and_position(tok, pattern):
    X = [[{"w": "a"}], [{"w": "b"}, {"w": "c"}, tok, {"w": "d"}]]
    with pytest.raises(ValueError, match=r"sequence 1, position 2 \(X\[1\]\[2\]\)") as exc:
        TokenVectorizer().fit(X)
    assert re.search(pattern, str(exc.value)), str(exc.value)
    # transform validates the same way
    tv = TokenVectorizer().fit(X[:1])
    with pytest.raises(ValueError, match=r"sequence 1, position 2"):
        tv.transform(X)


@pytest.mark.parametrize("X,pattern", [
    ([np.ones((2, 2)), np.ones(3)], r"sequence 1 \(X\[1\]\) is a 1-D array of shape \(3,\)"),
    ([np.ones((2, 2, 2))], r"sequence 0 \(X\[0\]\) is a 3-D array"),
    ([np.ones((2, 2)), np.ones((1, 3))], r"sequence 1 \(X\[1\]\) has 3 columns, expected 2"),
    ([sp.csr_matrix(np.ones((2, 2))), np.ones((1, 3))], r"sequence 1 .*3 columns"),
    ([np.ones((2, 2)), np.array([[1.0, 2.0], [0.0, np.nan]])],
     r"sequence 1, position 1 \(X\[1\]\[1\]\).*NaN or infinite"),
    ([np.ones((2, 2)), sp.csr_matrix(np.array([[0, 0], [0, 0], [np.inf, 0.0]]))],
     r"sequence 1, position 2 .*NaN or infinite"),
    ([np.array([["a", "b"]])], r"sequence 0 \(X\[0\]\) has dtype <U1"),
    ([np.ones((2, 2), dtype=complex)], r"has dtype complex128"),
])
def test_invalid_arrays(X, pattern):
    _raises(X, pattern)


def test_no_features_raises():
    _raises([[], []], r"no features")
    _raises([[{"a": False, "b": 0}]], r"no features")
    # arrays define their columns even without tokens
    tv = TokenVectorizer().fit([[], np.zeros((0, 3))])
    assert tv.n_features_in_ == 3 and tv.template_names_ == ["x0", "x1", "x2"]
    _raises([np.zeros((2, 0))], r"no columns")


@pytest.mark.parametrize("params,pattern", [
    ({"min_freq": 0}, "min_freq"), ({"min_freq": 1.5}, "min_freq"),
    ({"min_freq": True}, "min_freq"), ({"n_features": 0}, "n_features"),
    ({"n_features": "big"}, "n_features"), ({"dtype": np.int64}, "dtype"),
    ({"dtype": "nonsense"}, "dtype"),
])
def test_invalid_params(params, pattern):
    _raises(SIMPLE, pattern, TokenVectorizer(**params))


def test_not_fitted():
    tv = TokenVectorizer()
    with pytest.raises(NotFittedError):
        tv.transform(SIMPLE)
    with pytest.raises(NotFittedError):
        tv.get_feature_names_out()


def _state(tv):
    return {k: (v.copy() if isinstance(v, (np.ndarray, dict, list)) else v)
            for k, v in vars(tv).items() if k.endswith("_")}


def _same_state(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k])
        else:
            assert a[k] == b[k], k


@pytest.mark.parametrize("params", [{}, {"n_features": 50}])
@pytest.mark.parametrize("bad", [
    [[{"w": "a"}, {"w": float("nan")}]],
    [[{"w": "a"}], [{"w": "b"}, "oops"]],
    [[{"w": "a"}], np.ones((2, 2))],
    [np.ones((2, 2)), np.ones(2)],
    "text",
    [[{"w": "zzz"}]],          # fails only through the parameters below
])
def test_failed_fit_leaves_state_unchanged(params, bad):
    tv = TokenVectorizer(**params).fit(SIMPLE)
    before = _state(tv)
    M0, _ = tv.transform(SIMPLE)
    if isinstance(bad, list) and bad == [[{"w": "zzz"}]]:
        tv.set_params(min_freq=2)        # every feature of `bad` occurs once
    with pytest.raises(ValueError):
        tv.fit(bad)
    with pytest.raises(ValueError):
        tv.fit_transform(bad)
    _same_state(before, _state(tv))
    tv.set_params(min_freq=1)
    M1, _ = tv.transform(SIMPLE)
    assert (M0 != M1).nnz == 0


def test_failed_hash_fit_leaves_state_unchanged():
    tv = TokenVectorizer(n_features=10).fit(SIMPLE)
    before = _state(tv)
    tv.set_params(n_features=2)
    with pytest.raises(ValueError, match="smaller than the number of templates"):
        tv.fit([[{"a": "x", "b": "y", "c": "z"}]])
    _same_state(before, _state(tv))


# ------------------------------------------------------- sklearn protocol
def test_get_params_and_clone():
    tv = TokenVectorizer(min_freq=3, n_features=1024, dtype=np.float32)
    assert tv.get_params() == {"min_freq": 3, "n_features": 1024, "dtype": np.float32}
    tv.fit([[{"w": "a"}] * 3])
    c = clone(tv)
    assert c.get_params() == tv.get_params()
    assert not hasattr(c, "templates_")
    c.set_params(min_freq=1)
    assert c.min_freq == 1 and tv.min_freq == 3


@pytest.mark.parametrize("params", [{}, {"min_freq": 2}, {"n_features": 64}])
def test_pickle_roundtrip(params):
    rng = np.random.default_rng(6)
    X = _random_dicts(rng, 30)
    tv = TokenVectorizer(**params).fit(X)
    tv2 = pickle.loads(pickle.dumps(tv))
    M, off = tv.transform(X)
    M2, off2 = tv2.transform(X)
    assert (M != M2).nnz == 0 and np.array_equal(off, off2)
    np.testing.assert_array_equal(tv.templates_, tv2.templates_)
    assert tv.template_names_ == tv2.template_names_


def test_pickle_array_mode():
    tv = TokenVectorizer().fit([np.eye(3)])
    tv2 = pickle.loads(pickle.dumps(tv))
    M, _ = tv2.transform([np.eye(3)])
    np.testing.assert_array_equal(M.toarray(), np.eye(3))


# ------------------------------------------------------------- real data
def _conll_sentences(path, limit):
    from structlearn.datasets import read_conll_columns

    return read_conll_columns(path)[:limit]


def _crfpp_chunking_features(sent):
    # the benchmarks' CRF++ chunking template (benchmarks/_common.py; its
    # thread limits in os.environ are not kept in this process)
    import sys
    from unittest import mock

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    with mock.patch.dict(os.environ):
        from _common import chunking_features

    return chunking_features(sent)


@pytest.mark.skipif(not CONLL.is_file(), reason="CoNLL-2000 data not present")
def test_conll2000_subset():
    X = [_crfpp_chunking_features(s) for s in _conll_sentences(CONLL, limit=1000)]
    n_tok = sum(map(len, X))
    tv = TokenVectorizer()
    M, off = tv.fit_transform(X)
    assert M.shape[0] == n_tok == off[-1] and M.nnz == 19 * n_tok
    assert len(tv.template_names_) == 19
    _check_templates(tv, M.shape[1])
    th = TokenVectorizer(n_features=4096)
    H, off_h = th.fit_transform(X)
    assert H.shape[1] <= 4096 and np.array_equal(off, off_h)
    # hashing only merges columns within a template: per-template row sums agree
    for g in range(19):
        a = np.asarray(M[:, tv.templates_ == g].sum(axis=1)).ravel()
        b = np.asarray(H[:, th.templates_ == g].sum(axis=1)).ravel()
        np.testing.assert_array_equal(a, b)


def test_batched_name_hashing_equals_scikit_learn_per_name():
    # the Numba hash of the joined names against the per-name hash it replaced
    from sklearn.utils import murmurhash3_32

    from structlearn.feature_extraction._dicts import _NUM, _hash_names, _name
    rng = np.random.default_rng(0)
    alphabet = list("abcXYZ=|_0 ") + ["é", "中", "\U0001F600"]
    for ascii_only in (True, False):
        chars = alphabet[:11] if ascii_only else alphabet
        inners = ["".join(rng.choice(chars, size=rng.integers(0, 9))) for _ in range(300)]
        for mixed in (False, True):
            keys = list(inners)
            if mixed:   # numeric features and expanded values among the strings
                keys[::7] = [_NUM] * len(keys[::7])
                keys[3::11] = [("[x]=a",)] * len(keys[3::11])
            for k in ("w[0]", "pré"):
                got = _hash_names(k, keys, 17, 1009)
                ref = [17 + murmurhash3_32(_name(k, s), positive=True) % 1009 for s in keys]
                np.testing.assert_array_equal(got, ref)


def test_hashing_takes_strings_with_lone_surrogates():
    """A str no codec encodes (a lone surrogate, e.g. from
    ``errors='surrogateescape'``) is hashed from its code units instead of
    failing; every other name hashes as scikit-learn's murmurhash3_32 does,
    in fit and in transform."""
    from sklearn.utils import murmurhash3_32

    X = [[{"w": "a\ud800b", "n": 1.0}, {"w": "caf\u00e9"}, {"k\udfff": "x", "k": "y"}]]
    tv = TokenVectorizer(n_features=2 ** 20)
    M, _ = tv.fit_transform(X)
    T, _ = tv.transform(X)
    assert (M != T).nnz == 0 and M.sum() == 5
    assert set(tv.template_names_) == {"w", "n", "k\udfff", "k"}
    # columns: template offset + the hash of the name's bytes (surrogates as code units)
    names = {"w": ["w=a\ud800b", "w=caf\u00e9"], "n": ["n"], "k\udfff": ["k\udfff=x"],
             "k": ["k=y"]}
    offsets = np.concatenate([[0], np.cumsum(tv.hash_moduli_)])
    for g, tmpl in enumerate(tv.template_names_):
        want = sorted(offsets[g] + murmurhash3_32(n.encode("utf-8", "surrogatepass"),
                                                  positive=True) % tv.hash_moduli_[g]
                      for n in names[tmpl])
        got = sorted(tv.hash_buckets_[tv.templates_ == g].tolist())
        assert got == sorted(set(want)), tmpl
