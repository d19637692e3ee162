"""Two checkouts of structlearn side by side: fit and predict times, A/B.

Each measurement runs in a fresh interpreter with ``PYTHONPATH`` set to one
checkout (after an untimed warm-up fit, so Numba's kernel loading is not
timed); the two checkouts alternate in ABBA order over ``--repeat`` rounds
and each round also times CRFsuite (when sklearn-crfsuite is installed), so
that every ratio is taken side by side; the fit is timed in wall and CPU
seconds (one thread: the CPU ratio holds better on a busy machine).
Workloads, one thread each:

* ``crf``: SequenceTagger(loss='crf') on CoNLL-2000 train (8,936 sentences,
  40 L-BFGS iterations; CRFsuite the same), predict test;
* ``perceptron``: 10 averaged-perceptron epochs (CRFsuite 'ap' the same);
* ``parser``: DependencyParser(loss='crf') on the bundled EWT slice (1,000
  sentences, 30 iterations), predict 1,300 sentences (best of 3);
* ``birkhoff-aslack``: LabelRanker(polytope='birkhoff',
  loss='hinge-approx-slack', solver='sgd', max_iter=10) on 2,000 synthetic
  rankings of 8 labels (a noisy linear model of 20 features), predict them;
* ``chain-aslack``: SequenceTagger(loss='hinge-approx-slack', solver='sgd',
  max_iter=10) on the first 2,000 CoNLL-2000 train sentences, predict test;
* ``parser-aslack``: DependencyParser(loss='hinge-approx-slack',
  solver='sgd', max_iter=3) on the first 500 sentences of the bundled EWT
  slice (the structures' generic search, batched), predict the test part.

Usage (a checkout of an older commit with ``git worktree add /tmp/base REV``)::

    python benchmarks/micro/ab_checkouts.py /tmp/base . --repeat 3
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def measure(mode):
    """One timed fit / predict in this interpreter, as a dict."""
    sys.path.insert(0, str(HERE.parent))
    from _common import conll2000_xy  # noqa: F401  (pins BLAS threads)

    warnings.simplefilter("ignore")
    import structlearn

    if mode == "birkhoff-aslack":
        import numpy as np
        from structlearn import LabelRanker
        rng = np.random.default_rng(3)
        X = rng.normal(size=(2000, 20))
        S = X @ rng.normal(size=(20, 8)) + rng.normal(size=(2000, 8))
        y = np.argsort(np.argsort(-S, axis=1), axis=1) + 1   # rankings, 1 = first
        Xt = X
        LabelRanker(polytope="birkhoff", loss="hinge-approx-slack", solver="sgd",
                    max_iter=2).fit(X[:50], y[:50])
        est = LabelRanker(polytope="birkhoff", loss="hinge-approx-slack", solver="sgd",
                          max_iter=10, random_state=0)
    elif mode == "chain-aslack":
        from structlearn import SequenceTagger
        X, y = conll2000_xy("train")
        X, y = X[:2000], y[:2000]
        Xt, _ = conll2000_xy("test")
        SequenceTagger(loss="hinge-approx-slack", solver="sgd", max_iter=2,
                       n_jobs=1).fit(X[:20], y[:20])
        est = SequenceTagger(loss="hinge-approx-slack", solver="sgd", max_iter=10,
                             random_state=0, n_jobs=1)
    elif mode == "parser-aslack":
        from structlearn import DependencyParser
        from structlearn.datasets import load_ewt
        tr, te = load_ewt("train")[:500], load_ewt("test")
        X, y = [s.tokens for s in tr], [s.heads for s in tr]
        Xt = [s.tokens for s in te]
        DependencyParser(loss="hinge-approx-slack", solver="sgd", max_iter=1,
                         n_jobs=1).fit(X[:20], y[:20]).predict(Xt[:5])
        est = DependencyParser(loss="hinge-approx-slack", solver="sgd", max_iter=3,
                               random_state=0, n_jobs=1)
    elif mode == "parser":
        from structlearn import DependencyParser
        from structlearn.datasets import load_ewt
        tr, te = load_ewt("train"), load_ewt("test")
        X, y = [s.tokens for s in tr], [s.heads for s in tr]
        Xt = [s.tokens for s in te] + X
        DependencyParser(loss="crf", max_iter=2, n_jobs=1).fit(X[:20], y[:20]).predict(Xt[:5])
        est = DependencyParser(loss="crf", max_iter=30, tol=1e-12, n_jobs=1)
    else:
        X, y = conll2000_xy("train")
        Xt, _ = conll2000_xy("test")
        if mode.startswith("crfsuite"):
            import sklearn_crfsuite
            est = (sklearn_crfsuite.CRF(algorithm="lbfgs", c2=1.0, max_iterations=40)
                   if mode == "crfsuite" else
                   sklearn_crfsuite.CRF(algorithm="ap", max_iterations=10))
        else:
            from structlearn import SequenceTagger
            SequenceTagger(loss=mode, max_iter=2, n_jobs=1).fit(X[:20], y[:20])
            est = (SequenceTagger(loss="crf", alpha=2.0 / len(X), max_iter=40, tol=1e-12,
                                  n_jobs=1) if mode == "crf" else
                   SequenceTagger(loss="perceptron", max_iter=10, n_jobs=1, random_state=0))
    t, c = time.perf_counter(), time.process_time()
    est.fit(X, y)
    fit, fit_cpu = time.perf_counter() - t, time.process_time() - c
    pred = []
    for _ in range(3 if mode == "parser" else 1):
        t = time.perf_counter()
        est.predict(Xt)
        pred.append(time.perf_counter() - t)
    return {"mode": mode, "src": str(Path(structlearn.__file__).parents[1]),
            "fit": round(fit, 3), "fit_cpu": round(fit_cpu, 3), "predict": round(min(pred), 3),
            "n_iter": None if getattr(est, "n_iter_", None) is None else int(est.n_iter_)}


def run(checkout, mode):
    env = dict(os.environ, PYTHONPATH=str(Path(checkout).resolve()))
    out = subprocess.run([sys.executable, __file__, "--measure", mode], env=env,
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(r), flush=True)
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("a", nargs="?", help="checkout A (e.g. the older commit)")
    p.add_argument("b", nargs="?", help="checkout B")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--modes", default="crf,perceptron,parser")
    p.add_argument("--measure", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    import importlib.util
    peers = importlib.util.find_spec("sklearn_crfsuite") is not None
    rows = []
    for rep in range(args.repeat):
        for mode in args.modes.split(","):
            if rep % 2 == 0:            # ABBA: A first in even rounds, B first in odd ones
                a = run(args.a, mode)
                b = run(args.b, mode)
            else:
                b = run(args.b, mode)
                a = run(args.a, mode)
            peer = ({"crf": "crfsuite", "perceptron": "crfsuite-ap"}.get(mode)
                    if peers else None)
            ref = run(args.b, peer)["fit"] if peer else None
            rows.append((rep, mode, a, b, ref))
    print("\n| round | workload | fit A (s) | fit B (s) | B/A fit | B/A fit CPU | B/A predict | "
          "B / CRFsuite fit |\n|---|---|---:|---:|---:|---:|---:|---:|")
    for rep, mode, a, b, ref in rows:
        peer = "" if ref is None else f"{b['fit'] / ref:.2f}"
        print(f"| {rep + 1} | {mode} | {a['fit']:.1f} | {b['fit']:.1f} | "
              f"{b['fit'] / a['fit']:.2f} | {b['fit_cpu'] / a['fit_cpu']:.2f} | "
              f"{b['predict'] / a['predict']:.2f} | {peer} |")


if __name__ == "__main__":
    main()
