"""Direct tests of the linear-model kernels in ``structlearn.kernels.linear``.

Every kernel is compared with an independent plain-NumPy reference: the token
features as a dense matrix ``X`` (n_rows, n_features), the support-restricted
weights as a dense matrix ``W`` (n_features, K) that is zero off the support,
and a chain sequence's feature map as a dense matrix ``A_i`` (its flat score
block x the parameters ``[w (support), transitions, start, end, bias]``).  The
CRF loss is checked against enumeration of every tag sequence, its gradient
against the enumerated expectations and against central finite differences.
Instances are small and random (several seeds), with empty token rows,
features without any support entry, one tag, length-1 sequences, and binary
features (``data`` empty).
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp, softmax

from structlearn.feature_maps import Tokens
from structlearn.kernels.linear import (
    chain_assemble_scores,
    chain_scores,
    chain_block_entries,
    chain_crf_value_grad,
    chain_part_columns,
    chain_part_offsets,
    chain_reduce_grad,
    chain_transition_upper,
    chain_unary_mask,
    chain_unary_view,
    narrow_dtype,
    narrow_ints,
    observed_support,
    select_entries,
    support_entries,
    support_grad,
    support_grad_entries,
    support_param_ids,
    support_scores,
)

SEEDS = [0, 1, 2]
CASES = [(seed, K, binary) for seed in SEEDS for K in (1, 3) for binary in (False, True)]


# ---------------------------------------------------------------------------
# Random instances and independent references
# ---------------------------------------------------------------------------
class Inst:
    """Random CSR token rows and a random (feature, label) support.

    The kernel arrays use the library's dtypes (``nz_start`` int32, narrow
    ``nz_len`` and ``sup_label``); ``nz_start``/``nz_len`` are computed here
    from their definition, not with :func:`support_entries`.
    """

    def __init__(self, seed, K, binary, n_rows=12, n_features=7, max_nnz=4, wide=False):
        rng = np.random.RandomState(seed)
        self.rng, self.K, self.binary = rng, K, binary
        self.n_rows, self.n_features = n_rows, n_features
        # support: a random label subset per feature, some features have none
        mask = rng.rand(n_features, K) < rng.uniform(0.4, 1.0)
        mask[rng.rand(n_features) < 0.25] = False
        mask[0] = True  # at least one non-empty support
        mask[-1] = False  # and one feature without support
        self.mask = mask
        self.sup_ptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
        self.feat_of_s, sup_label = np.nonzero(mask)  # sorted by feature, then label
        self.S = len(sup_label)
        # CSR rows, some empty
        nnz = rng.randint(0, max_nnz + 1, size=n_rows)
        nnz[rng.choice(n_rows, size=2, replace=False)] = 0
        nnz[rng.randint(n_rows)] = max_nnz
        self.indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
        self.indices = np.concatenate(
            [np.sort(rng.choice(n_features, size=m, replace=False)) for m in nnz]
        ).astype(np.int64)
        self.row_of = np.repeat(np.arange(n_rows), nnz)
        values = rng.uniform(0.5, 2.0, size=len(self.indices)) * rng.choice([-1.0, 1.0],
                                                                            size=len(self.indices))
        self.values = np.ones(len(self.indices)) if binary else values
        self.data = np.empty(0) if binary else values.copy()
        self.X = np.zeros((n_rows, n_features))
        self.X[self.row_of, self.indices] = self.values
        lens = np.diff(self.sup_ptr)
        if wide:
            self.sup_label = sup_label.astype(np.int64)
            self.nz_start = self.sup_ptr[self.indices].astype(np.int64)
            self.nz_len = lens[self.indices].astype(np.int64)
        else:
            self.sup_label = sup_label.astype(np.uint8)
            self.nz_start = self.sup_ptr[self.indices].astype(np.int32)
            self.nz_len = lens[self.indices].astype(np.uint8)

    def csr(self):
        return sp.csr_matrix((self.values, self.indices, self.indptr),
                             shape=(self.n_rows, self.n_features))

    def W(self, w):
        W = np.zeros((self.n_features, self.K))
        W[self.feat_of_s, self.sup_label.astype(np.int64)] = w
        return W

    def w_grad(self, M):
        """Gradient in the support weights of ``<M, W>`` for a dense (d, K) ``M``."""
        return M[self.feat_of_s, self.sup_label.astype(np.int64)]

    def args(self, indptr=None):
        return (self.indptr if indptr is None else indptr, self.nz_start, self.nz_len, self.data)


def phi_ref(seq, K):
    """Vertex of one tag sequence: unary one-hots, transition counts, start, end."""
    seq = np.asarray(seq)
    U = np.zeros((len(seq), K))
    U[np.arange(len(seq)), seq] = 1.0
    T = np.zeros((K, K))
    for a, b in zip(seq[:-1], seq[1:]):
        T[a, b] += 1.0
    s, e = np.zeros(K), np.zeros(K)
    s[seq[0]] = 1.0
    e[seq[-1]] = 1.0
    return np.concatenate([U.ravel(), T.ravel(), s, e])


def all_phis(L, K):
    seqs = list(itertools.product(range(K), repeat=L))
    return np.array(seqs, dtype=np.int64), np.array([phi_ref(s, K) for s in seqs])


def block_ref(U_rows, trans, start, end):
    """One flat chain block, written from the layout."""
    return np.concatenate([U_rows.ravel(), trans.ravel(), start, end])


def dense_A(inst, rows, fit_intercept):
    """Dense feature map ``theta_i = A_i z`` of the sequence of token rows
    ``rows``, ``z = [w (support), transitions, start, end, bias]``."""
    K, S = inst.K, inst.S
    L = len(rows)
    shared = K * K + 2 * K
    A = np.zeros((L * K + shared, S + shared + (K if fit_intercept else 0)))
    lab = inst.sup_label.astype(np.int64)
    for t, r in enumerate(rows):
        A[t * K + lab, np.arange(S)] = inst.X[r, inst.feat_of_s]
        if fit_intercept:
            A[t * K + np.arange(K), S + shared + np.arange(K)] = 1.0
    A[L * K + np.arange(shared), S + np.arange(shared)] = 1.0
    return A


def make_chain(inst, rng, min_len=1, max_len=4):
    """Split the instance's rows into sequences (the first of length 1)."""
    lengths, total = [], 0
    while total < inst.n_rows:
        L = 1 if not lengths else int(rng.randint(min_len, max_len + 1))
        L = min(L, inst.n_rows - total)
        lengths.append(L)
        total += L
    lengths = np.array(lengths, dtype=np.int64)
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return lengths, tok_off


