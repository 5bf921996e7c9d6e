"""How pypto changes files that others read: one helper per mechanism.

The durability rule, the same for every file pypto publishes (goldens, packages, the
spec index, check results, DFX outputs, argument dumps): a file is written under a
temporary name beside its target (`.<name>.<pid>.<token>.tmp`), its data is flushed to
the disk (`fsync`), and only then is it renamed onto the target.  A reader, or the next
run after a crash, sees the old file or the new one whole: never a part, never a name
that points at data the disk did not get.  A write that fails removes its temporary; one
killed midway leaves it, and the next write of the same file removes it (the temporary
names its writer's pid, and that process is gone).

A directory is replaced the same way (`swap_directory`): built in a staging directory
beside the target (`.<name>.pypto-tmp-*`) and renamed into place, the old one renamed
aside first and deleted after.  Between those two renames the target is briefly absent;
it is never a mix of old and new.

`move_aside` renames a damaged file or directory out of readers' way (a cache's
quarantine).  `lock_with_deadline` takes an exclusive `flock` on a lock file, waiting at
most a given time for another process to release it.  `read_verified` reads a file back against the
sha256 a record holds for it (`read_recorded` words its failures for the user).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

STAGING_MARK = ".pypto-tmp-"
"""Part of the name of every staging directory `swap_directory` makes."""


class AtomicFile:
    """A file being written: `file` is open for binary writing under a temporary name
    beside `path`; `commit` publishes it at `path` (by the durability rule above),
    `discard` removes it.  For a file written piece by piece over time; `atomic_write`
    writes one at once, `atomic_output` publishes one a program writes."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._tmp = _temporary(self.path)
        self.file: BinaryIO = open(self._tmp, "xb")  # noqa: SIM115 (closed by commit/discard)

    def commit(self) -> Path:
        """Flushes the data to the disk and renames the file onto `path`; returns `path`."""
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.discard()
            raise
        return self.path

    def discard(self) -> None:
        """Closes and removes the temporary file; `path` is left as it was."""
        self.file.close()
        self._tmp.unlink(missing_ok=True)


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary name beside `path` for a program that writes the file itself (a
    compiler's `-o`).  When the block ends, the file written there is published at `path`
    by the durability rule of this module; if the block raises, it is removed and `path`
    is left as it was."""
    target = Path(path)
    tmp = _temporary(target)
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _temporary(path: Path) -> Path:
    """A new temporary name beside `path` (its directory created), naming this process;
    the temporaries of `path` that killed writers left are removed first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_orphans(path)
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _remove_orphans(path: Path) -> None:
    """Removes the temporaries of `path` whose writer was killed before it could."""
    prefix = f".{path.name}."
    for stale in path.parent.glob(glob.escape(prefix) + "*.tmp"):
        try:
            os.kill(int(stale.name[len(prefix):].split(".")[0]), 0)
        except ProcessLookupError:
            stale.unlink(missing_ok=True)
        except (ValueError, PermissionError):
            pass  # not one of ours, or its writer lives under another user


def atomic_write(path: str | os.PathLike, data: bytes | str) -> Path:
    """Writes `data` (text is written as UTF-8, newlines as given) to `path` by the
    durability rule of this module, creating its directory; returns `path`."""
    pending = AtomicFile(path)
    try:
        pending.file.write(data.encode() if isinstance(data, str) else data)
    except BaseException:
        pending.discard()
        raise
    return pending.commit()


def fsync_dir(path: str | os.PathLike) -> None:
    """Flushes directory `path`'s entries (the names created or renamed in it) to the
    disk."""
    _fsync(path, os.O_RDONLY | os.O_DIRECTORY)


def fsync_tree(root: str | os.PathLike) -> None:
    """Flushes every file and directory under `root` to the disk."""
    for dirpath, _, filenames in os.walk(os.fspath(root)):
        for name in filenames:
            _fsync(os.path.join(dirpath, name))
        fsync_dir(dirpath)


def _fsync(path: str | os.PathLike, flags: int = os.O_RDONLY) -> None:
    """Flushes the file (or, with O_DIRECTORY in `flags`, the directory) at `path` to the
    disk."""
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def swap_directory(target: str | os.PathLike, fill: Callable[[Path], None], *,
                   sweep_stale: bool = False) -> Path:
    """Replaces directory `target` whole with what `fill(new)` puts in `new`, an empty
    directory beside it; returns the resolved target.  If `fill` raises, `target` is left
    as it was and nothing of the staging remains.

    sweep_stale: first delete staging directories of this target left by a process that
    was killed (only for a caller that holds a lock on the target's parent, or another
    writer's staging would go).
    """
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{target.name}{STAGING_MARK}"
    if sweep_stale:
        for stale in target.parent.glob(prefix + "*"):
            shutil.rmtree(stale, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
    try:
        new = staging / "new"
        new.mkdir()
        fill(new)
        old = staging / "old"
        if target.exists():
            os.replace(target, old)
        try:
            os.replace(new, target)
        except BaseException:
            if old.exists():
                os.replace(old, target)  # the old directory stays in place
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def move_aside(path: str | os.PathLike, where: str | os.PathLike) -> Path | None:
    """Renames `path` (a file or a directory) into the directory `where` (created, on the
    same file system) as `<name>.<random hex>`, out of the way of readers; returns its new
    path, or None when `path` was gone already (another process moved it first)."""
    path, where = Path(path), Path(where)
    where.mkdir(parents=True, exist_ok=True)
    aside = where / f"{path.name}.{secrets.token_hex(4)}"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return None
    return aside


class LockTimeout(TimeoutError):
    """`lock_with_deadline` waited its whole deadline."""


def lock_with_deadline(path: str | os.PathLike, timeout_s: float,
                       on_wait: Callable[[], None] | None = None) -> int:
    """Takes an exclusive `flock` on the file at `path` (created if missing), waiting at
    most `timeout_s` seconds; returns its descriptor (the lock is held until it is closed,
    or the process ends).  Calls `on_wait()` once if it has to wait; raises LockTimeout
    when the deadline passes."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout_s
    waited = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if not waited and on_wait is not None:
                on_wait()
            waited = True
            if time.monotonic() > deadline:
                os.close(fd)
                message = f"{os.fspath(path)} stayed locked for {timeout_s:g} s"
                raise LockTimeout(message) from None
            time.sleep(0.1)


class DigestMismatch(ValueError):
    """A file's sha256 is not the one recorded for it; `found` is the one it has."""

    def __init__(self, found: str) -> None:
        super().__init__(f"sha256 {found}")
        self.found = found


def read_verified(path: str | os.PathLike, sha256: str) -> bytes:
    """The bytes of the file at `path`, once their sha256 is `sha256` (hex, either case);
    DigestMismatch otherwise.  An OSError reading it propagates (the caller names what
    the file is)."""
    data = Path(path).read_bytes()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256.lower():
        raise DigestMismatch(found)
    return data


def read_recorded(path: str | os.PathLike, sha256: str, error: type[Exception], *,
                  recorded_in: str, remedy: str) -> bytes:
    """`read_verified`, its failures raised as `error`s that start with `path`: the file
    cannot be read, or its sha256 is not the one `recorded_in` (the record's name, e.g.
    "golden.json") records, and `remedy` says what to do about it."""
    try:
        return read_verified(path, sha256)
    except OSError as exc:
        raise error(f"{os.fspath(path)}: cannot read: {exc.strerror or exc}") from None
    except DigestMismatch as exc:
        raise error(f"{os.fspath(path)}: sha256 mismatch: {recorded_in} records {sha256}, "
                    f"found {exc.found}; {remedy}") from None
