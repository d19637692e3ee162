"""
SparseMAP parse of an ambiguous sentence
========================================

A SparseMAP parser predicts a *sparse* distribution over trees: for most
sentences a single tree, for ambiguous ones a handful.  Here a
:class:`~structlearn.DependencyParser` with ``loss='sparsemap'`` is trained
on the EWT slice bundled with the package and parses *I saw the man with the
telescope.*, whose prepositional phrase can attach to the verb (I used the
telescope) or to the noun (the man had it).  Every arc with marginal
probability p of at least 0.01 is drawn with line width 1 + 5p and coloured
by p (the SparseMAP paper's Figure 3);
``predict_sparse`` lists the trees themselves.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from structlearn import DependencyParser
from structlearn.datasets import load_ewt

warnings.simplefilter("ignore")          # L-BFGS stops at max_iter on purpose
train = load_ewt("train")
parser = DependencyParser(loss="sparsemap", alpha=1e-2, max_iter=40, n_jobs=2,
                          random_state=0)
parser.fit([s.tokens for s in train], [s.heads for s in train])

words = ["I", "saw", "the", "man", "with", "the", "telescope", "."]
tags = [("I", "PRON", "PRP"), ("see", "VERB", "VBD"), ("the", "DET", "DT"),
        ("man", "NOUN", "NN"), ("with", "ADP", "IN"), ("the", "DET", "DT"),
        ("telescope", "NOUN", "NN"), (".", "PUNCT", ".")]
sentence = [dict(form=w, lemma=lem, upos=u, xpos=x) for w, (lem, u, x) in zip(words, tags)]

for heads, weight in parser.predict_sparse([sentence])[0]:
    attach = words[heads[6] - 1] if heads[6] else "ROOT"
    print(f"p = {weight:.2f}  heads = {heads.tolist()}  ('telescope' attaches to '{attach}')")

# %%
# Arc marginals: ``M[m - 1, h]`` is the probability that word ``m`` has head
# ``h`` (0 = the root).
M = parser.predict_marginals([sentence])[0]
fig, ax = plt.subplots(figsize=(9, 3.4))
for i, w in enumerate(["ROOT"] + words):
    ax.text(i, 0, w, ha="center", va="top", fontsize=12)
for m in range(1, len(words) + 1):
    for h in range(len(words) + 1):
        p = M[m - 1, h]
        if p < 0.01:
            continue
        lo, hi = sorted((h, m))
        r = (hi - lo) / 2
        t = np.linspace(0, np.pi, 60)
        color = plt.cm.viridis(0.85 * (1 - p))
        ax.plot(lo + r + r * np.cos(t), 0.15 + 0.4 * r * np.sin(t), color=color,
                lw=1 + 5 * p)
        ax.plot(m, 0.15, marker="v", color=color, ms=4 + 6 * p)   # the modifier end
        if p < 0.98:   # label the uncertain arcs, on the arc near the modifier
            a = np.pi / 4 if m == hi else 3 * np.pi / 4
            ax.text(lo + r + r * np.cos(a), 0.15 + 0.4 * r * np.sin(a), f"{p:.2f}",
                    ha="center", va="center",
                    fontsize=10, color=color,
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
ax.set_xlim(-0.7, len(words) + 0.7)
ax.set_ylim(-0.4, 0.6 + 0.2 * len(words))
ax.axis("off")
ax.set_title("SparseMAP arc marginals p (arrowheads at the modifier; "
             "unlabelled arcs: p > 0.98)")
sm = plt.cm.ScalarMappable(cmap=plt.matplotlib.colors.ListedColormap(
    plt.cm.viridis(0.85 * (1 - np.linspace(0, 1, 256)))), norm=plt.Normalize(0, 1))
fig.colorbar(sm, ax=ax, shrink=0.7, pad=0.01, label="marginal probability p")
plt.tight_layout()
plt.show()
