"""The `pypto` command: one subcommand per tool, each in its own module.

A tool module exposes `add_arguments(parser)` and `run(args) -> int`, and its docstring
is the tool's `--help` text (`pypto.tools.command_line`); adding a tool means one line
in `TOOLS`.  A module is
imported only when its subcommand is named, so `pypto --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from pypto.tools import command_line

# subcommand → (module, one-line help)
TOOLS: dict[str, tuple[str, str]] = {
    "new": ("pypto.tools.new", "create a kernel project built by pypto's SCons tool"),
    "platforms": ("pypto.tools.platforms", "list the platforms and their backends"),
    "deps-viewer": ("pypto.tools.deps_viewer", "a run's task graph (deps.json): text, DOT, HTML"),
    "operators-doc": ("pypto.tools.operators_doc", "write docs/operators.md from the op registry"),
    "upstream-compat": ("pypto.tools.upstream_compat",
                        "write docs/upstream-compat.md: what of upstream PyPTO runs here"),
    "dump-viewer": ("pypto.tools.dump_viewer", "a run's tensor dump (args_dump/): list, export, "
                    "compare"),
    "triage": ("pypto.tools.triage", "walk the five precision-debugging steps for a kernel"),
    "bench": ("pypto.tools.bench", "benchmarks against peers; writes docs/performance.md"),
}


def tool_parser(name: str) -> tuple[argparse.ArgumentParser, ModuleType]:
    """The parser of `pypto <name>` (its options, its module's docstring as description)
    and the tool's module."""
    module = importlib.import_module(TOOLS[name][0])
    return command_line.tool_parser(module, f"pypto {name}"), module


def main(argv: list[str] | None = None) -> int:
    """Runs `pypto TOOL ...`; returns the tool's exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in TOOLS:
        module = importlib.import_module(TOOLS[argv[0]][0])
        return command_line.run_tool(module, argv[1:], f"pypto {argv[0]}")
    parser = argparse.ArgumentParser(prog="pypto", description="pypto kernel build tools; "
                                     "`pypto TOOL --help` lists a tool's options")
    sub = parser.add_subparsers(dest="tool", metavar="TOOL")
    for name, (_, help_text) in TOOLS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    parser.parse_args(argv)  # --help prints the tools; an unknown one is a usage error
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
