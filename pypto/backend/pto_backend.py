"""The PTO backend's errors under upstream PyPTO's names."""

from __future__ import annotations

from pypto.ir.errors import LoweringError

PartialCodegenError = LoweringError
"""A program that cannot be lowered to kernels and orchestration (upstream's name for
what this project raises as `LoweringError`, with the user's file and line)."""

__all__ = ["PartialCodegenError"]
