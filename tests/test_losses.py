"""Losses: gradients by finite differences, Fenchel-Young properties, identities."""

import numpy as np
import pytest
from sklearn.base import clone

from structlearn.losses import (
    CRF,
    LOSSES,
    Hinge,
    Perceptron,
    PosLearn,
    Projection,
    SparseMAP,
    Squared,
    get_loss,
)
from structlearn.structures import (
    Birkhoff,
    IntractableError,
    Knapsack,
    OrderSimplex,
    Permutahedron,
    UnitCube,
)

STRUCTURES = {
    "cube": lambda: UnitCube(4),
    "knapsack": lambda: Knapsack(5, 1, 3),
    "order": lambda: OrderSimplex(5),
    "permutahedron": lambda: Permutahedron(4),
    "birkhoff": lambda: Birkhoff(3),
}


def random_labels(st, n, rng):
    if isinstance(st, OrderSimplex):
        return rng.randint(0, st.n_classes, size=n)
    if isinstance(st, (Permutahedron, Birkhoff)):
        return np.array([rng.permutation(st.n_labels) + 1 for _ in range(n)])
    y = np.zeros((n, st.n_labels), dtype=np.int64)
    for i in range(n):
        cnt = rng.randint(st.lower, st.upper + 1)
        y[i, rng.choice(st.n_labels, cnt, replace=False)] = 1
    return y


def smooth_losses(st):
    out = [CRF(), SparseMAP(), SparseMAP(margin=True), Projection(), Squared()]
    for set_, geoms in st.projection_sets.items():
        for g in geoms:
            out.append(Projection(set=set_, geometry=g))
    return out


def _applicable(loss, st):
    try:
        loss.check(st)
    except IntractableError:
        return False
    return True


def _fd_check(loss, st, theta, y, h=1e-6, rtol=1e-4, atol=1e-5):
    _, grad = loss.value_and_grad(theta, y, st)
    rng = np.random.RandomState(1)
    for _ in range(3):
        d = rng.randn(*theta.shape)
        fp, _ = loss.value_and_grad(theta + h * d, y, st)
        fm, _ = loss.value_and_grad(theta - h * d, y, st)
        fd = (fp - fm) / (2 * h)
        an = np.einsum("ij,ij->i", grad, d)
        np.testing.assert_allclose(an, fd, rtol=rtol, atol=atol,
                                   err_msg=f"{loss} on {st.name}")


@pytest.mark.parametrize("sname", list(STRUCTURES))
def test_smooth_loss_gradients_match_finite_differences(sname):
    st = STRUCTURES[sname]()
    rng = np.random.RandomState(0)
    theta = rng.randn(6, st.n_parts)
    y = random_labels(st, 6, rng)
    checked = 0
    for loss in smooth_losses(st):
        if not _applicable(loss, st):
            continue
        _fd_check(loss, st, theta, y)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("sname", list(STRUCTURES))
