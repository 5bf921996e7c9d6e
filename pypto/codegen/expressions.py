"""Scalar expressions shared by every generated C++ source (their names: identifiers.py)."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.dtypes import DataType
from ..ir.errors import InternalError, LoweringError
from ..ir.nodes import Assign, AtScope, Call, Const, ExprStmt, For, If, Return, Var, While
from ..ir.ops import OpDef, get_op
from ..ir.ops.barrier import AIV_COUNT, CLUSTER_COUNT
from ..ir.printer import CMP_SYMBOLS
from ..ir.types import ScalarType, TensorType, TileType
from ..ir.visitor import IRVisitor
from .identifiers import ident

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_INDEX_CALLS = {"floordiv": "pypto_floordiv", "mod": "pypto_mod"}
_SELECT = {"min": "<", "max": ">"}  # pl.min / pl.max: lhs if lhs OP rhs else rhs
_LOGIC = {"and_": "&&", "or_": "||"}  # of conditions (BOOL scalars)
_BLOCK_FIELDS = {"get_block_idx": "block_idx", "get_block_num": "block_num"}
# pl.system.available_*_count(): constants of the platform the orchestration declares
# (codegen/cpp.py, launch_counts).
LAUNCH_COUNT_IDENTS = {AIV_COUNT: "pypto_available_aiv_count",
                       CLUSTER_COUNT: "pypto_available_cluster_count"}


def scalar_ctype(dtype: DataType) -> str:
    return "double" if dtype.is_float else "int64_t"


def expr_model(e, idents=None) -> dict:
    """The template model of a scalar expression (`idents`: C++ names of user names, and
    of the SPMD block reads by their call, "get_block_idx()" / "get_block_num()", which
    default to the simulators' `core->block_idx` / `core->block_num`, and of the vector
    lane's, "get_subblock_idx()", by default the simulators' `pto::lane_subblock()`)."""
    return _ScalarModel(idents or {}).visit_expr(e)


class _ScalarModel(IRVisitor):
    """A scalar expression as the C++ templates render it."""

    def __init__(self, idents: dict[str, str]):
        self.idents = idents

    def visit_Var(self, e: Var) -> dict:
        return {"kind": "var", "name": self.idents.get(e.name, ident(e.name))}

    def visit_Const(self, e: Const) -> dict:
        if isinstance(e.value, bool):
            return {"kind": "bool", "value": e.value}
        if isinstance(e.value, int):
            return {"kind": "int", "value": e.value}
        return {"kind": "float", "value": float(e.value)}

    def visit_Call(self, e: Call) -> dict:
        model = _call_model(e, self.idents)
        if model is None:
            return self.visit_ExprList(e)
        return model

    def visit_ExprList(self, e) -> dict:
        raise InternalError(f"no scalar C++ form for {e!r}")

    visit_FuncCall = visit_ExprList


def _call_model(e: Call, idents: dict[str, str]) -> dict | None:
    if e.op == "read" and isinstance(e.args[0].type, TensorType):
        tensor, indices = e.args  # an orchestration's read of an input tensor's element
        return {"kind": "element", "ctype": scalar_ctype(e.type.dtype),
                "elem": tensor.type.dtype.cpp_type,
                "tensor": idents.get(tensor.name, ident(tensor.name)),
                "index": [expr_model(i, idents) for i in indices.items]}
    if isinstance(e.type, ScalarType):
        if e.op == "cast":
            return _scalar_cast(e, idents)
        if e.op == "not_":
            return {"kind": "not", "operand": expr_model(e.args[0], idents)}
        if len(e.args) == 2 and (model := _binary_model(e, idents)) is not None:
            return model
    if e.op in LAUNCH_COUNT_IDENTS:  # orchestration only (the parser refuses it in kernels)
        return {"kind": "var", "name": LAUNCH_COUNT_IDENTS[e.op]}
    if e.op in _BLOCK_FIELDS:  # kernels only
        return {"kind": "var", "name": idents.get(f"{e.op}()",
                                                  f"(int64_t)core->{_BLOCK_FIELDS[e.op]}")}
    if e.op == "get_subblock_idx":  # by default the simulator kernels' lane (pto/lane.hpp)
        return {"kind": "var", "name": idents.get("get_subblock_idx()",
                                                  "(int64_t)pto::lane_subblock()")}
    return None


def _binary_model(e: Call, idents) -> dict | None:
    lhs, rhs = (expr_model(a, idents) for a in e.args)
    if e.op in _INFIX:
        return {"kind": "binop", "op": _INFIX[e.op], "lhs": lhs, "rhs": rhs}
    if e.op == "cmp":
        return {"kind": "binop", "op": CMP_SYMBOLS[e.attr("cmp_type")], "lhs": lhs,
                "rhs": rhs}
    if e.op in _LOGIC:
        return {"kind": "binop", "op": _LOGIC[e.op], "lhs": lhs, "rhs": rhs}
    if e.op in _INDEX_CALLS:
        return {"kind": "call", "fn": _INDEX_CALLS[e.op], "lhs": lhs, "rhs": rhs}
    if e.op in _SELECT:
        return {"kind": "select", "op": _SELECT[e.op], "lhs": lhs, "rhs": rhs}
    return None


# Rounding of a float scalar cast to an integer (scalars compute in double).
_SCALAR_ROUND = {"rint": "__builtin_rint", "round": "__builtin_round", "floor": "__builtin_floor",
                 "ceil": "__builtin_ceil", "trunc": None, "none": None}


def _scalar_cast(e: Call, idents) -> dict:
    """`pl.cast(s, dtype, mode)` of a scalar: integers are held as int64_t and floats as
    double, so only a float -> integer conversion computes (rounded by `mode`)."""
    src, dst, mode = e.args[0].type.dtype, e.type.dtype, e.attr("mode")
    fn = None
    if src.is_float and not dst.is_float:
        if mode not in _SCALAR_ROUND:
            raise LoweringError(f"a scalar cast to {dst.name} cannot round with mode "
                                f"{mode!r}", e.span, hint="use rint, round, floor, ceil or trunc")
        fn = _SCALAR_ROUND[mode]
    return {"kind": "cast", "ctype": scalar_ctype(dst), "fn": fn,
            "operand": expr_model(e.args[0], idents)}


def kernel_statements(stmts, on_for: Callable, on_while: Callable, on_assign: Callable,
                      on_if: Callable, on_effect: Callable | None = None) -> list:
    """What `on_for` / `on_while` / `on_assign` / `on_if` make of each statement of a
    kernel body, in order (returns skipped; anything else is an error), shared by the
    kernel code generators; `on_effect`, of a statement that is an operator call made for
    its effect (the cross-core pipe's, the cross-block barriers), where the generator has
    such statements."""
    visitor = _KernelStatements(on_for, on_while, on_assign, on_if)
    visitor.on_effect = on_effect
    return [m for m in (visitor.visit_stmt(s) for s in stmts) if m is not _NOTHING]


_NOTHING = object()  # a statement that emits nothing (a kernel's return)


class _KernelStatements(IRVisitor):
    """One kernel statement's model (_NOTHING: none), by the generator's hooks."""

    def __init__(self, on_for: Callable, on_while: Callable, on_assign: Callable,
                 on_if: Callable):
        self.on_for, self.on_while, self.on_assign, self.on_if = on_for, on_while, on_assign, on_if
        self.on_effect: Callable | None = None

    def visit_For(self, s: For) -> dict:
        return self.on_for(s)

    def visit_While(self, s: While) -> dict:
        return self.on_while(s)

    def visit_If(self, s: If) -> dict:
        return self.on_if(s)

    def visit_Assign(self, s: Assign) -> dict:
        return self.on_assign(s)

    def visit_Return(self, s: Return) -> object:
        return _NOTHING

    def visit_ExprStmt(self, s: ExprStmt) -> dict:
        if self.on_effect is not None and isinstance(s.value, Call) \
                and get_op(s.value.op).category in ("pipe", "barrier"):
            return self.on_effect(s)
        raise LoweringError("an expression statement has no effect in a kernel", s.span)

    def visit_AtScope(self, s: AtScope) -> dict:
        raise InternalError(f"unexpected statement in kernel: {s!r}")


def declare_scalar(scalars: dict[str, dict], params, dst: Var) -> None:
    """Records the C++ local a kernel's scalar `dst` needs (parameters need none)."""
    if dst.name not in params:
        scalars.setdefault(dst.name, {"ident": ident(dst.name),
                                      "ctype": scalar_ctype(dst.type.dtype)})


def runtime_extent_source(extent, axis: int, value) -> Var | None:
    """The tile operand of `value` whose valid extent on `axis` is `extent`, a run-time
    extent of the tile `value` defines (None: a load's, or one no operand has, which is
    its index expression).  A value computed from such a tile keeps that tile's extent as
    it was when the tile was defined, whatever its scalar holds by now."""
    if isinstance(value, Call) and value.op != "load":
        for arg in value.args:
            t = getattr(arg, "type", None)
            if isinstance(t, TileType) and len(t.valid) > axis and t.valid[axis] == extent:
                return arg
    return None


def operator_form(builder, call, stmt) -> tuple[OpDef, Callable]:
    """The operator `call` applies and `builder`'s method for its form (`_form_<emit>`, the
    op registry's `emit`); an operator with none is the user's error, naming the line."""
    if not isinstance(call, Call):
        raise InternalError(f"kernel statement is not an operator call: {stmt!r}")
    op = get_op(call.op)
    form = getattr(builder, "_form_" + op.emit, None) if op.emit else None
    if form is None:
        raise LoweringError(f"pl.{call.op} cannot be emitted in a kernel", stmt.span,
                            hint="use it inside a pl.at block or an orchestration function")
    return op, form


# pl.cmp's cmp_type codes as pto-isa's CmpMode names (the sim's too), and each mode with its
# operands swapped (s OP x is x OP' s).
CMP_MODES = ("EQ", "NE", "LT", "LE", "GT", "GE")
SWAPPED_CMP = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}
