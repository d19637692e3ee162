"""Dependency parsing metrics: UAS and LAS (re-exported by :mod:`structlearn.metrics`).

A module of its own so that ``metrics.py`` stays readable; import them from
:mod:`structlearn.metrics`.
"""

import unicodedata

import numpy as np

from ._validation import check_sample_weight
# structlearn.metrics imports this module after defining its helpers
from .metrics import _check_sequence_pair


def _is_punct(token):
    """UPOS ``PUNCT``, or a word made only of Unicode punctuation."""
    if not isinstance(token, str) or not token:
        return False
    if token == "PUNCT":
        return True
    return all(unicodedata.category(ch).startswith("P") for ch in token)


def _check_heads(seq, name, i):
    heads = []
    n = len(seq)
    for t, h in enumerate(seq):
        if isinstance(h, (bool, np.bool_)) or not isinstance(
                h, (int, np.integer, float, np.floating)) or (
                isinstance(h, (float, np.floating)) and not np.isfinite(h)) \
                or h != int(h):
            raise ValueError(
                f"{name}[{i}][{t}] = {h!r} is not an integer head index."
            )
        h = int(h)
        if not 0 <= h <= n:
            raise ValueError(
                f"{name}[{i}][{t}] = {h} is outside 0..{n} (heads are 1-based "
                f"token positions, 0 = root; sequence {i} has {n} tokens)."
            )
        heads.append(h)
    return heads


def uas(y_true_heads, y_pred_heads, words_or_upos=None, exclude_punct=False,
        *, sample_weight=None):
    """Unlabeled attachment score of dependency trees.

    The fraction of tokens whose predicted head is their true head.

    Parameters
    ----------
    y_true_heads : list of sequences of int, or of (heads, deprels) pairs
        True heads, one sequence per sentence: ``y_true_heads[i][t]`` is
        the 1-based position of the head of token ``t + 1`` (0 = root), as
        in CoNLL-U.  Labelled targets (``(heads, deprels)`` pairs, as a
        labelled :class:`~structlearn.DependencyParser` predicts them) are
        accepted: their DEPRELs are ignored.
    y_pred_heads : list of sequences of int, or of (heads, deprels) pairs
        Predicted heads, aligned with ``y_true_heads``.
    words_or_upos : list of sequences of str, default=None
        The UPOS tags (or the words) of the tokens, aligned with the heads;
        only used when ``exclude_punct`` is True.
    exclude_punct : bool, default=False
        Leave out punctuation tokens: tokens whose UPOS is ``"PUNCT"``, or,
        when words are given, words made only of Unicode punctuation
        characters.  The standard UD protocol includes punctuation.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sentence (each scored token counts with the weight
        of its sentence).

    Returns
    -------
    uas : float
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        If the inputs are not aligned lists of sequences (naming the
        sequence), a head is not an integer in ``0..len(sentence)`` (naming
        the sequence and position), ``exclude_punct`` is True without
        ``words_or_upos``, or no token is left to score.

    Examples
    --------
    >>> uas([[2, 0, 2]], [[2, 0, 1]])
    0.6666666666666666
    >>> uas([[2, 0, 2]], [[2, 0, 1]], [["PRON", "VERB", "PUNCT"]],
    ...     exclude_punct=True)
    1.0
    """
    y_true_heads = _heads_only(y_true_heads, "y_true_heads")
    y_pred_heads = _heads_only(y_pred_heads, "y_pred_heads")
    a, b = _check_sequence_pair(y_true_heads, y_pred_heads,
                                ("y_true_heads", "y_pred_heads"))
    w = check_sample_weight(sample_weight, len(a))
    if exclude_punct:
        if words_or_upos is None:
            raise ValueError(
                "exclude_punct=True needs words_or_upos (the UPOS tags or "
                "words of the tokens)."
            )
        tags, _ = _check_sequence_pair(words_or_upos, a,
                                       ("words_or_upos", "y_true_heads"))
    correct = total = 0.0
    for i, (s, t) in enumerate(zip(a, b)):
        hs = _check_heads(s, "y_true_heads", i)
        hp = _check_heads(t, "y_pred_heads", i)
        keep = ([not _is_punct(x) for x in tags[i]] if exclude_punct
                else [True] * len(hs))
        wi = 1.0 if w is None else float(w[i])
        correct += wi * sum(k and p == q for k, p, q in zip(keep, hs, hp))
        total += wi * sum(keep)
    if total <= 0:
        raise ValueError("No token to score (all sequences are empty, all "
                         "tokens are punctuation or have zero weight).")
    return correct / total


# ---------------------------------------------------------------------------
# labelled dependency parsing
# ---------------------------------------------------------------------------
def _is_pair(t):
    """A ``(heads, deprels)`` pair: a length-2 tuple/list of two sequences."""
    def seq(v):
        return hasattr(v, "__len__") and not isinstance(v, (str, bytes, dict)) \
            and np.ndim(v) == 1
    return isinstance(t, (tuple, list)) and len(t) == 2 and seq(t[0]) and seq(t[1])


