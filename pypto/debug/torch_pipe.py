"""The torch semantics of the cross-core pipe (ir/ops/cross_core), as the simulators run it
(pypto/sim/include/pto/pipe.hpp): a Group's cube function and the two lanes of its vector
function run at once, here on Python threads, handing tiles through FIFO rings of
`slot_num` slots per pipe id and direction.  The rings, the split halves, the lane that
takes no part in a no-split pipe and the deadlock rule are the simulators'; what a program
computes is fixed by the FIFO order, so it is the simulators' bit for bit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from ..ir.ops.cross_core import BOTH_LANES
from .together import Party, Stop

AIC, AIV0, AIV1 = 0, 1, 2
LANES = (AIC, AIV0, AIV1)
_LANE_NAMES = {AIC: "the cube (AIC)", AIV0: "vector lane 0", AIV1: "vector lane 1"}
_local = threading.local()


class PipeError(RuntimeError):
    """A group's lanes deadlocked, or it ended with a ring holding tiles: what the
    simulators report as a KernelError, with the same message."""


class _Ring:
    def __init__(self, pipe_id: int, c2v: bool, split: int, slot_num: int):
        self.id, self.c2v, self.split, self.slot_num = pipe_id, c2v, split, slot_num
        self.slots: dict[int, torch.Tensor] = {}  # tile index -> the whole tile
        self.pushed = dict.fromkeys(LANES, 0)
        self.popped = dict.fromkeys(LANES, 0)
        self.freed = dict.fromkeys(LANES, 0)

    def producer(self, lane: int) -> bool:
        return lane == AIC if self.c2v else lane == AIV0 or (self.split != 0 and lane == AIV1)

    def consumer(self, lane: int) -> bool:
        return lane == AIC if not self.c2v else lane == AIV0 or (self.split != 0 and lane == AIV1)

    @property
    def name(self) -> str:
        return "cube-to-vector" if self.c2v else "vector-to-cube"


class _Group(Party):
    def __init__(self, rings: list[tuple[int, bool, int, int]]):
        super().__init__()
        self.rings = {(r[0], r[1]): _Ring(*r) for r in rings}
        self.state = dict.fromkeys(LANES, "running")
        self.waiting: dict[int, tuple[str, Callable[[], bool]]] = {}

    def enter(self, member) -> None:
        _local.group, _local.lane = self, member

    def leave(self) -> None:
        _local.group, _local.lane = None, AIC

    def finished(self, member) -> None:
        self.state[member] = "finished"

    def deadlocked(self) -> bool:
        return all(self.state[lane] == "finished"
                   or (self.state[lane] == "waiting" and not self.waiting[lane][1]())
                   for lane in LANES)

    def wait(self, op: str, ready: Callable[[], bool]) -> None:
        lane = _local.lane
        self.state[lane] = "waiting"
        self.waiting[lane] = (op, ready)
        while not ready():
            if self.error is None and self.deadlocked():
                self.error = "cross-core pipe deadlock: " + ", ".join(
                    f"{_LANE_NAMES[lane]} waits in pl.{self.waiting[lane][0]}"
                    if self.state[lane] == "waiting" else f"{_LANE_NAMES[lane]} has finished"
                    for lane in LANES)
                self.cond.notify_all()
            if self.error is not None:
                raise Stop
            self.cond.wait()
        self.state[lane] = "running"

    def drained(self) -> str | None:
        for r in self.rings.values():
            tiles = min(r.pushed[p] for p in LANES if r.producer(p))
            for c in (c for c in LANES if r.consumer(c)):
                if r.popped[c] < tiles:
                    return (f"cross-core pipe: {tiles - r.popped[c]} tile(s) pushed into the "
                            f"{r.name} ring of pipe {r.id} were never popped by "
                            f"{_LANE_NAMES[c]}, which has finished")
                if r.freed[c] < r.popped[c]:
                    return (f"cross-core pipe: {_LANE_NAMES[c]} popped {r.popped[c]} tile(s) "
                            f"from the {r.name} ring of pipe {r.id} and freed {r.freed[c]}: "
                            "each pop needs its tfree")
            if any(r.producer(p) and r.pushed[p] != tiles for p in LANES):
                return (f"cross-core pipe: the two vector lanes pushed {r.pushed[AIV0]} and "
                        f"{r.pushed[AIV1]} halves into the {r.name} ring of pipe {r.id}")
        return None


def _part(split: int, lane: int, rows: int, cols: int) -> tuple[slice, slice]:
    half = 1 if lane == AIV1 else 0
    if split == 1:
        return slice(half * (rows // 2), (half + 1) * (rows // 2)), slice(0, cols)
    if split == 2:
        return slice(0, rows), slice(half * (cols // 2), (half + 1) * (cols // 2))
    return slice(0, rows), slice(0, cols)


def _push(tile: torch.Tensor, pipe_id, c2v: bool, op: str) -> None:
    g, lane = _local.group, _local.lane
    with g.cond:
        r = g.rings[(pipe_id or 0, c2v)]
        if not r.producer(lane):
            return  # lane 1 of a no-split vector-to-cube pipe takes no part
        k = r.pushed[lane]
        g.wait(op, lambda: all(r.freed[c] >= k - r.slot_num + 1 for c in LANES
                               if r.consumer(c)))
        halved = not c2v and r.split != 0
        rows, cols = tile.shape
        rows, cols = (rows * 2 if halved and r.split == 1 else rows,
                      cols * 2 if halved and r.split == 2 else cols)
        whole = r.slots.setdefault(k, torch.zeros(rows, cols, dtype=tile.dtype))
        if not (r.split == BOTH_LANES and lane == AIV1):  # the cube gets lane 0's tile
            whole[_part(r.split if halved else 0, lane, rows, cols)] = tile
        r.pushed[lane] = k + 1
        g.cond.notify_all()


def _pop(shape, dtype: str, split: int, pipe_id, c2v: bool, op: str) -> torch.Tensor:
    from .torch_runtime import torch_dtype

    g, lane = _local.group, _local.lane
    with g.cond:
        r = g.rings[(pipe_id or 0, c2v)]
        if not r.consumer(lane):  # lane 1 of a no-split cube-to-vector pipe: zeros
            return torch.zeros(tuple(shape), dtype=torch_dtype(dtype))
        k = r.popped[lane]
        g.wait(op, lambda: all(r.pushed[p] >= k + 1 for p in LANES if r.producer(p)))
        whole = r.slots[k]
        halved = c2v and r.split != 0
        part = whole[_part(r.split if halved else 0, lane, *whole.shape)].clone()
        r.popped[lane] = k + 1
        return part


def _free(pipe_id, c2v: bool, op: str) -> None:
    g, lane = _local.group, _local.lane
    with g.cond:
        r = g.rings[(pipe_id or 0, c2v)]
        if not r.consumer(lane):
            return
        if r.freed[lane] >= r.popped[lane]:
            g.stop(f"cross-core pipe: {_LANE_NAMES[lane]} frees a slot of the {r.name} ring "
                   f"of pipe {r.id} in pl.{op} with no popped tile held")
        r.freed[lane] += 1
        oldest = min(r.freed[c] for c in LANES if r.consumer(c))
        for k in [k for k in r.slots if k < oldest]:  # a slot every consumer freed
            del r.slots[k]
        g.cond.notify_all()


def run_group(rings: list[tuple[int, bool, int, int]], cube: Callable[[], object],
              vector: Callable[[], object]) -> tuple:
    """Runs a Group task: `cube` on this thread, `vector` on two (lanes 0 and 1) at once;
    the results of `cube` and of vector lane 0.  A deadlock, or a ring left holding tiles,
    raises PipeError (the simulators' KernelError)."""
    group = _Group(rings)
    results = group.run([(AIC, cube), (AIV0, vector), (AIV1, vector)])
    message = group.error or group.drained()
    if message is not None:
        raise PipeError(message)
    return results.get(AIC), results.get(AIV0)


def subblock_idx() -> int:
    return 1 if getattr(_local, "lane", AIC) == AIV1 else 0
