"""A plain torch/numpy reference for the fuzzer, written from docs/numerics.md alone.

Nothing here imports pypto: it is the second opinion the simulators and `torch_codegen`
are checked against.  Floats compute on their exact values in float64 and round once to
the element type after every operator (RNE): for + - * / and sqrt that is the correctly
rounded result.  `exp` and `log` are float64 functions (torch's, within a float64 ulp)
rounded to FP32 and then to the element type, as the simulators widen narrow tiles to
FP32; their last bits may differ from the simulators' own float64 algorithm where the
exact value lies near an FP32 rounding midpoint, so a result ending in one is compared
within one ulp.  Integers wrap; a scalar operand is first converted to the element type;
casts round the exact source value once by their mode and saturate.
"""

from __future__ import annotations

import numpy as np
import torch

TORCH = {
    "FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16,
    "INT32": torch.int32, "INT16": torch.int16, "INT8": torch.int8, "UINT8": torch.uint8,
}
FLOATS = ("FP32", "FP16", "BF16")
INTS = ("INT32", "INT16", "INT8", "UINT8")
# (significand bits including the implicit one, minimum normal exponent, largest finite)
FORMATS = {
    "FP32": (24, -126, float(np.finfo(np.float32).max)),
    "FP16": (11, -14, 65504.0),
    "BF16": (8, -126, float(torch.finfo(torch.bfloat16).max)),
}
INT_RANGE = {name: (int(torch.iinfo(TORCH[name]).min), int(torch.iinfo(TORCH[name]).max))
             for name in INTS}


def _quiet(fn):
    """numpy warns on inf/NaN arithmetic, which the fuzzer feeds it on purpose."""
    def wrapped(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    wrapped.__name__, wrapped.__doc__ = fn.__name__, fn.__doc__
    return wrapped


def exact(x: torch.Tensor) -> np.ndarray:
    """Every value of x as float64 (exact for all the dtypes the fuzzer uses)."""
    return x.to(torch.float64).numpy()


def _round_integral(q: np.ndarray, mode: str) -> np.ndarray:
    """q rounded to an integer by `mode` (q is float64, no NaN)."""
    if mode in ("rint",):
        return np.rint(q)
    if mode == "round":
        return np.sign(q) * np.floor(np.abs(q) + 0.5)
    if mode == "floor":
        return np.floor(q)
    if mode == "ceil":
        return np.ceil(q)
    if mode == "trunc":
        return np.trunc(q)
    if mode == "odd":
        t = np.trunc(q)
        odd = np.sign(q) * (np.abs(t) + (np.abs(t) % 2 == 0))
        return np.where(t == q, t, odd)
    raise ValueError(mode)


@_quiet
def round_to_float(v: np.ndarray, dst: str, mode: str) -> torch.Tensor:
    """The exact values `v` rounded once to the float format `dst` by `mode`."""
    mode = "rint" if mode == "none" else mode
    bits, emin, largest = FORMATS[dst]
    v = np.asarray(v, dtype=np.float64)
    finite = np.isfinite(v) & (v != 0)
    safe = np.where(finite, np.abs(v), 1.0)
    exponent = np.maximum(np.floor(np.log2(safe)), emin)
    # log2 may be off by one at exact powers of two: fix the exponent so 2^e <= |v| < 2^(e+1).
    exponent = np.where(safe < np.exp2(exponent), exponent - 1, exponent)
    exponent = np.where(safe >= np.exp2(exponent + 1), exponent + 1, exponent)
    exponent = np.maximum(exponent, emin)
    ulp = np.exp2(exponent - (bits - 1))
    rounded = _round_integral(np.where(finite, v, 0.0) / ulp, mode) * ulp
    sign = np.sign(v)
    over = finite & (np.abs(rounded) > largest)
    if mode in ("rint", "round"):
        overflow = sign * np.inf
    elif mode in ("trunc", "odd"):
        overflow = sign * largest
    elif mode == "floor":
        overflow = np.where(sign > 0, largest, -np.inf)
    else:  # ceil
        overflow = np.where(sign > 0, np.inf, -largest)
    result = np.where(over, overflow, np.where(finite, rounded, v))
    # A result that rounded to zero keeps the source's sign, as IEEE does.
    result = np.where(finite & (result == 0), np.copysign(0.0, v), result)
    return torch.from_numpy(result).to(TORCH[dst])  # exactly representable: no rounding


@_quiet
def cast(x: torch.Tensor, src: str, dst: str, mode: str) -> torch.Tensor:
    """One conversion of the exact source value (docs/numerics.md, casts)."""
    v = exact(x)
    if dst in FLOATS:
        return round_to_float(v, dst, mode)
    lo, hi = INT_RANGE[dst]
    if src in FLOATS:
        nan = np.isnan(v)
        r = _round_integral(np.where(nan, 0.0, v), "trunc" if mode == "none" else mode)
        r = np.where(nan, 0.0, r)
    else:
        r = v
    return torch.from_numpy(np.clip(r, lo, hi).astype(np.int64)).to(TORCH[dst])


def scalar_as(value, dtype: str) -> torch.Tensor:
    """A scalar operand converted to the element type (rounded / saturated)."""
    if dtype in FLOATS:
        return round_to_float(np.array([float(value)]), dtype, "rint")
    lo, hi = INT_RANGE[dtype]
    return torch.tensor([min(max(int(value), lo), hi)], dtype=TORCH[dtype])


# ----------------------------------------------------------------------------- elementwise


def _wrap(x64: torch.Tensor, dtype: str) -> torch.Tensor:
    return x64.to(TORCH[dtype])  # int64 -> narrower int truncates: two's complement wrap


def _max(a, b):
    # The simulator: NaN propagates (the first operand's first), otherwise a > b ? a : b.
    nan_a = torch.isnan(a) if a.is_floating_point() else torch.zeros_like(a, dtype=torch.bool)
    return torch.where(nan_a | (a > b), a, b)


def _min(a, b):
    nan_a = torch.isnan(a) if a.is_floating_point() else torch.zeros_like(a, dtype=torch.bool)
    return torch.where(nan_a | (a < b), a, b)


def rounded(v: torch.Tensor, dtype: str) -> torch.Tensor:
    """float64 values rounded once (RNE) to the float format `dtype`."""
    return round_to_float(v.numpy(), dtype, "rint")


def _fp32(v: torch.Tensor) -> torch.Tensor:
    """float64 values rounded to FP32, as float64 again."""
    return rounded(v, "FP32").double()


# On float64 values: the caller rounds the result once to the element type.
FLOAT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": _max,
    "minimum": _min,
}
FLOAT_UNARY = {
    "neg": lambda a: -a,
    "abs": torch.abs,
    "relu": lambda a: torch.where(torch.isnan(a) | (a > 0), a, torch.zeros_like(a)),
    "sqrt": torch.sqrt,
    "rsqrt": lambda a: 1.0 / _fp32(torch.sqrt(a)),  # 1 / sqrt(x): two roundings
    "recip": lambda a: 1.0 / a,
    "exp": lambda a: _fp32(torch.exp(a)),
    "log": lambda a: _fp32(torch.log(a)),
}


