"""Compile the Numba kernels ahead of the first fit, in parallel processes.

structlearn's kernels are compiled on their first use and cached on disk
(see *The first fit is slower* in the docs): the first fit of a model after
installing waits for it, seconds for the fixed-size estimators and up to
about half a minute for the parser.  :func:`precompile` pays that wait up
front -- once per installation, e.g. when building a container image or
right after ``pip install`` -- by running a tiny fit and predict of every
chosen model in worker processes, several at a time, so that every later
process finds the kernels in the cache.  The same from the shell::

    structlearn precompile                  # every estimator's default loss
    structlearn precompile --losses all     # every loss of every estimator
"""

import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
import multiprocessing

__all__ = ["precompile", "PRECOMPILE_MODELS"]

#: The models :func:`precompile` knows, most expensive to compile first:
#: name -> (estimator class, keyword arguments, default loss).
PRECOMPILE_MODELS = {
    "DependencyParser": ("DependencyParser", {}, "crf"),
    "SegmentTagger": ("SegmentTagger", {}, "crf"),
    "SequenceTagger": ("SequenceTagger", {}, "crf"),
    "LabelRanker-birkhoff": ("LabelRanker", {"polytope": "birkhoff"}, "projection"),
    "LabelRanker": ("LabelRanker", {}, "projection"),
    "OrdinalRegressor": ("OrdinalRegressor", {}, "projection"),
    "MultiLabelClassifier": ("MultiLabelClassifier", {}, "projection"),
}


def _data(name):
    """Small data of the kind ``name`` fits on (bundled with the package), as
    ``(X, y)``: what is compiled depends on the types of the arrays the
    kernels see, which the estimators' own validation fixes, not on the
    values."""
    import numpy as np

    from . import datasets

    if name.startswith("LabelRanker"):
        return datasets.load_label_ranking("iris")
    if name == "OrdinalRegressor":
        X, y = datasets.load_wine_quality("red")
        return X[:200], y[:200]
    if name == "MultiLabelClassifier":
        rng = np.random.RandomState(0)
        return rng.randn(50, 4), (rng.rand(50, 5) > 0.5).astype(int)
    if name == "DependencyParser":
        sentences = datasets.load_ewt("test")[:30]
        # labelled: the heads' kernels and the DEPREL labeller's
        return sentences, datasets.conllu_targets(sentences)
    X, tags = datasets.load_ewt_pos("test")
    X, tags = X[:50], tags[:50]
    if name == "SequenceTagger":
        return X, tags
    # segments: the noun runs as chunks
    nouns = ("NOUN", "PROPN")
    return X, [["I-NP" if t in nouns and i and s[i - 1] in nouns else
                "B-NP" if t in nouns else "O" for i, t in enumerate(s)] for s in tags]


def _compile_one(name, loss):
    """Fit and predict model ``name`` with ``loss`` on its small data, in this
    process (a worker of :func:`precompile`): ``(status, seconds)``, the
    status ``'ok'``, ``'n/a'`` (the loss is intractable for this model) or
    the error message."""
    import warnings

    import structlearn
    from .structures.base import IntractableError

    t0 = time.perf_counter()
    cls, kwargs, _ = PRECOMPILE_MODELS[name]
    X, y = _data(name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # two iterations do not converge
            est = getattr(structlearn, cls)(loss=loss, max_iter=2, **kwargs)
            est.fit(X, y).predict(X)
            if est._lbfgs_warm_up and est.solver_ == "lbfgs":
                # solver='auto' starts L-BFGS on large data from SGD passes
                # (``_initial_point``), whose kernels these small data skip
                est.set_params(solver="sgd", max_iter=1).fit(X, y)
    except IntractableError:
        return "n/a", time.perf_counter() - t0
    except Exception as e:   # reported, the other models still compile
        return f"{type(e).__name__}: {e}", time.perf_counter() - t0
    return "ok", time.perf_counter() - t0


def _check_n_jobs(n_jobs):
    if n_jobs is None:
        return os.cpu_count() or 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int):
        raise TypeError(f"n_jobs must be an int or None, got {type(n_jobs).__name__}.")
    if n_jobs == -1:
        return os.cpu_count() or 1
    if n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive int, -1 (every core) or None, "
                         f"got {n_jobs}.")
    return n_jobs


def _names(value, what):
    """``value`` (a str or an iterable of str) as a list of str."""
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{what} must be a str or a list of str, got "
                        f"{type(value).__name__}.") from None
    if not all(isinstance(x, str) for x in names):
        raise TypeError(f"{what} must be a str or a list of str, got {names!r}.")
    return names


