"""InferMemorySpace: place every tile in an on-chip buffer.

Loads go where `target_memory` says; results of vector operators live in Vec.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.nodes import Call
from ..ir.types import FunctionType, MemorySpace, TileType
from .manager import FunctionPass
from .properties import IRProperty
from .retype import VarRetyper


def _memory_of(stmt, var):
    if not isinstance(var.type, TileType) or var.type.memory is not None:
        return var.type
    call = stmt.value
    memory = MemorySpace.Vec
    if isinstance(call, Call) and call.op == "load":
        memory = call.attr("target_memory")
    return replace(var.type, memory=memory)


class InferMemorySpace(FunctionPass):
    name = "InferMemorySpace"
    produces = (IRProperty.MemorySpacesInferred,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        return VarRetyper(_memory_of).mutate_function(fn)
