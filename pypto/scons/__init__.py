"""The pypto SCons tool, shipped with the package: a kernel project needs only its
`kernels/` and a SConstruct of three lines (`pypto new DIR` writes one):

    import pypto.scons

    env = Environment(tools=["pypto"], toolpath=[pypto.scons.toolpath()])
    env.KernelLibrary("my_kernels", version="0.1.0", specs=Glob("kernels/*.py"))

`toolpath()` is the directory that holds the installed pypto package, so SCons finds
its tool "pypto" as the package itself (the one the SConstruct imported, not a second
copy), whose `generate` hook adds what `pypto.scons.tool` defines: the command-line
variables `platform=`, `cache=`, `cache_limit=` and `launcher=`, the `KernelLibrary`
method and the aliases `goldens`, `check` and `package`.
"""

from __future__ import annotations

import os

import pypto


def toolpath() -> str:
    """The directory SCons finds tool "pypto" in: the one that holds the pypto package."""
    return os.path.dirname(os.path.dirname(pypto.__file__))
