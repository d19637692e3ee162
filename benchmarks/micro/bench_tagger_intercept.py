"""The sequence tagger with and without its per-tag bias, loss by loss.

With transitions the per-tag bias is redundant (a tag's bias moved into its
column of transition weights and its start weight changes no sequence's
score), so ``fit_intercept`` changes only the penalty: the bias is free,
the weights that could replace it are penalised.  ``SequenceTagger``'s
default ``fit_intercept='auto'`` leaves it out when the model has
transitions.  This script fits each loss both ways on the same data, one
thread, everything else equal (``alpha = 2 / n``, as ``bench_sequence.py``;
the SGD and perceptron losses for 10 epochs, the CRF by L-BFGS to
CRFsuite's stopping rule), and reports span F1 (CoNLL-2000) or token
accuracy, the training objective (each model's own: the penalties differ),
iterations and fit CPU seconds.

``--estimator segment``: the semi-Markov ``SegmentTagger`` instead (its
per-label bias is redundant with its length and transition weights), on
CoNLL-2000; ``--n-train``: the first sentences only.

``--task defaults``: instead, the nine sequence sets of ``bench_defaults.py
--task tagging`` (UD UPOS, the small treebanks trained on dev, CoNLL-2000
chunks, CoNLL-2002 NER) at the default ``alpha = 1e-4``, as a new user fits
them.

Usage::

    python benchmarks/micro/bench_tagger_intercept.py --task conll2000 \\
        --losses crf,perceptron,hinge,hinge-approx-slack,poslearn
    python benchmarks/micro/bench_tagger_intercept.py --task ewt --losses crf,perceptron
    python benchmarks/micro/bench_tagger_intercept.py --task defaults --losses crf
    python benchmarks/micro/bench_tagger_intercept.py --estimator segment --losses crf \\
        --n-train 1000
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args, upos_xy,
    write_text)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from structlearn import SegmentTagger, SequenceTagger  # noqa: E402
from structlearn.metrics import chunk_f1, token_accuracy  # noqa: E402

EPOCHS = 10


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 parents=[common_parser("out", "no_write", "data")])
    ap.add_argument("--task", choices=["conll2000", "ewt", "defaults"], default="conll2000")
    ap.add_argument("--losses", default="crf,perceptron,hinge,hinge-approx-slack,poslearn")
    ap.add_argument("--estimator", choices=["sequence", "segment"], default="sequence")
    ap.add_argument("--n-train", type=int, default=None)
    args = parse_args(ap)
    if args.estimator == "segment" and args.task != "conll2000":
        raise SystemExit("--estimator segment runs on --task conll2000 only")
    Est = SegmentTagger if args.estimator == "segment" else SequenceTagger
    rows = []
    for name, (Xtr, ytr, Xte, yte), alpha, metric in _data(args.task):
        if args.n_train:
            Xtr, ytr = Xtr[:args.n_train], ytr[:args.n_train]
            alpha = 2.0 / len(Xtr) if args.task != "defaults" else alpha
            name = f"{name} (first {len(Xtr)})"
        for loss in args.losses.split(","):
            for fit_intercept in (True, False):
                kw = {} if loss == "crf" else {"max_iter": EPOCHS}
                est = Est(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                          random_state=0, n_jobs=1, **kw)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")   # SGD's epoch budget
                    t = time.process_time()
                    est.fit(Xtr, ytr)
                    cpu = time.process_time() - t
                pred = est.predict(Xte)
                f1 = f"{100 * chunk_f1(yte, pred):.2f}" if metric == "F1" else ""
                row = [name, loss, "yes" if fit_intercept else "no", f1,
                       f"{100 * token_accuracy(yte, pred):.2f}", f"{est.objective_:.4f}",
                       str(est.n_iter_), f"{cpu:.1f}"]
                print(" | ".join(row), flush=True)
                rows.append(row)
    table = md_table(["data", "loss", "per-tag bias", "span F1", "token acc.", "objective",
                      "iterations", "fit CPU (s)"], rows)
    cmd = (f"python benchmarks/micro/bench_tagger_intercept.py --task {args.task} "
           f"--losses {args.losses}"
           + (f" --estimator {args.estimator}" if args.estimator != "sequence" else "")
           + (f" --n-train {args.n_train}" if args.n_train else ""))
    text = (f"# {Est.__name__} with and without the per-tag bias: {args.task}\n\n"
            f"Command: `{cmd}`\n\nMachine: "
            + ", ".join(f"{k} {v}" for k, v in machine_info().items())
            + f"\n\n{table}\n")
    print(text)
    stem = out_stem(args, f"tagger_intercept_{args.task}"
                    + ("_segment" if args.estimator == "segment" else "")
                    + (f"_n{args.n_train}" if args.n_train else ""))
    if stem:
        print("wrote", write_text(stem, text))


def _data(task):
    """``(name, (Xtr, ytr, Xte, yte), alpha, metric)`` per data set of ``task``."""
    if task == "conll2000":
        data = conll2000_xy("train") + conll2000_xy("test")
        yield "CoNLL-2000", data, 2.0 / len(data[0]), "F1"
    elif task == "ewt":
        data = upos_xy("en_ewt", "train") + upos_xy("en_ewt", "test")
        yield "EWT UPOS", data, 2.0 / len(data[0]), "accuracy"
    else:
        from bench_defaults import TAG_SETS

        for name, (load, metric, large) in TAG_SETS.items():
            yield name, load(None), 1e-4, metric


if __name__ == "__main__":
    main()
