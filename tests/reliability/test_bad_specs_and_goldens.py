"""Malformed kernel specs and corrupt golden files: refused with the spec's line or the
file's path, and a message that says what to do."""

from __future__ import annotations

import inspect
import json

import pytest
import torch
from catalogue import add, assert_user_facing

from pypto import spec
from pypto.records import record_digest
from pypto.runtime import GoldenError, RunConfig, write_golden
from pypto.spec import SpecError

HERE = __file__


F32 = ("fp32", [16, 128])
GOOD = {"a": F32, "b": F32, "out": F32}
EXACT = spec.Exact("a sum of two FP32 values rounds once, as the reference's final cast")


def _declare(**overrides):
    kwargs = dict(variants={"v": GOOD}, inputs=lambda rng, v: {}, reference=lambda a, b: a + b,
                  tolerance=EXACT)
    kernel = overrides.pop("kernel", add)
    kwargs.update(overrides)
    return spec.Kernel(kernel, **kwargs)


SPEC_CASES = {
    "not_a_kernel": (dict(kernel=lambda a: a), "takes a @pl.jit or @pl.jit.incore function"),
    "no_variants": (dict(variants={}), "variants must be a non-empty dict"),
    "missing_parameter": (dict(variants={"v": {"a": F32, "out": F32}}), "missing ['b']"),
    "unknown_parameter": (dict(variants={"v": {**GOOD, "c": F32}}), "unknown ['c']"),
    "variant_name_with_a_slash": (dict(variants={"a/b": GOOD}), "letters, digits and _.+-"),
    "zero_sized_dimension": (dict(variants={"v": {**GOOD, "a": ("fp32", [16, 0])}}),
                             "non-empty list of positive sizes"),
    "unknown_dtype": (dict(variants={"v": {**GOOD, "a": ("fp64", [16, 128])}}),
                      "use one of bool, int8"),
    "not_a_declaration": (dict(variants={"v": {**GOOD, "a": "fp32"}}),
                          "write (dtype, [d0, d1, ...]) for a tensor"),
    "unknown_platform": (dict(platforms=["a9"]), "choose from a2a3sim, a5sim"),
    "tolerance_without_policy": (dict(tolerance=1e-3),
                                 "use spec.Exact(reason) or spec.Close(rtol, atol, reason)"),
    "inputs_not_a_function": (dict(inputs={"a": 1}), "inputs and reference must be functions"),
}


@pytest.mark.parametrize("name", sorted(SPEC_CASES))
def test_malformed_spec_is_refused_at_its_declaration(name):
    overrides, message = SPEC_CASES[name]
    lines, first = inspect.getsourcelines(_declare)
    line = first + next(i for i, text in enumerate(lines) if "spec.Kernel(" in text)
    with pytest.raises(SpecError) as info:
        _declare(**dict(overrides))
    error = info.value
    assert message in str(error), str(error)
    assert error.span is not None and error.span.file == HERE and error.span.line == line
    assert str(error).startswith(f"{HERE}:{line}: ")
    assert_user_facing(error)


def test_a_tolerance_without_a_reason_is_refused_where_it_is_written():
    with pytest.raises(ValueError, match="needs a reason: say in a sentence why"):
        spec.Exact("")


# --------------------------------------------------------------------------- goldens


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x10
    path.write_bytes(bytes(data))


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _rewrite(path, change):
    """golden.json changed by `change` and its digest recomputed, as a forger would."""
    raw = json.loads(path.read_text())
    change(raw)
    raw["golden_sha256"] = record_digest(raw, "golden_sha256")
    path.write_text(json.dumps(raw))


GOLDEN_CASES = {
    "golden_json_not_json": (lambda g: (g / "golden.json").write_text("{ nope"),
                             "golden.json", "cannot read golden.json"),
    "golden_json_truncated": (lambda g: _truncate(g / "golden.json"), "golden.json",
                              "cannot read golden.json"),
    "golden_json_missing": (lambda g: (g / "golden.json").unlink(), "golden.json",
                            "write one with pypto.runtime.write_golden or `scons goldens`"),
    "inputs_truncated": (lambda g: _truncate(g / "inputs.safetensors"), "inputs.safetensors",
                         "regenerate it (`scons goldens`)"),
    "inputs_bit_flipped": (lambda g: _flip(g / "inputs.safetensors", 300), "inputs.safetensors",
                           "sha256 mismatch"),
    "expected_bit_flipped": (lambda g: _flip(g / "expected.safetensors", 200),
                             "expected.safetensors", "regenerate it (`scons goldens`)"),
    "expected_missing": (lambda g: (g / "expected.safetensors").unlink(), "expected.safetensors",
                         "cannot read"),
    "golden_json_nested_deeply": (
        lambda g: (g / "golden.json").write_text("{\"a\": " * 50_000 + "1" + "}" * 50_000),
        "golden.json", "nests objects and lists deeper than 32 levels"),
    "golden_json_too_large": (
        lambda g: (g / "golden.json").write_bytes(b" " * (17 << 20) + b"{}"), "golden.json",
        "larger than 16 MiB"),
    # A JSON list where a type name belongs: not a lookup key (it once raised TypeError).
    "golden_scalar_type_not_a_name": (
        lambda g: _rewrite(g / "golden.json", lambda raw: raw.update(
            scalars=[{"name": "s", "type": ["int32"], "value": 1}])),
        "golden.json", "'scalars[0]' should be {name, type, value}"),
    "golden_of_another_program": (
        lambda g: write_golden(g, {"q": torch.ones(2)}, {"r": torch.ones(2)}, overwrite=True),
        "golden.json", "which are not parameters of this program (a, b, out)"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_corrupt_golden_is_refused_naming_the_file(name, tmp_path):
    corrupt, file, message = GOLDEN_CASES[name]
    golden = tmp_path / "golden"
    a, b = torch.ones(16, 128), torch.full((16, 128), 2.0)
    write_golden(golden, {"a": a, "b": b}, {"out": a + b}, rtol=0, atol=0, reason="exact sum")
    corrupt(golden)
    out = torch.zeros(16, 128)
    with pytest.raises(GoldenError) as info:
        add(a, b, out, config=RunConfig(golden_data_dir=golden))
    assert str(info.value).startswith(str(golden / file)), str(info.value)
    assert message in str(info.value)
    assert_user_facing(info.value)


def test_catalogue_counts_specs_and_goldens():
    assert len(SPEC_CASES) + len(GOLDEN_CASES) >= 15


def test_a_spec_file_missing_a_block_is_refused_at_the_statement_that_needs_it(tmp_path):
    from pypto.spec.module import load_spec_module

    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("")
    path = tmp_path / "kernels" / "broken.py"
    path.write_text("import pypto.language as pl\n\n\ndef helper():\n\nSPECS = []\n")
    with pytest.raises(SpecError) as info:
        load_spec_module(path, tmp_path)
    assert str(info.value).startswith(f"{path}:4: invalid Python: expected an indented block")
    assert_user_facing(info.value)
