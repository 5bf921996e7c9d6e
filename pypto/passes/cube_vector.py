"""Mixed cube/vector `pl.at` blocks: the tensor values that cross between the two units.

A tensor-level `pl.matmul` runs on the cube unit; every other tensor-level operator runs
on the vector unit.  One block may hold both (`acc = pl.matmul(a, b)` then
`out[:] = pl.add(acc, bias)`, upstream's mixed kernel).  A value one unit computes and the
other reads goes through global memory, the data path both backends share (A2/A3 cube and
vector cores exchange data only through it): OutlineIncoreScopes gives each crossing value
a scratch tensor, as it does for a value used after the block, so the kernel stores it from
the producing unit and loads it on the consuming one.  TensorToTile then lowers each side
as its own run.

`pl.at(optimizations=[pl.split(mode)])` (the kernel's "split" attribute) divides the vector
work between the two vector lanes of the core group: UP_DOWN by rows, LEFT_RIGHT by
columns.  TensorToTile lowers the vector runs of such a kernel in two halves along that
axis at least, one per lane; the simulator runs a task's lanes one after the other.
"""

from __future__ import annotations

from ..ir.nodes import Assign, Call, Var
from ..ir.ops import get_op
from ..ir.types import TensorType
from ..ir.visitor import statements

CUBE = "cube"
VECTOR = "vector"
# Operator categories (ops.py) of the tensor-level operators the vector unit computes.
VECTOR_CATEGORIES = ("binary", "unary", "cast", "select", "ternary", "expands", "fill",
                     "reduce_row", "reduce_col", "expand_row", "expand_col", "gather_tensor")


def unit_of(call) -> str | None:
    """The unit a tensor-level operator call runs on (None: not one that computes)."""
    if not (isinstance(call, Call) and isinstance(call.type, TensorType)):
        return None
    category = get_op(call.op).category
    if category == "matmul":
        return CUBE
    return VECTOR if category in VECTOR_CATEGORIES else None


def crossing_values(body) -> dict[str, str]:
    """The tensor values of a block's statements (at any depth) that one unit computes and
    the other reads (in calls nested at any depth of a statement's value), each with the
    unit that reads it."""
    produced: dict[str, str] = {}
    crossing: dict[str, str] = {}

    def visit(expr) -> None:
        if not isinstance(expr, Call):
            return
        unit = unit_of(expr)
        for arg in expr.args:
            if unit is not None and isinstance(arg, Var) and produced.get(arg.name, unit) != unit:
                crossing[arg.name] = unit
            visit(arg)

    for stmt in statements(body):
        if not isinstance(stmt, Assign):
            continue
        visit(stmt.value)
        unit = unit_of(stmt.value) if len(stmt.targets) == 1 else None
        for target in stmt.targets:
            if unit is None:
                produced.pop(target.name, None)
            else:
                produced[target.name] = unit
    return crossing
