"""Platforms and backends: the hardware facts and toolchains of `build_rules/`, as objects.

A *backend* is an NPU generation (`Ascend910B`, `Ascend950`): capacities, cast table,
atomic dtypes, core counts.  A *platform* is what a user names (`a2a3sim`, `a5`, ...): a
backend plus how generated C++ is compiled for it.  This module imports only the standard
library (and `pypto.resources`, which finds `build_rules/`) because `pypto.runtime` uses
it to read platforms.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto.resources import BUILD_RULES_ENV, build_rules_dir

PLATFORM_ENV = "PYPTO_PLATFORM"
DEFAULT_PLATFORM = "a2a3sim"
SIMULATE_DEVICE_ENV = "PYPTO_SIMULATE_DEVICE"
SPACES = ("Vec", "Mat", "Left", "Right", "Acc", "Bias", "LeftScale", "RightScale")
# Spaces a backend may lack (capacity 0): the MX scale buffers exist on A5 only.
OPTIONAL_SPACES = ("LeftScale", "RightScale")
CORE_TYPES = ("vector", "cube")
# sim: our bit-exact ISA model; device: an NPU; cpu_model: the device sources on pto-isa's
# own CPU model of the instructions (CPU_SIM).  sim and cpu_model run on this host.
KINDS = ("sim", "device", "cpu_model")
# PYPTO_SIMULATE_DEVICE's values: the kind of platform a device platform runs on instead.
SIMULATE_DEVICE_KINDS = {"1": "sim", "cpu-model": "cpu_model"}
_KIND_ORDER = {"sim": 0, "cpu_model": 1, "device": 2}


def default_cache_root() -> Path:
    """$PYPTO_CACHE_DIR, else $XDG_CACHE_HOME/pypto, else ~/.cache/pypto: the artifact
    cache's root (the runtime never writes there)."""
    explicit = os.environ.get("PYPTO_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says to ignore a relative XDG_CACHE_HOME.
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "pypto"


class BuildRuleError(ValueError):
    """A file under build_rules/ is missing or malformed; the message names file and key."""


class CompilerNotFoundError(RuntimeError):
    """A platform's compiler is not installed, or not where configuration points; the
    message says where it looked and what to do."""


@dataclass(frozen=True)
class Backend:
    """One NPU generation's hardware facts (`build_rules/backends/<name>.toml`)."""

    name: str
    capacities: dict[str, int]  # on-chip bytes per core, keyed by memory space (SPACES)
    native_casts: dict[str, tuple[str, ...]]  # source dtype name -> single-instruction targets
    atomic_add_dtypes: tuple[str, ...]
    innermost_hint_bytes: int
    cube_cores: int  # clusters: pl.system.available_cluster_count()
    vector_cores: int  # pl.system.available_aiv_count()
    device_arch: dict[str, str]  # core type -> AI Core ISA name for the device compiler
    tile_moves: dict[str, tuple[str, ...]]  # on-chip buffer -> buffers pl.move can copy it to
    tile_inserts: dict[str, tuple[str, ...]]  # source buffer -> pl.tile.assemble targets
    missing_instructions: tuple[str, ...] = ()  # PTO instructions it lacks ("TRANDOM")
    gm_cache_line: int = 64  # bytes of a data-cache line over global memory (cacheinvalid)

    # The dict fields would make the generated hash raise; the name identifies a backend.
    def __hash__(self) -> int:
        return hash(self.name)


@dataclass(frozen=True)
class CompilerSettings:
    """How a platform compiles generated C++ (the `[compiler]` table of its build rule)."""

    cxx: str  # program looked up on PATH when nothing more specific is set
    env: tuple[str, ...]  # variables naming the compiler (program or path); first set wins
    home_env: tuple[str, ...]  # variables naming an install root that holds the compiler
    home_relpaths: tuple[str, ...]  # where the compiler lies under such a root
    install_hint: str  # what to do when the compiler is missing
    output_suffix: str  # ".so" (sim, loaded by the runtime) or ".o" (device object)
    flags: tuple[str, ...]  # every compile (of one source into one object)
    kernel_flags: tuple[str, ...]  # InCore kernels; "{arch}" is the backend's device_arch
    orchestration_flags: tuple[str, ...]
    # Links a unit's objects into its binary; empty: the compile's object is the binary.
    link_flags: tuple[str, ...] = ()
    # Programs tried on PATH after `env`, each only if its `--version` meets min_versions
    # (family -> lowest major version, e.g. {"clang": 17, "gcc": 13}; empty: any version).
    path_candidates: tuple[str, ...] = ()
    min_versions: dict[str, int] = field(default_factory=dict)
    # Last resort: the compiler a Python package ships (module "ziglang": its `zig`), run
    # with `python_module_args` before the flags (`zig c++ ...`).
    python_module: str = ""
    python_module_args: tuple[str, ...] = ()
    # Headers every kernel includes first (`#include <...>` names), precompiled once per
    # compiler, flags and header digest where the compiler is Clang (Toolchain.steps).
    precompiled_headers: tuple[str, ...] = ()
    # The CPU every compile targets, whatever the host's: host machine (`uname -m`) ->
    # compiler kind ("clang", "gcc", or the `python_module` whose compiler it is) -> flags
    # (Toolchain.target_flags).  Empty: the compiler's default (which may be the host's CPU).
    targets: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    # min_versions would make the generated hash raise; settings are compared, not hashed.
    __hash__ = None


@dataclass(frozen=True)
class Platform:
    """A build target users name: a backend plus its compiler (`build_rules/platforms/`)."""

    name: str
    backend: Backend
    kind: str  # "sim" | "device" | "cpu_model"
    compiler: CompilerSettings
    # CPU-model platforms: the architecture of pto-isa's NPUMemoryModel ("A2A3" or "A5").
    cpu_model_arch: str = ""

    @property
    def is_sim(self) -> bool:
        """True for the host simulator platforms (our ISA model), which build and run here."""
        return self.kind == "sim"

    @property
    def runs_here(self) -> bool:
        """True where artifacts run on this host: the simulators and the CPU-model platforms."""
        return self.kind in ("sim", "cpu_model")

    @property
    def device_code(self) -> bool:
        """True where kernels are generated as real PTO-ISA C++ (device and CPU-model
        platforms), False where they call the simulator's ISA model."""
        return self.kind in ("device", "cpu_model")

    # Nested dicts would make the generated hash raise; the name identifies a platform.
    def __hash__(self) -> int:
        return hash(self.name)


def platform_names() -> tuple[str, ...]:
    """Names of the platforms defined under build_rules/: simulators, CPU models, devices."""
    return _platform_names(build_rules_dir())


def get_platform(name: str) -> Platform:
    """The platform called `name`; an unknown name raises ValueError listing the known ones."""
    rules = build_rules_dir()
    names = _platform_names(rules)
    if name not in names:
        raise ValueError(f"unknown platform {name!r}; choose one of: {', '.join(names)}")
    return _load_platform(rules, name)


def default_platform() -> str:
    """The platform of a `RunConfig`, `ir.compile` or tool that names none:
    `$PYPTO_PLATFORM`, else a2a3sim.  A value naming no platform raises ValueError saying
    where it came from."""
    name = os.environ.get(PLATFORM_ENV) or DEFAULT_PLATFORM
    names = _platform_names(build_rules_dir())
    if name not in names:
        raise ValueError(f"${PLATFORM_ENV} is {name!r}, which names no platform; set it to one "
                         f"of: {', '.join(names)}")
    return name


def simulator_for(name: str) -> str:
    """The platform a run asked for as `name` uses: `name` itself, or, when the environment
    sets PYPTO_SIMULATE_DEVICE, a stand-in for a device platform of the same backend, so a
    program written for a device runs unedited where there is none: `1` its simulator
    ("a2a3" -> "a2a3sim"), `cpu-model` its device code on pto-isa's CPU model ("a2a3" ->
    "a2a3cpu").  A simulator is left as it is, as is a platform of the kind asked for."""
    value = os.environ.get(SIMULATE_DEVICE_ENV, "")
    if value in ("", "0"):
        return name
    kind = SIMULATE_DEVICE_KINDS.get(value)
    if kind is None:
        raise ValueError(f"${SIMULATE_DEVICE_ENV} is {value!r}; set it to 1 (a device platform "
                         "runs on its simulator), cpu-model (on pto-isa's CPU model) or 0")
    platform = get_platform(name)
    if platform.kind in (kind, "sim"):
        return name
    other = _platform_of(kind, platform.backend.name)
    if other is None:
        raise ValueError(f"{SIMULATE_DEVICE_ENV} is {value!r}, but build_rules/ has no {kind} "
                         f"platform of {platform.backend.name} for platform {name!r}")
    return other


def simulator_of_backend(backend: str) -> str:
    """The simulator platform of the backend called `backend` ("Ascend910B" -> "a2a3sim")."""
    name = _platform_of("sim", backend)
    if name is None:
        raise ValueError(f"build_rules/ has no simulator of backend {backend!r}")
    return name


def _platform_of(kind: str, backend: str) -> str | None:
    """The first platform (by name) of `kind` ("sim", "cpu_model", ...) and `backend`."""
    rules = build_rules_dir()
    return next((name for name in _platform_names(rules)
                 if (p := _load_platform(rules, name)).kind == kind
                 and p.backend.name == backend), None)


def check_target(platform: str, backend_type: Any = None, strategy: Any = None) -> None:
    """Upstream PyPTO's compile arguments that name the target: `backend_type` (a
    `pypto.backend.BackendType` or its name) must be `platform`'s backend, and `strategy`
    the only pass pipeline there is, `OptimizationStrategy.Default`."""
    backend = getattr(backend_type, "name", backend_type)
    own = get_platform(platform).backend.name
    if backend is not None and backend != own:
        raise ValueError(f"backend_type {backend} does not match platform {platform!r}, whose "
                         f"backend is {own}; pick the platform of that backend")
    name = getattr(strategy, "name", strategy)
    if name not in (None, "Default"):
        raise ValueError(f"strategy {strategy!r} is not a pass pipeline here; the only one is "
                         "OptimizationStrategy.Default")


def backend_names() -> tuple[str, ...]:
    """Names of the backends defined under build_rules/ (e.g. "Ascend910B")."""
    return tuple(sorted(p.stem for p in (build_rules_dir() / "backends").glob("*.toml")))


def get_backend(name: str) -> Backend:
    """The backend called `name` (e.g. "Ascend910B"); unknown names raise ValueError."""
    known = backend_names()
    if name not in known:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(known)}")
    return _load_backend(build_rules_dir(), name)


