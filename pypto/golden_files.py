"""A golden directory's files, and writing them: the one description of the format,
which `pypto.golden` writes through and `pypto.runtime.golden` reads back (below both:
a deployed library checks its goldens without the code that makes them).

A golden directory holds `inputs.safetensors`, `expected.safetensors` and `golden.json`
(names, shapes and dtypes of every tensor, the sha256 of both tensor files, the tolerance
policy of every output with its reason, the seed and generator that made the inputs and
the versions of the producing software).  Nothing in it is a pickle and nothing in it
depends on when it was written, so writing the same golden twice gives the same bytes.
torch is imported only when a golden is written.
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.comparison import FP64, Tolerance, warn_if_too_tight
from pypto.filesystem import atomic_write
from pypto.ir import dtypes
from pypto.records import record_digest, record_text

GOLDEN_NAME = "golden.json"
INPUTS_NAME = "inputs.safetensors"
EXPECTED_NAME = "expected.safetensors"
# 1.1 added golden_sha256, the digest of golden.json itself: a damaged record (a tolerance,
# a shape) is refused instead of silently checking against the wrong thing.
GOLDEN_SCHEMA_VERSION = "1.1"
GOLDEN_SCHEMA_MAJOR = 1
"""Major version of the golden.json schema this package reads and writes."""


@dataclass(frozen=True)
class TensorInfo:
    """Name, dtype name and shape of one recorded tensor."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


def write_golden(
    golden_data_dir: str | os.PathLike,
    inputs: Mapping[str, Any],
    expected: Mapping[str, Any],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    reason: str | None = None,
    overwrite: bool = False,
    tolerances: Mapping[str, Tolerance] | None = None,
    seed: int | None = None,
    generator: str | None = None,
) -> Path:
    """Records a fixed reference: `inputs` (tensors and Python scalars) and `expected`
    (tensors), by name, in `golden_data_dir`; returns the directory.

    `rtol`/`atol` (the other one defaults to 0) and `reason` record one tolerance for
    every output; `tolerances` maps output names to their own `Tolerance`.  Without
    either, a run's `RunConfig.rtol/atol` apply.  `seed` and `generator` say how the
    inputs were made.  Writing the same golden again changes no byte; replacing a
    different golden needs `overwrite=True`.  golden.json is written last, each file
    atomically, so a reader never takes a half-written golden for a whole one.
    """
    import torch
    from safetensors.torch import save

    directory = Path(golden_data_dir)
    tensors_in = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    scalars = {k: v for k, v in inputs.items() if not isinstance(v, torch.Tensor)}
    _check_names("inputs", inputs)
    _check_names("expected", expected)
    _check_values(scalars, expected)
    inputs_info = [_info(name, t, allow_fp64=False) for name, t in sorted(tensors_in.items())]
    expected_info = [_info(name, t, allow_fp64=True) for name, t in sorted(expected.items())]

    policy = _tolerance_policy(expected, tolerances, rtol, atol, reason)
    for info in expected_info:
        if info.name in policy:
            # The kernel is unknown here: its output is taken to be held in the expected
            # tensor's dtype (a spec's golden rounds its reference to it).  An FP64 expected
            # tensor is judged when a run uses the golden and knows the output's dtype.
            warn_if_too_tight(policy[info.name], None, info.dtype, f"golden output {info.name!r}")

    inputs_bytes = save({k: _plain(v) for k, v in tensors_in.items()})
    expected_bytes = save({k: _plain(v) for k, v in expected.items()})
    record = {
        "schema_version": GOLDEN_SCHEMA_VERSION,
        "files": {
            "inputs": {"file": INPUTS_NAME, "sha256": hashlib.sha256(inputs_bytes).hexdigest()},
            "expected": {
                "file": EXPECTED_NAME,
                "sha256": hashlib.sha256(expected_bytes).hexdigest(),
            },
        },
        "inputs": [i.to_json() for i in inputs_info],
        "scalars": [
            {"name": name, "type": type(value).__name__, "value": value}
            for name, value in sorted(scalars.items())
        ],
        "expected": [i.to_json() for i in expected_info],
        "tolerance": {name: policy[name].to_json() for name in sorted(policy)} or None,
        "seed": seed,
        "generator": generator,
        "producer": _producer_versions(),
    }
    record["golden_sha256"] = golden_digest(record)
    golden_bytes = record_text(record).encode()
    files = {INPUTS_NAME: inputs_bytes, EXPECTED_NAME: expected_bytes, GOLDEN_NAME: golden_bytes}

    existing = directory / GOLDEN_NAME
    if existing.is_file():
        differing = [n for n, data in files.items() if _read_or_none(directory / n) != data]
        if not differing:
            return directory
        if not overwrite:
            raise FileExistsError(
                f"{directory}: a different golden is recorded there ({', '.join(differing)} "
                "would change); pass overwrite=True to replace it"
            )
    directory.mkdir(parents=True, exist_ok=True)
    for name in (INPUTS_NAME, EXPECTED_NAME, GOLDEN_NAME):  # golden.json last
        atomic_write(directory / name, files[name])
    return directory