def part_off_ref(lengths, K):
    return np.concatenate([[0], np.cumsum(lengths * K + K * K + 2 * K)]).astype(np.int64)


# ---------------------------------------------------------------------------
# support kernels
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_reference_inputs_agree_with_library_constructor(seed, K, binary):
    """``Tokens.from_csr`` (the library's path, via :func:`support_entries`)
    builds the same kernel arrays as the definition used here."""
    inst = Inst(seed, K, binary)
    tk = Tokens.from_csr(inst.csr(), inst.sup_ptr)
    assert_array_equal(tk.indptr, inst.indptr)
    assert_array_equal(tk.nz_start, inst.nz_start)
    assert_array_equal(tk.nz_len, inst.nz_len)
    if binary:
        assert len(tk.data) == 0
    else:
        assert_array_equal(tk.data, inst.data)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtypes", [(np.int32, np.uint8), (np.int64, np.int64)])
def test_support_entries(seed, dtypes):
    inst = Inst(seed, 3, False, n_rows=15)
    st_dt, ln_dt = dtypes
    nz_start = np.full(len(inst.indices), -7, dtype=st_dt)
    nz_len = np.full(len(inst.indices), 99, dtype=ln_dt)
    support_entries(inst.indices, inst.sup_ptr, nz_start, nz_len)
    for j, a in enumerate(inst.indices):
        labels = np.flatnonzero(inst.mask[a])
        assert nz_len[j] == len(labels)
        assert nz_start[j] == inst.mask[:a].sum()
        assert_array_equal(inst.sup_label[nz_start[j]:nz_start[j] + nz_len[j]], labels)
    # no entries: nothing written
    empty = np.empty(0, dtype=st_dt)
    support_entries(np.empty(0, dtype=np.int64), inst.sup_ptr, empty, np.empty(0, dtype=ln_dt))


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_support_scores(seed, K, binary, wide):
    inst = Inst(seed, K, binary, wide=wide)
    w = inst.rng.randn(inst.S)
    U = support_scores(*inst.args(), inst.sup_label, w, K)
    assert U.shape == (inst.n_rows, K)
    assert_allclose(U, inst.X @ inst.W(w), rtol=1e-12, atol=1e-12)
    # empty rows score zero
    empty = np.diff(inst.indptr) == 0
    assert empty.any()
    assert_array_equal(U[empty], 0.0)
    # a contiguous slice of rows (indptr need not start at 0)
    a, b = 3, 9
    Us = support_scores(*inst.args(inst.indptr[a:b + 1]), inst.sup_label, w, K)
    assert_allclose(Us, (inst.X @ inst.W(w))[a:b], rtol=1e-12, atol=1e-12)
    # no rows
    U0 = support_scores(*inst.args(inst.indptr[4:5]), inst.sup_label, w, K)
    assert U0.shape == (0, K)


