"""Dependency-parsing benchmark: DependencyParser on UD English EWT.

Protocol (data from ``ud_english_ewt/`` in the data folder,
``$STRUCTLEARN_BENCH_DATA`` or ``--data``, default ``../shared/data``): train on train,
select on dev, report UAS (punctuation included, the UD convention) on test,
with gold tokens and gold POS.  For every loss, each value of its ``alpha``
grid is fitted on train and scored on dev; the row reported is the
dev-selected one, with its test UAS.  There is no external peer here (no
maintained scikit-learn compatible parser exists); the anchors are the
SparseMAP paper's BiLSTM parser (UD 2.0 English: 86.90 SparseMAP / 87.34
m-SparseMAP / 87.02 SVM / 86.74 CRF UAS) and the issue's target of a
first-order linear model at >= 86 UAS.

Also measured: the time of one training epoch (one full pass of the loss's
oracle and gradient over train, for L-BFGS one evaluation; the one-off
feature cache is reported apart), decoding speed (sentences/s of MST and of
Eisner on the test set's arc scores, single thread), and the sparsity of
SparseMAP outputs (trees per sentence, as in the SparseMAP paper's Fig. 4).

**Labelled mode** (``--labelled``): the parser is trained on ``(heads,
deprels)`` pairs and labels arcs by its second stage; reported are UAS and
LAS (CoNLL 2018 definition, punctuation included) on test, the label
accuracy of the second stage on gold heads, its fit time and peak memory,
and the estimated cost of the joint alternative (label scores inside the
first-order model: the arc-score sweep -- the bulk of an epoch -- repeated
for every relation, and ``sum_i n_i^2 x L`` part scores).  Treebanks:
``en_ewt`` is trained on train; the others of ``bench_parsing_small.py``
(whose train files are not in the data folder) are trained on dev, with
the alpha that 3-fold cross-validation inside dev selected for the CRF
there (``parsing_small_data.md``).  Beside them: UDPipe 1.2's published
scores with gold tokenisation and gold morphology (UD 2.3 models).

**Prediction throughput** (``--predict-throughput``): sentences/s of
``DependencyParser.predict`` on EWT dev (features, scores and MST decoding,
from token dicts to head arrays), measured in one process, alternating, for
the materialised path (every arc's feature ids built, then summed: the
training path, and ``predict`` before the fused kernel) and the fused path
(``predict``: features hashed and weights summed in one pass), with
``n_jobs=1`` and ``2``, and the stages of the fused predict alone on one
thread (token attributes, arc scores, MST decoding); the predictions of
both paths are checked identical.  Also reported: the process's RSS after
loading the parser and after the first predict (which builds the weight
table), its peak, the tables' sizes.  The parser: ``--model
PATH`` (a pickled fitted DependencyParser), else a perceptron (3 epochs)
fitted on EWT train (``--n-train``).  ``--loaded`` repeats the measurement
beside one CPU-bound process (``python -c "while True: pass"``).

Usage::

    python benchmarks/bench_parsing.py --quick                 # 2,000 sentences, prints only
    python benchmarks/bench_parsing.py --labelled --quick      # labelled, 2,000 sentences
    python benchmarks/bench_parsing.py --labelled --losses crf --treebanks en_ewt,ro_rrt
    python benchmarks/bench_parsing.py                         # every loss, full data
    python benchmarks/bench_parsing.py --losses crf,perceptron --alphas 1e-5,1e-4
    python benchmarks/bench_parsing.py --predict-throughput [--model parser.pkl] [--loaded]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, data_path, ewt_parsing_xy, ewt_sentences, machine_info,
    md_table, out_stem, parse_args, peak_memory_growth, write_csv, write_text)

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import DependencyParser, SequenceTagger  # noqa: E402
from structlearn.datasets import conllu_targets, read_conllu  # noqa: E402
from structlearn.estimators._arc_labels import label_features  # noqa: E402
from structlearn.estimators.parsing import parser_problem  # noqa: E402
from structlearn.feature_maps import ArcFeatureMap  # noqa: E402
from structlearn.kernels.tree import map_batch, tree_arc_offsets  # noqa: E402
from structlearn.kernels.tree_validation import validate_heads  # noqa: E402
from structlearn.losses import Projection, get_loss  # noqa: E402
from structlearn.metrics import las, uas  # noqa: E402
from structlearn.solvers._sgd import _ScaledIterate  # noqa: E402

EPOCHS = 10  # perceptron / SGD epochs

#: loss name -> (loss argument, extra parameters, default alpha grid)
LOSSES = {
    "perceptron": ("perceptron", {"max_iter": EPOCHS}, [0.0]),
    "hinge": ("hinge", {"max_iter": EPOCHS}, [1e-5]),
    "hinge-approx-slack": ("hinge-approx-slack", {"max_iter": EPOCHS}, [1e-5]),
    "poslearn": ("poslearn", {"max_iter": EPOCHS}, [1e-5]),
    "hinge (bcfw)": ("hinge", {"solver": "bcfw", "max_iter": 100}, [1.6e-3]),
    "crf": ("crf", {}, [1.6e-4]),
    "sparsemap": ("sparsemap", {}, [1.6e-4]),
    "m-sparsemap": ("m-sparsemap", {}, [1.6e-4]),
    "squared": ("squared", {"decoding": "calibrated"}, [1.6e-4]),
    "projection-simplex-euclidean": (Projection(set="simplex"), {"decoding": "calibrated"},
                                     [1.6e-4]),
    "projection-simplex-kl": (Projection(set="simplex", geometry="kl"),
                              {"decoding": "calibrated"}, [1.6e-4]),
}


def epoch_time(est, X, y, loss, n_jobs, sgd_epoch):
    """Seconds of the feature cache, and of one full pass of ``loss``."""
    t0 = time.perf_counter()
    vec = est.vectorizer_
    A, off = vec.transform(X)
    cache = ArcFeatureMap(vec, A, off, 2 if n_jobs != 1 else 1)
    t_cache = time.perf_counter() - t0
    heads, _ = validate_heads(y, est.single_root)
    pb = parser_problem(cache, heads, get_loss(loss), est.single_root, est.projective,
                        n_jobs)
    if sgd_epoch:
        # an SGD epoch as the solver runs it: mini-batches of 16 sentences in
        # a random order, each a sparse step of the scaled, averaged iterate
        rng = np.random.RandomState(0)
        order = rng.permutation(pb.n_samples)
        it = _ScaledIterate(est.coef_, pb.penalized)
        it.start_averaging()
        t0 = time.perf_counter()
        for s in range(0, pb.n_samples, 16):
            _, cols, vals = it.value_and_grad(pb, np.sort(order[s:s + 16]))
            it.step(cols, vals, 1e-3, est.alpha, 1e-3 / 16)
        it.average()
        return t_cache, time.perf_counter() - t0
    t0 = time.perf_counter()
    pb.value_and_grad(est.coef_)
    return t_cache, time.perf_counter() - t0


def decoding_speed(est, X):
    """Sentences/s of MST and Eisner on precomputed arc scores (1 thread)."""
    theta = np.concatenate([s.ravel() for s in est.decision_function(X)])
    off = np.concatenate([[0], np.cumsum([len(s) for s in X])]).astype(np.int64)
    arc_off = tree_arc_offsets(off)
    out = {}
    for name, projective in (("mst", False), ("eisner", True)):
        map_batch(theta[:arc_off[2]], arc_off[:3], off[:3], True, projective)  # compile
        t0 = time.perf_counter()
        map_batch(theta, arc_off, off, True, projective)
        out[name] = len(X) / (time.perf_counter() - t0)
    return out


def materialised_predict(est, X, n_jobs):
    """``predict`` through the materialised arc features (the training
    path; ``DependencyParser.predict`` before the fused kernel): feature ids
    of every arc in chunks of 256 sentences on threads, summed, decoded."""
    from structlearn.kernels.arcs import arc_scores
    from structlearn.solvers import n_workers, thread_map
    from structlearn.structures.tree import Tree

    vec = est.vectorizer_
    A, off = vec.transform(X)
    n_threads = n_workers(n_jobs, len(off) - 1)
    cache = ArcFeatureMap(vec, A, off, n_threads)

    def run(c):
        a, b = cache.ranges[c]
        st = Tree(off[a:b + 1] - off[a], single_root=est.single_root,
                  projective=est.projective)
        return st.argmax(arc_scores(*cache.chunks[c], est.coef_))

    flat = np.concatenate(thread_map(run, range(len(cache.chunks)), n_threads))
    return [flat[off[i]:off[i + 1]] for i in range(len(off) - 1)]


def throughput_rows(est, X, repeat, condition):
    """Sentences/s of the materialised and fused predict (n_jobs 1, 2) and of
    MST decoding alone, alternating, ``repeat`` rounds; checks both paths
    predict the same heads."""
    theta = np.concatenate([s.ravel() for s in est.decision_function(X)])
    off = np.concatenate([[0], np.cumsum([len(s) for s in X])]).astype(np.int64)
    arc_off = tree_arc_offsets(off)
    times = {}
    for r in range(repeat):
        for n_jobs in (1, 2):
            est.set_params(n_jobs=n_jobs)
            for path in ("materialised", "fused"):
                t0 = time.perf_counter()
                pred = (materialised_predict(est, X, n_jobs) if path == "materialised"
                        else est.predict(X))
                times.setdefault((path, n_jobs), []).append(time.perf_counter() - t0)
                if r == 0:
                    if path == "materialised":
                        ref = np.concatenate(pred)
                    elif not np.array_equal(np.concatenate(pred), ref):
                        raise SystemExit("fused and materialised predictions differ")
        t0 = time.perf_counter()
        map_batch(theta, arc_off, off, est.single_root, est.projective)
        times.setdefault(("mst decoding alone", 1), []).append(time.perf_counter() - t0)
        # the stages of the fused predict, one thread
        vec = est.vectorizer_
        t0 = time.perf_counter()
        A, woff = vec.transform(X)
        times.setdefault(("token attributes alone (transform)", 1), []).append(
            time.perf_counter() - t0)
        weights = est._weight_table()
        t0 = time.perf_counter()
        vec.arc_scores(A, woff, 0, len(X), weights)
        times.setdefault(("arc scores alone (fused kernel)", 1), []).append(
            time.perf_counter() - t0)
    rows = []
    for (path, n_jobs), ts in times.items():
        sps = len(X) / np.asarray(ts)
        row = dict(condition=condition, path=path, n_jobs=n_jobs, repeat=repeat,
                   sent_per_s_median=round(float(np.median(sps))),
                   sent_per_s_min=round(float(sps.min())),
                   sent_per_s_max=round(float(sps.max())))
        if path == "fused":   # per-round ratio against the materialised path
            ratio = np.asarray(times[("materialised", n_jobs)]) / np.asarray(ts)
            row.update(speedup_median=round(float(np.median(ratio)), 2),
                       speedup_min=round(float(ratio.min()), 2),
                       speedup_max=round(float(ratio.max()), 2))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _rss_mb(field="VmRSS"):
    """This process's resident set (``VmRSS``) or its peak (``VmHWM``), in MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main_throughput(args, argv):
    import os
    import pickle
    import subprocess

    Xdev, _ = ewt_parsing_xy("dev")
    if args.model:
        with open(args.model, "rb") as fh:
            est = pickle.load(fh)
        source = f"loaded from {args.model}"
    else:
        n_train = 2000 if args.quick else args.n_train
        Xtr, ytr = ewt_parsing_xy("train", n_train)
        t0 = time.perf_counter()
        est = DependencyParser(loss="perceptron", max_iter=3, n_jobs=args.n_jobs,
                               random_state=0).fit(Xtr, ytr)
        source = (f"perceptron, 3 epochs on {len(Xtr)} EWT train sentences "
                  f"({time.perf_counter() - t0:.0f} s)")
    n = np.array([len(s) for s in Xdev])
    print(f"parser: {source}, {len(est.coef_)} features; EWT dev {len(Xdev)} sentences, "
          f"{n.sum()} words, {int((n * (n + 1)).sum())} arcs", flush=True)
    rss_loaded = _rss_mb()
    t0 = time.perf_counter()
    est.predict(Xdev[:20])   # compile; builds the weight table
    first = time.perf_counter() - t0
    memory = dict(rss_after_load_mb=round(rss_loaded), rss_after_first_predict_mb=round(_rss_mb()),
                  peak_rss_mb=round(_rss_mb("VmHWM")), first_predict_s=round(first, 2),
                  weight_table_mb=round(est._weight_table().nbytes / 2**20),
                  keys_mb=round(est.vectorizer_._keys.nbytes / 2**20),
                  coef_mb=round(est.coef_.nbytes / 2**20))
    if args.model:
        memory["pickle_mb"] = round(os.path.getsize(args.model) / 2**20)
    print(json.dumps(memory), flush=True)
    rows = throughput_rows(est, Xdev, args.repeat, "as found")
    if args.loaded:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            rows += throughput_rows(est, Xdev, args.repeat, "+1 busy process")
        finally:
            busy.kill()
            busy.wait()
    out = out_stem(args, "parsing_predict_throughput")
    if out is None:
        return
    write_csv(f"{out}.csv", rows)
    info = machine_info()
    body = [[r["condition"], r["path"], r["n_jobs"], r["sent_per_s_median"],
             f"{r['sent_per_s_min']}-{r['sent_per_s_max']}",
             "" if "speedup_median" not in r else
             f"{r['speedup_median']} ({r['speedup_min']}-{r['speedup_max']})"]
            for r in rows]
    text = ["# Parser prediction throughput: UD English EWT dev", "",
            f"Command: `{command_line(argv)}`.  Parser: {source}, {len(est.coef_)} "
            f"features.  EWT dev: {len(Xdev)} sentences, {n.sum()} words, "
            f"{int((n * (n + 1)).sum())} candidate arcs.  End to end: token dicts in, "
            "head arrays out (attributes, arc features and scores, MST).  "
            "'materialised': every arc's feature ids built, then summed (the training "
            "path); 'fused': `DependencyParser.predict` (hashing and summing in one "
            "pass, arc_scores_direct, weights read beside their keys in the weight "
            "table).  Both predict the same heads (checked).  The 'alone' rows are the "
            "stages of the fused predict on one thread: token attributes (Python), arc "
            "scores (the kernel), MST decoding.  "
            f"{args.repeat} rounds, alternating; median and range of sentences/s; "
            "'speedup': per round, materialised time / fused time.  "
            f"Load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
            "(the machine is shared).", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
            md_table(["condition", "path", "n_jobs", "sentences/s (median)", "range",
                      "speedup (median, range)"], body), "",
            "Memory (MB; RSS of this process): " + ", ".join(
                f"{k} {v}" for k, v in memory.items()) + ".  The weight table (every "
            "feature's key beside its weight) is built on the first predict and kept "
            "while coef_ is unchanged; the feature table (key -> column id, the size "
            "of the weight table) is not held by a fitted parser: the materialised "
            "rows build it (after these memory figures).  'first_predict_s' includes "
            "Numba's compilation when the cache is cold.", ""]
    path = write_text(out, "\n".join(text))
    print(f"wrote {path}")


