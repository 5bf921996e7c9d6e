"""IR passes.  `default_pipeline()` is the compiler's whole lowering, in order."""

from .allocate_memory_addr import AllocateMemoryAddr
from .barriers import CheckCrossBlockBarriers
from .cross_core_pipe import CheckCrossCorePipes
from .cube_to_vector import TransferCubeToVector
from .derive_call_directions import DeriveCallDirections
from .expand_mixed_kernel import ExpandMixedKernel
from .flatten_batch import FlattenBatchTiles
from .flatten_call_expr import FlattenCallExpr
from .infer_memory_space import InferMemorySpace
from .legalize_tile_cast import LegalizeTileCast, cast_path
from .lower_composite_ops import LowerCompositeOps
from .manager import (
    DUMP_DIR,
    FRONTEND_DUMP,
    DumpInstrument,
    FunctionPass,
    Pass,
    PassContext,
    PassInstrument,
    PassManager,
    ProfilingInstrument,
    dump_name,
    dump_of,
    dumped_pass,
    pass_dumps,
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
            LowerCompositeOps(),
            FlattenBatchTiles(),
            LegalizeTileCast(),
            ExpandMixedKernel(),
            InferMemorySpace(),
            TransferCubeToVector(),
            CheckCrossCorePipes(),
            CheckCrossBlockBarriers(),
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
    "DUMP_DIR",
    "FRONTEND_DUMP",
    "dump_name",
    "dump_of",
    "dumped_pass",
    "pass_dumps",
    "cast_path",
    "OutlineIncoreScopes",
    "DeriveCallDirections",
    "FlattenCallExpr",
    "TensorToTile",
    "LowerCompositeOps",
    "FlattenBatchTiles",
    "LegalizeTileCast",
    "ExpandMixedKernel",
    "InferMemorySpace",
    "TransferCubeToVector",
    "CheckCrossCorePipes",
    "CheckCrossBlockBarriers",
    "AllocateMemoryAddr",
]
