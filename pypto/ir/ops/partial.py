"""Upstream's partial arithmetic and fills: the partial (segmented) arithmetic
pl.part_add / part_mul / part_max / part_min (the PTO instructions TPARTADD, TPARTMUL,
TPARTMAX, TPARTMIN) and the expanding fill pl.fillpad_expand (TFILLPAD_EXPAND), whose
meaning is their operands' valid regions, and the integer sequence pl.tensor.ci /
pl.tile.ci (TCI)."""

from __future__ import annotations

from collections.abc import Callable

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import PadValue, ScalarType, TensorType, TileType
from .inference import alike, check_dtype, fmt_shape, like, require_block, static_shape
from .movement import pad_value_attr
from .registry import ANY, NUMERIC, OpDef, OpParam, register


def _union_extent(op: str, a, b, full: int, span):
    """The larger of two valid extents of one axis.  An extent known only at run time is
    at most the tile's, so it is covered by the whole axis, and by itself alone."""
    if a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if full in (a, b):
        return full
    raise TypeCheckError(
        f"pl.{op}: valid extents {a} and {b} of one axis, one known only at run time, give "
        "no static result region", span,
        hint="pl.set_validshape the operands to static regions first")


def partial_region(op: str, lhs: TileType, rhs: TileType, span) -> tuple:
    """The result's valid region: the smallest that holds both operands'.  It must be one
    operand's own region (the other inside it), the patterns the PTO ISA defines: the
    elements of a region in neither operand would be implementation-defined."""
    region = tuple(_union_extent(op, a, b, full, span)
                   for a, b, full in zip(lhs.valid, rhs.valid, lhs.shape, strict=True))
    if region not in (tuple(lhs.valid), tuple(rhs.valid)):
        raise TypeCheckError(
            f"pl.{op}: the valid regions {fmt_shape(lhs.valid)} and {fmt_shape(rhs.valid)} "
            "overlap without one holding the other, so elements of the result would be in "
            "neither (the PTO ISA leaves them implementation-defined)", span,
            hint="pl.fillpad the operands and pl.set_validshape them so one region holds "
                 "the other")
    return region


def _infer_part(name: str) -> Callable:
    def infer(args, attrs, span):
        lhs, rhs = (require_block(name, a.type, what, span)
                    for a, what in zip(args, ("lhs", "rhs"), strict=True))
        alike(name, lhs, rhs, span, "kind", "shape", "dtype")
        check_dtype(name, lhs, NUMERIC, span)
        if not isinstance(lhs, TileType):
            return like(lhs)  # tensors are whole: the operator itself
        return like(lhs, valid=partial_region(name, lhs, rhs, span))

    return infer


# name -> (what it computes where both operands are valid, isa)
_PARTIAL = {
    "part_add": ("lhs + rhs (rounded to the element type; integers wrap)", "tpartadd"),
    "part_mul": ("lhs * rhs (rounded to the element type; integers wrap)", "tpartmul"),
    "part_max": ("pl.maximum(lhs, rhs) (NaN propagates)", "tpartmax"),
    "part_min": ("pl.minimum(lhs, rhs) (NaN propagates)", "tpartmin"),
}
PARTIAL_OPS = tuple(_PARTIAL)
for _name, (_both, _isa) in _PARTIAL.items():
    register(
        OpDef(
            _name,
            # pl.part_add(lhs, rhs), pl.tile.part_add(src0, src1): upstream's two spellings.
            (OpParam("lhs", "value", aliases=("src0",)),
             OpParam("rhs", "value", aliases=("src1",))),
            _infer_part(_name),
            "binary",
            f"Partial (segmented) elementwise operation of two tiles of one shape: {_both} "
            "where both operands' valid regions hold the element, a copy of the operand "
            "whose region alone holds it.  The result's valid region is the larger "
            "operand's, which must hold the other's (a region in neither operand is an "
            "error).  Padding (outside both regions) computes the operation, as every "
            "instruction computes the padding.  Tensors are whole: on tensors it is the "
            "operation itself.",
            dtypes=NUMERIC,
            emit="partial",
            isa=_isa,
        )
    )


