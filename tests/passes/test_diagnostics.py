"""Each diagnostic fires at the user's line, can be silenced, and never silences errors."""

from __future__ import annotations

import warnings

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.compiler import CompileOptions, run_pipeline
from pypto.ir import DiagnosticCheck, DiagnosticPhase, ParseError
from pypto.ir.diagnostics import PyptoPerfHint, tolerance_too_tight
from pypto.platform import get_platform

HERE = __file__


def _line(kernel, offset: int) -> int:
    return kernel.fn.__code__.co_firstlineno + offset


@pl.jit
def unused(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.exp(a)  # noqa: F841 - the unused value is what the test is about
        out[:] = pl.add(a, a)
    return out


@pl.jit.incore
def carried(a: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    acc = pl.load(a, [0, 0], [16, 128])
    for i in pl.range(4):
        t = pl.load(a, [i * 16, 0], [16, 128])
        acc = pl.add(acc, t)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit
def dropped(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.add(a, a)
    return out


@pl.jit
def narrow(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)
    return out


def _diagnostics(kernel, args, platform="a2a3sim", **options):
    program = kernel.frontend(*args)
    lowered = run_pipeline(program, get_platform(platform), CompileOptions(platform, **options))
    return lowered


def _f(*shape):
    return torch.zeros(*shape)


CASES = {
    DiagnosticCheck.UnusedVariable: (unused, (_f(16, 128), _f(16, 128)), 3, {}),
    DiagnosticCheck.OutParamWriteDropped: (dropped, (_f(16, 128), _f(16, 128)), 3, {}),
    DiagnosticCheck.UnusedControlFlowResult: (
        carried, (_f(64, 128), _f(64, 128)), 3,
        {"enabled_diagnostics": frozenset({DiagnosticCheck.UnusedControlFlowResult})}),
    DiagnosticCheck.TileInnermostDimGranularity: (narrow, (_f(64, 16), _f(64, 16)), 3, {}),
}


@pytest.mark.parametrize("check", list(CASES), ids=lambda c: c.name)
def test_each_check_fires_at_the_users_line(check):
    kernel, args, offset, options = CASES[check]
    found = [d for d in _diagnostics(kernel, args, **options).diagnostics if d.check is check]
    assert found, f"{check.name} did not fire"
    assert found[0].span.file == HERE
    assert found[0].span.line == _line(kernel, offset)


@pytest.mark.parametrize("check", list(CASES), ids=lambda c: c.name)
def test_each_check_can_be_silenced(check):
    kernel, args, _, options = CASES[check]
    options = dict(options, disabled_diagnostics=frozenset({check}))
    found = [d for d in _diagnostics(kernel, args, **options).diagnostics if d.check is check]
    assert not found


def test_unused_control_flow_result_is_off_by_default():
    kernel, args, _, _ = CASES[DiagnosticCheck.UnusedControlFlowResult]
    checks = {d.check for d in _diagnostics(kernel, args).diagnostics}
    assert DiagnosticCheck.UnusedControlFlowResult not in checks


def test_phase_none_silences_everything():
    for kernel, args, _, options in CASES.values():
        lowered = _diagnostics(kernel, args, diagnostic_phase=DiagnosticPhase.NONE, **options)
        assert lowered.diagnostics == []


def test_pre_pipeline_phase_skips_perf_hints(monkeypatch):
    monkeypatch.setenv("PYPTO_WARNING_LEVEL", "pre_pipeline")
    kernel, args, _, _ = CASES[DiagnosticCheck.TileInnermostDimGranularity]
    assert not _diagnostics(kernel, args).diagnostics


def test_errors_cannot_be_silenced():
    @pl.jit
    def bad(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        t = pl.exp(a)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = t
        return out

    with pytest.raises(ParseError):
        ir.compile(bad.frontend(_f(16, 128), _f(16, 128)), diagnostic_phase=DiagnosticPhase.NONE)


@pytest.mark.parametrize("platform, cols, hinted", [
    ("a2a3sim", 16, True),    # 64 B rows < 512 B
    ("a2a3sim", 128, False),  # 512 B rows
    ("a2a3sim", 32, True),    # 128 B rows: below A2/A3's 512 B ...
    ("a5sim", 32, False),     # ... but enough for A5's 128 B
    ("a5sim", 16, True),
])
def test_perf_hint_threshold_depends_on_backend(platform, cols, hinted, tmp_path):
    args = (_f(64, cols), _f(64, cols))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = ir.compile(narrow.frontend(*args), output_dir=tmp_path / "a",
                              platform=platform)
    assert any(issubclass(w.category, PyptoPerfHint) for w in caught) == hinted
    log = compiled.output_dir / "report" / "perf_hints.log"
    assert log.exists() == hinted
    if hinted:
        text = log.read_text()
        assert f"{HERE}:{_line(narrow, 3)}" in text and "TileInnermostDimGranularity" in text


def test_tolerance_tighter_than_fp16_warns_and_fp32_does_not():
    d = tolerance_too_tight(1e-5, 1e-5, [ir.DataType.FP16])
    assert d is not None and d.check is DiagnosticCheck.GoldenToleranceTooTight
    assert "FP16" in d.message
    assert tolerance_too_tight(1e-5, 1e-5, [ir.DataType.FP32]) is None
    assert tolerance_too_tight(1e-3, 1e-3, [ir.DataType.FP16]) is None
    assert tolerance_too_tight(0, 0, [ir.DataType.INT32]) is None


def test_warnings_carry_the_users_file_and_line():
    with pytest.warns(ir.PyptoWarning) as record:
        ir.compile(unused.frontend(_f(16, 128), _f(16, 128)))
    assert any(w.filename == HERE and w.lineno == _line(unused, 3) for w in record)
