"""`pypto new DIR`: a kernel project of its own, built by the SCons tool pypto ships.

Writes `DIR/SConstruct` (three lines: load the tool, declare the library), an empty
`DIR/kernels/` package for the spec modules and a `.gitignore` for what builds write.
Add a spec module to `kernels/` (docs/building.md, "Declaring a spec"), then run
`scons platform=a5sim check` in `DIR`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# What the project holds: file → template (templates/project/).
FILES = {
    "SConstruct": "project/SConstruct.j2",
    "kernels/__init__.py": "project/kernels_init.py.j2",
    ".gitignore": "project/gitignore.j2",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of `pypto new`."""
    parser.add_argument("directory", type=Path, help="where to create the project (a new or "
                        "empty directory)")
    parser.add_argument("--name", help="the library's name, in its package file names "
                        "(default: the directory's name)")
    parser.add_argument("--version", default="0.1.0", help="the library's version "
                        "(default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    """Writes the project; 2 when the directory is not empty or the name is unusable."""
    from pypto.spec.package import check_dist_name

    directory: Path = args.directory
    name = args.name or directory.resolve().name
    try:
        check_dist_name("name", name)
        check_dist_name("version", args.version)
    except ValueError as exc:
        print(f"pypto new: {exc} (choose one with --name / --version)", file=sys.stderr)
        return 2
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        print(f"pypto new: {directory} exists and is not an empty directory; "
              "choose a new one", file=sys.stderr)
        return 2
    write_project(directory, name, args.version)
    print(f"created kernel project {name} in {directory}: add spec modules to "
          f"{directory / 'kernels'}, then run `scons platform=a5sim check` there")
    return 0


def write_project(directory: Path, name: str, version: str) -> list[Path]:
    """Writes the project's files under `directory` and returns them."""
    from pypto.codegen.environment import render

    written = []
    for relpath, template in FILES.items():
        path = directory / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(template, name=name, version=version), encoding="utf-8")
        written.append(path)
    return written
