"""Bad calls, configs, sources and artifacts: clear errors, the right type, nothing lost."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import ArtifactError, RunConfig, load_artifact
from pypto.toolchain import ToolchainNotFoundError

HERE = __file__


@pl.jit
def add(a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[16, 128], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def _z(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


def _artifact(tmp_path, platform="a2a3sim"):
    compiled = add.compile(_z(16, 128), _z(16, 128), _z(16, 128),
                           config=RunConfig(platform=platform))
    dst = tmp_path / "artifact"
    shutil.copytree(compiled.output_dir, dst)
    return dst


CALL_CASES = {
    "too_few_arguments": (lambda tmp: add(_z(16, 128), _z(16, 128)), TypeCheckError,
                          "takes 3 arguments"),
    "wrong_dtype": (lambda tmp: add(_z(16, 128, dtype=torch.float16), _z(16, 128), _z(16, 128)),
                    TypeCheckError, "expects a FP32 tensor [16, 128]"),
    "wrong_shape": (lambda tmp: add(_z(16, 64), _z(16, 128), _z(16, 128)), TypeCheckError,
                    "[16, 64]"),
    "unsupported_torch_dtype": (
        lambda tmp: add(_z(16, 128, dtype=torch.float64), _z(16, 128), _z(16, 128)),
        TypeCheckError, "supported dtypes"),
    "not_a_tensor": (lambda tmp: add([1, 2], _z(16, 128), _z(16, 128)), TypeCheckError,
                     "pass torch tensors and Python numbers"),
    "unknown_platform": (lambda tmp: RunConfig(platform="a3"), ValueError,
                         "a2a3sim, a5sim, a2a3cpu, a5cpu, a2a3, a5"),
    "unknown_config_keyword": (lambda tmp: RunConfig(rtoll=1e-3), TypeError, "rtoll"),
    "bad_workers": (lambda tmp: RunConfig(workers=0), ValueError, "positive"),
    "config_of_wrong_type": (lambda tmp: add(_z(16, 128), _z(16, 128), _z(16, 128),
                                             config={"platform": "a5sim"}),
                             TypeError, "RunConfig"),
    "device_platform_without_compiler": (
        lambda tmp: add(_z(16, 128), _z(16, 128), _z(16, 128), config=RunConfig(platform="a5")),
        ToolchainNotFoundError, "a5sim"),
    "missing_manifest": (lambda tmp: ir.CompiledProgram.from_dir(tmp), FileNotFoundError,
                         "is not a pypto artifact"),
    "corrupt_manifest": (lambda tmp: _corrupt_manifest(tmp), ArtifactError, "manifest.json"),
    "platform_mismatch": (lambda tmp: load_artifact(_artifact(tmp, "a5sim"), platform="a2a3sim"),
                          ArtifactError, "a5sim"),
    "invalid_python_text": (lambda tmp: pl.parse("@pl.program\nclass x:\n  def (:\n"),
                            ParseError, "<pl.parse>:3"),
    "two_program_classes": (lambda tmp: pl.parse("class a: pass\nclass b: pass\n"), ParseError,
                            "exactly one `@pl.program` class"),
    "env_verify_level": (lambda tmp: _with_env("PYPTO_VERIFY_LEVEL", "full"), ValueError,
                         "none, basic, roundtrip"),
}


@pl.jit
def scaled(a: pl.Tensor[[16, 128], pl.FP32], s: pl.Scalar[pl.FP32],
           out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, s)
    return out


def _run_loaded(tmp, *args):
    return load_artifact(_artifact(tmp)).run(list(args))


# Wrong argument counts, dtypes, shapes and kinds at call time, through @pl.jit and
# through a loaded artifact (which has no source to point at).
CALL_CASES.update({
    "too_many_arguments": (lambda tmp: add(_z(16, 128), _z(16, 128), _z(16, 128), _z(16, 128)),
                           TypeCheckError, "takes 3 arguments, got 4"),
    "wrong_rank": (lambda tmp: add(_z(16, 128, 1), _z(16, 128), _z(16, 128)), TypeCheckError,
                   "got a FP32 tensor [16, 128, 1]"),
    "number_for_a_tensor": (lambda tmp: add(1.0, _z(16, 128), _z(16, 128)), TypeCheckError,
                            "expects a FP32 tensor [16, 128], got a FP32 scalar"),
    "tensor_for_a_scalar": (lambda tmp: scaled(_z(16, 128), _z(1), _z(16, 128)),
                            TypeCheckError, "expects a FP32 scalar, got a FP32 tensor [1]"),
    "output_of_wrong_dtype": (lambda tmp: add(_z(16, 128), _z(16, 128),
                                              _z(16, 128, dtype=torch.int32)),
                              TypeCheckError, "`out` expects a FP32 tensor [16, 128]"),
    "loaded_program_argument_count": (lambda tmp: _run_loaded(tmp, _z(16, 128), _z(16, 128)),
                                      TypeError, "takes 3 arguments (a, b, out), got 2"),
    "loaded_program_shape": (lambda tmp: _run_loaded(tmp, _z(16, 64), _z(16, 128), _z(16, 128)),
                             ValueError, "expected shape [16, 128], found [16, 64]"),
    "loaded_program_dtype": (
        lambda tmp: _run_loaded(tmp, _z(16, 128, dtype=torch.float16), _z(16, 128),
                                _z(16, 128)),
        TypeError, "expected dtype FP32, found FP16"),
    "loaded_program_not_a_tensor": (lambda tmp: _run_loaded(tmp, [1], _z(16, 128), _z(16, 128)),
                                    TypeError, "expected a torch.Tensor, found list"),
    "load_for_an_unknown_platform": (lambda tmp: load_artifact(_artifact(tmp), platform="a9"),
                                     ValueError, "choose one of: a2a3sim, a5sim"),
})


def _corrupt_manifest(tmp):
    art = _artifact(tmp)
    (art / "manifest.json").write_text("{ not json")
    return load_artifact(art)


def _with_env(name, value):
    import os

    old = os.environ.get(name)
    os.environ[name] = value
    try:
        return add(_z(16, 128), _z(16, 128), _z(16, 128), config=RunConfig(platform="a5sim",
                                                                           dump_passes=True))
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


@pytest.mark.parametrize("name", sorted(CALL_CASES))
def test_bad_call_gets_a_clear_error(name, tmp_path):
    fn, error, message = CALL_CASES[name]
    with pytest.raises(error) as info:
        fn(tmp_path)
    assert message in str(info.value), str(info.value)


def test_device_platform_fails_fast_naming_what_is_missing():
    with pytest.raises(ToolchainNotFoundError) as info:
        add(_z(16, 128), _z(16, 128), _z(16, 128), config=RunConfig(platform="a2a3"))
    message = str(info.value)
    assert "PYPTO_DEVICE_CXX" in message and "a2a3sim" in message


def test_refused_artifact_is_left_unchanged(tmp_path):
    art = _artifact(tmp_path)
    so = next((art / "kernels").glob("*.so"))
    data = bytearray(so.read_bytes())
    data[100] ^= 1
    so.write_bytes(bytes(data))
    before = {p: p.read_bytes() for p in art.rglob("*") if p.is_file()}
    with pytest.raises(ArtifactError):
        load_artifact(art)
    assert {p: p.read_bytes() for p in art.rglob("*") if p.is_file()} == before
    assert json.loads((art / "manifest.json").read_text())["platform"] == "a2a3sim"
