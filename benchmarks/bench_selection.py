"""Feature-template selection with the sparseptron (Martins et al. 2011, Sec. 5).

Two experiments, each written to ``results/selection_<task>.{csv,md}``:

``--task conll2000`` (the paper's Table 1 and Figure 2): CoNLL-2000
chunking with the paper's templates as we read them (POS n-grams up to 5 in
a window of 5, word n-grams up to 3 in a window of 3, shape n-grams up to 2
in a window of 2: 72 templates, see ``_common.PAPER_TEMPLATES``),
conjoined with the chunk tags, plus tag bigrams.  The full model is
``SequenceTagger(loss='hinge')`` (the structured SVM that MIRA optimises)
trained for 20 epochs of averaged SGD on all features; for every budget
``B``, 5 sparseptron epochs with ``K = 1000`` select ``B`` templates and
the same model is refit on them, trained the same way (20 epochs; the
paper's protocol, 5 + 10 epochs against 15, is ``--full-epochs 15
--refit-epochs 10``; ``--bcfw`` trains both to their optimum instead, by
BCFW to a certified relative gap of 1e-3 at ``alpha = 2 / n``).  Reported: test F1, model size (weights), times, and the peak memory
growth of the selection fit and of the full fit (each in a fresh process),
plus the sparseptron's non-zero weights over time (Figure 2).
``--memory-only`` measures just the peak memory of the full fit and of the
materialised and streamed (``stream=True``) selections with ``B = 30``,
each in a fresh process, and times the two selections side by side
(``results/selection_conll2000_memory.{csv,md}``).

``--task ewt`` (the paper's Figure 3): UD English EWT parsing, 128 arc
templates; the sparseptron selects ``B`` templates for several budgets, and
an information-gain filter (Eq. 16: per template, the mutual information
between its features firing on a candidate arc and the arc being gold)
keeps the top ``B``; a hinge parser is refit on each selection and UAS on
test is reported against the number of features.

``--task conll2002 --language {esp,ned}`` (the paper's Table 2): CoNLL-2002
Spanish or Dutch NER with the paper's NER templates as we read them (the
chunking templates plus shape n-grams up to 3 within 3, prefix/suffix
n-grams, lengths 1-3, up to 3 within 3, and case / punctuation / digit
indicator n-grams up to 5 within 5: 324 templates, ``NER_TEMPLATES``),
conjoined with the 9 IOB2 tags, plus tag bigrams.  The token features are
built with NumPy as sparse matrices, one column per (template, value
n-gram) seen in training, grouped by template for the selector
(``groups=``): feature dicts would take ~10^8 Python entries.  The paper's
schedule: the full hinge model trained for 15 epochs (alpha tuned on
``testa``), 5 sparseptron epochs with ``K = 1000`` for ``B = 100, 200,
300``, refits of 10 epochs; entity F1 on ``testa`` and ``testb``.  By
default on the first 2,500 (Spanish) / 4,000 (Dutch) training sentences to
stay within ~15 minutes per language on one core (``--n-train 0``: all).

Run ``python benchmarks/bench_selection.py --task conll2000`` (about 30
minutes on 2 cores), ``--task ewt`` (``--n-train`` to subsample) and
``--task conll2002 --language esp`` / ``--language ned``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    PAPER_TEMPLATES, common_parser, conll2000_paper_xy, ewt_parsing_xy, fetch_shared,
    machine_info, md_table, ngram_templates, out_stem, parse_args, peak_memory_growth,
    quiet_fit, word_shape, write_csv, write_text)

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import DependencyParser, SequenceTagger  # noqa: E402
from structlearn.feature_selection import GroupLassoSelector  # noqa: E402
from structlearn.metrics import chunk_f1, uas  # noqa: E402

BUDGETS = {"conll2000": [10, 20, 30, 40, 50], "ewt": [16, 32, 48, 64],
           "conll2002": [100, 200, 300]}
ALPHA_CHUNK = 1e-6
ALPHA_PARSE = 2e-5


# ------------------------------------------------------------------ chunking
def chunk_data(n_train=None):
    Xtr, ytr = conll2000_paper_xy("train")
    Xte, yte = conll2000_paper_xy("test")
    if n_train:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    return Xtr, ytr, Xte, yte


def full_tagger(epochs, bcfw_alpha=None):
    """The hinge tagger: ``epochs`` of averaged SGD at ``ALPHA_CHUNK``, or
    (``bcfw_alpha``) BCFW to a certified relative gap of 1e-3 at that alpha."""
    if bcfw_alpha is not None:
        return SequenceTagger(loss="hinge", alpha=bcfw_alpha, solver="bcfw", max_iter=150,
                              tol=1e-3, n_jobs=2, random_state=0)
    return SequenceTagger(loss="hinge", alpha=ALPHA_CHUNK, max_iter=epochs, tol=0.0,
                          n_jobs=2, random_state=0)


def _trained(est):
    """How the model was trained: its epochs and, for BCFW, its certified gap."""
    gap = getattr(est, "duality_gap_", None)
    return dict(epochs=est.n_iter_, gap="" if gap is None else float(f"{gap:.2g}"))


def selector(est, budget, K=1000, stream=False):
    return GroupLassoSelector(est, budget=budget, K=K, n_epochs=5, random_state=0,
                              stream=stream)


def _memory_model(what, full_epochs):
    """``full``, ``<B>`` (materialised selection) or ``s<B>`` (streamed)."""
    if what == "full":
        return full_tagger(full_epochs)
    if what.startswith("s"):
        return selector(SequenceTagger(), int(what[1:]), stream=True)
    return selector(SequenceTagger(), int(what))


def memory_child(what, n_train, full_epochs):
    """Fit one model in this fresh process; print its peak-RSS growth.

    A warm-up fit of the same model on 50 sentences first loads Numba's
    kernels and LLVM (a one-off cost of the process, not of the fit)."""
    Xtr, ytr, _, _ = chunk_data(n_train)
    quiet_fit(_memory_model(what, 1), Xtr[:50], ytr[:50])
    with peak_memory_growth() as mem:
        t = quiet_fit(_memory_model(what, full_epochs), Xtr, ytr)
    print(json.dumps({"what": what, **mem, "fit_s": round(t, 1)}))


def memory_runs(args, whats):
    """Peak-RSS growth of each model's fit, each in a fresh process."""
    mem = {}
    for what in whats:
        cmd = [sys.executable, __file__, "--memory-child", what,
               "--full-epochs", str(args.full_epochs)]
        if args.n_train:
            cmd += ["--n-train", str(args.n_train)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        mem[what] = json.loads(out.strip().splitlines()[-1])
        print(out.strip(), flush=True)
    return mem


def run_memory(args):
    """``--memory-only``: peak memory of the full fit, the materialised and
    the streamed template selection (B = 30), each in a fresh process, and
    the two selections' fit times side by side in this process
    (alternating, ``--repeat`` times each) with their selected templates."""
    B = 30
    mem = memory_runs(args, ["full", str(B), f"s{B}"])
    Xtr, ytr, _, _ = chunk_data(args.n_train)
    quiet_fit(selector(SequenceTagger(), B), Xtr[:50], ytr[:50])     # compile
    quiet_fit(selector(SequenceTagger(), B, stream=True), Xtr[:50], ytr[:50])
    times = {"materialised": [], "streamed": []}
    chosen = {}
    for r in range(args.repeat):
        for how in (("materialised", "streamed") if r % 2 == 0 else
                    ("streamed", "materialised")):
            sel = selector(SequenceTagger(), B, stream=how == "streamed")
            times[how].append(quiet_fit(sel, Xtr, ytr))
            chosen[how] = list(sel.selected_groups_)
            print(json.dumps({"selection": how, "fit_s": round(times[how][-1], 1)}),
                  flush=True)
    ratios = np.array(times["streamed"]) / np.array(times["materialised"])
    same = chosen["streamed"] == chosen["materialised"]
    print(f"streamed / materialised time: median {np.median(ratios):.2f} "
          f"(min {ratios.min():.2f}, max {ratios.max():.2f}); same templates: {same}")
    stem = out_stem(args, None if args.n_train else "selection_conll2000_memory")
    if stem is None:
        return
    full = mem["full"]["peak_growth_mb"]
    rows = [dict(fit=name, peak_growth_mb=mem[w]["peak_growth_mb"],
                 pct_of_full=round(100 * mem[w]["peak_growth_mb"] / full, 1),
                 fit_s_in_child=mem[w]["fit_s"])
            for name, w in (("full model (hinge, %d epochs)" % args.full_epochs, "full"),
                            (f"selection B = {B}, materialised", str(B)),
                            (f"selection B = {B}, streamed", f"s{B}"))]
    write_csv(f"{stem}.csv", rows)
    opts = "" if args.n_train is None else f" --n-train {args.n_train}"
    lines = ["# Template selection: peak memory, materialised vs streamed (CoNLL-2000)", "",
             f"Command: `python benchmarks/bench_selection.py --task conll2000 "
             f"--memory-only --repeat {args.repeat}{opts}`", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
             "Peak-RSS growth of the fit (VmHWM after the fit minus VmRSS before it; "
             "the kernel's peak counter reset first), each fit in a fresh process "
             "after a warm-up fit of the same model on 50 sentences (which loads "
             "Numba's kernels and LLVM); the training data (feature dicts) are "
             "loaded before and not counted.  The 'fit (s)' of these runs is one "
             "noisy time each.", "",
             md_table(["fit", "peak memory growth (MB)", "% of full", "fit (s)"],
                      [[r["fit"], r["peak_growth_mb"], r["pct_of_full"],
                        r["fit_s_in_child"]] for r in rows]), "",
             f"Selection fit time, streamed / materialised, measured side by side in "
             f"one process ({args.repeat} fits each, alternating): median "
             f"{np.median(ratios):.2f} (min {ratios.min():.2f}, max {ratios.max():.2f}); "
             f"materialised {np.median(times['materialised']):.1f} s, streamed "
             f"{np.median(times['streamed']):.1f} s (medians).", "",
             f"Same selected templates: {'yes' if same else 'NO'} "
             f"({len(chosen['streamed'])}: {' '.join(chosen['streamed'])}).", ""]
    path = write_text(stem, "\n".join(lines))
    print(f"wrote {path}")


def run_chunking(args):
    Xtr, ytr, Xte, yte = chunk_data(args.n_train)
    print(f"CoNLL-2000: {len(Xtr)} train / {len(Xte)} test sentences, "
          f"{len(PAPER_TEMPLATES)} templates", flush=True)
    rows = []
    bcfw_alpha = None
    how = f"{args.full_epochs} epochs"
    if args.bcfw:
        bcfw_alpha = 2.0 / len(Xtr)  # CRFsuite's c2 = 1, as bench_sequence
        how = f"BCFW, alpha {bcfw_alpha:.3g}"
    full = full_tagger(args.full_epochs, bcfw_alpha)
    fit_s = quiet_fit(full, Xtr, ytr)
    f1 = chunk_f1(yte, full.predict(Xte))
    rows.append(dict(model=f"full (hinge, {how})", budget="",
                     templates=len(PAPER_TEMPLATES),
                     f1=round(100 * f1, 2), weights=int(full._n_support), select_s="",
                     fit_s=round(fit_s, 1), **_trained(full)))
    print(json.dumps(rows[-1]), flush=True)
    traces = {}
    for B in BUDGETS["conll2000"]:
        sel = selector(SequenceTagger(), B)
        sel_s = quiet_fit(sel, Xtr, ytr)
        refit = full_tagger(args.refit_epochs, bcfw_alpha)
        fit_s = quiet_fit(refit, sel.transform(Xtr), ytr)
        f1 = chunk_f1(yte, refit.predict(sel.transform(Xte)))
        how = "BCFW" if args.bcfw else f"{args.refit_epochs} epochs"
        rows.append(dict(model=f"sparseptron + hinge refit ({how})",
                         budget=B,
                         templates=len(sel.selected_groups_), f1=round(100 * f1, 2),
                         weights=int(refit._n_support), select_s=round(sel_s, 1),
                         fit_s=round(fit_s, 1), **_trained(refit)))
        traces[B] = [(t, n) for t, n, _ in sel.history_]
        print(json.dumps(rows[-1]), flush=True)
        print("  selected:", " ".join(sel.selected_groups_), flush=True)
    mem = {}
    if args.memory:
        mem = {w: r["peak_growth_mb"]
               for w, r in memory_runs(args, ["full", "30", "s30"]).items()}
    default = (args.full_epochs, args.refit_epochs) == (20, 20) and not args.bcfw
    suffix = ("_bcfw" if args.bcfw else "" if default
              else f"_full{args.full_epochs}_refit{args.refit_epochs}")
    # a run on a subset of the training data prints only, unless --out
    stem = out_stem(args, None if args.n_train else f"selection_conll2000{suffix}")
    if stem:
        write_chunking_report(args, rows, traces, mem, stem)


def write_chunking_report(args, rows, traces, mem, stem):
    default = (args.full_epochs, args.refit_epochs) == (20, 20) and not args.bcfw
    write_csv(f"{stem}.csv", rows)
    full_w = rows[0]["weights"]
    opts = (" --bcfw" if args.bcfw else "" if default
            else f" --full-epochs {args.full_epochs} --refit-epochs {args.refit_epochs}")
    lines = ["# Template selection: CoNLL-2000 chunking (Martins et al. 2011, Table 1)", "",
             f"Command: `python benchmarks/bench_selection.py --task conll2000{opts}"
             f"{' --memory' if mem else ''}`", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
             md_table(["model", "budget B", "templates", "test F1", "weights",
                       "% of full", "selection (s)", "fit (s)", "epochs",
                       "relative gap"],
                      [[r["model"], r["budget"], r["templates"], r["f1"], r["weights"],
                        f"{100 * r['weights'] / full_w:.1f}", r["select_s"], r["fit_s"],
                        r["epochs"], r["gap"]]
                       for r in rows]), ""]
    if mem:
        lines += [f"Peak memory growth of the fit (fresh process, after a warm-up fit): "
                  f"full model {mem['full']} MB, sparseptron selection with B = 30 "
                  f"{mem['30']} MB ({100 * mem['30'] / mem['full']:.0f}% of the full "
                  f"fit), streamed (``stream=True``) {mem['s30']} MB "
                  f"({100 * mem['s30'] / mem['full']:.0f}%).", ""]
    lines += ["Non-zero weights of the sparseptron after each proximal step (the "
              "paper's Figure 2), every 5th step:", ""]
    for B, tr in traces.items():
        lines.append(f"- B = {B}: " + ", ".join(f"{n}" for _, n in tr[::5]))
    lines.append("")
    path = write_text(stem, "\n".join(lines))
    print(f"wrote {path}")


# ---------------------------------------------------------- CoNLL-2002 NER
def _ner_case(w):
    if not any(c.isalpha() for c in w):
        return "none"
    if w.islower():
        return "lower"
    if w.isupper():
        return "upper"
    if w[0].isupper() and (len(w) == 1 or w[1:].islower()):
        return "title"
    return "mixed"


def _ner_punct(w):
    n = sum(not c.isalnum() for c in w)
    return "all" if n == len(w) else "some" if n else "none"


def _ner_digit(w):
    n = sum(c.isdigit() for c in w)
    return "all" if n == len(w) else "some" if n else "none"


#: token attributes of the NER templates: name -> function of (word, POS)
NER_ATTRIBUTES = {
    "w": lambda w, p: w,
    "pos": lambda w, p: p,
    "shape": lambda w, p: word_shape(w),
    **{f"pre{k}": (lambda k: lambda w, p: w[:k])(k) for k in (1, 2, 3)},
    **{f"suf{k}": (lambda k: lambda w, p: w[-k:])(k) for k in (1, 2, 3)},
    "case": lambda w, p: _ner_case(w),
    "punct": lambda w, p: _ner_punct(w),
    "digit": lambda w, p: _ner_digit(w),
}


def _ner_templates():
    """The NER templates of Martins et al. (2011, Sec. 5) as we read them:
    the chunking templates (``PAPER_TEMPLATES``: POS n-grams up to 5 within
    5, word n-grams up to 3 within 3, shape n-grams up to 2 within 2), plus
    shape n-grams up to 3 within 3, n-grams up to 3 within 3 of the word
    prefixes and suffixes of length 1, 2 and 3, and n-grams up to 5 within 5
    of the case, punctuation and digit indicators: 72 + 9 + 108 + 135 = 324
    templates (the paper counts 452)."""
    out = list(PAPER_TEMPLATES)
    seen = set(out)
    extra = [("shape", t) for t in ngram_templates(-3, 3, 3)]
    extra += [(f"{a}{k}", t) for a in ("pre", "suf") for k in (1, 2, 3)
              for t in ngram_templates(-3, 3, 3)]
    extra += [(a, t) for a in ("case", "punct", "digit") for t in ngram_templates(-5, 5, 5)]
    out += [x for x in extra if x not in seen]
    return out


NER_TEMPLATES = _ner_templates()


def ner_template_name(attr, offs):
    return f"{attr}[{','.join(map(str, offs))}]"


def ner_features(splits, fit_on="train"):
    """Token feature matrices of the NER templates, built with NumPy.

    ``splits`` maps a split name to ``(words, pos)`` (lists of sentences).
    A feature is a (template, value n-gram) pair seen in ``splits[fit_on]``;
    unseen ones are dropped elsewhere.  Returns ``{split: (csr, tok_off)}``
    -- one row per token, exactly one non-zero (1.0) per template whose
    value was seen in training -- and the template index of every column.
    (Equivalent to one feature dict per token keyed by template name, as
    the chunking task builds them, without the ~10^8 Python dict entries
    that 324 templates on ~300,000 tokens would take.)
    """
    import scipy.sparse as sp

    names = list(splits)
    offs, sent_pos, sent_len = {}, [], []
    start = 0
    for s in names:
        words, _ = splits[s]
        lens = np.array([len(x) for x in words], dtype=np.int64)
        tok_off = np.concatenate([[0], np.cumsum(lens)])
        offs[s] = (start, start + int(tok_off[-1]), tok_off)
        sent_len.append(np.repeat(lens, lens))
        sent_pos.append(np.concatenate([np.arange(n) for n in lens]) if len(lens)
                        else np.zeros(0, np.int64))
        start += int(tok_off[-1])
    n_all = start
    sent_len = np.concatenate(sent_len)
    sent_pos = np.concatenate(sent_pos)
    pairs = [(w, p) for s in names for ws, ps in zip(*splits[s]) for w, p in zip(ws, ps)]
    codes, radix = {}, {}
    for a, f in NER_ATTRIBUTES.items():
        vocab = {}
        # 0 = before the sentence, 1 = after it
        codes[a] = np.fromiter((vocab.setdefault(f(w, p), len(vocab) + 2) for w, p in pairs),
                               dtype=np.int64, count=n_all)
        radix[a] = len(vocab) + 2
    del pairs
    lo, hi, _ = offs[fit_on]
    cols = np.empty((n_all, len(NER_TEMPLATES)), dtype=np.int32)
    col_template = []
    n_cols = 0
    idx = np.arange(n_all)
    for j, (a, toffs) in enumerate(NER_TEMPLATES):
        if radix[a] ** len(toffs) >= 2 ** 62:
            raise OverflowError(f"template {a}{toffs}: key space too large")
        key = np.zeros(n_all, dtype=np.int64)
        for o in toffs:
            p = sent_pos + o
            c = np.where(p < 0, 0, np.where(p >= sent_len, 1,
                                            codes[a][np.clip(idx + o, 0, n_all - 1)]))
            key = key * radix[a] + c
        uniq = np.unique(key[lo:hi])
        k = np.searchsorted(uniq, key)
        found = (k < len(uniq)) & (uniq[np.minimum(k, len(uniq) - 1)] == key)
        cols[:, j] = np.where(found, n_cols + k, -1)
        col_template.append(np.full(len(uniq), j, dtype=np.int64))
        n_cols += len(uniq)
    out = {}
    for s in names:
        a, b, tok_off = offs[s]
        block = cols[a:b]
        mask = block >= 0
        indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))])
        X = sp.csr_matrix((np.ones(int(indptr[-1])), block[mask], indptr),
                          shape=(b - a, n_cols))
        out[s] = (X, tok_off)
    return out, np.concatenate(col_template)


