"""Python AST → IR.  Decorated bodies are parsed, never executed.

Every error names the user's file and line.  Names from the enclosing Python scope
are folded at parse time: numbers become constants, dtypes and enums become
attributes, `@pl.jit.incore` functions become callees.
"""

from __future__ import annotations

import ast
import builtins
import math
from collections import ChainMap
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..ir.dtypes import DataType
from ..ir.errors import ParseError, PyptoError, Span, TypeCheckError, syntax_error_line
from ..ir.nodes import (
    Assign,
    Call,
    Const,
    ExprList,
    ExprStmt,
    For,
    FuncCall,
    Function,
    Param,
    Program,
    Return,
    Var,
)
from ..ir.ops import REQUIRED, OpDef, get_op
from ..ir.types import (
    INDEX,
    Direction,
    FunctionType,
    ScalarType,
    TaskIdType,
    TensorType,
    TileType,
    TupleType,
    describe,
    same_value_type,
)
from ..ir.visitor import exposed_uses
from .compile_time import TYPE_ATTRIBUTES, CompileTimeSyntax
from .tasks import TaskSyntax
from .typing import DirectedType, DynamicDim, Tensor, TensorSpec

_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
}
_FOLD = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
}
_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
MAX_EXPRESSION_DEPTH = 100
"""How deeply one statement's expression may nest (a chain `a + b + ...` nests one level
per operator): the parser and every pass walk expressions recursively."""
# Categories of operators that may appear in an orchestration body outside `pl.at`.
_ORCHESTRATION_OK = {"index", "orchestration"}
_LOOP_KINDS = {"range": "range", "unroll": "unroll", "parallel": "parallel"}


@dataclass(frozen=True)
class OpStub:
    """`pl.add` and friends: names the parser recognises; calling one from Python is an error."""

    name: str

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"pl.{self.name} can only be used inside a @pl.jit / @pl.jit.incore function or a "
            "@pl.program: those bodies are compiled, not executed as Python"
        )


@dataclass(frozen=True)
class DslBuiltin:
    """`pl.at`, `pl.range`, `pl.const`, ...: parser-level constructs."""

    name: str

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"pl.{self.name} is only meaningful inside a pypto kernel body")


@dataclass
class Callee:
    """What a call site needs to know about a function of the program."""

    name: str
    params: tuple[Param, ...]
    returns: tuple


@dataclass
class SourceInfo:
    """Where the text being parsed came from."""

    file: str
    line_offset: int = 0  # added to AST line numbers
    col_offset: int = 0

    def span(self, node: ast.AST) -> Span:
        return Span(self.file, getattr(node, "lineno", 1) + self.line_offset,
                    getattr(node, "col_offset", 0) + self.col_offset)


@dataclass
class FunctionSignature:
    name: str
    params: tuple[Param, ...]
    returns: tuple | None  # None: taken from the return statement
    # parameter -> {dimension: pl.dynamic name}: sizes the body may not read
    dynamic: dict[str, dict[int, str]] = field(default_factory=dict)


