"""Random reads of a large array: what a memory miss costs on this machine.

Reads ``--n`` random int64 entries of arrays of 1 MB to 1 GB in a Numba
loop, with the read ``D`` places ahead prefetched (``D = 0``: none), and
prints the CPU nanoseconds per read.  The floor for a kernel whose lookups
miss the caches (the parser's weight table is 256 MB on EWT): compare its
time per lookup with these.

    python benchmarks/micro/bench_random_reads.py
"""

import argparse
import time

import numpy as np
from numba import njit

from structlearn.kernels._math import prefetch


@njit(cache=False)
def gather(tab, idx, D):
    s = 0
    n = len(idx)
    for j in range(n):
        if D > 0 and j + D < n:
            prefetch(tab, idx[j + D])
        s += tab[idx[j]]
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    for mb in (1, 16, 64, 256, 1024):
        tab = np.ones(mb * 2**20 // 8, dtype=np.int64)
        idx = rng.integers(0, len(tab), args.n)
        row = []
        for D in (0, 8, 32):
            gather(tab, idx[:1000], D)
            t0 = time.process_time()
            gather(tab, idx, D)
            row.append(f"D={D}: {(time.process_time() - t0) / args.n * 1e9:.1f}")
        print(f"{mb:5d} MB  " + ", ".join(row) + " ns per read")


if __name__ == "__main__":
    main()
