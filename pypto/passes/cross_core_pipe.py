"""The checks of a program's cross-core pipes (ir/ops/cross_core), and the ring each one
reserves in its consumer's buffer.

`check_program_pipes` (the parser runs it on every @pl.program, the pass again after
lowering) holds the rules that make a group's pipes well formed, each an error at the line
at fault:
- a pipe operator sits in the function of its core: pl.tpush_to_aiv / tpop_from_aiv /
  tfree_to_aiv / aic_initialize_pipe in a pl.FunctionType.AIC function, the `_aic` ones in
  a pl.FunctionType.AIV function; a function that uses the pipe is called from a
  pl.FunctionType.Group only, and a group calls one AIC and one AIV function;
- a push or pop is of a direction its function's initialize_pipe declares (same `id`),
  with the same ring (`slot_num`, `slot_size`) on both sides;
- every pop has a push of its direction in the peer function, every push a pop;
- a tfree releases a tile popped in the same direction, in the same function;
- a pushed or popped tile fits its slot (`slot_size` bytes);
- the pushes and pops of a ring agree on the split, the dtype and the tile's shape.

`CheckCrossCorePipes` adds what needs the lowered program and the backend: a pushed tile
lives where TPUSH reads it (Acc on the cube, Vec on a vector lane), and each ring fits the
consuming core's buffer (`slot_num * slot_size` bytes of Vec for cube-to-vector, Mat for
vector-to-cube; backend capacities).  `ring_reservation` is the part of that buffer the
ring takes: AllocateMemoryAddr places the function's own tiles above it, as upstream's
reserve_buffer does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.errors import CapacityError, LoweringError, Span, TypeCheckError
from ..ir.nodes import Assign, Call, ExprStmt, FuncCall, Function, Program, Var
from ..ir.ops.cross_core import (
    CORE_OF,
    DEFAULT_SLOTS,
    DIR_MASKS,
    FREE_OPS,
    INIT_OPS,
    PIPE_OPS,
    POP_OPS,
    PUSH_OPS,
)
from ..ir.types import FunctionType, Level, MemorySpace, TileType
from ..ir.visitor import statements
from .manager import Pass

# The buffer a ring of each direction lives in (the consumer's) and its core.
CONSUMER = {"C2V": (MemorySpace.Vec, Level.AIV), "V2C": (MemorySpace.Mat, Level.AIC)}
# Where TPUSH reads the pushed tile, per direction (pto-isa: AccTile C2V, VecTile V2C).
PUSHED_FROM = {"C2V": MemorySpace.Acc, "V2C": MemorySpace.Vec}


@dataclass(frozen=True)
class Ring:
    """One direction of pipe `pipe_id` as a function's initialize_pipe declares it."""

    slot_num: int
    slot_size: int
    span: Span | None


def pipe_calls(fn: Function) -> list[tuple[Call, Span | None, Var | None]]:
    """The pipe operator calls of `fn` in program order: (call, statement span, the
    variable a pop defines)."""
    found = []
    for s in statements(list(fn.body)):
        if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, Call) \
                and s.value.op in PIPE_OPS:
            target = s.targets[0] if isinstance(s, Assign) else None
            found.append((s.value, s.span, target))
    return found


def rings(fn: Function) -> dict[tuple[int, str], Ring]:
    """(pipe id, direction) -> the ring `fn`'s initialize_pipe calls declare."""
    out: dict[tuple[int, str], Ring] = {}
    for call, span, _ in pipe_calls(fn):
        if call.op in INIT_OPS:
            slots = call.attr("slot_num") or DEFAULT_SLOTS
            for direction in DIR_MASKS[call.attr("dir_mask")]:
                out[(call.attr("id") or 0, direction)] = Ring(slots, call.attr("slot_size"),
                                                              span)
    return out


def automatic_pipe(fn: Function) -> bool:
    """Whether `fn` is a side of a kernel ExpandMixedKernel split (its pipe is the one
    `pl.split` / `pl.cross_core_slot` ask for, not one the program declares)."""
    return fn.attr("split") is not None or fn.attr("slot_num") is not None


