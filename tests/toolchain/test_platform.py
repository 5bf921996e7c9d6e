"""build_rules/ as objects: the four platforms, their backends' facts, and bad input."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pypto.platform import (
    PLATFORM_NAMES,
    BuildRuleError,
    build_rules_dir,
    default_platform,
    get_backend,
    get_platform,
)

KIB = 1024


def test_platform_names_list_simulators_then_cpu_models_then_devices():
    assert PLATFORM_NAMES == ("a2a3sim", "a5sim", "a2a3cpu", "a5cpu", "a2a3", "a5")


@pytest.mark.parametrize(
    ("name", "backend", "kind", "runs_here"),
    [
        ("a2a3sim", "Ascend910B", "sim", True),
        ("a5sim", "Ascend950", "sim", True),
        ("a2a3cpu", "Ascend910B", "cpu_model", True),
        ("a5cpu", "Ascend950", "cpu_model", True),
        ("a2a3", "Ascend910B", "device", False),
        ("a5", "Ascend950", "device", False),
    ],
)
def test_each_platform_names_its_backend_and_kind(name, backend, kind, runs_here):
    platform = get_platform(name)
    assert (platform.name, platform.backend.name, platform.kind) == (name, backend, kind)
    assert platform.runs_here is runs_here and platform.is_sim is (kind == "sim")
    assert platform.device_code is (kind != "sim")


def test_unknown_platform_raises_value_error_listing_all_four():
    with pytest.raises(ValueError) as info:
        get_platform("a3sim")
    message = str(info.value)
    assert "'a3sim'" in message
    for name in ("a2a3sim", "a5sim", "a2a3", "a5"):
        assert name in message


def test_the_default_platform_is_pypto_platform_else_a2a3sim(monkeypatch):
    assert default_platform() == "a2a3sim"
    monkeypatch.setenv("PYPTO_PLATFORM", "a5sim")
    assert default_platform() == "a5sim"


def test_ir_compile_without_a_platform_builds_for_the_default_one(monkeypatch):
    import torch

    import pypto.language as pl
    from pypto import ir

    @pl.jit
    def double(x: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(x, x)
        return out

    monkeypatch.setenv("PYPTO_PLATFORM", "a5sim")
    program = double.frontend(torch.zeros(16, 128), torch.zeros(16, 128))
    assert ir.compile(program, dump_passes=False).platform == "a5sim"


def test_ascend910b_capacities_match_backends_md():
    assert get_backend("Ascend910B").capacities == {
        "Vec": 192 * KIB,
        "Mat": 512 * KIB,
        "Left": 64 * KIB,
        "Right": 64 * KIB,
        "Acc": 128 * KIB,
        "Bias": 1 * KIB,  # not in BACKENDS.md: pto-isa's PTO_BIAS_SIZE_BYTES
        "LeftScale": 0,  # no MX scale buffers (pto-isa's PTO_SCALELEFT_SIZE_BYTES)
        "RightScale": 0,
    }


def test_ascend950_capacities_match_backends_md():
    assert get_backend("Ascend950").capacities == {
        "Vec": 256 * KIB,
        "Mat": 512 * KIB,
        "Left": 64 * KIB,
        "Right": 64 * KIB,
        "Acc": 256 * KIB,
        "Bias": 4 * KIB,
        "LeftScale": 4 * KIB,  # pto-isa's PTO_SCALELEFT_SIZE_BYTES / PTO_SCALERIGHT_SIZE_BYTES
        "RightScale": 4 * KIB,
    }


def test_ascend910b_cast_table_matches_backends_md():
    assert get_backend("Ascend910B").native_casts == {
        "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64"),
        "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "INT4"),
        "BF16": ("FP32", "INT32"),
        "INT16": ("FP16", "FP32"),
        "INT32": ("FP32", "INT16", "INT64", "FP16"),
        "INT64": ("FP32", "INT32"),
        "UINT8": ("FP16",),
        "INT8": ("FP16",),
        "INT4": ("FP16",),
    }


def test_ascend950_cast_table_matches_backends_md():
    assert get_backend("Ascend950").native_casts == {
        "FP32": ("FP16", "BF16", "INT16", "INT32", "INT64", "FP8E4M3FN", "FP8E5M2", "HF8"),
        "FP16": ("FP32", "INT32", "INT16", "INT8", "UINT8", "HF8"),
        "BF16": ("FP32", "INT32", "FP16", "FP4"),
        "INT16": ("FP16", "FP32", "UINT8", "UINT32", "INT32"),
        "INT32": ("FP32", "INT16", "INT64", "UINT16", "UINT8"),
        "INT64": ("FP32", "INT32"),
        "UINT8": ("FP16", "UINT16"),
        "INT8": ("FP16", "INT16", "INT32"),
        "UINT32": ("UINT8", "UINT16", "INT16"),
        "FP8E4M3FN": ("FP32",),
        "FP8E5M2": ("FP32",),
        "HF8": ("FP32",),
        "FP4": ("BF16",),
    }


def test_bf16_atomic_add_is_legal_only_on_ascend910b():
    assert "BF16" in get_backend("Ascend910B").atomic_add_dtypes
    assert "BF16" not in get_backend("Ascend950").atomic_add_dtypes
    for backend in ("Ascend910B", "Ascend950"):
        assert {"FP32", "FP16", "INT32", "INT16", "INT8"} <= set(
            get_backend(backend).atomic_add_dtypes
        )


def test_innermost_hint_and_core_counts_per_backend():
    b910, b950 = get_backend("Ascend910B"), get_backend("Ascend950")
    assert (b910.innermost_hint_bytes, b910.cube_cores, b910.vector_cores) == (512, 24, 48)
    assert (b950.innermost_hint_bytes, b950.cube_cores, b950.vector_cores) == (128, 36, 72)


def test_device_arch_names_per_backend():
    assert get_backend("Ascend910B").device_arch == {
        "vector": "dav-c220-vec",
        "cube": "dav-c220-cube",
    }
    assert get_backend("Ascend950").device_arch == {
        "vector": "dav-c310-vec",
        "cube": "dav-c310-cube",
    }


def test_sim_platforms_build_shared_objects_with_the_host_compiler():
    compiler = get_platform("a2a3sim").compiler
    assert (compiler.cxx, compiler.env, compiler.output_suffix) == ("g++", ("PYPTO_CXX",), ".so")
    assert {"-c", "-O2", "-std=c++17", "-fPIC"} <= set(compiler.flags)
    assert compiler.link_flags == ("-shared",)  # objects link into the shared object


def test_device_platforms_build_objects_with_bisheng():
    compiler = get_platform("a5").compiler
    assert (compiler.cxx, compiler.env, compiler.output_suffix) == (
        "bisheng",
        ("PYPTO_DEVICE_CXX",),
        ".o",
    )
    assert compiler.home_env == ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
    assert "-c" in compiler.flags and compiler.link_flags == ()  # the object is the binary
    assert "compiler/ccec_compiler/bin/bisheng" in compiler.home_relpaths


def test_platforms_are_hashable_and_cached():
    assert get_platform("a5sim") is get_platform("a5sim")
    assert len({get_platform("a5sim"), get_platform("a5sim"), get_platform("a5")}) == 2


def _copy_rules(tmp_path, monkeypatch) -> Path:
    rules = tmp_path / "build_rules"
    shutil.copytree(build_rules_dir(), rules)
    monkeypatch.setenv("PYPTO_BUILD_RULES", str(rules))
    return rules


def test_build_rules_env_var_points_at_another_directory(tmp_path, monkeypatch):
    rules = _copy_rules(tmp_path, monkeypatch)
    path = rules / "backends" / "Ascend950.toml"
    path.write_text(
        path.read_text().replace("innermost_hint_bytes = 128", "innermost_hint_bytes = 64")
    )
    assert get_platform("a5sim").backend.innermost_hint_bytes == 64


def test_malformed_build_rule_names_file_and_key(tmp_path, monkeypatch):
    rules = _copy_rules(tmp_path, monkeypatch)
    path = rules / "backends" / "Ascend910B.toml"
    path.write_text(path.read_text().replace("Acc = 131072", 'Acc = "lots"'))
    with pytest.raises(BuildRuleError, match=r"Ascend910B\.toml: 'capacities\.Acc' must be"):
        get_platform("a2a3sim")


def test_cpu_model_rules_fix_a_target_per_machine_and_compiler_kind():
    targets = get_platform("a5cpu").compiler.targets
    assert targets["x86_64"]["ziglang"] == ("-target", "x86_64-linux-gnu.2.31", "-mcpu=baseline")
    assert targets["x86_64"]["gcc"] == ("-march=x86-64", "-mtune=generic")
    assert set(targets) == {"x86_64", "aarch64"} and get_platform("a5sim").compiler.targets == {}


def test_a_malformed_target_row_names_file_and_key(tmp_path, monkeypatch):
    rules = _copy_rules(tmp_path, monkeypatch)
    path = rules / "platforms" / "a2a3cpu.toml"
    path.write_text(path.read_text().replace('gcc = ["-march=armv8-a", "-mtune=generic"]',
                                             'gcc = "-march=armv8-a"'))
    with pytest.raises(BuildRuleError,
                       match=r"a2a3cpu\.toml: 'compiler\.target\.aarch64\.gcc' must be a list"):
        get_platform("a2a3cpu")


def test_missing_capacity_is_reported(tmp_path, monkeypatch):
    rules = _copy_rules(tmp_path, monkeypatch)
    path = rules / "backends" / "Ascend950.toml"
    path.write_text(path.read_text().replace("Left = 65536", ""))
    with pytest.raises(BuildRuleError, match=r"table 'capacities' lacks \['Left'\]"):
        get_platform("a5")


def test_platform_module_imports_only_the_standard_library():
    code = (
        "import sys; before = set(sys.modules); import pypto.platform; "
        "print(' '.join(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    ).stdout.split()
    assert "pypto" in loaded
    foreign = [m for m in loaded if m not in sys.stdlib_module_names and m != "pypto"]
    assert foreign == []
