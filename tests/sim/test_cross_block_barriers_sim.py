"""The cross-block barriers on the simulators: a launch whose kernel holds a
pl.system.syncall runs its blocks at once (pto/gang.hpp), the barrier waits for every
block, and the soft barrier's counter lives in global memory.  A barrier some block never
reaches, a hard barrier under a launch sized wrong at run time, a race between two blocks
and a read that skips the publish / consume protocol are KernelErrors naming the lines,
never a hang.  The torch semantics (torch_gang.py) agree bit for bit, and raise the same
messages."""

from __future__ import annotations

import json
import re

import pytest
import torch
from barrier_programs import (
    CONSUME,
    HARD_SEQUENCE,
    ONE_BLOCK_BARRIER,
    SLOW_WRITER,
    TENSOR_ROTATE,
    UPSTREAM_SEQUENCE,
    line_of,
    one_line_source,
    parse,
    rotate_args,
    rotate_expected,
    rotate_source,
    steps_source,
)

from pypto import ir
from pypto.compiler import lower
from pypto.debug import load_entry, torch_codegen
from pypto.debug.torch_gang import BarrierError
from pypto.platform import get_platform
from pypto.runtime import RunConfig
from pypto.runtime.errors import KernelError

pytestmark = pytest.mark.small_tiles
PLATFORMS = ["a2a3sim", "a5sim"]


def _clones(args):
    return [a.clone() for a in args]


def _run(source: str, args, platform: str = "a2a3sim", **config):
    """The simulator's run of `source` on clones of `args` (the clones, after it)."""
    out = _clones(args)
    ir.compile(parse(source), platform=platform, dump_passes=False)(
        *out, config=RunConfig(platform=platform, **config))
    return out


def _torch(source: str, args, platform: str = "a2a3sim", lowered: bool = True):
    """The torch semantics' run of `source` (lowered for `platform`, or as written)."""
    program = parse(source)
    if lowered:
        program = lower(program, get_platform(platform))
    out = _clones(args)
    code = torch_codegen(program, backend=get_platform(platform).backend)
    load_entry(code, program.entry)(*out)
    return out


def _same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_upstreams_publish_consume_sequence_hands_rows_between_blocks(platform):
    source = rotate_source(4, UPSTREAM_SEQUENCE)
    args = rotate_args(4)
    sim = _run(source, args, platform)
    assert torch.equal(sim[3], rotate_expected(args[0], 4))
    assert sim[1].tolist() == [4] + [0] * 15  # the soft barrier's counter: 4 arrivals
    assert _same(sim, _torch(source, args, platform))
    assert _same(sim, _torch(source, args, platform, lowered=False))


@pytest.mark.parametrize("platform, blocks", [("a2a3sim", 48), ("a5sim", 72)])
def test_a_hard_barrier_meets_every_vector_core_of_the_platform(platform, blocks):
    source = rotate_source(blocks, HARD_SEQUENCE, width="pl.system.available_aiv_count()")
    args = rotate_args(blocks, seed=1)
    sim = _run(source, args, platform)
    assert torch.equal(sim[3], rotate_expected(args[0], blocks))
    assert _same(sim, _torch(source, args, platform))


def test_tensor_level_code_around_a_barrier_is_lowered_on_each_side_of_it():
    args = rotate_args(4, seed=7)
    sim = _run(TENSOR_ROTATE, args)
    assert torch.equal(sim[3], rotate_expected(args[0], 4))
    assert _same(sim, _torch(TENSOR_ROTATE, args))
    assert _same(sim, _torch(TENSOR_ROTATE, args, lowered=False))


def test_the_barrier_orders_what_a_block_reads_after_what_another_wrote():
    args = rotate_args(4, seed=2)
    want = rotate_expected(args[0], 4)
    with_barrier = _run(rotate_source(4, UPSTREAM_SEQUENCE), args, workers=1)
    assert torch.equal(with_barrier[3], want)
    # The same blocks with no barrier, one core: block i reads block i + 1's rows before
    # block i + 1 ran.
    without = _run(rotate_source(4, "            pl.system.cacheinvalid()"), args, workers=1)
    assert not torch.equal(without[3][:16], want[:16])


@pytest.mark.parametrize("scheduler, seed", [("native", None), ("python", None),
                                             ("python", 5)])
def test_a_block_at_the_barrier_waits_for_a_slow_writer(scheduler, seed, monkeypatch, tmp_path):
    monkeypatch.setenv("PYPTO_SCHEDULER", scheduler)
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    x = torch.randn(16, 64)
    args = [x, torch.zeros(16, dtype=torch.int32), torch.zeros(16, 64), torch.zeros(16, 64)]
    sim = _run(SLOW_WRITER.format(spin=100_000), args, schedule_seed=seed,
               enable_dep_gen=True)
    assert torch.equal(sim[3], sim[2]) and torch.equal(sim[2], x + 1.0)
    # The launch is four tasks, run by one call on one core.
    tasks = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())["tasks"]
    assert [t["block"] for t in tasks] == [[b, 4] for b in range(4)]
    assert len({t["core"] for t in tasks}) == 1


