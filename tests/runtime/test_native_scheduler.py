"""The native scheduler: taken when it can serve a run, refused clearly when it cannot,
and inferring exactly the Python scheduler's edges (random dispatch scripts on both)."""

import random

import pytest
import torch

from pypto.runtime import PyptoRuntimeError, RunConfig, load_artifact

BUFFER = 64
SCRIPT_TASKS = 64  # records in the script parameter (orch_script.cpp)
IN, OUT, INOUT, ACCUM, NO_DEP = 0, 1, 2, 3, 0x100


@pytest.fixture
def load(make_artifact):
    return lambda scenario, n=4: load_artifact(make_artifact(scenario, n=n), platform="a2a3sim")


def test_a_plain_run_takes_the_native_scheduler(load, monkeypatch):
    monkeypatch.delenv("PYPTO_SCHEDULER", raising=False)
    program = load("pipeline")
    x, out = torch.randn(4, 8), torch.empty(4, 8)
    program.run([x, out])
    assert program.last_schedule.engine == "native"
    assert torch.equal(out, (x + 1) * 2)


@pytest.mark.parametrize("config", [RunConfig(schedule_seed=3), RunConfig(detect_races=True),
                                    RunConfig(enable_dump_args=2)],
                         ids=["seeded", "race detector", "dumps"])
def test_runs_needing_instruments_take_the_python_scheduler(load, config, monkeypatch, tmp_path):
    monkeypatch.delenv("PYPTO_SCHEDULER", raising=False)
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    program = load("pipeline")
    program.run([torch.randn(4, 8), torch.empty(4, 8)], config)
    assert program.last_schedule.engine == "python"


def test_pypto_scheduler_native_refuses_a_run_that_needs_python(load, monkeypatch):
    monkeypatch.setenv("PYPTO_SCHEDULER", "native")
    with pytest.raises(PyptoRuntimeError, match=r"needs the Python scheduler: schedule_seed="):
        load("pipeline").run([torch.randn(4, 8), torch.empty(4, 8)], RunConfig(schedule_seed=1))


def test_pypto_scheduler_native_refuses_a_kernel_that_is_a_python_callable(load, monkeypatch):
    monkeypatch.setenv("PYPTO_SCHEDULER", "native")
    program = load("pipeline")
    program.kernels = (program.kernels[0], lambda core, args: None)
    with pytest.raises(PyptoRuntimeError, match="kernel 'times_two' is not the artifact's"):
        program.run([torch.randn(4, 8), torch.empty(4, 8)])


def test_an_unknown_pypto_scheduler_value_is_refused(load, monkeypatch):
    monkeypatch.setenv("PYPTO_SCHEDULER", "fast")
    with pytest.raises(ValueError, match="PYPTO_SCHEDULER='fast': choose one of auto"):
        load("pipeline").run([torch.randn(4, 8), torch.empty(4, 8)])


def test_warm_calls_reuse_buffers_and_still_poison_outputs(load, monkeypatch):
    monkeypatch.delenv("PYPTO_SCHEDULER", raising=False)
    program = load("poison")
    for _ in range(3):
        f, i = torch.zeros(4), torch.zeros(4, dtype=torch.int32)
        program.run([f, i])
        assert torch.isnan(f).all() and (i.view(torch.uint8) == 0xA5).all()


@pytest.mark.parametrize("workers", [1, 2])
def test_large_calls_split_their_copies_and_fills_and_move_every_byte(load, workers,
                                                                       monkeypatch):
    """Past 4 MB a call's copies and poison fills are cut into one share per thread, at
    64-byte boundaries (lengths here are not multiples of 64): the bytes are the same."""
    monkeypatch.delenv("PYPTO_SCHEDULER", raising=False)
    config = RunConfig(workers=workers)
    n = 150_001  # [n, 8] FP32: 4.8 MB each way
    program = load("pipeline", n=n)
    x = torch.randn(n, 8)
    before = x.clone()
    out = torch.zeros(n, 8)
    program.run([x, out], config)
    assert torch.equal(out, (before + 1) * 2) and torch.equal(x, before)
    program = load("poison", n=1_500_001)  # 6 MB per output
    for _ in range(2):
        f, i = torch.zeros(1_500_001), torch.zeros(1_500_001, dtype=torch.int32)
        program.run([f, i], config)
        assert torch.isnan(f).all() and (i.view(torch.uint8) == 0xA5).all()


def random_script(rng: random.Random, tasks: int) -> list[int]:
    """A script for orch_script.cpp: `tasks` dispatches over random views of the buffer."""
    script, submitted = [], 0
    for _ in range(tasks):
        record = []
        for _ in range(2):
            offset = rng.randrange(BUFFER)
            length = min(rng.choice([0, 1, 2, 4, 8, 16, 64]), BUFFER - offset)
            flags = NO_DEP if rng.random() < 0.2 else 0
            record += [offset, length, rng.choice([IN, OUT, INOUT, ACCUM]), flags]
        blocks = rng.choice([1, 1, 1, 1, 2, 3, 0])
        ndeps = rng.choice([0, 0, 0, 1, 2]) if submitted else 0
        deps = [rng.randrange(submitted) if submitted else 0 for _ in range(2)]
        script.append(record + [blocks, ndeps, *deps])
        submitted += blocks
    script += [[0] * 8 + [-1, 0, 0, 0]] * (SCRIPT_TASKS - tasks)
    return [value for record in script for value in record]


def schedule_of(program, script, engine: str, monkeypatch) -> tuple:
    monkeypatch.setenv("PYPTO_SCHEDULER", engine)
    program.run([torch.zeros(BUFFER), torch.tensor(script, dtype=torch.int64)])
    schedule = program.last_schedule
    assert schedule.engine == engine
    tasks = [(t.task_id, t.predecessors, t.block_idx, t.block_num, t.group, t.kernel_name,
              [(a.start - schedule.tasks[0].args[0].tensor.data, a.end - a.start, a.direction,
                a.tracked, a.arg) for a in t.accesses])
             for t in schedule.tasks]
    return schedule.edges, tasks


@pytest.mark.parametrize("seed", range(40))
def test_random_scripts_get_the_same_edges_from_both_schedulers(load, seed, monkeypatch):
    program = load("script", n=BUFFER)
    script = random_script(random.Random(seed), tasks=SCRIPT_TASKS - 4)
    edges, tasks = schedule_of(program, script, "python", monkeypatch)
    assert schedule_of(program, script, "native", monkeypatch) == (edges, tasks)
    assert edges  # the scripts are dense enough to order something


def test_deps_json_is_the_same_from_both_schedulers(load, monkeypatch, tmp_path):
    import json

    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    program = load("pipeline")
    documents = {}
    for engine in ("python", "native"):
        monkeypatch.setenv("PYPTO_SCHEDULER", engine)
        program.run([torch.randn(4, 8), torch.empty(4, 8)],
                    RunConfig(enable_dep_gen=True, enable_swimlane=True))
        assert program.last_schedule.engine == engine
        document = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
        for task in document["tasks"]:
            task.pop("core")  # which core took a task is up to the run
        documents[engine] = document
        lanes = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())
        assert [e["name"] for e in lanes["traceEvents"] if e["ph"] == "X"] == [
            "add_one", "times_two"]
    assert documents["native"] == documents["python"]
    assert [t["name"] for t in documents["python"]["tensors"]] == ["x", "out", "scratch"]
