"""docs/precision-workflow.zh.md is docs/precision-workflow.md in Chinese, kept in step:
the same sections in the same order, the same runnable blocks, and in every section the
same code spans (the API names, values and claims they carry), links and table shapes.
A change to one page that is not made to the other fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
EN = DOCS / "precision-workflow.md"
ZH = DOCS / "precision-workflow.zh.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)\n```$", flags=re.DOTALL | re.MULTILINE)


def sections(page: Path) -> list[dict]:
    """The page cut at its headings (code blocks do not cut it): per section its heading
    level, its fenced blocks (language, code; only python code is compared), code spans,
    link targets (the two pages' links to each other excepted) and table shapes."""
    text = page.read_text(encoding="utf-8")
    fences = [(lang, code if lang == "python" else "") for lang, code in FENCE.findall(text)]
    prose = FENCE.sub("```", text)
    found, index = [], 0
    for chunk in re.split(r"^(?=#{1,6} )", prose, flags=re.MULTILINE):
        if not chunk.strip():
            continue
        count = chunk.count("```")
        found.append({
            "level": len(chunk) - len(chunk.lstrip("#")),
            "blocks": fences[index:index + count],
            "spans": sorted(set(re.findall(r"`([^`\n]+)`", chunk))),
            "links": sorted(set(re.findall(r"\]\(([^)\s]+)\)", chunk)) - {EN.name, ZH.name}),
            "tables": [len(rows.strip().splitlines()) for rows in
                       re.findall(r"(?:^\|.*\|\n)+", chunk, flags=re.MULTILINE)],
        })
        index += count
    return found


EN_SECTIONS, ZH_SECTIONS = sections(EN), sections(ZH)


def test_the_pages_have_the_same_sections_at_the_same_levels():
    assert len(EN_SECTIONS) == len(ZH_SECTIONS) >= 9
    assert [s["level"] for s in EN_SECTIONS] == [s["level"] for s in ZH_SECTIONS]


def test_the_pages_have_the_same_runnable_blocks():
    en = [code for s in EN_SECTIONS for lang, code in s["blocks"] if lang == "python"]
    zh = [code for s in ZH_SECTIONS for lang, code in s["blocks"] if lang == "python"]
    assert len(en) >= 9 and en == zh


@pytest.mark.parametrize("key", ["blocks", "spans", "links", "tables"])
def test_every_section_carries_the_same(key):
    for number, (en, zh) in enumerate(zip(EN_SECTIONS, ZH_SECTIONS, strict=True)):
        assert en[key] == zh[key], f"section {number}: {key} differ"


def test_each_page_links_to_the_other():
    assert f"]({ZH.name})" in EN.read_text(encoding="utf-8")
    assert f"]({EN.name})" in ZH.read_text(encoding="utf-8")
