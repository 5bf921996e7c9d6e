"""TransferCubeToVector: a tile moved across the cube/vector boundary crosses between the
units of the core group.

A core group pairs a cube core (Mat, Left, Right, Acc) with vector cores (Vec).  Upstream
PyPTO gives `pl.move` across that boundary in a core group's kernel the meaning of a
cross-core transfer: one side pushes the tile (TPUSH), the other pops it (TPOP).  A move
is such a transfer when the backend has no instruction for it (`[tile_moves]` of
build_rules/backends/*.toml) and a route crosses:

- cube -> vector: a Mat tile, or an Acc tile (a matmul result), moved to Vec.  No
  backend moves Mat to Vec; Ascend950 moves Acc to Vec by an instruction (TMOV), so there
  that move stays a move, and on Ascend910B it is a transfer;
- vector -> cube (upstream's V2C push): a Vec tile moved to Mat, or to Left or Right,
  which the cube unit reaches from Mat.

This project's channel between the two units is global memory, as for the tensor values
a mixed block passes between them (cube_vector.py): each transfer gets a scratch tensor
of the tile's shape and dtype (an Acc tile's FP32 or INT32), which every orchestration
calling the kernel allocates and passes in as an output (outline_incore's
pass_scratch_tensors, as for a value crossing a block); one side stores the tile's valid
region into it and the other loads that region into its own buffer:

    m_to_vec_0 = pl.store(m, [0, 0], m_to_vec_0)               # cube: L1 / L0C -> GM
    v = pl.load(m_to_vec_0, [0, 0], shape, valid_shape=valid)  # vector: GM -> UB

    v_to_mat_0 = pl.store(v, [0, 0], v_to_mat_0)               # vector: UB -> GM
    v_in_mat_0 = pl.load(v_to_mat_0, [0, 0], shape, valid_shape=valid,
                         target_memory=pl.Mem.Mat)             # cube: GM -> L1
    a = pl.move(v_in_mat_0, target_memory=pl.Mem.Left)         # L1 -> L0A

The load follows the store in the kernel's order, the order a task's statements run in, so
it reads the value just stored: the dependence a TPOP waits for.  What has no other side
is refused at the move's line: a kernel that runs on one unit only (`pl.at(level=
pl.Level.AIC)` or `AIV`, the kernel's "level" attribute), and a kernel dispatched as
several blocks (`pl.spmd`), which would share one scratch tensor between them.  A move
no route crosses (Left or Right to Vec, Vec to Acc) stays InferMemorySpace's error.  The
device-code platforms refuse a Mat -> Vec transfer (codegen/cpp.py: their kernels store no
Mat tile); the other transfers are ordinary stores and loads there.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, ExprStmt, FuncCall, Function, Param, Var
from ..ir.ops import make_call
from ..ir.types import (
    INDEX,
    Direction,
    FunctionType,
    Level,
    MemorySpace,
    TensorType,
    TileType,
)
from ..ir.visitor import IRMutator
from ..platform import Backend
from .manager import Pass
from .names import NameSupply
from .outline_incore import pass_scratch_tensors

# The unit a kernel runs on alone, by its "level" attribute (`pl.at(level=...)`).
_UNIT_OF_LEVEL = {Level.AIC: "the cube unit", Level.AIV: "the vector unit"}


def transfer_landing(source: MemorySpace | None, target: MemorySpace,
                     backend: Backend) -> MemorySpace | None:
    """Where a `pl.move` of a tile in `source` to `target` lands when it crosses between the
    units of the core group through global memory: Vec for a Mat or Acc tile moved to Vec,
    Mat for a Vec tile moved to Mat, Left or Right (moved on from Mat).  None when the move
    is no transfer: `backend` moves the tile directly (`[tile_moves]`: Acc -> Vec on
    Ascend950), or no route crosses (Left / Right tiles cannot be stored, Acc is reached
    only by a matmul)."""
    moves = backend.tile_moves
    if source is None or target.name in moves.get(source.name, ()):
        return None
    if source in (MemorySpace.Mat, MemorySpace.Acc) and target is MemorySpace.Vec:
        return MemorySpace.Vec  # the vector unit's UB
    if source is MemorySpace.Vec and (target is MemorySpace.Mat
                                      or target.name in moves.get(MemorySpace.Mat.name, ())):
        return MemorySpace.Mat  # the cube unit's L1, moved on from there
    return None


def is_transfer(call, source: MemorySpace | None, backend: Backend) -> bool:
    """Whether `call`, reading a tile in `source`, moves it across the cube/vector boundary
    through global memory on `backend` (transfer_landing)."""
    return (isinstance(call, Call) and call.op == "move"
            and transfer_landing(source, call.attr("target_memory"), backend) is not None)


class TransferCubeToVector(Pass):
    name = "TransferCubeToVector"

    def run(self, program, ctx):
        scratch: dict[str, tuple[Var, ...]] = {}
        functions = []
        for fn in program.functions:
            if fn.func_type is FunctionType.InCore:
                fn, added = _Transfers(fn, ctx.backend).rewrite()
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
    """A kernel's transfers as a store into a new scratch parameter and a load (and, into
    Left / Right, the move on from Mat)."""

    def __init__(self, fn: Function, backend: Backend):
        self.fn = fn
        self.backend = backend
        self.names = NameSupply(fn)
        self.scratch: list[Var] = []

    def rewrite(self) -> tuple[Function, tuple[Var, ...]]:
        fn = self.mutate_function(self.fn)
        params = fn.params + tuple(Param(v, Direction.Out) for v in self.scratch)
        return replace(fn, params=params), tuple(self.scratch)

    def mutate_Assign(self, stmt: Assign):
        call = stmt.value
        if not (isinstance(call, Call) and call.op == "move"):
            return stmt
        tile = call.args[0]
        t = tile.type
        if not (isinstance(tile, Var) and isinstance(t, TileType) and t.memory is not None):
            return stmt
        target = call.attr("target_memory")
        landing = transfer_landing(t.memory, target, self.backend)
        if landing is None:
            return stmt
        self._refuse_on_one_unit(f"`{tile.name}` from {t.memory.name} to {target.name}", stmt)
        (dst,) = stmt.targets
        tensor = Var(self.names.fresh(f"{tile.name}_to_{landing.name.lower()}"),
                     TensorType(t.shape, t.dtype), stmt.span)
        self.scratch.append(tensor)
        origin = ExprList(tuple(Const(0, INDEX) for _ in t.shape), stmt.span)
        store = make_call("store", tile, origin, tensor, span=stmt.span)
        valid = None if t.valid_shape is None else tuple(t.valid_shape)
        load = make_call("load", tensor, origin, span=stmt.span, shapes=tuple(t.shape),
                         valid_shape=valid, target_memory=landing)
        stored = Assign((tensor,), store, stmt.span)
        if landing is target:
            return [stored, Assign((dst,), load, stmt.span)]
        landed = Var(self.names.fresh(f"{tile.name}_in_{landing.name.lower()}"),
                     TileType(t.shape, t.dtype, landing, valid_shape=t.valid_shape), stmt.span)
        move = make_call("move", landed, span=stmt.span, target_memory=target)
        return [stored, Assign((landed,), load, stmt.span), Assign((dst,), move, stmt.span)]

    def _refuse_on_one_unit(self, move: str, stmt: Assign) -> None:
        """A kernel that runs on one unit only (`pl.at(level=pl.Level.AIC)` / `AIV`, its
        "level" attribute) has no other side to transfer to."""
        level = self.fn.attr("level")
        if level is None:
            return
        raise LoweringError(
            f"pl.move of {move} crosses between the cube unit and the vector unit, but its "
            f"kernel runs on {_UNIT_OF_LEVEL[level]} only (level={level!r})",
            stmt.span,
            hint="use pl.at(level=pl.Level.CORE_GROUP), whose kernel runs on both units of "
                 "the core group")


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
                f"`{call.callee}` moves a tile between the cube unit and the vector unit and "
                "is dispatched as several blocks, which would share its transfer buffer",
                self.scratch[call.callee][0].span,
                hint="dispatch it as one block")
        return pass_scratch_tensors(
            stmt, self.scratch[call.callee],
            lambda var: Var(self.names.fresh(var.name), var.type, stmt.span))
