"""Finding a platform's C++ compiler and running it on generated sources."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shlex
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pypto.filesystem import LockTimeout, atomic_output, atomic_write, lock_with_deadline
from pypto.platform import (
    CORE_TYPES,
    CompilerNotFoundError,
    Platform,
    compiler_family,
    compiler_version_line,
    default_cache_root,
    find_compiler,
)
from pypto.sim import INCLUDE_DIR
from pypto.toolchain.key import content_key, tree_digest
from pypto.toolchain.pto_isa import (
    PtoIsaNotFoundError,
    pto_isa_digest,
    pto_isa_include,
)

# C++23's <stdfloat> for pto-isa's CPU model where the C++ library has none (libc++): its
# std::bfloat16_t is what makes pto-isa's CPU backend compute BF16 as BF16 (the header says
# why; docs/device-code.md, "BF16 on the CPU model").  Only CPU-model compiles see it.
CPU_MODEL_INCLUDE_DIR = Path(__file__).resolve().parent / "cpu_model"


PCH_LOCK_TIMEOUT_S = 600.0
"""How long a build waits for another process building the same precompiled header (one
takes seconds; a lock held longer is a build that hangs)."""


class ToolchainNotFoundError(RuntimeError):
    """The compiler a platform needs is not installed, or not where configuration points."""


class CompileError(RuntimeError):
    """The compiler rejected a generated source; carries its stderr and the source path."""

    def __init__(self, source: Path, command: Iterable[str], returncode: int, stderr: str):
        self.source = Path(source)
        self.command = tuple(command)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(
            f"compiling {self.source} failed (exit status {returncode}):\n{stderr.rstrip()}\n"
            f"command: {shlex.join(self.command)}"
        )


@dataclass(frozen=True)
class Toolchain:
    """A platform's resolved compiler plus the flags its build rule gives it."""

    platform: Platform
    compiler: Path
    # Arguments between the program and the flags: `zig c++ ...` runs zig's Clang.
    launcher_args: tuple[str, ...] = ()

    @classmethod
    def for_platform(cls, platform: Platform) -> Toolchain:
        """Locates the platform's compiler, and for device code the pto-isa headers; raises
        ToolchainNotFoundError at once if either is missing."""
        try:
            found = find_compiler(platform)
        except CompilerNotFoundError as e:
            raise ToolchainNotFoundError(str(e)) from None
        toolchain = cls(platform, found.path, found.args)
        toolchain.include_dirs()  # a missing pto-isa stops the build here, not per kernel
        toolchain.target_flags()  # so does a host machine the rule fixes no target for
        return toolchain

    @property
    def command(self) -> tuple[str, ...]:
        """The program and its launcher arguments: what every compile starts with."""
        return (str(self.compiler), *self.launcher_args)

    def include_dirs(self) -> tuple[Path, ...]:
        """Header roots of every compile: the simulator's ISA model on sim platforms; the
        pto-isa headers (and pypto's artifact ABI, pto/abi.h) for device code, and on the
        CPU-model platforms pypto's <stdfloat> (CPU_MODEL_INCLUDE_DIR)."""
        if not self.platform.device_code:
            return (INCLUDE_DIR,)
        try:
            roots = (pto_isa_include(), INCLUDE_DIR)
        except PtoIsaNotFoundError as e:
            raise ToolchainNotFoundError(str(e)) from None
        return (*roots, CPU_MODEL_INCLUDE_DIR) if self.platform.kind == "cpu_model" else roots

    def target_flags(self) -> tuple[str, ...]:
        """The flags that fix the CPU every compile and link targets (the rule's
        `[compiler.target.<machine>]`, for this compiler's kind), so that an object is the
        same bytes on every host of the machine whatever its CPU: zig's Clang would
        otherwise compile for the host's CPU and glibc.  Empty where the rule fixes none;
        a host machine or compiler kind it has no row for is an error naming the rule."""
        settings = self.platform.compiler
        if not settings.targets:
            return ()
        machine = os.uname().machine
        kind = settings.python_module if settings.python_module and self.launcher_args \
            == settings.python_module_args else (compiler_family(self.version()) or ("",))[0]
        flags = settings.targets.get(machine, {}).get(kind)
        if flags is None:
            raise ToolchainNotFoundError(
                f"platform {self.platform.name!r} fixes no target for a {kind or 'unknown'} "
                f"compiler ({self.compiler}) on a {machine} host: add one to its build rule's "
                f"[compiler.target.{machine}] table (build_rules/platforms/"
                f"{self.platform.name}.toml)")
        return flags

    @property
    def binary_suffix(self) -> str:
        """File suffix of a binary: ".so" on sim, ".o" on device."""
        return self.platform.compiler.output_suffix

    def flags(self, core_type: str | None = None) -> tuple[str, ...]:
        """Flags for a kernel of `core_type` ("vector" / "cube"), or for orchestration (None).
        With PYPTO_SIM_DEBUG=1, sim kernels are built with bounds checks (PTO_SIM_BOUNDS_CHECK:
        a load or store outside its tensor is skipped and reported with the kernel's name)."""
        settings = self.platform.compiler
        if core_type is None:
            return settings.flags + self.target_flags() + settings.orchestration_flags
        arch = self.platform.backend.device_arch.get(core_type)
        if arch is None:
            raise ValueError(f"unknown core type {core_type!r}; expected one of {CORE_TYPES}")
        debug = ("-DPTO_SIM_BOUNDS_CHECK=1",) if self.platform.is_sim and sim_debug() else ()
        return settings.flags + self.target_flags() \
            + tuple(f.replace("{arch}", arch) for f in settings.kernel_flags) + debug

    def version(self) -> str:
        """First line of the compiler's `--version` (asked once per compiler per process)."""
        try:
            return compiler_version_line(self.command)
        except CompilerNotFoundError as e:
            raise ToolchainNotFoundError(str(e)) from None

    def flags_digest(self) -> str:
        """sha256 over every flag set this toolchain uses (orchestration and each core type)."""
        return hashlib.sha256(self._flags_text().encode()).hexdigest()

    def identity(self) -> str:
        """The compiler's version line plus all its flags, and for device code the digest
        of the pto-isa headers: what a content key must cover."""
        identity = f"{self.version()}\n{self._flags_text()}"
        if self.platform.device_code:
            self.include_dirs()  # raises ToolchainNotFoundError when pto-isa is missing
            identity += f"\npto-isa {pto_isa_digest()}"
        return identity

    def steps(
        self,
        sources: Sequence[str],
        binary: str,
        include_dirs: Iterable[Path],
        core_type: str | None = None,
    ) -> tuple[Step, ...]:
        """The commands that build one binary from `sources` (paths relative to the
        artifact directory, POSIX): a compile per source into an object beside it, then,
        where the platform's rule has `link_flags`, a link of the objects into `binary`;
        without them a single source compiles straight into `binary`.  `core_type` is the
        kernel's, None for orchestration.  Each command runs in its output's directory with
        relative names, so no directory enters the binary (the same source compiles to the
        same bytes wherever it is built, by whichever host).  A kernel's compile loads the
        platform's precompiled header where it has one (`precompiled_header`), which the
        step carries so that whoever runs it builds the header first."""
        link_flags = self.platform.compiler.link_flags
        if not link_flags and len(sources) != 1:
            raise ValueError(f"platform {self.platform.name!r} has no link_flags: a binary is "
                             f"one compiled source, not {len(sources)}")
        includes = [Path(include).resolve() for include in include_dirs]
        flags = self._compile_command(includes, core_type)
        pch = self.precompiled_header(includes, core_type)
        if pch is not None:
            flags += ["-include-pch", str(pch.path)]
        compiles = []
        for source in sources:
            output = str(PurePosixPath(source).with_suffix(".o")) if link_flags else binary
            compiles.append(_step("compile", flags, [source], output, pch))
        if not link_flags:
            return tuple(compiles)
        link = _step("link", [*self.command, *self.target_flags(), *link_flags],
                     [c.output for c in compiles], binary)
        return (*compiles, link)

    def precompiled_header(self, include_dirs: Iterable[Path],
                           core_type: str | None) -> PrecompiledHeader | None:
        """The platform's `precompiled_headers` (its build rule) precompiled for the kernels
        of `core_type` with exactly their compile command, or None: for orchestration,
        where the platform lists none, or where the compiler is not Clang (GCC finds its
        .gch files another way).  It lives in `<cache root>/pch/<key>/`, built once
        (PrecompiledHeader.ensure) and shared by every artifact; the key covers the
        compiler's version line, the whole command and the digest of every include
        directory, so another compiler, flag or header builds another."""
        headers = self.platform.compiler.precompiled_headers
        if not headers or core_type is None \
                or (compiler_family(self.version()) or ("",))[0] != "clang":
            return None
        includes = tuple(Path(i).resolve() for i in include_dirs)
        prelude = "".join(f"#include <{h}>\n" for h in headers)
        # Without -c (a precompiled header is no object: zig's driver would hand it to the
        # linker) and without the headers' timestamps (Clang would refuse it after a
        # checkout that only touched them): their contents are in the key.
        compile_command = [f for f in self._compile_command(includes, core_type) if f != "-c"]
        command = (*compile_command, "-Xclang", "-fno-pch-timestamp", "-x", "c++-header",
                   PrecompiledHeader.PRELUDE)
        key = content_key([
            ("schema", PrecompiledHeader.SCHEMA),
            ("compiler", self.version()),
            ("command", json.dumps(command)),
            ("prelude", prelude),
            *((f"include {i}", _headers_digest(i)) for i in includes),
        ])
        return PrecompiledHeader(str(default_cache_root() / "pch" / key), prelude, command)

    def _compile_command(self, include_dirs: Iterable[Path], core_type: str | None) -> list[str]:
        """The compiler, its flags and the include directories: every compile of a source."""
        command = [*self.command, *self.flags(core_type)]
        for include in include_dirs:
            include = Path(include).resolve()
            # Mapping the directory keeps its absolute path out of __FILE__ in the binary.
            command += [f"-I{include}", f"-ffile-prefix-map={include}={include.name}"]
        return command

    def _flags_text(self) -> str:
        roles = {"orchestration": self.flags(None),
                 "link": self.target_flags() + self.platform.compiler.link_flags}
        roles.update({core: self.flags(core) for core in CORE_TYPES})
        return json.dumps(roles, sort_keys=True)


