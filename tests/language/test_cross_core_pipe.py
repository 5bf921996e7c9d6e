"""The explicit cross-core pipe in the language: pl.FunctionType.AIC / AIV / Group, the
pl.system pipe operators with upstream's signatures, printing and reading back, and the
errors of a badly formed pipe at the line at fault (passes/cross_core_pipe.py)."""

from __future__ import annotations

import pytest
from pipe_programs import c2v_source, parse, v2c_source

import pypto.language as pl
from pypto.compiler import lower
from pypto.ir import LoweringError, TypeCheckError
from pypto.ir.errors import CapacityError
from pypto.ir.layout import tile_footprint
from pypto.ir.types import Direction, FunctionType, Level, MemorySpace, TileType
from pypto.platform import get_platform


def test_the_names_are_upstreams():
    for name in ("tpush_to_aiv", "tpush_to_aic", "tpop_from_aic", "tpop_from_aiv",
                 "tfree_to_aic", "tfree_to_aiv", "aic_initialize_pipe", "aiv_initialize_pipe",
                 "reserve_buffer", "import_peer_buffer"):
        assert getattr(pl.system, name).name == f"system.{name}"
        assert getattr(pl, name).name == f"system.{name}"
    assert pl.tensor.get_subblock_idx.name == pl.tile.get_subblock_idx.name == "get_subblock_idx"
    assert pl.system.AUTO == pl.AUTO == -1
    assert {pl.FunctionType.AIC, pl.FunctionType.AIV, pl.FunctionType.Group} <= set(FunctionType)


@pytest.mark.parametrize("source", [c2v_source(3, 2, 0), c2v_source(2, 1, 1), c2v_source(4, 4, 2),
                                    v2c_source(3, 2, 0), v2c_source(3, 1, 1),
                                    v2c_source(2, 4, 2)])
def test_programs_print_and_read_back_before_and_after_lowering(source):
    program = parse(source)
    assert pl.parse(program.as_python()) == program
    lowered = lower(program, get_platform("a2a3sim"))
    text = lowered.as_python()
    assert pl.parse(text).as_python() == text


def test_aic_and_aiv_functions_are_kernels_of_their_unit_and_a_group_calls_them():
    program = parse(c2v_source())
    funcs = program.functions
    assert funcs["cube"].func_type is FunctionType.InCore
    assert funcs["cube"].attr("level") is Level.AIC
    assert funcs["vector"].attr("level") is Level.AIV
    assert funcs["group"].func_type is FunctionType.Group
    text = program.as_python()
    assert "pl.system.tpush_to_aiv(acc, split=0)" in text
    assert "pl.system.tpop_from_aic(shape=[16, 16], dtype=pl.FP32)" in text


def test_a_lanes_popped_tile_is_in_its_ring_and_the_cubes_above_its_ring():
    # On the device TPOP points the tile at its slot: it takes no room above the rings;
    # pto-isa's CPU model stages the cube's in its L1 slot, so that one stays above them.
    lowered = lower(parse(c2v_source(3, 4, 1)), get_platform("a2a3sim"))
    vector = lowered.functions["vector"]
    pops = [s for s in vector.body[2].body if getattr(s, "value", None) is not None
            and getattr(s.value, "op", "") == "system.tpop_from_aic"]
    (pop,) = pops
    t = pop.targets[0].type
    assert t.memory is MemorySpace.Vec and t.addr + tile_footprint(t) <= 4 * 1024
    others = [s.targets[0].type for s in vector.body[2].body if getattr(s, "targets", None)
              and isinstance(s.targets[0].type, TileType) and s is not pop]
    assert others and all(o.addr >= 4 * 1024 for o in others)  # the ring's 4 slots below
    cube = lower(parse(v2c_source(3, 2, 0)), get_platform("a2a3sim")).functions["cube"]
    popped = [s.targets[0].type for s in cube.body[2].body if getattr(s, "targets", None)
              and getattr(s.value, "op", "") == "system.tpop_from_aiv"]
    assert popped[0].memory is MemorySpace.Mat and popped[0].addr >= 2 * 1024


