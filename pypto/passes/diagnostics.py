"""Compile-time diagnostics: warnings with the user's file:line, never errors.

Each check is a function from a program to diagnostics, registered under a
`DiagnosticCheck`; the driver runs them at their phase and reports them through
Python's `warnings` (attributed to the user's line) and `report/diagnostics.log`.
"""

from __future__ import annotations

import enum
import os
import warnings
from dataclasses import dataclass

from ..ir.errors import Span
from ..ir.nodes import Assign, For, FuncCall, Program
from ..ir.types import Direction
from .outline_incore import written_tensor


class PyptoWarning(UserWarning):
    """A compile-time diagnostic about the user's program."""


class DiagnosticPhase(enum.Enum):
    NONE = "none"
    PRE_PIPELINE = "pre_pipeline"
    POST_PASS = "post_pass"
    POST_PIPELINE = "post_pipeline"


class DiagnosticCheck(enum.Enum):
    OutParamWriteDropped = "OutParamWriteDropped"


@dataclass(frozen=True)
class Diagnostic:
    check: DiagnosticCheck
    message: str
    span: Span | None

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        return f"{where}warning [{self.check.value}]: {self.message}"


def _walk_assigns(body):
    for stmt in body:
        if isinstance(stmt, For):
            yield from _walk_assigns(stmt.body)
        elif hasattr(stmt, "body"):
            yield from _walk_assigns(stmt.body)
        elif isinstance(stmt, Assign):
            yield stmt


def out_param_write_dropped(program: Program) -> list[Diagnostic]:
    """`out = expr` on a pl.Out parameter rebinds the name; the output is never written."""
    found = []
    for fn in program.functions:
        outs = {p.var.name for p in fn.params if p.direction is not Direction.In}
        for stmt in _walk_assigns(fn.body):
            for target in stmt.targets:
                # `out = kernel(..., out)` receives the buffer back: not a dropped write.
                if target.name in outs and written_tensor(stmt) != target.name \
                        and not isinstance(stmt.value, FuncCall):
                    found.append(Diagnostic(
                        DiagnosticCheck.OutParamWriteDropped,
                        f"`{target.name} = ...` rebinds the name of output parameter "
                        f"`{target.name}`; nothing is written to the output, which keeps the "
                        f"device's uninitialised contents. Write `{target.name}[:] = ...` "
                        "(pl.assemble) or use pl.store",
                        stmt.span,
                    ))
    return found


PRE_PIPELINE_CHECKS = {DiagnosticCheck.OutParamWriteDropped: out_param_write_dropped}


def resolve_phase(phase: DiagnosticPhase | None) -> DiagnosticPhase:
    """`None` defers to env PYPTO_WARNING_LEVEL; the default reports before the pipeline."""
    if phase is not None:
        return phase
    value = os.environ.get("PYPTO_WARNING_LEVEL", "").strip().lower()
    if not value:
        return DiagnosticPhase.PRE_PIPELINE
    try:
        return DiagnosticPhase(value)
    except ValueError:
        names = ", ".join(p.value for p in DiagnosticPhase)
        raise ValueError(f"PYPTO_WARNING_LEVEL={value!r} is not one of {names}") from None


def run_checks(program: Program, phase: DiagnosticPhase | None,
               disabled: set | frozenset | None) -> list[Diagnostic]:
    if resolve_phase(phase) is DiagnosticPhase.NONE:
        return []
    disabled = set(disabled or ())
    found = []
    for check, fn in PRE_PIPELINE_CHECKS.items():
        if check not in disabled:
            found.extend(fn(program))
    return found


def emit(diagnostics: list[Diagnostic]) -> None:
    """Report through `warnings`, attributed to the user's file and line."""
    for d in diagnostics:
        filename = d.span.file if d.span else "<pypto>"
        lineno = d.span.line if d.span else 0
        warnings.warn_explicit(str(d), PyptoWarning, filename, lineno)
