"""The content key against edits of each of its inputs, on a copy of the installed inputs:
every input class that can change an artifact's bytes moves the key, a comment or a
docstring in pypto's code does not, nor code the compiler does not run."""

from __future__ import annotations

import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

import pypto
from pypto import platform as compiler_module  # where `--version` is asked and cached
from pypto.platform import get_platform
from pypto.resources import build_rules_dir, package_dir, templates_dir
from pypto.toolchain import OUTPUT_ENV_VARS, Toolchain, artifact_key, compiler_digest

IR_DIGEST = "0" * 64  # one program: the key's other parts are what is edited here
OPTIONS = '{"dump": 0}'


@dataclass
class Inputs:
    """A copy of everything the key reads: pypto's code, the templates, the build rules."""

    package: Path
    templates: Path
    build_rules: Path

    def key(self, monkeypatch, platform: str = "a5sim") -> str:
        monkeypatch.setenv("PYPTO_TEMPLATES_DIR", str(self.templates))
        monkeypatch.setenv("PYPTO_BUILD_RULES", str(self.build_rules))
        target = get_platform(platform)
        identity = Toolchain.for_platform(target).identity()
        return artifact_key(IR_DIGEST, OPTIONS,
                            compiler_digest(target, identity, package=self.package))


def copy_inputs(root: Path) -> Inputs:
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    inputs = Inputs(root / "pypto", root / "templates", root / "build_rules")
    shutil.copytree(package_dir("pypto"), inputs.package, ignore=ignore)
    shutil.copytree(templates_dir(), inputs.templates, ignore=ignore)
    shutil.copytree(build_rules_dir(), inputs.build_rules, ignore=ignore)
    return inputs


def clear_output_env(monkeypatch) -> None:
    for var in OUTPUT_ENV_VARS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def base_key(tmp_path_factory) -> str:
    """The key of an unedited copy."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        clear_output_env(monkeypatch)
        return copy_inputs(tmp_path_factory.mktemp("base")).key(monkeypatch)


@pytest.fixture
def keys(base_key, tmp_path, monkeypatch):
    """(the unedited copy's key, a copy of the inputs to edit)."""
    clear_output_env(monkeypatch)
    # The platform loader caches by directory: each copy is read afresh.
    return base_key, copy_inputs(tmp_path / "edited")


def where(inputs: Inputs, relpath: str) -> Path:
    top, _, rest = relpath.partition("/")
    return {"pypto": inputs.package, "templates": inputs.templates,
            "build_rules": inputs.build_rules}[top] / rest


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def replace_first(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def edit_docstring(path: Path) -> None:
    text = path.read_text()
    assert text.startswith('"""'), path
    path.write_text('"""Edited: ' + text[3:])


# Every input class, by a file of it: (class, file).
CODE = [
    ("frontend", "pypto/language/parser.py"),
    ("IR", "pypto/ir/nodes.py"),
    ("passes", "pypto/passes/legalize_tile_cast.py"),
    ("codegen", "pypto/codegen/cpp.py"),
    ("compiler driver", "pypto/compiler.py"),
    ("toolchain code", "pypto/toolchain/build.py"),
    ("toolchain code", "pypto/toolchain/compiler.py"),
    ("platform code", "pypto/platform.py"),
    ("package data lookup", "pypto/resources.py"),
]


@pytest.mark.parametrize(("kind", "relpath"), CODE, ids=[c[1] for c in CODE])
def test_a_code_edit_moves_the_key(keys, monkeypatch, kind, relpath):
    base, edited = keys
    append(where(edited, relpath), "\n_CONTENT_KEY_MUTATION = 1\n")
    assert edited.key(monkeypatch) != base, kind


@pytest.mark.parametrize(("kind", "relpath"), CODE, ids=[c[1] for c in CODE])
def test_a_comment_or_docstring_edit_leaves_the_key(keys, monkeypatch, kind, relpath):
    base, edited = keys
    path = where(edited, relpath)
    edit_docstring(path)
    append(path, "\n# a comment about nothing the compiler does\n")
    assert edited.key(monkeypatch) == base, kind


DATA = [
    ("simulator headers", "pypto/sim/include/pto/isa.hpp", "\n#define PTO_KEY_MUTATION 1\n"),
    ("templates", "templates/kernel.cpp.j2", "// one more generated line\n"),
    ("templates", "templates/ops.cpp.j2", "{# a macro file grows #}\n"),
    ("build rules: backend", "build_rules/backends/Ascend950.toml", None),
    ("build rules: flags", "build_rules/platforms/a5sim.toml", None),
]
TOML_EDITS = {
    "build_rules/backends/Ascend950.toml": ("innermost_hint_bytes = 128",
                                            "innermost_hint_bytes = 256"),
    "build_rules/platforms/a5sim.toml": ('"-ffp-contract=off"]', '"-ffp-contract=off", "-g"]'),
}


@pytest.mark.parametrize(("kind", "relpath", "text"), DATA, ids=[d[1] for d in DATA])
def test_a_data_edit_moves_the_key(keys, monkeypatch, kind, relpath, text):
    base, edited = keys
    path = where(edited, relpath)
    if text is None:
        replace_first(path, *TOML_EDITS[relpath])
    else:
        append(path, text)
    assert edited.key(monkeypatch) != base, kind


def test_a_comment_in_a_build_rule_leaves_the_key(keys, monkeypatch):
    base, edited = keys
    append(where(edited, "build_rules/platforms/a5sim.toml"), "# a note on the flags\n")
    assert edited.key(monkeypatch) == base


def test_a_build_rule_of_another_platform_leaves_the_key(keys, monkeypatch):
    base, edited = keys
    replace_first(where(edited, "build_rules/platforms/a2a3sim.toml"), '"-O2"', '"-O3"')
    assert edited.key(monkeypatch) == base


@pytest.mark.parametrize("relpath", ["pypto/runtime/loader.py", "pypto/golden/reference.py",
                                     "pypto/scons/tool.py", "pypto/sim/runtime/scheduler.cpp"])
def test_code_the_compiler_does_not_run_leaves_the_key(keys, monkeypatch, relpath):
    base, edited = keys
    append(where(edited, relpath), "\n_CONTENT_KEY_MUTATION = 1\n")
    assert edited.key(monkeypatch) == base


def test_another_compiler_identity_moves_the_key(keys, monkeypatch, tmp_path):
    _, edited = keys
    wrapper = tmp_path / "g++"  # one path ($PYPTO_CXX is keyed too), two compilers behind it
    monkeypatch.setenv("PYPTO_CXX", str(wrapper))
    found = []
    for version in ("12.2.0", "13.1.0"):
        wrapper.write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "g++ {version}"; exit 0; }}'
                           '\nexec g++ "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
        compiler_module._version_line.cache_clear()  # asked once per compiler per process
        found.append(edited.key(monkeypatch))
    compiler_module._version_line.cache_clear()
    assert found[0] != found[1]


def test_the_pypto_version_moves_the_key(keys, monkeypatch):
    base, edited = keys
    monkeypatch.setattr(pypto, "__version__", "99.0.0")
    assert edited.key(monkeypatch) != base


def test_an_unedited_copy_has_the_installed_inputs_key(keys, monkeypatch):
    base, _ = keys
    monkeypatch.delenv("PYPTO_TEMPLATES_DIR", raising=False)
    monkeypatch.delenv("PYPTO_BUILD_RULES", raising=False)
    target = get_platform("a5sim")
    installed = artifact_key(IR_DIGEST, OPTIONS, compiler_digest(
        target, Toolchain.for_platform(target).identity()))
    assert installed == base
