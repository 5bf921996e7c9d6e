"""Generated code and binaries are byte-identical when rebuilt from the same inputs."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir


@pl.jit
def two_tasks(x: pl.Tensor[[64, 128], pl.FP16], out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        scratch = pl.exp(pl.cast(x, pl.FP32))
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.row_expand_div(scratch, pl.row_sum(scratch))
    return out


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_two_builds_into_different_directories_are_byte_identical(tmp_path):
    program = two_tasks.frontend(torch.zeros(64, 128, dtype=torch.float16), torch.zeros(64, 128))
    first = ir.compile(program, output_dir=tmp_path / "one" / "artifact", platform="a5sim",
                       dump_passes=ir.PassDumpLevel.EXPLICIT)
    second = ir.compile(program, output_dir=tmp_path / "two" / "elsewhere", platform="a5sim",
                        dump_passes=ir.PassDumpLevel.EXPLICIT)
    a, b = _files(first.output_dir), _files(second.output_dir)
    assert sorted(a) == sorted(b)
    assert any(name.endswith(".so") for name in a)
    differing = [name for name in a if a[name] != b[name]]
    assert differing == []
