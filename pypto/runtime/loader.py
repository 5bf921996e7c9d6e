"""Loading an artifact directory: verify everything, then map the binaries."""

from __future__ import annotations

import ctypes
import fcntl
import functools
import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pypto.filesystem import read_recorded
from pypto.ir.errors import api_boundary
from pypto.platform import PLATFORM_NAMES, Backend, get_platform
from pypto.records import MANIFEST_NAME
from pypto.runtime.abi import PtoKernelFn, PtoOrchestrateFn
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import ArtifactError, DeviceUnavailableError, KernelError
from pypto.runtime.manifest import ON_CHIP_SPACES, Manifest

if TYPE_CHECKING:
    from pypto.runtime.native import NativeSchedule
    from pypto.runtime.scheduler import Scheduler


@api_boundary
def load_artifact(path: str | os.PathLike, *, platform: str | None = None) -> LoadedProgram:
    """Loads the artifact at `path` for running on this host.

    Before any binary is mapped it checks the manifest's schema major version, the
    platform (when `platform` is given), the ABI version and the sha256 of every kernel
    and of the orchestration binary; each refusal is an `ArtifactError` naming what was
    expected and what was found.  An artifact built for an NPU platform raises
    `DeviceUnavailableError`: this host has no NPU runtime.
    """
    artifact_dir = Path(path)
    manifest, resolved = _verified(artifact_dir, platform)
    if not get_platform(manifest.platform).runs_here:
        here = [n for n in PLATFORM_NAMES if get_platform(n).runs_here]
        raise DeviceUnavailableError(
            f"{artifact_dir} is built for the device platform {manifest.platform!r} "
            f"({manifest.backend}) and no NPU runtime is available on this host; "
            f"build for a simulator or CPU-model platform ({', '.join(here)}) to run it here"
        )

    libraries = [_mapped(binary) for binary in resolved]
    paths = [binary.path for binary in resolved]
    kernels = [
        _symbol(library, spec.name, PtoKernelFn, path)
        # The last binary is the orchestration's.
        for library, spec, path in zip(libraries[:-1], manifest.kernels, paths[:-1], strict=True)
    ]
    orchestrate = _symbol(
        libraries[-1], manifest.orchestration_entry, PtoOrchestrateFn, paths[-1]
    )
    return LoadedProgram(manifest, kernels, orchestrate, libraries)


def verify_artifact(path: str | os.PathLike, *, platform: str | None = None) -> Manifest:
    """Runs every check `load_artifact` runs (schema, platform, ABI, the platform's limits,
    each binary's sha256) and returns the manifest, mapping nothing: usable for device
    artifacts too."""
    return _verified(Path(path), platform)[0]


def _verified(artifact_dir: Path, platform: str | None) -> tuple[Manifest, list[_Binary]]:
    """The manifest and its binaries (kernels in order, then the orchestration), read and
    checked."""
    if platform is not None:
        # An unknown name is the caller's mistake (ValueError), not the artifact's.
        get_platform(platform)
    manifest = Manifest.read(artifact_dir, platform=platform)
    try:
        target = get_platform(manifest.platform)
    except ValueError as exc:
        raise ArtifactError(f"{manifest.path}: {exc}") from None
    _check_limits(manifest, target.backend)
    binaries = [(k.file, k.sha256) for k in manifest.kernels]
    binaries.append((manifest.orchestration_file, manifest.orchestration_sha256))
    return manifest, [_verified_binary(artifact_dir, file, sha256) for file, sha256 in binaries]


