"""`pypto upstream-compat`: write docs/upstream-compat.md, what of upstream PyPTO runs here.

Users' programs are written in upstream PyPTO's spelling (the `pypto-upstream` snapshot:
its user guide and examples).  This module is the one table of that surface: every `pl.`
name the guide and the examples use, the constructs they rely on, and every example
program, each with its status here and, where it is refused, why and what to do.
`tests/upstream` checks it against the code (a supported name resolves, an absent one
does not, each program ends as listed) and against the snapshot (every name it uses is
listed), and the page against this table.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..language import namespaces

DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "upstream-compat.md"
SNAPSHOT_ENV = "PYPTO_UPSTREAM_ROOT"


def snapshot_root() -> Path:
    """Where the upstream PyPTO snapshot is: `$PYPTO_UPSTREAM_ROOT`, else
    `../shared/third_party/pypto-upstream` beside the checkout (it may be absent)."""
    explicit = os.environ.get(SNAPSHOT_ENV)
    if explicit:
        return Path(explicit)
    return Path(__file__).resolve().parents[3] / "shared" / "third_party" / "pypto-upstream"

# Upstream operators the parser refuses at their line, saying why (language/namespaces.py).
REFUSED_OPS = namespaces.REFUSED

SUPPORTED = "supported"
REFUSED = "refused"  # resolves, and is refused at the line that uses it, saying why
ABSENT = "absent"  # does not resolve: the parser reports `pl.X` does not exist at its line

# Why a group of names is refused or absent, and what to do instead.
WHY = {
    **REFUSED_OPS,
    "mx_layout": "an MX scale tensor's block order in global memory (pto-isa's MX_A_ZZ: "
                 "[M, K/32] in blocks of 16 x 2; MX_B_NN: [K/32, N] in blocks of 2 x 16 "
                 "stored column by column) changes where each scale's byte is, and tensors "
                 "are row-major here: the marker is refused at its line; pass the scales "
                 "row-major with no marker (pl.load into pl.Mem.Mat, pl.move to LeftScale / "
                 "RightScale)",
    "layout_marker": "a tensor in global memory is row-major (pl.ND) here: naming pl.DN or "
                     "pl.NZ for a tensor (a pl.Tensor marker, pl.TensorView(layout=), "
                     "pl.create_tensor(layout=)) or a pl.Tile is refused at that line (upstream "
                     "refuses the DN shorthand too); transpose at the use with a_trans= / "
                     "b_trans= or pl.transpose",
    "host": "multi-chip (L3) programs are not supported: run the chip-level @pl.jit program",
    "distributed": "pypto.language.distributed (pld) is the multi-rank surface; this "
                   "project runs single-chip programs",
    "level": "kernels run on the whole core group (pl.Level.CORE_GROUP) here",
    "task_dummy": "not defined upstream either (its FAQ): the error at its line says it "
                  "lives under pl.system: call pl.system.task_dummy(deps=[...]) (a join of "
                  "task ids)",
}

_DTYPES_SUPPORTED = ("BF16", "BOOL", "FP16", "FP32", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0",
                     "HF4", "HF8", "INDEX", "INT4", "INT8", "INT16", "INT32", "INT64", "UINT4",
                     "UINT8", "UINT16", "UINT32", "UINT64")
_OPS_SUPPORTED = (
    "abs", "add", "and_", "ands", "assemble", "batch_matmul", "cast", "cmp", "col_argmax",
    "col_argmin", "col_expand", "col_expand_add", "col_expand_div", "col_expand_expdif",
    "col_expand_max", "col_expand_min", "col_expand_mul", "col_expand_sub", "col_max", "col_min",
    "col_prod", "col_sum", "concat", "cos", "create_tensor", "create_tile", "div", "dump_tag",
    "exp",
    "expands", "fillpad", "fillpad_expand", "fmod", "fmods", "full", "get_block_idx", "load", "log",
    "matmul", "matmul_acc", "matmul_mx", "max", "maximum", "min", "minimum", "move", "mrgsort",
    "mul", "neg",
    "not_", "or_", "ors", "paged_gather", "part_add", "part_max", "part_min", "part_mul",
    "read", "recip",
    "reinterpret_view", "relu", "reshape", "row_argmax", "row_argmin", "row_expand",
    "row_expand_add", "row_expand_div",
    "row_expand_expdif", "row_expand_max", "row_expand_min", "row_expand_mul", "row_expand_sub",
    "row_max", "row_min", "row_prod", "row_sum", "rsqrt", "scatter", "scatter_update", "sels",
    "set_validshape", "shl", "shls", "shr", "shrs", "sin", "slice", "sort32", "sqrt", "store",
    "sub",
    "transpose", "tri", "xor", "xors")
_LANGUAGE_SUPPORTED = (
    "Array", "AtomicType.Add", "FunctionType.AIV", "FunctionType.InCore",
    "FunctionType.Orchestration", "InOut",
    "InlineFunction",
    "Level.CORE_GROUP", "Mem", "Mem.Acc", "Mem.Bias", "Mem.DDR", "Mem.Left", "Mem.Mat",
    "Mem.Right", "Mem.Vec", "MemRef",
    "MemorySpace", "MemorySpace.Left", "MemorySpace.Mat", "MemorySpace.Right", "MemorySpace.Vec",
    "Out", "PadValue.min", "PadValue.zero", "Scalar", "ScopeMode", "ScopeMode.AUTO",
    "ScopeMode.MANUAL", "SplitMode.LEFT_RIGHT", "SplitMode.NONE", "SplitMode.UP_DOWN", "TASK_ID",
    "TaskId", "Tensor", "TensorLayout", "TensorLayout.ND", "TensorView", "Tile", "TileView",
    "Tuple", "array",
    "array.create", "array.get_element", "array.update_element", "at", "cluster", "cond", "const",
    "dim",
    "dynamic", "func_attr", "function", "inline", "jit", "jit.incore", "jit.inline", "jit.opaque",
    "loads", "loads_program", "manual_scope", "ND", "no_dep", "parallel", "parse", "RUNTIME",
    "parse_program", "pipeline", "prefetch", "program",
    "range", "scope", "split", "cross_core_slot", "spmd", "spmd_submit", "static_assert",
    "static_print", "submit",
    "system", "system.task_dummy", "tensor", "tile", "unroll", "while_", "write", "yield_",
    # the explicit cross-core pipe (ir/ops/cross_core)
    *(f"{ns}{name}" for ns in ("", "system.")
      for name in ("aic_initialize_pipe", "aiv_initialize_pipe", "tfree_to_aic", "tfree_to_aiv",
                   "tpop_from_aic", "tpop_from_aiv", "tpush_to_aic", "tpush_to_aiv")),
    "system.import_peer_buffer", "system.reserve_buffer",
    # upstream's lane regions (language/split_aiv.py)
    "split_aiv", "aiv_shard", "aic_gather",
    # the cross-block barriers and the launch-shape queries (ir/ops/barrier)
    "system.syncall", "system.fence", "system.cacheinvalid", "system.available_aiv_count",
    "system.available_cluster_count")
_TILE_SUPPORTED = ("add", "adds", "addc", "addsc", "aic_gather", "aiv_shard", "assemble",
                   "batch_matmul", "cmps", "cos", "create",
                   "fillpad",
                   "full", "gatherb", "gemv", "gemv_acc", "gemv_bias", "get_block_idx",
                   "get_block_num", "load", "lrelu", "matmul_bias", "matmul_mx", "matmul_mx_acc",
                   "matmul_mx_bias", "max", "maximums", "mgather",
                   "min", "minimums", "move", "mrgsort", "mscatter", "prelu", "read", "relu",
                   "rem", "rems", "rsqrt", "scatter", "sel", "sels", "sin", "sort32", "store",
                   "subc",
                   "subsc",
                   "transpose_view", "tri")
_TENSOR_SUPPORTED = ("add", "assemble", "ci", "cos", "create", "dim", "dump_tag", "expand_clone",
                     "full", "gather", "get_block_idx", "get_block_num", "get_subblock_idx",
                     "mrgsort", "no_dep",
                     "paged_gather", "random", "read", "scatter", "scatter_update", "sin",
                     "sort32")

_ABSENT = {
    "task_dummy": ("task_dummy",),
}
_REFUSED = {
    **{name: (name, f"tensor.{name}") for name in REFUSED_OPS},
    "host": ("jit.host", "Level.HOST", "Role.Orchestrator", "Role.SubWorker"),
    "layout_marker": ("DN", "NZ"),
    "mx_layout": ("MX_A_ZZ", "MX_B_NN"),
}


# Names of pypto's other modules that upstream's guide and programs use (`from pypto.runtime
# import run`, `pypto.debug.torch_codegen`, `from pypto import ir`), dotted in full.
_MODULE_SUPPORTED = (
    "pypto.backend.BackendType", "pypto.backend.get_backend_type",
    "pypto.backend.is_backend_configured", "pypto.backend.pto_backend",
    "pypto.backend.pto_backend.PartialCodegenError", "pypto.backend.reset_for_testing",
    "pypto.backend.set_backend_type", "pypto.debug.torch_codegen",
    "pypto.debug.validate_pass_ir_codegen_results", "pypto.ir", "pypto.ir.Function",
    "pypto.ir.PassDumpLevel", "pypto.ir.deserialize", "pypto.ir.distributed_compiled_program",
    "pypto.ir.pass_manager", "pypto.ir.pass_manager.OptimizationStrategy",
    "pypto.ir.pass_manager.PassManager", "pypto.ir.serialize", "pypto.runtime.BenchmarkStats",
    "pypto.runtime.ChipWorker", "pypto.runtime.DeviceTensor", "pypto.runtime.RegistrationHandle",
    "pypto.runtime.RunConfig", "pypto.runtime.TensorSpec", "pypto.runtime.benchmark",
    "pypto.runtime.run", "pypto.runtime.write_golden")
_MODULE_REFUSED = {"distributed": (
    "pypto.ir.distributed_compiled_program.DistributedCompiledProgram",
    "pypto.ir.distributed_compiled_program.DistributedConfig", "pypto.runtime.DistributedWorker")}
_MODULE_ABSENT = {"distributed": ("pypto.runtime.distributed_runner",)}


def _names() -> dict[str, tuple[str, str]]:
    names = {f"pl.{n}": (SUPPORTED, "") for n in
             _DTYPES_SUPPORTED + _OPS_SUPPORTED + _LANGUAGE_SUPPORTED}
    names.update({f"pl.tile.{n}": (SUPPORTED, "") for n in _TILE_SUPPORTED})
    names.update({f"pl.tensor.{n}": (SUPPORTED, "") for n in _TENSOR_SUPPORTED})
    names.update({n: (SUPPORTED, "") for n in _MODULE_SUPPORTED})
    for prefix, absent, refused in (("pl.", _ABSENT, _REFUSED),
                                    ("", _MODULE_ABSENT, _MODULE_REFUSED)):
        for status, groups in ((ABSENT, absent), (REFUSED, refused)):
            for why, members in groups.items():
                names.update({f"{prefix}{n}": (status, WHY[why]) for n in members})
    return dict(sorted(names.items()))


NAMES = _names()
"""`pl.` name, or a dotted name of pypto's other modules -> (status, why it is refused or
absent)."""

# Constructs of upstream programs: (construct, status, how it is supported or why refused).
CONSTRUCTS = (
    ("bare `pl.store(tile, offsets, out)` / `pl.assemble(out, x, offsets)` statements",
     SUPPORTED, "the write rebinds `out` to the updated tensor"),
    ("a store result under a new name (`out2 = pl.store(t, offsets, out)`)", SUPPORTED,
     "`out2` names `out` from there on"),
    ("`if` / `else` on runtime values, `pl.yield_` in branches", SUPPORTED,
     "kept as a branch in kernels and orchestration"),
    ("`for i, (a, b) in pl.range(n, init_values=(a0, b0))` ... `x, y = pl.yield_(...)`",
     SUPPORTED, "a loop carrying values"),
    ("`for (x,) in pl.while_(init_values=(x0,))` with `pl.cond(c)` first and `r = pl.yield_(...)` "
     "last", SUPPORTED, "a loop run while c holds (tested before each iteration; r is x0 when "
     "it never runs), in kernels and orchestration code; printed as Python's `while c:`"),
    ("`pl.pipeline(n, stage=F)`", SUPPORTED,
     "the body replicated F times per iteration, then the remaining iterations"),
    ("bare-dtype scalar parameters (`scale: pl.FP32`, `n: pl.INDEX`)", SUPPORTED,
     "specialisation constants of a @pl.jit entry (one program per value); scalars elsewhere"),
    ("`kernel.compile(n=128)` / `kernel.compile(n=pl.RUNTIME)`, `n: pl.INDEX = pl.RUNTIME`",
     SUPPORTED, "a value specialises the scalar parameter (the artifact still takes it and "
     "stops, naming it, when passed another value), pl.RUNTIME leaves it a run-time value; "
     "also on lower() and frontend(). A `pl.Scalar[...]` parameter is a run-time value unless "
     "compile() fixes it: an eager call does not re-specialise on its value as upstream's "
     "does (one artifact serves every value; the results are the same)"),
    ("`valid_shape=[16, n]` with a runtime `n`", SUPPORTED,
     "the tile's valid region is set at run time (load, fillpad, store)"),
    ("`pl.matmul` of rank > 2 tensors in a `pl.at` block ([B, M, K] x [B, K, N], a batch "
     "of 1 or a rank-2 operand broadcast)", SUPPORTED,
     "lowered whole-K batch by batch (a pl.range over b of the 2-D product); rank 3 at most "
     "(reshape more leading dimensions into one batch). A [B, M, K] tile "
     "(`pl.batch_matmul`'s operands) is B [M, K] tiles, each placed as one"),
    ("tensor-level `pl.matmul` with vector work in one `pl.at`", SUPPORTED,
     "the value crosses through a scratch tensor in global memory, the units one after the "
     "other"),
    ("`pl.at(optimizations=[pl.split(UP_DOWN|LEFT_RIGHT|NONE), pl.cross_core_slot(slot_num=N)])` "
     "on a mixed block", SUPPORTED,
     "upstream's automatic pipe (ExpandMixedKernel): a group of the block's cube side and its "
     "two vector lanes, run at once, each value crossing through a ring of slot_num slots "
     "(2 by default) of the largest crossing tile in the consuming core's buffer (a ring "
     "that does not fit is a CapacityError naming pl.cross_core_slot); UP_DOWN / "
     "LEFT_RIGHT give each lane its half of the vector work, NONE gives vector lane 0 all "
     "of it. An operator that cannot be computed half by half (a reduction along the split "
     "axis, a reshape), and a tensor one unit writes and the other reads in the block "
     "(nothing orders them), are refused at the line. The group is device code on the "
     "CPU-model platforms as the explicit pipe is (docs/device-code.md)"),
    ("`with pl.spmd(n): out = kernel(...)` and `pl.spmd(core_num=, sync_start=)`", SUPPORTED,
     "each call is one dispatch of n blocks"),
    ("`pl.system.syncall()` in a `pl.spmd` kernel (hard, sized by "
     "`pl.system.available_aiv_count()` / `available_cluster_count()`; soft, "
     "`mode=\"soft\", gm_workspace=, used_cores=`), with upstream's publish / consume "
     "sequence `cacheinvalid()`, `fence()`, `syncall`, `cacheinvalid()`", SUPPORTED,
     "the simulators run such a launch's blocks at once and wait at the barrier; a hard "
     "barrier under a launch that does not fill the kernel's cores is refused at compile "
     "time (at run time when its size is computed), a barrier some block never reaches is a "
     "KernelError naming the blocks, and a read of another block's writes that skips the "
     "protocol (or has no barrier before it) is a KernelError naming both lines "
     "(docs/language.md). Not in a cross-core group (AIC / AIV functions, lane regions), and "
     "no device code: pto-isa's CPU model makes SYNCALL empty"),
    ("`@pl.program` classes defined in a builder function", SUPPORTED,
     "the builder's locals are visible to the class body"),
    ("arrays of task ids: `tids = pl.array.create(n, pl.TASK_ID)`, `tids[i] = tid`, "
     "`tids[i]`, `deps=[tids]`, `pl.system.task_dummy(deps=[tids])`", SUPPORTED,
     "orchestration only: deps= waits on every entry (an entry never set: no task); the "
     "dummy task stands for the tasks it joins; an array carried through a loop is a value "
     "like any other"),
    ("`pl.slice(t, shape, offset, valid_shape=[r, n])` of a tensor in orchestration code",
     SUPPORTED, "the task is handed the valid part (the view is cut back to it at run time); "
     "its accesses beyond are refused (KernelError); in a kernel, the pl.load takes "
     "valid_shape"),
    ("`pl.Tensor[[...], dtype, pl.TensorView(valid_shape=[...], layout=pl.TensorLayout.ND)]`",
     SUPPORTED, "a tensor's valid region is its runtime shape here (views are cut back to "
     "their valid part), so valid_shape declares what call sites may pass and is checked "
     "to fit; layouts other than ND, stride= and pad= are refused at the annotation"),
    ("an integer scalar passed for a `pl.Scalar[pl.BOOL]` parameter", SUPPORTED,
     "non-zero is true (upstream's `is_first = pl.yield_(1)`)"),
    ("orchestration reads of input tensors (`pl.tensor.read(config, [0])`)", SUPPORTED,
     "a tensor some task writes is refused at the read's line"),
    ("`@pl.jit.inline` / `@pl.jit.opaque` helpers", SUPPORTED,
     "spliced into the caller (locals suffixed)"),
    ("`pl.Tile[..., pl.MemRef(\"ub\"), pl.Mem.Vec]`, `pl.MemRef(\"ub\", slots=2)[i % 2]` "
     "(explicit slots)", SUPPORTED,
     "the tile is placed in an allocation of its own (nothing else packed into it), in the "
     "slot the index names where the tile is defined; tiles sharing a slot while live "
     "together, or one allocation in two memory spaces, are refused at the line. The "
     "simulators place a slotted tile at run time; device code takes one-slot allocations "
     "and refuses slots (docs/language.md)"),
    ("`return kernel(x, out)` in an orchestration (a kernel call as the returned value)",
     SUPPORTED, "the call is submitted as a statement and its results are returned"),
    ("`@pl.jit(auto_scope=False)` (also `.inline`, `.host`, `@pl.function`)", SUPPORTED,
     "the orchestration opens no runtime scope of its own (by default its body, each loop "
     "body and each branch is one, picking the task ring of its depth); an inline body "
     "follows its caller's flag; `.incore` / `.opaque` / an InCore or Opaque "
     "`@pl.function` refuse it at the decorator, as upstream"),
    ("a standalone `@pl.function` called from a program, `pl.parse` / `pl.loads` of one",
     SUPPORTED, "added to the program, parsed for the call's argument types; "
     "`ir.serialize` / `ir.deserialize` go through the printed form"),
    ("`pl.create_tensor(shape, dtype, manual_dep=True)`", SUPPORTED,
     "every access to the tensor, for its life (its views, the names tasks rebind it to), "
     "is left out of dependency inference (PTO_NO_DEP): order its readers with deps=; "
     "`layout=pl.ND` is accepted (the only layout), other layouts and `init_value=` "
     "(removed upstream) are refused at the line"),
    ("`pl.Tensor[[...], dtype, pl.ND]`", SUPPORTED,
     "row-major, what every tensor is here; `pl.DN` / `pl.NZ` there are refused at the "
     "annotation (upstream refuses the DN shorthand)"),
    ("`pl.prefetch.make_context()` / `async_prefetch(x, ctx)` / `session(ctx)` / "
     "`wait(evt, session)` in a kernel", SUPPORTED,
     "upstream's GM -> L2 cache hint, which changes no value: the simulators model no L2 "
     "(as pto-isa's CPU model) and leave the calls out, `wait` is true; device code refuses "
     "them at the line (TPREFETCH_ASYNC needs an SDMA workspace the runtime does not "
     "provide)"),
    ("`pl.loads_program(path)` of a file `Program.as_python()` wrote", SUPPORTED,
     "errors name the file's lines; a file holding a standalone function is refused "
     "(pl.loads reads either)"),
    ("`pl.dynamic` dimensions in a `@pl.program`", SUPPORTED,
     "a class whose entry has them is a `ProgramTemplate`, parsed per call's tensor shapes "
     "by `run(program, *args)`: `pl.tensor.dim` reads that call's sizes (what upstream "
     "reads at run time), a name bound once to such a size is a constant"),
    ("a view (`pl.slice`) reaching past its tensor's end, read only in part", SUPPORTED,
     "cut back to the tensor's edge at run time (upstream: never valid where the source is "
     "not); a kernel access beyond it is refused (KernelError naming the kernel), never "
     "performed; constant offsets outside are refused at the slice's line"),
    ("tensor extents an orchestration reads from an input tensor (`n = pl.tensor.read(config, "
     "[3])`, `pl.create_tensor([16, n])`)", SUPPORTED,
     "the @pl.program is specialised for those elements' values at each call (a "
     "ProgramTemplate) and checks them when it runs (pl.expect_value; another value stops "
     "the run, status 5)"),
    ("a runtime extent of a tensor slice in orchestration code (`pl.slice(sij, [16, n], "
     "[0, 0])`)", SUPPORTED, "the window is as wide as the tensor allows, n is its valid "
     "part (the view the task is handed)"),
    ("other tensor shapes known only at run time (`pl.create_tensor([16, n])` with n "
     "computed by the program)", REFUSED, "tensor shapes are compile-time constants here; "
     "the refusal names the runtime value"),
    ("tensor values carried around loops, chosen by an `if`, read after their loop or "
     "reshaped in a `pl.at` block (qwen3_jit: an RMSNorm partial sum, matmul / matmul_acc "
     "accumulators)", SUPPORTED,
     "such a kernel keeps each tensor value as one tile (docs/passes.md, TensorToTile); each "
     "must fit its on-chip buffer whole (else a CapacityError names it); with pl.split the "
     "block is a group whose vector lanes each compute their half"),
    ("`pl.full` in a `pl.at` block", SUPPORTED,
     "a tensor, as upstream (pl.tensor.full); pl.tile.full spells the tile"),
    ("values computed in a loop of one `pl.at` block and read after it, or by the other "
     "unit (cube / vector) in the same block", SUPPORTED,
     "handed on through a scratch tensor in global memory, written after the loop (or "
     "before each read of the other unit); with pl.split the other unit's reads go through "
     "the cross-core pipe"),
    ("a write to the entry's input parameter (`k_cache: pl.Tensor` written through an "
     "inline helper's `pl.Out`)", SUPPORTED,
     "upstream's meaning: the write lands in the run's device copy (later tasks read it) and "
     "the caller's tensor comes back unchanged; the InputParamWritten warning names the "
     "writing line (declare it pl.InOut to update the caller's tensor)"),
    ("`pl.move` across the cube/vector boundary: Mat -> Vec, Acc -> Vec (A2/A3), Vec -> "
     "Mat / Left / Right", SUPPORTED, "upstream's TPUSH/TPOP transfer, through a scratch "
     "tensor the orchestration allocates (stored from one unit's buffer, loaded into the "
     "other's: UB, or L1 then moved on to L0A / L0B); A5 moves Acc -> Vec directly (TMOV). "
     "Refused at the move in a kernel on one unit (`pl.at(level=pl.Level.AIC / AIV)`: use "
     "CORE_GROUP), in a kernel dispatched as several blocks, and for a Mat tile on the "
     "device-code platforms"),
    ("`pl.move` otherwise across the cube/vector boundary (Left / Right -> Vec, Vec -> Acc)",
     REFUSED, "no PTO data path and no route through memory: L0A / L0B tiles are never "
     "stored and only a matmul writes L0C; refused at the move, naming the data paths"),
    ("an Out parameter rebound without a write (`out = pl.add(...)` in pl.at)", SUPPORTED,
     "accepted with a located OutParamWriteDropped warning (step 3 of the precision "
     "workflow: the compiler warned), where upstream stops with an error; the output keeps "
     "the device's poison. Programs written for upstream never contain it"),
    ("`pl.scatter_update` of upstream's rank-4 KV cache (input [blockNum, blockSize, 1, d], "
     "src [b, s, 1, d])", SUPPORTED, "the same row write on the cache's blockNum * blockSize "
     "rows (MGATHER / MSCATTER's row forms read a packed tensor of any rank as its rows)"),
    ("`pl.paged_gather(..., space=pl.Mem.Vec)` (pl.tensor.paged_gather)", SUPPORTED,
     "a tensor value [max_indices, size] computed on Vec tiles (the indices shifted and "
     "masked, blocks and rows gathered by MGATHER); here block_size is a power of two, "
     "size is src's row length with col_off=0, max_indices the number of indices, and "
     "indices [1, n] (each refused at the line otherwise)"),
    ("`pl.paged_gather` into L1 (space=pl.Mem.Mat, the default; is_trans=True)", REFUSED,
     "a tensor-level value held in L1 (Mat) for pl.matmul does not exist here: tensor values "
     "in a pl.at block live in global memory and are computed through Vec tiles; refused at "
     "the line"),
    ("upstream's older `pl.tile.sels(lhs, rhs, select_mode)`", REFUSED,
     "select_mode's values are target-defined; refused at its line, which names the mask "
     "form `pl.tile.sels(mask, src, tmp, scalar)` (the newest upstream's, TSELS), which is "
     "supported"),
    ("`RunConfig(enable_chip_swimlane=, device_id=, strategy=, backend_type=, "
     "compile_profiling=)`", SUPPORTED, "see docs/running.md"),
    ("`RunConfig(distributed_config=)`, `DistributedWorker`, `@pl.jit.host`", REFUSED,
     WHY["host"]),
    ("`RunConfig(ring_task_window=, ring_heap=, ring_dep_pool=, enable_scope_stats=)`, "
     "`PTO2_RING_*`", SUPPORTED,
     "the native scheduler's four task rings (docs/running.md \"Task rings\"); a run that "
     "needs the Python scheduler refuses them"),
    ("`allow_early_resolve=` on `pl.at` / `pl.spmd` / `pl.submit` / `pl.spmd_submit`",
     SUPPORTED, "a consumer released by a flagged producer starts next, on the core it frees "
     "(docs/dependencies.md); recorded in deps.json and the swimlane"),
    ("`RunConfig(save_kernels=, save_kernels_dir=, codegen_only=)`", SUPPORTED,
     "read by `pypto.runtime.run()`, as upstream's: codegen_only=True stops after the "
     "compile and returns the CompiledProgram, save_kernels_dir= receives a copy of the "
     "artifact (sources, binaries, manifest), save_kernels=True keeps it (artifacts always "
     "stay in the content-keyed cache, compiled.output_dir). Any other dispatch (a kernel "
     "call, compiled(...)) runs, as upstream's does, and warns once that it does not read "
     "them"),
    ("`pypto.runtime.benchmark(compiled, args, rounds=, warmup=, platform=, device_id=, "
     "config=)` and its `BenchmarkStats`", SUPPORTED,
     "registers once, times each launch's host wall (host_wall_us, the span tree, the mean "
     "tree with its spread); device_wall_us is 0 and all_zero_device true, as upstream's "
     "*sim platforms report (a simulator has no device clock); multi-rank programs refused "
     "(docs/running.md)"),
    ("`RunConfig(enable_pmu=, aicpu_thread_num=)`", REFUSED,
     "a TypeError at the line that built the config, saying what they are for: they sample "
     "or size the device's own runtime, which the simulator does not have "
     "(enable_pmu=0 / aicpu_thread_num=None ask for nothing and are accepted)"),
    ("a program written for `platform=\"a2a3\"` / `\"a5\"` run without a device", SUPPORTED,
     "PYPTO_SIMULATE_DEVICE=1 runs it on that backend's simulator, "
     "PYPTO_SIMULATE_DEVICE=cpu-model as device code on its CPU-model platform (a2a3cpu, "
     "a5cpu: pto-isa's CPU model; docs/device-code.md lists the upstream programs that run "
     "there)"),
    ("`pypto.runtime.run`, `TensorSpec`, `ChipWorker.alloc_tensor(init=)`", SUPPORTED, ""),
    ("`pypto.backend.BackendType`, `pto_backend.PartialCodegenError`", SUPPORTED,
     "PartialCodegenError is LoweringError"),
    ("4-bit tensors (`pl.FP4`, `pl.HF4`, `pl.INT4`, `pl.UINT4`): torch.float4_e2m1fn_x2 or "
     "torch.uint8 bytes, the last dimension halved", SUPPORTED,
     "two elements a byte, shapes counting elements (last dimension even); a 4-bit tile is "
     "loaded, stored, moved and cast (BF16 <-> FP4 on Ascend950, FP16 <-> INT4 on "
     "Ascend910B; HF4 and UINT4 have no conversion), anything else refused at its line "
     "(docs/numerics.md); device code refuses them, saying why"),
    ("`pl.matmul_mx` / `pl.tile.matmul_mx_acc` / `_bias` on tiles: FP8 data in Left / Right, "
     "FP8E8M0 scales moved from Mat to `pl.Mem.LeftScale` / `RightScale`", SUPPORTED,
     "Ascend950 only (refused at the line on Ascend910B), FP8E4M3FN or FP8E5M2 data, an FP4 "
     "lhs cast to FP8E4M3FN first (native FP4 refused, as upstream); computed as pto-isa's "
     "CPU model computes TMATMUL_MX (docs/numerics.md); device code refuses it, saying why"),
    ("`pl.Tile[..., pl.TileView(valid_shape=[vr, vc])]`", SUPPORTED,
     "the tile's valid region; TileView's stride=, start_offset=, blayout=, slayout=, "
     "fractal= and pad= are refused at the line (a tile's layout follows its memory space "
     "here, and what its padding holds is not part of its type)"),
)


@dataclass(frozen=True)
class Program:
    """One run of an upstream example and how it must end here.

    `expect`: the starts of lines its stdout must hold (its own success lines, printed
    after its torch comparisons), and `stderr` fragments its stderr must hold (the
    compiler's located warnings); `refused`: instead, fragments its stderr must hold (the
    located refusal), with a non-zero exit; `why`: the reason, for the page.  `env`: the
    environment it needs (PYPTO_SIMULATE_DEVICE=1 for programs written for a device);
    `slow`: left out of the default test run; `module`: run with `python -m` (a package).
    """

    path: str
    args: tuple = ()
    expect: tuple = ("OK",)
    refused: tuple = ()
    stderr: tuple = ()
    why: str = ""
    env: tuple = ()
    slow: bool = True
    module: bool = False

    @property
    def id(self) -> str:
        return self.path.removeprefix("examples/").removesuffix(".py") + "".join(
            f"[{a}]" for a in self.args if not a.startswith("-"))

    @property
    def status(self) -> str:
        return REFUSED if self.refused else SUPPORTED


_DEVICE = (("PYPTO_SIMULATE_DEVICE", "1"),)

PROGRAMS = (
    Program("examples/beginner/01_hello_world.py", slow=False),
    Program("examples/beginner/02_elementwise.py"),
    Program("examples/beginner/03_scalar_ops.py"),
    Program("examples/beginner/04_activation.py"),
    Program("examples/beginner/05_matmul.py"),
    Program("examples/beginner/06_concat.py"),
    Program("examples/intermediate/01_fused_linear.py"),
    Program("examples/intermediate/02_softmax.py"),
    Program("examples/intermediate/03_normalization.py"),
    Program("examples/intermediate/04_matmul_acc.py"),
    Program("examples/intermediate/05_assemble.py",
            expect=("acc_mat: 2 fn(s)", "vec: 2 fn(s)", "row_by_row: 2 fn(s)",
                    "double_loop: 2 fn(s)", "loop_col_broadcast: 2 fn(s)",
                    "double_loop_broadcast: 2 fn(s)", "OK")),
    Program("examples/intermediate/06_dyn_valid_shape.py",
            expect=("dyn_valid_shape (full): 2 fn(s)", "dyn_valid_shape (partial): 2 fn(s)",
                    "dyn_valid_shape_if_else: 2 fn(s)", "dyn_valid_shape_loop: 2 fn(s)",
                    "OK")),
    Program("examples/intermediate/07_task_graph.py"),
    Program("examples/advanced/01_split_k.py"),
    Program("examples/advanced/02_auto_tile_matmul.py"),
    Program("examples/advanced/03_mixed_kernel.py", ("--mode", "mixed"), slow=False),
    Program("examples/advanced/03_mixed_kernel.py", ("--mode", "staged")),
    Program("examples/advanced/03_mixed_kernel.py", ("--mode", "left_right")),
    Program("examples/models/01_ffn.py"),
    Program("examples/models/02_vector_dag.py"),
    Program("examples/models/03_flash_attention.py",
            expect=("SKIPPED: flash_attention body fails IR verification (see "
                    "KNOWN_ISSUES.md)",),
            why="the program only prints its @pl.jit function (upstream skips it)"),
    Program("examples/models/04_paged_attention.py", env=_DEVICE, expect=("PASSED",),
            why="its tensor extents are read from a config tensor: the program is "
                "specialised for the config's values (checked when it runs)"),
    Program("examples/models/05_paged_attention_batch.py", expect=("Done.",)),
    Program("examples/models/06_paged_attention_dynamic.py", env=_DEVICE, expect=("PASSED",),
            why="its softmax kernel's argument is `pl.slice(sij, ..., valid_shape=[q_tile, "
                "valid_len])`, declared with pl.TensorView(valid_shape=[Q_HEADS, "
                "VALID_LEN_DYN]); its flags are integers passed for BOOL parameters"),
    Program("examples/models/07_paged_attention_multi_config.py", expect=("PASSED",),
            why="its last request's `pl.slice(block_table, [n_unroll], [bt_offset])` takes "
                "64 entries at 96 of 128: the view is cut back to the 32 inside, and the "
                "kernels read the first 16"),
    Program("examples/models/08_llama_mini.py", expect=()),
    Program("examples/models/09_paged_attention_spmd.py", env=_DEVICE, expect=("PASSED",)),
    Program("examples/models/qwen3_jit/qwen3_decode.py", module=True,
            expect=("Lowered program has 16 function(s):",),
            stderr=("attention.py:73: PyptoWarning: warning [InputParamWritten]: this writes "
                    "`k_cache`", "attention.py:79: PyptoWarning: warning [InputParamWritten]: "
                    "this writes `v_cache`"),
            why="the program lowers its layer at full size (its __main__ only lowers it; its "
                "two pl.split projections are each a group of an AIC and an AIV function); "
                "its entry declares k_cache and v_cache In and rope_kv_cache_update writes "
                "them: warned at attention.py:73 and :79"),
    Program("examples/utils/cross_function_calls.py", expect=("main_kernel: 3 fn(s)",)),
    Program("examples/utils/error_handling.py",
            expect=("OK -- caught expected error: LoweringError",),
            why="rejected here for its rank-1 tensor-level operators (its rebinding of an "
                "Out parameter is a warning here)"),
    Program("examples/utils/parse_from_text.py",
            expect=("All examples completed successfully!",)),
    Program("examples/utils/phase_fence_dep_compression.py",
            expect=("ChainedSnapshotPhaseFence: shape=(512, 32), branches=4",
                    "ChainedSnapshotManualDummyPhaseFence: shape=(512, 32), branches=4"),
            why="builds its two programs (tests/upstream/test_upstream_kernels.py runs them "
                "with the race detector)"),
    Program("examples/runtime/explicit_dispatch.py"),
    Program("examples/runtime/multi_program_kv_cache.py",
            expect=("skipped (needs a device + simpler runtime): ParseError: ",),
            why="@pl.jit.host (a multi-chip HOST orchestrator) is refused at its line; the "
                "program reports it and exits"),
    Program("examples/runtime/distributed_callback.py",
            refused=("distributed_callback.py:73", "HOST-level function"),
            why=WHY["host"]),
)


GUIDE = "docs/en/user"
"""Upstream's user guide, in the snapshot: its pages' executable blocks run here too."""

_GUIDE_BLOCK = re.compile(r"<!-- doctest: (run|setup) -->\s*\n```python\n(.*?)\n```", re.S)
GUIDE_DONE = "every block of the page ran"


@dataclass(frozen=True)
class GuidePage:
    """A page of upstream's user guide with executable blocks (`<!-- doctest: setup -->` /
    `<!-- doctest: run -->` before a python block, `__PLATFORM__` for the platform), and how
    it must end here: every block run (its own torch comparisons are asserts), or
    `refused`: fragments of the located refusal, `why` saying what stops it."""

    path: str
    refused: tuple = ()
    why: str = ""

    @property
    def status(self) -> str:
        return REFUSED if self.refused else SUPPORTED


def guide_script(text: str, platform: str) -> str:
    """A page's setup and run blocks in order, as one program for `platform`, ending with
    the line GUIDE_DONE (printed only when every block ran)."""
    blocks = [code.replace("__PLATFORM__", platform) for _, code in _GUIDE_BLOCK.findall(text)]
    return "\n\n".join(blocks + [f"print({GUIDE_DONE!r})"]) + "\n"


def guide_pages(root: Path) -> list[str]:
    """The pages of the snapshot's user guide that hold executable blocks."""
    guide = root / GUIDE
    return sorted(str(p.relative_to(root)) for p in guide.rglob("*.md")
                  if _GUIDE_BLOCK.search(p.read_text()))


