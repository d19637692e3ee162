"""The dual solver (solver='bcfw') against independent optima.

* On every structure, a tiny problem with explicit dense feature maps
  (``theta_i = M_i z``, written here, independent of the library's feature
  maps) is solved by BCFW and by an epigraph QP over the enumerated
  structures (scipy's SLSQP): the objectives agree and the certificate
  brackets the optimum.
* The three problem types' ``block_entries`` equal ``A_i^T D_i`` computed
  from the problems' own scores at unit vectors.
* Estimators: the gap is reported, n_jobs and random_state behave, warm
  starts re-use the dual, wrong combinations raise.
"""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from structlearn import DependencyParser, LabelRanker, MultiLabelClassifier, \
    OrdinalRegressor, SequenceTagger
from structlearn.datasets import load_ewt, load_ewt_pos, load_wine_quality
from structlearn.losses import Hinge, PosLearn, Projection, SparseMAP, get_loss
from structlearn.solvers import LinearProblem, bcfw
from structlearn.structures import Chain, IntractableError
from structlearn.structures.tree import Tree
from test_properties import DEFAULT_KW, KINDS, make_inst


class DenseProblem:
    """``theta_i = M_i z`` with explicit matrices, every example scored on its
    own structure (a batch of one for chains and trees)."""

    def __init__(self, inst, M, labels, loss):
        self.inst, self.M, self.labels, self.loss = inst, M, labels, loss
        self.n_samples = len(M)
        self.n_params = M[0].shape[1]
        self.penalized = np.ones(self.n_params, dtype=bool)

    def structure(self, i):
        st = self.inst.st
        if isinstance(st, Chain):
            return Chain(st.n_tags, [0, len(self.labels[i])])
        if isinstance(st, Tree):
            return Tree([0, len(self.labels[i])], single_root=st.single_root,
                        projective=st.projective)
        return st

    def one(self, z, i):
        theta = self.M[i] @ z
        st = self.structure(i)
        y = self.labels[i] if self.inst.ragged else self.labels[i][None]
        th = theta if self.inst.ragged else theta[None]
        v, g = self.loss.value_and_grad(th, y, st)
        return float(np.ravel(v)[0]), theta, np.ravel(g)

    def value_and_grad(self, z, idx=None):
        idx = range(self.n_samples) if idx is None else idx
        vals, g = [], np.zeros(self.n_params)
        for i in idx:
            v, _, gi = self.one(z, i)
            vals.append(v)
            g += self.M[i].T @ gi
        return np.array(vals), g

    def part_sizes(self):
        return np.array([m.shape[0] for m in self.M])

    def unary_sizes(self):
        # the penalised parts lead each block (the instances' own masks)
        masks = [self.inst.unary(i) for i in range(self.n_samples)]
        assert all(not m[int(m.sum()):].any() for m in masks)
        return np.array([int(m.sum()) for m in masks])

    def pieces(self, z, idx):
        res = [self.one(z, i) for i in idx]
        return (np.array([r[0] for r in res]), np.concatenate([r[1] for r in res]),
                np.concatenate([r[2] for r in res]))

    def block_entries(self, idx, D):
        cols, vals, ptr, o = [], [], [0], 0
        for i in idx:
            p = self.M[i].shape[0]
            g = self.M[i].T @ D[o:o + p]
            o += p
            cols.append(np.arange(self.n_params))
            vals.append(g)
            ptr.append(ptr[-1] + self.n_params)
        return np.concatenate(cols), np.concatenate(vals), np.array(ptr)


def instance(kind, n, seed):
    """A tiny instance with ``n`` examples, their labels and dense maps."""
    rng = np.random.RandomState(seed)
    kw = dict(DEFAULT_KW[kind])
    if kind in ("chain", "tree"):
        kw["lengths"] = [int(v) for v in rng.randint(1, 3 if kind == "tree" else 4, n)]
    inst = make_inst(kind, n=n, **kw)
    labels = []
    for i in range(n):
        labs, _ = inst.vertices(i)
        labels.append(np.asarray(labs[rng.randint(len(labs))]))
    d = 4
    M = [rng.randn(s, d) for s in inst.sizes()]
    return inst, M, labels


def qp_optimum(inst, M, labels, loss, lam):
    """``min lam/2 ||z||^2 + mean_i loss_i`` by an epigraph QP over the
    enumerated structures (one slack per example, or per position for
    PosLearn)."""
    n, d = len(M), M[0].shape[1]
    rows = []   # (slack index, constant, slope in z): slack >= c + g z
    n_slack = 0
    owner = []
    for i in range(n):
        labs, Phi = inst.vertices(i)
        a = inst.label_index(i, labels[i])
        L = np.array([inst.cost(i, v, labels[i]) for v in labs])
        G = (Phi - Phi[a]) @ M[i]
        if isinstance(loss, PosLearn):
            p_y = inst.positions(labels[i])
            pos = np.array([inst.positions(v) for v in labs])
            for c in range(len(p_y)):
                rows.append((n_slack, 0.0, np.zeros(d)))
                for b in range(len(labs)):
                    if pos[b, c] != p_y[c]:
                        lc = inst.position_cost(c, pos[b, c], p_y[c])
                        rows.append((n_slack, lc, lc * G[b]))
                owner.append(i)
                n_slack += 1
        else:
            rows.append((n_slack, 0.0, np.zeros(d)))
            for b in range(len(labs)):
                if loss.scaling == "margin":
                    rows.append((n_slack, L[b], G[b]))
                else:
                    rows.append((n_slack, L[b], L[b] * G[b]))
            owner.append(i)
            n_slack += 1
    S = np.array([r[0] for r in rows])
    C = np.array([r[1] for r in rows])
    Gz = np.array([r[2] for r in rows])

    def f(x):
        z = x[:d]
        return 0.5 * lam * z @ z + x[d:].sum() / n

    def fg(x):
        g = np.concatenate([lam * x[:d], np.full(n_slack, 1.0 / n)])
        return g

    cons = {"type": "ineq",
            "fun": lambda x: x[d + S] - C - Gz @ x[:d],
            "jac": lambda x: np.hstack([-Gz, np.eye(n_slack)[S]])}
    x0 = np.concatenate([np.zeros(d), np.full(n_slack, C.max() + 1.0)])
    res = minimize(f, x0, jac=fg, constraints=[cons], method="SLSQP",
                   options={"ftol": 1e-13, "maxiter": 2000})
    assert res.success, res.message
    return res.fun


