"""The second stage of a labelled parser: targets and per-arc label features.

A labelled :class:`~structlearn.DependencyParser` labels the incoming arc of
every word with a :class:`~structlearn.SequenceTagger` over the sentence's
words (the tags are the DEPRELs).  This module checks labelled targets and
builds the tagger's per-word feature dicts from the words and the heads.
"""

from collections.abc import Mapping

import numpy as np

from .._validation import describe

#: the distance bins of the arc features (structlearn.kernels.arcs)
_DIST_BINS = ((1, "1"), (2, "2"), (3, "3"), (4, "4"), (5, "5"), (10, "6-10"))


def _is_sequence(v):
    return (hasattr(v, "__len__") and not isinstance(v, (str, bytes, Mapping))
            and getattr(v, "ndim", 1) == 1)


def is_labelled_target(t):
    """Whether one sentence's target is a ``(heads, deprels)`` pair.

    A head array holds integers, so a tuple of two sequences is a pair, and
    so is a list of two sequences whose second holds strings (a list of two
    integer lists is a malformed head array, reported as such).
    """
    if not (isinstance(t, (tuple, list)) and len(t) == 2
            and _is_sequence(t[0]) and _is_sequence(t[1])):
        return False
    return isinstance(t, tuple) or (len(t[1]) > 0 and all(isinstance(d, str) for d in t[1]))


def split_targets(y, n_sentences):
    """Split y into head arrays and DEPREL lists.

    Parameters
    ----------
    y : list
        One target per sentence: all head arrays, or all ``(heads,
        deprels)`` pairs.
    n_sentences : int
        Number of sentences in X.

    Returns
    -------
    heads : list
        The head arrays (unchecked: the parser validates them as trees).
    deprels : list of list of str, or None
        None when y holds head arrays.

    Raises
    ------
    ValueError
        When y is not a list of ``n_sentences`` targets, mixes the two
        formats, or a pair has heads and DEPRELs of different lengths or a
        DEPREL that is not a non-empty string (naming sentence and
        position).
    """
    if y is None:
        raise ValueError("DependencyParser requires y: a list of head arrays or of "
                         "(heads, deprels) pairs, got None (NoneType).")
    if isinstance(y, (str, bytes, Mapping)) or not hasattr(y, "__len__"):
        raise ValueError("y must be a list of head arrays or of (heads, deprels) pairs, "
                         f"got {describe(y)}.")
    y = list(y)
    if len(y) != n_sentences:
        raise ValueError(f"X has {n_sentences} sentences but y has {len(y)} targets.")
    if not y:
        return y, None
    kinds = [is_labelled_target(t) for t in y]
    if not any(kinds):
        return y, None
    if not all(kinds):
        i = kinds.index(False) if kinds[0] else kinds.index(True)
        first = "a (heads, deprels) pair" if kinds[0] else "a head array"
        other = "a head array" if kinds[0] else "a (heads, deprels) pair"
        raise ValueError(f"y mixes formats: y[0] is {first} but y[{i}] is {other} "
                         f"({describe(y[i])}); give every sentence the same kind of "
                         "target.")
    heads, deprels = [], []
    for i, (h, d) in enumerate(y):
        if len(h) != len(d):
            raise ValueError(f"sentence {i}: {len(h)} heads but {len(d)} deprels.")
        labels = list(d)
        for t, lab in enumerate(labels):
            if not isinstance(lab, str) or not lab:
                raise ValueError(f"sentence {i}, word {t + 1} (y[{i}][1][{t}]): deprel "
                                 f"must be a non-empty string, got {lab!r}.")
        heads.append(h)
        deprels.append(labels)
    return heads, deprels


def _attr(tok, key):
    v = tok.get(key) if isinstance(tok, Mapping) else None
    if v is None:
        return "_"
    if isinstance(v, Mapping):
        return "|".join(k if w is None else f"{k}={w}" for k, w in v.items()) or "_"
    return str(v)


def _feats_list(tok):
    v = tok.get("feats") if isinstance(tok, Mapping) else None
    if not v:
        return []
    if isinstance(v, Mapping):
        return [k if w is None else f"{k}={w}" for k, w in v.items()]
    return [s for s in str(v).split("|") if s and s != "_"]


def _dist(d):
    for limit, name in _DIST_BINS:
        if d <= limit:
            return name
    return ">10"


