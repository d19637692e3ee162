"""
Constrained and unconstrained decoding of BIO chunks
=====================================================

A BIO tagger should never output ``I-NP`` after ``O``: such a tag starts a
chunk the scheme cannot express, and chunk scorers (``conlleval``) read it
as a new chunk.  ``SequenceTagger(constraints="BIO")`` forbids those
transitions in training and in decoding, for every loss.

We train taggers on noun chunks of the bundled slice of UD English EWT
(maximal runs of determiners, adjectives, numerals and nouns, read from the
gold UPOS) from the words alone, and count the invalid sequences each
decoding produces, with and without the constraints.  Calibrated decoding
(each token's most probable tag) is where invalid bigrams appear; with the
constraints it maximises the same expected accuracy over valid sequences.
Last, forced decoding: fixing one token's tag changes the best sequence
around it.
"""

import matplotlib.pyplot as plt
import numpy as np

from structlearn import SequenceTagger
from structlearn.datasets import load_ewt
from structlearn.feature_extraction import column_features
from structlearn.metrics import chunk_f1

NOMINAL = {"DET", "ADJ", "NOUN", "PROPN", "NUM"}


def np_chunks(upos):
    tags, inside = [], False
    for u in upos:
        now = u in NOMINAL
        tags.append(("I-NP" if inside else "B-NP") if now else "O")
        inside = now
    return tags


def data(sentences):
    X = [column_features(s.forms, "words") for s in sentences]
    return X, [np_chunks(s.upos) for s in sentences]


X_train, y_train = data(load_ewt("train")[:300])
X_test, y_test = data(load_ewt("test"))


def invalid(seq):
    prev = "O"
    for tag in seq:
        if tag == "I-NP" and prev == "O":
            return True
        prev = tag
    return False


rows = []
for constraints in (None, "BIO"):
    tagger = SequenceTagger(loss="crf", alpha=1e-3, constraints=constraints).fit(
        X_train, y_train)
    for decoding in ("map", "calibrated"):
        pred = tagger.set_params(decoding=decoding).predict(X_test)
        rows.append((f"{decoding}\n{constraints or 'free'}",
                     np.mean([invalid(p) for p in pred]), chunk_f1(y_test, pred)))
        print(f"{decoding:>10} constraints={constraints!s:5}  invalid sequences "
              f"{rows[-1][1]:6.1%}  chunk F1 {rows[-1][2]:.4f}")

fig, ax = plt.subplots(1, 2, figsize=(8, 3))
names = [r[0] for r in rows]
ax[0].bar(names, [100 * r[1] for r in rows], color="tab:red")
ax[0].set_ylabel("invalid BIO sequences (%)")
ax[1].bar(names, [r[2] for r in rows], color="tab:blue")
ax[1].set_ylim(min(r[2] for r in rows) - 0.02, 1.0)
ax[1].set_ylabel("chunk F1")
fig.tight_layout()

# %%
# Forced decoding: the constrained tagger told that one word starts a chunk.
tagger.set_params(decoding="map")
x, words = X_test[3], load_ewt("test")[3].forms
free = tagger.predict_single(x)
t = next(i for i, tag in enumerate(free) if tag == "O")
known = [None] * len(x)
known[t] = "B-NP"
forced = tagger.predict_single(x, known=known)
for w, a, b in zip(words, free, forced):
    print(f"{w:>12} {a:>5} {b:>5}")
