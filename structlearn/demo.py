"""Train every estimator on data bundled with structlearn and compare losses.

Run ``python -m structlearn.demo`` (about 3 minutes on a busy 2-core machine
the first time, Numba compilation included; ``--quick`` for a smaller run,
``--full`` for every data set and loss on the whole bundled slices,
``--help`` for options).  It prints a line per model as it goes and a
comparison table at the end.  Everything runs offline on small real data
shipped in the package:

* label ranking: the iris and stock label-ranking sets of Cheng, Huhn &
  Hullermeier (2009), Kendall's tau on a held-out split;
* ordinal regression: red Wine Quality (Cortez et al. 2009), mean absolute
  error on a held-out split;
* multilabel: syntactic constructions of UD English EWT sentences from their
  words (TF-IDF), Hamming loss on the provided test split;
* sequence tagging: universal POS tags of the bundled UD English EWT slice
  (up to 1,000 training / 300 test sentences), token accuracy;
* segmentation: base noun phrases read off the same slice's trees (see
  :func:`_noun_phrase_tags`), chunk F1;
* dependency parsing: the heads of the same slice (gold POS), unlabelled
  attachment score against the attach-to-the-left-neighbour baseline.
"""

import argparse
import sys
import threading
import time
import warnings
from collections import Counter, defaultdict

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from . import (DependencyParser, LabelRanker, MultiLabelClassifier, OrdinalRegressor,
               SegmentTagger, SequenceTagger)
from .datasets import (
    load_ewt,
    load_ewt_constructions,
    load_label_ranking,
    load_wine_quality,
    pos_token_features,
)
from .losses import Projection
from .metrics import (chunk_f1, hamming_loss, kendall_tau, mean_absolute_error,
                      token_accuracy, uas)

TASKS = ("ranking", "ordinal", "multilabel", "tagging", "segmentation", "parsing")

# What each run size trains.  'seq_train' / 'seq_test' cap the EWT sentences
# of tagging, segmentation and parsing (the bundled slice has 1,000 / 300);
# None keeps them all.  The default was sized to finish in about 3 minutes
# on a busy 2-core machine with an empty Numba cache.
CONFIGS = {
    "tiny": {  # for the test suite (hidden option --tiny)
        "ranking_sets": ["iris"],
        "ranking_losses": [("sparsemap", {}), ("hinge", {})],
        "ordinal_losses": ["crf", "hinge"],
        "multilabel_losses": ["squared", "crf"],
        "tagging_losses": ["perceptron", "crf"],
        "segmentation_losses": ["perceptron", "crf"],
        "parsing_losses": ["perceptron", "crf"],
        "seq_train": 60, "seq_test": 40, "rows_train": 300, "parsing_crf_max_iter": 10,
    },
    "quick": {
        "ranking_sets": ["iris"],
        "ranking_losses": [("sparsemap", {}), ("hinge", {})],
        "ordinal_losses": ["crf", "hinge"],
        "multilabel_losses": ["squared", "crf"],
        "tagging_losses": ["perceptron", "crf"],
        "segmentation_losses": ["perceptron", "crf"],
        "parsing_losses": ["perceptron", "crf"],
        "seq_train": 200, "seq_test": 300, "rows_train": None, "parsing_crf_max_iter": 30,
    },
    "default": {
        "ranking_sets": ["iris"],
        "ranking_losses": [("sparsemap", {}), ("hinge", {}), ("projection", {})],
        "ordinal_losses": ["crf", "hinge", "projection"],
        "multilabel_losses": ["squared", "crf", "projection"],
        "tagging_losses": ["perceptron", "crf"],
        "segmentation_losses": ["perceptron", "crf"],
        "parsing_losses": ["perceptron", "crf"],
        "seq_train": 300, "seq_test": 300, "rows_train": None, "parsing_crf_max_iter": 40,
    },
    "full": {
        "ranking_sets": ["iris", "stock"],
        "ranking_losses": [("squared", {}), ("hinge", {}), ("sparsemap", {}),
                           ("projection", {}), ("poslearn", {}),
                           ("hinge-approx-slack", {}),
                           ("projection", {"polytope": "birkhoff"}),
                           (Projection(set="row-stochastic", geometry="kl"),
                            {"polytope": "birkhoff"})],
        "ordinal_losses": ["squared", "crf", "hinge", "hinge-slack", "poslearn",
                           "sparsemap", "projection"],
        "multilabel_losses": ["squared", "crf", "hinge", "poslearn", "projection"],
        # (SparseMAP training of a tagger or a parser takes minutes here:
        # see docs/sequence.rst and docs/parsing.rst)
        "tagging_losses": ["perceptron", "crf", "hinge", "hinge-slack", "poslearn"],
        "segmentation_losses": ["perceptron", "crf", "hinge"],
        "parsing_losses": ["perceptron", "crf", "hinge"],
        "seq_train": None, "seq_test": None, "rows_train": None, "parsing_crf_max_iter": 100,
    },
}

