"""The bad-input catalogue: every invalid program gets a clear error at the user's line.

Each case is a kernel written to its own file and imported, so the error must name that
file and the offending line; the message must say what is wrong and what to do, and no
traceback may come from pypto's internals (the exception type is one of ours).
"""

from __future__ import annotations

import importlib.util
import textwrap
from dataclasses import dataclass

import pytest
import torch
from catalogue import assert_user_facing

from pypto.ir import CapacityError, LoweringError, ParseError, PyptoError, TypeCheckError
from pypto.runtime import RunConfig

HEADER = "import pypto.language as pl\nimport torch\n\n"


@dataclass(frozen=True)
class Case:
    source: str  # defines `kernel`; the line marked `# <-` is the one the error must name
    args: tuple  # shapes/dtypes of the call's tensors: ((16, 128), torch.float32), ...
    error: type
    message: str  # a substring the message must contain (the what-to-do part)
    platform: str = "a2a3sim"


def T(*shape, dtype=torch.float32):
    return (shape, dtype)


F16 = torch.float16
BF16 = torch.bfloat16
I32 = torch.int32

CASES = {
    "operator_outside_pl_at": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.exp(a)  # <-
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = t
    return out
""", (T(16, 128), T(16, 128)), ParseError, "pl.at"),
    "shape_mismatch": Case("""
@pl.jit
def kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)  # <-
    return out
""", (T(16, 128), T(32, 128), T(16, 128)), TypeCheckError, "same shape"),
    "dtype_mismatch": Case("""
@pl.jit
def kernel(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)  # <-
    return out
""", (T(16, 128), T(16, 128, dtype=F16), T(16, 128)), TypeCheckError, "pl.cast"),
    "exp_of_integers": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)  # <-
    return out
""", (T(16, 128, dtype=I32), T(16, 128, dtype=I32)), TypeCheckError, "supported: BF16"),
    "tensor_plus_tile": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    u = pl.add(t, a)  # <-
    out = pl.store(u, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "load the tensor into a tile"),
    "unknown_keyword": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128], padding=0)  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "parameters: tensor, offsets"),
    "missing_argument": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "needs `shapes`"),
    "too_many_arguments": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.exp(a, a)  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "at most 1 argument"),
    "offsets_not_a_list": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, 0, [16, 128])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "must be a list like [i, 0]"),
    "load_out_of_bounds": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [8, 0], [16, 128])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "exceeds [16, 128]"),
    "store_out_of_bounds": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(t, [0, 64], out)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "exceeds [16, 128]"),
    "store_dtype_mismatch": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(t, [0, 0], out)  # <-
    return out
""", (T(16, 128, dtype=F16), T(16, 128)), TypeCheckError, "pl.cast the tile first"),
    "assign_dtype_mismatch": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)  # <-
    return out
""", (T(16, 128, dtype=F16), T(16, 128)), TypeCheckError, "pl.cast the value"),
    "window_width_mismatch": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[0:8, :] = pl.exp(a)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "the window is 8 wide"),
    "strided_window": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[::2] = pl.exp(a)  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "write a window with slices"),
    "nested_pl_at": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        with pl.at(level=pl.Level.CORE_GROUP):  # <-
            out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "cannot be nested"),
    "pl_at_without_level": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at():  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "level=pl.Level.CORE_GROUP"),
    "pl_at_in_a_kernel": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "already one kernel"),
    "other_context_manager": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with open("x"):  # <-
        pass
    return out
""", (T(16, 128), T(16, 128)), ParseError, "pl.at"),
    "python_range_loop": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in range(4):  # <-
        pass
    return out
""", (T(16, 128), T(16, 128)), ParseError, "pl.range"),
    "zero_step": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    for i in pl.range(0, 4, 0):  # <-
        pass
    return out
""", (T(16, 128), T(16, 128)), ParseError, "step must be positive"),
    "unroll_with_runtime_bounds": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT64]):
    for i in pl.unroll(n):  # <-
        pass
    return out
""", (T(16, 128), T(16, 128), 4), ParseError, "use pl.range"),
    "loop_changes_a_type": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    for i in pl.range(2):
        t = pl.cast(t, pl.FP16)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "use a new name"),
    "while_true": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    while True:  # <-
        pass
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "is known at compile time"),
    "if_on_a_float_value": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor], x: pl.Scalar[pl.FP32]):
    if x:  # <-
        pass
    return out
""", (T(16, 128), T(16, 128), 1.5), TypeCheckError, "write a comparison as the condition"),
    "undefined_name": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [ROWS, 128])  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "define it before the kernel"),
    "unpack_count": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    x, y = pl.load(a, [0, 0], [16, 128])  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "cannot unpack"),
    "plain_python_function": Case("""
def helper(x):
    return x

@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = helper(a)  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "@pl.jit.incore"),
    "chained_assignment": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = u = pl.load(a, [0, 0], [16, 128])  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "chained assignment"),
    "unknown_cast_mode": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP16, mode="nearest")  # <-
    return out
