"""FlattenBatchTiles: a [B, rows, cols] tile becomes B tiles of [rows, cols].

A rank-3 tile (pl.batch_matmul's operands and result, or any tile loaded from a
[B, rows, cols] tensor) lies on chip as B [rows, cols] tiles, each placed as a tile of
its own, so every later pass, both simulators and the device code see [rows, cols]
tiles only (upstream's FlattenTileNdTo2D unrolls the same way).  A statement on such
tiles becomes one statement per batch i:

- `t = pl.load(x, [b, r, c], [B, M, K])`: batch i loaded from `[b + i, r, c]`
  (a [M, K] tile of one batch of x, `pl.load`'s window [1, M, K]);
- `out = pl.store(t, [b, r, c], out)`: batch i stored at `[b + i, r, c]`;
- `c = pl.batch_matmul(a, b)`: `c_i = pl.matmul(a_i, b_i)`, a batch of 1 or a
  [rows, cols] operand standing for every batch (torch.matmul's broadcast);
- any other operator whose tile operands and result are all [B, ...] tiles: the
  operator on batch i of each, where that is the batch of its result (`pl.move`, the
  elementwise operators, the row reductions); otherwise it is refused at its line.

The batches of one name keep their names wherever it is rebound (in a loop, too).
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import InternalError, LoweringError, TypeCheckError
from ..ir.nodes import Assign, Call, Const, ExprList, ExprStmt, Var
from ..ir.ops import get_op, make_call
from ..ir.ops.inference import fmt_shape
from ..ir.ops.matmul import slab
from ..ir.types import INDEX, FunctionType, TileType
from ..ir.visitor import IRMutator, defs, uses
from .manager import FunctionPass
from .names import NameSupply
from .properties import IRProperty
from .tensor_views import index_add

_HINT = ("a [B, rows, cols] tile is B [rows, cols] tiles: pl.load, pl.move, pl.store, "
         "pl.batch_matmul and the operators that work batch by batch (elementwise, row "
         "reductions) take it; otherwise work on a [rows, cols] tile of each batch "
         "(pl.load(x, [b, r, c], [rows, cols]))")


def batched(t) -> bool:
    """Is `t` a [B, rows, cols] tile?"""
    return isinstance(t, TileType) and len(t.shape) == 3


def _tile(value) -> TileType:
    """The tile type of a tile value (a statement on tiles reads and writes only those)."""
    if not isinstance(value.type, TileType):
        raise InternalError(f"FlattenBatchTiles: {value} is not a tile")
    return value.type


class FlattenBatchTiles(FunctionPass):
    name = "FlattenBatchTiles"
    produces = (IRProperty.TilesFlat,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        found = [*defs(fn.body).values(), *uses(fn.body).values()]
        if not any(batched(getattr(v, "type", None)) for v in found):
            return fn
        return _Flatten(NameSupply(fn)).mutate_function(fn)


class _Flatten(IRMutator):
    def __init__(self, names: NameSupply):
        self.names = names
        self.batch_names: dict[str, list[str]] = {}

    def batches(self, var: Var, stmt) -> list[Var]:
        """The [rows, cols] variables of a [B, rows, cols] tile variable's batches."""
        whole = _tile(var)
        t = slab(whole)
        if t is None:
            raise LoweringError(
                f"`{var.name}` is valid in {fmt_shape(whole.valid)} of "
                f"{fmt_shape(whole.shape)}: a [B, rows, cols] tile is valid in every batch",
                stmt.span, hint="give it valid_shape=[B, rows, cols]")
        names = self.batch_names.get(var.name)
        if names is None:
            names = [self.names.fresh(f"{var.name}_b{i}") for i in range(whole.shape[0])]
            self.batch_names[var.name] = names
        return [Var(n, t, var.span) for n in names]

    def mutate_ExprStmt(self, stmt: ExprStmt):
        if any(batched(getattr(a, "type", None)) for a in getattr(stmt.value, "args", ())):
            raise LoweringError("a [B, rows, cols] tile is used by a statement whose value is "
                                "not kept", stmt.span, hint="bind the result to a name")
        return stmt

    def mutate_Assign(self, stmt: Assign):
        value = stmt.value
        operands = value.args if isinstance(value, Call) else (value,)
        if not any(batched(getattr(v, "type", None)) for v in (*stmt.targets, *operands)):
            return stmt
        if isinstance(value, Var):  # `b = a`: a copy of every batch
            return [Assign((d,), s, stmt.span) for d, s in
                    zip(self.batches(stmt.targets[0], stmt), self.batches(value, stmt),
                        strict=True)]
        if not isinstance(value, Call):
            raise InternalError(f"FlattenBatchTiles: {stmt} binds a tile to no operator call")
        if value.op == "load":
            return self._load(stmt, value)
        if value.op == "store":
            return self._store(stmt, value)
        if value.op == "batch_matmul":
            return self._batch_matmul(stmt, value)
        return self._per_batch(stmt, value)

    def _load(self, stmt: Assign, call: Call) -> list:
        tensor, offsets = call.args
        b, r, c = offsets.items
        attrs = dict(call.attrs)
        out = []
        for i, dst in enumerate(self.batches(stmt.targets[0], stmt)):
            at = ExprList((index_add(b, Const(i, INDEX)), r, c))
            load = make_call("load", tensor, at, span=call.span,
                             **{**attrs, "shapes": _tile(dst).shape,
                                "valid_shape": _tile(dst).valid_shape})
            out.append(Assign((dst,), load, stmt.span))
        return out

    def _store(self, stmt: Assign, call: Call) -> list:
        tile, offsets, tensor = call.args
        b, r, c = offsets.items
        attrs = dict(call.attrs)
        if attrs.get("shapes") is not None:
            attrs["shapes"] = tuple(attrs["shapes"])[1:]
        out = []
        (target,) = stmt.targets
        for i, src in enumerate(self.batches(tile, stmt)):
            at = ExprList((index_add(b, Const(i, INDEX)), r, c))
            # Batch i writes into what batch i - 1 returned: the same tensor, updated.
            into = tensor if i == 0 else target
            out.append(Assign(stmt.targets, make_call("store", src, at, into, span=call.span,
                                                      **attrs), stmt.span))
        return out

    def _batch_matmul(self, stmt: Assign, call: Call) -> list:
        def batch(operand: Var, i: int) -> Var:
            if not batched(operand.type):
                return operand  # a [rows, cols] tile multiplies every batch
            slabs = self.batches(operand, stmt)
            return slabs[i if len(slabs) > 1 else 0]

        lhs, rhs = call.args
        return [Assign((dst,), make_call("matmul", batch(lhs, i), batch(rhs, i), span=call.span),
                       stmt.span)
                for i, dst in enumerate(self.batches(stmt.targets[0], stmt))]

    def _per_batch(self, stmt: Assign, call: Call) -> list:
        op = get_op(call.op)
        (target,) = stmt.targets
        tiles = [a for a in call.args if isinstance(getattr(a, "type", None), TileType)]
        counts = {_tile(t).shape[0] for t in (target, *tiles) if batched(t.type)}
        if not (batched(target.type) and all(batched(t.type) for t in tiles)
                and len(counts) == 1):
            raise self._refused(call, stmt)
        by_name = op.operands(call.args, dict(call.attrs))
        slabs = {a.name: self.batches(a, stmt) for a in tiles}
        out = []
        for i, dst in enumerate(self.batches(target, stmt)):
            operands = [slabs[a.name][i] if isinstance(a, Var) and a.name in slabs else a
                        for a in (by_name[n] for n in op.operand_names)]
            try:
                one = make_call(call.op, *operands, span=call.span, **dict(call.attrs))
            except TypeCheckError:
                raise self._refused(call, stmt) from None
            want = _tile(dst)
            if not isinstance(one.type, TileType) or (one.type.shape, one.type.dtype,
                                                      one.type.valid) != \
                    (want.shape, want.dtype, want.valid):
                raise self._refused(call, stmt)
            out.append(Assign((replace(dst, type=one.type),), one, stmt.span))
        return out

    @staticmethod
    def _refused(call: Call, stmt) -> LoweringError:
        shapes = ", ".join(fmt_shape(_tile(a).shape) for a in call.args
                           if isinstance(getattr(a, "type", None), TileType))
        result = fmt_shape(getattr(call.type, "shape", ()))
        return LoweringError(f"pl.{call.op} does not work batch by batch on these tiles "
                             f"({shapes or 'none'} -> {result})", stmt.span, hint=_HINT)
