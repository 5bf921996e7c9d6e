"""IR nodes: immutable dataclasses, compared and hashed structurally.

Source spans are carried on every node but excluded from equality and hashing, so a
program printed with `as_python()` and parsed back compares equal to the original.
Variables are identified by name within a function (rebinding a name overwrites it,
as in the user's Python); the printer and parser therefore round-trip by name.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import InternalError, Span
from .types import Direction, FunctionType, Level, ScalarType, Type


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


@functools.singledispatch
def python_text(node: Any, concise: bool = False) -> str:
    """`node` (a Program or a Function) as Python source `pl.parse` reads back: what
    `as_python` returns.  The printer (`pypto.ir.printer`, which the package imports)
    registers a form per node kind, so the nodes print without importing the printer,
    which reads them."""
    raise InternalError(f"the IR printer has no form for a {type(node).__name__}")


# ----------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Var:
    """A named value of a known type."""

    name: str
    type: Type
    span: Span | None = _span()


@dataclass(frozen=True)
class Const:
    """A literal scalar."""

    value: int | float | bool
    type: ScalarType
    span: Span | None = _span()


@dataclass(frozen=True)
class ExprList:
    """A list of scalar expressions, e.g. load offsets `[i, 0]`."""

    items: tuple
    span: Span | None = _span()


@dataclass(frozen=True)
class Call:
    """An operator application; `op` names an entry of the op registry.

    `args` hold operands (expressions), `attrs` compile-time attributes as sorted
    (name, value) pairs, `type` the inferred result type.
    """

    op: str
    args: tuple
    attrs: tuple
    type: Type
    span: Span | None = _span()

    def attr(self, name: str, default: Any = None) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        return default


@dataclass(frozen=True)
class FuncCall:
    """A call of another function of the same program (one task per call).

    Orchestration-level task attributes: `deps` are TaskId variables the task waits for
    on top of inferred edges; `no_dep_args` are argument variables opted out of
    inference; `dumps` are argument variables the runtime dumps at
    `enable_dump_args=1`; `manual` puts every argument out of inference (`pl.manual_scope`);
    `blocks` makes the call one SPMD dispatch of that many blocks; `task_id` makes the
    call also yield its TaskId, last in its results (`res, tid = pl.submit(...)`);
    `early_resolve` (`allow_early_resolve=True`) lets the task's consumers pre-stage: a
    scheduling hint with no effect on results (docs/dependencies.md).
    """

    callee: str
    args: tuple
    type: Type
    span: Span | None = _span()
    deps: tuple = ()
    no_dep_args: tuple = ()
    manual: bool = False
    blocks: Any = None
    task_id: bool = False
    dumps: tuple = ()
    early_resolve: bool = False


Expr = Var | Const | ExprList | Call | FuncCall


# ----------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Assign:
    """`targets = value`; several targets unpack a tuple-typed value."""

    targets: tuple[Var, ...]
    value: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class ExprStmt:
    """An expression evaluated for its effect."""

    value: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class For:
    """`for var in pl.range(start, stop, step)`; kind is "range", "unroll" or "parallel"."""

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: tuple
    kind: str = "range"
    span: Span | None = _span()


@dataclass(frozen=True)
class While:
    """`for (x,) in pl.while_(init_values=(x0,)): pl.cond(c) ...` (printed `while c:`): the
    body runs while `cond`, a BOOL scalar evaluated before each iteration on the current
    values of the names it reads, holds; it may run zero times.  The carried values are
    names, rebound in the body as in any loop."""

    cond: Any
    body: tuple
    span: Span | None = _span()


@dataclass(frozen=True)
class If:
    """`if cond: ... else: ...` on a runtime value (a condition known at compile time is
    folded by the parser).  Names are rebound in the branches as anywhere else: a name
    bound in both branches (or before the `if`) is bound after it, with one type."""

    cond: Any
    then_body: tuple
    else_body: tuple = ()
    span: Span | None = _span()


@dataclass(frozen=True)
class AtScope:
    """`with pl.at(level=...)`: a region the outliner turns into an InCore kernel.

    `task` is the TaskId variable `as tid` binds; `deps`, `no_dep_args`, `dumps` and
    `manual` are as on `FuncCall`; `blocks` (an expression) makes it `with pl.spmd(blocks)`: one
    dispatch of that many blocks, each reading its index with `pl.get_block_idx()`.
    `split` (`pl.at(optimizations=[pl.split(mode)])`, NONE included) asks for the
    automatic cross-core pipe of a mixed block, dividing its vector work between the two
    vector lanes by the mode; `slot_num` (`pl.cross_core_slot(slot_num=N)`) is the depth of
    that pipe's ring.  The outlined kernel carries them as its `split` and `slot_num`
    attributes (passes/expand_mixed_kernel.py).  `early_resolve` is
    `allow_early_resolve=True`, as on `FuncCall`.
    """

    level: Level
    body: tuple
    name_hint: str = ""
    span: Span | None = _span()
    deps: tuple = ()
    no_dep_args: tuple = ()
    task: Var | None = None
    manual: bool = False
    blocks: Any = None
    dumps: tuple = ()
    split: Any = None
    early_resolve: bool = False
    slot_num: int | None = None


@dataclass(frozen=True)
class RuntimeScope:
    """`with pl.scope():` in an orchestration function: a runtime scope.  Its tasks take
    their slots from ring min(depth, 3) of the runtime (depth: the runtime scopes around
    it), which holds them until the scope closes (pypto.runtime.rings).  Names bound in
    the body stay bound after it, as in Python."""

    body: tuple
    span: Span | None = _span()


@dataclass(frozen=True)
class Return:
    values: tuple
    span: Span | None = _span()


Stmt = Assign | ExprStmt | For | While | If | AtScope | RuntimeScope | Return


# ----------------------------------------------------------------------------- functions


@dataclass(frozen=True)
class Param:
    var: Var
    direction: Direction = Direction.In


@dataclass(frozen=True)
class Function:
    """A function of a program.  `attrs` are its function attributes as sorted (name,
    value) pairs, written `pl.func_attr({...})` as the body's first statement (today:
    "split", a `SplitMode` for a mixed cube/vector kernel; "level", `Level.AIC` or
    `Level.AIV` for a kernel that runs on one unit of the core group)."""

    name: str
    params: tuple[Param, ...]
    returns: tuple
    body: tuple
    func_type: FunctionType
    span: Span | None = _span()
    attrs: tuple = ()

    def attr(self, name: str, default: Any = None) -> Any:
        for key, value in self.attrs:
            if key == name:
                return value
        return default

    @property
    def return_types(self) -> tuple:
        """Upstream PyPTO's name of `returns`."""
        return self.returns

    def as_python(self, concise: bool = False) -> str:
        """Print as a standalone `@pl.function` that `pl.parse` reads back."""
        return python_text(self, concise)

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.var.name == name:
                return p
        return None

    def returned_params(self) -> list[int]:
        """For each value the function returns, the index of the parameter it is (-1 for
        a value that is no parameter); empty without a return statement."""
        names = [p.var.name for p in self.params]
        for s in self.body:
            if isinstance(s, Return):
                return [names.index(v.name) if v.name in names else -1 for v in s.values]
        return []


