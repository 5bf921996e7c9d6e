"""Running a spec's reference: on copies of the inputs, rounded once to the outputs' dtypes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.ir.dtypes import DataType

# ATen's float unary ops that call MKL VML (aten/src/ATen/cpu/vml.h).
_VML_OPS = ("acos", "asin", "atan", "cos", "erf", "erfc", "erfinv", "exp", "log", "log10",
            "log1p", "log2", "sin", "sqrt", "tan", "tanh", "trunc")
_vml_settled = False


def settle_vml_dispatch() -> None:
    """Calls each MKL VML function of ATen once, on one element, in FP32 and FP64.

    oneMKL (2024.2, as bundled with torch) picks a VML function's kernel on its first
    call; when that first call runs on several intra-op threads at once, one thread's
    chunk can go through a low-accuracy kernel despite VML_HA, ~1000s of ulp off
    (pytorch/pytorch#188792).  A one-element call runs on the calling thread alone and
    settles the choice, so a reference's first exp over a large tensor is accurate and
    a regenerated golden byte-identical.  Once per process; cheap.
    """
    global _vml_settled
    if _vml_settled:
        return
    import torch

    for dtype in (torch.float32, torch.float64):
        one = torch.full((1,), 0.5, dtype=dtype)
        for name in _VML_OPS:
            getattr(torch, name)(one)
    _vml_settled = True


class GoldenCaseError(ValueError):
    """A spec's input generator or reference failed, or returned something that does not
    match the kernel's parameters; the message names the spec (file:line) and variant."""


def run_reference(
    reference: Callable[..., Any],
    inputs: Mapping[str, Any],
    outputs: Sequence[tuple[str, DataType, tuple[int, ...]]],
    where: str,
) -> dict[str, Any]:
    """Calls `reference(**copies_of_inputs)` and returns the expected outputs by name.

    `outputs` lists (name, dtype, shape) in parameter order.  The reference may return a
    tensor (one output), a tuple in that order, or a dict by name; each result is cast
    to its output's dtype, the one rounding that the reference leaves to this function.
    `where` (file:line and case) prefixes every error.
    """
    import torch

    settle_vml_dispatch()
    copies = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    try:
        result = reference(**copies)
    except Exception as exc:  # the user's code: say whose, keep the traceback as the cause
        raise GoldenCaseError(
            f"{where}: the reference raised {type(exc).__name__}: {exc}") from exc
    names = [name for name, _, _ in outputs]
    if isinstance(result, Mapping):
        by_name = dict(result)
    elif isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise GoldenCaseError(
                f"{where}: the reference returned {len(result)} values for the outputs {names}"
            )
        by_name = dict(zip(names, result))
    else:
        if len(names) != 1:
            raise GoldenCaseError(
                f"{where}: the reference returned one value but the kernel has outputs {names}; "
                "return a tuple in parameter order or a dict by name"
            )
        by_name = {names[0]: result}
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
        expected[name] = value.detach().to(dtype.to_torch()).contiguous()
    return expected
