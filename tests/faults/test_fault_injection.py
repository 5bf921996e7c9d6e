"""Fault injection: killed builds, damaged artifacts and goldens, a damaged cache entry,
concurrent builders, and out-of-bounds kernels in a sim debug build.

Nothing may be served half-built or damaged: a rebuild after a kill gives a valid
artifact, every damaged file is refused with its name, a damaged cache entry is moved
aside and rebuilt.  Random choices come from fixed seeds, so every run injects the same
faults.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import warnings
import zlib
from pathlib import Path

import fault_program
import pytest
import torch

import pypto.language as pl
from pypto.runtime import ArtifactError, GoldenError, GoldenRecord, load_artifact, write_golden
from pypto.toolchain import ArtifactCache
from pypto.toolchain.cache import CorruptCacheEntryWarning, entry_damage

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint")


def _env(cache: Path, **extra) -> dict:
    return dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{HERE}", PYPTO_CACHE_DIR=str(cache),
                **extra)


def _builder(cache: Path, *scales: float) -> subprocess.Popen:
    """A separate process building the fault program (one process group, as a shell's job)."""
    return subprocess.Popen(
        [sys.executable, str(HERE / "fault_program.py"), *map(str, scales)],
        env=_env(cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )


def _entries(cache: Path) -> list[Path]:
    return sorted(p.parent for p in cache.glob("??/*/manifest.json"))


def _key(entry: Path) -> str:
    return entry.name


def _run(entry: Path) -> None:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(32, 128, generator=g), torch.randn(32, 128, generator=g)
    out = torch.zeros(32, 128)
    load_artifact(entry).run([x, y, out])
    assert torch.equal(out, fault_program.expected(x, y))


# --------------------------------------------------------------------------- kill -9


def test_a_build_killed_at_random_points_leaves_nothing_damaged_and_rebuilds(tmp_path):
    cache = tmp_path / "cache"
    start = time.perf_counter()
    reference = _builder(tmp_path / "timing")
    assert reference.wait(timeout=300) == 0, reference.stderr.read()
    duration = time.perf_counter() - start
    rng = random.Random(9)
    for _ in range(5):
        proc = _builder(cache)
        time.sleep(rng.uniform(0.1, duration))  # from the interpreter's start to publishing
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        # Whatever the kill interrupted, nothing damaged is ever visible as an entry.
        for entry in _entries(cache):
            assert entry_damage(entry, _key(entry)) is None
    proc = _builder(cache)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    entry = Path(stdout.split()[-1])
    assert _entries(cache) == [entry] and entry_damage(entry, _key(entry)) is None
    assert not list((cache / "tmp").iterdir()), "the rebuild removes a killed builder's staging"
    _run(entry)


# --------------------------------------------------------------------------- damaged files


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """A built artifact (a2a3sim) to copy and damage."""
    return Path(fault_program.build())


def _damage(path: Path, how: str, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncate":
        # At least two bytes go: a lost trailing newline alone would leave valid JSON.
        del data[rng.randrange(len(data) - 1):]
    else:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


def _seed(*parts: str) -> int:
    return zlib.crc32("/".join(parts).encode())


TRIALS = 10


@pytest.mark.parametrize("how", ["truncate", "flip"])
@pytest.mark.parametrize("target", ["kernel", "orchestration", "manifest"])
def test_a_damaged_artifact_file_is_refused_naming_it(artifact, tmp_path, target, how):
    relpath = {"kernel": next(p.relative_to(artifact).as_posix()
                              for p in (artifact / "kernels").glob("*.so")),
               "orchestration": "orchestration.so", "manifest": "manifest.json"}[target]
    rng = random.Random(_seed(target, how))
    for trial in range(TRIALS):
        copy = tmp_path / f"trial{trial}"
        shutil.copytree(artifact, copy)
        _damage(copy / relpath, how, rng)
        with pytest.raises(ArtifactError) as info:
            load_artifact(copy)
        assert relpath in str(info.value), str(info.value)


@pytest.mark.parametrize("how", ["truncate", "flip"])
@pytest.mark.parametrize("target", ["golden.json", "inputs.safetensors", "expected.safetensors"])
def test_a_damaged_golden_file_is_refused_naming_it(tmp_path, target, how):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(16, 32, generator=g)
    golden = tmp_path / "golden"
    write_golden(golden, {"x": x, "scale": 2.0}, {"out": x * 2.0}, rtol=1e-6, atol=0.0,
                 reason="one FP32 rounding", seed=3, generator="test")
    pristine = {p.name: p.read_bytes() for p in golden.iterdir()}
    rng = random.Random(_seed(target, how))
    for _ in range(TRIALS):
        for name, data in pristine.items():
            (golden / name).write_bytes(data)
        _damage(golden / target, how, rng)
        with pytest.raises(GoldenError) as info:
            GoldenRecord.read(golden).load_expected()
        assert str(info.value).startswith(str(golden / target)), str(info.value)


# --------------------------------------------------------------------------- the cache


@pytest.mark.parametrize("victim", ["kernel", "manifest"])
def test_a_damaged_cache_entry_is_quarantined_and_rebuilt(tmp_path, monkeypatch, victim):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path))
    entry = Path(fault_program.build(scale=7.0))
    path = next((entry / "kernels").glob("*.so")) if victim == "kernel" else \
        entry / "manifest.json"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    path.write_bytes(bytes(data))
    with pytest.warns(CorruptCacheEntryWarning, match=f"entry {entry.name} was damaged"):
        rebuilt = Path(fault_program.build(scale=7.0))
    assert rebuilt == entry and entry_damage(rebuilt, entry.name) is None
    quarantined = list((tmp_path / "quarantine").glob(f"{entry.name}.*"))
    assert len(quarantined) == 1
    assert (quarantined[0] / path.relative_to(entry)).read_bytes() == bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CorruptCacheEntryWarning)  # served as is from now on
        assert ArtifactCache(tmp_path).lookup(entry.name) == entry


