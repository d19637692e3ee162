"""Persistence and reproducibility of every estimator.

- pickle and joblib round trips (in this process and in a fresh one, where
  the Numba kernels are loaded anew) give bit-identical outputs;
- the same ``random_state`` gives bit-identical models, another one a
  different model (for the stochastic solvers);
- ``n_jobs`` changes nothing but the speed;
- fitting and predicting leave no file behind (neither in the working
  directory nor in the temporary directory).
"""

import os
import pickle
import subprocess
import sys
import textwrap

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from structlearn import (DependencyParser, LabelRanker, MultiLabelClassifier,
                         OrdinalRegressor, SequenceTagger)
from structlearn.datasets import load_ewt, load_ewt_pos

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _fixed_size(kind, seed=0, n=80, d=5, k=4):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    S = X @ rng.randn(d, k) + 0.3 * rng.randn(n, k)
    if kind == "ranking":
        return X, np.argsort(np.argsort(-S, axis=1), axis=1) + 1
    if kind == "ordinal":
        return X, np.digitize(S[:, 0], [-1.0, 0.0, 1.0])
    return X, (S > 0).astype(int)


def _tagging():
    X, y = load_ewt_pos("train")
    return X[:60], y[:60]


def _parsing():
    sents = load_ewt("train")[:40]
    return [s.tokens for s in sents], [s.heads for s in sents]


DATA = {"ranking": lambda: _fixed_size("ranking"), "ordinal": lambda: _fixed_size("ordinal"),
        "multilabel": lambda: _fixed_size("multilabel"), "tagging": _tagging,
        "parsing": _parsing}

# (data, estimator factory, stochastic?) — one SGD-trained and one
# L-BFGS-trained model per estimator.
CASES = {
    "ranker-hinge": ("ranking", lambda **kw: LabelRanker(loss="hinge", max_iter=5, **kw), True),
    "ranker-kl": ("ranking", lambda **kw: LabelRanker(polytope="birkhoff", **kw), False),
    "ordinal-hinge": ("ordinal", lambda **kw: OrdinalRegressor(loss="hinge", max_iter=5, **kw),
                      True),
    "ordinal-crf": ("ordinal", lambda **kw: OrdinalRegressor(loss="crf", **kw), False),
    "multilabel-perceptron": ("multilabel", lambda **kw: MultiLabelClassifier(
        loss="perceptron", max_iter=5, **kw), True),
    "multilabel-sparsemap": ("multilabel", lambda **kw: MultiLabelClassifier(
        loss="sparsemap", **kw), False),
    "tagger-hinge": ("tagging", lambda **kw: SequenceTagger(loss="hinge", max_iter=3, **kw), True),
    "tagger-crf": ("tagging", lambda **kw: SequenceTagger(loss="crf", max_iter=20, **kw), False),
    "parser-perceptron": ("parsing", lambda **kw: DependencyParser(
        loss="perceptron", max_iter=3, **kw), True),
    "parser-sparsemap": ("parsing", lambda **kw: DependencyParser(
        loss="sparsemap", max_iter=10, **kw), False),
}


def _outputs(est, X):
    """Everything an estimator says about X, as comparable arrays."""
    out = {"predict": est.predict(X)}
    if hasattr(est, "predict_marginals"):
        out["marginals"] = est.predict_marginals(X)
    if hasattr(est, "decision_function"):
        out["decision"] = est.decision_function(X)
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, np.ndarray) and x.dtype != object:
            np.testing.assert_array_equal(x, y, err_msg=key)
        else:  # lists of per-sentence arrays / label lists
            assert len(x) == len(y), key
            for u, v in zip(x, y):
                np.testing.assert_array_equal(np.asarray(u), np.asarray(v), err_msg=key)


def _fitted_arrays(est):
    """The fitted numeric arrays of est (sparse weights made dense)."""
    out = {}
    for k, v in vars(est).items():
        if k.endswith("_") and not k.startswith("_"):
            v = v.toarray() if sp.issparse(v) else v
            if isinstance(v, np.ndarray) and v.dtype != object:
                out[k] = v
    return out


