"""The pypto SCons tool: `Environment(tools=["pypto"], toolpath=[pypto.scons.toolpath()])`,
then `env.KernelLibrary(...)` (see `pypto.scons`).

SCons glue only: which targets exist and what each depends on.  The work is done by
`pypto.spec.build` and `pypto.spec.package` (through them, the same compiler and golden
functions `@pl.jit` uses).  What each spec declares comes from `pypto.spec.index`, which
answers a no-op build from its cache without importing torch or running a spec; the
digests of pypto's own code come from `pypto.spec.toolkit`.

Targets, for a library at the project top (`#`), see docs/building.md:

    build/specs/<spec path>.json      the spec's description (kernels, variants, meaning);
                                      a comment edit rewrites identical bytes, so nothing
                                      downstream rebuilds
    build/goldens/<k>/<v>/golden.json (+ inputs/expected.safetensors)   platform-independent
    build/obj/<p>/<k>/<v>/plan.json   the artifact's generated sources and the steps that
                                      compile them (or: the artifact cache holds it); one
                                      compile or link step per source and binary, which the
                                      artifact's target scanner adds once the plan is current
    build/<p>/<k>/<v>/manifest.json   the artifact directory, from pypto's artifact cache
    build/checks/<p>/<k>/<v>.json     one check result
    build/library-<p>.json            the library index `load_library` reads
    dist/<name>-<version>-<p>.tar     the reproducible package

Every dependency is a content signature.  Files are sources: goldens depend on their
spec's description, checks on the artifact's manifest and the golden, the index on every
manifest and golden.  Digests are part of the action signature instead of Value nodes
(`_StableAction`: a fixed identity string plus the target's `key`, never the bytecode of
a Python function): a golden's key is the golden code, a check's the runtime code, a
description's the spec's meaning.  An artifact's key is its content key itself
(`pypto.toolchain.key.artifact_key`, the function the artifact cache uses), so SCons
rebuilds an artifact exactly when the cache would miss.  A Value node would cost a node,
an edge and a sconsign entry per target on every no-op; a key costs one string, and
`--debug=explain` still prints it.
"""

from __future__ import annotations

import atexit
import os
import shlex
import sys
import traceback
from pathlib import Path

import SCons.Action
import SCons.Builder
import SCons.Defaults
import SCons.Errors
import SCons.Node.Alias
import SCons.Scanner
import SCons.Script
import SCons.Variables

from pypto.filesystem import LockTimeout, lock_with_deadline

LOCK_TIMEOUT_S = 600.0
_HELD_LOCKS: list[int] = []
_STEPS_RAN: list[str] = []  # the steps this build ran (their functions' names)
_INDEXES: dict = {}  # project top → SpecIndex, for the import scanner


# --------------------------------------------------------------------------- actions


class _StableAction(SCons.Action.FunctionAction):
    """A Python action whose build signature is a fixed identity string plus the target's
    `key` (the digests its output depends on besides its sources), so a Python release
    that compiles it to other bytecode rebuilds nothing, and a changed digest rebuilds
    exactly the targets whose key holds it."""

    def __init__(self, function, identity: str, show) -> None:
        super().__init__(_user_facing(function), {"strfunction": show})
        self.identity = identity

    def get_presig(self, target, source, env, executor=None):
        return self.genstring(target, source, env).encode()

    def genstring(self, target, source, env, executor=None) -> str:
        # Also what --debug=explain prints as the old and the new action.
        key = _case(target).get("key") if target else None
        return f"{self.identity}: {key}" if key else self.identity


def _user_facing(function):
    """Runs a build step; an error in the user's input becomes a one-message SCons error,
    anything else one that shows its traceback."""

    def run(target, source, env):
        from pypto.golden.reference import GoldenCaseError
        from pypto.ir.errors import PyptoError
        from pypto.runtime.errors import PyptoRuntimeError
        from pypto.toolchain import CacheStorageError, CompileError, ToolchainNotFoundError

        _STEPS_RAN.append(function.__name__)
        try:
            return function(target, source, env)
        except SCons.Errors.UserError:
            raise
        except (PyptoError, PyptoRuntimeError, GoldenCaseError, CompileError,
                ToolchainNotFoundError, CacheStorageError, FileExistsError) as exc:
            raise SCons.Errors.UserError(str(exc)) from exc
        except Exception as exc:
            raise SCons.Errors.UserError(
                f"internal error (a pypto bug, please report it):\n{traceback.format_exc()}"
            ) from exc

    run.__name__ = function.__name__
    return run


