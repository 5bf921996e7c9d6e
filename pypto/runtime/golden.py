"""Reading a golden back (`GoldenRecord`), and checking a run against it (`GoldenCheck`).

The format is `pypto.golden_files`' (which writes it).  A run with
`RunConfig(golden_data_dir=...)` compares every output named in the golden through
`pypto.comparison`.  torch is imported only when a golden is read back or
compared, never when `pypto.runtime` is imported.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from pypto.comparison import FP64, GoldenReport, Tolerance, compare_tensor, warn_if_too_tight
from pypto.filesystem import read_recorded
from pypto.golden_files import (
    EXPECTED_NAME,
    GOLDEN_NAME,
    GOLDEN_SCHEMA_MAJOR,
    GOLDEN_SCHEMA_VERSION,
    INPUTS_NAME,
    TensorInfo,
    dtype_name,
    golden_digest,
    stored_view,
)
from pypto.ir import dtypes
from pypto.ir.formats import element_values
from pypto.records import versioned_record
from pypto.runtime.abi import Direction
from pypto.runtime.errors import ArtifactError, PyptoRuntimeError

_SCALAR_TYPES = {"bool": bool, "int": int, "float": float}


class GoldenError(ArtifactError):
    """A golden directory cannot be used: missing, malformed, or a file's sha256 differs."""


class GoldenMismatchError(PyptoRuntimeError):
    """A run's outputs (or the inputs it was given) differ from its golden.

    `report` is the `GoldenReport` with one `TensorComparison` per output;
    `scheduling` says why the difference may be the schedule's doing, for a program whose
    result can depend on the order its tasks run in (`scheduling_note`), else None.
    """

    def __init__(self, report: GoldenReport, scheduling: str | None = None) -> None:
        self.report = report
        self.scheduling = scheduling
        super().__init__(report.describe() + (f"\n  {scheduling}" if scheduling else ""))


def scheduling_note(tasks: Sequence[Any], golden: Path) -> str | None:
    """Why a mismatch may be scheduling, when a run's `tasks` (`scheduler.Task`, id order)
    can give different results in different orders: kernels that accumulate with atomic
    adds, or tasks no dependency orders (ids are a submission order, so the graph admits
    one order only when every task waits for the one before it).  None otherwise."""
    atomic = sorted({t.kernel_name for t in tasks
                     if any(a.direction is Direction.ACCUM for a in t.accesses)})
    if atomic:
        names = ", ".join(f"`{k}`" for k in atomic)
        why = (f"{'kernel' if len(atomic) == 1 else 'kernels'} {names} accumulate"
               f"{'s' if len(atomic) == 1 else ''} with atomic adds, in the order the tasks "
               "happen to run")
    elif any(t.task_id - 1 not in t.predecessors for t in tasks[1:]):
        why = f"its {len(tasks)} tasks can run in more than one order"
    else:
        return None
    return (f"the difference may be scheduling: {why}. A difference that changes from run "
            "to run is accumulation order or a dependency the program does not state; "
            f"`pypto triage FILE.py:KERNEL --golden {golden}` reruns the kernel under several "
            "schedule seeds and the race detector and says which")


# --------------------------------------------------------------------------- reading


def _golden_json(path: Path) -> dict:
    """golden.json read, its schema version and its own digest checked."""
    try:
        raw, schema = versioned_record(path, path, noun="golden.json", major=GOLDEN_SCHEMA_MAJOR,
                                       error=GoldenError)
    except FileNotFoundError:
        raise GoldenError(
            f"{path}: no golden here; write one with pypto.runtime.write_golden or "
            "`scons goldens`"
        ) from None
    recorded = raw.get("golden_sha256")
    if recorded is None and schema == GOLDEN_SCHEMA_VERSION:
        raise GoldenError(f"{path}: golden.json lacks 'golden_sha256', which schema {schema} "
                          "records; it was damaged, regenerate it (`scons goldens`)")
    if recorded is not None and recorded != golden_digest(raw):
        raise GoldenError(
            f"{path}: golden_sha256 mismatch: golden.json records {recorded!r}, its content "
            f"hashes to {golden_digest(raw)}; it changed after it was written, regenerate "
            "it (`scons goldens`)"
        )
    return raw


