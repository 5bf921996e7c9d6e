"""Building one artifact directory: generated sources, their binaries, manifest.json last."""

from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import pypto
from pypto.platform import SPACES, Platform
from pypto.records import MANIFEST_NAME
from pypto.toolchain.compiler import Toolchain

if TYPE_CHECKING:
    from pypto.codegen.sources import GeneratedSources

ORCHESTRATION_ENTRY = "pypto_orchestrate"

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Unit:
    """One generated source file of the artifact and the binary compiled from it."""

    source: str  # paths relative to the artifact directory
    binary: str
    text: str
    core_type: str | None  # None for orchestration
    launch: str = ""  # a CPU-model kernel's launcher source, compiled into the same binary
    launch_text: str = ""


def build_artifact(
    sources: GeneratedSources,
    platform: Platform,
    toolchain: Toolchain,
    key: str,
    out_dir: Path,
) -> None:
    """Writes `sources` into the empty directory `out_dir`, compiles every kernel and the
    orchestration in parallel, then writes manifest.json last: an artifact the runtime can
    load without build_rules/.  Raises CompileError when a source does not compile."""
    # The loader's schema; imported here: a no-op scons imports pypto.toolchain only.
    from pypto.runtime.manifest import manifest_record

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
    _compile_all(toolchain, out_dir, units)
    digests = {unit.binary: _sha256(out_dir / unit.binary) for unit in units}
    manifest = manifest_record(_manifest(sources, platform, toolchain, key, units, digests),
                               out_dir / MANIFEST_NAME)
    # Written last: its presence is what marks the artifact complete.
    _write_text(out_dir / MANIFEST_NAME, json.dumps(manifest, sort_keys=True, indent=2) + "\n")


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


def _compile_all(toolchain: Toolchain, out_dir: Path, units: list[_Unit]) -> None:
    workers = min(len(units), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(
                toolchain.compile_shared,
                out_dir / unit.source,
                out_dir / unit.binary,
                toolchain.include_dirs(),
                unit.core_type,
                [out_dir / unit.launch] if unit.launch else [],
            )
            for unit in units
        ]
    for future in futures:
        future.result()  # re-raises the first CompileError in manifest order


def _manifest(
    sources: GeneratedSources,
    platform: Platform,
    toolchain: Toolchain,
    key: str,
    units: list[_Unit],
    digests: dict[str, str],
) -> dict:
    backend = platform.backend
    orchestration = units[-1]
    kernels = [
        {
            "name": kernel.name,
            "file": unit.binary,
            "source": unit.source,
            "sha256": digests[unit.binary],
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
            "sha256": digests[orchestration.binary],
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