def _split_pairs(y, name):
    """Heads and DEPRELs of a list of ``(heads, deprels)`` pairs."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise ValueError(f"{name} must be a list of (heads, deprels) pairs; got "
                         f"{type(y).__name__}.")
    heads, deprels = [], []
    for i, t in enumerate(y):
        if not _is_pair(t):
            raise ValueError(f"{name}[{i}] must be a (heads, deprels) pair (a tuple of "
                             f"two sequences); got {type(t).__name__}.")
        h, d = t
        if len(h) != len(d):
            raise ValueError(f"{name}[{i}] has {len(h)} heads but {len(d)} deprels.")
        for j, lab in enumerate(d):
            if not isinstance(lab, str) or not lab:
                raise ValueError(f"{name}[{i}] word {j + 1}: deprel must be a non-empty "
                                 f"string; got {lab!r}.")
        heads.append(list(h) if not isinstance(h, np.ndarray) else h)
        deprels.append(list(d))
    return heads, deprels


def _heads_only(y, name):
    """y's heads: y itself, or the heads of its ``(heads, deprels)`` pairs."""
    if isinstance(y, (list, tuple)) and len(y) > 0 and _is_pair(y[0]):
        return _split_pairs(y, name)[0]
    return y


def las(y_true, y_pred, words_or_upos=None, exclude_punct=False, *, full_labels=False,
        sample_weight=None):
    """Labelled attachment score of dependency trees (CoNLL 2018 definition).

    The fraction of words whose predicted head is their true head and whose
    predicted dependency relation is their true one.  As in the CoNLL 2018
    shared task evaluation (``conll18_ud_eval.py``; Zeman et al. 2018,
    Sec. 2.1), relations are compared on their universal part: the subtype
    after ``:`` is stripped (``nmod:poss`` counts as ``nmod``), unless
    ``full_labels=True``; punctuation counts like any other word.  Every
    word of the basic tree is scored (multiword-token lines and empty nodes
    of CoNLL-U are not words: :func:`structlearn.datasets.read_conllu`
    keeps them out of ``sentence.tokens``).  With gold tokenisation, as
    here, the shared task's LAS F1 equals this accuracy.

    Parameters
    ----------
    y_true : list of (heads, deprels) pairs
        One pair per sentence: ``heads[t]`` is the 1-based head of word
        ``t + 1`` (0 = root) and ``deprels[t]`` its relation (a string).
    y_pred : list of (heads, deprels) pairs
        Predictions, aligned with ``y_true`` (as a labelled
        :class:`~structlearn.DependencyParser` returns them).
    words_or_upos : list of sequences of str, default=None
        UPOS tags (or words) of the words; only used with ``exclude_punct``.
    exclude_punct : bool, default=False
        Leave punctuation out (as in :func:`uas`); the CoNLL 2018 protocol
        includes it.
    full_labels : bool, default=False
        Compare whole relations, subtypes included.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sentence.

    Returns
    -------
    las : float
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        If an input is not a list of ``(heads, deprels)`` pairs, the two
        lists or a sentence's pairs are not aligned, a head is not an
        integer in ``0..n`` or a relation is not a non-empty string (naming
        the sentence and word), or no word is left to score.

    See Also
    --------
    uas : the unlabelled score (accepts these pairs too).

    Examples
    --------
    >>> gold = [([2, 0, 2], ["nsubj", "root", "obl:tmod"])]
    >>> las(gold, [([2, 0, 2], ["nsubj", "root", "obl"])])
    1.0
    >>> las(gold, [([2, 0, 2], ["nsubj", "root", "obl"])], full_labels=True)
    0.6666666666666666
    >>> las(gold, [([2, 0, 1], ["obj", "root", "obl"])])
    0.3333333333333333
    """
    if not isinstance(full_labels, (bool, np.bool_)):
        raise ValueError(f"full_labels must be a bool; got {full_labels!r}.")
    ht, dt = _split_pairs(y_true, "y_true")
    hp, dp = _split_pairs(y_pred, "y_pred")
    a, b = _check_sequence_pair(ht, hp, ("y_true heads", "y_pred heads"))
    w = check_sample_weight(sample_weight, len(a))
    if exclude_punct:
        if words_or_upos is None:
            raise ValueError("exclude_punct=True needs words_or_upos (the UPOS tags or "
                             "words of the tokens).")
        tags, _ = _check_sequence_pair(words_or_upos, a, ("words_or_upos", "y_true"))

    def rel(r):
        return r if full_labels else r.split(":", 1)[0]

    correct = total = 0.0
    for i in range(len(a)):
        hs = _check_heads(a[i], "y_true", i)
        hq = _check_heads(b[i], "y_pred", i)
        keep = ([not _is_punct(x) for x in tags[i]] if exclude_punct
                else [True] * len(hs))
        wi = 1.0 if w is None else float(w[i])
        correct += wi * sum(k and p == q and rel(r) == rel(s)
                            for k, p, q, r, s in zip(keep, hs, hq, dt[i], dp[i]))
        total += wi * sum(keep)
    if total <= 0:
        raise ValueError("No word to score (all sequences are empty, all words are "
                         "punctuation or have zero weight).")
    return correct / total
