"""Each compile and link of an artifact is a SCons step of its own, and `launcher=` goes in
front of every compile without changing a byte; an artifact whose cache entry goes after
its plan found it is compiled by the artifact step itself."""

from __future__ import annotations

import re
import shutil

from scons_project import actions

# A launcher as ccache or distcc is one: it logs the command it is given and runs it.
LOGGING_LAUNCHER = """#!/bin/sh
echo "$*" >> "$LAUNCH_LOG"
exec "$@"
"""


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_every_compile_is_a_step_run_through_the_launcher_to_the_same_bytes(
        make_project, tmp_path):
    launcher = tmp_path / "logging-launcher"
    launcher.write_text(LOGGING_LAUNCHER)
    launcher.chmod(0o755)
    log = tmp_path / "launched.log"
    plain, launched = make_project("plain", specs=2, distinct=True), \
        make_project("launched", specs=2, distinct=True)
    plain.scons("platform=a5sim", "-j2")
    proc = launched.scons("platform=a5sim", "-j2", f"launcher={launcher}",
                          LAUNCH_LOG=str(log))
    steps = re.findall(r"^pypto:   (compile|link) (k0[01]/v): (\S+)$", proc.stdout, re.M)
    assert sorted(steps) == sorted(
        (kind, f"k0{i}/v", name) for i in (0, 1) for kind, name in (
            ("compile", "kernels/scale_incore_0.cpp"), ("compile", "orchestration.cpp"),
            ("link", "kernels/scale_incore_0.so"), ("link", "orchestration.so")))
    launched_commands = log.read_text().splitlines()
    assert len(launched_commands) == 4 and all(" -c " in c for c in launched_commands)
    assert _files(plain.build / "a5sim") == _files(launched.build / "a5sim")


def test_an_artifact_gone_from_the_cache_after_planning_is_compiled_by_its_own_step(
        make_project, tmp_path):
    first = make_project("first", specs=2, distinct=True)
    first.scons("platform=a5sim")
    second = make_project("second", cache=first.cache, specs=2, distinct=True)
    second.scons("platform=a5sim")  # its plans found both artifacts in the cache
    assert second.compiles() == []

    shutil.rmtree(second.build / "a5sim" / "k00")
    for entry in first.cache.glob("??/*"):
        shutil.rmtree(entry)  # trimmed, say, by another host
    proc = second.scons("platform=a5sim")
    assert actions(proc.stdout, "artifact") == ["k00/v for a5sim"]
    assert "pypto:   compile" not in proc.stdout  # no step: the plan had found it cached
    assert len(second.compiles()) == 2  # its kernel and orchestration, by the artifact step
    assert _files(second.build / "a5sim" / "k00") == _files(first.build / "a5sim" / "k00")
