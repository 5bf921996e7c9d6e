"""ExpandMixedKernel: a mixed kernel that asks for the cross-core pipe becomes a group of
its cube side and its vector lanes (upstream's pass of that name).

A `pl.at` block with cube work (a matmul) and vector work, and
`optimizations=[pl.split(mode)]` and/or `pl.cross_core_slot(slot_num=N)` (the kernel's
"split" and "slot_num" attributes), is lowered to tiles value by value with each value
that crosses between the units read through a boundary move (TensorToTile):
`v = pl.move(acc, target_memory=pl.Mem.Vec)` where vector work reads a matmul's tile,
`m = pl.move(v, target_memory=pl.Mem.Mat)` (or Left / Right) where the cube reads a vector
tile.  This pass turns that kernel into what a `pl.split_aiv` kernel becomes
(ir/lane_split.py, the same `split_kernel`):
- each straight run of vector statements (loops of vector work included) is a lane
  region; the regions of a loop or branch holding cube work too are formed inside its
  bodies.  A scalar statement among them runs on both sides, before the region when the
  region neither reads nor binds what it binds, else after it (the region then ends
  there), and on the lanes alone when it reads what they compute;
- a cube-to-vector boundary move in a region is a shard: the cube pushes the whole tile
  (`pl.tpush_to_aiv`) and each lane pops its part into the move's name; a vector-to-cube
  one is a gather: the lanes push (`pl.tpush_to_aic`) and the cube pops the whole tile into
  Mat (moved on to Left / Right where the move went there);
- UP_DOWN / LEFT_RIGHT halve the vector work between the lanes: every Vec tile with more
  than one row (column) is the lane's half, a load or store of it at the lane's offset
  (`aiv_id * h/2`); an operator that cannot be computed half by half (a reduction along
  the split axis, a reshape, an element read, ...) is an error at its line.  NONE halves
  nothing: vector lane 0 does the vector work and lane 1 stays idle (the no-split pipe is
  lane 0's, as pto-isa's CPU model has it; upstream's lane 1 replays the handshakes with
  empty tiles);
- the ring (pipe `split`) has `slot_num` slots (default 2) of the largest tile crossing
  it, reserved at the bottom of the consuming core's buffer (Vec for cube to vector, Mat
  for vector to cube): the allocator places the function's tiles above it, and a ring or
  tiles that do not fit are a CapacityError naming `pl.cross_core_slot`.
A tensor one unit writes and the other reads or writes is an error at the second access:
the kernel ordered them by its statements, the group runs the units at once, and the pipe
orders only the values it carries.  The group keeps the kernel's name and parameters, so
its callers are unchanged.  A kernel
with work of one unit only is left as it is (its split halves nothing; its slot_num sizes
no ring).
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import InternalError, LoweringError, Span
from ..ir.lane_split import (
    SPLIT_OF,
    EachBody,
    Region,
    halved,
    is_region,
    region_index,
    region_loop,
    split_kernel,
    statement_unit,
    tile_type,
)
from ..ir.nodes import (
    Assign,
    Call,
    Const,
    ExprList,
    ExprStmt,
    For,
    Function,
    If,
    Return,
    Var,
    While,
)
from ..ir.ops import get_op, make_call, write_destination
from ..ir.ops.cross_core import DEFAULT_SLOTS, INIT_OPS, PIPE_OPS
from ..ir.types import INDEX, FunctionType, MemorySpace, SplitMode, TensorType, TileType
from ..ir.visitor import IRMutator, IRVisitor, defs, statements, uses
from .manager import Pass
from .names import NameSupply

_COMPOUND = (For, While, If)
_CUBE_TARGETS = (MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right)
# Operator categories computed element by element along both axes: a lane's half of the
# operands gives its half of the result.
_HALVES = frozenset({"binary", "cast", "unary", "expands", "expand_row", "expand_col",
                     "select", "select_scalar", "ternary"})
# Reductions (and sorts) along one axis: computed half by half along the other only.
_ALONG = {"reduce_row": 1, "reduce_col": 0, "sort": 1}
_HALVED_OPS = ("load", "store", "move", "create_tile", "full", "tile.mgather")
_AXIS = {1: "rows", 2: "columns"}


class ExpandMixedKernel(Pass):
    name = "ExpandMixedKernel"

    def run(self, program, ctx):
        taken = {f.name for f in program.functions}
        functions: list[Function] = []
        for fn in program.functions:
            functions.extend(expand(fn, taken) if _asks_for_pipe(fn) else [fn])
        return program.with_functions(functions)


def _asks_for_pipe(fn: Function) -> bool:
    """A kernel of the whole core group (not yet split) with "split" or "slot_num"."""
    return (fn.func_type is FunctionType.InCore and fn.attr("level") is None
            and (fn.attr("split") is not None or fn.attr("slot_num") is not None))


def expand(fn: Function, taken: set[str]) -> list[Function]:
    """The kernel's AIC function, AIV function and group (the kernel itself when it has
    work of one unit only)."""
    mode = fn.attr("split") or SplitMode.NONE
    split = SPLIT_OF[mode]
    former = _Regions(fn, split)
    body = former.mutate_body(fn.body)
    if not (former.regions and former.cube_work):
        return [fn]
    _check_memory_crossings(fn, former.units)
    _check_lane_scalars(body, former.lane_scalars)
    body = _LaneWork(split, former.regions).mutate_body(body)
    kernel = replace(fn, body=body)
    slot_num = fn.attr("slot_num") or DEFAULT_SLOTS
    attrs = tuple((k, v) for k, v in (("split", mode), ("slot_num", fn.attr("slot_num")))
                  if v is not None)
    aic, aiv, group = split_kernel(kernel, former.regions, taken, slot_num=slot_num,
                                   error=LoweringError, attrs=attrs)
    if split == 0:
        aiv = _on_lane_zero(aiv, former.lane)
    return [aic, aiv, group]


class _Units:
    """Which unit each statement of a kernel is for, learned in program order: the tiles
    the cube computes (a load into Mat, a matmul, a move into Left ...) are the cube's."""

    def __init__(self, fn: Function):
        self.cube_tiles: set[str] = set()
        for stmt in statements(list(fn.body)):
            if isinstance(stmt, (Assign, ExprStmt)) and self.leaf(stmt) in ("cube", "v2c"):
                self.cube_tiles.update(n for n, v in defs(stmt).items()
                                       if isinstance(v.type, TileType))

    def leaf(self, stmt) -> str | None:
        """"c2v" / "v2c" (a boundary move), "cube", "vector" or None (scalar work)."""
        call = getattr(stmt, "value", None)
        if isinstance(stmt, Assign) and isinstance(call, Call) and call.op == "move":
            src, target = call.args[0], call.attr("target_memory")
            if isinstance(src, Var) and isinstance(src.type, TileType):
                cube_source = src.name in self.cube_tiles
                if cube_source and target is MemorySpace.Vec:
                    return "c2v"
                if not cube_source and target in _CUBE_TARGETS:
                    return "v2c"
        return statement_unit(stmt, self.cube_tiles)

    def of(self, stmt) -> str | None:
        """A statement's unit; "mixed" for a loop or branch holding work of both units (or
        a boundary move), "return" for the return."""
        if isinstance(stmt, Return):
            return "return"
        if not isinstance(stmt, _COMPOUND):
            return self.leaf(stmt)
        kinds = {self.leaf(s) for s in statements(stmt) if not isinstance(s, _COMPOUND)}
        if kinds & {"c2v", "v2c"} or {"cube", "vector"} <= kinds:
            return "mixed"
        return "cube" if "cube" in kinds else "vector" if "vector" in kinds else None


