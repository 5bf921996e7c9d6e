"""`SpecRNG`: the seeded random source of one kernel case's input generator."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from pypto.ir.dtypes import DataType

GENERATOR_ID = (
    "pypto.golden.SpecRNG/1 torch.Generator(mt19937); floats drawn in FP32, ints in INT64"
)
"""Recorded in golden.json: which algorithm turned the seed into the inputs."""


def seed_for(kernel: str, variant: str) -> int:
    """The seed of case `kernel/variant`: the first 63 bits of sha256("kernel/variant")."""
    digest = hashlib.sha256(f"{kernel}/{variant}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class SpecRNG:
    """Draws tensors and scalars shaped like a variant's argument declarations.

    Owns its `torch.Generator`, so generating a golden never reads or advances torch's
    global random state, and the same case always gets the same inputs.  `like` is an
    argument declaration of the variant (`v.a`): anything with `dtype` and `shape`
    (`shape` None for a scalar).  Floats are drawn in FP32 and rounded to the target
    dtype; a scalar comes back as a Python number already rounded to its dtype, so the
    reference sees exactly the value the kernel receives.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._generator = None

    @classmethod
    def for_case(cls, kernel: str, variant: str) -> SpecRNG:
        """The generator of case `kernel/variant` (seeded with `seed_for`)."""
        return cls(seed_for(kernel, variant))

    @property
    def generator_id(self) -> str:
        """What golden.json records as the generator."""
        return GENERATOR_ID

    @property
    def generator(self) -> Any:
        """The underlying `torch.Generator`, for draws the helpers below do not cover."""
        if self._generator is None:
            import torch

            self._generator = torch.Generator(device="cpu").manual_seed(self.seed)
        return self._generator

    def normal(self, like: Any, mean: float = 0.0, std: float = 1.0) -> Any:
        """Normally distributed values of `like`'s dtype (a float dtype)."""
        import torch

        dtype, shape = _float_target(like, "normal")
        drawn = torch.randn(shape or (), generator=self.generator, dtype=torch.float32)
        return _finish(drawn * std + mean, dtype, shape)

    def uniform(self, like: Any, low: float = 0.0, high: float = 1.0) -> Any:
        """Values uniform in [low, high) of `like`'s dtype (a float dtype)."""
        import torch

        dtype, shape = _float_target(like, "uniform")
        if not high > low:
            raise ValueError(f"uniform: need low < high, got [{low}, {high})")
        drawn = torch.rand(shape or (), generator=self.generator, dtype=torch.float32)
        return _finish(drawn * (high - low) + low, dtype, shape)

    def integers(self, like: Any, low: int, high: int) -> Any:
        """Integers uniform in [low, high) converted to `like`'s dtype."""
        import torch

        dtype, shape = _target(like)
        if not high > low:
            raise ValueError(f"integers: need low < high, got [{low}, {high})")
        drawn = torch.randint(low, high, shape or (), generator=self.generator,
                              dtype=torch.int64)
        return _finish(drawn, dtype, shape)

    def choice(self, like: Any, values: Sequence[float | int]) -> Any:
        """Elements drawn uniformly from `values` (e.g. a table of boundary cases)."""
        import torch

        dtype, shape = _target(like)
        if not values:
            raise ValueError("choice: values must not be empty")
        table = torch.tensor(list(values), dtype=torch.float64 if dtype.is_float else torch.int64)
        index = torch.randint(0, len(values), shape or (), generator=self.generator)
        return _finish(table[index], dtype, shape)


def _target(like: Any) -> tuple[DataType, tuple[int, ...] | None]:
    try:
        dtype, shape = like.dtype, like.shape
    except AttributeError:
        raise TypeError(
            f"SpecRNG draws values like an argument declaration of the variant (v.<name>), "
            f"got {like!r}"
        ) from None
    if not isinstance(dtype, DataType):
        raise TypeError(f"{like!r}: dtype should be a pypto DataType")
    return dtype, (None if shape is None else tuple(shape))


def _float_target(like: Any, what: str) -> tuple[DataType, tuple[int, ...] | None]:
    dtype, shape = _target(like)
    if not dtype.is_float:
        raise TypeError(f"{what}: {dtype.name} is not a float dtype; use rng.integers(...)")
    return dtype, shape


def _finish(values: Any, dtype: DataType, shape: tuple[int, ...] | None) -> Any:
    rounded = values.to(dtype.to_torch())
    if shape is None:
        return rounded.item()
    return rounded.contiguous()
