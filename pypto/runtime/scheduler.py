"""The task scheduler: infers dependencies from memory accesses and runs tasks on cores.

Dependency rules (the runtime contract), per tensor access of a new task:
- `In` waits on the last writers of every overlapping byte range (RAW);
- `Out` waits on them too (WAW) and becomes the writer; `InOut` does both;
- `Accum` (an atomic-add-only access) waits on the last *plain* writers (RAW) and joins
  the range's accumulators: accumulators are not ordered against each other, and the
  next reader or plain writer waits for all of them;
- readers are never registered, so write-after-read is not ordered unless the
  orchestration adds an explicit dependency;
- an access flagged `tracked=False` (`pl.manual_scope`, `no_dep_args=`) waits for
  nobody; a write through it joins the range's unordered writers instead of replacing
  them, so later inferred accesses still wait for it.

`edges` records at most one inferred edge per task pair (RAW when any read of the later
task overlaps the earlier one's write, an InOut or Accum access counting as a read; WAW
otherwise) plus one explicit edge per declared dependency, even where an inferred edge
already orders the pair.  A dispatch of several SPMD blocks is one lookup: every block
gets the same predecessors, the blocks are not ordered against each other, and together
they become the writers of what they write.

Two execution modes:
- `seed=None`: worker threads take ready tasks first come, first served, from the
  moment they are submitted, each on a free core of the run: as many tasks in flight
  as the run has cores, each core running one at a time.  Kernels run through ctypes,
  which releases the GIL, so tasks really run concurrently and a missing edge is a real
  race.  The threads belong to a process-wide pool (`_WorkerPool`) and outlive the run;
  the thread in `wait()` runs ready tasks too instead of sleeping.
- `seed=int`: nothing runs while the orchestration submits; `wait()` then runs every
  task on the calling thread, one at a time, each time letting `random.Random(seed)`
  pick among the ready tasks and placing the n-th task on core `n % len(cores)`.  The
  same seed gives the same order, cores and bits; another seed explores another
  legal order (another order of a race, another order of atomic accumulations).

With `detect_races=True` the scheduler also keeps the reader bookkeeping the device
cannot afford: every access is checked against the earlier accesses of overlapping
bytes it conflicts with, and a conflict that no chain of edges orders raises
`RaceError` at submission, naming both tasks and the buffer.
"""

from __future__ import annotations

import gc
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pypto.runtime.abi import Direction
from pypto.runtime.errors import KernelError, OrchestrationError, RaceError
from pypto.runtime.memory import SimCore
from pypto.runtime.overlap_map import OverlapMap

# Module constants: enum attribute lookup is slow on the per-task path.
_IN, _OUT, _INOUT, _ACCUM = Direction.IN, Direction.OUT, Direction.INOUT, Direction.ACCUM


class Access(NamedTuple):
    """A task's use of device bytes [start, end) in one direction.

    `tracked=False` opts the access out of inference; `arg` is the kernel argument
    position it came from (-1 when unknown), used to name it in diagnostics.
    """

    start: int
    end: int
    direction: Direction
    tracked: bool = True
    arg: int = -1


class Edge(NamedTuple):
    """`dst` waits for `src`: inferred from memory ("tensormap", kind "RAW" or "WAW")
    or declared by the orchestration ("explicit", kind None)."""

    src: int
    dst: int
    source: str
    kind: str | None


@dataclass(eq=False, slots=True)
class Task:
    """One dispatch of a kernel (one block of an SPMD dispatch), with what the run recorded."""

    task_id: int
    kernel_name: str
    kernel: Callable[[Any, Any], None]
    args: Any
    accesses: tuple[Access, ...]
    predecessors: tuple[int, ...]
    block_idx: int = 0
    block_num: int = 1
    group: int = -1
    """Id of the dispatch's first block (the task itself for a plain task)."""
    core_id: int | None = None
    """The core (and worker) that ran the task."""
    start_ns: int | None = None
    """`time.perf_counter_ns()` when the kernel was called."""
    end_ns: int | None = None
    """`time.perf_counter_ns()` when the kernel returned."""
    early_resolve: bool = False
    """Dispatched with `allow_early_resolve=True`."""
    staged: bool = False
    """Pre-staged: released by an early-resolve predecessor, so it started next on the core
    that predecessor freed, ahead of tasks that became ready earlier."""
    ring: int = 0
    """The ring of its scope depth, min(depth, 3) (the Python scheduler records it; only
    the native one keeps the rings' resources)."""
    gang: bool = False
    """Of a gang dispatch (`PTO_TASK_GANG`, a kernel with a `pl.system.syncall`): block 0's
    call runs every block at once; the others (riders) are never ready by themselves and
    finish with it."""

    @property
    def rider(self) -> bool:
        """A block of a gang dispatch that block 0's call runs."""
        return self.gang and self.block_idx > 0


