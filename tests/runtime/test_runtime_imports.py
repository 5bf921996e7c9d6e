"""A deployed library runs with pypto.runtime alone: the runtime never imports the compiler."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pypto.runtime

RUNTIME_DIR = Path(pypto.runtime.__file__).resolve().parent
COMPILER = ("pypto.language", "pypto.passes", "pypto.codegen", "pypto.toolchain")
# pypto.ir.diagnostics holds the diagnostic kinds the golden check reports (no compiler).
# pypto.resources finds the native scheduler the package build made (standard library only).
ALLOWED_OUTSIDE_RUNTIME = {"pypto.ir", "pypto.ir.dtypes", "pypto.ir.diagnostics", "pypto.platform",
                           "pypto.resources"}


def run_python(script: str) -> str:
    """stdout of `script` in a fresh interpreter that finds this checkout's pypto."""
    env = {**os.environ, "PYTHONPATH": str(RUNTIME_DIR.parent.parent)}
    result = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def imported_pypto_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return {m for m in modules if m == "pypto" or m.startswith("pypto.")}


def test_runtime_sources_import_only_runtime_ir_types_and_platform():
    for path in sorted(RUNTIME_DIR.glob("*.py")):
        for module in imported_pypto_modules(path):
            assert module.startswith("pypto.runtime") or module in ALLOWED_OUTSIDE_RUNTIME, (
                f"{path.name} imports {module}"
            )


def test_importing_every_runtime_module_loads_no_compiler_module():
    modules = sorted(f"pypto.runtime.{p.stem}" for p in RUNTIME_DIR.glob("*.py"))
    script = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"print([m for m in sys.modules if m.startswith({COMPILER!r})])\n"
    )
    assert run_python(script) == "[]"


def test_loading_the_runtime_does_not_import_torch():
    script = "import sys, pypto.runtime; print('torch' in sys.modules)"
    assert run_python(script) == "False"
