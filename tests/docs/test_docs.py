"""Every runnable code block of the guide runs, on both simulator platforms.

Convention: the ```python blocks of a page run in order as one script (a reader's
session); `__PLATFORM__` is replaced by `a2a3sim` and by `a5sim` (pages without it run
once). A block preceded by the line `<!-- pypto:norun -->` is not run. Pages whose blocks
need more than a fresh directory have their own tests (listed in OWN_TESTS).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"(<!-- pypto:norun -->\n)?```python\n(.*?)\n```", flags=re.DOTALL)
OWN_TESTS = {
    "building.md": "tests/aot/test_building_doc.py (runs against a built library)",
    "dependencies.md": "tests/deps/test_dependencies_doc.py (also runs its shell blocks)",
}


def runnable_blocks(page: Path) -> list[str]:
    return [code for norun, code in BLOCK.findall(page.read_text()) if not norun]


PAGES = sorted(p for p in DOCS.glob("*.md") if p.name not in OWN_TESTS and runnable_blocks(p))


def _cases():
    for page in PAGES:
        platforms = ["a2a3sim", "a5sim"] if "__PLATFORM__" in page.read_text() else [None]
        for platform in platforms:
            yield pytest.param(page, platform, id=f"{page.stem}-{platform or 'any'}")


@pytest.mark.parametrize("page, platform", list(_cases()))
def test_page_runs(page, platform, run_script):
    script = "\n\n".join(runnable_blocks(page))
    if platform is not None:
        script = script.replace("__PLATFORM__", platform)
    proc = run_script(script + '\nprint("PAGE-OK")\n', name=f"{page.stem}.py")
    assert "PAGE-OK" in proc.stdout


def test_the_guide_has_the_pages_the_issue_asks_for():
    for name in ("quickstart.md", "language.md", "operators.md", "building.md", "running.md",
                 "dependencies.md", "debugging.md", "precision-workflow.md"):
        assert (DOCS / name).exists(), name


def test_seed_blocks_are_among_the_runnable_ones():
    zh = runnable_blocks(DOCS / "precision-workflow.zh.md")
    assert len(zh) == 3 and "def to_fp16" in zh[0] and "torch_codegen" in zh[1]


def test_operators_reference_is_not_stale():
    from pypto.tools.operators_doc import render

    assert (DOCS / "operators.md").read_text() == render(), \
        "docs/operators.md is stale: run `pypto operators-doc`"
