"""pl.HF8 (HiFloat8) and pl.FP8E8M0 (the MX scale): the simulator's conversions
(pypto/sim/include/pto/numerics.hpp) bit for bit against the torch semantics' reference
(pypto/debug/rounding.py) and against values derived here from the formats' definitions
(docs/numerics.md): every one of the 256 codes each way, and edge values under every mode;
programs on the simulators against the torch semantics, goldens, @pl.jit and device code's
refusals.  Also pl.UINT64, the other element type upstream has that was missing.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import torch
from sim_convert import MODES, sim_converter

from pypto.debug import rounding
from pypto.ir.dtypes import DataType as DT

STORAGE = {DT.FP32: np.float32, DT.FP16: np.float16, DT.BF16: np.uint16, DT.HF8: np.uint8,
           DT.FP8E8M0: np.uint8, DT.INT32: np.int32, DT.FP8E4M3FN: np.uint8,
           DT.UINT64: np.uint64, DT.INT64: np.int64}


@pytest.fixture(scope="module")
def sim_convert(tmp_path_factory):
    """convert<D, S> over arrays (tests/sim/sim_convert_driver.cpp), built once."""
    return sim_converter(tmp_path_factory.mktemp("hf8"), STORAGE)


ALL_CODES = np.arange(256, dtype=np.uint8)


def hf8_table() -> dict[int, float]:
    """Every HiFloat8 code's value, enumerated from the format's fields (the HiFloat8 paper:
    dot field 11 / 10 / 01 / 001 / 0001 for exponent widths 4 / 3 / 2 / 1 / 0 with 1 / 2 / 3
    / 3 / 3 mantissa bits; 0000 mmm the denormals 2^(m - 23); 0x80 NaN; +-2^15 * 1.5 inf)."""
    table = {0x00: 0.0, 0x80: float("nan")}
    for m in range(1, 8):
        table[m], table[0x80 | m] = 2.0 ** (m - 23), -(2.0 ** (m - 23))
    for prefix, d, mb in (("11", 4, 1), ("10", 3, 2), ("01", 2, 3), ("001", 1, 3),
                          ("0001", 0, 3)):
        for e in ([0] if d == 0 else range(-(2**d - 1), 2**d)):
            if d and abs(e) < 2 ** (d - 1):
                continue  # the implicit leading one of the exponent's magnitude
            low = format(abs(e) - 2 ** (d - 1), f"0{d - 1}b") if d > 1 else ""
            e_field = "" if d == 0 else ("1" if e < 0 else "0") + low
            for m in range(2**mb):
                code = int(prefix + e_field + format(m, f"0{mb}b"), 2)
                value = float("inf") if (e == 15 and m == 1) else 2.0**e * (1 + m / 2**mb)
                table[code], table[0x80 | code] = value, -value
    return table


def same(a: np.ndarray, b: np.ndarray) -> None:
    """Equal float64 values, NaN matching NaN, signs of zero compared."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    ok = ~np.isnan(a)
    np.testing.assert_array_equal(a[ok], b[ok])
    np.testing.assert_array_equal(np.signbit(a[ok]), np.signbit(b[ok]))


# -- decoding: all 256 codes --------------------------------------------------------------


def test_hf8_table_covers_every_code_once():
    table = hf8_table()
    assert sorted(table) == list(range(256))
    finite = [v for v in table.values() if np.isfinite(v)]
    assert len(finite) == len(set(finite)) == 253  # one zero, one NaN, two infinities
    assert max(finite) == 2.0**15 and min(abs(v) for v in finite if v) == 2.0**-22


def test_hf8_codes_widen_exactly(sim_convert):
    want = np.array([hf8_table()[c] for c in range(256)])
    same(rounding.HF8_VALUES, want)
    same(sim_convert(DT.FP32, DT.HF8, ALL_CODES), want)
    same(sim_convert(DT.FP16, DT.HF8, ALL_CODES), want)  # exact in FP16 too
    # and back: every code but NaN's is its own value's code; NaN is 0x80
    back = sim_convert(DT.HF8, DT.FP32, want.astype(np.float32))
    np.testing.assert_array_equal(back, ALL_CODES)


def test_e8m0_codes_widen_exactly_and_as_torch(sim_convert):
    want = np.array([2.0 ** (c - 127) for c in range(255)] + [np.nan])
    same(rounding.E8M0_VALUES, want)
    got = sim_convert(DT.FP32, DT.FP8E8M0, ALL_CODES)
    same(got, want)
    torch_f32 = torch.from_numpy(ALL_CODES).view(torch.float8_e8m0fnu).float().numpy()
    np.testing.assert_array_equal(got.view(np.uint32)[:255], torch_f32.view(np.uint32)[:255])
    np.testing.assert_array_equal(sim_convert(DT.FP8E8M0, DT.FP32, got), ALL_CODES)


