"""Builds the hand-written runtime fixtures once per session and assembles artifacts from them."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pypto.platform import get_platform
from pypto.runtime.abi import ABI_VERSION
from pypto.sim import INCLUDE_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CXXFLAGS = ["-O2", "-std=c++17", "-fPIC", "-shared", "-Wall", "-Werror"]


def tensor(name: str, dtype: str, shape: list[int], direction: str = "in") -> dict:
    """A manifest param entry for a tensor."""
    return {"name": name, "kind": "tensor", "dtype": dtype, "direction": direction, "shape": shape}


def scalar(name: str, dtype: str) -> dict:
    """A manifest param entry for a scalar."""
    return {"name": name, "kind": "scalar", "dtype": dtype, "direction": "in", "shape": []}


F32 = "FP32"
# Signatures of the kernels in fixtures/kernels.cpp (shapes are not checked by the runtime).
KERNEL_SIGNATURES = {
    "add_one": [tensor("x", F32, []), tensor("y", F32, [], "out")],
    "times_two": [tensor("x", F32, []), tensor("y", F32, [], "out")],
    "fill_value": [tensor("y", F32, [], "out"), scalar("value", F32), scalar("delay_us", "INT64")],
    "store_index": [tensor("y", "INT32", [1], "out"), scalar("index", "INT64")],
    "leave_unwritten": [tensor("f", F32, [], "out"), tensor("i", "INT32", [], "out")],
    "probe_core": [tensor("y", "INT32", [3], "out")],
    "touch2": [tensor("a", F32, []), tensor("b", F32, [])],
    "read_vec": [tensor("y", "INT32", [16], "out")],
    "scribble_vec": [tensor("y", "INT32", [16], "inout")],
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def fixture_binaries(tmp_path_factory) -> dict[str, Path]:
    """Every fixtures/*.cpp compiled (in parallel) to a shared object, keyed by stem."""
    out = tmp_path_factory.mktemp("runtime_fixtures")
    jobs = {}
    for source in sorted(FIXTURES.glob("*.cpp")):
        target = out / f"{source.stem}.so"
        command = ["g++", *CXXFLAGS, "-I", str(INCLUDE_DIR), "-I", str(FIXTURES)]
        jobs[source.stem] = (
            target,
            subprocess.Popen(
                [*command, str(source), "-o", str(target)],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        )
    for stem, (_, job) in jobs.items():
        output, _ = job.communicate()
        assert job.returncode == 0, f"compiling {stem}.cpp failed:\n{output}"
    return {stem: target for stem, (target, _) in jobs.items()}


def _scenario(kernels: list[str], params: list[dict], outputs: list[int]) -> dict:
    return {"kernels": kernels, "params": params, "outputs": outputs}


# Each orchestration fixture with the manifest it needs; `n` sizes its tensors.
SCENARIOS: dict[str, Callable[[int], dict]] = {
    "pipeline": lambda n: _scenario(
        ["add_one", "times_two"], [tensor("x", F32, [n, 8]), tensor("out", F32, [n, 8], "out")], [1]
    ),
    "waw": lambda n: _scenario(
        ["fill_value"], [tensor("out", F32, [n], "out"), scalar("delay_us", "INT64")], [0]
    ),
    "independent": lambda n: _scenario(
        ["fill_value"],
        [tensor("a", F32, [n], "out"), tensor("b", F32, [n], "out"), scalar("delay_us", "INT64")],
        [0, 1],
    ),
    "poison": lambda n: _scenario(
        ["leave_unwritten"],
        [tensor("f", F32, [n], "out"), tensor("i", "INT32", [n], "out")],
        [0, 1],
    ),
    "war": lambda n: _scenario(
        ["add_one", "fill_value"],
        [tensor("x", F32, [n], "inout"), tensor("y", F32, [n], "out"), scalar("add_dep", "INT64")],
        [1],
    ),
    "many": lambda n: _scenario(["store_index"], [tensor("out", "INT32", [n], "out")], [0]),
    "bad_dep": lambda n: _scenario(["fill_value"], [tensor("out", F32, [n], "out")], [0]),
    "bad_view": lambda n: _scenario(["fill_value"], [tensor("out", F32, [n], "out")], [0]),
    "probe_core": lambda n: _scenario(["probe_core"], [tensor("out", "INT32", [3], "out")], [0]),
    "on_chip": lambda n: _scenario(
        ["read_vec", "scribble_vec"], [tensor("out", "INT32", [16], "out")], [0]
    ),
    "script": lambda n: _scenario(
        ["touch2"], [tensor("buf", F32, [n], "inout"), tensor("script", "INT64", [12 * 64])], [0]
    ),
}


@pytest.fixture
def make_artifact(fixture_binaries, tmp_path) -> Callable[..., Path]:
    """Factory: a fresh artifact directory for one scenario, with a correct manifest.

    `make_artifact("pipeline", n=4)`; keyword arguments override top-level manifest fields,
    `on_chip={"Vec": 64}` records those on-chip high-water marks for every kernel.
    """
    platform = get_platform("a2a3sim")
    counter = iter(range(1_000_000))

    def make(scenario: str, n: int = 4, on_chip: dict | None = None,
             **manifest_overrides) -> Path:
        spec = SCENARIOS[scenario](n)
        root = tmp_path / f"{scenario}{next(counter)}"
        (root / "kernels").mkdir(parents=True)
        kernel_entries = []
        for name in spec["kernels"]:
            binary = root / "kernels" / f"{name}.so"
            shutil.copyfile(fixture_binaries["kernels"], binary)
            kernel_entries.append(
                {
                    "name": name,
                    "file": f"kernels/{name}.so",
                    "source": f"kernels/{name}.cpp",
                    "sha256": sha256(binary),
                    "core_type": "vector",
                    "signature": KERNEL_SIGNATURES[name],
                    **({"on_chip": on_chip} if on_chip is not None else {}),
                }
            )
        shutil.copyfile(fixture_binaries[f"orch_{scenario}"], root / "orchestration.so")
        manifest = {
            "schema_version": "1.0",
            "pypto_version": "0.1.0",
            "platform": platform.name,
            "backend": platform.backend.name,
            "abi_version": ABI_VERSION,
            "content_key": "0" * 64,
            "entry": scenario,
            "params": spec["params"],
            "outputs": spec["outputs"],
            "kernels": kernel_entries,
            "orchestration": {
                "file": "orchestration.so",
                "source": "orchestration.cpp",
                "sha256": sha256(root / "orchestration.so"),
                "entry": "pypto_orchestrate",
            },
            "core": {**platform.backend.capacities, "cores": platform.backend.vector_cores},
            "toolchain": {"id": "g++ (fixture)", "flags_digest": "0" * 64},
        }
        manifest.update(manifest_overrides)
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2))
        return root

    return make
