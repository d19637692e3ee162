"""The segment feature map of semi-Markov models, built from token features."""

import numpy as np

from ..kernels.linear import (
    support_grad,
    support_grad_entries,
    support_param_ids,
)
from ..kernels.segment_features import (
    segment_assemble_scores,
    segment_block_entries,
    segment_part_columns,
    segment_reduce_grad,
)
from ._tokens import TokenBatches


class SegmentFeatureMap(TokenBatches):
    """``theta = A(x) z`` of a semi-Markov model (see ``structlearn.feature_maps``).

    The features of a segment ``(s, e)`` with label ``k`` are the sum of the
    feature vectors of the tokens inside it, the features of its first and
    of its last token (boundary words, their own weights), its length (one
    indicator per length and label) and a label bias; transitions, start
    and end scores are between the labels of consecutive segments
    (Sarawagi & Cohen 2004).  So ``z = [w_in, w_first, w_last (support
    each), length (M*K), transitions (K*K), start (K), end (K), bias (K)]``,
    the token weights restricted to the (feature, label) pairs of the
    support as for chains, everything but the bias penalised.  A segment's
    score is computed from per-token label scores by prefix sums, so a
    batch costs ``O(L (nnz + M K))``.
    """

    def __init__(self, tokens, tok_off, n_labels, max_length, sup_ptr, sup_label,
                 fit_intercept=True):
        self.tokens = tokens
        self.pos_off = np.ascontiguousarray(tok_off, dtype=np.int64)
        self.K = K = int(n_labels)
        #: the longest segment of each label (an int: of every label), and of all
        self.Mk = np.ascontiguousarray(np.broadcast_to(max_length, (K,)), dtype=np.int64)
        self.M = M = int(self.Mk.max())
        self.sup_ptr, self.sup_label = sup_ptr, sup_label
        self.fit_intercept = fit_intercept
        self.n_samples = len(self.pos_off) - 1
        self.n_support = S = int(sup_ptr[-1])
        self._tail = 3 * S
        self.n_params = 3 * S + M * K + K * K + 2 * K + (K if fit_intercept else 0)
        self.penalized = np.ones(self.n_params, dtype=bool)
        if fit_intercept:
            self.penalized[-K:] = False

    def unpack(self, z):
        """``(w_in, w_first, w_last, length, transitions, start, end, bias)``."""
        S, K, M = self.n_support, self.K, self.M
        o = 3 * S
        W_len = z[o:o + M * K].reshape(M, K)
        o += M * K
        trans = z[o:o + K * K].reshape(K, K)
        o += K * K
        start, end = z[o:o + K], z[o + K:o + 2 * K]
        bias = z[o + 2 * K:] if self.fit_intercept else np.zeros(K)
        return z[:S], z[S:2 * S], z[2 * S:3 * S], W_len, trans, start, end, bias

    # ----------------------------------------------------- scores, gradients
    def scores(self, z, batch, scale=1.0):
        w_in, w_first, w_last, W_len, trans, start, end, bias = self.unpack(z)
        rows = batch.data
        U = [self.unary_scores(w, rows) for w in (w_in, w_first, w_last)]
        if scale != 1.0:
            U = [scale * u for u in U]
            W_len, trans, start, end = scale * W_len, scale * trans, scale * start, \
                scale * end
        return segment_assemble_scores(U[0], U[1], U[2], np.ascontiguousarray(W_len),
                                       np.ascontiguousarray(trans), start, end, bias,
                                       batch.pos_off, batch.structure.part_off, self.K,
                                       self.M, self.Mk)

    def _reduce(self, G, batch):
        return segment_reduce_grad(np.ascontiguousarray(G, dtype=np.float64), batch.pos_off,
                                   batch.structure.part_off, self.K, self.M)

    def _tail_grad(self, parts):
        g_len, g_tr, g_st, g_en, g_b = parts
        tail = [g_len.ravel(), g_tr.ravel(), g_st, g_en] + ([g_b] if self.fit_intercept else [])
        return np.concatenate(tail)

    def backprop(self, G, batch, g):
        red = self._reduce(G, batch)
        rows = batch.data
        tk = rows.tokens
        S = self.n_support
        for j in range(3):
            support_grad(rows.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label, red[j],
                         g[j * S:(j + 1) * S])
        g[3 * S:] += self._tail_grad(red[3:])

    def backprop_entries(self, G, batch):
        red = self._reduce(G, batch)
        rows = batch.data
        tk = rows.tokens
        S = self.n_support
        cols, vals = [], []
        for j in range(3):
            c, v = support_grad_entries(rows.indptr, tk.nz_start, tk.nz_len, tk.data,
                                        self.sup_label, red[j])
            cols.append(c + j * S)
            vals.append(v)
        tail = self._tail_grad(red[3:])
        nz = np.flatnonzero(tail)
        cols.append(3 * S + nz)
        vals.append(tail[nz])
        return np.concatenate(cols).astype(np.int64), np.concatenate(vals)

    def params_of(self, idx):
        rows = self.select(idx)
        tk = rows.tokens
        ids = support_param_ids(rows.indptr, tk.nz_start, tk.nz_len).astype(np.int64)
        S = self.n_support
        return np.concatenate([ids, ids + S, ids + 2 * S, np.arange(3 * S, self.n_params)])

    def sq_norms(self, y=None):
        """Per sequence ``(M + 2) sum_t (||x_t||^2 + 1) + L + 1``: a segment's
        feature vector holds up to ``M`` token vectors plus two boundary
        ones (the SGD step size)."""
        sq = self.tokens.sq_norms() + 1.0
        per_tok = np.concatenate([[0.0], np.cumsum(sq)])
        lengths = np.diff(self.pos_off)
        return (self.M + 2) * (per_tok[self.pos_off[1:]] - per_tok[self.pos_off[:-1]]) \
            + lengths + 1.0

    # ------------------------------------------------- the dual solver's view
    def part_sizes(self):
        K, M = self.K, self.M
        return np.diff(self.pos_off) * M * K + K * K + 2 * K

    def unary_sizes(self):
        return np.diff(self.pos_off) * self.M * self.K

    def block_entries(self, idx, D):
        """Per sequence of ``idx``, the entries of ``A_i^T D_i`` for a flat
        array ``D`` of their score blocks; ``(cols, vals, ptr)``."""
        idx = np.asarray(idx, dtype=np.int64)
        part_off = np.concatenate([[0], np.cumsum(self.part_sizes()[idx])]).astype(np.int64)
        tk = self.tokens
        return segment_block_entries(tk.indptr, tk.nz_start, tk.nz_len, tk.data,
                                     self.sup_label, np.ascontiguousarray(D, dtype=np.float64),
                                     self.pos_off[idx], part_off, self.K, self.M,
                                     self.n_support, self.fit_intercept)

    def part_columns(self, rep, parts):
        """Per ``k``, the column of ``A_i`` of part ``parts[k]`` (an index
        into the flat score block) of sequence ``rep[k]``; ``(cols, vals,
        ptr)``."""
        rep = np.asarray(rep, dtype=np.int64)
        tk = self.tokens
        return segment_part_columns(tk.indptr, tk.nz_start, tk.nz_len, tk.data, self.sup_label,
                                    self.pos_off[rep], np.diff(self.pos_off)[rep],
                                    np.asarray(parts, dtype=np.int64), self.K, self.M,
                                    self.n_support, self.fit_intercept)
