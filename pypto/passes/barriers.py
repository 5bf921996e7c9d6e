"""CheckCrossBlockBarriers: where the cross-block barriers (ir/ops/barrier) may be, and the
launches a hard `pl.system.syncall` can complete in.

A kernel holding a `pl.system.syncall` is a *gang* kernel: the simulators run the blocks of
its launch at once, one thread each (pto/gang.hpp), so that a block reaching the barrier
can wait for the others.  Each rule is an error at the line at fault:

- a barrier operator sits in an InCore kernel (the parser refuses one in orchestration
  code); not in a function of a cross-core group (`pl.FunctionType.AIC` / `AIV` called by a
  `pl.FunctionType.Group`, a lane-region kernel): the simulators run a group's lanes on
  threads of their own, which a launch-wide barrier would have to wait for too;
- a gang kernel reads and writes global memory through `pl.load` / `pl.store` only (what
  the simulators' check of the cache protocol follows, pto/gang.hpp);
- a hard barrier's `core_type` includes the cores the kernel runs on: a vector kernel
  (only Vec tiles) runs on vector cores, a cube kernel (no Vec tile) on cube cores, a mixed
  one on clusters of both.  A hard barrier waiting for cores the kernel does not run on
  never completes; a soft one there would count no core on the device (pto-isa's SYNCALL
  is empty on a core outside its participant set);
- the launch of a kernel with a barrier has at most as many blocks as the platform has
  cores of the kernel's type (its blocks run at once: on the device more would run in
  waves, which a barrier across waves deadlocks);
- the launch of a kernel with a hard barrier fills the platform's cores of the kernel's
  type, one block each: as many blocks as `pl.system.available_aiv_count()` (a vector
  kernel) or `available_cluster_count()` (a cube or mixed one) gives.  A launch sized by
  a literal is checked against that count (fewer blocks deadlock on the device, more run
  in waves that deadlock too), one sized by the other query is refused; a plain task is
  one block.  A launch sized by any other expression is checked when it runs (pto/gang.hpp).

Upstream's HardSyncallOccupancy verifier also asks for `sync_start=True`; here a gang
kernel's blocks always start together, which is what that flag asks for.
"""

from __future__ import annotations

from ..ir.errors import LoweringError, Span
from ..ir.nodes import Assign, Call, Const, ExprStmt, FuncCall, Function, Program, Var
from ..ir.ops.barrier import AIV_COUNT, BARRIER_OPS, CLUSTER_COUNT, LAUNCH_QUERIES, SYNCALL
from ..ir.types import FunctionType, Level, MemorySpace, TensorType, TileType
from ..ir.visitor import IRVisitor, statements
from .manager import Pass

VECTOR, CUBE, MIXED = "vector", "cube", "mixed"
# The participant sets a barrier may name in a kernel of each kind.
_HARD_CORE_TYPES = {VECTOR: ("aiv_only",), CUBE: ("aic_only",),
                    MIXED: ("aiv_only", "aic_only", "mix")}
_SOFT_CORE_TYPES = {VECTOR: ("aiv_only", "mix"), CUBE: ("aic_only", "mix"),
                    MIXED: ("aiv_only", "aic_only", "mix")}
# Operators of a gang kernel that touch global memory and are followed by the check.
_CHECKED_ACCESSES = ("load", "store", "slice", *BARRIER_OPS)


def barrier_calls(fn: Function) -> list[tuple[Call, Span | None]]:
    """The barrier operator calls of `fn` (any depth), in program order, with the spans of
    their statements."""
    return [(s.value, s.span) for s in statements(list(fn.body)) if isinstance(s, ExprStmt)
            and isinstance(s.value, Call) and s.value.op in BARRIER_OPS]


def is_gang_kernel(fn: Function) -> bool:
    """Whether `fn` holds a `pl.system.syncall`: its launch runs as a gang."""
    return any(call.op == SYNCALL for call, _ in barrier_calls(fn))


