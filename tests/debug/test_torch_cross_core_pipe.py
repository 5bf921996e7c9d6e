"""The torch semantics of the cross-core pipe (pypto/debug/torch_pipe.py): a Group's lanes on
threads with the simulators' rings, so a program's values are the simulators' bit for bit;
a deadlock or a ring left holding tiles raises PipeError with the message of the
simulators' KernelError."""

from __future__ import annotations

import pytest
import torch
from pipe_programs import c2v_out_rows, c2v_source, parse, v2c_source

from pypto import ir
from pypto.debug.torch_codegen import load_entry, torch_codegen
from pypto.debug.torch_pipe import PipeError


def _both(source: str, args: list[torch.Tensor]):
    program = parse(source)
    torch_args = [a.clone() for a in args]
    load_entry(torch_codegen(program), program.entry)(*torch_args)
    ir.compile(program, dump_passes=False, platform="a2a3sim")(*args)
    return args[-1], torch_args[-1]


@pytest.mark.parametrize("slots, split", [(1, 0), (2, 1), (4, 2)])
def test_cube_to_vector_is_the_simulators(slots, split):
    n = 4
    torch.manual_seed(slots)
    args = [torch.randn(n * 16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16),
            torch.randn(16, 16), torch.zeros(c2v_out_rows(n, split), 16)]
    sim, host = _both(c2v_source(n, slots, split), args)
    assert torch.equal(sim, host)


@pytest.mark.parametrize("slots, split", [(1, 1), (2, 2), (4, 0)])
def test_vector_to_cube_is_the_simulators(slots, split):
    n = 4
    torch.manual_seed(slots)
    args = [torch.randn(n * 16, 32, dtype=torch.float16), torch.randn(32, 16, dtype=torch.float16),
            torch.zeros(n * 16, 16)]
    sim, host = _both(v2c_source(n, slots, split), args)
    assert torch.equal(sim, host)


def _host_error(source: str, *args) -> str:
    program = parse(source)
    with pytest.raises(PipeError) as info:
        load_entry(torch_codegen(program), program.entry)(*args)
    return str(info.value)


def test_a_deadlock_is_an_error_naming_the_lanes():
    source = c2v_source(3, 2, 1).replace("            pl.tfree_to_aic(t)\n", "")
    message = _host_error(source, torch.randn(48, 32, dtype=torch.float16),
                          torch.randn(32, 16, dtype=torch.float16), torch.randn(16, 16),
                          torch.zeros(48, 16))
    assert message == ("cross-core pipe deadlock: the cube (AIC) waits in pl.tpush_to_aiv, "
                       "vector lane 0 waits in pl.tpop_from_aic, vector lane 1 waits in "
                       "pl.tpop_from_aic")


def test_tiles_left_in_a_ring_are_an_error():
    source = c2v_source(3, 2, 1).replace("        for i in pl.range(3):\n            t:",
                                         "        for i in pl.range(2):\n            t:")
    message = _host_error(source, torch.randn(48, 32, dtype=torch.float16),
                          torch.randn(32, 16, dtype=torch.float16), torch.randn(16, 16),
                          torch.zeros(48, 16))
    assert "1 tile(s) pushed into the cube-to-vector ring of pipe 0 were never popped by " \
           "vector lane 0" in message
