"""Scatters of tensors in a pl.at block (upstream's tensor-level scatter family).

pl.scatter_update(input, -2, index, src) writes rows: row k of src (k = i * s + j, the
row-major position of index[i, j]) becomes row index[i, j] of input.  It is a write of
`input` (OpDef.writes), so dependency inference orders readers after it.  TensorToTile
(passes/tensor_scatter.py) lowers it chunk by chunk of src's rows to pto-isa's MSCATTER in
its row form: the chunk's indices are read with MGATHER (element form) from the index
tensor, so both operands stay in global memory.  Rows are written in src's order, so where
two share an index the later row (the larger k) stays, as in pto-isa's CPU model.
"""

from __future__ import annotations

from ..errors import TypeCheckError
from ..types import TensorType, describe
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
    if len(table.shape) == 4:
        raise TypeCheckError(
            f"pl.scatter_update: the rank-4 form (input [blockNum, blockSize, 1, d], got "
            f"{fmt_shape(table.shape)}) is not supported here: MSCATTER writes rows of a "
            "rank-2 tensor", span,
            hint="pass the cache as [blockNum * blockSize, d] and src as [b * s, d]")
    if len(table.shape) != 2:
        raise TypeCheckError(f"pl.scatter_update: input must be [rows, d], got "
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
    rows = index.shape[0] * index.shape[1]
    if tuple(src.shape) != (rows, table.shape[1]):
        raise TypeCheckError(
            f"pl.scatter_update: src must be [b * s, d] = {fmt_shape((rows, table.shape[1]))} "
            f"(one row per index of the {fmt_shape(index.shape)} index, input's row length), "
            f"got {fmt_shape(src.shape)}", span)
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
        "gathered with pl.tile.mgather(coalesce='elem').  The rank-4 form (input "
        "[blockNum, blockSize, 1, d]) is refused: pass it as [blockNum * blockSize, d].",
        dtypes=GATHER_DTYPES,
        writes=0,
    )
)
