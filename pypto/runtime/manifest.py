"""`Manifest`: the parsed, validated manifest.json of an artifact directory, and the
manifest schema the build writes by (`manifest_record`): the loader's checks are the
schema, run on what the build writes before it writes it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.ir import dtypes
from pypto.ir.dtypes import DataType
from pypto.platform import SPACES as ON_CHIP_SPACES  # in PtoCore field order (memory.py checks)
from pypto.records import MANIFEST_NAME, record_digest, schema_version, versioned_record
from pypto.runtime.abi import ABI_VERSION, MAX_RANK, Direction
from pypto.runtime.errors import ArtifactError

SCHEMA_VERSION = "1.2"
"""The manifest schema this pypto writes.  1.1 added manifest_sha256: the digest of the
manifest itself, so a manifest damaged on disk is refused instead of mapping binaries
with wrong shapes or capacities.  1.2 added each entry parameter's declared_direction
and each kernel's on_chip high-water marks."""
SCHEMA_MAJOR = 1
"""Major version of the manifest schema this runtime reads."""
DIGEST_SCHEMAS = ("1.1", "1.2")
"""The schema versions pypto writes, whose manifests must carry `manifest_sha256`.
A newer minor version, which this runtime does not know, loads by the fields it knows."""



@dataclass(frozen=True)
class ParamSpec:
    """One parameter of the entry or of a kernel signature."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: DataType
    direction: Direction
    shape: tuple[int, ...]
    declared: Direction | None = None
    """The direction the user declared (manifests before 1.2 do not record it: None)."""

    @property
    def is_tensor(self) -> bool:
        """True for tensor parameters, False for scalars."""
        return self.kind == "tensor"

    @property
    def copies_in(self) -> bool:
        """Whether a run binds the caller's data: the program reads the parameter and the
        user did not declare it `pl.Out`.  A declared Out the compiler widened to InOut
        (split-K: a zeroing task writes it, atomic-add tasks read it back) gets the
        device's poison instead, as an Out buffer reaches a device uninitialised."""
        return self.direction.reads and self.declared is not Direction.OUT


@dataclass(frozen=True)
class KernelSpec:
    """One InCore kernel binary; its index in `Manifest.kernels` is its submit index."""

    name: str
    file: str
    sha256: str
    core_type: str
    signature: tuple[ParamSpec, ...]
    on_chip: tuple[int, ...] | None = None
    """High-water mark in bytes per on-chip space (ON_CHIP_SPACES order): what the
    kernel's tiles can touch; None when the manifest (before 1.2) does not record it."""