# -- encoding: edges under every mode, random values, torch ---------------------------------


def hf8_edges() -> np.ndarray:
    """Every finite HF8 value, the midpoints between neighbours, and values just off them
    (one FP32 ulp), plus zero, infinities, overflow and underflow boundaries."""
    grid = np.unique(np.abs(rounding.HF8_VALUES[np.isfinite(rounding.HF8_VALUES)]))
    mids = (grid[1:] + grid[:-1]) / 2
    pts = np.concatenate([grid, mids, [2.0**15 * 1.25, 2.0**15 * 1.5, 2.0**16, 1e30, 2.0**-23,
                                       2.0**-24, 1e-30]]).astype(np.float32)
    pts = np.concatenate([pts, np.nextafter(pts, np.float32(0)),
                          np.nextafter(pts, np.float32(np.inf))])
    return np.concatenate([pts, -pts, np.float32([0.0, -0.0, np.inf, -np.inf, np.nan])])


def nearest_reference(x: float, grid: np.ndarray, parity, mode: str):
    """x rounded onto the sorted non-negative grid by `mode`, by search: (lo, hi) are the
    neighbours; ties go by the parity of lo (its last significand bit)."""
    a, neg = abs(x), x < 0 or (x == 0 and np.signbit(x))
    i = np.searchsorted(grid, a)
    if i < len(grid) and grid[i] == a:
        return a if not neg else -a
    lo, hi = grid[i - 1], (grid[i] if i < len(grid) else np.inf)
    up = {"rint": a - lo > hi - a or (a - lo == hi - a and parity(lo)),
          "round": a - lo >= hi - a, "floor": neg, "ceil": not neg, "trunc": False,
          "odd": not parity(lo)}[mode]
    v = hi if up else lo
    return -v if neg else v


def hf8_parity(v: float) -> bool:
    """The last significand bit of a non-negative HF8 value (zero: even)."""
    if v == 0:
        return False
    e = int(np.floor(np.log2(v)))
    mb = 0 if e < -15 else 3 if abs(e) <= 3 else 2 if abs(e) <= 7 else 1
    return bool(int(v / 2.0 ** (e - mb)) & 1)


@pytest.mark.parametrize("mode", list(MODES))
def test_fp32_to_hf8_every_mode(sim_convert, mode):
    x = hf8_edges()
    got = sim_convert(DT.HF8, DT.FP32, x, mode)
    np.testing.assert_array_equal(got, rounding.to_hf8(x, mode))
    # the search reference, for every finite input (the grid reaches one step past 2^15)
    grid = np.append(np.unique(np.abs(rounding.HF8_VALUES[np.isfinite(rounding.HF8_VALUES)])),
                     2.0**15 * 1.5)
    m = "round" if mode == "none" else mode
    values = rounding.HF8_VALUES[got]
    for xi, vi in zip(x.astype(np.float64), values, strict=True):
        if not np.isfinite(xi):
            continue
        want = nearest_reference(xi, grid, hf8_parity, m)
        if abs(want) > 2.0**15:  # past the largest finite: inf or 2^15 by the mode
            away = m in ("rint", "round") or (m == "ceil" and xi > 0) or (m == "floor" and xi < 0)
            want = np.copysign(np.inf if away else 2.0**15, xi)
        assert vi == want or (vi == 0 and want == 0), (mode, xi, vi, want)


def test_hf8_specials(sim_convert):
    x = np.float32([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 2.0**-23, -(2.0**-23),
                    40960.0, 40959.996, 1.0625, 1.1875])
    np.testing.assert_array_equal(sim_convert(DT.HF8, DT.FP32, x),
                                  [0x80, 0x80, 0x6F, 0xEF, 0, 0, 1, 0x81, 0x6F, 0x6E, 9, 10])
    np.testing.assert_array_equal(sim_convert(DT.HF8, DT.FP32, x, "rint"),
                                  [0x80, 0x80, 0x6F, 0xEF, 0, 0, 0, 0, 0x6E, 0x6E, 8, 10])