# metric name -> True when higher is better
HIGHER_IS_BETTER = {"Kendall tau": True, "MAE": False, "Hamming loss": False,
                    "token accuracy": True, "chunk F1": True, "UAS": True}

COLUMNS = ("task", "data", "model / loss", "metric", "value", "fit (s)")
_WIDTHS = (13, 17, 30, 14, 7, 7)
_print_lock = threading.Lock()
_WARM_UP_SECONDS = []  # wall time of every warm-up of this process


def _say(text=""):
    """Print a line at once (a pipe or a log file sees it as it happens)."""
    with _print_lock:
        print(text, flush=True)


def format_row(row):
    """One result line: task, data, model / loss, metric, value, fit seconds.

    Columns are separated by at least two spaces (no cell holds two
    consecutive spaces), so ``re.split(r"\\s{2,}", line.strip())`` gives
    the six cells back.
    """
    task, data, model, metric, value, seconds = row
    cells = (task, data, model, metric, f"{value:.4f}", f"{seconds:.2f}")
    return "  ".join(
        str(c).rjust(w) if i >= 4 else str(c).ljust(w)
        for i, (c, w) in enumerate(zip(cells, _WIDTHS))).rstrip()


def format_header():
    cells = "  ".join(str(c).rjust(w) if i >= 4 else str(c).ljust(w)
                      for i, (c, w) in enumerate(zip(COLUMNS, _WIDTHS))).rstrip()
    return cells + "\n" + "  ".join("-" * w for w in _WIDTHS)


def _final_step(model):
    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _warm_up(model, X, y, X_test, what):
    """Fit a copy of ``model`` for 2 iterations on 30 examples and predict 5,
    so that the one-off Numba compilation of the kernels the model uses (on
    their first use after installing; cached on disk afterwards) happens
    here and not inside the timed fit.  Says so when it takes a while."""
    warm = clone(model)
    est = _final_step(warm)
    if "max_iter" in est.get_params():
        est.set_params(max_iter=2)

    noticed = threading.Event()

    def notice():
        noticed.set()
        _say(f"    ... compiling the kernels of {what} (first run only, cached on "
             "disk afterwards)")

    t = time.perf_counter()
    timer = threading.Timer(3.0, notice)
    timer.daemon = True
    timer.start()
    try:
        warm.fit(X[:30], y[:30])
        warm.predict(X_test[:5])
    finally:
        timer.cancel()
    seconds = time.perf_counter() - t
    _WARM_UP_SECONDS.append(seconds)
    if noticed.is_set():
        _say(f"    ... done in {seconds:.1f} s")


def _fit_and_score(rows, task, data, label, model, Xtr, ytr, Xte, evaluate,
                   metric, warm_up=True):
    """Fit ``model`` (after a warm-up), score it, print and keep its line."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if warm_up:
            _warm_up(model, Xtr, ytr, Xte, f"{task} / {label}")
        t = time.perf_counter()
        model.fit(Xtr, ytr)
        seconds = time.perf_counter() - t
    row = (task, data, label, metric, float(evaluate(model, Xte)), seconds)
    rows.append(row)
    _say(format_row(row))
    return row


def _ranks_from_scores(S):
    return np.argsort(np.argsort(-S, axis=1), axis=1) + 1


def _loss_label(loss, kw):
    return f"{loss}" + (f" ({kw['polytope']})" if kw else "")


def ranking_rows(cfg):
    """Label ranking on the Cheng et al. (2009) sets: Kendall's tau."""
    rows = []
    for name in cfg["ranking_sets"]:
        X, Y = load_label_ranking(name)
        Xtr, Xte, Ytr, Yte = train_test_split(X, Y, test_size=0.3, random_state=0)
        _say(f"-- label ranking: {name} ({len(Xtr)} train / {len(Xte)} test rows, "
             f"{Y.shape[1]} labels); Kendall tau, higher is better")
        # baseline: ridge regression on the rank vectors
        _fit_and_score(rows, "label ranking", name, "ridge on ranks (sklearn)",
                       make_pipeline(StandardScaler(), Ridge(alpha=1.0)), Xtr, Ytr, Xte,
                       lambda m, Xt: kendall_tau(Yte, _ranks_from_scores(-m.predict(Xt))),
                       "Kendall tau", warm_up=False)
        for loss, kw in cfg["ranking_losses"]:
            model = make_pipeline(StandardScaler(),
                                  LabelRanker(loss=loss, alpha=1e-4, random_state=0, **kw))
            _fit_and_score(rows, "label ranking", name, _loss_label(loss, kw), model,
                           Xtr, Ytr, Xte, lambda m, Xt: kendall_tau(Yte, m.predict(Xt)),
                           "Kendall tau")
    return rows


