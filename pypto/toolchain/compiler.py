"""Finding a platform's C++ compiler and running it on generated sources."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pypto.platform import CORE_TYPES, CompilerNotFoundError, Platform, locate_compiler


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

    @classmethod
    def for_platform(cls, platform: Platform) -> Toolchain:
        """Locates the platform's compiler; raises ToolchainNotFoundError at once if missing."""
        try:
            compiler = locate_compiler(platform)
        except CompilerNotFoundError as e:
            raise ToolchainNotFoundError(str(e)) from None
        return cls(platform, compiler)

    @property
    def binary_suffix(self) -> str:
        """File suffix of what `compile_shared` produces: ".so" on sim, ".o" on device."""
        return self.platform.compiler.output_suffix

    def flags(self, core_type: str | None = None) -> tuple[str, ...]:
        """Flags for a kernel of `core_type` ("vector" / "cube"), or for orchestration (None).
        With PYPTO_SIM_DEBUG=1, sim kernels are built with bounds checks (PTO_SIM_BOUNDS_CHECK:
        a load or store outside its tensor is skipped and reported with the kernel's name)."""
        settings = self.platform.compiler
        if core_type is None:
            return settings.flags + settings.orchestration_flags
        arch = self.platform.backend.device_arch.get(core_type)
        if arch is None:
            raise ValueError(f"unknown core type {core_type!r}; expected one of {CORE_TYPES}")
        debug = ("-DPTO_SIM_BOUNDS_CHECK=1",) if self.platform.is_sim and sim_debug() else ()
        return settings.flags + tuple(f.replace("{arch}", arch) for f in settings.kernel_flags) \
            + debug

    def version(self) -> str:
        """First line of the compiler's `--version` (asked once per compiler per process)."""
        return _version_line(str(self.compiler))

    def flags_digest(self) -> str:
        """sha256 over every flag set this toolchain uses (orchestration and each core type)."""
        return hashlib.sha256(self._flags_text().encode()).hexdigest()

    def identity(self) -> str:
        """The compiler's version line plus all its flags: what a content key must cover."""
        return f"{self.version()}\n{self._flags_text()}"

    def compile_shared(
        self,
        cpp_path: Path,
        so_path: Path,
        include_dirs: Iterable[Path],
        core_type: str | None = None,
    ) -> None:
        """Compiles `cpp_path` into the platform's binary at `so_path` (a shared object on
        sim, an object file on device); `core_type` is the kernel's, None for orchestration.
        Raises CompileError with the compiler's stderr when it fails."""
        cpp_path, so_path = Path(cpp_path), Path(so_path)
        cwd = cpp_path.parent
        command = [str(self.compiler), *self.flags(core_type)]
        for include in include_dirs:
            include = Path(include).resolve()
            # Mapping the directory keeps its absolute path out of __FILE__ in the binary.
            command += [f"-I{include}", f"-ffile-prefix-map={include}={include.name}"]
        # Relative source and output names keep the build directory out of the binary, so
        # the same source compiles to the same bytes wherever it is built.
        command += [cpp_path.name, "-o", os.path.relpath(so_path, cwd)]
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
            raise CompileError(cpp_path, command, proc.returncode, proc.stderr)
        if not so_path.is_file():
            raise CompileError(cpp_path, command, 0, f"the compiler wrote no {so_path}")

    def _flags_text(self) -> str:
        roles = {"orchestration": self.flags(None)}
        roles.update({core: self.flags(core) for core in CORE_TYPES})
        return json.dumps(roles, sort_keys=True)


def sim_debug() -> bool:
    """Is PYPTO_SIM_DEBUG set to something other than empty or 0?"""
    return os.environ.get("PYPTO_SIM_DEBUG", "") not in ("", "0")


@functools.cache
def _version_line(compiler: str) -> str:
    try:
        proc = subprocess.run(
            [compiler, "--version"],
            check=False,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            # A fixed locale keeps the line, and so every content key, stable across shells.
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolchainNotFoundError(f"could not run '{compiler} --version': {e}") from e
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ToolchainNotFoundError(
            f"'{compiler} --version' failed (exit status {proc.returncode}): {proc.stderr.strip()}"
        )
    return lines[0].strip()
