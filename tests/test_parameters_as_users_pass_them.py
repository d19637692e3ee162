"""Parameters passed the ways scikit-learn users pass them (issue 21).

``random_state`` as a ``RandomState`` instance (scikit-learn's convention:
an int seeds a new generator, an instance is used as it is), for every
estimator and solver that draws random numbers.
"""

import numpy as np
import pytest

from structlearn import LabelRanker, MultiLabelClassifier, OrdinalRegressor, SequenceTagger

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _vector(task, n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    S = X @ rng.randn(3, 3)
    if task == "ranker":
        return X, np.argsort(np.argsort(-S, axis=1), axis=1) + 1
    if task == "ordinal":
        return X, np.digitize(S[:, 0], [-1.0, 0.0, 1.0])
    return X, (S > 0).astype(int)


SEQ_X = [[{"w": w} for w in s.split()] for s in
         ["the cat sat", "a dog ran far", "the dog sat", "a cat ran"] * 3]
SEQ_Y = [["D", "N", "V"], ["D", "N", "V", "A"], ["D", "N", "V"], ["D", "N", "V"]] * 3

CASES = [
    (lambda rs: LabelRanker(loss="hinge", max_iter=5, random_state=rs), "ranker"),
    (lambda rs: LabelRanker(loss="hinge", solver="bcfw", max_iter=5, random_state=rs),
     "ranker"),
    (lambda rs: OrdinalRegressor(loss="hinge", max_iter=5, random_state=rs), "ordinal"),
    (lambda rs: MultiLabelClassifier(loss="perceptron", max_iter=5, random_state=rs),
     "multilabel"),
    (lambda rs: SequenceTagger(loss="hinge", max_iter=5, random_state=rs), "tagger"),
]


@pytest.mark.parametrize("make, task", CASES, ids=lambda v: v if isinstance(v, str) else "")
def test_random_state_instance_is_used_as_the_generator(make, task):
    """A ``RandomState(0)`` instance gives the fit of ``random_state=0`` (the
    same stream); a value
    that cannot seed a generator is a ValueError naming it."""
    X, y = (SEQ_X, SEQ_Y) if task == "tagger" else _vector(task)
    a = make(0).fit(X, y)
    b = make(np.random.RandomState(0)).fit(X, y)
    np.testing.assert_array_equal(a.predict(X) if task != "tagger" else
                                  np.concatenate(a.predict(X)),
                                  b.predict(X) if task != "tagger" else
                                  np.concatenate(b.predict(X)))
    za, zb = (a.coef_.toarray(), b.coef_.toarray()) if task == "tagger" else (a.coef_, b.coef_)
    np.testing.assert_array_equal(za, zb)
    with pytest.raises(ValueError, match="'abc' cannot be used to seed"):
        make("abc").fit(X, y)


# ------------------------------------------------------------------ Ctrl-C
def test_interruptible_reraises_the_keyboard_interrupt_behind_system_errors():
    """The chain Numba's dispatcher leaves (KeyboardInterrupt -> SystemError
    -> SystemError) comes out as the KeyboardInterrupt; other SystemErrors
    are untouched."""
    from structlearn._validation import interruptible

    def chained():
        try:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as kbi:
                raise SystemError("_numba_unpickle returned a result with an exception "
                                  "set") from kbi
        except SystemError as inner:
            raise SystemError("CPUDispatcher returned a result with an exception set") \
                from inner

    with pytest.raises(KeyboardInterrupt):
        interruptible(chained)()

    def plain():
        raise SystemError("something else")

    with pytest.raises(SystemError, match="something else"):
        interruptible(plain)()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_ctrl_c_during_a_parser_fit_is_a_keyboard_interrupt(n_jobs, monkeypatch):
    """SIGINT during DependencyParser.fit (sent, deterministically, from the
    third objective evaluation of L-BFGS) reaches the caller as
    KeyboardInterrupt and leaves the fitted parser unchanged.  (Where the
    signal lands inside Numba's dispatcher it surfaced as a SystemError:
    the test above covers that chain.)"""
    import os
    import signal

    import structlearn.estimators._base as base
    from structlearn import DependencyParser

    rng = np.random.RandomState(0)
    X, y = [], []
    for _ in range(60):
        n = rng.randint(2, 12)
        X.append([{"form": f"w{rng.randint(50)}", "upos": f"P{rng.randint(6)}"}
                  for _ in range(n)])
        y.append([0] + [rng.randint(1, k + 1) for k in range(1, n)])
    est = DependencyParser(loss="crf", max_iter=3, n_jobs=n_jobs).fit(X[:30], y[:30])
    coef = est.coef_.copy()
    real = base.lbfgs

    def interrupted(problem, *args, **kwargs):
        calls = [0]
        evaluate = problem.value_and_grad

        def value_and_grad(z, *a):
            calls[0] += 1
            if calls[0] == 3:
                os.kill(os.getpid(), signal.SIGINT)
            return evaluate(z, *a)

        problem.value_and_grad = value_and_grad
        return real(problem, *args, **kwargs)

    monkeypatch.setattr(base, "lbfgs", interrupted)
    # Python's own SIGINT handler (another library in the same process,
    # e.g. a dask cluster of an earlier test, may have installed its own)
    # and SIGINT not blocked in this thread (a library may have blocked it)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        with pytest.raises(KeyboardInterrupt):
            est.set_params(max_iter=50).fit(X, y)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGINT, old)
    np.testing.assert_array_equal(est.coef_, coef)


@pytest.mark.parametrize("make", [LabelRanker, OrdinalRegressor, MultiLabelClassifier])
@pytest.mark.parametrize("bad", ["auto", "yes", 1, None])
def test_fit_intercept_must_be_a_bool(make, bad):
    # numpy's bool passes; anything else is named, not read as its truth value
    task = {LabelRanker: "ranker", OrdinalRegressor: "ordinal"}.get(make, "multilabel")
    X, y = _vector(task)
    make(fit_intercept=np.bool_(False), max_iter=3).fit(X, y)
    with pytest.raises(ValueError, match="fit_intercept must be True or False, got"):
        make(fit_intercept=bad, max_iter=3).fit(X, y)
