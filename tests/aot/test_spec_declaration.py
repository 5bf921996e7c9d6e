"""Declaring specs: what a malformed spec is told, with its file and line."""

from __future__ import annotations

import textwrap

import pytest

from pypto.spec import Exact, Kernel, SpecError
from pypto.spec.build import describe

GOOD = '''
import pypto.language as pl
from pypto import spec


@pl.jit
def neg(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(x, -1.0)
    return out


SPECS = [
    spec.Kernel(
        neg,
        variants=VARIANTS,
        inputs=lambda rng, v: {"x": rng.normal(v.x)},
        reference=lambda x: -x.double(),
        tolerance=TOLERANCE,
    )
]
'''
VARIANTS = '{"v": {"x": ("fp32", [4, 8]), "out": ("fp32", [4, 8])}}'
TOLERANCE = 'spec.Exact("negation is exact")'


def _spec(tmp_path, text, name="neg_spec"):
    kernels = tmp_path / "kernels"
    kernels.mkdir(exist_ok=True)
    (kernels / "__init__.py").write_text("")
    path = kernels / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return path


def _good(variants=VARIANTS, tolerance=TOLERANCE):
    return GOOD.replace("VARIANTS", variants).replace("TOLERANCE", tolerance)


def _line_of(path, needle):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_well_formed_spec_describes_its_kernels_variants_and_ir(tmp_path):
    path = _spec(tmp_path, _good())
    (kernel,) = describe(path, tmp_path)["kernels"]
    assert kernel["name"] == "neg" and kernel["platforms"][:2] == ["a2a3sim", "a5sim"]
    (variant,) = kernel["variants"]
    assert variant["name"] == "v" and len(variant["ir"]) == 64
    assert variant["signature"] == "x: FP32[4, 8], out: FP32[4, 8]"


def test_variant_missing_a_parameter_is_reported_at_the_declaration(tmp_path):
    path = _spec(tmp_path, _good(variants='{"v": {"x": ("fp32", [4, 8])}}'))
    with pytest.raises(SpecError) as info:
        describe(path, tmp_path)
    assert f"{path}:{_line_of(path, 'spec.Kernel(')}" in str(info.value)
    assert "missing ['out']" in str(info.value)


def test_unknown_dtype_is_named(tmp_path):
    path = _spec(tmp_path, _good(variants='{"v": {"x": ("fp33", [4]), "out": ("fp32", [4])}}'))
    with pytest.raises(SpecError, match="unknown dtype 'fp33'"):
        describe(path, tmp_path)


def test_kernel_that_does_not_type_check_for_a_variant_names_both_places(tmp_path):
    path = _spec(tmp_path,
                 _good(variants='{"v": {"x": ("fp32", [4, 8]), "out": ("fp16", [4, 8])}}'))
    with pytest.raises(SpecError) as info:
        describe(path, tmp_path)
    message = str(info.value)
    assert "variant 'v': the kernel does not parse for these arguments" in message
    assert f"{path}:{_line_of(path, 'out[:] =')}" in message  # the kernel's own line


def test_tolerance_naming_an_unknown_output_is_reported(tmp_path):
    path = _spec(tmp_path, _good(tolerance='{"y": spec.Exact("why")}'))
    with pytest.raises(SpecError, match=r"tolerance names \['y'\], the kernel's outputs are "
                                        r"\['out'\]"):
        describe(path, tmp_path)


def test_module_without_specs_is_told_what_to_declare(tmp_path):
    path = _spec(tmp_path, "X = 1\n")
    with pytest.raises(SpecError, match="declares no SPECS") as info:
        describe(path, tmp_path)
    assert str(path) in str(info.value) and "leading underscore" in str(info.value)


def test_syntax_error_names_the_line(tmp_path):
    path = _spec(tmp_path, "import pypto\n\ndef broken(:\n    pass\n")
    with pytest.raises(SpecError, match=rf"{path}:3: invalid Python"):
        describe(path, tmp_path)


