"""An experiment towards an exact chain projection that scales: the
Euclidean projection onto the chain polytope solved as a product of short
pieces coupled through the transition counts.  A NumPy prototype measured
against the library's exact active set -- not the library's solver.

The problem (what ``loss='projection'`` of ``SequenceTagger`` computes) is

    min_{mu in M}  1/2 ||u - a||^2 + 1/2 ||c - b||^2

over the chain polytope ``M``: ``u`` the per-position unary marginals,
``c`` the transition *counts* summed over the sequence with the start and
end marginals (``d = K^2 + 2K`` coordinates), ``(a, b)`` the scores.  The
quadratic on ``c`` couples every position, so SparseMAP's certified
splitting (``kernels/chain_split.py``) does not apply -- but only through
``d`` numbers:

1. *Where to split.*  With ``g = b - c*`` the optimum is a SparseMAP
   solution (unary penalised) with linear transition scores ``g``, so the
   positions where SparseMAP at ``g*`` is integral are those where the
   projection is.  ``g*`` maximises the strongly concave, non-smooth dual
   ``-F(g) = -(1/2 ||g - b||^2 + SparseMAP_value(a, g))``; a few L-BFGS
   evaluations of ``F`` (each one split SparseMAP solve, the library's)
   give a ``g`` whose SparseMAP already has the optimum's integral
   positions (``--dual-evals``); without them the split is guessed from
   max-marginal gaps under the scores.
2. *The pieces, coupled.*  With those positions fixed, ``mu`` is a product
   of distributions over the short pieces between them, and the objective
   is block-diagonal in the pieces' weights plus a rank-``d`` term.  An
   active set (Wolfe's minimum-norm-point method, vertices added for every
   piece at once) solves it; each affine subproblem is a ``d``-dimensional
   Schur complement in the transition residual ``r = c - b``: per piece
   ``w_p = x_p - P_p A_p^T r + N_p s_p`` from the pseudo-inverse of its
   small KKT matrix, ``N_p`` the null directions of pieces whose vertices
   are affinely dependent in their unary parts (they change ``c`` with
   ``u`` fixed -- the dual's kinks; they occur at the optimum), with
   ``(A_p N_p)^T r = 0``.
3. *Certificate.*  The joined point's Frank-Wolfe gap on the whole chain
   (one Viterbi); where it fails, the fixed positions the certifying path
   leaves are freed and step 2 runs again.

Reported per length: the exact active set (iterations, CPU s), the dual
evaluations, split rounds, major / minor iterations of step 2, the largest
difference from the exact solution and the certified gap.  The prototype's
CPU times are Python's and say nothing about a compiled version; the
iteration counts are the result.

    python benchmarks/micro/bench_projection_pieces.py --lengths 200,500
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (first: pins BLAS threads before NumPy is imported)
    command_line, common_parser, machine_info, md_table, parse_args, report)

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from bench_projection_length import chain_scores, solve as exact_active_set  # noqa: E402
from structlearn.structures import Chain  # noqa: E402


def viterbi(unary, trans, left, right):
    """Best tag sequence of ``sum unary[i, y_i] + trans[y_i, y_i+1] +
    left[y_0] + right[y_-1]`` and its score."""
    n, K = unary.shape
    delta = unary[0] + left
    back = np.zeros((n, K), dtype=np.int64)
    for i in range(1, n):
        M = delta[:, None] + trans
        back[i] = M.argmax(0)
        delta = M.max(0) + unary[i]
    delta = delta + right
    y = np.empty(n, dtype=np.int64)
    y[-1] = delta.argmax()
    best = delta[y[-1]]
    for i in range(n - 1, 0, -1):
        y[i - 1] = back[i, y[i]]
    return y, best


class CoupledPieces:
    """The projection of one chain (scores ``theta`` in the chain block
    layout) with some positions fixed: an active set over the product of
    the pieces' simplices, coupled through the transition residual."""

    def __init__(self, theta, L, K):
        self.L, self.K, self.d = L, K, K * K + 2 * K
        self.a = theta[:L * K].reshape(L, K)
        self.b = theta[L * K:]

    def _trans(self, v):
        K = self.K
        return v[:K * K].reshape(K, K), v[K * K:K * K + K], v[K * K + K:]

    def counts(self, s, e, y, fixed):
        """Transition / start / end counts of piece vertex ``y`` (tags of
        positions ``s..e-1``), its edges to the fixed neighbours included."""
        K, L = self.K, self.L
        v = np.zeros(self.d)
        if s == 0:
            v[K * K + y[0]] += 1
        else:
            v[fixed[s - 1] * K + y[0]] += 1
        np.add.at(v, y[:-1] * K + y[1:], 1.0)
        if e == L:
            v[K * K + K + y[-1]] += 1
        else:
            v[y[-1] * K + fixed[e]] += 1
        return v

    def fixed_counts(self, fixed):
        K, L = self.K, self.L
        c = np.zeros(self.d)
        if fixed[0] >= 0:
            c[K * K + fixed[0]] += 1
        if fixed[L - 1] >= 0:
            c[K * K + K + fixed[L - 1]] += 1
        both = np.flatnonzero((fixed[:-1] >= 0) & (fixed[1:] >= 0))
        np.add.at(c, fixed[both] * K + fixed[both + 1], 1.0)
        return c

    def pieces(self, fixed):
        free = np.concatenate(([False], fixed < 0, [False]))
        edges = np.flatnonzero(np.diff(free.astype(int)))
        return list(zip(edges[::2], edges[1::2]))

    def solve(self, fixed, g0, tol=1e-9, max_major=500):
        """Returns ``(mu, n_major, n_minor)``; pieces start from their MAP
        vertex under the unary scores and transition scores ``g0``."""
        L = self.L
        pieces = self.pieces(fixed)
        b_eff = self.b - self.fixed_counts(fixed)
        T0, st0, en0 = self._trans(g0)
        sup = []
        for s, e in pieces:
            left = st0 if s == 0 else T0[fixed[s - 1]]
            right = en0 if e == L else T0[:, fixed[e]]
            y, _ = viterbi(self.a[s:e], T0, left, right)
            sup.append({"Y": [y], "A": [self.counts(s, e, y, fixed)], "w": np.ones(1)})
        scale = max(1.0, np.abs(self.a).sum() + np.abs(self.b).sum())
        n_major = n_minor = 0
        while True:
            while True:   # minor cycle: the affine minimiser, or a step towards it
                n_minor += 1
                wn = self._affine(pieces, sup, b_eff)
                if all((w >= -1e-13).all() for w in wn):
                    for S, w in zip(sup, wn):
                        S["w"] = np.maximum(w, 0.0)
                    break
                step = min(S["w"][j] / (S["w"][j] - w[j])
                           for S, w in zip(sup, wn) for j in np.flatnonzero(w < -1e-13))
                for S, w in zip(sup, wn):
                    S["w"] = S["w"] + step * (w - S["w"])
                    keep = (S["w"] > 1e-14) | (w >= 0)   # drop the blocking vertices only
                    S["Y"] = [y for y, k in zip(S["Y"], keep) if k]
                    S["A"] = [v for v, k in zip(S["A"], keep) if k]
                    S["w"] = np.maximum(S["w"][keep], 0.0)
                    S["w"] /= S["w"].sum()
            n_major += 1
            u, c = self._point(fixed, pieces, sup)
            Ug, r = u - self.a, c - self.b
            R, rs, re = self._trans(r)
            added = 0
            for (s, e), S in zip(pieces, sup):   # Frank-Wolfe vertex per piece
                left = -rs if s == 0 else -R[fixed[s - 1]]
                right = -re if e == L else -R[:, fixed[e]]
                y, best = viterbi(-Ug[s:e], -R, left, right)
                cur = sum(w * (Ug[np.arange(s, e), yj].sum() + A @ r)
                          for yj, A, w in zip(S["Y"], S["A"], S["w"]))
                if cur + best > tol * scale / len(pieces) and \
                        not any(np.array_equal(y, yj) for yj in S["Y"]):
                    S["Y"].append(y)
                    S["A"].append(self.counts(s, e, y, fixed))
                    S["w"] = np.append(S["w"], 0.0)
                    added += 1
            if added == 0 or n_major >= max_major:
                return np.concatenate([u.ravel(), c]), n_major, n_minor

    def _point(self, fixed, pieces, sup):
        u = np.zeros((self.L, self.K))
        fi = np.flatnonzero(fixed >= 0)
        u[fi, fixed[fi]] = 1.0
        c = self.fixed_counts(fixed)
        for (s, e), S in zip(pieces, sup):
            for y, A, w in zip(S["Y"], S["A"], S["w"]):
                u[np.arange(s, e), y] += w
                c += w * A
        return u, c

    def _affine(self, pieces, sup, b_eff):
        """Minimiser of the objective on the affine hulls of the supports
        (per piece: weights summing to one), through the Schur complement
        in ``r``: ``(I + sum A_p P_p A_p^T) r - B s = sum A_p x_p - b_eff``,
        ``B^T r = 0``, ``B`` the null directions ``A_p N_p``."""
        d = self.d
        G, h = np.eye(d), -b_eff.copy()
        B, parts = [], []
        for (s, e), S in zip(pieces, sup):
            Y, A = np.array(S["Y"]), np.array(S["A"]).T
            m = len(Y)
            Kp = np.zeros((m + 1, m + 1))
            Kp[:m, :m] = (Y[:, None, :] == Y[None, :, :]).sum(2)   # U^T U: agreements
            Kp[:m, m] = Kp[m, :m] = 1.0
            lam, V = np.linalg.eigh(Kp)
            big = np.abs(lam) > 1e-10 * max(1.0, np.abs(lam).max())
            Kinv = (V[:, big] / lam[big]) @ V[:, big].T
            N = V[:m, ~big]
            P = Kinv[:m, :m]
            x = P @ self.a[np.arange(s, e)[None, :], Y].sum(1) + Kinv[:m, m]
            G += A @ P @ A.T
            h += A @ x
            B.extend((A @ N).T)
            parts.append((x, P, A, N))
        if B:
            B = np.array(B).T
            nb = B.shape[1]
            M = np.block([[G, B], [B.T, np.zeros((nb, nb))]])
            sol = np.linalg.lstsq(M, np.concatenate([h, np.zeros(nb)]), rcond=None)[0]
            r, neg_s = sol[:d], sol[d:]
        else:
            r, neg_s = np.linalg.solve(G, h), np.zeros(0)
        out, o = [], 0
        for x, P, A, N in parts:
            k = N.shape[1]
            out.append(x - P @ (A.T @ r) - N @ neg_s[o:o + k])
            o += k
        return out

    def certificate(self, mu):
        """Frank-Wolfe gap of ``mu`` on the whole chain and the certifying path."""
        L, K = self.L, self.K
        Ug = mu[:L * K].reshape(L, K) - self.a
        r = mu[L * K:] - self.b
        R, rs, re = self._trans(r)
        y, best = viterbi(-Ug, -R, -rs, -re)
        return np.sum(Ug * mu[:L * K].reshape(L, K)) + r @ mu[L * K:] + best, y


