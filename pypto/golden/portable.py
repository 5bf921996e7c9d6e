"""Torch for goldens, restricted to what gives the same bits on every machine.

A spec's input generator and reference run inside `portable_torch()`: torch calls whose
result IEEE 754 specifies (+ - * /, sqrt, rounding to integers, comparisons, selections,
conversions) or that only move data pass; every other call is refused with
`NotPortableError`, because ATen computes it differently by CPU (the SIMD width of its
dispatch, MKL/Sleef kernels, BLAS blocking, the thread count): `torch.exp`, `x @ y`,
`x.sum()`, `torch.maximum` (the sign of a zero tie differs between x86 and ARM), ...

The functions below replace them: float64 results (any float or integer tensor is
widened exactly first) from `pypto.golden.fp64` and from reductions in a fixed order, so
a reference written with them has the same bytes everywhere.  `to_dtype` is the one
rounding of a float64 result to a golden's dtype.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from pypto.golden import fp64
from pypto.ir import formats
from pypto.ir.dtypes import DataType


class NotPortableError(RuntimeError):
    """A golden's generator or reference called a torch function whose result depends on
    the machine; the message names it and what to use instead."""


# Torch calls that give the same bits everywhere: IEEE 754 operations (each correctly
# rounded), exact ones, data movement, creation and conversions.  Property getters
# (`x.shape`, `x.T`, ...) are allowed too.
_PORTABLE_CALLS = frozenset("""
    __getitem__ __setitem__ __len__ __iter__ __contains__ __repr__ __str__ __format__
    __bool__ __float__ __int__ __index__ __array__ __reduce_ex__ __deepcopy__
    view view_as reshape reshape_as flatten unflatten squeeze unsqueeze permute transpose t
    movedim swapaxes expand expand_as broadcast_to repeat repeat_interleave tile
    contiguous clone detach detach_ index_select gather narrow select split chunk unbind
    cat concat concatenate stack hstack vstack flip fliplr flipud roll tril triu diagonal
    where masked_fill masked_fill_ copy_ fill_ zero_ index_put_ index_fill_
    to double float half bfloat16 int long short char byte bool type type_as numpy tolist
    item cpu size dim numel nelement element_size stride is_contiguous is_floating_point
    is_complex data_ptr storage_offset
    tensor as_tensor zeros ones full empty zeros_like ones_like full_like empty_like
    new_tensor new_zeros new_ones new_full new_empty arange eye
    add add_ sub sub_ subtract mul mul_ multiply div div_ divide true_divide floor_divide
    fmod neg neg_ negative abs abs_ absolute sqrt square reciprocal floor ceil trunc fix
    round frac sign sgn copysign signbit nan_to_num
    __add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__
    __truediv__ __rtruediv__ __itruediv__ __div__ __rdiv__ __floordiv__ __rfloordiv__
    __neg__ __pos__ __abs__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __invert__
    __lshift__ __rshift__ bitwise_and bitwise_or bitwise_xor bitwise_not
    logical_and logical_or logical_xor logical_not
    eq ne lt le gt ge __eq__ __ne__ __lt__ __le__ __gt__ __ge__ equal
    isnan isinf isposinf isneginf isfinite any all
""".split())

_PORTABLE_FUNCTIONS = ("exp", "log", "tanh", "sigmoid", "softmax", "sum", "mean", "amax",
                       "amin", "matmul", "rsqrt", "relu", "maximum", "minimum", "clamp")
_MATMUL, _CLAMP = "pypto.golden.portable.matmul", "pypto.golden.portable.clamp"
_INSTEAD = {name: f"pypto.golden.portable.{name}" for name in _PORTABLE_FUNCTIONS} | {
    "max": "pypto.golden.portable.amax or .maximum",
    "min": "pypto.golden.portable.amin or .minimum",
    "__matmul__": _MATMUL, "__rmatmul__": _MATMUL, "mm": _MATMUL, "bmm": _MATMUL,
    "clip": _CLAMP, "clamp_min": _CLAMP, "clamp_max": _CLAMP,
    "pow": "products (x * x * x)", "__pow__": "products (x * x * x)",
    "__rpow__": "a table of the powers (rng.choice)",
}


@functools.cache
def _mode_class() -> type:
    from torch.overrides import TorchFunctionMode, resolve_name

    class PortableTorch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = resolve_name(func) or getattr(func, "__name__", repr(func))
            last = name.rsplit(".", 1)[-1]
            if last not in _PORTABLE_CALLS and last != "__get__":
                instead = _INSTEAD.get(last, "exact arithmetic or pypto.golden.portable's "
                                       "functions")
                raise NotPortableError(
                    f"{name} gives different last bits on different machines (ATen picks its "
                    "kernel by CPU, library and thread count), so a golden made with it would "
                    f"not be reproducible: use {instead}")
            return func(*args, **(kwargs or {}))

    return PortableTorch


@contextlib.contextmanager
def portable_torch() -> Iterator[None]:
    """Within the block, a torch call outside the portable set raises `NotPortableError`."""
    with _mode_class()():
        yield


# --------------------------------------------------------------------------- rounding


def _round_to_odd_fp32(x: np.ndarray) -> np.ndarray:
    """float64 -> FP32 rounded to odd: toward zero, with the last bit set when inexact.
    Rounding that once more to nearest-even in a format of at most 22 bits gives the
    correctly rounded value (FP32 keeps two more bits than FP16, BF16 and FP8)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        back = f.astype(np.float64)
        finite = np.isfinite(x)
        bits = f.view(np.uint32)
        bits = np.where(finite & (np.abs(back) > np.abs(x)), bits - np.uint32(1), bits)
        bits = np.where(finite & (back != x), bits | np.uint32(1), bits)
    return bits.astype(np.uint32).view(np.float32)


