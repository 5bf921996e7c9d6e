"""Tensor values that live beyond one run of statements in a `pl.at` block, each kept as
one tile (passes/tensor_values.py), and the values such blocks hand on (outline_incore.py).

Each kernel runs on a2a3sim and through `torch_codegen` (which must agree bit for bit) and
is checked against torch.  Inputs of the matmul kernels are multiples of 1/8 in [-2, 2]:
every partial sum is exact in FP32, so the results are exact whatever the order.
"""

from __future__ import annotations

import linecache

import pytest
import torch
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.ir.errors import CapacityError, LoweringError, TypeCheckError
from pypto.ir.types import Direction
from pypto.ir.visitor import statements

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")  # small tiles
ROWS, COLS, STEP = 16, 256, 64


def _agreeing(kernel, args: list) -> list:
    """The simulator's arguments after the run, once torch_codegen gave the same bits."""
    sim, codegen = sim_and_torch(kernel, args, "a2a3sim")
    for got, want in zip(codegen, sim, strict=True):
        if isinstance(want, torch.Tensor):
            assert torch.equal(got, want)
    return sim


def _eighths(*shape: int) -> torch.Tensor:
    return (torch.randint(-16, 17, shape) / 8).to(torch.bfloat16)


def _where(err) -> str:
    assert err.span.file == __file__, str(err)
    return linecache.getline(__file__, err.span.line).strip()


