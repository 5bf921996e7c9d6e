"""The content-keyed artifact cache, safe for concurrent builders on one host or many.

An entry `<root>/<key[:2]>/<key>/` is complete when its manifest.json exists.  A builder
builds in `<root>/tmp/` (same filesystem) and renames the finished directory into place.
A rename is atomic, and onto an existing entry it fails: the first builder of a key wins
and the others take its entry, so a reader never sees a half-written entry and nothing
relies on a lock (a cache on NFS, which may not honour flock, stays correct).  Two hosts
that build one key at the same moment both compile it; one of them publishes.

Reads are verified: an entry the loader would refuse (`pypto.runtime.verify_artifact`: a
manifest that does not parse or lacks or does not match its own digest, a binary whose
sha256 differs from the manifest's, capacities that are not the platform's) or whose
manifest records another key is never served: `lookup` moves it aside to
`<root>/quarantine/` with a `CorruptCacheEntryWarning` naming it, and `publish` builds it
again.  The cache and the loader run the same checks, so an entry that is served loads.

A cache that cannot be written (read-only, not ours, a full disk) raises
`CacheStorageError`, which says which and what to do.

Size: a lookup that serves an entry sets its directory's mtime, the entry's last use.
`trim` removes least recently used entries until the cache fits its limit, never one used
within `grace_s` (a reader between its lookup and its copy), each by renaming it out of
the tree before deleting it, so a reader sees a whole entry or none (docs/building.md,
"A shared cache").
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import shutil
import socket
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pypto.filesystem import fsync_dir, fsync_tree, move_aside
from pypto.platform import default_cache_root
from pypto.toolchain.build import MANIFEST_NAME

LIMIT_ENV = "PYPTO_CACHE_LIMIT"
DEFAULT_GRACE_S = 600.0
TRIM_INTERVAL_S = 60.0  # `trim_if_due` trims a cache at most this often
STALE_S = 86400.0  # a staging or trash directory this old is a killed process's leftover

_KEY = re.compile(r"[0-9a-f]{64}")
_SHARD = re.compile(r"[0-9a-f]{2}")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


class CorruptCacheEntryWarning(UserWarning):
    """A cache entry was damaged on disk; it was moved to `<root>/quarantine/` and rebuilt."""


class CacheStorageError(OSError):
    """The artifact cache cannot be written: read-only, not the user's, or the disk is full.
    The message names the cache and the file and says what to do."""


class ArtifactCache:
    """Published artifact directories under `root`, keyed by `content_key` hex digests."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else default_cache_root()

    def entry_dir(self, key: str) -> Path:
        """Where the entry for `key` lives once published."""
        if not _KEY.fullmatch(key):
            raise ValueError(f"cache key must be a sha256 hex digest, got {key!r}")
        return self.root / key[:2] / key

    def contains(self, key: str) -> bool:
        """Whether an entry for `key` is published (its manifest exists; not verified)."""
        return (self.entry_dir(key) / MANIFEST_NAME).is_file()

    def lookup(self, key: str) -> Path | None:
        """The complete, intact entry for `key`, or None, and records its use.  A directory
        without a manifest (left by something other than `publish`) is never served; a
        damaged one is quarantined (see the module docstring) and None returned."""
        entry = self._intact(key)
        if entry is not None:
            # Its last use, for trim; a cache this user may not write is served all the same.
            with contextlib.suppress(OSError):
                os.utime(entry)
        return entry

    def _intact(self, key: str) -> Path | None:
        entry = self.entry_dir(key)
        for _ in range(3):
            try:
                # Held open, the directory keeps its inode while it is read, so a trim that
                # renames it away (and a publish that puts a new one in its place) shows.
                held = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
            except (FileNotFoundError, NotADirectoryError):
                return None
            try:
                if not (entry / MANIFEST_NAME).is_file():
                    return None
                damage = entry_damage(entry, key)
                if damage is None:
                    return entry
                if _same_file(held, entry):
                    break
                # Renamed away or replaced while it was read: not damage; read again.
            finally:
                os.close(held)
        else:
            return None
        with self._storage():
            aside = move_aside(entry, self.root / "quarantine")
        if aside is not None:
            warnings.warn(
                f"pypto artifact cache: entry {key} was damaged on disk ({damage}); moved it "
                f"to {aside} and rebuilding it. Delete the quarantined copy once you have "
                "looked at it",
                CorruptCacheEntryWarning,
                stacklevel=3,
            )
        return None

    def publish(self, key: str, build: Callable[[Path], None]) -> Path:
        """The entry for `key`, running `build(empty_dir)` to create it when missing.

        `build` must write manifest.json last.  If `build` raises, nothing of its work
        remains and the exception propagates.  Concurrent callers may each build; the
        first to publish wins and the others return its entry.
        """
        entry = self.lookup(key)
        if entry is not None:
            return entry
        with self._storage():
            _sweep_dead_builders(self.root / "tmp", key)
            tmp = _new_dir(self.root / "tmp", key)
            try:
                build(tmp)
                if not (tmp / MANIFEST_NAME).is_file():
                    raise RuntimeError(f"the build of artifact {key} wrote no {MANIFEST_NAME}; "
                                       "nothing was published")
                fsync_tree(tmp)
                return self._place(key, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # gone once placed; else lost or failed

    @contextlib.contextmanager
    def _storage(self) -> Iterator[None]:
        """Turns a failure to write a file of the cache (or to create its directory) into a
        CacheStorageError that says what to do (a build that fails leaves nothing behind,
        so only the advice is missing)."""
        try:
            yield
        except OSError as exc:
            if not self._holds(exc.filename):
                raise
            where = f"{exc.filename}: " if exc.filename else ""
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise CacheStorageError(
                    f"the disk holding the artifact cache {self.root} is full ({where}"
                    f"{exc.strerror}); free some space, or point PYPTO_CACHE_DIR at a "
                    f"directory on another disk (nothing half-written was kept; "
                    f"{self.root / 'quarantine'} holds damaged entries you may delete)",
                ) from None
            raise CacheStorageError(
                f"the artifact cache {self.root} cannot be written ({where}"
                f"{exc.strerror or exc}); point PYPTO_CACHE_DIR at a directory you can write, "
                "e.g. PYPTO_CACHE_DIR=$HOME/.cache/pypto",
            ) from None

    def _holds(self, filename: object) -> bool:
        """Whether `filename` (of an OSError) is the cache root, lies inside it or is a
        directory on the way to it."""
        if not isinstance(filename, (str, bytes, os.PathLike)):
            return False
        path, root = os.path.abspath(os.fsdecode(filename)), os.path.abspath(self.root)
        return os.path.commonpath([path, root]) in (path, root)

    def _place(self, key: str, tmp: Path) -> Path:
        """Renames the finished `tmp` into `key`'s place and returns the entry; where one
        is there already, returns that one if it is intact, else moves it aside and tries
        again."""
        entry = self.entry_dir(key)
        entry.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(5):
            try:
                os.rename(tmp, entry)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
            else:
                fsync_dir(entry.parent)
                return entry
            found = self._intact(key)  # a damaged one is quarantined here
            if found is not None:
                return found
            move_aside(entry, self.root / "quarantine")  # a manifest-less leftover
        raise RuntimeError(f"could not publish artifact {key}: {entry} kept reappearing "
                           "without a manifest")


def entry_damage(entry: Path, key: str) -> str | None:
    """Why the loader would refuse the published entry `entry` of `key` (every check
    `pypto.runtime.verify_artifact` runs), or why it is not `key`'s; None when intact."""
    # Imported on first use: a no-op scons imports pypto.toolchain, never the runtime.
    from pypto.runtime.errors import ArtifactError
    from pypto.runtime.loader import verify_artifact

    try:
        manifest = verify_artifact(entry)
    except ArtifactError as exc:
        return str(exc)
    if manifest.content_key != key:
        return f"{MANIFEST_NAME} records content key {manifest.content_key!r}"
    return None


# --------------------------------------------------------------------------- size


@dataclass(frozen=True)
class TrimResult:
    """What `trim` did: items removed, their bytes, and the bytes the cache holds now."""

    removed: int
    freed: int
    size: int


@dataclass(frozen=True)
class _Item:
    path: Path
    last_use: float
    size: int
    is_dir: bool


def trim(root: Path, max_bytes: int, *, grace_s: float = DEFAULT_GRACE_S) -> TrimResult:
    """Removes the least recently used items of the cache at `root` until it holds at most
    `max_bytes`.  `root` is an artifact cache, or a shared cache directory (`scons
    cache=DIR`) holding one under `artifacts/` and SCons' CacheDir under `scons/`: their
    items are weighed together.  An item used within `grace_s` seconds (by the cache's own
    clock) is kept even over the limit; a directory is renamed out of the tree before it
    is deleted.  Also clears staging and trash left by killed processes."""
    root = Path(root)
    now = _cache_clock(root)
    items = list(_items(root))
    size = sum(item.size for item in items)
    removed = freed = 0
    for item in sorted(items, key=lambda item: item.last_use):
        if size <= max_bytes or now - item.last_use < grace_s:
            break
        if _remove(item, root):
            removed += 1
            freed += item.size
        size -= item.size  # gone either way: another trimmer may have taken it first
    for part in (root, root / "artifacts"):
        for leftover in ("tmp", "trash"):
            for path in _children(part / leftover):
                if now - _mtime(path) > STALE_S:
                    shutil.rmtree(path, ignore_errors=True)
    return TrimResult(removed, freed, size)


def trim_if_due(root: Path, max_bytes: int | None = None) -> TrimResult | None:
    """`trim(root, limit)` when a limit is set (`max_bytes`, else `$PYPTO_CACHE_LIMIT`) and
    the cache was not trimmed in the last TRIM_INTERVAL_S seconds; else None."""
    if max_bytes is None:
        value = os.environ.get(LIMIT_ENV, "")
        if not value:
            return None
        max_bytes = parse_size(value, LIMIT_ENV)
    clock = Path(root) / ".trimmed"
    if time.time() - _mtime(clock) < TRIM_INTERVAL_S:
        return None
    return trim(root, max_bytes)


def parse_size(text: str, what: str = "size") -> int:
    """Bytes from "20G", "500M", "1.5T", "4096" (powers of 1024; a trailing B or iB is
    allowed).  Anything else is a ValueError naming `what`."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{what}={text!r} is not a size; write it like 20G, 500M or 4096")
    number, unit = match.groups()
    return int(float(number) * 1024 ** " kmgt".index(unit.lower() or " "))


def cache_size(root: Path) -> int:
    """Bytes the cache at `root` holds (as `trim` weighs it)."""
    return sum(item.size for item in _items(Path(root)))


def _items(root: Path) -> Iterator[_Item]:
    """Every artifact entry (a directory), SCons CacheDir file and quarantined entry."""
    for part in (root, root / "artifacts"):
        for shard in _children(part):
            if _SHARD.fullmatch(shard.name):
                for entry in _children(shard):
                    if _KEY.fullmatch(entry.name):
                        yield _Item(entry, _mtime(entry), _tree_size(entry), True)
        for aside in _children(part / "quarantine"):
            yield _Item(aside, _mtime(aside), _tree_size(aside), True)
    for shard in _children(root / "scons"):
        for path in _children(shard):
            if path.is_file():
                yield _Item(path, _mtime(path), _size(path), False)


def _remove(item: _Item, root: Path) -> bool:
    """Deletes `item` (a directory: renamed out of the tree first); False when it is gone."""
    if not item.is_dir:
        try:
            item.path.unlink()
        except FileNotFoundError:
            return False
        return True
    # An entry (<part>/<shard>/<key>) and a quarantined one (<part>/quarantine/<name>)
    # alike go to <part>/trash.
    gone = move_aside(item.path, item.path.parents[1] / "trash")
    if gone is None:
        return False
    shutil.rmtree(gone, ignore_errors=True)
    return True


def _cache_clock(root: Path) -> float:
    """Now, by the clock of the filesystem holding `root` (a shared cache's hosts may
    disagree by more than a little), from a file touched for the purpose."""
    clock = root / ".trimmed"
    try:
        root.mkdir(parents=True, exist_ok=True)
        clock.touch()
        return clock.stat().st_mtime
    except OSError:
        return time.time()


def _same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file open as `fd`."""
    try:
        here, there = os.fstat(fd), path.stat()
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _children(path: Path) -> list[Path]:
    try:
        return list(path.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _tree_size(path: Path) -> int:
    return sum(_size(Path(dirpath, name)) for dirpath, _, names in os.walk(path)
               for name in names)


# --------------------------------------------------------------------------- files


def _new_dir(parent: Path, key: str) -> Path:
    """A new directory under `parent` named for `key` and its builder (host and process),
    with the umask's permissions: a team cache shared by group keeps its group rights."""
    parent.mkdir(parents=True, exist_ok=True)
    while True:
        path = parent / f"{key}.{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def _sweep_dead_builders(staging: Path, key: str) -> None:
    """Removes the staging directories of `key` that builders on this host left when they
    were killed (their process is gone).  Another host's are `trim`'s, once stale: whether
    their builder lives cannot be told from here."""
    host = socket.gethostname()
    for path in staging.glob(f"{key}.{host}.*.*"):
        try:
            os.kill(int(path.name.split(".")[-2]), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (ValueError, PermissionError):
            pass  # not one of ours, or alive under another user



