"""Chunk tags and span lists as segmentations: the targets of SegmentTagger."""

import numbers
from collections.abc import Mapping

import numpy as np

from .._validation import describe
from ..metrics import _CHUNK_PREFIXES, _extract_chunks

SCHEMES = ("auto", "bio", "iob1", "iobes", "spans")


def _is_span_list(seq):
    return len(seq) > 0 and all(isinstance(s, (tuple, list)) and len(s) == 3 for s in seq)


def _tags_to_segments(tags, i):
    """``[(start, end, label, is_chunk)]`` (end exclusive) covering every
    token of tag sequence ``y[i]``: its chunks, decoded by the conlleval
    rules that :func:`structlearn.metrics.chunk_f1` scores with (IOB1,
    IOB2 and IOBES alike), and an 'O' segment of one token for every token
    outside them."""
    segs, t = [], 0
    for s, e, label in _extract_chunks(tags, "y", i, _CHUNK_PREFIXES["auto"], "auto"):
        segs += [(u, u + 1, "O", False) for u in range(t, s)]
        segs.append((s, e + 1, label, True))
        t = e + 1
    return segs + [(u, u + 1, "O", False) for u in range(t, len(tags))]


def _segments_to_tags(segs, scheme):
    out = []
    prev_label = None
    for s, e, label, chunk in segs:
        if not chunk:
            out.append(label)
            prev_label = None
            continue
        n = e - s
        if scheme == "iob1":
            first = "B" if prev_label == label else "I"
            out += [f"{first}-{label}"] + [f"I-{label}"] * (n - 1)
        elif scheme == "iobes":
            out += [f"S-{label}"] if n == 1 else \
                [f"B-{label}"] + [f"I-{label}"] * (n - 2) + [f"E-{label}"]
        else:
            out += [f"B-{label}"] + [f"I-{label}"] * (n - 1)
        prev_label = label
    return out


def targets_to_segments(y, lengths, scheme, outside):
    """Per sequence, ``[(start, end, label, is_chunk)]`` covering it."""
    out = []
    for i, (seq, L) in enumerate(zip(y, lengths)):
        if isinstance(seq, (str, bytes, Mapping)) or not hasattr(seq, "__len__"):
            raise ValueError(f"y[{i}] must be a tag sequence or a span list, got "
                             f"{describe(seq)}.")
        if scheme != "spans":
            if len(seq) != L:
                raise ValueError(f"sequence {i} has {L} tokens in X but {len(seq)} tags "
                                 f"in y.")
            out.append(_tags_to_segments(list(seq), i))
            continue
        segs, t = [], 0
        for j, span in enumerate(sorted(seq, key=lambda s: s[0])):
            if not (isinstance(span, (tuple, list)) and len(span) == 3):
                raise ValueError(f"y[{i}][{j}] = {span!r} is not a (start, end, label) "
                                 f"span.")
            s, e, label = int(span[0]), int(span[1]), span[2]
            if not (t <= s < e <= L):
                raise ValueError(f"y[{i}]: span {tuple(span)!r} overlaps another or "
                                 f"lies outside the sequence's {L} tokens.")
            if label == outside:
                raise ValueError(f"y[{i}]: span {tuple(span)!r} has the outside label "
                                 f"{outside!r}.")
            segs += [(u, u + 1, outside, False) for u in range(t, s)]
            segs.append((s, e, label, True))
            t = e
        segs += [(u, u + 1, outside, False) for u in range(t, L)]
        out.append(segs)
    return out



def _penalty(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {value!r}.")
    return float(value)


def segment_penalties(precision, recall, mismatch, classes):
    """The ``precision``, ``recall`` and ``mismatch`` arrays of
    :class:`~structlearn.structures.Segments` over ``classes`` from the
    estimator's parameters (a number for all, or a dict; unlisted: 1)."""
    index = {c: k for k, c in enumerate(classes)}
    out = {}
    for name, value in (("precision_penalty", precision), ("recall_penalty", recall)):
        vec = np.ones(len(classes))
        if isinstance(value, Mapping):
            for label, v in value.items():
                if label not in index:
                    raise ValueError(f"{name} names the label {label!r}, which is not one "
                                     f"of the training labels {list(classes)}.")
                vec[index[label]] = _penalty(v, f"{name}[{label!r}]")
        else:
            vec[:] = _penalty(value, name)
        out[name.split("_")[0]] = vec
    mis = np.ones((len(classes), len(classes)))
    if isinstance(mismatch, Mapping):
        for pair, v in mismatch.items():
            if not (isinstance(pair, tuple) and len(pair) == 2 and pair[0] in index
                    and pair[1] in index and pair[0] != pair[1]):
                raise ValueError(f"mismatch_penalty keys must be (gold_label, "
                                 f"predicted_label) pairs of two different training "
                                 f"labels {list(classes)}, got {pair!r}.")
            mis[index[pair[0]], index[pair[1]]] = _penalty(v, f"mismatch_penalty[{pair!r}]")
    else:
        mis[:] = _penalty(mismatch, "mismatch_penalty")
    np.fill_diagonal(mis, 0.0)
    out["mismatch"] = mis
    return out
