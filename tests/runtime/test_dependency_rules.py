"""Scheduler rules beyond RAW/WAW: accumulators, untracked accesses, SPMD dispatches, races."""

import threading

import pytest

from pypto.runtime import OrchestrationError, RaceError
from pypto.runtime.abi import Direction
from pypto.runtime.memory import SimCore
from pypto.runtime.scheduler import Access, Edge, Scheduler

IN, OUT, INOUT, ACCUM = Direction.IN, Direction.OUT, Direction.INOUT, Direction.ACCUM
TINY = {"Vec": 64, "Mat": 64, "Left": 64, "Right": 64, "Acc": 64, "Bias": 64, "LeftScale": 64,
        "RightScale": 64}


def scheduler(seed=0, workers=2, **kwargs) -> Scheduler:
    return Scheduler([SimCore(i, TINY) for i in range(workers)], seed=seed, **kwargs)


def noop(core, args):
    pass


def edges_of(tasks, **kwargs) -> list[Edge]:
    """Submits (accesses, deps, blocks) triples and returns the recorded edges."""
    s = scheduler(**kwargs)
    for accesses, deps, blocks in tasks:
        s.submit("k", noop, None, accesses, deps, blocks)
    s.wait()
    s.close()
    return s.edges


def acc(start=0, end=64):
    return Access(start, end, ACCUM)


def untracked(direction, start=0, end=64):
    return Access(start, end, direction, tracked=False)


# ----------------------------------------------------------------------------- accumulators


def test_accumulators_wait_for_the_plain_writer_but_not_for_each_other():
    edges = edges_of([([Access(0, 64, OUT)], [], 1), ([acc()], [], 1), ([acc()], [], 1)])
    assert edges == [Edge(0, 1, "tensormap", "RAW"), Edge(0, 2, "tensormap", "RAW")]


def test_a_reader_after_accumulators_waits_for_all_of_them():
    edges = edges_of([([Access(0, 64, OUT)], [], 1), ([acc()], [], 1), ([acc()], [], 1),
                      ([Access(0, 64, IN)], [], 1)])
    assert [e for e in edges if e.dst == 3] == [
        Edge(0, 3, "tensormap", "RAW"), Edge(1, 3, "tensormap", "RAW"),
        Edge(2, 3, "tensormap", "RAW"),
    ]


def test_a_plain_writer_after_accumulators_waits_for_all_of_them_and_resets_the_set():
    edges = edges_of([([acc()], [], 1), ([acc()], [], 1), ([Access(0, 64, OUT)], [], 1),
                      ([acc()], [], 1)])
    assert [e for e in edges if e.dst == 2] == [
        Edge(0, 2, "tensormap", "WAW"), Edge(1, 2, "tensormap", "WAW"),
    ]
    assert [e for e in edges if e.dst == 3] == [Edge(2, 3, "tensormap", "RAW")]


def test_accumulating_into_part_of_a_write_splits_the_range():
    edges = edges_of([([Access(0, 64, OUT)], [], 1), ([acc(0, 32)], [], 1),
                      ([Access(32, 64, IN)], [], 1)])
    assert [e for e in edges if e.dst == 2] == [Edge(0, 2, "tensormap", "RAW")]


# ----------------------------------------------------------------------------- untracked


def test_an_untracked_access_waits_for_nobody():
    edges = edges_of([([Access(0, 64, OUT)], [], 1), ([untracked(IN)], [], 1),
                      ([untracked(OUT)], [], 1)])
    assert edges == []


def test_an_untracked_write_joins_the_writers_later_accesses_wait_for():
    edges = edges_of([([Access(0, 64, OUT)], [], 1), ([untracked(OUT)], [], 1),
                      ([untracked(OUT)], [], 1), ([Access(0, 64, IN)], [], 1)])
    assert [e.src for e in edges if e.dst == 3] == [0, 1, 2]


def test_explicit_deps_still_order_untracked_tasks():
    edges = edges_of([([untracked(OUT)], [], 1), ([untracked(IN)], [0], 1)])
    assert edges == [Edge(0, 1, "explicit", None)]


# ----------------------------------------------------------------------------- SPMD


def test_the_blocks_of_a_dispatch_get_consecutive_ids_and_the_same_predecessors():
    s = scheduler()
    s.submit("w", noop, None, [Access(0, 64, OUT)])
    first = s.submit("spmd", noop, None, [Access(0, 64, INOUT)], blocks=3)
    s.wait()
    assert first == 1
    assert [(t.task_id, t.block_idx, t.block_num, t.predecessors) for t in s.tasks[1:]] == [
        (1, 0, 3, (0,)), (2, 1, 3, (0,)), (3, 2, 3, (0,))]
    assert s.edges == [Edge(0, i, "tensormap", "RAW") for i in (1, 2, 3)]