def ordinal_rows(cfg):
    """Ordinal regression on red wine quality: mean absolute error."""
    X, y = load_wine_quality("red")
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    if cfg["rows_train"]:
        Xtr, ytr = Xtr[:cfg["rows_train"]], ytr[:cfg["rows_train"]]
    _say(f"-- ordinal regression: wine-red quality 3..8 ({len(Xtr)} train / {len(Xte)} "
         "test rows); MAE, lower is better")
    rows = []
    score = lambda m, Xt: mean_absolute_error(yte, m.predict(Xt))  # noqa: E731
    _fit_and_score(rows, "ordinal", "wine-red", "multinomial logistic (sklearn)",
                   make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
                   Xtr, ytr, Xte, score, "MAE", warm_up=False)
    for loss in cfg["ordinal_losses"]:
        model = make_pipeline(StandardScaler(),
                              OrdinalRegressor(loss=loss, alpha=1e-3, random_state=0))
        _fit_and_score(rows, "ordinal", "wine-red", loss, model, Xtr, ytr, Xte, score, "MAE")
    return rows


def multilabel_rows(cfg):
    """Multilabel: syntactic constructions from a sentence's words (Hamming loss)."""
    texts_tr, Ytr, names = load_ewt_constructions("train")
    texts_te, Yte, _ = load_ewt_constructions("test")
    if cfg["rows_train"]:
        texts_tr, Ytr = texts_tr[:cfg["rows_train"]], Ytr[:cfg["rows_train"]]
    _say(f"-- multilabel: ewt-constructions ({len(texts_tr)} train / {len(texts_te)} test "
         f"sentences, {len(names)} constructions, TF-IDF words); Hamming loss, "
         "lower is better")
    rows = []
    score = lambda m, Xt: hamming_loss(Yte, m.predict(Xt))  # noqa: E731
    _fit_and_score(rows, "multilabel", "ewt-constructions", "one-vs-rest logistic (sklearn)",
                   make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2),
                                 OneVsRestClassifier(LogisticRegression(C=10, max_iter=1000))),
                   texts_tr, Ytr, texts_te, score, "Hamming loss", warm_up=False)
    for loss in cfg["multilabel_losses"]:
        model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), min_df=2),
                              MultiLabelClassifier(loss=loss, alpha=1e-4, random_state=0))
        _fit_and_score(rows, "multilabel", "ewt-constructions", loss, model,
                       texts_tr, Ytr, texts_te, score, "Hamming loss")
    return rows


class _MostFrequentTag:
    """Baseline: each word's most frequent training tag (else the overall one)."""

    def fit(self, X, y):
        counts = defaultdict(Counter)
        for xs, ys in zip(X, y):
            for x, tag in zip(xs, ys):
                counts[x["word"]][tag] += 1
        self.overall_ = Counter(tag for ys in y for tag in ys).most_common(1)[0][0]
        self.best_ = {w: c.most_common(1)[0][0] for w, c in counts.items()}
        return self

    def predict(self, X):
        return [[self.best_.get(x["word"], self.overall_) for x in xs] for xs in X]


def _ewt_slices(cfg):
    train, test = load_ewt("train"), load_ewt("test")
    return train[:cfg["seq_train"]], test[:cfg["seq_test"]]


def tagging_rows(cfg):
    """POS tagging of the bundled EWT slice: token accuracy."""
    train, test = _ewt_slices(cfg)
    Xtr, ytr = [pos_token_features(s.forms) for s in train], [list(s.upos) for s in train]
    Xte, yte = [pos_token_features(s.forms) for s in test], [list(s.upos) for s in test]
    _say(f"-- tagging: ewt-upos ({len(Xtr)} train / {len(Xte)} test sentences, 17 UPOS "
         "tags, word/affix/neighbour features); token accuracy, higher is better")
    rows = []
    score = lambda m, Xt: token_accuracy(yte, m.predict(Xt))  # noqa: E731
    _fit_and_score(rows, "tagging", "ewt-upos", "most frequent tag per word",
                   _MostFrequentTag(), Xtr, ytr, Xte, score, "token accuracy", warm_up=False)
    for loss in cfg["tagging_losses"]:
        model = SequenceTagger(loss=loss, alpha=2.0 / len(Xtr), random_state=0)
        _fit_and_score(rows, "tagging", "ewt-upos", loss, model, Xtr, ytr, Xte, score,
                       "token accuracy")
    return rows


