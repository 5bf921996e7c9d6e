"""TensorToTile: tensor-level operators in a kernel become load / compute / store on tiles.

A run of consecutive tensor-level statements is one computation over a frame
[M, N]: elementwise operators on [M, N] tensors, row reductions to [M, 1] and column
reductions to [1, N], and broadcasts of such vectors back.  It is cut into chunks
[R, C] so that every tile of one chunk fits the backend's Vec buffer at once, and the
chunks are walked with `pl.range`:
- R is the largest divisor of M that fits with whole rows (C = N); rows are split into
  column chunks only when a single row does not fit;
- a row reduction needs whole rows (C = N) and a column reduction whole columns
  (R = M); a run with both must fit in one chunk, else the user is told to write tiles.
A run holding `pl.matmul` is lowered whole-K instead (tensor_matmul.py).  Tensor
slices are views: loads read through them (tensor_views.py).  Tensor values that never
reach a `pl.assemble` are dead and dropped.  An element read of a tensor (`x[i, j]`) is
a [1, 1] load read at [0, 0]; met inside a run, it moves before the run unless it reads
a tensor the run writes (then the run ends first, so the read sees its stores).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir.errors import CapacityError, LoweringError, Span
from ..ir.nodes import Assign, Call, Const, ExprList, ExprStmt, For, Return, Var, While
from ..ir.ops import get_op, make_call, write_destination
from ..ir.ops.barrier import SYNCALL
from ..ir.ops.gather import tensor_gather_operands
from ..ir.ops.reduction import needs_scratch
from ..ir.types import INDEX, FunctionType, ScalarType, SplitMode, TensorType, TileType
from ..ir.visitor import IRMutator, defs, statements, uses
from .cube_vector import CUBE, VECTOR, VECTOR_CATEGORIES, unit_of
from .legalize_tile_cast import cast_path
from .manager import FunctionPass
from .names import NameSupply
from .outline_incore import written_tensor, written_tensors
from .properties import IRProperty
from .tensor_matmul import lower_matmul_run
from .tensor_scatter import LowerTensorScatters
from .tensor_values import WholeValues, needs_whole_values, require_table_in_memory, tile_form
from .tensor_views import call_of, fold_views, index_add, is_view, tensor_type_of

_LOWERED = VECTOR_CATEGORIES + ("matmul",)
_ALIGN = 32


def _is_tensor_stmt(stmt) -> bool:
    if not (isinstance(stmt, Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, Call)):
        return False
    call = stmt.value
    if call.op == "assemble":
        return isinstance(call.args[1].type, TensorType)
    return get_op(call.op).category in _LOWERED and isinstance(call.type, TensorType)


class TensorToTile(FunctionPass):
    name = "TensorToTile"
    produces = (IRProperty.TileLevelKernels,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        names = NameSupply(fn)
        params = {p.var.name: p.var for p in fn.params}
        fn = LowerTensorScatters(fn, names, ctx.backend.capacities["Vec"]).mutate_function(fn)
        piped = _piped(fn)
        if piped or needs_whole_values(fn, set(params)):
            fn = WholeValues(fn, names, piped).mutate_function(fn)
            fn = replace(fn, body=tuple(_returned_params(s, params) for s in fn.body))
            return fold_views(_TensorReads(fn, names).mutate_function(fn))
        unique = _UniqueTensorValues(names)
        split = fn.attr("split")
        fn = unique.mutate_function(fn)
        body = _Runs(names, ctx.backend, params, unique.original, split).body(fn.body, {})
        fn = _TileWrites().mutate_function(replace(fn, body=tuple(body)))
        return fold_views(_TensorReads(fn, names).mutate_function(fn))


def _piped(fn) -> bool:
    """Whether a kernel is a mixed block that asks for the cross-core pipe (its "split" or
    "slot_num" attribute, and tensor-level work of both units): it is lowered value by
    value, as upstream's ConvertTensorToTileOps does, each crossing a boundary move that
    ExpandMixedKernel turns into the pipe."""
    if fn.attr("split") is None and fn.attr("slot_num") is None:
        return False
    units = {unit_of(s.value) for s in statements(fn.body) if isinstance(s, Assign)}
    return CUBE in units and VECTOR in units


@dataclass
class _Kept:
    """A tensor value a run computed: its definition, the tensors it reads (through
    every value it is computed from), the tensor written since, if any, and the
    `pl.system.syncall` passed since, if any (other blocks may have written what it reads:
    it cannot be recomputed after the barrier)."""

    stmt: Assign
    reads: frozenset
    stale: str | None = None
    barrier: Span | None = None


class _Runs:
    """Cuts a statement list into runs of tensor statements and lowers each, loop bodies
    the same way.  A tensor value is not stored anywhere: a later run that reads it
    recomputes it from its definition (`kept`), which is right as long as nothing it
    reads was written in between; values computed in a loop stay in it."""

    def __init__(self, names: NameSupply, backend, params: dict[str, Var],
                 original: dict[str, str], split=None):
        self.names, self.backend, self.params = names, backend, params
        self.original = original  # unique name -> the user's, for messages
        self.split = split  # the kernel's pl.split mode, if any
        self.views: dict[str, str] = {}  # view -> the parameter it views

    def body(self, stmts, kept: dict[str, _Kept]) -> list:
        out: list = []
        run: list[Assign] = []
        written: set[str] = set()  # tensors the current run writes
        for stmt in _without_tensor_aliases(stmts, self.params):
            if _is_tensor_stmt(stmt):
                if run and _reads(stmt) & written:
                    # A read of what this run wrote (a window of it) must see the store:
                    # the run ends here and the next one loads after it.
                    out.extend(self._lower(run, kept))
                    run, written = [], set()
                run.append(stmt)
                if call_of(stmt).op == "assemble":
                    written.add(stmt.targets[0].name)
                continue
            if is_view(stmt):
                self.views[stmt.targets[0].name] = self._base(call_of(stmt).args[0].name)
                out.append(stmt)  # a view moves no data: it does not end a run
                continue
            if run and _scalar_before_run(stmt, run, written):
                out.append(stmt)  # `s = x[i, j]` of an input: read before the run loads
                continue
            if run:
                out.extend(self._lower(run, kept))
                run, written = [], set()
            out.append(self._between_runs(stmt, kept))
        if run:
            out.extend(self._lower(run, kept))
        return out

    def _between_runs(self, stmt, kept: dict[str, _Kept]):
        """A statement outside the runs: a loop's body is cut into runs the same way."""
        if isinstance(stmt, (For, While)):
            inner = dict(kept)
            # Every iteration may follow the loop's writes: values they read are stale.
            self._invalidate(inner, stmt)
            stmt = replace(stmt, body=tuple(self.body(stmt.body, inner)))
        _reject_unlowered(stmt)
        self._invalidate(kept, stmt)
        return _returned_params(stmt, self.params)

    def _base(self, name: str) -> str:
        return self.views.get(name, name)

    def _invalidate(self, kept: dict[str, _Kept], stmt) -> None:
        """Kept values that read a tensor `stmt` writes are stale from here on, and every
        kept value once `stmt` holds a cross-block barrier."""
        barrier = next((b.span for b in statements(stmt) if _is_syncall(b)), None)
        if barrier is not None:
            for name, value in kept.items():
                if value.barrier is None:
                    kept[name] = replace(value, barrier=barrier)
        written = {self._base(n) for n in written_tensors([stmt])}
        for name, value in kept.items():
            hit = sorted(value.reads & written)
            if hit and value.stale is None:
                kept[name] = replace(value, stale=hit[0])

    def _lower(self, run: list[Assign], kept: dict[str, _Kept]) -> list:
        """The run lowered, after the kept definitions it reads; its own values kept."""
        stmts = self._recomputed(run, kept) + run
        lowered = _lower_run(stmts, self.names, self.backend, self.split)
        reads: dict[str, frozenset] = {}
        for s in stmts:
            found: set[str] = set()
            for a in _tensor_operands(s):
                found |= reads.get(a.name) or {self._base(a.name)}
            if call_of(s).op == "assemble":
                continue
            reads[s.targets[0].name] = frozenset(found)
            kept[s.targets[0].name] = _Kept(s, frozenset(found))
        for s in run:
            if call_of(s).op == "assemble":
                self._invalidate(kept, s)
        return lowered

    def _recomputed(self, run: list[Assign], kept: dict[str, _Kept]) -> list[Assign]:
        """The kept definitions `run` needs (and theirs), in dependency order."""
        out: list[Assign] = []
        defined = {s.targets[0].name for s in run if call_of(s).op != "assemble"}

        def need(var: Var, at) -> None:
            name = var.name
            if name in defined or name in self.params or name in self.views:
                return
            value = kept.get(name)
            user = self.original.get(name, name)
            if value is None:
                raise LoweringError(
                    f"`{user}` is a tensor computed inside a loop of this kernel and read "
                    "after the loop; tensor-level values do not leave the loop they are "
                    "computed in",
                    at.span,
                    hint="write it into an output inside the loop (`out[...] = ...`), or "
                         "compute it after the loop",
                )
            if value.barrier is not None:
                line = f" at line {value.barrier.line}" if value.barrier else ""
                raise LoweringError(
                    f"`{user}` is a tensor value computed before the pl.system.syncall{line} "
                    "and read after it; tensor values are computed where they are used, and "
                    "past the barrier other blocks may have written what it is computed from",
                    at.span,
                    hint=f"store `{user}` into an output before the barrier and load it after "
                         "(with pl.system.cacheinvalid / fence around the barrier)",
                )
            if value.stale is not None:
                raise LoweringError(
                    f"`{user}` is computed from `{value.stale}`, which is written before "
                    f"`{user}` is read here; tensor values are computed where they are used",
                    at.span,
                    hint=f"read `{user}` before `{value.stale}` is written, or write `{user}` "
                         "into an output and read that",
                )
            defined.add(name)
            for a in _tensor_operands(value.stmt):
                need(a, value.stmt)
            out.append(value.stmt)

        for s in run:
            for a in _tensor_operands(s):
                need(a, s)
            if call_of(s).op != "assemble":
                defined.add(s.targets[0].name)
        return out


