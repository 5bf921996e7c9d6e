"""Narrowed task arguments: each task gets the window of each tensor it touches.

The runtime orders tasks by the byte ranges of their tensor arguments (docs/dependencies.md),
so a task handed all of `out` to write one block of rows is ordered after every other
writer of `out`.  OutlineIncoreScopes therefore ends by finding, for every tensor parameter
of an InCore kernel, the box its loads, stores, assembles and slices cover (offsets may
depend on the kernel's scalar parameters, i.e. the orchestration's loop variables; extents
must be constant), and makes the kernel take that box instead: the parameter's type becomes
the window's shape and every access indexes relative to the window's origin.  Each call site
passes a view, `out_view_0 = pl.slice(out, [R, C], [i * R, 0])`, which moves no data: the
orchestration hands the task a pointer into `out` with the window's shape and `out`'s strides.

A dimension whose accesses are not analysable (offsets that depend on values the kernel
computes, on its own loops or on the SPMD block index; accesses whose offsets differ in their
variable parts) keeps its whole extent; a tensor used whole (a tensor-level operator, a
rebinding) or touched inside a loop that may not run stays whole, and so does a tensor of a
4-bit type (two elements a byte: a view's origin is a byte address).  The window is the union
of what the kernel touches, so the runtime never sees less than the real accesses.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..ir.dtypes import DataType
from ..ir.nodes import (
    Assign,
    Call,
    Const,
    ExprList,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Program,
    Return,
    Var,
    While,
)
from ..ir.ops import make_call, write_destination
from ..ir.ops.movement import window_extent
from ..ir.types import INDEX, FunctionType, ScalarType, TensorType, TileType, TupleType
from ..ir.visitor import IRMutator, IRVisitor, defs, statements
from .names import NameSupply

# Operators an analysable offset may be built from (all fold like the parser folds them).
_INDEX_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
}


@dataclass(frozen=True)
class Window:
    """The box of a tensor parameter a kernel touches.

    Per dimension `dims[d]` is None (the whole extent) or `(base, low, extent)`: the box
    starts at `base + low` (`base` an index expression over the kernel's scalar
    parameters, or None for 0) and is `extent` wide.  `dtype` is the tensor's.
    """

    shape: tuple[int, ...]
    dims: tuple[tuple[Any, int, int] | None, ...]
    dtype: DataType

    @property
    def extents(self) -> tuple[int, ...]:
        return tuple(full if d is None else d[2]
                     for full, d in zip(self.shape, self.dims, strict=True))


def split_offset(e) -> tuple:
    """`e` as (variable part or None, constant part): `i * 8 + 3` → (`i * 8`, 3)."""
    if isinstance(e, Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return None, e.value
    if isinstance(e, Call) and e.op in ("add", "sub") and len(e.args) == 2:
        (sa, ca), (sb, cb) = split_offset(e.args[0]), split_offset(e.args[1])
        if e.op == "add":
            if sb is None:
                return sa, ca + cb
            if sa is None:
                return sb, ca + cb
        elif sb is None:
            return sa, ca - cb
    return e, 0


def narrow_task_arguments(program: Program) -> Program:
    """`program` with every InCore kernel taking the windows it touches (see above);
    OutlineIncoreScopes ends with it, so what the runtime sees is decided with the tasks."""
    sites = _call_sites(program)
    plans: dict[str, dict[int, Window]] = {}
    for fn in program.functions:
        if fn.func_type is FunctionType.InCore and fn.name in sites:
            plan = _plan(fn, sites[fn.name])
            if plan:
                plans[fn.name] = plan
    if not plans:
        return program
    functions = []
    for fn in program.functions:
        if fn.name in plans:
            functions.append(_narrow_kernel(fn, plans[fn.name]))
        elif fn.func_type is FunctionType.Orchestration:
            rewriter = _CallSites(program, plans, NameSupply(fn))
            functions.append(rewriter.mutate_function(fn))
        else:
            functions.append(fn)
    return program.with_functions(functions)


# ----------------------------------------------------------------------------- analysis


def _call_sites(program: Program) -> dict[str, list[tuple[FuncCall, tuple]]]:
    """Every call of each function: (call, the names it binds) per statement."""
    found: dict[str, list] = {}
    for fn in program.functions:
        if fn.func_type is not FunctionType.Orchestration:
            continue
        for s in statements(fn.body):
            if isinstance(s, (Assign, ExprStmt)) and isinstance(s.value, FuncCall):
                targets = s.targets if isinstance(s, Assign) else ()
                found.setdefault(s.value.callee, []).append((s.value, targets))
    return found


class _Accesses(IRVisitor):
    """The windows (offsets, extents) through which a kernel touches each tensor parameter;
    a parameter touched any other way is `whole`."""

    def __init__(self, tensors: set[str]):
        self.tensors = tensors
        self.windows: dict[str, list[tuple[tuple, tuple]]] = {t: [] for t in tensors}
        self.whole: set[str] = set()
        self.uncertain_loops = 0

    def _touch(self, var, offsets: ExprList, extents) -> bool:
        if not (isinstance(var, Var) and var.name in self.tensors):
            return False
        if self.uncertain_loops or not all(isinstance(e, int) for e in extents):
            # The access may not happen, or its extent is known only at run time.
            self.whole.add(var.name)
        else:
            self.windows[var.name].append(
                (tuple(offsets.items), window_extent(len(offsets.items), extents)))
        self.visit_expr(offsets)
        return True

    def visit_Call(self, expr: Call) -> None:
        a = expr.args
        if expr.op == "load" and self._touch(
                a[0], a[1], expr.attr("valid_shape") or expr.attr("shapes")):
            return
        if expr.op == "store" and self._touch(a[2], a[1], a[0].type.valid):
            self.visit_expr(a[0])
            return
        if expr.op == "assemble":
            extent = a[1].type.valid if isinstance(a[1].type, TileType) else a[1].type.shape
            if self._touch(a[0], a[2], extent):
                self.visit_expr(a[1])
                return
        if expr.op == "slice" and isinstance(expr.type, TensorType) and \
                self._touch(a[0], a[1], expr.attr("shape")):
            return
        super().visit_Call(expr)

    def visit_Var(self, expr: Var) -> None:
        if expr.name in self.tensors:
            self.whole.add(expr.name)

    def visit_Return(self, stmt: Return) -> None:
        """Returning a tensor hands its buffer back; it touches nothing."""

    def visit_For(self, stmt: For) -> None:
        trips = [e.value for e in (stmt.start, stmt.stop, stmt.step)
                 if isinstance(e, Const) and isinstance(e.value, int)]
        certain = len(trips) == 3 and trips[2] != 0 and len(range(*trips)) > 0
        self.uncertain_loops += 0 if certain else 1
        super().visit_For(stmt)
        self.uncertain_loops -= 0 if certain else 1

    def visit_While(self, stmt: While) -> None:
        self.uncertain_loops += 1  # a while loop may not run
        super().visit_While(stmt)
        self.uncertain_loops -= 1

    def visit_If(self, stmt: If) -> None:
        self.uncertain_loops += 1  # a branch's accesses may not happen
        super().visit_If(stmt)
        self.uncertain_loops -= 1


def _rebound(fn: Function, tensors: set[str]) -> set[str]:
    """Tensor parameters the body rebinds to anything but a write into themselves."""
    out: set[str] = set()
    for s in statements(fn.body):
        if isinstance(s, For) and s.var.name in tensors:
            out.add(s.var.name)
        elif isinstance(s, Assign):
            out.update(t.name for t in s.targets
                       if t.name in tensors and not _writes_into(s, t.name))
    return out


def _writes_into(stmt: Assign, name: str) -> bool:
    call = stmt.value
    if len(stmt.targets) != 1 or not isinstance(call, Call):
        return False
    dst = write_destination(call) if call.op != "tile.assemble" else None
    return isinstance(dst, Var) and dst.name == name


def _invariant(e, scalars: set[str]) -> bool:
    """Is `e` computed from constants and the kernel's (never rebound) scalar parameters?"""
    if isinstance(e, Const):
        return isinstance(e.value, int) and not isinstance(e.value, bool)
    if isinstance(e, Var):
        return e.name in scalars
    if isinstance(e, Call) and e.op in _INDEX_OPS and len(e.args) == 2:
        return all(_invariant(a, scalars) for a in e.args)
    return False


