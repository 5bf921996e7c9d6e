"""The torch semantics of the cross-block barrier (ir/ops/barrier), as the simulators run it
(pypto/sim/include/pto/gang.hpp): the blocks of a launch whose kernel holds a
`pl.system.syncall` run at once, here on Python threads, and meet at its barriers; a
deadlock, a race between two blocks and a break of the cache protocol around a barrier are
found by the simulators' rules and reported with their messages (BarrierError, the
simulators' KernelError).  What a program computes is then fixed by its barriers, so it is
the simulators' bit for bit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .together import Party, Stop

_local = threading.local()


class BarrierError(RuntimeError):
    """A gang's blocks deadlocked, raced, or broke the cache protocol: what the simulators
    report as a KernelError, with the same message."""


@dataclass
class _Access:
    block: int
    epoch: int
    step: int
    line: int
    mask: int
    atomic: bool


@dataclass
class _Block:
    state: str = "running"
    wait_line: int = 0
    wait_target: int = 0
    wait_counter: Callable[[], int] | None = None
    wait_key: object = None  # the counter waited on (blocks waiting on one are told together)
    ready: Callable[[], bool] | None = None
    epoch: int = 0
    step: int = 0
    arrived: list[int] = field(default_factory=list)
    passed: list[int] = field(default_factory=list)
    fences: list[int] = field(default_factory=list)
    flushed: list[int] = field(default_factory=list)
    flushed_line: dict[int, list[int]] = field(default_factory=dict)
    at_line: int = 0
    at_name: str = ""


class _Gang(Party):
    def __init__(self, n: int, line_bytes: int):
        super().__init__()
        self.n = n
        self.line_bytes = line_bytes
        self.blocks = [_Block() for _ in range(n)]
        self.hard_arrived = 0
        self.hard_round = 0
        self.writes: dict[int, list[_Access]] = {}
        self.reads: dict[int, list[_Access]] = {}

    def enter(self, member) -> None:
        _local.gang, _local.block = self, member

    def leave(self) -> None:
        _local.gang, _local.block = None, None

    def finished(self, member) -> None:
        self.blocks[member].state = "finished"

    def deadlocked(self) -> bool:
        return all(b.state == "finished" or (b.state == "waiting" and not b.ready())
                   for b in self.blocks)

    def report_deadlock(self) -> None:
        parts, told = [], set()
        for i, b in enumerate(self.blocks):
            if b.state != "waiting" or i in told:
                continue
            same = [j for j, o in enumerate(self.blocks) if j >= i and o.state == "waiting"
                    and (o.wait_line, o.wait_target, o.wait_key)
                    == (b.wait_line, b.wait_target, b.wait_key)]
            told.update(same)
            text = (f"{_block_list(same)} {'waits' if len(same) == 1 else 'wait'} in "
                    f"pl.system.syncall (line {b.wait_line})")
            if b.wait_counter is not None:
                text += (f" for its counter to reach {b.wait_target} (it holds "
                         f"{b.wait_counter()})")
            parts.append(text)
        finished = [i for i, b in enumerate(self.blocks) if b.state == "finished"]
        text = "cross-block barrier deadlock: " + "; ".join(parts)
        if finished:
            text += f"; {_block_list(finished)} {'has' if len(finished) == 1 else 'have'} finished"
        self.stop(text)

    def wait(self, b: _Block, line: int, ready: Callable[[], bool], target: int = 0,
             counter: Callable[[], int] | None = None, key: object = None) -> None:
        b.state, b.wait_line, b.wait_target = "waiting", line, target
        b.wait_counter, b.wait_key, b.ready = counter, key, ready
        while not ready():
            if self.error is None and self.deadlocked():
                self.report_deadlock()
            if self.error is not None:
                b.state, b.ready = "running", None
                raise Stop
            self.cond.wait()
        b.state, b.ready = "running", None


def _block_list(blocks: list[int]) -> str:
    """`block 3` / `blocks 0, 2-5` (gang.hpp's block_list)."""
    runs, i = [], 0
    while i < len(blocks):
        j = i
        while j + 1 < len(blocks) and blocks[j + 1] == blocks[j] + 1:
            j += 1
        runs.append(str(blocks[i]) if j == i else f"{blocks[i]}-{blocks[j]}")
        i = j + 1
    return ("block " if len(blocks) == 1 else "blocks ") + ", ".join(runs)


def _me() -> tuple[_Gang, int, _Block]:
    g, b = _local.gang, _local.block
    return g, b, g.blocks[b]


def block_index() -> int | None:
    """The block the calling thread runs in a gang, None outside one."""
    return getattr(_local, "block", None) if getattr(_local, "gang", None) else None


def block_count() -> int | None:
    """The blocks of the calling thread's gang, None outside one."""
    gang = getattr(_local, "gang", None)
    return gang.n if gang is not None else None


def _arrive(b: _Block) -> None:
    b.step += 1
    b.arrived.append(b.step)


def _pass(b: _Block) -> None:
    b.step += 1
    b.passed.append(b.step)
    b.epoch += 1


def syncall_hard(required: int | None, cores: str, line: int) -> None:
    """`pl.system.syncall()`: every block of the launch arrives before any goes on;
    `required` (None: not known) the blocks the launch must have."""
    g, _, b = _me()
    with g.cond:
        if g.error is not None:
            raise Stop
        if required is not None and g.n != required:
            g.stop(f"cross-block barrier: the hard pl.system.syncall (line {line}) needs a "
                   f"launch of {required} blocks ({cores}), this one has {g.n}")
        _arrive(b)
        round_ = g.hard_round
        g.hard_arrived += 1
        if g.hard_arrived == g.n:
            g.hard_arrived = 0
            g.hard_round += 1
            g.cond.notify_all()
        else:
            g.wait(b, line, lambda: g.hard_round != round_)
        _pass(b)


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def syncall_soft(ws: torch.Tensor, used: int, line: int) -> None:
    """`pl.system.syncall(mode="soft")`: pto-isa's counter in `ws`'s first INT32."""
    g, _, b = _me()
    with g.cond:
        if g.error is not None:
            raise Stop
        total = used if used != 0 else g.n
        if total < 0:
            g.stop(f"cross-block barrier: pl.system.syncall(mode=\"soft\") (line {line}) has "
                   f"used_cores {used}")
        _arrive(b)
        first = (0,) * ws.dim()  # the counter: the workspace's first element
        before = int(ws[first])
        ws[first] = _int32(before + 1)
        quotient = abs(before) // total * (1 if before >= 0 else -1)  # C++ truncates
        target = _int32((quotient + 1) * total)
        g.cond.notify_all()
        g.wait(b, line, lambda: int(ws[first]) >= target, target, lambda: int(ws[first]),
               ws.data_ptr())
        _pass(b)


def fence() -> None:
    g, _, b = _me()
    with g.cond:
        b.step += 1
        b.fences.append(b.step)


def cacheinvalid(address: int | None = None) -> None:
    """Every line (no address), or the line holding `address`."""
    g, _, b = _me()
    with g.cond:
        b.step += 1
        if address is None:
            b.flushed.append(b.step)
        else:
            b.flushed_line.setdefault(address // g.line_bytes, []).append(b.step)


def at(line: int, name: str) -> None:
    """The running statement: its line and the tensor it accesses (messages)."""
    _, _, b = _me()
    b.at_line, b.at_name = line, name


def _first_after(steps: list[int], after: int) -> int:
    return next((s for s in steps if s > after), -1)


def _flushed_after(b: _Block, line: int, after: int) -> int:
    best = _first_after(b.flushed, after)
    s = _first_after(b.flushed_line.get(line, []), after)
    if s >= 0 and (best < 0 or s < best):
        best = s
    return best


def _check_read(g: _Gang, r: int, line: int, mask: int) -> None:
    reader = g.blocks[r]
    for w in g.writes.get(line, ()):
        if w.block == r or not w.mask & mask:
            continue
        writer, k = g.blocks[w.block], w.epoch
        if reader.epoch <= k or len(writer.arrived) <= k:
            g.stop(f"cross-block barrier: block {r} reads `{reader.at_name}` at line "
                   f"{reader.at_line}, bytes block {w.block} writes at line {w.line} with no "
                   "pl.system.syncall between the two")
        flushed = _flushed_after(writer, line, w.step)
        fenced = -1 if flushed < 0 else _first_after(writer.fences, flushed)
        if fenced < 0 or fenced > writer.arrived[k]:
            g.stop(f"cross-block barrier: block {r} reads `{reader.at_name}` at line "
                   f"{reader.at_line}, bytes block {w.block} wrote at line {w.line} and did not "
                   "publish before the barrier (pl.system.cacheinvalid() then "
                   "pl.system.fence())")
        if _flushed_after(reader, line, reader.passed[k]) < 0:
            g.stop(f"cross-block barrier: block {r} reads `{reader.at_name}` at line "
                   f"{reader.at_line}, bytes block {w.block} wrote at line {w.line}, with no "
                   "pl.system.cacheinvalid() since the barrier")


def _check_write(g: _Gang, b: int, line: int, mask: int, atomic: bool) -> None:
    writer = g.blocks[b]
    for table, verb in ((g.reads, "reads"), (g.writes, "writes")):
        for a in table.get(line, ()):
            if a.block == b or not a.mask & mask:
                continue
            if writer.epoch > a.epoch and len(g.blocks[a.block].arrived) > a.epoch:
                continue  # a barrier the other block reached after its access orders them
            if table is g.writes and atomic and a.atomic:
                continue  # atomic adds commute
            g.stop(f"cross-block barrier: block {b} writes `{writer.at_name}` at line "
                   f"{writer.at_line}, bytes block {a.block} {verb} at line {a.line} with no "
                   "pl.system.syncall between the two")


def _record(g: _Gang, table: dict[int, list[_Access]], b: int, line: int, mask: int,
            atomic: bool, write: bool) -> None:
    blk = g.blocks[b]
    entries = table.setdefault(line, [])
    merged = False
    kept = []
    for a in entries:
        if a.block == b and a.epoch == blk.epoch and a.atomic == atomic:
            a.mask |= mask
            a.step, a.line = blk.step, blk.at_line
            merged = True
        elif write and a.block == b:
            a.mask &= ~mask
            if not a.mask:
                continue
        kept.append(a)
    if not merged:
        kept.append(_Access(b, blk.epoch, blk.step, blk.at_line, mask, atomic))
    table[line] = kept


def _lines(line_bytes: int, start: int, end: int):
    """(line, byte mask) of the bytes [start, end), line by line (gang.hpp's for_lines)."""
    unit = line_bytes // 64 if line_bytes >= 64 else 1
    line = start // line_bytes
    while line * line_bytes < end:
        lo = (max(start - line * line_bytes, 0)) // unit
        hi = (min(end - line * line_bytes, line_bytes) - 1) // unit
        yield line, ((1 << (hi + 1)) - 1) & ~((1 << lo) - 1)
        line += 1


def observe(window: torch.Tensor, write: bool, atomic: bool = False) -> None:
    """A block's access of a global-memory window (a rank-1 or -2 view, rows of it): checks
    it against the other blocks' accesses, then records it (gang.hpp's observe)."""
    if getattr(_local, "gang", None) is None or window.numel() == 0:
        return
    g, b, blk = _me()
    view = window if window.dim() >= 2 else window.reshape(1, -1)
    view = view.reshape(-1, view.shape[-1]) if view.dim() > 2 else view
    rows, cols = view.shape
    elem = view.element_size()
    row_stride, col_stride = view.stride(0) * elem, view.stride(1) * elem
    with g.cond:
        if g.error is not None:
            raise Stop
        blk.step += 1
        for r in range(rows):
            row = view.data_ptr() + r * row_stride
            runs = [(row, row + cols * elem)] if col_stride == elem else \
                [(row + c * col_stride, row + c * col_stride + elem) for c in range(cols)]
            for start, end in runs:
                for line, mask in _lines(g.line_bytes, start, end):
                    if write:
                        _check_write(g, b, line, mask, atomic)
                        _record(g, g.writes, b, line, mask, atomic, True)
                    else:
                        _check_read(g, b, line, mask)
                        _record(g, g.reads, b, line, mask, False, False)


def run_gang(n: int, line_bytes: int, block: Callable[[], object],
             max_blocks: int | None = None, cores: str = "") -> object:
    """Runs `block` as each of the `n` blocks of a launch, at once (at most `max_blocks`,
    the `cores` of the kernel's type, where known); the result of block n - 1 (what
    running the blocks in order leaves).  A deadlock, a race or a break of the cache
    protocol raises BarrierError (the simulators' KernelError)."""
    if max_blocks is not None and n > max_blocks:
        raise BarrierError(f"cross-block barrier: a launch of {n} blocks of a kernel with a "
                           f"pl.system.syncall, more than {cores} ({max_blocks}): on the device "
                           "the rest would run in a later wave, which a barrier across waves "
                           "never lets start")
    gang = _Gang(max(n, 1), line_bytes)
    results = gang.run([(b, block) for b in range(gang.n)])
    if gang.error is not None:
        raise BarrierError(gang.error)
    return results.get(gang.n - 1)
