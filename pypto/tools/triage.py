"""`pypto triage`: walk the five precision-debugging steps for one kernel and its golden.

    pypto triage add                           # a spec of ./kernels/ (first variant), its
                                               # golden generated from the spec
    pypto triage add/f16_64x256 --golden build/goldens/add/f16_64x256
    pypto triage my_kernels.py:fused --golden golden/ --rtol 1e-5 --atol 1e-5
    pypto triage my_kernels.py:fused --golden golden/ --inputs inputs.safetensors

It prints what each step found and stops at the first one that explains the difference
(see `pypto.debug.triage`).  Exit status: 1-5 the explaining step, 0 when the kernel
matches its golden on every run, 6 when no step explains it, 64 when the kernel, golden
or inputs cannot be used (a bad command line included; a FILE.py that fails to import
is named with the line that failed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pypto.tools.command_line import run_tool

EXIT_USAGE = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `pypto triage`."""
    parser.add_argument("kernel", help="a spec name (`kernel` or `kernel/variant`) from "
                        "<top>/kernels/, or FILE.py:CALLABLE")
    parser.add_argument("--golden", type=Path, help="the golden directory (write_golden); "
                        "required for FILE.py:CALLABLE, generated from the spec otherwise")
    parser.add_argument("--inputs", type=Path, help="a .safetensors file of inputs by "
                        "parameter name, replacing the golden's")
    parser.add_argument("--platform", help="the platform to run on (default: "
                        "$PYPTO_PLATFORM, else a2a3sim)")
    for name, kind in (("rtol", "relative"), ("atol", "absolute")):
        parser.add_argument(f"--{name}", type=float, help=f"the {kind} tolerance you checked "
                            "with (default: the golden's)")
    parser.add_argument("--seeds", type=int, default=8,
                        help="schedule seeds step 2 runs (default 8)")
    parser.add_argument("--work-dir", type=Path, help="where dumps and pass dumps go "
                        "(default: a new temporary directory)")
    parser.add_argument("--top", type=Path, help="the project holding kernels/ (default: .)")

    def usage_error(message: str):
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)

    parser.error = usage_error  # exit 2 would read as "step 2 explains it"


def run(args: argparse.Namespace) -> int:
    """Triage the kernel; the exit status names the step that explains the difference."""
    from pypto.debug.triage import load_callable, triage, triage_spec
    from pypto.ir.errors import PyptoError
    from pypto.runtime.errors import PyptoRuntimeError

    options = dict(platform=args.platform, rtol=args.rtol, atol=args.atol, seeds=args.seeds,
                   work_dir=args.work_dir)
    try:
        if args.inputs is not None:
            from safetensors.torch import load_file

            options["inputs"] = load_file(str(args.inputs))
        path, colon, name = args.kernel.rpartition(":")
        if colon and path.endswith(".py"):
            if args.golden is None:
                print("pypto triage: FILE.py:CALLABLE needs --golden DIR (write one with "
                      "pypto.runtime.write_golden)", file=sys.stderr)
                return EXIT_USAGE
            report = triage(load_callable(path, name), args.golden, **options)
        else:
            report = triage_spec(args.kernel, top=args.top, golden=args.golden, **options)
    except (OSError, ValueError, TypeError, PyptoError, PyptoRuntimeError) as exc:
        print(f"pypto triage: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return report.exit_code


def main(argv: list[str] | None = None) -> int:
    """`python -m pypto.tools.triage ...`: `pypto triage`."""
    return run_tool(sys.modules[__name__], argv, "pypto triage")


if __name__ == "__main__":
    sys.exit(main())
