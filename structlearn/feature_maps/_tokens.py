"""The token feature map of linear chains: support-restricted token scores
plus label transitions."""

import numpy as np

from .._validation import check_row_norms
from ..feature_extraction import _Encoded, _where
from ..kernels.linear import (
    chain_block_entries,
    chain_crf_value_grad,
    chain_part_columns,
    chain_reduce_grad,
    chain_scores,
    narrow_dtype,
    select_entries,
    support_entries,
    support_grad,
    support_grad_entries,
    support_param_ids,
    support_scores,
)

#: Sequences per chunk of a full pass: bounds the memory of the flat part
#: arrays (which hold a K x K transition block per sequence).
CHUNK_SEQUENCES = 256


class Tokens:
    """Token features ready for the support kernels: CSR ``indptr`` and
    ``data`` (empty when every value is 1: binary features need no values)
    plus each entry's support offsets (:func:`support_entries`).  The column
    indices themselves are not kept -- the kernels only read the supports."""

    def __init__(self, indptr, data, nz_start, nz_len, sup_ptr):
        self.indptr, self.data = indptr, data
        self.nz_start, self.nz_len = nz_start, nz_len
        self.sup_ptr = sup_ptr

    @classmethod
    def from_csr(cls, X, sup_ptr):
        """From a scipy.sparse token matrix."""
        X = X.tocsr()
        return cls.from_encoded(_Encoded(X.indptr, X.indices, X.data, None, X.shape[1]),
                                sup_ptr)

    @classmethod
    def from_encoded(cls, enc, sup_ptr):
        """From the :class:`~structlearn.feature_extraction._Encoded` parts of
        a :class:`~structlearn.feature_extraction.TokenVectorizer`."""
        data = enc.data
        if data is None or np.all(data == 1.0):
            data = np.empty(0, dtype=np.float64)
        nnz = len(enc.indices)
        nz_start = np.empty(nnz, dtype=np.int32 if sup_ptr[-1] < 2 ** 31 else np.int64)
        nz_len = np.empty(nnz, dtype=narrow_dtype(int(np.diff(sup_ptr).max(initial=0)) + 1))
        support_entries(enc.indices, sup_ptr, nz_start, nz_len)
        return cls(np.asarray(enc.indptr, dtype=np.int64),
                   np.ascontiguousarray(data, dtype=np.float64), nz_start, nz_len, sup_ptr)

    @property
    def n_rows(self):
        return len(self.indptr) - 1

    def select(self, rows):
        """The rows ``rows`` (copies)."""
        indptr, nz_start, nz_len, data = select_entries(
            self.indptr, self.nz_start, self.nz_len, self.data, np.asarray(rows, dtype=np.int64))
        return Tokens(indptr, data, nz_start, nz_len, self.sup_ptr)

    def sq_norms(self):
        """``||x_t||^2`` per row."""
        if len(self.data) == 0:
            return np.diff(self.indptr).astype(np.float64)
        csum = np.concatenate([[0.0], np.cumsum(self.data ** 2)])
        return csum[self.indptr[1:]] - csum[self.indptr[:-1]]


def checked_tokens(enc, sup_ptr):
    """:meth:`Tokens.from_encoded`, after checking that no token's features
    are too large to compute with (their squared norm overflows)."""
    tokens = Tokens.from_encoded(enc, sup_ptr)
    tok_off = enc.tok_off

    def where(row):
        i = int(np.searchsorted(tok_off, row, side="right") - 1)
        return _where(i, row - int(tok_off[i]))

    with np.errstate(over="ignore"):
        check_row_norms(tokens.sq_norms(), where)
    return tokens


class TokenRows:
    """The token rows of a batch: ``indptr`` (which may index into a larger
    shared :class:`Tokens`) and the tokens it indexes."""

    __slots__ = ("indptr", "tokens")

    def __init__(self, indptr, tokens):
        self.indptr, self.tokens = indptr, tokens


