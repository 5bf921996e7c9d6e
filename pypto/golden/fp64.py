"""Float64 math whose every bit is specified: the same results on every machine.

libm, numpy's and torch's transcendental functions pick their code by CPU (SIMD width,
MKL/SVML/Sleef kernels) and by build, so their last bits differ between machines.  The
functions here use only IEEE 754 basic operations on float64 (+ - * /, each correctly
rounded, no fused multiply-add: numpy applies one operation per ufunc), comparisons,
selections and exact bit manipulation, in a fixed order: an algorithm, not a library,
defines each result.  A NaN argument gives the canonical quiet NaN.  Accuracy is within a
few float64 ulps (tests/golden checks them against 50-digit values).

`exp` and `log` are also the simulator's `expf`/`logf`: pypto/sim/include/pto/fmath.hpp
runs the same operations on the same constants in C++ (compiled with -ffp-contract=off)
and rounds the float64 result once to FP32, so the simulator, the torch runtime
(pypto.debug) and the goldens agree bit for bit (tests/sim compares them).

Constants: 1/ln 2 and ln 2 split into a 32-bit head (so k * LN2_HI is exact for
|k| < 2^21) and its correctly rounded tail; polynomial coefficients are 1/k! and
1/(2j+1), each one correctly rounded division of exact integers.
"""

from __future__ import annotations

import math

import numpy as np

INV_LN2 = float.fromhex("0x1.71547652b82fep+0")
LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
SQRT2 = float.fromhex("0x1.6a09e667f3bcdp+0")
ROUND_SHIFT = 1.5 * 2.0**52  # (t + ROUND_SHIFT) - ROUND_SHIFT rounds t to an integer, ties to even
EXP_DEGREE = 13  # exp(r) for |r| <= ln2/2 as its Taylor polynomial: the remainder is < 2^-56
EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(EXP_DEGREE + 1))
LOG_TERMS = 11  # log(m) = 2 atanh(s) = 2s (1 + s^2/3 + ... + s^20/21): remainder < 2^-60
ATANH_SERIES = tuple(1.0 / (2 * j + 1) for j in range(LOG_TERMS))
EXP_LOW, EXP_HIGH = -746.0, 710.0  # exp is 0 below (a subnormal at most) and inf above
TANH_ONE = 22.0  # tanh(x) rounds to 1.0 from x > 19.1 on
EXPONENT_MASK, SIGNIFICAND_MASK = 0x7FF, (1 << 52) - 1


