"""Gathers and scatters through an index tile: pl.tile.mgather reads a global tensor at the
indices a tile holds (pto-isa's MGATHER), pl.tile.mscatter writes a tile into a global
tensor at them (MSCATTER); pl.tile.gather (TGATHER) and pl.tile.gatherb (TGATHERB) gather
within a tile.

An index is an INT32 or UINT32 element, read as the unsigned 64-bit number pto-isa's CPU
model makes of it (a negative INT32 is 2**64 + i).  Each gather_oob= policy is the CPU
model's: "clamp" reads the last row / element for any index past the end (a negative one
too), "wrap" reads index % capacity, "zero" gives 0; "undefined" promises every index is
in range, and the simulators refuse a kernel that breaks the promise (KernelError).  A
scatter has no policy: an index out of range is refused the same way.  Scattered
elements are written in row-major order of the source tile, so where two share an index
the later one stays (the CPU model's order; the ISA leaves it to the implementation).
"""

from __future__ import annotations

import math

from ..dtypes import DataType
from ..errors import InternalError, TypeCheckError
from ..types import MemorySpace, TensorType, TileType, describe
from .inference import check_dtype, fmt_shape
from .registry import OpDef, OpParam, get_op, register

# What MGATHER / MSCATTER take on both backends (pto-isa's CPU model, A2/A3 and A5).
GATHER_DTYPES = frozenset({DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16,
                           DataType.INT32, DataType.UINT32, DataType.FP16, DataType.BF16,
                           DataType.FP32})
INDEX_DTYPES = frozenset({DataType.INT32, DataType.UINT32})
# Upstream's spellings (a name, or its number) of the coalesce and gather_oob policies.
COALESCE = ("row", "elem")
GATHER_OOB = ("undefined", "clamp", "wrap", "zero")


def policy(value, names: tuple[str, ...]) -> str | None:
    """The policy name `value` spells (a name, or its index as upstream's ints), else None."""
    if isinstance(value, str) and value in names:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    return None


def mgather_policies(attrs: dict) -> tuple[str, str]:
    """(coalesce, gather_oob) of a checked pl.tile.mgather call's attributes, as names."""
    coalesce, oob = policy(attrs["coalesce"], COALESCE), policy(attrs["gather_oob"], GATHER_OOB)
    if coalesce is None or oob is None:
        raise InternalError(f"an unchecked pl.tile.mgather reached code generation: {attrs}")
    return coalesce, oob


def mscatter_coalesce(attrs: dict) -> str:
    """The coalesce form of a checked pl.tile.mscatter call's attributes, as a name."""
    coalesce = policy(attrs["coalesce"], COALESCE)
    if coalesce is None:
        raise InternalError(f"an unchecked pl.tile.mscatter reached code generation: {attrs}")
    return coalesce


def _policy(name: str, value, names: tuple[str, ...], span) -> str:
    chosen = policy(value, names)
    if chosen is None:
        raise TypeCheckError(
            f"pl.tile.mgather: {name}={value!r} is not one of "
            f"{', '.join(repr(n) for n in names)} (or 0-{len(names) - 1})", span)
    return chosen


def _table(op: str, t, span, rows: bool = False) -> TensorType:
    """The tensor a gather reads or a scatter writes: rank 2, or (`rows`: the row forms)
    any rank from 2 up, read as its rows (table_rows)."""
    if not isinstance(t, TensorType) or not (len(t.shape) == 2 or rows and len(t.shape) > 2) \
            or not all(isinstance(d, int) for d in t.shape):
        kind = "a tensor of rank 2 or more" if rows else "a rank-2 tensor"
        raise TypeCheckError(f"pl.{op}: the table must be {kind} of constant shape, "
                             f"got {describe(t)}", span,
                             hint="pl.reshape the tensor to [rows, cols]")
    check_dtype(op, t, GATHER_DTYPES, span)
    return t


def table_rows(t: TensorType) -> int:
    """The rows the row forms of pl.tile.mgather / pl.tile.mscatter index in a packed tensor
    of any rank: [A, B, ..., d] is A * B * ... rows of d (upstream's KV cache
    [blockNum, blockSize, 1, d] is blockNum * blockSize rows)."""
    return math.prod(t.shape[:-1])


