"""The compiler driver: frontend IR → passes → codegen → toolchain → artifact directory.

The stages are one short list (`lower`, `generate`, `build_artifact`); the cache key is
spelled out in `artifact_key`.  `@pl.jit`, `compile` (upstream's `ir.compile`) and the
SCons build all come through `build_program`.  Verification, dumps, profiling and
diagnostics are pass instruments: they run around the passes, never inside them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .compiled import CompiledProgram
from .filesystem import swap_directory
from .ir.diagnostics import DiagnosticPhase, active_checks, emit, resolve_phase
from .ir.errors import api_boundary
from .ir.nodes import Program
from .ir.options import PassDumpLevel, VerificationLevel, resolve_dump_level, resolve_level
from .passes import (
    DumpInstrument,
    PassContext,
    PassManager,
    ProfilingInstrument,
    default_pipeline,
)
from .passes.diagnostics import DiagnosticsInstrument
from .passes.verifier import VerificationInstrument
from .platform import Platform, get_platform, simulator_of_backend

if TYPE_CHECKING:
    from .codegen.sources import GeneratedSources
    from .toolchain import ArtifactPlan, Toolchain


@dataclass(frozen=True)
class CompileOptions:
    """Everything besides the program that decides what gets built and reported."""

    platform: str = "a2a3sim"
    dump_passes: bool | PassDumpLevel = False
    verification_level: VerificationLevel | None = None
    diagnostic_phase: DiagnosticPhase | None = None
    disabled_diagnostics: frozenset = frozenset()
    enabled_diagnostics: frozenset = frozenset()
    profiling: bool = False


@dataclass
class Lowered:
    """The result of running the pipeline with its instruments."""

    program: Program
    diagnostics: list
    files: dict[str, str]  # dumps and reports to publish with the artifact


def lower(program: Program, platform: Platform) -> Program:
    """The program after the default pipeline for the platform's backend."""
    return run_pipeline(program, platform, CompileOptions(platform=platform.name)).program


def lower_for_configured_backend(program: Program) -> Program:
    """`lower` for the simulator of the backend `pypto.backend.set_backend_type` configured
    (upstream's `PassManager.get_strategy(...).run_passes(program)`)."""
    from .backend import get_backend_type

    return lower(program, get_platform(simulator_of_backend(get_backend_type().name)))


def run_pipeline(program: Program, platform: Platform, opts: CompileOptions,
                 extra_instruments=(), pipeline: PassManager | None = None) -> Lowered:
    """Run the default pipeline (or `pipeline`) with the instruments `opts` asks for."""
    from .language.parser import parse_program

    pipeline = pipeline or default_pipeline()
    verification = VerificationInstrument(resolve_level(opts.verification_level), parse_program)
    diagnostics = DiagnosticsInstrument(
        resolve_phase(opts.diagnostic_phase),
        active_checks(opts.disabled_diagnostics, opts.enabled_diagnostics),
        final_pass=pipeline.passes[-1].name,
    )
    level = resolve_dump_level(opts.dump_passes)
    dump = DumpInstrument(concise=level is PassDumpLevel.CONCISE) \
        if level is not PassDumpLevel.NONE else None
    profile = ProfilingInstrument() if opts.profiling else None
    instruments = [i for i in (verification, dump, profile, diagnostics) if i is not None]
    instruments.extend(extra_instruments)
    lowered = pipeline.run(program, PassContext(platform.backend, instruments))
    files: dict[str, str] = {}
    for inst in (dump, profile):
        if inst is not None:
            files.update(inst.files)
    files.update(_reports(diagnostics.found))
    return Lowered(lowered, diagnostics.found, files)


def _reports(found) -> dict[str, str]:
    warnings = [d for d in found if not d.perf_hint]
    hints = [d for d in found if d.perf_hint]
    files = {}
    if warnings:
        files["report/diagnostics.log"] = "".join(f"{d}\n" for d in warnings)
    if hints:
        files["report/perf_hints.log"] = "".join(f"{d}\n" for d in hints)
    return files


