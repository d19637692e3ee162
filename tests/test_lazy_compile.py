"""Kernels compiled on their first call (structlearn.kernels._lazy)."""

import pickle
import subprocess
import sys

import numpy as np

from structlearn.kernels import maps, sparsemap
from structlearn.kernels._lazy import CompiledOnFirstCall


def test_import_compiles_no_deferred_kernel():
    code = ("import structlearn\n"
            "from structlearn.kernels import maps, sparsemap, chain, tree\n"
            "from structlearn.kernels._lazy import CompiledOnFirstCall as C\n"
            "lazy = [o for m in (maps, sparsemap, chain, tree) for o in vars(m).values()\n"
            "        if isinstance(o, C)]\n"
            "assert len(lazy) >= 14, len(lazy)\n"
            "assert all(o._dispatcher is None for o in lazy)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr


def test_deferred_solver_takes_a_deferred_oracle_and_stays_deferred_in_its_module():
    eta = np.array([0.3, -0.2, 0.9])
    params = np.array([3.0, 0.0, 3.0])    # the cube of 3 labels
    mu = sparsemap.sparsemap_active_set_batch(eta[None, :], 3, maps.cube_map, params,
                                              100, 1e-12)[0]
    np.testing.assert_allclose(mu, np.clip(eta, 0, 1), atol=1e-10)
    # the callees compiled for the batch solver are still exported as the
    # deferred objects, so Python callers may keep passing deferred oracles
    for name in ("sparsemap_active_set", "sparsemap_active_set_warm"):
        assert isinstance(getattr(sparsemap, name), CompiledOnFirstCall)
    mu2, _, w, _ = sparsemap.sparsemap_active_set(eta, 3, maps.cube_map, params, 100, 1e-12)
    np.testing.assert_allclose(mu2, mu, atol=1e-10)
    assert abs(w.sum() - 1) < 1e-12


def test_deferred_kernels_pickle_by_reference_and_look_like_functions():
    import inspect

    f = pickle.loads(pickle.dumps(maps.cube_map))
    assert f is maps.cube_map
    assert inspect.isroutine(sparsemap.sparsemap_active_set)
    assert list(inspect.signature(sparsemap.sparsemap_active_set).parameters)[:3] == [
        "eta", "n_unary", "oracle"]


def test_numba_code_lives_only_in_kernels():
    # kernels are plain functions in structlearn/kernels (docs/design.rst):
    # no other module compiles anything
    import pathlib

    import structlearn

    root = pathlib.Path(structlearn.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[0] == "kernels":
            continue
        text = path.read_text()
        if "from numba" in text or "import numba" in text:
            offenders.append(str(rel))
    assert offenders == []


def test_import_structlearn_imports_no_estimator_until_one_is_used():
    # the estimators (and with them scikit-learn, SciPy's stats and Numba)
    # are imported on first access (PEP 562); one estimator imports its own
    # structure, not the others'
    code = ("import sys, structlearn\n"
            "heavy = ('sklearn', 'numba', 'structlearn.estimators.ranking')\n"
            "assert not [m for m in heavy if m in sys.modules], sys.modules.keys()\n"
            "assert 'LabelRanker' in dir(structlearn)\n"
            "from structlearn import LabelRanker\n"
            "assert LabelRanker.__module__ == 'structlearn.estimators.ranking'\n"
            "assert 'structlearn.structures.ranking' in sys.modules\n"
            "assert 'structlearn.structures.segments' not in sys.modules\n"
            "ns = {}\n"
            "exec('from structlearn import *', ns)\n"
            "assert {n for n in structlearn.__all__ if n != '__version__'} <= set(ns)\n"
            "try:\n"
            "    structlearn.NoSuchEstimator\n"
            "except AttributeError as e:\n"
            "    assert 'NoSuchEstimator' in str(e)\n"
            "else:\n"
            "    raise AssertionError('no AttributeError')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
