"""TransferCubeToVector: a Mat tile moved to Vec crosses from the cube unit to the vector
unit of the core group.

A core group pairs a cube core (Mat, Left, Right, Acc) with vector cores (Vec), and no
instruction moves a tile from L1 to the UB.  Upstream PyPTO gives
`v = pl.move(m, target_memory=pl.Mem.Vec)` of a Mat tile in a core group's kernel the
meaning of a cross-core transfer: the cube side pushes the tile (TPUSH), the vector side
pops it (TPOP).  This project's channel between the two units is global memory, as for the
tensor values a mixed block passes between them (cube_vector.py): each such move gets a
scratch tensor of the tile's shape, which every orchestration calling the kernel allocates
and passes in as an output, as OutlineIncoreScopes does for a crossing value; the cube side
stores the tile's valid region into it and the vector side loads that region:

    m_to_vec_0 = pl.store(m, [0, 0], m_to_vec_0)               # cube: L1 -> GM
    v = pl.load(m_to_vec_0, [0, 0], shape, valid_shape=valid)  # vector: GM -> UB

The load follows the store in the kernel's order, the order a task's statements run in, so
it reads the value just stored: the dependence a TPOP waits for.  A kernel dispatched as
several blocks (`pl.spmd`) would share one scratch tensor between them: a transfer there is
refused at the move's line.  The device-code platforms refuse it too (codegen/cpp.py): their
kernels run both sides as one core and pto-isa stores no Mat tile on A5.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, ExprStmt, FuncCall, Function, Param, Var
from ..ir.ops import make_call
from ..ir.types import INDEX, Direction, FunctionType, MemorySpace, TensorType, TileType
from ..ir.visitor import IRMutator
from .manager import Pass
from .names import NameSupply


def is_transfer(call, source: MemorySpace | None) -> bool:
    """Whether `call`, reading a tile in `source`, moves a Mat tile to the vector unit's
    Vec buffer: a transfer from the cube unit.  (An Acc tile moves to Vec by an instruction
    on Ascend950 and not at all on Ascend910B, where that move stays an error.)"""
    return (isinstance(call, Call) and call.op == "move" and source is MemorySpace.Mat
            and call.attr("target_memory") is MemorySpace.Vec)


class TransferCubeToVector(Pass):
    name = "TransferCubeToVector"

    def run(self, program, ctx):
        scratch: dict[str, tuple[Var, ...]] = {}
        functions = []
        for fn in program.functions:
            if fn.func_type is FunctionType.InCore:
                fn, added = _Transfers(fn).rewrite()
                if added:
                    scratch[fn.name] = added
            functions.append(fn)
        if not scratch:
            return program
        return program.with_functions(
            _Allocations(f, scratch).mutate_function(f)
            if f.func_type is FunctionType.Orchestration else f
            for f in functions)


class _Transfers(IRMutator):
    """A kernel's Mat -> Vec moves as a store into a new scratch parameter and a load."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.names = NameSupply(fn)
        self.scratch: list[Var] = []

    def rewrite(self) -> tuple[Function, tuple[Var, ...]]:
        fn = self.mutate_function(self.fn)
        params = fn.params + tuple(Param(v, Direction.Out) for v in self.scratch)
        return replace(fn, params=params), tuple(self.scratch)

    def mutate_Assign(self, stmt: Assign):
        call = stmt.value
        tile = call.args[0] if isinstance(call, Call) and call.args else None
        if not (isinstance(tile, Var) and isinstance(tile.type, TileType)
                and is_transfer(call, tile.type.memory)):
            return stmt
        (dst,) = stmt.targets
        t = tile.type
        tensor = Var(self.names.fresh(f"{tile.name}_to_vec"), TensorType(t.shape, t.dtype),
                     stmt.span)
        self.scratch.append(tensor)
        origin = ExprList(tuple(Const(0, INDEX) for _ in t.shape), stmt.span)
        store = make_call("store", tile, origin, tensor, span=stmt.span)
        valid = None if t.valid_shape is None else tuple(t.valid_shape)
        load = make_call("load", tensor, origin, span=stmt.span, shapes=tuple(t.shape),
                         valid_shape=valid, target_memory=MemorySpace.Vec)
        return [Assign((tensor,), store, stmt.span), Assign((dst,), load, stmt.span)]


class _Allocations(IRMutator):
    """Every call of a kernel with transfers gets their scratch tensors, created before it."""

    def __init__(self, fn: Function, scratch: dict[str, tuple[Var, ...]]):
        self.scratch = scratch
        self.names = NameSupply(fn)

    def mutate_Assign(self, stmt: Assign):
        return self._with_scratch(stmt)

    def mutate_ExprStmt(self, stmt: ExprStmt):
        return self._with_scratch(stmt)

    def _with_scratch(self, stmt):
        call = stmt.value
        if not (isinstance(call, FuncCall) and call.callee in self.scratch):
            return stmt
        if call.blocks is not None:
            raise LoweringError(
                f"`{call.callee}` moves a Mat tile to Vec (from the cube unit to the vector unit) "
                "and is dispatched as several blocks, which would share its transfer buffer",
                self.scratch[call.callee][0].span,
                hint="dispatch it as one block")
        created = []
        for var in self.scratch[call.callee]:
            t = var.type
            assert isinstance(t, TensorType)  # the scratch tensors _Transfers made
            local = Var(self.names.fresh(var.name), t, stmt.span)
            create = make_call("create_tensor", span=stmt.span, shape=t.shape, dtype=t.dtype)
            created.append(Assign((local,), create, stmt.span))
        args = call.args + tuple(a.targets[0] for a in created)
        return [*created, replace(stmt, value=replace(call, args=args))]
