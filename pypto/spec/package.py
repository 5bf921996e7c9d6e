"""The library index and the reproducible package archive of one platform's build.

The index (`library-<platform>.json`, read by `pypto.runtime.load_library`) lists every
kernel variant with the relative paths of its artifact and golden and the sha256 of their
manifest.json and golden.json, and records its own digest (`index_sha256`): opening a
library reads this one file, and checks each variant's files on the variant's first use.
The package is a plain tar of the index, of each artifact's manifest.json with the
binaries and sources it names, and of each golden, under one top directory
`<name>-<version>-<platform>/`: entries sorted, mtime 0, uid/gid 0, no user or group
names, modes reduced to 0644/0755, so two builds of the same library give byte-identical
archives.

The SCons tool imports this module on every build, a no-op included, so the runtime is
imported only inside the functions that write.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tarfile

_DIST_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class LibraryEntry:
    """One kernel variant of the library: where its artifact and golden lie (relative to
    the library root, POSIX separators)."""

    kernel: str
    spec: str
    variant: str
    artifact: str
    golden: str


def check_dist_name(what: str, value: str) -> str:
    """Library names and versions become file names: letters, digits and `_.+-`."""
    if not isinstance(value, str) or not _DIST_NAME.fullmatch(value):
        raise ValueError(f"library {what} {value!r} must be letters, digits and _.+-")
    return value


def write_library_index(root: str | os.PathLike, name: str, version: str, platform: str,
                        entries: Iterable[LibraryEntry]) -> Path:
    """Writes `<root>/library-<platform>.json` for the built files under `root`."""
    import pypto
    from pypto.platform import get_platform
    from pypto.runtime.abi import ABI_VERSION
    from pypto.runtime.library import (
        GOLDEN_FILE,
        LIBRARY_SCHEMA_VERSION,
        index_digest,
        index_name,
    )
    from pypto.runtime.manifest import MANIFEST_NAME

    root = Path(root)
    kernels: dict[str, dict] = {}
    for e in entries:
        kernel = kernels.setdefault(e.kernel, {"spec": e.spec, "variants": {}})
        kernel["variants"][e.variant] = {
            "artifact": e.artifact,
            "manifest_sha256": _sha256(root / e.artifact / MANIFEST_NAME),
            "golden": e.golden,
            "golden_sha256": _sha256(root / e.golden / GOLDEN_FILE),
        }
    index = {
        "schema_version": LIBRARY_SCHEMA_VERSION,
        "name": check_dist_name("name", name),
        "version": check_dist_name("version", version),
        "platform": platform,
        "backend": get_platform(platform).backend.name,
        "abi_version": ABI_VERSION,
        "pypto_version": pypto.__version__,
        "kernels": kernels,
    }
    index["index_sha256"] = index_digest(index)  # the one file opening reads checks itself
    path = root / index_name(platform)
    _atomic_write(path, (json.dumps(index, sort_keys=True, indent=2) + "\n").encode())
    return path


def package_name(name: str, version: str, platform: str) -> str:
    """`<name>-<version>-<platform>`: the archive's stem and its top directory."""
    return f"{check_dist_name('name', name)}-{check_dist_name('version', version)}-{platform}"


def write_package(archive: str | os.PathLike, root: str | os.PathLike, platform: str) -> Path:
    """Writes the reproducible tar of the library index for `platform` under `root` and of
    every file of the artifacts and goldens it lists."""
    import io
    import tarfile

    from pypto.runtime.library import index_name

    root = Path(root)
    index_path = root / index_name(platform)
    index = json.loads(index_path.read_text(encoding="utf-8"))
    top = package_name(index["name"], index["version"], platform)
    files = {index_name(platform)}
    for kernel in index["kernels"].values():
        for variant in kernel["variants"].values():
            files.update(_artifact_files(root, variant["artifact"]))
            files.update(_files_of(root, variant["golden"]))
    entries = set(files)
    for file in files:
        entries.update(str(p) for p in PurePosixPath(file).parents if str(p) != ".")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_info(top, directory=True))
        for rel in sorted(entries):
            path = root / rel
            if rel in files:
                data = path.read_bytes()
                info = _info(f"{top}/{rel}", directory=False, size=len(data),
                             executable=os.access(path, os.X_OK))
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(_info(f"{top}/{rel}", directory=True))
    archive = Path(archive)
    _atomic_write(archive, buffer.getvalue())
    return archive


def _artifact_files(root: Path, directory: str) -> list[str]:
    """manifest.json and the binaries and sources it names.  The build reports (report/,
    passes_dump/) stay out: they describe the build host, not the library."""
    manifest = json.loads((root / directory / "manifest.json").read_text(encoding="utf-8"))
    named = [manifest["orchestration"]["file"], manifest["orchestration"]["source"]]
    for kernel in manifest["kernels"]:
        named += [kernel["file"], kernel["source"]]
    return [f"{directory}/manifest.json"] + [f"{directory}/{PurePosixPath(n)}" for n in named]


def _files_of(root: Path, directory: str) -> list[str]:
    base = root / directory
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if not name.startswith("."):
                found.append((Path(dirpath) / name).relative_to(root).as_posix())
    if not found:
        raise FileNotFoundError(f"{base}: listed in the library index but missing or empty")
    return found


def _info(name: str, *, directory: bool, size: int = 0,
          executable: bool = False) -> tarfile.TarInfo:
    import tarfile

    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory or executable else 0o644
    info.size = size
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
