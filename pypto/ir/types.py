"""IR types: tensors in global memory, tiles on chip, scalars."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .dtypes import DataType


class _Spelled(enum.Enum):
    """An enum that prints as user code spells its members: `pl.<Enum>.<member>`."""

    def __repr__(self) -> str:
        return f"pl.{type(self).__name__}.{self.name}"


class MemorySpace(enum.Enum):
    """Where a value lives: global memory or one of the on-chip buffers."""

    DDR = "DDR"
    Vec = "Vec"  # unified buffer (vector core)
    Mat = "Mat"  # L1
    Left = "Left"  # L0A
    Right = "Right"  # L0B
    Acc = "Acc"  # L0C
    Bias = "Bias"  # BT: the cube's bias table, read by matmul_bias / gemv_bias
    LeftScale = "LeftScale"  # L0A's MX scale buffer: the lhs block scales of matmul_mx (A5)
    RightScale = "RightScale"  # L0B's MX scale buffer: the rhs block scales (A5)

    def __repr__(self) -> str:
        return f"pl.Mem.{self.name}"


class TensorLayout(_Spelled):
    """Upstream's tensor layouts (`pl.ND`, `pl.DN`, `pl.NZ`).  A tensor in global memory is
    row-major (ND) here; DN (column-major) and NZ (the cube's fractal order) are refused
    where a program names them for a tensor."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    # The byte orders of MX scale tensors (pto-isa's Layout): refused where named.
    MX_A_ZZ = "MX_A_ZZ"
    MX_B_NN = "MX_B_NN"


class Direction(enum.Enum):
    """How a function uses a tensor parameter."""

    In = "in"
    Out = "out"
    InOut = "inout"


class FunctionType(_Spelled):
    """The role of a function in a program."""

    Orchestration = "Orchestration"
    InCore = "InCore"
    Inline = "Inline"
    Opaque = "Opaque"  # upstream's plane-less building block: spliced where it is called
    # The cross-core pipe: a Group calls one AIC (cube) and one AIV (vector, two lanes)
    # function, which run concurrently (ir/ops/cross_core).  The parser reads AIC / AIV as
    # InCore functions of that "level"; a Group is one task.
    AIC = "AIC"
    AIV = "AIV"
    Group = "Group"


class Level(_Spelled):
    """Hardware level a `pl.at` scope targets."""

    CORE_GROUP = "CORE_GROUP"
    AIC = "AIC"
    AIV = "AIV"
    HOST = "HOST"


class Role(_Spelled):
    """Upstream's roles of HOST-level functions in a multi-chip program (refused here)."""

    Orchestrator = "Orchestrator"
    SubWorker = "SubWorker"


class PadValue(_Spelled):
    """What a partial-tile load writes outside the valid region."""

    null = "null"
    zero = "zero"
    max = "max"
    min = "min"


class AtomicType(_Spelled):
    """Store semantics: plain or atomic accumulate."""

    None_ = "None_"
    Add = "Add"


class SplitMode(_Spelled):
    """How `pl.split(mode)` divides the vector work of a mixed cube/vector kernel
    between the two vector (AIV) lanes of a core group: by rows, by columns, or not."""

    NONE = "NONE"
    UP_DOWN = "UP_DOWN"
    LEFT_RIGHT = "LEFT_RIGHT"


class ScopeMode(_Spelled):
    """The mode of `with pl.scope(mode=...)`: AUTO infers the dependencies of the tasks
    inside from their accesses (the default everywhere); MANUAL does not (`pl.manual_scope`)."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


Shape = tuple[int, ...]


@dataclass(frozen=True)
class TensorType:
    """A tensor in global memory."""

    shape: Shape
    dtype: DataType

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(_numel(self.shape))


@dataclass(frozen=True)
class TileMemRef:
    """Upstream's `pl.MemRef("name", slots=n)[slot]` in a tile's annotation: the tile lives
    in slot `slot` (an index expression, read where the tile is defined) of the allocation
    `name`, which holds `slots` equally sized slots and nothing else.  Placement only: the
    tile's value is the same wherever it lives (`same_value_type`)."""

    name: str
    slots: int = 1
    slot: object = 0  # an int, or an index expression (pypto.ir.nodes) read at run time


@dataclass(frozen=True)
class TileType:
    """A tile in an on-chip buffer; `memory` and `addr` are filled in by passes.

    `valid_shape` is the region holding real data, anchored at the origin (`None`: the
    whole tile).  The rest is padding: loads fill it with their pad value, vector
    instructions compute it like any other element, stores never write it.  It is part
    of the value's type (static), so it flows from loads through every operator into
    the stores.
    """

    shape: Shape
    dtype: DataType
    memory: MemorySpace | None = None
    addr: int | None = None
    valid_shape: Shape | None = None
    memref: TileMemRef | None = None  # a declared allocation (slot) the tile is placed in

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        valid = self.valid_shape
        if valid is not None:
            valid = tuple(valid)
            # A valid region equal to the tile is no region at all: one spelling per type.
            object.__setattr__(self, "valid_shape", None if valid == self.shape else valid)

    @property
    def valid(self) -> Shape:
        """The valid region's extents (the whole shape when the tile is fully valid)."""
        return self.valid_shape if self.valid_shape is not None else self.shape

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(_numel(self.shape))


@dataclass(frozen=True)
class ScalarType:
    """A scalar value (loop indices, constants, scalar operands)."""

    dtype: DataType


@dataclass(frozen=True)
class TupleType:
    """The type of a call that returns several values."""

    items: tuple


@dataclass(frozen=True)
class TaskIdType:
    """The id of a dispatched task (`with pl.at(...) as tid`, `res, tid = pl.submit(...)`).

    An orchestration-level value whose only use is `deps=[tid, ...]`; an SPMD dispatch's
    id names all of its blocks.
    """

    def __repr__(self) -> str:
        return "pl.TaskId"


TASK_ID = TaskIdType()


@dataclass(frozen=True)
class TaskIdArrayType:
    """An array of `length` task ids (`pl.array.create(n, pl.TASK_ID)`), an orchestration
    value: `tids[i] = tid` rebinds it with entry i set, and `deps=[tids]` waits on every
    entry (an entry never set waits on nothing)."""

    length: int

    def __repr__(self) -> str:
        return f"pl.Array[{self.length}, pl.TASK_ID]"


@dataclass(frozen=True)
class PrefetchHandleType:
    """A handle of upstream's asynchronous GM -> L2 prefetch (`pl.prefetch.*`): the context
    `make_context()` builds, the event `async_prefetch()` starts and the session `wait()`
    takes.  A kernel holds it between those calls; it carries no data."""

    kind: str  # "PrefetchAsyncContext" | "AsyncEvent" | "AsyncSession"

    def __repr__(self) -> str:
        return f"pl.{self.kind}"


PREFETCH_CONTEXT = PrefetchHandleType("PrefetchAsyncContext")
ASYNC_EVENT = PrefetchHandleType("AsyncEvent")
ASYNC_SESSION = PrefetchHandleType("AsyncSession")

Type = (TensorType | TileType | ScalarType | TupleType | TaskIdType | TaskIdArrayType
        | PrefetchHandleType)

INDEX = ScalarType(DataType.INT64)


def _numel(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def describe(t: Type) -> str:
    """A type as messages name it: `a FP32 tile [16, 32] valid [5, 32]`."""
    if isinstance(t, TileType):
        valid = "" if t.valid_shape is None else f" valid {list(t.valid_shape)}"
        return f"a {t.dtype.name} tile {list(t.shape)}{valid}"
    if isinstance(t, TensorType):
        return f"a {t.dtype.name} tensor {list(t.shape)}"
    if isinstance(t, ScalarType):
        return f"a {t.dtype.name} scalar"
    return str(t)


def same_value_type(a: Type, b: Type) -> bool:
    """Equal up to placement (memory space and address are not part of the value)."""
    if isinstance(a, TileType) and isinstance(b, TileType):
        return a.shape == b.shape and a.dtype == b.dtype and a.valid == b.valid
    return a == b
