"""The cube's matrix products: `matmul`, `matmul_acc`, the matrix-vector forms
`tile.gemv`, `tile.gemv_acc`, the bias forms `tile.matmul_bias`, `tile.gemv_bias`
(the bias row read from the cube's bias table, pl.Mem.Bias), and the batched product
`batch_matmul` of [B, M, K] tiles (one `matmul` per batch: passes/flatten_batch.py).
`pl.matmul` of [B, M, K] tensors is batched too (passes/tensor_matmul.py)."""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import (
    TensorType,
    TileType,
    describe,
)
from .inference import (
    alike,
    check_dtype,
    dtype_names,
    fmt_shape,
    like,
    require_block,
    require_rank2,
)
from .registry import (
    FLOATS,
    MATMUL_INPUTS,
    OpDef,
    OpParam,
    register,
)

# -- matmul


def _matmul_dims(name, lhs, rhs, a_trans, b_trans, span):
    for what, t in (("lhs", lhs), ("rhs", rhs)):
        require_block(name, t, what, span)
        require_rank2(name, t, span)
    alike(name, lhs, rhs, span, "kind", "dtype")
    check_dtype(name, lhs, MATMUL_INPUTS, span)
    for flag in (a_trans, b_trans):
        if not isinstance(flag, bool):
            raise TypeCheckError(f"pl.{name}: a_trans / b_trans must be True or False", span)
    m, k = lhs.shape[::-1] if a_trans else lhs.shape
    k2, n = rhs.shape[::-1] if b_trans else rhs.shape
    if k != k2:
        raise TypeCheckError(
            f"pl.{name}: inner dimensions differ: lhs gives K={k}, rhs gives K={k2}",
            span,
            hint="lhs is [M, K] ([K, M] with a_trans), rhs is [K, N] ([N, K] with b_trans)",
        )
    valid = None
    if isinstance(lhs, TileType) and (lhs.valid_shape or rhs.valid_shape):
        vm = lhs.valid[1] if a_trans else lhs.valid[0]
        vn = rhs.valid[0] if b_trans else rhs.valid[1]
        valid = (vm, vn)
    return m, n, valid


def _batch(name: str, lhs, rhs, span) -> int | None:
    """The batch count B of a product of [B, M, K] and [B, K, N] operands (None when both
    are [rows, cols]).  As torch.matmul broadcasts: a batch of 1, or a [rows, cols]
    operand, is used for every batch of the other."""
    for what, t in (("lhs", lhs), ("rhs", rhs)):
        if len(t.shape) not in (2, 3):
            raise TypeCheckError(f"pl.{name} multiplies [M, K] or [B, M, K] operands; {what} "
                                 f"is {fmt_shape(t.shape)}", span,
                                 hint="reshape the leading dimensions into one batch dimension")
    batches = [t.shape[0] for t in (lhs, rhs) if len(t.shape) == 3]
    if len({b for b in batches if b != 1}) > 1:
        raise TypeCheckError(
            f"pl.{name}: the batch dimensions differ: lhs {fmt_shape(lhs.shape)}, rhs "
            f"{fmt_shape(rhs.shape)}", span,
            hint="lhs [B, M, K] and rhs [B, K, N] have one B (or a batch of 1, used for "
                 "every batch)")
    return max(batches) if batches else None


def slab(t):
    """The [rows, cols] type of one batch of a [B, rows, cols] tensor or tile (`t` itself
    when it is rank 2).  A tile's valid region must span its batches."""
    if len(t.shape) == 2:
        return t
    if isinstance(t, TileType):
        valid = t.valid
        if valid[0] != t.shape[0]:
            return None
        return TileType(t.shape[1:], t.dtype, t.memory,
                        valid_shape=valid[1:] if t.valid_shape else None)
    return TensorType(t.shape[1:], t.dtype)


def _batched_dims(name, lhs, rhs, a_trans, b_trans, span):
    """(B, M, N, valid) of a batched product: one [M, K] x [K, N] product per batch."""
    b = _batch(name, lhs, rhs, span)
    slabs = [slab(t) for t in (lhs, rhs)]
    for what, t, s in zip(("lhs", "rhs"), (lhs, rhs), slabs, strict=True):
        if s is None:
            raise TypeCheckError(f"pl.{name}: {what}'s valid region {fmt_shape(t.valid)} "
                                 f"leaves out batches of {fmt_shape(t.shape)}", span,
                                 hint="a batched tile is valid in every batch: "
                                      "valid_shape=[B, rows, cols]")
    m, n, valid = _matmul_dims(name, slabs[0], slabs[1], a_trans, b_trans, span)
    return b, m, n, valid


