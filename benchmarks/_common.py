"""Helpers shared by every benchmark script (``benchmarks/*.py`` and
``benchmarks/micro/*.py``): the one module they import.

* **Threads.**  Importing this module pins BLAS / OpenMP / MKL / Numba to one
  thread per process (``os.environ.setdefault``: a variable already set
  wins), so import it before NumPy.  The benchmarks parallelise over tasks
  or through the estimators' ``n_jobs``; on the small shared machine a
  2-thread OpenBLAS made a (193 x 193) @ (193 x 36) product ~100x slower
  (20 ms instead of 0.2 ms), the second thread competing with other jobs
  for the 2 cores.  Every model, peers included, runs under the same
  setting.
* **Data.**  The reference data folder is ``$STRUCTLEARN_BENCH_DATA``, by
  default ``<repo>/../shared/data`` (the repository is cloned with
  ``../shared`` beside it); every script's ``--data`` overrides it (and
  exports it to worker processes).  :func:`data_home`, :func:`data_path`,
  :func:`fetch_shared` and the loaders below read it.
* **Command line.**  :func:`common_parser` gives the flags every script
  spells the same way (``--quick``, ``--datasets``, ``--n-jobs``,
  ``--repeat``, ``--out``, ``--no-write``, ``--data``), :func:`parse_args`
  applies them and
  :func:`out_stem` says where (and whether) to write the results,
  :func:`report` prints a report and writes it there.
* **Data loaders and features**: CoNLL-2000 (CRFsuite's CRF++ template and
  the template set of Martins et al. 2011), CoNLL-2002 NER, the UD
  treebanks (UPOS tagging features), MULAN, Chu & Ghahramani, label ranking.
* **Timing, warnings, memory**: :class:`Recorder`, :func:`timed_fit`,
  :func:`quiet_fit`, :func:`peak_memory_growth`, :func:`bcfw_trace`.
* **Model selection** (ordinal, multilabel): :func:`select_and_refit`, the
  ``"<loss> (bcfw)"`` model names.
* **Results**: :func:`write_csv`, :func:`md_table`, :func:`machine_info`,
  :func:`git_version`, the tables of the ordinal / multilabel reports.
"""

import os

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS")
#: the variables set here (not already in the environment)
PINNED = tuple(v for v in THREAD_VARS if v not in os.environ)
for _var in PINNED:
    os.environ[_var] = "1"

import argparse  # noqa: E402
import csv  # noqa: E402
import importlib.util  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

#: the checkout this script belongs to comes first on ``sys.path`` (so that a
#: benchmark measures the code beside it, not an installed structlearn),
#: unless ``PYTHONPATH`` names one explicitly (``micro/ab_checkouts.py`` and
#: ``micro/bench_compile.py --baseline`` run other checkouts that way)
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.environ.get("PYTHONPATH") and _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

# ------------------------------------------------------------------- paths
HERE = Path(__file__).resolve().parent          # benchmarks/
REPO = HERE.parent
RESULTS = HERE / "results"
#: the one environment variable naming the reference data folder
DATA_ENV = "STRUCTLEARN_BENCH_DATA"
DEFAULT_DATA = REPO.parent / "shared" / "data"
_OLD_DATA_ENV = "STRUCTLEARN_SHARED_DATA"


def data_home():
    """The reference data folder: ``$STRUCTLEARN_BENCH_DATA``, else
    ``<repo>/../shared/data``.  Read at call time, so ``--data`` (which sets
    the variable) applies to everything loaded afterwards."""
    if os.environ.get(_OLD_DATA_ENV):
        raise SystemExit(f"{_OLD_DATA_ENV} is no longer read: set {DATA_ENV} "
                         f"(or pass --data) instead")
    return Path(os.environ.get(DATA_ENV) or DEFAULT_DATA)


def data_path(*parts):
    """A path inside the data folder."""
    return data_home().joinpath(*parts)


def fetch_shared(fetcher, *args, **kwargs):
    """``fetcher(*args, data_home=<data folder>, download_if_missing=False)``
    for a ``structlearn.datasets.fetch_*`` function: the benchmarks read the
    reference copy and never download."""
    return fetcher(*args, data_home=data_home(), download_if_missing=False, **kwargs)


