"""Upstream's partial (segmented) arithmetic and expanding fills: pl.part_add / part_mul /
part_max / part_min (TPARTADD ...) combine two tiles whose valid regions nest, an element
held by one region alone copied from that operand; pl.fillpad_expand (TFILLPAD_EXPAND)
copies a tile's valid region into a larger tile and pads the rest; pl.tensor.expand_clone
broadcasts a tensor's size-1 axis into a target tensor.  Bit for bit on both simulators
against torch, on signed zeros, infinities, NaN and integer wrap-around."""

from __future__ import annotations

import re

import pytest
import torch
from located_errors import entry_error, raised_by
from reduction_programs import same_bits

import pypto.language as pl
from pypto.debug.torch_runtime import maximum, minimum, reference
from pypto.ir import PyptoError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = [pytest.mark.small_tiles,
              pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")]

PLATFORMS = ["a2a3sim", "a5sim"]
R, C = 8, 32
VR, VC = 4, 16  # the smaller operand's valid region
OPS = {"part_add": lambda a, b: a + b, "part_mul": lambda a, b: a * b,
       "part_max": maximum, "part_min": minimum}


@pl.jit.incore
def float_lanes(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
                out: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C], valid_shape=[VR, VC])
    out = pl.store(pl.part_add(x, y), [0 * R, 0], out)
    out = pl.store(pl.part_mul(x, y), [1 * R, 0], out)
    out = pl.store(pl.part_max(x, y), [2 * R, 0], out)
    out = pl.store(pl.part_min(x, rhs=y), [3 * R, 0], out)
    out = pl.store(pl.tile.part_add(y, x), [4 * R, 0], out)
    out = pl.store(pl.tile.part_mul(y, x), [5 * R, 0], out)
    out = pl.store(pl.tile.part_max(y, x), [6 * R, 0], out)
    out = pl.store(pl.tile.part_min(src0=y, src1=x), [7 * R, 0], out)  # pl.tile's names
    return out


def _float_inputs():
    g = torch.Generator().manual_seed(41)
    a, b = (torch.randn(R, C, generator=g) * 4 for _ in range(2))
    inf, nan = float("inf"), float("nan")
    # Inside both regions: signed zeros both ways, infinities, NaN on either side, a
    # product overflowing FP32; outside the smaller region the larger operand's specials.
    a[0, :10] = torch.tensor([0.0, -0.0, inf, -inf, nan, 1.0, 3e38, -0.0, 2.0, nan])
    b[0, :10] = torch.tensor([-0.0, 0.0, -inf, 1.0, 2.0, nan, 3e38, -0.0, -inf, nan])
    a[0, VC:VC + 3] = torch.tensor([nan, -0.0, inf])
    a[VR, :3] = torch.tensor([-inf, nan, -0.0])
    b[0, VC:VC + 3] = 7.0  # outside b's region: never read into the result
    return a, b


def _want(op, lhs, rhs, lhs_region, rhs_region):
    """op(lhs, rhs) where both regions hold the element, else the one operand's."""
    out = op(lhs, rhs)
    held = []
    for region in (lhs_region, rhs_region):
        mask = torch.zeros(R, C, dtype=torch.bool)
        mask[:region[0], :region[1]] = True
        held.append(mask)
    return torch.where(held[0] & ~held[1], lhs, torch.where(held[1] & ~held[0], rhs, out))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_where_both_regions_hold_an_element_it_is_the_operation_else_a_copy(platform):
    a, b = _float_inputs()
    out = torch.empty(8 * R, C)
    float_lanes(a, b, out, config=RunConfig(platform=platform))
    lanes = [(op, a, b, (R, C), (VR, VC)) for op in OPS.values()]
    lanes += [(op, b, a, (VR, VC), (R, C)) for op in OPS.values()]
    for i, (op, lhs, rhs, lr, rr) in enumerate(lanes):
        assert same_bits(out[i * R:(i + 1) * R], _want(op, lhs, rhs, lr, rr)), i
    # The special values where both regions hold them: torch's sums and products, NaN
    # propagating through max / min.
    sums = out[0, :4].tolist()
    assert str(sums[:2]) == "[0.0, 0.0]" and sums[3] == float("-inf") and sums[2] != sums[2]
    assert torch.isnan(out[0, 4]) and torch.isnan(out[2 * R, 4]) and torch.isnan(out[3 * R, 5])
    assert out[R, 6].item() == float("inf")
    # Where x alone is valid, x's NaN, -0.0 and infinities are copied, never combined.
    assert torch.isnan(out[0, VC]) and str(out[R, VC + 1].item()) == "-0.0"
    assert out[3 * R, VC + 2].item() == float("inf") and torch.isnan(out[R + VR, 1])


