"""Ordinal regression benchmark: structlearn OrdinalRegressor vs mord.

Data: the Chu & Ghahramani (2005) 10-bin data sets (9 sets, 20 train/test
partitions each) from ``ordinal_chu_ghahramani/`` in the data folder
(``$STRUCTLEARN_BENCH_DATA`` or ``--data``; default ``../shared/data``).
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

The max-margin losses trained to a certified duality gap (``solver="bcfw"``)
are the models ``"hinge (bcfw)"`` etc. (``--losses``); ``--merge-from`` adds
the rows of an earlier run (its CSV) for the models and partitions this run
did not compute, so a run of a few models can be compared, partition by
partition, with the others without re-running them::

    python benchmarks/bench_ordinal.py --cv 3 --partitions 2 --n-jobs 1 \
        --losses "hinge (bcfw)" "hinge-slack (bcfw)" "hinge-approx-slack (bcfw)" \
        "poslearn (bcfw)" --no-mord --out ordinal_bcfw
    # re-render with the SGD / mord rows of results/ordinal.csv, same partitions:
    python benchmarks/bench_ordinal.py --cv 3 --partitions 2 --losses --no-mord \
        --merge-from benchmarks/results/ordinal_bcfw.csv benchmarks/results/ordinal.csv \
        --out ordinal_bcfw
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    ALPHAS, BCFW_EPOCHS, BCFW_LOSSES, BCFW_TOL, bcfw_table, command_line, common_parser,
    fmt_alpha, load_chu_ghahramani, machine_info, md_table, out_stem, parse_args,
    refit_solver_info, select_and_refit, skip_missing_peers, split_bcfw, time_table,
    warnings_section, write_csv, write_text)

import argparse  # noqa: E402
import csv  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402

import numpy as np  # noqa: E402
from joblib import Parallel, delayed  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import OrdinalRegressor  # noqa: E402
from structlearn.datasets import list_chu_ghahramani_datasets  # noqa: E402
from structlearn.losses import Projection  # noqa: E402

SL_LOSSES = ["perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn",
             "crf", "sparsemap", "m-sparsemap", "projection", "squared", "projection[cube]"]
MORD = ["mord LogisticAT", "mord LogisticIT"]
#: the losses whose fits cost 3-20x a mord fit here: run on fewer partitions
#: (``--expensive-partitions``) to keep the whole benchmark within its budget
EXPENSIVE = ("hinge-approx-slack", "poslearn", "sparsemap", "m-sparsemap")
#: the max-margin losses trained by block-coordinate Frank-Wolfe to a certified
#: relative duality gap (``solver="bcfw"``) instead of SGD; not in the default
#: list: ask for them with ``--losses "hinge (bcfw)" ...``; they run on
#: partitions 1..``--bcfw-partitions``
BCFW = [f"{loss} (bcfw)" for loss in BCFW_LOSSES]
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


def make_model(name, alpha, random_state=0, bcfw=(BCFW_EPOCHS, BCFW_TOL)):
    """``bcfw = (max_iter, tol)`` of the "<loss> (bcfw)" models."""
    name, use_bcfw = split_bcfw(name)
    solver_kw = ({"solver": "bcfw", "max_iter": bcfw[0], "tol": bcfw[1]}
                 if use_bcfw else {})
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
                               shared_weights=shared, **solver_kw)
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


def run_task(dataset, partition, models, alphas, n_folds, bcfw=(BCFW_EPOCHS, BCFW_TOL),
             fixed=None):
    """``fixed``: model -> alpha fitted once at that alpha (no inner CV)."""
    fixed = fixed or {}
    _warm_up(models)
    t0 = time.perf_counter()
    Xtr, ytr, Xte, yte = load_chu_ghahramani(dataset, partition)
    folds = list(KFold(n_folds, shuffle=True, random_state=partition).split(Xtr))
    rows = []
    for m in models:
        grid = None if m == "perceptron" else alphas
        if m.endswith(" cv-shared"):
            grid = list(alphas) + [-a for a in alphas]
        if m in fixed:
            grid = None
        r = select_and_refit(lambda a, m=m: make_model(m, fixed.get(m, a), bcfw=bcfw),
                             Xtr, ytr, folds, grid, neg_mae, X_test=Xte)
        if m in fixed:
            r["best_alpha"] = fixed[m]
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
            **refit_solver_info(r),
        })
    return rows, time.perf_counter() - t0


_INT_FIELDS = ("partition", "n_train", "n_test", "n_fits", "n_convergence_warnings",
               "n_other_warnings", "n_errors", "refit_budget_hit")
_FLOAT_FIELDS = ("mae", "best_alpha", "refit_time", "grid_fit_time_mean", "tuning_time_total",
                 "refit_gap", "refit_epochs")


def read_partition_rows(path):
    """The per-partition rows (``row_type=partition``) of a CSV this script
    wrote, typed as :func:`run_task` returns them; columns an older version
    did not write are NaN / 0 / ""."""
    rows = []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r.get("row_type") != "partition":
                continue
            r = {k: v for k, v in r.items() if k != "row_type"}
            for k in _INT_FIELDS:
                r[k] = int(float(r[k])) if r.get(k) not in (None, "") else 0
            for k in _FLOAT_FIELDS:
                r[k] = float(r[k]) if r.get(k) not in (None, "") else np.nan
            for k in ("errors", "other_warnings", "source"):
                r[k] = r.get(k) or ""
            r["source"] = r["source"] or Path(path).name
            rows.append(r)
    return rows


def model_order(models):
    """SGD max-margin losses, then their bcfw versions, then the others."""
    canon = SL_LOSSES[:5] + BCFW + SL_LOSSES[5:] + MORD
    return sorted(dict.fromkeys(models),
                  key=lambda m: canon.index(m) if m in canon else len(canon))


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
                # final refits: relative duality gap (NaN without a certificate),
                # epochs, and how many stopped on the epoch budget
                "refit_gap_mean": float(np.mean([r["refit_gap"] for r in rs])),
                "refit_gap_max": float(np.max([r["refit_gap"] for r in rs])),
                "refit_epochs_mean": float(np.mean([r["refit_epochs"] for r in rs])),
                "n_refit_budget_hits": int(np.sum([r["refit_budget_hit"] for r in rs])),
                "n_refits": len(rs),
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


def _paired_rows(S, ds, pairs):
    """Table rows ``a − b``: per set, the mean MAE difference, wins/losses/ties
    of a and the Wilcoxon p (empty where either was not run)."""
    body = []
    for a, b in pairs:
        row = [f"{a} − {b}"]
        for d in ds:
            if (d, a) not in S or (d, b) not in S:
                row.append("")
                continue
            md, w, lo, t, p = paired(S, d, a, b)
            ptxt = "" if np.isnan(p) else f", p={p:.2g}"
            row.append(f"{md:+.3f} ({w}/{lo}/{t}{ptxt})")
        body.append(row)
    return body


def report(rows, datasets, models, meta, wall):
    S = summarise(rows, datasets, models)
    ds = [d for d in datasets if any((d, m) in S for m in models)]
    ref = "mord LogisticAT"
    out = ["# Ordinal regression: structlearn vs mord (Chu & Ghahramani, 10 bins)", ""]
    if meta.get("n_tasks", 1):
        out.append("Produced by `" + meta["command"] + "` "
                   f"(wall time {wall / 60:.1f} min, {meta['n_jobs']} worker process(es); "
                   "machine shared with other jobs, so times are noisy).")
    else:
        out.append("Rendered by `" + meta["command"] + "` from the rows of earlier runs "
                   "(no fit in this command; see the protocol).")
    out.append("")
    if meta.get("note"):
        out += [meta["note"], ""]
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
        body = _paired_rows(S, ds, pairs)
        out.append(md_table(hdr, body))
        out.append("")
    # ---- SGD vs bcfw: the same loss, trained approximately or to a certificate
    pairs = [(m, split_bcfw(m)[0]) for m in models
             if split_bcfw(m)[1] and split_bcfw(m)[0] in models]
    if pairs:
        out.append("## Converged (bcfw) vs SGD training of the same loss")
        out.append("")
        out.append("Mean MAE difference bcfw − SGD over the partitions both were run on "
                   "(negative: bcfw better), wins/losses/ties of bcfw, Wilcoxon p.  Then, "
                   "per set, the max-margin losses ordered by mean MAE (best first; "
                   "hi = hinge, sl = hinge-slack, as = hinge-approx-slack, pl = poslearn) "
                   "under each solver, on those partitions.")
        out.append("")
        body = _paired_rows(S, ds, pairs)
        short = {"hinge": "hi", "hinge-slack": "sl", "hinge-approx-slack": "as",
                 "poslearn": "pl"}
        for solver in ("SGD", "bcfw"):
            row = [f"order ({solver})"]
            for d in ds:
                parts = set.intersection(*[set(S[d, m]["partitions"]) for pr in pairs
                                           for m in pr if (d, m) in S])
                vals = []
                for a, b in pairs:
                    m = a if solver == "bcfw" else b
                    if (d, m) in S:
                        v = np.mean([S[d, m]["mae_per_partition"][i] for i in sorted(parts)])
                        vals.append((v, short.get(b, b)))
                row.append(" < ".join(f"{n} {v:.3f}" for v, n in sorted(vals)))
            body.append(row)
        out.append(md_table(["bcfw − SGD"] + ds, body))
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
    # ---- the bcfw refits: certificate, epochs, budget
    if any(split_bcfw(m)[1] for m in models):
        out.append("## Converged training (bcfw): final relative duality gap")
        out.append("")
        out.append("Per set: mean / max over partitions of the relative duality gap "
                   "(`duality_gap_`) at the end of the final refit, mean epochs "
                   "(`n_iter_`), refits that stopped on the epoch budget "
                   "(ConvergenceWarning) / refits, mean refit wall time.  A refit "
                   "that stopped before the budget certified gap <= tol.")
        out.append("")
        out += [bcfw_table(S, models, ds), ""]
    # ---- selected alphas and warnings
    out += warnings_section(
        "Selected alpha (most frequent over partitions) and warnings",
        "Cell: most frequent selected alpha; `cw` = ConvergenceWarnings over all "
        "fits (inner CV + refit) of that set, `err` = failed fits.",
        S, models, ds, rows, "alpha_mode")
    return "\n".join(out), S


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="--quick: 2 data sets x 2 partitions, 5 losses + mord (mord's rows are "
               "skipped when it is not installed)",
        parents=[common_parser("quick", "datasets", "n_jobs", "out", "no_write", "data",
                               n_jobs=2, out="ordinal", datasets="the 9 sets")])
    p.add_argument("--losses", nargs="*", default=None, help="structlearn losses to run")
    p.add_argument("--partitions", type=int, default=20,
                   help="partitions 1..N for the small data sets")
    p.add_argument("--large-partitions", type=int, default=None,
                   help="partitions 1..N for stocksdomain and abalone (default: --partitions)")
    p.add_argument("--expensive-partitions", type=int, default=None,
                   help="partitions 1..N for the expensive losses " + str(EXPENSIVE)
                   + " (default: --partitions)")
    p.add_argument("--bcfw-partitions", type=int, default=None,
                   help="partitions 1..N for the '<loss> (bcfw)' models (default: "
                   "--expensive-partitions, else --partitions)")
    p.add_argument("--bcfw-epochs", type=int, default=BCFW_EPOCHS,
                   help="epoch budget (max_iter) of the bcfw models")
    p.add_argument("--bcfw-tol", type=float, default=BCFW_TOL,
                   help="relative duality gap at which bcfw stops")
    p.add_argument("--cv", type=int, default=5, help="inner CV folds")
    p.add_argument("--no-mord", action="store_true")
    p.add_argument("--alpha-from", default=None, metavar="CSV",
                   help="no inner CV for the structlearn models: fit each once at the alpha "
                   "that the inner CV of the same loss (for '<loss> (bcfw)': of '<loss>', "
                   "the SGD model) selected on the same partition in this earlier CSV")
    p.add_argument("--note", default=None, help="a paragraph added below the command line")
    p.add_argument("--merge-from", nargs="*", default=[], metavar="CSV",
                   help="CSVs of earlier runs: their per-partition rows of (data set, "
                   "partition, model) this run did not compute are added to the report "
                   "and the written CSV (the first file wins on duplicates), for the data "
                   "sets and partitions of this run only; nothing is written to them "
                   "unless --out names one")
    a = parse_args(p, argv)

    if a.quick:
        datasets = a.datasets or QUICK_DATASETS
        losses = QUICK_LOSSES if a.losses is None else a.losses
        a.partitions = min(a.partitions, 2)
        a.large_partitions = min(a.large_partitions or 2, 2)
        a.expensive_partitions = min(a.expensive_partitions or 2, 2)
    else:
        datasets = a.datasets or list_chu_ghahramani_datasets()
        losses = SL_LOSSES if a.losses is None else a.losses  # [] with --merge-from: render
    large_p = a.large_partitions or a.partitions
    models = list(losses) + ([] if a.no_mord else skip_missing_peers(
        MORD, {m: "mord" for m in MORD}))
    exp_p = a.expensive_partitions if a.expensive_partitions is not None else a.partitions
    bcfw_p = a.bcfw_partitions if a.bcfw_partitions is not None else exp_p

    def models_for(d, i):
        n_cheap = large_p if d in LARGE else a.partitions
        return [m for m in models
                if i <= (bcfw_p if split_bcfw(m)[1] else exp_p if m in EXPENSIVE else n_cheap)]

    tasks = [(d, i) for d in datasets
             for i in range(1, max(large_p if d in LARGE else a.partitions, exp_p, bcfw_p) + 1)
             if models_for(d, i)]
    # big data sets first, for load balancing
    order = {d: k for k, d in enumerate(list_chu_ghahramani_datasets())}
    tasks.sort(key=lambda t: -order.get(t[0], 0))
    command = command_line(argv)
    part_txt = (f"partitions 1..{a.partitions}" if large_p == a.partitions else
                f"partitions 1..{a.partitions} ({', '.join(x for x in datasets if x not in LARGE)}) "
                f"and 1..{large_p} ({', '.join(x for x in datasets if x in LARGE)}) to fit the "
                f"compute budget")
    if exp_p < a.partitions and any(m in EXPENSIVE for m in models):
        part_txt += (f"; the expensive losses ({', '.join(m for m in models if m in EXPENSIVE)}) "
                     f"on partitions 1..{exp_p} only (compute budget)")
    bcfw_models = [m for m in models if split_bcfw(m)[1]]
    if bcfw_models:
        part_txt += (f"; the bcfw models ({', '.join(bcfw_models)}: the same losses trained "
                     f"by block-coordinate Frank-Wolfe, solver='bcfw', tol={a.bcfw_tol:g} "
                     f"relative duality gap, max_iter={a.bcfw_epochs} epochs, every fit of the "
                     f"inner CV and the refit) on partitions 1..{bcfw_p}"
                     + (" only (compute budget)" if bcfw_p < a.partitions else ""))
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
    fixed = {}
    if a.alpha_from:
        for r in read_partition_rows(a.alpha_from):
            for m in models:
                if not m.startswith("mord ") and split_bcfw(m)[0] == r["model"] \
                        and np.isfinite(r["best_alpha"]):
                    fixed[r["dataset"], r["partition"], m] = r["best_alpha"]
        protocol += (f"  **No inner CV for {', '.join(sorted({k[2] for k in fixed}))}**: each "
                     f"is fitted once per partition at the alpha that the inner CV of the SGD "
                     f"model of the same loss selected on that partition in {a.alpha_from} "
                     f"(compute budget).")
    print(f"{len(tasks)} tasks x {len(models)} models, grid {len(ALPHAS)}, cv {a.cv}, "
          f"n_jobs {a.n_jobs}", flush=True)
    t0 = time.perf_counter()
    res = Parallel(n_jobs=a.n_jobs, verbose=0, return_as="generator_unordered")(
        delayed(run_task)(d, i, models_for(d, i), ALPHAS, a.cv, (a.bcfw_epochs, a.bcfw_tol),
                          {m: fixed[d, i, m] for m in models_for(d, i) if (d, i, m) in fixed})
        for d, i in tasks)
    rows = []
    for k, (rs, dt) in enumerate(res, 1):
        rows.extend(rs)
        print(f"[{time.perf_counter() - t0:7.1f}s] {k}/{len(tasks)} {rs[0]['dataset']} "
              f"p{rs[0]['partition']} ({dt:.1f}s): "
              + " ".join(f"{r['model']}={r['mae']:.3f}" for r in rs), flush=True)
    wall = time.perf_counter() - t0
    if a.merge_from:
        have = {(r["dataset"], r["partition"], r["model"]) for r in rows}
        merged = Counter()
        for path in a.merge_from:
            for r in read_partition_rows(path):
                d, i, m = r["dataset"], r["partition"], r["model"]
                n_max = max(large_p if d in LARGE else a.partitions, exp_p, bcfw_p)
                if d in datasets and i <= n_max and (d, i, m) not in have:
                    rows.append(r)
                    have.add((d, i, m))
                    merged[r["source"]] += 1
        models = model_order(models + [r["model"] for r in rows])
        protocol += ("  Rows read from earlier runs (--merge-from; their protocol and "
                     "library version are those of the file named, see its .md): "
                     + ", ".join(f"{n} rows from {src}" for src, n in merged.items()) + ".")
    meta = {"command": command, "n_jobs": a.n_jobs, "protocol": protocol,
            "info": machine_info(), "n_tasks": len(tasks), "note": a.note}
    text, S = report(rows, datasets, models, meta, wall)
    print()
    print(text)
    base = out_stem(a, "ordinal")
    if base:
        write_text(base, text + "\n")
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
        write_csv(f"{base}.csv", out_rows)
        print(f"wrote {base}.md and .csv")


if __name__ == "__main__":
    main()
