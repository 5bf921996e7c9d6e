"""The shipped kernel library (kernels/*.py) built once per test session, for both simulator
platforms, in one copy of the project: `scons platform=a2a3sim check` then
`scons platform=a5sim check` (the second reuses the goldens, which are platform-independent).
"""

from __future__ import annotations

import time

import pytest
from shipped_library import PLATFORMS, LibraryBuild, copy_project, scons


@pytest.fixture(scope="session")
def library(tmp_path_factory) -> LibraryBuild:
    """The library checked on both platforms (artifacts from the session's isolated cache)."""
    built = LibraryBuild(copy_project(tmp_path_factory.mktemp("library") / "project"))
    for platform in PLATFORMS:
        start = time.monotonic()
        proc = scons(built.root, f"platform={platform}", "check", "-j2")
        built.seconds[platform] = time.monotonic() - start
        built.output[platform] = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise AssertionError(f"scons platform={platform} check failed:\n{proc.stdout}\n"
                                 f"{proc.stderr}")
    return built
