"""Upstream's compile-time scalars: `kernel.compile(n=128)` specialises a scalar parameter
to a value, `kernel.compile(n=pl.RUNTIME)` (or `n: ... = pl.RUNTIME` in the signature)
leaves it a value passed at each run.  A specialised artifact still takes the parameter
and stops, naming it, when it is passed another value: never a silent wrong answer."""

from __future__ import annotations

import pytest
import torch
from located_errors import raised_by

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.ir.nodes import Call, ExprStmt
from pypto.runtime import OrchestrationError

R, C = 16, 128


@pl.jit
def scaled(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]], s: pl.FP32):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, s)
    return out


@pl.jit
def scaled_at_run_time(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                       s: pl.FP32 = pl.RUNTIME):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, s)
    return out


@pl.jit.incore
def shifted(x: pl.Tensor[[R, C], pl.INT32], out: pl.Out[pl.Tensor[[R, C], pl.INT32]],
            n: pl.Scalar[pl.INT32], on: pl.Scalar[pl.BOOL]):
    t = pl.load(x, [0, 0], [R, C])
    if on:  # noqa: SIM108 - the DSL's runtime `if`
        out = pl.store(pl.adds(t, n), [0, 0], out)
    else:
        out = pl.store(t, [0, 0], out)
    return out


def _data():
    return torch.randn(R, C), torch.zeros(R, C)


def _guards(program) -> list:
    return [(s.value.args[0].name, s.value.attr("value")) for s in program.entry_function.body
            if isinstance(s, ExprStmt) and isinstance(s.value, Call)
            and s.value.op == "expect_value"]


def test_a_keyword_value_specialises_the_parameter_and_the_artifact_checks_it():
    x, out = _data()
    program = scaled.lower(s=0.25)
    assert _guards(program) == [("s", 0.25)]
    assert "pl.mul(x_tile_0, 0.25)" in program.as_python()  # the body reads the constant
    compiled = scaled.compile(s=0.25)
    compiled(x, out, 0.25)
    assert torch.equal(out, x * 0.25)
    with pytest.raises(OrchestrationError, match=r"argument `s` is not the value this "
                                                 r"artifact was specialised for"):
        compiled(x, out, 3.0)


def test_a_positional_specialisation_is_checked_too():
    # compile(x, out, 2.0) then a call with 3.0 computed with 2.0, silently: now refused.
    x, out = _data()
    compiled = scaled.compile(x, out, 0.1)
    compiled(x, out, 0.1)  # an FP32 value that is no exact binary fraction matches itself
    assert torch.equal(out, x * torch.tensor(0.1))
    with pytest.raises(OrchestrationError, match="argument `s`"):
        compiled(x, out, 3.0)


def test_runtime_leaves_a_bare_dtype_parameter_a_run_time_value():
    x, out = _data()
    program = scaled.lower(s=pl.RUNTIME)
    assert _guards(program) == [] and "pl.mul(x_tile_0, s)" in program.as_python()
    compiled = scaled.compile(s=pl.RUNTIME)
    for s in (3.0, -0.5):
        compiled(x, out, s)
        assert torch.equal(out, x * s)


def test_a_runtime_default_needs_no_keyword_and_one_artifact_serves_every_value():
    x, out = _data()
    compiled = scaled_at_run_time.compile()
    compiled(x, out, 5.0)
    assert torch.equal(out, x * 5.0)
    for s in (2.0, 7.0):
        scaled_at_run_time(x, out, s)
        assert torch.equal(out, x * s)
    assert len(scaled_at_run_time._loaded) == 1
    # An eager call of a bare-dtype parameter specialises per value, as upstream's.
    for s in (2.0, 7.0):
        scaled(x, out, s)
        assert torch.equal(out, x * s)
    assert len(scaled._loaded) == 2


def test_scalar_parameters_of_a_kernel_called_directly_specialise_too():
    x = torch.randint(-100, 100, (R, C), dtype=torch.int32)
    out = torch.zeros(R, C, dtype=torch.int32)
    compiled = shifted.compile(n=7, on=True)
    assert _guards(shifted.frontend(n=7, on=True)) == [("n", 7), ("on", 1)]
    compiled(x, out, 7, True)
    assert torch.equal(out, x + 7)
    with pytest.raises(OrchestrationError, match="argument `on`"):
        compiled(x, out, 7, False)
    runtime = shifted.compile()  # pl.Scalar parameters: run-time values by default
    runtime(x, out, -3, True)
    assert torch.equal(out, x - 3)


@pytest.mark.parametrize("keywords, error, message", [
    ({"scale": 2.0}, TypeError, r"`scale=` names no scalar parameter .* parameters: s\)"),
    ({"x": 2.0}, TypeError, "`x=` names no scalar parameter"),
    ({"s": "2.0"}, TypeCheckError, "takes a Python number"),
])
def test_a_wrong_keyword_is_refused_naming_the_parameters(keywords, error, message):
    with pytest.raises(error, match=message):
        scaled.frontend(**keywords)


def test_a_parameter_given_twice_is_refused():
    x, out = _data()
    with pytest.raises(TypeCheckError, match="`s` is given twice"):
        scaled.frontend(x, out, 2.0, s=3.0)


@pytest.mark.parametrize("parameter", [
    "s: pl.FP32 = 1.0",
    "s: pl.Tensor[[16, 128], pl.FP32] = pl.RUNTIME",
])
def test_a_default_other_than_runtime_on_a_scalar_is_refused_at_its_line(parameter):
    source = ("import pypto.language as pl\n\n"
              "@pl.jit\n"
              "def k(x: pl.Tensor[[16, 128], pl.FP32],\n"
              f"      {parameter}):\n"
              "    return x\n")
    error, lines = raised_by(source, lambda ns: ns["k"].frontend(), ParseError)
    assert "the only default a kernel parameter takes is pl.RUNTIME" in str(error)
    assert error.span.line == 5
