"""Numba functions with an explicit signature, compiled on their first call.

``@njit(signature)`` compiles when the module is imported.  The SparseMAP
solvers and the typed MAP oracles (which are passed to them as first-class
functions and therefore need explicit signatures) made up nearly all of a
cold ``import structlearn`` -- over a minute on a loaded two-core machine
with an empty cache (``benchmarks/micro/bench_compile.py``) -- although a fit uses
one oracle and one or two solvers.  :func:`njit_on_first_call` defers the
compilation (or the loading from Numba's on-disk cache) to the first call.

Two rules keep deferred functions usable everywhere:

- a jitted function needs real dispatchers for the functions it calls when
  *it* compiles, so compiling a deferred function first compiles the
  deferred functions it names and shows Numba their dispatchers in its
  module's namespace for the time of the compilation (the module keeps
  exporting the deferred objects);
- a deferred function passed as an argument (an oracle handed to a solver)
  is replaced by its dispatcher before the call.

:func:`njit_inner` is the other saving at compile time: a helper that only
other kernels call is compiled without the two entry points Numba adds to
every jitted function -- the CPython wrapper (unboxing every argument, boxing
the result) and the C-callable wrapper of first-class functions.  Their code
is optimised and turned into machine code with the helper's own and is most
of a small helper's code (two thirds of ``chain._fb_scaled_work``, which
returns twelve arrays); a cold ``SequenceTagger`` fit + predict compiles
about 1.3 CPU s less (``benchmarks/micro/bench_compile.py``; docs/benchmarks.rst,
*Compile time*, fifth pass).  One cost: Numba compiles an overloaded NumPy
function (``np.empty``, ``np.zeros``) once per set of compilation flags of
its caller, so an allocation inside such a helper compiles its own copy
(0.05-0.1 s each); helpers mostly work in their callers' arrays.
"""

import functools
import importlib
import threading

from numba import config, njit
from numba.core.registry import CPUDispatcher


class CompiledOnFirstCall:
    """A deferred ``njit(signature, **options)(py_func)``."""

    def __init__(self, py_func, signature, options):
        functools.update_wrapper(self, py_func)
        self.py_func, self._signature, self._options = py_func, signature, options
        self._dispatcher = None
        self._lock = threading.Lock()

    @property
    def dispatcher(self):
        """The Numba dispatcher (compiled or loaded from the cache now)."""
        if self._dispatcher is None:
            with self._lock:
                if self._dispatcher is None:
                    # the deferred callees are seen by Numba as their
                    # dispatchers while this function compiles (with an
                    # explicit signature, in the njit call), then the
                    # module names are restored
                    namespace = self.py_func.__globals__
                    saved = {name: namespace[name] for name in self.py_func.__code__.co_names
                             if isinstance(namespace.get(name), CompiledOnFirstCall)}
                    try:
                        for name, callee in saved.items():
                            namespace[name] = callee.dispatcher
                        self._dispatcher = njit(self._signature, **self._options)(self.py_func)
                    finally:
                        namespace.update(saved)
        return self._dispatcher

    def __call__(self, *args, **kwargs):
        args = [a.dispatcher if isinstance(a, CompiledOnFirstCall) else a for a in args]
        kwargs = {k: v.dispatcher if isinstance(v, CompiledOnFirstCall) else v
                  for k, v in kwargs.items()}
        return self.dispatcher(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        # a non-data descriptor, like a Numba dispatcher: ``inspect.isroutine``
        # (and so Sphinx) sees a function
        return self

    def __reduce__(self):  # pickled by reference, like a module-level function
        return _resolve, (self.__module__, self.__name__)


def _resolve(module, name):
    return getattr(importlib.import_module(module), name)


def njit_on_first_call(signature, **options):
    """Decorator: ``njit(signature, nogil=True, **options)``, compiled on the
    first call.  (``nogil`` by default as on every other kernel: Numba
    compiles an overloaded NumPy function such as ``np.empty`` once per set
    of compilation flags of its callers, so one flag set for all kernels
    compiles each allocation signature once.)"""
    options.setdefault("nogil", True)
    return lambda py_func: CompiledOnFirstCall(py_func, signature, options)


class InnerDispatcher(CPUDispatcher):
    """A Numba dispatcher compiled without Python entry point (see
    :func:`njit_inner`): calling it from Python raises instead of jumping to
    code that does not exist."""

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.py_func.__module__}.{self.py_func.__qualname__} is a kernel "
                        "helper without a Python entry point: call it from jitted code.")


def njit_inner(**options):
    """Decorator: ``njit(cache=True, nogil=True, **options)`` for a helper
    that only other jitted kernels call, compiled without the CPython and
    C-callable wrappers (``no_cpython_wrapper``, ``no_cfunc_wrapper``): less
    code to optimise and to generate on a cold start, the same code where it
    runs (its callers link it in).  Called from Python it raises
    ``TypeError``."""
    targetoptions = dict(nopython=True, boundscheck=None, nogil=True,
                         no_cpython_wrapper=True, no_cfunc_wrapper=True, **options)

    def wrap(py_func):
        if config.DISABLE_JIT:  # as njit: the Python function itself
            return py_func
        disp = InnerDispatcher(py_func=py_func, locals={}, targetoptions=targetoptions)
        disp.enable_caching()
        return disp
    return wrap
