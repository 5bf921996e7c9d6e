"""Runs write their DFX outputs into a per-test work directory."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def work_dir(tmp_path, monkeypatch):
    """`<tmp>/`, as PYPTO_WORK_DIR: dfx_outputs/ of every run of the test lands there."""
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def read_dfx(work_dir):
    """read_dfx("deps.json") → the parsed file of the last run."""

    def read(name: str) -> dict:
        return json.loads((work_dir / "dfx_outputs" / name).read_text())

    return read


@pytest.fixture(params=["python", "native"])
def engine(request, monkeypatch):
    """Runs the test on each scheduler: the Python one (PYPTO_SCHEDULER=python) and the
    native one wherever the run allows it (PYPTO_SCHEDULER=auto: seeded, race-detecting
    and dumping runs stay on the Python scheduler)."""
    from pypto.runtime import native

    if request.param == "native" and native.unavailable_reason() is not None:
        pytest.skip(f"native scheduler unavailable: {native.unavailable_reason()}")
    monkeypatch.setenv("PYPTO_SCHEDULER", "python" if request.param == "python" else "auto")
    return request.param
