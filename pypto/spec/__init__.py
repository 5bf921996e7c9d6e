"""Kernel specs: how a module under `kernels/` declares what the library builds.

    from pypto import spec

    SPECS = [spec.Kernel(add, variants={...}, inputs=..., reference=...,
                         tolerance=spec.Exact("one FP32 rounding, as the reference's cast"))]

`Kernel` (declare.py) is the declaration; `SpecRNG`, `Exact` and `Close` come from
`pypto.golden`.  The names are loaded on first use, so that the SCons tool, which imports
only `pypto.spec.index` on a no-op build, pays for none of them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Kernel": "pypto.spec.declare",
    "Variant": "pypto.spec.declare",
    "TensorArg": "pypto.spec.declare",
    "ScalarArg": "pypto.spec.declare",
    "SpecError": "pypto.spec.declare",
    "tensor": "pypto.spec.declare",
    "scalar": "pypto.spec.declare",
    "Exact": "pypto.golden.tolerance",
    "Close": "pypto.golden.tolerance",
    "SpecRNG": "pypto.golden.rng",
}

__all__ = [
    "Close",
    "Exact",
    "Kernel",
    "ScalarArg",
    "SpecError",
    "SpecRNG",
    "TensorArg",
    "Variant",
    "scalar",
    "tensor",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pypto.spec' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
