"""TensorToTile's lowering of the tensor-level scatters (pypto/ir/ops/scatter.py).

`cache = pl.scatter_update(cache, -2, index, src)` becomes, chunk by chunk of R rows of src:

    pos = pl.tile.ci(row, [1, R])                                  # k = row .. row + R - 1
    rows = pl.tile.mgather(index, pos, coalesce="elem")            # index.flatten()[k]
    values = pl.load(src, [row, 0], [R, d])
    cache = pl.tile.mscatter(values, rows, cache, coalesce="row")  # cache[rows[0, r]] = ...

in a `pl.range` over the chunks, R the largest divisor of src's rows whose tiles fit the
backend's Vec buffer.  The statement is lowered before the runs are formed: it is a write
of `cache` like a store, so a run that reads `cache` after it loads what it wrote.
"""

from __future__ import annotations

from ..ir.errors import CapacityError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, For, Var
from ..ir.ops import make_call
from ..ir.ops.scatter import scatter_update_operands
from ..ir.types import INDEX
from ..ir.visitor import IRMutator
from .names import NameSupply
from .tensor_views import call_of, is_view

_ALIGN = 32


class LowerTensorScatters(IRMutator):
    """Every pl.scatter_update of a kernel, as tile statements (module docstring)."""

    def __init__(self, fn, names: NameSupply, capacity: int):
        self.names, self.capacity = names, capacity
        self.params = {p.var.name for p in fn.params}
        self.views: set[str] = set()  # slices of the parameters (src may be one)

    def mutate_Assign(self, stmt: Assign):
        if is_view(stmt) and call_of(stmt).args[0].name in self.params | self.views:
            self.views.add(stmt.targets[0].name)
            return stmt
        for t in stmt.targets:
            self.views.discard(t.name)
        if isinstance(stmt.value, Call) and stmt.value.op == "scatter_update":
            return self._scatter_update(stmt)
        return super().mutate_Assign(stmt)

    def _in_memory(self, var, what: str, views: bool, stmt) -> None:
        if isinstance(var, Var) and (var.name in self.params or views and var.name in self.views):
            return
        kind = "a tensor the block is given" + (" (or a slice of one)" if views else "")
        raise LoweringError(
            f"pl.scatter_update {what} `{var}` in global memory, so it must be {kind}; it is "
            + ("a slice" if isinstance(var, Var) and var.name in self.views
               else "a value computed in the kernel"), stmt.span,
            hint="write the value into a tensor in one pl.at block and scatter in the next")

    def _scatter_update(self, stmt: Assign) -> list:
        call = call_of(stmt)
        table, index, src = scatter_update_operands(call.args, dict(call.attrs))
        self._in_memory(table, "writes", False, stmt)
        self._in_memory(index, "reads its indices from", False, stmt)
        self._in_memory(src, "reads its rows from", True, stmt)
        n, d = src.type.shape
        r = self._chunk_rows(n, d, src.type.dtype.itemsize, stmt)
        row = Var(self.names.fresh("row"), INDEX) if r < n else None
        first = row if row is not None else Const(0, INDEX)
        span = call.span
        pos = make_call("ci", first, span=span, shape=(1, r))
        pos_var = Var(self.names.fresh("pos"), pos.type, span)
        rows = make_call("tile.mgather", index, pos_var, span=span, coalesce="elem")
        rows_var = Var(self.names.fresh("rows"), rows.type, span)
        load = make_call("load", src, ExprList((first, Const(0, INDEX))), span=span,
                         shapes=(r, d))
        values = Var(self.names.fresh(f"{src.name}_tile"), load.type, span)
        scatter = make_call("tile.mscatter", values, rows_var, table, span=span, coalesce="row")
        body = (Assign((pos_var,), pos, span), Assign((rows_var,), rows, span),
                Assign((values,), load, span), Assign(stmt.targets, scatter, stmt.span))
        if row is None:
            return list(body)
        return [For(row, Const(0, INDEX), Const(n, INDEX), Const(r, INDEX), body)]

    def _chunk_rows(self, n: int, d: int, itemsize: int, stmt) -> int:
        """The largest divisor R of n whose tiles (R rows of src, two [1, R] index rows) fit."""
        for r in (k for k in range(n, 0, -1) if n % k == 0):
            if _aligned(r * d * itemsize) + 2 * _aligned(r * 4) <= self.capacity:
                return r
        raise CapacityError(
            f"pl.scatter_update writes whole rows, and one row of src ({d} elements) does not "
            f"fit the Vec buffer's {self.capacity} bytes", stmt.span,
            hint="scatter narrower rows: split the row length across tensors")


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN
