"""The slow corners of issue 20, side by side: ratios measured in one run.

1. approximate slack scaling against margin scaling, per epoch: the loss
   oracle over mini-batches of 32 covering the data, alternately, on a
   chain (CoNLL-2000, a slice of ``--n-seq`` training sentences, scored by
   the problem at small random weights and at the weights of a hinge model
   trained on the slice: the training problem's ``value_and_grad(z, idx)``;
   process CPU time) and on the fixed-size structures (random
   scores of the right shape: ``loss.value_and_grad``); for chains also
   the generic search (``Structure.approx_slack_search``, the path
   before the Numba kernels);
2. every chain loss on one long sequence: ``time(10 L) / (10 time(L))``
   with ``L = --length`` tokens of CoNLL-2000 test sentences joined into
   one sequence, scored by a CRF trained briefly on the training slice
   (1 = linear in the length);
3. Birkhoff SparseMAP against the projection loss, one fit of
   :class:`~structlearn.LabelRanker` each on synthetic rankings, k = 4, 8, 16;
4. ``predict_sparse`` of the fixed-size estimators, batched (one kernel
   call) against the previous row-by-row loop;
5. the hashed ``TokenVectorizer``: the name-hashing step (Numba, batched)
   against scikit-learn's per-name hash, and hashed / unhashed transform;
6. approximate slack against margin scaling over whole SGD epochs of the
   estimators (fit CPU per epoch run, setup included): what a user waits
   for, where 1. times the loss oracle alone.

Usage::

    python benchmarks/micro/bench_corners.py [--repeat 5] [--only 1,4]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    common_parser, conll2000_xy, machine_info, md_table, out_stem, parse_args, write_text)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor  # noqa: E402
from structlearn import SequenceTagger  # noqa: E402
from structlearn.estimators.sequence import chain_problem  # noqa: E402
from structlearn.losses import CRF, Hinge, get_loss  # noqa: E402
from structlearn.structures import Birkhoff, Chain, Knapsack, OrderSimplex  # noqa: E402
from structlearn.structures import Permutahedron, UnitCube  # noqa: E402
from structlearn.structures.base import Structure, slack_hinge  # noqa: E402

warnings.filterwarnings("ignore")


class GenericApproxSlack(Hinge):
    """Approximate slack scaling through the generic search (the path
    before the chain kernel), for the side-by-side timing."""

    def __init__(self):
        super().__init__("approx-slack")

    def value_and_grad(self, theta, y, structure):
        phi = structure.encode(y)
        phi_hat = Structure.approx_slack_search(structure, theta, y, self.n_search,
                                                  self.epsilon)
        return slack_hinge(structure, theta, phi, phi_hat)


def alternate(fns, repeat, cpu=False, min_time=0.0):
    """Run the callables of ``fns`` (name -> f) alternately ``repeat``
    times; per name the list of times (wall seconds, or process CPU seconds
    with ``cpu``).  With ``min_time``, each timing runs its callable as many
    times as the first one needs to take ``min_time`` (measured once
    before), and reports the time per call: a few-millisecond call timed
    alone on a loaded machine measures the scheduler, not the code."""
    clock = time.process_time if cpu else time.perf_counter
    inner = 1
    if min_time > 0.0:
        f0 = next(iter(fns.values()))
        t0 = clock()
        f0()
        inner = max(1, int(np.ceil(min_time / max(clock() - t0, 1e-6))))
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = clock()
            for _ in range(inner):
                f()
            times[k].append((clock() - t0) / inner)
    return times


def ratio_cell(num, den):
    """Median ratio and the spread (min-max) of the per-repeat ratios."""
    r = np.asarray(num) / np.asarray(den)
    return f"{np.median(r):.2f} ({r.min():.2f}-{r.max():.2f})"


# ------------------------------------------------------------------ 1
def corner_approx_slack(args, out):
    X, y = conll2000_xy("train")
    X, y = X[:args.n_seq], y[:args.n_seq]
    est = SequenceTagger(loss="hinge")
    vec, tokens, tok_off, y_int, classes, sup_ptr, sup_label, d, _, _, _ = \
        est._prepare(X, y, CRF(), False)
    K = len(classes)
    losses = {"hinge": Hinge("margin"), "approx-slack": Hinge("approx-slack"),
              "approx-slack (generic)": GenericApproxSlack()}
    probs = {k: chain_problem(tokens, tok_off, y_int, K, sup_ptr, sup_label, loss, True, 1)
             for k, loss in losses.items()}
    batches = np.array_split(np.random.default_rng(1).permutation(len(tok_off) - 1),
                             max(1, (len(tok_off) - 1) // 32))
    # two points of training: small random weights (nearly every sentence
    # violated, as in the first epoch) and the weights of a hinge model
    # trained on the slice (most sentences then have a margin of 1 or more)
    trained = SequenceTagger(loss="hinge", max_iter=10, random_state=0).fit(X, y)
    points = {"random weights": np.random.default_rng(0).normal(
                  scale=0.1, size=probs["hinge"].n_params),
              "trained weights": trained._z}
    rows = []
    for where, z in points.items():
        assert len(z) == probs["hinge"].n_params, "the trained model has other parameters"
        v_new = [np.sum(probs["approx-slack"].value_and_grad(z, b)[0]) for b in batches]
        v_old = [np.sum(probs["approx-slack (generic)"].value_and_grad(z, b)[0])
                 for b in batches]
        assert np.allclose(v_new, v_old, rtol=1e-9), "kernel and generic search disagree"

        def epoch(p, z=z):
            return lambda: [p.value_and_grad(z, b) for b in batches]

        t = alternate({k: epoch(p) for k, p in probs.items()}, args.repeat, cpu=True)
        for k in losses:
            rows.append([f"chain, CoNLL-2000 {args.n_seq} sent., K={K}, {where}", k,
                         f"{np.median(t[k]):.3f}", ratio_cell(t[k], t["hinge"])])
    print(md_table(["data", "loss", "epoch median (CPU s)", "/ hinge"], rows), flush=True)

    rng = np.random.default_rng(2)
    n, k = 2000, 8
    fixed = {"MultiLabelClassifier: unit cube": (UnitCube(k), lambda: rng.integers(0, 2, (n, k))),
             "MultiLabelClassifier: knapsack 1..3": (Knapsack(k, 1, 3), None),
             "OrdinalRegressor: order simplex": (OrderSimplex(k), lambda: rng.integers(0, k, n)),
             "LabelRanker: permutahedron": (Permutahedron(k), None),
             "LabelRanker: Birkhoff": (Birkhoff(k), None)}
    for name, (st, make_y) in fixed.items():
        theta = rng.normal(size=(n, st.n_parts))
        Y = st.argmax(rng.normal(size=(n, st.n_parts))) if make_y is None else make_y()
        idx = np.array_split(np.arange(n), n // 32)
        losses = {"hinge": get_loss("hinge"), "approx-slack": get_loss("hinge-approx-slack"),
                  "approx-slack (generic)": GenericApproxSlack()}
        fns = {lk: (lambda loss: lambda: [loss.value_and_grad(theta[b], Y[b], st)
                                          for b in idx])(loss)
               for lk, loss in losses.items()}
        for b in idx[:4]:
            v_new = losses["approx-slack"].value_and_grad(theta[b], Y[b], st)[0]
            v_old = losses["approx-slack (generic)"].value_and_grad(theta[b], Y[b], st)[0]
            assert np.allclose(v_new, v_old, rtol=1e-9), "kernel and generic search disagree"
        for f in fns.values():
            f()
        t = alternate(fns, args.repeat, cpu=True, min_time=0.2)
        for lk in losses:
            rows.append([name + f", n={n}, k={k}", lk, f"{np.median(t[lk]):.3f}",
                         ratio_cell(t[lk], t["hinge"])])
            print(rows[-1], flush=True)
    out.append(("1. Approximate slack scaling per epoch (loss oracle over mini-batches "
                "of 32; ratio to hinge, median (min-max) over repeats)",
                md_table(["data", "loss", "epoch median (CPU s)", "/ hinge"], rows)))


# ------------------------------------------------------------------ 6
def corner_approx_slack_fit(args, out):
    """Approximate slack against margin scaling over whole training epochs:
    the estimators' SGD fits (``solver='sgd'``, ``--epochs`` epochs, the
    same seed), fit CPU seconds per epoch run (``n_iter_``), setup
    included.  What a user waits for; corner 1 times the loss oracle alone,
    the strictest reading of the target."""
    rng = np.random.default_rng(3)
    n, k, d = 2000, 8, 20
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, k))
    S = X @ W + rng.normal(size=(n, k))   # labels from a noisy linear model
    ranks = np.argsort(np.argsort(-S, axis=1), axis=1) + 1   # 1 = first
    Xc, yc = conll2000_xy("train")
    Xc, yc = Xc[:args.n_seq], yc[:args.n_seq]
    cases = {
        "MultiLabelClassifier (unit cube)": (MultiLabelClassifier, {}, X, (S > 0).astype(int)),
        "OrdinalRegressor (order simplex)": (OrdinalRegressor, {}, X,
                                             np.digitize(S[:, 0], np.linspace(-6, 6, k - 1))),
        "LabelRanker (permutahedron)": (LabelRanker, {}, X, ranks),
        "LabelRanker (Birkhoff)": (LabelRanker, {"polytope": "birkhoff"}, X, ranks),
        f"SequenceTagger (CoNLL-2000 {args.n_seq} sent.)": (SequenceTagger, {}, Xc, yc),
    }
    rows = []
    for name, (cls, kw, Xs, ys) in cases.items():
        n_iter = {}

        def fit(loss, cls=cls, kw=kw, Xs=Xs, ys=ys):
            def run():
                est = cls(loss=loss, solver="sgd", max_iter=args.epochs, random_state=0,
                          **kw).fit(Xs, ys)
                n_iter[loss] = est.n_iter_
            return run

        fns = {loss: fit(loss) for loss in ("hinge", "hinge-approx-slack")}
        fns["hinge"]()   # compile, and the epochs each runs
        with _count_search_calls() as count:
            fns["hinge-approx-slack"]()
        t = alternate(fns, args.repeat, cpu=True)
        per = {loss: np.asarray(t[loss]) / n_iter[loss] for loss in fns}
        for loss in fns:
            calls = (f"{count['calls'] / count['rows']:.2f}"
                     if loss != "hinge" and count["rows"] else "")
            rows.append([name, loss, n_iter[loss], f"{np.median(per[loss]):.4f}",
                         ratio_cell(per[loss], per["hinge"]), calls])
            print(rows[-1], flush=True)
    out.append(("6. Approximate slack scaling per training epoch (SGD fits of the "
                "estimators, CPU s per epoch run; ratio to hinge, median (min-max); "
                "oracle calls per row searched, over the whole fit, step calibration "
                "included)",
                md_table(["estimator", "loss", "epochs run", "CPU s per epoch", "/ hinge",
                          "oracle calls per row"], rows)))


class _count_search_calls:
    """Count the approximate-slack kernels' oracle calls and rows (their
    last return value is the call count) while the ``with`` block runs; the
    kernels are looked up where the structures call them, which is the same
    in older checkouts (run this script with ``PYTHONPATH=<checkout>`` for
    their counts)."""

    def __enter__(self):
        import structlearn.structures.base as base
        import structlearn.structures.chain as chain
        self.count = {"calls": 0.0, "rows": 0}
        self.saved = [(base, base.approx_slack_batch), (chain, chain.approx_slack_batch)]
        count = self.count

        def fixed(*a, _f=base.approx_slack_batch):
            r = _f(*a)
            count["calls"] += r[-1]
            count["rows"] += a[0].shape[0]
            return r

        def chained(*a, _f=chain.approx_slack_batch):
            r = _f(*a)
            count["calls"] += r[-1]
            count["rows"] += len(a[4]) - 1   # tok_off
            return r

        base.approx_slack_batch = fixed
        chain.approx_slack_batch = chained
        return count

    def __exit__(self, *exc):
        for module, f in self.saved:
            module.approx_slack_batch = f
        return False


# ------------------------------------------------------------------ 2
CHAIN_LOSSES = ("perceptron", "hinge", "hinge-slack", "hinge-approx-slack", "poslearn",
                "crf", "sparsemap", "m-sparsemap", "projection", "projection[cube]")


#: losses that are not linear in the length by design, measured at L and 2 L
#: only (10 L would run for minutes), with the reason
QUADRATIC = {"hinge-slack": "exact slack scaling: a DP over (position, tag, number of "
                            "errors), O(L^2 K^2) by design; no exact linear algorithm is known"}


def _time_loss(loss, theta, yy, ch, repeat):
    """Median CPU time (process) and wall time of ``loss.value_and_grad``.

    CPU time is the ratio's measure: on an oversubscribed machine a call of
    50 ms is preempted several times and its wall time counts the other
    jobs' slices, while the median of 1 ms calls is the unpreempted ones,
    which inflated the wall-time ratios of the fast losses to 5-8."""
    n = 200 * ch.n_tags   # compilation (split path: >= 128), outside the timing
    loss.value_and_grad(np.concatenate([theta[:n], theta[ch.lengths[0] * ch.n_tags:]]),
                        yy[:200], Chain(ch.n_tags, np.array([0, 200])))
    t0, c0 = time.perf_counter(), time.process_time()
    loss.value_and_grad(theta, yy, ch)  # warm-up (kept as the time above 2 s)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if wall > 2.0:
        return cpu, wall
    ws, cs = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        loss.value_and_grad(theta, yy, ch)
        cs.append(time.process_time() - c0)
        ws.append(time.perf_counter() - t0)
    return float(np.median(cs)), float(np.median(ws))


def corner_length(args, out):
    from structlearn.losses import Projection
    X, y = conll2000_xy("train")
    est = SequenceTagger(loss="crf", max_iter=15).fit(X[:args.n_seq], y[:args.n_seq])
    Xt, yt = conll2000_xy("test")
    classes = list(est.classes_)
    K = len(classes)
    toks, tags = [], []
    for xs, ys in zip(Xt, yt):
        toks.extend(xs)
        tags.extend(ys)
        if len(toks) >= 10 * args.length:
            break
    L1, L10 = args.length, 10 * args.length
    rows, notes = [], []
    for name in CHAIN_LOSSES if args.losses is None else args.losses.split(","):
        loss = Projection("cube") if name == "projection[cube]" else get_loss(name)
        big = 2 * L1 if name in QUADRATIC else L10
        t = {}
        for L in (L1, big):
            U = est.decision_function([toks[:L]])[0]
            theta = np.concatenate([np.ravel(U), est.transition_.ravel(), est.start_,
                                    est.end_]).astype(np.float64)
            yy = np.array([classes.index(c) if c in classes else 0 for c in tags[:L]])
            ch = Chain(K, np.array([0, L]))
            if theta.shape != (ch.n_parts,):
                raise RuntimeError(f"unexpected score layout {theta.shape}")
            t[L] = _time_loss(loss, theta, yy, ch, args.repeat)
        f = big / L1
        cells = [f"{t[L1][0]:.4f}", f"{t[big][0]:.4f}", f"{t[big][0] / (f * t[L1][0]):.2f}",
                 f"{t[L1][1]:.4f}", f"{t[big][1]:.4f}", f"{t[big][1] / (f * t[L1][1]):.2f}"]
        if name in QUADRATIC:
            cells[1] = f"{t[big][0]:.4f} (at {big} tok)"
            cells[2] += f" (t({big}) / (2 t({L1})))"
            notes.append(f"{name}: {QUADRATIC[name]}; measured at {L1} and {big} tokens.")
        rows.append([name] + cells)
        print(rows[-1], flush=True)
    table = md_table(["loss", f"{L1} tok CPU (s)", f"{L10} tok CPU (s)",
                      f"CPU t({L10}) / (10 t({L1}))", f"{L1} tok wall (s)",
                      f"{L10} tok wall (s)", "wall ratio"], rows)
    if notes:
        table += "\n\n" + "\n".join(f"- {n}" for n in notes)
    out.append((f"2. Every chain loss on one sequence of {L1} and {L10} tokens (CoNLL-2000 "
                f"test sentences joined; CRF scores); medians of {args.repeat} calls "
                f"(one above 2 s); 1 = linear, target <= 2 (CPU time: see _time_loss)",
                table))


# ------------------------------------------------------------------ 3
def corner_birkhoff(args, out):
    rows = []
    for k in (4, 8, 16):
        rng = np.random.default_rng(k)
        n, d = 200, 10
        X = rng.normal(size=(n, d))
        S = X @ rng.normal(size=(d, k)) + 0.5 * rng.normal(size=(n, k))
        Y = np.argsort(np.argsort(-S, axis=1), axis=1) + 1
        fns = {loss: (lambda loss: lambda: LabelRanker(
            polytope="birkhoff", loss=loss, max_iter=args.fit_iter,
            random_state=0).fit(X, Y))(loss) for loss in ("sparsemap", "projection")}
        LabelRanker(polytope="birkhoff", loss="sparsemap", max_iter=2).fit(X[:20], Y[:20])
        LabelRanker(polytope="birkhoff", loss="projection", max_iter=2).fit(X[:20], Y[:20])
        t = alternate(fns, max(1, args.repeat // 2))
        rows.append([str(k), f"{np.median(t['sparsemap']):.2f}",
                     f"{np.median(t['projection']):.2f}",
                     ratio_cell(t["sparsemap"], t["projection"])])
        print(rows[-1], flush=True)
    out.append((f"3. Birkhoff SparseMAP vs projection loss: one LabelRanker fit "
                f"(n=200, d=10, max_iter={args.fit_iter})",
                md_table(["k", "sparsemap (s)", "projection (s)", "ratio"], rows)))


# ------------------------------------------------------------------ 4
def corner_predict_sparse(args, out):
    rng = np.random.default_rng(0)
    n, d = 2000, 10
    X = rng.normal(size=(n, d))
    S = X @ rng.normal(size=(d, 6))
    cases = {"LabelRanker (permutahedron, k=6)":
             LabelRanker(loss="sparsemap").fit(X, np.argsort(np.argsort(-S, 1), 1) + 1),
             "LabelRanker (Birkhoff, k=6)":
             LabelRanker(polytope="birkhoff", loss="sparsemap").fit(
                 X, np.argsort(np.argsort(-S, 1), 1) + 1),
             "OrdinalRegressor (6 classes)":
             OrdinalRegressor(loss="sparsemap").fit(X, np.digitize(S[:, 0], [-2, -1, 0, 1, 2])),
             "MultiLabelClassifier (k=6)":
             MultiLabelClassifier(loss="sparsemap").fit(X, (S > 0).astype(int))}
    rows = []
    for name, est in cases.items():
        def per_row(est=est):   # the previous implementation
            theta = est._part_scores(X)
            res = []
            for row in theta:
                _, V, w, _ = est.structure_.sparsemap_support(row)
                labels = est._vertices_to_labels(V)
                res.append([(lab, float(wt)) for lab, wt in zip(labels, w)])
            return res
        a, b = est.predict_sparse(X), per_row()
        assert all(len(p) == len(q) for p, q in zip(a, b))
        t = alternate({"batched": lambda est=est: est.predict_sparse(X),
                       "per-row": per_row}, args.repeat)
        rows.append([name, f"{np.median(t['batched']):.4f}", f"{np.median(t['per-row']):.4f}",
                     ratio_cell(t["per-row"], t["batched"])])
        print(rows[-1], flush=True)
    out.append((f"4. predict_sparse on {n} rows: batched kernel vs the row-by-row loop",
                md_table(["estimator", "batched (s)", "per-row (s)", "speed-up"], rows)))


# ------------------------------------------------------------------ 5
def corner_vectorizer(args, out):
    from sklearn.utils import murmurhash3_32

    from structlearn.feature_extraction import TokenVectorizer
    from structlearn.feature_extraction._dicts import _PairTable, _by_template, _name, _scan
    from structlearn.feature_extraction._dicts import _virtual_ids
    X, _ = conll2000_xy("train")
    X = X[:args.n_seq]
    hv = TokenVectorizer(n_features=2 ** 20).fit(X)
    uv = TokenVectorizer().fit(X)
    table = _PairTable(grow=True)
    _scan(X, table)
    by_tmpl = _by_template(table)
    gid = {k: g for g, k in enumerate(hv.template_names_)}
    mods = hv.hash_moduli_
    offsets = np.concatenate(([0], np.cumsum(mods)))

    def per_name():   # the previous hashing step
        res = np.full(len(table), -1, dtype=np.int64)
        for k, (inners, ids) in by_tmpl.items():
            g = gid.get(k)
            if g is not None:
                off, mod = int(offsets[g]), int(mods[g])
                res[ids] = [off + murmurhash3_32(_name(k, s), positive=True) % mod
                            for s in inners]
        return res

    def batched():
        return _virtual_ids(by_tmpl, len(table), gid, mods, offsets)

    np.testing.assert_array_equal(per_name(), batched())
    t = alternate({"batched": batched, "per-name": per_name}, args.repeat)
    n_names = sum(len(v[0]) for v in by_tmpl.values())
    rows = [[f"hash {n_names} names", f"{np.median(t['batched']):.3f}",
             f"{np.median(t['per-name']):.3f}", ratio_cell(t["per-name"], t["batched"])]]
    t = alternate({"hashed": lambda: hv.transform(X), "vocabulary": lambda: uv.transform(X)},
                  args.repeat)
    rows.append([f"transform {args.n_seq} sent.: hashed vs vocabulary",
                 f"{np.median(t['hashed']):.3f}", f"{np.median(t['vocabulary']):.3f}",
                 ratio_cell(t["vocabulary"], t["hashed"])])
    print(rows, flush=True)
    out.append(("5. Hashed TokenVectorizer (CoNLL-2000 chunking features)",
                md_table(["step", "new / hashed (s)", "old / vocabulary (s)",
                          "old / new"], rows)))


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        parents=[common_parser("repeat", "out", "no_write", "data", repeat=5, out="corners")])
    ap.add_argument("--only", default="1,2,3,4,5,6", help="corners to run (default: all)")
    ap.add_argument("--n-seq", type=int, default=2000, help="CoNLL-2000 training sentences")
    ap.add_argument("--length", type=int, default=1000, help="short sequence length (2.)")
    ap.add_argument("--losses", default=None, help="chain losses of 2. (default: all)")
    ap.add_argument("--fit-iter", type=int, default=20, help="max_iter of the fits of 3.")
    ap.add_argument("--epochs", type=int, default=10, help="SGD epochs of the fits of 6.")
    args = parse_args(ap, argv)
    out = []
    corners = {"1": corner_approx_slack, "2": corner_length, "3": corner_birkhoff,
               "4": corner_predict_sparse, "5": corner_vectorizer,
               "6": corner_approx_slack_fit}
    for c in args.only.split(","):
        corners[c](args, out)
    cmd = "python benchmarks/micro/bench_corners.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    text = ["# The slow corners (issue 20): side-by-side ratios", "",
            f"Command: `{cmd.strip()}`", "",
            "Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()), ""]
    for title, table in out:
        text += [f"## {title}", "", table, ""]
    stem = out_stem(args, "corners")
    if stem:
        path = write_text(stem, "\n".join(text))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
