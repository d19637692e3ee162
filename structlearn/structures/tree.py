"""Dependency trees: head arrays with one score per arc (first-order parts)."""

import itertools

import numpy as np

from ..kernels.tree import (
    encode_heads_batch,
    head_simplex_rows,
    map_batch,
    marginals_batch,
    poslearn_from_violators,
    poslearn_violators_batch,
    row_argmax_heads,
    score_heads_batch,
    second_best_batch,
    tree_arc_offsets,
    tree_block_params,
    tree_encode_codes,
    tree_map_oracle,
)
from .base import IntractableError, RaggedStructure


# ------------------------------------------------------------------ structure
def _reaches_root(heads, m):
    """Whether word ``m`` reaches the root 0 following ``heads`` (1-based)."""
    for _ in range(len(heads)):
        m = heads[m - 1]
        if m == 0:
            return True
    return False


class Tree(RaggedStructure):
    """A batch of dependency trees (first-order, arc-factored scores).

    Like :class:`~structlearn.structures.chain.Chain`, a tree structure is
    bound to the sentence lengths of one batch (``word_off``) and part
    vectors of the batch are one **flat** array.  A sentence of ``n`` words
    (``1..n``; node ``0`` is the root) has a block of ``n (n + 1)`` arc
    scores, the row-major ``(n, n + 1)`` matrix ``S`` with ``S[m - 1, h]``
    the score of the arc ``h -> m``; blocks are concatenated at offsets
    ``part_off = tree_arc_offsets(word_off)``.  The self-loop entries
    ``S[m - 1, m]`` belong to the layout but to no tree: their scores are
    ignored and every encoding, marginal vector and projection is 0 there.

    Labels are flat int64 head arrays over all words of the batch (CoNLL-U
    convention: ``heads[word_off[i] + m - 1]`` in ``0..n_i`` is the head of
    word ``m`` of sentence ``i``; see
    :func:`~structlearn.kernels.tree_validation.validate_heads`).  ``phi(y)`` is the 0/1
    arc indicator matrix of each sentence, so ``<theta, phi(y)>`` is the sum
    of the tree's arc scores.

    The task cost is the Hamming loss on heads (the number of words
    attached to a wrong head, i.e. ``n`` times one minus the unlabelled
    attachment score): ``L(y', y) = <phi(y'), cost_vector(phi(y))>`` with
    ``cost_vector = 1 - phi`` off the self-loops and 0 on them.  Since every
    tree has exactly one arc per word, calibrated decoding
    ``argmax(-cost_vector(mu))`` is the MAP tree under the arc scores ``mu``.

    Inference (kernels in :mod:`structlearn.kernels.tree`): MAP by
    Chu-Liu-Edmonds (``O(n^2)``) or, with ``projective=True``, Eisner's
    algorithm (``O(n^3)``); marginals and log-partition by the matrix-tree
    theorem or inside-outside (``O(n^3)``).  ``single_root=True`` restricts
    to trees with exactly one word attached to the root, exactly.

    SparseMAP: every part is unary (penalised), so SparseMAP marginals are
    the Euclidean projection onto the arborescence polytope, computed by the
    active-set solver with the MAP oracle.

    Projection sets:

    * ``'tree'`` (the marginal polytope; Euclidean only): the SparseMAP solve
      itself.
    * ``'simplex'``: the polytope of *head selection*, each modifier's row
      (self-loop excluded) on the probability simplex over its ``n``
      possible heads.  A superset of the tree polytope that ignores
      acyclicity and the single-root constraint; the projection is a
      sort-based simplex projection per row (Euclidean) or a per-row softmax
      (KL).

    PosLearn (Sarawagi & Gupta 2008, Sec. 4) with the Hamming cost has one
    position per word: the violator of word ``m`` is the best tree whose head
    of ``m`` differs from the gold one, found by one MAP call with that arc
    forbidden, so ``O(n^3)`` per sentence non-projective and ``O(n^4)``
    projective.  Exact slack scaling is not available (use
    ``Hinge(scaling='approx-slack')`` or PosLearn).

    Parameters
    ----------
    word_off : array of int (n_sentences + 1,)
        Word offsets of the sentences: ``word_off[0] == 0`` and every length
        ``word_off[i + 1] - word_off[i] >= 1``.
    single_root : bool, default=True
        Exactly one word attached to the root (the Universal Dependencies
        convention); otherwise any number >= 1.
    projective : bool, default=False
        Restrict to projective trees.

    Attributes
    ----------
    word_off : int64 ndarray (n + 1,)
    lengths : int64 ndarray (n,)
        Words per sentence.
    n : int
        Number of sentences.
    part_off : int64 ndarray (n + 1,)
        Offsets of the arc blocks in flat part arrays.
    n_parts : int
        Total number of parts, ``sum_i n_i (n_i + 1)``.
    block_sizes : int64 ndarray (n,)
        ``n_i (n_i + 1)``.
    warm_cache : SupportCache or None
        When given (a ``structures.base.SupportCache``, owned by the
        training problem that binds this structure to a batch), every
        active-set solve of this batch starts from the supports of the
        previous one (stored as head arrays) and stores its own.
    """

    name = "tree"
    scores_name, parts_name = "dependency-tree", "arc parts"
    example = "sentence"
    has_exact_slack = False
    projection_sets = {"tree": ("euclidean",), "simplex": ("euclidean", "kl")}
    marginal_set = "tree"

    def __init__(self, word_off, single_root=True, projective=False, warm_cache=None):
        raw = np.asarray(word_off)
        if raw.ndim != 1 or raw.size < 2:
            raise ValueError("a Tree batch needs word offsets of shape (n_sentences + 1,) "
                             f"with at least one sentence, got shape {raw.shape}.")
        if raw.dtype.kind not in "iu":
            if raw.dtype.kind != "f" or not np.all(raw == np.round(raw)):
                raise ValueError(f"word offsets must be integers, got {raw.tolist()}.")
        self.word_off = np.ascontiguousarray(raw, dtype=np.int64)
        if self.word_off[0] != 0:
            raise ValueError(f"word offsets must start at 0, got {self.word_off[0]}.")
        lengths = np.diff(self.word_off)
        if lengths.min() < 1:
            i = int(np.argmin(lengths))
            raise ValueError(f"every sentence of a Tree batch needs at least one word; "
                             f"sentence {i} has {lengths[i]}.")
        self.lengths = lengths
        self.n = len(lengths)
        self.single_root = bool(single_root)
        self.projective = bool(projective)
        self.part_off = tree_arc_offsets(self.word_off)
        self.n_parts = int(self.part_off[-1])
        self.block_sizes = np.diff(self.part_off)
        self._mask = None
        self._params = tree_block_params(self.word_off, self.single_root, self.projective)
        self.warm_cache = warm_cache

    def __repr__(self):
        return (f"Tree(n_sentences={self.n}, n_words={int(self.word_off[-1])}, "
                f"single_root={self.single_root}, projective={self.projective})")

    # ------------------------------------------------------------- layout
    @property
    def arc_mask(self):
        """Flat boolean mask of the real arcs (False on self-loop entries)."""
        if self._mask is None:
            mask = np.ones(self.n_parts, dtype=bool)
            sent = np.repeat(np.arange(self.n), self.lengths)
            m = np.arange(self.word_off[-1]) - self.word_off[sent] + 1
            mask[self.part_off[sent] + (m - 1) * (self.lengths[sent] + 1) + m] = False
            self._mask = mask
        return self._mask

    def block(self, a, i):
        """Sentence ``i``'s block of the flat part array ``a`` as an
        ``(n_i, n_i + 1)`` view (row ``m - 1``: modifier ``m``; column ``h``)."""
        n = int(self.lengths[i])
        return np.asarray(a)[self.part_off[i]:self.part_off[i + 1]].reshape(n, n + 1)

    @property
    def n_unary(self):
        """Penalised parts per sentence: all of them (``block_sizes``)."""
        return self.block_sizes

    @property
    def cost_mask(self):
        return self.arc_mask

    @property
    def pos_off(self):
        return self.word_off

    def unary_sq(self, mu):
        mu = np.asarray(mu, dtype=np.float64)
        return self.sum_parts(mu * mu)

    def _y(self, y):
        y = np.ascontiguousarray(y, dtype=np.int64)
        n_words = int(self.word_off[-1])
        if y.shape != (n_words,):
            raise ValueError(f"dependency-tree labels must be a flat array of "
                             f"{n_words} heads, got shape {y.shape}.")
        # Range check only (the kernels index with the heads); labels that
        # are not trees (e.g. from decode) are still encodable.
        bad = (y < 0) | (y > np.repeat(self.lengths, self.lengths))
        if bad.any():
            w = int(np.argmax(bad))
            i = int(np.searchsorted(self.word_off, w, side="right") - 1)
            raise ValueError(f"sentence {i} ({self.lengths[i]} words): head {y[w]} of "
                             f"word {w - self.word_off[i] + 1} is out of range "
                             f"0..{self.lengths[i]}.")
        return y

    # ----------------------------------------------------------- encoding
    def all_outputs(self, max_outputs=100_000):
        """Every tree of the batch's one sentence (rows of heads, 0 = root),
        under ``single_root`` and ``projective``."""
        n = self._one_example()
        self._check_count((n + 1) ** n, max_outputs, f"a sentence of {n} words")
        out = []
        for heads in itertools.product(range(n + 1), repeat=n):
            if self.single_root and heads.count(0) != 1:
                continue
            if any(not _reaches_root(heads, m) for m in range(1, n + 1)):
                continue
            arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, start=1)]
            if self.projective and any(a < c < b < d for a, b in arcs for c, d in arcs):
                continue
            out.append(heads)
        return np.array(out, dtype=np.int64).reshape(-1, n)

    def encode(self, y):
        """Flat arc indicators ``phi(y)`` of a flat head array."""
        return encode_heads_batch(self._y(y), self.part_off, self.word_off)

    def decode(self, phi):
        """Heads of encodings: per modifier row, the argmax over heads
        (self-loop excluded).  Inverse of :meth:`encode` on trees; on other
        points (marginals) a head selection that need not be a tree."""
        phi = self._theta(phi)
        return row_argmax_heads(phi, self.part_off, self.word_off)

    def argmax(self, theta):
        """MAP trees: Chu-Liu-Edmonds, or Eisner when ``projective``."""
        return map_batch(self._theta(theta), self.part_off, self.word_off,
                         self.single_root, self.projective)

    def scores(self, theta, y):
        return score_heads_batch(self._theta(theta), self._y(y), self.part_off,
                                 self.word_off)

    # ------------------------------------------------------------ oracles
    def marginals_and_log_partition(self, theta):
        """Matrix-tree theorem, or inside-outside when ``projective``;
        returns ``(mu, logZ)``."""
        return marginals_batch(self._theta(theta), self.part_off, self.word_off,
                               self.single_root, self.projective)

    def second_best(self, theta, y):
        """Best tree different from ``y`` per sentence (``y`` itself where it
        is the only tree, i.e. one-word sentences)."""
        y2, _ = second_best_batch(self._theta(theta), self._y(y), self.part_off,
                                  self.word_off, self.single_root, self.projective)
        return y2

    def word_violators(self, theta, y):
        """Per-word PosLearn violators as flat head arrays.

        (Not :meth:`Structure.poslearn_violators`, whose fixed-size layout
        does not fit ragged batches; :meth:`poslearn_value_and_grad` is
        overridden instead.)  Returns the flat int64 array of
        :func:`~structlearn.kernels.tree.poslearn_violators_batch` (sentence
        ``i``'s ``(n_i, n_i)`` matrix, row ``m - 1`` the best tree with word
        ``m``'s head different from ``y``, -1 where none exists) and its
        per-sentence offsets.
        """
        viol = poslearn_violators_batch(self._theta(theta), self._y(y), self.part_off,
                                        self.word_off, self.single_root, self.projective)
        off = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(self.lengths ** 2, out=off[1:])
        return viol, off

    def poslearn_value_and_grad(self, theta, y):
        """PosLearn with the Hamming cost (Sarawagi & Gupta 2008, Sec. 4).

        One position per word ``m``: the violator ``y^m`` is the best tree
        with ``head(m) != y_m`` (one MAP call with the gold arc forbidden),
        ``margin_m = 1 - s(y) + s(y^m)``.  Returns ``value[i] = sum_m
        max(margin_m, 0)`` and the flat gradient ``sum_{m: margin_m > 0}
        phi(y^m) - phi(y)``.  Words without a violator (a one-word sentence)
        contribute 0.  ``O(n^3)`` per sentence, ``O(n^4)`` projective.
        """
        theta = self._theta(theta)
        y = self._y(y)
        viol, _ = self.word_violators(theta, y)
        return poslearn_from_violators(theta, y, viol, self.part_off, self.word_off)

    def slack_violator(self, theta, y):
        raise IntractableError(
            "exact slack-scaling inference is not implemented for dependency trees "
            "(the Hamming-cost violator would need the best tree for every number "
            "of wrong heads); use loss='hinge-approx-slack' (Sarawagi & Gupta 2008, "
            "Sec. 3) or loss='poslearn'.")

    # --------------------------------------------------------- projection
    def _project(self, theta, set, geometry):
        theta = self._theta(theta)
        if set == "simplex":
            return head_simplex_rows(theta, self.part_off, self.word_off, geometry == "kl")
        # Euclidean projection onto the arborescence polytope: every part is
        # unary, so this is the SparseMAP solve.
        return self._marginal_projection(theta)

    # ---------------------------------------------------------- SparseMAP
    # (the active set of RaggedStructure; every part is penalised, so
    # SparseMAP equals the Euclidean projection onto the tree polytope)
    def _oracles(self):
        return tree_map_oracle(self.projective), tree_encode_codes

    def _oracle_params(self):
        return self._params

    @property
    def code_width(self):
        """A support is a head per word (``0..n``)."""
        return self.lengths + 1

    # ---------------------------------------------------------- decoding
    def calibrated_decode(self, mu):
        """Calibrated decoding (Blondel 2019, Sec. 5): the tree minimising the
        expected Hamming cost ``sum_m (1 - mu[m, head(m)])`` under marginals
        ``mu``, i.e. the MAP tree (MST or Eisner) with ``mu`` as arc scores.

        Equal to ``argmax(-cost_vector(mu))`` (every tree has one arc per
        word, so the ``-1`` shift is constant); ``mu`` can be any finite
        score vector (marginals, projections, raw scores).
        """
        return self.argmax(mu)
