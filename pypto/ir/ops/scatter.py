"""Scatters of tensors in a pl.at block (upstream's tensor-level scatter family).

pl.scatter_update(input, -2, index, src) writes rows: row k of src (k = i * s + j, the
row-major position of index[i, j]) becomes row index[i, j] of input.  Upstream's rank-4
form (a KV cache input [blockNum, blockSize, 1, d], src [b, s, 1, d]) is that write on the
rows: input read as [blockNum * blockSize, d] (the row forms of MGATHER / MSCATTER take a
packed tensor of any rank as its rows), src as [b * s, d].  It is a write of
`input` (OpDef.writes), so dependency inference orders readers after it.  TensorToTile
(passes/tensor_scatter.py) lowers it chunk by chunk of src's rows to pto-isa's MSCATTER in
its row form: the chunk's indices are read with MGATHER (element form) from the index
tensor, so both operands stay in global memory.  Rows are written in src's order, so where
two share an index the later row (the larger k) stays, as in pto-isa's CPU model.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import TensorType, TileType, describe
from .gather import GATHER_DTYPES, INDEX_DTYPES
from .inference import check_dtype, fmt_shape
from .registry import OpDef, OpParam, get_op, register


def scatter_update_operands(args, attrs) -> tuple:
    """(input, index, src) of a pl.scatter_update call: upstream's three spellings
    `(input, dim, index, src)`, `(input, index, src, dim=-2)` and `(input, dim, index=,
    src=)` all bind here (the parser puts a positional index where dim would go)."""
    ops = get_op("scatter_update").operands(args, attrs)
    return ops["input"], ops["index"], ops["src"]


def _infer_scatter_update(args, attrs, span):
    op = "scatter_update"
    table, index, src = (a.type for a in scatter_update_operands(args, attrs))
    if attrs["dim"] != -2:
        raise TypeCheckError(f"pl.scatter_update: only dim=-2 (whole rows) is supported, as "
                             f"upstream, got dim={attrs['dim']!r}", span)
    if not isinstance(table, TensorType) or not all(isinstance(d, int) for d in table.shape):
        raise TypeCheckError(f"pl.scatter_update: input must be a tensor of constant shape, "
                             f"got {describe(table)}", span,
                             hint="scatter into tiles with pl.tile.mscatter")
    paged = len(table.shape) == 4
    if paged and table.shape[2] != 1 or len(table.shape) not in (2, 4):
        raise TypeCheckError(f"pl.scatter_update: input must be [rows, d] or upstream's KV "
                             f"cache [blockNum, blockSize, 1, d], got "
                             f"{fmt_shape(table.shape)}", span)
    check_dtype(op, table, GATHER_DTYPES, span)
    if not isinstance(index, TensorType) or len(index.shape) != 2 or \
            index.dtype not in INDEX_DTYPES:
        raise TypeCheckError(f"pl.scatter_update: index must be a rank-2 INT32 or UINT32 "
                             f"tensor [b, s], got {describe(index)}", span,
                             hint="pl.cast the indices to pl.INT32 on the host")
    if not isinstance(src, TensorType) or src.dtype is not table.dtype:
        raise TypeCheckError(f"pl.scatter_update: src must be a {table.dtype.name} tensor "
                             f"(input's dtype), got {describe(src)}", span,
                             hint="pl.cast src first")
    b, s = index.shape
    d = table.shape[-1]
    want, form = ((b, s, 1, d), "[b, s, 1, d]") if paged else ((b * s, d), "[b * s, d]")
    if tuple(src.shape) != want:
        raise TypeCheckError(
            f"pl.scatter_update: src must be {form} = {fmt_shape(want)} (one row per index of "
            f"the {fmt_shape(index.shape)} index, input's row length"
            + (", as the rank-4 input" if paged else "") + f"), got {fmt_shape(src.shape)}",
            span)
    return table


register(
    OpDef(
        "scatter_update",
        (OpParam("input", "value"), OpParam("dim", "attr", -2), OpParam("index", "value"),
         OpParam("src", "value")),
        _infer_scatter_update,
        "scatter_tensor",
        "Upstream's row scatter in a pl.at block, a write of `input` [rows, d] (FP16, BF16, "
        "FP32, INT8/16/32, UINT8/16/32): for each position k = i * s + j of the rank-2 "
        "INT32 / UINT32 index [b, s], row index[i, j] of input becomes row k of src "
        "[b * s, d]; returns input, its other rows unchanged.  Rows are written in order of "
        "k, so of two with one index the later stays.  An index outside [0, rows) is refused "
        "by the simulators (KernelError).  Only dim=-2; input, index and src are tensors "
        "the block is given (read and written in global memory).  Lowered to "
        "pl.tile.mscatter(coalesce='row') per chunk of src's rows, the chunk's indices "
        "gathered with pl.tile.mgather(coalesce='elem').  Upstream's rank-4 form (the KV "
        "cache input [blockNum, blockSize, 1, d], src [b, s, 1, d]) is the same write on "
        "the rows: input as [blockNum * blockSize, d], src as [b * s, d]; there src is "
        "read with pl.tile.mgather(coalesce='row') too, so it must be a tensor the block is "
        "given (not a slice).",
        dtypes=GATHER_DTYPES,
        writes=0,
        reads_destination=True,
    )
)


# -- pl.tile.scatter: pto-isa's TSCATTER (index form), a scatter within a tile
# TSCATTER's index element per destination element width (pto-isa's A2/A3 and A5 checks:
# 4-byte elements take 4-byte indices, 2- and 1-byte elements 2-byte ones).
_TSCATTER_INDEX = {4: frozenset({DataType.INT32, DataType.UINT32}),
                   2: frozenset({DataType.INT16, DataType.UINT16}),
                   1: frozenset({DataType.INT16, DataType.UINT16})}
_BLOCK = 32  # bytes: the device pads a Vec tile's rows to whole blocks


def tscatter_index_dtypes(dtype: DataType) -> frozenset:
    """The index element types TSCATTER takes for `dtype` elements."""
    return _TSCATTER_INDEX[dtype.itemsize]


def _index_names(dtype: DataType) -> str:
    return " or ".join(sorted(d.name for d in tscatter_index_dtypes(dtype)))


def _infer_tile_scatter(args, attrs, span):
    op = "tile.scatter"
    dst, src, idx = (a.type for a in args)
    if not isinstance(dst, TileType) or len(dst.shape) != 2:
        raise TypeCheckError(f"pl.tile.scatter: dst must be a tile [rows, cols], got "
                             f"{describe(dst)}", span,
                             hint="scatter into a tensor with pl.tile.mscatter")
    check_dtype(op, dst, GATHER_DTYPES, span)
    if dst.shape[0] != 1 and (dst.shape[1] * dst.dtype.itemsize) % _BLOCK:
        raise TypeCheckError(
            f"pl.tile.scatter: dst ({describe(dst)}) must be one row or have rows of whole "
            f"32-byte blocks ({_BLOCK // dst.dtype.itemsize} {dst.dtype.name} elements): an "
            "index addresses dst's row-major storage, whose rows the device pads to 32 bytes",
            span, hint="widen the tile and set its valid region with pl.set_validshape")
    if not isinstance(src, TileType) or len(src.shape) != 2 or src.dtype is not dst.dtype:
        raise TypeCheckError(f"pl.tile.scatter: src must be a {dst.dtype.name} tile (dst's "
                             f"dtype) [rows, cols], got {describe(src)}", span,
                             hint="pl.cast src first")
    if not isinstance(idx, TileType) or idx.dtype not in tscatter_index_dtypes(dst.dtype):
        raise TypeCheckError(
            f"pl.tile.scatter: indexes must be an {_index_names(dst.dtype)} tile for "
            f"{dst.dtype.itemsize}-byte {dst.dtype.name} elements (TSCATTER's index width), "
            f"got {describe(idx)}", span,
            hint=f"pl.cast the indices to pl.{min(_index_names(dst.dtype).split(' or '))}")
    if tuple(idx.shape) != tuple(src.shape):
        raise TypeCheckError(
            f"pl.tile.scatter: indexes ({describe(idx)}) must have src's shape "
            f"({describe(src)}): one flat index per element", span)
    return TileType(dst.shape, dst.dtype, valid_shape=dst.valid_shape)


register(
    OpDef(
        "tile.scatter",
        (OpParam("dst", "value"), OpParam("src", "value"), OpParam("indexes", "value")),
        _infer_tile_scatter,
        "gather",
        "Scatter within a tile (TSCATTER, index form): a copy of the Vec tile dst with "
        "element indexes[r, c] of its row-major storage (dst.flatten()[k]) set to src[r, c], "
        "for every [r, c] of the index tile's valid region in row-major order, so of two "
        "with one index the later stays.  src has dst's dtype (FP16, BF16, FP32, INT8/16/32, "
        "UINT8/16/32); indexes has src's shape, INT32 / UINT32 for 4-byte "
        "elements, INT16 / UINT16 for 2- and 1-byte ones (TSCATTER's); the index tile's valid "
        "region says which elements are written.  dst must be one row "
        "or have rows of whole 32-byte blocks.  An index outside [0, dst's element count) "
        "is refused by the simulators (KernelError).  Returns the new tile (dst's valid "
        "region); `t = pl.tile.scatter(t, src, idx)` updates t in place.",
        dtypes=GATHER_DTYPES,
        emit="tile_scatter",
        isa="tscatter",
    )
)


# -- tensor level: pl.scatter's index form, lowered to pl.tile.scatter row by row
_MASK_FORM = ("pl.scatter's mask form (mask_pattern=, dst=) is not supported: upstream "
              "writes input's rows into the columns of dst its mask pattern selects, dst "
              "keeping its other elements, while pto-isa's mask TSCATTER zeroes every column "
              "the pattern does not select (its CPU model within the valid region, A2/A3 and "
              "A5 the whole tile), so no instruction has upstream's meaning")


def tensor_scatter_operands(args, attrs) -> tuple:
    """(input, index, src) of a checked pl.scatter call (its index form)."""
    ops = get_op("tensor.scatter").operands(args, attrs)
    return ops["input"], ops["index"], ops["src"]


def _infer_tensor_scatter(args, attrs, span):
    ops = get_op("tensor.scatter").operands(args, attrs)
    if attrs["mask_pattern"] is not None or ops["dst"] is not None:
        raise TypeCheckError(_MASK_FORM, span,
                             hint="scatter by index: pl.scatter(input, -1, index, src)")
    table, index, src = ops["input"], ops["index"], ops["src"]
    if attrs["dim"] is None or index is None or src is None:
        raise TypeCheckError("pl.scatter's index form takes dim, index and src", span,
                             hint="pl.scatter(input, -1, index, src)")
    if attrs["dim"] != -1:
        raise TypeCheckError(f"pl.scatter: only dim=-1 (within each row) is supported, as "
                             f"upstream, got dim={attrs['dim']!r}", span)
    t = table.type
    if not isinstance(t, TensorType) or len(t.shape) != 2 or not all(
            isinstance(d, int) for d in t.shape):
        raise TypeCheckError(f"pl.scatter: input must be a rank-2 tensor of constant shape "
                             f"[rows, S], got {describe(t)}", span,
                             hint="scatter within a tile with pl.tile.scatter")
    check_dtype("scatter", t, GATHER_DTYPES, span)
    if not isinstance(src.type, TensorType) or src.type.dtype is not t.dtype or \
            len(src.type.shape) != 2 or src.type.shape[0] != t.shape[0] or \
            not isinstance(src.type.shape[1], int) or src.type.shape[1] > t.shape[1]:
        raise TypeCheckError(
            f"pl.scatter: src must be a {t.dtype.name} tensor [rows, K] with input's "
            f"{t.shape[0]} rows and K <= {t.shape[1]}, got {describe(src.type)}", span,
            hint="pl.cast src first" if isinstance(src.type, TensorType) and
            src.type.dtype is not t.dtype else None)
    if not isinstance(index.type, TensorType) or tuple(index.type.shape) != \
            tuple(src.type.shape) or index.type.dtype not in tscatter_index_dtypes(t.dtype):
        raise TypeCheckError(
            f"pl.scatter: index must be an {_index_names(t.dtype)} tensor of src's shape "
            f"{fmt_shape(src.type.shape)} for {t.dtype.itemsize}-byte {t.dtype.name} "
            f"elements, got {describe(index.type)}", span,
            hint="pl.cast the indices on the host")
    return t


register(
    OpDef(
        "tensor.scatter",
        (OpParam("input", "value"), OpParam("dim", "attr", None),
         OpParam("index", "value", None), OpParam("src", "value", None),
         OpParam("mask_pattern", "attr", None), OpParam("dst", "value", None)),
        _infer_tensor_scatter,
        "scatter_tensor",
        "Upstream's element scatter in a pl.at block (index form), a write of `input` "
        "[rows, S]: input[b, index[b, k]] = src[b, k] for every b and k, in order of k, so "
        "of two with one index in a row the later stays; returns input, its other elements "
        "unchanged.  dim must be -1; src [rows, K] (K <= S) has input's dtype (FP16, BF16, "
        "FP32, INT8/16/32, UINT8/16/32); index has src's shape, INT32 / UINT32 for 4-byte "
        "elements, INT16 / UINT16 for 2- and 1-byte ones.  An index outside [0, S) is "
        "refused by the simulators (KernelError).  input, index and src are tensors the "
        "block is given.  Lowered row by row to pl.tile.scatter (TSCATTER) of the loaded "
        "row and a store back.  The mask form (mask_pattern=, dst=) is refused.",
        dtypes=GATHER_DTYPES,
        writes=0,
        reads_destination=True,
    )
)
