"""AllocateMemoryAddr: give every tile an address inside its on-chip buffer.

The unit of allocation is a *buffer*: one variable name at one tile type (a name
rebound at the same type, like `acc = pl.add(acc, x)`, updates its buffer in place).
A buffer is live from its first to its last occurrence; one that is carried around a
loop, or crosses a loop's boundary, stays live for the whole loop.  Buffers whose
live ranges overlap get disjoint addresses (first fit, 32-byte aligned), each taking its
hardware footprint (`pypto.ir.layout`: rows padded to whole 32-byte blocks); a buffer
that does not fit the backend's capacity is an error naming the tile.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ir.errors import CapacityError, Span
from ..ir.layout import BLOCK_BYTES, tile_footprint
from ..ir.nodes import Assign, For, Var, While
from ..ir.types import FunctionType, TileType
from ..ir.visitor import IRVisitor
from .cross_core_pipe import ring_reservation
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


def _first_fit(buffers: list[_Buffer], capacity: int, memory, reserved: int = 0) -> None:
    """Places the tiles above the `reserved` bytes a cross-core ring takes."""
    placed: list[_Buffer] = []
    for buf in sorted(buffers, key=lambda b: (b.start, b.name)):
        size = tile_footprint(buf.type)
        live = sorted(
            (p for p in placed if p.start <= buf.end and buf.start <= p.end), key=lambda p: p.addr
        )
        addr = _align(reserved)
        for p in live:
            if addr + size <= p.addr:
                break
            addr = max(addr, _align(p.addr + tile_footprint(p.type)))
        if addr + size > capacity:
            live_bytes = sum(tile_footprint(p.type) for p in live)
            raise CapacityError(
                f"tile `{buf.name}` ({list(buf.type.shape)} {buf.type.dtype.name}, {size} bytes) "
                f"does not fit the {memory.name} buffer: {capacity} bytes, {live_bytes} already "
                f"held by {len(live)} live tile(s)" + (
                    f", the first {reserved} reserved for the cross-core pipe's ring"
                    if reserved else ""),
                buf.span,
                hint="use smaller tiles and walk the tensor with pl.range" + (
                    "; or lower the ring's slot_num" if reserved else ""),
            )
        buf.addr = addr
        placed.append(buf)


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
        by_memory: dict = {}
        for buf in occ.buffers.values():
            by_memory.setdefault(buf.type.memory, []).append(buf)
        for memory, bufs in sorted(by_memory.items(), key=lambda kv: kv[0].name):
            _first_fit(bufs, ctx.backend.capacities[memory.name], memory,
                       ring_reservation(fn).get(memory.name, 0))
        addrs = {key: buf.addr for key, buf in occ.buffers.items()}

        def placed(stmt: Assign, var: Var):
            if not isinstance(var.type, TileType):
                return var.type
            return replace(var.type, addr=addrs[(var.name, buffer_key(var.type))])

        return VarRetyper(placed).mutate_function(fn)
