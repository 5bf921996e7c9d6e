"""Digests of the code each kind of build target depends on, cheap enough for a no-op build.

A target must rebuild when the code that makes it changes, not only when its inputs do.
These digests cover that code as files (stat-cached by the `SpecIndex`), plus the
versions of the external pieces, without importing any of it:

- `frontend`: what reads specs (the DSL parser, IR, `pypto.spec`, `pypto.golden`, the
  platform list): part of every spec's meaning;
- `golden`: what makes goldens (`pypto.golden`, the golden writer, torch, safetensors);
- `compiler`: what makes artifacts for one platform: the content key's own
  `compiler_digest` (pypto.toolchain.key), with file digests from the index's cache;
- `runtime`: what runs a check (`pypto.runtime`, the golden files' format and the
  comparison, the simulator headers, torch).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pypto.spec.index import SpecIndex

PACKAGE = Path(__file__).resolve().parents[1]
# What making a golden and checking against one share: the files' format, the comparison
# (its dtypes from ir.diagnostics), the record digest.
_GOLDEN_FORMAT = [PACKAGE / "golden_files.py", PACKAGE / "comparison.py",
                  PACKAGE / "records.py", PACKAGE / "ir" / "dtypes.py",
                  PACKAGE / "ir" / "diagnostics.py"]


def frontend_digest(index: SpecIndex) -> str:
    """Digest of the code that turns a spec file into its description."""
    from pypto.platform import build_rules_dir

    return index.tree_digest([
        PACKAGE / "__init__.py", PACKAGE / "language", PACKAGE / "ir", PACKAGE / "spec",
        PACKAGE / "golden", PACKAGE / "platform.py", build_rules_dir() / "platforms",
    ])


def golden_digest(index: SpecIndex) -> str:
    """Digest of the code that makes a golden from a spec."""
    code = index.tree_digest([PACKAGE / "golden", *_GOLDEN_FORMAT])
    return f"{code} {dist_version('torch')} {dist_version('safetensors')}"


def runtime_digest(index: SpecIndex) -> str:
    """Digest of the code that runs a built kernel against its golden."""
    code = index.tree_digest([PACKAGE / "runtime", PACKAGE / "sim", *_GOLDEN_FORMAT,
                              PACKAGE / "platform.py"])
    return f"{code} {dist_version('torch')}"


def compiler_digest(index: SpecIndex, platform: str) -> str:
    """`pypto.toolchain.key.compiler_digest` for `platform`, from the index's cached file
    digests: everything besides the program and its options that decides an artifact's
    bytes.

    Resolves the platform's compiler: raises `ToolchainNotFoundError` (naming what is
    missing) when it is not installed, which is how a device build stops at once.
    """
    from pypto.platform import get_platform
    from pypto.toolchain import Toolchain, key

    target = get_platform(platform)
    return key.compiler_digest(target, Toolchain.for_platform(target).identity(),
                               digest=index.code_digest)


def artifact_options(index: SpecIndex, platform: str, compiler: str) -> str:
    """The compile options of a library build's artifacts, as the content key spells them.
    They follow from the compiler's code and the environment, which `compiler` (the
    platform's `compiler_digest`) covers: remembered under it, so that a no-op build does
    not import the compiler."""

    def compute() -> str:
        from pypto.compiler import CompileOptions, options_text

        return options_text(CompileOptions(platform=platform))

    return index.memo(f"artifact options {platform}", compiler, compute)


def dist_version(name: str) -> str:
    """The `<name>-<version>.dist-info` directory of an installed distribution, found on
    sys.path without importing the package (torch takes a second to import)."""
    for entry in sys.path:
        for item in _listing(entry or "."):
            if item.startswith(f"{name}-") and item.endswith(".dist-info"):
                return item
    return f"{name} (not installed)"


_LISTINGS: dict[str, list[str]] = {}


def _listing(directory: str) -> list[str]:
    if directory not in _LISTINGS:
        try:
            _LISTINGS[directory] = sorted(os.listdir(directory))
        except OSError:
            _LISTINGS[directory] = []
    return _LISTINGS[directory]