class FunctionTable(tuple):
    """A program's functions in order, also looked up by name as upstream PyPTO's
    `program.functions` dict is (`.values()`, `.keys()`, `.items()`, `table["name"]`)."""

    def __getitem__(self, key):
        if isinstance(key, str):
            for f in self:
                if f.name == key:
                    return f
            raise KeyError(key)
        return super().__getitem__(key)

    def keys(self) -> list[str]:
        return [f.name for f in self]

    def values(self) -> list[Function]:
        return list(self)

    def items(self) -> list[tuple[str, Function]]:
        return [(f.name, f) for f in self]


@dataclass(frozen=True)
class Program:
    """A set of functions; `entry` names the one a caller invokes."""

    name: str
    functions: tuple[Function, ...]
    entry: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "functions", FunctionTable(self.functions))

    def get_function(self, name: str) -> Function | None:
        """The function called `name`, or None (upstream's lookup)."""
        return next((f for f in self.functions if f.name == name), None)

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def entry_function(self) -> Function:
        return self.function(self.entry)

    def with_functions(self, functions) -> Program:
        return replace(self, functions=tuple(functions))

    def as_python(self, concise: bool = False) -> str:
        """Print as `@pl.program` Python source that `pl.parse` reads back."""
        return python_text(self, concise)

    def __str__(self) -> str:
        return self.as_python()