def arc_label_features(tokens, heads):
    """Per-word feature dicts of the arcs ``heads[m - 1] -> m`` of one sentence.

    Parameters
    ----------
    tokens : list of dict
        The words (``form``, ``lemma``, ``upos``, ``xpos``, ``feats``; a
        missing attribute reads as ``"_"``).
    heads : sequence of int
        1-based heads, 0 = the root, forming a tree.

    Returns
    -------
    list of dict
        One :class:`~structlearn.feature_extraction.TokenVectorizer` dict
        per word: the dependent's and the head's word, lemma, UPOS, XPOS
        (and the dependent's morphological features), the direction and
        binned distance, head-dependent conjunctions, the head's head, the
        dependent's children (UPOS and the lemmas of function-word
        children) and its nearest siblings.
    """
    n = len(tokens)
    heads = [int(h) for h in heads]
    form = ["ROOT"] + [_attr(t, "form").lower() for t in tokens]
    lemma = ["ROOT"] + [_attr(t, "lemma").lower() for t in tokens]
    upos = ["ROOT"] + [_attr(t, "upos") for t in tokens]
    xpos = ["ROOT"] + [_attr(t, "xpos") for t in tokens]
    children = [[] for _ in range(n + 1)]
    for m, h in enumerate(heads, start=1):
        children[h].append(m)
    out = []
    for m in range(1, n + 1):
        h = heads[m - 1]
        direction = "root" if h == 0 else ("R" if h < m else "L")
        dist = "0" if h == 0 else _dist(abs(h - m))
        hh = heads[h - 1] if h else -1
        kids = children[m]
        sibs = children[h]
        pos = sibs.index(m)
        f = {
            "bias": True,
            "m.form": form[m], "m.lemma": lemma[m], "m.upos": upos[m], "m.xpos": xpos[m],
            "m.feats": _feats_list(tokens[m - 1]),
            "m.upos+m.feats": [f"{upos[m]}+{x}" for x in _feats_list(tokens[m - 1])],
            "h.form": form[h], "h.lemma": lemma[h], "h.upos": upos[h], "h.xpos": xpos[h],
            "dir": direction, "dir+dist": f"{direction}+{dist}",
            "h.upos+m.upos": f"{upos[h]}+{upos[m]}",
            "h.upos+m.upos+dir": f"{upos[h]}+{upos[m]}+{direction}",
            "h.xpos+m.xpos+dir": f"{xpos[h]}+{xpos[m]}+{direction}",
            "h.upos+m.upos+dir+dist": f"{upos[h]}+{upos[m]}+{direction}+{dist}",
            "h.lemma+m.upos": f"{lemma[h]}+{upos[m]}",
            "h.upos+m.lemma": f"{upos[h]}+{lemma[m]}",
            "h.lemma+m.lemma": f"{lemma[h]}+{lemma[m]}",
            "hh.upos+h.upos+m.upos": (f"{upos[hh]}+{upos[h]}+{upos[m]}" if hh >= 0
                                      else f"NONE+ROOT+{upos[m]}"),
            "m.children.upos": [upos[c] for c in kids],
            "m.children.function": [f"{upos[c]}+{lemma[c]}" for c in kids
                                    if upos[c] in ("ADP", "SCONJ", "AUX", "PART", "CCONJ",
                                                   "DET", "PRON", "PUNCT")],
            "m.upos+n.children": f"{upos[m]}+{min(len(kids), 3)}",
            "h.children.upos": [upos[c] for c in sibs if c != m],
            "left.sibling": f"{upos[sibs[pos - 1]] if pos > 0 else 'NONE'}+{upos[m]}",
            "right.sibling": (f"{upos[sibs[pos + 1]] if pos + 1 < len(sibs) else 'NONE'}"
                              f"+{upos[m]}"),
            "m-1.upos+m.upos": f"{upos[m - 1] if m > 1 else 'BOS'}+{upos[m]}",
            "m.upos+m+1.upos": f"{upos[m]}+{upos[m + 1] if m < n else 'EOS'}",
        }
        out.append(f)
    return out


def label_features(X, heads):
    """:func:`arc_label_features` of every sentence of X under ``heads``."""
    return [arc_label_features(getattr(s, "tokens", s), np.asarray(h).tolist())
            for s, h in zip(X, heads)]