def _product_dtype(inputs: DataType) -> DataType:
    return DataType.INT32 if inputs is DataType.INT8 else DataType.FP32


def _acc_dtypes(inputs: DataType) -> frozenset:
    return frozenset({DataType.INT32}) if inputs is DataType.INT8 else FLOATS


def _infer_matmul(args, attrs, span):
    lhs, rhs = (a.type for a in args)
    batch = None
    if any(len(getattr(t, "shape", ())) > 2 for t in (lhs, rhs)):
        if isinstance(lhs, TileType) or isinstance(rhs, TileType):
            raise TypeCheckError(
                f"pl.matmul multiplies [M, K] tiles; got {describe(lhs)} x {describe(rhs)}",
                span, hint="batched tiles: pl.batch_matmul(lhs, rhs)")
        batch, m, n, valid = _batched_dims("matmul", lhs, rhs, attrs["a_trans"],
                                           attrs["b_trans"], span)
    else:
        m, n, valid = _matmul_dims("matmul", lhs, rhs, attrs["a_trans"], attrs["b_trans"],
                                   span)
    out = attrs["out_dtype"]
    if out is None:
        out = _product_dtype(lhs.dtype)
    legal = _acc_dtypes(lhs.dtype)
    if out not in legal:
        raise TypeCheckError(f"pl.matmul of {lhs.dtype.name} cannot produce {out!r}", span,
                             hint=f"out_dtype: {dtype_names(legal)}")
    if batch is not None:
        return TensorType((batch, m, n), out)
    return like(lhs, shape=(m, n), dtype=out, valid=valid)


def _infer_batch_matmul(args, attrs, span):
    lhs, rhs = (a.type for a in args)
    for what, t in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(t, TileType):
            raise TypeCheckError(f"pl.batch_matmul multiplies tiles; {what} is {describe(t)}",
                                 span, hint="on tensors, pl.matmul of [B, M, K] and "
                                            "[B, K, N] tensors in a pl.at block is batched")
    if len(lhs.shape) != 3 and len(rhs.shape) != 3:
        raise TypeCheckError(
            f"pl.batch_matmul multiplies [B, M, K] by [B, K, N] tiles; got "
            f"{fmt_shape(lhs.shape)} x {fmt_shape(rhs.shape)}", span,
            hint="two [M, K] x [K, N] tiles: pl.matmul")
    batch, m, n, valid = _batched_dims("batch_matmul", lhs, rhs, False, False, span)
    return TileType((batch, m, n), _product_dtype(lhs.dtype),
                    valid_shape=(batch, *valid) if valid else None)


def _infer_matmul_acc(args, attrs, span):
    acc, lhs, rhs = (a.type for a in args)
    m, n, _ = _matmul_dims("matmul_acc", lhs, rhs, attrs["a_trans"], attrs["b_trans"], span)
    if type(acc) is not type(lhs) or not isinstance(acc, (TileType, TensorType)):
        raise TypeCheckError(
            "pl.matmul_acc works on tiles, or on tensors in a pl.at block",
            span,
            hint="accumulate over K: acc = pl.matmul(...) then "
                 "acc = pl.matmul_acc(acc, a, b) in a pl.range loop",
        )
    if tuple(acc.shape) != (m, n):
        raise TypeCheckError(f"pl.matmul_acc: acc is {fmt_shape(acc.shape)} but lhs @ rhs is "
                             f"{fmt_shape((m, n))}", span)
    if acc.dtype not in _acc_dtypes(lhs.dtype):
        raise TypeCheckError(f"pl.matmul_acc: a {lhs.dtype.name} product cannot accumulate into "
                             f"{acc.dtype.name}", span)
    if isinstance(acc, TensorType):
        return TensorType(acc.shape, acc.dtype)
    return TileType(acc.shape, acc.dtype, valid_shape=acc.valid_shape)


# The largest K and N a TGEMV takes (pto-isa's TGEMV.md: k and n in [1, 4095]).
_GEMV_MAX = 4095