def _case(target) -> dict:
    return getattr(target[0].attributes, "pypto", {})


def _describe_spec(target, source, env):
    from pypto.spec.build import write_description

    case = _case(target)
    write_description(target[0].abspath, case["spec"], case["meaning"], case["description"])


def _golden(target, source, env):
    from pypto.spec.build import build_golden

    case = _case(target)
    build_golden(case["path"], case["top"], case["kernel"], case["variant"],
                 Path(target[0].abspath).parent)


def _plan(target, source, env):
    from pypto.spec.build import stage_variant

    case = _case(target)
    stage_variant(case["path"], case["top"], case["kernel"], case["variant"], case["platform"],
                  Path(target[0].abspath).parent, case["content_key"])


def _artifact(target, source, env):
    from pypto.spec.build import publish_artifact, stage_variant

    case = _case(target)
    plan = _case([case["plan"]])
    staged = Path(case["plan"].abspath).parent
    built = publish_artifact(
        staged, Path(target[0].abspath).parent, case["content_key"],
        compiled=case.get("compiled", False), launcher=_launcher(env),
        restage=lambda: stage_variant(plan["path"], plan["top"], plan["kernel"],
                                      plan["variant"], plan["platform"], staged,
                                      plan["content_key"], reuse=False))
    if built.cached:
        # One write, line and newline together: with -j, steps print from several threads.
        sys.stdout.write(f"pypto:   {case['kernel']}/{case['variant']} [{case['platform']}]: "
                         f"artifact cache hit {built.key[:12]}, nothing compiled\n")
        sys.stdout.flush()


def _step(target, source, env):
    from pypto.toolchain import run_step

    case = _case(target)
    run_step(case["step"], case["root"], _launcher(env))


def _pch(target, source, env):
    _case(target)["pch"].ensure()


def _launcher(env) -> tuple[str, ...]:
    return tuple(shlex.split(env.get("launcher", "")))


def _check(target, source, env):
    from pypto.spec.build import check_variant

    case = _case(target)
    check_variant(case["artifact"], case["golden"], case["kernel"], case["variant"],
                  case["platform"], target[0].abspath)


def _index(target, source, env):
    from pypto.spec.package import write_library_index

    case = _case(target)
    write_library_index(case["root"], case["name"], case["version"], case["platform"],
                        case["entries"])


def _package(target, source, env):
    from pypto.spec.package import write_package

    case = _case(target)
    write_package(target[0].abspath, case["root"], case["platform"], case["signing_key"])


def _report(target, source, env):
    from pypto.runtime.library import read_check_rows

    table = read_check_rows([s.abspath for s in source if "artifact" in _case([s])])
    print(table, flush=True)
    if not table.passed:
        raise SCons.Errors.UserError(
            f"{len(table.failures)} of {len(table.rows)} checked outputs differ from their "
            "goldens (see the table above)"
        )


def _golden_emitter(target, source, env):
    directory = Path(str(target[0])).parent
    return target + [str(directory / "inputs.safetensors"),
                     str(directory / "expected.safetensors")], source


def _show(text: str):
    """The progress line of a step: `text` formatted with the target's case, numbered."""
    return lambda target, source, env: (
        text.format(case=_case(target), t=target[0]).replace("pypto: ", "pypto: "
                                                             + PROGRESS.label(), 1))


def _scan_python_imports(node, env, path):
    """The project modules a Python file imports (the index caches them by file stat)."""
    index = _INDEXES.get(env.Dir("#").abspath)
    if index is None or not hasattr(node, "abspath") or not node.exists():
        return []  # a Value, or a file that does not exist yet
    return [env.File(str(p)) for p in index.imports(node.abspath)]


PYTHON_IMPORTS = SCons.Scanner.Scanner(
    function=_scan_python_imports, name="PythonImports", skeys=[".py"], recursive=True)


