"""InferMemorySpace: place every tile in an on-chip buffer and check where operands live.

The operator that defines a tile decides its buffer:
- `pl.load` and `pl.create_tile`: their `target_memory` (loads reach Vec or Mat);
- `pl.move`: its `target_memory`, when the backend has that data path (`[tile_moves]`
  of build_rules/backends/*.toml), or when it moves a tile across the cube/vector
  boundary (Mat or Acc to Vec, Vec to Mat, Left or Right): a transfer between the units,
  which TransferCubeToVector lowers;
- `pl.matmul` / `pl.matmul_acc` (and the gemv and bias forms): Acc, reading lhs from
  Left, rhs from Right, acc from Acc and bias from Bias (a one-row tile, reached only by
  `pl.move` from Mat); the MX forms (`pl.tile.matmul_mx`, ...) read the block scales from
  LeftScale and RightScale (FP8E8M0 tiles, reached by `pl.move` from Mat on A5);
- `pl.slice`, `pl.reshape`, `pl.fillpad`, `pl.set_validshape`, `pl.tile.transpose_view`:
  their source's buffer;
- `pl.tile.assemble`: its target's buffer, when the backend inserts the source's buffer
  there (`[tile_inserts]`);
- the cross-core pipe's pops: the consumer's ring (Vec on a vector lane, Mat on the cube);
- every other operator runs on the vector unit: Vec, reading Vec tiles.
`b = a` copies a tile within its buffer.  `pl.store` writes from Vec or Acc.  A tile in the
wrong buffer is an error naming the operand, where it is and how to get it where it must be.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.errors import LoweringError
from ..ir.nodes import Assign, Call, Var
from ..ir.ops import get_op
from ..ir.ops.cross_core import PIPE_OPS, POP_OPS
from ..ir.types import FunctionType, MemorySpace, TileType
from .cube_to_vector import is_transfer, transfer_landing
from .manager import FunctionPass
from .properties import IRProperty
from .retype import VarRetyper

Mem = MemorySpace
_LOAD_TARGETS = (Mem.Vec, Mem.Mat)
_STORE_SOURCES = (Mem.Vec, Mem.Acc)
_FROM_SOURCE = ("slice", "reshape", "reinterpret_view", "fillpad", "set_validshape",
                "tile.transpose_view")
_MATMUL_OPERANDS = {"lhs": Mem.Left, "rhs": Mem.Right, "acc": Mem.Acc, "bias": Mem.Bias,
                    "lhs_scale": Mem.LeftScale, "rhs_scale": Mem.RightScale}


class InferMemorySpace(FunctionPass):
    name = "InferMemorySpace"
    produces = (IRProperty.MemorySpacesInferred,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        return _Placer(ctx.backend).mutate_function(fn)


def _target_memory(call: Call, stmt) -> MemorySpace | None:
    """Where pl.load or pl.create_tile puts its tile: its target_memory, which a load can
    only give as Vec or Mat and a tile cannot give as global memory.  A cross-core pop's
    tile is in its consumer's ring: UB on a vector lane, L1 on the cube (the other pipe
    operators make no tile)."""
    if call.op in PIPE_OPS:
        return None if call.op not in POP_OPS else (
            Mem.Vec if POP_OPS[call.op] == "C2V" else Mem.Mat)
    target = call.attr("target_memory")
    if call.op == "load" and target not in _LOAD_TARGETS:
        raise LoweringError(
            f"pl.load cannot reach {target.name}: global memory is copied into Vec or Mat",
            stmt.span,
            hint="load into pl.Mem.Mat and pl.move the tile to Left / Right",
        )
    if call.op == "create_tile" and target is Mem.DDR:
        raise LoweringError("pl.create_tile makes on-chip tiles", stmt.span,
                            hint="use pl.create_tensor for global memory")
    return target


class _Placer(VarRetyper):
    """Types each tile definition with its buffer; uses follow (VarRetyper)."""

    def __init__(self, backend):
        super().__init__(lambda stmt, var: var.type)
        self.backend = backend

    def mutate_Assign(self, stmt: Assign):
        value = self.mutate_expr(stmt.value)  # operands now carry their buffers
        memory = None
        if isinstance(value, Call):
            memory = self._place(value, stmt)
        elif isinstance(value, Var) and isinstance(value.type, TileType):
            memory = value.type.memory  # `b = a` copies the tile within its buffer
        targets = []
        for t in stmt.targets:
            var = t
            if isinstance(t.type, TileType):
                if memory is None:
                    raise LoweringError(f"`{t.name}` is a tile but not defined by an operator",
                                        stmt.span)
                if t.type.memory not in (None, memory):
                    raise LoweringError(
                        f"`{t.name}` is annotated in {t.type.memory.name} but pl.{value.op} "
                        f"puts it in {memory.name}", stmt.span,
                        hint="drop the memory space from the annotation")
                var = replace(t, type=replace(t.type, memory=memory))
            self.env[var.name] = var
            targets.append(var)
        return replace(stmt, value=value, targets=tuple(targets))

    def _place(self, call: Call, stmt) -> MemorySpace | None:
        """The memory the call's result lives in (None for a store: it makes no tile)."""
        op = get_op(call.op)
        operands = {name: arg for name, arg in op.operands(call.args, dict(call.attrs)).items()
                    if isinstance(getattr(arg, "type", None), TileType)}
        if op.isa and op.isa.upper() in self.backend.missing_instructions:
            raise LoweringError(
                f"pl.{call.op} is {op.isa.upper()}, an instruction {self.backend.name} does "
                "not have (build_rules/backends/*.toml: missing_instructions)", stmt.span,
                hint="build for a platform of a backend that has it (docs/operators.md names "
                     "the operators of one generation), or compute the values on the host "
                     "and pass them in")
        if call.op in ("load", "create_tile") or call.op in PIPE_OPS:
            return _target_memory(call, stmt)
        if call.op == "store":
            self._expect(call, "tile", operands["tile"], _STORE_SOURCES, stmt,
                         "store a Vec tile, or a matmul result straight from Acc")
            return None
        if call.op == "move":
            return self._move(operands["tile"], call.attr("target_memory"), stmt)
        if call.op == "tile.assemble":
            return self._insert(operands["src"], operands["dst"], stmt)
        if op.category in ("matmul", "matmul_mx"):
            for name, arg in operands.items():
                self._expect(call, name, arg, (_MATMUL_OPERANDS[name],), stmt,
                             _matmul_hint(name))
            return Mem.Acc
        if call.op in _FROM_SOURCE:
            return next(iter(operands.values())).type.memory
        for name, arg in operands.items():
            self._expect(call, name, arg, (Mem.Vec,), stmt, self._to_vec_hint(arg))
        return Mem.Vec

    def _expect(self, call, name, arg, allowed, stmt, hint) -> None:
        where = arg.type.memory
        if where not in allowed:
            want = " or ".join(m.name for m in allowed)
            raise LoweringError(
                f"pl.{call.op} reads `{name}` ({arg.name}) from {where.name if where else '?'}, "
                f"but it must be in {want}",
                stmt.span,
                hint=hint,
            )

    def _move(self, tile, target: MemorySpace, stmt) -> MemorySpace:
        source = tile.type.memory
        if not self.backend.capacities.get(target.name, 1):
            raise LoweringError(
                f"pl.move to {target.name}: {self.backend.name} has no {target.name} buffer "
                "(the MX block scales of TMATMUL_MX, which it does not have)", stmt.span,
                hint="the MX product (pl.matmul_mx) runs on Ascend950: build for a5sim")
        legal = self.backend.tile_moves.get(source.name, ())
        if target.name not in legal and not is_transfer(stmt.value, source, self.backend):
            paths = ", ".join(f"{s}->{d}" for s, ds in sorted(self.backend.tile_moves.items())
                              for d in ds)
            crossing = (source is Mem.Vec) != (target is Mem.Vec)
            raise LoweringError(
                f"pl.move from {source.name} to {target.name} is not a data path of "
                f"{self.backend.name}" + (
                    " (a move across the cube/vector boundary is, in upstream PyPTO, a "
                    "TPUSH/TPOP cross-core transfer; this project transfers Mat and Acc "
                    "tiles to Vec and Vec tiles to Mat, Left and Right)" if crossing else ""),
                stmt.span,
                hint=f"moves on {self.backend.name}: {paths}" + (
                    "; otherwise pl.store the tile and pl.load it back"
                    if source in (Mem.Vec, Mem.Mat, Mem.Acc) else
                    f"; a {source.name} tile is a matmul operand: move the tile it came from"),
            )
        if target is Mem.Bias and tile.type.shape[0] != 1:
            raise LoweringError(
                f"pl.move to Bias takes one row, got a {list(tile.type.shape)} tile: the bias "
                f"table holds a [1, N] row",
                stmt.span, hint="load the bias as a [1, N] row into pl.Mem.Mat")
        return target

    def _insert(self, src, dst, stmt) -> MemorySpace:
        source, target = src.type.memory, dst.type.memory
        if target.name not in self.backend.tile_inserts.get(source.name, ()):
            pairs = ", ".join(f"{s}->{d}" for s, ds in sorted(self.backend.tile_inserts.items())
                              for d in ds)
            raise LoweringError(
                f"pl.tile.assemble cannot insert a {source.name} tile ({src.name}) into a "
                f"{target.name} tile ({dst.name}) on {self.backend.name}",
                stmt.span,
                hint=f"insertions on {self.backend.name}: {pairs}",
            )
        return target

    def _to_vec_hint(self, arg) -> str:
        where = arg.type.memory
        if where is not None and ("Vec" in self.backend.tile_moves.get(where.name, ())
                                  or transfer_landing(where, Mem.Vec, self.backend)):
            return f"pl.move(`{arg.name}`, pl.Mem.Vec) first"
        return (f"a {where.name if where else '?'} tile holds a matmul operand and has no "
                "path to Vec: compute on the tile it was moved from")


def _matmul_hint(name: str) -> str:
    if name == "acc":
        return "the accumulator is the result of a pl.matmul (it lives in Acc)"
    if name == "bias":
        return ("load the [1, N] bias row with target_memory=pl.Mem.Mat and "
                "pl.move(t, pl.Mem.Bias)")
    space = _MATMUL_OPERANDS[name].name
    if name.endswith("_scale"):
        return (f"load the FP8E8M0 scales with target_memory=pl.Mem.Mat and "
                f"pl.move(t, pl.Mem.{space})")
    return (f"load the operand with target_memory=pl.Mem.Mat and pl.move(t, pl.Mem.{space}); "
            "or use pl.matmul on tensors inside pl.at, which places everything itself")
