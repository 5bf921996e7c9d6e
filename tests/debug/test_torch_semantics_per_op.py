"""Every operator's torch semantics (`torch_runtime.reference`) agree with the simulator's
instruction, op by op, bit for bit, on the values where implementations part: signed
zeros, infinities, NaN, subnormals, the integer extremes and out-of-range shift counts.

One kernel per dtype holds one lane per operator form (an operator, its scalar forms,
each cmp code, each cast mode); every lane writes its own output, compared on its own.
The movement and matmul operators, which need placed buffers, run in one kernel of their
own.  The registry drives it: an operator with no lane here and no reason in UNCHECKED
fails the coverage test.
"""

from __future__ import annotations

import importlib.util
import re
import sys

import numpy as np
import pytest
import torch
from sim_and_torch import sim_and_torch

from pypto.debug.torch_runtime import reference
from pypto.ir.ops import all_ops
from pypto.ir.ops.barrier import BARRIER_OPS, LAUNCH_QUERIES
from pypto.ir.ops.cross_core import PIPE_OPS
from pypto.ir.ops.prefetch import PREFETCH_OPS

pytestmark = pytest.mark.small_tiles  # values on small tiles: see tests/conftest.py

R, C = 16, 32
PLATFORM = "a2a3sim"
FLOATS = ("FP32", "FP16", "BF16")
INTS = ("INT32", "INT16", "INT8", "UINT8")
TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16,
         "INT32": torch.int32, "INT16": torch.int16, "INT8": torch.int8,
         "UINT8": torch.uint8}