class _Regions(IRMutator):
    """Forms the lane regions of a kernel's bodies (module docstring); `regions` are
    theirs, `lane` the variable bound to the lane at each region's top."""

    def __init__(self, fn: Function, split: int):
        self.split = split
        self.units = _Units(fn)
        names = NameSupply(fn)
        self.lane = Var("aiv_id" if "aiv_id" not in names.taken else names.fresh("aiv_id"),
                        INDEX, fn.span)
        self.names = names
        self.regions: list[Region] = []
        self.cube_work = False
        self.lane_scalars: dict[str, Span | None] = {}  # scalars only the lanes compute
        self.freed: set[str] = set()  # tiles popped in a region, freed at its end

    def mutate_body(self, body) -> tuple:
        out: list = []
        run: list = []      # the vector statements of the region being formed
        before: list = []   # scalar statements met among them that it does not need
        for stmt in body:
            unit = self.units.of(stmt)
            if unit in ("vector", "c2v", "v2c"):
                run.append(stmt)
            elif unit is None and run and set(uses(stmt)) & set(defs(run)):
                run.append(stmt)  # it reads what the lanes compute: theirs alone
            elif unit is None and run and _independent(stmt, run):
                before.append(stmt)  # both sides, before the region
            elif unit is None and run:
                out += before + self._region(run) + [stmt]  # both sides, after the region
                run, before = [], []
            elif unit is None:
                out.append(stmt)
            else:
                out += before + self._region(run)
                run, before = [], []
                self.cube_work |= unit in ("cube", "mixed")
                out.append(EachBody(self.mutate_body).mutate_stmt(stmt)
                           if unit == "mixed" else stmt)
        return tuple(out + before + self._region(run))

    def _region(self, run: list) -> list:
        """The region of `run` (a For of REGION_KIND), and the cube's moves on from Mat of
        the tiles it gathers into Left / Right; nothing for an empty run."""
        if not run:
            return []
        region = Region(self.split, run[0].span)
        body: list = []
        after: list = []
        alias: dict[str, Var] = {}  # a second move of a sharded cube tile -> its pop
        for stmt in run:
            kind = self.units.leaf(stmt) if not isinstance(stmt, _COMPOUND) else None
            if kind == "c2v":
                self._shard(stmt, region, body, alias)
            elif kind == "v2c":
                self._gather(_Renamed(alias).mutate_stmt(stmt), region, body, after)
            else:
                late = set(uses(stmt)) & self.freed - {p.name for _, p, _ in region.shards}
                if late:
                    raise LoweringError(
                        f"`{sorted(late)[0]}` crossed to the vector lanes for an earlier "
                        "run of their work, whose end frees its ring slot; it is read here "
                        "after scalar work both units do", stmt.span,
                        hint="read the value right after it crosses, or move the scalar "
                             "work before it")
                for inner in statements(stmt):
                    if not isinstance(inner, _COMPOUND):
                        self.lane_scalars.update(
                            {n: inner.span for n, v in defs(inner).items()
                             if not isinstance(v.type, (TileType, TensorType))})
                body.append(_Renamed(alias).mutate_stmt(stmt))
        self.regions.append(region)
        self.freed |= {popped.name for _, popped, _ in region.shards}
        return [region_loop(self.lane, tuple(body), len(self.regions) - 1, region.span),
                *after]

    def _shard(self, stmt: Assign, region: Region, body: list, alias: dict) -> None:
        """`v = pl.move(c, target_memory=Vec)` of the cube's tile `c`: the lane's pop of it."""
        (target,) = stmt.targets
        cube = _moved_tile(stmt)
        for tile, popped, _ in region.shards:
            if tile.name == cube.name:
                alias[target.name] = popped
                return
        shape = self._lane_part(cube, stmt, "reaches the vector lanes")
        pop = make_call("system.tpop_from_aic", span=stmt.span, shape=shape,
                        dtype=tile_type(cube).dtype, split=self.split, id=self.split)
        popped = Var(target.name, pop.type, target.span)
        body.append(Assign((popped,), pop, stmt.span))
        region.shards.append((cube, popped, stmt.span))

    def _gather(self, stmt: Assign, region: Region, body: list, after: list) -> None:
        """`m = pl.move(v, target_memory=Mat)` of the lanes' tile `v`: their push of it; the
        cube pops the whole tile into Mat (and moves it on to Left / Right)."""
        (target,) = stmt.targets
        tile = _moved_tile(stmt)
        memory = _moved_to(stmt)
        self._lane_part(tile, stmt, "reaches the cube")
        whole = TileType(tuple(tile_type(tile).shape), tile_type(tile).dtype)
        if memory is MemorySpace.Mat:
            gathered = Var(target.name, whole, target.span)
        else:
            gathered = Var(self.names.fresh(f"{target.name}_mat"), whole, target.span)
            move = make_call("move", gathered, span=stmt.span, target_memory=memory)
            after.append(Assign((target,), move, stmt.span))
        body.append(ExprStmt(make_call("system.tpush_to_aic", tile, span=stmt.span,
                                       split=self.split, id=self.split), stmt.span))
        region.gathers.append((gathered, tile, stmt.span))

    def _lane_part(self, tile: Var, stmt, goes: str) -> tuple:
        """The shape of a lane's part of a tile crossing the pipe (checked to be one)."""
        t = tile_type(tile)
        if len(t.shape) != 2 or t.valid_shape is not None:
            raise LoweringError(
                f"`{tile.name}` ({list(t.shape)} {t.dtype.name}) {goes} through the "
                "cross-core pipe, which moves 2-D tiles valid all over", stmt.span,
                hint="cross with whole 2-D tiles, or drop pl.split / pl.cross_core_slot (the "
                     "value then goes through global memory)")
        axis = self.split - 1
        if self.split and t.shape[axis] % 2:
            raise LoweringError(
                f"pl.split halves the vector work by {_AXIS[self.split]}, and `{tile.name}` "
                f"({list(t.shape)}) has {t.shape[axis]} {_AXIS[self.split]}", stmt.span,
                hint="split along an even axis, or use pl.split(pl.SplitMode.NONE)")
        return halved(tuple(t.shape), self.split)