# ------------------------------------------------------------ command line
class _Names(argparse.Action):
    """Names separated by spaces or commas (``--datasets iris,wine glass``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [n for v in values for n in v.split(",") if n])


_FLAGS = {
    "quick": (("--quick",), dict(
        action="store_true",
        help="a small smoke run (minutes); prints, and writes no results file "
             "unless --out is given")),
    "datasets": (("--datasets",), dict(
        nargs="+", action=_Names, default=None, metavar="NAME",
        help="data sets to run, space- or comma-separated (default: %(default)s)")),
    "n_jobs": (("--n-jobs",), dict(
        type=int, metavar="N",
        help="worker processes or estimator threads (default: %(default)s)")),
    "repeat": (("--repeat",), dict(
        type=int, metavar="N", help="timed repeats (default: %(default)s)")),
    "out": (("--out",), dict(
        default=None, metavar="STEM",
        help="results file stem: a bare name goes to benchmarks/results/, a path "
             "(with a '/') is used as given; .md / .csv are added (default: %(default)s)")),
    "no_write": (("--no-write",), dict(
        action="store_true", help="print only, write no results file")),
    "data": (("--data",), dict(
        default=None, metavar="DIR",
        help=f"reference data folder (default: ${DATA_ENV}, else <repo>/../shared/data)")),
}


def common_parser(*flags, **defaults):
    """An ``argparse`` parent parser with the flags every benchmark spells the
    same way, for ``ArgumentParser(parents=[...])``.

    ``flags``: names among ``quick``, ``datasets``, ``n_jobs``, ``repeat``,
    ``out``, ``no_write``, ``data`` (a script takes the ones it honours);
    ``defaults``: the script's defaults, e.g. ``n_jobs=2, repeat=3,
    out="ordinal"``, shown in ``--help``.  Those of ``out`` and ``datasets``
    are documentation only (the options stay ``None`` unless given): the
    script passes its default stem to :func:`out_stem` and picks its data
    sets itself.
    """
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("common benchmark options")
    for name in flags:
        opts, kw = _FLAGS[name]
        kw = dict(kw)
        if name in ("out", "datasets"):   # documentation only: the script applies it
            kw["help"] = kw["help"].replace(
                "%(default)s", defaults.get(name) or ("print only" if name == "out" else "all"))
        elif name in defaults:
            kw["default"] = defaults[name]
        elif name in ("n_jobs", "repeat"):
            raise TypeError(f"common_parser: give a default for {name!r}")
        g.add_argument(*opts, **kw)
    return p


def parse_args(parser, argv=None):
    """``parser.parse_args(argv)``, then ``--data`` (when given) becomes
    ``$STRUCTLEARN_BENCH_DATA`` for this process and the ones it starts."""
    args = parser.parse_args(argv)
    if getattr(args, "data", None):
        os.environ[DATA_ENV] = str(Path(args.data).resolve())
    data_home()   # fail early on the old variable
    return args


def out_stem(args, default):
    """Where to write the results (a path without extension), or ``None``.

    ``--no-write``: nothing; ``--out STEM``: ``STEM`` (a bare name in
    ``benchmarks/results/``, a path with a directory as given); ``--quick``
    without ``--out``: nothing; else ``benchmarks/results/<default>``
    (``default=None``: nothing unless ``--out``)."""
    if getattr(args, "no_write", False):
        return None
    out = getattr(args, "out", None)
    if out:
        p = Path(out)
        if p.suffix in (".md", ".csv"):
            p = p.with_suffix("")
        return p if len(p.parts) > 1 else RESULTS / p
    if getattr(args, "quick", False) or default is None:
        return None
    return RESULTS / default


def write_text(stem, text, suffix=".md"):
    """Write ``text`` to ``stem + suffix`` (parents created); the path."""
    path = Path(f"{stem}{suffix}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def report(args, text, default):
    """Print a results report, then write it to ``<out_stem(args, default)>.md``
    (nothing with ``--quick`` or ``--no-write``, see :func:`out_stem`); the
    path written, or None."""
    print(text)
    stem = out_stem(args, default)
    if stem is None:
        return None
    path = write_text(stem, text)
    print("wrote", path)
    return path


def command_line(argv=None):
    """``python benchmarks/<script>.py <args>``: how this run was started,
    for the results files (the script path relative to the repository)."""
    script = Path(sys.argv[0]).resolve()
    try:
        script = script.relative_to(REPO)
    except ValueError:
        pass
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python", str(script)] + ([shlex.join(args)] if args else []))


def arcs_kernels_at(rev):
    """``structlearn.kernels.arcs`` as it was at git revision ``rev``, loaded
    as a module of its own beside this checkout's (for A/B timings of the
    parser's feature kernels in one process)."""
    import tempfile
    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "show", f"{rev}:structlearn/kernels/arcs.py"], cwd=root,
                         check=True, capture_output=True, text=True).stdout
    src = src.replace("from ._", "from structlearn.kernels._")   # its relative imports
    path = Path(tempfile.mkdtemp()) / "arcs_base.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("arcs_base", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def have(module):
    """Whether ``module`` (a peer library: ``mord``, ``sklearn_crfsuite``) is
    importable."""
    return importlib.util.find_spec(module) is not None


