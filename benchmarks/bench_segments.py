"""Segmentation benchmark: SegmentTagger (semi-Markov) on CoNLL-2000 chunks.

Tasks (data from ``$STRUCTLEARN_BENCH_DATA`` or ``--data``, default
``../shared/data``; features: the CRF++ chunking template of CRFsuite's
benchmark, ``_common.chunking_features``, for every model):

* ``crf``: chunking as segmentation against the chain CRF and CRFsuite --
  train on train.txt (``--n-train`` sentences, default all), chunk span F1
  (conlleval) on test.txt, fit and predict times side by side in this
  process.  Regularisation: CRFsuite's ``c2 = 1`` is ``alpha = 2 / n`` for
  both of our CRFs (see ``bench_sequence.py``); the segment model's maximum
  length is the longest training chunk.
* ``sg``: Sarawagi & Gupta's (2008, Sec. 5) comparison of the max-margin
  losses on segmentation -- margin scaling ('hinge'), slack scaling
  ('hinge-slack', exact: our segment cost has integer penalties),
  approximate slack scaling and PosLearn -- each trained by the dual solver
  (``solver='bcfw'``) to a certified relative duality gap of 1e-3, with the
  segment CRF beside them; ``--n-train`` sentences (default 1,000) and one
  ``--alpha`` (default 0.01) for all.

Every model runs in this process after a warm-up fit on 20 sentences
(Numba's one-off kernel loading is not timed).  The CRFsuite row is skipped
when sklearn-crfsuite is not installed.

Usage::

    python benchmarks/bench_segments.py --quick                 # 300 sentences, prints only
    python benchmarks/bench_segments.py --task crf --n-jobs 1
    python benchmarks/bench_segments.py --task sg
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, command_line, conll2000_xy, machine_info, md_table, out_stem,
    parse_args, quiet_fit, skip_missing_peers, write_csv, write_text)

import argparse  # noqa: E402
import time  # noqa: E402

from structlearn import SegmentTagger, SequenceTagger  # noqa: E402
from structlearn.metrics import chunk_f1  # noqa: E402

SG_LOSSES = ("hinge", "hinge-slack", "hinge-approx-slack", "poslearn")


def crf_models(n_train, n_jobs):
    alpha = 2.0 / n_train

    def crfsuite():
        import sklearn_crfsuite
        return sklearn_crfsuite.CRF(algorithm="lbfgs", c2=1.0)

    return {
        "crfsuite lbfgs (chain)": ("crfsuite", crfsuite),
        "chain crf": ("structlearn",
                      lambda: SequenceTagger(loss="crf", alpha=alpha, n_jobs=n_jobs)),
        "segment crf": ("structlearn",
                        lambda: SegmentTagger(loss="crf", alpha=alpha, n_jobs=n_jobs)),
    }


def sg_models(alpha, n_jobs, max_iter=500):
    out = {f"segment {loss} (bcfw)": (
        "structlearn", lambda loss=loss: SegmentTagger(loss=loss, alpha=alpha, solver="bcfw",
                                                       max_iter=max_iter, tol=1e-3,
                                                       n_jobs=n_jobs))
        for loss in SG_LOSSES}
    out["segment crf"] = ("structlearn",
                          lambda: SegmentTagger(loss="crf", alpha=alpha, n_jobs=n_jobs))
    return out


def run(models, X, y, Xt, yt, report_train):
    rows = []
    for name, (_, make) in models.items():     # warm-up: Numba loads its kernels
        quiet_fit(make(), X[:20], y[:20])
    for name, (lib, make) in models.items():
        est = make()
        t_fit = quiet_fit(est, X, y)
        t0 = time.perf_counter()
        pred = est.predict(Xt)
        t_pred = time.perf_counter() - t0
        row = {"model": name, "library": lib, "span_f1": round(chunk_f1(yt, pred), 4),
               "fit_s": round(t_fit, 1), "predict_s": round(t_pred, 2),
               "n_iter": getattr(est, "n_iter_", ""),
               "duality_gap": (f"{est.duality_gap_:.1e}"
                               if getattr(est, "duality_gap_", None) is not None else ""),
               "objective": (round(est.objective_, 5)
                             if getattr(est, "objective_", None) is not None else "")}
        if report_train:
            row["train_f1"] = round(chunk_f1(y, est.predict(X)), 4)
        rows.append(row)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    ref = next((r["fit_s"] for r in rows if r["library"] == "crfsuite"), None)
    for r in rows:
        r["fit_vs_crfsuite"] = round(r["fit_s"] / ref, 2) if ref else ""
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("quick", "n_jobs", "out", "no_write", "data", n_jobs=2,
                               out="segments_<task>")])
    parser.add_argument("--task", choices=("crf", "sg"), default="crf")
    parser.add_argument("--n-train", type=int, default=None,
                        help="training sentences (default: all for crf, 1000 for sg)")
    parser.add_argument("--alpha", type=float, default=0.01, help="alpha of the sg task")
    args = parse_args(parser, argv)
    X, y = conll2000_xy("train")
    Xt, yt = conll2000_xy("test")
    n = args.n_train or (300 if args.quick else (None if args.task == "crf" else 1000))
    if n:
        X, y = X[:n], y[:n]
    if args.quick:
        Xt, yt = Xt[:500], yt[:500]
    if args.task == "crf":
        models = crf_models(len(X), args.n_jobs)
        keep = skip_missing_peers(models, {"crfsuite lbfgs (chain)": "sklearn_crfsuite"})
        models = {k: models[k] for k in keep}
    else:
        models = sg_models(args.alpha, args.n_jobs)
    print(f"CoNLL-2000 as segmentation, task {args.task}: {len(X)} training sentences, "
          f"{len(Xt)} test, n_jobs={args.n_jobs}", flush=True)
    rows = run(models, X, y, Xt, yt, report_train=args.task == "sg")
    stem = out_stem(args, f"segments_{args.task}")
    if stem is not None:
        fields = list(rows[0])
        write_csv(f"{stem}.csv", rows, fields)
        text = (f"# CoNLL-2000 as segmentation ({args.task})\n\n`{command_line(argv)}`\n\n"
                + "".join(f"- {k}: {v}\n" for k, v in machine_info().items()) + "\n"
                + md_table(fields, [[r[f] for f in fields] for r in rows]) + "\n")
        print("wrote", write_text(stem, text))


if __name__ == "__main__":
    main()
