"""The compiler's diagnostic checks and the instrument that runs them.

Source-level checks run on the parsed program (PRE_PIPELINE); with POST_PASS,
`UnusedVariable` also runs after every pass and reports values a pass left dead;
with POST_PIPELINE, checks of the lowered program (perf hints) run at the end.
"""

from __future__ import annotations

from ..ir.diagnostics import Diagnostic, DiagnosticCheck, DiagnosticPhase
from ..ir.nodes import Assign, Call, For, FuncCall, If, Program, While
from ..ir.types import Direction, FunctionType, TileType
from ..ir.visitor import IRVisitor, statements, uses
from .derive_call_directions import entry_inputs_written
from .manager import PassInstrument
from .outline_incore import written_tensor


def out_param_write_dropped(program: Program, backend) -> list[Diagnostic]:
    """`out = expr` on a pl.Out parameter rebinds the name; the output is never written."""
    found = []
    for fn in program.functions:
        outs = {p.var.name for p in fn.params if p.direction is not Direction.In}
        for stmt in statements(fn.body):
            if not isinstance(stmt, Assign) or isinstance(stmt.value, FuncCall):
                continue  # `out = kernel(..., out)` receives the buffer back
            for target in stmt.targets:
                if target.name in outs and written_tensor(stmt) != target.name:
                    found.append(Diagnostic(
                        DiagnosticCheck.OutParamWriteDropped,
                        f"`{target.name} = ...` rebinds the name of output parameter "
                        f"`{target.name}`; nothing is written to the output, which keeps the "
                        f"device's uninitialised contents. Write `{target.name}[:] = ...` "
                        "(pl.assemble) or use pl.store",
                        stmt.span,
                    ))
    return found


def input_param_written(program: Program, backend) -> list[Diagnostic]:
    """The program writes a tensor its entry takes as In (the default direction): the
    write lands in the run's device copy, and the caller's tensor comes back unchanged."""
    return [Diagnostic(
        DiagnosticCheck.InputParamWritten,
        f"this writes `{name}`, an input parameter of `{program.entry}` (In, the default "
        "direction): the write lands in the run's device copy and the caller's tensor comes "
        f"back unchanged. Declare it `{name}: pl.InOut[...]` to update the caller's tensor, "
        "or write the result into a pl.Out parameter",
        span,
    ) for name, span in entry_inputs_written(program).items()]


def unused_variable(program: Program, backend) -> list[Diagnostic]:
    """A value is computed and never read."""
    found = []
    for fn in program.functions:
        read = set(uses(fn.body))
        params = {p.var.name for p in fn.params}
        for stmt in statements(fn.body):
            if not isinstance(stmt, Assign):
                continue
            for target in stmt.targets:
                name = target.name
                if name in read or name in params or name.startswith("_"):
                    continue
                found.append(Diagnostic(
                    DiagnosticCheck.UnusedVariable,
                    f"`{name}` is computed but never used; remove it or name it `_{name}`",
                    stmt.span,
                ))
    return found


def unused_control_flow_result(program: Program, backend) -> list[Diagnostic]:
    """A value a loop carries (bound before it and rebound inside) is never read after it."""
    found = []
    for fn in program.functions:
        loops = _LoopResults({p.var.name for p in fn.params})
        loops.visit_function(fn)
        found.extend(loops.found)
    return found


class _LoopResults(IRVisitor):
    """Loops that rebind a value bound before them which the statements after the loop,
    in the same body, never read."""

    def __init__(self, params: set[str]):
        self.params = params
        self.bound = set(params)  # names bound before the statement being visited
        self.rest: tuple = ()  # the statements after it in its body
        self.found: list[Diagnostic] = []

    def visit_body(self, body) -> None:
        body = tuple(body)
        for i, stmt in enumerate(body):
            self.rest = body[i + 1:]
            self.visit_stmt(stmt)

    def visit_For(self, stmt: For) -> None:
        self._loop(stmt, set(), {stmt.var.name})

    def visit_While(self, stmt: While) -> None:
        self._loop(stmt, set(uses(stmt.cond)), set())

    def _loop(self, stmt: For | While, read: set[str], index: set[str]) -> None:
        """A loop's updates of names bound before it must be read: after it, or by its
        condition (`read`); `index` is what the loop binds in its body's scope."""
        after = set(uses(self.rest)) | read
        for name in _assigned(stmt.body):
            if name in self.bound and name not in self.params and name not in after:
                self.found.append(Diagnostic(
                    DiagnosticCheck.UnusedControlFlowResult,
                    f"the loop updates `{name}`, but its final value is never used",
                    stmt.span,
                ))
        outside = self.bound
        self.bound = outside | index  # what the body binds stays inside
        self.visit_body(stmt.body)
        self.bound = outside

    def visit_If(self, stmt: If) -> None:
        outside = self.bound
        self.bound = set(outside)
        self.visit_body(stmt.then_body + stmt.else_body)
        self.bound = outside

    def visit_Assign(self, stmt: Assign) -> None:
        self.bound |= {t.name for t in stmt.targets}


