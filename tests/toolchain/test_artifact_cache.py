"""The artifact cache publishes whole entries or nothing, without locks, and trims to a size."""

import hashlib
import json
import multiprocessing
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from pypto.platform import get_platform
from pypto.runtime.abi import ABI_VERSION
from pypto.runtime.manifest import SCHEMA_VERSION, manifest_digest
from pypto.toolchain import (
    ArtifactCache,
    content_key,
    default_cache_root,
    trim,
)

KEY = content_key([("test", "artifact cache")])


def entry_manifest(key: str = KEY, binary: bytes = b"binary") -> dict:
    """The manifest of a minimal entry the loader accepts (it maps nothing to check it):
    one binary, kernels/k.so, holding `binary`."""
    backend = get_platform("a2a3sim").backend
    digest = hashlib.sha256(binary).hexdigest()
    manifest = {
        "schema_version": SCHEMA_VERSION, "platform": "a2a3sim",
        "backend": backend.name, "abi_version": ABI_VERSION, "content_key": key,
        "entry": "k", "params": [], "outputs": [],
        "kernels": [{"name": "k", "file": "kernels/k.so", "sha256": digest,
                     "core_type": "vector", "signature": []}],
        "orchestration": {"file": "kernels/k.so", "sha256": digest, "entry": "k"},
        "core": {**backend.capacities, "cores": backend.vector_cores},
    }
    manifest["manifest_sha256"] = manifest_digest(manifest)
    return manifest


def write_entry(out: Path) -> None:
    (out / "kernels").mkdir()
    (out / "kernels" / "k.so").write_bytes(b"binary")
    (out / "manifest.json").write_text(json.dumps(entry_manifest()) + "\n")


def test_publish_builds_once_and_lookup_serves_the_entry(tmp_path):
    cache = ArtifactCache(tmp_path)
    assert cache.lookup(KEY) is None
    entry = cache.publish(KEY, write_entry)
    assert entry == tmp_path / KEY[:2] / KEY
    assert (entry / "kernels" / "k.so").read_bytes() == b"binary"
    assert cache.lookup(KEY) == entry
    assert cache.publish(KEY, lambda out: pytest.fail("rebuilt a published key")) == entry


def _leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_build_that_raises_leaves_nothing_behind(tmp_path):
    cache = ArtifactCache(tmp_path)

    def crash(out: Path) -> None:
        write_entry(out)
        raise RuntimeError("compiler exploded")

    with pytest.raises(RuntimeError, match="compiler exploded"):
        cache.publish(KEY, crash)
    assert cache.lookup(KEY) is None
    assert _leftovers(tmp_path) == ["tmp"]


def test_a_build_without_manifest_is_refused_and_leaves_nothing(tmp_path):
    cache = ArtifactCache(tmp_path)
    with pytest.raises(RuntimeError, match="wrote no manifest.json"):
        cache.publish(KEY, lambda out: (out / "half.so").write_bytes(b"x"))
    assert cache.lookup(KEY) is None
    assert _leftovers(tmp_path) == ["tmp"]


def test_an_entry_without_manifest_is_not_served_and_gets_replaced(tmp_path):
    cache = ArtifactCache(tmp_path)
    garbage = cache.entry_dir(KEY)
    (garbage / "kernels").mkdir(parents=True)
    (garbage / "kernels" / "k.so").write_bytes(b"truncated")
    assert cache.lookup(KEY) is None
    entry = cache.publish(KEY, write_entry)
    assert (entry / "kernels" / "k.so").read_bytes() == b"binary"


def test_staging_dirs_of_killed_builders_are_cleared_by_a_trim_once_stale(tmp_path):
    stale, live = tmp_path / "tmp" / f"{KEY}.killed", tmp_path / "tmp" / f"{KEY}.building"
    for staging in (stale, live):
        staging.mkdir(parents=True)
        (staging / "half.so").write_bytes(b"x")
    os.utime(stale, (time.time() - 2 * 86400,) * 2)
    trim(tmp_path, 10**9)
    assert not stale.exists() and live.exists()  # another host may still be building there


