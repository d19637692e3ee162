"""structlearn.precompile: the kernels compiled ahead of the first fit."""

import os
import subprocess
import sys

import pytest

import structlearn
from structlearn import cli
from structlearn._precompile import PRECOMPILE_MODELS, _check_n_jobs, _tasks
from structlearn.losses import LOSSES


def test_tasks_default_losses_every_model_most_expensive_first():
    tasks = _tasks(None, "default")
    assert tasks == [(m, PRECOMPILE_MODELS[m][2]) for m in PRECOMPILE_MODELS]
    assert tasks[0] == ("DependencyParser", "crf")
    assert {cls for cls, _, _ in PRECOMPILE_MODELS.values()} == {
        "DependencyParser", "SegmentTagger", "SequenceTagger", "LabelRanker",
        "OrdinalRegressor", "MultiLabelClassifier"}


def test_tasks_all_losses_and_named_losses():
    assert _tasks("LabelRanker", "all") == [("LabelRanker", loss) for loss in LOSSES]
    assert _tasks(["OrdinalRegressor", "SequenceTagger"], ["hinge", "crf"]) == [
        ("SequenceTagger", "hinge"), ("SequenceTagger", "crf"),
        ("OrdinalRegressor", "hinge"), ("OrdinalRegressor", "crf")]
    assert _tasks(["LabelRanker"], "perceptron") == [("LabelRanker", "perceptron")]


@pytest.mark.parametrize("models, losses, match", [
    (["NoSuchModel"], "default", "unknown model.*'NoSuchModel'"),
    (None, ["crf", "no-such-loss"], "losses must be"),
    (None, [], "losses must be"),
    (None, "sometimes", "losses must be"),
    ([], "default", "none given"),
])
def test_bad_models_or_losses_raise_before_any_work(models, losses, match):
    with pytest.raises(ValueError, match=match):
        structlearn.precompile(models, losses)


@pytest.mark.parametrize("models, losses", [(3, "default"), (["LabelRanker", 1], "default"),
                                            (None, 2), (None, ["crf", None])])
def test_models_and_losses_of_the_wrong_type(models, losses):
    with pytest.raises(TypeError, match="must be a str or a list of str"):
        structlearn.precompile(models, losses)


@pytest.mark.parametrize("n_jobs, error", [(0, ValueError), (-2, ValueError),
                                           ("2", TypeError), (2.0, TypeError),
                                           (True, TypeError)])
def test_bad_n_jobs(n_jobs, error):
    with pytest.raises(error, match="n_jobs"):
        structlearn.precompile("OrdinalRegressor", n_jobs=n_jobs)


def test_n_jobs_none_and_minus_one_mean_every_core():
    assert _check_n_jobs(None) == _check_n_jobs(-1) == (os.cpu_count() or 1)
    assert _check_n_jobs(3) == 3


def test_cli_rejects_unknown_model_with_status_2(capsys):
    assert cli.main(["precompile", "--models", "NoSuchModel", "--quiet"]) == 2
    assert "NoSuchModel" in capsys.readouterr().err


def test_cli_reports_a_failed_model_with_status_1(monkeypatch, capsys):
    # precompile raises RuntimeError naming the failures after running the
    # others; the command prints it and exits 1 (not 2: not a usage error)
    import structlearn._precompile as pc
    seen = {}

    def failing(models, losses, n_jobs=None, verbose=1):
        seen.update(models=models, losses=losses, n_jobs=n_jobs, verbose=verbose)
        raise RuntimeError("precompile failed for SequenceTagger (loss='crf'): boom")

    monkeypatch.setattr(pc, "precompile", failing)
    assert cli.main(["precompile", "--models", "SequenceTagger", "--losses", "crf",
                     "hinge", "--n-jobs", "2", "--quiet"]) == 1
    assert "boom" in capsys.readouterr().err
    assert seen == {"models": ["SequenceTagger"], "losses": ["crf", "hinge"], "n_jobs": 2,
                    "verbose": 0}
    # 'default' and 'all' pass through as the strings precompile takes
    cli.main(["precompile", "--losses", "all", "--quiet"])
    assert seen["losses"] == "all" and seen["models"] is None


def _run(code, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=900)


# a fit of the default OrdinalRegressor on other data than precompile's,
# printing how many kernels Numba compiled (cache loads are not compiles)
_FIT = """
import numpy as np
from numba.core import event
compiled = []
class _L(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data['dispatcher'].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register('numba:compile', _L())
from structlearn import OrdinalRegressor
rng = np.random.RandomState(1)
X = rng.randn(120, 6)
y = rng.randint(0, 5, 120)
OrdinalRegressor().fit(X, y).predict(X)
print(len(compiled), sorted(set(compiled)))
"""


@pytest.mark.slow
def test_precompile_fills_the_cache_a_later_first_fit_reads(tmp_path):
    # control: with an empty cache the first fit compiles kernels
    cold = _run(_FIT, tmp_path / "empty")
    assert cold.returncode == 0, cold.stderr
    assert int(cold.stdout.split()[0]) > 0, cold.stdout
    # the command line, two workers; then a fresh process compiles nothing
    cache = tmp_path / "cache"
    res = _run("import sys; from structlearn.cli import main; sys.exit(main(["
               "'precompile', '--models', 'OrdinalRegressor', 'MultiLabelClassifier', "
               "'--n-jobs', '2']))", cache)
    assert res.returncode == 0, res.stderr
    assert "OrdinalRegressor (loss='projection'): ok" in res.stderr
    assert "MultiLabelClassifier (loss='projection'): ok" in res.stderr
    warm = _run(_FIT, cache)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split()[0] == "0", warm.stdout


@pytest.mark.slow
def test_precompile_reports_intractable_pairs_and_returns_results(tmp_path):
    # the CRF of a ranking is #P-hard: reported 'n/a', not a failure
    res = _run("import structlearn\n"
               "if __name__ == '__main__':\n"
               "    r = structlearn.precompile('LabelRanker', ['crf'], n_jobs=1, verbose=0)\n"
               "    print(r[0]['model'], r[0]['loss'], r[0]['status'])\n", tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["LabelRanker", "crf", "n/a"]


@pytest.mark.parametrize("name, loss, warm_up", [
    ("SequenceTagger", "crf", True),       # solver='auto' -> L-BFGS with an SGD warm-up
    ("SequenceTagger", "perceptron", False),
    ("DependencyParser", "crf", False),    # the parser starts L-BFGS from zeros
])
def test_compile_one_also_compiles_the_lbfgs_warm_up_where_auto_uses_it(
        monkeypatch, name, loss, warm_up):
    from structlearn._precompile import _compile_one

    solvers = []
    cls = getattr(structlearn, name)
    real = cls.fit

    def fit(self, X, y, **kw):
        solvers.append(self.solver)
        return real(self, X, y, **kw)

    monkeypatch.setattr(cls, "fit", fit)
    status, _ = _compile_one(name, loss)
    assert status == "ok"
    assert solvers == (["auto", "sgd"] if warm_up else ["auto"])
