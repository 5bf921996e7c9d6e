"""`allow_early_resolve=True` (upstream's "let consumers pre-stage"): a scheduling hint on
pl.at / pl.spmd / pl.submit / pl.spmd_submit, carried in the IR to the dispatch.  A consumer
that a flagged producer is the last to release starts next, on the core that producer
frees, ahead of tasks that became ready earlier; results do not change."""

from __future__ import annotations

import json

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import ParseError
from pypto.runtime import RunConfig

TR, TC = 64, 128
SPIN = 100_000  # iterations of the gate task (~30 ms): every later task is queued by then


def pipeline(early: bool):
    """gate (slow) -> producer, side1, side2 (all ready when gate ends, in that order);
    producer -> consumer.  On one core: producer, then side1, side2 and the consumer in
    the order the ready queue holds them."""
    @pl.jit
    def staged(a: pl.Tensor[[TR, TC], pl.FP32], g: pl.Out[pl.Tensor[[TR, TC], pl.FP32]],
               s: pl.Out[pl.Tensor[[TR, TC], pl.FP32]],
               x: pl.Out[pl.Tensor[[2 * TR, TC], pl.FP32]],
               out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="gate"):
            t = pl.load(a, [0, 0], [TR, TC])
            for _ in pl.range(SPIN):
                t = pl.add(t, 0.0)
            pl.store(t, [0, 0], g)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="producer", allow_early_resolve=early):
            pl.store(pl.mul(pl.load(g, [0, 0], [TR, TC]), 2.0), [0, 0], s)
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="side"):
                pl.store(pl.add(pl.load(g, [0, 0], [TR, TC]), 1.0), [i * TR, 0], x)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consumer"):
            pl.store(pl.exp(pl.load(s, [0, 0], [TR, TC])), [0, 0], out)
        return g, s, x, out
    return staged


@pytest.fixture(params=["native", "python"])
def scheduler(request, monkeypatch):
    """Both schedulers order ready tasks the same way."""
    monkeypatch.setenv("PYPTO_SCHEDULER", request.param)
    return request.param


def _run(kernel, tmp_path, monkeypatch, **config):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    a = torch.randn(TR, TC)
    g, s, out = torch.zeros(TR, TC), torch.zeros(TR, TC), torch.zeros(TR, TC)
    x = torch.zeros(2 * TR, TC)
    kernel(a, g, s, x, out,
           config=RunConfig(workers=1, enable_dep_gen=True, enable_swimlane=True, **config))
    torch.testing.assert_close(out, torch.exp(a * 2.0))
    torch.testing.assert_close(x, torch.cat([a + 1.0, a + 1.0]))
    deps = json.loads((tmp_path / "dfx_outputs" / "deps.json").read_text())
    lane = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())
    starts = {e["args"]["task"]: e["ts"] for e in lane["traceEvents"] if e.get("ph") == "X"}
    order = [t["kernel"] for t in sorted(deps["tasks"], key=lambda t: starts[t["id"]])]
    return order, deps


def _names(order):
    return [next(n for n in ("gate", "producer", "side", "consumer") if n in k) for k in order]


def test_a_consumer_of_a_flagged_producer_starts_before_tasks_ready_earlier(
        scheduler, tmp_path, monkeypatch):
    order, deps = _run(pipeline(True), tmp_path, monkeypatch)
    assert _names(order) == ["gate", "producer", "consumer", "side", "side"]
    flags = {t["kernel"]: (t["allow_early_resolve"], t["pre_staged"]) for t in deps["tasks"]}
    assert [flags[k] for k in order] == [(False, False), (True, False), (False, True),
                                        (False, False), (False, False)]
    lane = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())
    staged = [e["name"] for e in lane["traceEvents"] if e.get("args", {}).get("pre_staged")]
    assert len(staged) == 1 and "consumer" in staged[0]


def test_without_the_flag_the_consumer_waits_its_turn(scheduler, tmp_path, monkeypatch):
    order, deps = _run(pipeline(False), tmp_path, monkeypatch)
    assert _names(order) == ["gate", "producer", "side", "side", "consumer"]
    assert not any(t["allow_early_resolve"] or t["pre_staged"] for t in deps["tasks"])


@pl.jit.incore
def double(x: pl.Tensor[[TR, TC], pl.FP32], y: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
    y = pl.store(pl.mul(pl.load(x, [0, 0], [TR, TC]), 2.0), [0, 0], y)
    return y


@pl.jit
def flagged_everywhere(a: pl.Tensor[[TR, TC], pl.FP32], b: pl.Out[pl.Tensor[[TR, TC], pl.FP32]],
                       c: pl.Out[pl.Tensor[[TR, TC], pl.FP32]],
                       d: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve=True):
        pl.store(pl.load(a, [0, 0], [TR, TC]), [0, 0], b)
    c, _tid = pl.submit(double, b, c, allow_early_resolve=True)
    with pl.spmd(2, allow_early_resolve=True):
        pl.store(pl.load(c, [0, 0], [TR, TC]), [0, 0], d)
    return b, c, d


def test_the_flag_prints_parses_back_and_reaches_the_dispatch(tmp_path):
    a = torch.randn(TR, TC)
    args = (a, torch.zeros(TR, TC), torch.zeros(TR, TC), torch.zeros(TR, TC))
    frontend = flagged_everywhere.frontend(*args)
    text = frontend.as_python()
    assert text.count("allow_early_resolve=True") == 3
    assert pl.parse(text) == frontend
    lowered = flagged_everywhere.lower(*args).as_python()
    assert lowered.count("allow_early_resolve=True") == 3  # every outlined call keeps it
    compiled = ir.compile(frontend, output_dir=tmp_path / "artifact",
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    orchestration = (compiled.output_dir / "orchestration.cpp").read_text()
    assert orchestration.count("PTO_TASK_EARLY_RESOLVE") == 3
    _, _, d = flagged_everywhere(*args)
    torch.testing.assert_close(d, a * 2.0)


def test_allow_early_resolve_takes_a_bool():
    @pl.jit
    def bad(a: pl.Tensor[[TR, TC], pl.FP32], out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, allow_early_resolve=1):
            pl.store(pl.load(a, [0, 0], [TR, TC]), [0, 0], out)
        return out

    with pytest.raises(ParseError, match="allow_early_resolve= takes True or False"):
        bad.frontend(torch.zeros(TR, TC), torch.zeros(TR, TC))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_seeded_schedule_runs_a_pre_staged_consumer_right_after_its_producer(seed, tmp_path,
                                                                            monkeypatch):
    # A seeded run starts once everything is submitted: no timing is involved.
    order, _ = _run(pipeline(True), tmp_path, monkeypatch, schedule_seed=seed)
    names = _names(order)
    assert names.index("consumer") == names.index("producer") + 1


def test_without_the_flag_a_seed_may_run_others_between_producer_and_consumer(tmp_path,
                                                                            monkeypatch):
    order, _ = _run(pipeline(False), tmp_path, monkeypatch, schedule_seed=2)
    assert _names(order) == ["gate", "producer", "side", "side", "consumer"]