def _tasks(models, losses):
    """The (model, loss) pairs to compile, in ``PRECOMPILE_MODELS``'s order."""
    from .losses import LOSSES

    if models is None:
        models = list(PRECOMPILE_MODELS)
    models = _names(models, "models")
    unknown = [m for m in models if m not in PRECOMPILE_MODELS]
    if unknown or not models:
        raise ValueError(f"unknown model(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"use names from {', '.join(PRECOMPILE_MODELS)}.")
    if isinstance(losses, str) and losses in ("default", "all"):
        names = None if losses == "default" else list(LOSSES)
    else:
        names = _names(losses, "losses")
        bad = [x for x in names if x not in LOSSES]
        if bad or not names:
            raise ValueError(f"losses must be 'default', 'all' or loss names from "
                             f"{', '.join(LOSSES)}; got {losses!r}.")
    return [(m, loss) for m in PRECOMPILE_MODELS if m in models
            for loss in (names or [PRECOMPILE_MODELS[m][2]])]


def precompile(models=None, losses="default", n_jobs=None, verbose=1):
    """Compile the Numba kernels of the chosen models now, in parallel.

    Runs a two-iteration fit and a predict of each (model, loss) pair on a
    few bundled sentences or rows, in ``n_jobs`` worker processes (each a
    fresh interpreter, started with the ``spawn`` method), so that the
    kernels land in Numba's on-disk cache: later processes load them in
    about a second instead of compiling them on their first fit.  Only the
    cache is the result; the workers' models are discarded.

    Parameters
    ----------
    models : str or list of str, default=None
        Names from ``structlearn._precompile.PRECOMPILE_MODELS``
        (``'DependencyParser'``,
        ``'SegmentTagger'``, ``'SequenceTagger'``, ``'LabelRanker'``,
        ``'LabelRanker-birkhoff'``, ``'OrdinalRegressor'``,
        ``'MultiLabelClassifier'``); None: all of them.  The parser is
        compiled labelled (its DEPREL labeller is a sequence tagger), which
        also covers an unlabelled parser.
    losses : {'default', 'all'} or list of str, default='default'
        Each model's default loss, every loss, or these loss names (pairs a
        model cannot train, e.g. the CRF of a ranking, are skipped and
        reported as ``'n/a'``).
    n_jobs : int, default=None
        Worker processes; None or -1: one per CPU core.  Kernels shared by
        two models may be compiled by two workers at once (the cache keeps
        one copy).
    verbose : int, default=1
        0: silent; 1: one line per pair as it finishes, and the total.

    Returns
    -------
    results : list of dict
        Per pair, in the order they finished: ``model``, ``loss``,
        ``status`` (``'ok'``, ``'n/a'`` or the error) and ``seconds`` (wall
        time of its fit + predict in its worker, compilation included).

    Raises
    ------
    RuntimeError
        When a pair failed (after every other pair ran); the message names
        each failure.

    Notes
    -----
    The cache lives where Numba keeps it for the installed package
    (``__pycache__`` beside structlearn's modules, or ``NUMBA_CACHE_DIR``),
    and is valid for this Python, Numba, structlearn and CPU; after an
    upgrade run it again.  What is compiled depends on the types of the
    arrays the kernels receive: the estimators' validation fixes them, so
    the tiny fits compile what real data uses, except the kernels that only
    some data needs (e.g. the CRF's log-space fallback for very large
    scores), which compile on their first use; the fixed-size estimators
    are fitted on dense arrays (a sparse ``X`` may compile more on its first
    fit), with their default options (``solver='auto'``: another solver
    compiles its own kernels).  Worker processes use the
    ``spawn`` method: a script that calls this at module level needs the
    ``if __name__ == '__main__':`` guard.
    """
    tasks = _tasks(models, losses)
    workers = min(_check_n_jobs(n_jobs), len(tasks))
    if verbose:
        print(f"[precompile] {len(tasks)} (model, loss) pair(s) in {workers} process(es)",
              flush=True)
    t0 = time.perf_counter()
    results = []
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = {pool.submit(_compile_one, m, loss): (m, loss) for m, loss in tasks}
        for f in as_completed(futures):
            m, loss = futures[f]
            try:
                status, seconds = f.result()
            except Exception as e:   # a worker that died (e.g. out of memory)
                status, seconds = f"{type(e).__name__}: {e}", float("nan")
            results.append({"model": m, "loss": loss, "status": status,
                            "seconds": seconds})
            if verbose:
                print(f"[precompile] {m} (loss={loss!r}): {status}, {seconds:.1f} s",
                      flush=True)
    if verbose:
        print(f"[precompile] done in {time.perf_counter() - t0:.1f} s", flush=True)
    failed = [r for r in results if r["status"] not in ("ok", "n/a")]
    if failed:
        raise RuntimeError("precompile failed for " + "; ".join(
            f"{r['model']} (loss={r['loss']!r}): {r['status']}" for r in failed))
    return results
