"""Goldens for kernel cases: seeded inputs, a reference on copies, the recorded result.

`SpecRNG` is the only random source an input generator sees (Philox4x32-10 seeded from
the kernel and variant names, never global state).  Generators and references run within
`portable.portable_torch()` and use `portable`'s float64 functions (on `fp64`) where torch
computes differently by machine, so a golden has the same bytes everywhere.
`run_reference` runs a reference on copies of the inputs and rounds its results once to
the outputs' dtypes; `record_golden` writes the case with `pypto.runtime.write_golden`;
`golden_drift` says how a recorded golden differs from what its spec makes now; `Exact`
and `Close` are the tolerance policies.  Imports no compiler module, and torch only when
a golden is made.
"""

from pypto.golden.record import (
    GoldenCase,
    GoldenDrift,
    generate_inputs,
    golden_drift,
    record_golden,
)
from pypto.golden.reference import GoldenCaseError, run_reference
from pypto.golden.rng import GENERATOR_ID, GENERATOR_VERSION, SpecRNG, seed_for
from pypto.golden.tolerance import Close, Exact
from pypto.runtime.comparison import GoldenReport, TensorComparison, Tolerance, compare_tensor
from pypto.runtime.golden import GoldenMismatchError, GoldenRecord, write_golden

__all__ = [
    "GENERATOR_ID",
    "GENERATOR_VERSION",
    "Close",
    "Exact",
    "GoldenCase",
    "GoldenCaseError",
    "GoldenDrift",
    "GoldenMismatchError",
    "GoldenRecord",
    "GoldenReport",
    "SpecRNG",
    "TensorComparison",
    "Tolerance",
    "compare_tensor",
    "generate_inputs",
    "golden_drift",
    "record_golden",
    "run_reference",
    "seed_for",
    "write_golden",
]