class FunctionParser(TaskSyntax, CompileTimeSyntax):
    """Parses one function body in the context of its program."""

    def __init__(
        self,
        source: SourceInfo,
        namespace: ChainMap,
        func_type: FunctionType,
        resolve_callee: Callable[[Any, list, Span], Callee],
    ):
        self.source = source
        # The body's own layer: `pl.constexpr` locals, never the caller's dicts.
        self.namespace = namespace.new_child()
        self.func_type = func_type
        self.resolve_callee = resolve_callee
        self.vars: dict[str, Var] = {}
        # Names a loop that may not run gave a new type: (type before, type in the loop).
        self.retyped: dict[str, tuple[Var, Var]] = {}
        self.tensor_params: set[str] = set()
        self.in_scope = False
        self.init_compile_time({})

    # ------------------------------------------------------------------ errors and statics
    def error(self, node, message, hint=None, cls=ParseError):
        return cls(message, self.source.span(node), hint)

    def static(self, node: ast.AST) -> Any:
        """Evaluate an expression that must be known at compile time."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                raise self.error(node, f"`{node.id}` is a runtime value; a constant is needed here")
            try:
                return self.namespace[node.id]
            except KeyError:
                raise self.error(
                    node, f"name `{node.id}` is not defined",
                    hint="define it before the kernel, or pass it as an argument",
                ) from None
        if isinstance(node, ast.Attribute):
            if self.is_type_attribute(node):
                return self.known(node, self.type_attribute(node))
            base = self.static(node.value)
            try:
                return getattr(base, node.attr)
            except AttributeError:
                raise self.error(node, f"`{ast.unparse(node)}` does not exist") from None
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.static(e) for e in node.elts]
        if isinstance(node, ast.Slice):  # `x.shape[1:]`
            return slice(*(None if e is None else self.static(e)
                           for e in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.static(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _FOLD[_BINOPS[type(node.op)]](self.static(node.left), self.static(node.right))
        if isinstance(node, ast.Subscript):
            # `x.shape[1]` is known even where another dimension of x is not.
            base = (self.type_attribute(node.value) if self.is_type_attribute(node.value)
                    else self.static(node.value))
            index = self.static(node.slice)
            try:
                return self.known(node, base[tuple(index) if isinstance(index, list) else index])
            except PyptoError as exc:
                # Re-anchor at the node being parsed: the error's own frame is ours.
                raise self.error(node, exc.message, exc.hint, cls=type(exc)) from None
            except Exception as exc:
                raise self.error(node, f"invalid annotation `{ast.unparse(node)}`: {exc}") from None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return _COMPARE[type(node.ops[0])](self.static(node.left),
                                               self.static(node.comparators[0]))
        if isinstance(node, ast.BoolOp):
            values = [self.static(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.static(node.operand)
        if isinstance(node, ast.Call):
            fn = self.static(node.func)
            args = [self.static(a) for a in node.args]
            kwargs = {k.arg: self.static(k.value) for k in node.keywords}
            if isinstance(fn, (OpStub, DslBuiltin)):
                raise self.error(node, f"`{ast.unparse(node)}` is not a compile-time constant")
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                raise self.error(node, f"cannot evaluate `{ast.unparse(node)}`: {exc}") from None
        raise self.error(node, f"`{ast.unparse(node)}` must be a compile-time constant")

    def is_static(self, node: ast.AST) -> bool:
        """Whether `node` reads no runtime value: the shape and dtype of one are static."""
        if isinstance(node, ast.Attribute) and node.attr in TYPE_ATTRIBUTES:
            return True
        if isinstance(node, ast.Name):
            return node.id not in self.vars
        return all(self.is_static(child) for child in ast.iter_child_nodes(node))

    # ------------------------------------------------------------------ functions
    def parse(self, fndef: ast.FunctionDef, sig: FunctionSignature) -> Function:
        for p in sig.params:
            self.vars[p.var.name] = p.var
        self.tensor_params = {p.var.name for p in sig.params if isinstance(p.var.type, TensorType)}
        self.init_compile_time(sig.dynamic)
        body = self.body(fndef.body)
        returns = sig.returns
        ret_stmts = [s for s in body if isinstance(s, Return)]
        if self.func_type is FunctionType.InCore and ret_stmts:
            for value in ret_stmts[-1].values:
                if not isinstance(value.type, TensorType):
                    raise TypeCheckError(
                        f"an InCore kernel returns the tensors it stores into; this returns "
                        f"{describe(value.type)}", ret_stmts[-1].span,
                        hint="pl.store the tile into a pl.Out tensor parameter and return that")
        if returns is None:
            returns = tuple(v.type for v in ret_stmts[-1].values) if ret_stmts else ()
        elif ret_stmts:
            got = tuple(v.type for v in ret_stmts[-1].values)
            if len(got) != len(returns) or not all(map(same_value_type, got, returns)):
                raise self.error(fndef,
                                 f"`{sig.name}` returns values that differ from its annotation",
                                 cls=TypeCheckError)
        return Function(sig.name, sig.params, tuple(returns), body, self.func_type,
                        self.source.span(fndef))

    def body(self, stmts) -> tuple:
        out: list = []
        for i, stmt in enumerate(stmts):
            if (i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                continue  # docstring
            result = self.stmt(stmt)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return tuple(out)

    # ------------------------------------------------------------------ statements
    def stmt(self, node: ast.stmt):
        if _nesting(node) > MAX_EXPRESSION_DEPTH:
            raise self.error(node, f"this statement nests expressions more than "
                             f"{MAX_EXPRESSION_DEPTH} levels deep",
                             hint="split it: name intermediate results in statements of their "
                                  "own (`s = a + b` then `s + c`)")
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"`{type(node).__name__}` statements are not supported in a "
                             "pypto kernel body")
        return method(node)

    def stmt_Pass(self, node):
        return None

    def stmt_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Call):
            fn = self._callable(node.value.func)
            if isinstance(fn, DslBuiltin) and fn.name == "static_assert":
                return self._static_assert(node.value)
            if isinstance(fn, OpStub) and fn.name == "dump_tag":
                return self.dump_tag_stmt(node)
        value = self.expr(node.value)
        return ExprStmt(value, self.source.span(node))

    def _static_assert(self, call: ast.Call):
        cond = self.static(call.args[0])
        if not cond:
            msg = self.static(call.args[1]) if len(call.args) > 1 else "static assertion failed"
            raise self.error(call, f"pl.static_assert failed: {msg}")
        return None

    def stmt_Assign(self, node: ast.Assign):
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment `a = b = ...` is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self._assign_subscript(target, node.value, node)
        value = self.expr(node.value)
        return self._bind(target, value, node, annotation=None)

    def stmt_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            raise self.error(node, "a declaration needs a value: `x: T = ...`")
        annotation = self.static(node.annotation)
        if isinstance(annotation, DslBuiltin) and annotation.name == "constexpr":
            return self.bind_constexpr(node)
        value = self.expr(node.value)
        return self._bind(node.target, value, node, annotation)

    def stmt_AugAssign(self, node: ast.AugAssign):
        if type(node.op) not in _BINOPS or not isinstance(node.target, ast.Name):
            raise self.error(node, f"`{ast.unparse(node)}` is not supported")
        current = self._name(node.target)
        value = self._call_op(_BINOPS[type(node.op)], [current, self.expr(node.value)], {}, node)
        return self._bind(node.target, value, node, annotation=None)

    def _bind(self, target, value, node, annotation):
        span = self.source.span(node)
        if isinstance(target, ast.Name):
            vtype = value.type
            if isinstance(vtype, TupleType):
                raise self.error(node, f"`{target.id}` receives {len(vtype.items)} values; "
                                 "unpack them: `a, b = ...`")
            if annotation is not None:
                if isinstance(annotation, TileType) and annotation.valid_shape is None:
                    # An annotation that leaves out the valid region keeps the value's.
                    annotation = replace(annotation, valid_shape=vtype.valid_shape) \
                        if isinstance(vtype, TileType) else annotation
                if not same_value_type(annotation, vtype):
                    raise self.error(node, f"annotation of `{target.id}` does not match its value",
                                     cls=TypeCheckError)
                vtype = annotation
            var = Var(target.id, vtype, span)
            self._rebind(var, node)
            self.track_runtime_dims(var.name, _value_node(node), vtype)
            return Assign((var,), value, span)
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            vtype = value.type
            if not isinstance(vtype, TupleType) or len(vtype.items) != len(target.elts):
                n = len(vtype.items) if isinstance(vtype, TupleType) else 1
                raise self.error(node, f"cannot unpack {n} value(s) into {len(target.elts)} names")
            targets = tuple(Var(e.id, t, span) for e, t in zip(target.elts, vtype.items))
            for var in targets:
                self._rebind(var, node)
                self.track_runtime_dims(var.name, _value_node(node), var.type)
            return Assign(targets, value, span)
        raise self.error(node, f"cannot assign to `{ast.unparse(target)}`")

    def _rebind(self, var: Var, node) -> None:
        self.check_not_constexpr(var.name, node)
        if var.name in self.tensor_params and isinstance(var.type, ScalarType):
            raise self.error(node, f"`{var.name}` is a tensor parameter; this rebinds its name "
                             f"to {describe(var.type)}",
                             hint=f"write into the tensor with `{var.name}[:] = ...` (pl.store "
                                  "in an InCore kernel), or give the value a name of its own",
                             cls=TypeCheckError)
        self.vars[var.name] = var
        self.retyped.pop(var.name, None)

    def _assign_subscript(self, target: ast.Subscript, value_node, node):
        """`out[:] = x` and `out[r0:r1, c0:c1] = x` write through `pl.assemble`."""
        dst = self.expr(target.value)
        if not isinstance(dst, Var) or not isinstance(dst.type, TensorType):
            raise self.error(node, f"`{ast.unparse(target.value)}` is not a tensor; only tensors "
                             "accept sliced assignment")
        value = self.expr(value_node)
        rank = len(dst.type.shape)
        index = target.slice
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        if len(items) > rank:
            raise self.error(node, f"{len(items)} indices for a tensor of rank {rank}")
        offsets = []
        for dim, item in enumerate(items + [ast.Slice()] * (rank - len(items))):
            if not isinstance(item, ast.Slice) or item.step is not None:
                raise self.error(node, "write a window with slices: `out[r0:r1, c0:c1] = x`")
            start = self.scalar(item.lower) if item.lower is not None else Const(0, INDEX)
            offsets.append(start)
            if item.upper is not None and isinstance(value.type, (TensorType, TileType)):
                stop = self.scalar(item.upper)
                extent = _fold_sub(stop, start)
                if extent is not None and extent != value.type.shape[dim]:
                    raise self.error(node, f"the window is {extent} wide in dimension {dim} but "
                                     f"the value has {value.type.shape[dim]}",
                                     cls=TypeCheckError)
        span = self.source.span(node)
        call = self._call_op("assemble", [dst, value, ExprList(tuple(offsets), span)], {}, node)
        var = Var(dst.name, dst.type, span)
        self.vars[var.name] = var
        return Assign((var,), call, span)

    def stmt_Return(self, node: ast.Return):
        if node.value is None:
            values = ()
        elif isinstance(node.value, ast.Tuple):
            values = tuple(self.expr(e) for e in node.value.elts)
        else:
            values = (self.expr(node.value),)
        return Return(values, self.source.span(node))

    def stmt_For(self, node: ast.For):
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported")
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "the loop variable must be a single name")
        call = node.iter
        fn = self._callable(call.func) if isinstance(call, ast.Call) else None
        if isinstance(fn, DslBuiltin) and fn.name == "spmd":
            return self.spmd_loop(node)
        if not (isinstance(fn, DslBuiltin) and fn.name in _LOOP_KINDS):
            raise self.error(node,
                             "loop with `for i in pl.range(...)` (or pl.unroll / pl.parallel)")
        if call.keywords or not 1 <= len(call.args) <= 3:
            raise self.error(call,
                             f"pl.{fn.name} takes (stop), (start, stop) or (start, stop, step)")
        bounds = [self.scalar(a) for a in call.args]
        for a, b in zip(call.args, bounds):
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
        start, stop, step = bounds
        if isinstance(step, Const) and step.value <= 0:
            raise self.error(call, "the loop step must be positive")
        span = self.source.span(node)
        if fn.name == "unroll":
            return self._unroll(node, start, stop, step)
        var = Var(node.target.id, INDEX, span)
        self.check_not_constexpr(var.name, node)
        entry = dict(self.vars)
        self.vars[var.name] = var
        body = self.body(node.body)
        self._loop_types(entry, body, var.name, _runs(start, stop, step))
        if var.name in entry:
            self.vars[var.name] = entry[var.name]
        return For(var, start, stop, step, body, _LOOP_KINDS[fn.name], span)

    def _loop_types(self, entry: dict, body, index: str, runs: bool) -> None:
        """A name the body reads before binding it carries a value from one iteration to
        the next: it must leave the body with the type it came in with.  Any other name
        the loop retypes has the loop's type after it only if the loop surely runs."""
        carried = exposed_uses(body) - {index}
        for name, new in sorted(self.vars.items()):
            old = entry.get(name)
            if old is None or new is old or same_value_type(old.type, new.type):
                continue
            if name in carried:
                raise TypeCheckError(
                    f"`{name}` is carried around the loop but changes type inside it "
                    f"({describe(old.type)} → {describe(new.type)})", new.span,
                    hint="give the value before the loop the type the loop gives it, or use a "
                         "new name for the new value")
            if not runs:
                self.retyped[name] = (old, new)

    def _unroll(self, node, start, stop, step):
        if not all(isinstance(b, Const) for b in (start, stop, step)):
            raise self.error(node, "pl.unroll needs compile-time bounds", hint="use pl.range")
        out = []
        self.check_not_constexpr(node.target.id, node)
        for k in range(start.value, stop.value, step.value):
            # Each iteration is a scope of its own: its pl.constexpr locals start afresh.
            self.namespace = self.namespace.new_child({node.target.id: k})
            saved = dict(self.constexpr_lines)
            try:
                out.extend(self.body(node.body))
            finally:
                self.namespace = self.namespace.parents
                self.constexpr_lines = saved
        return out

    def stmt_If(self, node: ast.If):
        if not self.is_static(node.test):
            raise self.error(node, "`if` on a runtime value is not supported yet",
                             hint="only compile-time conditions are folded")
        return list(self.body(node.body if self.static(node.test) else node.orelse))

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.AST):
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Constant):
            return self._const(node.value, node)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            lhs, rhs = self.expr(node.left), self.expr(node.right)
            return self._call_op(_BINOPS[type(node.op)], [lhs, rhs], {}, node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self.expr(node.operand)
            if isinstance(operand, Const):
                return Const(-operand.value, operand.type, operand.span)
            return self._call_op("mul", [operand, self._const(-1, node)], {}, node)
        if isinstance(node, (ast.List, ast.Tuple)):
            return ExprList(tuple(self.scalar(e) for e in node.elts), self.source.span(node))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, (ast.Attribute, ast.Subscript)) and self.is_static(node):
            return self._const(self.static(node), node)
        if isinstance(node, ast.Subscript):
            return self._subscript_read(node)
        if isinstance(node, ast.IfExp):
            if not self.is_static(node.test):
                raise self.error(node, "`x if cond else y` needs a compile-time condition")
            return self.expr(node.body if self.static(node.test) else node.orelse)
        raise self.error(node, f"`{ast.unparse(node)}` is not supported in a pypto kernel body")

    def _subscript_read(self, node: ast.Subscript):
        """`t[r0:r1, c0:c1]` reads a window: `pl.slice(t, [r1 - r0, c1 - c0], [r0, c0])`;
        `t[i, j]` reads one element: `pl.read(t, [i, j])`."""
        base = self.expr(node.value)
        if not isinstance(base.type, (TensorType, TileType)):
            raise self.error(node, f"`{ast.unparse(node.value)}` is not a tensor or tile; only "
                             "they can be sliced", cls=TypeCheckError)
        shape = base.type.shape
        items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) > len(shape):
            raise self.error(node, f"{len(items)} indices for a value of rank {len(shape)}")
        if not any(isinstance(i, ast.Slice) for i in items):
            if len(items) != len(shape):
                raise self.error(node, f"`{ast.unparse(node)}` gives {len(items)} of the "
                                 f"{len(shape)} indices an element read needs",
                                 hint="give one index per dimension: t[i, j]; a window is "
                                      "written with slices: t[i:i+1, :]")
            indices = ExprList(tuple(self.scalar(i) for i in items), self.source.span(node))
            return self._call_op("read", [base, indices], {}, node)
        offsets, extents = [], []
        for dim, item in enumerate(items + [ast.Slice()] * (len(shape) - len(items))):
            if not isinstance(item, ast.Slice) or item.step is not None:
                raise self.error(node, "a window is written with slices on every dimension, "
                                 "without steps: t[r0:r1, c0:c1]",
                                 hint="write a single index i as i:i+1")
            start = self.scalar(item.lower) if item.lower is not None else Const(0, INDEX)
            stop = self.scalar(item.upper) if item.upper is not None else Const(shape[dim], INDEX)
            extent = _fold_sub(stop, start)
            if extent is None or extent <= 0:
                raise self.error(node, f"the window `{ast.unparse(item)}` must have a constant, "
                                 "positive extent", hint="write it as i:i+8")
            offsets.append(start)
            extents.append(extent)
        window = ExprList(tuple(offsets), self.source.span(node))
        return self._call_op("slice", [base, window], {"shape": tuple(extents)}, node)

    def scalar(self, node: ast.AST):
        e = self.expr(node)
        if not isinstance(e.type, ScalarType):
            raise self.error(node, f"`{ast.unparse(node)}` must be a scalar here",
                             cls=TypeCheckError)
        return e

    def _name(self, node: ast.Name):
        if node.id in self.retyped:
            old, new = self.retyped[node.id]
            raise self.error(node, f"`{node.id}` is read after a loop that may not run and "
                             f"changes its type ({describe(old.type)} → {describe(new.type)}, "
                             f"line {new.span.line})",
                             hint="use a new name for the value the loop computes",
                             cls=TypeCheckError)
        var = self.vars.get(node.id)
        if var is not None and isinstance(var.type, TaskIdType):
            raise self.error(node, f"task id `{node.id}` can only be used in deps=[...]",
                             cls=TypeCheckError)
        if var is not None:
            return Var(var.name, var.type, self.source.span(node))
        return self._const(self.static(node), node)

    def _const(self, value, node):
        span = self.source.span(node)
        if isinstance(value, bool):
            return Const(value, ScalarType(DataType.BOOL), span)
        if isinstance(value, int):
            return Const(value, INDEX, span)
        if isinstance(value, float):
            return Const(value, ScalarType(DataType.FP32), span)
        raise self.error(node, f"`{ast.unparse(node)}` ({type(value).__name__}) cannot be used as "
                         "a value here")

    def _callable(self, func: ast.AST):
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "self":
            return None
        if isinstance(func, ast.Name) and func.id in self.vars:
            return None
        try:
            return self.static(func)
        except ParseError:
            return None

    def _call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == "self":
            return self._func_call(func.attr, node)
        fn = self._callable(func)
        if isinstance(fn, OpStub):
            if fn.name == "get_block_idx":
                self.check_block_idx(node)
            elif fn.name == "dump_tag":
                self.check_dump_tag(node)
            return self._op_call(get_op(fn.name), node)
        if isinstance(fn, DslBuiltin):
            if fn.name == "const":
                return self._pl_const(node)
            if fn.name in ("submit", "spmd_submit"):
                return self.submit_call(node, fn.name)
            raise self.error(node, f"pl.{fn.name}(...) cannot be used as a value here")
        if fn is not None and getattr(fn, "__pypto_kernel__", False):
            return self._func_call(fn, node)
        if fn is not None and self.is_static(node):
            return self._const(self.static(node), node)
        raise self.error(node, f"`{ast.unparse(func)}` is not a pypto operator or kernel",
                         hint="operators are spelled pl.<op>(...); kernels must be decorated "
                              "with @pl.jit.incore")

    def _pl_const(self, node: ast.Call):
        value, dtype = (self.static(a) for a in node.args)
        if not isinstance(dtype, DataType):
            raise self.error(node, "pl.const(value, dtype) needs a pl dtype")
        return Const(value, ScalarType(dtype), self.source.span(node))

    def _func_call(self, callee_ref, node: ast.Call, arg_nodes=None):
        if arg_nodes is None and node.keywords:
            raise self.error(node, "pass kernel arguments positionally",
                             hint="for deps=, call it as res, tid = pl.submit(kernel, *args, "
                                  "deps=[...])")
        if self.func_type is not FunctionType.Orchestration:
            raise self.error(node, "kernels are called from a @pl.jit (orchestration) function")
        if self.in_scope:
            raise self.error(node, "call kernels outside `pl.at`: each kernel call is its own task")
        args = [self.expr(a) for a in (node.args if arg_nodes is None else arg_nodes)]
        span = self.source.span(node)
        callee = self.resolve_callee(callee_ref, args, span)
        if len(args) != len(callee.params):
            raise self.error(node, f"`{callee.name}` takes {len(callee.params)} arguments, "
                             f"got {len(args)}", cls=TypeCheckError)
        for arg, p in zip(args, callee.params):
            if not same_value_type(arg.type, p.var.type):
                raise self.error(node, f"argument `{p.var.name}` of `{callee.name}` expects "
                                 f"{describe(p.var.type)}, got {describe(arg.type)}",
                                 cls=TypeCheckError)
        rtype = callee.returns[0] if len(callee.returns) == 1 else TupleType(tuple(callee.returns))
        return FuncCall(callee.name, tuple(args), rtype, span, manual=self.manual)

    def _op_call(self, op: OpDef, node: ast.Call):
        names = [p.name for p in op.params]
        bound: dict[str, ast.AST] = {}
        if len(node.args) > len(names):
            raise self.error(node, f"pl.{op.name} takes at most {len(names)} arguments")
        for name, arg in zip(names, node.args):
            bound[name] = arg
        for kw in node.keywords:
            if kw.arg not in names:
                raise self.error(node, f"pl.{op.name} has no parameter `{kw.arg}`",
                                 hint=f"parameters: {', '.join(names)}")
            if kw.arg in bound:
                raise self.error(node, f"pl.{op.name} got `{kw.arg}` twice")
            bound[kw.arg] = kw.value
        operands, attrs = [], {}
        for p in op.params:
            if p.name not in bound:
                if p.default is REQUIRED:
                    raise self.error(node, f"pl.{op.name} needs `{p.name}`")
                attrs[p.name] = p.default
                continue
            arg = bound[p.name]
            if p.kind == "value" and p.default is None and isinstance(arg, ast.Constant) \
                    and arg.value is None:
                attrs[p.name] = None  # an optional operand spelled out as None
            elif p.kind == "value":
                operands.append(self.expr(arg))
            elif p.kind == "index_list":
                if not isinstance(arg, (ast.List, ast.Tuple)):
                    raise self.error(arg, f"`{p.name}` of pl.{op.name} must be a list like [i, 0]")
                operands.append(self.expr(arg))
            else:
                attrs[p.name] = self._attr_value(self.static(arg), arg)
        return self._call_op(op.name, operands, attrs, node)

    def _attr_value(self, value, node):
        if isinstance(value, list):
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise self.error(node, "a shape must be a list of integer constants")
            return tuple(value)
        if isinstance(value, float) and math.isnan(value):
            return value
        return value

    def _call_op(self, name: str, operands: list, attrs: dict, node):
        op = get_op(name)
        span = self.source.span(node)
        attrs = {**{p.name: p.default for p in op.attr_params}, **attrs}
        if (self.func_type is FunctionType.Orchestration and not self.in_scope
                and op.category not in _ORCHESTRATION_OK
                and not (op.category == "binary" and operands
                         and all(isinstance(o.type, ScalarType) for o in operands))
                # A view of a tensor moves no data: orchestration hands windows to tasks.
                and not (name == "slice" and operands and isinstance(operands[0].type,
                                                                     TensorType))):
            raise self.error(node, f"pl.{name} outside a `pl.at` block: in a @pl.jit function, "
                             "operators run on the device only inside "
                             "`with pl.at(level=pl.Level.CORE_GROUP):`",
                             hint="move the operation into a pl.at block, or write an "
                                  "@pl.jit.incore kernel")
        if name in _FOLD and all(isinstance(o, Const) for o in operands) and len(operands) == 2:
            a, b = operands
            if name in ("floordiv", "mod", "div") and b.value == 0:
                raise self.error(node, "division by zero in a constant expression")
            value = _FOLD[name](a.value, b.value)
            return self._const(value, node)
        try:
            rtype = op.infer(tuple(operands), attrs, span)
        except PyptoError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise self.error(node, f"invalid arguments to pl.{name}: {exc}",
                             cls=TypeCheckError) from None
        return Call(name, tuple(operands), tuple(sorted(attrs.items())), rtype, span)