def _array(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _power_of_two(t: np.ndarray) -> np.ndarray:
    """2^k from t = k + ROUND_SHIFT, for integer k in the normal range [-1022, 1023]."""
    k = t.view(np.int64) - np.float64(ROUND_SHIFT).view(np.int64)
    return ((k + 1023) << 52).view(np.float64)


def _horner(coefficients: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    """c[0] + x (c[1] + x (c[2] + ...)), innermost first."""
    acc = np.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        acc = acc * x + c
    return acc


def _estrin(coefficients: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    """c[0] + c[1] x + ... by Estrin's scheme, as fmath.hpp evaluates it: pairs t[2i] +
    t[2i+1] p with p = x, x^2, x^4, ... level by level."""
    terms: list = list(coefficients)
    power = x
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] * power if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
        power = power * power
    return terms[0]


def exp(x) -> np.ndarray:
    """e^x: x = k ln2 + r with |r| <= ln2/2, exp(r) by its Taylor polynomial of degree 13
    (Estrin's scheme), scaled by 2^k in two exact factors 2^k1 2^k2, k1 = k/2 rounded to
    even (the second multiplication rounds a subnormal result once)."""
    x = _array(x)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        xc = np.minimum(np.maximum(x, EXP_LOW), EXP_HIGH)
        k = (xc * INV_LN2 + ROUND_SHIFT) - ROUND_SHIFT
        r = (xc - k * LN2_HI) - k * LN2_LO
        p = _estrin(EXP_TAYLOR, r)
        t1 = k * 0.5 + ROUND_SHIFT
        t2 = (k - (t1 - ROUND_SHIFT)) + ROUND_SHIFT
        y = (p * _power_of_two(t1)) * _power_of_two(t2)
    return np.where(np.isnan(x), np.nan, y)


def expm1(x) -> np.ndarray:
    """e^x - 1: the Taylor polynomial without its constant term below |x| = ln2/2 (no
    cancellation), exp(x) - 1 above it (where it loses at most a bit)."""
    x = _array(x)
    with np.errstate(invalid="ignore", over="ignore"):
        small = x * _horner(EXP_TAYLOR[1:], x)
        return np.where(np.abs(x) < 0.5 * LN2_HI, small, exp(x) - 1.0)


def log(x) -> np.ndarray:
    """ln x: x = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1),
    by its series to s^21 (Estrin's scheme in s^2); e ln2 added in a head and a tail.
    ln 0 = -inf, ln x<0 = NaN."""
    x = _array(x)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        tiny = x < 2.0**-1022  # subnormals (and non-positive x) scaled into the normal range
        bits = np.where(tiny, x * 2.0**54, x).view(np.int64)
        e = ((bits >> 52) & EXPONENT_MASK) - 1023 - np.where(tiny, 54, 0)
        m = ((bits & SIGNIFICAND_MASK) | (1023 << 52)).view(np.float64)
        big = m > SQRT2
        m = np.where(big, m * 0.5, m)
        e = (e + big).astype(np.float64)
        f = m - 1.0
        s = f / (2.0 + f)
        y = e * LN2_HI + (e * LN2_LO + (s + s) * _estrin(ATANH_SERIES, s * s))
        y = np.where(x == np.inf, x, y)
        y = np.where(x == 0.0, -np.inf, y)
        return np.where((x < 0.0) | np.isnan(x), np.nan, y)


def tanh(x) -> np.ndarray:
    """tanh x = sign(x) e / (e + 2) with e = expm1(2|x|); 1 from |x| > 22 on."""
    x = _array(x)
    a = np.abs(x)
    with np.errstate(invalid="ignore", over="ignore"):
        e = expm1(a + a)
        t = np.where(a > TANH_ONE, 1.0, e / (e + 2.0))
    return np.where(np.isnan(x), np.nan, np.copysign(t, x))


def sigmoid(x) -> np.ndarray:
    """1 / (1 + e^-x)."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + exp(-_array(x)))


# The percentage points of the normal distribution, Wichura's algorithm AS 241 (Applied
# Statistics 37, 1988, 477-484), PPND16: rational functions of p near 1/2 and of
# sqrt(-ln min(p, 1-p)) in the tails, about 1e-16 relative.  Coefficients as published.
_PPND_A = (3.3871328727963666080, 133.14166789178437745, 1971.5909503065514427,
           13731.693765509461125, 45921.953931549871457, 67265.770927008700853,
           33430.575583588128105, 2509.0809287301226727)
_PPND_B = (1.0, 42.313330701600911252, 687.18700749205790830, 5394.1960214247511077,
           21213.794301586595867, 39307.895800092710610, 28729.085735721942674,
           5226.4952788528545610)
_PPND_C = (1.42343711074968357734, 4.63033784615654529590, 5.76949722146069140550,
           3.64784832476320460504, 1.27045825245236838258, 0.241780725177450611770,
           0.0227238449892691845833, 0.000774545014278341407640)
_PPND_D = (1.0, 2.05319162663775882187, 1.67638483018380384940, 0.689767334985100004550,
           0.148103976427480074590, 0.0151986665636164571966, 0.000547593808499534494600,
           1.05075007164441684324e-9)
_PPND_E = (6.65790464350110377720, 5.46378491116411436990, 1.78482653991729133580,
           0.296560571828504891230, 0.0265321895265761230930, 0.00124266094738807843860,
           0.0000271155556874348757815, 2.01033439929228813265e-7)
_PPND_F = (1.0, 0.599832206555887937690, 0.136929880922735805310,
           0.0148753612908506148525, 0.000786869131145613259100, 1.84631831751005468180e-5,
           1.42151175831644588870e-7, 2.04426310338993978564e-15)


def normal_quantile(p) -> np.ndarray:
    """The standard normal deviate z with P(Z <= z) = p, for p in (0, 1) (AS 241)."""
    p = _array(p)
    q = p - 0.5
    r = 0.180625 - q * q
    central = q * _horner(_PPND_A, r) / _horner(_PPND_B, r)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.sqrt(-log(np.where(q < 0.0, p, 1.0 - p)))
        near = _horner(_PPND_C, t - 1.6) / _horner(_PPND_D, t - 1.6)
        far = _horner(_PPND_E, t - 5.0) / _horner(_PPND_F, t - 5.0)
    tail = np.where(t <= 5.0, near, far)
    return np.where(np.abs(q) <= 0.425, central, np.where(q < 0.0, -tail, tail))
