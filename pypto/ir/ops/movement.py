"""Operators that move or view data: loads, stores, windows, reshapes, transposes,
padding and element reads."""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import (
    AtomicType,
    MemorySpace,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
)
from .inference import (
    alike,
    fmt_shape,
    require_block,
    require_rank2,
    static_shape,
    valid_min,
)
from .registry import (
    ANY,
    WITH_4BIT,
    OpDef,
    OpParam,
    register,
)

# -- movement


def _need(kind, t, what, op, span):
    if not isinstance(t, kind):
        raise TypeCheckError(f"pl.{op}: {what}", span)


def _const_value(e):
    """The int value of a constant index expression, else None (a runtime value)."""
    value = getattr(e, "value", None)
    return value if isinstance(value, int) and not hasattr(e, "name") else None


def window_extent(rank: int, extent) -> tuple:
    """The extent of a load's or store's window in a tensor of `rank` dimensions: a
    [rows, cols] tile of a [B, rows, cols] tensor (offsets [b, r, c]) is the window
    [1, rows, cols] of one batch."""
    return (1,) * (rank - len(extent)) + tuple(extent)


def _check_window(op, tensor, offsets, shape, span):
    rank = len(tensor.shape)
    batch_slab = rank == 3 and len(shape) == 2
    if (len(shape) != rank and not batch_slab) or len(offsets) != rank:
        raise TypeCheckError(
            f"pl.{op}: a value of rank {rank} needs {rank} offsets "
            f"and sizes, got {len(offsets)} and {len(shape)}",
            span,
            hint="a [rows, cols] tile of one batch of a [B, rows, cols] tensor takes the "
                 "offsets [b, row, col]" if rank == 3 else None,
        )
    shape = window_extent(rank, shape)
    for off, size, dim in zip(offsets, shape, tensor.shape, strict=True):
        start = _const_value(off)
        if not isinstance(size, int):
            continue  # an extent known only at run time: the tile's own bounds limit it
        if start is not None and (start < 0 or start + size > dim):
            raise TypeCheckError(
                f"pl.{op}: window {fmt_shape(shape)} at offset "
                f"{fmt_shape([getattr(o, 'value', '?') for o in offsets])} exceeds "
                f"{fmt_shape(tensor.shape)}",
                span,
                hint="every offset must lie in [0, size - window]; for a window that hangs "
                     "over the edge, load a tile with valid_shape=[rows, cols] of the part "
                     "inside",
            )


def _check_valid(op: str, valid, shape, span) -> None:
    """A valid region fits its tile; an extent known only at run time (an integer index
    expression) is limited to the tile's at run time."""
    if valid is None:
        return
    if not isinstance(valid, tuple) or len(valid) != len(shape) or any(
            (not isinstance(v, int) and not _runtime_extent(v))
            or (isinstance(v, int) and (v > s or v < 0))
            for v, s in zip(valid, shape, strict=True)):
        raise TypeCheckError(
            f"pl.{op}: valid_shape {fmt_shape(valid) if isinstance(valid, tuple) else valid!r} "
            f"must fit in the tile {fmt_shape(shape)}",
            span,
        )


def _runtime_extent(v) -> bool:
    t = getattr(v, "type", None)
    return (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype is not DataType.BOOL
            and not isinstance(v, bool))


def _infer_load(args, attrs, span):
    tensor, offsets = args
    _need(TensorType, tensor.type, "the first argument must be a tensor", "load", span)
    shape = static_shape("load", attrs["shapes"], span)
    _check_valid("load", attrs["valid_shape"], shape, span)
    # Only the valid region is read: a partial tile may hang over the tensor's edge.
    _check_window("load", tensor.type, offsets.items, attrs["valid_shape"] or shape, span)
    if not isinstance(attrs["target_memory"], MemorySpace):
        raise TypeCheckError("pl.load: target_memory must be a pl.Mem member", span)
    if not isinstance(attrs["pad_value"], PadValue):
        raise TypeCheckError("pl.load: pad_value must be a pl.PadValue member", span)
    return TileType(tuple(shape), tensor.type.dtype, valid_shape=attrs["valid_shape"])


