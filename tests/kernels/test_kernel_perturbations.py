"""Every tolerance of the library is tight: each kernel, changed by one ulp-sized step in a
key operation, fails its shipped golden, while the shipped kernel passes it (the library
check in test_kernel_library_check.py).

The mechanism: a perturbation is a text edit of one kernel function of a spec module
(`old` must occur exactly once in that function).  The edited module is written to a
temporary file and imported under its own name; its kernel is compiled for the listed
variants and checked, with the same `check_artifact` as `scons check`, against the golden
the session's library build made from the unedited spec.  Together, the perturbations of
a kernel name every one of its variants.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from shipped_library import ROOT, shipped_specs, spec_modules

U32 = "1.0000001192092896"  # 1 + 2^-23: one FP32 ulp above 1
U16 = "1.0009765625"  # 1 + 2^-10: one FP16 ulp above 1


@dataclass(frozen=True)
class Perturbation:
    module: str  # kernels/<module>.py
    kernel: str  # the spec's kernel name
    function: str  # the kernel function whose text is edited
    old: str
    new: str
    variants: tuple[str, ...]  # each must fail its golden
    what: str
    platform: str = "a2a3sim"

    @property
    def id(self) -> str:
        return f"{self.kernel}[{','.join(self.variants)}]"


def P(module, kernel, old, new, variants, what, function=None, platform="a2a3sim"):
    return Perturbation(module, kernel, function or kernel, old, new, tuple(variants.split()),
                        what, platform)


PERTURBATIONS = [
    # elementwise
    P("elementwise", "add", "pl.add(a, b)", f"pl.add(a, pl.mul(b, {U32}))",
      "f32_128x128 f32_33x100", "b one FP32 ulp larger"),
    P("elementwise", "add", "pl.add(a, b)", f"pl.add(a, pl.mul(b, {U16}))",
      "f16_64x256", "b one FP16 ulp larger"),
    P("elementwise", "scaled_sum", "pl.mul(pl.add(a, b), s)",
      f"pl.mul(pl.add(a, b), s * {U32})", "f32_128x128 f32_7x129", "the scale one ulp larger"),
    P("elementwise", "exp", "pl.exp(x)", f"pl.exp(pl.mul(x, {U32}))",
      "f32_128x128 f32_1x7", "exp's argument one FP32 ulp larger"),
    P("elementwise", "exp", "pl.exp(x)", f"pl.exp(pl.mul(x, {U16}))",
      "f16_40x130", "exp's argument one FP16 ulp larger"),
    P("elementwise", "mul_add", "pl.mul(a, b)", f"pl.mul(pl.mul(a, b), {U32})",
      "f32_128x128 f32_31x97", "the product one FP32 ulp larger"),
    P("elementwise", "mul_add", "pl.mul(a, b)", f"pl.mul(pl.mul(a, b), {U16})",
      "f16_64x128", "the product one FP16 ulp larger"),
    P("elementwise", "scale", "pl.mul(x, s)", f"pl.mul(x, s * {U32})",
      "f32_128x128 f32_5x300", "the scale one FP32 ulp larger"),
    P("elementwise", "scale", "pl.mul(x, s)", f"pl.mul(x, s * {U16})",
      "f16_64x128", "the scale one FP16 ulp larger"),
    # activations
    P("activations", "relu", "pl.relu(x)", "pl.maximum(x, 5.960464477539063e-08)",
      "f32_128x128 f32_33x100 f16_64x96", "the threshold one FP16 subnormal (2^-24) above 0"),
    P("activations", "silu", "pl.neg(xf)", f"pl.mul(xf, -{U32})",
      "f32_128x128 f32_37x100", "exp's argument one FP32 ulp larger"),
    P("activations", "silu", "pl.neg(xf)", f"pl.mul(xf, -{U16})",
      "f16_64x128", "exp's argument one FP16 ulp larger"),
    P("activations", "gelu", "pl.mul(inner, GELU_SCALE)",
      f"pl.mul(inner, GELU_SCALE * {U32})", "f32_128x128 f32_19x200",
      "the constant -2 sqrt(2/pi) one FP32 ulp larger"),
    P("activations", "gelu", "pl.mul(inner, GELU_SCALE)",
      f"pl.mul(inner, GELU_SCALE * {U16})", "f16_64x128",
      "the constant -2 sqrt(2/pi) one FP16 ulp larger"),
    P("activations", "swiglu", "pl.neg(g)", f"pl.mul(g, -{U32})",
      "f32_64x256 f32_25x72", "exp's argument one FP32 ulp larger"),
    P("activations", "swiglu", "pl.neg(g)", f"pl.mul(g, -{U16})",
      "f16_32x256", "exp's argument one FP16 ulp larger"),
    # casts
    P("casts", "int32_to_fp16", "pl.cast(x, pl.FP16)", 'pl.cast(x, pl.FP16, mode="trunc")',
      "i32_64x128 i32_9x50", "rounding mode rint -> trunc"),
    P("casts", "fp32_to_bf16", "pl.cast(x, pl.BF16)", 'pl.cast(x, pl.BF16, mode="trunc")',
      "f32_64x128 f32_3x257", "rounding mode rint -> trunc"),
    P("casts", "fp16_to_int8", "pl.cast(x, pl.INT8)", 'pl.cast(x, pl.INT8, mode="trunc")',
      "f16_64x128 f16_5x77", "rounding mode rint -> trunc"),
    # reductions
    P("reductions", "row_sum",
      "s = pl.row_sum(pl.cast(t, pl.FP32) if x.dtype != pl.FP32 else t, tmp)",
      f"s = pl.mul(pl.row_sum(t, tmp), {U32})", "f32_32x256 f32_21x100",
      "the row sums one ulp larger"),
    P("reductions", "row_sum",
      "s = pl.row_sum(pl.cast(t, pl.FP32) if x.dtype != pl.FP32 else t, tmp)",
      "s = pl.cast(pl.row_sum(t, pl.create_tile([TR, TN], x.dtype)), pl.FP32)",
      "f16_16x200", "accumulating in FP16 (one FP16 rounding per step), widening the sum"),
    P("reductions", "row_max", "pl.fillpad(t, pl.PadValue.min)",
      f"pl.fillpad(pl.mul(t, {U32}), pl.PadValue.min)", "f32_32x256 f32_21x100",
      "the inputs one FP32 ulp larger"),
    P("reductions", "row_max", "pl.fillpad(t, pl.PadValue.min)",
      f"pl.fillpad(pl.mul(t, {U16}), pl.PadValue.min)", "f16_21x90",
      "the inputs one FP16 ulp larger"),
    P("reductions", "col_sum", "pl.col_sum(t, tmp)", "pl.col_sum(t)",
      "f32_64x128 f32_50x100 f32_200x48", "the other order: sequential instead of the tree"),
    # normalization
    P("normalization", "softmax", "pl.row_expand_expdif(xf, pl.row_max(xf, tmp))",
      f"pl.row_expand_expdif(pl.mul(xf, {U32}), pl.row_max(pl.mul(xf, {U32}), tmp))",
      "f32_32x128 f32_21x100", "the inputs one FP32 ulp larger (the logits' scale)"),
    P("normalization", "softmax", "pl.row_expand_expdif(xf, pl.row_max(xf, tmp))",
      f"pl.row_expand_expdif(pl.mul(xf, {U16}), pl.row_max(pl.mul(xf, {U16}), tmp))",
      "f16_16x200", "the inputs one FP16 ulp larger"),
    P("normalization", "rms_norm", "pl.rsqrt(pl.add(mean_sq, EPS))), gf)",
      f"pl.rsqrt(pl.add(mean_sq, EPS))), pl.mul(gf, {U32}))", "f32_32x128",
      "gamma one FP32 ulp larger"),
    P("normalization", "rms_norm", "pl.rsqrt(pl.add(mean_sq, EPS))), gf)",
      f"pl.rsqrt(pl.add(mean_sq, EPS))), pl.mul(gf, {U16}))", "f16_16x200",
      "gamma one FP16 ulp larger"),
    P("normalization", "layer_norm", "pl.col_expand_mul(normed, gf)",
      f"pl.col_expand_mul(normed, pl.mul(gf, {U32}))", "f32_32x128 f32_21x100",
      "gamma one FP32 ulp larger"),
    P("normalization", "layer_norm", "pl.col_expand_mul(normed, gf)",
      f"pl.col_expand_mul(normed, pl.mul(gf, {U16}))", "f16_16x200",
      "gamma one FP16 ulp larger"),
    # matmul (Exact kernels: the cube has no scalar to nudge, so the product goes one ulp
    # off on its way out, through Vec -- a path only Ascend950 has)
    P("matmul", "matmul_tile", "c = pl.store(acc, [0, 0], c)",
      f"c = pl.store(pl.mul(pl.move(acc, pl.Mem.Vec), {U32}), [0, 0], c)",
      "f16_128x128x128 f16_13x40x50 bf16_64x96x32", "the product one ulp larger",
      platform="a5sim"),
    P("matmul", "matmul_k_blocked", "c = pl.store(acc, [0, 0], c)",
      f"c = pl.store(pl.mul(pl.move(acc, pl.Mem.Vec), {U32}), [0, 0], c)",
      "f16_128x512x128 f16_24x200x40", "the product one ulp larger", platform="a5sim"),
    P("matmul", "matmul_split_k", "pl.full(c.shape, pl.FP32, 0.0)",
      "pl.full(c.shape, pl.FP32, 7.62939453125e-06)", "f16_64x256x64 f16_24x256x40",
      "the zero-initialisation 2^-17 (one ulp of [64, 128)) instead of 0",
      function="split_k_zero"),
    P("matmul", "matmul_bias_silu", "pl.neg(x)", f"pl.mul(x, -{U32})",
      "f16_64x64x128 f16_13x40x50", "exp's argument one FP32 ulp larger",
      function="bias_silu"),
    # attention
    P("attention", "attention", "pl.cast(probs, pl.FP16)",
      'pl.cast(probs, pl.FP16, mode="trunc")', "f16_s32x64_d64 f16_s21x45_d40",
      "P rounded to FP16 by trunc instead of rint", function="attention_softmax"),
]


def perturbed_source(p: Perturbation) -> str:
    """The spec module's text with `old` replaced by `new` inside function `p.function`."""
    text = (ROOT / "kernels" / f"{p.module}.py").read_text()
    functions = [n for n in ast.parse(text).body
                 if isinstance(n, ast.FunctionDef) and n.name == p.function]
    assert len(functions) == 1, f"kernels/{p.module}.py defines no function {p.function}"
    lines = text.splitlines(keepends=True)
    start = sum(map(len, lines[:functions[0].lineno - 1]))
    end = sum(map(len, lines[:functions[0].end_lineno]))
    body = text[start:end]
    assert body.count(p.old) == 1, (
        f"`{p.old}` occurs {body.count(p.old)} times in {p.function} of kernels/{p.module}.py "
        "(the kernel changed: update the perturbation, and check its tolerance again)")
    return text[:start] + body.replace(p.old, p.new) + text[end:]


