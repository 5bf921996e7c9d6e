"""The 4-bit element types pl.FP4 (OCP MX E2M1), pl.HF4 (HiFloat4's S1E1M2 element),
pl.INT4 and pl.UINT4: the simulator's conversions (pypto/sim/include/pto/numerics.hpp) bit
for bit against the references in pypto/ir/formats.py and against values derived here from
the formats' definitions (docs/numerics.md), every code and every rounding boundary under
every mode.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import torch
from sim_convert import MODES, sim_converter

from pypto.debug import rounding
from pypto.ir import formats
from pypto.ir.dtypes import DataType as DT

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

# One element per array entry: the simulator's 4-bit value types hold one code a byte.
STORAGE = {DT.FP32: np.float32, DT.FP16: np.float16, DT.BF16: np.uint16, DT.INT32: np.int32,
           DT.FP4: np.uint8, DT.HF4: np.uint8, DT.INT4: np.uint8, DT.UINT4: np.uint8,
           DT.FP8E4M3FN: np.uint8, DT.INT8: np.int8}
CODES = np.arange(16, dtype=np.uint8)
FLOATS4 = (DT.FP4, DT.HF4)


@pytest.fixture(scope="module")
def sim_convert(tmp_path_factory):
    """convert<D, S> over arrays (tests/sim/sim_convert_driver.cpp), built once."""
    return sim_converter(tmp_path_factory.mktemp("four_bit"), STORAGE)


def table(dtype: DT) -> np.ndarray:
    """Every code's value, from the format's fields: FP4 is sign, exponent e (2 bits, bias
    1), mantissa m (1 bit), subnormal at e = 0 (OCP MX E2M1); HF4 is sign, exponent e (1
    bit), mantissa m (2 bits), with an implicit 0 at e = 0 and 1 at e = 1 (pto-isa's
    docs/isa/TQUANT_HIF4.md, the HiFloat4 element); INT4 two's complement; UINT4 plain."""
    out = []
    for c in range(16):
        s = -1.0 if c & 8 else 1.0
        if dtype is DT.FP4:
            e, m = (c >> 1) & 3, c & 1
            out.append(s * (m / 2 if e == 0 else 2.0 ** (e - 1) * (1 + m / 2)))
        elif dtype is DT.HF4:
            e, m = (c >> 2) & 1, c & 3
            out.append(s * (e + m / 4))
        elif dtype is DT.INT4:
            out.append(float(c - 16 if c >= 8 else c))
        else:
            out.append(float(c))
    return np.array(out)


