"""Numba compile time: cold (empty cache) and warm (cache filled) starts.

Each measurement runs in a fresh interpreter with ``NUMBA_CACHE_DIR``
pointing at a private directory: the first run of a scenario starts from an
empty cache (what a user meets right after ``pip install``), the following
``--repeat`` runs reuse the cache that the first one wrote.  A scenario
times ``import structlearn`` and then the first fit + predict of one
estimator with one loss on a small slice of bundled data (so the time is
compilation and cache loading, not training).  ``import structlearn``
imports its estimators on first access, so the import step also fetches
the scenario's estimator class (``from structlearn import X``; all six
for "import only"): that is where scikit-learn, SciPy and Numba are
imported.  The scenarios are every
estimator with every loss it accepts (``--defaults``: each estimator's
default loss only).

    python benchmarks/micro/bench_compile.py [--defaults] [--only TEXT] [--repeat 2]
                                             [--kernels] [--profile] [--out compile]

``--kernels`` lists, per scenario, the kernels Numba compiled in the cold
run (exclusive seconds, number of type signatures) and any kernel compiled
again in a warm run (a cache that does not hit).  ``--profile`` adds, per
scenario, a table of every kernel compiled cold with each of its type
signatures and the exclusive CPU seconds of each (a kernel's compilation
minus that of the kernels compiled inside it, e.g. its callees), slowest
first: what a first fit spends its time on.  ``--out compile`` writes
``benchmarks/results/compile.md``; without it the table is printed only.
Absolute times depend on the machine and its load; compare the rows.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import PINNED, command_line, common_parser, out_stem, parse_args, write_text  # noqa: E402,E501

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import textwrap  # noqa: E402

# data of each estimator (small slices: the fit is compilation, not training)
_DATA = {
    "LabelRanker": """
        from structlearn.datasets import load_label_ranking
        X, y = load_label_ranking('iris')
        Xp = X""",
    "LabelRanker-birkhoff": """
        from structlearn.datasets import load_label_ranking
        X, y = load_label_ranking('iris')
        Xp = X""",
    "OrdinalRegressor": """
        from structlearn.datasets import load_wine_quality
        X, y = load_wine_quality('red')
        X, y = X[:200], y[:200]
        Xp = X""",
    "MultiLabelClassifier": """
        import numpy as np
        rng = np.random.RandomState(0)
        X, y = rng.randn(50, 4), (rng.rand(50, 5) > 0.5).astype(int)
        Xp = X""",
    "SequenceTagger": """
        from structlearn.datasets import load_ewt_pos
        X, y = load_ewt_pos('test')
        X, y = X[:50], y[:50]
        Xp = X""",
    "SegmentTagger": """
        from structlearn.datasets import load_ewt_pos
        X, tags = load_ewt_pos('test')
        X, tags = X[:50], tags[:50]
        # noun chunks as a toy segmentation: runs of nouns and proper nouns
        y = [['O' if t not in ('NOUN', 'PROPN') else
              ('I-NP' if i and s[i - 1] in ('NOUN', 'PROPN') else 'B-NP')
              for i, t in enumerate(s)] for s in tags]
        Xp = X""",
    "DependencyParser": """
        from structlearn.datasets import load_ewt
        s = load_ewt('test')[:30]
        X, y = [t.tokens for t in s], [t.heads for t in s]
        Xp = X""",
}

_ALL = ("perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn", "crf",
        "sparsemap", "m-sparsemap", "projection", "squared")
# rankings: no marginals (#P-hard), no exact slack scaling
_NO_CRF = tuple(loss for loss in _ALL if loss not in ("crf", "hinge-slack"))
#: estimator -> (constructor, default loss, the losses it accepts)
ESTIMATORS = {
    "LabelRanker": ("LabelRanker", "projection", _NO_CRF),
    "LabelRanker-birkhoff": ("LabelRanker", "projection", _NO_CRF),
    "OrdinalRegressor": ("OrdinalRegressor", "projection", _ALL),
    "MultiLabelClassifier": ("MultiLabelClassifier", "projection", _ALL),
    "SequenceTagger": ("SequenceTagger", "crf", _ALL),
    "SegmentTagger": ("SegmentTagger", "crf", _ALL),
    "DependencyParser": ("DependencyParser", "crf", _ALL),
}
_EXTRA = {"LabelRanker-birkhoff": "polytope='birkhoff', "}
_CLASSES = sorted({cls for cls, _, _ in ESTIMATORS.values()})


def scenario(est, loss):
    """The body of one scenario: data, then the first fit + predict."""
    cls = ESTIMATORS[est][0]
    return (textwrap.dedent(_DATA[est]) + "\n"
            f"structlearn.{cls}({_EXTRA.get(est, '')}loss={loss!r}, max_iter=2)"
            ".fit(X, y).predict(Xp)\n")


_RUNNER = """
import json, time, warnings
warnings.simplefilter('ignore')
from numba.core import event
compiles = []
class _L(event.Listener):
    def on_start(self, ev):
        compiles.append([ev.data['dispatcher'].py_func.__module__ + '.' +
                         ev.data['dispatcher'].py_func.__qualname__, time.process_time(), None])
        sigs.append(', '.join(str(a) for a in ev.data['args']))
        stack.append(len(compiles) - 1)
    def on_end(self, ev):
        compiles[stack.pop()][2] = time.process_time()
