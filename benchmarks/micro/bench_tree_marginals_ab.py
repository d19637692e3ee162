"""Non-projective tree marginals of a batch (``kernels.tree.marginals_batch``,
the CRF parser's forward-backward): this checkout vs another, side by side.

Each timing runs in a fresh interpreter with ``PYTHONPATH`` set to one
checkout and a warm Numba cache of its own (a first untimed round fills it);
the two alternate over ``--repeat`` rounds.  A run scores ``--n`` random
sentences of 5-40 words (scores ~ N(0, 3^2), all in the linear-space
elimination) and reports the best of 7 calls.  Prints the median time
ratio base / this (> 1: this checkout is faster) and its range.

    python benchmarks/micro/bench_tree_marginals_ab.py --base DIR --repeat 5

(DIR e.g. ``git archive b1c1ff9 | tar -x -C DIR``.)
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
import time, numpy as np
from structlearn.kernels.tree import marginals_batch, tree_arc_offsets
rng = np.random.default_rng(0)
lengths = rng.integers(5, 40, size={n})
word_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
arc_off = tree_arc_offsets(word_off)
theta = rng.normal(scale=3.0, size=arc_off[-1])
marginals_batch(theta, arc_off, word_off, True, False)
ts = []
for _ in range(7):
    t0 = time.perf_counter()
    marginals_batch(theta, arc_off, word_off, True, False)
    ts.append(time.perf_counter() - t0)
print(min(ts))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, metavar="DIR")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sides = {"base": args.base, "this": str(ROOT)}
    times = {k: [] for k in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat + 1):
            for k in (("base", "this") if r % 2 == 0 else ("this", "base")):
                env = dict(os.environ, PYTHONPATH=sides[k],
                           NUMBA_CACHE_DIR=os.path.join(tmp, k))
                out = subprocess.run([sys.executable, "-c", _RUN.format(n=args.n)], env=env,
                                     cwd=sides[k], capture_output=True, text=True, check=True)
                if r:   # round 0 fills the caches
                    times[k].append(float(out.stdout.split()[-1]))
    ratio = [b / t for b, t in zip(times["base"], times["this"])]
    print(f"{args.n} sentences: base {statistics.median(times['base']):.4f} s, this "
          f"{statistics.median(times['this']):.4f} s (median of {args.repeat}); ratio base/this "
          f"{statistics.median(ratio):.3f} (range {min(ratio):.3f}-{max(ratio):.3f}); "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
