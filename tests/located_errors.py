"""Programs written as source text, for tests of the errors they raise at their lines."""

from __future__ import annotations

import linecache
import zlib

import pytest


def raised_by(source: str, trigger, cls) -> tuple[Exception, list[str]]:
    """The `cls` error that `trigger(namespace)` raises once `source` is executed as a file
    of its own (its lines in linecache, so the parser reads them as it reads any file), with
    the source's lines, for checking the line the error names."""
    filename = f"<program {zlib.crc32(source.encode()):08x}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    with pytest.raises(cls) as info:
        trigger(namespace)
    return info.value, source.splitlines()