def _sparse_G(rng, n, K):
    G = rng.randn(n, K)
    G[rng.rand(n) < 0.3] = 0.0  # whole rows zero (skipped by the kernel)
    G[rng.rand(n, K) < 0.2] = 0.0  # and single entries
    return np.ascontiguousarray(G)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_support_grad(seed, K, binary, wide):
    inst = Inst(seed, K, binary, wide=wide)
    G = _sparse_G(inst.rng, inst.n_rows, K)
    g0 = inst.rng.randn(inst.S)
    g = g0.copy()
    support_grad(*inst.args(), inst.sup_label, G, g)
    ref = inst.w_grad(inst.X.T @ G)
    assert_allclose(g - g0, ref, rtol=1e-12, atol=1e-12)  # added, not overwritten
    # the gradient of the linear function <G, U(w)>: exact directional derivatives
    w, d = inst.rng.randn(inst.S), inst.rng.randn(inst.S)
    f = lambda v: np.sum(G * (inst.X @ inst.W(v)))  # noqa: E731
    assert_allclose(f(w + d) - f(w), (g - g0) @ d, rtol=1e-10, atol=1e-10)
    # a slice of rows
    a, b = 2, 10
    g = np.zeros(inst.S)
    support_grad(*inst.args(inst.indptr[a:b + 1]), inst.sup_label,
                 np.ascontiguousarray(G[a:b]), g)
    assert_allclose(g, inst.w_grad(inst.X[a:b].T @ G[a:b]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed,K,binary", CASES)
def test_support_grad_entries(seed, K, binary):
    inst = Inst(seed, K, binary)
    G = _sparse_G(inst.rng, inst.n_rows, K)
    cols, vals = support_grad_entries(*inst.args(), inst.sup_label, G)
    assert cols.dtype == np.int64 and len(cols) == len(vals)
    assert np.all((cols >= 0) & (cols < inst.S))
    assert np.all(vals != 0.0)  # zero entries skipped (data has no zeros)
    assert_allclose(np.bincount(cols, vals, minlength=inst.S),
                    inst.w_grad(inst.X.T @ G), rtol=1e-12, atol=1e-12)
    # one entry per (stored entry, support entry) with a non-zero G
    n_ref = sum(int((inst.mask[a] & (G[t] != 0.0)).sum())
                for t, a in zip(inst.row_of, inst.indices))
    assert len(cols) == n_ref
    # every entry's value is x_j G[t, label(s)] for some stored entry j
    # (a multiset comparison through the per-support sums of squares)
    lab = inst.sup_label.astype(np.int64)
    sq = np.zeros(inst.S)
    for t, a, x in zip(inst.row_of, inst.indices, inst.values):
        for s in range(inst.sup_ptr[a], inst.sup_ptr[a + 1]):
            sq[s] += (x * G[t, lab[s]]) ** 2
    assert_allclose(np.bincount(cols, vals ** 2, minlength=inst.S), sq, rtol=1e-12, atol=1e-12)
    # all-zero gradient: no entries
    cols, vals = support_grad_entries(*inst.args(), inst.sup_label, np.zeros((inst.n_rows, K)))
    assert len(cols) == 0 and len(vals) == 0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("K", [1, 3])
def test_support_param_ids(seed, K):
    inst = Inst(seed, K, True, n_rows=14)
    for a, b in [(0, inst.n_rows), (2, 11), (5, 6), (4, 4)]:
        ids = support_param_ids(inst.indptr[a:b + 1], inst.nz_start, inst.nz_len)
        assert ids.dtype == np.int64
        # support weight s is read once per stored entry of its feature
        in_rows = (inst.row_of >= a) & (inst.row_of < b)
        per_feature = np.bincount(inst.indices[in_rows], minlength=inst.n_features)
        assert_array_equal(np.bincount(ids, minlength=inst.S), per_feature[inst.feat_of_s])
        # the weights read are exactly those the scores depend on
        w = inst.rng.randn(inst.S)
        U = support_scores(*inst.args(inst.indptr[a:b + 1]), inst.sup_label, w, K)
        w2 = w.copy()
        w2[np.setdiff1d(np.arange(inst.S), ids)] = 1e3
        U2 = support_scores(*inst.args(inst.indptr[a:b + 1]), inst.sup_label, w2, K)
        assert_array_equal(U, U2)


def test_narrow_dtype_and_narrow_ints():
    for n in [0, 1, 2, 255, 256, 257, 32767, 32768, 32769, 2 ** 31, 2 ** 31 + 1, 2 ** 40]:
        dt = narrow_dtype(n)
        assert isinstance(dt, np.dtype) and np.issubdtype(dt, np.integer)
        if n:
            assert np.iinfo(dt).max >= n - 1 and np.iinfo(dt).min <= 0
        assert dt.itemsize <= np.dtype(np.int64).itemsize
    # up to 256 values (tags): one byte
    assert narrow_dtype(256) == np.uint8 and narrow_dtype(1) == np.uint8
    assert narrow_dtype(257).itemsize == 2
    assert narrow_dtype(2 ** 31).itemsize <= 4
    assert narrow_dtype(2 ** 31 + 1) == np.int64
    sizes = [narrow_dtype(n).itemsize for n in range(0, 70000, 97)]
    assert sizes == sorted(sizes)
    rng = np.random.RandomState(0)
    for n in [1, 3, 256, 300, 40000]:
        a = rng.randint(0, n, size=50)
        a[0] = n - 1
        # not contiguous, in int64 and already in the narrow dtype
        for src in [np.repeat(a, 2)[::2], np.repeat(a.astype(narrow_dtype(n)), 2)[::2]]:
            assert not src.flags.c_contiguous
            out = narrow_ints(src, n)
            assert out.dtype == narrow_dtype(n) and out.flags.c_contiguous
            assert_array_equal(out.astype(np.int64), a)


@pytest.mark.parametrize("seed,binary", [(s, b) for s in SEEDS for b in (False, True)])
def test_select_entries(seed, binary):
    inst = Inst(seed, 3, binary)
    rng = inst.rng
    for rows in [rng.randint(0, inst.n_rows, size=8),  # repeats, any order
                 np.flatnonzero(np.diff(inst.indptr) == 0),  # empty rows only
                 np.arange(inst.n_rows)[::-1],
                 np.zeros(0, dtype=np.int64)]:
        rows = np.asarray(rows, dtype=np.int64)
        ptr, st, ln, dat = select_entries(*inst.args(), rows)
        assert st.dtype == inst.nz_start.dtype and ln.dtype == inst.nz_len.dtype
        assert ptr.dtype == np.int64 and ptr[0] == 0 and len(ptr) == len(rows) + 1
        assert_array_equal(np.diff(ptr), np.diff(inst.indptr)[rows])
        for i, r in enumerate(rows):
            src = slice(inst.indptr[r], inst.indptr[r + 1])
            assert_array_equal(st[ptr[i]:ptr[i + 1]], inst.nz_start[src])
            assert_array_equal(ln[ptr[i]:ptr[i + 1]], inst.nz_len[src])
            if not binary:
                assert_array_equal(dat[ptr[i]:ptr[i + 1]], inst.data[src])
        if binary:
            assert len(dat) == 0
        else:
            assert len(dat) == ptr[-1]
        # the selected rows score as the dense rows X[rows]
        w = rng.randn(inst.S)
        U = support_scores(ptr, st, ln, dat, inst.sup_label, w, inst.K)
        assert_allclose(U, inst.X[rows] @ inst.W(w), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("K", [1, 2, 3])
def test_observed_support(seed, K):
    rng = np.random.RandomState(seed)
    n, d = 15, 8
    X = sp.random(n, d, density=0.3, random_state=rng, format="csr")
    y = rng.randint(0, K, size=n).astype(np.int64)
    indptr, indices = X.indptr.astype(np.int64), X.indices.astype(np.int64)
    sup_ptr, sup_label = observed_support(indptr, indices, y, d, K)
    pairs = {(int(a), int(y[t])) for t in range(n) for a in indices[indptr[t]:indptr[t + 1]]}
    assert sup_ptr[0] == 0 and len(sup_ptr) == d + 1
    for a in range(d):
        expected = sorted(k for (b, k) in pairs if b == a)
        assert_array_equal(sup_label[sup_ptr[a]:sup_ptr[a + 1]], expected)
    assert sup_ptr[-1] == len(pairs) == len(sup_label)
    # no data at all: every support empty
    sp0, sl0 = observed_support(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                np.zeros(0, dtype=np.int64), d, K)
    assert_array_equal(sp0, np.zeros(d + 1)) and len(sl0) == 0


# ---------------------------------------------------------------------------
# chain layout kernels
# ---------------------------------------------------------------------------
LAYOUT_CASES = [(seed, K) for seed in SEEDS for K in (1, 2, 3)]


def _layout(seed, K):
    rng = np.random.RandomState(seed)
    lengths = np.concatenate([[1], rng.randint(1, 5, size=4)]).astype(np.int64)
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return rng, lengths, tok_off, part_off_ref(lengths, K)


@pytest.mark.parametrize("seed,K", LAYOUT_CASES)
def test_chain_part_offsets(seed, K):
    _, lengths, tok_off, part_off = _layout(seed, K)
    assert_array_equal(chain_part_offsets(tok_off, K), part_off)
    assert_array_equal(chain_part_offsets(np.zeros(1, dtype=np.int64), K), [0])


@pytest.mark.parametrize("seed,K", LAYOUT_CASES)
def test_chain_assemble_scores(seed, K):
    rng, lengths, tok_off, part_off = _layout(seed, K)
    U = rng.randn(tok_off[-1], K)
    trans, start, end = rng.randn(K, K), rng.randn(K), rng.randn(K)
    theta = chain_assemble_scores(U, trans, start, end, tok_off, part_off)
    ref = np.concatenate([block_ref(U[a:b], trans, start, end)
                          for a, b in zip(tok_off[:-1], tok_off[1:])])
    assert_array_equal(theta, ref)
    # the score of every tag sequence is the documented chain score
    for i, L in enumerate(lengths):
        if L > 3:
            continue
        seqs, Phi = all_phis(int(L), K)
        Ui = U[tok_off[i]:tok_off[i + 1]]
        direct = [Ui[np.arange(L), s].sum() + trans[s[:-1], s[1:]].sum() + start[s[0]]
                  + end[s[-1]] for s in seqs]
        assert_allclose(Phi @ theta[part_off[i]:part_off[i + 1]], direct, rtol=1e-12,
                        atol=1e-12)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("scale", [1.0, 0.37])
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_chain_scores(seed, K, binary, scale, wide):
    """The fused scoring kernel gives bit for bit what it replaces (support
    scores, scaled, plus the bias, then the block assembly with scaled
    shared scores), and the dense definition ``X W`` to rounding."""
    inst = Inst(seed, K, binary, wide=wide)
    lengths, tok_off = make_chain(inst, inst.rng)
    part_off = part_off_ref(lengths, K)
    w = inst.rng.randn(inst.S)
    trans, start, end, bias = (inst.rng.randn(K, K), inst.rng.randn(K), inst.rng.randn(K),
                               inst.rng.randn(K))
    theta = chain_scores(*inst.args(), inst.sup_label, w, trans, start, end, bias, scale,
                         tok_off, part_off)
    U = support_scores(*inst.args(), inst.sup_label, w, K) * scale + bias
    ref = chain_assemble_scores(U, scale * trans, scale * start, scale * end, tok_off,
                                part_off)
    assert_array_equal(theta, ref)
    dense = np.concatenate([block_ref((inst.X @ inst.W(w))[a:b] * scale + bias, scale * trans,
                                      scale * start, scale * end)
                            for a, b in zip(tok_off[:-1], tok_off[1:])])
    assert_allclose(theta, dense, rtol=1e-12, atol=1e-12)
    # a batch whose rows start inside a larger token matrix (indptr[0] > 0)
    a = int(tok_off[1])
    sub = chain_scores(*inst.args(inst.indptr[a:]), inst.sup_label, w, trans, start, end, bias,
                       scale, tok_off[1:] - a, part_off[1:] - part_off[1])
    assert_array_equal(sub, ref[part_off[1]:])


def test_kernel_helpers_have_no_python_entry_point():
    """Helpers compiled without Python wrappers (``njit_inner``) raise when
    called from Python instead of jumping to code that is not there."""
    from structlearn.kernels import chain
    with pytest.raises(TypeError, match="without a Python entry point"):
        chain._max_min(np.ones(3), 0, 3)


@pytest.mark.parametrize("seed,K", LAYOUT_CASES)
def test_chain_reduce_grad(seed, K):
    rng, lengths, tok_off, part_off = _layout(seed, K)
    G = rng.randn(part_off[-1])
    GU, gtrans, gstart, gend = chain_reduce_grad(G, tok_off, part_off, K)
    blocks = [G[a:b] for a, b in zip(part_off[:-1], part_off[1:])]
    GU_ref = np.concatenate([blk[:L * K].reshape(L, K) for blk, L in zip(blocks, lengths)])
    assert_array_equal(GU, GU_ref)
    tr = [blk[L * K:L * K + K * K].reshape(K, K) for blk, L in zip(blocks, lengths)]
    assert_allclose(gtrans, np.sum(tr, axis=0), rtol=1e-13, atol=1e-13)
    assert_allclose(gstart, np.sum([blk[-2 * K:-K] for blk in blocks], axis=0), rtol=1e-13,
                    atol=1e-13)
    assert_allclose(gend, np.sum([blk[-K:] for blk in blocks], axis=0), rtol=1e-13,
                    atol=1e-13)
    # the adjoint of chain_assemble_scores
    U = rng.randn(tok_off[-1], K)
    trans, start, end = rng.randn(K, K), rng.randn(K), rng.randn(K)
    theta = chain_assemble_scores(U, trans, start, end, tok_off, part_off)
    assert_allclose(G @ theta, np.sum(GU * U) + np.sum(gtrans * trans) + gstart @ start
                    + gend @ end, rtol=1e-12)


@pytest.mark.parametrize("seed,K", LAYOUT_CASES)
def test_chain_unary_mask_and_view(seed, K):
    rng, lengths, tok_off, part_off = _layout(seed, K)
    a = rng.randn(part_off[-1])
    mask = chain_unary_mask(tok_off, part_off, K)
    ref = np.concatenate([np.r_[np.ones(L * K, bool), np.zeros(K * K + 2 * K, bool)]
                          for L in lengths])
    assert mask.dtype == np.bool_
    assert_array_equal(mask, ref)
    V = chain_unary_view(a, tok_off, part_off, K)
    assert V.shape == (tok_off[-1], K)
    assert_array_equal(V, a[ref].reshape(-1, K))
    V[:] = 0.0  # a copy
    assert np.all(a[ref] != 0.0)


@pytest.mark.parametrize("seed,K", LAYOUT_CASES)
def test_chain_transition_upper(seed, K):
    """The documented bounds (1; ``L - 1`` on transitions) bound every
    enumerated vertex, and are attained except on the off-diagonal
    transitions (a tag change cannot repeat at every position)."""
    rng, lengths, tok_off, part_off = _layout(seed, K)
    ub = chain_transition_upper(tok_off, part_off, K)
    assert len(ub) == part_off[-1]
    for i, L in enumerate(lengths):
        _, Phi = all_phis(int(L), K)
        blk = ub[part_off[i]:part_off[i + 1]]
        ref = np.ones(len(blk))
        ref[L * K:L * K + K * K] = L - 1.0
        assert_array_equal(blk, ref)
        assert np.all(Phi <= blk)
        attained = np.ones(len(blk), dtype=bool)
        attained[L * K:L * K + K * K] = np.eye(K, dtype=bool).ravel()
        assert_array_equal(Phi.max(axis=0)[attained], blk[attained])


# ---------------------------------------------------------------------------
# the chain feature map: block entries, part columns, fused CRF
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_reference_feature_matrix(seed, K, binary):
    """Self-check of the dense reference ``A_i``: ``A_i z`` is the chain
    block of ``X W + bias`` and the shared scores."""
    inst = Inst(seed, K, binary)
    lengths, tok_off = make_chain(inst, inst.rng)
    z = inst.rng.randn(inst.S + K * K + 3 * K)
    S = inst.S
    W, trans = inst.W(z[:S]), z[S:S + K * K].reshape(K, K)
    start, end, bias = z[S + K * K:S + K * K + K], z[S + K * K + K:-K], z[-K:]
    for a, b in zip(tok_off[:-1], tok_off[1:]):
        A = dense_A(inst, np.arange(a, b), True)
        assert_allclose(A @ z, block_ref(inst.X[a:b] @ W + bias, trans, start, end),
                        rtol=1e-12, atol=1e-12)


def _sparse_D(rng, lengths, K):
    """Flat part blocks with whole token rows zero (as a violator minus the truth)."""
    blocks = []
    for L in lengths:
        U = rng.randn(L, K)
        U[rng.rand(L) < 0.4] = 0.0
        shared = rng.randn(K * K + 2 * K)
        shared[rng.rand(K * K + 2 * K) < 0.3] = 0.0
        blocks.append(np.concatenate([U.ravel(), shared]))
    return np.concatenate(blocks)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_chain_block_entries(seed, K, binary, fit_intercept):
    inst = Inst(seed, K, binary)
    rng = inst.rng
    lengths, tok_off = make_chain(inst, rng)
    n = len(lengths)
    # a subset of the sequences in any order (global token rows)
    idx = rng.permutation(n)[:max(1, n - 1)]
    part_off = part_off_ref(lengths[idx], K)
    D = _sparse_D(rng, lengths[idx], K)
    n_params = inst.S + K * K + 2 * K + (K if fit_intercept else 0)
    cols, vals, ptr = chain_block_entries(*inst.args(), inst.sup_label, D, tok_off[idx],
                                          part_off, K, inst.S, fit_intercept)
    assert len(ptr) == len(idx) + 1 and ptr[0] == 0 and ptr[-1] == len(cols) == len(vals)
    assert np.all(np.diff(ptr) >= 0)
    assert np.all((cols >= 0) & (cols < n_params))
    assert np.all(vals != 0.0)
    for q, i in enumerate(idx):
        A = dense_A(inst, np.arange(tok_off[i], tok_off[i + 1]), fit_intercept)
        Di = D[part_off[q]:part_off[q + 1]]
        got = np.bincount(cols[ptr[q]:ptr[q + 1]], vals[ptr[q]:ptr[q + 1]],
                          minlength=n_params)
        assert_allclose(got, A.T @ Di, rtol=1e-12, atol=1e-12)
    # a zero block gives no entries
    cols, vals, ptr = chain_block_entries(*inst.args(), inst.sup_label, np.zeros_like(D),
                                          tok_off[idx], part_off, K, inst.S, fit_intercept)
    assert len(cols) == 0 and np.all(ptr == 0)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_chain_part_columns(seed, K, binary, fit_intercept):
    inst = Inst(seed, K, binary)
    rng = inst.rng
    lengths, tok_off = make_chain(inst, rng)
    n = len(lengths)
    rep = np.repeat(np.arange(n), 3)
    rep = np.concatenate([rep, rng.randint(0, n, size=10)])
    sizes = lengths * K + K * K + 2 * K
    # per sequence: a unary part, a transition/start/end part, any part;
    # then random sequences and parts
    parts = []
    for j, i in enumerate(rep):
        unary, shared = rng.randint(lengths[i] * K), lengths[i] * K + rng.randint(K * K + 2 * K)
        parts.append([unary, shared, rng.randint(sizes[i])][j % 3] if j < 3 * n
                     else rng.randint(sizes[i]))
    parts = np.array(parts, dtype=np.int64)
    n_params = inst.S + K * K + 2 * K + (K if fit_intercept else 0)
    cols, vals, ptr = chain_part_columns(*inst.args(), inst.sup_label, tok_off[rep],
                                         lengths[rep], parts, K, inst.S, fit_intercept)
    assert len(ptr) == len(parts) + 1 and ptr[0] == 0 and ptr[-1] == len(cols)
    assert np.all((cols >= 0) & (cols < n_params))
    for q, (i, p) in enumerate(zip(rep, parts)):
        A = dense_A(inst, np.arange(tok_off[i], tok_off[i + 1]), fit_intercept)
        got = np.bincount(cols[ptr[q]:ptr[q + 1]], vals[ptr[q]:ptr[q + 1]],
                          minlength=n_params)
        assert_allclose(got, A[p], rtol=1e-12, atol=1e-12)
        # the same numbers as chain_block_entries on a unit score vector
        e = np.zeros(sizes[i])
        e[p] = 1.0
        c2, v2, _ = chain_block_entries(*inst.args(), inst.sup_label, e, tok_off[i:i + 1],
                                        np.array([0, sizes[i]], dtype=np.int64), K, inst.S,
                                        fit_intercept)
        assert_allclose(got, np.bincount(c2, v2, minlength=n_params), rtol=1e-13, atol=1e-13)


def _crf_reference(inst, tok_off, y, z):
    """Per-sequence CRF losses and the summed gradient in ``z = [w, transitions,
    start, end, bias]``, by enumeration of every tag sequence."""
    K = inst.K
    vals, grad = [], np.zeros(len(z))
    for a, b in zip(tok_off[:-1], tok_off[1:]):
        A = dense_A(inst, np.arange(a, b), True)
        theta = A @ z
        _, Phi = all_phis(int(b - a), K)
        scores = Phi @ theta
        phi_y = phi_ref(y[a:b], K)
        vals.append(logsumexp(scores) - phi_y @ theta)
        grad += A.T @ (softmax(scores) @ Phi - phi_y)
    return np.array(vals), grad


def _crf_call(inst, tok_off, y, z, g0=None, sw=None):
    """Run the fused kernel on ``z`` with the gradient accumulators starting
    at ``g0`` (default zero) and sequence weights ``sw`` (default ones);
    returns (values, accumulators after the call in the layout of ``z``,
    wg)."""
    K, S = inst.K, inst.S
    wg = np.empty(2 * S)
    wg[0::2] = z[:S]
    wg[1::2] = 0.0 if g0 is None else g0[:S]
    rest = np.zeros(K * K + 3 * K) if g0 is None else g0[S:].copy()
    trans = np.ascontiguousarray(z[S:S + K * K].reshape(K, K))
    start, end = z[S + K * K:S + K * K + K].copy(), z[S + K * K + K:S + K * K + 2 * K].copy()
    bias = z[S + K * K + 2 * K:].copy()
    sw = np.ones(len(tok_off) - 1) if sw is None else sw
    v = chain_crf_value_grad(*inst.args(), inst.sup_label, wg, trans, start, end, bias,
                             tok_off, y, rest, sw)
    return v, np.concatenate([wg[1::2], rest]), wg


@pytest.mark.parametrize("scale", [1.0, 400.0])
@pytest.mark.parametrize("seed", SEEDS)
def test_chain_crf_value_grad_weighted(seed, scale):
    """Sequence weights (zeros included) multiply each sequence's loss and
    gradient, in the scaled pass and in the log-space pass (``scale`` 400)."""
    K = 3
    inst = Inst(seed, K, False, n_rows=10)
    rng = inst.rng
    lengths, tok_off = make_chain(inst, rng, max_len=4)
    y = rng.randint(0, K, size=inst.n_rows).astype(np.int64)
    z = scale * rng.randn(inst.S + K * K + 3 * K)
    sw = rng.choice([0.0, 0.5, 1.0, 3.0], size=len(lengths))
    v, g, _ = _crf_call(inst, tok_off, y, z, sw=sw)
    want_g = np.zeros(len(z))
    for i in range(len(lengths)):  # each sequence alone, by enumeration
        a, b = tok_off[i], tok_off[i + 1]
        _, g_i = _crf_reference(inst, np.array([a, b]), y, z)
        want_g += sw[i] * g_i
    v_ref, _ = _crf_reference(inst, tok_off, y, z)
    assert_allclose(v, sw * np.maximum(v_ref, 0.0), rtol=1e-9, atol=1e-9 * scale)
    assert_allclose(g, want_g, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("scale", [1.0, 400.0])
@pytest.mark.parametrize("seed,K,binary", CASES)
def test_chain_crf_value_grad(seed, K, binary, scale):
    """Values and gradient against enumeration; ``scale`` 400 puts the score
    range of a sequence beyond the scaled recursions (log-space fallback)."""
    inst = Inst(seed, K, binary, n_rows=10)
    rng = inst.rng
    lengths, tok_off = make_chain(inst, rng, max_len=4)
    y = rng.randint(0, K, size=inst.n_rows).astype(np.int64)
    z = scale * rng.randn(inst.S + K * K + 3 * K)
    g0 = rng.randn(len(z))
    v, g, wg = _crf_call(inst, tok_off, y, z, g0)
    v_ref, g_ref = _crf_reference(inst, tok_off, y, z)
    tol = 1e-9 * scale
    assert v.shape == (len(lengths),)
    assert np.all(v >= 0.0)
    assert_allclose(v, np.maximum(v_ref, 0.0), rtol=1e-9, atol=tol)
    assert_allclose(g - g0, g_ref, rtol=1e-7, atol=1e-7)  # added to wg[1::2] and g_rest
    assert_array_equal(wg[0::2], z[:inst.S])  # the weights are untouched
    if K == 1:  # one tag: a single labelling, zero loss and gradient
        assert_allclose(v, 0.0, atol=1e-9 * scale)
        assert_allclose(g - g0, 0.0, atol=1e-9 * scale)


@pytest.mark.parametrize("seed,binary", [(s, b) for s in SEEDS for b in (False, True)])
def test_chain_crf_gradient_finite_differences(seed, binary):
    K = 3
    inst = Inst(seed, K, binary, n_rows=9)
    rng = inst.rng
    _, tok_off = make_chain(inst, rng, max_len=3)
    y = rng.randint(0, K, size=inst.n_rows).astype(np.int64)
    z = rng.randn(inst.S + K * K + 3 * K)
    _, g, _ = _crf_call(inst, tok_off, y, z)
    h = 1e-5
    for d in np.eye(len(z))[rng.choice(len(z), size=6, replace=False)].tolist() + \
            [rng.randn(len(z)) for _ in range(3)]:
        d = np.asarray(d)
        fp = _crf_call(inst, tok_off, y, z + h * d)[0].sum()
        fm = _crf_call(inst, tok_off, y, z - h * d)[0].sum()
        assert_allclose((fp - fm) / (2 * h), g @ d, rtol=1e-6, atol=1e-6)


def test_chain_crf_single_token_sequences_and_empty_rows():
    """Length-1 sequences made of featureless tokens: the loss is the softmax
    loss of ``start + end + bias``."""
    K = 3
    inst = Inst(5, K, True, n_rows=6)
    rng = inst.rng
    keep = np.flatnonzero(np.diff(inst.indptr) == 0)  # featureless tokens
    assert len(keep)
    tok_off = np.arange(inst.n_rows + 1, dtype=np.int64)
    y = rng.randint(0, K, size=inst.n_rows).astype(np.int64)
    z = rng.randn(inst.S + K * K + 3 * K)
    v, g, _ = _crf_call(inst, tok_off, y, z)
    v_ref, g_ref = _crf_reference(inst, tok_off, y, z)
    assert_allclose(v, v_ref, rtol=1e-10, atol=1e-10)
    assert_allclose(g, g_ref, rtol=1e-8, atol=1e-8)
    S = inst.S
    start, end, bias = z[S + K * K:S + K * K + K], z[S + K * K + K:-K], z[-K:]
    for t in keep:
        s = start + end + bias
        assert_allclose(v[t], logsumexp(s) - s[y[t]], rtol=1e-10)
    assert_allclose(g[S:S + K * K], 0.0, atol=1e-12)  # no transitions in length-1 chains


@pytest.mark.parametrize("seed,binary", [(s, b) for s in SEEDS for b in (False, True)])
def test_chain_crf_mixed_ranges_on_a_row_slice(seed, binary):
    """Sequences whose score range needs the log-space fallback mixed with
    ordinary ones in one call (the scaled recursions cache the shared
    transitions between sequences), on a slice of the token rows
    (``indptr`` not starting at 0, as for a contiguous batch)."""
    K = 3
    inst = Inst(seed, K, binary, n_rows=14)
    rng = inst.rng
    first = 2  # the batch: rows first.. (sequence offsets relative to them)
    indptr = inst.indptr[first:]
    lengths = [1, 2, 1, 3, 2, 1, 2]
    assert sum(lengths) == inst.n_rows - first
    tok_off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    y = rng.randint(0, K, size=inst.n_rows - first).astype(np.int64)
    z = rng.randn(inst.S + K * K + 3 * K)
    hot = inst.feat_of_s == 0  # feature 0: every label in its support
    z[:inst.S][hot] = 1500.0 * rng.randn(hot.sum())
    has_hot = inst.X[first:, 0] != 0.0
    per_seq = [has_hot[a:b].any() for a, b in zip(tok_off[:-1], tok_off[1:])]
    assert any(per_seq) and not all(per_seq)  # both kinds of sequences
    S = inst.S
    wg = np.empty(2 * S)
    wg[0::2] = z[:S]
    wg[1::2] = 0.0
    rest = np.zeros(K * K + 3 * K)
    v = chain_crf_value_grad(indptr, inst.nz_start, inst.nz_len, inst.data, inst.sup_label,
                             wg, np.ascontiguousarray(z[S:S + K * K].reshape(K, K)),
                             z[S + K * K:S + K * K + K].copy(),
                             z[S + K * K + K:S + K * K + 2 * K].copy(), z[-K:].copy(),
                             tok_off, y, rest, np.ones(len(tok_off) - 1))
    v_ref, g_ref = _crf_reference(inst, tok_off + first, np.r_[np.zeros(first, int), y], z)
    assert_allclose(v, np.maximum(v_ref, 0.0), rtol=1e-9, atol=1e-6)
    assert_allclose(np.concatenate([wg[1::2], rest]), g_ref, rtol=1e-7, atol=1e-7)


def test_empty_batches():
    K = 2
    inst = Inst(0, K, False)
    tok_off = np.zeros(1, dtype=np.int64)
    rest = np.zeros(K * K + 3 * K)
    wg = np.zeros(2 * inst.S)
    v = chain_crf_value_grad(inst.indptr[:1], inst.nz_start, inst.nz_len, inst.data,
                             inst.sup_label, wg, np.zeros((K, K)), np.zeros(K), np.zeros(K),
                             np.zeros(K), tok_off, np.zeros(0, dtype=np.int64), rest,
                             np.zeros(0))
    assert v.shape == (0,) and np.all(wg == 0.0) and np.all(rest == 0.0)
    cols, vals, ptr = chain_block_entries(*inst.args(), inst.sup_label, np.zeros(0),
                                          np.zeros(0, dtype=np.int64), tok_off, K, inst.S, True)
    assert len(cols) == len(vals) == 0 and list(ptr) == [0]
    cols, vals, ptr = chain_part_columns(*inst.args(), inst.sup_label,
                                         np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                         np.zeros(0, dtype=np.int64), K, inst.S, True)
    assert len(cols) == len(vals) == 0 and list(ptr) == [0]
    theta = chain_assemble_scores(np.zeros((0, K)), np.zeros((K, K)), np.zeros(K), np.zeros(K),
                                  tok_off, tok_off)
    assert theta.shape == (0,)
