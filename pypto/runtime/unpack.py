"""Unpacking a package archive, bounded by its (signed) index.

A package (`scons package`, `pypto.spec.package.write_package`) is a tar whose first
member is the library index `<top>/library-<platform>.json`, then its signature when it
is signed, then every file the index lists, under one top directory.  The archive is
read as a stream, once: the index and the signature come first, the caller's `Trust`
accepts them (or refuses the package) before any other member is read, and every member
after them must be a regular file the index lists, of the size it lists; its sha256 is
checked as it is written.  So the index bounds what is unpacked: its member count and
total size (besides UNPACK_LIMIT_MEMBERS and UNPACK_LIMIT_BYTES), and a compressed
archive is cut off once it decompresses to more than the listed members can take.
Refusals name the archive and the member, never the temporary directory.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import lzma
import os
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from pypto.records import MAX_RECORD_BYTES
from pypto.runtime.errors import ArtifactError
from pypto.runtime.library_index import ListedFile, listed_files, read_index
from pypto.runtime.signature import MAX_SIGNATURE_BYTES, Trust, signature_name

UNPACK_LIMIT_BYTES = 8 << 30
"""The most file bytes pypto unpacks from one package, whatever its index lists."""
UNPACK_LIMIT_MEMBERS = 100_000
"""The most files pypto unpacks from one package, whatever its index lists."""

_MEMBER_OVERHEAD = 16 << 10
"""Tar bytes a member may take besides its data: its header, a PAX header with a long
name, and padding."""
_HEAD_LIMIT = MAX_RECORD_BYTES + MAX_SIGNATURE_BYTES + 3 * _MEMBER_OVERHEAD
"""What the archive may take before its index is read: the index, the signature and the
header of the member after them."""
_COPY_BLOCK = 1 << 20
_INDEX = re.compile(r"library-([A-Za-z0-9_.+-]+)\.json")
_TOP = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


@dataclass(frozen=True)
class UnpackedPackage:
    """What `unpack_package` wrote and accepted."""

    root: Path  # the top directory, under the caller's directory
    top: str  # its name in the archive
    index: dict[str, Any]  # the checked index
    index_name: str
    signed_by: str | None  # the key whose signature verified; None when accepted unsigned


def unpack_package(archive: Path, into: Path, platform: str | None,
                   trust: Trust) -> UnpackedPackage:
    """Unpacks the package `archive` under the directory `into` (see the module
    docstring); every refusal is an ArtifactError naming the archive and the member."""
    reader = _Reader(archive, into)
    try:
        with open(archive, "rb") as raw:
            reader.stream = _Bounded(_decompressed(raw), _HEAD_LIMIT)
            # A stream ("r|") is only read; typeshed asks any fileobj for seek, write, close.
            with tarfile.open(fileobj=reader.stream, mode="r|") as tar:  # type: ignore[call-overload]
                return reader.unpack(tar, platform, trust)
    except _OverLimit:
        raise ArtifactError(
            f"{archive}: member {reader.member!r} takes the archive past the "
            f"{reader.stream.limit} bytes its index allows (a decompression bomb, or an "
            "archive that does not match its index); do not load it"
        ) from None
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, OSError) as exc:
        at = f" at member {reader.member!r}" if reader.member else ""
        raise ArtifactError(f"{archive}: not a readable package archive{at}: {exc}") from None


class _Readable(Protocol):
    """A stream of bytes read in order (a file, or a decompressor over one)."""

    def read(self, size: int = -1, /) -> bytes: ...


def _decompressed(raw: BinaryIO) -> _Readable:
    """`raw`, decompressed when it starts as a gzip, bzip2 or xz stream does."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)
    return raw


class _OverLimit(Exception):
    """The archive stream passed the bytes its index allows."""