@pl.jit
def two_pass_norm(x: pl.Tensor[[ROWS, COLS], pl.BF16], w: pl.Tensor[[1, COLS], pl.FP32],
                  out: pl.Out[pl.Tensor[[ROWS, COLS], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="norm"):
        sums = pl.full([1, ROWS], dtype=pl.FP32, value=0.0)
        for c in pl.range(COLS // STEP):
            xc = pl.cast(x[:, c * STEP:(c + 1) * STEP], target_type=pl.FP32)
            sums = pl.add(sums, pl.reshape(pl.row_sum(pl.mul(xc, xc)), [1, ROWS]))
        inv = pl.recip(pl.sqrt(pl.reshape(pl.add(pl.mul(sums, 1.0 / COLS), 1e-6), [ROWS, 1])))
        for c in pl.range(COLS // STEP):
            xc = pl.cast(x[:, c * STEP:(c + 1) * STEP], target_type=pl.FP32)
            y = pl.col_expand_mul(pl.row_expand_mul(xc, inv), w[:, c * STEP:(c + 1) * STEP])
            out = pl.assemble(out, pl.cast(y, target_type=pl.BF16), [0, c * STEP])
    return out


def test_a_sum_carried_around_a_loop_through_a_reshape_is_one_tile():
    x, w = torch.randn(ROWS, COLS).bfloat16(), torch.randn(1, COLS)
    got = _agreeing(two_pass_norm, [x, w, torch.zeros(ROWS, COLS, dtype=torch.bfloat16)])[2]
    xf = x.float()
    expected = xf * torch.rsqrt((xf * xf).mean(1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(got.float(), expected, rtol=1e-2, atol=1e-2)


@pl.jit
def k_looped_product(a: pl.Tensor[[16, 128], pl.BF16], b: pl.Tensor[[128, 128], pl.BF16],
                     c: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    for n0 in pl.parallel(0, 128, 64):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="product"):
            acc = pl.create_tensor([16, 64], dtype=pl.FP32)
            for kb in pl.pipeline(0, 4, stage=2):
                k0 = kb * 32
                if k0 == 0:
                    acc = pl.matmul(a[:, k0:k0 + 32], b[k0:k0 + 32, n0:n0 + 64],
                                    out_dtype=pl.FP32)
                else:
                    acc = pl.matmul_acc(acc, a[:, k0:k0 + 32], b[k0:k0 + 32, n0:n0 + 64])
            c = pl.assemble(c, acc, [0, n0])
    return c


def test_an_if_choosing_matmul_or_matmul_acc_accumulates_into_one_acc_tile():
    a, b = _eighths(16, 128), _eighths(128, 128)
    got = _agreeing(k_looped_product, [a, b, torch.zeros(16, 128)])[2]
    assert torch.equal(got, a.float() @ b.float())
    kernel = k_looped_product.lower(a, b, torch.zeros(16, 128)).functions[0]
    created = [s.targets[0] for s in statements(kernel.body)
               if getattr(getattr(s, "value", None), "op", "") == "create_tile"]
    assert [(v.name, v.type.memory.name) for v in created] == [("acc", "Acc")]


@pl.jit
def gated_product(x: pl.Tensor[[16, 128], pl.BF16], wg: pl.Tensor[[128, 128], pl.BF16],
                  u: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    for o0 in pl.parallel(0, 128, 64):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gate"):
            g = pl.create_tensor([16, 64], dtype=pl.FP32)
            for kb in pl.range(4):
                if kb == 0:
                    g = pl.matmul(x[:, 0:32], wg[0:32, o0:o0 + 64], out_dtype=pl.FP32)
                else:
                    g = pl.matmul_acc(g, x[:, kb * 32:kb * 32 + 32],
                                      wg[kb * 32:kb * 32 + 32, o0:o0 + 64])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gated"):
            sigmoid = pl.recip(pl.add(pl.exp(pl.neg(g)), 1.0))
            out = pl.assemble(out, pl.mul(pl.mul(g, sigmoid), u[:, o0:o0 + 64]), [0, o0])
    return out


def test_a_value_computed_in_a_loop_of_a_block_is_handed_to_the_next_block():
    x, wg, u = _eighths(16, 128), _eighths(128, 128), torch.randn(16, 128)
    got = _agreeing(gated_product, [x, wg, u, torch.zeros(16, 128)])[3]
    g = x.float() @ wg.float()
    torch.testing.assert_close(got, torch.nn.functional.silu(g) * u, rtol=1e-5, atol=1e-5)
    program = gated_product.lower(x, wg, u, torch.zeros(16, 128))
    gate = next(f for f in program.functions if f.name.endswith("_gate"))
    outputs = [p.var.name for p in gate.params if p.direction is Direction.Out]
    assert outputs == ["g"]


@pl.jit
def biased_product(a: pl.Tensor[[16, 128], pl.BF16], bias: pl.Tensor[[16, 128], pl.BF16],
                   w: pl.Tensor[[128, 128], pl.BF16], r: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    for ob in pl.parallel(0, 4, 2):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="biased"):
            for oi in pl.range(ob, ob + 2):
                o0 = oi * 32
                acc = pl.create_tensor([16, 32], dtype=pl.FP32)
                for kb in pl.range(4):
                    k0 = kb * 32
                    if k0 == 0:
                        acc = pl.matmul(a[:, k0:k0 + 32], w[k0:k0 + 32, o0:o0 + 32],
                                        out_dtype=pl.FP32)
                    else:
                        acc = pl.matmul_acc(acc, a[:, k0:k0 + 32], w[k0:k0 + 32, o0:o0 + 32])
                resid = pl.cast(bias[:, o0:o0 + 32], target_type=pl.FP32)
                r = pl.assemble(r, pl.add(acc, resid), [0, o0])
    return r


def test_a_cube_result_of_a_nested_loop_reaches_the_vector_unit_through_memory():
    a, bias, w = _eighths(16, 128), _eighths(16, 128), _eighths(128, 128)
    got = _agreeing(biased_product, [a, bias, w, torch.zeros(16, 128)])[3]
    assert torch.equal(got, a.float() @ w.float() + bias.float())
    kernel = biased_product.lower(a, bias, w, torch.zeros(16, 128)).functions[0]
    # acc: a scratch tensor the cube writes and the vector unit reads back, per iteration
    directions = {p.var.name: p.direction for p in kernel.params}
    assert (directions["r"], directions["acc"]) == (Direction.Out, Direction.InOut)


@pl.jit
def product_of_scaled_blocks(a: pl.Tensor[[16, 64], pl.BF16], b: pl.Tensor[[32, 32], pl.BF16],
                             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.create_tensor([16, 32], dtype=pl.FP32)
        for kb in pl.range(2):
            scaled = pl.cast(pl.mul(a[:, kb * 32:kb * 32 + 32], 2.0), target_type=pl.BF16)
            if kb == 0:
                acc = pl.matmul(scaled, b, out_dtype=pl.FP32)
            else:
                acc = pl.matmul_acc(acc, scaled, b)
        c = pl.assemble(c, acc, [0, 0])
    return c


def test_a_vector_result_in_a_loop_reaches_the_cube_through_memory():
    a, b = _eighths(16, 64), _eighths(32, 32)
    got = _agreeing(product_of_scaled_blocks, [a, b, torch.zeros(16, 32)])[2]
    expected = (2 * a[:, :32].float()) @ b.float() + (2 * a[:, 32:].float()) @ b.float()
    assert torch.equal(got, expected)


HEAD = 32


@pl.jit
def rotate_halves(q: pl.Tensor[[2, 8 * HEAD], pl.FP32], at: pl.Tensor[[2], pl.INT32],
                  cos: pl.Tensor[[8, HEAD], pl.FP32], sin: pl.Tensor[[8, HEAD], pl.FP32],
                  qo: pl.Out[pl.Tensor[[32, HEAD], pl.BF16]]):
    for b in pl.parallel(2):
        p = pl.read(at, [b])
        c_lo = cos[p:p + 1, 0:HEAD // 2]
        c_hi = cos[p:p + 1, HEAD // 2:HEAD]
        s_lo = sin[p:p + 1, 0:HEAD // 2]
        s_hi = sin[p:p + 1, HEAD // 2:HEAD]
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rotate"):
            for h in pl.range(2):
                heads = pl.reshape(q[b:b + 1, h * 4 * HEAD:(h + 1) * 4 * HEAD], [4, HEAD])
                lo = heads[:, 0:HEAD // 2]
                hi = heads[:, HEAD // 2:HEAD]
                r_lo = pl.sub(pl.col_expand_mul(lo, c_lo), pl.col_expand_mul(hi, s_lo))
                r_hi = pl.add(pl.col_expand_mul(hi, c_hi), pl.col_expand_mul(lo, s_hi))
                row = b * 16 + h * 8
                qo = pl.assemble(qo, pl.cast(r_lo, target_type=pl.BF16), [row, 0])
                qo = pl.assemble(qo, pl.cast(r_hi, target_type=pl.BF16), [row, HEAD // 2])
                pad = pl.cast(pl.full([4, HEAD], dtype=pl.FP32, value=0.0), target_type=pl.BF16)
                qo = pl.assemble(qo, pad, [row + 4, 0])
    return qo


def test_a_reshaped_tensor_is_sliced_as_a_tile_and_pl_full_pads_the_rest():
    q, at = torch.randn(2, 8 * HEAD), torch.tensor([3, 5], dtype=torch.int32)
    cos, sin = torch.randn(8, HEAD), torch.randn(8, HEAD)
    got = _agreeing(rotate_halves, [q, at, cos, sin, torch.full((32, HEAD), 7.0).bfloat16()])[4]
    expected = torch.full((32, HEAD), 7.0)
    half = HEAD // 2
    for b in range(2):
        p = int(at[b])
        for h in range(2):
            heads = q[b, h * 4 * HEAD:(h + 1) * 4 * HEAD].reshape(4, HEAD)
            lo, hi = heads[:, :half], heads[:, half:]
            row = b * 16 + h * 8
            expected[row:row + 4, :half] = lo * cos[p, :half] - hi * sin[p, :half]
            expected[row:row + 4, half:] = hi * cos[p, half:] + lo * sin[p, half:]
            expected[row + 4:row + 8] = 0.0
    assert torch.equal(got, expected.bfloat16())


@pl.jit
def filled_then_added(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.add(x, pl.full([16, 64], dtype=pl.FP32, value=2.5)), [0, 0])
    return out


def test_pl_full_in_a_block_is_a_tensor_value():
    printed = str(filled_then_added.frontend(torch.zeros(16, 64), torch.zeros(16, 64)))
    assert "pl.tensor.full([16, 64], pl.FP32, 2.5)" in printed
    x = torch.randn(16, 64)
    assert torch.equal(_agreeing(filled_then_added, [x, torch.zeros(16, 64)])[1], x + 2.5)


@pl.jit
def tile_filled_in_a_block(x: pl.Tensor[[16, 64], pl.FP32],
                           out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(pl.load(x, [0, 0], [16, 64]), pl.tile.full([16, 64], pl.FP32, 2.5))
        out = pl.store(t, [0, 0], out)
    return out


def test_pl_tile_full_in_a_block_is_a_tile():
    x = torch.randn(16, 64)
    assert torch.equal(_agreeing(tile_filled_in_a_block, [x, torch.zeros(16, 64)])[1], x + 2.5)


# -- what stays refused, at the user's line


@pl.jit.incore
def product_of_a_computed_value(a: pl.Tensor[[16, 32], pl.BF16], b: pl.Tensor[[32, 32], pl.BF16],
                                c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    # An incore kernel: no pl.at block hands the scaled value to the cube through memory.
    acc = pl.create_tensor([16, 32], dtype=pl.FP32)
    for _ in pl.range(2):
        scaled = pl.mul(a, 2.0)
        acc = pl.matmul(scaled, b, out_dtype=pl.FP32)
    c = pl.assemble(c, acc, [0, 0])
    return c


@pl.jit
def accumulate_into_an_input(acc0: pl.Tensor[[16, 32], pl.FP32], a: pl.Tensor[[16, 32], pl.BF16],
                             b: pl.Tensor[[32, 32], pl.BF16],
                             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul_acc(acc0, a, b)
        c = pl.assemble(c, acc, [0, 0])
    return c


@pl.jit
def rebinds_an_input(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _ in pl.range(2):
            x = pl.add(x, 1.0)
        out = pl.assemble(out, x, [0, 0])
    return out


@pl.jit
def transposes_a_value(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for _ in pl.range(2):
            v = pl.add(x, 1.0)
        out = pl.assemble(out, pl.transpose(v, 0, 1), [0, 0])
    return out


@pl.jit
def too_big_to_keep(x: pl.Tensor[[256, 256], pl.FP32], out: pl.Out[pl.Tensor[[256, 256], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.full([256, 256], dtype=pl.FP32, value=0.0)
        for _ in pl.range(2):
            acc = pl.add(acc, x)
        out = pl.assemble(out, acc, [0, 0])
    return out


@pytest.mark.parametrize("kernel, shapes, error, line, message", [
    (product_of_a_computed_value, [(16, 32), (32, 32), (16, 32)], LoweringError,
     "acc = pl.matmul(scaled, b, out_dtype=pl.FP32)", "the cube reads its operands from"),
    (accumulate_into_an_input, [(16, 32), (16, 32), (32, 32), (16, 32)], LoweringError,
     "acc = pl.matmul_acc(acc0, a, b)", "has not computed with pl.matmul"),
    (rebinds_an_input, [(16, 32), (16, 32)], LoweringError, "x = pl.add(x, 1.0)",
     "names a tensor in global memory"),
    (transposes_a_value, [(16, 32), (32, 16)], LoweringError,
     "out = pl.assemble(out, pl.transpose(v, 0, 1), [0, 0])", "tensor-level pl.transpose"),
    (too_big_to_keep, [(256, 256), (256, 256)], CapacityError,
     "acc = pl.full([256, 256], dtype=pl.FP32, value=0.0)", "`acc`"),
])
def test_what_a_kernel_cannot_keep_as_tiles_is_refused_at_its_line(kernel, shapes, error, line,
                                                                    message):
    dtypes = [torch.bfloat16 if (kernel, i) in _BF16 else torch.float32 for i in range(len(shapes))]
    args = [torch.zeros(s, dtype=d) for s, d in zip(shapes, dtypes, strict=True)]
    with pytest.raises(error) as info:
        kernel.lower(*args)
    assert _where(info.value) == line
    assert message in info.value.message


_BF16 = {(product_of_a_computed_value, 0), (product_of_a_computed_value, 1),
         (accumulate_into_an_input, 1), (accumulate_into_an_input, 2)}


def test_matmul_acc_does_not_mix_a_tile_accumulator_with_tensors():
    @pl.jit.incore
    def mixed(a: pl.Tensor[[16, 32], pl.BF16], b: pl.Tensor[[32, 32], pl.BF16],
              c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        acc = pl.create_tile([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Acc)
        acc = pl.matmul_acc(acc, a, b)
        c = pl.store(acc, [0, 0], c)
        return c

    with pytest.raises(TypeCheckError, match="works on tiles, or on tensors in a pl.at block"):
        mixed.lower(torch.zeros(16, 32, dtype=torch.bfloat16),
                    torch.zeros(32, 32, dtype=torch.bfloat16), torch.zeros(16, 32))

