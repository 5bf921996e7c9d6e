"""Goldens for kernel cases: seeded inputs, a reference on copies, the recorded result.

`SpecRNG` is the only random source an input generator sees (seeded from the kernel and
variant names, never global state); `run_reference` runs a torch reference on copies of
the inputs and rounds its results once to the outputs' dtypes; `record_golden` writes the
case with `pypto.runtime.write_golden`; `Exact` and `Close` are the tolerance policies.
Imports no compiler module, and torch only when a golden is made.
"""

from pypto.golden.record import GoldenCase, generate_inputs, record_golden
from pypto.golden.reference import GoldenCaseError, run_reference
from pypto.golden.rng import GENERATOR_ID, SpecRNG, seed_for
from pypto.golden.tolerance import Close, Exact
from pypto.runtime.comparison import GoldenReport, TensorComparison, Tolerance, compare_tensor
from pypto.runtime.golden import GoldenMismatchError, GoldenRecord, write_golden

__all__ = [
    "GENERATOR_ID",
    "Close",
    "Exact",
    "GoldenCase",
    "GoldenCaseError",
    "GoldenMismatchError",
    "GoldenRecord",
    "GoldenReport",
    "SpecRNG",
    "TensorComparison",
    "Tolerance",
    "compare_tensor",
    "generate_inputs",
    "record_golden",
    "run_reference",
    "seed_for",
    "write_golden",
]
