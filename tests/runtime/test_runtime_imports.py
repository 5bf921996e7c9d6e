"""A deployed library runs with pypto.runtime alone: the runtime never imports the compiler.

What the runtime's sources may import is the layering table's
(tests/architecture/layering.py); these tests load it and look at what got loaded.
"""

import os
import subprocess
import sys
from pathlib import Path

import pypto.runtime

RUNTIME_DIR = Path(pypto.runtime.__file__).resolve().parent
# The compiler, and the code that makes goldens: a deployed library needs neither.
NOT_DEPLOYED = ("pypto.language", "pypto.passes", "pypto.codegen", "pypto.toolchain",
            "pypto.golden", "pypto.spec")


def run_python(script: str) -> str:
    """stdout of `script` in a fresh interpreter that finds this checkout's pypto."""
    env = {**os.environ, "PYTHONPATH": str(RUNTIME_DIR.parent.parent)}
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_importing_every_runtime_module_loads_neither_the_compiler_nor_the_golden_maker():
    modules = sorted(f"pypto.runtime.{p.stem}" for p in RUNTIME_DIR.glob("*.py"))
    script = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print([m for m in sys.modules if m.startswith({tuple(p + '.' for p in NOT_DEPLOYED)!r})"
        f" or m in {NOT_DEPLOYED!r}])\n"
    )
    assert run_python(script) == "[]"


def test_loading_the_runtime_does_not_import_torch():
    script = "import sys, pypto.runtime; print('torch' in sys.modules)"
    assert run_python(script) == "False"
