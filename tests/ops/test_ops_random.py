"""`pl.tile.random` / `pl.tensor.random` (upstream's counter-based generator, TRANDOM).

The words are the standard Philox-4x32 blocks (Random123's known answers hold), laid out
as TRANDOM lays them: lane l of each 256-column pass takes counter + l, and the counter
steps by the tile's row stride / 4 per pass.  The instruction is A5's alone: Ascend910B
platforms refuse it at the line.
"""

from __future__ import annotations

import pytest
import torch
from located_errors import entry_error

import pypto.language as pl
from pypto.debug.torch_runtime import random as reference
from pypto.debug.torch_runtime import random_words
from pypto.ir import LoweringError, ParseError, TypeCheckError
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")

# Random123's known answers for philox4x32 with 10 rounds: (key, counter) -> the block.
KNOWN_ANSWERS = [
    ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0xA4093822, 0x299F31D0), (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("key, counter, block", KNOWN_ANSWERS)
def test_lane_zero_of_a_pass_is_the_philox_block_of_the_counter(key, counter, block):
    words = random_words((1, 256), (1, 256), 256, key, counter, 10)[0]
    assert [int(words[c]) for c in (0, 64, 128, 192)] == list(block)


@pl.jit
def tiles(key: pl.Scalar[pl.INT32], a: pl.Out[pl.Tensor], b: pl.Out[pl.Tensor],
          c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a = pl.store(pl.tile.random(key, 0x56789, 0, 0, 0, 0, [16, 40], dtype=pl.INT32),
                     [0, 0], a)
        b = pl.store(pl.tile.random(-1, 7, 0xFFFFFFFF, 0xFFFFFFFF, 5, 0, [4, 520], rounds=7),
                     [0, 0], b)
        c = pl.store(pl.tile.random(3, 4, 5, 6, 7, 8, [8, 64], valid_shape=[5, 33],
                                    dtype=pl.INT32), [0, 0], c)
    return a, b, c


def test_random_tiles_are_the_references_words_on_a5sim():
    a = torch.zeros(16, 40, dtype=torch.int32)
    b = torch.zeros(4, 520, dtype=torch.uint32)
    c = torch.zeros(8, 64, dtype=torch.int32)
    tiles(0x1234, a, b, c, config=RunConfig(platform="a5sim"))
    assert torch.equal(a, reference(0x1234, 0x56789, 0, 0, 0, 0, [16, 40], dtype="INT32"))
    want = reference(-1, 7, 0xFFFFFFFF, 0xFFFFFFFF, 5, 0, [4, 520], rounds=7)
    assert torch.equal(b.view(torch.int32), want.view(torch.int32))
    want = reference(3, 4, 5, 6, 7, 8, [8, 64], [5, 33], "INT32")
    assert torch.equal(c[:5, :33], want[:5, :33])
    # Rows of 40 INT32 are 40 elements apart on chip: row 1 starts 40 / 4 counters on.
    row1 = random_words((1, 40), (1, 40), 40, (0x1234, 0x56789), (10, 0, 0, 0), 10)
    assert (a[1].numpy().view("uint32") == row1[0]).all()


@pl.jit
def in_a_block(out: pl.Out[pl.Tensor], again: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(pl.random(1, 2, 3, 4, 5, 6, [16, 64], dtype=pl.INT32), 0)
        again[:] = pl.tensor.random(1, 2, 3, 4, 5, 6, [16, 64], dtype=pl.INT32)
    return out, again


def test_a_random_tensor_in_a_pl_at_block_is_the_tiles():
    out, again = torch.zeros(16, 64, dtype=torch.int32), torch.zeros(16, 64, dtype=torch.int32)
    in_a_block(out, again, config=RunConfig(platform="a5sim"))
    want = reference(1, 2, 3, 4, 5, 6, [16, 64], dtype="INT32")
    assert torch.equal(out, want) and torch.equal(again, want)


def test_a2a3_platforms_refuse_it_at_its_line():
    with pytest.raises(LoweringError, match="TRANDOM, an instruction Ascend910B does not have") \
            as info:
        in_a_block(torch.zeros(16, 64, dtype=torch.int32), torch.zeros(16, 64, dtype=torch.int32),
                   config=RunConfig(platform="a2a3sim"))
    assert "test_ops_random.py" in str(info.value)


_IN_A_KERNEL = "    with pl.at(level=pl.Level.CORE_GROUP):\n        t = {}\n"


@pytest.mark.parametrize("call, message", [
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [16, 32], dtype=pl.FP32)",
     "dtype must be pl.INT32 or pl.UINT32"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [16, 32], rounds=8)", "rounds must be 7 or 10"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [32])", "must be [rows, cols]"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [16, 1])", "TRANDOM writes row-major tiles"),
    ("pl.tile.random(1.5, 2, 3, 4, 5, 6, [16, 32])", "key0 is a 32-bit integer word"),
    ("pl.tile.random(1, 2, 3, 4, 5, 6, [16, 32], valid_shape=[17, 32])",
     "must be constant extents that fit in the tile"),
])
def test_a_wrong_random_tile_is_refused_at_its_line(call, message):
    error, lines = entry_error(_IN_A_KERNEL.format(call), (ParseError, TypeCheckError))
    assert message in str(error)
    assert "pl.tile.random" in lines[error.span.line - 1]
