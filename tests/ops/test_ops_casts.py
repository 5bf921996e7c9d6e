"""Every cast pair on each backend: legal ones run on the sim and match a reference,
illegal ones are rejected naming the pair and the architecture.

The reference is an exact emulation in Python of one hardware conversion (the value
rounded once by the mode, then saturated or overflowed as docs/numerics.md says),
applied hop by hop along the chain LegalizeTileCast chose.  Chains whose intermediates
cannot change a value that matters (`exact_chain`) must also equal the direct,
single-rounding conversion, and, for float destinations, torch's own conversion.
"""

from __future__ import annotations

import random

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.compiler import lower
from pypto.ir import LoweringError
from pypto.ir.dtypes import DataType as DT
from pypto.passes import cast_path
from pypto.platform import get_platform

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

R, C = 4, 128
MODES = ("rint", "floor")
PLATFORMS = ["a2a3sim", "a5sim"]

# Float formats: (significand bits with the implicit one, exponent bits, IEEE inf/NaN?).
FLOATS = {DT.FP16: (11, 5, True), DT.BF16: (8, 8, True), DT.FP32: (24, 8, True),
          DT.FP8E4M3FN: (4, 4, False), DT.FP8E5M2: (3, 5, True)}
NAN_BITS = {DT.FP16: 0x7E00, DT.BF16: 0x7FC0, DT.FP32: 0x7FC00000, DT.FP8E4M3FN: 0x7F,
            DT.FP8E5M2: 0x7E}
