#!/usr/bin/env python
"""Label ranking benchmark: structlearn ``LabelRanker`` vs scikit-learn baselines.

All 16 label-ranking sets of ``label_ranking/`` in the data folder (KEBI /
scikit-lr), 10-fold CV (``KFold(10, shuffle=True, random_state=0)``), mean
Kendall's tau (``structlearn.metrics.kendall_tau``).  Every model of a data
set is fitted in the same process on the same folds.

Models
------
* structlearn ``LabelRanker`` in a pipeline
  ``StandardScaler -> Nystroem(rbf, gamma, n_components=min(n_train, 1000))
  -> LabelRanker(polytope, loss, alpha)`` for every applicable loss on the
  permutahedron and the Birkhoff polytope ("kernel" models), and
  ``StandardScaler -> LabelRanker`` ("linear" models) for the main losses.
* baselines: kNN averaging of the neighbours' rank vectors then sort
  (``KNeighborsRegressor``), Ridge on the rank vectors then sort (linear, and
  with the same Nystroem feature map).

Hyper-parameters are selected inside the training data only: 3-fold inner CV
on the training part of outer fold 0, the selection reused for all 10 folds
(see ``protocol_text`` below, written into the results file).

Usage
-----
    python benchmarks/bench_label_ranking.py --quick     # ~2 min smoke run, prints only
    python benchmarks/bench_label_ranking.py             # full run, writes results/
    python benchmarks/bench_label_ranking.py --datasets iris,glass --n-jobs 1
    python benchmarks/bench_label_ranking.py --only-bcfw --datasets iris,wine \
        --n-jobs 1 --out benchmarks/results/label_ranking_bcfw   # bcfw vs SGD rows

The full run writes ``benchmarks/results/label_ranking.md`` and ``.csv``.
BLAS is pinned to one thread per process (see ``_common``); fit times are
process CPU times (robust to the machine being shared), wall times are kept
in the CSV.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    BCFW_EPOCHS, BCFW_TOL, command_line, common_parser, git_version, label_ranking_csv,
    label_ranking_names, out_stem, parse_args, versions, write_text,
)

import argparse  # noqa: E402
import csv  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.kernel_approximation import Nystroem  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.neighbors import KNeighborsRegressor  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

# scikit-lr numbers measured elsewhere (kNN-Mallows, decision tree)
REFERENCES = {
    "iris": (0.938, None), "wine": (0.944, None), "glass": (0.827, 0.871),
    "vehicle": (0.864, None), "vowel": (0.806, None), "authorship": (0.933, None),
    "housing": (0.704, 0.783), "stock": (0.918, None), "segment": (0.948, 0.953),
}

# ----------------------------------------------------------------- settings
N_FOLDS = 10
INNER_FOLDS = 3
N_COMPONENTS = 1000            # Nystroem components: min(n_train, 1000)
GAMMA_C = (1.0, 0.3, 3.0)      # gamma = c / n_features (after StandardScaler)
ALPHAS = (1e-3, 1e-4, 1e-5)    # LabelRanker alpha (ties -> first = most regularised)
RIDGE_ALPHAS = (1.0, 0.1, 10.0, 0.01, 100.0)
KNN_K = (1, 3, 5, 7, 10, 15, 20, 30, 50)
KNN_WEIGHTS = ("uniform", "distance")
LBFGS_MAX_ITER = 2000
SGD_MAX_ITER = 200             # epochs (library default 50) for n <= SMALL_N
SGD_MAX_ITER_LARGE = 100       # epochs for the larger sets
BIG_N = 5000                   # data sets above this are "big"
N_SUB_BIG = 1000               # training-fold subsample of the big sets
SMALL_N = 600                  # up to this n: full loss list, 3-fold inner CV
MID_N = 1000                   # SMALL_N < n <= MID_N: all but the slowest losses
BIRK_SLOW_MAX_K = 7            # Birkhoff sparsemap/poslearn, linear projection: k <= 7
BIG_BIRK_PROJ_MAX_K = 5        # big sets: Birkhoff Euclidean projection only k <= 5

PERM_LOSSES = ["perceptron", "hinge", "hinge-approx-slack", "poslearn", "sparsemap",
               "m-sparsemap", "projection", "squared"]
BIRK_LOSSES = ["hinge", "poslearn", "sparsemap", "projection", "proj[rs,eucl]",
               "proj[rs,kl]", "proj[birk,kl]", "squared"]
SGD_LOSSES = {"perceptron", "hinge", "hinge-approx-slack", "poslearn"}
#: ``--bcfw``: each of these SGD-trained specs gets a twin "<pol>:<loss> (bcfw) (<fmap>)"
#: trained by block-coordinate Frank-Wolfe (solver="bcfw") to a relative duality gap
#: of BCFW_TOL within BCFW_EPOCHS epochs (``_common``), tuned like its SGD twin
BCFW_LOSSES = ("hinge", "hinge-approx-slack", "poslearn")
LINEAR_MAIN = [("perm", "hinge"), ("perm", "projection"), ("perm", "squared"),
               ("birk", "hinge"), ("birk", "projection"), ("birk", "proj[rs,kl]"),
               ("birk", "squared")]   # birk projection only n <= SMALL_N, k <= 7
MID_DROP = ("hinge-approx-slack", "sparsemap", "m-sparsemap")   # 600 < n <= 1000
LARGE_KERNEL = [("perm", "perceptron"), ("perm", "hinge"), ("perm", "poslearn"),
                ("perm", "projection"), ("perm", "squared"), ("birk", "hinge"),
                ("birk", "projection"), ("birk", "proj[rs,kl]"), ("birk", "squared")]
LARGE_LINEAR = [("perm", "hinge"), ("perm", "projection"), ("perm", "squared"),
                ("birk", "hinge"), ("birk", "proj[rs,kl]"), ("birk", "squared")]
BIG_KERNEL = [("perm", "hinge"), ("perm", "projection"), ("perm", "squared"),
              ("birk", "projection"), ("birk", "proj[rs,kl]"), ("birk", "squared")]
BIG_LINEAR = [("perm", "hinge"), ("perm", "projection"), ("perm", "squared"),
              ("birk", "proj[rs,kl]"), ("birk", "squared")]
QUICK_KERNEL = [("perm", "hinge"), ("perm", "projection"), ("perm", "squared"),
                ("birk", "projection"), ("birk", "proj[rs,kl]"), ("birk", "squared")]
QUICK_LINEAR = [("perm", "projection"), ("perm", "squared")]


def make_loss(name):
    from structlearn.losses import Projection
    if name == "proj[rs,eucl]":
        return Projection(set="row-stochastic", geometry="euclidean")
    if name == "proj[rs,kl]":
        return Projection(set="row-stochastic", geometry="kl")
    if name == "proj[birk,kl]":
        return Projection(set="birkhoff", geometry="kl")
    return name


POLYTOPE = {"perm": "permutahedron", "birk": "birkhoff"}


def sl_spec(pol, loss, fmap, solver=None):
    tag = f"{loss} (bcfw)" if solver == "bcfw" else loss
    name = f"{pol}:{tag} ({fmap})"
    if loss == "sparsemap":
        tune = ("copy", f"{pol}:projection ({fmap})")   # same loss, other oracle
    elif loss == "hinge-approx-slack":
        hinge = "hinge (bcfw)" if solver == "bcfw" else "hinge"
        tune = ("copy", f"{pol}:{hinge} ({fmap})")      # alpha of the margin hinge
    elif loss == "perceptron":
        tune = ("none",)                                # no alpha; anchor's gamma
    elif loss in ("projection", "squared") and fmap == "nys":
        tune = ("full",)                                # gamma x alpha
    else:
        tune = ("alpha",)                               # alpha at anchor's gamma
    return {"name": name, "kind": "sl", "pol": pol, "loss": loss, "fmap": fmap,
            "tune": tune, "anchor": f"{pol}:projection ({fmap})", "solver": solver}


def plan_for(name, quick=False, n_sub=None, bcfw=False, only_bcfw=False):
    """``bcfw``: add the bcfw twins of the SGD-trained max-margin specs;
    ``only_bcfw``: keep only those twins, their SGD twins, the projection /
    squared anchors (their gamma) and the baselines (compute budget)."""
    path = str(label_ranking_csv(name))
    with open(path) as fh:
        n, d, k = (int(v) for v in fh.readline().split(","))
    big = n > BIG_N
    nsub = (n_sub or N_SUB_BIG) if big else None
    specs = [{"name": "kNN", "kind": "knn", "fmap": "lin", "tune": ("knn",)},
             {"name": "Ridge (lin)", "kind": "ridge", "fmap": "lin", "tune": ("ridge",)},
             {"name": "Ridge (nys)", "kind": "ridge", "fmap": "nys", "tune": ("ridge",)}]
    if big:
        specs.append({"name": "kNN (full train)", "kind": "knn", "fmap": "lin",
                      "tune": ("copy", "kNN"), "full_train": True})
    if quick:
        kern, lin = QUICK_KERNEL, QUICK_LINEAR
    elif big:
        kern, lin = BIG_KERNEL, BIG_LINEAR
    elif n > MID_N:
        kern, lin = LARGE_KERNEL, LARGE_LINEAR
    else:
        kern = [("perm", l) for l in PERM_LOSSES] + [("birk", l) for l in BIRK_LOSSES]
        lin = LINEAR_MAIN
        if n > SMALL_N:
            kern = [s for s in kern if s[1] not in MID_DROP]
        if k > BIRK_SLOW_MAX_K:
            kern = [s for s in kern if s not in (("birk", "sparsemap"), ("birk", "poslearn"))]
        if n > SMALL_N or k > BIRK_SLOW_MAX_K:
            lin = [s for s in lin if s != ("birk", "projection")]
    if big and k > BIG_BIRK_PROJ_MAX_K:
        kern = [s for s in kern if s != ("birk", "projection")]
    # anchors first (others take their gamma / hyper-parameters)
    kspecs = [sl_spec(p, l, "nys") for p, l in kern]
    kspecs.sort(key=lambda s: s["tune"][0] != "full")
    lspecs = [sl_spec(p, l, "lin") for p, l in lin]
    if bcfw or only_bcfw:
        twins = [sl_spec(s["pol"], s["loss"], s["fmap"], "bcfw") for s in kspecs + lspecs
                 if s["loss"] in BCFW_LOSSES]
        if only_bcfw:
            keep = {"projection", "squared"} | set(BCFW_LOSSES)
            kspecs = [s for s in kspecs if s["loss"] in keep]
            lspecs = [s for s in lspecs if s["loss"] in keep]
        # copies after the spec they copy from (hinge-approx-slack copies hinge)
        lspecs += sorted(twins, key=lambda s: s["tune"][0] == "copy")
    specs += kspecs + lspecs
    n_tr = int(round(n * (N_FOLDS - 1) / N_FOLDS))
    n_eff = min(n_tr, nsub) if nsub else n_tr
    cost = n_eff * min(n_eff, N_COMPONENTS) * (k + k * k) * len(specs)
    sgd_iter = SGD_MAX_ITER if n <= SMALL_N else SGD_MAX_ITER_LARGE
    for s in specs:
        s["sgd_max_iter"] = sgd_iter
    return {"name": name, "path": path, "n": n, "d": d, "k": k, "n_sub": nsub,
            "specs": specs, "holdout": n > SMALL_N, "sgd_max_iter": sgd_iter, "quick": quick, "cost": cost,
            "gamma_c": (1.0, 3.0) if quick else GAMMA_C,
            "alphas": (1e-3, 1e-4) if quick else ALPHAS}


# --------------------------------------------------------------- utilities
def ranks_from_scores(S):
    """Rank vectors (1 = best) from predicted mean ranks (smaller = better)."""
    order = np.argsort(S, axis=1, kind="stable")
    R = np.empty_like(order)
    np.put_along_axis(R, order, np.arange(1, S.shape[1] + 1)[None, :], axis=1)
    return R


def feature_map(fmap, gamma, n_train, random_state=0):
    if fmap == "lin":
        return StandardScaler()
    return make_pipeline(StandardScaler(), Nystroem(
        kernel="rbf", gamma=gamma, n_components=min(n_train, N_COMPONENTS),
        random_state=random_state))


def make_estimator(spec, params, k):
    from structlearn import LabelRanker
    if spec["kind"] == "knn":
        return KNeighborsRegressor(n_neighbors=params["k"], weights=params["weights"])
    if spec["kind"] == "ridge":
        return Ridge(alpha=params["alpha"])
    if spec.get("solver") == "bcfw":
        return LabelRanker(polytope=POLYTOPE[spec["pol"]], loss=make_loss(spec["loss"]),
                           alpha=params.get("alpha", 1e-3), solver="bcfw",
                           max_iter=BCFW_EPOCHS, tol=BCFW_TOL, random_state=0)
    sgd = spec["loss"] in SGD_LOSSES
    return LabelRanker(polytope=POLYTOPE[spec["pol"]], loss=make_loss(spec["loss"]),
                       alpha=params.get("alpha", 1e-3),
                       max_iter=spec["sgd_max_iter"] if sgd else LBFGS_MAX_ITER,
                       random_state=0)


def fit_predict(spec, params, Ztr, Ytr, Zte):
    """Fit on features; returns (pred ranks, fit cpu, fit wall, pred cpu, info)."""
    est = make_estimator(spec, params, Ytr.shape[1])
    info = {"conv_warn": 0, "other_warn": 0, "n_iter": np.nan, "objective": np.nan,
            "gap": np.nan, "error": ""}
    if spec["kind"] == "knn" and params["k"] > len(Ztr):
        est.set_params(n_neighbors=len(Ztr))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            est.fit(Ztr, Ytr)
        except Exception as exc:  # keep going, report
            info["error"] = f"{type(exc).__name__}: {exc}"[:300]
            return None, np.nan, np.nan, np.nan, info
        fit_cpu, fit_wall = time.process_time() - c0, time.perf_counter() - w0
        c0 = time.process_time()
        if spec["kind"] == "sl":
            pred = est.predict(Zte)
        else:
            pred = ranks_from_scores(est.predict(Zte))
        pred_cpu = time.process_time() - c0
    for wi in w:
        if issubclass(wi.category, ConvergenceWarning):
            info["conv_warn"] += 1
        else:
            info["other_warn"] += 1
    if spec["kind"] == "sl":
        info["n_iter"] = est.n_iter_
        info["objective"] = est.objective_
        if getattr(est, "duality_gap_", None) is not None:
            info["gap"] = float(est.duality_gap_)
    return pred, fit_cpu, fit_wall, pred_cpu, info


_WARMED = set()


def warm_up(specs):
    """JIT-compile the Numba kernels once per process, outside any timing."""
    from structlearn import LabelRanker
    rng = np.random.RandomState(0)
    X = rng.randn(24, 3)
    Y = np.argsort(rng.rand(24, 4), axis=1) + 1
    for s in specs:
        key = (s.get("pol"), s.get("loss"), s.get("solver"))
        if s["kind"] != "sl" or key in _WARMED:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LabelRanker(polytope=POLYTOPE[s["pol"]], loss=make_loss(s["loss"]),
                            solver=s.get("solver") or "auto",
                            max_iter=3, random_state=0).fit(X, Y)
            m.predict(X)
        _WARMED.add(key)


def _candidates(spec, plan, chosen):
    t = spec["tune"][0]
    gammas = [c / plan["d"] for c in plan["gamma_c"]]
    if t == "knn":
        return [{"k": k, "weights": w} for k in KNN_K for w in KNN_WEIGHTS]
    if t == "ridge":
        gs = gammas if spec["fmap"] == "nys" else [None]
        return [{"gamma": g, "alpha": a} for g in gs for a in RIDGE_ALPHAS]
    if t == "full":
        return [{"gamma": g, "alpha": a} for g in gammas for a in plan["alphas"]]
    anchor = spec["anchor"]
    if anchor not in chosen:   # e.g. no Birkhoff projection on the big sets
        anchor = f"{spec['pol']}:squared ({spec['fmap']})"
    g = chosen[anchor].get("gamma") if spec["fmap"] == "nys" else None
    if t == "alpha":
        return [{"gamma": g, "alpha": a} for a in plan["alphas"]]
    if t == "none":
        return [{"gamma": g}]
    raise ValueError(t)


# -------------------------------------------------------------- main loop
def run_dataset(plan):
    """Tune on fold 0's training part, then 10-fold CV of every model."""
    from structlearn.datasets import read_label_ranking_csv
    from structlearn.metrics import kendall_tau
    from threadpoolctl import threadpool_limits

    t_start, c_start = time.perf_counter(), time.process_time()
    limiter = threadpool_limits(1)
    np.seterr(all="ignore")
    X, Y = read_label_ranking_csv(plan["path"])
    n, k = Y.shape
    specs = plan["specs"]
    folds = list(KFold(N_FOLDS, shuffle=True, random_state=0).split(X))

    def subsample(tr, seed):
        if plan["n_sub"] and len(tr) > plan["n_sub"]:
            rng = np.random.RandomState(seed)
            return np.sort(rng.choice(tr, plan["n_sub"], replace=False))
        return tr

    t_w = time.perf_counter()
    warm_up(specs)
    warm_time = time.perf_counter() - t_w

    # ---------------- tuning: inner 3-fold CV on outer fold 0's training part
    t_tune = time.perf_counter()
    tr0 = subsample(folds[0][0], 0)
    inner = list(KFold(INNER_FOLDS, shuffle=True, random_state=0).split(tr0))
    if plan["holdout"]:
        inner = inner[:1]   # one 2/3 - 1/3 split
    cache = {}

    def inner_feats(fmap, gamma):
        key = (fmap, gamma)
        if key not in cache:
            out = []
            for itr, iva in inner:
                a, b = tr0[itr], tr0[iva]
                fm = feature_map(fmap, gamma, len(a))
                out.append((fm.fit_transform(X[a]), Y[a], fm.transform(X[b]), Y[b]))
            cache[key] = out
        return cache[key]

    chosen, inner_score, tune_info = {}, {}, {}
    for spec in specs:
        t = spec["tune"][0]
        if t == "copy":
            continue
        cands = _candidates(spec, plan, chosen)
        scores, cw, errs = [], 0, []
        for params in cands:
            taus = []
            for Ztr, Ytr, Zva, Yva in inner_feats(spec["fmap"], params.get("gamma")):
                pred, _, _, _, info = fit_predict(spec, params, Ztr, Ytr, Zva)
                cw += info["conv_warn"]
                if pred is None:
                    errs.append(info["error"])
                    taus.append(-np.inf)
                else:
                    taus.append(kendall_tau(Yva, pred))
            scores.append(float(np.mean(taus)))
        best = int(np.argmax(scores))
        chosen[spec["name"]] = cands[best]
        inner_score[spec["name"]] = scores[best]
        tune_info[spec["name"]] = {"n_cand": len(cands), "conv_warn": cw,
                                   "errors": sorted(set(errs))}
    for spec in specs:
        if spec["tune"][0] == "copy":
            chosen[spec["name"]] = dict(chosen[spec["tune"][1]])
            inner_score[spec["name"]] = np.nan
            tune_info[spec["name"]] = {"n_cand": 0, "conv_warn": 0, "errors": []}
    cache.clear()
    tune_time = time.perf_counter() - t_tune

    # ---------------- outer 10-fold CV
    t_cv = time.perf_counter()
    rows = []
    for i, (tr_full, te) in enumerate(folds):
        tr = subsample(tr_full, i)
        feats = {}

        def get_feats(fmap, gamma, idx):
            key = (fmap, gamma, len(idx))
            if key not in feats:
                fm = feature_map(fmap, gamma, len(idx))
                c0, w0 = time.process_time(), time.perf_counter()
                Ztr = fm.fit_transform(X[idx])
                fc, fw = time.process_time() - c0, time.perf_counter() - w0
                c0 = time.process_time()
                Zte = fm.transform(X[te])
                feats[key] = (Ztr, Zte, fc, fw, time.process_time() - c0)
            return feats[key]

        for spec in specs:
            params = chosen[spec["name"]]
            idx = tr_full if spec.get("full_train") else tr
            Ztr, Zte, fc, fw, tc = get_feats(spec["fmap"], params.get("gamma"), idx)
            pred, fit_cpu, fit_wall, pred_cpu, info = fit_predict(
                spec, params, Ztr, Y[idx], Zte)
            tau = kendall_tau(Y[te], pred) if pred is not None else np.nan
            rows.append({
                "dataset": plan["name"], "model": spec["name"], "kind": spec["kind"],
                "fmap": spec["fmap"], "polytope": spec.get("pol", ""),
                "loss": spec.get("loss", ""), "fold": i, "tau": tau,
                "fit_cpu": fit_cpu + fc, "fit_wall": fit_wall + fw,
                "fmap_cpu": fc, "pred_cpu": pred_cpu + tc, "n_train": len(idx),
                "n_test": len(te), "params": _fmt_params(params, plan["d"]),
                "inner_tau": inner_score[spec["name"]],
                "tune_conv_warn": tune_info[spec["name"]]["conv_warn"],
                "tune_n_cand": tune_info[spec["name"]]["n_cand"],
                "tune_errors": "; ".join(tune_info[spec["name"]]["errors"]),
                **info})
    cv_time = time.perf_counter() - t_cv
    limiter.restore_original_limits()
    meta = {"n": n, "d": plan["d"], "k": k, "n_sub": plan["n_sub"],
            "holdout": plan["holdout"], "sgd_max_iter": plan["sgd_max_iter"],
            "models": [s["name"] for s in specs],
            "warmup_wall": warm_time, "tune_wall": tune_time, "cv_wall": cv_time,
            "total_wall": time.perf_counter() - t_start,
            "total_cpu": time.process_time() - c_start, "pid": os.getpid()}
    res = {"name": plan["name"], "rows": rows, "meta": meta}
    if plan.get("parts_dir"):
        import pickle
        os.makedirs(plan["parts_dir"], exist_ok=True)
        with open(os.path.join(plan["parts_dir"], plan["name"] + ".pkl"), "wb") as fh:
            pickle.dump(res, fh)
    print(f"[{plan['name']}] done: tune {tune_time:.0f}s, cv {cv_time:.0f}s wall "
          f"(cpu {meta['total_cpu']:.0f}s)", flush=True)
    return res


