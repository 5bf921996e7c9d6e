"""build_artifact on hand-written sources: files, binaries that load, and the manifest."""

import ctypes
import hashlib
import json
import os
import stat
import sys
from pathlib import Path

import pytest

import pypto
from pypto.codegen.sources import GeneratedSources, KernelSource, ParamSpec
from pypto.platform import get_platform
from pypto.runtime.abi import ABI_VERSION
from pypto.sim import INCLUDE_DIR
from pypto.toolchain import (
    ArtifactCache,
    CompileError,
    Toolchain,
    build_artifact,
    content_key,
)

KEY = content_key([("test", "build artifact")])
X = ParamSpec("x", "tensor", "FP32", "in", (16, 16))
Y = ParamSpec("y", "tensor", "FP32", "out", (16, 16))
SCALE = ParamSpec("scale", "scalar", "FP32")

KERNEL_CPP = """#include "pto/abi.h"
#include <assert.h>
extern "C" void NAME(PtoCore* core, const PtoArg* args) {
    assert(core != 0);
    (void)args;
    core->vec[0] = VALUE;
}
"""
ORCHESTRATION_CPP = """#include "pto/abi.h"
extern "C" int32_t pypto_orchestrate(const PtoRuntimeApi* api, const PtoArg* params) {
    (void)params;
    return api ? 0 : 7;
}
"""


def kernel(name: str, value: int, core_type: str = "vector") -> KernelSource:
    cpp = KERNEL_CPP.replace("NAME", name).replace("VALUE", str(value))
    return KernelSource(name, cpp, core_type, (X, Y))


def tiny_sources(**changes) -> GeneratedSources:
    fields = {
        "entry": "scale_add",
        "params": (X, Y, SCALE),
        "outputs": (1,),
        "kernels": (kernel("scale_add_incore_0", 42), kernel("scale_add_incore_1", 43, "cube")),
        "orchestration_cpp": ORCHESTRATION_CPP,
        "extra_files": {"report/perf_hints.log": "no hints\n"},
    }
    return GeneratedSources(**{**fields, **changes})


@pytest.fixture
def sim(monkeypatch):
    monkeypatch.delenv("PYPTO_CXX", raising=False)
    platform = get_platform("a2a3sim")
    return platform, Toolchain.for_platform(platform)


@pytest.fixture
def artifact(sim, tmp_path):
    platform, toolchain = sim
    build_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path / "artifact")
    return tmp_path / "artifact"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sources_and_extra_files_are_written(artifact):
    assert (
        (artifact / "kernels/scale_add_incore_0.cpp").read_text().startswith('#include "pto/abi.h"')
    )
    assert (artifact / "orchestration.cpp").read_text() == ORCHESTRATION_CPP
    assert (artifact / "report/perf_hints.log").read_text() == "no hints\n"


def test_manifest_records_the_artifact(artifact, sim):
    _, toolchain = sim
    manifest = json.loads((artifact / "manifest.json").read_text())
    signature = [X.to_json(), Y.to_json()]
    content = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert manifest == {
        "manifest_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "schema_version": "1.2",
        "pypto_version": pypto.__version__,
        "platform": "a2a3sim",
        "backend": "Ascend910B",
        "abi_version": ABI_VERSION,
        "content_key": KEY,
        "entry": "scale_add",
        "params": [X.to_json(), Y.to_json(), SCALE.to_json()],
        "outputs": [1],
        "kernels": [
            {
                "name": "scale_add_incore_0",
                "file": "kernels/scale_add_incore_0.so",
                "source": "kernels/scale_add_incore_0.cpp",
                "sha256": sha256(artifact / "kernels/scale_add_incore_0.so"),
                "core_type": "vector",
                "signature": signature,
            },
            {
                "name": "scale_add_incore_1",
                "file": "kernels/scale_add_incore_1.so",
                "source": "kernels/scale_add_incore_1.cpp",
                "sha256": sha256(artifact / "kernels/scale_add_incore_1.so"),
                "core_type": "cube",
                "signature": signature,
            },
        ],
        "orchestration": {
            "file": "orchestration.so",
            "source": "orchestration.cpp",
            "sha256": sha256(artifact / "orchestration.so"),
            "entry": "pypto_orchestrate",
        },
        "core": {
            "Vec": 196608,
            "Mat": 524288,
            "Left": 65536,
            "Right": 65536,
            "Acc": 131072,
            "Bias": 1024,
            "LeftScale": 0,
            "RightScale": 0,
            "cores": 48,
        },
        "toolchain": {"id": toolchain.version(), "flags_digest": toolchain.flags_digest()},
    }


def test_manifest_text_is_canonical_without_paths_or_times(artifact, tmp_path):
    text = (artifact / "manifest.json").read_text()
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2) + "\n"
    assert str(tmp_path) not in text and "/" + "tmp" not in text


class PtoCore(ctypes.Structure):
    _fields_ = [
        (name, ctypes.POINTER(ctypes.c_uint8)) for name in ("vec", "mat", "left", "right", "acc")
    ]
    _fields_ += [("core_id", ctypes.c_int32)]


