"""Thread scaling of one CRF training evaluation on CoNLL-2000, on an idle
and on a loaded machine.

The CRF fit spends nearly all its time in the chain problem's
``value_and_grad`` (one call per L-BFGS evaluation), which splits the
sentences' chunks over ``n_jobs`` threads as ``TASKS_PER_THREAD`` tasks
per thread (contiguous runs of chunks, taken by the threads in turn).  This
script times that call with 1 thread and with 2 threads, with one task per
thread (a static split) and with ``--tasks`` tasks per thread (default 4
and 8; the module constant set for the call), alternately at the same
weights, first as the machine is, then while one CPU-bound process of our
own runs (``python -c "while True: pass"``, stopped at the end).  The table gives
the median and spread (min-max) over the repeats and the ratio of medians
to 1 thread in the same phase (side by side, so the ratio holds on a noisy
machine; absolute times do not).  The two must agree (checked).

Usage::

    python benchmarks/micro/bench_crf_threads.py [--repeat 9] [--n-train N]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import SequenceTagger  # noqa: E402
from structlearn.estimators.sequence import chain_problem  # noqa: E402
from structlearn.losses import CRF  # noqa: E402
from structlearn.solvers import _ragged  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("repeat", "out", "no_write", "data", repeat=9,
                               out="crf_threads")])
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--tasks", default="4,8",
                    help="tasks per thread to time beside one (comma-separated)")
    args = parse_args(ap, argv)
    X, y = conll2000_xy("train")
    if args.n_train:
        X, y = X[:args.n_train], y[:args.n_train]
    est = SequenceTagger(loss="crf")
    vec, tokens, tok_off, y_int, classes, sup_ptr, sup_label, d, _, _, _ = \
        est._prepare(X, y, CRF(), False)
    K = len(classes)
    probs = {nj: chain_problem(tokens, tok_off, y_int, K, sup_ptr, sup_label, CRF(), True, nj)
             for nj in (1, 2)}
    variants = [("1 thread", 1, 1), ("2 threads, 1 task each", 2, 1)] + [
        (f"2 threads, {t} tasks each", 2, t) for t in map(int, args.tasks.split(","))]
    z = np.random.default_rng(0).normal(scale=0.3, size=probs[1].n_params)

    v1, g1 = probs[1].value_and_grad(z)
    for _, nj, tasks in variants[1:]:
        _ragged.TASKS_PER_THREAD = tasks
        v2, g2 = probs[nj].value_and_grad(z)
        np.testing.assert_allclose(v2, v1, rtol=1e-12)
        np.testing.assert_allclose(g2, g1, rtol=1e-10, atol=1e-10)
    rows = []
    for phase in ("as is", "one busy process"):
        busy = None
        if phase != "as is":
            busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(1.0)
        try:
            load = os.getloadavg()[0]
            times = {name: [] for name, _, _ in variants}
            for r in range(args.repeat):
                for name, nj, tasks in (variants if r % 2 == 0 else variants[::-1]):
                    _ragged.TASKS_PER_THREAD = tasks
                    t0 = time.perf_counter()
                    probs[nj].value_and_grad(z)
                    times[name].append(time.perf_counter() - t0)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
        base = float(np.median(times["1 thread"]))
        for name, t in times.items():
            med = float(np.median(t))
            rows.append([phase, f"{load:.1f}", name, f"{med:.3f}", f"{min(t):.3f}-{max(t):.3f}",
                         f"{med / base:.2f}"])
            print(rows[-1], flush=True)
    text = ["# Thread scaling of one CRF evaluation on CoNLL-2000", "",
            f"Command: `python benchmarks/micro/bench_crf_threads.py --repeat {args.repeat}"
            + (f" --n-train {args.n_train}" if args.n_train else "") + "`; "
            f"{len(y_int)} tokens, {len(X)} sentences, {len(probs[2].chunks)} chunks, "
            f"{K} tags.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(["phase", "load avg (1 min)", "variant", "median (s)", "min-max (s)",
                      "median / 1 thread"], rows), ""]
    stem = out_stem(args, "crf_threads")
    if stem:
        path = write_text(stem, "\n".join(text))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