def skip_missing_peers(models, requires):
    """``models`` without those whose peer library is not installed
    (``requires``: model name -> module), with a line on stderr per skip."""
    kept = []
    for m in models:
        mod = requires.get(m)
        if mod is not None and not have(mod):
            print(f"skipping {m!r}: {mod} is not installed", file=sys.stderr)
            continue
        kept.append(m)
    return kept


# ---------------------------------------------- data loaders and features
def read_conll2000(subset):
    """Sentences of (word, pos, chunk) triples of CoNLL-2000 ``subset``."""
    from structlearn.datasets import read_conll_columns

    return read_conll_columns(data_path("conll2000_chunking", f"{subset}.txt"))


def chunking_features(sent):
    """The CRF++ chunking template used by CRFsuite's benchmark
    (:func:`structlearn.feature_extraction.column_features` with
    ``template='chunking'``): words at offsets -2..2, word bigrams (-1,0)
    (0,1), POS at -2..2, POS bigrams (-2,-1) (-1,0) (0,1) (1,2), POS
    trigrams starting at -2, -1, 0; ``sent`` holds (word, pos, ...) tuples.
    """
    from structlearn.feature_extraction import column_features

    return column_features([(tok[0], tok[1]) for tok in sent], "chunking")


def conll2000_xy(subset):
    """CoNLL-2000 ``subset``: feature dicts (:func:`chunking_features`) and chunk tags."""
    sents = read_conll2000(subset)
    return [chunking_features(s) for s in sents], [[c for _, _, c in s] for s in sents]


def word_shape(word):
    """Collins (2002b)-style word shape: characters become their type (A
    upper, a lower, 0 digit; other characters stay), and a run of one type
    collapses to that type followed by ``+`` when longer than one character.
    ``2,664,098`` -> ``0,0+,0+`` as in Martins et al. (2011); their other
    example, ``Confidence`` -> ``Aa``, drops the ``+`` that their own rule
    gives (``Aa+``), which is what we produce."""
    out = []
    prev, run = None, 0
    for ch in word:
        c = "A" if ch.isupper() else "a" if ch.islower() else "0" if ch.isdigit() else ch
        if c == prev:
            run += 1
            if run == 2:
                out.append("+")
            continue
        out.append(c)
        prev, run = c, 1
    return "".join(out)


def ngram_templates(lo, hi, max_n):
    """Contiguous offset windows of length 1..max_n inside [lo, hi]."""
    return [tuple(range(a, a + n)) for n in range(1, max_n + 1)
            for a in range(lo, hi - n + 2)]


#: the templates of Martins et al. (2011), Sec. 5, as we read them: POS
#: n-grams (n <= 5) in a window of 5 tokens left and right, word n-grams
#: (n <= 3) within 3, shape n-grams (n <= 2) within 2 -- 45 + 18 + 9 = 72
#: templates (the paper counts 96; its description does not say how).
PAPER_TEMPLATES = ([("pos", t) for t in ngram_templates(-5, 5, 5)]
                   + [("w", t) for t in ngram_templates(-3, 3, 3)]
                   + [("shape", t) for t in ngram_templates(-2, 2, 2)])