def golden_digest(record: Mapping[str, Any]) -> str:
    """sha256 of golden.json's content without its golden_sha256 field (canonical JSON)."""
    return record_digest(record, "golden_sha256")


def _check_names(role: str, values: Mapping[str, Any]) -> None:
    for name in values:
        if not isinstance(name, str) or not name or name.startswith("__"):
            raise ValueError(f"{role}: tensor names must be non-empty strings, got {name!r}")


def _info(name: str, tensor: Any, *, allow_fp64: bool) -> TensorInfo:
    try:
        dtype = dtype_name(tensor.dtype)
    except TypeError:
        raise TypeError(f"{name!r}: dtype {tensor.dtype} is not a pypto dtype") from None
    if dtype == FP64 and not allow_fp64:
        raise TypeError(f"input {name!r}: float64 is not a pypto dtype; kernels cannot take it")
    return TensorInfo(name, dtype, tuple(tensor.shape))


BYTE_STORED = ("FP8E8M0", "FP4")
"""Dtypes whose tensors the .safetensors files hold as their bytes (U8): safetensors writes
F8_E8M0 but cannot read it back (0.8), and writes no float4_e2m1fn_x2 at all (its F4 holds
one element a byte).  golden.json records the dtype, which reading restores (`stored_view`):
an FP4 tensor is recorded as torch has it, float4_e2m1fn_x2 pairs (the last dimension
half the elements')."""


def _plain(tensor: Any) -> Any:
    # safetensors wants dense CPU tensors that share no storage.
    plain = tensor.detach().to("cpu").contiguous().clone()
    if dtype_name(plain.dtype) in BYTE_STORED:
        import torch

        return plain.view(torch.uint8)
    return plain


def stored_view(tensor: Any, recorded: str) -> Any:
    """A tensor read from a .safetensors file as golden.json's dtype `recorded` has it."""
    if recorded in BYTE_STORED and dtype_name(tensor.dtype) == "UINT8":
        return tensor.view(dtypes.DataType[recorded].to_torch())
    return tensor


def dtype_name(torch_dtype: Any) -> str:
    """The dtype name golden.json records for a torch dtype (FP64 for float64)."""
    if str(torch_dtype) == "torch.float64":
        return FP64
    return dtypes.from_torch(torch_dtype).name


def _producer_versions() -> dict[str, str]:
    import safetensors
    import torch

    # A submodule: the top-level package, which holds only the version, is loaded already
    # and importing it pulls in none of the compiler.
    return {
        "pypto": sys.modules["pypto"].__version__,
        "torch": torch.__version__,
        "safetensors": safetensors.__version__,
    }


def _check_values(scalars: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """Refuses a scalar input that is not a finite Python number and an expected value
    that is not a tensor."""
    import torch

    for name, value in scalars.items():
        if not isinstance(value, (bool, int, float)):
            raise TypeError(
                f"input {name!r}: expected a torch.Tensor or a Python bool/int/float, found "
                f"{type(value).__name__}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(
                f"scalar input {name!r} is {value}: golden.json records finite numbers"
            )
    for name, value in expected.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"expected {name!r}: expected a torch.Tensor, found {type(value).__name__}"
            )


def _tolerance_policy(expected: Mapping[str, Any], tolerances: Mapping[str, Tolerance] | None,
                      rtol: float | None, atol: float | None,
                      reason: str | None) -> dict[str, Tolerance]:
    """Output name -> the tolerance write_golden records for it (see its arguments)."""
    policy = dict(tolerances or {})
    unknown = sorted(set(policy) - set(expected))
    if unknown:
        raise ValueError(f"tolerances name outputs that are not in expected: {unknown}")
    if rtol is not None or atol is not None:
        shared = Tolerance(rtol or 0.0, atol or 0.0, reason)
        policy = {name: policy.get(name, shared) for name in expected}
    elif reason is not None and not policy:
        raise ValueError("reason explains a tolerance: pass rtol and/or atol with it")
    return policy


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None

