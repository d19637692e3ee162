"""Where a CoNLL-2000 CRF fit's CPU time goes: the L-BFGS evaluations, the
solver's own work, and the rest (validation, features, support).

One fit of ``SequenceTagger(loss='crf', alpha=2/n, n_jobs=1, max_iter=40)``
on CoNLL-2000 train (as ``ab_checkouts.py``'s ``crf`` workload), with the
problem's ``value_and_grad`` counted and timed (process CPU).  Prints one
JSON line.  Run it under ``PYTHONPATH=<checkout>`` for two checkouts in
alternation to split an A/B difference of the whole fit::

    for r in 1 2 3; do for c in /tmp/base .; do
        PYTHONPATH=$c python benchmarks/micro/bench_crf_fit_split.py; done; done
"""

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import conll2000_xy  # noqa: E402  (first: pins BLAS threads)

import json  # noqa: E402
import os  # noqa: E402

import structlearn.estimators._base as base  # noqa: E402
from structlearn import SequenceTagger  # noqa: E402


def main():
    warnings.simplefilter("ignore")
    X, y = conll2000_xy("train")
    calls, spent = [0], [0.0]
    solver = base.lbfgs
    split = {}

    def timed_lbfgs(problem, *args, **kwargs):
        vg = problem.value_and_grad

        def counted(*a, **k):
            calls[0] += 1
            t = time.process_time()
            r = vg(*a, **k)
            spent[0] += time.process_time() - t
            return r

        problem.value_and_grad = counted
        t = time.process_time()
        r = solver(problem, *args, **kwargs)
        split["lbfgs"] = time.process_time() - t
        return r

    base.lbfgs = timed_lbfgs
    t = time.process_time()
    est = SequenceTagger(loss="crf", alpha=2.0 / len(X), n_jobs=1, max_iter=40).fit(X, y)
    fit = time.process_time() - t
    print(json.dumps({"checkout": os.environ.get("PYTHONPATH", "."), "fit": round(fit, 2),
                      "evaluations": calls[0], "evaluation CPU": round(spent[0], 2),
                      "solver's own": round(split["lbfgs"] - spent[0], 2),
                      "rest of the fit": round(fit - split["lbfgs"], 2),
                      "n_iter": int(est.n_iter_), "objective": est.objective_}))


if __name__ == "__main__":
    main()