def kernel_class(fn: Function) -> str:
    """VECTOR, CUBE or MIXED: the cores a lowered InCore kernel runs on (its `level`, else
    where its tiles live: Vec tiles on a vector core, the others on the cube)."""
    level = fn.attr("level")
    if level is Level.AIV:
        return VECTOR
    if level is Level.AIC:
        return CUBE
    spaces = {t.type.memory for s in statements(list(fn.body)) if isinstance(s, Assign)
              for t in s.targets if isinstance(t.type, TileType)}
    vector = MemorySpace.Vec in spaces
    cube = bool(spaces - {MemorySpace.Vec, None})
    return MIXED if vector and cube else (CUBE if cube else VECTOR)


def hard_launch(kind: str, backend) -> tuple[int, str, str]:
    """(blocks, the query that gives them, the cores) a hard barrier of a `kind` kernel
    needs on `backend`."""
    if kind == VECTOR:
        return backend.vector_cores, AIV_COUNT, "vector"
    return backend.cube_cores, CLUSTER_COUNT, "cluster (cube)"


def launch_limit(fn: Function, backend) -> tuple[int, str]:
    """The blocks a launch of the lowered gang kernel `fn` has at most (a hard barrier's,
    exactly), and which cores they are: "the vector cores of Ascend910B"."""
    blocks, _, cores = hard_launch(kernel_class(fn), backend)
    return blocks, f"the {cores} cores of {backend.name}"


def query_count(op: str, backend) -> int:
    """What `pl.system.available_aiv_count()` / `available_cluster_count()` give."""
    return backend.vector_cores if op == AIV_COUNT else backend.cube_cores


def _spelled(op: str) -> str:
    return f"pl.{op}()"


class _GlobalAccesses(IRVisitor):
    """Calls reading or writing a tensor other than the checked ones (load, store)."""

    def __init__(self):
        self.found: list[Call] = []

    def visit_Call(self, e: Call) -> None:
        if e.op not in _CHECKED_ACCESSES and any(
                isinstance(a, Var) and isinstance(a.type, TensorType) for a in e.args):
            self.found.append(e)
        super().visit_Call(e)


def _check_kernel(fn: Function, grouped: bool) -> None:
    barriers = barrier_calls(fn)
    if not barriers:
        return
    if grouped:
        first, span = barriers[0]
        raise LoweringError(
            f"pl.{first.op} in `{fn.name}`, a function of a cross-core group: the "
            "simulators run a group's cube and vector lanes on threads of their own, and "
            "barriers across the blocks of a launch of groups are not modelled yet", span,
            hint="put the barrier in an InCore kernel of its own launch (pl.spmd), or order "
                 "the lanes through the cross-core pipe")
    if not is_gang_kernel(fn):
        return
    for s in statements(list(fn.body)):
        finder = _GlobalAccesses()
        value = getattr(s, "value", None)
        if isinstance(value, Call):
            finder.visit_expr(value)
        for call in finder.found:
            raise LoweringError(
                f"pl.{call.op} accesses global memory in a kernel with a pl.system.syncall; "
                "the simulators follow the blocks' cache protocol through pl.load and "
                "pl.store only", s.span,
                hint="load the data with pl.load (store it with pl.store), or move this "
                     "access into a kernel without a barrier")
    kind = kernel_class(fn)
    for call, span in barriers:
        if call.op != SYNCALL:
            continue
        mode, core_type = call.attr("mode"), call.attr("core_type")
        allowed = (_HARD_CORE_TYPES if mode == "hard" else _SOFT_CORE_TYPES)[kind]
        if core_type not in allowed:
            runs = {VECTOR: "vector cores only", CUBE: "cube cores only",
                    MIXED: "clusters of cube and vector cores"}[kind]
            why = ("it waits for every core of that set, and some never run this kernel: "
                   "it can never complete" if mode == "hard" else
                   "on the device no core of this kernel takes part in it")
            raise LoweringError(
                f"pl.system.syncall(core_type={core_type!r}, mode={mode!r}) in `{fn.name}`, a "
                f"{kind} kernel (it runs on {runs}): {why}", span,
                hint=f"use core_type={allowed[0]!r}")