def _headers_digest(include: Path) -> str:
    """Digest of an include directory's files: pto-isa's headers (computed once per root
    and process), or every file of pypto's own (few, small; <stdfloat> has no suffix)."""
    if include == pto_isa_include().resolve():
        return pto_isa_digest()
    return tree_digest(include)


@dataclass(frozen=True)
class PrecompiledHeader:
    """A precompiled prelude of the headers every kernel of a platform includes first
    (`Toolchain.precompiled_header`): `command`, run in `directory`, compiles
    `prelude.hpp` (the text `prelude`) into `prelude.pch`, which kernel compiles load with
    `-include-pch`.  The objects are the same bytes as without it; the compile takes a
    fraction of the time.  It is a build step of its own, shared by every artifact that
    uses it; `ensure` runs it once."""

    directory: str  # absolute: <cache root>/pch/<key>
    prelude: str
    command: tuple[str, ...]  # without `-o`: ensure writes a temporary name, then renames

    PRELUDE = "prelude.hpp"
    SCHEMA = "1"  # bumped when what a precompiled header holds changes unseen by its key

    @property
    def path(self) -> Path:
        """The precompiled header file."""
        return Path(self.directory) / "prelude.pch"

    def ensure(self) -> Path:
        """`path`, built unless it is there.  One process (or thread) builds it under a
        lock, into a temporary name renamed into place, so a reader sees the whole file
        or none and a failed build leaves nothing behind.  Raises CompileError with the
        compiler's stderr when the prelude does not compile."""
        path = self.path
        if path.is_file():
            return path
        directory = Path(self.directory)
        directory.mkdir(parents=True, exist_ok=True)
        try:
            lock = lock_with_deadline(directory / ".lock", PCH_LOCK_TIMEOUT_S)
        except LockTimeout as exc:
            raise CompileError(directory / self.PRELUDE, self.command, 0,
                               f"{exc}: another build of this precompiled header has not "
                               "finished (find it with `fuser -v "
                               f"{directory / '.lock'}`)") from None
        try:
            if path.is_file():
                return path
            atomic_write(directory / self.PRELUDE, self.prelude)
            with atomic_output(path) as partial:
                _run([*self.command, "-o", partial.name], directory, directory / self.PRELUDE,
                     partial)
        finally:
            os.close(lock)
        return path

    def to_json(self) -> dict:
        """The header as plain JSON data (`from_json` reads it back)."""
        return {"directory": self.directory, "prelude": self.prelude,
                "command": list(self.command)}

    @classmethod
    def from_json(cls, data: dict) -> PrecompiledHeader:
        """The header `to_json` wrote."""
        return cls(data["directory"], data["prelude"], tuple(data["command"]))


