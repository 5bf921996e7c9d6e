"""Lane regions in the language: `for aiv_id in pl.split_aiv(2, mode=...)` in an InCore
kernel, `pl.aiv_shard(x)` and `y = pl.aic_gather(v)`: the kernel becomes a Group of an AIC
and an AIV function with the pipe between them (language/split_aiv.py), printed and read
back; upstream's rules are errors at the line at fault."""

from __future__ import annotations

import pytest
from pipe_programs import parse, parse_error
from split_aiv_programs import round_trip_source, shard_source

import pypto.language as pl
from pypto.compiler import lower
from pypto.ir.types import FunctionType, Level
from pypto.platform import get_platform


def test_the_names_are_upstreams():
    assert {pl.split_aiv.name, pl.aiv_shard.name, pl.aic_gather.name} == {
        "split_aiv", "aiv_shard", "aic_gather"}
    assert {pl.SplitMode.NONE, pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT} <= set(pl.SplitMode)


@pytest.mark.parametrize("mode", ["UP_DOWN", "NONE"])
def test_the_tile_spellings_are_the_same_builtins(mode):
    source = round_trip_source(mode)
    tile_spelled = source.replace("pl.aiv_shard(", "pl.tile.aiv_shard(").replace(
        "pl.aic_gather(", "pl.tile.aic_gather(")
    assert tile_spelled != source
    assert parse(tile_spelled) == parse(source)


@pytest.mark.parametrize("mode", ["UP_DOWN", "LEFT_RIGHT", "NONE"])
def test_a_kernel_with_regions_is_a_group_of_its_cube_and_vector_sides(mode):
    program = parse(round_trip_source(mode))
    funcs = program.functions
    assert [f.name for f in funcs] == ["mixed_aic", "mixed_aiv", "mixed", "main"]
    assert funcs["mixed"].func_type is FunctionType.Group
    assert funcs["mixed_aic"].attr("level") is Level.AIC
    assert funcs["mixed_aiv"].attr("level") is Level.AIV
    assert funcs["mixed_aiv"].attr("split_aiv") is True
    split = {"NONE": 0, "UP_DOWN": 1, "LEFT_RIGHT": 2}[mode]
    half = {"NONE": "[16, 16]", "UP_DOWN": "[8, 16]", "LEFT_RIGHT": "[16, 8]"}[mode]
    cube, vector = funcs["mixed_aic"].as_python(), funcs["mixed_aiv"].as_python()
    assert f"pl.system.tpush_to_aiv(acc, split={split}, id={split})" in cube
    pop_split = f", split={split}" if split else ""  # a pop's split is 0 unless written
    assert (f"g: pl.Tile[[16, 16], pl.FP16] = pl.system.tpop_from_aiv(shape=[16, 16], "
            f"dtype=pl.FP16{pop_split}, id={split})") in cube
    assert f"pl.system.tfree_to_aiv(g, id={split})" in cube
    assert f"pl.system.tpop_from_aic(shape={half}, dtype=pl.FP32{pop_split}, id=" in vector
    assert f"pl.system.tpush_to_aic(v, split={split}, id={split})" in vector
    assert "aiv_id: pl.Scalar[pl.INT64] = pl.get_subblock_idx()" in vector
    assert "matmul" not in vector and "pl.cast" not in cube
    text = program.as_python()
    assert pl.parse(text) == program
    lowered = lower(program, get_platform("a2a3sim")).as_python()
    assert pl.parse(lowered).as_python() == lowered


def test_func_attr_slot_num_sets_the_depth_of_the_regions_rings():
    source = shard_source("UP_DOWN").replace(
        "        bm = pl.load(b,", '        pl.func_attr({"slot_num": 3})\n        bm = pl.load(b,')
    program = parse(source)
    for side in ("mixed_aic", "mixed_aiv"):
        assert "slot_num=3, id=1)" in program.functions[side].as_python()
    assert "slot_num=2, id=1)" in parse(shard_source("UP_DOWN")).functions["mixed_aiv"].as_python()