def _index_tile(op: str, t, span) -> TileType:
    if not isinstance(t, TileType) or len(t.shape) != 2 or t.dtype not in INDEX_DTYPES:
        raise TypeCheckError(f"pl.{op}: idx must be an INT32 or UINT32 tile [rows, cols], got "
                             f"{describe(t)}", span, hint="pl.cast the indices to pl.INT32")
    return t


def _infer_mgather(args, attrs, span):
    if attrs["target_memory"] is not MemorySpace.Vec:
        raise TypeCheckError(
            "pl.tile.mgather gathers into Vec only here: the gather into Mat (L1, NZ layout, "
            "with a GM index tensor) is not modelled", span,
            hint="gather into Vec and pl.move the tile to Mat")
    ops = get_op("tile.mgather").operands(args, attrs)
    if ops["scratch"] is not None:
        raise TypeCheckError("pl.tile.mgather takes scratch= only for a Mat destination, which "
                             "is not modelled here", span, hint="drop scratch=")
    coalesce = _policy("coalesce", attrs["coalesce"], COALESCE, span)
    table = _table("tile.mgather", ops["mem"].type, span, rows=coalesce == "row")
    index = _index_tile("tile.mgather", ops["idx"].type, span)
    _policy("gather_oob", attrs["gather_oob"], GATHER_OOB, span)
    if coalesce == "elem":
        shape, indexed = index.shape, tuple(index.valid)
    elif index.shape[0] != 1:
        raise TypeCheckError(
            f"pl.tile.mgather(coalesce='row') reads one row index per result row from an index "
            f"tile [1, R], got {fmt_shape(index.shape)}", span,
            hint="reshape the indices to one row, or gather elements with coalesce='elem'")
    else:
        shape, indexed = (index.shape[1], table.shape[-1]), (index.valid[1], table.shape[-1])
    valid = _gathered_region(attrs["valid_shape"], indexed, span)
    return TileType(tuple(shape), table.dtype,
                    valid_shape=None if valid == tuple(shape) else valid)


def _gathered_region(valid_shape, indexed: tuple, span) -> tuple:
    """The region pl.tile.mgather gathers: `valid_shape` (constant, inside the region the
    index tile's valid part covers), else that region."""
    if valid_shape is None:
        return indexed
    if not isinstance(valid_shape, tuple) or len(valid_shape) != 2 or any(
            not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= limit
            for v, limit in zip(valid_shape, indexed, strict=True)):
        shown = list(valid_shape) if isinstance(valid_shape, tuple) else valid_shape
        raise TypeCheckError(
            f"pl.tile.mgather: valid_shape={shown!r} must be two constants within the "
            f"{fmt_shape(indexed)} the index tile's valid region gives", span)
    return valid_shape


def _infer_mscatter(args, attrs, span):
    src, idx, out = args
    if not isinstance(src.type, TileType) or len(src.type.shape) != 2:
        raise TypeCheckError(f"pl.tile.mscatter: src must be a tile [rows, cols], got "
                             f"{describe(src.type)}", span)
    coalesce = policy(attrs["coalesce"], COALESCE)
    if coalesce is None:
        raise TypeCheckError(
            f"pl.tile.mscatter: coalesce={attrs['coalesce']!r} is not one of "
            f"{', '.join(repr(n) for n in COALESCE)} (or 0-{len(COALESCE) - 1})", span)
    table = _table("tile.mscatter", out.type, span, rows=coalesce == "row")
    index = _index_tile("tile.mscatter", idx.type, span)
    if src.type.dtype != table.dtype:
        raise TypeCheckError(f"pl.tile.mscatter: a {src.type.dtype.name} tile scattered into a "
                             f"{table.dtype.name} tensor", span, hint="pl.cast the tile first")
    if coalesce == "row":
        rows, cols = src.type.valid
        if index.shape[0] != 1 or index.valid[1] < rows or src.type.shape[1] > table.shape[-1]:
            raise TypeCheckError(
                f"pl.tile.mscatter(coalesce='row') writes row r of src ({describe(src.type)}) to "
                f"row idx[0, r] of the tensor ({describe(table)}): idx must be a [1, R] tile "
                f"with at least {rows} valid columns, and src no wider than the tensor, got "
                f"idx {describe(index)}", span)
        return table
    if index.shape != src.type.shape or index.valid != src.type.valid:
        raise TypeCheckError(
            f"pl.tile.mscatter: idx ({describe(index)}) must have src's shape and valid region "
            f"({describe(src.type)}): one index per element", span)
    return table