# lane name -> (operators it checks, expression over tiles ta, tb (x's shape) and tmp).
COMMON = {
    **{op: ((op,), f"pl.{op}(ta, tb)") for op in ("add", "sub", "mul", "div", "maximum",
                                                   "minimum")},
    "add_scalar": (("add",), "pl.add(ta, 3)"),
    "sub_rscalar": (("sub",), "pl.sub(2, ta)"),
    "div_rscalar": (("div",), "pl.div(3, ta)"),
    "maximum_zero": (("maximum",), "pl.maximum(ta, 0)"),
    "minimum_rzero": (("minimum",), "pl.minimum(0, ta)"),
    "neg": (("neg",), "pl.neg(ta)"),
    "abs": (("abs",), "pl.abs(ta)"),
    "relu": (("relu",), "pl.relu(ta)"),
    **{f"cmp{k}": (("cmp", "sel"), f"pl.sel(pl.cmp(ta, tb, cmp_type={k}), ta, tb)")
       for k in range(6)},
    "cmp_scalar": (("cmp", "sel"), "pl.sel(pl.cmp(ta, 0, cmp_type=4), ta, tb)"),
    "expands": (("expands",), "pl.expands(ta, 5)"),
    "row_sum": (("row_sum",), "pl.row_expand(ta, pl.row_sum(ta, tmp))"),
    "row_max": (("row_max",), "pl.row_expand(ta, pl.row_max(ta, tmp))"),
    "row_min": (("row_min",), "pl.row_expand(ta, pl.row_min(ta, tmp))"),
    "col_sum": (("col_sum",), "pl.col_expand(ta, pl.col_sum(ta))"),
    "col_sum_tree": (("col_sum",), "pl.col_expand(ta, pl.col_sum(ta, tmp))"),
    "col_max": (("col_max",), "pl.col_expand(ta, pl.col_max(ta))"),
    "col_min": (("col_min",), "pl.col_expand(ta, pl.col_min(ta))"),
    "fmod": (("fmod",), "pl.fmod(ta, tb)"),
    "fmods": (("fmod",), "pl.fmods(ta, -3)"),
    "rem": (("rem",), "pl.tile.rem(ta, tb)"),
    "rems": (("rem",), "pl.tile.rems(ta, -3)"),
    "addc": (("addc",), "pl.tile.addc(ta, tb, ta)"),
    **{op: ((op,), f"pl.{op}(ta, tb)") for op in ("part_add", "part_mul", "part_max",
                                                   "part_min")},
    "ci": (("ci",), "pl.col_expand(ta, pl.cast(pl.tile.ci(-5, [1, 32], descending=True), "
                    "pl.{dtype}))"),
    "subc": (("subc",), "pl.tile.subc(ta, tb, ta)"),
    "tri": (("tri",), "pl.cast(pl.tile.tri(3, [16, 32], dtype=pl.FP16), pl.{dtype})"),
    "tri_upper": (("tri",), "pl.cast(pl.tri(-5, [16, 32], upper=True), pl.{dtype})"),
    "sels": (("sels",), "pl.tile.sels(pl.cmp(ta, tb, cmp_type=2), ta, tmp, 7)"),
    "sels_read": (("sels",), "pl.sels(pl.cmp(ta, tb, cmp_type=1), tb, tmp, ta[0, 5])"),
    "addsc": (("addsc",), "pl.tile.addsc(ta, 3, tb)"),
    "subsc": (("subsc",), "pl.tile.subsc(ta, 3, tb)"),
    **{f"{axis}_expand{s}": ((f"{axis}_expand{s}", f"{axis}_{red}"),
                             f"pl.{axis}_expand{s}(tb, pl.{axis}_{red}(ta{tmp}))")
       for axis, tmp in (("row", ", tmp"), ("col", ""))
       for s, red in (("", "max"), ("_add", "max"), ("_sub", "min"), ("_mul", "max"),
                      ("_div", "max"), ("_max", "min"), ("_min", "max"))},
}
FLOAT_ONLY = {
    "add_half": (("add",), "pl.add(ta, 0.5)"),
    **{op: ((op,), f"pl.{op}(ta)") for op in ("exp", "log", "sqrt", "rsqrt", "recip")},
    "row_expand_expdif": (("row_expand_expdif", "row_max"),
                          "pl.row_expand_expdif(ta, pl.row_max(ta, tmp))"),
    "col_expand_expdif": (("col_expand_expdif", "col_max"),
                          "pl.col_expand_expdif(ta, pl.col_max(ta))"),
    "lrelu": (("lrelu",), "pl.tile.lrelu(ta, 0.1)"),
    "prelu": (("prelu",), "pl.tile.prelu(ta, tb, tmp)"),
    "rems_half": (("rem",), "pl.tile.rems(ta, 0.75)"),
    "sels_round": (("sels",), "pl.tile.sels(pl.cmp(ta, 0, cmp_type=4), ta, tmp, 0.1)"),
    "full_negative_zero": (("full",), "pl.full([16, 32], pl.{dtype}, -0.0)"),
    **{f"cast_{mode}": (("cast",), f"pl.cast(pl.cast(ta, pl.INT16, mode='{mode}'), "
                                   "pl.{dtype})")
       for mode in ("rint", "round", "floor", "ceil", "trunc")},
    "cast_odd": (("cast",), "pl.cast(pl.cast(ta, pl.FP16, mode='odd'), pl.{dtype})"),
}
INT_ONLY = {
    **{op: ((op,), f"pl.{op}(ta, tb)") for op in ("and_", "or_", "xor", "shl", "shr")},
    "shl_scalar": (("shl",), "pl.shl(ta, 3)"),
    "shr_scalar": (("shr",), "pl.shr(ta, 5)"),
    "xor_rscalar": (("xor",), "pl.xor(86, ta)"),
    "not_": (("not_",), "pl.not_(ta)"),
    "full": (("full",), "pl.full([16, 32], pl.{dtype}, -7)"),
    "sels_saturate": (("sels",), "pl.tile.sels(pl.cmp(ta, tb, cmp_type=4), tb, tmp, 100000)"),
    "cast_wide": (("cast",), "pl.cast(pl.cast(ta, pl.FP16), pl.{dtype})"),
    # Index arithmetic on elements read as scalars (8 and -7: floor and trunc differ).
    "floordiv": (("floordiv", "read"), "pl.expands(ta, pl.floordiv(ta[0, 7], ta[0, 6]))"),
    "mod": (("mod", "read"), "pl.expands(ta, pl.mod(ta[0, 7], ta[0, 6]))"),
    "min": (("min", "read"), "pl.expands(ta, pl.min(ta[0, 7], ta[0, 6]))"),
    "max": (("max", "read"), "pl.expands(ta, pl.max(ta[0, 7], ta[0, 6]))"),
    "blocks": (("get_block_idx", "get_block_num"),
               "pl.expands(ta, pl.get_block_idx() + 2 * pl.get_block_num())"),
}
# The products and arg-reductions, on the dtypes their instructions take (the index is cast
# back to the lane's dtype, exactly: it is below 32).
ISA_REDUCE = ("FP32", "FP16", "INT32", "INT16")
ISA_REDUCE_LANES = {
    "row_prod": (("row_prod",), "pl.row_expand(ta, pl.row_prod(ta, tmp))"),
    "col_prod": (("col_prod",), "pl.col_expand(ta, pl.col_prod(ta))"),
    **{f"row_arg{w}": ((f"row_arg{w}",),
                       f"pl.row_expand(ta, pl.cast(pl.row_arg{w}(ta, tmp), pl.{{dtype}}))")
       for w in ("max", "min")},
}
COL_ARG = ("FP32", "FP16")
COL_ARG_LANES = {
    f"col_arg{w}": ((f"col_arg{w}",),
                    f"pl.col_expand(ta, pl.cast(pl.col_arg{w}(ta, tmp), pl.{{dtype}}))")
    for w in ("max", "min")}
