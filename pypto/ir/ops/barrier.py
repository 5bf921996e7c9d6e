"""Upstream's cross-block barrier and its global-memory protocol, `pl.system.*`.

The blocks of one SPMD launch (`pl.spmd(n)`) meet at `pl.system.syncall()`: no block goes
past it until every block of the launch has reached it.  Two modes, as upstream:

- `mode="hard"` (the default, the FFTS barrier): no operands; it waits for every core of
  the participant set, so the launch must fill the platform's cores of that type, one block
  each (`pl.spmd(pl.system.available_aiv_count())` for a vector kernel,
  `available_cluster_count()` for one using the cube);
- `mode="soft"` (a counter in global memory): `gm_workspace` is an INT32 tensor of at
  least 16 elements, zero before its first use, whose element 0 counts the arrivals;
  `used_cores` is how many arrive per round (0: every block of the launch).  It works at
  any occupancy.

A barrier orders arrival only.  A block that reads what another block wrote before the
barrier follows upstream's protocol: the writer calls `pl.system.cacheinvalid()` (publish
its cache lines) and `pl.system.fence()` (wait until they are in global memory) before the
barrier, the reader `pl.system.cacheinvalid()` after it, before the read.  The simulators
check it (pto/gang.hpp, debug/torch_gang.py).  `pl.system.cacheinvalid(t, shapes,
offsets)` covers one cache line only: the one holding the view's base address.

`pl.system.available_aiv_count()` / `available_cluster_count()` are the platform's vector
and cube (cluster) core counts, the backend's data (build_rules/backends/*.toml).

The placement and occupancy rules, which need the lowered program and the backend, are
passes/barriers.py's.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import INDEX, ScalarType, TensorType, TupleType, describe
from .registry import OpDef, OpParam, register

SYNCALL = "system.syncall"
FENCE = "system.fence"
CACHEINVALID = "system.cacheinvalid"
BARRIER_OPS = (SYNCALL, FENCE, CACHEINVALID)
AIV_COUNT = "system.available_aiv_count"
CLUSTER_COUNT = "system.available_cluster_count"
LAUNCH_QUERIES = (AIV_COUNT, CLUSTER_COUNT)
MODES = ("hard", "soft")
CORE_TYPES = ("aiv_only", "aic_only", "mix")
# pto-isa's soft SYNCALL counts arrivals in the workspace's first INT32 and asks for one
# cache line's worth of it (include/pto/common/type.hpp: SYNCALL_SOFT_WORKSPACE_INT32).
SOFT_WORKSPACE_INT32 = 16
_INT32_MAX = (1 << 31) - 1
STATEMENT = TupleType(())


def _integer(expr) -> bool:
    t = expr.type
    return isinstance(t, ScalarType) and not t.dtype.is_float and t.dtype is not DataType.BOOL


def _infer_syncall(args, attrs, span):
    mode, core_type = attrs.get("mode"), attrs.get("core_type")
    if mode not in MODES:
        raise TypeCheckError(f"pl.system.syncall(mode=) is \"hard\" or \"soft\", got {mode!r}",
                             span)
    if core_type not in CORE_TYPES:
        raise TypeCheckError(f"pl.system.syncall(core_type=) is one of "
                             f"{', '.join(repr(c) for c in CORE_TYPES)}, got {core_type!r}", span)
    given = {name: arg for name, arg in zip(("gm_workspace", "used_cores"),
                                            _operands(args, attrs), strict=True)
             if arg is not None}
    if mode == "hard":
        if given:
            raise TypeCheckError(
                f"pl.system.syncall(mode=\"hard\") takes no {'/'.join(given)}: the hard "
                "barrier has no operands", span,
                hint="pass mode=\"soft\" for the barrier on a global-memory counter")
        return STATEMENT
    _check_soft(given.get("gm_workspace"), given.get("used_cores"), span)
    return STATEMENT


def _check_soft(ws, used, span) -> None:
    """The operands of a soft barrier: its workspace and its participant count."""
    if ws is None or used is None:
        missing = " and ".join(n for n, v in (("gm_workspace", ws), ("used_cores", used))
                               if v is None)
        raise TypeCheckError(
            f"pl.system.syncall(mode=\"soft\") needs {missing}", span,
            hint="gm_workspace=<a zeroed INT32 tensor of at least 16 elements, shared by the "
                 "blocks>, used_cores=<blocks per round, 0: every block of the launch>")
    t = ws.type
    if not (isinstance(t, TensorType) and t.dtype is DataType.INT32):
        raise TypeCheckError(f"pl.system.syncall(gm_workspace=) is an INT32 tensor in global "
                             f"memory, got {describe(t)}", span)
    numel = 1
    for d in t.shape:
        numel = numel * d if isinstance(d, int) else -1
    if 0 <= numel < SOFT_WORKSPACE_INT32:
        raise TypeCheckError(f"pl.system.syncall(gm_workspace=) needs at least "
                             f"{SOFT_WORKSPACE_INT32} INT32 elements (pto-isa's soft SYNCALL "
                             f"workspace); this one has {numel}", span)
    if not _integer(used):
        raise TypeCheckError(f"pl.system.syncall(used_cores=) is an integer, got "
                             f"{describe(used.type)}", span)
    value = getattr(used, "value", None)
    if isinstance(value, int) and not 0 <= value <= _INT32_MAX:
        raise TypeCheckError(f"pl.system.syncall(used_cores=) is in [0, {_INT32_MAX}], got "
                             f"{value}", span)


def _operands(args, attrs) -> list:
    """The two optional operands of pl.system.syncall, None where left out."""
    it = iter(args)
    return [None if name in attrs else next(it) for name in ("gm_workspace", "used_cores")]


def _infer_cacheinvalid(args, attrs, span):
    it = iter(args)
    tensor, shapes, offsets = (None if name in attrs else next(it)
                               for name in ("tensor", "shapes", "offsets"))
    if tensor is None:
        if shapes is not None or offsets is not None:
            raise TypeCheckError("pl.system.cacheinvalid() of the whole global memory takes no "
                                 "shapes/offsets", span,
                                 hint="pass (tensor, shapes, offsets) for the one-line form")
        return STATEMENT
    if not isinstance(tensor.type, TensorType):
        raise TypeCheckError(f"pl.system.cacheinvalid(tensor, ...) takes a tensor, got "
                             f"{describe(tensor.type)}", span)
    if shapes is None or offsets is None:
        raise TypeCheckError("pl.system.cacheinvalid(tensor, shapes, offsets) needs shapes and "
                             "offsets (or no argument: the whole global memory)", span)
    rank = len(tensor.type.shape)
    for name, items in (("shapes", shapes.items), ("offsets", offsets.items)):
        if len(items) != rank:
            raise TypeCheckError(f"pl.system.cacheinvalid {name} has {len(items)} entries; the "
                                 f"tensor has rank {rank}", span)
        if not all(_integer(i) for i in items):
            raise TypeCheckError(f"pl.system.cacheinvalid {name} are integers", span)
    return STATEMENT


def _launch_query(kind: str) -> OpDef:
    cores = "vector (AIV)" if kind == "aiv" else "cluster (one cube core, AIC, each)"
    field = "vector" if kind == "aiv" else "cube"
    kernel = "a vector kernel" if kind == "aiv" else "a kernel using the cube"
    return OpDef(
        f"system.available_{kind}_count", (), lambda args, attrs, span: INDEX, "index",
        f"The platform's {cores} core count: its backend's `[cores] {field}` "
        "(build_rules/backends/).  The block count of a launch that fills the cores of "
        f"{kernel}, one block each, as a hard pl.system.syncall needs: "
        f"`pl.spmd(pl.system.available_{kind}_count())`.  An index value, in any "
        "expression: a constant of the platform the program is compiled for.",
        dtypes=frozenset())


register(_launch_query("aiv"))
register(_launch_query("cluster"))

register(OpDef(
    SYNCALL,
    (OpParam("gm_workspace", "value", None), OpParam("used_cores", "value", None),
     OpParam("core_type", "attr", "mix"), OpParam("mode", "attr", "hard")),
    _infer_syncall, "barrier",
    "A barrier across the blocks of the running SPMD launch (pto-isa SYNCALL): no block "
    "passes it until every block of the launch has reached it.  `mode=\"hard\"` (default): "
    "the launch must fill the platform's cores of the kernel's type, one block each "
    "(pl.spmd(pl.system.available_aiv_count()) for a vector kernel, "
    "available_cluster_count() for one using the cube), else it is refused at compile time; "
    "`core_type` (\"aiv_only\", \"aic_only\", \"mix\") names the cores that take part and "
    "must include the kernel's.  `mode=\"soft\"`: a counter in element 0 of `gm_workspace` "
    "(an INT32 tensor of at least 16 elements, zero before its first use); `used_cores` "
    "blocks arrive per round (0: every block of the launch).  It orders arrival only: a "
    "block reading another block's writes needs pl.system.cacheinvalid() and "
    "pl.system.fence() before the barrier (the writer) and pl.system.cacheinvalid() after "
    "it (the reader), which the simulators check.  A barrier some block never reaches is "
    "a KernelError naming the blocks, never a hang.",
    dtypes=frozenset(), emit="syncall"))

register(OpDef(
    FENCE, (), lambda args, attrs, span: STATEMENT, "barrier",
    "Waits until this block's global-memory writes are visible to the other blocks "
    "(upstream: pto.fence.barrier_all, GM scope): the step between publishing a block's "
    "cache lines (pl.system.cacheinvalid()) and the pl.system.syncall that hands them to "
    "other blocks.  The simulators' global memory is coherent; they check the order.",
    dtypes=frozenset(), emit="fence"))

register(OpDef(
    CACHEINVALID,
    (OpParam("tensor", "value", None), OpParam("shapes", "index_list", None),
     OpParam("offsets", "index_list", None)),
    _infer_cacheinvalid, "barrier",
    "Writes back and drops this block's cached lines of global memory (pto-isa dcci): "
    "with no argument all of them; with (tensor, shapes, offsets) the one line holding the "
    "view's base address (the backend's `gm_cache_line` bytes; `shapes` does not widen "
    "it, as upstream).  Before a "
    "pl.system.fence and pl.system.syncall it publishes the block's writes; after the "
    "barrier it lets the block read other blocks' writes.  The simulators check the "
    "protocol per cache line.",
    dtypes=frozenset(), emit="cacheinvalid"))