def _is_syncall(stmt) -> bool:
    return isinstance(stmt, ExprStmt) and isinstance(stmt.value, Call) \
        and stmt.value.op == SYNCALL


def _tensor_operands(stmt: Assign) -> list[Var]:
    """The tensor values a tensor statement reads (an assemble: its source; a broadcast
    of a scalar: not the tensor that gives only its shape)."""
    call = call_of(stmt)
    if call.op == "assemble":
        args = (call.args[1],)
    elif get_op(call.op).category == "expands":
        args = call.args[1:]
    else:
        args = call.args
    return [a for a in args if isinstance(a, Var) and isinstance(a.type, TensorType)]


class _UniqueTensorValues(IRMutator):
    """Each binding of a tensor value gets a name of its own: the first keeps the user's
    name, a later one becomes `<name>_<n>`, and the reads after it follow (program order).
    Runs are lowered by name, so two values of one name in a run would be one tile."""

    def __init__(self, names: NameSupply):
        self.names = names
        self.current: dict[str, str] = {}
        self.original: dict[str, str] = {}

    def mutate_Var(self, expr: Var):
        name = self.current.get(expr.name)
        return replace(expr, name=name) if name and isinstance(expr.type, TensorType) else expr

    def mutate_Return(self, stmt: Return):
        return stmt  # a kernel returns its parameters' buffers, by the parameters' names

    def mutate_Assign(self, stmt: Assign):
        value = self.mutate_expr(stmt.value)
        if written_tensor(stmt) is not None:  # a write into a buffer: not a new value
            return replace(stmt, value=value, targets=tuple(
                self.mutate_Var(t) for t in stmt.targets))
        targets = []
        for t in stmt.targets:
            if isinstance(t.type, TensorType):
                name = self.names.fresh(t.name) if t.name in self.current else t.name
                self.current[t.name] = name
                self.original[name] = t.name
                t = replace(t, name=name)
            targets.append(t)
        return replace(stmt, value=value, targets=tuple(targets))


