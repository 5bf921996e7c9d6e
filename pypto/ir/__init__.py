"""The IR: nodes, types, the op registry, the printer and its serialized form.

`pypto.ir` imports nothing of pypto above it, so the runtime may use its types.
`ir.compile`, `ir.CompiledProgram` and `ir.deserialize` (upstream's spellings) are
looked up on first use from the layers that hold them: the compiler driver
(`pypto.compiler`), the artifact handle (`pypto.compiled`) and the DSL parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import printer  # noqa: F401 (it registers how the nodes print: nodes.python_text)
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
    RuntimeScope,
    Var,
    While,
)
from .ops import OpDef, all_ops, get_op
from .options import PassDumpLevel, VerificationLevel
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


def serialize(node: Program | Function) -> bytes:
    """A program or function as bytes: its printed form (`as_python()`), which
    `deserialize` parses back into an equal node (no pickles)."""
    return node.as_python().encode("utf-8")


# Upstream's public names for compiling and reading back, kept where upstream programs
# look for them.  They live above the IR, which imports nothing above it
# (tests/architecture/layering.py): these are lazy hooks onto those layers.
_ABOVE = ("compile", "CompiledProgram", "deserialize")

if TYPE_CHECKING:  # their types, for the type checker
    from ..compiled import CompiledProgram
    from ..compiler import compile
    from ..language.parser import deserialize


def __getattr__(name: str) -> Any:
    if name == "compile":
        from .. import compiler

        return compiler.compile
    if name == "CompiledProgram":
        from .. import compiled

        return compiled.CompiledProgram
    if name == "deserialize":
        from ..language import parser

        return parser.deserialize
    raise AttributeError(f"module 'pypto.ir' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ABOVE))


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
    "While",
    "AtScope",
    "RuntimeScope",
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
