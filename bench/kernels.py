"""The kernels the benchmarks run, in a file so the JIT can read their source.

Shapes are module constants so each benchmark can rebind a kernel at another size
(`with_shapes`) without repeating its body.
"""

from __future__ import annotations

import pypto.language as pl


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = a + b: the small kernel (and the elementwise throughput kernel)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = a @ b + bias in one mixed block: the matmul's value crosses to the vector work
    through a scratch tensor in global memory, the cube side first."""
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


@pl.jit
def matmul_bias_piped(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    """The same block as upstream's mixed kernel: pl.split makes it a group of the cube and
    the two vector lanes, run at once, the value crossing through the cross-core pipe."""
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)
        out[:] = pl.add(acc, bias)
    return out


BLOCKS = 8


@pl.jit
def add_blocks(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = a + b as BLOCKS tasks over row blocks, as a multi-core kernel is written: each
    task is given its rows only, so the tasks run at once on the simulated cores."""
    R: pl.constexpr = a.shape[0] // BLOCKS
    pl.static_assert(a.shape[0] % BLOCKS == 0, "rows must divide into BLOCKS blocks")
    for i in pl.parallel(BLOCKS):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[i * R:(i + 1) * R, :] = pl.add(a[i * R:(i + 1) * R, :], b[i * R:(i + 1) * R, :])
    return out


@pl.jit
def softmax(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """Row softmax from primitives: max, exp(x - max), sum, divide."""
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.row_expand_expdif(x, pl.row_max(x))
        out[:] = pl.row_expand_div(e, pl.row_sum(e))
    return out


@pl.jit
def matmul(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    """c = a @ b (FP16 inputs, FP32 result: products exact, accumulated in FP32)."""
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


@pl.jit
def transformer_block(x: pl.Tensor, gamma: pl.Tensor, w: pl.Tensor,
                      norm: pl.Out[pl.Tensor], probs: pl.Out[pl.Tensor],
                      act: pl.Out[pl.Tensor], act16: pl.Out[pl.Tensor],
                      proj: pl.Out[pl.Tensor]):
    """The large kernel: RMSNorm, softmax, a GELU-like activation and a matmul, four
    InCore kernels, forty-odd operators."""
    with pl.at(level=pl.Level.CORE_GROUP):
        sq = pl.mul(x, x)
        mean = pl.mul(pl.row_sum(sq), 1.0 / 64)
        rstd = pl.rsqrt(pl.add(mean, 1e-6))
        norm[:] = pl.col_expand_mul(pl.row_expand_mul(x, rstd), gamma)
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.row_expand_expdif(norm, pl.row_max(norm))
        probs[:] = pl.row_expand_div(e, pl.row_sum(e))
    with pl.at(level=pl.Level.CORE_GROUP):
        cube = pl.mul(pl.mul(norm, norm), norm)
        inner = pl.mul(pl.add(norm, pl.mul(cube, 0.044715)), 0.7978845608)
        t = pl.sub(pl.mul(pl.recip(pl.add(pl.exp(pl.mul(inner, -2.0)), 1.0)), 2.0), 1.0)
        gelu = pl.mul(pl.mul(norm, 0.5), pl.add(t, 1.0))
        act[:] = gelu
        act16[:] = pl.cast(gelu, pl.FP16)
    with pl.at(level=pl.Level.CORE_GROUP):
        proj[:] = pl.matmul(act16, w)
    return norm, probs, act, act16, proj


TASKS = 10_000
WIDTH = 8


@pl.jit
def many_tasks(x: pl.Tensor[[TASKS, WIDTH], pl.FP32],
               out: pl.Out[pl.Tensor[[TASKS, WIDTH], pl.FP32]]):
    """One tiny task per row: the scheduling benchmark's graph (disjoint rows, so the
    rows of `out` opt out of inference, as tests/deps/test_large_graph.py does)."""
    for i in pl.parallel(TASKS):
        with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[out]):
            out = pl.store(pl.load(x, [i, 0], [1, WIDTH]), [i, 0], out)
    return out
