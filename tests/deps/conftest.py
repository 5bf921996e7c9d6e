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
