"""``structlearn precompile`` from an empty Numba cache: 1 worker against 2,
and every model's first fit afterwards.

Each round runs ``structlearn precompile`` (every estimator's default loss,
or ``--losses all``) twice, with ``--n-jobs 1`` and ``--n-jobs 2``, in
alternating order, each time into a new empty ``NUMBA_CACHE_DIR``: wall
seconds of the command and CPU seconds of its workers (``RUSAGE_CHILDREN``),
side by side so that the ratio holds on a shared machine.  Then, with the
cache of the last run, a fresh interpreter per model times ``import`` +
the first fit + predict of the default model on the same small data, and
counts the kernels Numba compiled there (0: everything came from the
cache).  The benchmark environment's thread pins are removed, as for a
user.

    python benchmarks/micro/bench_precompile.py [--repeat 2] [--losses all] [--out precompile]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    PINNED, command_line, common_parser, machine_info, md_table, parse_args, report)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from structlearn._precompile import PRECOMPILE_MODELS  # noqa: E402

_FIRST_FIT = """
import json, time, warnings
warnings.simplefilter('ignore')
from numba.core import event
n = [0]
class _L(event.Listener):
    def on_start(self, ev):
        n[0] += 1
    def on_end(self, ev):
        pass
event.register('numba:compile', _L())
t0 = time.perf_counter()
from structlearn._precompile import _compile_one
status, _ = _compile_one({model!r}, {loss!r})
print(json.dumps({{"seconds": time.perf_counter() - t0, "status": status,
                   "compiled": n[0]}}))
"""


def _env(cache):
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env["NUMBA_CACHE_DIR"] = cache
    return env


def precompile_run(cache, n_jobs, losses):
    """Wall and children-CPU seconds of one ``structlearn precompile``."""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "structlearn", "precompile", "--n-jobs",
                          str(n_jobs), "--losses", losses], env=_env(cache),
                         capture_output=True, text=True)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        raise SystemExit(f"precompile failed:\n{out.stderr}")
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return wall, cpu


def first_fit(cache, model, loss):
    out = subprocess.run([sys.executable, "-c", _FIRST_FIT.format(model=model, loss=loss)],
                         env=_env(cache), capture_output=True, text=True)
    if out.returncode:
        return {"status": out.stderr.strip().splitlines()[-1], "seconds": float("nan"),
                "compiled": -1}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        parents=[common_parser("repeat", "out", "no_write", repeat=2)])
    ap.add_argument("--losses", default="default", choices=("default", "all"))
    args = parse_args(ap, argv)
    rows, walls = [], {1: [], 2: []}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        last = None
        for r in range(args.repeat):
            for n_jobs in ((1, 2) if r % 2 == 0 else (2, 1)):
                last = os.path.join(tmp, f"cache_{r}_{n_jobs}")
                wall, cpu = precompile_run(last, n_jobs, args.losses)
                walls[n_jobs].append(wall)
                rows.append([r + 1, n_jobs, f"{wall:.1f}", f"{cpu:.1f}",
                             f"{os.getloadavg()[0]:.1f}"])
                print(rows[-1], flush=True)
        fits = []
        for model, (_, _, loss) in PRECOMPILE_MODELS.items():
            res = first_fit(last, model, loss)
            fits.append([model, loss, f"{res['seconds']:.2f}", res["compiled"],
                         res["status"]])
            print(fits[-1], flush=True)
    ratios = [a / b for a, b in zip(walls[2], walls[1])]
    text = "\n\n".join([
        "# structlearn precompile from an empty cache: 1 worker against 2",
        f"    {command_line(argv)}",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items())
        + f"; load average before: {load0:.1f}",
        md_table(["round", "n_jobs", "wall (s)", "CPU of the workers (s)",
                  "load after"], rows),
        "wall time with 2 workers / with 1, per round: "
        + ", ".join(f"{x:.2f}" for x in ratios),
        "## Then, with the cache filled: a fresh interpreter per model, import + "
        "first fit + predict on the same small data",
        md_table(["model", "loss", "seconds", "kernels compiled", "status"], fits),
    ])
    report(args, text, None)


if __name__ == "__main__":
    main()
