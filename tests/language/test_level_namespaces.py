"""pl.tile.* / pl.tensor.* spellings, the scalar spellings (pl.adds), and the operators
upstream programs reach through them: tile.assemble, tile.transpose_view, get_block_num,
tensor.dim, pl.min / pl.max, pl.INDEX."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir.errors import LoweringError, ParseError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit.incore
def tile_spellings(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.tile.load(x, [0, 0], [16, 128])
    u = pl.tile.muls(pl.tile.adds(t, 1.0), 2.0)
    out = pl.tile.store(pl.tile.add(u, t), [0, 0], out)
    return out


def test_tile_spellings_are_the_registry_operators():
    x, out = torch.randn(16, 128), torch.zeros(16, 128)
    tile_spellings(x, out)
    assert torch.equal(out, (x + 1.0) * 2.0 + x)


def test_a_tile_spelling_refuses_a_tensor_at_its_line():
    @pl.jit
    def wrong(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.tile.exp(x)
        return out

    with pytest.raises(TypeCheckError, match="pl.tile.exp works on tiles") as info:
        wrong.frontend(torch.zeros(16, 128), torch.zeros(16, 128))
    assert info.value.span.line == wrong.fn.__code__.co_firstlineno + 3


def test_a_scalar_spelling_needs_a_scalar_operand():
    @pl.jit.incore
    def wrong(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 128])
        out = pl.store(pl.adds(t, t), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="pl.adds takes a scalar"):
        wrong.frontend(torch.zeros(16, 128), torch.zeros(16, 128))


def test_an_unknown_namespaced_name_is_a_located_error():
    @pl.jit.incore
    def wrong(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        t = pl.tile.frobnicate(x)
        out = pl.store(t, [0, 0], out)
        return out

    with pytest.raises(ParseError, match="pl.tile.frobnicate"):
        wrong.frontend(torch.zeros(16, 128), torch.zeros(16, 128))


@pl.jit.incore
def insert_rows(x: pl.Tensor[[32, 32], pl.FP32], src: pl.Tensor[[8, 16], pl.FP32],
                out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]):
    target = pl.load(x, [0, 0], [32, 32])
    s = pl.load(src, [0, 0], [8, 16])
    first = pl.tile.assemble(target, s, [0, 16])  # a new tile: `target` is kept
    for i in pl.range(3):
        first = pl.tile.assemble(first, s, [8 + i * 8, 0])
    out = pl.store(pl.add(first, target), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_tile_assemble_inserts_a_tile_at_an_offset(platform):
    x, src, out = torch.randn(32, 32), torch.randn(8, 16), torch.zeros(32, 32)
    insert_rows(x, src, out, config=RunConfig(platform=platform))
    first = x.clone()
    first[0:8, 16:32] = src
    for i in range(3):
        first[8 + i * 8:16 + i * 8, 0:16] = src
    assert torch.equal(out, first + x)


@pl.jit.incore
def acc_into_mat(a: pl.Tensor[[16, 32], pl.FP32], b: pl.Tensor[[32, 16], pl.FP32],
                 x: pl.Tensor[[32, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    a_left = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    b_right = pl.move(pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat), pl.Mem.Right)
    target = pl.load(x, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
    merged = pl.tile.assemble(target, pl.matmul(a_left, b_right), [16, 0])  # Acc -> Mat
    out = pl.store(pl.matmul(a_left, pl.move(merged, pl.Mem.Right)), [0, 0], out)
    return out


def test_a_matmul_result_is_inserted_into_a_mat_tile():
    torch.manual_seed(3)
    a, b, x = torch.randn(16, 32), torch.randn(32, 16), torch.randn(32, 16)
    out = torch.zeros(16, 16)
    acc_into_mat(a, b, x, out)
    merged = torch.cat([x[:16], a @ b])
    assert torch.allclose(out, a @ merged, rtol=1e-4, atol=1e-4)


@pl.jit.incore
def matmul_transposed(a: pl.Tensor[[16, 32], pl.FP16], k: pl.Tensor[[16, 32], pl.FP16],
                      out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    a_left = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat), pl.Mem.Left)
    k_mat = pl.load(k, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
    k_right = pl.move(pl.tile.transpose_view(k_mat), pl.Mem.Right)
    out = pl.store(pl.matmul(a_left, k_right), [0, 0], out)
    return out


def test_transpose_view_reads_a_mat_tile_transposed():
    torch.manual_seed(4)
    a, k = torch.randn(16, 32).half(), torch.randn(16, 32).half()
    out = torch.zeros(16, 16)
    matmul_transposed(a, k, out)
    assert torch.allclose(out, a.float() @ k.float().T, rtol=1e-5, atol=1e-4)


@pl.jit.incore
def vec_into_mat(x: pl.Tensor[[16, 32], pl.FP32], s: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
    target = pl.load(x, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
    merged = pl.tile.assemble(target, pl.load(s, [0, 0], [16, 16]), [0, 0])
    out = pl.store(pl.matmul(pl.move(merged, pl.Mem.Left),
                             pl.move(merged, pl.Mem.Right), b_trans=True), [0, 0], out)
    return out


def test_insert_pairs_follow_the_backend():
    args = (torch.zeros(16, 32), torch.zeros(16, 16), torch.zeros(16, 32))
    with pytest.raises(LoweringError, match="cannot insert a Vec tile .* into a Mat tile"):
        vec_into_mat.lower(*args, config=RunConfig(platform="a2a3sim"))


@pl.jit.incore
def blocks_info(out: pl.Out[pl.Tensor[[4, 8], pl.INT64]]):
    t = pl.full([1, 8], pl.INT64, pl.get_block_num())
    out = pl.store(pl.add(t, pl.tile.get_block_idx() * 100), [pl.get_block_idx(), 0], out)
    return out


@pl.jit
def spmd_blocks(out: pl.Out[pl.Tensor[[4, 8], pl.INT64]]):
    with pl.spmd(4):
        out = blocks_info(out)
    return out


def test_get_block_num_is_the_dispatch_block_count():
    out = torch.zeros(4, 8, dtype=torch.int64)
    spmd_blocks(out)
    expected = torch.tensor([[4 + 100 * b] * 8 for b in range(4)], dtype=torch.int64)
    assert torch.equal(out, expected)


@pl.jit.incore
def clamp_window(x: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
                 out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    rows: pl.constexpr = pl.tensor.dim(x, 0)
    for i in pl.range(pl.min(n, rows // 16)):
        t = pl.load(x, [pl.max(i, 0) * 16, 0], [16, pl.dim(x, 1)])
        out = pl.store(t, [i * 16, 0], out)
    return out


def test_dim_min_and_max_give_index_values():
    x, out = torch.randn(64, 128), torch.zeros(64, 128)
    clamp_window(x, 3, out)
    assert torch.equal(out[:48], x[:48]) and out[48:].isnan().all()  # never written
    text = clamp_window.frontend(x, 3, out).as_python()
    assert "pl.min(n, 4)" in text and "pl.Scalar[pl.INT64]" in text


@pl.jit
def spmd_core_num(out: pl.Out[pl.Tensor[[4, 8], pl.INT64]]):
    with pl.spmd(core_num=4, sync_start=True) as tid:
        out = blocks_info(out)
    with pl.spmd(4, deps=[tid]):
        out = blocks_info(out)
    return out


def test_spmd_dispatch_form_takes_core_num_and_sync_start():
    out = torch.zeros(4, 8, dtype=torch.int64)
    spmd_core_num(out)
    assert torch.equal(out[:, 0], torch.tensor([4, 104, 204, 304]))
    calls = [s.value for s in spmd_core_num.frontend(out).entry_function.body[:2]]
    assert [c.blocks.value for c in calls] == [4, 4] and calls[1].deps[0].name == "tid"


def test_a_spmd_block_cannot_mix_dispatches_and_computation():
    @pl.jit
    def mixed(x: pl.Tensor[[4, 8], pl.INT64], out: pl.Out[pl.Tensor[[4, 8], pl.INT64]]):
        with pl.spmd(4):
            out = blocks_info(out)
            out = pl.store(pl.load(x, [0, 0], [4, 8]), [0, 0], out)
        return out

    with pytest.raises(ParseError, match="either calls kernels"):
        mixed.frontend(torch.zeros(4, 8, dtype=torch.int64), torch.zeros(4, 8, dtype=torch.int64))


@pl.jit.inline
def plus_one(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 128])
        pl.store(pl.add(t, 1.0), [0, 0], c)
    return c


@pl.jit.opaque
def doubled(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [32, 128])
        pl.store(pl.mul(t, 2.0), [0, 0], c)
    return c


@pl.jit
def composed(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    t = pl.create_tensor([32, 128], dtype=pl.FP32)
    t = plus_one(a, t)
    result = doubled(t, c)
    return result


def test_inline_and_opaque_helpers_are_spliced_into_the_caller():
    a, c = torch.randn(32, 128), torch.zeros(32, 128)
    composed(a, c)
    assert torch.equal(c, (a + 1.0) * 2.0)
    program = composed.frontend(a, c)
    assert [f.name for f in program.functions.values()] == ["composed"]
    assert "t__plus_one_" in program.as_python()  # the helper's local, suffixed


def test_an_inline_helper_is_upstreams_inline_function():
    assert isinstance(plus_one, pl.InlineFunction)
    assert isinstance(pl.inline(plus_one.fn), pl.InlineFunction)
    assert not isinstance(doubled, pl.InlineFunction)


@pytest.mark.parametrize("helper", [plus_one, doubled])
@pytest.mark.parametrize("use", ["call", "compile", "lower"])
def test_a_helper_run_on_its_own_is_refused_at_its_definition(helper, use):
    # It was an InternalError ("the entry of a lowered program must be an orchestration").
    a, c = torch.randn(32, 128), torch.zeros(32, 128)
    with pytest.raises(ParseError, match="spliced into the functions that call it") as info:
        getattr(helper, {"call": "__call__"}.get(use, use))(a, c)
    assert info.value.span.line == helper.fn.__code__.co_firstlineno + 1  # the def line


@pl.jit.host
def host_entry(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    return composed(a, c)


def test_a_host_orchestrator_is_refused_at_its_definition():
    with pytest.raises(ParseError, match="@pl.jit.host, a HOST orchestrator") as info:
        host_entry(torch.zeros(32, 128), torch.zeros(32, 128))
    assert info.value.span.line == host_entry.fn.__code__.co_firstlineno