LOSSES = [("hinge", Hinge("margin")), ("hinge-slack", Hinge("slack")), ("poslearn", PosLearn())]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name,loss", LOSSES, ids=[n for n, _ in LOSSES])
@pytest.mark.parametrize("seed", [0, 1])
def test_bcfw_reaches_the_enumerated_qp_optimum(kind, name, loss, seed):
    inst, M, labels = instance(kind, 4, seed)
    if name == "hinge-slack" and not inst.st.has_exact_slack:
        # no exact violator (rankings): the loss refuses the structure
        with pytest.raises(IntractableError, match="hinge-approx-slack"):
            loss.check(inst.st)
        return
    lam = 0.3
    opt = qp_optimum(inst, M, labels, loss, lam)
    problem = DenseProblem(inst, M, labels, loss)
    z, epochs, obj, gap, _ = bcfw(problem, lam, max_iter=20000, tol=1e-7,
                                  batch_size=2, random_state=seed)
    # the reported objective is the primal value at z
    vals, _ = problem.value_and_grad(z)
    assert obj == pytest.approx(vals.mean() + 0.5 * lam * z @ z, rel=1e-12, abs=1e-14)
    scale = max(1.0, abs(opt))
    assert obj >= opt - 1e-7 * scale          # nothing beats the optimum
    assert obj <= opt + 2e-6 * scale          # and BCFW reached it
    # the certificate: obj - gap * obj is a lower bound of the optimum
    assert gap <= 1e-7
    assert obj * (1.0 - gap) <= opt + 1e-7 * scale


def sparsemap_dual_optimum(inst, M, labels, margin, lam, every_part=False):
    """The optimum of ``lam/2 ||z||^2 + mean_i sparsemap_i(M_i z)`` as the
    maximum of its dual over the enumerated structures (scipy's SLSQP):
    ``max_beta 1/n sum_i [c_i^T beta_i - 1/2 ||U_i Phi_i^T beta_i||^2 +
    1/2 ||U_i phi_i||^2] - lam/2 ||z||^2``, ``z = 1/(lam n) sum_i M_i^T
    (phi_i - Phi_i^T beta_i)``, each ``beta_i`` in the simplex, ``c_i`` the
    task costs for m-SparseMAP (zero otherwise) and ``U_i`` the penalised
    parts written by the test instances (``every_part``: all parts, the
    Euclidean projection onto the marginal polytope)."""
    n = len(M)
    blocks = []
    for i in range(n):
        labs, Phi = inst.vertices(i)
        a = inst.label_index(i, labels[i])
        c = np.array([inst.cost(i, v, labels[i]) if margin else 0.0 for v in labs])
        U = np.ones(len(Phi[a])) if every_part else inst.unary(i).astype(float)
        blocks.append((Phi, Phi[a], c, U))
    sizes = [len(b[0]) for b in blocks]
    off = np.concatenate([[0], np.cumsum(sizes)])

    def neg_dual(x):
        z = np.zeros(M[0].shape[1])
        val, grads = 0.0, []
        mus = []
        for i, (Phi, phi, c, U) in enumerate(blocks):
            mu = Phi.T @ x[off[i]:off[i + 1]]
            mus.append(mu)
            z += M[i].T @ (phi - mu) / (lam * n)
            val += (c @ x[off[i]:off[i + 1]] - 0.5 * np.sum(U * mu * mu)
                    + 0.5 * np.sum(U * phi * phi)) / n
        val -= 0.5 * lam * z @ z
        for i, (Phi, phi, c, U) in enumerate(blocks):
            g_mu = -U * mus[i] / n + M[i] @ z / n   # d/dmu_i
            grads.append(c / n + Phi @ g_mu)
        return -val, -np.concatenate(grads)

    cons = [{"type": "eq", "fun": (lambda x, i=i: x[off[i]:off[i + 1]].sum() - 1.0),
             "jac": (lambda x, i=i: np.where((np.arange(off[-1]) >= off[i])
                                              & (np.arange(off[-1]) < off[i + 1]), 1.0, 0.0))}
            for i in range(n)]
    x0 = np.concatenate([np.full(k, 1.0 / k) for k in sizes])
    res = minimize(neg_dual, x0, jac=True, bounds=[(0.0, 1.0)] * off[-1], constraints=cons,
                   method="SLSQP", options={"ftol": 1e-14, "maxiter": 5000})
    assert res.success, res.message
    return -res.fun


QUADRATIC = {"sparsemap": SparseMAP(), "m-sparsemap": SparseMAP(margin=True),
             "projection": Projection()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(QUADRATIC))
@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])  # issue 20
def test_bcfw_reaches_the_enumerated_sparsemap_optimum(kind, name, seed):
    # the SparseMAP losses' dual is a concave quadratic over the same sets
    # (the Euclidean projection's too, every part penalised); BCFW's atoms
    # are the loss's own maximisers (SparseMAP solutions, projections)
    inst, M, labels = instance(kind, 4, seed)
    lam = 0.3
    opt = sparsemap_dual_optimum(inst, M, labels, name == "m-sparsemap", lam,
                                 every_part=name == "projection")
    problem = DenseProblem(inst, M, labels, QUADRATIC[name])
    z, epochs, obj, gap, _ = bcfw(problem, lam, max_iter=5000, tol=1e-8,
                                  batch_size=2, random_state=seed)
    vals, _ = problem.value_and_grad(z)
    assert obj == pytest.approx(vals.mean() + 0.5 * lam * z @ z, rel=1e-12, abs=1e-14)
    scale = max(1.0, abs(opt))
    assert obj >= opt - 1e-7 * scale
    assert obj <= opt + 2e-6 * scale
    assert gap <= 1e-8
    assert obj * (1.0 - gap) <= opt + 1e-7 * scale