# An OverlapMap entry is a task id (the one plain last writer: the common case, kept
# cheap) or a pair (plain writers, accumulators) of *chains*: None or (id, chain).
# Chains are immutable, so entries split by a partial overwrite share them safely, and
# adding a writer to a set of thousands is O(1) instead of a tuple copy.


def _chain(ids, rest=None):
    """`rest` with `ids` added in front."""
    for i in ids:
        rest = (i, rest)
    return rest


def _ids(chain):
    """The ids of a chain."""
    while chain is not None:
        yield chain[0]
        chain = chain[1]


def _plain(entry):
    """The chain of plain (non-accumulating) last writers of an OverlapMap entry."""
    if entry is None:
        return None
    return (entry, None) if type(entry) is int else entry[0]


def _accumulators(entry):
    """The chain of accumulators since the last plain write of an OverlapMap entry."""
    return None if entry is None or type(entry) is int else entry[1]


class Scheduler:
    """Orders and runs the tasks of one run: `start`, `submit`..., `wait`, and always `close`."""

    engine = "python"
    """Which scheduler ran (`native.NativeSchedule.engine` is "native")."""

    def __init__(
        self,
        cores: Sequence[SimCore],
        *,
        seed: int | None = None,
        detect_races: bool = False,
        describe_bytes: Callable[[int, int], str] | None = None,
        describe_access: Callable[[str, Access], str] | None = None,
    ) -> None:
        if not cores:
            raise ValueError("a scheduler needs at least one core")
        self.cores = tuple(cores)
        self.seed = seed
        self.tasks: list[Task] = []
        self.edges: list[Edge] = []
        self.created_ns = time.perf_counter_ns()
        """When the run began: the origin of task timings in DFX outputs."""
        self._writers = OverlapMap()
        # Per task id: unfinished predecessors, tasks waiting on it (None: none yet),
        # whether it finished.
        self._pending: list[int] = []
        self._dependents: list[list[int] | None] = []
        self._finished: list[bool] = []
        self._ready: deque[int] = deque()
        # The pool's lock guards every scheduler's state: one lock, so a pool worker
        # picks a task and a core of any run in one step.
        self._lock = _POOL.lock
        self._work_available = _POOL.work_available
        self._progress = _POOL.progress
        self._free_cores = list(reversed(self.cores))  # pop() hands out core 0 first
        self._completed = 0
        self._running = 0
        self._error: KernelError | None = None
        self._closing = False
        self._attached = False
        self._gc_paused = False
        self._races = _RaceDetector(self, describe_bytes, describe_access) if detect_races else None

    def start(self) -> None:
        """Begins the run: from now on pool workers, one per core, take ready tasks as they
        are submitted (FIFO mode; seeded mode runs them in `wait`).

        The cyclic garbage collector is paused until `close`: a run allocates a few
        objects per task and frees them by reference counting, and a full collection
        over a process that imported torch costs ~80 ms, several times per 10,000 tasks.
        """
        if self._gc_paused or self._closing:
            return
        self._gc_paused = True
        _pause_gc()
        if self.seed is None:
            with self._lock:
                _POOL.attach(self)

    def submit(
        self,
        kernel_name: str,
        kernel: Callable[[Any, Any], None],
        args: Any,
        accesses: Iterable[Access],
        deps: Iterable[int] = (),
        blocks: int = 1,
        early_resolve: bool = False,
        ring: int = 0,
        gang: bool = False,
    ) -> int:
        """Adds `blocks` tasks that call `kernel(core_pointer, args)`; returns the first id.

        Ids count up from 0 in submission order; the blocks of one call get consecutive
        ids.  `deps` are explicit predecessors and must name already-submitted tasks.
        Only one thread may submit.  `early_resolve` (`allow_early_resolve=True`): a
        dependent this dispatch's tasks are the last to wait for is pre-staged: it goes to
        the front of the ready queue and runs next (a seeded schedule too runs it next,
        then picks among the others by its seed).  `gang` (`PTO_TASK_GANG`): the kernel runs
        every block itself, in one call as block 0 of `blocks`; the other tasks finish with it.
        """
        task_id = len(self.tasks)
        explicit = sorted(set(deps)) if deps else ()
        _check_dispatch(task_id, kernel_name, explicit, blocks)
        accesses = tuple(accesses)
        raw, waw = self._tensormap_sources(accesses)
        edges: list[Edge] = []
        if raw or waw:
            waw -= raw
            edges += [Edge(src, task_id, "tensormap", "RAW") for src in sorted(raw)]
            edges += [Edge(src, task_id, "tensormap", "WAW") for src in sorted(waw)]
            raw |= waw
        if explicit:
            edges += [Edge(src, task_id, "explicit", None) for src in explicit]
            raw.update(explicit)
        predecessors = tuple(sorted(raw)) if raw else ()
        if blocks == 1:
            ids: tuple[int, ...] = (task_id,)
            tasks = [Task(task_id, kernel_name, kernel, args, accesses, predecessors, 0, 1,
                          task_id)]
        else:
            ids = tuple(range(task_id, task_id + blocks))
            tasks = [
                Task(i, kernel_name, kernel, args, accesses, predecessors, i - task_id, blocks,
                     task_id)
                for i in ids
            ]
        if self._races is not None and blocks:
            self._races.check(task_id, kernel_name, accesses, predecessors, ids)
        # Writers are registered only after every lookup, so a task never waits on itself.
        if blocks:
            self._register(accesses, ids)
        if blocks > 1:
            # Every block has the dispatch's predecessors; edges are per task.
            edges = [e._replace(dst=i) for i in ids for e in edges]
        for task in tasks:
            task.early_resolve = early_resolve
            task.ring = ring
            task.gang = gang
        self._enqueue(tasks, predecessors, edges)
        return task_id

    def _tensormap_sources(self, accesses: tuple[Access, ...]) -> tuple[set[int], set[int]]:
        """The earlier tasks a dispatch's tracked accesses must follow: (read-after-write,
        write-after-write), from the OverlapMap of writers."""
        lookup = self._writers.writers
        raw: set[int] = set()
        waw: set[int] = set()
        for start, end, direction, tracked, _ in accesses:
            if not tracked:
                continue
            for entry in lookup(start, end):
                if type(entry) is int:
                    (waw if direction is _OUT else raw).add(entry)
                elif direction is _ACCUM:
                    raw.update(_ids(entry[0]))
                elif direction is _OUT:
                    waw.update(_ids(entry[0]))
                    waw.update(_ids(entry[1]))
                else:
                    raw.update(_ids(entry[0]))
                    raw.update(_ids(entry[1]))
        return raw, waw

    def _enqueue(self, tasks: list[Task], predecessors: tuple[int, ...],
                 edges: list[Edge]) -> None:
        """Adds the dispatch's tasks and edges; a task whose predecessors all finished is
        ready at once."""
        with self._lock:
            if edges:
                self.edges += edges
            finished, dependents = self._finished, self._dependents
            for task in tasks:
                self.tasks.append(task)
                pending = 0
                for src in predecessors:
                    if not finished[src]:
                        pending += 1
                        waiting = dependents[src]
                        if waiting is None:
                            dependents[src] = [task.task_id]
                        else:
                            waiting.append(task.task_id)
                self._pending.append(pending)
                dependents.append(None)
                finished.append(False)
                if pending == 0 and not task.rider:
                    self._ready.append(task.task_id)
                    if self._attached:
                        self._work_available.notify()

    def _register(self, accesses: tuple[Access, ...], ids: tuple[int, ...]) -> None:
        """Records the dispatch's writes in the OverlapMap."""
        overlap_map = self._writers
        writer = ids[0] if len(ids) == 1 else (_chain(ids), None)
        for start, end, direction, tracked, _ in accesses:
            if direction is _IN:
                continue
            if direction is _ACCUM:
                overlap_map.update(start, end, lambda e: (_plain(e), _chain(ids, _accumulators(e))))
            elif tracked:
                overlap_map.assign(start, end, writer)
            else:
                overlap_map.update(start, end, lambda e: (_chain(ids, _plain(e)), _accumulators(e)))

    def wait(self) -> None:
        """Returns once every submitted task has run; raises `KernelError` if one failed.

        After a failure no further task starts; the ones already running finish first.
        """
        if self.seed is not None:
            self._run_seeded()
        else:
            self._help_until_done()
        if self._error is not None:
            raise self._error

    def _help_until_done(self) -> None:
        """The waiting thread runs ready tasks on free cores too, rather than sleeping
        while a pool worker wakes up for them: a small run then needs no thread hand-off."""
        with self._lock:
            while self._completed < len(self.tasks) and not (
                self._error is not None and self._running == 0
            ):
                job = self._take()
                if job is None:
                    self._progress.wait()
                    continue
                self._run_unlocked(*job)

    def close(self) -> None:
        """Ends the run once the tasks running now return; unstarted tasks never run.

        The pool's workers outlive the run, but none runs a task of it after `close`.
        """
        with self._lock:
            self._closing = True
            while self._running:
                self._progress.wait()
            if self._attached:
                _POOL.detach(self)
        if self._gc_paused:
            self._gc_paused = False
            _resume_gc()

    def _take(self) -> tuple[Task, SimCore] | None:
        """A ready task and a free core to run it on, or None (caller holds the lock)."""
        if (not self._ready or not self._free_cores or self._error is not None
                or self._closing):
            return None
        self._running += 1
        return self.tasks[self._ready.popleft()], self._free_cores.pop()

    def _run_unlocked(self, task: Task, core: SimCore) -> None:
        """Runs a task `_take` gave with the lock released (the caller holds it), then
        reports it done under the lock again."""
        self._lock.release()
        try:
            error = self._execute(task, core)
        finally:
            self._lock.acquire()
        self._finish(task, core, error)

    def _finish(self, task: Task, core: SimCore, error: KernelError | None) -> None:
        """Gives `core` back and releases the task's dependents (caller holds the lock)."""
        self._running -= 1
        self._free_cores.append(core)
        self._complete_dispatch(task, error)
        if self._running == 0 and (self._closing or self._error is not None):
            self._progress.notify_all()

    def _complete_dispatch(self, task: Task, error: KernelError | None) -> None:
        """`_complete` of the task, and of the riders of a gang's block 0, which its call
        ran (caller holds the lock)."""
        self._complete(task, error)
        if task.gang and error is None:
            for rider in self.tasks[task.task_id + 1:task.task_id + task.block_num]:
                rider.core_id, rider.start_ns, rider.end_ns = (task.core_id, task.start_ns,
                                                               task.end_ns)
                self._complete(rider, None)

    def _run_seeded(self) -> None:
        rng = random.Random(self.seed)
        ready = self._ready
        step = 0
        while ready and self._error is None:
            if self.tasks[ready[0]].staged:
                # Pre-staged (allow_early_resolve): it starts the moment its producer
                # ended, before the seed picks among the others.
                task = self.tasks[ready.popleft()]
            else:
                pick = rng.randrange(len(ready))
                ready[pick], ready[-1] = ready[-1], ready[pick]
                task = self.tasks[ready.pop()]
            error = self._execute(task, self.cores[step % len(self.cores)])
            step += 1
            with self._lock:
                self._complete_dispatch(task, error)

    def _execute(self, task: Task, core: SimCore) -> KernelError | None:
        """Runs one task on `core`, timing it; returns the failure instead of raising it."""
        task.core_id = core.core_id
        # Always written: the native scheduler may have run other blocks on this core.
        core.set_block(task.block_idx, task.block_num)
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
            self._progress.notify_all()
            return
        self._finished[task.task_id] = True
        self._completed += 1
        waiting = self._dependents[task.task_id]
        if waiting:
            released = 0
            pending = self._pending
            staged: list[int] = []
            for dst in waiting:
                pending[dst] -= 1
                if pending[dst] == 0 and not self.tasks[dst].rider:
                    if task.early_resolve:
                        # Pre-staged: next on the core this task frees (as the native
                        # scheduler), in submit order among themselves.
                        self.tasks[dst].staged = True
                        staged.append(dst)
                    else:
                        self._ready.append(dst)
                    released += 1
            if staged:
                self._ready.extendleft(reversed(staged))
            # A pool worker that completes a task takes the next ready one itself.
            if released > 1 and self._attached:
                self._work_available.notify(released - 1)
        if self._completed == len(self.tasks):
            self._progress.notify_all()


