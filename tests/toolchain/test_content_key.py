"""Content keys: every input rebuilds, nothing else does."""

import re
import shutil
from pathlib import Path

import jinja2
import pytest

import pypto
from pypto.platform import build_rules_dir, get_platform
from pypto.resources import templates_dir
from pypto.toolchain import (
    NEUTRAL_ENV_VARS,
    OUTPUT_ENV_VARS,
    artifact_key,
    compiler_digest,
    compiler_sources,
    content_key,
    templates_digest,
)
from pypto.toolchain import key as key_module

PACKAGE_DIR = Path(pypto.__file__).resolve().parent

BASE_PARTS = [("ir", "def f(): ..."), ("specialization", "a:FP16[16,16]"), ("blob", b"\x00\x01")]


def test_content_key_is_a_stable_sha256_hex_digest():
    key = content_key(BASE_PARTS)
    assert re.fullmatch(r"[0-9a-f]{64}", key)
    assert content_key(list(BASE_PARTS)) == key


@pytest.mark.parametrize("index", range(len(BASE_PARTS)))
@pytest.mark.parametrize("field", [0, 1])
def test_content_key_changes_with_any_part_name_or_value(index, field):
    parts = list(BASE_PARTS)
    part = list(parts[index])
    part[field] = part[field] + (b"!" if isinstance(part[field], bytes) else "!")
    parts[index] = tuple(part)
    assert content_key(parts) != content_key(BASE_PARTS)


def test_length_prefixes_keep_shifted_boundaries_apart():
    assert content_key([("a", "bc")]) != content_key([("ab", "c")])
    assert content_key([("a", "b"), ("c", "d")]) != content_key([("a", "bcd")])


def test_part_order_matters():
    assert content_key(BASE_PARTS[::-1]) != content_key(BASE_PARTS)


def test_str_and_its_utf8_bytes_key_alike():
    assert content_key([("ir", "π")]) == content_key([("ir", "π".encode())])


def test_non_text_values_are_rejected():
    with pytest.raises(TypeError, match="'shape'"):
        content_key([("shape", 16)])


def test_key_schema_version_is_part_of_every_key(monkeypatch):
    before = content_key(BASE_PARTS)
    monkeypatch.setattr(key_module, "KEY_SCHEMA_VERSION", key_module.KEY_SCHEMA_VERSION + 1)
    assert content_key(BASE_PARTS) != before


@pytest.fixture
def clean_output_env(monkeypatch):
    for var in OUTPUT_ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def _compiler_digest() -> str:
    platform = get_platform("a2a3sim")
    return compiler_digest(platform, "g++ 12\n[]")


@pytest.mark.parametrize("part", ["ir_digest", "options", "compiler"])
def test_artifact_key_changes_with_each_of_its_parts(part):
    parts = {"ir_digest": "1" * 64, "options": '{"dump": 0}', "compiler": "c" * 64}
    before = artifact_key(**parts)
    parts[part] += "!"
    assert artifact_key(**parts) != before


def test_compiler_digest_is_stable_for_equal_inputs(clean_output_env):
    assert _compiler_digest() == _compiler_digest()


def test_compiler_digest_covers_the_toolchain_identity(clean_output_env):
    platform = get_platform("a2a3sim")
    assert compiler_digest(platform, "g++ 12\n[]") != compiler_digest(platform, "g++ 13\n[]")


def test_compiler_digest_covers_the_pypto_version(clean_output_env, monkeypatch):
    before = _compiler_digest()
    monkeypatch.setattr(pypto, "__version__", "99.0.0")
    assert _compiler_digest() != before


def test_compiler_sources_are_the_compilers_code_not_the_runtimes():
    sources = {p.relative_to(PACKAGE_DIR).as_posix() for p in compiler_sources()}
    for part in ("compiler.py", "platform.py", "passes/legalize_tile_cast.py",
                 "codegen/cpp.py", "toolchain/build.py", "sim/include/pto/isa.hpp"):
        assert part in sources, part
    assert not {s for s in sources if s.startswith(("runtime/", "golden/", "scons/"))}
    assert not {s for s in sources if s.endswith((".so", ".pyc", ".cpp"))}


