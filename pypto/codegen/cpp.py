"""IR → the models the C++ templates render (kernels and orchestration).

This module decides *what* to emit (identifiers, tile placement, operator forms);
the text itself comes only from `templates/`.
"""

from __future__ import annotations

from ..ir.errors import InternalError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprStmt, For, FuncCall, Function, Program, Return, Var
from ..ir.types import Direction, FunctionType, ScalarType, TensorType, TileType
from ..ir.dtypes import DataType
from .environment import render
from .sources import GeneratedSources, KernelSource, ParamSpec

_RESERVED = set(
    """alignas alignof and asm auto bool break case catch char class const constexpr continue
    default delete do double else enum explicit export extern false float for friend goto if
    inline int long mutable namespace new noexcept not nullptr operator or private protected
    public register return short signed sizeof static struct switch template this throw true
    try typedef typeid typename union unsigned using virtual void volatile while xor
    api args core params pto main""".split()
)
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_INDEX_CALLS = {"floordiv": "pypto_floordiv", "mod": "pypto_mod"}
_BINARY = {"add": "tadd", "sub": "tsub", "mul": "tmul", "div": "tdiv"}
_SCALAR_FORM = {"add": "tadds", "sub": "tsubs", "mul": "tmuls", "div": "tdivs"}
_REVERSED_SCALAR_FORM = {"add": "tadds", "sub": "trsubs", "mul": "tmuls", "div": "trdivs"}
_UNARY = {"exp": "texp"}
_ROUND = {"none": "None", "rint": "Rint", "round": "Round", "floor": "Floor", "ceil": "Ceil",
          "trunc": "Trunc", "odd": "Odd"}
_SPACE = {"Vec": "vec", "Mat": "mat", "Left": "left", "Right": "right", "Acc": "acc"}
_DIRECTION = {Direction.In: "PTO_IN", Direction.Out: "PTO_OUT", Direction.InOut: "PTO_INOUT"}


def ident(name: str) -> str:
    """A C++ identifier for a user name (C++ keywords and template names get a suffix)."""
    return name + "_" if name in _RESERVED else name


def scalar_ctype(dtype: DataType) -> str:
    return "double" if dtype.is_float else "int64_t"


def expr_model(e, idents=None) -> dict:
    if isinstance(e, Var):
        return {"kind": "var", "name": (idents or {}).get(e.name, ident(e.name))}
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return {"kind": "bool", "value": e.value}
        if isinstance(e.value, int):
            return {"kind": "int", "value": e.value}
        return {"kind": "float", "value": float(e.value)}
    if isinstance(e, Call) and isinstance(e.type, ScalarType) and len(e.args) == 2:
        lhs, rhs = (expr_model(a, idents) for a in e.args)
        if e.op in _INFIX:
            return {"kind": "binop", "op": _INFIX[e.op], "lhs": lhs, "rhs": rhs}
        if e.op in _INDEX_CALLS:
            return {"kind": "call", "fn": _INDEX_CALLS[e.op], "lhs": lhs, "rhs": rhs}
    raise InternalError(f"no scalar C++ form for {e!r}")


def _param_spec(p) -> ParamSpec:
    t = p.var.type
    if isinstance(t, TensorType):
        return ParamSpec(p.var.name, "tensor", t.dtype.name, p.direction.value, tuple(t.shape))
    return ParamSpec(p.var.name, "scalar", t.dtype.name)


def _param_models(fn: Function) -> list[dict]:
    out = []
    for i, p in enumerate(fn.params):
        t = p.var.type
        kind = "tensor" if isinstance(t, TensorType) else (
            "float" if t.dtype.is_float else "int")
        out.append({"ident": ident(p.var.name), "index": i, "kind": kind})
    return out


# ----------------------------------------------------------------------------- kernels


