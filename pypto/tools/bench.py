"""`pypto bench`: the benchmarks of a pypto checkout (`python -m bench`), same options.

The benchmarks live in the checkout's `bench/` directory, beside the `pypto` package;
an installed pypto without its checkout has none to run.
"""

from __future__ import annotations

import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]


def _bench_main():
    if not (_CHECKOUT / "bench" / "__main__.py").is_file():
        raise SystemExit(f"pypto bench: no bench/ beside the pypto package ({_CHECKOUT}); "
                         "run it from a pypto checkout")
    if str(_CHECKOUT) not in sys.path:
        sys.path.insert(0, str(_CHECKOUT))
    import importlib

    return importlib.import_module("bench.__main__")


def add_arguments(parser) -> None:
    """`python -m bench`'s options."""
    if (_CHECKOUT / "bench" / "__main__.py").is_file():
        _bench_main().add_arguments(parser)


def run(args) -> int:
    """Runs the benchmarks, prints the table and writes docs/performance.md."""
    return _bench_main().run(args)