register(
    OpDef(
        "tile.mgather",
        (
            OpParam("mem", "value"),
            OpParam("idx", "value"),
            OpParam("coalesce", "attr", "row"),
            OpParam("gather_oob", "attr", "undefined"),
            OpParam("target_memory", "attr", MemorySpace.Vec),
            OpParam("scratch", "value", None),
            OpParam("valid_shape", "attr", None),
        ),
        _infer_mgather,
        "gather",
        "Gather from the tensor `mem` (rank 2) through the INT32 / UINT32 index tile `idx` into "
        "a new Vec tile.  coalesce='row' (the default): result row r is row idx[0, r] of mem "
        "(idx is [1, R], the result [R, mem's columns]); mem may have rank > 2, read as its "
        "rows ([A, B, 1, d] is A * B rows of d; it must be packed).  coalesce='elem': "
        "result[r, c] is "
        "element idx[r, c] of mem in row-major order (the result has idx's shape; mem must "
        "be packed, its rows adjacent).  Only the valid region is gathered; the padding "
        "holds 0.  gather_oob= says what an index past the end reads: 'undefined' (the "
        "default) promises none is, and the simulators refuse the kernel (KernelError) if "
        "one is; 'clamp' the last row / element, 'wrap' index % capacity, 'zero' 0.  An "
        "index is read as unsigned (a negative INT32 is past the end).  valid_shape=[r, c] "
        "gathers that part alone (constants, inside what idx's valid region indexes).  "
        "target_memory=Mat and scratch= are refused.",
        dtypes=GATHER_DTYPES,
        emit="mgather",
        isa="tmgather",
    )
)
register(
    OpDef(
        "tile.mscatter",
        (OpParam("src", "value"), OpParam("idx", "value"), OpParam("output_tensor", "value"),
         OpParam("coalesce", "attr", "elem")),
        _infer_mscatter,
        "gather",
        "Scatter the Vec tile `src` into the tensor `output_tensor` (rank 2); returns the "
        "tensor, whose other elements keep their values.  coalesce='elem' (the default): "
        "element src[r, c] of the valid region is written to element idx[r, c] of the tensor "
        "in row-major order (idx an INT32 / UINT32 tile of src's shape; the tensor packed, "
        "its rows adjacent).  coalesce='row': row r of src's valid region is written to row "
        "idx[0, r] of the tensor (idx [1, R]; src no wider than the tensor), a tensor of "
        "rank > 2 read as its rows as for pl.tile.mgather.  Elements and "
        "rows are written in row-major order of src, so of two with one index the later "
        "stays.  An index past the end is refused by the simulators (KernelError).",
        dtypes=GATHER_DTYPES,
        emit="mscatter",
        isa="tmscatter",
        writes=2,
    )
)


# -- gathers within on-chip memory: pto-isa's TGATHER (index form) and TGATHERB
_TGATHER_DTYPES = frozenset({DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32})
_BLOCK = 32  # bytes TGATHERB moves per offset


def _whole_blocks(op: str, t: TileType, what: str, span) -> None:
    """Refuses a tile whose rows are not whole 32-byte blocks: the instructions index the
    tile's storage, whose rows the device pads to 32 bytes."""
    if len(t.shape) != 2 or (t.shape[1] * t.dtype.itemsize) % _BLOCK:
        raise TypeCheckError(
            f"pl.{op}: {what} ({describe(t)}) must have rows of whole 32-byte blocks "
            f"({_BLOCK // t.dtype.itemsize} {t.dtype.name} elements)", span,
            hint="widen the tile and set its valid region with pl.set_validshape")


