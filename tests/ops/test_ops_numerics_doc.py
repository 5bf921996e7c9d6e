"""docs/numerics.md runs as written: its Python blocks, in order."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "numerics.md"


def test_every_python_block_of_the_page_runs(run_script):
    blocks = re.findall(r"```python\n(.*?)\n```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 2
    proc = run_script("\n\n".join(blocks) + '\nprint("DOC-OK")\n', name="numerics_doc.py")
    assert "DOC-OK" in proc.stdout
