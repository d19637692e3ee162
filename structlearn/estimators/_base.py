"""Shared machinery of the linear structured estimators."""

import hashlib
import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import check_matrix, check_sample_weight, check_solution, interruptible
from ..feature_selection import ArrayRestrictor, SelectionProblem
from ..losses import Perceptron, get_loss
from ..solvers import (LinearProblem, bcfw, blas_threads, cutting_plane, lbfgs, owlqn, sgd,
                       sgd_warm_up)
from ..solvers._problem import _scores

SOLVERS = ("auto", "lbfgs", "sgd", "bcfw", "cutting-plane", "owlqn")
DECODINGS = ("map", "calibrated")
#: ``tol=None`` means: L-BFGS projected-gradient tolerance 1e-5; SGD relative
#: objective improvement 1e-4 (3 epochs of patience); BCFW relative duality
#: gap 1e-3; cutting-plane relative duality gap 1e-4; OWL-QN as L-BFGS (its
#: pseudo-gradient).
DEFAULT_TOL = {"lbfgs": 1e-5, "sgd": 1e-4, "bcfw": 1e-3, "cutting-plane": 1e-4,
               "owlqn": 1e-5}
#: ``max_iter=None`` means: L-BFGS iterations, SGD / BCFW epochs,
#: cutting-plane iterations, OWL-QN iterations.
DEFAULT_MAX_ITER = {"lbfgs": 500, "sgd": 50, "bcfw": 200, "cutting-plane": 300,
                    "owlqn": 500}
#: With ``solver='auto'``, L-BFGS on at least this many examples starts
#: from the estimator's ``_lbfgs_warm_up`` stochastic passes
#: (:func:`structlearn.solvers.sgd_warm_up`) instead of zeros.
WARM_UP_MIN_SAMPLES = 5000


def choose_solver(solver, loss, alpha, l1_ratio=0.0):
    """The solver an estimator runs for ``solver`` (which may be 'auto'),
    ``loss`` and ``l1_ratio``; a ValueError for a combination that cannot
    work.

    With an L1 penalty (``l1_ratio > 0``) only OWL-QN applies, and only to
    smooth losses (:func:`structlearn.solvers.owlqn`).

    'auto': L-BFGS for smooth losses, SGD otherwise (the averaged
    perceptron for the perceptron loss) -- before an estimator that knows
    its data may prefer BCFW (``StructuredLinearModel._dual_when_auto``).
    For the max-margin losses BCFW,
    which certifies its solution, is not the default: on CoNLL-2000 (``alpha
    = 2 / n``) it needs about 60 epochs, 0.8 times the CRF's L-BFGS fit on
    one thread, where 10 SGD epochs take a fifth of that and end within 0.1
    F1 of it.  For the SparseMAP losses on chains it certifies 1e-3 in 15
    epochs, about half the CRF's fit time, where L-BFGS takes four times the
    CRF's (docs/benchmarks.rst).
    """
    perceptron = loss.perceptron_update
    if l1_ratio > 0 or solver == "owlqn":
        return _choose_l1_solver(solver, loss, l1_ratio)
    if solver == "auto":
        solver = "lbfgs" if loss.smooth else "sgd"
    if solver == "lbfgs" and not loss.smooth:
        raise ValueError(
            f"solver='lbfgs' needs a smooth loss; {loss} is not smooth. "
            f"Use solver='sgd', 'bcfw' or 'auto'.")
    if solver in ("lbfgs", "cutting-plane", "bcfw") and perceptron:
        raise ValueError(f"the perceptron loss is trained by the averaged perceptron "
                         f"(solver='sgd' or 'auto'), not solver={solver!r}: with an L2 "
                         f"penalty its minimiser is 0.")
    if solver == "bcfw" and not (loss.piecewise_affine or loss.dual_quadratic):
        raise ValueError(
            f"solver='bcfw' trains the max-margin losses ('hinge', 'hinge-slack', "
            f"'hinge-approx-slack', 'poslearn'), the SparseMAP losses ('sparsemap', "
            f"'m-sparsemap') and the Euclidean projection losses; {loss} is none of "
            f"them. Use solver='lbfgs' (smooth losses) or 'auto'.")
    if solver in ("cutting-plane", "bcfw") and alpha <= 0:
        raise ValueError(f"solver={solver!r} needs alpha > 0.")
    return solver


