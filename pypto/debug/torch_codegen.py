"""`torch_codegen`: a Program (or one Function) as executable Python on torch.

The generated module reproduces the IR's semantics on the host, so "the IR is wrong"
can be told apart from "the device disagrees with the IR".  Each operator call becomes
a call of the function of the same name in `pypto.debug.torch_runtime`; the text comes
from `templates/torch_program.py.j2`.
"""

from __future__ import annotations

import enum

from ..codegen.environment import render
from ..codegen.group import ring_models
from ..ir.dtypes import DataType
from ..ir.errors import InternalError
from ..ir.nodes import (
    Assign,
    AtScope,
    Call,
    Const,
    Expr,
    ExprList,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Program,
    Return,
    Var,
    While,
)
from ..ir.ops import get_op
from ..ir.ops.barrier import LAUNCH_QUERIES, SYNCALL
from ..ir.ops.partial import PARTIAL_OPS
from ..ir.printer import scalar_operator
from ..ir.types import FunctionType, Level, TaskIdType, TensorType, TileType
from ..ir.visitor import IRVisitor, defs, statements
from ..passes.barriers import is_gang_kernel, launch_limit, query_count
from ..passes.derive_call_directions import entry_inputs_written
from . import torch_runtime


def torch_codegen(program_or_function: Program | Function, *, check_shapes: bool = False,
                  backend=None) -> str:
    """Executable Python (torch) reproducing the IR; `check_shapes` asserts every value's
    shape and dtype as the IR states them.  `backend` (pypto.platform.Backend): the target's
    facts, which a program with cross-block barriers or launch-shape queries needs (its
    core counts, its cache line)."""
    if isinstance(program_or_function, Function):
        program = Program(program_or_function.name, (program_or_function,),
                          program_or_function.name)
    elif isinstance(program_or_function, Program):
        program = program_or_function
    else:
        raise TypeError("torch_codegen takes an ir.Program or an ir.Function, got "
                        f"{type(program_or_function).__name__}")
    builder = _Builder(check_shapes, backend)
    builder.functions = {f.name: f for f in program.functions}
    functions = [builder.function(f) for f in program.functions]
    for model_fn in functions:
        if model_fn["name"] == program.entry:
            # A written In tensor: the device writes its own copy; the caller's is unchanged.
            model_fn["copies"] = sorted(entry_inputs_written(program))
    model = {"name": program.name, "entry": program.entry, "functions": functions}
    return render("torch_program.py.j2", m=model)


def runtime_name(op: str) -> str:
    """The `torch_runtime` function of an operator (`tile.assemble` -> `tile_assemble`)."""
    return op.replace(".", "_")


def load_entry(source: str, entry: str):
    """Execute generated source and return its entry function."""
    namespace: dict = {"__name__": "pypto_torch_program"}
    exec(compile(source, "<torch_codegen>", "exec"), namespace)
    return namespace[entry]


def _attr(value):
    if isinstance(value, DataType):
        return value.name
    if isinstance(value, TaskIdType):  # pl.array.create's element type
        return "TaskId"
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple):
        return list(value)
    return value


def _placed(fn: Function) -> bool:
    """Whether a kernel's tiles have their buffers (the program is lowered): then its kind
    (vector, cube, mixed) is known."""
    tiles = [t for st in statements(list(fn.body)) if isinstance(st, Assign)
             for t in st.targets if isinstance(t.type, TileType)]
    return bool(tiles) and all(t.type.addr is not None for t in tiles)


# The operand whose valid region a runtime function reads, and the fact it is given: the
# indices that take part (gathers, tile.scatter), the values written (tile.mscatter), the
# product's K (the MX matmuls: the lhs's valid columns).
_VALID_OPERAND = {
    "tile.mgather": (1, "valid"), "tile.gather": (1, "valid"), "tile.gatherb": (1, "valid"),
    "tile.mscatter": (0, "valid"), "tile.scatter": (2, "valid"),
    "tile.matmul_mx": (0, "k"), "tile.matmul_mx_acc": (1, "k"), "tile.matmul_mx_bias": (0, "k"),
}


def _type_facts(call: Call) -> list:
    """What a runtime function needs from the IR's types: a tile's valid region (stores,
    fills, sort32), both operands' (the partial operators) and whether a slice views a tensor."""
    if call.op in ("store", "assemble", "tile.assemble", "fillpad", "fillpad_expand",
                   "sort32"):
        value = call.args[1] if call.op in ("assemble", "tile.assemble") else call.args[0]
        t = value.type
        if isinstance(t, TileType) and t.valid_shape is not None:
            return [("valid", list(t.valid_shape))]
    if call.op in PARTIAL_OPS:
        types = [a.type for a in call.args]
        if any(isinstance(t, TileType) and t.valid_shape is not None for t in types):
            return [("valids", [list(t.valid) for t in types])]
    if call.op == "slice" and isinstance(call.args[0].type, TensorType):
        return [("tensor", True)]
    if call.op in _VALID_OPERAND:
        index, what = _VALID_OPERAND[call.op]
        t = call.args[index].type
        if t.valid_shape is not None:
            return [(what, list(t.valid_shape) if what == "valid" else t.valid[1])]
    return []


