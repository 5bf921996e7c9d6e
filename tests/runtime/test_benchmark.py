"""`pypto.runtime.benchmark`: upstream PyPTO's register-once, many-rounds timing loop on
the simulators (host wall per launch; no device clock, as upstream's *sim platforms)."""

from __future__ import annotations

import io

import pytest
import torch

import pypto.language as pl
from pypto.compiled import CompiledProgram
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram
from pypto.runtime import (
    ArtifactError,
    BenchmarkStats,
    ChipWorker,
    RegistrationHandle,
    RunConfig,
    UnsupportedError,
    benchmark,
)

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, b)
    return c


def _compiled():
    a, b, c = torch.randn(16, 64), torch.randn(16, 64), torch.zeros(16, 64)
    return add.compile(a, b, c), [a, b, c]


def test_it_times_each_measured_launch_and_runs_the_program():
    compiled, args = _compiled()
    stats = benchmark(compiled, args, rounds=5, warmup=2, platform="a2a3sim", device_id=0)
    assert torch.equal(args[2], args[0] + args[1])  # the launches ran
    assert (stats.rounds, stats.warmup) == (5, 2)
    assert len(stats.host_wall_us) == len(stats.invocations) == 5
    assert all(t > 0 for t in stats.host_wall_us)
    # A simulator has no device clock: 0, as upstream reports on its *sim platforms.
    assert stats.device_wall_us == [0.0] * 5 and stats.all_zero_device
    assert stats.samples is stats.device_wall_us
    assert stats.device_wall_us_median == stats.device_us_median == 0.0
    assert stats.per_round("host") == stats.host_wall_us
    assert stats.per_round("effective") == [0.0] * 5
    assert stats.per_round("union") == [] and stats.per_rank() == {}
    launch = stats.invocations[3]
    assert launch.inv == 3 and launch.host_wall_us == stats.host_wall_us[3]
    assert launch.task == compiled._manifest["content_key"]
    assert "host_wall_us min=" in str(stats) and "all 0" in str(stats)


def test_the_trees_render_each_launch_and_the_mean_with_its_spread():
    compiled, args = _compiled()
    stats = benchmark(compiled, args, rounds=3, warmup=0)
    out = io.StringIO()
    stats.print_tree(launch=0, file=out)
    assert out.getvalue().startswith("launch[0] (pid=") and "\nrun  " in out.getvalue()
    mean = stats.format_mean_tree(spread="both")
    assert mean.startswith("mean of 3 launches (warmup 0 excluded); each node: mean ±stdev "
                           "[min..max]:\nrun")
    assert "±" in mean and ".." in mean
    with pytest.raises(ValueError, match="spread must be one of"):
        stats.format_mean_tree(spread="wide")
    assert BenchmarkStats().format_tree().startswith("BenchmarkStats: no span tree")


def test_registration_handle_is_upstreams_name_of_the_registered_handle():
    compiled, args = _compiled()
    with ChipWorker(RunConfig()) as worker:
        handle = worker.register(compiled)
        assert isinstance(handle, RegistrationHandle)
        handle(*args)
    assert torch.equal(args[2], args[0] + args[1])


def test_a_prebuilt_artifact_is_benchmarked_from_its_directory():
    compiled, args = _compiled()
    stats = benchmark(CompiledProgram.from_dir(compiled.output_dir), args, rounds=2, warmup=1,
                      config=RunConfig(platform="a2a3sim"))
    assert len(stats.host_wall_us) == 2


def test_bad_arguments_are_refused_saying_what_to_pass():
    compiled, args = _compiled()
    with pytest.raises(ValueError, match="platform= / device_id= or config=, not both"):
        benchmark(compiled, args, platform="a2a3sim", config=RunConfig())
    with pytest.raises(ValueError, match="rounds must be an integer of at least 1"):
        benchmark(compiled, args, rounds=0)
    with pytest.raises(ArtifactError, match="platform mismatch: expected 'a5sim', found "
                                            "'a2a3sim'"):
        benchmark(compiled, args, rounds=1, platform="a5sim")
    with pytest.raises(ValueError, match="per_round\\(\\): metric must be one of"):
        BenchmarkStats().per_round("gpu")
    with pytest.raises(UnsupportedError, match="multi-rank"):
        benchmark(DistributedCompiledProgram.__new__(DistributedCompiledProgram), args)
