"""The cross-block barriers in the language and the compiler: `pl.system.syncall` (hard and
soft), `fence`, `cacheinvalid` and the launch-shape queries `available_aiv_count` /
`available_cluster_count`.  They parse, print and read back; upstream's argument rules,
the placement rules and the occupancy of a hard barrier are errors at the line at fault
(passes/barriers.py); device code refuses them at the line."""

from __future__ import annotations

import pytest
import torch
from barrier_programs import (
    HARD_SEQUENCE,
    ROTATE,
    UPSTREAM_SEQUENCE,
    line_of,
    parse,
    rotate_source,
)

import pypto.language as pl
from pypto import ir
from pypto.codegen.cpp import generate
from pypto.compiler import lower
from pypto.ir import LoweringError, ParseError
from pypto.ir.errors import PyptoError
from pypto.platform import get_platform

pytestmark = pytest.mark.small_tiles


def _lowered(source: str, platform: str = "a2a3sim"):
    program = parse(source)
    return program, lower(program, get_platform(platform))


def _lowering_error(source: str, marker: str, match: str, platform: str = "a2a3sim"):
    """The LoweringError of lowering `source` for `platform`, matching `match`, at the line
    holding `marker`."""
    with pytest.raises(LoweringError, match=match) as info:
        _lowered(source, platform)
    assert info.value.span.line == line_of(source, marker), info.value
    return info.value


def _parse_error(source: str, marker: str, match: str):
    with pytest.raises(PyptoError, match=match) as info:
        parse(source)
    assert info.value.span.line == line_of(source, marker), info.value
    return info.value


def test_the_queries_are_the_backends_core_counts():
    for platform, (aiv, clusters) in (("a2a3sim", (48, 24)), ("a5sim", (72, 36))):
        backend = get_platform(platform).backend
        assert (backend.vector_cores, backend.cube_cores) == (aiv, clusters)
    source = '''
@pl.program
class Counts:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, out: pl.InOut[pl.Tensor[[72, 16], pl.INT32]]) -> pl.Tensor[[72, 16], pl.INT32]:
        clusters = pl.system.available_cluster_count()
        for i in pl.spmd(pl.system.available_aiv_count()):
            out = pl.assemble(out, pl.full([1, 16], dtype=pl.INT32, value=1), [i, 0])
        for i in pl.spmd(clusters):
            out = pl.assemble(out, pl.full([1, 16], dtype=pl.INT32, value=2), [i, 0])
        return out
'''
    program = parse(source)
    assert parse(program.as_python()) == program
    assert "pl.spmd(pl.system.available_aiv_count())" in program.as_python()
    for platform, (aiv, clusters) in (("a2a3sim", (48, 24)), ("a5sim", (72, 36))):
        out = torch.zeros(72, 16, dtype=torch.int32)
        ir.compile(program, platform=platform, dump_passes=False)(out)
        assert out[:clusters].eq(2).all() and out[clusters:aiv].eq(1).all()
        assert out[aiv:].eq(0).all()


def test_a_query_in_a_kernel_is_refused_at_its_line():
    source = ROTATE.format(rows=64, width="4", barrier='''\
            n = pl.system.available_aiv_count()''')
    _parse_error(source, "available_aiv_count()", "platform's core count for sizing a launch "
                 "in orchestration code; a kernel reads the launch it runs in with "
                 r"pl.get_block_num\(\)")


def test_the_barriers_print_and_read_back():
    source = rotate_source(4, UPSTREAM_SEQUENCE + '''
            pl.system.cacheinvalid(mid, [16, 64], [i * 16, 0])''')
    program = parse(source)
    text = program.as_python()
    assert "pl.system.syncall(sync_ws, participant_count, mode='soft')" in text
    assert "pl.system.cacheinvalid(mid, [16, 64], [i * 16, 0])" in text
    assert parse(text) == program
    _, lowered = _lowered(source)
    assert parse(lowered.as_python()).as_python() == lowered.as_python()
    kernel = lowered.functions[0]
    # the soft barrier adds to its workspace's counter: the kernel reads and writes it
    assert kernel.param("sync_ws").direction.name == "InOut"


