"""BLAS threads inside fit: limited to ``n_jobs`` (the default) vs unlimited.

The fixed-size estimators spend their non-oracle time in two BLAS products
per gradient (``X @ W.T`` and ``X.T @ G``), tall and thin.  structlearn
limits BLAS to the estimator's ``n_jobs`` threads during fit and predict
(:func:`structlearn.solvers.blas_threads`).  This benchmark fits the same
models with the limit and without it (OpenBLAS's default: every core), on
an idle machine and under load (``--load N`` busy-looping processes, as
when other jobs or parallel folds share the cores), and reports the ratio
unlimited / limited, measured side by side.

    python benchmarks/bench_blas_threads.py [--load 2] [--repeat 3]
"""

import argparse
import contextlib
import multiprocessing as mp
import time
import warnings

from _seq_common import SHARED

import structlearn.estimators._base as base
from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor
from structlearn.datasets import fetch_chu_ghahramani, fetch_label_ranking, fetch_mulan
from structlearn.losses import Projection


def _spin(stop):
    while not stop.is_set():
        pass


def cases():
    X, Y = fetch_label_ranking("calhousing", data_home=SHARED, download_if_missing=False)[:2]
    Xm, Ym = fetch_mulan("yeast", data_home=SHARED, download_if_missing=False)[:2]
    Xo, yo = fetch_chu_ghahramani("abalone", data_home=SHARED, download_if_missing=False)[:2]
    return [
        ("multilabel yeast, sparsemap", lambda: MultiLabelClassifier(loss="sparsemap"), Xm, Ym),
        ("multilabel yeast, hinge (SGD)", lambda: MultiLabelClassifier(loss="hinge",
                                                                       max_iter=10), Xm, Ym),
        ("ranking calhousing, Birkhoff KL", lambda: LabelRanker(
            polytope="birkhoff", loss=Projection(geometry="kl"), max_iter=30), X, Y),
        ("ordinal abalone, crf", lambda: OrdinalRegressor(loss="crf"), Xo, yo),
    ]


def timed_fit(make, X, Y, limited, repeat):
    original = base.blas_threads
    if not limited:
        base.blas_threads = lambda n_jobs: contextlib.nullcontext()
    try:
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            make().fit(X, Y)
            best = min(best, time.perf_counter() - t)
        return best
    finally:
        base.blas_threads = original


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--load", type=int, default=2, help="busy processes for the loaded runs")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for name, make, X, Y in cases():
        make().fit(X[:50], Y[:50])  # compile
        for load in (0, args.load):
            stop = mp.Event()
            procs = [mp.Process(target=_spin, args=(stop,)) for _ in range(load)]
            for p in procs:
                p.start()
            try:
                lim = timed_fit(make, X, Y, True, args.repeat)
                unl = timed_fit(make, X, Y, False, args.repeat)
            finally:
                stop.set()
                for p in procs:
                    p.join()
            rows.append((name, load, lim, unl))
            print(f"{name:34s} load {load}: limited {lim:7.2f} s, unlimited {unl:7.2f} s, "
                  f"ratio {unl / lim:5.2f}", flush=True)
    print("\n| model | busy processes | fit, BLAS = n_jobs (s) | fit, BLAS unlimited (s) "
          "| unlimited / limited |")
    print("|---|---:|---:|---:|---:|")
    for name, load, lim, unl in rows:
        print(f"| {name} | {load} | {lim:.2f} | {unl:.2f} | {unl / lim:.2f} |")


if __name__ == "__main__":
    main()