#: the losses OWL-QN trains (the smooth ones)
SMOOTH_LOSSES = "'crf', 'sparsemap', 'm-sparsemap', 'projection', 'squared'"


def _choose_l1_solver(solver, loss, l1_ratio):
    """:func:`choose_solver` with an L1 penalty or ``solver='owlqn'``."""
    if solver not in ("auto", "owlqn"):
        raise ValueError(
            f"l1_ratio={l1_ratio!r} (an L1 penalty) is trained by solver='owlqn' (or "
            f"'auto'), not solver={solver!r}.")
    if not loss.smooth:
        raise ValueError(
            f"{'l1_ratio > 0' if l1_ratio > 0 else 'solver=' + repr(solver)} needs a smooth "
            f"loss (OWL-QN); {loss} is not smooth. Use one of {SMOOTH_LOSSES}.")
    return "owlqn"


def check_l1_ratio(l1_ratio):
    """``l1_ratio`` as a float in [0, 1], or a ValueError naming it."""
    if isinstance(l1_ratio, bool) or not isinstance(l1_ratio, numbers.Real) \
            or not 0.0 <= l1_ratio <= 1.0:
        raise ValueError(f"l1_ratio must be a number in [0, 1], got {l1_ratio!r}.")
    return float(l1_ratio)


#: Estimator parameters that leave BCFW's dual iterate feasible when changed.
_DUAL_FREE_PARAMS = ("alpha", "tol", "max_iter", "verbose", "n_jobs", "warm_start",
                     "random_state", "decoding", "solver")


def dual_key(estimator, loss, targets):
    """What BCFW's dual iterate depends on: the loss, the targets and
    (conservatively) every estimator parameter but those of
    ``_DUAL_FREE_PARAMS``, e.g. the output structure's options."""
    params = {k: v for k, v in estimator.get_params(deep=False).items()
              if k not in _DUAL_FREE_PARAMS and k != "loss"}
    h = hashlib.sha1(repr((type(loss).__name__, sorted(loss.get_params().items()),
                           sorted(params.items()))).encode())
    for a in targets:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


