"""A mixed kernel split into its cube side and its vector lanes: upstream's
ExpandMixedKernel, one implementation for both of its sources.

A kernel whose vector work sits in *lane regions* (each a For of `REGION_KIND` whose body
begins `aiv_id = pl.get_subblock_idx()` and runs on the two vector lanes) becomes three
functions of the program (`split_kernel`):
- `<kernel>_aic`, the cube's side (level AIC): the kernel without its regions, each region
  replaced by the cube's side of its crossings (`pl.tpush_to_aiv(x)` for each shard,
  `y = pl.tpop_from_aiv(...)` for each gather, freed after its last use);
- `<kernel>_aiv`, the lanes' side (level AIV): the regions' bodies in order, in the loops
  and branches that hold them, each shard a `pl.tpop_from_aic` freed after its last use,
  each gather a `pl.tpush_to_aic`;
- `<kernel>` itself, a pl.FunctionType.Group calling the two: every call of the kernel
  runs both at once, the pipe between them.
Scalar statements outside the regions are on both sides.  The ring of each mode is pipe
`split` (0 NONE, 1 UP_DOWN, 2 LEFT_RIGHT): `slot_num` slots (default `DEFAULT_SLOTS`) of the
largest tile crossing it, whole (the cube's tile, not a lane's half).  UP_DOWN / LEFT_RIGHT
halve a shard to each lane (rows / columns) and rejoin a gather's halves.

The regions come from two places: the parser's `pl.split_aiv` regions of an InCore kernel
(language/split_aiv.py, split where they are parsed) and the regions ExpandMixedKernel
forms in a `pl.at` block's kernel lowered to tiles (passes/expand_mixed_kernel.py).  The
rules are upstream's, each an error at the line at fault (of the class the caller names):
once a kernel opens a region, vector work goes in a region and cube work outside every
region; a cube tile read in a region is a shard and a region's tile read by the cube a
gather, made at the region's top level (not in a loop or branch of it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InternalError, ParseError, PyptoError, Span
from .names import claim_name
from .nodes import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Return,
    Var,
    While,
)
from .ops import get_op, make_call
from .ops.cross_core import DEFAULT_SLOTS
from .types import (
    INDEX,
    FunctionType,
    Level,
    MemorySpace,
    SplitMode,
    TileType,
    TupleType,
    describe,
)
from .visitor import IRMutator, defs, exposed_uses, statements, uses

REGION_KIND = "split_aiv:"  # For.kind of a region while its kernel is split: "split_aiv:<n>"
SPLIT_OF = {SplitMode.NONE: 0, SplitMode.UP_DOWN: 1, SplitMode.LEFT_RIGHT: 2}
CUBE_MEMORY = (MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
               MemorySpace.Bias)


@dataclass
class Region:
    """One lane region of a kernel: its split (pipe id), where it is, and its crossings."""

    split: int
    span: Span | None
    outer: dict[str, Var] = field(default_factory=dict)  # the names bound before it
    shards: list[tuple[Var, Var, Span | None]] = field(default_factory=list)  # cube tile, pop
    gathers: list[tuple[Var, Var, Span | None]] = field(default_factory=list)  # cube's, lanes'


def tile_type(var: Var) -> TileType:
    """The tile type of a variable that crosses the pipe (a tile by the ops' inference)."""
    if not isinstance(var.type, TileType):
        raise InternalError(f"lane split: `{var.name}` crosses the pipe but is "
                            f"{describe(var.type)}, not a tile")
    return var.type


def halved(shape: tuple, split: int) -> tuple:
    """A lane's part of a tile of `shape` under `split` (the whole tile with 0); the axis
    must be even (the caller checks)."""
    if split == 0:
        return tuple(shape)
    axis = split - 1
    return tuple(n // 2 if i == axis else n for i, n in enumerate(shape))


def doubled(shape: tuple, split: int) -> tuple:
    """The whole tile the lanes' parts of `shape` make under `split`."""
    return tuple(n * 2 if split and i == split - 1 else n for i, n in enumerate(shape))


def region_loop(lane: Var, body: tuple, index: int, span: Span | None) -> For:
    """The For standing for region `index` while its kernel is split: `lane` is bound to
    the vector lane at its top."""
    zero, one = Const(0, INDEX, span), Const(1, INDEX, span)
    head = Assign((lane,), make_call("get_subblock_idx", span=span), span)
    return For(lane, zero, one, one, (head, *body), f"{REGION_KIND}{index}", span)


def call_unit(call: Call, cube_tiles: set[str]) -> str | None:
    """"cube", "vector" or None (not a tile operator: on both sides) for an operator call;
    `cube_tiles` names the tiles the cube computes (a store of one is the cube's)."""
    if call.op.startswith("system."):
        return None  # the pipe's own operators, placed by the split
    category = get_op(call.op).category
    if category == "matmul":
        return "cube"
    if call.op in ("load", "move", "create_tile"):
        target = call.attr("target_memory")
        if target in CUBE_MEMORY:
            return "cube"
    if call.op == "store":
        tile = call.args[0]
        if isinstance(tile, Var) and tile.name in cube_tiles:
            return "cube"
    tiles = isinstance(call.type, TileType) or any(
        isinstance(getattr(a, "type", None), TileType) for a in call.args)
    return "vector" if tiles else None


def _calls(expr):
    if isinstance(expr, Call):
        yield expr
        for a in expr.args:
            yield from _calls(a)


def statement_unit(stmt, cube_tiles: set[str]) -> str | None:
    """"cube", "vector" or None (scalar work, on both sides) for a simple statement."""
    value = getattr(stmt, "value", None)
    found = None
    for call in _calls(value):
        kind = call_unit(call, cube_tiles)
        if kind == "cube":
            return "cube"
        found = found or kind
    return found


def is_region(stmt) -> bool:
    return isinstance(stmt, For) and stmt.kind.startswith(REGION_KIND)


def region_index(stmt: For) -> int:
    """The number of the region a For of REGION_KIND stands for."""
    return int(stmt.kind[len(REGION_KIND):])


_COMPOUND = (For, While, If)  # statements with bodies a kernel's regions may sit in


def _holds_region(stmt) -> bool:
    return any(is_region(s) for s in statements(stmt))


class EachBody(IRMutator):
    """A loop or branch rebuilt with each of its bodies replaced by `side(body)` (the
    visitor reads the bodies, loops and branches alike); `results` are the new bodies."""

    def __init__(self, side):
        self.side = side
        self.results: list[tuple] = []

    def mutate_body(self, body) -> tuple:
        new = tuple(self.side(tuple(body)))
        self.results.append(new)
        return new

    def mutate_expr(self, expr):
        return expr

    def mutate_def(self, var):
        return var


class _Splitter:
    """Splits one kernel's body into its cube and vector sides (see the module)."""

    def __init__(self, fn: Function, regions: list[Region], error: type[PyptoError]):
        self.fn, self.regions, self.error = fn, regions, error
        self.cube_tiles: set[str] = set()    # tiles the cube computes
        self.lane_tiles: set[str] = set()    # tiles a region computes
        self.gathered = {g.name for r in regions for g, _, _ in r.gathers}

    def unit(self, stmt) -> str | None:
        return statement_unit(stmt, self.cube_tiles)

    def _region(self, stmt: For) -> Region:
        return self.regions[region_index(stmt)]

    # The cube ---------------------------------------------------------------------------
    def cube(self, body: tuple, after: set[str]) -> tuple:
        out: list = []
        popped: list[Var] = []
        for i, stmt in enumerate(body):
            later = after | set().union(*(uses(s) for s in body[i + 1:])) if body[i + 1:] \
                else after
            if is_region(stmt):
                region = self._region(stmt)
                for tile, _, span in region.shards:
                    out.append(ExprStmt(make_call("system.tpush_to_aiv", tile, span=span,
                                                  split=region.split, id=region.split), span))
                for gathered, _, span in region.gathers:
                    whole = tile_type(gathered)
                    pop = make_call("system.tpop_from_aiv", span=span,
                                    shape=tuple(whole.shape), dtype=whole.dtype,
                                    split=region.split, id=region.split)
                    out.append(Assign((gathered,), pop, span))
                    popped.append(gathered)
                continue
            if isinstance(stmt, Return):
                continue
            if isinstance(stmt, _COMPOUND):
                # A loop body's reads before its binds are the next iteration's.
                # (A gathered name is bound by its region's pop, not in the kernel's IR.)
                nested = EachBody(lambda b, later=later: self.cube(
                    b, later | (exposed_uses(b) - self._gathered_in(b))))
                rebuilt = nested.mutate_stmt(stmt)
                if any(nested.results) or not _holds_region(stmt):
                    out.append(rebuilt)
                continue
            self._check_cube(stmt)
            out.append(stmt)
        return tuple(self._freed(out, popped, after, "system.tfree_to_aiv"))

    def _gathered_in(self, body: tuple) -> set[str]:
        """The names the regions in `body` gather."""
        return {g.name for s in statements(list(body)) if is_region(s)
                for g, _, _ in self._region(s).gathers}

    def _check_cube(self, stmt) -> None:
        unit = self.unit(stmt)
        if unit == "vector":
            raise self.error("vector work outside every lane region: once a kernel opens a "
                             "`pl.split_aiv` region, its vector work goes inside one (cube "
                             "work stays outside)", stmt.span,
                             hint="move it into a `for aiv_id in pl.split_aiv(2, mode=...)` "
                                  "region")
        for name in uses(stmt):
            if name in self.lane_tiles and name not in self.gathered:
                raise self.error(f"`{name}` is computed on the vector lanes and read here by "
                                 "the cube: name the crossing", stmt.span,
                                 hint=f"in the region, write `{name}_c = pl.aic_gather({name})`"
                                      f" and read `{name}_c` here")
        if unit == "cube":
            self.cube_tiles.update(n for n, v in defs(stmt).items()
                                   if isinstance(v.type, TileType))

    def _freed(self, out: list, popped: list[Var], after: set[str], free_op: str) -> list:
        """`out` with a tfree of each tile in `popped` after the last statement reading it
        (or after its pop); a popped tile read after `out` ends is an error."""
        for var in popped:
            if var.name in after:
                raise self.error(f"`{var.name}` is read after the block of its region ends; "
                                 "its ring slot is freed at that end", var.span,
                                 hint="read it in the same loop body or branch as its region")
            names = {var.name}  # and the names bound to it (`u = t`)
            for s in out:
                if isinstance(s, Assign) and isinstance(s.value, Var) and s.value.name in names:
                    names.update(t.name for t in s.targets)
            last = max(i for i, s in enumerate(out) if names & (set(uses(s)) | set(defs(s))))
            free = ExprStmt(make_call(free_op, var, span=var.span, id=_pipe_id(out, var)),
                            var.span)
            out.insert(last + 1, free)
        return out

    # The vector lanes -------------------------------------------------------------------
    def vector(self, body: tuple) -> tuple:
        out: list = []
        for stmt in body:
            if is_region(stmt):
                out += self._region_body(self._region(stmt), stmt.body)
            elif isinstance(stmt, Return):
                continue
            elif isinstance(stmt, _COMPOUND):
                if _holds_region(stmt):
                    out.append(EachBody(self.vector).mutate_stmt(stmt))
            elif self.unit(stmt) is None:
                out.append(stmt)  # scalar work: on both sides
        return tuple(out)

    def _region_body(self, region: Region, body: tuple) -> list:
        """The region's body on the lanes, each shard freed after its last read; its rules
        checked."""
        self._check_top_level(region, body)
        shards = {popped.name for _, popped, _ in region.shards}
        for stmt in statements(list(body)):
            if isinstance(stmt, _COMPOUND):
                continue
            if self.unit(stmt) == "cube":
                raise self.error("cube work inside a lane region: the region runs on the "
                                 "vector lanes", stmt.span,
                                 hint="compute it before the region and read it with "
                                      "pl.aiv_shard")
            for name in uses(stmt):
                if name in self.cube_tiles and name not in shards:
                    raise self.error(f"`{name}` is computed by the cube and read here on the "
                                     "vector lanes: name the crossing", stmt.span,
                                     hint=f"read `pl.aiv_shard({name})` at the region's top")
                if name in self.gathered:
                    raise self.error(f"`{name}` is the cube's gathered tile; the lanes read "
                                     "the tile they pushed", stmt.span)
            self.lane_tiles.update(n for n, v in defs(stmt).items()
                                   if isinstance(v.type, TileType))
        popped = [popped for _, popped, _ in region.shards]
        return self._freed(list(body), popped, set(), "system.tfree_to_aic")

    def _check_top_level(self, region: Region, body: tuple) -> None:
        """A region's crossings are at its top level: the cube makes its side once per
        region."""
        top = {t.name for s in body if isinstance(s, Assign) for t in s.targets}
        for _, popped, span in region.shards:
            if popped.name not in top:
                raise self.error("write pl.aiv_shard at the region's top level, not in a loop "
                                 "or branch of it: the cube pushes the tile once per region",
                                 span)
        for _, _, span in region.gathers:
            if not any(isinstance(s, ExprStmt) and s.span == span for s in body):
                raise self.error("write pl.aic_gather at the region's top level, not in a "
                                 "loop or branch of it: the cube pops the tile once per region",
                                 span)


def _pipe_id(out: list, var: Var) -> int:
    for s in out:
        if isinstance(s, Assign) and s.targets == (var,) and isinstance(s.value, Call):
            return s.value.attr("id")
    return 0


def split_kernel(fn: Function, regions: list[Region], taken: set[str], *,
                 slot_num: int = DEFAULT_SLOTS, error: type[PyptoError] = ParseError,
                 attrs: tuple = (("split_aiv", True),)) -> list[Function]:
    """The AIC function, the AIV function and the Group (named as the kernel) a kernel
    with lane regions becomes; its rings have `slot_num` slots, its sides carry `attrs`
    besides their level, and a broken rule raises `error` at its line."""
    splitter = _Splitter(fn, regions, error)
    # The cube first: it learns which tiles are the cube's, which the regions may not read.
    cube_body = splitter.cube(fn.body, set())
    vector_body = splitter.vector(fn.body)
    # The cube's checks of reads of region tiles need the regions' tiles: check again.
    splitter.cube(fn.body, set())
    ret = next((s for s in fn.body if isinstance(s, Return)), None)
    returned = [v.name for v in ret.values] if ret is not None else []
    sides = []
    for level, body in ((Level.AIC, cube_body), (Level.AIV, vector_body)):
        body = _initialized(level, regions, slot_num) + body
        written = [n for n in returned if n in defs(body)]
        values = tuple(next(p.var for p in fn.params if p.var.name == n) for n in written)
        if values:
            body += (Return(values, fn.span),)
        read = uses(body)
        params = tuple(p for p in fn.params if p.var.name in read)
        name = claim_name(f"{fn.name}_{level.name.lower()}", taken)
        sides.append(Function(name, params, tuple(v.type for v in values), body,
                              FunctionType.InCore, fn.span,
                              attrs=tuple(sorted((("level", level), *attrs),
                                                 key=lambda kv: kv[0]))))
    calls: list = []
    for side in sides:
        args = tuple(p.var for p in side.params)
        results = tuple(v for s in side.body if isinstance(s, Return) for v in s.values)
        rtype = results[0].type if len(results) == 1 else TupleType(tuple(r.type for r in results))
        call = FuncCall(side.name, args, rtype, fn.span)
        calls.append(Assign(results, call, fn.span) if results else ExprStmt(call, fn.span))
    if ret is not None:
        calls.append(ret)
    group = Function(fn.name, fn.params, fn.returns, tuple(calls), FunctionType.Group, fn.span)
    return [*sides, group]


def _initialized(level: Level, regions: list[Region], slot_num: int) -> tuple:
    """Each side's initialize_pipe of every ring its regions use: pipe `split`, the
    directions used, `slot_num` slots of the largest tile crossing."""
    rings: dict[int, tuple[int, int]] = {}
    for r in regions:
        for tile, _, _ in r.shards:
            mask, size = rings.get(r.split, (0, 0))
            rings[r.split] = (mask | 1, max(size, tile_type(tile).nbytes))
        for gathered, _, _ in r.gathers:
            mask, size = rings.get(r.split, (0, 0))
            rings[r.split] = (mask | 2, max(size, tile_type(gathered).nbytes))
    op = "system.aic_initialize_pipe" if level is Level.AIC else "system.aiv_initialize_pipe"
    span = _first_crossing(regions)
    return tuple(ExprStmt(make_call(op, span=span, dir_mask=mask, slot_size=size,
                                    slot_num=slot_num, id=pipe_id), span)
                 for pipe_id, (mask, size) in sorted(rings.items()))


def _first_crossing(regions: list[Region]) -> Span | None:
    """Where the pipe is declared: the first region's (its first crossing's, for a region
    without a place of its own)."""
    first = regions[0]
    if first.span is not None:
        return first.span
    spans = [s for _, _, s in first.shards + first.gathers if s is not None]
    return spans[0] if spans else None

