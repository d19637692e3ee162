"""Arc scores at predict (``arcs.arc_scores_direct``): this checkout's kernel
vs the one of an older commit, side by side in one process.

The older ``structlearn/kernels/arcs.py`` (``--base``) is read with
``git show`` and imported under another name.  Both kernels score the
sentences of UD English EWT dev (``--n`` of them) with the weight table of
a fitted DependencyParser (``--model``, a pickle; without it a parser is
fitted on ``--fit`` EWT train sentences), one thread, alternating A/B over
``--repeat`` rounds; the scores are checked bit for bit identical.  Prints
the median time ratio base / this (> 1: this checkout is faster) and its
range (CPU time of the process: the kernels run on one thread, and CPU
time holds better than wall time on the shared machine).  Made for compile-time changes of the kernel (issue 20), which must
not cost speed.

    python benchmarks/micro/bench_arc_scores_ab.py --base b1c1ff9 --repeat 9

``--ids`` also times ``arc_feature_ids`` (the fit's arc-feature cache).
``--predict`` also times ``DependencyParser.predict`` end to end with both
kernels (n_jobs 1 and 2, wall time), e.g. ``--model parser.pkl --n 2001
--predict``.
"""

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import arcs_kernels_at, ewt_parsing_xy  # noqa: E402

import numpy as np  # noqa: E402

from structlearn.kernels import arcs  # noqa: E402
from structlearn.feature_extraction._arcs import (  # noqa: E402
    _dd_implies_plain, _new_table, _template_ids)


def table_for(mod, keys, values):
    """A table of ``keys`` -> ``values`` in the layout the arcs module
    ``mod`` reads: this checkout's (:func:`_new_table`), or, for a module
    from before the bucketed tables (no ``BUCKET``), one slot per key in
    ``2 * capacity`` entries, ``capacity`` the power of two at least twice
    the number of keys, filled by that module's own ``fill_table``."""
    if hasattr(mod, "BUCKET"):
        return _new_table(keys, values)
    capacity = 1 << int(np.ceil(np.log2(max(16, 2 * len(keys)))))
    table = np.zeros(2 * capacity, dtype=np.int64)
    mod.fill_table(table, keys, values)
    return table


def alternate(runs, repeat, clock=time.process_time):
    """Seconds of each of ``runs`` (name -> callable without arguments) over
    ``repeat`` rounds, the order alternating (ABBA...); ``clock``: CPU time
    by default (one thread), ``time.perf_counter`` for threaded calls."""
    times = {k: [] for k in runs}
    names = list(runs)
    for r in range(repeat):
        for k in (names if r % 2 == 0 else names[::-1]):
            t0 = clock()
            runs[k]()
            times[k].append(clock() - t0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="b1c1ff9")
    ap.add_argument("--model", default=None)
    ap.add_argument("--fit", type=int, default=2000)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--predict", action="store_true",
                    help="also time DependencyParser.predict end to end (token dicts in, "
                         "heads out) with n_jobs 1 and 2, the base kernel swapped in for "
                         "'base' (wall seconds: two threads)")
    ap.add_argument("--ids", action="store_true",
                    help="also time arc_feature_ids (the training path's arc-feature "
                         "cache: the known features' column ids of every arc, from the "
                         "feature table), base vs this, one thread, CPU time; checked equal")
    ap.add_argument("--small-table", action="store_true",
                    help="also time both kernels with a cache-resident weight table (the "
                         "model's first 20,000 features, 2 MB): every key still computed and "
                         "looked up, few memory misses -- the kernels' work without the "
                         "table's loads")
    args = ap.parse_args()
    old = arcs_kernels_at(args.base)
    if args.model:
        with open(args.model, "rb") as fh:
            est = pickle.load(fh)
    else:
        from structlearn import DependencyParser
        Xt, yt = ewt_parsing_xy("train")
        est = DependencyParser(loss="perceptron", max_iter=2, n_jobs=1)
        est.fit(Xt[:args.fit], yt[:args.fit])
    X, _ = ewt_parsing_xy("dev")
    X = X[:args.n]
    A, word_off = est.vectorizer_.transform(X)
    keys = est.vectorizer_._keys_by_id()
    tables = {"base": table_for(old, keys, est.coef_.view(np.int64)),
              "this": est._weight_table().table}
    ddp = _dd_implies_plain(_template_ids(est.vectorizer_.templates))
    n = len(word_off) - 1
    kern = {"base": old.arc_scores_direct, "this": arcs.arc_scores_direct}
    outs = {k: f(A, word_off, 0, n, arcs.TEMPLATES, tables[k], ddp) for k, f in kern.items()}
    if not np.array_equal(outs["base"], outs["this"]):
        raise SystemExit("arc scores differ")
    load0 = os.getloadavg()[0]
    times = alternate({k: (lambda f=f, k=k: f(A, word_off, 0, n, arcs.TEMPLATES, tables[k], ddp))
                       for k, f in kern.items()}, args.repeat)
    ratio = np.asarray(times["base"]) / np.asarray(times["this"])
    print(f"{n} sentences, {len(keys)} features; base {args.base} "
          f"{np.median(times['base']):.3f} s, this {np.median(times['this']):.3f} CPU s (median); "
          f"ratio base/this {np.median(ratio):.3f} (range {ratio.min():.3f}-{ratio.max():.3f}); "
          f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}; scores identical")
    if args.ids:
        ids_ab(est, A, word_off, n, old, ddp, args.repeat)
    if args.small_table:
        small = {k: table_for(old if k == "base" else arcs, keys[:20000],
                              est.coef_[:20000].view(np.int64)) for k in kern}
        small_times = alternate({k: (lambda f=f, k=k: f(A, word_off, 0, n, arcs.TEMPLATES,
                                                        small[k], ddp))
                                 for k, f in kern.items()}, args.repeat)
        med = {k: np.median(v) for k, v in small_times.items()}
        print("cache-resident table (20,000 features): " + ", ".join(
            f"{k} {v:.3f} CPU s" for k, v in med.items())
            + f" (median of {args.repeat}); the share of the real table's time that is work: "
            + ", ".join(f"{k} {med[k] / np.median(times[k]):.2f}" for k in kern))
    if args.predict:
        base_table = tables["base"]

        def base_kernel(A, word_off, a, b, T, table, ddp):   # the base's own table
            return old.arc_scores_direct(A, word_off, a, b, T, base_table, ddp)

        predict_ab(est, X, base_kernel, args.repeat)