@pytest.mark.parametrize("src", [DT.FP16, DT.BF16])
def test_narrow_floats_to_hf8_one_rounding(sim_convert, src):
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    raw = patterns.view(np.float16) if src is DT.FP16 else patterns
    exact = torch.from_numpy(patterns.view(np.int16)).view(src.to_torch()).double().numpy()
    for mode in ("none", "rint", "floor", "odd"):
        np.testing.assert_array_equal(sim_convert(DT.HF8, src, raw, mode),
                                      rounding.to_hf8(exact, mode))


def test_random_fp32_to_hf8_and_e8m0(sim_convert):
    rng = np.random.default_rng(19)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint32)
    x = np.where((bits & 0x7F800000) == 0x7F800000, bits | 0x00400000, bits).view(np.float32)
    for mode in MODES:
        np.testing.assert_array_equal(sim_convert(DT.HF8, DT.FP32, x, mode),
                                      rounding.to_hf8(x.astype(np.float64), mode))
        np.testing.assert_array_equal(sim_convert(DT.FP8E8M0, DT.FP32, x, mode),
                                      rounding.to_e8m0(x.astype(np.float64), mode))
    # torch's own float8_e8m0fnu conversion is the rint one, except that torch takes an FP32
    # subnormal strictly between 2^-127 and 1.5 * 2^-127 up to 2^-126 (it rounds subnormals
    # as if halfway between 0 and 2^-126); pl.cast goes to the nearer 2^-127 (docs/numerics.md)
    want = torch.from_numpy(x).to(torch.float8_e8m0fnu).view(torch.uint8).numpy()
    got = sim_convert(DT.FP8E8M0, DT.FP32, x, "rint")
    a = np.abs(x.astype(np.float64))
    quirk = (a > 2.0**-127) & (a < 1.5 * 2.0**-127)
    assert quirk.sum() > 50 and np.all(got[quirk] == 0) and np.all(want[quirk] == 1)
    np.testing.assert_array_equal(got[~quirk], want[~quirk])


def test_e8m0_edges_every_mode(sim_convert):
    p = np.float32([0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 1.4999999, 3.0, 2.0**-127, 1.5 * 2.0**-127,
                    2.0**-130, 2.0**-149, 2.0**127, 1.5 * 2.0**127, 3.4e38, np.inf, -np.inf,
                    np.nan])
    got = {m: sim_convert(DT.FP8E8M0, DT.FP32, p, m) for m in MODES}
    for m in MODES:
        np.testing.assert_array_equal(got[m], rounding.to_e8m0(p.astype(np.float64), m))
    special = [255, 255, 255]  # inf, -inf, NaN
    np.testing.assert_array_equal(
        got["rint"], [0, 0, 127, 127, 128, 128, 127, 129, 0, 1, 0, 0, 254, 255, 255, *special])
    np.testing.assert_array_equal(got["rint"], got["none"])
    np.testing.assert_array_equal(
        got["floor"], [0, 0, 127, 127, 127, 127, 127, 128, 0, 0, 0, 0, 254, 254, 254, *special])
    np.testing.assert_array_equal(
        got["ceil"], [0, 0, 127, 127, 128, 128, 128, 129, 0, 1, 0, 0, 254, 255, 255, *special])
    want = torch.from_numpy(p).to(torch.float8_e8m0fnu).view(torch.uint8).numpy()
    np.testing.assert_array_equal(got["rint"], want)


def test_hf8_and_e8m0_between_each_other_and_ints(sim_convert):
    e8 = sim_convert(DT.HF8, DT.FP8E8M0, ALL_CODES)
    np.testing.assert_array_equal(e8, rounding.to_hf8(rounding.E8M0_VALUES, "none"))
    back = sim_convert(DT.FP8E8M0, DT.HF8, ALL_CODES, "rint")
    np.testing.assert_array_equal(back, rounding.to_e8m0(rounding.HF8_VALUES, "rint"))
    ints = np.arange(-70000, 70000, 7, dtype=np.int32)
    np.testing.assert_array_equal(sim_convert(DT.HF8, DT.INT32, ints, "trunc"),
                                  rounding.to_hf8(ints.astype(np.float64), "trunc"))


# -- programs: pl.cast, loads and stores on the simulator and in the torch semantics ---------

R, C = 4, 128


