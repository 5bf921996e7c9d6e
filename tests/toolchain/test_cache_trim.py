"""The cache's size policy: least recently used first, never what was used within the grace
period, entries removed whole, SCons' CacheDir files weighed with the artifacts."""

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from test_artifact_cache import entry_manifest

from pypto.toolchain import (
    ArtifactCache,
    cache_size,
    content_key,
    parse_size,
    trim,
    trim_if_due,
)

KEYS = [content_key([("test", f"trim {i}")]) for i in range(4)]
BINARY = b"x" * 1000


def entry_writer(key: str):
    def write(out: Path) -> None:
        (out / "kernels").mkdir()
        (out / "kernels" / "k.so").write_bytes(BINARY)
        (out / "manifest.json").write_text(json.dumps(entry_manifest(key, BINARY)) + "\n")

    return write


def used(path: Path, seconds_ago: float) -> None:
    stamp = time.time() - seconds_ago
    os.utime(path, (stamp, stamp))


@pytest.fixture
def cache(tmp_path):
    cache = ArtifactCache(tmp_path / "artifacts")
    for age, key in zip((400, 300, 200, 100), KEYS, strict=True):
        used(cache.publish(key, entry_writer(key)), 3600 + age)
    return cache


def test_trim_removes_least_recently_used_entries_until_the_cache_fits(cache):
    one = cache_size(cache.root) // 4
    cache.lookup(KEYS[0])  # the oldest, used now
    result = trim(cache.root, 2 * one, grace_s=0)
    assert (result.removed, result.freed, result.size) == (2, 2 * one, 2 * one)
    assert [cache.contains(key) for key in KEYS] == [True, False, False, True]


def test_trim_keeps_what_was_used_within_the_grace_period_even_over_the_limit(cache):
    for key in KEYS[:3]:
        cache.lookup(key)
    result = trim(cache.root, 0, grace_s=600)
    assert result.removed == 1 and [cache.contains(key) for key in KEYS] == [True] * 3 + [False]


def test_a_removed_entry_leaves_no_part_behind(cache):
    assert trim(cache.root, 0, grace_s=0).removed == 4
    files = [p for p in cache.root.rglob("*") if p.is_file()]
    assert files == [cache.root / ".trimmed"]  # the cache's clock
    assert list((cache.root / "trash").iterdir()) == []


def test_a_shared_cache_weighs_scons_files_and_artifacts_together(cache, tmp_path):
    scons = tmp_path / "scons" / "AB"
    scons.mkdir(parents=True)
    (tmp_path / "scons" / "config").write_text("prefix_len = 2\n")
    old, new = scons / "ab01", scons / "ab02"
    for path, age in ((old, 3600 + 500), (new, 3600 + 50)):
        path.write_bytes(BINARY * 2)
        used(path, age)
    total = cache_size(tmp_path)
    assert total == cache_size(cache.root) + 4000
    result = trim(tmp_path, total - 3000, grace_s=0)  # the old SCons file and the oldest entry
    assert result.removed == 2 and not old.exists() and new.exists()
    assert not cache.contains(KEYS[0]) and cache.contains(KEYS[1])
    assert (tmp_path / "scons" / "config").exists()


def _binary_of(entry, copy):
    """The kernel binary of a copy of `entry`; None when the entry went while it was
    copied (a miss)."""
    try:
        shutil.copytree(entry, copy)
    except (FileNotFoundError, shutil.Error):
        shutil.rmtree(copy, ignore_errors=True)
        return None
    binary = (copy / "kernels" / "k.so").read_bytes()
    shutil.rmtree(copy)
    return binary


def test_readers_racing_a_trim_see_whole_entries_or_none(cache, tmp_path):
    stop, torn = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            for key in KEYS:
                entry = cache.lookup(key)
                if entry is None:
                    continue
                binary = _binary_of(entry, tmp_path / "copies" / f"{key}-{threading.get_ident()}")
                if binary is not None and binary != BINARY:
                    torn.append(key)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(20):
            trim(cache.root, 0, grace_s=0)
            for key in KEYS:
                cache.publish(key, entry_writer(key))
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert torn == []


def test_sizes_read_with_binary_units():
    assert parse_size("4096") == 4096
    assert parse_size("20G") == 20 * 1024**3
    assert parse_size("1.5 MiB") == 3 * 1024**2 // 2
    assert parse_size("500mb") == 500 * 1024**2
    with pytest.raises(ValueError, match=r"cache_limit='lots' is not a size.*20G"):
        parse_size("lots", "cache_limit")


def test_trim_if_due_follows_pypto_cache_limit_at_most_once_a_minute(cache, monkeypatch):
    monkeypatch.delenv("PYPTO_CACHE_LIMIT", raising=False)
    assert trim_if_due(cache.root) is None  # no limit, no trim
    monkeypatch.setenv("PYPTO_CACHE_LIMIT", "1")
    assert trim_if_due(cache.root).removed == 4
    for key in KEYS:
        used(cache.publish(key, entry_writer(key)), 3600)
    assert trim_if_due(cache.root) is None  # trimmed a moment ago
    assert all(cache.contains(key) for key in KEYS)