def _plan(fn: Function, sites) -> dict[int, Window]:
    """The window of every tensor parameter that can be narrowed, by parameter index."""
    tensors = {p.var.name for p in fn.params if isinstance(p.var.type, TensorType)}
    bound = set(defs(fn.body))
    scalars = {p.var.name for p in fn.params
               if isinstance(p.var.type, ScalarType) and p.var.name not in bound}
    access = _Accesses(tensors)
    access.visit_function(fn)
    whole = access.whole | _rebound(fn, tensors)
    returned = fn.returned_params()
    plan: dict[int, Window] = {}
    for index, p in enumerate(fn.params):
        name, ptype = p.var.name, p.var.type
        if not isinstance(ptype, TensorType) or name in whole or not access.windows[name]:
            continue
        if ptype.dtype.packed:
            continue  # a view's origin counts bytes: a 4-bit tensor is handed over whole
        if any(not _binds_itself(call, targets, returned, index) for call, targets in sites):
            continue  # a call binds the result to another name: it stays the whole tensor
        window = _window(ptype.shape, ptype.dtype, access.windows[name], scalars)
        if window is not None:
            plan[index] = window
    return plan


def _binds_itself(call: FuncCall, targets, returned: list[int], index: int) -> bool:
    """Does every result of the call that is parameter `index` rebind the argument's name?"""
    arg = call.args[index]
    if not isinstance(arg, Var):
        return False
    values = targets[:-1] if call.task_id and targets else targets
    if not values:  # a call statement whose results are not bound names nothing else
        return True
    return all(t.name == arg.name for t, r in zip(values, returned, strict=True) if r == index)