# ---------------------------------------------------------------------- signatures


def resolve_param_type(annotation, arg_type, name: str, error) -> Any:
    """The parameter's type from its annotation, completed from the call's argument type."""
    if annotation is None or annotation is Tensor:
        if arg_type is None:
            raise error(f"parameter `{name}` needs a type: annotate it, e.g. "
                        "pl.Tensor[[16, 128], pl.FP32]")
        return arg_type
    if isinstance(annotation, TensorSpec):
        if not isinstance(arg_type, TensorType):
            if arg_type is None:
                raise error(f"parameter `{name}` has dynamic dimensions; call the kernel with "
                            "tensors to specialise it")
            raise error(f"parameter `{name}` expects a tensor, got {describe(arg_type)}")
        if len(annotation.shape) != len(arg_type.shape):
            raise error(f"parameter `{name}` expects rank {len(annotation.shape)}, got "
                        f"{list(arg_type.shape)}")
        for want, got in zip(annotation.shape, arg_type.shape):
            if isinstance(want, int) and want != got:
                raise error(f"parameter `{name}` expects shape {_shape_text(annotation.shape)}, "
                            f"got {list(arg_type.shape)}")
        if annotation.dtype not in (None, arg_type.dtype):
            raise error(f"parameter `{name}` expects {annotation.dtype.name}, got "
                        f"{arg_type.dtype.name}")
        return arg_type
    if isinstance(annotation, (TensorType, ScalarType, TileType)):
        if arg_type is not None and not same_value_type(annotation, arg_type):
            raise error(f"parameter `{name}` expects {describe(annotation)}, got "
                        f"{describe(arg_type)}")
        return annotation
    if annotation in (int, float):
        return ScalarType(DataType.INT64 if annotation is int else DataType.FP32)
    raise error(f"parameter `{name}` has an unsupported annotation {annotation!r}")


