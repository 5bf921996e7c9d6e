"""`pypto.backend`: upstream PyPTO's names for the NPU generations a program targets.

`BackendType.Ascend910B` / `BackendType.Ascend950` name the backends of build_rules/
(`RunConfig(backend_type=...)`, `ir.compile(backend_type=...)` check that the platform is of
that backend); `pto_backend.PartialCodegenError` is the error a program that cannot be
lowered or generated raises.
"""

from __future__ import annotations

import enum

from pypto.platform import backend_names

BackendType = enum.Enum("BackendType", {name: name for name in backend_names()},
                        module=__name__)
BackendType.__doc__ = "The NPU generations of build_rules/backends/ (Ascend910B, Ascend950)."

__all__ = ["BackendType"]
