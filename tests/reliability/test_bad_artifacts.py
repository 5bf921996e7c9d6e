"""Forged and damaged artifacts, a damaged or unwritable cache, and a binary swapped
between its check and its load: refused naming the file, healed, or harmless."""

from __future__ import annotations

import errno
import json
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from catalogue import artifact, assert_user_facing, copy, edit_manifest, zeros

import pypto.language as pl
from pypto.runtime import ArtifactError, load_artifact, loader, verify_artifact
from pypto.runtime.manifest import ON_CHIP_SPACES
from pypto.toolchain import (
    ArtifactCache,
    CacheStorageError,
    CorruptCacheEntryWarning,
    content_key,
)


def _capacities_of_16_bytes(raw):
    raw["core"] = {**dict.fromkeys(ON_CHIP_SPACES, 16), "cores": raw["core"]["cores"]}


def _mark_over_capacity(raw):
    raw["kernels"][0]["on_chip"]["Vec"] = raw["core"]["Vec"] + 64


def _many_cores(raw):
    raw["core"]["cores"] = 1_000_000


# A forger who recomputes the manifest's digest: the digest catches accidents only, so the
# loader checks what the simulated cores are sized from against the platform.
FORGED_MANIFESTS = {
    "capacities_of_16_bytes": (_capacities_of_16_bytes,
                               "are not those of 'a2a3sim' ({'Vec': 196608"),
    "mark_over_capacity": (_mark_over_capacity, "bytes of on-chip memory, more than 'a2a3sim'"),
    "a_million_cores": (_many_cores, "1000000 cores) are not those of 'a2a3sim'"),
}


@pytest.mark.parametrize("name", sorted(FORGED_MANIFESTS))
def test_a_manifest_beyond_the_platforms_limits_is_refused_before_anything_runs(name,
                                                                               tmp_path):
    forge, message = FORGED_MANIFESTS[name]
    art = artifact(tmp_path)
    edit_manifest(art, forge)
    for check in (verify_artifact, load_artifact):
        with pytest.raises(ArtifactError) as info:
            check(art)
        assert str(info.value).startswith(f"{art / 'manifest.json'}: "), str(info.value)
        assert message in str(info.value), str(info.value)
        assert_user_facing(info.value)