@dataclass(frozen=True)
class FoundCompiler:
    """A located compiler: the program, and arguments that precede the flags (`zig c++`)."""

    path: Path
    args: tuple[str, ...] = ()


def locate_compiler(platform: Platform) -> Path:
    """The program of `platform`'s compiler (see `find_compiler`)."""
    return find_compiler(platform).path


def find_compiler(platform: Platform) -> FoundCompiler:
    """The compiler of `platform`'s `[compiler]` table, first match wins: the program named
    by a set variable in `env`, an executable `<home_env root>/<home_relpath>`, the first of
    `path_candidates` on PATH recent enough for `min_versions`, `cxx` on PATH, the compiler
    the Python package `python_module` ships.  Raises CompilerNotFoundError when none is
    found, or when a set `env` variable names a missing or too old compiler."""
    looked: list[str] = []  # where it looked, for the message
    for lookup in (_env_compiler, _home_compiler, _path_compiler, _package_compiler):
        found = lookup(platform, looked)
        if found is not None:
            return found
    raise CompilerNotFoundError(_missing_compiler_message(platform, looked))


def _env_compiler(platform: Platform, looked: list[str]) -> FoundCompiler | None:
    """The program a set `env` variable names (an error when it is missing or too old)."""
    settings = platform.compiler
    for var, value in _set_variables(settings.env, looked, "${var} (unset)"):
        found = shutil.which(value)
        if found is None:
            # An explicit setting that is wrong must not silently fall back to another compiler.
            raise CompilerNotFoundError(
                f"{var}={value!r} names no executable program; point it at the compiler "
                f"for platform {platform.name!r} or unset it"
            )
        problem = _version_problem(settings, (found,))
        if problem:
            raise CompilerNotFoundError(
                f"{var}={value!r}: {problem}; platform {platform.name!r} needs "
                f"{_wanted_versions(settings)}. {settings.install_hint}"
            )
        return FoundCompiler(Path(found))
    return None


