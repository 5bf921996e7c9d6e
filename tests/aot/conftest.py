"""Fixtures for the AOT build tests: a counting wrapper around the real g++, a torch
blocker and built projects (see scons_project.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from scons_project import COUNTING_CXX, TORCH_BLOCKER, Project, new_project


@pytest.fixture(scope="session")
def counting_cxx(tmp_path_factory) -> Path:
    """The g++ wrapper (PYPTO_CXX) that logs every compile to $CXX_CALL_LOG."""
    path = tmp_path_factory.mktemp("tools") / "counting-g++"
    path.write_text(COUNTING_CXX)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def torch_blocker(tmp_path_factory) -> Path:
    """A directory to put first on PYTHONPATH so that `import torch` fails."""
    root = tmp_path_factory.mktemp("no-torch")
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text(TORCH_BLOCKER)
    return root


@pytest.fixture
def make_project(tmp_path, counting_cxx) -> Callable[..., Project]:
    """Factory: `make_project(name, shipped=True)` or `make_project(name, specs=12)`."""

    def make(name: str = "project", cache: Path | None = None, **kw) -> Project:
        return new_project(tmp_path / name, cache or tmp_path / f"{name}-cache", counting_cxx,
                           **kw)

    return make


@pytest.fixture(scope="module")
def synthetic_built(tmp_path_factory, counting_cxx) -> Project:
    """Twelve synthetic specs (the first two import kernels/_shapes.py), built for a5sim."""
    base = tmp_path_factory.mktemp("synthetic")
    project = new_project(base / "lib", base / "cache", counting_cxx, specs=12, helper_users=2)
    project.scons("platform=a5sim", "-j2")
    return project


SHIPPED_SUBSET = ("elementwise",)
"""The shipped spec modules the default run builds: five kernels, sixteen variants (the
whole library, seven modules, builds in the tests marked slow and in `scons check`)."""


def _built_twice(base: Path, counting_cxx: Path, modules) -> tuple[Project, Project]:
    projects = []
    for name, targets in (("first", ["check", "package"]), ("second", ["package"])):
        project = new_project(base / name, base / f"{name}-cache", counting_cxx, shipped=True,
                              modules=modules)
        project.first_run = project.scons("platform=a5sim", *targets, "-j2")
        projects.append(project)
    return projects[0], projects[1]


@pytest.fixture(scope="session")
def shipped_builds(tmp_path_factory, counting_cxx) -> tuple[Project, Project]:
    """The shipped library's SHIPPED_SUBSET built twice from clean (own directories, own
    caches): with `scons platform=a5sim check package -j2`, then without `check`."""
    return _built_twice(tmp_path_factory.mktemp("shipped"), counting_cxx, SHIPPED_SUBSET)


@pytest.fixture(scope="session")
def whole_library_builds(tmp_path_factory, counting_cxx) -> tuple[Project, Project]:
    """`shipped_builds` of every shipped spec module (minutes: for tests marked slow)."""
    return _built_twice(tmp_path_factory.mktemp("whole"), counting_cxx, None)