def _schedule_steps(node, env, path):
    """The artifact's target scanner.  Once its plan is current (built in this run, or up
    to date), each step of the plan becomes a SCons step of its own (`_step`: a compile
    a launcher such as ccache or distcc can take, a link) and an order-only prerequisite
    of the artifact, unless the artifact cache already holds the artifact.  Returns no
    dependency: what the steps make is a function of the content key, which the
    artifact's signature holds.  SCons scans an artifact only while it is out of date
    (implicit_cache), so a no-op build never reads a plan; and it scans it again after
    its plan is built (Node.built resets a waiting parent's scan)."""
    case = _case([node])
    plan = case["plan"]
    if "compiled" in case or SCons.Script.GetOption("clean") or not _current(plan):
        return []
    from pypto.spec.build import read_plan
    from pypto.toolchain import ArtifactCache

    staged = Path(plan.abspath).parent
    steps = read_plan(staged)
    if steps is None or ArtifactCache().contains(case["content_key"]):
        return []  # the artifact step takes it from the cache
    owner = _case([plan])
    label = f"{owner['kernel']}/{owner['variant']}"
    binaries = []
    for unit in steps.units:
        for step in unit:
            output = env.File(str(staged / step.output))
            if not output.has_builder():  # another artifact of this key made it already
                env.PyptoStep(output, [str(staged / i) for i in step.inputs])
                env.NoCache(output)  # the artifact cache shares what the steps make
                output.attributes.pypto = {
                    "step": step, "root": staged, "label": f"{step.kind} {label}: {step.inputs[0]}"
                    if step.kind == "compile" else f"{step.kind} {label}: {step.output}",
                    # The command without launcher; the key covers the headers it includes.
                    "key": f"{case['content_key']}: {shlex.join(step.command)}"}
                if step.pch is not None:
                    env.Depends(output, _pch_step(env, step.pch))
        binaries.append(output)
    node.add_prerequisite(binaries)
    case["compiled"] = True
    return []


def _pch_step(env, pch):
    """The SCons step that builds the precompiled header `pch` (one per header, shared by
    every compile that loads it; it lives in the pypto cache, keyed by its directory)."""
    node = env.File(str(pch.path))
    if not node.has_builder():
        env.PyptoPch(node, [])
        env.NoCache(node)  # it is a cache entry of its own
        node.attributes.pypto = {"pch": pch, "step": None,
                                 "label": f"precompiled header {pch.path.parent.name[:12]}",
                                 "key": f"{pch.directory}: {shlex.join(pch.command)}"}
    return node


def _current(node) -> bool:
    """Whether the target `node`'s file is this build's: built in this run, or up to date."""
    state = node.get_state()
    if state in (SCons.Node.executed, SCons.Node.up_to_date):
        return True
    return state in (SCons.Node.no_state, SCons.Node.pending) and node.is_up_to_date()


SCHEDULE_STEPS = SCons.Scanner.Scanner(function=_schedule_steps, name="PyptoSteps")

_BUILDERS = {
    "PyptoSpec": (_describe_spec, "pypto spec description v1", "pypto: spec {case[spec]}"),
    "PyptoGolden": (_golden, "pypto golden v1", "pypto: golden {case[kernel]}/{case[variant]}"),
    "PyptoPlan": (_plan, "pypto artifact plan v1",
                  "pypto: plan {case[kernel]}/{case[variant]} for {case[platform]}"),
    "PyptoArtifact": (_artifact, "pypto artifact v2",
                      "pypto: artifact {case[kernel]}/{case[variant]} for {case[platform]}"),
    "PyptoStep": (_step, "pypto compile step v1", None),
    "PyptoPch": (_pch, "pypto precompiled header v1", None),
    "PyptoCheck": (_check, "pypto check v1",
                   "pypto: check {case[kernel]}/{case[variant]} on {case[platform]}"),
    "PyptoIndex": (_index, "pypto library index v3", "pypto: index {t}"),
    "PyptoPackage": (_package, "pypto package v2", "pypto: package {t}"),
}
_REPORT = _StableAction(_report, "pypto check report v1", _show("pypto: table of check results"))


# --------------------------------------------------------------------------- the library


class LibraryTargets:
    """What `env.KernelLibrary` declares, to alias in SConstruct (`check` and `package`
    are None without a platform, `check` also on a device platform)."""

    def __init__(self, default, goldens, check=None, package=None):
        self.default = default
        self.goldens = goldens
        self.check = check
        self.package = package


