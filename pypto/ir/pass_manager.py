"""Upstream PyPTO's name for choosing the pass pipeline.

`OptimizationStrategy.Default` is the only strategy upstream and here: the pipeline of
`pypto.passes.default_pipeline()`.  `RunConfig(strategy=...)` and `ir.compile(strategy=...)`
accept it and refuse any other value.  `PassManager.get_strategy(strategy).run_passes(program)`
runs that pipeline for the backend `pypto.backend.set_backend_type` configured, with its
checks (verification and diagnostics), and returns the lowered program.
"""

from __future__ import annotations

import enum


class OptimizationStrategy(enum.Enum):
    """The pass pipeline a program is compiled with."""

    Default = "Default"


class PassManager:
    """Upstream's handle on a strategy's pass pipeline."""

    def __init__(self, strategy: OptimizationStrategy) -> None:
        self.strategy = strategy

    @classmethod
    def get_strategy(cls, strategy: OptimizationStrategy = OptimizationStrategy.Default
                     ) -> PassManager:
        if not isinstance(strategy, OptimizationStrategy):
            raise ValueError(f"the only strategy is OptimizationStrategy.Default, got "
                             f"{strategy!r}")
        return cls(strategy)

    def run_passes(self, program):
        """`program` (an ir.Program) lowered by the pipeline for the configured backend (its
        simulator's platform: the same passes and facts as the device's)."""
        from pypto.compiler import lower_for_configured_backend

        return lower_for_configured_backend(program)


__all__ = ["OptimizationStrategy", "PassManager"]