def load_perturbed(p: Perturbation, directory: Path, index: int):
    """The spec kernel of the edited module, imported under a name of its own (its
    `from kernels._tiling import ...` finds this checkout's helpers)."""
    shipped_specs(p.module)  # this checkout's `kernels` package in sys.modules
    path = directory / f"perturbed_{index}_{p.module}.py"
    path.write_text(perturbed_source(p))
    spec = importlib.util.spec_from_file_location(f"perturbed_{index}_{p.module}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return next(k for k in module.SPECS if k.name == p.kernel)


def shipped_kernel(p: Perturbation):
    return next(k for k in shipped_specs(p.module) if k.name == p.kernel)


@pytest.fixture(scope="module")
def perturbed_checks(library, tmp_path_factory):
    """(perturbation index, variant) -> check rows of the perturbed kernel on its golden."""
    from pypto.compiler import CompileOptions, build_program
    from pypto.runtime.library import check_artifact

    directory = tmp_path_factory.mktemp("perturbed")
    jobs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # perf hints
        for i, p in enumerate(PERTURBATIONS):
            kernel = load_perturbed(p, directory, i)
            for variant in p.variants:
                assert kernel.ir_digest(variant) != shipped_kernel(p).ir_digest(variant), p.id
                jobs.append((i, variant, p, kernel.program(variant)))

    def run(job):
        i, variant, p, program = job
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            artifact = build_program(program, CompileOptions(platform=p.platform))
            return (i, variant), check_artifact(artifact, library.golden(p.kernel, variant),
                                                kernel=p.kernel, variant=variant,
                                                platform=p.platform)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, jobs))


