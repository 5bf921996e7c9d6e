"""Control flow of kernel and orchestration bodies: loops, runtime `if`, and `pl.yield_`.

- `for i in pl.range(stop)` / `(start, stop)` / `(start, stop, step)`: a sequential loop,
  kept as a loop; `pl.parallel` the same with independent iterations; `pl.unroll`
  unrolled at compile time; `pl.pipeline(..., stage=F)` a loop whose body is replicated
  F times per iteration, with a loop for the remaining iterations.
- Carried values: rebinding a name in a loop carries it to the next iteration.  The
  explicit spelling `for i, (a, b) in pl.range(n, init_values=(a0, b0)):` binds the
  carries before the loop; the body ends with `x, y = pl.yield_(ea, eb)`, which passes
  ea, eb to the next iteration and binds x, y after the loop to the last values.
- `for (a, b) in pl.while_(init_values=(a0, b0)):` whose body starts with `pl.cond(c)`
  and ends with `x, y = pl.yield_(ea, eb)`: a `While` loop run while c holds, carrying a,
  b as above; Python's `while c:` (its printed form) is the same loop.
- `if cond:` on a runtime value is kept as a branch (a compile-time condition is folded).
  A branch binds names as any statement does; a name bound in both branches, or before
  the `if` and in one branch, is bound after it, with one type.  `x = pl.yield_(v)` in a
  branch is `x = v` (upstream's explicit phi).

Variables are names, not SSA values (docs/design-notes.md), so a carry is its name: the
loop reads and rebinds it.  `FunctionParser` mixes this class in; it relies on the
parser's `error`, `scalar`, `expr`, `body`, `vars`, `_rebind` and `_callable`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..ir.dtypes import DataType
from ..ir.errors import TypeCheckError
from ..ir.nodes import Assign, Const, For, If, Var, While
from ..ir.types import INDEX, ScalarType, describe, same_value_type
from .stubs import DslBuiltin

_LOOP_KINDS = {"range": "range", "unroll": "unroll", "parallel": "parallel",
               "pipeline": "range"}
_BOOL = ScalarType(DataType.BOOL)


@dataclass
class _YieldScope:
    """Where a `pl.yield_` sends its values: the branches of an `if`, or a loop's carries
    (`carries` None: a loop without init_values, where pl.yield_ has nowhere to go)."""

    kind: str  # "if" or "loop"
    carries: list[str] | None = None
    after: list[str] = field(default_factory=list)  # names the loop's yield binds after it
    in_place: dict[str, bool] = field(default_factory=dict)  # carries naming a kernel tensor


class ControlFlowSyntax:
    """`FunctionParser` mixin: loops, runtime `if`, `pl.yield_`."""

    def init_control_flow(self) -> None:
        self.yield_scopes: list[_YieldScope] = []

    # ------------------------------------------------------------------ loops
    def stmt_For(self, node: ast.For):
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported")
        call = node.iter
        fn = self._callable(call.func) if isinstance(call, ast.Call) else None
        if isinstance(fn, DslBuiltin) and fn.name == "spmd":
            return self.spmd_loop(node)
        if isinstance(fn, DslBuiltin) and fn.name == "while_":
            return self._while_(node, call)
        if isinstance(fn, DslBuiltin) and fn.name == "split_aiv":
            return self.split_aiv_region(node)
        if not (isinstance(fn, DslBuiltin) and fn.name in _LOOP_KINDS):
            raise self.error(node, "loop with `for i in pl.range(...)` (or pl.unroll / "
                             "pl.parallel / pl.pipeline)")
        options = self._loop_options(call, fn.name)
        name, carried = self._loop_target(node, "init_values" in options)
        start, stop, step = self._bounds(call)
        if fn.name == "unroll":
            if carried is not None:
                raise self.error(call, "pl.unroll carries no values: it has no init_values",
                                 hint="use pl.range, or rebind the names in the body")
            return self._unroll(node, name, start, stop, step)
        prologue = []
        if carried is not None:
            prologue = self._bind_init_values(options["init_values"], carried, node)
        span = self.source.span(node)
        scope = _YieldScope("loop", carried,
                            in_place={c: c in self.aliases for c in carried or ()})
        if fn.name == "pipeline":
            loops = self._pipeline(node, name, options.get("stage"), start, stop, step, scope)
        else:
            body = self._loop_body(node, Var(name, INDEX, span), node.body, scope,
                                   _runs(start, stop, step))
            loops = [For(Var(name, INDEX, span), start, stop, step, body,
                         _LOOP_KINDS[fn.name], span)]
        return prologue + loops + self._bind_after_loop(scope, node)

    def _loop_options(self, call: ast.Call, kind: str) -> dict[str, ast.expr]:
        """The keywords of `pl.<kind>(...)` (init_values=, and stage= of pl.pipeline), its
        one to three bounds checked for number."""
        allowed = {"init_values"} | ({"stage"} if kind == "pipeline" else set())
        options = {}
        for kw in call.keywords:
            if kw.arg not in allowed:
                raise self.error(call, f"pl.{kind}({kw.arg}=...) is not supported",
                                 hint=f"pl.{kind} accepts {', '.join(sorted(allowed))}")
            options[kw.arg] = kw.value
        if not 1 <= len(call.args) <= 3:
            raise self.error(call,
                             f"pl.{kind} takes (stop), (start, stop) or (start, stop, step)")
        return options

    def _loop_target(self, node: ast.For, has_init: bool) -> tuple[str, list[str] | None]:
        """The loop variable's name and, with init_values, the carried names."""
        target = node.target
        if isinstance(target, ast.Name):
            if has_init:
                raise self.error(node, "init_values needs the carried names in the loop "
                                 "target: `for i, (a, b) in pl.range(n, init_values=(a0, b0))`")
            return target.id, None
        if (isinstance(target, ast.Tuple) and len(target.elts) == 2
                and isinstance(target.elts[0], ast.Name)):
            names = target.elts[1]
            items = names.elts if isinstance(names, ast.Tuple) else [names]
            if all(isinstance(n, ast.Name) for n in items) and has_init:
                return target.elts[0].id, [n.id for n in items]
        raise self.error(node, "the loop variable must be a single name, or `i, (a, b)` with "
                         "init_values=(a0, b0)")

    def _bounds(self, call: ast.Call):
        bounds = [self.scalar(a) for a in call.args]
        for a, b in zip(call.args, bounds, strict=True):
            if b.type.dtype.is_float:
                raise self.error(a, f"the loop bound `{ast.unparse(a)}` is a "
                                 f"{b.type.dtype.name} scalar; loop bounds are integers",
                                 hint="bound loops by integer constants, index expressions or "
                                      "elements of integer tiles",
                                 cls=TypeCheckError)
        if len(bounds) == 1:
            bounds = [Const(0, INDEX), bounds[0]]
        if len(bounds) == 2:
            bounds.append(Const(1, INDEX))
        if isinstance(bounds[2], Const) and bounds[2].value <= 0:
            raise self.error(call, "the loop step must be positive")
        return bounds

    def _bind_init_values(self, node: ast.AST, carried: list[str], loop: ast.For) -> list:
        values = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        if len(values) != len(carried):
            raise self.error(node, f"init_values gives {len(values)} value(s) for "
                             f"{len(carried)} carried name(s)")
        exprs = [self.expr(v) for v in values]
        out = []
        for name, value, value_node in zip(carried, exprs, values, strict=True):
            if self._carries_in_place(value):
                # A kernel's tensor is written in place: the carry names the tensor itself.
                self._unalias(name)
                self.aliases[name] = value.name
                continue
            var = Var(name, value.type, self.source.span(value_node))
            self._rebind(var, loop)
            out.append(Assign((var,), value, var.span))
        return out

    def _carries_in_place(self, value) -> bool:
        """A tensor variable carried through a kernel's loop (`init_values=(out,)`): its
        stores write the tensor in place, so the carry and the result name it."""
        from ..ir.types import FunctionType, TensorType

        return (isinstance(value, Var) and isinstance(value.type, TensorType)
                and (self.func_type is FunctionType.InCore or self.in_scope))

    def _loop_body(self, node: ast.For, var: Var, stmts, scope: _YieldScope,
                   runs: bool = False) -> tuple:
        """The loop's body parsed with `var` bound; `runs`: the loop surely runs once."""
        self.check_not_constexpr(var.name, node)
        entry = dict(self.vars)
        self.vars[var.name] = var
        self.yield_scopes.append(scope)
        try:
            body = self.body(stmts)
        finally:
            self.yield_scopes.pop()
        self._loop_types(entry, body, var.name, runs)
        if var.name in entry:
            self.vars[var.name] = entry[var.name]
        return body

    def _bind_after_loop(self, scope: _YieldScope, node: ast.For) -> list:
        if scope.carries is None:
            return []
        if not scope.after:
            raise self.error(node, "a loop with init_values ends with "
                             "`x, ... = pl.yield_(...)`, which names its results")
        out = []
        for after, carry in zip(scope.after, scope.carries, strict=True):
            # a tensor carried in place: so is its result
            if scope.in_place.get(carry) and carry in self.aliases:
                self._unalias(after)
                self.aliases[after] = self.aliases[carry]
                continue
            value = self.vars[carry]
            var = Var(after, value.type, self.source.span(node))
            self._rebind(var, node)
            out.append(Assign((var,), Var(carry, value.type, var.span), var.span))
        return out

    def _unroll(self, node, name: str, start, stop, step):
        if not all(isinstance(b, Const) for b in (start, stop, step)):
            raise self.error(node, "pl.unroll needs compile-time bounds", hint="use pl.range")
        out = []
        self.check_not_constexpr(name, node)
        for k in range(start.value, stop.value, step.value):
            # Each iteration is a scope of its own: its pl.constexpr locals start afresh.
            self.namespace = self.namespace.new_child({name: k})
            saved = dict(self.constexpr_lines)
            try:
                out.extend(self.body(node.body))
            finally:
                self.namespace = self.namespace.parents
                self.constexpr_lines = saved
        return out

    def _pipeline(self, node: ast.For, name: str, stage_node, start, stop, step,
                  scope: _YieldScope) -> list:
        """`pl.pipeline(n, stage=F)`: a loop over groups of F iterations, each group the body
        replicated F times (iteration i + k * step in copy k), then a loop over the
        iterations that do not fill a group."""
        if stage_node is None:
            raise self.error(node.iter, "pl.pipeline needs stage=F (a positive integer, "
                             "typically 2 to 4)")
        stage = self.static(stage_node)
        if not isinstance(stage, int) or isinstance(stage, bool) or stage < 1:
            raise self.error(node.iter, f"pl.pipeline's stage must be a positive integer, got "
                             f"{stage!r}")
        span = self.source.span(node)
        op = self.index_op
        stride = op("mul", step, Const(stage, INDEX), node)
        trips = op("floordiv", op("add", op("sub", stop, start, node),
                                  op("sub", step, Const(1, INDEX), node), node), step, node)
        full_end = op("add", start, op("mul", op("floordiv", trips, Const(stage, INDEX), node),
                                       stride, node), node)
        group = Var(f"{name}_stage", INDEX, span)
        copies = []
        for k in range(stage):
            self.vars[group.name] = group
            at = op("add", group, op("mul", Const(k, INDEX), step, node), node)
            copies.append(Assign((Var(name, INDEX, span),), at, span))
            self.vars[name] = Var(name, INDEX, span)
            scope.after = []  # every copy ends with the same pl.yield_
            copies.extend(self._loop_body(node, group, node.body, scope))
        self.vars.pop(group.name, None)
        main = For(group, start, full_end, stride, tuple(copies), "range", span)
        scope.after = []
        tail_body = self._loop_body(node, Var(name, INDEX, span), node.body, scope)
        return [main, For(Var(name, INDEX, span), full_end, stop, step, tail_body, "range",
                          span)]

    # ------------------------------------------------------------------ while
    def _while_(self, node: ast.For, call: ast.Call) -> list:
        """`for (x, ...) in pl.while_(init_values=(x0, ...)):` whose body starts with
        `pl.cond(c)` and ends with `r, ... = pl.yield_(...)`: x, ... bound to x0, ...; the
        body runs while c holds (tested before each iteration); r, ... are bound after
        the loop to the last values (the init values when it never ran)."""
        if call.args or any(kw.arg != "init_values" for kw in call.keywords):
            raise self.error(call, "pl.while_ takes only init_values=(...)",
                             hint="the condition is `pl.cond(...)`, the body's first statement")
        init = next((kw.value for kw in call.keywords), None)
        if init is None:
            raise self.error(call, "while_() requires init_values to be specified",
                             hint="add init_values=(...), even if it is a single counter: "
                                  "`for (x,) in pl.while_(init_values=(0,)):`")
        target = node.target
        items = target.elts if isinstance(target, ast.Tuple) else [target]
        if not items or not all(isinstance(n, ast.Name) for n in items):
            raise self.error(node, "pl.while_'s loop target names its carried values: "
                             "`for (x, y) in pl.while_(init_values=(x0, y0)):`")
        first = node.body[0]
        if not self._is_builtin_call(first, "cond"):
            raise self.error(first, "a pl.while_ body starts with `pl.cond(...)`, its "
                             "condition", hint="move the pl.cond(...) to the body's first line")
        carried = [n.id for n in items]
        prologue = self._bind_init_values(init, carried, node)
        scope = _YieldScope("loop", carried,
                            in_place={c: c in self.aliases for c in carried})
        loop = self._while_loop(node, first.value, node.body[1:], scope)
        return prologue + [loop] + self._bind_after_loop(scope, node)

    def stmt_While(self, node: ast.While) -> While:
        """Python's `while c:`, the form `as_python` prints a pl.while_ loop in: names the
        body rebinds carry to the next iteration and the condition, as in any loop."""
        if node.orelse:
            raise self.error(node, "`while ... else` is not supported")
        return self._while_loop(node, None, node.body, _YieldScope("loop"))

    def _while_loop(self, node, cond_call: ast.Call | None, stmts, scope) -> While:
        """The While of `node`: its condition (`pl.cond`'s argument, else `while`'s test),
        parsed on the values entering the loop, and its body."""
        if cond_call is not None and (cond_call.keywords or len(cond_call.args) != 1):
            raise self.error(cond_call, "pl.cond takes one condition: `pl.cond(x < n)`")
        test = node.test if cond_call is None else cond_call.args[0]
        if self.is_static(test):
            raise self.error(test, f"the loop condition `{ast.unparse(test)}` is known at "
                             "compile time", hint="test a value the loop carries",
                             cls=TypeCheckError)
        value = self.expr(test)
        if not isinstance(value.type, ScalarType):
            raise self.error(test, f"the loop condition `{ast.unparse(test)}` is "
                             f"{describe(value.type)}; a while loop tests a scalar",
                             hint="compare scalars the loop carries, e.g. an element read with "
                                  "pl.read(t, [i, j])", cls=TypeCheckError)
        cond = self._truth(value, test)
        entry = dict(self.vars)
        self.yield_scopes.append(scope)
        try:
            body = self.body(stmts)
        finally:
            self.yield_scopes.pop()
        loop = While(cond, body, self.source.span(node))
        self._loop_types(entry, (loop,), "", False)
        return loop

    # ------------------------------------------------------------------ if
    def stmt_If(self, node: ast.If):
        if self.is_static(node.test):
            return list(self.body(node.body if self.static(node.test) else node.orelse))
        cond = self.condition(node.test)
        before = dict(self.vars)
        branches = []
        for stmts in (node.body, node.orelse):
            self.vars = dict(before)
            self.yield_scopes.append(_YieldScope("if"))
            try:
                branches.append((self.body(stmts), self.vars))
            finally:
                self.yield_scopes.pop()
        (then_body, then_vars), (else_body, else_vars) = branches
        self.vars = self._merge(before, then_vars, else_vars, node)
        return If(cond, then_body, else_body, self.source.span(node))

    def _merge(self, before: dict, then_vars: dict, else_vars: dict, node) -> dict:
        """The names bound after an `if`: bound on both paths, with one type."""
        merged = dict(before)
        for name in set(then_vars) | set(else_vars):
            a, b = then_vars.get(name), else_vars.get(name)
            if a is None or b is None:  # bound in one branch: also needs a binding before
                bound = a or b
                if name not in before:
                    merged.pop(name, None)
                    continue
                a, b = bound, before[name]
            if not same_value_type(a.type, b.type):
                raise self.error(node, f"`{name}` has different types after the two branches "
                                 "of this `if`", hint="use a new name in one branch",
                                 cls=TypeCheckError)
            merged[name] = a
        return merged

    def condition(self, node: ast.AST):
        """A runtime condition: a BOOL scalar, or an integer scalar tested against 0."""
        return self._truth(self.scalar(node), node)

    def _truth(self, cond, node: ast.AST):
        """The scalar `cond` (parsed from `node`) as a BOOL condition."""
        if cond.type == _BOOL:
            return cond
        if cond.type.dtype.is_float:
            raise self.error(node, f"`{ast.unparse(node)}` is a {cond.type.dtype.name} scalar; "
                             "write a comparison as the condition", cls=TypeCheckError)
        return self._call_op("cmp", [cond, Const(0, INDEX)], {"cmp_type": 1}, node)

    # ------------------------------------------------------------------ pl.yield_
    def yield_assign(self, target: ast.AST, call: ast.Call, node, annotation=None) -> list:
        """`x, ... = pl.yield_(v, ...)`: in an `if` branch, `x = v`; ending a loop with
        init_values, the carries take the values and x, ... are bound after the loop."""
        if call.keywords:
            raise self.error(call, "pl.yield_ takes its values positionally")
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if not all(isinstance(n, ast.Name) for n in names):
            raise self.error(node, "pl.yield_ binds names: `x, y = pl.yield_(a, b)`")
        if len(names) != len(call.args):
            raise self.error(node, f"pl.yield_ gives {len(call.args)} value(s) to "
                             f"{len(names)} name(s)")
        scope = self.yield_scopes[-1] if self.yield_scopes else None
        if scope is None or (scope.kind == "loop" and scope.carries is None):
            raise self.error(call, "pl.yield_ ends an `if` branch or a loop with init_values",
                             hint="outside those, bind the value with a plain assignment")
        values = [self.expr(a) for a in call.args]
        if scope.kind == "if":
            return [self._bind(n, v, node, annotation) for n, v in zip(names, values, strict=True)]
        if len(values) != len(scope.carries):
            raise self.error(call, f"the loop carries {len(scope.carries)} value(s); "
                             f"pl.yield_ gives {len(values)}")
        if scope.after:
            raise self.error(call, "a loop's pl.yield_ comes once, last in its body")
        scope.after = [n.id for n in names]
        return self._yield_carries(scope, values, call, node)

    def _yield_carries(self, scope, values: list, call: ast.Call, node) -> list:
        """The assignments that give a loop's carries the values its pl.yield_ passes."""
        out = []
        # Values read after a carry is rebound see the new value: go through temporaries.
        reads = [set(_names(v)) for v in values]
        for i, (carry, value) in enumerate(zip(scope.carries, values, strict=True)):
            if any(carry in r for r in reads[i + 1:]):
                raise self.error(call, f"pl.yield_ reads `{carry}` after passing it a new "
                                 "value", hint="bind the yielded values to new names first")
            if carry in self.aliases and scope.in_place.get(carry):
                if not (isinstance(value, Var) and value.name == self.aliases[carry]):
                    raise self.error(call, f"`{carry}` carries tensor `{self.aliases[carry]}`, "
                                     "which the kernel writes in place; pl.yield_ gives "
                                     f"`{ast.unparse(call.args[i])}`",
                                     hint=f"yield the result of the pl.store into `{carry}`")
                continue
            var = Var(carry, value.type, self.source.span(node))
            self._rebind(var, node)
            out.append(Assign((var,), value, var.span))
        return out


def _runs(start, stop, step) -> bool:
    """Does a loop with these bounds surely run at least once?"""
    bounds = [b.value for b in (start, stop, step) if isinstance(b, Const)]
    return len(bounds) == 3 and len(range(*bounds)) > 0


def _names(expr) -> list[str]:
    from ..ir.visitor import uses

    return list(uses(expr))


__all__ = ["ControlFlowSyntax"]
