"""The content-keyed artifact cache, safe for concurrent builders.

An entry `<root>/<key[:2]>/<key>/` is complete when its manifest.json exists.  Builders of
one key serialize on `<root>/locks/<key>.lock` (an flock, released by the kernel when its
holder dies), build in `<root>/tmp/` on the same filesystem and `os.replace` the finished
directory into place, so a reader never sees a half-written entry.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from pypto.toolchain.build import MANIFEST_NAME

DEFAULT_LOCK_TIMEOUT_S = 600.0

_KEY = re.compile(r"[0-9a-f]{64}")


class CacheLockTimeoutError(TimeoutError):
    """Another process held an artifact's build lock for longer than the bounded wait."""


def default_cache_root() -> Path:
    """$PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto, else ~/.cache/pypto."""
    explicit = os.environ.get("PYPTO_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says to ignore a relative XDG_CACHE_HOME.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pypto"


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
        """The complete entry for `key`, or None.  A directory without a manifest (left by
        something other than `publish`) is never served."""
        entry = self.entry_dir(key)
        return entry if (entry / MANIFEST_NAME).is_file() else None

    def publish(self, key: str, build: Callable[[Path], None]) -> Path:
        """The entry for `key`, running `build(empty_dir)` to create it when missing.

        `build` must write manifest.json last.  Concurrent callers with the same key build
        it once; if `build` raises, nothing of its work remains and the exception propagates.
        """
        entry = self.lookup(key)
        if entry is not None:
            return entry
        with self._locked(key):
            # Another builder may have published while this one waited for the lock.
            entry = self.lookup(key)
            if entry is not None:
                return entry
            return self._build_and_publish(key, build)

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