# Operators no lane checks, and why.
UNCHECKED = {
    "create_tile": "its contents are undefined",
    "assemble": "lowered to pl.store before code generation",
    "create_tensor": "orchestration only: allocates, computes nothing",
    "tensor.full": "computed as `full` tiles (TensorToTile); checked through `full`",
    "tensor.ci": "computed as `ci` tiles (TensorToTile); checked through `ci`",
    "tensor.gather": "computed as `tile.mgather` (TensorToTile); checked through it",
    "scatter_update": "computed as `tile.mscatter` (coalesce='row', TensorToTile); checked "
                      "through it (and against torch in tests/ops/test_ops_tensor_scatter.py)",
    "tensor.scatter": "computed as `tile.scatter` row by row (TensorToTile); checked through "
                      "it (and against torch in tests/ops/test_ops_scatter.py)",
    "paged_gather": "computed as INT32 `shr` / `and_` / `shl` / `add` tiles and two "
                    "`tile.mgather`s (TensorToTile); checked through them (and against torch "
                    "in tests/ops/test_ops_paged_gather.py)",
    "tensor.random": "computed as `random` tiles (TensorToTile); checked through `random`",
    "batch_matmul": "one `matmul` per batch (FlattenBatchTiles), checked through it; "
                    "torch_runtime.batch_matmul against both simulators in "
                    "tests/ops/test_ops_batch_matmul.py",
    **{name: "a composite operator: LowerCompositeOps expands it into the operators the "
             "lanes check; its torch semantics, run unexpanded, agree with both simulators "
             "bit for bit in tests/ops/test_ops_trig.py"
       for name in ("sin", "cos")},
    "dump_tag": "orchestration only: computes nothing",
    "array.create": "orchestration only: task ids, no data (tests/language/test_task_arrays.py)",
    "array.update_element": "orchestration only: task ids, no data",
    "array.get_element": "orchestration only: task ids, no data",
    "expect_value": "orchestration only: a guard, computes nothing "
                    "(tests/language/test_input_values.py)",
    **{name: "an L2 cache hint: changes no value (tests/language/test_prefetch.py)"
       for name in PREFETCH_OPS},
    **{name: "the cross-core pipe: runs only in a Group task, checked against both "
             "simulators in tests/debug/test_torch_cross_core_pipe.py"
       for name in (*PIPE_OPS, "get_subblock_idx")},
    **{name: "the cross-block barriers: run only across the blocks of a launch, checked "
             "against both simulators in tests/sim/test_cross_block_barriers_sim.py"
       for name in BARRIER_OPS},
    **{name: "the platform's core count, a constant: checked against the backends' data in "
             "tests/language/test_cross_block_barriers.py"
       for name in LAUNCH_QUERIES},
}


def lanes(dtype: str) -> dict:
    return {**COMMON, **(FLOAT_ONLY if dtype in FLOATS else INT_ONLY),
            **(ISA_REDUCE_LANES if dtype in ISA_REDUCE else {}),
            **(COL_ARG_LANES if dtype in COL_ARG else {})}


