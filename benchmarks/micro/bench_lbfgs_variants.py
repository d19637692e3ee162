"""Why does our L-BFGS take more iterations than CRFsuite's on the CRF?

Captures the CRF training problem of :class:`structlearn.SequenceTagger`
on the first N CoNLL-2000 sentences (CRFsuite's ``c2 = 1``: ``alpha = 2 /
N``) and runs :func:`structlearn.solvers.lbfgs` on it with CRFsuite's
stopping rule (``period=10``, ``tol=1e-5``) for a few variants: the history
size ``m`` (CRFsuite: 6, ours: 10) and the model with and without the
unpenalised per-tag bias (CRFsuite's model has none).  Every objective
evaluation is recorded; ``f*`` is the best objective of a long reference
run (``tol=1e-9``, ``m=20``) of the same model, and the table gives, per
variant, the iterations and evaluations to the stop, the final relative gap
to ``f*`` and the evaluations needed to reach ``f* (1 + eps)``.  The
counts are deterministic (no timing).

Usage::

    python benchmarks/micro/bench_lbfgs_variants.py [--n-train 3000]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import SequenceTagger  # noqa: E402
import structlearn.estimators._base as base  # noqa: E402
from structlearn.solvers import lbfgs  # noqa: E402

EPS = (1e-3, 1e-4, 3e-5, 1e-5)


class _Captured(Exception):
    pass


def capture(X, y, fit_intercept):
    """The (problem, alpha, z0) a CRF fit would hand to L-BFGS."""
    got = {}

    def grab(problem, alpha, z0, **kw):
        got.update(problem=problem, alpha=alpha, z0=np.array(z0))
        raise _Captured

    real, base.lbfgs = base.lbfgs, grab
    try:
        SequenceTagger(loss="crf", alpha=2.0 / len(X), fit_intercept=fit_intercept).fit(X, y)
    except _Captured:
        pass
    finally:
        base.lbfgs = real
    return got["problem"], got["alpha"], got["z0"]


def run(problem, alpha, z0, **kw):
    """lbfgs on the problem; its iterations and every evaluation's objective."""
    trace = []
    vg = problem.value_and_grad
    pen = problem.penalized

    def counted(z, idx=None):
        vals, g = vg(z, idx)
        trace.append(vals.mean() + 0.5 * alpha * float(z[pen] @ z[pen]))
        return vals, g

    problem.value_and_grad = counted
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, it, _, _ = lbfgs(problem, alpha, z0.copy(), return_gap=True, **kw)
    finally:
        problem.value_and_grad = vg
    return it, np.array(trace)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("out", "no_write", "data", out="lbfgs_variants")])
    ap.add_argument("--n-train", type=int, default=3000)
    args = parse_args(ap, argv)
    X, y = conll2000_xy("train")
    X, y = X[:args.n_train], y[:args.n_train]
    rows = []
    for intercept in (True, False):
        problem, alpha, z0 = capture(X, y, intercept)
        _, ref = run(problem, alpha, z0, tol=1e-9, period=10, history=20, max_iter=600)
        fstar = ref.min()
        for m in (6, 10, 20):
            it, tr = run(problem, alpha, z0, tol=1e-5, period=10, history=m, max_iter=500)
            best = np.minimum.accumulate(tr)
            reach = [str(int(np.argmax(best <= fstar * (1 + e))) + 1)
                     if best[-1] <= fstar * (1 + e) else "-" for e in EPS]
            rows.append(["yes" if intercept else "no", str(m), str(it), str(len(tr)),
                         f"{tr.min():.6f}", f"{(tr.min() - fstar) / fstar:.1e}"] + reach)
            print(rows[-1], flush=True)
    text = ["# L-BFGS variants on the CRF (CoNLL-2000, first "
            f"{args.n_train} sentences)", "",
            f"Command: `python benchmarks/micro/bench_lbfgs_variants.py --n-train "
            f"{args.n_train}`.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(["intercept", "history m", "iterations", "evaluations", "final objective",
                      "(f - f*) / f*"] + [f"evals to f*(1+{e:g})" for e in EPS], rows), ""]
    stem = out_stem(args, "lbfgs_variants")
    if stem:
        print(f"wrote {write_text(stem, chr(10).join(text))}")


if __name__ == "__main__":
    main()