class _WorkerPool:
    """Worker threads shared by every run in the process, started once and kept.

    Starting a thread costs ~200 µs, more than a small run: so threads outlive runs.
    A run (`Scheduler.start`) attaches its scheduler; a worker takes a ready task and a
    free core of an attached scheduler and runs the task on that core, so a run never
    has more tasks in flight than it has cores, and each core runs one task at a time.
    The pool keeps at least as many threads as the attached runs have cores.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.work_available = threading.Condition(self.lock)
        # Where the threads in `Scheduler.wait`/`close` sleep; shared by every run (each
        # re-checks its own state when woken), which saves building one per run.
        self.progress = threading.Condition(self.lock)
        self.schedulers: list[Scheduler] = []
        self.threads = 0
        self.cores = 0

    def attach(self, scheduler: Scheduler) -> None:
        """Lets workers take `scheduler`'s tasks (caller holds the lock)."""
        self.schedulers.append(scheduler)
        scheduler._attached = True
        self.cores += len(scheduler.cores)
        while self.threads < self.cores:
            self.threads += 1
            threading.Thread(target=self._serve, name=f"pypto-worker-{self.threads - 1}",
                             daemon=True).start()
        if scheduler._ready:
            self.work_available.notify(len(scheduler._ready))

    def detach(self, scheduler: Scheduler) -> None:
        """No worker takes `scheduler`'s tasks from now on (caller holds the lock)."""
        self.schedulers.remove(scheduler)
        scheduler._attached = False
        self.cores -= len(scheduler.cores)

    def _serve(self) -> None:
        """Worker loop: take a task and a core, run it unlocked, report back; forever."""
        with self.lock:
            while True:
                job = None
                for scheduler in self.schedulers:
                    job = scheduler._take()
                    if job is not None:
                        break
                if job is None:
                    self.work_available.wait()
                    continue
                scheduler._run_unlocked(*job)