def test_four_concurrent_builders_on_one_cache_all_succeed(tmp_path):
    cache = tmp_path / "cache"
    # Each builds the shared program and one of its own: contention and parallel keys.
    procs = [_builder(cache, 3.0, 10.0 + i) for i in range(4)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outputs]
    shared = {out.split()[0] for out, _ in outputs}
    assert len(shared) == 1
    entries = _entries(cache)
    assert len(entries) == 5
    for entry in entries:
        assert entry_damage(entry, _key(entry)) is None
    assert not list((cache / "tmp").iterdir()) and not (cache / "quarantine").exists()
    _run(Path(shared.pop()))


# --------------------------------------------------------------------------- bounds checks

# Out-of-bounds kernels run in a child process: should the checks ever stop working, the
# kernel corrupts that process's heap, not the test session's.
OUT_OF_BOUNDS = """
import os, sys
import torch
import pypto.language as pl
from pypto.runtime import KernelError, RunConfig
os.environ.pop("PYPTO_SIM_DEBUG", None)  # every sim build checks its windows


@pl.jit.incore
def rows_past_the_end(a: pl.Tensor[[16, 128], pl.FP32],
                      out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    t = pl.load(a, [0, 0], [16, 128])
    for i in pl.range(4):
        out = pl.store(t, [i * 8, 0], out)  # i = 1, 2, 3 write past the last row
    return out


@pl.jit.incore
def reads_before_the_start(a: pl.Tensor[[16, 128], pl.FP32],
                           out: pl.Out[pl.Tensor[[16, 128], pl.FP32]], k: pl.Scalar[pl.INT64]):
    out = pl.store(pl.load(a, [k, 0], [16, 128]), [0, 0], out)
    return out


def caught(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except KernelError as e:
        return str(e)
    return "NOT CAUGHT"


a, out = torch.randn(16, 128), torch.zeros(16, 128)
for platform in ("a2a3sim", "a5sim"):
    print("STORE", platform, caught(rows_past_the_end, a, out,
                                    config=RunConfig(platform=platform)))
print("LOAD", caught(reads_before_the_start, a, out, -4))
reads_before_the_start(a, out, 0)  # the fault record was cleared: an in-bounds run passes
print("CLEAN", torch.equal(out, a))
from pypto.runtime import ChipWorker
with ChipWorker(RunConfig(platform="a5sim")) as worker:
    built = rows_past_the_end.compile(a, out, config=RunConfig(platform="a5sim"))
    print("WORKER", caught(worker.run, built, a, out))
"""


