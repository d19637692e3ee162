"""The chain kernels of two checkouts side by side: one CRF evaluation and
one Viterbi prediction on CoNLL-2000, one thread.

A change that saves compile time must not cost run time.  Each checkout
runs in its own long-lived interpreter (``PYTHONPATH`` set to it) that
prepares the workloads once, untimed (so Numba compiles or loads its
kernels first); the driver then asks the two interpreters in turn, ABBA
order, for one timed call each (process CPU seconds, one thread; wall
seconds before results ``chain_kernels_ab_eval_pre20.md``), so that every
ratio is taken side by side on a noisy machine.  Each interpreter prepares
only the workloads of ``--modes``; ``eval`` captures its problem from a fit
(no private API), so it also runs against older checkouts.  Workloads:

* ``eval``: the CRF ``value_and_grad`` of :class:`structlearn.SequenceTagger`
  on CoNLL-2000 train (the fused kernel ``kernels.linear.chain_crf_value_grad``)
  at fixed random weights;
* ``predict``: the scores of CoNLL-2000 test (2,012 sentences) from a model
  fitted with 5 L-BFGS iterations, and their Viterbi decoding
  (``TokenFeatureMap.scores`` + ``Chain.argmax``: the kernels of
  ``predict`` after feature extraction);
* ``predict_full``: ``SequenceTagger.predict`` on the same sentences
  (feature extraction included);
* ``segment_fit``, ``segment_predict``: a CRF :class:`structlearn.SegmentTagger`
  (20 L-BFGS iterations) on noun chunks of 1,000 sentences of UD English
  EWT train (runs of nouns and proper nouns, as in ``bench_compile.py``),
  and its prediction of those sentences.

Usage (the baseline a ``git archive <commit> | tar -x -C DIR``)::

    python benchmarks/micro/bench_chain_kernels_ab.py DIR . [--repeat 15]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import common_parser, md_table, out_stem, parse_args, write_text  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402

_WORKER = r"""
import json, sys, time, warnings
sys.path.insert(0, {bench!r})
from _common import conll2000_xy  # pins BLAS threads
warnings.simplefilter('ignore')
import numpy as np
from structlearn import SequenceTagger
modes = {modes!r}
work = {{}}
ready = 0
X, y = conll2000_xy('train')
Xt, _ = conll2000_xy('test')
if 'eval' in modes:
    # the problem a CRF fit hands to L-BFGS, captured there (no private
    # preparation API, so that older checkouts run it too)
    import structlearn.estimators._base as base
    got = {{}}
    class _Captured(Exception):
        pass
    def grab(problem, alpha, z0, **kw):
        got['problem'] = problem
        raise _Captured
    base.lbfgs, real = grab, base.lbfgs
    try:
        SequenceTagger(loss='crf', n_jobs=1).fit(X, y)
    except _Captured:
        pass
    base.lbfgs = real
    prob = got['problem']
    z = np.random.default_rng(0).normal(scale=0.3, size=prob.n_params)
    prob.value_and_grad(z)
    work['eval'] = lambda: prob.value_and_grad(z)
if 'predict' in modes or 'predict_full' in modes:
    fitted = SequenceTagger(loss='crf', max_iter=5, n_jobs=1).fit(X, y)
    Xtok, kept_off, lengths, keep = fitted._batches(Xt)
    fmap = fitted._prediction_map(Xtok, kept_off)
    batch = fitted._batch(fmap, 0, fmap.n_samples)
    def predict():
        return batch.structure.argmax(fmap.scores(fitted._z, batch))
    ready = int(np.sum(predict()))
    fitted.predict(Xt[:10])
    work['predict'] = predict
    work['predict_full'] = lambda: fitted.predict(Xt)
if 'segment_fit' in modes or 'segment_predict' in modes:
    from structlearn import SegmentTagger
    from structlearn.datasets import load_ewt_pos
    Xs, tags = load_ewt_pos('train')
    Xs, tags = Xs[:1000], tags[:1000]
    ys = [['O' if t not in ('NOUN', 'PROPN') else
           ('I-NP' if i and s[i - 1] in ('NOUN', 'PROPN') else 'B-NP')
           for i, t in enumerate(s)] for s in tags]
    seg = SegmentTagger(loss='crf', max_iter=2, n_jobs=1).fit(Xs[:20], ys[:20])
    seg.predict(Xs[:20])
    def seg_fit():
        global seg
        seg = SegmentTagger(loss='crf', max_iter=20, tol=1e-12, n_jobs=1).fit(Xs, ys)
    work['segment_fit'] = seg_fit
    work['segment_predict'] = lambda: seg.predict(Xs)
print(json.dumps({{'ready': ready}}), flush=True)
for line in sys.stdin:
    mode = line.strip()
    c0, t0 = time.process_time(), time.perf_counter()
    work[mode]()
    print(json.dumps({{'t': time.perf_counter() - t0, 'cpu': time.process_time() - c0}}),
          flush=True)
"""


def start(checkout, modes):
    # os.environ holds the thread limits _common set (one BLAS thread)
    env = dict(os.environ, PYTHONPATH=str(Path(checkout).resolve()))
    code = _WORKER.format(bench=str(Path(__file__).resolve().parents[1]), modes=modes)
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd="/")
    return p


def ask(p, mode):
    """Seconds of one timed call: process CPU (one thread: holds better on a
    busy machine)."""
    p.stdin.write(mode + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())["cpu"]


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("repeat", "out", "no_write", repeat=15)])
    ap.add_argument("a", help="checkout A (e.g. the baseline)")
    ap.add_argument("b", help="checkout B")
    ap.add_argument("--modes", default="eval,predict,predict_full,segment_fit,segment_predict")
    args = parse_args(ap, argv)
    modes = args.modes.split(",")
    procs = [start(args.a, modes), start(args.b, modes)]
    ready = [json.loads(p.stdout.readline())["ready"] for p in procs]
    print(f"ready (sum of predicted tags: {ready})", flush=True)
    rows = []
    for mode in modes:
        ta, tb = [], []
        for r in range(args.repeat):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for side in order:
                (ta if side == 0 else tb).append(ask(procs[side], mode))
        ratios = np.array(tb) / np.array(ta)
        rows.append([mode, f"{np.median(ta):.4f}", f"{np.median(tb):.4f}",
                     f"{np.median(tb) / np.median(ta):.3f}",
                     f"{np.median(ratios):.3f} ({ratios.min():.2f}-{ratios.max():.2f})"])
        print(rows[-1], flush=True)
    for p in procs:
        p.stdin.close()
        p.wait()
    table = md_table(["workload", "A median (s)", "B median (s)", "B / A (medians)",
                      "B / A per round, median (range)"], rows)
    print(table)
    stem = out_stem(args, None)
    if stem:
        path = write_text(stem, f"# Chain kernels side by side\n\nA = `{args.a}`, B = "
                                f"`{args.b}`, {args.repeat} rounds, ABBA order.\n\n"
                                + table + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
