"""Shared fixtures: an isolated artifact cache and a way to run code in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(items):
    """`small_tiles`: the test's programs move tiles narrower than a backend's transfer
    granularity on purpose (they check values, not speed), so the performance hint that
    says so (`TileInnermostDimGranularity`, checked in tests/passes/test_diagnostics.py)
    is not shown for them.  Every other warning still is."""
    for item in items:
        if item.get_closest_marker("small_tiles"):
            item.add_marker(pytest.mark.filterwarnings(
                "ignore::pypto.ir.diagnostics.PyptoPerfHint"))


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test session builds into its own cache, never the user's."""
    path = tmp_path_factory.mktemp("pypto-cache")
    old = os.environ.get("PYPTO_CACHE_DIR")
    os.environ["PYPTO_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("PYPTO_CACHE_DIR", None)
    else:
        os.environ["PYPTO_CACHE_DIR"] = old


# ATen's float unary ops that call MKL VML (aten/src/ATen/cpu/vml.h).
_VML_OPS = ("acos", "asin", "atan", "cos", "erf", "erfc", "erfinv", "exp", "log", "log10",
            "log1p", "log2", "sin", "sqrt", "tan", "tanh", "trunc")


@pytest.fixture(scope="session", autouse=True)
def default_platform_unset():
    """Tests see the documented default platform (a2a3sim), whatever the user exported as
    PYPTO_PLATFORM; a test that means another sets it itself."""
    old = os.environ.pop("PYPTO_PLATFORM", None)
    yield
    if old is not None:
        os.environ["PYPTO_PLATFORM"] = old


@pytest.fixture(scope="session", autouse=True)
def accurate_torch_references():
    """Settles MKL VML's kernel choice before any test's own torch reference runs.

    oneMKL (2024.2, as bundled with torch) picks a VML function's kernel on its first
    call; when that first call runs on several intra-op threads at once, one thread's
    chunk can go through a low-accuracy kernel despite VML_HA, ~1000s of ulp off
    (pytorch/pytorch#188792).  A one-element call of each, in FP32 and FP64, runs on the
    calling thread alone and settles the choice.  (Goldens use none of them:
    pypto.golden.portable.)
    """
    import torch

    for dtype in (torch.float32, torch.float64):
        one = torch.full((1,), 0.5, dtype=dtype)
        for name in _VML_OPS:
            getattr(torch, name)(one)


@pytest.fixture
def run_script(tmp_path):
    """Write `code` to a file and run it with this Python; returns the CompletedProcess."""

    def run(code: str, name: str = "script.py", env: dict | None = None, check: bool = True):
        path = tmp_path / name
        path.write_text(code)
        full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
        proc = subprocess.run(
            [sys.executable, str(path)], capture_output=True, text=True, env=full_env,
            cwd=tmp_path, timeout=300,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"script failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        return proc

    return run


@pytest.fixture(params=["python", "native"])
def engine(request, monkeypatch):
    """Runs the test on each scheduler: the Python one (PYPTO_SCHEDULER=python) and the
    native one wherever the run allows it (PYPTO_SCHEDULER=auto: seeded, race-detecting
    and dumping runs stay on the Python scheduler).  The package build always makes the
    native one (tests/runtime/test_native_loading.py)."""
    monkeypatch.setenv("PYPTO_SCHEDULER", "python" if request.param == "python" else "auto")
    return request.param