def same(a, b) -> None:
    """Equal float64 values, signs of zero compared."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


# -- decoding: all 16 codes ----------------------------------------------------------------


def test_the_tables_hold_the_formats():
    same(table(DT.FP4), [0, .5, 1, 1.5, 2, 3, 4, 6, -0.0, -.5, -1, -1.5, -2, -3, -4, -6])
    same(table(DT.HF4), [k / 4 for k in range(8)] + [-(k / 4) for k in range(8)])
    for dtype, values in ((DT.FP4, formats.FP4_VALUES), (DT.HF4, formats.HF4_VALUES),
                          (DT.INT4, formats.INT4_VALUES), (DT.UINT4, formats.UINT4_VALUES)):
        same(values, table(dtype))


@pytest.mark.parametrize("dtype", [DT.FP4, DT.HF4, DT.INT4, DT.UINT4])
@pytest.mark.parametrize("wide", [DT.FP32, DT.FP16, DT.BF16])
def test_codes_widen_exactly(sim_convert, dtype, wide):
    got = sim_convert(wide, dtype, CODES)
    values = got.view(np.int16).astype(np.int32) << 16 if wide is DT.BF16 else got
    same(np.asarray(values).view(np.float32) if wide is DT.BF16 else values, table(dtype))


@pytest.mark.parametrize("dtype", [DT.FP4, DT.HF4, DT.INT4, DT.UINT4])
def test_every_code_round_trips(sim_convert, dtype):
    back = sim_convert(dtype, DT.FP32, table(dtype).astype(np.float32))
    np.testing.assert_array_equal(back, CODES)


# -- encoding: every boundary under every mode, random values -------------------------------


def edges(dtype: DT) -> np.ndarray:
    """The grid, the midpoints of neighbours and values one FP32 ulp off both, values
    past the largest magnitude, zeros, infinities and NaN."""
    grid = np.unique(np.abs(table(dtype)))
    mids = (grid[1:] + grid[:-1]) / 2
    top = grid[-1]
    pts = np.concatenate([grid, mids, [top + (top - grid[-2]) / 2, top * 1.5, 2 * top, 1e30,
                                       1e-30]]).astype(np.float32)
    pts = np.concatenate([pts, np.nextafter(pts, np.float32(0)),
                          np.nextafter(pts, np.float32(np.inf))])
    return np.concatenate([pts, -pts, np.float32([0.0, -0.0, np.inf, -np.inf, np.nan])])


def nearest(x: float, grid: np.ndarray, mode: str) -> float:
    """x rounded onto the sorted non-negative grid (with a last step past its top) by
    `mode`, by search; ties by the parity of the lower neighbour's index in the grid (its
    last significand bit: the code's low bit), saturating past the grid's top."""
    a, neg = abs(x), x < 0 or (x == 0 and np.signbit(x))
    if a >= grid[-1]:
        return -grid[-1] if neg else grid[-1]
    i = int(np.searchsorted(grid, a))
    if grid[i] == a:
        return -a if neg else a
    lo, hi = grid[i - 1], grid[i]
    odd = (i - 1) % 2 == 1
    up = {"rint": a - lo > hi - a or (a - lo == hi - a and odd), "round": a - lo >= hi - a,
          "floor": neg, "ceil": not neg, "trunc": False, "odd": not odd}[mode]
    v = hi if up else lo
    return -v if neg else v


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("dtype", FLOATS4)
def test_fp32_to_4bit_floats_every_mode(sim_convert, dtype, mode):
    x = edges(dtype)
    got = sim_convert(dtype, DT.FP32, x, mode)
    ref = formats.to_fp4 if dtype is DT.FP4 else formats.to_hf4
    np.testing.assert_array_equal(got, ref(x.astype(np.float64), mode))
    grid = np.unique(np.abs(table(dtype)))
    m = "rint" if mode == "none" else mode
    for xi, ci in zip(x.astype(np.float64), got, strict=True):
        vi = table(dtype)[ci]
        if np.isnan(xi):
            assert ci == 0  # no NaN: +0
        elif np.isinf(xi):
            assert vi == np.copysign(grid[-1], xi)  # no infinity: the largest magnitude
        else:
            want = nearest(xi, grid, m)
            assert vi == want and np.signbit(vi) == np.signbit(xi), (mode, xi, vi, want)


@pytest.mark.parametrize("dtype", [DT.INT4, DT.UINT4])
def test_fp32_to_4bit_integers_every_mode_saturates(sim_convert, dtype):
    x = np.float32([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 6.5, 7.4, 7.5, 8, -8.4, -8.5, -9, 15.5,
                    16, 100, -100, np.inf, -np.inf, np.nan, -0.0, 3.999, -3.999])
    for mode in MODES:
        got = sim_convert(dtype, DT.FP32, x, mode)
        want = rounding.to_integer(x.astype(np.float64), dtype, mode)
        np.testing.assert_array_equal(table(dtype)[got], want)
    lo, hi = (-8, 7) if dtype is DT.INT4 else (0, 15)
    ints = np.arange(-40, 40, dtype=np.int32)
    np.testing.assert_array_equal(table(dtype)[sim_convert(dtype, DT.INT32, ints)],
                                  np.clip(ints, lo, hi))


def test_random_fp32_to_4bit_every_mode(sim_convert):
    rng = np.random.default_rng(41)
    x = np.concatenate([rng.normal(0, 2, 50_000), rng.normal(0, 0.5, 50_000),
                        rng.uniform(-8, 8, 50_000)]).astype(np.float32)
    for mode in MODES:
        for dtype, ref in ((DT.FP4, formats.to_fp4), (DT.HF4, formats.to_hf4)):
            np.testing.assert_array_equal(sim_convert(dtype, DT.FP32, x, mode),
                                          ref(x.astype(np.float64), mode))
        for dtype in (DT.INT4, DT.UINT4):
            got = table(dtype)[sim_convert(dtype, DT.FP32, x, mode)]
            np.testing.assert_array_equal(got, rounding.to_integer(x.astype(np.float64), dtype,
                                                                   mode))


@pytest.mark.parametrize("src", [DT.BF16, DT.FP16])
def test_every_narrow_float_to_4bit_one_rounding(sim_convert, src):
    """BF16 -> FP4 is Ascend950's one instruction (and FP16 -> INT4 Ascend910B's): every
    source pattern, rounded once."""
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    raw = patterns.view(np.float16) if src is DT.FP16 else patterns
    exact = torch.from_numpy(patterns.view(np.int16)).view(src.to_torch()).double().numpy()
    for mode in ("rint", "round", "floor", "ceil", "trunc", "odd"):
        np.testing.assert_array_equal(sim_convert(DT.FP4, src, raw, mode),
                                      formats.to_fp4(exact, mode))
        got = table(DT.INT4)[sim_convert(DT.INT4, src, raw, mode)]
        np.testing.assert_array_equal(got, rounding.to_integer(exact, DT.INT4, mode))


def test_pack_and_unpack_nibbles():
    """Element 2i in the low nibble of byte i: torch's order for float4_e2m1fn_x2
    (torch.testing's pack_uint4) and pto-isa's (MXTypes.hpp, GetProperDataPart)."""
    codes = np.array([[1, 2, 3, 4], [15, 0, 8, 7]], dtype=np.uint8)
    np.testing.assert_array_equal(formats.pack_nibbles(codes), [[0x21, 0x43], [0x0F, 0x78]])
    np.testing.assert_array_equal(formats.unpack_nibbles(formats.pack_nibbles(codes)), codes)
    with pytest.raises(ValueError, match="two to a byte"):
        formats.pack_nibbles(np.zeros((2, 3), dtype=np.uint8))


# -- programs: loads, stores, moves and casts on the simulators and in the torch semantics --

R, C = 4, 128


def _program(params: list[tuple[str, str, DT, tuple]], body: list[str], name: str = "four.py"):
    """A @pl.program whose InCore `kernel` has `params` ((name, "in" | "out", dtype, shape))
    and `body` (lines after its signature, the return left to this), called by `main`."""
    import pypto.language as pl

    def ann(direction, dtype, shape):
        t = f"pl.Tensor[{list(shape)}, pl.{dtype.name}]"
        return t if direction == "in" else f"pl.Out[{t}]"

    sig = ", ".join(f"{n}: {ann(d, t, s)}" for n, d, t, s in params)
    outs = [(n, t, s) for n, d, t, s in params if d == "out"]
    ret = ", ".join(f"pl.Tensor[{list(s)}, pl.{t.name}]" for _, t, s in outs)
    ret = f"tuple[{ret}]" if len(outs) > 1 else ret
    names = ", ".join(n for n, *_ in outs)
    text = ("import pypto.language as pl\n\n\n@pl.program\nclass four:\n"
            "    @pl.function(type=pl.FunctionType.InCore)\n"
            f"    def kernel(self, {sig}) -> {ret}:\n"
            + "".join(f"        {line}\n" for line in body)
            + f"        return {names}\n\n"
            "    @pl.function(type=pl.FunctionType.Orchestration)\n"
            f"    def main(self, {sig}) -> {ret}:\n"
            f"        {names} = self.kernel({', '.join(n for n, *_ in params)})\n"
            f"        return {names}\n")
    return pl.parse(text, name)


def _empty(dtype: DT, shape) -> torch.Tensor:
    """An output tensor of `dtype` as torch holds it (a 4-bit type: its bytes)."""
    return torch.empty(dtype.torch_shape(shape), dtype=dtype.to_torch())


def _run(program, platform: str, args: list[torch.Tensor]) -> dict[str, list[np.ndarray]]:
    """The program on `platform`'s simulator and in the torch semantics of its lowered IR,
    each on its own copies of `args`: the arguments after each run, as numpy arrays of their
    bytes (uint8) or values."""
    from pypto import ir
    from pypto.compiler import lower
    from pypto.debug import load_entry, torch_codegen
    from pypto.platform import get_platform

    out = {}
    for side in ("sim", "torch"):
        copies = [a.clone() for a in args]
        if side == "sim":
            ir.compile(program, dump_passes=False, platform=platform)(*copies)
        else:
            lowered = lower(program, get_platform(platform))
            load_entry(torch_codegen(lowered), lowered.entry)(*copies)
        out[side] = [_array(a) for a in copies]
    return out


def _array(t: torch.Tensor) -> np.ndarray:
    """A tensor as numpy: FP4's and FP8's bytes as uint8, BF16's bits as int16, the rest as
    they are."""
    if t.element_size() == 1 and t.is_floating_point():
        return t.view(torch.uint8).numpy()
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy()
    return t.numpy()


def _packed(codes: np.ndarray, dtype: DT) -> torch.Tensor:
    """A tensor of `dtype` holding `codes` (FP4: torch.float4_e2m1fn_x2; the others uint8)."""
    data = torch.from_numpy(formats.pack_nibbles(codes))
    return data.view(torch.float4_e2m1fn_x2) if dtype is DT.FP4 else data


def _codes_grid(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 16, (R, C), dtype=np.uint8)


@pytest.mark.parametrize("engine", ["python", "native"], indirect=True)
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize("dtype", [DT.FP4, DT.HF4, DT.INT4, DT.UINT4])
def test_loads_stores_and_moves_keep_the_codes(engine, platform, dtype):
    """A load, a move between two Vec tiles and a store move the bytes unchanged; a padded
    load fills whole bytes of the pad's code (zero 0x0; max and min the largest and
    smallest values: the floats have no infinity)."""
    body = ["t = pl.load(x, [0, 0], [4, 128])",
            "y = pl.store(pl.move(t, pl.Mem.Vec), [0, 0], y)",
            "u = pl.load(x, [0, 32], [4, 64], valid_shape=[4, 30], pad_value=pl.PadValue.max)",
            "z = pl.store(pl.set_validshape(u, 4, 64), [0, 0], z)",
            "v = pl.load(x, [0, 2], [4, 64], valid_shape=[4, 18], pad_value=pl.PadValue.min)",
            "w = pl.store(pl.set_validshape(v, 4, 64), [0, 64], z)"]
    program = _program([("x", "in", dtype, (R, C)), ("y", "out", dtype, (R, C)),
                        ("z", "out", dtype, (R, C))], body)
    codes = _codes_grid(dtype.code)
    got = _run(program, platform, [_packed(codes, dtype), _empty(dtype, (R, C)),
                                   _empty(dtype, (R, C))])
    for sim, ref in zip(got["sim"], got["torch"], strict=True):
        np.testing.assert_array_equal(sim, ref)
    _, y, z = got["sim"]
    np.testing.assert_array_equal(formats.unpack_nibbles(y), codes)
    pad_max, pad_min = {DT.FP4: (7, 15), DT.HF4: (7, 15), DT.INT4: (7, 8),
                        DT.UINT4: (15, 0)}[dtype]
    z = formats.unpack_nibbles(z)
    np.testing.assert_array_equal(z[:, :30], codes[:, 32:62])
    assert np.all(z[:, 30:64] == pad_max)
    np.testing.assert_array_equal(z[:, 64:82], codes[:, 2:20])
    assert np.all(z[:, 82:] == pad_min)
    assert table(dtype)[pad_max] == table(dtype).max()
    assert table(dtype)[pad_min] == table(dtype).min()


def _cast_program(src: DT, dst: DT, modes):
    """x (src) cast to dst once per mode, each into its R rows of y."""
    body = ["t = pl.load(x, [0, 0], [4, 128])"]
    for k, mode in enumerate(modes):
        body.append(f"y = pl.store(pl.cast(t, pl.{dst.name}, mode={mode!r}), [{k * R}, 0], y)")
    return _program([("x", "in", src, (R, C)), ("y", "out", dst, (R * len(modes), C))],
                    body, "four_casts.py")


def _values(t: np.ndarray, dtype: DT) -> np.ndarray:
    """The float64 values of a result array (_array's form) of `dtype`."""
    if dtype.packed:
        return table(dtype)[formats.unpack_nibbles(t)]
    if dtype is DT.BF16:
        return torch.from_numpy(t).view(torch.bfloat16).double().numpy()
    if dtype is DT.FP8E4M3FN:
        return torch.from_numpy(t).view(torch.float8_e4m3fn).double().numpy()
    return t.astype(np.float64)


def _source(dtype: DT, seed: int) -> tuple[torch.Tensor, np.ndarray]:
    """An [R, C] input of `dtype` and its exact values: every code (4-bit), or values
    around the 4-bit grids, their midpoints, overflow, zeros and specials."""
    if dtype.packed:
        codes = np.resize(CODES, R * C).reshape(R, C)
        return _packed(codes, dtype), table(dtype)[codes]
    rng = np.random.default_rng(seed)
    pts = np.concatenate([edges(DT.FP4), edges(DT.HF4), rng.normal(0, 3, R * C),
                          np.arange(-20, 20, 0.125)]).astype(np.float32)[: R * C]
    x = torch.from_numpy(pts.reshape(R, C)).to(dtype.to_torch())
    return x, x.double().numpy()


EVERY_MODE = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")


@pytest.mark.parametrize(("platform", "src", "dst"), [
    ("a5sim", DT.BF16, DT.FP4), ("a5sim", DT.FP4, DT.BF16), ("a2a3sim", DT.FP16, DT.INT4),
    ("a2a3sim", DT.INT4, DT.FP16)])
def test_native_casts_round_once_in_every_mode(platform, src, dst):
    """The one-instruction conversions the backends have (BACKENDS.md): Ascend950 BF16 <->
    FP4, Ascend910B FP16 <-> INT4."""
    x, exact = _source(src, 5)
    got = _run(_cast_program(src, dst, EVERY_MODE), platform, [x, _empty(dst, (R * 7, C))])
    np.testing.assert_array_equal(got["sim"][1], got["torch"][1])
    values = _values(got["sim"][1], dst)
    for k, mode in enumerate(EVERY_MODE):
        if dst is DT.FP4:
            want = table(DT.FP4)[formats.to_fp4(exact, mode)]
        elif dst is DT.INT4:
            want = rounding.to_integer(exact, DT.INT4, mode) + 0.0  # integers: no -0
        else:  # widening: exact
            want = exact
        same(values[k * R:(k + 1) * R], want)


def _bf16(x: np.ndarray, mode: str) -> np.ndarray:
    return rounding.to_float_format(x, DT.BF16, mode)


@pytest.mark.parametrize(("platform", "src", "dst", "path", "emulate"), [
    # FP32 -> BF16 -> FP4: two roundings (0.75 - 2^-20 goes to 0.75, then to even 1.0)
    ("a5sim", DT.FP32, DT.FP4, [DT.FP32, DT.BF16, DT.FP4],
     lambda x, m: table(DT.FP4)[formats.to_fp4(_bf16(x, m), m)]),
    # FP4 -> BF16 -> FP32 -> FP8E4M3FN: exact (upstream's FP4 x FP8 MX form's cast)
    ("a5sim", DT.FP4, DT.FP8E4M3FN, [DT.FP4, DT.BF16, DT.FP32, DT.FP8E4M3FN],
     lambda x, m: x),
    ("a5sim", DT.FP4, DT.FP32, [DT.FP4, DT.BF16, DT.FP32], lambda x, m: x),
    # FP32 -> FP16 -> INT4: two roundings, as FP32 -> FP16 -> INT8 (docs/numerics.md)
    ("a2a3sim", DT.FP32, DT.INT4, [DT.FP32, DT.FP16, DT.INT4],
     lambda x, m: rounding.to_integer(rounding.to_float_format(x, DT.FP16, m), DT.INT4, m)
     + 0.0),
    ("a2a3sim", DT.INT4, DT.FP32, [DT.INT4, DT.FP16, DT.FP32], lambda x, m: x),
    ("a2a3sim", DT.INT4, DT.INT8, [DT.INT4, DT.FP16, DT.INT8], lambda x, m: x),
])
def test_chained_casts_run_the_chain_legalize_tile_cast_chose(platform, src, dst, path,
                                                              emulate):
    from pypto.passes import cast_path
    from pypto.platform import get_platform

    assert cast_path(src, dst, get_platform(platform).backend) == path
    x, exact = _source(src, 9)
    modes = ("rint", "floor", "odd")
    got = _run(_cast_program(src, dst, modes), platform, [x, _empty(dst, (R * 3, C))])
    np.testing.assert_array_equal(got["sim"][1], got["torch"][1])
    values = _values(got["sim"][1], dst)
    for k, mode in enumerate(modes):
        same(values[k * R:(k + 1) * R], emulate(exact, mode))


def test_fp32_to_fp4_rounds_twice_where_documented():
    """0.75 - 2^-20 is nearer 0.5 than 1.0, but BF16 holds it as 0.75, a tie that rint
    takes to 1.0 (even): the one-rounding conversion would give 0.5."""
    x = np.array([0.75 - 2.0**-20])
    assert _bf16(x, "rint")[0] == 0.75
    assert table(DT.FP4)[formats.to_fp4(_bf16(x, "rint"), "rint")][0] == 1.0
    assert table(DT.FP4)[formats.to_fp4(x, "rint")][0] == 0.5


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_casts_without_an_instruction_are_refused_at_the_line(platform):
    """No backend converts HF4 or UINT4 (BACKENDS.md has no such TCVT); Ascend950 has no
    INT4 conversion and Ascend910B no FP4 one."""
    from pypto.compiler import lower
    from pypto.ir import LoweringError
    from pypto.platform import get_platform

    p = get_platform(platform)
    other = DT.INT4 if platform == "a5sim" else DT.FP4
    pairs = [(DT.FP32, DT.HF4), (DT.HF4, DT.FP32), (DT.BF16, DT.HF4), (DT.UINT4, DT.FP16),
             (DT.FP16, DT.UINT4), (DT.INT32, DT.UINT4), (DT.FP32, other), (other, DT.FP32),
             (DT.FP4, DT.INT4), (DT.INT4, DT.UINT4)]
    for src, dst in pairs:
        with pytest.raises(LoweringError) as info:
            lower(_cast_program(src, dst, ["rint"]), p)
        message = str(info.value)
        assert f"from {src.name} to {dst.name} on {p.backend.name}" in message, message
        assert "four_casts.py:9:" in message, message


# -- what is refused at its line -------------------------------------------------------------

_REFUSALS = {
    "an_odd_last_dimension": (
        [("x", "in", DT.INT4, (4, 127)), ("y", "out", DT.INT4, (4, 128))],
        ["y = pl.store(pl.load(x, [0, 0], [4, 126]), [0, 0], y)"], 7,
        "parameter `x` is INT4 [4, 127]: 4-bit elements pack two to a byte, so the last "
        "dimension must be even"),
    "an_odd_tile": (
        [("x", "in", DT.FP4, (4, 128)), ("y", "out", DT.FP4, (4, 128))],
        ["t = pl.load(x, [0, 0], [4, 63])", "y = pl.store(t, [0, 0], y)"], 8,
        "pl.load's tile is FP4 [4, 63]: 4-bit elements pack two to a byte"),
    "an_odd_valid_region": (
        [("x", "in", DT.UINT4, (4, 128)), ("y", "out", DT.UINT4, (4, 128))],
        ["t = pl.load(x, [0, 0], [4, 64], valid_shape=[4, 33])", "y = pl.store(t, [0, 0], y)"],
        8, "has the valid region [4, 33] of UINT4: a 4-bit region ends on a whole byte"),
    "an_odd_column_offset": (
        [("x", "in", DT.HF4, (4, 128)), ("y", "out", DT.HF4, (4, 128))],
        ["t = pl.load(x, [0, 3], [4, 64])", "y = pl.store(t, [0, 0], y)"], 8,
        "pl.load of HF4 at column 3: a 4-bit window starts on a whole byte"),
    "arithmetic": (
        [("x", "in", DT.INT4, (4, 128)), ("y", "out", DT.INT4, (4, 128))],
        ["t = pl.load(x, [0, 0], [4, 128])", "y = pl.store(pl.add(t, t), [0, 0], y)"], 9,
        "pl.add does not take INT4 values: a 4-bit tile is loaded, stored, moved and "
        "converted (pl.cast) only"),
    "a_view": (
        [("x", "in", DT.FP4, (4, 128)), ("y", "out", DT.FP4, (2, 256))],
        ["t = pl.load(x, [0, 0], [4, 128])", "y = pl.store(pl.reshape(t, [2, 256]), [0, 0], y)"],
        9, "pl.reshape does not take FP4 values"),
    "an_element_read": (
        [("x", "in", DT.UINT4, (4, 128)), ("y", "out", DT.FP32, (4, 128))],
        ["t = pl.load(x, [0, 0], [4, 128])",
         "y = pl.store(pl.full([4, 128], dtype=pl.FP32, value=t[0, 1]), [0, 0], y)"], 9,
        "pl.read does not take UINT4 values"),
    "a_4bit_tile_made_from_nothing": (
        [("y", "out", DT.FP4, (4, 128))],
        ["y = pl.store(pl.create_tile([4, 128], dtype=pl.FP4), [0, 0], y)"], 8,
        "pl.create_tile does not take FP4 values"),
}


@pytest.mark.parametrize("case", list(_REFUSALS))
def test_what_4bit_values_cannot_do_is_refused_at_its_line(case):
    from pypto.ir import TypeCheckError

    params, body, line, message = _REFUSALS[case]
    with pytest.raises(TypeCheckError) as info:
        _program(params, body, "four_refused.py")
    text = str(info.value)
    assert text.startswith(f"four_refused.py:{line}:"), text
    assert message in text, text


def test_a_tensor_level_cast_of_a_4bit_tensor_is_refused_at_its_line():
    import pypto.language as pl
    from pypto.ir import TypeCheckError

    text = ("import pypto.language as pl\n\n\n"
            "@pl.jit\n"
            "def f(x: pl.Tensor[[16, 128], pl.FP4], y: pl.Out[pl.Tensor[[16, 128], pl.BF16]]):\n"
            "    with pl.at(level=pl.Level.CORE_GROUP):\n"
            "        y = pl.cast(x, pl.BF16)\n"
            "    return y\n")
    ns: dict = {}
    exec(compile(text, "four_tensor.py", "exec"), ns)
    import linecache
    linecache.cache["four_tensor.py"] = (len(text), None, text.splitlines(True), "four_tensor.py")
    x = torch.zeros(16, 64, dtype=torch.uint8)
    with pytest.raises(TypeCheckError) as info:
        ns["f"].lower(x, torch.empty(16, 128, dtype=torch.bfloat16))
    message = str(info.value)
    assert message.startswith("four_tensor.py:7:"), message
    assert "pl.cast of a FP4 tensor: a 4-bit tensor is only loaded and stored here" in message
    del pl


_OFFSET_AT_RUN_TIME = """
import pypto.language as pl


@pl.jit.incore
def kernel(x: pl.Tensor[[4, 128], pl.UINT4], c: pl.Scalar[pl.INDEX],
           y: pl.Out[pl.Tensor[[4, 64], pl.UINT4]]):
    t = pl.load(x, [0, c], [4, 64])
    y = pl.store(t, [0, 0], y)
    return y
"""


def test_an_odd_column_offset_known_at_run_time_is_a_kernel_fault():
    """A column offset the compiler cannot see is checked where the simulator moves the
    bytes: the window is refused (nothing read) and the run fails naming it.  The kernel
    takes the UINT4 tensors as torch.uint8 bytes (a [4, 128] UINT4 tensor is [4, 64] bytes)."""
    from located_errors import raised_by

    from pypto.runtime import KernelError, RunConfig

    codes = _codes_grid(3)
    x, y = torch.from_numpy(formats.pack_nibbles(codes)), torch.empty(4, 32, dtype=torch.uint8)

    def run(namespace):
        kernel = namespace["kernel"]
        kernel(x, 32, y, config=RunConfig(platform="a5sim"))
        np.testing.assert_array_equal(formats.unpack_nibbles(y.numpy()), codes[:, 32:96])
        kernel(x, 33, y, config=RunConfig(platform="a5sim"))

    error, _ = raised_by(_OFFSET_AT_RUN_TIME, run, KernelError)
    assert "tload of a 4-bit window at column 33" in str(error), str(error)
    assert "does not lie on whole bytes" in str(error)


def test_jit_takes_fp4_as_float4_e2m1fn_x2_or_bytes_and_counts_elements():
    """An FP4 argument is a torch.float4_e2m1fn_x2 tensor ([R, C / 2] holds [R, C] FP4
    elements), or torch.uint8 bytes where the parameter says pl.FP4; the wrong shape is
    refused naming both."""
    import pypto.language as pl
    from pypto.runtime import RunConfig

    @pl.jit.incore
    def widen(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        y = pl.store(pl.cast(pl.load(x, [0, 0], [4, 128]), pl.BF16), [0, 0], y)
        return y

    @pl.jit.incore
    def widen_bytes(x: pl.Tensor[[4, 128], pl.FP4], y: pl.Out[pl.Tensor[[4, 128], pl.BF16]]):
        y = pl.store(pl.cast(pl.load(x, [0, 0], [4, 128]), pl.BF16), [0, 0], y)
        return y

    codes = _codes_grid(11)
    want = torch.from_numpy(table(DT.FP4)[codes]).to(torch.bfloat16)
    for kernel, x in ((widen, _packed(codes, DT.FP4)),
                      (widen_bytes, torch.from_numpy(formats.pack_nibbles(codes))),
                      (widen_bytes, _packed(codes, DT.FP4))):
        y = torch.empty(R, C, dtype=torch.bfloat16)
        kernel(x, y, config=RunConfig(platform="a5sim"))
        assert torch.equal(y, want)
    # [4, 128] bytes hold [4, 256] FP4 elements
    with pytest.raises(Exception, match=r"expects a FP4 tensor \[4, 128\], got a FP4 tensor "
                                        r"\[4, 256\]"):
        widen_bytes(torch.zeros(4, 128, dtype=torch.uint8), torch.empty(R, C, dtype=torch.bfloat16),
                    config=RunConfig(platform="a5sim"))


def test_a_compiled_program_checks_4bit_arguments_by_their_bytes():
    from pypto import ir

    compiled = ir.compile(_cast_program(DT.FP4, DT.BF16, ["rint"]), dump_passes=False,
                          platform="a5sim")
    y = torch.empty(R, C, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"expected shape \[4, 64\] \(its FP4 elements "
                                         r"\[4, 128\], two a byte\), found \[4, 128\]"):
        compiled(torch.zeros(R, C, dtype=torch.uint8), y)
    with pytest.raises(TypeError, match="expected dtype FP4 \\(a torch.float4_e2m1fn_x2 or "
                                        "torch.uint8 tensor, two elements a byte\\)"):
        compiled(torch.zeros(R, C // 2, dtype=torch.int8), y)
    compiled(torch.zeros(R, C // 2, dtype=torch.uint8), y)
    assert torch.equal(y, torch.zeros(R, C, dtype=torch.bfloat16))


# -- goldens ---------------------------------------------------------------------------------


def test_goldens_record_4bit_tensors_as_torch_holds_them_and_compare_values(tmp_path):
    """A golden records an FP4 tensor as torch.float4_e2m1fn_x2 pairs ("FP4", the torch
    shape; stored as bytes: safetensors has no such dtype) and INT4 bytes as UINT8; a
    check compares the values the codes stand for, so a mismatch reads in values."""
    import json

    import pypto.language as pl
    from pypto.runtime import GoldenMismatchError, RunConfig, write_golden

    @pl.jit.incore
    def quantize(x: pl.Tensor[[4, 128], pl.BF16], q: pl.Out[pl.Tensor[[4, 128], pl.FP4]],
                 w: pl.Out[pl.Tensor[[4, 128], pl.BF16]]):
        t = pl.cast(pl.load(x, [0, 0], [4, 128]), pl.FP4)
        q = pl.store(t, [0, 0], q)
        w = pl.store(pl.cast(t, pl.BF16), [0, 0], w)
        return q, w

    x, exact = _source(DT.BF16, 2)
    codes = formats.to_fp4(exact, "rint")
    want_q, want_w = _packed(codes, DT.FP4), torch.from_numpy(table(DT.FP4)[codes]).bfloat16()
    golden = tmp_path / "golden"
    write_golden(golden, {"x": x}, {"q": want_q, "w": want_w}, rtol=0.0, atol=0.0)
    record = json.loads((golden / "golden.json").read_text())
    assert {i["name"]: (i["dtype"], i["shape"]) for i in record["expected"]} == {
        "q": ("FP4", [4, 64]), "w": ("BF16", [4, 128])}
    q, w = _empty(DT.FP4, (R, C)), torch.empty(R, C, dtype=torch.bfloat16)
    quantize(x, q, w, config=RunConfig(platform="a5sim", golden_data_dir=golden))
    np.testing.assert_array_equal(q.view(torch.uint8).numpy(), formats.pack_nibbles(codes))

    wrong = codes.copy()
    wrong[0, 0] = 0x3 if codes[0, 0] != 0x3 else 0x4  # 1.5, or 2.0
    x[0, 0] = 4.0  # the kernel writes 4.0 (0x6)
    write_golden(golden, {"x": x}, {"q": _packed(wrong, DT.FP4), "w": want_w}, rtol=0.0,
                 atol=0.0, overwrite=True)
    with pytest.raises(GoldenMismatchError) as info:
        quantize(x, q, w, config=RunConfig(platform="a5sim", golden_data_dir=golden))
    expected = table(DT.FP4)[wrong[0, 0]]
    assert f"actual 4.0, expected {expected}" in str(info.value), str(info.value)


def test_golden_to_dtype_rounds_into_the_4bit_types_and_packs():
    from pypto.golden.portable import to_dtype

    x = np.concatenate([edges(DT.FP4)[:64], np.arange(-32, 32) / 3]).reshape(2, 64)
    fp4 = to_dtype(x, DT.FP4)
    assert fp4.dtype is torch.float4_e2m1fn_x2 and tuple(fp4.shape) == (2, 32)
    np.testing.assert_array_equal(fp4.view(torch.uint8).numpy(),
                                  formats.pack_nibbles(formats.to_fp4(x, "rint")))
    hf4 = to_dtype(x, DT.HF4)
    np.testing.assert_array_equal(hf4.numpy(), formats.pack_nibbles(formats.to_hf4(x, "rint")))
    ints = np.array([[-8, 7, 0, -1], [3, -3, 5, -5]])
    np.testing.assert_array_equal(formats.unpack_nibbles(to_dtype(ints, DT.INT4).numpy()),
                                  ints & 0xF)
    with pytest.raises(ValueError):
        to_dtype(np.array([[16, 0]]), DT.UINT4)


# -- device code: refused, saying why; the pto-isa facts behind the reasons ----------------


@pytest.mark.parametrize(("platform", "dtype", "why"), [
    ("a5cpu", DT.FP4, "its TCVT rounds an FP4 value to an integer"),
    ("a5cpu", DT.HF4, "hifloat4x2_t on A6 only"),
    ("a2a3cpu", DT.INT4, "int4b_t holds one element a byte"),
    ("a5cpu", DT.UINT4, "no unsigned 4-bit element type"),
])
def test_device_code_refuses_4bit_tiles_saying_why(platform, dtype, why):
    """Generating device code needs no compiler: the refusal is at the tile's line."""
    from pypto.codegen.cpp import generate
    from pypto.compiler import lower
    from pypto.ir import LoweringError
    from pypto.platform import get_platform

    p = get_platform(platform)
    program = _program([("x", "in", dtype, (R, C)), ("y", "out", dtype, (R, C))],
                       ["t = pl.load(x, [0, 0], [4, 128])", "y = pl.store(t, [0, 0], y)"],
                       "four_device.py")
    with pytest.raises(LoweringError) as info:
        generate(lower(program, p), platform=p)
    message = str(info.value)
    assert message.startswith("four_device.py:8: tile `t`"), message
    assert why in message, message


_CPU_MODEL_PROBE = r"""
#include <cstdint>
#include <cstdio>
#include <pto/pto-inst.hpp>
int main() {
    using namespace pto;
    for (int c = 0; c < 16; ++c) std::printf("%.17g\n", double(float4_e2m1x2_t::FromRaw(c)));
    for (int c = 0; c < 16; ++c) std::printf("%.17g\n", double(float4_e1m2x2_t::FromRaw(c)));
    for (int c = 0; c < 8; ++c) {
        const bfloat16_t b = convert_value<bfloat16_t, float4_e2m1x2_t>(
            float4_e2m1x2_t::FromRaw(c), RoundMode::CAST_RINT);
        std::printf("%.17g\n", double(float(b)));
    }
    const double probes[] = {0.75, 1.25, 5.0};
    for (double v : probes) std::printf("%d\n", int(float4_e2m1x2_t(v).RawData()));
    std::printf("%d\n", int(sizeof(int4b_t)));
}
"""


@pytest.mark.slow  # compiles pto-isa's CPU model (several seconds)
def test_pto_isa_cpu_model_4bit_facts(tmp_path):
    """The facts behind device code's refusals and docs/numerics.md: pto-isa's CPU model
    decodes float4_e2m1x2_t as FP4 and float4_e1m2x2_t as HF4's values (but -0 as +0), yet
    its TCVT from FP4 rounds to an integer (0.5 -> 0, 1.5 -> 2), its float4 constructor
    truncates (0.75 -> 0.5, 1.25 -> 1, 5 -> 4), and its int4b_t is a byte an element.
    When this fails, pto-isa changed: the refusals' reasons are to be re-examined."""
    from pypto.platform import CompilerNotFoundError, find_compiler, get_platform
    from pypto.toolchain.compiler import CPU_MODEL_INCLUDE_DIR
    from pypto.toolchain.pto_isa import PtoIsaNotFoundError, pto_isa_include

    try:
        compiler = find_compiler(get_platform("a5cpu"))
        include = pto_isa_include()
    except (CompilerNotFoundError, PtoIsaNotFoundError) as e:
        pytest.skip(str(e))
    src, exe = tmp_path / "probe.cpp", tmp_path / "probe"
    src.write_text(_CPU_MODEL_PROBE)
    subprocess.run([str(compiler.path), *compiler.args, "-std=c++23",
                    "-D__STDCPP_BFLOAT16_T__=1", "-D__CPU_SIM", "-w",
                    f"-I{CPU_MODEL_INCLUDE_DIR}", f"-I{include}", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    lines = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    values = np.array([float(v) for v in lines[:32]])
    np.testing.assert_array_equal(values[:16], table(DT.FP4))
    np.testing.assert_array_equal(values[16:32], table(DT.HF4))
    assert not np.signbit(values[[8, 24]]).any()  # code 8 (-0) reads as +0
    np.testing.assert_array_equal([float(v) for v in lines[32:40]], [0, 0, 1, 2, 2, 3, 4, 6])
    assert [int(v) for v in lines[40:43]] == [1, 2, 6]  # 0.5, 1.0, 4.0: truncated
    assert int(lines[43]) == 1