def _fmt_params(params, d):
    out = []
    for key, v in params.items():
        if key == "gamma":
            if v is not None:
                out.append(f"gamma={v * d:g}/d")
        elif isinstance(v, float):
            out.append(f"{key}={v:g}")
        else:
            out.append(f"{key}={v}")
    return " ".join(out)


# ------------------------------------------------------------ summarising
SUMMARY_FIELDS = ["dataset", "model", "kind", "fmap", "polytope", "loss", "n_train",
                  "tau_mean", "tau_sd", "fit_cpu_mean", "fit_wall_mean",
                  "fmap_cpu_mean", "pred_cpu_mean", "n_iter_mean", "n_iter_max",
                  "conv_warn_folds", "tune_conv_warn", "n_errors", "error",
                  "gap_mean", "gap_max",
                  "params", "inner_tau", "tune_n_cand", "objective_mean", "fold_taus"]


def summarize(rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # nanmean of all-NaN columns
        return _summarize(rows)


def _summarize(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["model"]), []).append(r)
    out = []
    for (ds, model), rs in groups.items():
        taus = np.array([r["tau"] for r in rs], dtype=float)
        ok = np.isfinite(taus)
        f = lambda key: float(np.nanmean([r[key] for r in rs])) if ok.any() else np.nan  # noqa: E731
        out.append({
            "dataset": ds, "model": model, "kind": rs[0]["kind"], "fmap": rs[0]["fmap"],
            "polytope": rs[0]["polytope"], "loss": rs[0]["loss"],
            "n_train": int(np.mean([r["n_train"] for r in rs])),
            "tau_mean": float(np.mean(taus[ok])) if ok.any() else np.nan,
            "tau_sd": float(np.std(taus[ok], ddof=1)) if ok.sum() > 1 else np.nan,
            "fit_cpu_mean": f("fit_cpu"), "fit_wall_mean": f("fit_wall"),
            "fmap_cpu_mean": f("fmap_cpu"), "pred_cpu_mean": f("pred_cpu"),
            "n_iter_mean": f("n_iter"),
            "n_iter_max": float(np.nanmax([r["n_iter"] for r in rs]))
            if np.isfinite([r["n_iter"] for r in rs]).any() else np.nan,
            "conv_warn_folds": int(sum(r["conv_warn"] > 0 for r in rs)),
            "gap_mean": f("gap") if "gap" in rs[0] else np.nan,
            "gap_max": float(np.nanmax([r["gap"] for r in rs]))
            if "gap" in rs[0] and np.isfinite([r["gap"] for r in rs]).any() else np.nan,
            "tune_conv_warn": rs[0]["tune_conv_warn"],
            "n_errors": int(sum(bool(r["error"]) for r in rs)),
            "error": next((r["error"] for r in rs if r["error"]), "") or rs[0]["tune_errors"],
            "params": rs[0]["params"], "inner_tau": rs[0]["inner_tau"],
            "tune_n_cand": rs[0]["tune_n_cand"], "objective_mean": f("objective"),
            "fold_taus": ";".join(f"{t:.4f}" for t in taus),
            "_taus": taus, "_obj": np.array([r["objective"] for r in rs], float)})
    return out


