"""Programs of the explicit cross-core pipe (pl.FunctionType.Group of an AIC and an AIV
function, pl.tpush_to_aiv / tpop_from_aic / tfree_to_aic and the V2C forms), written as
source text so that tests can vary the ring, the split and the direction, and check the
lines errors name."""

from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.ir import ParseError

ROWS, K, COLS = 16, 32, 16

# C2V: the cube multiplies and pushes each product, the vector lanes pop it, add the bias
# and store (lane i its half with a split).  `n` products through a ring of `slots`.  With no
# split, lane 1 takes no part in the pipe (its pops are zeros, as pto-isa's CPU model):
# each lane stores into its own half of `out`, rows [lane * n * 16, (lane + 1) * n * 16).
C2V = '''
@pl.program
class C2V:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=1024, slot_num={slots})
        bm = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        for i in pl.range({n}):
            am = pl.load(a, [i * 16, 0], [16, 32], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(bm, pl.Mem.Right))
            pl.tpush_to_aiv(acc, split={split})

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, bias: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[{O}]) -> {O}:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num={slots})
        lane = pl.tensor.get_subblock_idx()
        for i in pl.range({n}):
            t: pl.Tile[[{rows}, {cols}], pl.FP32] = pl.tpop_from_aic(split={split})
            bt = pl.load(bias, [{r0}, {c0}], [{rows}, {cols}])
            r = pl.add(t, bt)
            pl.tfree_to_aic(t)
            out = pl.store(r, [{out_r0} + i * 16 + {r0}, {c0}], out)
        return out

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
              bias: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[{O}]) -> {O}:
        self.cube(a, b)
        out = self.vector(bias, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             bias: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[{O}]) -> {O}:
        out = self.group(a, b, bias, out)
        return out
'''

# Per split: the tile a lane pops ([rows, cols]) and where its part starts ([r0, c0]).
_HALVES = {0: ("16", "16", "0", "0"), 1: ("8", "16", "lane * 8", "0"),
           2: ("16", "8", "0", "lane * 8")}


def c2v_out_rows(n: int, split: int) -> int:
    """Rows of the C2V program's `out`: each lane's own copy without a split."""
    return n * 16 * (2 if split == 0 else 1)


def c2v_source(n: int = 3, slots: int = 2, split: int = 0) -> str:
    rows, cols, r0, c0 = _HALVES[split]
    return C2V.format(n=n, slots=slots, split=split, rows=rows, cols=cols, r0=r0, c0=c0,
                      out_r0=f"lane * {n * 16}" if split == 0 else "0",
                      O=f"pl.Tensor[[{c2v_out_rows(n, split)}, 16], pl.FP32]")


# V2C: the vector lanes load rows of `x`, scale them and push them (lane i its half with a
# split); the cube pops each [16, 32] tile and multiplies it by `b`.
V2C = '''
@pl.program
class V2C:
    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, x: pl.Tensor[[{n} * 16, 32], pl.FP16]):
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=1024, slot_num={slots})
        lane = pl.tensor.get_subblock_idx()
        for i in pl.range({n}):
            t = pl.load(x, [i * 16 + {row0}, {col0}], [{push_rows}, {push_cols}])
            pl.tpush_to_aic(pl.mul(t, 2.0), split={split})

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, b: pl.Tensor[[32, 16], pl.FP16],
             out: pl.Out[{O}]) -> {O}:
        pl.aic_initialize_pipe(dir_mask=2, slot_size=1024, slot_num={slots})
        bm = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        for i in pl.range({n}):
            xm: pl.Tile[[16, 32], pl.FP16] = pl.tpop_from_aiv(split={split})
            acc = pl.matmul(pl.move(xm, pl.Mem.Left), pl.move(bm, pl.Mem.Right))
            pl.tfree_to_aiv(xm)
            out = pl.store(acc, [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Group)
    def group(self, x: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
              out: pl.Out[{O}]) -> {O}:
        self.vector(x)
        out = self.cube(b, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             out: pl.Out[{O}]) -> {O}:
        out = self.group(x, b, out)
        return out
'''

_V2C_WINDOWS = {0: ("16", "32", "0", "0"), 1: ("8", "32", "lane * 8", "0"),
                2: ("16", "16", "0", "lane * 16")}


def v2c_source(n: int = 3, slots: int = 2, split: int = 0) -> str:
    push_rows, push_cols, row0, col0 = _V2C_WINDOWS[split]
    return V2C.format(n=n, slots=slots, split=split, O=f"pl.Tensor[[{n * 16}, 16], pl.FP32]",
                      push_rows=push_rows, push_cols=push_cols, row0=row0, col0=col0)


C2V_GROUP_CALL = "        out = self.group(a, b, bias, out)\n"
C2V_CLUSTER = ("        with pl.cluster():\n"
               "            self.cube(a, b)\n"
               "            out = self.vector(bias, out)\n")
V2C_GROUP_CALL = "        out = self.group(x, b, out)\n"
V2C_CLUSTER = ("        with pl.cluster():\n"
               "            self.vector(x)\n"
               "            out = self.cube(b, out)\n")


def without_group(source: str) -> str:
    """`source` without its hand-written Group function."""
    start = source.index("    @pl.function(type=pl.FunctionType.Group)")
    end = source.index("    @pl.function(type=pl.FunctionType.Orchestration)")
    return source[:start] + source[end:]


def c2v_cluster(n: int = 3, slots: int = 2, split: int = 0) -> str:
    """The C2V program with its group written as a `with pl.cluster():` block."""
    return without_group(c2v_source(n, slots, split)).replace(C2V_GROUP_CALL, C2V_CLUSTER)


def v2c_cluster(n: int = 3, slots: int = 2, split: int = 0) -> str:
    """The V2C program with its group written as a `with pl.cluster():` block."""
    return without_group(v2c_source(n, slots, split)).replace(V2C_GROUP_CALL, V2C_CLUSTER)


def parse(source: str, name: str = "<pipe program>"):
    """The program of `source` (pl.parse: errors name its lines)."""
    return pl.parse(source, name)


def parse_error(source: str, marker: str, match: str):
    """The ParseError of parsing `source`, matching `match`: it names the line holding
    `marker`."""
    lines = source.splitlines()
    with pytest.raises(ParseError, match=match) as info:
        parse(source)
    assert marker in lines[info.value.span.line - 1], lines[info.value.span.line - 1]
    return info.value
