"""The stochastic warm-up of L-BFGS (``solvers.sgd_warm_up``) and the
estimators' use of it with ``solver='auto'`` on large problems."""

import warnings

import numpy as np
import pytest

import structlearn.estimators._base as base
from structlearn import DependencyParser, SegmentTagger, SequenceTagger
from structlearn.datasets import load_ewt, load_ewt_pos
from structlearn.solvers import lbfgs, sgd_warm_up
from structlearn.solvers._problem import objective
from test_solvers import logistic_problem


def _tagger_problem(n=200):
    """The CRF training problem of a SequenceTagger on ``n`` bundled EWT
    sentences, as the estimator builds it (captured at its L-BFGS call)."""
    X, y = load_ewt_pos("train")
    got = {}

    class Captured(Exception):
        pass

    def grab(problem, alpha, z0, **kw):
        got.update(problem=problem, alpha=alpha)
        raise Captured

    real, base.lbfgs = base.lbfgs, grab
    try:
        SequenceTagger(loss="crf", alpha=1e-2, solver="lbfgs").fit(X[:n], y[:n])
    except Captured:
        pass
    finally:
        base.lbfgs = real
    return got["problem"], got["alpha"]


def test_warm_up_descends_and_is_reproducible():
    problem, alpha = _tagger_problem()
    z0 = np.zeros(problem.n_params)
    f0 = objective(problem, z0, alpha)
    z = sgd_warm_up(problem, alpha, z0, epochs=2, random_state=None)
    f = objective(problem, z, alpha)
    # two passes get well below the start (the CRF at zero: log K per token)
    assert f < 0.5 * f0
    np.testing.assert_array_equal(z, sgd_warm_up(problem, alpha, z0, epochs=2))
    np.testing.assert_array_equal(z0, 0.0)   # the start is not modified
    other = sgd_warm_up(problem, alpha, z0, epochs=2, random_state=1)
    assert not np.array_equal(z, other)
    assert objective(problem, other, alpha) < 0.5 * f0


def test_lbfgs_from_the_warm_up_reaches_the_same_optimum():
    pb = logistic_problem(n=300, d=20)
    alpha = 1e-3
    z_cold, _, f_cold = lbfgs(pb, alpha, np.zeros(20), tol=1e-10)
    z_warm0 = sgd_warm_up(pb, alpha, np.zeros(20), epochs=2, batch_size=4)
    z_warm, _, f_warm = lbfgs(pb, alpha, z_warm0, tol=1e-10)
    assert f_warm == pytest.approx(f_cold, rel=1e-10)
    np.testing.assert_allclose(z_warm, z_cold, atol=1e-5)


@pytest.fixture
def small_threshold(monkeypatch):
    """Every problem counts as large (the bundled data are too small)."""
    monkeypatch.setattr(base, "WARM_UP_MIN_SAMPLES", 50)


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def test_auto_warms_up_the_taggers_lbfgs_to_the_same_model(small_threshold):
    X, y = load_ewt_pos("train")
    X, y = X[:400], y[:400]
    kw = dict(loss="crf", alpha=1e-3, tol=1e-7)
    auto = _fit(SequenceTagger(solver="auto", **kw), X, y)
    plain = _fit(SequenceTagger(solver="lbfgs", **kw), X, y)
    assert auto.solver_ == plain.solver_ == "lbfgs"
    # a different path (fewer iterations) to the same optimum
    assert auto.n_iter_ < plain.n_iter_
    assert auto.objective_ == pytest.approx(plain.objective_, rel=1e-6)
    Xt, _ = load_ewt_pos("test")
    assert np.mean(np.concatenate(auto.predict(Xt)) ==
                   np.concatenate(plain.predict(Xt))) > 0.999
    # deterministic without a random_state
    again = _fit(SequenceTagger(solver="auto", **kw), X, y)
    np.testing.assert_array_equal(again.coef_.toarray(), auto.coef_.toarray())


def test_explicit_lbfgs_small_problems_and_warm_starts_start_as_before(small_threshold,
                                                                       monkeypatch):
    X, y = load_ewt_pos("train")
    X, y = X[:100], y[:100]
    calls = []
    real = base.sgd_warm_up
    monkeypatch.setattr(base, "sgd_warm_up", lambda *a, **k: calls.append(1) or real(*a, **k))
    kw = dict(loss="crf", alpha=1e-3, max_iter=5)
    _fit(SequenceTagger(solver="lbfgs", **kw), X, y)
    _fit(SequenceTagger(solver="auto", l1_ratio=0.5, **kw), X, y)   # OWL-QN
    _fit(SequenceTagger(solver="auto", loss="perceptron", max_iter=2), X, y)
    assert calls == []
    est = _fit(SequenceTagger(solver="auto", **kw), X, y)
    assert calls == [1]
    est.set_params(warm_start=True)
    _fit(est, X, y)   # continues from its weights
    assert calls == [1]
    monkeypatch.setattr(base, "WARM_UP_MIN_SAMPLES", 101)
    _fit(SequenceTagger(solver="auto", **kw), X, y)
    assert calls == [1]


def test_the_parser_starts_from_zeros(small_threshold, monkeypatch):
    """Measured not to pay on the parser (docs/benchmarks.rst): no warm-up."""
    calls = []
    monkeypatch.setattr(base, "sgd_warm_up", lambda *a, **k: calls.append(1))
    sents = load_ewt("train")[:60]
    X, y = [s.tokens for s in sents], [s.heads for s in sents]
    _fit(DependencyParser(loss="crf", alpha=1e-2, max_iter=3), X, y)
    assert calls == []


def test_auto_warms_up_the_segment_taggers_lbfgs_to_the_same_model(small_threshold):
    X, tags = load_ewt_pos("train")
    X, tags = X[:200], tags[:200]
    nouns = ("NOUN", "PROPN")
    y = [["I-NP" if t in nouns and i and s[i - 1] in nouns else
          "B-NP" if t in nouns else "O" for i, t in enumerate(s)] for s in tags]
    auto, plain = (_fit(SegmentTagger(loss="crf", alpha=1e-3, solver=solver, tol=1e-7), X, y)
                   for solver in ("auto", "lbfgs"))
    assert auto.n_iter_ != plain.n_iter_   # another path ...
    assert auto.objective_ == pytest.approx(plain.objective_, rel=1e-6)   # ... same optimum


def test_verbose_reports_the_warm_up(small_threshold, capsys):
    X, y = load_ewt_pos("train")
    _fit(SequenceTagger(loss="crf", alpha=1e-3, max_iter=2, verbose=1), X[:100], y[:100])
    out = capsys.readouterr().out
    assert "[sgd warm-up] 2 epochs, step size" in out
    # then L-BFGS reports its own progress
    assert out.index("[sgd warm-up]") < out.index("[lbfgs] iteration")