def paper_chunking_features(sent):
    """Feature dicts of one sentence with :data:`PAPER_TEMPLATES` (one key
    per template, e.g. ``pos[-1,0,1]``)."""
    n = len(sent)
    cols = {"w": [w for w, _, _ in sent], "pos": [p for _, p, _ in sent],
            "shape": [word_shape(w) for w, _, _ in sent]}
    names = [f"{a}[{','.join(map(str, offs))}]" for a, offs in PAPER_TEMPLATES]
    feats = []
    for t in range(n):
        f = {}
        for name, (a, offs) in zip(names, PAPER_TEMPLATES):
            col = cols[a]
            f[name] = "|".join(col[t + o] if 0 <= t + o < n else
                               ("__BOS__" if t + o < 0 else "__EOS__") for o in offs)
        feats.append(f)
    return feats


def conll2000_paper_xy(subset):
    """CoNLL-2000 ``subset`` with :func:`paper_chunking_features`."""
    sents = read_conll2000(subset)
    return [paper_chunking_features(s) for s in sents], [[c for _, _, c in s] for s in sents]


def ewt_sentences(subset, n=None):
    """The first ``n`` (default all) sentences of UD English EWT ``subset``."""
    from structlearn.datasets import fetch_ud_treebank

    sents = fetch_shared(fetch_ud_treebank, "en_ewt", subset)
    return sents[:n] if n else sents


#: UD treebanks of the data folder: code -> folder
UD_TREEBANKS = {"ja_gsd": "ud_japanese_gsd", "da_ddt": "ud_danish_ddt",
                "ro_rrt": "ud_romanian_rrt", "nl_alpino": "ud_dutch_alpino",
                "zh_gsd": "ud_chinese_gsd", "en_ewt": "ud_english_ewt"}
#: the treebanks whose train file is not in the data folder: the README's
#: small-data protocol (train on dev, tune by CV inside dev, report on test)
SMALL_TREEBANKS = ("ro_rrt", "zh_gsd", "ja_gsd", "da_ddt", "nl_alpino")


def ud_sentences(code, subset, n=None):
    """The first ``n`` (default all) sentences of UD treebank ``code``
    (:data:`UD_TREEBANKS`) ``subset`` (``train``, ``dev``, ``test``), as
    :class:`structlearn.datasets.ConlluSentence` objects; English EWT by
    :func:`ewt_sentences` (its checksummed fetcher)."""
    if code == "en_ewt":
        return ewt_sentences(subset, n)
    from structlearn.datasets import read_conllu

    if code not in UD_TREEBANKS:
        raise SystemExit(f"unknown treebank {code!r}: one of {', '.join(UD_TREEBANKS)}")
    sents = read_conllu(data_path(UD_TREEBANKS[code], f"{code}-ud-{subset}.conllu"))
    return sents[:n] if n else sents


def upos_xy(code, subset, n=None):
    """UPOS tagging on UD treebank ``code`` ``subset`` (first ``n``
    sentences): :func:`structlearn.datasets.pos_token_features` of the words
    and the gold UPOS tags."""
    from structlearn.datasets import pos_token_features

    sents = ud_sentences(code, subset, n)
    return ([pos_token_features([t["form"] for t in s.tokens]) for s in sents],
            [[t["upos"] for t in s.tokens] for s in sents])


def conll2002_xy(language, subset, template="default", n=None):
    """CoNLL-2002 NER ``language`` (``esp``, ``ned``) ``subset`` (``train``,
    ``testa``, ``testb``), first ``n`` sentences: the feature dicts of
    :func:`structlearn.feature_extraction.column_features` with ``template``
    on the (word, POS) columns -- what ``structlearn train`` builds from the
    file (``'words'``: the word column only) -- and the IOB2 tags.  Research
    use only: read from the data folder, never copied into the package."""
    from structlearn.datasets import fetch_conll2002
    from structlearn.feature_extraction import column_features

    data = fetch_shared(fetch_conll2002, language, subset)
    n = n or len(data.words)
    return ([column_features(list(zip(w, p)), template)
             for w, p in zip(data.words[:n], data.pos[:n])],
            [list(t) for t in data.tags[:n]])


def ewt_parsing_xy(subset, n=None):
    """UD English EWT ``subset`` for the parser: tokens and gold heads."""
    sents = ewt_sentences(subset, n)
    return [s.tokens for s in sents], [s.heads for s in sents]


_MULAN = {}