RESIZE_AUTOMATIC_RING = (
    "lower its depth with optimizations=[pl.cross_core_slot(slot_num=N)] on the enclosing "
    f"pl.at(...) ({DEFAULT_SLOTS} slots by default), or shrink the tile that crosses the "
    "cube/vector boundary")


def uses_pipe(fn: Function) -> bool:
    return bool(pipe_calls(fn))


def ring_reservation(fn: Function) -> dict[str, int]:
    """Bytes at the bottom of each buffer of `fn` its consumer-side rings take."""
    level = fn.attr("level")
    out: dict[str, int] = {}
    for (_, direction), ring in rings(fn).items():
        space, consumer = CONSUMER[direction]
        if consumer is level:
            out[space.name] = out.get(space.name, 0) + ring.slot_num * ring.slot_size
    return out


def _direction(op: str) -> str:
    return {**PUSH_OPS, **POP_OPS, **FREE_OPS}[op]


def _check_function(fn: Function) -> None:
    level = fn.attr("level")
    declared = rings(fn)
    popped: dict[str, str] = {}  # variable -> direction of the pop that defined it
    for call, span, target in pipe_calls(fn):
        core = CORE_OF.get(call.op)
        if fn.func_type is not FunctionType.InCore or level not in (Level.AIC, Level.AIV):
            raise TypeCheckError(
                f"{_spelled(call.op)} is an operator of the cross-core pipe, which runs "
                f"between the two functions of a pl.FunctionType.Group; `{fn.name}` is not "
                "one of them",
                span, hint="write the cube side as a pl.FunctionType.AIC function and the "
                           "vector side as a pl.FunctionType.AIV function, and call both "
                           "from a pl.FunctionType.Group function")
        if core is not None and core != level.name:
            other = call.op[:-1] + ("v" if call.op.endswith("c") else "c")
            side = "cube" if core == "AIC" else "vector"
            raise TypeCheckError(
                f"{_spelled(call.op)} runs on the {side} core (a pl.FunctionType.{core} function); "
                f"`{fn.name}` is a pl.FunctionType.{level.name} function", span,
                hint=f"on this side of the pipe write {_spelled(other)}" if other in CORE_OF
                else "move it to the peer function")
        if call.op in INIT_OPS or core is None:
            continue
        direction = _direction(call.op)
        pipe_id = call.attr("id") or 0
        ring = declared.get((pipe_id, direction))
        if ring is None:
            init = "pl.aic_initialize_pipe" if level is Level.AIC else "pl.aiv_initialize_pipe"
            raise TypeCheckError(
                f"{_spelled(call.op)} uses the {direction} ring of pipe {pipe_id}, which "
                f"`{fn.name}` does not initialize", span,
                hint=f"begin the function with {init}(dir_mask="
                     f"{1 if direction == 'C2V' else 2}, slot_size=..."
                     f"{'' if pipe_id == 0 else f', id={pipe_id}'})")
        if call.op in FREE_OPS:
            tile = call.args[0]
            if not isinstance(tile, Var) or popped.get(tile.name) != direction:
                raise TypeCheckError(
                    f"{_spelled(call.op)} releases the slot of a tile popped from the {direction} "
                    f"ring; `{getattr(tile, 'name', tile)}` was not popped from it here",
                    span, hint=f"pass the tile {_spelled(_pop_of(direction))} returned")
            del popped[tile.name]
            continue
        tile_type = (target if target is not None else call.args[0]).type
        assert isinstance(tile_type, TileType)  # the operators' inference
        nbytes = tile_type.nbytes
        if nbytes > ring.slot_size:
            raise TypeCheckError(
                f"{_spelled(call.op)}'s tile ({list(tile_type.shape)} {tile_type.dtype.name}, "
                f"{nbytes} bytes) does not fit a slot of the ring: slot_size={ring.slot_size}",
                span, hint=f"initialize the pipe with slot_size={nbytes} or more")
        if target is not None:  # a pop
            popped[target.name] = direction


