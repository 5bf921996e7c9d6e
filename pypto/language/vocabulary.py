"""The names a kernel body reads through `pl`: dtypes, IR types, the parser's
constructs (`pl.at`, `pl.range`, ...) and one stub per registry operator.

`pypto.language` (`pl`) re-exports them all, beside what compiles and runs (`pl.jit`);
the parser reads printed programs (`Program.as_python()`, pass dumps) in this namespace
alone, so reading IR back needs nothing above the frontend.
"""

from __future__ import annotations

from ..ir.dtypes import DataType
from ..ir.ops import all_ops, cross_core
from ..ir.types import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    PREFETCH_CONTEXT,
    TASK_ID,
    AtomicType,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    Role,
    ScopeMode,
    SplitMode,
    TensorLayout,
)
from . import namespaces
from .stubs import DslBuiltin, OpStub, RefusedName
from .typing import (
    RUNTIME,
    Array,
    DynamicDim,
    InOut,
    MemRef,
    Out,
    Scalar,
    Tensor,
    TensorView,
    Tile,
    TileView,
    Tuple,
    dynamic,
)

BOOL = DataType.BOOL
INT8 = DataType.INT8
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
UINT8 = DataType.UINT8
UINT16 = DataType.UINT16
UINT32 = DataType.UINT32
FP16 = DataType.FP16
BF16 = DataType.BF16
FP32 = DataType.FP32
FP8E4M3FN = DataType.FP8E4M3FN
FP8E5M2 = DataType.FP8E5M2
FP8E8M0 = DataType.FP8E8M0
HF8 = DataType.HF8
UINT64 = DataType.UINT64
FP4 = DataType.FP4
HF4 = DataType.HF4
INT4 = DataType.INT4
UINT4 = DataType.UINT4
ND = TensorLayout.ND
"""Row-major, the layout of every tensor here (upstream's default; never needs writing)."""
DN = TensorLayout.DN
NZ = TensorLayout.NZ
MX_A_ZZ = TensorLayout.MX_A_ZZ
MX_B_NN = TensorLayout.MX_B_NN
"""Upstream's markers of an MX scale tensor's block order in global memory: refused where
named (docs/language.md says why and what to pass instead)."""
INDEX = DataType.INT64
"""Index arithmetic (loop variables, offsets, dimensions): a 64-bit integer, `pl.INT64`."""

Mem = MemorySpace

at = DslBuiltin("at")
range = DslBuiltin("range")  # noqa: A001 - the DSL's loop, shadowing is intended
unroll = DslBuiltin("unroll")
parallel = DslBuiltin("parallel")
pipeline = DslBuiltin("pipeline")
"""`for i in pl.pipeline(n, stage=F)`: a loop whose body is replicated F times per iteration."""
while_ = DslBuiltin("while_")
"""`for (x,) in pl.while_(init_values=(x0,)):` a loop run while its `pl.cond(...)` holds."""
cond = DslBuiltin("cond")
"""`pl.cond(x < n)`: the first statement of a `pl.while_` body, its loop's condition."""
yield_ = DslBuiltin("yield_")
"""`x = pl.yield_(v)`: ends an `if` branch (x = v) or a loop with init_values (its carries)."""
const = DslBuiltin("const")
static_assert = DslBuiltin("static_assert")
static_print = DslBuiltin("static_print")
"""`pl.static_print(*args)`: prints at parse time what the parser knows of the values."""
constexpr = DslBuiltin("constexpr")
"""`N: pl.constexpr = expr` binds a compile-time name in a kernel body (folded, not in the IR)."""
spmd = DslBuiltin("spmd")
manual_scope = DslBuiltin("manual_scope")
scope = DslBuiltin("scope")
"""`with pl.scope(mode=pl.ScopeMode.MANUAL):` is `pl.manual_scope()`; `pl.scope()` (AUTO) a
region whose tasks infer their edges as everywhere else."""
cluster = DslBuiltin("cluster")
"""`with pl.cluster():` groups cube and vector dispatches on one cluster (see language.md)."""
split_aiv = DslBuiltin("split_aiv")
"""`for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):` a region of an InCore kernel
run on the two vector lanes (language.md, "Lane regions")."""
aiv_shard = DslBuiltin("aiv_shard")
"""`pl.aiv_shard(x)` in a pl.split_aiv region: the cube's tile `x`, read on the vector lanes."""
aic_gather = DslBuiltin("aic_gather")
"""`y = pl.aic_gather(v)` in a pl.split_aiv region: the lanes' tile `v`, read by the cube."""
submit = DslBuiltin("submit")
spmd_submit = DslBuiltin("spmd_submit")
split = DslBuiltin("split")
"""`pl.at(optimizations=[pl.split(pl.SplitMode.UP_DOWN)])`: halve a mixed kernel's vector work."""
cross_core_slot = DslBuiltin("cross_core_slot")
no_dep = DslBuiltin("no_dep")
write = DslBuiltin("write")
"""`pl.write(t, [i, j], value)`: a statement setting one element of a tensor or a tile."""
"""`self.kernel(pl.no_dep(t), ...)`: this task's access to `t` is left out of dependency
inference (as `no_dep_args=[t]` on its pl.at block or pl.submit)."""
func_attr = DslBuiltin("func_attr")
"""`pl.func_attr({"split": pl.SplitMode.UP_DOWN})`: function attributes, first statement."""
TaskId = TASK_ID
PrefetchAsyncContext = PREFETCH_CONTEXT
AsyncEvent = ASYNC_EVENT
AsyncSession = ASYNC_SESSION
"""The handles of `pl.prefetch.*` (annotations of the values its calls return)."""
"""The type of a task id (`with pl.at(...) as tid`); only `deps=[...]` consumes one."""

