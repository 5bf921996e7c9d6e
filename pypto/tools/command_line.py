"""A tool module's command line: the parser of its options and the run of it.

A tool module exposes `add_arguments(parser)` and `run(args) -> int`, and its docstring
is its `--help` text.  `pypto TOOL` (`pypto.tools.cli`) and a tool's own `main` (for
`python -m`) run it alike, through `run_tool`.
"""

from __future__ import annotations

import argparse
from types import ModuleType


def tool_parser(module: ModuleType, prog: str) -> argparse.ArgumentParser:
    """The parser of tool `module`: its options, its docstring as description; `prog`
    names it in usage lines."""
    parser = argparse.ArgumentParser(prog=prog, description=module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    module.add_arguments(parser)
    return parser


def run_tool(module: ModuleType, argv: list[str] | None, prog: str) -> int:
    """Runs tool `module` on its arguments `argv` (the command line's when None); returns
    its exit status."""
    return int(module.run(tool_parser(module, prog).parse_args(argv)) or 0)
