"""Ordinal regression benchmark: structlearn OrdinalRegressor vs mord.

Data: the Chu & Ghahramani (2005) 10-bin data sets (9 sets, 20 train/test
partitions each) from ``/work/shared/data/ordinal_chu_ghahramani``.
Protocol: mean +- sd (ddof=1) over partitions of the test MAE.

Every model is ``Pipeline(StandardScaler(), model)``.  For every model and
every partition the regularisation strength is selected by inner K-fold CV
(shuffled KFold, seed = partition number, the same folds for every model) on
the training part only, scoring the negative MAE, over the SAME grid:

* structlearn ``alpha`` in ``ALPHAS = logspace(-4, 2, 7)``: it multiplies
  ``1/2 ||W||^2`` added to the MEAN loss;
* mord ``LogisticAT``/``LogisticIT``: their ``alpha`` multiplies
  ``1/2 ||w||^2`` added to the SUM of the losses, so the wrapper below sets
  ``mord_alpha = alpha * n_fit`` where ``n_fit`` is the number of rows that
  particular fit sees (inner-CV fold or whole training part): both
  libraries then solve problems with the same penalty-to-data ratio.
* The perceptron has no regularisation (structlearn trains it with the
  averaged perceptron and ignores ``alpha``): one fit, no CV.

Fit time: ``refit`` = wall time of the final fit on the whole training part
at the selected alpha (mean over partitions); ``grid`` = mean wall time of
one inner-CV fit over the whole grid (independent of which alpha wins).

Usage::

    python benchmarks/bench_ordinal.py --quick          # ~2 min, prints only
    python benchmarks/bench_ordinal.py --n-jobs 2       # writes results/ordinal.{md,csv}
"""

import argparse
import shlex
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (ALPHAS, DATA_HOME, RESULTS, fmt_alpha, machine_info,  # noqa: E402
                     time_table, warnings_section,
                     md_table, select_and_refit, write_csv)

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import OrdinalRegressor  # noqa: E402
from structlearn.datasets import fetch_chu_ghahramani, list_chu_ghahramani_datasets  # noqa: E402
from structlearn.losses import Projection  # noqa: E402

SL_LOSSES = ["perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn",
             "crf", "sparsemap", "m-sparsemap", "projection", "squared", "projection[cube]"]
MORD = ["mord LogisticAT", "mord LogisticIT"]
#: the losses whose fits cost 3-20x a mord fit here: run on fewer partitions
#: (``--expensive-partitions``) to keep the whole benchmark within its budget
EXPENSIVE = ("hinge-approx-slack", "poslearn", "sparsemap", "m-sparsemap")
QUICK_LOSSES = ["hinge", "crf", "sparsemap", "projection", "squared"]
QUICK_DATASETS = ["pyrimidines", "autompg"]
LARGE = ("stocksdomain", "abalone")


class MordMeanAlpha(ClassifierMixin, BaseEstimator):
    """mord threshold model with structlearn's alpha convention.

    ``alpha`` is the penalty on the MEAN loss; mord gets ``alpha * n_fit``.
    Labels are mapped to contiguous indices first (mord requires 0..K-1 with
    no gap, which a CV fold of a small data set may violate); structlearn's
    OrdinalRegressor does the same internally.
    """

    def __init__(self, kind="AT", alpha=1.0, max_iter=1000):
        self.kind = kind
        self.alpha = alpha
        self.max_iter = max_iter

    def fit(self, X, y):
        import mord
        cls = {"AT": mord.LogisticAT, "IT": mord.LogisticIT}[self.kind]
        self.classes_, yi = np.unique(y, return_inverse=True)
        self.est_ = cls(alpha=self.alpha * len(yi), max_iter=self.max_iter).fit(X, yi)
        return self

    def predict(self, X):
        idx = np.clip(np.asarray(self.est_.predict(X)).astype(int), 0, len(self.classes_) - 1)
        return self.classes_[idx]