def _cast_program(src: DT, dst: DT, mode: str):
    import pypto.language as pl

    t_in, t_out = f"pl.Tensor[[{R}, {C}], pl.{src.name}]", f"pl.Tensor[[{R}, {C}], pl.{dst.name}]"
    return pl.parse(
        "import pypto.language as pl\n\n\n@pl.program\nclass one:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def kernel(self, x: {t_in}, y: pl.Out[{t_out}]) -> {t_out}:\n"
        f"        t = pl.load(x, [0, 0], [{R}, {C}])\n"
        f"        y = pl.store(pl.cast(t, pl.{dst.name}, mode={mode!r}), [0, 0], y)\n"
        "        return y\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, x: {t_in}, y: pl.Out[{t_out}]) -> {t_out}:\n"
        "        y = self.kernel(x, y)\n"
        "        return y\n", "hf8_casts.py")


def _sim_and_torch(src: DT, dst: DT, mode: str, x: torch.Tensor):
    from pypto import ir
    from pypto.compiler import lower
    from pypto.debug import load_entry, torch_codegen
    from pypto.platform import get_platform

    program = _cast_program(src, dst, mode)
    sim_y = torch.empty(R, C, dtype=dst.to_torch())
    ir.compile(program, dump_passes=False, platform="a5sim")(x.clone(), sim_y)
    lowered = lower(program, get_platform("a5sim"))
    torch_y = torch.empty(R, C, dtype=dst.to_torch())
    load_entry(torch_codegen(lowered), lowered.entry)(x.clone(), torch_y)
    return sim_y, torch_y


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]).numpy()


@pytest.mark.parametrize("mode", ["none", "rint", "floor", "odd"])
def test_program_fp32_to_hf8_on_a5sim_and_torch(mode):
    edges = hf8_edges()
    x = torch.from_numpy(np.resize(edges, R * C).reshape(R, C))
    sim_y, torch_y = _sim_and_torch(DT.FP32, DT.HF8, mode, x)
    assert sim_y.dtype == torch.uint8  # HF8 travels as its codes
    want = rounding.to_hf8(x.numpy().astype(np.float64), mode)
    np.testing.assert_array_equal(sim_y.numpy(), want)
    np.testing.assert_array_equal(torch_y.numpy(), want)


@pytest.mark.parametrize("dst", [DT.FP32, DT.FP16, DT.BF16])
def test_program_hf8_widens_all_codes_exactly_on_a5sim_and_torch(dst):
    """HF8 -> FP32 is one instruction on Ascend950; FP16 and BF16 go through FP32, exactly."""
    x = torch.from_numpy(np.resize(ALL_CODES, R * C).reshape(R, C))
    sim_y, torch_y = _sim_and_torch(DT.HF8, dst, "none", x)
    want = np.resize(rounding.HF8_VALUES, R * C).reshape(R, C)
    same(sim_y.double().numpy(), want)
    nan = np.isnan(want)
    np.testing.assert_array_equal(_bits(sim_y)[~nan], _bits(torch_y)[~nan])
    # NaN: the simulator's canonical one; the torch semantics' FP32 -> BF16 hop leaves
    # torch's vectorised conversion its own NaN bits (0xFFFF), a NaN all the same
    torch_nans = torch_y.double().numpy()[nan]
    assert torch_nans.size == 2 and np.isnan(torch_nans).all()


@pytest.mark.parametrize("src", [DT.BF16, DT.FP16])
def test_program_chained_casts_to_hf8(src):
    """BF16 -> HF8 goes through FP32 (exact), so it is one rounding of the source value."""
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.normal(0, 300, (R, C))).to(src.to_torch())
    sim_y, torch_y = _sim_and_torch(src, DT.HF8, "none", x)
    want = rounding.to_hf8(x.double().numpy(), "none")
    np.testing.assert_array_equal(sim_y.numpy(), want)
    np.testing.assert_array_equal(torch_y.numpy(), want)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_casts_without_an_instruction_are_refused_at_the_line(platform):
    """No backend has a TCVT to or from FP8E8M0 (pto-isa makes MX scales by TQUANT), and
    Ascend910B none for HF8: pl.cast is refused at its line, naming the pair."""
    from pypto.compiler import lower
    from pypto.ir import LoweringError
    from pypto.platform import get_platform

    pairs = [(DT.FP32, DT.FP8E8M0), (DT.FP8E8M0, DT.FP32)]
    if platform == "a2a3sim":
        pairs += [(DT.FP32, DT.HF8), (DT.HF8, DT.FP32)]
    p = get_platform(platform)
    for src, dst in pairs:
        with pytest.raises(LoweringError) as info:
            lower(_cast_program(src, dst, "none"), p)
        message = str(info.value)
        assert f"from {src.name} to {dst.name} on {p.backend.name}" in message, message
        assert "hf8_casts.py:9" in message, message