def _verified_files(path: Path, raw: dict) -> dict[str, str]:
    """The sha256 golden.json records for its inputs and expected files, each checked
    against the file beside it."""
    files = raw.get("files")
    if not isinstance(files, dict):
        raise GoldenError(f"{path}: 'files' should be an object")
    digests = {}
    for role, default in (("inputs", INPUTS_NAME), ("expected", EXPECTED_NAME)):
        entry = files.get(role)
        if not isinstance(entry, dict) or entry.get("file") != default:
            raise GoldenError(f"{path}: 'files.{role}' should name {default!r}")
        digest = entry.get("sha256")
        if not isinstance(digest, str):
            raise GoldenError(f"{path}: 'files.{role}.sha256' should be a string")
        _verified_bytes(path.parent / default, digest)
        digests[role] = digest
    return digests


def _tolerance_from_json(path: Path, name: str, raw: Any) -> Tolerance:
    if not isinstance(raw, dict):
        raise GoldenError(f"{path}: 'tolerance.{name}' should be an object")
    try:
        # Tolerance checks the JSON's values itself (finite numbers >= 0, a string).
        tolerance = Tolerance(raw.get("rtol"), raw.get("atol"), raw.get("reason"))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise GoldenError(f"{path}: 'tolerance.{name}': {exc}") from None
    if raw.get("policy") != tolerance.policy:
        raise GoldenError(
            f"{path}: 'tolerance.{name}.policy' is {raw.get('policy')!r} but rtol/atol make it "
            f"{tolerance.policy!r}"
        )
    return tolerance




