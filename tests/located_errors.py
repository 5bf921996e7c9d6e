"""Programs written as source text, for tests of the errors they raise at their lines."""

from __future__ import annotations

import linecache
import zlib

import pytest
import torch


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


COPY_KERNEL = """
@pl.jit.incore
def k(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 128])
    out = pl.store(t, [0, 0], out)
    return out
"""
"""Module text for entry_error's `before=`: a kernel `k(x, out)` copying a [16, 128] FP32
tensor, for bodies that call a kernel."""


def entry_error(body: str, cls, rows: int = 16, before: str = "") -> tuple[Exception, list[str]]:
    """The `cls` error of a @pl.jit `entry(x, out)` over [rows, 128] FP32 tensors whose body
    is `body` (indented, then `return out`), after the module text `before` (kernels it
    calls), raised when the entry is parsed for its arguments."""
    source = f'''
import pypto.language as pl
{before}
@pl.jit
def entry(x: pl.Tensor[[{rows}, 128], pl.FP32], out: pl.Out[pl.Tensor[[{rows}, 128], pl.FP32]]):
{body}
    return out
'''
    return raised_by(source, lambda ns: ns["entry"].frontend(torch.zeros(rows, 128),
                                                             torch.zeros(rows, 128)), cls)
