"""`pl.no_dep(t)` at a kernel-call argument: that task's access to `t` is left out of
dependency inference (upstream's marker; `no_dep_args=[t]` on a pl.at block or a
pl.submit says the same).  It is an assertion: the race detector reports it when the
accesses do conflict after all."""

from __future__ import annotations

import json

import pytest
import torch
from located_errors import COPY_KERNEL, entry_error

import pypto.language as pl
from pypto.ir import ParseError
from pypto.ir.nodes import FuncCall
from pypto.runtime import RunConfig

R, C = 16, 128
HALF = R // 2


@pl.jit.incore
def put(x: pl.Tensor[[R, C], pl.FP32], row: pl.Scalar[pl.INDEX],
        out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    # Rows written in the kernel's own loop: the task is handed all of `out`
    # (narrow_task_arguments cannot bound them), whatever rows it writes.
    for i in pl.range(2):
        t = pl.load(x, [row + i * 4, 0], [4, C])
        out = pl.store(pl.add(t, 1.0), [row + i * 4, 0], out)
    return out


@pl.jit
def tracked(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    out = put(x, 0, out)
    out = put(x, HALF, out)
    return out


@pl.jit
def untracked(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    out = put(x, 0, out)
    out = put(x, HALF, pl.no_dep(out))  # the two halves are disjoint: no edge needed
    return out


@pl.jit
def spelled_as_tensor_op(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    out = put(x, 0, out)
    out = put(x, HALF, pl.tensor.no_dep(out))
    return out


@pl.jit.incore
def read_top(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    t = pl.load(x, [0, 0], [HALF, C])
    out = pl.store(t, [HALF, 0], out)
    return out


@pl.jit
def wrongly_untracked(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                      out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y = put(x, 0, y)
    out = read_top(pl.no_dep(y), out)  # reads what put writes: the edge was real
    return out


def _edges(work_dir) -> list:
    deps = json.loads(next(work_dir.rglob("deps.json")).read_text())
    return deps["edges"]


def _run(program, tmp_path, monkeypatch, *args, detect_races=False):
    # The race detector checks the accesses as handed (all of `out` here), tracked or not:
    # it reports the disjoint writers too (docs/dependencies.md), so only the wrong
    # assertion runs under it.
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    program(*args, config=RunConfig(platform="a2a3sim", enable_dep_gen=True,
                                     detect_races=detect_races))


def _expected(x):
    return x + 1.0


def test_without_the_marker_the_second_writer_waits_for_the_first(tmp_path, monkeypatch):
    x, out = torch.randn(R, C), torch.zeros(R, C)
    _run(tracked, tmp_path, monkeypatch, x, out)
    assert torch.equal(out, _expected(x))
    assert [(e["src"], e["dst"]) for e in _edges(tmp_path)] == [(0, 1)]


@pytest.mark.parametrize("program", [untracked, spelled_as_tensor_op])
def test_the_marked_argument_adds_no_edge(program, tmp_path, monkeypatch):
    x, out = torch.randn(R, C), torch.zeros(R, C)
    _run(program, tmp_path, monkeypatch, x, out)
    assert torch.equal(out, _expected(x))
    assert _edges(tmp_path) == []


def test_the_ir_names_the_argument_and_prints_the_marker_back():
    x, out = torch.randn(R, C), torch.zeros(R, C)
    for program in (untracked.frontend(x, out), untracked.lower(x, out)):
        calls = [s.value for s in program.entry_function.body
                 if isinstance(getattr(s, "value", None), FuncCall)]
        assert [[v.name for v in c.no_dep_args] for c in calls] == [[], ["out"]]
        text = program.as_python()
        assert "pl.no_dep(out))" in text
        assert pl.parse(text) == program


def test_a_wrong_assertion_is_a_race_the_detector_reports(tmp_path, monkeypatch):
    x, y, out = torch.randn(R, C), torch.zeros(R, C), torch.zeros(R, C)
    with pytest.raises(Exception, match="read-after-write race"):
        _run(wrongly_untracked, tmp_path, monkeypatch, x, y, out, detect_races=True)


@pytest.mark.parametrize("body, message", [
    ("    y = pl.no_dep(x)\n    out = k(y, out)", "marks an argument of a kernel call"),
    ("    out = k(x, pl.no_dep(out, x))", "marks one tensor argument"),
    ("    out = k(pl.no_dep(x[0:16, :]), out)", "marks a tensor of this function"),
    ("    with pl.at(level=pl.Level.CORE_GROUP):\n        out[:] = pl.add(pl.no_dep(x), 1.0)",
     "marks an argument of a kernel call"),
])
def test_a_marker_anywhere_else_is_refused_at_its_line(body, message):
    error, lines = entry_error(body, ParseError, before=COPY_KERNEL)
    assert message in str(error)
    assert "pl.no_dep" in lines[error.span.line - 1]