def options_text(options: CompileOptions) -> str:
    """The compile options that change what is built, as the content key spells them (the
    verification level checks the IR, never changes it)."""
    checks = sorted(c.name for c in active_checks(options.disabled_diagnostics,
                                                  options.enabled_diagnostics))
    return json.dumps({
        "dump": resolve_dump_level(options.dump_passes).value,
        "diagnostics": resolve_phase(options.diagnostic_phase).name,
        "checks": checks,
        "profiling": bool(options.profiling),
        "pipeline": default_pipeline().identity,
    }, sort_keys=True)


def artifact_key(frontend_text: str, options: CompileOptions, platform: Platform,
                 toolchain) -> str:
    """The content key of an artifact (`pypto.toolchain.key.artifact_key`, which SCons
    uses too): every input that can change its bytes."""
    from .toolchain import key

    ir_digest = hashlib.sha256(frontend_text.encode()).hexdigest()
    return key.artifact_key(ir_digest, options_text(options),
                            _compiler_digest(platform, toolchain.identity(), _sources_stat()))


@functools.lru_cache(maxsize=16)
def _compiler_digest(platform: Platform, identity: str, stat: tuple) -> str:
    """`key.compiler_digest`, once per process per platform, identity, environment and
    place of the package data (`stat`).  Parsing pypto's code for its syntax digests
    takes ~0.2 s, so the file digests are kept by stat under the cache root, as a library
    build keeps them in its spec index (the same `SpecIndex`)."""
    from .platform import default_cache_root
    from .resources import package_dir
    from .spec.index import SpecIndex
    from .toolchain import key

    files = SpecIndex(package_dir("pypto"), default_cache_root() / "index" / "compiler.json")
    digest = key.compiler_digest(platform, identity, digest=files.code_digest)
    with contextlib.suppress(OSError):  # a cache no one may write: computed again next time
        files.save()
    return digest


def _sources_stat() -> tuple:
    """What `_compiler_digest` is memoised on besides its arguments: the output-changing
    environment and where the templates and build rules are read."""
    from .resources import build_rules_dir, templates_dir
    from .toolchain.key import OUTPUT_ENV_VARS

    return (tuple(os.environ.get(var, "") for var in OUTPUT_ENV_VARS),
            str(templates_dir()), str(build_rules_dir()))


def build_program(program: Program, options: CompileOptions,
                  output_dir: str | os.PathLike | None = None) -> Path:
    """Compile `program` (frontend IR) and return its artifact directory.

    The passes always run (milliseconds), so verification and diagnostics report on the
    current source even when the artifact comes from the cache; codegen and the C++
    compiler run only on a miss, with `$PYPTO_COMPILER_LAUNCHER` (e.g. ccache) in front of
    each compile.  With `output_dir` the artifact is published there atomically instead
    of into the content-keyed cache.
    """
    from .toolchain import ArtifactCache, build_artifact, compiler_launcher, trim_if_due

    staged = _prepare(program, options)

    def build(out: Path) -> None:
        build_artifact(staged.sources(), staged.platform, staged.toolchain, staged.key, out,
                       compiler_launcher())

    if output_dir is None:
        cache = ArtifactCache()
        entry = cache.lookup(staged.key)
        if entry is None:
            entry = cache.publish(staged.key, build)
            trim_if_due(cache.root)  # to $PYPTO_CACHE_LIMIT, when set
        return entry
    return _publish_to(Path(output_dir), build)


def stage_program(program: Program, options: CompileOptions, directory: str | os.PathLike,
                  expected_key: str | None = None) -> ArtifactPlan:
    """Writes `program`'s generated sources into `directory` and returns the plan that
    compiles them into its artifact (`pypto.toolchain.ArtifactPlan`): what a build system
    runs as steps of its own (`pypto.scons`).  `expected_key` is the content key the
    build planned with: a key computed otherwise here would be a pypto bug, refused
    before anything is written."""
    from .toolchain import stage_artifact

    staged = _prepare(program, options)
    if expected_key is not None and staged.key != expected_key:
        raise RuntimeError(f"{program.name}: content key {staged.key} differs from the key "
                           f"the build planned with, {expected_key}")
    return stage_artifact(staged.sources(), staged.platform, staged.toolchain, staged.key,
                          Path(directory))