def test_bcfw_warns_on_its_epoch_budget_and_keeps_the_best_point():
    inst, M, labels = instance("chain", 6, 3)
    problem = DenseProblem(inst, M, labels, Hinge("margin"))
    with pytest.warns(ConvergenceWarning, match="BCFW stopped at max_iter=2 epochs"):
        z, epochs, obj, gap, _ = bcfw(problem, 1e-3, max_iter=2, tol=1e-9)
    assert epochs == 2 and gap > 1e-9
    vals, _ = problem.value_and_grad(z)
    assert obj == pytest.approx(vals.mean() + 0.5e-3 * z @ z)


@pytest.mark.parametrize("kind", ["chain", "perm"])
def test_certificates_only_when_the_estimated_gap_is_close_or_periodically(kind):
    """With ``check_every=k`` the primal passes of the certificate run every
    k-th epoch or once the oracle pass's estimated gap is within 4 tol; the
    run still stops only on a certified gap, at the optimum a
    certificate-every-epoch run reaches."""
    inst, M, labels = instance(kind, 5, 2)
    lam = 0.05
    opt = qp_optimum(inst, M, labels, Hinge("margin"), lam)
    runs = {}
    for k in (1, 6):
        problem = DenseProblem(inst, M, labels, Hinge("margin"))
        certs = []
        z, epochs, obj, gap, _ = bcfw(problem, lam, max_iter=5000, tol=1e-6, batch_size=2,
                                      random_state=0, check_every=k,
                                      callback=lambda e, o, g: certs.append(e) and False)
        assert gap <= 1e-6
        assert opt - 1e-6 * abs(opt) <= obj <= opt * (1 + 2e-6) + 1e-12
        assert certs[-1] == epochs
        runs[k] = (epochs, certs)
    epochs1, certs1 = runs[1]
    epochs6, certs6 = runs[6]
    assert certs1 == list(range(1, epochs1 + 1))
    # a certificate's oracle pass serves as the next epoch's (at the
    # epoch's start rather than at each batch's), so the iterates differ,
    # but not the work much
    assert 0.75 * epochs1 - 6 <= epochs6 <= 1.25 * epochs1 + 6
    assert len(certs6) < len(certs1)
    assert all(e % 6 == 0 or e >= certs6[-1] - 6 for e in certs6)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "5"])
def test_bcfw_rejects_a_bad_certificate_period(bad):
    inst, M, labels = instance("cube", 3, 0)
    problem = DenseProblem(inst, M, labels, Hinge("margin"))
    with pytest.raises(ValueError, match="check_every must be a positive integer"):
        bcfw(problem, 0.1, max_iter=3, check_every=bad)


# --------------------------------------------------------------- feature maps
def _explicit_map(problem, idx):
    """``A_i`` of each example from the problem's own scores at unit vectors
    (the scores are linear in z)."""
    cols = []
    for k in range(problem.n_params):
        e = np.zeros(problem.n_params)
        e[k] = 1.0
        cols.append(problem.pieces(e, idx)[1])
    return np.array(cols).T


def _check_block_entries(problem, rng):
    n = problem.n_samples
    idx = np.sort(rng.choice(n, min(n, 5), replace=False))
    idx = np.concatenate([idx, idx[:1]])  # a repeated example, as the solver asks
    A = _explicit_map(problem, idx)
    sizes = problem.part_sizes()[idx]
    D = rng.randn(sizes.sum()) * (rng.rand(sizes.sum()) < 0.5)
    cols, vals, ptr = problem.block_entries(idx, D)
    assert len(ptr) == len(idx) + 1
    off = np.concatenate([[0], np.cumsum(sizes)])
    for j in range(len(idx)):
        got = np.zeros(problem.n_params)
        np.add.at(got, cols[ptr[j]:ptr[j + 1]], vals[ptr[j]:ptr[j + 1]])
        want = A[off[j]:off[j + 1]].T @ D[off[j]:off[j + 1]]
        np.testing.assert_allclose(got, want, atol=1e-10)


