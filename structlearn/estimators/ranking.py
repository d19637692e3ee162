"""Label ranking."""

from .._validation import check_rank_matrix
from ..structures import Birkhoff, Permutahedron
from ._base import StructuredLinearModel


class LabelRanker(StructuredLinearModel):
    """Label ranking with a linear model and a structured loss.

    Targets are rank vectors: ``Y[i, j]`` is the rank of label ``j`` for
    sample ``i`` (1 = best), the convention of scikit-lr and of the
    label-ranking benchmark data.  ``predict`` returns rank vectors and
    ``score`` the mean Kendall's tau.

    ``fit`` takes ``sample_weight`` (one weight per example); the targets
    are rankings, which have no classes to weight (no ``class_weight``).

    Parameters
    ----------
    polytope : {'permutahedron', 'birkhoff'}, default='permutahedron'
        Output encoding. 'permutahedron': one score per label, MAP = sort
        (``phi(y)_j = k + 1 - y_j``). 'birkhoff': one score per
        (label, rank), MAP = linear assignment; enables the row-stochastic
        superset and KL (Sinkhorn) projections.
    loss : str or Loss, default='projection'
        'perceptron', 'hinge', 'hinge-approx-slack', 'poslearn',
        'sparsemap', 'm-sparsemap', 'projection', 'squared', or a loss object
        such as ``Projection(set='row-stochastic', geometry='kl')``.  'crf'
        and 'hinge-slack' are intractable on permutations and raise.
    alpha : float or 'auto', default=1e-3
        Penalty of the mean loss, ``alpha * (l1_ratio * ||W||_1 + (1 -
        l1_ratio) / 2 * ||W||^2)`` (the intercept is not penalised).
        ``'auto'``: chosen by 3-fold cross-validation among ``10, 1, ...,
        1e-6`` (a warm-started regularisation path per fold, scored by
        :meth:`score`; folds shuffled with ``random_state``, stratified by
        class for :class:`~structlearn.OrdinalRegressor`), then refitted on
        all the data: the choice is ``alpha_``, the path ``cv_alphas_`` and
        ``cv_scores_`` (n_alphas, n_folds).  The same holds for every
        estimator; it costs about 24 fits (fewer iterations each, from the
        warm starts) plus one.
    fit_intercept : bool, default=True
    solver : {'auto', 'lbfgs', 'sgd', 'bcfw', 'cutting-plane', 'owlqn'}, default='auto'
        'auto' picks OWL-QN when ``l1_ratio > 0``, else L-BFGS for smooth
        losses and averaged stochastic subgradient (averaged perceptron for
        'perceptron') otherwise.
        'bcfw' (block-coordinate Frank-Wolfe on the dual,
        :func:`structlearn.solvers.bcfw`; the max-margin losses 'hinge',
        'hinge-slack', 'hinge-approx-slack', 'poslearn') and
        'cutting-plane' (bundle method, any loss but the perceptron) train
        to a certified relative duality gap ``tol`` (``duality_gap_``);
        both penalise the intercept like the weights.
    max_iter : int, default=None
        L-BFGS iterations (500), SGD or BCFW epochs (50, 200) or
        cutting-plane iterations (300).
    tol : float or None, default=None
        Stopping tolerance; None picks the solver's default: L-BFGS
        projected gradient 1e-5, SGD relative objective improvement 1e-4
        (3 epochs of patience), BCFW relative duality gap 1e-3,
        cutting-plane relative duality gap 1e-4.
    decoding : {'map', 'calibrated'}, default='calibrated'
        'calibrated' decodes the loss's marginals for the task cost
        (Blondel 2019, Sec. 5): a sort of the marginals (Spearman) on the
        permutahedron, a linear assignment (Hamming on permutation
        matrices) on the Birkhoff polytope.
    random_state : int, RandomState or None
        Shuffling of the stochastic solvers.
    n_jobs : int, default=None
        Threads for the inference oracles.
    verbose : int, default=0
    warm_start : bool, default=False
        Start from the previous solution when refitting.
    l1_ratio : float in [0, 1], default=0.0
        Share of the L1 penalty (elastic net, as in scikit-learn; 0: the L2
        model).  ``l1_ratio > 0`` needs a smooth loss and is trained by
        OWL-QN (``solver='auto'`` or ``'owlqn'``,
        :func:`structlearn.solvers.owlqn`); ``n_nonzero_`` counts the
        non-zero weights.

    Attributes
    ----------
    coef_ : ndarray of shape (n_parts, n_features)
    intercept_ : ndarray of shape (n_parts,)
    n_labels_ : int
    structure_ : Permutahedron or Birkhoff
    loss_ : Loss
    n_iter_ : int
    objective_ : float
        Final regularised objective.
    duality_gap_ : float or None
        Relative duality gap at the stop ('bcfw', 'cutting-plane', and
        'lbfgs' with ``fit_intercept=False``: its certificate needs every
        coordinate penalised, and the intercept is not); None otherwise.
    """

    def __init__(self, polytope="permutahedron", loss="projection", alpha=1e-3,
                 fit_intercept=True, solver="auto", max_iter=None, tol=None,
                 decoding="calibrated", random_state=None, n_jobs=None, verbose=0,
                 warm_start=False, l1_ratio=0.0):
        super().__init__(loss=loss, alpha=alpha, fit_intercept=fit_intercept,
                         solver=solver, max_iter=max_iter, tol=tol, decoding=decoding,
                         random_state=random_state, n_jobs=n_jobs, verbose=verbose,
                         warm_start=warm_start)
        self.l1_ratio = l1_ratio
        self.polytope = polytope

    def _prepare_targets(self, y, n_samples):
        if self.polytope not in ("permutahedron", "birkhoff"):
            raise ValueError(f"polytope must be 'permutahedron' or 'birkhoff', "
                             f"got {self.polytope!r}.")
        Y = check_rank_matrix(y, "y", n_samples)
        k = Y.shape[1]
        st = Permutahedron(k) if self.polytope == "permutahedron" else Birkhoff(k)
        return Y, st, {"n_labels_": k}

    def _labels_to_output(self, labels):
        return labels

    def _vertices_to_labels(self, V):
        return list(self.structure_.decode(V))

    def predict_marginals(self, X):
        """Marginals of the loss; (n, k, k) label x rank matrices on Birkhoff."""
        mu = super().predict_marginals(X)
        if self.polytope == "birkhoff":
            return mu.reshape(len(mu), self.n_labels_, self.n_labels_)
        return mu

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.single_output = False
        tags.target_tags.multi_output = True
        return tags

    def score(self, X, y, sample_weight=None):
        """Mean Kendall's tau between predicted and true rank vectors."""
        from ..metrics import kendall_tau
        pred = self.predict(X)
        Y = check_rank_matrix(y, "y", n_samples=len(pred))
        if Y.shape[1] != self.n_labels_:
            raise ValueError(f"y has {Y.shape[1]} labels (columns) but the model was fitted "
                             f"on {self.n_labels_} (n_labels_).")
        return float(kendall_tau(Y, pred, sample_weight=sample_weight))