def _check_limits(manifest: Manifest, backend: Backend) -> None:
    """The simulated cores are sized from the manifest, and kernels address their on-chip
    buffers without checks: capacities and the core count must be the platform's own,
    and no kernel's high-water mark may exceed a capacity."""
    expected = {space: backend.capacities[space] for space in ON_CHIP_SPACES}
    if manifest.capacities != expected or manifest.cores != backend.vector_cores:
        raise ArtifactError(
            f"{manifest.path}: the on-chip capacities and core count ({manifest.capacities}, "
            f"{manifest.cores} cores) are not those of {manifest.platform!r} ({expected}, "
            f"{backend.vector_cores} cores); the manifest was altered or built from other "
            "build rules, rebuild the artifact"
        )
    for kernel in manifest.kernels:
        if kernel.on_chip is None:  # a kernel that records no marks has none to check
            continue
        marks = dict(zip(ON_CHIP_SPACES, kernel.on_chip, strict=True))
        over = {space: mark for space, mark in marks.items() if mark > expected[space]}
        if over:
            raise ArtifactError(
                f"{manifest.path}: kernel {kernel.name!r} uses {over} bytes of on-chip memory, "
                f"more than {manifest.platform!r} has ({expected}); rebuild the artifact"
            )


class LoadedProgram:
    """A verified, mapped artifact, ready to run on this host (simulator or CPU model)."""

    def __init__(
        self,
        manifest: Manifest,
        kernels: Sequence[Any],
        orchestrate: Any,
        libraries: Sequence[ctypes.CDLL],
    ) -> None:
        self.manifest = manifest
        self.kernels = tuple(kernels)
        self.orchestrate = orchestrate
        # The CDLL handles own the mappings the function pointers point into.
        self._libraries = tuple(libraries)
        self.last_schedule: Scheduler | NativeSchedule | None = None
        """The scheduler of the most recent run (tasks, timings, edges), for DFX output."""
        # Sim kernels export a bounds-check fault record (pto/bounds.hpp).
        self._faults = [(spec, *record)
                        for spec, library in zip(manifest.kernels, libraries[:-1], strict=True)
                        if (record := _fault_record(library)) is not None]

    @property
    def platform(self) -> str:
        """The platform the artifact was built for."""
        return self.manifest.platform

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """Kernel names in manifest order (the order `submit` indexes)."""
        return tuple(k.name for k in self.manifest.kernels)

    @api_boundary
    def run(self, args: Sequence[Any], config: RunConfig | None = None) -> Any:
        """Runs the entry on `args` (manifest params order) and returns its outputs.

        Tensor params take torch tensors of the manifest's shape and dtype, scalars take
        Python numbers.  Out/InOut results are copied back into the caller's tensors;
        the return value is the output tensor, or a tuple when there are several.
        """
        if config is not None:
            if config.distributed_config is not None:
                config.check_single_device()
            config.warn_harness_arguments()
        try:
            result = _execution().run(self, config if config is not None else RunConfig(), args)
        except BaseException:
            self.check_bounds_faults()  # an out-of-bounds access explains a failed run best
            raise
        self.check_bounds_faults()
        return result

    def check_bounds_faults(self) -> None:
        """Raises KernelError naming each kernel whose bounds check fired in the last run
        (sim kernels), whose cross-core pipe stopped (a deadlock, a ring left holding
        tiles) or whose cross-block barrier stopped (a deadlock, a race, the cache protocol
        broken), and clears the records; else does nothing."""
        found = []
        pipe = False  # a group's cross-core pipe stopped (pto/pipe.hpp), not an access
        barrier = False  # a gang's cross-block barrier stopped (pto/gang.hpp)
        for spec, count, message in self._faults:
            if count.value:
                text = message.value.decode()
                pipe = pipe or text.startswith("cross-core pipe")
                barrier = barrier or text.startswith("cross-block barrier")
                found.append(f"kernel {spec.name!r} ({spec.file}): {text}"
                             + (f" (and {count.value - 1} more)" if count.value > 1 else ""))
                count.value = 0
                message[0] = b"\0"
        if found and pipe:
            raise KernelError(
                "; ".join(found) + ". Every pl.tpush needs its pl.tpop in the peer function "
                "and every pop its pl.tfree, as many times; a ring of slot_num slots holds "
                "that many tiles pushed and not yet freed")
        if found and barrier:
            raise KernelError(
                "; ".join(found) + ". Every block of the launch must reach each "
                "pl.system.syncall, as many times; a block reading what another wrote before the "
                "barrier needs the writer's pl.system.cacheinvalid() and pl.system.fence() before "
                "it and its own pl.system.cacheinvalid() after it (docs/language.md)")
        if found:
            raise KernelError(
                "; ".join(found) + ". The simulator skipped the access (on a device it "
                "would read or corrupt memory that is not the tensor's). Check the offsets of "
                "the kernel's pl.load / pl.store against the tensor's shape (a slice reaching "
                "past its tensor's end is cut back to the edge)"
            )

    def __repr__(self) -> str:
        return (
            f"LoadedProgram({self.manifest.entry!r}, platform={self.platform!r}, "
            f"kernels={list(self.kernel_names)})"
        )


