"""Task syntax: task ids, deps=, pl.submit, pl.spmd, pl.parallel, pl.manual_scope; IR round
trips."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir.errors import LoweringError, ParseError, TypeCheckError
from pypto.ir.nodes import AtScope, FuncCall
from pypto.ir.types import TASK_ID, TupleType
from pypto.runtime import RunConfig

pytestmark = pytest.mark.usefixtures("engine")  # both schedulers (conftest.py)

R, C = 32, 128


@pl.jit.incore
def scale(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y = pl.store(pl.mul(pl.load(x, [0, 0], [R, C]), 2.0), [0, 0], y)
    return y


@pl.jit.incore
def touch(y: pl.InOut[pl.Tensor[[R, C], pl.FP32]]):
    y = pl.store(pl.add(pl.load(y, [0, 0], [R, C]), 1.0), [0, 0], y)


@pl.jit
def every_form(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]],
               z: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first") as first:
        z[:] = pl.add(x, 1.0)
    y, second = pl.submit(scale, x, y, deps=[first])
    done = pl.submit(touch, y, deps=[first, second])
    with pl.manual_scope(), pl.at(level=pl.Level.CORE_GROUP, deps=[done], no_dep_args=[z]):
        z[:] = pl.mul(z, 3.0)
    return y, z


def args():
    return torch.randn(R, C), torch.zeros(R, C), torch.zeros(R, C)


def test_every_form_runs_with_the_declared_edges(read_dfx):
    x, y, z = args()
    every_form(x, y, z, config=RunConfig(schedule_seed=1, enable_dep_gen=True,
                                         detect_races=True))
    assert torch.equal(y, x * 2.0 + 1.0)
    assert torch.equal(z, (x + 1.0) * 3.0)
    deps = read_dfx("deps.json")
    kernels = [t["kernel"] for t in deps["tasks"]]
    assert kernels[:3] == ["every_form_first", "scale", "touch"]
    assert kernels[3].startswith("every_form_incore_")
    explicit = [(e["src"], e["dst"]) for e in deps["edges"] if e["source"] == "explicit"]
    assert explicit == [(0, 1), (0, 2), (1, 2), (2, 3)]


def test_task_ids_are_values_of_type_task_id_in_the_ir():
    program = every_form.frontend(*args())
    body = program.entry_function.body
    scope = body[0]
    assert isinstance(scope, AtScope) and scope.task.name == "first"
    assert scope.task.type == TASK_ID
    submit = body[1].value
    assert isinstance(submit, FuncCall) and submit.task_id
    assert submit.type == TupleType((program.function("scale").params[1].var.type, TASK_ID))
    assert [d.name for d in submit.deps] == ["first"]
    assert body[2].targets[0].type == TASK_ID  # a kernel returning nothing yields the id alone
    last = body[3]
    assert last.manual and [v.name for v in last.no_dep_args] == ["z"]


@pytest.mark.parametrize("stage", ["frontend", "lowered"])
def test_the_printed_program_parses_back_to_an_equal_program(stage):
    program = every_form.frontend(*args()) if stage == "frontend" else every_form.lower(*args())
    text = program.as_python()
    assert "as first:" in text or "first = pl.submit(" in text
    assert "with pl.manual_scope():" in text
    assert pl.parse(text) == program


def test_the_lowered_orchestration_dispatches_through_pl_submit():
    text = every_form.lower(*args()).as_python()
    assert "z, first = pl.submit(self.every_form_first, x, z)" in text
    assert "y, second = pl.submit(self.scale, x, y, deps=[first])" in text
    assert "deps=[done], no_dep_args=[z])" in text


BLOCKS = 4
ROWS = R // BLOCKS


@pl.jit
def spmd_rows(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    for b in pl.spmd(BLOCKS, name_hint="rows"):
        t = pl.load(x, [b * ROWS, 0], [ROWS, C])
        y = pl.store(pl.add(t, b), [b * ROWS, 0], y)
    with pl.spmd(BLOCKS, name_hint="again") as again:
        b = pl.get_block_idx()
        t = pl.load(y, [b * ROWS, 0], [ROWS, C])
        y = pl.store(pl.mul(t, 2.0), [b * ROWS, 0], y)
    with pl.at(level=pl.Level.CORE_GROUP, deps=[again]):
        y[:] = pl.add(y, 1.0)
    return y


def expected_spmd(x):
    index = torch.arange(R, dtype=torch.float32)[:, None] // ROWS
    return (x + index) * 2.0 + 1.0


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_an_spmd_dispatch_runs_one_task_per_block_with_its_index(seed):
    x, y, _ = args()
    spmd_rows(x, y, config=RunConfig(schedule_seed=seed, workers=4, detect_races=True))
    assert torch.equal(y, expected_spmd(x))


def test_the_blocks_of_a_dispatch_share_its_edges_and_its_task_id(read_dfx):
    x, y, _ = args()
    spmd_rows(x, y, config=RunConfig(schedule_seed=0, enable_dep_gen=True))
    deps = read_dfx("deps.json")
    assert [(t["kernel"], t["block"]) for t in deps["tasks"][:8]] == (
        [("spmd_rows_rows", [b, BLOCKS]) for b in range(BLOCKS)]
        + [("spmd_rows_again", [b, BLOCKS]) for b in range(BLOCKS)])
    assert deps["tasks"][8]["block"] is None
    edges = {(e["src"], e["dst"], e["source"]) for e in deps["edges"]}
    # Every block of the second dispatch waits for every block of the first (y is InOut).
    assert {(s, d) for s, d, src in edges if src == "tensormap" and d < 8} == {
        (s, d) for s in range(4) for d in range(4, 8)}
    assert {(s, d) for s, d, src in edges if src == "explicit"} == {(s, 8) for s in range(4, 8)}


def test_spmd_round_trips_through_the_printer():
    for program in (spmd_rows.frontend(*args()[:2]), spmd_rows.lower(*args()[:2])):
        assert pl.parse(program.as_python()) == program
    assert "pl.spmd_submit(self.spmd_rows_rows, x, y, core_num=4)" in \
        spmd_rows.lower(*args()[:2]).as_python()


PARALLEL = 6


@pl.jit
def parallel_rows(x: pl.Tensor[[PARALLEL, C], pl.FP32], y: pl.Out[pl.Tensor[[PARALLEL, C],
                                                                            pl.FP32]]):
    for i in pl.parallel(PARALLEL):
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.store(pl.mul(pl.load(x, [i, 0], [1, C]), 3.0), [i, 0], y)
    return y


def test_a_parallel_loop_in_an_orchestration_is_one_task_per_iteration(read_dfx):
    x, y = torch.randn(PARALLEL, C), torch.zeros(PARALLEL, C)
    parallel_rows(x, y, config=RunConfig(enable_dep_gen=True))
    assert torch.equal(y, x * 3.0)
    tasks = read_dfx("deps.json")["tasks"]
    assert len(tasks) == PARALLEL and len({t["kernel"] for t in tasks}) == 1


# ----------------------------------------------------------------------------- user errors


def error_of(fn, *call_args) -> Exception:
    with pytest.raises((ParseError, TypeCheckError, LoweringError)) as info:
        fn.frontend(*call_args) if call_args else fn.frontend(*args()[:2])
    assert info.value.span is not None and info.value.span.file == __file__
    return info.value


def test_deps_on_a_tensor_is_a_compile_error_at_the_users_line():
    @pl.jit
    def bad(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, deps=[x]):
            y[:] = pl.add(x, 1.0)
        return y

    error = error_of(bad)
    assert "deps= entries must be task ids; `x` is a FP32 tensor [32, 128]" in str(error)
    lines = Path(__file__).read_text().splitlines()
    assert "deps=[x]" in lines[error.span.line - 1]
    assert "as tid" in error.hint


def test_deps_on_an_unknown_name_is_a_compile_error():
    @pl.jit
    def bad(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        y, _t = pl.submit(scale, x, y, deps=[later])  # noqa: F821 - the error under test
        return y

    assert "`later` in deps= is not a task id bound before this point" in str(error_of(bad))


def test_a_task_id_used_as_a_value_is_a_compile_error():
    @pl.jit
    def bad(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        y, t = pl.submit(scale, x, y)
        return y, t

    assert "task id `t` can only be used in deps=[...]" in str(error_of(bad))


def test_no_dep_args_must_name_a_tensor_the_block_uses():
    @pl.jit
    def bad(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            w: pl.Tensor[[R, C], pl.FP32]):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[w]):
            y[:] = pl.add(x, 1.0)
        return y

    x, y, w = args()
    with pytest.raises(LoweringError, match="no_dep_args names `w`, which this block does not"):
        bad.lower(x, y, w)


def test_manual_scope_and_task_scopes_belong_in_orchestration_code():
    @pl.jit
    def nested(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP), pl.manual_scope():
            y[:] = pl.add(x, 1.0)
        return y

    assert "cannot be nested inside a `pl.at` or `pl.spmd` block" in str(error_of(nested))


def test_get_block_idx_outside_a_kernel_is_a_compile_error():
    @pl.jit
    def bad(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        b = pl.get_block_idx()
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.add(x, b)
        return y

    assert "pl.get_block_idx() is the index of the running block" in str(error_of(bad))


def test_spmd_submit_needs_core_num():
    @pl.jit
    def bad(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        y, _t = pl.spmd_submit(scale, x, y)
        return y

    assert "pl.spmd_submit needs core_num=" in str(error_of(bad))
