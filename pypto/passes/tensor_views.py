"""Tensor views in kernels: `pl.slice` of a tensor (`x[r0:r1, c0:c1]`) moves no data.

A view is folded into the loads that read through it: with `v = pl.slice(x, shape,
[r0, c0])`, `pl.load(v, [i, j], ...)` reads `x` at `[r0 + i, c0 + j]`.  Views of views
compose; offsets may be runtime values.  Only tensors handed to the kernel (and views
of them) can be viewed, and views are read, not written: a window of an output is
written with `pl.store` offsets or `out[r0:r1, c0:c1] = value`.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import InternalError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, Function, Var
from ..ir.types import INDEX, TensorType
from ..ir.visitor import IRMutator


def is_view(stmt) -> bool:
    """Is `stmt` the definition of a tensor view?"""
    return (isinstance(stmt, Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, Call)
            and stmt.value.op == "slice" and isinstance(stmt.value.type, TensorType))


def call_of(stmt: Assign) -> Call:
    """The operator call a tensor statement or a view assigns, for TensorToTile and its
    parts (where they are recognised, `is_view` and TensorToTile check it)."""
    if not isinstance(stmt.value, Call):
        raise InternalError(f"TensorToTile: {stmt} assigns no operator call")
    return stmt.value


def tensor_type_of(value) -> TensorType:
    """The type of a tensor value of TensorToTile (checked where the run is formed)."""
    if not isinstance(value.type, TensorType):
        raise InternalError(f"TensorToTile: {value} is not a tensor value")
    return value.type


def index_add(a, b):
    """a + b on index expressions, folding constants."""
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value, INDEX)
    return Call("add", (a, b), (), INDEX)


def fold_views(fn: Function) -> Function:
    """`fn` without view definitions, its loads reading the viewed tensors directly."""
    return _ViewFolder({p.var.name for p in fn.params}).mutate_function(fn)


class _ViewFolder(IRMutator):
    def __init__(self, params: set[str]):
        self.params = params
        self.views: dict[str, tuple[Var, tuple]] = {}

    def mutate_Assign(self, stmt: Assign):
        if is_view(stmt):
            src, offsets = call_of(stmt).args
            offsets = tuple(self.mutate_expr(o) for o in offsets.items)
            if src.name in self.views:
                base, outer = self.views[src.name]
                offsets = tuple(index_add(a, b) for a, b in zip(outer, offsets, strict=True))
            elif src.name in self.params:
                base = src
            else:
                raise LoweringError(
                    f"`{src.name}` is computed in the kernel; only tensors passed to it can be "
                    "sliced",
                    stmt.span,
                    hint="slice the inputs and compute on the slices, or write tiles",
                )
            self.views[stmt.targets[0].name] = (base, offsets)
            return []
        new = super().mutate_Assign(stmt)
        for t in stmt.targets:
            self.views.pop(t.name, None)  # the name no longer denotes a view
        return new

    def mutate_Call(self, expr: Call):
        expr = super().mutate_Call(expr)
        if expr.op == "load" and expr.args[0].name in self.views:
            base, origin = self.views[expr.args[0].name]
            offsets = expr.args[1]
            moved = ExprList(tuple(index_add(a, b)
                                   for a, b in zip(origin, offsets.items, strict=True)),
                             offsets.span)
            return replace(expr, args=(base, moved) + expr.args[2:])
        if expr.op in ("tile.mgather", "tile.mscatter"):
            table = expr.args[0 if expr.op == "tile.mgather" else 2]
            if isinstance(table, Var) and table.name in self.views:
                raise LoweringError(
                    f"pl.{expr.op} indexes the whole of a tensor, and `{table.name}` is a view",
                    expr.span, hint="gather from (scatter into) the tensor itself and offset "
                                    "the indices")
        if expr.op == "store" and isinstance(expr.args[2], Var) and \
                expr.args[2].name in self.views:
            raise LoweringError(
                f"`{expr.args[2].name}` is a view; views are read, not written",
                expr.span,
                hint="write the window with pl.store offsets or out[r0:r1, c0:c1] = value",
            )
        return expr