def run(name, alpha, data, n_jobs, solver="auto"):
    Xtr, ytr, Xdev, ydev, Xte, yte = data
    loss, extra, _ = LOSSES[name]
    if solver == "sgd" and "max_iter" not in extra:   # a smooth loss, by SGD
        extra = dict(extra, solver="sgd", max_iter=EPOCHS)
        name = f"{name} (sgd)"
    est = DependencyParser(loss=loss, alpha=alpha, n_jobs=n_jobs, random_state=0, **extra)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred_te = est.predict(Xte)
    predict_s = time.perf_counter() - t0
    gap = est.duality_gap_
    row = dict(model=name, alpha=alpha, solver=est.solver_,
               gap=None if gap is None else float(f"{gap:.2g}"),
               fit_s=round(fit_s, 1), n_iter=est.n_iter_,
               dev_uas=round(100 * est.score(Xdev, ydev), 2),
               test_uas=round(100 * uas(yte, pred_te), 2),
               test_uas_nopunct=round(100 * uas(yte, pred_te, [[t["upos"] for t in s]
                                                            for s in Xte],
                                                exclude_punct=True), 2),
               predict_sent_per_s=round(len(Xte) / predict_s),
               n_features=len(est.coef_), warnings=len(log))
    t_cache, t_epoch = epoch_time(est, Xtr, ytr, loss, n_jobs, est.solver_ == "sgd")
    row.update(cache_s=round(t_cache, 1), epoch_s=round(t_epoch, 2))
    if name.split()[0] in ("sparsemap", "m-sparsemap"):
        sizes = np.array([len(d) for d in est.predict_sparse(Xte)])
        row.update(support_mean=round(float(sizes.mean()), 2),
                   support_1=round(float(np.mean(sizes == 1)), 3),
                   support_le5=round(float(np.mean(sizes <= 5)), 3))
    return row, est


