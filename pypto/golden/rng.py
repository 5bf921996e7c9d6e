"""`SpecRNG`: the seeded random source of one kernel case's input generator.

Inputs are a pure function of (seed, draw number, shape, dtype, generator version): the
bits come from Philox4x32-10, a counter-based generator (Salmon et al., SC'11: integer
multiplications, xors and key additions, here in numpy uint64 arithmetic), and are mapped
to values by integer operations and float64 arithmetic whose every step IEEE 754
specifies (`pypto.golden.fp64`).  No CPU feature, thread count, torch build or OS enters.
docs/building.md specifies the mapping; a change to any of it is a new GENERATOR_VERSION.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from pypto.golden import fp64
from pypto.golden.portable import to_dtype
from pypto.ir.dtypes import DataType

GENERATOR_VERSION = 2
GENERATOR_ID = (
    f"pypto.golden.SpecRNG/{GENERATOR_VERSION} philox4x32-10; values computed in float64 and "
    "rounded once to the dtype (docs/building.md)"
)
"""Recorded in golden.json: which algorithm turned the seed into the inputs."""
# Version 1 drew with torch.Generator (mt19937), whose normals depend on ATen's SIMD path.

_GENERATOR_VERSION = re.compile(r"pypto\.golden\.SpecRNG/(\d+)\b")

_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_ROUNDS = 10
_MASK32 = np.uint64(0xFFFFFFFF)


def generator_version(generator_id: str | None) -> int | None:
    """The SpecRNG version a golden.json's `generator` names (None: not a SpecRNG)."""
    found = _GENERATOR_VERSION.match(generator_id or "")
    return int(found.group(1)) if found else None


