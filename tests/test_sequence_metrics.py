"""sklearn-crfsuite's metric names and the per-type span report.

The flat metrics are compared with ``sklearn_crfsuite.metrics`` on the same
inputs (when it is installed) and always with scikit-learn on lists
flattened here; the span report with per-type counts computed from span
sets that generated the tags.
"""

import numpy as np
import pytest
from sklearn import metrics as skm

from structlearn.datasets import load_ewt_pos
from structlearn.metrics import (chunk_f1, chunk_precision_recall_f1, flat_accuracy_score,
                                 flat_f1_score, flat_fbeta_score, flat_precision_score,
                                 flat_recall_score, sequence_accuracy_score,
                                 span_classification_report, token_accuracy)

try:
    from sklearn_crfsuite import metrics as crfsuite_metrics
except ImportError:  # the comparison with scikit-learn below still runs
    crfsuite_metrics = None


def _pos_pairs(n=200, seed=0):
    """Real UPOS sequences and a corrupted copy (15% of the tags replaced)."""
    _, y = load_ewt_pos("test")
    y = y[:n]
    rng = np.random.RandomState(seed)
    tags = sorted({t for s in y for t in s})
    pred = [[t if rng.rand() > 0.15 else tags[rng.randint(len(tags))] for t in s] for s in y]
    return y, pred, tags


def _flat(y):
    return [t for s in y for t in s]


PRF = [(flat_precision_score, skm.precision_score, "flat_precision_score"),
       (flat_recall_score, skm.recall_score, "flat_recall_score"),
       (flat_f1_score, skm.f1_score, "flat_f1_score")]
KWARGS = [dict(average="micro"), dict(average="macro"), dict(average="weighted"),
          dict(average=None), dict(average="weighted", labels=["NOUN", "VERB", "ADJ"]),
          dict(average=None, labels=["VERB", "NOUN"]),
          dict(average="macro", labels=["NOUN", "X", "SYM"], zero_division=0.0)]


@pytest.mark.parametrize("ours, sk, crf_name", PRF)
@pytest.mark.parametrize("kwargs", KWARGS)
def test_flat_prf_match_sklearn_and_sklearn_crfsuite(ours, sk, crf_name, kwargs):
    y, pred, _ = _pos_pairs()
    got = ours(y, pred, **kwargs)
    np.testing.assert_allclose(got, sk(_flat(y), _flat(pred), **kwargs), rtol=1e-12)
    if crfsuite_metrics is not None:
        np.testing.assert_allclose(got, getattr(crfsuite_metrics, crf_name)(y, pred, **kwargs),
                                   rtol=1e-12)


@pytest.mark.parametrize("kwargs", KWARGS[:5])
def test_flat_fbeta_matches(kwargs):
    y, pred, _ = _pos_pairs()
    got = flat_fbeta_score(y, pred, 0.5, **kwargs)
    np.testing.assert_allclose(got, skm.fbeta_score(_flat(y), _flat(pred), beta=0.5, **kwargs),
                               rtol=1e-12)
    if crfsuite_metrics is not None:
        np.testing.assert_allclose(
            got, crfsuite_metrics.flat_fbeta_score(y, pred, 0.5, **kwargs), rtol=1e-12)


def test_flat_accuracy_matches_and_equals_token_accuracy():
    y, pred, _ = _pos_pairs()
    got = flat_accuracy_score(y, pred)
    assert got == pytest.approx(skm.accuracy_score(_flat(y), _flat(pred)), rel=1e-12)
    assert got == pytest.approx(token_accuracy(y, pred), rel=1e-12)
    if crfsuite_metrics is not None:
        assert got == pytest.approx(crfsuite_metrics.flat_accuracy_score(y, pred), rel=1e-12)


def test_flat_metrics_weight_every_token_of_a_sequence():
    y, pred, _ = _pos_pairs(60)
    w = np.random.RandomState(1).uniform(0, 3, len(y))
    tok_w = np.concatenate([[wi] * len(s) for wi, s in zip(w, y)])
    assert flat_accuracy_score(y, pred, sample_weight=w) == pytest.approx(
        skm.accuracy_score(_flat(y), _flat(pred), sample_weight=tok_w), rel=1e-12)
    assert flat_f1_score(y, pred, average="macro", sample_weight=w) == pytest.approx(
        skm.f1_score(_flat(y), _flat(pred), average="macro", sample_weight=tok_w), rel=1e-12)
    assert flat_f1_score(y, pred, average="macro", sample_weight=w) != pytest.approx(
        flat_f1_score(y, pred, average="macro"), rel=1e-9)


