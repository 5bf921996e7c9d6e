"""Diagnostics shared by the compiler and the runtime: kinds, phases and reporting.

A diagnostic is a warning (or a performance hint) about the user's program, attributed
to the user's file and line.  Errors are never diagnostics and cannot be silenced.
"""

from __future__ import annotations

import enum
import os
import warnings
from dataclasses import dataclass

from .dtypes import DataType
from .errors import Span


class PyptoWarning(UserWarning):
    """A diagnostic about the user's program."""


class PyptoPerfHint(PyptoWarning):
    """A diagnostic about performance, not correctness."""


class DiagnosticPhase(enum.Enum):
    """How far diagnostics run: each phase includes the ones before it."""

    NONE = 0
    PRE_PIPELINE = 1  # on the parsed program, before any pass
    POST_PASS = 2  # also after every pass
    POST_PIPELINE = 3  # also on the fully lowered program (perf hints)


class DiagnosticCheck(enum.Enum):
    """Every check pypto runs; each can be silenced through `disabled_diagnostics`."""

    UnusedVariable = "UnusedVariable"
    UnusedControlFlowResult = "UnusedControlFlowResult"
    OutParamWriteDropped = "OutParamWriteDropped"
    InputParamWritten = "InputParamWritten"
    TileInnermostDimGranularity = "TileInnermostDimGranularity"
    GoldenToleranceTooTight = "GoldenToleranceTooTight"


# Checks about performance, not correctness: reported as `PyptoPerfHint`s.
PERF_HINTS = frozenset({DiagnosticCheck.TileInnermostDimGranularity})

# Checks that run only when asked for by name (env PYPTO_ENABLE_DIAGNOSTICS or
# `enabled_diagnostics=`), because they flag code that is often intended.
OFF_BY_DEFAULT = frozenset({DiagnosticCheck.UnusedControlFlowResult})


@dataclass(frozen=True)
class Diagnostic:
    check: DiagnosticCheck
    message: str
    span: Span | None

    @property
    def perf_hint(self) -> bool:
        """About performance, not correctness (the check is one of `PERF_HINTS`)."""
        return self.check in PERF_HINTS

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        kind = "perf hint" if self.perf_hint else "warning"
        return f"{where}{kind} [{self.check.value}]: {self.message}"


def resolve_phase(phase: DiagnosticPhase | None) -> DiagnosticPhase:
    """`None` defers to env PYPTO_WARNING_LEVEL (a phase name); default POST_PIPELINE."""
    if phase is not None:
        return phase
    value = os.environ.get("PYPTO_WARNING_LEVEL", "").strip()
    if not value:
        return DiagnosticPhase.POST_PIPELINE
    try:
        return DiagnosticPhase[value.upper()]
    except KeyError:
        names = ", ".join(p.name.lower() for p in DiagnosticPhase)
        raise ValueError(f"PYPTO_WARNING_LEVEL={value!r} is not one of: {names}") from None


def active_checks(disabled=None, enabled=None) -> frozenset:
    """The checks to run: defaults (plus the opt-in ones asked for) minus the disabled ones."""
    wanted = set(enabled or ())
    env = os.environ.get("PYPTO_ENABLE_DIAGNOSTICS", "")
    for name in filter(None, (n.strip() for n in env.split(","))):
        try:
            wanted.add(DiagnosticCheck[name])
        except KeyError:
            names = ", ".join(c.name for c in DiagnosticCheck)
            raise ValueError(f"PYPTO_ENABLE_DIAGNOSTICS names unknown check {name!r}; "
                             f"known: {names}") from None
    on = {c for c in DiagnosticCheck if c not in OFF_BY_DEFAULT} | wanted
    return frozenset(on - set(disabled or ()))


def emit(diagnostics) -> None:
    """Report through `warnings`, attributed to the user's file and line."""
    for d in diagnostics:
        category = PyptoPerfHint if d.perf_hint else PyptoWarning
        filename = d.span.file if d.span else "<pypto>"
        lineno = d.span.line if d.span else 0
        # The location is the warning's own; the text need not repeat it.
        kind = "perf hint" if d.perf_hint else "warning"
        warnings.warn_explicit(f"{kind} [{d.check.value}]: {d.message}", category, filename,
                               lineno)


def unit_roundoff(dtype: DataType) -> float:
    """Half the gap between 1.0 and the next value: the relative error one rounding can make."""
    return 2.0 ** -dtype.value.mantissa_bits


def comparison_dtype(output: DataType | None, expected: DataType | None = None) -> DataType | None:
    """The dtype whose rounding limits how closely a correct kernel can match a golden.

    The comparison sets the kernel's output, rounded to `output`, beside the expected
    values, rounded once to `expected` (None for values kept in float64, which limit
    nothing): the coarser of the two float dtypes decides.  The inputs' dtypes do not
    enter: the reference computes from the very values the kernel reads, so rounding
    them is no difference between the two (an FP32 result of FP16 inputs can match to
    FP32 precision).  None when neither is a float dtype: integers compare exactly.
    """
    floats = [d for d in (output, expected) if d is not None and d.is_float]
    return max(floats, key=unit_roundoff) if floats else None


def tolerance_too_tight(rtol: float, atol: float, limited_by, span: Span | None = None,
                        what: str = "the golden comparison") -> Diagnostic | None:
    """Warn when rtol and atol are both below one rounding of the dtype limiting a comparison.

    `limited_by` is that dtype (`comparison_dtype(output, expected)` for a golden
    output), or several dtypes of which the coarsest counts; None and dtypes that are not
    floats limit nothing.
    """
    if limited_by is None or isinstance(limited_by, DataType):
        limited_by = [limited_by]
    floats = [d for d in limited_by if d is not None and d.is_float]
    if not floats:
        return None
    coarse = max(floats, key=unit_roundoff)
    limit = unit_roundoff(coarse)
    if max(rtol, atol) >= limit:
        return None
    return Diagnostic(
        DiagnosticCheck.GoldenToleranceTooTight,
        f"{what}: rtol={rtol:g}, atol={atol:g} is tighter than {coarse.name} can honour (one "
        f"rounding to {coarse.name} is up to {limit:.1e} relative), so a correct kernel can "
        f"fail it; use an exact tolerance if the result is bit-exact, or at least {limit:.0e} "
        "(precision workflow, step 1)",
        span,
    )
