"""Multilabel benchmark: structlearn MultiLabelClassifier vs scikit-learn.

Data: the MULAN sets emotions, scene and yeast from
``multilabel_*/`` in the data folder (``$STRUCTLEARN_BENCH_DATA`` or ``--data``;
default ``../shared/data``), the provided train/test split.
Metrics on the test split: Hamming loss, micro-F1, macro-F1
(``sklearn.metrics``; ``zero_division=0``).

Every model is ``Pipeline(StandardScaler(), model)``.  For every model the
regularisation strength is selected by inner K-fold CV on the training split
only (shuffled KFold, seed 0, the same folds for every model), scoring the
negative Hamming loss, over the SAME grid:

* structlearn ``alpha`` in ``ALPHAS = logspace(-4, 2, 7)``: it multiplies
  ``1/2 ||W||^2`` added to the MEAN loss;
* scikit-learn ``LogisticRegression`` (inside ``OneVsRestClassifier`` /
  ``ClassifierChain``): ``C`` multiplies the SUM of the losses against
  ``1/2 ||w||^2``, so the wrapper below sets ``C = 1 / (alpha * n_fit)``
  (``n_fit`` = rows of that particular fit): the same penalty-to-data ratio.
  With this conversion structlearn's ``crf`` loss on the unit cube and OvR
  logistic regression solve the same problem.
* The perceptron has no regularisation (averaged perceptron): one fit, no CV.

``knapsack`` models use ``MultiLabelClassifier(min_labels=1,
max_labels=<max labels per training row>)`` (every training row of the three
sets has at least one label); the bounds hold in training and prediction.

Usage::

    python benchmarks/bench_multilabel.py --quick        # ~2 min, prints only
    python benchmarks/bench_multilabel.py --n-jobs 2     # writes results/multilabel.{md,csv}

The max-margin losses trained to a certified duality gap (``solver="bcfw"``)
are the models ``"hinge (bcfw)"``, ``"knapsack hinge (bcfw)"`` etc.
(``--models``).  ``--alpha-from`` fits the structlearn models once at the
alpha an earlier run's inner CV selected for the same loss (SGD) instead of
running the inner CV (compute budget)::

    python benchmarks/bench_multilabel.py --n-jobs 1 --out multilabel_bcfw \
        --alpha-from benchmarks/results/multilabel.csv \
        --models hinge "hinge (bcfw)" hinge-slack "hinge-slack (bcfw)" OvR-LR
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    ALPHAS, BCFW_EPOCHS, BCFW_LOSSES, BCFW_TOL, bcfw_table, command_line, common_parser,
    fmt_alpha, load_mulan, machine_info, md_table, out_stem, parse_args, refit_solver_info,
    select_and_refit, split_bcfw, time_table, warnings_section, write_csv, write_text)

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin, MultiOutputMixin  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import f1_score, hamming_loss  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.multiclass import OneVsRestClassifier  # noqa: E402
from sklearn.multioutput import ClassifierChain  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import MultiLabelClassifier  # noqa: E402
from structlearn.losses import Projection  # noqa: E402

DATASETS = ["emotions", "scene", "yeast"]
CUBE = ["perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn", "crf",
        "sparsemap", "projection", "squared", "projection[kl]"]
#: knapsack variants run (the others -- hinge-approx-slack, poslearn, sparsemap --
#: cost 5-60 s per fit on yeast's knapsack and are left out for the budget)
KNAPSACK = ["perceptron", "hinge", "hinge-slack", "crf", "projection", "squared",
            "projection[kl]"]
SKLEARN = ["OvR-LR", "CC-LR"]
QUICK_DATASETS = ["emotions"]
QUICK_MODELS = ["hinge", "crf", "projection", "squared", "knapsack projection",
                "knapsack squared", "OvR-LR", "CC-LR"]
REF = "OvR-LR"
BCFW = [f"{loss} (bcfw)" for loss in BCFW_LOSSES]


class LRMeanAlpha(MultiOutputMixin, ClassifierMixin, BaseEstimator):
    """OvR / chain of LogisticRegression with structlearn's alpha convention.

    ``C = 1 / (alpha * n_fit)``: ``C * sum(loss) + 1/2 ||w||^2`` is then
    ``n_fit * C * (mean(loss) + alpha/2 ||w||^2)``.
    """

    def __init__(self, kind="ovr", alpha=1.0, max_iter=1000):
        self.kind = kind
        self.alpha = alpha
        self.max_iter = max_iter

    def fit(self, X, Y):
        lr = LogisticRegression(C=1.0 / (self.alpha * len(Y)), max_iter=self.max_iter)
        if self.kind == "ovr":
            self.est_ = OneVsRestClassifier(lr)
        else:
            self.est_ = ClassifierChain(lr, order=None)
        self.est_.fit(X, Y)
        return self

    def predict(self, X):
        return np.asarray(self.est_.predict(X)).astype(np.int64)


def make_model(name, alpha, bounds=(0, None), random_state=0, bcfw=(BCFW_EPOCHS, BCFW_TOL)):
    """``bcfw = (max_iter, tol)`` of the "<loss> (bcfw)" models."""
    name, use_bcfw = split_bcfw(name)
    solver_kw = ({"solver": "bcfw", "max_iter": bcfw[0], "tol": bcfw[1]}
                 if use_bcfw else {})
    if name in SKLEARN:
        est = LRMeanAlpha(kind="ovr" if name == "OvR-LR" else "chain", alpha=alpha)
    else:
        knap = name.startswith("knapsack ")
        loss = name[len("knapsack "):] if knap else name
        if loss == "projection[kl]":
            loss = Projection(geometry="kl")
        lo, hi = bounds if knap else (0, None)
        est = MultiLabelClassifier(min_labels=lo, max_labels=hi, loss=loss, alpha=alpha,
                                   random_state=random_state, **solver_kw)
    return make_pipeline(StandardScaler(), est)


def neg_hamming(est, X, Y):
    return -float(hamming_loss(Y, est.predict(X)))


_WARM = set()


def _warm_up(model):
    """JIT-load the Numba kernels for this model before anything is timed."""
    if model in _WARM:
        return
    import warnings
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    Y = (rng.rand(30, 4) < 0.4).astype(int)
    Y[Y.sum(1) == 0, 0] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make_model(model, 1e-2, bounds=(1, 4)).fit(X, Y).predict(X)
    _WARM.add(model)


def run_task(dataset, model, alphas, n_folds, bcfw=(BCFW_EPOCHS, BCFW_TOL), fixed_alpha=None):
    """``fixed_alpha``: one fit at that alpha, no inner CV."""
    _warm_up(model)
    t0 = time.perf_counter()
    X, Y, Xt, Yt = load_mulan(dataset)
    counts = Y.sum(axis=1)
    bounds = (1 if counts.min() >= 1 else 0, int(counts.max()))
    folds = list(KFold(n_folds, shuffle=True, random_state=0).split(X))
    grid = None if model.endswith("perceptron") or fixed_alpha is not None else alphas
    r = select_and_refit(
        lambda a: make_model(model, a if fixed_alpha is None else fixed_alpha, bounds, bcfw=bcfw),
        X, Y, folds, grid, neg_hamming, X_test=Xt)
    if fixed_alpha is not None:
        r["best_alpha"] = fixed_alpha
    P = np.asarray(r["y_pred"]).astype(int)
    row = {
        "dataset": dataset, "model": model, "n_train": len(Y), "n_test": len(Yt),
        "n_labels": Y.shape[1], "label_bounds": f"{bounds[0]}..{bounds[1]}",
        "hamming_loss": float(hamming_loss(Yt, P)),
        "f1_micro": float(f1_score(Yt, P, average="micro", zero_division=0)),
        "f1_macro": float(f1_score(Yt, P, average="macro", zero_division=0)),
        "subset_accuracy": float(np.mean(np.all(Yt == P, axis=1))),
        "best_alpha": r["best_alpha"],
        "cv_neg_hamming": " ".join(f"{a:g}:{v:.4f}" for a, v in r["cv_mean"].items()),
        "refit_time": r["refit_time"],
        "grid_fit_time_mean": float(np.mean(r["cv_fit_times"])) if r["cv_fit_times"] else r["refit_time"],
        "tuning_time_total": float(np.sum(r["cv_fit_times"])) + r["refit_time"],
        "n_fits": r["n_fits"],
        "n_convergence_warnings": r["n_convergence_warnings"],
        "n_other_warnings": r["n_other_warnings"],
        "n_errors": r["n_errors"],
        "errors": " || ".join(r["errors"][:3]),
        "other_warnings": " || ".join(r["other_warnings"][:3]),
        **refit_solver_info(r),
    }
    # the keys of _common.bcfw_table (one refit per model here)
    row.update(refit_gap_mean=row["refit_gap"], refit_gap_max=row["refit_gap"],
               refit_epochs_mean=row["refit_epochs"],
               n_refit_budget_hits=row["refit_budget_hit"], n_refits=1,
               refit_time_mean=row["refit_time"])
    return row, P, time.perf_counter() - t0


def bootstrap_hl_diff(Yt, Pa, Pb, n_boot=2000, seed=0):
    """Paired bootstrap (test rows) 95% interval of HL(a) - HL(b)."""
    rng = np.random.RandomState(seed)
    ea = (Pa != Yt).mean(axis=1)
    eb = (Pb != Yt).mean(axis=1)
    d = ea - eb
    n = len(d)
    boots = np.array([d[rng.randint(0, n, n)].mean() for _ in range(n_boot)])
    return d.mean(), np.percentile(boots, 2.5), np.percentile(boots, 97.5)


# ----------------------------------------------------------------------- report
def report(rows, preds, datasets, models, meta, wall):
    R = {(r["dataset"], r["model"]): r for r in rows}
    ds = [d for d in datasets if any((d, m) in R for m in models)]
    out = ["# Multilabel classification: structlearn vs scikit-learn (MULAN)", ""]
    out.append("Produced by `" + meta["command"] + "` "
               f"(wall time {wall / 60:.1f} min, {meta['n_jobs']} worker process(es); "
               "machine shared with other jobs, so times are noisy).")
    out.append("")
    out.append("Protocol: " + meta["protocol"])
    out.append("")
    out.append("Versions: " + ", ".join(f"{k} {v}" for k, v in meta["info"].items()))
    out.append("")
    out.append("## Test metrics (provided train/test split)")
    out.append("")
    out.append("HL = Hamming loss (lower is better), miF1 / maF1 = micro / macro F1 "
               "(higher is better).  One split, so no sd: see the bootstrap intervals below "
               "for the size of the noise.  Bold: best in the column.")
    out.append("")
    hdr = ["model"]
    for d in ds:
        hdr += [f"{d} HL", f"{d} miF1", f"{d} maF1"]
    body = []
    best = {}
    for d in ds:
        vals = [R[d, m] for m in models if (d, m) in R]
        best[d] = (min(v["hamming_loss"] for v in vals), max(v["f1_micro"] for v in vals),
                   max(v["f1_macro"] for v in vals))
    for m in models:
        row = [m]
        for d in ds:
            if (d, m) not in R:
                row += ["", "", ""]
                continue
            r = R[d, m]
            for k, (key, fmt) in enumerate([("hamming_loss", "{:.4f}"), ("f1_micro", "{:.3f}"),
                                            ("f1_macro", "{:.3f}")]):
                c = fmt.format(r[key])
                if abs(r[key] - best[d][k]) < 1e-9:
                    c = f"**{c}**"
                row.append(c)
        body.append(row)
    out.append(md_table(hdr, body))
    out.append("")
    # ---- target
    if REF in models:
        out.append(f"## Target: Hamming loss <= {REF}")
        out.append("")
        out.append(f"HL(model) − HL({REF}) on the test split, with a paired bootstrap 95% "
                   "interval over test rows (2000 resamples).  ✓ met, ✗ missed.")
        out.append("")
        hdr = ["model"] + ds + ["sets met"]
        body = []
        for m in models:
            if m == REF:
                continue
            row, n_ok, n_all = [m], 0, 0
            for d in ds:
                if (d, m) not in R or (d, REF) not in R:
                    row.append("")
                    continue
                Yt = load_mulan(d)[3]
                md, lo, hi = bootstrap_hl_diff(Yt, preds[d, m], preds[d, REF])
                ok = R[d, m]["hamming_loss"] <= R[d, REF]["hamming_loss"] + 1e-12
                n_ok += ok
                n_all += 1
                row.append(f"{md:+.4f} [{lo:+.4f}, {hi:+.4f}] " + ("✓" if ok else "✗"))
            row.append(f"{n_ok}/{n_all}")
            body.append(row)
        out.append(md_table(hdr, body))
        out.append("")
    # ---- projection vs squared
    pairs = [("projection", "squared"), ("projection[kl]", "squared"),
             ("knapsack projection", "knapsack squared"),
             ("knapsack projection[kl]", "knapsack squared"),
             ("knapsack projection", "projection"), ("knapsack squared", "squared"),
             ("sparsemap", "projection"), ("crf", "OvR-LR")]
    pairs += [(m, split_bcfw(m)[0]) for m in models if split_bcfw(m)[1]]
    pairs = [(a, b) for a, b in pairs if a in models and b in models]
    if pairs:
        out.append("## Does projecting beat the squared loss? (and other paired checks)")
        out.append("")
        out.append("HL(a) − HL(b) [paired bootstrap 95% interval]; micro-F1(a) − micro-F1(b).  "
                   "Negative HL difference: a better.")
        out.append("")
        hdr = ["a − b"] + ds
        body = []
        for a, b in pairs:
            row = [f"{a} − {b}"]
            for d in ds:
                if (d, a) not in R or (d, b) not in R:
                    row.append("")
                    continue
                Yt = load_mulan(d)[3]
                md, lo, hi = bootstrap_hl_diff(Yt, preds[d, a], preds[d, b])
                dmi = R[d, a]["f1_micro"] - R[d, b]["f1_micro"]
                row.append(f"{md:+.4f} [{lo:+.4f}, {hi:+.4f}]; miF1 {dmi:+.3f}")
            body.append(row)
        out.append(md_table(hdr, body))
        out.append("")
    # ---- times
    out.append("## Fit time")
    out.append("")
    for key, title in [("refit_time", "Wall time (s) of the final refit at the selected "
                        "alpha, and its ratio to OvR-LR's"),
                       ("grid_fit_time_mean", "Mean wall time (s) of one fit over the whole "
                        "alpha grid (inner CV), and its ratio to OvR-LR's"),
                       ("tuning_time_total", "Total wall time (s) of model selection + refit "
                        "(all fits)")]:
        out.append(title + ":")
        out.append("")
        ref = None if key == "tuning_time_total" else REF
        out += [time_table(R, models, ds, key, ref), ""]
    # ---- the bcfw refits
    if any(split_bcfw(m)[1] for m in models):
        out.append("## Converged training (bcfw): final relative duality gap")
        out.append("")
        out.append("Relative duality gap (`duality_gap_`) at the end of the final refit "
                   "(one refit: mean = max), epochs (`n_iter_`), whether the refit stopped "
                   "on the epoch budget (ConvergenceWarning), refit wall time.")
        out.append("")
        out += [bcfw_table(R, models, ds), ""]
    # ---- alphas and warnings
    out += warnings_section(
        "Selected alpha and warnings",
        "Cell: selected alpha; `cw` = ConvergenceWarnings / fits (inner CV + refit); "
        "`err` = failed fits.",
        R, models, ds, rows, "best_alpha")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="--quick: emotions only, a few models",
        parents=[common_parser("quick", "datasets", "n_jobs", "out", "no_write", "data",
                               n_jobs=2, out="multilabel",
                               datasets="emotions scene yeast")])
    p.add_argument("--models", nargs="*", default=None,
                   help="model names (losses, 'knapsack <loss>', OvR-LR, CC-LR)")
    p.add_argument("--no-knapsack", action="store_true")
    p.add_argument("--cv", type=int, default=5, help="inner CV folds")
    p.add_argument("--bcfw-epochs", type=int, default=BCFW_EPOCHS,
                   help="epoch budget (max_iter) of the bcfw models")
    p.add_argument("--bcfw-tol", type=float, default=BCFW_TOL,
                   help="relative duality gap at which bcfw stops")
    p.add_argument("--alpha-from", default=None, metavar="CSV",
                   help="no inner CV for the structlearn models: fit each once at the alpha "
                   "the inner CV selected for the same loss (for '<loss> (bcfw)': '<loss>', "
                   "the SGD model) in this earlier CSV of this script")
    a = parse_args(p, argv)
    datasets = a.datasets or (QUICK_DATASETS if a.quick else DATASETS)
    if a.models:
        models = a.models
    elif a.quick:
        models = QUICK_MODELS
    else:
        models = CUBE + ([] if a.no_knapsack else [f"knapsack {m}" for m in KNAPSACK]) + SKLEARN
    command = command_line(argv)
    protocol = (
        f"MULAN {', '.join(datasets)}, provided train/test split.  "
        f"Pipeline(StandardScaler, model).  alpha selected by {a.cv}-fold shuffled KFold on "
        f"the training split (seed 0, same folds for every model), scoring negative Hamming "
        f"loss, ties -> first (smallest) alpha as in GridSearchCV, then refit on the whole "
        f"training split.  Grid for every model: structlearn alpha in "
        f"{{{', '.join(f'{x:g}' for x in ALPHAS)}}} (penalty alpha/2 ||W||^2 on the MEAN "
        f"loss); LogisticRegression C = 1/(alpha * n_fit) (sklearn penalises the SUM of "
        f"losses; n_fit = rows of that particular fit), lbfgs, max_iter=1000.  "
        f"OneVsRestClassifier(LR) and ClassifierChain(LR, natural label order).  The "
        f"perceptron has no penalty: single fit, no CV.  structlearn: defaults otherwise "
        f"(L-BFGS max_iter=500, tol=1e-5 for smooth losses; SGD 50 epochs otherwise; "
        f"random_state=0; calibrated decoding 1[mu > 1/2], MAP(mu - 1/2) on the knapsack).  "
        f"'knapsack X': min_labels=1, max_labels=max labels per training row "
        f"(emotions 3, scene 3, yeast 11).")
    fixed = {}
    if a.alpha_from:
        import csv
        with open(a.alpha_from, newline="") as fh:
            for r in csv.DictReader(fh):
                for m in models:
                    if m not in SKLEARN and split_bcfw(m)[0] == r["model"] and r["best_alpha"]:
                        fixed[r["dataset"], m] = float(r["best_alpha"])
        protocol += (f"  **No inner CV for {', '.join(sorted({k[1] for k in fixed}))}**: each "
                     f"is fitted once at the alpha that the inner CV of the SGD model of the "
                     f"same loss selected in {a.alpha_from} (compute budget).")
    if any(split_bcfw(m)[1] for m in models):
        protocol += (f"  '<loss> (bcfw)': the same loss trained by block-coordinate "
                     f"Frank-Wolfe (solver='bcfw', tol={a.bcfw_tol:g} relative duality gap, "
                     f"max_iter={a.bcfw_epochs} epochs).")
    tasks = [(d, m) for d in datasets for m in models]
    # the slowest first (yeast and scene, knapsack and sparse/slack losses)
    slow = {"yeast": 2, "scene": 1}

    def cost(t):
        d, m = t
        w = 3 if ("sparsemap" in m or "approx" in m or "poslearn" in m
                  or m == "knapsack crf") else 1
        return -(slow.get(d, 0) + 1) * w

    tasks.sort(key=cost)
    print(f"{len(tasks)} tasks, grid {len(ALPHAS)}, cv {a.cv}, n_jobs {a.n_jobs}", flush=True)
    t0 = time.perf_counter()
    res = Parallel(n_jobs=a.n_jobs, return_as="generator_unordered")(
        delayed(run_task)(d, m, ALPHAS, a.cv, (a.bcfw_epochs, a.bcfw_tol), fixed.get((d, m)))
        for d, m in tasks)
    rows, preds = [], {}
    for k, (row, P, dt) in enumerate(res, 1):
        rows.append(row)
        preds[row["dataset"], row["model"]] = P
        print(f"[{time.perf_counter() - t0:7.1f}s] {k}/{len(tasks)} {row['dataset']} "
              f"{row['model']} ({dt:.1f}s): HL={row['hamming_loss']:.4f} "
              f"miF1={row['f1_micro']:.3f} maF1={row['f1_macro']:.3f} "
              f"alpha={fmt_alpha(row['best_alpha'])} cw={row['n_convergence_warnings']}",
              flush=True)
    wall = time.perf_counter() - t0
    rows.sort(key=lambda r: (datasets.index(r["dataset"]), models.index(r["model"])))
    meta = {"command": command, "n_jobs": a.n_jobs, "protocol": protocol,
            "info": machine_info()}
    text = report(rows, preds, datasets, models, meta, wall)
    print()
    print(text)
    base = out_stem(a, "multilabel")
    if base:
        write_text(base, text + "\n")
        write_csv(f"{base}.csv",
                  [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()}
                   for r in rows])
        print(f"wrote {base}.md and .csv")


if __name__ == "__main__":
    main()