def _pop_of(direction: str) -> str:
    return next(op for op, d in POP_OPS.items() if d == direction)


def _group_members(program: Program, group: Function) -> dict[Level, Function]:
    members: dict[Level, Function] = {}
    by_name = {fn.name: fn for fn in program.functions}
    for s in statements(list(group.body)):
        call = getattr(s, "value", None)
        if not isinstance(call, FuncCall):
            continue
        callee = by_name[call.callee]
        level = callee.attr("level") if callee.func_type is FunctionType.InCore else None
        if level not in (Level.AIC, Level.AIV):
            raise TypeCheckError(
                f"a pl.FunctionType.Group calls its cube function (pl.FunctionType.AIC) and "
                f"its vector function (pl.FunctionType.AIV); `{call.callee}` is neither",
                s.span)
        if level in members:
            raise TypeCheckError(
                f"a pl.FunctionType.Group runs one {level.name} function; this one calls "
                f"`{members[level].name}` and `{callee.name}`", s.span,
                hint="put the work of both in one function, or make two groups")
        members[level] = callee
    return members


def _check_pairing(group: Function, members: dict[Level, Function]) -> None:
    ops = {level: [(c, span) for c, span, _ in pipe_calls(fn)] for level, fn in members.items()}
    for level, fn in members.items():
        peer_level = Level.AIV if level is Level.AIC else Level.AIC
        peer = members.get(peer_level)
        peer_ops = ops.get(peer_level, [])
        peer_rings = rings(peer) if peer is not None else {}
        for (pipe_id, direction), ring in rings(fn).items():
            other = peer_rings.get((pipe_id, direction))
            if other is not None and peer is not None and \
                    (other.slot_num, other.slot_size) != (ring.slot_num, ring.slot_size):
                raise TypeCheckError(
                    f"the two sides of pipe {pipe_id} ({direction}) disagree on its ring: "
                    f"`{fn.name}` has slot_num={ring.slot_num}, slot_size={ring.slot_size}, "
                    f"`{peer.name}` slot_num={other.slot_num}, slot_size={other.slot_size}",
                    ring.span, hint="initialize both sides with the same ring")
        for call, span in ops[level]:
            if call.op not in PUSH_OPS and call.op not in POP_OPS:
                continue
            direction, pipe_id = _direction(call.op), call.attr("id") or 0
            wanted = POP_OPS if call.op in PUSH_OPS else PUSH_OPS
            matched = any(c.op in wanted and _direction(c.op) == direction
                          and (c.attr("id") or 0) == pipe_id for c, _ in peer_ops)
            if not matched:
                verb = "pops" if call.op in POP_OPS else "pushes"
                need = "push" if call.op in POP_OPS else "pop"
                whom = f"`{peer.name}`" if peer is not None else \
                    f"a pl.FunctionType.{peer_level.name} function (the group `{group.name}` " \
                    "has none)"
                raise TypeCheckError(
                    f"{_spelled(call.op)} {verb} the {direction} ring of pipe {pipe_id}, but "
                    f"{whom} has no {need} of it: the group would wait forever", span,
                    hint=f"pair it with {_spelled(_peer_op(call.op))} in the peer function")


def _check_tiles(members: dict[Level, Function]) -> None:
    """The pushes and pops of one ring agree: one split, the pushed tile's dtype, and its
    shape (a cube-to-vector pop with a split is half the pushed tile, a vector-to-cube
    push with a split half the popped one)."""
    first: dict[tuple[int, str], tuple[Call, tuple, object]] = {}
    for fn in members.values():
        for call, span, target in pipe_calls(fn):
            if call.op not in PUSH_OPS and call.op not in POP_OPS:
                continue
            direction = _direction(call.op)
            tile = (target if target is not None else call.args[0]).type
            assert isinstance(tile, TileType)
            split = call.attr("split")
            whole = tuple(tile.shape)
            if split and (direction == "C2V") == (call.op in POP_OPS):  # a lane's half
                whole = (whole[0] * 2, whole[1]) if split == 1 else (whole[0], whole[1] * 2)
            key = (call.attr("id") or 0, direction)
            seen = first.setdefault(key, (call, (split, whole, tile.dtype), span))
            if seen[1] != (split, whole, tile.dtype):
                other, (o_split, o_whole, o_dtype), _ = seen
                raise TypeCheckError(
                    f"{_spelled(call.op)} moves a {list(whole)} {tile.dtype.name} tile with "
                    f"split={split} through the {direction} ring of pipe {key[0]}, which "
                    f"{_spelled(other.op)} uses for a {list(o_whole)} {o_dtype.name} tile "
                    f"with split={o_split}", span,
                    hint="push and pop the same tile (a lane's half of it with a split), "
                         "with the same split")


