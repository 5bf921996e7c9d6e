"""OutlineIncoreScopes: each `with pl.at(...)` block becomes an InCore kernel.

The kernel's parameters are the outer values the block reads (tensors and scalars,
in first-use order).  Tensors the block writes through `pl.assemble`/`pl.store` stay
parameters; tensors it creates and that are used after the block get a scratch
buffer allocated by the orchestration and passed in as an output.  The block is
replaced by one call: one task per execution of the block.  Last, every kernel's tensor
parameters are narrowed to the windows it touches (narrow_task_arguments.py), so tasks
writing disjoint rows of one tensor get disjoint arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..ir.errors import LoweringError
from ..ir.names import claim_name
from ..ir.nodes import (
    Assign,
    AtScope,
    Call,
    Const,
    ExprList,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Param,
    Program,
    Return,
    Var,
    While,
)
from ..ir.ops import make_call, write_destination
from ..ir.types import INDEX, TASK_ID, Direction, FunctionType, Level, TensorType, TupleType
from ..ir.visitor import IRMutator, IRVisitor, defs, exposed_uses, uses
from .cube_vector import crossing_values, unit_of
from .manager import Pass
from .names import NameSupply
from .narrow_task_arguments import narrow_task_arguments
from .properties import IRProperty


def writes_tensor(call: Call) -> bool:
    """Does `call` write into a tensor (pl.store, pl.assemble, a scatter)?  The registry
    says which operand an operator writes (`OpDef.writes`)."""
    dst = write_destination(call)
    return isinstance(dst, Var) and isinstance(dst.type, TensorType)


def written_tensor(stmt) -> str | None:
    """The name a statement writes through (`x = pl.assemble(x, ...)`), if any."""
    if not (isinstance(stmt, Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, Call)):
        return None
    call = stmt.value
    if not writes_tensor(call):
        return None
    dst = write_destination(call)
    target = stmt.targets[0].name
    return target if dst.name == target else None


class _WrittenTensors(IRVisitor):
    """The names a statement list writes through, at any loop depth."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_Assign(self, stmt: Assign) -> None:
        super().visit_Assign(stmt)
        name = written_tensor(stmt)
        if name is not None:
            self.names.add(name)


def written_tensors(stmts) -> set[str]:
    """Every name `stmts` writes through (`x = pl.assemble(x, ...)`), nested loops included."""
    visitor = _WrittenTensors()
    visitor.visit_body(stmts)
    return visitor.names


class OutlineIncoreScopes(Pass):
    name = "OutlineIncoreScopes"
    produces = (IRProperty.ScopesOutlined,)

    def run(self, program: Program, ctx) -> Program:
        taken = {f.name for f in program.functions}
        functions = []
        for fn in program.functions:
            if fn.func_type is FunctionType.Orchestration:
                fn = _NamedTaskArguments(NameSupply(fn)).mutate_function(fn)
                outliner = _Outliner(fn, taken)
                new_fn = outliner.mutate_function(fn)
                functions.extend(outliner.kernels)
                functions.append(new_fn)
            else:
                functions.append(fn)
        # Each task then gets the window of each tensor it touches, not the whole tensor.
        return narrow_task_arguments(program.with_functions(functions))


class _NamedTaskArguments(IRMutator):
    """`y = k(x[0:8, :], y)` → `slice_0 = pl.slice(x, ...); y = k(slice_0, y)`.

    A task takes tensors by name: the view a task argument spells inline becomes a
    statement of its own, which the dependence analysis and codegen see like any view."""

    def __init__(self, names: NameSupply):
        self.names = names

    def mutate_Assign(self, stmt: Assign):
        return self._named(stmt)

    def mutate_ExprStmt(self, stmt: ExprStmt):
        return self._named(stmt)

    def _named(self, stmt) -> list:
        if not isinstance(stmt.value, FuncCall):
            return [stmt]
        views: list = []
        args = tuple(self._operand(a, views) for a in stmt.value.args)
        return views + [replace(stmt, value=replace(stmt.value, args=args))]

    def _operand(self, arg, views: list):
        if not (isinstance(arg, Call) and isinstance(arg.type, TensorType)):
            return arg
        call = replace(arg, args=tuple(self._operand(a, views) for a in arg.args))
        var = Var(self.names.fresh(arg.op), arg.type, arg.span)
        views.append(Assign((var,), call, arg.span))
        return var


