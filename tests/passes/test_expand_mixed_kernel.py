"""ExpandMixedKernel: a mixed `pl.at` block with `pl.split(mode)` / `pl.cross_core_slot(
slot_num=N)` is a group of its cube side and its two vector lanes joined by the cross-core
pipe (upstream's automatic pipe): the split's structure, the ring's size, the capacity
error, every mode, the simulators against the torch semantics bit for bit, and the
printed IR read back."""

from __future__ import annotations

import re

import pytest
import torch
from located_errors import raised_by
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.compiler import CompileOptions, run_pipeline
from pypto.ir import PassDumpLevel
from pypto.ir.errors import CapacityError, LoweringError, ParseError
from pypto.ir.types import FunctionType, Level
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

PLATFORMS = ("a2a3sim", "a5sim")
MODES = ("UP_DOWN", "LEFT_RIGHT", "NONE")
SPLIT = {"NONE": 0, "UP_DOWN": 1, "LEFT_RIGHT": 2}


def matmul_bias(mode: str | None, slots: int | None = None):
    """`out = a @ b + bias` in one block, split by `mode` (None: no pl.split), its ring of
    `slots` slots (None: no pl.cross_core_slot)."""
    split = getattr(pl.SplitMode, mode) if mode else None
    if split is not None and slots is not None:
        @pl.jit
        def kernel(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP,
                       optimizations=[pl.split(split), pl.cross_core_slot(slot_num=slots)]):
                acc = pl.matmul(a, b, out_dtype=pl.FP32)
                out[:] = pl.add(acc, bias)
            return out
    elif split is not None:
        @pl.jit
        def kernel(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(split)]):
                acc = pl.matmul(a, b, out_dtype=pl.FP32)
                out[:] = pl.add(acc, bias)
            return out
    elif slots is not None:
        @pl.jit
        def kernel(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP,
                       optimizations=[pl.cross_core_slot(slot_num=slots)]):
                acc = pl.matmul(a, b, out_dtype=pl.FP32)
                out[:] = pl.add(acc, bias)
            return out
    else:
        @pl.jit
        def kernel(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                acc = pl.matmul(a, b, out_dtype=pl.FP32)
                out[:] = pl.add(acc, bias)
            return out
    return kernel


def _operands(m=32, k=64, n=128, seed=0):
    torch.manual_seed(seed)
    return [torch.randn(m, k, dtype=torch.float16), torch.randn(k, n, dtype=torch.float16),
            torch.randn(m, n), torch.zeros(m, n)]


def _sides(program):
    kernel = next(f for f in program.functions if f.func_type is FunctionType.Group)
    return (program.functions[f"{kernel.name}_aic"], program.functions[f"{kernel.name}_aiv"],
            kernel)


@pytest.mark.parametrize("mode", MODES)
def test_a_split_block_is_a_group_of_its_cube_side_and_its_vector_lanes(mode):
    program = matmul_bias(mode).lower(*_operands())
    aic, aiv, group = _sides(program)
    assert [f.func_type for f in program.functions] == [
        FunctionType.InCore, FunctionType.InCore, FunctionType.Group, FunctionType.Orchestration]
    assert (aic.attr("level"), aiv.attr("level")) == (Level.AIC, Level.AIV)
    # No scratch tensor: the matmul's value crosses through the pipe, not global memory.
    assert [p.var.name for p in group.params] == ["a", "b", "bias", "out"]
    assert "pl.create_tensor" not in program.entry_function.as_python()
    split = SPLIT[mode]
    half = {"UP_DOWN": "[16, 128]", "LEFT_RIGHT": "[32, 64]", "NONE": "[32, 128]"}[mode]
    cube, vector = aic.as_python(), aiv.as_python()
    assert f"pl.system.tpush_to_aiv(acc, split={split}, id={split})" in cube
    assert f"pl.system.tpop_from_aic(shape={half}, dtype=pl.FP32" in vector
    assert "pl.system.tfree_to_aic(acc_vec_0" in vector
    assert "pl.matmul" not in vector and "pl.add" not in cube
    assert ("if aiv_id == 0:" in vector) == (mode == "NONE")  # NONE: lane 0's work


@pytest.mark.parametrize(("mode", "load", "store"), [
    ("UP_DOWN", "pl.load(bias, [aiv_id * 16, 0], [16, 128])", "[aiv_id * 16, 0], out)"),
    ("LEFT_RIGHT", "pl.load(bias, [0, aiv_id * 64], [32, 64])", "[0, aiv_id * 64], out)"),
    ("NONE", "pl.load(bias, [0, 0], [32, 128])", "[0, 0], out)")])
def test_each_vector_lane_loads_and_stores_its_half(mode, load, store):
    _, aiv, _ = _sides(matmul_bias(mode).lower(*_operands()))
    vector = aiv.as_python()
    assert load in vector and store in vector


@pytest.mark.parametrize(("slots", "want"), [(None, 2), (3, 3)])
def test_the_ring_is_slot_num_slots_of_the_whole_crossing_tile(slots, want):
    aic, aiv, _ = _sides(matmul_bias("UP_DOWN", slots).lower(*_operands()))
    whole = 32 * 128 * 4  # the cube's [32, 128] FP32 tile, not a lane's half
    for fn, core in ((aic, "aic"), (aiv, "aiv")):
        assert (f"pl.system.{core}_initialize_pipe(dir_mask=1, slot_size={whole}, "
                f"slot_num={want}, id=1)") in fn.as_python()
        assert fn.attr("slot_num") == slots


def test_cross_core_slot_alone_asks_for_the_pipe_without_halving():
    aic, aiv, _ = _sides(matmul_bias(None, 4).lower(*_operands()))
    assert "slot_num=4, id=0)" in aic.as_python()
    assert "pl.system.tpop_from_aic(shape=[32, 128]" in aiv.as_python()


def _tutorial(slots: int, platform: str):
    """upstream's tutorial block (tutorials/03-mixed-kernel.md): a [128, 128] FP32 tile
    crossing, its ring of `slots` slots."""
    kernel = matmul_bias("UP_DOWN", slots)
    args = _operands(128, 256, 128)
    return kernel, lambda: kernel.lower(*args, config=RunConfig(platform=platform))


def test_the_tutorials_ring_of_two_slots_fits_and_four_do_not():
    kernel, lower = _tutorial(2, "a2a3sim")
    lower()  # 2 x 64 KiB of ring and two 32 KiB half tiles fill the 192 KiB exactly
    kernel, lower = _tutorial(4, "a2a3sim")
    with pytest.raises(CapacityError) as info:
        lower()
    error = info.value
    assert "4 slots of 65536 bytes" in error.message and "262144 bytes of Vec" in error.message
    assert "pl.cross_core_slot(slot_num=N)" in error.hint and "shrink the tile" in error.hint
    # At the block's vector statement reading the matmul's value: where it crosses.
    assert error.span.line == kernel.fn.__code__.co_firstlineno + 5


def test_tiles_over_what_the_ring_leaves_name_cross_core_slot_too():
    # a5's Vec is 256 KiB: four 64 KiB slots fit, the lanes' tiles above them do not.
    _, lower = _tutorial(4, "a5sim")
    with pytest.raises(CapacityError, match="reserved for the cross-core pipe's ring") as info:
        lower()
    assert "pl.cross_core_slot(slot_num=N)" in info.value.hint


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", MODES)
def test_the_lanes_compute_the_blocks_values_bit_for_bit(mode, platform):
    args = _operands()
    sim, torch_run = sim_and_torch(matmul_bias(mode), args, platform)
    assert torch.equal(sim[3], torch_run[3])
    unsplit = [a.clone() for a in args]  # through global memory, the units in turn
    matmul_bias(None)(*unsplit, config=RunConfig(platform=platform))
    assert torch.equal(sim[3], unsplit[3])
    assert torch.allclose(sim[3], args[0].float() @ args[1].float() + args[2], atol=1e-4)


def chained(split: bool):
    """A cast between two matmuls: the vector lanes' tile goes back to the cube."""
    if split:
        @pl.jit
        def kernel(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP,
                       optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                c = pl.matmul(a, b, out_dtype=pl.FP32)
                cb = pl.cast(c, pl.BF16, mode="rint")
                out = pl.assemble(out, pl.matmul(cb, e, out_dtype=pl.FP32), [0, 0])
            return out
    else:
        @pl.jit
        def kernel(a: pl.Tensor, b: pl.Tensor, e: pl.Tensor, out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                c = pl.matmul(a, b, out_dtype=pl.FP32)
                cb = pl.cast(c, pl.BF16, mode="rint")
                out = pl.assemble(out, pl.matmul(cb, e, out_dtype=pl.FP32), [0, 0])
            return out
    return kernel


def _chained_operands():
    torch.manual_seed(1)
    return [torch.randn(32, 64, dtype=torch.bfloat16), torch.randn(64, 32, dtype=torch.bfloat16),
            torch.randn(32, 16, dtype=torch.bfloat16), torch.zeros(32, 16)]


def test_a_tile_the_cube_reads_back_is_gathered_from_the_lanes():
    aic, aiv, _ = _sides(chained(True).lower(*_chained_operands()))
    cube, vector = aic.as_python(), aiv.as_python()
    assert "dir_mask=3" in cube and "dir_mask=3" in vector  # both directions
    assert "pl.system.tpop_from_aiv(shape=[32, 32], dtype=pl.BF16, split=1, id=1)" in cube
    assert "pl.system.tpush_to_aic(cb, split=1, id=1)" in vector
    assert re.search(r"cb: pl.Tile\[\[16, 32\], pl.BF16\b.* = pl.cast\(", vector)  # a half


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_gathered_tile_gives_the_blocks_values_bit_for_bit(platform):
    args = _chained_operands()
    sim, torch_run = sim_and_torch(chained(True), args, platform)
    unsplit = [a.clone() for a in args]
    chained(False)(*unsplit, config=RunConfig(platform=platform))
    assert torch.equal(sim[3], torch_run[3]) and torch.equal(sim[3], unsplit[3])


def projection(split: bool):
    """upstream's qwen3 out-projection: for each of two column blocks, a K loop of matmul /
    matmul_acc, then the residual added on the vector unit."""
    if split:
        @pl.jit
        def kernel(x: pl.Tensor, w: pl.Tensor, resid: pl.Tensor, out: pl.Out[pl.Tensor]):
            for ob in pl.parallel(0, 4, 2):
                with pl.at(level=pl.Level.CORE_GROUP,
                           optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                    for oi in pl.range(ob, ob + 2):
                        out = _project(x, w, resid, out, oi)
            return out
    else:
        @pl.jit
        def kernel(x: pl.Tensor, w: pl.Tensor, resid: pl.Tensor, out: pl.Out[pl.Tensor]):
            for ob in pl.parallel(0, 4, 2):
                with pl.at(level=pl.Level.CORE_GROUP):
                    for oi in pl.range(ob, ob + 2):
                        out = _project(x, w, resid, out, oi)
            return out
    return kernel


@pl.jit.inline
def _project(x: pl.Tensor, w: pl.Tensor, resid: pl.Tensor, out: pl.Out[pl.Tensor], oi):
    o0 = oi * 32
    acc = pl.create_tensor([16, 32], dtype=pl.FP32)
    for kb in pl.range(2):
        k0 = kb * 64
        if k0 == 0:
            acc = pl.matmul(x[:, k0:k0 + 64], w[k0:k0 + 64, o0:o0 + 32], out_dtype=pl.FP32)
        else:
            acc = pl.matmul_acc(acc, x[:, k0:k0 + 64], w[k0:k0 + 64, o0:o0 + 32])
    r = pl.cast(resid[:, o0:o0 + 32], target_type=pl.FP32)
    out = pl.assemble(out, pl.add(acc, r), [0, o0])
    return out


def _projection_operands():
    torch.manual_seed(2)
    return [torch.randn(16, 128, dtype=torch.bfloat16), torch.randn(128, 128, dtype=torch.bfloat16),
            torch.randn(16, 128, dtype=torch.bfloat16), torch.zeros(16, 128)]


def test_an_accumulator_crosses_after_its_k_loop_in_each_iteration_of_the_block():
    aic, aiv, _ = _sides(projection(True).lower(*_projection_operands()))
    cube = aic.as_python().splitlines()
    push = next(i for i, line in enumerate(cube) if "tpush_to_aiv(acc" in line)
    # In the loop over oi (its body is 8 deep in the printed function), after the K loop.
    assert cube[push].startswith(" " * 8 + "pl.")
    assert any("pl.matmul_acc" in line for line in cube[:push])
    vector = aiv.as_python()
    assert "pl.system.tpop_from_aic(shape=[8, 32], dtype=pl.FP32, split=1, id=1)" in vector
    assert re.search(r"pl.store\(add_0, \[aiv_id \* 8, o0\w*\], out\)", vector)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_projection_gives_the_blocks_values_bit_for_bit(platform):
    args = _projection_operands()
    sim, torch_run = sim_and_torch(projection(True), args, platform)
    unsplit = [a.clone() for a in args]
    projection(False)(*unsplit, config=RunConfig(platform=platform))
    assert torch.equal(sim[3], torch_run[3]) and torch.equal(sim[3], unsplit[3])


@pl.jit
def row_blocks(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        r = 0
        for _ in pl.range(2):
            acc = pl.matmul(a[r:r + 16, :], b, out_dtype=pl.FP32)
            out[r:r + 16, :] = pl.add(acc, bias)
            r = r + 16   # read by the lanes' store above, and by the cube's next load
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_scalar_updated_after_the_lanes_read_it_is_updated_on_both_sides(platform):
    a, b, _, out = _operands()
    args = [a, b, torch.randn(16, 128), out]
    aic, aiv, _ = _sides(row_blocks.lower(*args))
    assert "r: pl.Scalar[pl.INT64] = r + 16" in aic.as_python()
    assert "r: pl.Scalar[pl.INT64] = r + 16" in aiv.as_python()
    sim, torch_run = sim_and_torch(row_blocks, args, platform)
    assert torch.equal(sim[3], torch_run[3])
    assert torch.allclose(sim[3], a.float() @ b.float() + args[2].repeat(2, 1), atol=1e-4)


def test_a_reduction_along_the_split_axis_is_refused_at_its_line():
    @pl.jit
    def column_sums(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            acc = pl.matmul(a, b, out_dtype=pl.FP32)
            out[:] = pl.col_sum(pl.add(acc, bias))
        return out

    a, b, bias, _ = _operands()
    with pytest.raises(LoweringError, match="pl.col_sum cannot be computed so") as info:
        column_sums.lower(a, b, bias, torch.zeros(1, 128))
    assert info.value.span.line == column_sums.fn.__code__.co_firstlineno + 4
    assert "pl.split(pl.SplitMode.NONE)" in info.value.hint


@pl.jit
def kept_after(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor],
               doubled: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    with pl.at(level=pl.Level.CORE_GROUP):
        doubled[:] = pl.mul(acc, 2.0)
    return out, doubled


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_value_kept_after_the_block_is_stored_by_the_cube_and_piped_to_the_lanes(platform):
    args = [*_operands(), torch.zeros(32, 128)]
    aic, aiv, _ = _sides(kept_after.lower(*args))
    assert "acc: pl.Tensor[[32, 128], pl.FP32] = pl.store(" in aic.as_python()
    assert "pl.system.tpop_from_aic(shape=[16, 128]" in aiv.as_python()
    sim, torch_run = sim_and_torch(kept_after, args, platform)
    assert torch.equal(sim[3], torch_run[3]) and torch.equal(sim[4], torch_run[4])
    product = args[0].float() @ args[1].float()
    assert torch.allclose(sim[4], 2 * product, atol=1e-4)


def scaled_product(whole: bool):
    """The lanes write `t` (all of it, or its left half) and the cube multiplies it."""
    if whole:
        @pl.jit
        def kernel(x: pl.Tensor, w: pl.Tensor, t: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP,
                       optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                t[:] = pl.cast(pl.mul(x, 2.0), pl.FP16)
                out[:] = pl.matmul(t, w, out_dtype=pl.FP32)
            return t, out
    else:
        @pl.jit
        def kernel(x: pl.Tensor, w: pl.Tensor, t: pl.Out[pl.Tensor], out: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP,
                       optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                t[:, 0:32] = pl.cast(pl.mul(x, 2.0), pl.FP16)   # the lanes write part of t
                out[:] = pl.matmul(t, w, out_dtype=pl.FP32)     # the cube reads t, at once
            return t, out
    return kernel


def _scaled_operands():
    torch.manual_seed(3)
    return [torch.randn(32, 32), torch.randn(64, 32, dtype=torch.float16),
            torch.zeros(32, 64, dtype=torch.float16), torch.zeros(32, 32)]


def test_a_tensor_the_lanes_write_in_part_and_the_cube_reads_is_refused_at_the_read():
    kernel = scaled_product(False)
    with pytest.raises(LoweringError, match="`t` is written by the vector work and read here "
                                            "by the cube work through global memory") as info:
        kernel.lower(*_scaled_operands())
    assert info.value.span.line == kernel.fn.__code__.co_firstlineno + 5


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_the_lanes_write_whole_reaches_the_cube_through_the_pipe(platform):
    kernel = scaled_product(True)
    args = [torch.randn(32, 64), *_scaled_operands()[1:]]
    aic, aiv, _ = _sides(kernel.lower(*args))
    assert "pl.system.tpop_from_aiv(shape=[32, 64], dtype=pl.FP16, split=1, id=1)" in \
        aic.as_python()
    sim, torch_run = sim_and_torch(kernel, args, platform)
    assert torch.equal(sim[3], torch_run[3]) and torch.equal(sim[2], torch_run[2])
    t = (args[0] * 2.0).half()
    assert torch.equal(sim[2], t)
    assert torch.allclose(sim[3], t.float() @ args[1].float(), atol=1e-3)


def test_a_block_of_one_unit_stays_one_kernel():
    @pl.jit
    def scaled(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN),
                                                             pl.cross_core_slot(slot_num=4)]):
            out[:] = pl.mul(x, 2.0)
        return out

    x = torch.randn(32, 64)
    program = scaled.lower(x, torch.zeros(32, 64))
    assert [f.func_type for f in program.functions] == [FunctionType.InCore,
                                                        FunctionType.Orchestration]
    out = torch.zeros(32, 64)
    scaled(x, out)
    assert torch.equal(out, x * 2.0)


@pytest.mark.parametrize("mode", ["UP_DOWN", "NONE"])
def test_every_dump_of_a_split_block_reads_back_as_the_program(mode, monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    program = matmul_bias(mode, 3).frontend(*_operands())
    opts = CompileOptions(platform="a2a3sim", dump_passes=PassDumpLevel.EXPLICIT)
    lowered = run_pipeline(program, get_platform("a2a3sim"), opts)
    dumps = {k: v for k, v in lowered.files.items() if k.startswith("passes_dump/")}
    assert any("ExpandMixedKernel" in k for k in dumps)
    for path, text in dumps.items():
        assert pl.parse(text).as_python() == text, path
    front = program.as_python()
    assert (f"optimizations=[pl.split(pl.SplitMode.{mode}), pl.cross_core_slot(slot_num=3)]"
            in front)
    assert pl.parse(front) == program
    assert pl.parse(lowered.program.as_python()) == lowered.program


@pytest.mark.parametrize(("entry", "match"), [
    ("pl.cross_core_slot(4)", r"write pl.cross_core_slot\(slot_num=N\)"),
    ("pl.cross_core_slot(slot_num=0)", "is a positive integer, got `0`"),
    ("pl.cross_core_slot(slot_num=2), pl.cross_core_slot(slot_num=2)", "given twice"),
    ("pl.split(pl.SplitMode.UP_DOWN, slot_num=4)", r"write pl.split\(pl.SplitMode.UP_DOWN\)"),
])
def test_a_malformed_optimization_is_an_error_at_its_line(entry, match):
    source = f"""
import pypto.language as pl


@pl.jit
def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[{entry}]):
        out[:] = pl.mul(x, 2.0)
    return out
"""
    error, lines = raised_by(source, lambda ns: ns["k"].frontend(torch.zeros(16, 16),
                                                                  torch.zeros(16, 16)),
                             ParseError)
    assert re.search(match, str(error))
    assert entry in lines[error.span.line - 1]
