"""A pl.FunctionType.Group task on the simulators: the cube function and the vector
function's two lanes run at once (pto/pipe.hpp), handing tiles through bounded FIFO rings.
Both directions, rings of 1 / 2 / 4 slots that fill (more tiles than slots), each split;
the values are exact (bit for bit) against torch, whatever order the threads ran in; a
deadlock or a ring left holding tiles is a KernelError naming the operator and the lane."""

from __future__ import annotations

import pytest
import torch
from pipe_programs import c2v_out_rows, c2v_source, parse, v2c_source

from pypto import ir
from pypto.runtime.errors import KernelError

N = 5  # tiles through each ring: more than its slots, so producers wait for frees


def _compile(source: str, platform: str):
    return ir.compile(parse(source), dump_passes=False, platform=platform)


def _c2v(n: int, slots: int, split: int, platform: str):
    torch.manual_seed(split * 10 + slots)
    a = torch.randn(n * 16, 32, dtype=torch.float16)
    b = torch.randn(32, 16, dtype=torch.float16)
    bias = torch.randn(16, 16)
    out = torch.zeros(c2v_out_rows(n, split), 16)
    _compile(c2v_source(n, slots, split), platform)(a, b, bias, out)
    want = ((a.float() @ b.float()).reshape(n, 16, 16) + bias).reshape(n * 16, 16)
    if split == 0:  # lane 1 takes no part in a no-split pipe: its pops are zeros
        want = torch.cat([want, bias.repeat(n, 1)])
    return out, want


@pytest.mark.parametrize("slots, split", [(1, 0), (2, 1), (4, 2)])
def test_cube_to_vector(slots, split):
    out, want = _c2v(N, slots, split, "a2a3sim")
    assert torch.equal(out, want)


def _v2c(n: int, slots: int, split: int, platform: str):
    torch.manual_seed(split * 10 + slots)
    x = torch.randn(n * 16, 32, dtype=torch.float16)
    b = torch.randn(32, 16, dtype=torch.float16)
    out = torch.zeros(n * 16, 16)
    _compile(v2c_source(n, slots, split), platform)(x, b, out)
    return out, (x * 2).float() @ b.float()


@pytest.mark.parametrize("slots, split", [(1, 1), (2, 0), (4, 2)])
def test_vector_to_cube(slots, split):
    out, want = _v2c(N, slots, split, "a2a3sim")
    assert torch.equal(out, want)


def test_a5sim_runs_both_directions():
    out, want = _c2v(3, 2, 1, "a5sim")
    assert torch.equal(out, want)
    out, want = _v2c(3, 1, 2, "a5sim")
    assert torch.equal(out, want)


def test_runs_give_the_same_bits():
    compiled = _compile(c2v_source(N, 1, 1), "a2a3sim")
    a = torch.randn(N * 16, 32, dtype=torch.float16)
    b = torch.randn(32, 16, dtype=torch.float16)
    bias = torch.randn(16, 16)
    outs = []
    for _ in range(5):
        out = torch.zeros(N * 16, 16)
        compiled(a, b, bias, out)
        outs.append(out)
    assert all(torch.equal(o, outs[0]) for o in outs)


def _kernel_error(source: str, *args) -> str:
    with pytest.raises(KernelError) as info:
        _compile(source, "a2a3sim")(*args)
    return str(info.value)


def _c2v_args(n: int = 3):
    return (torch.randn(n * 16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16),
            torch.randn(16, 16), torch.zeros(n * 16, 16))


def test_a_missing_tfree_deadlocks_and_names_every_lane():
    source = c2v_source(3, 2, 1).replace("            pl.tfree_to_aic(t)\n", "")
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "pl.tpush_to_aiv" in text)
    message = _kernel_error(source, *_c2v_args())
    assert "cross-core pipe deadlock" in message
    assert f"the cube (AIC) waits in pl.tpush_to_aiv (line {line})" in message
    assert "vector lane 0 waits in pl.tpop_from_aic" in message
    assert "vector lane 1 waits in pl.tpop_from_aic" in message


def test_a_pop_with_no_push_left_deadlocks_naming_the_finished_producer():
    source = c2v_source(3, 2, 1).replace("        for i in pl.range(3):\n            am",
                                         "        for i in pl.range(2):\n            am")
    message = _kernel_error(source, *_c2v_args())
    assert "deadlock" in message and "the cube (AIC) has finished" in message
    assert "vector lane 0 waits in pl.tpop_from_aic" in message


def test_tiles_left_in_a_ring_are_an_error():
    source = c2v_source(3, 2, 1).replace("        for i in pl.range(3):\n            t:",
                                         "        for i in pl.range(2):\n            t:")
    message = _kernel_error(source, *_c2v_args())
    assert "1 tile(s) pushed into the cube-to-vector ring of pipe 0 were never popped" in message


def test_a_ring_full_of_unfreed_tiles_at_the_end_is_an_error():
    source = v2c_source(2, 4, 0).replace("            pl.tfree_to_aiv(xm)\n", "")
    message = _kernel_error(source, torch.randn(32, 32, dtype=torch.float16),
                            torch.randn(32, 16, dtype=torch.float16), torch.zeros(32, 16))
    assert "the cube (AIC) popped 2 tile(s) from the vector-to-cube ring of pipe 0 and " \
           "freed 0" in message
