"""Goldens for kernel cases: seeded inputs, a reference on copies, the recorded result.

`SpecRNG` is the only random source an input generator sees (Philox4x32-10 seeded from
the kernel and variant names, never global state).  Generators and references run within
`portable.portable_torch()` and use `portable`'s float64 functions (on `fp64`) where torch
computes differently by machine, so a golden has the same bytes everywhere.
`run_reference` runs a reference on copies of the inputs and rounds its results once to
the outputs' dtypes; `record_golden` writes the case with `write_golden`
(`pypto.golden_files`, the one description of a golden directory, which the runtime
reads back); `golden_drift` says how a recorded golden differs from what its spec makes
now; `Exact` and `Close` are the tolerance policies, `compare_tensor`
(`pypto.comparison`) applies one.  Imports neither the runtime nor the compiler, and
torch only when a golden is made; a deployed library runs without this package.
"""

from pypto.comparison import GoldenReport, TensorComparison, Tolerance, compare_tensor
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
from pypto.golden_files import write_golden

__all__ = [
    "GENERATOR_ID",
    "GENERATOR_VERSION",
    "Close",
    "Exact",
    "GoldenCase",
    "GoldenCaseError",
    "GoldenDrift",
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
