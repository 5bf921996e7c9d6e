"""Upstream's explicit placement: `pl.Tile[..., pl.MemRef("ub"), pl.Mem.Vec]` and the slots
form `pl.MemRef("ub", slots=2)[i % 2]` (its performance guide, "With explicit slots").  The
tile lives in an allocation of its own, in the slot the index names where the tile is
defined; the value is the same wherever it lives."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by

import pypto.language as pl
from pypto.codegen.cpp import generate
from pypto.compiler import lower
from pypto.ir import CapacityError, LoweringError, TypeCheckError
from pypto.ir.types import TileMemRef
from pypto.platform import get_platform
from pypto.runtime import KernelError, RunConfig

NT, TR, TC = 8, 16, 128
ROWS = NT * TR


@pl.jit
def slotted(a: pl.Tensor[[ROWS, TC], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            t: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i % 2], pl.Mem.Vec] = \
                pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.add(pl.mul(t, 3.0), 1.0), [i * TR, 0], out)
    return out


@pl.jit
def placed_by_the_compiler(a: pl.Tensor[[ROWS, TC], pl.FP32],
                           out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            t = pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(pl.add(pl.mul(t, 3.0), 1.0), [i * TR, 0], out)
    return out


@pl.jit
def one_slot_in_turn(a: pl.Tensor[[TR, TC], pl.FP32], out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t0: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("scratch"), pl.Mem.Vec] = \
            pl.load(a, [0, 0], [TR, TC])
        s = pl.mul(t0, 2.0)
        t1: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("scratch"), pl.Mem.Vec] = pl.exp(s)
        pl.store(t1, [0, 0], out)
    return out


@pl.jit
def slot_out_of_range(a: pl.Tensor[[ROWS, TC], pl.FP32],
                      out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(NT):
            t: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("ub", slots=2)[i], pl.Mem.Vec] = \
                pl.load(a, [i * TR, 0], [TR, TC])
            pl.store(t, [i * TR, 0], out)
    return out


def _args(rows=ROWS):
    return torch.randn(rows, TC), torch.zeros(rows, TC)


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_slots_compute_what_the_compiler_placement_does(work, platform):
    a, out = _args()
    slotted(a, out, config=RunConfig(platform=platform))
    expected = torch.zeros_like(out)
    placed_by_the_compiler(a, expected, config=RunConfig(platform=platform))
    assert torch.equal(out, expected)


def test_the_slot_is_chosen_where_the_tile_is_defined():
    a, out = _args()
    program = slotted.lower(a, out)
    kernel = generate(program).kernels[0].cpp
    # Two 8 KiB slots from 0x0; the loop places `t` in slot i % 2 before loading it.
    assert "pto::seat(t, core->vec, 0, pypto_mod(i, INT64_C(2)), 2, 8192);" in kernel
    assert kernel.index("pto::seat(t,") < kernel.index("pto::tload(t,")
    tiles = {v.name: v.type for v in _tile_vars(program)}
    assert tiles["t"].memref.name == "ub" and tiles["t"].addr == 0
    assert all(t.addr >= 2 * 8192 for name, t in tiles.items() if name != "t")  # nothing in ub


def test_the_annotation_prints_and_reads_back():
    a, out = _args()
    for program in (slotted.frontend(a, out), slotted.lower(a, out)):
        text = program.as_python()
        assert 'pl.MemRef("ub", slots=2)[i % 2]' in text
        assert pl.parse(text) == program


def test_one_slot_tiles_live_in_turn(work):
    a, out = torch.randn(TR, TC), torch.zeros(TR, TC)
    one_slot_in_turn(a, out, config=RunConfig(platform="a2a3sim"))
    frontend = one_slot_in_turn.frontend(a, out)
    assert [t.memref for t in _tile_types(frontend) if t.memref] == [TileMemRef("scratch")] * 2
    tiles = {v.name: v.type.addr for v in _tile_vars(one_slot_in_turn.lower(a, out))}
    assert tiles["t0"] == tiles["t1"]  # one allocation, used in turn
    torch.testing.assert_close(out, torch.exp(a * 2.0), rtol=1e-6, atol=1e-6)


def test_a_slot_outside_the_allocation_stops_the_run(work):
    a, out = _args()
    with pytest.raises(KernelError, match="slot 2 lies outside the allocation's 2 slots"):
        slot_out_of_range(a, out, config=RunConfig(platform="a2a3sim"))


def test_device_code_takes_one_slot_allocations_and_refuses_slots():
    a, out = torch.randn(TR, TC), torch.zeros(TR, TC)
    device = get_platform("a2a3cpu")
    generate(lower(one_slot_in_turn.frontend(a, out), device), platform=device)
    a, out = _args()
    with pytest.raises(LoweringError, match="has no device code yet") as info:
        generate(lower(slotted.frontend(a, out), device), platform=device)
    assert info.value.span is not None and info.value.span.file == __file__


def _t(placement: str) -> str:
    return f"pl.Tile[[16, 128], pl.FP32, {placement}, pl.Mem.Vec]"


@pytest.mark.parametrize("body, error, message", [
    # two tiles live together in a one-slot allocation
    ("    t0: " + _t('pl.MemRef("m")') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    t1: " + _t('pl.MemRef("m")') + " = pl.exp(t0)\n"
     "    out = pl.store(pl.add(t0, t1), [0, 0], out)", TypeCheckError, "live at the same time"),
    # ... or in one constant slot
    ("    t0: " + _t('pl.MemRef("m", slots=2)[1]') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    t1: " + _t('pl.MemRef("m", slots=2)[1]') + " = pl.exp(t0)\n"
     "    out = pl.store(pl.add(t0, t1), [0, 0], out)", TypeCheckError, "share a slot"),
    # one allocation, two slot counts
    ("    t0: " + _t('pl.MemRef("m", slots=2)[0]') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    t1: " + _t('pl.MemRef("m")') + " = pl.exp(t0)\n"
     "    out = pl.store(t1, [0, 0], out)", TypeCheckError, "one slot count"),
    # slots larger than the buffer
    ("    t0: " + _t('pl.MemRef("m", slots=64)[0]') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    out = pl.store(t0, [0, 0], out)", CapacityError, 'pl.MemRef("m", slots=64)'),
    # a slotted allocation named without its slot
    ("    t0: " + _t('pl.MemRef("m", slots=2)') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    out = pl.store(t0, [0, 0], out)", TypeCheckError, "the tile names one"),
    ("    t0: " + _t('pl.MemRef("m", slots=2)[2]') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    out = pl.store(t0, [0, 0], out)", TypeCheckError, "the slot is in [0, 2)"),
    ("    t0: " + _t('pl.MemRef("m", slots=0)[0]') + " = pl.load(x, [0, 0], [16, 128])\n"
     "    out = pl.store(t0, [0, 0], out)", TypeCheckError, "slots is a positive int"),
    ("    t0: " + _t('pl.MemRef("m", slots=2)[0.5 * 2]') + " = pl.load(x, [0, 0], "
     "[16, 128])\n    out = pl.store(t0, [0, 0], out)", TypeCheckError, "integer index"),
])
def test_what_a_placement_cannot_mean_is_refused_at_its_line(body, error, message):
    source = ("import pypto.language as pl\n\n@pl.jit.incore\n"
              "def k(x: pl.Tensor[[16, 128], pl.FP32], "
              "out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):\n" + body + "\n    return out\n")
    err, lines = raised_by(source, lambda ns: ns["k"].lower(torch.zeros(16, 128),
                                                            torch.zeros(16, 128)), error)
    assert message in str(err)
    assert "t0" in lines[err.span.line - 1] or "t1" in lines[err.span.line - 1]


def _tile_vars(program):
    from pypto.ir.types import TileType
    from pypto.ir.visitor import IRVisitor

    found = []

    class Defs(IRVisitor):
        def visit_def(self, var):
            if isinstance(var.type, TileType):
                found.append(var)

    for fn in program.functions:
        Defs().visit_function(fn)
    return found


def _tile_types(program):
    return [v.type for v in _tile_vars(program)]
