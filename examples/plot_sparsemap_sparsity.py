"""
Sparsity of SparseMAP outputs during training
=============================================

SparseMAP's distribution over tag sequences is sparse: a convex
combination of a few sequences, often one.  How many depends on how sharp
the scores are.  A :class:`~structlearn.SequenceTagger` with
``loss='sparsemap'`` starts from one averaged-perceptron epoch (sharp
scores, which keep the active-set solver out of its slowest, near-uniform
regime) and L-BFGS then moves toward the regularised optimum; here it is
trained for an increasing number of iterations on the UPOS tags of the
bundled EWT slice, and ``predict_sparse`` gives the support of every test
sentence's distribution.  Along the way the supports *grow*: the L2
penalty (``alpha``) smooths the perceptron's sharp scores, and the model
comes to hedge between a dozen sequences on hard sentences.  (Trained to
convergence on the full CoNLL-2000 data, SparseMAP keeps 6 sequences per
sentence on average; the cost margin of ``'m-sparsemap'`` brings that to
2.3 -- see the benchmarks.)  The printed test accuracy rises along the way
(here from 0.83 to 0.93): the denser outputs are not a loss of accuracy.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from structlearn import SequenceTagger
from structlearn.datasets import load_ewt_pos

warnings.simplefilter("ignore")
X, y = load_ewt_pos("train")
X_test, y_test = load_ewt_pos("test")
X_test, y_test = X_test[:150], y_test[:150]
stages, mean_size, single, accuracy = [5, 10, 20, 40, 80], [], [], []
for n_iter in stages:
    tagger = SequenceTagger(loss="sparsemap", alpha=1e-3, max_iter=n_iter, n_jobs=2,
                            random_state=0)
    tagger.fit(X, y)
    sizes = np.array([len(dist) for dist in tagger.predict_sparse(X_test)])
    mean_size.append(sizes.mean())
    single.append(np.mean(sizes == 1))
    accuracy.append(tagger.score(X_test, y_test))
    print(f"{n_iter:3d} iterations: {sizes.mean():5.2f} sequences per sentence, "
          f"{np.mean(sizes == 1):.0%} single, accuracy {accuracy[-1]:.3f}")

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.plot(stages, mean_size, "o-", label="tag sequences per sentence (mean)")
ax.set_xscale("log")
ax.set_xticks(stages, [str(n) for n in stages])
ax.minorticks_off()
ax.set_xlabel("L-BFGS iterations")
ax.set_ylabel("support size")
ax2 = ax.twinx()
ax2.plot(stages, single, "s--", color="tab:orange", label="share of single-sequence outputs")
ax2.set_ylim(0, 1)
ax2.set_ylabel("share")
handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
ax.legend(handles, [h.get_label() for h in handles], loc="upper center",
          bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=8, frameon=False)
ax.set_title("SparseMAP support on 150 test sentences")
plt.tight_layout()
plt.show()
