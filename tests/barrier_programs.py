"""Programs of the cross-block barriers (pl.system.syncall / fence / cacheinvalid and the
launch-shape queries), written as source text so that tests can vary the launch, the
barrier and the protocol around it, and check the lines errors name."""

from __future__ import annotations

import torch

import pypto.language as pl

R, C = 16, 64  # the rows each block owns, and the columns

# Each block publishes its rows of `mid` (x + 1), meets the others at a barrier, and reads
# the rows the next block published: out rows of block i = (x + 1) * 2 of block i + 1's rows.
# `{barrier}` is the protocol around the barrier, indented for the block's body.
ROTATE = '''
@pl.program
class Rotate:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[{rows}, 64], pl.FP32],
             sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
             mid: pl.Out[pl.Tensor[[{rows}, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[{rows}, 64], pl.FP32]]) -> tuple[
                 pl.Tensor[[{rows}, 64], pl.FP32], pl.Tensor[[{rows}, 64], pl.FP32]]:
        for i in pl.spmd({width}):
            t = pl.load(x, [i * 16, 0], [16, 64])
            mid = pl.store(pl.add(t, 1.0), [i * 16, 0], mid)
{barrier}
            j = (i + 1) % pl.get_block_num()
            u = pl.load(mid, [j * 16, 0], [16, 64])  # the next block's rows
            out = pl.store(pl.mul(u, 2.0), [i * 16, 0], out)
        return mid, out
'''

# Upstream's conservative publish / consume sequence, as docs/en/user/language/04-scopes.md
# writes it ("Cross-lane ordering is yours too"), `participant_count` the launch's blocks.
UPSTREAM_SEQUENCE = '''\
            participant_count = pl.get_block_num()
            pl.system.cacheinvalid()  # publish all producer cache lines
            pl.system.fence()         # wait until they are visible in GM
            pl.system.syncall(
                mode="soft",
                core_type="mix",
                gm_workspace=sync_ws,
                used_cores=participant_count,
            )                         # synchronize arrival only
            pl.system.cacheinvalid()  # consumer invalidates before reading'''

# The hard barrier of docs/en/user/performance/02-runtime-overhead.md, with the protocol.
HARD_SEQUENCE = '''\
            pl.system.cacheinvalid()
            pl.system.fence()
            pl.system.syncall(core_type="aiv_only")
            pl.system.cacheinvalid()'''


def rotate_source(blocks: int, barrier: str = UPSTREAM_SEQUENCE, width: str | None = None) -> str:
    """ROTATE over `blocks` blocks of 16 rows, launched as pl.spmd(`width`) (default: the
    literal block count), with `barrier` between the publish and the consume."""
    return ROTATE.format(rows=blocks * R, width=width or str(blocks), barrier=barrier)


def rotate_args(blocks: int, seed: int = 0) -> list:
    """x, a zeroed workspace, mid and out for ROTATE over `blocks` blocks."""
    torch.manual_seed(seed)
    return [torch.randn(blocks * R, C), torch.zeros(16, dtype=torch.int32),
            torch.zeros(blocks * R, C), torch.zeros(blocks * R, C)]


def rotate_expected(x: torch.Tensor, blocks: int) -> torch.Tensor:
    """What ROTATE's `out` holds: block i's rows are ((x + 1) * 2) of block i + 1's."""
    return ((x + 1.0) * 2.0).reshape(blocks, R, C).roll(-1, 0).reshape(blocks * R, C)


# ROTATE in tensor-level code (pl.slice / pl.assemble), which TensorToTile lowers to loads
# and stores on each side of the barrier.
TENSOR_ROTATE = '''
@pl.program
class TensorRotate:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
             mid: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> tuple[
                 pl.Tensor[[64, 64], pl.FP32], pl.Tensor[[64, 64], pl.FP32]]:
        for i in pl.spmd(4):
            mid = pl.assemble(mid, pl.add(pl.slice(x, [16, 64], [i * 16, 0]), 1.0),
                              [i * 16, 0])
            pl.system.cacheinvalid()
            pl.system.fence()
            pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=4)
            pl.system.cacheinvalid()
            nxt = pl.slice(mid, [16, 64], [(i + 1) % 4 * 16, 0])
            out = pl.assemble(out, pl.mul(nxt, 2.0), [i * 16, 0])
        return mid, out
'''

# Only block 0 reaches the barrier; the others finish without it.
ONE_BLOCK_BARRIER = '''
@pl.program
class OneBlockBarrier:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.spmd(4):
            t = pl.load(x, [i * 16, 0], [16, 64])
            if i == 0:
                pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=4)
            out = pl.store(pl.mul(t, 2.0), [i * 16, 0], out)
        return out
'''