def load_mulan(name):
    """MULAN ``name``: (X_train, Y_train, X_test, Y_test), cached per process."""
    if name not in _MULAN:
        from structlearn.datasets import fetch_mulan

        X, Y = fetch_shared(fetch_mulan, name, subset="train")[:2]
        Xt, Yt = fetch_shared(fetch_mulan, name, subset="test")[:2]
        _MULAN[name] = (X, Y, Xt, Yt)
    return _MULAN[name]


def load_chu_ghahramani(dataset, partition, n_bins=10):
    """Chu & Ghahramani ``dataset``, one partition: (X_train, y_train, X_test, y_test)."""
    from structlearn.datasets import fetch_chu_ghahramani

    return fetch_shared(fetch_chu_ghahramani, dataset, n_bins=n_bins, partition=partition)


def label_ranking_csv(name):
    """The CSV file of label-ranking set ``name`` (first line ``n,d,k``)."""
    return data_path("label_ranking", f"{name}.csv")


def label_ranking_names():
    """The label-ranking sets of the data folder, sorted."""
    return sorted(p.stem for p in data_path("label_ranking").glob("*.csv"))


# ---------------------------------------------- timing, warnings, memory
class Recorder:
    """Context manager recording warnings: counts ConvergenceWarnings apart."""

    def __enter__(self):
        self._cm = warnings.catch_warnings(record=True)
        self.log = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self.n_convergence = sum(issubclass(w.category, ConvergenceWarning)
                                 for w in self.log)
        other = [w for w in self.log if not issubclass(w.category, ConvergenceWarning)]
        self.n_other = len(other)
        self.other_messages = sorted({f"{w.category.__name__}: {str(w.message)[:160]}"
                                      for w in other})
        return False


def timed_fit(est, X, y):
    """Wall seconds of ``est.fit(X, y)``."""
    t = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t


def quiet_fit(est, X, y):
    """:func:`timed_fit` with every warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return timed_fit(est, X, y)


def status_kb(field):
    """A ``/proc/self/status`` field in kB (Linux): ``VmRSS``, ``VmHWM``."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


@contextmanager
def peak_memory_growth():
    """The growth of this process's peak RSS inside the block (Linux), in
    MB, in ``result["peak_growth_mb"]`` of the dict this yields.  The
    kernel's peak counter is reset first, so the transient peak of what ran
    before (data loading) does not hide the block's; run it in a fresh
    process after a warm-up fit (Numba loads its kernels and LLVM on first
    use, a one-off cost that is not the fit's memory)."""
    import gc

    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    result = {}
    before = status_kb("VmRSS")
    yield result
    result["peak_growth_mb"] = round((status_kb("VmHWM") - before) / 1024, 1)


@contextmanager
def bcfw_trace(**solver_kw):
    """Inside the block, every BCFW run of an estimator records
    ``(epoch, seconds since the block began, objective, relative gap)``
    after each certificate in the list this yields (``solver_kw``, e.g.
    ``check_every=1``, go to the solver)."""
    import structlearn.estimators._base as base
    from structlearn import solvers

    trace = []
    t0 = time.perf_counter()
    orig = solvers.bcfw

    def traced(*args, **kw):
        def record(epoch, objective, gap):
            trace.append((epoch, time.perf_counter() - t0, objective, gap))
        return orig(*args, **{**kw, **solver_kw, "callback": record})

    base.bcfw = traced
    try:
        yield trace
    finally:
        base.bcfw = orig


# ------------------------------------------------------- model selection
#: structlearn's ``alpha`` multiplies ``1/2 ||W||^2`` added to the MEAN loss.
ALPHAS = np.logspace(-4, 2, 7)

#: the losses without a smooth objective that ``solver="bcfw"`` trains to a
#: certified relative duality gap; benchmark model names "<loss> (bcfw)"
BCFW_LOSSES = ("hinge", "hinge-slack", "hinge-approx-slack", "poslearn")
BCFW_SUFFIX = " (bcfw)"
BCFW_EPOCHS = 100   # epoch budget (max_iter) of the "<loss> (bcfw)" models
BCFW_TOL = 1e-3     # relative duality gap at which they stop


def fmt_alpha(a):
    return "n/a" if a is None or (isinstance(a, float) and np.isnan(a)) else f"{a:.0e}"


