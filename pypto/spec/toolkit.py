"""Digests of the code each kind of build target depends on, cheap enough for a no-op build.

A target must rebuild when the code that makes it changes, not only when its inputs do.
These digests cover that code as files (stat-cached by the `SpecIndex`), plus the
versions of the external pieces, without importing any of it:

- `frontend`: what reads specs (the DSL parser, IR, `pypto.spec`, `pypto.golden`, the
  platform list): part of every spec's meaning;
- `golden`: what makes goldens (`pypto.golden`, the golden writer, torch, safetensors);
- `compiler`: what makes artifacts for one platform (pypto's compiler sources,
  `templates/`, `build_rules/`, the resolved compiler's identity and the environment
  variables that change output);
- `runtime`: what runs a check (`pypto.runtime`, the simulator headers, torch).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from pypto.spec.index import SpecIndex

PACKAGE = Path(__file__).resolve().parents[1]


def frontend_digest(index: SpecIndex) -> str:
    """Digest of the code that turns a spec file into its description."""
    from pypto.platform import build_rules_dir

    return index.tree_digest([
        PACKAGE / "__init__.py", PACKAGE / "language", PACKAGE / "ir", PACKAGE / "spec",
        PACKAGE / "golden", PACKAGE / "platform.py", build_rules_dir() / "platforms",
    ])


def golden_digest(index: SpecIndex) -> str:
    """Digest of the code that makes a golden from a spec."""
    code = index.tree_digest([PACKAGE / "golden", PACKAGE / "runtime" / "golden.py",
                              PACKAGE / "ir" / "dtypes.py"])
    return f"{code} {dist_version('torch')} {dist_version('safetensors')}"


def runtime_digest(index: SpecIndex) -> str:
    """Digest of the code that runs a built kernel against its golden."""
    code = index.tree_digest([PACKAGE / "runtime", PACKAGE / "sim", PACKAGE / "ir" / "dtypes.py",
                              PACKAGE / "platform.py"])
    return f"{code} {dist_version('torch')}"


def compiler_digest(index: SpecIndex, platform: str) -> str:
    """Digest of everything besides the IR that decides an artifact's bytes on `platform`.

    Resolves the platform's compiler: raises `ToolchainNotFoundError` (naming what is
    missing) when it is not installed, which is how a device build stops at once.
    """
    from pypto.platform import build_rules_dir, get_platform
    from pypto.toolchain import OUTPUT_ENV_VARS, Toolchain

    identity = Toolchain.for_platform(get_platform(platform)).identity()
    skip = [PACKAGE / name for name in ("runtime", "golden", "spec", "tools", "debug")]
    parts = [
        index.tree_digest([PACKAGE], skip=skip),
        index.tree_digest([templates_dir(), build_rules_dir()]),
        hashlib.sha256(identity.encode()).hexdigest(),
        *(f"{var}={os.environ.get(var, '')}" for var in OUTPUT_ENV_VARS),
    ]
    return " ".join(parts)


def templates_dir() -> Path:
    """Where `pypto.codegen` reads its templates (without importing it, and so Jinja2)."""
    # The same rule as pypto.codegen.environment.TEMPLATES_DIR.
    return Path(os.environ.get("PYPTO_TEMPLATES_DIR", PACKAGE.parent / "templates"))


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
