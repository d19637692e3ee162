"""SparseMAP solvers side by side: active set vs conditional-gradient variants.

The question of Niculae et al. (2018), Fig. 2: for a fixed budget of MAP
oracle calls (iterations), how close does each solver get to the optimum
of ``max_{mu in M} <theta, mu> - 1/2 ||mu||^2`` and how sparse is its
solution?  Random scores on the permutahedron, the Birkhoff polytope and the
knapsack polytope; the optimum is the converged active-set solution.

    python benchmarks/micro/bench_sparsemap_solvers.py [--quick]

Writes ``benchmarks/results/sparsemap_solvers.md`` (``--quick``: prints only).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import common_parser, out_stem, parse_args, write_text  # noqa: E402

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from structlearn.structures import Birkhoff, Knapsack, Permutahedron  # noqa: E402

METHODS = ["active-set", "vanilla", "away-step", "pairwise"]


def objective(theta, mu):
    return float(theta @ mu - 0.5 * mu @ mu)


def run(quick):
    rng = np.random.RandomState(0)
    structures = [("permutahedron k=10", Permutahedron(10)),
                  ("Birkhoff k=8", Birkhoff(8)),
                  ("knapsack k=20, 3..8 labels", Knapsack(20, 3, 8))]
    budgets = [5, 20, 100] if quick else [5, 10, 20, 50, 100, 500]
    n_inst = 5 if quick else 20
    rows = []
    for sname, st in structures:
        thetas = rng.randn(n_inst, st.n_parts)
        opt = [objective(t, st.sparsemap_support(t, max_iter=5000, tol=1e-12)[0]) for t in thetas]
        for method in METHODS:
            for it in budgets:
                gaps, sizes, times = [], [], []
                for t, f_opt in zip(thetas, opt):
                    st.sparsemap_support(t, method=method, max_iter=it)  # compile
                    t0 = time.perf_counter()
                    mu, V, w, n_iter = st.sparsemap_support(t, method=method, max_iter=it,
                                                            tol=1e-12)
                    times.append(time.perf_counter() - t0)
                    gaps.append(max(f_opt - objective(t, mu), 0.0) / max(abs(f_opt), 1.0))
                    sizes.append(len(w))
                rows.append((sname, method, it, float(np.mean(gaps)), float(np.max(gaps)),
                             float(np.mean(sizes)), 1e6 * float(np.mean(times))))
    return rows


def to_markdown(rows):
    out = ["| structure | solver | max iterations | mean rel. gap | max rel. gap | "
           "support size | time (us) |", "|---|---|---:|---:|---:|---:|---:|"]
    for s, m, it, g, gm, sz, t in rows:
        out.append(f"| {s} | {m} | {it} | {g:.2e} | {gm:.2e} | {sz:.1f} | {t:.0f} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="--quick: 3 budgets, 5 instances per structure",
        parents=[common_parser("quick", "out", "no_write", out="sparsemap_solvers")])
    args = parse_args(ap, argv)
    rows = run(args.quick)
    md = to_markdown(rows)
    print(md)
    stem = out_stem(args, "sparsemap_solvers")
    if stem:
        path = write_text(
            stem, "# SparseMAP solvers: active set vs conditional gradient\n\n"
            "Command: `python benchmarks/micro/bench_sparsemap_solvers.py`. Relative gap = "
            "(f* - f) / max(|f*|, 1) to the converged active-set optimum; support = "
            "number of structures with positive weight.\n\n" + md + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
