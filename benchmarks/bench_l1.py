"""L1 / elastic-net CRF on CoNLL-2000: structlearn (OWL-QN) vs CRFsuite's c1/c2.

CoNLL-2000 chunking (train on train.txt, or its first ``--n-train``
sentences; chunk span F1 on test.txt), the CRF++ chunking template of
CRFsuite's benchmark (``_common.chunking_features``), the same feature dicts
for both libraries.

The objectives are the same up to the scale: CRFsuite minimises ``-sum_i
log p(y_i | x_i) + c1 ||w||_1 + c2 ||w||^2``; ``SequenceTagger`` minimises
``(1/n) sum_i -log p(y_i | x_i) + alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2
||w||^2)``.  Multiplying the latter by ``n`` gives ``c1 = n alpha l1_ratio``
and ``c2 = n alpha (1 - l1_ratio) / 2``, i.e. ``alpha = (c1 + 2 c2) / n``,
``l1_ratio = c1 / (c1 + 2 c2)``.  To make the models the same, structlearn
runs with ``fit_intercept=False`` (CRFsuite has no per-tag bias); it still
has start / end weights, which CRFsuite has not, so its optimum can only be
lower.  The check of the mapping is numerical: CRFsuite's final objective
(its training log's ``loss``, the sum form) divided by ``n`` is printed next
to structlearn's ``objective_`` (the mean form).

Both libraries stop by CRFsuite's default rule (relative objective decrease
below 1e-5 over 10 iterations); CRFsuite runs OWL-QN whenever ``c1 > 0``.
Models run one after another in this process, after a warm-up fit of every
model on 20 sentences; structlearn with ``n_jobs=1`` and ``n_jobs=2``.
Non-zero weights: structlearn's ``n_nonzero_`` (state and transition weights,
start / end); CRFsuite's ``active_features`` of its last iteration (state
and transition features with a non-zero weight).  Model size: the pickle of
the fitted estimator (CRFsuite's: its model file).

Usage::

    python benchmarks/bench_l1.py --quick             # 1,000 sentences, prints only
    python benchmarks/bench_l1.py --n-train 3000
    python benchmarks/bench_l1.py                     # the full training set
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, conll2000_xy, machine_info, md_table, out_stem,
    parse_args, write_csv, write_text)

import argparse  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from structlearn import SequenceTagger  # noqa: E402
from structlearn.metrics import chunk_f1  # noqa: E402

#: (name, c1, c2): CRFsuite's coefficients of the sum of the losses
SETTINGS = [("L1", 1.0, 0.0), ("elastic net", 0.5, 0.5), ("L2", 0.0, 1.0)]


def ours(n, c1, c2, n_jobs):
    alpha = (c1 + 2.0 * c2) / n
    return SequenceTagger(loss="crf", alpha=alpha, l1_ratio=c1 / (c1 + 2.0 * c2),
                          fit_intercept=False, n_jobs=n_jobs)


def theirs(c1, c2):
    import sklearn_crfsuite
    return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2)


def crfsuite_model_size(est):
    path = getattr(est, "modelfile", None)
    name = getattr(path, "name", None)
    return os.path.getsize(name) if name and os.path.exists(name) else None


def run(name, c1, c2, lib, n_jobs, data):
    Xtr, ytr, Xte, yte = data
    n = len(Xtr)
    est = ours(n, c1, c2, n_jobs) if lib == "structlearn" else theirs(c1, c2)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
    pred = est.predict(Xte)
    row = dict(setting=name, c1=c1, c2=c2, library=lib,
               n_jobs=n_jobs if lib == "structlearn" else 1, fit_s=round(fit_s, 2),
               f1=round(chunk_f1(yte, pred), 4), warnings=len(log))
    if lib == "structlearn":
        row.update(iterations=est.n_iter_, nonzero=est.n_nonzero_,
                   state_nonzero=est.coef_.nnz,
                   objective=float(f"{est.objective_:.7g}"),
                   model_kb=round(len(pickle.dumps(est)) / 1024))
    else:
        info = est.training_log_.last_iteration if est.training_log_ else {}
        row.update(iterations=info.get("num", ""), nonzero=info.get("active_features", ""),
                   state_nonzero=len(est.state_features_),
                   objective=float(f"{info.get('loss', float('nan')) / n:.7g}"),
                   model_kb=round((crfsuite_model_size(est) or 0) / 1024))
    print(row, flush=True)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("quick", "out", "no_write", "data", out="l1_conll2000")])
    parser.add_argument("--n-train", type=int, default=None,
                        help="use the first N training sentences (default: all)")
    parser.add_argument("--settings", nargs="+", default=[s[0] for s in SETTINGS],
                        help="settings to run (default: all)")
    args = parse_args(parser, argv)
    (Xtr, ytr), (Xte, yte) = conll2000_xy("train"), conll2000_xy("test")
    n_train = 1000 if args.quick and not args.n_train else args.n_train
    if n_train:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    data = (Xtr, ytr, Xte, yte)
    # warm-up: Numba loads its kernels on first use (not timed)
    ours(20, 1.0, 0.0, 1).fit(Xtr[:20], ytr[:20])
    ours(20, 0.0, 1.0, 1).fit(Xtr[:20], ytr[:20])
    theirs(1.0, 0.0).fit(Xtr[:20], ytr[:20])
    rows = []
    stem = out_stem(args, "l1_conll2000")
    for name, c1, c2 in SETTINGS:
        if name not in args.settings:
            continue
        for lib, n_jobs in (("crfsuite", 1), ("structlearn", 1), ("structlearn", 2)):
            rows.append(run(name, c1, c2, lib, n_jobs, data))
            if stem is not None:  # after every row: a long run leaves what it did
                write_csv(f"{stem}.csv", rows)
                write_text(stem, render(rows, len(Xtr), argv))
    print(render(rows, len(Xtr), argv))
    if stem is not None:
        print(f"wrote {stem}.md")


def render(rows, n, argv):
    by = {(r["setting"], r["library"], r["n_jobs"]): r for r in rows}
    header = ["setting (c1, c2)", "library", "n_jobs", "span F1", "non-zero weights",
              "non-zero state weights", "model (KB)", "fit (s)", "fit / CRFsuite",
              "iterations", "objective (mean form)"]
    body = []
    for r in rows:
        ref = by.get((r["setting"], "crfsuite", 1))
        ratio = f"{r['fit_s'] / ref['fit_s']:.2f}" if ref and ref["fit_s"] else ""
        body.append([f"{r['setting']} ({r['c1']:g}, {r['c2']:g})", r["library"], r["n_jobs"],
                     f"{100 * r['f1']:.2f}", r["nonzero"], r["state_nonzero"], r["model_kb"],
                     f"{r['fit_s']:.1f}", ratio, r["iterations"], r["objective"]])
    return "\n".join([
        f"# L1 / elastic-net CRF on CoNLL-2000 ({n} training sentences)", "",
        f"Command: `{command_line(argv)}`", "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
        "structlearn: `SequenceTagger(loss='crf', alpha=(c1 + 2 c2) / n, "
        "l1_ratio=c1 / (c1 + 2 c2), fit_intercept=False)` (OWL-QN when c1 > 0, else "
        "L-BFGS); CRFsuite: `sklearn_crfsuite.CRF(algorithm='lbfgs', c1=c1, c2=c2)`. "
        "The objective column is each library's final objective divided by n for "
        "CRFsuite (the same function but for structlearn's start / end weights).", "",
        md_table(header, body), ""])


if __name__ == "__main__":
    main()
