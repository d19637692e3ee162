"""Feature-template selection with the sparseptron (Martins et al. 2011, Sec. 5).

Two experiments, each written to ``results/selection_<task>.{csv,md}``:

``--task conll2000`` (the paper's Table 1 and Figure 2): CoNLL-2000
chunking with the paper's templates as we read them (POS n-grams up to 5 in
a window of 5, word n-grams up to 3 in a window of 3, shape n-grams up to 2
in a window of 2: 72 templates, see ``_seq_common.PAPER_TEMPLATES``),
conjoined with the chunk tags, plus tag bigrams.  The full model is
``SequenceTagger(loss='hinge')`` (the structured SVM that MIRA optimises)
trained for 20 epochs of averaged SGD on all features; for every budget
``B``, 5 sparseptron epochs with ``K = 1000`` select ``B`` templates and
the same model is refit on them, trained the same way (20 epochs; the
paper's protocol, 5 + 10 epochs against 15, is ``--full-epochs 15
--refit-epochs 10``).  Reported: test F1, model size (weights), times, and the peak memory
growth of the selection fit and of the full fit (each in a fresh process),
plus the sparseptron's non-zero weights over time (Figure 2).

``--task ewt`` (the paper's Figure 3): UD English EWT parsing, 128 arc
templates; the sparseptron selects ``B`` templates for several budgets, and
an information-gain filter (Eq. 16: per template, the mutual information
between its features firing on a candidate arc and the arc being gold)
keeps the top ``B``; a hinge parser is refit on each selection and UAS on
test is reported against the number of features.

Run ``python benchmarks/bench_selection.py --task conll2000`` (about 30
minutes on 2 cores) and ``--task ewt`` (``--n-train`` to subsample).
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS, machine_info, md_table, write_csv  # noqa: E402
from _seq_common import PAPER_TEMPLATES, conll2000_paper_xy  # noqa: E402

from structlearn import DependencyParser, SequenceTagger  # noqa: E402
from structlearn.feature_selection import GroupLassoSelector  # noqa: E402
from structlearn.metrics import chunk_f1, uas  # noqa: E402

BUDGETS = {"conll2000": [10, 20, 30, 40, 50], "ewt": [16, 32, 48, 64]}
ALPHA_CHUNK = 1e-6
ALPHA_PARSE = 2e-5


def _status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def _quiet_fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        return time.perf_counter() - t0


# ------------------------------------------------------------------ chunking
def chunk_data(n_train=None):
    Xtr, ytr = conll2000_paper_xy("train")
    Xte, yte = conll2000_paper_xy("test")
    if n_train:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    return Xtr, ytr, Xte, yte


def full_tagger(epochs):
    return SequenceTagger(loss="hinge", alpha=ALPHA_CHUNK, max_iter=epochs, tol=0.0,
                          n_jobs=2, random_state=0)


def selector(est, budget, K=1000):
    return GroupLassoSelector(est, budget=budget, K=K, n_epochs=5, random_state=0)


def memory_child(what, n_train, full_epochs):
    """Fit one model in this fresh process; print its peak-RSS growth."""
    import gc

    Xtr, ytr, _, _ = chunk_data(n_train)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kb("VmRSS")
    est = full_tagger(full_epochs) if what == "full" else \
        selector(SequenceTagger(), int(what))
    _quiet_fit(est, Xtr, ytr)
    print(json.dumps({"what": what, "peak_growth_mb":
                      round((_status_kb("VmHWM") - before) / 1024, 1)}))


def run_chunking(args):
    Xtr, ytr, Xte, yte = chunk_data(args.n_train)
    print(f"CoNLL-2000: {len(Xtr)} train / {len(Xte)} test sentences, "
          f"{len(PAPER_TEMPLATES)} templates", flush=True)
    rows = []
    full = full_tagger(args.full_epochs)
    fit_s = _quiet_fit(full, Xtr, ytr)
    f1 = chunk_f1(yte, full.predict(Xte))
    rows.append(dict(model=f"full (hinge, {args.full_epochs} epochs)", budget="",
                     templates=len(PAPER_TEMPLATES),
                     f1=round(100 * f1, 2), weights=int(full._n_support), select_s="",
                     fit_s=round(fit_s, 1)))
    print(json.dumps(rows[-1]), flush=True)
    traces = {}
    for B in BUDGETS["conll2000"]:
        sel = selector(SequenceTagger(), B)
        sel_s = _quiet_fit(sel, Xtr, ytr)
        refit = full_tagger(args.refit_epochs)
        fit_s = _quiet_fit(refit, sel.transform(Xtr), ytr)
        f1 = chunk_f1(yte, refit.predict(sel.transform(Xte)))
        rows.append(dict(model=f"sparseptron + hinge refit ({args.refit_epochs} epochs)",
                         budget=B,
                         templates=len(sel.selected_groups_), f1=round(100 * f1, 2),
                         weights=int(refit._n_support), select_s=round(sel_s, 1),
                         fit_s=round(fit_s, 1)))
        traces[B] = [(t, n) for t, n, _ in sel.history_]
        print(json.dumps(rows[-1]), flush=True)
        print("  selected:", " ".join(sel.selected_groups_), flush=True)
    mem = {}
    if args.memory:
        for what in ["full", "30"]:
            cmd = [sys.executable, __file__, "--memory-child", what,
                   "--full-epochs", str(args.full_epochs)]
            if args.n_train:
                cmd += ["--n-train", str(args.n_train)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            mem[what] = json.loads(out.strip().splitlines()[-1])["peak_growth_mb"]
            print(out.strip(), flush=True)
    if args.n_train is None:
        write_chunking_report(args, rows, traces, mem)


def write_chunking_report(args, rows, traces, mem):
    RESULTS.mkdir(exist_ok=True)
    default = (args.full_epochs, args.refit_epochs) == (20, 20)
    suffix = "" if default else f"_full{args.full_epochs}_refit{args.refit_epochs}"
    write_csv(RESULTS / f"selection_conll2000{suffix}.csv", rows)
    full_w = rows[0]["weights"]
    opts = "" if default else (f" --full-epochs {args.full_epochs} "
                               f"--refit-epochs {args.refit_epochs}")
    lines = ["# Template selection: CoNLL-2000 chunking (Martins et al. 2011, Table 1)", "",
             f"Command: `python benchmarks/bench_selection.py --task conll2000{opts}"
             f"{' --memory' if mem else ''}`", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
             md_table(["model", "budget B", "templates", "test F1", "weights",
                       "% of full", "selection (s)", "fit (s)"],
                      [[r["model"], r["budget"], r["templates"], r["f1"], r["weights"],
                        f"{100 * r['weights'] / full_w:.1f}", r["select_s"], r["fit_s"]]
                       for r in rows]), ""]
    if mem:
        lines += [f"Peak memory growth of the fit (fresh process): full model "
                  f"{mem['full']} MB, sparseptron selection with B = 30 {mem['30']} MB "
                  f"({100 * mem['30'] / mem['full']:.0f}% of the full fit).", ""]
    lines += ["Non-zero weights of the sparseptron after each proximal step (the "
              "paper's Figure 2), every 5th step:", ""]
    for B, tr in traces.items():
        lines.append(f"- B = {B}: " + ", ".join(f"{n}" for _, n in tr[::5]))
    lines.append("")
    out = RESULTS / f"selection_conll2000{suffix}.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


# ------------------------------------------------------------------- parsing
def information_gain(parser, X, y):
    """Eq. 16 per arc template: sum over its features f and a in {0, 1} of
    P(f, a) log2 P(f, a) / (P(f) P(a)), with ``a`` whether a candidate arc
    is gold and ``f`` a feature firing on it; counts over every candidate
    arc of the training data (features: those of the parser's table)."""
    from structlearn.estimators.parsing import _ArcCache
    from structlearn.kernels.tree import tree_arc_offsets, validate_heads

    vec = parser.vectorizer_
    A, word_off = vec.transform(X)
    heads, _ = validate_heads([list(h) for h in y], parser.single_root)
    cache = _ArcCache(vec, A, word_off, 2)
    arc_off = tree_arc_offsets(word_off)
    F = vec.n_features_
    n_all = np.zeros(F)
    n_gold = np.zeros(F)
    n_arcs = n_gold_arcs = 0
    for c, (a, b) in enumerate(cache.ranges):
        indptr, ids = cache.chunks[c]
        n_local = indptr.shape[0] - 1
        gold = np.zeros(n_local, dtype=bool)
        for i in range(a, b):
            n = word_off[i + 1] - word_off[i]
            m = np.arange(1, n + 1)
            gold[arc_off[i] - arc_off[a] + (m - 1) * (n + 1) + heads[word_off[i]:word_off[i + 1]]] = True
        per_arc = np.diff(indptr)
        arc_of_entry = np.repeat(np.arange(n_local), per_arc)
        n_all += np.bincount(ids, minlength=F)
        n_gold += np.bincount(ids, weights=gold[arc_of_entry].astype(float), minlength=F)
        # self-loops are in the layout but have no features and are no arcs
        n_arcs += n_local - (word_off[b] - word_off[a])
        n_gold_arcs += int(gold.sum())
    N = float(n_arcs)
    pa = np.array([1 - n_gold_arcs / N, n_gold_arcs / N])
    pf = n_all / N
    ig = np.zeros(F)
    for a_val, nf in ((0, n_all - n_gold), (1, n_gold)):
        pfa = nf / N
        ok = pfa > 0
        ig[ok] += pfa[ok] * np.log2(pfa[ok] / (pf[ok] * pa[a_val]))
    per_template = np.bincount(vec.templates_.astype(np.int64), weights=ig,
                               minlength=len(vec.template_names_))
    return per_template


def parse_data(n_train):
    from structlearn.datasets import fetch_ud_treebank
    from _seq_common import SHARED

    def load(subset, n=None):
        sents = fetch_ud_treebank("en_ewt", subset, data_home=SHARED,
                                  download_if_missing=False)
        sents = sents[:n] if n else sents
        return [s.tokens for s in sents], [s.heads for s in sents]
    return (*load("train", n_train), *load("test"))


def refit_parser(templates, Xtr, ytr, Xte, yte):
    p = DependencyParser(loss="hinge", alpha=ALPHA_PARSE, max_iter=10, templates=templates,
                         n_jobs=2, random_state=0)
    fit_s = _quiet_fit(p, Xtr, ytr)
    return p, fit_s, uas(yte, p.predict(Xte))


def run_parsing(args):
    Xtr, ytr, Xte, yte = parse_data(args.n_train)
    print(f"EWT: {len(Xtr)} train / {len(Xte)} test sentences", flush=True)
    rows = []
    full, fit_s, score = refit_parser(None, Xtr, ytr, Xte, yte)
    names = full.vectorizer_.template_names_
    rows.append(dict(method="all templates", budget=len(names), templates=len(names),
                     features=int(full.vectorizer_.n_features_), uas=round(100 * score, 2),
                     select_s="", fit_s=round(fit_s, 1)))
    print(json.dumps(rows[-1]), flush=True)
    t0 = time.perf_counter()
    ig = information_gain(full, Xtr, ytr)
    ig_s = time.perf_counter() - t0
    ranking = [names[t] for t in np.argsort(-ig, kind="stable")]
    for B in BUDGETS["ewt"]:
        sel = GroupLassoSelector(DependencyParser(n_jobs=2), budget=B, K=1000, n_epochs=5,
                                 random_state=0)
        sel_s = _quiet_fit(sel, Xtr, ytr)
        for method, templates, s_s in (("sparseptron", sel.selected_groups_, sel_s),
                                       ("information gain", ranking[:B], ig_s)):
            p, fit_s, score = refit_parser(templates, Xtr, ytr, Xte, yte)
            rows.append(dict(method=method, budget=B, templates=len(templates),
                             features=int(p.vectorizer_.n_features_),
                             uas=round(100 * score, 2), select_s=round(s_s, 1),
                             fit_s=round(fit_s, 1)))
            print(json.dumps(rows[-1]), flush=True)
    suffix = "" if args.n_train is None else f"_n{args.n_train}"
    RESULTS.mkdir(exist_ok=True)
    write_csv(RESULTS / f"selection_ewt{suffix}.csv", rows)
    lines = ["# Template selection: UD English EWT parsing (Martins et al. 2011, Figure 3)",
             "", f"Command: `python benchmarks/bench_selection.py --task ewt"
             f"{'' if args.n_train is None else ' --n-train ' + str(args.n_train)}`", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
             "Hinge parser (alpha 2e-5, 10 SGD epochs) refit on each selection; "
             "sparseptron: 5 epochs, K = 1000.", "",
             md_table(["selection", "budget B", "templates", "features", "test UAS",
                       "selection (s)", "refit (s)"],
                      [[r["method"], r["budget"], r["templates"], r["features"], r["uas"],
                        r["select_s"], r["fit_s"]] for r in rows]), ""]
    (RESULTS / f"selection_ewt{suffix}.md").write_text("\n".join(lines))
    print(f"wrote {RESULTS / f'selection_ewt{suffix}.md'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=["conll2000", "ewt"], default="conll2000")
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--full-epochs", type=int, default=20,
                    help="SGD epochs of the full model (the paper: 15)")
    ap.add_argument("--refit-epochs", type=int, default=20,
                    help="SGD epochs of the refit (the paper: 10, after 5 selection "
                         "epochs)")
    ap.add_argument("--memory", action="store_true",
                    help="also measure the peak memory of the full and B = 30 fits")
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.n_train, args.full_epochs)
    elif args.task == "conll2000":
        run_chunking(args)
    else:
        run_parsing(args)


if __name__ == "__main__":
    main()