# The movement and matmul operators, one kernel: (operators, output shape, statements
# ending in the lane's tile `r`).
MOVEMENT = {
    # Outside a valid region a store writes nothing: the whole tile is made valid first.
    "load_pad": (("load", "store"), [R, C],
                 ["t = pl.load(a, [0, 0], [16, 32], valid_shape=[16, 30], "
                  "pad_value=pl.PadValue.min)", "r = pl.set_validshape(t, 16, 32)"]),
    "fillpad": (("fillpad", "set_validshape"), [R, C],
                ["p = pl.load(a, [0, 0], [16, 32], valid_shape=[12, 30])",
                 "r = pl.set_validshape(pl.fillpad(p, pl.PadValue.max), 16, 32)"]),
    # The partial operators on operands whose valid regions nest, each way round.
    **{f"{op}_{order}": ((op,), [R, C],
                         ["t = pl.load(a, [0, 0], [16, 32], valid_shape=[16, 30])",
                          "p = pl.load(b, [0, 0], [16, 32], valid_shape=[12, 20])",
                          f"r = pl.set_validshape(pl.{op}({operands}), 16, 32)"])
       for op in ("part_add", "part_mul", "part_max", "part_min")
       for order, operands in (("tp", "t, p"), ("pt", "p, t"))},
    # Only the valid region is written: fillpad makes the rest +inf before the store.
    "tri_valid": (("tri",), [R, C],
                  ["p = pl.tile.tri(2, [16, 32], valid_shape=[12, 20], dtype=pl.FP32, "
                   "upper=True)", "r = pl.set_validshape(pl.fillpad(p, pl.PadValue.max), 16, 32)"]),
    "fillpad_expand": (("fillpad_expand",), [R, C],
                       ["p = pl.load(a, [0, 0], [8, 16], valid_shape=[6, 10])",
                        "r = pl.fillpad_expand(p, [16, 32], pl.PadValue.max)"]),
    "slice_concat": (("slice", "concat"), [R, C],
                     ["t = pl.load(a, [0, 0], [16, 32])",
                      "r = pl.concat(t[0:16, 16:32], t[0:16, 0:16])"]),
    "reshape_transpose": (("reshape", "transpose"), [R, C],
                          ["t = pl.load(b, [0, 0], [16, 32])",
                           "r = pl.transpose(pl.reshape(t, [32, 16]))"]),
    # The INT16 halves of each FP32, one added to each: NaNs and subnormals among the bits.
    "reinterpret_view": (("reinterpret_view",), [R, C],
                         ["t = pl.load(b, [0, 0], [16, 32])",
                          "u = pl.reinterpret_view(t, pl.INT16, shape=[16, 64])",
                          "r = pl.reinterpret_view(pl.add(u, 1), pl.FP32)"]),
    "tile_assemble": (("tile.assemble",), [R, C],
                      ["t = pl.load(a, [0, 0], [16, 32])",
                       "u = pl.load(b, [0, 0], [8, 16])",
                       "r = pl.tile.assemble(t, u, [4, 8])"]),
    "read": (("read",), [R, C],
             ["t = pl.load(a, [0, 0], [16, 32])", "r = pl.mul(t, t[3, 5])"]),
    "gemv": (("tile.gemv", "tile.gemv_acc"), [1, C],
             ["m = pl.load(h, [0, 0], [32, 16], target_memory=pl.Mem.Mat)",
              "u = pl.load(h, [5, 0], [1, 16], target_memory=pl.Mem.Mat)",
              "p = pl.move(pl.tile.transpose_view(m), pl.Mem.Right)",
              "acc = pl.tile.gemv(pl.move(u, pl.Mem.Left), p)",
              "r = pl.tile.gemv_acc(acc, pl.move(u, pl.Mem.Left), p)"]),
    # Indices past either end (a's values times 8, saturated to INT32), clamped and wrapped.
    "mgather_row": (("tile.mgather",), [R, C],
                    ["t = pl.load(a, [0, 0], [16, 32])",
                     "u = pl.cast(pl.mul(t, 8.0), pl.INT32, mode='trunc')",
                     "r = pl.tile.mgather(b, u[0:1, 0:16], gather_oob='clamp')"]),
    "mgather_elem": (("tile.mgather",), [R, C],
                     ["t = pl.load(a, [0, 0], [16, 32])",
                      "u = pl.cast(pl.mul(t, 8.0), pl.INT32, mode='trunc')",
                      "r = pl.tile.mgather(b, u, coalesce='elem', gather_oob='wrap')"]),
    # Indices in range, some repeated: the later of two writes stays (into zeros: an Out
    # tensor's other elements are undefined).
    "mscatter": (("tile.mscatter",), [R, C],
                 ["o_mscatter = pl.store(pl.full([16, 32], pl.FP32, 0.0), [0, 0], o_mscatter)",
                  "t = pl.load(a, [0, 0], [16, 32])",
                  "u = pl.ands(pl.cast(pl.mul(t, 8.0), pl.INT32, mode='trunc'), 511)",
                  "o_mscatter = pl.tile.mscatter(pl.load(b, [0, 0], [16, 32]), u, o_mscatter)",
                  "r = pl.load(o_mscatter, [0, 0], [16, 32])"]),
    # Rows in range, one repeated (the later row stays).
    # In-range flat indices, some repeated (the later stays), into b's values.
    "tile_scatter": (("tile.scatter",), [R, C],
                     ["t = pl.load(a, [0, 0], [16, 32])",
                      "u = pl.ands(pl.cast(pl.mul(t, 8.0), pl.INT32, mode='trunc'), 511)",
                      "r = pl.tile.scatter(pl.load(b, [0, 0], [16, 32]), t, u)"]),
    "mscatter_row": (("tile.mscatter",), [R, C],
                     ["o_mscatter_row = pl.store(pl.full([16, 32], pl.FP32, 0.0), [0, 0], "
                      "o_mscatter_row)",
                      "t = pl.load(a, [0, 0], [16, 32])",
                      "u = pl.ands(pl.cast(pl.mul(t, 8.0), pl.INT32, mode='trunc'), 15)",
                      "o_mscatter_row = pl.tile.mscatter(pl.load(b, [0, 0], [16, 32]), "
                      "u[0:1, 0:16], o_mscatter_row, coalesce='row')",
                      "r = pl.load(o_mscatter_row, [0, 0], [16, 32])"]),
    "gather": (("tile.gather",), [R, C],
               ["t = pl.load(a, [0, 0], [16, 32])",
                "u = pl.cast(pl.mul(t, 8.0), pl.INT32, mode='trunc')",
                "r = pl.tile.gather(pl.load(b, [0, 0], [16, 32]), u, "
                "pl.create_tile([16, 32], pl.INT32))"]),
    # One byte offset, not a multiple of 4 (no cast makes UINT32 offsets from the inputs).
    "gatherb": (("tile.gatherb",), [R, 2 * C],
                ["r = pl.tile.gatherb(pl.load(b, [0, 0], [16, 32]), "
                 "pl.full([16, 8], pl.UINT32, 38))"]),
    # Indices all 3: equal values keep their order; NaN lands where libstdc++'s
    # std::stable_sort puts it (docs/numerics.md).
    "sort32": (("sort32",), [R, 2 * C],
               ["t = pl.load(a, [0, 0], [16, 32])",
                "r = pl.tile.sort32(t, pl.full([16, 32], pl.UINT32, 3))"]),
    "mrgsort": (("mrgsort",), [1, 12 * C],
                ["t = pl.load(b, [0, 0], [1, 32])",
                 "u = pl.load(b, [1, 0], [1, 32])",
                 "p = pl.tile.sort32(pl.concat(t, u), pl.full([1, 64], pl.UINT32, 9))",
                 "m = pl.tile.mrgsort(p[0:1, 0:64], p[0:1, 64:128], "
                 "tmp=pl.create_tile([1, 128], pl.FP32))",
                 "r = pl.concat(m, pl.tile.mrgsort(pl.concat(p, p), block_len=64))"]),
    # A bias row from `a`, then gemv_bias's result (Acc -> Mat -> Bias) as the next bias.
    "bias": (("tile.gemv_bias", "tile.matmul_bias"), [R, C],
             ["m = pl.load(h, [0, 0], [32, 16], target_memory=pl.Mem.Mat)",
              "p = pl.move(pl.tile.transpose_view(m), pl.Mem.Right)",
              "u = pl.load(h, [5, 0], [1, 16], target_memory=pl.Mem.Mat)",
              "t = pl.move(pl.load(a, [2, 0], [1, 32], target_memory=pl.Mem.Mat), pl.Mem.Bias)",
              "acc = pl.tile.gemv_bias(pl.move(u, pl.Mem.Left), p, t)",
              "r = pl.tile.matmul_bias(pl.move(pl.load(h, [0, 0], [16, 16], "
              "target_memory=pl.Mem.Mat), pl.Mem.Left), p, "
              "pl.move(pl.move(acc, pl.Mem.Mat), pl.Mem.Bias))"]),
    "matmul": (("matmul", "matmul_acc", "move", "tile.transpose_view"), [R, R],
               ["m = pl.load(h, [0, 0], [32, 16], target_memory=pl.Mem.Mat)",
                "acc = pl.matmul(pl.move(m, pl.Mem.Left), pl.move(m, pl.Mem.Right), "
                "a_trans=True)",
                "r = pl.matmul_acc(acc, pl.move(m, pl.Mem.Left), "
                "pl.move(pl.tile.transpose_view(pl.tile.transpose_view(m)), pl.Mem.Right), "
                "a_trans=True)"]),
}


