"""Device platforms wired to the vendor compiler, checked with a stand-in for bisheng.

The stand-in is a script this test writes: it validates the arguments pypto passes,
records every call and writes a placeholder object file.  No real device compiler runs.
"""

import hashlib
import json
import stat
import sys

import pytest

from pypto.codegen.sources import GeneratedSources, KernelSource
from pypto.platform import CompilerNotFoundError, find_compiler, get_platform
from pypto.sim import INCLUDE_DIR
from pypto.toolchain import CompileError, Toolchain, build_artifact

STAND_IN = """#!PYTHON
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("bisheng stand-in 0.0 (pypto test)")
    sys.exit(0)
assert "-c" in args and "-o" in args, args
source, output = args[args.index("-o") - 1], args[args.index("-o") + 1]
assert os.path.isfile(source), source
with open(LOG, "a") as log:
    log.write(json.dumps({"cwd": os.getcwd(), "args": args}) + "\\n")
with open(output, "wb") as out:
    out.write(b"device object for " + source.encode())
"""


def write_stand_in(path, log):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STAND_IN.replace("PYTHON", sys.executable).replace("LOG", repr(str(log))))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def recorded_calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    for var in ("PYPTO_DEVICE_CXX", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))


def test_pypto_device_cxx_selects_the_compiler(clean_env, tmp_path, monkeypatch):
    bisheng = write_stand_in(tmp_path / "tools" / "my-bisheng", tmp_path / "calls.log")
    monkeypatch.setenv("PYPTO_DEVICE_CXX", str(bisheng))
    toolchain = Toolchain.for_platform(get_platform("a2a3"))
    assert toolchain.compiler == bisheng
    assert toolchain.identity().startswith("bisheng stand-in 0.0 (pypto test)\n")


@pytest.mark.parametrize("root_var", ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"])
def test_cann_install_root_selects_the_compiler(clean_env, tmp_path, monkeypatch, root_var):
    root = tmp_path / "Ascend" / "latest"
    bisheng = write_stand_in(root / "compiler/ccec_compiler/bin/bisheng", tmp_path / "calls.log")
    monkeypatch.setenv(root_var, str(root))
    assert Toolchain.for_platform(get_platform("a5")).compiler == bisheng


def test_bisheng_on_path_is_the_last_resort(clean_env, tmp_path):
    bisheng = write_stand_in(tmp_path / "empty-path" / "bisheng", tmp_path / "calls.log")
    assert Toolchain.for_platform(get_platform("a5")).compiler == bisheng


def test_no_compiler_found_lists_every_unset_variable_and_place_looked_at(clean_env, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path / "cann"))
    with pytest.raises(CompilerNotFoundError) as info:
        find_compiler(get_platform("a5"))
    looked = str(info.value).split("looked at: ", 1)[1].split(". To fix", 1)[0]
    assert looked.split(", ")[:3] == [
        "$PYPTO_DEVICE_CXX (unset)", "$ASCEND_HOME_PATH/... (ASCEND_HOME_PATH unset)",
        str(tmp_path / "cann" / "compiler/ccec_compiler/bin/bisheng")]


def _sources():
    def kernel(name, core_type):
        cpp = f'#include "pto/abi.h"\nextern "C" void {name}(PtoCore*, const PtoArg*) {{}}\n'
        return KernelSource(name, cpp, core_type, ())

    return GeneratedSources(
        entry="f",
        params=(),
        outputs=(),
        kernels=(kernel("f_incore_0", "vector"), kernel("f_incore_1", "cube")),
        orchestration_cpp="int pypto_orchestrate() { return 0; }\n",
    )


@pytest.mark.parametrize(("platform_name", "arch"), [("a2a3", "dav-c220"), ("a5", "dav-c310")])
def test_device_build_compiles_objects_with_per_core_arch_flags(
    clean_env, tmp_path, monkeypatch, platform_name, arch
):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PYPTO_DEVICE_CXX", str(write_stand_in(tmp_path / "bisheng", log)))
    platform = get_platform(platform_name)
    out = tmp_path / "artifact"
    build_artifact(_sources(), platform, Toolchain.for_platform(platform), "0" * 64, out)

    calls = {call["args"][-1]: call for call in recorded_calls(log)}
    assert sorted(calls) == ["f_incore_0.o", "f_incore_1.o", "orchestration.o"]
    vector, cube = calls["f_incore_0.o"]["args"], calls["f_incore_1.o"]["args"]
    orchestration = calls["orchestration.o"]["args"]
    assert f"--cce-aicore-arch={arch}-vec" in vector and "--cce-aicore-only" in vector
    assert f"--cce-aicore-arch={arch}-cube" in cube
    assert not any(arg.startswith("--cce-aicore") for arg in orchestration)
    assert all(f"-I{INCLUDE_DIR}" in call["args"] for call in calls.values())

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["platform"] == platform_name
    assert manifest["toolchain"]["id"] == "bisheng stand-in 0.0 (pypto test)"
    assert [k["file"] for k in manifest["kernels"]] == [
        "kernels/f_incore_0.o",
        "kernels/f_incore_1.o",
    ]
    assert manifest["orchestration"]["file"] == "orchestration.o"
    for kernel in manifest["kernels"]:
        assert kernel["sha256"] == hashlib.sha256((out / kernel["file"]).read_bytes()).hexdigest()


def test_device_compiler_failure_is_a_compile_error(clean_env, tmp_path, monkeypatch):
    failing = tmp_path / "bisheng"
    failing.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'bisheng 0.0' && exit 0\n"
                       "echo 'error: unsupported intrinsic' >&2\nexit 3\n")
    failing.chmod(failing.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYPTO_DEVICE_CXX", str(failing))
    platform = get_platform("a2a3")
    with pytest.raises(CompileError, match="unsupported intrinsic") as info:
        build_artifact(
            _sources(), platform, Toolchain.for_platform(platform), "0" * 64, tmp_path / "a"
        )
    assert info.value.returncode == 3
    assert not (tmp_path / "a" / "manifest.json").exists()
