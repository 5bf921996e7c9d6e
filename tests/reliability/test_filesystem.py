"""`pypto.filesystem`: the one atomic write, directory swap and lock every writer uses."""

from __future__ import annotations

import hashlib
import os
import subprocess

import pytest

from pypto import filesystem
from pypto.filesystem import (
    AtomicFile,
    DigestMismatch,
    LockTimeout,
    atomic_output,
    atomic_write,
    lock_with_deadline,
    move_aside,
    read_verified,
    swap_directory,
)


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "record.json"
    atomic_write(target, "old\n")
    atomic_write(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["record.json"]


def test_atomic_write_flushes_the_data_to_disk_before_the_rename(tmp_path, monkeypatch):
    events = []
    monkeypatch.setattr(filesystem.os, "fsync", lambda fd: events.append("fsync"))
    real_replace = os.replace
    monkeypatch.setattr(filesystem.os, "replace",
                        lambda a, b: (events.append("rename"), real_replace(a, b)))
    atomic_write(tmp_path / "f", b"data")
    assert events == ["fsync", "rename"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path, monkeypatch):
    target = tmp_path / "golden.json"
    target.write_bytes(b"old")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(filesystem.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["golden.json"]


def test_a_discarded_atomic_file_leaves_the_target_as_it_was(tmp_path):
    pending = AtomicFile(tmp_path / "args.bin")
    pending.file.write(b"partial")
    pending.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_file_a_program_writes_is_flushed_then_renamed_into_place(tmp_path, monkeypatch):
    target = tmp_path / "prelude.pch"
    target.write_bytes(b"old")
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(filesystem.os, "fsync",
                        lambda fd: (events.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(filesystem.os, "replace",
                        lambda a, b: (events.append("rename"), real_replace(a, b)))
    with atomic_output(target) as partial:
        assert partial.parent == tmp_path and not partial.exists()
        subprocess.run(["sh", "-c", 'printf new > "$0"', partial], check=True)
        assert target.read_bytes() == b"old"  # nothing published mid-write
    assert target.read_bytes() == b"new" and events == ["fsync", "rename"]
    assert [p.name for p in tmp_path.iterdir()] == ["prelude.pch"]


def test_a_program_output_whose_block_fails_is_removed_and_the_target_kept(tmp_path):
    target = tmp_path / "prelude.pch"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_output(target) as partial:
        partial.write_bytes(b"half")
        raise RuntimeError("the compiler failed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["prelude.pch"]


def test_move_aside_renames_a_file_or_a_directory_under_a_fresh_name(tmp_path):
    (tmp_path / "entry").mkdir()
    (tmp_path / "entry" / "kernel.so").write_bytes(b"damaged")
    (tmp_path / "cache.bin").write_bytes(b"damaged")
    quarantine = tmp_path / "deep" / "quarantine"
    entry, file = (move_aside(tmp_path / name, quarantine) for name in ("entry", "cache.bin"))
    assert (entry / "kernel.so").read_bytes() == b"damaged" == file.read_bytes()
    assert entry.parent == file.parent == quarantine and entry.name.startswith("entry.")
    again = tmp_path / "entry"
    again.mkdir()
    assert move_aside(again, quarantine) != entry and len(list(quarantine.iterdir())) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep"]


def test_move_aside_of_what_another_process_moved_first_is_none(tmp_path):
    assert move_aside(tmp_path / "gone", tmp_path / "quarantine") is None


def test_swap_directory_replaces_the_whole_directory(tmp_path):
    target = tmp_path / "artifact"
    target.mkdir()
    (target / "stale.o").write_text("old")
    swap_directory(target, lambda new: (new / "kernel.so").write_text("new"))
    assert [p.name for p in target.iterdir()] == ["kernel.so"]
    assert [p.name for p in tmp_path.iterdir()] == ["artifact"]


def test_a_failed_fill_keeps_the_old_directory_and_no_staging(tmp_path):
    target = tmp_path / "artifact"
    target.mkdir()
    (target / "kernel.so").write_text("old")

    def fail(new):
        (new / "half").write_text("x")
        raise RuntimeError("compile failed")

    with pytest.raises(RuntimeError, match="compile failed"):
        swap_directory(target, fail)
    assert (target / "kernel.so").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["artifact"]


def test_swap_directory_sweeps_a_killed_writers_staging_only_when_asked(tmp_path):
    stale = tmp_path / f".out{filesystem.STAGING_MARK}dead"
    stale.mkdir()
    swap_directory(tmp_path / "out", lambda new: None)
    assert stale.exists()
    swap_directory(tmp_path / "out", lambda new: None, sweep_stale=True)
    assert not stale.exists()


def test_a_held_lock_times_out_after_calling_on_wait_once(tmp_path):
    lock = tmp_path / ".lock"
    held = lock_with_deadline(lock, 1.0)
    waits = []
    try:
        with pytest.raises(LockTimeout, match="stayed locked for 0.3 s"):
            lock_with_deadline(lock, 0.3, lambda: waits.append(1))
    finally:
        os.close(held)
    assert waits == [1]
    os.close(lock_with_deadline(lock, 0.3))  # free again


def test_the_next_write_removes_the_temporary_of_a_killed_writer(tmp_path):
    target = tmp_path / "plan.json"
    orphan = tmp_path / f".plan.json.{_exited_pid()}.0badf00d.tmp"
    orphan.write_text("half")
    alive = tmp_path / f".plan.json.{os.getpid()}.0000cafe.tmp"  # a concurrent writer's
    alive.write_text("busy")
    atomic_write(target, "whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == [alive.name, "plan.json"]


def _exited_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_read_verified_returns_the_bytes_only_when_their_sha256_matches(tmp_path):
    path = tmp_path / "kernel.so"
    path.write_bytes(b"binary")
    digest = hashlib.sha256(b"binary").hexdigest()
    assert read_verified(path, digest.upper()) == b"binary"
    path.write_bytes(b"changed")
    with pytest.raises(DigestMismatch) as mismatch:
        read_verified(path, digest)
    assert mismatch.value.found == hashlib.sha256(b"changed").hexdigest()


def test_a_failed_swap_puts_the_old_directory_back(tmp_path, monkeypatch):
    target = tmp_path / "artifact"
    target.mkdir()
    (target / "kernel.so").write_text("old")
    real_replace = os.replace

    def refuse_the_new(src, dst):
        if os.path.basename(src) == "new":
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(filesystem.os, "replace", refuse_the_new)
    with pytest.raises(OSError, match="No space"):
        swap_directory(target, lambda new: (new / "kernel.so").write_text("new"))
    assert (target / "kernel.so").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["artifact"]