def _peer_op(op: str) -> str:
    direction = _direction(op)
    table = POP_OPS if op in PUSH_OPS else PUSH_OPS
    return next(o for o, d in table.items() if d == direction)


def check_program_pipes(program: Program) -> None:
    """The rules of the module docstring; raises TypeCheckError at the line at fault."""
    for fn in program.functions:
        _check_function(fn)
    piped = {fn.name for fn in program.functions if uses_pipe(fn)}
    for fn in program.functions:
        if fn.func_type is FunctionType.Group:
            members = _group_members(program, fn)
            _check_pairing(fn, members)
            _check_tiles(members)
        for s in statements(list(fn.body)):
            call = getattr(s, "value", None)
            if (isinstance(call, FuncCall) and fn.func_type is not FunctionType.Group
                    and call.callee in piped):
                raise TypeCheckError(
                    f"`{call.callee}` uses the cross-core pipe, so it runs as part of a "
                    f"pl.FunctionType.Group, with its peer; `{fn.name}` calls it alone",
                    s.span, hint="call the group function instead, or call it with its peer "
                                 "in a `with pl.cluster():` block")


class CheckCrossCorePipes(Pass):
    """The lowered program's pipes against the backend (module docstring)."""

    name = "CheckCrossCorePipes"

    def run(self, program: Program, ctx) -> Program:
        check_program_pipes(program)
        for fn in program.functions:
            for call, span, _ in pipe_calls(fn):
                if call.op in PUSH_OPS:
                    where = call.args[0].type.memory
                    want = PUSHED_FROM[PUSH_OPS[call.op]]
                    if isinstance(call.args[0].type, TileType) and where is not want:
                        raise LoweringError(
                            f"{_spelled(call.op)} pushes a tile from {want.name} (TPUSH "
                            f"{PUSH_OPS[call.op]}); `{call.args[0].name}` is in "
                            f"{where.name if where else '?'}", span,
                            hint="push the matmul result (Acc)" if want is MemorySpace.Acc
                            else "push a Vec tile")
            for (pipe_id, direction), ring in rings(fn).items():
                space, consumer = CONSUMER[direction]
                if consumer is not fn.attr("level"):
                    continue
                capacity = ctx.backend.capacities[space.name]
                reserved = ring_reservation(fn)[space.name]
                if reserved > capacity and automatic_pipe(fn):
                    raise CapacityError(
                        f"the {direction} ring of the cross-core pipe pl.split inserts here "
                        f"({ring.slot_num} slots of {ring.slot_size} bytes, the largest tile "
                        f"crossing) takes {reserved} bytes of {space.name}, over the "
                        f"{capacity} bytes of {ctx.backend.name}'s {space.name} buffer",
                        ring.span, hint=RESIZE_AUTOMATIC_RING)
                if reserved > capacity:
                    raise CapacityError(
                        f"the {direction} ring of pipe {pipe_id} ({ring.slot_num} slots of "
                        f"{ring.slot_size} bytes) and the function's other rings take "
                        f"{reserved} bytes of {space.name}, over the {capacity} bytes of "
                        f"{ctx.backend.name}'s {space.name} buffer", ring.span,
                        hint="lower slot_num, or push smaller tiles (a smaller slot_size)")
        return program


def _spelled(op: str) -> str:
    """An operator as programs usually write it: `pl.tpush_to_aiv` (also pl.system.*)."""
    return "pl." + op.split(".")[-1]