#: treebank code -> folder of the data folder (the small-data protocol's)
TREEBANKS = {"en_ewt": "ud_english_ewt", "ro_rrt": "ud_romanian_rrt",
             "zh_gsd": "ud_chinese_gsd", "ja_gsd": "ud_japanese_gsd",
             "da_ddt": "ud_danish_ddt", "nl_alpino": "ud_dutch_alpino"}
#: UDPipe 1.2 architecture, UD 2.3 models (release 181115), test set, (UAS, LAS):
#: "gold tok" (predicted tags) and "gold tok+mor" (gold UPOS/XPOS/FEATS/lemma, as
#: here), from the models' README (http://hdl.handle.net/11234/1-2898), trained on
#: each full train set
UDPIPE = {"en_ewt": ((84.5, 81.2), (87.7, 85.8)), "ro_rrt": ((86.3, 81.0), (88.1, 83.3)),
          "zh_gsd": ((75.6, 70.1), (84.8, 81.9)), "ja_gsd": ((92.8, 90.8), (95.0, 93.9)),
          "da_ddt": ((80.2, 76.8), (84.8, 82.4)), "nl_alpino": ((83.1, 78.9), (86.6, 83.1))}
#: Niculae et al. (2018) Table 1, UAS of a BiLSTM arc-factored parser (UD 2.0)
SPARSEMAP_PAPER = {
    "en_ewt": {"hinge": 87.02, "crf": 86.74, "sparsemap": 86.90, "m-sparsemap": 87.34},
    "zh_gsd": {"hinge": 81.94, "crf": 83.18, "sparsemap": 84.03, "m-sparsemap": 82.63},
    "ro_rrt": {"hinge": 87.58, "crf": 87.13, "sparsemap": 87.35, "m-sparsemap": 87.63},
    "ja_gsd": {"hinge": 96.24, "crf": 96.09, "sparsemap": 96.04, "m-sparsemap": 96.03}}
