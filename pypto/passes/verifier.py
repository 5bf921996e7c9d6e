"""IR properties and their checks; the verification instrument.

Each pass declares the properties it establishes (`Pass.produces`).  With BASIC
verification every established property is re-checked after every later pass, so
the first pass that breaks one is named.  ROUNDTRIP also prints each pass's IR,
parses it back and requires a structurally equal program.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..ir.dtypes import DataType
from ..ir.errors import PyptoError, VerificationError
from ..ir.nodes import (
    Assign,
    AtScope,
    Call,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Program,
    Return,
    Var,
    While,
)
from ..ir.ops import get_op
from ..ir.options import VerificationLevel
from ..ir.printer import print_statement
from ..ir.types import Direction, FunctionType, ScalarType, TensorType, TileType, same_value_type
from ..ir.visitor import IRVisitor, statements
from .manager import PassInstrument
from .outline_incore import writes_tensor
from .properties import IRProperty

# AtomicDtypesLegal is established by DeriveCallDirections, which reports an illegal
# atomic dtype to the user with file:line: the frontend may still contain one.
FRONTEND_PROPERTIES = (
    IRProperty.TypesConsistent,
    IRProperty.DefBeforeUse,
)


class _Violation(Exception):
    def __init__(self, detail: str, node=None):
        super().__init__(detail)
        self.detail = detail
        self.node = node


# ----------------------------------------------------------------------------- checks


def _functions(program: Program):
    return {f.name: f for f in program.functions}


def check_types(program: Program, backend) -> None:
    functions = _functions(program)
    for fn in program.functions:
        _TypeCheck(fn, functions).visit_function(fn)


class _TypeCheck(IRVisitor):
    """Every value's recorded type is what its operands give, and every use of a name
    has the type of its binding."""

    def __init__(self, fn: Function, functions: dict):
        self.fn = fn
        self.functions = functions
        self.env = {p.var.name: p.var for p in fn.params}

    def visit_For(self, stmt: For) -> None:
        _check_uses(stmt.start, self.env, stmt)
        _check_uses(stmt.stop, self.env, stmt)
        outside = self.env
        self.env = dict(outside, **{stmt.var.name: stmt.var})
        self.visit_body(stmt.body)
        inner, self.env = self.env, outside
        outside.update({k: v for k, v in inner.items() if k != stmt.var.name})

    def visit_If(self, stmt: If) -> None:
        _check_uses(stmt.cond, self.env, stmt)
        self.visit_body(stmt.then_body)
        self.visit_body(stmt.else_body)

    def visit_While(self, stmt: While) -> None:
        _check_uses(stmt.cond, self.env, stmt)
        if _infer(stmt.cond, self.functions, stmt) != ScalarType(DataType.BOOL):
            raise _Violation("a while loop's condition is not a BOOL scalar", stmt)
        self.visit_body(stmt.body)
        _check_uses(stmt.cond, self.env, stmt)  # as the next iteration reads it

    def visit_AtScope(self, stmt: AtScope) -> None:
        self.visit_body(stmt.body)
        if stmt.task is not None:  # `with pl.at(...) as tid` binds the task id
            self.env[stmt.task.name] = stmt.task

    def visit_Assign(self, stmt: Assign) -> None:
        _check_uses(stmt.value, self.env, stmt)
        inferred = _infer(stmt.value, self.functions, stmt)
        items = inferred.items if len(stmt.targets) > 1 else (inferred,)
        if len(items) != len(stmt.targets):
            raise _Violation(f"{len(stmt.targets)} targets for {len(items)} values", stmt)
        for target, t in zip(stmt.targets, items, strict=True):
            if not same_value_type(target.type, t):
                raise _Violation(f"`{target.name}` is declared {target.type} but its value "
                                 f"is {t}", stmt)
            self.env[target.name] = target

    def visit_Return(self, stmt: Return) -> None:
        for v in stmt.values:
            _check_uses(v, self.env, stmt)
        fn = self.fn
        got = tuple(v.type for v in stmt.values)
        if len(got) != len(fn.returns) or not all(map(same_value_type, got, fn.returns)):
            raise _Violation(f"`{fn.name}` returns values that differ from its signature", stmt)

    def visit_ExprStmt(self, stmt: ExprStmt) -> None:
        _check_uses(stmt.value, self.env, stmt)


def _infer(expr, functions, stmt):
    """The type `expr` has, once the types it records are checked (a task call against
    its callee's parameters, an operator call and its nested calls against inference)."""
    if isinstance(expr, FuncCall):
        _check_task_call(expr, functions, stmt)
        return expr.type
    if isinstance(expr, Call):
        for a in expr.args:
            if isinstance(a, Call):
                _infer(a, functions, stmt)
        try:
            t = get_op(expr.op).infer(tuple(expr.args), dict(expr.attrs), expr.span)
        except PyptoError as exc:
            raise _Violation(f"pl.{expr.op} is ill-typed: {exc.message}", stmt) from None
        if not same_value_type(t, expr.type):
            raise _Violation(f"pl.{expr.op} records type {expr.type}, its operands give {t}",
                             stmt)
        return t
    return expr.type


def _check_task_call(expr: FuncCall, functions, stmt) -> None:
    callee = functions.get(expr.callee)
    if callee is None:
        raise _Violation(f"call of unknown function `{expr.callee}`", stmt)
    if len(expr.args) != len(callee.params):
        raise _Violation(f"`{callee.name}` takes {len(callee.params)} arguments, the call "
                         f"passes {len(expr.args)}", stmt)
    for a, p in zip(expr.args, callee.params, strict=True):
        if not same_value_type(a.type, p.var.type):
            raise _Violation(f"argument for `{p.var.name}` of `{callee.name}` has type "
                             f"{a.type}, expected {p.var.type}", stmt)


class _Uses(IRVisitor):
    def __init__(self):
        self.vars: list[Var] = []

    def visit_Var(self, expr: Var) -> None:
        self.vars.append(expr)


def _check_uses(expr, env, stmt) -> None:
    v = _Uses()
    v.visit_expr(expr)
    for use in v.vars:
        bound = env.get(use.name)
        if bound is not None and bound.type != use.type:
            raise _Violation(f"`{use.name}` is used as {use.type} but bound as {bound.type}",
                             stmt)


def check_def_before_use(program: Program, backend) -> None:
    for fn in program.functions:
        _DefBeforeUse({p.var.name for p in fn.params}).visit_function(fn)


class _DefBeforeUse(IRVisitor):
    """Every name is bound before it is read; what a loop or a branch binds counts as
    bound after it."""

    def __init__(self, defined: set[str]):
        self.defined = defined

    def visit_For(self, stmt: For) -> None:
        for e in (stmt.start, stmt.stop, stmt.step):
            _need(e, self.defined, stmt)
        outside = self.defined
        self.defined = outside | {stmt.var.name}
        self.visit_body(stmt.body)
        inner, self.defined = self.defined, outside
        outside |= inner - {stmt.var.name}

    def visit_While(self, stmt: While) -> None:
        _need(stmt.cond, self.defined, stmt)
        self.visit_body(stmt.body)  # what the body binds counts as bound, as after a loop

    def visit_If(self, stmt: If) -> None:
        _need(stmt.cond, self.defined, stmt)
        outside = self.defined
        for branch in (stmt.then_body, stmt.else_body):
            self.defined = set(outside)
            self.visit_body(branch)
            outside |= self.defined  # as after a loop: what a branch binds counts as bound
        self.defined = outside

    def visit_AtScope(self, stmt: AtScope) -> None:
        for e in (stmt.deps + stmt.no_dep_args + stmt.dumps
                  + ((stmt.blocks,) if stmt.blocks else ())):
            _need(e, self.defined, stmt)
        self.visit_body(stmt.body)
        if stmt.task is not None:
            self.defined |= {stmt.task.name}

    def visit_Assign(self, stmt: Assign) -> None:
        _need(stmt.value, self.defined, stmt)
        self.defined |= {t.name for t in stmt.targets}

    def visit_ExprStmt(self, stmt: ExprStmt) -> None:
        _need(stmt.value, self.defined, stmt)

    def visit_Return(self, stmt: Return) -> None:
        _need(stmt, self.defined, stmt)


def _need(node, defined, stmt) -> None:
    v = _Uses()
    if isinstance(node, Return):
        v.visit_stmt(node)
    else:
        v.visit_expr(node)
    for use in v.vars:
        if use.name not in defined:
            raise _Violation(f"`{use.name}` is read before it is bound", stmt)


class _Finder(IRVisitor):
    """Collects nodes of one function, each with the statement it stands in."""

    def __init__(self):
        self.found: list[tuple[Any, object]] = []
        self.stmt = None

    def visit_stmt(self, stmt) -> None:
        self.stmt = stmt
        super().visit_stmt(stmt)

    @classmethod
    def within(cls, fn: Function) -> list[tuple[Any, object]]:
        """(node, statement) of each node of `fn` this finder collects, in program order."""
        finder = cls()
        finder.visit_function(fn)
        return finder.found


class _Calls(_Finder):
    def visit_Call(self, expr: Call) -> None:
        self.found.append((expr, self.stmt))
        super().visit_Call(expr)


_calls = _Calls.within


def _kernel_calls(program: Program) -> Iterator[tuple[Any, object]]:
    """(call, statement) of each operator call in the program's InCore functions."""
    for fn in program.functions:
        if fn.func_type is FunctionType.InCore:
            yield from _calls(fn)


def check_atomics(program: Program, backend) -> None:
    legal = set(backend.atomic_add_dtypes)
    for fn in program.functions:
        for call, stmt in _calls(fn):
            atomic = call.attr("atomic")
            if atomic is None or atomic.name == "None_":
                continue
            value = call.args[0] if call.op == "store" else call.args[1]
            if value.type.dtype.name not in legal:
                raise _Violation(f"atomic {call.op} of {value.type.dtype.name} is not supported "
                                 f"on {backend.name}", stmt)


_ORCHESTRATION_CATEGORIES = ("index", "orchestration")


def is_tensor_view(call: Call) -> bool:
    """`pl.slice` of a tensor: a view (pointer, shape, strides) that moves no data, so
    orchestration code may take one to hand a task a window."""
    return call.op == "slice" and isinstance(call.type, TensorType)


def check_outlined(program: Program, backend) -> None:
    for fn in program.functions:
        if fn.func_type is not FunctionType.Orchestration:
            continue
        for stmt in statements(fn.body):
            if isinstance(stmt, AtScope):
                raise _Violation("a pl.at block was not outlined", stmt)
        for call, stmt in _calls(fn):
            if get_op(call.op).category not in _ORCHESTRATION_CATEGORIES and not isinstance(
                    call.type, ScalarType) and not is_tensor_view(call):
                raise _Violation(f"pl.{call.op} runs in orchestration code", stmt)


def check_directions(program: Program, backend) -> None:
    from .derive_call_directions import _Access

    directions: dict = {f.name: tuple(p.direction for p in f.params) for f in program.functions}
    for fn in program.functions:
        if fn.name == program.entry:
            continue  # the entry's In parameters may be written: the caller's copy is not
        access = _Access(directions)
        access.visit_function(fn)
        for p in fn.params:
            if isinstance(p.var.type, TensorType) and p.direction is Direction.In \
                    and p.var.name in access.written:
                raise _Violation(f"`{fn.name}` writes its In parameter `{p.var.name}`", fn)


def check_tile_level(program: Program, backend) -> None:
    for call, stmt in _kernel_calls(program):
        if writes_tensor(call):
            if call.op == "assemble" and isinstance(call.args[1].type, TensorType):
                raise _Violation("a tensor is assembled inside a kernel", stmt)
            continue
        if isinstance(call.type, TensorType):
            raise _Violation(f"pl.{call.op} still works on tensors in a kernel", stmt)


def check_composites_lowered(program: Program, backend) -> None:
    for call, stmt in _kernel_calls(program):
        if get_op(call.op).expansion:
            raise _Violation(f"pl.{call.op} is a composite operator left in a kernel", stmt)


def check_casts(program: Program, backend) -> None:
    for call, stmt in _kernel_calls(program):
        if call.op != "cast":
            continue
        src, dst = call.args[0].type.dtype, call.type.dtype
        if src != dst and dst.name not in backend.native_casts.get(src.name, ()):
            raise _Violation(f"{src.name}→{dst.name} is not a native cast on {backend.name}",
                             stmt)


class _TileVars(_Finder):
    def visit_def(self, var: Var) -> None:
        self.visit_Var(var)

    def visit_Var(self, expr: Var) -> None:
        if isinstance(expr.type, TileType):
            self.found.append((expr, self.stmt))


_tile_vars = _TileVars.within


def check_tiles_flat(program: Program, backend) -> None:
    for fn in program.functions:
        for var, stmt in _tile_vars(fn):
            if len(var.type.shape) > 2:
                raise _Violation(f"tile `{var.name}` is {list(var.type.shape)}", stmt)


def check_memory_spaces(program: Program, backend) -> None:
    for fn in program.functions:
        for var, stmt in _tile_vars(fn):
            if var.type.memory is None:
                raise _Violation(f"tile `{var.name}` has no memory space", stmt)


def _extent(t, slot_bytes: dict[str, int]) -> int:
    """The bytes a placed tile may occupy: a tile in a declared allocation may sit in any of
    its slots."""
    if t.memref is None:
        return t.nbytes
    return (t.memref.slots - 1) * slot_bytes[t.memref.name] + t.nbytes


def check_addresses(program: Program, backend) -> None:
    from .allocate_memory_addr import ALIGN, _Occurrences, _slot_bytes

    for fn in program.functions:
        occ = _Occurrences()
        occ.visit_function(fn)
        slot_bytes = _slot_bytes(occ)
        for var, stmt in _tile_vars(fn):
            t = var.type
            if t.addr is None:
                raise _Violation(f"tile `{var.name}` has no address", stmt)
            cap = backend.capacities[t.memory.name]
            extent = _extent(t, slot_bytes)
            if t.addr % ALIGN or t.addr + extent > cap:
                raise _Violation(f"tile `{var.name}` at {t.addr:#x} ({extent} B) is misaligned "
                                 f"or beyond the {cap} B of {t.memory.name}", stmt)
        _check_disjoint(fn, occ, slot_bytes)


def _check_disjoint(fn, occ, slot_bytes: dict[str, int]) -> None:
    """Tiles live at the same time (`occ`, the function's buffers) do not overlap."""
    from .allocate_memory_addr import _live_ranges

    _live_ranges(occ)
    addrs = {}
    for var, _ in _tile_vars(fn):
        addrs[(var.name, var.type.shape, var.type.dtype, var.type.memory)] = var.type.addr
    bufs = list(occ.buffers.items())
    for i, (ka, a) in enumerate(bufs):
        for kb, b in bufs[i + 1:]:
            if a.type.memory != b.type.memory or a.end < b.start or b.end < a.start:
                continue
            if a.type.memref is not None and b.type.memref is not None and \
                    a.type.memref.name == b.type.memref.name and a.type.memref.slots > 1:
                continue  # slots of one allocation: which one each takes is run-time
            pa, pb = addrs[(ka[0], *ka[1])], addrs[(kb[0], *kb[1])]
            if pa < pb + _extent(b.type, slot_bytes) and pb < pa + _extent(a.type, slot_bytes):
                space = a.type.memory.name if a.type.memory is not None else "memory"
                raise _Violation(f"tiles `{a.name}` and `{b.name}` are live together but "
                                 f"overlap in {space}", fn)


CHECKS = {
    IRProperty.TypesConsistent: check_types,
    IRProperty.DefBeforeUse: check_def_before_use,
    IRProperty.AtomicDtypesLegal: check_atomics,
    IRProperty.ScopesOutlined: check_outlined,
    IRProperty.DirectionsResolved: check_directions,
    IRProperty.TileLevelKernels: check_tile_level,
    IRProperty.CompositesLowered: check_composites_lowered,
    IRProperty.CastsLegal: check_casts,
    IRProperty.TilesFlat: check_tiles_flat,
    IRProperty.MemorySpacesInferred: check_memory_spaces,
    IRProperty.AddressesAllocated: check_addresses,
}


def verify(program: Program, properties, backend, after: str) -> None:
    """Raise VerificationError naming `after` for the first property that does not hold."""
    for prop in properties:
        try:
            CHECKS[prop](program, backend)
        except _Violation as v:
            raise VerificationError(_message(after, prop, v)) from None


def _message(after: str, prop: IRProperty, v: _Violation) -> str:
    lines = [f"Verification failed after '{after}': {prop.name} ({prop.value}) does not hold: "
             f"{v.detail}"]
    node = v.node
    span = getattr(node, "span", None)
    if span is not None:
        lines.append(f"  from {span}")
    if node is not None and not isinstance(node, Function):
        lines.append("  in the IR: " + print_statement(node).strip().splitlines()[0])
    elif isinstance(node, Function):
        lines.append(f"  in function `{node.name}`")
    lines.append("  (this is a compiler bug unless a custom pass was added: please report it "
                 "with dump_passes=PassDumpLevel.EXPLICIT output)")
    return "\n".join(lines)


class VerificationInstrument(PassInstrument):
    """Checks established properties after every pass (BASIC) and round trips (ROUNDTRIP)."""

    def __init__(self, level: VerificationLevel, parse=None):
        self.level = level
        self.parse = parse  # `pl.parse`, injected: passes do not import the language
        self.established: list[IRProperty] = []

    def before_pipeline(self, program, ctx) -> None:
        self.established = list(FRONTEND_PROPERTIES)
        self._check(program, ctx, "frontend")

    def after_pass(self, index, pass_, program, ctx) -> None:
        for prop in getattr(pass_, "produces", ()):
            if prop not in self.established:
                self.established.append(prop)
        self._check(program, ctx, pass_.name)

    def _check(self, program, ctx, after: str) -> None:
        if self.level is VerificationLevel.NONE:
            return
        verify(program, self.established, ctx.backend, after)
        if self.level is VerificationLevel.ROUNDTRIP:
            roundtrip(program, after, self.parse)


def roundtrip(program: Program, after: str, parse) -> None:
    """Print, parse back with `parse`, compare structurally."""
    text = program.as_python()
    try:
        again = parse(text, f"<{after} dump>")
    except PyptoError as exc:
        raise VerificationError(
            f"Verification failed after '{after}': the printed IR does not parse: {exc}"
        ) from None
    if again != program:
        names = [f.name for f, g in zip(program.functions, again.functions, strict=False)
                 if f != g]  # a list of another length is named below
        raise VerificationError(
            f"Verification failed after '{after}': the printed IR parses to a different "
            f"program (functions differ: {', '.join(names) or 'function list'})"
        )
