"""The rules of the 4-bit element types (pl.FP4, pl.HF4, pl.INT4, pl.UINT4), which pack two
elements into each byte (docs/numerics.md): the one place the parser asks whether a value or
an operator call may hold them.

A tensor or tile of them counts elements, as upstream's shapes do; their bytes are the
elements' pairs, so the last dimension, a valid region's last extent and a window's column
offset must be even: a load, store or copy then moves whole bytes, as the device's data
paths do.  Beyond moving data, the one thing the hardware does with them here is convert
(pl.cast, where the backend has the instruction), so the operators that take them are few.
"""

from __future__ import annotations

from .errors import Span, TypeCheckError
from .types import TensorType, TileType

PACKED_OPS = frozenset({"load", "store", "move", "cast", "set_validshape"})
"""The operators a 4-bit tensor or tile may reach: a tensor is loaded and stored, a tile
moved between buffers, converted (pl.cast) and given another valid region (metadata)."""

_TENSOR_OPS = frozenset({"load", "store"})
"""Of those, the ones a 4-bit tensor (global memory) may reach."""


def packed(t) -> bool:
    """Whether `t` is a tensor or tile of a 4-bit element type."""
    return isinstance(t, (TensorType, TileType)) and t.dtype.packed


def _static(v):
    value = getattr(v, "value", v)
    return value if isinstance(value, int) and not isinstance(value, bool) \
        and not hasattr(v, "name") else None


def check_value(what: str, t, span: Span | None) -> None:
    """Refuses a 4-bit tensor or tile (`what` names it) whose elements do not pair into
    whole bytes along the last axis: an odd last dimension, or an odd valid extent known
    at compile time."""
    if not packed(t):
        return
    shape = tuple(t.shape)
    if not shape or shape[-1] % 2:
        raise TypeCheckError(
            f"{what} is {t.dtype.name} {list(shape)}: 4-bit elements pack two to a byte, so "
            "the last dimension must be even", span,
            hint="pad the last dimension to an even size (a valid_shape can mark the part "
                 "that holds data, at an even extent)")
    valid = getattr(t, "valid_shape", None)
    if valid is not None:
        last = _static(valid[-1])
        if last is not None and last % 2:
            raise TypeCheckError(
                f"{what} has the valid region {list(valid)} of {t.dtype.name}: a 4-bit "
                "region ends on a whole byte, so its last extent must be even", span)


_OWN_REFUSAL = frozenset({"tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias"})
"""Operators that refuse 4-bit operands themselves, saying what to do instead (the MX
product: cast an FP4 lhs to FP8E4M3FN first)."""


def check_operands(op: str, operands, span: Span | None) -> None:
    """Refuses a call of an operator outside PACKED_OPS on a 4-bit operand, before its type
    is worked out (which would count bytes by elements)."""
    found = [o.type for o in operands if packed(getattr(o, "type", None))]
    if found and op not in PACKED_OPS and op not in _OWN_REFUSAL:
        _refuse_op(op, found[0].dtype, span)


def _refuse_op(op: str, dtype, span: Span | None):
    raise TypeCheckError(
        f"pl.{op} does not take {dtype.name} values: a 4-bit tile is loaded, stored, moved "
        "and converted (pl.cast) only (pl.set_validshape sets its valid region)", span,
        hint="pl.cast the tile to a wider type (one the backend converts it to) first")


def check_call(op: str, operands, result, attrs: dict, span: Span | None) -> None:
    """Refuses a call of `op` that takes or makes a 4-bit value it cannot: any operator
    but the few of PACKED_OPS, a 4-bit tensor anywhere but a load's source or a store's
    destination, a value whose elements do not pair into bytes, and a window whose column
    offset is odd (when it is known)."""
    types = [getattr(o, "type", None) for o in operands]
    results = list(result.items) if hasattr(result, "items") else [result]
    found = [t for t in (*types, *results) if packed(t)]
    if not found:
        return
    dtype = found[0].dtype
    if op not in PACKED_OPS:
        _refuse_op(op, dtype, span)
    if op not in _TENSOR_OPS and any(isinstance(t, TensorType) for t in found):
        raise TypeCheckError(
            f"pl.{op} of a {dtype.name} tensor: a 4-bit tensor is only loaded and stored "
            "here", span, hint=f"pl.load it into a tile, then pl.{op} the tile")
    for t in found:
        check_value(f"pl.{op}'s {'tensor' if isinstance(t, TensorType) else 'tile'}", t, span)
    if op in _TENSOR_OPS:
        offsets = operands[1].items
        column = _static(offsets[-1]) if offsets else None
        if column is not None and column % 2:
            raise TypeCheckError(
                f"pl.{op} of {dtype.name} at column {column}: a 4-bit window starts on a "
                "whole byte, so its column offset must be even", span)