stack = []
sigs = []
event.register('numba:compile', _L())
t0, c0 = time.perf_counter(), time.process_time()
import structlearn
{imports}
t1, c1 = time.perf_counter(), time.process_time()
{body}
t2, c2 = time.perf_counter(), time.process_time()
# exclusive compile time per kernel: a kernel's time minus the nested ones
order = sorted(range(len(compiles)), key=lambda i: compiles[i][1])
spans = [compiles[i] for i in order]
excl = {{}}
count = {{}}
signatures = {{}}
for i, (name, a, b) in enumerate(spans):
    inner = 0.0
    end = a
    for name2, a2, b2 in spans[i + 1:]:
        if a2 >= b:
            break
        if a2 >= end:         # a direct child (skip grandchildren)
            inner += b2 - a2
            end = b2
    excl[name] = excl.get(name, 0.0) + (b - a) - inner
    count[name] = count.get(name, 0) + 1
    signatures.setdefault(name, []).append([sigs[order[i]], (b - a) - inner])
print(json.dumps({{"import": t1 - t0, "first_call": t2 - t1,
                   "import_cpu": c1 - c0, "first_call_cpu": c2 - c1,
                   "compiled": {{k: [excl[k], count[k]] for k in excl}},
                   "signatures": signatures}}))
"""


def run(body, cache_dir, checkout=None):
    # a user's environment: without the thread limits _common sets for the benchmarks
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env["NUMBA_CACHE_DIR"] = cache_dir
    if checkout:
        env["PYTHONPATH"] = checkout
    # the estimator classes the body uses are imported in the timed import step
    used = [c for c in _CLASSES if f"structlearn.{c}(" in body] or list(_CLASSES)
    code = _RUNNER.format(body=body, imports="from structlearn import " + ", ".join(used))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=checkout)
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(body, repeat, checkout=None):
    """One cold run and ``repeat`` warm runs; None when the scenario fails."""
    with tempfile.TemporaryDirectory() as cache:
        cold = run(body, cache, checkout)
        if "error" in cold:
            return cold
        warm = [run(body, cache, checkout) for _ in range(repeat)]
    best = min(warm, key=lambda w: w["import"] + w["first_call"])
    return {"cold": cold, "warm": best,
            "recompiled": sorted({k for w in warm for k in w["compiled"]})}


_HEAD = ("| scenario | cold import + first fit (s) | cold CPU (s) | warm import (s) "
         "| warm first fit (s) | warm total CPU (s) | kernels (signatures) compiled |\n"
         "|---|---|---|---|---|---|---|")


def row(name, m):
    if "error" in m:
        return f"| {name} | fails: {m['error'][:70]} | | | | | |"
    c, w = m["cold"], m["warm"]
    n_sig = sum(n for _, n in c["compiled"].values())
    return (f"| {name} | {c['import'] + c['first_call']:.1f} | "
            f"{c['import_cpu'] + c['first_call_cpu']:.1f} | {w['import']:.2f} | "
            f"{w['first_call']:.2f} | {w['import_cpu'] + w['first_call_cpu']:.2f} | "
            f"{len(c['compiled'])} ({n_sig}) |")


def _short(sig):
    # array(float64, 2d, C) -> f8[:, ::1]-like short forms keep the table narrow
    return (sig.replace("array(", "a(").replace("float64", "f8").replace("int64", "i8")
            .replace("int32", "i4").replace("readonly ", "ro ").replace("Unique", "U"))


def profile_table(cold, min_seconds=0.0):
    """Markdown table: kernel, signatures compiled, exclusive CPU s; slowest first."""
    lines = ["| kernel | signatures (exclusive CPU s each) | CPU s |", "|---|---|---|"]
    total = 0.0
    for name, (t, _) in sorted(cold["compiled"].items(), key=lambda kv: -kv[1][0]):
        total += t
        if t < min_seconds:
            continue
        sigs = "; ".join(f"({_short(sg)}) {dt:.2f}"
                         for sg, dt in cold.get("signatures", {}).get(name, []))
        lines.append(f"| {name.replace('structlearn.kernels.', '')} | {sigs} | {t:.2f} |")
    lines.append(f"| total compiled | | {total:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="--repeat: warm runs per scenario",
        parents=[common_parser("repeat", "out", "no_write", repeat=2)])
    parser.add_argument("--only", default=None,
                        help="run scenarios whose name contains one of these comma-separated "
                             "texts (e.g. 'Parser', '(sparsemap')")
    parser.add_argument("--defaults", action="store_true",
                        help="each estimator with its default loss only")
    parser.add_argument("--kernels", action="store_true",
                        help="list the kernels compiled per scenario")
    parser.add_argument("--profile", action="store_true",
                        help="print (and write) every kernel compiled in the cold run with its "
                             "type signatures and exclusive CPU seconds, sorted")
    parser.add_argument("--baseline", default=None, metavar="DIR",
                        help="also run every scenario on the checkout in DIR (e.g. "
                             "`git archive <commit> | tar -x -C DIR`), alternating with "
                             "this one")
    args = parse_args(parser, argv)
    scenarios = [("import only", "")]
    for est, (_, default, losses) in ESTIMATORS.items():
        for loss in ((default,) if args.defaults else losses):
            name = f"{est} ({loss}{', default' if loss == default else ''})"
            scenarios.append((name, scenario(est, loss)))
    here = str(Path(__file__).resolve().parents[2])
    sides = [("", here)] + ([("baseline: ", args.baseline)] if args.baseline else [])
    lines, notes = {s: [] for s, _ in sides}, []
    for name, body in scenarios:
        if args.only and not any(o in name for o in args.only.split(",")):
            continue
        for side, checkout in sides:
            m = measure(body, args.repeat, checkout)
            lines[side].append(row(name, m))
            if "error" in m:
                print(f"{side}{name:44s} FAILED: {m['error']}", flush=True)
                continue
            c, w = m["cold"], m["warm"]
            print(f"{side}{name:44s} cold {c['import'] + c['first_call']:5.1f} s "
                  f"(CPU {c['import_cpu'] + c['first_call_cpu']:5.1f} s, "
                  f"{len(c['compiled'])} kernels) | warm import {w['import']:5.2f} s, "
                  f"first fit {w['first_call']:5.2f} s", flush=True)
            kernels = sorted(c["compiled"].items(), key=lambda kv: -kv[1][0])
            if args.kernels and not side:
                top = ", ".join(f"{k.replace('structlearn.kernels.', '')} {t:.1f}s"
                                + (f" x{n}" if n > 1 else "") for k, (t, n) in kernels[:40])
                print(f"    compiled (CPU s): {top}", flush=True)
                notes.append(f"- {name}: {top}")
            if args.profile and not side:
                table = profile_table(c)
                print(table, flush=True)
                notes.append(f"- {name}, every kernel compiled cold:\n\n{table}\n")
            if m["recompiled"]:
                msg = f"compiled again when warm: {', '.join(m['recompiled'])}"
                print(f"    {side}{msg.upper()}", flush=True)
                notes.append(f"- {side}{name}: {msg}")
    text = ""
    for side, checkout in sides:
        text += (f"\n{'### ' + side.rstrip(': ') if side else ''}\n\n" if len(sides) > 1
                 else "\n") + _HEAD + "\n" + "\n".join(lines[side]) + "\n"
    print(text)
    stem = out_stem(args, None)
    if stem:
        text = (f"`{command_line(argv)}`; each row a fresh interpreter, cold = empty "
                "NUMBA_CACHE_DIR, warm = the cache the cold run wrote (best of "
                f"{args.repeat}); wall-clock seconds unless CPU.\n" + text)
        if notes:
            text += "\nKernels compiled in the cold run (exclusive CPU seconds):\n\n" + \
                "\n".join(notes) + "\n"
        path = write_text(stem, text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