def KernelLibrary(env, name, version, specs, platform=None, build_dir="#build", dist_dir="#dist"):
    """Declares the targets of the kernel library made of the spec files `specs`, and the
    aliases `goldens`, `check` (sim platforms) and `package`, the index being the default.

    Spec files whose name starts with "_" are helpers (imported by specs), not specs.
    `platform` defaults to the `platform=` command-line variable; only `goldens` can be
    built without one.  Returns `LibraryTargets`.
    """
    from pypto.spec import toolkit
    from pypto.spec.index import SpecIndex

    top = Path(env.Dir("#").abspath)
    build, dist = Path(env.Dir(build_dir).abspath), Path(env.Dir(dist_dir).abspath)
    platform = _requested_platform(platform or env.get("platform") or None, build, name, version)
    # The index is a cache written atomically: reading it before taking the lock is safe.
    index = SpecIndex(top, build / "specs" / "index.json")
    artifact_key = None
    if platform is not None:
        from pypto.toolchain import ToolchainNotFoundError, key

        try:  # before any spec is read: a missing device compiler stops the build at once
            compiler = toolkit.compiler_digest(index, platform)
        except ToolchainNotFoundError as exc:
            _stop(str(exc))
        options = toolkit.artifact_options(index, platform, compiler)

        def artifact_key(ir: str) -> str:
            return key.artifact_key(ir, options, compiler)

    _lock_build_dir(build)
    env.SConsignFile(str(build / ".sconsign"))
    env.Decider("content-timestamp")
    # Scanned imports come from the sconsign while a spec and its imports are unchanged; a
    # description's key (its meaning) covers the import closure whatever the cache holds.
    env.SetOption("implicit_cache", 1)
    _use_caches(env)

    _INDEXES[str(top)] = index
    described = _describe_all(env, index, top, specs, toolkit.frontend_digest(index))
    library = _LibraryGraph(env, build, platform, artifact_key, index, toolkit)
    for path, description in described.items():
        library.add_spec(path, top, description)
    index.save()
    targets = library.targets(name, version, dist)
    env.Default(targets.default)
    env.Alias("goldens", targets.goldens)
    if targets.check is not None:
        env.Alias("check", targets.check)
    if targets.package is not None:
        env.Alias("package", targets.package)
    return targets


def _use_caches(env) -> None:
    """Points the build at `cache=DIR` (SCons' CacheDir at DIR/scons, with verified reads;
    pypto's artifact cache at DIR/artifacts) and, with `cache_limit=`, trims that cache (or
    the artifact cache, without `cache=`) when a build that ran steps ends."""
    from pypto.platform import default_cache_root
    from pypto.scons.cachedir import VerifiedCacheDir
    from pypto.toolchain import parse_size

    root = default_cache_root()
    if env.get("cache"):
        root = Path(env["cache"])
        # Made here with the umask's rights (SCons would make its directory private): a
        # team's builders share a group and a umask of 002 (docs/building.md).
        (root / "scons").mkdir(parents=True, exist_ok=True)
        env.CacheDir(str(root / "scons"), VerifiedCacheDir)
        os.environ["PYPTO_CACHE_DIR"] = str(root / "artifacts")
    if env.get("cache_limit"):
        try:
            limit = parse_size(env["cache_limit"], "cache_limit")
        except ValueError as exc:
            _stop(str(exc))
        atexit.register(_trim_after_build, root, limit)


def _trim_after_build(root: Path, limit: int) -> None:
    from pypto.toolchain import trim_if_due

    if not _STEPS_RAN:
        return  # nothing was added
    result = trim_if_due(root, limit)
    if result is not None and result.removed:
        print(f"pypto: trimmed the cache {root} to {limit:,} bytes: removed {result.removed} "
              f"least recently used items ({result.freed:,} bytes), {result.size:,} left",
              flush=True)


def _stop(message: str):
    """Ends the build while its files are read, with `message` as its one last line (a
    UserError would add the SConstruct line it was raised from)."""
    print(f"scons: *** {message}", file=sys.stderr, flush=True)
    SCons.Script.Exit(2)