def test_nonsmooth_subgradients_match_directional_derivatives(sname):
    # Piecewise-linear losses are differentiable almost everywhere: at a
    # random point the subgradient is the gradient.
    st = STRUCTURES[sname]()
    rng = np.random.RandomState(2)
    theta = 3 * rng.randn(5, st.n_parts)
    y = random_labels(st, 5, rng)
    for loss in [Perceptron(), Hinge("margin"), Hinge("slack"), PosLearn()]:
        if not _applicable(loss, st):
            continue
        _fd_check(loss, st, theta, y, h=1e-7, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sname", list(STRUCTURES))
def test_losses_nonnegative_and_zero_when_confidently_right(sname):
    st = STRUCTURES[sname]()
    rng = np.random.RandomState(3)
    y = random_labels(st, 5, rng)
    phi = st.encode(y)
    confident = -10.0 * st.cost_vector(phi)  # points towards phi(y)
    theta_rand = rng.randn(5, st.n_parts)
    for name in LOSSES:
        loss = get_loss(name)
        if not _applicable(loss, st):
            continue
        val_rand, _ = loss.value_and_grad(theta_rand, y, st)
        assert np.all(val_rand >= -1e-9), name
        val, grad = loss.value_and_grad(confident, y, st)
        if name == "crf":
            assert np.all(val < 1e-3), name
        elif name == "squared":
            continue  # zero only at theta = phi(y)
        else:
            np.testing.assert_allclose(val, 0.0, atol=1e-8, err_msg=name)
    # the squared loss is zero exactly at theta = phi(y)
    val, _ = Squared().value_and_grad(phi, y, st)
    np.testing.assert_allclose(val, 0.0)


@pytest.mark.parametrize("sname", ["cube", "knapsack", "order", "permutahedron", "birkhoff"])
def test_sparsemap_equals_euclidean_projection_on_marginal_polytope(sname):
    # Blondel (2019): with all parts unary the SparseMAP loss is the
    # Euclidean projection loss onto the marginal polytope.
    st = STRUCTURES[sname]()
    rng = np.random.RandomState(4)
    theta = 2 * rng.randn(8, st.n_parts)
    y = random_labels(st, 8, rng)
    v1, g1 = SparseMAP().value_and_grad(theta, y, st)
    v2, g2 = Projection().value_and_grad(theta, y, st)
    np.testing.assert_allclose(v1, v2, atol=1e-6)
    np.testing.assert_allclose(g1, g2, atol=1e-6)


@pytest.mark.parametrize("sname", list(STRUCTURES))
def test_loss_orderings(sname):
    st = STRUCTURES[sname]()
    rng = np.random.RandomState(5)
    theta = rng.randn(20, st.n_parts)
    y = random_labels(st, 20, rng)
    perc, _ = Perceptron().value_and_grad(theta, y, st)
    hinge, _ = Hinge("margin").value_and_grad(theta, y, st)
    assert np.all(hinge >= perc - 1e-12)
    # smaller sets give smaller projection losses (Blondel 2019, Prop. 1)
    marg, _ = Projection().value_and_grad(theta, y, st)
    sq, _ = Squared().value_and_grad(theta, y, st)
    assert np.all(marg <= sq + 1e-9)
    if "cube" in st.projection_sets and st.marginal_set != "cube":
        cube, _ = Projection(set="cube").value_and_grad(theta, y, st)
        assert np.all(marg <= cube + 1e-9)
        assert np.all(cube <= sq + 1e-9)
    approx, _ = Hinge("approx-slack").value_and_grad(theta, y, st)
    pos, _ = PosLearn().value_and_grad(theta, y, st)
    if st.has_exact_slack:
        exact, _ = Hinge("slack").value_and_grad(theta, y, st)
        # approximate slack never exceeds the exact slack loss ...
        assert np.all(approx <= exact + 1e-9)
        # ... and PosLearn upper-bounds slack scaling (Sarawagi & Gupta, Claim 4.1)
        assert np.all(pos >= exact - 1e-9)
        # the approximation finds the exact violator on most samples
        assert np.mean(np.isclose(approx, exact)) >= 0.7


def test_m_sparsemap_is_sparsemap_of_cost_augmented_scores():
    st = Permutahedron(4)
    rng = np.random.RandomState(6)
    theta = rng.randn(5, 4)
    y = random_labels(st, 5, rng)
    aug = theta + st.cost_vector(st.encode(y))
    v1, g1 = SparseMAP(margin=True).value_and_grad(theta, y, st)
    v2, g2 = SparseMAP().value_and_grad(aug, y, st)
    np.testing.assert_allclose(v1, v2)
    np.testing.assert_allclose(g1, g2)
    # margin-SparseMAP upper-bounds SparseMAP
    v0, _ = SparseMAP().value_and_grad(theta, y, st)
    assert np.all(v1 >= v0 - 1e-9)


def test_crf_on_cube_is_independent_logistic_loss():
    st = UnitCube(3)
    rng = np.random.RandomState(7)
    theta = rng.randn(4, 3)
    y = random_labels(st, 4, rng)
    val, grad = CRF().value_and_grad(theta, y, st)
    expected = np.sum(np.logaddexp(0, theta) - theta * y, axis=1)
    np.testing.assert_allclose(val, expected)
    np.testing.assert_allclose(grad, 1 / (1 + np.exp(-theta)) - y)


def test_intractable_losses_raise_clear_errors():
    with pytest.raises(ValueError, match="crf"):
        CRF().check(Birkhoff(3))
    with pytest.raises(ValueError, match="approx-slack"):
        Hinge("slack").check(Permutahedron(3))
    with pytest.raises(ValueError, match="kl"):
        Projection(geometry="kl").check(Permutahedron(3))
    with pytest.raises(ValueError, match="valid sets"):
        Projection(set="simplex").check(UnitCube(3))
    with pytest.raises(ValueError, match="geometry"):
        Projection(geometry="manhattan").check(UnitCube(3))
    with pytest.raises(ValueError, match="scaling"):
        Hinge("quadratic").check(UnitCube(3))
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("logistic")


@pytest.mark.parametrize("kw, what", [
    ({"n_search": 0}, "n_search"), ({"n_search": 2.0}, "n_search"),
    ({"n_search": True}, "n_search"), ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1e-3}, "epsilon"), ({"epsilon": np.nan}, "epsilon"),
    ({"epsilon": np.inf}, "epsilon"), ({"epsilon": "1e-3"}, "epsilon"),
    ({"epsilon": True}, "epsilon")])