def _moved_tile(stmt: Assign) -> Var:
    """The tile a boundary move (`t = pl.move(x, target_memory=...)`) moves."""
    call = stmt.value
    if not (isinstance(call, Call) and isinstance(call.args[0], Var)):
        raise InternalError(f"ExpandMixedKernel: {stmt} is no move of a tile")
    return call.args[0]


def _moved_to(stmt: Assign) -> MemorySpace:
    """Where a boundary move moves its tile."""
    call = stmt.value
    assert isinstance(call, Call)  # _moved_tile checked the move
    return call.attr("target_memory")


def _independent(stmt, run: list) -> bool:
    """Whether a scalar statement met among a region's statements can go before them."""
    bound = set(defs(run))
    return not (set(uses(stmt)) & bound) and not (set(defs(stmt)) & (bound | set(uses(run))))


class _Renamed(IRMutator):
    """Reads of the names of `alias` read the variable it maps them to."""

    def __init__(self, alias: dict[str, Var]):
        self.alias = alias

    def mutate_Var(self, expr: Var):
        return self.alias.get(expr.name, expr)


class _Halves(IRMutator):
    """A region's vector work on the lane's half (module docstring): tiles of more than one
    row (UP_DOWN) or column (LEFT_RIGHT) halved, loads and stores of them at the lane's
    offset."""

    def __init__(self, split: int, lane: Var, region: Region):
        self.split, self.axis, self.lane = split, split - 1, lane
        self.mode = {1: "UP_DOWN", 2: "LEFT_RIGHT"}[split]
        self.types = {p.name: tile_type(p) for _, p, _ in region.shards}
        self.whole = {p.name: tile_type(c) for c, p, _ in region.shards}

    def mutate_Var(self, expr: Var):
        new = self.types.get(expr.name)
        return replace(expr, type=new) if new is not None else expr

    def mutate_Assign(self, stmt: Assign):
        call = stmt.value
        if isinstance(call, Call) and call.op in PIPE_OPS:
            return replace(stmt, value=self.mutate_expr(call))
        value = self._halved(call, stmt) if isinstance(call, Call) else self.mutate_expr(call)
        targets = []
        for target in stmt.targets:
            if isinstance(target.type, TileType) and isinstance(value.type, TileType):
                self.whole[target.name] = self.whole.get(
                    value.name, target.type) if isinstance(value, Var) else target.type
                self.types[target.name] = value.type
                target = replace(target, type=value.type)
            targets.append(target)
        return replace(stmt, value=value, targets=tuple(targets))

    def mutate_ExprStmt(self, stmt: ExprStmt):
        call = stmt.value
        if isinstance(call, Call) and call.op not in PIPE_OPS:
            return replace(stmt, value=self._halved(call, stmt))
        return replace(stmt, value=self.mutate_expr(call))

    def _halved(self, call: Call, stmt) -> Call:
        """`call` on the lanes' halves, its type inferred again and checked."""
        op = get_op(call.op)
        tiles = any(isinstance(getattr(a, "type", None), TileType) for a in call.args) or \
            isinstance(call.type, TileType)
        if not tiles:
            return self.mutate_expr(call)
        along = _ALONG.get(op.category)
        if not (call.op in _HALVED_OPS or op.category in _HALVES
                or (along is not None and along != self.axis)):
            raise self._refused(call, stmt)
        args, attrs = self._operands(call, stmt)
        new = replace(call, args=args, attrs=tuple(sorted(attrs.items(), key=lambda kv: kv[0])),
                      type=op.infer(args, attrs, call.span))
        if isinstance(call.type, TileType):
            want = self._half(call.type.shape)
            if not isinstance(new.type, TileType) or tuple(new.type.shape) != want:
                raise self._refused(call, stmt)
        return new

    def _operands(self, call: Call, stmt) -> tuple[tuple, dict]:
        """The operands and attributes of `call` on the lanes' halves: a load's or store's
        offsets at the lane's half, shapes halved."""
        args = tuple(self.mutate_expr(a) for a in call.args)
        attrs = dict(call.attrs)
        if attrs.get("valid_shape") is not None:
            raise LoweringError(
                f"pl.split({self._spelled()}) halves the vector work between the lanes, and "
                f"this pl.{call.op} has a valid region of its own (valid_shape)", stmt.span,
                hint="use pl.split(pl.SplitMode.NONE), or tiles valid all over")
        if call.op == "load":
            args = self._at_lane(args, 1, attrs["shapes"], stmt, call)
            attrs["shapes"] = self._half(attrs["shapes"])
        elif call.op == "store":
            tile = call.args[0]
            whole = self.whole.get(tile.name, tile_type(tile)) if isinstance(tile, Var) else None
            if whole is not None and whole.shape[self.axis] > 1:
                args = self._at_lane(args, 1, whole.shape, stmt, call)
            if attrs.get("shapes") is not None:
                attrs["shapes"] = self._half(attrs["shapes"])
        elif call.op in ("create_tile", "full"):
            attrs["shape"] = self._half(attrs["shape"])
        return args, attrs

    def _half(self, shape) -> tuple:
        """A shape's lane part: halved along the axis when it is longer than one there."""
        shape = tuple(shape)
        return halved(shape, self.split) if shape[self.axis] > 1 else shape

    def _at_lane(self, args: tuple, index: int, shape, stmt, call: Call) -> tuple:
        """`args` with the offsets at `index` moved to the lane's half of a `shape` tile."""
        extent = tuple(shape)[self.axis]
        if extent <= 1:
            return args
        if extent % 2:
            raise LoweringError(
                f"pl.split({self._spelled()}) halves the vector work by "
                f"{_AXIS[self.split]}, and this pl.{call.op} moves a tile of {extent} "
                f"{_AXIS[self.split]}",
                stmt.span, hint="split along an even axis, or use pl.split(pl.SplitMode.NONE)")
        offsets = args[index]
        assert isinstance(offsets, ExprList)  # a load's / store's offsets
        items = list(offsets.items)
        lane_offset = make_call("mul", self.lane, Const(extent // 2, INDEX), span=call.span)
        items[self.axis] = lane_offset if _is_zero(items[self.axis]) else make_call(
            "add", items[self.axis], lane_offset, span=call.span)
        return (*args[:index], replace(offsets, items=tuple(items)), *args[index + 1:])

    def _spelled(self) -> str:
        return f"pl.SplitMode.{self.mode}"

    def _refused(self, call: Call, stmt) -> LoweringError:
        return LoweringError(
            f"pl.split({self._spelled()}) computes the vector work half by half, each lane "
            f"its {_AXIS[self.split]}; pl.{call.op} cannot be computed so", stmt.span,
            hint="split along the other axis, or use pl.split(pl.SplitMode.NONE) (vector "
                 "lane 0 then does the whole vector work)")


class _LaneWork(IRMutator):
    """Each lane region's work on the lane's half (`_Halves`, with a split); the lane bound
    at its top only where the work reads it."""

    def __init__(self, split: int, regions: list[Region]):
        self.split, self.regions = split, regions

    def mutate_For(self, stmt: For):
        if not is_region(stmt):
            return super().mutate_For(stmt)
        head, *work = stmt.body
        if self.split:
            region = self.regions[region_index(stmt)]
            work = list(_Halves(self.split, stmt.var, region).mutate_body(tuple(work)))
        kept = (head,) if stmt.var.name in uses(work) else ()
        return replace(stmt, body=(*kept, *work))


def _is_zero(e) -> bool:
    return isinstance(e, Const) and e.value == 0


def _check_memory_crossings(fn: Function, units: _Units) -> None:
    """A tensor one unit writes and the other reads or writes: in the kernel their order
    was the statements'; in the group nothing orders them (the pipe orders what it
    carries only)."""
    accesses: dict[str, dict[str, bool]] = {}  # tensor -> unit -> whether it wrote it
    for stmt in statements(list(fn.body)):
        call = getattr(stmt, "value", None)
        unit = units.leaf(stmt) if isinstance(stmt, (Assign, ExprStmt)) else None
        if not isinstance(call, Call) or unit not in ("cube", "vector"):
            continue
        dst = write_destination(call)
        for arg in call.args:
            if not (isinstance(arg, Var) and isinstance(arg.type, TensorType)):
                continue
            writes = arg is dst
            seen = accesses.setdefault(arg.name, {})
            other = "vector" if unit == "cube" else "cube"
            if other in seen and (writes or seen[other]):
                raise LoweringError(
                    f"`{arg.name}` is {'written' if seen[other] else 'read'} by the "
                    f"{_WORK[other]} and {'written' if writes else 'read'} here by the "
                    f"{_WORK[unit]} through global memory; pl.split runs the two at once, and "
                    "nothing orders these accesses (the pipe orders the values it carries)",
                    stmt.span,
                    hint="compute the value in the block and read it there (it then crosses "
                         "through the pipe), or make two pl.at blocks, or drop pl.split / "
                         "pl.cross_core_slot")
            seen[unit] = seen.get(unit, False) or writes


_WORK = {"cube": "cube work", "vector": "vector work"}


class _OutsideRegions(IRVisitor):
    """The names read outside every lane region (by the cube's side)."""

    def __init__(self):
        self.read: dict[str, Span | None] = {}
        self.where: Span | None = None

    def visit_stmt(self, stmt):
        if is_region(stmt):
            return None
        self.where = getattr(stmt, "span", None)
        return super().visit_stmt(stmt)

    def visit_Var(self, expr: Var):
        self.read.setdefault(expr.name, self.where)


def _check_lane_scalars(body: tuple, lane_scalars: dict[str, Span | None]) -> None:
    """A scalar only the lanes compute (it depends on their tiles) read by the cube."""
    reads = _OutsideRegions()
    reads.visit_body(body)
    for name, span in lane_scalars.items():
        if name in reads.read:
            raise LoweringError(
                f"`{name}` is computed from the vector lanes' tiles and read by the cube "
                "work, which runs on the other core", reads.read[name] or span,
                hint="compute it from values both units have, or drop pl.split / "
                     "pl.cross_core_slot (the kernel then runs its units one after the other)")


def _on_lane_zero(aiv: Function, lane: Var) -> Function:
    """With NONE, vector lane 0 does the vector work (the no-split pipe is lane 0's): the
    AIV function's work under `if get_subblock_idx() == 0`, its pipe declared first."""
    head = [s for s in aiv.body if isinstance(s, ExprStmt) and isinstance(s.value, Call)
            and s.value.op in INIT_OPS]
    ret = [s for s in aiv.body if isinstance(s, Return)]
    work = tuple(s for s in aiv.body if s not in head and s not in ret)
    span = aiv.span
    which = Var(lane.name, INDEX, span)
    bind = Assign((which,), make_call("get_subblock_idx", span=span), span)
    first = If(make_call("cmp", which, Const(0, INDEX), span=span, cmp_type=0), work, (), span)
    return replace(aiv, body=(*head, bind, first, *ret))