def test_the_registrys_torch_semantics_are_the_same_functions():
    a, b = _float_inputs()
    for name, op in OPS.items():
        got = reference(name)(a, b, valids=[[R, C], [VR, VC]])
        assert same_bits(got, _want(op, a, b, (R, C), (VR, VC))), name
        assert same_bits(reference(name)(a, b), op(a, b)), name  # whole operands: the operation


@pl.jit.incore
def int_lanes(a: pl.Tensor[[R, C], pl.INT32], b: pl.Tensor[[R, C], pl.INT32],
              out: pl.Out[pl.Tensor[[4 * R, C], pl.INT32]]):
    x = pl.load(a, [0, 0], [R, C], valid_shape=[R, VC])
    y = pl.load(b, [0, 0], [R, C], valid_shape=[VR, VC])
    out = pl.store(pl.set_validshape(pl.part_add(x, y), R, C), [0 * R, 0], out)
    out = pl.store(pl.set_validshape(pl.part_mul(y, x), R, C), [1 * R, 0], out)
    out = pl.store(pl.set_validshape(pl.part_max(x, y), R, C), [2 * R, 0], out)
    out = pl.store(pl.set_validshape(pl.part_min(y, x), R, C), [3 * R, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_integers_wrap_and_the_padding_computes_the_operation(platform):
    g = torch.Generator().manual_seed(42)
    a = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    b = torch.randint(-2**31, 2**31 - 1, (R, C), generator=g, dtype=torch.int32)
    lo, hi = -2**31, 2**31 - 1
    a[0, :4] = torch.tensor([hi, lo, lo, 3], dtype=torch.int32)
    b[0, :4] = torch.tensor([1, -1, lo, hi], dtype=torch.int32)
    out = torch.empty(4 * R, C, dtype=torch.int32)
    int_lanes(a, b, out, config=RunConfig(platform=platform))
    assert out[0, :2].tolist() == [lo, hi]  # hi + 1 and lo - 1 wrap
    # x is valid in [R, VC] (its load padded the rest with zeros), y in [VR, VC]: the
    # result's region is x's, and beyond it (padding: neither region) the operation of
    # the two paddings.
    x = torch.zeros(R, C, dtype=torch.int32)
    x[:, :VC] = a[:, :VC]
    y = torch.zeros(R, C, dtype=torch.int32)
    y[:VR, :VC] = b[:VR, :VC]
    wrap = {"part_add": lambda p, q: (p.long() + q.long()).to(torch.int32),
            "part_mul": lambda p, q: (p.long() * q.long() & 0xFFFFFFFF).to(torch.int32),
            "part_max": torch.maximum, "part_min": torch.minimum}
    lanes = [("part_add", x, y, (R, VC), (VR, VC)), ("part_mul", y, x, (VR, VC), (R, VC)),
             ("part_max", x, y, (R, VC), (VR, VC)), ("part_min", y, x, (VR, VC), (R, VC))]
    for i, (name, lhs, rhs, lr, rr) in enumerate(lanes):
        want = _want(wrap[name], lhs, rhs, lr, rr)
        assert torch.equal(out[i * R:(i + 1) * R], want), name


@pl.jit.incore
def half_lanes(a: pl.Tensor[[R, C], pl.FP16], b: pl.Tensor[[R, C], pl.FP16],
               out: pl.Out[pl.Tensor[[2 * R, C], pl.FP16]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C], valid_shape=[R, VC])
    out = pl.store(pl.part_add(x, y), [0, 0], out)
    out = pl.store(pl.part_mul(y, x), [R, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_rounds_once_per_operation(platform):
    g = torch.Generator().manual_seed(43)
    a, b = (torch.randn(R, C, generator=g).mul(300).half() for _ in range(2))
    out = torch.empty(2 * R, C, dtype=torch.float16)
    half_lanes(a, b, out, config=RunConfig(platform=platform))
    assert same_bits(out[:R], _want(lambda p, q: p + q, a, b, (R, C), (R, VC)))
    assert same_bits(out[R:], _want(lambda p, q: p * q, b, a, (R, VC), (R, C)))


@pl.jit.incore
def nested(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
           out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C], valid_shape=[VR, C])
    y = pl.load(b, [0, 0], [R, C], valid_shape=[VR, VC])
    out = pl.store(pl.part_add(y, x), [0, 0], out)
    return out


def test_the_result_is_valid_in_the_larger_region_and_stores_only_it():
    a, b = torch.randn(R, C), torch.randn(R, C)
    out = torch.full((R, C), 5.0)
    nested(a, b, out, config=RunConfig(platform="a2a3sim"))
    want = torch.full((R, C), 5.0)
    want[:VR] = a[:VR]
    want[:VR, :VC] += b[:VR, :VC]
    assert torch.equal(out, want)


@pl.jit.incore
def runtime_region(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
                   n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C])
    y = pl.load(b, [0, 0], [R, C], valid_shape=[R, n])
    out = pl.store(pl.part_max(x, y), [0, 0], out)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_region_known_only_at_run_time_inside_a_whole_operand(platform):
    a, b = torch.randn(R, C), torch.randn(R, C)
    for n in (0, 5, C):
        out = torch.empty(R, C)
        runtime_region(a, b, n, out, config=RunConfig(platform=platform))
        assert torch.equal(out, _want(maximum, a, b, (R, C), (R, n))), n


@pl.jit.incore
def expand(a: pl.Tensor[[R, C], pl.FP32], i: pl.Tensor[[R, C], pl.INT16],
           out: pl.Out[pl.Tensor[[2 * R, 2 * C], pl.FP32]],
           low: pl.Out[pl.Tensor[[R, 2 * C], pl.INT16]],
           whole: pl.Out[pl.Tensor[[2 * R, C], pl.FP32]]):
    x = pl.load(a, [0, 0], [R, C], valid_shape=[VR, VC])
    k = pl.load(i, [0, 0], [R, C], valid_shape=[R, VC])
    out = pl.store(pl.fillpad_expand(x, [2 * R, 2 * C], pl.PadValue.min), [0, 0], out)
    low = pl.store(pl.tile.fillpad_expand(tile=k, shape=[R, 2 * C], pad_value=pl.PadValue.max),
                   [0, 0], low)
    whole = pl.store(pl.fillpad_expand(pl.load(a, [0, 0], [R, C]), [2 * R, C]), [0, 0], whole)
    return out, low, whole


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fillpad_expand_copies_the_valid_region_and_pads_the_larger_tile(platform):
    g = torch.Generator().manual_seed(44)
    a = torch.randn(R, C, generator=g)
    a[0, :3] = torch.tensor([-0.0, float("nan"), float("-inf")])
    i = torch.randint(-2**15, 2**15 - 1, (R, C), generator=g, dtype=torch.int16)
    out, low = torch.zeros(2 * R, 2 * C), torch.zeros(R, 2 * C, dtype=torch.int16)
    whole = torch.full((2 * R, C), 9.0)
    expand(a, i, out, low, whole, config=RunConfig(platform=platform))
    want = torch.full((2 * R, 2 * C), float("-inf"))
    want[:VR, :VC] = a[:VR, :VC]
    assert same_bits(out, want)
    want_low = torch.full((R, 2 * C), 2**15 - 1, dtype=torch.int16)  # max: INT16's largest
    want_low[:, :VC] = i[:, :VC]
    assert torch.equal(low, want_low)
    want_whole = torch.zeros(2 * R, C)  # pl.PadValue.zero, the default
    want_whole[:R] = a
    assert same_bits(whole, want_whole)
    assert same_bits(reference("fillpad_expand")(a, [2 * R, 2 * C], "min", valid=[VR, VC]), want)


@pytest.mark.parametrize(("expr", "message"), [
    ("pl.part_add(x, y)", r"valid regions \[4, 32\] and \[8, 16\] overlap without one holding"),
    ("pl.part_min(x, pl.cast(y, pl.FP16))", "dtype mismatch in pl.part_min"),
    ("pl.part_mul(x, x[0:4, 0:16])", r"shape mismatch in pl.part_mul"),
    ("pl.part_max(x, 2.0)", "pl.part_max: rhs must be a tensor or a tile"),
    ("pl.fillpad_expand(x, [4, 64])", r"destination shape \[4, 64\] must have the source's "
                                      r"rank and be at least its shape \[8, 32\]"),
    ("pl.fillpad_expand(x, [16, 64], pl.PadValue.null)", "needs pad_value pl.PadValue.zero"),
])
def test_misuse_is_a_type_error_at_the_line(expr, message):
    source = (
        "import pypto.language as pl\n\n\n@pl.jit.incore\n"
        f"def misuse(a: pl.Tensor[[{R}, {C}], pl.FP32], "
        f"out: pl.Out[pl.Tensor[[{R}, {C}], pl.FP32]]):\n"
        f"    x = pl.load(a, [0, 0], [{R}, {C}], valid_shape=[{VR}, {C}])\n"
        f"    y = pl.load(a, [0, 0], [{R}, {C}], valid_shape=[{R}, {VC}])\n"
        f"    out = pl.store(pl.set_validshape({expr}, {R}, {C}), [0, 0], out)\n"
        "    return out\n")
    error, lines = raised_by(source, lambda ns: ns["misuse"].frontend(torch.zeros(R, C),
                                                                      torch.zeros(R, C)),
                             TypeCheckError)
    assert re.search(message, str(error))
    assert expr in lines[error.span.line - 1]


def test_runtime_extents_that_give_no_static_region_are_refused_at_the_line():
    @pl.jit.incore
    def two_runtime(a: pl.Tensor[[R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
                    m: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        x = pl.load(a, [0, 0], [R, C], valid_shape=[R, n])
        y = pl.load(a, [0, 0], [R, C], valid_shape=[R, m])
        out = pl.store(pl.part_add(x, y), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError, match="one known only at run time, give no static "
                                             "result region") as info:
        two_runtime.frontend(torch.zeros(R, C), 3, 4, torch.zeros(R, C))
    assert "test_ops_partial.py" in str(info.value)


def test_on_tensors_the_partial_operators_are_the_operations():
    @pl.jit
    def whole(a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
              out: pl.Out[pl.Tensor[[2 * R, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, pl.tensor.part_add(a, b), [0, 0])
            out = pl.assemble(out, pl.part_max(a, b), [R, 0])
        return out

    a, b = _float_inputs()
    out = torch.empty(2 * R, C)
    whole(a, b, out, config=RunConfig(platform="a2a3sim"))
    assert same_bits(out[:R], a + b) and same_bits(out[R:], maximum(a, b))


@pl.jit
def expand_clones(row: pl.Tensor[[1, C], pl.FP32], col: pl.Tensor[[R, 1], pl.INT32],
                  same: pl.Tensor[[R, C], pl.FP32], o_row: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                  o_col: pl.Out[pl.Tensor[[R, C], pl.INT32]],
                  o_same: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        o_row = pl.tensor.expand_clone(row, o_row)
        written = pl.tensor.expand_clone(src=col, target=o_col)  # `written` names o_col
        pl.tensor.expand_clone(same, o_same)
    return o_row, written, o_same


@pytest.mark.parametrize("platform", PLATFORMS)
def test_expand_clone_broadcasts_the_size_one_axis_into_the_target(platform):
    g = torch.Generator().manual_seed(45)
    row, same = torch.randn(1, C, generator=g), torch.randn(R, C, generator=g)
    row[0, :3] = torch.tensor([-0.0, float("nan"), float("inf")])
    col = torch.randint(-2**31, 2**31 - 1, (R, 1), generator=g, dtype=torch.int32)
    outs = [torch.empty(R, C), torch.empty(R, C, dtype=torch.int32), torch.empty(R, C)]
    expand_clones(row, col, same, *outs, config=RunConfig(platform=platform))
    assert same_bits(outs[0], row.expand(R, C))
    assert torch.equal(outs[1], col.expand(R, C))
    assert same_bits(outs[2], same)


@pytest.mark.parametrize(("call", "message"), [
    ("pl.tensor.expand_clone(pl.tensor.full([1, 1], pl.FP32, 1.0), out)",
     r"along one axis where it has size 1: \[1, 1\] cannot expand to \[8, 128\]"),
    ("pl.tensor.expand_clone(pl.tensor.full([2, 128], pl.FP32, 1.0), out)",
     r"\[2, 128\] cannot expand to \[8, 128\]"),
    ("pl.tensor.expand_clone(pl.tensor.full([1, 128], pl.FP16, 1.0), out)",
     r"src FP16 \[1, 128\] and target FP32 \[8, 128\] differ in dtype or rank"),
    ("pl.tensor.expand_clone(x, out, x)", r"write pl.tensor.expand_clone\(src, target\)"),
])
def test_expand_clone_misuse_is_an_error_at_the_line(call, message):
    body = f"    with pl.at(level=pl.Level.CORE_GROUP):\n        out = {call}"
    error, lines = entry_error(body, PyptoError, rows=R)
    assert re.search(message, str(error))
    assert call in lines[error.span.line - 1]