def test_approx_slack_rejects_bad_search_parameters(kw, what):
    with pytest.raises(ValueError, match=what):
        Hinge("approx-slack", **kw).check(UnitCube(3))
    Hinge("approx-slack", n_search=1, epsilon=1).check(UnitCube(3))   # fine
    Hinge("margin", **kw).check(UnitCube(3))   # not used by the other scalings


def test_loss_objects_have_params_for_grid_search():
    loss = Projection(set="row-stochastic", geometry="kl")
    assert loss.get_params() == {"set": "row-stochastic", "geometry": "kl"}
    loss2 = clone(loss).set_params(geometry="euclidean")
    assert loss2.geometry == "euclidean" and loss.geometry == "kl"
    assert Hinge(scaling="slack").name == "hinge-slack"
    for name in LOSSES:
        assert get_loss(name).name == name


# ------------------------------------------------------------------ solvers
def test_cutting_plane_certifies_the_objective_and_beats_sgd():
    from structlearn.solvers import LinearProblem, cutting_plane, objective, sgd

    rng = np.random.RandomState(0)
    X = rng.randn(200, 5)
    Y = (X @ rng.randn(5, 4) + rng.randn(200, 4) > 0).astype(int)
    st = UnitCube(4)
    for loss in [Hinge("margin"), Hinge("slack"), PosLearn()]:
        pb = LinearProblem(X, Y, st, loss, 4, fit_intercept=False)
        z, it, J = cutting_plane(pb, 0.05, np.zeros(pb.n_params), max_iter=500, tol=1e-6)
        assert np.isclose(J, objective(pb, z, 0.05))
        z2, _, J2 = sgd(pb, 0.05, np.zeros(pb.n_params), max_iter=30, tol=0,
                        random_state=0)
        assert J <= J2 + 1e-9, loss
        assert J2 - J < 0.05 * J  # both minimise the same objective


def test_explicit_vertices_sparsemap_solves_a_simplex_qp():
    # The cutting-plane dual: max_q <c, q> - 1/2 ||V^T q||^2 over the simplex.
    from scipy.optimize import minimize

    from structlearn.kernels.maps import explicit_vertices_map
    from structlearn.kernels.sparsemap import sparsemap_active_set

    rng = np.random.RandomState(1)
    V = rng.randn(7, 3)
    c = rng.randn(7)
    P = np.hstack([V, c[:, None]])
    params = np.concatenate([[7, 4], P.ravel()])
    eta = np.array([0.0, 0.0, 0.0, 1.0])
    mu, support, q, _ = sparsemap_active_set(eta, 3, explicit_vertices_map, params, 100, 1e-12)
    value = mu[3] - 0.5 * mu[:3] @ mu[:3]
    res = minimize(lambda x: -(c @ x - 0.5 * np.sum((V.T @ x) ** 2)), np.full(7, 1 / 7),
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                   bounds=[(0, 1)] * 7, method="SLSQP", options={"ftol": 1e-14})
    assert np.isclose(value, -res.fun, atol=1e-7)


@pytest.mark.parametrize("sname", list(STRUCTURES))
def test_batched_active_set_equals_projection_on_every_structure(sname):
    # Structure.sparsemap may use the dedicated projection; the generic
    # active-set kernel must give the same point everywhere.
    from structlearn.kernels.sparsemap import sparsemap_active_set_batch

    st = STRUCTURES[sname]()
    theta = 2 * np.random.RandomState(8).randn(10, st.n_parts)
    mu_as = sparsemap_active_set_batch(theta, st.n_unary, st._oracle(),
                                       st._oracle_params(), 1000, 1e-12)
    np.testing.assert_allclose(mu_as, st.project(theta), atol=1e-7)
    np.testing.assert_allclose(st.sparsemap(theta), mu_as, atol=1e-7)


