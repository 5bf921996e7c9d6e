"""Incremental builds: content keys from meaning and post-parse IR, not from source text."""

from __future__ import annotations

import shutil

from scons_project import ROOT, actions


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new))


def test_rebuild_with_nothing_changed_runs_no_step_and_imports_no_torch(
        synthetic_built, tmp_path, torch_blocker):
    project = synthetic_built.copy(tmp_path / "lib")
    proc = project.scons("platform=a5sim", "--debug=explain", block_torch=torch_blocker)
    assert "pypto:" not in proc.stdout, proc.stdout
    assert "is up to date" in proc.stdout
    assert project.compiles() == []


def test_rebuild_with_nothing_changed_imports_neither_the_spec_reader_nor_the_compiler(
        synthetic_built, tmp_path):
    project = synthetic_built.copy(tmp_path / "lib")
    proc = project.scons("platform=a5sim", PYTHONPROFILEIMPORTTIME="1")
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "pypto.spec.toolkit" in imported  # the report lists what this process imported
    for module in ("pypto.spec.build", "pypto.spec.declare", "pypto.ir", "pypto.language",
                   "pypto.golden", "pypto.runtime", "pypto.codegen", "pypto.compiler",
                   "jinja2", "tarfile"):
        assert module not in imported, module


def test_comment_and_docstring_edits_rebuild_nothing(synthetic_built, tmp_path, torch_blocker):
    project = synthetic_built.copy(tmp_path / "lib")
    spec = project.root / "kernels" / "k05.py"
    _edit(spec, '"""Synthetic spec 5."""', '"""Synthetic spec 5, now documented."""\n# a note')
    _edit(spec, "SCALE = 2.0", "SCALE = 2.0  # why two")
    proc = project.scons("platform=a5sim", "--debug=explain", block_torch=torch_blocker)
    assert project.compiles() == []
    assert actions(proc.stdout, "artifact") == [] and actions(proc.stdout, "golden") == []
    # The spec's description is rewritten with the same bytes, which stops the rebuild there.
    assert actions(proc.stdout, "spec") == ["kernels/k05.py"]
    assert "`kernels/k05.py' changed" in proc.stdout


def test_semantic_edit_of_one_spec_rebuilds_exactly_its_targets(synthetic_built, tmp_path):
    project = synthetic_built.copy(tmp_path / "lib")
    _edit(project.root / "kernels" / "k07.py", "SCALE = 2.0", "SCALE = 3.0")
    proc = project.scons("platform=a5sim", "-j2", "--debug=explain")
    assert actions(proc.stdout, "spec") == ["kernels/k07.py"]
    assert actions(proc.stdout, "golden") == ["k07/v"]
    assert actions(proc.stdout, "artifact") == ["k07/v for a5sim"]
    assert len(project.compiles()) == 2  # its kernel and its orchestration, nothing else
    assert "k07/v: content key" in proc.stdout  # --debug=explain shows the key that changed
    assert project.scons("platform=a5sim").stdout.count("pypto:") == 0


def test_edit_that_keeps_the_ir_rebuilds_the_golden_but_compiles_nothing(
        synthetic_built, tmp_path):
    project = synthetic_built.copy(tmp_path / "lib")
    _edit(project.root / "kernels" / "k03.py", "rng.normal(v.a)", "rng.normal(v.a, std=2.0)")
    proc = project.scons("platform=a5sim")
    assert actions(proc.stdout, "golden") == ["k03/v"]
    assert actions(proc.stdout, "artifact") == []
    assert project.compiles() == []


def test_editing_an_imported_helper_rebuilds_the_specs_that_import_it(synthetic_built, tmp_path):
    project = synthetic_built.copy(tmp_path / "lib")
    _edit(project.root / "kernels" / "_shapes.py", "SHAPE = [8, 48]", "SHAPE = [8, 40]")
    proc = project.scons("platform=a5sim", "-j2", "--debug=explain")
    assert actions(proc.stdout, "golden") == ["k00/v", "k01/v"]
    assert actions(proc.stdout, "artifact") == ["k00/v for a5sim", "k01/v for a5sim"]
    assert "`kernels/_shapes.py' changed" in proc.stdout  # found by the import scanner


def test_comment_in_an_imported_helper_rebuilds_nothing(synthetic_built, tmp_path, torch_blocker):
    project = synthetic_built.copy(tmp_path / "lib")
    _edit(project.root / "kernels" / "_shapes.py", "SHAPE = [8, 48]", "SHAPE = [8, 48]  # rows")
    proc = project.scons("platform=a5sim", block_torch=torch_blocker)
    assert actions(proc.stdout, "golden") == [] and actions(proc.stdout, "artifact") == []
    assert project.compiles() == []


def test_goldens_build_without_a_platform_or_a_compiler(make_project):
    project = make_project(specs=2)
    proc = project.scons("goldens", PATH="/nonexistent")  # no g++, no bisheng anywhere
    assert actions(proc.stdout, "golden") == ["k00/v", "k01/v"]
    assert actions(proc.stdout, "artifact") == []
    assert (project.build / "goldens" / "k01" / "v" / "golden.json").is_file()


def test_build_without_a_platform_says_how_to_choose_one(make_project):
    project = make_project(specs=1)
    proc = project.scons(ok=False)
    assert proc.returncode != 0
    assert ("choose a platform: scons platform=<a2a3sim|a5sim|a2a3cpu|a5cpu|a2a3|a5>"
            in proc.stdout + proc.stderr)


def test_action_signatures_do_not_depend_on_python_bytecode(
        synthetic_built, tmp_path, torch_blocker):
    project = synthetic_built.copy(tmp_path / "lib")
    # A copy of the package whose tool differs in bytecode only (the package data and the
    # native scheduler come along; the compiler sources are the same, so are the keys).
    shutil.copytree(ROOT / "pypto", tmp_path / "src" / "pypto",
                    ignore=shutil.ignore_patterns("__pycache__"))
    project.package_root = tmp_path / "src"
    tool = project.package_root / "pypto" / "scons" / "tool.py"
    for step in ("_golden", "_plan", "_artifact", "_step"):
        # New bytecode for the step functions, as a Python release would compile.
        _edit(tool, f"def {step}(target, source, env):\n",
              f"def {step}(target, source, env):\n    assert target is not None\n")
    proc = project.scons("platform=a5sim", block_torch=torch_blocker)
    assert "pypto:" not in proc.stdout, proc.stdout
