"""
Labelled dependency parsing, LAS and CoNLL-U output
===================================================

A :class:`~structlearn.DependencyParser` fitted on ``(heads, deprels)``
pairs is a labelled parser: it predicts every word's head, then labels the
arc with a second stage (a :class:`~structlearn.SequenceTagger` over the
sentence's words, trained with the parser's own loss).  Here a structured
perceptron is trained on the first 400 sentences of the EWT slice bundled
with the package (a few seconds), scored by LAS and UAS on the bundled test
slice (:func:`structlearn.metrics.las`: the CoNLL 2018 definition, relation
subtypes stripped), one sentence is written back as CoNLL-U with
:func:`structlearn.datasets.with_predictions`, and its labelled tree drawn.
"""

import io

import matplotlib.pyplot as plt
import numpy as np

from structlearn import DependencyParser
from structlearn.datasets import conllu_targets, load_ewt, with_predictions, write_conllu
from structlearn.metrics import las, uas

train, test = load_ewt("train")[:400], load_ewt("test")
parser = DependencyParser(loss="perceptron", max_iter=5, random_state=0)
parser.fit(train, conllu_targets(train))        # (heads, deprels) pairs: labelled

gold = conllu_targets(test)
pred = parser.predict(test)                      # (heads, deprels) pairs
print(f"LAS {100 * las(gold, pred):.1f}  UAS {100 * uas(gold, pred):.1f}  "
      f"LAS with subtypes {100 * las(gold, pred, full_labels=True):.1f}  "
      f"(parser.score = LAS: {100 * parser.score(test, gold):.1f})")

# %%
# CoNLL-U out: the predicted HEAD and DEPREL replace the gold ones, DEPS
# (the enhanced graph) is cleared to ``_``; the test sentences are unchanged.
i = min(range(len(test)), key=lambda k: abs(len(test[k]) - 9))
out = with_predictions(test[i:i + 1], pred[i:i + 1])
buf = io.StringIO()
write_conllu(out, buf)
print(buf.getvalue())

# %%
# The labelled tree: arcs above the words, predicted relation on each arc;
# red where the head or the relation (without subtype) is wrong.
sent, (heads, rels) = test[i], pred[i]
gold_heads, gold_rels = gold[i]
words = sent.forms
fig, ax = plt.subplots(figsize=(10, 3.2))
for j, w in enumerate(["ROOT"] + words):
    ax.text(j, 0, w, ha="center", va="top", fontsize=11)
for m, (h, r) in enumerate(zip(heads, rels), start=1):
    ok = h == gold_heads[m - 1] and r.split(":")[0] == gold_rels[m - 1].split(":")[0]
    color = "tab:blue" if ok else "tab:red"
    lo, hi = sorted((int(h), m))
    rad = (hi - lo) / 2
    t = np.linspace(0, np.pi, 60)
    ax.plot(lo + rad + rad * np.cos(t), 0.15 + 0.35 * rad * np.sin(t), color=color)
    ax.plot(m, 0.15, marker="v", color=color, ms=6)
    ax.text(lo + rad, 0.15 + 0.35 * rad, r, ha="center", va="bottom", fontsize=9,
            color=color, bbox=dict(facecolor="white", edgecolor="none", pad=0.3))
ax.set_xlim(-0.7, len(words) + 0.7)
ax.set_ylim(-0.4, 0.5 + 0.2 * len(words))
ax.axis("off")
ax.set_title("Predicted labelled tree (red: wrong head or relation)")
plt.tight_layout()
plt.show()
