"""One generic traversal of the IR.  Passes override only the node kinds they change.

`IRVisitor` walks; its `visit_<Kind>` methods may also return a value, which
`visit_stmt` / `visit_expr` pass back, so a code generator builds its model through the
same dispatch (`[self.visit_stmt(s) for s in body]`).  `IRMutator` rebuilds.  Passes,
checks and code generators traverse the IR through these two and the helpers below
(`statements`, `uses`, `defs`, `exposed_uses`), never by hand: a hand-written walk is
where a statement nested one level deeper than its author thought gets missed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .errors import InternalError
from .nodes import (
    Assign,
    AtScope,
    Call,
    Const,
    ExprList,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Return,
    RuntimeScope,
    Var,
    While,
)


class IRVisitor:
    """Walks statements and expressions in program order without rebuilding them."""

    def visit_function(self, fn: Function) -> None:
        self.visit_body(fn.body)

    def visit_body(self, body) -> None:
        for stmt in body:
            self.visit_stmt(stmt)

    def visit_stmt(self, stmt) -> Any:
        """Dispatches to `visit_<Kind>` and returns what it returns."""
        return _method(self, "visit_", stmt)(stmt)

    def visit_expr(self, expr) -> Any:
        """Dispatches to `visit_<Kind>` and returns what it returns."""
        return _method(self, "visit_", expr)(expr)

    def visit_Assign(self, stmt: Assign) -> Any:
        self.visit_expr(stmt.value)
        for target in stmt.targets:
            self.visit_def(target)

    def visit_ExprStmt(self, stmt: ExprStmt) -> Any:
        self.visit_expr(stmt.value)

    def visit_For(self, stmt: For) -> Any:
        for e in (stmt.start, stmt.stop, stmt.step):
            self.visit_expr(e)
        self.visit_def(stmt.var)
        self.visit_body(stmt.body)

    def visit_While(self, stmt: While) -> Any:
        self.visit_expr(stmt.cond)
        self.visit_body(stmt.body)

    def visit_If(self, stmt: If) -> Any:
        self.visit_expr(stmt.cond)
        self.visit_body(stmt.then_body)
        self.visit_body(stmt.else_body)

    def visit_RuntimeScope(self, stmt: RuntimeScope) -> Any:
        self.visit_body(stmt.body)

    def visit_AtScope(self, stmt: AtScope) -> Any:
        if stmt.blocks is not None:
            self.visit_expr(stmt.blocks)
        for e in stmt.deps + stmt.no_dep_args + stmt.dumps:
            self.visit_expr(e)
        self.visit_body(stmt.body)
        if stmt.task is not None:
            self.visit_def(stmt.task)

    def visit_Return(self, stmt: Return) -> Any:
        for v in stmt.values:
            self.visit_expr(v)

    def visit_def(self, var: Var) -> None:
        """A variable being (re)bound."""

    def visit_Var(self, expr: Var) -> Any:
        """A variable being read."""

    def visit_Const(self, expr: Const) -> Any:
        pass

    def visit_ExprList(self, expr: ExprList) -> Any:
        for item in expr.items:
            self.visit_expr(item)

    def visit_Call(self, expr: Call) -> Any:
        for arg in expr.args:
            self.visit_expr(arg)
        for item in _attr_exprs(expr):
            self.visit_expr(item)

    def visit_FuncCall(self, expr: FuncCall) -> Any:
        for arg in expr.args:
            self.visit_expr(arg)
        if expr.blocks is not None:
            self.visit_expr(expr.blocks)
        for e in expr.deps + expr.no_dep_args + expr.dumps:
            self.visit_expr(e)


class IRMutator:
    """Rebuilds the IR bottom-up; a `mutate_*` method may return a new node.

    `mutate_stmt` may return a list of statements to splice several in place of one.
    """

    def mutate_function(self, fn: Function) -> Function:
        return replace(fn, body=self.mutate_body(fn.body))

    def mutate_body(self, body) -> tuple:
        out: list = []
        for stmt in body:
            result = self.mutate_stmt(stmt)
            if isinstance(result, (list, tuple)):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return tuple(out)

    def mutate_stmt(self, stmt):
        return _method(self, "mutate_", stmt)(stmt)

    def mutate_expr(self, expr):
        return _method(self, "mutate_", expr)(expr)

    def mutate_Assign(self, stmt: Assign):
        value = self.mutate_expr(stmt.value)
        targets = tuple(self.mutate_def(t) for t in stmt.targets)
        return replace(stmt, value=value, targets=targets)

    def mutate_ExprStmt(self, stmt: ExprStmt):
        return replace(stmt, value=self.mutate_expr(stmt.value))

    def mutate_For(self, stmt: For):
        return replace(
            stmt,
            var=self.mutate_def(stmt.var),
            start=self.mutate_expr(stmt.start),
            stop=self.mutate_expr(stmt.stop),
            step=self.mutate_expr(stmt.step),
            body=self.mutate_body(stmt.body),
        )

    def mutate_While(self, stmt: While):
        return replace(stmt, cond=self.mutate_expr(stmt.cond), body=self.mutate_body(stmt.body))

    def mutate_If(self, stmt: If):
        return replace(stmt, cond=self.mutate_expr(stmt.cond),
                       then_body=self.mutate_body(stmt.then_body),
                       else_body=self.mutate_body(stmt.else_body))

    def mutate_RuntimeScope(self, stmt: RuntimeScope):
        return replace(stmt, body=self.mutate_body(stmt.body))

    def mutate_AtScope(self, stmt: AtScope):
        return replace(
            stmt,
            blocks=self.mutate_expr(stmt.blocks) if stmt.blocks is not None else None,
            deps=tuple(self.mutate_expr(e) for e in stmt.deps),
            no_dep_args=tuple(self.mutate_expr(e) for e in stmt.no_dep_args),
            dumps=tuple(self.mutate_expr(e) for e in stmt.dumps),
            body=self.mutate_body(stmt.body),
            task=self.mutate_def(stmt.task) if stmt.task is not None else None,
        )

    def mutate_Return(self, stmt: Return):
        return replace(stmt, values=tuple(self.mutate_expr(v) for v in stmt.values))

    def mutate_def(self, var: Var) -> Var:
        return var

    def mutate_Var(self, expr: Var):
        return expr

    def mutate_Const(self, expr: Const):
        return expr

    def mutate_ExprList(self, expr: ExprList):
        return replace(expr, items=tuple(self.mutate_expr(i) for i in expr.items))

    def mutate_Call(self, expr: Call):
        expr = replace(expr, args=tuple(self.mutate_expr(a) for a in expr.args))
        if not _attr_exprs(expr):
            return expr
        attrs = tuple((k, tuple(self.mutate_expr(i) if isinstance(i, _EXPRS) else i for i in v)
                       if isinstance(v, tuple) else v) for k, v in expr.attrs)
        return replace(expr, attrs=attrs)

    def mutate_FuncCall(self, expr: FuncCall):
        return replace(
            expr,
            args=tuple(self.mutate_expr(a) for a in expr.args),
            blocks=self.mutate_expr(expr.blocks) if expr.blocks is not None else None,
            deps=tuple(self.mutate_expr(e) for e in expr.deps),
            no_dep_args=tuple(self.mutate_expr(e) for e in expr.no_dep_args),
            dumps=tuple(self.mutate_expr(e) for e in expr.dumps),
        )


_EXPRS = (Var, Const, Call)


def _method(walker, prefix: str, node):
    """`walker`'s method for `node`'s kind; a node that is not IR is a compiler bug."""
    method = getattr(walker, prefix + type(node).__name__, None)
    if method is None:
        raise InternalError(f"{type(walker).__name__}: not an IR node: {node!r}")
    return method


def _attr_exprs(call: Call) -> list:
    """Index expressions inside a call's attributes: the runtime extents of a
    `valid_shape=[16, n]`."""
    return [i for _, v in call.attrs if isinstance(v, tuple) for i in v if isinstance(i, _EXPRS)]


class VarUses(IRVisitor):
    """Collects the names a subtree reads, in first-use order."""

    def __init__(self):
        self.names: dict[str, Var] = {}

    def visit_Var(self, expr: Var) -> None:
        self.names.setdefault(expr.name, expr)


class VarDefs(IRVisitor):
    """Collects the names a subtree binds, in first-definition order."""

    def __init__(self):
        self.names: dict[str, Var] = {}

    def visit_def(self, var: Var) -> None:
        self.names.setdefault(var.name, var)


class _Statements(IRVisitor):
    def __init__(self):
        self.found: list = []

    def visit_stmt(self, stmt) -> None:
        self.found.append(stmt)
        super().visit_stmt(stmt)


def statements(node) -> list:
    """Every statement of a statement list or statement, nested ones included (loop,
    branch and `pl.at` bodies at any depth), in program order: a compound statement
    before the statements of its body."""
    v = _Statements()
    _walk(v, node)
    return v.found


def uses(node) -> dict[str, Var]:
    """Names read by a statement list, statement or expression."""
    v = VarUses()
    _walk(v, node)
    return v.names


def defs(node) -> dict[str, Var]:
    """Names bound by a statement list or statement."""
    v = VarDefs()
    _walk(v, node)
    return v.names


class _ExposedUses(IRVisitor):
    """Names read before they are bound, in program order."""

    def __init__(self):
        self.defined: set[str] = set()
        self.exposed: set[str] = set()

    def visit_Var(self, expr: Var) -> None:
        if expr.name not in self.defined:
            self.exposed.add(expr.name)

    def visit_def(self, var: Var) -> None:
        self.defined.add(var.name)

    def visit_For(self, stmt: For) -> None:
        outside = set(self.defined)
        super().visit_For(stmt)
        self.defined = outside  # a loop may run zero times: its bindings are not certain

    def visit_While(self, stmt: While) -> None:
        outside = set(self.defined)
        super().visit_While(stmt)
        self.defined = outside  # as a loop's: the body may not run

    def visit_If(self, stmt: If) -> None:
        self.visit_expr(stmt.cond)
        outside = set(self.defined)
        bound = []
        for branch in (stmt.then_body, stmt.else_body):
            self.defined = set(outside)
            self.visit_body(branch)
            bound.append(self.defined)
        self.defined = bound[0] & bound[1]  # bound after the `if` on either path


def exposed_uses(stmts) -> set[str]:
    """Names a statement list reads before it binds them (its upward-exposed uses)."""
    v = _ExposedUses()
    v.visit_body(stmts)
    return v.exposed


def _walk(visitor: IRVisitor, node) -> None:
    if isinstance(node, (list, tuple)):
        visitor.visit_body(node)
    elif isinstance(node, (Assign, ExprStmt, For, While, If, AtScope, RuntimeScope, Return)):
        visitor.visit_stmt(node)
    else:
        visitor.visit_expr(node)


__all__ = ["IRVisitor", "IRMutator", "statements", "uses", "defs", "exposed_uses", "Const"]