def split_sentences(X, tok_off):
    """A token matrix as the list of per-sentence matrices the estimators take."""
    return [X[tok_off[i]:tok_off[i + 1]] for i in range(len(tok_off) - 1)]


#: default training subsample (first sentences of the train file), to keep
#: the run within ~15 minutes per language on one core
NER_N_TRAIN = {"esp": 2500, "ned": 4000}
#: Martins et al. (2011), Table 2: F1 dev/test and number of features
NER_PAPER = {
    "esp": [("MIRA, all features", "70.38", "74.09", "8,598,246"),
            ("B = 100", "71.79", "73.62", "83,036"),
            ("B = 200", "72.08", "75.05", "354,872"),
            ("B = 300", "71.48", "73.38", "600,646")],
    "ned": [("MIRA, all features", "69.15", "71.54", "5,727,004"),
            ("B = 100", "69.48", "72.83", "128,320"),
            ("B = 200", "71.03", "73.33", "447,193"),
            ("B = 300", "71.2", "72.59", "889,660")],
}


def ner_data(language, n_train):
    from structlearn.datasets import fetch_conll2002

    data = {s: fetch_shared(fetch_conll2002, language, s) for s in ("train", "testa", "testb")}
    n = n_train or len(data["train"].words)
    splits = {s: (b.words[:n], b.pos[:n]) if s == "train" else (b.words, b.pos)
              for s, b in data.items()}
    tags = {s: (b.tags[:n] if s == "train" else b.tags) for s, b in data.items()}
    feats, col_template = ner_features(splits)
    return feats, col_template, tags