_OPERATORS = [name for name in all_ops() if "." not in name]  # `tile.assemble`: pl.tile
for _name in _OPERATORS:
    globals()[_name] = OpStub(_name)
for _name, _op in namespaces.SCALAR_SPELLINGS.items():
    globals()[_name] = OpStub(_op, None, True, _name)
del _name, _op
for _name, _why in namespaces.REFUSED.items():
    globals()[_name] = RefusedName(_name, _why)  # `pl.create_l1`: refused at its line
del _name, _why
scatter = OpStub("tensor.scatter", spelling="scatter")
"""`pl.scatter(input, -1, index, src)`: upstream's element scatter of tensors in a `pl.at`
block (pl.tensor.scatter); within a tile it is pl.tile.scatter."""
matmul_mx = OpStub("tile.matmul_mx", spelling="matmul_mx")
"""`pl.matmul_mx(lhs, lhs_scale, rhs, rhs_scale)`: the MX block-scaled product of tiles
(pl.tile.matmul_mx; upstream reaches it from pl. too)."""
arange = OpStub("ci", spelling="arange")
"""`pl.arange(start, [1, n])`: upstream's name of the integer sequence `pl.ci` (a tensor in a
`pl.at` block, a tile in a kernel)."""
tile = namespaces.tile
tensor = namespaces.tensor
array = namespaces.array
prefetch = namespaces.prefetch


system = namespaces.system
# The cross-core pipe's operators are also spelled at the top level (`pl.tpush_to_aiv`).
_PIPE_SPELLINGS = [_name.split(".")[-1] for _name in cross_core.PIPE_OPS]
for _name in cross_core.PIPE_OPS:
    globals()[_name.split(".")[-1]] = OpStub(_name, spelling=_name.split(".")[-1])
del _name
AUTO = namespaces.system.AUTO
dim = DslBuiltin("dim")
"""`pl.dim(t, axis)` (also `pl.tensor.dim`): a tensor's dimension, as `t.shape[axis]`."""

__all__ = [
    "BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "FP16",
    "BF16",
    "FP32", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "HF8", "FP4", "HF4", "INT4", "UINT4", "INDEX",
    "DataType",
    "Tensor", "Tile", "MemRef", "Scalar", "Array", "Tuple", "Out", "InOut", "dynamic", "DynamicDim",
    "TensorView", "TileView", "TensorLayout", "ND", "DN", "NZ", "MX_A_ZZ", "MX_B_NN", "RUNTIME",
    "Level", "Mem", "MemorySpace", "PadValue", "AtomicType", "FunctionType", "ScopeMode",
    "SplitMode",
    "Role", "TaskId", "TASK_ID", "PrefetchAsyncContext", "AsyncEvent", "AsyncSession",
    "at", "range", "unroll", "parallel", "pipeline", "while_", "cond", "yield_", "const",
    "static_assert",
    "static_print", "constexpr", "spmd", "manual_scope", "scope", "cluster", "split_aiv",
    "aiv_shard", "aic_gather", "submit",
    "spmd_submit",
    "split", "cross_core_slot", "no_dep", "write", "func_attr", "dim", "tile", "tensor", "array",
    "prefetch", "system", "arange", "scatter", "matmul_mx", "AUTO", *_PIPE_SPELLINGS,
    *_OPERATORS,
    *namespaces.SCALAR_SPELLINGS,
    *namespaces.REFUSED,
]
