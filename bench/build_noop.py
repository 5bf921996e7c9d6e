"""Build speed of a 100-spec synthetic kernel library against plain SCons.

Builds a synthetic library (100 spec files, 2 variants each) for a5sim from cold, then
times `scons platform=a5sim` with nothing to do, and a rebuild after one spec's kernel
changes (its scale constant: new IR, so its artifacts and goldens rebuild).  The peer
is a plain SCons project with as many targets, each copying one small file: its cold
build, its no-op and its rebuild after one source file changes.  Targets (issue 7/9):
the no-op within 1.0 s and within 1.5x of plain SCons; the edit rebuilds only the
edited spec's targets.

    python -m bench.build_noop [--specs 100] [--runs 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Row, Settings

ROOT = Path(__file__).resolve().parents[1]

SPEC = '''"""Synthetic spec {i}: out = a * {scale} in two shapes."""

import pypto.language as pl
from pypto import spec

SCALE = {scale}


@pl.jit
def scale(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, SCALE)
    return out


SPECS = [
    spec.Kernel(
        scale,
        name="k{i:04d}",
        variants={{
            "f32_16x32": {{"a": ("fp32", [16, 32]), "out": ("fp32", [16, 32])}},
            "f32_3x40": {{"a": ("fp32", [3, 40]), "out": ("fp32", [3, 40])}},
        }},
        inputs=lambda rng, v: {{"a": rng.normal(v.a)}},
        reference=lambda a: a.double() * SCALE,
        tolerance=spec.Exact("one FP32 rounding of the product, as the reference's cast"),
    )
]
'''

PLAIN = '''env = Environment(tools=[])
for i in range({count}):
    env.Command(f"out/t{{i}}.txt", f"src/t{{i}}.txt", Copy("$TARGET", "$SOURCE"))
'''


def write_library(root: Path, specs: int, distinct: bool = False) -> None:
    """A project at `root`: pypto's SConstruct and `specs` synthetic spec files.  All
    specs share one kernel body, so the cold build compiles it once; `distinct` gives each
    its own (its own scale constant: two artifacts of their own to compile)."""
    (root / "kernels").mkdir(parents=True)
    shutil.copy(ROOT / "SConstruct", root / "SConstruct")
    (root / "kernels" / "__init__.py").write_text('"""Synthetic kernels."""\n')
    for i in range(specs):
        scale = 2.0 + i / 64 if distinct else 2.0
        (root / "kernels" / f"k{i:04d}.py").write_text(SPEC.format(i=i, scale=scale))


def write_plain(root: Path, count: int) -> None:
    """A plain SCons project with `count` targets, each copying a small file."""
    (root / "src").mkdir(parents=True)
    for i in range(count):
        (root / "src" / f"t{i}.txt").write_text(f"{i}\n")
    (root / "SConstruct").write_text(PLAIN.format(count=count))


def scons(root: Path, *args: str, env: dict | None = None) -> float:
    """Wall time of one `python -m SCons` run in `root` (which must succeed)."""
    return run_scons(root, *args, env=env)[0]


def run_scons(root: Path, *args: str, env: dict | None = None) -> tuple[float, str]:
    """Wall time and output of one `python -m SCons` run in `root` (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"scons {' '.join(args)} failed in {root}:\n{proc.stdout}{proc.stderr}")
    return elapsed, proc.stdout


def count_targets(build: Path) -> int:
    """Files the library build declares as targets (spec descriptions, goldens, artifact
    plans and manifests, the library index)."""
    specs = [p for p in (build / "specs").rglob("*.json") if p.name != "index.json"]
    goldens = [p for p in (build / "goldens").rglob("*") if p.is_file()]
    manifests = list((build / "a5sim").rglob("manifest.json"))
    plans = list((build / "obj").rglob("plan.json"))
    return len(specs) + len(goldens) + len(manifests) + len(plans) + 1