# The operators of one backend (A5: TRANDOM), one kernel on a5sim: (operators, output shape,
# statements ending in the lane's INT32 tile `r`).
A5_PLATFORM = "a5sim"
A5_ONLY = {
    "random": (("random",), [R, C], ["r = pl.tile.random(5, 6, 7, 8, 9, 10, [16, 32], "
                                      "dtype=pl.INT32)"]),
    # Two passes over a row (300 > 256 columns), 7 rounds, part of the tile valid.
    "random_passes": (("random",), [9, 300],
                      ["r = pl.tile.random(-1, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 3, "
                       "[9, 304], valid_shape=[9, 300], dtype=pl.INT32, rounds=7)"]),
}
BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
NAN_CODES = {"FP32": [0xFFC00001 - (1 << 32), 0x7F800001],
             "FP16": [0xFE01 - (1 << 16), 0x7C01], "BF16": [0xFF81 - (1 << 16), 0x7F81]}
# The MX products (A5), one kernel on a5sim over FP8 data x ([16, 128], E4M3) and y
# ([128, 32], E5M2), their FP8E8M0 scales sx, sy and an FP32 bias row: (operators, output
# shape, statements ending in the lane's FP32 tile `r`).
MX_MOVES = ["l = pl.move(pl.load(x, [0, 0], [16, 128], target_memory=pl.Mem.Mat), pl.Mem.Left)",
            "ls = pl.move(pl.load(sx, [0, 0], [16, 4], target_memory=pl.Mem.Mat), "
            "pl.Mem.LeftScale)",
            "q = pl.move(pl.load(y, [0, 0], [128, 32], target_memory=pl.Mem.Mat), pl.Mem.Right)",
            "qs = pl.move(pl.load(sy, [0, 0], [4, 32], target_memory=pl.Mem.Mat), "
            "pl.Mem.RightScale)"]