def test_sgd_patience_rule_stops_early_only_when_the_objective_stalls():
    from structlearn.solvers import LinearProblem, sgd

    rng = np.random.RandomState(0)
    X = rng.randn(200, 5)
    Y = (X @ rng.randn(5, 4) > 0).astype(int)
    pb = LinearProblem(X, Y, UnitCube(4), Hinge("margin"), 4)
    args = (pb, 0.1, np.zeros(pb.n_params))
    _, n_loose, _ = sgd(*args, max_iter=40, tol=1e-2, random_state=0)
    assert n_loose < 40  # a stalled objective stops the run after 3 epochs
    with pytest.warns(Warning, match="did not converge"):
        _, n_strict, _ = sgd(*args, max_iter=8, tol=0.0, random_state=0)
    assert n_strict == 8


def test_lazy_averaged_perceptron_equals_the_eager_average():
    from structlearn.losses import Perceptron
    from structlearn.solvers import LinearProblem, sgd

    rng = np.random.RandomState(3)
    X = rng.randn(60, 5)
    Y = (X @ rng.randn(5, 4) + rng.randn(60, 4) > 0).astype(int)
    pb = LinearProblem(X, Y, UnitCube(4), Perceptron(), 4)
    z0 = 0.1 * rng.randn(pb.n_params)  # a warm start, so z0 matters too
    z_lazy, epochs, _ = sgd(pb, 0.0, z0, max_iter=3, batch_size=7, random_state=5,
                            perceptron=True)
    # eager reference: the mean of the iterates after every mini-batch
    r = np.random.RandomState(5)
    z = z0.copy()
    iterates = []
    for _ in range(epochs):
        order = r.permutation(len(X))
        for start in range(0, len(X), 7):
            idx = np.sort(order[start:start + 7])
            z = z - pb.value_and_grad(z, idx)[1]
            iterates.append(z.copy())
    np.testing.assert_allclose(z_lazy, np.mean(iterates, axis=0), atol=1e-10)


def test_losses_declare_where_their_mean_lands():
    from structlearn.losses import Squared
    from structlearn.structures import Chain, Knapsack, OrderSimplex, UnitCube

    for cls in (OrderSimplex, UnitCube, Knapsack, Chain):
        assert get_loss("crf").mean_set(cls) == "marginal"
        assert get_loss("sparsemap").mean_set(cls) == "marginal"
        assert get_loss("projection").mean_set(cls) == "marginal"
        assert Projection(set=cls.marginal_set).mean_set(cls) == "marginal"
        for name in ("hinge", "perceptron", "poslearn", "hinge-approx-slack"):
            assert get_loss(name).mean_set(cls) is None
        assert Squared().mean_set(cls) is None
    assert Projection(set="cube").mean_set(Knapsack) == "cube"
    assert Projection(set="cube").mean_set(UnitCube) == "marginal"
    # the mean of a 'marginal' loss is a point of the marginal polytope:
    # on the order simplex, monotone threshold marginals in [0, 1]
    rng = np.random.RandomState(0)
    st = OrderSimplex(5)
    theta = rng.randn(20, st.n_parts) * 3
    for name in ("crf", "sparsemap", "projection"):
        mu = get_loss(name).mean(theta, st)
        assert np.all(mu >= -1e-12) and np.all(mu <= 1 + 1e-12)
        assert np.all(np.diff(mu, axis=1) <= 1e-12), name


def test_only_the_crf_declares_the_gibbs_likelihood():
    # a training problem may evaluate a loss declaring it by its own fused
    # forward-backward: check the declaration against the definition
    from structlearn.structures import OrderSimplex

    st = OrderSimplex(4)
    rng = np.random.RandomState(1)
    theta = rng.randn(6, st.n_parts)
    y = rng.randint(0, 4, 6)
    for name in ("crf", "sparsemap", "m-sparsemap", "projection", "hinge", "poslearn",
                 "perceptron", "squared"):
        loss = get_loss(name)
        value, grad = loss.value_and_grad(theta, y, st)
        mu, logZ = st.marginals_and_log_partition(theta)
        gibbs = np.allclose(value, logZ - st.scores(theta, y)) and \
            np.allclose(grad, mu - st.encode(y))
        assert loss.gibbs_likelihood == gibbs, name


def test_estimators_never_ask_for_a_loss_type():
    # estimators ask the loss's declared capabilities (smooth,
    # perceptron_update, gibbs_likelihood, mean_set, uses_active_set), never
    # its class: no estimator module names a loss class
    import ast
    import pathlib

    import structlearn.estimators as pkg
    import structlearn.losses as losses_mod

    loss_classes = {n for n, v in vars(losses_mod).items()
                    if isinstance(v, type) and issubclass(v, losses_mod.Loss)}
    for path in pathlib.Path(pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                  for a in node.names}
        assert not (names & (loss_classes - {"Perceptron"})), (path.name, names & loss_classes)
