"""
Kendall's tau by loss on label ranking
======================================

:class:`~structlearn.LabelRanker` with every loss the Birkhoff polytope
supports, scored by
5-fold cross-validation (mean Kendall's tau) on the bundled ``stock`` label
ranking data set (5 labels), rankings predicted through the Birkhoff polytope
(assignment MAP oracle).  The loss is just a parameter; the cheap
row-stochastic superset gives the projection losses a closed form.  The CRF
and the exactly slack-rescaled hinge are not available here: the
log-partition over permutations (a permanent) is #P-hard and no exact
slack-scaled oracle is known, so both raise a ``ValueError`` naming the
alternatives.  ``'sparsemap'`` and ``'projection'`` onto the Birkhoff polytope
are the same loss (SparseMAP is that projection), hence the equal bars.
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.model_selection import KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from structlearn import LabelRanker
from structlearn.datasets import load_label_ranking
from structlearn.losses import Projection

warnings.simplefilter("ignore")
X, Y = load_label_ranking("stock")
losses = {"perceptron": "perceptron", "hinge": "hinge",
          "hinge-approx-slack": "hinge-approx-slack", "poslearn": "poslearn",
          "sparsemap": "sparsemap", "m-sparsemap": "m-sparsemap",
          "projection onto Birkhoff": "projection",
          "projection onto row-stochastic, Euclidean": Projection(set="row-stochastic"),
          "projection onto row-stochastic, KL": Projection(set="row-stochastic",
                                                           geometry="kl"),
          "squared": "squared"}
cv = KFold(5, shuffle=True, random_state=0)
scores = {}
for name, loss in losses.items():
    model = make_pipeline(StandardScaler(),
                          LabelRanker(polytope="birkhoff", loss=loss, random_state=0))
    scores[name] = cross_val_score(model, X, Y, cv=cv).mean()
for name, s in scores.items():
    print(f"{name:42s} {s:.3f}")

# %%
fig, ax = plt.subplots(figsize=(8, 4))
names = list(scores)
bars = ax.barh(names, [scores[n] for n in names], color="tab:blue")
ax.bar_label(bars, fmt="%.3f", padding=3)
ax.set_xlim(0, 1.08)
ax.set_xlabel("mean Kendall's tau (5-fold CV)")
ax.invert_yaxis()
plt.tight_layout()
plt.show()
