"""Upstream PyPTO's name for choosing the pass pipeline.

`OptimizationStrategy.Default` is the only strategy upstream and here: the pipeline of
`pypto.passes.default_pipeline()`.  `RunConfig(strategy=...)` and `ir.compile(strategy=...)`
accept it and refuse any other value.
"""

from __future__ import annotations

import enum


class OptimizationStrategy(enum.Enum):
    """The pass pipeline a program is compiled with."""

    Default = "Default"


__all__ = ["OptimizationStrategy"]