def _copy_program(dtype: DT):
    import pypto.language as pl

    t = f"pl.Tensor[[{R}, {C}], pl.{dtype.name}]"
    return pl.parse(
        "import pypto.language as pl\n\n\n@pl.program\nclass copy:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def kernel(self, x: {t}, y: pl.Out[{t}]) -> {t}:\n"
        f"        t = pl.load(x, [0, 0], [{R}, {C}])\n"
        "        y = pl.store(t, [0, 0], y)\n"
        "        return y\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, x: {t}, y: pl.Out[{t}]) -> {t}:\n"
        "        y = self.kernel(x, y)\n"
        "        return y\n", "hf8_copy.py")


@pytest.mark.parametrize("dtype", [DT.HF8, DT.FP8E8M0])
def test_device_code_refuses_saying_why(dtype):
    """pto-isa's CPU model cannot check HF8 device code, and has no E8M0 TCVT: a tile of
    either is refused at its line on a5cpu, with the reason (docs/numerics.md)."""
    from pypto.codegen.cpp import generate
    from pypto.compiler import lower
    from pypto.ir import LoweringError
    from pypto.platform import get_platform

    a5cpu = get_platform("a5cpu")  # generating device code needs no compiler
    with pytest.raises(LoweringError) as info:
        generate(lower(_copy_program(dtype), a5cpu), platform=a5cpu)
    message = str(info.value)
    assert message.startswith("hf8_copy.py:8: tile `t`"), message
    assert {DT.HF8: "CPU model of hifloat8_t", DT.FP8E8M0: "no TCVT"}[dtype] in message


def test_copy_program_moves_codes_unchanged_on_a5sim():
    from pypto import ir

    x = torch.from_numpy(np.resize(ALL_CODES, R * C).reshape(R, C))
    for dtype, held in ((DT.HF8, x), (DT.FP8E8M0, x.view(torch.float8_e8m0fnu))):
        y = torch.empty(R, C, dtype=dtype.to_torch())
        ir.compile(_copy_program(dtype), dump_passes=False, platform="a5sim")(held.clone(), y)
        np.testing.assert_array_equal(y.view(torch.uint8).numpy(), x.numpy())


def _values_program(dtype: DT, pad: str):
    """A padded load (valid [R, 100] of [R, C]) filled by pl.fillpad, pl.fillpad of a
    narrowed tile, and t[0, 1] added to a zero FP32 tile: what the torch semantics must read
    from an HF8 tensor's codes, and which pad codes they write."""
    import pypto.language as pl

    t_in, t_f = f"pl.Tensor[[{R}, {C}], pl.{dtype.name}]", f"pl.Tensor[[{R}, {C}], pl.FP32]"
    return pl.parse(
        "import pypto.language as pl\n\n\n@pl.program\nclass values:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def kernel(self, x: {t_in}, y: pl.Out[{t_in}], z: pl.Out[{t_in}], "
        f"s: pl.Out[{t_f}]) -> tuple[{t_in}, {t_in}, {t_f}]:\n"
        f"        t = pl.load(x, [0, 0], [{R}, {C}], valid_shape=[{R}, 100], "
        f"pad_value=pl.PadValue.{pad})\n"
        f"        y = pl.store(pl.set_validshape(pl.fillpad(t, pl.PadValue.{pad}), {R}, {C}), "
        "[0, 0], y)\n"
        f"        u = pl.load(x, [0, 0], [{R}, {C}])\n"
        f"        v = pl.fillpad(pl.set_validshape(u, {R}, 30), pl.PadValue.{pad})\n"
        f"        v = pl.set_validshape(v, {R}, {C})\n"
        "        z = pl.store(v, [0, 0], z)\n"
        f"        f = pl.full([{R}, {C}], dtype=pl.FP32, value=0.0)\n"
        "        s = pl.store(pl.adds(f, u[0, 1]), [0, 0], s)\n"
        "        return y, z, s\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, x: {t_in}, y: pl.Out[{t_in}], z: pl.Out[{t_in}], "
        f"s: pl.Out[{t_f}]) -> tuple[{t_in}, {t_in}, {t_f}]:\n"
        "        y, z, s = self.kernel(x, y, z, s)\n"
        "        return y, z, s\n", "hf8_values.py")


