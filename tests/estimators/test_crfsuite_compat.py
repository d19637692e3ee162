"""sklearn-crfsuite's names on SequenceTagger: model dictionaries, single-
sequence methods, per-token marginal dicts, and the parameter translations."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from structlearn import SequenceTagger
from structlearn.estimators._crfsuite import CRFSUITE_PARAMETERS

X = [[{"w": "the", "len": 3.0, "cap": False}, {"w": "dog", "len": 3.0}],
     [{"w": "a", "len": 1.0}, {"w": "cat", "len": 3.0, "cap": True}, {"w": "."}],
     [{"w": "the", "len": 3.0}, {"w": "."}]]
Y = [["B", "I"], ["B", "I", "O"], ["B", "O"]]


def _expected_state_keys():
    """(attribute, label) of every observed pair, named as CRFsuite does:
    ``key:value`` for strings, the key for numbers (zero values carry no
    feature)."""
    keys = set()
    for xs, ys in zip(X, Y):
        for tok, lab in zip(xs, ys):
            for k, v in tok.items():
                if isinstance(v, str):
                    keys.add((f"{k}:{v}", lab))
                elif v:
                    keys.add((k, lab))
    return keys


def test_state_and_transition_features():
    est = SequenceTagger(alpha=1e-3).fit(X, Y)
    sf = est.state_features_
    assert set(sf) == _expected_state_keys()
    # the weights are the coefficients they name
    names = list(est.vectorizer_.feature_names_out_)
    assert sf[("w:dog", "I")] == est.coef_[est.classes_.index("I"), names.index("w=dog")]
    assert sf[("len", "B")] == est.coef_[est.classes_.index("B"), names.index("len")]
    tf = est.transition_features_
    K = len(est.classes_)
    assert len(tf) == K * K
    for (a, b), v in tf.items():
        assert v == est.transition_[est.classes_.index(a), est.classes_.index(b)]


def test_single_sequence_methods_and_marginal_dicts():
    est = SequenceTagger(alpha=1e-3).fit(X, Y)
    assert est.predict_single(X[1]) == est.predict([X[1]])[0]
    md = est.predict_marginals_single(X[1])
    arr = est.predict_marginals([X[1]])[0]
    assert len(md) == len(X[1])
    for row, d in zip(arr, md):
        assert list(d) == est.classes_
        np.testing.assert_allclose([d[c] for c in est.classes_], row)
        assert sum(d.values()) == pytest.approx(1.0)
    both = est.predict_marginals(X, as_dicts=True)
    assert [len(s) for s in both] == [len(x) for x in X]
    forced = est.predict_single(X[1], known=[None, "O", None])
    assert forced[1] == "O"


@pytest.mark.parametrize("name", sorted(CRFSUITE_PARAMETERS))
def test_crfsuite_parameter_names_point_to_the_equivalent(name):
    with pytest.raises(TypeError, match=f"sklearn-crfsuite parameter.*'{name}' ->"):
        SequenceTagger(**{name: 1})


def test_compat_mixin_keeps_cloning_and_pickling():
    est = SequenceTagger(alpha=1e-3).fit(X, Y)
    assert clone(est).get_params() == est.get_params()
    again = pickle.loads(pickle.dumps(est))
    assert again.predict(X) == est.predict(X)
    assert again.state_features_ == est.state_features_
