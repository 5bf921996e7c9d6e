"""A run-time `if` in device code: a C++ `if` / `else`, fenced by `pipe_barrier(PIPE_ALL)`
before it and after its join when it issues pipe work, each branch synchronised on its own;
a name bound in both branches is one tile (or scalar).  Proven on pto-isa's CPU models
against the simulators and by hand."""

from __future__ import annotations

import pytest
import torch
from cpu_models import outputs_agreeing_with_the_simulator

import pypto.language as pl
from pypto.codegen.device import device_kernel
from pypto.codegen.pipe_sync import (
    Access,
    Branch,
    Flag,
    Instr,
    Loop,
    flag_pairs,
    insert_pipe_sync,
    verify_pipe_sync,
    without_pair,
)
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.runtime import RunConfig

pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


@pl.jit.incore
def branchy(x: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
            limit: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    for i in pl.range(4):
        t = pl.load(x, [i * 16, 0], [16, 128])
        if i < n:  # noqa: SIM108 - the DSL's runtime `if`: pl.yield_ in each branch
            y = pl.yield_(pl.add(t, t))
            k = pl.yield_(i + 1)
        else:
            if t[0, 0] < limit:  # noqa: SIM108 - a vector result read by the scalar unit
                z = pl.yield_(pl.mul(t, 3.0))
            else:
                z = pl.yield_(pl.sub(t, 1.0))
            y = pl.yield_(z)
            k = pl.yield_(i * 2)
        out = pl.store(pl.add(y, pl.cast(k, pl.FP32)), [i * 16, 0], out)
    return out


@pl.jit.incore
def gated(x: pl.Tensor[[32, 64], pl.FP32], w: pl.Tensor[[64, 32], pl.FP32],
          first: pl.Scalar[pl.BOOL], last: pl.Scalar[pl.BOOL],
          acc: pl.InOut[pl.Tensor[[32, 32], pl.FP32]],
          dst: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]):
    """A top-level `if` with a cube matmul in one branch and a loop in the other, and an `if`
    without `else` that stores into an InOut tensor (which keeps its values where it does
    not run); the pipes MTE1, M and FIX inside a branch."""
    a = pl.load(acc, [0, 0], [32, 32])
    if first:
        xm = pl.load(x, [0, 0], [32, 64], target_memory=pl.MemorySpace.Mat)
        wm = pl.load(w, [0, 0], [64, 32], target_memory=pl.MemorySpace.Mat)
        prod = pl.matmul(pl.move(xm, target_memory=pl.MemorySpace.Left),
                         pl.move(wm, target_memory=pl.MemorySpace.Right))
        s = pl.yield_(pl.add(a, pl.move(prod, target_memory=pl.MemorySpace.Vec)))
    else:
        for j in pl.range(2):
            a = pl.add(a, pl.cast(j + 1, pl.FP32))
        s = pl.yield_(a)
    acc = pl.store(s, [0, 0], acc)
    if last:
        dst = pl.store(pl.mul(s, 0.5), [0, 0], dst)
    return acc, dst


