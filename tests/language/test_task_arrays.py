"""Arrays of task ids in an orchestration (upstream PyPTO's `pl.array.create(n,
pl.TASK_ID)`, docs/en/user/tasks/02-submit.md): `tids[i] = tid` collects the ids a loop
submits, `deps=[tids]` waits on every entry, `pl.system.task_dummy(deps=[tids])` stands for
them, and an array is carried through a loop like any value."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import OrchestrationError, RaceError, RunConfig, run

B, TM, N = 4, 16, 128
ROWS = B * TM


@pl.jit.incore
def scale(x: pl.Tensor[[ROWS, N], pl.FP32], row: pl.Scalar[pl.INDEX],
          mid: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]):
    mid = pl.store(pl.mul(pl.load(x, [row, 0], [TM, N]), 2.0), [row, 0], mid)
    return mid


@pl.jit.incore
def shift(mid: pl.Tensor[[ROWS, N], pl.FP32], row: pl.Scalar[pl.INDEX],
          out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]):
    # reads the stripe after its own: that stripe's writer must have run
    other = (row + TM) % ROWS
    out = pl.store(pl.add(pl.load(mid, [other, 0], [TM, N]), 1.0), [row, 0], out)
    return out


@pl.program
class TwoPhases:
    """Phase 0 writes `mid` in B stripes; phase 1 reads each stripe of `mid` after all of
    phase 0 (a manual scope: only deps= orders them)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, N], pl.FP32],
             out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
        mid = pl.create_tensor([ROWS, N], dtype=pl.FP32)
        with pl.manual_scope():
            tids = pl.array.create(B, pl.TASK_ID)
            for i in pl.parallel(B):
                mid, tid = pl.submit(scale, x, i * TM, mid)
                tids[i] = tid
            fence = pl.system.task_dummy(deps=[tids])
            for i in pl.parallel(B):
                out, _ = pl.submit(shift, mid, i * TM, out, deps=[fence])
        return out


def _expected(x):
    return torch.roll(x * 2.0, -TM, dims=0) + 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_deps_on_an_array_order_a_task_after_every_entry(seed):
    x, out = torch.randn(ROWS, N), torch.zeros(ROWS, N)
    run(TwoPhases, x, out, config=RunConfig(detect_races=True, schedule_seed=seed))
    assert torch.equal(out, _expected(x))


def test_an_array_prints_and_parses_back():
    text = TwoPhases.as_python()
    assert "pl.Array[4, pl.TASK_ID] = pl.array.create(4, pl.TaskId)" in text
    assert "pl.array.update_element(tids, i, tid)" in text
    assert pl.parse(text) == TwoPhases


@pl.program
class Unfenced:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, N], pl.FP32],
             out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
        mid = pl.create_tensor([ROWS, N], dtype=pl.FP32)
        with pl.manual_scope():
            tids = pl.array.create(B, pl.TASK_ID)
            for i in pl.parallel(B - 1):  # the last entry is never set: it waits on nothing
                mid, tid = pl.submit(scale, x, i * TM, mid)
                tids[i] = tid
            mid, _ = pl.submit(scale, x, (B - 1) * TM, mid)
            for i in pl.parallel(B):
                out, _ = pl.submit(shift, mid, i * TM, out, deps=[tids])
        return out


def test_an_entry_never_set_waits_on_nothing():
    # The fourth writer is in no entry: the race detector sees a read it does not order.
    x, out = torch.randn(ROWS, N), torch.zeros(ROWS, N)
    with pytest.raises(RaceError):
        run(Unfenced, x, out, config=RunConfig(detect_races=True, schedule_seed=0))


@pl.program
class Carried:
    """Phases chained through an array carried by a loop (upstream's phase fence): each
    phase rewrites every stripe, after the previous phase's tasks (a manual scope)."""

    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, acc: pl.InOut[pl.Tensor[[ROWS, N], pl.FP32]], row: pl.Scalar[pl.INDEX]
             ) -> pl.Tensor[[ROWS, N], pl.FP32]:
        t = pl.load(acc, [row, 0], [TM, N])
        acc = pl.store(pl.add(pl.mul(t, 2.0), 1.0), [row, 0], acc)
        return acc

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, acc: pl.InOut[pl.Tensor[[ROWS, N], pl.FP32]]
             ) -> pl.Tensor[[ROWS, N], pl.FP32]:
        with pl.manual_scope():
            tids = pl.array.create(B, pl.TASK_ID)
            for _phase, (before,) in pl.range(3, init_values=(tids,)):
                now = pl.array.create(B, pl.TASK_ID)
                for i in pl.parallel(B):
                    acc, tid = pl.submit(self.bump, acc, i * TM, deps=[before])
                    now[i] = tid
                tids = pl.yield_(now)
        return acc


