"""Task arguments narrowed to windows: OutlineIncoreScopes hands each kernel the box of each
tensor it touches (pypto/passes/narrow_task_arguments.py)."""

from __future__ import annotations

import inspect

import pytest
import torch

import pypto.language as pl
from pypto.compiler import CompileOptions, run_pipeline
from pypto.debug import load_entry, torch_codegen
from pypto.ir import PassDumpLevel, PyptoWarning
from pypto.ir.nodes import Assign, For, FuncCall
from pypto.ir.printer import print_statement
from pypto.ir.types import TensorType
from pypto.passes import OutlineIncoreScopes
from pypto.platform import get_platform
from pypto.runtime import KernelError, OrchestrationError, RunConfig

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

N, R, C = 4, 8, 128


@pl.jit
def row_blocks(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:i * R + R, :] = pl.add(x[i * R:i * R + R, :], 1.0)
    return out


@pl.jit
def column_blocks(x: pl.Tensor[[R, N * 32], pl.FP32],
                  out: pl.Out[pl.Tensor[[R, N * 32], pl.FP32]]):
    for j in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, j * 32], [R, 32])
            out = pl.store(pl.mul(t, 2.0), [0, j * 32], out)
    return out


@pl.jit
def shifted_reads(x: pl.Tensor[[N * R + 2, C], pl.FP32],
                  out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            # Two reads one row apart: the window of x is R + 1 rows from row i * R + 1.
            a = pl.load(x, [i * R + 1, 0], [R, C])
            b = pl.load(x, [i * R + 2, 0], [R, C])
            out = pl.store(pl.sub(b, a), [i * R, 0], out)
    return out


@pl.jit
def inner_loop(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(2):  # offsets move with the kernel's own loop: not analysed
                t = pl.load(x, [i * R + j * 4, 0], [4, C])
                out = pl.store(pl.add(t, 1.0), [i * R + j * 4, 0], out)
    return out


@pl.jit
def whole_use(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]],
              twice: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:i * R + R, :] = pl.add(x[i * R:i * R + R, :], 1.0)
            twice[:] = pl.mul(x, 2.0)  # all of x: x is passed whole
    return out, twice


def outlined(fn, *args):
    return OutlineIncoreScopes().run(fn.frontend(*args), None)


def kernel_param_shapes(program) -> dict[str, list]:
    kernel = next(f for f in program.functions if f.name != program.entry)
    return {p.var.name: list(p.var.type.shape) for p in kernel.params
            if isinstance(p.var.type, TensorType)}


def views(program) -> list[str]:
    """The orchestration's views, printed: `name = pl.slice(...)`."""
    found = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, For):
                walk(s.body)
            elif isinstance(s, Assign) and not isinstance(s.value, FuncCall) and \
                    s.value.op == "slice":
                found.append(f"{s.targets[0].name} = "
                             + print_statement(s).strip().split(" = ", 1)[1])

    walk(program.entry_function.body)
    return found


def test_disjoint_row_blocks_are_passed_as_row_windows():
    program = outlined(row_blocks, torch.zeros(N * R, C), torch.zeros(N * R, C))
    assert kernel_param_shapes(program) == {"x": [R, C], "out": [R, C]}
    assert views(program) == ["x_view_0 = pl.slice(x, [8, 128], [i * 8, 0])",
                              "out_view_0 = pl.slice(out, [8, 128], [i * 8, 0])"]
    text = program.as_python()
    assert "out_view_0: pl.Tensor[[8, 128], pl.FP32] = self.row_blocks_incore_0(x_view_0, " \
           "out_view_0, i)" in text
    # The kernel indexes relative to its windows.
    assert "pl.assemble(out, pl.add(pl.slice(x, [8, 128], [0, 0]), 1.0), [0, 0])" in text


def test_a_window_spans_every_access_with_the_same_variable_offset():
    program = outlined(shifted_reads, torch.zeros(N * R + 2, C), torch.zeros(N * R, C))
    assert kernel_param_shapes(program) == {"x": [R + 1, C], "out": [R, C]}
    assert views(program)[0] == "x_view_0 = pl.slice(x, [9, 128], [(i * 8) + 1, 0])"
    text = program.as_python()
    assert "pl.load(x, [0, 0], [8, 128])" in text and "pl.load(x, [1, 0], [8, 128])" in text


def test_column_windows_keep_the_rows_whole():
    program = outlined(column_blocks, torch.zeros(R, N * 32), torch.zeros(R, N * 32))
    assert kernel_param_shapes(program) == {"x": [R, 32], "out": [R, 32]}
    assert views(program)[1] == "out_view_0 = pl.slice(out, [8, 32], [0, j * 32])"


def test_offsets_moving_with_the_kernels_own_loop_fall_back_to_the_whole_tensor():
    program = outlined(inner_loop, torch.zeros(N * R, C), torch.zeros(N * R, C))
    assert kernel_param_shapes(program) == {"x": [N * R, C], "out": [N * R, C]}
    assert views(program) == []


