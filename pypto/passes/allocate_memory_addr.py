"""AllocateMemoryAddr: give every tile an address inside its on-chip buffer.

The unit of allocation is a *buffer*: one variable name at one tile type (a name
rebound at the same type, like `acc = pl.add(acc, x)`, updates its buffer in place).
A buffer is live from its first to its last occurrence; one that is carried around a
loop, or crosses a loop's boundary, stays live for the whole loop.  Buffers whose
live ranges overlap get disjoint addresses (first fit, 32-byte aligned), each taking its
hardware footprint (`pypto.ir.layout`: rows padded to whole 32-byte blocks); a buffer
that does not fit the backend's capacity is an error naming the tile.

At the bottom of a consuming core's buffer, `ring_reservation` bytes are its cross-core
rings (upstream's reserve_buffer); the function's tiles are placed above them.  A tile a
vector lane pops (cube to vector) is placed in them instead: on the device TPOP points it
at its slot, and pto-isa's CPU model (and the simulators) copy it out of ring storage of
their own, so the UB's ring bytes hold nothing else; popped tiles live at once are as
many slots as there are (more would wait forever), placed apart.  A tile the cube pops
stays above the rings: pto-isa's CPU model stages it in its L1 slot before moving it to
the tile, which would overwrite a tile placed in the slots.

A tile annotated with an allocation of the author's (`pl.MemRef("ub", slots=2)[i % 2]`)
is placed in it instead: every tile naming `ub` shares one region of `slots` slots, each
as large as the largest of them (`memref_slot_bytes`), held for the whole kernel and
holding nothing else; the tile's address is the region's, and its slot's
offset is added where the tile is defined (codegen).  Tiles sharing a one-slot
allocation must not be live at the same time, and all of an allocation's tiles name one
memory space and one slot count.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ir.errors import CapacityError, Span, TypeCheckError
from ..ir.layout import BLOCK_BYTES, tile_footprint
from ..ir.nodes import Assign, Call, For, Var, While
from ..ir.ops.cross_core import POP_OPS
from ..ir.types import FunctionType, MemorySpace, TileMemRef, TileType
from ..ir.visitor import IRVisitor
from .cross_core_pipe import RESIZE_AUTOMATIC_RING, automatic_pipe, ring_reservation
from .manager import FunctionPass
from .properties import IRProperty
from .retype import VarRetyper

ALIGN = BLOCK_BYTES


def buffer_key(t: TileType) -> tuple:
    return (t.shape, t.dtype, t.memory)


@dataclass
class _Buffer:
    name: str
    type: TileType
    span: Span | None
    positions: list[int] = field(default_factory=list)
    first_def: int | None = None
    start: int = 0
    end: int = 0
    addr: int = 0
    size: int | None = None  # bytes taken, when not the tile's footprint (an allocation)
    popped: bool = True  # every definition is a pop of the cross-core pipe (in its ring)

    @property
    def bytes(self) -> int:
        return self.size if self.size is not None else tile_footprint(self.type)


class _Occurrences(IRVisitor):
    """Numbers statements in program order and records where each buffer occurs."""

    def __init__(self):
        self.pos = 0
        self.buffers: dict[tuple, _Buffer] = {}
        self.loops: list[tuple[int, int]] = []

    def _buffer(self, var: Var) -> _Buffer | None:
        if not isinstance(var.type, TileType):
            return None
        key = (var.name, buffer_key(var.type))
        if key not in self.buffers:
            self.buffers[key] = _Buffer(var.name, var.type, var.span)
        return self.buffers[key]

    def visit_stmt(self, stmt) -> None:
        self.pos += 1
        super().visit_stmt(stmt)

    def visit_For(self, stmt: For) -> None:
        start = self.pos
        super().visit_For(stmt)
        self.loops.append((start, self.pos))

    def visit_While(self, stmt: While) -> None:
        start = self.pos  # the condition is read at the loop's head, every iteration
        super().visit_While(stmt)
        self.loops.append((start, self.pos))

    def visit_Assign(self, stmt: Assign) -> None:
        super().visit_Assign(stmt)
        popped = isinstance(stmt.value, Call) and stmt.value.op in POP_OPS
        for target in stmt.targets:
            buf = self._buffer(target)
            if buf is not None:
                buf.popped &= popped

    def visit_def(self, var: Var) -> None:
        buf = self._buffer(var)
        if buf is not None:
            buf.positions.append(self.pos)
            if buf.first_def is None:
                buf.first_def = self.pos
                buf.span = var.span or buf.span

    def visit_Var(self, expr: Var) -> None:
        buf = self._buffer(expr)
        if buf is not None:
            buf.positions.append(self.pos)


def _live_ranges(occ: _Occurrences) -> None:
    for buf in occ.buffers.values():
        buf.start, buf.end = min(buf.positions), max(buf.positions)
    changed = True
    while changed:
        changed = False
        for lo, hi in occ.loops:
            for buf in occ.buffers.values():
                inside = [p for p in buf.positions if lo <= p <= hi]
                if not inside:
                    continue
                crosses = buf.start < lo or buf.end > hi
                first = buf.first_def
                # Carried into the loop: defined outside it, or read in it before its definition.
                carried = first is None or not lo <= first <= hi or min(inside) < first
                if (crosses or carried) and (buf.start > lo or buf.end < hi):
                    buf.start, buf.end = min(buf.start, lo), max(buf.end, hi)
                    changed = True


def _first_fit(buffers: list[_Buffer], capacity: int, memory, reserved: int = 0,
               automatic: bool = False) -> None:
    """Places the tiles above the `reserved` bytes a cross-core ring takes (`automatic`:
    the ring pl.split inserted)."""
    placed: list[_Buffer] = []
    for buf in sorted(buffers, key=lambda b: (b.start, b.name)):
        size = buf.bytes
        live = sorted(
            (p for p in placed if p.start <= buf.end and buf.start <= p.end), key=lambda p: p.addr
        )
        addr = _align(reserved)
        for p in live:
            if addr + size <= p.addr:
                break
            addr = max(addr, _align(p.addr + p.bytes))
        if addr + size > capacity:
            live_bytes = sum(p.bytes for p in live)
            ref = buf.type.memref
            what = (f"allocation pl.MemRef(\"{ref.name}\", slots={ref.slots}) ({size} bytes)"
                    if buf.size is not None and ref is not None else
                    f"tile `{buf.name}` ({list(buf.type.shape)} {buf.type.dtype.name}, "
                    f"{size} bytes)")
            raise CapacityError(
                f"{what} does not fit the {memory.name} buffer: {capacity} bytes, {live_bytes} "
                f"already held by {len(live)} live tile(s)" + (
                    f", the first {reserved} reserved for the cross-core pipe's ring"
                    if reserved else ""),
                buf.span,
                hint=RESIZE_AUTOMATIC_RING if reserved and automatic else
                ("use fewer slots or smaller tiles" if buf.size is not None else
                 "use smaller tiles and walk the tensor with pl.range") + (
                    "; or lower the ring's slot_num" if reserved else ""),
            )
        buf.addr = addr
        placed.append(buf)


def _in_ring(popped: list[_Buffer], ring: int) -> list[_Buffer]:
    """Places the popped tiles inside the `ring` bytes their rings take, apart where they
    live at once; returns those that do not fit there (placed above with the others)."""
    placed: list[_Buffer] = []
    left: list[_Buffer] = []
    for buf in sorted(popped, key=lambda b: (b.start, b.name)):
        live = sorted((p for p in placed if p.start <= buf.end and buf.start <= p.end),
                      key=lambda p: p.addr)
        addr = 0
        for p in live:
            if addr + buf.bytes <= p.addr:
                break
            addr = max(addr, _align(p.addr + p.bytes))
        if addr + buf.bytes > ring:
            left.append(buf)
            continue
        buf.addr = addr
        placed.append(buf)
    return left


def memref_slot_bytes(fn) -> dict[str, int]:
    """Each declared allocation's slot size: the largest footprint of the tiles placed in
    it, in whole 32-byte blocks (its slot `k` starts `k * size` bytes into it)."""
    occ = _Occurrences()
    occ.visit_function(fn)
    return _slot_bytes(occ)


def _slot_bytes(occ: _Occurrences) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for buf in occ.buffers.values():
        t = buf.type
        if t.memref is not None:
            sizes[t.memref.name] = max(sizes.get(t.memref.name, 0), _align(tile_footprint(t)))
    return sizes


def _allocations(occ: _Occurrences) -> list[tuple[_Buffer, list[_Buffer]]]:
    """The declared allocations (pl.MemRef) as one region each, with the buffers in it."""
    groups: dict[str, list[tuple[_Buffer, TileMemRef]]] = {}
    for buf in occ.buffers.values():
        if buf.type.memref is not None:
            groups.setdefault(buf.type.memref.name, []).append((buf, buf.type.memref))
    slot_bytes = _slot_bytes(occ)
    regions = []
    for name, members in groups.items():
        first, ref = min(members, key=lambda m: m[0].start)
        for b, m in members:
            if b.type.memory != first.type.memory or m.slots != ref.slots:
                raise TypeCheckError(
                    f"tile `{b.name}` names pl.MemRef(\"{name}\") in {_space(b)} with "
                    f"{m.slots} slot(s), tile `{first.name}` in {_space(first)} with "
                    f"{ref.slots}: one allocation has one memory space and one slot count",
                    b.span, hint="give the other tile an allocation of its own")
        _check_shared_slots(name, ref.slots, sorted(members, key=lambda m: m[0].start))
        # Held for the whole kernel: nothing else is ever placed in it (a slot the next
        # iteration fills may still be in use while this one computes).
        region = _Buffer(name, first.type, first.span, start=0, end=occ.pos,
                         size=ref.slots * slot_bytes[name])
        regions.append((region, [b for b, _ in members]))
    return regions


def _space(buf: _Buffer) -> str:
    return buf.type.memory.name if buf.type.memory is not None else "no memory space"


def _check_shared_slots(name: str, slots: int, members: list) -> None:
    """Two tiles live at the same time in one slot (of a one-slot allocation, or one
    constant slot) would overwrite each other; a slot read at run time is the author's."""
    for i, (a, ma) in enumerate(members):
        for b, mb in members[i + 1:]:
            same = slots == 1 or (isinstance(ma.slot, int) and ma.slot == mb.slot)
            if same and b.start <= a.end:
                raise TypeCheckError(
                    f"tiles `{a.name}` and `{b.name}` share a slot of pl.MemRef(\"{name}\") "
                    "and are live at the same time: one would overwrite the other", b.span,
                    hint=f"end `{a.name}`'s use before `{b.name}` is defined, or place them "
                         "in different slots (pl.MemRef(name, slots=2)[k])")


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class AllocateMemoryAddr(FunctionPass):
    name = "AllocateMemoryAddr"
    produces = (IRProperty.AddressesAllocated,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        occ = _Occurrences()
        occ.visit_function(fn)
        _live_ranges(occ)
        regions = _allocations(occ)
        by_memory: dict = {}
        for buf in occ.buffers.values():
            if buf.type.memref is None:
                by_memory.setdefault(buf.type.memory, []).append(buf)
        for region, _ in regions:
            by_memory.setdefault(region.type.memory, []).append(region)
        for memory, bufs in sorted(by_memory.items(), key=lambda kv: kv[0].name):
            ring = ring_reservation(fn).get(memory.name, 0)
            popped = [b for b in bufs if b.popped and b.first_def is not None
                      and memory is MemorySpace.Vec]
            above = _in_ring(popped, ring)
            others = [b for b in bufs if not any(b is p for p in popped)]
            _first_fit(others + above, ctx.backend.capacities[memory.name], memory, ring,
                       automatic_pipe(fn))
        for region, members in regions:
            for buf in members:
                buf.addr = region.addr
        addrs = {key: buf.addr for key, buf in occ.buffers.items()}

        def placed(stmt: Assign, var: Var):
            if not isinstance(var.type, TileType):
                return var.type
            return replace(var.type, addr=addrs[(var.name, buffer_key(var.type))])

        return VarRetyper(placed).mutate_function(fn)
