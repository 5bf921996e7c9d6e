"""Scalar expressions and identifiers shared by every generated C++ source."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.dtypes import DataType
from ..ir.errors import InternalError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprStmt, For, If, Return, Var
from ..ir.ops import OpDef, get_op
from ..ir.printer import CMP_SYMBOLS
from ..ir.types import ScalarType, TensorType

_RESERVED = set(
    """alignas alignof and asm auto bool break case catch char class const constexpr continue
    default delete do double else enum explicit export extern false float for friend goto if
    inline int long mutable namespace new noexcept not nullptr operator or private protected
    public register return short signed sizeof static struct switch template this throw true
    try typedef typeid typename union unsigned using virtual void volatile while xor
    api args core params pto main pypto_deps pypto_blocks pypto_first pypto_dump pypto_origin
    pypto_extent pypto_view pypto_k pypto_at""".split()
)
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_INDEX_CALLS = {"floordiv": "pypto_floordiv", "mod": "pypto_mod"}
_SELECT = {"min": "<", "max": ">"}  # pl.min / pl.max: lhs if lhs OP rhs else rhs
_LOGIC = {"and_": "&&", "or_": "||"}  # of conditions (BOOL scalars)
_BLOCK_FIELDS = {"get_block_idx": "block_idx", "get_block_num": "block_num"}


def ident(name: str) -> str:
    """A C++ identifier for a user name (C++ keywords and template names get a suffix)."""
    return name + "_" if name in _RESERVED else name


def scalar_ctype(dtype: DataType) -> str:
    return "double" if dtype.is_float else "int64_t"


def expr_model(e, idents=None) -> dict:
    """The template model of a scalar expression (`idents`: C++ names of user names)."""
    if isinstance(e, Var):
        return {"kind": "var", "name": (idents or {}).get(e.name, ident(e.name))}
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return {"kind": "bool", "value": e.value}
        if isinstance(e.value, int):
            return {"kind": "int", "value": e.value}
        return {"kind": "float", "value": float(e.value)}
    model = _call_model(e, idents) if isinstance(e, Call) else None
    if model is None:
        raise InternalError(f"no scalar C++ form for {e!r}")
    return model


def _call_model(e: Call, idents) -> dict | None:
    if e.op == "read" and isinstance(e.args[0].type, TensorType):
        tensor, indices = e.args  # an orchestration's read of an input tensor's element
        return {"kind": "element", "ctype": scalar_ctype(e.type.dtype),
                "elem": tensor.type.dtype.cpp_type, "tensor": (idents or {}).get(
                    tensor.name, ident(tensor.name)),
                "index": [expr_model(i, idents) for i in indices.items]}
    if isinstance(e.type, ScalarType):
        if e.op == "cast":
            return _scalar_cast(e, idents)
        if e.op == "not_":
            return {"kind": "not", "operand": expr_model(e.args[0], idents)}
        if len(e.args) == 2 and (model := _binary_model(e, idents)) is not None:
            return model
    if e.op in _BLOCK_FIELDS:
        return {"kind": "var", "name": f"(int64_t)core->{_BLOCK_FIELDS[e.op]}"}  # kernels only
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


def kernel_statements(stmts, on_for: Callable, on_assign: Callable,
                      on_if: Callable | None = None) -> list:
    """What `on_for` / `on_assign` / `on_if` make of each statement of a kernel body, in
    order (returns skipped; anything else is an error), shared by the kernel code
    generators.  A generator without `on_if` refuses a runtime `if` at its line."""
    out = []
    for s in stmts:
        if isinstance(s, For):
            out.append(on_for(s))
        elif isinstance(s, If):
            if on_if is None:
                raise LoweringError("a runtime `if` in a kernel has no device code here yet",
                                    s.span, hint="run it on a simulator platform (a2a3sim, "
                                    "a5sim), or compute both branches and select")
            out.append(on_if(s))
        elif isinstance(s, Assign):
            out.append(on_assign(s))
        elif isinstance(s, Return):
            continue
        elif isinstance(s, ExprStmt):
            raise LoweringError("an expression statement has no effect in a kernel", s.span)
        else:
            raise InternalError(f"unexpected statement in kernel: {s!r}")
    return out


def declare_scalar(scalars: dict[str, dict], params, dst: Var) -> None:
    """Records the C++ local a kernel's scalar `dst` needs (parameters need none)."""
    if dst.name not in params:
        scalars.setdefault(dst.name, {"ident": ident(dst.name),
                                      "ctype": scalar_ctype(dst.type.dtype)})


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
