"""Counter-based random numbers: upstream's pl.tile.random / pl.tensor.random (TRANDOM).

Each element is a word of a Philox-4x32 block of the 64-bit key (key0, key1) and the
128-bit counter (counter0..counter3) stepped by its position (the rule, in numpy:
`pypto.debug.torch_runtime.random_words`), so the same seeds give the same tile on every
platform.  pto-isa implements TRANDOM for A5 only: a backend without it lists it in
`missing_instructions` (build_rules/backends/*.toml) and refuses the call at its line.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import ScalarType, TensorType, TileType
from .inference import fmt_shape, row_major_tile, static_shape, written_region
from .registry import OpDef, OpParam, register

SEEDS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")
_DTYPES = (DataType.INT32, DataType.UINT32)
_ROUNDS = (7, 10)


def _seeded_tile(op: str, args, attrs, span) -> TileType:
    for name, arg in zip(SEEDS, args, strict=True):
        t = arg.type
        if not isinstance(t, ScalarType) or t.dtype.is_float or t.dtype is DataType.BOOL:
            raise TypeCheckError(f"pl.{op}: {name} is a 32-bit integer word, not {t}", span,
                                 hint="pass a Python int or an integer scalar")
    shape = static_shape(op, attrs["shape"], span)
    if len(shape) != 2:
        raise TypeCheckError(f"pl.{op}: shape {fmt_shape(shape)} must be [rows, cols]", span)
    dtype = attrs["dtype"]
    if dtype not in _DTYPES:
        raise TypeCheckError(f"pl.{op}: dtype must be pl.INT32 or pl.UINT32 (TRANDOM writes "
                             f"32-bit words), got {getattr(dtype, 'name', dtype)!r}", span)
    if attrs["rounds"] not in _ROUNDS:
        raise TypeCheckError(f"pl.{op}: rounds must be 7 or 10, got {attrs['rounds']!r}", span)
    return row_major_tile(op, shape, dtype, "TRANDOM", span)


def _infer_random(args, attrs, span):
    tile = _seeded_tile("tile.random", args, attrs, span)
    return written_region("tile.random", tile, attrs["valid_shape"], span)


def _infer_tensor_random(args, attrs, span):
    tile = _seeded_tile("tensor.random", args, attrs, span)
    return TensorType(tile.shape, tile.dtype)


_SEED_PARAMS = tuple(OpParam(name, "value") for name in SEEDS)
register(
    OpDef(
        "random",
        (*_SEED_PARAMS, OpParam("shape", "attr"), OpParam("valid_shape", "attr", None),
         OpParam("dtype", "attr", DataType.UINT32), OpParam("rounds", "attr", 10)),
        _infer_random,
        "tile",
        "A new Vec tile of `shape` (INT32 or UINT32) of counter-based random words: the "
        "`rounds`-round (7 or 10) Philox-4x32 blocks of the key (key0, key1) and the counter "
        "(counter0..counter3) stepped by position, as TRANDOM computes them (the rule: "
        "docs/numerics.md).  Only `valid_shape` is written.  A5 only (Ascend950).",
        emit="random",
        isa="trandom",
    )
)
register(
    OpDef(
        "tensor.random",
        (*_SEED_PARAMS, OpParam("shape", "attr"), OpParam("dtype", "attr", DataType.UINT32),
         OpParam("rounds", "attr", 10)),
        _infer_tensor_random,
        "fill",
        "A new tensor value of counter-based random words (pl.tile.random's, in a `pl.at` "
        "block: TensorToTile computes it as that tile).  A5 only (Ascend950).",
        emit="",
    )
)
