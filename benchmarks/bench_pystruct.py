"""BCFW against pystruct's FrankWolfeSSVM and OneSlackSSVM on a small chain task.

pystruct (0.3.2, unmaintained) does not install on current Python and
NumPy: it needs NumPy < 1.24, setuptools < 58 and Cython sources that its
sdist does not ship.  It can be built by hand in an isolated environment
(an older NumPy is fine there); pass that environment's interpreter with
``--pystruct-python``.  This script then runs pystruct in a subprocess of
that interpreter on the same data, written to a temporary ``.npz`` file,
and structlearn in this process, one after the other on the same machine.

What built here (2026-11, Python 3.11): a venv with NumPy 1.23.5 (the
``np.float``-style aliases pystruct uses were removed in 1.24), Cython < 3,
setuptools < 58 (``use_2to3``), SciPy < 1.12, scikit-learn < 1.4 and
cvxopt; pystruct's 0.3.2 sdist with its two Cython sources
(``src/utils.pyx``, ``pystruct/inference/_viterbi.pyx``) added from the
project's repository and cythonized again (the shipped C files predate
Python 3.11), ``use_2to3`` removed from its ``setup.py``, and its
``sklearn.externals.joblib`` imports pointed at ``joblib``.  Nothing of
pystruct is part of this repository.

Task: the first ``--n`` sentences of CoNLL-2000 (data folder:
``$STRUCTLEARN_BENCH_DATA`` or ``--data``, default ``../shared/data``),
chunk tags, dense one-hot features of the POS tags at offsets -1, 0, +1.
The models are made identical: structlearn's ``SequenceTagger`` without
intercept and with every (feature, tag) weight (``feature_support='all'``)
scores unaries, transitions, start and end; pystruct's ``ChainCRF``
(directed) scores unaries and transitions, so it gets two more feature
columns, "first token" and "last token", whose weights are the start and end
scores.  Both penalise every weight and use the Hamming cost, and
pystruct's objective ``1/2 ||w||^2 + C sum_i loss_i`` is structlearn's
``alpha/2 ||w||^2 + mean_i loss_i`` times ``C n`` at ``alpha = 1/(C n)``.
Objectives below are in pystruct's units.

Usage::

    python benchmarks/bench_pystruct.py --pystruct-python /path/to/venv/bin/python
"""

import sys
from pathlib import Path

# also imported by the worker in pystruct's environment: _common needs only
# NumPy and scikit-learn at import time
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    bcfw_trace, common_parser, machine_info, md_table, out_stem, parse_args, read_conll2000,
    write_text)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def worker(path, C, max_iter):
    """Run in pystruct's environment: FrankWolfeSSVM then OneSlackSSVM."""
    import warnings
    warnings.simplefilter("ignore")
    from pystruct.learners import FrankWolfeSSVM, OneSlackSSVM
    from pystruct.models import ChainCRF

    d = np.load(path)
    X, y, off = d["X"], d["y"], d["off"]
    n_states = int(d["n_states"])
    seqs, labels = [], []
    for a, b in zip(off[:-1], off[1:]):
        x = X[a:b]
        edge = np.zeros((b - a, 2))
        edge[0, 0] = 1.0
        edge[-1, 1] = 1.0
        seqs.append(np.hstack([x, edge]))
        labels.append(y[a:b])
    out = {}
    model = ChainCRF(n_states=n_states, directed=True)
    fw = FrankWolfeSSVM(model, C=C, max_iter=max_iter, tol=0.0, check_dual_every=1)
    t = time.perf_counter()
    fw.fit(seqs, labels)
    out["fw_time"] = time.perf_counter() - t
    out["fw_primal"] = [float(v) for v in fw.primal_objective_curve_]
    out["fw_dual"] = [float(v) for v in fw.objective_curve_]
    out["fw_timestamps"] = [float(v) for v in getattr(fw, "timestamps_", [])]
    model = ChainCRF(n_states=n_states, directed=True)
    one = OneSlackSSVM(model, C=C, tol=1e-6, max_iter=100000)
    t = time.perf_counter()
    one.fit(seqs, labels)
    out["oneslack_time"] = time.perf_counter() - t
    out["oneslack_primal"] = float(one.primal_objective_curve_[-1])
    out["oneslack_bound"] = float(one.objective_curve_[-1])
    print(json.dumps(out))