GUIDE_PAGES = (
    GuidePage("docs/en/user/00-getting_started.md"),
    GuidePage("docs/en/user/02-quickstart.md"),
    GuidePage("docs/en/user/execution/00-compile.md"),
    GuidePage("docs/en/user/execution/01-run.md"),
    GuidePage("docs/en/user/language/00-types.md"),
    GuidePage("docs/en/user/language/04-scopes.md"),
    GuidePage("docs/en/user/performance/01-task-granularity.md"),
    GuidePage("docs/en/user/performance/02-runtime-overhead.md"),
    GuidePage("docs/en/user/performance/03-dependencies.md"),
    GuidePage("docs/en/user/performance/04-incore.md"),
    GuidePage("docs/en/user/performance/05-memory.md"),
    GuidePage("docs/en/user/precision/00-workflow.md"),
    GuidePage("docs/en/user/tasks/03-tuning.md"),
    GuidePage("docs/en/user/tools/00-debugging.md"),
)


def render() -> str:
    """The compatibility page as Markdown."""
    from pypto.codegen.environment import render as render_template

    return render_template("upstream_compat.md.j2", names=NAMES, constructs=CONSTRUCTS,
                           programs=PROGRAMS, guide=GUIDE_PAGES)


def add_arguments(parser) -> None:
    from pypto.tools.generated_page import add_page_arguments

    add_page_arguments(parser, DEFAULT_OUTPUT, "table")


def run(args) -> int:
    from pypto.tools.generated_page import write_or_check

    return write_or_check(render(), args.output, "upstream-compat", args.check)