def test_flat_metrics_default_average_is_sklearns_binary():
    # like sklearn_crfsuite (which passes **kwargs to scikit-learn): the
    # default average="binary" is for two labels only, with pos_label
    y, pred, _ = _pos_pairs(20)
    with pytest.raises(ValueError, match="average='binary'"):
        flat_f1_score(y, pred)
    yb = [["NOUN" if t == "NOUN" else "other" for t in s] for s in y]
    pb = [["NOUN" if t == "NOUN" else "other" for t in s] for s in pred]
    for ours, sk, crf_name in PRF:
        got = ours(yb, pb, pos_label="NOUN")
        assert got == pytest.approx(sk(_flat(yb), _flat(pb), pos_label="NOUN"), rel=1e-12)
        if crfsuite_metrics is not None:
            assert got == pytest.approx(
                getattr(crfsuite_metrics, crf_name)(yb, pb, pos_label="NOUN"), rel=1e-12)
        assert 0 < got < 1


def test_flat_metrics_reject_misaligned_sequences():
    with pytest.raises(ValueError, match="sequence 1 has 2 labels in y_true but 1 in y_pred"):
        flat_f1_score([["A"], ["A", "B"]], [["A"], ["A"]], average="micro")
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        flat_accuracy_score([["A"], ["B"]], [["A"]])
    with pytest.raises(ValueError, match="No token"):
        flat_accuracy_score([[], []], [[], []])
    with pytest.raises(ValueError, match="must be a list of sequences"):
        flat_precision_score(["A", "B"], ["A", "B"], average="micro")


def test_sequence_accuracy():
    y, pred, _ = _pos_pairs()
    exact = [s == t for s, t in zip(y, pred)]
    assert 0 < sum(exact) < len(y)  # both kinds occur
    assert sequence_accuracy_score(y, pred) == pytest.approx(np.mean(exact), rel=1e-12)
    if crfsuite_metrics is not None:  # its numpy comparison is right on ragged lists
        assert sequence_accuracy_score(y, pred) == pytest.approx(
            crfsuite_metrics.sequence_accuracy_score(y, pred), rel=1e-12)
    w = np.arange(1.0, len(y) + 1)
    assert sequence_accuracy_score(y, pred, sample_weight=w) == pytest.approx(
        np.dot(w, exact) / w.sum(), rel=1e-12)
    # equal-length sequences: a 2-D array comparison would count tokens
    assert sequence_accuracy_score([["A", "B"], ["A", "B"]], [["A", "B"], ["A", "C"]]) == 0.5


# ----------------------------------------------------------------- spans
def _random_spans(rng, length, types):
    """Non-overlapping (start, end exclusive, type) spans over a sentence."""
    spans, t = [], 0
    while t < length:
        if rng.rand() < 0.4:
            n = rng.randint(1, 4)
            end = min(length, t + n)
            spans.append((t, end, types[rng.randint(len(types))]))
            t = end
        else:
            t += 1
    return spans


def _iob2(spans, length):
    tags = ["O"] * length
    for s, e, typ in spans:
        tags[s] = f"B-{typ}"
        for u in range(s + 1, e):
            tags[u] = f"I-{typ}"
    return tags


def _span_sets(seed=0, n=80, types=("PER", "LOC", "ORG", "MISC")):
    rng = np.random.RandomState(seed)
    true, pred, lengths = [], [], []
    for _ in range(n):
        L = rng.randint(0, 12)
        gold = _random_spans(rng, L, types)
        guess = []
        for s, e, typ in gold:  # keep, drop, retype or shorten each true span
            r = rng.rand()
            if r < 0.6:
                guess.append((s, e, typ))
            elif r < 0.75:
                guess.append((s, e, types[(types.index(typ) + 1) % len(types)]))
            elif r < 0.85 and e - s > 1:
                guess.append((s, e - 1, typ))
        covered = {u for s, e, _ in guess for u in range(s, e)}
        for u in range(L):  # a few spurious one-token spans
            if u not in covered and rng.rand() < 0.05:
                guess.append((u, u + 1, types[rng.randint(len(types))]))
        true.append(gold)
        pred.append(sorted(guess))
        lengths.append(L)
    return true, pred, lengths


def _expected_report(true, pred, weights=None):
    """Per type (correct, predicted, true) weighted counts from span sets."""
    counts = {}
    for i, (g, p) in enumerate(zip(true, pred)):
        w = 1.0 if weights is None else weights[i]
        for s in g:
            counts.setdefault(s[2], [0.0, 0.0, 0.0])[2] += w
        for s in p:
            c = counts.setdefault(s[2], [0.0, 0.0, 0.0])
            c[1] += w
            c[0] += w * (s in set(g))
    return counts


def _prf(c, p, t):
    prec = c / p if p else 0.0
    rec = c / t if t else 0.0
    return prec, rec, (2 * prec * rec / (prec + rec) if prec + rec else 0.0)