def to_dtype(values: Any, dtype: DataType) -> Any:
    """`values` (a float64 or integer array or tensor) as a tensor of `dtype`, each value
    rounded once to nearest-even (NaN becomes the canonical quiet NaN, +inf/-inf stay).
    Integer dtypes take exact integers within their range only (ValueError otherwise)."""
    import torch

    if isinstance(values, torch.Tensor):
        values = values.detach()
        values = (values.to(torch.float64) if values.is_floating_point() else values).numpy()
    array = np.asarray(values)
    if dtype.packed:  # the 4-bit types: two codes a byte, as their torch tensors hold them
        return _packed(array, dtype)
    if not dtype.is_float:
        return _from_numpy(_exact_integers(array, dtype))
    wide = array.astype(np.float64)
    if dtype == DataType.HF8:  # torch.uint8 codes; NaN is 0x80
        return _from_numpy(formats.to_hf8(wide, "rint"))
    if dtype == DataType.FP8E8M0:  # |x|, as torch's own conversion (docs/numerics.md)
        return _from_numpy(formats.to_e8m0(wide, "rint")).view(torch.float8_e8m0fnu)
    if dtype == DataType.FP32:
        with np.errstate(over="ignore", invalid="ignore"):
            out = _from_numpy(wide.astype(np.float32))
    else:
        out = _from_numpy(_round_to_odd_fp32(wide)).to(dtype.to_torch())
    nan = torch.full((), float("nan"), dtype=out.dtype)
    return torch.where(_from_numpy(np.isnan(wide)), nan, out)


def _packed(array: np.ndarray, dtype: DataType) -> Any:
    """Values of a 4-bit type, rounded once (floats, to nearest-even) or exact (integers,
    within range: ValueError otherwise), as the bytes holding their codes (FP4:
    torch.float4_e2m1fn_x2, the others torch.uint8)."""
    import torch

    if dtype.is_float:
        wide = array.astype(np.float64)
        codes = formats.to_fp4(wide, "rint") if dtype == DataType.FP4 else \
            formats.to_hf4(wide, "rint")
    else:
        low, high = dtype.int_range
        if array.dtype.kind not in "iub" and not np.all(np.floor(array) == array):
            raise ValueError(f"{dtype.name} takes exact integers")
        if np.any(array < low) or np.any(array > high):
            raise ValueError(f"{dtype.name} holds {low} .. {high}")
        codes = (array.astype(np.int64) & 0xF).astype(np.uint8)
    data = _from_numpy(formats.pack_nibbles(codes))
    return data.view(torch.float4_e2m1fn_x2) if dtype == DataType.FP4 else data


def _from_numpy(array: np.ndarray) -> Any:
    """A tensor owning a C-ordered copy of `array` (0-d stays 0-d)."""
    import torch

    return torch.from_numpy(np.array(array, order="C"))


def _exact_integers(array: np.ndarray, dtype: DataType) -> np.ndarray:
    target = np.dtype(dtype.value.torch_name)
    low, high = (0, 1) if target == np.bool_ else (np.iinfo(target).min, np.iinfo(target).max)
    with np.errstate(invalid="ignore"):
        if array.dtype.kind in "iub":
            bad = (array < low) | (array > high)
        else:
            bad = ~np.isfinite(array) | (np.floor(array) != array) | (array < low) | (array > high)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0]) if array.ndim else ()
        raise ValueError(f"{array[where]} (at {list(where)}) is not a {dtype.name} value")
    return array.astype(target)


# --------------------------------------------------------------------------- functions


def _wide(x: Any) -> np.ndarray:
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _tensor(array: np.ndarray) -> Any:
    return _from_numpy(np.asarray(array, dtype=np.float64))


def exp(x: Any) -> Any:
    """e^x in float64 (`fp64.exp`)."""
    return _tensor(fp64.exp(_wide(x)))


def log(x: Any) -> Any:
    """ln x in float64 (`fp64.log`)."""
    return _tensor(fp64.log(_wide(x)))


def tanh(x: Any) -> Any:
    """tanh x in float64 (`fp64.tanh`)."""
    return _tensor(fp64.tanh(_wide(x)))


