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



#: Run in a fresh interpreter, so that only these fits' calls count (a test
#: calling a kernel with a read-only array would not be the package's doing).
_DUPLICATES_SCRIPT = """
import importlib, json, pkgutil, sys
from numba import types
from numba.core.dispatcher import Dispatcher
import structlearn.kernels as kernels
from structlearn._precompile import _compile_one

for name, loss in json.loads(sys.argv[1]):
    status = _compile_one(name, loss)[0]
    assert status == "ok", (name, loss, status)

def plain(t):
    t = types.unliteral(t)
    return t.copy(readonly=False) if isinstance(t, types.Array) else t

found = {}
for info in pkgutil.iter_modules(kernels.__path__):
    module = importlib.import_module(f"structlearn.kernels.{info.name}")
    for name, obj in vars(module).items():
        if isinstance(obj, Dispatcher) and obj.__module__ == module.__name__:
            sigs = list(obj.signatures)
            if len({tuple(plain(t) for t in s) for s in sigs}) < len(sigs):
                found[f"{info.name}.{name}"] = [str(s) for s in sigs]
print(json.dumps(found))
"""


def test_fits_compile_no_kernel_twice_for_a_literal_or_read_only_argument():
    # Numba compiles a kernel (and everything it calls) once per argument
    # type, and a literal constant (f(x, 0) beside f(x, i)) or a read-only
    # array is a type of its own: seconds of a cold first fit for nothing
    # (docs/design.rst).  The SparseMAP fits of the three structured models
    # and the parser's CRF, with their predictions.
    import json

    fits = [["SequenceTagger", "sparsemap"], ["SegmentTagger", "sparsemap"],
            ["DependencyParser", "sparsemap"], ["DependencyParser", "crf"]]
    out = subprocess.run([sys.executable, "-c", _DUPLICATES_SCRIPT, json.dumps(fits)],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}
