"""Inferred edges: a stage through a scratch buffer is one RAW edge; independent tasks run at
once."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

pytestmark = pytest.mark.usefixtures("engine")  # both schedulers (conftest.py)

R, C = 64, 128
ROUNDS = 30000  # R*C*ROUNDS multiplies: tens of milliseconds per busy task


@pl.jit
def two_stages(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        scratch = pl.add(x, x)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(scratch, 3.0)
    return out


@pl.jit.incore
def busy(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    t = pl.load(x, [0, 0], [R, C])
    for _ in pl.range(ROUNDS):
        t = pl.mul(t, 1.0)
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def independent(x: pl.Tensor[[R, C], pl.FP32], y1: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                y2: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    y1 = busy(x, y1)
    y2 = busy(x, y2)
    return y1, y2


def test_two_stages_through_a_scratch_buffer_are_one_raw_edge(read_dfx):
    x = torch.randn(R, C)
    out = torch.zeros(R, C)
    two_stages(x, out, config=RunConfig(enable_dep_gen=True))
    assert torch.equal(out, (x + x) * 3.0)
    deps = read_dfx("deps.json")
    assert [t["kernel"] for t in deps["tasks"]] == ["two_stages_incore_0", "two_stages_incore_1"]
    (edge,) = deps["edges"]
    scratch = next(t for t in deps["tensors"] if t["origin"] == "scratch")
    assert edge == {"src": 0, "dst": 1, "source": "tensormap", "kind": "RAW",
                    "tensor": scratch["id"]}
    assert scratch["name"] == "scratch"


def test_deps_json_lists_every_task_argument_with_its_tensor(read_dfx):
    x = torch.randn(R, C)
    two_stages(x, torch.zeros(R, C), config=RunConfig(enable_dep_gen=True))
    deps = read_dfx("deps.json")
    names = {t["id"]: t["name"] for t in deps["tensors"]}
    first, second = deps["tasks"]
    assert [(a["name"], a["direction"], names[a["tensor"]]) for a in first["args"]] == [
        ("x", "in", "x"), ("scratch", "out", "scratch")]
    assert [(a["name"], a["direction"], names[a["tensor"]]) for a in second["args"]] == [
        ("out", "out", "out"), ("scratch", "in", "scratch")]
    assert all(a["tracked"] and a["offset"] == 0 and a["shape"] == [R, C]
               for a in first["args"] + second["args"])
    assert deps["complete"] is True and deps["format"] == "pypto.deps/1"


def test_independent_tasks_have_no_edge_and_overlap_in_the_swimlane(read_dfx):
    x = torch.rand(R, C)
    y1, y2 = torch.zeros(R, C), torch.zeros(R, C)
    independent(x, y1, y2, config=RunConfig(workers=2, enable_dep_gen=True,
                                            enable_swimlane=True))
    assert torch.equal(y1, x) and torch.equal(y2, x)
    assert read_dfx("deps.json")["edges"] == []
    events = read_dfx("swimlane.json")["traceEvents"]
    first, second = [e for e in events if e["ph"] == "X"]
    assert first["tid"] != second["tid"], "each task sits on the lane of its core"
    assert first["ts"] < second["ts"] + second["dur"] and second["ts"] < first["ts"] + first["dur"]
    assert not [e for e in events if e["ph"] in ("s", "f")]


def test_the_swimlane_has_one_lane_per_core_and_a_flow_arrow_per_edge(read_dfx):
    x = torch.randn(R, C)
    two_stages(x, torch.zeros(R, C), config=RunConfig(workers=3, enable_swimlane=True))
    events = read_dfx("swimlane.json")["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert lanes == {0: "core 0", 1: "core 1", 2: "core 2"}
    slices = [e for e in events if e["ph"] == "X"]
    assert [s["name"] for s in sorted(slices, key=lambda s: s["args"]["task"])] == [
        "two_stages_incore_0", "two_stages_incore_1"]
    start, finish = (next(e for e in events if e["ph"] == ph) for ph in ("s", "f"))
    assert start["id"] == finish["id"] and start["name"] == "RAW"
    producer, consumer = sorted(slices, key=lambda s: s["args"]["task"])
    assert (start["tid"], finish["tid"]) == (producer["tid"], consumer["tid"])
    assert producer["ts"] + producer["dur"] <= consumer["ts"]


def test_no_dfx_output_unless_asked(work_dir):
    two_stages(torch.randn(R, C), torch.zeros(R, C))
    assert not (work_dir / "dfx_outputs").exists()


@pytest.mark.parametrize("seed", [None, 3])
def test_outputs_go_to_the_current_directory_without_pypto_work_dir(tmp_path, monkeypatch,
                                                                    seed):
    monkeypatch.delenv("PYPTO_WORK_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    two_stages(torch.randn(R, C), torch.zeros(R, C),
               config=RunConfig(schedule_seed=seed, enable_dep_gen=True))
    assert (tmp_path / "dfx_outputs" / "deps.json").is_file()
