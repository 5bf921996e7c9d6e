"""The op registry: the single place every operator is declared.

An `OpDef` gives the operator's parameters (operands vs compile-time attributes),
type inference, the dtypes it supports, its category (what the passes do with it),
the template macro (`emit`, in templates/ops.cpp.j2) and simulator ISA function
(`isa`, in pypto/sim/include/pto/) that implement it, its torch semantics, and the
user documentation.  The language parser, the passes, codegen and the docs all read
operators from here.

One name serves every operand kind: tensors (inside `pl.at`), tiles (in kernels) and,
where it makes sense, a Python number or scalar as one operand (the "scalar form").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .dtypes import DataType
from .errors import Span, TypeCheckError
from .nodes import Call
from .types import (
    INDEX,
    AtomicType,
    MemorySpace,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
    describe,
)

REQUIRED = object()

FLOATS = frozenset({DataType.FP16, DataType.BF16, DataType.FP32})
INTS = frozenset(
    {
        DataType.INT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.UINT8,
        DataType.UINT16,
        DataType.UINT32,
    }
)
NUMERIC = FLOATS | INTS
ANY = frozenset(DataType)
MATMUL_INPUTS = frozenset({DataType.FP16, DataType.BF16, DataType.FP32, DataType.INT8})
CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")
# pl.cmp's cmp_type codes (the PyPTO spelling): EQ NE LT LE GT GE.
CMP_TYPES = ("eq", "ne", "lt", "le", "gt", "ge")


@dataclass(frozen=True)
class OpParam:
    """One parameter of an operator.

    kind: "value" (an operand expression), "index_list" (list of scalar expressions,
    e.g. offsets), "attr" (a compile-time constant: shapes, dtypes, enums, flags).
    A "value" parameter whose default is None is an optional operand: when it is left
    out the call records `name=None` among its attributes instead.
    """

    name: str
    kind: str
    default: Any = REQUIRED
    aliases: tuple[str, ...] = ()  # other keyword spellings (upstream's `target_type`)


@dataclass(frozen=True)
class OpDef:
    """An operator: signature, typing, lowering hooks and documentation.

    category: what passes do with it ("binary", "unary", "cast", "select", "expands",
    "reduce_row", "reduce_col", "expand_row", "expand_col", "matmul", "movement",
    "element", "tile", "index", "orchestration").
    emit: the templates/ops.cpp.j2 macro (operator form) that emits it in a kernel.
    isa: the simulator instruction (pypto/sim/include/pto/*.hpp) of its tile form;
    isa_scalar / isa_rscalar: of its scalar forms (tile op scalar, scalar op tile).
    """

    name: str
    params: tuple[OpParam, ...]
    infer: Callable[[tuple, dict, Span | None], Type]
    category: str
    doc: str
    dtypes: frozenset = NUMERIC
    torch: str = ""  # torch expression used by torch codegen and reference checks
    emit: str = ""
    isa: str = ""
    isa_scalar: str = ""
    isa_rscalar: str = ""

    @property
    def operand_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind != "attr")

    @property
    def attr_params(self) -> tuple[OpParam, ...]:
        return tuple(p for p in self.params if p.kind == "attr")

    def operands(self, args: tuple, attrs: dict) -> dict[str, Any]:
        """Operand name -> expression (None for a left-out optional operand)."""
        it = iter(args)
        return {p.name: (None if p.name in attrs else next(it))
                for p in self.params if p.kind != "attr"}


_REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in _REGISTRY:
        raise ValueError(f"operator {op.name!r} registered twice")
    _REGISTRY[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    return _REGISTRY[name]


def all_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


def make_call(name: str, *operands, span: Span | None = None, **attrs) -> Call:
    """A well-formed call of a registered operator, its type inferred.

    `operands` fill the operand parameters in order; a trailing optional operand left
    out (or given as None) is recorded as an attribute, as the parser does.
    """
    op = get_op(name)
    full = {p.name: p.default for p in op.attr_params}
    full.update(attrs)
    names = [p for p in op.params if p.kind != "attr"]
    args = []
    for i, p in enumerate(names):
        value = operands[i] if i < len(operands) else None
        if value is None:
            if p.default is REQUIRED:
                raise TypeError(f"pl.{name} needs operand `{p.name}`")
            full[p.name] = p.default
        else:
            args.append(value)
    args = tuple(args)
    return Call(name, args, tuple(sorted(full.items(), key=lambda kv: kv[0])),
                op.infer(args, full, span), span)


# ----------------------------------------------------------------------------- inference helpers


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _names(dtypes) -> str:
    return ", ".join(sorted(d.name for d in dtypes))


def _check_dtype(op: str, t: Type, allowed: frozenset, span) -> None:
    dtype = getattr(t, "dtype", None)
    if dtype is not None and dtype not in allowed:
        raise TypeCheckError(
            f"pl.{op} does not support dtype {dtype.name}",
            span,
            hint=f"supported: {_names(allowed)}; convert with pl.cast(x, dtype) first",
        )


def _is_block(t) -> bool:
    return isinstance(t, (TensorType, TileType))


def _block(op: str, t, what: str, span):
    if not _is_block(t):
        raise TypeCheckError(f"pl.{op}: {what} must be a tensor or a tile", span)
    return t


def _rank2(op: str, t, span) -> None:
    if len(t.shape) != 2:
        raise TypeCheckError(f"pl.{op} works on [rows, cols] operands, got shape "
                             f"{_fmt_shape(t.shape)}", span)


def _meet(*types) -> tuple | None:
    """The valid region where all tile operands hold real data (None: all fully valid).
    An extent known only at run time (an index expression) meets only itself."""
    valids = [t.valid_shape for t in types if isinstance(t, TileType) and t.valid_shape]
    if not valids:
        return None
    return tuple(_vmin(*dims) for dims in zip(*valids))


def _vmin(*extents):
    """The smallest of valid extents; one known only at run time meets only itself."""
    if all(isinstance(e, int) for e in extents):
        return min(extents)
    if len(set(extents)) == 1:
        return extents[0]
    raise TypeCheckError(
        "tiles whose valid regions differ, one known only at run time, meet here",
        getattr(next(e for e in extents if not isinstance(e, int)), "span", None),
        hint="pl.fillpad the tile with the runtime valid region and pl.set_validshape it to "
             "a static region first")


def _like(x, shape=None, dtype=None, valid=None):
    """A value of x's kind (tensor or tile) with the given shape, dtype and valid region."""
    shape = tuple(x.shape if shape is None else shape)
    dtype = x.dtype if dtype is None else dtype
    if isinstance(x, TileType):
        return TileType(shape, dtype, valid_shape=valid)
    return TensorType(shape, dtype)


def _same_kind(op: str, a, b, span) -> None:
    if type(a) is not type(b):
        raise TypeCheckError(
            f"pl.{op} mixes a tensor and a tile",
            span,
            hint="load the tensor into a tile with pl.load, or operate on tensors only",
        )


def _same_shape(op: str, a, b, span) -> None:
    if a.shape != b.shape:
        raise TypeCheckError(
            f"shape mismatch in pl.{op}: {_fmt_shape(a.shape)} vs {_fmt_shape(b.shape)}",
            span,
            hint="both operands must have the same shape",
        )


def _same_dtype(op: str, a, b, span) -> None:
    if a.dtype != b.dtype:
        raise TypeCheckError(
            f"dtype mismatch in pl.{op}: {a.dtype.name} vs {b.dtype.name}",
            span,
            hint="convert one operand with pl.cast",
        )


def _scalar_operand(op: str, s, block, span) -> None:
    if not isinstance(s, ScalarType):
        raise TypeCheckError(f"pl.{op}: expected a scalar operand", span)
    if s.dtype.is_float and not block.dtype.is_float:
        raise TypeCheckError(
            f"pl.{op}: a float scalar with a {block.dtype.name} operand",
            span,
            hint="use an integer constant, or pl.cast the operand to a float type",
        )


def _binary(name: str, dtypes: frozenset, index_ok: bool = False, rscalar: bool = True,
            result: DataType | None = None) -> Callable:
    def infer(args, attrs, span):
        lhs, rhs = (a.type for a in args)
        if isinstance(lhs, ScalarType) and isinstance(rhs, ScalarType):
            if not index_ok:
                raise TypeCheckError(f"pl.{name} takes a tensor or tile operand", span)
            # Index arithmetic: integers stay INT64, anything with a float is FP32.
            if lhs.dtype.is_float or rhs.dtype.is_float:
                return ScalarType(DataType.FP32)
            return INDEX
        if _is_block(lhs) and _is_block(rhs):
            _same_kind(name, lhs, rhs, span)
            _same_shape(name, lhs, rhs, span)
            _same_dtype(name, lhs, rhs, span)
            block = lhs
        elif _is_block(lhs):
            block = lhs
            _scalar_operand(name, rhs, lhs, span)
        elif _is_block(rhs):
            if not rscalar:
                raise TypeCheckError(f"pl.{name} needs the tensor or tile as its first operand",
                                     span)
            block = rhs
            _scalar_operand(name, lhs, rhs, span)
        else:
            raise TypeCheckError(f"pl.{name} takes tensors, tiles or scalars", span)
        _check_dtype(name, block, dtypes, span)
        return _like(block, dtype=result, valid=_meet(lhs, rhs))

    return infer


def _unary(name: str, dtypes: frozenset) -> Callable:
    def infer(args, attrs, span):
        (x,) = (a.type for a in args)
        if not _is_block(x):
            raise TypeCheckError(f"pl.{name} takes a tensor or tile, not a scalar", span)
        _check_dtype(name, x, dtypes, span)
        return _like(x, valid=_meet(x))

    return infer


def _infer_cmp(args, attrs, span):
    code = attrs["cmp_type"]
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < len(CMP_TYPES):
        raise TypeCheckError(
            f"pl.cmp: cmp_type must be 0..5, got {code!r}",
            span,
            hint="codes: " + ", ".join(f"{i}={n.upper()}" for i, n in enumerate(CMP_TYPES)),
        )
    if all(isinstance(a.type, ScalarType) for a in args):
        return ScalarType(DataType.BOOL)  # a condition: `if i == n - 1:`
    return _binary("cmp", NUMERIC, result=DataType.BOOL)(args, attrs, span)


_BOOL = ScalarType(DataType.BOOL)


def _with_scalar_logic(infer: Callable) -> Callable:
    """`and` / `or` / `not` of conditions: BOOL scalars give a BOOL scalar; everything else
    is the elementwise operator's."""

    def logic(args, attrs, span):
        if args and all(a.type == _BOOL for a in args):
            return _BOOL
        return infer(args, attrs, span)

    return logic


def _infer_sel(args, attrs, span):
    mask, lhs, rhs = (a.type for a in args)
    for what, t in (("mask", mask), ("lhs", lhs), ("rhs", rhs)):
        _block("sel", t, what, span)
    _same_kind("sel", mask, lhs, span)
    _same_kind("sel", lhs, rhs, span)
    _same_shape("sel", mask, lhs, span)
    _same_shape("sel", lhs, rhs, span)
    _same_dtype("sel", lhs, rhs, span)
    if mask.dtype is not DataType.BOOL:
        raise TypeCheckError(f"pl.sel: the mask must be BOOL (from pl.cmp), got {mask.dtype.name}",
                             span)
    return _like(lhs, valid=_meet(mask, lhs, rhs))


def _infer_expands(args, attrs, span):
    target, value = (a.type for a in args)
    _block("expands", target, "the target", span)
    _scalar_operand("expands", value, target, span)
    return _like(target, valid=_meet(target))


def _static_shape(op: str, shape, span) -> tuple:
    if not isinstance(shape, tuple) or not shape or any(
            not isinstance(d, int) or isinstance(d, bool) or d <= 0 for d in shape):
        raise TypeCheckError(f"pl.{op}: shape must be a list of positive integers, got {shape!r}",
                             span)
    return shape


def _dtype_attr(op: str, dtype, span) -> DataType:
    if not isinstance(dtype, DataType):
        raise TypeCheckError(f"pl.{op} needs a pl dtype such as pl.FP32, got {dtype!r}", span)
    return dtype


def _infer_full(args, attrs, span):
    (value,) = (a.type for a in args)
    shape = _static_shape("full", attrs["shape"], span)
    dtype = _dtype_attr("full", attrs["dtype"], span)
    tile = TileType(shape, dtype)
    _scalar_operand("full", value, tile, span)
    return tile


def _infer_create_tile(args, attrs, span):
    shape = _static_shape("create_tile", attrs["shape"], span)
    dtype = _dtype_attr("create_tile", attrs["dtype"], span)
    if not isinstance(attrs["target_memory"], MemorySpace):
        raise TypeCheckError("pl.create_tile: target_memory must be a pl.Mem member", span)
    return TileType(shape, dtype)


def _infer_cast(args, attrs, span):
    (x,) = (a.type for a in args)
    dtype = attrs["dtype"]
    if not isinstance(dtype, DataType):
        raise TypeCheckError("pl.cast needs a pl dtype as its second argument", span)
    if attrs["mode"] not in CAST_MODES:
        raise TypeCheckError(
            f"unknown cast mode {attrs['mode']!r}", span, hint=f"use one of {', '.join(CAST_MODES)}"
        )
    if isinstance(x, TileType):
        return TileType(x.shape, dtype, valid_shape=x.valid_shape)
    if isinstance(x, TensorType):
        return TensorType(x.shape, dtype)
    return ScalarType(dtype)


# -- reductions and broadcasts


def _infer_row_reduce(name: str) -> Callable:
    def infer(args, attrs, span):
        ops = get_op(name).operands(args, attrs)
        x = _block(name, ops["x"].type, "x", span)
        _rank2(name, x, span)
        _check_dtype(name, x, NUMERIC, span)
        tmp = ops["tmp_tile"]
        if isinstance(x, TileType):
            if tmp is None:
                raise TypeCheckError(
                    f"the tile form of pl.{name} needs tmp_tile",
                    span,
                    hint=f"pass a scratch tile of x's dtype, at least {_fmt_shape(x.shape)}: "
                         f"pl.{name}(x, pl.create_tile({list(x.shape)}, {x.dtype!r}))",
                )
            _scratch(name, tmp.type, x, span)
        elif tmp is not None:
            raise TypeCheckError(f"pl.{name} on a tensor takes no tmp_tile: lowering allocates it",
                                 span)
        return _like(x, shape=(x.shape[0], 1), valid=(x.valid[0], 1) if isinstance(
            x, TileType) else None)

    return infer


def _scratch(name: str, tmp, x, span) -> None:
    if not isinstance(tmp, TileType) or tmp.dtype != x.dtype or len(tmp.shape) != 2 or any(
            t < d for t, d in zip(tmp.shape, x.shape)):
        raise TypeCheckError(
            f"pl.{name}: tmp_tile must be a {x.dtype.name} tile of at least "
            f"{_fmt_shape(x.shape)}, got {describe(tmp)}",
            span,
        )


def _infer_col_reduce(name: str, tmp_allowed: bool) -> Callable:
    def infer(args, attrs, span):
        ops = get_op(name).operands(args, attrs)
        x = _block(name, ops["x"].type, "x", span)
        _rank2(name, x, span)
        _check_dtype(name, x, NUMERIC, span)
        tmp = ops.get("tmp_tile") if tmp_allowed else None
        if tmp is not None:
            if not isinstance(x, TileType):
                raise TypeCheckError(f"pl.{name} on a tensor takes no tmp_tile", span)
            _scratch(name, tmp.type, x, span)
        return _like(x, shape=(1, x.shape[1]), valid=(1, x.valid[1]) if isinstance(
            x, TileType) else None)

    return infer


def _infer_expand(name: str, axis: int, dtypes: frozenset) -> Callable:
    """Row (axis 0: vector [R, 1]) or column (axis 1: vector [1, C]) broadcasts."""

    def infer(args, attrs, span):
        x, v = (a.type for a in args)
        _block(name, x, "x", span)
        _block(name, v, "the vector", span)
        _same_kind(name, x, v, span)
        _rank2(name, x, span)
        _same_dtype(name, x, v, span)
        _check_dtype(name, x, dtypes, span)
        want = (x.shape[0], 1) if axis == 0 else (1, x.shape[1])
        if tuple(v.shape) != want:
            raise TypeCheckError(
                f"pl.{name}: the vector must be {_fmt_shape(want)} for x {_fmt_shape(x.shape)}, "
                f"got {_fmt_shape(v.shape)}",
                span,
                hint="row vectors come from pl.row_sum / pl.row_max; column vectors from "
                     "pl.col_sum or a [1, C] load",
            )
        valid = None
        if isinstance(x, TileType) and (x.valid_shape or v.valid_shape):
            vr = _vmin(x.valid[0], v.valid[0]) if axis == 0 else x.valid[0]
            vc = _vmin(x.valid[1], v.valid[1]) if axis == 1 else x.valid[1]
            valid = (vr, vc)
        return _like(x, valid=valid)

    return infer


# -- matmul


def _matmul_dims(name, lhs, rhs, a_trans, b_trans, span):
    for what, t in (("lhs", lhs), ("rhs", rhs)):
        _block(name, t, what, span)
        _rank2(name, t, span)
    _same_kind(name, lhs, rhs, span)
    _same_dtype(name, lhs, rhs, span)
    _check_dtype(name, lhs, MATMUL_INPUTS, span)
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


def _acc_dtypes(inputs: DataType) -> frozenset:
    return frozenset({DataType.INT32}) if inputs is DataType.INT8 else FLOATS


def _infer_matmul(args, attrs, span):
    lhs, rhs = (a.type for a in args)
    m, n, valid = _matmul_dims("matmul", lhs, rhs, attrs["a_trans"], attrs["b_trans"], span)
    out = attrs["out_dtype"]
    if out is None:
        out = DataType.INT32 if lhs.dtype is DataType.INT8 else DataType.FP32
    legal = _acc_dtypes(lhs.dtype)
    if out not in legal:
        raise TypeCheckError(f"pl.matmul of {lhs.dtype.name} cannot produce {out!r}", span,
                             hint=f"out_dtype: {_names(legal)}")
    return _like(lhs, shape=(m, n), dtype=out, valid=valid)


def _infer_matmul_acc(args, attrs, span):
    acc, lhs, rhs = (a.type for a in args)
    m, n, _ = _matmul_dims("matmul_acc", lhs, rhs, attrs["a_trans"], attrs["b_trans"], span)
    if not isinstance(acc, TileType) or not isinstance(lhs, TileType):
        raise TypeCheckError(
            "pl.matmul_acc works on tiles",
            span,
            hint="accumulate over K in a kernel: acc = pl.matmul(...) then "
                 "acc = pl.matmul_acc(acc, a, b) in a pl.range loop",
        )
    if tuple(acc.shape) != (m, n):
        raise TypeCheckError(f"pl.matmul_acc: acc is {_fmt_shape(acc.shape)} but lhs @ rhs is "
                             f"{_fmt_shape((m, n))}", span)
    if acc.dtype not in _acc_dtypes(lhs.dtype):
        raise TypeCheckError(f"pl.matmul_acc: a {lhs.dtype.name} product cannot accumulate into "
                             f"{acc.dtype.name}", span)
    return TileType(acc.shape, acc.dtype, valid_shape=acc.valid_shape)


# -- movement


def _need(kind, t, what, op, span):
    if not isinstance(t, kind):
        raise TypeCheckError(f"pl.{op}: {what}", span)


def _const_value(e):
    """The int value of a constant index expression, else None (a runtime value)."""
    value = getattr(e, "value", None)
    return value if isinstance(value, int) and not hasattr(e, "name") else None


def _check_window(op, tensor, offsets, shape, span):
    if len(shape) != len(tensor.shape) or len(offsets) != len(tensor.shape):
        raise TypeCheckError(
            f"pl.{op}: a value of rank {len(tensor.shape)} needs {len(tensor.shape)} offsets "
            f"and sizes, got {len(offsets)} and {len(shape)}",
            span,
        )
    for off, size, dim in zip(offsets, shape, tensor.shape):
        start = _const_value(off)
        if not isinstance(size, int):
            continue  # an extent known only at run time: the tile's own bounds limit it
        if start is not None and (start < 0 or start + size > dim):
            raise TypeCheckError(
                f"pl.{op}: window {_fmt_shape(shape)} at offset "
                f"{_fmt_shape([getattr(o, 'value', '?') for o in offsets])} exceeds "
                f"{_fmt_shape(tensor.shape)}",
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
            or (isinstance(v, int) and (v > s or v < 0)) for v, s in zip(valid, shape)):
        raise TypeCheckError(
            f"pl.{op}: valid_shape {_fmt_shape(valid) if isinstance(valid, tuple) else valid!r} "
            f"must fit in the tile {_fmt_shape(shape)}",
            span,
        )


def _runtime_extent(v) -> bool:
    t = getattr(v, "type", None)
    return (isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype is not DataType.BOOL
            and not isinstance(v, bool))


def _infer_load(args, attrs, span):
    tensor, offsets = args
    _need(TensorType, tensor.type, "the first argument must be a tensor", "load", span)
    shape = _static_shape("load", attrs["shapes"], span)
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
        raise TypeCheckError(f"pl.store: shapes {_fmt_shape(shapes)} differ from the tile's "
                             f"{_fmt_shape(tile.type.shape)}", span,
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
    return TileType(x.shape, x.dtype, valid_shape=x.valid_shape)


def _infer_slice(args, attrs, span):
    x, offsets = args
    xt = _block("slice", x.type, "the sliced value", span)
    shape = _static_shape("slice", attrs["shape"], span)
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
        valid = tuple(max(0, min(size, v - s)) for v, s, size in zip(xt.valid, starts, shape))
    return TileType(shape, xt.dtype, valid_shape=valid)


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _infer_reshape(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "reshapes tiles (reshape tensors on the host)", "reshape", span)
    shape = _static_shape("reshape", attrs["shape"], span)
    if _numel(shape) != _numel(x.shape):
        raise TypeCheckError(f"pl.reshape: {_fmt_shape(x.shape)} has {_numel(x.shape)} elements, "
                             f"{_fmt_shape(shape)} has {_numel(shape)}", span)
    if x.valid_shape is not None:
        raise TypeCheckError("pl.reshape of a partially valid tile", span,
                             hint="pl.fillpad it first and pl.set_validshape it to the full tile")
    return TileType(shape, x.dtype)


def _infer_transpose(args, attrs, span):
    (x,) = (a.type for a in args)
    _block("transpose", x, "the transposed value", span)
    _rank2("transpose", x, span)
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
        _rank2("concat", t, span)
    _same_dtype("concat", a, b, span)
    if a.shape[0] != b.shape[0]:
        raise TypeCheckError(f"pl.concat joins columns of tiles with equal rows: "
                             f"{_fmt_shape(a.shape)} and {_fmt_shape(b.shape)}", span)
    if a.valid[1] != a.shape[1]:
        raise TypeCheckError("pl.concat: the first tile's columns must all be valid", span,
                             hint="pl.fillpad it and pl.set_validshape it to its full width")
    shape = (a.shape[0], a.shape[1] + b.shape[1])
    valid = None
    if a.valid_shape or b.valid_shape:
        valid = (_vmin(a.valid[0], b.valid[0]), a.shape[1] + b.valid[1])
    return TileType(shape, a.dtype, valid_shape=valid)


def _infer_fillpad(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "fills the padding of a tile", "fillpad", span)
    pad = attrs["pad_value"]
    if not isinstance(pad, PadValue) or pad is PadValue.null:
        raise TypeCheckError("pl.fillpad needs pad_value pl.PadValue.zero, .max or .min", span)
    return TileType(x.shape, x.dtype, valid_shape=x.valid_shape)


def _infer_set_validshape(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "sets the valid region of a tile", "set_validshape", span)
    _rank2("set_validshape", x, span)
    valid = (attrs["valid_rows"], attrs["valid_cols"])
    _check_valid("set_validshape", valid, x.shape, span)
    return TileType(x.shape, x.dtype, valid_shape=valid)


def _infer_read(args, attrs, span):
    x, indices = args
    xt = _block("read", x.type, "the value read from", span)
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
    for value, dim in zip(consts, xt.shape):
        if value is not None and not 0 <= value < dim:
            shown = _fmt_shape(["?" if v is None else v for v in consts])
            kind = "tile" if isinstance(xt, TileType) else "tensor"
            raise TypeCheckError(
                f"pl.read: index {shown} is outside the {kind} {_fmt_shape(xt.shape)}",
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
    _rank2("tile.assemble", dst.type, span)
    _same_dtype("tile.assemble", dst.type, src.type, span)
    _check_window("tile.assemble", dst.type, offsets.items, src.type.valid, span)
    return dst.type


def _infer_transpose_view(args, attrs, span):
    (x,) = (a.type for a in args)
    _need(TileType, x, "views a tile as its transpose", "tile.transpose_view", span)
    _rank2("tile.transpose_view", x, span)
    valid = x.valid_shape[::-1] if x.valid_shape else None
    return TileType(x.shape[::-1], x.dtype, valid_shape=valid)


def _infer_create_tensor(args, attrs, span):
    return TensorType(tuple(attrs["shape"]), attrs["dtype"])


def _infer_dump_tag(args, attrs, span):
    (t,) = args
    if not isinstance(t.type, TensorType):
        raise TypeCheckError("pl.dump_tag marks a tensor; this is not one", span)
    return TupleType(())


def _infer_scalar_int(name):
    def infer(args, attrs, span):
        for a in args:
            if not isinstance(a.type, ScalarType) or a.type.dtype.is_float:
                raise TypeCheckError(f"`{name}` is only defined on integer scalars", span)
        return INDEX

    return infer


# ----------------------------------------------------------------------------- the operators

_SCALAR_FORM = " A Python number or scalar as either operand selects the scalar form."

# -- elementwise arithmetic: name -> (doc, torch, dtypes, isa, isa_scalar, isa_rscalar)
_ARITH = {
    "add": ("Elementwise lhs + rhs.", "lhs + rhs", NUMERIC, "tadd", "tadds", "tadds"),
    "sub": ("Elementwise lhs - rhs.", "lhs - rhs", NUMERIC, "tsub", "tsubs", "trsubs"),
    "mul": ("Elementwise lhs * rhs.", "lhs * rhs", NUMERIC, "tmul", "tmuls", "tmuls"),
    "div": ("Elementwise lhs / rhs (integers truncate toward zero; x / 0 gives 0).",
            "lhs / rhs", NUMERIC, "tdiv", "tdivs", "trdivs"),
    "maximum": ("Elementwise max(lhs, rhs); NaN propagates, as in torch.maximum.",
                "torch.maximum(lhs, rhs)", NUMERIC, "tmax", "tmaxs", "trmaxs"),
    "minimum": ("Elementwise min(lhs, rhs); NaN propagates, as in torch.minimum.",
                "torch.minimum(lhs, rhs)", NUMERIC, "tmin", "tmins", "trmins"),
}
for _name, (_doc, _torch, _dtypes, _isa, _isa_s, _isa_r) in _ARITH.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _binary(_name, _dtypes, index_ok=_name in ("add", "sub", "mul", "div")),
            "binary",
            _doc + _SCALAR_FORM + " FP16/BF16 results are rounded after the operation.",
            dtypes=_dtypes,
            torch=_torch,
            emit="binary",
            isa=_isa,
            isa_scalar=_isa_s,
            isa_rscalar=_isa_r,
        )
    )

# -- bitwise (integer dtypes)
_BITWISE = {
    "and_": ("Elementwise bitwise lhs & rhs.", "lhs & rhs", "tand", "tands", "tands"),
    "or_": ("Elementwise bitwise lhs | rhs.", "lhs | rhs", "tor", "tors", "tors"),
    "xor": ("Elementwise bitwise lhs ^ rhs.", "lhs ^ rhs", "txor", "txors", "txors"),
    "shl": ("Elementwise lhs << rhs; a shift count outside [0, bits) gives 0.",
            "lhs << rhs", "tshl", "tshls", ""),
    "shr": (("Elementwise lhs >> rhs (arithmetic for signed dtypes); a count outside "
             "[0, bits) gives 0, or -1 for negative signed values."),
            "lhs >> rhs", "tshr", "tshrs", ""),
}
for _name, (_doc, _torch, _isa, _isa_s, _isa_r) in _BITWISE.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _with_scalar_logic(_binary(_name, INTS, rscalar=bool(_isa_r))),
            "binary",
            _doc + (" An integer as the second operand selects the scalar form." if not _isa_r
                    else " An integer as either operand selects the scalar form.")
            + (" On two BOOL scalars (conditions) it is the logical operator." if _name in
               ("and_", "or_") else ""),
            dtypes=INTS,
            torch=_torch,
            emit="binary",
            isa=_isa,
            isa_scalar=_isa_s,
            isa_rscalar=_isa_r,
        )
    )

register(
    OpDef(
        "floordiv",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_scalar_int("//"),
        "index",
        "Integer floor division of index scalars (`a // b`).",
        torch="lhs // rhs",
    )
)
register(
    OpDef(
        "mod",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_scalar_int("%"),
        "index",
        "Integer remainder of index scalars (`a % b`).",
        torch="lhs % rhs",
    )
)
for _name, _what in (("min", "smaller"), ("max", "larger")):
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _infer_scalar_int(f"pl.{_name}"),
            "index",
            f"The {_what} of two integer scalars (index arithmetic: loop bounds, offsets, "
            "valid lengths); not a reduction of a tile (pl.row_max / pl.col_max are).",
            torch=f"{_name}(lhs, rhs)",
        )
    )

# -- elementwise unary: name -> (doc, torch, dtypes, isa)
_UNARY = {
    "exp": ("Elementwise e**x.", "torch.exp(x)", FLOATS, "texp"),
    "log": ("Elementwise natural logarithm.", "torch.log(x)", FLOATS, "tlog"),
    "sqrt": ("Elementwise square root.", "torch.sqrt(x)", FLOATS, "tsqrt"),
    "rsqrt": ("Elementwise 1 / sqrt(x), computed as one reciprocal of the square root.",
              "torch.rsqrt(x)", FLOATS, "trsqrt"),
    "recip": ("Elementwise 1 / x.", "torch.reciprocal(x)", FLOATS, "trecip"),
    "neg": ("Elementwise -x (integers wrap).", "torch.neg(x)", NUMERIC, "tneg"),
    "abs": ("Elementwise |x| (integers wrap at the minimum).", "torch.abs(x)", NUMERIC, "tabs"),
    "relu": ("Elementwise max(x, 0); NaN stays NaN.", "torch.relu(x)", NUMERIC, "trelu"),
    "not_": ("Elementwise bitwise NOT.", "torch.bitwise_not(x)", INTS, "tnot"),
}
for _name, (_doc, _torch, _dtypes, _isa) in _UNARY.items():
    register(
        OpDef(
            _name,
            (OpParam("x", "value"),),
            _with_scalar_logic(_unary(_name, _dtypes)) if _name == "not_"
            else _unary(_name, _dtypes),
            "unary",
            _doc + (" Computed in FP32 and rounded once to FP16/BF16." if _dtypes is FLOATS
                    else "") + (" On a BOOL scalar (a condition) it is `not`." if _name == "not_"
                                else ""),
            dtypes=_dtypes,
            torch=_torch,
            emit="unary",
            isa=_isa,
        )
    )

register(
    OpDef(
        "cmp",
        (OpParam("lhs", "value"), OpParam("rhs", "value"), OpParam("cmp_type", "attr", 0)),
        _infer_cmp,
        "binary",
        "Elementwise comparison giving a BOOL mask: cmp_type 0=EQ, 1=NE, 2=LT, 3=LE, 4=GT, "
        "5=GE.  Comparisons with NaN are false except NE.  A Python number as either operand "
        "selects the scalar form.  Use the mask with pl.sel.",
        torch="[lhs == rhs, lhs != rhs, lhs < rhs, lhs <= rhs, lhs > rhs, lhs >= rhs][cmp_type]",
        emit="compare",
        isa="tcmp",
        isa_scalar="tcmps",
        isa_rscalar="tcmps",
    )
)
register(
    OpDef(
        "sel",
        (OpParam("mask", "value"), OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_sel,
        "select",
        "Elementwise mask ? lhs : rhs, with a BOOL mask from pl.cmp.",
        dtypes=ANY,
        torch="torch.where(mask, lhs, rhs)",
        emit="select",
        isa="tsel",
    )
)
register(
    OpDef(
        "expands",
        (OpParam("target", "value"), OpParam("scalar", "value")),
        _infer_expands,
        "expands",
        "A value shaped like `target` with every element equal to `scalar` (rounded once to "
        "target's dtype); target's data is not read.",
        torch="torch.full_like(target, scalar)",
        emit="fill",
        isa="texpands",
    )
)
register(
    OpDef(
        "full",
        (OpParam("shape", "attr"), OpParam("dtype", "attr"), OpParam("value", "value")),
        _infer_full,
        "tile",
        "A new Vec tile of `shape` and `dtype` with every element equal to `value`.",
        torch="torch.full(shape, value, dtype=dtype)",
        emit="fill",
        isa="texpands",
    )
)
register(
    OpDef(
        "create_tile",
        (OpParam("shape", "attr"), OpParam("dtype", "attr"),
         OpParam("target_memory", "attr", MemorySpace.Vec)),
        _infer_create_tile,
        "tile",
        "A new tile of `shape` and `dtype` in `target_memory` whose contents are undefined: "
        "scratch space, e.g. the tmp_tile of a reduction.",
        dtypes=ANY,
        torch="torch.empty(shape, dtype=dtype)",
        emit="create",
    )
)
register(
    OpDef(
        "cast",
        (OpParam("x", "value"), OpParam("dtype", "attr", aliases=("target_type",)),
         OpParam("mode", "attr", "rint")),
        _infer_cast,
        "cast",
        "Convert to `dtype` with rounding `mode`: rint (nearest, ties to even; torch's), round "
        "(ties away from zero), floor, ceil, trunc, odd (round to odd), none (rint for float "
        "targets, trunc for float->int).  Float->int saturates (NaN gives 0).  A conversion the "
        "backend cannot do in one instruction runs as the chain LegalizeTileCast chose, every "
        "hop with the same mode.",
        dtypes=ANY,
        torch="x.to(dtype)",
        emit="cast",
        isa="tcvt",
    )
)

# -- reductions
_ROW_REDUCE = {
    "row_sum": ("sum", "x.sum(dim=1, keepdim=True)", "trowsum"),
    "row_max": ("maximum", "x.amax(dim=1, keepdim=True)", "trowmax"),
    "row_min": ("minimum", "x.amin(dim=1, keepdim=True)", "trowmin"),
}
for _name, (_what, _torch, _isa) in _ROW_REDUCE.items():
    register(
        OpDef(
            _name,
            (OpParam("x", "value"), OpParam("tmp_tile", "value", None)),
            _infer_row_reduce(_name),
            "reduce_row",
            f"The {_what} of each row of a [R, C] value, as [R, 1].  Sequential: column 0 first, "
            "every step rounded to x's dtype (an FP16 tile accumulates in FP16).  Every column "
            "of the tile takes part, padding included; exclude padding with pl.fillpad.  The "
            "tile form needs tmp_tile, a scratch tile of x's dtype at least x's shape "
            "(contents undefined afterwards); the tensor form takes none.",
            torch=_torch,
            emit="reduce",
            isa=_isa,
        )
    )
register(
    OpDef(
        "col_sum",
        (OpParam("x", "value"), OpParam("tmp_tile", "value", None)),
        _infer_col_reduce("col_sum", tmp_allowed=True),
        "reduce_col",
        "The sum of each column of a [R, C] tile, as [1, C].  Without tmp_tile the rows are "
        "added sequentially (row 0 first); with tmp_tile (a scratch tile of x's dtype, at "
        "least x's shape, left undefined) they are added as the device's pairwise tree: rows "
        "2i and 2i+1 in pairs, an odd last row added to the first pair's sum, until one row "
        "is left.  The two orders differ in the last bits.  Every row takes part, padding "
        "included.",
        torch="x.sum(dim=0, keepdim=True)",
        emit="reduce",
        isa="tcolsum",
    )
)
for _name, (_what, _torch, _isa) in {
    "col_max": ("maximum", "x.amax(dim=0, keepdim=True)", "tcolmax"),
    "col_min": ("minimum", "x.amin(dim=0, keepdim=True)", "tcolmin"),
}.items():
    register(
        OpDef(
            _name,
            (OpParam("x", "value"),),
            _infer_col_reduce(_name, tmp_allowed=False),
            "reduce_col",
            f"The {_what} of each column of a [R, C] value, as [1, C]; every row takes part, "
            "padding included.",
            torch=_torch,
            emit="reduce",
            isa=_isa,
        )
    )

# -- broadcasts: suffix -> (formula on (x, v), dtypes, isa suffix)
_EXPAND = {
    "": ("v", NUMERIC, ""),
    "_add": ("x + v", NUMERIC, "add"),
    "_sub": ("x - v", NUMERIC, "sub"),
    "_mul": ("x * v", NUMERIC, "mul"),
    "_div": ("x / v", NUMERIC, "div"),
    "_max": ("torch.maximum(x, v)", NUMERIC, "max"),
    "_min": ("torch.minimum(x, v)", NUMERIC, "min"),
    "_expdif": ("torch.exp(x - v)", FLOATS, "expdif"),
}
for _axis, _kind, _vec in ((0, "row", "[R, 1]"), (1, "col", "[1, C]")):
    for _suffix, (_formula, _dtypes, _isa) in _EXPAND.items():
        _name = f"{_kind}_expand{_suffix}"
        _doc = (f"Broadcasts the {_vec} vector `v` along each {_kind} of the [R, C] value `x`: "
                f"the result is {_formula} elementwise")
        if _suffix == "_expdif":
            _doc += ", computed in FP32 and rounded once (the softmax numerator)"
        elif _suffix == "":
            _doc += " (x gives only the shape)"
        register(
            OpDef(
                _name,
                (OpParam("x", "value"), OpParam("v", "value")),
                _infer_expand(_name, _axis, _dtypes),
                f"expand_{_kind}",
                _doc + ".",
                dtypes=_dtypes,
                torch=_formula if _suffix else "v.expand_as(x)",
                emit="binary",
                isa=f"t{_kind}expand{_isa}",
            )
        )

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
        "pl.Mem.Acc.  Tensor form: lowered whole-K through Mat/Left/Right/Acc.",
        dtypes=MATMUL_INPUTS,
        torch="(lhs.T if a_trans else lhs).float() @ (rhs.T if b_trans else rhs).float()",
        emit="matmul",
        isa="tmatmul",
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
        "then matmul_acc is deterministic: the same inputs give the same bits every run.",
        dtypes=MATMUL_INPUTS,
        torch="acc + (lhs.T if a_trans else lhs).float() @ (rhs.T if b_trans else rhs).float()",
        emit="matmul",
        isa="tmatmul_acc",
    )
)

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
        dtypes=ANY,
        torch="tensor[window]",
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
        dtypes=ANY,
        torch="tensor[window] = tile",
        emit="store",
        isa="tstore",
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
        torch="dst[window] = src",
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
        "Acc -> Vec only on Ascend950.",
        dtypes=ANY,
        torch="tile.clone()",
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
        torch="x[window]",
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
        "must be fully valid).",
        dtypes=ANY,
        torch="x.reshape(shape)",
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
        torch="x.transpose(axis1, axis2)",
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
        torch="torch.cat([lhs, rhs], dim=1)",
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
        torch="x (padding replaced)",
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
        torch="x",
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
        torch="dst.clone() with dst[window] = src",
        emit="insert",
        isa="tinsert",
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
        torch="x.transpose(0, 1)",
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
        torch="x[indices].item()",
        emit="read",
        isa="tgetval",
    )
)

# -- SPMD
register(
    OpDef(
        "get_block_idx",
        (),
        lambda args, attrs, span: INDEX,
        "index",
        "The index of the running block of an SPMD dispatch (`pl.spmd(n)`: 0 .. n-1; 0 in "
        "a plain task).  Legal in kernels and inside `pl.at` / `pl.spmd` blocks.",
        dtypes=frozenset(),
        torch="block_idx",
    )
)

register(
    OpDef(
        "get_block_num",
        (),
        lambda args, attrs, span: INDEX,
        "index",
        "The number of blocks of the running SPMD dispatch (`pl.spmd(n)`: n; 1 in a plain "
        "task).  Legal in kernels and inside `pl.at` / `pl.spmd` blocks.",
        dtypes=frozenset(),
        torch="block_num",
    )
)

# -- orchestration
register(
    OpDef(
        "create_tensor",
        (OpParam("shape", "attr"), OpParam("dtype", "attr")),
        _infer_create_tensor,
        "orchestration",
        "Allocate a scratch tensor in global memory (orchestration only).",
        dtypes=ANY,
        torch="torch.empty(shape, dtype=dtype)",
    )
)
register(
    OpDef(
        "dump_tag",
        (OpParam("t", "value"),),
        _infer_dump_tag,
        "orchestration",
        "A statement of an orchestration body: marks tensor `t` for dumping.  Every later "
        "task that takes `t` as an argument dumps it when the run has enable_dump_args=1 "
        "(inputs before the task runs, outputs after it completes).  Computes nothing.",
        dtypes=ANY,
        torch="None (no-op: dumps are taken by the runtime)",
    )
)
