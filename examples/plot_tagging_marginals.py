"""
CRF and SparseMAP marginals of a tagger
=======================================

A CRF gives every tag of every token some probability; SparseMAP puts its
mass on a few tag sequences, so its per-token marginals are mixtures of a
handful of one-hot rows: most tags get exactly zero, and the uncertainty
shows only on the tokens where those few sequences disagree.  Both taggers
are :class:`~structlearn.SequenceTagger` models trained on the UPOS tags of
the bundled EWT slice, with the same features, penalty and iteration budget
(60 L-BFGS iterations, which keeps this example under a minute; trained to
convergence, the CRF stays at 0.921 after ~100 iterations and SparseMAP
reaches 0.934 after ~250); only ``loss`` differs.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from structlearn import SequenceTagger
from structlearn.datasets import load_ewt_pos

warnings.simplefilter("ignore")
X, y = load_ewt_pos("train")
X_test, y_test = load_ewt_pos("test")
models = {loss: SequenceTagger(loss=loss, alpha=1e-3, max_iter=60, n_jobs=2,
                                random_state=0).fit(X, y)
          for loss in ("crf", "sparsemap")}
for loss, model in models.items():
    P = np.vstack(model.predict_marginals(X_test))
    print(f"{loss:9s} token accuracy {model.score(X_test, y_test):.3f}, "
          f"{np.mean(P == 0):.0%} of the (token, tag) marginals exactly 0")
support = [len(d) for d in models["sparsemap"].predict_sparse(X_test)]
print(f"SparseMAP: {np.mean(support):.1f} tag sequences per test sentence on average")

# %%
# One test sentence with an ambiguous word; rows are tokens, columns tags.
i = next(k for k, s in enumerate(X_test) if 6 <= len(s) <= 12 and
         np.sum(np.max(models["crf"].predict_marginals([s])[0], axis=1) < 0.9) >= 2)
words = [tok["word"] for tok in X_test[i]]      # (the features lower-case the words)
fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(words) + 1.5), sharey=True)
for ax, (loss, model) in zip(axes, models.items()):
    P = model.predict_marginals([X_test[i]])[0]
    im = ax.imshow(P, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(model.classes_)), model.classes_, rotation=90)
    ax.set_yticks(range(len(words)), words)
    for t, k in zip(*np.nonzero((P > 0.005) & (P < 0.995))):
        ax.text(k, t, f"{P[t, k]:.2f}", ha="center", va="center", fontsize=7,
                color="black" if P[t, k] < 0.6 else "white")
    ax.set_xlabel("tag")
    ax.set_title(f"{loss}: {np.mean(P == 0):.0%} of the entries exactly 0")
axes[0].set_ylabel("token")
plt.tight_layout()
fig.colorbar(im, ax=axes, shrink=0.8, label="marginal probability")
plt.show()