@dataclass(frozen=True)
class Step:
    """One command of an artifact's build: a `compile` of one source into one object, or
    the `link` of a binary's objects.  Every path is relative to the artifact directory
    (POSIX); `command` names them relative to `cwd`, where it runs.  It holds no launcher:
    `argv` puts one in front of a compile."""

    kind: str  # "compile" | "link"
    command: tuple[str, ...]
    cwd: str
    inputs: tuple[str, ...]
    output: str
    # The precompiled header a compile loads (`-include-pch`): built before it runs.
    pch: PrecompiledHeader | None = None

    def argv(self, launcher: Sequence[str] = ()) -> list[str]:
        """The command to run, with `launcher` (e.g. ("ccache",) or ("distcc",)) in front
        of a compile.  A link runs as it is: the launchers distribute and cache compiles."""
        return [*launcher, *self.command] if self.kind == "compile" else list(self.command)

    def to_json(self) -> dict:
        """The step as plain JSON data (`from_json` reads it back)."""
        data = {"kind": self.kind, "command": list(self.command), "cwd": self.cwd,
                "inputs": list(self.inputs), "output": self.output}
        if self.pch is not None:
            data["pch"] = self.pch.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict) -> Step:
        """The step `to_json` wrote."""
        pch = data.get("pch")
        return cls(data["kind"], tuple(data["command"]), data["cwd"], tuple(data["inputs"]),
                   data["output"], PrecompiledHeader.from_json(pch) if pch else None)