def _env(fn: Function) -> dict[str, Var]:
    return {p.var.name: p.var for p in fn.params}


class _Outliner(IRMutator):
    """Replaces every `pl.at` block of an orchestration function, at any depth, by the
    call of the kernel it becomes (`outline`)."""

    def __init__(self, fn: Function, taken: set[str]):
        self.fn = fn
        self.taken = taken
        self.kernels: list[Function] = []
        self.counter = 0
        self.names = set(uses(fn.body)) | set(defs(fn.body)) | {p.var.name for p in fn.params}
        # The scope of the statement being rewritten: the values bound before it, and the
        # names read after it (by later statements of its body, or after its body).
        self.env: dict[str, Var] = _env(fn)
        self.later: set[str] = set()
        self.after: set[str] = set()

    def mutate_body(self, body) -> tuple:
        outer = self.env, self.later, self.after
        env, later = dict(self.env), self.later
        out: list = []
        for i, stmt in enumerate(body):
            # Needed after: what a later statement reads before it rebinds it.
            self.env, self.after = env, later | exposed_uses(body[i + 1:])
            new = self.mutate_stmt(stmt)
            new = list(new) if isinstance(new, (list, tuple)) else [new]
            for s in new:
                env.update(defs(s) if not isinstance(s, For) else defs(s.body))
            out.extend(new)
        self.env, self.later, self.after = outer
        return tuple(out)

    def mutate_AtScope(self, stmt: AtScope) -> list:
        return self.outline(stmt, self.env, self.after)

    def mutate_For(self, stmt: For) -> For:
        outer = self.env, self.later
        self.env = dict(self.env, **{stmt.var.name: stmt.var})
        # A value the loop body reads before (re)defining it is read by the next
        # iteration, so it outlives the block that defines it.
        self.later = self.after | exposed_uses(stmt.body)
        body = self.mutate_body(stmt.body)
        self.env, self.later = outer
        return replace(stmt, body=body)

    def mutate_While(self, stmt: While) -> While:
        outer = self.later
        # As in a for loop; the condition reads its names before every iteration too.
        self.later = self.after | exposed_uses((stmt,))
        body = self.mutate_body(stmt.body)
        self.later = outer
        return replace(stmt, body=body)

    def mutate_If(self, stmt: If) -> If:
        outer = self.later
        self.later = self.after
        then_body, else_body = self.mutate_body(stmt.then_body), self.mutate_body(stmt.else_body)
        self.later = outer
        return replace(stmt, then_body=then_body, else_body=else_body)

    # Statements that hold no block stay as they are.
    def mutate_Assign(self, stmt: Assign) -> Assign:
        return stmt

    def mutate_ExprStmt(self, stmt: ExprStmt) -> ExprStmt:
        return stmt

    def mutate_Return(self, stmt: Return) -> Return:
        return stmt

    def _kernel_name(self, scope: AtScope) -> str:
        base = f"{self.fn.name}_{scope.name_hint}" if scope.name_hint else None
        while True:
            name = base or f"{self.fn.name}_incore_{self.counter}"
            self.counter += 1
            if name not in self.taken:
                self.taken.add(name)
                return name
            base = None

    def outline(self, scope: AtScope, env: dict[str, Var], after: set[str]) -> list:
        inputs, local, last_def = _reads_and_binds(scope.body, env)
        # Tensors of the caller written through, however deep in the block's loops.
        written = written_tensors(scope.body) & inputs.keys()
        # Parameters follow the order the caller bound them (its parameters first).
        order = list(env)
        inputs = dict(sorted(inputs.items(), key=lambda kv: order.index(kv[0])))
        # The final binding of each name defined in the block (a later def overrides).
        final = {name: self._final_var(scope.body, name) for name in local}
        # Values one unit computes and the other reads go through a scratch tensor too,
        # unless the block asks for the cross-core pipe (ExpandMixedKernel carries them).
        crossing = {} if pipe_requested(scope) else crossing_values(scope.body)
        outputs = [n for n in local if n in written or n in after or n in crossing]
        body = list(scope.body)
        scratch: list[Var] = []
        at_end: list = []  # writes of values computed in a loop or a branch, leaving the block
        for name in outputs:
            var = final[name]
            if not isinstance(var.type, TensorType):
                raise LoweringError(
                    f"`{name}` is computed inside `pl.at` and used after it; only tensors can "
                    "leave a pl.at block",
                    var.span,
                    hint="write it into a tensor with `t[:] = ...`, or move the use into the block",
                )
            if name in written:
                continue
            if name in inputs:
                raise LoweringError(
                    f"`{name}` is both read and replaced by a new tensor in this pl.at block",
                    var.span,
                    hint=f"give the new value another name, or write it with `{name}[:] = ...`",
                )
            index = last_def[name]
            stmt = body[index]
            scratch.append(var)
            if isinstance(stmt, (For, While, If)):
                body = self._kept_in_block(body, var, crossing.get(name), name in after, at_end)
                continue
            if not (isinstance(stmt, Assign) and len(stmt.targets) == 1):
                raise LoweringError(
                    f"`{name}` must be assigned directly in the pl.at block to leave it", var.span
                )
            body[index] = _write_into(var, stmt)
        body += at_end
        name = self._kernel_name(scope)
        params = tuple(Param(v) for v in inputs.values()) + tuple(
            Param(v, Direction.Out) for v in scratch
        )
        out_vars = tuple(final[n] for n in outputs)
        if out_vars:
            body.append(Return(out_vars, scope.span))
        kernel = Function(
            name, params, tuple(v.type for v in out_vars), tuple(body), FunctionType.InCore,
            scope.span, attrs=_kernel_attributes(scope),
        )
        self.kernels.append(kernel)
        call_args = tuple(env[n] for n in inputs)
        # An id nothing waits for is not bound (`with pl.at(...) as tid` with tid unused).
        bound = scope.task if scope.task is not None and scope.task.name in after else None
        task = _task_attributes(replace(scope, task=bound), inputs)
        if task["task_id"]:
            # The call yields its task id last: `out, tid = pl.submit(self.k, ...)`.
            tid = bound if bound is not None else self._fresh_task_var(scope)
            out_vars = out_vars + (tid,)
        call: Assign | ExprStmt
        if not out_vars:
            call = ExprStmt(
                FuncCall(name, call_args, TupleType(()), scope.span, **task), scope.span)
        else:
            rtype = out_vars[0].type if len(out_vars) == 1 else TupleType(
                tuple(v.type for v in out_vars)
            )
            call = Assign(
                out_vars, FuncCall(name, call_args, rtype, scope.span, **task), scope.span)
        # The scratch tensors keep their names in the orchestration the block was part of.
        return pass_scratch_tensors(call, scratch, lambda var: var)

    def _kept_in_block(self, body: list, var: Var, reader: str | None, leaves: bool,
                       at_end: list) -> list:
        """`body` where `var`, computed in a loop or a branch, is kept under a name of its
        own; the unit reading it from the other side (`reader`) reads the tensor `var`,
        written before each such read, and its final value is written at the block's end
        when it `leaves` the block (appended to `at_end`)."""
        value = replace(var, name=self._fresh_name(f"{var.name}_value"))
        write = _write_into(var, Assign((var,), value, var.span))
        body = list(_ProducerSide(var.name, value.name, reader).mutate_body(body))
        if reader is not None:
            body = list(_WrittenBeforeReads(var.name, value.name, write).mutate_body(body))
        if leaves:
            at_end.append(write)
        return body

    def _fresh_task_var(self, scope: AtScope) -> Var:
        """A name for the id of a task whose block did not bind one (`_tid`, `_tid_1`, ...)."""
        return Var(self._fresh_name("_tid"), TASK_ID, scope.span)

    def _fresh_name(self, base: str) -> str:
        """`base`, or `base_<n>` when that is taken in the function."""
        return claim_name(base, self.names)

    @staticmethod
    def _final_var(body, name: str) -> Var:
        """The last binding of `name`, which `body` binds."""
        return [d[name] for d in map(defs, body) if name in d][-1]


