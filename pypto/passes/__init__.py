"""IR passes.  `default_pipeline()` is the compiler's whole lowering, in order."""

from .allocate_memory_addr import AllocateMemoryAddr
from .derive_call_directions import DeriveCallDirections
from .flatten_call_expr import FlattenCallExpr
from .infer_memory_space import InferMemorySpace
from .legalize_tile_cast import LegalizeTileCast, cast_path
from .manager import (
    DumpInstrument,
    FunctionPass,
    Pass,
    PassContext,
    PassInstrument,
    PassManager,
    ProfilingInstrument,
)
from .outline_incore import OutlineIncoreScopes
from .tensor_to_tile import TensorToTile


def default_pipeline() -> PassManager:
    """The passes every program goes through, in execution order."""
    return PassManager(
        [
            OutlineIncoreScopes(),
            DeriveCallDirections(),
            FlattenCallExpr(),
            TensorToTile(),
            LegalizeTileCast(),
            InferMemorySpace(),
            AllocateMemoryAddr(),
        ]
    )


__all__ = [
    "default_pipeline",
    "Pass",
    "FunctionPass",
    "PassContext",
    "PassInstrument",
    "PassManager",
    "DumpInstrument",
    "ProfilingInstrument",
    "cast_path",
    "OutlineIncoreScopes",
    "DeriveCallDirections",
    "FlattenCallExpr",
    "TensorToTile",
    "LegalizeTileCast",
    "InferMemorySpace",
    "AllocateMemoryAddr",
]