def split_bcfw(name):
    """``"hinge (bcfw)"`` -> ``("hinge", True)``; other names -> ``(name, False)``."""
    if name.endswith(BCFW_SUFFIX):
        return name[:-len(BCFW_SUFFIX)], True
    return name, False


def select_and_refit(make, X, y, folds, alphas, score, X_test=None):
    """Inner-CV selection of ``alpha`` then refit on all of (X, y).

    Honest model selection: the regularisation strength is chosen by inner
    K-fold cross-validation on the training part only (the same folds and
    grid for every model), then the model is refit on the whole training
    part at the selected value -- what ``GridSearchCV(refit=True)`` does,
    written out so that every fit can be timed and its warnings counted.

    Parameters
    ----------
    make : callable alpha -> unfitted estimator (a Pipeline); ``alphas=None``
        means the model has no regularisation parameter (one fit, no CV).
    folds : list of (train_idx, val_idx)
    score : callable (estimator, X, y) -> float, larger is better.

    Returns a dict: best_alpha, cv_mean (per alpha), refit estimator,
    refit_time, cv_fit_times, n_fits, n_errors, warnings counts (all fits,
    and ``refit_convergence_warnings`` of the final refit alone), errors.
    """
    out = {"cv_fit_times": [], "n_errors": 0, "errors": []}
    with Recorder() as rec:
        if alphas is None:
            best = None
            out["cv_mean"] = {}
        else:
            means = []
            for a in alphas:
                scores = []
                for tr, va in folds:
                    est = make(a)
                    try:
                        out["cv_fit_times"].append(timed_fit(est, X[tr], y[tr]))
                        scores.append(score(est, X[va], y[va]))
                    except Exception as exc:  # noqa: BLE001 -- reported, not hidden
                        out["n_errors"] += 1
                        out["errors"].append(f"alpha={a:g}: {type(exc).__name__}: {exc}"[:300])
                        scores.append(np.nan)
                means.append(np.mean(scores) if np.all(np.isfinite(scores)) else -np.inf)
            means = np.asarray(means)
            # GridSearchCV's rule: the best mean score, the first in grid order on ties
            best = float(alphas[int(np.argmax(means))])
            out["cv_mean"] = dict(zip(map(float, alphas), map(float, means)))
        est = make(best if best is not None else 1.0)
        n_before = len(rec.log)
        out["refit_time"] = timed_fit(est, X, y)
        out["estimator"] = est
        # ConvergenceWarnings of the final refit alone (e.g. an epoch budget hit)
        out["refit_convergence_warnings"] = sum(
            issubclass(w.category, ConvergenceWarning) for w in rec.log[n_before:])
        if X_test is not None:
            out["y_pred"] = est.predict(X_test)
    out["best_alpha"] = best
    out["n_convergence_warnings"] = rec.n_convergence
    out["n_other_warnings"] = rec.n_other
    out["other_warnings"] = rec.other_messages
    out["n_fits"] = len(out["cv_fit_times"]) + 1
    return out


def refit_solver_info(r):
    """Solver facts of the final refit of a :func:`select_and_refit` result:
    epochs (``n_iter_``), relative duality gap (``duality_gap_``, NaN for
    solvers without a certificate) and whether the refit warned (an epoch
    budget hit, for bcfw: stopped before reaching ``tol``)."""
    est = r["estimator"]
    est = est[-1] if hasattr(est, "steps") else est
    gap = getattr(est, "duality_gap_", None)
    return {"refit_epochs": getattr(est, "n_iter_", np.nan),
            "refit_gap": np.nan if gap is None else float(gap),
            "refit_budget_hit": int(r.get("refit_convergence_warnings", 0) > 0)}


# ---------------------------------------------------------------- results
def write_csv(path, rows, fields=None):
    """Rows (dicts) to a CSV file; ``fields`` default to every key seen, in order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fields is None:
        fields = []
        for r in rows:
            for k in r:
                if k not in fields:
                    fields.append(k)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def md_table(header, rows):
    """A Markdown table: first column left-aligned, the others right-aligned."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def machine_info():
    """Versions of the stack (mord too when installed), CPUs, load at start."""
    import numba
    import scipy
    import sklearn

    import structlearn
    info = {"python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "scikit-learn": sklearn.__version__,
            "numba": numba.__version__,
            "structlearn": getattr(structlearn, "__version__", "?"),
            "cpus": os.cpu_count()}
    try:
        info["load_avg_at_start"] = "%.1f %.1f %.1f" % os.getloadavg()
    except OSError:
        pass
    try:
        import mord
        info["mord"] = getattr(mord, "__version__", "0.7")
    except ImportError:
        pass
    return info