def test_a_barrier_some_block_never_reaches_is_a_kernel_error_not_a_hang():
    source = ONE_BLOCK_BARRIER
    args = [torch.randn(64, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(64, 64)]
    message = (f"cross-block barrier deadlock: block 0 waits in pl.system.syncall (line "
               f"{line_of(source, 'syncall(')}) for its counter to reach 4 (it holds 1); "
               "blocks 1-3 have finished")
    with pytest.raises(KernelError, match=re.escape(message)):
        _run(source, args)
    for lowered in (True, False):
        with pytest.raises(BarrierError, match=re.escape(message)):
            _torch(source, args, lowered=lowered)


def test_a_hard_barrier_the_last_block_skips_is_a_kernel_error_naming_the_others():
    source = ONE_BLOCK_BARRIER.replace("64, 64", "768, 64").replace(
        "pl.spmd(4)", "pl.spmd(pl.system.available_aiv_count())").replace(
        "if i == 0:", "if i != pl.get_block_num() - 1:").replace(
        'pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=4)',
        'pl.system.syncall(core_type="aiv_only")')
    args = [torch.randn(768, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(768, 64)]
    message = (f"cross-block barrier deadlock: blocks 0-46 wait in pl.system.syncall (line "
               f"{line_of(source, 'syncall(')}); block 47 has finished")
    with pytest.raises(KernelError, match=re.escape(message)):
        _run(source, args)
    with pytest.raises(BarrierError, match=re.escape(message)):
        _torch(source, args)


def test_a_counter_that_was_not_zeroed_is_named_in_the_deadlock():
    source = ONE_BLOCK_BARRIER.replace("            if i == 0:\n                pl.system.syncall",
                                       "            pl.system.syncall")
    args = [torch.randn(64, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(64, 64)]
    args[1][0] = 2  # rounds of 4 from 2: two blocks pass at 4, the last two wait for 8
    line = line_of(source, "syncall(")
    message = (rf"cross-block barrier deadlock: blocks \d(, |-)\d wait in pl.system.syncall "
               rf"\(line {line}\) for its counter to reach 8 \(it holds 6\); "
               r"blocks \d(, |-)\d have finished")
    with pytest.raises(KernelError, match=message):
        _run(source, args)
    with pytest.raises(BarrierError, match=message):
        _torch(source, args)


def _sized_at_run_time(blocks: int, barrier: str) -> str:
    """ROTATE over `blocks` blocks launched as pl.spmd(n), `n` a scalar of the entry."""
    out = f"out: pl.Out[pl.Tensor[[{blocks * 16}, 64], pl.FP32]]"
    return rotate_source(blocks, barrier, width="n").replace(
        f"{out}) -> tuple[", f"{out}, n: pl.Scalar[pl.INDEX]) -> tuple[")


def test_a_hard_barrier_in_a_launch_sized_at_run_time_stops_at_the_barrier():
    source = _sized_at_run_time(4, HARD_SEQUENCE)
    args = rotate_args(4)
    message = (f"cross-block barrier: the hard pl.system.syncall (line "
               f"{line_of(source, 'syncall(')}) needs a launch of 48 blocks (the vector cores "
               "of Ascend910B), this one has 4")
    program = parse(source)
    with pytest.raises(KernelError, match=re.escape(message)):
        ir.compile(program, platform="a2a3sim", dump_passes=False)(*_clones(args), 4)
    lowered = lower(program, get_platform("a2a3sim"))
    code = torch_codegen(lowered, backend=get_platform("a2a3sim").backend)
    with pytest.raises(BarrierError, match=re.escape(message)):
        load_entry(code, lowered.entry)(*_clones(args), 4)


def test_a_launch_of_more_blocks_than_cores_sized_at_run_time_is_refused():
    source = _sized_at_run_time(49, UPSTREAM_SEQUENCE)
    args = rotate_args(49)
    message = ("cross-block barrier: a launch of 49 blocks of a kernel with a pl.system.syncall, "
               "more than the vector cores of Ascend910B (48): on the device the rest would run "
               "in a later wave, which a barrier across waves never lets start")
    program = parse(source)
    with pytest.raises(KernelError, match=re.escape(message)):
        ir.compile(program, platform="a2a3sim", dump_passes=False)(*_clones(args), 49)
    lowered = lower(program, get_platform("a2a3sim"))
    code = torch_codegen(lowered, backend=get_platform("a2a3sim").backend)
    with pytest.raises(BarrierError, match=re.escape(message)):
        load_entry(code, lowered.entry)(*_clones(args), 49)


def _one_line_args():
    torch.manual_seed(3)
    return [torch.randn(2, 16), torch.zeros(16, dtype=torch.int32), torch.zeros(2, 16),
            torch.zeros(2, 16)]


def _protocol_error(source: str, message: str) -> None:
    """`source` stops on the simulator, and in the torch semantics, with `message`."""
    with pytest.raises(KernelError, match=re.escape(message)):
        _run(source, _one_line_args())
    with pytest.raises(BarrierError, match=re.escape(message)):
        _torch(source, _one_line_args())


def test_the_protocol_followed_hands_the_row_over():
    args = _one_line_args()
    for consume in (CONSUME, "                pl.system.cacheinvalid(mid, [1, 16], [0, 0])"):
        source = one_line_source(consume=consume)
        sim, host = _run(source, args), _torch(source, args)
        assert torch.equal(sim[3][1], args[0][0] + 1.0)
        # what the program writes (the rest of an output keeps the runtime's poison)
        assert _same([sim[1], sim[2][0], sim[3][1]], [host[1], host[2][0], host[3][1]])


def test_a_read_with_no_cacheinvalid_after_the_barrier_is_located():
    source = one_line_source(consume="")
    _protocol_error(source, f"cross-block barrier: block 1 reads `mid` at line "
                    f"{line_of(source, 'u = pl.load(mid')}, bytes block 0 wrote at line "
                    f"{line_of(source, 'mid = pl.store')}, with no pl.system.cacheinvalid() "
                    "since the barrier")


def test_the_one_line_form_covers_the_line_of_the_views_base_only():
    # row 1 of mid is the next 64-byte line: invalidating it leaves row 0's line cached
    source = one_line_source(consume="                pl.system.cacheinvalid(mid, [1, 16], [1, 0])")
    _protocol_error(source, "with no pl.system.cacheinvalid() since the barrier")


@pytest.mark.parametrize("publish", ["                pl.system.cacheinvalid()",
                                     "                pl.system.fence()\n"
                                     "                pl.system.cacheinvalid()", ""])
def test_a_write_not_published_before_the_barrier_is_located(publish):
    source = one_line_source(publish=publish)
    _protocol_error(source, f"cross-block barrier: block 1 reads `mid` at line "
                    f"{line_of(source, 'u = pl.load(mid')}, bytes block 0 wrote at line "
                    f"{line_of(source, 'mid = pl.store')} and did not publish before the "
                    "barrier (pl.system.cacheinvalid() then pl.system.fence())")


def test_a_read_of_another_blocks_write_with_no_barrier_between_is_a_race():
    # block 1 reads before the barrier what block 0 writes before it
    source = one_line_source().replace(
        "            pl.system.syncall(mode=",
        "            if i == 1:\n"
        "                v = pl.load(mid, [0, 0], [1, 16])\n"
        "                out = pl.store(v, [0, 0], out)\n"
        "            pl.system.syncall(mode=")
    line_read = line_of(source, "v = pl.load(mid")
    line_write = line_of(source, "mid = pl.store")
    either = re.escape(f"cross-block barrier: block 1 reads `mid` at line {line_read}, bytes "
                       f"block 0 writes at line {line_write} with no pl.system.syncall between "
                       "the two") + "|" + re.escape(
        f"cross-block barrier: block 0 writes `mid` at line {line_write}, bytes block 1 reads "
        f"at line {line_read} with no pl.system.syncall between the two")
    with pytest.raises(KernelError, match=either):
        _run(source, _one_line_args())
    with pytest.raises(BarrierError, match=either):
        _torch(source, _one_line_args())


def test_runs_of_a_gang_give_the_same_bits():
    source = rotate_source(4, UPSTREAM_SEQUENCE)
    args = rotate_args(4, seed=4)
    first = _run(source, args)
    for _ in range(3):
        assert _same(_run(source, args), first)


def test_barriers_in_a_loop_order_each_step():
    torch.manual_seed(6)
    x = torch.randn(64, 64)
    args = [x, torch.zeros(16, dtype=torch.int32), torch.zeros(64, 64)]
    source = steps_source()
    sim = _run(source, args)
    want = x
    for _ in range(3):  # a step: the next block's rows, + 1
        want = want.roll(-16, 0) + 1.0
    assert torch.equal(sim[2], want)
    assert sim[1][0] == 4 * 7  # seven barriers of four blocks
    assert _same(sim, _torch(source, args))
    assert _same(sim, _torch(source, args, lowered=False))


def test_a_write_over_rows_another_block_has_not_read_yet_is_a_race():
    source = steps_source(war="")
    args = [torch.randn(64, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(64, 64)]
    line_read, line_write = line_of(source, "v = pl.load(buf"), line_of(source, "pl.add(v, 1.0)")
    race = (rf"cross-block barrier: block \d (writes `buf` at line {line_write}, bytes block "
            rf"\d reads at line {line_read}|reads `buf` at line {line_read}, bytes block \d "
            rf"writes at line {line_write}) with no pl.system.syncall between the two")
    with pytest.raises(KernelError, match=race):
        _run(source, args)
    with pytest.raises(BarrierError, match=race):
        _torch(source, args)


def test_every_pass_dump_of_a_program_with_barriers_runs_on_torch(capsys):
    args = rotate_args(4, seed=8)
    compiled = ir.compile(parse(rotate_source(4, UPSTREAM_SEQUENCE)), platform="a5sim",
                          dump_passes=True)
    results = compiled.validate_ir(args, {"out": rotate_expected(args[0], 4)}, rtol=0, atol=0)
    assert [r.file for r in results][0] == "00_frontend.py"
    assert len(results) > 5 and all(r.within_tolerance and r.max_abs_diff == 0 for r in results)
