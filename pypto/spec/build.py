"""The build steps of a kernel library, one function per kind of target.

SCons (the tool `pypto.scons.tool`) calls these and nothing else; they call the same
compile and golden functions as `@pl.jit`.  Each step writes its output atomically, so a
build killed at any point leaves either the old output or none, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.filesystem import atomic_write, swap_directory
from pypto.ir.diagnostics import PyptoPerfHint
from pypto.ir.errors import PyptoError
from pypto.spec.declare import Kernel, SpecError
from pypto.spec.module import specs_of

if TYPE_CHECKING:
    from pypto.toolchain import ArtifactPlan

DESCRIPTION_SCHEMA = 1


def describe(path: str | os.PathLike, top: str | os.PathLike) -> dict[str, Any]:
    """Runs the spec module at `path` and returns what the build needs to plan its targets:
    per kernel its name, platforms and variants, with each variant's IR digest.  (No line
    numbers: a description is reused for as long as the spec's meaning stays the same.)"""
    from pypto.platform import platform_names

    kernels = []
    for kernel in specs_of(path, top):
        variants = []
        for name, variant in kernel.variants.items():
            try:
                ir = kernel.ir_digest(name)
                kernel.golden_case(name)  # checks the tolerance names against the outputs
            except SpecError:
                raise
            except PyptoError as exc:
                raise SpecError(
                    f"spec {kernel.name!r} variant {name!r}: the kernel does not parse for "
                    f"these arguments:\n{exc}", kernel.where,
                ) from None
            signature = ", ".join(f"{k}: {v}" for k, v in variant.args.items())
            variants.append({"name": name, "ir": ir, "signature": signature})
        kernels.append({
            "name": kernel.name,
            "platforms": list(kernel.platforms or platform_names()),
            "variants": variants,
        })
    return {"schema": DESCRIPTION_SCHEMA, "kernels": kernels}


def find_kernel(path: str | os.PathLike, top: str | os.PathLike, name: str) -> Kernel:
    """The spec of kernel `name` in the spec module at `path`."""
    for kernel in specs_of(path, top):
        if kernel.name == name:
            return kernel
    raise SpecError(f"{path}: declares no kernel {name!r} (the index is stale: rerun scons)")


def write_description(target: str | os.PathLike, spec: str, meaning: str,
                      description: dict[str, Any]) -> None:
    """The spec's description file: goldens depend on it, so a spec edit that changes no
    meaning (a comment) rewrites the same bytes and rebuilds nothing downstream."""
    text = json.dumps({"spec": spec, "meaning": meaning, **description}, sort_keys=True, indent=1)
    atomic_write(Path(target), text + "\n")


def build_golden(path: str | os.PathLike, top: str | os.PathLike, kernel: str, variant: str,
                 directory: str | os.PathLike) -> Path:
    """Generates the golden of `kernel/variant` into `directory` (no compiler involved)."""
    from pypto.golden import record_golden

    case = find_kernel(path, top, kernel).golden_case(variant)
    return record_golden(case, directory, overwrite=True)


PLAN_NAME = "plan.json"


def stage_variant(path: str | os.PathLike, top: str | os.PathLike, kernel: str, variant: str,
                  platform: str, directory: str | os.PathLike, expected_key: str, *,
                  reuse: bool = True) -> None:
    """Plans the artifact of `kernel/variant` for `platform` in `directory`: generates its
    sources there with the plan that compiles them (`plan.json`, written last), or, when
    the artifact cache holds it (`reuse`), a plan that says so and nothing else.
    `expected_key` is the content key the build planned with (SCons' signature), checked
    against the one computed here."""
    from pypto.compiler import CompileOptions, stage_program
    from pypto.toolchain import ArtifactCache

    directory = Path(directory)
    if reuse and ArtifactCache().lookup(expected_key) is not None:
        plan = {"cached": True, "key": expected_key}
    else:
        spec = find_kernel(path, top, kernel)
        with warnings.catch_warnings():
            for check in spec.accepted_hints:  # still in the artifact's report/perf_hints.log
                warnings.filterwarnings("ignore", message=rf"perf hint \[{check.value}\]",
                                        category=PyptoPerfHint)
            plan = stage_program(spec.program(variant), CompileOptions(platform=platform),
                                 directory, expected_key).to_json()
    atomic_write(directory / PLAN_NAME, json.dumps(plan, sort_keys=True, indent=1) + "\n")


def read_plan(directory: str | os.PathLike) -> ArtifactPlan | None:
    """The plan `stage_variant` wrote into `directory`; None when it found the artifact
    in the cache."""
    from pypto.toolchain import ArtifactPlan

    data = json.loads((Path(directory) / PLAN_NAME).read_text(encoding="utf-8"))
    return None if data.get("cached") else ArtifactPlan.from_json(data)


@dataclass(frozen=True)
class BuiltArtifact:
    """An artifact published into the build directory, and whether it came from the cache."""

    directory: Path
    key: str
    cached: bool


def publish_artifact(staged: str | os.PathLike, directory: str | os.PathLike, key: str, *,
                     compiled: bool, restage: Callable[[], None],
                     launcher: Sequence[str] = ()) -> BuiltArtifact:
    """Publishes the artifact of content key `key` at `directory`: from the artifact cache,
    else made from the directory `staged` (`stage_variant`'s) and published into the cache
    first.  `compiled` says the build ran the plan's steps in `staged` (each a step of its
    own).  Otherwise the cache held the key when the build was planned and no longer does
    (trimmed, or refused as damaged): the steps run here, with `launcher`, after
    `restage()` has generated the sources if the plan did not."""
    from pypto.toolchain import ArtifactCache, finish_artifact, run_plan

    cache = ArtifactCache()
    staged = Path(staged)

    def assemble(out: Path) -> None:
        plan = read_plan(staged)
        if plan is None:
            restage()
            plan = read_plan(staged)
        if not compiled:
            run_plan(plan, staged, launcher)
        for relpath in (*plan.files, *plan.binaries):
            (out / relpath).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(staged / relpath, out / relpath)
        finish_artifact(plan, out)

    directory = Path(directory)
    entry = cache.lookup(key)
    if entry is not None:
        try:
            publish_copy(entry, directory)
            return BuiltArtifact(directory, key, True)
        except FileNotFoundError:
            pass  # the entry went while it was copied (trimmed from another host): build it
    publish_copy(cache.publish(key, assemble), directory)
    return BuiltArtifact(directory, key, False)


def publish_copy(source: Path, target: Path) -> None:
    """Copies directory `source` to `target`, replacing it whole: a copy is staged beside
    the target and swapped in, so readers see the old or the new directory, never a mix."""
    # One process builds in a build directory at a time (the tool's lock), so a staging
    # directory of this target's name is from a build that was killed.
    swap_directory(target, lambda new: shutil.copytree(source, new, dirs_exist_ok=True),
                   sweep_stale=True)


def check_variant(artifact: str | os.PathLike, golden: str | os.PathLike, kernel: str,
                  variant: str, platform: str, result: str | os.PathLike) -> bool:
    """Runs one built variant on its golden and writes the rows to `result` (JSON);
    returns whether every output passed."""
    from pypto.runtime.library import check_artifact

    rows = check_artifact(artifact, golden, kernel=kernel, variant=variant, platform=platform)
    text = json.dumps({"rows": [r.to_json() for r in rows]}, sort_keys=True, indent=1)
    atomic_write(Path(result), text + "\n")
    return all(r.passed for r in rows)

