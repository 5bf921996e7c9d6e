"""The `pypto` command: one subcommand per tool, each in its own module.

A tool module exposes `add_arguments(parser)` and `run(args) -> int`; adding a tool
means one line in `TOOLS`.  Modules are imported only when their subcommand runs, so
`pypto --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand → (module, one-line help)
TOOLS: dict[str, tuple[str, str]] = {
    "new": ("pypto.tools.new", "create a kernel project built by pypto's SCons tool"),
    "platforms": ("pypto.tools.platforms", "list the platforms and their backends"),
    "deps-viewer": ("pypto.tools.deps_viewer", "a run's task graph (deps.json): text, DOT, HTML"),
    "operators-doc": ("pypto.tools.operators_doc", "write docs/operators.md from the op registry"),
    "dump-viewer": ("pypto.tools.dump_viewer", "a run's tensor dump (args_dump/): list, export, "
                    "compare"),
    "triage": ("pypto.tools.triage", "walk the five precision-debugging steps for a kernel"),
    "bench": ("pypto.tools.bench", "benchmarks against peers; writes docs/performance.md"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pypto", description="pypto kernel build tools")
    sub = parser.add_subparsers(dest="tool", metavar="TOOL")
    for name, (module, help_text) in TOOLS.items():
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(_module=module)
    argv = sys.argv[1:] if argv is None else argv
    known, _ = parser.parse_known_args(argv)
    if known.tool is None:
        parser.print_help()
        return 2
    module = importlib.import_module(known._module)
    tool_parser = argparse.ArgumentParser(prog=f"pypto {known.tool}",
                                          description=TOOLS[known.tool][1])
    module.add_arguments(tool_parser)
    args = tool_parser.parse_args(argv[1:])
    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
