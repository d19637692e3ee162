"""Numba compile time: cold (empty cache) and warm (cache filled) starts.

Each measurement runs in a fresh interpreter with ``NUMBA_CACHE_DIR``
pointing at a private directory: the first run of a scenario starts from an
empty cache (what a user meets right after ``pip install``), the following
``--repeat`` runs reuse the cache that the first one wrote.  A scenario
times ``import structlearn`` and then the first fit + predict of one
estimator on a small slice of bundled data (so the time is compilation and
cache loading, not training).

    python benchmarks/micro/bench_compile.py [--repeat 2] [--out compile]

(``--out compile`` writes ``benchmarks/results/compile.md``; without it the
table is printed only.)  Absolute times depend on the machine and its load;
compare the rows.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import PINNED, common_parser, out_stem, parse_args, write_text  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402

SCENARIOS = {
    "import only": "",
    "LabelRanker (projection)": """
        from structlearn.datasets import load_label_ranking
        X, Y = load_label_ranking('iris')
        structlearn.LabelRanker(max_iter=2).fit(X, Y).predict(X)""",
    "OrdinalRegressor (crf)": """
        from structlearn.datasets import load_wine_quality
        X, y = load_wine_quality('red')
        structlearn.OrdinalRegressor(loss='crf', max_iter=2).fit(X[:200], y[:200]).predict(X)""",
    "MultiLabelClassifier (sparsemap)": """
        import numpy as np
        rng = np.random.RandomState(0)
        X, Y = rng.randn(50, 4), (rng.rand(50, 5) > 0.5).astype(int)
        structlearn.MultiLabelClassifier(loss='sparsemap', max_iter=2).fit(X, Y).predict(X)""",
    "SequenceTagger (crf)": """
        from structlearn.datasets import load_ewt_pos
        X, y = load_ewt_pos('test')
        structlearn.SequenceTagger(loss='crf', max_iter=2).fit(X[:50], y[:50]).predict(X[:50])""",
    "SequenceTagger (hinge)": """
        from structlearn.datasets import load_ewt_pos
        X, y = load_ewt_pos('test')
        structlearn.SequenceTagger(loss='hinge', max_iter=1).fit(X[:50], y[:50]).predict(X[:50])""",
    "DependencyParser (crf)": """
        from structlearn.datasets import load_ewt
        s = load_ewt('test')[:30]
        X, y = [t.tokens for t in s], [t.heads for t in s]
        structlearn.DependencyParser(loss='crf', max_iter=2).fit(X, y).predict(X)""",
    "DependencyParser (sparsemap)": """
        from structlearn.datasets import load_ewt
        s = load_ewt('test')[:30]
        X, y = [t.tokens for t in s], [t.heads for t in s]
        structlearn.DependencyParser(loss='sparsemap', max_iter=2).fit(X, y).predict(X)""",
}

_RUNNER = """
import json, time, warnings
warnings.simplefilter('ignore')
t0 = time.perf_counter()
import structlearn
t1 = time.perf_counter()
{body}
t2 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first_call": t2 - t1}}))
"""


def run(body, cache_dir):
    # a user's environment: without the thread limits _common sets for the benchmarks
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env["NUMBA_CACHE_DIR"] = cache_dir
    code = _RUNNER.format(body=textwrap.indent(textwrap.dedent(body), ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="--repeat: warm runs per scenario",
        parents=[common_parser("repeat", "out", "no_write", repeat=2)])
    parser.add_argument("--only", default=None, help="run scenarios whose name contains this")
    args = parse_args(parser, argv)
    rows = []
    for name, body in SCENARIOS.items():
        if args.only and args.only not in name:
            continue
        with tempfile.TemporaryDirectory() as cache:
            cold = run(body, cache)
            warm = [run(body, cache) for _ in range(args.repeat)]
        w_imp = min(w["import"] for w in warm)
        w_call = min(w["first_call"] for w in warm)
        rows.append((name, cold["import"], cold["first_call"], w_imp, w_call))
        print(f"{name:34s} cold import {cold['import']:6.1f} s, first fit {cold['first_call']:6.1f} s"
              f" | warm import {w_imp:5.2f} s, first fit {w_call:5.2f} s", flush=True)
    lines = ["| scenario | cold import (s) | cold first fit+predict (s) | warm import (s) "
             "| warm first fit+predict (s) |", "|---|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]:.1f} | {r[2]:.1f} | {r[3]:.2f} | {r[4]:.2f} |" for r in rows]
    table = "\n".join(lines)
    print(table)
    stem = out_stem(args, None)
    if stem:
        path = write_text(
            stem, "Numba compile time (`python benchmarks/micro/bench_compile.py`); each row "
            "a fresh interpreter, cold = empty NUMBA_CACHE_DIR.\n\n" + table + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
