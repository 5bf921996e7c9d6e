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


NARROW_ROWS = {
    "TileInnermostDimGranularity": (
        "rows under the backend's efficient DMA width (33x100 FP32, 64x128 FP16, ...) are "
        "the point of these variants: they test partial tiles and the row widths models "
        "use; the library checks results, not DMA throughput"
    ),
}
"""`accepted_hints` of the element-wise, activation, cast, reduction and norm specs."""

CUBE_TILES = {
    "TileInnermostDimGranularity": (
        "cube operands are blocked at 64-128 columns to fit L0A/L0B (64 KiB each), and the "
        "odd-shape variants test edge tiles; rows under the DMA width are the price"
    ),
}
"""`accepted_hints` of the matmul specs."""

HEAD_DIMS = {
    "TileInnermostDimGranularity": (
        "head dimensions of 40-64 and key blocks of 24-64 are the model's: no tiling widens "
        "a row past them"
    ),
}
"""`accepted_hints` of the attention spec."""
