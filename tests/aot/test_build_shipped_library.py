"""The shipped library on a fresh checkout: build, check, rebuild nothing, reproduce (the
default run on the SHIPPED_SUBSET of its spec modules, the slow run on all of them)."""

from __future__ import annotations

import pytest
from scons_project import actions

from pypto.runtime import load_library

PACKAGE = "dist/pypto_kernels-0.1.0-a5sim.tar"


def test_fresh_checkout_builds_and_passes_check_on_a5sim(shipped_builds):
    project, _ = shipped_builds
    out = project.first_run.stdout
    library = load_library(project.build, platform="a5sim", allow_unsigned=True)
    variants = [(v.kernel, v.name) for v in library.variants()]
    assert len(variants) >= 10
    assert sorted(actions(out, "check")) == sorted(f"{k}/{v} on a5sim" for k, v in variants)
    assert "FAIL" not in out
    assert f"of {len(variants)} kernel variants within tolerance" in out
    for kernel, variant in variants:  # each check result printed as a table row
        assert any(line.split()[:2] == [kernel, variant] and line.rstrip().endswith("pass")
                   for line in out.splitlines()), (kernel, variant)


def test_second_run_compiles_nothing_and_runs_no_reference(shipped_builds, torch_blocker):
    project, _ = shipped_builds
    compiled = len(project.compiles())
    proc = project.scons("platform=a5sim", "check", "package", block_torch=torch_blocker)
    assert len(project.compiles()) == compiled  # no compiler invoked
    for step in ("plan", "artifact", "golden", "spec", "check", "index", "package"):
        assert actions(proc.stdout, step) == [], (step, proc.stdout)
    assert "within tolerance" in proc.stdout  # the table, from the recorded results


def test_two_clean_builds_give_byte_identical_goldens(shipped_builds):
    first, second = shipped_builds
    goldens = sorted(p.relative_to(first.build) for p in (first.build / "goldens").rglob("*")
                     if p.is_file())
    assert len(goldens) >= 30
    for rel in goldens:
        assert (first.build / rel).read_bytes() == (second.build / rel).read_bytes(), rel


def test_two_clean_builds_give_byte_identical_packages(shipped_builds):
    first, second = shipped_builds
    one, two = (p.root / PACKAGE for p in shipped_builds)
    assert one.read_bytes() == two.read_bytes()
    assert first.compiles() and second.compiles()  # both really compiled, from clean caches


@pytest.mark.slow
def test_two_clean_builds_of_every_shipped_module_check_and_give_identical_packages(
        whole_library_builds):
    first, second = whole_library_builds
    assert "FAIL" not in first.first_run.stdout
    assert len(load_library(first.build, platform="a5sim", allow_unsigned=True).variants()) >= 60
    assert (first.root / PACKAGE).read_bytes() == (second.root / PACKAGE).read_bytes()