def _requested_platform(platform, build: Path, name: str, version: str):
    """The platform to build, after checking the command line asks for something sensible."""
    from pypto.platform import get_platform, platform_names
    from pypto.spec.package import check_dist_name

    targets = [str(t) for t in SCons.Script.COMMAND_LINE_TARGETS]
    goldens_only = bool(targets) and all(
        t == "goldens" or Path(t).resolve().is_relative_to(build / "goldens") for t in targets)
    if platform is None and not goldens_only and not SCons.Script.GetOption("help"):
        _stop(f"choose a platform: scons platform=<{'|'.join(platform_names())}> "
              "[check|package], or `scons goldens` for the goldens alone")
    try:
        check_dist_name("name", name)
        check_dist_name("version", version)
        if platform is not None and not get_platform(platform).runs_here and "check" in targets:
            here = [p for p in platform_names() if get_platform(p).runs_here]
            _stop(f"`check` runs kernels, and platform {platform!r} needs an NPU this host "
                  f"does not have; check on {' or '.join(here)}")
    except ValueError as exc:  # an unknown platform lists the known ones
        _stop(str(exc))
    return platform


def _describe_all(env, index, top: Path, specs, frontend: str) -> dict:
    """Every spec file's description (from the index; a spec runs only when its meaning
    changed), after checking that kernel names are unique across the library."""

    def run_spec(path: Path) -> dict:
        # Imported only here: the spec reader brings the IR, goldens and the runtime (about
        # 0.1 s), which a build whose specs all kept their meaning never needs.
        from pypto.ir.errors import PyptoError
        from pypto.spec.build import describe

        print(f"pypto: reading spec {index.relpath(path)}", flush=True)
        try:
            return describe(path, top)
        except PyptoError as exc:
            raise _SpecFailed(str(exc)) from None

    files = sorted({Path(env.File(s).abspath) for s in env.Flatten([specs])})
    described = {}
    for path in (p for p in files if not p.name.startswith("_")):
        try:
            described[path] = index.description(path, frontend, run_spec)
        except _SpecFailed as exc:
            index.save()  # keep what the other specs cost to describe
            raise SCons.Errors.UserError(str(exc)) from None
    owners: dict[str, Path] = {}
    for path, description in described.items():
        for kernel in description["kernels"]:
            other = owners.setdefault(kernel["name"], path)
            if other != path:
                raise SCons.Errors.UserError(
                    f"kernel {kernel['name']!r} is declared by both {index.relpath(other)} and "
                    f"{index.relpath(path)}; kernel names are unique in a library"
                )
    return described


class _SpecFailed(Exception):
    """A spec that does not describe (the user's error, already worded for them)."""


