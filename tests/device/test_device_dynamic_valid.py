"""Valid regions known only at run time in device code: a tile whose `valid_shape` holds a
scalar (`pl.load(..., valid_shape=[r, n])`) is declared with pto-isa's DYNAMIC valid
extents, which `SetValidRow` / `SetValidCol` set where the value is defined (from the
load's scalars, or from the tile a value is computed from), as the simulators set theirs.
Proven on both CPU models against the simulators and pypto's torch semantics, for several
regions (empty, one element, ragged, whole); constant regions emit what they did."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.debug import torch_runtime as rt
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

R, C = 16, 64
UNTOUCHED = 7.0  # what an output (InOut: not poisoned) holds where nothing is stored
# (rows, cols) of the valid region: empty, one element, ragged, whole rows, whole tile.
REGIONS = [(0, 0), (1, 1), (5, 40), (16, 17), (3, C), (R, C)]


@pl.jit.incore
def ragged(x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
           r: pl.Scalar[pl.INDEX], n: pl.Scalar[pl.INDEX],
           plus: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
           filled: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
           maxima: pl.InOut[pl.Tensor[[R, 1], pl.FP32]],
           sums: pl.InOut[pl.Tensor[[R, 1], pl.FP32]],
           tops: pl.InOut[pl.Tensor[[1, C], pl.FP32]],
           soft: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
           merged: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
           halves: pl.InOut[pl.Tensor[[R, C], pl.FP16]],
           wide: pl.InOut[pl.Tensor[[R, 2 * C], pl.FP32]]):
    t = pl.load(x, [0, 0], [R, C], valid_shape=[r, n])
    plus = pl.store(pl.add(pl.mul(t, 2.0), 1.0), [0, 0], plus)  # the region, computed
    low = pl.fillpad(t, pl.PadValue.min)
    filled = pl.store(pl.set_validshape(low, R, C), [0, 0], filled)  # region + padding
    tmp = pl.create_tile([R, C], pl.FP32)
    top = pl.row_max(low, tmp)  # valid [r, 1]
    maxima = pl.store(top, [0, 0], maxima)
    e = pl.exp(pl.row_expand_sub(low, top))  # valid [r, n]
    total = pl.row_sum(t, tmp)  # exact sums (the data are quarters): any order agrees
    sums = pl.store(total, [0, 0], sums)
    tops = pl.store(pl.col_max(low), [0, 0], tops)  # valid [1, n]
    soft = pl.store(pl.row_expand_div(e, total), [0, 0], soft)
    merged = pl.store(pl.part_add(pl.load(y, [0, 0], [R, C]), t), [0, 0], merged)
    halves = pl.store(pl.cast(pl.load(x, [0, 0], [R, C], valid_shape=[r, n],
                                      pad_value=pl.PadValue.max), pl.FP16), [0, 0], halves)
    wide = pl.store(pl.fillpad_expand(t, [R, 2 * C], pl.PadValue.max), [0, 0], wide)
    return plus, filled, maxima, sums, tops, soft, merged, halves, wide


def _arguments(r: int, n: int) -> list:
    g = torch.Generator().manual_seed(18)
    x = torch.randint(-64, 64, (R, C), generator=g) / 4
    y = torch.randn(R, C, generator=g)
    outs = [torch.full(shape, UNTOUCHED) for shape in
            ((R, C), (R, C), (R, 1), (R, 1), (1, C), (R, C), (R, C))]
    return [x, y, r, n, *outs, torch.full((R, C), UNTOUCHED, dtype=torch.float16),
            torch.full((R, 2 * C), UNTOUCHED)]


_FIRST_OUTPUT = 4


def _expected(r: int, n: int) -> list[torch.Tensor]:
    """What the kernel means, in torch (exp and the division as pypto's torch semantics
    compute them): the outputs with the region (r, n) stored."""
    x, y, *_ = _arguments(r, n)
    outs = _arguments(r, n)[_FIRST_OUTPUT:]
    plus, filled, maxima, sums, tops, soft, merged, halves, wide = outs
    plus[:r, :n] = x[:r, :n] * 2 + 1
    low = torch.full((R, C), float("-inf"))
    low[:r, :n] = x[:r, :n]
    filled[:] = low
    top = low.amax(dim=1, keepdim=True)
    maxima[:r] = top[:r]
    e = rt.exp(low - top)
    zeroed = torch.zeros(R, C)
    zeroed[:r, :n] = x[:r, :n]
    total = zeroed.sum(dim=1, keepdim=True)  # exact
    sums[:r] = total[:r]
    tops[:, :n] = low.amax(dim=0, keepdim=True)[:, :n]
    soft[:r, :n] = rt.div(e, total.expand_as(e))[:r, :n]
    merged[:] = y
    merged[:r, :n] += x[:r, :n]
    halves[:r, :n] = x[:r, :n].half()
    wide[:] = float("inf")
    wide[:r, :n] = x[:r, :n]
    return outs


def _incore(platform: str, r: int = 5, n: int = 40):
    program = ragged.frontend(*_arguments(r, n))
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return fn


def test_a_run_time_region_is_declared_dynamic_and_set_where_the_value_is_defined():
    cpp = device_kernel(_incore("a2a3cpu")).cpp
    # The value's own view and the load's view with its pad value: DYNAMIC rows and
    # columns, the first set from r and n, the second from the first.
    assert "BLayout::RowMajor, DYNAMIC, DYNAMIC> t_valid;" in cpp
    assert "DYNAMIC, DYNAMIC, SLayout::NoneBox, TileConfig::fractalABSize, PadValue::Zero> " \
           "t_valid_1;" in cpp
    assert "t_valid.SetValidShape(r, n);" in cpp
    assert "t_valid_1.SetValidShape(t_valid.GetValidRow(), t_valid.GetValidCol());" in cpp
    # The window the load reads is the region: its shape comes from the view.
    assert ("Shape<1, 1, 1, DYNAMIC, DYNAMIC>, Stride<1, 1, 1, DYNAMIC, DYNAMIC>> x_window("
            in cpp)
    assert "{t_valid_1.GetValidRow(), t_valid_1.GetValidCol()}, {row_stride(x)" in cpp
    assert "TLOAD(t_valid_1, x_window);" in cpp and "TFILLPAD(low_pad_min, t_valid);" in cpp
    # A row maximum keeps the rows only: a column view with DYNAMIC rows, set from its
    # source's view; stored through a window of that many rows.
    assert "BLayout::ColMajor, DYNAMIC, 1> top_valid;" in cpp
    assert "top_valid.SetValidRow(low_valid.GetValidRow());" in cpp
    assert "Shape<1, 1, 1, DYNAMIC, 1>" in cpp
    # Values computed from the tile take its extents from the tile's view, not the scalars
    # (which may hold other values by then).
    assert cpp.count("SetValidShape(r, n)") == 2  # the two loads alone
    # Every statement setting an extent sets one some instruction reads.
    for line in cpp.splitlines():
        if ".SetValid" in line:
            view = line.strip().split(".")[0]
            assert cpp.count(f"{view})") + cpp.count(f"{view},") > 0, line


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_constant_regions_emit_no_dynamic_extents(platform):
    @pl.jit.incore
    def fixed(x: pl.Tensor[[R, C], pl.FP32], out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
        t = pl.load(x, [0, 0], [R, C], valid_shape=[5, 40])
        out = pl.store(pl.add(pl.fillpad(t, pl.PadValue.min), 1.0), [0, 0], out)
        return out

    program = fixed.frontend(torch.zeros(R, C), torch.zeros(R, C))
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    cpp = device_kernel(fn).cpp
    assert "DYNAMIC>" not in cpp.replace("Stride<1, 1, 1, DYNAMIC, DYNAMIC>", "")
    assert "SetValid" not in cpp and "{}, {row_stride(x), col_stride(x)}" in cpp


def test_the_region_as_the_value_was_defined_is_the_one_stored():
    """A value keeps the region its tile had when it was defined, though the scalar then
    changes (the simulators' rule): device code takes it from the tile's view."""

    @pl.jit.incore
    def rebound(x: pl.Tensor[[R, C], pl.FP32], cfg: pl.Tensor[[1, 8], pl.INT64],
                out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
        n = pl.cast(pl.read(cfg, [0, 0]), pl.INDEX)
        t = pl.load(x, [0, 0], [R, C], valid_shape=[R, n])
        n = pl.cast(pl.read(cfg, [0, 1]), pl.INDEX)
        out = pl.store(pl.add(t, 1.0), [0, 0], out)
        return out

    program = rebound.frontend(torch.zeros(R, C), torch.tensor([[40, 8, 0, 0, 0, 0, 0, 0]]),
                               torch.zeros(R, C))
    (fn,) = [f for f in lower(program, get_platform("a5cpu")).functions
             if f.func_type is FunctionType.InCore]
    cpp = device_kernel(fn).cpp
    assert "add_0_valid.SetValidCol(t_valid.GetValidCol());" in cpp
    assert cpp.index("t_valid.SetValidCol(n);") < cpp.index("n = ((int64_t)(read_1));")


def test_a_run_time_region_of_a_cube_tile_is_refused_at_its_line():
    @pl.jit.incore
    def cube(a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[64, 32], pl.FP16],
             k: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        lhs = pl.load(a, [0, 0], [16, 64], valid_shape=[16, k],
                      target_memory=pl.MemorySpace.Mat)
        rhs = pl.load(b, [0, 0], [64, 32], target_memory=pl.MemorySpace.Mat)
        out = pl.store(pl.matmul(pl.move(lhs, target_memory=pl.MemorySpace.Left),
                                 pl.move(rhs, target_memory=pl.MemorySpace.Right)),
                       [0, 0], out)
        return out

    program = cube.frontend(torch.zeros(16, 64, dtype=torch.float16),
                            torch.zeros(64, 32, dtype=torch.float16), 40, torch.zeros(16, 32))
    (fn,) = [f for f in lower(program, get_platform("a2a3cpu")).functions
             if f.func_type is FunctionType.InCore]
    with pytest.raises(LoweringError, match=r"`lhs`'s valid region \[16, k\] is known only "
                                            r"at run time, in Mat") as info:
        device_kernel(fn)
    assert "test_device_dynamic_valid.py" in str(info.value)


@pytest.mark.parametrize("region", REGIONS[:3])
def test_the_simulator_stores_what_the_region_means(region):
    sim_args = _arguments(*region)
    ragged(*sim_args, config=RunConfig(platform="a2a3sim"))
    for got, want in zip(sim_args[_FIRST_OUTPUT:], _expected(*region), strict=True):
        assert _same(got, want), region


# Slow: one CPU-model build and one simulator build per platform, run once per region.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_run_time_regions_on_the_cpu_models_are_the_simulators(platform):
    for region in REGIONS:
        outs = outputs_agreeing_with_the_simulator(ragged, lambda r=region: _arguments(*r),
                                                   _FIRST_OUTPUT, platform)
        for got, want in zip(outs, _expected(*region), strict=True):
            assert _same(got, want), region


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal, or the same bytes (NaN where the other has it)."""
    return torch.equal(got, want) or torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def _upstream(path: str):
    """The upstream example module at `path`, imported unmodified (skips without the
    snapshot)."""
    import importlib.util
    import sys

    from pypto.tools.upstream_compat import snapshot_root

    file = snapshot_root() / path
    if not file.is_file():
        pytest.skip(f"the upstream PyPTO snapshot is absent (looked for {file})")
    name = "upstream_" + path.replace("/", "_").removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # @pl.program reads its class source through the module
        spec.loader.exec_module(module)
    return sys.modules[name]


# Slow: the upstream kernels built for a CPU model and its simulator.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_upstream_unaligned_softmax_prepare_runs_on_the_cpu_models(platform):
    """models/04_paged_attention's kernel_softmax_prepare_unaligned (load with
    valid_shape=[16, valid_len], fillpad min, scale, row max, exp, row sum; the BF16
    probabilities stored over valid_len columns) on the CPU model and its simulator."""
    m = _upstream("examples/models/04_paged_attention.py")
    sij = torch.randn(16, 128, generator=torch.Generator().manual_seed(4))
    for valid_len in (1, 40, 128):
        runs = []
        for target in (platform, platform.replace("cpu", "sim")):
            pij = torch.zeros(16, 128, dtype=torch.bfloat16)
            mi, li = torch.zeros(16, 1), torch.zeros(16, 1)
            m.kernel_softmax_prepare_unaligned(sij, 0.5, valid_len, pij, mi, li,
                                               config=RunConfig(platform=target))
            runs.append((pij, mi, li))
        (pij, mi, li), (sim_pij, sim_mi, sim_li) = runs
        assert _same(pij, sim_pij) and _same(mi, sim_mi), valid_len
        # The row sums of inexact values part in their last bits: the CPU model's TROWSUM
        # adds in vector lanes (docs/numerics.md, the device's reductions).
        assert torch.allclose(li, sim_li, rtol=1e-6, atol=0), valid_len
        assert torch.equal(mi, (sij[:, :valid_len] * 0.5).amax(dim=1, keepdim=True))
        # out_pij is an Out parameter: what the kernel does not store holds the run's NaN.
        assert pij[:, valid_len:].isnan().all() and (pij[:, :valid_len] > 0).all()


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_upstream_dyn_valid_shape_runs_on_the_cpu_models(platform):
    """intermediate/06_dyn_valid_shape's dyn_valid_shape: its vlen is a specialisation
    constant of the @pl.jit entry (one kernel per value, a static region)."""
    m = _upstream("examples/intermediate/06_dyn_valid_shape.py")
    data = torch.randn(64, 64, generator=torch.Generator().manual_seed(6))
    for vlen in (40, 64):
        outs = []
        for target in (platform, platform.replace("cpu", "sim")):
            out = torch.zeros(64, 64)
            m.dyn_valid_shape(data, 0.5, vlen, out, config=RunConfig(platform=target))
            outs.append(out)
        assert _same(*outs)
        assert torch.equal(outs[0][:, :vlen], data[:, :vlen] * 0.5)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_upstream_dyn_valid_shape_if_else_and_loop_run_on_the_cpu_models(platform):
    """intermediate/06_dyn_valid_shape's dyn_valid_shape_if_else and dyn_valid_shape_loop:
    the valid length read from a rank-1 INT64 config tensor (`pl.read(cfg, [1])`) and
    chosen by a run-time `if` (in a run-time loop), the tile's region DYNAMIC."""
    m = _upstream("examples/intermediate/06_dyn_valid_shape.py")
    g = torch.Generator().manual_seed(8)
    data, sij = torch.randn(64, 64, generator=g), torch.randn(128, 64, generator=g)
    cases = [(m.dyn_valid_shape_if_else, data, [1, 48, 64], ((0, 48),)),
             (m.dyn_valid_shape_if_else, data, [0, 48, 64], ((0, 64),)),
             (m.dyn_valid_shape_loop, sij, [2, 17, 64], ((0, 64), (64, 17))),
             (m.dyn_valid_shape_loop, sij, [1, 5, 64], ((0, 5),))]
    for kernel, x, cfg, regions in cases:
        outs = []
        for target in (platform, platform.replace("cpu", "sim")):
            out = torch.zeros_like(x)
            kernel(x, torch.tensor(cfg), out, config=RunConfig(platform=target))
            outs.append(out)
        assert _same(*outs), (kernel, cfg)
        for row, vlen in regions:
            block = outs[0][row:row + 64]
            assert torch.equal(block[:, :vlen], x[row:row + 64, :vlen]), (cfg, row)
            # The filled tile keeps the load's region, so the store writes vlen columns;
            # the rest of the Out parameter holds the run's NaN.
            assert block[:, vlen:].isnan().all(), (cfg, row)