def _infer_gemv(name: str):
    def infer(args, attrs, span):
        types = [a.type for a in args]
        bias = types.pop() if name == "tile.gemv_bias" else None
        *acc, lhs, rhs = types
        for what, t in (("lhs", lhs), ("rhs", rhs), *(("acc", a) for a in acc)):
            if not isinstance(t, TileType):
                raise TypeCheckError(f"pl.{name} multiplies tiles; {what} is {describe(t)}",
                                     span, hint="on tensors, pl.matmul of a [1, K] tensor")
        _, n, valid = _matmul_dims(name, lhs, rhs, False, False, span)
        k = lhs.shape[1]
        if lhs.shape[0] != 1 or not (1 <= k <= _GEMV_MAX and 1 <= n <= _GEMV_MAX):
            raise TypeCheckError(
                f"pl.{name} multiplies a [1, K] vector by a [K, N] matrix with K and N at "
                f"most {_GEMV_MAX}, got {fmt_shape(lhs.shape)} x {fmt_shape(rhs.shape)}",
                span,
                hint="pl.matmul multiplies [M, K] tiles of any M",
            )
        out = _product_dtype(lhs.dtype)
        if bias is not None:
            _check_bias(name, bias, n, out, span)
        if acc and (tuple(acc[0].shape) != (1, n) or acc[0].dtype is not out):
            raise TypeCheckError(f"pl.{name}: acc must be a [1, {n}] {out.name} tile, got "
                                 f"{describe(acc[0])}", span)
        if acc:
            return TileType(acc[0].shape, out, valid_shape=acc[0].valid_shape)
        return TileType((1, n), out, valid_shape=valid)

    return infer


def _check_bias(name: str, bias, n: int, out: DataType, span) -> None:
    """A bias is one [1, N] row of the product's dtype (pto-isa's bias tiles have Rows == 1
    and the accumulator's DType: FP32, INT32 for INT8 inputs)."""
    if not isinstance(bias, TileType):
        raise TypeCheckError(f"pl.{name} adds a bias tile; bias is {describe(bias)}", span,
                             hint="load the bias row into pl.Mem.Mat and pl.move it to "
                                  "pl.Mem.Bias")
    if tuple(bias.shape) != (1, n) or bias.dtype is not out:
        raise TypeCheckError(
            f"pl.{name}: bias must be a [1, {n}] {out.name} tile (one row of the product's "
            f"dtype), got {describe(bias)}", span,
            hint=f"the bias table holds the accumulator's dtype: pl.cast the row to "
                 f"{out.name} before loading it into Mat")


def _infer_matmul_bias(args, attrs, span):
    lhs, rhs, bias = (a.type for a in args)
    for what, t in (("lhs", lhs), ("rhs", rhs)):
        if not isinstance(t, TileType):
            raise TypeCheckError(f"pl.tile.matmul_bias multiplies tiles; {what} is "
                                 f"{describe(t)}", span,
                                 hint="on tensors, pl.matmul then pl.add of the bias row")
    m, n, valid = _matmul_dims("tile.matmul_bias", lhs, rhs, False, False, span)
    out = _product_dtype(lhs.dtype)
    _check_bias("tile.matmul_bias", bias, n, out, span)
    return like(lhs, shape=(m, n), dtype=out, valid=valid)