#: alpha of the CRF selected by 3-fold CV inside dev (parsing_small_data.md)
SMALL_DATA_ALPHA = 1e-3


def labelled_data(code, n_train=None):
    """(X, y) of train, dev, test as labelled targets; small-data treebanks
    are trained on dev (then 'dev' is also the training set)."""
    def load(subset, n=None):
        if code == "en_ewt":
            sents = ewt_sentences(subset, n)
        else:
            sents = read_conllu(data_path(TREEBANKS[code], f"{code}-ud-{subset}.conllu"))
        return [s.tokens for s in sents], conllu_targets(sents)

    if code == "en_ewt":
        return (*load("train", n_train), *load("dev"), *load("test")), "train"
    dev = load("dev")
    return (*dev, *dev, *load("test")), "dev"


def run_labelled(code, name, alpha, n_jobs, n_train=None):
    """One labelled parser on ``code``: a results row."""
    (Xtr, ytr, Xdev, ydev, Xte, yte), trained_on = labelled_data(code, n_train)
    loss, extra, _ = LOSSES[name]
    est = DependencyParser(loss=loss, alpha=alpha, n_jobs=n_jobs, random_state=0, **extra)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        fit_s = time.perf_counter() - t0
    pred = est.predict(Xte)
    gold_heads = [h for h, _ in yte]
    on_gold = est.labeller_.predict(label_features(Xte, gold_heads))
    n_labels = len(est.labeller_.classes_)
    # the second stage alone, in a fresh fit: time and peak memory growth
    tagger = SequenceTagger(**{k: v for k, v in est.labeller_.get_params().items()
                               if k != "warm_start"})
    Ftr = label_features(Xtr, [h for h, _ in ytr])
    with peak_memory_growth() as mem:
        t0 = time.perf_counter()
        tagger.fit(Ftr, [d for _, d in ytr])
        label_s = time.perf_counter() - t0
    del tagger, Ftr
    # the joint alternative: L times the arc-score sweep of an epoch
    heads_tr = [h for h, _ in ytr]
    t_cache, t_epoch = epoch_time(est, Xtr, heads_tr, loss, n_jobs, est.solver_ == "sgd")
    sum_n2 = int(sum(len(h) ** 2 for h in heads_tr))
    row = dict(treebank=code, trained_on=trained_on, model=name, alpha=alpha,
               solver=est.solver_, n_train=len(Xtr), n_labels=n_labels,
               dev_las=round(100 * est.score(Xdev, ydev), 2) if trained_on == "train" else "",
               test_uas=round(100 * uas(yte, pred), 2),
               test_las=round(100 * las(yte, pred), 2),
               test_las_full=round(100 * las(yte, pred, full_labels=True), 2),
               gold_heads_label_acc=round(100 * las(
                   yte, [(h, d) for h, d in zip(gold_heads, on_gold)], full_labels=True), 2),
               fit_s=round(fit_s, 1), label_fit_s=round(label_s, 1),
               label_peak_mb=mem["peak_growth_mb"], n_iter=est.n_iter_,
               label_n_iter=est.labeller_.n_iter_,
               epoch_s=round(t_epoch, 2), joint_epoch_s_est=round(n_labels * t_epoch, 1),
               joint_part_scores_mb=round(sum_n2 * n_labels * 8 / 2**20),
               udpipe_gold_tok=UDPIPE[code][0], udpipe_gold_tok_mor=UDPIPE[code][1],
               sparsemap_paper_uas=SPARSEMAP_PAPER.get(code, {}).get(name, ""),
               warnings=len(log))
    return row


