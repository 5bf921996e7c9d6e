"""Cost as the library grows: synthetic libraries of 10, 100, 1,000 and 5,000 specs.

For each size (two variants a spec, every spec one kernel body, so the cold build
compiles two artifacts and plans, takes from the artifact cache and copies the rest):
the cold build, the no-op rebuild and the rebuild after one spec's kernel changes, each
against a plain SCons project with as many targets (each copying one small file), and
per spec.  At the largest size, where the time goes (`scons --debug=time`: reading the
SConstruct, SCons' own work, the steps by kind).  Then `-j` scaling: the artifacts of a
library whose every spec has a kernel of its own, cold, at -j1, -j2, -j4.  Target (issue
21): the no-op at 5,000 specs within 2x of plain SCons; growth linear or better.

    python -m bench --only scaling [--scale-sizes 10,100,1000,5000]
    python -m bench.build_scaling [--sizes 10,100] [--runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.build_noop import (
    ROOT,
    count_targets,
    edit_plain,
    edit_spec,
    run_scons,
    scons,
    write_library,
    write_plain,
)
from bench.harness import Row, Settings, fmt_time

SIZES = (10, 100, 1000, 5000)
QUICK_SIZES = (2, 4)
JOBS = (1, 2, 4)
DISTINCT_SPECS = 8  # -j scaling: 16 artifacts, 32 compiles and 32 links

_STEP_TIME = re.compile(r"^Command execution time: (\S+): ([\d.]+) seconds$", re.M)
_TOTAL = re.compile(r"^Total (SConscript file execution|SCons execution|build) time: "
                    r"([\d.]+) seconds$", re.M)


def measure(settings: Settings, sizes: tuple[int, ...] | None = None,
            work: Path | None = None) -> list[Row]:
    """The scaling rows: every size in `sizes` (default SIZES; --quick: QUICK_SIZES), then
    -j scaling."""
    sizes = sizes or (QUICK_SIZES if settings.quick else SIZES)
    rows: list[Row] = []
    own = work is None
    work = work or Path(tempfile.mkdtemp(prefix="pypto-scaling-"))
    try:
        previous = None
        for n in sorted(sizes):
            size_rows, per_spec = _measure_size(settings, n, work / f"specs-{n}",
                                                explain=n == max(sizes), previous=previous)
            rows += size_rows
            previous = (n, per_spec)
        rows += _jobs_rows(settings, work / "jobs")
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return rows


def _measure_size(settings: Settings, n: int, work: Path, explain: bool,
                  previous: tuple[int, dict] | None) -> tuple[list[Row], dict]:
    library, plain = work / "library", work / "plain"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(work / "cache"))
    jobs = f"-j{os.cpu_count() or 1}"
    runs = settings.runs if n <= 1000 else min(settings.runs, 3)
    write_library(library, n)
    cold, cold_out = run_scons(library, "platform=a5sim", jobs, "--debug=time", env=env)
    targets = count_targets(library / "build")
    write_plain(plain, targets)
    plain_cold = scons(plain, jobs)
    noop, base = [], []
    for _ in range(runs):  # alternated: a change in the machine's load weighs on both
        noop.append(scons(library, "platform=a5sim", env=env))
        base.append(scons(plain))
    edits, plain_edits = [], []
    for run in range(runs):
        edit_spec(library, n - 1, 3.0 + run)
        edits.append(scons(library, "platform=a5sim", jobs, env=env))
        edit_plain(plain, 0, run)
        plain_edits.append(scons(plain, jobs))
    noop_s, base_s = statistics.median(noop), statistics.median(base)
    edit_s, plain_edit_s = statistics.median(edits), statistics.median(plain_edits)
    per_spec = {"cold": cold / n, "noop": noop_s / n, "edit": edit_s / n}

    def growth(kind: str) -> tuple[str, bool | None]:
        if previous is None:
            return f"{fmt_time(per_spec[kind])} per spec", None
        m, before = previous
        factor = per_spec[kind] / before[kind]
        return (f"{fmt_time(per_spec[kind])} per spec, {factor:.2f}x that at {m:,} specs",
                factor <= 1.25)

    cold_note, cold_met = growth("cold")
    noop_note, noop_met = growth("noop")
    edit_note, edit_met = growth("edit")
    linear = "per spec <= 1.25x the smaller size's" if previous else ""
    what = f"{n:,} specs, {targets:,} targets"
    if explain:
        cold_note += "; " + _where_cold(cold_out)
        _, noop_out = run_scons(library, "platform=a5sim", "--debug=time", env=env)
        noop_note += "; " + _where_noop(noop_out)
    noop_target = "<= 2x" + (f", {linear}" if linear else "")
    rows = [
        Row("scaling", f"cold build ({what}, {jobs})", cold, plain_cold,
            "plain SCons cold build, same target count", target=linear, met=cold_met,
            note=cold_note),
        Row("scaling", f"no-op rebuild ({what})", noop_s, base_s, "plain SCons no-op",
            target=noop_target,
            met=noop_s <= 2 * base_s and noop_met is not False, note=noop_note),
        Row("scaling", f"one-spec-edit rebuild ({n:,} specs)", edit_s, plain_edit_s,
            "plain SCons, one source edited", target=linear, met=edit_met, note=edit_note),
    ]
    return rows, per_spec


def _where_cold(output: str) -> str:
    """Where a cold build's time went: reading, SCons, and the steps by kind (summed over
    the jobs, so they may add up to more than the wall time)."""
    totals = dict(_TOTAL.findall(output))
    kinds: dict[str, float] = defaultdict(float)
    for target, seconds in _STEP_TIME.findall(output):
        kinds[_kind(target)] += float(seconds)
    steps = ", ".join(f"{kind} {fmt_time(s)}" for kind, s in
                      sorted(kinds.items(), key=lambda item: -item[1]))
    return (f"reading the SConstruct {fmt_time(float(totals['SConscript file execution']))}, "
            f"SCons {fmt_time(float(totals['SCons execution']))}, steps: {steps}")


def _where_noop(output: str) -> str:
    totals = dict(_TOTAL.findall(output))
    return (f"reading the SConstruct {fmt_time(float(totals['SConscript file execution']))} "
            f"(spec index, compiler digest, declaring the targets), SCons' up-to-date "
            f"checks {fmt_time(float(totals['SCons execution']))}")


def _kind(target: str) -> str:
    if target.endswith("plan.json"):
        return "plans"
    if target.endswith((".o", ".so")):
        return "compiles and links"
    for part, kind in (("/goldens/", "goldens"), ("/specs/", "spec descriptions"),
                       ("manifest.json", "artifacts"), ("library-", "index")):
        if part in target:
            return kind
    return "other"


def _jobs_rows(settings: Settings, work: Path) -> list[Row]:
    """Cold builds of the artifacts of DISTINCT_SPECS specs with kernels of their own, at
    each of JOBS, against -j1."""
    specs = 2 if settings.quick else DISTINCT_SPECS
    library = work / "library"
    write_library(library, specs, distinct=True)
    times = {}
    for jobs in JOBS[:2] if settings.quick else JOBS:
        shutil.rmtree(library / "build", ignore_errors=True)
        shutil.rmtree(work / f"cache-{jobs}", ignore_errors=True)
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(work / f"cache-{jobs}"))
        times[jobs] = scons(library, "platform=a5sim", "build/a5sim", f"-j{jobs}", env=env)
    compiles = len(list((library / "build" / "obj").rglob("*.cpp")))
    return [
        Row("scaling", f"-j{jobs} cold build of {2 * specs} artifacts ({compiles} compiles, "
            f"{compiles} links)", seconds, times[1], "the same at -j1",
            note=f"{times[1] / seconds:.2f}x faster than -j1 on {os.cpu_count()} cores")
        for jobs, seconds in times.items() if jobs != 1
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: temp)")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    for row in measure(Settings(runs=args.runs), sizes=sizes, work=args.keep):
        print(f"{row.name}: pypto {fmt_time(row.ours)}, {row.peer_name} {fmt_time(row.peer)}, "
              f"ratio {row.ratio:.2f}x {row.target} {row.note}")


if __name__ == "__main__":
    main()
