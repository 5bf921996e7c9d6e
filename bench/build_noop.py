"""No-op rebuild of a 100-spec synthetic kernel library against plain SCons.

Builds a synthetic library (100 spec files, 2 variants each) for a5sim once, then times
`scons platform=a5sim` with nothing to do, and the same no-op of a plain SCons project
with as many targets, each copying one small file.  Prints both medians and the ratio.
The target (issue 7): the no-op within 1.0 s and within 1.5x of plain SCons.

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
        name="k{i:03d}",
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


def write_library(root: Path, specs: int) -> None:
    """A project at `root`: pypto's SConstruct and `specs` synthetic spec files.  All
    specs share one kernel body, so the cold build compiles it once."""
    (root / "kernels").mkdir(parents=True)
    shutil.copy(ROOT / "SConstruct", root / "SConstruct")
    shutil.copytree(ROOT / "site_scons", root / "site_scons",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "kernels" / "__init__.py").write_text('"""Synthetic kernels."""\n')
    for i in range(specs):
        (root / "kernels" / f"k{i:03d}.py").write_text(SPEC.format(i=i, scale=2.0))


def write_plain(root: Path, count: int) -> None:
    """A plain SCons project with `count` targets, each copying a small file."""
    (root / "src").mkdir(parents=True)
    for i in range(count):
        (root / "src" / f"t{i}.txt").write_text(f"{i}\n")
    (root / "SConstruct").write_text(PLAIN.format(count=count))


def scons(root: Path, *args: str, env: dict | None = None) -> float:
    """Wall time of one `python -m SCons` run in `root` (which must succeed)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"scons {' '.join(args)} failed in {root}:\n{proc.stdout}{proc.stderr}")
    return elapsed


def count_targets(build: Path) -> int:
    """Files the library build declares as targets (spec descriptions, goldens, artifact
    manifests, the library index)."""
    specs = [p for p in (build / "specs").rglob("*.json") if p.name != "index.json"]
    goldens = [p for p in (build / "goldens").rglob("*") if p.is_file()]
    manifests = list((build / "a5sim").rglob("manifest.json"))
    return len(specs) + len(goldens) + len(manifests) + 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build here and keep it (default: temp)")
    args = parser.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="pypto-bench-"))
    library, plain = work / "library", work / "plain"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYPTO_CACHE_DIR=str(work / "cache"))
    try:
        if not library.exists():
            write_library(library, args.specs)
        cold = scons(library, "platform=a5sim", f"-j{os.cpu_count() or 1}", env=env)
        targets = count_targets(library / "build")
        if not plain.exists():
            write_plain(plain, targets)
        scons(plain)
        noop = [scons(library, "platform=a5sim", env=env) for _ in range(args.runs)]
        base = [scons(plain) for _ in range(args.runs)]
        lib_s, base_s = statistics.median(noop), statistics.median(base)
        print(f"synthetic library: {args.specs} specs, {targets} targets; cold build {cold:.1f} s")
        print(f"no-op rebuild (median of {args.runs}): pypto {lib_s:.3f} s, "
              f"plain SCons {base_s:.3f} s with {targets} targets")
        print(f"ratio pypto/plain: {lib_s / base_s:.2f}x  (target: <= 1.5x and <= 1.0 s)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
