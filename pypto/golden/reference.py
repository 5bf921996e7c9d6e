"""Running a spec's reference: on copies of the inputs, within `portable_torch()` (torch
calls whose bits depend on the machine are refused), rounded once to the outputs' dtypes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.golden.portable import portable_torch, to_dtype
from pypto.ir.dtypes import DataType


class GoldenCaseError(ValueError):
    """A spec's input generator or reference failed, or returned something that does not
    match the kernel's parameters; the message names the spec (file:line) and variant."""


def _results_by_name(result: Any, names: list[str], where: str) -> dict[str, Any]:
    """What the reference returned, by output name: a dict as it is, a tuple or list in
    parameter order, a single value for the one output."""
    if isinstance(result, Mapping):
        return dict(result)
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise GoldenCaseError(
                f"{where}: the reference returned {len(result)} values for the outputs {names}"
            )
        return dict(zip(names, result, strict=True))
    if len(names) != 1:
        raise GoldenCaseError(
            f"{where}: the reference returned one value but the kernel has outputs {names}; "
            "return a tuple in parameter order or a dict by name"
        )
    return {names[0]: result}


def run_reference(
    reference: Callable[..., Any],
    inputs: Mapping[str, Any],
    outputs: Sequence[tuple[str, DataType, tuple[int, ...]]],
    where: str,
) -> dict[str, Any]:
    """Calls `reference(**copies_of_inputs)` and returns the expected outputs by name.

    `outputs` lists (name, dtype, shape) in parameter order.  The reference may return a
    tensor (one output), a tuple in that order, or a dict by name; each result is cast
    to its output's dtype (`to_dtype`: round to nearest-even, canonical NaN), the one
    rounding that the reference leaves to this function.  `where` (file:line and case)
    prefixes every error.
    """
    import torch

    copies = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    try:
        with portable_torch():
            result = reference(**copies)
    except Exception as exc:  # the user's code: say whose, keep the traceback as the cause
        raise GoldenCaseError(
            f"{where}: the reference raised {type(exc).__name__}: {exc}") from exc
    names = [name for name, _, _ in outputs]
    by_name = _results_by_name(result, names, where)
    if set(by_name) != set(names):
        raise GoldenCaseError(
            f"{where}: the reference returned {sorted(by_name)}, the kernel's outputs are {names}"
        )
    expected = {}
    for name, dtype, shape in outputs:
        value = by_name[name]
        if not isinstance(value, torch.Tensor):
            raise GoldenCaseError(
                f"{where}: the reference's {name!r} is a {type(value).__name__}, not a tensor"
            )
        if tuple(value.shape) != tuple(shape):
            raise GoldenCaseError(
                f"{where}: the reference's {name!r} has shape {list(value.shape)}, the output "
                f"is {list(shape)}"
            )
        try:
            expected[name] = to_dtype(value, dtype)
        except ValueError as exc:
            raise GoldenCaseError(f"{where}: the reference's {name!r}: {exc}") from None
    return expected
