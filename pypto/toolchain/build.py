"""Building one artifact directory: generated sources, their binaries, manifest.json last.

Three stages with one plan between them (`ArtifactPlan`): `stage_artifact` writes the
sources, the plan's steps compile them (here, `run_plan`, or as a build system's own
steps), `finish_artifact` writes the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pypto
from pypto.platform import SPACES, Platform
from pypto.records import MANIFEST_NAME, record_text
from pypto.toolchain.compiler import Step, Toolchain, run_step

if TYPE_CHECKING:
    from pypto.codegen.sources import GeneratedSources

ORCHESTRATION_ENTRY = "pypto_orchestrate"

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Unit:
    """One binary of the artifact and the generated sources compiled into it."""

    source: str  # paths relative to the artifact directory
    binary: str
    text: str
    core_type: str | None  # None for orchestration
    # A CPU-model kernel's launcher source, which includes the device source: one
    # translation unit, so pto-isa's headers are parsed (or loaded precompiled) once.
    launch: str = ""
    launch_text: str = ""

    @property
    def compiled(self) -> tuple[str, ...]:
        """The sources compiled into the binary, each by a step of its own."""
        return (self.launch,) if self.launch else (self.source,)


@dataclass(frozen=True)
class ArtifactPlan:
    """An artifact between its sources and its manifest: what `stage_artifact` wrote and
    the steps that compile it.  Paths are relative to the artifact directory.

    A build system runs the steps as its own (`pypto.scons` makes each one a SCons step,
    so a launcher or a compile farm can take it); `build_artifact` runs them here.  Either
    way `finish_artifact` writes the manifest last, from the same plan."""

    key: str
    files: tuple[str, ...]  # sources and extra files, written by stage_artifact
    binaries: tuple[str, ...]  # what the manifest lists, one per unit
    units: tuple[tuple[Step, ...], ...]  # per binary, its steps in order
    manifest: dict  # the manifest, each binary's sha256 still None

    def to_json(self) -> dict:
        """The plan as plain JSON data (`from_json` reads it back)."""
        return {"schema": PLAN_SCHEMA_VERSION, "key": self.key, "files": list(self.files),
                "binaries": list(self.binaries),
                "units": [[step.to_json() for step in unit] for unit in self.units],
                "manifest": self.manifest}

    @classmethod
    def from_json(cls, data: dict) -> ArtifactPlan:
        """The plan `to_json` wrote; another schema is a ValueError."""
        if data.get("schema") != PLAN_SCHEMA_VERSION:
            raise ValueError(f"artifact plan schema {data.get('schema')!r}, expected "
                             f"{PLAN_SCHEMA_VERSION} (rebuild it)")
        return cls(data["key"], tuple(data["files"]), tuple(data["binaries"]),
                   tuple(tuple(Step.from_json(s) for s in unit) for unit in data["units"]),
                   data["manifest"])


PLAN_SCHEMA_VERSION = 1


def build_artifact(
    sources: GeneratedSources,
    platform: Platform,
    toolchain: Toolchain,
    key: str,
    out_dir: Path,
    launcher: Sequence[str] = (),
) -> None:
    """Writes `sources` into the empty directory `out_dir`, compiles every kernel and the
    orchestration in parallel (`launcher`, e.g. ("ccache",), in front of each compile),
    then writes manifest.json last: an artifact the runtime can load without build_rules/.
    Raises CompileError when a source does not compile."""
    plan = stage_artifact(sources, platform, toolchain, key, out_dir)
    run_plan(plan, out_dir, launcher)
    finish_artifact(plan, out_dir)


def stage_artifact(
    sources: GeneratedSources,
    platform: Platform,
    toolchain: Toolchain,
    key: str,
    out_dir: Path,
) -> ArtifactPlan:
    """Writes `sources` (and their extra files) into `out_dir` and returns the plan that
    compiles them and describes the artifact."""
    if toolchain.platform != platform:
        raise ValueError(
            f"toolchain is for platform {toolchain.platform.name!r}, not {platform.name!r}"
        )
    out_dir = Path(out_dir)
    units = _units(sources, toolchain.binary_suffix)
    files = {unit.source: unit.text for unit in units}
    files.update({unit.launch: unit.launch_text for unit in units if unit.launch})
    files.update(_checked_extra_files(sources.extra_files, units))
    for relpath, text in files.items():
        _write_text(out_dir / relpath, text)
    includes = toolchain.include_dirs()
    steps = tuple(toolchain.steps(unit.compiled, unit.binary, includes, unit.core_type)
                  for unit in units)
    return ArtifactPlan(key, tuple(files), tuple(unit.binary for unit in units), steps,
                        _manifest(sources, platform, toolchain, key, units))


def run_plan(plan: ArtifactPlan, out_dir: Path, launcher: Sequence[str] = ()) -> None:
    """Runs every step of `plan` in `out_dir`: the binaries in parallel, each one's steps
    in order.  Raises the first CompileError in manifest order."""
    workers = min(len(plan.units), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_run_unit, unit, Path(out_dir), launcher) for unit in plan.units]
    for future in futures:
        future.result()


def _run_unit(steps: tuple[Step, ...], out_dir: Path, launcher: Sequence[str]) -> None:
    for step in steps:
        run_step(step, out_dir, launcher)


def finish_artifact(plan: ArtifactPlan, out_dir: Path) -> None:
    """Completes the artifact in `out_dir`, whose files and binaries `plan` names: drops
    the steps' intermediate objects, records each binary's sha256 and writes manifest.json
    last, whose presence marks the artifact complete."""
    # The loader's schema; imported here: a no-op scons imports pypto.toolchain only.
    from pypto.runtime.manifest import manifest_record

    out_dir = Path(out_dir)
    for unit in plan.units:
        for step in unit[:-1]:
            (out_dir / step.output).unlink(missing_ok=True)
    digests = {binary: _sha256(out_dir / binary) for binary in plan.binaries}
    manifest = json.loads(json.dumps(plan.manifest))  # a copy: the plan stays as it was
    for entry in (*manifest["kernels"], manifest["orchestration"]):
        entry["sha256"] = digests[entry["file"]]
    manifest = manifest_record(manifest, out_dir / MANIFEST_NAME)
    _write_text(out_dir / MANIFEST_NAME, record_text(manifest))


def _units(sources: GeneratedSources, suffix: str) -> list[_Unit]:
    names = [kernel.name for kernel in sources.kernels]
    for name in names:
        if not _C_IDENTIFIER.fullmatch(name):
            raise ValueError(f"kernel name {name!r} is not a C identifier (it names a symbol)")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"kernel names must be unique; repeated: {duplicates}")
    units = [
        _Unit(f"kernels/{k.name}.cpp", f"kernels/{k.name}{suffix}", k.cpp, k.core_type,
              f"kernels/{k.name}.launch.cpp" if k.launch_cpp else "", k.launch_cpp)
        for k in sources.kernels
    ]
    units.append(
        _Unit("orchestration.cpp", f"orchestration{suffix}", sources.orchestration_cpp, None)
    )
    return units


def _checked_extra_files(extra_files: dict[str, str], units: list[_Unit]) -> dict[str, str]:
    reserved = {MANIFEST_NAME} | {u.source for u in units} | {u.binary for u in units} \
        | {u.launch for u in units if u.launch}
    checked = {}
    for relpath, text in extra_files.items():
        path = PurePosixPath(relpath)
        if path.is_absolute() or ".." in path.parts or not path.parts or str(path) in reserved:
            raise ValueError(
                f"extra file {relpath!r} must be a relative path inside the artifact that "
                f"names none of its generated files ({sorted(reserved)})"
            )
        checked[str(path)] = text
    return checked


def _manifest(
    sources: GeneratedSources,
    platform: Platform,
    toolchain: Toolchain,
    key: str,
    units: list[_Unit],
) -> dict:
    backend = platform.backend
    orchestration = units[-1]
    kernels = [
        {
            "name": kernel.name,
            "file": unit.binary,
            "source": unit.source,
            "sha256": None,
            "core_type": kernel.core_type,
            "signature": [param.to_json() for param in kernel.signature],
            # Absent when codegen did not say: the runtime then poisons whole buffers.
            **({"on_chip": {space: kernel.on_chip.get(space, 0) for space in SPACES}}
               if kernel.on_chip else {}),
        }
        for kernel, unit in zip(sources.kernels, units[:-1], strict=True)
    ]
    return {
        "pypto_version": pypto.__version__,
        "platform": platform.name,
        "backend": backend.name,
        "content_key": key,
        "entry": sources.entry,
        "params": [param.to_json() for param in sources.params],
        "outputs": list(sources.outputs),
        "kernels": kernels,
        "orchestration": {
            "file": orchestration.binary,
            "source": orchestration.source,
            "sha256": None,
            "entry": ORCHESTRATION_ENTRY,
        },
        # Capacities and core count travel with the artifact so the runtime needs no rules.
        "core": {
            **{space: backend.capacities[space] for space in SPACES},
            "cores": backend.vector_cores,
        },
        "toolchain": {"id": toolchain.version(), "flags_digest": toolchain.flags_digest()},
    }


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
