"""Bad calls, configs, sources and artifacts: clear errors, the right type, nothing lost."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
import torch
from catalogue import add, assert_user_facing, copy
from catalogue import artifact as _artifact
from catalogue import zeros as _z

import pypto.language as pl
from pypto import ir
from pypto.ir import ParseError, TypeCheckError
from pypto.runtime import ArtifactError, RunConfig, load_artifact
from pypto.toolchain import CacheStorageError, ToolchainNotFoundError

HERE = __file__
HERE_DIR = Path(__file__).resolve().parent


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
    "missing_block_in_parsed_text": (  # Python detects it on the line after
        lambda tmp: pl.parse("@pl.program\nclass x:\n  def f(self):\n\n  y = 1\n"),
        ParseError, "<pl.parse>:3: invalid Python: expected an indented block"),
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


def _meta(*shape):
    return torch.zeros(*shape, device="meta")


def _in_unwritable_cache(tmp):
    # A shape no other test compiles: the call must reach the cache.
    with _env("PYPTO_CACHE_DIR", "/sys/pypto-catalogue-cache"):
        return copy(_z(8, 136), _z(8, 136))


# Tensors the host simulator cannot use as they are, and environments it cannot work in.
CALL_CASES.update({
    "meta_input": (lambda tmp: add(_meta(16, 128), _z(16, 128), _z(16, 128)), TypeError,
                   "parameter 'a': expected a tensor in host memory, found one on meta"),
    "meta_output": (lambda tmp: add(_z(16, 128), _z(16, 128), _meta(16, 128)), TypeError,
                    "parameter 'out': expected a tensor in host memory, found one on meta"),
    "loaded_program_meta_output": (
        lambda tmp: _run_loaded(tmp, _z(16, 128), _z(16, 128), _meta(16, 128)), TypeError,
        "pass tensor.cpu()"),
    "sparse_input": (lambda tmp: add(_z(16, 128).to_sparse(), _z(16, 128), _z(16, 128)),
                     TypeError, "expected a dense tensor, found a torch.sparse_coo one"),
    "negated_view_input": (lambda tmp: add(_z(16, 128)._neg_view(), _z(16, 128), _z(16, 128)),
                           TypeError, "pass tensor.resolve_neg()"),
    "output_sharing_memory": (
        lambda tmp: add(_z(16, 128), _z(16, 128), _z(128).expand(16, 128)), ValueError,
        "parameter 'out' is written, but its elements share memory"),
    "env_sim_debug_not_a_switch": (
        lambda tmp: _with_env("PYPTO_SIM_DEBUG", "banana"), ValueError,
        "PYPTO_SIM_DEBUG='banana' is not a switch"),
    "cache_not_writable": (_in_unwritable_cache, CacheStorageError,
                           "point PYPTO_CACHE_DIR at a directory you can write"),
    "deeply_nested_manifest": (lambda tmp: _nested_manifest(tmp), ArtifactError,
                               "nests objects and lists deeper than 32 levels"),
})


def _nested_manifest(tmp):
    art = _artifact(tmp)
    (art / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    return load_artifact(art)


@contextlib.contextmanager
def _env(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def _corrupt_manifest(tmp):
    art = _artifact(tmp)
    (art / "manifest.json").write_text("{ not json")
    return load_artifact(art)


def _with_env(name, value):
    with _env(name, value):
        return add(_z(16, 128), _z(16, 128), _z(16, 128), config=RunConfig(platform="a5sim",
                                                                           dump_passes=True))


@pytest.mark.parametrize("name", sorted(CALL_CASES))
def test_bad_call_gets_a_clear_error(name, tmp_path):
    fn, error, message = CALL_CASES[name]
    with pytest.raises(error) as info:
        fn(tmp_path)
    assert message in str(info.value), str(info.value)
    assert_user_facing(info.value)


@pytest.mark.parametrize("value", ["false", "Off"])
def test_sim_debug_switched_off_in_words_builds_the_plain_kernels(value, monkeypatch):
    monkeypatch.delenv("PYPTO_SIM_DEBUG", raising=False)
    plain = copy.compile(_z(8, 144), _z(8, 144)).output_dir
    monkeypatch.setenv("PYPTO_SIM_DEBUG", value)
    built = copy.compile(_z(8, 144), _z(8, 144)).output_dir
    assert next((built / "kernels").glob("*.so")).read_bytes() == \
        next((plain / "kernels").glob("*.so")).read_bytes()


def test_a_templates_dir_without_the_templates_is_refused_with_what_to_do(tmp_path,
                                                                          run_script):
    # Read when pypto is imported: a process of its own.
    proc = run_script(
        f"import sys\nsys.path.insert(0, {str(HERE_DIR)!r})\n"
        "import torch\n"
        "from catalogue import copy\n"
        "try:\n"
        "    copy(torch.zeros(8, 152), torch.zeros(8, 152))\n"
        "except ValueError as e:\n"
        "    print('REFUSED', e)\n",
        env={"PYPTO_TEMPLATES_DIR": str(tmp_path)})
    assert f"REFUSED PYPTO_TEMPLATES_DIR={str(tmp_path)!r}: {tmp_path} holds no kernel.cpp.j2; " \
           "point PYPTO_TEMPLATES_DIR at a copy of pypto's templates/ directory" in proc.stdout


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
