"""Python AST → IR.  Decorated bodies are parsed, never executed.

Every error names the user's file and line.  Names from the enclosing Python scope
are folded at parse time: numbers become constants, dtypes and enums become
attributes, `@pl.jit.incore` functions become callees.
"""

from __future__ import annotations

import ast
import builtins
import math
import sys
from collections import ChainMap
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..ir import packed
from ..ir.dtypes import DataType, stands_for
from ..ir.errors import (
    ParseContentError,
    ParseError,
    ParseSyntaxError,
    PyptoError,
    Span,
    TypeCheckError,
    syntax_error_line,
)
from ..ir.names import fresh_name
from ..ir.nodes import (
    Assign,
    Call,
    Const,
    ExprList,
    ExprStmt,
    FuncCall,
    Function,
    Param,
    Program,
    Return,
    Var,
)
from ..ir.ops import REQUIRED, OpDef, get_op, make_call, write_destination
from ..ir.ops.barrier import LAUNCH_QUERIES
from ..ir.ops.cross_core import DEFAULT_SLOTS, POP_OPS
from ..ir.ops.task_arrays import expect_value
from ..ir.types import (
    INDEX,
    Direction,
    FunctionType,
    Level,
    ScalarType,
    SplitMode,
    TaskIdArrayType,
    TaskIdType,
    TensorType,
    TileType,
    TupleType,
    Type,
    describe,
    same_value_type,
)
from ..ir.visitor import defs, exposed_uses
from . import vocabulary
from .compile_time import TYPE_ATTRIBUTES, CompileTimeSyntax
from .control_flow import ControlFlowSyntax
from .inline import InlineSyntax
from .namespaces import ELSEWHERE
from .split_aiv import REGION_BUILTINS, SplitAivSyntax, split_kernel
from .stubs import DslBuiltin, OpStub, RefusedName
from .tasks import TaskSyntax
from .typing import RUNTIME, DirectedType, DynamicDim, Tensor, TensorSpec


def _elsewhere(base, name: str) -> str | None:
    """Where `pl.<name>`, which does not exist, lives (upstream's FAQ), for a hint."""
    if base is vocabulary or base is sys.modules.get("pypto.language"):
        where = ELSEWHERE.get(name)
        return where and f"it lives elsewhere: {where}"
    return None


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
    "min": min,
    "max": max,
}
# ast comparison -> pl.cmp's cmp_type code (EQ NE LT LE GT GE).
_CMP_CODES = {ast.Eq: 0, ast.NotEq: 1, ast.Lt: 2, ast.LtE: 3, ast.Gt: 4, ast.GtE: 5}
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


@dataclass
class Callee:
    """What a call site needs to know about a function of the program."""

    name: str
    params: tuple[Param, ...]
    returns: tuple
    func_type: FunctionType | None = None  # as declared: AIC / AIV before they are InCore


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
    # a pl.dynamic program's function parsed for its call: a name assigned once, from a
    # compile-time expression (`rows = pl.tensor.dim(q, 0)`), is a constant of the body
    fold_single_assignments: bool = False