@pytest.fixture(scope="module")
def fitted():
    models = {}
    for name, (data, make, _) in CASES.items():
        X, y = DATA[data]()
        models[name] = (make(random_state=0).fit(X, y), X, y)
    return models


@pytest.mark.parametrize("name", list(CASES))
def test_pickle_and_joblib_round_trips_give_identical_outputs(name, fitted, tmp_path):
    est, X, _ = fitted[name]
    ref = _outputs(est, X)
    _assert_same(ref, _outputs(pickle.loads(pickle.dumps(est)), X))
    for compress in (0, 3):
        path = tmp_path / f"model-{compress}.joblib"
        joblib.dump(est, path, compress=compress)
        _assert_same(ref, _outputs(joblib.load(path), X))


def test_a_model_saved_here_predicts_identically_in_a_fresh_process(fitted, tmp_path):
    """The fresh interpreter loads the kernels from scratch (or from Numba's
    on-disk cache) and must reproduce every prediction bit for bit."""
    refs = {}
    for name, (est, X, _) in fitted.items():
        joblib.dump((est, X), tmp_path / f"{name}.joblib")
        refs[name] = est.predict(X)
    script = textwrap.dedent(f"""
        import pickle, sys, joblib
        out = {{}}
        for name in {list(fitted)!r}:
            est, X = joblib.load({str(tmp_path)!r} + "/" + name + ".joblib")
            out[name] = est.predict(X)
        sys.stdout.buffer.write(pickle.dumps(out))
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=600)
    assert res.returncode == 0, res.stderr.decode()
    got = pickle.loads(res.stdout)
    for name, ref in refs.items():
        if isinstance(ref, np.ndarray) and ref.dtype != object:
            np.testing.assert_array_equal(ref, got[name], err_msg=name)
        else:
            assert [list(np.asarray(r)) for r in ref] == [list(np.asarray(g)) for g in got[name]], name


@pytest.mark.parametrize("name", list(CASES))
def test_same_random_state_gives_an_identical_model(name, fitted):
    data, make, stochastic = CASES[name]
    first, X, y = fitted[name]
    again = make(random_state=0).fit(X, y)
    a, b = _fitted_arrays(first), _fitted_arrays(again)
    assert a.keys() == b.keys() and a
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    _assert_same(_outputs(first, X), _outputs(again, X))
    if stochastic:
        # the seed matters: another one visits the examples in another order
        other = _fitted_arrays(make(random_state=1).fit(X, y))
        assert any(not np.array_equal(a[k], other[k]) for k in a if a[k].dtype.kind == "f")


@pytest.mark.parametrize("name", ["tagger-hinge", "tagger-crf", "parser-perceptron",
                                  "parser-sparsemap", "multilabel-sparsemap"])
def test_n_jobs_changes_nothing_but_the_speed(name, fitted):
    data, make, _ = CASES[name]
    serial, X, y = fitted[name]
    parallel = make(random_state=0, n_jobs=2).fit(X, y)
    a, b = _fitted_arrays(serial), _fitted_arrays(parallel)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=1e-9, atol=1e-12, err_msg=key)
    # prediction across examples in threads: the same outputs
    serial_out = _outputs(serial, X)
    serial.set_params(n_jobs=2)
    try:
        _assert_same(serial_out, _outputs(serial, X))
    finally:
        serial.set_params(n_jobs=None)


def test_fit_and_predict_leave_no_files_behind(tmp_path, monkeypatch):
    """No temporary file, no stray output: the working directory and the
    temporary directory are as empty after fit/predict/score as before."""
    import tempfile

    work, tmp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    for name, (data, make, _) in CASES.items():
        X, y = DATA[data]()
        est = make(random_state=0, n_jobs=2).fit(X, y)
        est.predict(X)
        est.score(X, y)
    assert os.listdir(work) == [] and os.listdir(tmp) == []