@pytest.mark.parametrize("pad", ["zero", "max", "min"])
@pytest.mark.parametrize("dtype", [DT.HF8, DT.FP8E8M0])
def test_pads_and_element_reads_on_a5sim_and_torch(dtype, pad):
    from pypto import ir
    from pypto.compiler import lower
    from pypto.debug import load_entry, torch_codegen
    from pypto.platform import get_platform

    codes = torch.from_numpy(np.resize(ALL_CODES[::-1], R * C).reshape(R, C).copy())
    x = codes if dtype is DT.HF8 else codes.view(torch.float8_e8m0fnu)
    program = _values_program(dtype, pad)
    outs = {}
    for side in ("sim", "torch"):
        args = [x.clone(), torch.empty(R, C, dtype=dtype.to_torch()),
                torch.empty(R, C, dtype=dtype.to_torch()), torch.empty(R, C)]
        if side == "sim":
            ir.compile(program, dump_passes=False, platform="a5sim")(*args)
        else:
            lowered = lower(program, get_platform("a5sim"))
            load_entry(torch_codegen(lowered), lowered.entry)(*args)
        outs[side] = [a.view(torch.uint8).numpy() if a.element_size() == 1 else a.numpy()
                      for a in args[1:]]
    for got_sim, got_torch in zip(outs["sim"], outs["torch"], strict=True):
        np.testing.assert_array_equal(got_sim, got_torch)
    y, z, s = outs["sim"]
    # HF8's pads are 0 and +-inf; E8M0's are its value nearest 0 and its ends: 2^-127, 2^127
    want_pad = {(DT.HF8, "zero"): 0, (DT.HF8, "max"): 0x6F, (DT.HF8, "min"): 0xEF,
                (DT.FP8E8M0, "zero"): 0, (DT.FP8E8M0, "max"): 0xFE,
                (DT.FP8E8M0, "min"): 0x00}[dtype, pad]
    assert np.all(y[:, 100:] == want_pad) and np.all(z[:, 30:] == want_pad)
    np.testing.assert_array_equal(y[:, :100], codes.numpy()[:, :100])
    values = rounding.HF8_VALUES if dtype is DT.HF8 else rounding.E8M0_VALUES
    assert s[0, 0] == np.float32(values[codes[0, 1].item()])


# -- why device code refuses HF8: pto-isa's CPU model of hifloat8_t ------------------------

_CPU_MODEL_PROBE = r"""
#include <cmath>
#include <cstdio>
#include <limits>
#include "pto/cpu/Hifloat8.hpp"
int main() {
    for (int c = 0; c < 256; ++c) std::printf("%.17g\n", double(hifloat8_t::FromRaw(c)));
    const double probes[] = {NAN, INFINITY, -INFINITY, 4.25, -4.25, 0.75};
    for (double v : probes) std::printf("%d\n", int(hifloat8_t(v).RawData()));
}
"""


