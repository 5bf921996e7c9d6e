"""Upstream's lane regions: `for aiv_id in pl.split_aiv(2, mode=...)` in an InCore kernel,
with `pl.aiv_shard(x)` (a cube tile read on the vector lanes) and `y = pl.aic_gather(v)` (a
lanes' tile read by the cube), lowered onto the explicit cross-core pipe.

This module is the syntax: it reads a region into a For of `REGION_KIND` (the lane bound at
its top), each `pl.aiv_shard(x)` into the region's pop of `x` and each `pl.aic_gather(v)`
into its push of `v`, recording them in a `Region`.  A kernel that opens a region is split
where it is parsed (as upstream's ExpandMixedKernel splits it) by `ir.lane_split.split_kernel`,
the implementation the pass ExpandMixedKernel shares: `<kernel>_aic`, `<kernel>_aiv` and
`<kernel>`, the group of the two.  NONE hands both lanes the whole tile and the cube lane 0's
gathered tile (the functions' "split_aiv" attribute marks that handshake of both lanes:
codegen/group.py).
"""

from __future__ import annotations

import ast

from ..ir.lane_split import SPLIT_OF, Region, doubled, halved, region_loop, split_kernel
from ..ir.names import fresh_name
from ..ir.nodes import Assign, ExprStmt, For, Var
from ..ir.ops import make_call
from ..ir.types import INDEX, FunctionType, SplitMode, TileType

REGION_BUILTINS = ("split_aiv", "aiv_shard", "aic_gather")

__all__ = ["REGION_BUILTINS", "SplitAivSyntax", "split_kernel"]


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
                                  "the program, or give a pl.at block optimizations=[pl.split("
                                  "mode)]: the compiler forms its lane regions itself")
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
        return region_loop(lane, tuple(body), len(self.regions) - 1, span)

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
        shape = self._halved(x.type.shape, region.split, node)
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
        shape = doubled(v.type.shape, region.split)
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

    def _halved(self, shape: tuple, split: int, node) -> tuple:
        axis = split - 1
        if split and shape[axis] % 2:
            raise self.error(node, f"a tile of {shape[axis]} {('rows', 'columns')[axis]} does "
                             "not halve between the two lanes")
        return halved(shape, split)

    def _region_name(self, base: str) -> str:
        return fresh_name(base, self.vars)