# Dependents that belong to the base noun phrase of the noun they precede
# (and possessive pronouns, 'nmod:poss' in EWT: "my", "their").
_NP_PREMODIFIERS = {"det", "det:poss", "amod", "compound", "nummod"}


def _is_premodifier(tok):
    return (tok["deprel"] in _NP_PREMODIFIERS
            or (tok["deprel"] == "nmod:poss" and tok["upos"] == "PRON"))


def _noun_phrase_tags(sentence):
    """BIO tags of base noun phrases read off a UD tree (a simple rule).

    Every NOUN, PROPN or PRON that is not itself a premodifier or a
    compound/flat/fixed part heads a phrase: the phrase extends left over
    the contiguous tokens attached inside it as determiners, adjectival,
    numeric or compound modifiers and possessive pronouns, and right over
    its ``flat`` parts (multi-word names).  "My sister 's old friend John
    Smith saw the big two dogs ." gives [My sister] 's [old friend] [John
    Smith] saw [the big two dogs] .
    """
    toks = sentence.tokens
    tags = ["O"] * len(toks)
    for h, tok in enumerate(toks):
        rel = tok["deprel"] or ""
        if (tok["upos"] not in ("NOUN", "PROPN", "PRON") or _is_premodifier(tok)
                or rel.split(":")[0] in ("compound", "flat", "fixed")):
            continue
        start = end = h
        while (start > 0 and _is_premodifier(toks[start - 1])
               and toks[start - 1]["head"] is not None
               and start <= toks[start - 1]["head"] - 1 <= end):
            start -= 1
        while (end + 1 < len(toks)
               and (toks[end + 1]["deprel"] or "").split(":")[0] == "flat"
               and toks[end + 1]["head"] is not None
               and start <= toks[end + 1]["head"] - 1 <= end):
            end += 1
        if all(t == "O" for t in tags[start:end + 1]):
            tags[start:end + 1] = ["B-NP"] + ["I-NP"] * (end - start)
    return tags


def segmentation_rows(cfg):
    """Base noun phrases of the bundled EWT slice as segments: chunk F1."""
    train, test = _ewt_slices(cfg)
    Xtr, ytr = [pos_token_features(s.forms) for s in train], [_noun_phrase_tags(s)
                                                              for s in train]
    Xte, yte = [pos_token_features(s.forms) for s in test], [_noun_phrase_tags(s)
                                                             for s in test]
    _say(f"-- segmentation: ewt-noun-phrases ({len(Xtr)} train / {len(Xte)} test sentences, "
         "base NPs read off the trees, semi-Markov SegmentTagger); chunk F1, "
         "higher is better")
    rows = []
    score = lambda m, Xt: chunk_f1(yte, m.predict(Xt))  # noqa: E731
    _fit_and_score(rows, "segmentation", "ewt-noun-phrases", "most frequent tag per word",
                   _MostFrequentTag(), Xtr, ytr, Xte, score, "chunk F1", warm_up=False)
    for loss in cfg["segmentation_losses"]:
        model = SegmentTagger(loss=loss, alpha=2.0 / len(Xtr), random_state=0)
        _fit_and_score(rows, "segmentation", "ewt-noun-phrases", loss, model, Xtr, ytr,
                       Xte, score, "chunk F1")
    return rows


