"""Parser predict with the weight table vs the fused kernel that read the
feature table and ``coef_`` (commit 50e5ccc), side by side in one process.

The older kernel (``structlearn/kernels/arcs.py`` at ``--base``, default
50e5ccc) is read with ``git show`` and imported under another name; it is
given a feature table (key -> column id) of the same slot layout.  Both run
``predict`` end to end on UD English EWT dev (token attributes, arc scores,
MST) with ``n_jobs`` 1 and 2, alternating, ``--repeat`` rounds; the
predictions are checked identical.  ``--model``: a pickled fitted
DependencyParser (e.g. a perceptron, 3 epochs on EWT train).

Usage::

    python benchmarks/micro/bench_weight_table.py --model /work/parse_model.pkl --repeat 9
"""

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import (  # noqa: E402
    arcs_kernels_at, ewt_parsing_xy, machine_info, md_table, write_text)

import numpy as np  # noqa: E402

from structlearn.kernels.arcs import TEMPLATES  # noqa: E402
from structlearn.solvers import thread_map  # noqa: E402
from structlearn.structures.tree import Tree  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--base", default="50e5ccc")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/parsing_weight_table"))
    args = ap.parse_args()
    old = arcs_kernels_at(args.base)
    with open(args.model, "rb") as fh:
        est = pickle.load(fh)
    X, _ = ewt_parsing_xy("dev")
    keys = est.vectorizer_._keys
    cap = 1 << int(np.ceil(np.log2(max(16, 2 * len(keys)))))
    table = np.zeros(2 * cap, dtype=np.int64)   # the base's layout (slots, linear probing)
    old.fill_table(table, keys, np.arange(len(keys), dtype=np.int64))

    def base_predict(est, X):
        A, word_off, ranges, n_threads = est._scored(X)
        coef = np.ascontiguousarray(est.coef_)

        def run(ab):
            a, b = ab
            st = Tree(word_off[a:b + 1] - word_off[a], single_root=est.single_root,
                      projective=est.projective)
            return st.argmax(old.arc_scores_direct(A, word_off, a, b, TEMPLATES, table, coef,
                                                   True))
        return est._split(word_off, thread_map(run, ranges, n_threads))

    est.set_params(n_jobs=1)
    base_predict(est, X[:20])
    est.predict(X[:20])
    if not np.array_equal(np.concatenate(base_predict(est, X)), np.concatenate(est.predict(X))):
        raise SystemExit("predictions differ")
    load0 = os.getloadavg()[0]
    times = {}
    for _ in range(args.repeat):
        for nj in (1, 2):
            est.set_params(n_jobs=nj)
            for name, f in ((f"feature table + coef_ ({args.base})", base_predict),
                            ("weight table (this checkout)", lambda e, x: e.predict(x))):
                t0 = time.perf_counter()
                f(est, X)
                times.setdefault((name, nj), []).append(time.perf_counter() - t0)
    rows = []
    for (name, nj), ts in times.items():
        ts = np.asarray(ts)
        ratio = np.asarray(times[(f"feature table + coef_ ({args.base})", nj)]) / ts
        sps = len(X) / ts
        rows.append([name, nj, round(float(np.median(sps))),
                     f"{round(float(sps.min()))}-{round(float(sps.max()))}",
                     f"{np.median(ratio):.2f} ({ratio.min():.2f}-{ratio.max():.2f})"])
        print(rows[-1], flush=True)
    text = ["# Parser predict: weight table vs feature table + coef_", "",
            f"Command: `python benchmarks/micro/bench_weight_table.py --model {args.model} "
            f"--repeat {args.repeat}`.  EWT dev, {len(X)} sentences, end to end, "
            f"alternating in one process; predictions identical (checked).  Load average "
            f"{load0:.1f} at start, {os.getloadavg()[0]:.1f} at the end, on "
            f"{os.cpu_count()} cores (shared).", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(["kernel", "n_jobs", "sentences/s (median)", "range",
                      "speedup vs base (median, range)"], rows), ""]
    print(f"wrote {write_text(args.out, chr(10).join(text))}")


if __name__ == "__main__":
    main()
