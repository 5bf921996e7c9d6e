"""Mask operators: upstream PyPTO's pl.tile.tri (the PTO instruction TTRI) and
pl.tile.sels (TSELS), reached as pl.tri and pl.sels too (upstream re-exports them).

pl.tile.tri(diagonal, shape, valid_shape=None, dtype=pl.INT32, upper=False) makes a tile
of ones and zeros: in row i, column j is one where j <= i + diagonal (lower), or
j >= i + diagonal (upper=True), as torch.tril / torch.triu of ones; only the valid region
is written.  The diagonal may be a run-time integer scalar; its meaning is the integer's
for every value (device code clamps it to the tile's extents first: TTRI takes an `int`
and pto-isa's CPU model adds the row to it).

pl.tile.sels(mask, src, tmp, scalar) is src where the BOOL mask (pl.cmp's) holds and the
scalar, converted to src's dtype as every scalar operand is, elsewhere: the mask encoding
of pl.sel.  tmp is upstream's scratch operand (where A2/A3 keeps the scalar); it is not
used here, device code takes its own.  Upstream's older form sels(lhs, rhs, select_mode),
whose modes are target-defined, is refused at its line.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import ScalarType, TileType
from .inference import (
    alike,
    check_dtype,
    meet_valid,
    row_major_tile,
    scalar_operand,
    static_shape,
    written_region,
)
from .registry import NUMERIC, OpDef, OpParam, get_op, register

# What TTRI writes: the element types of upstream's pl.tile.tri, which both backends and
# pto-isa's CPU model take (A2/A3 has no BF16 or 8-bit form).
TRI_DTYPES = frozenset({DataType.INT16, DataType.INT32, DataType.UINT16, DataType.UINT32,
                        DataType.FP16, DataType.FP32})


def _infer_tri(args, attrs, span):
    (diagonal,) = (a.type for a in args)
    if not isinstance(diagonal, ScalarType) or not diagonal.dtype.is_int:
        raise TypeCheckError(f"pl.tile.tri: diagonal is an integer (a column offset), not "
                             f"{diagonal}", span, hint="pass a Python int or an integer scalar")
    shape = static_shape("tile.tri", attrs["shape"], span)
    if len(shape) != 2:
        raise TypeCheckError(f"pl.tile.tri: shape {list(shape)} must be [rows, cols]", span)
    dtype = attrs["dtype"]
    if dtype not in TRI_DTYPES:
        raise TypeCheckError(
            f"pl.tile.tri: dtype must be one of INT16, INT32, UINT16, UINT32, FP16, FP32 "
            f"(what TTRI writes), got {getattr(dtype, 'name', dtype)!r}", span,
            hint="make the mask in one of them and pl.cast it")
    if not isinstance(attrs["upper"], bool):
        raise TypeCheckError(f"pl.tile.tri: upper must be True or False, got "
                             f"{attrs['upper']!r}", span)
    tile = row_major_tile("tile.tri", shape, dtype, "TTRI", span)
    return written_region("tile.tri", tile, attrs["valid_shape"], span)


register(
    OpDef(
        "tri",
        (OpParam("diagonal", "value"), OpParam("shape", "attr"),
         OpParam("valid_shape", "attr", None), OpParam("dtype", "attr", DataType.INT32),
         OpParam("upper", "attr", False)),
        _infer_tri,
        "tile",
        "A new Vec tile of `shape` holding a triangular mask of ones and zeros of `dtype` "
        "(INT16, INT32, UINT16, UINT32, FP16 or FP32), as TTRI writes it: element (i, j) is "
        "one where j <= i + diagonal, or where j >= i + diagonal with upper=True (torch.tril "
        "/ torch.triu of ones: 0 includes the main diagonal, a positive diagonal moves the "
        "boundary right), zero elsewhere.  `diagonal` may be a run-time integer scalar; "
        "every integer means what it says (device code clamps it to the tile's extents "
        "first).  Only `valid_shape` (constant extents, the whole tile by default) is "
        "written.",
        dtypes=TRI_DTYPES,
        emit="tri",
        isa="ttri",
    )
)


_OLDER_SELS = ("pl.tile.sels(lhs, rhs, select_mode) is upstream's older form, whose "
               "select_mode values are target-defined: it is not supported")
_MASK_FORM = ("use the mask form pl.tile.sels(mask, src, tmp, scalar): src where the BOOL "
              "mask from pl.cmp holds, the scalar elsewhere (pl.sel picks between two tiles)")


def _infer_sels(args, attrs, span):
    ops = get_op("sels").operands(args, attrs)
    tmp, scalar = ops["tmp"], ops["scalar"]
    tmp_is_scalar = tmp is not None and isinstance(tmp.type, ScalarType)
    # sels(lhs, rhs, mode) and sels(lhs, rhs, select_mode=mode): no tile in tmp's place.
    if tmp is None or (tmp_is_scalar and scalar is None):
        raise TypeCheckError(_OLDER_SELS, span, hint=_MASK_FORM)
    if scalar is None or tmp_is_scalar:
        raise TypeCheckError("pl.tile.sels takes four operands: mask, src, a scratch tile "
                             "tmp, then the scalar", span, hint=_MASK_FORM)
    mask, src = ops["mask"].type, ops["src"].type
    for what, t in (("mask", mask), ("src", src), ("tmp", tmp.type)):
        if not isinstance(t, TileType):
            raise TypeCheckError(f"pl.tile.sels: {what} must be a tile", span,
                                 hint="load the tensor into a tile with pl.load")
    alike("tile.sels", mask, src, span, "shape")
    if mask.dtype is not DataType.BOOL:
        raise TypeCheckError(f"pl.tile.sels: the mask must be BOOL (from pl.cmp), got "
                             f"{mask.dtype.name}", span, hint=_MASK_FORM)
    check_dtype("tile.sels", src, NUMERIC, span)
    scalar_operand("tile.sels", scalar.type, src, span)
    return TileType(src.shape, src.dtype, valid_shape=meet_valid(mask, src))


register(
    OpDef(
        "sels",
        (OpParam("mask", "value"), OpParam("src", "value"), OpParam("tmp", "value", None),
         OpParam("scalar", "value", None, aliases=("select_mode",))),
        _infer_sels,
        "select_scalar",
        "Elementwise mask ? src : scalar (TSELS), with a BOOL mask from pl.cmp of src's "
        "shape (pl.sel's encoding); the scalar is converted once to src's dtype, as every "
        "scalar operand is.  `tmp` and `scalar` are required (their None defaults only let "
        "the older form be recognised); `tmp` is upstream's scratch tile (A2/A3 keeps the "
        "scalar in it): it is neither read nor written here.  Upstream's older form "
        "sels(lhs, rhs, select_mode), whose modes are target-defined, is refused at its "
        "line.",
        emit="select_scalar",
        isa="tsels",
    )
)
