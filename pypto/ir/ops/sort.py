"""Sorting operators: pl.sort32 (the PTO instruction TSORT32) and pl.mrgsort (TMRGSORT),
upstream PyPTO's signatures, on tiles and on tensors (the tensor forms allocate the
scratch tiles the instructions take: TensorToTile lowers them value by value).

A sorted element is an 8-byte value-index pair kept in a tile of the value's dtype: two
FP32 elements [value, index bits] or four FP16 elements [value, 0, index bits low,
index bits high].  docs/numerics.md says how the orders treat ties, signed zeros and NaN
(pto-isa's CPU model, which the simulators follow)."""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import TensorType, TileType
from .inference import check_dtype, fmt_shape, like, require_rank2
from .registry import OpDef, OpParam, get_op, register

_SORTED = frozenset({DataType.FP16, DataType.FP32})
# FP32 / FP16 elements per value-index pair (8 bytes).
_PAIR = {DataType.FP32: 2, DataType.FP16: 4}
_BLOCK = 32  # TSORT32 sorts blocks of 32 values
_RUN_MULTIPLE = 64  # TMRGSORT's block_len is a multiple of 64 elements
_MAX_REPEAT = 255  # groups of 4 runs one TMRGSORT merges


def pair_elements(dtype: DataType) -> int:
    """Elements of `dtype` per 8-byte value-index pair."""
    return _PAIR[dtype]


def _block(name: str, what: str, v, kind: type, span) -> TileType | TensorType:
    """Operand `what` of pl.<name>: a [rows, cols] tile (whose valid region is static) or
    tensor, of the kind `kind` the call's first operand has."""
    t = v.type
    if not isinstance(t, (TileType, TensorType)):
        raise TypeCheckError(f"pl.{name}: {what} must be a tile or a tensor", span)
    if not isinstance(t, kind):
        raise TypeCheckError(f"pl.{name} mixes a tensor and a tile", span,
                             hint="load the tensor into a tile with pl.load, or operate on "
                                  "tensors only")
    require_rank2(name, t, span)
    if isinstance(t, TileType) and not all(isinstance(d, int) for d in t.valid):
        raise TypeCheckError(f"pl.{name}: {what} needs a valid region known at compile time",
                             span, hint="pl.set_validshape it to a static region first")
    return t


def _valid(t) -> tuple:
    """The extents that hold data: a tile's valid region, a tensor's shape."""
    return tuple(t.valid) if isinstance(t, TileType) else tuple(t.shape)


