"""Upstream's lane regions: `for aiv_id in pl.split_aiv(2, mode=...)` in an InCore kernel,
with `pl.aiv_shard(x)` (a cube tile read on the vector lanes) and `y = pl.aic_gather(v)` (a
lanes' tile read by the cube), lowered onto the explicit cross-core pipe.

A kernel that opens a region is split where it is parsed (as upstream's ExpandMixedKernel
splits it) into three functions of the program:
- `<kernel>_aic`, a pl.FunctionType.AIC function: the kernel without its regions, each
  region replaced by the cube's side of its crossings (`pl.tpush_to_aiv(x)` for each
  shard, `y = pl.tpop_from_aiv(...)` for each gather, freed after its last use);
- `<kernel>_aiv`, a pl.FunctionType.AIV function: the regions' bodies in order, in the
  loops and branches that hold them, `aiv_id` the lane (`pl.tensor.get_subblock_idx()`),
  each shard a `pl.tpop_from_aic` freed after its last use, each gather a
  `pl.tpush_to_aic`;
- `<kernel>` itself, a pl.FunctionType.Group calling the two: every call of the kernel
  runs both at once, the pipe between them.
Scalar statements outside the regions are on both sides.  The ring of each mode is pipe
`split` (0 NONE, 1 UP_DOWN, 2 LEFT_RIGHT), `DEFAULT_SLOTS` slots of its largest tile.
UP_DOWN / LEFT_RIGHT halve a shard to each lane (rows / columns) and rejoin a gather's
halves; NONE hands both lanes the whole tile and the cube lane 0's gathered tile (the
functions' "split_aiv" attribute marks that handshake of both lanes: codegen/group.py).

The rules are upstream's, each an error at the line at fault: once a kernel opens a
region, vector work goes in a region and cube work outside every region; a cube tile read
in a region is named by `pl.aiv_shard` and a region's tile read by the cube by
`pl.aic_gather`, written at the region's top level (not in a loop or branch of it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..ir.errors import ParseError, Span
from ..ir.names import fresh_name
from ..ir.nodes import (
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
from ..ir.ops import get_op, make_call
from ..ir.ops.cross_core import DEFAULT_SLOTS
from ..ir.types import INDEX, FunctionType, Level, MemorySpace, SplitMode, TileType, TupleType
from ..ir.visitor import IRMutator, defs, exposed_uses, statements, uses

REGION_KIND = "split_aiv:"  # For.kind of a region while its kernel is parsed
REGION_BUILTINS = ("split_aiv", "aiv_shard", "aic_gather")
SPLIT_OF = {SplitMode.NONE: 0, SplitMode.UP_DOWN: 1, SplitMode.LEFT_RIGHT: 2}
_CUBE_MEMORY = (MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                MemorySpace.Bias)


@dataclass
class Region:
    """One `pl.split_aiv` region of the kernel being parsed."""

    split: int
    span: Span
    outer: dict[str, Var]  # the names bound before it
    shards: list[tuple[Var, Var, Span]] = field(default_factory=list)  # cube tile, its pop
    gathers: list[tuple[Var, Var, Span]] = field(default_factory=list)  # cube name, lanes' tile


class SplitAivSyntax:
    """`FunctionParser` mixin: the lane regions of an InCore kernel; relies on the parser's
    `error`, `static`, `body`, `vars`, `pending` and `func_type`."""

    region: Region | None = None

    def split_aiv_region(self, node: ast.For) -> For:
        call = node.iter
        if self.func_type is not FunctionType.InCore or self.core_level is not None \
                or not self.regions_allowed:
            raise self.error(node, "`pl.split_aiv` opens a lane region in an InCore kernel "
                             "of a @pl.program (`@pl.function(type=pl.FunctionType.InCore)`)",
                             hint="write the kernel as a pl.FunctionType.InCore method of "
                                  "the program; a pl.at block's regions are not lowered yet")
        if self.region is not None:
            raise self.error(node, "lane regions do not nest: this one is inside another")
        modes = [kw.value for kw in call.keywords if kw.arg == "mode"]
        if len(call.args) != 1 or len(modes) != 1 or len(call.keywords) != 1:
            raise self.error(call, "write `pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN)` (or "
                             "LEFT_RIGHT, NONE)")
        if self.static(call.args[0]) != 2:
            raise self.error(call.args[0], "a core group has two vector lanes: "
                             "pl.split_aiv(2, mode=...)")
        mode = self.static(modes[0])
        if not isinstance(mode, SplitMode):
            raise self.error(modes[0], "pl.split_aiv(mode=) takes a pl.SplitMode")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "bind the lane to one name: `for aiv_id in "
                             "pl.split_aiv(...)`")
        span = self.source.span(node)
        region = Region(SPLIT_OF[mode], span, dict(self.vars))
        lane = Var(node.target.id, INDEX, self.source.span(node.target))
        self.vars[lane.name] = lane
        self.region = region
        self.regions.append(region)
        try:
            body = self.body(node.body)
        finally:
            self.region = None
        zero, one = Const(0, INDEX, span), Const(1, INDEX, span)
        head = Assign((lane,), make_call("get_subblock_idx", span=span), span)
        return For(lane, zero, one, one, (head, *body),
                   f"{REGION_KIND}{len(self.regions) - 1}", span)

    def region_builtin(self, name: str, node: ast.Call) -> Var:
        """A region builtin used as a value: `pl.aiv_shard(x)` is the lane's tile; the
        others are statements."""
        if name == "aiv_shard":
            return self.aiv_shard(node)
        if name == "aic_gather":
            raise self.error(node, "pl.aic_gather is a statement of a region: "
                             "`y = pl.aic_gather(v)`")
        raise self.error(node, "pl.split_aiv opens a region: `for aiv_id in "
                         "pl.split_aiv(2, mode=...):`")

    def aiv_shard(self, node: ast.Call, name: str | None = None) -> Var:
        """`pl.aiv_shard(x)`: the region's pop of the cube's tile `x` (the lane's half with
        a split), popped before the statement reading it (`t = pl.aiv_shard(x)`: into `t`,
        `name`)."""
        region = self._region_of(node, "pl.aiv_shard(x)")
        x = self._tile_operand(node, "pl.aiv_shard(x)")
        if region.outer.get(x.name) is not x:
            raise self.error(node, f"`{x.name}` is not a tile the cube computes before this "
                             "region: pl.aiv_shard names a cube tile read on the vector lanes")
        for tile, popped, _ in region.shards:
            if tile is x:
                return popped
        span = self.source.span(node)
        shape = _halved(x.type.shape, region.split, self.error, node)
        pop = make_call("system.tpop_from_aic", span=span, shape=tuple(shape), dtype=x.type.dtype,
                        split=region.split, id=region.split)
        popped = Var(name or self._region_name(f"{x.name}_shard"), pop.type, span)
        self.pending.append(Assign((popped,), pop, span))
        region.shards.append((x, popped, span))
        return popped

    def aic_gather(self, target: ast.expr, call: ast.Call, node: ast.Assign) -> ExprStmt:
        """`y = pl.aic_gather(v)`: the lanes push `v` (each its half with a split); `y` is
        the cube's tile, popped where the region is."""
        region = self._region_of(call, "pl.aic_gather(v)")
        v = self._tile_operand(call, "pl.aic_gather(v)")
        if not isinstance(target, ast.Name):
            raise self.error(node, "bind the gathered tile to one name: `y = pl.aic_gather(v)`")
        if region.outer.get(v.name) is v:
            raise self.error(call, f"`{v.name}` is not computed in this region: pl.aic_gather "
                             "names a tile of the vector lanes read by the cube")
        span = self.source.span(node)
        shape = _doubled(v.type.shape, region.split)
        pop = make_call("system.tpop_from_aiv", span=span, shape=tuple(shape), dtype=v.type.dtype,
                        split=region.split, id=region.split)
        gathered = Var(target.id, pop.type, self.source.span(target))
        self.vars[target.id] = gathered
        region.gathers.append((gathered, v, span))
        return ExprStmt(make_call("system.tpush_to_aic", v, span=span, split=region.split,
                                  id=region.split), span)

    def _region_of(self, node: ast.Call, what: str) -> Region:
        if self.region is None:
            raise self.error(node, f"{what} crosses a lane region's edge: write it inside `for "
                             "aiv_id in pl.split_aiv(2, mode=...)`")
        return self.region

    def _tile_operand(self, node: ast.Call, what: str) -> Var:
        if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.Name) \
                or node.args[0].id not in self.vars:
            raise self.error(node, f"write {what} of one named tile")
        var = self.vars[node.args[0].id]
        if not isinstance(var.type, TileType) or len(var.type.shape) != 2 \
                or var.type.valid_shape is not None:
            raise self.error(node, f"{what} takes a 2-D tile whose valid region is all of it")
        return var

    def aiv_shard_assign(self, target: ast.expr, call: ast.Call, node: ast.Assign) -> list:
        """`t = pl.aiv_shard(x)`: the pop is `t`'s binding."""
        if not isinstance(target, ast.Name):
            raise self.error(node, "bind the shard to one name: `t = pl.aiv_shard(x)`")
        popped = self.aiv_shard(call, target.id)
        pending, self.pending = self.pending, []
        if not pending:  # `x` was sharded before in this region: `t` names that tile
            var = Var(target.id, popped.type, self.source.span(target))
            pending = [Assign((var,), popped, self.source.span(node))]
        self.vars[target.id] = pending[-1].targets[0]
        return pending

    def _region_name(self, base: str) -> str:
        return fresh_name(base, self.vars)