@pytest.mark.slow  # the whole library's goldens, and a compile and check per perturbation
@pytest.mark.parametrize("index", range(len(PERTURBATIONS)),
                         ids=[p.id for p in PERTURBATIONS])
def test_a_one_ulp_change_in_a_key_op_fails_the_golden(perturbed_checks, index):
    p = PERTURBATIONS[index]
    for variant in p.variants:
        rows = perturbed_checks[(index, variant)]
        assert not all(r.passed for r in rows), (
            f"{p.kernel}/{variant} with {p.what} still passes {[r.tolerance for r in rows]}: "
            "the tolerance does not catch it")


def _policies(kernel) -> dict[str, tuple]:
    """variant -> its tolerance policy, as (output, rtol, atol) triples."""
    found = {}
    for variant in kernel.variants:
        tolerances = kernel.golden_case(variant).tolerances
        found[variant] = tuple(sorted((o, t.rtol, t.atol) for o, t in tolerances.items()))
    return found


def test_every_tolerance_of_every_kernel_is_shown_to_bite():
    """Each kernel fails when perturbed, and so does, for each distinct tolerance of the
    kernel, at least one variant with that tolerance (most perturbations name them all)."""
    failing: dict[str, set[str]] = {}
    for p in PERTURBATIONS:
        failing.setdefault(p.kernel, set()).update(p.variants)
    kernels = [k for m in spec_modules() for k in shipped_specs(m)]
    assert set(failing) == {k.name for k in kernels}
    for kernel in kernels:
        policies = _policies(kernel)
        assert failing[kernel.name] <= set(policies), kernel.name
        shown = {policies[v] for v in failing[kernel.name]}
        assert shown == set(policies.values()), kernel.name


def test_each_perturbation_edits_one_place_of_its_kernel():
    for p in PERTURBATIONS:
        assert perturbed_source(p) != (ROOT / "kernels" / f"{p.module}.py").read_text()
