"""Orchestration operators on task-id arrays, and the guard of a specialised program.

Arrays of task ids, `pl.array.create`, `pl.array.update_element` and
`pl.array.get_element` (upstream PyPTO's spelling, docs/en/user/tasks/02-submit.md).  An
array collects the ids of tasks a loop submits so that one later task can wait on all of
them: `tids = pl.array.create(n, pl.TASK_ID)`, `tids[i] = tid` (a functional update: the
name is rebound to the array with entry i set), `deps=[tids]`; `tids[i]` reads one entry.
An entry never set stands for no task.  Arrays live in orchestration code only (a C array
of `PtoTaskIds`); kernels never see them.

`pl.expect_value(x, value)`: the guard of a program specialised for the values its
orchestration reads from an input tensor (`head_dim = pl.tensor.read(config, [3])` used
as a tensor extent, language/program_template.py): the run stops (the orchestration
returns 5) when the tensor holds another value than the one the program was built for.
"""

from __future__ import annotations

from ..errors import TypeCheckError
from ..nodes import ExprStmt
from ..types import TASK_ID, ScalarType, TaskIdArrayType, TaskIdType, TupleType
from .registry import OpDef, OpParam, make_call, register


def _infer_create(args, attrs, span):
    length, dtype = attrs["length"], attrs["dtype"]
    if not isinstance(dtype, TaskIdType):
        raise TypeCheckError(f"pl.array.create: arrays of {dtype!r} are not supported; "
                             "arrays hold task ids", span,
                             hint="write pl.array.create(n, pl.TASK_ID)")
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        raise TypeCheckError(f"pl.array.create: the length must be a positive compile-time "
                             f"integer, got {length!r}", span)
    return TaskIdArrayType(length)


def _infer_update(args, attrs, span):
    array, index, value = args
    if not isinstance(array.type, TaskIdArrayType):
        raise TypeCheckError("pl.array.update_element updates an array of task ids "
                             "(pl.array.create(n, pl.TASK_ID))", span)
    if not (isinstance(index.type, ScalarType) and not index.type.dtype.is_float):
        raise TypeCheckError("an array index must be an integer", span)
    if not isinstance(value.type, TaskIdType):
        raise TypeCheckError("an array of task ids holds task ids (`with pl.at(...) as tid`, "
                             "`res, tid = pl.submit(...)`)", span)
    return array.type


register(
    OpDef(
        "array.create",
        (OpParam("length", "attr"), OpParam("dtype", "attr")),
        _infer_create,
        "orchestration",
        "An array of `length` task ids, every entry standing for no task (orchestration "
        "only).  `deps=[a]` waits on every entry.",
        dtypes=frozenset(),
    )
)
register(
    OpDef(
        "array.update_element",
        (OpParam("array", "value"), OpParam("index", "value"), OpParam("value", "value")),
        _infer_update,
        "orchestration",
        "The array with entry `index` set to task id `value`; `a[i] = tid` is sugar for "
        "`a = pl.array.update_element(a, i, tid)`.  An index outside the array stops the run "
        "(the orchestration returns 4).",
        dtypes=frozenset(),
    )
)


def _infer_get(args, attrs, span):
    array, index = args
    if not isinstance(array.type, TaskIdArrayType):
        raise TypeCheckError("pl.array.get_element reads an array of task ids "
                             "(pl.array.create(n, pl.TASK_ID))", span)
    if not (isinstance(index.type, ScalarType) and not index.type.dtype.is_float):
        raise TypeCheckError("an array index must be an integer", span)
    return TASK_ID


register(
    OpDef(
        "array.get_element",
        (OpParam("array", "value"), OpParam("index", "value")),
        _infer_get,
        "orchestration",
        "Entry `index` of an array of task ids (a task id; an entry never set stands for no "
        "task); `a[i]` is sugar for it.  An index outside the array stops the run (the "
        "orchestration returns 4).",
        dtypes=frozenset(),
    )
)


SPECIALISED_PARAM_STATUS = 64
"""What an orchestration returns, plus the parameter's index, when a scalar parameter it was
specialised for (`compile(n=128)`, `scale: pl.FP32`) is passed another value (its guard is
`pl.expect_value(n, 128)`); an element read from an input tensor returns 5.  The generated
code returns it and the runtime names the parameter from it."""


def _infer_expect(args, attrs, span):
    (x,) = args
    value = attrs["value"]
    if not (isinstance(x.type, ScalarType) and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        raise TypeCheckError("pl.expect_value compares a scalar with a constant", span)
    return TupleType(())


def expect_value(x, value, span=None):
    """The guard statement `pl.expect_value(x, value)` an entry specialised for scalar `x`
    being `value` starts with (a bool is its 0 / 1); the one builder for the parser's and the
    jit's guards."""
    value = int(value) if isinstance(value, bool) else value
    return ExprStmt(make_call("expect_value", x, span=span, value=value), span)


register(
    OpDef(
        "expect_value",
        (OpParam("x", "value"), OpParam("value", "attr")),
        _infer_expect,
        "orchestration",
        "A statement of an orchestration body: the program was specialised for scalar `x` "
        "being `value` (an element of an input tensor, or a scalar parameter `compile(n=128)` "
        "or a bare dtype fixed); the run stops when it is not (the orchestration returns 5, "
        "or 64 + the parameter's index, and the error says which).  Computes nothing.",
        dtypes=frozenset(),
    )
)