def test_exception_while_running_the_module_names_its_line(tmp_path):
    path = _spec(tmp_path, "import math\n\nSHAPE = [4, 8]\nVALUE = math.sqrt(-1)\n")
    with pytest.raises(SpecError, match=rf"{path}:4: running the spec module failed: "
                                        "ValueError: math domain error"):
        describe(path, tmp_path)


def test_spec_kernel_takes_only_jit_functions():
    with pytest.raises(SpecError, match="takes a @pl.jit or @pl.jit.incore function"):
        Kernel(lambda x: x, variants={}, inputs=None, reference=None, tolerance=Exact("x"))


def test_malformed_spec_stops_scons_naming_file_and_line(make_project):
    project = make_project(specs=3)
    spec = project.root / "kernels" / "k01.py"
    spec.write_text(spec.read_text().replace('("fp32", [8, 32])}', '("fp32", [8, 32])'
                                             ', "extra": ("fp32", [1])}'))
    proc = project.scons("platform=a5sim", ok=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{spec}:{_line_of(spec, 'spec.Kernel(')}: spec 'k01'" in output
    assert "unknown ['extra']" in output
    assert not (project.build / "a5sim").exists()  # nothing built, nothing half-written


def test_two_specs_declaring_one_kernel_name_are_refused(make_project):
    project = make_project(specs=2)
    spec = project.root / "kernels" / "k01.py"
    spec.write_text(spec.read_text().replace('name="k01"', 'name="k00"'))
    proc = project.scons("platform=a5sim", ok=False)
    assert ("kernel 'k00' is declared by both kernels/k00.py and kernels/k01.py"
            in proc.stdout + proc.stderr)


def _build(tmp_path, text, variants):
    """Generates the artifact's sources and reports, as the build's plan step does."""
    from pypto.compiler import CompileOptions, artifact_key
    from pypto.platform import get_platform
    from pypto.spec.build import find_kernel, stage_variant
    from pypto.toolchain import Toolchain

    path = _spec(tmp_path, _good(variants, f"{TOLERANCE},\n{text}" if text else TOLERANCE))
    platform = get_platform("a2a3sim")
    key = artifact_key(find_kernel(path, tmp_path, "neg").program("v").as_python(),
                       CompileOptions(platform=platform.name), platform,
                       Toolchain.for_platform(platform))
    out = tmp_path / "staged"
    stage_variant(path, tmp_path, "neg", "v", platform.name, out, key, reuse=False)
    return out


def test_an_accepted_perf_hint_is_recorded_in_the_report_but_not_printed(tmp_path, recwarn):
    from pypto.ir.diagnostics import PyptoPerfHint

    out = _build(tmp_path, '        accepted_hints={"TileInnermostDimGranularity": "tiny"}',
                 '{"v": {"x": ("fp32", [4, 8]), "out": ("fp32", [4, 8])}}')
    assert not [w for w in recwarn if issubclass(w.category, PyptoPerfHint)]
    assert "[TileInnermostDimGranularity]" in (out / "report" / "perf_hints.log").read_text()


def test_a_perf_hint_the_spec_does_not_accept_is_still_printed(tmp_path):
    from pypto.ir.diagnostics import PyptoPerfHint

    with pytest.warns(PyptoPerfHint, match="TileInnermostDimGranularity"):
        _build(tmp_path, "", '{"v": {"x": ("fp32", [4, 12]), "out": ("fp32", [4, 12])}}')


@pytest.mark.parametrize("hints, message", [
    ('{"OutParamWriteDropped": "meant"}', "not a perf hint"),
    ('{"TileInnermostDimGranularity": ""}', "needs a reason"),
])
def test_accepted_hints_are_perf_hints_with_reasons(tmp_path, hints, message):
    path = _spec(tmp_path, _good(tolerance=f"{TOLERANCE},\n        accepted_hints={hints}"))
    with pytest.raises(SpecError, match=message) as err:
        describe(path, tmp_path)
    assert f"{path}:{_line_of(path, 'spec.Kernel(')}" in str(err.value)