def _scalar_before_run(stmt, run: list, written: set[str]) -> bool:
    """Whether a scalar statement met inside a run can move before it: it reads nothing
    the run writes and binds no name the run reads, so the run need not end (which would
    drop the run's values that no write has consumed yet)."""
    if not (isinstance(stmt, Assign) and all(isinstance(t.type, ScalarType)
                                             for t in stmt.targets)):
        return False
    return not (set(uses(stmt)) & written) and not (set(defs(stmt)) & set(uses(run)))


class _Renamed(IRMutator):
    """Reads of aliased names replaced by the value they alias."""

    def __init__(self, aliases: dict[str, Var]):
        self.aliases = aliases

    def mutate_Var(self, expr: Var):
        return self.aliases.get(expr.name, expr)


def _reads(stmt: Assign) -> set[str]:
    """Names of the tensors a tensor statement reads (an assemble reads its source only)."""
    call = call_of(stmt)
    operands = (call.args[1],) if call.op == "assemble" else call.args
    return {a.name for a in operands if isinstance(a, Var) and isinstance(a.type, TensorType)}


def _without_tensor_aliases(body, params: dict[str, Var]) -> list:
    """Reads that name another tensor value, resolved to that value:
    - `s = v` between tensors: s is read as v and the statement goes, so it does not cut
      the run of tensor statements (which would drop v as dead before s is read);
      rebinding a parameter's name keeps its statement;
    - after a whole-tensor write `d = pl.assemble(d, v, [0, 0])`, the tensor statements
      of the same run read v where they read d (the store has not happened when a run
      loads its inputs) -- unless v is a matmul result or the reader a matmul: values
      crossing between the cube and the vector unit go through memory (cube_vector.py)."""
    aliases: dict[str, Var] = {}
    written: dict[str, Var] = {}
    units: dict[str, str] = {}  # tensor value -> the unit computing it (cube_vector.py)
    out = []
    for stmt in body:
        if aliases:
            stmt = _Renamed(aliases).mutate_stmt(stmt)
        tensor_stmt = _is_tensor_stmt(stmt)
        if not tensor_stmt and not is_view(stmt):
            written = {}  # the run ends: later runs load d from memory
        elif written and tensor_stmt and unit_of(stmt.value) != CUBE:
            # (a tensor-level matmul reads its operands from memory, on the cube)
            stmt = _read_from(stmt, written)
        if (isinstance(stmt, Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, Var)
                and isinstance(stmt.value.type, TensorType)
                and stmt.targets[0].name not in params):
            aliases[stmt.targets[0].name] = stmt.value
            continue
        for target in stmt.targets if isinstance(stmt, Assign) else ():
            aliases.pop(target.name, None)
            written.pop(target.name, None)
        unit = unit_of(call_of(stmt)) if tensor_stmt else None
        if unit is not None:
            units[stmt.targets[0].name] = unit
        if (tensor_stmt and call_of(stmt).op == "assemble" and _whole_write(call_of(stmt))
                and units.get(call_of(stmt).args[1].name) != CUBE):
            # A matmul result written out is read back from memory by the vector unit.
            written[stmt.targets[0].name] = call_of(stmt).args[1]
        out.append(stmt)
    return out