@dataclass(frozen=True)
class Manifest:
    """Everything the runtime needs from manifest.json."""

    path: Path
    platform: str
    backend: str
    abi_version: int
    content_key: str
    entry: str
    params: tuple[ParamSpec, ...]
    outputs: tuple[int, ...]
    kernels: tuple[KernelSpec, ...]
    orchestration_file: str
    orchestration_sha256: str
    orchestration_entry: str
    capacities: dict[str, int]  # on-chip bytes per core, keyed by ON_CHIP_SPACES
    cores: int

    @property
    def on_chip_poison(self) -> tuple[int, ...]:
        """Bytes [0, n) of each on-chip space (ON_CHIP_SPACES order) a run poisons on each
        core before any task: the highest mark of any kernel, or the whole buffer where a
        kernel does not record its marks."""
        capacities = tuple(self.capacities[space] for space in ON_CHIP_SPACES)
        marks = [0] * len(ON_CHIP_SPACES)
        for kernel in self.kernels:
            used = kernel.on_chip if kernel.on_chip is not None else capacities
            marks = [max(m, u) for m, u in zip(marks, used, strict=True)]
        return tuple(min(m, c) for m, c in zip(marks, capacities, strict=True))

    @classmethod
    def read(cls, artifact_dir: Path, *, platform: str | None = None) -> Manifest:
        """Reads and checks `<artifact_dir>/manifest.json` in the loader's order.

        Schema major version first (a newer schema may not parse), then platform
        (when `platform` is given), then ABI version, then the structure.
        """
        path = artifact_dir / MANIFEST_NAME
        try:
            raw, _ = versioned_record(path, path, noun="manifest", major=SCHEMA_MAJOR,
                                      error=ArtifactError)
        except FileNotFoundError:
            raise ArtifactError(f"{path}: no manifest; is this an artifact directory?") from None
        return cls.from_record(path, raw, platform=platform)

    @classmethod
    def from_record(cls, path: Path, raw: Any, *, platform: str | None = None) -> Manifest:
        """Checks a manifest's parsed content `raw` as `read` does; errors name `path`."""
        schema = schema_version(path, raw, noun="manifest", major=SCHEMA_MAJOR,
                                error=ArtifactError)
        reader = _FieldReader(path, raw)
        _check_digest(path, raw, schema)
        found_platform = reader.get("platform", str)
        if platform is not None and found_platform != platform:
            raise ArtifactError(
                f"{path}: platform mismatch: expected {platform!r}, found {found_platform!r}"
            )
        abi_version = reader.get("abi_version", int)
        if abi_version != ABI_VERSION:
            raise ArtifactError(
                f"{path}: ABI version mismatch: expected {ABI_VERSION}, found {abi_version}; "
                "rebuild the artifact with this pypto"
            )

        params = tuple(
            _param(reader.nested(f"params[{i}]", p))
            for i, p in enumerate(reader.get("params", list))
        )
        outputs = tuple(reader.get("outputs", list))
        for index in outputs:
            if not isinstance(index, int) or not 0 <= index < len(params):
                raise ArtifactError(f"{path}: output index {index!r} names no parameter")
            if not params[index].is_tensor:
                raise ArtifactError(f"{path}: output {params[index].name!r} is not a tensor")
        kernels = tuple(
            _kernel(reader.nested(f"kernels[{i}]", k))
            for i, k in enumerate(reader.get("kernels", list))
        )
        orchestration = reader.nested("orchestration", reader.get("orchestration", dict))
        core = reader.nested("core", reader.get("core", dict))
        capacities = {space: core.get(space, int) for space in ON_CHIP_SPACES}
        cores = core.get("cores", int)
        if cores < 1 or any(size < 0 for size in capacities.values()):
            raise ArtifactError(f"{path}: 'core' needs cores >= 1 and non-negative capacities")
        return cls(
            path=path,
            platform=found_platform,
            backend=reader.get("backend", str),
            abi_version=abi_version,
            content_key=reader.get("content_key", str),
            entry=reader.get("entry", str),
            params=params,
            outputs=outputs,
            kernels=kernels,
            orchestration_file=orchestration.get("file", str),
            orchestration_sha256=orchestration.get("sha256", str),
            orchestration_entry=orchestration.get("entry", str),
            capacities=capacities,
            cores=cores,
        )


def manifest_record(fields: dict[str, Any], path: Path) -> dict[str, Any]:
    """The manifest.json content of an artifact the build writes to `path`: its `fields`
    with the schema and ABI versions of this pypto and, last, the digest.  Checked as the
    loader reads it, so a build never publishes a manifest this runtime refuses."""
    record = {"schema_version": SCHEMA_VERSION, "abi_version": ABI_VERSION, **fields}
    record["manifest_sha256"] = manifest_digest(record)
    Manifest.from_record(path, record)
    return record


def manifest_digest(raw: dict[str, Any]) -> str:
    """sha256 of a manifest's content without its `manifest_sha256` field, as canonical
    JSON (sorted keys, no whitespace): what the build records and the loader checks."""
    return record_digest(raw, "manifest_sha256")