def _assigned(body) -> list[str]:
    names: list[str] = []
    for stmt in statements(body):
        if isinstance(stmt, Assign):
            names.extend(t.name for t in stmt.targets if t.name not in names)
    return names


class _Transfers(IRVisitor):
    def __init__(self):
        self.calls: list[Call] = []

    def visit_Call(self, expr: Call) -> None:
        if expr.op in ("load", "store"):
            self.calls.append(expr)
        super().visit_Call(expr)


def tile_innermost_dim_granularity(program: Program, backend) -> list[Diagnostic]:
    """Loads and stores whose rows are narrower than the backend moves efficiently."""
    threshold = backend.innermost_hint_bytes
    found = []
    for fn in program.functions:
        if fn.func_type is not FunctionType.InCore:
            continue
        transfers = _Transfers()
        transfers.visit_function(fn)
        for call in transfers.calls:
            tile = call.type if call.op == "load" else call.args[0].type
            if not isinstance(tile, TileType):
                continue
            row_bytes = tile.dtype.nbytes(tile.shape[-1])
            # A column vector (a reduction's [R, 1] result) has no innermost dim to widen.
            if row_bytes < threshold and tile.shape[-1] > 1:
                found.append(Diagnostic(
                    DiagnosticCheck.TileInnermostDimGranularity,
                    f"pl.{call.op} of a {list(tile.shape)} {tile.dtype.name} tile moves "
                    f"{row_bytes} B per row; {backend.name} moves rows of at least {threshold} B "
                    "efficiently. Widen the innermost dimension if the data allows",
                    call.span,
                ))
    return found


PRE_PIPELINE_CHECKS = {
    DiagnosticCheck.OutParamWriteDropped: out_param_write_dropped,
    DiagnosticCheck.InputParamWritten: input_param_written,
    DiagnosticCheck.UnusedVariable: unused_variable,
    DiagnosticCheck.UnusedControlFlowResult: unused_control_flow_result,
}
POST_PASS_CHECKS = {DiagnosticCheck.UnusedVariable: unused_variable}
POST_PIPELINE_CHECKS = {
    DiagnosticCheck.TileInnermostDimGranularity: tile_innermost_dim_granularity,
}


class DiagnosticsInstrument(PassInstrument):
    """Runs the active checks at the phases asked for and collects what they find."""

    def __init__(self, phase: DiagnosticPhase, checks: frozenset, final_pass: str):
        self.phase = phase
        self.checks = checks
        self.final_pass = final_pass
        self.found: list[Diagnostic] = []
        self._seen: set = set()

    def _run(self, table, program, ctx, suffix: str = "") -> None:
        """Runs the active checks of `table`; a finding already reported is not repeated
        (the IR that passes derive from the user's code keeps its spans)."""
        for check, fn in table.items():
            if check not in self.checks:
                continue
            for d in fn(program, ctx.backend):
                if (d.check, d.span) in self._seen:
                    continue
                self._seen.add((d.check, d.span))
                self.found.append(
                    Diagnostic(d.check, d.message + suffix, d.span))

    def before_pipeline(self, program, ctx) -> None:
        if self.phase.value >= DiagnosticPhase.PRE_PIPELINE.value:
            self._run(PRE_PIPELINE_CHECKS, program, ctx)

    def after_pass(self, index, pass_, program, ctx) -> None:
        if self.phase.value >= DiagnosticPhase.POST_PASS.value:
            self._run(POST_PASS_CHECKS, program, ctx, f" (left dead by pass {pass_.name})")
        if pass_.name == self.final_pass and \
                self.phase.value >= DiagnosticPhase.POST_PIPELINE.value:
            self._run(POST_PIPELINE_CHECKS, program, ctx)
