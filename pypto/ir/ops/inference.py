"""Type-inference checks that operators of several families share.

Each raises a TypeCheckError naming the operator (`pl.<op>`) and the user's line."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, NamedTuple

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..layout import tile_layout
from ..types import (
    ScalarType,
    TensorType,
    TileType,
    Type,
)


def fmt_shape(shape) -> str:
    """`[a, b]`: a shape as messages print it."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def dtype_names(dtypes) -> str:
    """The names of `dtypes`, sorted, comma-separated."""
    return ", ".join(sorted(d.name for d in dtypes))


def check_dtype(op: str, t: Type, allowed: frozenset, span) -> None:
    """Refuses a tensor or tile of `t` whose dtype is not in `allowed`."""
    dtype = getattr(t, "dtype", None)
    if dtype is not None and dtype not in allowed:
        raise TypeCheckError(
            f"pl.{op} does not support dtype {dtype.name}",
            span,
            hint=f"supported: {dtype_names(allowed)}; convert with pl.cast(x, dtype) first",
        )


def is_block(t) -> bool:
    """Whether `t` is a tensor or a tile type (not a scalar)."""
    return isinstance(t, (TensorType, TileType))


def require_block(op: str, t, what: str, span):
    """`t`, refused unless it is a tensor or a tile (`what` names the operand)."""
    if not is_block(t):
        raise TypeCheckError(f"pl.{op}: {what} must be a tensor or a tile", span)
    return t


def require_rank2(op: str, t, span) -> None:
    """Refuses an operand that is not [rows, cols]."""
    if len(t.shape) != 2:
        raise TypeCheckError(f"pl.{op} works on [rows, cols] operands, got shape "
                             f"{fmt_shape(t.shape)}", span)


def meet_valid(*types) -> tuple | None:
    """The valid region where all tile operands hold real data (None: all fully valid).
    An extent known only at run time (an index expression) meets only itself."""
    valids = [t.valid_shape for t in types if isinstance(t, TileType) and t.valid_shape]
    if not valids:
        return None
    return tuple(valid_min(*dims) for dims in zip(*valids, strict=True))


def valid_min(*extents):
    """The smallest of valid extents; one known only at run time meets only itself."""
    if all(isinstance(e, int) for e in extents):
        return min(extents)
    if len(set(extents)) == 1:
        return extents[0]
    raise TypeCheckError(
        "tiles whose valid regions differ, one known only at run time, meet here",
        getattr(next(e for e in extents if not isinstance(e, int)), "span", None),
        hint="pl.fillpad the tile with the runtime valid region and pl.set_validshape it to "
             "a static region first")


def like(x, shape=None, dtype=None, valid=None):
    """A value of x's kind (tensor or tile) with the given shape, dtype and valid region."""
    shape = tuple(x.shape if shape is None else shape)
    dtype = x.dtype if dtype is None else dtype
    if isinstance(x, TileType):
        return TileType(shape, dtype, valid_shape=valid)
    return TensorType(shape, dtype)


class _Fact(NamedTuple):
    """A fact two operands of one operator must share, and how a mismatch is worded."""

    of: Callable[[Any], object]
    mismatch: Callable[[str, Any, Any], str]
    hint: str


_FACTS = {
    "kind": _Fact(type, lambda op, a, b: f"pl.{op} mixes a tensor and a tile",
                  "load the tensor into a tile with pl.load, or operate on tensors only"),
    "shape": _Fact(attrgetter("shape"), lambda op, a, b: (
        f"shape mismatch in pl.{op}: {fmt_shape(a.shape)} vs {fmt_shape(b.shape)}"),
        "both operands must have the same shape"),
    "dtype": _Fact(attrgetter("dtype"), lambda op, a, b: (
        f"dtype mismatch in pl.{op}: {a.dtype.name} vs {b.dtype.name}"),
        "convert one operand with pl.cast"),
}


def alike(op: str, a, b, span, *facts: str) -> None:
    """Refuses operands `a` and `b` of pl.`op` that differ in one of `facts`, checked in
    the order given: "kind" (a tensor and a tile), "shape", "dtype"."""
    for name in facts:
        fact = _FACTS[name]
        if fact.of(a) != fact.of(b):
            raise TypeCheckError(fact.mismatch(op, a, b), span, hint=fact.hint)


def scalar_operand(op: str, s, block, span) -> None:
    """Refuses a scalar form's operand that is not a scalar, or a float scalar with
    an integer tensor or tile."""
    if not isinstance(s, ScalarType):
        raise TypeCheckError(f"pl.{op}: expected a scalar operand", span)
    if s.dtype.is_float and not block.dtype.is_float:
        raise TypeCheckError(
            f"pl.{op}: a float scalar with a {block.dtype.name} operand",
            span,
            hint="use an integer constant, or pl.cast the operand to a float type",
        )


def row_major_tile(op: str, shape: tuple, dtype: DataType, instr: str, span) -> TileType:
    """A new Vec tile of `shape` and `dtype` that the instruction `instr` writes, refused
    where it lies column-major on chip (a [R, 1] column): `instr` writes row-major tiles."""
    tile = TileType(shape, dtype)
    if tile_layout(tile).col_major:
        raise TypeCheckError(
            f"pl.{op}: a {fmt_shape(shape)} column lies column-major on chip, and {instr} "
            "writes row-major tiles", span, hint=f"make it [1, {shape[0]}] and pl.reshape it")
    return tile


def written_region(op: str, tile: TileType, valid, span) -> TileType:
    """`tile` whose valid region is `valid` (valid_shape= of an operator that writes only
    that part): None or the whole shape leave it fully valid; anything but constant extents
    that fit in the tile is refused."""
    if valid is None:
        return tile
    if not isinstance(valid, tuple) or len(valid) != len(tile.shape) or any(
            not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= s
            for v, s in zip(valid, tile.shape, strict=True)):
        given = fmt_shape(v if isinstance(v, int) else getattr(v, "name", "<run-time value>")
                          for v in valid) if isinstance(valid, tuple) else repr(valid)
        raise TypeCheckError(f"pl.{op}: valid_shape {given} must be constant extents that "
                             f"fit in the tile {fmt_shape(tile.shape)}", span)
    return TileType(tile.shape, tile.dtype, valid_shape=None if valid == tile.shape else valid)


def static_shape(op: str, shape, span) -> tuple:
    """`shape`, refused unless it is a non-empty tuple of positive ints."""
    if not isinstance(shape, tuple) or not shape or any(
            not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in shape):
        raise TypeCheckError(f"pl.{op}: shape must be a list of positive integers, got {shape!r}",
                             span)
    return shape