class StructuredLinearModel(BaseEstimator):
    """Linear model ``theta = W x + b`` over a structure's parts.

    Subclasses provide the structure and the target conversions:
    ``_prepare_targets(y) -> (y_internal, structure, extra_attributes)`` and
    ``_labels_to_output(labels)``.
    """

    #: the kinds of quadratic dual (``loss.dual_quadratic``: 'unary' for
    #: SparseMAP and m-SparseMAP, 'all' for the Euclidean projections) that
    #: ``solver='auto'`` trains by BCFW rather than L-BFGS (see
    #: :func:`choose_solver`); set by the estimators whose benchmarks
    #: support it
    _auto_dual = ()

    _default_loss = "projection"
    #: L-BFGS stopping rule: None = projected gradient below ``tol``; an
    #: integer = relative objective decrease over that many iterations.
    _lbfgs_period = None
    _lbfgs_history = 10
    #: SGD passes before ``solver='auto'``'s L-BFGS on large problems (see
    #: :meth:`_initial_point`); 0: none.  Set where it was measured to pay
    #: (the taggers: docs/benchmarks.rst, *A stochastic warm-up for L-BFGS*)
    _lbfgs_warm_up = 0

    def __init__(self, loss="projection", alpha=1e-3, fit_intercept=True,
                 solver="auto", max_iter=None, tol=None, decoding="calibrated",
                 random_state=None, n_jobs=None, verbose=0, warm_start=False):
        self.loss = loss
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.decoding = decoding
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.warm_start = warm_start

    #: the penalties ``alpha='auto'`` chooses from (strongest first) and the
    #: number of its cross-validation folds
    _auto_alphas = tuple(10.0 ** np.arange(1, -7, -1))
    _auto_folds = 3

    # ------------------------------------------------------- alpha='auto'
    def _fit_auto_alpha(self, X, y, sample_weight=None):
        """``fit`` with ``alpha='auto'``: the penalty picked by internal
        cross-validation, then the model refitted on all of (X, y).

        With ``sample_weight`` every fold trains with its examples' weights
        and is scored with the held-out examples' weights (the estimator's
        ``score(..., sample_weight=...)``).

        For every fold (``_auto_folds``, shuffled with ``random_state``;
        stratified by class where every class has enough samples) the
        regularisation path runs from the strongest penalty of
        ``_auto_alphas`` to the weakest, each fit warm-started from the
        previous one (where the estimator has ``warm_start``), and is scored on the held-out part by the
        estimator's own ``score``.  The penalty with the best mean score
        (the strongest among ties) becomes ``alpha_``; ``cv_alphas_`` and
        ``cv_scores_`` (n_alphas, n_folds) record the path.  The estimator
        is changed only when everything succeeded.
        """
        from sklearn.base import clone
        from sklearn.model_selection import KFold, StratifiedKFold
        from sklearn.utils import check_random_state
        from sklearn.utils import _safe_indexing

        n = len(X) if not hasattr(X, "shape") else X.shape[0]
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                             f"target y is None.")
        if n < 2 * self._auto_folds:
            raise ValueError(f"alpha='auto' cross-validates over {self._auto_folds} folds "
                             f"and needs at least {2 * self._auto_folds} samples; got {n}.")
        if sample_weight is not None:
            check_sample_weight(sample_weight, n)   # (the error before the folds')
            sample_weight = np.asarray(sample_weight)
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        strata = self._auto_strata(y)
        if strata is not None and np.bincount(strata).min() >= self._auto_folds:
            splits = StratifiedKFold(self._auto_folds, shuffle=True,
                                     random_state=seed).split(np.zeros(n), strata)
        else:
            splits = KFold(self._auto_folds, shuffle=True, random_state=seed).split(
                np.zeros(n))
        alphas = np.asarray(self._auto_alphas, dtype=np.float64)
        scores = np.empty((len(alphas), self._auto_folds))
        for f, (tr, va) in enumerate(splits):
            est = clone(self).set_params(alpha=float(alphas[0]), verbose=0)
            if "warm_start" in est.get_params(deep=False):   # (not every estimator has it)
                est.set_params(warm_start=True)
            Xtr, ytr = _safe_indexing(X, tr), _safe_indexing(y, tr)
            Xva, yva = _safe_indexing(X, va), _safe_indexing(y, va)
            fit_w = {} if sample_weight is None else {"sample_weight": sample_weight[tr]}
            score_w = {} if sample_weight is None else {"sample_weight": sample_weight[va]}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                for i, a in enumerate(alphas):
                    est.set_params(alpha=float(a)).fit(Xtr, ytr, **fit_w)
                    scores[i, f] = est.score(Xva, yva, **score_w)
            if self.verbose:
                print(f"[{type(self).__name__}] alpha='auto': fold {f + 1}/"
                      f"{self._auto_folds} scores " +
                      " ".join(f"{a:.0e}:{v:.4g}" for a, v in zip(alphas, scores[:, f])))
        best = float(alphas[int(np.argmax(scores.mean(axis=1)))])
        final = clone(self).set_params(alpha=best).fit(X, y, sample_weight=sample_weight)
        # everything succeeded: only now replace the fitted state (the
        # parameters, alpha='auto' included, stay as they are)
        params = self.get_params(deep=False)
        for key in [k for k in vars(self) if k.endswith("_") and k not in vars(final)]:
            delattr(self, key)        # fitted attributes of an earlier fit
        for key, value in vars(final).items():
            if key not in params:     # (what else the caller set, e.g. a
                setattr(self, key, value)   # pipeline's callback context, stays)
        self.alpha_ = best
        self.cv_alphas_ = alphas
        self.cv_scores_ = scores
        return self

    def _fit_weights(self, sample_weight, y, n_samples):
        """The example weights of a fit: ``sample_weight`` checked
        (:func:`structlearn._validation.check_sample_weight`: a ValueError
        for a wrong length, negative, NaN or infinite weights, or all
        zeros), times the class weights where the estimator has
        ``class_weight``; None for None."""
        return check_sample_weight(sample_weight, n_samples)

    @staticmethod
    def _kept_weights(w, keep):
        """The weights of the non-empty sequences ``keep`` (an empty one has
        no loss); a ValueError when they are all 0."""
        if w is None:
            return None
        w = w[keep]
        if not w.sum() > 0:
            raise ValueError("sample_weight is 0 for every non-empty sequence: nothing to "
                             "learn from.")
        return w

    def _auto_strata(self, y):
        """Class codes to stratify ``alpha='auto'``'s folds by, or None."""
        return None

    # ------------------------------------------------------------ validation
    def _check_alpha(self):
        """``alpha`` is a non-negative finite number or 'auto'; whether 'auto'."""
        if isinstance(self.alpha, str) and self.alpha == "auto":
            return True
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, numbers.Real) \
                or not np.isfinite(self.alpha) or self.alpha < 0:
            raise ValueError(f"alpha must be a non-negative finite number or 'auto', got "
                             f"{self.alpha!r}.")
        return False

    #: An estimator whose ``fit_intercept`` accepts 'auto' defines
    #: ``_auto_intercept(self, loss)``, what 'auto' means for it with ``loss``.
    _auto_intercept = None

    def _intercept(self, loss):
        """Whether the model trained with ``loss`` has an intercept:
        ``fit_intercept``, checked (and 'auto' resolved, where the estimator
        accepts it)."""
        fi = self.fit_intercept
        if self._auto_intercept is not None and isinstance(fi, str) and fi == "auto":
            return self._auto_intercept(loss)
        if not isinstance(fi, (bool, np.bool_)):
            also = "" if self._auto_intercept is None else ", or 'auto'"
            raise ValueError(f"fit_intercept must be True or False{also}, got {fi!r}.")
        return bool(fi)

    def _check_params(self, loss):
        self._check_alpha()
        self._intercept(loss)
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}.")
        if self.decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {DECODINGS}, got {self.decoding!r}.")
        if self.max_iter is not None and (
                not isinstance(self.max_iter, numbers.Integral) or self.max_iter < 1):
            raise ValueError(f"max_iter must be a positive integer or None, got {self.max_iter!r}.")
        if self.tol is not None and (not isinstance(self.tol, numbers.Real)
                                     or not self.tol >= 0):
            raise ValueError(f"tol must be a non-negative number or None, got {self.tol!r}.")
        # l1_ratio: a parameter of the estimators that declare it
        l1_ratio = check_l1_ratio(getattr(self, "l1_ratio", 0.0))
        return choose_solver(self.solver, loss, self.alpha, l1_ratio)

    def _dual_when_auto(self, solver, loss, n_samples):
        """``solver`` (as chosen by :meth:`_check_params`), or 'bcfw' where
        ``solver='auto'`` prefers it: a loss whose ``dual_quadratic`` is in
        the estimator's ``_auto_dual``, and ``alpha * n_samples >= 1`` (on
        CoNLL-2000 and 2,000 EWT parsing sentences at ``alpha * n = 2``
        SparseMAP by BCFW took 0.47x and 0.91x the CRF's L-BFGS fit, by
        L-BFGS 4x; at ``alpha * n = 0.2`` the parser's gap was still 3e-2
        after 95 epochs, docs/benchmarks.rst)."""
        if self.solver == "auto" and loss.dual_quadratic is not None \
                and not getattr(self, "l1_ratio", 0.0) > 0 \
                and loss.dual_quadratic in self._auto_dual \
                and float(self.alpha) * n_samples >= 1.0:
            return "bcfw"
        return solver

    def _validate_X(self, X, reset):
        """Checked X (:func:`structlearn._validation.check_matrix`); records
        (``reset``) or checks the number and names of the features.

        The names are read from the input as given (a DataFrame's columns),
        before the conversion to an array drops them: scikit-learn then
        raises on renamed or reordered columns, and warns when names appear
        or disappear between fit and predict."""
        checked = check_matrix(X)
        validate_data(self, X, reset=reset, skip_check_array=True)
        return checked

    # ------------------------------------------------------------------- fit
    @interruptible
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : targets, see the class docstring.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative example weights ``w_i``: the objective is ``sum_i
            w_i loss_i / sum_i w_i + alpha/2 ||W||^2`` (None: every weight
            1, the mean loss).  Integer weights give the model of the
            examples repeated that many times, a weight 0 that of the data
            without the example, and scaling all weights changes nothing.

        Returns
        -------
        self
        """
        if self._check_alpha():
            return self._fit_auto_alpha(X, y, sample_weight)
        t_start = time.perf_counter()
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                             f"target y is None.")
        X_given, X = X, check_matrix(X)
        loss = get_loss(self.loss)
        y_int, structure, extra = self._prepare_targets(y, n_samples=X.shape[0])
        loss.check(structure)
        solver = self._check_params(loss)
        sw = self._fit_weights(sample_weight, y, X.shape[0])
        tie = self._weight_tying(structure)
        # Everything is validated: only now touch the estimator's state.
        p, d = structure.n_parts, X.shape[1]
        q = p if tie is None else tie.shape[1]
        warm = (self.warm_start and hasattr(self, "coef_")
                and self.coef_.shape == (q, d) and self.intercept_.shape == (p,))
        problem = LinearProblem(X, y_int, structure, loss, q, self._intercept(loss),
                                tie=tie, n_jobs=self.n_jobs, sample_weight=sw)
        if warm:
            z0 = problem.pack(self.coef_, self.intercept_)
        else:
            z0 = np.zeros(problem.n_params)
        with blas_threads(self.n_jobs):
            z, n_iter, obj = self._run_solver(solver, problem, z0, loss, (y_int,))
        check_solution(z, obj, type(self).__name__)
        W, b = problem.unpack(z)
        validate_data(self, X_given, reset=True, skip_check_array=True)
        self.coef_ = W.copy()
        self.intercept_ = b.copy() if self._intercept(loss) else np.zeros(p)
        self.weight_tying_ = tie
        self.structure_ = structure
        for key, value in extra.items():
            setattr(self, key, value)
        self._record_fit(loss, solver, n_iter, obj, t_start)
        return self

    def selection_problem(self, X, y, loss=None):
        """The training problem on (X, y) with the input column of every
        weight: the hook of feature selection.

        :class:`~structlearn.feature_selection.GroupLassoSelector` calls it
        on a clone of its estimator and reads nothing else of it.  For
        array input every column is its own template, the weights of a
        column (one per part, or per tied part) belong to it, and the
        intercepts to none.  Like :meth:`fit`, it validates the input and
        records what ``fit`` records of it (``n_features_in_``,
        ``feature_names_in_``); it trains nothing.

        Parameters
        ----------
        X, y
            Training data, as for :meth:`fit`.
        loss : str, Loss or None, default=None
            The loss of the problem (:func:`structlearn.losses.get_loss`);
            None: the estimator's ``loss``.

        Returns
        -------
        SelectionProblem
            The :class:`~structlearn.feature_selection.SelectionProblem`
            (its ``restrictor`` keeps the selected columns of an array).
        """
        loss = get_loss(self.loss if loss is None else loss)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                             f"target y is None.")
        X = self._validate_X(X, reset=True)
        y_int, structure, _ = self._prepare_targets(y, n_samples=X.shape[0])
        loss.check(structure)
        tie = self._weight_tying(structure)
        q = structure.n_parts if tie is None else tie.shape[1]
        problem = LinearProblem(X, y_int, structure, loss, q, self._intercept(loss),
                                tie=tie, n_jobs=self.n_jobs)
        d = X.shape[1]
        param_column = np.concatenate([np.tile(np.arange(d), q),
                                       np.full(problem.n_params - q * d, -1)])
        names = [str(n) for n in getattr(self, "feature_names_in_",
                                         [f"x{j}" for j in range(d)])]
        return SelectionProblem(problem, param_column, d, np.arange(d), names,
                                ArrayRestrictor(d), column_names=lambda: list(names))

    def _initial_point(self, problem, loss, structure_cls, previous, with_loss, solver):
        """Starting weights of a solver run (``solver='bcfw'`` starts from
        its dual iterate instead: zeros).

        The previous solution with ``warm_start`` (when its size still
        fits); for losses that run the SparseMAP active set on every sample,
        one averaged-perceptron epoch -- the active set is slowest at
        near-zero scores, whose solutions are near-uniform mixtures of many
        structures, and the objective is convex, so only the time changes;
        with ``solver='auto'`` resolved to L-BFGS on a large problem (at
        least ``WARM_UP_MIN_SAMPLES`` examples, complete targets, ``alpha >
        0``), the estimator's ``_lbfgs_warm_up`` stochastic passes (the same
        argument: a convex objective, so the optimum is the same and L-BFGS
        gets there in fewer iterations, see
        :func:`~structlearn.solvers.sgd_warm_up`);
        zeros otherwise.  ``with_loss(loss)`` builds the same problem with
        another loss.
        """
        if solver == "bcfw":
            return np.zeros(problem.n_params)
        if previous is not None and len(previous) == problem.n_params:
            return np.array(previous, dtype=np.float64)
        if loss.uses_active_set(structure_cls):
            z0, _, _ = sgd(with_loss(Perceptron()), 0.0, np.zeros(problem.n_params),
                           max_iter=1, random_state=self.random_state, perceptron=True)
            return z0
        if (self._lbfgs_warm_up and solver == "lbfgs" and self.solver == "auto"
                and float(self.alpha) > 0 and problem.n_samples >= WARM_UP_MIN_SAMPLES
                and not problem.partial):
            return sgd_warm_up(problem, float(self.alpha), np.zeros(problem.n_params),
                               epochs=self._lbfgs_warm_up, random_state=self.random_state,
                               verbose=self.verbose)
        return np.zeros(problem.n_params)

    def _record_fit(self, loss, solver, n_iter, obj, t_start):
        """Set the fit summary attributes (and report it with ``verbose``):
        ``duality_gap_`` is the relative duality gap at the stop for the
        solvers with a certificate ('bcfw', 'cutting-plane', and 'lbfgs'
        where every coordinate is penalised: the parser, and the other
        estimators with ``fit_intercept=False``; 'owlqn' there too when
        ``l1_ratio < 1``: its strong-convexity bound), None otherwise;
        ``n_nonzero_`` the number of non-zero parameters."""
        self.loss_ = loss
        self.solver_ = solver
        self.n_iter_ = n_iter
        self.objective_ = obj
        self.duality_gap_ = self.__dict__.pop("_last_gap", None)
        self.n_nonzero_ = self.__dict__.pop("_last_nnz", None)
        state = self.__dict__.pop("_last_state", None)
        # the dual iterate is kept only where it will be used (it is as large
        # as the working sets of every example)
        if solver == "bcfw" and self.warm_start:
            self._dual_state = state
        else:
            self.__dict__.pop("_dual_state", None)
        if self.verbose:
            print(f"[{type(self).__name__}] fit with loss={loss}, solver={solver} in "
                  f"{time.perf_counter() - t_start:.2f}s, {self.n_nonzero_} non-zero "
                  f"weights")

    def _run_solver(self, solver, problem, z0, loss, targets=()):
        """Run the chosen solver on a training problem; ``(z, n_iter, objective)``.

        The relative duality gap of the solvers with a certificate is left
        in ``self._last_gap`` (None for the others) and BCFW's dual iterate
        in ``self._last_state``, for :meth:`_record_fit`.  ``targets`` (the
        arrays that define the training targets) key that dual iterate:
        ``warm_start`` reuses it only for the same targets and loss.
        """
        tol = self.tol if self.tol is not None else DEFAULT_TOL[solver]
        max_iter = DEFAULT_MAX_ITER[solver] if self.max_iter is None else self.max_iter
        alpha = float(self.alpha)
        self._last_gap = self._last_state = None
        z, n_iter, obj = self._solve(solver, problem, z0, loss, targets, tol, max_iter, alpha)
        self._last_nnz = int(np.count_nonzero(z))
        return z, n_iter, obj

    def _solve(self, solver, problem, z0, loss, targets, tol, max_iter, alpha):
        """:meth:`_run_solver` with its defaults resolved."""
        if solver == "owlqn":
            z, n_iter, obj, _, gap = owlqn(
                problem, alpha, z0, l1_ratio=float(getattr(self, "l1_ratio", 0.0)), tol=tol,
                verbose=self.verbose, max_iter=max_iter, period=self._lbfgs_period,
                history=loss.lbfgs_history or self._lbfgs_history)
            self._last_gap = gap
            return z, n_iter, obj
        if solver == "lbfgs":
            z, n_iter, obj, gap = lbfgs(problem, alpha, z0, tol=tol, verbose=self.verbose,
                                        max_iter=max_iter, period=self._lbfgs_period,
                                        history=loss.lbfgs_history or self._lbfgs_history,
                                        return_gap=True)
            self._last_gap = gap
            return z, n_iter, obj
        if solver == "cutting-plane":
            z, n_iter, obj, gap = cutting_plane(problem, alpha, z0, tol=tol,
                                                verbose=self.verbose, max_iter=max_iter,
                                                return_gap=True)
            self._last_gap = gap
            return z, n_iter, obj
        if solver == "bcfw":
            key = dual_key(self, loss, targets)
            previous = getattr(self, "_dual_state", None) if self.warm_start else None
            z, n_iter, obj, gap, state = bcfw(
                problem, alpha, max_iter=max_iter, tol=tol, verbose=self.verbose,
                random_state=self.random_state, state=previous, key=key)
            self._last_gap, self._last_state = gap, state
            return z, n_iter, obj
        return sgd(problem, alpha, z0, tol=tol, verbose=self.verbose,
                   max_iter=max_iter, random_state=self.random_state,
                   perceptron=loss.perceptron_update)

    # ---------------------------------------------------------------- predict
    def decision_function(self, X):
        """Part scores ``theta = W x + b``, shape (n_samples, n_parts)."""
        return self._part_scores(X)

    def _part_scores(self, X):
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        with blas_threads(self.n_jobs):
            return _scores(X, self.coef_, self.intercept_, self.weight_tying_)

    def _weight_tying(self, structure):
        """Map (n_parts, n_weight_rows) sharing weight rows among parts, or None."""
        return None

    def _predict_labels(self, X):
        theta = self._part_scores(X)
        if self.decoding == "map":
            return self.structure_.argmax(theta)
        return self.structure_.calibrated_decode(self.loss_.mean(theta, self.structure_))

    @interruptible
    def predict(self, X):
        """Predict structured outputs (MAP or calibrated decoding)."""
        return self._labels_to_output(self._predict_labels(X))

    def predict_marginals(self, X):
        """The loss's prediction map ``grad Omega*(theta)`` per sample.

        CRF marginals, SparseMAP marginals, projections, the MAP vertex
        (perceptron and hinge losses) or ``theta`` (squared loss).
        """
        theta = self._part_scores(X)  # checks fitted first
        return self.loss_.mean(theta, self.structure_)

    def predict_sparse(self, X):
        """SparseMAP distribution over structures for each sample.

        Returns
        -------
        list of list of (output, weight)
            For each sample, the structures in the SparseMAP support with
            their probabilities (sum to one).
        """
        theta = self._part_scores(X)
        _, V, w, off = self.structure_.sparsemap_supports(theta)
        labels = self._vertices_to_labels(V)
        w = w.tolist()
        return [list(zip(labels[a:b], w[a:b])) for a, b in zip(off[:-1], off[1:])]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