def labelled_report(rows, out, argv):
    write_csv(f"{out}.csv", rows)
    info = machine_info()
    body = [[r["treebank"], r["trained_on"], r["model"], r["alpha"], r["n_train"],
             r["n_labels"], r["test_uas"], r["test_las"], r["test_las_full"],
             r["gold_heads_label_acc"],
             f"{r['udpipe_gold_tok_mor'][0]} / {r['udpipe_gold_tok_mor'][1]}",
             f"{r['udpipe_gold_tok'][0]} / {r['udpipe_gold_tok'][1]}",
             r["sparsemap_paper_uas"], r["fit_s"], r["label_fit_s"], r["label_peak_mb"],
             r["epoch_s"], r["joint_epoch_s_est"], r["joint_part_scores_mb"]]
            for r in rows]
    text = ["# Labelled dependency parsing: UAS and LAS", "",
            f"Command: `{command_line(argv)}`.  UAS / LAS as the CoNLL 2018 shared task "
            "defines them (gold tokens and gold UPOS/XPOS/FEATS/lemmas given, punctuation "
            "included, DEPREL compared without subtypes; 'LAS full': with subtypes). "
            "en_ewt: trained on train; the other treebanks: **trained on dev** (their train "
            f"files are not in the data folder), alpha={SMALL_DATA_ALPHA} (the CRF's choice "
            "by 3-fold CV inside dev in parsing_small_data.md). 'labels on gold heads': the "
            "second stage's accuracy (full labels) when given the gold tree. 'UDPipe 1.2': "
            "its UD 2.3 models' published test scores (UAS / LAS) with gold tokenisation "
            "and gold morphology ('+mor', the setting here) or predicted tags, trained on "
            "the full train sets (README of the UD 2.3 models, "
            "http://hdl.handle.net/11234/1-2898). 'SparseMAP paper': Niculae et al. (2018) "
            "Table 1, BiLSTM parser, UAS only, full train sets (UD 2.0). 'joint epoch "
            "(est.)': a labelled first-order model scores every arc once per relation, so "
            "its epoch is about L times the measured arc-score sweep epoch; 'joint part "
            "scores': sum_i n_i^2 x L float64.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
            md_table(["treebank", "trained on", "loss", "alpha", "sentences", "labels L",
                      "test UAS", "test LAS", "test LAS full", "labels on gold heads",
                      "UDPipe 1.2 gold tok+mor (UAS / LAS)",
                      "UDPipe 1.2 gold tok (UAS / LAS)", "SparseMAP paper UAS",
                      "fit (s)", "labeller fit (s)", "labeller peak memory (MB)",
                      "parser epoch (s)", "joint epoch (est., s)",
                      "joint part scores (MB)"], body), ""]
    path = write_text(out, "\n".join(text))
    print(f"wrote {path}")