def _infer_store(args, attrs, span):
    tile, offsets, tensor = args
    _need(TileType, tile.type, "the first argument must be a tile", "store", span)
    _need(TensorType, tensor.type, "the third argument must be a tensor", "store", span)
    if tile.type.dtype != tensor.type.dtype:
        raise TypeCheckError(
            f"pl.store: tile dtype {tile.type.dtype.name} differs from tensor dtype "
            f"{tensor.type.dtype.name}",
            span,
            hint="pl.cast the tile first",
        )
    _check_window("store", tensor.type, offsets.items, tile.type.valid, span)
    shapes = attrs.get("shapes")
    if shapes is not None and tuple(shapes) not in (tuple(tile.type.shape), tuple(tile.type.valid)):
        raise TypeCheckError(f"pl.store: shapes {fmt_shape(shapes)} differ from the tile's "
                             f"{fmt_shape(tile.type.shape)}", span,
                             hint="drop the shapes argument, or store a tile of that shape")
    return tensor.type


def _infer_assemble(args, attrs, span):
    dst, src, offsets = args
    _need(TensorType, dst.type, "the destination must be a tensor", "assemble", span)
    if not isinstance(src.type, (TensorType, TileType)):
        raise TypeCheckError("pl.assemble: the source must be a tensor or a tile", span)
    if src.type.dtype != dst.type.dtype:
        raise TypeCheckError(
            f"dtype mismatch writing {src.type.dtype.name} into a {dst.type.dtype.name} tensor",
            span,
            hint="pl.cast the value to the output's dtype",
        )
    extent = src.type.valid if isinstance(src.type, TileType) else src.type.shape
    _check_window("assemble", dst.type, offsets.items, extent, span)
    return dst.type


def _infer_move(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "moves a tile between on-chip buffers", "move", span)
    if not isinstance(attrs["target_memory"], MemorySpace) or \
            attrs["target_memory"] is MemorySpace.DDR:
        raise TypeCheckError("pl.move: target_memory must be an on-chip pl.Mem member", span,
                             hint="write a tile to global memory with pl.store")
    target = attrs["target_memory"]
    if target in (MemorySpace.LeftScale, MemorySpace.RightScale) and \
            x.dtype is not DataType.FP8E8M0:
        raise TypeCheckError(
            f"pl.move to {target.name} takes FP8E8M0 block scales, got a {x.dtype.name} tile: "
            "the MX scale buffers hold one E8M0 scale per 32 elements along K", span,
            hint="load the scales as an FP8E8M0 tensor into pl.Mem.Mat")
    return TileType(x.shape, x.dtype, valid_shape=x.valid_shape)


def _infer_slice(args, attrs, span):
    x, offsets = args
    xt = require_block("slice", x.type, "the sliced value", span)
    shape = static_shape("slice", attrs["shape"], span)
    _check_window("slice", xt, offsets.items, shape, span)
    valid = attrs["valid_shape"]
    if isinstance(xt, TensorType):  # valid_shape: the view's extent at run time (codegen)
        _check_valid("slice", valid, shape, span)
        return TensorType(shape, xt.dtype)
    _check_valid("slice", valid, shape, span)
    if valid is None and xt.valid_shape is not None:
        starts = [_const_value(o) for o in offsets.items]
        if any(s is None for s in starts):
            raise TypeCheckError(
                "pl.slice of a partially valid tile at a runtime offset needs valid_shape",
                span,
                hint="pass valid_shape=[rows, cols] for the window",
            )
        valid = tuple(max(0, min(size, v - s))
                      for v, s, size in zip(xt.valid, starts, shape, strict=True))
    return TileType(shape, xt.dtype, valid_shape=valid)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _infer_reshape(args, attrs, span):
    (x,) = (a.type for a in args)
    _need((TileType, TensorType), x, "reshapes tiles and tensors", "reshape", span)
    shape = static_shape("reshape", attrs["shape"], span)
    if _numel(shape) != _numel(x.shape):
        raise TypeCheckError(f"pl.reshape: {fmt_shape(x.shape)} has {_numel(x.shape)} elements, "
                             f"{fmt_shape(shape)} has {_numel(shape)}", span)
    return _whole_value_as("reshape", x, shape, x.dtype, span)


