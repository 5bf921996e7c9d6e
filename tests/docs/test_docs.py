"""Every Python block of the guide runs exactly as written, on both simulator platforms.

The ```python blocks of a page (README.md and docs/*.md) are copied unmodified, in order,
into one script (a reader's session), which runs in a fresh directory with
`PYPTO_PLATFORM` set to a2a3sim, then to a5sim: the platform a `RunConfig` that names
none runs on.  Pages whose blocks need more than a fresh directory run unmodified in
their own tests (OWN_TESTS).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```python\n(.*?)\n```$", flags=re.DOTALL | re.MULTILINE)
PLATFORMS = ("a2a3sim", "a5sim")
OWN_TESTS = {
    "building.md": "tests/aot/test_building_doc.py (runs against a built library)",
    "dependencies.md": "tests/deps/test_dependencies_doc.py (also runs its shell blocks)",
}


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, as written."""
    return BLOCK.findall(page.read_text(encoding="utf-8"))


PAGES = sorted(p for p in [ROOT / "README.md", *DOCS.glob("*.md")]
               if p.name not in OWN_TESTS and python_blocks(p))


def script(page: Path) -> str:
    """The page's blocks in order, as one script."""
    return "\n\n".join(python_blocks(page))


# A page whose blocks are another's (the Chinese precision page: tests/docs/
# test_translation.py) is the same script, run once under the first page's name.
SCRIPTS = {script(page): page for page in reversed(PAGES)}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("page", sorted(SCRIPTS.values()), ids=lambda p: p.stem)
def test_page_runs_as_written(page, platform, run_script):
    proc = run_script(script(page), name=f"{page.stem}.py", env={"PYPTO_PLATFORM": platform})
    assert proc.returncode == 0


def test_every_page_with_python_blocks_is_run_here_or_by_its_own_test():
    assert {p.name for p in DOCS.glob("*.md") if python_blocks(p)} <= (
        {p.name for p in PAGES} | set(OWN_TESTS))
    assert SCRIPTS[script(DOCS / "precision-workflow.zh.md")].name == "precision-workflow.md"
    assert {"README.md", "quickstart.md", "precision-workflow.md"} <= {
        p.name for p in SCRIPTS.values()}
    for test in OWN_TESTS.values():
        assert (ROOT / test.split()[0]).is_file(), test


def test_no_block_needs_a_placeholder_replaced():
    for page in [*PAGES, *(DOCS / name for name in OWN_TESTS)]:
        for block in python_blocks(page):
            assert not re.search(r"__[A-Z]+__", block), (page.name, block[:80])


def test_the_guide_has_the_pages_the_issue_asks_for():
    for name in ("quickstart.md", "language.md", "operators.md", "building.md", "running.md",
                 "dependencies.md", "debugging.md", "precision-workflow.md"):
        assert (DOCS / name).exists(), name


def test_operators_reference_is_not_stale():
    from pypto.tools.operators_doc import render

    assert (DOCS / "operators.md").read_text() == render(), \
        "docs/operators.md is stale: run `pypto operators-doc`"