INTS = {d: ((-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.is_signed else (0,
                                                                                 (1 << d.bits) - 1))
        for d in DT if d.is_int}
SIGNED = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


# ----------------------------------------------------------------------------- emulation
# A value is ("nan",), ("inf", neg) or ("fin", neg, mag, exp) meaning (-1)^neg * mag * 2^exp.


def decode(dtype: DT, raw: int):
    if dtype in INTS:
        return ("fin", raw < 0, abs(raw), 0)
    p, e, ieee = FLOATS[dtype]
    mb, top = p - 1, (1 << e) - 1
    bias = (1 << (e - 1)) - 1
    frac, field, neg = raw & ((1 << mb) - 1), (raw >> mb) & top, bool(raw >> (mb + e) & 1)
    if field == top and (ieee or frac == (1 << mb) - 1):
        return ("inf", neg) if ieee and frac == 0 else ("nan",)
    if field == 0:
        return ("fin", neg, frac, 1 - bias - mb)
    return ("fin", neg, frac | (1 << mb), field - bias - mb)


def round_shift(mag: int, shift: int, neg: bool, mode: str) -> int:
    kept, rem, half = mag >> shift, mag & ((1 << shift) - 1), 1 << (shift - 1)
    if mode == "rint":
        return kept + (rem > half or (rem == half and kept & 1))
    if mode == "round":
        return kept + (rem >= half)
    if mode == "floor":
        return kept + (neg and rem != 0)
    if mode == "ceil":
        return kept + (not neg and rem != 0)
    if mode == "odd":
        return kept | (rem != 0)
    return kept  # trunc


def encode(value, dtype: DT, mode: str) -> int:
    """Bits of one conversion of `value` into dtype (ints: the value itself)."""
    if dtype in INTS:
        return _encode_int(value, *INTS[dtype], mode)
    p, e, ieee = FLOATS[dtype]
    mb, bias = p - 1, (1 << (e - 1)) - 1
    emin, emax = 1 - bias, bias if ieee else bias + 1
    max_sig = (1 << p) - (1 if ieee else 2)
    if value[0] == "nan":
        return NAN_BITS[dtype]
    neg = value[1]
    sign = int(neg) << (mb + e)
    largest = sign | (emax + bias) << mb | (max_sig & ((1 << mb) - 1))
    inf = sign | ((1 << e) - 1) << mb if ieee else largest
    if value[0] == "inf":
        return inf
    _, _, mag, exp = value
    if mag == 0:
        return sign
    mode = "rint" if mode == "none" else mode
    q = max(mag.bit_length() - 1 + exp, emin) - mb
    shift = q - exp
    sig = mag << -shift if shift <= 0 else round_shift(mag, shift, neg, mode)
    if sig >> p:
        sig, q = sig >> 1, q + 1
    if not sig >> mb:
        return sign | sig
    if q + mb > emax or (q + mb == emax and sig > max_sig):
        to_inf = mode in ("rint", "round") or (mode == "ceil" and not neg) or (
            mode == "floor" and neg)
        return inf if to_inf else largest
    return sign | (q + mb + bias) << mb | (sig & ((1 << mb) - 1))


def _encode_int(value, lo: int, hi: int, mode: str) -> int:
    if value[0] == "nan":
        return 0
    if value[0] == "inf":
        return lo if value[1] else hi
    _, neg, mag, exp = value
    mode = "trunc" if mode == "none" else mode
    m = mag << exp if exp >= 0 else round_shift(mag, -exp, neg, mode)
    return max(lo, -m) if neg else min(hi, m)


def emulate(path: list[DT], raw: int, mode: str) -> int:
    value = decode(path[0], raw)
    bits = raw
    for dtype in path[1:]:
        bits = encode(value, dtype, mode)
        value = decode(dtype, bits)
    return bits


def holds(mid: DT, src: DT) -> bool:
    """Does `mid` represent every value of `src` exactly?"""
    if src in INTS:
        lo, hi = INTS[src]
        if mid in INTS:
            return INTS[mid][0] <= lo and hi <= INTS[mid][1]
        p, e, _ = FLOATS[mid]
        return max(hi, -lo).bit_length() <= p and max(hi, -lo) < 2 ** ((1 << (e - 1)) - 1)
    if mid in INTS:
        return False
    return FLOATS[mid][0] >= FLOATS[src][0] and _exponents(mid)[0] >= _exponents(src)[0] \
        and _exponents(mid)[1] <= _exponents(src)[1]


def _exponents(dtype: DT) -> tuple[int, int]:
    """(largest binary exponent, exponent of the smallest subnormal) of a float format."""
    p, e, ieee = FLOATS[dtype]
    bias = (1 << (e - 1)) - 1
    return (bias if ieee else bias + 1), 1 - bias - (p - 1)


def dst_limit(dst: DT) -> int:
    """A power of two above every finite value of dst (floats: past the overflow point)."""
    if dst in INTS:
        return max(INTS[dst][1], -INTS[dst][0]) + 1
    _, e, ieee = FLOATS[dst]
    return 2 ** (((1 << (e - 1)) - 1) + (1 if ieee else 2))


def _harmless(mid: DT, src: DT, dst: DT) -> bool:
    """Can `mid` between src and dst not change the result of the direct conversion?

    It holds every source value; or the integers it cannot hold lie beyond dst's range
    anyway (INT32 -> FP32 -> FP16: FP32 rounds only past 2^24, FP16 overflows at 65520);
    or it is an integer type covering dst's range, reached after the one rounding to an
    integer (saturations compose: FP16 -> INT32 -> UINT16).
    """
    if holds(mid, src):
        return True
    if src in INTS and mid in FLOATS:
        return 2 ** FLOATS[mid][0] >= dst_limit(dst) and (
            dst in INTS or FLOATS[mid][1] >= FLOATS[dst][1])
    return mid in INTS and dst in INTS and INTS[mid][0] <= INTS[dst][0] \
        and INTS[dst][1] <= INTS[mid][1]


def exact_chain(path: list[DT]) -> bool:
    """Is every intermediate of the chain harmless (see `_harmless`)?"""
    return all(_harmless(mid, path[0], path[-1]) for mid in path[1:-1])


# ----------------------------------------------------------------------------- inputs


def _raw_values(dtype: DT) -> list[int]:
    """R*C interesting source values, as bit patterns (floats) or integers."""
    rng = random.Random(dtype.code)
    if dtype in INTS:
        lo, hi = INTS[dtype]
        picks = {0, 1, -1, lo, hi, lo + 1, hi - 1, 127, 128, 255, 256, 2047, 2048, 2049, 32767,
                 32768, 65503, 65504, 65505, 65519, 65520, 65535, 65536, (1 << 24) - 1, 1 << 24,
                 (1 << 24) + 1, (1 << 24) + 3, 1 << 31, (1 << 31) - 1, 1 << 53, (1 << 53) + 1,
                 (1 << 62) + (1 << 39) + 1}
        picks |= {-v for v in picks}
        values = sorted(v for v in picks if lo <= v <= hi)
        while len(values) < R * C:
            span = rng.choice([7, 12, 17, 25, dtype.bits])
            values.append(max(lo, min(hi, rng.randrange(-(1 << span), 1 << span))))
        return values[: R * C]
    p, e, _ = FLOATS[dtype]
    bits = p + e
    if bits == 8:
        return [(i * 37) % 256 for i in range(R * C)]
    floats = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.5, 127.5, 128.0, -128.5, 255.5,
              256.5, 65504.0, 65519.0, 65520.0, 65536.0, 448.0, 464.0, 57344.0, 2.0 ** 31,
              2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 2.5000002, 1e-30, -1e-30, 6e-8, 3e-8,
              float("inf"), -float("inf"), float("nan"), 1e38, 3.4e38, 32767.5, -32768.5]
    dtype_t = dtype.to_torch()
    pattern = torch.tensor(floats).to(dtype_t).view(SIGNED[bits]).tolist()
    values = [v & ((1 << bits) - 1) for v in pattern]
    while len(values) < R * C:
        values.append(rng.getrandbits(bits))
    return values[: R * C]