def _whole_value_as(op: str, x, shape, dtype, span):
    """`x`'s bytes as a value of `shape` and `dtype` (pl.reshape, pl.reinterpret_view): a
    tensor, or a tile, which must be fully valid."""
    if isinstance(x, TensorType):
        return TensorType(shape, dtype)
    if x.valid_shape is not None:
        raise TypeCheckError(f"pl.{op} of a partially valid tile", span,
                             hint="pl.fillpad it first and pl.set_validshape it to the full tile")
    return TileType(shape, dtype)


def _infer_reinterpret_view(args, attrs, span):
    (x,) = (a.type for a in args)
    _need((TileType, TensorType), x, "reinterprets tiles and tensors", "reinterpret_view", span)
    dtype = attrs["dtype"]
    if not isinstance(dtype, DataType):
        raise TypeCheckError("pl.reinterpret_view needs a pl dtype as its second argument", span)
    if dtype == x.dtype:
        raise TypeCheckError(f"pl.reinterpret_view: the value is {dtype.name} already", span,
                             hint="pl.reshape changes the shape alone")
    nbytes = _numel(x.shape) * x.dtype.itemsize
    if attrs["shape"] is None:
        last = x.shape[-1] * x.dtype.itemsize
        if last % dtype.itemsize:
            raise TypeCheckError(
                f"pl.reinterpret_view: a row of {fmt_shape(x.shape)} {x.dtype.name} is {last} "
                f"bytes, not a whole number of {dtype.name} elements", span,
                hint="give shape= a byte-equivalent shape")
        shape = (*x.shape[:-1], last // dtype.itemsize)
    else:
        shape = static_shape("reinterpret_view", attrs["shape"], span)
        if _numel(shape) * dtype.itemsize != nbytes:
            raise TypeCheckError(
                f"pl.reinterpret_view: {fmt_shape(x.shape)} {x.dtype.name} is {nbytes} bytes, "
                f"{fmt_shape(shape)} {dtype.name} is {_numel(shape) * dtype.itemsize}", span)
    return _whole_value_as("reinterpret_view", x, shape, dtype, span)


def _infer_transpose(args, attrs, span):
    (x,) = (a.type for a in args)
    require_block("transpose", x, "the transposed value", span)
    require_rank2("transpose", x, span)
    axes = {attrs["axis1"] % 2 if isinstance(attrs["axis1"], int) else None,
            attrs["axis2"] % 2 if isinstance(attrs["axis2"], int) else None}
    if axes != {0, 1}:
        raise TypeCheckError("pl.transpose swaps axes 0 and 1 of a [rows, cols] tile", span)
    if isinstance(x, TensorType):
        return TensorType(x.shape[::-1], x.dtype)  # typed; kernels transpose tiles only
    valid = x.valid_shape[::-1] if x.valid_shape else None
    return TileType(x.shape[::-1], x.dtype, valid_shape=valid)


def _infer_concat(args, attrs, span):
    a, b = (x.type for x in args)
    for t in (a, b):
        _need(TileType, t, "concatenates tiles", "concat", span)
        require_rank2("concat", t, span)
    alike("concat", a, b, span, "dtype")
    if a.shape[0] != b.shape[0]:
        raise TypeCheckError(f"pl.concat joins columns of tiles with equal rows: "
                             f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)}", span)
    if a.valid[1] != a.shape[1]:
        raise TypeCheckError("pl.concat: the first tile's columns must all be valid", span,
                             hint="pl.fillpad it and pl.set_validshape it to its full width")
    shape = (a.shape[0], a.shape[1] + b.shape[1])
    valid = None
    if a.valid_shape or b.valid_shape:
        valid = (valid_min(a.valid[0], b.valid[0]), a.shape[1] + b.valid[1])
    return TileType(shape, a.dtype, valid_shape=valid)