class _LibraryGraph:
    """The targets of one library as they are declared, spec by spec."""

    def __init__(self, env, build: Path, platform, artifact_key, index, toolkit) -> None:
        self.env, self.build, self.platform, self.index = env, build, platform, index
        self.artifact_key = artifact_key
        self.golden_code = "golden code " + toolkit.golden_digest(index)
        self.runtime_code = None
        self.runs_here = False
        if platform is not None:
            from pypto.platform import get_platform

            self.runs_here = get_platform(platform).runs_here
            self.runtime_code = "runtime " + toolkit.runtime_digest(index)
        self.goldens, self.artifacts, self.built_goldens, self.checks = [], [], [], []
        self.plans: dict = {}  # content key -> its PyptoPlan target
        self.package_sources, self.entries, self.directories = [], [], []
        self.build_prefix = str(build) + os.sep  # strings: pathlib costs per target add up

    def add_spec(self, path: Path, top: Path, description: dict) -> None:
        env, rel, build = self.env, self.index.relpath(path), self.build_prefix
        meaning = self.index.spec_meaning(path)
        # The meaning covers the spec's imports and pypto's spec-reading code as well (its
        # key); the file is a source too, so that --debug=explain and the import scanner
        # see it.
        spec = env.PyptoSpec(f"{build}specs/{rel}.json", str(path))
        spec[0].attributes.pypto = {"spec": rel, "meaning": meaning, "description": description,
                                    "key": f"{rel}: meaning {meaning}"}
        for kernel in description["kernels"]:
            for variant in kernel["variants"]:
                case = {"path": str(path), "top": str(top), "kernel": kernel["name"],
                        "variant": variant["name"]}
                golden = env.PyptoGolden(
                    f"{build}goldens/{case['kernel']}/{case['variant']}/golden.json", spec)
                golden[0].attributes.pypto = {**case, "key": self.golden_code}
                self.goldens += golden
                if self.platform in kernel["platforms"]:
                    self._add_variant(case, rel, variant["ir"], golden)

    def _add_variant(self, case: dict, spec: str, ir: str, golden) -> None:
        from pypto.spec.package import LibraryEntry

        env, platform, build = self.env, self.platform, self.build_prefix
        k, v = case["kernel"], case["variant"]
        directory = f"{build}{platform}/{k}/{v}"
        key = self.artifact_key(ir)
        plan = self.plans.get(key)
        if plan is None:  # variants of one content key share their sources and steps
            staged = f"{build}obj/{platform}/{k}/{v}"
            plan = self.plans[key] = env.PyptoPlan(f"{staged}/plan.json", [])
            plan[0].attributes.pypto = {**case, "platform": platform, "content_key": key,
                                        "key": f"{k}/{v}: content key {key}"}
            self.directories.append(staged)
        # The plan is order-only: what it holds is a function of the key, which the
        # artifact's signature holds, and --debug=explain then names the key that changed.
        artifact = env.PyptoArtifact(f"{directory}/manifest.json", [])
        env.Requires(artifact, plan)
        artifact[0].attributes.pypto = {**case, "platform": platform, "content_key": key,
                                        "plan": plan[0], "key": f"{k}/{v}: content key {key}"}
        self.artifacts += artifact
        self.directories.append(directory)
        self.built_goldens += golden[:1]
        self.package_sources += artifact + golden
        self.entries.append(LibraryEntry(k, spec, v, f"{platform}/{k}/{v}", f"goldens/{k}/{v}"))
        if self.runs_here and _declares_checks():
            result = env.PyptoCheck(f"{build}checks/{platform}/{k}/{v}.json",
                                    artifact + golden[:1])
            result[0].attributes.pypto = {**case, "platform": platform, "artifact": directory,
                                          "golden": f"{build}goldens/{k}/{v}",
                                          "key": self.runtime_code}
            self.checks += result

    def targets(self, name: str, version: str, dist: Path) -> LibraryTargets:
        from pypto.spec.package import package_name, signing_key

        env, platform = self.env, self.platform
        # Once for all targets: each call looks every node up again.
        env.Precious(self.goldens)  # replaced atomically; a failed rebuild keeps the old one
        if platform is None:
            return LibraryTargets(self.goldens, self.goldens)
        plans = [node for plan in self.plans.values() for node in plan]
        # Directories: pypto's artifact cache shares them instead.  A plan names this
        # host's compiler and headers.
        env.NoCache(self.artifacts + plans)
        env.Precious(self.artifacts)  # a directory is swapped whole, never emptied first
        if SCons.Script.GetOption("clean"):
            env.Clean(self.artifacts, self.directories)
        listing = f"library {name} {version} {platform}: " + " ".join(
            f"{e.kernel}/{e.variant}@{e.spec}" for e in self.entries)
        index = env.PyptoIndex(str(self.build / f"library-{platform}.json"),
                               self.artifacts + self.built_goldens)
        index[0].attributes.pypto = {"root": str(self.build), "name": name, "version": version,
                                     "platform": platform, "entries": self.entries,
                                     "key": listing}
        key = signing_key(env.get("signing_key"))  # a source: a new key signs again
        archive = env.PyptoPackage(str(dist / f"{package_name(name, version, platform)}.tar"),
                                   index + self.package_sources + ([str(key)] if key else []))
        archive[0].attributes.pypto = {"root": str(self.build), "platform": platform,
                                       "signing_key": key, "key": "signed" if key else ""}
        env.NoCache(index + archive + self.checks)  # a check on a fresh checkout runs the kernel
        check = None
        if self.checks:
            check = env.Alias(f"pypto-check-{platform}", self.checks + index, _REPORT)
            env.AlwaysBuild(check)  # the table is printed on every `check`, from the results
        return LibraryTargets(index, self.goldens, check, archive)


def _declares_checks() -> bool:
    """Whether the command line may build a check: a plain `scons` builds the default
    target (the index) alone, so 200 check targets would be declared for nothing."""
    return bool(SCons.Script.COMMAND_LINE_TARGETS) or bool(SCons.Script.GetOption("clean"))


def _lock_build_dir(build_dir: Path) -> None:
    """Holds an flock on `<build>/.lock` until this process ends: two scons processes in
    one build directory take turns instead of corrupting each other's files."""
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = lock_with_deadline(
            build_dir / ".lock", LOCK_TIMEOUT_S,
            lambda: print(f"pypto: waiting for another scons building in {build_dir}",
                          flush=True))
    except LockTimeout:
        raise SCons.Errors.UserError(
            f"waited {LOCK_TIMEOUT_S:g} s for {build_dir}/.lock: another scons is "
            f"still building in {build_dir} (find it with `fuser -v {build_dir}/.lock`)"
        ) from None
    _HELD_LOCKS.append(fd)  # released by the kernel when this process ends, however it ends