def _infer_tile_gather(args, attrs, span):
    src, indices, tmp = (a.type for a in args)
    if not isinstance(src, TileType):
        raise TypeCheckError(f"pl.tile.gather: src must be a tile, got {describe(src)}", span)
    check_dtype("tile.gather", src, _TGATHER_DTYPES, span)
    _whole_blocks("tile.gather", src, "src", span)
    if not isinstance(indices, TileType) or len(indices.shape) != 2 or \
            indices.dtype is not DataType.INT32:
        raise TypeCheckError(f"pl.tile.gather: indices must be an INT32 tile [rows, cols], got "
                             f"{describe(indices)}", span, hint="pl.cast the indices to pl.INT32")
    if not isinstance(tmp, TileType) or tmp.dtype is not DataType.INT32 or \
            tuple(tmp.shape) != tuple(indices.valid):
        raise TypeCheckError(
            f"pl.tile.gather: tmp must be an INT32 tile of the indices' valid shape "
            f"{fmt_shape(indices.valid)} (A2/A3's TGATHER works in it), got {describe(tmp)}",
            span, hint=f"pl.create_tile({list(indices.valid)}, pl.INT32)")
    return TileType(indices.shape, src.dtype, valid_shape=indices.valid_shape)


def _infer_gatherb(args, attrs, span):
    src, offsets = (a.type for a in args)
    if not isinstance(src, TileType):
        raise TypeCheckError(f"pl.tile.gatherb: src must be a tile, got {describe(src)}", span)
    check_dtype("tile.gatherb", src, GATHER_DTYPES, span)
    _whole_blocks("tile.gatherb", src, "src", span)
    if not isinstance(offsets, TileType) or offsets.dtype is not DataType.UINT32:
        raise TypeCheckError(f"pl.tile.gatherb: offsets must be a UINT32 tile of byte offsets, "
                             f"got {describe(offsets)}", span,
                             hint="pl.cast the offsets to pl.UINT32")
    _whole_blocks("tile.gatherb", offsets, "offsets", span)
    per = _BLOCK // src.dtype.itemsize
    valid = offsets.valid_shape
    return TileType((offsets.shape[0], offsets.shape[1] * per), src.dtype,
                    valid_shape=None if valid is None else (valid[0], valid[1] * per))


register(
    OpDef(
        "tile.gather",
        (OpParam("src", "value"), OpParam("indices", "value"), OpParam("tmp", "value")),
        _infer_tile_gather,
        "gather",
        "Gather within a tile (TGATHER, index form): result[r, c] is element indices[r, c] of "
        "src in row-major order, 0 for an index outside [0, src's element count) (pto-isa's "
        "CPU model; the ISA leaves it to the target).  The result has the INT32 tile "
        "indices' shape and src's dtype (FP16, FP32, INT16, INT32; rows of whole 32-byte "
        "blocks); only the valid region is gathered, the padding holds 0.  tmp is an INT32 "
        "scratch tile of indices' valid shape (contents undefined afterwards).",
        dtypes=_TGATHER_DTYPES,
        emit="index_gather",
        isa="tgather",
    )
)
register(
    OpDef(
        "tile.gatherb",
        (OpParam("src", "value"), OpParam("offsets", "value")),
        _infer_gatherb,
        "gather",
        "Gather 32-byte blocks within a tile (TGATHERB): block c of result row r is the 32 "
        "bytes of src's storage (row-major) from byte offsets[r, c], so each UINT32 offset "
        "column becomes 32 / itemsize result columns (an offset need not be a multiple of "
        "the element size).  A block reaching past src's end is refused by the simulators "
        "(KernelError; pto-isa leaves it unwritten).  Only the valid region is gathered, the "
        "padding holds 0.",
        dtypes=GATHER_DTYPES,
        emit="index_gather",
        isa="tgatherb",
    )
)


# -- tensor level: pl.tensor.gather's flat form, lowered to pl.tile.mgather (TensorToTile)
_TENSOR_GATHER_DTYPES = _TGATHER_DTYPES  # upstream's: FP16, FP32, INT16, INT32
_OTHER_FORMS = ("mask_pattern", "output_dtype", "kvalue", "cmp_mode", "out_cols", "count_dtype")


