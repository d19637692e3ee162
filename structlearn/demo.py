"""Train every estimator on data bundled with structlearn and compare losses.

Run ``python -m structlearn.demo`` (``--quick`` for a fast subset,
``--help`` for options).  Everything runs offline on small real data shipped
in the package:

* label ranking: the iris and stock label-ranking sets of Cheng, Huhn &
  Hullermeier (2009), Kendall's tau on a held-out split;
* ordinal regression: red Wine Quality (Cortez et al. 2009), mean absolute
  error on a held-out split;
* multilabel: syntactic constructions of UD English EWT sentences from their
  words (TF-IDF), Hamming loss on the provided test split;
* sequence tagging: universal POS tags of the bundled UD English EWT slice
  (1,000 training / 300 test sentences), token accuracy;
* dependency parsing: the heads of the same slice (gold POS), unlabelled
  attachment score against the attach-to-the-left-neighbour baseline.
"""

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from . import (DependencyParser, LabelRanker, MultiLabelClassifier, OrdinalRegressor,
               SequenceTagger)
from .datasets import (
    load_ewt,
    load_ewt_constructions,
    load_ewt_pos,
    load_label_ranking,
    load_wine_quality,
)
from .losses import Projection
from .metrics import hamming_loss, kendall_tau, mean_absolute_error, token_accuracy, uas


def _ranks_from_scores(S):
    return np.argsort(np.argsort(-S, axis=1), axis=1) + 1


def _timed_fit(model, X, y):
    """Fit time of ``model``, after a fit of a copy on the first 30 examples
    so that the one-off Numba compilation (on the first use of a kernel)
    is not counted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clone(model).fit(X[:30], y[:30])
        t = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - t


def ranking_rows(quick):
    rows = []
    names = ["iris"] if quick else ["iris", "stock"]
    losses = [("squared", {}), ("hinge", {}), ("sparsemap", {}), ("projection", {})]
    if not quick:
        losses += [("poslearn", {}), ("hinge-approx-slack", {}),
                   ("projection", {"polytope": "birkhoff"}),
                   (Projection(set="row-stochastic", geometry="kl"), {"polytope": "birkhoff"})]
    for name in names:
        X, Y = load_label_ranking(name)
        Xtr, Xte, Ytr, Yte = train_test_split(X, Y, test_size=0.3, random_state=0)
        # baseline: ridge regression on the rank vectors
        base = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
        t = _timed_fit(base, Xtr, Ytr)
        rows.append(("label ranking", name, "ridge on ranks (sklearn)",
                     "Kendall tau", kendall_tau(Yte, _ranks_from_scores(-base.predict(Xte))), t))
        for loss, kw in losses:
            model = make_pipeline(StandardScaler(),
                                  LabelRanker(loss=loss, alpha=1e-4, random_state=0, **kw))
            t = _timed_fit(model, Xtr, Ytr)
            label = f"{loss}" + (f" ({kw['polytope']})" if kw else "")
            rows.append(("label ranking", name, label, "Kendall tau",
                         kendall_tau(Yte, model.predict(Xte)), t))
    return rows


def ordinal_rows(quick):
    X, y = load_wine_quality("red")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    rows = []
    base = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    t = _timed_fit(base, Xtr, ytr)
    rows.append(("ordinal", "wine-red", "multinomial logistic (sklearn)", "MAE",
                 mean_absolute_error(yte, base.predict(Xte)), t))
    losses = ["squared", "crf", "projection"] if quick else [
        "squared", "crf", "hinge", "hinge-slack", "poslearn", "sparsemap", "projection"]
    for loss in losses:
        model = make_pipeline(StandardScaler(),
                              OrdinalRegressor(loss=loss, alpha=1e-3, random_state=0))
        t = _timed_fit(model, Xtr, ytr)
        rows.append(("ordinal", "wine-red", loss, "MAE",
                     mean_absolute_error(yte, model.predict(Xte)), t))
    return rows


def multilabel_rows(quick):
    texts_tr, Ytr, _ = load_ewt_constructions("train")
    texts_te, Yte, _ = load_ewt_constructions("test")
    rows = []
    base = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2),
                         OneVsRestClassifier(LogisticRegression(C=10, max_iter=1000)))
    t = _timed_fit(base, texts_tr, Ytr)
    rows.append(("multilabel", "ewt-constructions", "one-vs-rest logistic (sklearn)",
                 "Hamming loss", hamming_loss(Yte, base.predict(texts_te)), t))
    losses = ["squared", "crf", "projection"] if quick else [
        "squared", "crf", "hinge", "poslearn", "projection"]
    for loss in losses:
        model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2),
                              MultiLabelClassifier(loss=loss, alpha=1e-4, random_state=0))
        t = _timed_fit(model, texts_tr, Ytr)
        rows.append(("multilabel", "ewt-constructions", loss, "Hamming loss",
                     hamming_loss(Yte, model.predict(texts_te)), t))
    return rows


def _most_frequent_tag(Xtr, ytr, Xte):
    """Baseline: each word's most frequent training tag (else the overall one)."""
    from collections import Counter, defaultdict

    counts = defaultdict(Counter)
    for xs, ys in zip(Xtr, ytr):
        for x, tag in zip(xs, ys):
            counts[x["word"]][tag] += 1
    overall = Counter(tag for ys in ytr for tag in ys).most_common(1)[0][0]
    best = {w: c.most_common(1)[0][0] for w, c in counts.items()}
    return [[best.get(x["word"], overall) for x in xs] for xs in Xte]


