"""TensorToTile: tensor-level operators in a kernel become load / compute / store on tiles.

A run of consecutive tensor-level statements is one elementwise computation over a
shape [M, N].  It is cut into chunks [R, C] so that every tile of one chunk fits the
backend's Vec buffer at once (R the largest divisor of M that fits; rows are split
into column chunks only when a single row does not fit), and walked with `pl.range`.
Tensor values that never reach a `pl.assemble` are dead and dropped.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import CapacityError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, For, Return, Var
from ..ir.ops import get_op
from ..ir.types import INDEX, FunctionType, TensorType, TileType
from .manager import FunctionPass
from .properties import IRProperty
from .legalize_tile_cast import cast_path
from .names import NameSupply

_ELEMENTWISE = ("binary", "unary", "cast")


def _is_tensor_stmt(stmt) -> bool:
    if not (isinstance(stmt, Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, Call)):
        return False
    call = stmt.value
    if call.op == "assemble":
        return isinstance(call.args[1].type, TensorType)
    return get_op(call.op).category in _ELEMENTWISE and isinstance(call.type, TensorType)


class TensorToTile(FunctionPass):
    name = "TensorToTile"
    produces = (IRProperty.TileLevelKernels,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        names = NameSupply(fn)
        capacity = ctx.backend.capacities["Vec"]
        backend = ctx.backend
        params = {p.var.name: p.var for p in fn.params}
        body, run = [], []
        for stmt in fn.body:
            if _is_tensor_stmt(stmt):
                run.append(stmt)
                continue
            if run:
                body.extend(_lower_run(run, names, capacity, backend))
                run = []
            _reject_nested(stmt)
            body.append(_returned_params(stmt, params))
        if run:
            body.extend(_lower_run(run, names, capacity, backend))
        return replace(fn, body=tuple(body))


def _reject_nested(stmt) -> None:
    if isinstance(stmt, For):
        for inner in stmt.body:
            if _is_tensor_stmt(inner):
                raise LoweringError(
                    "tensor-level operators inside a loop of a kernel are not supported yet",
                    inner.span,
                    hint="inside loops, work on tiles: pl.load / pl.<op> / pl.store",
                )
            _reject_nested(inner)


def _returned_params(stmt, params: dict[str, Var]):
    """A kernel returns its parameter buffers, whatever the name was rebound to."""
    if not isinstance(stmt, Return):
        return stmt
    values = []
    for v in stmt.values:
        if isinstance(v, Var) and isinstance(v.type, TensorType):
            if v.name not in params:
                raise LoweringError(
                    f"the kernel returns `{v.name}`, a tensor it computed but never stored",
                    v.span,
                    hint="write results into an output parameter with pl.store / `out[:] = ...`",
                )
            v = params[v.name]
        values.append(v)
    return replace(stmt, values=tuple(values))


def _lower_run(run: list[Assign], names: NameSupply, capacity: int, backend) -> list:
    defined = {s.targets[0].name: s for s in run if s.value.op != "assemble"}
    writes = [s for s in run if s.value.op == "assemble"]
    # Liveness: only values that flow into a write are computed.
    needed: set[str] = set()
    work = [w.value.args[1] for w in writes]
    while work:
        v = work.pop()
        if isinstance(v, Var) and v.name in defined and v.name not in needed:
            needed.add(v.name)
            work.extend(defined[v.name].value.args)
    computed = [s for s in run if s.value.op != "assemble" and s.targets[0].name in needed]
    if not writes:
        return []
    shape = writes[0].value.args[1].type.shape
    inputs: dict[str, Var] = {}
    for stmt in computed + writes:
        operands = stmt.value.args if stmt.value.op != "assemble" else (stmt.value.args[1],)
        for a in operands:
            if isinstance(a, Var) and isinstance(a.type, TensorType) and a.name not in defined:
                inputs.setdefault(a.name, a)
    for stmt in computed + writes:
        t = stmt.value.args[1].type if stmt.value.op == "assemble" else stmt.value.type
        if t.shape != shape:
            raise LoweringError(
                f"tensor-level operators of different shapes in one kernel "
                f"({list(shape)} and {list(t.shape)}) are not supported yet",
                stmt.span,
                hint="split the work into separate pl.at blocks, or write the tile code yourself",
            )
    if len(shape) != 2:
        raise LoweringError(
            f"tensor-level operators need rank-2 tensors, got shape {list(shape)}",
            writes[0].span,
            hint="reshape to [rows, cols] on the host",
        )
    rows, cols = shape
    elem_bytes = sum(v.type.dtype.itemsize for v in inputs.values()) + sum(
        _stmt_bytes(s.value, backend) for s in computed
    )
    r, c = _chunk(rows, cols, elem_bytes, capacity, writes[0])
    row = Var(names.fresh("row"), INDEX) if r < rows else Const(0, INDEX)
    col = Var(names.fresh("col"), INDEX) if c < cols else Const(0, INDEX)
    tiles: dict[str, Var] = {}
    chunk_body: list = []
    for name, tensor in inputs.items():
        tile = Var(names.fresh(f"{name}_tile"), TileType((r, c), tensor.type.dtype))
        tiles[name] = tile
        load = _call("load", (tensor, _index(row, col)), span=writes[0].span, shapes=(r, c))
        chunk_body.append(_assign(tile, load, writes[0].span))
    for stmt in computed:
        call = stmt.value
        args = tuple(tiles.get(a.name, a) if isinstance(a, Var) else a for a in call.args)
        attrs = dict(call.attrs)
        tile_call = _call(call.op, args, span=call.span, **attrs)
        tile = Var(names.fresh(f"{stmt.targets[0].name}_tile"), tile_call.type, stmt.span)
        tiles[stmt.targets[0].name] = tile
        chunk_body.append(_assign(tile, tile_call, stmt.span))
    for stmt in writes:
        dst, src, offsets = stmt.value.args
        src_tile = tiles[src.name] if isinstance(src, Var) else src
        off0, off1 = offsets.items
        window = ExprList((_add(off0, row), _add(off1, col)))
        atomic = stmt.value.attr("atomic")
        store = _call("store", (src_tile, window, dst), span=stmt.span, atomic=atomic)
        chunk_body.append(_assign(stmt.targets[0], store, stmt.span))
    body = tuple(chunk_body)
    if c < cols:
        body = (For(col, Const(0, INDEX), Const(cols, INDEX), Const(c, INDEX), body),)
    if r < rows:
        body = (For(row, Const(0, INDEX), Const(rows, INDEX), Const(r, INDEX), body),)
    return list(body)


def _stmt_bytes(call: Call, backend) -> int:
    """Bytes per element a statement's tiles need, counting the hops LegalizeTileCast adds."""
    if call.op != "cast":
        return call.type.dtype.itemsize
    path = cast_path(call.args[0].type.dtype, call.type.dtype, backend)
    return sum(d.itemsize for d in path[1:])


def _chunk(rows: int, cols: int, elem_bytes: int, capacity: int, stmt) -> tuple[int, int]:
    for r in sorted((d for d in range(1, rows + 1) if rows % d == 0), reverse=True):
        if r * cols * elem_bytes <= capacity:
            return r, cols
    for c in sorted((d for d in range(1, cols + 1) if cols % d == 0), reverse=True):
        if c * elem_bytes <= capacity:
            return 1, c
    raise CapacityError(
        f"one element of every tile of this computation needs {elem_bytes} bytes, more than the "
        f"Vec buffer's {capacity}",
        stmt.span,
    )


def _index(row, col) -> ExprList:
    return ExprList((row, col))


def _add(a, b):
    if isinstance(b, Const) and b.value == 0:
        return a
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value, INDEX)
    return Call("add", (a, b), (), INDEX)


def _call(op: str, args: tuple, span=None, **attrs) -> Call:
    opdef = get_op(op)
    full = {p.name: p.default for p in opdef.attr_params}
    full.update(attrs)
    return Call(op, args, tuple(sorted(full.items())), opdef.infer(args, full, span), span)


def _assign(var: Var, value, span=None) -> Assign:
    return Assign((var,), value, span)


