"""pypto: an ahead-of-time build system for PTO tile kernels, with a host simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from SCons.Environment import Base as SConsEnvironment

__version__ = "0.1.0"


def generate(env: SConsEnvironment) -> None:
    """SCons' hook for the tool "pypto" (see `pypto.scons`): adds the kernel-library
    variables, builders and `env.KernelLibrary`."""
    from pypto.scons.tool import generate as add_tool

    add_tool(env)


def exists(env: SConsEnvironment) -> bool:
    """SCons' hook: the tool works wherever SCons runs."""
    return True
