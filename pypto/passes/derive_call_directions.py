"""DeriveCallDirections: decide In / Out / InOut for every tensor parameter.

An InCore parameter that is written (`pl.store`/`pl.assemble` into it) becomes Out,
or InOut when the kernel also reads it; a declared direction is only ever widened.
An orchestration parameter passed to a callee's Out/InOut parameter is written too.
The runtime infers task dependencies from these directions, so they must be right.

A parameter of the entry function the user left `In` (the default) that the program
writes keeps its direction, with upstream PyPTO's meaning: the write lands in the run's
device copy of the tensor (later tasks read it, ordered by the writing task's own
direction) and the caller's tensor comes back unchanged.  `entry_inputs_written` finds
those writes; the `InputParamWritten` diagnostic reports each at its writing line (in the
kernel, for a write through a callee).

A soft `pl.system.syncall` reads and writes its `gm_workspace` (the arrival counter).

An atomic-add store (`atomic=pl.AtomicType.Add`) writes without a plain read; a
parameter written only that way is dispatched as an accumulate access (codegen
decides that from the kernel body).  Here its dtype is checked against the backend's
`atomic_add_dtypes`, because this is the first pass that knows the backend.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import Span, TypeCheckError
from ..ir.nodes import Assign, Call, FuncCall, Function, Program, Var
from ..ir.ops import get_op, write_destination
from ..ir.ops.barrier import SYNCALL
from ..ir.types import AtomicType, Direction, FunctionType, TensorType
from ..ir.visitor import IRVisitor
from .manager import Pass
from .outline_incore import writes_tensor
from .properties import IRProperty


class _Access(IRVisitor):
    """Which names are written through write ops or callee outputs, and which are read."""

    def __init__(self, directions: dict[str, tuple[Direction, ...]],
                 write_spans: dict[str, tuple[Span | None, ...]] | None = None):
        self.directions = directions
        self.write_spans = write_spans if write_spans is not None else {}
        self.written: set[str] = set()
        self.first_write: dict[str, Span | None] = {}  # where each name is first written
        self.read: set[str] = set()
        self.atomic: list[Call] = []
        # Orchestration views (`v = pl.slice(t, ...)`): a task writing `v` writes `t`.
        self.view_of: dict[str, str] = {}
        self.orchestration = False

    def visit_function(self, fn: Function) -> None:
        self.orchestration = fn.func_type is FunctionType.Orchestration
        super().visit_function(fn)

    def visit_Assign(self, stmt: Assign) -> None:
        value = stmt.value
        if self.orchestration and isinstance(value, Call) and value.op == "slice" and \
                isinstance(value.type, TensorType) and isinstance(value.args[0], Var):
            base = value.args[0].name
            self.view_of[stmt.targets[0].name] = self.view_of.get(base, base)
            self.visit_expr(value.args[1])  # taking a view reads nothing but its offsets
            return
        super().visit_Assign(stmt)
        if not isinstance(value, FuncCall):  # a task's result is the buffer it was given
            for t in stmt.targets:
                self.view_of.pop(t.name, None)

    def _base(self, name: str) -> str:
        return self.view_of.get(name, name)

    def visit_Call(self, expr: Call) -> None:
        if expr.op == "dump_tag":
            return  # marks a tensor for the runtime's dumps: neither a read nor a write
        if expr.op == SYNCALL and expr.args and isinstance(expr.args[0], Var) \
                and "gm_workspace" not in dict(expr.attrs):
            # A soft barrier adds to the counter in its workspace: a read and a write.
            self._write(expr.args[0].name, expr.span)
            self.read.add(expr.args[0].name)
            for arg in expr.args[1:]:
                self.visit_expr(arg)
            return
        writes = writes_tensor(expr)
        if writes and expr.attr("atomic", AtomicType.None_) is not AtomicType.None_:
            self.atomic.append(expr)
        if writes:
            dst = write_destination(expr)
            for arg in expr.args:
                if arg is dst and isinstance(arg, Var):
                    self._write(arg.name, expr.span)
                    if get_op(expr.op).reads_destination:
                        self.read.add(arg.name)
                else:
                    self.visit_expr(arg)
            return
        super().visit_Call(expr)

    def visit_FuncCall(self, expr: FuncCall) -> None:
        dirs = self.directions.get(expr.callee, ())
        spans = self.write_spans.get(expr.callee, ())
        for index, (arg, d) in enumerate(zip(expr.args, dirs, strict=True)):
            if isinstance(arg, Var):
                for name in {arg.name, self._base(arg.name)}:
                    if d is not Direction.In:
                        # The callee's own write is the line to show, not the call.
                        within = spans[index] if index < len(spans) else None
                        self._write(name, within or expr.span)
                    if d is not Direction.Out:
                        self.read.add(name)
            else:
                self.visit_expr(arg)

    def _write(self, name: str, span: Span | None) -> None:
        self.written.add(name)
        self.first_write.setdefault(name, span)

    def visit_Var(self, expr: Var) -> None:
        self.read.add(expr.name)

    def visit_Return(self, stmt) -> None:
        """Returning a tensor hands the buffer back; it reads nothing."""


class DeriveCallDirections(Pass):
    name = "DeriveCallDirections"
    produces = (IRProperty.DirectionsResolved, IRProperty.AtomicDtypesLegal)

    def run(self, program: Program, ctx) -> Program:
        derived: dict[str, Function] = {}
        for fn, access, new_fn in _derived(program):
            for call in access.atomic:
                _check_atomic_dtype(call, ctx.backend)
            derived[fn.name] = new_fn
        return program.with_functions(derived[f.name] for f in program.functions)


def _derived(program: Program):
    """Each function, what it reads and writes, and the function with its directions
    derived; kernels first, since an orchestration's accesses follow from the directions
    of the kernels it calls (a pl.FunctionType.Group's, of its cube and vector functions)."""
    directions: dict[str, tuple[Direction, ...]] = {}
    write_spans: dict[str, tuple[Span | None, ...]] = {}
    order = (FunctionType.Group, FunctionType.Orchestration)
    for fn in sorted(program.functions, key=lambda f: order.index(f.func_type) + 1
                     if f.func_type in order else 0):
        access = _Access(directions, write_spans)
        access.visit_function(fn)
        write_spans[fn.name] = tuple(access.first_write.get(p.var.name) for p in fn.params)
        entry = fn.name == program.entry
        params = []
        for p in fn.params:
            if not isinstance(p.var.type, TensorType) or (entry and p.direction is Direction.In):
                params.append(p)  # an entry's In tensor is never copied back to the caller
                continue
            written = p.var.name in access.written
            read = p.var.name in access.read
            params.append(replace(p, direction=_direction(p.direction, written, read)))
        new_fn = replace(fn, params=tuple(params))
        directions[fn.name] = tuple(p.direction for p in params)
        yield fn, access, new_fn


def entry_inputs_written(program: Program) -> dict[str, Span | None]:
    """The entry's tensor parameters declared In (the default) that the program writes,
    each with where it is first written (the callee's line, for a write through a call).
    Directions are derived on the way, so this holds before DeriveCallDirections too."""
    for fn, access, _ in _derived(program):
        if fn.name == program.entry:
            return {p.var.name: access.first_write.get(p.var.name) or p.var.span
                    for p in fn.params
                    if isinstance(p.var.type, TensorType) and p.direction is Direction.In
                    and p.var.name in access.written}
    return {}


def _check_atomic_dtype(call: Call, backend) -> None:
    """Atomic-add stores exist for a backend-specific set of dtypes (BF16 only on A2/A3)."""
    dst = call.args[2] if call.op == "store" else call.args[0]
    dtype = dst.type.dtype
    if dtype.name not in backend.atomic_add_dtypes:
        raise TypeCheckError(
            f"pl.{call.op}(..., atomic=pl.AtomicType.Add) into a {dtype.name} tensor is not "
            f"supported on {backend.name}",
            call.span,
            hint=f"{backend.name} accumulates atomically in "
                 f"{', '.join(backend.atomic_add_dtypes)}; accumulate into an FP32 tensor and "
                 "cast afterwards",
        )


def _direction(declared: Direction, written: bool, read: bool) -> Direction:
    """Widen the declared direction by what the body does; never narrow it."""
    if declared is Direction.InOut:
        return Direction.InOut
    if declared is Direction.Out:
        return Direction.InOut if read else Direction.Out
    if written:
        return Direction.InOut if read else Direction.Out
    return Direction.In