""", (T(16, 128), T(16, 128, dtype=F16)), TypeCheckError, "use one of none, rint"),
    "cast_to_a_non_dtype": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, 16)  # <-
    return out
""", (T(16, 128), T(16, 128, dtype=F16)), TypeCheckError, "pl dtype"),
    "static_assert": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    pl.static_assert(1 == 2, "rows must be even")  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "rows must be even"),
    "star_args": Case("""
@pl.jit.incore
def kernel(*args):  # <-
    return args
""", (T(16, 128),), ParseError, "plain positional parameters"),
    "out_scalar": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, n: pl.Out[pl.Scalar[pl.INT64]]):  # <-
    return a
""", (T(16, 128), 3), TypeCheckError, "not a tensor"),
    "bad_annotation": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor[16, pl.FP32], out: pl.Out[pl.Tensor]):  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "pl.Tensor[[d0, d1, ...], dtype]"),
    "tile_leaves_pl_at": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(a, [0, 0], [16, 128])  # <-
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), LoweringError, "only tensors can leave a pl.at block"),
    "tile_over_capacity": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [512, 512])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(512, 512), T(512, 512)), CapacityError, "smaller tiles"),
    "cast_without_a_path": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.UINT32)  # <-
    return out
""", (T(16, 128), T(16, 128, dtype=torch.uint32)), LoweringError, "no conversion from FP32 "
         "to UINT32 on Ascend910B"),
    "kernel_called_inside_pl_at": Case("""
@pl.jit.incore
def inner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(t, [0, 0], out)
    return out

@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = inner(a, out)  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "each kernel call is its own task"),
    "kernel_argument_count": Case("""
@pl.jit.incore
def inner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(t, [0, 0], out)
    return out

@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = inner(a)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "takes 2 arguments"),
}


# Atomics with illegal dtypes, deps on values that are not tasks, windows outside their
# tensor or tile, operands in the wrong buffer, and casts with no path.
CASES.update({
    "bf16_atomic_add_on_a5": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.InOut[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(t, [0, 0], out, atomic=pl.AtomicType.Add)  # <-
    return out
""", (T(16, 128, dtype=BF16), T(16, 128, dtype=BF16)), TypeCheckError,
        "accumulate into an FP32 tensor", platform="a5sim"),
    "uint8_atomic_add": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.InOut[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(t, [0, 0], out, atomic=pl.AtomicType.Add)  # <-
    return out
""", (T(16, 128, dtype=torch.uint8), T(16, 128, dtype=torch.uint8)), TypeCheckError,
        "accumulate into an FP32 tensor"),
    "deps_on_a_tensor": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, deps=[a]):  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "bind one with `with pl.at(...) as tid:`"),
    "deps_on_a_scalar": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.Scalar[pl.INT64]):
    with pl.at(level=pl.Level.CORE_GROUP, deps=[n]):  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128), 3), ParseError, "bind one with `with pl.at(...) as tid:`"),
    "deps_not_a_list": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP) as first:
        out[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP, deps=first):  # <-
        out[:] = pl.exp(out)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "deps=[tid, ...]"),
    "deps_on_a_later_task": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, deps=[later]):  # <-
        out[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP) as later:
        out[:] = pl.exp(out)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "bind one with `with pl.at(...) as tid:`"),
    "deps_on_an_expression": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP) as first:
        out[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP, deps=[first + 1]):  # <-
        out[:] = pl.exp(out)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "bind one with `with pl.at(...) as tid:`"),
    "task_id_used_as_a_value": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP) as first:
        out[:] = pl.exp(a)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(out, first)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "can only be used in deps=[...]"),
    "no_dep_args_on_a_constant": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[3]):  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "must be tensors of this function"),
    "submit_inside_a_kernel": Case("""
@pl.jit.incore
def inner(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = pl.store(pl.load(a, [0, 0], [16, 128]), [0, 0], out)
    return out

@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out, tid = pl.submit(inner, a, out)  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "from a @pl.jit (orchestration) function"),
    "negative_block_count": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.spmd(-2):  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, "cannot be negative"),
    "name_hint_not_an_identifier": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="two words"):  # <-
        out[:] = pl.exp(a)
    return out
""", (T(16, 128), T(16, 128)), ParseError, 'e.g. name_hint="stage1"'),
    "load_at_a_negative_offset": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [-1, 0], [16, 128])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "load a tile with valid_shape"),
    "load_past_the_last_column": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 64], [16, 128])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "every offset must lie in [0, size - window]"),
    "tile_slice_out_of_bounds": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    u = t[8:24, :]  # <-
    out = pl.store(u, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "every offset must lie in [0, size - window]"),
    "tensor_window_out_of_bounds": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[8:24, :] = pl.exp(a[0:16, :])  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "every offset must lie in [0, size - window]"),
    "valid_shape_larger_than_the_tile": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128], valid_shape=[32, 128])  # <-
    out = pl.store(t, [0, 0], out)
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "must fit in the tile [16, 128]"),
    "row_sum_without_scratch": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    s = pl.row_sum(t)  # <-
    out = pl.store(s, [0, 0], out)
    return out