def write_results(summary, md, stem):
    """``<stem>.md`` (the report) and ``<stem>.csv`` (the summary rows)."""
    write_text(stem, md)
    with open(f"{stem}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SUMMARY_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in summary:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v)
                        for k, v in r.items() if k in SUMMARY_FIELDS})


# -------------------------------------------------------------- rendering
def _t(r):
    if r is None or not np.isfinite(r["tau_mean"]):
        return "error" if r is not None else "–"
    return f"{r['tau_mean']:.3f} ± {r['tau_sd']:.3f}"


def _s(x):
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def protocol_text(meta):
    return f"""\
Protocol
--------
* Data: the 16 complete-ranking sets of `label_ranking/` in the data folder
  (`$STRUCTLEARN_BENCH_DATA`) read with
  `structlearn.datasets.read_label_ranking_csv`.  Outer CV: `KFold({N_FOLDS},
  shuffle=True, random_state=0)`, the same folds for every model (all models of a
  data set run in the same process).  Score: mean Kendall's tau
  (`structlearn.metrics.kendall_tau`) over the test fold; table cells are the
  mean ± sd (ddof=1) over the {N_FOLDS} folds.
* Big sets (n > {BIG_N}: cpu, pendigits, elevators, calhousing, fried): every
  training fold is **subsampled to {N_SUB_BIG} rows** (uniformly, seed = fold
  index) for *all* models; the test folds are complete.  "kNN (full train)"
  additionally shows kNN on the complete training folds.
* Feature map ("nys"): `StandardScaler -> Nystroem(kernel='rbf', gamma,
  n_components=min(n_train, {N_COMPONENTS}), random_state=0)`; "lin" is
  `StandardScaler` only.  Fit times include fitting the feature map.
* Hyper-parameters are chosen **inside the training data only**, on the
  training part of outer fold 0 (subsampled like the others for the big sets),
  then reused for all {N_FOLDS} folds: 3-fold inner CV (`KFold(3, shuffle=True,
  random_state=0)`) for n <= {SMALL_N}; for the larger sets (authorship, vehicle,
  stock, segment and the big ones) only the first of those 3 splits (train on
  2/3, validate on 1/3).  The
  selection never sees fold 0's test part, but rows of fold 0's training part
  are test rows of folds 1-9 (the same for every model, baselines included).
  Ties go to the first candidate.
  - gamma = c / n_features, c in {GAMMA_C}; LabelRanker alpha in {ALPHAS}.
  - "full" tuning (gamma x alpha): projection and squared on both polytopes
    (the anchors) and Ridge (nys).  Every other kernel loss uses the gamma
    selected for `projection` on its polytope and tunes alpha only; the
    perceptron (no penalty) tunes nothing; `hinge-approx-slack` reuses the
    alpha of `hinge` (its fits are ~15x slower).  `sparsemap` is the same loss
    as `projection` (other oracle), so it reuses projection's (gamma, alpha):
    its score is a check of the two oracles, not a separate model.
  - kNN: k in {KNN_K} x weights in {KNN_WEIGHTS} (mean of the neighbours' rank
    vectors, then sort); Ridge on the rank vectors (then sort): alpha in
    {RIDGE_ALPHAS}.
* LabelRanker: `decoding='calibrated'` (default), `max_iter={LBFGS_MAX_ITER}`
  for L-BFGS losses; SGD losses (perceptron, hinge, hinge-approx-slack,
  poslearn) `max_iter={SGD_MAX_ITER}` epochs for n <= {SMALL_N}, {SGD_MAX_ITER_LARGE}
  above (library default 50); `tol` left at the library default (the
  library's stopping rules changed during this work: see "library version"
  above), `random_state=0`.
  ConvergenceWarnings are suppressed and counted ("cw": folds whose final
  fit warned).
* Loss lists (compute budget; the Birkhoff losses with k^2 parts dominate):
  n <= {SMALL_N} (iris, wine, wisconsin, glass, bodyfat, housing, vowel): every loss
  of the issue, except for k > {BIRK_SLOW_MAX_K} (wisconsin k=16, vowel k=11) no
  Birkhoff `sparsemap`, `poslearn` and linear Birkhoff `projection`;
  {SMALL_N} < n <= {MID_N} (authorship, vehicle, stock): all but `hinge-approx-slack`,
  `sparsemap`, `m-sparsemap` (and no linear Birkhoff `projection`); segment:
  kernel {', '.join(f'{p}:{l}' for p, l in LARGE_KERNEL)}; linear
  {', '.join(f'{p}:{l}' for p, l in LARGE_LINEAR)}; big sets: kernel
  {', '.join(f'{p}:{l}' for p, l in BIG_KERNEL)} (Birkhoff `projection` only for
  k <= {BIG_BIRK_PROJ_MAX_K}: cpu, calhousing, fried), linear
  {', '.join(f'{p}:{l}' for p, l in BIG_LINEAR)}.
* Fit time = process CPU seconds per fold (feature map + estimator; one BLAS
  thread; Numba kernels compiled before timing).  The machine (2 cores) was
  shared with other jobs, so wall times (CSV) are ~2x the CPU times.
* "selected" = the structlearn configuration (kernel or linear, any loss)
  with the best inner-CV score (an honest choice); "best on test" = the
  configuration with the best outer-CV mean (optimistic, for reference).
"""


