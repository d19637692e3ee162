"""The dual solver (``solver='bcfw'``) against SGD and against the CRF's fit time.

Tasks:

* ``fixed``: the max-margin losses on the fixed-size estimators, bundled data
  (label ranking ``stock`` on the permutahedron and the Birkhoff polytope,
  red-wine quality as ordinal regression) and MULAN ``yeast`` from
  ``../shared/data`` when present; a 70/30 split with a fixed seed, features
  standardised, the default ``alpha = 1e-3``.  Every (loss, solver) pair runs
  in this process on the same data with ``n_jobs=1``; the table gives the
  training objective (BCFW penalises the intercept as well, so its objective
  is the larger one at equal weights), the certified relative gap, epochs,
  fit time and the test score.
* ``conll2000``: CoNLL-2000 chunking with CRFsuite's template and
  ``alpha = 2 / n``: the CRF by L-BFGS (the reference time), then the
  margin-scaled hinge by BCFW, reporting the certified relative gap after
  each epoch against the time elapsed (ratio to the CRF's fit time), and the
  hinge by SGD (10 epochs, the earlier benchmark setting) for F1.

* ``alpha``: why CoNLL-2000 converges slowly -- the first 2,000 training
  sentences, margin-scaled hinge by BCFW at ``alpha * n`` = 2 (the
  benchmark setting), 20 and 200: the epochs (and seconds) each needs to
  reach a relative gap of 1e-1, 1e-2 and 1e-3.
* ``sides``: which side of the gap is slow -- the same 2,000 sentences at
  ``alpha * n = 2`` with a certificate after every epoch: per epoch, how far
  the primal value is from its final value, ``(P_t - P_end) / P_end``, and
  the dual value from its final value, ``(D_end - D_t) / P_end`` (``P``:
  best primal value met, ``D``: best dual value met), then the same fit
  warm-started from the dual iterate of a fit at ``alpha * n = 20``
  (lambda-continuation), epochs counted over both stages.

* ``sparsemap``: the SparseMAP losses on CoNLL-2000 (``alpha = 2 / n``,
  CRFsuite's template), trained to convergence two ways -- by BCFW to a
  certified relative gap of 1e-3 and by L-BFGS to the CRF's stopping rule
  (warm-started active sets) -- against the CRF's L-BFGS fit in the same
  process: fit time, ratio to the CRF, epochs / iterations, objective,
  gap, test F1.  ``--repeat 2`` runs the whole list twice, interleaved.
  The result file accumulates one section per ``--n-jobs``.

* ``bundled``: the issue's acceptance check -- every max-margin loss on
  every estimator, on the data bundled with the package, ``solver="bcfw"``
  with the default ``tol`` (1e-3) and ``max_iter`` (200 epochs), at the
  estimator's default ``alpha`` and at ``alpha = 1e-2``: does it certify
  its gap without a ConvergenceWarning?  (Fixed-size estimators:
  standardised features; the tagger on the bundled EWT POS sentences, the
  parser on the first 100 bundled EWT sentences.)

Usage::

    python benchmarks/bench_bcfw.py --task bundled
    python benchmarks/bench_bcfw.py --task fixed
    python benchmarks/bench_bcfw.py --task conll2000 --epochs 60
    python benchmarks/bench_bcfw.py --task sparsemap --n-jobs 1
    python benchmarks/bench_bcfw.py --task alpha --epochs 200
    python benchmarks/bench_bcfw.py --task sides --epochs 100
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    bcfw_trace, common_parser, conll2000_xy, data_path, machine_info, md_table, out_stem,
    parse_args, write_text)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor, \
    SequenceTagger  # noqa: E402
from structlearn.datasets import load_label_ranking, load_wine_quality  # noqa: E402
from structlearn.metrics import chunk_f1  # noqa: E402

LOSSES = ("hinge", "hinge-slack", "hinge-approx-slack", "poslearn")


def fixed_tasks():
    X, Y = load_label_ranking("stock")
    yield "stock (permutahedron)", LabelRanker(), X, Y
    yield "stock (Birkhoff)", LabelRanker(polytope="birkhoff"), X, Y
    X, y = load_wine_quality("red")
    yield "wine red (ordinal)", OrdinalRegressor(), X, y
    folder = data_path("multilabel_yeast")
    if (folder / "yeast.arff").exists():
        from structlearn.datasets import read_arff_multilabel
        X, Y = read_arff_multilabel(folder / "yeast.arff", folder / "yeast.xml")[:2]
        yield "yeast (multilabel)", MultiLabelClassifier(), X, Y


def run_fixed(stem):
    rows = []
    for name, est, X, y in fixed_tasks():
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
        sc = StandardScaler().fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        for loss in LOSSES:
            for solver in ("sgd", "bcfw"):
                est.set_params(loss=loss, solver=solver, random_state=0, n_jobs=1)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    t = time.perf_counter()
                    try:
                        est.fit(Xtr, ytr)
                    except ValueError as e:  # e.g. no exact slack oracle
                        print(f"{name} {loss} {solver}: {e}"[:120], flush=True)
                        break
                    fit = time.perf_counter() - t
                warned = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
                gap = est.duality_gap_
                row = [name, loss, solver, f"{est.objective_:.4f}",
                       "-" if gap is None else f"{gap:.1e}", est.n_iter_, f"{fit:.2f}",
                       f"{est.score(Xte, yte):.4f}", "yes" if warned else ""]
                rows.append(row)
                print(" | ".join(map(str, row)), flush=True)
    head = ["data", "loss", "solver", "train objective", "relative gap", "epochs",
            "fit (s)", "test score", "stopped on budget"]
    if stem:
        out = write_text(stem, "# BCFW vs SGD on the fixed-size estimators\n\n"
                         "`python benchmarks/bench_bcfw.py --task fixed`\n\n"
                         f"{machine_info()}\n\n" + md_table(head, rows) + "\n")
        print(f"wrote {out}")


def run_conll(epochs, n_jobs, stem):
    X, y = conll2000_xy("train")
    Xt, yt = conll2000_xy("test")
    n = len(X)
    alpha = 2.0 / n
    warm = SequenceTagger(loss="hinge", solver="bcfw", max_iter=1, alpha=alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.fit(X[:20], y[:20])               # Numba loads its kernels: not timed
        SequenceTagger(loss="crf", max_iter=2).fit(X[:20], y[:20])
    t = time.perf_counter()
    crf = SequenceTagger(loss="crf", alpha=alpha, n_jobs=n_jobs).fit(X, y)
    t_crf = time.perf_counter() - t
    f_crf = chunk_f1(yt, crf.predict(Xt))
    print(f"CRF: {t_crf:.1f}s, {crf.n_iter_} iterations, F1 {f_crf:.4f}", flush=True)

    est = SequenceTagger(loss="hinge", solver="bcfw", alpha=alpha, tol=1e-3,
                         max_iter=epochs, n_jobs=n_jobs, random_state=0)
    with warnings.catch_warnings(), bcfw_trace() as trace:
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        est.fit(X, y)
        t_bcfw = time.perf_counter() - t
    f_bcfw = chunk_f1(yt, est.predict(Xt))
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sgd = SequenceTagger(loss="hinge", solver="sgd", alpha=alpha, max_iter=10,
                             n_jobs=n_jobs, random_state=0).fit(X, y)
    t_sgd = time.perf_counter() - t
    f_sgd = chunk_f1(yt, sgd.predict(Xt))
    rows = [[e, f"{s:.1f}", f"{s / t_crf:.2f}", f"{p:.5f}", f"{r:.2e}"]
            for e, s, p, r in trace if e in (1, 2, 5) or e % 10 == 0 or e == trace[-1][0]]
    text = ("# Margin-scaled hinge by BCFW on CoNLL-2000, against the CRF's fit time\n\n"
            f"`python benchmarks/bench_bcfw.py --task conll2000 --epochs {epochs}`"
            f" (n_jobs={n_jobs})\n\n{machine_info()}\n\n"
            f"- CRF (L-BFGS): fit {t_crf:.1f} s, {crf.n_iter_} iterations, F1 "
            f"{100 * f_crf:.2f}\n"
            f"- hinge, BCFW: {est.n_iter_} epochs in {t_bcfw:.1f} s "
            f"({t_bcfw / t_crf:.2f}x the CRF), relative gap {est.duality_gap_:.2e}, "
            f"objective {est.objective_:.5f}, F1 {100 * f_bcfw:.2f}\n"
            f"- hinge, SGD, 10 epochs: fit {t_sgd:.1f} s, objective "
            f"{sgd.objective_:.5f} (intercept unpenalised), F1 {100 * f_sgd:.2f}\n\n"
            + md_table(["epoch", "time (s)", "time / CRF fit", "objective",
                        "relative gap"], rows) + "\n")
    if stem:
        write_text(stem, text)
    print(text)


SPARSEMAP_RUNS = (("crf", "lbfgs"), ("sparsemap", "bcfw"), ("m-sparsemap", "bcfw"),
                  ("sparsemap", "lbfgs"))


def run_sparsemap(n_jobs, repeat, stem):
    X, y = conll2000_xy("train")
    Xt, yt = conll2000_xy("test")
    n = len(X)
    alpha = 2.0 / n
    with warnings.catch_warnings():   # Numba loads its kernels: not timed
        warnings.simplefilter("ignore", ConvergenceWarning)
        for loss, solver in SPARSEMAP_RUNS:
            SequenceTagger(loss=loss, solver=solver, max_iter=2).fit(X[:20], y[:20])
    rows, crf_times = [], []
    for r in range(repeat):
        for loss, solver in SPARSEMAP_RUNS:
            est = SequenceTagger(loss=loss, solver=solver, alpha=alpha, n_jobs=n_jobs,
                                 random_state=0)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                t = time.perf_counter()
                est.fit(X, y)
                fit = time.perf_counter() - t
            if loss == "crf":
                crf_times.append(fit)
            gap = est.duality_gap_
            row = [r + 1, loss, solver, f"{fit:.1f}", f"{fit / crf_times[-1]:.2f}",
                   est.n_iter_, f"{est.objective_:.6f}",
                   "-" if gap is None else f"{gap:.1e}",
                   f"{100 * chunk_f1(yt, est.predict(Xt)):.2f}",
                   "yes" if caught else ""]
            rows.append(row)
            print(" | ".join(map(str, row)), flush=True)
    head = ["run", "loss", "solver", "fit (s)", "fit / CRF fit (same run)",
            "epochs / iterations", "objective", "relative gap", "test F1", "warned"]
    if stem is None:
        return
    out = Path(f"{stem}.md")
    text = out.read_text() if out.exists() else (
        "# The SparseMAP losses on CoNLL-2000: BCFW vs L-BFGS, against the CRF\n\n"
        "BCFW penalises the intercept too (L-BFGS does not), so its objective is "
        "the larger one at equal weights.\n")
    marker = f"\n## n_jobs={n_jobs}\n"
    if marker in text:   # replace this thread count's section
        start = text.index(marker)
        end = text.find("\n## n_jobs=", start + len(marker))
        text = text[:start] + (text[end:] if end >= 0 else "")
    text = (text.rstrip("\n") + "\n" + marker + "\n"
            f"`python benchmarks/bench_bcfw.py --task sparsemap --n-jobs {n_jobs} "
            f"--repeat {repeat}`\n\n{machine_info()}\n\n" + md_table(head, rows) + "\n")
    print(f"wrote {write_text(stem, text)}")


def run_alpha(epochs, n_jobs, stem):
    X, y = conll2000_xy("train")
    X, y = X[:2000], y[:2000]
    n = len(X)
    with warnings.catch_warnings():  # Numba loads its kernels: not timed
        warnings.simplefilter("ignore", ConvergenceWarning)
        SequenceTagger(loss="hinge", solver="bcfw", max_iter=2).fit(X[:20], y[:20])
    rows = []
    for an in (2.0, 20.0, 200.0):
        est = SequenceTagger(loss="hinge", solver="bcfw", alpha=an / n, tol=1e-3,
                             max_iter=epochs, n_jobs=n_jobs, random_state=0)
        with warnings.catch_warnings(), bcfw_trace() as trace:
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(X, y)
        reached = {}
        for e, secs, _, r in trace:
            for level in (1e-1, 1e-2, 1e-3):
                if r <= level and level not in reached:
                    reached[level] = (e, secs)
        row = [f"{an:g}", f"{an / n:.1e}"]
        for level in (1e-1, 1e-2, 1e-3):
            e = reached.get(level)
            row.append(f"{e[0]} ({e[1]:.0f} s)" if e else f"> {epochs}")
        row.append(f"{est.duality_gap_:.1e}")
        rows.append(row)
        print(" | ".join(row), flush=True)
    text = ("# BCFW on 2,000 CoNLL-2000 sentences: epochs to a relative gap, by alpha\n\n"
            f"`python benchmarks/bench_bcfw.py --task alpha --epochs {epochs}` "
            f"(n_jobs={n_jobs})\n\n{machine_info()}\n\n"
            + md_table(["alpha * n", "alpha", "gap 1e-1", "gap 1e-2", "gap 1e-3",
                        "final gap"], rows) + "\n")
    if stem:
        write_text(stem, text)
    print(text)


def run_sides(epochs, n_jobs, stem):
    X, y = conll2000_xy("train")
    X, y = X[:2000], y[:2000]
    n = len(X)

    def make(an, **kw):
        return SequenceTagger(loss="hinge", solver="bcfw", alpha=an / n, tol=1e-3,
                              max_iter=epochs, n_jobs=n_jobs, random_state=0, **kw)

    with warnings.catch_warnings(), bcfw_trace(check_every=1) as trace:
        warnings.simplefilter("ignore", ConvergenceWarning)
        make(2.0).fit(X, y)
    P = [p for _, _, p, _ in trace]
    D = [p * (1.0 - r) for _, _, p, r in trace]
    rows = [[e, f"{secs:.1f}", f"{r:.2e}", f"{(P[k] - P[-1]) / P[-1]:.2e}",
             f"{(D[-1] - D[k]) / P[-1]:.2e}"]
            for k, (e, secs, _, r) in enumerate(trace)
            if e % 5 == 0 or k == len(trace) - 1]
    direct = (trace[-1][0], trace[-1][1])
    with warnings.catch_warnings(), bcfw_trace() as trace2:
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = make(20.0, warm_start=True).fit(X, y)
        first = est.n_iter_
        est.set_params(alpha=2.0 / n).fit(X, y)
    text = ("# BCFW on 2,000 CoNLL-2000 sentences: which side of the gap is slow\n\n"
            f"`python benchmarks/bench_bcfw.py --task sides --epochs {epochs}` "
            f"(n_jobs={n_jobs}, alpha * n = 2, a certificate after every epoch)\n\n"
            f"{machine_info()}\n\n"
            + md_table(["epoch", "time (s)", "relative gap", "primal side (P_t - P_end) / P_end",
                        "dual side (D_end - D_t) / P_end"], rows)
            + f"\n\nDirect: gap {trace[-1][3]:.1e} after {direct[0]} epochs ({direct[1]:.0f} s, "
            "with a certificate after every epoch).\n"
            f"Continuation (alpha * n = 20 to tol 1e-3, then 2 warm-started): {first} + "
            f"{est.n_iter_} = {first + est.n_iter_} epochs, gap {est.duality_gap_:.1e} "
            f"({trace2[-1][1]:.0f} s).\n")
    if stem:
        write_text(stem, text)
    print(text)


def bundled_tasks():
    from structlearn import DependencyParser
    from structlearn.datasets import load_ewt, load_ewt_constructions, load_ewt_pos

    for name in ("stock", "iris"):
        X, Y = load_label_ranking(name)
        X = StandardScaler().fit_transform(X)
        yield f"{name} (permutahedron)", LabelRanker, X, Y
        yield f"{name} (Birkhoff)", lambda **kw: LabelRanker(polytope="birkhoff", **kw), X, Y
    X, y = load_wine_quality("red")
    yield "wine red (ordinal)", OrdinalRegressor, StandardScaler().fit_transform(X), y
    texts, Y = load_ewt_constructions("train")[:2]
    yield "EWT constructions (multilabel)", MultiLabelClassifier, \
        TfidfVectorizer().fit_transform(texts), Y
    X, y = load_ewt_pos("train")
    yield "EWT POS (tagger)", SequenceTagger, X, y
    train = load_ewt("train")[:100]
    yield "EWT, 100 sentences (parser)", DependencyParser, \
        [s.tokens for s in train], [s.heads for s in train]


def _write_bundled(rows, done, stem):
    head = ["data", "loss", "alpha", "relative gap", "epochs", "fit (s)", "certified"]
    ok = sum(r[-1] == "yes" for r in rows)
    return write_text(
        stem, "# solver='bcfw' on the bundled data: certified without a warning?\n\n"
        "`python benchmarks/bench_bcfw.py --task bundled` (n_jobs=1, tol 1e-3, "
        "200 epochs)" + ("" if done else " -- **interrupted**: the rows so far")
        + f"\n\n{machine_info()}\n\n{ok} of {len(rows)} fits certified.\n\n"
        + md_table(head, rows) + "\n")


def run_bundled(stem):
    rows = []
    for name, make, X, y in bundled_tasks():
        for loss in LOSSES:
            for alpha in (None, 1e-2):
                kw = {} if alpha is None else {"alpha": alpha}
                est = make(loss=loss, solver="bcfw", random_state=0, n_jobs=1, **kw)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    t = time.perf_counter()
                    try:
                        est.fit(X, y)
                    except ValueError as e:  # no exact slack oracle
                        print(f"{name} {loss}: {e}"[:100], flush=True)
                        break
                    fit = time.perf_counter() - t
                warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
                row = [name, loss, f"{est.alpha:g}", f"{est.duality_gap_:.1e}", est.n_iter_,
                       f"{fit:.1f}", "no (budget)" if warned else "yes"]
                rows.append(row)
                print(" | ".join(map(str, row)), flush=True)
                if stem:
                    _write_bundled(rows, False, stem)  # an interrupted run keeps its rows
    if stem:
        print(f"wrote {_write_bundled(rows, True, stem)}")


#: --task -> default results file stem in benchmarks/results/
STEMS = {"fixed": "bcfw_fixed", "conll2000": "bcfw_conll2000", "alpha": "bcfw_alpha",
         "sides": "bcfw_sides", "bundled": "bcfw_bundled",
         "sparsemap": "bcfw_sparsemap_conll2000"}


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="--task sparsemap adds (or replaces) one section per --n-jobs in its "
               "results file",
        parents=[common_parser("n_jobs", "repeat", "out", "no_write", "data", n_jobs=2,
                               repeat=1, out="bcfw_<task>")])
    ap.add_argument("--task", choices=tuple(STEMS), default="fixed")
    ap.add_argument("--epochs", type=int, default=60)
    args = parse_args(ap, argv)
    stem = out_stem(args, STEMS[args.task])
    if args.task == "fixed":
        run_fixed(stem)
    elif args.task == "alpha":
        run_alpha(args.epochs, args.n_jobs, stem)
    elif args.task == "bundled":
        run_bundled(stem)
    elif args.task == "sides":
        run_sides(args.epochs, args.n_jobs, stem)
    elif args.task == "sparsemap":
        run_sparsemap(args.n_jobs, args.repeat, stem)
    else:
        run_conll(args.epochs, args.n_jobs, stem)


if __name__ == "__main__":
    main()
