"""pypto.golden.fp64: float64 exp, log, expm1, tanh, sigmoid and the normal quantile built
from IEEE basic operations, within a few float64 ulps of the exact values (50-digit
`decimal` arithmetic here), with the special values IEEE gives."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from pypto.golden import fp64

getcontext().prec = 50


def exact(fn, x: float) -> float:
    return float(fn(Decimal(x)))


def _expm1(d):
    return d.exp() - 1


def _tanh(d):
    e = (2 * d).exp()
    return (e - 1) / (e + 1)


def _sigmoid(d):
    return 1 / (1 + (-d).exp())


def points(rng, low, high, n=2000):
    return np.concatenate([rng.uniform(low, high, n), rng.uniform(-1, 1, n // 4),
                           rng.uniform(-1e-6, 1e-6, n // 8)])


CASES = {
    "exp": (fp64.exp, Decimal.exp, (-745.0, 709.0), 2),
    "expm1": (fp64.expm1, _expm1, (-40.0, 40.0), 4),
    "tanh": (fp64.tanh, _tanh, (-25.0, 25.0), 5),
    "sigmoid": (fp64.sigmoid, _sigmoid, (-700.0, 700.0), 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_functions_are_within_a_few_ulps(name):
    fn, reference, (low, high), ulps = CASES[name]
    x = points(np.random.default_rng(len(name)), low, high)
    want = np.array([exact(reference, v) for v in x])
    got = fn(x)
    assert np.max(np.abs(got - want) / np.spacing(np.abs(want))) <= ulps


def test_log_is_within_three_ulps_over_every_binade_and_the_subnormals():
    rng = np.random.default_rng(1)
    x = np.concatenate([np.exp(rng.uniform(-744, 709, 3000)), 1 + rng.uniform(-1e-6, 1e-6, 500),
                        [5e-324, 1e-310, 2.0**-1022, 1.0, 2.0, 0.5]])
    want = np.array([exact(Decimal.ln, v) for v in x])
    got = fp64.log(x)
    scale = np.spacing(np.maximum(np.abs(want), 1e-300))
    assert np.max(np.abs(got - want) / scale) <= 3


def test_special_values():
    with np.errstate(all="ignore"):
        e = fp64.exp([np.nan, np.inf, -np.inf, 710.0, -746.0, -745.1, 0.0, -0.0])
        lg = fp64.log([np.nan, np.inf, -1.0, 0.0, -0.0, 1.0])
    np.testing.assert_array_equal(e[1:], [np.inf, 0.0, np.inf, 0.0, 5e-324, 1.0, 1.0])
    np.testing.assert_array_equal(lg[1:], [np.inf, np.nan, -np.inf, -np.inf, 0.0])
    assert np.isnan(e[0]) and np.isnan(lg[0]) and not np.signbit(e[0])
    np.testing.assert_array_equal(fp64.tanh([np.inf, -np.inf, -0.0, 30.0]), [1, -1, -0.0, 1])
    assert np.signbit(fp64.tanh(-0.0))


def test_the_normal_quantile_inverts_the_normal_distribution():
    """AS 241 against Φ(z) = erfc(-z / √2) / 2: |Φ(z(p)) - p| within 1e-15 relative of
    min(p, 1 - p), over the body and the tails down to p = 2^-53."""
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.uniform(0, 1, 2000), 2.0**-np.arange(2, 54),
                        1 - 2.0**-np.arange(2, 30)])
    z = fp64.normal_quantile(p)
    phi = np.array([math.erfc(-v / math.sqrt(2)) / 2 for v in z])
    assert np.max(np.abs(phi - p) / np.minimum(p, 1 - p)) < 1e-13
    assert np.all(np.diff(fp64.normal_quantile(np.sort(p))) >= 0)
    assert fp64.normal_quantile(0.5) == 0.0
