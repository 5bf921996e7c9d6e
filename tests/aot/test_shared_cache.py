"""One cache for a team (`scons cache=DIR`): a checkout fills it, a second checkout and a
second "machine" (another user with its own home, in its own UTS namespace, so another
host name) build nothing, and an entry damaged on the shared storage is refused and
rebuilt, both an artifact and an SCons CacheDir file.  Slow: builds of the shipped
library's elementwise module."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from scons_project import COUNTING_CXX, TORCH_BLOCKER, actions, new_project

from pypto.runtime import load_library

pytestmark = pytest.mark.slow

NOBODY = 65534


@pytest.fixture
def team():
    """A directory every user may enter (pytest's own are private to root): the shared
    cache, the checkouts, the g++ wrapper and the torch blocker of this test.  Builders
    work with the umask of a team sharing a group (docs/building.md): 002."""
    umask = os.umask(0o002)
    base = Path(tempfile.mkdtemp(prefix="pypto-team-"))
    base.chmod(0o777)
    cxx = base / "counting-g++"
    cxx.write_text(COUNTING_CXX)
    cxx.chmod(0o755)
    (base / "no-torch" / "torch").mkdir(parents=True)
    (base / "no-torch" / "torch" / "__init__.py").write_text(TORCH_BLOCKER)
    (base / "cache").mkdir(mode=0o2775)  # the team's group (here root's) owns it
    try:
        yield base, cxx
    finally:
        os.umask(umask)
        shutil.rmtree(base, ignore_errors=True)


def _checkout(base: Path, cxx: Path, name: str):
    return new_project(base / name, base / f"{name}-own-cache", cxx, shipped=True,
                       modules=("elementwise",))


def _build(project, cache: Path, **kw) -> str:
    return project.scons("platform=a5sim", "-j2", f"cache={cache}", **kw).stdout


def _built_nothing(output: str, project) -> None:
    """Every target came from the shared cache: no compile, no golden, no reference run
    (torch was blocked), every artifact a cache hit."""
    assert project.compiles() == []
    assert actions(output, "golden") == [] and "Retrieved `build/goldens/" in output
    artifacts = actions(output, "artifact")
    assert len(artifacts) >= 10
    assert output.count("nothing compiled") == len(artifacts)


def test_checkouts_and_a_second_machine_share_one_cache_and_build_nothing(team):
    base, cxx = team
    cache = base / "cache"
    first = _checkout(base, cxx, "first")
    _build(first, cache)
    assert first.compiles()

    second = _checkout(base, cxx, "second")
    _built_nothing(_build(second, cache, block_torch=base / "no-torch"), second)

    if os.geteuid() != 0:
        pytest.skip("switching to another user (the second machine) needs root")
    # Another user of the team's group (root's group here), with its own home.
    machine = _checkout(base, cxx, "machine")
    home = base / "machine-home"
    home.mkdir()
    for path in (machine.root, home):
        subprocess.run(["chown", "-R", f"{NOBODY}:0", str(path)], check=True)
    env = machine.env(block_torch=base / "no-torch", HOME=str(home))
    proc = subprocess.run(
        ["unshare", "--uts", "sh", "-c", 'hostname machine-b && exec "$@"', "sh",
         "setpriv", f"--reuid={NOBODY}", "--regid=0", "--clear-groups",
         sys.executable, "-m", "SCons", "platform=a5sim", "-j2", f"cache={cache}"],
        cwd=machine.root, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _built_nothing(proc.stdout, machine)
    assert load_library(machine.build, platform="a5sim", allow_unsigned=True).check().passed


def test_a_damaged_entry_of_the_shared_cache_is_refused_and_rebuilt(team):
    base, cxx = team
    cache = base / "cache"
    first = _checkout(base, cxx, "first")
    _build(first, cache)

    # One artifact's binary and one golden file, damaged on the shared storage.
    artifact = next((cache / "artifacts").glob("??/*/kernels/*.so"))
    data = bytearray(artifact.read_bytes())
    data[len(data) // 2] ^= 0xFF
    artifact.write_bytes(data)
    golden = first.build / "goldens" / "add" / "f32_33x100" / "golden.json"
    damaged = next(p for p in (cache / "scons").glob("*/*")
                   if p.read_bytes()[:-48] == golden.read_bytes())
    damaged.write_bytes(damaged.read_bytes().replace(b'"name"', b'"nome"', 1))

    second = _checkout(base, cxx, "second")
    proc = second.scons("platform=a5sim", "-j2", f"cache={cache}")
    output = proc.stdout + proc.stderr
    assert "CorruptCacheEntryWarning" in output and "was damaged on disk" in output
    assert len(second.compiles()) == 2  # that artifact's kernel and orchestration, again
    assert f"SCons cache file {damaged} " in output and "is damaged" in output
    assert actions(proc.stdout, "golden") == ["add/f32_33x100"]
    library = load_library(second.build, platform="a5sim", allow_unsigned=True)
    library.verify()
    assert library.check().passed
    entry = artifact.parents[1]
    assert entry.is_dir() and (entry / "manifest.json").is_file()  # published again, whole
    assert list((cache / "artifacts" / "quarantine").iterdir())
    assert list((cache / "scons" / "quarantine").iterdir())
