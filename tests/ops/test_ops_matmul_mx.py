"""The MX block-scaled product (pl.matmul_mx, pl.tile.matmul_mx / _acc / _bias: pto-isa's
TMATMUL_MX on A5): FP8 data, one FP8E8M0 scale per 32 elements along K, an FP32 result.
Bit for bit on a5sim against the torch semantics and against a reference written here from
pto-isa's CPU model's definition (cpu/TMatmul.hpp, TMatmulMX: per element an FP32 sum from
0, each k's exact term added in float64 and the sum rounded to FP32); the FP4 x FP8 form
through an explicit pl.cast; what is refused, at its line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pypto.language as pl
from pypto.debug import torch_runtime
from pypto.ir import LoweringError, TypeCheckError, formats
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

A5 = RunConfig(platform="a5sim")
M, K, N = 16, 128, 32
G = K // 32


def e8m0_values(codes: torch.Tensor) -> np.ndarray:
    """2^(e - 127) per code (0xFF: NaN), from the format's definition."""
    e = codes.view(torch.uint8).numpy().astype(np.float64)
    return np.where(e == 255, np.nan, np.exp2(e - 127))


def reference(a, sa, b, sb, k: int | None = None, acc=None, bias=None) -> np.ndarray:
    """TMatmulMX of pto-isa's CPU model, element by element in Python floats (IEEE double)
    and numpy float32 roundings: s = float32(double(s) + a * b * (sa * sb)) for k in order,
    then acc + s or s + bias (one FP32 add)."""
    av, bv = a.double().numpy(), b.double().numpy()  # FP8 values (torch's own decoding)
    sav, sbv = e8m0_values(sa), e8m0_values(sb)
    k = av.shape[1] if k is None else k
    out = np.empty((av.shape[0], bv.shape[1]), dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(av.shape[0]):
            for j in range(bv.shape[1]):
                s = np.float32(0.0)
                for kk in range(k):
                    term = float(av[i, kk]) * float(bv[kk, j]) * (float(sav[i, kk // 32]) *
                                                                  float(sbv[kk // 32, j]))
                    s = np.float32(float(s) + term)
                if acc is not None:
                    s = np.float32(acc[i, j]) + s
                if bias is not None:
                    s = s + np.float32(bias[0, j])
                out[i, j] = s
    return out


def bits(x) -> np.ndarray:
    """FP32 bit patterns, every NaN the canonical one (0x7FC00000), as the cube holds it."""
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.isnan(x), np.int32(0x7FC00000), x.view(np.int32))


def operands(seed: int, lhs=torch.float8_e4m3fn, rhs=torch.float8_e4m3fn, m=M, k=K, n=N):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 3).to(lhs)
    b = (torch.randn(k, n, generator=g) * 3).to(rhs)
    sa = torch.randint(110, 140, (m, k // 32), generator=g, dtype=torch.uint8)
    sb = torch.randint(110, 140, (k // 32, n), generator=g, dtype=torch.uint8)
    return a, sa.view(torch.float8_e8m0fnu), b, sb.view(torch.float8_e8m0fnu)


def _mx_kernel(form: str):
    """One MX product of [16, 128] x [128, 32] on A5: operands loaded into Mat and moved to
    Left / LeftScale / Right / RightScale; `form` plain, acc (onto a first product of the
    `p*` operands) or bias."""
    if form == "plain":
        @pl.jit.incore
        def kernel(a: pl.Tensor, sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor,
                   c: pl.Out[pl.Tensor]):
            x = pl.move(pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)
            xs = pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat),
                         pl.Mem.LeftScale)
            y = pl.move(pl.load(b, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
            ys = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat),
                         pl.Mem.RightScale)
            c = pl.store(pl.matmul_mx(x, xs, y, ys), [0, 0], c)
            return c
    elif form == "acc":
        @pl.jit.incore
        def kernel(pa: pl.Tensor, psa: pl.Tensor, pb: pl.Tensor, psb: pl.Tensor,
                   a: pl.Tensor, sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor,
                   c: pl.Out[pl.Tensor]):
            x = pl.move(pl.load(pa, [0, 0], [16, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)
            xs = pl.move(pl.load(psa, [0, 0], [16, 4], target_memory=pl.Mem.Mat),
                         pl.Mem.LeftScale)
            y = pl.move(pl.load(pb, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
            ys = pl.move(pl.load(psb, [0, 0], [4, 32], target_memory=pl.Mem.Mat),
                         pl.Mem.RightScale)
            acc = pl.tile.matmul_mx(x, xs, y, ys)
            x2 = pl.move(pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)
            xs2 = pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat),
                          pl.Mem.LeftScale)
            y2 = pl.move(pl.load(b, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
            ys2 = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat),
                          pl.Mem.RightScale)
            acc = pl.tile.matmul_mx_acc(acc, x2, xs2, y2, ys2)
            c = pl.store(acc, [0, 0], c)
            return c
    else:
        @pl.jit.incore
        def kernel(a: pl.Tensor, sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor,
                   bias: pl.Tensor, c: pl.Out[pl.Tensor]):
            x = pl.move(pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)
            xs = pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat),
                         pl.Mem.LeftScale)
            y = pl.move(pl.load(b, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
            ys = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat),
                         pl.Mem.RightScale)
            row = pl.move(pl.load(bias, [0, 0], [1, 32], target_memory=pl.Mem.Mat),
                          pl.Mem.Bias)
            c = pl.store(pl.tile.matmul_mx_bias(x, xs, y, ys, row), [0, 0], c)
            return c
    return kernel


PLAIN, ACC, BIAS = (_mx_kernel(f) for f in ("plain", "acc", "bias"))


@pytest.mark.parametrize(("lhs", "rhs"), [
    (torch.float8_e4m3fn, torch.float8_e4m3fn), (torch.float8_e4m3fn, torch.float8_e5m2),
    (torch.float8_e5m2, torch.float8_e4m3fn), (torch.float8_e5m2, torch.float8_e5m2)])
def test_the_product_is_the_cpu_models_bit_for_bit(lhs, rhs):
    """Every pairing pto-isa's A5 TMATMUL_MX takes: one scale per 32 elements of K (four
    groups here), each term exact in float64, the sum rounded to FP32 after each add."""
    a, sa, b, sb = operands(1, lhs, rhs)
    c = torch.empty(M, N)
    PLAIN(a, sa, b, sb, c, config=A5)
    np.testing.assert_array_equal(bits(c), bits(torch_runtime.tile_matmul_mx(a, sa, b, sb)))
    np.testing.assert_array_equal(bits(c), bits(reference(a, sa, b, sb)))
    # and close to the exact product of the dequantized operands
    exact = (a.double() * torch.from_numpy(np.repeat(e8m0_values(sa), 32, axis=1))) @ (
        b.double() * torch.from_numpy(np.repeat(e8m0_values(sb), 32, axis=0)))
    torch.testing.assert_close(c.double(), exact, rtol=1e-5, atol=1e-3)


def test_each_group_of_32_takes_its_own_scales():
    """A one in every group of K and scales 2^g (lhs) and 2^(2g) (rhs) for group g: each
    element sums 1 + 8 + 64 + 512; a scale per element or per tile would not."""
    a = torch.zeros(M, K).to(torch.float8_e4m3fn)
    b = torch.zeros(K, N).to(torch.float8_e4m3fn)
    a[:, ::32] = 1.0
    b[::32, :] = 1.0
    sa = torch.tensor([127 + g for g in range(G)], dtype=torch.uint8).repeat(M, 1)
    sb = torch.tensor([127 + 2 * g for g in range(G)], dtype=torch.uint8)[:, None].repeat(1, N)
    c = torch.empty(M, N)
    PLAIN(a, sa.view(torch.float8_e8m0fnu), b, sb.view(torch.float8_e8m0fnu), c, config=A5)
    assert torch.equal(c, torch.full((M, N), 1.0 + 8 + 64 + 512))


def test_the_acc_form_adds_acc_after_the_sum_not_before():
    """acc = 2^-30, then the terms +1 and -1: summed from zero (the CPU model's order) they
    cancel and acc survives, 2^-30; summed from acc, (2^-30 + 1) - 1 would be 0."""
    one = torch.ones(M, K).to(torch.float8_e4m3fn)
    zeros_a, zeros_b = torch.zeros(M, K), torch.zeros(K, N)
    pa, pb = zeros_a.clone(), zeros_b.clone()
    pa[:, 0], pb[0, :] = 1.0, 1.0
    psa = torch.full((M, G), 127 - 30, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    unit_a = torch.full((M, G), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    unit_b = torch.full((G, N), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    a, b = zeros_a.clone(), zeros_b.clone()
    a[:, 0], a[:, 1], b[0, :], b[1, :] = 1.0, 1.0, 1.0, -1.0
    args = [pa.to(torch.float8_e4m3fn), psa, pb.to(torch.float8_e4m3fn), unit_b,
            a.to(torch.float8_e4m3fn), unit_a, b.to(torch.float8_e4m3fn), unit_b]
    c = torch.empty(M, N)
    ACC(*args, c, config=A5)
    assert torch.equal(c, torch.full((M, N), 2.0**-30))
    acc = torch_runtime.tile_matmul_mx(*args[:4])
    assert torch.equal(c, torch_runtime.tile_matmul_mx_acc(acc, *args[4:]))
    np.testing.assert_array_equal(bits(c), bits(reference(*args[4:], acc=acc.numpy())))
    del one


def test_random_acc_and_bias_forms_bit_for_bit():
    pa, psa, pb, psb = operands(2)
    a, sa, b, sb = operands(3, torch.float8_e5m2)
    c = torch.empty(M, N)
    ACC(pa, psa, pb, psb, a, sa, b, sb, c, config=A5)
    acc = torch_runtime.tile_matmul_mx(pa, psa, pb, psb)
    np.testing.assert_array_equal(bits(c), bits(reference(a, sa, b, sb, acc=acc.numpy())))
    np.testing.assert_array_equal(bits(c),
                                  bits(torch_runtime.tile_matmul_mx_acc(acc, a, sa, b, sb)))
    bias = torch.randn(1, N) * 100
    bias[0, :4] = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0])
    c = torch.empty(M, N)
    BIAS(a, sa, b, sb, bias, c, config=A5)
    np.testing.assert_array_equal(bits(c), bits(reference(a, sa, b, sb, bias=bias.numpy())))
    np.testing.assert_array_equal(bits(c),
                                  bits(torch_runtime.tile_matmul_mx_bias(a, sa, b, sb, bias)))


def test_the_bias_comes_after_the_last_k_step():
    """Terms +1 and -1 and a bias of 2^-30: the result is 2^-30 (bias first: 0)."""
    a, b = torch.zeros(M, K), torch.zeros(K, N)
    a[:, 0], a[:, 1], b[0, :], b[1, :] = 1.0, 1.0, 1.0, -1.0
    unit_a = torch.full((M, G), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    unit_b = torch.full((G, N), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    c = torch.empty(M, N)
    BIAS(a.to(torch.float8_e4m3fn), unit_a, b.to(torch.float8_e4m3fn), unit_b,
         torch.full((1, N), 2.0**-30), c, config=A5)
    assert torch.equal(c, torch.full((M, N), 2.0**-30))


def test_nan_scales_and_data_give_the_canonical_nan():
    """E8M0's 0xFF is NaN: every element its scale touches is NaN; E4M3FN's NaN (0x7F)
    too.  (pto-isa's CPU model reads those codes as 2^128 and 480: docs/numerics.md.)"""
    a, sa, b, sb = operands(4)
    sa = sa.view(torch.uint8).clone()
    sa[3, 1] = 0xFF
    a = a.view(torch.uint8).clone()
    a[5, 70] = 0x7F
    sa, a = sa.view(torch.float8_e8m0fnu), a.view(torch.float8_e4m3fn)
    c = torch.empty(M, N)
    PLAIN(a, sa, b, sb, c, config=A5)
    assert torch.isnan(c[3]).all() and torch.isnan(c[5]).all()
    assert not torch.isnan(c[[0, 1, 2, 4, 6]]).any()
    np.testing.assert_array_equal(bits(c), bits(reference(a, sa, b, sb)))
    np.testing.assert_array_equal(bits(c), bits(torch_runtime.tile_matmul_mx(a, sa, b, sb)))


@pl.jit.incore
def _short_k(a: pl.Tensor, sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor, c: pl.Out[pl.Tensor]):
    # K valid 112 of 128 (the last group holds 16 elements): the padding is 448 (pad max),
    # which the product must not read.
    x = pl.move(pl.load(a, [0, 0], [16, 128], valid_shape=[16, 112], target_memory=pl.Mem.Mat,
                        pad_value=pl.PadValue.max), pl.Mem.Left)
    xs = pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat), pl.Mem.LeftScale)
    y = pl.move(pl.load(b, [0, 0], [128, 32], valid_shape=[112, 32],
                        target_memory=pl.Mem.Mat, pad_value=pl.PadValue.max), pl.Mem.Right)
    ys = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat), pl.Mem.RightScale)
    c = pl.store(pl.matmul_mx(x, xs, y, ys), [0, 0], c)
    return c


def test_k_is_the_lhs_valid_columns():
    """The CPU model's K is the lhs's valid columns: the padding past them takes no part."""
    a, sa, b, sb = operands(5)
    c = torch.empty(M, N)
    _short_k(a[:, :112].contiguous(), sa, b[:112].contiguous(), sb, c, config=A5)
    np.testing.assert_array_equal(bits(c), bits(reference(a, sa, b, sb, k=112)))
    np.testing.assert_array_equal(bits(c), bits(torch_runtime.tile_matmul_mx(a, sa, b, sb,
                                                                             k=112)))


@pl.jit.incore
def _fp4_by_fp8(a: pl.Tensor[[16, 128], pl.FP4], sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor,
                c: pl.Out[pl.Tensor]):
    # upstream's FP4 x FP8 form: the FP4 lhs cast to FP8E4M3FN first (FP4 -> BF16 -> FP32 ->
    # FP8E4M3FN, exact), then moved to Left
    x = pl.move(pl.cast(pl.load(a, [0, 0], [16, 128]), pl.FP8E4M3FN), pl.Mem.Left)
    xs = pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat), pl.Mem.LeftScale)
    y = pl.move(pl.load(b, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
    ys = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat), pl.Mem.RightScale)
    c = pl.store(pl.matmul_mx(x, xs, y, ys), [0, 0], c)
    return c


def test_the_fp4_by_fp8_form_casts_the_lhs_first():
    _, sa, b, sb = operands(6)
    codes = torch.randint(0, 16, (M, K), generator=torch.Generator().manual_seed(7),
                          dtype=torch.uint8).numpy()
    a = torch.from_numpy(formats.pack_nibbles(codes)).view(torch.float4_e2m1fn_x2)
    c = torch.empty(M, N)
    _fp4_by_fp8(a, sa, b, sb, c, config=A5)
    a8 = torch.from_numpy(formats.FP4_VALUES[codes]).to(torch.float8_e4m3fn)
    assert torch.equal(a8.double(), torch.from_numpy(formats.FP4_VALUES[codes]))  # exact
    np.testing.assert_array_equal(bits(c), bits(reference(a8, sa, b, sb)))


def test_the_program_round_trips_through_the_printer():
    lowered = PLAIN.lower(*operands(8), torch.empty(M, N), config=A5)
    text = lowered.as_python()
    assert "pl.Tile[[16, 4], pl.FP8E8M0, pl.Mem.LeftScale" in text, text
    assert "pl.tile.matmul_mx(" in text
    assert pl.parse(text).as_python() == text


# -- refused at the line --------------------------------------------------------------------

_KERNEL = """
import pypto.language as pl


@pl.jit.incore
def kernel(a: pl.Tensor, sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor, c: pl.Out[pl.Tensor]):
    x = {x}
    xs = {xs}
    y = pl.move(pl.load(b, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)
    ys = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat), pl.Mem.RightScale)
    c = pl.store({product}, [0, 0], c)
    return c
"""
_X = "pl.move(pl.load(a, [0, 0], [16, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)"
_XS = "pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat), pl.Mem.LeftScale)"
_PRODUCT = "pl.matmul_mx(x, xs, y, ys)"

_REFUSED = {
    # (x, xs, product, lhs dtype, scale dtype, error class, message, the line's text)
    "fp16_data": (_X, _XS, _PRODUCT, torch.float16, torch.float8_e8m0fnu, TypeCheckError,
                  "lhs is FP16; MX data tiles are FP8E4M3FN, FP8E5M2", "c = pl.store"),
    "scales_of_another_dtype": (
        _X, _XS, _PRODUCT, torch.float8_e4m3fn, torch.uint8, TypeCheckError,
        "pl.move to LeftScale takes FP8E8M0 block scales, got a UINT8 tile", "xs = "),
    "scales_in_left": (
        _X, "pl.move(pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat), pl.Mem.Left)",
        _PRODUCT, torch.float8_e4m3fn, torch.float8_e8m0fnu, LoweringError,
        "reads `lhs_scale` (xs) from Left, but it must be in LeftScale", "c = pl.store"),
    "scales_not_moved": (
        _X, "pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat)", _PRODUCT,
        torch.float8_e4m3fn, torch.float8_e8m0fnu, LoweringError,
        "reads `lhs_scale` (xs) from Mat, but it must be in LeftScale", "c = pl.store"),
    "wrong_scale_shape": (
        _X, "pl.move(pl.load(sa, [0, 0], [16, 2], target_memory=pl.Mem.Mat), pl.Mem.LeftScale)",
        _PRODUCT, torch.float8_e4m3fn, torch.float8_e8m0fnu, TypeCheckError,
        "lhs_scale must be a [16, 4] tile", "c = pl.store"),
    "a_short_m": (
        "pl.move(pl.load(a, [0, 0], [8, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)",
        "pl.move(pl.load(sa, [0, 0], [8, 4], target_memory=pl.Mem.Mat), pl.Mem.LeftScale)",
        _PRODUCT, torch.float8_e4m3fn, torch.float8_e8m0fnu, TypeCheckError,
        "M a multiple of 16, K of 64 and N of 32", "c = pl.store"),
    "a_valid_k_leaving_a_group_empty": (
        "pl.move(pl.load(a, [0, 0], [16, 128], valid_shape=[16, 96], target_memory=pl.Mem.Mat),"
        " pl.Mem.Left)", _XS, _PRODUCT, torch.float8_e4m3fn, torch.float8_e8m0fnu,
        TypeCheckError, "a valid K of 96 in a K of 128 leaves block scales without data",
        "c = pl.store"),
}


@pytest.mark.parametrize("case", list(_REFUSED))
def test_misuses_are_refused_at_their_line(case):
    from located_errors import raised_by

    x, xs, product, dtype, scale_dtype, cls, message, line = _REFUSED[case]
    a = torch.zeros(M, K).to(dtype) if dtype.is_floating_point else torch.zeros(M, K)
    b = torch.zeros(K, N).to(torch.float8_e4m3fn)
    sa = torch.zeros(M, G, dtype=torch.uint8).view(scale_dtype)
    sb = torch.zeros(G, N, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    error, lines = raised_by(_KERNEL.format(x=x, xs=xs, product=product),
                             lambda ns: ns["kernel"].lower(a, sa, b, sb, torch.empty(M, N),
                                                           config=A5), cls)
    assert message in str(error), str(error)
    assert lines[error.span.line - 1].strip().startswith(line), lines[error.span.line - 1]


def test_an_fp4_lhs_is_refused_with_the_cast_it_needs():
    from located_errors import raised_by

    source = _KERNEL.format(x="pl.move(pl.load(a, [0, 0], [16, 128]), pl.Mem.Left)", xs=_XS,
                            product=_PRODUCT).replace("(a: pl.Tensor,",
                                                      "(a: pl.Tensor[[16, 128], pl.FP4],")
    a = torch.zeros(M, K // 2, dtype=torch.uint8)
    b = torch.zeros(K, N).to(torch.float8_e4m3fn)
    sa = torch.zeros(M, G, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    sb = torch.zeros(G, N, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    error, _ = raised_by(source, lambda ns: ns["kernel"].lower(a, sa, b, sb, torch.empty(M, N),
                                                                config=A5), TypeCheckError)
    assert "not supported (upstream's rule: native FP4 x FP4 is not)" in str(error)
    assert "pl.cast the lhs to pl.FP8E4M3FN first" in str(error)


def test_ascend910b_has_no_mx_product():
    """A2/A3 has no TMATMUL_MX (pto-isa has it for A5 only) and no MX scale buffers: a move
    into one is refused at its line, and so is the product (scales from anywhere else)."""
    from located_errors import raised_by

    a, sa, b, sb = operands(9)
    with pytest.raises(LoweringError) as info:
        PLAIN.lower(a, sa, b, sb, torch.empty(M, N), config=RunConfig(platform="a2a3sim"))
    message = str(info.value)
    assert "pl.move to LeftScale: Ascend910B has no LeftScale buffer" in message, message
    assert "test_ops_matmul_mx.py:" in message
    source = _KERNEL.format(x=_X, xs="pl.load(sa, [0, 0], [16, 4], target_memory=pl.Mem.Mat)",
                            product=_PRODUCT).replace(
        "    ys = pl.move(pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat), "
        "pl.Mem.RightScale)", "    ys = pl.load(sb, [0, 0], [4, 32], target_memory=pl.Mem.Mat)")
    error, lines = raised_by(source, lambda ns: ns["kernel"].lower(
        a, sa, b, sb, torch.empty(M, N), config=RunConfig(platform="a2a3sim")), LoweringError)
    assert "pl.tile.matmul_mx is TMATMUL_MX, an instruction Ascend910B does not have" in \
        str(error), str(error)
    assert lines[error.span.line - 1].strip().startswith("c = pl.store")


def test_tensors_are_refused_naming_the_tile_form():
    @pl.jit
    def on_tensors(a: pl.Tensor, sa: pl.Tensor, b: pl.Tensor, sb: pl.Tensor,
                   c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.matmul_mx(a, sa, b, sb)
        return c

    with pytest.raises(TypeCheckError, match="pl.tile.matmul_mx multiplies tiles; lhs is"):
        on_tensors.lower(*operands(10), torch.empty(M, N), config=A5)


def test_device_code_refuses_the_mx_product_saying_why():
    """Generating device code needs no compiler: the refusal names the product's line."""
    from pypto.codegen.cpp import generate
    from pypto.compiler import lower
    from pypto.platform import get_platform

    a5cpu = get_platform("a5cpu")
    program = PLAIN.frontend(*operands(11), torch.empty(M, N))
    with pytest.raises(LoweringError) as info:
        generate(lower(program, a5cpu), platform=a5cpu)
    message = str(info.value)
    assert "pl.tile.matmul_mx has no device code" in message, message
    assert "reads FP8E4M3FN's NaN codes as +-480" in message
    assert "test_ops_matmul_mx.py:" in message


# -- the CPU model itself: pto-isa's TMATMUL_MX on the same codes ----------------------------

_CPU_MODEL_PROBE = r"""
#include <cstdint>
#include <cstdio>
#include <pto/pto-inst.hpp>
using namespace pto;
static const uint8_t A_[16 * 128] = {%(a)s};
static const uint8_t B_[128 * 32] = {%(b)s};
static const uint8_t SA_[16 * 4] = {%(sa)s};
static const uint8_t SB_[4 * 32] = {%(sb)s};
static const float ACC_[16 * 32] = {%(acc)s};
static const float BIAS_[32] = {%(bias)s};
template <typename T> static void show(T &t) {
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 32; ++j) std::printf("%%a\n", double(t.GetElement(i, j)));
}
int main() {
    TileLeft<float8_e4m3_t, 16, 128> a;
    TileRight<float8_e5m2_t, 128, 32> b;
    TileLeftScale<float8_e8m0_t, 16, 4> sa;
    TileRightScale<float8_e8m0_t, 4, 32> sb;
    TileAcc<float, 16, 32> c, acc, out;
    Tile<TileType::Bias, float, 1, 32> bias;
    TASSIGN(a, 0x0); TASSIGN(b, 0x0); TASSIGN(sa, 0x0); TASSIGN(sb, 0x0);
    TASSIGN(c, 0x0); TASSIGN(acc, 0x800); TASSIGN(out, 0x1000); TASSIGN(bias, 0x0);
    for (int i = 0; i < 16; ++i)
        for (int k = 0; k < 128; ++k) a.SetElement(i, k, float8_e4m3_t::FromRaw(A_[i * 128 + k]));
    for (int k = 0; k < 128; ++k)
        for (int j = 0; j < 32; ++j) b.SetElement(k, j, float8_e5m2_t::FromRaw(B_[k * 32 + j]));
    for (int i = 0; i < 16; ++i)
        for (int g = 0; g < 4; ++g) sa.SetElement(i, g, float8_e8m0_t::FromRaw(SA_[i * 4 + g]));
    for (int g = 0; g < 4; ++g)
        for (int j = 0; j < 32; ++j) sb.SetElement(g, j, float8_e8m0_t::FromRaw(SB_[g * 32 + j]));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 32; ++j) acc.SetElement(i, j, ACC_[i * 32 + j]);
    for (int j = 0; j < 32; ++j) bias.SetElement(0, j, BIAS_[j]);
    TMATMUL_MX(c, a, sa, b, sb);
    show(c);
    TMATMUL_MX(out, acc, a, sa, b, sb);
    show(out);
    TMATMUL_MX(c, a, sa, b, sb, bias);
    show(c);
}
"""


def _finite_codes(rng, shape, nan_codes) -> np.ndarray:
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    return np.where(np.isin(codes, nan_codes), 0x30, codes).astype(np.uint8)


@pytest.mark.slow  # compiles pto-isa's CPU model (several seconds)
def test_pto_isas_cpu_model_computes_the_same_bits(tmp_path):
    """pto-isa's CPU model's TMATMUL_MX (and its acc and bias forms) on random E4M3 x E5M2
    codes, compiled and run here: every result equal to the torch semantics (so to the
    simulator's) bit for bit.  (Codes the model reads otherwise are left out: E4M3FN's NaN,
    E5M2's infinities and NaNs, E8M0's NaN.)  Skips where the CPU model has no compiler."""
    import subprocess

    from pypto.platform import CompilerNotFoundError, find_compiler, get_platform
    from pypto.toolchain.compiler import CPU_MODEL_INCLUDE_DIR
    from pypto.toolchain.pto_isa import PtoIsaNotFoundError, pto_isa_include

    try:
        compiler = find_compiler(get_platform("a5cpu"))
        include = pto_isa_include()
    except (CompilerNotFoundError, PtoIsaNotFoundError) as e:
        pytest.skip(str(e))
    rng = np.random.default_rng(13)
    a = _finite_codes(rng, (M, K), [0x7F, 0xFF])
    b = _finite_codes(rng, (K, N), [0x7C, 0x7D, 0x7E, 0x7F, 0xFC, 0xFD, 0xFE, 0xFF])
    sa = rng.integers(112, 140, (M, G)).astype(np.uint8)
    sb = rng.integers(112, 140, (G, N)).astype(np.uint8)
    acc = (rng.normal(0, 1e4, (16, 32))).astype(np.float32)
    bias = (rng.normal(0, 1e4, (1, 32))).astype(np.float32)

    def c_array(x, fmt="%d"):
        return ", ".join(fmt % v for v in np.asarray(x).reshape(-1))

    src, exe = tmp_path / "mx.cpp", tmp_path / "mx"
    src.write_text(_CPU_MODEL_PROBE % {"a": c_array(a), "b": c_array(b), "sa": c_array(sa),
                                       "sb": c_array(sb),
                                       "acc": c_array(acc.astype(np.float64), "%.9e"),
                                       "bias": c_array(bias.astype(np.float64), "%.9e")})
    subprocess.run([str(compiler.path), *compiler.args, "-std=c++23",
                    "-D__STDCPP_BFLOAT16_T__=1", "-D__CPU_SIM", "-w", "-ffp-contract=off",
                    f"-I{CPU_MODEL_INCLUDE_DIR}", f"-I{include}", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    cpu = np.array([float.fromhex(v) for v in lines], dtype=np.float32).reshape(3, 16, 32)
    ta = torch.from_numpy(a).view(torch.float8_e4m3fn)
    tb = torch.from_numpy(b).view(torch.float8_e5m2)
    tsa = torch.from_numpy(sa).view(torch.float8_e8m0fnu)
    tsb = torch.from_numpy(sb).view(torch.float8_e8m0fnu)
    np.testing.assert_array_equal(bits(cpu[0]), bits(torch_runtime.tile_matmul_mx(ta, tsa, tb,
                                                                                   tsb)))
    np.testing.assert_array_equal(bits(cpu[1]), bits(torch_runtime.tile_matmul_mx_acc(
        torch.from_numpy(acc), ta, tsa, tb, tsb)))
    np.testing.assert_array_equal(bits(cpu[2]), bits(torch_runtime.tile_matmul_mx_bias(
        ta, tsa, tb, tsb, torch.from_numpy(bias))))
    # and the simulator, on the same operands
    c = torch.empty(M, N)
    PLAIN(ta, tsa, tb, tsb, c, config=A5)
    np.testing.assert_array_equal(bits(c), bits(cpu[0]))
    BIAS(ta, tsa, tb, tsb, torch.from_numpy(bias), c, config=A5)
    np.testing.assert_array_equal(bits(c), bits(cpu[2]))