class _Progress:
    """Numbers the steps SCons runs as `[N/M]`: N counts the library's targets SCons has
    reached (up-to-date ones too, so N ends at M), M those the command line asks for."""

    def __init__(self) -> None:
        self.reached = 0
        self.total: int | None = None

    def __call__(self, node) -> None:  # SCons calls it for every node it evaluates
        if _is_library_target(node):
            if self.total is None:
                self.total = _count_targets()
            self.reached += 1

    def label(self) -> str:
        """`[N/M] ` for the step being run."""
        return f"[{self.reached}/{self.total}] " if self.total else ""


def _count_targets() -> int:
    """The library targets the build's top targets reach."""
    todo = []
    for target in SCons.Script.BUILD_TARGETS:
        if isinstance(target, str):
            found = SCons.Node.Alias.default_ans.lookup(target)
            target = found if found is not None else SCons.Defaults.DefaultEnvironment().Entry(
                target)
        todo.append(target)
    seen, count = set(), 0
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        count += _is_library_target(node)
        todo.extend(node.children(scan=False))
        todo.extend(node.prerequisites or ())  # an artifact's plan
    return count


def _is_library_target(node) -> bool:
    """A target KernelLibrary declared (the steps an artifact's plan adds are not)."""
    case = getattr(node.attributes, "pypto", None)
    return case is not None and "step" not in case


PROGRESS = _Progress()


def generate(env):
    """Adds to `env` the command-line variables `platform=`, `cache=`, `cache_limit=`,
    `launcher=` and `signing_key=` (`scons -h` lists them), the pypto builders and
    `env.KernelLibrary`."""
    # Glob, Default, Alias and Help use the default environment: without tools, SCons does
    # not search PATH for a dozen compilers on every run (a tenth of a no-op build).
    SCons.Defaults.DefaultEnvironment(tools=[])
    from pypto.platform import platform_names
    from pypto.toolchain.cache import LIMIT_ENV
    from pypto.toolchain.compiler import LAUNCHER_ENV

    variables = SCons.Variables.Variables(None, SCons.Script.ARGUMENTS)
    variables.Add("platform", f"{', '.join(platform_names())} (not needed for `goldens`)", "")
    variables.Add(SCons.Variables.PathVariable(
        "cache", "directory shared by builds: SCons CacheDir + pypto artifact cache", "",
        SCons.Variables.PathVariable.PathAccept))
    variables.Add(SCons.Variables.PathVariable(
        "signing_key", "Ed25519 private key (PEM) that signs `package` (default: "
        "$PYPTO_SIGNING_KEY; none: unsigned)", "", SCons.Variables.PathVariable.PathAccept))
    variables.Add("cache_limit", "trim the cache to this size after a build (e.g. 20G; "
                  f"default: ${LIMIT_ENV}), least recently used first", os.environ.get(
                      LIMIT_ENV, ""))
    variables.Add("launcher", "command in front of every compile: ccache, distcc, icecc, "
                  f"'ccache distcc' (default: ${LAUNCHER_ENV})", os.environ.get(LAUNCHER_ENV, ""))
    variables.Update(env)
    SCons.Script.Help(variables.GenerateHelpText(env), append=True)
    SCons.Script.Progress(PROGRESS)
    for builder, (function, identity, line) in _BUILDERS.items():
        # A compile or link step is not numbered: plans add them while the build runs.
        show = _show(line) if line is not None else (
            lambda target, source, env: f"pypto:   {_case(target)['label']}")
        env["BUILDERS"][builder] = SCons.Builder.Builder(
            action=_StableAction(function, identity, show),
            emitter=_golden_emitter if builder == "PyptoGolden" else None,
            source_scanner=PYTHON_IMPORTS if builder == "PyptoSpec" else None,
            target_scanner=SCHEDULE_STEPS if builder == "PyptoArtifact" else None,
            target_factory=env.fs.File,
            source_factory=env.fs.Entry,
        )
    env.AddMethod(KernelLibrary, "KernelLibrary")

