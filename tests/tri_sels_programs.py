"""Kernels of pl.tile.tri and pl.tile.sels shared by the simulator tests
(tests/ops/test_ops_tri_sels.py) and the CPU-model tests
(tests/device/test_device_tri_sels.py), with the expected results computed with torch
alone (torch.tril / torch.triu, torch.where): what the operators promise, independent of
pypto's own torch semantics."""

from __future__ import annotations

import torch

import pypto.language as pl

FAR = 2**40  # a diagonal beyond every tile, either way

# Each output of `triangles`: (shape, torch dtype, diagonal as a function of the kernel's
# runtime d, upper, valid region or None).
TRIANGLES = [
    ([16, 32], torch.float32, lambda d: 0, False, None),
    ([16, 32], torch.int16, lambda d: d, True, (12, 20)),
    ([8, 64], torch.uint32, lambda d: -d, False, None),
    ([16, 16], torch.float16, lambda d: 5, True, None),
    ([8, 32], torch.int32, lambda d: FAR, False, None),
    ([8, 32], torch.uint16, lambda d: -FAR, True, None),
    ([1, 48], torch.int32, lambda d: d + 20, True, None),
    ([16, 32], torch.float32, lambda d: d * 3, False, (16, 24)),
]


@pl.jit
def triangles(d: pl.Scalar[pl.INT64], o0: pl.Out[pl.Tensor], o1: pl.Out[pl.Tensor],
              o2: pl.Out[pl.Tensor], o3: pl.Out[pl.Tensor], o4: pl.Out[pl.Tensor],
              o5: pl.Out[pl.Tensor], o6: pl.Out[pl.Tensor], o7: pl.Out[pl.Tensor]):
    """One pl.tile.tri per entry of TRIANGLES (d a run-time diagonal)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        o0 = pl.store(pl.tile.tri(0, [16, 32], dtype=pl.FP32), [0, 0], o0)
        o1 = pl.store(pl.tile.tri(d, [16, 32], valid_shape=[12, 20], dtype=pl.INT16,
                                  upper=True), [0, 0], o1)
        o2 = pl.store(pl.tile.tri(-d, [8, 64], dtype=pl.UINT32), [0, 0], o2)
        o3 = pl.store(pl.tile.tri(5, [16, 16], dtype=pl.FP16, upper=True), [0, 0], o3)
        o4 = pl.store(pl.tile.tri(FAR, [8, 32]), [0, 0], o4)
        o5 = pl.store(pl.tile.tri(-FAR, [8, 32], dtype=pl.UINT16, upper=True), [0, 0], o5)
        o6 = pl.store(pl.tri(d + 20, [1, 48], upper=True), [0, 0], o6)
        o7 = pl.store(pl.tri(d * 3, [16, 32], [16, 24], pl.FP32), [0, 0], o7)
    return o0, o1, o2, o3, o4, o5, o6, o7


def triangle_outputs() -> list[torch.Tensor]:
    """Zeroed outputs of `triangles`."""
    return [torch.zeros(*shape, dtype=dtype) for shape, dtype, _, _, _ in TRIANGLES]


def written(outs: list[torch.Tensor]) -> list[torch.Tensor]:
    """The part of each output of `triangles` its tile's valid region writes (the rest of
    an Out tensor is undefined: the simulators poison it)."""
    return [out[:valid[0], :valid[1]] if valid else out
            for out, (_, _, _, _, valid) in zip(outs, TRIANGLES, strict=True)]


def expected_triangles(d: int) -> list[torch.Tensor]:
    """torch.tril / torch.triu of ones: each output's written part for the run-time d."""
    outs = []
    for shape, dtype, diagonal, upper, valid in TRIANGLES:
        rows, cols = valid or shape
        ones = torch.ones(rows, cols, dtype=torch.float64)
        k = max(-rows - 1, min(cols + 1, diagonal(d)))  # torch's diagonal is an int64
        outs.append((torch.triu(ones, k) if upper else torch.tril(ones, k)).to(dtype))
    return outs


