"""Does rescaling the CRF's unpenalised intercept column cut L-BFGS's iterations?

Issue 20's hypothesis: the per-tag intercept fires on every token, so its
curvature is orders of magnitude larger than a typical penalised feature's,
and L-BFGS's scalar initial Hessian (``gamma I``) fits neither.  Since the
intercept is not penalised, giving its column the value ``s`` instead of 1
(``b = s * z_b``) leaves the optimum the same model (the intercept in the
user's units is ``s * z_b``); it is a diagonal preconditioner of the
unpenalised block.  This script captures the CRF problem of
:class:`structlearn.SequenceTagger` (``loss='crf'``, CRFsuite's ``c2 = 1``:
``alpha = 2 / n``) and runs :func:`structlearn.solvers.lbfgs` with
CRFsuite's stopping rule (``period=10``, ``tol=1e-5``, m = 10) for several
``s``:

* fixed values (``--scales``, default 3, 1, 0.3, 0.1, 0.03),
* ``1/sqrt(T)``, ``T`` the mean sentence length (the intercept's curvature
  then that of a feature firing once per sentence),
* ``matched``: ``s`` such that the intercept block's diagonal curvature at
  ``z = 0`` equals the mean over the penalised (feature, tag) weights (at
  ``z = 0`` every marginal is ``1/K`` and tokens are independent, so a
  column's diagonal curvature is ``q`` times its squared norm over ``n``
  plus the penalty, ``q = (1 - 1/K) / K``),

and, for reference, two *other* models: without the intercept (CRFsuite's
model) and with the intercept penalised like every weight.  Counts are
deterministic (no timing); the objective column checks that every ``s``
reaches the same optimum (relative to the ``s = 1`` run).  "evals to
1e-4": evaluations until the objective is within 1e-4 (relative) of the
best final objective of the intercept model's runs.

Usage::

    python benchmarks/micro/bench_intercept_scale.py --task conll2000 --n-train 3000
    python benchmarks/micro/bench_intercept_scale.py --task ewt
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, conll2000_xy, conll2002_xy, machine_info, md_table,
    out_stem, parse_args, upos_xy, write_text)

import argparse  # noqa: E402

import numpy as np  # noqa: E402

from bench_lbfgs_variants import capture, run  # noqa: E402


class Rescaled:
    """The problem in ``z'`` with ``z = d * z'`` (``d`` 1 on the penalised
    coordinates, so the penalty is unchanged): the gradient is ``d * g``."""

    def __init__(self, problem, d, penalized=None):
        self.problem, self.d = problem, d
        self.n_samples = problem.n_samples
        self.penalized = problem.penalized if penalized is None else penalized

    def value_and_grad(self, z, idx=None):
        vals, g = self.problem.value_and_grad(z * self.d, idx)
        return vals, g * self.d


def matched_scale(problem, alpha):
    """``s`` equating the intercept's diagonal curvature at ``z = 0`` with
    the mean one of the penalised (feature, tag) weights."""
    fm = problem.fmap
    tk = fm.tokens
    nz_len = tk.nz_len.astype(np.float64)
    col_sq = float(nz_len.sum() if len(tk.data) == 0 else (nz_len * tk.data ** 2).sum())
    n, K = fm.n_samples, fm.K
    q = (1.0 - 1.0 / K) / K
    n_tokens = int(fm.pos_off[-1])
    feature = q * col_sq / (n * fm.n_support) + alpha
    intercept = q * n_tokens / n
    return float(np.sqrt(feature / intercept))


def load(task, n):
    if task == "conll2000":
        X, y = conll2000_xy("train")
    elif task == "ewt":
        X, y = upos_xy("en_ewt", "train")
    else:
        X, y = conll2002_xy(task, "train")
    return (X[:n], y[:n]) if n else (X, y)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("out", "no_write", "data", out="intercept_scale_<task>[_n<N>]")])
    ap.add_argument("--task", choices=["conll2000", "ewt", "esp", "ned"], default="conll2000")
    ap.add_argument("--n-train", type=int, default=0, help="first N sentences (0: all)")
    ap.add_argument("--scales", default="3,1,0.3,0.1,0.03",
                    help="comma-separated fixed scales s (1/sqrt(T) and matched are added)")
    ap.add_argument("--history", type=int, default=10,
                    help="L-BFGS correction pairs m (the estimator's default: 10)")
    ap.add_argument("--no-auto", action="store_true",
                    help="only the --scales (not 1/sqrt(T) and matched)")
    ap.add_argument("--no-reference-models", action="store_true",
                    help="skip the no-intercept and penalised-intercept rows")
    args = parse_args(ap, argv)
    X, y = load(args.task, args.n_train)
    T = sum(map(len, X)) / len(X)
    problem, alpha, z0 = capture(X, y, True)
    free = ~problem.penalized
    scales = [("s = " + s, float(s)) for s in args.scales.split(",") if s.strip()]
    if not args.no_auto:
        scales += [(f"s = 1/sqrt(T), T = {T:.1f}", 1.0 / np.sqrt(T)),
                   ("s matched to the mean penalised curvature", matched_scale(problem, alpha))]
    kw = dict(tol=1e-5, period=10, history=args.history, max_iter=500)
    results = []   # (label, s, model, iterations, trace)
    for label, s in scales:
        d = np.ones(len(z0))
        d[free] = s
        it, tr = run(Rescaled(problem, d), alpha, z0, **kw)
        results.append((label, s, "intercept", it, tr))
        print(f"{label} (s={s:.4g}): {it} iterations, {len(tr)} evaluations, "
              f"objective {tr.min():.7f}", flush=True)
    if not args.no_reference_models:
        it, tr = run(Rescaled(problem, np.ones(len(z0)), np.ones(len(z0), dtype=bool)),
                     alpha, z0, **kw)
        results.append(("intercept penalised (another model)", 1.0, "penalised", it, tr))
        print(f"penalised intercept: {it} iterations, {len(tr)} evaluations", flush=True)
        p0, a0, zz = capture(X, y, False)
        it, tr = run(p0, a0, zz, **kw)
        results.append(("no intercept (CRFsuite's model)", float("nan"), "none", it, tr))
        print(f"no intercept: {it} iterations, {len(tr)} evaluations", flush=True)
    f_one = next(r[4].min() for r in results if r[1] == 1.0 and r[2] == "intercept") \
        if any(r[1] == 1.0 and r[2] == "intercept" for r in results) else None
    best = {m: min(r[4].min() for r in results if r[2] == m) for m in {r[2] for r in results}}
    rows = []
    for label, s, model, it, tr in results:
        fb = best[model]
        reach = np.minimum.accumulate(tr) <= fb * (1 + 1e-4)
        rel = (tr.min() - f_one) / f_one if (f_one and model == "intercept") else float("nan")
        rows.append([label, "-" if np.isnan(s) else f"{s:.4g}", str(it), str(len(tr)),
                     f"{tr.min():.7f}", "-" if np.isnan(rel) else f"{rel:+.1e}",
                     str(int(np.argmax(reach)) + 1) if reach.any() else "-"])
    title = args.task + (f", first {args.n_train} sentences" if args.n_train else "")
    text = [f"# L-BFGS on the CRF with the intercept column rescaled ({title})", "",
            f"Command: `{command_line(argv)}`.", "",
            f"{len(X)} sentences, mean length T = {T:.1f}, {len(z0)} parameters "
            f"({int(free.sum())} intercepts), alpha = {alpha:.3g}; L-BFGS m = {args.history}, "
            "CRFsuite's stopping rule (relative decrease < 1e-5 over 10 iterations).", "",
            "Machine (load average at the end): "
            + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(["variant", "s", "iterations", "evaluations", "final objective",
                      "vs s = 1", "evals to 1e-4 of the model's best"], rows), ""]
    print("\n".join(text))
    default = f"intercept_scale_{args.task}" + (f"_n{args.n_train}" if args.n_train else "") \
        + (f"_m{args.history}" if args.history != 10 else "")
    stem = out_stem(args, default)
    if stem:
        print(f"wrote {write_text(stem, chr(10).join(text))}")


if __name__ == "__main__":
    main()
