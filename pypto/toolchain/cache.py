"""The content-keyed artifact cache, safe for concurrent builders.

An entry `<root>/<key[:2]>/<key>/` is complete when its manifest.json exists.  Builders of
one key serialize on `<root>/locks/<key>.lock` (an flock, released by the kernel when its
holder dies), build in `<root>/tmp/` on the same filesystem and `os.replace` the finished
directory into place, so a reader never sees a half-written entry.

An entry the loader would refuse (`pypto.runtime.verify_artifact`: a manifest that does
not parse or lacks or does not match its own digest, a binary whose sha256 differs from
the manifest's, capacities that are not the platform's) or whose manifest records another
key is never served: `lookup` moves it aside to `<root>/quarantine/` with a
`CorruptCacheEntryWarning` naming it, and `publish` builds it again.  The cache and the
loader run the same checks, so an entry that is served loads.

A cache that cannot be written (read-only, not ours, a full disk) raises
`CacheStorageError`, which says which and what to do.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from pypto.platform import default_cache_root
from pypto.toolchain.build import MANIFEST_NAME

DEFAULT_LOCK_TIMEOUT_S = 600.0

_KEY = re.compile(r"[0-9a-f]{64}")


class CacheLockTimeoutError(TimeoutError):
    """Another process held an artifact's build lock for longer than the bounded wait."""


class CorruptCacheEntryWarning(UserWarning):
    """A cache entry was damaged on disk; it was moved to `<root>/quarantine/` and rebuilt."""


class CacheStorageError(OSError):
    """The artifact cache cannot be written: read-only, not the user's, or the disk is full.
    The message names the cache and the file and says what to do."""


class ArtifactCache:
    """Published artifact directories under `root`, keyed by `content_key` hex digests."""

    def __init__(self, root: Path | None = None, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S):
        self.root = Path(root) if root is not None else default_cache_root()
        self.lock_timeout_s = lock_timeout_s

    def entry_dir(self, key: str) -> Path:
        """Where the entry for `key` lives once published."""
        if not _KEY.fullmatch(key):
            raise ValueError(f"cache key must be a sha256 hex digest, got {key!r}")
        return self.root / key[:2] / key

    def lookup(self, key: str) -> Path | None:
        """The complete, intact entry for `key`, or None.  A directory without a manifest
        (left by something other than `publish`) is never served; a damaged one is
        quarantined (see the module docstring) and None returned."""
        entry = self._complete(key)
        if entry is None or entry_damage(entry, key) is None:
            return entry
        with self._storage(), self._locked(key):
            return self._intact(key)

    def _complete(self, key: str) -> Path | None:
        entry = self.entry_dir(key)
        return entry if (entry / MANIFEST_NAME).is_file() else None

    def _intact(self, key: str) -> Path | None:
        """`lookup` for a caller holding the key's lock: quarantines a damaged entry."""
        entry = self._complete(key)
        if entry is None:
            return None
        damage = entry_damage(entry, key)
        if damage is None:
            return entry
        quarantine = self.root / "quarantine"
        quarantine.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=quarantine))
        os.replace(entry, aside / "entry")
        warnings.warn(
            f"pypto artifact cache: entry {key} was damaged on disk ({damage}); moved it to "
            f"{aside / 'entry'} and rebuilding it. Delete the quarantined copy once you have "
            "looked at it",
            CorruptCacheEntryWarning,
            stacklevel=3,
        )
        return None

    def publish(self, key: str, build: Callable[[Path], None]) -> Path:
        """The entry for `key`, running `build(empty_dir)` to create it when missing.

        `build` must write manifest.json last.  Concurrent callers with the same key build
        it once; if `build` raises, nothing of its work remains and the exception propagates.
        """
        entry = self.lookup(key)
        if entry is not None:
            return entry
        with self._storage(), self._locked(key):
            # Another builder may have published while this one waited for the lock.
            entry = self._intact(key)
            if entry is not None:
                return entry
            return self._build_and_publish(key, build)

    @contextlib.contextmanager
    def _storage(self) -> Iterator[None]:
        """Turns a failure to write a file of the cache (or to create its directory) into a
        CacheStorageError that says what to do (a build that fails leaves nothing behind,
        so only the advice is missing)."""
        try:
            yield
        except OSError as exc:
            if isinstance(exc, CacheLockTimeoutError) or not self._holds(exc.filename):
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

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        locks = self.root / "locks"
        locks.mkdir(parents=True, exist_ok=True)
        lock_path = locks / f"{key}.lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            delay = 0.01
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise CacheLockTimeoutError(
                            f"waited {self.lock_timeout_s:g} s for the build lock {lock_path}: "
                            f"another process is still building artifact {key}. A dead "
                            f"process releases it at once, so the holder is alive (find it "
                            f"with `fuser -v {lock_path}`); wait for it, stop it, or pass "
                            f"a longer lock_timeout_s"
                        ) from None
                    time.sleep(min(delay, remaining))
                    delay = min(delay * 2, 0.25)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _build_and_publish(self, key: str, build: Callable[[Path], None]) -> Path:
        staging = self.root / "tmp"
        staging.mkdir(parents=True, exist_ok=True)
        # Only the lock holder builds this key, so any other staging dir for it is from a
        # builder that was killed.
        for stale in staging.glob(f"{key}.*"):
            shutil.rmtree(stale, ignore_errors=True)
        entry = self.entry_dir(key)
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=staging))
        try:
            # mkdtemp makes the directory private; a published artifact is readable by all.
            os.chmod(tmp, 0o755)
            build(tmp)
            if not (tmp / MANIFEST_NAME).is_file():
                raise RuntimeError(
                    f"the build of artifact {key} wrote no {MANIFEST_NAME}; nothing was published"
                )
            _fsync_tree(tmp)
            entry.parent.mkdir(parents=True, exist_ok=True)
            if entry.exists():
                # A manifest-less leftover: lookup never served it, and os.replace needs room.
                shutil.rmtree(entry)
            os.replace(tmp, entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _fsync_dir(entry.parent)
        return entry


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


def _fsync_tree(root: Path) -> None:
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(dirpath))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