@pytest.mark.parametrize("seed", [0, 1])
def test_an_array_carried_through_a_loop_fences_each_phase_after_the_last(seed):
    acc = torch.randn(ROWS, N)
    expected = ((acc * 2.0 + 1.0) * 2.0 + 1.0) * 2.0 + 1.0
    run(Carried, acc, config=RunConfig(detect_races=True, schedule_seed=seed))
    assert torch.equal(acc, expected)


def test_an_index_outside_the_array_stops_the_run():
    @pl.program
    class Outside:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[ROWS, N], pl.FP32],
                 mid: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
            tids = pl.array.create(2, pl.TASK_ID)
            for i in pl.range(B):
                mid, tid = pl.submit(scale, x, i * TM, mid)
                tids[i] = tid  # i = 2, 3 lie outside
            return mid

    with pytest.raises(OrchestrationError, match="returned 4.*outside the array"):
        run(Outside, torch.randn(ROWS, N), torch.zeros(ROWS, N))


def test_an_array_of_anything_but_task_ids_is_refused_at_its_line():
    with pytest.raises(TypeCheckError, match="arrays hold task ids"):
        @pl.program
        class Floats:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[ROWS, N], pl.FP32]) -> pl.Tensor[[ROWS, N], pl.FP32]:
                pl.array.create(4, pl.FP32)
                return x


def test_an_array_inside_a_kernel_is_refused_at_its_line():
    with pytest.raises(ParseError, match="orchestration"):
        @pl.jit.incore
        def kernel(x: pl.Tensor[[ROWS, N], pl.FP32]):
            pl.array.create(4, pl.TASK_ID)
            return x
        kernel.lower(torch.zeros(ROWS, N))


def test_torch_codegen_runs_a_program_with_arrays():
    from pypto.debug import load_entry, torch_codegen

    x, out = torch.randn(ROWS, N), torch.zeros(ROWS, N)
    load_entry(torch_codegen(TwoPhases), TwoPhases.entry)(x, out)
    assert torch.equal(out, _expected(x))


@pl.jit.incore
def plus_one(mid: pl.Tensor[[ROWS, N], pl.FP32], row: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]):
    out = pl.store(pl.add(pl.load(mid, [row, 0], [TM, N]), 1.0), [row, 0], out)
    return out


@pl.program
class OneEntry:
    """Each reader waits on the one writer of the stripe it reads: `tids[i]` is a task id."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, N], pl.FP32],
             out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
        mid = pl.create_tensor([ROWS, N], dtype=pl.FP32)
        with pl.manual_scope():
            tids = pl.array.create(B, pl.TASK_ID)
            for i in pl.parallel(B):
                mid, tid = pl.submit(scale, x, i * TM, mid)
                tids[i] = tid
            for i in pl.parallel(B):
                writer = tids[B - 1 - i]
                out, _ = pl.submit(plus_one, mid, (B - 1 - i) * TM, out, deps=[writer])
        return out


@pytest.mark.parametrize("seed", [0, 1])
def test_an_entry_read_from_an_array_is_a_task_id(seed):
    x, out = torch.randn(ROWS, N), torch.zeros(ROWS, N)
    run(OneEntry, x, out, config=RunConfig(detect_races=True, schedule_seed=seed))
    assert torch.equal(out, x * 2.0 + 1.0)
    assert "writer: pl.TaskId = pl.array.get_element(tids, 3 - i)" in OneEntry.as_python()


@pl.program
class OneDummy:
    """A join of one task id stands for that task."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, N], pl.FP32],
             out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
        mid = pl.create_tensor([ROWS, N], dtype=pl.FP32)
        with pl.manual_scope():
            for i in pl.parallel(B):
                mid, tid = pl.submit(scale, x, i * TM, mid)
                joined = pl.system.task_dummy(deps=[tid])
                out, _ = pl.submit(plus_one, mid, i * TM, out, deps=[joined])
        return out


def test_a_task_dummy_of_one_task_id_waits_on_that_task():
    x, out = torch.randn(ROWS, N), torch.zeros(ROWS, N)
    run(OneDummy, x, out, config=RunConfig(detect_races=True, schedule_seed=2))
    assert torch.equal(out, x * 2.0 + 1.0)


def test_a_task_dummy_of_several_entries_is_refused_at_its_line():
    with pytest.raises(ParseError, match="joins one array of task ids"):
        @pl.program
        class Two:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[ROWS, N], pl.FP32],
                     out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]
                     ) -> pl.Tensor[[ROWS, N], pl.FP32]:
                out, a = pl.submit(plus_one, x, 0, out)
                out, b = pl.submit(plus_one, x, TM, out)
                joined = pl.system.task_dummy(deps=[a, b])
                out, _ = pl.submit(plus_one, x, 2 * TM, out, deps=[joined])
                return out