MX = {
    "matmul_mx": (("tile.matmul_mx", "tile.matmul_mx_acc"), [R, C],
                  [*MX_MOVES, "acc = pl.tile.matmul_mx(l, ls, q, qs)",
                   "r = pl.tile.matmul_mx_acc(acc, l, ls, q, qs)"]),
    "matmul_mx_bias": (("tile.matmul_mx_bias",), [R, C],
                       [*MX_MOVES, "t = pl.move(pl.load(bias, [0, 0], [1, 32], "
                                   "target_memory=pl.Mem.Mat), pl.Mem.Bias)",
                        "r = pl.tile.matmul_mx_bias(l, ls, q, qs, t)"]),
}


def mx_operands() -> list[torch.Tensor]:
    """x, sx, y, sy, bias: random data and scales with, at fixed places, an E4M3 NaN (x's
    row 3), an E5M2 infinity (y's column 5), an FP8E8M0 NaN (sx's row 7, group 2), scales
    overflowing FP32 (sx's row 9: 2^127) and underflowing it (sy's column 11: 2^-127)."""
    g = torch.Generator().manual_seed(11)
    x = (torch.randn(16, 128, generator=g) * 3).to(torch.float8_e4m3fn)
    y = (torch.randn(128, 32, generator=g) * 3).to(torch.float8_e5m2)
    sx = torch.randint(110, 140, (16, 4), generator=g, dtype=torch.uint8)
    sy = torch.randint(110, 140, (4, 32), generator=g, dtype=torch.uint8)
    x.view(torch.uint8)[3, 40] = 0x7F
    y.view(torch.uint8)[17, 5] = 0x7C
    sx[7, 2], sx[9, :] = 0xFF, 254
    sy[:, 11] = 0
    bias = torch.randn(1, 32, generator=g)
    bias[0, 20] = float("inf")
    return [x, sx.view(torch.float8_e8m0fnu), y, sy.view(torch.float8_e8m0fnu), bias]


def special_values(dtype: str, seed: int) -> torch.Tensor:
    """A [R, C] input: random values with the special ones of `dtype` at fixed places."""
    g = torch.Generator().manual_seed(seed)
    if dtype in FLOATS:
        x = torch.randn(R, C, generator=g, dtype=torch.float64) * 4
        finfo = torch.finfo(TORCH[dtype])
        specials = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), finfo.tiny / 4,
                    -finfo.tiny / 4, finfo.max, -finfo.max, 1.0, -1.0, 0.5, -2.5, 2.5]
        x.view(-1)[seed:seed + len(specials)] = torch.tensor(specials, dtype=torch.float64)
        x = x.to(TORCH[dtype])
        # NaNs other than the canonical one: a negative one and one with a payload.
        bits = x.view(BITS[x.dtype]).view(-1)
        at = seed + len(specials)
        bits[at:at + 2] = torch.tensor(NAN_CODES[dtype], dtype=torch.int64).to(bits.dtype)
        return x
    info = torch.iinfo(TORCH[dtype])
    x = torch.randint(info.min, info.max + 1, (R, C), generator=g, dtype=torch.int64)
    x.view(-1)[::7] = torch.randint(-3, 40, (len(x.view(-1)[::7]),), generator=g)  # shifts
    specials = [0, -1, 1, info.min, info.max, info.min + 1, -7, 8]
    x.view(-1)[seed:seed + len(specials)] = torch.tensor(specials)
    return x.to(TORCH[dtype])


