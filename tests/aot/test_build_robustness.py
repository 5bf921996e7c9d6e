"""Builds killed midway recover by themselves; concurrent builds never corrupt each other."""

from __future__ import annotations

import os
import signal
import time

from scons_project import actions

from pypto.runtime import load_library


def _wait_for(proc, marker: str, timeout: float = 120.0) -> bool:
    """Reads the process's output until a line contains `marker` (True) or it ends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            return False
        if marker in line:
            return True
    raise AssertionError(f"no {marker!r} within {timeout} s")


def _assert_library_intact(project, platform="a5sim"):
    # Checks every sha256.
    library = load_library(project.build, platform=platform, allow_unsigned=True)
    assert library.check().passed
    leftovers = [p for p in project.build.rglob("*") if ".pypto-tmp-" in p.name
                 or p.name.endswith(".tmp")]
    assert leftovers == []


def _kill_at(project, marker: str, *args: str) -> None:
    proc = project.popen(*args)
    assert _wait_for(proc, marker), f"the build ended before {marker!r}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


def test_builds_killed_while_compiling_and_while_writing_goldens_rebuild_cleanly(make_project):
    project = make_project(specs=4, distinct=True)
    _kill_at(project, "compile k01/v: ", "platform=a5sim", "-j2")
    _kill_at(project, "] golden ", "platform=a5sim", "-j2")
    rebuilt = project.scons("platform=a5sim", "check", "-j2")
    assert "4 of 4 outputs of 4 kernel variants within tolerance" in rebuilt.stdout
    _assert_library_intact(project)


def test_two_builds_sharing_one_cache_at_once_both_succeed_with_identical_artifacts(
        make_project, tmp_path):
    cache = tmp_path / "shared-cache"
    one = make_project("one", specs=4, distinct=True)
    two = make_project("two", specs=4, distinct=True)
    procs = [p.popen("platform=a5sim", "check", "-j2", f"cache={cache}") for p in (one, two)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    for out in outputs:
        assert "4 of 4 outputs of 4 kernel variants within tolerance" in out
    # No lock: a kernel both builds reach before either publishes is compiled by both
    # (four kernels of two sources each), and the first to publish wins.
    assert 8 <= len(one.compiles()) + len(two.compiles()) <= 16
    _assert_library_intact(one)
    _assert_library_intact(two)
    artifacts = sorted(p.relative_to(one.build) for p in (one.build / "a5sim").rglob("*")
                       if p.is_file())
    assert len(artifacts) == 4 * 5  # manifest, two sources, two binaries each
    for rel in artifacts:
        assert (one.build / rel).read_bytes() == (two.build / rel).read_bytes(), rel
    entries = [p for p in (cache / "artifacts").glob("??/*") if p.is_dir()]
    assert len(entries) == 4 and not list((cache / "artifacts" / "tmp").iterdir())


def test_two_builds_in_one_directory_take_turns(make_project):
    project = make_project(specs=2, distinct=True)
    procs = [project.popen("platform=a5sim") for _ in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert sum(len(actions(out, "artifact")) for out in outputs) == 2  # one built, one waited
    _assert_library_intact(project)