@pytest.mark.parametrize("call, match", [
    ('pl.system.syncall(gm_workspace=sync_ws)',
     r'syncall\(mode="hard"\) takes no gm_workspace'),
    ('pl.system.syncall(mode="soft", gm_workspace=sync_ws)', r'needs used_cores'),
    ('pl.system.syncall(mode="soft", used_cores=4)', r'needs gm_workspace'),
    ('pl.system.syncall(mode="soft", gm_workspace=x, used_cores=4)',
     r'gm_workspace=\) is an INT32 tensor'),
    ('pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=1.5)',
     r'used_cores=\) is an integer'),
    ('pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=-1)',
     r'used_cores=\) is in \[0, 2147483647\]'),
    ('pl.system.syncall(mode="medium")', r'mode=\) is "hard" or "soft"'),
    ('pl.system.syncall(core_type="all")', r"core_type=\) is one of 'aiv_only'"),
    ('pl.system.cacheinvalid(mid, [16], [0, 0])', r'shapes has 1 entries; the tensor has rank 2'),
    ('pl.system.cacheinvalid(mid)', r'needs shapes and offsets'),
])
def test_upstreams_argument_rules_are_errors_at_the_line(call, match):
    source = ROTATE.format(rows=64, width="4", barrier=f"            {call}")
    _parse_error(source, call, match)


def test_a_soft_workspace_of_fewer_than_16_elements_is_refused():
    source = rotate_source(4, '''\
            pl.system.syncall(mode="soft", gm_workspace=w, used_cores=4)''').replace(
        "sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],",
        "sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]], w: pl.InOut[pl.Tensor[[8], pl.INT32]],")
    _parse_error(source, "gm_workspace=w", "needs at least 16 INT32 elements .* this one has 8")


def test_a_barrier_outside_a_kernel_is_refused():
    source = '''
@pl.program
class Outside:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
        pl.system.fence()
        return x
'''
    _parse_error(source, "pl.system.fence()", r"pl.system.fence outside a `pl.at` block")


def test_a_hard_barrier_under_a_partial_launch_is_refused_at_the_launch():
    source = rotate_source(4, HARD_SEQUENCE)
    error = _lowering_error(source, "pl.spmd(4)", r"the hard pl.system.syncall \(line "
                            rf"{line_of(source, 'syncall(')}\) of `main_incore_0` needs the "
                            "launch to fill all 48 vector cores of Ascend910B, one block each, "
                            "but the launch has 4 blocks")
    assert "pl.spmd(pl.system.available_aiv_count())" in error.hint
    assert 'mode="soft"' in error.hint


def test_a_literal_launch_is_checked_against_the_platform():
    source = rotate_source(48, HARD_SEQUENCE)
    _lowered(source, "a2a3sim")  # 48 vector cores: a full launch
    _lowering_error(source, "pl.spmd(48)", "all 72 vector cores of Ascend950, one block "
                    "each, but the launch has 48 blocks", "a5sim")


def test_a_launch_sized_by_the_query_is_full_on_every_platform():
    for blocks, platform in ((48, "a2a3sim"), (72, "a5sim")):
        source = rotate_source(blocks, HARD_SEQUENCE,
                               width="pl.system.available_aiv_count()")
        _lowered(source, platform)
    bound = rotate_source(48, HARD_SEQUENCE, width="n").replace(
        "        for i in pl.spmd(n):",
        "        n = pl.system.available_aiv_count()\n        for i in pl.spmd(n):")
    _lowered(bound, "a2a3sim")


def test_a_launch_sized_by_the_other_query_is_refused():
    source = rotate_source(48, HARD_SEQUENCE, width="pl.system.available_cluster_count()")
    _lowering_error(source, "pl.spmd(pl.system.available_cluster_count())",
                    r"needs the launch to fill all 48 vector cores of Ascend910B, one block "
                    r"each, but the launch sizes itself on "
                    r"pl.system.available_cluster_count\(\) \(24 on Ascend910B\)")


def test_a_hard_barrier_in_a_plain_task_is_refused():
    source = rotate_source(4, HARD_SEQUENCE).replace(
        "        for i in pl.spmd(4):",
        "        with pl.at(level=pl.Level.CORE_GROUP):\n            i = 0")
    _lowering_error(source, "with pl.at(", "but the launch is a plain task")


CUBE = '''
@pl.program
class Cube:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             out: pl.Out[pl.Tensor[[{rows}, 16], pl.FP32]]) -> pl.Tensor[[{rows}, 16], pl.FP32]:
        for i in pl.spmd({width}):
            a_mat = pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(a_mat, pl.Mem.Left), pl.move(b_mat, pl.Mem.Right))
            out = pl.store(acc, [i * 16, 0], out)
            pl.system.syncall(core_type="{core_type}")
        return out
'''


def test_a_cube_kernels_hard_barrier_fills_the_clusters():
    good = CUBE.format(rows=24 * 16, width="pl.system.available_cluster_count()",
                       core_type="aic_only")
    program = parse(good)
    a, b = torch.randn(16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16)
    out = torch.zeros(24 * 16, 16)
    ir.compile(program, platform="a2a3sim", dump_passes=False)(a, b, out)
    assert torch.equal(out, (a.float() @ b.float()).repeat(24, 1))
    _lowering_error(CUBE.format(rows=48 * 16, width="pl.system.available_aiv_count()",
                                core_type="aic_only"),
                    "pl.spmd(", "at most one on each of the 24 cluster \\(cube\\) cores of "
                    r"Ascend910B; the launch sizes itself on pl.system.available_aiv_count\(\) "
                    r"\(48 on Ascend910B\)")


