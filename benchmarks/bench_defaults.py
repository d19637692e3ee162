#!/usr/bin/env python
"""Defaults against alpha='auto', on data nobody tuned for (issue 21).

``--task ordinal`` (default): every ordinal data set of the data folder
(Chu & Ghahramani, 10 bins, the first ``--partitions`` train/test
partitions), as a new user would run it:
``Pipeline(StandardScaler(), OrdinalRegressor(...))`` with

* the defaults (``loss='projection'``, ``alpha=1e-3``);
* ``loss='crf'`` at the default ``alpha``;
* ``alpha='auto'`` for both (3-fold internal CV over 10, 1, ..., 1e-6);
* mord's ``LogisticAT`` with its own default (``alpha=1``, on the sum of
  the losses) -- the plain baseline a user would try first.

``--task multilabel``: MULAN emotions, scene and yeast (their train / test
split), ``MultiLabelClassifier`` with its defaults and with
``alpha='auto'`` (which picks by subset accuracy, the estimator's
``score``), against one-vs-rest logistic regression with scikit-learn's
defaults; test Hamming loss and subset accuracy.

``--task ranking``: the label-ranking sets of up to 1,000 rows (5-fold CV,
shuffled, seed 0), ``LabelRanker`` with its defaults and with
``alpha='auto'`` against independent per-label ridge regression of the
ranks (scikit-learn's ``Ridge`` with its defaults, the labels ranked by the
predicted ranks); mean Kendall tau.

``--task wine``: wine quality (red, white), stratified 5-fold CV (seed 0),
``OrdinalRegressor`` with the default projection loss against
``loss='crf'``, both at the default penalty; test MAE and fit CPU seconds.

``--task tagging``: every sequence data set of the data folder, as a new
user would run it, ``SequenceTagger()`` (CRF, ``alpha=1e-4``) against
``alpha='auto'``, CRFsuite with sklearn-crfsuite's defaults
(``sklearn_crfsuite.CRF()``: L-BFGS, ``c2=1``) on the same feature dicts,
and the averaged perceptron (``loss='perceptron'``) as the cheap baseline:

* UD UPOS tagging, ``pos_token_features`` of the words: English EWT (train
  -> test, ``--n-train`` caps train) and Romanian-RRT, Chinese-GSD,
  Japanese-GSD, Danish-DDT, Dutch-Alpino **trained on dev** (their train
  files are not in the data folder: the README's small-data protocol);
  token accuracy on test;
* CoNLL-2000 chunking (train -> test, the CRF++ template of CRFsuite's
  benchmark), chunk F1;
* CoNLL-2002 NER, Spanish and Dutch (train -> testb; the ``'default'``
  column template of ``structlearn train`` on word and POS), entity F1.

On the large sets (more than ``--auto-n-train`` training sentences)
``alpha='auto'`` runs on the first ``--auto-n-train`` sentences, beside the
default on the same slice; the alpha it picks is then refitted on the whole
training set (``SequenceTagger(alpha=<picked>)``).  Fits use ``n_jobs=1``.

``--task parsing``: Romanian-RRT, Chinese-GSD, Japanese-GSD, Danish-DDT,
Dutch-Alpino **trained on dev** (labelled targets), test UAS / LAS:
``DependencyParser()`` (CRF, ``alpha=1e-5``), ``alpha='auto'`` (its CV
unlabelled, by UAS), the alpha it picks refitted labelled, and the averaged
perceptron.  ``bench_parsing_small.py`` holds the per-loss grid search.

Reported: the test metric (mean over partitions) and the fit's CPU seconds,
side by side in one process.  The tuned rows of ``results/ordinal.md`` (an outer
grid search per partition) are the reference for what tuning can reach.

    python benchmarks/bench_defaults.py --partitions 3
    python benchmarks/bench_defaults.py --task tagging [--quick] [--n-train N]
    python benchmarks/bench_defaults.py --task parsing [--quick]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    SMALL_TREEBANKS, command_line, common_parser, conll2000_xy, conll2002_xy,
    label_ranking_csv, label_ranking_names, load_chu_ghahramani, load_mulan, machine_info,
    md_table, parse_args, report, ud_sentences, upos_xy)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import (  # noqa: E402
    LabelRanker, MultiLabelClassifier, OrdinalRegressor, SequenceTagger)
from structlearn.datasets import list_chu_ghahramani_datasets, list_mulan_datasets  # noqa: E402

DATASETS = list_chu_ghahramani_datasets()


def _mord():
    import mord

    class MordAT(mord.LogisticAT):   # mord needs labels 0..K-1
        def fit(self, X, y):
            self.labels_ = np.unique(y)
            return super().fit(X, np.searchsorted(self.labels_, y))

        def predict(self, X):
            return self.labels_[super().predict(X)]
    return MordAT()


MODELS = {
    "default (projection, alpha=1e-3)": lambda: OrdinalRegressor(random_state=0),
    "projection, alpha='auto'": lambda: OrdinalRegressor(alpha="auto", random_state=0),
    "crf, alpha=1e-3": lambda: OrdinalRegressor(loss="crf", random_state=0),
    "crf, alpha='auto'": lambda: OrdinalRegressor(loss="crf", alpha="auto", random_state=0),
    "mord LogisticAT (its default alpha=1)": _mord,
}


def _ovr():
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    return OneVsRestClassifier(LogisticRegression(max_iter=1000))


ML_MODELS = {
    "default (projection, alpha=1e-3)": lambda: MultiLabelClassifier(random_state=0),
    "projection, alpha='auto'": lambda: MultiLabelClassifier(alpha="auto", random_state=0),
    "crf, alpha=1e-3": lambda: MultiLabelClassifier(loss="crf", random_state=0),
    "crf, alpha='auto'": lambda: MultiLabelClassifier(loss="crf", alpha="auto",
                                                       random_state=0),
    "one-vs-rest LogisticRegression (defaults)": _ovr,
}


def multilabel(args):
    from sklearn.metrics import accuracy_score, hamming_loss

    rows, cpu_rows = [], []
    for d in list_mulan_datasets():
        Xtr, Ytr, Xte, Yte = load_mulan(d)
        hl, acc, cpu, chosen = {}, {}, {}, {}
        for m, make in ML_MODELS.items():
            model = make_pipeline(StandardScaler(), make())
            t = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(Xtr, Ytr)
            cpu[m] = time.process_time() - t
            P = model.predict(Xte)
            hl[m], acc[m] = hamming_loss(Yte, P), accuracy_score(Yte, P)
            chosen[m] = getattr(model[-1], "alpha_", None)
            print(d, m, f"HL {hl[m]:.4f} acc {acc[m]:.4f} {cpu[m]:.1f}s", flush=True)
        best = min(hl.values())
        rows.append([d] + [(f"**{hl[m]:.4f}**" if hl[m] == best else f"{hl[m]:.4f}")
                           + f" / {acc[m]:.3f}"
                           + (f" ({chosen[m]:.0e})" if chosen[m] is not None else "")
                           for m in ML_MODELS])
        cpu_rows.append([d] + [f"{cpu[m]:.2f}" for m in ML_MODELS])
    return (f"# Multilabel defaults against alpha='auto' and one-vs-rest logistic "
            f"regression\n\nCommand: `python benchmarks/bench_defaults.py --task "
            f"multilabel`\n\nMachine: {machine_info()}\n\nTest Hamming loss / subset "
            f"accuracy (chosen alpha; bold: the lowest Hamming loss):\n\n"
            f"{md_table(['data set'] + list(ML_MODELS), rows)}\n\nFit CPU seconds:\n\n"
            f"{md_table(['data set'] + list(ML_MODELS), cpu_rows)}\n")


class _RidgeRanks:
    """Independent per-label ridge regression of the ranks; predict ranks the
    labels by the predicted ranks (ties broken by label order)."""

    def fit(self, X, Y):
        from sklearn.linear_model import Ridge

        self.model_ = Ridge().fit(X, Y)
        return self

    def predict(self, X):
        S = self.model_.predict(X)
        return np.argsort(np.argsort(S, axis=1, kind="stable"), axis=1) + 1

    def get_params(self, deep=True):
        return {}


RANK_MODELS = {
    "default (projection, alpha=1e-3)": lambda: LabelRanker(random_state=0),
    "projection, alpha='auto'": lambda: LabelRanker(alpha="auto", random_state=0),
    "per-label Ridge (defaults)": _RidgeRanks,
}


def ranking(args):
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler as Scaler

    from structlearn.datasets import read_label_ranking_csv
    from structlearn.metrics import kendall_tau

    rows, cpu_rows = [], []
    for d in label_ranking_names():
        X, Y = read_label_ranking_csv(label_ranking_csv(d))
        if len(X) > args.max_rows:
            continue
        tau = {m: [] for m in RANK_MODELS}
        cpu = {m: 0.0 for m in RANK_MODELS}
        for tr, te in KFold(5, shuffle=True, random_state=0).split(X):
            sc = Scaler().fit(X[tr])
            for m, make in RANK_MODELS.items():
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = make().fit(sc.transform(X[tr]), Y[tr])
                cpu[m] += time.process_time() - t
                tau[m].append(kendall_tau(Y[te], model.predict(sc.transform(X[te]))))
        means = {m: float(np.mean(v)) for m, v in tau.items()}
        best = max(means.values())
        rows.append([d, len(X)] + [f"**{v:.4f}**" if v == best else f"{v:.4f}"
                                   for v in means.values()])
        cpu_rows.append([d] + [f"{cpu[m] / 5:.2f}" for m in RANK_MODELS])
        print(d, " | ".join(f"{m.split(',')[0]} {v:.4f}" for m, v in means.items()),
              flush=True)
    return (f"# Label-ranking defaults against alpha='auto' and per-label ridge\n\n"
            f"Command: `python benchmarks/bench_defaults.py --task ranking`\n\nMachine: "
            f"{machine_info()}\n\nMean Kendall tau over 5 folds (bold: the best):\n\n"
            f"{md_table(['data set', 'rows'] + list(RANK_MODELS), rows)}\n\n"
            f"Fit CPU seconds (mean per fold):\n\n"
            f"{md_table(['data set'] + list(RANK_MODELS), cpu_rows)}\n")


def wine(args):
    from sklearn.model_selection import StratifiedKFold

    from structlearn.datasets import load_wine_quality

    rows = []
    for color in ["red", "white"]:
        X, y = load_wine_quality(color)
        for loss in ["projection", "crf"]:
            maes, cpu = [], 0.0
            for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
                model = make_pipeline(StandardScaler(), OrdinalRegressor(loss=loss))
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(X[tr], y[tr])
                cpu += time.process_time() - t
                maes.append(float(np.mean(np.abs(model.predict(X[te]) - y[te]))))
            rows.append([color, loss, f"{np.mean(maes):.4f}", f"{cpu / 5:.2f}"])
            print(*rows[-1], flush=True)
    return (f"# Wine quality: the default loss against the CRF\n\nCommand: `python "
            f"benchmarks/bench_defaults.py --task wine`\n\nMachine: {machine_info()}\n\n"
            f"{md_table(['wine', 'loss', 'MAE (5-fold)', 'fit CPU s (mean)'], rows)}\n")


# ------------------------------------------------------------------ tagging
def _upos(code, small):
    def load(n):
        tr = "dev" if small else "train"
        return (*upos_xy(code, tr, n), *upos_xy(code, "test"))
    return load, "accuracy", not small


def _conll2000(n):
    (Xtr, ytr), (Xte, yte) = conll2000_xy("train"), conll2000_xy("test")
    return Xtr[:n] if n else Xtr, ytr[:n] if n else ytr, Xte, yte


def _conll2002(lang):
    return (lambda n: (*conll2002_xy(lang, "train", n=n), *conll2002_xy(lang, "testb")),
            "F1", True)


#: name -> (loader of (X_train, y_train, X_test, y_test) given a cap on the
#: training sentences, metric, large set?)
TAG_SETS = {
    "en_ewt UPOS": _upos("en_ewt", False),
    **{f"{code} UPOS (trained on dev)": _upos(code, True) for code in SMALL_TREEBANKS},
    "CoNLL-2000 chunking": (_conll2000, "F1", True),
    "CoNLL-2002 esp NER": _conll2002("esp"),
    "CoNLL-2002 ned NER": _conll2002("ned"),
}


def _crfsuite():
    import sklearn_crfsuite

    return sklearn_crfsuite.CRF()


TAG_DEFAULT = "SequenceTagger() (crf, alpha=1e-4)"
TAG_AUTO = "SequenceTagger(alpha='auto')"
TAG_MODELS = {
    TAG_DEFAULT: lambda: SequenceTagger(random_state=0, n_jobs=1),
    TAG_AUTO: lambda: SequenceTagger(alpha="auto", random_state=0, n_jobs=1),
    "sklearn_crfsuite.CRF() (lbfgs, c2=1)": _crfsuite,
    "SequenceTagger(loss='perceptron')": lambda: SequenceTagger(loss="perceptron",
                                                                random_state=0, n_jobs=1),
}


def _tag_metric(metric, y_true, y_pred):
    from structlearn.metrics import chunk_f1, token_accuracy

    # (not est.score: a test tag unseen in the dev-trained model is simply wrong)
    return 100 * (token_accuracy(y_true, y_pred) if metric == "accuracy"
                  else chunk_f1(y_true, y_pred))


def _tag_run(name, make, Xtr, ytr, Xte, yte, metric):
    est = make()
    t = time.process_time()
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        try:
            est.fit(Xtr, ytr)
        except ValueError as exc:   # reported in the table: what a user would meet
            return dict(model=name, n_train=len(Xtr), score=np.nan,
                        cpu=time.process_time() - t, alpha=None,
                        error=f"{type(exc).__name__}: {exc}")
    cpu = time.process_time() - t
    score = _tag_metric(metric, yte, est.predict(Xte))
    row = dict(model=name, n_train=len(Xtr), score=score, cpu=cpu,
               alpha=getattr(est, "alpha_", None), n_iter=getattr(est, "n_iter_", ""),
               n_warnings=len(log))
    if hasattr(est, "cv_scores_"):
        row["cv"] = dict(zip(est.cv_alphas_, 100 * est.cv_scores_.mean(axis=1)))
    return row


def tagging(args):
    names = args.tag_sets or list(TAG_SETS)
    unknown = [n for n in names if n not in TAG_SETS]
    if unknown:
        raise SystemExit(f"unknown --tag-sets {unknown}: choose among {list(TAG_SETS)}")
    n_train = 300 if args.quick else args.n_train
    auto_n = 150 if args.quick else args.auto_n_train
    # warm-up: Numba loads its kernels on the first fit, which is not the fit's time
    Xw, yw = upos_xy(SMALL_TREEBANKS[0], "dev", 20)
    for loss in ("crf", "perceptron"):
        SequenceTagger(loss=loss, n_jobs=1).fit(Xw, yw)
    results = {}
    for d in names:
        load, metric, large = TAG_SETS[d]
        Xtr, ytr, Xte, yte = load(n_train if large else None)
        if args.quick:
            Xtr, ytr, Xte, yte = Xtr[:n_train], ytr[:n_train], Xte[:300], yte[:300]
        rows = []
        for m, make in TAG_MODELS.items():
            if m == TAG_AUTO and auto_n and len(Xtr) > auto_n:
                # the CV path on a slice, beside the default on the same slice; the
                # alpha it picks refitted on everything
                for mm in (TAG_DEFAULT, TAG_AUTO):
                    rows.append(_tag_run(mm, TAG_MODELS[mm], Xtr[:auto_n], ytr[:auto_n],
                                         Xte, yte, metric))
                    rows[-1]["slice"] = True
                    print(d, rows[-1], flush=True)
                a = rows[-1]["alpha"]
                if a is None:   # the CV failed
                    continue
                rows.append(_tag_run(f"SequenceTagger(alpha={a:.0e}) (picked on the slice)",
                                     lambda: SequenceTagger(alpha=a, random_state=0, n_jobs=1),
                                     Xtr, ytr, Xte, yte, metric))
            else:
                rows.append(_tag_run(m, make, Xtr, ytr, Xte, yte, metric))
            print(d, rows[-1], flush=True)
        results[d] = (metric, len(Xte), rows)
    return _tagging_report(args, results, n_train, auto_n)


def _tagging_report(args, results, n_train, auto_n):
    body, cv_rows, alphas = [], [], None
    for d, (metric, n_test, rows) in results.items():
        full = [r for r in rows if not r.get("slice") and "error" not in r]
        best = max(r["score"] for r in full)
        for r in rows:
            cell = f"{r['score']:.2f}" if "error" not in r else "fails (a)"
            if not r.get("slice") and r["score"] == best:
                cell = f"**{cell}**"
            body.append([d, "token acc" if metric == "accuracy" else "span F1",
                         r["model"], r["n_train"], cell, f"{r['cpu']:.1f}",
                         "" if r["alpha"] is None else f"{r['alpha']:.0e}"])
            if "cv" in r:
                alphas = list(r["cv"])
                top = max(r["cv"].values())
                cv_rows.append([d, r["n_train"]] + [f"**{v:.2f}**" if v == top else f"{v:.2f}"
                                                    for v in r["cv"].values()])
    errors = sorted({r["error"] for _, _, rows in results.values() for r in rows
                     if "error" in r})
    text = (f"# Sequence tagging defaults against alpha='auto', CRFsuite's defaults and the "
            f"averaged perceptron\n\nCommand: `{command_line()}`"
            + (f" (training sets of the large sets capped at {n_train} sentences)"
               if n_train else "")
            + f"\n\nMachine: {machine_info()}\n\n"
            f"Test token accuracy (UPOS) or span F1 (chunks, entities), in %; fit CPU "
            f"seconds (`time.process_time`, n_jobs=1); the alpha picked by 'auto' "
            f"(3-fold CV inside the training data by token accuracy).  Bold: the best "
            f"of the data set on its whole training set.  The small UD treebanks are "
            f"**trained on dev** (about 500-750 sentences), tested on test.  On a set "
            f"larger than {auto_n} training sentences alpha='auto' runs on its first "
            f"{auto_n} sentences, beside the default on the same slice, and the picked "
            f"alpha is refitted on the whole set.\n\n"
            + md_table(["data set", "metric", "model", "train sentences", "test score",
                        "fit CPU s", "alpha picked"], body) + "\n")
    if errors:
        text += ("\n(a) the fit raised: " + "; ".join(f"`{e[:300]}`" for e in errors)
                 + ".\n")
    if cv_rows:
        text += ("\nalpha='auto''s cross-validation path: mean 3-fold CV token accuracy (%) "
                 "per alpha (bold: the best)\n\n"
                 + md_table(["data set", "CV on sentences"] + [f"{a:.0e}" for a in alphas],
                            cv_rows) + "\n")
    return text


# ------------------------------------------------------------------ parsing
PARSE_DEFAULT = "DependencyParser() (crf, alpha=1e-5)"
PARSE_AUTO = "DependencyParser(alpha='auto')"


def _parse_run(name, est, Xtr, ytr, Xte, yte):
    from structlearn.metrics import las, uas

    t = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xtr, ytr)
    cpu = time.process_time() - t
    row = dict(model=name, n_train=len(Xtr), cpu=cpu, alpha=getattr(est, "alpha_", None),
               n_iter=est.n_iter_)
    pred = est.predict(Xte)
    row["uas"] = 100 * uas(yte, pred)
    if isinstance(ytr[0], tuple):
        row["las"] = 100 * las(yte, pred)
    if hasattr(est, "cv_scores_"):
        row["cv"] = dict(zip(est.cv_alphas_, 100 * est.cv_scores_.mean(axis=1)))
    return row


def parsing(args):
    """Small treebanks trained on dev: the default parser (labelled: UAS and
    LAS), alpha='auto' (its CV on unlabelled trees, by UAS: a labelled CV fits
    the second stage 25 times more), the picked alpha refitted labelled, and
    the averaged perceptron (labelled)."""
    from structlearn import DependencyParser
    from structlearn.datasets import conllu_targets

    codes = args.treebanks or list(SMALL_TREEBANKS)
    # warm-up: Numba loads its kernels on the first fit, which is not the fit's time
    warm = ud_sentences(codes[0], "dev", 10)
    for loss in ("crf", "perceptron"):
        DependencyParser(loss=loss, n_jobs=1).fit([s.tokens for s in warm],
                                                  conllu_targets(warm))
    results = {}
    for code in codes:
        tr, te = ud_sentences(code, "dev"), ud_sentences(code, "test")
        if args.quick:
            tr, te = tr[:60], te[:100]
        Xtr, Xte = [s.tokens for s in tr], [s.tokens for s in te]
        ytr, yte = conllu_targets(tr), conllu_targets(te)
        heads = [h for h, _ in ytr]
        rows = [_parse_run(PARSE_DEFAULT, DependencyParser(random_state=0, n_jobs=1),
                           Xtr, ytr, Xte, yte)]
        print(code, rows[-1], flush=True)
        rows.append(_parse_run(PARSE_AUTO + " (unlabelled)",
                               DependencyParser(alpha="auto", random_state=0, n_jobs=1),
                               Xtr, heads, Xte, [h for h, _ in yte]))
        print(code, rows[-1], flush=True)
        a = rows[-1]["alpha"]
        rows.append(_parse_run(f"DependencyParser(alpha={a:.0e}) (picked by 'auto')",
                               DependencyParser(alpha=a, random_state=0, n_jobs=1),
                               Xtr, ytr, Xte, yte))
        print(code, rows[-1], flush=True)
        rows.append(_parse_run("DependencyParser(loss='perceptron')",
                               DependencyParser(loss="perceptron", random_state=0, n_jobs=1),
                               Xtr, ytr, Xte, yte))
        print(code, rows[-1], flush=True)
        results[code] = rows
        if code != codes[-1]:   # a cut run keeps the treebanks it finished
            report(args, _parsing_report(results), "defaults_parsing")
    return _parsing_report(results)


def _parsing_report(results):
    body, cv_rows, alphas = [], [], None
    for code, rows in results.items():
        best = max(r["las"] for r in rows if "las" in r)
        for r in rows:
            las_cell = "" if "las" not in r else (
                f"**{r['las']:.2f}**" if r["las"] == best else f"{r['las']:.2f}")
            body.append([f"{code} (trained on dev)", r["model"], r["n_train"],
                         f"{r['uas']:.2f}", las_cell, f"{r['cpu']:.1f}",
                         "" if r["alpha"] is None else f"{r['alpha']:.0e}"])
            if "cv" in r:
                alphas = list(r["cv"])
                top = max(r["cv"].values())
                cv_rows.append([code] + [f"**{v:.2f}**" if v == top else f"{v:.2f}"
                                         for v in r["cv"].values()])
    text = (f"# Dependency parsing defaults against alpha='auto' and the averaged "
            f"perceptron\n\nCommand: `{command_line()}`\n\nMachine: {machine_info()}\n\n"
            f"The five treebanks whose train file is not in the data folder, **trained on "
            f"dev**, tested on test: UAS and LAS in % (punctuation included, gold tokens "
            f"and tags; LAS of the labelled parsers), fit CPU seconds "
            f"(`time.process_time`, n_jobs=1).  alpha='auto' runs unlabelled (3-fold CV "
            f"inside dev by UAS; a labelled CV would also fit the second stage at every "
            f"point of the path); the alpha it picks is refitted labelled.  Bold: the "
            f"best LAS of the treebank.\n\n"
            + md_table(["treebank", "model", "train sentences", "test UAS", "test LAS",
                        "fit CPU s", "alpha picked"], body) + "\n")
    if cv_rows:
        text += ("\nalpha='auto''s cross-validation path: mean 3-fold CV UAS (%) per alpha "
                 "(bold: the best)\n\n"
                 + md_table(["treebank"] + [f"{a:.0e}" for a in alphas], cv_rows) + "\n")
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 parents=[common_parser("quick", "out", "no_write", "data",
                                                        out="defaults_<task>")])
    ap.add_argument("--task", choices=["ordinal", "multilabel", "ranking", "wine", "tagging",
                                       "parsing"], default="ordinal")
    ap.add_argument("--treebanks", nargs="+", default=None, metavar="CODE",
                    help="parsing: the treebanks (default: %s)" % " ".join(SMALL_TREEBANKS))
    ap.add_argument("--n-train", type=int, default=None,
                    help="tagging: cap the training sentences of the large sets (EWT, "
                         "CoNLL-2000, CoNLL-2002; default: all)")
    ap.add_argument("--auto-n-train", type=int, default=2000,
                    help="tagging: alpha='auto' on the first N training sentences of a "
                         "larger set (0: on all of it)")
    ap.add_argument("--tag-sets", nargs="+", default=None, metavar="NAME",
                    help="tagging: the data sets to run (default: all of %s)" %
                         ", ".join(TAG_SETS))
    ap.add_argument("--max-rows", type=int, default=1000,
                    help="ranking: skip the sets with more rows")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--datasets", nargs="*", default=DATASETS)
    args = parse_args(ap, argv)
    if args.task in ("multilabel", "ranking", "wine", "tagging", "parsing"):
        text = {"multilabel": multilabel, "ranking": ranking, "wine": wine,
                "tagging": tagging, "parsing": parsing}[args.task](args)
        report(args, text, f"defaults_{args.task}")
        return
    mae = {(d, m): [] for d in args.datasets for m in MODELS}
    cpu = {(d, m): [] for d in args.datasets for m in MODELS}
    alphas = {(d, m): [] for d in args.datasets for m in MODELS}
    for d in args.datasets:
        for part in range(1, args.partitions + 1):
            Xtr, ytr, Xte, yte = load_chu_ghahramani(d, part)
            for m, make in MODELS.items():
                model = make_pipeline(StandardScaler(), make())
                t = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model.fit(Xtr, ytr)
                cpu[d, m].append(time.process_time() - t)
                mae[d, m].append(float(np.mean(np.abs(model.predict(Xte) - yte))))
                alphas[d, m].append(getattr(model[-1], "alpha_", None))
            print(d, part, " | ".join(f"{m.split(',')[0]} {mae[d, m][-1]:.3f}" for m in MODELS),
                  flush=True)
    rows = []
    for d in args.datasets:
        best = min(np.mean(mae[d, m]) for m in MODELS)
        row = [d]
        for m in MODELS:
            v = np.mean(mae[d, m])
            cell = f"{v:.3f}" if v > best else f"**{v:.3f}**"
            a = [x for x in alphas[d, m] if x is not None]
            if a:
                cell += " (" + "/".join(f"{x:.0e}" for x in a) + ")"
            row.append(cell)
        rows.append(row)
    cpu_rows = [[d] + [f"{np.mean(cpu[d, m]):.2f}" for m in MODELS] for d in args.datasets]
    text = (f"# Ordinal defaults against alpha='auto' and mord's default\n\nCommand: "
            f"`{command_line()}`\n\nMachine: "
            f"{machine_info()}\n\nTest MAE, mean over partitions 1..{args.partitions} "
            f"(chosen alphas in parentheses; bold: the best of the row):\n\n"
            f"{md_table(['data set'] + list(MODELS), rows)}\n\nFit CPU seconds (mean):\n\n"
            f"{md_table(['data set'] + list(MODELS), cpu_rows)}\n")
    report(args, text, "defaults_ordinal")


if __name__ == "__main__":
    main()
