"""SparseMAP paper, Table 1, with linear parsers: the small-data protocol.

Niculae et al. (2018, Table 1) compare the structured SVM, CRF, SparseMAP
and m-SparseMAP losses for a BiLSTM arc-factored parser on UD English,
Chinese, Vietnamese, Romanian and Japanese (full train sets).  Here the
parser is structlearn's first-order linear one (``DependencyParser``,
default templates, gold tokens and UPOS), every loss trained to its
optimum (CRF / SparseMAP: L-BFGS to the default tolerance; hinge: BCFW to a
certified 1e-3 relative duality gap), and the data protocol is the one of
``../shared/data/README.md`` for treebanks whose train file is not shipped:
**train on dev**, choose ``alpha`` by 3-fold cross-validation inside dev
(the same folds and grid for every loss), refit on all of dev, report UAS
(punctuation included) on test.  English EWT is run the same way for
comparability (its full-train rows are in ``parsing_ewt.md``).

Usage::

    python benchmarks/bench_parsing_small.py                        # every treebank
    python benchmarks/bench_parsing_small.py --treebanks en_ewt,ro_rrt --alphas 1e-3,1e-2
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    UD_TREEBANKS, Recorder, common_parser, machine_info, md_table, out_stem, parse_args,
    timed_fit, ud_sentences, write_csv, write_text)

import argparse  # noqa: E402
import json  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402

from structlearn import DependencyParser  # noqa: E402
from structlearn.metrics import uas  # noqa: E402

#: code -> folder in the data folder (``$STRUCTLEARN_BENCH_DATA``, ``../shared/data``)
TREEBANKS = UD_TREEBANKS
#: loss -> estimator parameters
LOSSES = {"crf": {"loss": "crf"},
          "sparsemap": {"loss": "sparsemap"},
          "m-sparsemap": {"loss": "m-sparsemap"},
          "hinge": {"loss": "hinge", "solver": "bcfw", "max_iter": 100}}
#: Niculae et al. (2018) Table 1 (BiLSTM, full train sets), for context
PAPER = {"en_ewt": {"hinge": 87.02, "crf": 86.74, "sparsemap": 86.90, "m-sparsemap": 87.34},
         "zh_gsd": {"hinge": 81.94, "crf": 83.18, "sparsemap": 84.03, "m-sparsemap": 82.63},
         "ro_rrt": {"hinge": 87.58, "crf": 87.13, "sparsemap": 87.35, "m-sparsemap": 87.63},
         "ja_gsd": {"hinge": 96.24, "crf": 96.09, "sparsemap": 96.04, "m-sparsemap": 96.03}}


def load(code, subset):
    sents = ud_sentences(code, subset)
    return [s.tokens for s in sents], [s.heads for s in sents]


def fit(params, alpha, X, y, n_jobs):
    est = DependencyParser(alpha=alpha, n_jobs=n_jobs, random_state=0, **params)
    with Recorder() as rec:
        seconds = timed_fit(est, X, y)
    return est, seconds, rec.n_convergence


def run(code, name, alphas, n_folds, n_jobs):
    Xtr, ytr = load(code, "dev")
    Xte, yte = load(code, "test")
    params = LOSSES[name]
    folds = list(KFold(n_folds, shuffle=True, random_state=0).split(np.arange(len(Xtr))))
    cv = {}
    for a in alphas:
        scores = []
        for tr, va in folds:
            est, _, _ = fit(params, a, [Xtr[i] for i in tr], [ytr[i] for i in tr], n_jobs)
            scores.append(est.score([Xtr[i] for i in va], [ytr[i] for i in va]))
        cv[a] = float(np.mean(scores))
    best = max(alphas, key=lambda a: (cv[a], -alphas.index(a)))
    est, seconds, n_conv = fit(params, best, Xtr, ytr, n_jobs)
    gap = getattr(est, "duality_gap_", None)
    return dict(treebank=code, loss=name, n_train=len(Xtr), n_test=len(Xte), alpha=best,
                cv_uas=round(100 * cv[best], 2),
                test_uas=round(100 * uas(yte, est.predict(Xte)), 2),
                fit_s=round(seconds, 1), n_iter=est.n_iter_,
                gap="" if gap is None else float(f"{gap:.2g}"), convergence_warnings=n_conv,
                paper=PAPER.get(code, {}).get(name, ""))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[common_parser("n_jobs", "out", "no_write", "data", n_jobs=2,
                               out="parsing_small_data")])
    ap.add_argument("--treebanks", default=",".join(TREEBANKS))
    ap.add_argument("--losses", default=",".join(LOSSES))
    ap.add_argument("--alphas", default="1e-3,1e-2")
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--resume", action="store_true",
                    help="keep the rows of the results CSV (--out), run the others")
    args = parse_args(ap, argv)
    out = out_stem(args, "parsing_small_data")
    alphas = [float(a) for a in args.alphas.split(",")]
    rows = []
    if args.resume and out and Path(f"{out}.csv").exists():
        import csv

        with open(f"{out}.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
    done = {(r["treebank"], r["loss"]) for r in rows}
    for code in args.treebanks.split(","):
        for name in args.losses.split(","):
            if (code, name) in done:
                continue
            row = run(code, name, alphas, args.folds, args.n_jobs)
            print(json.dumps(row), flush=True)
            rows.append(row)
            if out:
                report(args, rows, out)   # after every row: a cut run keeps what it did


def report(args, rows, out):
    write_csv(f"{out}.csv", rows)
    body = [[r["treebank"], r["loss"], r["n_train"], r["alpha"], r["cv_uas"], r["test_uas"],
             r["paper"], r["fit_s"], r["n_iter"], r["gap"], r["convergence_warnings"]]
            for r in rows]
    text = ["# SparseMAP Table 1 with linear parsers: trained on dev", "",
            f"Command: `python benchmarks/bench_parsing_small.py --treebanks {args.treebanks} "
            f"--losses {args.losses} --alphas {args.alphas} "
            f"--folds {args.folds}` (n_jobs={args.n_jobs}).  Trained on dev, alpha by "
            f"{args.folds}-fold CV inside dev, UAS (punctuation included) on test.  "
            "'paper': Niculae et al. (2018) Table 1, a BiLSTM parser trained on the full "
            "train set -- context, not a like-for-like target.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(["treebank", "loss", "train (dev) sentences", "alpha", "CV UAS",
                      "test UAS", "paper (BiLSTM, full train)", "refit (s)", "iterations",
                      "relative gap", "ConvergenceWarnings"], body), ""]
    path = write_text(out, "\n".join(text))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
