"""The persistent thread pools and BLAS thread limits of the solvers and problems."""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from joblib import effective_n_jobs


def n_workers(n_jobs, n_items):
    """Number of threads worth using for ``n_items`` independent items."""
    if n_jobs in (None, 1):
        return 1
    return max(1, min(effective_n_jobs(n_jobs), n_items // 2))


_BLAS = []


def blas_threads(n_jobs):
    """Context manager limiting BLAS to the threads ``n_jobs`` allows (one for
    ``None``), for the matrix products of a fit or a prediction.

    ``n_jobs`` bounds every thread an estimator uses.  On an idle machine the
    products of these models (tall, thin ``X @ W.T`` and ``X.T @ G``) are as
    fast on one BLAS thread as on several; on a loaded one (other processes
    or parallel folds on the same cores) OpenBLAS threads spin and wait, and
    a multilabel fit on ``yeast`` ran 12x slower with two BLAS threads than
    with one (``benchmarks/micro/bench_blas_threads.py``).
    """
    if not _BLAS:
        from threadpoolctl import ThreadpoolController  # a scikit-learn dependency
        _BLAS.append(ThreadpoolController())
    return _BLAS[0].limit(limits=effective_n_jobs(1 if n_jobs is None else n_jobs),
                          user_api="blas")


_POOLS = {}
_POOLS_LOCK = threading.Lock()
os.register_at_fork(after_in_child=_POOLS.clear)  # a forked child has no pool threads


def thread_map(fn, items, n_threads):
    """``[fn(x) for x in items]`` on ``n_threads`` threads.

    The oracles are Numba kernels that release the GIL (or vectorised
    NumPy), so threads parallelise them.  The threads belong to a persistent
    pool per thread count: joblib's threading backend costs about 10 ms per
    call, too much for solvers that make hundreds of full passes.  A call
    from inside a pool thread runs serially (no nested waits on the pool).
    """
    items = list(items)
    if n_threads <= 1 or len(items) <= 1 or \
            threading.current_thread().name.startswith("structlearn-"):
        return [fn(x) for x in items]
    with _POOLS_LOCK:
        pool = _POOLS.get(n_threads)
        if pool is None:
            pool = _POOLS[n_threads] = ThreadPoolExecutor(
                n_threads, thread_name_prefix=f"structlearn-{n_threads}")
    return list(pool.map(fn, items))


def split_concat(fn, idx, n_threads):
    """``fn(idx)`` computed on ``idx`` split into contiguous parts over
    ``n_threads`` threads (:func:`thread_map`), its tuple of arrays
    concatenated part after part -- the same numbers for any thread count
    when ``fn`` is per example."""
    k = n_workers(n_threads, len(idx))
    res = thread_map(fn, np.array_split(idx, k), k) if k > 1 else [fn(idx)]
    return tuple(np.concatenate([r[i] for r in res]) for i in range(len(res[0])))