def parse_signature(fndef: ast.FunctionDef, parser: FunctionParser, arg_types: list | None,
                    skip_self: bool) -> FunctionSignature:
    """Parameters (with directions) and declared returns of a function definition."""
    args = fndef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
        raise parser.error(fndef, "kernel parameters must be plain positional parameters")
    params_ast = list(args.args)
    if skip_self:
        if not params_ast or params_ast[0].arg != "self":
            raise parser.error(fndef, "a @pl.function method takes `self` first")
        params_ast = params_ast[1:]
    if arg_types is not None and len(arg_types) != len(params_ast):
        raise parser.error(fndef, f"`{fndef.name}` takes {len(params_ast)} arguments, got "
                           f"{len(arg_types)}", cls=TypeCheckError)
    params = []
    dynamic: dict[str, dict[int, str]] = {}
    for i, a in enumerate(params_ast):
        annotation = parser.static(a.annotation) if a.annotation is not None else None
        direction = Direction.In
        if isinstance(annotation, DirectedType):
            direction, annotation = annotation.direction, annotation.type

        def error(msg, node=a):
            return parser.error(node, msg, cls=TypeCheckError)

        arg_type = arg_types[i] if arg_types is not None else None
        ptype = resolve_param_type(annotation, arg_type, a.arg, error)
        if isinstance(annotation, TensorSpec) and annotation.shape is not None:
            dynamic[a.arg] = {d: s.name for d, s in enumerate(annotation.shape)
                              if isinstance(s, DynamicDim)}
        if direction is not Direction.In and not isinstance(ptype, TensorType):
            raise error(f"`{a.arg}` is pl.Out/pl.InOut but not a tensor")
        params.append(Param(Var(a.arg, ptype, parser.source.span(a)), direction))
    returns = None
    if fndef.returns is not None:
        ann = parser.static(fndef.returns)
        items = getattr(ann, "__args__", None) if getattr(ann, "__origin__",
                                                          None) is tuple else None
        returns = tuple(items) if items is not None else (ann,)
    return FunctionSignature(fndef.name, tuple(params), returns, dynamic)