def test_a_shard_is_freed_after_its_last_read():
    vector = parse(shard_source("UP_DOWN")).functions["mixed_aiv"].as_python().splitlines()
    pop = next(i for i, line in enumerate(vector) if "tpop_from_aic" in line)
    free = next(i for i, line in enumerate(vector) if "tfree_to_aic(t" in line)
    read = next(i for i, line in enumerate(vector) if "pl.add(t," in line)
    assert pop < read < free


def test_vector_work_outside_every_region_is_an_error_at_its_line():
    source = shard_source("UP_DOWN").replace(
        "            for aiv_id in",
        "            z = pl.add(pl.load(bias, [0, 0], [8, 16]), 1.0)\n            for aiv_id in")
    parse_error(source, "z = pl.add(", "vector work outside every lane region")


def test_cube_work_inside_a_region_is_an_error_at_its_line():
    source = shard_source("UP_DOWN").replace(
        "                t = pl.aiv_shard(acc)\n",
        "                t = pl.aiv_shard(acc)\n"
        "                m2 = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(bm, pl.Mem.Right))\n")
    parse_error(source, "m2 = pl.matmul", "cube work inside a lane region")


def test_a_cube_tile_read_in_a_region_without_a_shard_is_an_error():
    source = shard_source("NONE").replace("r = pl.add(t, ", "r = pl.add(acc, ")
    parse_error(source, "r = pl.add(acc, ", "`acc` is computed by the cube and read here")


def test_a_region_tile_read_by_the_cube_without_a_gather_is_an_error():
    source = round_trip_source("UP_DOWN").replace("pl.move(g, pl.Mem.Left)",
                                                  "pl.move(v, pl.Mem.Left)")
    parse_error(source, "pl.move(v, pl.Mem.Left)", "`v` is computed on the vector lanes")


def test_a_shard_outside_a_region_is_an_error():
    source = shard_source("UP_DOWN").replace(
        "            for aiv_id in", "            s = pl.aiv_shard(acc)\n            for aiv_id in")
    parse_error(source, "s = pl.aiv_shard(acc)", "crosses a lane region's edge")


def test_a_shard_in_a_loop_of_the_region_is_an_error():
    source = shard_source("UP_DOWN").replace(
        "                t = pl.aiv_shard(acc)\n",
        "                for j in pl.range(1):\n                    t = pl.aiv_shard(acc)\n")
    parse_error(source, "t = pl.aiv_shard(acc)", "at the region's top level")


def test_a_region_of_other_than_two_lanes_is_an_error():
    source = shard_source("UP_DOWN").replace("pl.split_aiv(2,", "pl.split_aiv(4,")
    parse_error(source, "pl.split_aiv(4,", "two vector lanes")


def test_nested_regions_are_an_error():
    source = shard_source("UP_DOWN").replace(
        "                t = pl.aiv_shard(acc)\n",
        "                t = pl.aiv_shard(acc)\n"
        "                for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n"
        "                    pass\n")
    parse_error(source, "for lane in pl.split_aiv", "do not nest")


def test_a_region_in_an_orchestration_is_an_error_at_the_region():
    source = '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                out = pl.add(x, x)
        return out
'''
    parse_error(source, "for aiv_id in pl.split_aiv", "InCore kernel of a @pl.program")


def test_the_device_platforms_refuse_a_kernel_with_regions_at_its_first_region():
    # The CPU-model platforms run it (tests/device/test_device_cross_core_pipe.py).
    from pypto.codegen.cpp import generate
    from pypto.ir import LoweringError

    source = shard_source("UP_DOWN")
    program = parse(source)
    with pytest.raises(LoweringError, match="no device code on a2a3 yet") as info:
        generate(lower(program, get_platform("a2a3")), program, get_platform("a2a3"))
    assert "pl.split_aiv(2" in source.splitlines()[info.value.span.line - 1]
