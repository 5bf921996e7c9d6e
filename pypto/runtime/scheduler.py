"""The task scheduler: infers dependencies from memory accesses and runs tasks on cores.

Dependency rules (the runtime contract): per access, `In` waits on the last writer of
every overlapping byte range (RAW); `Out` waits on it too (WAW) and becomes the writer;
`InOut` does both.  Readers are never registered, so write-after-read is not ordered
unless the orchestration adds an explicit dependency.  `edges` records at most one
inferred edge per task pair (RAW when any read of the later task overlaps the earlier
one's write, an InOut access counting as a read; WAW otherwise) plus one explicit edge
per declared dependency, even where an inferred edge already orders the pair.

Two execution modes:
- `seed=None`: one worker thread per simulated core takes ready tasks first come, first
  served, from the moment they are submitted.  Kernels run through ctypes, which
  releases the GIL, so tasks really run concurrently and a missing edge is a real race.
- `seed=int`: nothing runs while the orchestration submits; `wait()` then runs every
  task on the calling thread, one at a time, each time letting `random.Random(seed)`
  pick among the ready tasks and placing the n-th task on core `n % len(cores)`.  The
  same seed gives the same order, cores and bits; another seed explores another
  legal order.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pypto.runtime.abi import Direction
from pypto.runtime.errors import KernelError, OrchestrationError
from pypto.runtime.memory import SimCore
from pypto.runtime.overlap_map import OverlapMap

_IN, _OUT = Direction.IN, Direction.OUT  # module constants: enum attribute lookup is slow


class Access(NamedTuple):
    """A task's use of device bytes [start, end) in one direction."""

    start: int
    end: int
    direction: Direction


class Edge(NamedTuple):
    """`dst` waits for `src`: inferred from memory ("tensormap", kind "RAW" or "WAW")
    or declared by the orchestration ("explicit", kind None)."""

    src: int
    dst: int
    source: str
    kind: str | None


@dataclass(eq=False, slots=True)
class Task:
    """One dispatch of a kernel, with what the run recorded about it."""

    task_id: int
    kernel_name: str
    kernel: Callable[[Any, Any], None]
    args: Any
    accesses: tuple[Access, ...]
    predecessors: tuple[int, ...]
    core_id: int | None = None
    """The core (and worker) that ran the task."""
    start_ns: int | None = None
    """`time.perf_counter_ns()` when the kernel was called."""
    end_ns: int | None = None
    """`time.perf_counter_ns()` when the kernel returned."""