def _read_from(stmt: Assign, values: dict[str, Var]) -> Assign:
    """`stmt` reading `values[name]` for each tensor `name` it reads (not where it writes)."""
    rename = _Renamed(values)
    call = call_of(stmt)
    if call.op == "assemble":
        dst, src, offsets = call.args
        args = (dst, rename.mutate_expr(src), offsets)
    else:
        args = tuple(rename.mutate_expr(a) for a in call.args)
    return replace(stmt, value=replace(call, args=args))


def _whole_write(call: Call) -> bool:
    dst, src, offsets = call.args
    return (isinstance(src, Var)
            and tuple(tensor_type_of(src).shape) == tuple(tensor_type_of(dst).shape)
            and all(isinstance(i, Const) and i.value == 0 for i in offsets.items))


class _TileWrites(IRMutator):
    """`out[r0:r1, c0:c1] = tile` (an assemble of a tile) is a `pl.store` of the tile."""

    def mutate_Call(self, expr: Call):
        expr = super().mutate_Call(expr)
        if expr.op == "assemble" and isinstance(expr.args[1].type, TileType):
            dst, src, offsets = expr.args
            return make_call("store", src, offsets, dst, span=expr.span,
                             atomic=expr.attr("atomic"))
        return expr


class _TensorReads(IRMutator):
    """`s = pl.read(x, [i, j])` of a tensor: a [1, 1] tile loaded at [i, j], read at [0, 0]."""

    def __init__(self, fn, names: NameSupply):
        self.names = names
        self.readable = {p.var.name for p in fn.params} | {
            s.targets[0].name for s in statements(fn.body) if is_view(s)}

    def mutate_Assign(self, stmt: Assign):
        call = stmt.value
        if not (isinstance(call, Call) and call.op == "read"
                and isinstance(call.args[0].type, TensorType)):
            return stmt
        tensor, indices = call.args
        if tensor.name not in self.readable:
            raise LoweringError(
                f"`{tensor.name}` is a tensor computed in the kernel; only elements of tensors "
                "passed to it (or of tiles) can be read",
                stmt.span,
                hint="write the value to an output first, or compute on tiles and read the tile",
            )
        load = make_call("load", tensor, indices, span=call.span,
                         shapes=(1,) * len(indices.items))
        tile = Var(self.names.fresh(f"{tensor.name}_elem"), load.type, call.span)
        zeros = ExprList(tuple(Const(0, INDEX) for _ in indices.items), indices.span)
        read = make_call("read", tile, zeros, span=call.span)
        return [Assign((tile,), load, stmt.span), replace(stmt, value=read)]