def _swapped_kernel(subtract: bool):
    """`swapped`, adding or subtracting: two artifacts whose kernels have the same file
    name and symbol, and different code."""

    @pl.jit
    def swapped(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.sub(a, b) if subtract else pl.add(a, b)
        return out

    return swapped


def test_a_binary_swapped_between_its_check_and_its_load_does_not_run(tmp_path, monkeypatch):
    a, b = torch.randn(16, 128), torch.randn(16, 128)
    adding = tmp_path / "adding"
    shutil.copytree(_swapped_kernel(False).compile(a, b, zeros(16, 128)).output_dir, adding)
    subtracting = _swapped_kernel(True).compile(a, b, zeros(16, 128)).output_dir
    [kernel] = (adding / "kernels").glob("*.so")
    other = subtracting / "kernels" / kernel.name
    assert other.read_bytes() != kernel.read_bytes()

    checked = loader._verified_binary

    def check_then_swap(artifact_dir, file, expected):
        binary = checked(artifact_dir, file, expected)
        if file.startswith("kernels/"):
            shutil.copy(other, artifact_dir / file)  # the attacker's move, after the check
        return binary

    monkeypatch.setattr(loader, "_verified_binary", check_then_swap)
    monkeypatch.setattr(loader, "_MAPPED", {})  # map afresh, not from an earlier load
    program = load_artifact(adding)
    assert kernel.read_bytes() == other.read_bytes()  # the file is the other kernel now
    out = torch.zeros(16, 128)
    program.run([a, b, out])
    assert torch.equal(out, a + b)  # and the kernel that was checked is the one that ran


def test_a_loaded_binary_is_private_to_the_process_and_sealed(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "_MAPPED", {})
    program = load_artifact(artifact(tmp_path))
    maps = Path("/proc/self/maps").read_text()
    assert "memfd:pypto:orchestration.so" in maps
    assert not list(tmp_path.glob("**/pypto-load-*"))
    out = torch.zeros(16, 128)
    program.run([torch.ones(16, 128), torch.ones(16, 128), out])
    assert torch.equal(out, torch.full((16, 128), 2.0))


# --------------------------------------------------------------------------- the cache


def _cached(cols: int):
    """The cache entry of `copy` on [8, cols] (each test its own width: it damages it)."""
    return copy.compile(zeros(8, cols), zeros(8, cols)).output_dir


def _write_raw(entry, edit):
    path = entry / "manifest.json"
    raw = json.loads(path.read_text())
    edit(raw)
    path.write_text(json.dumps(raw, sort_keys=True, indent=2) + "\n")


def _flip_kernel(entry):
    [kernel] = (entry / "kernels").glob("*.so")
    data = bytearray(kernel.read_bytes())
    data[len(data) // 2] ^= 1
    kernel.write_bytes(bytes(data))


# Every damage the loader refuses, including to the digest field itself.
CACHE_DAMAGE = {
    "digest_field_removed": (200, lambda e: _write_raw(e, lambda r: r.pop("manifest_sha256")),
                             "lacks 'manifest_sha256'"),
    "digest_field_not_a_string": (208, lambda e: _write_raw(
        e, lambda r: r.update(manifest_sha256=5)), "manifest_sha256 mismatch"),
    "capacities_forged": (216, lambda e: edit_manifest(e, _capacities_of_16_bytes),
                          "are not those of 'a2a3sim'"),
    "kernel_bit_flipped": (224, _flip_kernel, ".so: sha256 mismatch: manifest.json records"),
    "manifest_nested_deeply": (232, lambda e: (e / "manifest.json").write_text("[" * 10_000),
                               "nests objects and lists deeper"),
}


@pytest.mark.parametrize("name", sorted(CACHE_DAMAGE))
def test_a_damaged_cache_entry_is_quarantined_and_rebuilt_once_with_a_warning(name):
    cols, damage, reason = CACHE_DAMAGE[name]
    entry = _cached(cols)
    damage(entry)
    with pytest.warns(CorruptCacheEntryWarning) as caught:
        rebuilt = _cached(cols)
    [warning] = [w for w in caught if issubclass(w.category, CorruptCacheEntryWarning)]
    assert f"entry {entry.name} was damaged on disk" in str(warning.message)
    assert reason in str(warning.message), str(warning.message)
    assert rebuilt == entry and verify_artifact(rebuilt).content_key == entry.name
    quarantined = list((entry.parents[1] / "quarantine").glob(f"{entry.name}.*"))
    assert quarantined, "the damaged entry was not kept for inspection"
    with warnings.catch_warnings():
        warnings.simplefilter("error", CorruptCacheEntryWarning)
        assert _cached(cols) == entry  # healed: served without another warning
    out = torch.zeros(8, cols)
    copy(torch.ones(8, cols), out)
    assert torch.equal(out, torch.ones(8, cols))


KEY = content_key([("test", "a full disk")])


def test_a_full_disk_is_reported_with_what_to_do_and_leaves_nothing(tmp_path):
    def build(out):
        (out / "kernels").mkdir()
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "kernels" / "k.cpp"))

    with pytest.raises(CacheStorageError) as info:
        ArtifactCache(tmp_path).publish(KEY, build)
    assert f"the disk holding the artifact cache {tmp_path} is full" in str(info.value)
    assert "free some space, or point PYPTO_CACHE_DIR" in str(info.value)
    assert_user_facing(info.value)
    # No lock files: the cache takes no locks.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]
    assert not list((tmp_path / "tmp").iterdir())


def test_an_error_of_the_build_itself_is_not_blamed_on_the_cache(tmp_path):
    def build(out):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/nowhere/x.h")

    with pytest.raises(FileNotFoundError):
        ArtifactCache(tmp_path).publish(KEY, build)
