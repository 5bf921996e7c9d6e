"""What the CPU-model tests share."""

from __future__ import annotations

import pytest

from pypto.platform import get_platform
from pypto.toolchain import Toolchain, ToolchainNotFoundError


def toolchain_or_skip(name: str) -> Toolchain:
    """The toolchain of the CPU-model platform `name`; skips the test when it has none here
    (no recent enough compiler, or no pto-isa)."""
    try:
        return Toolchain.for_platform(get_platform(name))
    except ToolchainNotFoundError as exc:
        pytest.skip(f"no compiler for {name}: {exc}")