def _reject_unlowered(stmt) -> None:
    """A tensor-level operator this pass does not tile (pl.transpose of a tensor)."""
    value = getattr(stmt, "value", None)
    if (isinstance(stmt, Assign) and isinstance(value, Call) and isinstance(value.type, TensorType)
            and value.op not in ("slice", "create_tensor") and write_destination(value) is None):
        raise LoweringError(f"tensor-level pl.{value.op} is not supported in a kernel",
                            stmt.span, hint=f"load tiles and pl.{value.op} them")


def _returned_params(stmt, params: dict[str, Var]):
    """A kernel returns its parameter buffers, whatever the name was rebound to."""
    if not isinstance(stmt, Return):
        return stmt
    values = []
    for v in stmt.values:
        if isinstance(v, Var) and isinstance(v.type, TensorType):
            if v.name not in params:
                raise LoweringError(
                    f"the kernel returns `{v.name}`, a tensor it computed but never stored",
                    v.span,
                    hint="write results into an output parameter with pl.store / `out[:] = ...`",
                )
            v = params[v.name]
        values.append(v)
    return replace(stmt, values=tuple(values))


def _lower_run(run: list[Assign], names: NameSupply, backend, split=None) -> list:
    defined = {s.targets[0].name: s for s in run if call_of(s).op != "assemble"}
    writes = [s for s in run if call_of(s).op == "assemble"]
    # Liveness: only values that flow into a write are computed.
    needed: set[str] = set()
    work = [call_of(w).args[1] for w in writes]
    while work:
        v = work.pop()
        if isinstance(v, Var) and v.name in defined and v.name not in needed:
            needed.add(v.name)
            work.extend(call_of(defined[v.name]).args)
    computed = [s for s in run if call_of(s).op != "assemble" and s.targets[0].name in needed]
    if not writes:
        return []
    if any(get_op(call_of(s).op).category == "matmul" for s in computed):
        return lower_matmul_run(computed, writes, names, backend)
    return _VectorRun(computed, writes, names, backend, split).lower()


