"""The task side of orchestration bodies: task scopes, task ids and explicit dependencies.

- `with pl.at(level=..., name_hint=, deps=[...], no_dep_args=[...], dumps=[...]) as tid:`
  — one task;
- `with pl.spmd(n, name_hint=, deps=, no_dep_args=, dumps=) as tid:` and
  `for i in pl.spmd(n):` — one dispatch of n blocks, each reading its index with
  `pl.get_block_idx()`;
- `with pl.manual_scope():` — the tasks inside infer no edges; only `deps=` orders them;
- `res, tid = pl.submit(kernel, *args, deps=[...], no_dep_args=[...])` and
  `res, tid = pl.spmd_submit(kernel, *args, core_num=n, ...)` — a kernel call that also
  yields its task id (flat: the kernel's results, then the id; a kernel that returns
  nothing gives the id alone);
- `pl.dump_tag(t)` — a statement that marks tensor `t` for dumping in every later task
  that takes it (`dumps=[t]` marks it for one task); both matter at `enable_dump_args=1`.

A task id is an orchestration value of type `pl.TaskId` whose only use is `deps=`.
`FunctionParser` mixes this class in; it relies on the parser's `error`, `static`,
`scalar`, `body`, `vars` and `_func_call`.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from ..ir.errors import TypeCheckError
from ..ir.names import fresh_name
from ..ir.nodes import (
    Assign,
    AtScope,
    Call,
    Const,
    ExprStmt,
    FuncCall,
    Function,
    Param,
    Return,
    RuntimeScope,
    Var,
)
from ..ir.types import (
    INDEX,
    TASK_ID,
    FunctionType,
    Level,
    ScopeMode,
    SplitMode,
    TaskIdArrayType,
    TaskIdType,
    TensorType,
    TupleType,
)
from .stubs import DslBuiltin

_SCOPE_KEYWORDS = {
    "at": ("level", "name_hint", "deps", "no_dep_args", "dumps", "optimizations",
           "allow_early_resolve"),
    "spmd": ("name_hint", "deps", "no_dep_args", "dumps", "core_num", "sync_start",
             "allow_early_resolve"),
}
_SUBMIT_KEYWORDS = {"submit": ("deps", "no_dep_args", "dumps", "allow_early_resolve"),
                    "spmd_submit": ("core_num", "deps", "no_dep_args", "dumps",
                                    "allow_early_resolve")}
_TASK_ID_HINT = "bind one with `with pl.at(...) as tid:` or `res, tid = pl.submit(kernel, ...)`"


class TaskSyntax:
    """`FunctionParser` mixin: parses the statements that create tasks."""

    manual = False
    """True while parsing the body of `with pl.manual_scope():`."""
    spmd_dispatch = False
    """True while parsing the body of `with pl.spmd(n):`, which may call kernels."""
    function_name = ""
    """The name of the function being parsed."""

    # ------------------------------------------------------------------ with-statements
    def stmt_With(self, node: ast.With):
        if len(node.items) > 1:
            # `with pl.manual_scope(), pl.at(...) as t:` is the nested form on one line.
            inner = ast.With(items=node.items[1:], body=node.body)
            node = ast.With(items=node.items[:1], body=[ast.copy_location(inner, node)])
            ast.copy_location(node, inner)
        item = node.items[0]
        call = item.context_expr
        builtin = self._builtin_name(call.func) if isinstance(call, ast.Call) else None
        if builtin == "manual_scope":
            return self._manual_scope(node, item)
        if builtin == "scope":
            return self._scope(node, item)
        if builtin == "cluster":
            return self._cluster(node, item)
        if builtin in ("at", "spmd"):
            return self._task_scope(node, item, builtin)
        raise self.error(node, "only `with pl.at(level=pl.Level.CORE_GROUP):`, `with "
                         "pl.spmd(n):`, `with pl.cluster():`, `with pl.manual_scope():` and "
                         "`with pl.scope(...):` blocks are supported")

    def _builtin_name(self, func: ast.AST) -> str | None:
        fn = self._callable(func)
        return fn.name if isinstance(fn, DslBuiltin) else None

    def _orchestration_only(self, node, what: str) -> None:
        if self.func_type is not FunctionType.Orchestration:
            raise self.error(node, f"`{what}` belongs in a @pl.jit (orchestration) function; "
                             "an InCore function is already one kernel")
        if self.in_scope:
            raise self.error(node, f"`{what}` cannot be nested inside a `pl.at` or `pl.spmd` "
                             "block: the block is already one task")

    def _scope(self, node: ast.With, item: ast.withitem):
        """`with pl.scope(mode=pl.ScopeMode.MANUAL):` is `pl.manual_scope()`; `pl.scope()`
        (AUTO) is a runtime scope (`RuntimeScope`) whose tasks infer their edges as
        everywhere: it picks the task ring of its depth (pypto.runtime.rings), which
        nothing but ring capacity and scope stats can observe.  AUTO may not nest inside
        MANUAL, as upstream."""
        self._orchestration_only(node, "pl.scope")
        call = item.context_expr
        mode_nodes = list(call.args) + [kw.value for kw in call.keywords]
        if len(mode_nodes) > 1 or any(kw.arg != "mode" for kw in call.keywords) \
                or item.optional_vars is not None:
            raise self.error(node, "write `with pl.scope():` or `with pl.scope(mode="
                             "pl.ScopeMode.MANUAL):` (no other arguments, no `as`)")
        mode = self.static(mode_nodes[0]) if mode_nodes else ScopeMode.AUTO
        if not isinstance(mode, ScopeMode):
            raise self.error(node, "pl.scope(mode=...) takes pl.ScopeMode.AUTO or "
                             "pl.ScopeMode.MANUAL")
        if mode is ScopeMode.MANUAL:
            return self._manual_body(node)
        if self.manual:
            raise self.error(node, "an AUTO `pl.scope()` cannot be nested inside a manual "
                             "scope: the runtime forbids it",
                             hint="end the manual scope first, or leave this block out")
        return RuntimeScope(tuple(self.body(node.body)), self.source.span(node))

    def _manual_scope(self, node: ast.With, item: ast.withitem):
        self._orchestration_only(node, "pl.manual_scope")
        call = item.context_expr
        if call.args or call.keywords or item.optional_vars is not None:
            raise self.error(node, "write `with pl.manual_scope():` (no arguments, no `as`)")
        return self._manual_body(node)

    def _manual_body(self, node: ast.With) -> list:
        if self.manual:
            raise self.error(node, "`pl.manual_scope` blocks cannot be nested; the outer one "
                             "already turns inference off")
        self.manual = True
        try:
            return list(self.body(node.body))
        finally:
            self.manual = False

    def _cluster(self, node: ast.With, item: ast.withitem):
        """`with pl.cluster():` co-schedules the kernels inside on one physical cluster.
        A block that calls a pl.FunctionType.AIC and a pl.FunctionType.AIV function becomes
        a pl.FunctionType.Group function of the program (upstream's OutlineClusterScopes):
        the block is replaced by one call of it, one task whose cube and vector functions
        run at once with the pipe between them.  A block of other kernels (InCore, pl.spmd
        dispatches) has nothing to co-schedule that the program could observe: its tasks
        are dispatched as they are written."""
        self._orchestration_only(node, "pl.cluster")
        call = item.context_expr
        if call.args or call.keywords or item.optional_vars is not None:
            raise self.error(node, "write `with pl.cluster():` (no arguments, no `as`)")
        outer = dict(self.vars)
        body = list(self.body(node.body))
        units = {self.callee_types.get(s.value.callee) for s in body
                 if isinstance(getattr(s, "value", None), FuncCall)}
        if not units & {FunctionType.AIC, FunctionType.AIV}:
            return body
        return self._cluster_group(node, body, outer)

    def _cluster_group(self, node: ast.With, body: list, outer: dict[str, Var]) -> list:
        """The Group function `body` (a cluster block's calls of one AIC and one AIV
        function) becomes, added to the program; returns the block's replacement, the
        group's call.  Its parameters are the outer values the block reads (in first-use
        order), its results the values the block binds (their last binding)."""
        self._check_cluster_calls(node, body)
        params: dict[str, Var] = {}
        results: dict[str, Var] = {}
        for stmt in body:
            for arg in stmt.value.args:
                if not isinstance(arg, (Var, Const)):
                    raise self.error(node, "pass the cluster's functions named values or "
                                     "constants", hint="bind the argument to a name before "
                                     "the `pl.cluster()` block")
                if isinstance(arg, Var) and arg.name not in results and arg.name in outer:
                    params.setdefault(arg.name, arg)
            results.update((t.name, t) for t in getattr(stmt, "targets", ()))
        span = self.source.span(node)
        name = self._fresh_function_name(f"{self.function_name}_cluster")
        returns = tuple(v.type for v in results.values())
        group_body = tuple(body) + ((Return(tuple(results.values()), span),) if results else ())
        self.outlined.append(Function(name, tuple(Param(v) for v in params.values()), returns,
                                      group_body, FunctionType.Group, span))
        rtype = returns[0] if len(returns) == 1 else TupleType(returns)
        group_call = FuncCall(name, tuple(params.values()), rtype, span, manual=self.manual)
        if not results:
            return [ExprStmt(group_call, span)]
        return [Assign(tuple(results.values()), group_call, span)]

    def _check_cluster_calls(self, node: ast.With, body: list) -> None:
        """A cluster block that becomes a group calls one AIC and one AIV function, as
        plain calls (the group is the task)."""
        kinds: dict[FunctionType, str] = {}
        for stmt in body:
            value = getattr(stmt, "value", None)
            kind = self.callee_types.get(value.callee) if isinstance(value, FuncCall) else None
            if kind not in (FunctionType.AIC, FunctionType.AIV) or kind in kinds:
                raise self.error(node, "a `pl.cluster()` block that calls a cube (AIC) or "
                                 "vector (AIV) function calls one of each and nothing else: "
                                 "the two run at once as one task",
                                 hint="move the other statements out of the block")
            if value.no_dep_args or value.blocks is not None:
                raise self.error(node, "a cluster's cube and vector functions are one task: "
                                 "mark pl.no_dep / pl.spmd outside the `pl.cluster()` block")
            kinds[kind] = value.callee
        if len(kinds) != 2:
            raise self.error(node, "a `pl.cluster()` block calls one AIC and one AIV "
                             f"function; this one calls only `{next(iter(kinds.values()))}`",
                             hint="call its peer function in the same block")

    def _fresh_function_name(self, base: str) -> str:
        """`base_0`, `base_1`, ...: the first name no function of the program has."""
        name = fresh_name(base, self.function_names, first=0)
        self.function_names.add(name)
        return name

    def _task_scope(self, node: ast.With, item: ast.withitem, builtin: str):
        self._orchestration_only(node, f"pl.{builtin}")
        call = item.context_expr
        options = self._scope_options(call, builtin)
        task = None
        if item.optional_vars is not None:
            if not isinstance(item.optional_vars, ast.Name):
                raise self.error(node, "bind the task id to one name: `... as tid:`")
            task = Var(item.optional_vars.id, TASK_ID, self.source.span(item.optional_vars))
        self.in_scope = True
        self.spmd_dispatch = builtin == "spmd"
        try:
            body = self.body(node.body)
        finally:
            self.in_scope = False
            self.spmd_dispatch = False
        if any(isinstance(getattr(s, "value", None), FuncCall) for s in body):
            return self._spmd_dispatches(node, body, options, task)
        if task is not None:
            self._rebind(task, node)  # bound after the block: it cannot wait for itself
        return AtScope(options["level"], body, options["name_hint"], self.source.span(node),
                       deps=options["deps"], no_dep_args=options["no_dep_args"], task=task,
                       manual=self.manual, blocks=options["blocks"], dumps=options["dumps"],
                       split=options["split"], early_resolve=options["early_resolve"],
                       slot_num=options["slot_num"])

    def _spmd_dispatches(self, node: ast.With, body, options: dict, task) -> list:
        """`with pl.spmd(n): out = kernel(...)`, the dispatch form: each kernel call in the
        block is one dispatch of n blocks (as `pl.spmd_submit(kernel, ..., core_num=n)`)."""
        calls = [s for s in body if isinstance(getattr(s, "value", None), FuncCall)]
        if len(calls) != len(body):
            raise self.error(node, "a `pl.spmd` block either calls kernels (one dispatch of "
                             "the blocks each) or computes itself, not both",
                             hint="move the computation into the kernel, or into its own "
                                  "`with pl.spmd(n):` block")
        if task is not None and len(calls) != 1:
            raise self.error(node, "`as tid` names the task of one kernel dispatch; this "
                             f"block dispatches {len(calls)} kernels")
        out = []
        for stmt in calls:
            call = replace(stmt.value, blocks=options["blocks"], deps=options["deps"],
                           no_dep_args=stmt.value.no_dep_args + options["no_dep_args"],
                           dumps=options["dumps"],
                           early_resolve=stmt.value.early_resolve or options["early_resolve"])
            passed = {a.name for a in call.args if isinstance(a, Var)}
            for var in call.no_dep_args + call.dumps:
                if var.name not in passed:
                    raise self.error(node, f"`{var.name}` is not an argument of the kernel "
                                     "this block dispatches")
            targets = stmt.targets if isinstance(stmt, Assign) else ()
            if task is not None:
                results = call.type.items if isinstance(call.type, TupleType) else (
                    (call.type,) if targets else ())
                call = replace(call, task_id=True,
                               type=TupleType(tuple(results) + (TASK_ID,)) if results
                               else TASK_ID)
                self._rebind(task, node)
                targets = tuple(targets) + (task,)
            out.append(Assign(tuple(targets), call, stmt.span) if targets
                       else ExprStmt(call, stmt.span))
        return out

    def _scope_options(self, call: ast.Call, builtin: str) -> dict:
        """Level, block count, name hint, deps, no_dep_args and dumps of `pl.at(...)` /
        `pl.spmd(...)`."""
        allowed = _SCOPE_KEYWORDS[builtin]
        options = {"level": Level.CORE_GROUP, "blocks": None, "name_hint": "", "deps": (),
                   "no_dep_args": (), "dumps": (), "split": None, "early_resolve": False,
                   "slot_num": None}
        if builtin == "at":
            if call.args:
                raise self.error(call, "pass pl.at arguments by keyword: pl.at(level=...)")
            options["level"] = None
        else:
            counts = list(call.args) + [kw.value for kw in call.keywords if kw.arg == "core_num"]
            if len(counts) != 1:
                raise self.error(call, "pl.spmd takes the number of blocks: pl.spmd(n, ...) or "
                                 "pl.spmd(core_num=n)")
            options["blocks"] = self._block_count(counts[0])
        for kw in call.keywords:
            if kw.arg not in allowed:
                hint = f"pl.{builtin} accepts {', '.join(allowed)}"
                raise self.error(call, f"pl.{builtin}({kw.arg}=...) is not supported", hint=hint)
            self._scope_keyword(call, kw, options)
        if not isinstance(options["level"], Level):
            raise self.error(call, "pl.at needs level=pl.Level.CORE_GROUP")
        return options

    def _scope_keyword(self, call: ast.Call, kw: ast.keyword, options: dict) -> None:
        """One accepted keyword of `pl.at(...)` / `pl.spmd(...)`, read into `options`."""
        if kw.arg == "deps":
            options["deps"] = self._task_deps(kw.value)
        elif kw.arg in ("no_dep_args", "dumps"):
            options[kw.arg] = self._tensor_list(kw.value, kw.arg)
        elif kw.arg == "optimizations":
            options["split"], options["slot_num"] = self._optimizations(kw.value)
        elif kw.arg == "allow_early_resolve":
            options["early_resolve"] = self._early_resolve(call, kw.value)
        elif kw.arg == "core_num":
            return  # the block count, read by _scope_options
        elif kw.arg == "sync_start":
            # All blocks start together: a launch whose kernel holds a pl.system.syncall
            # runs its blocks at once anyway (pto/gang.hpp), and no other operator waits
            # for another block, so every schedule of the others is one it may give.
            if not isinstance(self.static(kw.value), bool):
                raise self.error(call, "sync_start= takes True or False")
        elif kw.arg == "name_hint":
            hint_value = self.static(kw.value)
            if not isinstance(hint_value, str) or not hint_value.isidentifier():
                raise self.error(call, "name_hint must be an identifier string, e.g. "
                                 "name_hint=\"stage1\"")
            options["name_hint"] = hint_value
        else:
            options["level"] = self.static(kw.value)

    def _optimizations(self, node: ast.AST) -> tuple:
        """`optimizations=[pl.split(mode), pl.cross_core_slot(slot_num=N)]`, written inline:
        the split mode (None when not given; NONE kept: it asks for the pipe without
        halving) and the ring depth (None when not given)."""
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(node, "optimizations= takes a list written at the call site: "
                             "optimizations=[pl.split(pl.SplitMode.UP_DOWN)]",
                             hint="the list is read from the source, so it cannot be built "
                                  "up in a variable")
        split, slot_num = None, None
        for item in node.elts:
            fn = self._callable(item.func) if isinstance(item, ast.Call) else None
            name = fn.name if isinstance(fn, DslBuiltin) else None
            if name not in ("split", "cross_core_slot"):
                raise self.error(item, f"`{ast.unparse(item)}` is not a pl.at optimization",
                                 hint="optimizations=[pl.split(pl.SplitMode.UP_DOWN), "
                                      "pl.cross_core_slot(slot_num=2)]")
            if (split if name == "split" else slot_num) is not None:
                raise self.error(item, f"pl.{name} is given twice")
            if name == "cross_core_slot":
                slot_num = self._slot_num(item)
                continue
            if len(item.args) != 1 or item.keywords:
                raise self.error(item, "write pl.split(pl.SplitMode.UP_DOWN) (or LEFT_RIGHT, "
                                 "NONE)", hint="the ring depth is pl.cross_core_slot("
                                               "slot_num=N), an entry of its own")
            split = self.static(item.args[0])
            if not isinstance(split, SplitMode):
                raise self.error(item, f"pl.split takes a pl.SplitMode, got "
                                 f"`{ast.unparse(item.args[0])}`")
        return split, slot_num

    def _slot_num(self, item: ast.Call) -> int:
        """`pl.cross_core_slot(slot_num=N)` (upstream's keyword-only signature): N, a
        positive integer known when the block is parsed."""
        if item.args or [kw.arg for kw in item.keywords] != ["slot_num"]:
            raise self.error(item, "write pl.cross_core_slot(slot_num=N): the depth of the "
                             "automatic cross-core pipe's ring, by keyword")
        value = self.static(item.keywords[0].value)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self.error(item, f"pl.cross_core_slot(slot_num=) is a positive integer, got "
                             f"`{ast.unparse(item.keywords[0].value)}`")
        return value

    def _block_count(self, node: ast.AST):
        blocks = self.scalar(node)
        if blocks.type != INDEX:
            raise self.error(node, "the number of SPMD blocks must be an integer")
        if isinstance(blocks, Const) and blocks.value < 0:
            raise self.error(node, "the number of SPMD blocks cannot be negative")
        return blocks

    def _task_deps(self, node: ast.AST) -> tuple[Var, ...]:
        """`deps=[t0, t1, tids]`: task ids or arrays of them bound earlier in this function
        (an array: every entry)."""
        if isinstance(node, ast.Constant) and node.value is None:
            return ()
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(node, "deps= takes a list of task ids: deps=[tid, ...]",
                             hint=_TASK_ID_HINT)
        return tuple(self.task_id(element, "deps=", arrays=True) for element in node.elts)

    def task_id(self, node: ast.AST, where: str, arrays: bool = False) -> Var:
        """The task id (or, with `arrays`, the array of task ids) the name `node` holds, as
        an entry of `where` (deps=, an array)."""
        if not isinstance(node, ast.Name):
            raise self.error(node, f"{where} entries must be task ids, not "
                             f"`{ast.unparse(node)}`", hint=_TASK_ID_HINT)
        var = self.vars.get(node.id)
        if var is None:
            raise self.error(node, f"`{node.id}` in {where} is not a task id bound before this "
                             "point", hint=_TASK_ID_HINT)
        kinds = (TaskIdType, TaskIdArrayType) if arrays else (TaskIdType,)
        if not isinstance(var.type, kinds):
            raise self.error(node, f"{where} entries must be task ids; `{node.id}` is "
                             f"{_describe_value(var.type)}", hint=_TASK_ID_HINT)
        return Var(var.name, var.type, self.source.span(node))

    def task_dummy(self, node: ast.Call):
        """`pl.system.task_dummy(deps=[tids])`: one value standing for the tasks it waits on
        (waiting on it is waiting on them), here the array or task id itself."""
        if self.func_type is not FunctionType.Orchestration or self.in_scope:
            raise self.error(node, "pl.system.task_dummy joins task ids in a @pl.jit "
                             "(orchestration) function, outside pl.at blocks")
        if node.args or [kw.arg for kw in node.keywords] != ["deps"]:
            raise self.error(node, "write pl.system.task_dummy(deps=[tids])")
        deps = self._task_deps(node.keywords[0].value)
        if len(deps) != 1:
            raise self.error(node, f"pl.system.task_dummy joins one array of task ids (or one "
                             f"task id) here, got {len(deps)} entries",
                             hint="collect the ids in tids = pl.array.create(n, pl.TASK_ID) "
                                  "with tids[i] = tid, and pass deps=[tids]")
        return deps[0]

    def assign_task_array(self, target: ast.Subscript, array: Var, value_node, node):
        """`tids[i] = tid`: `tids = pl.array.update_element(tids, i, tid)`."""
        if isinstance(target.slice, (ast.Slice, ast.Tuple)):
            raise self.error(node, "an array of task ids takes one index: `tids[i] = tid`")
        index = self.scalar(target.slice)
        tid = self.task_id(value_node, "an array")
        value = self._call_op("array.update_element", [array, index, tid], {}, node)
        return self._bind(ast.copy_location(ast.Name(array.name, ast.Store()), target), value,
                          node, annotation=None)

    def _tensor_list(self, node: ast.AST, keyword: str) -> tuple[Var, ...]:
        """`no_dep_args=[t]` (tensors opted out of dependency inference) or `dumps=[t]`
        (tensors the task dumps): tensors of this function."""
        if isinstance(node, ast.Constant) and node.value is None:
            return ()
        if not isinstance(node, (ast.List, ast.Tuple)):
            raise self.error(node, f"{keyword}= takes a list of tensors: {keyword}=[t, ...]")
        return tuple(self.tensor_var(element, f"{keyword}= entries must be tensors")
                     for element in node.elts)

    def tensor_var(self, node: ast.AST, what: str) -> Var:
        """The tensor variable `node` names (at its own span); else an error saying `what`
        it must be."""
        var = self.vars.get(node.id) if isinstance(node, ast.Name) else None
        if var is None or not isinstance(var.type, TensorType):
            raise self.error(node, f"{what} of this function; `{ast.unparse(node)}` is not one")
        return Var(var.name, var.type, self.source.span(node))

    # ------------------------------------------------------------------ pl.dump_tag
    def dump_tag_stmt(self, node: ast.Expr):
        """`pl.dump_tag(t)`: an orchestration statement naming one tensor variable."""
        call = node.value
        if self.func_type is not FunctionType.Orchestration or self.in_scope:
            raise self.error(node, "pl.dump_tag(t) marks a tensor of a @pl.jit (orchestration) "
                             "function for the tasks after it; it cannot be used in a kernel "
                             "or inside a `pl.at` block",
                             hint="put it before the block, or use `pl.at(..., dumps=[t])`")
        if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], ast.Name):
            raise self.error(node, "write pl.dump_tag(t) with one tensor variable")
        self.statement_call = call
        try:
            return ExprStmt(self.expr(call), self.source.span(node))
        finally:
            self.statement_call = None

    def check_view_valid_shape(self, call, node: ast.Call) -> None:
        """`pl.slice(t, shape, offset, valid_shape=[r, n])` of a tensor hands a task the
        valid part of the window (codegen cuts the view back to it at run time): a view an
        orchestration takes.  In a kernel the pl.load that reads the window says it."""
        if (isinstance(call, Call) and isinstance(call.args[0].type, TensorType)
                and call.attr("valid_shape") is not None
                and (self.func_type is not FunctionType.Orchestration or self.in_scope)):
            raise self.error(node, "pl.slice of a tensor takes valid_shape in orchestration "
                             "code (the view a task is handed); in a kernel, give valid_shape "
                             "to the pl.load that reads the window", cls=TypeCheckError)

    def check_dump_tag(self, node: ast.Call) -> None:
        """`pl.dump_tag(t)` is a statement: it has no value to use."""
        if node is not getattr(self, "statement_call", None):
            raise self.error(node, "pl.dump_tag(t) is a statement of its own; it has no value",
                             hint="write it on its own line: pl.dump_tag(t)")

    # ------------------------------------------------------------------ for i in pl.spmd(n)
    def spmd_loop(self, node: ast.For):
        """`for i in pl.spmd(n, ...):` is `with pl.spmd(n, ...):` with `i = pl.get_block_idx()`."""
        self._orchestration_only(node, "pl.spmd")
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "the block index must be a single name: for i in pl.spmd(n)")
        if node.orelse:
            raise self.error(node, "`for ... else` is not supported")
        options = self._scope_options(node.iter, "spmd")
        span = self.source.span(node)
        index = Var(node.target.id, INDEX, span)
        saved = self.vars.get(index.name)
        self.vars[index.name] = index
        self.in_scope = True
        try:
            body = self.body(node.body)
        finally:
            self.in_scope = False
            if saved is not None:
                self.vars[index.name] = saved
            else:
                self.vars.pop(index.name, None)
        read_index = self._call_op("get_block_idx", [], {}, node)
        body = (Assign((index,), read_index, span),) + tuple(body)
        return AtScope(options["level"], body, options["name_hint"], span, deps=options["deps"],
                       no_dep_args=options["no_dep_args"], manual=self.manual,
                       blocks=options["blocks"], dumps=options["dumps"],
                       early_resolve=options["early_resolve"])

    def check_block_idx(self, node: ast.Call) -> None:
        """`pl.get_block_idx()` reads a kernel's block index: not in the orchestration itself."""
        if self.func_type is FunctionType.Orchestration and not self.in_scope:
            raise self.error(node, "pl.get_block_idx() is the index of the running block of a "
                             "kernel; call it inside `pl.spmd` / `pl.at` blocks or "
                             "@pl.jit.incore kernels")

    # ------------------------------------------------------------------ pl.submit
    def submit_call(self, node: ast.Call, builtin: str) -> FuncCall:
        """`pl.submit(kernel, *args, deps=, no_dep_args=)` / `pl.spmd_submit(..., core_num=)`."""
        what = f"pl.{builtin}"
        if self.func_type is not FunctionType.Orchestration:
            raise self.error(node, f"{what} dispatches a task from a @pl.jit (orchestration) "
                             "function")
        if not node.args:
            raise self.error(node, f"{what}(kernel, *args, ...) needs the kernel first")
        ref_node = node.args[0]
        if isinstance(ref_node, ast.Attribute) and isinstance(ref_node.value, ast.Name) and \
                ref_node.value.id == "self":
            ref = ref_node.attr
        else:
            ref = self._callable(ref_node)
            if not getattr(ref, "__pypto_kernel__", False):
                raise self.error(node, f"the first argument of {what} must be an "
                                 "@pl.jit.incore kernel (self.<kernel> in a @pl.program)")
        options = self._submit_options(node, builtin, what)
        if builtin == "spmd_submit" and options["core_num"] is None:
            raise self.error(node, "pl.spmd_submit needs core_num=<number of blocks>")
        call = self._func_call(ref, node, node.args[1:])
        self._check_named_arguments(node, call, options)
        results = call.type.items if isinstance(call.type, TupleType) else (call.type,)
        rtype = TupleType(tuple(results) + (TASK_ID,)) if results else TASK_ID
        return replace(call, type=rtype, deps=options["deps"],
                       no_dep_args=call.no_dep_args + options["no_dep_args"],
                       blocks=options["core_num"],
                       task_id=True, dumps=options["dumps"],
                       early_resolve=options["early_resolve"])

    def _submit_options(self, node: ast.Call, builtin: str, what: str) -> dict:
        """The keywords of `pl.submit(...)` / `pl.spmd_submit(...)`."""
        options = {"deps": (), "no_dep_args": (), "dumps": (), "core_num": None,
                   "early_resolve": False}
        for kw in node.keywords:
            if kw.arg not in _SUBMIT_KEYWORDS[builtin]:
                raise self.error(node, f"{what}({kw.arg}=...) is not supported",
                                 hint=f"{what} accepts {', '.join(_SUBMIT_KEYWORDS[builtin])}; "
                                 "kernel arguments are positional")
            if kw.arg == "deps":
                options["deps"] = self._task_deps(kw.value)
            elif kw.arg in ("no_dep_args", "dumps"):
                options[kw.arg] = self._tensor_list(kw.value, kw.arg)
            elif kw.arg == "allow_early_resolve":
                options["early_resolve"] = self._early_resolve(node, kw.value)
            else:
                options["core_num"] = self._block_count(kw.value)
        return options

    def _early_resolve(self, call: ast.AST, node: ast.AST) -> bool:
        """`allow_early_resolve=True`: the task's consumers may pre-stage (a scheduling
        hint; the runtime starts a consumer whose producers all carry it the moment the
        last one ends)."""
        value = self.static(node)
        if not isinstance(value, bool):
            raise self.error(call, "allow_early_resolve= takes True or False")
        return value

    def _check_named_arguments(self, node: ast.Call, call, options: dict) -> None:
        """no_dep_args= and dumps= name arguments of the call."""
        passed = {a.name for a in call.args if isinstance(a, Var)}
        for keyword in ("no_dep_args", "dumps"):
            for var in options[keyword]:
                if var.name not in passed:
                    raise self.error(node, f"{keyword} names `{var.name}`, which is not an "
                                     "argument of this call")


def _describe_value(t) -> str:
    if isinstance(t, TensorType):
        return f"a {t.dtype.name} tensor {list(t.shape)}"
    dtype = getattr(t, "dtype", None)
    return f"a {dtype.name} value" if dtype is not None else f"a {type(t).__name__}"


__all__ = ["TaskSyntax"]