def main_labelled(args, argv):
    codes = args.treebanks.split(",")
    n_train = 2000 if args.quick else args.n_train
    out = out_stem(args, "parsing_labelled" + ("" if n_train is None else f"_n{n_train}"))
    rows = []
    if args.resume and out and Path(f"{out}.csv").exists():
        import csv

        with open(f"{out}.csv", newline="") as fh:
            for r in csv.DictReader(fh):
                for k in ("udpipe_gold_tok", "udpipe_gold_tok_mor"):
                    r[k] = tuple(float(v) for v in r[k].strip("()").split(","))
                rows.append(r)
    done = {(r["treebank"], r["model"]) for r in rows}
    for code in codes:
        for name in args.losses.split(","):
            if (code, name) in done:
                continue
            alpha = (float(args.alphas.split(",")[0]) if args.alphas
                     else LOSSES[name][2][0] if code == "en_ewt" else SMALL_DATA_ALPHA)
            if name == "perceptron":
                alpha = 0.0
            row = run_labelled(code, name, alpha, args.n_jobs, n_train)
            print(json.dumps(row), flush=True)
            rows.append(row)
            if out:
                labelled_report(rows, out, argv)   # after every row


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="--quick: 2,000 training sentences",
        parents=[common_parser("quick", "n_jobs", "repeat", "out", "no_write", "data",
                               n_jobs=2, repeat=5,
                               out="parsing_ewt[_n<N>][_nj<n_jobs>]")])
    ap.add_argument("--losses", default=",".join(LOSSES))
    ap.add_argument("--alphas", default=None,
                    help="comma-separated alpha grid for every loss (default: per loss)")
    ap.add_argument("--loss-alphas", default="",
                    help="per-loss grids overriding --alphas, e.g. "
                         "'crf=2e-5,1.6e-4;sparsemap=1.6e-4,1.6e-3'")
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--solver", choices=["auto", "sgd"], default="auto",
                    help="'sgd': train the smooth losses too by averaged SGD for "
                         f"{EPOCHS} epochs (rows named 'loss (sgd)')")
    ap.add_argument("--labelled", action="store_true",
                    help="labelled parsing: UAS and LAS on --treebanks (default loss crf)")
    ap.add_argument("--treebanks", default=",".join(TREEBANKS),
                    help="with --labelled: treebank codes (en_ewt trains on train, the "
                         "others on dev)")
    ap.add_argument("--resume", action="store_true",
                    help="with --labelled: keep the rows of the results CSV, run the others")
    ap.add_argument("--predict-throughput", action="store_true",
                    help="sentences/s of predict on EWT dev: materialised vs fused path, "
                         "n_jobs 1 and 2, and MST decoding alone")
    ap.add_argument("--model", default=None,
                    help="with --predict-throughput: a pickled fitted DependencyParser")
    ap.add_argument("--loaded", action="store_true",
                    help="with --predict-throughput: measure again beside one CPU-bound "
                         "process")
    args = parse_args(ap, argv)
    if args.predict_throughput:
        return main_throughput(args, argv)
    if args.labelled:
        if args.losses == ",".join(LOSSES):
            args.losses = "crf"
        if args.quick:
            args.treebanks = "en_ewt"
        return main_labelled(args, argv)
    n_train = 2000 if args.quick else args.n_train
    suffix = ("" if n_train is None else f"_n{n_train}") + (
        "" if args.n_jobs == 2 else f"_nj{args.n_jobs}")  # per-core runs apart
    out = out_stem(args, f"parsing_ewt{suffix}")
    data = (*ewt_parsing_xy("train", n_train), *ewt_parsing_xy("dev"), *ewt_parsing_xy("test"))
    print(f"EWT: {len(data[0])} train / {len(data[2])} dev / {len(data[4])} test sentences",
          flush=True)
    rows = []
    speed = None
    per_loss = dict(item.split("=", 1) for item in args.loss_alphas.split(";") if item)
    for name in args.losses.split(","):
        grid = ([float(a) for a in per_loss[name].split(",")] if name in per_loss
                else [float(a) for a in args.alphas.split(",")] if args.alphas
                else LOSSES[name][2])
        if name == "perceptron":
            grid = [0.0]
        for alpha in grid:  # dev selection: below, over these and earlier rows
            row, est = run(name, alpha, data, args.n_jobs, args.solver)
            print(json.dumps(row), flush=True)
            rows.append(row)
            if speed is None:
                speed = decoding_speed(est, data[4])
                print(json.dumps({"decoding_sent_per_s": speed}), flush=True)
            del est
    if out is None:
        return
    csv_path = Path(f"{out}.csv")
    old = []
    if csv_path.exists():  # merge: keep the rows (loss, alpha) not re-run
        import csv

        with open(csv_path) as fh:
            new = {(r["model"], float(r["alpha"])) for r in rows}
            old = [r for r in csv.DictReader(fh)
                   if (r["model"], float(r["alpha"])) not in new]
    allrows = old + rows
    for model in {r["model"] for r in allrows}:  # dev selection over old and new rows
        same = [r for r in allrows if r["model"] == model]
        best = max(same, key=lambda r: float(r["dev_uas"]))
        for r in same:
            r["selected"] = r is best
    write_csv(csv_path, allrows)
    info = machine_info()
    lines = [f"# Dependency parsing benchmark: UD English EWT{suffix}", "",
             f"Command: `{command_line(argv)}` "
             f"(n_jobs={args.n_jobs}; alpha selected on dev when a grid is given; rows "
             f"'loss (sgd)': `--solver sgd`, {EPOCHS} epochs of averaged SGD instead of "
             f"L-BFGS; every alpha of a grid is a row, the dev-selected one marked *; "
             f"gap: the relative duality gap at the stop).", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()), "",
             md_table(["loss", "alpha", "solver", "dev UAS", "test UAS", "test UAS (no punct)",
                       "fit (s)", "iterations", "gap", "epoch (s)", "feature cache (s)",
                       "predict (sent/s)",
                       "SparseMAP trees / sentence (mean, % single, % <= 5)"],
                      [[r["model"], f"{r['alpha']}{' *' if r['selected'] else ''}",
                        r.get("solver", ""), r["dev_uas"], r["test_uas"],
                        r["test_uas_nopunct"], r["fit_s"], r["n_iter"],
                        "" if r.get("gap") in (None, "", "None") else r["gap"],
                        r["epoch_s"],
                        r["cache_s"], r["predict_sent_per_s"],
                        (f"{r['support_mean']} / {float(r['support_1']) * 100:.0f}% / "
                         f"{float(r['support_le5']) * 100:.0f}%") if r.get("support_mean")
                        else ""] for r in allrows]), ""]
    if speed:
        lines += [f"Decoding alone (test set arc scores, one thread): MST "
                  f"{speed['mst']:.0f} sentences/s, Eisner {speed['eisner']:.0f} sentences/s.", ""]
    path = write_text(out, "\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