def test_the_signatures_take_upstreams_forms():
    text = c2v_source().replace(
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=2)",
        'buf = pl.system.reserve_buffer(name="c2v", size=2048, base=pl.system.AUTO)\n'
        "        pl.aiv_initialize_pipe(buf, dir_mask=1, slot_size=1024, slot_num=2)").replace(
        "pl.aic_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=2)",
        'peer = pl.import_peer_buffer(name="c2v", peer_func="vector")\n'
        "        pl.aic_initialize_pipe(peer, 0, dir_mask=1, slot_size=1024, slot_num=2)")
    program = parse(text)
    printed = program.as_python()
    assert "pl.system.reserve_buffer(name='c2v', size=2048)" in printed
    assert "pl.system.aic_initialize_pipe(peer, 0, dir_mask=1" in printed
    assert pl.parse(printed) == program


def _error(source: str, marker: str, cls, match: str, platform: str = "a2a3sim"):
    """The `cls` error of `source` parsed and lowered for `platform` (the pipe checks are a
    pass, CheckCrossCorePipes): it names the line holding `marker`."""
    lines = source.splitlines()
    with pytest.raises(cls, match=match) as info:
        lower(parse(source), get_platform(platform))
    assert marker in lines[info.value.span.line - 1], lines[info.value.span.line - 1]
    return info.value


def test_a_pop_without_a_push_in_the_peer_is_an_error_at_the_pop():
    source = c2v_source().replace("            pl.tpush_to_aiv(acc, split=0)\n", "")
    _error(source, "pl.tpop_from_aic", TypeCheckError, "has no push of it")


def test_a_push_without_a_pop_is_an_error_at_the_push():
    source = v2c_source().replace(
        "            xm: pl.Tile[[16, 32], pl.FP16] = pl.tpop_from_aiv(split=0)\n", "").replace(
        "pl.move(xm, pl.Mem.Left), pl.move(bm, pl.Mem.Right)",
        "pl.move(bm, pl.Mem.Left), pl.move(bm, pl.Mem.Right), a_trans=True").replace(
        "            pl.tfree_to_aiv(xm)\n", "")
    _error(source, "pl.tpush_to_aic", TypeCheckError, "has no pop of it")


def test_tfree_of_a_tile_not_popped_is_an_error():
    source = c2v_source().replace("pl.tfree_to_aic(t)", "pl.tfree_to_aic(bt)")
    _error(source, "pl.tfree_to_aic(bt)", TypeCheckError, "`bt` was not popped")


def test_a_push_from_the_wrong_core_is_an_error():
    source = v2c_source().replace("pl.tpush_to_aic(pl.mul(t, 2.0), split=0)",
                                  "pl.tpush_to_aiv(pl.mul(t, 2.0), split=0)")
    error = _error(source, "pl.tpush_to_aiv", TypeCheckError, "runs on the cube core")
    assert "pl.tpush_to_aic" in error.hint


def test_a_pipe_operator_outside_a_group_is_an_error():
    source = c2v_source().replace("@pl.function(type=pl.FunctionType.AIC)",
                                  "@pl.function(type=pl.FunctionType.InCore)")
    _error(source, "pl.aic_initialize_pipe", TypeCheckError, "not one of them")


def test_a_pipe_function_called_without_its_group_is_an_error():
    group_call = "        out = self.group(a, b, bias, out)\n"
    source = c2v_source().replace(group_call, "        self.cube(a, b)\n" + group_call)
    _error(source, "self.cube(a, b)", TypeCheckError, "calls it alone")


def test_a_direction_the_function_does_not_initialize_is_an_error():
    source = c2v_source().replace(
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=2)",
        "pl.aiv_initialize_pipe(dir_mask=2, slot_size=1024, slot_num=2)")
    _error(source, "pl.tpop_from_aic", TypeCheckError, "does not initialize")


def test_the_two_sides_must_agree_on_the_ring():
    source = c2v_source().replace(
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=2)",
        "pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=4)")
    _error(source, "initialize_pipe", TypeCheckError, "disagree on its ring")


