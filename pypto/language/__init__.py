"""The pypto DSL: `import pypto.language as pl`.

Kernel bodies are parsed from source, never executed; the names here are what the
parser recognises.  Operators (`pl.add`, `pl.load`, ...) come from the IR op registry.
"""

from __future__ import annotations

from ..ir.dtypes import DataType
from ..ir.ops import all_ops
from ..ir.types import (
    TASK_ID,
    AtomicType,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    Role,
    SplitMode,
)
from . import namespaces
from .jit import JitFunction, jit
from .parser import DslBuiltin, DynamicProgram, OpStub, parse_program
from .program_template import ProgramTemplate
from .typing import DynamicDim, InOut, Out, Scalar, Tensor, Tile, dynamic

BOOL = DataType.BOOL
INT8 = DataType.INT8
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
UINT8 = DataType.UINT8
UINT16 = DataType.UINT16
UINT32 = DataType.UINT32
FP16 = DataType.FP16
BF16 = DataType.BF16
FP32 = DataType.FP32
FP8E4M3FN = DataType.FP8E4M3FN
FP8E5M2 = DataType.FP8E5M2
INDEX = DataType.INT64
"""Index arithmetic (loop variables, offsets, dimensions): a 64-bit integer, `pl.INT64`."""

Mem = MemorySpace

at = DslBuiltin("at")
range = DslBuiltin("range")  # noqa: A001 - the DSL's loop, shadowing is intended
unroll = DslBuiltin("unroll")
parallel = DslBuiltin("parallel")
pipeline = DslBuiltin("pipeline")
"""`for i in pl.pipeline(n, stage=F)`: a loop whose body is replicated F times per iteration."""
yield_ = DslBuiltin("yield_")
"""`x = pl.yield_(v)`: ends an `if` branch (x = v) or a loop with init_values (its carries)."""
const = DslBuiltin("const")
static_assert = DslBuiltin("static_assert")
static_print = DslBuiltin("static_print")
"""`pl.static_print(*args)`: prints at parse time what the parser knows of the values."""
constexpr = DslBuiltin("constexpr")
"""`N: pl.constexpr = expr` binds a compile-time name in a kernel body (folded, not in the IR)."""
spmd = DslBuiltin("spmd")
manual_scope = DslBuiltin("manual_scope")
cluster = DslBuiltin("cluster")
"""`with pl.cluster():` groups cube and vector dispatches on one cluster (see language.md)."""
submit = DslBuiltin("submit")
spmd_submit = DslBuiltin("spmd_submit")
split = DslBuiltin("split")
"""`pl.at(optimizations=[pl.split(pl.SplitMode.UP_DOWN)])`: halve a mixed kernel's vector work."""
cross_core_slot = DslBuiltin("cross_core_slot")
func_attr = DslBuiltin("func_attr")
"""`pl.func_attr({"split": pl.SplitMode.UP_DOWN})`: function attributes, first statement."""
TaskId = TASK_ID
"""The type of a task id (`with pl.at(...) as tid`); only `deps=[...]` consumes one."""

for _name in all_ops():
    if "." not in _name:  # `tile.assemble` and friends are reached through pl.tile
        globals()[_name] = OpStub(_name)
for _name, _op in namespaces.SCALAR_SPELLINGS.items():
    globals()[_name] = OpStub(_op, None, True, _name)
del _name, _op
tile = namespaces.tile
tensor = namespaces.tensor
dim = DslBuiltin("dim")
inline = jit.inline
"""`@pl.inline`: a helper spliced into its callers (the same as `@pl.jit.inline`)."""
"""`pl.dim(t, axis)` (also `pl.tensor.dim`): a tensor's dimension, as `t.shape[axis]`."""


def program(cls=None, *, entry: str | None = None):
    """`@pl.program` marks a class of `@pl.function` methods: the form the IR printer emits.

    The class body is parsed from source; use `pl.parse(text)` for printed programs.  Names
    are those of the class's module, and of the function that defines the class (a builder
    `def build(rows): @pl.program class P: ...` reads `rows`).  A class whose entry has
    `pl.dynamic` dimensions gives a `ProgramTemplate`, parsed per call's tensors.
    """
    import sys

    def wrap(c, frame):
        import inspect
        import textwrap

        from ..ir.errors import ParseError

        try:
            lines, first = inspect.getsourcelines(c)
            file = inspect.getsourcefile(c) or "<unknown>"
        except (OSError, TypeError):
            raise ParseError(f"cannot read the source of class `{c.__name__}`; use pl.parse(text)")
        module = sys.modules.get(c.__module__)
        namespace = dict(vars(module)) if module else {}
        if frame is not None and frame.f_globals is not frame.f_locals:
            namespace.update(frame.f_locals)  # the defining function's locals
        source = textwrap.dedent("".join(lines))
        try:
            return parse_program(source, file, namespace, first - 1)
        except DynamicProgram:
            return ProgramTemplate(c.__name__, source, file, namespace, first - 1)

    if cls is not None:
        return wrap(cls, sys._getframe(1))
    return lambda c: wrap(c, sys._getframe(1))


def function(fn=None, *, type: FunctionType = FunctionType.Opaque, level=None,  # noqa: A002
             role=None):
    """`@pl.function(type=...)` marks a method of a `@pl.program` class (the class is parsed
    from source; `level=pl.Level.HOST` / `role=` functions are refused there).  At module
    level it makes a standalone function: a `@pl.program` that calls it by name gets it
    as one of its functions (parsed for the call's argument types)."""
    import sys

    frame = sys._getframe(1)
    scope = dict(frame.f_locals) if frame.f_locals is not frame.f_globals else None
    if fn is None:
        return lambda f: JitFunction(f, type, scope)
    return JitFunction(fn, type, scope)


def parse(source: str, filename: str = "<pl.parse>"):
    """Read `Program.as_python()` text back into a Program; text holding one standalone
    `@pl.function` (no class) gives that Function.  `pl` needs no import in the text."""
    return parse_program(source, filename)


def loads(source_or_path):
    """`pl.parse` of a file's text when given the path of an existing file (upstream's
    `pl.loads(path)`), else of the text itself."""
    import os

    text = str(source_or_path)
    if "\n" not in text and os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            return parse_program(f.read(), text)
    return parse_program(text)

__all__ = [
    "jit",
    "JitFunction",
    "program",
    "ProgramTemplate",
    "function",
    "parse",
    "loads",
    "Tensor",
    "Tile",
    "Scalar",
    "Out",
    "InOut",
    "dynamic",
    "DynamicDim",
    "Level",
    "Mem",
    "MemorySpace",
    "PadValue",
    "AtomicType",
    "FunctionType",
    "at",
    "range",
    "unroll",
    "parallel",
    "pipeline",
    "yield_",
    "const",
    "static_assert",
    "static_print",
    "inline",
    "constexpr",
    "spmd",
    "manual_scope",
    "cluster",
    "submit",
    "spmd_submit",
    "split",
    "cross_core_slot",
    "func_attr",
    "SplitMode",
    "Role",
    "TaskId",
    "DataType",
    "INDEX",
    "tile",
    "tensor",
    "dim",
]