_POOL = _WorkerPool()


def _new_pool_after_fork() -> None:
    # A forked child has none of the parent's threads: it starts its own pool.
    global _POOL
    _POOL = _WorkerPool()


os.register_at_fork(after_in_child=_new_pool_after_fork)

_GC_LOCK = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


def _pause_gc() -> None:
    """Disables the cyclic collector until every run that paused it resumes it."""
    global _gc_pauses, _gc_was_enabled
    with _GC_LOCK:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1


def _resume_gc() -> None:
    global _gc_pauses
    with _GC_LOCK:
        _gc_pauses -= 1
        if _gc_pauses == 0 and _gc_was_enabled:
            gc.enable()


_VERBS = {_IN: "reads", _OUT: "writes", _INOUT: "reads and writes", _ACCUM: "accumulates into"}


class _RaceDetector:
    """Finds pairs of conflicting accesses to overlapping bytes that no edge orders.

    It keeps, per byte range, the writers of the current contents, the accumulators
    since, and the readers since: what a later access must be ordered after.  Each task
    carries the set of its ancestors as a bit set (an int), so "is ordered after" is one
    bit test.  Only built with `detect_races=True`; the normal path never pays for it.
    """

    def __init__(self, scheduler: Scheduler, describe_bytes, describe_access) -> None:
        self.scheduler = scheduler
        self.history = OverlapMap()
        self.ancestors: list[int] = []
        self.describe_bytes = describe_bytes or (lambda s, e: f"bytes [{s:#x}, {e:#x})")
        self.describe_access = describe_access or (lambda kernel, access: f"argument {access.arg}")

    def check(self, first: int, kernel_name: str, accesses, predecessors, ids) -> None:
        """Raises `RaceError` if the dispatch `ids` conflicts with an unordered access;
        otherwise records its accesses and ancestors."""
        ancestors = 0
        for p in predecessors:
            ancestors |= self.ancestors[p] | (1 << p)
        for access in accesses:
            start, end, direction = access.start, access.end, access.direction
            for s, e, entry in self._entries(start, end):
                for other in _conflicting(direction, entry):
                    if not (ancestors >> other) & 1 and other < first:
                        self._raise(first, kernel_name, access, other, max(s, start), min(e, end))
        for access in accesses:
            direction = access.direction
            if direction is _IN:
                change = _add_reader(ids)
            elif direction is _ACCUM:
                change = _add_accumulator(ids)
            else:
                change = _replace_writers(ids)
            self.history.update(access.start, access.end, change)
        self.ancestors.extend(ancestors for _ in ids)

    def _entries(self, start: int, end: int):
        history = self.history
        lo, hi = history._span(start, end)
        return zip(history._starts[lo:hi], history._ends[lo:hi], history._writers[lo:hi],
                   strict=True)

    def _raise(self, first, kernel_name, access, other, start, end) -> None:
        tasks = self.scheduler.tasks
        earlier = tasks[other]
        earlier_access = next(
            (a for a in earlier.accesses if a.start < end and start < a.end), None
        )
        earlier_direction = earlier_access.direction if earlier_access else _IN
        later_writes = access.direction is not _IN
        earlier_writes = earlier_direction is not _IN
        if later_writes and not earlier_writes:
            kind = "write-after-read"
            hint = (
                f"add deps=[<task id of {earlier.kernel_name}>] on the writer "
                "(`with pl.at(..., deps=[reader_tid])` or `pl.submit(..., deps=[reader_tid])`); "
                "keep the reader a plain input: promoting it to pl.InOut serializes every "
                "reader of the buffer"
            )
        else:
            kind = "read-after-write" if not later_writes else "write-after-write"
            hint = (
                "the runtime infers this edge unless the access is opted out "
                "(pl.manual_scope, no_dep_args=): add deps=[<task id of "
                f"{earlier.kernel_name}>] on the later task"
            )
        buffer = self.describe_bytes(start, end)
        earlier_what = (
            self.describe_access(earlier.kernel_name, earlier_access) if earlier_access
            else "an argument"
        )
        message = (
            f"{kind} race on {buffer}: task {first} ({kernel_name}) "
            f"{_VERBS[access.direction]} it through {self.describe_access(kernel_name, access)}, "
            f"task {other} ({earlier.kernel_name}) {_VERBS[earlier_direction]} it through "
            f"{earlier_what}, and no dependency orders the two; {hint}"
        )
        raise RaceError(message, earlier=other, later=first, kind=kind, buffer=buffer)


