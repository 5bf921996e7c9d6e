"""docs/dependencies.md runs as written: its Python blocks in order, then its shell blocks."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "dependencies.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", DOC.read_text(), flags=re.DOTALL)


def test_every_code_block_of_the_page_runs(run_script, tmp_path):
    python = blocks("python")
    assert len(python) >= 6
    proc = run_script("\n\n".join(python) + '\nprint("DOC-OK")\n', name="dependencies_doc.py")
    assert "DOC-OK" in proc.stdout
    for block in blocks("bash"):
        for command in block.splitlines():
            assert command.startswith("pypto ")
            argv = [sys.executable, "-m", "pypto.tools.cli", *command.split()[1:]]
            subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (tmp_path / "deps.html").read_text().startswith("<!DOCTYPE html>")