def _halved(shape: tuple, split: int, error, node) -> tuple:
    if split == 0:
        return shape
    axis = split - 1
    if shape[axis] % 2:
        raise error(node, f"a tile of {shape[axis]} {('rows', 'columns')[axis]} does not "
                    "halve between the two lanes")
    return tuple(n // 2 if i == axis else n for i, n in enumerate(shape))


def _doubled(shape: tuple, split: int) -> tuple:
    return tuple(n * 2 if split and i == split - 1 else n for i, n in enumerate(shape))


# --------------------------------------------------------------------------- the split
def _calls(expr):
    if isinstance(expr, Call):
        yield expr
        for a in expr.args:
            yield from _calls(a)


def _is_region(stmt) -> bool:
    return isinstance(stmt, For) and stmt.kind.startswith(REGION_KIND)


_COMPOUND = (For, While, If)  # statements with bodies a kernel's regions may sit in


def _holds_region(stmt) -> bool:
    return any(_is_region(s) for s in statements(stmt))


class _EachBody(IRMutator):
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


def _region_statements(region_loop: For) -> tuple:
    """A region's statements (the region is a For of REGION_KIND while its kernel is split)."""
    return region_loop.body


class _Splitter:
    """Splits one kernel's body into its cube and vector sides (see the module)."""

    def __init__(self, fn: Function, regions: list[Region]):
        self.fn, self.regions = fn, regions
        self.cube_tiles: set[str] = set()    # tiles the cube computes
        self.lane_tiles: set[str] = set()    # tiles a region computes
        self.gathered = {g.name for r in regions for g, _, _ in r.gathers}

    # Units ----------------------------------------------------------------------------
    def unit(self, stmt) -> str | None:
        """"cube", "vector" or None (scalar work, on both sides) for a simple statement."""
        value = getattr(stmt, "value", None)
        found = None
        for call in _calls(value):
            kind = self._unit_of_call(call)
            if kind == "cube":
                return "cube"
            found = found or kind
        return found

    def _unit_of_call(self, call: Call) -> str | None:
        if call.op.startswith("system."):
            return None  # the pipe's own operators, placed by the split
        category = get_op(call.op).category
        if category == "matmul":
            return "cube"
        if call.op in ("load", "move", "create_tile"):
            target = call.attr("target_memory")
            if target in _CUBE_MEMORY:
                return "cube"
        if call.op == "store":
            tile = call.args[0]
            if isinstance(tile, Var) and tile.name in self.cube_tiles:
                return "cube"
        tiles = isinstance(call.type, TileType) or any(
            isinstance(getattr(a, "type", None), TileType) for a in call.args)
        return "vector" if tiles else None

    # The cube ---------------------------------------------------------------------------
    def cube(self, body: tuple, after: set[str]) -> tuple:
        out: list = []
        popped: list[Var] = []
        for i, stmt in enumerate(body):
            later = after | set().union(*(uses(s) for s in body[i + 1:])) if body[i + 1:] \
                else after
            if _is_region(stmt):
                region = self.regions[int(stmt.kind[len(REGION_KIND):])]
                for tile, _, span in region.shards:
                    out.append(ExprStmt(make_call("system.tpush_to_aiv", tile, span=span,
                                                  split=region.split, id=region.split), span))
                for gathered, _, span in region.gathers:
                    pop = make_call("system.tpop_from_aiv", span=span,
                                    shape=tuple(gathered.type.shape), dtype=gathered.type.dtype,
                                    split=region.split, id=region.split)
                    out.append(Assign((gathered,), pop, span))
                    popped.append(gathered)
                continue
            if isinstance(stmt, Return):
                continue
            if isinstance(stmt, _COMPOUND):
                # A loop body's reads before its binds are the next iteration's.
                # (A gathered name is bound by its region's pop, not in the kernel's IR.)
                nested = _EachBody(lambda b, later=later: self.cube(
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
        return {g.name for s in statements(list(body)) if _is_region(s)
                for g, _, _ in self.regions[int(s.kind[len(REGION_KIND):])].gathers}

    def _check_cube(self, stmt) -> None:
        unit = self.unit(stmt)
        if unit == "vector":
            raise ParseError("vector work outside every lane region: once a kernel opens a "
                             "`pl.split_aiv` region, its vector work goes inside one (cube "
                             "work stays outside)", stmt.span,
                             hint="move it into a `for aiv_id in pl.split_aiv(2, mode=...)` "
                                  "region")
        for name in uses(stmt):
            if name in self.lane_tiles and name not in self.gathered:
                raise ParseError(f"`{name}` is computed on the vector lanes and read here by "
                                 "the cube: name the crossing", stmt.span,
                                 hint=f"in the region, write `{name}_c = pl.aic_gather({name})`"
                                      f" and read `{name}_c` here")
        if unit == "cube":
            self.cube_tiles.update(n for n, v in _defs(stmt).items()
                                   if isinstance(v.type, TileType))

    def _freed(self, out: list, popped: list[Var], after: set[str], free_op: str) -> list:
        """`out` with a tfree of each tile in `popped` after the last statement reading it
        (or after its pop); a popped tile read after `out` ends is an error."""
        for var in popped:
            if var.name in after:
                raise ParseError(f"`{var.name}` is read after the block of its region ends; "
                                 "its ring slot is freed at that end", var.span,
                                 hint="read it in the same loop body or branch as its region")
            names = {var.name}  # and the names bound to it (`u = t`)
            for s in out:
                if isinstance(s, Assign) and isinstance(s.value, Var) and s.value.name in names:
                    names.update(t.name for t in s.targets)
            last = max(i for i, s in enumerate(out) if names & (set(uses(s)) | set(_defs(s))))
            free = ExprStmt(make_call(free_op, var, span=var.span, id=_pipe_id(out, var)),
                            var.span)
            out.insert(last + 1, free)
        return out

    # The vector lanes -------------------------------------------------------------------
    def vector(self, body: tuple) -> tuple:
        out: list = []
        for stmt in body:
            if _is_region(stmt):
                out += self._region_body(self.regions[int(stmt.kind[len(REGION_KIND):])],
                                         _region_statements(stmt))
            elif isinstance(stmt, Return):
                continue
            elif isinstance(stmt, _COMPOUND):
                if _holds_region(stmt):
                    out.append(_EachBody(self.vector).mutate_stmt(stmt))
            elif self.unit(stmt) is None:
                out.append(stmt)  # scalar work: on both sides
        return tuple(out)

    def _region_body(self, region: Region, body: tuple) -> list:
        """The region's body on the lanes, each shard freed after its last read; its rules
        checked."""
        _check_top_level(region, body)
        shards = {popped.name for _, popped, _ in region.shards}
        for stmt in statements(list(body)):
            if isinstance(stmt, _COMPOUND):
                continue
            if self.unit(stmt) == "cube":
                raise ParseError("cube work inside a lane region: the region runs on the "
                                 "vector lanes", stmt.span,
                                 hint="compute it before the region and read it with "
                                      "pl.aiv_shard")
            for name in uses(stmt):
                if name in self.cube_tiles and name not in shards:
                    raise ParseError(f"`{name}` is computed by the cube and read here on the "
                                     "vector lanes: name the crossing", stmt.span,
                                     hint=f"read `pl.aiv_shard({name})` at the region's top")
                if name in self.gathered:
                    raise ParseError(f"`{name}` is the cube's gathered tile; the lanes read "
                                     "the tile they pushed", stmt.span)
            self.lane_tiles.update(n for n, v in _defs(stmt).items()
                                   if isinstance(v.type, TileType))
        popped = [popped for _, popped, _ in region.shards]
        return self._freed(list(body), popped, set(), "system.tfree_to_aic")


def _check_top_level(region: Region, body: tuple) -> None:
    """A region's crossings are at its top level: the cube makes its side once per
    region."""
    top = {t.name for s in body if isinstance(s, Assign) for t in s.targets}
    for _, popped, span in region.shards:
        if popped.name not in top:
            raise ParseError("write pl.aiv_shard at the region's top level, not in a loop or "
                             "branch of it: the cube pushes the tile once per region", span)
    for _, _, span in region.gathers:
        if not any(isinstance(s, ExprStmt) and s.span == span for s in body):
            raise ParseError("write pl.aic_gather at the region's top level, not in a loop or "
                             "branch of it: the cube pops the tile once per region", span)


def _defs(stmt) -> dict[str, Var]:
    return defs(stmt)


def _pipe_id(out: list, var: Var) -> int:
    for s in out:
        if isinstance(s, Assign) and s.targets == (var,) and isinstance(s.value, Call):
            return s.value.attr("id")
    return 0


def split_kernel(fn: Function, regions: list[Region], taken: set[str]) -> list[Function]:
    """The AIC function, the AIV function and the Group (named as the kernel) a kernel
    with lane regions becomes."""
    splitter = _Splitter(fn, regions)
    # The cube first: it learns which tiles are the cube's, which the regions may not read.
    cube_body = splitter.cube(fn.body, set())
    vector_body = splitter.vector(fn.body)
    # The cube's checks of reads of region tiles need the regions' tiles: check again.
    splitter.cube(fn.body, set())
    ret = next((s for s in fn.body if isinstance(s, Return)), None)
    returned = [v.name for v in ret.values] if ret is not None else []
    sides = []
    for level, body in ((Level.AIC, cube_body), (Level.AIV, vector_body)):
        body = _initialized(level, regions) + body
        written = [n for n in returned if n in _defs_all(body)]
        values = tuple(next(p.var for p in fn.params if p.var.name == n) for n in written)
        if values:
            body += (Return(values, fn.span),)
        read = uses(body)
        params = tuple(p for p in fn.params if p.var.name in read)
        name = _fresh(f"{fn.name}_{level.name.lower()}", taken)
        sides.append(Function(name, params, tuple(v.type for v in values), body,
                              FunctionType.InCore, fn.span,
                              attrs=(("level", level), ("split_aiv", True))))
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


def _defs_all(body: tuple) -> set[str]:
    return set(defs(body))


def _initialized(level: Level, regions: list[Region]) -> tuple:
    """Each side's initialize_pipe of every ring its regions use: pipe `split`, the
    directions used, slots of the largest tile crossing."""
    rings: dict[int, tuple[int, int]] = {}
    for r in regions:
        for tile, _, _ in r.shards:
            mask, size = rings.get(r.split, (0, 0))
            rings[r.split] = (mask | 1, max(size, tile.type.nbytes))
        for gathered, _, _ in r.gathers:
            mask, size = rings.get(r.split, (0, 0))
            rings[r.split] = (mask | 2, max(size, gathered.type.nbytes))
    op = "system.aic_initialize_pipe" if level is Level.AIC else "system.aiv_initialize_pipe"
    span = regions[0].span
    return tuple(ExprStmt(make_call(op, span=span, dir_mask=mask, slot_size=size,
                                    slot_num=DEFAULT_SLOTS, id=pipe_id), span)
                 for pipe_id, (mask, size) in sorted(rings.items()))


def _fresh(base: str, taken: set[str]) -> str:
    name = fresh_name(base, taken)
    taken.add(name)
    return name
