"""`Program.as_python()`: the IR's textual form, valid input to `pl.parse`.

This is the IR's own syntax (like xDSL's printer), not code generation: the text is
the `@pl.program` DSL form, and printing then parsing gives a structurally equal program.
`concise=True` leaves out placement (memory spaces and addresses).
"""

from __future__ import annotations

from .dtypes import DataType
from .nodes import (
    Assign,
    AtScope,
    Call,
    Const,
    ExprList,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Program,
    Return,
    RuntimeScope,
    Var,
    While,
    python_text,
)
from .ops import REQUIRED, get_op
from .types import (
    INDEX,
    Direction,
    FunctionType,
    PrefetchHandleType,
    ScalarType,
    TaskIdArrayType,
    TaskIdType,
    TensorType,
    TileType,
    TupleType,
)
from .visitor import IRVisitor

INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%"}
CMP_SYMBOLS = ("==", "!=", "<", "<=", ">", ">=")  # pl.cmp's cmp_type codes 0..5


def scalar_operator(call: Call) -> str | None:
    """The Python operator a call on scalars is written with (`i + 1`, `i == n`, `a and
    b`, `not a`), or None for a call written as `pl.<op>(...)`."""
    if not all(isinstance(a.type, ScalarType) for a in call.args):
        return None
    if call.op in INFIX:
        return INFIX[call.op]
    if call.op == "cmp":
        return CMP_SYMBOLS[call.attr("cmp_type")]
    if call.op in ("and_", "or_", "not_") and call.type == ScalarType(DataType.BOOL):
        return call.op[:-1]
    return None
_FOR_KIND = {"range": "pl.range", "unroll": "pl.unroll", "parallel": "pl.parallel"}


@python_text.register(Program)
def print_program(program: Program, concise: bool = False) -> str:
    """A program as `@pl.program` Python source, which `pl.parse` reads back."""
    return _Printer(concise).program(program)


@python_text.register(Function)
def print_function(fn: Function, concise: bool = False) -> str:
    """A function on its own: a standalone `@pl.function`, which `pl.parse` reads back."""
    printer = _Printer(concise)
    printer.lines = ["import pypto.language as pl", "", ""]
    printer.function(fn, standalone=True)
    return "\n".join(printer.lines) + "\n"


def print_statement(stmt, concise: bool = False) -> str:
    """One statement (with its nested body) as DSL source."""
    printer = _Printer(concise)
    printer.stmt(stmt, 0)
    return "\n".join(printer.lines) + "\n"


def print_type(t, concise: bool = False) -> str:
    return _Printer(concise).type(t)


