"""One CRF training evaluation (loss and gradient) on CoNLL-2000: the fused
per-sequence kernel against the generic path.

The CRF fit of :class:`structlearn.SequenceTagger` spends nearly all its
time in the chain problem's ``value_and_grad`` (one call per L-BFGS evaluation).
With ``loss='crf'`` that call runs the fused kernel
``kernels.linear.chain_crf_value_grad``; a subclass of ``CRF`` takes the
generic path (batch scores, the loss object, reduced gradient), which every
other loss takes.  Both are timed here, alternately, at the same random
weights, with 1 and 2 threads; the table gives the minimum and median over
the repeats and the ratio of medians (side by side, so the ratio holds on a
noisy machine).  The two paths must agree (checked before timing).

Usage::

    python benchmarks/micro/bench_crf_eval.py [--repeat 9]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import SequenceTagger  # noqa: E402
from structlearn.estimators.sequence import chain_problem  # noqa: E402
from structlearn.losses import CRF  # noqa: E402


class GenericCRF(CRF):
    """The CRF loss through the generic path (declared not to be the Gibbs
    likelihood, so that the problem does not fuse it)."""

    gibbs_likelihood = False


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("repeat", "out", "no_write", "data", repeat=9,
                               out="crf_eval")])
    args = parse_args(ap, argv)
    X, y = conll2000_xy("train")
    est = SequenceTagger(loss="crf")
    vec, tokens, tok_off, y_int, classes, sup_ptr, sup_label, d, _, _, _ = \
        est._prepare(X, y, CRF(), False)
    K = len(classes)
    rows = []
    for n_jobs in (1, 2):
        probs = {name: chain_problem(tokens, tok_off, y_int, K, sup_ptr, sup_label, loss,
                                     True, n_jobs)
                 for name, loss in (("fused", CRF()), ("generic", GenericCRF()))}
        z = np.random.default_rng(0).normal(scale=0.3, size=probs["fused"].n_params)
        (v1, g1), (v2, g2) = (p.value_and_grad(z) for p in probs.values())  # + warm-up
        np.testing.assert_allclose(v1, v2, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-8)
        times = {name: [] for name in probs}
        for _ in range(args.repeat):
            for name, p in probs.items():
                t0 = time.perf_counter()
                p.value_and_grad(z)
                times[name].append(time.perf_counter() - t0)
        med = {name: float(np.median(t)) for name, t in times.items()}
        for name, t in times.items():
            rows.append([str(n_jobs), name, f"{min(t):.3f}", f"{med[name]:.3f}",
                         f"{med[name] / med['generic']:.2f}"])
        print(rows[-2], rows[-1], flush=True)
    text = ["# One CRF evaluation on CoNLL-2000: fused kernel vs generic path", "",
            f"Command: `python benchmarks/micro/bench_crf_eval.py --repeat {args.repeat}`; "
            f"{len(y_int)} tokens, {K} tags, {int(sup_ptr[-1])} support weights.", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), "",
            md_table(["threads", "path", "min (s)", "median (s)", "median / generic"], rows),
            ""]
    stem = out_stem(args, "crf_eval")
    if stem:
        path = write_text(stem, "\n".join(text))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