def kernel_text(name: str, inputs: list[tuple[str, str]], outputs: list[tuple[str, str]],
                body: list[str]) -> str:
    params = [f"{n}: {t}" for n, t in inputs] + [f"{n}: pl.Out[{t}]" for n, t in outputs]
    lines = ["import pypto.language as pl", "", "", "@pl.jit.incore",
             f"def {name}(" + ", ".join(params) + "):"]
    lines += [f"    {b}" for b in body]
    lines.append("    return " + ", ".join(n for n, _ in outputs))
    return "\n".join(lines) + "\n"


def load_kernel(text: str, name: str, tmp_path):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


def differences(got: torch.Tensor, want: torch.Tensor) -> str | None:
    """None when equal bit for bit, else the first difference. FP16 and BF16 NaNs too
    (a computed one is the format's canonical NaN, a copied one keeps its bits); an FP32
    NaN matches any NaN, its sign and payload being the host CPU's."""
    if got.dtype == torch.float32:
        g, w = got.double().numpy(), want.double().numpy()
        same = ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
    elif got.is_floating_point():
        same = (got.view(BITS[got.dtype]) == want.view(BITS[want.dtype])).numpy()
    else:
        same = (got == want).numpy()
    if same.all():
        return None
    index = tuple(int(i) for i in np.argwhere(~same)[0])
    if got.is_floating_point():
        bits = [hex(t.view(BITS[t.dtype])[index].item() & 0xFFFFFFFF) for t in (got, want)]
        return (f"at {list(index)}: simulator {got[index].item()!r} ({bits[0]}), "
                f"torch {want[index].item()!r} ({bits[1]})")
    return f"at {list(index)}: simulator {got[index].item()!r}, torch {want[index].item()!r}"


def test_every_operator_has_a_lane():
    checked = {op for table in (COMMON, FLOAT_ONLY, INT_ONLY, ISA_REDUCE_LANES, COL_ARG_LANES)
               for ops, _ in table.values() for op in ops}
    checked |= {op for table in (MOVEMENT, A5_ONLY, MX) for ops, _, _ in table.values()
                for op in ops}
    assert sorted(set(all_ops()) - checked - set(UNCHECKED)) == []
    assert not {name for name in UNCHECKED if all_ops()[name].isa}


def test_every_operator_has_a_documented_torch_reference():
    for name in all_ops():
        fn = reference(name)
        assert fn.__name__ == name.replace(".", "_") and len(fn.__doc__ or "") > 10, name


# One build each (~15 s): FP32 and INT32 in the default run, the narrower types with -m slow.
DEFAULT_RUN = ("FP32", "INT32")


@pytest.mark.parametrize("dtype", [
    d if d in DEFAULT_RUN else pytest.param(d, marks=pytest.mark.slow) for d in FLOATS + INTS])
def test_each_operator_agrees_with_the_simulator_bit_for_bit(dtype, tmp_path):
    table = lanes(dtype)
    tensor = f"pl.Tensor[[{R}, {C}], pl.{dtype}]"
    body = ["ta = pl.load(a, [0, 0], [16, 32])", "tb = pl.load(b, [0, 0], [16, 32])",
            f"tmp = pl.create_tile([16, 32], pl.{dtype})"]
    body += [f"o_{lane} = pl.store({expr.format(dtype=dtype)}, [0, 0], o_{lane})"
             for lane, (_, expr) in table.items()]
    name = f"per_op_{dtype.lower()}"
    text = kernel_text(name, [("a", tensor), ("b", tensor)],
                       [(f"o_{lane}", tensor) for lane in table], body)
    kernel = load_kernel(text, name, tmp_path)
    args = [special_values(dtype, 0), special_values(dtype, 40)]
    args += [torch.zeros(R, C, dtype=TORCH[dtype]) for _ in table]
    sim, host = sim_and_torch(kernel, args, PLATFORM)
    found = {lane: differences(s, h) for lane, s, h in zip(table, sim[2:], host[2:], strict=True)}
    assert {lane: d for lane, d in found.items() if d is not None} == {}


