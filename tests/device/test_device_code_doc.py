"""docs/device-code.md shows generated device sources: each one is what codegen gives today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pypto.codegen.device import device_kernel
from pypto.compiler import lower
from pypto.ir.types import FunctionType
from pypto.platform import get_platform
from pypto.spec.module import specs_of

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "device-code.md"
BLOCK = re.compile(r"<!-- pypto:device-source (\w+)/(\w+)/(\S+) (\w+) -->\n```cpp\n(.*?)\n```",
                   flags=re.DOTALL)
BLOCKS = BLOCK.findall(PAGE.read_text())


def test_the_page_shows_one_kernel_of_each_family_with_device_code():
    assert sorted(module for module, *_ in BLOCKS) == [
        "activations", "casts", "elementwise", "matmul", "normalization", "reductions"]


@pytest.mark.parametrize(("module", "kernel", "variant", "platform", "shown"), BLOCKS,
                         ids=[f"{m}/{k}" for m, k, *_ in BLOCKS])
def test_each_shown_source_is_what_codegen_generates(module, kernel, variant, platform, shown):
    (spec,) = [k for k in specs_of(ROOT / "kernels" / f"{module}.py", ROOT) if k.name == kernel]
    lowered = lower(spec.program(variant), get_platform(platform))
    (fn,) = [f for f in lowered.functions if f.func_type is FunctionType.InCore]
    generated = device_kernel(fn).cpp.rstrip()
    assert generated == shown, f"docs/device-code.md: the {kernel} source is stale; regenerate it"
