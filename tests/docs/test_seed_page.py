"""The page the project was created from (`../shared/seeds/precision-workflow.zh.md`) runs.

The seed is prose without code fences; its three complete programs are cut out by their
first and last lines, exactly as written, and run in order as one reader's session with
the seed's `__PLATFORM__` set to each simulator platform.  Its one-line fragments with
`...` placeholders are illustrations, not programs.  The third program (the probe idiom,
an `@pl.jit.incore` kernel with a temporary `pl.Out`) is called from an orchestration, as
the seed says to, and must hand back the intermediate value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT.parent / "shared" / "seeds" / "precision-workflow.zh.md"

# (first line, last line) of each program in the seed.
PROGRAMS = (
    ("import pypto.language as pl", ")"),
    ("from pypto.debug import torch_codegen",
     'assert "def " in src and "torch" in src                       # it is executable python'),
    ("@pl.jit.incore", "    return out, probe"),
)

PROBE_CALL = '''
@pl.jit
def run_fused(x: pl.Tensor, out: pl.Out[pl.Tensor], probe: pl.Out[pl.Tensor]):
    out, probe = fused(x, out, probe)
    return out, probe


x = torch.randn(64, 128, generator=torch.Generator().manual_seed(11))
out, probe = torch.zeros(64, 128), torch.zeros(64, 128)
run_fused(x, out, probe, config=CFG)
assert torch.equal(probe, x + 1.0)                  # the intermediate, exactly
# Against a float64 reference: the kernel's exp is correctly rounded (docs/numerics.md).
assert torch.allclose(out.double(), torch.exp((x + 1.0).double()), rtol=4 * 2.0**-24, atol=0)
print("SEED-OK")
'''


def seed_programs(text: str) -> list[str]:
    """The seed's complete programs, cut out by their first and last lines."""
    lines = text.splitlines()
    programs = []
    for first, last in PROGRAMS:
        start = lines.index(first)
        end = lines.index(last, start)
        programs.append("\n".join(lines[start:end + 1]))
    return programs


@pytest.fixture(scope="module")
def seed_text() -> str:
    if not SEED.exists():
        pytest.skip(f"the seed page is not beside this checkout ({SEED})")
    return SEED.read_text(encoding="utf-8")


def test_the_seed_holds_three_complete_programs(seed_text):
    cast, codegen, probe = seed_programs(seed_text)
    assert 'RunConfig(platform="__PLATFORM__")' in cast and "torch.equal(" in cast
    assert "torch_codegen(fused.lower(" in codegen
    assert "probe: pl.Out[pl.Tensor]" in probe


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_the_seeds_programs_run_as_written(seed_text, platform, run_script):
    session = "\n\n".join(seed_programs(seed_text)).replace("__PLATFORM__", platform)
    proc = run_script(session + "\n" + PROBE_CALL, name="seed_page.py")
    assert "SEED-OK" in proc.stdout