def _tensor(dtype: DT, raws: list[int]) -> torch.Tensor:
    if dtype in INTS:
        if dtype.is_signed:
            return torch.tensor(raws, dtype=SIGNED[dtype.bits]).view(dtype.to_torch()).reshape(R, C)
        raws = [r - (1 << dtype.bits) if r >> (dtype.bits - 1) else r for r in raws]
    else:
        bits = dtype.bits
        raws = [r - (1 << bits) if r >> (bits - 1) else r for r in raws]
    return torch.tensor(raws, dtype=SIGNED[dtype.bits]).view(dtype.to_torch()).reshape(R, C)


def _raws(t: torch.Tensor, dtype: DT) -> list[int]:
    signed = t.contiguous().view(SIGNED[dtype.bits]).flatten().tolist()
    if dtype in INTS and dtype.is_signed:
        return signed
    return [v & ((1 << dtype.bits) - 1) for v in signed]


# ----------------------------------------------------------------------------- programs


def _dtypes() -> list[DT]:
    return [d for d in DT if d is not DT.BOOL]


# Formats the emulation here does not model (not IEEE-shaped, or packed two to a byte):
# their legal casts are run against their own references in tests/ops/test_dtypes_hf8.py
# and tests/ops/test_dtypes_4bit.py.
OWN_MODEL = (DT.HF8, DT.FP8E8M0, DT.FP4, DT.HF4, DT.INT4, DT.UINT4)


def _pairs(backend):
    legal, illegal = [], []
    for src in DT:
        for dst in DT:
            if src is dst:
                continue
            try:
                path = cast_path(src, dst, backend)
            except LoweringError:
                illegal.append((src, dst))
                continue
            if src not in OWN_MODEL and dst not in OWN_MODEL:
                legal.append((src, dst, path))
    return legal, illegal