def _infer_fillpad(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "fills the padding of a tile", "fillpad", span)
    pad_value_attr("fillpad", attrs["pad_value"], span)
    return TileType(x.shape, x.dtype, valid_shape=x.valid_shape)


def pad_value_attr(op: str, pad, span) -> PadValue:
    """`pad`, refused unless it is a value a fill writes (zero, max or min)."""
    if not isinstance(pad, PadValue) or pad is PadValue.null:
        raise TypeCheckError(f"pl.{op} needs pad_value pl.PadValue.zero, .max or .min", span)
    return pad


def _infer_set_validshape(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "sets the valid region of a tile", "set_validshape", span)
    require_rank2("set_validshape", x, span)
    valid = (attrs["valid_rows"], attrs["valid_cols"])
    _check_valid("set_validshape", valid, x.shape, span)
    return TileType(x.shape, x.dtype, valid_shape=valid)


def _infer_read(args, attrs, span):
    x, indices = args
    xt = require_block("read", x.type, "the value read from", span)
    if xt.dtype is DataType.UINT64:
        raise TypeCheckError(
            "pl.read: a kernel's integer scalars are INT64, which does not hold every UINT64 "
            "element (2^63 and above)", span,
            hint="keep UINT64 data in tiles and tensors (load, store, move) and read its "
                 "elements on the host")
    items = indices.items
    if len(items) != len(xt.shape):
        raise TypeCheckError(
            f"pl.read: a value of rank {len(xt.shape)} needs {len(xt.shape)} indices, got "
            f"{len(items)}",
            span,
            hint="give one index per dimension: t[i, j]",
        )
    for i in items:
        t = i.type
        if not isinstance(t, ScalarType) or t.dtype.is_float or t.dtype is DataType.BOOL:
            raise TypeCheckError("pl.read: indices must be integers", span,
                                 hint="index with integer constants, loop variables or "
                                      "elements of integer tiles")
    consts = [_const_value(i) for i in items]
    for value, dim in zip(consts, xt.shape, strict=True):
        if value is not None and not 0 <= value < dim:
            shown = fmt_shape(["?" if v is None else v for v in consts])
            kind = "tile" if isinstance(xt, TileType) else "tensor"
            raise TypeCheckError(
                f"pl.read: index {shown} is outside the {kind} {fmt_shape(xt.shape)}",
                span,
                hint="every index must lie in [0, size); negative indices do not count "
                     "from the end",
            )
    return ScalarType(xt.dtype)


def _infer_tile_assemble(args, attrs, span):
    dst, src, offsets = args
    _need(TileType, dst.type, "inserts into a tile (pl.assemble writes tensors)",
          "tile.assemble", span)
    _need(TileType, src.type, "inserts a tile", "tile.assemble", span)
    require_rank2("tile.assemble", dst.type, span)
    alike("tile.assemble", dst.type, src.type, span, "dtype")
    _check_window("tile.assemble", dst.type, offsets.items, src.type.valid, span)
    return dst.type


def _infer_transpose_view(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "views a tile as its transpose", "tile.transpose_view", span)
    require_rank2("tile.transpose_view", x, span)
    valid = x.valid_shape[::-1] if x.valid_shape else None
    return TileType(x.shape[::-1], x.dtype, valid_shape=valid)