def _window(shape, dtype: DataType, accesses, scalars: set[str]) -> Window | None:
    dims: list[tuple[Any, int, int] | None] = []
    for d, full in enumerate(shape):
        parts = [(split_offset(offsets[d]), extents[d]) for offsets, extents in accesses]
        base = parts[0][0][0]
        if any(b != base for (b, _), _ in parts) or (
                base is not None and not _invariant(base, scalars)):
            dims.append(None)
            continue
        low = min(c for (_, c), _ in parts)
        high = max(c + extent for (_, c), extent in parts)
        if high - low >= full or (base is None and (low < 0 or high > full)):
            dims.append(None)  # the whole dimension (or an access the type checker refuses)
        else:
            dims.append((base, low, high - low))
    if all(d is None for d in dims):
        return None
    return Window(tuple(shape), tuple(dims), dtype)


# ----------------------------------------------------------------------------- rewriting


def _narrow_kernel(fn: Function, plan: dict[int, Window]) -> Function:
    windows = {fn.params[i].var.name: w for i, w in plan.items()}
    types = {fn.params[i].var.name: TensorType(w.extents, w.dtype) for i, w in plan.items()}
    body = _RelativeAccesses(windows, types).mutate_body(fn.body)
    params = tuple(
        replace(p, var=replace(p.var, type=types[p.var.name])) if p.var.name in types else p
        for p in fn.params
    )
    returns = list(fn.returns)
    for position, index in enumerate(fn.returned_params()):
        if index in plan and position < len(returns):
            returns[position] = types[fn.params[index].var.name]
    return replace(fn, params=params, body=body, returns=tuple(returns))


class _RelativeAccesses(IRMutator):
    """Every access of a narrowed parameter indexes relative to its window's origin."""

    _TENSOR_ARG = {"load": (0, 1), "store": (2, 1), "assemble": (0, 2), "slice": (0, 1)}

    def __init__(self, windows: dict[str, Window], types: dict[str, TensorType]):
        self.windows = windows
        self.types = types

    def mutate_Var(self, expr: Var):
        return replace(expr, type=self.types[expr.name]) if expr.name in self.types else expr

    def mutate_def(self, var: Var) -> Var:
        return self.mutate_Var(var)

    def mutate_Call(self, expr: Call):
        new = super().mutate_Call(expr)
        where = self._TENSOR_ARG.get(expr.op)
        if where is None or (expr.op == "slice" and not isinstance(expr.type, TensorType)):
            return new
        tensor, at = where
        var = new.args[tensor]
        if not isinstance(var, Var) or var.name not in self.windows:
            return new
        window = self.windows[var.name]
        offsets = new.args[at]
        items = tuple(
            item if d is None else Const(split_offset(item)[1] - d[1], INDEX, item.span)
            for item, d in zip(offsets.items, window.dims, strict=True)
        )
        args = list(new.args)
        args[at] = replace(offsets, items=items)
        result_type = self.types[var.name] if expr.op in ("store", "assemble") else new.type
        return replace(new, args=tuple(args), type=result_type)


