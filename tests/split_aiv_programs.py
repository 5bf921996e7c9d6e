"""Kernels with upstream's lane regions (`for aiv_id in pl.split_aiv(2, mode=...)`,
`pl.aiv_shard`, `pl.aic_gather`), written as source text so that tests can vary the mode
and check the lines errors name."""

from __future__ import annotations

N = 4  # products through the pipe

# C2V: the cube multiplies; each region reads the product on the vector lanes
# (`pl.aiv_shard`), adds the bias part of its lane and stores it.  UP_DOWN / LEFT_RIGHT:
# each lane its half; NONE: each lane the whole product, stored in its own copy of `out`.
SHARD = '''
@pl.program
class Shard:
    @pl.function(type=pl.FunctionType.InCore)
    def mixed(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
              bias: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[{O}]) -> {O}:
        bm = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        for i in pl.range({n}):
            am = pl.load(a, [i * 16, 0], [16, 32], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(bm, pl.Mem.Right))
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.{mode}):
                t = pl.aiv_shard(acc)
                r = pl.add(t, pl.load(bias, [{r0}, {c0}], [{rows}, {cols}]))
                out = pl.store(r, [{out_r0} + i * 16 + {r0}, {c0}], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             bias: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[{O}]) -> {O}:
        out = self.mixed(a, b, bias, out)
        return out
'''

# Per mode: the lane's part ([rows, cols] at [r0, c0]) and where its rows of `out` start.
_PARTS = {"UP_DOWN": ("8", "16", "aiv_id * 8", "0", "0"),
          "LEFT_RIGHT": ("16", "8", "0", "aiv_id * 8", "0"),
          "NONE": ("16", "16", "0", "0", f"aiv_id * {N * 16}")}


def shard_out_rows(mode: str, n: int = N) -> int:
    return n * 16 * (2 if mode == "NONE" else 1)


def shard_source(mode: str, n: int = N) -> str:
    rows, cols, r0, c0, out_r0 = _PARTS[mode]
    return SHARD.format(n=n, mode=mode, rows=rows, cols=cols, r0=r0, c0=c0,
                        out_r0=out_r0.replace(str(N * 16), str(n * 16)),
                        O=f"pl.Tensor[[{shard_out_rows(mode, n)}, 16], pl.FP32]")


# C2V and V2C: the lanes double the product they read and hand it back as FP16
# (`pl.aic_gather`); the cube multiplies the gathered tile by `w` and stores it.
ROUND_TRIP = '''
@pl.program
class RoundTrip:
    @pl.function(type=pl.FunctionType.InCore)
    def mixed(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
              w: pl.Tensor[[16, 16], pl.FP16],
              out: pl.Out[pl.Tensor[[{n} * 16, 16], pl.FP32]]
              ) -> pl.Tensor[[{n} * 16, 16], pl.FP32]:
        bm = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        wm = pl.load(w, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        for i in pl.range({n}):
            am = pl.load(a, [i * 16, 0], [16, 32], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(bm, pl.Mem.Right))
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.{mode}):
                v = pl.cast(pl.mul(pl.aiv_shard(acc), 2.0), pl.FP16)
                g = pl.aic_gather(v)
            y = pl.matmul(pl.move(g, pl.Mem.Left), pl.move(wm, pl.Mem.Right))
            out = pl.store(y, [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{n} * 16, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             w: pl.Tensor[[16, 16], pl.FP16],
             out: pl.Out[pl.Tensor[[{n} * 16, 16], pl.FP32]]) -> pl.Tensor[[{n} * 16, 16], pl.FP32]:
        out = self.mixed(a, b, w, out)
        return out
'''


def round_trip_source(mode: str, n: int = N) -> str:
    return ROUND_TRIP.format(n=n, mode=mode)


# Two regions of two modes (two rings) in a branch of a loop: a NONE region reads the
# product and hands it back as FP16, the cube multiplies it by `w`, an UP_DOWN region
# stores each lane's half of that; only the odd products.
TWO_REGIONS = '''
@pl.program
class TwoRegions:
    @pl.function(type=pl.FunctionType.InCore)
    def mixed(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
              w: pl.Tensor[[16, 16], pl.FP16],
              out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
        bm = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        wm = pl.load(w, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        for i in pl.range(4):
            if i % 2 == 1:
                am = pl.load(a, [i * 16, 0], [16, 32], target_memory=pl.Mem.Mat)
                acc = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(bm, pl.Mem.Right))
                for _ in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                    v = pl.cast(pl.aiv_shard(acc), pl.FP16)
                    g = pl.aic_gather(v)
                y = pl.matmul(pl.move(g, pl.Mem.Left), pl.move(wm, pl.Mem.Right))
                for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                    h = pl.aiv_shard(y)
                    out = pl.store(h, [i * 16 + lane * 8, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             w: pl.Tensor[[16, 16], pl.FP16],
             out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
        out = self.mixed(a, b, w, out)
        return out
'''


# A task-parallel NONE region and no cube work: each lane doubles its own rows of `x`.
LANES_ONLY = '''
@pl.program
class LanesOnly:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 16], pl.FP32],
          out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            t = pl.load(x, [aiv_id * 16, 0], [16, 16])
            out = pl.store(pl.add(t, t), [aiv_id * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
        out = self.k(x, out)
        return out
'''


# A NONE region that only gathers: both lanes double the same rows of `x` and hand them to
# the cube (lane 0's tile), which multiplies them by `w`; no cube tile is read in a region.
GATHER_ONLY = '''
@pl.program
class GatherOnly:
    @pl.function(type=pl.FunctionType.InCore)
    def mixed(self, x: pl.Tensor[[{n} * 16, 16], pl.FP16], w: pl.Tensor[[16, 16], pl.FP16],
              out: pl.Out[pl.Tensor[[{n} * 16, 16], pl.FP32]]
              ) -> pl.Tensor[[{n} * 16, 16], pl.FP32]:
        wm = pl.load(w, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        for i in pl.range({n}):
            for _ in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                v = pl.mul(pl.load(x, [i * 16, 0], [16, 16]), 2.0)
                g = pl.aic_gather(v)
            y = pl.matmul(pl.move(g, pl.Mem.Left), pl.move(wm, pl.Mem.Right))
            out = pl.store(y, [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{n} * 16, 16], pl.FP16], w: pl.Tensor[[16, 16], pl.FP16],
             out: pl.Out[pl.Tensor[[{n} * 16, 16], pl.FP32]]) -> pl.Tensor[[{n} * 16, 16], pl.FP32]:
        out = self.mixed(x, w, out)
        return out
'''


def gather_only_source(n: int = N) -> str:
    return GATHER_ONLY.format(n=n)
