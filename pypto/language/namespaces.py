"""`pl.tile.*` and `pl.tensor.*`: the level-specific spellings of the operators.

`pl.<op>` dispatches on its operands' kind; `pl.tile.<op>` and `pl.tensor.<op>` name the
same registry operator and insist on tiles or tensors (an operand of the other kind is a
type error at its line).  Some operators exist at one level only and are reached here
alone (`pl.tile.assemble`, `pl.tile.transpose_view`); the scalar-operand spellings
(`pl.tile.adds`, `pl.tensor.muls`, and `pl.adds` itself) are the binary operator with a
scalar second operand.  A name that is not listed raises AttributeError, which the parser
reports at the user's line.
"""

from __future__ import annotations

from ..ir.ops import all_ops
from .stubs import DslBuiltin, OpStub, RefusedName

# Registry categories that exist on tiles and on tensors alike.
_BOTH = ("binary", "unary", "cast", "select", "ternary", "expands", "reduce_row", "reduce_col",
         "expand_row", "expand_col", "matmul", "element", "sort")
# Operators of other categories, per level.
_TILE_ONLY = ("load", "store", "move", "create_tile", "full", "fillpad", "fillpad_expand",
              "set_validshape", "reshape", "reinterpret_view", "transpose", "concat", "slice",
              "get_block_idx", "get_block_num",
              "tile.assemble", "tile.transpose_view", "tile.gemv", "tile.gemv_acc",
              "tile.gemv_bias", "tile.matmul_bias", "max", "min", "ci", "random",
              "tile.mgather", "tile.mscatter", "tile.gather", "tile.gatherb", "tile.scatter",
              "tri", "sels", "batch_matmul", "get_subblock_idx", "tile.matmul_mx",
              "tile.matmul_mx_acc", "tile.matmul_mx_bias")
_TENSOR_ONLY = ("create_tensor", "assemble", "slice", "get_block_idx", "get_block_num",
                "dump_tag", "tensor.gather", "scatter_update", "tensor.scatter", "paged_gather",
                "get_subblock_idx")
# Other spellings of a registry operator, per level.
_ALIASES = {"tile": {"create": "create_tile"},
            "tensor": {"create": "create_tensor", "full": "tensor.full", "ci": "tensor.ci",
                       "arange": "tensor.ci", "random": "tensor.random"}}
# Upstream's operators refused here, by spelling, with why (a call is an error at its line;
# docs/upstream-compat.md lists them as refused).
_L1_TENSOR = ("a tensor-level value held in L1 (Mat) for pl.matmul does not exist here: "
              "tensor values in a pl.at block live in global memory and are computed through "
              "Vec tiles")
REFUSED = {
    "create_l1": f"{_L1_TENSOR}; in an @pl.jit.incore kernel, load the matmul operand with "
                 "pl.load(t, offsets, shape, target_memory=pl.Mem.Mat)",
    "gather_row": f"it fills an L1 accumulator from pl.create_l1, and {_L1_TENSOR}; gather "
                  "the rows with pl.tile.mgather (into Vec) and pl.move the tile to Mat",
}
REFUSED_SPELLINGS = {**{name: why for name, why in REFUSED.items()},
                     **{f"tensor.{name}": why for name, why in REFUSED.items()}}
# Names upstream's users reach for at `pl.` that live elsewhere, upstream too (its FAQ):
# where they are, for the parser's hint at a `pl.<name>` that does not exist.
ELSEWHERE = {"task_dummy": "pl.system.task_dummy(deps=[...])"}
# Parser constructs reached through a namespace (`pl.tensor.dim(t, 0)`).
_BUILTINS = {"tensor": ("dim", "no_dep", "expand_clone"), "system": ("task_dummy",),
             "tile": ("aiv_shard", "aic_gather")}
# The scalar-operand spellings: `adds` is `add` with a scalar second operand.
SCALAR_SPELLINGS = {"adds": "add", "subs": "sub", "muls": "mul", "divs": "div",
                    "maximums": "maximum", "minimums": "minimum", "cmps": "cmp",
                    "ands": "and_", "ors": "or_", "xors": "xor", "shls": "shl", "shrs": "shr",
                    "fmods": "fmod", "rems": "rem"}


class OpNamespace:
    """`pl.tile` / `pl.tensor`: attribute access yields the operator stubs of one level."""

    def __init__(self, level: str, ops: dict[str, str]):
        self._level = level
        self._ops = ops

    def __getattr__(self, name: str) -> OpStub:
        if name.startswith("_"):
            raise AttributeError(name)
        spelling = f"{self._level}.{name}"
        if name in SCALAR_SPELLINGS:
            return OpStub(SCALAR_SPELLINGS[name], self._level, True, spelling)
        if name in _BUILTINS.get(self._level, ()):
            return DslBuiltin(name)
        if spelling in REFUSED_SPELLINGS:
            return RefusedName(spelling, REFUSED_SPELLINGS[spelling])
        op = self._ops.get(name)
        if op is None:
            raise AttributeError(f"pl.{spelling} is not an operator of this project")
        # Only operators of both levels check their operands' kind: the others are of one
        # level by what they are (pl.tile.load takes a tensor and makes a tile).
        level = self._level if all_ops()[op].category in _BOTH else None
        return OpStub(op, level, False, spelling)

    def __dir__(self) -> list[str]:
        return sorted(set(self._ops) | set(SCALAR_SPELLINGS))

    def __repr__(self) -> str:
        return f"<pl.{self._level}: {len(self._ops)} operators>"


def _level_ops(level: str, only: tuple[str, ...]) -> dict[str, str]:
    ops = {}
    for name, op in all_ops().items():
        if op.category in _BOTH or name in only:
            ops[name.split(".")[-1]] = name
    ops.update(_ALIASES[level])
    return ops


tile = OpNamespace("tile", _level_ops("tile", _TILE_ONLY))
tensor = OpNamespace("tensor", _level_ops("tensor", _TENSOR_ONLY))
array = OpNamespace("array", {name.split(".")[-1]: name for name in all_ops()
                              if name.startswith("array.")})
"""`pl.array.create(n, pl.TASK_ID)`, `pl.array.update_element(a, i, tid)` (ir/ops/task_arrays).
"""
prefetch = OpNamespace("prefetch", {name.split(".")[-1]: name for name in all_ops()
                                    if name.startswith("prefetch.")})
"""`pl.prefetch.make_context()`, `async_prefetch(src, ctx)`, `session(ctx)`, `wait(evt, s)`
(ir/ops/prefetch: an L2 cache hint)."""



class _SystemNamespace(OpNamespace):
    """`pl.system`: the cross-core pipe (ir/ops/cross_core: `tpush_to_aiv`, `tpop_from_aic`,
    `tfree_to_aic`, `aic_initialize_pipe`, `reserve_buffer`, ...), the barriers across the
    blocks of a launch and their launch-shape queries (ir/ops/barrier: `syncall`, `fence`,
    `cacheinvalid`, `available_aiv_count`, `available_cluster_count`), `AUTO` (a reserved
    buffer's base the compiler picks) and `task_dummy(deps=[tids])` (a join of task ids)."""

    AUTO = -1

    def __repr__(self) -> str:
        return "<pl.system>"


system = _SystemNamespace("system", {name.split(".")[-1]: name for name in all_ops()
                                     if name.startswith("system.")})

__all__ = ["REFUSED", "REFUSED_SPELLINGS", "OpNamespace", "SCALAR_SPELLINGS", "array", "tile",
           "tensor", "prefetch", "system"]
