"""The library index `library-<platform>.json`: its name, digest, schema and checks.

The index lists every kernel variant with the paths of its artifact and golden and the
sha256 of their manifest.json and golden.json, records its own digest (`index_sha256`)
and, from schema 1.2, the sha256 and size of every file a package of the library holds
(`files`): what a signature of the index covers, and what bounds unpacking a package.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pypto.platform import get_platform
from pypto.records import record_digest, versioned_record
from pypto.runtime.abi import ABI_VERSION
from pypto.runtime.errors import ArtifactError

LIBRARY_SCHEMA_VERSION = "1.2"
LIBRARY_SCHEMA_MAJOR = 1
"""Major version of the library index schema this runtime reads."""
# 1.1 added index_sha256, the digest of the index itself: with it every file of a library
# is covered by a hash, and the index, the one file read at open, checks itself.  1.2
# added `files`, so that a signature of the index covers every file of a package.
_UNDIGESTED_SCHEMAS = frozenset({"1.0"})

_SHA256 = re.compile(r"[0-9a-f]{64}")


def index_name(platform: str) -> str:
    """File name of a library's index for `platform`: `library-<platform>.json`."""
    return f"library-{platform}.json"


def index_digest(raw: Mapping[str, Any]) -> str:
    """sha256 of an index's content without its `index_sha256` field, as canonical JSON
    (sorted keys, no whitespace), like manifest.json's and golden.json's own digests."""
    return record_digest(raw, "index_sha256")


@dataclass(frozen=True)
class ListedFile:
    """One file of a package as its index records it."""

    size: int
    sha256: str


def read_index(where: str, data: bytes, platform: str | None) -> dict[str, Any]:
    """The index in `data` after its checks: bounded JSON, schema major version, its own
    digest, platform (when `platform` is given), ABI version, and the types of its
    top-level fields.  Errors are ArtifactErrors that start with `where`."""
    raw, schema = versioned_record(where, data, noun="the library index",
                                   major=LIBRARY_SCHEMA_MAJOR, error=ArtifactError)
    _check_index_digest(where, raw, schema)
    found = raw.get("platform")
    if platform is not None and found != platform:
        raise ArtifactError(
            f"{where}: platform mismatch: this runtime runs {platform!r}, the library is "
            f"built for {found!r}"
        )
    if raw.get("abi_version") != ABI_VERSION:
        raise ArtifactError(
            f"{where}: ABI version mismatch: expected {ABI_VERSION}, found "
            f"{raw.get('abi_version')!r}; rebuild the library with this pypto"
        )
    for key in ("name", "version", "platform"):
        if not isinstance(raw.get(key), str):
            raise ArtifactError(f"{where}: '{key}' should be a string")
    try:
        get_platform(raw["platform"])
    except ValueError as exc:
        raise ArtifactError(f"{where}: {exc}") from None
    if not isinstance(raw.get("kernels"), dict):
        raise ArtifactError(f"{where}: 'kernels' should be an object")
    return raw


def listed_files(where: str, raw: Mapping[str, Any]) -> dict[str, ListedFile]:
    """The index's `files` table (schema 1.2 and later), each path checked to stay inside
    the library; an index without one cannot describe a package."""
    files = raw.get("files")
    if not isinstance(files, dict):
        raise ArtifactError(
            f"{where}: the library index lists no files (schema {raw.get('schema_version')!r}); "
            "a package needs schema 1.2 or later: rebuild it with this pypto (`scons package`)"
        )
    listed = {}
    for relpath, entry in files.items():
        size = field(where, entry, "size", int, f"files.{relpath}")
        digest = field(where, entry, "sha256", str, f"files.{relpath}")
        if isinstance(size, bool) or size < 0 or not _SHA256.fullmatch(digest):
            raise ArtifactError(f"{where}: 'files.{relpath}' should record a size >= 0 and a "
                                "sha256 of 64 lowercase hex digits")
        listed[inside(where, relpath)] = ListedFile(size, digest)
    return listed


def _check_index_digest(where: str, raw: dict[str, Any], schema: str) -> None:
    """An index records its own digest (from schema 1.1), which must match its content."""
    recorded = raw.get("index_sha256")
    if recorded is None:
        if schema in _UNDIGESTED_SCHEMAS:
            return
        raise ArtifactError(
            f"{where}: the library index lacks 'index_sha256', which schema {schema} "
            "records; it was damaged after the build, rebuild the library"
        )
    found = index_digest(raw)
    if recorded != found:
        raise ArtifactError(
            f"{where}: index_sha256 mismatch: the index records {recorded!r}, its content "
            f"hashes to {found}; the index changed after the build, rebuild the library"
        )


def field(where: str, entry: Any, key: str, kind: type, path: str) -> Any:
    """`entry[key]` when `entry` is an object and the value a `kind`, else an
    ArtifactError naming the field by its `path` in the index."""
    value = entry.get(key) if isinstance(entry, dict) else None
    if not isinstance(value, kind):
        raise ArtifactError(f"{where}: '{path}.{key}' should be a {kind.__name__}")
    return value


def inside(where: str, relpath: str) -> str:
    """`relpath` after checking it is a plain relative path that stays inside the
    library: no absolute path, no `..`, `.` or empty component, no backslash or NUL
    (strings: a Path per variant would cost more than the rest of opening)."""
    parts = relpath.split("/")
    if "\\" in relpath or "\0" in relpath or any(p in ("", ".", "..") for p in parts):
        raise ArtifactError(f"{where}: path {relpath!r} must stay inside the library")
    return relpath