@dataclass(frozen=True)
class GoldenRecord:
    """A validated golden directory (see the module docstring for its files)."""

    directory: Path
    inputs: tuple[TensorInfo, ...]
    scalars: dict[str, bool | int | float]
    expected: tuple[TensorInfo, ...]
    tolerances: dict[str, Tolerance]
    seed: int | None
    generator: str | None
    producer: dict[str, str]
    inputs_sha256: str
    expected_sha256: str

    @classmethod
    def read(cls, directory: str | os.PathLike) -> GoldenRecord:
        """Reads `<directory>/golden.json` and checks the schema and both files' sha256.

        Every refusal is a `GoldenError` naming the file; a hash refusal names both hashes.
        """
        directory = Path(directory)
        path = directory / GOLDEN_NAME
        raw = _golden_json(path)
        digests = _verified_files(path, raw)
        inputs = _tensor_infos(path, raw, "inputs", allow_fp64=False)
        expected = _tensor_infos(path, raw, "expected", allow_fp64=True)
        tolerance_raw = raw.get("tolerance") or {}
        if not isinstance(tolerance_raw, dict):
            raise GoldenError(f"{path}: 'tolerance' should be an object or null")
        names = {t.name for t in expected}
        unknown = sorted(set(tolerance_raw) - names)
        if unknown:
            raise GoldenError(f"{path}: 'tolerance' names outputs it does not record: {unknown}")
        seed = raw.get("seed")
        generator = raw.get("generator")
        producer = raw.get("producer") or {}
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise GoldenError(f"{path}: 'seed' should be an integer or null")
        if not isinstance(producer, dict):
            raise GoldenError(f"{path}: 'producer' should be an object or null")
        return cls(
            directory=directory,
            inputs=inputs,
            scalars=_scalars(path, raw.get("scalars") or []),
            expected=expected,
            tolerances={
                name: _tolerance_from_json(path, name, value)
                for name, value in sorted(tolerance_raw.items())
            },
            seed=seed,
            generator=generator if isinstance(generator, str) else None,
            producer={str(k): str(v) for k, v in producer.items()},
            inputs_sha256=digests["inputs"],
            expected_sha256=digests["expected"],
        )

    @property
    def path(self) -> Path:
        """The golden.json file."""
        return self.directory / GOLDEN_NAME

    @property
    def input_names(self) -> tuple[str, ...]:
        """Every recorded input: tensors and scalars."""
        return tuple(sorted([t.name for t in self.inputs] + list(self.scalars)))

    @property
    def output_names(self) -> tuple[str, ...]:
        """Every recorded expected output."""
        return tuple(t.name for t in self.expected)

    def load_inputs(self) -> dict[str, Any]:
        """The recorded inputs: torch tensors and Python scalars, by name."""
        tensors = self._load(INPUTS_NAME, self.inputs_sha256, self.inputs)
        return {**tensors, **self.scalars}

    def load_expected(self) -> dict[str, Any]:
        """The expected outputs as torch tensors, by name."""
        return self._load(EXPECTED_NAME, self.expected_sha256, self.expected)

    def tolerance_for(self, name: str, default: Tolerance) -> Tolerance:
        """The recorded tolerance of output `name`, else `default` (the run's rtol/atol)."""
        return self.tolerances.get(name, default)

    def compare(
        self,
        outputs: Mapping[str, Any],
        default: Tolerance,
        differing_inputs: Sequence[str] = (),
        held: Mapping[str, dtypes.DataType] | None = None,
    ) -> GoldenReport:
        """Compares `outputs` (name → tensor) with every recorded expected tensor; those
        named in `held` hold that dtype's codes (HF8 as torch.uint8) and compare as the
        values the codes stand for."""
        expected = self.load_expected()
        held = held or {}
        comparisons = []
        for info in self.expected:
            if info.name not in outputs:
                raise GoldenError(
                    f"{self.path}: records output {info.name!r}, which the run does not produce "
                    f"(its outputs: {sorted(outputs)})"
                )
            tolerance = self.tolerance_for(info.name, default)
            actual, wanted = outputs[info.name], expected[info.name]
            if info.name in held:
                actual = element_values(held[info.name], actual)
                wanted = element_values(held[info.name], wanted)
            comparisons.append(compare_tensor(info.name, actual, wanted, tolerance))
        return GoldenReport(self.directory, tuple(comparisons), tuple(differing_inputs))

    def differing_inputs(self, given: Mapping[str, Any]) -> list[str]:
        """Names of recorded inputs whose given value differs bit for bit (or is missing)."""
        recorded = self.load_inputs()
        differing = []
        for name in sorted(recorded):
            if name not in given:
                differing.append(f"{name} (not an input of this run)")
            elif not _same_value(given[name], recorded[name]):
                differing.append(name)
        return differing

    def declared_out(self, param: Any) -> bool:
        """Whether `param` (a manifest `ParamSpec`) was declared `pl.Out`, even where the
        compiler widened it to InOut.  Manifests from schema 1.2 record the declaration;
        for older ones it is inferred from this golden: an expected value and no input."""
        declared = getattr(param, "declared", None)
        if declared is not None:
            return declared is Direction.OUT
        recorded_inputs = {t.name for t in self.inputs} | set(self.scalars)
        return param.name in self.output_names and param.name not in recorded_inputs

    def run_arguments(self, params: Sequence[Any]) -> list[Any]:
        """The arguments of a run of this golden's case, in the order of `params` (the
        manifest's `ParamSpec`s): copies of the recorded inputs, and for every other
        tensor parameter a buffer holding the device's poison (NaN for floats, 0xA5 bytes
        otherwise).

        So an output declared `pl.Out` reaches the kernel uninitialised even where the
        compiled program reads it (a zeroing task writes it, atomic-add tasks read it
        back, and DeriveCallDirections made it InOut): a kernel that really reads an
        output before writing it fails its golden visibly instead of reading zeros.
        A parameter the program reads that the golden records neither as an input nor as
        an output is a `GoldenError`.
        """
        import torch

        from pypto.runtime.memory import poison_

        recorded = self.load_inputs()
        args = []
        for param in params:
            if param.name in recorded:
                value = recorded[param.name]
                args.append(value.clone() if isinstance(value, torch.Tensor) else value)
            elif param.is_tensor and (not param.direction.reads or self.declared_out(param)):
                args.append(poison_(torch.empty(param.dtype.torch_shape(param.shape),
                                                dtype=param.dtype.to_torch())))
            else:
                raise GoldenError(
                    f"{self.path}: records no input {param.name!r}, which the kernel reads"
                )
        return args

    def _load(self, file: str, digest: str, infos: tuple[TensorInfo, ...]) -> dict[str, Any]:
        from safetensors.torch import load

        data = _verified_bytes(self.directory / file, digest)
        try:
            tensors = load(data)
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise GoldenError(
                f"{self.directory / file}: not a readable safetensors file: {exc}"
            ) from None
        wanted = {i.name: i for i in infos}
        if set(tensors) != set(wanted):
            raise GoldenError(
                f"{self.directory / file}: holds {sorted(tensors)}, golden.json records "
                f"{sorted(wanted)}"
            )
        tensors = {name: stored_view(t, wanted[name].dtype) for name, t in tensors.items()}
        for name, tensor in tensors.items():
            found = TensorInfo(name, dtype_name(tensor.dtype), tuple(tensor.shape))
            if found != wanted[name]:
                raise GoldenError(
                    f"{self.directory / file}: tensor {name!r} is {found.dtype} "
                    f"{list(found.shape)}, golden.json records {wanted[name].dtype} "
                    f"{list(wanted[name].shape)}"
                )
        return tensors