def _program_text(legal) -> tuple[str, list, dict]:
    """One kernel casting every source to every legal destination in every mode; the
    results for one destination dtype are stacked in one output, R rows each."""
    sources = sorted({s for s, _, _ in legal}, key=lambda d: d.code)
    ins = [(f"x_{s.name}", s) for s in sources]
    rows: dict[DT, list] = {}
    for s, d, _ in legal:
        rows.setdefault(d, []).extend((s, m) for m in MODES)
    outs = [(f"o_{d.name}", d, len(rows[d]) * R) for d in sorted(rows, key=lambda d: d.code)]
    params = [f"{n}: pl.Tensor[[{R}, {C}], pl.{s.name}]" for n, s in ins] + [
        f"{n}: pl.Out[pl.Tensor[[{h}, {C}], pl.{d.name}]]" for n, d, h in outs]
    rets = ", ".join(f"pl.Tensor[[{h}, {C}], pl.{d.name}]" for _, d, h in outs)
    names = ", ".join([n for n, _ in ins] + [n for n, *_ in outs])
    results = ", ".join(n for n, *_ in outs)
    lines = ["import pypto.language as pl", "", "", "@pl.program", "class casts:",
             "    @pl.function(type=pl.FunctionType.InCore)",
             f"    def kernel(self, {', '.join(params)}) -> tuple[{rets}]:"]
    for n, s in ins:
        lines.append(f"        t_{s.name} = pl.load({n}, [0, 0], [{R}, {C}])")
    for n, d, _ in outs:
        for k, (s, m) in enumerate(rows[d]):
            lines.append(f"        c = pl.cast(t_{s.name}, pl.{d.name}, mode={m!r})")
            lines.append(f"        {n} = pl.store(c, [{k * R}, 0], {n})")
    lines.append(f"        return {results}")
    lines += ["", "    @pl.function(type=pl.FunctionType.Orchestration)",
              f"    def main(self, {', '.join(params)}) -> tuple[{rets}]:",
              f"        {results} = self.kernel({names})",
              f"        return {results}"]
    return "\n".join(lines) + "\n", ins, {d: (h, rows[d]) for _, d, h in outs}


_RESULTS: dict = {}


def _run_all(platform: str):
    """Build and run the platform's all-pairs kernel once; later tests reuse the result."""
    if platform not in _RESULTS:
        backend = get_platform(platform).backend
        legal, _ = _pairs(backend)
        text, ins, outs = _program_text(legal)
        compiled = ir.compile(pl.parse(text), dump_passes=False, platform=platform)
        inputs = {s: _tensor(s, _raw_values(s)) for _, s in ins}
        results = {d: torch.empty(h, C, dtype=d.to_torch()) for d, (h, _) in outs.items()}
        compiled(*[inputs[s] for _, s in ins], *results.values())
        got = {(s, d, m): results[d][k * R:(k + 1) * R]
               for d, (_, order) in outs.items() for k, (s, m) in enumerate(order)}
        _RESULTS[platform] = (legal, inputs, got)
    return _RESULTS[platform]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_legal_pair_matches_the_emulation_of_its_chain(platform):
    legal, inputs, got = _run_all(platform)
    for src, dst, path in legal:
        raws = _raws(inputs[src], src)
        for mode in MODES:
            want = [emulate(path, r, mode) for r in raws]
            have = _raws(got[(src, dst, mode)], dst)
            bad = [(hex(r), hex(h), hex(w))
                   for r, h, w in zip(raws, have, want, strict=True) if h != w]
            via = [d.name for d in path]
            assert not bad, f"{src.name}->{dst.name} ({mode}, via {via}): {bad[:3]}"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_exact_chains_equal_the_direct_conversion_and_torch(platform):
    legal, inputs, got = _run_all(platform)
    checked = []
    for src, dst, path in legal:
        if not exact_chain(path):
            continue
        raws = _raws(inputs[src], src)
        for mode in MODES:
            direct = [emulate([src, dst], r, mode) for r in raws]
            assert _raws(got[(src, dst, mode)], dst) == direct, (src, dst, mode)
        if dst in FLOATS and (src in INTS or src in FLOATS):
            theirs = inputs[src].to(dst.to_torch())
            mine = got[(src, dst, "rint")]
            same = (mine.view(SIGNED[dst.bits]) == theirs.view(SIGNED[dst.bits])) | (
                torch.isnan(mine.float()) & torch.isnan(theirs.float()))
            assert same.all(), f"{src.name}->{dst.name} differs from torch"
        checked.append((src, dst, len(path) - 2))
    assert any(hops for _, _, hops in checked)  # chains, not only native pairs, were checked
    if platform == "a5sim":
        assert (DT.INT32, DT.FP16, 1) in checked