def _restrict(feats, keep):
    """Per-sentence matrices of every split, keeping the columns ``keep``
    (what ``GroupLassoSelector.transform`` does sentence by sentence, done
    once per split on the stacked matrix: slicing millions of columns out
    of each of thousands of sentence matrices would take minutes)."""
    cols = np.flatnonzero(keep)
    return {s: split_sentences(X[:, cols].tocsr(), off) for s, (X, off) in feats.items()}


def run_ner(args):
    lang = args.language
    n_train = NER_N_TRAIN[lang] if args.n_train is None else (args.n_train or None)
    t0 = time.perf_counter()
    feats, col_template, tags = ner_data(lang, n_train)
    feat_s = time.perf_counter() - t0
    names = np.array([ner_template_name(*t) for t in NER_TEMPLATES], dtype=object)
    col_names = names[col_template]
    X = {s: split_sentences(*feats[s]) for s in feats}
    ytr = tags["train"]
    n_tok = int(feats["train"][1][-1])
    print(f"CoNLL-2002 {lang}: {len(ytr)} train sentences ({n_tok} tokens), "
          f"{len(tags['testa'])} testa / {len(tags['testb'])} testb, "
          f"{len(NER_TEMPLATES)} templates, {len(col_template)} features "
          f"({feat_s:.0f} s)", flush=True)

    def hinge(alpha, epochs):
        return SequenceTagger(loss="hinge", alpha=alpha, max_iter=epochs, tol=0.0,
                              n_jobs=1, random_state=0)

    def scores(est, Xs):
        return [round(100 * chunk_f1(tags[s], est.predict(Xs[s])), 2)
                for s in ("testa", "testb")]

    rows, tuning = [], []
    best = None
    for alpha in args.alphas:
        full = hinge(alpha, args.full_epochs)
        fit_s = quiet_fit(full, X["train"], ytr)
        dev, test = scores(full, X)
        tuning.append(dict(alpha=alpha, dev_f1=dev, test_f1=test, fit_s=round(fit_s, 1)))
        print(json.dumps(tuning[-1]), flush=True)
        if best is None or dev > best[0]:
            best = (dev, test, alpha, full, fit_s)
    dev, test, alpha, full, fit_s = best
    rows.append(dict(model=f"full (hinge, {args.full_epochs} epochs)", budget="",
                     templates=len(NER_TEMPLATES), features=len(col_template),
                     weights=int(full._n_support), dev_f1=dev, test_f1=test,
                     select_s="", fit_s=round(fit_s, 1)))
    print(json.dumps(rows[-1]), flush=True)
    del full
    selected = {}
    for B in BUDGETS["conll2002"]:
        sel = GroupLassoSelector(SequenceTagger(n_jobs=1), budget=B, groups=col_names,
                                 K=1000, n_epochs=5, random_state=0)
        sel_s = quiet_fit(sel, X["train"], ytr)
        Xs = _restrict(feats, sel.get_support())
        refit = hinge(alpha, args.refit_epochs)
        fit_s = quiet_fit(refit, Xs["train"], ytr)
        dev, test = scores(refit, Xs)
        rows.append(dict(model=f"sparseptron + hinge refit ({args.refit_epochs} epochs)",
                         budget=B, templates=len(sel.selected_groups_),
                         features=int(sel.n_features_selected_),
                         weights=int(refit._n_support), dev_f1=dev, test_f1=test,
                         select_s=round(sel_s, 1), fit_s=round(fit_s, 1)))
        selected[B] = list(sel.selected_groups_)
        print(json.dumps(rows[-1]), flush=True)
        del Xs, refit, sel
    write_ner_report(args, lang, len(ytr), n_tok, alpha, rows, tuning, selected)


