"""Where pypto's package data lies: found through the installed package, never through
the layout of a checkout.

The compiler reads three trees besides its code: the Jinja2 templates, the build rules
(platform and backend data) and the simulator's C++ headers.  `templates/` and
`build_rules/` are kept at the repository's top level, as the design lays them out, and
are installed as the subpackages `pypto.templates` and `pypto.build_rules` (setup.py's
package-dir mapping): one copy in the repository, found by import in a wheel install and
in an editable one alike.  Every reader asks the functions here, so a platform or
template added to those trees needs no code change.

Only the standard library is imported: the runtime uses this module too.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import os
from pathlib import Path

TEMPLATES_ENV = "PYPTO_TEMPLATES_DIR"
"""Names a templates directory to use instead of the package's (a location, not keyed)."""
BUILD_RULES_ENV = "PYPTO_BUILD_RULES"
"""Names a build-rules directory to use instead of the package's (a location, not keyed)."""
NATIVE_SCHEDULER = "pypto.runtime._scheduler"
"""The module name under which the package build installs the native scheduler library."""


def templates_dir() -> Path:
    """The directory of every Jinja2 template ($PYPTO_TEMPLATES_DIR overrides)."""
    return Path(os.environ.get(TEMPLATES_ENV) or package_dir("pypto.templates"))


def build_rules_dir() -> Path:
    """The directory holding `platforms/` and `backends/` ($PYPTO_BUILD_RULES overrides)."""
    return Path(os.environ.get(BUILD_RULES_ENV) or package_dir("pypto.build_rules"))


def sim_include_dir() -> Path:
    """The include directory of the simulator's C++ model of the tile ISA (`pto/*.h*`)."""
    return package_dir("pypto.sim") / "include"


def scheduler_sources() -> tuple[Path, Path]:
    """The native scheduler's source and the ABI header it includes."""
    return (package_dir("pypto.sim") / "runtime" / "scheduler.cpp",
            sim_include_dir() / "pto" / "abi.h")


def scheduler_digest() -> str:
    """sha256 over the native scheduler's sources (each length-prefixed): what the package
    build compiles into the library (setup.py), and the runtime checks before using it."""
    digest = hashlib.sha256()
    for path in scheduler_sources():
        data = path.read_bytes()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def native_scheduler() -> Path | None:
    """The native scheduler library the package build made, or None where it made none."""
    spec = importlib.util.find_spec(NATIVE_SCHEDULER)
    return Path(spec.origin) if spec is not None and spec.origin else None


def package_dir(package: str) -> Path:
    """The directory of the installed package `package` (its package data lies inside)."""
    root = importlib.resources.files(package)
    if not isinstance(root, Path) or not root.is_dir():
        raise FileNotFoundError(
            f"{package} is not an unpacked directory ({root}); install pypto with pip "
            "(a wheel or `pip install -e .`), not as a zip archive"
        )
    return root
