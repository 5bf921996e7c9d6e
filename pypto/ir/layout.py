"""How a tile lies in its on-chip buffer on the hardware: its physical rows and columns.

PTO-ISA tiles start each row (row-major) or column (column-major) on a 32-byte block
(`TileConfig::alignedSize`), so a [33, 100] FP32 tile occupies 33 rows of 104 elements.
AllocateMemoryAddr places tiles at these footprints and the device code generator declares
them, so the addresses it chose hold on the device and on pto-isa's CPU model alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .dtypes import DataType
from .types import MemorySpace, TileType

BLOCK_BYTES = 32
"""Bytes of one on-chip block: a Vec tile's rows start on block boundaries."""

FRACTAL_ROWS = 16
"""Rows (and columns) of one cube fractal: Mat/Left/Right/Acc tiles are made of them."""

MX_ROWS, MX_COLS = 16, 2
"""An MX scale fractal: 16 rows of 2 scales (pto-isa's MX_ROW_LEN, MX_COL_LEN)."""


@dataclass(frozen=True)
class TileLayout:
    """The physical shape of a tile: `rows` x `cols` elements, column-major or not."""

    rows: int
    cols: int
    col_major: bool

    def nbytes(self, dtype: DataType) -> int:
        """Bytes the tile occupies, of `dtype` elements (two to a byte for 4-bit ones)."""
        return dtype.nbytes(self.rows * self.cols)


def tile_layout(t: TileType) -> TileLayout:
    """The hardware layout of a tile of type `t`.

    Vec: row-major with each row padded to a whole block, except an [R, 1] column of whole
    blocks, which is column-major (the layout row reductions write and row broadcasts read;
    pto-isa wants a reduction's source and column of one row count, so R is not padded).  Cube
    buffers (Mat, Left, Right, Acc) hold fractals, the shapes the cube instructions require:
    a fractal's 32-byte side lies along K, so a Right tile ([K, N], fractals column-major)
    pads its rows to a block and to 16 and its columns to 16, every other cube tile its rows
    to 16 and its columns to a block and to 16.  (The two agree but for 1-byte elements: an
    INT8 Right tile of [16, 16] is [32, 16], the K of the [16, 32] Left tile it meets, and
    its N is the 16 of the Acc tile.)  Bias holds one row-major row padded to 64 bytes
    (pto-isa's bias tiles have Rows == 1, and TMOV into the bias table moves whole
    64-byte bursts).  The MX scale buffers hold pto-isa's scale fractals of 16 x 2 bytes:
    a LeftScale tile ([M, K / 32], ZZ) pads its rows to 16 and its columns to 2, a
    RightScale tile ([K / 32, N], NN) its rows to 2 and its columns to 16.  A [B, rows,
    cols] tile is B [rows, cols] tiles one after another (FlattenBatchTiles makes them B
    tiles, each placed on its own, before allocation).
    """
    if len(t.shape) == 3:
        one = tile_layout(replace(t, shape=t.shape[1:], valid_shape=None))
        return TileLayout(t.shape[0] * one.rows, one.cols, one.col_major)
    rows = t.shape[0]
    cols = t.shape[1] if len(t.shape) > 1 else 1
    per_block = max(1, BLOCK_BYTES * 8 // t.dtype.bits)  # 64 of a 4-bit type
    if t.memory is MemorySpace.Bias:
        return TileLayout(rows, _round_up(cols, 2 * per_block), False)
    if t.memory is MemorySpace.LeftScale:
        return TileLayout(_round_up(rows, MX_ROWS), _round_up(cols, MX_COLS), False)
    if t.memory is MemorySpace.RightScale:
        return TileLayout(_round_up(rows, MX_COLS), _round_up(cols, MX_ROWS), False)
    if t.memory not in (None, MemorySpace.Vec):
        along_k = max(per_block, FRACTAL_ROWS)
        if t.memory is MemorySpace.Right:
            return TileLayout(_round_up(rows, along_k), _round_up(cols, FRACTAL_ROWS), False)
        return TileLayout(_round_up(rows, FRACTAL_ROWS), _round_up(cols, along_k), False)
    if cols == 1 and rows > 1 and rows % per_block == 0:
        return TileLayout(rows, 1, True)
    return TileLayout(rows, _round_up(cols, per_block), False)


def tile_footprint(t: TileType) -> int:
    """Bytes a tile of type `t` occupies in its buffer (see `tile_layout`)."""
    return tile_layout(t).nbytes(t.dtype)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple
