"""Sequence-tagging benchmark: structlearn SequenceTagger vs sklearn-crfsuite.

Tasks (data from the data folder, ``$STRUCTLEARN_BENCH_DATA`` or ``--data``,
default ``../shared/data``; standard splits):

* ``conll2000``: CoNLL-2000 chunking, train on train.txt, chunk span F1
  (conlleval definition) on test.txt.  Features: the CRF++ chunking template
  of CRFsuite's benchmark (``_common.chunking_features``).
* ``ewt``: UPOS tagging on UD English EWT, train on train, accuracy on test.
  Features: ``structlearn.datasets.pos_token_features`` (word, suffixes,
  prefix, shape flags, neighbouring words).

Every model sees the same feature dicts.  Regularisation: CRFsuite's L2
coefficient ``c2 = 1`` on the SUM of the losses is ``alpha = 2 c2 / n`` on
structlearn's MEAN loss, so ``crf`` solves the same problem as CRFsuite's
L-BFGS; every regularised loss uses that alpha (no tuning: CoNLL-2000 has no
development set).  Both L-BFGS implementations stop by the same rule
(relative decrease < 1e-5 over 10 iterations, CRFsuite's default).  The
averaged perceptrons run the same number of epochs.

Timing: all models run one after another **in this process** on the same
data (so the time ratios are side by side), after a warm-up fit of every
model on 20 sentences (Numba's one-off loading of its kernels is not
timed); with ``--repeat N`` every model is fitted N times, interleaved, and
the table gives the median fit and each repeat's ratio; structlearn uses
``n_jobs`` threads (default 2); prediction time is the best of 3 runs.
Each fit also records its process CPU time (every thread of this process,
not the other jobs': on a loaded machine the robust figure), the 1-minute
load average when it started, and CRFsuite's objective evaluations (its
line-search trials + 1).  Peak memory
(``--memory``): each of the CRF and perceptron pairs is refit in a fresh
subprocess, which reports the growth of its peak RSS during fit (data
loading and a 20-sentence warm-up fit excluded: Numba loads its kernels
and LLVM on first use).  The CRFsuite rows are skipped when
sklearn-crfsuite is not installed.

Usage::

    python benchmarks/bench_sequence.py --quick               # 1,000 sentences, prints only
    python benchmarks/bench_sequence.py --task conll2000 --memory
    python benchmarks/bench_sequence.py --task ewt
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args,
    peak_memory_growth, skip_missing_peers, upos_xy, write_csv, write_text)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import SequenceTagger  # noqa: E402
from structlearn.losses import Projection  # noqa: E402
from structlearn.metrics import chunk_f1, token_accuracy  # noqa: E402

EPOCHS = 10  # perceptron epochs (both libraries) and SGD epochs of the SVMs
BCFW_EPOCHS = 100  # epoch budget of the certified (bcfw) rows: tol is a 1e-3 relative gap


def load(task, quick, n_train=None):
    if task == "conll2000":
        (Xtr, ytr), (Xte, yte) = conll2000_xy("train"), conll2000_xy("test")
    else:
        (Xtr, ytr), (Xte, yte) = upos_xy("en_ewt", "train"), upos_xy("en_ewt", "test")
    if quick:
        Xtr, ytr, Xte, yte = Xtr[:1000], ytr[:1000], Xte[:300], yte[:300]
    if n_train:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    return Xtr, ytr, Xte, yte


def models(n_train, n_jobs):
    """name -> (library, factory)."""
    alpha = 2.0 / n_train

    def ours(loss, **kw):
        kw.setdefault("alpha", alpha)
        kw.setdefault("n_jobs", n_jobs)
        return lambda: SequenceTagger(loss=loss, random_state=0, **kw)

    def crfsuite(**kw):
        def make():
            import sklearn_crfsuite
            return sklearn_crfsuite.CRF(**kw)
        return make

    return {
        "crfsuite lbfgs": ("crfsuite", crfsuite(algorithm="lbfgs", c2=1.0)),
        "crf": ("structlearn", ours("crf")),
        "crf 1 thread": ("structlearn", ours("crf", n_jobs=1)),
        # L-BFGS from zeros (solver='auto' starts it from two SGD passes on
        # 5,000 sequences or more): the default before that warm-up
        "crf from zeros": ("structlearn", ours("crf", solver="lbfgs")),
        "crf from zeros 1 thread": ("structlearn", ours("crf", solver="lbfgs", n_jobs=1)),
        # the default model is CRFsuite's (no per-tag bias, redundant with
        # the transitions); an unpenalised bias costs L-BFGS ~25% more
        # evaluations (the default before fit_intercept='auto')
        "crf no intercept": ("structlearn", ours("crf", fit_intercept=False)),
        "crf no intercept 1 thread": ("structlearn", ours("crf", fit_intercept=False,
                                                          n_jobs=1)),
        "crf with intercept": ("structlearn", ours("crf", fit_intercept=True)),
        "crf with intercept 1 thread": ("structlearn", ours("crf", fit_intercept=True,
                                                            n_jobs=1)),
        "crfsuite ap": ("crfsuite", crfsuite(algorithm="ap", max_iterations=EPOCHS)),
        "perceptron": ("structlearn", ours("perceptron", max_iter=EPOCHS)),
        "hinge": ("structlearn", ours("hinge", max_iter=EPOCHS)),
        "hinge-slack": ("structlearn", ours("hinge-slack", max_iter=EPOCHS)),
        "hinge-approx-slack": ("structlearn", ours("hinge-approx-slack", max_iter=EPOCHS)),
        "poslearn": ("structlearn", ours("poslearn", max_iter=EPOCHS)),
        # the same losses trained to a certified relative duality gap of 1e-3
        "hinge (bcfw)": ("structlearn", ours("hinge", solver="bcfw", max_iter=BCFW_EPOCHS)),
        "hinge-slack (bcfw)": ("structlearn", ours("hinge-slack", solver="bcfw",
                                                    max_iter=BCFW_EPOCHS)),
        "hinge-approx-slack (bcfw)": ("structlearn", ours("hinge-approx-slack", solver="bcfw",
                                                           max_iter=BCFW_EPOCHS)),
        "poslearn (bcfw)": ("structlearn", ours("poslearn", solver="bcfw",
                                                max_iter=BCFW_EPOCHS)),
        # Sarawagi & Gupta's Sec. 5.2 ablation: the same models without
        # tag-bigram (edge) features
        "crf without transitions": ("structlearn", ours("crf", transitions=False)),
        "hinge (bcfw) without transitions": ("structlearn", ours(
            "hinge", solver="bcfw", max_iter=BCFW_EPOCHS, transitions=False)),
        "hinge-slack (bcfw) without transitions": ("structlearn", ours(
            "hinge-slack", solver="bcfw", max_iter=BCFW_EPOCHS, transitions=False)),
        "hinge-approx-slack (bcfw) without transitions": ("structlearn", ours(
            "hinge-approx-slack", solver="bcfw", max_iter=BCFW_EPOCHS, transitions=False)),
        "poslearn (bcfw) without transitions": ("structlearn", ours(
            "poslearn", solver="bcfw", max_iter=BCFW_EPOCHS, transitions=False)),
        # solver='auto': BCFW to a certified relative gap of 1e-3
        "sparsemap": ("structlearn", ours("sparsemap")),
        "m-sparsemap": ("structlearn", ours("m-sparsemap")),
        # the same by L-BFGS (CRFsuite's stopping rule, as the CRF)
        "sparsemap (lbfgs)": ("structlearn", ours("sparsemap", solver="lbfgs")),
        "m-sparsemap (lbfgs)": ("structlearn", ours("m-sparsemap", solver="lbfgs")),
        "projection": ("structlearn", ours("projection")),
        "projection-cube-euclidean": ("structlearn", ours(Projection(set="cube"),
                                                           decoding="calibrated")),
        "projection-cube-kl": ("structlearn", ours(Projection(set="cube", geometry="kl"),
                                                    decoding="calibrated")),
        "squared": ("structlearn", ours("squared", decoding="calibrated")),
        # feature hashing bounds the feature space (issue 7: memory)
        "crf hash 2^18": ("structlearn", ours("crf", n_features=2 ** 18)),
        "crf hash 2^16": ("structlearn", ours("crf", n_features=2 ** 16)),
        "perceptron hash 2^16": ("structlearn", ours("perceptron", max_iter=EPOCHS,
                                                     n_features=2 ** 16)),
    }


def evaluate(task, y_true, y_pred):
    acc = token_accuracy(y_true, y_pred)
    f1 = chunk_f1(y_true, y_pred) if task == "conll2000" else float("nan")
    return acc, f1


def run_one(name, lib, make, data, task):
    Xtr, ytr, Xte, yte = data
    est = make()
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(Xtr, ytr)
        fit_time = time.perf_counter() - t0
        # CPU seconds of this process (every thread): less sensitive to the
        # other jobs on the machine than the wall time
        fit_cpu = time.process_time() - c0
    predict_time = np.inf
    for _ in range(3):  # best of 3: a test-set prediction takes a fraction of a second
        t0 = time.perf_counter()
        pred = est.predict(Xte)
        predict_time = min(predict_time, time.perf_counter() - t0)
    acc, f1 = evaluate(task, yte, pred)
    row = dict(task=task, model=name, library=lib, fit_s=round(fit_time, 2),
               fit_cpu_s=round(fit_cpu, 2), load=round(load, 1), predict_s=round(predict_time, 3), accuracy=round(acc, 4),
               f1=round(f1, 4), warnings=len(log))
    if lib == "structlearn":
        row["iterations"] = est.n_iter_
        row["n_params"] = est._z.size
        row["objective"] = round(float(est.objective_), 6)
        if est.duality_gap_ is not None:
            row["gap"] = float(f"{est.duality_gap_:.3g}")
        if est.loss_.name in ("sparsemap", "m-sparsemap"):
            sizes = [len(d) for d in est.predict_sparse(Xte[:500])]
            row["support_mean"] = round(float(np.mean(sizes)), 2)
            row["support_1"] = round(float(np.mean(np.asarray(sizes) == 1)), 3)
    else:
        info = est.training_log_.last_iteration if est.training_log_ else {}
        row["iterations"] = info.get("num", "")
        # objective evaluations: the first one, then every line-search trial
        trials = [it.get("linesearch_trials") for it in est.training_log_.iterations] \
            if est.training_log_ else []
        if trials and None not in trials:
            row["evaluations"] = 1 + sum(trials)
        row["n_params"] = info.get("active_features", "")
    return row


def _median_row(runs):
    """The run of median fit time, with every run's fit time in ``fit_runs``."""
    fits = [r["fit_s"] for r in runs]
    row = dict(sorted(runs, key=lambda r: r["fit_s"])[(len(runs) - 1) // 2])
    row["fit_runs"] = " / ".join(f"{f:.1f}" for f in fits)
    row["fit_cpu_s"] = float(np.median([r["fit_cpu_s"] for r in runs]))
    row["load_runs"] = " / ".join(f"{r['load']:.1f}" for r in runs)
    return row


def memory_child(task, name, quick, n_jobs, n_train=None):
    """Fit one model in this (fresh) process; print its peak-RSS growth."""
    data = load(task, quick, n_train)
    lib, make = models(len(data[0]), n_jobs)[name]
    # warm up on a few sentences (both libraries): Numba loads its compiled
    # kernels (and LLVM) on first use, a one-off cost of the process that is
    # not the fit's memory -- the timings exclude it likewise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().fit(data[0][:20], data[1][:20])
    with peak_memory_growth() as mem, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make().fit(data[0], data[1])
    print(json.dumps({"model": name, **mem}))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="--quick: 1,000 training / 300 test sentences; --repeat: fit every model "
               "this many times (interleaved), the table gives the median fit time and "
               "the per-repeat fit ratios",
        parents=[common_parser("quick", "n_jobs", "repeat", "out", "no_write", "data",
                               n_jobs=2, repeat=1, out="sequence_<task>[_n<N>]")])
    ap.add_argument("--task", choices=["conll2000", "ewt"], default="conll2000")
    ap.add_argument("--models", default=None, help="comma-separated subset")
    ap.add_argument("--n-train", type=int, default=None,
                    help="train on the first N sentences only (full test set)")
    ap.add_argument("--memory", action="store_true",
                    help="also measure peak memory of the CRF / perceptron pairs")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite the Markdown report from the existing CSV")
    ap.add_argument("--busy", action="store_true",
                    help="run one CPU-bound process of our own (python -c 'while True: "
                         "pass') while fitting: the loaded-machine ratios (suffix _busy)")
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parse_args(ap, argv)
    stem = out_stem(args, f"sequence_{args.task}"
                    + (f"_n{args.n_train}" if args.n_train else "")
                    + ("_busy" if args.busy else ""))
    if args.report_only:
        if stem:
            write_report(args, [], stem)
        return
    if args.memory_child:
        memory_child(args.task, args.memory_child, args.quick, args.n_jobs, args.n_train)
        return
    data = load(args.task, args.quick, args.n_train)
    table = models(len(data[0]), args.n_jobs)
    names = args.models.split(",") if args.models else list(table)
    if args.task == "ewt":
        names = [n for n in names if n not in ("hinge-slack",)] if args.models is None else names
    names = skip_missing_peers(names, {n: "sklearn_crfsuite" for n, (lib, _) in table.items()
                                       if lib == "crfsuite"})
    print(f"{args.task}: {len(data[0])} training / {len(data[2])} test sequences, "
          f"{sum(map(len, data[0]))} training tokens")
    # warm up (both libraries) on a few sentences: Numba loads its kernels
    # and LLVM on first use -- a one-off per process (and a compilation per
    # environment, see results/compile.md) that is not the fit being timed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            table[name][1]().fit(data[0][:20], data[1][:20])
    runs = {name: [] for name in names}
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        for rep in range(args.repeat):
            # every model once per repeat, in the same order: the runs of a
            # pair are adjacent in time, so their per-repeat ratios are paired
            for name in names:
                lib, make = table[name]
                row = run_one(name, lib, make, data, args.task)
                runs[name].append(row)
                print(json.dumps(row), flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    rows = [_median_row(runs[name]) for name in names]
    if args.memory:
        for name in [n for n in names if n in ("crfsuite lbfgs", "crf", "crfsuite ap",
                                                "perceptron") or "hash" in n]:
            cmd = [sys.executable, __file__, "--task", args.task, "--memory-child", name,
                   "--n-jobs", str(args.n_jobs)] + (["--quick"] if args.quick else []) \
                + (["--n-train", str(args.n_train)] if args.n_train else [])
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            mem = json.loads(out.strip().splitlines()[-1])
            for row in rows:
                if row["model"] == name:
                    row["peak_growth_mb"] = mem["peak_growth_mb"]
            print(out.strip(), flush=True)
    if stem:
        write_report(args, rows, stem)


def _merge_previous(path, rows):
    """Rows of models not re-run now are kept from the previous results file."""
    import csv

    if not path.exists():
        return rows
    done = {r["model"] for r in rows}
    kept = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["model"] in done:
                continue
            for key in ("fit_s", "fit_cpu_s", "predict_s", "accuracy", "f1", "support_mean", "support_1",
                        "peak_growth_mb", "objective", "gap"):
                if r.get(key) not in (None, ""):
                    r[key] = float(r[key])
                else:
                    r.pop(key, None)
            kept.append(r)
    order = list(models(1, 1))
    return sorted(kept + rows, key=lambda r: order.index(r["model"])
                  if r["model"] in order else len(order))


def _fit_cell(row):
    runs = str(row.get("fit_runs") or "")
    return f"{row['fit_s']:.1f}" + (f" ({runs})" if " / " in runs else "")


def write_report(args, rows, stem):
    rows = _merge_previous(Path(f"{stem}.csv"), rows)
    fields = ["task", "model", "library", "fit_s", "fit_runs", "fit_cpu_s", "load_runs",
              "predict_s", "accuracy", "f1", "iterations", "evaluations", "n_params", "objective", "gap", "support_mean", "support_1",
              "peak_growth_mb", "warnings"]
    write_csv(f"{stem}.csv", rows, fields)
    by = {r["model"]: r for r in rows}

    def ratio(a, b, key):
        if a in by and b in by and by[a].get(key) and by[b].get(key):
            return f"{by[a][key] / by[b][key]:.2f}"
        return "n/a"

    def paired(a, b):
        """Fit-time ratios of each repeat (the pair ran side by side)."""
        ra, rb = (str(by.get(m, {}).get("fit_runs", "")).split(" / ") for m in (a, b))
        if len(ra) < 2 or len(ra) != len(rb) or "" in ra + rb:
            return ""
        return " / ".join(f"{float(x) / float(y):.2f}" for x, y in zip(ra, rb))

    chunking = args.task == "conll2000"
    header = ["model", "library"] + (["span F1"] if chunking else []) + ["token acc",
              "fit (s): median (each repeat)", "fit CPU (s)", "load avg (each repeat)",
              "predict (s)", "iterations", "evaluations", "parameters", "training objective",
              "relative duality gap", "SparseMAP support (mean / % single)",
              "peak fit memory growth (MB)"]
    body = []
    for r in rows:
        sup = (f"{r['support_mean']} / {100 * r['support_1']:.0f}%"
               if "support_mean" in r else "")
        body.append([r["model"], r["library"]]
                    + ([f"{100 * r['f1']:.2f}"] if chunking else [])
                    + [f"{100 * r['accuracy']:.2f}",
                     _fit_cell(r), f"{r['fit_cpu_s']:.1f}" if r.get("fit_cpu_s") else "",
                     str(r.get("load_runs", "")), f"{r['predict_s']:.2f}", str(r["iterations"]),
                     str(r.get("evaluations", "")),
                     str(r["n_params"]), str(r.get("objective", "")), str(r.get("gap", "")),
                     sup, str(r.get("peak_growth_mb", ""))])
    ratios = [
        [f"{m} / crfsuite lbfgs", ratio(m, "crfsuite lbfgs", "fit_s"),
         paired(m, "crfsuite lbfgs"), ratio(m, "crfsuite lbfgs", "fit_cpu_s"),
         ratio(m, "crfsuite lbfgs", "predict_s"),
         ratio(m, "crfsuite lbfgs", "peak_growth_mb")]
        for m in ("crf", "crf 1 thread", "crf from zeros", "crf from zeros 1 thread",
                  "crf no intercept", "crf no intercept 1 thread",
                  "crf with intercept", "crf with intercept 1 thread")
        if m in by] + [
        [f"{m} / {m0}", ratio(m, m0, "fit_s"), paired(m, m0), ratio(m, m0, "fit_cpu_s"),
         ratio(m, m0, "predict_s"), ratio(m, m0, "peak_growth_mb")]
        for m, m0 in (("crf", "crf from zeros"), ("crf 1 thread", "crf from zeros 1 thread"))
        if m in by and m0 in by] + [
        ["perceptron / crfsuite ap", ratio("perceptron", "crfsuite ap", "fit_s"),
         paired("perceptron", "crfsuite ap"), ratio("perceptron", "crfsuite ap", "fit_cpu_s"),
         ratio("perceptron", "crfsuite ap", "predict_s"),
         ratio("perceptron", "crfsuite ap", "peak_growth_mb")]
        for _ in [0] if "perceptron" in by]
    cmd = "python benchmarks/bench_sequence.py --task " + args.task + \
        (" --memory" if args.memory else "") + \
        (f" --repeat {args.repeat}" if args.repeat > 1 else "") + \
        (f" --n-train {args.n_train}" if args.n_train else "") + \
        (" --busy" if args.busy else "")
    title = args.task + (f", first {args.n_train} training sentences" if args.n_train else "")
    text = [f"# Sequence tagging benchmark: {title}", "",
            f"Command of the last run: `{cmd}` (n_jobs={args.n_jobs}), with `--models` "
            "naming the rows it re-ran; the other rows are kept from earlier runs (a fit "
            "column with several times comes from a `--repeat` run).", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(header, body), ""]
    if any(r["library"] == "crfsuite" for r in rows):
        text += ["Ratios (structlearn / peer, side by side):", "",
                 md_table(["pair", "fit time (medians)", "fit time, each repeat",
                           "fit CPU time (medians; 2 threads: both threads' CPU)", "predict time",
                           "peak memory growth"], ratios),
                 ""]
    else:
        text += ["(No peer in this run: see sequence_conll2000.md for the CRFsuite "
                 "comparison.)", ""]
    path = write_text(stem, "\n".join(text))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