def _int_div(a, b):
    a64, b64 = a.long(), b.long()
    zero = b64 == 0
    q = torch.div(a64, torch.where(zero, torch.ones_like(b64), b64), rounding_mode="trunc")
    return torch.where(zero, torch.zeros_like(q), q)


def _shift(a, n, dtype: str, left: bool):
    bits = a.element_size() * 8
    n64 = n.long()
    inside = (n64 >= 0) & (n64 < bits)
    safe = torch.where(inside, n64, torch.zeros_like(n64))
    if left:
        shifted = _wrap(torch.bitwise_left_shift(a.long(), safe) & ((1 << bits) - 1), dtype) \
            if bits < 64 else a
        outside = torch.zeros_like(a)
    else:
        shifted = torch.bitwise_right_shift(a.long(), safe).to(a.dtype)
        outside = torch.where(a < 0, torch.full_like(a, -1), torch.zeros_like(a))
    return torch.where(inside, shifted, outside)


INT_BINARY = {
    "add": lambda a, b, d: _wrap(a.long() + b.long(), d),
    "sub": lambda a, b, d: _wrap(a.long() - b.long(), d),
    "mul": lambda a, b, d: _wrap(a.long() * b.long(), d),
    "div": lambda a, b, d: _wrap(_int_div(a, b), d),
    "maximum": lambda a, b, d: _max(a, b),
    "minimum": lambda a, b, d: _min(a, b),
    "and_": lambda a, b, d: a & b,
    "or_": lambda a, b, d: a | b,
    "xor": lambda a, b, d: a ^ b,
    "shl": lambda a, b, d: _shift(a, b, d, True),
    "shr": lambda a, b, d: _shift(a, b, d, False),
}
INT_UNARY = {
    "neg": lambda a, d: _wrap(-a.long(), d),
    "abs": lambda a, d: _wrap(a.long().abs(), d),
    "relu": lambda a, d: torch.where(a > 0, a, torch.zeros_like(a)),
    "not_": lambda a, d: ~a,
}


