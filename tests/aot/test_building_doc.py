"""docs/building.md: its Python blocks run as written, against a built library."""

from __future__ import annotations

import re
import subprocess
import sys

from scons_project import ROOT

DOC = ROOT / "docs" / "building.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_python_blocks_of_the_building_guide_run(shipped_builds, tmp_path):
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 3
    # One script, blocks in order (like a reader's session); run where the package is built.
    script = tmp_path / "building_doc.py"
    script.write_text("\n\n".join(blocks))
    proc = subprocess.run([sys.executable, str(script)], cwd=shipped_builds[0].root,
                          env={**shipped_builds[0].env()}, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "within tolerance" in proc.stdout