def render_markdown(summary, meta):
    by = {}
    for r in summary:
        by.setdefault(r["dataset"], {})[r["model"]] = r
    order = sorted(by, key=lambda d: meta["datasets"][d]["n"])
    L = []
    L.append("# Label ranking: structlearn LabelRanker vs scikit-learn baselines\n")
    if meta.get("git"):
        L.append(f"Library version: structlearn working tree at commit {meta['git']}.\n")
    if meta.get("note"):
        L.append(meta["note"] + "\n")
    L.append(f"Command: `{meta['argv']}`  \n"
             f"Total wall time: {meta['wall']:.0f} s; host: {platform.node()} "
             f"({os.cpu_count()} CPUs, shared); Python {platform.python_version()}; "
             f"{versions()}.\n")
    if meta["quick"]:
        L.append("**QUICK RUN** (3 small sets, reduced losses and grid).\n")
    L.append(protocol_text(meta))

    # ---- overview + targets
    L.append("\n## Overview and targets\n")
    L.append("scikit-lr references (measured elsewhere): kNN-Mallows / decision tree. "
             "Target: structlearn >= the best available reference.\n")
    L.append("| dataset | n | k | n_train | kNN | Ridge (lin) | Ridge (nys) | "
             "structlearn selected (config) | best on test (config) | "
             "ref kNN-M | ref DT | target |")
    L.append("|---|---:|---:|---:|---|---|---|---|---|---:|---:|---|")
    targets = []
    for ds in order:
        m = by[ds]
        md = meta["datasets"][ds]
        sl = [r for r in m.values() if r["kind"] == "sl" and np.isfinite(r["tau_mean"])]
        sel = max((r for r in sl if np.isfinite(r["inner_tau"])),
                  key=lambda r: r["inner_tau"], default=None)
        bot = max(sl, key=lambda r: r["tau_mean"], default=None)
        ref = REFERENCES.get(ds, (None, None))
        tgt = max([v for v in ref if v is not None], default=None)
        verdict = "–"
        if tgt is not None and sel is not None:
            dlt = sel["tau_mean"] - tgt
            verdict = (f"met (+{dlt:.3f})" if dlt >= 0 else f"**missed ({dlt:.3f})**")
            targets.append((ds, ref, sel, bot, dlt))
        L.append(f"| {ds} | {md['n']} | {md['k']} | {m['kNN']['n_train']} | "
                 f"{_t(m.get('kNN'))} | {_t(m.get('Ridge (lin)'))} | "
                 f"{_t(m.get('Ridge (nys)'))} | "
                 f"{_t(sel)} ({sel['model'] if sel else ''}) | "
                 f"{_t(bot)} ({bot['model'] if bot else ''}) | "
                 f"{ref[0] if ref[0] else ''} | {ref[1] if ref[1] else ''} | {verdict} |")
    if targets:
        met = sum(t[4] >= 0 for t in targets)
        L.append(f"\nTargets met by the selected configuration: {met} / {len(targets)}.")
        for ds, ref, sel, bot, dlt in targets:
            knn_ref = sel["tau_mean"] - ref[0]
            L.append(f"- {ds}: selected {sel['tau_mean']:.3f} vs kNN-Mallows {ref[0]:.3f} "
                     f"({knn_ref:+.3f})" + (f", vs DT {ref[1]:.3f} "
                                            f"({sel['tau_mean'] - ref[1]:+.3f})"
                                            if ref[1] else "")
                     + f"; best on test {bot['tau_mean']:.3f} ({bot['model']}).")

    # ---- projection vs squared
    L.append("\n## Does projecting beat the squared loss? (Blondel 2019)\n")
    L.append("Same feature-map family and polytope; each loss tuned on its own "
             "(kernel: gamma x alpha, linear: alpha). Δ = projection − squared; "
             "wins = folds where projection > squared / ties.\n")
    L.append("| dataset | perm nys: proj | sq | Δ | wins/ties | birk nys: proj | sq | Δ | "
             "wins/ties | perm lin: Δ | birk lin: Δ |")
    L.append("|---|---|---|---:|---:|---|---|---:|---:|---:|---:|")
    tally = {}
    for ds in order:
        m = by[ds]
        cells = [ds]
        for pol, fm in (("perm", "nys"), ("birk", "nys"), ("perm", "lin"), ("birk", "lin")):
            a, b = m.get(f"{pol}:projection ({fm})"), m.get(f"{pol}:squared ({fm})")
            if a is None or b is None:
                cells += ["–", "–", "–", "–"] if fm == "nys" else ["–"]
                continue
            dlt = a["tau_mean"] - b["tau_mean"]
            wins = int(np.sum(a["_taus"] > b["_taus"] + 1e-12))
            ties = int(np.sum(np.abs(a["_taus"] - b["_taus"]) <= 1e-12))
            tally.setdefault((pol, fm), []).append(dlt)
            if fm == "nys":
                cells += [_t(a), _t(b), f"{dlt:+.4f}", f"{wins}/{ties}"]
            else:
                cells += [f"{dlt:+.4f}"]
        L.append("| " + " | ".join(cells) + " |")
    for (pol, fm), ds_ in tally.items():
        ds_ = np.array(ds_)
        L.append(f"- {pol} ({fm}): projection better on {np.sum(ds_ > 0)} / {len(ds_)} "
                 f"data sets, worse on {np.sum(ds_ < 0)}; mean Δ {ds_.mean():+.4f}.")

    # ---- fit time ratios
    L.append("\n## Fit time of the selected structlearn configuration vs baselines\n")
    L.append("Mean CPU seconds per fold (feature map included); ratio = "
             "structlearn / baseline.\n")
    L.append("| dataset | selected config | fit s | kNN s | ratio | Ridge (lin) s | ratio | "
             "Ridge (nys) s | ratio | perm:projection (nys) s |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for ds in order:
        m = by[ds]
        sl = [r for r in m.values() if r["kind"] == "sl" and np.isfinite(r["inner_tau"])
              and np.isfinite(r["tau_mean"])]
        sel = max(sl, key=lambda r: r["inner_tau"], default=None)
        if sel is None:
            continue
        kn, rl, rn = m["kNN"], m["Ridge (lin)"], m["Ridge (nys)"]
        pp = m.get("perm:projection (nys)")
        L.append(f"| {ds} | {sel['model']} | {_s(sel['fit_cpu_mean'])} | "
                 f"{_s(kn['fit_cpu_mean'])} | {_s(sel['fit_cpu_mean'] / kn['fit_cpu_mean'])} | "
                 f"{_s(rl['fit_cpu_mean'])} | {_s(sel['fit_cpu_mean'] / rl['fit_cpu_mean'])} | "
                 f"{_s(rn['fit_cpu_mean'])} | {_s(sel['fit_cpu_mean'] / rn['fit_cpu_mean'])} | "
                 f"{_s(pp['fit_cpu_mean']) if pp else '–'} |")

    # ---- sparsemap vs projection oracle check
    chk = []
    for ds in order:
        m = by[ds]
        for pol in ("perm", "birk"):
            a, b = m.get(f"{pol}:sparsemap (nys)"), m.get(f"{pol}:projection (nys)")
            if a is None or b is None or not np.isfinite(a["tau_mean"]):
                continue
            rel = np.nanmax(np.abs(a["_obj"] - b["_obj"]) / np.maximum(np.abs(b["_obj"]), 1e-12))
            dt = np.max(np.abs(a["_taus"] - b["_taus"]))
            chk.append(f"| {ds} | {pol} | {a['tau_mean']:.4f} | {b['tau_mean']:.4f} | "
                       f"{dt:.4f} | {rel:.2e} | {_s(a['fit_cpu_mean'])} | "
                       f"{_s(b['fit_cpu_mean'])} | {_s(a['fit_cpu_mean'] / b['fit_cpu_mean'])} |")
    if chk:
        L.append("\n## Same loss, two oracles: `sparsemap` vs `projection`\n")
        L.append("Identical (gamma, alpha). Max fold |Δtau|, max relative difference of "
                 "the final objective, fit CPU s. Since commit b493f92 the library computes "
                 "SparseMAP on the permutahedron *by* its Euclidean projection "
                 "(`Permutahedron.sparsemap_by_projection = True`), so the perm rows "
                 "compare a code path with itself; the Birkhoff rows still compare the "
                 "active-set solver (LAP oracle) with Dykstra's projection.\n")
        L.append("| dataset | polytope | tau sparsemap | tau projection | max abs Δtau | "
                 "max rel Δobj | fit s sparsemap | fit s projection | slowdown |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        L += chk

    # ---- bcfw twins vs their SGD twins
    tw = []
    for ds in order:
        m = by[ds]
        for name, r in m.items():
            if " (bcfw) (" not in name:
                continue
            sg = m.get(name.replace(" (bcfw)", ""))
            dt = (f"{r['tau_mean'] - sg['tau_mean']:+.4f}" if sg is not None
                  and np.isfinite(r["tau_mean"]) and np.isfinite(sg["tau_mean"]) else "–")
            tw.append(f"| {ds} | {name} | {_t(r)} | {_t(sg)} | {dt} | "
                      f"{_e(r['gap_mean'])} / {_e(r['gap_max'])} | {_s(r['n_iter_mean'])} | "
                      f"{r['conv_warn_folds']}/{len(r['_taus'])} | {_s(r['fit_cpu_mean'])} | "
                      f"{_s(sg['fit_cpu_mean']) if sg else '–'} | {r['params']} | "
                      f"{sg['params'] if sg else ''} |")
    if tw:
        L.append("\n## Converged training (bcfw) vs SGD, same loss\n")
        L.append(f"Each bcfw model is tuned like its SGD twin (alpha at the anchor's gamma; "
                 f"approximate slack reuses the hinge's alpha) and trained with "
                 f"`solver='bcfw', tol={BCFW_TOL:g}` (relative duality gap), "
                 f"`max_iter={BCFW_EPOCHS}` epochs.  Δ = tau(bcfw) − tau(SGD); gap = "
                 f"`duality_gap_` at the stop of the outer-fold fits (mean / max); "
                 f"budget = folds whose fit stopped on the epoch budget "
                 f"(ConvergenceWarning); fit = mean CPU s per fold.\n")
        L.append("| dataset | model | tau bcfw | tau SGD | Δ | gap mean / max | epochs | "
                 "budget | fit s bcfw | fit s SGD | params bcfw | params SGD |")
        L.append("|---|---|---|---|---:|---|---:|---:|---:|---:|---|---|")
        L += tw

    # ---- convergence
    L.append("\n## Convergence warnings and errors\n")
    cw = [r for r in summary if r["conv_warn_folds"] or r["n_errors"] or r["tune_conv_warn"]]
    if not cw:
        L.append("None.")
    else:
        L.append("| dataset | model | folds warned (final fits) | warnings during tuning "
                 "| n_iter mean / max | errors |")
        L.append("|---|---|---:|---:|---|---|")
        for r in sorted(cw, key=lambda r: (r["dataset"], r["model"])):
            L.append(f"| {r['dataset']} | {r['model']} | {r['conv_warn_folds']}/10 | "
                     f"{r['tune_conv_warn']} | {_s(r['n_iter_mean'])} / {_s(r['n_iter_max'])} | "
                     f"{r['error'][:120] if r['n_errors'] else ''} |")

    # ---- full per-dataset tables
    L.append("\n## All models, per data set\n")
    L.append("tau = mean ± sd over 10 folds; fit = mean CPU s per fold (feature map "
             "included); cw = folds whose fit raised a ConvergenceWarning; inner = "
             "inner-CV tau of the chosen hyper-parameters.\n")
    for ds in order:
        md = meta["datasets"][ds]
        L.append(f"\n### {ds} (n={md['n']}, d={md['d']}, k={md['k']}"
                 + (f", training folds subsampled to {md['n_sub']}" if md["n_sub"] else "")
                 + f"; tuning {md['tune_wall']:.0f}s, CV {md['cv_wall']:.0f}s wall)\n")
        L.append("| model | tau | fit s | iters | cw | hyper-parameters | inner |")
        L.append("|---|---|---:|---:|---:|---|---:|")
        for r in sorted(by[ds].values(), key=lambda r: -np.nan_to_num(r["tau_mean"], nan=-9)):
            L.append(f"| {r['model']} | {_t(r)} | {_s(r['fit_cpu_mean'])} | "
                     f"{_s(r['n_iter_mean'])} | {r['conv_warn_folds']} | {r['params']} | "
                     f"{_inner(r)} |")
    L.append("")
    return "\n".join(L)


def _e(x):
    return f"{x:.1e}" if x is not None and np.isfinite(x) else "–"


def _inner(r):
    return f"{r['inner_tau']:.3f}" if np.isfinite(r["inner_tau"]) else ""


# ------------------------------------------------------------------- main
SLOW_FIRST = ["segment", "vowel", "pendigits", "elevators", "housing", "stock",
              "vehicle", "authorship", "wisconsin", "fried", "cpu", "calhousing",
              "bodyfat", "glass", "wine", "iris"]


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        parents=[common_parser("quick", "datasets", "n_jobs", "out", "no_write", "data",
                               n_jobs=2, out="label_ranking", datasets="all 16")])
    p.add_argument("--n-sub", type=int, default=None,
                   help="subsample size of each training fold of the big sets")
    p.add_argument("--raw", default=None,
                   help="also pickle the per-fold rows here (to re-render the tables)")
    p.add_argument("--parts-dir", default=None,
                   help="save each data set's raw result here as it finishes and "
                        "reuse the ones already there (resume an interrupted run)")
    p.add_argument("--note", default=None, help="a line added to the results header")
    p.add_argument("--bcfw", action="store_true",
                   help="add a bcfw twin (solver='bcfw', certified duality gap) of every "
                        "SGD-trained max-margin model (hinge, hinge-approx-slack, poslearn)")
    p.add_argument("--only-bcfw", action="store_true",
                   help="the bcfw twins, their SGD twins, the projection/squared anchors "
                        "and the baselines only (implies --bcfw; compute budget)")
    p.add_argument("--render", default=None,
                   help="only re-render the tables from a --raw pickle")
    args = parse_args(p, argv)
    out = out_stem(args, "label_ranking")
    if args.render:
        import pickle
        with open(args.render, "rb") as fh:
            rows, meta = pickle.load(fh)
        if args.note:
            meta["note"] = args.note
        md = render_markdown(summarize(rows), meta)
        if out:
            write_results(summarize(rows), md, out)
            print(f"wrote {out}.md and {out}.csv")
        return 0

    names = label_ranking_names()
    if args.quick:
        names = ["iris", "wine", "glass", "housing"]
    if args.datasets:
        names = args.datasets
    plans = [plan_for(n, quick=args.quick, n_sub=args.n_sub, bcfw=args.bcfw,
                      only_bcfw=args.only_bcfw) for n in names]
    # slowest first (measured) for load balancing over the worker processes
    plans.sort(key=lambda pl: (SLOW_FIRST.index(pl["name"]) if pl["name"] in SLOW_FIRST
                               else len(SLOW_FIRST), -pl["cost"]))
    done = []
    if args.parts_dir:
        import pickle
        for pl in plans:
            f = os.path.join(args.parts_dir, pl["name"] + ".pkl")
            if os.path.exists(f):
                with open(f, "rb") as fh:
                    done.append(pickle.load(fh))
                print(f"[{pl['name']}] reusing {f}", file=sys.stderr)
        have = {r["name"] for r in done}
        plans = [pl for pl in plans if pl["name"] not in have]
        for pl in plans:
            pl["parts_dir"] = args.parts_dir

    git = git_version()   # the workers import structlearn right after this
    t0 = time.perf_counter()
    if args.n_jobs == 1 or len(plans) <= 1:
        results = [run_dataset(pl) for pl in plans]
    else:
        from joblib import Parallel, delayed
        results = Parallel(n_jobs=args.n_jobs, backend="loky")(
            delayed(run_dataset)(pl) for pl in plans)
    results = done + results
    wall = time.perf_counter() - t0 + sum(r["meta"].get("total_wall", 0) for r in done) / max(
        args.n_jobs, 1)
    rows = [r for res in results for r in res["rows"]]
    meta = {"wall": wall, "argv": command_line(argv), "quick": args.quick,
            "git": git, "note": args.note,
            "datasets": {res["name"]: res["meta"] for res in results}}
    if args.raw:
        import pickle
        with open(args.raw, "wb") as fh:
            pickle.dump((rows, meta), fh)
    summary = summarize(rows)
    md = render_markdown(summary, meta)
    if out:
        write_results(summary, md, out)
        print(f"wrote {out}.md and {out}.csv")
    print(md)
    print(f"total wall time {wall:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
