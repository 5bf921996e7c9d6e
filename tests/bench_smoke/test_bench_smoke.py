"""`python -m bench --quick` runs every benchmark on tiny sizes and writes its report.

Times are never asserted: only that each group produced its rows and the file exists.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_quick_bench_runs_every_group_and_writes_the_report(tmp_path):
    report = tmp_path / "performance.md"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--output", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = report.read_text(encoding="utf-8")
    for section in ("## Machine", "## Build", "## Scaling", "## Compile", "## Dispatch",
                    "## Simulator", "## Library"):
        assert section in text
    assert "nproc" in text and "torch" in text
    assert text.endswith((ROOT / "bench" / "notes.md").read_text(encoding="utf-8"))
    assert "ratio" in proc.stdout


def test_pypto_bench_is_a_cli_subcommand():
    from pypto.tools.cli import TOOLS

    assert TOOLS["bench"][0] == "pypto.tools.bench"