class _VectorRun:
    """One run of vector operators over a frame [M, N], lowered chunk by chunk."""

    def __init__(self, computed: list[Assign], writes: list[Assign], names: NameSupply, backend,
                 split=None):
        self.computed, self.writes = computed, writes
        self.names, self.backend = names, backend
        self.split = split
        defined = {s.targets[0].name for s in computed}
        self.inputs: dict[str, Var] = {}
        for stmt in computed + writes:
            for a in _chunk_operands(call_of(stmt), defined):
                if isinstance(a, Var) and isinstance(a.type, TensorType) and a.name not in defined:
                    self.inputs.setdefault(a.name, a)
        values = [tensor_type_of(v) for v in [s.targets[0] for s in computed]
                  + list(self.inputs.values())]
        for t in values:
            if len(t.shape) != 2:
                raise LoweringError(
                    f"tensor-level operators need rank-2 tensors, got shape {list(t.shape)}",
                    writes[0].span,
                    hint="reshape to [rows, cols] on the host",
                )
        self.rows = max(t.shape[0] for t in values)
        self.cols = max(t.shape[1] for t in values)
        for stmt in computed + writes:
            call = call_of(stmt)
            t = tensor_type_of(call.args[1] if call.op == "assemble" else call)
            if t.shape[0] not in (self.rows, 1) or t.shape[1] not in (self.cols, 1):
                raise LoweringError(
                    f"tensor-level operators of unrelated shapes in one kernel ({list(t.shape)} "
                    f"within a [{self.rows}, {self.cols}] computation) are not supported",
                    stmt.span,
                    hint="split the work into separate pl.at blocks, or write the tile code "
                         "yourself",
                )
        categories = {get_op(call_of(s).op).category for s in computed}
        self.split_rows = "reduce_col" not in categories
        self.split_cols = "reduce_row" not in categories

    # -- chunking

    def _tile_shape(self, shape, r: int, c: int) -> tuple[int, int]:
        return (r if shape[0] == self.rows else 1, c if shape[1] == self.cols else 1)

    def _bytes(self, r: int, c: int) -> int:
        """Vec bytes one chunk's tiles take (cast hops, reduction scratch and the buffers of
        a composite operator's expansion included)."""
        total = 0
        for v in self.inputs.values():
            t = tensor_type_of(v)
            total += _aligned(self._tile_shape(t.shape, r, c), t.dtype.itemsize)
        for s in self.computed:
            call = call_of(s)
            t = tensor_type_of(call)
            shape = self._tile_shape(t.shape, r, c)
            if call.op == "cast":
                path = cast_path(tensor_type_of(call.args[0]).dtype, t.dtype, self.backend,
                                 call.span)
                total += sum(_aligned(shape, d.itemsize) for d in path[1:])
                continue
            total += _aligned(shape, t.dtype.itemsize)
            # LowerCompositeOps gives pl.sin / pl.cos buffers of their own.
            total += sum(_aligned(shape, d.itemsize)
                         for d in get_op(call.op).scratch_dtypes(t.dtype))
            if needs_scratch(call.op):
                x = tensor_type_of(call.args[0])
                total += _aligned(self._tile_shape(x.shape, r, c), x.dtype.itemsize)
        return total

    def _chunk(self) -> tuple[int, int]:
        capacity = self.backend.capacities["Vec"]
        rows = _divisors(self.rows) if self.split_rows else [self.rows]
        cols = _divisors(self.cols) if self.split_cols else [self.cols]
        if self.split is SplitMode.UP_DOWN:
            rows = self._halves(rows, self.rows, self.split_rows, "rows", "columns")
        elif self.split is SplitMode.LEFT_RIGHT:
            cols = self._halves(cols, self.cols, self.split_cols, "columns", "rows")
        for r in rows:
            if self._bytes(r, cols[0]) <= capacity:
                return r, cols[0]
        for c in cols:
            if self._bytes(rows[-1], c) <= capacity:
                return rows[-1], c
        need = self._bytes(rows[-1], cols[-1])
        if not (self.split_rows and self.split_cols):
            whole = "rows" if not self.split_cols else "columns"
            raise CapacityError(
                f"this computation reduces whole {whole}, and one chunk of it needs {need} "
                f"bytes of Vec, more than the {capacity} of {self.backend.name}",
                self.writes[0].span,
                hint="write the tile code yourself: reduce in pieces with pl.load / "
                     "pl.row_sum / pl.add in a pl.range loop",
            )
        raise CapacityError(
            f"one element of every tile of this computation needs {need} bytes, more than the "
            f"Vec buffer's {capacity}",
            self.writes[0].span,
        )

    def _halves(self, sizes: list[int], extent: int, divisible: bool, axis: str,
                other: str) -> list[int]:
        """Chunk sizes of an axis `pl.split` halves between the two vector lanes: at most
        half of it, dividing that half."""
        mode = f"pl.split({self.split!r})"
        if not divisible:
            raise LoweringError(f"{mode} halves the vector work by {axis}, but this "
                                f"computation reduces whole {axis[:-1]}s",
                                self.writes[0].span,
                                hint=f"split along the {other} instead, or drop pl.split")
        if extent % 2:
            raise LoweringError(f"{mode} halves the vector work by {axis}, but it has {extent} "
                                f"{axis}", self.writes[0].span,
                                hint="split along an even axis, or drop pl.split")
        return [d for d in sizes if (extent // 2) % d == 0]

    # -- emission

    def lower(self) -> list:
        r, c = self._chunk()
        names = self.names
        # The chunk's first row and column, where the frame is walked in chunks.
        row = Var(names.fresh("row"), INDEX) if r < self.rows else None
        col = Var(names.fresh("col"), INDEX) if c < self.cols else None
        span = self.writes[0].span

        def origin(shape):
            return ExprList((row if row is not None and shape[0] == self.rows else Const(0, INDEX),
                             col if col is not None and shape[1] == self.cols else Const(0, INDEX)))

        tiles: dict[str, Var] = {}
        out: list = []
        for name, tensor in self.inputs.items():
            full = tensor_type_of(tensor).shape
            load = make_call("load", tensor, origin(full), span=span,
                             shapes=self._tile_shape(full, r, c))
            tiles[name] = Var(names.fresh(f"{name}_tile"), load.type, span)
            out.append(Assign((tiles[name],), load, span))
        for stmt in self.computed:
            full = tensor_type_of(call_of(stmt)).shape
            first_col = col if col is not None and full[1] == self.cols else None
            out.extend(self._compute(stmt, tiles, self._tile_shape(full, r, c), first_col))
        for stmt in self.writes:
            call = call_of(stmt)
            dst, src, offsets = call.args
            src_tile = tiles[src.name]
            o = origin(src.type.shape)
            window = ExprList(tuple(index_add(a, b)
                                    for a, b in zip(offsets.items, o.items, strict=True)))
            store = make_call("store", src_tile, window, dst, span=stmt.span,
                              atomic=call.attr("atomic"))
            out.append(Assign(stmt.targets, store, stmt.span))
        body = tuple(out)
        if col is not None:
            body = (For(col, Const(0, INDEX), Const(self.cols, INDEX), Const(c, INDEX), body),)
        if row is not None:
            body = (For(row, Const(0, INDEX), Const(self.rows, INDEX), Const(r, INDEX), body),)
        return list(body)

    def _compute(self, stmt: Assign, tiles: dict[str, Var], shape, first_col) -> list:
        target = stmt.targets[0].name
        before, tile_call = tile_form(call_of(stmt), lambda a: tiles.get(a.name, a), shape,
                                      self.names, target, first_col)
        tile = Var(self.names.fresh(f"{target}_tile"), tile_call.type, stmt.span)
        tiles[target] = tile
        return before + [Assign((tile,), tile_call, stmt.span)]


def _chunk_operands(call: Call, defined: set[str]) -> tuple:
    """The operands of a run's statement that are read chunk by chunk (`defined`: the run's
    values): an assemble's source; not the target that gives a broadcast only its shape,
    nor a gather's table, which stays in global memory."""
    category = get_op(call.op).category
    if call.op == "assemble":
        return (call.args[1],)
    if category == "expands":
        return call.args[1:]
    if category == "gather_tensor":
        require_table_in_memory(call, defined)
        return (tensor_gather_operands(call)[1],)
    return call.args


def _aligned(shape, itemsize: int) -> int:
    n = shape[0] * shape[1] * itemsize
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _divisors(n: int) -> list[int]:
    return sorted((d for d in range(1, n + 1) if n % d == 0), reverse=True)