def tagging_rows(quick):
    Xtr, ytr = load_ewt_pos("train")
    Xte, yte = load_ewt_pos("test")
    t = time.perf_counter()
    pred = _most_frequent_tag(Xtr, ytr, Xte)
    rows = [("tagging", "ewt-upos", "most frequent tag per word", "token accuracy",
             token_accuracy(yte, pred), time.perf_counter() - t)]
    # (SparseMAP training of a tagger takes minutes here: see docs/sequence.rst)
    losses = ["perceptron", "crf"] if quick else [
        "perceptron", "crf", "hinge", "hinge-slack", "poslearn"]
    for loss in losses:
        model = SequenceTagger(loss=loss, alpha=2.0 / len(Xtr), random_state=0)
        t = _timed_fit(model, Xtr, ytr)
        rows.append(("tagging", "ewt-upos", loss, "token accuracy",
                     token_accuracy(yte, model.predict(Xte)), t))
    return rows


def parsing_rows(quick):
    train, test = load_ewt("train"), load_ewt("test")
    Xtr, ytr = [s.tokens for s in train], [s.heads for s in train]
    Xte, yte = [s.tokens for s in test], [s.heads for s in test]
    rows = [("parsing", "ewt-heads", "left neighbour", "UAS",
             uas(yte, [list(range(len(h))) for h in yte]), 0.0)]
    # (SparseMAP training of a parser takes minutes here: see docs/parsing.rst)
    losses = ["perceptron", "crf"] if quick else ["perceptron", "crf", "hinge"]
    for loss in losses:
        model = DependencyParser(loss=loss, alpha=1e-3, random_state=0,
                                 max_iter=10 if loss in ("perceptron", "hinge") else 100)
        t = _timed_fit(model, Xtr, ytr)
        rows.append(("parsing", "ewt-heads", loss, "UAS", model.score(Xte, yte), t))
    return rows


def format_table(rows):
    header = ("task", "data", "model / loss", "metric", "value", "fit time (s)")
    cells = [header] + [(a, b, c, d, f"{v:.4f}", f"{t:.2f}") for a, b, c, d, v, t in rows]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(header))]
    lines = []
    for j, r in enumerate(cells):
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m structlearn.demo",
        description="Fit structlearn's estimators with several losses on bundled real "
                    "data and print a comparison table (higher Kendall tau and token "
                    "accuracy and UAS are better; lower MAE and Hamming loss are better).")
    parser.add_argument("--quick", action="store_true",
                        help="fewer data sets and losses (about 20 s)")
    parser.add_argument("--task", choices=["ranking", "ordinal", "multilabel", "tagging",
                                           "parsing", "all"],
                        default="all", help="run one task only")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    if args.task in ("ranking", "all"):
        rows += ranking_rows(args.quick)
    if args.task in ("ordinal", "all"):
        rows += ordinal_rows(args.quick)
    if args.task in ("multilabel", "all"):
        rows += multilabel_rows(args.quick)
    if args.task in ("tagging", "all"):
        rows += tagging_rows(args.quick)
    if args.task in ("parsing", "all"):
        rows += parsing_rows(args.quick)
    print(format_table(rows))
    print(f"\ntotal {time.perf_counter() - t0:.1f}s (includes the one-off Numba "
          f"compilation of a first run, which the fit times leave out; later runs load "
          f"the kernels from the on-disk cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
