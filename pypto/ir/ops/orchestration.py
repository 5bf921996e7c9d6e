"""The SPMD block queries and the orchestration-only operators."""

from __future__ import annotations

from ..errors import TypeCheckError
from ..types import (
    INDEX,
    TensorType,
    TupleType,
)
from .registry import (
    ANY,
    OpDef,
    OpParam,
    register,
)


def _infer_create_tensor(args, attrs, span):
    return TensorType(tuple(attrs["shape"]), attrs["dtype"])


def _infer_dump_tag(args, attrs, span):
    (t,) = args
    if not isinstance(t.type, TensorType):
        raise TypeCheckError("pl.dump_tag marks a tensor; this is not one", span)
    return TupleType(())



# -- SPMD
register(
    OpDef(
        "get_block_idx",
        (),
        lambda args, attrs, span: INDEX,
        "index",
        "The index of the running block of an SPMD dispatch (`pl.spmd(n)`: 0 .. n-1; 0 in "
        "a plain task).  Legal in kernels and inside `pl.at` / `pl.spmd` blocks.",
        dtypes=frozenset(),
    )
)

register(
    OpDef(
        "get_block_num",
        (),
        lambda args, attrs, span: INDEX,
        "index",
        "The number of blocks of the running SPMD dispatch (`pl.spmd(n)`: n; 1 in a plain "
        "task).  Legal in kernels and inside `pl.at` / `pl.spmd` blocks.",
        dtypes=frozenset(),
    )
)

# -- orchestration
register(
    OpDef(
        "create_tensor",
        (OpParam("shape", "attr"), OpParam("dtype", "attr")),
        _infer_create_tensor,
        "orchestration",
        "Allocate a scratch tensor in global memory (orchestration only).",
        dtypes=ANY,
    )
)
register(
    OpDef(
        "dump_tag",
        (OpParam("t", "value"),),
        _infer_dump_tag,
        "orchestration",
        "A statement of an orchestration body: marks tensor `t` for dumping.  Every later "
        "task that takes `t` as an argument dumps it when the run has enable_dump_args=1 "
        "(inputs before the task runs, outputs after it completes).  Computes nothing.",
        dtypes=ANY,
    )
)