def sigmoid(x: Any) -> Any:
    """1 / (1 + e^-x) in float64."""
    return _tensor(fp64.sigmoid(_wide(x)))


def rsqrt(x: Any) -> Any:
    """1 / sqrt(x) in float64 (two correctly rounded operations)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _tensor(1.0 / np.sqrt(_wide(x)))


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    larger = np.where(a > b, a, b)
    zeros = (a == 0.0) & (b == 0.0)
    larger = np.where(zeros, np.where(np.signbit(a), b, a), larger)  # +0 beats -0
    return np.where(np.isnan(a) | np.isnan(b), np.nan, larger)


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    smaller = np.where(a < b, a, b)
    zeros = (a == 0.0) & (b == 0.0)
    smaller = np.where(zeros, np.where(np.signbit(a), a, b), smaller)  # -0 beats +0
    return np.where(np.isnan(a) | np.isnan(b), np.nan, smaller)


def maximum(a: Any, b: Any) -> Any:
    """Elementwise maximum in float64: NaN if either is NaN, and +0 above -0."""
    return _tensor(_maximum(_wide(a), _wide(b)))


def minimum(a: Any, b: Any) -> Any:
    """Elementwise minimum in float64: NaN if either is NaN, and -0 below +0."""
    return _tensor(_minimum(_wide(a), _wide(b)))


def clamp(x: Any, min: float | None = None, max: float | None = None) -> Any:  # noqa: A002
    """x limited to [min, max] (either may be None) in float64; NaN stays NaN."""
    y = _wide(x)
    if min is not None:
        y = _maximum(y, np.float64(min))
    if max is not None:
        y = _minimum(y, np.float64(max))
    return _tensor(y)


def relu(x: Any) -> Any:
    """max(x, 0) in float64: NaN stays NaN, -0 gives +0."""
    return _tensor(_maximum(_wide(x), np.float64(0.0)))


def _along_last(x: np.ndarray, dim: int | Sequence[int] | None) -> tuple[np.ndarray, list[int]]:
    """x with the reduced dims moved last and merged into one, and the reduced dims."""
    dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = sorted(d % x.ndim for d in dims) if x.ndim else []
    kept = [d for d in range(x.ndim) if d not in dims]
    moved = np.transpose(x, kept + dims)
    return moved.reshape([x.shape[d] for d in kept] + [-1]), dims


def _reduce(x: Any, dim, keepdim: bool, step) -> tuple[np.ndarray, int]:
    array = _wide(x)
    rows, dims = _along_last(array, dim)
    n = rows.shape[-1]
    if n == 0:
        raise ValueError("a reduction over no elements")
    acc = rows[..., 0].copy()
    for j in range(1, n):  # element 0 first, one correctly rounded step each
        acc = step(acc, rows[..., j])
    if keepdim:
        acc = acc.reshape([1 if d in dims else s for d, s in enumerate(array.shape)])
    return acc, n


def sum(x: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The sum over `dim` (all dims if None) in float64, element by element in index
    order (row-major over several dims)."""
    return _tensor(_reduce(x, dim, keepdim, np.add)[0])


def mean(x: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Any:
    """`sum` divided by the number of elements summed."""
    total, n = _reduce(x, dim, keepdim, np.add)
    return _tensor(total / n)


def amax(x: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Any:
    """The maximum over `dim` in float64, as `maximum` folds it (NaN wins, +0 above -0)."""
    return _tensor(_reduce(x, dim, keepdim, _maximum)[0])


def amin(x: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Any:
    """The minimum over `dim` in float64, as `minimum` folds it (NaN wins, -0 below +0)."""
    return _tensor(_reduce(x, dim, keepdim, _minimum)[0])


def softmax(x: Any, dim: int) -> Any:
    """exp(x - max) / sum(exp(x - max)) along `dim`, in float64."""
    array = _wide(x)
    top = _reduce(array, dim, True, _maximum)[0]
    with np.errstate(invalid="ignore"):
        e = fp64.exp(array - top)
    return _tensor(e / _reduce(e, dim, True, np.add)[0])


def matmul(a: Any, b: Any) -> Any:
    """a @ b in float64 (batch dims broadcast, 1-D operands as torch treats them): each
    element is sum_k a[i, k] * b[k, j], the products rounded and added for k = 0, 1, ...
    With FP16/BF16/FP32 inputs every product is exact in float64."""
    x, y = _wide(a), _wide(b)
    vector_a, vector_b = x.ndim == 1, y.ndim == 1
    x = x[None, :] if vector_a else x
    y = y[:, None] if vector_b else y
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"matmul: shapes {list(x.shape)} and {list(y.shape)} do not chain")
    acc = np.zeros(np.broadcast_shapes(x.shape[:-1] + (1,), y.shape[:-2] + (1, y.shape[-1])))
    for k in range(x.shape[-1]):
        acc = acc + x[..., :, k:k + 1] * y[..., k:k + 1, :]
    if vector_a:
        acc = acc[..., 0, :]
    if vector_b:
        acc = acc[..., 0]
    return _tensor(acc)