def _check_digest(path: Path, raw: dict[str, Any], schema: str) -> None:
    """A manifest that records its digest must match it; one of the schema pypto writes must
    record it (so damage to the field's own name is caught too)."""
    recorded = raw.get("manifest_sha256")
    if recorded is None:
        if schema in DIGEST_SCHEMAS:
            raise ArtifactError(
                f"{path}: manifest lacks 'manifest_sha256', which schema {schema} records; "
                "the manifest was damaged after the build, rebuild the artifact"
            )
        return
    found = manifest_digest(raw)
    if recorded != found:
        raise ArtifactError(
            f"{path}: manifest_sha256 mismatch: the manifest records {recorded!r}, its content "
            f"hashes to {found}; the manifest changed after the build, rebuild the artifact"
        )


class _FieldReader:
    """Typed access to one JSON object; errors name the manifest and the field path."""

    def __init__(self, path: Path, obj: dict[str, Any], where: str = "") -> None:
        self.path = path
        self.obj = obj
        self.where = where

    def get(self, key: str, kind: type, default: Any = ...) -> Any:
        if key not in self.obj:
            if default is not ...:
                return default
            raise ArtifactError(f"{self.path}: manifest lacks '{self.where}{key}'")
        value = self.obj[key]
        # bool is an int subclass, but true/false is never a valid count or index here.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ArtifactError(
                f"{self.path}: '{self.where}{key}' should be {kind.__name__}, found {value!r}"
            )
        return value

    def nested(self, key: str, value: Any) -> _FieldReader:
        if not isinstance(value, dict):
            raise ArtifactError(f"{self.path}: '{self.where}{key}' should be an object")
        return _FieldReader(self.path, value, f"{self.where}{key}.")

    def fail(self, message: str) -> ArtifactError:
        return ArtifactError(f"{self.path}: '{self.where.rstrip('.')}': {message}")


def _param(reader: _FieldReader) -> ParamSpec:
    kind = reader.get("kind", str)
    if kind not in ("tensor", "scalar"):
        raise reader.fail(f"kind should be 'tensor' or 'scalar', found {kind!r}")
    dtype_name = reader.get("dtype", str)
    try:
        dtype = dtypes.from_name(dtype_name)
    except KeyError:
        raise reader.fail(f"unknown dtype {dtype_name!r}") from None
    direction_name = reader.get("direction", str, "in")
    try:
        direction = Direction.from_manifest(direction_name)
    except KeyError:
        raise reader.fail(f"direction should be in/out/inout, found {direction_name!r}") from None
    declared = None
    if "declared_direction" in reader.obj:
        declared_name = reader.get("declared_direction", str)
        try:
            declared = Direction.from_manifest(declared_name)
        except KeyError:
            raise reader.fail(
                f"declared_direction should be in/out/inout, found {declared_name!r}"
            ) from None
    shape = reader.get("shape", list, [])
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise reader.fail(f"shape should be non-negative integers, found {shape!r}")
    if len(shape) > MAX_RANK:
        raise reader.fail(f"rank {len(shape)} exceeds the ABI's maximum of {MAX_RANK}")
    return ParamSpec(reader.get("name", str), kind, dtype, direction, tuple(shape), declared)


def _kernel(reader: _FieldReader) -> KernelSpec:
    signature = tuple(
        _param(reader.nested(f"signature[{i}]", p))
        for i, p in enumerate(reader.get("signature", list))
    )
    on_chip = None
    if "on_chip" in reader.obj:
        marks = reader.nested("on_chip", reader.get("on_chip", dict))
        on_chip = tuple(marks.get(space, int, 0) for space in ON_CHIP_SPACES)
        if any(mark < 0 for mark in on_chip):
            raise reader.fail(f"on_chip marks should be non-negative, found {marks.obj!r}")
    return KernelSpec(
        name=reader.get("name", str),
        file=reader.get("file", str),
        sha256=reader.get("sha256", str),
        core_type=reader.get("core_type", str),
        signature=signature,
        on_chip=on_chip,
    )
