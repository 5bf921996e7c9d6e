"""The shipped kernel library (kernels/*.py) built once per test session, for both simulator
platforms, in one copy of the project: `scons platform=a2a3sim check` then
`scons platform=a5sim check` (the second reuses the goldens, which are platform-independent).

Under pytest-xdist the workers of one session share that build: the first to need it
builds it under a lock in the session's shared temporary directory, the others wait and
read it (the tests only read the build), so the library is built once, not once per
worker.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from shipped_library import PLATFORMS, LibraryBuild, copy_project, scons

from pypto.filesystem import atomic_write, lock_with_deadline

BUILD_DEADLINE_S = 3600  # a waiting worker gives up after an hour


@pytest.fixture(scope="session")
def library(tmp_path_factory) -> LibraryBuild:
    """The library checked on both platforms (artifacts from the builder's isolated cache)."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # no xdist: this session alone
        return _build(tmp_path_factory.mktemp("library"))
    shared = tmp_path_factory.getbasetemp().parent / "library"  # the session's, all workers'
    shared.mkdir(exist_ok=True)
    fd = lock_with_deadline(shared / "lock", BUILD_DEADLINE_S)
    try:
        record = shared / "built.json"
        if record.exists():
            data = json.loads(record.read_text())
            return LibraryBuild(shared / "project", data["output"], data["seconds"])
        built = _build(shared)
        atomic_write(record, json.dumps({"output": built.output, "seconds": built.seconds}))
        return built
    finally:
        os.close(fd)


def _build(directory) -> LibraryBuild:
    built = LibraryBuild(copy_project(directory / "project"))
    for platform in PLATFORMS:
        start = time.monotonic()
        proc = scons(built.root, f"platform={platform}", "check", "-j2")
        built.seconds[platform] = time.monotonic() - start
        built.output[platform] = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise AssertionError(f"scons platform={platform} check failed:\n{proc.stdout}\n"
                                 f"{proc.stderr}")
    return built
