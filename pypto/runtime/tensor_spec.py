"""`TensorSpec`: upstream PyPTO's description of a tensor a harness creates for a run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class TensorSpec:
    """A tensor to create: `name`, `shape`, torch `dtype`, and how to fill it.

    `init_value`: None (zeros); a number (every element); a tensor (used, cast to
    `dtype`); torch.randn / rand / zeros / ones (called with the shape and dtype); any
    other callable is called without arguments and its result cast to `dtype`.
    `is_output`: the tensor is a result (created as zeros, whatever `init_value`).
    """

    name: str
    shape: list
    dtype: Any
    init_value: int | float | Any | Callable | None = None
    is_output: bool = False

    def create_tensor(self) -> Any:
        """The tensor this spec describes."""
        import torch

        value = self.init_value
        if value is None or self.is_output:
            return torch.zeros(self.shape, dtype=self.dtype)
        if isinstance(value, (int, float)):
            return torch.full(self.shape, value, dtype=self.dtype)
        if isinstance(value, torch.Tensor):
            return value.to(dtype=self.dtype)
        if value in (torch.randn, torch.rand, torch.zeros, torch.ones):
            return value(self.shape, dtype=self.dtype)
        if callable(value):
            return torch.as_tensor(value(), dtype=self.dtype)
        raise TypeError(f"TensorSpec {self.name!r}: init_value must be None, a number, a "
                        f"tensor or a callable, got {type(value).__name__}")


__all__ = ["TensorSpec"]
