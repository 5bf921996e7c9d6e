"""`python -m bench` (or `pypto bench`): every benchmark, a table, docs/performance.md.

    python -m bench [--quick] [--runs N] [--only build,compile,...] [--output PATH]
                    [--scale-sizes 10,100,1000,5000]

Groups: build (bench/build_noop.py), scaling (bench/build_scaling.py), compile
(bench/compile_latency.py), dispatch (bench/dispatch.py), simulator
(bench/sim_throughput.py), library (bench/library.py), device (bench/device_code.py: device
sources and pto-isa's CPU model against a5sim).  The report ends with bench/notes.md, the
hand-written reading of the numbers and the record of what changed them.  `--quick`
shrinks every problem (for the smoke test; its numbers mean nothing).  The scaling
group's 5,000-spec library takes about half an hour on 2 loaded cores: `--scale-sizes
10,100` for a look.  On a
machine where OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set, unset both for the bench
command alone (`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m bench`) so the
torch peers run their best kernels; never change them in tests or CI.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ("build", "scaling", "compile", "dispatch", "simulator", "library", "device")


def main(argv: list[str] | None = None) -> int:
    """Runs the chosen groups, prints the table, writes the report; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `python -m bench` and `pypto bench`."""
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and few runs: checks the benchmarks run, nothing more")
    parser.add_argument("--runs", type=int, default=None,
                        help="repetitions per timing, the median is reported (default 5; 2 quick)")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups among {', '.join(GROUPS)}")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "performance.md",
                        help="where to write the report (default docs/performance.md)")
    parser.add_argument("--scale-sizes", default=None,
                        help="library sizes (specs) of the scaling group, comma-separated "
                             "(default 10,100,1000,5000; 2,4 with --quick)")


def run(args: argparse.Namespace) -> int:
    """Runs `python -m bench` with parsed `args`."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.harness import Settings, machine
    from bench.report import markdown, table

    settings = Settings(runs=args.runs or (2 if args.quick else 5), quick=args.quick)
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        raise SystemExit(f"unknown group(s) {unknown}; choose among {', '.join(GROUPS)}")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pypto-bench-") as tmp:
        rows = _measure(groups, settings, args.scale_sizes, Path(tmp))
    seconds = time.perf_counter() - start
    print(table(rows))
    notes = (ROOT / "bench" / "notes.md").read_text(encoding="utf-8")
    text = markdown(rows, machine(), settings, seconds, notes)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"\nwrote {args.output} ({seconds:.0f} s)")
    return 0


def _measure(groups: list[str], settings, scale_sizes: str | None, work: Path) -> list:
    """The rows of the chosen groups, in the report's order; `work` holds what they build."""
    from bench import (
        build_noop,
        build_scaling,
        compile_latency,
        device_code,
        dispatch,
        library,
        sim_throughput,
    )

    rows = []
    if "build" in groups or "library" in groups:
        # The library group opens the build group's synthetic library.
        build_rows = build_noop.measure(settings, keep=work)
        if "build" in groups:
            rows += build_rows
    if "scaling" in groups:
        sizes = scale_sizes and tuple(int(n) for n in scale_sizes.split(","))
        rows += build_scaling.measure(settings, sizes=sizes or None, work=work / "scaling")
    if "compile" in groups:
        rows += compile_latency.measure(settings)
    if "dispatch" in groups:
        rows += dispatch.measure(settings)
    if "simulator" in groups:
        rows += sim_throughput.measure(settings)
    if "library" in groups:
        rows += library.golden_rows(settings)
        rows += library.open_rows(settings, work / "library" / "build")
    if "device" in groups:
        rows += device_code.measure(settings)
    return rows


if __name__ == "__main__":
    sys.exit(main())