@pl.jit.incore
def scalar_only(x: pl.Tensor[[16, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
                out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    if n > 2:  # noqa: SIM108 - the DSL's runtime `if`
        k = pl.yield_(n * 2)
    else:
        k = pl.yield_(n + 7)
    out = pl.store(pl.add(t, pl.cast(k, pl.FP32)), [0, 0], out)
    return out


def _branchy_arguments(n: int):
    def make():
        x = torch.rand(64, 128, generator=torch.Generator().manual_seed(5)) - 0.5
        x[::16, 0] = torch.tensor([0.1, 0.9, 0.2, 0.8])  # each row block's t[0, 0]
        return [x, n, 0.5, torch.zeros(64, 128)]
    return make


def _branchy_by_hand(x: torch.Tensor, n: int, limit: float) -> torch.Tensor:
    out = torch.zeros_like(x)
    for i in range(4):
        t = x[i * 16:(i + 1) * 16]
        if i < n:
            y, k = t + t, i + 1
        else:
            y, k = (t * 3.0 if t[0, 0] < limit else t - 1.0), i * 2
        out[i * 16:(i + 1) * 16] = y + float(k)
    return out


def _gated_arguments(first: bool, last: bool):
    def make():
        g = torch.Generator().manual_seed(7)
        # small integers: every sum and product is exact, whatever the order of the adds
        x = torch.randint(-4, 5, (32, 64), generator=g).float()
        w = torch.randint(-4, 5, (64, 32), generator=g).float()
        acc = torch.randint(-8, 9, (32, 32), generator=g).float()
        return [x, w, first, last, acc, torch.full((32, 32), -1.0)]
    return make


def _gated_by_hand(x, w, first, last, acc, dst):
    s = acc + x @ w if first else acc + 1.0 + 2.0
    return s, (s * 0.5 if last else dst)


def _source(jit_fn, arguments, platform: str = "a5cpu") -> tuple[str, list]:
    (fn,) = [f for f in lower(jit_fn.frontend(*arguments()), get_platform(platform)).functions
             if f.func_type is FunctionType.InCore]
    kernel = device_kernel(fn)
    return kernel.cpp, kernel.body


def _lines(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines()]


def test_a_run_time_if_is_a_cpp_if_fenced_before_it_and_after_its_join():
    source, _ = _source(branchy, _branchy_arguments(2))
    lines = _lines(source)
    outer = lines.index("if ((i < n)) {")
    assert lines[outer - 2:outer] == ["TLOAD(t, x_window);", "pipe_barrier(PIPE_ALL);"]
    inner = lines.index("if ((read_0 < limit)) {")
    assert lines[inner - 2:inner + 6] == [
        "read_0 = static_cast<double>(t.GetValue(INT64_C(0) * 128 + INT64_C(0)));",
        "pipe_barrier(PIPE_ALL);", "if ((read_0 < limit)) {", "TMULS(z, t, 3.0);", "} else {",
        "TSUBS(z, t, 1.0);", "}", "pipe_barrier(PIPE_ALL);"]
    join = lines.index("TADDS(add_0, y, ((double)(k)));")
    assert lines[join - 2:join] == ["}", "pipe_barrier(PIPE_ALL);"]
    assert lines.count("pipe_barrier(PIPE_ALL);") == 4


def test_a_name_bound_in_both_branches_is_one_tile_and_one_scalar():
    source, _ = _source(branchy, _branchy_arguments(2))
    lines = _lines(source)
    # y is one tile: TADD writes it in one branch, TMOV from z in the other; k one local
    assert sum(line.endswith(" y;") for line in lines) == 1
    assert "TADD(y, t, t);" in lines and "TMOV(y, z);" in lines
    assert lines.count("int64_t k = 0;") == 1
    assert "k = (i + INT64_C(1));" in lines and "k = (i * INT64_C(2));" in lines


def test_each_branch_is_synchronised_on_its_own():
    source, body = _source(gated, _gated_arguments(True, True), "a2a3cpu")
    lines = _lines(source)
    then = lines[lines.index("if (first) {") + 1:lines.index("} else {")]
    # the matmul's pipes are ordered inside the branch: loads, moves, matmul, its result
    waits = [line for line in then if line.startswith("wait_flag")]
    for pipes in ("PIPE_MTE2, PIPE_MTE1", "PIPE_MTE1, PIPE_M", "PIPE_M, PIPE_FIX"):
        assert any(w.startswith(f"wait_flag({pipes}, ") for w in waits), pipes
    assert "TMATMUL(prod, move_0, move_1);" in then
    # and nothing is left set at the end of either branch
    assert all(s.replace("set_flag", "wait_flag") in then
               for s in then if s.startswith("set_flag"))
    # an `if` without `else` has no `else`, and is fenced too
    last = lines.index("if (last) {")
    assert lines[last - 1] == "pipe_barrier(PIPE_ALL);"
    assert "} else {" not in lines[last:]
    assert verify_pipe_sync(body) == []


def test_an_if_of_scalar_code_only_is_not_fenced():
    source, _ = _source(scalar_only, lambda: [torch.zeros(16, 128), 3, torch.zeros(16, 128)])
    assert "if ((n > INT64_C(2))) {" in source
    assert "pipe_barrier" not in source


@pytest.mark.parametrize("kernel", ["branchy", "gated"])
def test_the_verifier_catches_the_removal_of_any_flag_pair_inside_or_outside_a_branch(kernel):
    jit_fn, arguments = {"branchy": (branchy, _branchy_arguments(2)),
                         "gated": (gated, _gated_arguments(True, True))}[kernel]
    _, body = _source(jit_fn, arguments, "a2a3cpu")
    assert verify_pipe_sync(body) == []
    pairs = flag_pairs(body)
    inside = {f.pair for node in _walk(body) if isinstance(node, Branch)
              for f in _walk(node.then_body) + _walk(node.else_body) if isinstance(f, Flag)}
    # branchy's pairs lie outside its branches (a branch of V work only needs none), gated's
    # inside them (the matmul's pipes)
    assert (inside, set(pairs) - inside)[kernel == "branchy"]
    for pair in pairs:
        assert any(v.producer for v in verify_pipe_sync(without_pair(body, pair))), pair


def _walk(body: list) -> list:
    out = []
    for node in body:
        out.append(node)
        if isinstance(node, Loop):
            out += _walk(node.body)
        elif isinstance(node, Branch):
            out += _walk(node.then_body) + _walk(node.else_body)
    return out


UB_A, UB_B = Access("Vec", 0, 256), Access("Vec", 256, 512)


def _load(dst):
    return Instr("PIPE_MTE2", (Access("GM:a"),), (dst,), "TLOAD(a)")


def _add(dst, *srcs):
    return Instr("PIPE_V", tuple(srcs), (dst,), "TADD(b, a)")


def _store(src):
    return Instr("PIPE_MTE3", (src,), (Access("GM:out"),), "TSTORE(out, b)")


def test_a_fenced_branch_orders_what_is_before_it_and_after_its_join():
    # load -> (add in a branch) -> store: the fences order both dependencies, in a loop too
    body = [Loop([_load(UB_A), Branch([_add(UB_B, UB_A)], []), _store(UB_B)], trips=None)]
    synced = insert_pipe_sync(body)
    assert verify_pipe_sync(synced) == []
    assert flag_pairs(synced) == []


def test_a_branch_body_is_checked_on_its_own():
    load, add = _load(UB_A), _add(UB_B, UB_A)
    (violation,) = verify_pipe_sync([Branch([], [load, add])])
    assert (violation.producer, violation.consumer) == (load, add)
    (branch,) = insert_pipe_sync([Branch([], [load, add])])
    assert [(n.op, n.src, n.dst) for n in branch.else_body if isinstance(n, Flag)] == [
        ("set", "PIPE_MTE2", "PIPE_V"), ("wait", "PIPE_MTE2", "PIPE_V")]


def test_a_flag_still_set_at_a_fence_is_reported():
    set_flag = Flag("set", "PIPE_MTE2", "PIPE_V", 0, 0)
    wait_flag = Flag("wait", "PIPE_MTE2", "PIPE_V", 0, 0)
    problems = verify_pipe_sync([_load(UB_A), set_flag, Branch([_add(UB_B, UB_B)], []),
                                 wait_flag, _add(UB_B, UB_A)])
    assert [v.message for v in problems] == [
        "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0) is still set at a run-time `if`, whose "
        "branches are synchronised on their own and may reuse its event"]


def test_the_simulator_computes_what_the_branches_mean():
    for n in (0, 2, 4):  # every row block in `else`, half in each, every one in `then`
        args = _branchy_arguments(n)()
        branchy(*args, config=RunConfig(platform="a2a3sim"))
        assert torch.equal(args[3], _branchy_by_hand(*_branchy_arguments(n)()[:3])), n


# Slow: a CPU-model build and a simulator build per platform and case.
@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize("n", [0, 2, 4])
def test_branches_in_a_loop_on_the_cpu_model_are_the_simulators(platform, n):
    (out,) = outputs_agreeing_with_the_simulator(branchy, _branchy_arguments(n), 3, platform)
    assert torch.equal(out, _branchy_by_hand(*_branchy_arguments(n)()[:3]))


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
@pytest.mark.parametrize(("first", "last"), [(True, True), (False, False)])
def test_top_level_branches_on_the_cpu_model_are_the_simulators(platform, first, last):
    acc, dst = outputs_agreeing_with_the_simulator(gated, _gated_arguments(first, last), 4,
                                                   platform)
    want = _gated_by_hand(*_gated_arguments(first, last)())
    assert torch.equal(acc, want[0]) and torch.equal(dst, want[1])
