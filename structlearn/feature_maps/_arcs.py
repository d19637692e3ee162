"""The arc feature map of first-order dependency parsers."""

import numpy as np

from ..kernels.arcs import arc_grad, arc_grad_entries, arc_scores
from ..kernels.tree import tree_arc_offsets
from ..solvers._threads import thread_map

#: Sentences per chunk of the arc features.
CHUNK_SENTENCES = 256


class ArcFeatureMap:
    """``theta = A(x) z`` of an arc-factored parser (see
    ``structlearn.feature_maps``): an arc's score is the sum of the
    weights of its known features (binary), every weight penalised.

    The feature ids of every candidate arc are computed once (the
    vectoriser's templates hashed from integer token attributes), in chunks
    of ``CHUNK_SENTENCES`` sentences: chunk ``c`` holds ``(indptr,
    ids)`` for its arcs (tree layout, local offsets).  Memory: 4 bytes per
    (arc, known feature) pair.

    Parameters
    ----------
    vectorizer : fitted ArcVectorizer
    A : its token attributes of the sentences
    word_off : int64 array, shape (n_sentences + 1,)
    n_threads : int
        Threads for the feature extraction.
    """

    def __init__(self, vectorizer, A, word_off, n_threads):
        self.pos_off = self.word_off = np.ascontiguousarray(word_off, dtype=np.int64)
        n = len(word_off) - 1
        self.n_samples = n
        self.n_params = int(vectorizer.n_features_)
        self.penalized = np.ones(self.n_params, dtype=bool)
        bounds = np.unique(np.arange(0, n + CHUNK_SENTENCES, CHUNK_SENTENCES).clip(max=n))
        self.bounds = bounds
        self.ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
        self.chunks = thread_map(lambda ab: vectorizer.arc_features(A, word_off, *ab),
                                 self.ranges, n_threads)
        self.arc_off = tree_arc_offsets(self.word_off)

    @property
    def nbytes(self):
        return sum(p.nbytes + i.nbytes for p, i in self.chunks)

    def locate(self, i):
        """Chunk of sentence ``i`` and the local range of its arcs."""
        c = int(np.searchsorted(self.bounds, i, side="right") - 1)
        base = self.arc_off[self.ranges[c][0]]
        return c, self.arc_off[i] - base, self.arc_off[i + 1] - base

    def arcs_of(self, i):
        """``(indptr, ids)`` of sentence ``i``'s arcs (``indptr`` a view)."""
        c, lo, hi = self.locate(i)
        indptr, ids = self.chunks[c]
        return indptr[lo:hi + 1], ids

    # ------------------------------------------------------------- batches
    def chunk_ranges(self, n_min=1):
        """The chunks of the arc features (``n_min`` is not needed: there
        are as many chunks as the features were extracted in)."""
        return list(self.ranges)

    def contiguous(self, a, b):
        """The arcs of sentences ``a..b-1``: one chunk when the range is a
        chunk, else per sentence."""
        if (a, b) in self.ranges:
            return [self.chunks[self.ranges.index((a, b))]]
        return self.select(np.arange(a, b))

    def select(self, idx):
        """The arcs of the sentences ``idx``: a list of ``(indptr, ids)``."""
        return [self.arcs_of(int(i)) for i in np.asarray(idx, dtype=np.int64)]

    # ----------------------------------------------------- scores, gradients
    def scores(self, z, batch, scale=1.0):
        theta = np.concatenate([arc_scores(indptr, ids, z) for indptr, ids in batch.data])
        if scale != 1.0:
            theta *= scale
        return theta

    def backprop(self, G, batch, g):
        o = 0
        for indptr, ids in batch.data:
            k = len(indptr) - 1
            arc_grad(indptr, ids, np.ascontiguousarray(G[o:o + k]), g)
            o += k

    def backprop_entries(self, G, batch):
        cols, vals = [], []
        o = 0
        for indptr, ids in batch.data:
            k = len(indptr) - 1
            cc, vv = arc_grad_entries(indptr, ids, np.ascontiguousarray(G[o:o + k]))
            cols.append(cc)
            vals.append(vv)
            o += k
        return np.concatenate(cols), np.concatenate(vals)

    def params_of(self, idx):
        """Parameters read by the scores of sentences ``idx`` (with
        repeats): the feature ids of their arcs."""
        out = [ids[indptr[0]:indptr[-1]] for indptr, ids in self.select(idx)]
        return np.concatenate(out).astype(np.int64)

    def sq_norms(self, heads):
        """Per sentence, the squared norm of its gold tree's feature vector
        (binary features: their count over the gold arcs) plus 1."""
        out = np.empty(self.n_samples)
        wo, arc_off = self.word_off, self.arc_off
        for c, (a, b) in enumerate(self.ranges):
            counts = np.diff(self.chunks[c][0])
            sent = np.repeat(np.arange(a, b), np.diff(wo[a:b + 1]))
            n = wo[sent + 1] - wo[sent]
            m = np.arange(wo[a], wo[b]) - wo[sent] + 1
            arc = arc_off[sent] - arc_off[a] + (m - 1) * (n + 1) + heads[wo[a]:wo[b]]
            out[a:b] = np.bincount(sent - a, weights=counts[arc], minlength=b - a) + 1.0
        return out

    # ------------------------------------------------- the dual solver's view
    # sentence i's dual block is its block of n (n + 1) arc scores
    def part_sizes(self):
        """Size of every sentence's arc-score block."""
        n = np.diff(self.word_off)
        return n * (n + 1)

    def unary_sizes(self):
        """Every arc score is penalised by SparseMAP (as the whole block)."""
        return self.part_sizes()

    def block_entries(self, idx, D):
        """Per sentence of ``idx``, the entries of ``A_i^T D_i`` for a flat
        array ``D`` of their arc-score blocks; ``(cols, vals, ptr)``."""
        cols, vals, ptr = [], [], [0]
        o = 0
        for indptr, ids in self.select(idx):
            k = len(indptr) - 1
            cc, vv = arc_grad_entries(indptr, ids, np.ascontiguousarray(D[o:o + k]))
            o += k
            cols.append(cc)
            vals.append(vv)
            ptr.append(ptr[-1] + len(cc))
        return np.concatenate(cols), np.concatenate(vals), np.asarray(ptr, dtype=np.int64)

    def part_columns(self, rep, parts):
        """Per ``k``, the column of ``A_i`` of arc ``parts[k]`` (an index
        into the arc-score block) of sentence ``rep[k]``: its features;
        ``(cols, vals, ptr)``."""
        cols, ptr = [], [0]
        for i, p in zip(np.asarray(rep, dtype=np.int64), np.asarray(parts, dtype=np.int64)):
            indptr, ids = self.arcs_of(int(i))
            cols.append(ids[indptr[p]:indptr[p + 1]])
            ptr.append(ptr[-1] + len(cols[-1]))
        cols = np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64)
        return cols, np.ones(len(cols)), np.asarray(ptr, dtype=np.int64)