# -- movement
register(
    OpDef(
        "load",
        (
            OpParam("tensor", "value"),
            OpParam("offsets", "index_list"),
            OpParam("shapes", "attr"),
            OpParam("valid_shape", "attr", None),
            OpParam("target_memory", "attr", MemorySpace.Vec),
            OpParam("pad_value", "attr", PadValue.zero),
        ),
        _infer_load,
        "movement",
        "Copy the window of `tensor` at `offsets` into a new tile of `shapes` in "
        "`target_memory` (Vec, or Mat for matmul inputs).  With `valid_shape`, only that "
        "region is read and the rest of the tile holds `pad_value` (zero, max = +inf, "
        "min = -inf; null = zero); the tile's type records the valid region.",
        dtypes=WITH_4BIT,
        emit="load",
        isa="tload",
    )
)
register(
    OpDef(
        "store",
        (
            OpParam("tile", "value"),
            OpParam("offsets", "index_list"),
            OpParam("tensor", "value"),
            OpParam("atomic", "attr", AtomicType.None_),
            OpParam("shapes", "attr", None),
        ),
        _infer_store,
        "movement",
        "Write a tile's valid region (from Vec, or Acc for matmul results) into `tensor` at "
        "`offsets`; returns the tensor.  `shapes` (upstream's fourth argument, "
        "`pl.store(t, offsets, out, [r, c])`) restates the region's shape: it must be the "
        "tile's.",
        dtypes=WITH_4BIT,
        emit="store",
        isa="tstore",
        writes=2,
    )
)
register(
    OpDef(
        "assemble",
        (
            OpParam("dst", "value"),
            OpParam("src", "value"),
            OpParam("offset", "index_list"),
            OpParam("atomic", "attr", AtomicType.None_),
        ),
        _infer_assemble,
        "movement",
        "Write a tensor or tile into `dst` at `offset`; `out[...] = x` is sugar for it.",
        dtypes=ANY,
        writes=0,
    )
)
register(
    OpDef(
        "move",
        (OpParam("tile", "value"), OpParam("target_memory", "attr")),
        _infer_move,
        "movement",
        "Copy a tile into another on-chip buffer.  Legal moves are backend facts "
        "(build_rules/backends/*.toml [tile_moves]): Mat -> Left / Right everywhere, "
        "Acc -> Vec only on Ascend950.  Mat -> Vec, Acc -> Vec on Ascend910B and Vec -> Mat / "
        "Left / Right in a kernel are transfers between the cube unit and the vector unit, "
        "through global memory (TransferCubeToVector).",
        dtypes=WITH_4BIT,
        emit="unary",
        isa="tmov",
    )
)
register(
    OpDef(
        "slice",
        (
            OpParam("x", "value"),
            OpParam("shape", "attr"),
            OpParam("offset", "index_list"),
            OpParam("valid_shape", "attr", None),
        ),
        _infer_slice,
        "movement",
        "The [shape] window of `x` at `offset` (offsets may be runtime values); `x[r0:r1, "
        "c0:c1]` is sugar for it.  On a tensor it is a view (no data moves; loads read through "
        "it); in orchestration code the task it is handed sees its valid part: valid_shape "
        "(runtime extents allowed), cut back to x's end (docs/passes.md).  On a tile it reads "
        "the window into its own tile of the same buffer kind; its valid region is x's, cut "
        "to the window, unless valid_shape says otherwise.",
        dtypes=ANY,
        emit="extract",
        isa="textract",
    )
)
register(
    OpDef(
        "reshape",
        (OpParam("x", "value"), OpParam("shape", "attr")),
        _infer_reshape,
        "movement",
        "The same elements in row-major order with a new shape (equal element count; the tile "
        "must be fully valid).  Of a tensor in a kernel, the tile of its value reshaped "
        "(TensorToTile).",
        dtypes=ANY,
        emit="unary",
        isa="treshape",
    )
)
register(
    OpDef(
        "reinterpret_view",
        (OpParam("x", "value"), OpParam("dtype", "attr"), OpParam("shape", "attr", None)),
        _infer_reinterpret_view,
        "movement",
        "The same bytes seen as `dtype` (no value converted: the bits of x, in row-major "
        "order), with `shape` (the same byte count) or x's shape with its last dimension "
        "scaled by the element sizes.  The tile must be fully valid.  Of a tensor in a kernel, "
        "the tile of its value reinterpreted (TensorToTile).",
        dtypes=ANY,
        emit="unary",
        isa="treshape",
    )
)
register(
    OpDef(
        "transpose",
        (OpParam("x", "value"), OpParam("axis1", "attr", 0), OpParam("axis2", "attr", 1)),
        _infer_transpose,
        "movement",
        "The [C, R] transpose of a [R, C] tile (axes 0 and 1, negative indices allowed).  A "
        "tensor's is typed (a standalone @pl.function parses) but not lowered in a kernel.",
        dtypes=ANY,
        emit="unary",
        isa="ttrans",
    )
)
register(
    OpDef(
        "concat",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_concat,
        "movement",
        "Join two tiles with equal rows column-wise: [R, Ca] and [R, Cb] give [R, Ca + Cb].",
        dtypes=ANY,
        emit="binary",
        isa="tconcat",
    )
)
register(
    OpDef(
        "fillpad",
        (OpParam("x", "value"), OpParam("pad_value", "attr", PadValue.zero)),
        _infer_fillpad,
        "movement",
        "x with every element outside its valid region set to `pad_value` (zero, max = +inf, "
        "min = -inf; integers use their range's ends); the valid region is unchanged.  "
        "pl.fillpad(t, pl.PadValue.min) makes padding neutral for a row_max.",
        dtypes=ANY,
        emit="fillpad",
        isa="tfillpad",
    )
)
register(
    OpDef(
        "set_validshape",
        (OpParam("x", "value"), OpParam("valid_rows", "attr"), OpParam("valid_cols", "attr")),
        _infer_set_validshape,
        "movement",
        "x with a new valid region [valid_rows, valid_cols] (static); no data changes.",
        dtypes=ANY,
        emit="unary",
        isa="tmov",
    )
)