def dual_start(theta, L, K, n_evals):
    """``g`` after ``n_evals`` L-BFGS evaluations of the dual ``F`` (each one
    SparseMAP solve) from ``b - counts(MAP)``, and the positions where
    SparseMAP at ``g`` is integral, with their tags."""
    a, b = theta[:L * K], theta[L * K:]
    pr = CoupledPieces(theta, L, K)
    T, st, en = pr._trans(b)
    y, _ = viterbi(a.reshape(L, K), T, st, en)
    g = b - pr.counts(0, L, y, np.full(L, -1))
    ch = Chain(K, np.array([0, L]))

    def sparsemap(gv):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ch.sparsemap(np.concatenate([a, gv]))

    def F(gv):
        m = sparsemap(gv)
        u, c = m[:L * K], m[L * K:]
        return 0.5 * np.sum((gv - b) ** 2) + a @ u + gv @ c - 0.5 * u @ u, gv - b + c

    if n_evals:
        g = minimize(F, g, jac=True, method="L-BFGS-B",
                     options=dict(maxiter=n_evals, maxfun=n_evals)).x
        U = sparsemap(g)[:L * K].reshape(L, K)
        fixed = np.where(U.max(1) > 1 - 1e-9, U.argmax(1), -1)
    else:   # max-marginal gaps of at least 2 under the scores
        T, st, en = pr._trans(g)
        A = a.reshape(L, K)
        fw, bw = np.empty((L, K)), np.empty((L, K))
        fw[0] = A[0] + st
        for i in range(1, L):
            fw[i] = (fw[i - 1][:, None] + T).max(0) + A[i]
        bw[-1] = en
        for i in range(L - 2, -1, -1):
            bw[i] = (T + (A[i + 1] + bw[i + 1])[None, :]).max(1)
        mm = np.sort(fw + bw, 1)
        fixed = np.where(mm[:, -1] - mm[:, -2] >= 2.0, (fw + bw).argmax(1), -1)
    return g, fixed


