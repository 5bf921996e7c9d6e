"""The compiler driver: frontend IR → passes → codegen → toolchain → artifact directory.

The stages are one short list (`_lower`, `generate`, `build_artifact`); the cache key
is spelled out in `artifact_key`.  `@pl.jit`, `ir.compile` and the SCons build all
come through `build_program`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from . import __version__
from .ir.nodes import Program
from .passes import DumpInstrument, PassContext, default_pipeline
from .passes.diagnostics import DiagnosticPhase, emit, run_checks
from .platform import Platform, get_platform


@dataclass(frozen=True)
class CompileOptions:
    """Everything besides the program that decides what gets built."""

    platform: str = "a2a3sim"
    dump_passes: bool = False
    diagnostic_phase: DiagnosticPhase | None = None
    disabled_diagnostics: frozenset = frozenset()


def lower(program: Program, platform: Platform, dump: DumpInstrument | None = None) -> Program:
    """Run the default pipeline for the platform's backend."""
    ctx = PassContext(platform.backend, [dump] if dump else [])
    return default_pipeline().run(program, ctx)


def artifact_key(frontend_text: str, options: CompileOptions, platform: Platform, toolchain) -> str:
    """The content key of an artifact: every input that can change its bytes."""
    from .codegen.environment import TEMPLATES_DIR
    from .toolchain import program_key, templates_digest

    specialization = f"dump_passes={bool(options.dump_passes)};pypto={__version__}"
    return program_key(
        ir_text=frontend_text,
        specialization=specialization,
        platform=platform,
        pipeline_id=default_pipeline().identity,
        templates_digest=templates_digest(TEMPLATES_DIR),
        toolchain_identity=toolchain.identity(),
    )


def build_program(program: Program, options: CompileOptions,
                  output_dir: str | os.PathLike | None = None) -> Path:
    """Compile `program` (frontend IR) and return its artifact directory.

    Without `output_dir` the artifact lives in the content-keyed cache and a cache hit
    compiles nothing.  With it, the artifact is published there atomically.
    """
    from .codegen import generate
    from .toolchain import ArtifactCache, Toolchain, build_artifact

    platform = get_platform(options.platform)
    toolchain = Toolchain.for_platform(platform)  # fails fast without a device compiler
    diagnostics = run_checks(program, options.diagnostic_phase, options.disabled_diagnostics)
    emit(diagnostics)
    frontend_text = program.as_python()
    key = artifact_key(frontend_text, options, platform, toolchain)

    def build(out: Path) -> None:
        dump = DumpInstrument() if options.dump_passes else None
        lowered = lower(program, platform, dump)
        sources = generate(lowered)
        extra = dict(dump.files) if dump else {}
        if diagnostics:
            extra["report/diagnostics.log"] = "".join(f"{d}\n" for d in diagnostics)
        sources = replace(sources, extra_files=extra)
        build_artifact(sources, platform, toolchain, key, out)

    if output_dir is None:
        cache = ArtifactCache()
        hit = cache.lookup(key)
        return hit if hit is not None else cache.publish(key, build)
    return _publish_to(Path(output_dir), build)


def _publish_to(target: Path, build) -> Path:
    """Build into a sibling temp dir, then swap it into place: never a half-written artifact."""
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(tmp)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
            os.replace(target, old / "artifact")
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
