"""The kernels' numerical helpers against NumPy."""

import numpy as np
import pytest
from numba import njit

from structlearn.kernels._math import fast_exp


@njit(cache=True)
def _fast_exp_array(x):
    out = np.empty_like(x)
    for i in range(len(x)):   # the loop the recursions run (vectorised)
        out[i] = fast_exp(x[i])
    return out


def test_fast_exp_within_one_ulp_of_numpy():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-708.0, 709.0, 100_001),
                        -rng.exponential(5.0, 100_000),
                        rng.uniform(-1e-3, 1e-3, 10_000),
                        [0.0, -0.0, 1.0, -1.0, np.log(2.0), -np.log(2.0)]])
    got = _fast_exp_array(x)
    want = np.exp(x)
    rel = np.abs(got - want) / want
    assert rel.max() <= np.finfo(np.float64).eps
    assert _fast_exp_array(np.array([0.0]))[0] == 1.0


@pytest.mark.parametrize("x, want", [(-np.inf, 0.0), (-800.0, 0.0), (-708.5, 0.0),
                                     (np.inf, np.inf), (710.0, np.inf)])
def test_fast_exp_outside_its_range(x, want):
    assert _fast_exp_array(np.array([x]))[0] == want


def test_fast_exp_propagates_nan():
    assert np.isnan(_fast_exp_array(np.array([np.nan]))[0])
