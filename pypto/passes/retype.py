"""Rewrite variable types consistently at every definition and use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..ir.nodes import Assign, For, Var
from ..ir.types import Type
from ..ir.visitor import IRMutator


class VarRetyper(IRMutator):
    """Gives each definition the type `new_type(assign, var)` returns and makes every later
    use of the name agree with it (uses see the latest definition in program order)."""

    def __init__(self, new_type: Callable[[Assign, Var], Type]):
        self.new_type = new_type
        self.env: dict[str, Var] = {}

    def mutate_Assign(self, stmt: Assign):
        value = self.mutate_expr(stmt.value)
        targets = []
        for t in stmt.targets:
            var = replace(t, type=self.new_type(stmt, t))
            self.env[var.name] = var
            targets.append(var)
        return replace(stmt, value=value, targets=tuple(targets))

    def mutate_For(self, stmt: For):
        self.env[stmt.var.name] = stmt.var
        return super().mutate_For(stmt)

    def mutate_Var(self, expr: Var):
        bound = self.env.get(expr.name)
        if bound is None or bound.type == expr.type:
            return expr
        return replace(expr, type=bound.type)
