"""TensorToTile's whole-value form: each tensor value of a kernel is one tile.

The chunked form (tensor_to_tile.py) recomputes a tensor value wherever it is read, chunk
by chunk, which needs the value to be a function of the kernel's inputs at that point.  A
kernel whose values live longer than one straight run of statements is lowered value by
value instead, statement for statement:
- a tensor value carried around a loop (`acc = pl.add(acc, ...)`: an RMSNorm partial
  sum), or chosen by an `if` (`acc = pl.matmul(...)` on the first K block,
  `acc = pl.matmul_acc(acc, ...)` on the others);
- a tensor value computed in a loop and read after it;
- `pl.reshape` of a tensor value, and a slice of a computed value (not of a tensor passed
  to the kernel);
- a sort (`pl.sort32`, `pl.mrgsort`) or `pl.paged_gather`: its result is not of its
  operands' shape, so no one frame of chunks covers them.
Each such value is one tile of its whole shape, under the value's own name, so a value
rebound in a loop is the loop-carried tile (AllocateMemoryAddr keeps it in one buffer).
A tensor passed to the kernel (or a view of it) is loaded where an operator reads it:
into Vec, or into Mat and moved to Left / Right for a matmul.  `pl.create_tensor` of a
value is a `pl.create_tile` in the buffer its later bindings compute into (Acc for a
matmul accumulator); `pl.full` / `pl.reshape` / a slice are their tile forms; a write
(`out = pl.assemble(out, v, [r, c])`) is a `pl.store` of v's tile.  Every tile must fit
its buffer whole: AllocateMemoryAddr reports the one that does not.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.dtypes import DataType
from ..ir.errors import InternalError, LoweringError
from ..ir.nodes import Assign, Call, Const, ExprList, For, If, Var, While
from ..ir.ops import get_op, make_call
from ..ir.ops.gather import paged_gather_operands, tensor_gather_operands
from ..ir.ops.random import SEEDS
from ..ir.ops.reduction import needs_scratch
from ..ir.types import INDEX, AtomicType, MemorySpace, ScalarType, TensorType, TileType
from ..ir.visitor import IRMutator, IRVisitor, exposed_uses, statements
from .cube_vector import VECTOR_CATEGORIES
from .names import NameSupply
from .outline_incore import written_tensor
from .tensor_views import call_of, is_view, tensor_type_of

_MATMUL_SIDES = {"lhs": MemorySpace.Left, "rhs": MemorySpace.Right}


def tile_form(call: Call, operand, shape, names: NameSupply, target: str,
              first_col=None) -> tuple[list, Call]:
    """The tile-level call computing the tensor-level vector operator `call`, with the
    statements it needs first (a reduction's scratch tile).  `operand(var)` is the
    tile standing for a tensor operand; `shape` the result tile's shape; `first_col` the
    index of its first column in the value (None: 0), where a sequence starts."""
    op = get_op(call.op)
    attrs = dict(call.attrs)
    operands = op.operands(call.args, attrs)
    real_attrs = {k: v for k, v in attrs.items() if k not in operands}
    dtype = call.type.dtype if isinstance(call.type, TensorType) else None
    if op.category == "expands":  # the target gives only the shape
        return [], make_call("full", operands["scalar"], span=call.span, shape=shape, dtype=dtype)
    if call.op == "tensor.ci":  # a chunk of columns continues the sequence where it starts
        start = operands["start"]
        if first_col is not None:
            start = make_call("sub" if call.attr("descending") else "add", start, first_col,
                              span=call.span)
        return [], make_call("ci", start, span=call.span, shape=shape, dtype=dtype,
                             descending=call.attr("descending"))
    if op.name == "tensor.random":
        seeds = [operands[name] for name in SEEDS]
        return [], make_call("random", *seeds, span=call.span, shape=shape, dtype=dtype,
                             rounds=call.attr("rounds"))
    if op.category == "fill":
        return [], make_call("full", operands["value"], span=call.span, shape=shape, dtype=dtype)
    if op.category == "gather_tensor":  # the table stays in global memory
        table, index = tensor_gather_operands(call)
        return [], make_call("tile.mgather", table, operand(index), span=call.span,
                             coalesce="elem")
    # Operands in the operator's order, a left-out one None.
    given = [operand(v) if isinstance(v, Var) and isinstance(v.type, TensorType) else v
             for v in operands.values()]
    args = [a for a in given if a is not None]
    before: list = []
    if op.name == "mrgsort" and call.attr("block_len") is None:
        # The list form's staging tile, a row as long as the sources together.
        scratch = make_call("create_tile", span=call.span, shape=shape, dtype=dtype)
        tmp = Var(names.fresh(f"{target}_tmp"), scratch.type, call.span)
        before.append(Assign((tmp,), scratch, call.span))
        return before, make_call(call.op, *given[:4], tmp, span=call.span, **real_attrs)
    if needs_scratch(op.name):
        x = args[0]
        if not isinstance(x.type, TileType):
            raise InternalError(f"TensorToTile: a reduction of {x}, not of a tile")
        tmp = Var(names.fresh(f"{target}_tmp"), x.type, call.span)
        scratch = make_call("create_tile", span=call.span, shape=x.type.shape,
                            dtype=x.type.dtype)
        before.append(Assign((tmp,), scratch, call.span))
        args = [x, tmp]
    return before, make_call(call.op, *args, span=call.span, **real_attrs)


def require_table_in_memory(call: Call, computed) -> None:
    """Refuses a pl.tensor.gather whose table is not a tensor in global memory but a value
    the kernel computes (`computed`: their names)."""
    table, _ = tensor_gather_operands(call)
    if not isinstance(table, Var) or table.name in computed:
        raise LoweringError(
            f"pl.tensor.gather reads `{table}` in global memory, and it is a value computed in "
            "the kernel", call.span,
            hint="write the table into a tensor in one pl.at block and gather from it in the "
                 "next")


def needs_whole_values(fn, params: set[str]) -> bool:
    """Whether a kernel keeps tensor values beyond one straight run of statements (see the
    module docstring), so that it is lowered value by value."""
    if any(isinstance(s, Assign) and isinstance(s.value, Call)
           and isinstance(s.value.type, TensorType) and (get_op(s.value.op).category == "sort"
                                                         or s.value.op == "paged_gather")
           for s in statements(fn.body)):
        return True
    finder = _LongLivedValues(params)
    finder.visit_function(fn)
    return finder.found


def _is_value(stmt) -> bool:
    """A statement computing a tensor value (not a write into a buffer, not a view)."""
    return (isinstance(stmt, Assign) and len(stmt.targets) == 1
            and isinstance(stmt.value, Call) and isinstance(stmt.value.type, TensorType)
            and written_tensor(stmt) is None and not is_view(stmt))


def _writes_a_value(stmt) -> bool:
    """`out = pl.assemble(out, v, ...)` of a tensor value v (not a tile's store)."""
    return (written_tensor(stmt) is not None and call_of(stmt).op == "assemble"
            and isinstance(call_of(stmt).args[1].type, TensorType))


class _LongLivedValues(IRVisitor):
    """Finds a tensor value that outlives one run of statements (`found`)."""

    def __init__(self, params: set[str]):
        self.memory = set(params)  # names of tensors in global memory: parameters, views
        self.found = False

    def visit_body(self, body) -> None:
        for i, stmt in enumerate(body):
            if isinstance(stmt, (For, While)):
                computed = {s.targets[0].name for s in statements(stmt.body) if _is_value(s)}
                carried = computed & exposed_uses((stmt,))
                read_after = computed & exposed_uses(body[i + 1:])
                self.found |= bool(carried or read_after)
            self.visit_stmt(stmt)

    def visit_If(self, stmt: If) -> None:
        self.found |= any(_is_value(s) or _writes_a_value(s) for s in
                          statements(stmt.then_body + stmt.else_body))
        super().visit_If(stmt)

    def visit_Assign(self, stmt: Assign) -> None:
        if is_view(stmt):
            if call_of(stmt).args[0].name in self.memory:
                self.memory.add(stmt.targets[0].name)
            else:
                self.found = True  # a slice of a computed value
        elif _is_value(stmt) and call_of(stmt).op in ("reshape", "reinterpret_view", "matmul_acc"):
            self.found = True  # a matmul_acc keeps its accumulator as a tile
        super().visit_Assign(stmt)


class WholeValues(IRMutator):
    """Rewrites a kernel's tensor statements value by value (module docstring).

    In a kernel that asks for the cross-core pipe (`piped`: a mixed `pl.at` block with
    `pl.split` / `pl.cross_core_slot`), a value crosses between the units where it is read:
    a vector operator reads a matmul's value through `pl.move(acc, target_memory=Vec)` and
    a matmul reads a vector value through `pl.move(v, target_memory=Mat)` (then Left /
    Right), upstream's boundary moves, which ExpandMixedKernel turns into the pipe.  There a
    tensor the kernel wrote whole from a value (`acc` kept after the block) is read as that
    value where the write reaches (in the same body, the value not rebound since): read from
    memory, it would be one unit's write and the other's read, which nothing orders."""

    def __init__(self, fn, names: NameSupply, piped: bool = False):
        self.names = names
        self.piped = piped
        self.cube_values: set[str] = set()  # values whose current binding is a cube tile
        self.stored: dict[str, Var] = {}  # piped: tensor -> the value written into it whole
        self.memory = {p.var.name for p in fn.params}  # tensors in global memory
        self.tiles: dict[str, TileType] = {}  # tensor value -> the type of its tile
        # Values some binding of which a matmul computes: their tiles live in Acc.
        self.accumulators = {s.targets[0].name for s in statements(fn.body)
                             if _is_value(s) and get_op(call_of(s).op).category == "matmul"}

    def mutate_Var(self, expr: Var):
        tile = self.tiles.get(expr.name)
        return replace(expr, type=tile) if tile is not None and \
            isinstance(expr.type, TensorType) else expr

    def mutate_For(self, stmt: For):
        return self._scoped(super().mutate_For, stmt)

    def mutate_While(self, stmt: While):
        return self._scoped(super().mutate_While, stmt)

    def mutate_If(self, stmt: If):
        return self._scoped(super().mutate_If, stmt)

    def _scoped(self, mutate, stmt):
        """A loop or branch: the whole writes it makes reach no further than its bodies
        (a branch not taken, or a loop run zero times, leaves the tensor as it was)."""
        outer = dict(self.stored)
        new = mutate(stmt)
        self.stored = {t: v for t, v in outer.items() if self.stored.get(t) is v}
        return new

    def mutate_Assign(self, stmt: Assign):
        written = written_tensor(stmt)
        if written is not None:
            self.stored.pop(written, None)
        if is_view(stmt) and call_of(stmt).args[0].name in self.memory:
            self.memory.add(stmt.targets[0].name)
            self.tiles.pop(stmt.targets[0].name, None)  # the name is a view from here on
            return stmt
        if written_tensor(stmt) is not None and call_of(stmt).op == "assemble":
            return self._write(stmt)
        if not (_is_value(stmt) or is_view(stmt)):  # a view here: of a computed value
            if isinstance(stmt.value, Var) and stmt.value.name in self.tiles:
                return self._bind(stmt, stmt.targets[0], self.mutate_Var(stmt.value), [])
            return super().mutate_Assign(stmt)
        target = stmt.targets[0]
        if target.name in self.memory:
            raise LoweringError(
                f"`{target.name}` names a tensor in global memory here and is rebound to a "
                "value computed in a kernel whose values are kept as tiles",
                stmt.span,
                hint=f"give the value another name, or write it with `{target.name}[...] = ...`",
            )
        before: list = []
        return self._bind(stmt, target, self._compute(call_of(stmt), target.name, before),
                          before)

    def _bind(self, stmt: Assign, target: Var, value, before: list) -> list:
        tile = Var(target.name, value.type, target.span)
        self.tiles[target.name] = value.type
        self.stored = {t: v for t, v in self.stored.items() if v.name != target.name}
        cube = isinstance(value, Call) and (get_op(value.op).category == "matmul" or (
            value.op == "create_tile" and value.attr("target_memory") is MemorySpace.Acc))
        if cube or (isinstance(value, Var) and value.name in self.cube_values):
            self.cube_values.add(target.name)
        else:
            self.cube_values.discard(target.name)
        return before + [Assign((tile,), value, stmt.span)]

    def _compute(self, call: Call, target: str, before: list) -> Call:
        category = get_op(call.op).category
        value = tensor_type_of(call)
        if call.op == "create_tensor":
            memory = MemorySpace.Acc if target in self.accumulators else MemorySpace.Vec
            return make_call("create_tile", span=call.span, shape=value.shape,
                             dtype=value.dtype, target_memory=memory)
        if call.op in ("reshape", "reinterpret_view", "slice"):
            x = self._vector_operand(call.args[0], before, call)
            return make_call(call.op, x, *call.args[1:], span=call.span, **dict(call.attrs))
        if category == "matmul":
            return self._matmul(call, before)
        if category not in VECTOR_CATEGORIES:
            raise LoweringError(f"tensor-level pl.{call.op} is not supported in a kernel",
                                call.span, hint=f"load tiles and pl.{call.op} them")
        if call.op == "paged_gather":
            return self._paged_gather(call, before)
        if category == "gather_tensor":
            require_table_in_memory(call, set(self.tiles))
        extra, tile_call = tile_form(
            call, lambda v: self._vector_operand(v, before, call),
            value.shape, self.names, target)
        before.extend(extra)
        return tile_call

    def _paged_gather(self, call: Call, before: list) -> Call:
        """pl.paged_gather's Vec form: the physical rows block_table[idx >> k] << k |
        idx & (2**k - 1) (block_size = 2**k) computed on INT32 tiles, the blocks and then
        the rows gathered by MGATHER from global memory."""
        src, indices, table = paged_gather_operands(call)
        for tensor, what in ((src, "rows"), (table, "blocks"), (indices, "indices")):
            if not isinstance(tensor, Var) or tensor.name not in self.memory:
                raise LoweringError(
                    f"pl.paged_gather reads its {what} from `{tensor}` in global memory, and "
                    "it is a value computed in the kernel", call.span,
                    hint="write the value into a tensor in one pl.at block and gather from it "
                         "in the next")
        shift = call.attr("block_size").bit_length() - 1
        int32 = ScalarType(DataType.INT32)
        span = call.span

        def tile(name: str, value: Call) -> Var:
            var = Var(self.names.fresh(name), value.type, span)
            before.append(Assign((var,), value, span))
            return var

        at = tile("at", make_call("load", indices, ExprList((Const(0, INDEX), Const(0, INDEX))),
                                  span=span, shapes=tuple(indices.type.shape)))
        block = tile("block", make_call("shr", at, Const(shift, int32), span=span))
        slot = tile("slot", make_call("and_", at, Const((1 << shift) - 1, int32), span=span))
        page = tile("page", make_call("tile.mgather", table, block, span=span, coalesce="elem"))
        first = tile("first", make_call("shl", page, Const(shift, int32), span=span))
        row = tile("row", make_call("add", first, slot, span=span))
        return make_call("tile.mgather", src, row, span=span, coalesce="row")

    def _matmul(self, call: Call, before: list) -> Call:
        op = get_op(call.op)
        attrs = dict(call.attrs)
        operands = op.operands(call.args, attrs)
        args = []
        for name, value in operands.items():
            if name in _MATMUL_SIDES:
                value = self._cube_operand(value, _MATMUL_SIDES[name], before, call)
            elif value is not None:
                value = self._accumulator(value, call)
            args.append(value)
        real = {k: v for k, v in attrs.items() if k not in operands}
        return make_call(call.op, *args, span=call.span, **real)

    def _accumulator(self, var: Var, call: Call) -> Var:
        if var.name not in self.tiles:
            raise LoweringError(
                f"pl.matmul_acc accumulates into `{var.name}`, which this kernel has not "
                "computed with pl.matmul: an accumulator lives in the cube's Acc buffer",
                call.span,
                hint=f"start it with `{var.name} = pl.matmul(a, b)` on the first K block",
            )
        return self.mutate_Var(var)

    def _cube_operand(self, var: Var, side: MemorySpace, before: list, call: Call) -> Var:
        var = self.stored.get(var.name, var)
        if self.piped and var.name in self.tiles and var.name not in self.cube_values:
            # A vector value the cube reads: it crosses into Mat, then on to Left / Right.
            mat = self._moved(self.mutate_Var(var), MemorySpace.Mat, before, call)
            return self._moved(mat, side, before, call)
        if var.name not in self.memory:
            raise LoweringError(
                f"pl.{call.op} reads `{var.name}`, a value computed in the kernel; the cube "
                "reads its operands from global memory",
                call.span,
                hint="write the value into an output (or a pl.create_tensor of the "
                     "orchestration) in one pl.at block and multiply it in the next",
            )
        mat = self._operand(var, before, MemorySpace.Mat, call)
        return self._moved(mat, side, before, call, var.name)

    def _moved(self, tile: Var, memory: MemorySpace, before: list, call: Call,
               base: str | None = None) -> Var:
        """`tile` moved into `memory` by a statement put in `before`."""
        moved = make_call("move", tile, span=call.span, target_memory=memory)
        var = Var(self.names.fresh(f"{base or tile.name}_{memory.name.lower()}"), moved.type,
                  call.span)
        before.append(Assign((var,), moved, call.span))
        return var

    def _vector_operand(self, var, before: list, call: Call):
        """The tile of a tensor operand a vector operator reads: in a piped kernel a cube
        value crosses to Vec where it is read (a move per read: each is one crossing)."""
        if isinstance(var, Var):
            var = self.stored.get(var.name, var)
        if self.piped and isinstance(var, Var) and var.name in self.cube_values:
            return self._moved(self.mutate_Var(var), MemorySpace.Vec, before, call)
        return self._operand(var, before, MemorySpace.Vec, call)

    def _operand(self, var, before: list, memory: MemorySpace, call: Call):
        """The tile of a tensor operand: the value's own, or a tensor of global memory
        loaded whole into `memory` here."""
        if not (isinstance(var, Var) and isinstance(var.type, TensorType)):
            return var
        if var.name in self.tiles:
            return self.mutate_Var(var)
        if var.name not in self.memory:
            raise InternalError(f"TensorToTile: `{var.name}` has no value at pl.{call.op}")
        zeros = ExprList(tuple(Const(0, INDEX) for _ in var.type.shape), call.span)
        load = make_call("load", var, zeros, span=call.span, shapes=var.type.shape,
                         target_memory=memory)
        tile = Var(self.names.fresh(f"{var.name}_tile"), load.type, call.span)
        before.append(Assign((tile,), load, call.span))
        return tile

    def _write(self, stmt: Assign) -> list:
        call = call_of(stmt)
        dst, src, offsets = call.args
        before: list = []
        tile = self._operand(src, before, MemorySpace.Vec, call)
        if self.piped and isinstance(src, Var) and src.name in self.tiles and \
                call.attr("atomic") in (None, AtomicType.None_) and \
                tuple(tile.type.shape) == tuple(tensor_type_of(dst).shape) and \
                all(isinstance(o, Const) and o.value == 0 for o in offsets.items):
            self.stored[stmt.targets[0].name] = src
        offsets = self.mutate_expr(offsets)
        store = make_call("store", tile, offsets, dst, span=call.span,
                          atomic=call.attr("atomic"))
        return before + [Assign(stmt.targets, store, stmt.span)]
