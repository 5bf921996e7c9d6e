"""Upstream PyPTO's remainders, leaky ReLUs and three-operand sums (pl.fmod / pl.fmods,
pl.tile.rem / rems, lrelu, prelu, addc, subc, addsc, subsc; the PTO instructions TFMOD,
TREM, TLRELU, TPRELU, TADDC, ...) and pl.tile.max / min: on both simulators they are torch's
functions wherever torch defines them (negative operands, infinities, NaN), and the
registry's meaning where it does not (an integer divisor of 0 or -1); device code refuses
them at the user's line."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.debug.torch_runtime import reference
from pypto.ir import LoweringError, TypeCheckError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

PLATFORMS = ["a2a3sim", "a5sim"]
R, C = 8, 32
LANES = 10


@pl.jit.incore
def float_lanes(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
                c: pl.Tensor[[R, C], pl.FP32],
                out: pl.Out[pl.Tensor[[LANES * R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    z = pl.load(c, [0, 0], [R, C])
    out = pl.store(pl.fmod(x, y), [0 * R, 0], out)
    out = pl.store(pl.fmods(x, -1.5), [1 * R, 0], out)
    out = pl.store(pl.tile.rem(x, y), [2 * R, 0], out)
    out = pl.store(pl.tile.rems(x, -1.5), [3 * R, 0], out)
    out = pl.store(pl.tile.lrelu(x, 0.2), [4 * R, 0], out)
    out = pl.store(pl.tile.prelu(x, y, pl.create_tile([R + 1, C], pl.FP32)), [5 * R, 0], out)
    out = pl.store(pl.tile.addc(x, y, z), [6 * R, 0], out)
    out = pl.store(pl.tile.subc(x, y, z), [7 * R, 0], out)
    out = pl.store(pl.tile.addsc(x, 2.5, z), [8 * R, 0], out)
    out = pl.store(pl.tile.subsc(x, 2.5, z), [9 * R, 0], out)
    return out


def _float_inputs():
    g = torch.Generator().manual_seed(21)
    a, b, c = (torch.randn(R, C, generator=g) * 5 for _ in range(3))
    inf, nan = float("inf"), float("nan")
    # Dividend and divisor signs in every pairing, exact multiples (a -0.0 fmod), zeros,
    # infinities and NaN on either side.
    a[0, :12] = torch.tensor([7.5, -7.5, 7.5, -7.5, -4.0, 4.0, -0.0, 3.0, inf, -2.0, nan, 1.0])
    b[0, :12] = torch.tensor([2.0, 2.0, -2.0, -2.0, 2.0, -2.0, 3.0, 0.0, 2.0, inf, 1.0, nan])
    return a, b, c


def _float_want(a, b, c):
    return [torch.fmod(a, b), torch.fmod(a, -1.5), torch.remainder(a, b),
            torch.remainder(a, -1.5), torch.nn.functional.leaky_relu(a, 0.2),
            torch.where(a > 0, a, a * b), (a + b) + c, (a - b) + c, (a + 2.5) + c,
            (a - 2.5) + c]


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal bit for bit, any NaN matching any NaN."""
    both_nan = torch.isnan(got) & torch.isnan(want)
    return bool(torch.all(both_nan | ((got == want) & (torch.signbit(got) == torch.signbit(want)))))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_float_lanes_are_torchs_functions_on_edge_values(platform):
    a, b, c = _float_inputs()
    out = torch.empty(LANES * R, C)
    float_lanes(a, b, c, out, config=RunConfig(platform=platform))
    for i, want in enumerate(_float_want(a, b, c)):
        assert _same(out[i * R:(i + 1) * R], want), i
    # The registry's torch semantics are the same functions.
    assert _same(reference("rem")(a, b), torch.remainder(a, b))
    assert _same(reference("fmod")(a, -1.5), torch.fmod(a, -1.5))


