"""The probe idiom of the precision page: an extra `pl.Out` on an `@pl.jit.incore` kernel,
stored into and carried out through the orchestration, shows an intermediate value."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "precision-workflow.zh.md"

ORCHESTRATION = '''
import torch
from pypto.runtime import RunConfig


@pl.jit
def run_fused(x: pl.Tensor, out: pl.Out[pl.Tensor], probe: pl.Out[pl.Tensor]):
    out, probe = fused(x, out, probe)
    return out, probe


for platform in ("a2a3sim", "a5sim"):
    x = torch.randn(64, 128, generator=torch.Generator().manual_seed(11))
    out, probe = torch.zeros(64, 128), torch.zeros(64, 128)
    run_fused(x, out, probe, config=RunConfig(platform=platform))
    assert torch.equal(probe, x + 1.0), platform                  # the intermediate, exactly
    # The reference in float64: torch's FP32 exp goes to MKL VML, whose first call in a
    # process may run one thread's chunk at low accuracy (docs/numerics.md).
    want = torch.exp((x + 1.0).double())
    assert torch.allclose(out.double(), want, rtol=4 * 2.0**-24, atol=0), platform
print("PROBE-OK")
'''


def test_the_seeds_probe_block_called_from_an_orchestration_returns_the_intermediate(
        run_script):
    blocks = re.findall(r"```python\n(.*?)\n```", PAGE.read_text(), flags=re.DOTALL)
    probe_block = blocks[2]
    assert "probe: pl.Out[pl.Tensor]" in probe_block and "@pl.jit.incore" in probe_block
    script = "import pypto.language as pl\n\n" + probe_block + "\n" + ORCHESTRATION
    assert "PROBE-OK" in run_script(script, name="probe_idiom.py").stdout
