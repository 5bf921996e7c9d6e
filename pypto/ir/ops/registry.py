"""The registry itself: what an operator declaration holds, and the lookups."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dtypes import DataType
from ..errors import Span
from ..nodes import Call
from ..types import Type

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
ANY = frozenset(d for d in DataType if not d.packed)
"""Every byte-sized element type: what an operator that moves or views any data takes."""
WITH_4BIT = frozenset(DataType)
"""Every element type, the 4-bit ones (two to a byte) too: the few operators that take
those (pypto/ir/packed.py: load, store, move, cast)."""
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
class Step:
    """One primitive operation of a composite operator's expansion: `dst = op(*args,
    **attrs)`.  An argument is the name of an earlier step's value (or of the operator's
    operand) or an FP32 constant; `attrs` are the primitive's attributes as (name, value)
    pairs (a cast's dtype and mode).  A name bound again is the same buffer updated."""

    dst: str
    op: str
    args: tuple
    attrs: tuple = ()


@dataclass(frozen=True)
class OpDef:
    """An operator: signature, typing, lowering hooks and documentation.

    category: what passes do with it ("binary", "unary", "cast", "select", "ternary", "expands",
    "fill", "reduce_row", "reduce_col", "expand_row", "expand_col", "matmul", "matmul_mx" (the
    MX block-scaled product: scale operands too), "movement",
    "element", "gather", "tile", "index", "orchestration", "batch": lowered to one operator
    per batch before code generation).
    emit: the templates/ops.cpp.j2 macro (operator form) that emits it in a kernel.
    isa: the simulator instruction (pypto/sim/include/pto/*.hpp) of its tile form;
    isa_scalar / isa_rscalar: of its scalar forms (tile op scalar, scalar op tile).
    writes: the position among the call's arguments of the tensor (or tile) it writes into
    and returns (`pl.store(tile, offsets, out)`: 2), None for an operator that makes a new
    value.
    reads_destination: the write reads the values it does not replace (pl.scatter loads each
    row of its input, writes some elements and stores the row back), so a task making it is
    InOut on the destination, not Out.
    expansion: a composite operator's primitive operations (`Step`s, the last one its
    result): LowerCompositeOps replaces each of its tile calls by them before anything is
    placed, and its torch semantics run the same steps; it has no macro or instruction.
    """

    name: str
    params: tuple[OpParam, ...]
    infer: Callable[[tuple, dict, Span | None], Type]
    category: str
    doc: str
    dtypes: frozenset = NUMERIC
    emit: str = ""
    isa: str = ""
    isa_scalar: str = ""
    isa_rscalar: str = ""
    writes: int | None = None
    reads_destination: bool = False
    expansion: tuple[Step, ...] = ()

    @property
    def operand_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind != "attr")

    @property
    def attr_params(self) -> tuple[OpParam, ...]:
        return tuple(p for p in self.params if p.kind == "attr")

    def scratch_dtypes(self, dtype: DataType) -> tuple[DataType, ...]:
        """The element types of the buffers a composite operator's expansion binds besides
        its operands and result (one per name), for operands of `dtype`: a cast's value is
        of its dtype, any other step's of its first named argument."""
        held = dict.fromkeys(self.operand_names, dtype)
        scratch: dict[str, DataType] = {}
        for step in self.expansion[:-1]:
            if step.dst not in held:
                attrs = dict(step.attrs)
                made = attrs["dtype"] if "dtype" in attrs else next(
                    held[a] for a in step.args if isinstance(a, str))
                held[step.dst] = scratch[step.dst] = made
        return tuple(scratch.values())

    def operands(self, args: tuple, attrs: dict) -> dict[str, Any]:
        """Operand name -> expression (None for a left-out optional operand)."""
        it = iter(args)
        return {p.name: (None if p.name in attrs else next(it))
                for p in self.params if p.kind != "attr"}


_REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    """Declares `op`; a second operator of its name is an error."""
    if op.name in _REGISTRY:
        raise ValueError(f"operator {op.name!r} registered twice")
    _REGISTRY[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    """The operator registered as `name` (KeyError if none)."""
    return _REGISTRY[name]


def all_ops() -> dict[str, OpDef]:
    """Every operator by name, in the order they were declared."""
    return dict(_REGISTRY)


def write_destination(call: Call):
    """The argument `call` writes into and returns (`out` of `pl.store(t, offsets, out)`),
    None for an operator that makes a new value."""
    index = _REGISTRY[call.op].writes if call.op in _REGISTRY else None
    return None if index is None else call.args[index]


def make_call(name: str, *operands, span: Span | None = None, **attrs) -> Call:
    """A well-formed call of a registered operator, its type inferred.

    `operands` fill the operand parameters in order; a trailing optional operand left
    out (or given as None) is recorded as an attribute, as the parser does.
    """
    op = get_op(name)
    full = {p.name: p.default for p in op.attr_params}
    full.update(attrs)
    names = [p for p in op.params if p.kind != "attr"]
    given = []
    for i, p in enumerate(names):
        value = operands[i] if i < len(operands) else None
        if value is None:
            if p.default is REQUIRED:
                raise TypeError(f"pl.{name} needs operand `{p.name}`")
            full[p.name] = p.default
        else:
            given.append(value)
    args = tuple(given)
    return Call(name, args, tuple(sorted(full.items(), key=lambda kv: kv[0])),
                op.infer(args, full, span), span)