def run(theta, L, K, n_evals, exact, tol=1e-9):
    row = {"tokens": L}
    if exact:
        mu_ex, it, _, t = exact_active_set(theta, K, L, 50000)
        row.update({"exact iterations": it, "exact CPU (s)": f"{t:.2f}"})
    c0 = time.process_time()
    g, fixed = dual_start(theta, L, K, n_evals)
    row["dual evaluations"] = n_evals
    row["dual CPU (s)"] = f"{time.process_time() - c0:.2f}"
    pr = CoupledPieces(theta, L, K)
    rounds, majors, minors = 0, [], []
    while True:
        rounds += 1
        mu, n_major, n_minor = pr.solve(fixed, g, tol)
        majors.append(n_major)
        minors.append(n_minor)
        gap, y = pr.certificate(mu)
        if gap <= tol * max(1.0, np.abs(theta).sum()) or not (fixed >= 0).any():
            break
        fixed = np.where((fixed >= 0) & (y != fixed), -1, fixed)
    row.update({
        "fixed positions": int((fixed >= 0).sum()), "pieces": len(pr.pieces(fixed)),
        "rounds": rounds, "majors per round": "/".join(map(str, majors)),
        "minors per round": "/".join(map(str, minors)),
        "pieces CPU (s, Python)": f"{time.process_time() - c0:.1f}",
        "gap": f"{gap:.1e}"})
    if exact:
        row["max abs. difference"] = f"{np.abs(mu - mu_ex).max():.1e}"
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 parents=[common_parser("out", "no_write")])
    ap.add_argument("--lengths", default="200,500")
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--dual-evals", default="0,30",
                    help="comma-separated numbers of dual L-BFGS evaluations to try "
                         "(0: split from max-marginal gaps)")
    ap.add_argument("--no-exact", action="store_true",
                    help="skip the exact active set (slow beyond 1,000 tokens)")
    args = parse_args(ap, argv)
    lengths = [int(v) for v in args.lengths.split(",")]
    est, toks = chain_scores(args.n_train, max(lengths))
    K = len(est.classes_)
    exact_active_set(np.zeros(10 * K + K * K + 2 * K), K, 10, 10)   # compilation
    rows = []
    for L in lengths:
        U = est.decision_function([toks[:L]])[0]
        theta = np.concatenate([np.ravel(U), est.transition_.ravel(), est.start_,
                                est.end_]).astype(np.float64)
        for n_evals in (int(v) for v in args.dual_evals.split(",")):
            row = run(theta, L, K, n_evals, not args.no_exact)
            print(row, flush=True)
            rows.append(row)
    header = list(rows[0])
    table = md_table(header, [[r.get(h, "") for h in header] for r in rows])
    info = ", ".join(f"{k} {v}" for k, v in machine_info().items())
    text = "\n".join([
        "# The chain projection as coupled pieces (prototype) vs the exact active set", "",
        f"Command: `{command_line(argv)}`", "", f"Machine: {info}", "", table, ""])
    report(args, text, "projection_pieces")


if __name__ == "__main__":
    main()
