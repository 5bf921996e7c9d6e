"""Scheduler: dependency inference from accesses, explicit deps, and both execution modes."""

import threading

import pytest

from pypto.runtime import KernelError, OrchestrationError
from pypto.runtime.abi import Direction
from pypto.runtime.memory import SimCore
from pypto.runtime.scheduler import Access, Edge, Scheduler

IN, OUT, INOUT = Direction.IN, Direction.OUT, Direction.INOUT
TINY = {"Vec": 64, "Mat": 64, "Left": 64, "Right": 64, "Acc": 64, "Bias": 64, "LeftScale": 64,
        "RightScale": 64}


def make_scheduler(workers: int = 2, seed: int | None = None) -> Scheduler:
    return Scheduler([SimCore(i, TINY) for i in range(workers)], seed=seed)


def record_into(log: list):
    """A Python 'kernel' that appends its args (the task's label) to `log`."""
    lock = threading.Lock()

    def kernel(core, label):
        with lock:
            log.append(label)

    return kernel


def run_all(scheduler: Scheduler, tasks) -> list:
    """Submits (label, accesses, deps) triples, waits, returns the execution order."""
    log: list = []
    kernel = record_into(log)
    scheduler.start()
    try:
        for label, accesses, deps in tasks:
            scheduler.submit(f"k_{label}", kernel, label, accesses, deps)
        scheduler.wait()
    finally:
        scheduler.close()
    return log


def edges_of(tasks, **kwargs) -> list[Edge]:
    scheduler = make_scheduler(**kwargs)
    run_all(scheduler, tasks)
    return scheduler.edges


def test_task_ids_count_up_in_submission_order():
    scheduler = make_scheduler(seed=0)
    ids = [scheduler.submit("k", lambda core, args: None, None, []) for _ in range(5)]
    scheduler.wait()
    assert ids == [0, 1, 2, 3, 4]


def test_read_after_write_is_a_raw_edge():
    edges = edges_of([("w", [Access(0, 64, OUT)], []), ("r", [Access(32, 40, IN)], [])])
    assert edges == [Edge(0, 1, "tensormap", "RAW")]


def test_write_after_write_is_a_waw_edge():
    edges = edges_of([("a", [Access(0, 64, OUT)], []), ("b", [Access(60, 70, OUT)], [])])
    assert edges == [Edge(0, 1, "tensormap", "WAW")]


def test_inout_reads_the_last_writer_and_becomes_the_writer():
    edges = edges_of(
        [
            ("w", [Access(0, 64, OUT)], []),
            ("rw", [Access(0, 64, INOUT)], []),
            ("r", [Access(0, 64, IN)], []),
        ]
    )
    assert edges == [Edge(0, 1, "tensormap", "RAW"), Edge(1, 2, "tensormap", "RAW")]


def test_write_after_read_is_not_tracked():
    edges = edges_of([("r", [Access(0, 64, IN)], []), ("w", [Access(0, 64, OUT)], [])])
    assert edges == []


def test_readers_do_not_order_each_other():
    edges = edges_of(
        [
            ("w", [Access(0, 64, OUT)], []),
            ("r1", [Access(0, 64, IN)], []),
            ("r2", [Access(0, 64, IN)], []),
        ]
    )
    assert edges == [Edge(0, 1, "tensormap", "RAW"), Edge(0, 2, "tensormap", "RAW")]


def test_disjoint_accesses_get_no_edge():
    edges = edges_of([("a", [Access(0, 64, OUT)], []), ("b", [Access(64, 128, OUT)], [])])
    assert edges == []


def test_a_task_reading_and_writing_the_same_bytes_does_not_wait_on_itself():
    edges = edges_of([("t", [Access(0, 64, OUT), Access(0, 64, IN)], [])])
    assert edges == []


def test_partly_overwritten_region_depends_on_every_last_writer():
    edges = edges_of(
        [
            ("a", [Access(0, 100, OUT)], []),
            ("b", [Access(40, 60, OUT)], []),
            ("r", [Access(0, 100, IN)], []),
        ]
    )
    assert Edge(0, 2, "tensormap", "RAW") in edges and Edge(1, 2, "tensormap", "RAW") in edges


def test_explicit_deps_are_recorded_as_explicit_edges_once():
    edges = edges_of([("r", [Access(0, 64, IN)], []), ("w", [Access(0, 64, OUT)], [0, 0])])
    assert edges == [Edge(0, 1, "explicit", None)]


def test_explicit_dep_orders_the_tasks():
    order = run_all(
        make_scheduler(workers=2, seed=3),
        [("first", [], []), ("second", [], []), ("third", [], [0, 1])],
    )
    assert order[-1] == "third"


def test_dependency_on_a_future_task_is_refused():
    scheduler = make_scheduler(seed=0)
    scheduler.submit("k", lambda core, args: None, None, [])
    with pytest.raises(OrchestrationError, match=r"task 1 \(late\) depends on task 5.*0\.\.0"):
        scheduler.submit("late", lambda core, args: None, None, [], [5])


def test_dependency_on_a_negative_id_is_refused():
    with pytest.raises(OrchestrationError, match="depends on task -1"):
        make_scheduler(seed=0).submit("k", lambda core, args: None, None, [], [-1])


@pytest.mark.parametrize("seed", [None, 0])
def test_failing_kernel_fails_the_run_naming_kernel_and_task(seed):
    def boom(core, args):
        raise ValueError("bad tile")

    ran = []
    scheduler = make_scheduler(seed=seed)
    scheduler.start()
    try:
        scheduler.submit("ok", lambda core, args: None, None, [Access(0, 8, OUT)])
        scheduler.submit("broken", boom, None, [Access(0, 8, INOUT)])
        scheduler.submit("after", lambda core, args: ran.append(1), None, [Access(0, 8, IN)])
        with pytest.raises(KernelError, match=r"kernel 'broken' \(task 1\) failed: bad tile"):
            scheduler.wait()
    finally:
        scheduler.close()
    assert ran == []


def test_one_worker_runs_a_long_chain_in_dependency_order():
    chain = [(k, [Access(0, 8, INOUT)], []) for k in range(200)]
    assert run_all(make_scheduler(workers=1), chain) == list(range(200))


def test_tasks_record_their_core_and_times():
    scheduler = make_scheduler(workers=2)
    run_all(scheduler, [(k, [], []) for k in range(6)])
    for task in scheduler.tasks:
        assert task.core_id in (0, 1)
        assert task.start_ns <= task.end_ns


def test_seeded_order_is_reproducible_and_seed_dependent():
    independent = [(k, [], []) for k in range(20)]
    first = run_all(make_scheduler(seed=11), independent)
    assert run_all(make_scheduler(seed=11), independent) == first
    assert run_all(make_scheduler(seed=12), independent) != first
    assert sorted(first) == list(range(20))


def test_seeded_mode_respects_dependencies():
    tasks = [("w", [Access(0, 8, OUT)], []), ("r", [Access(0, 8, IN)], [])]
    for seed in range(10):
        assert run_all(make_scheduler(seed=seed), tasks) == ["w", "r"]


def test_seeded_mode_places_tasks_round_robin_over_cores():
    scheduler = make_scheduler(workers=3, seed=5)
    run_all(scheduler, [(k, [], []) for k in range(6)])
    by_start = sorted(scheduler.tasks, key=lambda t: t.start_ns)
    assert [t.core_id for t in by_start] == [0, 1, 2, 0, 1, 2]