class _ProducerSide(IRMutator):
    """A block's value computed in a loop or a branch, renamed where it is bound and read,
    except where the other unit (`reader`, if any) reads it: that read is of the tensor the
    block writes it into."""

    def __init__(self, old: str, new: str, reader: str | None):
        self.old, self.new, self.reader = old, new, reader

    def mutate_Var(self, expr: Var) -> Var:
        return replace(expr, name=self.new) if expr.name == self.old else expr

    def mutate_def(self, var: Var) -> Var:
        return self.mutate_Var(var)

    def mutate_Call(self, expr: Call):
        if self.reader is None or unit_of(expr) != self.reader:
            return super().mutate_Call(expr)
        return replace(expr, args=tuple(a if isinstance(a, Var) else self.mutate_expr(a)
                                        for a in expr.args))


class _WrittenBeforeReads(IRMutator):
    """`write` (the tensor `name` := the value `value`) put before every statement reading
    `name` that follows a binding of `value` in the same statement list."""

    def __init__(self, name: str, value: str, write: Assign):
        self.name, self.value, self.write = name, value, write

    def mutate_body(self, body) -> tuple:
        out: list = []
        bound = False
        for stmt in super().mutate_body(body):
            if bound and self.name in uses(stmt):
                out.append(self.write)
            bound = bound or self.value in defs(stmt)
            out.append(stmt)
        return tuple(out)