def _held_facts(call: Call) -> list:
    """The dtype of an operand whose torch tensor does not name it (HF8: torch.uint8
    holding the codes; a 4-bit type: tiles of its codes, tensors of its bytes), for the
    operators that read its values or write values into it (and, of a 4-bit type, the
    stores that pack its codes into a tensor's bytes)."""
    if call.op in ("cast", "read", "load", "fillpad", "fillpad_expand", "store"):
        dtype = call.args[0].type.dtype
        if dtype.value.torch_storage is not None and (call.op != "store" or dtype.packed):
            return [("held", dtype.name)]
    return []


class _Builder(IRVisitor):
    """The template's model of a program: one dict per statement and expression."""

    def __init__(self, check_shapes: bool, backend=None):
        self.check_shapes = check_shapes
        self.backend = backend
        self.functions: dict[str, Function] = {}
        self.function_now: Function | None = None
        # In a gang kernel (or a pl.spmd block holding a pl.system.syncall): loads and stores
        # name their statement for the check of the cache protocol (torch_gang.at).
        self.in_gang = False
        self.gangs = 0  # the gang blocks of the function, numbered

    def function(self, fn: Function) -> dict:
        self.function_now, self.in_gang, self.gangs = fn, is_gang_kernel(fn), 0
        body = self.group(fn) if fn.func_type is FunctionType.Group else self.body(fn.body)
        self.in_gang = False
        return {
            "name": fn.name,
            "kind": fn.func_type.name,
            "params": [p.var.name for p in fn.params],
            "copies": [],
            "body": body,
        }

    def group(self, fn: Function) -> list[dict]:
        """A Group's body: its cube and vector functions run at once (torch_pipe.run_group),
        with the group's rings, then its results."""
        calls: dict = {"cube": None, "vector": None}
        rest = []
        for s in fn.body:
            call = getattr(s, "value", None)
            if isinstance(call, FuncCall):
                level = self.functions[call.callee].attr("level")
                calls["cube" if level is Level.AIC else "vector"] = {
                    "fn": call.callee, "args": [self.expr(a) for a in call.args],
                    "targets": [t.name for t in getattr(s, "targets", ())]}
            else:
                rest.append(self.visit_stmt(s))
        members = [self.functions[c["fn"]] for c in calls.values() if c is not None]
        rings = [(r["id"], r["c2v"], r["split"], r["slot_num"]) for r in ring_models(members)]
        return [{"kind": "group", "rings": rings, **calls}, *rest]

    def body(self, stmts) -> list[dict]:
        return [self.visit_stmt(s) for s in stmts]

    def visit_Assign(self, s: Assign) -> dict:
        model = {"kind": "assign", "targets": [t.name for t in s.targets],
                 "value": self.expr(s.value), "checks": self.checks(s), "at": None}
        call = s.value
        if self.in_gang and isinstance(call, Call) and call.op in ("load", "store"):
            tensor = call.args[0] if call.op == "load" else call.args[2]
            if isinstance(tensor.type, TensorType):
                model["at"] = {"line": s.span.line if s.span else 0, "name": tensor.name}
        return model

    def visit_ExprStmt(self, s: ExprStmt) -> dict:
        return {"kind": "expr", "value": self.expr(s.value)}

    def visit_For(self, s: For) -> dict:
        return {"kind": "for", "var": s.var.name, "start": self.expr(s.start),
                "stop": self.expr(s.stop), "step": self.expr(s.step), "body": self.body(s.body)}

    def visit_While(self, s: While) -> dict:
        return {"kind": "while", "cond": self.expr(s.cond), "body": self.body(s.body)}

    def visit_If(self, s: If) -> dict:
        return {"kind": "if", "cond": self.expr(s.cond), "then_body": self.body(s.then_body),
                "else_body": self.body(s.else_body)}

    def visit_RuntimeScope(self, s) -> dict:
        return {"kind": "scope", "body": self.body(s.body)}

    def visit_AtScope(self, s: AtScope) -> dict:
        gang = any(isinstance(b, ExprStmt) and isinstance(b.value, Call)
                   and b.value.op == SYNCALL for b in statements(list(s.body)))
        outer, self.in_gang = self.in_gang, gang
        body = self.body(s.body)
        self.in_gang = outer
        model = {"kind": "block", "level": s.level.name, "body": body,
                 "task": s.task.name if s.task is not None else None,
                 "blocks": self.expr(s.blocks) if s.blocks is not None else None,
                 "gang": None}
        if gang:
            # The block runs as a nested function on each block's thread (torch_gang); the
            # names it binds are its locals, bound after it from block n - 1's.
            self.gangs += 1
            model["gang"] = {"fn": f"_gang_{self.gangs - 1}", "line_bytes": self._line_bytes(),
                             "names": sorted(defs(list(s.body)))}
        return model

    def _needs_backend(self, what: str):
        if self.backend is None:
            raise ValueError(f"torch_codegen(..., backend=) is needed: the program holds {what}, "
                             "whose semantics are the backend's (pypto.platform.get_platform("
                             "name).backend)")
        return self.backend

    def _line_bytes(self) -> int:
        return self._needs_backend("a pl.system.syncall (its cache line)").gm_cache_line

    def _syncall_facts(self, call: Call) -> list:
        """What the torch semantics of a barrier need: its line and, for a hard one in a
        lowered kernel, the launch it needs (the simulators check the same)."""
        facts: list = [("line", call.span.line if call.span else 0)]
        fn = self.function_now
        if call.attr("mode") == "hard" and fn is not None and fn.func_type is \
                FunctionType.InCore and _placed(fn) and self.backend is not None:
            blocks, cores = launch_limit(fn, self.backend)
            facts += [("required", blocks), ("cores", cores)]
        return facts

    def visit_Return(self, s: Return) -> dict:
        return {"kind": "return", "results": [self.expr(v) for v in s.values]}

    def checks(self, s: Assign) -> list[dict]:
        if not self.check_shapes:
            return []
        where = str(s.span) if s.span else "<ir>"
        return [
            {"name": t.name, "shape": list(t.type.shape), "dtype": t.type.dtype.name,
             "where": where}
            for t in s.targets if isinstance(t.type, (TensorType, TileType))
        ]

    def expr(self, e) -> dict:
        return self.visit_expr(e)

    def visit_Var(self, e: Var) -> dict:
        return {"kind": "var", "name": e.name}

    def visit_Const(self, e: Const) -> dict:
        return {"kind": "const", "value": e.value}

    def _attr_model(self, value) -> dict:
        """An attribute as Python: a constant, or a list holding run-time extents (a valid
        region `[16, n]`) as the expressions that compute them."""
        if isinstance(value, list):
            return {"kind": "list", "elems": [self._attr_model(v) for v in value]}
        if isinstance(value, Expr):
            return self.expr(value)
        return {"kind": "const", "value": value}

    def visit_ExprList(self, e: ExprList) -> dict:
        return {"kind": "list", "elems": [self.expr(i) for i in e.items]}

    def visit_FuncCall(self, e: FuncCall) -> dict:
        callee = self.functions.get(e.callee)
        gang = None
        if callee is not None and is_gang_kernel(callee):
            gang = [self._line_bytes()]
            if _placed(callee):  # its cores are known: at most as many blocks
                gang += list(launch_limit(callee, self.backend))
        return {"kind": "submit", "fn": e.callee, "args": [self.expr(a) for a in e.args],
                "blocks": self.expr(e.blocks) if e.blocks is not None else None,
                "task_id": e.task_id, "gang": gang}

    def visit_Call(self, e: Call) -> dict:
        # Index division truncates in C++; Python's `/` would not, so it stays a call.
        symbol = scalar_operator(e)
        if symbol == "not":
            return {"kind": "not", "operand": self.expr(e.args[0])}
        if symbol is not None and e.op != "div":
            lhs, rhs = (self.expr(a) for a in e.args)
            return {"kind": "infix", "op": symbol, "lhs": lhs, "rhs": rhs}
        fn = runtime_name(e.op)
        if e.op in LAUNCH_QUERIES:  # the backend's count, written into the program
            backend = self._needs_backend(f"pl.{e.op}()")
            return {"kind": "op", "fn": fn, "args": [{"kind": "const",
                                                      "value": query_count(e.op, backend)}],
                    "attrs": [], "named": []}
        if not hasattr(torch_runtime, fn):
            raise InternalError(f"pl.{e.op} has no torch semantics in "
                                "pypto.debug.torch_runtime")
        facts = (*_type_facts(e), *_held_facts(e),
                 *(self._syncall_facts(e) if e.op == SYNCALL else ()))
        attrs = [(k, self._attr_model(_attr(v))) for k, v in e.attrs + facts]
        args = [self.expr(a) for a in e.args]
        # An operand declared after an attribute (pl.slice's offsets follow its shape) or
        # after a left-out operand (pl.mrgsort's tmp after src2) is passed by name, so it
        # cannot land in their place.
        op = get_op(e.op)
        operands = [p for p in op.params if p.kind != "attr" and p.name not in dict(e.attrs)]
        first_attr = next((i for i, p in enumerate(op.params)
                           if p.kind == "attr" or p.name in dict(e.attrs)), len(op.params))
        named = [(p.name, a) for p, a in zip(operands, args, strict=True)
                 if op.params.index(p) > first_attr]
        args = args[:len(args) - len(named)]
        return {"kind": "op", "fn": fn, "args": args, "attrs": attrs, "named": named}