def test_kernel_and_orchestration_objects_load_and_run(artifact):
    vec = (ctypes.c_uint8 * 16)()
    core = PtoCore(vec=ctypes.cast(vec, ctypes.POINTER(ctypes.c_uint8)), core_id=0)
    for name, value in [("scale_add_incore_0", 42), ("scale_add_incore_1", 43)]:
        lib = ctypes.CDLL(str(artifact / f"kernels/{name}.so"))
        getattr(lib, name)(ctypes.byref(core), None)
        assert vec[0] == value
    orchestrate = ctypes.CDLL(str(artifact / "orchestration.so")).pypto_orchestrate
    orchestrate.restype = ctypes.c_int32
    assert orchestrate(None, None) == 7


def test_binaries_are_reproducible_and_hold_no_build_path(sim, tmp_path):
    platform, toolchain = sim
    for name in ("one", "two"):
        build_artifact(tiny_sources(), platform, toolchain, KEY, tmp_path / name)
    one, two = (json.loads((tmp_path / n / "manifest.json").read_text()) for n in ("one", "two"))
    assert one == two
    for binary in (tmp_path / "one").rglob("*.so"):
        assert str(tmp_path).encode() not in binary.read_bytes()
        assert str(INCLUDE_DIR).encode() not in binary.read_bytes()


def test_a_kernel_that_does_not_compile_raises_compile_error_and_writes_no_manifest(sim, tmp_path):
    platform, toolchain = sim
    broken = KernelSource("broken", 'extern "C" void broken() { undeclared(); }\n', "vector", ())
    sources = tiny_sources(kernels=(kernel("fine", 1), broken))
    with pytest.raises(CompileError, match="undeclared") as info:
        build_artifact(sources, platform, toolchain, KEY, tmp_path / "a")
    assert info.value.source == tmp_path / "a" / "kernels" / "broken.cpp"
    assert not (tmp_path / "a" / "manifest.json").exists()


# A compiler stand-in that waits (up to 5 s) until another compile runs beside it and
# then leaves a `peer_seen` marker; a serial build would never leave one.
OVERLAP_PROBE = """#!PYTHON
import os, sys, time
if sys.argv[1:] == ["--version"]:
    print("overlap probe 1.0")
    sys.exit(0)
running, seen = os.path.join(DIR, "running"), os.path.join(DIR, "peer_seen")
mine = os.path.join(running, str(os.getpid()))
open(mine, "w").close()
deadline = time.monotonic() + 5
while time.monotonic() < deadline and not os.path.exists(seen):
    if len(os.listdir(running)) >= 2:
        open(seen, "w").close()
    time.sleep(0.01)
os.remove(mine)
open(sys.argv[sys.argv.index("-o") + 1], "wb").write(b"so")
"""


def test_kernels_compile_in_parallel(tmp_path, monkeypatch):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs")
    (tmp_path / "running").mkdir()
    probe = tmp_path / "probe-cxx"
    probe.write_text(
        OVERLAP_PROBE.replace("PYTHON", sys.executable).replace("DIR", repr(str(tmp_path)))
    )
    probe.chmod(probe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PYPTO_CXX", str(probe))
    platform = get_platform("a5sim")
    build_artifact(tiny_sources(), platform, Toolchain.for_platform(platform), KEY, tmp_path / "a")
    assert (tmp_path / "peer_seen").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kernels": (kernel("k", 1), kernel("k", 2))}, "repeated: \\['k'\\]"),
        ({"kernels": (KernelSource("../k", "", "vector", ()),)}, "not a C identifier"),
        ({"extra_files": {"../outside.log": ""}}, "relative path inside"),
        ({"extra_files": {"/abs.log": ""}}, "relative path inside"),
        ({"extra_files": {"manifest.json": "{}"}}, "relative path inside"),
        ({"extra_files": {"orchestration.so": ""}}, "relative path inside"),
    ],
)
def test_malformed_sources_are_rejected_before_compiling(sim, tmp_path, change, message):
    platform, toolchain = sim
    with pytest.raises(ValueError, match=message):
        build_artifact(tiny_sources(**change), platform, toolchain, KEY, tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_toolchain_of_another_platform_is_rejected(sim, tmp_path):
    _, toolchain = sim
    with pytest.raises(ValueError, match="'a2a3sim', not 'a5sim'"):
        build_artifact(tiny_sources(), get_platform("a5sim"), toolchain, KEY, tmp_path / "a")


def test_cache_publishes_a_built_artifact(sim, tmp_path):
    platform, toolchain = sim
    cache = ArtifactCache(tmp_path / "cache")
    entry = cache.publish(
        KEY, lambda out: build_artifact(tiny_sources(), platform, toolchain, KEY, out)
    )
    assert cache.lookup(KEY) == entry
    manifest = json.loads((entry / "manifest.json").read_text())
    assert manifest["orchestration"]["sha256"] == sha256(entry / "orchestration.so")