@pytest.fixture(scope="module")
def out_of_bounds_report(tmp_path_factory):
    """What the simulator reported for the out-of-bounds kernels (child process)."""
    script = tmp_path_factory.mktemp("oob") / "out_of_bounds.py"
    script.write_text(OUT_OF_BOUNDS)
    proc = subprocess.run([sys.executable, str(script)],
                          env=_env(Path(os.environ["PYPTO_CACHE_DIR"])),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.splitlines()


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_an_out_of_bounds_store_is_caught_by_the_simulator_naming_the_kernel(
        out_of_bounds_report, platform):
    line = next(x for x in out_of_bounds_report if x.startswith(f"STORE {platform} "))
    assert "kernel 'rows_past_the_end'" in line
    assert "tstore of a [16, 128] window at [8, 0] lies outside the tensor [16, 128]" in line
    assert "(and 2 more)" in line and "The simulator skipped the access" in line


def test_an_out_of_bounds_load_is_caught_and_the_next_run_starts_clean(out_of_bounds_report):
    load = next(x for x in out_of_bounds_report if x.startswith("LOAD "))
    assert "'reads_before_the_start'" in load
    assert "tload of a [16, 128] window at [-4, 0] lies outside the tensor" in load
    assert "CLEAN True" in out_of_bounds_report


def test_a_chip_worker_run_reports_the_fault_too(out_of_bounds_report):
    line = next(x for x in out_of_bounds_report if x.startswith("WORKER "))
    assert "kernel 'rows_past_the_end'" in line and "lies outside the tensor" in line


def test_every_global_memory_access_of_the_simulator_is_bounds_checked():
    isa = (ROOT / "pypto/sim/include/pto/isa.hpp").read_text()
    assert '#include "bounds.hpp"' in isa
    for instruction in ("tload", "tstore", "tstore_atomic_add"):
        start = isa.index(f"inline void {instruction}(")
        body = isa[start:isa.index("\n}", start)]
        assert f'PTO_CHECK_WINDOW("{instruction}"' in body, instruction


def test_the_debug_build_is_another_artifact(monkeypatch):
    @pl.jit.incore
    def copy(a: pl.Tensor[[16, 128], pl.FP32], out: pl.Out[pl.Tensor[[16, 128], pl.FP32]],
             k: pl.Scalar[pl.INT64]):
        t = pl.load(a, [0, 0], [16, 128])
        out = pl.store(pl.add(t, pl.read(t, [k, 0])), [0, 0], out)
        return out

    args = (torch.zeros(16, 128), torch.zeros(16, 128), 0)
    monkeypatch.delenv("PYPTO_SIM_DEBUG", raising=False)
    plain = copy.compile(*args).output_dir
    monkeypatch.setenv("PYPTO_SIM_DEBUG", "1")
    debug = copy.compile(*args).output_dir
    assert plain != debug
    # Both check their windows; the debug build also checks element reads of tiles.
    debug_so = next((debug / "kernels").glob("*.so")).read_bytes()
    plain_so = next((plain / "kernels").glob("*.so")).read_bytes()
    assert b"pto_sim_fault" in debug_so and b"pto_sim_fault" in plain_so
    assert b"tgetval of element" in debug_so and b"tgetval of element" not in plain_so


def test_the_builder_records_the_digest_the_loader_checks(artifact):
    import json

    from pypto.runtime.manifest import manifest_digest  # the one digest both use

    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["manifest_sha256"] == manifest_digest(manifest)
    manifest["core"]["Vec"] //= 2  # what one flipped bit could do to a capacity
    assert manifest_digest(manifest) != manifest["manifest_sha256"]
