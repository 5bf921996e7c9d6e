"""A program that writes a tensor its entry takes as In (the default direction).

Upstream PyPTO's meaning (its quickstart: "Output tensor comes back unchanged ... add the
direction"): the write lands in the run's device copy of the tensor, the tasks after it
read what was written (ordered by the writing task's own direction), and the caller's
tensor comes back unchanged.  The compiler says so with the `InputParamWritten` warning
at the writing line; the torch reference of the program (torch_codegen) leaves the
caller's tensor alone too.
"""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.debug import load_entry, torch_codegen
from pypto.ir import DiagnosticCheck, PyptoWarning
from pypto.runtime import RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py


@pl.jit
def in_block(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a[:] = pl.exp(a)  # writes an input
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, a)  # a later task: reads the written copy
    return out


@pl.jit.incore
def scale_into(x: pl.Tensor[[16, 128], pl.FP32], dst: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    dst = pl.store(pl.mul(t, 3.0), [0, 0], dst)  # writes an input
    return dst


@pl.jit.incore
def add_one(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    out = pl.store(pl.add(t, 1.0), [0, 0], out)
    return out


@pl.jit
def through_a_callee(x: pl.Tensor[[16, 128], pl.FP32], cache: pl.Tensor[[16, 128], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    cache = scale_into(x, cache)
    out = add_one(cache, out)
    return out


@pl.jit.incore
def kernel_entry(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(a, [0, 0], [16, 128])
    a = pl.store(pl.exp(t), [0, 0], a)  # writes an input
    out = pl.store(t, [0, 0], out)
    return out


def _line(program) -> int:
    import inspect

    lines, first = inspect.getsourcelines(program)
    return first + next(i for i, text in enumerate(lines) if "# writes an input" in text)


def _warned_lines(record) -> list[tuple[str, int]]:
    return [(w.filename, w.lineno) for w in record if "InputParamWritten" in str(w.message)]


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_write_in_a_block_reaches_later_tasks_but_not_the_caller(platform):
    a = torch.randn(16, 128)
    given, out = a.clone(), torch.zeros(16, 128)
    with pytest.warns(PyptoWarning, match="InputParamWritten") as record:
        in_block(a, out, config=RunConfig(platform=platform))
    assert _warned_lines(record) == [(__file__, _line(in_block.fn))]
    assert torch.equal(a, given)  # the caller's tensor comes back unchanged
    torch.testing.assert_close(out, 2 * torch.exp(given))  # the later task read the write


def test_a_write_through_a_callee_is_reported_at_the_callee_line():
    x, cache = torch.randn(16, 128), torch.randn(16, 128)
    given, out = cache.clone(), torch.zeros(16, 128)
    with pytest.warns(PyptoWarning, match="`cache`, an input parameter") as record:
        through_a_callee(x, cache, out, config=RunConfig(platform="a2a3sim"))
    assert _warned_lines(record) == [(__file__, _line(scale_into.fn))]
    assert torch.equal(cache, given)
    assert torch.equal(out, x * 3.0 + 1.0)


def test_a_kernel_entry_writing_its_input():
    a = torch.randn(16, 128)
    given, out = a.clone(), torch.zeros(16, 128)
    with pytest.warns(PyptoWarning, match="`a`, an input parameter") as record:
        kernel_entry(a, out, config=RunConfig(platform="a2a3sim"))
    assert _warned_lines(record) == [(__file__, _line(kernel_entry.fn))]
    assert torch.equal(a, given)
    assert torch.equal(out, given)


def test_the_torch_reference_leaves_the_callers_tensor_alone_too():
    a = torch.randn(16, 128)
    given, out = a.clone(), torch.zeros(16, 128)
    with pytest.warns(PyptoWarning, match="InputParamWritten"):  # `.lower()` reports it too
        program = in_block.lower(a, out)
    entry = load_entry(torch_codegen(program), program.entry)
    entry(a, out)
    assert torch.equal(a, given)
    torch.testing.assert_close(out, 2 * torch.exp(given))


def test_an_entry_that_writes_no_input_copies_nothing():
    source = torch_codegen(add_one.lower(torch.zeros(16, 128), torch.zeros(16, 128)))
    assert ".clone()" not in source


def test_silenced_by_disabled_diagnostics(recwarn):
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    config = RunConfig(platform="a2a3sim",
                       disabled_diagnostics={DiagnosticCheck.InputParamWritten})
    in_block(a, out, config=config)
    assert not _warned_lines(recwarn)


def test_a_resident_input_is_device_memory_and_takes_the_write():
    # A ChipWorker's resident tensor is bound without a copy: it is the device copy.
    from pypto.runtime import ChipWorker

    x = torch.randn(16, 128)
    with ChipWorker(RunConfig(platform="a2a3sim")) as worker:
        resident = worker.alloc_tensor([16, 128], torch.float32, init=x)
        out = torch.zeros(16, 128)
        with pytest.warns(PyptoWarning, match="InputParamWritten"):
            compiled = in_block.compile(resident, out, config=RunConfig(platform="a2a3sim"))
        worker.run(compiled, resident, out)
        torch.testing.assert_close(resident, torch.exp(x))
        torch.testing.assert_close(out, 2 * torch.exp(x))
        worker.free_tensor(resident)
