"""One kernel case made into a golden: generate inputs, run the reference, write it down."""

from __future__ import annotations

import json
import numbers
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.comparison import Tolerance
from pypto.golden.portable import portable_torch, to_dtype
from pypto.golden.reference import GoldenCaseError, run_reference
from pypto.golden.rng import GENERATOR_ID, SpecRNG
from pypto.golden_files import EXPECTED_NAME, GOLDEN_NAME, INPUTS_NAME, write_golden
from pypto.ir.dtypes import DataType


@dataclass(frozen=True)
class GoldenCase:
    """Everything a golden needs from a spec, as plain data.

    `args` maps every kernel parameter (in order) to its declaration (`dtype`, `shape`;
    shape None for scalars); `inputs` are the parameters the kernel reads, `outputs` the
    ones it writes (an InOut parameter is in both); `variant` is what the input
    generator receives as its second argument; `where` names the spec (file:line) in errors.
    """

    kernel: str
    variant_name: str
    variant: Any
    args: Mapping[str, Any]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    make_inputs: Callable[[SpecRNG, Any], Mapping[str, Any]]
    reference: Callable[..., Any]
    tolerances: Mapping[str, Tolerance]
    where: str


def generate_inputs(case: GoldenCase, rng: SpecRNG | None = None) -> dict[str, Any]:
    """The case's inputs from its generator (run within `portable_torch()`), checked
    against the declarations."""
    import torch

    rng = rng if rng is not None else SpecRNG.for_case(case.kernel, case.variant_name)
    try:
        with portable_torch():
            produced = case.make_inputs(rng, case.variant)
    except Exception as exc:  # the user's code: say whose, keep the traceback as the cause
        raise GoldenCaseError(
            f"{case.where}: the input generator raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(produced, Mapping):
        raise GoldenCaseError(
            f"{case.where}: the input generator returned a {type(produced).__name__}; return a "
            f"dict with {list(case.inputs)}"
        )
    if set(produced) != set(case.inputs):
        missing = sorted(set(case.inputs) - set(produced))
        extra = sorted(set(produced) - set(case.inputs))
        raise GoldenCaseError(
            f"{case.where}: the input generator must return exactly the kernel's inputs "
            f"{list(case.inputs)}" + (f"; missing {missing}" if missing else "")
            + (f"; not inputs {extra}" if extra else "")
        )
    inputs = {}
    for name in case.inputs:
        decl, value = case.args[name], produced[name]
        dtype: DataType = decl.dtype
        if decl.shape is None:
            wanted = numbers.Real if dtype.is_float else numbers.Integral
            if isinstance(value, torch.Tensor) or not isinstance(value, wanted):
                raise GoldenCaseError(
                    f"{case.where}: input {name!r} is a {dtype.name} scalar; the generator gave "
                    f"{value!r}"
                )
            inputs[name] = float(value) if dtype.is_float else int(value)
            continue
        if not isinstance(value, torch.Tensor):
            raise GoldenCaseError(
                f"{case.where}: input {name!r} should be a tensor, the generator gave "
                f"{type(value).__name__}"
            )
        if dtype.packed:  # two elements a byte: the torch tensor holding them, as it is
            inputs[name] = _packed_input(case, name, dtype, decl.shape, value)
            continue
        if value.dtype != dtype.to_torch() or tuple(value.shape) != tuple(decl.shape):
            raise GoldenCaseError(
                f"{case.where}: input {name!r} should be {dtype.name} {list(decl.shape)}, the "
                f"generator gave {value.dtype} {list(value.shape)}"
            )
        inputs[name] = to_dtype(value, dtype)  # the same values; every NaN the canonical one
    return inputs


def _packed_input(case: GoldenCase, name: str, dtype: DataType, shape, value) -> Any:
    """A generated input of a 4-bit type: its torch tensor (FP4's float4_e2m1fn_x2 or
    torch.uint8 bytes, two elements each), checked and kept as it is."""
    import torch

    if value.dtype not in (dtype.to_torch(), torch.uint8) or \
            tuple(value.shape) != dtype.torch_shape(shape):
        raise GoldenCaseError(
            f"{case.where}: input {name!r} should be {dtype.name} {list(shape)} "
            f"({dtype.to_torch()} {list(dtype.torch_shape(shape))}, two elements a byte), "
            f"the generator gave {value.dtype} {list(value.shape)}")
    return value.detach().clone()


def record_golden(case: GoldenCase, directory: str | os.PathLike, *,
                  overwrite: bool = True) -> Path:
    """Generates the inputs, runs the reference on copies of them and writes the golden.

    Nothing here runs a kernel: the golden exists before any device or simulator run.
    """
    rng = SpecRNG.for_case(case.kernel, case.variant_name)
    inputs = generate_inputs(case, rng)
    outputs = [(name, case.args[name].dtype, tuple(case.args[name].shape)) for name in case.outputs]
    expected = run_reference(case.reference, {n: inputs[n] for n in case.inputs}, outputs,
                             case.where)
    return write_golden(
        directory,
        inputs,
        expected,
        tolerances=dict(case.tolerances),
        seed=rng.seed,
        generator=rng.generator_id,
        overwrite=overwrite,
    )


@dataclass(frozen=True)
class GoldenDrift:
    """How a recorded golden differs from the one its spec makes now (`golden_drift`).

    `files` are the files that differ (golden.json compared without `producer`, the tool
    versions that wrote it).  A golden recorded under another generator version differs
    by design, not by a fault: `describe()` says so instead of listing a mismatch.
    """

    directory: Path
    recorded_generator: str | None
    files: tuple[str, ...]

    @property
    def other_generator(self) -> bool:
        """Whether the golden records another generator than this pypto's."""
        return self.recorded_generator != GENERATOR_ID

    def describe(self) -> str:
        """One line for the user: why the golden differs and what to do."""
        if self.other_generator:
            return (f"{self.directory}: generated by {self.recorded_generator!r}; this pypto "
                    f"draws inputs with {GENERATOR_ID!r}, so the golden differs by design "
                    "(not a mismatch): regenerate it (`scons goldens`) to use this version's")
        return (f"{self.directory}: {', '.join(self.files)} differ from what its spec makes "
                "now with the same generator: the spec (inputs, reference or tolerance) "
                "changed since, or the files were edited; regenerate it (`scons goldens`)")


def golden_drift(case: GoldenCase, directory: str | os.PathLike) -> GoldenDrift | None:
    """None when the golden in `directory` is what `record_golden(case)` writes now, byte
    for byte but the tool versions; else how it differs.  Writes nothing there."""
    directory = Path(directory)
    recorded = json.loads((directory / GOLDEN_NAME).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as scratch:
        fresh = record_golden(case, Path(scratch) / "golden")
        current = json.loads((fresh / GOLDEN_NAME).read_text(encoding="utf-8"))
        files = tuple(name for name in (INPUTS_NAME, EXPECTED_NAME)
                      if (fresh / name).read_bytes() != (directory / name).read_bytes())
    if _without_versions(recorded) != _without_versions(current):
        files += (GOLDEN_NAME,)
    if not files:
        return None
    generator = recorded.get("generator")
    return GoldenDrift(directory, generator if isinstance(generator, str) else None, files)


def _without_versions(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("producer", "golden_sha256")}
