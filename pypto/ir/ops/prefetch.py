"""Upstream's asynchronous GM -> L2 prefetch, `pl.prefetch.*` (TPREFETCH_ASYNC).

    ctx = pl.prefetch.make_context()
    evt = pl.prefetch.async_prefetch(x, ctx)   # start pulling x into L2
    session = pl.prefetch.session(ctx)
    ...                                        # unrelated work overlaps
    pl.prefetch.wait(evt, session)             # x is resident in L2 (a BOOL done flag)

A cache hint: it changes no value, so a kernel computes the same with or without it.  The
simulators model no L2 cache, as pto-isa's CPU model does not (its TPREFETCH_ASYNC is a
no-op whose event is complete at once): the simulator kernels leave the calls out and
`wait` is true (`without_prefetch_hints`).  Device code would need the SDMA workspace the
host prepares for the kernel (pto-isa's SdmaWorkspaceManager), which this project's runtime
does not provide: it refuses the calls at their line.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..nodes import Assign, Call, Const, ExprStmt, Function
from ..types import (
    ASYNC_EVENT,
    ASYNC_SESSION,
    PREFETCH_CONTEXT,
    PrefetchHandleType,
    ScalarType,
    TensorType,
    describe,
)
from ..visitor import IRMutator, statements
from .registry import OpDef, OpParam, register

PREFETCH_OPS = ("prefetch.make_context", "prefetch.async_prefetch", "prefetch.session",
                "prefetch.wait")


def _handle(op: str, arg, expected: PrefetchHandleType, span) -> None:
    if arg.type != expected:
        raise TypeCheckError(f"pl.{op} takes {expected!r} here, got {describe(arg.type)}", span,
                             hint="pass the handle the pl.prefetch call that makes it returned")


def _infer_async_prefetch(args, attrs, span):
    src, ctx = args
    t = src.type
    if not isinstance(t, TensorType):
        raise TypeCheckError(f"pl.prefetch.async_prefetch pulls a tensor in global memory into "
                             f"L2, not {describe(t)}", span)
    if not all(isinstance(d, int) for d in t.shape) or any(d != 1 for d in t.shape[:-1]):
        raise TypeCheckError(
            f"pl.prefetch.async_prefetch takes a flat contiguous tensor of constant shape (every "
            f"dimension 1 but the last: [n] or [1, n], as TPREFETCH_ASYNC), got "
            f"{list(t.shape)}", span, hint="prefetch a [1, n] slice of the rows you need")
    _handle("prefetch.async_prefetch", ctx, PREFETCH_CONTEXT, span)
    return ASYNC_EVENT


def _infer_session(args, attrs, span):
    _handle("prefetch.session", args[0], PREFETCH_CONTEXT, span)
    return ASYNC_SESSION


def _infer_wait(args, attrs, span):
    _handle("prefetch.wait", args[0], ASYNC_EVENT, span)
    _handle("prefetch.wait", args[1], ASYNC_SESSION, span)
    return ScalarType(DataType.BOOL)


_WHERE = ("In a kernel (or a pl.at block).  A cache hint: no value changes; the simulators "
          "model no L2 (as pto-isa's CPU model) and leave it out; device code refuses it (no "
          "SDMA workspace from the runtime).")
for name, params, infer, doc in (
        ("prefetch.make_context", (), lambda args, attrs, span: PREFETCH_CONTEXT,
         "A context for asynchronous GM -> L2 prefetches (upstream's runtime-injected SDMA "
         "workspace)."),
        ("prefetch.async_prefetch", (OpParam("src", "value"), OpParam("ctx", "value")),
         _infer_async_prefetch,
         "Starts pulling flat tensor `src` ([n] or [1, n]) from global memory into L2 "
         "(TPREFETCH_ASYNC); returns the event `pl.prefetch.wait` takes.  `src` is unchanged."),
        ("prefetch.session", (OpParam("ctx", "value"),), _infer_session,
         "The asynchronous session of a prefetch context, for `pl.prefetch.wait`."),
        ("prefetch.wait", (OpParam("event", "value"), OpParam("session", "value")),
         _infer_wait,
         "Waits until the prefetch `event` has landed in L2; a BOOL done flag (true).")):
    register(OpDef(name, params, infer, "prefetch", f"{doc}  {_WHERE}", dtypes=frozenset()))


class _WithoutHints(IRMutator):
    def mutate_Assign(self, stmt: Assign):
        if isinstance(stmt.value, Call) and stmt.value.op in PREFETCH_OPS:
            if stmt.value.op != "prefetch.wait":
                return []
            return Assign(stmt.targets, Const(True, ScalarType(DataType.BOOL)), stmt.span)
        return super().mutate_Assign(stmt)

    def mutate_ExprStmt(self, stmt: ExprStmt):
        if isinstance(stmt.value, Call) and stmt.value.op in PREFETCH_OPS:
            return []
        return super().mutate_ExprStmt(stmt)

    def mutate_Call(self, expr: Call):
        if expr.op == "prefetch.wait":
            return Const(True, ScalarType(DataType.BOOL))
        return super().mutate_Call(expr)


def without_prefetch_hints(fn: Function) -> Function:
    """`fn` without its pl.prefetch calls, each `wait` true: the kernel as a machine without
    an L2 cache to warm runs it (the simulators, as pto-isa's CPU model)."""
    return _WithoutHints().mutate_function(fn)


def first_prefetch(fn: Function) -> Call | None:
    """The first pl.prefetch call of `fn`, if any (its statement's line names it)."""
    for stmt in statements(list(fn.body)):
        value = getattr(stmt, "value", None)
        if isinstance(value, Call) and value.op in PREFETCH_OPS:
            return value
    return None