@pytest.mark.parametrize("var", OUTPUT_ENV_VARS)
def test_output_changing_env_var_changes_the_key(clean_output_env, monkeypatch, var):
    before = _compiler_digest()
    monkeypatch.setenv(var, "/opt/somewhere")
    assert _compiler_digest() != before


LOCATIONS = ("PYPTO_BUILD_RULES", "PYPTO_TEMPLATES_DIR")


@pytest.mark.parametrize("var", [v for v in NEUTRAL_ENV_VARS if v not in LOCATIONS])
def test_neutral_env_var_leaves_the_key_alone(clean_output_env, monkeypatch, var):
    before = _compiler_digest()
    monkeypatch.setenv(var, "/opt/somewhere")
    assert _compiler_digest() == before


def test_package_data_locations_alone_leave_the_key_alone(
        clean_output_env, tmp_path, monkeypatch):
    before = _compiler_digest()
    shutil.copytree(build_rules_dir(), tmp_path / "rules")
    shutil.copytree(templates_dir(), tmp_path / "templates")
    monkeypatch.setenv("PYPTO_BUILD_RULES", str(tmp_path / "rules"))
    monkeypatch.setenv("PYPTO_TEMPLATES_DIR", str(tmp_path / "templates"))
    assert _compiler_digest() == before


def test_every_pypto_env_var_is_classified():
    sources = [*PACKAGE_DIR.rglob("*.py"), *build_rules_dir().rglob("*.toml")]
    used = {m for path in sources for m in re.findall(r"\bPYPTO_[A-Z0-9_]+", path.read_text())}
    classified = set(OUTPUT_ENV_VARS) | set(NEUTRAL_ENV_VARS)
    assert not set(OUTPUT_ENV_VARS) & set(NEUTRAL_ENV_VARS)
    assert used - classified == set(), "classify these in pypto/toolchain/key.py"


def _templates(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


TEMPLATES = {"kernel.cpp.j2": "{{ body }}\n", "ops/add.j2": "{% macro add() %}+{% endmacro %}\n",
             "__init__.py": '"""Package data."""\n'}


def test_templates_digest_depends_on_content_not_location(tmp_path):
    assert templates_digest(_templates(tmp_path / "a", TEMPLATES)) == templates_digest(
        _templates(tmp_path / "b", TEMPLATES)
    )


@pytest.mark.parametrize(
    "change",
    [
        {"kernel.cpp.j2": "{{ body }} \n"},  # edited
        {"ops/add.j2": None, "ops/plus.j2": TEMPLATES["ops/add.j2"]},  # renamed
        {"ops/sub.j2": "-\n"},  # added
    ],
)
def test_templates_digest_changes_with_any_template(tmp_path, change):
    changed = {**TEMPLATES, **change}
    changed = {k: v for k, v in changed.items() if v is not None}
    assert templates_digest(_templates(tmp_path / "a", TEMPLATES)) != templates_digest(
        _templates(tmp_path / "b", changed)
    )


def test_templates_digest_ignores_hidden_files(tmp_path):
    plain = templates_digest(_templates(tmp_path / "a", TEMPLATES))
    with_swap = {**TEMPLATES, ".kernel.cpp.j2.swp": "junk", ".git/HEAD": "x"}
    assert templates_digest(_templates(tmp_path / "b", with_swap)) == plain


def test_templates_digest_covers_the_jinja2_version(tmp_path, monkeypatch):
    root = _templates(tmp_path / "t", TEMPLATES)
    before = templates_digest(root)
    monkeypatch.setattr(key_module, "jinja2_version", lambda: "0.0.1")
    assert templates_digest(root) != before


def test_jinja2_version_is_the_imported_ones():
    assert key_module.jinja2_version() == jinja2.__version__


def test_templates_digest_of_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        templates_digest(tmp_path / "nowhere")
