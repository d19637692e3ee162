"""Tests for structlearn.datasets.

Tests marked ``shared`` need the reference copy of the benchmark data in
``<repo>/../shared/data`` (override with the environment variable
``STRUCTLEARN_BENCH_DATA``, as for the benchmarks) and are skipped when it is
absent; everything
else (bundled loaders, readers on synthetic files, the download path with a
``file://`` URL or a fake ``urlopen``) runs offline on a fresh clone.
"""

import copy
import gzip
import hashlib
import io
import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.utils import Bunch

import structlearn.datasets as ds
from structlearn.datasets import (
    ChecksumError,
    ConlluSentence,
    fetch_chu_ghahramani,
    fetch_conll2000,
    fetch_conll2002,
    fetch_label_ranking,
    fetch_mulan,
    fetch_ud_treebank,
    get_data_home,
    list_chu_ghahramani_datasets,
    list_label_ranking_datasets,
    list_mulan_datasets,
    load_ewt,
    load_ewt_constructions,
    load_ewt_pos,
    load_label_ranking,
    load_wine_quality,
    pos_token_features,
    read_arff_multilabel,
    read_chu_ghahramani,
    read_conll2002,
    read_conll_columns,
    conllu_targets,
    read_conllu,
    read_label_ranking_csv,
    read_wine_quality,
    with_predictions,
    write_conllu,
)
from structlearn.datasets import _base, _ewt, _fetchers
from structlearn.datasets._checksums import CHECKSUMS

SHARED = Path(
    os.environ.get("STRUCTLEARN_BENCH_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "data"
)
shared = [
    pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} not available"),
    pytest.mark.slow,
]


def needs_shared(func):
    for mark in shared:
        func = mark(func)
    return func


def assert_rank_rows_are_permutations(Y):
    k = Y.shape[1]
    assert np.array_equal(np.sort(Y, axis=1), np.tile(np.arange(1, k + 1), (len(Y), 1)))


def bundled_bytes(name):
    with gzip.open(_base.DATA_DIR / name, "rb") as fh:
        return fh.read()


@pytest.fixture(autouse=True)
def _isolated_data_home(tmp_path, monkeypatch):
    """Never touch ~/structlearn_data; never hit the network by accident."""
    monkeypatch.setenv("STRUCTLEARN_DATA", str(tmp_path / "default_home"))

    def no_network(url, *args, **kwargs):
        raise AssertionError(f"unexpected network access: {url}")

    monkeypatch.setattr(_base, "urlopen", no_network)


# ---------------------------------------------------------------------------
# bundled data (no ../shared needed)
# ---------------------------------------------------------------------------
def test_bundled_files_are_inside_the_package():
    for name in ["winequality-red.csv.gz", "winequality-white.csv.gz",
                 "label_ranking_iris.csv.gz", "label_ranking_wine.csv.gz",
                 "label_ranking_stock.csv.gz", "ewt_constructions_train.tsv.gz",
                 "ewt_constructions_test.tsv.gz", "README.md"]:
        path = _base.bundled_path(name)
        assert path.parent == Path(ds.__file__).resolve().parent / "data"
        assert path.stat().st_size < 100_000


def test_load_wine_quality_red():
    X, y = load_wine_quality()
    assert X.shape == (1599, 11) and X.dtype == np.float64
    assert y.shape == (1599,) and y.dtype == np.int64
    np.testing.assert_allclose(X[0], [7.4, 0.7, 0, 1.9, 0.076, 11, 34, 0.9978, 3.51, 0.56, 9.4])
    assert y[0] == 5
    values, counts = np.unique(y, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist())) == {
        3: 10, 4: 53, 5: 681, 6: 638, 7: 199, 8: 18}


def test_load_wine_quality_white_and_bunch():
    b = load_wine_quality("white", return_X_y=False)
    assert isinstance(b, Bunch)
    assert b.data.shape == (4898, 11) and b.target.shape == (4898,)
    assert b.feature_names[0] == "fixed acidity" and b.feature_names[-1] == "alcohol"
    assert len(b.feature_names) == 11
    values, counts = np.unique(b.target, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist())) == {
        3: 20, 4: 163, 5: 1457, 6: 2198, 7: 880, 8: 175, 9: 5}
    assert "Cortez" in b.DESCR
    with pytest.raises(ValueError, match="color"):
        load_wine_quality("rose")


@pytest.mark.parametrize("name, shape_X, n_labels, n_distinct",
                         [("iris", (150, 4), 3, 5), ("wine", (178, 13), 3, 5),
                          ("stock", (950, 5), 5, 51)])
def test_load_label_ranking(name, shape_X, n_labels, n_distinct):
    X, Y = load_label_ranking(name)
    assert X.shape == shape_X and X.dtype == np.float64
    assert Y.shape == (shape_X[0], n_labels) and Y.dtype == np.int64
    assert_rank_rows_are_permutations(Y)
    assert len({tuple(r) for r in Y}) == n_distinct


def test_load_label_ranking_known_values():
    X, Y = load_label_ranking("iris")
    np.testing.assert_array_equal(X[0], [-0.55556, 0.25, -0.86441, -0.91667])
    np.testing.assert_array_equal(Y[0], [1, 2, 3])
    b = load_label_ranking("wine", return_X_y=False)
    assert b.target_names == ["L1", "L2", "L3"] and "Cheng" in b.DESCR
    with pytest.raises(ValueError, match="fetch_label_ranking"):
        load_label_ranking("fried")


def test_bundled_label_ranking_files_are_the_original_bytes():
    for name in ("iris", "wine", "stock"):
        data = bundled_bytes(f"label_ranking_{name}.csv.gz")
        assert hashlib.sha256(data).hexdigest() == CHECKSUMS["label_ranking"][f"{name}.csv"]


def test_load_ewt_constructions():
    texts, Y, names = load_ewt_constructions()
    assert names == ["passive", "relative_clause", "clausal_complement",
                     "coordination", "compound", "negation",
                     "numeric_modifier", "possessive"]
    assert len(texts) == 1500 and all(isinstance(t, str) for t in texts)
    assert Y.shape == (1500, 8) and Y.dtype == np.int64
    assert set(np.unique(Y).tolist()) == {0, 1}
    assert texts[0].startswith("Al-Zaman : American forces killed Shaikh Abdullah")
    # "... announced that they had busted up 3 terrorist cells ...": ccomp, nummod
    assert texts[2].startswith("DPA: Iraqi authorities announced that")
    np.testing.assert_array_equal(Y[2], [0, 0, 1, 0, 0, 0, 1, 0])
    # "Two of them were being run by 2 officials ...": passive, nummod
    np.testing.assert_array_equal(Y[3], [1, 0, 0, 0, 0, 0, 1, 0])
    freq = Y.mean(axis=0)
    assert np.all(freq > 0.05) and np.all(freq < 0.6)
    np.testing.assert_allclose(
        freq, [0.185, 0.2, 0.385, 0.472, 0.47, 0.151, 0.126, 0.301], atol=5e-4)
    texts_te, Y_te, names_te = load_ewt_constructions("test")
    assert len(texts_te) == 500 and Y_te.shape == (500, 8) and names_te == names
    assert min(len(t.split()) for t in texts + texts_te) >= 2  # >= 4 UD words
    with pytest.raises(ValueError, match="subset"):
        load_ewt_constructions("dev")


def test_ewt_construction_rules():
    # (form, lemma, upos, deprel)
    words = [("It", "it", "PRON", "nsubj:pass"), ("was", "be", "AUX", "aux:pass"),
             ("not", "not", "PART", "advmod"), ("sold", "sell", "VERB", "root"),
             ("to", "to", "ADP", "case"), ("my", "my", "PRON", "nmod:poss"),
             ("two", "two", "NUM", "nummod"), ("friends", "friend", "NOUN", "obl")]
    labels = dict(zip(_ewt.LABEL_NAMES, _ewt.construction_labels(words)))
    assert labels == {"passive": 1, "relative_clause": 0, "clausal_complement": 0,
                      "coordination": 0, "compound": 0, "negation": 1,
                      "numeric_modifier": 1, "possessive": 1}
    # "not" as something other than advmod, and compound:prt, do not count
    words = [("give", "give", "VERB", "root"), ("up", "up", "ADP", "compound:prt"),
             ("not", "not", "PART", "cc")]
    assert _ewt.construction_labels(words).sum() == 0


def test_ewt_pipeline_demo_runs():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.multioutput import MultiOutputClassifier
    from sklearn.pipeline import make_pipeline

    from structlearn.metrics import hamming_loss

    texts, Y, _ = load_ewt_constructions("train")
    texts_te, Y_te, _ = load_ewt_constructions("test")
    model = make_pipeline(
        TfidfVectorizer(), MultiOutputClassifier(LogisticRegression(max_iter=200)))
    model.fit(texts, Y)
    loss = hamming_loss(Y_te, model.predict(texts_te))
    assert loss < Y_te.mean()  # better than predicting "no construction"