def make_model(name, alpha, random_state=0):
    if name.startswith("mord "):
        est = MordMeanAlpha(kind=name[-2:], alpha=alpha)
    else:
        # "<loss> shared": parallel thresholds (one weight vector, as mord's models).
        # "<loss> cv-shared": shared_weights chosen by the inner CV together with
        # alpha; its grid encodes shared_weights=True as a negative alpha.
        shared = name.endswith(" shared")
        base = name[:-len(" shared")] if shared else name
        if base.endswith(" cv"):
            base = base[:-len(" cv")]
        if name.endswith(" cv-shared"):
            base = name[:-len(" cv-shared")]
            shared, alpha = alpha < 0, abs(alpha)
        loss = Projection(set="cube") if base == "projection[cube]" else base
        est = OrdinalRegressor(loss=loss, alpha=alpha, random_state=random_state,
                               shared_weights=shared)
    return make_pipeline(StandardScaler(), est)


def neg_mae(est, X, y):
    return -float(np.mean(np.abs(est.predict(X) - y)))


_WARM = False


def _warm_up(models):
    """JIT-load the Numba kernels in this process before anything is timed."""
    global _WARM
    if _WARM:
        return
    import warnings
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.repeat(np.arange(1, 5), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in models:
            make_model(m, 1e-2).fit(X, y).predict(X)
    _WARM = True


def run_task(dataset, partition, models, alphas, n_folds):
    _warm_up(models)
    t0 = time.perf_counter()
    Xtr, ytr, Xte, yte = fetch_chu_ghahramani(dataset, n_bins=10, partition=partition,
                                              data_home=DATA_HOME,
                                              download_if_missing=False)
    folds = list(KFold(n_folds, shuffle=True, random_state=partition).split(Xtr))
    rows = []
    for m in models:
        grid = None if m == "perceptron" else alphas
        if m.endswith(" cv-shared"):
            grid = list(alphas) + [-a for a in alphas]
        r = select_and_refit(lambda a, m=m: make_model(m, a), Xtr, ytr, folds, grid,
                             neg_mae, X_test=Xte)
        rows.append({
            "dataset": dataset, "partition": partition, "model": m,
            "n_train": len(ytr), "n_test": len(yte),
            "mae": float(np.mean(np.abs(r["y_pred"] - yte))),
            "best_alpha": r["best_alpha"],
            "refit_time": r["refit_time"],
            "grid_fit_time_mean": float(np.mean(r["cv_fit_times"])) if r["cv_fit_times"] else r["refit_time"],
            "tuning_time_total": float(np.sum(r["cv_fit_times"])) + r["refit_time"],
            "n_fits": r["n_fits"],
            "n_convergence_warnings": r["n_convergence_warnings"],
            "n_other_warnings": r["n_other_warnings"],
            "n_errors": r["n_errors"],
            "errors": " || ".join(r["errors"][:3]),
            "other_warnings": " || ".join(r["other_warnings"][:3]),
        })
    return rows, time.perf_counter() - t0


# ----------------------------------------------------------------------- report
def summarise(rows, datasets, models):
    S = {}
    for d in datasets:
        for m in models:
            rs = sorted((r for r in rows if r["dataset"] == d and r["model"] == m),
                        key=lambda r: r["partition"])
            if not rs:
                continue
            mae = np.array([r["mae"] for r in rs])
            parts = [r["partition"] for r in rs]
            alphas = Counter(fmt_alpha(r["best_alpha"]) for r in rs)
            S[d, m] = {
                "dataset": d, "model": m, "n_partitions": len(rs),
                "mae_mean": mae.mean(), "mae_sd": mae.std(ddof=1) if len(mae) > 1 else 0.0,
                "mae_per_partition": dict(zip(parts, mae)),
                "partitions": parts,
                "refit_time_mean": np.mean([r["refit_time"] for r in rs]),
                "grid_fit_time_mean": np.mean([r["grid_fit_time_mean"] for r in rs]),
                "tuning_time_total": np.sum([r["tuning_time_total"] for r in rs]),
                "n_fits": int(np.sum([r["n_fits"] for r in rs])),
                "n_convergence_warnings": int(np.sum([r["n_convergence_warnings"] for r in rs])),
                "n_other_warnings": int(np.sum([r["n_other_warnings"] for r in rs])),
                "n_errors": int(np.sum([r["n_errors"] for r in rs])),
                "alpha_mode": alphas.most_common(1)[0][0],
                "alphas": " ".join(f"{k}:{v}" for k, v in sorted(alphas.items())),
            }
    return S


def paired(S, d, a, b):
    """a - b per partition: mean diff, wins of a (lower MAE), losses, ties, p."""
    pa, pb = S[d, a]["mae_per_partition"], S[d, b]["mae_per_partition"]
    common = sorted(set(pa) & set(pb))
    x = np.array([pa[i] for i in common])
    y = np.array([pb[i] for i in common])
    diff = x - y
    win, lose = int(np.sum(diff < -1e-12)), int(np.sum(diff > 1e-12))
    try:
        p = wilcoxon(x, y).pvalue if (win + lose) > 0 and len(x) > 1 else np.nan
    except ValueError:
        p = np.nan
    return diff.mean(), win, lose, len(diff) - win - lose, p


def report(rows, datasets, models, meta, wall):
    S = summarise(rows, datasets, models)
    ds = [d for d in datasets if any((d, m) in S for m in models)]
    ref = "mord LogisticAT"
    out = ["# Ordinal regression: structlearn vs mord (Chu & Ghahramani, 10 bins)", ""]
    out.append("Produced by `" + meta["command"] + "` "
               f"(wall time {wall / 60:.1f} min, {meta['n_jobs']} worker process(es); "
               "machine shared with other jobs, so times are noisy).")
    out.append("")
    out.append("Protocol: " + meta["protocol"])
    out.append("")
    out.append("Versions: " + ", ".join(f"{k} {v}" for k, v in meta["info"].items()))
    out.append("")
    # ---- MAE table
    out.append("## Test MAE (mean ± sd over partitions; lower is better)")
    out.append("")
    n_full = {d: max(S[d, m]["n_partitions"] for m in models if (d, m) in S) for d in ds}
    hdr = ["model"] + [f"{d} ({n_full[d]}p)" for d in ds]
    body = []
    reduced = False
    for m in models:
        row = [m]
        for d in ds:
            if (d, m) not in S:
                row.append("")
                continue
            s = S[d, m]
            cell = f"{s['mae_mean']:.3f} ± {s['mae_sd']:.3f}"
            if s["n_partitions"] < n_full[d]:
                cell += f" ({s['n_partitions']}p)†"
                reduced = True
            else:
                best = min(S[d, mm]["mae_mean"] for mm in models
                           if (d, mm) in S and S[d, mm]["n_partitions"] == n_full[d])
                if abs(s["mae_mean"] - best) < 5e-4:
                    cell = f"**{cell}**"
            row.append(cell)
        body.append(row)
    if reduced:
        # the references on the same reduced set of partitions, for comparison
        for m in [x for x in models if x.startswith("mord ")] + ["projection", "squared"]:
            if m not in models:
                continue
            row = [f"{m}, same partitions as †"]
            for d in ds:
                small = [S[d, mm]["partitions"] for mm in models
                         if (d, mm) in S and S[d, mm]["n_partitions"] < n_full[d]]
                if not small or (d, m) not in S:
                    row.append("")
                    continue
                v = np.array([S[d, m]["mae_per_partition"][i] for i in small[0]
                              if i in S[d, m]["mae_per_partition"]])
                row.append(f"{v.mean():.3f} ± {v.std(ddof=1) if len(v) > 1 else 0:.3f} ({len(v)}p)")
            body.append(row)
    out.append(md_table(hdr, body))
    out.append("")
    out.append("Header `(Kp)`: partitions 1..K averaged.  Bold: best mean among the models "
               "run on all K partitions.  †: run on fewer partitions (the expensive losses, "
               "see protocol); compare them with the 'same partitions' rows, or with the "
               "paired differences below.")
    out.append("")
    # ---- target
    if ref in models:
        out.append(f"## Target: structlearn MAE <= {ref} on every set")
        out.append("")
        out.append("Per loss: mean MAE difference to LogisticAT on the partitions both were "
                   "run on (negative = structlearn better), and per-partition "
                   "wins/losses/ties of structlearn (Wilcoxon signed-rank p).  ✗: target "
                   "missed on that set.")
        out.append("")
        hdr = ["loss"] + ds + ["sets with mean MAE <= AT"]
        body = []
        for m in models:
            if m.startswith("mord "):
                continue
            row, n_ok, n_all = [m], 0, 0
            for d in ds:
                if (d, m) not in S or (d, ref) not in S:
                    row.append("")
                    continue
                md, w, lo, t, p = paired(S, d, m, ref)
                ok = md <= 1e-12  # on the partitions both were run on
                n_ok += ok
                n_all += 1
                ptxt = "" if np.isnan(p) else f", p={p:.2g}"
                row.append(f"{md:+.3f} ({w}/{lo}/{t}{ptxt})" + ("" if ok else " ✗"))
            row.append(f"{n_ok}/{n_all}")
            body.append(row)
        out.append(md_table(hdr, body))
        out.append("")
    # ---- projection vs squared
    pairs = [("projection", "squared"), ("projection[cube]", "squared"),
             ("projection", "projection[cube]"), ("sparsemap", "projection")]
    pairs = [(a, b) for a, b in pairs if a in models and b in models]
    if pairs:
        out.append("## Does projecting beat the squared loss?")
        out.append("")
        out.append("Mean MAE difference a − b over partitions (negative: a better), "
                   "wins/losses/ties of a, Wilcoxon signed-rank p.")
        out.append("")
        hdr = ["a − b"] + ds
        body = []
        for a, b in pairs:
            row = [f"{a} − {b}"]
            for d in ds:
                md, w, lo, t, p = paired(S, d, a, b)
                ptxt = "" if np.isnan(p) else f", p={p:.2g}"
                row.append(f"{md:+.3f} ({w}/{lo}/{t}{ptxt})")
            body.append(row)
        out.append(md_table(hdr, body))
        out.append("")
    # ---- times
    out.append("## Fit time")
    out.append("")
    out.append("Mean wall time (s) of the final refit at the selected alpha, and in "
               "brackets its ratio to mord LogisticAT's refit time on the same set.")
    out.append("")
    out += [time_table(S, models, ds, "refit_time_mean", ref), ""]
    out.append("Mean wall time (s) of one fit over the whole alpha grid (inner CV), "
               "and the ratio to LogisticAT's:")
    out.append("")
    out += [time_table(S, models, ds, "grid_fit_time_mean", ref), ""]
    # ---- selected alphas and warnings
    out += warnings_section(
        "Selected alpha (most frequent over partitions) and warnings",
        "Cell: most frequent selected alpha; `cw` = ConvergenceWarnings over all "
        "fits (inner CV + refit) of that set, `err` = failed fits.",
        S, models, ds, rows, "alpha_mode")
    return "\n".join(out), S


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="2 data sets x 2 partitions, 4 losses + mord; prints, writes nothing")
    p.add_argument("--datasets", nargs="*", default=None)
    p.add_argument("--losses", nargs="*", default=None, help="structlearn losses to run")
    p.add_argument("--partitions", type=int, default=20,
                   help="partitions 1..N for the small data sets")
    p.add_argument("--large-partitions", type=int, default=None,
                   help="partitions 1..N for stocksdomain and abalone (default: --partitions)")
    p.add_argument("--expensive-partitions", type=int, default=None,
                   help="partitions 1..N for the expensive losses " + str(EXPENSIVE)
                   + " (default: --partitions)")
    p.add_argument("--cv", type=int, default=5, help="inner CV folds")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--no-mord", action="store_true")
    p.add_argument("--no-write", action="store_true", help="print only")
    p.add_argument("--out", default=None, help="basename in results/ (default: ordinal; "
                   "quick mode writes nothing unless given)")
    a = p.parse_args(argv)

    if a.quick:
        datasets = a.datasets or QUICK_DATASETS
        losses = a.losses or QUICK_LOSSES
        a.partitions = min(a.partitions, 2)
        a.large_partitions = min(a.large_partitions or 2, 2)
        a.expensive_partitions = min(a.expensive_partitions or 2, 2)
    else:
        datasets = a.datasets or list_chu_ghahramani_datasets()
        losses = a.losses or SL_LOSSES
    large_p = a.large_partitions or a.partitions
    models = list(losses) + ([] if a.no_mord else MORD)
    exp_p = a.expensive_partitions if a.expensive_partitions is not None else a.partitions

    def models_for(d, i):
        n_cheap = large_p if d in LARGE else a.partitions
        return [m for m in models if i <= (exp_p if m in EXPENSIVE else n_cheap)]

    tasks = [(d, i) for d in datasets
             for i in range(1, max(large_p if d in LARGE else a.partitions, exp_p) + 1)
             if models_for(d, i)]
    # big data sets first, for load balancing
    order = {d: k for k, d in enumerate(list_chu_ghahramani_datasets())}
    tasks.sort(key=lambda t: -order.get(t[0], 0))
    command = "python benchmarks/bench_ordinal.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    part_txt = (f"partitions 1..{a.partitions}" if large_p == a.partitions else
                f"partitions 1..{a.partitions} ({', '.join(x for x in datasets if x not in LARGE)}) "
                f"and 1..{large_p} ({', '.join(x for x in datasets if x in LARGE)}) to fit the "
                f"compute budget")
    if exp_p < a.partitions and any(m in EXPENSIVE for m in models):
        part_txt += (f"; the expensive losses ({', '.join(m for m in models if m in EXPENSIVE)}) "
                     f"on partitions 1..{exp_p} only (compute budget)")
    protocol = (
        f"10-bin Chu & Ghahramani sets, {part_txt}; test MAE mean ± sd (ddof=1) over "
        f"partitions.  Pipeline(StandardScaler, model).  alpha selected per partition by "
        f"{a.cv}-fold shuffled KFold on the training part (seed = partition, same folds "
        f"for every model), scoring negative MAE, ties -> first (smallest) alpha as in "
        f"GridSearchCV, then refit on the whole training part.  Grid for every model: "
        f"structlearn alpha in {{{', '.join(f'{x:g}' for x in ALPHAS)}}} (penalty "
        f"alpha/2 ||W||^2 on the MEAN loss); mord alpha = alpha * n_fit (mord penalises "
        f"the SUM of losses; n_fit = rows of that particular fit).  The perceptron has no "
        f"penalty (averaged perceptron): single fit, no CV.  structlearn: defaults "
        f"otherwise (L-BFGS max_iter=500, tol=1e-5 for smooth losses; SGD 50 epochs for "
        f"the others; random_state=0; calibrated decoding = median class).  mord: "
        f"defaults (L-BFGS max_iter=1000).  Note: structlearn's all-threshold model "
        f"has one weight vector per threshold (9 x d + 9 parameters), mord's "
        f"LogisticAT/IT one shared weight vector plus 9 thresholds (d + 9).")
    print(f"{len(tasks)} tasks x {len(models)} models, grid {len(ALPHAS)}, cv {a.cv}, "
          f"n_jobs {a.n_jobs}", flush=True)
    t0 = time.perf_counter()
    res = Parallel(n_jobs=a.n_jobs, verbose=0, return_as="generator_unordered")(
        delayed(run_task)(d, i, models_for(d, i), ALPHAS, a.cv) for d, i in tasks)
    rows = []
    for k, (rs, dt) in enumerate(res, 1):
        rows.extend(rs)
        print(f"[{time.perf_counter() - t0:7.1f}s] {k}/{len(tasks)} {rs[0]['dataset']} "
              f"p{rs[0]['partition']} ({dt:.1f}s): "
              + " ".join(f"{r['model']}={r['mae']:.3f}" for r in rs), flush=True)
    wall = time.perf_counter() - t0
    meta = {"command": command, "n_jobs": a.n_jobs, "protocol": protocol,
            "info": machine_info()}
    text, S = report(rows, datasets, models, meta, wall)
    print()
    print(text)
    base = None if a.no_write else (a.out or (None if a.quick else "ordinal"))
    if base:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{base}.md").write_text(text + "\n")
        # one CSV: summary rows (row_type=summary, one per dataset x model) then the
        # raw rows (row_type=partition, one per dataset x partition x model)
        out_rows = []
        for (d, m), s in S.items():
            out_rows.append({"row_type": "summary",
                             **{k: (round(v, 6) if isinstance(v, float) else v)
                                for k, v in s.items() if k != "mae_per_partition"}})
        for r in rows:
            out_rows.append({"row_type": "partition",
                             **{k: (round(v, 6) if isinstance(v, float) else v)
                                for k, v in r.items()}})
        write_csv(RESULTS / f"{base}.csv", out_rows)
        print(f"wrote {RESULTS / base}.md and .csv")


if __name__ == "__main__":
    main()
