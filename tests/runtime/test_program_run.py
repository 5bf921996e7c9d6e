"""LoadedProgram.run on hand-written kernels: results, edges, poison, races and argument checks."""


import pytest
import torch

from pypto.runtime import KernelError, OrchestrationError, RunConfig, load_artifact
from pypto.runtime.scheduler import Edge

pytestmark = pytest.mark.usefixtures("engine")  # both schedulers (conftest.py)


@pytest.fixture
def load(make_artifact):
    """load("pipeline", n=4) → a LoadedProgram of that scenario."""
    return lambda scenario, n=4: load_artifact(make_artifact(scenario, n=n), platform="a2a3sim")


def test_pipeline_through_scratch_is_exact_with_one_raw_edge(load):
    program = load("pipeline")
    x = torch.randn(4, 8)
    out = torch.empty(4, 8)
    result = program.run([x, out])
    assert result is out
    assert torch.equal(out, (x + 1) * 2)
    assert program.last_schedule.edges == [Edge(0, 1, "tensormap", "RAW")]


@pytest.mark.parametrize(
    "config",
    [RunConfig(workers=1), *(RunConfig(schedule_seed=seed) for seed in range(4))],
    ids=["workers=1", *(f"seed={seed}" for seed in range(4))],
)
def test_pipeline_is_exact_with_one_worker_and_under_seeds(load, config):
    program = load("pipeline")
    x = torch.randn(4, 8)
    out = torch.empty(4, 8)
    program.run([x, out], config)
    assert torch.equal(out, (x + 1) * 2)


def test_results_are_copied_into_a_non_contiguous_output(load):
    program = load("pipeline")
    x = torch.randn(4, 8)
    backing = torch.zeros(8, 4)
    out = backing.t()
    program.run([x, out])
    assert torch.equal(backing.t(), (x + 1) * 2)


def test_a_non_contiguous_input_is_read_through_its_strides_on_every_reused_call(load):
    program = load("pipeline")
    for k in range(3):  # the second call and after reuse the first one's buffers
        x = torch.randn(8, 4).t()
        out = torch.empty(4, 8)
        program.run([x, out])
        assert not x.is_contiguous() and torch.equal(out, (x + 1) * 2), k


def test_inputs_are_not_modified(load):
    program = load("pipeline")
    x = torch.randn(4, 8)
    before = x.clone()
    program.run([x, torch.empty(4, 8)])
    assert torch.equal(x, before)


def test_waw_orders_two_writers_of_the_same_output(load):
    program = load("waw")
    out = torch.zeros(4)
    program.run([out, 20_000], RunConfig(workers=2))
    assert torch.equal(out, torch.full((4,), 2.0))
    assert program.last_schedule.edges == [Edge(0, 1, "tensormap", "WAW")]


def test_independent_tasks_get_no_edge_and_run_concurrently(load):
    program = load("independent")
    a, b = torch.zeros(4), torch.zeros(4)
    outputs = program.run([a, b, 100_000], RunConfig(workers=2))
    assert outputs == (a, b)
    assert torch.equal(a, torch.ones(4)) and torch.equal(b, torch.full((4,), 2.0))
    schedule = program.last_schedule
    assert schedule.edges == []
    first, second = schedule.tasks
    # Both kernels sleep 100 ms; overlapping intervals prove two cores ran at once.
    assert first.start_ns < second.end_ns and second.start_ns < first.end_ns
    assert {first.core_id, second.core_id} == {0, 1}


def test_unwritten_outputs_keep_the_poison(load):
    program = load("poison")
    f = torch.zeros(4)
    i = torch.zeros(4, dtype=torch.int32)
    program.run([f, i])
    assert torch.isnan(f).all()
    assert (i.view(torch.uint8) == 0xA5).all()