def versions():
    """``"structlearn X, scikit-learn Y, numpy ..."``: one line of versions."""
    info = machine_info()
    return ", ".join(f"{k} {info[k]}" for k in ("structlearn", "scikit-learn", "numpy",
                                                "scipy", "numba"))


def git_version(repo=REPO):
    """``<short hash>`` of the library checkout, ``+dirty`` if it has edits."""
    try:
        h = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
        d = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "structlearn"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
        return h + ("+dirty" if d else "") if h else ""
    except Exception:  # pragma: no cover
        return ""


def bcfw_table(summary, models, datasets):
    """Markdown table of the bcfw refits: per (model, dataset) the mean and max
    relative duality gap at the stop, mean epochs, refits that stopped on the
    epoch budget, and mean refit time.  ``summary[dataset, model]`` holds
    ``refit_gap_mean``, ``refit_gap_max``, ``refit_epochs_mean``,
    ``n_refit_budget_hits``, ``n_refits`` and ``refit_time_mean``."""
    body = []
    for m in models:
        if not split_bcfw(m)[1]:
            continue
        row = [m]
        for d in datasets:
            if (d, m) not in summary:
                row.append("")
                continue
            s = summary[d, m]
            row.append(f"{s['refit_gap_mean']:.1e} / {s['refit_gap_max']:.1e}, "
                       f"{s['refit_epochs_mean']:.0f} ep, budget {s['n_refit_budget_hits']}"
                       f"/{s['n_refits']}, {s['refit_time_mean']:.2f} s")
        body.append(row)
    return md_table(["model"] + list(datasets), body)


def warnings_section(title, note, summary, models, datasets, rows, alpha_key):
    """Markdown lines: per (model, dataset) selected alpha, warning and error
    counts, then the distinct other warnings and errors seen in ``rows``.

    ``summary[dataset, model]`` holds ``alpha_key``, ``n_convergence_warnings``,
    ``n_fits`` and ``n_errors``.
    """
    out = [f"## {title}", "", note, ""]
    body = []
    for m in models:
        row = [m]
        for d in datasets:
            if (d, m) not in summary:
                row.append("")
                continue
            r = summary[d, m]
            a = r[alpha_key]
            cell = f"{a if isinstance(a, str) else fmt_alpha(a)} " \
                   f"(cw {r['n_convergence_warnings']}/{r['n_fits']})"
            if r["n_errors"]:
                cell += f" err {r['n_errors']}"
            row.append(cell)
        body.append(row)
    out += [md_table(["model"] + list(datasets), body), ""]
    others = sorted({r["other_warnings"] for r in rows if r["other_warnings"]})
    errs = sorted({f"{r['model']}: {r['errors']}" for r in rows if r["errors"]})
    if others:
        out += ["Other warnings seen: " + "; ".join(others[:10]), ""]
    if errs:
        out += ["Errors seen: " + "; ".join(errs[:10]), ""]
    return out


def time_table(summary, models, datasets, key, ref=None):
    """Markdown table of ``summary[dataset, model][key]`` (seconds) per model;
    with ``ref``, each cell also gives the ratio to the reference model and a
    last column the geometric-mean ratio."""
    hdr = ["model"] + list(datasets) + (["geo-mean ratio"] if ref else [])
    body = []
    for m in models:
        row, ratios = [m], []
        for d in datasets:
            if (d, m) not in summary:
                row.append("")
                continue
            t = summary[d, m][key]
            if ref and (d, ref) in summary:
                r = t / max(summary[d, ref][key], 1e-9)
                ratios.append(r)
                row.append(f"{t:.3f} (×{r:.1f})")
            else:
                row.append(f"{t:.3f}")
        if ref:
            row.append(f"×{np.exp(np.mean(np.log(ratios))):.1f}" if ratios else "")
        body.append(row)
    return md_table(hdr, body)