def _template_family(name):
    attr = name.split("[", 1)[0]
    return attr[:3] + "fix" if attr[:3] in ("pre", "suf") else attr


def write_ner_report(args, lang, n_sent, n_tok, alpha, rows, tuning, selected):
    stem = f"selection_conll2002_{lang}"
    if args.n_train is not None:
        stem += f"_n{args.n_train}" if args.n_train else "_all"
    stem = out_stem(args, stem)
    if stem is None:
        return
    write_csv(f"{stem}.csv", rows)
    full_w = rows[0]["weights"]
    language = {"esp": "Spanish", "ned": "Dutch"}[lang]
    cmd = f"python benchmarks/bench_selection.py --task conll2002 --language {lang}"
    if args.n_train is not None:
        cmd += f" --n-train {args.n_train}"
    fams = sorted({_template_family(n) for n in
                   (ner_template_name(*t) for t in NER_TEMPLATES)})
    total = {f: sum(_template_family(ner_template_name(*t)) == f for t in NER_TEMPLATES)
             for f in fams}
    lines = [f"# Template selection: CoNLL-2002 {language} NER "
             "(Martins et al. 2011, Table 2)", "",
             f"Command: `{cmd}`", "",
             "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
             f"Training data: the first {n_sent} sentences of `{lang}.train` "
             f"({n_tok} tokens); dev = `{lang}.testa`, test = `{lang}.testb` (complete). "
             f"{len(NER_TEMPLATES)} templates (see `NER_TEMPLATES`) conjoined with the 9 "
             "IOB2 tags, plus tag bigrams.  F1 = entity-level F1 (conlleval, "
             "`structlearn.metrics.chunk_f1`), in %.", "",
             f"Full model: hinge loss, averaged SGD, {args.full_epochs} epochs; alpha "
             f"tuned on dev F1 over {[t['alpha'] for t in tuning]}: alpha = {alpha}.  "
             f"Selection: 5 sparseptron epochs, K = 1000, d_m = log2 |G_m|; refit: the "
             f"same hinge model (alpha = {alpha}), {args.refit_epochs} epochs.", "",
             "Alpha tuning (full model):", "",
             md_table(["alpha", "dev F1", "test F1", "fit (s)"],
                      [[t["alpha"], t["dev_f1"], t["test_f1"], t["fit_s"]]
                       for t in tuning]), "",
             md_table(["model", "budget B", "templates", "features", "weights",
                       "% of full", "dev F1", "test F1", "selection (s)", "fit (s)"],
                      [[r["model"], r["budget"], r["templates"], r["features"],
                        r["weights"], f"{100 * r['weights'] / full_w:.1f}", r["dev_f1"],
                        r["test_f1"], r["select_s"], r["fit_s"]] for r in rows]), "",
             "The paper (Table 2, all training data, 452 templates; Lasso columns "
             "omitted):", "",
             md_table(["model", "dev F1", "test F1", "features"], NER_PAPER[lang]), "",
             "Selected templates per family (selected / available):", ""]
    for B, sel in selected.items():
        cnt = {f: 0 for f in fams}
        for n in sel:
            cnt[_template_family(n)] += 1
        lines.append(f"- B = {B}: " + ", ".join(f"{f} {cnt[f]}/{total[f]}" for f in fams))
    lines.append("")
    for B, sel in selected.items():
        lines.append(f"- B = {B} templates: " + " ".join(sel))
    lines.append("")
    path = write_text(stem, "\n".join(lines))
    print(f"wrote {path}")


