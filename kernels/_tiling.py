"""Helpers of the tile-level spec modules (not a spec: the name starts with an underscore).

Kernel bodies read their tensors' shapes and dtypes directly (`x.shape[1]`, `x.dtype`) and
bind compile-time names with `TN: pl.constexpr = round_up(x.shape[1], 16)`; the plain
Python helpers they call for that live here, with the ulp constants of the tolerances.
"""

from __future__ import annotations

FP32_ULP = 2.0**-23
"""One FP32 ulp relative to a value's binade: `rtol=n * FP32_ULP` allows n ulps anywhere."""
FP16_ULP = 2.0**-10
"""One FP16 ulp, relative, likewise."""
FP32_HALF_ULP = 2.0**-24
"""The relative error of one FP32 round-to-nearest: `rtol=n * FP32_HALF_ULP` covers n roundings."""


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of `multiple` that is at least `n`."""
    return -(-n // multiple) * multiple
