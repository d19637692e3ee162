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
