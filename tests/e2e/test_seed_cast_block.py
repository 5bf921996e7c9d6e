"""The precision page's first code block runs as written on both sim platforms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "precision-workflow.zh.md"
SEED = ROOT.parent / "shared" / "seeds" / "precision-workflow.zh.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)\n```", text, flags=re.S)


def test_docs_copy_blocks_are_the_seed_verbatim():
    if not SEED.exists():
        pytest.skip("the design folder ../shared is not beside this checkout")
    seed = SEED.read_text()
    for block in python_blocks(DOC.read_text()):
        assert block in seed


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_first_block_is_bit_exact(platform, run_script):
    block = python_blocks(DOC.read_text())[0]
    assert "def to_fp16" in block
    proc = run_script(block.replace("__PLATFORM__", platform) + '\nprint("BLOCK-OK")\n')
    assert "BLOCK-OK" in proc.stdout


ROWS, COLS = 16, 128


@pl.jit
def to_fp16(x: pl.Tensor[[ROWS, COLS], pl.INT32], out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.cast(x, pl.FP16)
    return out


def _casts(platform: str) -> list[str]:
    x = torch.zeros(ROWS, COLS, dtype=torch.int32)
    out = torch.zeros(ROWS, COLS, dtype=torch.float16)
    text = to_fp16.lower(x, out, config=RunConfig(platform=platform)).as_python()
    return re.findall(r"pl\.cast\(\w+, (pl\.\w+)\)", text)


def test_a2a3_lowers_int32_to_fp16_as_one_cast():
    assert _casts("a2a3sim") == ["pl.FP16"]


def test_a5_lowers_int32_to_fp16_through_fp32():
    assert _casts("a5sim") == ["pl.FP32", "pl.FP16"]
