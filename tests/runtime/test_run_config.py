"""RunConfig: the documented defaults, keyword-only construction and validation."""

import dataclasses

import pytest

from pypto.runtime import RunConfig


def test_defaults_are_the_documented_ones():
    config = RunConfig()
    assert dataclasses.asdict(config) == {
        "platform": "a2a3sim",
        "rtol": 1e-5,
        "atol": 1e-5,
        "golden_data_dir": None,
        "dump_passes": False,
        "enable_dump_args": 0,
        "enable_dep_gen": False,
        "enable_swimlane": False,
        "detect_races": False,
        "schedule_seed": None,
        "diagnostic_phase": None,
        "disabled_diagnostics": None,
        "workers": None,
        "device_id": None,
        "strategy": None,
        "backend_type": None,
        "compile_profiling": False,
        "distributed_config": None,
        "ring_task_window": None,
        "ring_heap": None,
        "ring_dep_pool": None,
        "enable_scope_stats": False,
        "save_kernels": False,
        "save_kernels_dir": None,
        "codegen_only": False,
        "enable_pmu": 0,
        "aicpu_thread_num": None,
    }


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim", "a2a3", "a5"])
def test_every_known_platform_is_accepted(platform):
    assert RunConfig(platform=platform).platform == platform


@pytest.mark.parametrize("platform", ["a5sim", "a2a3"])
def test_without_a_platform_it_takes_pypto_platform(platform, monkeypatch):
    monkeypatch.setenv("PYPTO_PLATFORM", platform)
    assert RunConfig().platform == platform
    assert RunConfig(platform="a2a3sim").platform == "a2a3sim"  # a given one wins


def test_an_unknown_pypto_platform_is_a_value_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("PYPTO_PLATFORM", "a5simm")
    with pytest.raises(ValueError, match=r"\$PYPTO_PLATFORM is 'a5simm', which names no "
                                         r"platform; set it to one of: a2a3sim, a5sim"):
        RunConfig()


def test_unknown_platform_is_a_value_error_listing_the_four():
    with pytest.raises(ValueError, match="a2a3sim") as info:
        RunConfig(platform="a3sim")
    for name in ("a2a3sim", "a5sim", "a2a3", "a5"):
        assert name in str(info.value)


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError):
        RunConfig(worker=2)


def test_positional_arguments_are_refused():
    with pytest.raises(TypeError):
        RunConfig("a2a3sim")


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers"):
        RunConfig(workers=workers)


def test_schedule_seed_must_be_an_integer():
    with pytest.raises(TypeError, match="schedule_seed"):
        RunConfig(schedule_seed="7")