def snapshot(build: Path) -> dict[str, int]:
    """Every declared target under `build` (as `count_targets` counts them) with its
    modification time."""
    files = [p for p in (build / "specs").rglob("*.json") if p.name != "index.json"]
    files += [p for p in (build / "goldens").rglob("*") if p.is_file()]
    files += list((build / "a5sim").rglob("manifest.json"))
    files += list((build / "obj").rglob("plan.json"))
    files += list(build.glob("library-*.json"))
    return {str(p.relative_to(build)): p.stat().st_mtime_ns for p in files}


def touched(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """Files written between two snapshots (new or with a new modification time)."""
    return sorted(k for k, v in after.items() if before.get(k) != v)


def edit_spec(library: Path, index: int, scale: float) -> None:
    """Changes spec `index`'s kernel (its scale constant): new IR, so it must rebuild."""
    (library / "kernels" / f"k{index:04d}.py").write_text(SPEC.format(i=index, scale=scale))


def edit_plain(plain: Path, index: int, generation: int) -> None:
    """Changes one source file of the plain project."""
    (plain / "src" / f"t{index}.txt").write_text(f"{index} edit {generation}\n")


def measure(settings: Settings, specs: int | None = None, keep: Path | None = None) -> list[Row]:
    """Cold build, no-op and one-spec-edit rebuild of the synthetic library vs plain SCons."""
    specs = specs if specs is not None else (4 if settings.quick else 100)
    runs = settings.runs
    work = keep or Path(tempfile.mkdtemp(prefix="pypto-bench-"))
    library, plain = work / "library", work / "plain"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(work / "cache"))
    jobs = f"-j{os.cpu_count() or 1}"
    try:
        if not library.exists():
            write_library(library, specs)
        cold = scons(library, "platform=a5sim", jobs, env=env)
        targets = count_targets(library / "build")
        if not plain.exists():
            write_plain(plain, targets)
        plain_cold = scons(plain, jobs)
        noop = [scons(library, "platform=a5sim", env=env) for _ in range(runs)]
        base = [scons(plain) for _ in range(runs)]

        # One spec edit: a new scale each run, so every run really rebuilds (and never
        # hits the artifact cache of the previous run).  The last spec: the first one's
        # plans are also those of every spec sharing its kernel body.
        edits, plain_edits, written = [], [], []
        for run in range(runs):
            before = snapshot(library / "build")
            edit_spec(library, specs - 1, 3.0 + run)
            edits.append(scons(library, "platform=a5sim", jobs, env=env))
            written.append(len(touched(before, snapshot(library / "build"))))
            edit_plain(plain, 0, run)
            plain_edits.append(scons(plain, jobs))
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)

    lib_s, base_s = statistics.median(noop), statistics.median(base)
    edit_s, plain_edit_s = statistics.median(edits), statistics.median(plain_edits)
    # A spec's own targets: its description, 2 goldens x 3 files, 2 artifact manifests and
    # their 2 plans; plus the library index that names them.
    own = 1 + 2 * 3 + 2 + 2 + 1
    what = f"{specs} specs, {targets} targets"
    return [
        Row("build", f"cold build ({what}, {jobs})", cold, plain_cold,
            "plain SCons cold build, same target count",
            note="one run: every spec shares one kernel body, compiled once"),
        Row("build", f"no-op rebuild ({what})", lib_s, base_s, "plain SCons no-op",
            target="<= 1.0 s and <= 1.5x", met=lib_s <= 1.0 and lib_s <= 1.5 * base_s),
        Row("build", "one-spec-edit rebuild", edit_s, plain_edit_s,
            "plain SCons, one source edited",
            target=f"touches only that spec's targets (<= {own} files)",
            met=max(written) <= own,
            note=f"targets written: {max(written)} (its description, 2 goldens of 3 files, "
                 "2 plans and 2 artifacts, each a kernel and an orchestration compiled; the "
                 "index)"),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: temp)")
    args = parser.parse_args(argv)
    for row in measure(Settings(runs=args.runs), specs=args.specs, keep=args.keep):
        print(f"{row.name}: pypto {row.ours:.3f} s, {row.peer_name} {row.peer:.3f} s, "
              f"ratio {row.ratio:.2f}x {row.target} {row.note}")


if __name__ == "__main__":
    main()