# ------------------------------------------------------------------- parsing
def information_gain(parser, X, y):
    """Eq. 16 per arc template: sum over its features f and a in {0, 1} of
    P(f, a) log2 P(f, a) / (P(f) P(a)), with ``a`` whether a candidate arc
    is gold and ``f`` a feature firing on it; counts over every candidate
    arc of the training data (features: those of the parser's table)."""
    from structlearn.feature_maps import ArcFeatureMap
    from structlearn.kernels.tree import tree_arc_offsets
    from structlearn.kernels.tree_validation import validate_heads

    vec = parser.vectorizer_
    A, word_off = vec.transform(X)
    heads, _ = validate_heads([list(h) for h in y], parser.single_root)
    cache = ArcFeatureMap(vec, A, word_off, 2)
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
    return (*ewt_parsing_xy("train", n_train), *ewt_parsing_xy("test"))


def refit_parser(templates, Xtr, ytr, Xte, yte):
    p = DependencyParser(loss="hinge", alpha=ALPHA_PARSE, max_iter=10, templates=templates,
                         n_jobs=2, random_state=0)
    fit_s = quiet_fit(p, Xtr, ytr)
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
        sel_s = quiet_fit(sel, Xtr, ytr)
        for method, templates, s_s in (("sparseptron", sel.selected_groups_, sel_s),
                                       ("information gain", ranking[:B], ig_s)):
            p, fit_s, score = refit_parser(templates, Xtr, ytr, Xte, yte)
            rows.append(dict(method=method, budget=B, templates=len(templates),
                             features=int(p.vectorizer_.n_features_),
                             uas=round(100 * score, 2), select_s=round(s_s, 1),
                             fit_s=round(fit_s, 1)))
            print(json.dumps(rows[-1]), flush=True)
    suffix = "" if args.n_train is None else f"_n{args.n_train}"
    stem = out_stem(args, f"selection_ewt{suffix}")
    if stem is None:
        return
    write_csv(f"{stem}.csv", rows)
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
    path = write_text(stem, "\n".join(lines))
    print(f"wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[common_parser("out", "no_write", "data",
                               out="selection_<task>[...], by the options")])
    ap.add_argument("--task", choices=["conll2000", "ewt", "conll2002"],
                    default="conll2000")
    ap.add_argument("--language", choices=["esp", "ned"], default="esp",
                    help="--task conll2002: Spanish (esp) or Dutch (ned)")
    ap.add_argument("--n-train", type=int, default=None,
                    help="first N training sentences (--task conll2002: default "
                         f"{NER_N_TRAIN}; 0 = all)")
    ap.add_argument("--alphas", type=lambda v: [float(a) for a in v.split(",")],
                    default=[1e-6, 1e-5, 1e-4],
                    help="--task conll2002: L2 strengths tried for the full model "
                         "(the best on testa is used for the refits too)")
    ap.add_argument("--full-epochs", type=int, default=None,
                    help="SGD epochs of the full model (default 20; --task conll2002: "
                         "15, the paper's)")
    ap.add_argument("--refit-epochs", type=int, default=None,
                    help="SGD epochs of the refit (default 20; --task conll2002: 10, "
                         "the paper's, after 5 selection epochs)")
    ap.add_argument("--bcfw", action="store_true",
                    help="--task conll2000: train the full model and the refits by BCFW "
                    "to a certified relative gap of 1e-3 at alpha = 2 / n (the "
                    "CoNLL-2000 protocol of bench_sequence) instead of SGD epochs")
    ap.add_argument("--memory", action="store_true",
                    help="also measure the peak memory of the full and B = 30 fits "
                         "(materialised and streamed selection)")
    ap.add_argument("--memory-only", action="store_true",
                    help="--task conll2000: only the peak memory of the full fit and of "
                         "the materialised and streamed selections (B = 30), and the "
                         "selections' times side by side")
    ap.add_argument("--repeat", type=int, default=3,
                    help="--memory-only: fits of each selection for the time ratio")
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parse_args(ap, argv)
    paper = args.task == "conll2002"
    if args.full_epochs is None:
        args.full_epochs = 15 if paper else 20
    if args.refit_epochs is None:
        args.refit_epochs = 10 if paper else 20
    if args.memory_child:
        memory_child(args.memory_child, args.n_train, args.full_epochs)
    elif args.memory_only:
        run_memory(args)
    elif args.task == "conll2000":
        run_chunking(args)
    elif args.task == "conll2002":
        run_ner(args)
    else:
        run_parsing(args)


if __name__ == "__main__":
    main()
