"""Content keys: every input rebuilds, nothing else does."""

import re
import shutil
from pathlib import Path

import jinja2
import pytest

import pypto
from pypto.platform import build_rules_dir, get_platform
from pypto.toolchain import (
    NEUTRAL_ENV_VARS,
    OUTPUT_ENV_VARS,
    content_key,
    program_key,
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


def _program_inputs():
    return {
        "ir_text": "def f(a: pl.Tensor[[16], pl.FP16]): ...",
        "specialization": "a:FP16[16]",
        "platform": get_platform("a2a3sim"),
        "pipeline_id": "default-v1",
        "templates_digest": "t" * 64,
        "toolchain_identity": "g++ 12\n[]",
    }


@pytest.fixture
def clean_output_env(monkeypatch):
    for var in OUTPUT_ENV_VARS:
        monkeypatch.delenv(var, raising=False)


def test_program_key_is_stable_for_equal_inputs(clean_output_env):
    assert program_key(**_program_inputs()) == program_key(**_program_inputs())


@pytest.mark.parametrize(
    ("name", "other"),
    [
        ("ir_text", "def f(a: pl.Tensor[[32], pl.FP16]): ..."),
        ("specialization", "a:FP16[32]"),
        ("platform", get_platform("a5sim")),
        ("pipeline_id", "default-v2"),
        ("templates_digest", "u" * 64),
        ("toolchain_identity", "g++ 13\n[]"),
    ],
)
def test_program_key_changes_with_each_input(clean_output_env, name, other):
    inputs = _program_inputs()
    before = program_key(**inputs)
    inputs[name] = other
    assert program_key(**inputs) != before


def test_program_key_covers_the_platform_data_not_just_its_name(
    clean_output_env, tmp_path, monkeypatch
):
    before = program_key(**_program_inputs())
    rules = tmp_path / "build_rules"
    shutil.copytree(build_rules_dir(), rules)
    path = rules / "backends" / "Ascend910B.toml"
    path.write_text(path.read_text().replace("Vec = 196608", "Vec = 131072"))
    monkeypatch.setenv("PYPTO_BUILD_RULES", str(rules))
    assert program_key(**_program_inputs()) != before


def test_program_key_covers_the_pypto_version(clean_output_env, monkeypatch):
    before = program_key(**_program_inputs())
    monkeypatch.setattr(pypto, "__version__", "99.0.0")
    assert program_key(**_program_inputs()) != before


@pytest.mark.parametrize("var", OUTPUT_ENV_VARS)
def test_output_changing_env_var_changes_the_key(clean_output_env, monkeypatch, var):
    before = program_key(**_program_inputs())
    monkeypatch.setenv(var, "/opt/somewhere")
    assert program_key(**_program_inputs()) != before


@pytest.mark.parametrize("var", [v for v in NEUTRAL_ENV_VARS if v != "PYPTO_BUILD_RULES"])
def test_neutral_env_var_leaves_the_key_alone(clean_output_env, monkeypatch, var):
    before = program_key(**_program_inputs())
    monkeypatch.setenv(var, "/opt/somewhere")
    assert program_key(**_program_inputs()) == before


def test_build_rules_location_alone_leaves_the_key_alone(clean_output_env, tmp_path, monkeypatch):
    before = program_key(**_program_inputs())
    shutil.copytree(build_rules_dir(), tmp_path / "rules")
    monkeypatch.setenv("PYPTO_BUILD_RULES", str(tmp_path / "rules"))
    assert program_key(**_program_inputs()) == before


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


TEMPLATES = {"kernel.cpp.j2": "{{ body }}\n", "ops/add.j2": "{% macro add() %}+{% endmacro %}\n"}


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
    monkeypatch.setattr(jinja2, "__version__", "0.0.1")
    assert templates_digest(root) != before


def test_templates_digest_of_a_missing_directory_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        templates_digest(tmp_path / "nowhere")
