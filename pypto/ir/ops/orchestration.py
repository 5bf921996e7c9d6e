"""The SPMD block queries and the orchestration-only operators."""

from __future__ import annotations

from ..errors import TypeCheckError
from ..types import (
    INDEX,
    TensorLayout,
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
    layout = attrs.get("layout", TensorLayout.ND)
    if layout is not TensorLayout.ND:
        raise TypeCheckError(f"pl.create_tensor(layout={layout!r}): tensors in global memory "
                             "are row-major (pl.ND) here", span,
                             hint="drop layout=; transpose at the use (a_trans= / b_trans= of "
                                  "pl.matmul, pl.transpose)")
    if attrs.get("init_value") is not None:
        raise TypeCheckError("pl.create_tensor(init_value=...) is not supported (upstream "
                             "removed it: the runtime does not fill a new tensor)", span,
                             hint="fill it with a kernel (pl.full, or a pl.at block that stores "
                                  "the value) and order its readers after that task")
    if not isinstance(attrs.get("manual_dep", False), bool):
        raise TypeCheckError("pl.create_tensor(manual_dep=) takes True or False", span)
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
        (OpParam("shape", "attr"), OpParam("dtype", "attr"),
         OpParam("layout", "attr", TensorLayout.ND), OpParam("manual_dep", "attr", False),
         OpParam("init_value", "attr", None)),
        _infer_create_tensor,
        "orchestration",
        "Allocate a scratch tensor in global memory (orchestration only), row-major "
        "(`layout=pl.ND`, the only layout).  `manual_dep=True` leaves every access to it, "
        "for its whole life (its views and the names tasks rebind it to), out of dependency "
        "inference, as `pl.no_dep` does for one argument: order its readers with `deps=`.  "
        "Its contents start undefined (`init_value=` is refused, as upstream).",
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
