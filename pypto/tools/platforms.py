"""`pypto platforms`: what each platform builds for and whether its compiler is here."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`pypto platforms` takes no options."""


def run(args: argparse.Namespace) -> int:
    """Prints one line per platform: backend, kind, whether its compiler is found."""
    from pypto.platform import PLATFORM_NAMES, get_platform
    from pypto.toolchain import Toolchain, ToolchainNotFoundError

    for name in PLATFORM_NAMES:
        p = get_platform(name)
        try:
            Toolchain.for_platform(p)
            status = "compiler found"
        except ToolchainNotFoundError:
            status = "no compiler here"
        print(f"{name:10} {p.backend.name:12} {p.kind:7} {status}")
    return 0