def test_a5_int32_to_fp16_runs_through_fp32_and_a2a3_natively():
    a5, a2 = get_platform("a5sim").backend, get_platform("a2a3sim").backend
    assert cast_path(DT.INT32, DT.FP16, a5) == [DT.INT32, DT.FP32, DT.FP16]
    assert cast_path(DT.INT32, DT.FP16, a2) == [DT.INT32, DT.FP16]
    assert cast_path(DT.BF16, DT.FP16, a2) == [DT.BF16, DT.FP32, DT.FP16]
    assert cast_path(DT.FP32, DT.INT8, a2) == [DT.FP32, DT.FP16, DT.INT8]


def test_fp32_to_int8_chain_double_rounds_where_documented():
    """FP32 -> FP16 -> INT8 is not exact: 2.5000002 rounds to 2.5, then to 2 (ties even)."""
    path = cast_path(DT.FP32, DT.INT8, get_platform("a2a3sim").backend)
    assert not exact_chain(path)
    raw = torch.tensor([2.5000002]).view(torch.int32).item()
    assert emulate(path, raw, "rint") == 2 and emulate([DT.FP32, DT.INT8], raw, "rint") == 3


@pytest.mark.parametrize("platform", PLATFORMS)
def test_native_pairs_are_one_hop_and_the_rest_shortest(platform):
    backend = get_platform(platform).backend
    legal, _ = _pairs(backend)
    native = {(s, d) for s, ds in backend.native_casts.items() for d in ds}
    for src, dst, path in legal:
        if (src.name, dst.name) in native:
            assert path == [src, dst]
        else:
            assert len(path) >= 3
    for src, dsts in backend.native_casts.items():
        for dst in dsts:
            if src in DT.__members__ and dst in DT.__members__:
                assert cast_path(DT[src], DT[dst], backend) == [DT[src], DT[dst]]


def _one_cast_program(src: DT, dst: DT):
    return pl.parse(
        "import pypto.language as pl\n\n\n@pl.program\nclass one:\n"
        "    @pl.function(type=pl.FunctionType.InCore)\n"
        f"    def kernel(self, x: pl.Tensor[[{R}, {C}], pl.{src.name}], "
        f"y: pl.Out[pl.Tensor[[{R}, {C}], pl.{dst.name}]]) "
        f"-> pl.Tensor[[{R}, {C}], pl.{dst.name}]:\n"
        f"        t = pl.load(x, [0, 0], [{R}, {C}])\n"
        f"        y = pl.store(pl.cast(t, pl.{dst.name}), [0, 0], y)\n"
        "        return y\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        f"    def main(self, x: pl.Tensor[[{R}, {C}], pl.{src.name}], "
        f"y: pl.Out[pl.Tensor[[{R}, {C}], pl.{dst.name}]]) "
        f"-> pl.Tensor[[{R}, {C}], pl.{dst.name}]:\n"
        "        y = self.kernel(x, y)\n"
        "        return y\n", "casts.py")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_illegal_pair_is_rejected_naming_pair_and_architecture(platform):
    p = get_platform(platform)
    _, illegal = _pairs(p.backend)
    assert illegal
    for src, dst in illegal:
        with pytest.raises(LoweringError) as info:
            lower(_one_cast_program(src, dst), p)
        message = str(info.value)
        assert f"from {src.name} to {dst.name} on {p.backend.name}" in message, message
        assert "casts.py:" in message