def _check_dispatch(task_id: int, kernel_name: str, explicit: list[int] | tuple[()],
                    blocks: int) -> None:
    """Refuses explicit dependencies on tasks not yet submitted, and negative blocks."""
    if explicit and (explicit[0] < 0 or explicit[-1] >= task_id):
        dep = explicit[0] if explicit[0] < 0 else explicit[-1]
        earlier = f"ids 0..{task_id - 1}" if task_id else "none yet"
        raise OrchestrationError(
            f"task {task_id} ({kernel_name}) depends on task {dep}, which has not been "
            f"submitted; a task can only depend on earlier tasks ({earlier})"
        )
    if blocks < 0:
        raise OrchestrationError(f"{kernel_name}: an SPMD dispatch needs blocks >= 0")


# History entries are (writers, accumulators, readers), each a chain (see `_chain`).


def _conflicting(direction, entry) -> Iterator[int]:
    """The tasks of a history entry an access in `direction` must be ordered after: a
    read after writers and accumulators, an accumulation after writers and readers, a
    write after all three."""
    writers, accumulators, readers = entry or (None, None, None)
    chains: tuple
    if direction is _IN:
        chains = (writers, accumulators)
    elif direction is _ACCUM:
        chains = (writers, readers)
    else:
        chains = (writers, accumulators, readers)
    return (i for chain in chains for i in _ids(chain))


def _add_reader(ids: tuple[int, ...]):
    def change(entry):
        writers, accumulators, readers = entry or (None, None, None)
        return writers, accumulators, _chain(ids, readers)

    return change


def _add_accumulator(ids: tuple[int, ...]):
    def change(entry):
        writers, accumulators, readers = entry or (None, None, None)
        return writers, _chain(ids, accumulators), readers

    return change


def _replace_writers(ids: tuple[int, ...]):
    writers = _chain(ids)
    return lambda entry: (writers, None, None)
