"""SCons' CacheDir with verified reads, for a cache shared by checkouts, CI runners, hosts.

SCons publishes a cache file by renaming a finished copy into place (atomic, no lock)
but serves whatever bytes it then finds there.  `VerifiedCacheDir` appends the sha256 of
the content to each file it pushes and checks it on every retrieval: a file damaged on
the shared storage is moved to `<cachedir>/quarantine/` and its target is built again
(and pushed anew), as SCons does for any file its cache does not hold.  A file a trim
removed while it was being read is a miss the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path

import SCons.CacheDir
import SCons.Util

from pypto.filesystem import move_aside

_MAGIC = b"\x00pypto-cachedir1"  # 16 bytes, then the 32-byte sha256 of the content
_TRAILER = len(_MAGIC) + 32


class DamagedCacheFileError(OSError):
    """A CacheDir file whose content does not match its recorded sha256."""


class VerifiedCacheDir(SCons.CacheDir.CacheDir):
    """`env.CacheDir(path, VerifiedCacheDir)`: every file carries its content's sha256."""

    def _readconfig(self, path: str) -> None:
        """Reads the cache's config where one exists, else takes SCons' default, without
        SCons' lock files: those need the right to write just to read, a killed process
        leaves them behind, and two builds that find no config at once would both fail to
        create it.  The only setting, prefix_len, is then the same for every pypto build."""
        config = Path(path) / "config"
        self.config = (json.loads(config.read_text()) if config.is_file()
                       else {"prefix_len": SCons.CacheDir.CACHE_PREFIX_LEN})

    @classmethod
    def copy_to_cache(cls, env, src, dst) -> str:
        """Writes `src` with its digest appended to `dst` (SCons renames `dst` into place)."""
        data = Path(src).read_bytes()
        Path(dst).write_bytes(data + _MAGIC + hashlib.sha256(data).digest())
        shutil.copystat(src, dst)
        os.chmod(dst, stat.S_IMODE(os.stat(dst).st_mode) | stat.S_IWRITE)
        return dst

    @classmethod
    def copy_from_cache(cls, env, src, dst) -> str:
        """Writes the verified content of cache file `src` to `dst`; a damaged file is
        quarantined and DamagedCacheFileError raised, which SCons takes as a miss."""
        try:
            data = Path(src).read_bytes()
        except FileNotFoundError:
            raise DamagedCacheFileError(f"{src} went while it was read") from None
        content = _content(data)
        if content is None:
            # Into <cachedir>/quarantine/, beside its shard directory.
            aside = move_aside(src, Path(src).parent.parent / "quarantine")
            if aside is not None:  # else another reader moved it first, and said so
                # One write, line and newline together: with -j, steps print from several
                # threads.
                sys.stdout.write(f"pypto: SCons cache file {src} for {dst} is damaged (its "
                                 f"sha256 does not match); moved it to {aside} and building "
                                 f"{dst} again\n")
                sys.stdout.flush()
            raise DamagedCacheFileError(f"damaged cache file {src}")
        Path(dst).write_bytes(content)
        shutil.copystat(src, dst)
        return dst

    def get_cachedir_csig(self, node) -> str:
        """The content signature of `node`'s cached file (its content, not the digest)."""
        cachedir, cachefile = self.cachepath(node)
        if cachefile and os.path.exists(cachefile):
            content = _content(Path(cachefile).read_bytes())
            if content is not None:
                return SCons.Util.hash_signature(content)
        return None


def _content(data: bytes) -> bytes | None:
    """The content of a cache file, or None when its digest does not match."""
    content, trailer = data[:-_TRAILER], data[-_TRAILER:]
    if len(data) < _TRAILER or trailer[:len(_MAGIC)] != _MAGIC \
            or hashlib.sha256(content).digest() != trailer[len(_MAGIC):]:
        return None
    return content