def _infer_tensor_gather(args, attrs, span):
    ops = get_op("tensor.gather").operands(args, attrs)
    given = [name for name in _OTHER_FORMS if attrs[name] is not None] + (
        ["offset"] if attrs["offset"] != 0 else [])
    if given:
        raise TypeCheckError(
            f"pl.tensor.gather's mask and compare forms ({', '.join(given)}=) are not supported "
            "here", span, hint="gather by index: pl.tensor.gather(input, index=idx)")
    dim, index = ops["dim"], ops["index"]
    if isinstance(getattr(dim, "type", None), TensorType) and index is None:
        dim, index = None, dim  # pl.tensor.gather(input, idx): the flat form
    if dim is not None:
        raise TypeCheckError("pl.tensor.gather's axis form (dim=) is not supported yet: only the "
                             "flat form, input.reshape(-1)[index]", span,
                             hint="add the row offsets to the indices and gather flat")
    table = ops["input"].type
    if not isinstance(table, TensorType):
        raise TypeCheckError(f"pl.tensor.gather: input must be a tensor, got {describe(table)}",
                             span, hint="gather from a tile with pl.tile.gather")
    check_dtype("tensor.gather", table, _TENSOR_GATHER_DTYPES, span)
    if index is None or not isinstance(index.type, TensorType) or len(index.type.shape) != 2 \
            or index.type.dtype is not DataType.INT32:
        raise TypeCheckError("pl.tensor.gather: index must be a rank-2 INT32 tensor, got "
                             f"{describe(index.type) if index is not None else 'none'}", span)
    return TensorType(index.type.shape, table.dtype)


def tensor_gather_operands(call) -> tuple:
    """(table, index) of a checked pl.tensor.gather call (its flat form)."""
    ops = get_op("tensor.gather").operands(call.args, dict(call.attrs))
    return ops["input"], ops["index"] if ops["index"] is not None else ops["dim"]


register(
    OpDef(
        "tensor.gather",
        (
            OpParam("input", "value"),
            OpParam("dim", "value", None),
            OpParam("index", "value", None),
            *(OpParam(name, "attr", None) for name in _OTHER_FORMS),
            OpParam("offset", "attr", 0),
        ),
        _infer_tensor_gather,
        "gather_tensor",
        "Upstream's flat gather of tensors in a pl.at block: input.reshape(-1)[index], a "
        "tensor of the rank-2 INT32 index's shape and input's dtype (FP16, FP32, INT16, "
        "INT32).  `input` is read in global memory (a tensor the block is given, packed); "
        "every index must lie inside it (the simulators refuse the kernel otherwise, "
        "KernelError).  Lowered to pl.tile.mgather(input, index tile, coalesce='elem').  The "
        "axis form (dim=), the mask form and the compare form are refused.",
        dtypes=_TENSOR_GATHER_DTYPES,
    )
)


# -- tensor level: upstream's pl.paged_gather (Vec form), lowered to MGATHER's two forms
_PAGED_DTYPES = frozenset({DataType.FP16, DataType.BF16, DataType.FP32, DataType.INT8})
PAGED_L1 = ("space=pl.Mem.Mat (the default, upstream's gather into L1 for pl.matmul) is not "
            "supported: a tensor-level value held in L1 (Mat) does not exist here, tensor "
            "values in a pl.at block live in global memory and are computed through Vec tiles")


def paged_gather_operands(call) -> tuple:
    """(src, indices, block_table) of a checked pl.paged_gather call."""
    ops = get_op("paged_gather").operands(call.args, dict(call.attrs))
    return ops["src"], ops["indices"], ops["block_table"]


def _positive(name: str, value, span) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise TypeCheckError(f"pl.paged_gather: {name} must be a positive integer constant, "
                             f"got {value!r}", span)
    return value


def _paged_index(name: str, t, span, one_row: bool) -> int:
    """The count of a rank-2 INT32 tensor of constant shape ([1, n] where `one_row`)."""
    if not isinstance(t, TensorType) or t.dtype is not DataType.INT32 or \
            len(t.shape) != 2 or not all(isinstance(d, int) for d in t.shape) or \
            one_row and t.shape[0] != 1:
        form = "[1, n]" if one_row else "of rank 2 (read flat)"
        raise TypeCheckError(f"pl.paged_gather: {name} must be an INT32 tensor {form}, got "
                             f"{describe(t)}", span,
                             hint="pl.cast it to pl.INT32 and reshape it on the host")
    return t.shape[-1]


