"""The pypto DSL: `import pypto.language as pl`.

Kernel bodies are parsed from source, never executed; the names they read (dtypes,
`pl.at`, the operators `pl.add`, `pl.load`, ... of the IR op registry) are the DSL's
vocabulary (`vocabulary.py`), re-exported here beside the decorators: `pl.jit` kernels
compile and run when called, so this namespace sits above the compiler, while the
parser and its vocabulary sit below it.
"""

from __future__ import annotations

from ..ir.errors import api_boundary as _api_boundary
from ..ir.errors import user_frame as _user_frame
from ..ir.types import FunctionType
from .jit import InlineFunction, JitFunction, jit
from .parser import DynamicProgram, parse_program
from .program_template import ProgramTemplate
from .vocabulary import *  # noqa: F403 - the DSL's names (`pl.FP32`, `pl.at`, `pl.add`, ...)

inline = jit.inline
"""`@pl.inline`: a helper spliced into its callers (the same as `@pl.jit.inline`)."""

@_api_boundary
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
            raise ParseError(
                f"cannot read the source of class `{c.__name__}`; use pl.parse(text)"
            ) from None
        module = sys.modules.get(c.__module__)
        namespace = dict(vars(module)) if module else {}
        if frame is not None and frame.f_globals is not frame.f_locals:
            namespace.update(frame.f_locals)  # the defining function's locals
        source = textwrap.dedent("".join(lines))
        try:
            return parse_program(source, file, namespace, first - 1, by_value=True)
        except DynamicProgram:
            return ProgramTemplate(c.__name__, source, file, namespace, first - 1)

    if cls is not None:
        return wrap(cls, _user_frame())  # the class's defining frame
    return _api_boundary(lambda c: wrap(c, _user_frame()))


@_api_boundary
def function(fn=None, *, type: FunctionType = FunctionType.Opaque, level=None,  # noqa: A002
             role=None, auto_scope: bool = True):
    """`@pl.function(type=...)` marks a method of a `@pl.program` class (the class is parsed
    from source; `level=pl.Level.HOST` / `role=` functions are refused there).  At module
    level it makes a standalone function: a `@pl.program` that calls it by name gets it
    as one of its functions (parsed for the call's argument types).  `auto_scope=False`
    (an orchestration or inline function): see `pl.jit`."""
    from .jit import check_auto_scope

    check_auto_scope(auto_scope, type, "@pl.function")

    frame = _user_frame()
    scope = dict(frame.f_locals) if frame.f_locals is not frame.f_globals else None
    cls = InlineFunction if type is FunctionType.Inline else JitFunction
    if fn is None:
        return lambda f: cls(f, type, scope)
    return cls(fn, type, scope)


@_api_boundary
def parse(source: str, filename: str = "<pl.parse>"):
    """Read `Program.as_python()` text back into a Program; text holding one standalone
    `@pl.function` (no class) gives that Function.  `pl` needs no import in the text."""
    return parse_program(source, filename)


@_api_boundary
def loads(source_or_path):
    """`pl.parse` of a file's text when given the path of an existing file (upstream's
    `pl.loads(path)`), else of the text itself."""
    import os

    text = str(source_or_path)
    if "\n" not in text and os.path.isfile(text):
        return _parse_file(text)
    return parse_program(text)


@_api_boundary
def loads_program(path):
    """Upstream's `pl.loads_program(path)`: the `@pl.program` class in a file (such as
    `Program.as_python()` wrote) read back into a Program; errors name the file's lines.
    A file holding a standalone `@pl.function` is refused (`pl.loads` reads either)."""
    import os

    from ..ir.errors import ParseContentError, Span
    from ..ir.nodes import Program

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"pl.loads_program: no file {path!r}; pass the path of a file "
                                "holding a @pl.program class (pl.parse_program reads text)")
    result = _parse_file(path)
    if not isinstance(result, Program):
        raise ParseContentError(
            f"{path} holds a standalone @pl.function, not a @pl.program class",
            result.span or Span(path, 1),
            hint="read it with pl.loads(path), which takes either")
    return result


def _parse_file(path: str):
    with open(path, encoding="utf-8") as f:
        return parse_program(f.read(), path)

__all__ = [
    "jit",
    "JitFunction",
    "InlineFunction",
    "program",
    "ProgramTemplate",
    "function",
    "parse",
    "loads",
    "loads_program",
    "Tensor",
    "Tuple",
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
    "scope",
    "cluster",
    "split_aiv",
    "aiv_shard",
    "aic_gather",
    "submit",
    "spmd_submit",
    "split",
    "cross_core_slot",
    "no_dep",
    "write",
    "func_attr",
    "ScopeMode",
    "SplitMode",
    "Role",
    "TaskId",
    "DataType",
    "INDEX",
    "tile",
    "tensor",
    "dim",
]
