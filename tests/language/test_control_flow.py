"""Runtime `if`, carried loop values (init_values / pl.yield_), pl.pipeline, scalar
specialisation constants (`scale: pl.FP32`) and valid regions known only at run time."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto.debug import load_entry, torch_codegen
from pypto.ir import If
from pypto.ir.errors import ParseError, TypeCheckError

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit.incore
def branchy(x: pl.Tensor[[16, 128], pl.FP32], flag: pl.Scalar[pl.BOOL],
            cfg: pl.Tensor[[4], pl.INT32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    if flag:  # noqa: SIM108 - the DSL's if/else statement is what this kernel exercises
        y = pl.mul(t, 2.0)
    else:
        y = pl.add(t, 1.0)
    if pl.read(cfg, [0]) > 2 and not flag:
        y = pl.neg(y)
    out = pl.store(y, [0, 0], out)
    return out


@pytest.mark.parametrize("flag, first", [(True, 5), (False, 5), (False, 1)])
def test_an_if_on_runtime_values_takes_the_branch_the_values_pick(flag, first):
    x, out = torch.randn(16, 128), torch.zeros(16, 128)
    cfg = torch.tensor([first, 0, 0, 0], dtype=torch.int32)
    branchy(x, flag, cfg, out)
    y = x * 2.0 if flag else x + 1.0
    assert torch.equal(out, -y if first > 2 and not flag else y)


def test_a_runtime_if_is_kept_prints_and_parses_back():
    args = (torch.zeros(16, 128), True, torch.zeros(4, dtype=torch.int32), torch.zeros(16, 128))
    for program in (branchy.frontend(*args), branchy.lower(*args)):
        kernel = program.function("branchy")
        assert any(isinstance(s, If) for s in kernel.body)
        assert pl.parse(program.as_python()) == program


def test_torch_codegen_follows_the_branches():
    args = [torch.randn(16, 128), False, torch.tensor([3, 0, 0, 0], dtype=torch.int32),
            torch.zeros(16, 128)]
    program = branchy.lower(*args)
    load_entry(torch_codegen(program), program.entry)(*args)
    assert torch.equal(args[3], -(args[0] + 1.0))


@pl.jit.incore
def accumulate(x: pl.Tensor[[64, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    first = pl.load(x, [0, 0], [16, 128])
    for i, (acc,) in pl.range(1, 4, init_values=(first,)):
        if i == 2:
            nxt = pl.yield_(pl.sub(acc, pl.load(x, [i * 16, 0], [16, 128])))
        else:
            nxt = pl.yield_(pl.add(acc, pl.load(x, [i * 16, 0], [16, 128])))
        total = pl.yield_(nxt)
    out = pl.store(total, [0, 0], out)
    return out


def test_init_values_carry_a_value_through_the_loop_and_yield_binds_it_after():
    x, out = torch.randn(64, 128), torch.zeros(16, 128)
    accumulate(x, out)
    assert torch.equal(out, x[0:16] + x[16:32] - x[32:48] + x[48:64])


@pl.jit.incore
def pipelined(x: pl.Tensor[[80, 128], pl.FP32], out: pl.Out[pl.Tensor[[80, 128], pl.FP32]]):
    for i in pl.pipeline(5, stage=2):
        t = pl.load(x, [i * 16, 0], [16, 128])
        out = pl.store(pl.mul(t, 3.0), [i * 16, 0], out)
    return out


def test_pipeline_replicates_the_body_per_stage_and_runs_every_iteration():
    x, out = torch.randn(80, 128), torch.zeros(80, 128)
    pipelined(x, out)
    assert torch.equal(out, x * 3.0)
    body = pipelined.frontend(x, out).function("pipelined").body
    main, tail = body[0], body[1]
    assert main.step.value == 2 and len([s for s in main.body if s.targets[0].name == "i"]) == 2
    assert tail.start.value == 4 and tail.stop.value == 5


def _parse_error(source: str, match: str, cls=ParseError):
    with pytest.raises(cls, match=match):
        pl.parse("import pypto.language as pl\n\n\n@pl.program\nclass P:\n"
                 "    @pl.function(type=pl.FunctionType.InCore)\n" + source)


def test_a_name_bound_in_one_branch_only_is_unbound_after_the_if():
    _parse_error('''    def k(self, x: pl.Tensor[[16, 16], pl.FP32], f: pl.Scalar[pl.BOOL],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        if f:
            t = pl.load(x, [0, 0], [16, 16])
        out = pl.store(t, [0, 0], out)
        return out
''', "name `t` is not defined")


def test_a_name_must_keep_its_type_across_branches():
    _parse_error('''    def k(self, x: pl.Tensor[[16, 16], pl.FP32], f: pl.Scalar[pl.BOOL],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        if f:
            t = pl.load(x, [0, 0], [16, 16])
        else:
            t = pl.load(x, [0, 0], [8, 16])
        return out
''', "different types", TypeCheckError)


def test_unroll_refuses_init_values():
    _parse_error('''    def k(self, x: pl.Tensor[[16, 16], pl.FP32],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        t = pl.load(x, [0, 0], [16, 16])
        for i, (a,) in pl.unroll(2, init_values=(t,)):
            b = pl.yield_(a)
        return out
''', "pl.unroll carries no values")


def test_yield_outside_a_branch_or_carrying_loop_is_an_error():
    _parse_error('''    def k(self, x: pl.Tensor[[16, 16], pl.FP32],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        t = pl.yield_(pl.load(x, [0, 0], [16, 16]))
        return out
''', "pl.yield_ ends an `if` branch")


@pl.jit
def specialised(x: pl.Tensor, scale: pl.FP32, cols: pl.INDEX, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 128], valid_shape=[16, cols])
        out = pl.store(pl.mul(t, scale), [0, 0], out)
    return out


def test_bare_dtype_parameters_are_specialisation_constants():
    x = torch.randn(16, 128)
    for cols in (64, 96):
        out = torch.zeros(16, 128)
        specialised(x, 0.5, cols, out)
        assert torch.equal(out[:, :cols], x[:, :cols] * 0.5) and out[:, cols:].isnan().all()
    text = specialised.frontend(x, 0.5, 96, out).as_python()
    assert "valid_shape=[16, 96]" in text and "pl.mul(t, 0.5)" in text
    assert len(specialised._loaded) == 2  # one program per value


def test_a_bare_dtype_parameter_of_a_program_is_a_scalar():
    program = pl.parse('''import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32], s: pl.FP32,
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
        out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 16]), s), [0, 0], out)
        return out
''')
    assert "s: pl.Scalar[pl.FP32]" in program.as_python()


@pl.jit.incore
def runtime_valid(x: pl.Tensor[[16, 128], pl.FP32], cfg: pl.Tensor[[2], pl.INT64],
                  out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    n = pl.read(cfg, [1])
    t = pl.load(x, [0, 0], [16, 128], valid_shape=[16, n])
    padded = pl.tile.fillpad(t, pad_value=pl.PadValue.zero)
    out = pl.store(pl.add(padded, 1.0), [0, 0], out)
    return out


@pytest.mark.parametrize("n", [40, 128])
def test_a_valid_region_known_at_run_time_limits_the_store(n):
    x, out = torch.randn(16, 128), torch.zeros(16, 128)
    runtime_valid(x, torch.tensor([0, n]), out)
    assert torch.equal(out[:, :n], x[:, :n] + 1.0)
    assert out[:, n:].isnan().all()


def test_a_runtime_valid_region_prints_and_parses_back():
    args = (torch.zeros(16, 128), torch.tensor([0, 8]), torch.zeros(16, 128))
    for program in (runtime_valid.frontend(*args), runtime_valid.lower(*args)):
        text = program.as_python()
        assert "[16, n]" in text
        assert pl.parse(text) == program