@pl.jit
def selections(x: pl.Tensor[[16, 32], pl.FP32], h: pl.Tensor[[16, 32], pl.FP16],
               i: pl.Tensor[[16, 32], pl.INT32], s: pl.Scalar[pl.FP32],
               o0: pl.Out[pl.Tensor[[16, 32], pl.FP32]], o1: pl.Out[pl.Tensor[[16, 32], pl.FP16]],
               o2: pl.Out[pl.Tensor[[16, 32], pl.INT32]],
               o3: pl.Out[pl.Tensor[[16, 32], pl.INT16]],
               o4: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
               o5: pl.Out[pl.Tensor[[16, 32], pl.FP16]]):
    """pl.tile.sels of FP32, FP16, INT32 and INT16 tiles by pl.cmp masks: constant scalars
    that round (0.1 to FP16) and saturate (100000 to INT16), and a run-time one."""
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 32])
        g = pl.load(h, [0, 0], [16, 32])
        n = pl.load(i, [0, 0], [16, 32])
        positive = pl.cmp(t, 0.0, cmp_type=4)
        o0 = pl.store(pl.tile.sels(positive, t, pl.create_tile([16, 32], pl.FP32), -1.5),
                      [0, 0], o0)
        half = pl.cmp(g, 0.5, cmp_type=5)
        o1 = pl.store(pl.tile.sels(half, g, pl.create_tile([16, 32], pl.FP16), 0.1), [0, 0], o1)
        o2 = pl.store(pl.tile.sels(positive, n, pl.create_tile([1, 8], pl.INT32), -100000),
                      [0, 0], o2)
        o3 = pl.store(pl.sels(positive, pl.cast(n, pl.INT16), pl.create_tile([16, 32], pl.INT16),
                              100000), [0, 0], o3)
        o4 = pl.store(pl.tile.sels(positive, t, pl.create_tile([16, 32], pl.FP32), s), [0, 0], o4)
        o5 = pl.store(pl.tile.sels(half, g, pl.create_tile([16, 32], pl.FP16), s), [0, 0], o5)
    return o0, o1, o2, o3, o4, o5


def selection_inputs(seed: int = 5) -> list[torch.Tensor]:
    """x, h and i of `selections`: random values with zeros of both signs, infinities and
    NaN (a NaN compares false: the scalar is taken)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(16, 32, generator=g) * 3
    x[0, :6] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40])
    h = (torch.randn(16, 32, generator=g)).half()
    h[1, :5] = torch.tensor([0.5, float("nan"), float("inf"), -0.0, 0.4998]).half()
    i = torch.randint(-2**31, 2**31 - 1, (16, 32), generator=g, dtype=torch.int32)
    i[2, :4] = torch.tensor([0, -1, 2**31 - 1, -2**31], dtype=torch.int32)
    return [x, h, i]


def selection_outputs() -> list[torch.Tensor]:
    return [torch.zeros(16, 32), torch.zeros(16, 32, dtype=torch.float16),
            torch.zeros(16, 32, dtype=torch.int32), torch.zeros(16, 32, dtype=torch.int16),
            torch.zeros(16, 32), torch.zeros(16, 32, dtype=torch.float16)]


def expected_selections(x, h, i, s: float) -> list[torch.Tensor]:
    """torch.where of each output, the scalars as the element type holds them (an FP16
    scalar rounded once from its exact value, an integer saturated)."""
    positive, half = x > 0, h >= 0.5
    i16 = i.clamp(-2**15, 2**15 - 1).to(torch.int16)
    s16 = torch.tensor(s, dtype=torch.float64).half()  # once from the double, not via FP32
    return [torch.where(positive, x, torch.tensor(-1.5)),
            torch.where(half, h, torch.tensor(0.1, dtype=torch.float64).half()),
            torch.where(positive, i, torch.tensor(-100000, dtype=torch.int32)),
            torch.where(positive, i16, torch.tensor(2**15 - 1, dtype=torch.int16)),
            torch.where(positive, x, torch.tensor(s, dtype=torch.float32)),
            torch.where(half, h, s16)]
