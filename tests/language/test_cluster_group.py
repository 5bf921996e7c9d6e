"""`with pl.cluster():` of a cube (AIC) and a vector (AIV) function call: the block becomes
a pl.FunctionType.Group function of the program (upstream's OutlineClusterScopes), one
task whose two functions run at once with the pipe between them; a block of other kernels
is dispatched as written; badly formed blocks are errors at the block's line."""

from __future__ import annotations

import pytest
import torch
from pipe_programs import (
    c2v_cluster,
    c2v_out_rows,
    c2v_source,
    parse,
    parse_error,
    v2c_cluster,
)

import pypto.language as pl
from pypto import ir
from pypto.compiler import lower
from pypto.ir.types import Direction, FunctionType
from pypto.platform import get_platform


def test_a_cluster_of_a_cube_and_a_vector_call_is_a_group_function():
    program = parse(c2v_cluster())
    group = program.functions["main_cluster_0"]
    assert group.func_type is FunctionType.Group
    assert [p.var.name for p in group.params] == ["a", "b", "bias", "out"]
    assert [f.name for f in program.functions] == ["cube", "vector", "main_cluster_0", "main"]
    text = program.as_python()
    assert "= self.main_cluster_0(a, b, bias, out)\n" in text
    assert "with pl.cluster" not in text
    assert pl.parse(text) == program
    # The lowered group's out is an output, derived from its vector function.
    lowered = lower(program, get_platform("a2a3sim"))
    assert lowered.functions["main_cluster_0"].param("out").direction is not Direction.In


def test_the_group_a_cluster_becomes_is_the_hand_written_one():
    written = parse(c2v_source()).functions["group"]
    outlined = parse(c2v_cluster()).functions["main_cluster_0"]
    assert outlined.body[:-1] == written.body[:-1]
    assert [p.var for p in outlined.params] == [p.var for p in written.params]


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("split", [0, 1, 2])
def test_a_cluster_runs_as_the_group_does(platform, split):
    n = 4
    torch.manual_seed(split)
    a = torch.randn(n * 16, 32, dtype=torch.float16)
    b = torch.randn(32, 16, dtype=torch.float16)
    bias = torch.randn(16, 16)
    outs = []
    for source in (c2v_source(n, 1, split), c2v_cluster(n, 1, split)):
        out = torch.zeros(c2v_out_rows(n, split), 16)
        ir.compile(parse(source), dump_passes=False, platform=platform)(a, b, bias, out)
        outs.append(out)
    want = ((a.float() @ b.float()).reshape(n, 16, 16) + bias).reshape(n * 16, 16)
    if split == 0:  # lane 1 takes no part in a no-split pipe: its pops are zeros
        want = torch.cat([want, bias.repeat(n, 1)])
    assert torch.equal(outs[0], want) and torch.equal(outs[1], want)


def test_a_vector_to_cube_cluster_runs():
    n = 3
    x = torch.randn(n * 16, 32, dtype=torch.float16)
    b = torch.randn(32, 16, dtype=torch.float16)
    out = torch.zeros(n * 16, 16)
    ir.compile(parse(v2c_cluster(n, 2, 1)), dump_passes=False, platform="a2a3sim")(x, b, out)
    assert torch.equal(out, (x * 2).float() @ b.float())


def test_a_cluster_of_other_kernels_is_dispatched_as_written():
    source = '''
@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 16])
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        with pl.cluster():
            out = self.double(x, out)
        return out
'''
    program = parse(source)
    assert [f.name for f in program.functions] == ["double", "main"]
    assert "= self.double(x, out)\n" in program.as_python()


def test_a_cluster_with_one_side_only_is_an_error_at_the_block():
    source = c2v_cluster().replace("            out = self.vector(bias, out)\n", "")
    parse_error(source, "with pl.cluster()", "calls only `cube`")


def test_a_cluster_with_more_than_the_two_calls_is_an_error_at_the_block():
    source = c2v_cluster().replace("            self.cube(a, b)\n",
                                   "            self.cube(a, b)\n            self.cube(a, b)\n")
    parse_error(source, "with pl.cluster()", "one of each and nothing else")


def test_a_cluster_argument_that_is_an_expression_is_an_error_at_the_block():
    source = c2v_cluster().replace("self.cube(a, b)", "self.cube(a[0:48, :], b)")
    parse_error(source, "with pl.cluster()", "named values or constants")


def test_a_cluster_inside_a_kernel_is_an_error():
    source = c2v_cluster().replace(
        "        pl.aic_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=2)\n",
        "        pl.aic_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=2)\n"
        "        with pl.cluster():\n            pass\n")
    parse_error(source, "with pl.cluster()", "belongs in a @pl.jit")
