"""The IR: nodes, types, the op registry, printer, compile entry point.

Importing `pypto.ir` loads no pass, codegen or toolchain module: the runtime may use
its types, and `CompiledProgram.from_dir` runs an artifact without the compiler.
"""

from __future__ import annotations

from .compiled import CompiledProgram
from .diagnostics import (
    Diagnostic,
    DiagnosticCheck,
    DiagnosticPhase,
    PyptoPerfHint,
    PyptoWarning,
)
from .dtypes import DataType
from .errors import (
    CapacityError,
    InternalError,
    LoweringError,
    ParseError,
    PyptoError,
    Span,
    TypeCheckError,
    VerificationError,
)
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
    Param,
    Program,
    Return,
    Var,
)
from .ops import OpDef, all_ops, get_op
from .options import PassDumpLevel, VerificationLevel, resolve_dump_level
from .pass_manager import OptimizationStrategy
from .types import (
    AtomicType,
    Direction,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    ScalarType,
    SplitMode,
    TensorType,
    TileType,
    TupleType,
)


def compile(
    program: Program,
    output_dir=None,
    dump_passes: bool | PassDumpLevel = True,
    platform: str | None = None,
    verification_level: VerificationLevel | None = None,
    diagnostic_phase: DiagnosticPhase | None = None,
    disabled_diagnostics=None,
    profiling: bool = False,
    enabled_diagnostics=None,
    strategy=None,
    backend_type=None,
    distributed_config=None,
) -> CompiledProgram:
    """Lower, generate and build `program` for `platform`; returns the built artifact.

    `platform` None is `$PYPTO_PLATFORM`, else a2a3sim.  `output_dir=None` builds into
    the content-keyed cache (a hit compiles nothing).
    `dump_passes` writes `passes_dump/` (True = CONCISE); `verification_level` None
    defers to env PYPTO_VERIFY_LEVEL (default BASIC); `diagnostic_phase` None defers to
    env PYPTO_WARNING_LEVEL; `enabled_diagnostics` turns on opt-in checks such as
    `UnusedControlFlowResult`; `profiling` writes `report/pipeline_profile.{txt,json}`.
    Upstream's `strategy` (only `OptimizationStrategy.Default`) and `backend_type` (the
    platform's) are checked; `distributed_config` (a multi-rank program) is refused.  With
    PYPTO_SIMULATE_DEVICE=1 a device platform builds for its simulator.
    """
    from ..compiler import CompileOptions, build_program
    from ..platform import check_target, default_platform, get_platform, simulator_for

    if hasattr(program, "specialize_for"):
        raise TypeError(f"{program!r} has pl.dynamic dimensions in its entry: compile "
                        "`program.specialize_for(*args)` for the call's tensors, or run it "
                        "with pypto.runtime.run(program, *args)")
    platform = default_platform() if platform is None else platform
    get_platform(platform)  # unknown platform: ValueError listing the four
    platform = simulator_for(platform)
    check_target(platform, backend_type, strategy)
    if distributed_config is not None:
        from ..runtime import RunConfig

        RunConfig(platform=platform, distributed_config=distributed_config).check_single_device()
    options = CompileOptions(
        platform=platform,
        dump_passes=resolve_dump_level(dump_passes),
        verification_level=verification_level,
        diagnostic_phase=diagnostic_phase,
        disabled_diagnostics=frozenset(disabled_diagnostics or ()),
        enabled_diagnostics=frozenset(enabled_diagnostics or ()),
        profiling=bool(profiling),
    )
    return CompiledProgram(build_program(program, options, output_dir))


def serialize(node: Program | Function) -> bytes:
    """A program or function as bytes: its printed form (`as_python()`), which
    `deserialize` parses back into an equal node (no pickles)."""
    return node.as_python().encode("utf-8")


def deserialize(data: bytes) -> Program | Function:
    """The program or function `serialize` wrote."""
    from ..language import parse

    return parse(data.decode("utf-8"), "<ir.deserialize>")


__all__ = [
    "compile",
    "serialize",
    "deserialize",
    "CompiledProgram",
    "OptimizationStrategy",
    "DataType",
    "Program",
    "Function",
    "Param",
    "Var",
    "Const",
    "Call",
    "FuncCall",
    "ExprList",
    "Assign",
    "ExprStmt",
    "If",
    "For",
    "AtScope",
    "Return",
    "TensorType",
    "TileType",
    "ScalarType",
    "TupleType",
    "MemorySpace",
    "Direction",
    "FunctionType",
    "Level",
    "PadValue",
    "SplitMode",
    "AtomicType",
    "OpDef",
    "get_op",
    "all_ops",
    "PyptoError",
    "ParseError",
    "TypeCheckError",
    "LoweringError",
    "CapacityError",
    "InternalError",
    "Span",
    "VerificationError",
    "PassDumpLevel",
    "VerificationLevel",
    "DiagnosticPhase",
    "DiagnosticCheck",
    "Diagnostic",
    "PyptoWarning",
    "PyptoPerfHint",
]