def test_a_tensor_also_used_whole_is_passed_whole():
    program = outlined(whole_use, *(torch.zeros(N * R, C) for _ in range(3)))
    assert kernel_param_shapes(program) == {"x": [N * R, C], "out": [R, C],
                                            "twice": [N * R, C]}
    assert views(program) == ["out_view_0 = pl.slice(out, [8, 128], [i * 8, 0])"]


@pytest.mark.parametrize("fn, shape_x, shape_out, expected", [
    (row_blocks, (N * R, C), (N * R, C), lambda x: x + 1.0),
    (column_blocks, (R, N * 32), (R, N * 32), lambda x: x * 2.0),
    (shifted_reads, (N * R + 2, C), (N * R, C),
     lambda x: torch.cat([x[i * R + 2:i * R + R + 2] - x[i * R + 1:i * R + R + 1]
                          for i in range(N)])),
    (inner_loop, (N * R, C), (N * R, C), lambda x: x + 1.0),
], ids=["row_blocks", "column_blocks", "shifted_reads", "inner_loop"])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_windows_compile_at_roundtrip_and_torch_agrees_with_the_simulator(
        fn, shape_x, shape_out, expected, platform, monkeypatch):
    monkeypatch.setenv("PYPTO_VERIFY_LEVEL", "roundtrip")
    x = torch.randn(*shape_x)
    lowered = run_pipeline(fn.frontend(x, torch.zeros(*shape_out)), get_platform(platform),
                           CompileOptions(platform=platform, dump_passes=PassDumpLevel.EXPLICIT))
    for path, text in sorted(lowered.files.items()):
        if path.startswith("passes_dump/"):
            program = pl.parse(text)
            out = torch.zeros(*shape_out)
            load_entry(torch_codegen(program, check_shapes=True), program.entry)(x, out)
            assert torch.equal(out, expected(x)), path
    out = torch.zeros(*shape_out)
    fn(x, out, config=RunConfig(platform=platform))
    assert torch.equal(out, expected(x))


@pl.jit.incore
def add_rows(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]],
             row: pl.Scalar[pl.INT64]):
    t = pl.load(x, [row, 0], [R, C])
    out = pl.store(pl.add(t, 1.0), [row, 0], out)
    return out


@pl.jit
def two_calls(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Out[pl.Tensor[[N * R, C], pl.FP32]]):
    out = add_rows(x, out, 0)
    out = add_rows(x, out, 3 * R)
    return out


def test_every_call_of_a_kernel_passes_its_own_window():
    x = torch.randn(N * R, C)
    program = outlined(two_calls, x, torch.zeros(N * R, C))
    assert kernel_param_shapes(program) == {"x": [R, C], "out": [R, C]}
    # A constant scalar argument gives a constant origin, folded as the parser folds it.
    assert views(program) == ["x_view_0 = pl.slice(x, [8, 128], [0, 0])",
                              "out_view_0 = pl.slice(out, [8, 128], [0, 0])",
                              "x_view_1 = pl.slice(x, [8, 128], [24, 0])",
                              "out_view_1 = pl.slice(out, [8, 128], [24, 0])"]
    out = torch.zeros(N * R, C)
    two_calls(x, out)
    assert torch.equal(out[:R], x[:R] + 1.0) and torch.equal(out[3 * R:], x[3 * R:] + 1.0)


def test_a_window_reaching_past_its_tensor_is_cut_back_and_the_access_beyond_refused():
    x, out = torch.randn(N * R, C), torch.zeros(N * R, C)
    # Rows 28..35 of a 32-row tensor: the task's views are cut back to rows 28..31 (the
    # part inside), and the kernel's load and store of 8 rows are refused, not performed.
    with pytest.raises(KernelError, match=r"kernel 'add_rows'.*tload of a \[8, 128\] window "
                                          r"at \[0, 0\] lies outside the tensor \[4, 128\]"):
        add_rows(x, out, N * R - 4)
    # A window starting outside the tensor stops the run before the task.
    with pytest.raises(OrchestrationError, match="returned 3.*window of a tensor lies outside"):
        add_rows(x, out, N * R + 4)
    add_rows(x, out, N * R - R)  # the last block is inside
    assert torch.equal(out[-R:], x[-R:] + 1.0)


@pl.jit
def undeclared_output(x: pl.Tensor[[N * R, C], pl.FP32], out: pl.Tensor[[N * R, C], pl.FP32]):
    for i in pl.parallel(N):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:i * R + R, :] = pl.add(x[i * R:i * R + R, :], 1.0)  # writes an input
    return out


def test_a_write_through_a_view_of_an_input_parameter_warns_at_its_line():
    # `out` is In (the default): the write through the task's view of it is seen and
    # reported where it is written; it lands in the run's copy, not the caller's tensor.
    x, out = torch.randn(N * R, C), torch.zeros(N * R, C)
    with pytest.warns(PyptoWarning, match="InputParamWritten") as record:
        undeclared_output(x, out, config=RunConfig(platform="a2a3sim"))
    lines, first = inspect.getsourcelines(undeclared_output.fn)
    line = first + next(i for i, text in enumerate(lines) if "# writes an input" in text)
    assert [w.lineno for w in record if "InputParamWritten" in str(w.message)] == [line]
    assert torch.equal(out, torch.zeros(N * R, C))