def _set_variables(names: Iterable[str], looked: list[str],
                   unset: str) -> Iterator[tuple[str, str]]:
    """(name, value) of each environment variable of `names` that is set, in order; each
    unset (or empty) one before it goes into `looked` as `unset` with `{var}` its name."""
    for var in names:
        value = os.environ.get(var)
        if value:
            yield var, value
        else:
            looked.append(unset.format(var=var))


def _home_compiler(platform: Platform, looked: list[str]) -> FoundCompiler | None:
    """An executable `<home_env root>/<home_relpath>`."""
    settings = platform.compiler
    for _, root in _set_variables(settings.home_env, looked, "${var}/... ({var} unset)"):
        for relpath in settings.home_relpaths:
            candidate = Path(root) / relpath
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return FoundCompiler(candidate)
            looked.append(str(candidate))
    return None


def _path_compiler(platform: Platform, looked: list[str]) -> FoundCompiler | None:
    """The first of `path_candidates` (else `cxx`) on PATH recent enough."""
    settings = platform.compiler
    for name in settings.path_candidates or (settings.cxx,):
        found = shutil.which(name)
        if found is None:
            looked.append(f"{name!r} on PATH")
            continue
        problem = _version_problem(settings, (found,))
        if problem is None:
            return FoundCompiler(Path(found))
        looked.append(f"{found} ({problem})")
    return None