def _infer_sort32(args, attrs, span):
    ops = get_op("sort32").operands(args, attrs)
    kind = type(ops["src"].type)
    src = _block("sort32", "src", ops["src"], kind, span)
    idx = _block("sort32", "idx", ops["idx"], kind, span)
    check_dtype("sort32", src, _SORTED, span)
    if idx.dtype is not DataType.UINT32 or idx.shape != src.shape or _valid(idx) != _valid(src):
        raise TypeCheckError(
            f"pl.sort32: idx must be a UINT32 {_what(src)} of src's shape "
            f"{fmt_shape(src.shape)} and valid region, got {idx.dtype.name} "
            f"{fmt_shape(idx.shape)} valid {fmt_shape(_valid(idx))}", span,
            hint="give every value its index: pl.full or a loaded UINT32 tile of src's shape")
    tmp = ops["tmp"]
    if tmp is not None:
        if kind is TensorType:
            raise TypeCheckError("pl.sort32 on tensors takes no tmp: lowering allocates it",
                                 span)
        t = _block("sort32", "tmp", tmp, TileType, span)
        need = -(-_valid(src)[1] // _BLOCK) * _BLOCK
        if t.dtype != src.dtype or t.shape[1] < need:
            raise TypeCheckError(
                f"pl.sort32: tmp must be a {src.dtype.name} tile of at least {need} columns "
                f"(a row of src rounded up to whole blocks of 32), got {t.dtype.name} "
                f"{fmt_shape(t.shape)}", span)
    k = _PAIR[src.dtype]
    return like(src, shape=(src.shape[0], k * src.shape[1]),
                valid=(_valid(src)[0], k * _valid(src)[1]))


def _what(t) -> str:
    return "tile" if isinstance(t, TileType) else "tensor"


register(
    OpDef(
        "sort32",
        (OpParam("src", "value"), OpParam("idx", "value"), OpParam("tmp", "value", None)),
        _infer_sort32,
        "sort",
        "Sorts each row of src (FP16 or FP32) in blocks of 32 columns, descending, carrying "
        "idx (UINT32, src's shape) along: the result holds, for each block in place, its "
        "value-index pairs in sorted order, 8 bytes a pair, so it is [R, 2 * C] for FP32 "
        "([value, index bits]) and [R, 4 * C] for FP16 ([value, 0, index bits low, index "
        "bits high]).  Equal values (-0.0 and +0.0 included) come by the smaller index "
        "first; a NaN is equal to every value and lands where the merge order puts it "
        "(docs/numerics.md).  A partial last block (valid columns not a multiple of 32) is "
        "sorted alone.  tmp (optional, upstream's signature) is the scratch tile TSORT32 "
        "pads a partial last block in (tiles only; device code takes scratch where none is "
        "given): its contents afterwards are undefined.  Split the pairs on the host: the "
        "output tensor viewed as INT32 (FP32) or INT16 (FP16) holds the index bits at pair "
        "element 1 (FP32) or 2..3 (FP16).",
        dtypes=_SORTED,
        emit="sort",
        isa="tsort32",
    )
)


def _one_row(name: str, what: str, t, span) -> None:
    if t.shape[0] != 1:
        raise TypeCheckError(f"pl.{name}: {what} must be one row [1, C] (TMRGSORT merges "
                             f"rows of one), got {fmt_shape(t.shape)}", span)


def _infer_mrgsort(args, attrs, span):
    ops = get_op("mrgsort").operands(args, attrs)
    kind = type(ops["src0"].type)
    src0 = _block("mrgsort", "src0", ops["src0"], kind, span)
    check_dtype("mrgsort", src0, _SORTED, span)
    _one_row("mrgsort", "src0", src0, span)
    lists = [ops[f"src{i}"] for i in range(1, 4)]
    if attrs.get("block_len") is not None:
        return _single_list(src0, lists, ops["tmp"], attrs, span)
    return _multi_list(src0, lists, ops["tmp"], attrs, span)


def _whole(name: str, ts, span) -> None:
    """Refuses a run tile with a valid region: merges read whole rows of pairs."""
    if any(_valid(t) != tuple(t.shape) for t in ts):
        raise TypeCheckError(f"pl.{name} merges whole rows: its sources must be fully valid",
                             span, hint="pl.fillpad the tile and pl.set_validshape it to its "
                                        "whole shape, or load a window of whole pairs")


def _single_list(src0, lists, tmp, attrs, span):
    if any(v is not None for v in lists) or tmp is not None or attrs.get("exhausted"):
        raise TypeCheckError(
            "pl.mrgsort: block_len= (one row of runs) and src1 ... / tmp / exhausted (several "
            "rows) are two forms; do not mix them", span)
    _whole("mrgsort", [src0], span)
    block_len = attrs["block_len"]
    if not isinstance(block_len, int) or isinstance(block_len, bool):
        raise TypeCheckError("pl.mrgsort: block_len must be an int known at compile time",
                             span, hint="pass a Python int (a multiple of 64)")
    group = 4 * block_len
    cols = _valid(src0)[1]
    if block_len <= 0 or block_len % _RUN_MULTIPLE or cols % group or not (
            1 <= cols // group <= _MAX_REPEAT):
        raise TypeCheckError(
            f"pl.mrgsort: block_len={block_len} must be a positive multiple of 64 whose 4 runs "
            f"tile src0's {cols} valid columns 1 to 255 times (TMRGSORT's single-list form)",
            span, hint="block_len counts elements of the runs, values and index bits: 64 is "
                       "32 FP32 or 16 FP16 pairs")
    return like(src0)


def _multi_list(src0, lists, tmp, attrs, span):
    if lists[0] is None:
        raise TypeCheckError("pl.mrgsort needs block_len= for one row of runs, or at least "
                             "src0 and src1 to merge rows", span)
    if lists[1] is None and lists[2] is not None:
        raise TypeCheckError("pl.mrgsort: src3 needs src2", span)
    if attrs.get("exhausted"):
        raise TypeCheckError(
            "pl.mrgsort: exhausted=True stops the merge when the first list runs out and "
            "leaves the rest of the result undefined (upstream returns no count of what was "
            "merged): it is not supported", span, hint="merge with exhausted=False")
    srcs = [src0] + [_block("mrgsort", f"src{i}", v, type(src0), span)
                     for i, v in enumerate(lists, 1) if v is not None]
    _whole("mrgsort", srcs, span)
    k = _PAIR[src0.dtype]
    for i, t in enumerate(srcs):
        _one_row("mrgsort", f"src{i}", t, span)
        if t.dtype != src0.dtype or _valid(t)[1] % k:
            raise TypeCheckError(
                f"pl.mrgsort: src{i} must be a {src0.dtype.name} row of whole value-index "
                f"pairs ({k} elements each), got {t.dtype.name} with {_valid(t)[1]} valid "
                "columns", span)
    total = sum(_valid(s)[1] for s in srcs)
    if isinstance(src0, TensorType):
        if tmp is not None:
            raise TypeCheckError("pl.mrgsort on tensors takes no tmp: lowering allocates it",
                                 span)
        return like(src0, shape=(1, total))
    if tmp is None:
        raise TypeCheckError("pl.mrgsort: merging tiles needs tmp=, a staging tile",
                             span, hint="pass tmp=pl.create_tile([1, C], dtype) with C the "
                                        "sum of the sources' columns")
    t = _block("mrgsort", "tmp", tmp, TileType, span)
    width = sum(s.shape[1] for s in srcs)
    if t.dtype != src0.dtype or t.shape[0] != 1 or t.shape[1] < width:
        raise TypeCheckError(
            f"pl.mrgsort: tmp must be a {src0.dtype.name} row of at least the sources' "
            f"{width} columns, got {t.dtype.name} {fmt_shape(t.shape)}", span)
    return like(t, valid=(1, total))


register(
    OpDef(
        "mrgsort",
        (OpParam("src0", "value"), OpParam("src1", "value", None),
         OpParam("src2", "value", None), OpParam("src3", "value", None),
         OpParam("tmp", "value", None), OpParam("exhausted", "attr", False),
         OpParam("block_len", "attr", None)),
        _infer_mrgsort,
        "sort",
        "Merges runs of value-index pairs sorted descending (pl.sort32's output), as "
        "TMRGSORT.  With block_len= (a multiple of 64 elements): src0 is one row holding "
        "groups of 4 consecutive runs of block_len elements, each group merged in place; "
        "the result has src0's shape.  With src1 (and src2, src3) and, on tiles, tmp=: the 2 "
        "to 4 rows are merged into one of tmp's shape, valid over the sources' columns "
        "together (on tensors, one row as long as the sources together).  At "
        "each step the first run whose head is greater than the best head so far is taken: "
        "equal values (-0.0 and +0.0 included) come from the earlier run, and a NaN head, "
        "once taken as the best, is not beaten.  exhausted=True (stop when a run runs out) "
        "is refused: upstream reports no count and the rest of the result is undefined.",
        dtypes=_SORTED,
        emit="sort",
        isa="tmrgsort",
    )
)
