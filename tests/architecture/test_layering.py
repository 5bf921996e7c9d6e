"""The package's imports follow the layers of `layering.py`, and the check catches the
imports that would not (planted in a copy of the package)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from layering import (
    EXCEPTIONS,
    MAY_IMPORT,
    layer_violations,
    module_cycles,
    unit_cycle,
    unit_of,
    unplaced_modules,
    unused_exceptions,
)

ROOT = Path(__file__).resolve().parents[2]
# Packages whose modules form a tree: no module imports, even inside a function, one that
# imports it back (a shared piece lives below both, or the lower one takes a callable).
TREE_PACKAGES = ("pypto.runtime", "pypto.golden", "pypto.ir", "pypto.language",
                 "pypto.toolchain", "pypto.tools")


def test_every_import_respects_the_layers():
    found = layer_violations(ROOT)
    assert not found, "\n".join(found)


def test_every_module_belongs_to_a_layer():
    assert unplaced_modules(ROOT) == []


def test_the_allowed_imports_form_layers_without_a_cycle():
    assert unit_cycle() is None


def test_every_declared_exception_is_still_needed():
    assert unused_exceptions(ROOT) == []


def test_the_ir_imports_nothing_and_golden_and_runtime_not_each_other():
    assert MAY_IMPORT["ir"] == frozenset()
    assert "runtime" not in MAY_IMPORT["golden"] and "golden" not in MAY_IMPORT["runtime"]
    assert MAY_IMPORT["golden_format"] <= MAY_IMPORT["golden"] & MAY_IMPORT["runtime"]
    # Only upstream's public entry points reach up from the IR (lazily): `pypto.ir`'s
    # compile / deserialize and `pypto.ir.pass_manager`'s PassManager.run_passes.
    assert {src for src, _ in EXCEPTIONS} <= {"pypto.ir", "pypto.ir.pass_manager", "pypto"}


def test_the_compile_entry_points_live_above_the_ir():
    for module in ("pypto.compiler", "pypto.compiled", "pypto.language.jit"):
        assert unit_of(module) not in {"ir", "frontend"}
        assert "ir" in MAY_IMPORT[unit_of(module)]


@pytest.mark.parametrize("package", TREE_PACKAGES)
def test_the_modules_of_a_package_form_a_tree(package):
    assert module_cycles(ROOT, package) == []


def test_ir_keeps_upstreams_compile_spellings():
    import pypto.compiled
    import pypto.compiler
    import pypto.language.parser
    from pypto import ir

    assert ir.compile is pypto.compiler.compile
    assert ir.CompiledProgram is pypto.compiled.CompiledProgram
    assert ir.deserialize is pypto.language.parser.deserialize
    assert {"compile", "CompiledProgram", "deserialize"} <= set(dir(ir))
    with pytest.raises(AttributeError, match="no attribute 'compiles'"):
        ir.compiles  # noqa: B018


def test_opening_an_artifact_handle_loads_no_compiler_module():
    script = ("import sys\nfrom pypto import ir\nir.CompiledProgram\n"
              "print(sorted(m for m in sys.modules if m.startswith(('pypto.passes', "
              "'pypto.codegen', 'pypto.toolchain', 'pypto.language', 'pypto.compiler'))))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, check=True)
    assert result.stdout.strip() == "[]"


# --------------------------------------------------------------- the check on planted imports


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of the package's sources to plant imports in."""
    for path in (ROOT / "pypto").rglob("*.py"):
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    return tmp_path


def plant(tree: Path, file: str, code: str) -> int:
    """Appends `code` to `file` of `tree`; returns the line its first statement lands on."""
    path = tree / file
    text = path.read_text()
    path.write_text(text + "\n\n" + textwrap.dedent(code))
    return text.count("\n") + 3


def test_a_function_level_import_upward_is_reported_at_its_line(tree):
    line = plant(tree, "pypto/ir/types.py", """\
        def planted():
            from pypto.compiler import build_program
            return build_program
        """) + 1
    assert layer_violations(tree) == [
        f"pypto/ir/types.py:{line}: pypto.ir.types (ir) imports pypto.compiler (compiler); "
        "ir may import: nothing"]


def test_a_module_level_relative_import_upward_is_reported(tree):
    line = plant(tree, "pypto/golden/rng.py", "from ..runtime import loader\n")
    assert layer_violations(tree) == [
        f"pypto/golden/rng.py:{line}: pypto.golden.rng (golden) imports pypto.runtime.loader "
        "(runtime); golden may import: filesystem golden_format ir records"]


def test_a_module_named_for_import_module_is_an_import(tree):
    line = plant(tree, "pypto/runtime/abi.py", """\
        def planted():
            import importlib
            return importlib.import_module("pypto.passes")
        """) + 2
    found = layer_violations(tree)
    assert len(found) == 1 and found[0].startswith(f"pypto/runtime/abi.py:{line}: ")


def test_an_import_under_type_checking_is_not_a_dependency(tree):
    plant(tree, "pypto/ir/nodes.py", """\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from pypto.runtime import RunConfig
        """)
    assert layer_violations(tree) == []


def test_a_declared_exception_at_module_level_is_reported(tree):
    line = plant(tree, "pypto/ir/__init__.py", "from pypto.compiled import CompiledProgram\n")
    assert layer_violations(tree) == [
        f"pypto/ir/__init__.py:{line}: pypto.ir imports pypto.compiled at module level; the "
        "declared exception allows it only inside a function"]


def test_a_new_package_must_be_placed_in_the_layers(tree):
    (tree / "pypto" / "extras").mkdir()
    (tree / "pypto" / "extras" / "__init__.py").write_text("")
    assert unplaced_modules(tree) == ["pypto.extras"]


def test_an_import_cycle_among_runtime_modules_is_reported_with_its_lines(tree):
    line = plant(tree, "pypto/runtime/abi.py", """\
        def planted():
            from pypto.runtime.errors import PyptoRuntimeError
            return PyptoRuntimeError
        """) + 1
    plant(tree, "pypto/runtime/errors.py", "from pypto.runtime import abi\n")
    [cycle] = module_cycles(tree, "pypto.runtime")
    assert f"pypto.runtime.abi -> pypto.runtime.errors (pypto/runtime/abi.py:{line})" in cycle
    assert "pypto.runtime.errors -> pypto.runtime.abi (pypto/runtime/errors.py:" in cycle


@pytest.mark.parametrize(("lower", "upper", "code"), [
    # The nodes print through the printer, which reads the nodes.
    ("pypto/ir/nodes.py", "pypto/ir/printer.py", "from .printer import print_program"),
    # The parser's syntax mixins, which the parser imports.
    ("pypto/language/control_flow.py", "pypto/language/parser.py",
     "from .parser import DslBuiltin"),
    # The content key, which the compiler imports.
    ("pypto/toolchain/key.py", "pypto/toolchain/compiler.py",
     "from pypto.toolchain.compiler import Toolchain"),
])
def test_a_function_level_import_back_up_a_package_is_a_cycle_reported_at_its_line(
        tree, lower, upper, code):
    line = plant(tree, lower, f"""\
        def planted():
            {code}
        """) + 1
    module = ".".join(Path(lower).with_suffix("").parts)
    package, back = module.rpartition(".")[0], ".".join(Path(upper).with_suffix("").parts)
    assert module_cycles(ROOT, package) == []
    [cycle] = module_cycles(tree, package)
    assert f"{module} -> {back} ({lower}:{line})" in cycle
    assert f"{back} -> {module} ({upper}:" in cycle
