"""The simulator kernel of a pl.FunctionType.Group task: its cube (AIC) function and its
vector (AIV) function in one source (templates/group.cpp.j2), run at once by pto/pipe.hpp:
the cube on the task's thread with the task's core, the vector function on two threads,
lane 0 with the task's core and lane 1 with a core whose Vec buffer is its own (the
lanes' UBs), the others shared (the cube's buffers are not the vector lanes').

The rings are the group's pipes as the functions' initialize_pipe calls declare them
(passes/cross_core_pipe.py checked both sides agree), each with the split its pushes and
pops use (BOTH_LANES for the no-split pipe of a lane region).  On the device and CPU-model
platforms the group is device code instead (codegen/device_group.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.errors import LoweringError
from ..ir.nodes import FuncCall, Function, Program, Var
from ..ir.ops.cross_core import BOTH_LANES, POP_OPS, PUSH_OPS
from ..ir.types import Level
from ..ir.visitor import statements
from ..passes.cross_core_pipe import pipe_calls, rings
from .cpp import kernel_model, param_spec
from .device_group import device_group_source
from .environment import render
from .identifiers import symbol
from .sources import KernelSource

if TYPE_CHECKING:
    from ..platform import Platform


def _members(program: Program, group: Function) -> dict[Level, tuple[Function, list[int]]]:
    """Each member function with, per parameter, the group parameter its call passes."""
    names = [p.var.name for p in group.params]
    out = {}
    for s in statements(list(group.body)):
        call = getattr(s, "value", None)
        if not isinstance(call, FuncCall):
            continue
        fn = program.functions[call.callee]
        if not all(isinstance(a, Var) and a.name in names for a in call.args):
            raise LoweringError(
                f"a pl.FunctionType.Group passes its own parameters to `{fn.name}`", s.span,
                hint="compute values in the AIC / AIV functions, not in the group")
        out[fn.attr("level")] = (fn, [names.index(a.name) for a in call.args])
    return out


def ring_models(functions: list[Function]) -> list[dict]:
    """The group's rings (pipe id, direction, split, slot_num, slot_size), in order."""
    found: dict[tuple[int, str], dict] = {}
    for fn in functions:
        for (pipe_id, direction), ring in rings(fn).items():
            found.setdefault((pipe_id, direction), {
                "id": pipe_id, "c2v": direction == "C2V", "split": 0,
                "slot_num": ring.slot_num, "slot_size": ring.slot_size})
        for call, _, _ in pipe_calls(fn):
            direction = {**PUSH_OPS, **POP_OPS}.get(call.op)
            if direction is not None:
                split = call.attr("split")
                if split == 0 and fn.attr("split_aiv"):
                    split = BOTH_LANES  # a lane region's no-split pipe: both lanes
                found[(call.attr("id") or 0, direction)]["split"] = split
    return [found[k] for k in sorted(found)]


def group_source(program: Program, group: Function, platform: Platform | None) -> KernelSource:
    members = _members(program, group)
    if platform is not None and platform.device_code:
        return device_group_source(group, members,
                                   ring_models([fn for fn, _ in members.values()]), platform)
    models, on_chip = {}, {}
    for level, (fn, positions) in members.items():
        model, marks = kernel_model(fn)
        model["symbol"] = f"{symbol(group.name)}__{level.name.lower()}"
        model["args"] = positions
        models[level.name] = model
        for space, mark in marks.items():
            on_chip[space] = max(on_chip.get(space, 0), mark)
    vec_bytes = platform.backend.capacities["Vec"] if platform is not None else \
        max(on_chip.get("Vec", 0), 1)
    model = {"name": group.name, "symbol": symbol(group.name), "cube": models.get("AIC"),
             "vector": models.get("AIV"), "vec_bytes": vec_bytes,
             "rings": ring_models([fn for fn, _ in members.values()])}
    return KernelSource(model["symbol"], render("group.cpp.j2", g=model), "vector",
                        tuple(param_spec(p) for p in group.params), on_chip)