def test_the_movement_and_matmul_operators_agree_with_the_simulator(tmp_path):
    tensor = f"pl.Tensor[[{R}, {C}], pl.FP32]"
    body = []
    for lane, (_, _, stmts) in MOVEMENT.items():  # each lane's names get its suffix
        body += [re.sub(r"\b(r|t|u|p|m|acc)\b", rf"\1_{lane}", s) for s in stmts]
        body.append(f"o_{lane} = pl.store(r_{lane}, [0, 0], o_{lane})")
    outputs = [(f"o_{lane}", f"pl.Tensor[{shape}, pl.FP32]")
               for lane, (_, shape, _) in MOVEMENT.items()]
    text = kernel_text("per_op_movement", [("a", tensor), ("b", tensor),
                                           ("h", "pl.Tensor[[32, 16], pl.FP16]")],
                       outputs, body)
    kernel = load_kernel(text, "per_op_movement", tmp_path)
    args = [special_values("FP32", 0).nan_to_num(0.0, 1e30, -1e30),
            special_values("FP32", 40).nan_to_num(0.0, 1e30, -1e30),
            torch.randn(32, 16, generator=torch.Generator().manual_seed(3)).half()]
    args += [torch.zeros(*shape) for _, shape, _ in MOVEMENT.values()]
    sim, host = sim_and_torch(kernel, args, PLATFORM)
    found = {lane: differences(s, h)
             for lane, s, h in zip(MOVEMENT, sim[3:], host[3:], strict=True)}
    assert {lane: d for lane, d in found.items() if d is not None} == {}


def test_the_operators_of_one_backend_agree_with_its_simulator(tmp_path):
    body = []
    for lane, (_, _, stmts) in A5_ONLY.items():
        body += [re.sub(r"\br\b", f"r_{lane}", s) for s in stmts]
        body.append(f"o_{lane} = pl.store(r_{lane}, [0, 0], o_{lane})")
    outputs = [(f"o_{lane}", f"pl.Tensor[{shape}, pl.INT32]")
               for lane, (_, shape, _) in A5_ONLY.items()]
    kernel = load_kernel(kernel_text("per_op_a5", [], outputs, body), "per_op_a5", tmp_path)
    args = [torch.zeros(*shape, dtype=torch.int32) for _, shape, _ in A5_ONLY.values()]
    sim, host = sim_and_torch(kernel, args, A5_PLATFORM)
    found = {lane: differences(s, h) for lane, s, h in zip(A5_ONLY, sim, host, strict=True)}
    assert {lane: d for lane, d in found.items() if d is not None} == {}


def test_the_mx_products_agree_with_the_simulator(tmp_path):
    body = []
    for lane, (_, _, stmts) in MX.items():
        body += [re.sub(r"\b(r|t|l|ls|q|qs|acc)\b", rf"\1_{lane}", s) for s in stmts]
        body.append(f"o_{lane} = pl.store(r_{lane}, [0, 0], o_{lane})")
    inputs = [("x", "pl.Tensor[[16, 128], pl.FP8E4M3FN]"), ("sx", "pl.Tensor[[16, 4], pl.FP8E8M0]"),
              ("y", "pl.Tensor[[128, 32], pl.FP8E5M2]"), ("sy", "pl.Tensor[[4, 32], pl.FP8E8M0]"),
              ("bias", "pl.Tensor[[1, 32], pl.FP32]")]
    outputs = [(f"o_{lane}", f"pl.Tensor[{shape}, pl.FP32]") for lane, (_, shape, _) in MX.items()]
    kernel = load_kernel(kernel_text("per_op_mx", inputs, outputs, body), "per_op_mx", tmp_path)
    args = mx_operands() + [torch.zeros(*shape) for _, shape, _ in MX.values()]
    sim, host = sim_and_torch(kernel, args, A5_PLATFORM)
    found = {lane: differences(s, h) for lane, s, h in zip(MX, sim[5:], host[5:], strict=True)}
    assert {lane: d for lane, d in found.items() if d is not None} == {}
    # The special places reached the results: NaNs, infinities and finite values all occur.
    r = sim[5]
    assert r[3].isnan().all() and r[7].isnan().any() and r[:, 5].isinf().any()
    assert r.isfinite().sum() > R * C // 2
