#!/usr/bin/env python
"""Defaults against alpha='auto', on data nobody tuned for (issue 21).

``--task ordinal`` (default): every ordinal data set of the data folder
(Chu & Ghahramani, 10 bins, the first ``--partitions`` train/test
partitions), as a new user would run it:
``Pipeline(StandardScaler(), OrdinalRegressor(...))`` with

* the defaults (``loss='projection'``, ``alpha=1e-3``);
* ``loss='crf'`` at the default ``alpha``;
* ``alpha='auto'`` for both (3-fold internal CV over 10, 1, ..., 1e-6);
* mord's ``LogisticAT`` with its own default (``alpha=1``, on the sum of
  the losses) -- the plain baseline a user would try first.

``--task multilabel``: MULAN emotions, scene and yeast (their train / test
split), ``MultiLabelClassifier`` with its defaults and with
``alpha='auto'`` (which picks by subset accuracy, the estimator's
``score``), against one-vs-rest logistic regression with scikit-learn's
defaults; test Hamming loss and subset accuracy.

``--task ranking``: the label-ranking sets of up to 1,000 rows (5-fold CV,
shuffled, seed 0), ``LabelRanker`` with its defaults and with
``alpha='auto'`` against independent per-label ridge regression of the
ranks (scikit-learn's ``Ridge`` with its defaults, the labels ranked by the
predicted ranks); mean Kendall tau.

``--task wine``: wine quality (red, white), stratified 5-fold CV (seed 0),
``OrdinalRegressor`` with the default projection loss against
``loss='crf'``, both at the default penalty; test MAE and fit CPU seconds.

Reported: the test metric (mean over partitions) and the fit's CPU seconds,
side by side in one process.  The tuned rows of ``results/ordinal.md`` (an outer
grid search per partition) are the reference for what tuning can reach.

    python benchmarks/bench_defaults.py --partitions 3
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, label_ranking_csv, label_ranking_names, load_chu_ghahramani, load_mulan,
    machine_info, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor  # noqa: E402
from structlearn.datasets import list_chu_ghahramani_datasets, list_mulan_datasets  # noqa: E402

DATASETS = list_chu_ghahramani_datasets()


def _mord():
    import mord

    class MordAT(mord.LogisticAT):   # mord needs labels 0..K-1
        def fit(self, X, y):
            self.labels_ = np.unique(y)
            return super().fit(X, np.searchsorted(self.labels_, y))

        def predict(self, X):
            return self.labels_[super().predict(X)]
    return MordAT()


MODELS = {
    "default (projection, alpha=1e-3)": lambda: OrdinalRegressor(random_state=0),
    "projection, alpha='auto'": lambda: OrdinalRegressor(alpha="auto", random_state=0),
    "crf, alpha=1e-3": lambda: OrdinalRegressor(loss="crf", random_state=0),
    "crf, alpha='auto'": lambda: OrdinalRegressor(loss="crf", alpha="auto", random_state=0),
    "mord LogisticAT (its default alpha=1)": _mord,
}


def _ovr():
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    return OneVsRestClassifier(LogisticRegression(max_iter=1000))


ML_MODELS = {
    "default (projection, alpha=1e-3)": lambda: MultiLabelClassifier(random_state=0),
    "projection, alpha='auto'": lambda: MultiLabelClassifier(alpha="auto", random_state=0),
    "crf, alpha=1e-3": lambda: MultiLabelClassifier(loss="crf", random_state=0),
    "crf, alpha='auto'": lambda: MultiLabelClassifier(loss="crf", alpha="auto",
                                                       random_state=0),
    "one-vs-rest LogisticRegression (defaults)": _ovr,
}


def multilabel(args):
    from sklearn.metrics import accuracy_score, hamming_loss

    rows, cpu_rows = [], []
    for d in list_mulan_datasets():
        Xtr, Ytr, Xte, Yte = load_mulan(d)
        hl, acc, cpu, chosen = {}, {}, {}, {}
        for m, make in ML_MODELS.items():
            model = make_pipeline(StandardScaler(), make())
            t = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(Xtr, Ytr)
            cpu[m] = time.process_time() - t
            P = model.predict(Xte)
            hl[m], acc[m] = hamming_loss(Yte, P), accuracy_score(Yte, P)
            chosen[m] = getattr(model[-1], "alpha_", None)
            print(d, m, f"HL {hl[m]:.4f} acc {acc[m]:.4f} {cpu[m]:.1f}s", flush=True)
        best = min(hl.values())
        rows.append([d] + [(f"**{hl[m]:.4f}**" if hl[m] == best else f"{hl[m]:.4f}")
                           + f" / {acc[m]:.3f}"
                           + (f" ({chosen[m]:.0e})" if chosen[m] is not None else "")
                           for m in ML_MODELS])
        cpu_rows.append([d] + [f"{cpu[m]:.2f}" for m in ML_MODELS])
    return (f"# Multilabel defaults against alpha='auto' and one-vs-rest logistic "
            f"regression\n\nCommand: `python benchmarks/bench_defaults.py --task "
            f"multilabel`\n\nMachine: {machine_info()}\n\nTest Hamming loss / subset "
            f"accuracy (chosen alpha; bold: the lowest Hamming loss):\n\n"
            f"{md_table(['data set'] + list(ML_MODELS), rows)}\n\nFit CPU seconds:\n\n"
            f"{md_table(['data set'] + list(ML_MODELS), cpu_rows)}\n")


class _RidgeRanks:
    """Independent per-label ridge regression of the ranks; predict ranks the
    labels by the predicted ranks (ties broken by label order)."""

    def fit(self, X, Y):
        from sklearn.linear_model import Ridge

        self.model_ = Ridge().fit(X, Y)
        return self

    def predict(self, X):
        S = self.model_.predict(X)
        return np.argsort(np.argsort(S, axis=1, kind="stable"), axis=1) + 1

    def get_params(self, deep=True):
        return {}


RANK_MODELS = {
    "default (projection, alpha=1e-3)": lambda: LabelRanker(random_state=0),
    "projection, alpha='auto'": lambda: LabelRanker(alpha="auto", random_state=0),
    "per-label Ridge (defaults)": _RidgeRanks,
}


def ranking(args):
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler as Scaler

    from structlearn.datasets import read_label_ranking_csv
    from structlearn.metrics import kendall_tau

    rows, cpu_rows = [], []
    for d in label_ranking_names():
        X, Y = read_label_ranking_csv(label_ranking_csv(d))
        if len(X) > args.max_rows:
            continue
        tau = {m: [] for m in RANK_MODELS}
        cpu = {m: 0.0 for m in RANK_MODELS}
        for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
            sc = Scaler().fit(X[tr])
            for m, make in RANK_MODELS.items():
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = make().fit(sc.transform(X[tr]), Y[tr])
                cpu[m] += time.process_time() - t
                tau[m].append(kendall_tau(Y[te], model.predict(sc.transform(X[te]))))
        means = {m: float(np.mean(v)) for m, v in tau.items()}
        best = max(means.values())
        rows.append([d, len(X)] + [f"**{v:.4f}**" if v == best else f"{v:.4f}"
                                   for v in means.values()])
        cpu_rows.append([d] + [f"{cpu[m] / 5:.2f}" for m in RANK_MODELS])
        print(d, " | ".join(f"{m.split(',')[0]} {v:.4f}" for m, v in means.items()),
              flush=True)
    return (f"# Label-ranking defaults against alpha='auto' and per-label ridge\n\n"
            f"Command: `python benchmarks/bench_defaults.py --task ranking`\n\nMachine: "
            f"{machine_info()}\n\nMean Kendall tau over 5 folds (bold: the best):\n\n"
            f"{md_table(['data set', 'rows'] + list(RANK_MODELS), rows)}\n\n"
            f"Fit CPU seconds (mean per fold):\n\n"
            f"{md_table(['data set'] + list(RANK_MODELS), cpu_rows)}\n")


def wine(args):
    from sklearn.model_selection import StratifiedKFold

    from structlearn.datasets import load_wine_quality

    rows = []
    for color in ["red", "white"]:
        X, y = load_wine_quality(color)
        for loss in ["projection", "crf"]:
            maes, cpu = [], 0.0
            for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
                model = make_pipeline(StandardScaler(), OrdinalRegressor(loss=loss))
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X[tr], y[tr])
                cpu += time.process_time() - t
                maes.append(float(np.mean(np.abs(model.predict(X[te]) - y[te]))))
            rows.append([color, loss, f"{np.mean(maes):.4f}", f"{cpu / 5:.2f}"])
            print(*rows[-1], flush=True)
    return (f"# Wine quality: the default loss against the CRF\n\nCommand: `python "
            f"benchmarks/bench_defaults.py --task wine`\n\nMachine: {machine_info()}\n\n"
            f"{md_table(['wine', 'loss', 'MAE (5-fold)', 'fit CPU s (mean)'], rows)}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 parents=[common_parser("out", "no_write", "data",
                                                        out="defaults_ordinal")])
    ap.add_argument("--task", choices=["ordinal", "multilabel", "ranking", "wine"],
                    default="ordinal")
    ap.add_argument("--max-rows", type=int, default=1000,
                    help="ranking: skip the sets with more rows")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--datasets", nargs="*", default=DATASETS)
    args = parse_args(ap, argv)
    if args.task in ("multilabel", "ranking", "wine"):
        text = {"multilabel": multilabel, "ranking": ranking, "wine": wine}[args.task](args)
        print(text)
        stem = out_stem(args, f"defaults_{args.task}")
        if stem is not None:
            print("wrote", write_text(stem, text))
        return
    mae = {(d, m): [] for d in args.datasets for m in MODELS}
    cpu = {(d, m): [] for d in args.datasets for m in MODELS}
    alphas = {(d, m): [] for d in args.datasets for m in MODELS}
    for d in args.datasets:
        for part in range(1, args.partitions + 1):
            Xtr, ytr, Xte, yte = load_chu_ghahramani(d, part)
            for m, make in MODELS.items():
                model = make_pipeline(StandardScaler(), make())
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(Xtr, ytr)
                cpu[d, m].append(time.process_time() - t)
                mae[d, m].append(float(np.mean(np.abs(model.predict(Xte) - yte))))
                alphas[d, m].append(getattr(model[-1], "alpha_", None))
            print(d, part, " | ".join(f"{m.split(',')[0]} {mae[d, m][-1]:.3f}" for m in MODELS),
                  flush=True)
    rows = []
    for d in args.datasets:
        best = min(np.mean(mae[d, m]) for m in MODELS)
        row = [d]
        for m in MODELS:
            v = np.mean(mae[d, m])
            cell = f"{v:.3f}" if v > best else f"**{v:.3f}**"
            a = [x for x in alphas[d, m] if x is not None]
            if a:
                cell += " (" + "/".join(f"{x:.0e}" for x in a) + ")"
            row.append(cell)
        rows.append(row)
    cpu_rows = [[d] + [f"{np.mean(cpu[d, m]):.2f}" for m in MODELS] for d in args.datasets]
    text = (f"# Ordinal defaults against alpha='auto' and mord's default\n\nCommand: `python "
            f"benchmarks/bench_defaults.py --partitions {args.partitions}`\n\nMachine: "
            f"{machine_info()}\n\nTest MAE, mean over partitions 1..{args.partitions} "
            f"(chosen alphas in parentheses; bold: the best of the row):\n\n"
            f"{md_table(['data set'] + list(MODELS), rows)}\n\nFit CPU seconds (mean):\n\n"
            f"{md_table(['data set'] + list(MODELS), cpu_rows)}\n")
    print(text)
    stem = out_stem(args, "defaults_ordinal")
    if stem is not None:
        print("wrote", write_text(stem, text))


if __name__ == "__main__":
    main()