class _Printer(IRVisitor):
    def __init__(self, concise: bool):
        self.concise = concise
        self.in_manual = False
        self.lines: list[str] = []

    # -- types
    def _memref(self, m) -> str:
        if m.slots == 1:
            return f'pl.MemRef("{m.name}")'
        slot = m.slot if isinstance(m.slot, int) else self.expr(m.slot)
        return f'pl.MemRef("{m.name}", slots={m.slots})[{slot}]'

    def type(self, t) -> str:
        if isinstance(t, TensorType):
            return f"pl.Tensor[{_list(t.shape)}, {t.dtype!r}]"
        if isinstance(t, TileType):
            parts = [_list(t.shape), repr(t.dtype)]
            if t.valid_shape is not None:  # part of the value, printed even when concise
                parts.append(self._extents(t.valid_shape))
            if t.memref is not None:  # the author's placement, printed even when concise
                parts.append(self._memref(t.memref))
            if t.memory is not None and not self.concise:
                parts.append(repr(t.memory))
                if t.addr is not None:
                    parts.append(hex(t.addr))
            return f"pl.Tile[{', '.join(parts)}]"
        if isinstance(t, ScalarType):
            return f"pl.Scalar[{t.dtype!r}]"
        if isinstance(t, TupleType):
            return f"tuple[{', '.join(self.type(i) for i in t.items)}]"
        if isinstance(t, (TaskIdType, TaskIdArrayType, PrefetchHandleType)):
            return repr(t)
        raise TypeError(f"cannot print type {t!r}")

    # -- structure
    def program(self, program: Program) -> str:
        self.lines = ["import pypto.language as pl", "", ""]
        orchestrations = [
            f.name for f in program.functions if f.func_type is FunctionType.Orchestration
        ]
        if orchestrations == [program.entry]:
            self.lines.append("@pl.program")
        else:
            self.lines.append(f"@pl.program(entry={program.entry!r})")
        self.lines.append(f"class {program.name}:")
        for i, fn in enumerate(program.functions):
            if i:
                self.lines.append("")
            self.function(fn)
        return "\n".join(self.lines) + "\n"

    def function(self, fn: Function, standalone: bool = False) -> None:
        params = [] if standalone else ["self"]
        for p in fn.params:
            t = self.type(p.var.type)
            if p.direction is Direction.Out:
                t = f"pl.Out[{t}]"
            elif p.direction is Direction.InOut:
                t = f"pl.InOut[{t}]"
            params.append(f"{p.var.name}: {t}")
        ret = ""
        if len(fn.returns) == 1:
            ret = f" -> {self.type(fn.returns[0])}"
        elif fn.returns:
            ret = f" -> tuple[{', '.join(self.type(t) for t in fn.returns)}]"
        indent = "" if standalone else "    "
        self.lines.append(f"{indent}@pl.function(type={fn.func_type!r})")
        self.lines.append(f"{indent}def {fn.name}({', '.join(params)}){ret}:")
        if fn.attrs:
            attrs = ", ".join(f"{key!r}: {value!r}" for key, value in fn.attrs)
            self.lines.append(f"{indent}    pl.func_attr({{{attrs}}})")
        self.body(fn.body, 1 if standalone else 2)

    def body(self, body, depth: int) -> None:
        if not body:
            self.lines.append("    " * depth + "pass")
        if self.in_manual:
            for stmt in body:
                self.stmt(stmt, depth)
            return
        # Tasks flagged `manual` print inside `with pl.manual_scope():`, one block per run
        # of them (statements without tasks in between join the run).
        states = [_manual_state(s) for s in body]
        i = 0
        while i < len(body):
            if states[i] is not True:
                self.stmt(body[i], depth)
                i += 1
                continue
            end = i
            for j in range(i, len(body)):
                if states[j] is False:
                    break
                if states[j] is True:
                    end = j
            self.lines.append("    " * depth + "with pl.manual_scope():")
            self.in_manual = True
            try:
                for stmt in body[i:end + 1]:
                    self.stmt(stmt, depth + 1)
            finally:
                self.in_manual = False
            i = end + 1

    def stmt(self, stmt, depth: int) -> None:
        self.depth = depth
        self.visit_stmt(stmt)

    def visit_Assign(self, stmt: Assign) -> None:
        pad = "    " * self.depth
        value = self.expr(stmt.value)
        if len(stmt.targets) == 1:
            (t,) = stmt.targets
            self.lines.append(f"{pad}{t.name}: {self.type(t.type)} = {value}")
        else:
            names = ", ".join(t.name for t in stmt.targets)
            self.lines.append(f"{pad}{names} = {value}")

    def visit_ExprStmt(self, stmt: ExprStmt) -> None:
        self.lines.append("    " * self.depth + self.expr(stmt.value))

    def visit_For(self, stmt: For) -> None:
        depth = self.depth
        rng = ", ".join(self.expr(e) for e in (stmt.start, stmt.stop, stmt.step))
        self.lines.append(f"{'    ' * depth}for {stmt.var.name} in "
                          f"{_FOR_KIND[stmt.kind]}({rng}):")
        self.body(stmt.body, depth + 1)

    def visit_While(self, stmt: While) -> None:
        # Printed as Python's `while`, which the parser reads as the same loop: the carried
        # values are names, so upstream's `pl.while_(init_values=...)` has nothing to add.
        depth = self.depth
        self.lines.append(f"{'    ' * depth}while {self.expr(stmt.cond)}:")
        self.body(stmt.body, depth + 1)

    def visit_If(self, stmt: If) -> None:
        depth = self.depth
        pad = "    " * depth
        self.lines.append(f"{pad}if {self.expr(stmt.cond)}:")
        self.body(stmt.then_body, depth + 1)
        if stmt.else_body:
            self.lines.append(f"{pad}else:")
            self.body(stmt.else_body, depth + 1)

    def visit_RuntimeScope(self, stmt: RuntimeScope) -> None:
        depth = self.depth
        self.lines.append(f"{'    ' * depth}with pl.scope():")
        self.body(stmt.body, depth + 1)

    def visit_AtScope(self, stmt: AtScope) -> None:
        depth = self.depth
        args = [f"level={stmt.level!r}"] if stmt.blocks is None else [self.expr(stmt.blocks)]
        args += self._task_keywords(stmt.deps, stmt.no_dep_args, stmt.name_hint,
                                    stmt.dumps, stmt.early_resolve)
        optimizations = [f"pl.split({stmt.split!r})"] if stmt.split is not None else []
        if stmt.slot_num is not None:
            optimizations.append(f"pl.cross_core_slot(slot_num={stmt.slot_num})")
        if optimizations:
            args.append(f"optimizations=[{', '.join(optimizations)}]")
        builtin = "pl.at" if stmt.blocks is None else "pl.spmd"
        bind = f" as {stmt.task.name}" if stmt.task is not None else ""
        self.lines.append(f"{'    ' * depth}with {builtin}({', '.join(args)}){bind}:")
        self.body(stmt.body, depth + 1)

    def visit_Return(self, stmt: Return) -> None:
        values = ", ".join(self.expr(v) for v in stmt.values)
        self.lines.append(f"{'    ' * self.depth}return {values}".rstrip())

    def expr(self, e) -> str:
        return self.visit_expr(e)

    def visit_Var(self, e: Var) -> str:
        return e.name

    def visit_Const(self, e: Const) -> str:
        return _const(e)

    def visit_ExprList(self, e: ExprList) -> str:
        return "[" + ", ".join(self.expr(i) for i in e.items) + "]"

    def visit_FuncCall(self, e: FuncCall) -> str:
        if not (e.task_id or e.deps or e.dumps or e.blocks is not None or e.early_resolve):
            # A plain call marks its untracked arguments in place: `pl.no_dep(t)`.
            untracked = {v.name for v in e.no_dep_args}
            marked = (f"pl.no_dep({self.expr(a)})" if getattr(a, "name", None) in untracked
                      else self.expr(a) for a in e.args)
            return f"self.{e.callee}({', '.join(marked)})"
        args = [f"self.{e.callee}"] + [self.expr(a) for a in e.args]
        if e.blocks is not None:
            args.append(f"core_num={self.expr(e.blocks)}")
        args += self._task_keywords(e.deps, e.no_dep_args, "", e.dumps, e.early_resolve)
        builtin = "pl.submit" if e.blocks is None else "pl.spmd_submit"
        return f"{builtin}({', '.join(args)})"

    def visit_Call(self, e: Call) -> str:
        return self.call(e)

    def call(self, e: Call) -> str:
        symbol = scalar_operator(e)
        if symbol == "not":
            return f"not {self._operand(e.args[0])}"
        if symbol is not None:
            lhs, rhs = (self._operand(a) for a in e.args)
            return f"{lhs} {symbol} {rhs}"
        op = get_op(e.op)
        attrs = dict(e.attrs)
        args = iter(e.args)
        positional: list[str] = []
        keywords: list[str] = []
        last_required = max(
            (i for i, p in enumerate(op.params) if p.default is REQUIRED), default=-1
        )
        for i, p in enumerate(op.params):
            if p.kind == "attr":
                value = attrs[p.name]
                if i <= last_required:
                    positional.append(self._attr(value))
                elif value != p.default:
                    keywords.append(f"{p.name}={self._attr(value)}")
            elif p.name not in attrs:  # a left-out optional operand is recorded as an attr
                positional.append(self.expr(next(args)))
        return f"pl.{e.op}({', '.join(positional + keywords)})"

    def _attr(self, value) -> str:
        if isinstance(value, tuple):
            return self._extents(value)
        return repr(value)

    def _extents(self, items) -> str:
        """A shape or valid region: ints, and index expressions for extents known only
        at run time."""
        return "[" + ", ".join(str(i) if isinstance(i, int) else self.expr(i)
                               for i in items) + "]"

    def _task_keywords(self, deps, no_dep_args, name_hint: str, dumps=(),
                       early_resolve: bool = False) -> list[str]:
        out = [f"name_hint={name_hint!r}"] if name_hint else []
        if deps:
            out.append(f"deps=[{', '.join(self.expr(d) for d in deps)}]")
        if no_dep_args:
            out.append(f"no_dep_args=[{', '.join(self.expr(a) for a in no_dep_args)}]")
        if dumps:
            out.append(f"dumps=[{', '.join(self.expr(a) for a in dumps)}]")
        if early_resolve:
            out.append("allow_early_resolve=True")
        return out

    def _operand(self, e) -> str:
        text = self.expr(e)
        if isinstance(e, Call) and (e.op in INFIX or scalar_operator(e) is not None):
            return f"({text})"
        return text


