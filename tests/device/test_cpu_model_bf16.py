"""BF16 on pto-isa's CPU model, op by op against the simulators (whose BF16 follows the
device's conversions and cube): the CPU-model platforms correct pto-isa's stand-in of
_Float16 for bfloat16_t with pypto's <stdfloat> (docs/device-code.md, "BF16 on the CPU
model")."""

from __future__ import annotations

import subprocess
from fractions import Fraction

import pytest
import torch
from cpu_models import toolchain_or_skip

import pypto.language as pl
from pypto.compiler import CompileOptions, build_program
from pypto.runtime import load_artifact
from pypto.toolchain.compiler import CPU_MODEL_INCLUDE_DIR

# The 16 x 64 BF16 tiles are narrower than A2/A3 likes: its row-width hint is expected.
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def bf16_ops(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, w: pl.Tensor,
             rounded: pl.Out[pl.Tensor], widened: pl.Out[pl.Tensor], total: pl.Out[pl.Tensor],
             product: pl.Out[pl.Tensor], mm: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rounded[:] = pl.cast(x, pl.BF16)
        widened[:] = pl.cast(a, pl.FP32)
        total[:] = pl.add(a, b)
        product[:] = pl.mul(a, b)
    with pl.at(level=pl.Level.CORE_GROUP):
        mm[:] = pl.matmul(a, w)
    return rounded, widened, total, product, mm


# FP32 values whose BF16 rounding is a case of its own: zeros, infinities, NaN, overflow to
# infinity, the smallest normal and subnormal, ties to even both ways, just past a tie.
SPECIALS = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3.4028234663852886e38,
            1.1754943508222875e-38, 1.401298464324817e-45, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8,
            1.0 + 2.0**-8 + 2.0**-23, -(1.0 + 2.0**-8), 65504.0, 3.0e38, 1e-40, -2.5]


def _arguments():
    generator = torch.Generator().manual_seed(17)
    x = torch.randn(16, 64, generator=generator) * 100
    x[0, :len(SPECIALS)] = torch.tensor(SPECIALS)
    a = torch.randn(16, 64, generator=generator).to(torch.bfloat16)
    b = torch.randn(16, 64, generator=generator).to(torch.bfloat16)
    w = torch.randn(64, 32, generator=generator).to(torch.bfloat16)
    outs = [torch.zeros(16, 64, dtype=torch.bfloat16), torch.zeros(16, 64),
            torch.zeros(16, 64, dtype=torch.bfloat16), torch.zeros(16, 64, dtype=torch.bfloat16),
            torch.zeros(16, 32)]
    return [x, a, b, w, *outs]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_bf16_conversions_arithmetic_and_matmul_are_the_simulators_bits(platform):
    toolchain_or_skip(platform)
    program = bf16_ops.frontend(*_arguments())
    results = {}
    for target in (platform, platform.replace("cpu", "sim")):
        args = _arguments()
        load_artifact(build_program(program, CompileOptions(platform=target))).run(args)
        results[target] = args[4:]
    x = _arguments()[0]
    # Subnormals included: the CPU model's target CPU is fixed at the baseline, which has no
    # BF16 instruction (AVX512-BF16's vcvtneps2bf16 would flush them to zero), so every host
    # rounds them as the simulators do (docs/numerics.md).
    assert ((x != 0) & (x.abs() < torch.finfo(torch.float32).tiny)).sum() == 2
    for name, got, want in zip(("rounded", "widened", "total", "product", "mm"),
                               *results.values(), strict=True):
        assert torch.equal(_bits(got), _bits(want)), name
    rounded = results[platform][0]
    # Nearest even, as torch rounds FP32 to BF16 (NaN aside: any NaN).
    keep = ~x.isnan()
    assert torch.equal(_bits(rounded)[keep], _bits(x.to(torch.bfloat16))[keep])
    assert rounded[0, 4].isnan() and rounded[0, 5].item() == float("inf")


DOUBLES = ["1.0", "1.00390625", "1.0039062500000002", "1.01171875", "0x1.0080000000001p0",
           "3.5e38", "3.3895313892515355e38", "-3.39e38", "1e-45", "9.3e-41", "-2147483648",
           "-inf", "nan", "1e300", "-0.0"]


def _bf16_of(text: str) -> int:
    """The BF16 bits of the double `text`, rounded to nearest even (exactly, in Python)."""
    value = float.fromhex(text) if text.startswith("0x") else float(text)
    if value != value:
        return 0x7FC0
    sign = 0x8000 if str(value).startswith("-") else 0
    if value in (0.0, float("inf"), float("-inf")):
        return sign | (0x7F80 if value else 0)
    exact = abs(Fraction(value))
    # BF16: 8 significant bits, exponents down to -126 (subnormal steps of 2^-133).
    exponent = max(exact.numerator.bit_length() - exact.denominator.bit_length(), -126)
    while Fraction(2) ** exponent > exact:
        exponent -= 1
    step = Fraction(2) ** (max(exponent, -126) - 7)
    units = exact / step
    floor = units.numerator // units.denominator
    rest = units - floor
    units = floor + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2) else 0)
    rounded = units * step
    if rounded >= Fraction(2) ** 128:
        return sign | 0x7F80
    as_float = torch.tensor(float(rounded), dtype=torch.float32)
    return sign | (int(as_float.view(torch.int32)) >> 16)


DOUBLE_TO_BF16 = r"""
#include <stdfloat>
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        volatile double d = std::strtod(argv[i], nullptr);
        std::bfloat16_t b = static_cast<std::bfloat16_t>(d);
        unsigned short bits;
        std::memcpy(&bits, &b, sizeof bits);
        std::printf("%04x\n", bits);
    }
}
"""


def test_double_to_bf16_rounds_to_nearest_even_in_one_step(tmp_path):
    """The `__truncdfbf2` of pypto's <stdfloat>: through FP32 rounded to nearest would round
    1.0039062500000002 twice (to the tie 1 + 2^-8, then to 1.0)."""
    toolchain = toolchain_or_skip("a5cpu")
    (tmp_path / "convert.cpp").write_text(DOUBLE_TO_BF16)
    flags = [f for f in toolchain.flags("vector") if f != "-c"]
    subprocess.run([*toolchain.command, *flags, f"-I{CPU_MODEL_INCLUDE_DIR}", "convert.cpp",
                    "-o", "convert"], cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "convert"), *DOUBLES], check=True,
                         capture_output=True, text=True).stdout.split()
    got = [int(bits, 16) for bits in out]
    want = [_bf16_of(text) for text in DOUBLES]
    assert got == want
    # Subnormal results among them, rounded as IEEE says on every host (the fixed target).
    assert any(bits & 0x7F80 == 0 and bits & 0x7F for bits in want)