def test_write_after_read_gets_no_edge_and_really_races(load):
    program = load("war")
    outcomes = set()
    for seed in range(12):
        y = torch.zeros(4)
        program.run([torch.zeros(4), y, 0], RunConfig(schedule_seed=seed))
        assert program.last_schedule.edges == []
        outcomes.add(y[0].item())
    # The reader saw the old x (0 + 1) under some seeds and the overwrite (5 + 1) under others.
    assert outcomes == {1.0, 6.0}


def test_explicit_dep_fixes_the_write_after_read(load):
    program = load("war")
    for seed in range(12):
        x, y = torch.zeros(4), torch.zeros(4)
        program.run([x, y, 1], RunConfig(schedule_seed=seed))
        assert torch.equal(y, torch.ones(4)) and torch.equal(x, torch.full((4,), 5.0))
    assert program.last_schedule.edges == [Edge(0, 1, "explicit", None)]


def test_same_seed_gives_the_same_order(load):
    program = load("many", n=40)

    def order(seed):
        program.run([torch.empty(40, dtype=torch.int32)], RunConfig(schedule_seed=seed))
        return [t.task_id for t in sorted(program.last_schedule.tasks, key=lambda t: t.start_ns)]

    assert order(7) == order(7)
    assert order(7) != order(8)


def test_cores_have_aligned_on_chip_buffers_poisoned_whole_without_marks_and_their_id(load):
    # The fixture's manifest (schema 1.0) records no on-chip marks: whole buffers are poisoned.
    program = load("probe_core")
    out = torch.zeros(3, dtype=torch.int32)
    program.run([out], RunConfig(workers=1))
    assert out.tolist() == [1, 1, 0]


def test_dependency_on_a_future_task_fails_the_run(load):
    program = load("bad_dep")
    with pytest.raises(OrchestrationError, match="depends on task 7, which has not been submitted"):
        program.run([torch.zeros(4)])


def test_view_outside_device_memory_is_refused(load):
    with pytest.raises(OrchestrationError, match="lies outside device memory"):
        load("bad_view").run([torch.zeros(4)])


def test_wrong_dtype_names_param_expected_and_found(load):
    with pytest.raises(TypeError, match="parameter 'x': expected dtype FP32, found FP16"):
        load("pipeline").run([torch.zeros(4, 8, dtype=torch.float16), torch.zeros(4, 8)])


def test_wrong_shape_names_param_expected_and_found(load):
    with pytest.raises(
        ValueError, match=r"parameter 'out': expected shape \[4, 8\], found \[8, 4\]"
    ):
        load("pipeline").run([torch.zeros(4, 8), torch.zeros(8, 4)])


def test_wrong_argument_count_lists_the_params(load):
    with pytest.raises(TypeError, match=r"takes 2 arguments \(x, out\), got 1"):
        load("pipeline").run([torch.zeros(4, 8)])


def test_tensor_passed_for_a_scalar_is_refused(load):
    with pytest.raises(TypeError, match="parameter 'delay_us': expected a Python int"):
        load("waw").run([torch.zeros(4), torch.tensor(3)])


def test_scalar_out_of_range_is_refused(load):
    with pytest.raises(ValueError, match="does not fit scalar INT64"):
        load("waw").run([torch.zeros(4), 1 << 63])


def test_kernel_failure_names_kernel_and_task(load):
    program = load("pipeline")

    def broken(core, args):
        raise OSError("simulated fault")

    program.kernels = (program.kernels[0], broken)
    with pytest.raises(KernelError, match=r"kernel 'times_two' \(task 1\) failed: simulated fault"):
        program.run([torch.zeros(4, 8), torch.zeros(4, 8)])


def test_ten_thousand_tiny_tasks_complete(load):
    n = 10_000
    program = load("many", n=n)
    out = torch.zeros(n, dtype=torch.int32)
    program.run([out])
    assert torch.equal(out, torch.arange(n, dtype=torch.int32))
    assert len(program.last_schedule.tasks) == n and program.last_schedule.edges == []