def _nesting(node: ast.stmt) -> int:
    """How deeply the expressions of one statement nest (its nested statements are
    measured on their own), without recursion."""
    deepest, pending = 0, [(child, 1) for child in ast.iter_child_nodes(node)
                           if not isinstance(child, ast.stmt)]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in ast.iter_child_nodes(item))
    return deepest


def _value_node(node: ast.stmt) -> ast.AST:
    """What a binding statement computes from (an augmented assignment reads its target)."""
    return node if isinstance(node, ast.AugAssign) else node.value


def _fold_sub(stop, start):
    """`stop - start` when it is a constant: both are affine in the same index variables
    (`(i + 1) * R` against `i * R`), else None."""
    a, b = _affine(stop), _affine(start)
    if a is None or b is None:
        return None
    terms = {k: a.get(k, 0) - b.get(k, 0) for k in a.keys() | b.keys()}
    if any(coef for name, coef in terms.items() if name is not None):
        return None
    return terms.get(None, 0)


def _affine(e) -> dict | None:
    """An integer index expression as {variable name: coefficient, None: constant}, or
    None when it is not affine (a product of two variables, a division, a float)."""
    if isinstance(e, Const):
        return {None: e.value} if isinstance(e.value, int) else None
    if isinstance(e, Var):
        return {e.name: 1}
    if not isinstance(e, Call) or len(e.args) != 2 or e.op not in ("add", "sub", "mul"):
        return None
    lhs, rhs = _affine(e.args[0]), _affine(e.args[1])
    if lhs is None or rhs is None:
        return None
    if e.op == "mul":
        scale, other = (lhs[None], rhs) if lhs.keys() == {None} else \
            (rhs[None], lhs) if rhs.keys() == {None} else (None, None)
        return None if scale is None else {k: v * scale for k, v in other.items()}
    sign = 1 if e.op == "add" else -1
    return {k: lhs.get(k, 0) + sign * rhs.get(k, 0) for k in lhs.keys() | rhs.keys()}