def test_a_publisher_clears_the_staging_its_host_killed_builders_left(tmp_path):
    host = socket.gethostname()
    child = subprocess.Popen(["true"])
    child.wait()  # a builder that is gone
    dead = tmp_path / "tmp" / f"{KEY}.{host}.{child.pid}.0000"
    alive = tmp_path / "tmp" / f"{KEY}.{host}.{os.getpid()}.0000"
    elsewhere = tmp_path / "tmp" / f"{KEY}.another-host.{child.pid}.0000"
    for staging in (dead, alive, elsewhere):
        staging.mkdir(parents=True)
    ArtifactCache(tmp_path).publish(KEY, write_entry)
    assert not dead.exists() and alive.exists() and elsewhere.exists()


def test_published_entries_take_the_umask_so_a_team_group_can_manage_them(tmp_path):
    old = os.umask(0o002)
    try:
        entry = ArtifactCache(tmp_path).publish(KEY, write_entry)
    finally:
        os.umask(old)
    assert entry.stat().st_mode & 0o777 == 0o775


def test_keys_must_be_sha256_digests(tmp_path):
    with pytest.raises(ValueError, match="sha256"):
        ArtifactCache(tmp_path).lookup("../../etc")


def _slow_build(out: Path) -> None:
    # Logged beside the cache so the parent can count how many builds ran.
    with open(out.parents[1] / "builds.log", "a") as log:
        log.write(f"{os.getpid()}\n")
    time.sleep(0.3)
    write_entry(out)


def _publish_in_child(root: str, barrier, results) -> None:
    barrier.wait()
    results.put(str(ArtifactCache(Path(root)).publish(KEY, _slow_build)))


def test_concurrent_publishers_of_one_key_both_succeed_and_share_one_entry(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    children = [
        ctx.Process(target=_publish_in_child, args=(str(tmp_path), barrier, results))
        for _ in range(2)
    ]
    for child in children:
        child.start()
    paths = [results.get(timeout=60) for _ in children]
    for child in children:
        child.join(timeout=60)
    assert [child.exitcode for child in children] == [0, 0]
    assert paths == [str(tmp_path / KEY[:2] / KEY)] * 2
    # No lock: both built (0.3 s each, started together); the first rename won.
    assert len((tmp_path / "builds.log").read_text().split()) == 2
    assert json.loads((tmp_path / KEY[:2] / KEY / "manifest.json").read_text()) == \
        entry_manifest()
    assert _leftovers(tmp_path) == sorted(
        [
            "builds.log",
            "tmp",
            KEY[:2],
            f"{KEY[:2]}/{KEY}",
            f"{KEY[:2]}/{KEY}/kernels",
            f"{KEY[:2]}/{KEY}/kernels/k.so",
            f"{KEY[:2]}/{KEY}/manifest.json",
        ]
    )


def test_a_publisher_that_loses_the_race_returns_the_winners_entry(tmp_path):
    cache = ArtifactCache(tmp_path)

    def build_while_another_publishes(out: Path) -> None:
        cache.publish(KEY, write_entry)  # the other builder, finishing first
        write_entry(out)
        (out / "kernels" / "k.so").write_bytes(b"second")

    entry = cache.publish(KEY, build_while_another_publishes)
    assert (entry / "kernels" / "k.so").read_bytes() == b"binary"
    assert list((tmp_path / "tmp").iterdir()) == []


def test_default_root_prefers_pypto_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ArtifactCache().root == tmp_path / "explicit"


def test_default_root_respects_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPTO_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_root() == tmp_path / "xdg" / "pypto"


def test_default_root_falls_back_to_home_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("PYPTO_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_root() == tmp_path / ".cache" / "pypto"