def _reads_and_binds(body, env: dict[str, Var]) -> tuple[dict, dict, dict]:
    """What a block's `body` reads of the outer values `env` (before binding it itself, in
    first-use order), what it binds, and the index of each name's last binding."""
    inputs: dict[str, Var] = {}
    local: dict[str, Var] = {}
    last_def: dict[str, int] = {}
    for i, stmt in enumerate(body):
        for name in uses(stmt):
            if name not in local and name in env:
                inputs.setdefault(name, env[name])
        for name, var in defs(stmt).items():
            local[name] = var
            last_def[name] = i
    return inputs, local, last_def


def _task_attributes(scope: AtScope, inputs: dict[str, Var]) -> dict:
    """The FuncCall fields that carry the block's deps, no_dep_args, dumps, manual,
    blocks and allow_early_resolve (a flagged call prints as `pl.submit`, which yields a
    task id)."""
    for keyword, listed in (("no_dep_args", scope.no_dep_args), ("dumps", scope.dumps)):
        for var in listed:
            if var.name not in inputs:
                raise LoweringError(
                    f"{keyword} names `{var.name}`, which this block does not use",
                    var.span or scope.span,
                    hint="list only tensors the block reads or writes",
                )
    task_id = bool(scope.task is not None or scope.deps or scope.no_dep_args or scope.dumps
                   or scope.blocks is not None or scope.early_resolve)
    return {"deps": scope.deps, "no_dep_args": scope.no_dep_args, "manual": scope.manual,
            "blocks": scope.blocks, "task_id": task_id, "dumps": scope.dumps,
            "early_resolve": scope.early_resolve}


def pipe_requested(scope: AtScope) -> bool:
    """Whether a block asks for the automatic cross-core pipe: `pl.split(mode)` (NONE too) or
    `pl.cross_core_slot(slot_num=N)` among its optimizations."""
    return scope.split is not None or scope.slot_num is not None


def _kernel_attributes(scope: AtScope) -> tuple:
    """The outlined kernel's attributes: the block's "split" mode and "slot_num" (its
    optimizations), and the "level" of a block that runs on one unit of the core group
    (`pl.at(level=pl.Level.AIC)` / `AIV`)."""
    attrs = {"split": scope.split, "slot_num": scope.slot_num,
             "level": scope.level if scope.level in (Level.AIC, Level.AIV) else None}
    return tuple(sorted((k, v) for k, v in attrs.items() if v is not None))


def pass_scratch_tensors(call: Assign | ExprStmt, params: Sequence[Var],
                         local: Callable[[Var], Var]) -> list:
    """`call`, an orchestration's call of a kernel, with a tensor for each of the kernel's
    scratch parameters `params` (Out tensors that carry a value out of its block or between
    its units) created just before it and passed as its last arguments; `local(param)` is
    the orchestration's variable for it."""
    created = []
    for var in map(local, params):
        assert isinstance(var.type, TensorType)  # scratch parameters are tensors
        create = make_call("create_tensor", span=call.span, shape=var.type.shape,
                           dtype=var.type.dtype)
        created.append(Assign((var,), create, call.span))
    value = call.value
    assert isinstance(value, FuncCall)  # the call of the kernel
    args = value.args + tuple(a.targets[0] for a in created)
    return [*created, replace(call, value=replace(value, args=args))]


def _write_into(var: Var, stmt: Assign) -> Assign:
    """`t = expr` → `t = pl.assemble(t, expr, [0, ...])` for a block output."""
    assert isinstance(var.type, TensorType)  # only tensors leave a block
    zeros = ExprList(tuple(Const(0, INDEX) for _ in var.type.shape), stmt.span)
    return Assign((var,), make_call("assemble", var, stmt.value, zeros, span=stmt.span),
                  stmt.span)