def _package_compiler(platform: Platform, looked: list[str]) -> FoundCompiler | None:
    """The compiler the Python package `python_module` ships, recent enough."""
    settings = platform.compiler
    if not settings.python_module:
        return None
    found = _python_module_compiler(settings.python_module)
    if found is None:
        looked.append(f"the Python package {settings.python_module!r} (not installed)")
        return None
    problem = _version_problem(settings, (str(found), *settings.python_module_args))
    if problem is None:
        return FoundCompiler(found, settings.python_module_args)
    looked.append(f"{found} ({problem})")
    return None


def compiler_version_line(command: tuple[str, ...]) -> str:
    """The first line `<command> --version` prints (asked once per command per process).
    Raises CompilerNotFoundError when the program does not run or prints nothing."""
    return _version_line(tuple(command))


@functools.cache
def _version_line(command: tuple[str, ...]) -> str:
    try:
        proc = subprocess.run(
            [*command, "--version"],
            check=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,  # zig's first run builds its own caches
            # A fixed locale keeps the line, and so every content key, stable across shells.
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CompilerNotFoundError(f"could not run '{' '.join(command)} --version': {e}") from e
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise CompilerNotFoundError(
            f"'{' '.join(command)} --version' failed (exit status {proc.returncode}): "
            f"{proc.stderr.strip()}"
        )
    return lines[0].strip()


_CLANG_VERSION = re.compile(r"clang version (\d+)\.")
_GCC_VERSION = re.compile(r"^(?:.*[-/ ])?(?:g\+\+|gcc|c\+\+)(?:-\d+)? \(.*\) (\d+)\.\d+")


def compiler_family(version_line: str) -> tuple[str, int] | None:
    """("clang", 17) or ("gcc", 13) from a `--version` line; None when it is neither."""
    match = _CLANG_VERSION.search(version_line)
    if match:
        return "clang", int(match.group(1))
    match = _GCC_VERSION.search(version_line)
    if match:
        return "gcc", int(match.group(1))
    return None


def _version_problem(settings: CompilerSettings, command: tuple[str, ...]) -> str | None:
    """Why the compiler `command` misses `min_versions`, or None when it meets them."""
    if not settings.min_versions:
        return None
    try:
        line = compiler_version_line(command)
    except CompilerNotFoundError as e:
        return str(e)
    family = compiler_family(line)
    if family is None or family[0] not in settings.min_versions:
        return f"{line!r} is not one of {', '.join(sorted(settings.min_versions))}"
    name, major = family
    if major < settings.min_versions[name]:
        return f"{name} {major} is older than {settings.min_versions[name]}"
    return None


def _wanted_versions(settings: CompilerSettings) -> str:
    return " or ".join(f"{name} >= {v}" for name, v in sorted(settings.min_versions.items()))


def _python_module_compiler(module: str) -> Path | None:
    """The compiler program inside the installed Python package `module` (ziglang: `zig`)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    candidate = Path(spec.origin).parent / "zig"
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def _missing_compiler_message(platform: Platform, looked: list[str]) -> str:
    settings = platform.compiler
    remedy = [settings.install_hint]
    if settings.env:
        remedy.append(f"set {' or '.join(settings.env)} to the compiler")
    if settings.home_env:
        remedy.append(f"set {' or '.join(settings.home_env)} to its install root")
    message = (
        f"platform {platform.name!r} needs the compiler {settings.cxx!r}, which was not found; "
        f"looked at: {', '.join(looked)}. To fix: {'; or '.join(remedy)}."
    )
    sim = _platform_of("sim", platform.backend.name)
    if platform.kind == "device" and sim is not None:
        message += f" Or use platform={sim!r} to run on the host simulator."
    return message


class _Rule:
    """A table of one build-rule file, read with type checks that name file and key."""

    def __init__(self, path: Path, data: dict[str, Any], prefix: str = "") -> None:
        self.path = path
        self.data = data
        self.prefix = prefix

    @classmethod
    def read(cls, path: Path) -> _Rule:
        try:
            with open(path, "rb") as f:
                return cls(path, tomllib.load(f))
        except FileNotFoundError:
            raise BuildRuleError(f"{path}: build rule file not found") from None
        except tomllib.TOMLDecodeError as e:
            raise BuildRuleError(f"{path}: not valid TOML: {e}") from None

    def _fail(self, key: str, want: str, value: Any) -> BuildRuleError:
        return BuildRuleError(f"{self.path}: '{self.prefix}{key}' must be {want}, found {value!r}")

    def _value(self, key: str, default: Any) -> Any:
        if key in self.data:
            return self.data[key]
        if default is None:
            raise BuildRuleError(f"{self.path}: missing key '{self.prefix}{key}'")
        return default

    def text(self, key: str, choices: tuple[str, ...] = (), default: str | None = None) -> str:
        value = self._value(key, default)
        if not isinstance(value, str) or (choices and value not in choices):
            raise self._fail(key, " or ".join(map(repr, choices)) or "a string", value)
        return value

    def positive_int(self, key: str) -> int:
        value = self._value(key, None)
        # bool is an int subclass, but `true` is never a valid count or size.
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self._fail(key, "a positive integer", value)
        return value

    def count(self, key: str) -> int:
        """A non-negative integer (0: the thing is absent)."""
        value = self._value(key, None)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self._fail(key, "a non-negative integer", value)
        return value

    def texts(self, key: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        value = self._value(key, default)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, "a list of strings", value)
        return tuple(value)

    def versions(self, key: str) -> dict[str, int]:
        value = self._value(key, {})
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0
            for k, v in value.items()
        ):
            raise self._fail(key, "a table of compiler family = lowest major version", value)
        return dict(value)

    def table(self, key: str, keys: tuple[str, ...] = ()) -> _Rule:
        value = self._value(key, None)
        if not isinstance(value, dict):
            raise self._fail(key, "a table", value)
        missing = [k for k in keys if k not in value]
        if missing:
            raise BuildRuleError(f"{self.path}: table '{self.prefix}{key}' lacks {missing}")
        return _Rule(self.path, value, f"{self.prefix}{key}.")


def _targets(compiler: _Rule) -> dict[str, dict[str, tuple[str, ...]]]:
    """The `[compiler.target.<machine>]` tables: compiler kind -> flags, per host machine."""
    if "target" not in compiler.data:
        return {}
    targets = compiler.table("target")
    return {machine: {kind: kinds.texts(kind) for kind in sorted(kinds.data)}
            for machine in sorted(targets.data) for kinds in [targets.table(machine)]}


def _named_rule(path: Path) -> _Rule:
    rule = _Rule.read(path)
    if rule.text("name") != path.stem:
        raise BuildRuleError(f"{path}: 'name' must equal the file name {path.stem!r}")
    return rule


@functools.cache
def _platform_names(rules: Path) -> tuple[str, ...]:
    files = sorted((rules / "platforms").glob("*.toml"))
    if not files:
        raise BuildRuleError(
            f"no platform definitions in {rules / 'platforms'}; "
            f"point {BUILD_RULES_ENV} at pypto's build_rules/ directory"
        )
    kinds = {f.stem: _named_rule(f).text("kind", KINDS) for f in files}
    # Those that run here first: simulators, then CPU models, then devices.
    return tuple(sorted(kinds, key=lambda name: (_KIND_ORDER[kinds[name]], name)))


@functools.cache
def _load_backend(rules: Path, name: str) -> Backend:
    rule = _named_rule(rules / "backends" / f"{name}.toml")
    capacities = rule.table("capacities", SPACES)
    casts = rule.table("native_casts")
    cores = rule.table("cores", CORE_TYPES)
    arch = rule.table("device_arch", CORE_TYPES)
    moves = rule.table("tile_moves")
    inserts = rule.table("tile_inserts")
    return Backend(
        name=name,
        capacities={space: capacities.count(space) if space in OPTIONAL_SPACES
                    else capacities.positive_int(space) for space in SPACES},
        native_casts={src: casts.texts(src) for src in casts.data},
        atomic_add_dtypes=rule.texts("atomic_add_dtypes"),
        innermost_hint_bytes=rule.positive_int("innermost_hint_bytes"),
        cube_cores=cores.positive_int("cube"),
        vector_cores=cores.positive_int("vector"),
        device_arch={core: arch.text(core) for core in CORE_TYPES},
        tile_moves={src: moves.texts(src) for src in moves.data},
        tile_inserts={src: inserts.texts(src) for src in inserts.data},
        missing_instructions=rule.texts("missing_instructions", ()),
        gm_cache_line=rule.positive_int("gm_cache_line"),
    )


@functools.cache
def _load_platform(rules: Path, name: str) -> Platform:
    rule = _named_rule(rules / "platforms" / f"{name}.toml")
    compiler = rule.table("compiler")
    return Platform(
        name=name,
        backend=_load_backend(rules, rule.text("backend")),
        kind=rule.text("kind", KINDS),
        cpu_model_arch=rule.text("cpu_model_arch", ("A2A3", "A5"), default="")
        if rule.text("kind", KINDS) == "cpu_model" else "",
        compiler=CompilerSettings(
            cxx=compiler.text("cxx"),
            env=compiler.texts("env", ()),
            home_env=compiler.texts("home_env", ()),
            home_relpaths=compiler.texts("home_relpaths", ()),
            install_hint=compiler.text("install_hint"),
            output_suffix=compiler.text("output_suffix", (".so", ".o")),
            flags=compiler.texts("flags"),
            kernel_flags=compiler.texts("kernel_flags", ()),
            orchestration_flags=compiler.texts("orchestration_flags", ()),
            path_candidates=compiler.texts("path_candidates", ()),
            min_versions=compiler.versions("min_versions"),
            python_module=compiler.text("python_module", default=""),
            python_module_args=compiler.texts("python_module_args", ()),
            link_flags=compiler.texts("link_flags", ()),
            precompiled_headers=compiler.texts("precompiled_headers", ()),
            targets=_targets(compiler),
        ),
    )


PLATFORM_NAMES: tuple[str, ...] = platform_names()
