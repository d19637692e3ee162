#!/usr/bin/env python
"""Our CoNLL-U reader against the ``conllu`` package (issue 21).

Should ``structlearn.datasets.read_conllu`` give way to the well-kept
``conllu`` package?  Two measurements, side by side in one process:

* **speed** -- CPU seconds to parse UD English EWT train (12,544 sentences)
  into sentences with forms, heads and relations, alternating the two
  readers ``--repeat`` times (median);
* **what each reader catches** -- a set of malformed inputs (each the kind a
  converted or hand-edited treebank holds: a cycle, two roots, a self-loop,
  an empty field, a NUL byte, a short line, a word ID out of order, a HEAD
  beyond the sentence, Latin-1 bytes): whether the reader raises, and
  whether its message names the line.

    pip install conllu
    python benchmarks/micro/bench_conllu_reader.py --repeat 5
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, data_home, machine_info, md_table, parse_args, report)

import argparse  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from structlearn.datasets import read_conllu  # noqa: E402

TOK = "\t{form}\t_\tX\t_\t_\t{head}\tdep\t_\t_\n"


def _w(i, head, form="w"):
    return f"{i}" + TOK.format(form=form, head=head)


#: (name, text of a file whose error is on line 2 or 3)
CASES = [
    ("cycle", _w(1, 0) + _w(2, 3) + _w(3, 2)),
    ("two roots", _w(1, 0) + _w(2, 0)),
    ("self-loop", _w(1, 0) + _w(2, 2)),
    ("empty FORM", _w(1, 0) + "2\t\t_\tX\t_\t_\t1\tdep\t_\t_\n"),
    ("NUL byte", _w(1, 0) + _w(2, 1, "a\x00b")),
    ("9 fields", _w(1, 0) + "2\tw\t_\tX\t_\t_\t1\tdep\t_\n"),
    ("word ID out of order", _w(1, 0) + _w(3, 1)),
    ("HEAD beyond the sentence", _w(1, 0) + _w(2, 7)),
    ("non-numeric HEAD", _w(1, 0) + _w(2, "x")),
]


def _ours(path_or_text):
    return read_conllu(path_or_text)


def _theirs(path_or_text):
    import conllu

    if isinstance(path_or_text, io.StringIO):
        text = path_or_text.getvalue()
    else:
        with open(path_or_text, encoding="utf-8") as fh:
            text = fh.read()
    out = []
    for sent in conllu.parse(text):
        words = [t for t in sent if isinstance(t["id"], int)]
        out.append(([t["form"] for t in words], [t["head"] for t in words],
                    [t["deprel"] for t in words]))
    return out


def _catches(reader, make_input):
    try:
        reader(make_input())
    except Exception as exc:  # noqa: BLE001 -- what is raised is the result
        msg = str(exc)
        line = bool(re.search(r":[23]\b|line [23]\b", msg))
        return f"{type(exc).__name__}{' (names the line)' if line else ''}"
    return "**accepted**"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 parents=[common_parser("repeat", "out", "no_write", "data",
                                                        repeat=5, out="conllu_reader")])
    args = parse_args(ap, argv)
    try:
        import conllu  # noqa: F401
    except ImportError:
        sys.exit("pip install conllu (benchmark only)")
    path = data_home() / "ud_english_ewt" / "en_ewt-ud-train.conllu"
    times = {"structlearn.read_conllu": [], "conllu.parse": []}
    readers = {"structlearn.read_conllu": _ours, "conllu.parse": _theirs}
    n = {}
    for _ in range(args.repeat):
        for name, fn in readers.items():
            t = time.process_time()
            n[name] = len(fn(path))
            times[name].append(time.process_time() - t)
            print(f"{name}: {times[name][-1]:.2f} CPU s ({n[name]} sentences)", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    speed = md_table(["reader", "sentences", "CPU s (median)", "each repeat", "/ ours"],
                     [[k, n[k], f"{med[k]:.2f}", " / ".join(f"{t:.2f}" for t in v),
                       f"{med[k] / med['structlearn.read_conllu']:.2f}"]
                      for k, v in times.items()])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        latin = Path(tmp) / "latin1.conllu"
        latin.write_bytes((_w(1, 0) + _w(2, 1, "caf\u00e9")).encode("latin-1"))
        cases = [(name, lambda t=text: io.StringIO(t + "\n")) for name, text in CASES]
        cases.append(("Latin-1 byte", lambda: latin))
        for name, make in cases:
            rows.append([name] + [_catches(fn, make) for fn in readers.values()])
    catches = md_table(["malformed input (error on line 2 or 3)"] + list(readers), rows)
    text = (f"# CoNLL-U readers: ours and the conllu package\n\nCommand: "
            f"`{command_line()}`\n\nMachine: "
            f"{machine_info()}\n\nSpeed (UD English EWT train, parse to forms, heads, "
            f"relations; CPU time, the two readers alternating):\n\n{speed}\n\n"
            f"What each reader catches:\n\n{catches}\n")
    report(args, text, "conllu_reader")


if __name__ == "__main__":
    main()