def _manual_state(stmt) -> bool | None:
    """True: every task the statement dispatches is `manual`; False: some task is not;
    None: it dispatches no task."""
    found = _ManualStates()
    found.visit_stmt(stmt)
    return False if False in found.states else (True if True in found.states else None)


class _ManualStates(IRVisitor):
    """The `manual` flag of each task a statement dispatches, at any loop or branch depth
    (a `pl.at` block is one task)."""

    def __init__(self):
        self.states: set[bool | None] = set()

    def visit_AtScope(self, stmt: AtScope) -> None:
        self.states.add(stmt.manual)

    def visit_Assign(self, stmt: Assign) -> None:
        self.states.add(stmt.value.manual if isinstance(stmt.value, FuncCall) else None)

    def visit_ExprStmt(self, stmt: ExprStmt) -> None:
        self.states.add(stmt.value.manual if isinstance(stmt.value, FuncCall) else None)

    def visit_Return(self, stmt: Return) -> None:
        self.states.add(None)


def _list(items) -> str:
    return "[" + ", ".join(str(i) for i in items) + "]"


def _const(c: Const) -> str:
    v = c.value
    default = (
        (isinstance(v, bool) and c.type == ScalarType(DataType.BOOL))
        or (isinstance(v, int) and not isinstance(v, bool) and c.type == INDEX)
        or (isinstance(v, float) and c.type == ScalarType(DataType.FP32))
    )
    text = repr(v) if not (isinstance(v, float) and v != v) else 'float("nan")'
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        text = f'float("{v}")'
    return text if default else f"pl.const({text}, {c.type.dtype!r})"

