"""How close approximate slack scaling's violator comes to the exact one.

The approximate search returns the largest slack hinge ``L(y)(1 - s(y_i) +
s(y))`` among the labelings it meets, a lower bound of the exact slack loss.
This script sums both over many rows and reports the ratio, the share of
rows where the exact violator was found, and the oracle calls per row:

* fixed-size structures (small enough to enumerate every labeling) at
  random scores with the truth boosted, three scales;
* chains: the mini-batches the oracle sees during an SGD fit of
  ``SequenceTagger(loss='hinge-approx-slack', solver='sgd', max_iter=10)``
  on ``--n-seq`` CoNLL-2000 sentences (every ``--every``-th call
  captured), against the exact ``O(L^2 K^2)`` slack violator.

Run it under two checkouts to compare searches (the kernels it calls have
the same names and return the same values before and after the line search
by breakpoints)::

    python benchmarks/micro/bench_aslack_quality.py
    PYTHONPATH=<other checkout> python benchmarks/micro/bench_aslack_quality.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import structlearn  # noqa: E402
import structlearn.structures.chain as chain_module  # noqa: E402
from structlearn import SequenceTagger  # noqa: E402
from structlearn.kernels.chain import score_batch, slack_violator_batch  # noqa: E402
from structlearn.structures import (Birkhoff, Knapsack, OrderSimplex, Permutahedron,  # noqa: E402
                                    UnitCube)

warnings.filterwarnings("ignore")


def fixed_rows(n):
    rows = []
    cases = {"permutahedron k=5": Permutahedron(5), "permutahedron k=6": Permutahedron(6),
             "Birkhoff k=5": Birkhoff(5), "unit cube k=8": UnitCube(8),
             "order simplex k=8": OrderSimplex(8), "knapsack k=8, 1..3": Knapsack(8, 1, 3)}
    for name, st in cases.items():
        rng = np.random.default_rng(0)
        Y_all = st.all_outputs()
        Phi_all = st.encode(Y_all)
        for scale in (0.3, 1.0, 3.0):
            Y = Y_all[rng.integers(0, len(Y_all), n)]
            Phi = st.encode(Y)
            theta = scale * rng.normal(size=(n, st.n_parts)) + rng.random((n, 1)) * Phi
            value, _ = st.approx_slack_value_and_grad(theta, Y, 12, 1e-3)
            calls = st._approx_slack_kernel(theta, Y, 12, 1e-3)[-1]
            C = st.cost_vector(Phi)
            cost = (Phi_all @ C.T).T - np.einsum("ij,ij->i", Phi, C)[:, None]
            s_true = np.einsum("ij,ij->i", theta, Phi)
            exact = np.max(np.maximum(cost * (1.0 - s_true[:, None] + theta @ Phi_all.T),
                                      0.0), axis=1)
            rows.append([f"{name}, scale {scale}", n, f"{value.sum() / exact.sum():.4f}",
                         f"{np.mean(value >= exact - 1e-9 * (1 + exact)):.3f}",
                         f"{calls / n:.2f}"])
            print(rows[-1], flush=True)
    return rows


def chain_rows(n_seq, every):
    captured = []
    kernel = chain_module.approx_slack_batch

    def capture(*a):
        captured.append(tuple(np.array(x, copy=True) if isinstance(x, np.ndarray) else x
                              for x in a))
        return kernel(*a)

    X, y = conll2000_xy("train")
    chain_module.approx_slack_batch = capture
    try:
        SequenceTagger(loss="hinge-approx-slack", solver="sgd", max_iter=10,
                       random_state=0).fit(X[:n_seq], y[:n_seq])
    finally:
        chain_module.approx_slack_batch = kernel
    got = exact = calls = 0.0
    rows = found = 0
    for raw, tor, yy, po, to, K, n_search, eps in captured[::every]:
        best, c = kernel(raw, tor, yy, po, to, K, n_search, eps)
        y_ex = slack_violator_batch(raw, yy, po, to, K)
        s_true = score_batch(raw, yy, po, to, K)

        def hinge(tags):
            wrong = np.add.reduceat((tags != yy).astype(float), to[:-1])
            return wrong * np.maximum(1.0 - s_true + score_batch(raw, tags, po, to, K), 0.0)

        g, e = hinge(best), hinge(y_ex)
        got += g.sum()
        exact += e.sum()
        found += int(np.sum(g >= e - 1e-9 * (1 + e)))
        calls += c
        rows += len(to) - 1
    return [[f"chain, CoNLL-2000 {n_seq} sent., during an SGD fit (every {every}th "
             f"oracle batch)", rows, f"{got / exact:.4f}", f"{found / rows:.3f}",
             f"{calls / rows:.2f}"]]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("out", "no_write", "data", out="aslack_quality")])
    ap.add_argument("--n", type=int, default=400, help="rows per fixed-size case")
    ap.add_argument("--n-seq", type=int, default=2000, help="CoNLL-2000 training sentences")
    ap.add_argument("--every", type=int, default=20, help="chain: every n-th oracle batch")
    args = parse_args(ap, argv)
    rows = fixed_rows(args.n) + chain_rows(args.n_seq, args.every)
    print(rows[-1], flush=True)
    cmd = "python benchmarks/micro/bench_aslack_quality.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    table = md_table(["structure, scores", "rows", "approx / exact slack loss (sum)",
                      "rows with the exact violator", "oracle calls per row"], rows)
    text = ["# Approximate slack scaling: violator against the exact one", "",
            f"Command: `{cmd.strip()}`", "", f"structlearn from {structlearn.__file__}", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            table, ""]
    stem = out_stem(args, "aslack_quality")
    if stem:
        print(f"wrote {write_text(stem, chr(10).join(text))}")


if __name__ == "__main__":
    main()
