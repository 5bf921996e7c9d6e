"""Writing (or checking) a documentation page generated from the code."""

from __future__ import annotations

from pathlib import Path


def add_page_arguments(parser, default: Path, source: str) -> None:
    """`-o/--output` (default `default`) and `--check` of a page generated from `source`."""
    parser.add_argument("-o", "--output", type=Path, default=default,
                        help=f"where to write the page (default: docs/{default.name})")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if the page differs from the {source} instead of "
                             "writing it")


def write_or_check(text: str, output: Path, command: str, check: bool) -> int:
    """Writes `text` to `output`; with `check`, instead returns 1 (saying to run
    `pypto <command>`) when the page differs from `text`."""
    if check:
        current = output.read_text() if output.exists() else ""
        if current != text:
            print(f"{output} is stale: run `pypto {command}`")
            return 1
        return 0
    output.write_text(text)
    print(f"wrote {output}")
    return 0