def test_a_tile_over_the_slot_size_is_an_error():
    source = c2v_source().replace("slot_size=1024", "slot_size=512")
    _error(source, "pl.tpush_to_aiv", TypeCheckError, "does not fit a slot")


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_ring_over_the_consumers_buffer_is_an_error_at_the_initialization(platform):
    capacity = get_platform(platform).backend.capacities["Vec"]
    slots = capacity // 1024 + 1
    source = c2v_source(slots=slots)
    _error(source, "pl.aiv_initialize_pipe", CapacityError,
           f"over the {capacity} bytes of .*Vec buffer", platform)


def test_the_ring_and_the_tiles_together_over_the_buffer_name_the_ring():
    capacity = get_platform("a2a3sim").backend.capacities["Vec"]
    slots = capacity // 1024 - 1  # the ring fits; the vector's tiles above it do not
    with pytest.raises(CapacityError, match="reserved for the cross-core pipe's ring"):
        lower(parse(c2v_source(slots=slots)), get_platform("a2a3sim"))


def test_the_device_platforms_refuse_the_group_at_the_pipe():
    # The CPU-model platforms run it (tests/device/test_device_cross_core_pipe.py).
    with pytest.raises(LoweringError, match="no device code on a2a3 yet") as info:
        from pypto.codegen.cpp import generate

        program = parse(c2v_source())
        generate(lower(program, get_platform("a2a3")), program, get_platform("a2a3"))
    assert "pl.aic_initialize_pipe" in c2v_source().splitlines()[info.value.span.line - 1]


def test_a_pop_with_another_split_than_the_push_is_an_error():
    source = c2v_source().replace("pl.tpop_from_aic(split=0)", "pl.tpop_from_aic(split=1)")
    _error(source, "pl.tpop_from_aic", TypeCheckError,
           "which pl.tpush_to_aiv uses for a \\[16, 16\\] FP32 tile with split=0")


@pytest.mark.parametrize("pushed, what", [
    ("pl.cast(pl.mul(t, 2.0), pl.FP32)", "\\[16, 32\\] FP32 tile"),  # another dtype
    ("pl.concat(pl.mul(t, 2.0), t)", "\\[16, 64\\] FP16 tile"),  # another shape
])
def test_a_pop_of_another_tile_than_the_push_is_an_error(pushed, what):
    source = v2c_source().replace("pl.tpush_to_aic(pl.mul(t, 2.0), split=0)",
                                  f"pl.tpush_to_aic({pushed}, split=0)").replace(
        "slot_size=1024", "slot_size=2048")
    _error(source, "pl.tpop_from_aiv", TypeCheckError, f"which pl.tpush_to_aic uses for a {what}")


def test_a_groups_directions_come_from_its_functions_wherever_it_is_written():
    source = c2v_source(2, 2, 1)
    group_at = source.index("    @pl.function(type=pl.FunctionType.Group)")
    main_at = source.index("    @pl.function(type=pl.FunctionType.Orchestration)")
    out = "pl.Tensor[[32, 16], pl.FP32]"
    group = source[group_at:main_at].replace(  # `out` undeclared, the group first
        f"out: pl.Out[{out}]) -> pl", f"out: {out}) -> pl")
    cube_at = source.index("    @pl.function(type=pl.FunctionType.AIC)")
    source = source[:cube_at] + group + source[cube_at:group_at] + source[main_at:]
    lowered = lower(parse(source), get_platform("a2a3sim"))
    directions = {p.var.name: p.direction for p in lowered.functions["group"].params}
    assert directions == {"a": Direction.In, "b": Direction.In, "bias": Direction.In,
                          "out": Direction.Out}


def test_device_code_refuses_the_lane_index_outside_a_group_at_its_line():
    # The simulators answer 0 there; the NPU, whichever vector core runs the task.
    from pypto.codegen.cpp import generate

    source = '''
@pl.program
class Lane:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        lane = pl.tensor.get_subblock_idx()
        t = pl.load(x, [0, 0], [16, 16])
        out = pl.store(pl.add(t, pl.cast(lane, pl.FP32)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.k(x, out)
        return out
'''
    program = parse(source)
    with pytest.raises(LoweringError, match=r"get_subblock_idx\(\) in `k`, which is no function "
                                            r"of a pl.FunctionType.Group, has no device code"
                       ) as info:
        generate(lower(program, get_platform("a5cpu")), program, get_platform("a5cpu"))
    assert "get_subblock_idx" in source.splitlines()[info.value.span.line - 1]