def binary(op: str, a: torch.Tensor, b: torch.Tensor, dtype: str) -> torch.Tensor:
    if dtype in FLOATS:
        return rounded(FLOAT_BINARY[op](a.double(), b.double()), dtype)
    return INT_BINARY[op](a, b, dtype)


def unary(op: str, a: torch.Tensor, dtype: str) -> torch.Tensor:
    if dtype in FLOATS:
        return rounded(FLOAT_UNARY[op](a.double()), dtype)
    return INT_UNARY[op](a, dtype)


# ----------------------------------------------------------------------------- reductions


def reduce_rows(x: torch.Tensor, op: str, dtype: str) -> torch.Tensor:
    """row_* of [R, C]: column 0 first, every step rounded to the dtype."""
    acc = x[:, 0:1]
    for c in range(1, x.shape[1]):
        acc = _step(op, acc, x[:, c:c + 1], dtype)
    return acc


def reduce_cols(x: torch.Tensor, op: str, dtype: str, tree: bool = False) -> torch.Tensor:
    """col_* of [R, C]: row 0 first, or (col_sum with tmp_tile) the binary tree."""
    rows = [x[r:r + 1, :] for r in range(x.shape[0])]
    if tree:  # the device's pairwise tree (docs/numerics.md)
        while len(rows) > 1:
            pairs = [_step(op, rows[2 * i], rows[2 * i + 1], dtype) for i in range(len(rows) // 2)]
            if len(rows) % 2:
                pairs[0] = _step(op, pairs[0], rows[-1], dtype)
            rows = pairs
        return rows[0]
    acc = rows[0]
    for row in rows[1:]:
        acc = _step(op, acc, row, dtype)
    return acc


def _step(op: str, a, b, dtype: str):
    return binary({"sum": "add", "max": "maximum", "min": "minimum"}[op], a, b, dtype)


def matmul(lhs: torch.Tensor, rhs: torch.Tensor, out_dtype: str) -> torch.Tensor:
    """lhs @ rhs as the cube computes it: INT32 exactly; FP32 in K order, each product and
    each sum rounded, from +0."""
    if out_dtype == "INT32":
        return (lhs.long() @ rhs.long()).to(torch.int32)
    acc = torch.zeros(lhs.shape[0], rhs.shape[1], dtype=torch.float32)
    for k in range(lhs.shape[1]):
        acc = acc + lhs[:, k:k + 1].float() * rhs[k:k + 1, :].float()
    return acc


# ----------------------------------------------------------------------------- comparison


@_quiet
def ulp(x: torch.Tensor, dtype: str) -> torch.Tensor:
    """The spacing of `dtype` at |x| (float64)."""
    bits, emin, _ = FORMATS[dtype]
    v = np.abs(exact(x))
    safe = np.where(np.isfinite(v) & (v > 0), v, 1.0)
    e = np.maximum(np.floor(np.log2(safe)), emin)
    return torch.from_numpy(np.exp2(e - (bits - 1)))


@_quiet
def mismatch(got: torch.Tensor, want: torch.Tensor, dtype: str, tolerance: int = 0) -> str | None:
    """None when `got` equals `want` (bitwise, NaN matching any NaN; with `tolerance`,
    within that many ulps / integer units), else a description of the first difference."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype} != {tuple(want.shape)} {want.dtype}"
    if dtype in FLOATS:
        g, w = exact(got), exact(want)
        both_nan = np.isnan(g) & np.isnan(w)
        same = (g == w) & (np.signbit(g) == np.signbit(w))
        if tolerance:
            close = np.abs(g - w) <= tolerance * ulp(want, dtype).numpy()
            same |= close & np.isfinite(g) & np.isfinite(w)
        bad = ~(same | both_nan)
    else:
        g, w = got.long().numpy(), want.long().numpy()
        bad = np.abs(g - w) > tolerance
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at {list(index)}: "
            f"got {got[index].item()!r}, expected {want[index].item()!r}")
