"""Shared test configuration: the test folders on ``sys.path``, hypothesis profiles.

The tests mirror the package (``kernels/``, ``structures/``, ``solvers/``,
``estimators/``; the cross-cutting suites -- properties, fuzzing,
robustness, persistence, real data -- at the top).  Test modules share
their brute-force references by module name (``tree_brute``,
``test_chain_kernels.phi_ref``, ``test_estimators.ordinal_data``, ...), so
every test folder is put on ``sys.path`` here; test module names are unique
across folders.

``ci`` (the default) is reproducible: examples are derived from the test
itself (``derandomize``), so a failure in CI fails the same way locally, and
no per-example deadline applies (the first example of a test may include
Numba compilation or loading of the on-disk cache).  ``dev`` explores new
examples on every run; select it with ``HYPOTHESIS_PROFILE=dev``.

The fast selection (``-m "not slow"``) runs the property tests of
``test_properties.py`` with ``PROPERTY_EXAMPLES_SCALE=0.4`` (24 examples
where the whole suite, as CI runs it, draws 60, both
drawn by the same derandomised search) unless the variable is set; the whole
suite keeps the full counts (issue 20: the fast suite's time).

BLAS runs on one thread in the test process (the estimators' fits already
do, ``structlearn.solvers.blas_threads``): the tests' references (SLSQP,
NNLS, least squares on matrices of a few dozen rows) on a loaded 2-core
machine ran ~9x the CPU time on OpenBLAS's two spinning threads (issue 20).
A test about BLAS threads takes the ``original_blas_threads`` fixture.
"""

import os
import sys
from pathlib import Path

import numpy
import pytest
import scipy.linalg
import scipy.optimize
from hypothesis import settings
from threadpoolctl import threadpool_limits  # a scikit-learn dependency

_HERE = Path(__file__).resolve().parent
for _d in sorted(p for p in _HERE.iterdir() if p.is_dir() and p.name[0] not in "._"):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: scale of the property tests' example counts in the fast selection
FAST_EXAMPLES_SCALE = "0.4"


def pytest_configure(config):
    # runs before the test modules are imported (their @settings read it)
    markexpr = " ".join((config.getoption("markexpr") or "").split())
    if "not slow" in markexpr:
        os.environ.setdefault("PROPERTY_EXAMPLES_SCALE", FAST_EXAMPLES_SCALE)


# NumPy's and SciPy's BLAS libraries are loaded (imported above): limit both
_LOADED = (numpy, scipy.linalg, scipy.optimize)
_blas_limit = threadpool_limits(limits=1, user_api="blas")


@pytest.fixture
def original_blas_threads():
    """BLAS with the thread counts the process started with, for the test."""
    global _blas_limit
    _blas_limit.restore_original_limits()
    try:
        yield
    finally:
        _blas_limit = threadpool_limits(limits=1, user_api="blas")