def _launch_width(blocks, defs: dict[str, list]) -> tuple[str, int | str | None]:
    """How a launch spells its block count: ("literal", n), ("query", op), or
    ("other", None)."""
    if blocks is None:
        return "literal", 1
    if isinstance(blocks, Var) and len(defs.get(blocks.name, ())) == 1:
        blocks = defs[blocks.name][0]
    if isinstance(blocks, Const) and isinstance(blocks.value, int):
        return "literal", blocks.value
    if isinstance(blocks, Call) and blocks.op in LAUNCH_QUERIES:
        return "query", blocks.op
    return "other", None


def _check_launches(caller: Function, gangs: dict[str, Function], backend) -> None:
    defs: dict[str, list] = {}
    for s in statements(list(caller.body)):
        if isinstance(s, Assign):
            for t in s.targets:
                defs.setdefault(t.name, []).append(s.value if len(s.targets) == 1 else None)
    for s in statements(list(caller.body)):
        call = getattr(s, "value", None)
        if isinstance(call, FuncCall) and call.callee in gangs:
            _check_launch(call, s.span, gangs[call.callee], _launch_width(call.blocks, defs),
                          backend)


def _check_launch(call: FuncCall, at: Span | None, kernel: Function,
                  width: tuple[str, int | str | None], backend) -> None:
    """One launch of a gang kernel: no more blocks than the cores it runs on, and exactly
    as many for a hard barrier."""
    blocks, query, cores = hard_launch(kernel_class(kernel), backend)
    spelling, value = width
    count = value if spelling == "literal" else \
        query_count(str(value), backend) if spelling == "query" else None
    what = "is a plain task (one block)" if call.blocks is None else \
        f"has {count} blocks" if spelling == "literal" else \
        f"sizes itself on {_spelled(str(value))} ({count} on {backend.name})"
    if isinstance(count, int) and count > blocks:
        raise LoweringError(
            f"`{kernel.name}` holds a pl.system.syncall, so the blocks of its launch run at "
            f"once, at most one on each of the {blocks} {cores} cores of {backend.name}; the "
            f"launch {what}: on the device the blocks past them run in a later wave, which "
            "a barrier across waves never lets start", at,
            hint=f"launch at most {blocks} blocks (pl.spmd({_spelled(query)}))")
    hard = [span for c, span in barrier_calls(kernel)
            if c.op == SYNCALL and c.attr("mode") == "hard"]
    if not hard:
        return
    need = (f"the hard pl.system.syncall{_line(hard[0])} of `{kernel.name}` needs the launch "
            f"to fill all {blocks} {cores} cores of {backend.name}, one block each")
    hint = (f"launch it with pl.spmd({_spelled(query)}), or use mode=\"soft\" (a counter in "
            "global memory) for a partial launch")
    if (spelling == "literal" and value != blocks) or (spelling == "query" and value != query):
        raise LoweringError(f"{need}, but the launch {what}", at, hint=hint)


def _line(span: Span | None) -> str:
    return f" (line {span.line})" if span is not None else ""


def check_barriers(program: Program, backend) -> None:
    """The rules of the module docstring; raises LoweringError at the line at fault."""
    grouped = {call.callee for fn in program.functions
               if fn.func_type is FunctionType.Group
               for s in statements(list(fn.body))
               if isinstance(call := getattr(s, "value", None), FuncCall)}
    gangs = {}
    for fn in program.functions:
        _check_kernel(fn, fn.name in grouped)
        if is_gang_kernel(fn):
            gangs[fn.name] = fn
    if not gangs:
        return
    for fn in program.functions:
        if fn.func_type in (FunctionType.Orchestration, FunctionType.Group):
            _check_launches(fn, gangs, backend)


class CheckCrossBlockBarriers(Pass):
    """The lowered program's barriers against the backend (module docstring)."""

    name = "CheckCrossBlockBarriers"

    def run(self, program: Program, ctx) -> Program:
        check_barriers(program, ctx.backend)
        return program