def token_rows(tok_off, seqs):
    """The token rows of the sequences ``seqs`` (flat, in order)."""
    starts, ends = tok_off[seqs], tok_off[seqs + 1]
    if len(seqs) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(a, b) for a, b in zip(starts, ends)])


def chunk_bounds(n, n_min=1):
    """Contiguous ranges of about :data:`CHUNK_SEQUENCES` of ``n`` examples,
    at least ``n_min`` of them (where ``n`` allows)."""
    n_chunks = max(n_min, -(-n // CHUNK_SEQUENCES))
    bounds = np.linspace(0, n, min(n_chunks, n) + 1).astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class TokenBatches:
    """What the feature maps over token features share: batches of whole
    sequences (``contiguous`` views, ``select`` copies, chunk ranges) and
    per-token label scores over the (feature, label) support.  A subclass
    sets ``tokens``, ``pos_off``, ``n_samples``, ``sup_label`` and ``K``."""

    def chunk_ranges(self, n_min=1):
        return chunk_bounds(self.n_samples, n_min)

    def contiguous(self, a, b):
        """Sequences ``a..b-1`` without copying the token data."""
        t0, t1 = self.pos_off[a], self.pos_off[b]
        return TokenRows(self.tokens.indptr[t0:t1 + 1], self.tokens)

    def select(self, idx):
        """Any subset of sequences (copies their token rows)."""
        sub = self.tokens.select(token_rows(self.pos_off, np.asarray(idx, dtype=np.int64)))
        return TokenRows(sub.indptr, sub)

    def unary_scores(self, w, rows):
        """Token scores ``<w_k, x_t>`` of the rows (no bias), ``w`` the
        support weights."""
        tk = rows.tokens
        return support_scores(rows.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label,
                              np.ascontiguousarray(w), self.K)


class TokenFeatureMap(TokenBatches):
    """``theta = A(x) z`` of a linear chain (see ``structlearn.feature_maps``).

    ``z = [w (support), transitions (K*K), start (K), end (K), bias (K)]``:
    a token's unary score of tag ``k`` is ``<w_k, x_t> + b_k`` over the
    (feature, tag) pairs of the support (``sup_ptr``, ``sup_label``: only
    the pairs seen in training, as CRFsuite, or all of them); the
    transition, start and end scores are copied into every sequence's
    block (the layout of :class:`~structlearn.structures.Chain`).
    Everything but the bias is penalised (the transition weights are
    weights of label-bigram features, as in CRFsuite).  With
    ``transitions=False`` the transition, start and end weights are held at
    zero: every gradient and every set of gradient entries the map returns
    is zero there (``frozen``), so that no solver moves them.

    Parameters
    ----------
    tokens : Tokens
    tok_off : int64 array, shape (n_samples + 1,)
        Token offsets of the (non-empty) sequences.
    n_tags : int
    sup_ptr, sup_label : int arrays
        Per feature, the offsets of its (feature, tag) pairs, and their tags.
    fit_intercept, transitions : bool
    """

    def __init__(self, tokens, tok_off, n_tags, sup_ptr, sup_label, fit_intercept=True,
                 transitions=True):
        self.tokens = tokens
        self.pos_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        self.K = K = int(n_tags)
        self.sup_ptr, self.sup_label = sup_ptr, sup_label
        self.fit_intercept = fit_intercept
        self.n_samples = len(self.pos_off) - 1
        self.n_support = S = int(sup_ptr[-1])
        self.n_params = S + K * K + 2 * K + (K if fit_intercept else 0)
        self.penalized = np.zeros(self.n_params, dtype=bool)
        self.penalized[:S + K * K + 2 * K] = True
        #: the parameters held at zero (``transitions=False``): a slice of z
        self.frozen = slice(S, S + (0 if transitions else K * K + 2 * K))

    def with_layout_of(self, z):
        """Weights ``z`` of this support fitted with or without the per-tag
        bias, in this map's layout (a warm start across ``fit_intercept``):
        a bias that this map lacks moved into the transition and start
        weights (every sequence keeps its score, where the model has
        transitions), one that it adds started at 0.  ``z`` of another
        size (another support) is returned as it is."""
        K = self.K
        base = self.n_support + K * K + 2 * K
        if len(z) not in (base, base + K) or (len(z) == base + K) == self.fit_intercept:
            return z
        if self.fit_intercept:
            return np.concatenate([z, np.zeros(K)])
        out = z[:base].copy()
        _, trans, start, _, _ = self.unpack(out)
        trans += z[base:][None, :]
        start += z[base:]
        return out

    def unpack(self, z):
        """``(w, transitions, start, end, bias)`` views of ``z``."""
        K, S = self.K, self.n_support
        w = z[:S]
        trans = z[S:S + K * K].reshape(K, K)
        start = z[S + K * K:S + K * K + K]
        end = z[S + K * K + K:S + K * K + 2 * K]
        bias = z[S + K * K + 2 * K:] if self.fit_intercept else np.zeros(K)
        return w, trans, start, end, bias

    # ----------------------------------------------------- scores, gradients
    def scores(self, z, batch, scale=1.0):
        """Flat chain scores of a batch; ``scale`` multiplies the penalised
        weights (everything but the bias)."""
        w, trans, start, end, bias = self.unpack(z)
        rows = batch.data
        tk = rows.tokens
        return chain_scores(rows.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label,
                            np.ascontiguousarray(w), np.ascontiguousarray(trans), start, end,
                            np.ascontiguousarray(bias), float(scale), batch.pos_off,
                            batch.structure.part_off)

    def _reduce(self, G, batch):
        return chain_reduce_grad(np.ascontiguousarray(G, dtype=np.float64), batch.pos_off,
                                 batch.structure.part_off, self.K)

    def backprop(self, G, batch, g):
        """``g += A^T G`` for the flat score gradients ``G`` of a batch."""
        GU, gtr, gst, gen = self._reduce(G, batch)
        K, S = self.K, self.n_support
        rows = batch.data
        tk = rows.tokens
        support_grad(rows.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label, GU, g[:S])
        g[S:S + K * K] += gtr.ravel()
        g[S + K * K:S + K * K + K] += gst
        g[S + K * K + K:S + K * K + 2 * K] += gen
        if self.fit_intercept:
            g[S + K * K + 2 * K:] += GU.sum(axis=0)
        g[self.frozen] = 0.0

    def backprop_entries(self, G, batch):
        """``A^T G`` as entries ``(cols, vals)``: the support weights of the
        batch's tokens, then the shared weights with a non-zero gradient."""
        GU, gtr, gst, gen = self._reduce(G, batch)
        rows = batch.data
        tk = rows.tokens
        cols, gv = support_grad_entries(rows.indptr, tk.nz_start, tk.nz_len, tk.data,
                                        self.sup_label, GU)
        tail = [gtr.ravel(), gst, gen] + ([GU.sum(axis=0)] if self.fit_intercept else [])
        tail = np.concatenate(tail)
        tail[:self.frozen.stop - self.n_support] = 0.0
        nz = np.flatnonzero(tail)
        return np.concatenate([cols, self.n_support + nz]), np.concatenate([gv, tail[nz]])

    def gibbs_value_and_grad(self, z, batches, penalties=None):
        """Value and gradient of the CRF loss over ``batches``, fused per
        sequence (``kernels.linear.chain_crf_value_grad``:
        the same numbers as scores, loss and :meth:`backprop`, without
        batch-sized score and marginal arrays, and with each weight beside
        its gradient).  ``penalties``: the transition, start and end score
        offsets of transition constraints
        (:meth:`structlearn.structures.Chain.transition_penalties`), added
        to the weights' scores (the gradient is unchanged: forbidden parts
        have zero marginals and never occur in the targets).  The batches'
        ``sample_weight`` weight their sequences' losses and gradients."""
        w, trans, start, end, bias = self.unpack(z)
        if penalties is not None:
            trans, start, end = (a + p for a, p in zip((trans, start, end), penalties))
        K, S = self.K, self.n_support
        wg = np.empty(2 * S)
        wg[0::2] = w
        wg[1::2] = 0.0
        rest = np.zeros(K * K + 3 * K)  # the layout of z[S:], bias last
        trans = np.ascontiguousarray(trans)
        vals = []
        for batch in batches:
            rows = batch.data
            tk = rows.tokens
            sw = batch.sample_weight
            sw = np.ones(len(batch.pos_off) - 1) if sw is None else \
                np.ascontiguousarray(sw, dtype=np.float64)
            vals.append(chain_crf_value_grad(rows.indptr, tk.nz_start, tk.nz_len, tk.data,
                                             self.sup_label, wg, trans, start, end, bias,
                                             batch.pos_off, batch.y, rest, sw))
        g = np.empty(self.n_params)
        g[:S] = wg[1::2]
        g[S:] = rest[:self.n_params - S]  # without an intercept, no bias entries
        g[self.frozen] = 0.0
        return np.concatenate(vals), g

    def params_of(self, idx):
        """Parameters read by the scores of sequences ``idx`` (with repeats):
        the support weights of their tokens' features, and every transition,
        start, end and bias weight."""
        rows = self.select(idx)
        tk = rows.tokens
        return np.concatenate([support_param_ids(rows.indptr, tk.nz_start, tk.nz_len),
                               np.arange(self.n_support, self.n_params)])

    def sq_norms(self, y=None):
        """Per-sequence ``sum_t (||x_t||^2 + 1) + L + 1`` (SGD step size)."""
        sq = self.tokens.sq_norms() + 1.0
        per_tok = np.concatenate([[0.0], np.cumsum(sq)])
        lengths = np.diff(self.pos_off)
        return per_tok[self.pos_off[1:]] - per_tok[self.pos_off[:-1]] + lengths + 1.0

    # ------------------------------------------------- the dual solver's view
    # sequence i's dual block is its flat score block
    def part_sizes(self):
        """Size of every sequence's flat score block."""
        K = self.K
        return np.diff(self.pos_off) * K + K * K + 2 * K

    def unary_sizes(self):
        """Per sequence, the unary parts that lead its score block (the
        parts SparseMAP penalises)."""
        return np.diff(self.pos_off) * self.K

    def _unfrozen(self, cols, vals):
        if self.frozen.stop > self.frozen.start:
            vals[(cols >= self.frozen.start) & (cols < self.frozen.stop)] = 0.0
        return vals

    def block_entries(self, idx, D):
        """Per sequence of ``idx``, the entries of ``A_i^T D_i`` for a flat
        array ``D`` of their score blocks; ``(cols, vals, ptr)``."""
        idx = np.asarray(idx, dtype=np.int64)
        sizes = self.part_sizes()[idx]
        part_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        tk = self.tokens
        cols, vals, ptr = chain_block_entries(
            tk.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label,
            np.ascontiguousarray(D), self.pos_off[idx], part_off, self.K, self.n_support,
            self.fit_intercept)
        return cols, self._unfrozen(cols, vals), ptr

    def part_columns(self, rep, parts):
        """Per ``k``, the column of ``A_i`` of part ``parts[k]`` (an index
        into the flat score block) of sequence ``rep[k]``: the entries of
        ``A_i^T e_p``; ``(cols, vals, ptr)``."""
        rep = np.asarray(rep, dtype=np.int64)
        tk = self.tokens
        cols, vals, ptr = chain_part_columns(
            tk.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label, self.pos_off[rep],
            np.diff(self.pos_off)[rep], np.asarray(parts, dtype=np.int64), self.K,
            self.n_support, self.fit_intercept)
        return cols, self._unfrozen(cols, vals), ptr