def _verified_bytes(path: Path, expected: str) -> bytes:
    return read_recorded(path, expected, GoldenError, recorded_in="golden.json",
                         remedy="the file changed after the golden was written, regenerate "
                         "it (`scons goldens`)")


def _tensor_infos(path: Path, raw: dict, key: str, *, allow_fp64: bool) -> tuple[TensorInfo, ...]:
    entries = raw.get(key)
    if not isinstance(entries, list):
        raise GoldenError(f"{path}: '{key}' should be a list")
    infos = []
    for i, entry in enumerate(entries):
        where = f"{key}[{i}]"
        if not isinstance(entry, dict):
            raise GoldenError(f"{path}: '{where}' should be an object")
        name, dtype, shape = entry.get("name"), entry.get("dtype"), entry.get("shape")
        if not isinstance(name, str) or not name:
            raise GoldenError(f"{path}: '{where}.name' should be a non-empty string")
        if not _known_dtype(dtype, allow_fp64):
            raise GoldenError(f"{path}: '{where}.dtype' {dtype!r} is not a pypto dtype")
        if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
        ):
            raise GoldenError(f"{path}: '{where}.shape' should be a list of sizes")
        infos.append(TensorInfo(name, dtype, tuple(shape)))
    names = [i.name for i in infos]
    if len(set(names)) != len(names):
        raise GoldenError(f"{path}: '{key}' names a tensor twice: {names}")
    return tuple(infos)


def _scalars(path: Path, entries: Any) -> dict[str, bool | int | float]:
    if not isinstance(entries, list):
        raise GoldenError(f"{path}: 'scalars' should be a list")
    scalars = {}
    for i, entry in enumerate(entries):
        type_name = entry.get("type") if isinstance(entry, dict) else None
        kind = _SCALAR_TYPES.get(type_name) if isinstance(type_name, str) else None
        value = entry.get("value") if isinstance(entry, dict) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        if kind is None or not isinstance(name, str) or not isinstance(value, (bool, int, float)):
            raise GoldenError(f"{path}: 'scalars[{i}]' should be {{name, type, value}}")
        scalars[name] = kind(value)
    return scalars


def _known_dtype(name: Any, allow_fp64: bool) -> TypeGuard[str]:
    if allow_fp64 and name == FP64:
        return True
    try:
        dtypes.from_name(name)
    except (KeyError, AttributeError, TypeError):
        return False
    return isinstance(name, str) and name == name.upper()