class _CallSites(IRMutator):
    """Each call of a narrowed kernel passes views (`x_view_0 = pl.slice(x, ...)`)."""

    def __init__(self, program: Program, plans: dict[str, dict[int, Window]],
                 names: NameSupply):
        self.kernels = {f.name: f for f in program.functions}
        self.plans = plans
        self.names = names

    def mutate_Assign(self, stmt: Assign):
        if isinstance(stmt.value, FuncCall) and stmt.value.callee in self.plans:
            return self._narrow(stmt, stmt.value, stmt.targets)
        return stmt

    def mutate_ExprStmt(self, stmt: ExprStmt):
        if isinstance(stmt.value, FuncCall) and stmt.value.callee in self.plans:
            return self._narrow(stmt, stmt.value, ())
        return stmt

    def _narrow(self, stmt, call: FuncCall, targets) -> list:
        kernel = self.kernels[call.callee]
        plan = self.plans[call.callee]
        scalars = {p.var.name: a for p, a in zip(kernel.params, call.args, strict=True)
                   if isinstance(p.var.type, ScalarType)}
        views: dict[int, Var] = {}
        out: list = []
        args = list(call.args)
        for index, window in sorted(plan.items()):
            arg = call.args[index]
            origin = tuple(
                Const(0, INDEX, stmt.span) if d is None else _origin(d, scalars, stmt.span)
                for d in window.dims
            )
            view_type = TensorType(window.extents, arg.type.dtype)
            view = Var(self.names.fresh(f"{arg.name}_view"), view_type, stmt.span)
            slice_call = make_call("slice", arg, ExprList(origin, stmt.span),
                                   span=stmt.span, shape=window.extents)
            out.append(Assign((view,), slice_call, stmt.span))
            views[index] = view
            args[index] = view
        new_call = replace(
            call, args=tuple(args), type=self._result_type(call, kernel, views),
            no_dep_args=self._renamed(call.no_dep_args, call.args, views),
            dumps=self._renamed(call.dumps, call.args, views),
        )
        if isinstance(stmt, ExprStmt):
            return out + [replace(stmt, value=new_call)]
        returned = kernel.returned_params()
        new_targets = list(targets)
        for position, index in enumerate(returned):
            if index in views and position < len(new_targets):
                new_targets[position] = views[index]
        return out + [replace(stmt, targets=tuple(new_targets), value=new_call)]

    @staticmethod
    def _result_type(call: FuncCall, kernel: Function, views: dict[int, Var]):
        items = list(call.type.items) if isinstance(call.type, TupleType) else [call.type]
        for position, index in enumerate(kernel.returned_params()):
            if index in views and position < len(items):
                items[position] = views[index].type
        if isinstance(call.type, TupleType):
            return TupleType(tuple(items))
        return items[0]

    @staticmethod
    def _renamed(listed: tuple, args: tuple, views: dict[int, Var]) -> tuple:
        """`no_dep_args` / `dumps` name arguments: a narrowed argument is named by its view."""
        out = []
        for var in listed:
            kept = any(isinstance(a, Var) and a.name == var.name and i not in views
                       for i, a in enumerate(args))
            if kept:
                out.append(var)
            out += [v for i, v in sorted(views.items()) if args[i].name == var.name]
        return tuple(out)


def _origin(dim, scalars: dict, span):
    """The window's origin in the caller's terms: its base with the kernel's scalar
    parameters replaced by the call's arguments, plus its constant part, folded."""
    base, low, _ = dim
    expr = Const(low, INDEX, span) if base is None else _substitute(base, scalars)
    if base is not None and low:
        expr = _fold(make_call("add", expr, Const(low, INDEX, span), span=span))
    return expr


def _substitute(e, scalars: dict):
    if isinstance(e, Var):
        return scalars[e.name]
    if isinstance(e, Call):
        return _fold(replace(e, args=tuple(_substitute(a, scalars) for a in e.args)))
    return e


def _fold(e):
    """Constant index arithmetic folded, as the parser folds what it reads back."""
    if isinstance(e, Call) and e.op in _INDEX_OPS and all(
            isinstance(a, Const) and isinstance(a.value, int) for a in e.args):
        a, b = (x.value for x in e.args)
        return Const(_INDEX_OPS[e.op](a, b), INDEX, e.span)
    return e
