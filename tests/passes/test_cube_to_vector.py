"""A tile moved across the cube/vector boundary in a core group's kernel (Mat or Acc to Vec
where the backend has no direct path, Vec to Mat, Left or Right) is a transfer between the
units (upstream's TPUSH/TPOP): it goes through a scratch tensor the orchestration
allocates, stored from one unit's buffer and loaded into the other's, bit-exact on both
simulators; refused at the move's line where it has no meaning here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from sim_and_torch import sim_and_torch

import pypto.language as pl
from pypto.codegen.cpp import generate
from pypto.compiler import lower
from pypto.ir.errors import LoweringError, ParseError
from pypto.ir.types import Level
from pypto.platform import get_platform
from pypto.runtime import RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "device"))
from cpu_models import outputs_agreeing_with_the_simulator  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")  # small tiles

HERE = __file__
SIMS = ["a2a3sim", "a5sim"]


@pl.jit
def matmul_assembled(x: pl.Tensor, a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        target = pl.load(x, [0, 0], [32, 32], target_memory=pl.MemorySpace.Mat)
        a_mat = pl.load(a, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat)
        b_mat = pl.load(b, [0, 0], [16, 16], target_memory=pl.MemorySpace.Mat)
        acc = pl.matmul(pl.move(a_mat, target_memory=pl.MemorySpace.Left),
                        pl.move(b_mat, target_memory=pl.MemorySpace.Right))
        result = pl.tile.assemble(target, acc, [0, 16])
        moved = pl.move(result, target_memory=pl.MemorySpace.Vec)
        pl.store(pl.add(moved, moved), [0, 0], y)
    return y


def _loaded_then_moved(level):
    @pl.jit
    def loaded_then_moved(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=level):
            t = pl.load(x, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat)
            v = pl.move(t, target_memory=pl.MemorySpace.Vec)
            pl.store(pl.mul(v, 3.0), [0, 0], y)
        return y
    return loaded_then_moved


loaded_then_moved = _loaded_then_moved(pl.Level.CORE_GROUP)


@pl.jit
def partial_then_moved(x: pl.Tensor, n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 64], valid_shape=[n, 48], target_memory=pl.MemorySpace.Mat)
        v = pl.move(t, target_memory=pl.MemorySpace.Vec)
        pl.store(pl.add(v, 1.0), [0, 0], y)
    return y


@pl.jit
def moved_in_blocks(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.spmd(2):
        t = pl.load(x, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat)
        v = pl.move(t, target_memory=pl.MemorySpace.Vec)
        pl.store(v, [0, 0], y)
    return y


@pl.jit
def matmul_moved_to_vec(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_mat = pl.load(a, [0, 0], [32, 16], target_memory=pl.MemorySpace.Mat)
        b_mat = pl.load(b, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat)
        acc = pl.matmul(pl.move(a_mat, target_memory=pl.MemorySpace.Left),
                        pl.move(b_mat, target_memory=pl.MemorySpace.Right))
        v = pl.move(acc, target_memory=pl.MemorySpace.Vec)
        pl.store(pl.add(v, v), [0, 0], y)
    return y


def _vec_moved_to_left_and_right(level):
    @pl.jit
    def vec_moved_to_left_and_right(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=level):
            a_vec = pl.mul(pl.load(a, [0, 0], [32, 16]), 2.0)
            b_vec = pl.load(b, [0, 0], [16, 32])
            acc = pl.matmul(pl.move(a_vec, target_memory=pl.MemorySpace.Left),
                            pl.move(b_vec, target_memory=pl.MemorySpace.Right))
            pl.store(acc, [0, 0], y)
        return y
    return vec_moved_to_left_and_right


vec_moved_to_left_and_right = _vec_moved_to_left_and_right(pl.Level.CORE_GROUP)


@pl.jit
def vec_moved_to_mat(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        a_vec = pl.mul(pl.load(a, [0, 0], [32, 16]), 2.0)
        a_mat = pl.move(a_vec, target_memory=pl.MemorySpace.Mat)
        b_mat = pl.load(b, [0, 0], [16, 32], target_memory=pl.MemorySpace.Mat)
        acc = pl.matmul(pl.move(a_mat, target_memory=pl.MemorySpace.Left),
                        pl.move(b_mat, target_memory=pl.MemorySpace.Right))
        pl.store(acc, [0, 0], y)
    return y


@pl.jit
def vec_moved_to_acc(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [32, 32])
        acc = pl.move(t, target_memory=pl.MemorySpace.Acc)
        pl.store(acc, [0, 0], y)
    return y


@pl.jit
def vector_work_on_the_vector_unit(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.AIV):
        pl.store(pl.mul(pl.load(x, [0, 0], [32, 64]), 3.0), [0, 0], y)
    return y


def _randn(*shape, seed=16):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _randint8(*shape, seed=16):
    return torch.randint(-8, 8, shape, dtype=torch.int8,
                         generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("platform", SIMS)
def test_a_matmul_assembled_into_mat_reaches_the_vector_unit(platform):
    x, a, b = _randn(32, 32), _randn(32, 16, seed=1), _randn(16, 16, seed=2)
    args = [x, a, b, torch.zeros(32, 32)]
    (_, _, _, y), (_, _, _, y_torch) = sim_and_torch(matmul_assembled, args, platform)
    assert torch.equal(y, y_torch)
    assert torch.equal(y[:, :16], x[:, :16] + x[:, :16])
    assert torch.allclose(y[:, 16:], 2 * (a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("platform", SIMS)
def test_a_tile_loaded_into_mat_reaches_the_vector_unit(platform):
    x, y = _randn(32, 64), torch.zeros(32, 64)
    loaded_then_moved(x, y, config=RunConfig(platform=platform))
    assert torch.equal(y, x * 3.0)


@pytest.mark.parametrize("platform", SIMS)
def test_only_the_valid_region_crosses(platform):
    x, y = _randn(32, 64), torch.zeros(32, 64)
    partial_then_moved(x, 20, y, config=RunConfig(platform=platform))
    assert torch.equal(y[:20, :48], x[:20, :48] + 1.0)
    # the rest of `y` is never written: it keeps the NaN an output reaches the device with
    assert y[20:].isnan().all() and y[:, 48:].isnan().all()


def test_the_transfer_goes_through_a_scratch_tensor_the_orchestration_allocates():
    text = loaded_then_moved.lower(_randn(32, 64), torch.zeros(32, 64)).as_python()
    assert "t_to_vec_0: pl.Out[pl.Tensor[[32, 64], pl.FP32]]" in text
    assert "t_to_vec_0: pl.Tensor[[32, 64], pl.FP32] = pl.store(t, [0, 0], t_to_vec_0)" in text
    assert "pl.load(t_to_vec_0, [0, 0], [32, 64])" in text
    assert "= pl.create_tensor([32, 64], pl.FP32)" in text


def _move_line(fn, text="pl.move(t, target_memory=pl.MemorySpace.Vec)") -> str:
    source = Path(HERE).read_text().splitlines()
    first = fn.fn.__code__.co_firstlineno
    line = next(i for i in range(first, len(source)) if text in source[i - 1])
    return f"{HERE}:{line}"


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_device_code_refuses_the_transfer_at_the_move(platform):
    lowered = loaded_then_moved.lower(_randn(32, 64), torch.zeros(32, 64),
                                      config=RunConfig(platform=platform))
    with pytest.raises(LoweringError) as info:
        generate(lowered, platform=get_platform(platform))
    message = str(info.value)
    assert message.startswith(_move_line(loaded_then_moved))
    assert "cube unit to the vector unit" in message and platform in message


def test_a_transfer_in_a_kernel_of_several_blocks_is_refused_at_the_move():
    with pytest.raises(LoweringError) as info:
        moved_in_blocks.lower(_randn(32, 64), torch.zeros(32, 64))
    message = str(info.value)
    assert message.startswith(_move_line(moved_in_blocks))
    assert "several blocks" in message



@pytest.mark.parametrize("platform", SIMS)
@pytest.mark.parametrize("operands", [_randn, _randint8], ids=["fp32", "int8_to_int32"])
def test_a_matmul_result_in_acc_reaches_the_vector_unit(platform, operands):
    a, b = operands(32, 16, seed=1), operands(16, 32, seed=2)
    acc_dtype = torch.float32 if a.is_floating_point() else torch.int32
    args = [a, b, torch.zeros(32, 32, dtype=acc_dtype)]
    (_, _, y), (_, _, y_torch) = sim_and_torch(matmul_moved_to_vec, args, platform)
    assert torch.equal(y, y_torch)
    if acc_dtype is torch.int32:
        assert torch.equal(y, 2 * (a.int() @ b.int()))
    else:
        assert torch.allclose(y, 2 * (a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("operands", [_randn, _randint8], ids=["fp32", "int8_to_int32"])
def test_acc_to_vec_crosses_through_global_memory_only_without_a_direct_path(operands):
    a, b = operands(32, 16, seed=1), operands(16, 32, seed=2)
    dtype = "pl.FP32" if a.is_floating_point() else "pl.INT32"
    y = torch.zeros(32, 32, dtype=torch.float32 if a.is_floating_point() else torch.int32)
    a2a3 = matmul_moved_to_vec.lower(a, b, y, config=RunConfig(platform="a2a3sim")).as_python()
    assert f"acc_to_vec_0: pl.Out[pl.Tensor[[32, 32], {dtype}]]" in a2a3
    assert f"acc_to_vec_0: pl.Tensor[[32, 32], {dtype}] = pl.store(acc, [0, 0], acc_to_vec_0)" \
        in a2a3
    assert "pl.load(acc_to_vec_0, [0, 0], [32, 32])" in a2a3
    assert f"= pl.create_tensor([32, 32], {dtype})" in a2a3
    # Ascend950 moves an Acc tile to Vec by an instruction ([tile_moves] Acc = ["Mat", "Vec"])
    a5 = matmul_moved_to_vec.lower(a, b, y, config=RunConfig(platform="a5sim")).as_python()
    assert "= pl.move(acc, pl.Mem.Vec)" in a5
    assert "create_tensor" not in a5 and "acc_to_vec" not in a5


@pytest.mark.parametrize("platform", SIMS)
@pytest.mark.parametrize("kernel", [vec_moved_to_left_and_right, vec_moved_to_mat],
                         ids=["left_and_right", "mat"])
def test_a_vector_result_reaches_the_cube_unit(platform, kernel):
    a, b = _randn(32, 16, seed=1), _randn(16, 32, seed=2)
    (_, _, y), (_, _, y_torch) = sim_and_torch(kernel, [a, b, torch.zeros(32, 32)], platform)
    assert torch.equal(y, y_torch)
    assert torch.allclose(y, 2 * (a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("platform", SIMS)
def test_a_vector_tile_crosses_into_l1_and_moves_on_to_left(platform):
    a, b = _randn(32, 16, seed=1), _randn(16, 32, seed=2)
    text = vec_moved_to_left_and_right.lower(a, b, torch.zeros(32, 32),
                                             config=RunConfig(platform=platform)).as_python()
    assert "a_vec_to_mat_0: pl.Out[pl.Tensor[[32, 16], pl.FP32]]" in text
    assert "= pl.store(a_vec, [0, 0], a_vec_to_mat_0)" in text
    assert ("a_vec_in_mat_0: pl.Tile[[32, 16], pl.FP32, pl.Mem.Mat, " in text
            and "= pl.load(a_vec_to_mat_0, [0, 0], [32, 16], target_memory=pl.Mem.Mat)" in text)
    assert "pl.Mem.Left, 0x0] = pl.move(a_vec_in_mat_0, pl.Mem.Left)" in text


@pytest.mark.parametrize("platform", SIMS)
def test_a_vector_tile_moved_to_acc_is_refused_at_the_move(platform):
    with pytest.raises(LoweringError) as info:
        vec_moved_to_acc.lower(_randn(32, 32), torch.zeros(32, 32),
                               config=RunConfig(platform=platform))
    message = str(info.value)
    assert message.startswith(_move_line(vec_moved_to_acc,
                                         "pl.move(t, target_memory=pl.MemorySpace.Acc)"))
    assert "pl.move from Vec to Acc is not a data path" in message


@pytest.mark.parametrize(("kernel", "args", "move", "unit"), [
    (_loaded_then_moved(pl.Level.AIC), [(32, 64), (32, 64)],
     "pl.move(t, target_memory=pl.MemorySpace.Vec)", "cube"),
    (_vec_moved_to_left_and_right(pl.Level.AIV), [(32, 16), (16, 32), (32, 32)],
     "pl.move(a_vec, target_memory=pl.MemorySpace.Left)", "vector"),
], ids=["aic", "aiv"])
def test_a_transfer_in_a_kernel_on_one_unit_is_refused_at_the_move(kernel, args, move, unit):
    with pytest.raises(LoweringError) as info:
        kernel.lower(*(_randn(*shape) for shape in args))
    message = str(info.value)
    assert message.startswith(_move_line(kernel, move))
    assert f"runs on the {unit} unit only" in message
    assert info.value.hint.startswith("use pl.at(level=pl.Level.CORE_GROUP)")


def test_a_kernel_on_one_unit_records_its_level_and_parses_back():
    x, y = _randn(32, 64), torch.zeros(32, 64)
    program = vector_work_on_the_vector_unit.lower(x, y)
    (kernel,) = (f for f in program.functions if f.name != program.entry)
    assert kernel.attr("level") is pl.Level.AIV
    text = program.as_python()
    assert "pl.func_attr({'level': pl.Level.AIV})" in text
    assert pl.parse(text) == program
    vector_work_on_the_vector_unit(x, y)
    assert torch.equal(y, x * 3.0)


_DECLARED_FOR_THE_CUBE_UNIT = """
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        pl.func_attr({"level": pl.Level.AIC})
        t = pl.load(x, [0, 0], [32, 64], target_memory=pl.Mem.Mat)
        v = pl.move(t, target_memory=pl.Mem.Vec)
        y = pl.store(v, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        y = self.k(x, y)
        return y
"""


# The same kernel with its level on the decorator, as upstream's @pl.function(level=) says.
_DECORATED_FOR_THE_CUBE_UNIT = _DECLARED_FOR_THE_CUBE_UNIT.replace(
    "    @pl.function(type=pl.FunctionType.InCore)\n",
    "    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.AIC)\n").replace(
    '        pl.func_attr({"level": pl.Level.AIC})\n', "")


@pytest.mark.parametrize("source", [_DECLARED_FOR_THE_CUBE_UNIT, _DECORATED_FOR_THE_CUBE_UNIT],
                         ids=["func_attr", "decorator"])
def test_a_transfer_in_a_function_declared_for_one_unit_is_refused_at_the_move(source):
    program = pl.parse(source)
    assert dict(program.function("k").attrs) == {"level": Level.AIC}
    with pytest.raises(LoweringError) as info:
        lower(program, get_platform("a2a3sim"))
    move = next(i for i, line in enumerate(source.splitlines(), 1) if "pl.move(t" in line)
    assert info.value.span.line == move
    assert "runs on the cube unit only (level=pl.Level.AIC)" in str(info.value)


def test_a_level_attribute_names_one_unit():
    source = _DECLARED_FOR_THE_CUBE_UNIT.replace("pl.Level.AIC", "pl.Level.CORE_GROUP")
    with pytest.raises(ParseError, match="pl.Level.AIC or pl.Level.AIV"):
        pl.parse(source)


def test_a_decorated_level_is_a_unit_of_an_incore_function():
    whole_group = _DECORATED_FOR_THE_CUBE_UNIT.replace("level=pl.Level.AIC",
                                                       "level=pl.Level.CORE_GROUP")
    assert dict(pl.parse(whole_group).function("k").attrs) == {}
    both = _DECORATED_FOR_THE_CUBE_UNIT.replace(
        "        t = pl.load(x",
        '        pl.func_attr({"level": pl.Level.AIV})\n        t = pl.load(x')
    with pytest.raises(ParseError, match="disagree"):
        pl.parse(both)
    orchestration = _DECORATED_FOR_THE_CUBE_UNIT.replace(
        "@pl.function(type=pl.FunctionType.Orchestration)",
        "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.AIV)")
    with pytest.raises(ParseError, match="for an InCore function"):
        pl.parse(orchestration)


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("kernel", [matmul_moved_to_vec, vec_moved_to_left_and_right],
                         ids=["acc_to_vec", "vec_to_left_and_right"])
def test_device_code_runs_an_acc_or_vec_transfer_as_the_simulator(platform, kernel):
    # A2/A3 crosses through the scratch tensor (store from L0C / UB, load into UB / L1);
    # A5 moves an Acc tile to Vec by TMOV.  A Mat tile stored is what device code refuses.
    # Multiples of 2^-6 in [-1, 1]: every product and partial sum is exact in FP32, so the
    # order the two sides accumulate in cannot tell them apart.
    a, b = (torch.randint(-64, 65, shape, generator=torch.Generator().manual_seed(seed)) / 64
            for shape, seed in (((32, 16), 1), ((16, 32), 2)))
    (y,) = outputs_agreeing_with_the_simulator(
        kernel, lambda: [a.clone(), b.clone(), torch.zeros(32, 32)], 2, platform)
    assert torch.equal(y, 2 * (a @ b))
