"""Compile-time values in kernel bodies: `x.shape`, `x.shape[i]`, `x.dtype` and
`N: pl.constexpr = ...` fold to constants; run-time-only sizes and misuse are errors at the
user's line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import For
from pypto.ir.errors import ParseError, TypeCheckError
from pypto.runtime import RunConfig

HERE = Path(__file__).read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file that ends with `# <marker>`."""
    lines = [i for i, text in enumerate(HERE, 1) if f"# {marker}" in text]
    assert len(lines) == 1, marker
    return lines[0]


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def ir_text(kernel, *shapes, dtype=torch.float32) -> str:
    """The kernel's post-parse IR for zero tensors of these shapes (the last one FP32)."""
    args = [torch.zeros(*s, dtype=dtype) for s in shapes[:-1]] + [torch.zeros(*shapes[-1])]
    return kernel.frontend(*args).as_python()


# ---------------------------------------------------------------------- folding


@pl.jit.incore
def copy_by_shape(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [round_up(x.shape[0], 8), round_up(x.shape[1], 16)],
                valid_shape=x.shape)
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def copy_by_numbers(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [24, 112], valid_shape=[21, 100])
    out = pl.store(t, [0, 0], out)
    return out


def test_shapes_fold_into_load_shapes_through_python_helpers():
    assert ir_text(copy_by_shape, (21, 100), (21, 100)).replace("copy_by_shape", "k") == \
        ir_text(copy_by_numbers, (21, 100), (21, 100)).replace("copy_by_numbers", "k")


@pl.jit.incore
def rows_in_blocks(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for r in pl.unroll(0, x.shape[0], 16):
        t = pl.load(x, [r, 0], [16, 32], valid_shape=[min(16, x.shape[0] - r), x.shape[1]])
        out = pl.store(t, [r, 0], out)
    return out


def test_shapes_fold_into_unrolled_loop_bounds():
    text = ir_text(rows_in_blocks, (40, 32), (40, 32))
    assert "valid_shape=[16, 32]" in text and "valid_shape=[8, 32]" in text
    assert text.count("pl.load(") == 3


@pl.jit.incore
def columns_in_steps(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for c in pl.range(0, x.shape[1], 16):
        out = pl.store(pl.load(x, [0, c], [16, 16]), [0, c], out)
    return out


def test_shapes_fold_into_runtime_loop_bounds():
    program = columns_in_steps.frontend(torch.zeros(16, 64), torch.zeros(16, 64))
    loop = next(s for s in program.function("columns_in_steps").body if isinstance(s, For))
    assert loop.stop.value == 64 and loop.step.value == 16


@pl.jit.incore
def widen_if_narrow(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [16, 16])
    if x.dtype != pl.FP32:
        t = pl.cast(t, pl.FP32)
    y = pl.exp(t)
    out = pl.store(pl.cast(y, out.dtype) if out.dtype != y.dtype else y, [0, 0], out)
    return out


def test_dtypes_fold_into_conditions_and_casts():
    args = (torch.zeros(16, 16, dtype=torch.float16), torch.zeros(16, 16, dtype=torch.float16))
    narrow = widen_if_narrow.frontend(*args).as_python()
    wide = ir_text(widen_if_narrow, (16, 16), (16, 16))
    assert "pl.cast(t, pl.FP32)" in narrow and "pl.cast(y, pl.FP16)" in narrow
    assert "pl.cast" not in wide


@pl.jit.incore
def scratch_like_the_tile(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [16, 48], valid_shape=[16, 40])
    tmp = pl.create_tile(t.shape, pl.FP32)
    half = pl.create_tile([t.shape[0] // 2, t.shape[1]], t.dtype)
    out = pl.store(pl.row_sum(t, tmp), [0, 0], out)
    out = pl.store(pl.row_sum(half, tmp), [0, 0], out)
    return out


def test_a_tiles_shape_and_dtype_are_compile_time_values():
    text = ir_text(scratch_like_the_tile, (16, 40), (16, 1))
    assert "pl.create_tile([16, 48], pl.FP32)" in text
    assert "pl.create_tile([8, 48], pl.FP32)" in text


@pl.jit.incore
def tiled_with_constexpr(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    TN: pl.constexpr = round_up(x.shape[1], 16)
    NARROW: pl.constexpr = x.dtype != pl.FP32
    t = pl.load(x, [0, 0], [16, TN], valid_shape=[16, x.shape[1]])
    tmp = pl.create_tile([16, TN], pl.FP32)
    out = pl.store(pl.row_sum(pl.cast(t, pl.FP32) if NARROW else t, tmp), [0, 0], out)
    return out


def test_constexpr_locals_fold_and_leave_no_trace_in_the_ir():
    text = ir_text(tiled_with_constexpr, (16, 100), (16, 1), dtype=torch.float16)
    assert "[16, 112]" in text and "pl.cast(t, pl.FP32)" in text
    assert "TN" not in text and "NARROW" not in text


@pl.jit.incore
def constexpr_per_iteration(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    for r in pl.unroll(0, x.shape[0], 16):
        ROWS: pl.constexpr = min(16, x.shape[0] - r)
        out = pl.store(pl.load(x, [r, 0], [16, 16], valid_shape=[ROWS, 16]), [r, 0], out)
    return out


def test_a_constexpr_in_an_unrolled_body_is_bound_once_per_iteration():
    text = ir_text(constexpr_per_iteration, (20, 16), (20, 16))
    assert "valid_shape=[16, 16]" in text and "valid_shape=[4, 16]" in text


@pl.jit
def add_rows(a: pl.Tensor[[pl.dynamic("M"), 128], pl.FP32],
             out: pl.Out[pl.Tensor[[pl.dynamic("M"), 128], pl.FP32]]):
    COLS: pl.constexpr = a.shape[1]
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, float(COLS))
    return out


def test_static_dimensions_of_a_dynamic_tensor_can_be_read():
    a = torch.randn(48, 128)
    out = torch.zeros(48, 128)
    add_rows(a, out, config=RunConfig())
    assert torch.equal(out, a + 128.0)


def test_a_tile_kernel_sized_from_its_arguments_runs():
    x = torch.randn(16, 250, dtype=torch.float16)  # [16, 256] tiles
    out = torch.zeros(16, 1)
    tiled_with_constexpr(x, out)
    assert torch.allclose(out, x.float().sum(dim=1, keepdim=True), rtol=1e-5, atol=1e-4)


@pl.program
class ShapeReadingProgram:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, x: pl.Tensor[[16, 40], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 40], pl.FP32]]) -> pl.Tensor[[16, 40], pl.FP32]:
        TC: pl.constexpr = x.shape[1] + 8
        t = pl.load(x, [0, 0], [x.shape[0], TC], valid_shape=x.shape)
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 40], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 40], pl.FP32]]) -> pl.Tensor[[16, 40], pl.FP32]:
        out = self.double(x, out)
        return out