def _runs(start, stop, step) -> bool:
    """Does a loop with these bounds surely run at least once?"""
    bounds = [b.value for b in (start, stop, step) if isinstance(b, Const)]
    return len(bounds) == 3 and len(range(*bounds)) > 0


def _shape_text(shape) -> str:
    return "[" + ", ".join(d.name if isinstance(d, DynamicDim) else str(d) for d in shape) + "]"


# ---------------------------------------------------------------------- @pl.program text


def parse_program(source: str, filename: str = "<pl.parse>", namespace: dict | None = None,
                  line_offset: int = 0) -> Program:
    """Parse `@pl.program` class source (the printer's form) into a Program."""
    import pypto.language as pl

    try:
        module = ast.parse(source, filename)
    except SyntaxError as exc:
        raise ParseError(f"invalid Python: {exc.msg}",
                         Span(filename, syntax_error_line(exc) + line_offset)) from None
    ns = ChainMap({"pl": pl, "tuple": tuple}, namespace or {}, vars(builtins))
    info = SourceInfo(filename, line_offset)
    classes = [n for n in module.body if isinstance(n, ast.ClassDef)]
    if len(classes) != 1:
        raise ParseError("expected exactly one `@pl.program` class", Span(filename,
                                                                          1 + line_offset))
    cls = classes[0]
    entry = None
    for deco in cls.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "entry" and isinstance(kw.value, ast.Constant):
                    entry = kw.value.value
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    signatures: dict[str, tuple[FunctionSignature, FunctionType, ast.FunctionDef]] = {}
    for m in methods:
        ftype = _function_type(m, FunctionParser(info, ns, FunctionType.InCore, None))
        sig = parse_signature(m, FunctionParser(info, ns, ftype, None), None, skip_self=True)
        if sig.returns is None:
            sig = FunctionSignature(sig.name, sig.params, (), sig.dynamic)
        signatures[m.name] = (sig, ftype, m)

    def resolve(ref, args, span):
        if not isinstance(ref, str) or ref not in signatures:
            raise ParseError(f"program has no function `{ref}`", span)
        sig = signatures[ref][0]
        return Callee(sig.name, sig.params, sig.returns)

    functions = []
    for name, (sig, ftype, m) in signatures.items():
        functions.append(FunctionParser(info, ns, ftype, resolve).parse(m, sig))
    if entry is None:
        orch = [f.name for f in functions if f.func_type is FunctionType.Orchestration]
        entry = orch[0] if len(orch) == 1 else (cls.name if cls.name in signatures
                                                else functions[0].name)
    return Program(cls.name, tuple(functions), entry)


def _function_type(m: ast.FunctionDef, parser: FunctionParser) -> FunctionType:
    for deco in m.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "type":
                    value = parser.static(kw.value)
                    if isinstance(value, FunctionType):
                        return value
    raise parser.error(m, f"`{m.name}` needs @pl.function(type=pl.FunctionType....)")


__all__ = [
    "OpStub",
    "DslBuiltin",
    "FunctionParser",
    "SourceInfo",
    "Callee",
    "parse_signature",
    "parse_program",
]