def _step(kind: str, prefix: Sequence[str], inputs: Sequence[str], output: str,
          pch: PrecompiledHeader | None = None) -> Step:
    cwd = str(PurePosixPath(output).parent)
    # Relative source and output names keep the build directory out of the binary.
    names = [posixpath.relpath(path, cwd) for path in (*inputs, output)]
    return Step(kind, (*prefix, *names[:-1], "-o", names[-1]), cwd, tuple(inputs), output, pch)


def run_step(step: Step, root: Path, launcher: Sequence[str] = ()) -> None:
    """Runs `step` of the artifact directory `root`, with `launcher` in front of a compile
    (after building the precompiled header it loads, if it is not built yet).  Raises
    CompileError with the compiler's stderr when it fails or writes no output."""
    root = Path(root)
    if step.pch is not None:
        step.pch.ensure()
    _run(step.argv(launcher), root / step.cwd, root / step.inputs[0], root / step.output)


def _run(command: Sequence[str], cwd: Path, source: Path, output: Path) -> None:
    proc = subprocess.run(
        command,
        check=False,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
    )
    if proc.returncode != 0:
        raise CompileError(source, command, proc.returncode, proc.stderr)
    if not output.is_file():
        raise CompileError(source, command, 0, f"the compiler wrote no {output}")


LAUNCHER_ENV = "PYPTO_COMPILER_LAUNCHER"


def compiler_launcher() -> tuple[str, ...]:
    """The launcher `$PYPTO_COMPILER_LAUNCHER` names for compiles (`ccache`, `distcc`,
    `icecc`, or a command line such as `ccache distcc`), empty when unset.  It changes
    where and whether a compile runs, never the object: it is not part of any key."""
    return tuple(shlex.split(os.environ.get(LAUNCHER_ENV, "")))


_SIM_DEBUG_VALUES = {"": False, "0": False, "false": False, "no": False, "off": False,
                     "1": True, "true": True, "yes": True, "on": True}


def sim_debug() -> bool:
    """Whether PYPTO_SIM_DEBUG asks for the sim debug build: 1/true/yes/on does, unset,
    empty and 0/false/no/off do not (any case); anything else is a ValueError."""
    value = os.environ.get("PYPTO_SIM_DEBUG", "")
    try:
        return _SIM_DEBUG_VALUES[value.strip().lower()]
    except KeyError:
        raise ValueError(f"PYPTO_SIM_DEBUG={value!r} is not a switch: set it to 1 (bounds-checked "
                         "sim kernels) or 0, or unset it") from None
