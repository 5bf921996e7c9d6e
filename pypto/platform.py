"""Platforms and backends: the hardware facts and toolchains of `build_rules/`, as objects.

A *backend* is an NPU generation (`Ascend910B`, `Ascend950`): capacities, cast table,
atomic dtypes, core counts.  A *platform* is what a user names (`a2a3sim`, `a5`, ...): a
backend plus how generated C++ is compiled for it.  This module imports only the standard
library (and `pypto.resources`, which finds `build_rules/`) because `pypto.runtime` uses
it to read platforms.
"""

from __future__ import annotations

import functools
import os
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.resources import BUILD_RULES_ENV, build_rules_dir

PLATFORM_ENV = "PYPTO_PLATFORM"
DEFAULT_PLATFORM = "a2a3sim"
SPACES = ("Vec", "Mat", "Left", "Right", "Acc")
CORE_TYPES = ("vector", "cube")
KINDS = ("sim", "device")


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
    cube_cores: int
    vector_cores: int
    device_arch: dict[str, str]  # core type -> AI Core ISA name for the device compiler
    tile_moves: dict[str, tuple[str, ...]]  # on-chip buffer -> buffers pl.move can copy it to

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
    flags: tuple[str, ...]  # every compile
    kernel_flags: tuple[str, ...]  # InCore kernels; "{arch}" is the backend's device_arch
    orchestration_flags: tuple[str, ...]


@dataclass(frozen=True)
class Platform:
    """A build target users name: a backend plus its compiler (`build_rules/platforms/`)."""

    name: str
    backend: Backend
    kind: str  # "sim" | "device"
    compiler: CompilerSettings

    @property
    def is_sim(self) -> bool:
        """True for the host simulator platforms, which build and run here."""
        return self.kind == "sim"

    # Nested dicts would make the generated hash raise; the name identifies a platform.
    def __hash__(self) -> int:
        return hash(self.name)


def platform_names() -> tuple[str, ...]:
    """Names of the platforms defined under build_rules/, simulators first."""
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


def get_backend(name: str) -> Backend:
    """The backend called `name` (e.g. "Ascend910B"); unknown names raise ValueError."""
    rules = build_rules_dir()
    known = sorted(p.stem for p in (rules / "backends").glob("*.toml"))
    if name not in known:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(known)}")
    return _load_backend(rules, name)


def locate_compiler(platform: Platform) -> Path:
    """The compiler of `platform`'s `[compiler]` table, first match wins: the program named
    by a set variable in `env`, an executable `<home_env root>/<home_relpath>`, `cxx` on
    PATH.  Raises CompilerNotFoundError when none is found or a set `env` variable is wrong."""
    settings = platform.compiler
    looked: list[str] = []
    for var in settings.env:
        value = os.environ.get(var)
        if not value:
            looked.append(f"${var} (unset)")
            continue
        found = shutil.which(value)
        if found is None:
            # An explicit setting that is wrong must not silently fall back to another compiler.
            raise CompilerNotFoundError(
                f"{var}={value!r} names no executable program; point it at the compiler "
                f"for platform {platform.name!r} or unset it"
            )
        return Path(found)
    for var in settings.home_env:
        root = os.environ.get(var)
        if not root:
            looked.append(f"${var}/... ({var} unset)")
            continue
        for relpath in settings.home_relpaths:
            candidate = Path(root) / relpath
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
            looked.append(str(candidate))
    found = shutil.which(settings.cxx)
    if found is not None:
        return Path(found)
    looked.append(f"{settings.cxx!r} on PATH")
    raise CompilerNotFoundError(_missing_compiler_message(platform, looked))


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
    sims = [
        name
        for name in platform_names()
        if get_platform(name).is_sim and get_platform(name).backend.name == platform.backend.name
    ]
    if not platform.is_sim and sims:
        message += f" Or use platform={sims[0]!r} to run on the host simulator."
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

    def text(self, key: str, choices: tuple[str, ...] = ()) -> str:
        value = self._value(key, None)
        if not isinstance(value, str) or (choices and value not in choices):
            raise self._fail(key, " or ".join(map(repr, choices)) or "a string", value)
        return value

    def positive_int(self, key: str) -> int:
        value = self._value(key, None)
        # bool is an int subclass, but `true` is never a valid count or size.
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self._fail(key, "a positive integer", value)
        return value

    def texts(self, key: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        value = self._value(key, default)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise self._fail(key, "a list of strings", value)
        return tuple(value)

    def table(self, key: str, keys: tuple[str, ...] = ()) -> _Rule:
        value = self._value(key, None)
        if not isinstance(value, dict):
            raise self._fail(key, "a table", value)
        missing = [k for k in keys if k not in value]
        if missing:
            raise BuildRuleError(f"{self.path}: table '{self.prefix}{key}' lacks {missing}")
        return _Rule(self.path, value, f"{self.prefix}{key}.")


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
    return tuple(sorted(kinds, key=lambda name: (kinds[name] != "sim", name)))


@functools.cache
def _load_backend(rules: Path, name: str) -> Backend:
    rule = _named_rule(rules / "backends" / f"{name}.toml")
    capacities = rule.table("capacities", SPACES)
    casts = rule.table("native_casts")
    cores = rule.table("cores", CORE_TYPES)
    arch = rule.table("device_arch", CORE_TYPES)
    moves = rule.table("tile_moves")
    return Backend(
        name=name,
        capacities={space: capacities.positive_int(space) for space in SPACES},
        native_casts={src: casts.texts(src) for src in casts.data},
        atomic_add_dtypes=rule.texts("atomic_add_dtypes"),
        innermost_hint_bytes=rule.positive_int("innermost_hint_bytes"),
        cube_cores=cores.positive_int("cube"),
        vector_cores=cores.positive_int("vector"),
        device_arch={core: arch.text(core) for core in CORE_TYPES},
        tile_moves={src: moves.texts(src) for src in moves.data},
    )


@functools.cache
def _load_platform(rules: Path, name: str) -> Platform:
    rule = _named_rule(rules / "platforms" / f"{name}.toml")
    compiler = rule.table("compiler")
    return Platform(
        name=name,
        backend=_load_backend(rules, rule.text("backend")),
        kind=rule.text("kind", KINDS),
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
        ),
    )


PLATFORM_NAMES: tuple[str, ...] = platform_names()
