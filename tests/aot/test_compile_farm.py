"""Compiles through a launcher (`scons launcher=...`): the shipped library built through
ccache and through a distcc daemon on the loopback address gives the artifacts of a plain
local build, byte for byte, content keys included; a second checkout built through a warm
ccache compiles nothing itself; the daemon's log shows every compile went through it.

Needs the Debian packages ccache and distcc (.ci/run installs them); each test skips,
saying so, where its tool is missing.  Slow: whole-library builds.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from scons_project import new_project

pytestmark = pytest.mark.slow

GXX = shutil.which("g++")


def _build(project, *args: str, **env: str) -> str:
    """The artifacts of the whole shipped library (no goldens), built by real g++ (a
    launcher needs a compiler it knows; PYPTO_CXX is part of every key, so all builds
    here name the same one)."""
    proc = project.scons("platform=a5sim", "build/a5sim", *args, PYPTO_CXX=GXX, **env)
    return proc.stdout


def _artifacts(project) -> dict[str, bytes]:
    """Every file of every artifact but its build reports (they name the checkout's spec
    files; packages leave them out)."""
    root = project.build / "a5sim"
    files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
             if p.is_file()}
    return {k: v for k, v in files.items() if not {"report", "passes_dump"} & set(k.split("/"))}


def _compile_steps(output: str) -> list[str]:
    return re.findall(r"^pypto:   compile (.*)$", output, re.M)


@pytest.fixture(scope="module")
def local_build(tmp_path_factory, counting_cxx):
    """The plain build every launcher's build is compared with."""
    base = tmp_path_factory.mktemp("farm")
    project = new_project(base / "local", base / "local-cache", counting_cxx, shipped=True)
    output = _build(project, "-j2")
    return project, _artifacts(project), output


def test_a_ccache_launcher_changes_no_byte_and_a_second_checkout_compiles_nothing(
        local_build, tmp_path, counting_cxx):
    ccache = shutil.which("ccache")
    if ccache is None:
        pytest.skip("ccache is not installed (the Debian package ccache; .ci/run installs it)")
    _, reference, local_output = local_build
    env = {"CCACHE_DIR": str(tmp_path / "ccache")}
    first = new_project(tmp_path / "first", tmp_path / "first-cache", counting_cxx, shipped=True)
    _build(first, "-j2", "launcher=ccache", **env)
    assert _artifacts(first) == reference  # binaries and manifests, content keys included

    # Another checkout with its own (empty) artifact cache: every compile is a ccache hit.
    subprocess.run([ccache, "--zero-stats"], env={**os.environ, **env}, check=True,
                   capture_output=True)
    second = new_project(tmp_path / "second", tmp_path / "second-cache", counting_cxx,
                         shipped=True)
    output = _build(second, "-j2", "launcher=ccache", **env)
    assert _artifacts(second) == reference
    stats = dict(line.split("\t") for line in subprocess.run(
        [ccache, "--print-stats"], env={**os.environ, **env}, check=True, capture_output=True,
        text=True).stdout.splitlines())
    steps = _compile_steps(output)
    assert len(steps) == len(_compile_steps(local_output)) > 100
    hits = int(stats["direct_cache_hit"]) + int(stats["preprocessed_cache_hit"])
    assert (hits, int(stats["cache_miss"])) == (len(steps), 0), stats


@pytest.fixture
def distccd(tmp_path):
    """A distcc daemon on 127.0.0.1 (a free port), its log, and DISTCC_HOSTS for it."""
    if shutil.which("distccd") is None or shutil.which("distcc") is None:
        pytest.skip("distcc is not installed (the Debian package distcc; .ci/run installs it)")
    # Run as root, distccd drops to its own user before it logs: pytest's directories are
    # private to root.
    logs = Path(tempfile.mkdtemp(prefix="pypto-distccd-"))
    logs.chmod(0o777)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = logs / "distccd.log"
    daemon = subprocess.Popen(
        ["distccd", "--daemon", "--no-detach", "--listen", "127.0.0.1", "--allow", "127.0.0.1",
         "--port", str(port), "--jobs", "4", "--log-file", str(log)],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"distccd did not start: {log.read_text()}") from None
                time.sleep(0.1)
        yield log, f"127.0.0.1:{port}/4"
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)  # the daemon and the children it forked
        daemon.wait(timeout=30)
        shutil.rmtree(logs, ignore_errors=True)


def test_the_shipped_library_builds_through_a_distcc_daemon_to_the_same_bytes(
        local_build, distccd, tmp_path, counting_cxx):
    _, reference, _ = local_build
    log, hosts = distccd
    project = new_project(tmp_path / "farm", tmp_path / "farm-cache", counting_cxx, shipped=True)
    (tmp_path / "distcc").mkdir()  # distcc's own state (it would use ~/.distcc)
    # No fallback: a compile the daemon does not take fails the build instead of
    # quietly running here.
    output = _build(project, "-j4", "launcher=distcc", DISTCC_HOSTS=hosts, DISTCC_FALLBACK="0",
                    DISTCC_SKIP_LOCAL_RETRY="1", DISTCC_DIR=str(tmp_path / "distcc"))
    assert _artifacts(project) == reference
    compiled = re.findall(r"COMPILE_OK .* (\S+\.cpp)$", log.read_text(), re.M)
    steps = _compile_steps(output)
    assert len(compiled) == len(steps) > 100
    assert sorted(compiled) == sorted(Path(s.split(": ")[1]).name for s in steps)