class _KernelBuilder:
    def __init__(self, fn: Function):
        self.fn = fn
        self.tiles: dict[tuple, dict] = {}
        self.scalars: dict[str, dict] = {}
        self.params = {p.var.name for p in fn.params}

    def tile(self, var: Var) -> str:
        t = var.type
        if not isinstance(t, TileType) or t.memory is None or t.addr is None:
            raise InternalError(f"tile `{var.name}` reached codegen without memory placement")
        key = (var.name, t.shape, t.dtype, t.memory)
        if key not in self.tiles:
            taken = {m["ident"] for m in self.tiles.values()}
            name = ident(var.name)
            n = 1
            while name in taken or name in self.params:
                name, n = f"{ident(var.name)}__{n}", n + 1
            self.tiles[key] = {
                "ident": name,
                "elem": t.dtype.cpp_type,
                "space": _SPACE[t.memory.name],
                "addr": t.addr,
                "rows": t.shape[0],
                "cols": t.shape[1] if len(t.shape) > 1 else 1,
            }
        return self.tiles[key]["ident"]

    def body(self, stmts) -> list[dict]:
        out = []
        for s in stmts:
            if isinstance(s, For):
                out.append({
                    "kind": "for", "var": ident(s.var.name), "start": expr_model(s.start),
                    "stop": expr_model(s.stop), "step": expr_model(s.step),
                    "body": self.body(s.body),
                })
            elif isinstance(s, Assign):
                out.append(self.assign(s))
            elif isinstance(s, Return):
                continue
            elif isinstance(s, ExprStmt):
                raise LoweringError("an expression statement has no effect in a kernel", s.span)
            else:
                raise InternalError(f"unexpected statement in kernel: {s!r}")
        return out

    def assign(self, s: Assign) -> dict:
        (dst,) = s.targets
        call = s.value
        if isinstance(dst.type, ScalarType):
            if dst.name not in self.params:
                self.scalars.setdefault(dst.name, {"ident": ident(dst.name),
                                                   "ctype": scalar_ctype(dst.type.dtype)})
            return {"kind": "scalar_assign", "dst": ident(dst.name), "value": expr_model(call)}
        if not isinstance(call, Call):
            raise InternalError(f"kernel statement is not an operator call: {s!r}")
        if call.op == "load":
            tensor, offsets = call.args
            valid = call.attr("valid_shape") or dst.type.shape
            r0, c0 = _window_origin(offsets, s)
            return {"kind": "load", "dst": self.tile(dst), "src": ident(tensor.name),
                    "r0": expr_model(r0), "c0": expr_model(c0), "vrows": valid[0],
                    "vcols": valid[1] if len(valid) > 1 else 1,
                    "pad": call.attr("pad_value").name.replace("null", "zero"),
                    "elem": dst.type.dtype.cpp_type}
        if call.op == "store":
            tile, offsets, tensor = call.args
            if call.attr("atomic").name != "None_":
                raise LoweringError("atomic stores are not supported yet", s.span)
            r0, c0 = _window_origin(offsets, s)
            return {"kind": "store", "dst": ident(tensor.name), "src": self.tile(tile),
                    "r0": expr_model(r0), "c0": expr_model(c0)}
        if call.op in _BINARY:
            a, b = call.args
            if isinstance(a.type, TileType) and isinstance(b.type, TileType):
                return {"kind": "binary", "fn": _BINARY[call.op], "dst": self.tile(dst),
                        "a": self.tile(a), "b": self.tile(b)}
            if isinstance(a.type, TileType):
                return {"kind": "binary_scalar", "fn": _SCALAR_FORM[call.op],
                        "dst": self.tile(dst), "a": self.tile(a), "scalar": expr_model(b)}
            return {"kind": "binary_scalar", "fn": _REVERSED_SCALAR_FORM[call.op],
                    "dst": self.tile(dst), "a": self.tile(b), "scalar": expr_model(a)}
        if call.op in _UNARY:
            return {"kind": "unary", "fn": _UNARY[call.op], "dst": self.tile(dst),
                    "a": self.tile(call.args[0])}
        if call.op == "cast":
            return {"kind": "cast", "dst": self.tile(dst), "src": self.tile(call.args[0]),
                    "mode": _ROUND[call.attr("mode")]}
        raise LoweringError(f"pl.{call.op} cannot be emitted in a kernel yet", s.span)


def _window_origin(offsets, stmt):
    if len(offsets.items) != 2:
        raise LoweringError("tile loads and stores need rank-2 tensors for now", stmt.span)
    return offsets.items


def kernel_source(fn: Function) -> KernelSource:
    builder = _KernelBuilder(fn)
    body = builder.body(fn.body)
    model = {
        "name": fn.name,
        "params": _param_models(fn),
        "tiles": sorted(builder.tiles.values(), key=lambda t: t["ident"]),
        "scalars": sorted(builder.scalars.values(), key=lambda v: v["ident"]),
        "body": body,
    }
    return KernelSource(fn.name, render("kernel.cpp.j2", k=model), "vector",
                        tuple(_param_spec(p) for p in fn.params))


# ----------------------------------------------------------------------------- orchestration