def test_pto_isa_cpu_model_hifloat8_differs_where_docs_say(tmp_path):
    """The facts behind device code's HF8 refusal (docs/numerics.md, the CPU-model table):
    pto-isa's CPU model decodes exactly the codes of exponent width 0 and 1 differently
    from the format, and its conversion takes NaN to -inf, inf to 2^15 and ties down.
    When this fails, pto-isa changed: the refusal's reason is to be re-examined."""
    from pypto.toolchain.pto_isa import PtoIsaNotFoundError, pto_isa_include

    try:
        include = pto_isa_include()
    except PtoIsaNotFoundError as e:
        pytest.skip(str(e))
    src, exe = tmp_path / "probe.cpp", tmp_path / "probe"
    src.write_text(_CPU_MODEL_PROBE)
    subprocess.run(["g++", "-std=c++17", f"-I{include}", str(src), "-o", str(exe)], check=True,
                   capture_output=True, text=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    cpu = np.array([float(v) for v in lines[:256]])
    differs = ~((cpu == rounding.HF8_VALUES) | (np.isnan(cpu) & np.isnan(rounding.HF8_VALUES)))
    payload = ALL_CODES & 0x7F
    same_value = (payload == 0x08) | (payload == 0x10)  # 1.0 and 2.0 (mantissa 0) agree
    np.testing.assert_array_equal(differs, (payload >= 0x08) & (payload < 0x20) & ~same_value)
    # NaN -> 0xEF (-inf), inf -> 0x6E (2^15), -inf -> 0xEF, the ties +-4.25 -> 4 and -4.5
    # (the lower: pl.cast's round gives +-4.5), 0.75 -> 0x08 (1.0: it has no value between
    # 0.46875 and 1)
    assert [int(v) for v in lines[256:]] == [0xEF, 0x6E, 0xEF, 0x20, 0xA1, 0x08]
    assert list(rounding.to_hf8(np.array([4.25, -4.25]), "none")) == [0x21, 0xA1]


# -- @pl.jit and goldens -----------------------------------------------------------------


def _jit_kernel():
    import pypto.language as pl

    @pl.jit
    def convert(x: pl.Tensor[[R, C], pl.FP32], scales: pl.Tensor[[R, C], pl.FP8E8M0],
                h: pl.Out[pl.Tensor[[R, C], pl.HF8]], e: pl.Out[pl.Tensor[[R, C], pl.FP8E8M0]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            h[:] = pl.cast(x, pl.HF8)
            e[:] = pl.load(scales, [0, 0], [R, C])
        return h, e

    return convert


def test_jit_takes_uint8_codes_for_hf8_and_goldens_keep_both_types(tmp_path):
    """A @pl.jit signature declaring pl.HF8 takes a torch.uint8 tensor of codes; a golden
    records it as UINT8 (its bytes) and FP8E8M0 by name (stored as bytes: safetensors cannot
    read F8_E8M0 back), and a mismatch on an HF8 output is measured in values, not codes."""
    import json

    from pypto.runtime import GoldenMismatchError, RunConfig, write_golden

    convert = _jit_kernel()
    x = torch.from_numpy(np.resize(hf8_edges()[np.isfinite(hf8_edges())], (R, C)).copy())
    scales = torch.from_numpy(np.resize(ALL_CODES, (R, C)).copy()).view(torch.float8_e8m0fnu)
    # pl.cast's default mode is rint for every destination; "none" would be HF8's round
    want_h = torch.from_numpy(rounding.to_hf8(x.double().numpy(), "rint"))
    golden = tmp_path / "golden"
    write_golden(golden, {"x": x, "scales": scales}, {"h": want_h, "e": scales.clone()},
                 rtol=0.0, atol=0.0)
    record = json.loads((golden / "golden.json").read_text())
    assert {i["name"]: i["dtype"] for i in record["expected"]} == {"h": "UINT8",
                                                                    "e": "FP8E8M0"}
    h = torch.empty(R, C, dtype=torch.uint8)
    e = torch.zeros(R, C, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    convert(x, scales, h, e, config=RunConfig(platform="a5sim", golden_data_dir=golden))
    np.testing.assert_array_equal(h.numpy(), want_h.numpy())
    np.testing.assert_array_equal(e.view(torch.uint8).numpy(), ALL_CODES.reshape(-1)[
        np.arange(R * C) % 256].reshape(R, C))

    wrong = want_h.clone()
    wrong[0, 0] = 0x21  # 4.5 where the kernel writes 4.0 (0x20) below
    x[0, 0] = 4.0
    write_golden(golden, {"x": x, "scales": scales}, {"h": wrong, "e": scales.clone()},
                 rtol=0.0, atol=0.0, overwrite=True)
    with pytest.raises(GoldenMismatchError) as info:
        convert(x, scales, h, e, config=RunConfig(platform="a5sim", golden_data_dir=golden))
    assert "actual 4.0, expected 4.5" in str(info.value), str(info.value)


# -- UINT64 ------------------------------------------------------------------------------


def test_uint64_conversions_saturate_and_round_once(sim_convert):
    big = np.array([0, 1, 2**53 + 1, 2**63, 2**64 - 1, 2**64 - 2**11], dtype=np.uint64)
    np.testing.assert_array_equal(sim_convert(DT.INT64, DT.UINT64, big, "trunc"),
                                  [0, 1, 2**53 + 1, 2**63 - 1, 2**63 - 1, 2**63 - 1])
    as_f32 = sim_convert(DT.FP32, DT.UINT64, big, "rint")
    np.testing.assert_array_equal(as_f32, np.float32([0, 1, 2.0**53, 2.0**63, 2.0**64,
                                                      2.0**64]))
    x = np.float32([-1.0, 0.5, 1.5, 2.0**63, 2.0**64, np.inf, -np.inf, np.nan, 3e19])
    np.testing.assert_array_equal(
        sim_convert(DT.UINT64, DT.FP32, x, "rint"),
        np.array([0, 0, 2, 2**63, 2**64 - 1, 2**64 - 1, 0, 0, 2**64 - 1], dtype=np.uint64))


def _uint64_program(pad: str):
    import pypto.language as pl

    t = f"pl.Tensor[[{R}, 64], pl.UINT64]"
    return pl.parse(
        "import pypto.language as pl\n\n\n@pl.program\nclass u64:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def kernel(self, x: {t}, y: pl.Out[{t}]) -> {t}:\n"
        f"        t = pl.load(x, [0, 0], [{R}, 64], valid_shape=[{R}, 20])\n"
        f"        u = pl.set_validshape(pl.fillpad(t, pl.PadValue.{pad}), {R}, 64)\n"
        "        y = pl.store(u, [0, 0], y)\n"
        "        return y\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, x: {t}, y: pl.Out[{t}]) -> {t}:\n"
        "        y = self.kernel(x, y)\n"
        "        return y\n", "u64.py")


@pytest.mark.parametrize("pad", ["zero", "max", "min"])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_uint64_moves_and_pads_on_sim_and_torch(platform, pad):
    from pypto import ir
    from pypto.compiler import lower
    from pypto.debug import load_entry, torch_codegen
    from pypto.platform import get_platform

    values = np.arange(R * 64, dtype=np.uint64).reshape(R, 64) * np.uint64(2**40)
    x = torch.from_numpy(values + np.uint64(2**63))
    program = _uint64_program(pad)
    y = torch.empty(R, 64, dtype=torch.uint64)
    ir.compile(program, dump_passes=False, platform=platform)(x.clone(), y)
    lowered = lower(program, get_platform(platform))
    y_torch = torch.empty(R, 64, dtype=torch.uint64)
    load_entry(torch_codegen(lowered), lowered.entry)(x.clone(), y_torch)
    assert torch.equal(y, y_torch)
    assert torch.equal(y[:, :20], x[:, :20])
    want = {"zero": 0, "max": 2**64 - 1, "min": 0}[pad]
    assert all(v == want for v in y[:, 20:].reshape(-1).tolist())


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_uint64_casts_and_reads_are_refused_at_their_line(platform):
    """No backend converts UINT64 (BACKENDS.md lists no such tcvt), and a kernel's integer
    scalars are INT64, which cannot hold a UINT64 element of 2^63 or more."""
    import pypto.language as pl
    from pypto.compiler import lower
    from pypto.ir import LoweringError, TypeCheckError
    from pypto.platform import get_platform

    p = get_platform(platform)
    for src, dst in ((DT.UINT64, DT.FP32), (DT.INT64, DT.UINT64), (DT.UINT32, DT.UINT64)):
        with pytest.raises(LoweringError) as info:
            lower(_cast_program(src, dst, "none"), p)
        assert f"from {src.name} to {dst.name} on {p.backend.name}" in str(info.value)
    t = f"pl.Tensor[[{R}, 64], pl.UINT64]"
    source = ("import pypto.language as pl\n\n\n@pl.program\nclass rd:\n"
              "    @pl.function(type=pl.FunctionType.InCore)\n"
              f"    def kernel(self, x: {t}, y: pl.Out[{t}]) -> {t}:\n"
              f"        t = pl.load(x, [0, 0], [{R}, 64])\n"
              "        s = t[0, 1]\n"
              "        y = pl.store(t, [0, 0], y)\n"
              "        return y\n")
    with pytest.raises(TypeCheckError) as err:
        pl.parse(source, "u64_read.py")
    assert str(err.value).startswith("u64_read.py:9:"), str(err.value)
    assert "INT64, which does not hold every UINT64" in str(err.value)


def test_golden_to_dtype_rounds_once_into_each_new_type():
    """pypto.golden's one rounding of a reference (to nearest even) into each new dtype:
    HF8 as torch.uint8 codes, FP8E8M0 as torch's float8_e8m0fnu (torch's own conversion
    where it has one), UINT64 exact integers."""
    from pypto.golden.portable import to_dtype

    x = hf8_edges().astype(np.float64)
    np.testing.assert_array_equal(to_dtype(x, DT.HF8).numpy(), rounding.to_hf8(x, "rint"))
    f = np.float32([0.0, 1.0, 1.5, 3.0, -5.0, 2.0**-127, 2.0**127 * 1.49, np.inf, np.nan])
    got = to_dtype(torch.from_numpy(f), DT.FP8E8M0)
    assert got.dtype == torch.float8_e8m0fnu
    np.testing.assert_array_equal(got.view(torch.uint8).numpy(),
                                  torch.from_numpy(f).to(torch.float8_e8m0fnu)
                                  .view(torch.uint8).numpy())
    big = np.array([0, 2**63, 2**64 - 1], dtype=np.uint64)
    assert to_dtype(big, DT.UINT64).tolist() == [0, 2**63, 2**64 - 1]
    with pytest.raises(ValueError, match="is not a UINT64 value"):
        to_dtype(np.array([-1.0]), DT.UINT64)
