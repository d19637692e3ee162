"""Shared helpers of ``bench_ordinal.py`` and ``bench_multilabel.py``.

* one BLAS/OpenMP thread per process (the runs parallelise over tasks);
* honest model selection: for every model, the regularisation strength is
  chosen by inner K-fold cross-validation on the training part only (same
  folds and same grid for every model), then the model is refit on the whole
  training part at the selected value -- what ``GridSearchCV(refit=True)``
  does, written out so that every fit can be timed and its warnings counted;
* warning capture: ``ConvergenceWarning``s are silenced but counted (other
  warnings too, separately);
* small markdown/CSV writers.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import csv  # noqa: E402
from contextlib import contextmanager  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DATA_HOME = os.environ.get("STRUCTLEARN_BENCH_DATA", "/work/shared/data")

#: structlearn's ``alpha`` multiplies ``1/2 ||W||^2`` added to the MEAN loss.
ALPHAS = np.logspace(-4, 2, 7)


def fmt_alpha(a):
    return "n/a" if a is None or (isinstance(a, float) and np.isnan(a)) else f"{a:.0e}"


class Recorder:
    """Context manager recording warnings: counts ConvergenceWarnings apart."""

    def __enter__(self):
        self._cm = warnings.catch_warnings(record=True)
        self.log = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self.n_convergence = sum(issubclass(w.category, ConvergenceWarning)
                                 for w in self.log)
        other = [w for w in self.log if not issubclass(w.category, ConvergenceWarning)]
        self.n_other = len(other)
        self.other_messages = sorted({f"{w.category.__name__}: {str(w.message)[:160]}"
                                      for w in other})
        return False


def timed_fit(est, X, y):
    t = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t


def select_and_refit(make, X, y, folds, alphas, score, X_test=None):
    """Inner-CV selection of ``alpha`` then refit on all of (X, y).

    Parameters
    ----------
    make : callable alpha -> unfitted estimator (a Pipeline); ``alphas=None``
        means the model has no regularisation parameter (one fit, no CV).
    folds : list of (train_idx, val_idx)
    score : callable (estimator, X, y) -> float, larger is better.

    Returns a dict: best_alpha, cv_mean (per alpha), refit estimator,
    refit_time, cv_fit_times, n_fits, n_errors, warnings counts (all fits,
    and ``refit_convergence_warnings`` of the final refit alone), errors.
    """
    out = {"cv_fit_times": [], "n_errors": 0, "errors": []}
    with Recorder() as rec:
        if alphas is None:
            best = None
            out["cv_mean"] = {}
        else:
            means = []
            for a in alphas:
                scores = []
                for tr, va in folds:
                    est = make(a)
                    try:
                        out["cv_fit_times"].append(timed_fit(est, X[tr], y[tr]))
                        scores.append(score(est, X[va], y[va]))
                    except Exception as exc:  # noqa: BLE001 -- reported, not hidden
                        out["n_errors"] += 1
                        out["errors"].append(f"alpha={a:g}: {type(exc).__name__}: {exc}"[:300])
                        scores.append(np.nan)
                means.append(np.mean(scores) if np.all(np.isfinite(scores)) else -np.inf)
            means = np.asarray(means)
            # GridSearchCV's rule: the best mean score, the first in grid order on ties
            best = float(alphas[int(np.argmax(means))])
            out["cv_mean"] = dict(zip(map(float, alphas), map(float, means)))
        est = make(best if best is not None else 1.0)
        n_before = len(rec.log)
        out["refit_time"] = timed_fit(est, X, y)
        out["estimator"] = est
        # ConvergenceWarnings of the final refit alone (e.g. an epoch budget hit)
        out["refit_convergence_warnings"] = sum(
            issubclass(w.category, ConvergenceWarning) for w in rec.log[n_before:])
        if X_test is not None:
            out["y_pred"] = est.predict(X_test)
    out["best_alpha"] = best
    out["n_convergence_warnings"] = rec.n_convergence
    out["n_other_warnings"] = rec.n_other
    out["other_warnings"] = rec.other_messages
    out["n_fits"] = len(out["cv_fit_times"]) + 1
    return out


#: the losses without a smooth objective that ``solver="bcfw"`` trains to a
#: certified relative duality gap; benchmark model names "<loss> (bcfw)"
BCFW_LOSSES = ("hinge", "hinge-slack", "hinge-approx-slack", "poslearn")
BCFW_SUFFIX = " (bcfw)"


def split_bcfw(name):
    """``"hinge (bcfw)"`` -> ``("hinge", True)``; other names -> ``(name, False)``."""
    if name.endswith(BCFW_SUFFIX):
        return name[:-len(BCFW_SUFFIX)], True
    return name, False


def refit_solver_info(r):
    """Solver facts of the final refit of a :func:`select_and_refit` result:
    epochs (``n_iter_``), relative duality gap (``duality_gap_``, NaN for
    solvers without a certificate) and whether the refit warned (an epoch
    budget hit, for bcfw: stopped before reaching ``tol``)."""
    est = r["estimator"]
    est = est[-1] if hasattr(est, "steps") else est
    gap = getattr(est, "duality_gap_", None)
    return {"refit_epochs": getattr(est, "n_iter_", np.nan),
            "refit_gap": np.nan if gap is None else float(gap),
            "refit_budget_hit": int(r.get("refit_convergence_warnings", 0) > 0)}


def bcfw_table(summary, models, datasets):
    """Markdown table of the bcfw refits: per (model, dataset) the mean and max
    relative duality gap at the stop, mean epochs, refits that stopped on the
    epoch budget, and mean refit time.  ``summary[dataset, model]`` holds
    ``refit_gap_mean``, ``refit_gap_max``, ``refit_epochs_mean``,
    ``n_refit_budget_hits``, ``n_refits`` and ``refit_time_mean``."""
    body = []
    for m in models:
        if not split_bcfw(m)[1]:
            continue
        row = [m]
        for d in datasets:
            if (d, m) not in summary:
                row.append("")
                continue
            s = summary[d, m]
            row.append(f"{s['refit_gap_mean']:.1e} / {s['refit_gap_max']:.1e}, "
                       f"{s['refit_epochs_mean']:.0f} ep, budget {s['n_refit_budget_hits']}"
                       f"/{s['n_refits']}, {s['refit_time_mean']:.2f} s")
        body.append(row)
    return md_table(["model"] + list(datasets), body)


def clone_with(est, **params):
    e = clone(est)
    e.set_params(**params)
    return e


def write_csv(path, rows, fields=None):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fields is None:
        fields = []
        for r in rows:
            for k in r:
                if k not in fields:
                    fields.append(k)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


@contextmanager
def bcfw_trace(**solver_kw):
    """Inside the block, every BCFW run of an estimator records
    ``(epoch, seconds since the block began, objective, relative gap)``
    after each certificate in the list this yields (``solver_kw``, e.g.
    ``check_every=1``, go to the solver)."""
    import structlearn.estimators._base as base
    from structlearn import solvers

    trace = []
    t0 = time.perf_counter()
    orig = solvers.bcfw

    def traced(*args, **kw):
        def record(epoch, objective, gap):
            trace.append((epoch, time.perf_counter() - t0, objective, gap))
        return orig(*args, **{**kw, **solver_kw, "callback": record})

    base.bcfw = traced
    try:
        yield trace
    finally:
        base.bcfw = orig


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def machine_info():
    import platform

    import numba
    import scipy
    import sklearn

    import structlearn
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
            "numba": numba.__version__,
            "structlearn": getattr(structlearn, "__version__", "?"),
            "cpus": os.cpu_count()}
    try:
        info["load_avg_at_start"] = "%.1f %.1f %.1f" % os.getloadavg()
    except OSError:
        pass
    try:
        import mord
        info["mord"] = getattr(mord, "__version__", "0.7")
    except ImportError:
        pass
    return info


def warnings_section(title, note, summary, models, datasets, rows, alpha_key):
    """Markdown lines: per (model, dataset) selected alpha, warning and error
    counts, then the distinct other warnings and errors seen in ``rows``.

    ``summary[dataset, model]`` holds ``alpha_key``, ``n_convergence_warnings``,
    ``n_fits`` and ``n_errors``.
    """
    out = [f"## {title}", "", note, ""]
    body = []
    for m in models:
        row = [m]
        for d in datasets:
            if (d, m) not in summary:
                row.append("")
                continue
            r = summary[d, m]
            a = r[alpha_key]
            cell = f"{a if isinstance(a, str) else fmt_alpha(a)} " \
                   f"(cw {r['n_convergence_warnings']}/{r['n_fits']})"
            if r["n_errors"]:
                cell += f" err {r['n_errors']}"
            row.append(cell)
        body.append(row)
    out += [md_table(["model"] + list(datasets), body), ""]
    others = sorted({r["other_warnings"] for r in rows if r["other_warnings"]})
    errs = sorted({f"{r['model']}: {r['errors']}" for r in rows if r["errors"]})
    if others:
        out += ["Other warnings seen: " + "; ".join(others[:10]), ""]
    if errs:
        out += ["Errors seen: " + "; ".join(errs[:10]), ""]
    return out


def time_table(summary, models, datasets, key, ref=None):
    """Markdown table of ``summary[dataset, model][key]`` (seconds) per model;
    with ``ref``, each cell also gives the ratio to the reference model and a
    last column the geometric-mean ratio."""
    hdr = ["model"] + list(datasets) + (["geo-mean ratio"] if ref else [])
    body = []
    for m in models:
        row, ratios = [m], []
        for d in datasets:
            if (d, m) not in summary:
                row.append("")
                continue
            t = summary[d, m][key]
            if ref and (d, ref) in summary:
                r = t / max(summary[d, ref][key], 1e-9)
                ratios.append(r)
                row.append(f"{t:.3f} (×{r:.1f})")
            else:
                row.append(f"{t:.3f}")
        if ref:
            row.append(f"×{np.exp(np.mean(np.log(ratios))):.1f}" if ratios else "")
        body.append(row)
    return md_table(hdr, body)