def _check_part_columns(problem, rng):
    # part_columns(rep, parts): the column of A_i of each part, as entries
    n = problem.n_samples
    rep = rng.choice(n, 6)
    sizes = problem.part_sizes()
    parts = np.array([rng.randint(sizes[i]) for i in rep])
    parts[-1] = sizes[rep[-1]] - 1            # a transition-type part of a chain
    cols, vals, ptr = problem.part_columns(rep, parts)
    assert len(ptr) == len(rep) + 1
    for k, (i, p) in enumerate(zip(rep, parts)):
        got = np.zeros(problem.n_params)
        np.add.at(got, cols[ptr[k]:ptr[k + 1]], vals[ptr[k]:ptr[k + 1]])
        np.testing.assert_allclose(got, _explicit_map(problem, [i])[p], atol=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("binary", [True, False])
def test_block_entries_of_the_chain_problem(fit_intercept, binary):
    X, y = load_ewt_pos("train")
    X, y = X[:12], y[:12]
    if not binary:  # real-valued token features (2-D arrays): the data path
        rng = np.random.RandomState(4)
        X = [rng.randn(len(s), 5) * (rng.rand(len(s), 5) < 0.7) for s in y]
    est = SequenceTagger(loss="hinge", fit_intercept=fit_intercept)
    loss = get_loss("hinge")
    vec, tokens, off, y_int, classes, sup_ptr, sup_label, d, _, _, _ = est._prepare(
        X, y, loss, False)
    assert (len(tokens.data) == 0) == binary
    from structlearn.estimators.sequence import chain_problem
    problem = chain_problem(tokens, off, y_int, len(classes), sup_ptr, sup_label, loss,
                            fit_intercept)
    _check_block_entries(problem, np.random.RandomState(0))
    _check_part_columns(problem, np.random.RandomState(0))
    frozen = chain_problem(tokens, off, y_int, len(classes), sup_ptr, sup_label, loss,
                           fit_intercept, transitions=False)
    cols, vals, _ = frozen.part_columns(np.array([0]), np.array([frozen.part_sizes()[0] - 1]))
    assert len(cols) == 1 and vals[0] == 0.0   # the held-at-zero end weight


def test_block_entries_of_the_parser_problem():
    train = load_ewt("train")[:8]
    est = DependencyParser(loss="hinge")
    loss = get_loss("hinge")
    heads, word_off, vec, cache = est._prepare([s.tokens for s in train],
                                               [s.heads for s in train], loss, False)
    from structlearn.estimators.parsing import parser_problem
    problem = parser_problem(cache, heads, loss, True, False)
    rng = np.random.RandomState(1)
    # the parser has many weights: check the map on a random subset of them
    keep = np.sort(rng.choice(problem.n_params, 60, replace=False))
    idx = np.array([0, 3, 5, 3])
    sizes = problem.part_sizes()[idx]
    D = rng.randn(sizes.sum())
    cols, vals, ptr = problem.block_entries(idx, D)
    off = np.concatenate([[0], np.cumsum(sizes)])
    for k in keep:
        e = np.zeros(problem.n_params)
        e[k] = 1.0
        col = problem.pieces(e, idx)[1]
        for j in range(len(idx)):
            c, v = cols[ptr[j]:ptr[j + 1]], vals[ptr[j]:ptr[j + 1]]
            got = v[c == k].sum()
            assert got == pytest.approx(col[off[j]:off[j + 1]] @ D[off[j]:off[j + 1]],
                                        abs=1e-10)
    # part_columns: an arc's column is its features
    parts = np.array([rng.randint(problem.part_sizes()[i]) for i in idx])
    pc, pv, pp = problem.part_columns(idx, parts)
    for j, (i, p) in enumerate(zip(idx, parts)):
        feats = pc[pp[j]:pp[j + 1]]
        np.testing.assert_array_equal(pv[pp[j]:pp[j + 1]], 1.0)
        assert len(feats) > 0
        for k in np.union1d(keep, feats):
            e = np.zeros(problem.n_params)
            e[k] = 1.0
            assert problem.pieces(e, [i])[1][p] == pytest.approx(np.sum(feats == k))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("tied", [False, True])
def test_block_entries_of_the_linear_problem(sparse, tied):
    import scipy.sparse as sp
    from structlearn.structures import OrderSimplex, UnitCube
    rng = np.random.RandomState(2)
    X = rng.randn(9, 4) * (rng.rand(9, 4) < 0.6)
    if sparse:
        X = sp.csr_matrix(X)
    if tied:
        st = OrderSimplex(4)
        tie = np.ones((3, 1))
        q, y = 1, rng.randint(1, 5, 9)
    else:
        st = UnitCube(3)
        tie = None
        q, y = 3, (rng.rand(9, 3) < 0.5).astype(int)
    problem = LinearProblem(X, y, st, Hinge(), q, True, tie=tie)
    _check_block_entries(problem, rng)
    # a unit score vector (a part's column) touches one weight row and one
    # intercept: no stored zeros for the other rows (they made each visit of
    # a dense multilabel example q times slower)
    if not tied:
        D = np.zeros(2 * 3)
        D[1] = D[3 + 2] = 1.0
        cols, vals, ptr = problem.block_entries(np.array([0, 1]), D)
        nnz = [np.count_nonzero(np.asarray(X[i].todense() if sparse else X[i])) for i in (0, 1)]
        assert list(np.diff(ptr)) == [nnz[0] + 1, nnz[1] + 1]
        assert np.all(vals != 0)


# ----------------------------------------------------------------- estimators
def _fit_quietly(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return est.fit(X, y)


def test_estimators_report_the_gap_and_match_cutting_plane():
    X, y = load_wine_quality("red")
    X = (X - X.mean(0)) / X.std(0)
    X, y = X[:300], y[:300]
    a = _fit_quietly(OrdinalRegressor(loss="hinge", solver="bcfw", alpha=0.01, tol=1e-5,
                                      max_iter=5000, random_state=0), X, y)
    b = OrdinalRegressor(loss="hinge", solver="cutting-plane", alpha=0.01, tol=1e-8,
                         max_iter=1000).fit(X, y)
    assert a.solver_ == "bcfw" and 0 <= a.duality_gap_ <= 1e-5
    assert 0 <= b.duality_gap_ <= 1e-8
    assert a.objective_ == pytest.approx(b.objective_, rel=2e-5)
    c = OrdinalRegressor(loss="hinge", solver="sgd", random_state=0).fit(X, y)
    assert c.duality_gap_ is None
    # L-BFGS certifies its point only when nothing is left unpenalised
    d = OrdinalRegressor(loss="crf", solver="lbfgs", alpha=0.01).fit(X, y)
    assert d.duality_gap_ is None
    e = OrdinalRegressor(loss="crf", solver="lbfgs", alpha=0.01, fit_intercept=False,
                         tol=1e-8).fit(X, y)
    assert 0 <= e.duality_gap_ < 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        early = OrdinalRegressor(loss="crf", solver="lbfgs", alpha=0.01, fit_intercept=False,
                                 max_iter=2).fit(X, y)
    # the early point's certificate brackets the converged objective
    assert early.duality_gap_ > 1e-6
    assert early.objective_ * (1 - early.duality_gap_) <= e.objective_ <= early.objective_


def _bundled(kind):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import StandardScaler
    from structlearn.datasets import load_ewt_constructions, load_label_ranking
    if kind in ("permutahedron", "birkhoff"):
        X, y = load_label_ranking("stock")
        return LabelRanker(polytope=kind), StandardScaler().fit_transform(X), y
    if kind == "ordinal":
        X, y = load_wine_quality("red")
        return OrdinalRegressor(), StandardScaler().fit_transform(X), y
    texts, Y, _ = load_ewt_constructions("train")
    X = TfidfVectorizer().fit_transform(texts)
    if kind == "cube":
        return MultiLabelClassifier(), X, Y
    keep = (Y.sum(1) >= 1) & (Y.sum(1) <= 3)   # the knapsack: 1 to 3 labels
    return MultiLabelClassifier(min_labels=1, max_labels=3), X[keep], Y[keep]


@pytest.mark.parametrize("loss", ["hinge", "hinge-slack", "hinge-approx-slack", "poslearn"])
@pytest.mark.parametrize("kind", ["permutahedron", "birkhoff", "ordinal", "cube", "knapsack"])
def test_every_max_margin_loss_converges_on_bundled_data(kind, loss):
    # the acceptance check of the dual solver: every max-margin loss on every
    # fixed-size estimator certifies the default tol on bundled real data
    # (at alpha = 1e-2; at the default 1e-3 the slack-type losses on the
    # rankings need more than the default 200 epochs, docs/benchmarks.rst)
    from structlearn.structures.base import IntractableError
    est, X, y = _bundled(kind)
    est.set_params(loss=loss, solver="bcfw", random_state=0, alpha=1e-2)
    if loss == "hinge-slack" and kind in ("permutahedron", "birkhoff"):
        with pytest.raises(IntractableError, match="hinge-approx-slack"):
            est.fit(X, y)
        return
    _fit_quietly(est, X, y)
    assert 0 <= est.duality_gap_ <= 1e-3   # the default tol
    assert est.n_iter_ < 200


@pytest.mark.slow
def test_every_max_margin_loss_converges_on_bundled_tagging_data():
    # the same acceptance check for the tagger (bundled EWT POS sentences)
    X, y = load_ewt_pos("train")
    X, y = X[:200], y[:200]
    for loss in ["hinge", "hinge-slack", "hinge-approx-slack", "poslearn"]:
        est = _fit_quietly(SequenceTagger(loss=loss, solver="bcfw", alpha=1e-2,
                                          random_state=0), X, y)
        assert 0 <= est.duality_gap_ <= 1e-3, loss
        assert est.n_iter_ < 200, loss


@pytest.mark.slow
def test_every_max_margin_loss_converges_on_bundled_parsing_data():
    # the same acceptance check for the parser (the first 20 bundled EWT
    # sentences).  Approximate slack at alpha = 1: slack-scaled pieces ask
    # for a unit margin where margin-scaled ones ask for the cost, so the
    # same alpha regularises them far less (on 100 sentences at alpha = 1
    # the margin-scaled objective is 8.1, near w = 0, and the slack-scaled
    # 1.3); approximate slack at alpha = 1 takes the epochs the margin-scaled
    # hinge takes at 1e-2 (docs/benchmarks.rst)
    from structlearn.structures.base import IntractableError
    sents = load_ewt("train")[:20]
    X, y = [s.tokens for s in sents], [s.heads for s in sents]
    kw = dict(solver="bcfw", n_jobs=1, random_state=0, max_iter=300)
    with pytest.raises(IntractableError, match="hinge-approx-slack"):
        DependencyParser(loss="hinge-slack", alpha=1e-2, **kw).fit(X, y)
    for loss, alpha in [("hinge", 1e-2), ("poslearn", 1e-2), ("hinge-approx-slack", 1.0)]:
        est = _fit_quietly(DependencyParser(loss=loss, alpha=alpha, **kw), X, y)
        assert 0 <= est.duality_gap_ <= 1e-3, loss
        assert est.n_iter_ < 300, loss


def test_chain_bcfw_deterministic_over_threads_and_seeds():
    X, y = load_ewt_pos("train")
    X, y = X[:60], y[:60]
    kw = dict(loss="hinge", solver="bcfw", alpha=0.05, max_iter=15, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = SequenceTagger(n_jobs=1, **kw).fit(X, y)
        b = SequenceTagger(n_jobs=2, **kw).fit(X, y)
        c = SequenceTagger(n_jobs=1, **kw).fit(X, y)
        d = SequenceTagger(n_jobs=1, **{**kw, "random_state": 4}).fit(X, y)
    np.testing.assert_array_equal(a._z, b._z)
    np.testing.assert_array_equal(a._z, c._z)
    assert not np.array_equal(a._z, d._z)
    assert a.duality_gap_ == b.duality_gap_


def test_warm_start_reuses_the_dual_iterate():
    X, y = load_ewt_pos("train")
    X, y = X[:40], y[:40]
    kw = dict(loss="hinge", solver="bcfw", tol=1e-3, max_iter=2000, random_state=0)
    cold = _fit_quietly(SequenceTagger(alpha=0.1, **kw), X, y)
    warm = SequenceTagger(alpha=0.2, warm_start=True, **kw)
    _fit_quietly(warm, X, y)
    epochs_first = warm.n_iter_
    warm.set_params(alpha=0.1)
    _fit_quietly(warm, X, y)
    assert warm.duality_gap_ <= 1e-3
    assert warm.objective_ == pytest.approx(cold.objective_, rel=2e-3)
    assert warm.n_iter_ < cold.n_iter_, (warm.n_iter_, cold.n_iter_, epochs_first)
    # other targets: the stored dual does not apply, the fit starts cold
    import copy
    y2 = [list(reversed(s)) for s in y]
    ref = copy.deepcopy(warm)
    del ref._dual_state
    _fit_quietly(warm, X, y2)
    _fit_quietly(ref, X, y2)
    np.testing.assert_array_equal(warm._z, ref._z)
    # a fit by another solver forgets the dual iterate
    warm.set_params(solver="sgd", max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warm.fit(X, y)
    assert not hasattr(warm, "_dual_state")


def test_parser_bcfw_converges_on_a_small_treebank():
    train = load_ewt("train")[:20]   # 40 before issue 20
    est = _fit_quietly(DependencyParser(loss="hinge", solver="bcfw", alpha=0.2,
                                        random_state=0),
                       [s.tokens for s in train], [s.heads for s in train])
    assert est.duality_gap_ <= 1e-3


@pytest.mark.parametrize("loss,msg", [
    ("crf", "solver='bcfw' trains the max-margin losses"),
    ("squared", "solver='bcfw' trains the max-margin losses"),
    ("perceptron", "trained by the averaged perceptron"),
])
def test_bcfw_refuses_losses_it_cannot_train(loss, msg):
    X, y = load_wine_quality("red")
    with pytest.raises(ValueError, match=msg):
        OrdinalRegressor(loss=loss, solver="bcfw").fit(X[:50], y[:50])


def test_bcfw_needs_a_positive_alpha():
    X, y = load_wine_quality("red")
    with pytest.raises(ValueError, match="solver='bcfw' needs alpha > 0"):
        OrdinalRegressor(loss="hinge", solver="bcfw", alpha=0.0).fit(X[:50], y[:50])


# ------------------------------------------------------------ the certificate
def _dual_value(problem, state, lam):
    """``-lam/2 ||w||^2 + l`` of a returned dual iterate, recomputed from its
    working sets (``w = -1/(lam n) sum_i M_i^T m_i``)."""
    n = problem.n_samples
    w = np.zeros(problem.n_params)
    ell = 0.0
    for i, (c, ids, vals, beta) in enumerate(state.sets):
        assert beta.min() >= 0 and beta.sum() == pytest.approx(1.0)
        m = np.zeros(problem.M[i].shape[0])
        for b, ix, v in zip(beta, ids, vals):
            m[ix] += b * v
        w -= problem.M[i].T @ m / (lam * n)
        ell += float(beta @ c) / n
    return -0.5 * lam * w @ w + ell


@pytest.mark.parametrize("kind", ["cube", "perm", "chain", "tree"])
def test_the_dual_iterate_is_a_lower_bound_of_the_optimum(kind):
    inst, M, labels = instance(kind, 4, 5)
    lam = 0.3
    loss = Hinge("margin")
    opt = qp_optimum(inst, M, labels, loss, lam)
    problem = DenseProblem(inst, M, labels, loss)
    z, _, obj, gap, state = bcfw(problem, lam, max_iter=300, tol=1e-9, random_state=0)
    dual = _dual_value(problem, state, lam)
    assert dual <= opt + 1e-9
    assert dual >= opt - 1e-4 * max(1.0, abs(opt))


@pytest.mark.parametrize("seed", [8, 13, 21])
def test_certificate_holds_when_the_truth_is_outside_the_decoders_set(seed):
    # non-projective gold trees under projective decoding: the margin hinge's
    # maximum is then often the truth's own zero piece, whose slope is 0
    # (seeds 8 and 13 put the dual above the primal when the clamped value
    # came with the violator's slope)
    inst = make_inst("tree", n=3, lengths=[4, 4, 4], single_root=True, projective=True)
    labels = [np.array([3, 4, 0, 3])] * 3       # arcs 3->1 and 4->2 cross
    rng = np.random.RandomState(seed)
    M = [rng.randn(s, 4) for s in inst.sizes()]
    lam = 0.05
    problem = DenseProblem(inst, M, labels, Hinge("margin"))
    z, _, obj, gap, state = bcfw(problem, lam, max_iter=200, tol=1e-8, random_state=0)
    dual = _dual_value(problem, state, lam)

    def primal(x):
        return problem.value_and_grad(x)[0].mean() + 0.5 * lam * x @ x

    points = [z] + [z + 0.3 * rng.randn(len(z)) for _ in range(30)]
    assert dual <= min(primal(x) for x in points) + 1e-9
    assert obj * (1.0 - gap) <= dual + 1e-9 * max(1.0, abs(dual))


def test_one_pairwise_step_is_the_exact_line_search():
    # block of two vertices: the zero piece (all the weight) and (c, g);
    # f(gamma) = gamma c / n - lam/2 ||z0 - gamma g / (lam n)||^2 is maximised
    # at gamma = lam n (c + <g, z0>) / ||g||^2, clipped to [0, 1]
    from structlearn.kernels.dual import working_set_steps
    rng = np.random.RandomState(0)
    lam, n = 0.3, 7.0
    for c in (0.05, 0.4, 5.0):
        z0 = rng.randn(5)
        g = rng.randn(5)
        # the vertex's slope g = A^T a with a = (1, 1) on two parts whose
        # columns of A are g[:3] (plus a zero duplicate) and g[3:]; the
        # example's part list holds them in the order (part 7, part 2)
        qcols = np.array([3, 4, 0, 1, 2, 2])
        qvals = np.concatenate([g[3:], g[:3], [0.0]])
        qe = np.array([[0, 2], [2, 6]])
        pspan = np.array([[0, 0], [0, 2]])
        ploc = np.array([1, 0])
        pvals = np.array([1.0, 1.0])
        z, avg = z0.copy(), np.zeros(5)
        beta = np.array([1.0, 0.0])
        gaps, d_ell = np.empty(1), np.empty(1)
        # one example: the zero piece as vertex 0 of its working set, the
        # new vertex as its oracle's (``extra``)
        working_set_steps(z, avg, np.array([0]), np.array([0]), np.array([1]), np.array([1]),
                          np.array([False]), np.zeros(4), np.array([0, 4]), np.array([2]),
                          np.array([[0, 2]]), qe, qcols, qvals, pspan, np.array([2, 7]),
                          ploc, pvals, np.array([0.0, c]), beta, np.zeros(5), np.zeros(0),
                          np.zeros(0, dtype=np.int64), lam, np.array([n]), 0, 1, gaps, d_ell)
        gamma = min(1.0, max(0.0, lam * n * (c + g @ z0) / (g @ g)))
        assert beta[1] == pytest.approx(gamma, rel=1e-12)
        np.testing.assert_allclose(z, z0 - gamma / (lam * n) * g, rtol=1e-12)
        assert d_ell[0] == pytest.approx(gamma * c / n)
        assert gaps[0] == pytest.approx(max(0.0, (c + g @ z0)) / n)


def test_warm_start_key_covers_the_loss_parameters():
    X, y = load_ewt_pos("train")
    X, y = X[:20], y[:20]
    est = SequenceTagger(loss=Hinge("approx-slack", n_search=6), solver="bcfw",
                         warm_start=True, max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
        key = est._dual_state.key
        est.set_params(loss=Hinge("approx-slack", n_search=8))
        est.fit(X, y)
    assert est._dual_state.key != key
    # without warm_start no dual iterate is kept on the estimator
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = SequenceTagger(loss="hinge", solver="bcfw", max_iter=2).fit(X, y)
    assert not hasattr(plain, "_dual_state") and not hasattr(plain, "_last_state")


@pytest.mark.parametrize("kind", ["cube", "order", "chain"])
def test_approximate_slack_certificate_bounds_the_exact_slack_optimum(kind):
    # The approximate violator can miss the maximising piece: the certificate
    # then holds for the pieces found (a restricted problem), whose optimum
    # is at most the exact slack-scaled one.
    inst, M, labels = instance(kind, 4, 3)
    lam = 0.3
    exact_opt = qp_optimum(inst, M, labels, Hinge("slack"), lam)
    problem = DenseProblem(inst, M, labels, Hinge("approx-slack"))
    z, _, obj, gap, state = bcfw(problem, lam, max_iter=5000, tol=1e-8, random_state=0)
    scale = max(1.0, abs(exact_opt))
    assert 0.0 <= gap <= 1e-8
    assert obj * (1.0 - gap) <= exact_opt + 1e-7 * scale
    # the reported objective is never below the dual value it is certified by
    assert _dual_value(problem, state, lam) <= obj + 1e-10 * scale
    # nor below the approximate loss at z
    vals, _ = problem.value_and_grad(z)
    assert obj >= vals.mean() + 0.5 * lam * z @ z - 1e-12 * scale


def test_approximate_slack_gap_is_not_a_clamped_negative_on_real_data():
    # On these rows the approximate violator's primal value fell below the
    # dual value of the pieces found earlier, and the gap was reported as 0.
    X, y = load_wine_quality("red")
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    X, y = X[:400], y[:400]
    approx = _fit_quietly(OrdinalRegressor(loss="hinge-approx-slack", solver="bcfw",
                                           alpha=1e-2, random_state=0), X, y)
    exact = _fit_quietly(OrdinalRegressor(loss="hinge-slack", solver="bcfw", alpha=1e-2,
                                          random_state=0, tol=1e-4, max_iter=300), X, y)
    assert 0.0 < approx.duality_gap_ <= 1e-3
    # a certified lower bound of the exact optimum is below any upper bound
    assert approx.objective_ * (1.0 - approx.duality_gap_) <= exact.objective_


def test_the_pools_gram_matrices_and_part_lists_stay_those_of_its_working_sets(
        monkeypatch):
    # The Gram matrices persist between visits and are remapped when
    # vertices leave; the vertices' parts are kept on per-example part
    # lists that move when they grow and are rebuilt when the arrays are
    # rewritten.  After every epoch the Gram matrices must equal those
    # recomputed from the working sets, every vertex's parts, mapped
    # through its example's list, its own, and the listed columns of A the
    # problem's.
    import structlearn.solvers._bcfw as S
    from structlearn.kernels.dual import gram_blocks

    checked, rewritten = [], []
    add, compact = S._Pool.add, S._Pool.compact

    def recording_add(self, idx, loss_vals, theta, G):
        nv0 = int(self.top[0])
        add(self, idx, loss_vals, theta, G)
        for i in idx:
            v = self.extra[i]
            if v >= 0:
                assert nv0 <= v < self.top[0]

    def checking_compact(self):
        xptr = compact(self)
        fresh, kptr, kdim, fresh_q = gram_blocks(xptr, self.qspan, self.qe, self.qcols,
                                                 self.qvals, self.pspan, self.pids,
                                                 self.ploc, self.pvals, self.acc, self.nu)
        np.testing.assert_array_equal(kptr, self.kptr)
        assert len(fresh_q) == (len(fresh) if len(self.nu) else 0) == len(self.qq)
        for i in range(len(xptr) - 1):
            m, D = xptr[i + 1] - xptr[i], kdim[i]
            K_live = self.kpool[kptr[i]:kptr[i + 1]].reshape(D, D)[:m, :m]
            K_new = fresh[kptr[i]:kptr[i + 1]].reshape(D, D)[:m, :m]
            np.testing.assert_allclose(K_live, K_new, rtol=1e-12, atol=1e-12)
            if len(self.nu):   # SparseMAP's Gram matrices of the unary parts
                Q_live = self.qq[kptr[i]:kptr[i + 1]].reshape(D, D)[:m, :m]
                Q_new = fresh_q[kptr[i]:kptr[i + 1]].reshape(D, D)[:m, :m]
                np.testing.assert_allclose(Q_live, Q_new, rtol=1e-12, atol=1e-12)
        # every vertex's parts, through its example's list, are its own, and
        # each listed part's column is the problem's
        sample = range(0, len(xptr) - 1, 7)
        for i in sample:
            q0, q1 = self.qspan[i]
            for v in range(xptr[i] + 1, xptr[i + 1]):
                k0, k1 = self.pspan[v]
                np.testing.assert_array_equal(self.qpart[q0 + self.ploc[k0:k1]],
                                              self.pids[k0:k1])
            cols, vals, ptr = self._columns(np.full(q1 - q0, i), self.qpart[q0:q1])
            for q in range(q0, q1):
                e0, e1 = self.qe[q]
                np.testing.assert_array_equal(self.qcols[e0:e1],
                                              cols[ptr[q - q0]:ptr[q - q0 + 1]])
                np.testing.assert_array_equal(self.qvals[e0:e1],
                                              vals[ptr[q - q0]:ptr[q - q0 + 1]])
        checked.append(int(xptr[-1] - (len(xptr) - 1)))  # vertices beyond the zero pieces
        live = self.pspan[:xptr[-1], 1] - self.pspan[:xptr[-1], 0]
        rewritten.append(int(self.top[1]) == int(live.sum()))
        return xptr

    monkeypatch.setattr(S._Pool, "add", recording_add)
    monkeypatch.setattr(S._Pool, "compact", checking_compact)
    X, y = load_ewt_pos("train")
    n = 30   # sentences (60 before issue 20)
    for loss, slack in (("hinge", 4096), ("hinge", 0), ("sparsemap", 4096),
                        ("sparsemap", 0)):   # slack 0: entries and lists rewritten
        checked.clear()
        rewritten.clear()
        monkeypatch.setattr(S._Pool, "slack", slack)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            SequenceTagger(loss=loss, solver="bcfw", alpha=1e-3, max_iter=8, tol=1e-9,
                           random_state=0).fit(X[:n], y[:n])
        assert len(checked) == 8 and max(checked) > n  # working sets did grow
        if slack == 0:
            assert any(rewritten)
        rewritten.clear()


def test_auto_trains_the_sparsemap_tagger_by_bcfw_and_the_rest_as_before():
    # the tagger's SparseMAP losses go to the dual solver (benchmarked on
    # CoNLL-2000); its projections, and every fixed-size estimator, keep L-BFGS
    # (20 sentences, 40 before issue 20; the same alpha * n on each side of 1)
    X, y = load_ewt_pos("train")
    X, y = X[:20], y[:20]
    for loss, solver in (("sparsemap", "bcfw"), ("m-sparsemap", "bcfw"),
                         ("projection", "lbfgs"), ("crf", "lbfgs")):
        est = SequenceTagger(loss=loss, alpha=0.1).fit(X, y)   # alpha * n = 2
        assert est.solver_ == solver
        if solver == "bcfw":
            assert est.duality_gap_ <= 1e-3
    # alpha * n < 1 (weakly regularised: many epochs) or alpha = 0 (no dual):
    # L-BFGS, as an explicit solver= is always obeyed
    for alpha in (0.04, 0.0):
        est = SequenceTagger(loss="sparsemap", alpha=alpha, max_iter=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            assert est.fit(X, y).solver_ == "lbfgs"
    assert SequenceTagger(loss="sparsemap", alpha=0.04, solver="bcfw",
                          max_iter=3).fit(X, y).solver_ == "bcfw"
    Xw, yw = load_wine_quality("red")
    assert OrdinalRegressor(loss="sparsemap").fit(Xw[:100], yw[:100]).solver_ == "lbfgs"


@pytest.mark.parametrize("make,data", [
    # ~60 s warm at load 6 (the L-BFGS reference): the whole suite (CI) runs
    # it; the fast selection keeps the parser's case and, for the tagger's
    # SparseMAP by BCFW, the warm-start, sample-weight and auto tests below
    pytest.param(lambda **kw: SequenceTagger(loss="sparsemap", **kw), "pos",
                 marks=pytest.mark.slow),
    (lambda **kw: DependencyParser(loss="sparsemap", **kw), "parse"),
], ids=["tagger-sparsemap", "parser-sparsemap"])
def test_sparsemap_by_bcfw_matches_lbfgs_on_the_estimators_own_problems(make, data):
    # the estimators' own problems (their unary_sizes, part columns and
    # warm-started pieces), without an intercept so that both solvers have
    # the same objective: BCFW's certificate brackets L-BFGS's optimum.
    # (m-SparseMAP's dual differs only by the cost, covered by the enumerated
    # test above; its L-BFGS reference takes minutes here: 600 iterations on
    # 30 sentences, still 2e-6 above BCFW's certified point)
    if data == "pos":
        X, y = load_ewt_pos("train")
        X, y = X[:20], y[:20]
        kw, tol = dict(fit_intercept=False), 1e-6
    else:
        train = load_ewt("train")[:8]   # 15 before issue 20
        X, y = [s.tokens for s in train], [s.heads for s in train]
        kw, tol = {}, 1e-5
    alpha = 2.0 / len(X)
    est = make(solver="bcfw", alpha=alpha, tol=tol, random_state=0, **kw).fit(X, y)
    ref = make(solver="lbfgs", alpha=alpha, tol=1e-10, max_iter=600, random_state=0,
               **kw).fit(X, y)
    assert est.duality_gap_ <= tol
    # L-BFGS stalls on this piecewise-quadratic objective within ~1e-4 of
    # its optimum; BCFW's point is within its tolerance of L-BFGS's value,
    # and its certified lower bound lies below that value
    assert est.objective_ <= ref.objective_ * (1 + tol)
    assert est.objective_ == pytest.approx(ref.objective_, rel=1e-4)
    assert est.objective_ * (1 - est.duality_gap_) <= ref.objective_
    if data == "pos":
        # SparseMAP on a chain is not differentiable in the transition
        # weights (Loss.differentiable): L-BFGS's gradient-based gap does not
        # certify there, and is not reported
        assert ref.duality_gap_ is None
    else:
        # every arc penalised, every coordinate too: L-BFGS certifies its point
        assert 0 <= ref.duality_gap_ < 1e-2
        assert ref.objective_ * (1 - ref.duality_gap_) <= est.objective_


def test_bcfw_warm_start_of_a_quadratic_dual():
    # the dual iterate kept by warm_start carries the atoms; their quadratic
    # term enters the restored dual value, so the certificate stays valid
    X, y = load_ewt_pos("train")
    X, y = X[:10], y[:10]   # 20 before issue 20
    cold = SequenceTagger(loss="sparsemap", solver="bcfw", alpha=0.1, tol=1e-5,
                          random_state=0, fit_intercept=False).fit(X, y)
    warm = SequenceTagger(loss="sparsemap", solver="bcfw", alpha=0.2, tol=1e-5,
                          random_state=0, fit_intercept=False, warm_start=True).fit(X, y)
    warm.set_params(alpha=0.1)
    warm.fit(X, y)
    assert warm.duality_gap_ <= 1e-5
    assert warm.objective_ == pytest.approx(cold.objective_, rel=1e-5)
    assert warm.n_iter_ < cold.n_iter_


def test_bcfw_trains_the_euclidean_projection_of_a_tagger():
    X, y = load_ewt_pos("train")
    X, y = X[:15], y[:15]   # 30 before issue 20
    est = SequenceTagger(loss="projection", solver="bcfw", alpha=1e-2, tol=1e-4,
                         random_state=0).fit(X, y)
    ref = SequenceTagger(loss="projection", solver="lbfgs", alpha=1e-2, tol=1e-10,
                         fit_intercept=False, max_iter=2000).fit(X, y)
    # BCFW penalises the intercept: without one both solve the same problem
    est_ni = SequenceTagger(loss="projection", solver="bcfw", alpha=1e-2, tol=1e-6,
                            fit_intercept=False, random_state=0).fit(X, y)
    assert est.duality_gap_ <= 1e-4
    assert est_ni.objective_ == pytest.approx(ref.objective_, rel=1e-5)
    assert est_ni.objective_ * (1 - est_ni.duality_gap_) <= ref.objective_ + 1e-12


def test_range_caches_serve_only_their_own_range():
    from structlearn.structures.base import RangeCaches, SupportCache
    caches = RangeCaches()
    a = caches.get(np.arange(5, 9))
    assert isinstance(a, SupportCache)
    assert caches.get(np.arange(5, 9)) is a               # the same range: its cache
    assert caches.get(np.arange(5, 8)) is not a           # another length
    assert caches.get(np.arange(6, 10)) is not a          # another start
    for idx in ([5, 7, 8, 9], [8, 7, 6, 5], [5, 6, 6, 7], []):   # not a range
        assert caches.get(np.array(idx, dtype=np.int64)) is None
