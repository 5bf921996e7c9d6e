"""The partial arithmetic and the fills in device code: pl.part_add / part_mul / part_max /
part_min are TPARTADD ... TPARTMIN on views holding each operand's valid region,
pl.fillpad_expand is TFILLPAD_EXPAND, pl.tile.ci is TCI; proven on pto-isa's CPU model
against the simulators.  Element types neither the backend nor the CPU model takes are
refused at the line."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir import LoweringError
from pypto.ir.types import FunctionType
from pypto.platform import get_platform

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

R, C = 16, 64
VR, VC = 8, 40


@pl.jit.incore
def partial(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
            h: pl.Tensor[[R, C], pl.FP16], i: pl.Tensor[[R, C], pl.INT32],
            add: pl.Out[pl.Tensor[[R, C], pl.FP32]], mul: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            top: pl.Out[pl.Tensor[[R, C], pl.FP32]], low: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            add_h: pl.Out[pl.Tensor[[R, C], pl.FP16]],
            max_i: pl.Out[pl.Tensor[[R, C], pl.INT32]],
            nested: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            wide: pl.Out[pl.Tensor[[2 * R, 2 * C], pl.FP32]],
            wide_i: pl.Out[pl.Tensor[[R, 2 * C], pl.INT32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C], valid_shape=[VR, VC])
    g = pl.load(h, [0, 0], [R, C])
    gy = pl.load(h, [0, 0], [R, C], valid_shape=[R, VC])
    n = pl.load(i, [0, 0], [R, C])
    ny = pl.load(i, [0, 0], [R, C], valid_shape=[VR, C])
    rows = pl.load(a, [0, 0], [R, C], valid_shape=[VR, C])
    add = pl.store(pl.part_add(x, y), [0, 0], add)
    mul = pl.store(pl.part_mul(y, x), [0, 0], mul)
    top = pl.store(pl.part_max(x, y), [0, 0], top)
    low = pl.store(pl.part_min(y, x), [0, 0], low)
    add_h = pl.store(pl.part_add(gy, g), [0, 0], add_h)
    max_i = pl.store(pl.part_max(n, ny), [0, 0], max_i)
    nested = pl.store(pl.part_add(rows, y), [0, 0], nested)  # the result's region: rows'
    wide = pl.store(pl.fillpad_expand(y, [2 * R, 2 * C], pl.PadValue.min), [0, 0], wide)
    wide_i = pl.store(pl.fillpad_expand(ny, [R, 2 * C], pl.PadValue.max), [0, 0], wide_i)
    return add, mul, top, low, add_h, max_i, nested, wide, wide_i


def _arguments():
    g = torch.Generator().manual_seed(51)
    # Exact values (small integers and halves): no signed-zero ties or NaN, where the CPU
    # model's std::max / std::min and pl.maximum part (docs/numerics.md).
    a = torch.randint(-64, 64, (R, C), generator=g).float() / 2
    b = torch.randint(-64, 64, (R, C), generator=g).float() / 2
    a[0, :2] = torch.tensor([float("inf"), -1e30])
    h = (torch.randint(-512, 512, (R, C), generator=g) / 4).half()
    i = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    outs = [torch.zeros(R, C) for _ in range(4)]
    outs += [torch.zeros(R, C, dtype=torch.float16), torch.zeros(R, C, dtype=torch.int32),
             torch.zeros(R, C), torch.zeros(2 * R, 2 * C),
             torch.zeros(R, 2 * C, dtype=torch.int32)]
    return [a, b, h, i, *outs]


def _incore(program, platform: str):
    (fn,) = [f for f in lower(program, get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    return fn


def test_each_partial_operator_is_its_instruction_on_valid_views():
    source = device_kernel(_incore(partial.frontend(*_arguments()), "a2a3cpu")).cpp
    for name, count in (("TPARTADD", 3), ("TPARTMUL", 1), ("TPARTMAX", 2), ("TPARTMIN", 1),
                        ("TFILLPAD_EXPAND", 2)):
        assert source.count(f"{name}(") == count, name
    assert f"{VR}, {VC}>" in source  # the smaller operand's view: its valid region


@pl.jit.incore
def add_bf16(a: pl.Tensor[[R, C], pl.BF16], out: pl.Out[pl.Tensor[[R, C], pl.BF16]]):
    x = pl.load(a, [0, 0], [R, C])
    out = pl.store(pl.part_add(x, pl.load(a, [0, 0], [R, C], valid_shape=[VR, C])), [0, 0], out)
    return out


@pl.jit.incore
def add_u16(a: pl.Tensor[[R, C], pl.UINT16], out: pl.Out[pl.Tensor[[R, C], pl.UINT16]]):
    x = pl.load(a, [0, 0], [R, C])
    out = pl.store(pl.part_add(x, pl.load(a, [0, 0], [R, C], valid_shape=[VR, C])), [0, 0], out)
    return out


@pytest.mark.parametrize(("kernel", "dtype", "platform", "message"), [
    (add_bf16, torch.bfloat16, "a2a3cpu",
     "Ascend910B backend's TPARTADD with pto-isa's CPU model takes FP16, FP32, INT16, INT32 "
     "tiles, not BF16"),
    (add_u16, torch.uint16, "a5cpu",
     "TPARTADD with pto-isa's CPU model takes FP16, BF16, FP32, INT8, UINT8, INT16, INT32 "
     "tiles, not UINT16"),
])
def test_element_types_the_instruction_does_not_take_are_refused_at_the_line(
        kernel, dtype, platform, message):
    t = torch.zeros(R, C, dtype=dtype)
    with pytest.raises(LoweringError, match=message) as info:
        device_kernel(_incore(kernel.frontend(t, t), platform),
                      backend=get_platform(platform).backend.name)
    assert "test_device_partial.py" in str(info.value)


def test_an_eight_byte_fill_is_refused_at_the_line():
    @pl.jit.incore
    def wide(a: pl.Tensor[[R, C], pl.INT64], out: pl.Out[pl.Tensor[[R, 2 * C], pl.INT64]]):
        x = pl.load(a, [0, 0], [R, C], valid_shape=[VR, C])
        out = pl.store(pl.fillpad_expand(x, [R, 2 * C]), [0, 0], out)
        return out

    program = wide.frontend(torch.zeros(R, C, dtype=torch.int64),
                            torch.zeros(R, 2 * C, dtype=torch.int64))
    with pytest.raises(LoweringError, match="TFILLPAD_EXPAND takes 1-, 2- and 4-byte elements, "
                                            "not INT64") as info:
        device_kernel(_incore(program, "a5cpu"))
    assert "test_device_partial.py" in str(info.value)


# Slow: a CPU-model build and a simulator build per platform.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_the_partial_operators_on_the_cpu_model_are_the_simulators(platform):
    add, mul, top, low, add_h, max_i, nested, wide, wide_i = \
        outputs_agreeing_with_the_simulator(partial, _arguments, 4, platform)
    a, b, h, i = _arguments()[:4]
    inner = (slice(0, VR), slice(0, VC))
    want = a.clone()
    want[inner] = a[inner] + b[inner]
    assert torch.equal(add, want)
    want[inner] = torch.maximum(a[inner], b[inner])
    assert torch.equal(top, want)
    assert torch.equal(nested[:VR], a[:VR] + torch.nn.functional.pad(b[:VR, :VC], (0, C - VC)))
    assert torch.equal(wide[:VR, :VC], b[inner]) and (wide[VR:] == float("-inf")).all()
    assert (wide_i[:, C:] == 2**31 - 1).all() and torch.equal(wide_i[:VR, :C], i[:VR])


@pl.jit.incore
def sequences(start: pl.Scalar[pl.INT32], up: pl.Out[pl.Tensor[[1, C], pl.INT32]],
              down: pl.Out[pl.Tensor[[1, C], pl.INT32]],
              short: pl.Out[pl.Tensor[[1, C], pl.INT16]]):
    up = pl.store(pl.tile.ci(start, [1, C]), [0, 0], up)
    down = pl.store(pl.tile.ci(start, [1, C], descending=True), [0, 0], down)
    short = pl.store(pl.tile.ci(32740, [1, C], pl.INT16), [0, 0], short)
    return up, down, short


def _sequence_arguments():
    return [-9, torch.zeros(1, C, dtype=torch.int32), torch.zeros(1, C, dtype=torch.int32),
            torch.zeros(1, C, dtype=torch.int16)]


def test_a_sequence_is_tci_with_its_direction_as_a_template_argument():
    source = device_kernel(_incore(sequences.frontend(*_sequence_arguments()), "a5cpu")).cpp
    assert "int32_t, 0>(" in source and "int32_t, 1>(" in source and "int16_t, 0>(" in source


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_the_sequences_on_the_cpu_model_are_the_simulators(platform):
    up, down, short = outputs_agreeing_with_the_simulator(
        sequences, _sequence_arguments, 1, platform)
    j = torch.arange(C)
    assert torch.equal(up[0], (-9 + j).int()) and torch.equal(down[0], (-9 - j).int())
    assert torch.equal(short[0], ((32740 + j + 2**15) % 2**16 - 2**15).short())  # wraps
