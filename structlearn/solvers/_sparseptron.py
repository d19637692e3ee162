"""Online proximal gradient with budget-driven group shrinkage: the sparseptron.

:func:`online_prox_grad` is Algorithm 1 of Martins, Smith, Aguiar &
Figueiredo (2011, "Structured Sparsity in Structured Prediction") on any
training problem; :func:`soft_threshold` and :func:`group_soft_threshold`
are the closed-form proximity operators it applies (their Eq. 13 and 14).
The group structure comes as arrays (atoms and layers of groups, see
:func:`online_prox_grad`); what the groups *mean* -- templates, features,
input columns -- is the caller's business
(:class:`~structlearn.feature_selection.GroupLassoSelector`).
"""

import numbers
import time

import numpy as np
from sklearn.utils import check_random_state

from ..kernels.selection import (
    atom_fold,
    atom_gather,
    atom_step,
    stream_compact,
    stream_index,
    stream_sq_norms,
)

__all__ = ["HashedAtomWeights", "group_soft_threshold", "online_prox_grad",
           "online_prox_grad_streamed", "soft_threshold"]


# ------------------------------------------------------------ prox operators
def soft_threshold(theta, tau):
    """Proximity operator of ``tau ||theta||_1`` (Martins et al. 2011, Eq. 13).

    Parameters
    ----------
    theta : array-like of float
    tau : float
        Threshold (``>= 0``).

    Returns
    -------
    ndarray
        ``sign(theta) max(|theta| - tau, 0)``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    return np.sign(theta) * np.maximum(np.abs(theta) - tau, 0.0)


def group_soft_threshold(theta, groups, tau, weights=None):
    """Proximity operator of ``tau sum_m d_m ||theta_m||_2`` (Martins et al.
    2011, Eq. 14).

    A group whose norm is at most ``tau d_m`` is zeroed, the others are
    scaled so that their norm decreases by ``tau d_m``.

    Parameters
    ----------
    theta : array-like of float (n,)
    groups : array-like of int (n,)
        Group of every coordinate; -1: not penalised.
    tau : float
        Threshold (``>= 0``).
    weights : array-like of float (n_groups,) or None
        The group weights ``d_m`` (default 1).

    Returns
    -------
    ndarray (n,)
    """
    theta = np.asarray(theta, dtype=np.float64)
    groups = np.asarray(groups, dtype=np.int64)
    mask = groups >= 0
    n_groups = int(groups.max(initial=-1)) + 1
    d = np.ones(n_groups) if weights is None else np.asarray(weights, dtype=np.float64)
    norms = np.sqrt(np.bincount(groups[mask], weights=theta[mask] ** 2, minlength=n_groups))
    factor = np.zeros(n_groups)
    alive = norms > tau * d
    factor[alive] = 1.0 - tau * d[alive] / norms[alive]
    out = theta.copy()
    out[mask] *= factor[groups[mask]]
    return out


# -------------------------------------------------------- the lazy weights
class _AtomWeights:
    """Weights ``theta_p = c_a xi_p`` for the atom ``a`` of ``p`` (Sec. 4's
    ``(xi_m, c_m, rho_m)`` representation, ``rho = c^2 ||xi||^2``);
    parameters of no atom (``atom_of < 0``) are stored as they are."""

    def __init__(self, atom_of, n_atoms):
        self.atom_of = np.ascontiguousarray(atom_of, dtype=np.int64)
        self.n_atoms = int(n_atoms)
        self.xi = np.zeros(len(self.atom_of))
        self.scale = np.ones(self.n_atoms)
        self.sq = np.zeros(self.n_atoms)
        in_atom = np.flatnonzero(self.atom_of >= 0)
        order = np.argsort(self.atom_of[in_atom], kind="stable")
        self.members = in_atom[order]
        self.members_ptr = np.zeros(self.n_atoms + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.atom_of[in_atom], minlength=self.n_atoms),
                  out=self.members_ptr[1:])

    def step(self, cols, vals, eta):
        return atom_step(self.xi, self.atom_of, self.scale, self.sq, self.members_ptr,
                          self.members, np.asarray(cols, dtype=np.int64),
                          np.asarray(vals, dtype=np.float64), float(eta))

    def gather(self, params, out):
        atom_gather(self.xi, self.atom_of, self.scale, np.asarray(params, dtype=np.int64), out)

    def theta(self):
        out = self.xi.copy()
        m = self.atom_of >= 0
        out[m] *= self.scale[self.atom_of[m]]
        return out

    def norms(self):
        """``||theta_a||`` of every atom."""
        return np.abs(self.scale) * np.sqrt(np.maximum(self.sq, 0.0))

    def scale_atoms(self, factors):
        """Multiply atom ``a`` by ``factors[a]`` (0 deletes it)."""
        self.scale *= factors
        atom_fold(self.xi, self.scale, self.sq, self.members_ptr, self.members, 1e-8)

    def refresh_norms(self):
        """Recompute ``||xi_a||^2`` exactly (rounding drift of the updates)."""
        m = self.atom_of >= 0
        self.sq = np.bincount(self.atom_of[m], weights=self.xi[m] ** 2,
                              minlength=self.n_atoms)

    def n_nonzero(self):
        """Number of non-zero weights (the model's memory footprint)."""
        return int(np.count_nonzero(self.theta()))


class HashedAtomWeights:
    """Weights of features conjoined with ``n_labels`` labels, stored only
    for the features that got a non-zero update while their atom was
    alive: the streamed counterpart of the dense atom weights (same
    ``(xi, c, ||xi||^2)`` representation per atom, same methods for the
    proximal steps).

    Feature ``f`` (a 64-bit hash, the caller's) of atom ``a`` owns one row
    of ``W`` (its weights for every label), found through an
    open-addressing index; rows are created by the gradient steps
    (``kernels.selection.stream_step``) and the rows of a
    deleted atom are dropped right after the proximal step that deleted it,
    so the memory follows the live weights (the paper's Figure 2) rather
    than the number of features.  ``dense`` holds the ``n_dense``
    parameters of no atom (transitions, biases), never penalised.

    Parameters
    ----------
    n_labels, n_atoms, n_dense : int
    """

    #: initial number of rows
    MIN_ROWS = 1024

    def __init__(self, n_labels, n_atoms, n_dense):
        self.n_labels = int(n_labels)
        self.n_atoms = int(n_atoms)
        self.scale = np.ones(self.n_atoms)
        self.sq = np.zeros(self.n_atoms)
        self.dense = np.zeros(int(n_dense))
        self.n_rows = 0
        self._alloc(self.MIN_ROWS)

    def _alloc(self, cap):
        """Room for ``cap`` rows (keeping the current ones)."""
        W = np.zeros((cap, self.n_labels))
        row_fh = np.zeros(cap, dtype=np.int64)
        row_tmpl = np.zeros(cap, dtype=np.int64)
        n = self.n_rows
        if n:
            W[:n] = self.W[:n]
            row_fh[:n] = self.row_fh[:n]
            row_tmpl[:n] = self.row_tmpl[:n]
        self.W, self.row_fh, self.row_tmpl = W, row_fh, row_tmpl
        n_slots = 1 << int(np.ceil(np.log2(2 * cap)))   # load <= 1/2
        self.keys = np.full(n_slots, -1, dtype=np.int64)
        self.slot_row = np.zeros(n_slots, dtype=np.int64)
        stream_index(self.keys, self.slot_row, self.row_fh, n)

    def reserve(self, n_new):
        """Make room for ``n_new`` more rows (a gradient step creates at
        most one per feature entry of its example)."""
        need = self.n_rows + int(n_new)
        if need > len(self.row_fh):
            self._alloc(max(need, 2 * len(self.row_fh)))

    def norms(self):
        """``||theta_a||`` of every atom."""
        return np.abs(self.scale) * np.sqrt(np.maximum(self.sq, 0.0))

    def scale_atoms(self, factors):
        """Multiply atom ``a`` by ``factors[a]``; the rows of the atoms set to
        0 are dropped (and the storage shrunk when mostly empty)."""
        self.scale *= factors
        self.n_rows = stream_compact(self.W, self.row_fh, self.row_tmpl, self.n_rows,
                                     self.scale, self.sq, self.keys, self.slot_row, 1e-8)
        if len(self.row_fh) > self.MIN_ROWS and 4 * self.n_rows < len(self.row_fh):
            self._alloc(max(self.MIN_ROWS, 2 * self.n_rows))

    def refresh_norms(self):
        """Recompute ``||xi_a||^2`` exactly (rounding drift of the updates)."""
        self.sq = stream_sq_norms(self.W, self.row_tmpl, self.n_rows, self.n_atoms)

    def n_nonzero(self):
        """Number of non-zero weights (the model's memory footprint)."""
        # every stored row is of a live atom (:meth:`scale_atoms` drops the others)
        return int(np.count_nonzero(self.W[:self.n_rows])) + int(np.count_nonzero(self.dense))

    def rows(self):
        """``(feature hashes, atoms, theta)`` of the stored rows, ``theta``
        the (n_rows, n_labels) weights (scales applied)."""
        n = self.n_rows
        tmpl = self.row_tmpl[:n].copy()
        return self.row_fh[:n].copy(), tmpl, self.W[:n] * self.scale[tmpl][:, None]

    @property
    def nbytes(self):
        """Bytes of the storage (rows and index)."""
        return sum(a.nbytes for a in (self.W, self.row_fh, self.row_tmpl, self.keys,
                                      self.slot_row, self.scale, self.sq, self.dense))


class _Layer:
    """A set of non-overlapping groups of atoms with weights ``d`` and a
    budget (the number of groups a proximal step leaves non-zero)."""

    def __init__(self, atom_group, weights, budget):
        self.atom_group = np.asarray(atom_group, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.budget = int(budget)

    def group_norms(self, atom_norms):
        m = self.atom_group >= 0
        return np.sqrt(np.bincount(self.atom_group[m], weights=atom_norms[m] ** 2,
                                   minlength=len(self.weights)))

    def budget_prox(self, w):
        """Budget-driven shrinkage: if more than ``budget`` groups are
        non-zero, the proximal step (Eq. 14) whose threshold is the mean of
        the ``B``-th and ``(B+1)``-th values of ``||theta_m|| / d_m``.
        Returns the threshold (0: nothing to do)."""
        gn = self.group_norms(w.norms())
        ratio = gn / self.weights
        if np.count_nonzero(ratio) <= self.budget:
            return 0.0
        top = -np.partition(-ratio, [self.budget - 1, self.budget])
        tau = 0.5 * (top[self.budget - 1] + top[self.budget])
        factor = np.zeros(len(gn))
        alive = ratio > tau
        factor[alive] = 1.0 - tau * self.weights[alive] / gn[alive]
        f_atom = np.ones(w.n_atoms)
        m = self.atom_group >= 0
        f_atom[m] = factor[self.atom_group[m]]
        w.scale_atoms(f_atom)
        return tau


def _check_structure(problem, atom_of, layers):
    """The atoms and layers as ``(_AtomWeights, [_Layer])``, validated."""
    atom_of = np.asarray(atom_of)
    n_params = int(problem.n_params)
    if atom_of.shape != (n_params,) or (atom_of.size and atom_of.dtype.kind not in "iu"):
        raise ValueError(f"atom_of must be an integer array of one atom per parameter "
                         f"({n_params}), got shape {atom_of.shape} and dtype "
                         f"{atom_of.dtype}.")
    out = []
    n_atoms = None
    for k, layer in enumerate(layers):
        try:
            atom_group, weights, budget = layer
        except (TypeError, ValueError):
            raise ValueError(f"layers[{k}] must be a triple (atom_group, group_weights, "
                             f"budget), got {layer!r}.") from None
        if not isinstance(budget, numbers.Integral) or isinstance(budget, bool) or budget < 1:
            raise ValueError(f"layers[{k}]: the budget must be an integer >= 1, got "
                             f"{budget!r}.")
        layer = _Layer(atom_group, weights, budget)
        if layer.atom_group.ndim != 1 or layer.weights.ndim != 1:
            raise ValueError(f"layers[{k}]: atom_group and group_weights must be 1-D.")
        if n_atoms is None:
            n_atoms = len(layer.atom_group)
        elif len(layer.atom_group) != n_atoms:
            raise ValueError(f"layers[{k}] groups {len(layer.atom_group)} atoms, "
                             f"layers[0] {n_atoms}: every layer groups the same atoms.")
        if layer.atom_group.max(initial=-1) >= len(layer.weights):
            raise ValueError(f"layers[{k}]: atom_group names group "
                             f"{layer.atom_group.max()} but group_weights has "
                             f"{len(layer.weights)} entries.")
        if not np.all(np.isfinite(layer.weights)) or np.any(layer.weights <= 0):
            raise ValueError(f"layers[{k}]: group_weights must be positive and finite.")
        out.append(layer)
    if n_atoms is None:
        n_atoms = int(atom_of.max(initial=-1)) + 1
    if atom_of.size and atom_of.max() >= n_atoms:
        raise ValueError(f"atom_of names atom {atom_of.max()} but the layers group "
                         f"{n_atoms} atoms.")
    return _AtomWeights(atom_of, n_atoms), out


# ------------------------------------------------------------------ solver
def online_prox_grad(problem, atom_of, layers, n_epochs=5, K=1000, eta0=1.0,
                     random_state=None, verbose=0):
    """Online proximal gradient with budget-driven group shrinkage.

    Algorithm 1 of Martins, Smith, Aguiar & Figueiredo (2011, "Structured
    Sparsity in Structured Prediction") for

        min_z  sum_i loss_i(z) + sum_j Omega_j(z),
        Omega_j(z) = sum_m d_jm ||z_{G_jm}||_2,

    where every *layer* ``j`` is a set of non-overlapping groups ``G_jm``
    with weights ``d_jm`` whose regularisation constant is set by a
    *budget*.  One example at a time, in a random order per epoch: a
    (sub)gradient step of the problem's loss, and every ``K`` examples a
    proximal step (:func:`group_soft_threshold`) of each layer in sequence,
    whose threshold leaves at most ``budget`` of its groups non-zero
    (budget-driven shrinkage, Sec. 4).  With the perceptron loss this is
    the *sparseptron*.  One layer of singleton groups with unit weights is
    the L1 penalty (:func:`soft_threshold`); a layer of groups followed by
    one of singletons, the sparse group lasso; the overlapping groups of a
    coarse-to-fine order, split into non-overlapping layers, the paper's
    hierarchical penalty.

    With example weights (``problem.sample_weight``, mean 1) the loss is
    ``sum_i w_i loss_i(z)``: the problem's gradients are weighted, so each
    example's step is its weight times its loss's (sparseptron: weighted
    perceptron updates; a weight 0 moves nothing).  The streamed problems
    of :func:`online_prox_grad_streamed` take no weights.

    Choices where the paper is silent or ambiguous:

    * the threshold of a layer is the mean of the ``B``-th and
      ``(B+1)``-th largest values of ``||z_m|| / d_m`` (the quantity Eq. 14
      compares with the threshold), so that at most ``B`` groups survive;
    * a last proximal step runs after the final example, so the output
      respects the budgets whatever the number of examples;
    * step sizes ``eta_t = eta0 / epoch``; with the perceptron loss the
      output only scales with ``eta0`` (footnote 7);
    * a deleted group restarts from zero weights the next time one of its
      parameters gets a non-zero gradient (the "oscillation" of Figure 2).

    **Cost** (Sec. 4).  The groups are unions of *atoms*, non-overlapping
    sets of parameters (the groups themselves when a single layer is
    given); each atom is stored as ``z_a = c_a xi_a`` with ``||xi_a||^2``
    kept up to date, so a proximal step costs the number of atoms and
    touches no parameter.  A gradient step costs what the example touches
    when the problem is a :class:`SparseProblem` (``params_of`` /
    ``sparse_value_and_grad``), ``n_params`` with the dense
    ``value_and_grad`` of a plain :class:`Problem`.  The problem's
    ``penalized`` mask and ``sq_norms`` are not used: only the atoms are
    penalised.

    Parameters
    ----------
    problem : Problem
        The training problem; its ``value_and_grad(z, [i])`` (or sparse
        gradient) of one example is the loss step.
    atom_of : array-like of int (n_params,)
        Atom of every parameter; -1: the parameter is in no group (never
        penalised, e.g. transitions and biases).
    layers : sequence of (atom_group, group_weights, budget)
        ``atom_group`` (n_atoms,): the group of every atom in this layer
        (-1: in none of its groups); ``group_weights`` (n_groups,): the
        ``d_m > 0``; ``budget``: the number of groups the layer's proximal
        steps leave non-zero.  Every layer groups the same atoms.
    n_epochs : int, default=5
    K : int, default=1000
        Examples between proximal steps.
    eta0 : float, default=1.0
        Step size of the first epoch.
    random_state : int, RandomState or None
        Order of the examples.
    verbose : int, default=0

    Returns
    -------
    z : ndarray (n_params,)
    history : list of (t, n_nonzero, thresholds)
        After each proximal step: the examples seen, the non-zero
        parameters, and the threshold of each layer (0: it kept every group).
    """
    weights, layers = _check_structure(problem, atom_of, layers)
    n = problem.n_samples
    sparse = hasattr(problem, "sparse_value_and_grad") and hasattr(problem, "params_of")
    buf = np.zeros(problem.n_params)

    def step(i, eta):
        idx = np.array([i], dtype=np.int64)
        if sparse:
            weights.gather(problem.params_of(idx), buf)
            _, cols, vals = problem.sparse_value_and_grad(buf, idx, 1.0)
        else:
            _, g = problem.value_and_grad(weights.theta(), idx)
            cols = np.flatnonzero(g)
            vals = g[cols]
        return weights.step(cols, vals, eta)

    history = _run(weights, layers, rng_order(n, n_epochs, random_state), step, K,
                   eta0, verbose)
    return weights.theta(), history


def rng_order(n, n_epochs, random_state):
    """Per epoch, the order of the ``n`` examples (a random permutation)."""
    rng = check_random_state(random_state)
    for _ in range(n_epochs):
        yield rng.permutation(n)


def _run(weights, layers, orders, step, K, eta0, verbose):
    """The loop of Algorithm 1: ``step(i, eta)`` per example in each
    epoch's order, the layers' budget-driven proximal steps every ``K``
    examples and once at the end; returns the history."""
    history = []
    t = 0
    t0 = time.perf_counter()
    for epoch, order in enumerate(orders, start=1):
        eta = eta0 / epoch
        n_moves = 0
        for i in order:
            t += 1
            n_moves += step(i, eta)
            if t % K == 0:
                taus = [layer.budget_prox(weights) for layer in layers]
                history.append((t, weights.n_nonzero(), taus))
        weights.refresh_norms()
        if verbose:
            print(f"[sparseptron] epoch {epoch}: {n_moves} updates, "
                  f"{weights.n_nonzero()} non-zero weights "
                  f"({time.perf_counter() - t0:.1f}s)")
    taus = [layer.budget_prox(weights) for layer in layers]
    history.append((t, weights.n_nonzero(), taus))
    return history


def online_prox_grad_streamed(problem, layers, n_epochs=5, K=1000, eta0=1.0,
                              random_state=None, verbose=0):
    """:func:`~structlearn.solvers.online_prox_grad` on a problem whose features are extracted
    from the raw examples as the steps need them (a *streamed* problem,
    e.g. :class:`structlearn.feature_selection.StreamedChainProblem`):
    the weights are a
    :class:`~structlearn.solvers.HashedAtomWeights`, one atom per template,
    holding only the features that got a non-zero update while their
    template was alive.  The same algorithm, the same example order for
    the same ``random_state`` and the same choices (see
    :func:`online_prox_grad`).

    Parameters
    ----------
    problem : streamed problem
        Has ``n_samples``, ``n_atoms``, ``n_labels``, ``n_dense`` and
        ``steps(orders, weights)``, which yields, for every example of the
        orders in turn, a function ``step(eta)`` taking its gradient step
        (and returning whether any weight moved).
    layers : sequence of (atom_group, group_weights, budget)
        As for :func:`online_prox_grad`, over the problem's atoms.
    n_epochs, K, eta0, random_state, verbose
        As for :func:`online_prox_grad`.

    Returns
    -------
    weights : HashedAtomWeights
    history : list of (t, n_nonzero, thresholds)
    """
    _, layers = _check_structure(_Sized(problem.n_atoms), np.arange(problem.n_atoms),
                                 layers)
    weights = HashedAtomWeights(problem.n_labels, problem.n_atoms, problem.n_dense)
    n = problem.n_samples
    steps = problem.steps(rng_order(n, n_epochs, random_state), weights)
    orders = ([None] * n for _ in range(n_epochs))
    history = _run(weights, layers, orders, lambda _, eta: next(steps)(eta), K, eta0,
                   verbose)
    return weights, history


class _Sized:
    """A stand-in problem of ``n_params`` parameters (for the checks)."""

    def __init__(self, n_params):
        self.n_params = n_params
