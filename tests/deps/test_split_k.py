"""Split-K matmul through atomic-add stores: right within tolerance, order-dependent in the bits."""

from __future__ import annotations

import itertools

import pytest
import torch
from split_k_programs import SPLITS, add_part, split_k, zero_c

import pypto.language as pl
from pypto.ir.errors import TypeCheckError
from pypto.runtime import RunConfig

# N = 64 FP32 rows are narrower than the backend's preferred 512 B: expected hints.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

M, N, K = 64, 64, 512  # random FP32 inputs: the order of the atomic adds shows in the bits
SEEDS = range(8)


def inputs():
    g = torch.Generator().manual_seed(2024)
    return torch.randn(M, K, generator=g), torch.randn(K, N, generator=g)


def run(seed, **config):
    a, b = inputs()
    c = torch.zeros(M, N)
    split_k(a, b, c, config=RunConfig(schedule_seed=seed, **config))
    return c


def reference():
    a, b = inputs()
    return (a.double() @ b.double()).float()


@pytest.mark.parametrize("seed", [None, *SEEDS])
def test_split_k_is_within_tolerance_of_torch_for_every_seed(seed):
    assert torch.allclose(run(seed, workers=4), reference(), rtol=0, atol=1e-3)


def test_different_seeds_accumulate_in_different_orders_and_give_different_bits():
    results = {seed: run(seed) for seed in SEEDS}
    assert any(not torch.equal(results[s], results[t]) for s, t in itertools.combinations(SEEDS, 2))


@pytest.mark.parametrize("seed", [0, 5])
def test_the_same_seed_gives_identical_bits(seed):
    assert torch.equal(run(seed).view(torch.int32), run(seed).view(torch.int32))


def test_the_accumulators_wait_for_the_zero_init_and_not_for_each_other(read_dfx):
    run(1, enable_dep_gen=True)
    deps = read_dfx("deps.json")
    kernels = [zero_c.__name__] + [add_part.__name__] * SPLITS
    assert [t["kernel"] for t in deps["tasks"]] == kernels
    assert [a["direction"] for a in deps["tasks"][1]["args"] if a["kind"] == "tensor"] == [
        "in", "in", "accum"]
    assert [(e["src"], e["dst"], e["kind"]) for e in deps["edges"]] == [
        (0, k, "RAW") for k in range(1, SPLITS + 1)]


def test_a_reader_of_the_sum_waits_for_every_accumulator(read_dfx):
    @pl.jit
    def split_k_then_scale(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor],
                           d: pl.Out[pl.Tensor]):
        c = zero_c(c)
        kc: pl.constexpr = K // SPLITS
        for s in pl.parallel(SPLITS):
            c = add_part(a, b, c, s * kc)
        with pl.at(level=pl.Level.CORE_GROUP):
            d[:] = pl.mul(c, 2.0)
        return c, d

    a, b = inputs()
    c, d = torch.zeros(M, N), torch.zeros(M, N)
    split_k_then_scale(a, b, c, d, config=RunConfig(schedule_seed=4, enable_dep_gen=True))
    assert torch.equal(d, c * 2.0)
    edges = [(e["src"], e["dst"]) for e in read_dfx("deps.json")["edges"]]
    waits_for = {src for src, dst in edges if dst == SPLITS + 1}
    assert set(range(1, SPLITS + 1)) <= waits_for


@pl.jit
def bf16_accumulate(x: pl.Tensor[[16, 256], pl.BF16], acc: pl.Out[pl.Tensor[[16, 256], pl.BF16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc[:] = pl.mul(x, 0.0)
    for _ in pl.parallel(3):
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.assemble(acc, x, [0, 0], atomic=pl.AtomicType.Add)
    return acc


def test_bf16_atomic_add_runs_on_a2a3():
    x = torch.randn(16, 256).to(torch.bfloat16)
    acc = torch.zeros(16, 256, dtype=torch.bfloat16)
    bf16_accumulate(x, acc, config=RunConfig(platform="a2a3sim", schedule_seed=0))
    expected = ((x + x) + x)  # bf16 rounding after each add, as the accumulating store does
    assert torch.equal(acc, expected)


def test_bf16_atomic_add_is_a_compile_error_on_a5_naming_the_line():
    x = torch.randn(16, 256).to(torch.bfloat16)
    acc = torch.zeros(16, 256, dtype=torch.bfloat16)
    with pytest.raises(TypeCheckError) as info:
        bf16_accumulate(x, acc, config=RunConfig(platform="a5sim"))
    error = info.value
    assert error.span.file == __file__
    assert "atomic=pl.AtomicType.Add" in str(error) and "BF16" in str(error)
    assert "Ascend950" in str(error) and "FP32" in error.hint
