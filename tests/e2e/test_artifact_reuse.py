"""Built artifacts are reused: no second compile, and they run without the compiler."""

from __future__ import annotations

import shutil

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.toolchain import build


@pl.jit
def scaled_sum(a: pl.Tensor[[64, 128], pl.FP32], b: pl.Tensor[[64, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(pl.add(a, b), 2.0)
    return out


def _args():
    g = torch.Generator().manual_seed(7)
    return torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g), torch.zeros(64,
                                                                                             128)


def test_second_call_with_same_specialisation_does_not_compile(monkeypatch):
    calls = []
    original = build.run_step

    def counting(step, *args, **kwargs):
        calls.append(step)
        return original(step, *args, **kwargs)

    monkeypatch.setattr(build, "run_step", counting)
    cfg = RunConfig(platform="a5sim")
    a, b, out = _args()
    scaled_sum(a, b, out, config=cfg)
    first = len(calls)
    assert first >= 2  # one kernel and the orchestration
    out2 = torch.zeros(64, 128)
    scaled_sum(a, b, out2, config=cfg)
    fresh = pl.jit(scaled_sum.fn)  # a new JitFunction: only the on-disk cache can help it
    out3 = torch.zeros(64, 128)
    fresh(a, b, out3, config=cfg)
    assert len(calls) == first
    assert torch.equal(out, (a + b) * 2) and torch.equal(out2, out) and torch.equal(out3, out)


BLOCKED_RUN = r'''
import importlib.abc, sys

BLOCKED = ("pypto.language", "pypto.passes", "pypto.codegen", "pypto.toolchain",
           "pypto.compiler", "jinja2")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(BLOCKED):
            raise ImportError(f"{name} is blocked in this process")
        return None

sys.meta_path.insert(0, Block())

import torch
from pypto.ir import CompiledProgram

prog = CompiledProgram.from_dir(sys.argv[1] if len(sys.argv) > 1 else ARTIFACT)
g = torch.Generator().manual_seed(7)
a, b = torch.randn(64, 128, generator=g), torch.randn(64, 128, generator=g)
out = torch.zeros(64, 128)
prog(a, b, out)
assert torch.equal(out, (a + b) * 2), "wrong result"
assert prog.param_names == ["a", "b", "out"] and prog.output_indices == [2]
assert prog.platform == "a2a3sim"
assert not [m for m in sys.modules if m.startswith(BLOCKED)]
print("RAN-WITHOUT-COMPILER")
'''


def test_prebuilt_artifact_runs_where_the_compiler_cannot_be_imported(tmp_path, run_script):
    compiled = scaled_sum.compile(*_args(), config=RunConfig(platform="a2a3sim"))
    artifact = tmp_path / "artifact"
    shutil.copytree(compiled.output_dir, artifact)
    proc = run_script(BLOCKED_RUN.replace("ARTIFACT", repr(str(artifact))))
    assert "RAN-WITHOUT-COMPILER" in proc.stdout


def test_tampered_binary_is_refused_before_loading(tmp_path):
    from pypto.runtime import ArtifactError, load_artifact

    compiled = scaled_sum.compile(*_args(), config=RunConfig(platform="a2a3sim"))
    artifact = tmp_path / "artifact"
    shutil.copytree(compiled.output_dir, artifact)
    so = next((artifact / "kernels").glob("*.so"))
    data = bytearray(so.read_bytes())
    data[len(data) // 2] ^= 0xFF
    so.write_bytes(bytes(data))
    with pytest.raises(ArtifactError) as info:
        load_artifact(artifact)
    assert so.name in str(info.value) and "sha256" in str(info.value)
