"""Compile-time values of a kernel body: `x.shape`, `x.shape[i]`, `x.dtype` and
`N: pl.constexpr = ...` locals.

Every kernel is specialised to its arguments' types, so a tensor's or tile's shape and
dtype are constants of the body, folded like a module-level name; they leave no trace in
the IR.  The exception is a `pl.dynamic` dimension: it is declared to be known only at run
time, so reading it (or a shape derived from it) is an error rather than a silent
specialisation.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..ir.dtypes import DataType
from ..ir.errors import TypeCheckError
from ..ir.types import TensorType, TileType

TYPE_ATTRIBUTES = ("shape", "dtype")


@dataclass(frozen=True)
class RuntimeDim:
    """A dimension known only at run time: `pl.dynamic(name)` of parameter `origin`, or
    (name None) a dimension of a tensor computed from such a parameter."""

    dim: int
    name: str | None
    origin: str

    def explain(self, value: str) -> str:
        """Why dimension `dim` of `value` is unknown, for messages."""
        if self.name is None:
            return (f"`{value}` is computed from `{self.origin}`, whose shape has pl.dynamic "
                    "dimensions")
        dynamic = f"pl.dynamic(\"{self.name}\")"
        if value == self.origin:
            return f"dimension {self.dim} of `{value}` is {dynamic}"
        return (f"`{value}` is computed from `{self.origin}`, whose dimension {self.dim} is "
                f"{dynamic}")


class CompileTimeSyntax:
    """Mixin of `FunctionParser`: shapes and dtypes of values, and `pl.constexpr` locals."""

    def init_compile_time(self, dynamic: dict[str, dict[int, str]]) -> None:
        # name -> {dim: RuntimeDim} for tensors whose shape is partly known only at run time
        self.runtime_dims: dict[str, dict[int, RuntimeDim]] = {
            name: {d: RuntimeDim(d, n, name) for d, n in dims.items()}
            for name, dims in dynamic.items() if dims}
        self.constexpr_lines: dict[str, int] = {}

    # ------------------------------------------------------------------ x.shape / x.dtype
    def is_type_attribute(self, node: ast.AST) -> bool:
        """`<runtime value>.shape` / `.dtype`: a constant read from the value's type."""
        return (isinstance(node, ast.Attribute) and node.attr in TYPE_ATTRIBUTES
                and not self.is_static(node.value))

    def type_attribute(self, node: ast.Attribute):
        """The value's dtype, or its shape as a tuple whose run-time-only dimensions are
        `RuntimeDim` markers (`known` rejects them once the user's index is applied)."""
        vtype = self.expr(node.value).type
        text = ast.unparse(node.value)
        if node.attr == "dtype":
            dtype = getattr(vtype, "dtype", None)
            if not isinstance(dtype, DataType):
                raise self.error(node, f"`{text}` has no dtype", cls=TypeCheckError)
            return dtype
        if not isinstance(vtype, (TensorType, TileType)):
            raise self.error(node, f"`{text}` is {_describe(vtype)}; only tensors and tiles "
                             "have a shape", cls=TypeCheckError)
        runtime = self._runtime_dims_of(node.value, vtype)
        return tuple(runtime.get(i, d) for i, d in enumerate(vtype.shape))

    def known(self, node: ast.AST, value):
        """`value` unless it is, or holds, a dimension known only at run time."""
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, RuntimeDim):
                base = _type_attribute_base(node)
                raise self.error(
                    node, f"`{ast.unparse(node)}` is known only at run time: "
                    f"{item.explain(base)}",
                    hint="tile shapes, loop bounds and other constants need sizes known at "
                         "compile time: declare that dimension with a number, or pass the "
                         "size as a pl.Scalar argument",
                    cls=TypeCheckError)
        return value

    def _runtime_dims_of(self, node: ast.AST, vtype) -> dict[int, RuntimeDim]:
        if isinstance(vtype, TileType):
            return {}  # a tile's shape is always a compile-time attribute
        if isinstance(node, ast.Name):
            return self.runtime_dims.get(node.id, {})
        return self.derived_runtime_dims(node, vtype)

    def derived_runtime_dims(self, node: ast.AST, vtype) -> dict[int, RuntimeDim]:
        """The run-time-only dimensions of a value computed by `node`: those of an operand
        of the same shape (a store into `out`, an elementwise op), else conservatively
        every dimension when any operand has one."""
        if not isinstance(vtype, TensorType):
            return {}
        sources = [n.id for n in ast.walk(node)
                   if isinstance(n, ast.Name) and n.id in self.runtime_dims and n.id in self.vars]
        same = [s for s in sources if getattr(self.vars[s].type, "shape", None) == vtype.shape]
        if same:
            merged: dict[int, RuntimeDim] = {}
            for s in same:
                merged.update(self.runtime_dims[s])
            return merged
        if sources:
            return {d: RuntimeDim(d, None, sources[0]) for d in range(len(vtype.shape))}
        return {}

    def track_runtime_dims(self, name: str, node: ast.AST, vtype) -> None:
        """Record which dimensions of the value just bound to `name` are run-time-only."""
        dims = self.derived_runtime_dims(node, vtype)
        if dims:
            self.runtime_dims[name] = dims
        else:
            self.runtime_dims.pop(name, None)

    # ------------------------------------------------------------------ pl.constexpr
    def bind_constexpr(self, node: ast.AnnAssign) -> None:
        """`N: pl.constexpr = <compile-time expression>`: a name of the body, folded."""
        target = node.target
        if not isinstance(target, ast.Name):
            raise self.error(node, "a pl.constexpr declares one name: `N: pl.constexpr = ...`")
        name = target.id
        self.check_not_constexpr(name, node)
        if name in self.vars:
            raise self.error(node, f"`{name}` already holds a runtime value; a pl.constexpr "
                             "needs a name of its own", hint="use a new name")
        if not self.is_static(node.value):
            raise self.error(
                node, f"`{name}: pl.constexpr` needs a compile-time value, but "
                f"`{ast.unparse(node.value)}` is computed at run time",
                hint="drop `: pl.constexpr` to bind a runtime value, or compute it from "
                     "constants, shapes (x.shape[i]) and dtypes (x.dtype)")
        value = self.static(node.value)
        self.namespace.maps[0][name] = value
        self.constexpr_lines[name] = self.source.span(node).line

    def check_not_constexpr(self, name: str, node: ast.AST) -> None:
        """Compile-time names are bound once: rebinding one is an error."""
        line = self.constexpr_lines.get(name)
        if line is not None:
            raise self.error(node, f"`{name}` is a pl.constexpr (bound on line {line}) and "
                             "cannot be rebound",
                             hint="compile-time names are bound once; use a new name")


def _type_attribute_base(node: ast.AST) -> str:
    """`x` of `x.shape[0]` / `x.shape`, for messages."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return ast.unparse(node.value)
    return ast.unparse(node)


def _describe(t) -> str:
    from ..ir.types import ScalarType

    if isinstance(t, ScalarType):
        return f"a {t.dtype.name} scalar"
    return f"a {type(t).__name__}"


__all__ = ["CompileTimeSyntax", "RuntimeDim", "TYPE_ATTRIBUTES"]