def test_the_blocks_of_a_dispatch_are_not_ordered_and_later_readers_wait_for_all():
    edges = edges_of([([Access(0, 64, OUT)], [], 4), ([Access(0, 64, IN)], [], 1)])
    assert [(e.src, e.dst) for e in edges] == [(0, 4), (1, 4), (2, 4), (3, 4)]


def test_each_block_sees_its_index_in_the_core():
    seen = []
    lock = threading.Lock()

    def kernel(core, args):
        with lock:
            seen.append((core.contents.block_idx, core.contents.block_num))

    s = scheduler(seed=None)
    s.start()
    s.submit("spmd", kernel, None, [], blocks=4)
    s.submit("plain", kernel, None, [])
    s.wait()
    s.close()
    assert sorted(seen) == [(0, 1), (0, 4), (1, 4), (2, 4), (3, 4)]


def test_a_negative_block_count_is_refused():
    with pytest.raises(OrchestrationError, match="blocks >= 0"):
        scheduler().submit("k", noop, None, [], blocks=-1)


# ----------------------------------------------------------------------------- races


def test_a_write_after_an_unordered_read_is_a_race_naming_both_tasks():
    s = scheduler(detect_races=True)
    s.submit("reader", noop, None, [Access(0, 64, IN, arg=0)])
    with pytest.raises(RaceError, match=r"write-after-read race .*task 1 \(writer\).*task 0 "
                                        r"\(reader\)") as info:
        s.submit("writer", noop, None, [Access(0, 64, OUT, arg=0)])
    assert (info.value.writer, info.value.reader, info.value.kind) == (1, 0, "write-after-read")
    assert "deps=[" in str(info.value)


def test_an_explicit_dep_on_the_reader_removes_the_race():
    s = scheduler(detect_races=True)
    s.submit("reader", noop, None, [Access(0, 64, IN)])
    s.submit("writer", noop, None, [Access(0, 64, OUT)], [0])
    s.wait()


def test_ordering_through_a_chain_of_edges_counts():
    s = scheduler(detect_races=True)
    s.submit("reader", noop, None, [Access(0, 64, IN), Access(100, 108, OUT)])
    s.submit("middle", noop, None, [Access(100, 108, IN), Access(200, 208, OUT)])
    s.submit("writer", noop, None, [Access(0, 64, OUT), Access(200, 208, IN)])
    s.wait()


def test_concurrent_readers_are_not_a_race():
    s = scheduler(detect_races=True)
    s.submit("w", noop, None, [Access(0, 64, OUT)])
    s.submit("r1", noop, None, [Access(0, 64, IN)])
    s.submit("r2", noop, None, [Access(0, 64, IN)])
    s.wait()


def test_accumulators_do_not_race_with_each_other_but_with_an_unordered_reader():
    s = scheduler(detect_races=True)
    s.submit("zero", noop, None, [Access(0, 64, OUT)])
    s.submit("acc1", noop, None, [acc()])
    s.submit("acc2", noop, None, [acc()])
    s.submit("read", noop, None, [Access(0, 64, IN)])
    with pytest.raises(RaceError, match="write-after-read"):
        s.submit("acc3", noop, None, [acc()])


def test_untracked_accesses_race_unless_deps_order_them():
    s = scheduler(detect_races=True)
    s.submit("producer", noop, None, [untracked(OUT)])
    with pytest.raises(RaceError, match="read-after-write") as info:
        s.submit("consumer", noop, None, [untracked(IN)])
    assert (info.value.writer, info.value.reader) == (0, 1)
    s = scheduler(detect_races=True)
    s.submit("producer", noop, None, [untracked(OUT)])
    s.submit("consumer", noop, None, [untracked(IN)], [0])
    s.wait()


def test_disjoint_bytes_never_race():
    s = scheduler(detect_races=True)
    s.submit("reader", noop, None, [Access(0, 64, IN)])
    s.submit("writer", noop, None, [Access(64, 128, OUT)])
    s.wait()


def test_the_blocks_of_one_dispatch_do_not_race_with_each_other():
    s = scheduler(detect_races=True)
    s.submit("spmd", noop, None, [Access(0, 64, INOUT)], blocks=4)
    s.wait()