# Block 0 publishes x + 1 into `mid` after a long computation (`spin` adds of 0), block 1
# reads it after the barrier; blocks 2 and 3 only meet at the barrier.  Without the
# barrier's wait, block 1 would read `mid` before block 0 wrote it.
SLOW_WRITER = '''
@pl.program
class SlowWriter:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32],
             sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
             mid: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> tuple[
                 pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
        for i in pl.spmd(4):
            if i == 0:
                t = pl.load(x, [0, 0], [16, 64])
                for _ in pl.range({spin}):
                    t = pl.add(t, 0.0)
                mid = pl.store(pl.add(t, 1.0), [0, 0], mid)
                pl.system.cacheinvalid()
                pl.system.fence()
            pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=4)
            if i == 1:
                pl.system.cacheinvalid()
                u = pl.load(mid, [0, 0], [16, 64])
                out = pl.store(u, [0, 0], out)
        return mid, out
'''

# Block 1 reads the one row block 0 wrote (16 FP32 values: one 64-byte line of a buffer that
# starts on a line); `{publish}` is what block 0 does after its write, before the barrier,
# `{consume}` what block 1 does after the barrier, before its read.
ONE_LINE = '''
@pl.program
class OneLine:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[2, 16], pl.FP32],
             sync_ws: pl.InOut[pl.Tensor[[16], pl.INT32]],
             mid: pl.Out[pl.Tensor[[2, 16], pl.FP32]],
             out: pl.Out[pl.Tensor[[2, 16], pl.FP32]]) -> tuple[
                 pl.Tensor[[2, 16], pl.FP32], pl.Tensor[[2, 16], pl.FP32]]:
        for i in pl.spmd(2):
            if i == 0:
                t = pl.load(x, [0, 0], [1, 16])
                mid = pl.store(pl.add(t, 1.0), [0, 0], mid)
{publish}
            pl.system.syncall(mode="soft", gm_workspace=sync_ws, used_cores=2)
            if i == 1:
{consume}
                u = pl.load(mid, [0, 0], [1, 16])
                out = pl.store(u, [1, 0], out)
        return mid, out
'''


PUBLISH = """\
                pl.system.cacheinvalid()
                pl.system.fence()"""
CONSUME = "                pl.system.cacheinvalid()"


def one_line_source(publish: str = PUBLISH, consume: str = CONSUME) -> str:
    """ONE_LINE with block 0's `publish` and block 1's `consume` (lines of the branch)."""
    return ONE_LINE.format(publish=publish, consume=consume)


# Three steps of a rotation in place: at each step block i reads the next block's rows of
# `buf`, then writes its own rows with them + 1.  The barrier after the read (`{war}`)
# keeps a block from overwriting rows its neighbour has not read yet; the one after the
# write hands the rows to the next step.
STEPS = '''
@pl.program
class Steps:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             buf: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.spmd(4):
            buf = pl.store(pl.load(x, [i * 16, 0], [16, 64]), [i * 16, 0], buf)
            pl.system.cacheinvalid()
            pl.system.fence()
            pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=ws, used_cores=0)
            pl.system.cacheinvalid()
            for step in pl.range(3):
                v = pl.load(buf, [(i + 1) % 4 * 16, 0], [16, 64])
{war}
                buf = pl.store(pl.add(v, 1.0), [i * 16, 0], buf)
                pl.system.cacheinvalid()
                pl.system.fence()
                pl.system.syncall(core_type="aiv_only", mode="soft", gm_workspace=ws,
                                  used_cores=0)
                pl.system.cacheinvalid()
        return buf
'''
WAR_BARRIER = ("                pl.system.syncall(core_type=\"aiv_only\", mode=\"soft\", "
               "gm_workspace=ws, used_cores=0)")


def steps_source(war: str = WAR_BARRIER) -> str:
    """STEPS with `war` between a step's read and its write, and its workspace `ws`."""
    return STEPS.format(war=war).replace(
        "             buf: pl.Out[", "             ws: pl.InOut[pl.Tensor[[16], pl.INT32]],\n"
        "             buf: pl.Out[")


def parse(source: str, name: str = "<barrier program>"):
    """The program of `source` (pl.parse: errors name its lines)."""
    return pl.parse(source, name)


def line_of(source: str, marker: str) -> int:
    """The line number of the one line of `source` holding `marker`."""
    lines = [n for n, text in enumerate(source.splitlines(), 1) if marker in text]
    assert len(lines) == 1, (marker, lines)
    return lines[0]