def _infer_paged_gather(args, attrs, span):
    ops = get_op("paged_gather").operands(args, attrs)
    if attrs["space"] is not MemorySpace.Vec:
        raise TypeCheckError(PAGED_L1, span, hint="gather into Vec: space=pl.Mem.Vec")
    if attrs["is_trans"]:
        raise TypeCheckError("pl.paged_gather: is_trans=True lays the rows out for the cube "
                             "(upstream requires space=Mat), which is not supported", span)
    src = ops["src"].type
    if not isinstance(src, TensorType) or len(src.shape) != 2 or \
            not all(isinstance(d, int) for d in src.shape):
        raise TypeCheckError(f"pl.paged_gather: src must be a rank-2 tensor of constant shape "
                             f"(the paged pool [rows, cols]), got {describe(src)}", span)
    check_dtype("paged_gather", src, _PAGED_DTYPES, span)
    n = _paged_index("indices", ops["indices"].type, span, True)
    _paged_index("block_table", ops["block_table"].type, span, False)
    block = _positive("block_size", attrs["block_size"], span)
    size = _positive("size", attrs["size"], span)
    rows = _positive("max_indices", attrs["max_indices"], span)
    if block & (block - 1):
        raise TypeCheckError(
            f"pl.paged_gather: block_size={block} must be a power of two here: the physical "
            "row is computed on Vec tiles with exact integer shifts and masks (idx >> log2, "
            "idx & (block_size - 1)), pto-isa having no exact integer division", span)
    if attrs["col_off"] != 0 or size != src.shape[1]:
        raise TypeCheckError(
            f"pl.paged_gather: only whole rows are gathered here (col_off=0, size = src's "
            f"{src.shape[1]} columns), got col_off={attrs['col_off']!r}, size={size}: "
            "MGATHER's row form reads a row from its start", span,
            hint="keep the gathered columns in a tensor of their own")
    if rows != n:
        raise TypeCheckError(
            f"pl.paged_gather: max_indices ({rows}) must be the number of indices ({n}) here: "
            "the result is a tensor value, every row of which is defined", span,
            hint=f"pass max_indices={n}")
    return TensorType((rows, size), src.dtype)


register(
    OpDef(
        "paged_gather",
        (OpParam("src", "value"), OpParam("indices", "value"), OpParam("block_table", "value"),
         OpParam("block_size", "attr"), OpParam("size", "attr"), OpParam("max_indices", "attr"),
         OpParam("space", "attr", MemorySpace.Mat), OpParam("col_off", "attr", 0),
         OpParam("is_trans", "attr", False), OpParam("is_b_matrix", "attr", False)),
        _infer_paged_gather,
        "gather_tensor",
        "Upstream's paged gather in a pl.at block, its Vec form (space=pl.Mem.Vec): row r of "
        "the result [max_indices, size] is row block_table[idx // block_size] * block_size "
        "+ idx % block_size of the paged pool src [rows, size] (FP16, BF16, FP32, INT8), "
        "idx = indices[0, r] (INT32 [1, n]; block_table an INT32 rank-2 tensor read flat, "
        "upstream's [n] / [m] reshaped on the host).  src, "
        "indices and block_table are tensors the block is given.  Here block_size is a "
        "power of two, size is src's row length with col_off=0, and max_indices is n.  An "
        "index whose block or row lies outside block_table or src is refused by the "
        "simulators (KernelError).  Lowered to Vec tile code: the indices loaded, shifted "
        "and masked, the physical blocks gathered with pl.tile.mgather(coalesce='elem'), "
        "the rows with pl.tile.mgather(coalesce='row').  is_b_matrix is a layout hint that "
        "changes no value.  The L1 form (space=Mat, the default, and is_trans) is refused.",
        dtypes=_PAGED_DTYPES,
    )
)
