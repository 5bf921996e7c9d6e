"""Device platforms: no vendor compiler → stop at once; a stand-in compiler is driven right.

The stand-in is a script this test writes into its temporary directory: it checks the
arguments pypto passes, records every call and writes a placeholder object.  No real
device compiler runs and no device binary is shipped.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from scons_project import actions

from pypto.platform import get_platform
from pypto.runtime import DeviceUnavailableError, load_library
from pypto.toolchain import Toolchain

STAND_IN = """#!PYTHON
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("bisheng stand-in 0.0 (pypto test)")
    sys.exit(0)
if "-c" not in args or "-o" not in args or not args[args.index("-o") - 1].endswith(".cpp"):
    sys.exit(f"stand-in: unexpected arguments {args}")
source, output = args[args.index("-o") - 1], args[args.index("-o") + 1]
if not os.path.isfile(source):
    sys.exit(f"stand-in: no source {source} in {os.getcwd()}")
with open(LOG, "a") as log:
    log.write(json.dumps({"source": source, "output": output, "args": args}) + "\\n")
with open(output, "wb") as out:
    out.write(b"stand-in object for " + source.encode())
"""


def _clean_env(tmp_path) -> dict[str, str]:
    # No CANN install, and a PATH without bisheng on it.
    return {"PYPTO_DEVICE_CXX": "", "ASCEND_HOME_PATH": "", "ASCEND_TOOLKIT_HOME": "",
            "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])}


def test_device_platform_without_its_compiler_fails_at_once_naming_what_is_missing(
        make_project, tmp_path):
    project = make_project(specs=2)
    proc = project.scons("platform=a5", ok=False, **_clean_env(tmp_path))
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "platform 'a5' needs the compiler 'bisheng', which was not found" in output
    assert "PYPTO_DEVICE_CXX" in output and "platform='a5sim'" in output
    assert not (project.build / "a5").exists() and not (project.build / "goldens").exists()
    # At once: while SCons reads the SConstruct, before any spec is read or step planned.
    assert "reading spec" not in output and "done reading SConscript" not in output


def test_stand_in_device_compiler_is_invoked_with_the_platforms_arguments(make_project, tmp_path):
    platform = "a5"
    log = tmp_path / "bisheng-calls.log"
    bisheng = tmp_path / "tools" / "bisheng"
    bisheng.parent.mkdir()
    bisheng.write_text(STAND_IN.replace("PYTHON", sys.executable).replace("LOG", repr(str(log))))
    bisheng.chmod(0o755)
    project = make_project(specs=2, distinct=True)
    env = {**_clean_env(tmp_path), "PYPTO_DEVICE_CXX": str(bisheng)}
    proc = project.scons(f"platform={platform}", "-j2", **env)
    assert actions(proc.stdout, "artifact") == [f"k00/v for {platform}", f"k01/v for {platform}"]

    calls = [json.loads(line) for line in log.read_text().splitlines()]
    toolchain = Toolchain(get_platform(platform), bisheng)
    kernels = [c for c in calls if c["source"] != "orchestration.cpp"]
    orchestrations = [c for c in calls if c["source"] == "orchestration.cpp"]
    assert len(kernels) == 2 and len(orchestrations) == 2
    for call in kernels:
        flags = list(toolchain.flags("vector"))
        assert call["args"][: len(flags)] == flags
        assert call["output"] == call["source"].replace(".cpp", ".o")
    for call in orchestrations:
        flags = list(toolchain.flags(None))
        assert call["args"][: len(flags)] == flags and call["output"] == "orchestration.o"
    arch = get_platform(platform).backend.device_arch["vector"]
    assert all(f"--cce-aicore-arch={arch}" in c["args"] for c in kernels)

    # The library indexes the device objects and verifies them; running needs an NPU.
    library = load_library(project.build, platform=platform, allow_unsigned=True)
    variant = library["k00"]["v"]
    assert variant.manifest.platform == platform
    with pytest.raises(DeviceUnavailableError):
        variant.load()


def test_check_on_a_device_platform_is_refused_before_building(make_project, tmp_path):
    project = make_project(specs=1)
    bisheng = tmp_path / "bisheng"
    bisheng.write_text(STAND_IN.replace("PYTHON", sys.executable).replace("LOG", "'/dev/null'"))
    bisheng.chmod(0o755)
    proc = project.scons("platform=a5", "check", ok=False,
                         **{**_clean_env(tmp_path), "PYPTO_DEVICE_CXX": str(bisheng)})
    assert proc.returncode != 0
    message = "needs an NPU this host does not have; check on a2a3sim or a5sim"
    assert message in proc.stdout + proc.stderr