@pytest.mark.parametrize("as_spans", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_span_report_matches_span_set_counts(as_spans, weighted):
    true, pred, lengths = _span_sets()
    w = np.random.RandomState(3).uniform(0, 2, len(true)) if weighted else None
    if as_spans:
        yt, yp = true, pred
    else:
        yt = [_iob2(s, L) for s, L in zip(true, lengths)]
        yp = [_iob2(s, L) for s, L in zip(pred, lengths)]
    report = span_classification_report(yt, yp, output_dict=True, sample_weight=w)
    counts = _expected_report(true, pred, w)
    assert set(report) == set(counts) | {"micro avg", "macro avg", "weighted avg"}
    for typ, (c, p, t) in counts.items():
        prec, rec, f1 = _prf(c, p, t)
        assert report[typ]["precision"] == pytest.approx(prec, rel=1e-12)
        assert report[typ]["recall"] == pytest.approx(rec, rel=1e-12)
        assert report[typ]["f1-score"] == pytest.approx(f1, abs=1e-12)
        assert report[typ]["support"] == pytest.approx(t, rel=1e-12)
    tot = np.sum(list(counts.values()), axis=0)
    micro = _prf(*tot)
    assert [report["micro avg"][k] for k in ("precision", "recall", "f1-score")] == \
        pytest.approx(micro, rel=1e-12)
    assert report["micro avg"]["f1-score"] == pytest.approx(
        chunk_f1(yt, yp, sample_weight=w), rel=1e-12)
    per = np.array([_prf(*counts[k]) for k in counts])
    sup = np.array([counts[k][2] for k in counts])
    assert [report["macro avg"][k] for k in ("precision", "recall", "f1-score")] == \
        pytest.approx(per.mean(axis=0).tolist(), rel=1e-12)
    assert [report["weighted avg"][k] for k in ("precision", "recall", "f1-score")] == \
        pytest.approx((sup @ per / sup.sum()).tolist(), rel=1e-12)
    assert report["macro avg"]["support"] == pytest.approx(tot[2])
    # the per-type dict of chunk_precision_recall_f1 carries the same numbers
    _, per_type = chunk_precision_recall_f1(yt, yp, sample_weight=w)
    for typ, (c, p, t) in counts.items():
        assert (per_type[typ]["n_correct"], per_type[typ]["n_pred"], per_type[typ]["n_true"]) \
            == pytest.approx((c, p, t))


def test_span_report_text_table():
    true, pred, lengths = _span_sets(seed=4)
    yt = [_iob2(s, L) for s, L in zip(true, lengths)]
    yp = [_iob2(s, L) for s, L in zip(pred, lengths)]
    d = span_classification_report(yt, yp, output_dict=True)
    text = span_classification_report(yt, yp, digits=3)
    rows = {}
    for line in text.splitlines()[2:]:
        parts = line.split()
        if parts:
            rows[" ".join(parts[:-4])] = [float(v) for v in parts[-4:]]
    assert set(rows) == set(d)
    for name, vals in rows.items():
        want = [d[name][k] for k in ("precision", "recall", "f1-score", "support")]
        assert vals == pytest.approx(want, abs=5e-4)


def test_span_lists_and_tags_give_the_same_f1():
    true, pred, lengths = _span_sets(seed=5)
    yt = [_iob2(s, L) for s, L in zip(true, lengths)]
    yp = [_iob2(s, L) for s, L in zip(pred, lengths)]
    assert chunk_f1(true, pred) == pytest.approx(chunk_f1(yt, yp), rel=1e-12)
    assert chunk_f1(true, pred, average="macro") == pytest.approx(
        chunk_f1(yt, yp, average="macro"), rel=1e-12)


def test_span_input_errors():
    with pytest.raises(ValueError, match=r"y_pred\[0\] is a tag sequence but y_true holds span"):
        chunk_f1([[(0, 1, "A")]], [["B-A"]])
    with pytest.raises(ValueError, match=r"y_true\[0\]\[0\] = \(2, 2, 'A'\).*start < end"):
        chunk_f1([[(2, 2, "A")]], [[(0, 1, "A")]])
    with pytest.raises(ValueError, match=r"y_pred\[1\]\[0\] is \(0, 1\); a span must be"):
        chunk_f1([[(0, 1, "A")], []], [[(0, 1, "A")], [(0, 1)]])
    with pytest.raises(ValueError, match=r"start must be an integer"):
        chunk_f1([[(0.5, 1, "A")]], [[(0, 1, "A")]])
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        chunk_f1([[(0, 1, "A")], []], [[(0, 1, "A")]])
    with pytest.raises(ValueError, match="digits"):
        span_classification_report([["B-A"]], [["B-A"]], digits=-1)


def test_span_report_without_chunks():
    d = span_classification_report([["O", "O"]], [["O", "O"]], output_dict=True)
    assert set(d) == {"micro avg", "macro avg", "weighted avg"}
    assert d["micro avg"]["f1-score"] == 0.0 and d["micro avg"]["support"] == 0
