"""TensorToTile's lowering of the tensor-level scatters (pypto/ir/ops/scatter.py).

`cache = pl.scatter_update(cache, -2, index, src)` becomes, chunk by chunk of R rows of src:

    pos = pl.tile.ci(row, [1, R])                                  # k = row .. row + R - 1
    rows = pl.tile.mgather(index, pos, coalesce="elem")            # index.flatten()[k]
    values = pl.load(src, [row, 0], [R, d])
    cache = pl.tile.mscatter(values, rows, cache, coalesce="row")  # cache[rows[0, r]] = ...

in a `pl.range` over the chunks, R the largest divisor of src's rows whose tiles fit the
backend's Vec buffer.  In upstream's rank-4 form (cache [blockNum, blockSize, 1, d], src
[b, s, 1, d]) the rows are read as rows of the flattened tensors: `values` is
`pl.tile.mgather(src, pos, coalesce="row")` and MSCATTER's row form writes row
rows[0, r] of the cache's blockNum * blockSize.

`t = pl.scatter(t, -1, index, src)` becomes, row by row:

    row_tile = pl.load(t, [row, 0], [1, S])
    values = pl.load(src, [row, 0], [1, K])
    at = pl.load(index, [row, 0], [1, K])
    t = pl.store(pl.tile.scatter(row_tile, values, at), [row, 0], t)

(one row at a time, so an index is the column itself: TSCATTER addresses the tile's
storage, and a row's is its columns).  The statements are lowered before the runs are
formed: each is a write of its input like a store, so a run that reads it after them loads
what they wrote.
"""

from __future__ import annotations

from ..ir.errors import CapacityError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, For, Var
from ..ir.ops import make_call
from ..ir.ops.scatter import scatter_update_operands, tensor_scatter_operands
from ..ir.types import INDEX
from ..ir.visitor import IRMutator
from .names import NameSupply
from .tensor_views import call_of, is_view

_ALIGN = 32


class LowerTensorScatters(IRMutator):
    """Every pl.scatter_update and pl.scatter of a kernel, as tile statements (module
    docstring)."""

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
        if isinstance(stmt.value, Call) and stmt.value.op == "tensor.scatter":
            return self._scatter(stmt)
        return super().mutate_Assign(stmt)

    def _in_memory(self, var, what: str, views: bool, stmt, op: str = "scatter_update") -> None:
        if isinstance(var, Var) and (var.name in self.params or views and var.name in self.views):
            return
        kind = "a tensor the block is given" + (" (or a slice of one)" if views else "")
        raise LoweringError(
            f"pl.{op} {what} `{var}` in global memory, so it must be {kind}; it is "
            + ("a slice" if isinstance(var, Var) and var.name in self.views
               else "a value computed in the kernel"), stmt.span,
            hint="write the value into a tensor in one pl.at block and scatter in the next")

    def _scatter_update(self, stmt: Assign) -> list:
        call = call_of(stmt)
        table, index, src = scatter_update_operands(call.args, dict(call.attrs))
        self._in_memory(table, "writes", False, stmt)
        self._in_memory(index, "reads its indices from", False, stmt)
        paged = len(src.type.shape) == 4  # upstream's KV-cache form: the same on the rows
        self._in_memory(src, "reads its rows from", not paged, stmt)
        d = src.type.shape[-1]
        n = index.type.shape[0] * index.type.shape[1]
        r = self._chunk_rows(n, d, src.type.dtype.itemsize, stmt)
        row = Var(self.names.fresh("row"), INDEX) if r < n else None
        first = row if row is not None else Const(0, INDEX)
        span = call.span
        pos = make_call("ci", first, span=span, shape=(1, r))
        pos_var = Var(self.names.fresh("pos"), pos.type, span)
        rows = make_call("tile.mgather", index, pos_var, span=span, coalesce="elem")
        rows_var = Var(self.names.fresh("rows"), rows.type, span)
        if paged:  # src [b, s, 1, d]: rows k of its b * s, gathered (a load is rank 2)
            load = make_call("tile.mgather", src, pos_var, span=span, coalesce="row")
        else:
            load = make_call("load", src, ExprList((first, Const(0, INDEX))), span=span,
                             shapes=(r, d))
        values = Var(self.names.fresh(f"{src.name}_tile"), load.type, span)
        scatter = make_call("tile.mscatter", values, rows_var, table, span=span, coalesce="row")
        body = (Assign((pos_var,), pos, span), Assign((rows_var,), rows, span),
                Assign((values,), load, span), Assign(stmt.targets, scatter, stmt.span))
        if row is None:
            return list(body)
        return [For(row, Const(0, INDEX), Const(n, INDEX), Const(r, INDEX), body)]

    def _scatter(self, stmt: Assign) -> list:
        call = call_of(stmt)
        table, index, src = tensor_scatter_operands(call.args, dict(call.attrs))
        self._in_memory(table, "writes", False, stmt, "scatter")
        self._in_memory(index, "reads its indices from", True, stmt, "scatter")
        self._in_memory(src, "reads its values from", True, stmt, "scatter")
        rows, width = table.type.shape
        k = src.type.shape[1]
        need = _aligned(width * table.type.dtype.itemsize) + \
            _aligned(k * src.type.dtype.itemsize) + _aligned(k * index.type.dtype.itemsize)
        if need > self.capacity:
            raise CapacityError(
                f"pl.scatter works a row at a time, and one row of input ({width} elements), "
                f"of src and of index ({k} each) take {need} bytes, more than the Vec "
                f"buffer's {self.capacity}", stmt.span,
                hint="scatter into narrower rows: split the row length across tensors")
        row = Var(self.names.fresh("row"), INDEX) if rows > 1 else None
        first = row if row is not None else Const(0, INDEX)
        at = ExprList((first, Const(0, INDEX)))
        span = call.span
        body, tiles = [], []
        for tensor, cols in ((table, width), (src, k), (index, k)):
            load = make_call("load", tensor, at, span=span, shapes=(1, cols))
            tiles.append(Var(self.names.fresh(f"{tensor.name}_row"), load.type, span))
            body.append(Assign((tiles[-1],), load, span))
        scatter = make_call("tile.scatter", *tiles, span=span)
        written = Var(self.names.fresh(f"{table.name}_scattered"), scatter.type, span)
        body += [Assign((written,), scatter, span),
                 Assign(stmt.targets, make_call("store", written, at, table, span=span),
                        stmt.span)]
        if row is None:
            return body
        return [For(row, Const(0, INDEX), Const(rows, INDEX), Const(1, INDEX), tuple(body))]

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