def _same_value(given: Any, recorded: Any) -> bool:
    import torch

    if isinstance(recorded, torch.Tensor):
        if not isinstance(given, torch.Tensor) or given.dtype != recorded.dtype:
            return False
        if tuple(given.shape) != tuple(recorded.shape):
            return False
        given, recorded = given.detach().cpu(), recorded.detach().cpu()
        if recorded.dtype.is_floating_point:
            # Bit patterns: NaN equals the same NaN, and -0.0 differs from 0.0.
            bits = {2: torch.int16, 4: torch.int32, 8: torch.int64, 1: torch.int8}
            view = bits[recorded.element_size()]
            return torch.equal(given.contiguous().view(view), recorded.contiguous().view(view))
        return torch.equal(given, recorded)
    if isinstance(given, bool) or isinstance(recorded, bool):
        return type(given) is type(recorded) and given == recorded
    if not isinstance(given, (int, float)):
        return False
    if isinstance(recorded, float) and math.isnan(recorded):
        return isinstance(given, float) and math.isnan(given)
    return given == recorded


















# --------------------------------------------------------------------------- run hook


class GoldenCheck:
    """Checks one run against `RunConfig.golden_data_dir` (used by `ProgramRun`).

    The inputs are compared before the run (an InOut argument is overwritten by it),
    the outputs after the results are copied back into the caller's tensors.
    """

    def __init__(self, record: GoldenRecord, params: Sequence[Any], default: Tolerance,
                 differing: list[str]) -> None:
        self.record = record
        self.params = params
        self.default = default
        self.differing = differing

    @classmethod
    def start(cls, config: Any, params: Sequence[Any], args: Sequence[Any]) -> GoldenCheck | None:
        """None when the config names no golden; else a check with the inputs compared.

        A parameter the golden records only as an output was declared `pl.Out` by the
        kernel's author, even where the compiled program reads it (`params` say InOut: a
        zeroing task writes it, accumulating tasks read it back).  Its incoming contents
        are not the case's: they are replaced here, before the run binds them, by the
        device's poison, as an Out buffer's would be (see `GoldenRecord.run_arguments`).
        """
        if config.golden_data_dir is None:
            return None
        record = GoldenRecord.read(config.golden_data_dir)
        names = {p.name for p in params}
        stray = sorted(set(record.input_names + record.output_names) - names)
        if stray:
            raise GoldenError(
                f"{record.path}: records {stray}, which are not parameters of this program "
                f"({', '.join(p.name for p in params)})"
            )
        default = Tolerance(config.rtol, config.atol, "RunConfig rtol/atol")
        dtype_names = {p.name: p.dtype.name for p in params}
        for info in record.expected:
            # Now the output's dtype is known: write_golden saw only the expected tensor's.
            warn_if_too_tight(record.tolerance_for(info.name, default), dtype_names[info.name],
                              info.dtype, f"output {info.name!r}")
        from pypto.runtime.memory import poison_

        for param, value in zip(params, args, strict=True):
            if param.direction.reads and record.declared_out(param):
                poison_(value)
        given = {p.name: value for p, value in zip(params, args, strict=True) if p.direction.reads}
        return cls(record, params, default, record.differing_inputs(given))

    def finish(self, args: Sequence[Any], schedule: Any = None) -> GoldenReport:
        """Compares the outputs; raises GoldenMismatchError unless everything matches
        (with a `scheduling_note` from the tasks of the run's `schedule`, when given)."""
        outputs = {p.name: value for p, value in zip(self.params, args, strict=True)
                   if p.direction.writes}
        held = {p.name: p.dtype for p in self.params
                if p.direction.writes and p.dtype.value.torch_storage is not None}
        report = self.record.compare(outputs, self.default, self.differing, held)
        if not report.passed:
            note = None if schedule is None else scheduling_note(schedule.tasks,
                                                                 self.record.directory)
            raise GoldenMismatchError(report, note)
        return report
