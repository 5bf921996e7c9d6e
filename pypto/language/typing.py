"""Annotation objects of the DSL: `pl.Tensor[[16, 128], pl.FP16]`, `pl.Out[...]`, ..."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.dtypes import DataType
from ..ir.types import Direction, MemorySpace, ScalarType, TensorType, TileType


@dataclass(frozen=True)
class DynamicDim:
    """`pl.dynamic("M")`: a dimension taken from the argument at call time."""

    name: str


def dynamic(name: str) -> DynamicDim:
    """A named dimension specialised from the caller's tensor shape."""
    return DynamicDim(name)


@dataclass(frozen=True)
class TensorSpec:
    """A tensor annotation whose shape or dtype is completed from the call's arguments."""

    shape: tuple | None  # None: any rank; entries are ints or DynamicDim
    dtype: DataType | None


def _shape(items, what: str) -> tuple:
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{what} shape must be a list like [16, 128], got {items!r}")
    for d in items:
        if not isinstance(d, (int, DynamicDim)) or isinstance(d, bool):
            raise TypeError(f"{what} dimension must be an int or pl.dynamic(...), got {d!r}")
    return tuple(items)


class Tensor:
    """`pl.Tensor[[d0, d1], dtype]`: a tensor in global memory.  Bare `pl.Tensor` takes
    its shape and dtype from the argument at call time."""

    def __class_getitem__(cls, item):
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError("write pl.Tensor[[d0, d1, ...], dtype]")
        shape = _shape(item[0], "pl.Tensor")
        if not isinstance(item[1], DataType):
            raise TypeError(f"pl.Tensor dtype must be a pl dtype such as pl.FP16, got {item[1]!r}")
        if any(isinstance(d, DynamicDim) for d in shape):
            return TensorSpec(shape, item[1])
        return TensorType(shape, item[1])


class Tile:
    """`pl.Tile[[r, c], dtype]` (optionally `, pl.Mem.Vec, addr`): an on-chip tile."""

    def __class_getitem__(cls, item):
        if not isinstance(item, tuple) or not 2 <= len(item) <= 4:
            raise TypeError("write pl.Tile[[rows, cols], dtype]")
        shape = _shape(item[0], "pl.Tile")
        memory = item[2] if len(item) > 2 else None
        addr = item[3] if len(item) > 3 else None
        if memory is not None and not isinstance(memory, MemorySpace):
            raise TypeError(f"pl.Tile memory space must be a pl.Mem member, got {memory!r}")
        return TileType(shape, item[1], memory, addr)


class Scalar:
    """`pl.Scalar[dtype]`: a scalar value."""

    def __class_getitem__(cls, dtype):
        if not isinstance(dtype, DataType):
            raise TypeError(f"pl.Scalar needs a pl dtype, got {dtype!r}")
        return ScalarType(dtype)


@dataclass(frozen=True)
class DirectedType:
    """A parameter annotation with a direction: `pl.Out[T]`, `pl.InOut[T]`."""

    type: object
    direction: Direction


class Out:
    """`pl.Out[T]`: a parameter the function writes and does not read."""

    def __class_getitem__(cls, t):
        return DirectedType(t, Direction.Out)


class InOut:
    """`pl.InOut[T]`: a parameter the function reads and writes."""

    def __class_getitem__(cls, t):
        return DirectedType(t, Direction.InOut)
