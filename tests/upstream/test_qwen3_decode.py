"""qwen3_jit's decode layer once its written inputs are declared as such.

Unmodified, `examples/models/qwen3_jit/qwen3_decode.py` is refused where it writes its
input parameter `k_cache` (test_upstream_programs.py; docs/upstream-compat.md says why).
With that declaration alone changed to `pl.InOut`, every kernel of the layer lowers at
its full shapes: the program's own `__main__` prints the functions it lowered to.  The
package is copied out of the snapshot into a temporary directory for the edit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from pypto.tools import upstream_compat

SNAPSHOT = upstream_compat.snapshot_root()
PACKAGE = SNAPSHOT / "examples" / "models" / "qwen3_jit"

pytestmark = pytest.mark.skipif(
    not PACKAGE.is_dir(),
    reason=f"the upstream PyPTO snapshot is absent (looked for {PACKAGE}); set "
           "PYPTO_UPSTREAM_ROOT to a checkout of hw-native-sys/pypto to run this test")


def test_qwen3_decode_lowers_whole_once_its_written_inputs_are_inout(tmp_path):
    models = tmp_path / "examples" / "models"
    shutil.copytree(PACKAGE, models / "qwen3_jit")
    for package in (tmp_path / "examples", models):
        (package / "__init__.py").write_text("")
    entry = models / "qwen3_jit" / "qwen3_decode.py"
    source = entry.read_text()
    for name in ("k_cache", "v_cache"):
        assert f"    {name}: pl.Tensor,\n" in source
        source = source.replace(f"    {name}: pl.Tensor,\n", f"    {name}: pl.InOut[pl.Tensor],\n")
    entry.write_text(source)
    env = dict(os.environ, PYPTO_PLATFORM="a2a3sim", PYTHONDONTWRITEBYTECODE="1",
               PYPTO_WORK_DIR=str(tmp_path / "work"))
    result = subprocess.run([sys.executable, "-m", "examples.models.qwen3_jit.qwen3_decode"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Lowered program has 12 function(s):", result.stdout
    kernels = [line.split(":")[0].strip() for line in lines[1:] if "InCore" in line]
    assert len(kernels) == 11, result.stdout