class _Bounded:
    """A read-only stream that fails once more than `limit` bytes have been read from it:
    what stops a small compressed archive from unpacking without end."""

    def __init__(self, stream: _Readable, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.consumed + 1
        data = self.stream.read(room if size < 0 else min(size, room))
        self.consumed += len(data)
        if self.consumed > self.limit:
            raise _OverLimit()
        return data


class _Reader:
    """One pass over the members of a package, in order."""

    def __init__(self, archive: Path, into: Path) -> None:
        self.archive = archive
        self.into = into
        self.stream = _Bounded(io.BytesIO(), 0)  # an empty stream until the archive is open
        self.member: str | None = None  # the member being read, for messages

    def fail(self, message: str) -> ArtifactError:
        return ArtifactError(f"{self.archive}: member {self.member!r}: {message}")

    def unpack(self, tar: tarfile.TarFile, platform: str | None,
               trust: Trust) -> UnpackedPackage:
        members = iter(tar)
        first = self._next(members)
        if first is None:
            raise ArtifactError(f"{self.archive}: the archive is empty; a package starts with "
                                "its library index")
        top, name = _split(first.name)
        match = _INDEX.fullmatch(name)
        if top is None or match is None or not first.isreg():
            raise self.fail(
                "a package starts with its library index <top>/library-<platform>.json; this "
                "is not a package `scons package` writes (or an older pypto wrote it): rebuild "
                "it with `scons package`"
            )
        if platform is not None and match.group(1) != platform:
            raise ArtifactError(
                f"{self.archive}: the library is built for {match.group(1)}, not for this "
                f"runtime's platform {platform!r}; build it with `scons platform={platform}`"
            )
        index_data = self._read(tar, first, MAX_RECORD_BYTES)
        member = self._next(members)
        signature = None
        if member is not None and member.name == f"{top}/{signature_name(name)}":
            signature = self._read(tar, member, MAX_SIGNATURE_BYTES)
            member = self._next(members)
        shown = f"{self.archive}:{first.name}"
        signed_by = trust.check(shown, index_data, signature)
        index = read_index(shown, index_data, platform)
        listed = listed_files(shown, index)
        total = sum(f.size for f in listed.values())
        if len(listed) > UNPACK_LIMIT_MEMBERS or total > UNPACK_LIMIT_BYTES:
            raise ArtifactError(
                f"{shown}: the index lists {len(listed)} files of {total} bytes, more than "
                f"pypto unpacks ({UNPACK_LIMIT_MEMBERS} files, {UNPACK_LIMIT_BYTES} bytes)"
            )
        self.stream.limit = self.stream.consumed + sum(
            -(-f.size // 512) * 512 + _MEMBER_OVERHEAD for f in listed.values()
        ) + 2 * _MEMBER_OVERHEAD
        self._write(self.into / top / name, index_data, executable=False)
        if signature is not None:
            self._write(self.into / top / signature_name(name), signature, executable=False)
        seen: set[str] = set()
        while member is not None:
            self._extract(tar, member, top, listed, seen)
            member = self._next(members)
        missing = sorted(set(listed) - seen)
        if missing:
            self.member = None
            raise ArtifactError(
                f"{self.archive}: the index lists {len(missing)} files the archive does not "
                f"hold, first {top}/{missing[0]!s}; do not load it"
            )
        return UnpackedPackage(self.into / top, top, index, name, signed_by)

    def _next(self, members: Any) -> tarfile.TarInfo | None:
        member = next(members, None)
        self.member = member.name if member is not None else None
        return member

    def _extract(self, tar: tarfile.TarFile, member: tarfile.TarInfo, top: str,
                 listed: dict[str, ListedFile], seen: set[str]) -> None:
        member_top, relpath = _split(member.name)
        entry = listed.get(relpath) if member_top == top else None
        if entry is None:
            raise self.fail("the library index does not list it; do not load the package")
        if relpath in seen:
            raise self.fail("it appears twice in the archive")
        source = tar.extractfile(member) if member.isreg() else None
        if source is None:
            raise self.fail("it is not a regular file (a link, a directory or a device), "
                            "which a package never holds")
        if member.size != entry.size:
            raise self.fail(f"it is {member.size} bytes, the index lists {entry.size}")
        digest = hashlib.sha256()
        with self._created(self.into / top / relpath, bool(member.mode & 0o111)) as write:
            remaining = entry.size
            while remaining:
                block = source.read(min(remaining, _COPY_BLOCK))
                if not block:
                    raise self.fail("the archive ends inside it")
                digest.update(block)
                write(block)
                remaining -= len(block)
        if digest.hexdigest() != entry.sha256:
            raise self.fail(f"sha256 mismatch: the index records {entry.sha256}, found "
                            f"{digest.hexdigest()}; the file changed after the index was written")
        seen.add(relpath)

    def _read(self, tar: tarfile.TarFile, member: tarfile.TarInfo, limit: int) -> bytes:
        source = tar.extractfile(member) if member.isreg() and member.size <= limit else None
        if source is None:
            raise self.fail(f"it should be a regular file of at most {limit} bytes")
        data = source.read(member.size)
        if len(data) != member.size:
            raise self.fail("the archive ends inside it")
        return data

    def _write(self, path: Path, data: bytes, *, executable: bool) -> None:
        with self._created(path, executable) as write:
            write(data)

    @contextlib.contextmanager
    def _created(self, path: Path, executable: bool) -> Iterator[Callable[[bytes], Any]]:
        """A writer of the new file `path`: a failure to create or write it (a full disk)
        is an ArtifactError naming the member."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o755 if executable else 0o644)
        except OSError as exc:
            raise self._unwritable(exc) from None

        def write(block: bytes) -> None:
            view = memoryview(block)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:
                raise self._unwritable(exc) from None

        try:
            yield write
        finally:
            os.close(fd)

    def _unwritable(self, exc: OSError) -> ArtifactError:
        return self.fail(f"cannot unpack it: {exc.strerror or exc} (set TMPDIR to a directory "
                         "with room to unpack into)")


def _split(name: str) -> tuple[str | None, str]:
    """(top directory, path below it) of a member name; top is None when the name does
    not start with a plain directory name."""
    top, _, relpath = name.partition("/")
    return (top if _TOP.fullmatch(top) else None), relpath
