"""Calls of `@pl.jit.inline` and `@pl.jit.opaque` functions: their bodies spliced in.

`out = helper(a, out)` where `helper` is `@pl.jit.inline` (or `@pl.jit.opaque`, a building
block that takes its plane from where it is used) is parsed as the helper's body in the
caller's place: its parameters stand for the arguments, its other names get a suffix
(`tile_a__helper_0`) so they cannot meet the caller's, its `pl.at` blocks become the
caller's blocks, and the names the call binds take the values the helper returns.  The
IR then holds no call: a spliced body means what the call meant, and the caller's
passes see all of it.

`FunctionParser` mixes this class in; it relies on the parser's `error`, `expr`, `vars`,
`aliases`, `_rebind`, `_callable`, `func_type`, `in_scope`, `resolve_callee` and
`signature`, and parses a callee with a parser of its own class (`type(self)`).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ..ir.errors import ParseError
from ..ir.nodes import Assign, Return, Var
from ..ir.types import FunctionType
from ..ir.visitor import IRMutator, defs, uses

SPLICED = (FunctionType.Inline, FunctionType.Opaque)


class _Renamed(IRMutator):
    """The helper's names in the caller: parameters as the arguments, locals suffixed."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def _rename(self, var: Var) -> Var:
        return replace(var, name=self.names.get(var.name, var.name))

    def mutate_Var(self, expr: Var):
        return self._rename(expr)

    def mutate_def(self, var: Var) -> Var:
        return self._rename(var)


class InlineSyntax:
    """`FunctionParser` mixin: splices calls of `@pl.jit.inline` / `.opaque` functions."""

    inlined = 0  # calls spliced so far: the suffix of the next one's names

    def spliced_callee(self, call: ast.AST):
        """The `@pl.jit.inline` / `.opaque` function `call` calls, else None."""
        if not isinstance(call, ast.Call):
            return None
        fn = self._callable(call.func)
        return fn if getattr(fn, "func_type", None) in SPLICED else None

    def inline_call(self, callee, call: ast.Call, target, node) -> list:
        """The statements of `target = callee(*args)` with the callee's body spliced in."""
        if call.keywords:
            raise self.error(call, f"pass `{callee.__name__}`'s arguments positionally")
        args = [self.expr(a) for a in call.args]
        fndef, info = callee._parsed_source()
        parser = type(self)(info, callee._namespace(), self.func_type, self.resolve_callee)
        parser.in_scope = self.in_scope
        sig = parser.signature(fndef, [a.type for a in args], skip_self=False)
        body = parser.parse(fndef, sig).body
        returned = [s for s in body if isinstance(s, Return)]
        if returned and body[-1] is not returned[-1] or len(returned) > 1:
            raise ParseError(f"`{callee.__name__}` is spliced into its callers: it may return "
                             "only at its end", returned[0].span)
        body = [s for s in body if not isinstance(s, Return)]
        suffix = f"__{callee.__name__}_{InlineSyntax.inlined}"
        InlineSyntax.inlined += 1
        params = [p.var.name for p in sig.params]
        names = {n: n + suffix for n in set(defs(body)) | set(uses(body)) if n not in params}
        prologue = []
        for name, arg in zip(params, args, strict=True):
            if isinstance(arg, Var):
                names[name] = arg.name
            else:  # a constant or an expression: bound once, under the helper's name
                local = Var(name + suffix, arg.type, arg.span)
                names[name] = local.name
                prologue.append(Assign((local,), arg, arg.span))
        rename = _Renamed(names)
        spliced = prologue + list(rename.mutate_body(tuple(body)))
        values = [rename.mutate_expr(v) for v in returned[0].values] if returned else []
        self.vars.update(defs(spliced))  # the arguments the body rebinds, and its locals
        return spliced + self._bind_results(target, values, callee, node)

    def _bind_results(self, target, values: list, callee, node) -> list:
        """`target` takes the returned values: a name already holding the value is left
        as it is, a tensor under another name is named by it (as a store result is)."""
        if target is None:
            return []
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(n, ast.Name) for n in names) or len(names) != len(values):
            raise self.error(node, f"`{callee.__name__}` returns {len(values)} value(s); bind "
                             f"them to as many names")
        out = []
        for name, value in zip(names, values, strict=True):
            if isinstance(value, Var) and value.name == name.id:
                self.vars[name.id] = value
                continue
            if isinstance(value, Var) and value.name in self.vars:
                self.aliases[name.id] = value.name  # the helper's tensor, named by the caller
                continue
            var = Var(name.id, value.type, self.source.span(node))
            self._rebind(var, node)
            out.append(Assign((var,), value, var.span))
        return out


__all__ = ["InlineSyntax", "SPLICED"]
