"""LowerCompositeOps: a composite operator's tile call becomes its primitive operators.

A composite operator (an `OpDef` with an `expansion`: pl.sin, pl.cos) has no instruction.
Each statement `y = op(x)` on tiles is replaced by the expansion's steps, one statement
each, with fresh names for the values it binds (`y_k_0`, `y_t_0`, ...; a name the steps
bind again is rebound, the same buffer) and `y` bound by the last step, all at the
statement's line.  After it no composite operator is left in a kernel, so the
simulators and device code see only the primitives, in the order the registry gives.  A
program without composite operators comes out unchanged.
"""

from __future__ import annotations

from ..ir.dtypes import DataType
from ..ir.errors import InternalError
from ..ir.nodes import Assign, Call, Const, Var
from ..ir.ops import get_op, make_call
from ..ir.types import FunctionType, ScalarType, TileType
from ..ir.visitor import IRMutator
from .manager import FunctionPass
from .names import NameSupply
from .properties import IRProperty


class LowerCompositeOps(FunctionPass):
    name = "LowerCompositeOps"
    produces = (IRProperty.CompositesLowered,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        return _Expander(fn).mutate_function(fn)


class _Expander(IRMutator):
    def __init__(self, fn):
        self.fn = fn
        self._names: NameSupply | None = None

    @property
    def names(self) -> NameSupply:
        if self._names is None:  # only a function with a composite operator needs one
            self._names = NameSupply(self.fn)
        return self._names

    def mutate_Assign(self, stmt: Assign):
        call = stmt.value
        if not (isinstance(call, Call) and isinstance(call.type, TileType)
                and get_op(call.op).expansion):
            return stmt
        op = get_op(call.op)
        (target,) = stmt.targets
        values = {}
        for name, arg in op.operands(call.args, dict(call.attrs)).items():
            if not isinstance(arg, Var):
                raise InternalError(f"pl.{call.op}'s operand {arg!r} is not a variable: "
                                    "FlattenCallExpr names every operand before this pass")
            values[name] = arg
        fresh = {}  # a step's name -> the variable it binds in this expansion
        out = []
        for step in op.expansion[:-1]:
            value = self._step(step, values, call)
            if step.dst not in fresh:
                fresh[step.dst] = self.names.fresh(f"{target.name}_{step.dst}")
            var = Var(fresh[step.dst], value.type, call.span)
            out.append(Assign((var,), value, stmt.span))
            values[step.dst] = var
        out.append(Assign(stmt.targets, self._step(op.expansion[-1], values, call), stmt.span))
        return out

    @staticmethod
    def _step(step, values: dict, call: Call) -> Call:
        # A constant is an FP32 literal, as the parser types `0.5`.
        args = [values[a] if isinstance(a, str) else Const(a, _FP32, call.span)
                for a in step.args]
        return make_call(step.op, *args, span=call.span, **dict(step.attrs))


_FP32 = ScalarType(DataType.FP32)
