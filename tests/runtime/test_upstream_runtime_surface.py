"""Upstream PyPTO's runtime names: RunConfig's upstream arguments, the device -> simulator
switch, pypto.runtime.run, ChipWorker.alloc_tensor(init=), pypto.backend."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.backend.pto_backend import PartialCodegenError
from pypto.ir.diagnostics import PyptoPerfHint, PyptoWarning
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.ir.errors import LoweringError
from pypto.ir.pass_manager import OptimizationStrategy
from pypto.runtime import ChipWorker, DistributedWorker, RunConfig, UnsupportedError, run

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.add(pl.load(a, [0, 0], [32, 128]), pl.load(b, [0, 0], [32, 128])),
                 [0, 0], c)
    return c


def _args():
    return torch.randn(32, 128), torch.randn(32, 128), torch.zeros(32, 128)


def test_enable_chip_swimlane_is_enable_swimlane():
    assert RunConfig(enable_chip_swimlane=True).enable_swimlane is True
    assert RunConfig().enable_swimlane is False


def test_device_id_labels_the_simulated_chip_in_the_swimlane(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    a, b, c = _args()
    add(a, b, c, config=RunConfig(enable_chip_swimlane=True, device_id=3))
    trace = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"]
    assert names == ["add on a2a3sim device 3"]


def test_bad_device_ids_are_value_errors():
    for bad in (-1, True, "0"):
        with pytest.raises(ValueError, match="device_id"):
            RunConfig(device_id=bad)


def test_strategy_and_backend_type_are_checked_against_the_platform():
    RunConfig(strategy=OptimizationStrategy.Default, backend_type=BackendType.Ascend910B)
    RunConfig(platform="a5sim", backend_type=BackendType.Ascend950)
    with pytest.raises(ValueError, match="does not match platform 'a2a3sim'"):
        RunConfig(backend_type=BackendType.Ascend950)
    with pytest.raises(ValueError, match="OptimizationStrategy.Default"):
        RunConfig(strategy="Fast")


def test_compile_profiling_writes_the_pipeline_profile():
    compiled = add.compile(*_args(), config=RunConfig(compile_profiling=True))
    assert (compiled.output_dir / "report" / "pipeline_profile.json").is_file()


def test_a_distributed_config_is_refused_where_it_is_used():
    config = RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))  # accepted
    with pytest.raises(UnsupportedError, match="multi-rank") as info:
        add(*_args(), config=config)
    assert f"{__file__}:" in str(info.value)  # the line that built the config
    with pytest.raises(UnsupportedError):
        DistributedWorker([])


@pytest.mark.parametrize("name", ["enable_pmu", "aicpu_thread_num"])
def test_device_runtime_arguments_are_refused_with_the_line_and_what_to_do(name):
    with pytest.raises(TypeError, match=f"RunConfig\\({name}=...\\) is not supported: it") \
            as info:
        RunConfig(**{name: 2})
    assert f"{__file__}:" in str(info.value)  # the line that built the config


def test_device_runtime_arguments_that_ask_for_nothing_are_accepted():
    config = RunConfig(enable_pmu=0, aicpu_thread_num=None)
    assert (config.enable_pmu, config.aicpu_thread_num) == (0, None)


def test_codegen_only_stops_runtime_run_after_the_compile(tmp_path):
    a, b, c = _args()
    compiled = run(add, a, b, c, config=RunConfig(codegen_only=True))
    assert (compiled.output_dir / "manifest.json").is_file()
    assert torch.equal(c, torch.zeros(32, 128))  # nothing ran
    compiled(a, b, c)
    assert torch.equal(c, a + b)


@pytest.mark.parametrize("entry", ["jit", "program"])
def test_save_kernels_dir_receives_the_artifact_from_runtime_run(entry, tmp_path):
    a, b, c = _args()
    program = add if entry == "jit" else add.frontend(a, b, c)
    saved = tmp_path / "kernels"
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyptoWarning)  # run() reads them: no warning
        warnings.simplefilter("ignore", PyptoPerfHint)
        run(program, a, b, c, config=RunConfig(save_kernels=True, save_kernels_dir=saved))
    assert torch.equal(c, a + b)
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["platform"] == "a2a3sim"
    assert (saved / "orchestration.cpp").is_file()


def test_a_dispatch_that_does_not_read_the_harness_arguments_says_so_once():
    a, b, c = _args()
    config = RunConfig(codegen_only=True, save_kernels=True)
    with pytest.warns(PyptoWarning, match=r"RunConfig\(save_kernels=, codegen_only=...\) is "
                                          r"read by pypto.runtime.run\(\) only") as warned:
        add(a, b, c, config=config)
        add(a, b, c, config=config)
    assert torch.equal(c, a + b)  # it ran, as upstream's compiled call does
    assert sum(issubclass(w.category, PyptoWarning) and "runtime.run" in str(w.message)
               for w in warned) == 1
    assert __file__ in str(warned[0].message)


def test_a_device_platform_runs_on_its_simulator_when_the_switch_is_on(monkeypatch):
    monkeypatch.setenv("PYPTO_SIMULATE_DEVICE", "1")
    config = RunConfig(platform="a5", device_id=0)
    assert (config.platform, config.simulated_device) == ("a5sim", "a5")
    a, b, c = _args()
    add(a, b, c, config=config)
    assert torch.equal(c, a + b)
    assert ir.compile(add.frontend(a, b, c), platform="a2a3").platform == "a2a3sim"


def test_without_the_switch_a_device_platform_stays_a_device(monkeypatch):
    monkeypatch.delenv("PYPTO_SIMULATE_DEVICE", raising=False)
    assert RunConfig(platform="a2a3").platform == "a2a3"


def test_runtime_run_compiles_and_runs_a_program_and_a_jit_function():
    a, b, c = _args()
    run(add.frontend(a, b, c), a, b, c, config=RunConfig(dump_passes=True))
    assert torch.equal(c, a + b)
    c2 = torch.zeros(32, 128)
    run(add, a, b, c2)
    assert torch.equal(c2, a + b)


def test_a_resident_tensor_is_a_device_tensor():
    from pypto.runtime import DeviceTensor

    with ChipWorker(RunConfig()) as worker:
        assert isinstance(worker.alloc_tensor([4, 8], torch.float32), DeviceTensor)


def test_alloc_tensor_init_uploads_the_initial_contents():
    a, b, c = _args()
    compiled = add.compile(a, b, c)
    with ChipWorker(config=RunConfig()) as worker:
        resident = worker.alloc_tensor((32, 128), torch.float32, init=b)
        assert worker.aicpu_dlopen_count == 0
        handle = worker.register(compiled)
        for _ in range(2):
            handle(a, resident, c)
        assert worker.aicpu_dlopen_count == 1
        assert torch.equal(c, a + b)
        with pytest.raises(ValueError, match="init has shape"):
            worker.alloc_tensor((16, 128), torch.float32, init=b)


def test_partial_codegen_error_is_the_lowering_error():
    assert PartialCodegenError is LoweringError
