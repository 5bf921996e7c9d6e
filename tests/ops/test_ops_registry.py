"""The op registry is complete: every device operator has docs, a pl stub, one template
macro and one simulator instruction, and every form prints and parses back."""

from __future__ import annotations

import functools
import re

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.codegen.environment import TEMPLATES_DIR
from pypto.ir.ops import all_ops
from pypto.ir.options import VerificationLevel
from pypto.sim import INCLUDE_DIR

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

# They become pl.store / pl.full / pl.tile.ci / pl.tile.mgather / pl.tile.random /
# pl.tile.mscatter / pl.tile.scatter in TensorToTile, pl.matmul per batch in FlattenBatchTiles.
LOWERED_BEFORE_CODEGEN = {"assemble", "tensor.full", "tensor.ci", "tensor.gather", "tensor.random",
                          "scatter_update", "tensor.scatter", "batch_matmul", "paged_gather"}


def _isa_functions() -> set[str]:
    text = "".join(p.read_text() for p in (INCLUDE_DIR / "pto").glob("*.hpp"))
    return set(re.findall(r"inline void (\w+)\(", text))


def test_every_device_operator_has_docs_a_stub_a_macro_and_an_instruction():
    macros = set(re.findall(r"{% macro (\w+)\(", (TEMPLATES_DIR / "ops.cpp.j2").read_text()))
    isa = _isa_functions()
    for name, op in all_ops().items():
        assert len(op.doc) > 20, name
        # `tile.assemble` is reached as pl.tile.assemble
        stub = functools.reduce(getattr, name.split("."), pl)
        assert type(stub).__name__ == "OpStub" and stub.name == name, name
        # Scalar queries, orchestration statements, cache hints (left out of simulator
        # kernels, refused in device code), what TensorToTile lowers and the composite
        # operators (LowerCompositeOps expands them) have no macro.
        if op.expansion:
            assert not (op.emit or op.isa or op.isa_scalar or op.isa_rscalar), name
            continue
        if op.category in ("index", "orchestration", "prefetch") \
                or name in LOWERED_BEFORE_CODEGEN:
            continue
        assert op.emit in macros, f"{name}: no macro {op.emit!r}"
        for fn in (op.isa, op.isa_scalar, op.isa_rscalar):
            assert not fn or fn in isa, f"{name}: no instruction {fn!r}"


@pl.program
class every_form:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: pl.Tensor[[16, 32], pl.FP32], h: pl.Tensor[[32, 16], pl.FP16],
               out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
               mm: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> tuple[
            pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]:
        t: pl.Tile[[16, 32], pl.FP32, [16, 30]] = pl.load(x, [0, 0], [16, 32], valid_shape=[16, 30],
                                                          pad_value=pl.PadValue.min)
        tmp = pl.create_tile([16, 32], pl.FP32)
        f = pl.fillpad(t, pl.PadValue.zero)
        m = pl.row_max(f, tmp)
        e = pl.row_expand_expdif(f, m)
        s = pl.col_sum(e, tmp)
        n = pl.col_expand_div(e, s)
        k = pl.sel(pl.cmp(n, 0.5, cmp_type=4), n, pl.expands(n, 0.0))
        w = pl.set_validshape(pl.concat(k[0:16, 0:16], k[0:16, 16:32]), 16, 30)
        r = pl.transpose(pl.reshape(pl.full([32, 16], pl.FP32, 1.0), [16, 32]))
        y = pl.add(w, pl.transpose(r, 0, 1))
        out = pl.store(y, [0, 0], out)
        a = pl.load(h, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(a, pl.Mem.Left), pl.move(a, pl.Mem.Right), a_trans=True)
        acc = pl.matmul_acc(acc, pl.move(a, pl.Mem.Left), pl.move(a, pl.Mem.Right), a_trans=True)
        mm = pl.store(acc, [0, 0], mm)
        return out, mm

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32], h: pl.Tensor[[32, 16], pl.FP16],
             out: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
             mm: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> tuple[
            pl.Tensor[[16, 32], pl.FP32], pl.Tensor[[16, 16], pl.FP32]]:
        out, mm = self.kernel(x, h, out, mm)
        return out, mm


def test_every_form_prints_and_parses_back_after_every_pass():
    assert pl.parse(every_form.as_python()) == every_form
    compiled = ir.compile(every_form, dump_passes=False, platform="a5sim",
                          verification_level=VerificationLevel.ROUNDTRIP)
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(71))
    h = torch.randn(32, 16, generator=torch.Generator().manual_seed(72)).half()
    out, mm = torch.full((16, 32), 9.0), torch.empty(16, 16)
    compiled(x, h, out, mm)
    torch.testing.assert_close(mm, 2 * (h.float().T @ h.float()), rtol=1e-5, atol=1e-5)
    f = torch.nn.functional.pad(x[:, :30], (0, 2))
    e = torch.exp(f - f.amax(dim=1, keepdim=True))
    n = e / e.sum(dim=0, keepdim=True)
    want = torch.where(n > 0.5, n, torch.zeros_like(n)) + 1.0
    torch.testing.assert_close(out[:, :30], want[:, :30], rtol=1e-5, atol=1e-6)
