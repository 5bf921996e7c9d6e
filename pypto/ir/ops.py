"""The op registry: the single place every operator is declared.

An `OpDef` gives the operator's parameters (operands vs compile-time attributes),
type inference, the dtypes it supports, the template macro that emits it and its
torch semantics.  The language parser, the passes, codegen and the docs all read
operators from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .dtypes import DataType
from .errors import Span, TypeCheckError
from .types import (
    INDEX,
    AtomicType,
    MemorySpace,
    PadValue,
    ScalarType,
    TensorType,
    TileType,
    Type,
)

REQUIRED = object()

FLOATS = frozenset({DataType.FP16, DataType.BF16, DataType.FP32})
NUMERIC = frozenset(
    {
        DataType.INT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.UINT8,
        DataType.UINT16,
        DataType.UINT32,
        DataType.FP16,
        DataType.BF16,
        DataType.FP32,
    }
)
CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")


@dataclass(frozen=True)
class OpParam:
    """One parameter of an operator.

    kind: "value" (an operand expression), "index_list" (list of scalar expressions,
    e.g. offsets), "shape" (list of static ints), "attr" (a compile-time constant).
    """

    name: str
    kind: str
    default: Any = REQUIRED


@dataclass(frozen=True)
class OpDef:
    name: str
    params: tuple[OpParam, ...]
    infer: Callable[[tuple, dict, Span | None], Type]
    category: str
    doc: str
    dtypes: frozenset = NUMERIC
    torch: str = ""  # torch expression used by torch codegen and reference checks

    @property
    def operand_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind != "attr")

    @property
    def attr_params(self) -> tuple[OpParam, ...]:
        return tuple(p for p in self.params if p.kind == "attr")


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


# ----------------------------------------------------------------------------- inference helpers


def _fmt_shape(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _check_dtype(op: str, t: Type, allowed: frozenset, span) -> None:
    dtype = getattr(t, "dtype", None)
    if dtype is not None and dtype not in allowed:
        names = ", ".join(sorted(d.name for d in allowed))
        raise TypeCheckError(
            f"pl.{op} does not support dtype {dtype.name}",
            span,
            hint=f"supported: {names}; convert with pl.cast(x, dtype) first",
        )


def _binary(name: str) -> Callable:
    def infer(args, attrs, span):
        lhs, rhs = (a.type for a in args)
        if isinstance(lhs, ScalarType) and isinstance(rhs, ScalarType):
            # Index arithmetic: integers stay INT64, anything with a float is FP32.
            if lhs.dtype.is_float or rhs.dtype.is_float:
                return ScalarType(DataType.FP32)
            return INDEX
        block = [t for t in (lhs, rhs) if not isinstance(t, ScalarType)]
        if len(block) == 2:
            a, b = block
            if type(a) is not type(b):
                raise TypeCheckError(
                    f"pl.{name} mixes a tensor and a tile",
                    span,
                    hint="load the tensor into a tile with pl.load, or operate on tensors only",
                )
            if a.shape != b.shape:
                raise TypeCheckError(
                    f"shape mismatch in pl.{name}: {_fmt_shape(a.shape)} vs {_fmt_shape(b.shape)}",
                    span,
                    hint="both operands must have the same shape",
                )
            if a.dtype != b.dtype:
                raise TypeCheckError(
                    f"dtype mismatch in pl.{name}: {a.dtype.name} vs {b.dtype.name}",
                    span,
                    hint="convert one operand with pl.cast",
                )
        _check_dtype(name, block[0], NUMERIC, span)
        result = block[0]
        if isinstance(result, TileType):
            return TileType(result.shape, result.dtype)
        return result

    return infer


def _unary(name: str, dtypes: frozenset) -> Callable:
    def infer(args, attrs, span):
        (x,) = (a.type for a in args)
        if isinstance(x, ScalarType):
            raise TypeCheckError(f"pl.{name} takes a tensor or tile, not a scalar", span)
        _check_dtype(name, x, dtypes, span)
        if isinstance(x, TileType):
            return TileType(x.shape, x.dtype)
        return x

    return infer


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
        return TileType(x.shape, dtype)
    if isinstance(x, TensorType):
        return TensorType(x.shape, dtype)
    return ScalarType(dtype)


def _need(kind, t, what, op, span):
    if not isinstance(t, kind):
        raise TypeCheckError(f"pl.{op}: {what}", span)


def _check_window(op, tensor: TensorType, offsets, shape, span):
    if len(shape) != len(tensor.shape) or len(offsets) != len(tensor.shape):
        raise TypeCheckError(
            f"pl.{op}: tensor of rank {len(tensor.shape)} needs {len(tensor.shape)} offsets "
            f"and sizes, got {len(offsets)} and {len(shape)}",
            span,
        )
    for off, size, dim in zip(offsets, shape, tensor.shape):
        start = getattr(off, "value", None) if not hasattr(off, "name") else None
        if isinstance(start, int) and start + size > dim:
            raise TypeCheckError(
                f"pl.{op}: window {_fmt_shape(shape)} at offset "
                f"{_fmt_shape([getattr(o, 'value', '?') for o in offsets])} exceeds tensor "
                f"{_fmt_shape(tensor.shape)}",
                span,
            )


def _infer_load(args, attrs, span):
    tensor, offsets = args
    _need(TensorType, tensor.type, "the first argument must be a tensor", "load", span)
    shape = attrs["shapes"]
    _check_window("load", tensor.type, offsets.items, shape, span)
    valid = attrs["valid_shape"]
    if valid is not None and (
        len(valid) != len(shape) or any(v > s or v < 0 for v, s in zip(valid, shape))
    ):
        raise TypeCheckError(
            f"pl.load: valid_shape {_fmt_shape(valid)} must fit in the tile {_fmt_shape(shape)}",
            span,
        )
    return TileType(tuple(shape), tensor.type.dtype)


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
    _check_window("store", tensor.type, offsets.items, tile.type.shape, span)
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
    _check_window("assemble", dst.type, offsets.items, src.type.shape, span)
    return dst.type


def _infer_create_tensor(args, attrs, span):
    return TensorType(tuple(attrs["shape"]), attrs["dtype"])


def _infer_scalar_int(name):
    def infer(args, attrs, span):
        for a in args:
            if not isinstance(a.type, ScalarType) or a.type.dtype.is_float:
                raise TypeCheckError(f"`{name}` is only defined on integer scalars", span)
        return INDEX

    return infer


# ----------------------------------------------------------------------------- the operators

_BINARY_DOCS = {
    "add": ("Elementwise a + b.", "a + b"),
    "sub": ("Elementwise a - b.", "a - b"),
    "mul": ("Elementwise a * b.", "a * b"),
    "div": ("Elementwise a / b.", "a / b"),
}
for _name, (_doc, _torch) in _BINARY_DOCS.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _binary(_name),
            "binary",
            _doc + " A Python number as either operand selects the scalar form.",
            torch=_torch,
        )
    )

register(
    OpDef(
        "floordiv",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_scalar_int("//"),
        "index",
        "Integer floor division of index scalars (`a // b`).",
        torch="a // b",
    )
)
register(
    OpDef(
        "mod",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_scalar_int("%"),
        "index",
        "Integer remainder of index scalars (`a % b`).",
        torch="a % b",
    )
)
register(
    OpDef(
        "exp",
        (OpParam("x", "value"),),
        _unary("exp", FLOATS),
        "unary",
        "Elementwise e**x.",
        dtypes=FLOATS,
        torch="torch.exp(x)",
    )
)
register(
    OpDef(
        "cast",
        (OpParam("x", "value"), OpParam("dtype", "attr"), OpParam("mode", "attr", "rint")),
        _infer_cast,
        "cast",
        "Convert to `dtype` with rounding `mode` (none rint round floor ceil trunc odd).",
        torch="x.to(dtype)",
    )
)
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
        "Copy a window of a tensor into a tile; outside `valid_shape` the tile holds "
        "`pad_value`.",
        torch="tensor[window]",
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
        ),
        _infer_store,
        "movement",
        "Write a tile's valid region into a tensor window; returns the tensor.",
        torch="tensor[window] = tile",
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
        torch="dst[window] = src",
    )
)
register(
    OpDef(
        "create_tensor",
        (OpParam("shape", "attr"), OpParam("dtype", "attr")),
        _infer_create_tensor,
        "orchestration",
        "Allocate a scratch tensor in global memory (orchestration only).",
        torch="torch.empty(shape, dtype=dtype)",
    )
)