def _infer_fillpad_expand(args, attrs, span):
    (x,) = (a.type for a in args)
    if not isinstance(x, TileType):
        raise TypeCheckError("pl.fillpad_expand: expands a tile", span,
                             hint="pl.load the tensor into a tile first")
    check_dtype("fillpad_expand", x, ANY, span)
    shape = static_shape("fillpad_expand", attrs["shape"], span)
    if len(shape) != len(x.shape) or any(d < s for d, s in zip(shape, x.shape, strict=True)):
        raise TypeCheckError(
            f"pl.fillpad_expand: the destination shape {fmt_shape(shape)} must have the "
            f"source's rank and be at least its shape {fmt_shape(x.shape)} in every dimension",
            span)
    pad_value_attr("fillpad_expand", attrs["pad_value"], span)
    return TileType(shape, x.dtype)


register(
    OpDef(
        "fillpad_expand",
        # x is upstream's `value` (pl.fillpad_expand) and `tile` (pl.tile.fillpad_expand).
        (OpParam("x", "value", aliases=("value", "tile")), OpParam("shape", "attr"),
         OpParam("pad_value", "attr", PadValue.zero)),
        _infer_fillpad_expand,
        "movement",
        "A new, larger tile of `shape` (at least x's in every dimension): x's valid region "
        "at its origin and `pad_value` in every other element (zero, max = +inf, min = -inf; "
        "integers use their range's ends).  The result is valid everywhere.",
        dtypes=ANY,
        emit="fillpad",
        isa="tfillpad_expand",
    )
)


# -- the integer sequence (TCI)
_CI_DTYPES = frozenset({DataType.INT16, DataType.INT32})


def _infer_ci(name: str, result: type) -> Callable:
    def infer(args, attrs, span):
        (start,) = (a.type for a in args)
        shape = static_shape(name, attrs["shape"], span)
        if len(shape) != 2 or shape[0] != 1:
            raise TypeCheckError(f"pl.{name}: TCI fills one row: the shape must be [1, n], "
                                 f"got {fmt_shape(shape)}", span,
                                 hint="make the sequence [1, n] and broadcast it with "
                                      "pl.col_expand")
        dtype = attrs["dtype"]
        if dtype not in _CI_DTYPES:
            raise TypeCheckError(f"pl.{name}: the sequence is INT16 or INT32, not {dtype!r}",
                                 span)
        if not isinstance(start, ScalarType) or not start.dtype.is_int:
            raise TypeCheckError(f"pl.{name}: start must be an integer scalar", span)
        if not isinstance(attrs["descending"], bool):
            raise TypeCheckError(f"pl.{name}: descending must be True or False", span)
        return result(shape, dtype)

    return infer


_CI_DOC = ("[1, n] consecutive integers of `dtype` (INT16 or INT32): start + j in column j, "
           "start - j when `descending` (numpy's / torch's arange); start is first converted "
           "to `dtype` as every scalar operand is (saturating), and the sequence wraps.")
_CI_PARAMS = (OpParam("start", "value"), OpParam("shape", "attr"),
              OpParam("dtype", "attr", DataType.INT32), OpParam("descending", "attr", False))
register(OpDef("ci", _CI_PARAMS, _infer_ci("ci", TileType), "tile", "A new Vec tile: " + _CI_DOC,
               dtypes=_CI_DTYPES, emit="ci", isa="tci"))
register(OpDef("tensor.ci", _CI_PARAMS, _infer_ci("tensor.ci", TensorType), "fill",
               "A new tensor value: " + _CI_DOC + "  TensorToTile computes it as `ci` tiles "
               "(a chunk of columns starting where its first column does).",
               dtypes=_CI_DTYPES, emit=""))