class _OrchestrationBuilder:
    def __init__(self, program: Program, fn: Function, kernel_index: dict[str, int]):
        self.program = program
        self.fn = fn
        self.kernel_index = kernel_index
        self.locals: dict[str, dict] = {}
        self.params = {p.var.name for p in fn.params}

    def local(self, var: Var) -> str:
        if var.name not in self.params and var.name not in self.locals:
            ctype = "PtoTensor" if isinstance(var.type, TensorType) else scalar_ctype(
                var.type.dtype)
            self.locals[var.name] = {"ident": ident(var.name), "ctype": ctype}
        return ident(var.name)

    def body(self, stmts) -> list[dict]:
        out = []
        for s in stmts:
            if isinstance(s, For):
                out.append({
                    "kind": "for", "var": ident(s.var.name), "start": expr_model(s.start),
                    "stop": expr_model(s.stop), "step": expr_model(s.step),
                    "body": self.body(s.body),
                })
            elif isinstance(s, Assign) and isinstance(s.value, FuncCall):
                out.append(self.submit(s.value, s.targets))
            elif isinstance(s, ExprStmt) and isinstance(s.value, FuncCall):
                out.append(self.submit(s.value, ()))
            elif isinstance(s, Assign) and isinstance(s.value, Call) and \
                    s.value.op == "create_tensor":
                t = s.targets[0].type
                out.append({"kind": "alloc", "dst": self.local(s.targets[0]),
                            "dtype_code": t.dtype.code, "shape": list(t.shape)})
            elif isinstance(s, Assign) and isinstance(s.targets[0].type, ScalarType):
                out.append({"kind": "scalar_assign", "dst": self.local(s.targets[0]),
                            "value": expr_model(s.value)})
            elif isinstance(s, Return):
                continue
            else:
                raise LoweringError("this statement cannot run in an orchestration function",
                                    getattr(s, "span", None))
        return out

    def submit(self, call: FuncCall, targets) -> dict:
        callee = self.program.function(call.callee)
        args = []
        for a, p in zip(call.args, callee.params):
            if isinstance(p.var.type, TensorType):
                if not isinstance(a, Var):
                    raise InternalError(f"tensor argument is not a variable: {a!r}")
                args.append({"kind": "tensor", "ident": ident(a.name),
                             "direction": _DIRECTION[p.direction]})
            else:
                kind = "float" if p.var.type.dtype.is_float else "int"
                args.append({"kind": kind, "value": expr_model(a)})
        results = []
        returns = _returned_params(callee)
        for target, param_index in zip(targets, returns):
            src = call.args[param_index]
            dst = self.local(target)
            if src.name != target.name:
                results.append({"dst": dst, "src": ident(src.name)})
        return {"kind": "submit", "kernel_index": self.kernel_index[call.callee], "args": args,
                "results": results}


def _returned_params(fn: Function) -> list[int]:
    """For each value a kernel returns, the index of the parameter buffer it is."""
    names = [p.var.name for p in fn.params]
    for s in fn.body:
        if isinstance(s, Return):
            return [names.index(v.name) for v in s.values]
    return []


def generate(program: Program) -> GeneratedSources:
    """C++ sources for a fully lowered program (passes already ran)."""
    entry = program.entry_function
    if entry.func_type is not FunctionType.Orchestration:
        raise InternalError("the entry of a lowered program must be an orchestration function")
    incore = [f for f in program.functions if f.func_type is FunctionType.InCore]
    kernels = tuple(kernel_source(f) for f in incore)
    index = {k.name: i for i, k in enumerate(kernels)}
    builder = _OrchestrationBuilder(program, entry, index)
    body = builder.body(entry.body)
    model = {
        "name": entry.name,
        "params": _param_models(entry),
        "locals": sorted(builder.locals.values(), key=lambda v: v["ident"]),
        "body": body,
    }
    params = tuple(_param_spec(p) for p in entry.params)
    return GeneratedSources(
        entry=entry.name,
        params=params,
        outputs=_entry_outputs(entry),
        kernels=kernels,
        orchestration_cpp=render("orchestration.cpp.j2", o=model),
    )


def _entry_outputs(entry: Function) -> tuple[int, ...]:
    """Indices of the parameters the entry hands back: its returned names, else its outputs."""
    names = [p.var.name for p in entry.params]
    for s in entry.body:
        if isinstance(s, Return) and s.values:
            picked = [names.index(v.name) for v in s.values
                      if isinstance(v, Var) and v.name in names]
            if picked:
                return tuple(picked)
    return tuple(i for i, p in enumerate(entry.params) if p.direction is not Direction.In)