def test_pl_function_bodies_fold_shapes_too():
    text = ShapeReadingProgram.as_python()
    assert "pl.load(x, [0, 0], [16, 48], valid_shape=[16, 40])" in text
    assert "TC" not in text


# ---------------------------------------------------------------------- errors


def raises_at(kernel, marker, cls, *fragments, shapes=((32, 64), (32, 64))):
    with pytest.raises(cls) as info:
        kernel.frontend(*(torch.zeros(*s) for s in shapes))
    err = info.value
    assert type(err) is cls
    for fragment in fragments:
        assert fragment in str(err), str(err)
    assert err.span.file == __file__ and err.span.line == line_of(marker), str(err)
    return err


@pl.jit.incore
def reads_a_dynamic_dimension(x: pl.Tensor[[pl.dynamic("M"), 64], pl.FP32],
                              out: pl.Out[pl.Tensor[[pl.dynamic("M"), 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [x.shape[0], 64])  # error: dynamic dimension
    out = pl.store(t, [0, 0], out)
    return out


def test_reading_a_dynamic_dimension_is_an_error_at_the_users_line():
    err = raises_at(reads_a_dynamic_dimension, "error: dynamic dimension", TypeCheckError,
                    "`x.shape[0]` is known only at run time",
                    'dimension 0 of `x` is pl.dynamic("M")')
    assert "pl.Scalar argument" in err.hint


@pl.jit.incore
def reads_a_whole_dynamic_shape(x: pl.Tensor[[pl.dynamic("M"), 64], pl.FP32],
                                out: pl.Out[pl.Tensor[[pl.dynamic("M"), 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64], valid_shape=x.shape)  # error: whole dynamic shape
    out = pl.store(t, [0, 0], out)
    return out


@pl.jit.incore
def reads_the_static_part(x: pl.Tensor[[pl.dynamic("M"), 64], pl.FP32],
                          out: pl.Out[pl.Tensor[[pl.dynamic("M"), 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [16] + list(x.shape[1:]))
    out = pl.store(t, [0, 0], out)
    return out


def test_slicing_a_shape_keeps_only_the_dimensions_asked_for():
    text = reads_the_static_part.frontend(torch.zeros(32, 64), torch.zeros(32, 64)).as_python()
    assert "pl.load(x, [0, 0], [16, 64])" in text


def test_reading_a_shape_with_a_dynamic_dimension_is_an_error():
    raises_at(reads_a_whole_dynamic_shape, "error: whole dynamic shape", TypeCheckError,
              "`x.shape` is known only at run time", 'pl.dynamic("M")')


@pl.jit
def reads_a_derived_dynamic_dimension(a: pl.Tensor[[pl.dynamic("M"), 64], pl.FP32],
                                      out: pl.Out[pl.Tensor[[pl.dynamic("M"), 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.exp(a)
        ROWS: pl.constexpr = y.shape[0]  # error: derived dynamic dimension
        out[:] = pl.add(y, float(ROWS))
    return out


def test_a_tensor_computed_from_a_dynamic_one_keeps_its_run_time_dimension():
    raises_at(reads_a_derived_dynamic_dimension, "error: derived dynamic dimension",
              TypeCheckError, "`y.shape[0]` is known only at run time",
              '`y` is computed from `a`, whose dimension 0 is pl.dynamic("M")')


@pl.jit.incore
def constexpr_from_a_runtime_value(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    T: pl.constexpr = pl.load(x, [0, 0], [16, 16])  # error: runtime constexpr
    out = pl.store(T, [0, 0], out)
    return out


def test_a_constexpr_with_a_runtime_value_is_an_error():
    err = raises_at(constexpr_from_a_runtime_value, "error: runtime constexpr", ParseError,
                    "`T: pl.constexpr` needs a compile-time value",
                    "`pl.load(x, [0, 0], [16, 16])` is computed at run time")
    assert "drop `: pl.constexpr`" in err.hint


@pl.jit.incore
def constexpr_declared_twice(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    TN: pl.constexpr = 16
    TN: pl.constexpr = 32  # error: constexpr twice
    out = pl.store(pl.load(x, [0, 0], [16, TN]), [0, 0], out)
    return out


def test_declaring_a_constexpr_twice_is_an_error():
    first = line_of("error: constexpr twice") - 1
    err = raises_at(constexpr_declared_twice, "error: constexpr twice", ParseError,
                    f"`TN` is a pl.constexpr (bound on line {first}) and cannot be rebound")
    assert "use a new name" in err.hint


@pl.jit.incore
def constexpr_assigned_later(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    TN: pl.constexpr = 16
    t = pl.load(x, [0, 0], [16, TN])
    TN = pl.add(t, 1.0)  # error: constexpr reassigned
    out = pl.store(TN, [0, 0], out)
    return out


def test_assigning_a_runtime_value_to_a_constexpr_name_is_an_error():
    raises_at(constexpr_assigned_later, "error: constexpr reassigned", ParseError,
              "`TN` is a pl.constexpr", "cannot be rebound")


@pl.jit.incore
def constexpr_as_loop_variable(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    R: pl.constexpr = 0
    for R in pl.range(0, 32, 16):  # error: constexpr loop variable
        out = pl.store(pl.load(x, [R, 0], [16, 64]), [R, 0], out)
    return out


def test_a_constexpr_name_cannot_become_a_loop_variable():
    raises_at(constexpr_as_loop_variable, "error: constexpr loop variable", ParseError,
              "`R` is a pl.constexpr", "cannot be rebound")


@pl.jit.incore
def constexpr_shadowing_a_parameter(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    x: pl.constexpr = 3  # error: constexpr shadows a value  # noqa: F841
    return out


def test_a_constexpr_cannot_take_the_name_of_a_runtime_value():
    err = raises_at(constexpr_shadowing_a_parameter, "error: constexpr shadows a value",
                    ParseError, "`x` already holds a runtime value")
    assert "new name" in err.hint


@pl.jit.incore
def shape_of_a_scalar(x: pl.Tensor, s: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], s.shape)  # error: scalar shape
    out = pl.store(t, [0, 0], out)
    return out


def test_a_scalar_has_no_shape():
    with pytest.raises(TypeCheckError) as info:
        shape_of_a_scalar.frontend(torch.zeros(16, 16), 1.0, torch.zeros(16, 16))
    assert "`s` is a FP32 scalar; only tensors and tiles have a shape" in str(info.value)
    assert info.value.span.line == line_of("error: scalar shape")


def test_pl_constexpr_outside_a_kernel_body_says_where_it_belongs():
    with pytest.raises(RuntimeError, match="only meaningful inside a pypto kernel body"):
        pl.constexpr(3)
