"""
Template selection with the sparseptron
=======================================

:class:`~structlearn.feature_selection.GroupLassoSelector` keeps at most
``budget`` feature templates (here: the keys of the token feature dicts)
by group-lasso regularisation with budget-driven shrinkage (Martins et al.
2011); a tagger refit on the kept templates is the second step of a
pipeline.  Accuracy against the number of features it keeps, on the UPOS
tags of the bundled EWT slice, next to the model with every template.
(A budget of one keeps a single template of a few weights -- with the
default group weights ``d_m = max(1, log2 |G_m|)`` small templates are
cheap to keep -- and is left out.)
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.pipeline import make_pipeline

from structlearn import SequenceTagger
from structlearn.datasets import load_ewt_pos
from structlearn.feature_selection import GroupLassoSelector

warnings.simplefilter("ignore")
X, y = load_ewt_pos("train")
X_test, y_test = load_ewt_pos("test")
templates = sorted(X[0][0])
print(f"{len(templates)} templates: {', '.join(templates)}")

full = SequenceTagger(loss="hinge", max_iter=10, random_state=0).fit(X, y)
full_acc, full_size = full.score(X_test, y_test), full.coef_.nnz
rows = []
for budget in (2, 3, 4, 6):
    pipe = make_pipeline(GroupLassoSelector(SequenceTagger(), budget=budget, K=200,
                                            random_state=0),
                         SequenceTagger(loss="hinge", max_iter=10, random_state=0))
    pipe.fit(X, y)
    acc, size = pipe.score(X_test, y_test), pipe[-1].coef_.nnz
    rows.append((budget, size, acc))
    print(f"B = {budget}: {acc:.3f} with {size} weights, templates "
          f"{pipe[0].selected_groups_}")
print(f"all {len(templates)}: {full_acc:.3f} with {full_size} weights")

# %%
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot([s for _, s, _ in rows], [a for _, _, a in rows], "o-", label="sparseptron + refit")
for b, s, a in rows:
    ax.annotate(f"B={b}", (s, a), textcoords="offset points", xytext=(6, -4))
ax.plot([full_size], [full_acc], "s", color="k", label="all templates")
ax.set_xscale("log")
ax.set_xlabel("non-zero weights of the refit model")
ax.set_ylabel("token accuracy (test)")
ax.margins(x=0.15, y=0.1)
ax.legend(loc="lower right")
plt.tight_layout()
plt.show()