@dataclass
class _Prepared:
    """A program after its passes, with everything its artifact is built from."""

    program: Program  # frontend IR
    lowered: Lowered
    platform: Platform
    toolchain: Toolchain
    key: str

    def sources(self) -> GeneratedSources:
        """The generated sources (codegen runs here), with the pass reports as extra files."""
        from .codegen import generate

        return replace(generate(self.lowered.program, self.program, self.platform),
                       extra_files=dict(self.lowered.files))


def _prepare(program: Program, options: CompileOptions) -> _Prepared:
    from .toolchain import Toolchain

    platform = get_platform(options.platform)
    toolchain = Toolchain.for_platform(platform)  # fails fast without a device compiler
    lowered = run_pipeline(program, platform, options)
    emit(lowered.diagnostics)
    key = artifact_key(program.as_python(), options, platform, toolchain)
    return _Prepared(program, lowered, platform, toolchain, key)


@api_boundary
def compile(  # noqa: A001 - upstream's `ir.compile`, reached as `pypto.ir.compile`
    program: Program,
    output_dir=None,
    dump_passes: bool | PassDumpLevel = True,
    platform: str | None = None,
    verification_level: VerificationLevel | None = None,
    diagnostic_phase: DiagnosticPhase | None = None,
    disabled_diagnostics=None,
    profiling: bool = False,
    enabled_diagnostics=None,
    strategy=None,
    backend_type=None,
    distributed_config=None,
) -> CompiledProgram:
    """Lower, generate and build `program` for `platform`; returns the built artifact.

    `platform` None is `$PYPTO_PLATFORM`, else a2a3sim.  `output_dir=None` builds into
    the content-keyed cache (a hit compiles nothing).
    `dump_passes` writes `passes_dump/` (True = CONCISE); `verification_level` None
    defers to env PYPTO_VERIFY_LEVEL (default BASIC); `diagnostic_phase` None defers to
    env PYPTO_WARNING_LEVEL; `enabled_diagnostics` turns on opt-in checks such as
    `UnusedControlFlowResult`; `profiling` writes `report/pipeline_profile.{txt,json}`.
    Upstream's `strategy` (only `OptimizationStrategy.Default`) and `backend_type` (the
    platform's) are checked; `distributed_config` (a multi-rank program) is refused.  With
    PYPTO_SIMULATE_DEVICE=1 a device platform builds for its simulator (=cpu-model: for its
    CPU-model platform).
    """
    from .platform import check_target, default_platform, simulator_for

    if hasattr(program, "specialize_for"):
        raise TypeError(f"{program!r} has pl.dynamic dimensions in its entry: compile "
                        "`program.specialize_for(*args)` for the call's tensors, or run it "
                        "with pypto.runtime.run(program, *args)")
    platform = default_platform() if platform is None else platform
    get_platform(platform)  # unknown platform: ValueError listing the four
    platform = simulator_for(platform)
    check_target(platform, backend_type, strategy)
    if distributed_config is not None:
        from .runtime import RunConfig

        RunConfig(platform=platform, distributed_config=distributed_config).check_single_device()
    options = CompileOptions(
        platform=platform,
        dump_passes=resolve_dump_level(dump_passes),
        verification_level=verification_level,
        diagnostic_phase=diagnostic_phase,
        disabled_diagnostics=frozenset(disabled_diagnostics or ()),
        enabled_diagnostics=frozenset(enabled_diagnostics or ()),
        profiling=bool(profiling),
    )
    return CompiledProgram(build_program(program, options, output_dir))


def _publish_to(target: Path, build) -> Path:
    """Build into a sibling staging dir, then swap it into place: never a half-written
    artifact."""
    return swap_directory(target, build)
