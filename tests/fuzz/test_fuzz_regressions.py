"""Regression tests for the bugs differential fuzzing found, one per bug.

Each program runs on the simulator and through `torch_codegen`; both must give the
documented result bit for bit.
"""

from __future__ import annotations

import linecache
from pathlib import Path

import fuzz_programs as fp
import pytest
import torch
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.ir.dtypes import DataType
from pypto.ir.errors import LoweringError, TypeCheckError
from pypto.passes import cast_path
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")
PLATFORMS = ["a2a3sim", "a5sim"]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()]) if t.is_floating_point() \
        else t


def _agreeing_outputs(kernel, args, platform):
    """The simulator's outputs (all arguments, as a list), once `torch_codegen` of the
    lowered program has given the same bits for every one."""
    sim, codegen = sim_and_torch(kernel, args, platform)
    for got, want in zip(codegen, sim, strict=True):
        if isinstance(want, torch.Tensor):  # not a scalar argument
            assert torch.equal(_bits(got), _bits(want))
    return sim


# --------------------------------------------------------------------------- torch_codegen


@pl.jit.incore
def fp16_max_with_a_tie_breaking_constant(x: pl.Tensor[[8, 32], pl.FP16],
                                          out: pl.Out[pl.Tensor[[8, 32], pl.FP16]]):
    t = pl.load(x, [0, 0], [8, 32])
    out = pl.store(pl.maximum(1.0004882812500002, t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_float_constant_rounds_once_to_fp16_not_through_fp32(platform):
    # 1 + 2**-11 + 2**-52 is just above the FP16 midpoint 1 + 2**-11: one rounding gives
    # 1 + 2**-10; rounding to FP32 first lands on the midpoint and then on 1.0.
    x = torch.zeros(8, 32, dtype=torch.float16)
    sim, codegen = sim_and_torch(fp16_max_with_a_tie_breaking_constant,
                                 [x, torch.zeros_like(x)], platform)
    assert (sim[1] == 1.0009765625).all()
    assert torch.equal(codegen[1], sim[1])


@pl.jit.incore
def int8_or_with_a_wide_constant(x: pl.Tensor[[8, 32], pl.INT8],
                                 out: pl.Out[pl.Tensor[[8, 32], pl.INT8]]):
    t = pl.load(x, [0, 0], [8, 32])
    out = pl.store(pl.or_(2147483647, t), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_integer_constant_saturates_to_the_tile_dtype(platform):
    x = torch.arange(-128, 128, dtype=torch.int8).reshape(8, 32)
    sim, codegen = sim_and_torch(int8_or_with_a_wide_constant, [x, torch.zeros_like(x)],
                                 platform)
    # 2147483647 saturates to 127; wrapped to INT8 it would be -1, and -1 | x is -1.
    assert torch.equal(sim[1], x | 127) and not (sim[1] == -1).all()
    assert torch.equal(codegen[1], sim[1])


@pl.jit.incore
def int32_divide(a: pl.Tensor[[8, 32], pl.INT32], b: pl.Tensor[[8, 32], pl.INT32],
                 out: pl.Out[pl.Tensor[[8, 32], pl.INT32]]):
    out = pl.store(pl.div(pl.load(a, [0, 0], [8, 32]), pl.load(b, [0, 0], [8, 32])),
                   [0, 0], out)
    return out


def test_int32_min_divided_by_minus_one_wraps_in_torch_codegen_instead_of_trapping(run_script):
    # torch's integer division of INT32_MIN by -1 kills the process with SIGFPE.
    run_script("""
import torch
from pypto.debug import torch_runtime
a = torch.tensor([-2**31, 7, -7, 5], dtype=torch.int32)
b = torch.tensor([-1, -1, 2, 0], dtype=torch.int32)
assert torch_runtime.div(a, b).tolist() == [-2**31, -7, -3, 0]
""")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int32_division_edge_cases_agree(platform):
    # INT32_MIN / -1 is left to the subprocess test above: it would kill this process.
    a = torch.tensor([-2**31 + 1, 7, -7, 5] * 64, dtype=torch.int32).reshape(8, 32)
    b = torch.tensor([-1, -1, 2, 0] * 64, dtype=torch.int32).reshape(8, 32)
    sim, codegen = sim_and_torch(int32_divide, [a, b, torch.zeros_like(a)], platform)
    assert sim[2][0, :4].tolist() == [2**31 - 1, -7, -3, 0]
    assert torch.equal(codegen[2], sim[2])


@pl.jit.incore
def signed_zeros(a: pl.Tensor[[8, 32], pl.FP32], b: pl.Tensor[[8, 32], pl.FP32],
                 hi: pl.Out[pl.Tensor[[8, 32], pl.FP32]], lo: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
                 r: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
                 rmax: pl.Out[pl.Tensor[[8, 1], pl.FP32]]):
    ta = pl.load(a, [0, 0], [8, 32])
    tb = pl.load(b, [0, 0], [8, 32])
    hi = pl.store(pl.maximum(ta, tb), [0, 0], hi)
    lo = pl.store(pl.minimum(ta, tb), [0, 0], lo)
    r = pl.store(pl.relu(ta), [0, 0], r)
    rmax = pl.store(pl.row_max(ta, pl.create_tile([8, 32], pl.FP32)), [0, 0], rmax)
    return hi, lo, r, rmax


@pytest.mark.parametrize("platform", PLATFORMS)
def test_signed_zeros_in_max_min_and_relu_agree_bit_for_bit(platform):
    a = torch.tensor([0.0, -0.0] * 128).reshape(8, 32)
    b = -a  # +0 against -0 and -0 against +0
    args = [a, b, torch.zeros(8, 32), torch.zeros(8, 32), torch.zeros(8, 32), torch.zeros(8, 1)]
    sim, codegen = sim_and_torch(signed_zeros, args, platform)
    for got, want in zip(codegen[2:], sim[2:], strict=True):
        assert torch.equal(_bits(got), _bits(want))
    # The simulator's `a > b ? a : b` gives the second operand for equal zeros; relu(-0) = +0.
    assert torch.equal(_bits(sim[2]), _bits(b)) and torch.equal(_bits(sim[3]), _bits(b))
    assert not torch.signbit(sim[4]).any()


@pl.jit.incore
def scalar_first_max_min(x: pl.Tensor[[8, 32], pl.FP32],
                         hi: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
                         lo: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
                         hi_swapped: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [8, 32])
    hi = pl.store(pl.maximum(-0.0, t), [0, 0], hi)
    lo = pl.store(pl.minimum(0.0, t), [0, 0], lo)
    hi_swapped = pl.store(pl.maximum(t, -0.0), [0, 0], hi_swapped)
    return hi, lo, hi_swapped


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_scalar_first_max_or_min_keeps_its_operand_order(platform):
    """Found by the large fuzz profile: `pl.maximum(-0.0, x)` ran as max(x, -0.0), so a tie
    of zeros gave the scalar where the second operand, x, is due (tmaxs has the scalar
    second; the reversed form is trmaxs)."""
    x = torch.tensor([0.0, -0.0] * 128).reshape(8, 32)
    args = [x] + [torch.zeros(8, 32) for _ in range(3)]
    sim, codegen = sim_and_torch(scalar_first_max_min, args, platform)
    for got, want in zip(codegen[1:], sim[1:], strict=True):
        assert torch.equal(_bits(got), _bits(want))
    assert torch.equal(_bits(sim[1]), _bits(x)) and torch.equal(_bits(sim[2]), _bits(x))
    assert torch.signbit(sim[3]).all()  # max(x, -0.0): the second operand, -0.0


@pl.jit.incore
def accumulate_from_full(x: pl.Tensor[[8, 32], pl.FP32],
                         out: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
    acc = pl.full([8, 32], pl.FP32, 0.5)
    out = pl.store(pl.add(acc, pl.load(x, [0, 0], [8, 32])), [0, 0], out)
    return out


def test_pl_full_runs_in_torch_codegen():
    x = torch.randn(8, 32)
    sim, codegen = sim_and_torch(accumulate_from_full, [x, torch.zeros(8, 32)], "a2a3sim")
    assert torch.equal(sim[1], x + 0.5) and torch.equal(codegen[1], sim[1])


@pl.jit.incore
def roots(x: pl.Tensor[[4, 8], pl.FP32], s: pl.Out[pl.Tensor[[4, 8], pl.FP32]],
          rs: pl.Out[pl.Tensor[[4, 8], pl.FP32]]):
    t = pl.load(x, [0, 0], [4, 8])
    s = pl.store(pl.sqrt(t), [0, 0], s)
    rs = pl.store(pl.rsqrt(t), [0, 0], rs)
    return s, rs


def test_fp32_sqrt_is_correctly_rounded_in_torch_codegen():
    # torch's vectorised FP32 sqrt gives 23.511812 for 552.80536; the correctly rounded
    # root (the simulator's, and float64's rounded to FP32) is 23.511814.
    values = [552.8053588867188, 275.97174072265625, 339.6056823730469, 186.12234497070312]
    x = torch.tensor(values * 8, dtype=torch.float32).reshape(4, 8)
    sim, codegen = sim_and_torch(roots, [x, torch.zeros(4, 8), torch.zeros(4, 8)], "a5sim")
    assert torch.equal(sim[1], torch.sqrt(x.double()).float())
    assert torch.equal(codegen[1], sim[1]) and torch.equal(codegen[2], sim[2])


# --------------------------------------------------------------------------- the compiler


@pl.jit
def alias_in_a_block(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.add(x, 1.0)
        s = v
        out[:] = s
    return out


def test_a_tensor_alias_inside_pl_at_compiles_and_runs():
    # Was: VerificationError after TensorToTile, "`v` is read before it is bound".
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    alias_in_a_block(x, out)
    assert torch.equal(out, x + 1.0)


@pl.jit
def escaping_alias(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                   later: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.add(x, 1.0)
        s = v
        out[:] = s
    with pl.at(level=pl.Level.CORE_GROUP):
        later[:] = pl.mul(s, 2.0)
    return out, later


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_alias_read_by_a_later_task_is_written_before_it_is_read(platform):
    # Was silently wrong: `out` loaded the scratch tensor `s` before the store into it.
    x, out, later = torch.randn(16, 64), torch.zeros(16, 64), torch.zeros(16, 64)
    escaping_alias(x, out, later, config=RunConfig(platform=platform))
    assert torch.equal(out, x + 1.0) and torch.equal(later, (x + 1.0) * 2.0)


@pl.jit
def write_then_read(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                    twice: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(x, 1.0)
        twice[:] = pl.mul(out, 2.0)
        out[:] = pl.add(twice, 1.0)
    return out, twice


def test_a_tensor_read_after_it_was_written_in_the_same_block_sees_the_write():
    # Was silently wrong: the block loaded `out` and `twice` before storing them.
    x, out, twice = torch.randn(16, 64), torch.zeros(16, 64), torch.zeros(16, 64)
    write_then_read(x, out, twice)
    assert torch.equal(twice, (x + 1.0) * 2.0) and torch.equal(out, (x + 1.0) * 2.0 + 1.0)


@pl.jit
def half_write_then_read(x: pl.Tensor[[16, 64], pl.FP32], out: pl.InOut[pl.Tensor[[16, 64],
                                                                                pl.FP32]],
                         twice: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:8, :] = pl.add(x[0:8, :], 1.0)
        twice[:] = pl.mul(out, 2.0)
    return out, twice


def test_a_read_after_a_partial_write_in_the_same_block_sees_the_write():
    x, out, twice = torch.randn(16, 64), torch.ones(16, 64), torch.zeros(16, 64)
    half_write_then_read(x, out, twice)
    expected = torch.ones(16, 64)
    expected[:8] = x[:8] + 1.0
    assert torch.equal(out, expected) and torch.equal(twice, expected * 2.0)


@pl.jit.incore
def doubled(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    y = pl.store(pl.mul(pl.load(x, [0, 0], [16, 64]), 2.0), [0, 0], y)
    return y


@pl.jit
def slices_as_task_arguments(x: pl.Tensor[[32, 64], pl.FP32],
                             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]],
                             last: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    for i in pl.range(2):
        doubled(x[i * 16:(i + 1) * 16, :], out[i * 16:(i + 1) * 16, :])
    last = doubled(out[16:32, :][0:16, :], last)
    return out, last


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_slice_passed_straight_to_a_kernel_is_a_view_of_the_tensor(platform):
    # Was: InternalError "tensor argument is not a variable" from codegen, with no user
    # line; binding the slice to a name first worked.  The last call reads, through a
    # view of a view, what the loop's calls wrote through views: a RAW edge on `out`.
    x = torch.randn(32, 64)
    sim = _agreeing_outputs(slices_as_task_arguments,
                            [x, torch.zeros(32, 64), torch.zeros(16, 64)], platform)
    assert torch.equal(sim[1], x * 2.0) and torch.equal(sim[2], x[16:] * 4.0)


@pl.jit
def nested_loop_stores(x: pl.Tensor[[32, 128], pl.FP32],
                       out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            for j in pl.range(2):
                t = pl.load(x, [i * 16, j * 64], [16, 64])
                out = pl.store(pl.add(t, 1.0), [i * 16, j * 64], out)
    return out


@pl.jit
def nested_loop_window_writes(x: pl.Tensor[[32, 128], pl.FP32],
                              out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            for j in pl.unroll(2):
                for k in pl.range(0, 64, 32):
                    t = pl.load(x, [i * 16, j * 64 + k], [16, 32])
                    out[i * 16:(i + 1) * 16, j * 64 + k:j * 64 + k + 32] = pl.mul(t, 2.0)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_store_in_nested_loops_of_a_block_writes_the_output(platform):
    # Was: LoweringError "`out` is both read and replaced by a new tensor": only writes at
    # the block's top level and one loop down were seen.
    x = torch.randn(32, 128)
    sim = _agreeing_outputs(nested_loop_stores, [x, torch.zeros(32, 128)], platform)
    assert torch.equal(sim[1], x + 1.0)


def test_a_window_write_three_loops_down_writes_the_output():
    # The refusal's own hint, `out[r0:r1, c0:c1] = ...`, was refused the same way.
    x = torch.randn(32, 128)
    sim = _agreeing_outputs(nested_loop_window_writes, [x, torch.zeros(32, 128)],
                            "a2a3sim")
    assert torch.equal(sim[1], x * 2.0)


M = 37


@pl.jit.incore
def edge_tiles_in_an_inner_loop(x: pl.Tensor[[M, 32], pl.FP32],
                                out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
    for r in pl.unroll(0, M, 16):
        for k in pl.range(2):
            t = pl.load(x, [r, 0], [16, 32], valid_shape=[min(16, M - r), 32])
            out = pl.store(pl.add(t, k), [r, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tile_bound_afresh_in_each_iteration_may_change_type_between_loops(platform):
    # Was: TypeCheckError "`t` changes type inside a loop (a FP32 tile [16, 32] → a FP32
    # tile [16, 32])": the unrolled last row block's loop loads a [5, 32] edge tile into the
    # name the earlier blocks' loops used, but `t` is not carried from one iteration to the
    # next, and the message hid the valid shapes that differ.
    x = torch.randn(M, 32)
    sim = _agreeing_outputs(edge_tiles_in_an_inner_loop, [x, torch.zeros(M, 32)],
                            platform)
    assert torch.equal(sim[1], x + 1.0)


@pl.jit.incore
def carried_edge_tile(x: pl.Tensor[[M, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    acc = pl.full([16, 32], pl.FP32, 0.0)
    for i in pl.range(3):
        t = pl.load(x, [i * 16, 0], [16, 32], valid_shape=[5, 32])
        acc = pl.add(acc, t)
    out = pl.store(acc, [0, 0], out)
    return out


def _refusal(kernel, *args) -> TypeCheckError:
    with pytest.raises(TypeCheckError) as info:
        kernel.frontend(*args)
    assert info.value.span.file == __file__, str(info.value)
    return info.value


def test_a_carried_tile_that_changes_valid_shape_is_refused_naming_both_types():
    err = _refusal(carried_edge_tile, torch.zeros(M, 32), torch.zeros(16, 32))
    assert linecache.getline(__file__, err.span.line).strip() == "acc = pl.add(acc, t)"
    assert "`acc` is carried around the loop but changes type inside it (a FP32 tile " \
           "[16, 32] → a FP32 tile [16, 32] valid [5, 32])" in err.message, str(err)


@pl.jit.incore
def retyped_by_a_loop_that_may_not_run(x: pl.Tensor[[M, 32], pl.FP32], n: pl.Scalar[pl.INT64],
                                       out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 32])
    for _i in pl.range(n):
        t = pl.load(x, [16, 0], [16, 32], valid_shape=[5, 32])
    out = pl.store(t, [0, 0], out)
    return out


def test_a_tile_retyped_by_a_loop_that_may_not_run_cannot_be_read_after_it():
    # After zero iterations `t` is the full tile, after one the edge tile: no one type.
    err = _refusal(retyped_by_a_loop_that_may_not_run, torch.zeros(M, 32), 0,
                   torch.zeros(16, 32))
    assert linecache.getline(__file__, err.span.line).strip() == "out = pl.store(t, [0, 0], out)"
    assert "`t` is read after a loop that may not run and changes its type" in err.message


@pl.jit.incore
def fp32_to_int8(x: pl.Tensor[[8, 32], pl.FP32], out: pl.Out[pl.Tensor[[8, 32], pl.INT8]]):
    out = pl.store(pl.cast(pl.load(x, [0, 0], [8, 32]), pl.INT8, mode="rint"), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp32_to_int8_rounds_twice_through_fp16_on_both_backends(platform):
    # Neither backend converts FP32 to INT8 in one instruction: docs/numerics.md named
    # only Ascend910B.  One rounding would give 3, -3, 1 and 4.
    x = torch.tensor([2.5000002, -2.5000002, 0.5000001, 3.5] * 64).reshape(8, 32)
    sim = _agreeing_outputs(fp32_to_int8, [x, torch.zeros(8, 32, dtype=torch.int8)],
                            platform)
    assert sim[1][0, :4].tolist() == [2, -2, 0, 4]


def test_numerics_md_names_every_backend_whose_cast_chain_rounds_twice():
    lines = (Path(__file__).parents[2] / "docs" / "numerics.md").read_text().splitlines()
    rows = {tuple(cell.strip() for cell in line.strip("|").split("|")[:2])
            for line in lines if line.startswith("| ")}
    for src, dst in sorted(fp.DOUBLE_ROUNDING):
        for platform in PLATFORMS:
            backend = get_platform(platform).backend
            chain = " → ".join(d.name for d in cast_path(DataType[src], DataType[dst], backend))
            assert {(backend.name, chain), ("both", chain)} & rows, (backend.name, chain)


@pl.jit.incore
def doubled_any_shape(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    b = pl.store(pl.mul(pl.load(a, [0, 0], a.shape), 2.0), [0, 0], b)
    return b


@pl.jit
def one_kernel_three_shapes(x: pl.Tensor[[32, 64], pl.FP32],
                            y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    doubled_any_shape(x[0:16, :], y[0:16, :])
    doubled_any_shape(x[16:32, 0:32], y[16:32, 0:32])
    doubled_any_shape(x[16:32, 32:64], y[16:32, 32:64])
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_with_open_shapes_serves_each_call_of_one_orchestration(platform):
    # Was: TypeCheckError "argument `a` of `doubled_any_shape` expects a FP32 tensor [16, 64],
    # got a FP32 tensor [16, 32]": the first call's specialisation was the only one.
    x = torch.randn(32, 64)
    sim = _agreeing_outputs(one_kernel_three_shapes, [x, torch.zeros(32, 64)], platform)
    assert torch.equal(sim[1], x * 2.0)
    names = [f.name for f in one_kernel_three_shapes.lower(x, sim[1]).functions]
    assert names == ["doubled_any_shape", "doubled_any_shape_1", "one_kernel_three_shapes"]


@pl.jit.incore
def sixteen_rows_of_any(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    b = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], b)
    return b


@pl.jit
def second_shape_too_small(x: pl.Tensor[[32, 64], pl.FP32],
                           y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
    sixteen_rows_of_any(x[0:16, :], y[0:16, :])
    sixteen_rows_of_any(x[16:24, :], y[16:24, :])
    return y


def test_a_second_specialisation_the_body_cannot_take_is_refused_in_the_body():
    with pytest.raises(TypeCheckError) as info:
        second_shape_too_small.lower(torch.zeros(32, 64), torch.zeros(32, 64))
    err = info.value
    assert linecache.getline(__file__, err.span.line).strip() == \
        "b = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], b)", str(err)
    assert "exceeds [8, 64]" in err.message


@pl.jit
def tensor_value_after_a_tile_loop(x: pl.Tensor[[16, 64], pl.FP32],
                                   y: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                                   out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.add(x, 1.0)
        for i in pl.range(2):
            t = pl.load(x, [i * 8, 0], [8, 64])
            y = pl.store(pl.mul(t, 3.0), [i * 8, 0], y)
        out[:] = pl.mul(v, 2.0)
    return y, out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_value_read_after_tile_statements_is_recomputed_where_it_is_read(platform):
    # Was: VerificationError after TensorToTile, "`v` is read before it is bound": the
    # value was dropped with the run that computed it and never stored.
    x = torch.randn(16, 64)
    sim = _agreeing_outputs(tensor_value_after_a_tile_loop,
                            [x, torch.zeros(16, 64), torch.zeros(16, 64)], platform)
    assert torch.equal(sim[1], x * 3.0) and torch.equal(sim[2], (x + 1.0) * 2.0)


@pl.jit
def tensor_operators_in_nested_loops(x: pl.Tensor[[32, 128], pl.FP32],
                                     out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            for j in pl.range(2):
                w = x[i * 16:(i + 1) * 16, j * 64:(j + 1) * 64]
                out[i * 16:(i + 1) * 16, j * 64:(j + 1) * 64] = pl.add(pl.mul(w, 2.0), i + j)
    return out


def test_tensor_level_operators_in_loops_of_a_block_run_per_iteration():
    # Was: LoweringError "tensor-level operators inside a loop of a kernel are not
    # supported yet" for the form the outliner's own hint suggests.
    x = torch.randn(32, 128)
    sim = _agreeing_outputs(tensor_operators_in_nested_loops, [x, torch.zeros(32, 128)],
                            "a2a3sim")
    expected = x * 2.0
    expected[:16, 64:] += 1.0
    expected[16:, :64] += 1.0
    expected[16:, 64:] += 2.0
    assert torch.equal(sim[1], expected)


@pl.jit
def tensor_operator_in_an_if_in_a_loop(x: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar[pl.INT64],
                                       out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            if n > i:
                out[:] = pl.add(x, 1.0)
    return out


def test_a_tensor_level_operator_in_an_if_in_a_loop_runs_where_the_branch_is_taken():
    # Was: LoweringError "tensor-level operators inside an `if` of a kernel are not
    # supported"; such a kernel is now lowered value by value (passes/tensor_values.py).
    x = torch.randn(16, 64)
    sim = _agreeing_outputs(tensor_operator_in_an_if_in_a_loop, [x, 1, torch.zeros(16, 64)],
                            "a2a3sim")
    assert torch.equal(sim[2], x + 1.0)


@pl.jit
def carried_tensor_value(x: pl.Tensor[[32, 64], pl.FP32],
                         out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.mul(x[0:16, :], 0.0)
        for i in pl.range(2):
            acc = pl.add(acc, x[i * 16:(i + 1) * 16, :])
        out[:] = acc
    return out


@pl.jit
def tensor_value_out_of_its_loop(x: pl.Tensor[[32, 64], pl.FP32],
                                 out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(2):
            v = pl.add(x[i * 16:(i + 1) * 16, :], 1.0)
        out[:] = v
    return out


@pl.jit
def tensor_value_after_its_input_changed(x: pl.InOut[pl.Tensor[[16, 64], pl.FP32]],
                                         out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.add(x, 1.0)
        x[:] = pl.mul(x, 2.0)
        t = pl.load(x, [0, 0], [16, 64])
        out = pl.store(t, [0, 0], out)
        out[:] = v
    return x, out


def test_a_tensor_value_that_recomputing_would_change_is_refused_at_its_line():
    with pytest.raises(LoweringError) as info:
        tensor_value_after_its_input_changed.lower(torch.zeros(16, 64), torch.zeros(16, 64))
    err = info.value
    assert err.span.file == __file__, str(err)
    assert linecache.getline(__file__, err.span.line).strip() == "out[:] = v", str(err)


@pytest.mark.parametrize("kernel, expected", [
    (carried_tensor_value, lambda x: x[:16] * 0.0 + x[:16] + x[16:]),
    (tensor_value_out_of_its_loop, lambda x: x[16:] + 1.0),
])
def test_a_tensor_value_living_across_loop_iterations_is_kept_as_a_tile(kernel, expected):
    # Was: refused ("carried around the loop", "do not leave the loop"): recomputing such a
    # value where it is read would change it; it is now one tile (passes/tensor_values.py).
    x = torch.randn(32, 64)
    sim = _agreeing_outputs(kernel, [x, torch.zeros(16, 64)], "a2a3sim")
    assert torch.equal(sim[1], expected(x))


@pl.jit
def rebound_tensor_value(x: pl.Tensor[[8, 32], pl.FP32], o1: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
                         o2: pl.Out[pl.Tensor[[8, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        v = pl.add(x, 1.0)
        o1[:] = v
        v = pl.mul(x, 2.0)
        o2[:] = v
    return o1, o2


@pl.jit
def unrolled_windows(a: pl.Tensor[[8, 64], pl.INT16], b: pl.Tensor[[8, 64], pl.INT16],
                     o: pl.Out[pl.Tensor[[8, 64], pl.INT16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for c in pl.unroll(4):
            w = a[:, c * 16:c * 16 + 16]
            v = pl.mul(w, b[:, c * 16:c * 16 + 16])
            o[:, c * 16:c * 16 + 16] = pl.shr(v, c)
    return o


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_tensor_value_name_bound_twice_in_a_block_keeps_each_value(platform):
    # Was silently wrong: both writes stored the last value bound to `v` (the tiles of a
    # run were looked up by name).
    x = torch.randn(8, 32)
    sim = _agreeing_outputs(rebound_tensor_value,
                            [x, torch.zeros(8, 32), torch.zeros(8, 32)], platform)
    assert torch.equal(sim[1], x + 1.0) and torch.equal(sim[2], x * 2.0)


def test_each_unrolled_iteration_of_a_block_writes_its_own_window_and_value():
    # Found by the control-flow fuzzer: every window got the last iteration's value.
    a = torch.randint(-100, 100, (8, 64), dtype=torch.int16)
    b = torch.randint(-100, 100, (8, 64), dtype=torch.int16)
    sim = _agreeing_outputs(unrolled_windows, [a, b, torch.zeros_like(a)], "a2a3sim")
    product = (a.int() * b.int()).to(torch.int16)
    for c in range(4):
        window = slice(c * 16, c * 16 + 16)
        assert torch.equal(sim[2][:, window], product[:, window] >> c)
