"""The native scheduler is built with the package and only loaded at run time: never
compiled by the runtime, refused when stale, and its absence said once, clearly."""

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from pypto import resources
from pypto.runtime import load_artifact, native

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def undecided(monkeypatch):
    """The runtime as in a fresh process: the native library not yet looked for."""
    monkeypatch.setattr(native, "_library", None)
    monkeypatch.setattr(native, "_unavailable", None)
    monkeypatch.delenv("PYPTO_SCHEDULER", raising=False)


def test_the_package_build_installed_the_native_scheduler():
    path = resources.native_scheduler()
    assert path is not None and path.is_file()
    assert native.unavailable_reason() is None


def test_a_library_older_than_its_sources_is_refused_once_with_a_warning(
        undecided, monkeypatch, tmp_path):
    source, header = resources.scheduler_sources()
    edited = tmp_path / "scheduler.cpp"
    edited.write_bytes(source.read_bytes() + b"\n// an edit the library was not built from\n")
    monkeypatch.setattr(native, "scheduler_sources", lambda: (edited, header))
    monkeypatch.setattr(resources, "scheduler_sources", lambda: (edited, header))
    with pytest.warns(native.NativeSchedulerWarning, match="built from other sources.*rebuild"):
        assert native.library() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.library() is None  # decided once: no second warning
    assert "pip install -e ." in native.unavailable_reason()


def test_an_install_without_the_library_runs_on_python_after_one_warning(
        undecided, monkeypatch, make_artifact):
    monkeypatch.setattr(native, "native_scheduler", lambda: None)
    program = load_artifact(make_artifact("pipeline"), platform="a2a3sim")
    x, out = torch.randn(4, 8), torch.empty(4, 8)
    with pytest.warns(native.NativeSchedulerWarning, match="installed without it"):
        program.run([x, out])
    assert program.last_schedule.engine == "python"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program.run([x, out])
    assert torch.equal(out, (x + 1) * 2)


RUN_WITHOUT_COMPILERS = """
import shutil, sys, torch
from pypto.runtime import load_artifact
assert not any(shutil.which(c) for c in ("g++", "gcc", "cc", "c++", "clang")), "a compiler"
program = load_artifact(sys.argv[1], platform="a2a3sim")
x, out = torch.randn(4, 8), torch.empty(4, 8)
program.run([x, out])
assert program.last_schedule.engine == "native", program.last_schedule.engine
assert torch.equal(out, (x + 1) * 2)
"""


def test_the_runtime_runs_native_with_no_compiler_on_path_and_a_read_only_cache(
        make_artifact, tmp_path):
    artifact = make_artifact("pipeline")
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    bin_dir = tmp_path / "bin"  # an empty PATH: no g++, cc or clang to find
    bin_dir.mkdir()
    env = {"PATH": str(bin_dir), "PYTHONPATH": str(ROOT), "PYPTO_CACHE_DIR": str(cache),
           "HOME": str(tmp_path), "PYPTO_SCHEDULER": "native"}
    proc = subprocess.run([sys.executable, "-W", "error", "-c", RUN_WITHOUT_COMPILERS,
                           str(artifact)], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert list(cache.iterdir()) == []  # root ignores the mode: check nothing was written
    assert shutil.which("g++", path=env["PATH"]) is None
    assert os.access(resources.native_scheduler(), os.R_OK)