register(
    OpDef(
        "tile.assemble",
        (OpParam("dst", "value"), OpParam("src", "value"), OpParam("offset", "index_list")),
        _infer_tile_assemble,
        "movement",
        "`dst` with the valid region of tile `src` written at `offset` (TINSERT); dst's other "
        "elements and its valid region are kept.  The buffer pairs are backend facts "
        "(build_rules/backends/*.toml [tile_inserts]): Acc -> Mat and Vec -> Vec everywhere, "
        "Acc -> Vec and Vec -> Mat on Ascend950.  Equal dtypes.",
        dtypes=ANY,
        emit="insert",
        isa="tinsert",
        writes=0,
    )
)
register(
    OpDef(
        "tile.transpose_view",
        (OpParam("x", "value"),),
        _infer_transpose_view,
        "movement",
        "The [C, R] transpose of a [R, C] tile, in the tile's own buffer kind: how a Mat "
        "operand is read transposed by the cube (`pl.move` it to Right afterwards).",
        dtypes=ANY,
        emit="unary",
        isa="ttrans",
    )
)

# -- element reads
register(
    OpDef(
        "read",
        (OpParam("x", "value"), OpParam("indices", "index_list")),
        _infer_read,
        "element",
        "One element of a tile (in a kernel) or a tensor (inside `pl.at` or a kernel) as a "
        "scalar of its dtype; `t[i, j]` is sugar for it.  Indices are integer constants or "
        "index expressions, one per dimension; a constant index outside the shape is a type "
        "error.  The scalar feeds scalar forms (`pl.mul(x, t[0, 3])`), scalar arithmetic "
        "and, when integer, loop bounds; FP16/BF16 elements widen exactly.  A tile is read "
        "from Vec (padding included: the valid region is not checked); a tensor element is "
        "read through a [1, 1] load.",
        dtypes=ANY,
        emit="read",
        isa="tgetval",
    )
)
