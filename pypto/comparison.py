"""Comparing a run's outputs with expected values under a tolerance policy.

An element passes when `|actual - expected| <= atol + rtol * |expected|`, when the two
are equal (equal infinities pass) or when both are NaN; `rtol = atol = 0` is the exact
policy.  Errors are computed in float64 (integers are compared in their own type).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import dtypes
from pypto.ir.diagnostics import PyptoWarning, comparison_dtype, tolerance_too_tight

FP64 = "FP64"
"""The dtype name of float64 expected values (no kernel takes them)."""


class GoldenToleranceWarning(PyptoWarning):
    """A tolerance is tighter than one rounding of the data's dtype can honour."""


@dataclass(frozen=True)
class Tolerance:
    """How far an output may be from its expected value, and why that much.

    `rtol == atol == 0` is the exact policy: only equal values (or two NaNs) pass.
    """

    rtol: float
    atol: float
    reason: str | None = None

    def __post_init__(self) -> None:
        for field in ("rtol", "atol"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                math.isfinite(value) and value >= 0
            ):
                raise ValueError(f"{field} must be a finite number >= 0, got {value!r}")
            object.__setattr__(self, field, float(value))
        if self.reason is not None and not isinstance(self.reason, str):
            raise TypeError(f"reason must be a string, got {type(self.reason).__name__}")

    @property
    def policy(self) -> str:
        """"exact" when both tolerances are zero, else "close"."""
        return "exact" if self.rtol == 0 and self.atol == 0 else "close"

    def describe(self) -> str:
        """Short text for tables: `exact` or `rtol=2.4e-07 atol=0`."""
        if self.policy == "exact":
            return "exact"
        return f"rtol={self.rtol:.2g} atol={self.atol:.2g}"

    def to_json(self) -> dict[str, Any]:
        """The golden.json form."""
        return {"policy": self.policy, "rtol": self.rtol, "atol": self.atol, "reason": self.reason}


def warn_if_too_tight(tolerance: Tolerance, output: str | None, expected: str, what: str) -> None:
    """Warns (GoldenToleranceTooTight) when a close tolerance is finer than one rounding of
    the dtype that limits the comparison: the coarser of the output's (`output`, a dtype
    name, None where the kernel is not known) and the expected tensor's (`expected`; FP64
    limits nothing).  The inputs' dtypes do not count: see `comparison_dtype`."""
    if tolerance.policy == "exact":
        return
    limit = comparison_dtype(_dtype_or_none(output), _dtype_or_none(expected))
    found = tolerance_too_tight(tolerance.rtol, tolerance.atol, limit, what=what)
    if found is not None:
        warnings.warn(f"[{found.check.value}] {found.message}", GoldenToleranceWarning,
                      stacklevel=3)


def _dtype_or_none(name: str | None) -> dtypes.DataType | None:
    return None if name is None or name == FP64 else dtypes.from_name(name)


@dataclass(frozen=True)
class TensorComparison:
    """One output compared with its expected value."""

    name: str
    count: int  # elements compared
    mismatches: int
    worst_index: tuple[int, ...] | None  # the largest error (among mismatches when any)
    actual_at_worst: float | None
    expected_at_worst: float | None
    max_abs: float
    max_rel: float
    tolerance: Tolerance
    shape_error: str | None = None  # set when the shapes differ and nothing was compared

    @property
    def passed(self) -> bool:
        """True when every element is within tolerance."""
        return self.mismatches == 0 and self.shape_error is None

    def describe(self) -> str:
        """One line for an error message."""
        if self.shape_error is not None:
            return f"{self.name}: {self.shape_error}"
        text = (
            f"{self.name}: {self.mismatches} of {self.count} elements outside "
            f"{self.tolerance.describe()}; max abs error {self.max_abs:.6g}, "
            f"max rel error {self.max_rel:.6g}"
        )
        if self.worst_index is not None:
            text += (
                f"; worst at index {list(self.worst_index)}: actual {self.actual_at_worst!r}, "
                f"expected {self.expected_at_worst!r}"
            )
        return text


def compare_tensor(name: str, actual: Any, expected: Any, tolerance: Tolerance) -> TensorComparison:
    """Compares two tensors elementwise: `|a - e| <= atol + rtol * |e|`, equal values and
    NaN against NaN pass.  Errors are computed in float64."""
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        return TensorComparison(
            name, 0, 0, None, None, None, math.inf, math.inf, tolerance,
            shape_error=f"shape {list(actual.shape)} differs from the expected "
            f"{list(expected.shape)}",
        )
    count = expected.numel()
    if count == 0:
        return TensorComparison(name, 0, 0, None, None, None, 0.0, 0.0, tolerance)
    a = actual.detach().cpu().to(torch.float64)
    e = expected.detach().cpu().to(torch.float64)
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))
    if not (actual.dtype.is_floating_point or expected.dtype.is_floating_point):
        # Integers compare in their own type: float64 cannot hold every int64.
        same = actual.cpu() == expected.cpu()
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs())
    diff = torch.nan_to_num(diff, nan=math.inf)  # NaN against a number, inf against -inf
    scale = e.abs()
    rel = torch.where(scale > 0, diff / scale, torch.where(diff > 0, math.inf, 0.0))
    ok = same | (diff <= tolerance.atol + tolerance.rtol * scale)
    bad = ~ok
    mismatches = int(bad.sum())
    ranking = torch.where(bad, diff, -torch.ones_like(diff)) if mismatches else diff
    flat = int(torch.argmax(ranking.reshape(-1)))
    index = tuple(int(i) for i in _unravel(flat, tuple(expected.shape)))
    return TensorComparison(
        name=name,
        count=count,
        mismatches=mismatches,
        worst_index=index,
        actual_at_worst=_item(actual, index),
        expected_at_worst=_item(expected, index),
        max_abs=float(diff.max()),
        max_rel=float(rel.max()),
        tolerance=tolerance,
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index))


def _item(tensor: Any, index: tuple[int, ...]) -> float | int | bool:
    return tensor[index].item() if index else tensor.item()


@dataclass(frozen=True)
class GoldenReport:
    """A run checked against a golden: every output's comparison and any differing inputs."""

    golden: Path
    outputs: tuple[TensorComparison, ...]
    differing_inputs: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when all outputs are within tolerance and the inputs were the recorded ones."""
        return not self.differing_inputs and all(c.passed for c in self.outputs)

    def describe(self) -> str:
        """The mismatch message: every failing output, then the inputs that differed."""
        lines = [f"golden {self.golden}: the run does not match"]
        lines += [f"  {c.describe()}" for c in self.outputs if not c.passed]
        if self.differing_inputs:
            lines.append(
                "  inputs that differ from the recorded inputs (the comparison is against "
                f"another case): {', '.join(self.differing_inputs)}"
            )
        return "\n".join(lines)
