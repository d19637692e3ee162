"""BLAS threads inside fit: limited to ``n_jobs`` (the default) vs unlimited.

The fixed-size estimators spend their non-oracle time in two BLAS products
per gradient (``X @ W.T`` and ``X.T @ G``), tall and thin.  structlearn
limits BLAS to the estimator's ``n_jobs`` threads during fit and predict
(:func:`structlearn.solvers.blas_threads`).  This benchmark fits the same
models with the limit and without it (OpenBLAS's default: every core), on
an idle machine and under load (``--load N`` busy-looping processes, as
when other jobs or parallel folds share the cores), and reports the ratio
unlimited / limited, measured side by side.

    python benchmarks/micro/bench_blas_threads.py [--load 2] [--repeat 3]

Unlike the other benchmarks, OpenBLAS keeps its default here (one thread per
core), since the unlimited runs measure exactly that.
"""

import os
import sys
from pathlib import Path

# before _common, which would pin OpenBLAS to one thread (it keeps a value already set)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(os.cpu_count()))

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402
    common_parser, fetch_shared, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import multiprocessing as mp  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import structlearn.estimators._base as base  # noqa: E402
from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor  # noqa: E402
from structlearn.datasets import (  # noqa: E402
    fetch_chu_ghahramani, fetch_label_ranking, fetch_mulan)
from structlearn.losses import Projection  # noqa: E402


def _spin(stop):
    while not stop.is_set():
        pass


def cases():
    X, Y = fetch_shared(fetch_label_ranking, "calhousing")[:2]
    Xm, Ym = fetch_shared(fetch_mulan, "yeast")[:2]
    Xo, yo = fetch_shared(fetch_chu_ghahramani, "abalone")[:2]
    return [
        ("multilabel yeast, sparsemap", lambda: MultiLabelClassifier(loss="sparsemap"), Xm, Ym),
        ("multilabel yeast, hinge (SGD)", lambda: MultiLabelClassifier(loss="hinge",
                                                                       max_iter=10), Xm, Ym),
        ("ranking calhousing, Birkhoff KL", lambda: LabelRanker(
            polytope="birkhoff", loss=Projection(geometry="kl"), max_iter=30), X, Y),
        ("ordinal abalone, crf", lambda: OrdinalRegressor(loss="crf"), Xo, yo),
    ]


def best_fit_time(make, X, Y, limited, repeat):
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


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[common_parser("repeat", "out", "no_write", "data", repeat=3)])
    ap.add_argument("--load", type=int, default=2, help="busy processes for the loaded runs")
    args = parse_args(ap, argv)
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
                lim = best_fit_time(make, X, Y, True, args.repeat)
                unl = best_fit_time(make, X, Y, False, args.repeat)
            finally:
                stop.set()
                for p in procs:
                    p.join()
            rows.append((name, load, lim, unl))
            print(f"{name:34s} load {load}: limited {lim:7.2f} s, unlimited {unl:7.2f} s, "
                  f"ratio {unl / lim:5.2f}", flush=True)
    table = md_table(["model", "busy processes", "fit, BLAS = n_jobs (s)",
                      "fit, BLAS unlimited (s)", "unlimited / limited"],
                     [[name, load, f"{lim:.2f}", f"{unl:.2f}", f"{unl / lim:.2f}"]
                      for name, load, lim, unl in rows])
    print("\n" + table)
    stem = out_stem(args, None)
    if stem:
        path = write_text(stem, "# BLAS threads inside fit: limited to n_jobs vs unlimited\n\n"
                          f"`python benchmarks/micro/bench_blas_threads.py --load {args.load} "
                          f"--repeat {args.repeat}`\n\n" + table + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