def features(n):
    sents = read_conll2000("train")[:n]
    pos = sorted({p for s in sents for _, p, _ in s})
    tags = sorted({c for s in sents for _, _, c in s})
    pi = {p: k for k, p in enumerate(pos)}
    ti = {c: k for k, c in enumerate(tags)}
    P = len(pos)
    X, y, off = [], [], [0]
    for s in sents:
        L = len(s)
        x = np.zeros((L, 3 * P))
        for t in range(L):
            for j, o in enumerate((-1, 0, 1)):
                if 0 <= t + o < L:
                    x[t, j * P + pi[s[t + o][1]]] = 1.0
        X.append(x)
        y.append([ti[c] for _, _, c in s])
        off.append(off[-1] + L)
    return X, y, np.asarray(off), len(tags)


def first_reach(values, times, level):
    for v, t in zip(values, times):
        if v <= level:
            return t
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[common_parser("out", "no_write", "data", out="bcfw_pystruct")])
    ap.add_argument("--pystruct-python", required=False)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--alpha-n", type=float, default=2.0,
                    help="alpha * n (2: CRFsuite's c2 = 1, the CoNLL benchmark's setting)")
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parse_args(ap, argv)
    if args.worker:
        worker(args.worker[0], float(args.worker[1]), int(args.worker[2]))
        return
    if not args.pystruct_python:
        ap.error("--pystruct-python is required (an interpreter with pystruct)")
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from structlearn import SequenceTagger

    X, y, off, K = features(args.n)
    n = len(X)
    alpha = args.alpha_n / n
    C = 1.0 / (alpha * n)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=np.vstack(X), y=np.concatenate(y), off=off, n_states=K)
        res = subprocess.run([args.pystruct_python, __file__, "--worker", path, str(C),
                              str(args.epochs)], capture_output=True, text=True,
                             env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
        if res.returncode:
            sys.exit(res.stderr)
        ps = json.loads(res.stdout.strip().splitlines()[-1])

    est = SequenceTagger(loss="hinge", solver="bcfw", alpha=alpha, fit_intercept=False,
                         feature_support="all", tol=1e-4, max_iter=args.epochs, n_jobs=1,
                         random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SequenceTagger(loss="hinge", solver="bcfw", max_iter=1).fit(X[:5], y[:5])  # compile
        with bcfw_trace() as trace:
            t = time.perf_counter()
            est.fit(X, y)
            t_ours = time.perf_counter() - t
    scale = C * n
    opt = ps["oneslack_primal"]
    rows = []
    fw_p, fw_d = np.array(ps["fw_primal"]), np.array(ps["fw_dual"])
    fw_rel = (fw_p - fw_d) / fw_p
    fw_t = ps["fw_timestamps"] or list(np.linspace(0, ps["fw_time"], len(fw_rel) + 1)[1:])
    fw_t = list(np.asarray(fw_t[-len(fw_rel):]) - 0.0)
    our_rel = [r for _, _, _, r in trace]
    our_t = [s for _, s, _, _ in trace]
    for level in (1e-1, 1e-2, 1e-3, 1e-4):
        a = first_reach(our_rel, our_t, level)
        b = first_reach(list(fw_rel), fw_t, level)
        rows.append([f"{level:g}", "-" if a is None else f"{a:.2f}",
                     "-" if b is None else f"{b:.2f}",
                     "-" if a is None or b is None else f"{a / b:.2f}"])
    text = (
        "# BCFW (structlearn) vs pystruct's FrankWolfeSSVM / OneSlackSSVM\n\n"
        f"`python benchmarks/bench_pystruct.py --pystruct-python ... --n {args.n} "
        f"--alpha-n {args.alpha_n:g} --epochs {args.epochs}`\n\n{machine_info()}\n\n"
        f"CoNLL-2000, first {n} sentences, {sum(len(v) for v in y)} tokens, {K} tags, "
        f"{X[0].shape[1]} dense POS features; C = {C:g} (alpha = {alpha:.3g}); one "
        f"thread each.\n\n"
        f"- pystruct OneSlackSSVM (tol 1e-6, the reference optimum): primal "
        f"{opt:.6f}, lower bound {ps['oneslack_bound']:.6f}, {ps['oneslack_time']:.1f} s\n"
        f"- pystruct FrankWolfeSSVM ({len(fw_rel)} passes, averaging): primal "
        f"{fw_p[-1]:.6f}, relative gap {fw_rel[-1]:.2e}, {ps['fw_time']:.1f} s\n"
        f"- structlearn bcfw ({est.n_iter_} epochs, tol 1e-4): objective "
        f"{est.objective_ * scale:.6f}, relative gap {est.duality_gap_:.2e}, "
        f"{t_ours:.1f} s\n\n"
        "Seconds to reach a certified relative gap:\n\n"
        + md_table(["relative gap", "structlearn bcfw (s)", "pystruct FW (s)", "ratio"],
                   rows) + "\n")
    stem = out_stem(args, "bcfw_pystruct")
    if stem:
        write_text(stem, text)
    print(text)


if __name__ == "__main__":
    main()