""", (T(16, 128), T(16, 1)), TypeCheckError, "pl.create_tile([16, 128], pl.FP32)"),
    "matmul_of_vec_tiles": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [64, 64])
    c = pl.matmul(t, t)  # <-
    out = pl.store(c, [0, 0], out)
    return out
""", (T(64, 64), T(64, 64)), LoweringError, "target_memory=pl.Mem.Mat"),
    "left_to_vec": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    lhs = pl.move(t, pl.Mem.Left)
    v = pl.move(lhs, pl.Mem.Vec)  # <-
    out = pl.store(pl.exp(v), [0, 0], out)
    return out
""", (T(64, 64), T(64, 64)), LoweringError, "pl.move from Left to Vec is not a data path"),
    "matmul_result_over_acc_capacity": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [256, 64], target_memory=pl.Mem.Mat)
    u = pl.load(a, [0, 0], [64, 256], target_memory=pl.Mem.Mat)
    c = pl.matmul(pl.move(t, pl.Mem.Left), pl.move(u, pl.Mem.Right))  # <-
    out = pl.store(c, [0, 0], out)
    return out
""", (T(256, 256), T(256, 256)), CapacityError, "use smaller tiles"),
    "int8_to_fp32_on_a2a3": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(a, pl.FP32)  # <-
    return out
""", (T(16, 128, dtype=torch.int8), T(16, 128)), LoweringError,
        "INT8 converts natively to FP16 on Ascend910B"),
    "bitwise_and_of_floats": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.and_(a, a)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "convert with pl.cast(x, dtype) first"),
    "float_scalar_with_integers": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 0.5)  # <-
    return out
""", (T(16, 128, dtype=I32), T(16, 128, dtype=I32)), TypeCheckError,
        "use an integer constant"),
    "select_with_a_float_mask": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.sel(a, a, a)  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "must be BOOL (from pl.cmp)"),
})


# Found by probing as an adversarial user would (issue 22).
CASES.update({
    "tensor_parameter_rebound_to_a_number": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    out = 0  # <-
    return out
""", (T(16, 128), T(16, 128)), TypeCheckError, "write into the tensor with `out[:] = ...`"),
    "kernel_returning_a_tile": Case("""
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    return t  # <-
""", (T(16, 128), T(16, 128)), TypeCheckError, "pl.store the tile into a pl.Out tensor"),
    "long_infix_chain": Case(f"""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = {' + '.join(['a'] * 1500)}  # <-
    return out
""", (T(16, 128), T(16, 128)), ParseError, "name intermediate results in statements"),
    "empty_tensor": Case("""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):  # <-
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out
""", (T(0, 128), T(0, 128)), TypeCheckError, "argument a is an empty tensor [0, 128]"),
})


def _write(tmp_path, name: str, source: str):
    path = tmp_path / f"bad_{name}.py"
    text = HEADER + textwrap.dedent(source).lstrip("\n")
    path.write_text(text)
    marked = [i for i, line in enumerate(text.splitlines(), start=1) if "# <-" in line]
    return str(path), marked[0] if marked else None


def _import(name: str, path: str):
    """Import the case's module (annotations are evaluated here, at definition)."""
    spec = importlib.util.spec_from_file_location(f"bad_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _args(args):
    return [torch.zeros(*a[0], dtype=a[1]) if isinstance(a, tuple) else a for a in args]


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_program_is_refused_at_the_users_line(name, tmp_path):
    case = CASES[name]
    path, line = _write(tmp_path, name, case.source)
    with pytest.raises(PyptoError) as info:
        _import(name, path).kernel(*_args(case.args), config=RunConfig(platform=case.platform))
    error = info.value
    assert type(error) is case.error, f"{type(error).__name__}: {error}"
    assert case.message in str(error), str(error)
    assert error.span is not None and error.span.file == path, str(error)
    assert error.span.line == line, str(error)
    assert str(error).startswith(f"{path}:{line}: ")
    assert_user_facing(error)  # no traceback from pypto's internals underneath


def _run(name, tmp_path, source, *args):
    path, _ = _write(tmp_path, name, source)
    return _import(name, path).kernel(*args)


def test_a_kernel_without_return_hands_back_what_it_stored(tmp_path):
    a, out = torch.randn(16, 128), torch.zeros(16, 128)
    result = _run("without_return", tmp_path, """
@pl.jit.incore
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 128])
    out = pl.store(pl.add(t, t), [0, 0], out)
""", a, out)
    assert result is out and torch.equal(out, a + a)


def test_a_chain_just_below_the_nesting_limit_runs(tmp_path):
    a, out = torch.ones(16, 128), torch.zeros(16, 128)
    _run("long_chain", tmp_path, f"""
@pl.jit
def kernel(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = {' + '.join(['a'] * 90)}
    return out
""", a, out)
    assert torch.equal(out, torch.full((16, 128), 90.0))


def test_catalogue_has_at_least_forty_cases_with_the_call_time_ones():
    from test_bad_calls import CALL_CASES

    assert len(CASES) + len(CALL_CASES) >= 40
