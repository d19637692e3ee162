"""The parser's token attributes (``ArcVectorizer.transform``): CPU
microseconds per sentence of UD English EWT dev, split into reading the
token dicts (``sentence_attributes``) and mapping the strings to ids.

The step runs in Python before the arc kernel, serially (it holds the GIL),
so it bounds ``DependencyParser.predict`` with threads.  For an A/B of two
checkouts run it under each, alternating::

    for r in 1 2 3; do for c in /tmp/base .; do
        PYTHONPATH=$c python benchmarks/micro/bench_token_attributes.py; done; done

``--model``: a pickled fitted DependencyParser (its vocabularies); without
it an ArcVectorizer is fitted on ``--fit`` EWT train sentences.
"""

import argparse
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ewt_parsing_xy  # noqa: E402

import structlearn  # noqa: E402
from structlearn.feature_extraction import ArcVectorizer  # noqa: E402
from structlearn.feature_extraction._arcs import sentence_attributes  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--fit", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if args.model:
        with open(args.model, "rb") as fh:
            vec = pickle.load(fh).vectorizer_
    else:
        Xt, yt = ewt_parsing_xy("train")
        vec = ArcVectorizer().fit(Xt[:args.fit], yt[:args.fit])
    X, _ = ewt_parsing_xy("dev")
    best_read = best_ids = float("inf")
    for _ in range(args.repeat):
        t0 = time.process_time()
        cols, _ = sentence_attributes(X, prefix_length=vec.prefix_length)
        t1 = time.process_time()
        vec._ids(cols, vec.vocabularies_)
        t2 = time.process_time()
        best_read, best_ids = min(best_read, t1 - t0), min(best_ids, t2 - t1)
    n = len(X)
    print(f"{Path(structlearn.__file__).parents[1]}: {n} sentences; reading "
          f"{best_read / n * 1e6:.1f}, ids {best_ids / n * 1e6:.1f}, total "
          f"{(best_read + best_ids) / n * 1e6:.1f} CPU us per sentence (best of {args.repeat})")


if __name__ == "__main__":
    main()