def test_a_soft_barrier_launch_of_more_blocks_than_cores_is_refused():
    source = rotate_source(49, UPSTREAM_SEQUENCE)
    error = _lowering_error(source, "pl.spmd(49)", "`main_incore_0` holds a pl.system.syncall, "
                            "so the blocks of its launch run at once, at most one on each of "
                            "the 48 vector cores of Ascend910B; the launch has 49 blocks: on "
                            "the device the blocks past them run in a later wave")
    assert "pl.spmd(pl.system.available_aiv_count())" in error.hint
    _lowered(source, "a5sim")  # 72 vector cores there


@pytest.mark.parametrize("source, core_type, match", [
    (rotate_source(48, '            pl.system.syncall(core_type="mix")'), "mix",
     "a vector kernel \\(it runs on vector cores only\\): it waits for every core of that "
     "set, and some never run this kernel: it can never complete"),
    (rotate_source(48, '            pl.system.syncall(mode="soft", core_type="aic_only", '
                       'gm_workspace=sync_ws, used_cores=0)'), "aic_only",
     "on the device no core of this kernel takes part in it"),
    (CUBE.format(rows=24 * 16, width="24", core_type="aiv_only"), "aiv_only",
     "a cube kernel \\(it runs on cube cores only\\)"),
])
def test_a_barrier_naming_cores_the_kernel_does_not_run_on_is_refused(source, core_type, match):
    error = _lowering_error(source, f'core_type="{core_type}"', match)
    assert "use core_type=" in error.hint


def test_a_barrier_in_a_function_of_a_cross_core_group_is_refused():
    from split_aiv_programs import round_trip_source

    source = round_trip_source("NONE")
    lines = source.splitlines()
    at = next(n for n, text in enumerate(lines) if "pl.split_aiv" in text)
    indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
    lines.insert(at, f'{indent}pl.system.syncall(core_type="mix")')
    source = "\n".join(lines) + "\n"
    _lowering_error(source, "pl.system.syncall", "a function of a cross-core group: the "
                    "simulators run a group's cube and vector lanes on threads of their own")


def test_a_gang_kernel_accesses_global_memory_through_load_and_store_only():
    source = rotate_source(4, UPSTREAM_SEQUENCE + '''
            idx = pl.tile.full([1, 16], dtype=pl.INT32, value=0)
            g = pl.tile.mgather(x, idx)''')
    _lowering_error(source, "pl.tile.mgather", "pl.tile.mgather accesses global memory in a "
                    "kernel with a pl.system.syncall; the simulators follow the blocks' "
                    "cache protocol through pl.load and pl.store only")


def test_a_tensor_value_is_not_recomputed_across_a_barrier():
    source = '''
@pl.program
class TensorValue:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.spmd(4):
            y = pl.add(pl.slice(x, [16, 64], [i * 16, 0]), 1.0)
            pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=4)
            out = pl.assemble(out, y, [i * 16, 0])
        return out
'''
    _lowering_error(source, "pl.assemble(out, y", "`y` is a tensor value computed before the "
                    rf"pl.system.syncall at line {line_of(source, 'syncall(')} and read after it")


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_device_code_refuses_the_barriers_at_their_line(platform):
    source = rotate_source(4, UPSTREAM_SEQUENCE)
    program, lowered = _lowered(source, platform)
    with pytest.raises(LoweringError, match="pl.system.cacheinvalid has no device code on "
                       f"{platform}: pto-isa's CPU model implements the cache maintenance"
                       r" \(dcci, dsb\) as an empty function") as info:
        generate(lowered, program, get_platform(platform))
    assert info.value.span.line == line_of(source, "publish all producer cache lines")
    hard = rotate_source(4, '            pl.system.syncall(mode="soft", gm_workspace=sync_ws, '
                            'used_cores=4)')
    program, lowered = _lowered(hard, platform)
    with pytest.raises(LoweringError, match="implements SYNCALL as an empty function"):
        generate(lowered, program, get_platform(platform))


def test_the_barrier_names_are_upstreams():
    for name in ("syncall", "fence", "cacheinvalid", "available_aiv_count",
                 "available_cluster_count"):
        assert getattr(pl.system, name).name == f"system.{name}"
    with pytest.raises(ParseError):
        parse(rotate_source(4, "            pl.system.syncall(core_type='mix', bogus=1)"))
