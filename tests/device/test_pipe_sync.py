"""InsertPipeSync and its verifier: every cross-pipe dependency gets a flag pair, and the
verifier catches the removal of any one of them, in every shipped kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto.codegen.device import device_kernel
from pypto.codegen.pipe_sync import (
    EVENTS,
    Access,
    Flag,
    Instr,
    Loop,
    flag_pairs,
    insert_pipe_sync,
    pair_flags,
    verify_pipe_sync,
    without_pair,
)
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

ROOT = Path(__file__).resolve().parents[2]
UB_A = Access("Vec", 0, 256)
UB_B = Access("Vec", 256, 512)


def _load(dst, name="TLOAD(a)"):
    return Instr("PIPE_MTE2", (Access("GM:a"),), (dst,), name)


def _add(dst, *srcs, name="TADD(c, a, b)"):
    return Instr("PIPE_V", tuple(srcs), (dst,), name)


def _store(src, name="TSTORE(out, c)"):
    return Instr("PIPE_MTE3", (src,), (Access("GM:out"),), name)


def test_an_unsynchronised_load_then_add_is_named_by_the_verifier():
    load, add = _load(UB_A), _add(UB_B, UB_A)
    (violation,) = verify_pipe_sync([load, add])
    assert (violation.producer, violation.consumer) == (load, add)
    assert "TLOAD(a) on PIPE_MTE2 and TADD(c, a, b) on PIPE_V" in violation.message
    assert "Vec bytes [0x0, 0x100)" in violation.message


def test_instructions_on_one_pipe_need_no_flag():
    assert verify_pipe_sync([_add(UB_B, UB_A), _add(UB_A, UB_B)]) == []


def test_insertion_puts_set_after_the_producer_and_wait_before_the_consumer():
    load, add, store = _load(UB_A), _add(UB_B, UB_A), _store(UB_B)
    body = insert_pipe_sync([load, add, store])
    ops = [(n.op, n.src, n.dst) if isinstance(n, Flag) else n.name for n in body]
    assert ops == ["TLOAD(a)", ("set", "PIPE_MTE2", "PIPE_V"), ("wait", "PIPE_MTE2", "PIPE_V"),
                   "TADD(c, a, b)", ("set", "PIPE_V", "PIPE_MTE3"),
                   ("wait", "PIPE_V", "PIPE_MTE3"), "TSTORE(out, c)"]
    assert verify_pipe_sync(body) == []


def test_a_dependency_carried_around_a_loop_is_synchronised_at_the_body_end():
    # The next iteration's load overwrites the tile this iteration's store reads.
    load, store = _load(UB_A), _store(UB_A)
    body = insert_pipe_sync([Loop([load, store], trips=None)])
    (loop,) = body
    tail = [(n.op, n.src, n.dst) for n in loop.body[-2:]]
    assert tail == [("set", "PIPE_MTE3", "PIPE_MTE2"), ("wait", "PIPE_MTE3", "PIPE_MTE2")]
    assert verify_pipe_sync(body) == []


def test_a_wait_without_its_set_would_stall_and_is_reported():
    wait = Flag("wait", "PIPE_MTE2", "PIPE_V", 0, 0)
    (violation,) = verify_pipe_sync([wait])
    assert "wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0) waits for a flag no earlier" in \
        violation.message


def test_a_flag_set_twice_before_its_wait_is_reported():
    flags = [Flag("set", "PIPE_V", "PIPE_MTE3", 1, 0), Flag("set", "PIPE_V", "PIPE_MTE3", 1, 1),
             Flag("wait", "PIPE_V", "PIPE_MTE3", 1, 0), Flag("wait", "PIPE_V", "PIPE_MTE3", 1, 1)]
    messages = [v.message for v in verify_pipe_sync(flags)]
    assert any("is set again before its wait_flag" in m for m in messages)


def test_event_ids_stay_within_the_hardware_limit():
    # Nine loads each consumed by their own add, issued loads first: nine MTE2 -> V pairs
    # are live at once, more than the 8 event ids; the allocator shrinks one to fit.
    loads = [_load(Access("Vec", 256 * i, 256 * (i + 1)), f"TLOAD(t{i})") for i in range(9)]
    adds = [_add(Access("Vec", 4096 + 256 * i, 4096 + 256 * (i + 1)), load.writes[0],
                 name=f"TADD(u{i})") for i, load in enumerate(loads)]
    body = insert_pipe_sync(loads + adds[::-1])
    events = {n.event for n in body if isinstance(n, Flag)}
    assert events <= set(range(EVENTS))
    assert verify_pipe_sync(body) == []


def test_a_fenced_pipe_operator_orders_what_it_touches_without_flags():
    # TMATMUL writes the Acc tile a cross-core TPUSH then reads; TMATMUL writes it again.
    acc = Access("Acc", 0, 1024)
    matmul = Instr("PIPE_M", (), (acc,), "TMATMUL(acc)")
    again = Instr("PIPE_M", (), (acc,), "TMATMUL(acc) again")
    push = Instr("PIPE_ALL", (acc,), (), "TPUSH(acc)", fence=True)
    assert verify_pipe_sync([matmul, push, again]) == []
    assert not any(isinstance(n, Flag) for n in insert_pipe_sync([matmul, push, again]))
    unfenced = Instr("PIPE_FIX", (acc,), (), "TPUSH(acc)")
    found = verify_pipe_sync([matmul, unfenced, again])
    assert [(v.producer, v.consumer) for v in found] == [(matmul, unfenced), (unfenced, again)]
    # A flag may stay set across one (unlike a fenced `if`'s, whose branches reuse events).
    load, add = _load(UB_A), _add(UB_B, UB_A)
    free = Instr("PIPE_ALL", (), (), "TFREE", fence=True)
    pair = [Flag(op, "PIPE_MTE2", "PIPE_V", 0, 0) for op in ("set", "wait")]
    assert verify_pipe_sync([load, pair[0], free, pair[1], add]) == []


def _shipped_variants():
    from pypto.spec.module import specs_of

    for path in sorted((ROOT / "kernels").glob("[!_]*.py")):
        for kernel in specs_of(path, ROOT):
            for variant in kernel.variants:
                yield kernel.name, variant, kernel.program(variant)


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_removing_any_flag_of_any_shipped_kernel_names_the_two_instructions_it_guarded(
        platform):
    checked = 0
    for kernel, variant, program in _shipped_variants():
        for fn in lower(program, get_platform(platform)).functions:
            if fn.func_type is not FunctionType.InCore:
                continue
            body = device_kernel(fn).body  # every shipped kernel has device code
            for pair in flag_pairs(body):
                set_flag, _ = pair_flags(body, pair)
                producer, consumer = set_flag.guards
                found = verify_pipe_sync(without_pair(body, pair))
                named = [v for v in found if (v.producer, v.consumer) == (producer, consumer)]
                assert named, f"{kernel}/{variant}: removing pair {pair} went unnoticed"
                assert producer.name in named[0].message and consumer.name in named[0].message
                checked += 1
    assert checked > 200