class FunctionParser(TaskSyntax, CompileTimeSyntax, ControlFlowSyntax, InlineSyntax,
                     SplitAivSyntax):
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
        # Upstream's pl.FunctionType.AIC / AIV: an InCore kernel on that unit (its "level").
        self.core_level = {FunctionType.AIC: Level.AIC, FunctionType.AIV: Level.AIV}.get(func_type)
        self.func_type = FunctionType.InCore if self.core_level else func_type
        self.resolve_callee = resolve_callee
        self.vars: dict[str, Var] = {}
        self.foldable: set[str] = set()  # see FunctionSignature.fold_single_assignments
        # name -> the tensor it names: `a = pl.store(t, offsets, out)` makes `a` name `out`.
        self.aliases: dict[str, str] = {}
        # Names a loop that may not run gave a new type: (type before, type in the loop).
        self.retyped: dict[str, tuple[Var, Var]] = {}
        self.tensor_params: set[str] = set()
        # An entry orchestration specialised for its call's values (program_template.py):
        # parameter -> the call's tensor, and the elements read from them as constants.
        self.input_values: dict[str, Any] | None = None
        self.value_reads: list[tuple[str, tuple, Any]] = []
        self.value_dependent = False  # may be specialised that way (see static())
        self.in_scope = False
        self.pop_annotation: TileType | None = None  # see stmt_AnnAssign
        # `with pl.cluster():` (tasks.py): the declared type of each function called, the
        # program's function names, and the Group functions the blocks become.
        self.callee_types: dict[str, FunctionType | None] = {}
        self.function_names: set[str] = set()
        self.outlined: list[Function] = []
        # `pl.split_aiv` regions (split_aiv.py): allowed in a @pl.program's InCore method;
        # statements an expression puts before the statement holding it (a shard's pop).
        self.regions_allowed = False
        self.regions: list = []
        self.pending: list = []
        self.init_compile_time({})
        self.init_control_flow()

    def signature(self, fndef: ast.FunctionDef, arg_types: list | None,
                  skip_self: bool) -> FunctionSignature:
        """`parse_signature` of `fndef` read by this parser: what the syntax mixins call
        (this module imports them, so they cannot import it)."""
        return parse_signature(fndef, self, arg_types, skip_self)

    # ------------------------------------------------------------------ errors and statics
    def error(self, node, message, hint=None, cls=ParseError):
        return cls(message, self.source.span(node), hint)

    def static(self, node: ast.AST) -> Any:
        """Evaluate an expression that must be known at compile time (one `_constant_<node
        type>` method per form that can be)."""
        evaluate = getattr(self, f"_constant_{type(node).__name__}", None)
        if evaluate is None:
            raise self._not_constant(node)
        return evaluate(node)

    def _not_constant(self, node: ast.AST) -> PyptoError:
        return self.error(node, f"`{ast.unparse(node)}` must be a compile-time constant")

    def _constant_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _constant_Name(self, node: ast.Name) -> Any:
        if node.id in self.vars:
            if self.value_dependent:  # it may be an element of an input: try its value
                raise DynamicProgram("", by_value=True)
            raise self.error(node, f"`{node.id}` is a runtime value; a constant is needed here")
        try:
            return self.namespace[node.id]
        except KeyError:
            raise self.error(
                node, f"name `{node.id}` is not defined",
                hint="define it before the kernel, or pass it as an argument",
            ) from None

    def _constant_Attribute(self, node: ast.Attribute) -> Any:
        if self.is_type_attribute(node):
            return self.known(node, self.type_attribute(node))
        base = self.static(node.value)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.error(node, f"`{ast.unparse(node)}` does not exist",
                             hint=_elsewhere(base, node.attr)) from None

    def _constant_List(self, node: ast.List | ast.Tuple) -> list:
        return [self.static(e) for e in node.elts]

    _constant_Tuple = _constant_List

    def _constant_Slice(self, node: ast.Slice) -> slice:  # `x.shape[1:]`
        return slice(*(None if e is None else self.static(e)
                       for e in (node.lower, node.upper, node.step)))

    def _constant_UnaryOp(self, node: ast.UnaryOp) -> Any:
        if isinstance(node.op, ast.USub):
            return -self.static(node.operand)
        if isinstance(node.op, ast.Not):
            return not self.static(node.operand)
        raise self._not_constant(node)

    def _constant_BinOp(self, node: ast.BinOp) -> Any:
        if type(node.op) not in _BINOPS:
            raise self._not_constant(node)
        return _FOLD[_BINOPS[type(node.op)]](self.static(node.left), self.static(node.right))

    def _constant_Subscript(self, node: ast.Subscript) -> Any:
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

    def _constant_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE:
            raise self._not_constant(node)
        return _COMPARE[type(node.ops[0])](self.static(node.left),
                                           self.static(node.comparators[0]))

    def _constant_BoolOp(self, node: ast.BoolOp) -> bool:
        values = [self.static(v) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)

    def _constant_Call(self, node: ast.Call) -> Any:
        read = self._input_read(node)
        if read is not None:
            return self._input_value(*read)
        fn = self.static(node.func)
        if isinstance(fn, DslBuiltin) and fn.name == "dim":
            return self._dim(node).value
        args = [self.static(a) for a in node.args]
        kwargs = {k.arg: self.static(k.value) for k in node.keywords}
        if isinstance(fn, (OpStub, DslBuiltin)):
            raise self.error(node, f"`{ast.unparse(node)}` is not a compile-time constant")
        try:
            return fn(*args, **kwargs)
        except PyptoError as exc:  # a DSL object refusing its arguments: at this line
            raise self.error(node, exc.message, exc.hint, cls=type(exc)) from None
        except Exception as exc:
            raise self.error(node, f"cannot evaluate `{ast.unparse(node)}`: {exc}") from None

    def is_static(self, node: ast.AST) -> bool:
        """Whether `node` reads no runtime value: the shape and dtype of one are static."""
        if isinstance(node, ast.Attribute) and node.attr in TYPE_ATTRIBUTES:
            return True
        if isinstance(node, ast.Name):
            return node.id not in self.vars
        if isinstance(node, ast.Call) and self._is_dim(node.func):
            return True  # pl.tensor.dim(t, axis) reads t's type, as t.shape does
        if isinstance(node, ast.Call) and self._input_read(node) is not None:
            return True  # an element of an input the program is specialised for
        return all(self.is_static(child) for child in ast.iter_child_nodes(node))

    def _input_read(self, node: ast.Call) -> tuple[str, tuple] | None:
        """(parameter, indices) of `pl.tensor.read(p, [i, ...])` with constant indices, of
        a tensor parameter of an entry specialised for its call's values; else None."""
        if self.input_values is None or len(node.args) != 2 or node.keywords:
            return None
        tensor, index = node.args
        if not (isinstance(tensor, ast.Name) and tensor.id in self.input_values
                and tensor.id not in self.aliases):
            return None
        fn = self._callable(node.func)
        if not (isinstance(fn, OpStub) and fn.name == "read"):
            return None
        items = index.elts if isinstance(index, (ast.List, ast.Tuple)) else [index]
        if not all(self.is_static(i) for i in items):
            return None
        indices = tuple(self.static(i) for i in items)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
            return None
        return tensor.id, indices

    def _input_value(self, param: str, indices: tuple):
        """The element of the call's tensor, recorded: the program checks it at run time."""
        value = self.input_values[param][indices].item()
        value = int(value) if isinstance(value, bool) else value
        if (param, indices, value) not in self.value_reads:
            self.value_reads.append((param, indices, value))
        return value

    def _is_dim(self, func: ast.AST) -> bool:
        fn = self._callable(func) if isinstance(func, ast.Attribute) else None
        return isinstance(fn, DslBuiltin) and fn.name == "dim"

    # ------------------------------------------------------------------ functions
    def parse(self, fndef: ast.FunctionDef, sig: FunctionSignature,
              constants: dict | None = None) -> Function:
        """The function's IR.  `constants` (name -> value) are parameters specialised to
        their call's value (`scale: pl.FP32` of a @pl.jit entry): the body reads them as
        constants; the parameter stays, so the call passes the same arguments."""
        self.function_name = sig.name
        for p in sig.params:
            if constants and p.var.name in constants:
                self.namespace.maps[0][p.var.name] = constants[p.var.name]
            else:
                self.vars[p.var.name] = p.var
        self.tensor_params = {p.var.name for p in sig.params if isinstance(p.var.type, TensorType)}
        self.init_compile_time(sig.dynamic)
        self.foldable = _assigned_once(fndef) if sig.fold_single_assignments else set()
        attrs, stmts = self._function_attrs(fndef.body)
        attrs = self._decorated_level(fndef, attrs)
        attrs = self._decorated_auto_scope(fndef, attrs)
        body = self.body(stmts)
        returns = sig.returns
        ret_stmts = [s for s in body if isinstance(s, Return)]
        if self.func_type is FunctionType.InCore and ret_stmts:
            for value in ret_stmts[-1].values:
                if not isinstance(value.type, TensorType):
                    raise TypeCheckError(
                        f"an InCore kernel returns the tensors it stores into; this returns "
                        f"{describe(value.type)}", ret_stmts[-1].span,
                        hint="pl.store the tile into a pl.Out tensor parameter and return that")
        if returns is None or not all(isinstance(r, Type) for r in returns):
            # unannotated, or a pl.dynamic dimension no parameter binds: the body's types
            returns = tuple(v.type for v in ret_stmts[-1].values) if ret_stmts else ()
        elif ret_stmts:
            got = tuple(v.type for v in ret_stmts[-1].values)
            if len(got) != len(returns) or not all(map(same_value_type, got, returns)):
                raise self.error(fndef,
                                 f"`{sig.name}` returns values that differ from its annotation",
                                 cls=TypeCheckError)
        fn = Function(sig.name, sig.params, tuple(returns), body, self.func_type,
                      self.source.span(fndef), attrs=attrs)
        if self.regions:  # a kernel with lane regions: its AIC, AIV and Group functions
            # `pl.func_attr({"slot_num": N})`: the depth of its rings (2 by default).
            *sides, fn = split_kernel(fn, self.regions, self.function_names,
                                      slot_num=fn.attr("slot_num") or DEFAULT_SLOTS)
            self.outlined += sides
        return fn

    def _function_attrs(self, stmts: list) -> tuple[tuple, list]:
        """`pl.func_attr({"split": pl.SplitMode.UP_DOWN})` (or `{"level": pl.Level.AIC}`) as
        the first statement (after a docstring): the function's attributes, and the
        statements after it."""
        start = 1 if (stmts and isinstance(stmts[0], ast.Expr)
                      and isinstance(stmts[0].value, ast.Constant)
                      and isinstance(stmts[0].value.value, str)) else 0
        if start >= len(stmts) or not self._is_builtin_call(stmts[start], "func_attr"):
            return (), stmts
        call = stmts[start].value
        if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], ast.Dict):
            raise self.error(call, "write pl.func_attr({\"name\": value, ...}) with a dict "
                             "literal")
        attrs = {}
        for key_node, value_node in zip(call.args[0].keys, call.args[0].values, strict=True):
            key = self.static(key_node) if key_node is not None else None
            if key in attrs:
                raise self.error(key_node, f"pl.func_attr declares `{key}` twice")
            if key not in ("split", "slot_num", "level", "auto_scope", "split_aiv"):
                raise self.error(key_node or call, f"function attribute {key!r} is not "
                                 "supported here", hint="supported: \"split\" (a pl.SplitMode), "
                                 "\"slot_num\" (the automatic pipe's ring depth), \"level\" "
                                 "(pl.Level.AIC or pl.Level.AIV), \"auto_scope\" (False), "
                                 "\"split_aiv\" (True: a side of a kernel with lane regions)")
            attrs[key] = self._function_attr(key, value_node)
        return tuple(sorted(attrs.items())), stmts[:start] + stmts[start + 1:]

    def _function_attr(self, key: str, value_node: ast.AST):
        """The value of one `pl.func_attr` entry, checked against its key."""
        value = self.static(value_node)
        if key == "auto_scope" and (value is not False
                                    or self.func_type is not FunctionType.Orchestration):
            raise self.error(value_node, "the \"auto_scope\" attribute is False, on an "
                             "orchestration function (the compiler then places none of its "
                             "runtime scopes)")
        if key == "split_aiv" and value is not True:
            raise self.error(value_node, "the \"split_aiv\" attribute is True")
        if key == "level" and value not in (Level.AIC, Level.AIV):
            raise self.error(value_node, "the \"level\" attribute takes pl.Level.AIC or "
                             "pl.Level.AIV (a kernel on one unit of the core group)")
        if key == "split" and not isinstance(value, SplitMode):
            raise self.error(value_node, "the \"split\" attribute takes a pl.SplitMode")
        if key == "slot_num" and (not isinstance(value, int) or isinstance(value, bool)
                                  or value <= 0):
            raise self.error(value_node, "the \"slot_num\" attribute is a positive integer "
                             "(the depth of the automatic cross-core pipe's ring)")
        return value

    def _decorated_level(self, fndef: ast.FunctionDef, attrs: tuple) -> tuple:
        """`@pl.function(type=pl.FunctionType.InCore, level=pl.Level.AIC)`: a kernel on one
        unit of the core group, as `pl.func_attr({"level": ...})` says (CORE_GROUP, the
        whole group, is every kernel's level and adds nothing; HOST is refused earlier).
        A pl.FunctionType.AIC / AIV function is of that level."""
        if self.core_level is not None:
            declared = dict(attrs)
            if declared.setdefault("level", self.core_level) is not self.core_level:
                raise self.error(fndef, f"`{fndef.name}` is a pl.FunctionType."
                                 f"{self.core_level.name} function; its \"level\" attribute "
                                 "says otherwise")
            attrs = tuple(sorted(declared.items()))
        for deco in fndef.decorator_list:
            for kw in deco.keywords if isinstance(deco, ast.Call) else ():
                if kw.arg != "level":
                    continue
                level = self.static(kw.value)
                if level is Level.CORE_GROUP:
                    continue
                if level not in (Level.AIC, Level.AIV) or \
                        self.func_type is not FunctionType.InCore:
                    raise self.error(kw.value, "level= of a @pl.function is pl.Level.AIC or "
                                     "pl.Level.AIV for an InCore function (a kernel on one "
                                     "unit of the core group), or pl.Level.CORE_GROUP")
                declared = dict(attrs)
                if declared.setdefault("level", level) is not level:
                    raise self.error(kw.value, "the decorator's level= and pl.func_attr's "
                                     "\"level\" disagree")
                return tuple(sorted(declared.items()))
        return attrs

    def _decorated_auto_scope(self, fndef: ast.FunctionDef, attrs: tuple) -> tuple:
        """`@pl.jit(auto_scope=False)` / `@pl.function(..., auto_scope=False)` on an
        orchestration function: the "auto_scope" attribute (False), so the orchestration
        places no runtime scope of its own (the decorator checked the value)."""
        if self.func_type is not FunctionType.Orchestration:
            return attrs
        for deco in fndef.decorator_list:
            for kw in deco.keywords if isinstance(deco, ast.Call) else ():
                if kw.arg == "auto_scope" and self.static(kw.value) is False:
                    return tuple(sorted(dict(attrs, auto_scope=False).items()))
        return attrs

    def _is_builtin_call(self, stmt: ast.stmt, name: str) -> bool:
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            return False
        fn = self._callable(stmt.value.func)
        return isinstance(fn, DslBuiltin) and fn.name == name

    def body(self, stmts) -> tuple:
        out: list = []
        for i, stmt in enumerate(stmts):
            if (i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                continue  # docstring
            result = self.stmt(stmt)
            if self.pending:
                out.extend(self.pending)
                self.pending = []
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
            if isinstance(fn, DslBuiltin) and fn.name == "static_print":
                return self._static_print(node.value)
            if isinstance(fn, DslBuiltin) and fn.name == "cond":
                raise self.error(node, "pl.cond(...) is the first statement of a pl.while_ "
                                 "body, and nowhere else",
                                 hint="`for (x,) in pl.while_(init_values=(0,)):` then "
                                      "`pl.cond(x < 10)`")
            if isinstance(fn, DslBuiltin) and fn.name == "func_attr":
                raise self.error(node, "pl.func_attr({...}) must be the first statement of the "
                                 "function body")
            if isinstance(fn, OpStub) and fn.name == "dump_tag":
                return self.dump_tag_stmt(node)
            if isinstance(fn, DslBuiltin) and fn.name == "write":
                return self._bind_write(self._element_write(node.value), node)
            callee = self.spliced_callee(node.value)
            if callee is not None:
                return self.inline_call(callee, node.value, None, node)
        value = self.expr(node.value)
        if isinstance(value, Call) and write_destination(value) is not None:
            return self._bind_write(value, node)
        return ExprStmt(value, self.source.span(node))

    def _element_write(self, node: ast.Call) -> Call:
        """`pl.write(t, [i, j], value)`: the element of tensor or tile `t` at the indices set
        to the scalar `value` (rounded once to t's dtype), as writing a window of ones
        filled with it: `pl.store(pl.tile.full(...), [i, j], t)` in a kernel,
        `pl.assemble(t, pl.full(...), [i, j])` in a pl.at block, `pl.tile.assemble` into a
        tile."""
        if len(node.args) != 3 or node.keywords:
            raise self.error(node, "pl.write takes (t, [i, j], value)")
        dst = self.expr(node.args[0])
        indices = self._index_list(get_op("read"), "indices", node.args[1])
        value = self.expr(node.args[2])
        if not isinstance(dst.type, (TensorType, TileType)):
            raise self.error(node, f"pl.write writes an element of a tensor or a tile, got "
                             f"{describe(dst.type)}", cls=TypeCheckError)
        if not isinstance(value.type, ScalarType):
            raise self.error(node, "pl.write writes a scalar value, got "
                             f"{describe(value.type)}", cls=TypeCheckError,
                             hint="read a tile's element with t[i, j] or pl.read")
        if len(indices.items) != len(dst.type.shape):
            raise self.error(node, f"pl.write: a value of rank {len(dst.type.shape)} needs "
                             f"{len(dst.type.shape)} indices, got {len(indices.items)}",
                             cls=TypeCheckError)
        attrs = {"shape": (1,) * len(dst.type.shape), "dtype": dst.type.dtype}
        if isinstance(dst.type, TileType):
            element = self._call_op("full", [value], attrs, node)
            return self._call_op("tile.assemble", [dst, element, indices], {}, node)
        if self.func_type is FunctionType.Orchestration and not self.in_scope:
            raise self.error(node, "pl.write of a tensor element runs on the device: inside a "
                             "`pl.at` block or a kernel", hint="wrap it in `with pl.at(level="
                             "pl.Level.CORE_GROUP):`")
        if self.in_scope:
            element = self._call_op("tensor.full", [value], attrs, node)
            return self._call_op("assemble", [dst, element, indices], {}, node)
        element = self._call_op("full", [value], attrs, node)
        return self._call_op("store", [element, indices, dst], {}, node)

    def _bind_write(self, call: Call, node: ast.Expr) -> Assign:
        """A bare `pl.store(tile, offsets, out)` / `pl.assemble(out, x, offsets)` statement:
        the write's result is the updated tensor, so the statement rebinds `out` to it, as
        `out = pl.store(...)` does."""
        dst = write_destination(call)
        if not isinstance(dst, Var):
            raise self.error(node, f"pl.{call.op} writes into `{ast.unparse(node.value)}`, "
                             "which is not a tensor variable",
                             hint="write into a tensor parameter or a tensor bound to a name")
        span = self.source.span(node)
        var = Var(dst.name, call.type, span)
        self._rebind(var, node)
        return Assign((var,), call, span)

    def _static_print(self, call: ast.Call):
        """`pl.static_print(*args)`: prints at parse time, leaving nothing in the IR; a
        runtime value prints as what the parser knows of it (its name and type)."""
        parts = []
        for arg in call.args:
            if self.is_static(arg):
                parts.append(str(self.static(arg)))
            else:
                value = self.expr(arg)
                parts.append(f"{ast.unparse(arg)}: {describe(value.type)}")
        print(f"{self.source.span(call)}: " + " ".join(parts))
        return None

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
        if isinstance(node.value, ast.Call) and self._is_builtin_call(
                ast.Expr(node.value), "yield_"):
            return self.yield_assign(target, node.value, node)
        if isinstance(node.value, ast.Call) and self._is_builtin_call(
                ast.Expr(node.value), "aic_gather"):
            return self.aic_gather(target, node.value, node)
        if isinstance(node.value, ast.Call) and self._is_builtin_call(
                ast.Expr(node.value), "aiv_shard"):
            return self.aiv_shard_assign(target, node.value, node)
        callee = self.spliced_callee(node.value)
        if callee is not None:
            return self.inline_call(callee, node.value, target, node)
        if isinstance(target, ast.Name) and target.id in self.foldable \
                and target.id not in self.vars and self.is_static(node.value):
            try:
                value = self.static(node.value)
            except ParseError:  # an op call: not a compile-time expression
                value = None
            if isinstance(value, (int, float)):
                self.namespace.maps[0][target.id] = value
                return None
        value = self.expr(node.value)
        return self._bind(target, value, node, annotation=None)

    def stmt_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            raise self.error(node, "a declaration needs a value: `x: T = ...`")
        annotation = self._annotation(node.annotation)
        if isinstance(annotation, DslBuiltin) and annotation.name == "constexpr":
            return self.bind_constexpr(node)
        if isinstance(node.value, ast.Call) and self._is_builtin_call(
                ast.Expr(node.value), "yield_"):
            return self.yield_assign(node.target, node.value, node, annotation)
        # `t: pl.Tile[[16, 128], pl.FP32] = pl.tpop_from_aic(split=0)`: the annotation names
        # the tile popped (upstream's spelling; shape= / dtype= say it in the call).
        self.pop_annotation = annotation if isinstance(annotation, TileType) else None
        try:
            value = self.expr(node.value)
        finally:
            self.pop_annotation = None
        return self._bind(node.target, value, node, annotation)

    def _annotation(self, node: ast.AST):
        """A statement's annotation.  A tile type whose valid region holds runtime extents
        (`pl.Tile[[16, 64], pl.FP32, [16, n]]`, as the printer writes a runtime valid
        region) reads those extents as index expressions, and so the slot of an allocation
        it lives in (`pl.MemRef("ub", slots=2)[i % 2]`)."""
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple)
                and len(node.slice.elts) >= 3):
            return self.static(node)
        elts = list(node.slice.elts)
        valid_node = elts[2] if isinstance(elts[2], ast.List) and not self.is_static(
            elts[2]) else None
        if valid_node is not None:
            elts[2] = ast.copy_location(ast.List([ast.Constant(0) for _ in valid_node.elts],
                                                 ast.Load()), valid_node)
        slot_node = self._runtime_slot(elts)
        if valid_node is None and slot_node is None:
            return self.static(node)
        fixed = ast.copy_location(ast.Subscript(node.value, ast.copy_location(
            ast.Tuple(elts, ast.Load()), node.slice), ast.Load()), node)
        tile = self.static(fixed)
        if not isinstance(tile, TileType):
            raise self.error(node, f"`{ast.unparse(node)}` is not a type")
        if valid_node is not None:
            tile = replace(tile, valid_shape=self._runtime_valid_shape(valid_node,
                                                                       get_op("load")))
        if slot_node is not None:
            if tile.memref is None:
                raise self.error(node, f"`{ast.unparse(node)}` is not a type")
            slot = self.scalar(slot_node)
            if not (isinstance(slot.type, ScalarType) and slot.type.dtype.is_int):
                raise self.error(slot_node, "a pl.MemRef slot is an integer index",
                                 cls=TypeCheckError)
            tile = replace(tile, memref=replace(tile.memref, slot=slot))
        return tile

    def _runtime_slot(self, elts: list):
        """The index of `pl.MemRef(...)[i % 2]` among a tile annotation's elements when it is
        a run-time value, replaced in `elts` by 0 for the static reading; else None."""
        for k, elt in enumerate(elts[2:], 2):
            if isinstance(elt, ast.Subscript) and isinstance(elt.value, ast.Call) and \
                    not self.is_static(elt.slice):
                elts[k] = ast.copy_location(ast.Subscript(elt.value, ast.copy_location(
                    ast.Constant(0), elt.slice), ast.Load()), elt)
                return elt.slice
        return None

    def stmt_AugAssign(self, node: ast.AugAssign):
        if type(node.op) not in _BINOPS or not isinstance(node.target, ast.Name):
            raise self.error(node, f"`{ast.unparse(node)}` is not supported")
        current = self._name(node.target)
        value = self._call_op(_BINOPS[type(node.op)], [current, self.expr(node.value)], {}, node)
        return self._bind(node.target, value, node, annotation=None)

    def _annotated(self, name: str, vtype, annotation, node):
        """The type of `name: annotation = value`: the annotation, which must match the
        value's type (a tile annotation without a valid region keeps the value's)."""
        if isinstance(annotation, TileType) and annotation.valid_shape is None:
            annotation = replace(annotation, valid_shape=vtype.valid_shape) \
                if isinstance(vtype, TileType) else annotation
        if not same_value_type(annotation, vtype):
            raise self.error(node, f"annotation of `{name}` does not match its value",
                             cls=TypeCheckError)
        return annotation

    def _bind(self, target, value, node, annotation):
        span = self.source.span(node)
        if isinstance(target, ast.Name):
            dst = _write_destination(value)
            if dst is None or dst.name != target.id:  # not a write into the name itself
                self._unalias(target.id)
            if dst is not None and dst.name != target.id:
                # `out_left = pl.store(t, offsets, out)`: the store's result is `out`
                # updated in place, so `out_left` names `out` from here on.
                self.aliases[target.id] = dst.name
                target = ast.copy_location(ast.Name(dst.name, ast.Store()), target)
            vtype = value.type
            if isinstance(vtype, TupleType):
                raise self.error(node, f"`{target.id}` receives {len(vtype.items)} values; "
                                 "unpack them: `a, b = ...`")
            if annotation is not None:
                vtype = self._annotated(target.id, vtype, annotation, node)
            var = Var(target.id, vtype, span)
            self._rebind(var, node)
            self.track_runtime_dims(var.name, _value_node(node), vtype)
            return Assign((var,), value, span)
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            vtype = value.type
            if not isinstance(vtype, TupleType) or len(vtype.items) != len(target.elts):
                n = len(vtype.items) if isinstance(vtype, TupleType) else 1
                raise self.error(node, f"cannot unpack {n} value(s) into {len(target.elts)} names")
            targets = tuple(Var(e.id, t, span)
                            for e, t in zip(target.elts, vtype.items, strict=True))
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
        if isinstance(dst, Var) and isinstance(dst.type, TaskIdArrayType):
            return self.assign_task_array(target, dst, value_node, node)
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
        span = self.source.span(node)
        # `return self.kernel(x, out)`: the call is a statement of its own whose results are
        # returned (a task is submitted where it is a statement; inside a return it was
        # dropped, and the entry handed back a buffer nothing wrote).
        stmts: list = []
        returned: list = []
        for value in values:
            if not isinstance(value, FuncCall):
                returned.append(value)
                continue
            items = value.type.items if isinstance(value.type, TupleType) else (value.type,)
            targets = tuple(Var(self._fresh_name("ret"), t, span) for t in items)
            for var in targets:
                self.vars[var.name] = var
            stmts.append(Assign(targets, value, span))
            returned.extend(targets)
        return stmts + [Return(tuple(returned), span)] if stmts else Return(values, span)

    def _fresh_name(self, stem: str) -> str:
        """`stem_0`, `stem_1`, ...: the first not bound in the function."""
        return fresh_name(stem, self.vars, first=0)

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

    # ------------------------------------------------------------------ expressions
    def expr(self, node: ast.AST):
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Constant):
            return self._const(node.value, node)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp):
            return self._unary(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            return ExprList(tuple(self.scalar(e) for e in node.elts), self.source.span(node))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return self._attribute_or_subscript(node)
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            return self._condition_expr(node)
        if isinstance(node, ast.IfExp):
            return self._if_expr(node)
        raise self._unsupported(node)

    def _unsupported(self, node: ast.AST) -> PyptoError:
        return self.error(node, f"`{ast.unparse(node)}` is not supported in a pypto kernel body")

    def _attribute_or_subscript(self, node: ast.Attribute | ast.Subscript):
        """`x.shape[0]` and the like, known at compile time: a constant; else `t[i, j]` or
        `t[r0:r1, c0:c1]`, a read of a tensor or tile."""
        if self.is_static(node):
            return self._const(self.static(node), node)
        if isinstance(node, ast.Subscript):
            return self._subscript_read(node)
        raise self._unsupported(node)

    def _binop(self, node: ast.BinOp):
        """`a + b` and the other arithmetic operators: their operator's call."""
        if type(node.op) not in _BINOPS:
            raise self._unsupported(node)
        lhs, rhs = self.expr(node.left), self.expr(node.right)
        return self._call_op(_BINOPS[type(node.op)], [lhs, rhs], {}, node)

    def _unary(self, node: ast.UnaryOp):
        """`not c` (a condition), and `-x`: a constant folded, else x * -1."""
        if isinstance(node.op, ast.Not):
            return self._condition_expr(node)
        if not isinstance(node.op, ast.USub):
            raise self._unsupported(node)
        operand = self.expr(node.operand)
        if isinstance(operand, Const):
            return Const(-operand.value, operand.type, operand.span)
        return self._call_op("mul", [operand, self._const(-1, node)], {}, node)

    def _if_expr(self, node: ast.IfExp):
        """`x if cond else y` with a compile-time condition: the branch it picks."""
        if not self.is_static(node.test):
            raise self.error(node, "`x if cond else y` needs a compile-time condition")
        return self.expr(node.body if self.static(node.test) else node.orelse)

    def _condition_expr(self, node: ast.AST):
        """`a < b`, `a and b`, `not a` on scalars: BOOL conditions (folded when constant)."""
        if self.is_static(node):
            return self._const(self.static(node), node)
        if isinstance(node, ast.UnaryOp):
            return self._call_op("not_", [self.condition(node.operand)], {}, node)
        if isinstance(node, ast.BoolOp):
            op = "and_" if isinstance(node.op, ast.And) else "or_"
            value = self.condition(node.values[0])
            for item in node.values[1:]:
                value = self._call_op(op, [value, self.condition(item)], {}, node)
            return value
        if len(node.ops) != 1 or type(node.ops[0]) not in _CMP_CODES:
            raise self.error(node, f"`{ast.unparse(node)}` is not supported: compare two "
                             "values with one of == != < <= > >=")
        lhs, rhs = self.scalar(node.left), self.scalar(node.comparators[0])
        return self._call_op("cmp", [lhs, rhs], {"cmp_type": _CMP_CODES[type(node.ops[0])]},
                             node)

    def _subscript_read(self, node: ast.Subscript):
        """`t[r0:r1, c0:c1]` reads a window: `pl.slice(t, [r1 - r0, c1 - c0], [r0, c0])`;
        `t[i, j]` reads one element: `pl.read(t, [i, j])`."""
        base = self.expr(node.value)
        if isinstance(base.type, TaskIdArrayType):  # `tids[i]`: pl.array.get_element
            if isinstance(node.slice, (ast.Slice, ast.Tuple)):
                raise self.error(node, "an array of task ids takes one index: `tids[i]`")
            return self._call_op("array.get_element", [base, self.scalar(node.slice)], {}, node)
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

    def _unalias(self, name: str) -> None:
        """`name` is rebound: it stops naming a tensor it named through a write, and names
        that stood for it through a write (`a = pl.store(..., name)`) stand for nothing."""
        self.aliases.pop(name, None)
        for alias in [a for a, dst in self.aliases.items() if dst == name]:
            del self.aliases[alias]

    def _name(self, node: ast.Name):
        if node.id in self.aliases:
            node = ast.copy_location(ast.Name(self.aliases[node.id], ast.Load()), node)
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
            return self._stub_call(fn, node)
        if isinstance(fn, DslBuiltin):
            return self._builtin_call(fn, node)
        if fn is not None and getattr(fn, "__pypto_kernel__", False):
            return self._func_call(fn, node)
        if fn is not None and self.is_static(node):
            return self._const(self.static(node), node)
        elsewhere = None
        if isinstance(func, ast.Attribute):
            base = self._callable(func.value)
            elsewhere = _elsewhere(base, func.attr)
        raise self.error(node, f"`{ast.unparse(func)}` is not a pypto operator or kernel",
                         hint=elsewhere or "operators are spelled pl.<op>(...); kernels must be "
                                           "decorated with @pl.jit.incore")

    def _stub_call(self, fn: OpStub, node: ast.Call):
        """`pl.<op>(...)`, `pl.tile.<op>(...)`: the operator's call."""
        if fn.name == "get_block_idx":
            self.check_block_idx(node)
        elif fn.name in LAUNCH_QUERIES and (
                self.func_type is not FunctionType.Orchestration or self.in_scope):
            raise self.error(node, f"pl.{fn.name}() is the platform's core count for sizing a "
                             "launch in orchestration code; a kernel reads the launch it runs "
                             "in with pl.get_block_num()",
                             hint="call it outside the pl.spmd / pl.at block (its count can be "
                                  "passed in), or read pl.get_block_num()")
        elif fn.name == "dump_tag":
            self.check_dump_tag(node)
        elif fn.name.startswith("array.") and (
                self.func_type is not FunctionType.Orchestration or self.in_scope):
            raise self.error(node, f"{fn.written} builds an array of task ids in a "
                             "@pl.jit (orchestration) function, outside pl.at blocks")
        op = get_op(fn.name)
        if fn.name in POP_OPS:
            return self._pop_call(op, node)
        if fn.name in ("full", "ci", "random") and fn.spelling in ("", "arange") and self.in_scope:
            # `pl.full` (`pl.ci`, `pl.arange`, `pl.random`) in a pl.at block is a tensor, as
            # upstream; `pl.tile.full` the tile.
            op = get_op(f"tensor.{fn.name}")
        call = self._op_call(op, node)
        if fn.name == "slice":
            self.check_view_valid_shape(call, node)
        if fn.level is not None or fn.scalar:
            self._check_spelling(fn, call, node)
        return call

    def _pop_call(self, op: OpDef, node: ast.Call):
        """`pl.tpop_from_aic(shape=, dtype=, split=)`, the shape and dtype from the
        statement's tile annotation where the call leaves them out."""
        bound = self._bound_arguments(op, node)
        annotation = self.pop_annotation
        attrs = {p.name: self._attr_value(self.static(bound[p.name]), bound[p.name])
                 for p in op.params if p.name in bound}
        if annotation is not None:
            attrs.setdefault("shape", annotation.shape)
            attrs.setdefault("dtype", annotation.dtype)
        return self._call_op(op.name, [], attrs, node)

    def _builtin_call(self, fn: DslBuiltin, node: ast.Call):
        """The DSL builtins that are values: pl.const, pl.submit / pl.spmd_submit, pl.dim,
        pl.system.task_dummy."""
        if isinstance(fn, RefusedName):
            raise self.error(node, f"pl.{fn.name} is not supported here: {fn.why}",
                             cls=TypeCheckError)
        if fn.name == "const":
            return self._pl_const(node)
        if fn.name in ("submit", "spmd_submit"):
            return self.submit_call(node, fn.name)
        if fn.name == "dim":
            return self._dim(node)
        if fn.name == "task_dummy":
            return self.task_dummy(node)
        if fn.name == "expand_clone":
            return self._expand_clone(node)
        if fn.name == "write":
            raise self.error(node, "pl.write(t, [i, j], value) is a statement of its own: it "
                             "rebinds `t` to the written value",
                             hint="write `pl.write(t, [i, j], value)` on a line of its own")
        if fn.name in REGION_BUILTINS:
            return self.region_builtin(fn.name, node)
        if fn.name == "no_dep":
            raise self.error(node, "pl.no_dep(t) marks an argument of a kernel call "
                             "(`self.kernel(pl.no_dep(t), ...)`)",
                             hint="for a pl.at block's task, write "
                                  "`pl.at(..., no_dep_args=[t])`")
        raise self.error(node, f"pl.{fn.name}(...) cannot be used as a value here")

    def _check_spelling(self, fn: OpStub, call, node: ast.Call) -> None:
        """A level-specific spelling (`pl.tile.add`, `pl.tensor.read`) takes operands of its
        level; a scalar spelling (`pl.tile.adds`) a scalar second operand."""
        operands = list(call.args) if isinstance(call, Call) else []
        if fn.scalar and not (len(operands) == 2
                              and isinstance(operands[1].type, ScalarType)):
            raise self.error(node, f"{fn.written} takes a scalar as its second operand",
                             hint=f"for two {fn.level or 'value'}s use pl.{fn.name}",
                             cls=TypeCheckError)
        kinds = [o.type for o in operands
                 if isinstance(getattr(o, "type", None), (TensorType, TileType))]
        if not kinds and isinstance(getattr(call, "type", None), (TensorType, TileType)):
            kinds = [call.type]
        want = TileType if fn.level == "tile" else TensorType
        for t in kinds[:1]:
            if fn.level is not None and not isinstance(t, want):
                other = "tensor" if fn.level == "tile" else "tile"
                raise self.error(node, f"{fn.written} works on {fn.level}s, got {describe(t)}",
                                 hint=f"use pl.{fn.name} (it takes either), or the "
                                      f"pl.{other} spelling", cls=TypeCheckError)

    def index_op(self, name: str, lhs, rhs, node):
        """`lhs <name> rhs` on index scalars, folded when both are constants."""
        return self._call_op(name, [lhs, rhs], {}, node)

    def _dim(self, node: ast.Call):
        """`pl.tensor.dim(t, axis)`: `t.shape[axis]`, a constant of the specialised kernel (a
        pl.dynamic dimension is an error, as reading it through `t.shape` is)."""
        if node.keywords or len(node.args) != 2:
            raise self.error(node, "write pl.tensor.dim(t, axis)")
        shape = ast.copy_location(ast.Attribute(node.args[0], "shape", ast.Load()), node)
        read = ast.copy_location(ast.Subscript(shape, node.args[1], ast.Load()), node)
        value = self.static(read)
        if not isinstance(value, int):
            raise self.error(node, "pl.tensor.dim(t, axis) takes one axis")
        return self._const(value, node)

    def _expand_clone(self, node: ast.Call):
        """`pl.tensor.expand_clone(src, target)` (upstream's): src broadcast along the one
        axis where it has size 1 and target does not, written into target, which is the
        result: `pl.assemble(target, pl.col_expand(target, src), [0, 0])` for a [1, C]
        src (pl.row_expand for [R, 1]; src itself when the shapes are equal)."""
        args = dict(zip(("src", "target"), node.args, strict=False))
        args.update((kw.arg, kw.value) for kw in node.keywords)
        if set(args) != {"src", "target"} or len(node.args) + len(node.keywords) != 2:
            raise self.error(node, "write pl.tensor.expand_clone(src, target)")
        src, target = self.expr(args["src"]), self.expr(args["target"])
        for what, t in (("src", src.type), ("target", target.type)):
            if not isinstance(t, TensorType):
                raise self.error(node, f"pl.tensor.expand_clone: {what} must be a tensor",
                                 cls=TypeCheckError)
        s, t = src.type, target.type
        if s.dtype != t.dtype or len(s.shape) != len(t.shape):
            raise self.error(node, f"pl.tensor.expand_clone: src {s.dtype.name} "
                             f"{list(s.shape)} and target {t.dtype.name} {list(t.shape)} differ "
                             "in dtype or rank", cls=TypeCheckError)
        axes = [i for i, (a, b) in enumerate(zip(s.shape, t.shape, strict=True)) if a != b]
        if any(s.shape[i] != 1 for i in axes) or len(axes) > 1:
            raise self.error(node, f"pl.tensor.expand_clone broadcasts src along one axis "
                             f"where it has size 1: {list(s.shape)} cannot expand to "
                             f"{list(t.shape)}", cls=TypeCheckError,
                             hint="pl.expands fills a tensor with one value")
        value = src
        if axes:  # [1, C] -> [R, C] is a column broadcast, [R, 1] -> [R, C] a row broadcast
            value = self._call_op(("col_expand", "row_expand")[axes[0]], [target, src], {},
                                  node)
        span = self.source.span(node)
        zeros = ExprList(tuple(Const(0, INDEX, span) for _ in t.shape), span)
        return self._call_op("assemble", [target, value, zeros], {}, node)

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
        if self.func_type not in (FunctionType.Orchestration, FunctionType.Group):
            raise self.error(node, "kernels are called from a @pl.jit (orchestration) function")
        if self.in_scope and not self.spmd_dispatch:
            raise self.error(node, "call kernels outside `pl.at`: each kernel call is its own task")
        arg_nodes = node.args if arg_nodes is None else arg_nodes
        untracked = self._no_dep_arguments(arg_nodes)
        args = [self.expr(self._unwrapped(a)) for a in arg_nodes]
        span = self.source.span(node)
        callee = self.resolve_callee(callee_ref, args, span)
        self.callee_types[callee.name] = callee.func_type
        if len(args) != len(callee.params):
            raise self.error(node, f"`{callee.name}` takes {len(callee.params)} arguments, "
                             f"got {len(args)}", cls=TypeCheckError)
        for i, (arg, p) in enumerate(zip(args, callee.params, strict=True)):
            if not same_value_type(arg.type, p.var.type) and _scalar_widens(arg.type,
                                                                           p.var.type):
                args[i] = self._call_op("cast", [arg], {"dtype": p.var.type.dtype}, node)
            elif not same_value_type(arg.type, p.var.type):
                raise self.error(node, f"argument `{p.var.name}` of `{callee.name}` expects "
                                 f"{describe(p.var.type)}, got {describe(arg.type)}",
                                 cls=TypeCheckError)
        rtype = callee.returns[0] if len(callee.returns) == 1 else TupleType(tuple(callee.returns))
        return FuncCall(callee.name, tuple(args), rtype, span, manual=self.manual,
                        no_dep_args=untracked)

    def _is_no_dep(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        fn = self._callable(node.func)
        return isinstance(fn, DslBuiltin) and fn.name == "no_dep"

    def _unwrapped(self, node: ast.AST) -> ast.AST:
        """A kernel-call argument without its `pl.no_dep(...)` marker."""
        return node.args[0] if self._is_no_dep(node) else node

    def _no_dep_arguments(self, arg_nodes) -> tuple[Var, ...]:
        """The tensors a kernel call passes as `pl.no_dep(t)`: left out of dependency
        inference for this task, as `no_dep_args=[t]` says on a pl.at block."""
        marked = []
        for node in arg_nodes:
            if not self._is_no_dep(node):
                continue
            if len(node.args) != 1 or node.keywords:
                raise self.error(node, "pl.no_dep(t) marks one tensor argument")
            marked.append(self.tensor_var(node.args[0], "pl.no_dep(t) marks a tensor"))
        return tuple(marked)

    def _op_call(self, op: OpDef, node: ast.Call):
        bound = self._bound_arguments(op, node)
        operands, attrs = [], {}
        runtime_extents = None  # pl.slice(t, [16, n], ...) of a tensor: see _runtime_window
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
                operands.append(self._operand(op, p.name, arg))
            elif p.kind == "index_list":
                operands.append(self._index_list(op, p.name, arg))
            elif p.name == "valid_shape" and not self.is_static(arg):
                attrs[p.name] = self._runtime_valid_shape(arg, op)
            elif op.name == "slice" and p.name == "shape" and not self.is_static(arg):
                runtime_extents = self._runtime_valid_shape(arg, op)
            else:
                attrs[p.name] = self._attr_value(self.static(arg), arg)
        if runtime_extents is not None:
            attrs.update(self._runtime_window(operands, runtime_extents, attrs, node))
        return self._call_op(op.name, operands, attrs, node)

    def _operand(self, op: OpDef, name: str, arg: ast.AST):
        """A value operand of pl.<op> (the task id an array entry is set to, by its name)."""
        if op.name == "array.update_element" and name == "value":
            return self.task_id(arg, "an array")
        return self.expr(arg)

    def _index_list(self, op: OpDef, name: str, arg: ast.AST):
        """An index-list operand (`[i, 0]`) of pl.<op>."""
        if op.name == "read" and not isinstance(arg, (ast.List, ast.Tuple)):
            # `pl.read(t, i)`: the one index of a rank-1 tensor
            arg = ast.copy_location(ast.List([arg], ast.Load()), arg)
        if not isinstance(arg, (ast.List, ast.Tuple)):
            raise self.error(arg, f"`{name}` of pl.{op.name} must be a list like [i, 0]")
        return self.expr(arg)

    def _bound_arguments(self, op: OpDef, node: ast.Call) -> dict[str, ast.AST]:
        """The call's arguments by parameter name (keywords through their aliases)."""
        names = [p.name for p in op.params]
        bound: dict[str, ast.AST] = {}
        if len(node.args) > len(names):
            raise self.error(node, f"pl.{op.name} takes at most {len(names)} arguments")
        # Fewer positional arguments than parameters: the rest come by keyword or default.
        positional = list(zip(names, node.args, strict=False))
        if op.name == "store" and len(node.args) == 4 and isinstance(node.args[3], ast.List):
            positional[3] = ("shapes", node.args[3])  # upstream's pl.store(t, offsets, out, shape)
        if op.name == "scatter_update" and len(node.args) == 3 and any(
                kw.arg == "dim" for kw in node.keywords):
            positional = [("input", node.args[0]), ("index", node.args[1]),
                          ("src", node.args[2])]  # upstream's (input, index, src, dim=-2)
        for name, arg in positional:
            bound[name] = arg
        aliases = {a: p.name for p in op.params for a in p.aliases}
        for kw in node.keywords:
            name = aliases.get(kw.arg, kw.arg)
            if name not in names:
                raise self.error(node, f"pl.{op.name} has no parameter `{kw.arg}`",
                                 hint=f"parameters: {', '.join(names)}")
            if name in bound:
                raise self.error(node, f"pl.{op.name} got `{name}` twice")
            bound[name] = kw.value
        return bound

    def _runtime_window(self, operands: list, extents: tuple, attrs: dict, node) -> dict:
        """`pl.slice(t, [16, n], [r, 0])` with a runtime extent n, of a tensor in orchestration
        code: the window is as wide as t allows from its offset (to its end, from a constant
        offset), and n is its valid part: valid_shape=[16, n], the view the task is handed."""
        x, offsets = operands
        if not (isinstance(x.type, TensorType) and self.func_type is FunctionType.Orchestration
                and not self.in_scope):
            raise self.error(node, "a slice's extents must be constants, except for a view of "
                             "a tensor in orchestration code (its valid part)",
                             hint="in a kernel, give the runtime extent to the pl.load "
                                  "(valid_shape=[16, n])", cls=TypeCheckError)
        if attrs.get("valid_shape") is not None:
            raise self.error(node, "a slice with runtime extents takes no valid_shape: the "
                             "runtime extents are its valid part", cls=TypeCheckError)
        if len(extents) != len(x.type.shape) or len(offsets.items) != len(extents):
            raise self.error(node, f"pl.slice of a rank-{len(x.type.shape)} tensor needs one "
                             "extent and one offset per dimension", cls=TypeCheckError)
        shape = tuple(e if isinstance(e, int) else
                      d - o.value if isinstance(o, Const) else d
                      for e, d, o in zip(extents, x.type.shape, offsets.items, strict=True))
        return {"shape": shape, "valid_shape": extents}

    def _runtime_valid_shape(self, node: ast.AST, op) -> tuple:
        """`valid_shape=[16, vlen]` with a runtime extent: constants stay ints, the rest are
        integer index expressions; the tile's valid region is then known at run time."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(node, f"valid_shape of pl.{op.name} must be a list like [16, n]")
        extents = []
        for item in node.elts:
            if self.is_static(item):
                extents.append(self.static(item))
                continue
            value = self.scalar(item)
            if value.type.dtype.is_float or value.type.dtype is DataType.BOOL:
                raise self.error(item, f"the valid extent `{ast.unparse(item)}` must be an "
                                 "integer", cls=TypeCheckError)
            extents.append(value)
        return tuple(extents)

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
                and not (operands and all(isinstance(o.type, ScalarType) for o in operands))
                # The control plane reads elements of its input tensors (codegen checks
                # that no task writes them).
                and not (name == "read" and operands and isinstance(operands[0].type,
                                                                    TensorType))
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
        packed.check_operands(name, operands, span)
        try:
            rtype = op.infer(tuple(operands), attrs, span)
        except PyptoError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise self.error(node, f"invalid arguments to pl.{name}: {exc}",
                             cls=TypeCheckError) from None
        packed.check_call(name, operands, rtype, attrs, span)
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
        return _specialised_tensor(annotation, arg_type, name, error)
    if isinstance(annotation, (TensorType, ScalarType, TileType)):
        arg_type = _as_declared(annotation, arg_type)
        if arg_type is not None and not same_value_type(annotation, arg_type) \
                and not _scalar_widens(arg_type, annotation):
            raise error(f"parameter `{name}` expects {describe(annotation)}, got "
                        f"{describe(arg_type)}")
        return annotation
    if annotation in (int, float):
        return ScalarType(DataType.INT64 if annotation is int else DataType.FP32)
    if isinstance(annotation, DataType):  # `scale: pl.FP32`, upstream's scalar spelling
        if arg_type is not None and not isinstance(arg_type, ScalarType):
            raise error(f"parameter `{name}` is a {annotation.name} scalar, got "
                        f"{describe(arg_type)}")
        if arg_type is not None and arg_type.dtype.is_float and not annotation.is_float:
            raise error(f"parameter `{name}` is a {annotation.name} scalar, got a float")
        return ScalarType(annotation)
    raise error(f"parameter `{name}` has an unsupported annotation {annotation!r}")


def _as_declared(annotation, arg_type):
    """A tensor argument as the annotation's dtype where its torch dtype stores that dtype's
    elements (a torch.uint8 tensor of codes for a pl.HF8 parameter)."""
    if isinstance(annotation, TensorType) and isinstance(arg_type, TensorType) and \
            stands_for(arg_type.dtype, annotation.dtype):
        return _held(arg_type, annotation.dtype)
    return arg_type


def _held(arg_type: TensorType, declared: DataType) -> TensorType:
    """A tensor argument as the `declared` dtype its torch dtype stores: HF8's uint8 codes
    keep their shape, a 4-bit type's bytes hold two elements each (the last dimension
    doubles; a float4_e2m1fn_x2 tensor is counted in elements already)."""
    if declared.packed and arg_type.dtype is not declared:
        return TensorType(declared.logical_shape(arg_type.shape), declared)
    return replace(arg_type, dtype=declared)


def _specialised_tensor(annotation: TensorSpec, arg_type, name: str, error) -> TensorType:
    """The argument's tensor type, where it fits the annotation's rank, fixed dimensions and
    dtype (`pl.Tensor[[ROWS, 64], ...]` with `ROWS` a pl.dynamic dimension)."""
    if not isinstance(arg_type, TensorType):
        if arg_type is None:
            raise error(f"parameter `{name}` has dynamic dimensions; call the kernel with "
                        "tensors to specialise it")
        raise error(f"parameter `{name}` expects a tensor, got {describe(arg_type)}")
    if annotation.dtype is not None and annotation.dtype.packed and \
            stands_for(arg_type.dtype, annotation.dtype):
        arg_type = _held(arg_type, annotation.dtype)  # bytes holding two elements each
    if len(annotation.shape) != len(arg_type.shape):
        raise error(f"parameter `{name}` expects rank {len(annotation.shape)}, got "
                    f"{list(arg_type.shape)}")
    for want, got in zip(annotation.shape, arg_type.shape, strict=True):
        if isinstance(want, int) and want != got:
            raise error(f"parameter `{name}` expects shape {_shape_text(annotation.shape)}, "
                        f"got {list(arg_type.shape)}")
    if annotation.dtype is None:
        return arg_type
    if not stands_for(arg_type.dtype, annotation.dtype):
        raise error(f"parameter `{name}` expects {annotation.dtype.name}, got "
                    f"{arg_type.dtype.name}")
    return _held(arg_type, annotation.dtype)  # HF8 given as its uint8 codes


def parse_signature(fndef: ast.FunctionDef, parser: FunctionParser, arg_types: list | None,
                    skip_self: bool) -> FunctionSignature:
    """Parameters (with directions) and declared returns of a function definition."""
    params_ast = _plain_parameters(fndef, parser, skip_self)
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
        packed.check_value(f"parameter `{a.arg}`", ptype, parser.source.span(a))
        params.append(Param(Var(a.arg, ptype, parser.source.span(a)), direction))
    returns = _declared_returns(fndef, parser, params, dynamic)
    return FunctionSignature(fndef.name, tuple(params), returns, dynamic)


def _plain_parameters(fndef: ast.FunctionDef, parser: FunctionParser,
                      skip_self: bool) -> list[ast.arg]:
    """The function's parameters, all plain positional ones (`self` first on a method,
    left out)."""
    args = fndef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise parser.error(fndef, "kernel parameters must be plain positional parameters")
    params_ast = list(args.args)
    for a, default in zip(params_ast[len(params_ast) - len(args.defaults):], args.defaults,
                          strict=True):
        annotation = parser.static(a.annotation) if a.annotation is not None else None
        if parser.static(default) is not RUNTIME or not isinstance(
                annotation, (DataType, ScalarType)):
            raise parser.error(default, f"`{a.arg}` has a default: the only default a kernel "
                               "parameter takes is pl.RUNTIME, on a scalar (`n: pl.INDEX = "
                               "pl.RUNTIME`: its value passed at each run)")
    if skip_self:
        if not params_ast or params_ast[0].arg != "self":
            raise parser.error(fndef, "a @pl.function method takes `self` first")
        params_ast = params_ast[1:]
    return params_ast


def _declared_returns(fndef: ast.FunctionDef, parser: FunctionParser, params: list,
                      dynamic: dict) -> tuple | None:
    """The return annotation's types (a tuple[...] is several), pl.dynamic dimensions
    bound from the parameters; None without an annotation."""
    if fndef.returns is None:
        return None
    ann = parser.static(fndef.returns)
    items = getattr(ann, "__args__", None) if getattr(ann, "__origin__", None) is tuple else None
    returns = tuple(items) if items is not None else (ann,)
    bound = _dynamic_bindings(params, dynamic, parser, fndef)
    return tuple(_bind_dynamic(r, bound) for r in returns)


def _dynamic_bindings(params, dynamic: dict, parser, fndef) -> dict[str, int]:
    """Each pl.dynamic dimension's size, from the parameters' (call-completed) shapes; one
    name bound to two sizes is an error."""
    bound: dict[str, int] = {}
    for p in params:
        for axis, name in dynamic.get(p.var.name, {}).items():
            size = p.var.type.shape[axis]
            if bound.setdefault(name, size) != size:
                raise parser.error(fndef, f"pl.dynamic dimension `{name}` is {bound[name]} "
                                   f"and {size} (parameter `{p.var.name}`, axis {axis})",
                                   cls=TypeCheckError)
    return bound


def _bind_dynamic(annotation, bound: dict[str, int]):
    """A return annotation with pl.dynamic dimensions as the tensor type the parameters
    bind it to (left as written when a dimension or the dtype is unbound)."""
    if not isinstance(annotation, TensorSpec) or annotation.shape is None \
            or annotation.dtype is None:
        return annotation
    shape = [bound.get(d.name) if isinstance(d, DynamicDim) else d for d in annotation.shape]
    return annotation if None in shape else TensorType(tuple(shape), annotation.dtype)


def _scalar_widens(arg, param) -> bool:
    """A scalar argument a scalar parameter takes as it is: integers of any width for an
    integer, floats for a float (kernels receive integers as int64 and floats as double),
    and an integer for a BOOL (non-zero is true: upstream's `is_first = pl.yield_(1)`)."""
    if not (isinstance(arg, ScalarType) and isinstance(param, ScalarType)):
        return False
    kind = [(t.dtype is DataType.BOOL, t.dtype.is_float) for t in (arg, param)]
    return kind[0] == kind[1] or kind == [(False, False), (True, False)]


def _write_destination(value) -> Var | None:
    """The tensor variable a `pl.store` / `pl.assemble` call writes into, else None."""
    if isinstance(value, Call):
        dst = write_destination(value)
        if isinstance(dst, Var) and isinstance(dst.type, TensorType):
            return dst
    return None


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


def _shape_text(shape) -> str:
    return "[" + ", ".join(d.name if isinstance(d, DynamicDim) else str(d) for d in shape) + "]"


# ---------------------------------------------------------------------- @pl.program text


def parse_program(source: str, filename: str = "<pl.parse>", namespace: dict | None = None,
                  line_offset: int = 0, entry_args: list | None = None,
                  entry_values: list | None = None, by_value: bool = False) -> Program:
    """Parse `@pl.program` class source (the printer's form) into a Program.  An entry
    with pl.dynamic dimensions needs `entry_args` (the call's IR types; else
    `DynamicProgram` is raised); other pl.dynamic functions take their calls' types.
    An entry orchestration that needs a constant where it has an element of an input
    tensor (`pl.tensor.read(config, [3])` as a tensor extent) raises `DynamicProgram`
    (by_value) when the caller takes that (`by_value`: `pl.program` makes it a
    ProgramTemplate), and with `entry_values` (the call's arguments) reads those elements
    as constants and starts by checking them (`pl.expect_value`).
    `pl.` names are read in the DSL's vocabulary (the text needs no import)."""
    module = _python_module(source, filename, line_offset)
    ns = ChainMap({"pl": vocabulary, "tuple": tuple}, namespace or {}, vars(builtins))
    info = SourceInfo(filename, line_offset)
    classes = [n for n in module.body if isinstance(n, ast.ClassDef)]
    functions = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if not classes and len(functions) == 1:
        return parse_standalone(functions[0], info, ns)
    if len(classes) != 1:
        raise ParseContentError(
            "expected exactly one `@pl.program` class, or one `@pl.function`, got "
            f"{len(classes)} class(es) and {len(functions)} function(s)",
            Span(filename, 1 + line_offset))
    return _ProgramParser(classes[0], info, ns, entry_args).parse(entry_values, by_value)


class _ProgramParser:
    """One `@pl.program` class: each method's signature first, then the kernels' bodies
    and the orchestration's; a pl.dynamic kernel is typed and parsed at its first call."""

    def __init__(self, cls: ast.ClassDef, info: SourceInfo, ns: ChainMap,
                 entry_args: list | None) -> None:
        self.cls, self.info, self.ns = cls, info, ns
        self.methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
        self.ftypes = {
            m.name: _function_type(m, FunctionParser(info, ns, FunctionType.InCore, None))
            for m in self.methods}
        self.entry = _entry_name(cls, self.methods, self.ftypes)
        self.signatures: dict[str, tuple[FunctionSignature, FunctionType, ast.FunctionDef]] = {}
        self.deferred: dict[str, ast.FunctionDef] = {}  # pl.dynamic kernels: typed by calls
        for m in self.methods:
            parser = FunctionParser(info, ns, self.ftypes[m.name], None)
            signature = _method_signature(m, parser, self.entry, entry_args, cls.name)
            if signature is None:
                self.deferred[m.name] = m
            else:
                self.signatures[m.name] = (signature, self.ftypes[m.name], m)
        self.standalone: dict[str, Function] = {}
        self.parsed: dict[str, Function] = {}
        self.function_names = set(self.ftypes)
        self.groups: dict[str, list[Function]] = {}

    def parse(self, entry_values: list | None = None, by_value: bool = False) -> Program:
        # Kernels first: a kernel without a return annotation returns what its return
        # statement does, which the orchestration's call sites need.
        signatures = self.signatures
        for name in sorted(signatures,
                           key=lambda n: signatures[n][1] is FunctionType.Orchestration):
            if name in self.parsed:
                continue  # a pl.dynamic kernel parsed at its first call
            sig, ftype, m = signatures[name]
            parser = FunctionParser(self.info, self.ns, ftype, self.resolve)
            parser.function_names = self.function_names
            parser.regions_allowed = True
            if name == self.entry and ftype is FunctionType.Orchestration:
                self._read_inputs(parser, sig, m, entry_values, by_value)
            self.parsed[name] = parser.parse(m, sig)
            self.groups[name] = parser.outlined  # its `with pl.cluster():` blocks
            if parser.value_reads:
                self.parsed[name] = _with_expected_values(self.parsed[name], parser.value_reads)
            signatures[name] = (replace(sig, returns=self.parsed[name].returns), ftype, m)
        functions = list(self.standalone.values())
        for m in self.methods:  # a cluster's Group just before the function calling it
            functions += self.groups.get(m.name, []) + (
                [self.parsed[m.name]] if m.name in self.parsed else [])
        return Program(self.cls.name, tuple(functions), self.entry)

    @staticmethod
    def _read_inputs(parser: FunctionParser, sig: FunctionSignature, m: ast.FunctionDef,
                     entry_values: list | None, by_value: bool) -> None:
        """The entry orchestration reads elements of its input tensors as constants with
        the call's values, else may ask for them where the caller takes that (by_value,
        parse_program)."""
        if entry_values is not None:
            parser.input_values = {p.var.name: v
                                   for p, v in zip(sig.params, entry_values, strict=False)
                                   if isinstance(p.var.type, TensorType)}
        elif by_value:
            parser.value_dependent = _reads_inputs(m, sig)

    def resolve(self, ref, args, span) -> Callee:
        """The callee of a call in the program: a module-level @pl.function or a method."""
        if getattr(ref, "__pypto_kernel__", False):  # a module-level @pl.function
            fn = self.standalone.get(ref.__name__)
            if fn is None:
                fn = self.standalone[ref.__name__] = ref._parse([a.type for a in args],
                                                                self.resolve)
            return Callee(fn.name, fn.params, fn.returns)
        if isinstance(ref, str) and ref in self.deferred:
            self._parse_deferred(ref, [a.type for a in args])
        if not isinstance(ref, str) or ref not in self.signatures:
            raise ParseError(f"program has no function `{ref}`", span)
        sig = self.signatures[ref][0]
        return Callee(sig.name, sig.params, sig.returns or (), self.ftypes[ref])

    def _parse_deferred(self, name: str, arg_types: list) -> None:
        """A pl.dynamic kernel, specialised to the types of its first call."""
        m = self.deferred.pop(name)
        parser = FunctionParser(self.info, self.ns, self.ftypes[name], self.resolve)
        sig = _specialised(parse_signature(m, parser, arg_types, skip_self=True))
        self.parsed[name] = parser.parse(m, sig)
        self.signatures[name] = (replace(sig, returns=self.parsed[name].returns),
                                 self.ftypes[name], m)


def _python_module(source: str, filename: str, line_offset: int) -> ast.Module:
    """`source` parsed as Python; invalid Python is a ParseSyntaxError at its line."""
    try:
        return ast.parse(source, filename)
    except SyntaxError as exc:
        raise ParseSyntaxError(f"invalid Python: {exc.msg}",
                               Span(filename, syntax_error_line(exc) + line_offset)) from None


def _method_signature(m: ast.FunctionDef, parser: FunctionParser, entry: str | None,
                      entry_args: list | None, program: str) -> FunctionSignature | None:
    """A method's signature, the entry's specialised to `entry_args`; None for a kernel
    with pl.dynamic dimensions, typed by its calls."""
    if _has_dynamic_dims(m, parser):
        if m.name != entry:
            return None
        if entry_args is None:
            raise DynamicProgram(program)
    args = entry_args if m.name == entry else None
    sig = parse_signature(m, parser, args, skip_self=True)
    return _specialised(sig) if args else sig


def _entry_name(cls: ast.ClassDef, methods: list[ast.FunctionDef],
                ftypes: dict[str, FunctionType]) -> str | None:
    """The program's entry: `@pl.program(entry=...)`, else its one orchestration function,
    else the method named like the class, else the first method."""
    named = [kw.value.value for deco in cls.decorator_list if isinstance(deco, ast.Call)
             for kw in deco.keywords if kw.arg == "entry" and isinstance(kw.value, ast.Constant)]
    if named:
        return named[-1]
    orch = [name for name, t in ftypes.items() if t is FunctionType.Orchestration]
    if len(orch) == 1:
        return orch[0]
    if cls.name in ftypes:
        return cls.name
    return methods[0].name if methods else None


def _reads_inputs(m: ast.FunctionDef, sig: FunctionSignature) -> bool:
    """Whether the function reads an element of a tensor parameter at a constant index
    (`pl.tensor.read(config, [3])`): a value its program may be specialised for."""
    tensors = {p.var.name for p in sig.params if isinstance(p.var.type, TensorType)}
    for node in ast.walk(m):
        if (isinstance(node, ast.Call) and len(node.args) == 2
                and isinstance(node.func, ast.Attribute) and node.func.attr == "read"
                and isinstance(node.args[0], ast.Name) and node.args[0].id in tensors):
            index = node.args[1]
            items = index.elts if isinstance(index, (ast.List, ast.Tuple)) else [index]
            if all(isinstance(i, ast.Constant) for i in items):
                return True
    return False


def _with_expected_values(fn: Function, reads: list) -> Function:
    """`fn` starting with a check of each input element it was specialised for:
    `_expected_k = pl.tensor.read(t, [i]); pl.expect_value(_expected_k, value)`."""
    params = {p.var.name: p.var for p in fn.params}
    taken = {p.var.name for p in fn.params} | set(_bound_names(fn.body))
    guards: list = []
    for k, (param, indices, value) in enumerate(reads):
        tensor = params[param]
        name = fresh_name(f"_expected_{k}", taken)
        read = make_call("read", tensor, ExprList(tuple(Const(i, INDEX) for i in indices)),
                         span=fn.span)
        var = Var(name, read.type, fn.span)
        guards.append(Assign((var,), read, fn.span))
        guards.append(expect_value(var, value, fn.span))
    return replace(fn, body=tuple(guards) + tuple(fn.body))


def _bound_names(body) -> set[str]:
    names: set[str] = set()
    for stmt in body:
        names.update(defs(stmt))
        for inner in ("body", "then_body", "else_body"):
            names.update(_bound_names(getattr(stmt, inner, ())))
    return names


def deserialize(data: bytes) -> Program | Function:
    """The program or function `ir.serialize` wrote (its printed form), parsed back."""
    return parse_program(data.decode("utf-8"), "<ir.deserialize>")

def _assigned_once(fndef: ast.FunctionDef) -> set[str]:
    """Names a function body binds exactly once, by a plain `name = ...` statement."""
    counts: dict[str, int] = {}
    plain: set[str] = set()
    for node in ast.walk(fndef):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
            plain.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        elif isinstance(node, (ast.NamedExpr,)):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
    return {name for name in plain if counts.get(name) == 1}


def _specialised(sig: FunctionSignature) -> FunctionSignature:
    """A program function parsed for its call's tensors: its pl.dynamic dimensions read
    (`pl.tensor.dim`, `.shape`) as that call's sizes, the values upstream reads at run
    time; another shape parses the program again."""
    return replace(sig, dynamic={}, fold_single_assignments=True)


class DynamicProgram(Exception):
    """A `@pl.program` whose entry has pl.dynamic dimensions, or uses elements of its input
    tensors as constants (`by_value`): it is parsed per call, for the call's tensors
    (`pl.program` returns a `ProgramTemplate`)."""

    def __init__(self, name: str, by_value: bool = False):
        super().__init__(name)
        self.by_value = by_value


def _has_dynamic_dims(m: ast.FunctionDef, parser: FunctionParser) -> bool:
    for a in m.args.args:
        annotation = parser.static(a.annotation) if a.annotation is not None else None
        annotation = getattr(annotation, "type", annotation)  # pl.Out[...] / pl.InOut[...]
        if isinstance(annotation, TensorSpec) and any(
                isinstance(d, DynamicDim) for d in annotation.shape or ()):
            return True
    return False


def parse_standalone(fndef: ast.FunctionDef, info: SourceInfo, namespace) -> Function:
    """A standalone `@pl.function` (no `self`; its type from the decorator, Opaque by
    default: a building block whose plane is where it is used)."""
    ftype = _function_type(fndef, FunctionParser(info, namespace, FunctionType.Opaque, None),
                           default=FunctionType.Opaque)
    parser = FunctionParser(info, namespace, ftype, _no_callees)
    return parser.parse(fndef, parse_signature(fndef, parser, None, skip_self=False))


def _no_callees(ref, args, span):
    raise ParseError(f"a standalone @pl.function calls no other function (`{ref}`)", span,
                     hint="write the functions as methods of a @pl.program class")


def _function_type(m: ast.FunctionDef, parser: FunctionParser,
                   default: FunctionType | None = None) -> FunctionType:
    for deco in m.decorator_list:
        if isinstance(deco, ast.Call):
            for kw in deco.keywords:
                if kw.arg == "role" or (kw.arg == "level"
                                        and parser.static(kw.value) is Level.HOST):
                    raise parser.error(
                        deco, f"`{m.name}` is a HOST-level function ({ast.unparse(kw)}), part "
                        "of a multi-chip (L3) program; this project compiles and runs "
                        "single-chip programs only",
                        hint="keep the chip-level orchestration and its kernels, and run "
                             "them with a ChipWorker")
                if kw.arg == "type":
                    value = parser.static(kw.value)
                    if isinstance(value, FunctionType):
                        return value
    if default is not None:
        return default
    raise parser.error(m, f"`{m.name}` needs @pl.function(type=pl.FunctionType....)")


__all__ = [
    "OpStub",
    "DslBuiltin",
    "FunctionParser",
    "SourceInfo",
    "Callee",
    "parse_signature",
    "parse_program",
    "deserialize",
]