class Scheduler:
    """Orders and runs the tasks of one run: `start`, `submit`..., `wait`, and always `close`."""

    def __init__(self, cores: Sequence[SimCore], *, seed: int | None = None) -> None:
        if not cores:
            raise ValueError("a scheduler needs at least one core")
        self.cores = tuple(cores)
        self.seed = seed
        self.tasks: list[Task] = []
        self.edges: list[Edge] = []
        self._writers = OverlapMap()
        # Per task id: unfinished predecessors, tasks waiting on it, whether it finished.
        self._pending: list[int] = []
        self._dependents: list[list[int]] = []
        self._finished: list[bool] = []
        self._ready: deque[int] = deque()
        self._lock = threading.Lock()
        self._work_available = threading.Condition(self._lock)
        self._progress = threading.Condition(self._lock)
        self._completed = 0
        self._running = 0
        self._error: KernelError | None = None
        self._closing = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Starts one worker thread per core (FIFO mode; seeded mode runs in `wait`)."""
        if self.seed is not None or self._threads:
            return
        for core in self.cores:
            thread = threading.Thread(
                target=self._work, args=(core,), name=f"pypto-core-{core.core_id}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def submit(
        self,
        kernel_name: str,
        kernel: Callable[[Any, Any], None],
        args: Any,
        accesses: Iterable[Access],
        deps: Iterable[int] = (),
    ) -> int:
        """Adds a task that calls `kernel(core_pointer, args)`; returns its id.

        Ids count up from 0 in submission order.  `deps` are explicit predecessors and
        must name already-submitted tasks.  Only one thread may submit.
        """
        task_id = len(self.tasks)
        explicit = sorted(set(deps))
        if explicit and (explicit[0] < 0 or explicit[-1] >= task_id):
            dep = explicit[0] if explicit[0] < 0 else explicit[-1]
            earlier = f"ids 0..{task_id - 1}" if task_id else "none yet"
            raise OrchestrationError(
                f"task {task_id} ({kernel_name}) depends on task {dep}, which has not been "
                f"submitted; a task can only depend on earlier tasks ({earlier})"
            )
        accesses = tuple(accesses)
        overlap_map = self._writers
        raw: set[int] = set()
        waw: set[int] = set()
        for start, end, direction in accesses:
            found = overlap_map.writers(start, end)
            if found:
                (waw if direction is _OUT else raw).update(found)
        # Writers are registered only after every lookup, so a task never waits on itself.
        for start, end, direction in accesses:
            if direction is not _IN:
                overlap_map.assign(start, end, task_id)
        edges = []
        if raw or waw:
            waw -= raw
            edges += [Edge(src, task_id, "tensormap", "RAW") for src in sorted(raw)]
            edges += [Edge(src, task_id, "tensormap", "WAW") for src in sorted(waw)]
            raw |= waw
        if explicit:
            edges += [Edge(src, task_id, "explicit", None) for src in explicit]
            raw.update(explicit)
        predecessors = tuple(sorted(raw))
        task = Task(task_id, kernel_name, kernel, args, accesses, predecessors)

        with self._lock:
            self.edges += edges
            self.tasks.append(task)
            pending = 0
            for src in predecessors:
                if not self._finished[src]:
                    pending += 1
                    self._dependents[src].append(task_id)
            self._pending.append(pending)
            self._dependents.append([])
            self._finished.append(False)
            if pending == 0:
                self._ready.append(task_id)
                if self._threads:
                    self._work_available.notify()
        return task_id

    def wait(self) -> None:
        """Returns once every submitted task has run; raises `KernelError` if one failed.

        After a failure no further task starts; the ones already running finish first.
        """
        if self.seed is not None:
            self._run_seeded()
        else:
            with self._lock:
                while self._completed < len(self.tasks) and not (
                    self._error is not None and self._running == 0
                ):
                    self._progress.wait()
        if self._error is not None:
            raise self._error

    def close(self) -> None:
        """Stops the workers once their current task returns; unstarted tasks never run."""
        with self._lock:
            self._closing = True
            self._work_available.notify_all()
        for thread in self._threads:
            thread.join()

    def _work(self, core: SimCore) -> None:
        """Worker loop: the thread owns `core` and runs ready tasks on it."""
        while True:
            with self._lock:
                while not self._closing and not (self._ready and self._error is None):
                    self._work_available.wait()
                if self._closing:
                    return
                task = self.tasks[self._ready.popleft()]
                self._running += 1
            error = self._execute(task, core)
            with self._lock:
                self._running -= 1
                self._complete(task, error)

    def _run_seeded(self) -> None:
        rng = random.Random(self.seed)
        ready = self._ready
        step = 0
        while ready and self._error is None:
            pick = rng.randrange(len(ready))
            ready[pick], ready[-1] = ready[-1], ready[pick]
            task = self.tasks[ready.pop()]
            error = self._execute(task, self.cores[step % len(self.cores)])
            step += 1
            with self._lock:
                self._complete(task, error)

    def _execute(self, task: Task, core: SimCore) -> KernelError | None:
        """Runs one task on `core`, timing it; returns the failure instead of raising it."""
        task.core_id = core.core_id
        task.start_ns = time.perf_counter_ns()
        try:
            task.kernel(core.pointer, task.args)
        except Exception as exc:  # noqa: BLE001 - any failure becomes the run's KernelError
            error = KernelError(f"kernel {task.kernel_name!r} (task {task.task_id}) failed: {exc}")
            error.__cause__ = exc
            return error
        finally:
            task.end_ns = time.perf_counter_ns()
        return None

    def _complete(self, task: Task, error: KernelError | None) -> None:
        """Releases the task's dependents (caller holds the lock)."""
        if error is not None:
            if self._error is None:
                self._error = error
        else:
            self._finished[task.task_id] = True
            self._completed += 1
            released = 0
            for dst in self._dependents[task.task_id]:
                self._pending[dst] -= 1
                if self._pending[dst] == 0:
                    self._ready.append(dst)
                    released += 1
            if released:
                self._work_available.notify(released)
        self._progress.notify_all()