class _Binary(NamedTuple):
    """A binary of an artifact: its path, and the bytes read from it once whose sha256
    was checked (the bytes `_mapped` maps, never the file again)."""

    path: Path
    data: bytes
    sha256: str


def _verified_binary(artifact_dir: Path, file: str, expected: str) -> _Binary:
    """`file` of the artifact, read and checked against `expected`, its sha256."""
    path = (artifact_dir / file).resolve()
    if not path.is_relative_to(artifact_dir.resolve()):
        raise ArtifactError(f"{artifact_dir}: binary {file!r} lies outside the artifact directory")
    data = read_recorded(path, expected, ArtifactError, recorded_in=MANIFEST_NAME,
                         remedy="the binary changed after the build, rebuild the artifact")
    return _Binary(path, data, expected.lower())


def _fault_record(library: ctypes.CDLL) -> tuple[Any, Any] | None:
    """The (count, message) bounds-check record of a sim kernel, else None."""
    try:
        return (ctypes.c_int.in_dll(library, "pto_sim_fault_count"),
                (ctypes.c_char * 256).in_dll(library, "pto_sim_fault"))
    except ValueError:
        return None


def _mapped(binary: _Binary) -> ctypes.CDLL:
    """The verified bytes of `binary`, mapped with their symbols kept private (two
    artifacts' kernels never clash).  Bytes mapped before in this process (the same
    sha256) are served from that mapping, as the dynamic loader serves a path it has
    mapped before."""
    with _MAPPED_LOCK:
        library = _MAPPED.get(binary.sha256)
        if library is None:
            library = _MAPPED[binary.sha256] = _map_copy(binary)
    return library


_MAPPED: dict[str, ctypes.CDLL] = {}  # by sha256; ctypes never unmaps a library
_MAPPED_LOCK = threading.Lock()


def _map_copy(binary: _Binary) -> ctypes.CDLL:
    """Maps a sealed in-memory copy of `binary.data`: what runs is exactly what was
    hashed, whatever happens to the file on disk meanwhile.  The dynamic loader opens it
    through a symbolic link in a directory only this user can write (mkdtemp makes it
    0700), under a name no earlier load in this process used: the loader would return
    the library it mapped before under a name it has seen."""
    try:
        fd = os.memfd_create(f"pypto:{binary.path.name}",
                             os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            with open(fd, "wb", closefd=False) as f:
                f.write(binary.data)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
            private = tempfile.mkdtemp(prefix="pypto-load-")
            link = os.path.join(private, f"{next(_LOADS)}-{binary.path.name}")
            try:
                os.symlink(f"/proc/self/fd/{fd}", link)
                return ctypes.CDLL(link, mode=os.RTLD_LOCAL)
            finally:
                shutil.rmtree(private, ignore_errors=True)
        finally:
            os.close(fd)  # the mapping keeps the memory
    except OSError as exc:
        raise ArtifactError(f"{binary.path}: cannot be loaded: {exc}") from None


_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
_LOADS = itertools.count()  # link names: unique in this process, and in a forked child


def _symbol(library: ctypes.CDLL, name: str, prototype: Any, path: Path) -> Any:
    """The exported function `name` of `library`, typed by `prototype`."""
    try:
        return prototype((name, library))
    except AttributeError:
        raise ArtifactError(f"{path}: does not export the symbol {name!r}") from None


@functools.cache
def _execution():
    """`pypto.runtime.execution`, imported on the first run: torch costs about a second to
    import and only a run needs it (and an import statement per warm call costs a
    microsecond)."""
    from pypto.runtime import execution

    return execution
