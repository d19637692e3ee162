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


@pytest.mark.slow
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_ctrl_c_during_a_parser_fit_is_a_keyboard_interrupt(n_jobs):
    """SIGINT during DependencyParser.fit (feature extraction and L-BFGS)
    reaches the caller as KeyboardInterrupt -- it once surfaced as a
    SystemError from inside a Numba kernel -- and leaves the fitted parser
    unchanged."""
    import os
    import signal
    import threading

    from structlearn import DependencyParser

    rng = np.random.RandomState(0)
    X, y = [], []
    for _ in range(400):
        n = rng.randint(5, 25)
        X.append([{"form": f"w{rng.randint(300)}", "upos": f"P{rng.randint(12)}"}
                  for _ in range(n)])
        y.append([0] + [rng.randint(1, k + 1) for k in range(1, n)])
    est = DependencyParser(loss="crf", max_iter=2, n_jobs=n_jobs).fit(X[:30], y[:30])
    coef = est.coef_.copy()
    est.set_params(max_iter=500, tol=1e-12)
    for delay in (0.3, 1.0, 2.0):
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                est.fit(X, y)
        finally:
            timer.cancel()
        np.testing.assert_array_equal(est.coef_, coef)