class _LeftNeighbour:
    """Baseline: every word attaches to the word before it (the first to the root)."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        return [list(range(len(x))) for x in X]


def parsing_rows(cfg):
    """Unlabelled dependency parsing of the bundled EWT slice: UAS."""
    train, test = _ewt_slices(cfg)
    Xtr, ytr = [s.tokens for s in train], [s.heads for s in train]
    Xte, yte = [s.tokens for s in test], [s.heads for s in test]
    _say(f"-- parsing: ewt-heads ({len(Xtr)} train / {len(Xte)} test sentences, gold POS, "
         "non-projective first-order model); UAS, higher is better")
    rows = []
    score = lambda m, Xt: uas(yte, m.predict(Xt))  # noqa: E731
    _fit_and_score(rows, "parsing", "ewt-heads", "left neighbour", _LeftNeighbour(),
                   Xtr, ytr, Xte, score, "UAS", warm_up=False)
    for loss in cfg["parsing_losses"]:
        model = DependencyParser(loss=loss, alpha=1e-3, random_state=0,
                                 max_iter=(10 if loss in ("perceptron", "hinge")
                                           else cfg["parsing_crf_max_iter"]))
        _fit_and_score(rows, "parsing", "ewt-heads", loss, model, Xtr, ytr, Xte, score, "UAS")
    return rows


_ROWS = {"ranking": ranking_rows, "ordinal": ordinal_rows, "multilabel": multilabel_rows,
         "tagging": tagging_rows, "segmentation": segmentation_rows,
         "parsing": parsing_rows}


def format_table(rows):
    """The final comparison: every line, its difference with the task's
    baseline (its first line; positive = better) and a ``*`` on the best
    model of each task."""
    best = {}
    for r in rows:
        sign = 1 if HIGHER_IS_BETTER[r[3]] else -1
        key = (r[0], r[1])
        if key not in best or sign * r[4] > sign * best[key]:
            best[key] = r[4]
    header = ("task", "data", "model / loss", "metric", "value", "vs baseline",
              "fit (s)")
    cells = [header]
    baseline = {}
    for r in rows:
        key = (r[0], r[1])
        sign = 1 if HIGHER_IS_BETTER[r[3]] else -1
        if key not in baseline:
            baseline[key] = r[4]
            diff = "baseline"
        else:
            diff = f"{sign * (r[4] - baseline[key]):+.4f}"
        mark = " *" if r[4] == best[key] else ""
        cells.append((r[0], r[1], r[2] + mark, r[3], f"{r[4]:.4f}", diff, f"{r[5]:.2f}"))
    widths = [max(len(str(c[i])) for c in cells) for i in range(len(header))]
    lines = []
    for j, c in enumerate(cells):
        lines.append("  ".join(str(x).rjust(w) if i >= 4 else str(x).ljust(w)
                               for i, (x, w) in enumerate(zip(c, widths))).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv=None):
    """Run the demo (the README's first command).

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments (``sys.argv[1:]`` when None); ``--help``
        lists them.

    Returns
    -------
    status : int
        0 on success.
    """
    parser = argparse.ArgumentParser(
        prog="python -m structlearn.demo",
        description="Fit structlearn's estimators (label ranking, ordinal regression, "
                    "multilabel, tagging, segmentation, parsing) with several losses on "
                    "real data bundled with the package, printing a line per model as "
                    "it goes and a comparison table at the end.  The default run takes "
                    "about 3 minutes on a busy 2-core machine the first time (most of "
                    "it compiling the Numba kernels, cached on disk afterwards).")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="fewer losses and a 200-sentence training slice for the "
                           "sequence tasks (30 s once the kernels are compiled; a "
                           "first run compiles about as long as the default one)")
    size.add_argument("--full", action="store_true",
                      help="every bundled data set and more losses on the whole "
                           "bundled slices (about 12 minutes on a busy 2-core machine)")
    size.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=TASKS + ("all",), default="all",
                        help="run one task only")
    args = parser.parse_args(argv)
    mode = ("full" if args.full else "quick" if args.quick else "tiny" if args.tiny
            else "default")
    cfg = CONFIGS[mode]
    tasks = TASKS if args.task == "all" else (args.task,)
    t0, cpu0 = time.perf_counter(), time.process_time()
    n_warm_ups = len(_WARM_UP_SECONDS)
    _say(f"structlearn demo ({mode} run): {', '.join(tasks)} on real data bundled with "
         "the package (Cheng et al. label-ranking sets, red Wine Quality, UD English EWT "
         "slices), a scikit-learn or trivial baseline first, then structlearn "
         "losses; metrics on held-out data.")
    _say("A first run compiles each model's Numba kernels before its timed fit "
         "(a few seconds each, cached on disk afterwards; 'structlearn precompile' "
         "does it ahead, on every core); 'fit (s)' leaves that out.")
    _say()
    _say(format_header())
    rows = []
    for task in tasks:
        rows += _ROWS[task](cfg)
    _say()
    _say("Comparison (* = best of its task; 'vs baseline': positive is better):")
    _say(format_table(rows))
    warm = sum(_WARM_UP_SECONDS[n_warm_ups:])
    _say(f"\ntotal {time.perf_counter() - t0:.1f} s wall ({time.process_time() - cpu0:.1f} s "
         f"CPU), of which {warm:.1f} s before the timed fits: compiling the kernels "
         "on a first run (later runs load them from the on-disk cache) and fitting "
         "on 30 examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
