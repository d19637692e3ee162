"""The Euclidean projection onto the chain polytope on long chains: how many
active-set iterations an exact solve needs, and how far the default cap
(``max_iter = 1000``) leaves it.

One chain of ``L`` tokens (CoNLL-2000 test sentences joined) is scored by
a CRF ``SequenceTagger`` trained on the first ``--n-train`` training
sentences; the projection (SparseMAP with every part penalised, what
``loss='projection'`` computes) is solved by
``kernels.active_set.sparsemap_active_set`` once with the default cap and
once with ``--max-iter`` (large enough to converge), side by side, and by
the library's path (``Chain.project``: from ``PROJECTION_PIECES_MIN_LENGTH``
tokens, the coupled pieces of ``kernels/chain_projection.py``).  Reported
per length: iterations, support size and CPU seconds of the active set
solves and of the library's, and the largest differences from the
converged active set (``--no-exact`` skips it beyond 1,000 tokens, where
it runs for minutes).

    python benchmarks/micro/bench_projection_length.py --lengths 200,1000,2000
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, conll2000_xy, machine_info, md_table, parse_args, report)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import SequenceTagger  # noqa: E402
from structlearn.kernels.active_set import sparsemap_active_set  # noqa: E402
from structlearn.structures import Chain  # noqa: E402

DEFAULT_CAP = 1000


def chain_scores(n_train, max_len):
    """The CRF's scores of one joined test chain (flat chain layout) and K."""
    X, y = conll2000_xy("train")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SequenceTagger(loss="crf", max_iter=15).fit(X[:n_train], y[:n_train])
    Xt, _ = conll2000_xy("test")
    toks = []
    for xs in Xt:
        toks.extend(xs)
        if len(toks) >= max_len:
            break
    return est, toks


def solve(theta, K, L, max_iter):
    ch = Chain(K, np.array([0, L]))
    oracle, _ = ch._oracles()
    params, off = ch._oracle_params()
    c0 = time.process_time()
    mu, _, w, n_iter = sparsemap_active_set(theta, len(theta), oracle,
                                            np.ascontiguousarray(params[off[0]:off[1]]),
                                            int(max_iter), 1e-9)
    return mu, int(n_iter), int(np.sum(w > 0)), time.process_time() - c0


def library(theta, K, L):
    """``Chain.project`` (the library's path) and its CPU seconds."""
    c0 = time.process_time()
    mu = Chain(K, np.array([0, L])).project(theta)
    return mu, time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 parents=[common_parser("out", "no_write")])
    ap.add_argument("--lengths", default="200,1000,2000")
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--max-iter", type=int, default=50000)
    ap.add_argument("--no-exact", action="store_true",
                    help="skip the converged active set above 1,000 tokens")
    args = parse_args(ap, argv)
    lengths = [int(v) for v in args.lengths.split(",")]
    est, toks = chain_scores(args.n_train, max(lengths))
    K = len(est.classes_)
    solve(np.zeros(10 * K + K * K + 2 * K), K, 10, 10)   # compilation, untimed
    scores = {}
    for L in sorted(set(lengths) | {450}):
        U = est.decision_function([toks[:L]])[0]
        scores[L] = np.concatenate([np.ravel(U), est.transition_.ravel(), est.start_,
                                    est.end_]).astype(np.float64)
    library(scores[450], K, 450)   # compilation, untimed
    rows = []
    for L in lengths:
        theta = scores[L]
        mu_cap, it_cap, sup_cap, t_cap = solve(theta, K, L, DEFAULT_CAP)
        mu_lib, t_lib = library(theta, K, L)
        if args.no_exact and L > 1000:
            row = [L, "", "", "", it_cap, f"{t_cap:.2f}", "", "", f"{t_lib:.2f}", ""]
        else:
            mu, it, sup, t = solve(theta, K, L, args.max_iter)
            row = [L, it, sup, f"{t:.2f}", it_cap, f"{t_cap:.2f}",
                   f"{np.abs(mu - mu_cap).max():.1e}", "yes" if it < args.max_iter else "NO",
                   f"{t_lib:.2f}", f"{np.abs(mu - mu_lib).max():.1e}"]
        print(row, flush=True)
        rows.append(row)
    table = md_table(["tokens", "iterations", "support", "CPU (s)",
                      f"iterations, cap {DEFAULT_CAP}", "CPU capped (s)",
                      "max abs. difference, capped", "converged", "library CPU (s)",
                      "max abs. difference, library"], rows)
    info = ", ".join(f"{k} {v}" for k, v in machine_info().items())
    text = "\n".join([
        "# The chain projection on long chains: exact vs capped active set", "",
        f"Command: `{command_line(argv)}`", "", f"Machine: {info}", "", table, ""])
    report(args, text, "projection_length")


if __name__ == "__main__":
    main()
