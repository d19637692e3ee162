"""Class weights on an imbalanced ordinal task: ``OrdinalRegressor`` with
``class_weight='balanced'`` against the unweighted fit.

Wine quality (red, 1,599 wines, Cortez et al. 2009): grades 3..8, of which
5 and 6 hold 82% of the wines and 3 and 8 hold 28 together.  A model fitted
on the mean loss predicts the middle grades; the balanced class weights
(``n / (n_classes * count)``, scikit-learn's) weigh every grade equally.
Reported side by side, over stratified 5-fold cross-validation repeated
with ``--repeat`` seeds (standardised features, the default ``alpha``):
the MAE, the macro-averaged MAE (the mean over the grades of the MAE of
the wines of that grade: every grade counts the same), and the MAE of each
grade.  A benchmark, not a test::

    python benchmarks/bench_class_weight.py          # writes results/class_weight.md
"""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, data_path, parse_args, report)

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import OrdinalRegressor  # noqa: E402


def load_red():
    path = data_path("ordinal_wine_quality", "winequality-red.csv")
    data = np.loadtxt(path, delimiter=";", skiprows=1)
    return data[:, :-1], data[:, -1].astype(int)


def per_class_mae(y, pred, classes):
    return np.array([np.mean(np.abs(pred[y == c] - c)) for c in classes])


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        parents=[common_parser("repeat", "out", "no_write", "data", "n_jobs",
                               repeat=3, n_jobs=1, out="class_weight")])
    p.add_argument("--loss", default="crf", help="the OrdinalRegressor loss (default crf)")
    args = parse_args(p, argv)
    X, y = load_red()
    classes = np.unique(y)
    rows = {None: [], "balanced": []}
    for seed in range(args.repeat):
        cv = StratifiedKFold(5, shuffle=True, random_state=seed)
        for tr, te in cv.split(X, y):
            for cw in rows:
                est = make_pipeline(StandardScaler(), OrdinalRegressor(
                    loss=args.loss, class_weight=cw, n_jobs=args.n_jobs))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    est.fit(X[tr], y[tr])
                pred = est.predict(X[te])
                pc = per_class_mae(y[te], pred, classes)
                rows[cw].append((np.mean(np.abs(pred - y[te])), pc.mean(), pc))
    counts = np.bincount(np.searchsorted(classes, y), minlength=len(classes))
    lines = [f"# Class weights on wine quality (red), OrdinalRegressor(loss={args.loss!r})",
             "",
             f"`{command_line(argv)}`",
             "",
             f"Stratified 5-fold CV x {args.repeat} seeds ({5 * args.repeat} fits per row); "
             f"mean (std over the folds).  Grades {classes.tolist()}, counts "
             f"{counts.tolist()}.",
             "",
             "| class_weight | MAE | macro-averaged MAE | "
             + " | ".join(f"MAE grade {c}" for c in classes) + " |",
             "|---|---|---|" + "---|" * len(classes)]
    for cw, r in rows.items():
        mae = np.array([a for a, _, _ in r])
        macro = np.array([b for _, b, _ in r])
        pc = np.array([c for _, _, c in r])
        lines.append(f"| {cw!s} | {mae.mean():.3f} ({mae.std():.3f}) | "
                     f"{macro.mean():.3f} ({macro.std():.3f}) | "
                     + " | ".join(f"{v:.2f}" for v in np.nanmean(pc, axis=0)) + " |")
    text = "\n".join(lines) + "\n"
    report(args, text, "class_weight")


if __name__ == "__main__":
    main()