# -- matmul
register(
    OpDef(
        "matmul",
        (
            OpParam("lhs", "value"),
            OpParam("rhs", "value"),
            OpParam("out_dtype", "attr", None),
            OpParam("a_trans", "attr", False),
            OpParam("b_trans", "attr", False),
        ),
        _infer_matmul,
        "matmul",
        "Matrix product lhs @ rhs ([M, K] x [K, N]; a_trans / b_trans read lhs as [K, M] / rhs "
        "as [N, K]).  Inputs FP16, BF16 or FP32 (INT8 gives INT32); products are formed in "
        "input precision and accumulated in FP32 in K order, then rounded once to out_dtype "
        "(default FP32).  Tile form: lhs in pl.Mem.Left, rhs in pl.Mem.Right, result in "
        "pl.Mem.Acc.  Tensor form: lowered whole-K through Mat/Left/Right/Acc; [B, M, K] x "
        "[B, K, N] tensors multiply batch by batch into [B, M, N] (a batch of 1 or an [M, K] "
        "/ [K, N] operand is used for every batch, as torch.matmul broadcasts).",
        dtypes=MATMUL_INPUTS,
        emit="matmul",
        isa="tmatmul",
    )
)
register(
    OpDef(
        "batch_matmul",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_batch_matmul,
        "batch",
        "The batched product of a [B, M, K] tile (pl.Mem.Left) and a [B, K, N] tile "
        "(pl.Mem.Right) as a [B, M, N] tile in pl.Mem.Acc: batch b is pl.matmul(lhs[b], "
        "rhs[b]), bit for bit (FP32, INT32 for INT8 inputs, summed in K order).  A batch "
        "of 1, or an [M, K] / [K, N] tile, is used for every batch (torch.matmul's "
        "broadcast).  A [B, M, K] tile is B [M, K] tiles, each placed as one: pl.load, "
        "pl.move, pl.store and the elementwise operators work on them batch by batch.",
        dtypes=MATMUL_INPUTS,
    )
)
register(
    OpDef(
        "matmul_acc",
        (
            OpParam("acc", "value"),
            OpParam("lhs", "value"),
            OpParam("rhs", "value"),
            OpParam("a_trans", "attr", False),
            OpParam("b_trans", "attr", False),
        ),
        _infer_matmul_acc,
        "matmul",
        "acc + lhs @ rhs on tiles (acc in pl.Mem.Acc): the sum starts from acc and adds the "
        "products in K order in FP32, then rounds once to acc's dtype.  A K loop of matmul "
        "then matmul_acc is deterministic: the same inputs give the same bits every run.  "
        "Tensor form (in a pl.at block): acc is a value the kernel keeps as one Acc tile.",
        dtypes=MATMUL_INPUTS,
        emit="matmul",
        isa="tmatmul_acc",
    )
)
register(
    OpDef(
        "tile.gemv",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_gemv("tile.gemv"),
        "matmul",
        "The matrix-vector product lhs @ rhs of a [1, K] tile (pl.Mem.Left) and a [K, N] tile "
        "(pl.Mem.Right), K and N at most 4095, as a [1, N] tile in pl.Mem.Acc (TGEMV): FP32 "
        "for FP16, BF16 and FP32 inputs, INT32 for INT8.  The same sums as pl.matmul with "
        "M = 1: products in input precision, accumulated in K order.",
        dtypes=MATMUL_INPUTS,
        emit="matmul",
        isa="tgemv",
    )
)
register(
    OpDef(
        "tile.gemv_acc",
        (OpParam("acc", "value"), OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_gemv("tile.gemv_acc"),
        "matmul",
        "acc + lhs @ rhs for a [1, K] lhs (TGEMV_ACC): the sum starts from acc (a [1, N] "
        "FP32 tile, INT32 for INT8 inputs, in pl.Mem.Acc) and adds the products in K order, "
        "as pl.matmul_acc does.",
        dtypes=MATMUL_INPUTS,
        emit="matmul",
        isa="tgemv_acc",
    )
)
register(
    OpDef(
        "tile.matmul_bias",
        (OpParam("lhs", "value"), OpParam("rhs", "value"), OpParam("bias", "value")),
        _infer_matmul_bias,
        "matmul",
        "lhs @ rhs + bias (TMATMUL_BIAS): lhs in pl.Mem.Left, rhs in pl.Mem.Right, bias a "
        "[1, N] row in pl.Mem.Bias (FP32, INT32 for INT8 inputs: the accumulator's dtype) "
        "added to every row.  The product is summed as pl.matmul sums it (from zero, in K "
        "order) and the bias is added after the last K step, in FP32 (wrapping INT32), as "
        "pto-isa's CPU model does; the result is in pl.Mem.Acc.",
        dtypes=MATMUL_INPUTS,
        emit="matmul",
        isa="tmatmul_bias",
    )
)
register(
    OpDef(
        "tile.gemv_bias",
        (OpParam("lhs", "value"), OpParam("rhs", "value"), OpParam("bias", "value")),
        _infer_gemv("tile.gemv_bias"),
        "matmul",
        "lhs @ rhs + bias for a [1, K] lhs (TGEMV_BIAS): pl.tile.matmul_bias with M = 1 "
        "(K and N at most 4095); bias is a [1, N] FP32 row (INT32 for INT8 inputs) in "
        "pl.Mem.Bias, added after the K sum.",
        dtypes=MATMUL_INPUTS,
        emit="matmul",
        isa="tgemv_bias",
    )
)


# -- the MX block-scaled product (TMATMUL_MX, A5)

MX_DATA = frozenset({DataType.FP8E4M3FN, DataType.FP8E5M2})
"""The data tiles' element types of an MX product: pto-isa's A5 TMATMUL_MX takes FP8
(E4M3 and E5M2, in any pairing) or FP4 (E2M1, E1M2) data; upstream's pl.matmul_mx takes
FP8E4M3FN alone, an FP4 lhs cast to it first."""
MX_GROUP = 32
"""Elements along K that share one block scale."""


def _mx_data(name: str, what: str, t, span):
    if not isinstance(t, TileType):
        raise TypeCheckError(f"pl.{name} multiplies tiles; {what} is {describe(t)}", span,
                             hint="load the operand into pl.Mem.Mat and pl.move it to "
                                  f"pl.Mem.{'Left' if what == 'lhs' else 'Right'}")
    if len(t.shape) != 2:
        raise TypeCheckError(f"pl.{name}: {what} must be [rows, cols], got "
                             f"{fmt_shape(t.shape)}", span)
    if t.dtype in (DataType.FP4, DataType.HF4):
        raise TypeCheckError(
            f"pl.{name}: {what} is {t.dtype.name}, and the MX product of 4-bit data is not "
            "supported (upstream's rule: native FP4 x FP4 is not)", span,
            hint=f"pl.cast the {what} to pl.FP8E4M3FN first (exact from FP4: the FP4 x FP8 "
                 "form)")
    if t.dtype not in MX_DATA:
        raise TypeCheckError(f"pl.{name}: {what} is {t.dtype.name}; MX data tiles are "
                             f"{dtype_names(MX_DATA)}", span,
                             hint="pl.cast it to pl.FP8E4M3FN first")


def _mx_groups(k) -> object:
    """The block scales along a K extent: ceil(K / 32) (a run-time extent: itself, checked
    against the scale tile's)."""
    return -(-k // MX_GROUP) if isinstance(k, int) else None


def _same_extent(a, b) -> bool:
    """Equal extents, where both are known (a run-time extent is not compared)."""
    return a == b if isinstance(a, int) and isinstance(b, int) else True


def _mx_scale(name: str, what: str, t, shape, valid, span) -> None:
    if not isinstance(t, TileType):
        raise TypeCheckError(f"pl.{name} takes {what} as a tile; it is {describe(t)}", span)
    if t.dtype is not DataType.FP8E8M0:
        raise TypeCheckError(f"pl.{name}: {what} must be FP8E8M0 block scales, got "
                             f"{t.dtype.name}", span)
    if tuple(t.shape) != tuple(shape) or not all(
            v is None or _same_extent(v, got) for v, got in zip(valid, t.valid, strict=True)):
        want = fmt_shape(shape)
        valid = [v if v is not None else "?" for v in valid]
        raise TypeCheckError(
            f"pl.{name}: {what} must be a {want} tile (one scale per {MX_GROUP} elements "
            f"along K) valid over {fmt_shape(valid)}, "
            f"got {describe(t)}", span,
            hint="the lhs scales are [M, K / 32], the rhs scales [K / 32, N]")


def _infer_mx(name: str):
    def infer(args, attrs, span):
        types = [a.type for a in args]
        acc = types.pop(0) if name == "tile.matmul_mx_acc" else None
        bias = types.pop() if name == "tile.matmul_mx_bias" else None
        lhs, lhs_scale, rhs, rhs_scale = types
        _mx_data(name, "lhs", lhs, span)
        _mx_data(name, "rhs", rhs, span)
        (m, k), (k2, n) = lhs.shape, rhs.shape
        if k != k2:
            raise TypeCheckError(f"pl.{name}: inner dimensions differ: lhs gives K={k}, rhs "
                                 f"gives K={k2}", span)
        if m % 16 or k % 64 or n % 32:
            raise TypeCheckError(
                f"pl.{name} takes [M, K] x [K, N] tiles with M a multiple of 16, K of 64 and N "
                f"of 32 (pto-isa's TMATMUL_MX); got {fmt_shape(lhs.shape)} x "
                f"{fmt_shape(rhs.shape)}", span,
                hint="pad the tiles and mark the data with valid_shape")
        (vm, vk), (vk2, vn) = lhs.valid, rhs.valid
        groups = k // MX_GROUP
        for extent in (vk, vk2):
            if isinstance(extent, int) and (extent <= 0 or _mx_groups(extent) != groups):
                raise TypeCheckError(
                    f"pl.{name}: a valid K of {extent} in a K of {k} leaves block scales "
                    f"without data: ceil(valid K / {MX_GROUP}) must be K / {MX_GROUP} = "
                    f"{groups}", span)
        if not _same_extent(vk, vk2):
            raise TypeCheckError(f"pl.{name}: the valid K differs: lhs {vk}, rhs {vk2}", span)
        vgroups = _mx_groups(vk)
        _mx_scale(name, "lhs_scale", lhs_scale, (m, groups), (vm, vgroups), span)
        _mx_scale(name, "rhs_scale", rhs_scale, (groups, n), (vgroups, vn), span)
        valid = (vm, vn) if (lhs.valid_shape or rhs.valid_shape) else None
        if bias is not None:
            _check_bias(name, bias, n, DataType.FP32, span)
        if acc is not None:
            if not isinstance(acc, TileType) or tuple(acc.shape) != (m, n) or \
                    acc.dtype is not DataType.FP32:
                raise TypeCheckError(f"pl.{name}: acc must be a [{m}, {n}] FP32 tile, got "
                                     f"{describe(acc)}", span)
            return TileType(acc.shape, DataType.FP32, valid_shape=acc.valid_shape)
        return TileType((m, n), DataType.FP32, valid_shape=valid)

    return infer


_MX_DOC = (
    "lhs [M, K] (pl.Mem.Left) and rhs [K, N] (pl.Mem.Right) of FP8E4M3FN or FP8E5M2 (an FP4 "
    "lhs is cast to FP8E4M3FN first), M a multiple of 16, K of 64, N of 32; lhs_scale [M, K / "
    "32] (pl.Mem.LeftScale) and rhs_scale [K / 32, N] (pl.Mem.RightScale) FP8E8M0 block "
    "scales, one per 32 elements along K.  Ascend950 only (TMATMUL_MX).  As pto-isa's CPU "
    "model computes it (cpu/TMatmul.hpp, TMatmulMX): for every k < K (the lhs's valid columns) "
    "in order, the term a[i][k] * b[k][j] * (lhs_scale[i][k / 32] * rhs_scale[k / 32][j]) is "
    "formed exactly in float64 and added to an FP32 sum starting at 0 in float64, then "
    "rounded to FP32 (one rounding per k); the result is FP32 in pl.Mem.Acc, NaN canonical.")
register(
    OpDef(
        "tile.matmul_mx",
        (OpParam("lhs", "value"), OpParam("lhs_scale", "value"), OpParam("rhs", "value"),
         OpParam("rhs_scale", "value")),
        _infer_mx("tile.matmul_mx"),
        "matmul_mx",
        "The MX block-scaled product (pl.matmul_mx): " + _MX_DOC,
        dtypes=MX_DATA,
        emit="matmul_mx",
        isa="tmatmul_mx",
    )
)
register(
    OpDef(
        "tile.matmul_mx_acc",
        (OpParam("acc", "value"), OpParam("lhs", "value"), OpParam("lhs_scale", "value"),
         OpParam("rhs", "value"), OpParam("rhs_scale", "value")),
        _infer_mx("tile.matmul_mx_acc"),
        "matmul_mx",
        "acc + pl.tile.matmul_mx(lhs, lhs_scale, rhs, rhs_scale), acc an FP32 [M, N] tile in "
        "pl.Mem.Acc: the product is summed from zero as pl.tile.matmul_mx sums it, then added "
        "to acc in one FP32 add, as pto-isa's CPU model does (not summed from acc: "
        "pl.matmul_acc's order).",
        dtypes=MX_DATA,
        emit="matmul_mx",
        isa="tmatmul_mx_acc",
    )
)
register(
    OpDef(
        "tile.matmul_mx_bias",
        (OpParam("lhs", "value"), OpParam("lhs_scale", "value"), OpParam("rhs", "value"),
         OpParam("rhs_scale", "value"), OpParam("bias", "value")),
        _infer_mx("tile.matmul_mx_bias"),
        "matmul_mx",
        "pl.tile.matmul_mx(lhs, lhs_scale, rhs, rhs_scale) + bias, bias a [1, N] FP32 row in "
        "pl.Mem.Bias added to every row after the last K step, one FP32 add (as "
        "pl.tile.matmul_bias adds it).",
        dtypes=MX_DATA,
        emit="matmul_mx",
        isa="tmatmul_mx_bias",
    )
)
