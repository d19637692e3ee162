"""Transition constraints and partial labels of SequenceTagger on real data.

Two experiments, side by side in one process:

* **constraints**: CoNLL-2000 chunking (the CRF++ template) and CoNLL-2002
  Spanish NER (words only: the case where unconstrained decoding breaks BIO
  most), each loss trained with and without ``constraints='BIO'``: span F1
  of MAP and calibrated decoding, the share of predicted sentences with an
  invalid BIO bigram, and the fit-time ratio constrained / free;
* **partial labels**: CoNLL-2000 with a fraction of the training tags
  hidden (``None``), the CRF (marginalising) and the hinge loss (constrained
  MAP completion), against the same model trained on the fully labelled
  data and on the fully labelled sentences only (what a user without
  partial-label support would do).

    python benchmarks/bench_constraints.py [--quick] [--n-train 3000]
"""

import argparse
import time

# first: _common pins the BLAS threads before NumPy is imported
from _common import (command_line, common_parser, conll2000_xy, conll2002_xy,  # noqa: I001
                     machine_info, md_table, parse_args, quiet_fit, report)

import numpy as np  # noqa: E402


def invalid_bio(seq):
    prev = "O"
    for tag in seq:
        if tag.startswith("I-") and prev[2:] != tag[2:]:
            return True
        prev = tag
    return False


def constraints_rows(tasks, losses, n_train, n_test, n_jobs):
    from structlearn import SequenceTagger
    from structlearn.metrics import chunk_f1

    rows = []
    for task, (Xtr, ytr, Xte, yte) in tasks.items():
        Xtr, ytr, Xte, yte = Xtr[:n_train], ytr[:n_train], Xte[:n_test], yte[:n_test]
        for loss in losses:
            kw = dict(loss=loss, alpha=2.0 / len(Xtr), n_jobs=n_jobs, random_state=0)
            if loss != "crf":
                kw["max_iter"] = 15
            res = {}
            for constraints in (None, "BIO"):
                est = SequenceTagger(constraints=constraints, **kw)
                t = quiet_fit(est, Xtr, ytr)
                for decoding in ("map", "calibrated"):
                    pred = est.set_params(decoding=decoding).predict(Xte)
                    res[constraints, decoding] = (chunk_f1(yte, pred),
                                                  np.mean([invalid_bio(p) for p in pred]))
                res[constraints] = t
            row = [task, loss]
            for c in (None, "BIO"):
                for d in ("map", "calibrated"):
                    f1, bad = res[c, d]
                    row.append(f"{100 * f1:.2f} ({100 * bad:.1f}%)")
            row.append(f"{res['BIO'] / res[None]:.2f}")
            print(" | ".join(row), flush=True)
            rows.append(row)
    return rows


def partial_rows(Xtr, ytr, Xte, yte, losses, fractions, n_jobs):
    from structlearn import SequenceTagger
    from structlearn.metrics import chunk_f1

    rows = []
    rng = np.random.default_rng(0)
    for frac in fractions:
        hide = [rng.random(len(s)) < frac for s in ytr]
        yp = [[None if h else t for t, h in zip(s, m)] for s, m in zip(ytr, hide)]
        full_idx = [i for i, m in enumerate(hide) if not m.any()]
        for loss in losses:
            kw = dict(loss=loss, alpha=2.0 / len(Xtr), constraints="BIO", n_jobs=n_jobs,
                      random_state=0, solver="lbfgs" if loss == "crf" else "sgd")
            if loss != "crf":
                kw["max_iter"] = 15
            f = {}
            for name, X, y in (("full labels", Xtr, ytr), ("partial", Xtr, yp),
                               ("labelled sentences only", [Xtr[i] for i in full_idx],
                                [ytr[i] for i in full_idx])):
                if not X:
                    f[name] = (float("nan"), 0.0)
                    continue
                est = SequenceTagger(**kw)
                t0 = time.perf_counter()
                quiet_fit(est, X, y)
                f[name] = (chunk_f1(yte, est.predict(Xte)), time.perf_counter() - t0)
            row = [f"{100 * frac:.0f}%", loss, str(len(full_idx))] + \
                [f"{100 * f[k][0]:.2f}" for k in ("full labels", "partial",
                                                   "labelled sentences only")] + \
                [f"{f['partial'][1] / f['full labels'][1]:.2f}"]
            print(" | ".join(row), flush=True)
            rows.append(row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        parents=[common_parser("quick", "n_jobs", "out", "no_write", "data",
                               n_jobs=2, out="constraints")])
    ap.add_argument("--n-train", type=int, default=3000)
    ap.add_argument("--n-test", type=int, default=None)
    args = parse_args(ap, argv)
    n_train = 300 if args.quick else args.n_train
    n_test = 300 if args.quick else args.n_test
    losses = ["crf", "hinge"] if args.quick else ["crf", "hinge", "sparsemap", "perceptron"]
    Xtr, ytr = conll2000_xy("train")
    Xte, yte = conll2000_xy("test")
    tasks = {"CoNLL-2000": (Xtr, ytr, Xte, yte)}
    try:
        tasks["CoNLL-2002 esp (words)"] = (*conll2002_xy("esp", "train", "words"),
                                            *conll2002_xy("esp", "testb", "words"))
    except (OSError, ValueError) as e:
        print(f"CoNLL-2002 skipped: {e}")
    header1 = ["data", "loss", "free map", "free calibrated", "BIO map", "BIO calibrated",
               "fit time BIO / free"]
    rows1 = constraints_rows(tasks, losses, n_train, n_test, args.n_jobs)
    fractions = (0.3,) if args.quick else (0.1, 0.3, 0.5)
    header2 = ["hidden tags", "loss", "fully labelled sentences", "F1 full labels",
               "F1 partial", "F1 labelled sentences only", "fit time partial / full"]
    rows2 = partial_rows(Xtr[:n_train], ytr[:n_train], Xte[:n_test], yte[:n_test],
                         ["crf", "hinge"], fractions, args.n_jobs)
    text = "\n".join([
        "# Transition constraints and partial labels", "",
        f"`{command_line(argv)}`", "",
        "".join(f"- {k}: {v}\n" for k, v in machine_info().items()),
        f"## Span F1 (share of sentences with an invalid BIO bigram), {n_train} training "
        f"sentences", "", md_table(header1, rows1), "",
        f"## Partial labels: CoNLL-2000, {n_train} training sentences, tags hidden at "
        f"random (constraints='BIO')", "", md_table(header2, rows2), ""])
    report(args, text, "constraints")


if __name__ == "__main__":
    main()
