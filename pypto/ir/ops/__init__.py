"""The op registry: the single place every operator is declared.

An `OpDef` gives the operator's parameters (operands vs compile-time attributes),
type inference, the dtypes it supports, its category (what the passes do with it),
the template macro (`emit`, in templates/ops.cpp.j2) and simulator ISA function
(`isa`, in pypto/sim/include/pto/) that implement it, and the user documentation.  The
language parser, the passes, codegen and the docs all read operators from here.  Its
torch semantics are one function per operator in `pypto.debug.torch_runtime` (above this
layer: torch is not the IR's), which `torch_runtime.reference(name)` returns for every
registered name; the docs print it, and tests check the simulators and the fuzzer's
reference against it op by op.

One name serves every operand kind: tensors (inside `pl.at`), tiles (in kernels) and,
where it makes sense, a Python number or scalar as one operand (the "scalar form").

The registry and its lookups live in `registry`; the operators are declared by family,
each module with its own type inference (`inference` holds the checks they share):
`elementwise`, `reduction`, `matmul`, `movement`, `partial`, `orchestration`,
`task_arrays`, `gather`, `scatter`, `random`, `sort`, `masks`, `prefetch`,
`cross_core`, `trig`, `barrier`.  Importing this package declares them all, in that order.
"""

from __future__ import annotations

from .registry import (
    ANY,
    CAST_MODES,
    CMP_TYPES,
    FLOATS,
    INTS,
    MATMUL_INPUTS,
    NUMERIC,
    REQUIRED,
    OpDef,
    OpParam,
    Step,
    all_ops,
    get_op,
    make_call,
    register,
    write_destination,
)

# Declares the operators, family by family, in this order (the registry's).
# isort: off
from . import (  # noqa: F401
    elementwise, reduction, matmul, movement, partial, orchestration, task_arrays,
)
from . import gather, scatter, random, sort, masks, prefetch, cross_core, trig, barrier  # noqa: F401
# isort: on

__all__ = [
    "ANY", "CAST_MODES", "CMP_TYPES", "FLOATS", "INTS", "MATMUL_INPUTS", "NUMERIC", "REQUIRED",
    "OpDef", "OpParam", "Step", "all_ops", "get_op", "make_call", "register", "write_destination",
]
