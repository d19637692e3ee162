"""
Grid search over losses in a pipeline
=====================================

The loss of a structlearn estimator is a hyper-parameter like any other:
``GridSearchCV`` searches it together with the regularisation, inside a
scikit-learn ``Pipeline``.  Ordinal regression of the bundled red Wine
Quality data (quality 3-8), scored by mean absolute error.  ``'sparsemap'``
and ``'projection'`` are the same loss on the order simplex (SparseMAP is the
Euclidean projection onto the marginal polytope), so their bars agree up to
solver tolerance.  On these data the losses differ by less than the
fold-to-fold spread (the error bars); the search picks the CRF.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from structlearn import OrdinalRegressor
from structlearn.datasets import load_wine_quality

warnings.simplefilter("ignore")
X, y = load_wine_quality("red")
pipe = make_pipeline(StandardScaler(), OrdinalRegressor(random_state=0))
grid = GridSearchCV(
    pipe,
    {"ordinalregressor__loss": ["hinge", "crf", "sparsemap", "projection", "squared"],
     "ordinalregressor__alpha": [1e-3, 1e-1]},
    scoring="neg_mean_absolute_error", cv=KFold(3, shuffle=True, random_state=0))
grid.fit(X, y)
print("best:", grid.best_params_, f"MAE {-grid.best_score_:.3f}")

# %%
res = grid.cv_results_
losses = ["hinge", "crf", "sparsemap", "projection", "squared"]
fig, ax = plt.subplots(figsize=(7, 3.5))
for k, alpha in enumerate([1e-3, 1e-1]):
    mae = [-res["mean_test_score"][i] for i in range(len(res["params"]))
           if res["params"][i]["ordinalregressor__alpha"] == alpha]
    order = [res["params"][i]["ordinalregressor__loss"] for i in range(len(res["params"]))
             if res["params"][i]["ordinalregressor__alpha"] == alpha]
    std = [res["std_test_score"][i] for i in range(len(res["params"]))
           if res["params"][i]["ordinalregressor__alpha"] == alpha]
    mae = [mae[order.index(loss)] for loss in losses]
    std = [std[order.index(loss)] for loss in losses]
    ax.bar(np.arange(len(losses)) + 0.4 * k, mae, width=0.4, yerr=std, capsize=3,
           label=f"alpha = {alpha:g}")
ax.set_xticks(np.arange(len(losses)) + 0.2, losses)
ax.set_ylabel("mean absolute error\n(3-fold CV, mean +- std)")
ax.set_ylim(0, None)
ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
plt.tight_layout()
plt.show()
