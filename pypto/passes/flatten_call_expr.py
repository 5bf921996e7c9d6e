"""FlattenCallExpr: name every nested operator call, so each statement does one thing.

`y = pl.add(pl.exp(x), 1.0)` becomes `exp_0 = pl.exp(x); y = pl.add(exp_0, 1.0)`.  Later
passes (tiling, cast legalisation, memory planning) then see one op per statement.
Scalar index arithmetic stays nested, but an element read (`pl.read`, `t[i, j]`) is
named too, wherever it appears (loop bounds included): it reads a buffer, so it is an
instruction of its own, placed where the value is needed.  A while loop's condition is
evaluated before every iteration, so its reads are named before the loop and again at
the end of its body.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.nodes import Assign, Call, ExprList, For, Var, While
from ..ir.types import FunctionType, ScalarType
from ..ir.visitor import IRMutator
from .manager import FunctionPass
from .names import NameSupply


class FlattenCallExpr(FunctionPass):
    name = "FlattenCallExpr"
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        return _Flattener(NameSupply(fn)).mutate_function(fn)


class _Flattener(IRMutator):
    def __init__(self, names: NameSupply):
        self.names = names
        self.pending: list = []

    def mutate_stmt(self, stmt):
        outer, self.pending = self.pending, []
        result = super().mutate_stmt(stmt)
        hoisted, self.pending = self.pending, outer
        return hoisted + [result]

    def mutate_Call(self, expr: Call):
        args = tuple(self._operand(a) for a in expr.args)
        return replace(expr, args=args)

    def mutate_For(self, stmt: For):
        # Bounds are evaluated once, before the loop: reads in them are named before it.
        bounds = {k: self._operand(getattr(stmt, k)) for k in ("start", "stop", "step")}
        return replace(stmt, **bounds, body=self.mutate_body(stmt.body))

    def mutate_While(self, stmt: While):
        # The condition is evaluated before every iteration: the reads in it are named
        # before the loop and again at the end of its body.
        cond = self._operand(stmt.cond)
        again = list(self.pending)
        return replace(stmt, cond=cond, body=self.mutate_body(stmt.body) + tuple(again))

    def _operand(self, arg):
        if isinstance(arg, ExprList):
            return replace(arg, items=tuple(self._operand(i) for i in arg.items))
        if isinstance(arg, Call) and (not isinstance(arg.type, ScalarType) or arg.op == "read"):
            inner = self.mutate_Call(arg)
            # Named after the operator, so messages about the value say what it is.
            var = Var(self.names.fresh(arg.op.split(".")[-1].rstrip("_")), inner.type, arg.span)
            self.pending.append(Assign((var,), inner, arg.span))
            return var
        if isinstance(arg, Call):
            return self.mutate_Call(arg)
        return arg