def seed_for(kernel: str, variant: str) -> int:
    """The seed of case `kernel/variant`: the first 63 bits of sha256("kernel/variant")."""
    digest = hashlib.sha256(f"{kernel}/{variant}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def philox4x32(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 of each row of `counter` ([n, 4] uint32 words) under `key` (two
    32-bit words): [n, 4] uint32 words, the Random123 reference's output."""
    c = [counter[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    m0, m1 = np.uint64(_PHILOX_M[0]), np.uint64(_PHILOX_M[1])
    for r in range(_PHILOX_ROUNDS):
        if r:
            k0 = (k0 + np.uint64(_PHILOX_W[0])) & _MASK32
            k1 = (k1 + np.uint64(_PHILOX_W[1])) & _MASK32
        p0, p1 = m0 * c[0], m1 * c[2]  # 32 x 32 -> 64 bits: exact in uint64
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK32]
    return np.stack(c, axis=1).astype(np.uint32)


class SpecRNG:
    """Draws tensors and scalars shaped like a variant's argument declarations.

    `like` is an argument declaration of the variant (`v.a`): anything with `dtype` and
    `shape` (`shape` None for a scalar).  The n-th draw of a generator (n = 0, 1, ...)
    takes 64 random bits per element from Philox counters (j, n) under the seed, so a
    draw's values depend on its own shape only, not on the draws before it.  Float values
    are computed in float64 and rounded once to the dtype; a scalar comes back as a Python
    number already rounded to its dtype, so the reference sees exactly what the kernel gets.
    """

    def __init__(self, seed: int) -> None:
        if not 0 <= seed < 1 << 64:
            raise ValueError(f"SpecRNG seeds are 64-bit unsigned integers, got {seed}")
        self.seed = seed
        self._draws = 0

    @classmethod
    def for_case(cls, kernel: str, variant: str) -> SpecRNG:
        """The generator of case `kernel/variant` (seeded with `seed_for`)."""
        return cls(seed_for(kernel, variant))

    @property
    def generator_id(self) -> str:
        """What golden.json records as the generator."""
        return GENERATOR_ID

    def bits(self, count: int) -> np.ndarray:
        """The next draw's `count` random 64-bit words (uint64): word j is words 2(j%2) and
        2(j%2)+1 (low, high) of Philox block (j // 2, 0, n, 0)."""
        blocks = (count + 1) // 2
        counter = np.zeros((blocks, 4), dtype=np.uint32)
        index = np.arange(blocks, dtype=np.uint64)
        counter[:, 0] = (index & _MASK32).astype(np.uint32)
        counter[:, 1] = (index >> np.uint64(32)).astype(np.uint32)
        counter[:, 2] = self._draws
        self._draws += 1
        words = philox4x32(counter, (self.seed & 0xFFFFFFFF, self.seed >> 32)).astype(np.uint64)
        pairs = words.reshape(-1, 2)
        return (pairs[:, 0] | (pairs[:, 1] << np.uint64(32)))[:count]

    def normal(self, like: Any, mean: float = 0.0, std: float = 1.0) -> Any:
        """Normally distributed values of `like`'s dtype (a float dtype): z * std + mean,
        z the normal quantile (AS 241) of p = (2k + 1) 2^-53, k the top 52 bits."""
        dtype, shape = _float_target(like, "normal")
        k = self.bits(_count(shape)) >> np.uint64(12)
        p = (k.astype(np.float64) * 2.0 + 1.0) * 2.0**-53  # exact: 53 bits, in (0, 1)
        return _finish(fp64.normal_quantile(p) * float(std) + float(mean), dtype, shape)

    def uniform(self, like: Any, low: float = 0.0, high: float = 1.0) -> Any:
        """Values uniform in [low, high) of `like`'s dtype (a float dtype): low + (high -
        low) u with u = k 2^-24, k the top 24 bits (rounding to the dtype can give high)."""
        dtype, shape = _float_target(like, "uniform")
        if not high > low:
            raise ValueError(f"uniform: need low < high, got [{low}, {high})")
        u = (self.bits(_count(shape)) >> np.uint64(40)).astype(np.float64) * 2.0**-24
        return _finish(float(low) + (float(high) - float(low)) * u, dtype, shape)

    def integers(self, like: Any, low: int, high: int) -> Any:
        """Integers uniform in [low, high) converted to `like`'s dtype: low + floor(w n /
        2^64) for a 64-bit word w and n = high - low <= 2^32."""
        dtype, shape = _target(like)
        return _finish(self._below(_count(shape), low, high, "integers"), dtype, shape)

    def choice(self, like: Any, values: Sequence[float | int]) -> Any:
        """Elements drawn uniformly from `values` (e.g. a table of boundary cases):
        values[integers in [0, len(values))]."""
        dtype, shape = _target(like)
        if not values:
            raise ValueError("choice: values must not be empty")
        table = np.asarray(list(values), dtype=np.float64 if dtype.is_float else np.int64)
        index = self._below(_count(shape), 0, len(values), "choice")
        return _finish(table[index], dtype, shape)

    def _below(self, count: int, low: int, high: int, what: str) -> np.ndarray:
        n = int(high) - int(low)
        if n <= 0:
            raise ValueError(f"{what}: need low < high, got [{low}, {high})")
        if n > 1 << 32:
            raise ValueError(f"{what}: the range [{low}, {high}) is wider than 2^32")
        w, size = self.bits(count), np.uint64(n)
        # floor(w n / 2^64) from 32-bit halves, every product below 2^64.
        high_part, low_part = w >> np.uint64(32), w & _MASK32
        k = (high_part * size + ((low_part * size) >> np.uint64(32))) >> np.uint64(32)
        return k.astype(np.int64) + np.int64(low)


def _count(shape: tuple[int, ...] | None) -> int:
    return int(np.prod(shape)) if shape else 1


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


def _finish(values: np.ndarray, dtype: DataType, shape: tuple[int, ...] | None) -> Any:
    rounded = to_dtype(values.reshape(shape or ()), dtype)
    return rounded.item() if shape is None else rounded.contiguous()
