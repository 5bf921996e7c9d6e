"""Upstream's user guide, run as its authors run it: every page of the snapshot's
`docs/en/user` with executable blocks (`<!-- doctest: setup -->` / `<!-- doctest: run -->`
before a python block) runs its blocks in order in one interpreter, `__PLATFORM__` set to
the platform.  The blocks' own torch comparisons are the checks; the last line printed,
after every block, says they all ran.  A page that cannot run here stops with the refusal
`pypto.tools.upstream_compat.GUIDE_PAGES` lists (docs/upstream-compat.md is generated from
it).  One page runs on a2a3sim by default; the rest carry @pytest.mark.slow.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pypto.tools import upstream_compat
from pypto.tools.upstream_compat import GUIDE_DONE, GUIDE_PAGES, GuidePage, guide_script

SNAPSHOT = upstream_compat.snapshot_root()
PLATFORMS = tuple(p for p in os.environ.get("PYPTO_UPSTREAM_PLATFORMS", "a2a3sim,a5sim").split(",")
                  if p)
DEFAULT = ("docs/en/user/00-getting_started.md", "a2a3sim")

pytestmark = pytest.mark.skipif(
    not (SNAPSHOT / upstream_compat.GUIDE).is_dir(),
    reason=f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}/"
           f"{upstream_compat.GUIDE}); set PYPTO_UPSTREAM_ROOT to a checkout of "
           "hw-native-sys/pypto to run these tests")


def _params():
    for platform in PLATFORMS:
        for page in GUIDE_PAGES:
            marks = [] if (page.path, platform) == DEFAULT else [pytest.mark.slow]
            name = page.path.removeprefix(upstream_compat.GUIDE + "/").removesuffix(".md")
            yield pytest.param(page, platform, id=f"{name}-{platform}", marks=marks)


def test_the_table_lists_every_page_with_executable_blocks():
    assert upstream_compat.guide_pages(SNAPSHOT) == sorted(p.path for p in GUIDE_PAGES)


@pytest.mark.parametrize("page, platform", list(_params()))
def test_upstream_guide_page_runs(page: GuidePage, platform: str, tmp_path):
    script = tmp_path / "page.py"
    script.write_text(guide_script((SNAPSHOT / page.path).read_text(), platform))
    env = dict(os.environ, PYPTO_WORK_DIR=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=900)
    report = f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    if page.refused:
        assert result.returncode != 0, report
        for fragment in page.refused:
            assert fragment in result.stderr, report
        assert f"{script}:" in result.stderr, report  # located in the page's code
        return
    assert result.returncode == 0, report
    assert result.stdout.splitlines()[-1] == GUIDE_DONE, report


def test_a_page_script_is_its_blocks_in_order():
    text = ("intro\n<!-- doctest: setup -->\n```python\nX = 1\n```\n"
            "not run:\n```python\nraise SystemExit(1)\n```\n"
            "<!-- doctest: run -->\n```python\ncfg = '__PLATFORM__'\nassert X == 1\n```\n")
    script = guide_script(text, "a5sim")
    assert script == f"X = 1\n\ncfg = 'a5sim'\nassert X == 1\n\nprint({GUIDE_DONE!r})\n"