def ids_ab(est, A, word_off, n, old, ddp, repeat):
    """``arc_feature_ids`` of this checkout and of the base (whose signature
    may lack ``dd_implies_plain``), alternating, CPU seconds."""
    import inspect
    ftable = est.vectorizer_._table
    keys = est.vectorizer_._keys_by_id()
    base_args = (A, word_off, 0, n, arcs.TEMPLATES,
                 table_for(old, keys, np.arange(len(keys), dtype=np.int64)))
    if len(inspect.signature(getattr(old.arc_feature_ids, "py_func",
                                     old.arc_feature_ids)).parameters) == 7:
        base_args += (ddp,)
    kern = {"base": lambda: old.arc_feature_ids(*base_args),
            "this": lambda: arcs.arc_feature_ids(A, word_off, 0, n, arcs.TEMPLATES, ftable, ddp)}
    outs = {k: f() for k, f in kern.items()}
    if not all(np.array_equal(x, y) for x, y in zip(outs["base"], outs["this"])):
        raise SystemExit("arc feature ids differ")
    n_ids = len(outs["this"][1])
    del outs
    load0 = os.getloadavg()[0]
    times = alternate(kern, repeat)
    ratio = np.asarray(times["base"]) / np.asarray(times["this"])
    print(f"arc_feature_ids ({n_ids} ids): base {np.median(times['base']):.3f}, this "
          f"{np.median(times['this']):.3f} CPU s (median); ratio base/this "
          f"{np.median(ratio):.3f} (range {ratio.min():.3f}-{ratio.max():.3f}); load "
          f"{load0:.1f} -> {os.getloadavg()[0]:.1f}; ids identical")


def predict_ab(est, X, base_kernel, repeat):
    """``est.predict(X)`` with this checkout's kernel and with ``base_kernel``
    (patched into ``feature_extraction._arcs``), n_jobs 1 and 2, alternating;
    prints sentences/s (median, range) and the per-round ratio."""
    from structlearn.feature_extraction import _arcs
    this_kernel = _arcs.arc_scores_direct
    kern = {"base": base_kernel, "this": this_kernel}
    for n_jobs in (1, 2):
        est.set_params(n_jobs=n_jobs)
        preds = {}
        for k, f in kern.items():
            _arcs.arc_scores_direct = f
            preds[k] = est.predict(X)   # warm: weight table, threads
        if not all(np.array_equal(a, b) for a, b in zip(preds["base"], preds["this"])):
            raise SystemExit("predictions differ")
        load0 = os.getloadavg()[0]
        def predict_with(f):
            _arcs.arc_scores_direct = f
            est.predict(X)

        times = alternate({k: (lambda f=f: predict_with(f)) for k, f in kern.items()},
                          repeat, clock=time.perf_counter)
        _arcs.arc_scores_direct = this_kernel
        rate = {k: len(X) / np.asarray(v) for k, v in times.items()}
        ratio = rate["this"] / rate["base"]
        print(f"predict n_jobs={n_jobs}: " + ", ".join(
            f"{k} {np.median(r):.0f} sentences/s ({r.min():.0f}-{r.max():.0f})"
            for k, r in rate.items())
            + f"; this/base {np.median(ratio):.2f} ({ratio.min():.2f}-{ratio.max():.2f}); "
            f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}; predictions identical")


if __name__ == "__main__":
    main()