def test_a_negative_dividend_keeps_its_sign_in_fmod_and_takes_the_divisors_in_rem():
    a, b, c = _float_inputs()
    out = torch.empty(LANES * R, C)
    float_lanes(a, b, c, out, config=RunConfig(platform="a2a3sim"))
    fmod, rem = out[0, :8].tolist(), out[2 * R, :8].tolist()
    assert fmod[:4] == [1.5, -1.5, 1.5, -1.5] and rem[:4] == [1.5, 0.5, -0.5, -1.5]
    assert str(fmod[4]) == "-0.0" and str(rem[4]) == "-0.0"  # -4 fmod 2: -0, never moved
    assert str(fmod[6]) == "-0.0" and torch.isnan(out[0, 7])  # x fmod 0 is NaN


@pl.jit.incore
def int_lanes(a: pl.Tensor[[R, C], pl.INT32], b: pl.Tensor[[R, C], pl.INT32],
              out: pl.Out[pl.Tensor[[6 * R, C], pl.INT32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    out = pl.store(pl.fmod(x, y), [0 * R, 0], out)
    out = pl.store(pl.tile.rem(x, y), [1 * R, 0], out)
    out = pl.store(pl.fmods(x, -7), [2 * R, 0], out)
    out = pl.store(pl.tile.rems(x, -7), [3 * R, 0], out)
    out = pl.store(pl.tile.addc(x, y, x), [4 * R, 0], out)
    out = pl.store(pl.tile.subsc(x, 5, y), [5 * R, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_integer_remainders_give_zero_for_a_divisor_of_zero_or_minus_one(platform):
    g = torch.Generator().manual_seed(22)
    a = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    b = torch.randint(-100, 100, (R, C), generator=g, dtype=torch.int32)
    lo = -2**31
    a[0, :8] = torch.tensor([7, -7, 7, -7, 5, lo, lo, 2**31 - 1], dtype=torch.int32)
    b[0, :8] = torch.tensor([3, 3, -3, -3, 0, -1, 0, 2**31 - 1], dtype=torch.int32)
    out = torch.empty(6 * R, C, dtype=torch.int32)
    int_lanes(a, b, out, config=RunConfig(platform=platform))
    assert out[0, :8].tolist() == [1, -1, 1, -1, 0, 0, 0, 0]
    assert out[R, :8].tolist() == [1, 2, -2, -1, 0, 0, 0, 0]
    defined = (b != 0) & (b != -1)
    safe = torch.where(defined, b, 1)
    want = [torch.where(defined, torch.fmod(a, safe), 0),
            torch.where(defined, torch.remainder(a, safe), 0),
            torch.fmod(a, -7), torch.remainder(a, -7)]
    for i, w in enumerate(want):
        assert torch.equal(out[i * R:(i + 1) * R], w), i
    wrap = (a.long() + b.long() + a.long()) & 0xFFFFFFFF, (a.long() - 5 + b.long()) & 0xFFFFFFFF
    for i, w in enumerate(wrap, start=4):
        assert torch.equal(out[i * R:(i + 1) * R].long() & 0xFFFFFFFF, w), i


@pl.jit.incore
def half_lanes(a: pl.Tensor[[R, C], pl.FP16], b: pl.Tensor[[R, C], pl.FP16],
               out: pl.Out[pl.Tensor[[3 * R, C], pl.FP16]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C])
    out = pl.store(pl.tile.rem(x, y), [0, 0], out)
    out = pl.store(pl.tile.lrelu(x, 0.1), [R, 0], out)
    out = pl.store(pl.tile.addc(x, y, y), [2 * R, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_lanes_round_once_per_operation(platform):
    g = torch.Generator().manual_seed(23)
    a, b = (torch.randn(R, C, generator=g).mul(300).half() for _ in range(2))
    out = torch.empty(3 * R, C, dtype=torch.float16)
    half_lanes(a, b, out, config=RunConfig(platform=platform))
    slope = torch.tensor(0.1, dtype=torch.float16).float()  # rounded to FP16 first
    want = [torch.remainder(a.float(), b.float()).half(),
            torch.where(a > 0, a.float(), a.float() * slope).half(), (a + b) + b]
    for i, w in enumerate(want):
        assert _same(out[i * R:(i + 1) * R], w), i


@pl.jit
def tensor_level(x: pl.Tensor, y: pl.Tensor, r: pl.Out[pl.Tensor], s: pl.Out[pl.Tensor],
                 p: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        r[:] = pl.tensor.rem(x, y)
        s[:] = pl.tensor.addc(x, y, x)
        p[:] = pl.tensor.prelu(x, y)
    return r, s, p


def test_tensor_level_forms_compute_as_their_tile_forms():
    g = torch.Generator().manual_seed(24)
    x, y = torch.randn(16, 64, generator=g), torch.randn(16, 64, generator=g)
    r, s, p = (torch.zeros(16, 64) for _ in range(3))
    tensor_level(x, y, r, s, p, config=RunConfig(platform="a5sim"))
    assert torch.equal(r, torch.remainder(x, y)) and torch.equal(s, (x + y) + x)
    assert torch.equal(p, torch.where(x > 0, x, x * y))


@pl.jit.incore
def scalar_max(a: pl.Tensor[[R, C], pl.INT32], out: pl.Out[pl.Tensor[[R, C], pl.INT32]]):
    x = pl.load(a, [0, 0], [R, C])
    out = pl.store(pl.expands(x, pl.tile.max(x[0, 0], x[0, 1]) - pl.tile.min(x[0, 2], 4)),
                   [0, 0], out)
    return out


def test_tile_max_and_min_are_the_scalar_max_and_min_of_two_values():
    a = torch.zeros(R, C, dtype=torch.int32)
    a[0, :3] = torch.tensor([-3, 9, 2], dtype=torch.int32)
    out = torch.empty(R, C, dtype=torch.int32)
    scalar_max(a, out, config=RunConfig(platform="a2a3sim"))
    assert torch.equal(out, torch.full((R, C), 9 - 2, dtype=torch.int32))


def test_tile_max_of_a_tile_is_a_type_error_not_a_reduction():
    @pl.jit.incore
    def reduce(a: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, 1], pl.FP32]]):
        out = pl.store(pl.tile.max(pl.load(a, [0, 0], [R, C]), 1), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="only defined on integer scalars") as info:
        reduce.frontend(torch.zeros(R, C), torch.zeros(R, 1))
    assert "test_ops_upstream_elementwise.py" in str(info.value)


@pytest.mark.parametrize(("expr", "message"), [
    ("pl.tile.lrelu(x, x)", "the slope is a scalar"),
    ("pl.fmod(1.5, x)", "needs the tensor or tile as its first operand"),
    ("pl.tile.addsc(x, x, x)", "expected a scalar operand"),
    ("pl.tile.prelu(x, pl.cast(x, pl.FP16))", "dtype mismatch"),
    ("pl.tile.lrelu(pl.cast(x, pl.INT32), 2)", "does not support dtype INT32"),
])
def test_misused_operands_are_type_errors_at_the_line(expr, message, tmp_path):
    path = tmp_path / "misuse.py"
    path.write_text(
        "import pypto.language as pl\n\n\n@pl.jit.incore\n"
        f"def misuse(a: pl.Tensor[[{R}, {C}], pl.FP32], "
        f"out: pl.Out[pl.Tensor[[{R}, {C}], pl.FP32]]):\n"
        f"    x = pl.load(a, [0, 0], [{R}, {C}])\n"
        f"    out = pl.store(pl.cast({expr}, pl.FP32), [0, 0], out)\n"
        "    return out\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    with pytest.raises(TypeCheckError, match=message) as info:
        namespace["misuse"].frontend(torch.zeros(R, C), torch.zeros(R, C))
    assert "misuse.py:7" in str(info.value)


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_device_code_refuses_them_at_the_users_line(platform):
    program = float_lanes.frontend(*_float_inputs(), torch.empty(LANES * R, C))
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    with pytest.raises(LoweringError, match="pl.fmod has no device code: pto-isa's TFMOD "
                                            "/ TFMODS") as info:
        device_kernel(fn)
    assert "test_ops_upstream_elementwise.py" in str(info.value)
