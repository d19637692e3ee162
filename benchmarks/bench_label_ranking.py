#!/usr/bin/env python
"""Label ranking benchmark: structlearn ``LabelRanker`` vs scikit-learn baselines.

All 16 label-ranking sets of ``/work/shared/data/label_ranking`` (KEBI /
scikit-lr), 10-fold CV (``KFold(10, shuffle=True, random_state=0)``), mean
Kendall's tau (``structlearn.metrics.kendall_tau``).  Every model of a data
set is fitted in the same process on the same folds.

Models
------
* structlearn ``LabelRanker`` in a pipeline
  ``StandardScaler -> Nystroem(rbf, gamma, n_components=min(n_train, 1000))
  -> LabelRanker(polytope, loss, alpha)`` for every applicable loss on the
  permutahedron and the Birkhoff polytope ("kernel" models), and
  ``StandardScaler -> LabelRanker`` ("linear" models) for the main losses.
* baselines: kNN averaging of the neighbours' rank vectors then sort
  (``KNeighborsRegressor``), Ridge on the rank vectors then sort (linear, and
  with the same Nystroem feature map).

Hyper-parameters are selected inside the training data only: 3-fold inner CV
on the training part of outer fold 0, the selection reused for all 10 folds
(see ``protocol_text`` below, written into the results file).

Usage
-----
    python benchmarks/bench_label_ranking.py --quick     # ~2 min smoke run, prints only
    python benchmarks/bench_label_ranking.py             # full run, writes results/
    python benchmarks/bench_label_ranking.py --datasets iris,glass --n-jobs 1
    python benchmarks/bench_label_ranking.py --only-bcfw --datasets iris,wine \
        --n-jobs 1 --out benchmarks/results/label_ranking_bcfw   # bcfw vs SGD rows

The full run writes ``benchmarks/results/label_ranking.md`` and ``.csv``.
BLAS is pinned to one thread per process (see ``_lr_common``).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _lr_common  # noqa: E402,F401  (pins BLAS threads before NumPy is imported)

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from _lr_common import (  # noqa: E402
    DATA_DIR, RESULTS_DIR, run_dataset, write_results, summarize,
    render_markdown, plan_for, git_version,
)

SLOW_FIRST = ["segment", "vowel", "pendigits", "elevators", "housing", "stock",
              "vehicle", "authorship", "wisconsin", "fried", "cpu", "calhousing",
              "bodyfat", "glass", "wine", "iris"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="4 small sets, 6+2 losses, small grid (~1-2 min); prints, writes nothing")
    p.add_argument("--datasets", default=None,
                   help="comma-separated subset of data sets (default: all 16)")
    p.add_argument("--n-jobs", type=int, default=2,
                   help="worker processes, one data set per task (default 2)")
    p.add_argument("--n-sub", type=int, default=None,
                   help="subsample size of each training fold of the big sets")
    p.add_argument("--out", default=None,
                   help="output prefix (default benchmarks/results/label_ranking; "
                        "with --quick nothing is written unless given)")
    p.add_argument("--raw", default=None,
                   help="also pickle the per-fold rows here (to re-render the tables)")
    p.add_argument("--parts-dir", default=None,
                   help="save each data set's raw result here as it finishes and "
                        "reuse the ones already there (resume an interrupted run)")
    p.add_argument("--note", default=None, help="a line added to the results header")
    p.add_argument("--bcfw", action="store_true",
                   help="add a bcfw twin (solver='bcfw', certified duality gap) of every "
                        "SGD-trained max-margin model (hinge, hinge-approx-slack, poslearn)")
    p.add_argument("--only-bcfw", action="store_true",
                   help="the bcfw twins, their SGD twins, the projection/squared anchors "
                        "and the baselines only (implies --bcfw; compute budget)")
    p.add_argument("--render", default=None,
                   help="only re-render the tables from a --raw pickle")
    args = p.parse_args(argv)
    if args.render:
        import pickle
        with open(args.render, "rb") as fh:
            rows, meta = pickle.load(fh)
        if args.note:
            meta["note"] = args.note
        md = render_markdown(summarize(rows), meta)
        out = args.out or os.path.join(RESULTS_DIR, "label_ranking")
        write_results(summarize(rows), md, out)
        print(f"wrote {out}.md and {out}.csv")
        return 0

    names = sorted(f[:-4] for f in os.listdir(DATA_DIR) if f.endswith(".csv"))
    if args.quick:
        names = ["iris", "wine", "glass", "housing"]
    if args.datasets:
        names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    plans = [plan_for(n, quick=args.quick, n_sub=args.n_sub, bcfw=args.bcfw,
                      only_bcfw=args.only_bcfw) for n in names]
    # slowest first (measured) for load balancing over the worker processes
    plans.sort(key=lambda pl: (SLOW_FIRST.index(pl["name"]) if pl["name"] in SLOW_FIRST
                               else len(SLOW_FIRST), -pl["cost"]))
    done = []
    if args.parts_dir:
        import pickle
        for pl in plans:
            f = os.path.join(args.parts_dir, pl["name"] + ".pkl")
            if os.path.exists(f):
                with open(f, "rb") as fh:
                    done.append(pickle.load(fh))
                print(f"[{pl['name']}] reusing {f}", file=sys.stderr)
        have = {r["name"] for r in done}
        plans = [pl for pl in plans if pl["name"] not in have]
        for pl in plans:
            pl["parts_dir"] = args.parts_dir

    git = git_version()   # the workers import structlearn right after this
    t0 = time.perf_counter()
    if args.n_jobs == 1 or len(plans) <= 1:
        results = [run_dataset(pl) for pl in plans]
    else:
        from joblib import Parallel, delayed
        results = Parallel(n_jobs=args.n_jobs, backend="loky")(
            delayed(run_dataset)(pl) for pl in plans)
    results = done + results
    wall = time.perf_counter() - t0 + sum(r["meta"].get("total_wall", 0) for r in done) / max(
        args.n_jobs, 1)
    rows = [r for res in results for r in res["rows"]]
    meta = {"wall": wall, "argv": " ".join(sys.argv), "quick": args.quick,
            "git": git, "note": args.note,
            "datasets": {res["name"]: res["meta"] for res in results}}
    if args.raw:
        import pickle
        with open(args.raw, "wb") as fh:
            pickle.dump((rows, meta), fh)
    summary = summarize(rows)
    md = render_markdown(summary, meta)
    out = args.out
    if out is None and not args.quick:
        out = os.path.join(RESULTS_DIR, "label_ranking")
    if out:
        write_results(summary, md, out)
        print(f"wrote {out}.md and {out}.csv")
    print(md)
    print(f"total wall time {wall:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
