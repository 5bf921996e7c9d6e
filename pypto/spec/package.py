"""The library index and the reproducible, optionally signed package of one platform's
build.

The index (`library-<platform>.json`, read by `pypto.runtime.load_library`) lists every
kernel variant with the relative paths of its artifact and golden and the sha256 of their
manifest.json and golden.json, the sha256 and size of every file a package of it holds
(`files`: each artifact's manifest.json with the binaries and sources it names, and each
golden), and its own digest (`index_sha256`).  Opening a library reads this one file, and
checks each variant's files on the variant's first use.

The package is a plain tar under one top directory `<name>-<version>-<platform>/`: the
index first, then its signature when a signing key is configured (`signature_name`, an
Ed25519 signature of the index's bytes, `pypto.runtime.signature`), then every file the
index lists, sorted.  Entries have mtime 0, uid/gid 0, no user or group names and modes
0644/0755, and Ed25519 signatures are deterministic, so two builds of the same library
with the same key give byte-identical archives.  `load_library` reads it in that order
(`pypto.runtime.unpack`).

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

from pypto.filesystem import DigestMismatch, atomic_write, read_verified
from pypto.records import record_text

if TYPE_CHECKING:
    import tarfile

SIGNING_KEY_ENV = "PYPTO_SIGNING_KEY"
"""The variable naming the Ed25519 private key (PEM file) that signs packages, when the
`signing_key=` SCons variable does not."""

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
    from pypto.golden_files import GOLDEN_NAME
    from pypto.platform import get_platform
    from pypto.runtime.abi import ABI_VERSION
    from pypto.runtime.library_index import LIBRARY_SCHEMA_VERSION, index_digest, index_name
    from pypto.runtime.manifest import MANIFEST_NAME

    root = Path(root)
    kernels: dict[str, dict] = {}
    files: dict[str, dict] = {}
    for e in entries:
        kernel = kernels.setdefault(e.kernel, {"spec": e.spec, "variants": {}})
        kernel["variants"][e.variant] = {
            "artifact": e.artifact,
            "manifest_sha256": _sha256(root / e.artifact / MANIFEST_NAME),
            "golden": e.golden,
            "golden_sha256": _sha256(root / e.golden / GOLDEN_NAME),
        }
        for relpath in _artifact_files(root, e.artifact) + _files_of(root, e.golden):
            data = (root / relpath).read_bytes()
            files[relpath] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    index = {
        "schema_version": LIBRARY_SCHEMA_VERSION,
        "name": check_dist_name("name", name),
        "version": check_dist_name("version", version),
        "platform": platform,
        "backend": get_platform(platform).backend.name,
        "abi_version": ABI_VERSION,
        "pypto_version": pypto.__version__,
        "kernels": kernels,
        "files": files,  # what a package holds: a signature of the index covers them all
    }
    index["index_sha256"] = index_digest(index)  # the one file opening reads checks itself
    path = root / index_name(platform)
    atomic_write(path, record_text(index))
    return path


def package_name(name: str, version: str, platform: str) -> str:
    """`<name>-<version>-<platform>`: the archive's stem and its top directory."""
    return f"{check_dist_name('name', name)}-{check_dist_name('version', version)}-{platform}"


def signing_key(configured: str | os.PathLike | None = None) -> Path | None:
    """The private key that signs packages: `configured` (the `signing_key=` SCons
    variable), else $PYPTO_SIGNING_KEY, else None (the package is not signed)."""
    chosen = configured or os.environ.get(SIGNING_KEY_ENV)
    return Path(chosen).expanduser().resolve() if chosen else None


def write_package(archive: str | os.PathLike, root: str | os.PathLike, platform: str,
                  key: str | os.PathLike | None = None) -> Path:
    """Writes the reproducible tar of the library index for `platform` under `root` and
    of every file it lists, each checked against the index; signed by the Ed25519 private
    key in the PEM file `key` when one is given (see `signing_key`).  A key that cannot
    sign, or a file that changed since the index was written, is an ArtifactError."""
    import io
    import tarfile

    from pypto.runtime.errors import ArtifactError
    from pypto.runtime.library_index import index_name, listed_files, read_index
    from pypto.runtime.signature import sign_index, signature_name

    root = Path(root)
    name = index_name(platform)
    data = (root / name).read_bytes()
    index = read_index(str(root / name), data, platform)
    top = package_name(index["name"], index["version"], platform)
    members = [(name, data, False)]
    if key is not None:
        try:
            members.append((signature_name(name), sign_index(data, key), False))
        except ValueError as exc:
            raise ArtifactError(f"cannot sign {archive}: {exc}") from None
    for relpath, listed in sorted(listed_files(str(root / name), index).items()):
        path = root / relpath
        try:
            content = read_verified(path, listed.sha256)
            changed = len(content) != listed.size
        except DigestMismatch:
            changed = True
        if changed:
            raise ArtifactError(f"{path} changed after {root / name} was written; build the "
                                "library again before packaging it")
        members.append((relpath, content, os.access(path, os.X_OK)))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for relpath, content, executable in members:
            tar.addfile(_info(f"{top}/{relpath}", len(content), executable), io.BytesIO(content))
    archive = Path(archive)
    atomic_write(archive, buffer.getvalue())
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


def _info(name: str, size: int, executable: bool) -> tarfile.TarInfo:
    import tarfile

    info = tarfile.TarInfo(name)
    info.type = tarfile.REGTYPE
    info.mode = 0o755 if executable else 0o644
    info.size = size
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

