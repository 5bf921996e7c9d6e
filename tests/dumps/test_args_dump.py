"""enable_dump_args: level 1 dumps what pl.dump_tag / dumps= mark, level 2 every task's
tensors, with the values each task saw; a byte budget truncates or drops, never hangs."""

from __future__ import annotations

import json
import threading

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.debug import load_entry, torch_codegen
from pypto.ir.errors import LoweringError, ParseError
from pypto.passes import DUMP_DIR, dump_of
from pypto.runtime import RunConfig
from pypto.runtime.dump import ArgsDump, ArgsDumpWarning


def keys(dump: ArgsDump) -> list[tuple]:
    return [(r["task"], r["kernel"].rsplit("_", 1)[-1], r["stage"], r["role"], r["name"])
            for r in dump.records]


def test_level_1_dumps_only_the_tagged_tensors_of_the_tasks_that_take_them(dumped):
    dump = dumped(1)
    assert keys(dump) == [
        (1, "second", "before", "input", "y"),   # dumps=[y] on that block
        (1, "second", "before", "input", "a"),   # pl.dump_tag(a) before it
        (2, "third", "before", "input", "a"),    # ... and every later task taking `a`
    ]
    assert dump.manifest["level"] == 1 and dump.manifest["complete"]


def test_level_2_dumps_inputs_before_and_outputs_after_every_task(dumped):
    dump = dumped(2)
    assert keys(dump) == [
        (0, "first", "before", "input", "x"),
        (0, "first", "after", "output", "a"),
        (1, "second", "before", "input", "y"),
        (1, "second", "before", "input", "a"),
        (1, "second", "after", "output", "b"),
        (2, "third", "before", "inout", "acc"),
        (2, "third", "before", "input", "a"),
        (2, "third", "before", "input", "b"),
        (2, "third", "after", "inout", "acc"),
    ]
    assert [r["index"] for r in dump.records] == list(range(9))


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_dumped_values_equal_the_tensors_each_task_saw(dumped, tensors, platform):
    dump = dumped(2, platform=platform, workers=3)
    for record in dump.records:
        name = record["tensor"]
        if name == "acc" and record["stage"] == "after":
            name = "acc_after"
        assert torch.equal(dump.tensor(record), tensors[name]), record
        assert record["dtype"] == "FP32" and record["shape"] == [16, 128]
        assert record["offsets"] == [0, 0] and not record["truncated"]
    manifest = dump.manifest
    assert manifest["byteorder"] == "little" and manifest["layout"] == "row-major"
    assert manifest["written_bytes"] == (dump.bin_path.stat().st_size) == 9 * 16 * 128 * 4


@pl.jit
def bump(t: pl.InOut[pl.Tensor[[8, 128], pl.FP32]], u: pl.Tensor[[8, 128], pl.FP32],
         side: pl.Out[pl.Tensor[[8, 128], pl.FP32]]):
    for _ in pl.range(6):
        with pl.at(level=pl.Level.CORE_GROUP):
            t[:] = pl.add(t, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            side[:] = pl.exp(u)  # independent work for the other workers
    return t, side


def test_snapshots_are_taken_when_each_task_runs_even_with_concurrent_workers(work_dir):
    t, u, side = torch.zeros(8, 128), torch.randn(8, 128), torch.zeros(8, 128)
    bump(t, u, side, config=RunConfig(enable_dump_args=2, workers=4))
    dump = ArgsDump.load(work_dir)
    steps = [r for r in dump.records if r["name"] == "t" and r["role"] == "inout"]
    assert len(steps) == 12
    for k, (before, after) in enumerate(zip(steps[::2], steps[1::2], strict=True)):
        assert (before["stage"], after["stage"]) == ("before", "after")
        assert torch.equal(dump.tensor(before), torch.full((8, 128), float(k)))
        assert torch.equal(dump.tensor(after), torch.full((8, 128), float(k + 1)))


def test_a_spent_budget_truncates_one_record_drops_the_rest_and_warns(dumped, tensors,
                                                                    monkeypatch):
    monkeypatch.setenv("PYPTO_DUMP_BUDGET", str(8192 + 100))  # one record and 100 bytes
    finished = {}

    def run():
        with pytest.warns(ArgsDumpWarning, match="budget") as caught:
            finished["dump"] = dumped(2, schedule_seed=0)
        finished["warning"] = str(caught[0].message)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the run hung once the dump budget was spent"
    dump = finished["dump"]
    m = dump.manifest
    assert (m["budget_bytes"], m["written_bytes"]) == (8292, 8192 + 100 // 4 * 4)
    assert (m["truncated_records"], m["dropped_records"], m["dropped_bytes"]) == (1, 7, 7 * 8192)
    assert m["complete"]
    first, second = dump.records  # task 0's input, then its output: cut after 25 elements
    assert not first["truncated"] and torch.equal(dump.tensor(first), tensors["x"])
    assert second["truncated"] and (second["bin_size"], second["nbytes"]) == (100, 8192)
    assert torch.equal(dump.tensor(second), tensors["a"].reshape(-1)[:25])
    assert "1 record(s) truncated, 7 dropped" in finished["warning"]


def test_level_1_without_any_tag_warns_that_it_dumped_nothing(work_dir):
    @pl.jit
    def untagged(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        return out

    with pytest.warns(ArgsDumpWarning, match="no task of `untagged` takes a tagged tensor"):
        untagged(torch.zeros(16, 128), torch.zeros(16, 128), config=RunConfig(enable_dump_args=1))
    assert json.loads((work_dir / "dfx_outputs" / "args_dump" / "args_dump.json").read_text())[
        "records"] == []


def test_tags_print_parse_back_and_pass_roundtrip_verification(frontend, tensors, tmp_path):
    text = frontend.as_python()
    assert "pl.dump_tag(a)" in text and "dumps=[y]" in text
    assert pl.parse(text) == frontend
    compiled = ir.compile(frontend, output_dir=tmp_path / "artifact",
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    dumps = (compiled.output_dir / DUMP_DIR).iterdir()
    final = dump_of(dumps, "AllocateMemoryAddr").read_text()
    assert "pl.dump_tag(a)" in final and "dumps=[y]" in final  # carried to the call
    assert "PTO_DUMP" in (compiled.output_dir / "orchestration.cpp").read_text()


def test_dump_tag_is_a_no_op_in_torch_codegen(frontend, tensors):
    entry = load_entry(torch_codegen(frontend), frontend.entry)
    acc = tensors["acc"].clone()
    entry(tensors["x"], tensors["y"], acc)
    assert torch.equal(acc, tensors["acc_after"])


def test_dump_tag_inside_a_task_block_is_refused_at_the_users_line():
    @pl.jit
    def misplaced(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.dump_tag(x)
            out[:] = pl.exp(x)
        return out

    with pytest.raises(ParseError, match="pl.dump_tag") as info:
        misplaced.frontend(torch.zeros(16, 128), torch.zeros(16, 128))
    assert info.value.span.file == __file__


def test_dumps_naming_a_tensor_the_block_does_not_use_is_refused():
    @pl.jit
    def unused(x: pl.Tensor[[16, 128], pl.FP32], y: pl.Tensor[[16, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, dumps=[y]):
            out[:] = pl.exp(x)
        return out

    with pytest.raises(LoweringError, match="dumps names `y`"):
        unused.lower(torch.zeros(16, 128), torch.zeros(16, 128), torch.zeros(16, 128))


def test_enable_dump_args_takes_0_1_or_2():
    with pytest.raises(ValueError, match="enable_dump_args"):
        RunConfig(enable_dump_args=3)