def test_bundled_loaders_ignore_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("STRUCTLEARN_DATA", str(tmp_path / "does_not_exist"))
    assert load_label_ranking("iris")[0].shape == (150, 4)
    assert load_wine_quality()[0].shape == (1599, 11)
    assert not (tmp_path / "does_not_exist").exists()


# ---------------------------------------------------------------------------
# readers on synthetic files
# ---------------------------------------------------------------------------
def test_read_label_ranking_csv_validates_header(tmp_path):
    p = tmp_path / "lr.csv"
    p.write_text("2,2,3\n0.1,0.2,1,2,3\n0.3,0.4,3,1,2\n")
    X, Y = read_label_ranking_csv(p)
    np.testing.assert_array_equal(X, [[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_array_equal(Y, [[1, 2, 3], [3, 1, 2]])
    assert Y.dtype == np.int64

    gz = tmp_path / "lr.csv.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    np.testing.assert_array_equal(read_label_ranking_csv(str(gz))[1], Y)

    # blank lines are skipped; line numbers are the file's
    p.write_text("2,2,3\n\n0.1,0.2,1,2,3\n\n0.3,0.4,3,1,2\n\n")
    np.testing.assert_array_equal(read_label_ranking_csv(p)[1], Y)

    cases = {
        "3,2,3\n0.1,0.2,1,2,3\n0.3,0.4,3,1,2\n": "announces 3 samples but the file has 2",
        "2,1,3\n0.1,0.2,1,2,3\n0.3,0.4,3,1,2\n":
            r"lr.csv:2: 5 columns, but the header announces 1 features \+ 3 labels = 4",
        "2,2\n0.1,0.2,1,2,3\n": "line 1 must be",
        "1,2,3\n0.1,0.2,1,2,4\n": r"lr.csv:2: column 5 \(the rank of label 3\) is 4; "
                                   r"ranks are integers in 1..3",
        "2,2,3\n0.1,0.2,1,2,3\n\n0.3,0.4,3,1\n": r"lr.csv:4: 4 columns",
        "2,2,3\n0.1,0.2,1,2,3\n0.3,nan,3,1,2\n":
            r"lr.csv:3: column 2 \(feature 2\) is nan; values must be finite",
        "2,2,3\ninf,0.2,1,2,3\n0.3,0.1,3,1,2\n": r"lr.csv:2: column 1 \(feature 1\) is inf",
        "2,2,3\n0.1,0.2,1,2,3\n0.3,x,3,1,2\n": r"lr.csv:3: column 2 \(feature 2\) is not a "
                                             r"number: 'x'",
        "1,2,3\n0.1,0.2,1,2.5,3\n": r"lr.csv:2: column 4 \(the rank of label 2\) is 2.5",
        "": r"empty",
    }
    for text, match in cases.items():
        p.write_text(text)
        with pytest.raises(ValueError, match=match):
            read_label_ranking_csv(p)


ARFF = """% a comment
@relation 'toy data'
@attribute 'feat one' numeric
@attribute colour {red,green}
@attribute lab2 {0,1}
@attribute f3 REAL
@attribute lab1 {0,1}
@data
1.5,red,1,2,0
?,green,0,-1e-2,1
{0 3, 1 green, 4 1}
{}
"""
XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="lab1"></label>
<label name="lab2"></label>
</labels>"""


def test_read_arff_multilabel_dense_sparse_and_label_order(tmp_path):
    (tmp_path / "d.arff").write_text(ARFF)
    (tmp_path / "d.xml").write_text(XML)
    X, Y, fnames, lnames = read_arff_multilabel(tmp_path / "d.arff", tmp_path / "d.xml")
    assert fnames == ["feat one", "colour", "f3"]
    assert lnames == ["lab1", "lab2"]  # XML order, not ARFF order
    expected_X = np.array([[1.5, 0, 2], [np.nan, 1, -0.01], [3, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(X, expected_X)
    np.testing.assert_array_equal(Y, [[0, 1], [1, 0], [1, 0], [0, 0]])
    assert X.dtype == np.float64 and Y.dtype == np.int64


def test_read_arff_multilabel_errors(tmp_path):
    (tmp_path / "d.arff").write_text(ARFF)
    (tmp_path / "bad.xml").write_text(XML.replace("lab2", "nope"))
    with pytest.raises(ValueError, match="nope"):
        read_arff_multilabel(tmp_path / "d.arff", tmp_path / "bad.xml")
    (tmp_path / "d.xml").write_text(XML)
    (tmp_path / "short.arff").write_text(ARFF.replace("1.5,red,1,2,0", "1.5,red,1,2"))
    with pytest.raises(ValueError, match="4 values"):
        read_arff_multilabel(tmp_path / "short.arff", tmp_path / "d.xml")
    # every value error names its file line (the data start at line 9)
    for old, new, match in [
            ("1.5,red,1,2,0", "1.5,red,?,2,0", r"miss.arff:9: label 'lab2' has a missing"),
            ("?,green,0,-1e-2,1", "?,green,0,x,1", r"miss.arff:10: numeric attribute 'f3' "
                                                    r"has the value 'x', not a number"),
            ("?,green,0,-1e-2,1", "?,green,0,inf,1", r"miss.arff:10: .*'inf'; values must "
                                                      r"be finite"),
            ("?,green,0,-1e-2,1", "nan,green,0,1,1", r"miss.arff:10: .*'feat one'.*'nan'"),
            ("{0 3, 1 green, 4 1}", "{0 3, 1 blue, 4 1}", r"miss.arff:11: attribute 'colour' "
                                                          r"has value 'blue' outside"),
            ("{0 3, 1 green, 4 1}", "{0 3, 1 green, 0 2}", r"miss.arff:11: sparse index 0 "
                                                           r"appears twice.*'feat one'"),
            ("@attribute lab1 {0,1}", "@attribute lab1 numeric", r"miss.arff:9: label "
                                                                  r"'lab1' has the value '2'; labels are 0 or 1"),
    ]:
        text = ARFF.replace(old, new)
        if "numeric" in new:          # a numeric label must be 0/1
            text = text.replace("1.5,red,1,2,0", "1.5,red,1,2,2")
        (tmp_path / "miss.arff").write_text(text)
        with pytest.raises(ValueError, match=match):
            read_arff_multilabel(tmp_path / "miss.arff", tmp_path / "d.xml")


def test_read_chu_ghahramani_synthetic(tmp_path):
    bins = tmp_path / "toy" / "5bins"
    bins.mkdir(parents=True)
    (bins / "toy.data.ord_train_5.3").write_text("0.1 0.2 1\n0.3 0.4 5\n")
    (bins / "toy.data.ord_test_5.3").write_text("0.5 0.6 2\n")
    Xtr, ytr, Xte, yte = read_chu_ghahramani(tmp_path / "toy", 5, 3)
    np.testing.assert_array_equal(Xtr, [[0.1, 0.2], [0.3, 0.4]])
    np.testing.assert_array_equal(ytr, [1, 5])
    assert ytr.dtype == np.int64 and Xte.shape == (1, 2) and yte.tolist() == [2]
    with pytest.raises(FileNotFoundError, match="_train_5.4"):
        read_chu_ghahramani(tmp_path / "toy", 5, 4)
    (bins / "toy.data.ord_test_5.3").write_text("0.5 0.6 7\n")
    with pytest.raises(ValueError, match="1..5"):
        read_chu_ghahramani(tmp_path / "toy", 5, 3)
    with pytest.raises(ValueError, match="partition"):
        read_chu_ghahramani(tmp_path / "toy", 5, 0)


def test_read_wine_quality_from_bundled_copy(tmp_path):
    p = tmp_path / "winequality-red.csv"
    p.write_bytes(bundled_bytes("winequality-red.csv.gz"))
    X, y = read_wine_quality(p)
    assert X.shape == (1599, 11) and y.dtype == np.int64
    p.write_text('"a";"b"\n1;2\n')
    with pytest.raises(ValueError, match="quality"):
        read_wine_quality(p)


# ---------------------------------------------------------------------------
# fetchers: cache, checksum, download (no network)
# ---------------------------------------------------------------------------
def test_get_data_home(tmp_path, monkeypatch):
    assert get_data_home(tmp_path) == tmp_path.resolve()
    monkeypatch.setenv("STRUCTLEARN_DATA", str(tmp_path / "env"))
    assert get_data_home() == (tmp_path / "env").resolve()
    monkeypatch.delenv("STRUCTLEARN_DATA")
    assert get_data_home() == (Path.home() / "structlearn_data").resolve()


def test_lists():
    names = list_label_ranking_datasets()
    assert len(names) == 16 and "iris" in names and "fried" in names
    assert list_mulan_datasets() == ["emotions", "scene", "yeast"]
    assert list_chu_ghahramani_datasets() == [
        "diabetes", "pyrimidines", "triazines", "wisconsin", "machinecpu",
        "autompg", "bostonhousing", "stocksdomain", "abalone"]
    assert len(CHECKSUMS["ordinal_chu_ghahramani"]) == 9 * 2 * 2 * 20


def test_missing_file_without_download_raises(tmp_path):
    with pytest.raises(OSError, match=r"label_ranking/iris\.csv.*data_home=.*empty"):
        fetch_label_ranking("iris", data_home=tmp_path / "empty", download_if_missing=False)
    with pytest.raises(FileNotFoundError, match="emotions.xml"):
        fetch_mulan("emotions", data_home=tmp_path, download_if_missing=False)
    with pytest.raises(FileNotFoundError, match="diabetes.data.ord_train_10.2"):
        fetch_chu_ghahramani("Diabetes", 10, 2, data_home=tmp_path, download_if_missing=False)


def test_bad_fetch_arguments(tmp_path):
    with pytest.raises(ValueError, match="Unknown"):
        fetch_label_ranking("nope", data_home=tmp_path)
    with pytest.raises(ValueError, match="subset"):
        fetch_mulan("scene", subset="dev", data_home=tmp_path)
    with pytest.raises(ValueError, match="n_bins"):
        fetch_chu_ghahramani("abalone", n_bins=7, data_home=tmp_path)
    with pytest.raises(ValueError, match="partition"):
        fetch_chu_ghahramani("abalone", partition=21, data_home=tmp_path)
    with pytest.raises(ValueError, match="Unknown"):
        fetch_chu_ghahramani("census", data_home=tmp_path)


def test_corrupted_cache_file_is_detected(tmp_path):
    cached = tmp_path / "label_ranking" / "iris.csv"
    cached.parent.mkdir()
    good = bundled_bytes("label_ranking_iris.csv.gz")
    cached.write_bytes(good[:-10])  # truncated
    with pytest.raises(ChecksumError, match="SHA-256 mismatch.*iris.csv"):
        fetch_label_ranking("iris", data_home=tmp_path, download_if_missing=False)
    with pytest.raises(OSError):  # ChecksumError is an OSError
        fetch_label_ranking("iris", data_home=tmp_path)
    cached.write_bytes(good)
    X, Y = fetch_label_ranking("iris", data_home=tmp_path, download_if_missing=False)
    assert X.shape == (150, 4)


def test_download_from_file_url(tmp_path, monkeypatch):
    from urllib.request import urlopen

    monkeypatch.setattr(_base, "urlopen", urlopen)  # undo the no-network guard
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "iris.csv").write_bytes(bundled_bytes("label_ranking_iris.csv.gz"))
    monkeypatch.setitem(_fetchers.BASE_URLS, "label_ranking", remote.as_uri() + "/")
    home = tmp_path / "cache"
    X, Y = fetch_label_ranking("iris", data_home=home)
    assert (home / "label_ranking" / "iris.csv").is_file()
    assert sorted(p.name for p in (home / "label_ranking").iterdir()) == ["iris.csv"]
    assert X.shape == (150, 4) and Y.shape == (150, 3)
    # now cached: works without downloading
    (remote / "iris.csv").unlink()
    X2, _ = fetch_label_ranking("iris", data_home=home, download_if_missing=False)
    np.testing.assert_array_equal(X, X2)


def test_corrupted_download_is_rejected_atomically(tmp_path, monkeypatch):
    from urllib.request import urlopen

    monkeypatch.setattr(_base, "urlopen", urlopen)
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "wine.csv").write_bytes(b"3,1,2\n1,1,2\n")
    monkeypatch.setitem(_fetchers.BASE_URLS, "label_ranking", remote.as_uri() + "/")
    home = tmp_path / "cache"
    with pytest.raises(ChecksumError, match="downloaded"):
        fetch_label_ranking("wine", data_home=home)
    assert list((home / "label_ranking").iterdir()) == []  # no partial file


def test_download_uses_pinned_raw_url(tmp_path, monkeypatch):
    requested = []
    payload = bundled_bytes("label_ranking_stock.csv.gz")

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return io.BytesIO(payload)

    monkeypatch.setattr(_base, "urlopen", fake_urlopen)
    X, Y = fetch_label_ranking("stock", data_home=tmp_path)
    assert requested == [
        "https://raw.githubusercontent.com/alfaro96/scikit-lr/"
        "1525ae99c97db9f62928143e1cd973fe74ee85a2/sklr/datasets/data/"
        "label_ranking/stock.csv"]
    assert X.shape == (950, 5)
    assert_rank_rows_are_permutations(Y)


def test_download_interrupted_leaves_no_file(tmp_path, monkeypatch):
    class Broken(io.BytesIO):
        def read(self, *args):
            raise ConnectionResetError("connection lost")

    monkeypatch.setattr(_base, "urlopen", lambda url, timeout=None: Broken())
    with pytest.raises(ConnectionResetError):
        fetch_label_ranking("glass", data_home=tmp_path)
    assert list((tmp_path / "label_ranking").iterdir()) == []


# ---------------------------------------------------------------------------
# against the reference copy in ../shared/data (skipped when absent)
# ---------------------------------------------------------------------------
LABEL_RANKING_SHAPES = {
    "authorship": (841, 70, 4, 17), "bodyfat": (252, 7, 7, 236),
    "calhousing": (20640, 4, 4, 24), "cpu": (8192, 6, 5, 119),
    "elevators": (16599, 9, 9, 131), "fried": (40768, 9, 5, 120),
    "glass": (214, 9, 6, 30), "housing": (506, 6, 6, 112),
    "iris": (150, 4, 3, 5), "pendigits": (10992, 16, 10, 2081),
    "segment": (2310, 18, 7, 135), "stock": (950, 5, 5, 51),
    "vehicle": (846, 18, 4, 18), "vowel": (528, 10, 11, 294),
    "wine": (178, 13, 3, 5), "wisconsin": (194, 16, 16, 194),
}


@needs_shared
@pytest.mark.parametrize("name", sorted(LABEL_RANKING_SHAPES))
def test_fetch_label_ranking_offline(name):
    n, d, k, distinct = LABEL_RANKING_SHAPES[name]
    X, Y = fetch_label_ranking(name, data_home=SHARED, download_if_missing=False)
    assert X.shape == (n, d) and X.dtype == np.float64
    assert Y.shape == (n, k) and Y.dtype == np.int64
    assert_rank_rows_are_permutations(Y)
    assert len({tuple(r) for r in Y}) == distinct
    X2, Y2 = read_label_ranking_csv(SHARED / "label_ranking" / f"{name}.csv")
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Y, Y2)


@needs_shared
def test_bundled_label_ranking_equals_shared():
    for name in ("iris", "wine", "stock"):
        X, Y = load_label_ranking(name)
        X2, Y2 = read_label_ranking_csv(SHARED / "label_ranking" / f"{name}.csv")
        np.testing.assert_array_equal(X, X2)
        np.testing.assert_array_equal(Y, Y2)


MULAN = {  # name: (n_train, n_test, n_features, n_labels, card_train, card_test)
    "emotions": (391, 202, 72, 6, 1.813, 1.975),
    "scene": (1211, 1196, 294, 6, 1.062, 1.086),
    "yeast": (1500, 917, 103, 14, 4.228, 4.252),
}


@needs_shared
@pytest.mark.parametrize("name", sorted(MULAN))
def test_fetch_mulan_offline(name):
    n_tr, n_te, d, L, card_tr, card_te = MULAN[name]
    X, Y = fetch_mulan(name, "train", data_home=SHARED, download_if_missing=False)
    assert X.shape == (n_tr, d) and X.dtype == np.float64
    assert Y.shape == (n_tr, L) and Y.dtype == np.int64
    assert Y.sum(axis=1).mean() == pytest.approx(card_tr, abs=5e-4)
    b = fetch_mulan(name, "test", data_home=SHARED, download_if_missing=False,
                    return_X_y=False)
    assert b.data.shape == (n_te, d) and b.target.shape == (n_te, L)
    assert b.target.sum(axis=1).mean() == pytest.approx(card_te, abs=5e-4)
    assert len(b.feature_names) == d and len(b.target_names) == L
    Xa, Ya = fetch_mulan(name, "all", data_home=SHARED, download_if_missing=False)
    np.testing.assert_array_equal(Xa, np.vstack([X, b.data]))


@needs_shared
def test_read_arff_yeast_matches_labels_by_name():
    folder = SHARED / "multilabel_yeast"
    X, Y, fnames, lnames = read_arff_multilabel(folder / "yeast-train.arff", folder / "yeast.xml")
    assert lnames[:6] == ["Class1", "Class2", "Class3", "Class6", "Class4", "Class10"]
    assert fnames[0] == "Att1" and fnames[-1] == "Att103"
    # first training row's raw ARFF line: labels are the last 14 values in
    # ARFF order Class1..Class14
    with open(folder / "yeast-train.arff") as fh:
        for line in fh:
            if line.strip().lower() == "@data":
                break
        first = next(fh).strip().split(",")
    arff_labels = dict(zip([f"Class{i}" for i in range(1, 15)], map(int, first[-14:])))
    assert Y[0].tolist() == [arff_labels[n] for n in lnames]
    assert X[0, 0] == pytest.approx(float(first[0]))
    # scene's first row, emotions' label names
    X, Y, _, lnames = read_arff_multilabel(SHARED / "multilabel_emotions" / "emotions-test.arff",
                                           SHARED / "multilabel_emotions" / "emotions.xml")
    assert lnames[0] == "amazed-suprised" and lnames[-1] == "angry-aggresive"
    assert X[0, 0] == pytest.approx(0.036299)


CHU = {  # name: (n_train, n_test, n_features)
    "diabetes": (30, 13, 2), "pyrimidines": (50, 24, 27), "triazines": (100, 86, 60),
    "wisconsin": (130, 64, 32), "machinecpu": (150, 59, 6), "autompg": (200, 192, 7),
    "bostonhousing": (300, 206, 13), "stocksdomain": (600, 350, 9),
    "abalone": (1000, 3177, 10),
}


@needs_shared
@pytest.mark.parametrize("name", sorted(CHU))
@pytest.mark.parametrize("n_bins", [5, 10])
def test_fetch_chu_ghahramani_offline(name, n_bins):
    n_tr, n_te, d = CHU[name]
    for partition in (1, 20):
        Xtr, ytr, Xte, yte = fetch_chu_ghahramani(
            name, n_bins, partition, data_home=SHARED, download_if_missing=False)
        assert Xtr.shape == (n_tr, d) and Xte.shape == (n_te, d)
        assert Xtr.dtype == np.float64 and ytr.dtype == np.int64
        assert ytr.shape == (n_tr,) and yte.shape == (n_te,)
        assert ytr.min() >= 1 and max(ytr.max(), yte.max()) <= n_bins
        assert set(np.concatenate([ytr, yte]).tolist()) == set(range(1, n_bins + 1))


@needs_shared
def test_read_chu_ghahramani_every_folder_and_partition():
    root = SHARED / "ordinal_chu_ghahramani"
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    assert len(folders) == 9
    for folder in folders:
        for n_bins in (5, 10):
            sizes = {tuple(a.shape[0] for a in read_chu_ghahramani(folder, n_bins, i))
                     for i in range(1, 21)}
            assert len(sizes) == 1  # all 20 partitions have the same split sizes
    Xtr, ytr, _, _ = read_chu_ghahramani(root / "Diabetes", 10, 1)
    np.testing.assert_allclose(Xtr[0], [0.9, -11.6])
    assert ytr[0] == 1
    Xtr, ytr, _, _ = read_chu_ghahramani(root / "abalone", 5, 1)
    np.testing.assert_allclose(Xtr[0, :4], [0, 0, 1, 0.245])


@needs_shared
def test_read_wine_quality_shared_equals_bundled():
    for color in ("red", "white"):
        X, y = read_wine_quality(SHARED / "ordinal_wine_quality" / f"winequality-{color}.csv")
        X2, y2 = load_wine_quality(color)
        np.testing.assert_array_equal(X, X2)
        np.testing.assert_array_equal(y, y2)


@needs_shared
def test_chu_download_path_layout(tmp_path, monkeypatch):
    """Downloading from a file:// mirror of the source tree fills the cache."""
    from urllib.request import urlopen

    monkeypatch.setattr(_base, "urlopen", urlopen)
    monkeypatch.setitem(_fetchers.BASE_URLS, "ordinal_chu_ghahramani",
                        (SHARED / "ordinal_chu_ghahramani").as_uri() + "/")
    monkeypatch.setitem(_fetchers.BASE_URLS, "multilabel_emotions",
                        (SHARED / "multilabel_emotions").as_uri() + "/")
    for name in list_chu_ghahramani_datasets():
        got = fetch_chu_ghahramani(name, 10, 3, data_home=tmp_path)
        ref = fetch_chu_ghahramani(name, 10, 3, data_home=SHARED, download_if_missing=False)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
    assert (tmp_path / "ordinal_chu_ghahramani" / "Diabetes" / "10bins"
            / "diabetes.data.ord_train_10.3").is_file()
    X, Y = fetch_mulan("emotions", "test", data_home=tmp_path)
    assert sorted(p.name for p in (tmp_path / "multilabel_emotions").iterdir()) == [
        "emotions-test.arff", "emotions.xml"]


@needs_shared
def test_bundled_ewt_constructions_are_reproducible(tmp_path):
    for subset, n in _ewt._N_SENTENCES.items():
        conllu = SHARED / "ud_english_ewt" / f"en_ewt-ud-{subset}.conllu"
        ids, texts, Y = _ewt.build_ewt_constructions(conllu, n)
        ids_b, texts_b, Y_b, names = _ewt.read_constructions_tsv(
            _base.DATA_DIR / f"ewt_constructions_{subset}.tsv.gz")
        assert ids == ids_b and texts == texts_b and names == list(_ewt.LABEL_NAMES)
        np.testing.assert_array_equal(Y, Y_b)
        out = tmp_path / f"{subset}.tsv.gz"
        _ewt.write_constructions_tsv(out, ids, texts, Y)
        bundled = _base.DATA_DIR / f"ewt_constructions_{subset}.tsv.gz"
        assert out.read_bytes() == bundled.read_bytes()


# ---------------------------------------------------------------------------
# CoNLL column files and CoNLL-U (readers, writer)
# ---------------------------------------------------------------------------

CONLL_COLUMNS = """-DOCSTART- -X- O

Confidence NN B-NP
in IN B-PP
the DT B-NP

pound NN I-NP
is VBZ B-VP


-DOCSTART- -X- O
Last JJ B-NP
"""


def test_read_conll_columns_tuples_and_dicts(tmp_path):
    sents = read_conll_columns(io.StringIO(CONLL_COLUMNS))
    assert sents == [
        [("Confidence", "NN", "B-NP"), ("in", "IN", "B-PP"), ("the", "DT", "B-NP")],
        [("pound", "NN", "I-NP"), ("is", "VBZ", "B-VP")],
        [("Last", "JJ", "B-NP")],
    ]
    dicts = read_conll_columns(io.StringIO(CONLL_COLUMNS), columns=["word", "pos", "chunk"])
    assert dicts[1][1] == {"word": "is", "pos": "VBZ", "chunk": "B-VP"}
    # tabs / several spaces, CRLF line ends, no final blank line, .gz paths
    p = tmp_path / "x.txt.gz"
    with gzip.open(p, "wt", encoding="utf-8", newline="") as fh:
        fh.write("a\tDT  B-NP\r\nb NN I-NP\r\n\r\nc . O")
    assert read_conll_columns(p) == [[("a", "DT", "B-NP"), ("b", "NN", "I-NP")],
                                     [("c", ".", "O")]]
    assert read_conll_columns(io.StringIO("")) == []
    assert read_conll_columns(io.StringIO("\n\n-DOCSTART- O\n\n")) == []


def test_read_conll_columns_errors():
    with pytest.raises(ValueError, match=r":4: line has 2 columns, expected 3 \(as in line 3\)"):
        read_conll_columns(io.StringIO("-DOCSTART- -X- O\n\na b c\nd e\n"))
    with pytest.raises(ValueError, match=r":1: line has 3 columns, expected 2.*columns="):
        read_conll_columns(io.StringIO("a b c\n"), columns=["word", "tag"])
    with pytest.raises(ValueError, match="distinct"):
        read_conll_columns(io.StringIO("a b\n"), columns=["w", "w"])
    with pytest.raises(ValueError, match="not the string"):
        read_conll_columns(io.StringIO("a b\n"), columns="wt")


CONLLU = (
    "# newdoc id = d1\n"
    "# sent_id = s1\n"
    "# text = I can't go.\n"
    "1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing|Person=1|PronType=Prs\t4\tnsubj\t4:nsubj\t_\n"
    "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tca\tcan\tAUX\tMD\tVerbForm=Fin\t4\taux\t4:aux\t_\n"
    "3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_\n"
    "4\tgo\tgo\tVERB\tVB\tVerbForm=Inf\t0\troot\t0:root\tSpaceAfter=No\n"
    "4.1\tgo\tgo\tVERB\tVB\t_\t_\t_\t1:nsubj\tCopyOf=4\n"
    "5\t.\t.\tPUNCT\t.\t_\t4\tpunct\t4:punct\t_\n"
    "\n"
    "# sent_id = s2\n"
    "1\t_\t_\tPUNCT\tNFP\t_\t2\tpunct\t2:punct\t_\n"
    "2\tRice@ENRON\t_\tX\tGW\t_\t_\t_\t_\tFlag|Note=\n"
    "\n"
)


def test_read_conllu_structure():
    s1, s2 = read_conllu(io.StringIO(CONLLU))
    assert isinstance(s1, ConlluSentence) and len(s1) == 5
    assert s1.comments == ["# newdoc id = d1", "# sent_id = s1", "# text = I can't go."]
    assert s1.sent_id == "s1" and s1.text == "I can't go."
    assert s1.metadata == {"newdoc id": "d1", "sent_id": "s1", "text": "I can't go."}
    assert s1.forms == ["I", "ca", "n't", "go", "."]
    assert s1.heads == [4, 4, 4, 0, 4] and s1.upos[-1] == "PUNCT"
    assert s1.deprels[3] == "root"
    assert s1.tokens[0] == {
        "id": 1, "form": "I", "lemma": "I", "upos": "PRON", "xpos": "PRP",
        "feats": {"Case": "Nom", "Number": "Sing", "Person": "1", "PronType": "Prs"},
        "head": 4, "deprel": "nsubj", "deps": "4:nsubj", "misc": None}
    assert s1.tokens[3]["misc"] == {"SpaceAfter": "No"} and s1.tokens[4]["feats"] is None
    assert [t["id"] for t in s1.tokens] == [1, 2, 3, 4, 5]
    assert [m["id"] for m in s1.multiword_tokens] == ["2-3"]
    assert s1.multiword_tokens[0]["form"] == "can't"
    assert s1.multiword_tokens[0]["lemma"] is None and s1.multiword_tokens[0]["head"] is None
    assert [e["id"] for e in s1.empty_nodes] == ["4.1"]
    assert s1.empty_nodes[0]["deps"] == "1:nsubj"
    # '_' is missing, except the underscore word itself
    assert s2.tokens[0]["form"] == "_" and s2.tokens[0]["lemma"] == "_"
    assert s2.tokens[1]["lemma"] is None and s2.tokens[1]["head"] is None
    assert s2.tokens[1]["deprel"] is None and s2.tokens[1]["deps"] is None
    assert s2.tokens[1]["misc"] == {"Flag": None, "Note": ""}
    assert s2.text is None and "s2" in repr(s2)


def test_conllu_round_trip_inline(tmp_path):
    sents = read_conllu(io.StringIO(CONLLU))
    out = io.StringIO()
    write_conllu(sents, out)
    assert out.getvalue() == CONLLU
    # paths, .gz (reproducible bytes), and reading them back
    write_conllu(sents, tmp_path / "a.conllu")
    assert (tmp_path / "a.conllu").read_bytes() == CONLLU.encode()
    write_conllu(sents, tmp_path / "a.conllu.gz")
    first = (tmp_path / "a.conllu.gz").read_bytes()
    write_conllu(read_conllu(tmp_path / "a.conllu.gz"), tmp_path / "a.conllu.gz")
    assert (tmp_path / "a.conllu.gz").read_bytes() == first
    assert read_conllu(tmp_path / "a.conllu.gz") == sents
    # a file without the final blank line is read the same
    assert read_conllu(io.StringIO(CONLLU.rstrip("\n"))) == sents


def test_write_conllu_from_dicts_and_errors():
    sent = {"tokens": [{"id": 1, "form": "Hi", "upos": "INTJ", "head": 0,
                        "deprel": "root"},
                       {"id": 2, "form": "!", "upos": "PUNCT", "head": np.int64(1),
                        "deprel": "punct", "misc": {}}],
            "comments": ["# text = Hi!"]}
    out = io.StringIO()
    write_conllu([sent], out)
    assert out.getvalue() == ("# text = Hi!\n1\tHi\t_\tINTJ\t_\t_\t0\troot\t_\t_\n"
                              "2\t!\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n")
    bad_id = {"tokens": [{"id": 2, "form": "x"}]}
    with pytest.raises(ValueError, match=r"sentences\[0\]: token 0 has id 2"):
        write_conllu([bad_id], io.StringIO())
    with pytest.raises(ValueError, match=r"sentences\[1\] token 1: form 'a\\tb'"):
        write_conllu([sent, {"tokens": [{"id": 1, "form": "a\tb"}]}], io.StringIO())
    with pytest.raises(ValueError, match="head must be a non-negative integer"):
        write_conllu([{"tokens": [{"id": 1, "form": "a", "head": -1}]}], io.StringIO())
    with pytest.raises(ValueError, match="starting with '#'"):
        write_conllu([{"tokens": [{"id": 1, "form": "a"}], "comments": ["x"]}],
                     io.StringIO())
    with pytest.raises(ValueError, match="ConlluSentence or a dict"):
        write_conllu([["a"]], io.StringIO())
    with pytest.raises(ValueError, match="no tokens"):
        write_conllu([{"tokens": []}], io.StringIO())


TOK = "\tw\tw\tX\tX\t_\t{head}\tdep\t_\t_\n"


@pytest.mark.parametrize("text, match", [
    ("1\tw\tw\tX\n", r":1: expected 10 tab-separated fields, got 4"),
    ("# c\n1" + TOK.format(head=0) + "2  w w X X _ 1 dep _ _\n",
     r":3: expected 10 tab-separated fields, got 1"),
    ("1" + TOK.format(head=0) + "x" + TOK.format(head=1),
     r":2: ID must be an integer.*'x'"),
    ("1" + TOK.format(head=0) + "3" + TOK.format(head=1),
     r":2: word ID 3 out of order; expected 2"),
    ("1" + TOK.format(head=0) + "\n2" + TOK.format(head=0),
     r":3: word ID 2 out of order; expected 1"),
    ("1" + TOK.format(head="a"), r":1: HEAD must be a non-negative integer.*'a'"),
    ("1" + TOK.format(head=0) + "2" + TOK.format(head=3),
     r":2: HEAD 3 is outside 0..2"),
    ("1" + TOK.format(head=0) + "# late\n", r":2: comment line after the word lines"),
    ("1\tw\tw\tX\tX\tCase\t0\troot\t_\t_\n", r":1: malformed FEATS item 'Case'"),
    ("1\tw\tw\tX\tX\tA=1|A=2\t0\troot\t_\t_\n", r":1: FEATS repeats the attribute 'A'"),
    ("1-3" + TOK.format(head="_") + "1" + TOK.format(head=0) + "2" + TOK.format(head=1),
     r":1: multiword token 1-3 extends past the last word 2"),
    ("2-3" + TOK.format(head="_"), r":1: multiword token range 2-3 must start"),
    ("1" + TOK.format(head=0) + "1.2" + TOK.format(head="_"),
     r":2: empty node 1.2 out of order; expected 1.1"),
    ("# only a comment\n\n", r":1: sentence without any word line"),
    # the basic tree: one root, no self-loop, no cycle (when every head is given)
    ("1" + TOK.format(head=0) + "2" + TOK.format(head=0),
     r":2: the sentence has 2 words with HEAD 0 \(words 1, 2\)"),
    ("1" + TOK.format(head=0) + "2" + TOK.format(head=2), r":2: word 2 is its own head"),
    ("1" + TOK.format(head=0) + "2" + TOK.format(head=3) + "3" + TOK.format(head=2),
     r":2: the heads of words 2 -> 3 -> 2 form a cycle"),
    ("1" + TOK.format(head=2) + "2" + TOK.format(head=1),
     r":1: the sentence has 0 words with HEAD 0"),
    # empty fields, NUL bytes
    ("1\t\tw\tX\tX\t_\t0\troot\t_\t_\n", r":1: FORM is empty"),
    ("1\tw\tw\tX\t\t_\t0\troot\t_\t_\n", r":1: XPOS is empty"),
    ("1\tw \tw\tX\tX\t_\t0\troot\t_\t_\n", r":1: FORM .*trailing spaces"),
    ("1\tw\x00x\tw\tX\tX\t_\t0\troot\t_\t_\n", r":1: NUL byte in FORM"),
])
def test_read_conllu_malformed(text, match):
    with pytest.raises(ValueError, match=match):
        read_conllu(io.StringIO(text))


def test_read_conllu_accepts_missing_heads_and_a_byte_order_mark(tmp_path):
    """Heads given as '_' are not checked as a tree; a UTF-8 byte-order mark
    (in a file or a text stream) is not part of the first line."""
    text = "# text = a b\n1" + TOK.format(head="_") + "2" + TOK.format(head="_") + "\n"
    assert read_conllu(io.StringIO(text))[0].heads == [None, None]
    good = "# text = a\n1" + TOK.format(head=0) + "\n"
    path = tmp_path / "bom.conllu"
    path.write_bytes(b"\xef\xbb\xbf" + good.encode())
    for src in (path, io.StringIO("\ufeff" + good)):
        (s,) = read_conllu(src)
        assert s.comments == ["# text = a"] and s.forms == ["w"]
    gz = tmp_path / "bom.conllu.gz"
    gz.write_bytes(gzip.compress(b"\xef\xbb\xbf" + good.encode()))
    assert read_conllu(gz)[0].comments == ["# text = a"]


def test_read_conllu_names_the_line_of_a_non_utf8_byte(tmp_path):
    path = tmp_path / "latin1.conllu"
    text = "1" + TOK.format(head=0) + "\n# text = caf\u00e9\n1" + TOK.format(head=0)
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.conllu:3: not valid UTF-8 \(byte 0xe9"):
        read_conllu(path)


@needs_shared
@pytest.mark.parametrize("subset", ["dev", "test"])
def test_conllu_round_trip_ewt_byte_for_byte(subset, tmp_path):
    src = SHARED / "ud_english_ewt" / f"en_ewt-ud-{subset}.conllu"
    sents = read_conllu(src)
    n_words = {"dev": 25147, "test": 25094}[subset]
    assert len(sents) == {"dev": 2001, "test": 2077}[subset]
    assert sum(len(s) for s in sents) == n_words
    assert sum(len(s.multiword_tokens) for s in sents) == {"dev": 359, "test": 354}[subset]
    assert sum(len(s.empty_nodes) for s in sents) == {"dev": 4, "test": 2}[subset]
    assert all(s.sent_id and s.text for s in sents)
    assert all(sorted(s.heads).count(0) >= 1 for s in sents)
    out = tmp_path / "copy.conllu"
    write_conllu(sents, out)
    assert out.read_bytes() == src.read_bytes()


# ---------------------------------------------------------------------------
# CoNLL-2000 and UD fetchers
# ---------------------------------------------------------------------------
def test_sequence_fetchers_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="subset"):
        fetch_conll2000("dev", data_home=tmp_path)
    with pytest.raises(ValueError, match="subset"):
        fetch_ud_treebank("en_ewt", "validation", data_home=tmp_path)
    with pytest.raises(ValueError, match="Unknown UD treebank 'fr_gsd'"):
        fetch_ud_treebank("fr_gsd", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"conll2000_chunking/train\.txt"):
        fetch_conll2000(data_home=tmp_path, download_if_missing=False)
    with pytest.raises(FileNotFoundError, match=r"ud_english_ewt/en_ewt-ud-dev\.conllu"):
        fetch_ud_treebank(subset="dev", data_home=tmp_path, download_if_missing=False)
    assert not (tmp_path / "conll2000_chunking").exists()


def test_ud_corrupted_cache_and_pinned_url(tmp_path, monkeypatch):
    cached = tmp_path / "ud_english_ewt" / "en_ewt-ud-test.conllu"
    cached.parent.mkdir()
    cached.write_bytes(bundled_bytes("ud_en_ewt_test.conllu.gz"))  # only a prefix
    with pytest.raises(ChecksumError, match="SHA-256 mismatch.*en_ewt-ud-test.conllu"):
        fetch_ud_treebank(subset="test", data_home=tmp_path, download_if_missing=False)
    requested = []

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return io.BytesIO(b"1\tx\tx\tX\tX\t_\t0\troot\t_\t_\n\n")

    monkeypatch.setattr(_base, "urlopen", fake_urlopen)
    with pytest.raises(ChecksumError, match="downloaded"):
        fetch_ud_treebank(subset="dev", data_home=tmp_path)
    assert requested == [
        "https://raw.githubusercontent.com/UniversalDependencies/UD_English-EWT/"
        "15d613d8447b3478787d4c278730a1e48a945efb/en_ewt-ud-dev.conllu"]
    assert sorted(p.name for p in (tmp_path / "ud_english_ewt").iterdir()) == [
        "en_ewt-ud-test.conllu"]  # no partial dev file


def _zip_bytes(members):
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_conll2000_archive_checksum_failure(tmp_path, monkeypatch):
    requested = []
    payload = {"data": _zip_bytes({"conll2000/train.txt": b"a DT B-NP\n\n",
                                   "conll2000/test.txt": b"b NN B-NP\n\n"})}

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return io.BytesIO(payload["data"])

    monkeypatch.setattr(_base, "urlopen", fake_urlopen)
    with pytest.raises(ChecksumError, match=r"SHA-256 mismatch for conll2000/\w+\.txt extracted"):
        fetch_conll2000("test", data_home=tmp_path)
    assert requested == [
        "https://raw.githubusercontent.com/nltk/nltk_data/"
        "5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/conll2000.zip"]
    assert list((tmp_path / "conll2000_chunking").iterdir()) == []  # nothing written
    payload["data"] = _zip_bytes({"other/test.txt": b""})
    with pytest.raises(ChecksumError, match="no member 'conll2000/"):
        fetch_conll2000("test", data_home=tmp_path)
    payload["data"] = b"<html>not a zip</html>"
    with pytest.raises(ChecksumError, match="not a valid zip"):
        fetch_conll2000("test", data_home=tmp_path)
    assert list((tmp_path / "conll2000_chunking").iterdir()) == []
    # a corrupted cached file is detected too
    (tmp_path / "conll2000_chunking" / "test.txt").write_bytes(b"a DT B-NP\n")
    with pytest.raises(ChecksumError, match="SHA-256 mismatch.*test.txt"):
        fetch_conll2000("test", data_home=tmp_path, download_if_missing=False)


@needs_shared
def test_fetch_conll2000_offline():
    train = fetch_conll2000("train", data_home=SHARED, download_if_missing=False)
    test = fetch_conll2000("test", data_home=SHARED, download_if_missing=False)
    assert isinstance(train, Bunch) and "Tjong Kim Sang" in train.DESCR
    for b, n_sent, n_tok in ((train, 8936, 211727), (test, 2012, 47377)):
        assert len(b.words) == len(b.pos) == len(b.chunks) == n_sent
        assert [len(s) for s in b.words] == [len(s) for s in b.chunks]
        assert [len(s) for s in b.words] == [len(s) for s in b.pos]
        assert sum(len(s) for s in b.words) == n_tok
    assert train.words[0][:3] == ["Confidence", "in", "the"]
    assert train.pos[0][:3] == ["NN", "IN", "DT"]
    assert train.chunks[0][:5] == ["B-NP", "B-PP", "B-NP", "I-NP", "B-VP"]
    tags = {t for s in train.chunks for t in s}
    assert len(tags) == 22 and len({t for s in test.chunks for t in s}) == 19
    assert train.filename.endswith("train.txt")


@needs_shared
def test_fetch_ud_treebank_offline():
    dev = fetch_ud_treebank("en_ewt", "dev", data_home=SHARED, download_if_missing=False)
    assert len(dev) == 2001 and sum(len(s) for s in dev) == 25147
    test = fetch_ud_treebank("EN_EWT", "test", data_home=SHARED, download_if_missing=False)
    assert len(test) == 2077 and sum(len(s) for s in test) == 25094
    assert test[0].forms[:3] == ["What", "if", "Google"]
    assert all(len(s.heads) == len(s) and s.heads.count(0) == 1 for s in test)


@needs_shared
def test_sequence_fetchers_download_path_layout(tmp_path, monkeypatch):
    """Download from file:// mirrors of the sources (the nltk zip is rebuilt)."""
    from urllib.request import urlopen

    monkeypatch.setattr(_base, "urlopen", urlopen)
    src = SHARED / "conll2000_chunking"
    zpath = tmp_path / "remote" / "conll2000.zip"
    zpath.parent.mkdir()
    zpath.write_bytes(_zip_bytes({f"conll2000/{n}": (src / n).read_bytes()
                                  for n in ("README", "train.txt", "test.txt")}))
    monkeypatch.setitem(_fetchers.ARCHIVE_URLS, "conll2000_chunking",
                        (zpath.as_uri(), "conll2000/"))
    monkeypatch.setitem(_fetchers.BASE_URLS, "ud_english_ewt",
                        (SHARED / "ud_english_ewt").as_uri() + "/")
    home = tmp_path / "cache"
    got = fetch_conll2000("test", data_home=home)
    assert sorted(p.name for p in (home / "conll2000_chunking").iterdir()) == [
        "test.txt", "train.txt"]  # one download extracts both files
    for name in ("train.txt", "test.txt"):
        assert (home / "conll2000_chunking" / name).read_bytes() == (src / name).read_bytes()
    zpath.unlink()
    ref = fetch_conll2000("test", data_home=SHARED, download_if_missing=False)
    assert got.words == ref.words and got.chunks == ref.chunks
    assert len(fetch_conll2000("train", data_home=home, download_if_missing=False).words) == 8936
    dev = fetch_ud_treebank(subset="dev", data_home=home)
    assert (home / "ud_english_ewt" / "en_ewt-ud-dev.conllu").is_file()
    assert len(dev) == 2001


# ---------------------------------------------------------------------------
# bundled UD English EWT slices
# ---------------------------------------------------------------------------
def test_bundled_ewt_slices_are_inside_the_package():
    for name in ("ud_en_ewt_train.conllu.gz", "ud_en_ewt_test.conllu.gz"):
        path = _base.bundled_path(name)
        assert path.parent == Path(ds.__file__).resolve().parent / "data"
        assert path.stat().st_size < 400_000
    assert hashlib.sha256(bundled_bytes("ud_en_ewt_test.conllu.gz")).hexdigest() == (
        "43f4f95de89dd19b959960c8d8a65179fff68b1ab1d89e9925deb2426634accb")


def test_load_ewt():
    train, test = load_ewt("train"), load_ewt("test")
    assert len(train) == 1000 and sum(len(s) for s in train) == 21857
    assert len(test) == 300 and sum(len(s) for s in test) == 5224
    assert all(isinstance(s, ConlluSentence) for s in train)
    assert train[0].text.startswith("Al-Zaman : American forces killed")
    assert test[0].forms[:3] == ["What", "if", "Google"] and test[0].heads[:3] == [0, 4, 4]
    for s in train + test:
        assert s.heads.count(0) == 1 and all(0 <= h <= len(s) for h in s.heads)
        assert None not in s.upos
    with pytest.raises(ValueError, match="subset"):
        load_ewt("dev")
    # bundled text round-trips exactly
    out = io.StringIO()
    write_conllu(test, out)
    assert out.getvalue().encode() == bundled_bytes("ud_en_ewt_test.conllu.gz")


def test_load_ewt_pos_and_features():
    X, y = load_ewt_pos("test")
    assert len(X) == len(y) == 300
    assert [len(x) for x in X] == [len(t) for t in y]
    upos = {t for s in y for t in s}
    assert {"NOUN", "VERB", "PUNCT", "PROPN", "ADP"} <= upos and len(upos) <= 17
    keys = {"word", "suffix1", "suffix2", "suffix3", "prefix3", "is_capitalized",
            "is_digit", "has_hyphen", "prev_word", "next_word"}
    for sent in X:
        for f in sent:
            assert set(f) == keys
            assert all(isinstance(v, (str, bool)) for v in f.values())
    f = pos_token_features(["The", "well-known", "42"])
    assert f[0] == {"word": "the", "suffix1": "e", "suffix2": "he", "suffix3": "the",
                    "prefix3": "the", "is_capitalized": True, "is_digit": False,
                    "has_hyphen": False, "prev_word": "<s>", "next_word": "well-known"}
    assert f[1]["has_hyphen"] and f[2]["is_digit"] and f[2]["next_word"] == "</s>"
    assert f[1]["prev_word"] == "the" and f[1]["suffix3"] == "own"
    assert pos_token_features([]) == []
    with pytest.raises(ValueError, match="not a string"):
        pos_token_features("word")
    Xtr, ytr = load_ewt_pos()
    assert len(Xtr) == 1000 and sum(map(len, ytr)) == 21857


def test_ewt_pos_tagging_baseline():
    """A most-frequent-tag baseline on the features reaches the usual ~86%."""
    from collections import Counter, defaultdict

    from structlearn.metrics import token_accuracy

    X, y = load_ewt_pos("train")
    X_te, y_te = load_ewt_pos("test")
    by_word, by_suffix = defaultdict(Counter), defaultdict(Counter)
    for xs, ys in zip(X, y):
        for f, tag in zip(xs, ys):
            by_word[f["word"]][tag] += 1
            by_suffix[f["suffix3"]][tag] += 1

    def predict(f):
        counts = by_word.get(f["word"]) or by_suffix.get(f["suffix3"])
        if counts:
            return counts.most_common(1)[0][0]
        return "PROPN" if f["is_capitalized"] else "NOUN"

    y_pred = [[predict(f) for f in xs] for xs in X_te]
    assert 0.8 < token_accuracy(y_te, y_pred) < 0.95


@needs_shared
def test_bundled_ewt_slices_are_reproducible(tmp_path):
    for subset, n in (("train", 1000), ("test", 300)):
        src = SHARED / "ud_english_ewt" / f"en_ewt-ud-{subset}.conllu"
        raw = bundled_bytes(f"ud_en_ewt_{subset}.conllu.gz")
        assert src.read_bytes().startswith(raw)
        out = tmp_path / f"{subset}.conllu.gz"
        write_conllu(read_conllu(src)[:n], out)
        assert out.read_bytes() == (_base.DATA_DIR / f"ud_en_ewt_{subset}.conllu.gz").read_bytes()


@needs_shared
def test_conll2000_official_baseline_with_chunk_f1():
    """The CoNLL-2000 baseline (most frequent chunk tag of each POS tag) scores
    precision 72.58%, recall 82.14%, F1 77.07 with conlleval (Tjong Kim Sang &
    Buchholz, 2000, table 1)."""
    from collections import Counter, defaultdict

    from structlearn.metrics import chunk_f1, chunk_precision_recall_f1

    train = fetch_conll2000("train", data_home=SHARED, download_if_missing=False)
    test = fetch_conll2000("test", data_home=SHARED, download_if_missing=False)
    counts = defaultdict(Counter)
    for tags, chunks in zip(train.pos, train.chunks):
        for tag, chunk in zip(tags, chunks):
            counts[tag][chunk] += 1
    best = {tag: c.most_common(1)[0][0] for tag, c in counts.items()}
    pred = [[best.get(tag, "O") for tag in tags] for tags in test.pos]
    overall, per_type = chunk_precision_recall_f1(test.chunks, pred)
    assert overall["n_true"] == 23852  # chunks in the test set
    assert round(100 * overall["precision"], 2) == 72.58
    assert round(100 * overall["recall"], 2) == 82.14
    assert round(100 * overall["f1"], 2) == 77.07
    assert chunk_f1(test.chunks, pred) == overall["f1"]
    assert chunk_f1(test.chunks, test.chunks) == 1.0
    assert {"NP", "VP", "PP", "ADVP", "SBAR"} <= set(per_type)
    assert per_type["NP"]["f1"] > per_type["VP"]["f1"] > per_type["SBAR"]["f1"]


# ---------------------------------------------------------------------------
# CoNLL-2002 named entities (reader, fetcher)
# ---------------------------------------------------------------------------
CONLL2002_NED = """-DOCSTART- -DOCSTART- O
De Art O
Vlaamse Adj B-MISC
regering N O

Jan N B-PER
Peeters N I-PER
-DOCSTART- -DOCSTART- O
Antwerpen N B-LOC
zegt V O

"""


def test_read_conll2002_docstart_is_a_boundary():
    words, pos, tags = read_conll2002(io.StringIO(CONLL2002_NED))
    # -DOCSTART- is dropped and ends "Jan Peeters" although no blank line follows it
    assert words == [["De", "Vlaamse", "regering"], ["Jan", "Peeters"],
                     ["Antwerpen", "zegt"]]
    assert pos == [["Art", "Adj", "N"], ["N", "N"], ["N", "V"]]
    assert tags == [["O", "B-MISC", "O"], ["B-PER", "I-PER"], ["B-LOC", "O"]]
    assert read_conll2002(io.StringIO("")) == ([], [], [])
    assert read_conll2002(io.StringIO("\n-DOCSTART- -DOCSTART- O\n\n")) == ([], [], [])
    # no final blank line, tabs and CRLF
    assert read_conll2002(io.StringIO("a\tDA O\r\nb NC B-ORG")) == (
        [["a", "b"]], [["DA", "NC"]], [["O", "B-ORG"]])


@pytest.mark.parametrize("line, msg", [
    ("Jan B-PER", r"x\.txt:3: expected 3 columns .* got 2"),
    ("Jan N B-PER extra", r"x\.txt:3: expected 3 columns .* got 4"),
    ("Jan N PER", r"x\.txt:3: 'PER' is not an IOB2 tag"),
    ("Jan N S-PER", r"x\.txt:3: 'S-PER' is not an IOB2 tag"),
    ("Jan N B-", r"x\.txt:3: 'B-' is not an IOB2 tag"),
])
def test_read_conll2002_malformed_line(tmp_path, line, msg):
    path = tmp_path / "x.txt"
    path.write_text("De Art O\n\n" + line + "\nis V O\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=msg):
        read_conll2002(path)
    with pytest.raises(ValueError, match=r"<file>:3: "):
        read_conll2002(io.StringIO("De Art O\n\n" + line + "\n"))


def test_read_conll2002_encodings(tmp_path):
    latin = tmp_path / "esp.latin1"
    latin.write_bytes("La DA B-LOC\nCoruña NC I-LOC\n\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"esp\.latin1:2: cannot decode .*utf-8.*latin-1"):
        read_conll2002(latin)
    assert read_conll2002(latin, encoding="latin-1")[0] == [["La", "Coruña"]]
    gz = tmp_path / "esp.utf8.gz"
    with gzip.open(gz, "wb") as fh:
        fh.write("La DA B-LOC\nCoruña NC I-LOC\n".encode("utf-8"))
    assert read_conll2002(gz)[0] == [["La", "Coruña"]]


def test_fetch_conll2002_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="Unknown CoNLL-2002 language 'eng'"):
        fetch_conll2002("eng", data_home=tmp_path)
    with pytest.raises(ValueError, match="subset must be 'train', 'testa' or 'testb'"):
        fetch_conll2002("esp", "test", data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"conll2002_ner/ned\.testa"):
        fetch_conll2002("ned", "testa", data_home=tmp_path, download_if_missing=False)
    assert not (tmp_path / "conll2002_ner").exists()


def test_conll2002_is_not_shipped():
    names = [p.name.lower() for p in _base.DATA_DIR.rglob("*")]
    assert not [n for n in names if "conll2002" in n or n.startswith(("esp.", "ned."))]
    assert "research" in fetch_conll2002.__doc__.lower()


def test_conll2002_archive_download(tmp_path, monkeypatch):
    files = {f"{lang}.{s}": f"x{lang} N O\n\n".encode() for lang in ("esp", "ned")
             for s in ("train", "testa", "testb")}
    files["ned.testb"] = (CONLL2002_NED.replace("Peeters", "Peetërs")).encode("utf-8")
    files["README"] = b"research use only\n"
    requested = []
    payload = {"data": _zip_bytes({f"conll2002/{k}": v for k, v in files.items()})}

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return io.BytesIO(payload["data"])

    monkeypatch.setattr(_base, "urlopen", fake_urlopen)
    # the real digests: the fake archive is rejected and nothing is written
    with pytest.raises(ChecksumError, match=r"SHA-256 mismatch for conll2002/"):
        fetch_conll2002("ned", "testb", data_home=tmp_path)
    assert requested == [
        "https://raw.githubusercontent.com/nltk/nltk_data/"
        "5db857e6f7df11eabb5e5665836db9ec8df07e28/packages/corpora/conll2002.zip"]
    assert list((tmp_path / "conll2002_ner").iterdir()) == []
    # with digests matching the fake files, every member is extracted and read
    fake_sums = dict(CHECKSUMS)
    fake_sums["conll2002_ner"] = {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}
    monkeypatch.setattr(_fetchers, "CHECKSUMS", fake_sums)
    b = fetch_conll2002("NED", "testb", data_home=tmp_path)
    assert sorted(p.name for p in (tmp_path / "conll2002_ner").iterdir()) == sorted(files)
    assert b.words == [["De", "Vlaamse", "regering"], ["Jan", "Peetërs"],
                       ["Antwerpen", "zegt"]]
    assert b.tags[1] == ["B-PER", "I-PER"] and b.language == "ned" and b.subset == "testb"
    assert "research use only" in b.DESCR and "Dutch" in b.DESCR
    # offline from the cache, no second download
    fetch_conll2002("esp", "train", data_home=tmp_path, download_if_missing=False)
    assert len(requested) == 2


@needs_shared
def test_fetch_conll2002_offline():
    """Counts of SOURCE.md of the reference copy: sentences, tokens without
    the -DOCSTART- lines, and entities (B- tags)."""
    expected = {
        ("esp", "train"): (8323, 264715, 18797), ("esp", "testa"): (1915, 52923, 4351),
        ("esp", "testb"): (1517, 51533, 3558),
        ("ned", "train"): (15806, 202931 - 287, 13344),
        ("ned", "testa"): (2895, 37761 - 74, 2616),
        ("ned", "testb"): (5195, 68994 - 119, 3941),
    }
    for (lang, subset), (n_sent, n_tok, n_ent) in expected.items():
        b = fetch_conll2002(lang, subset, data_home=SHARED, download_if_missing=False)
        assert len(b.words) == len(b.pos) == len(b.tags) == n_sent
        assert [len(s) for s in b.words] == [len(s) for s in b.tags]
        assert [len(s) for s in b.words] == [len(s) for s in b.pos]
        assert sum(len(s) for s in b.words) == n_tok
        assert sum(t.startswith("B-") for s in b.tags for t in s) == n_ent
        assert not any("-DOCSTART-" in s for s in b.words)
        assert {t for s in b.tags for t in s} == {
            "O", *(f"{p}-{x}" for p in "BI" for x in ("PER", "LOC", "ORG", "MISC"))}
        assert b.filename.endswith(f"{lang}.{subset}")
    esp = fetch_conll2002("esp", "testb", data_home=SHARED, download_if_missing=False)
    assert esp.words[0][:2] == ["La", "Coruña"] and esp.tags[0][:2] == ["B-LOC", "I-LOC"]
    assert esp.pos[0][:2] == ["DA", "NC"]
    ned = fetch_conll2002("ned", "train", data_home=SHARED, download_if_missing=False)
    assert ned.words[0][:3] == ["De", "tekst", "van"]


def test_with_predictions_carries_the_predicted_tree_and_clears_deps(tmp_path):
    gold = read_conllu(io.StringIO(CONLLU))
    before = copy.deepcopy(gold)
    pred = [([2, 0, 2, 2, 2], ["nsubj:pass", "root", "aux", "punct", "dep"]),
            ([0, 1], ["root", "goeswith"])]
    out = with_predictions(gold, pred)
    assert gold == before                       # originals untouched
    for s, g, (h, d) in zip(out, gold, pred):
        assert s.heads == h and s.deprels == d
        assert all(t["deps"] is None for t in s.tokens)
        assert s.empty_nodes == []              # enhanced-graph nodes dropped
        assert s.comments == g.comments and s.multiword_tokens == g.multiword_tokens
        for t, u in zip(s.tokens, g.tokens):    # every other column copied
            assert {k: v for k, v in t.items() if k not in ("head", "deprel", "deps")} == \
                {k: v for k, v in u.items() if k not in ("head", "deprel", "deps")}
            assert t is not u and (t["feats"] is None or t["feats"] is not u["feats"])
    out[0].tokens[0]["feats"]["Case"] = "Acc"
    assert gold[0].tokens[0]["feats"]["Case"] == "Nom"
    # write, read back: equal; the file's HEAD/DEPREL/DEPS columns by hand
    path = tmp_path / "pred.conllu"
    write_conllu(out, path)
    assert read_conllu(path) == out
    words = [line.split("\t") for line in path.read_text().splitlines()
             if line and not line.startswith("#") and "-" not in line.split("\t")[0]]
    assert [(int(c[6]), c[7], c[8]) for c in words] == [
        (h, r, "_") for hs, rs in pred for h, r in zip(hs, rs)]
    # unlabelled predictions: DEPREL cleared (a gold relation never sits
    # beside a predicted head); numpy heads become ints
    out = with_predictions(gold, [np.array([4, 4, 4, 0, 4]), np.array([0, 1])])
    assert out[0].deprels == [None] * 5 and out[0].heads == [4, 4, 4, 0, 4]
    assert all(type(h) is int for h in out[0].heads)
    write_conllu(out, path)
    assert read_conllu(path) == out


@pytest.mark.parametrize("pred, match", [
    ([[0, 1, 1, 1, 1]], "1 predictions"),
    ([[0, 1, 1, 1], [0, 1]], r"predictions\[0\] has 4 heads but sentence 0 has 5"),
    ([[0, 1, 1, 1, 9], [0, 1]], r"predictions\[0\], word 5: head must be an integer in 0..5"),
    ([[0, 1, 1, 1, 1.0], [0, 1]], "word 5: head must be an integer"),
    ([([0, 1, 1, 1, 1], ["a"] * 4), [0, 1]], "4 deprels but sentence 0 has 5"),
    ([([0, 1, 1, 1, 1], ["a", "b", "c", "d e\t", "f"]), [0, 1]], "word 4: deprel"),
    ([([0, 1, 1, 1, 1], ["a", "b", "c", "d", None]), [0, 1]], "word 5: deprel"),
])
def test_with_predictions_errors(pred, match):
    gold = read_conllu(io.StringIO(CONLLU))
    with pytest.raises(ValueError, match=match):
        with_predictions(gold, pred)


def test_conllu_targets():
    gold = read_conllu(io.StringIO(CONLLU))
    assert conllu_targets(gold[:1]) == [([4, 4, 4, 0, 4], ["nsubj", "aux", "advmod", "root",
                                                           "punct"])]
    assert conllu_targets(gold[:1], labelled=False) == [[4, 4, 4, 0, 4]]
    with pytest.raises(ValueError, match=r"sentence 1 \(s2\), word 2: no HEAD"):
        conllu_targets(gold)
    with pytest.raises(ValueError, match="bool"):
        conllu_targets(gold, labelled="yes")
