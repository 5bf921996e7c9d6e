"""The generated sources of one program: what codegen hands to the toolchain."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParamSpec:
    """One entry parameter (or kernel parameter) as recorded in the manifest."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: str  # DataType name, e.g. "FP16"
    direction: str = "in"  # "in" | "out" | "inout"; scalars are always "in"
    shape: tuple[int, ...] = ()
    # What the user declared (entry parameters only; None: not recorded).  The runtime
    # gives a parameter declared "out" the device's poison even where `direction` says
    # the program reads it (DeriveCallDirections widened it to "inout").
    declared: str | None = None

    def to_json(self) -> dict:
        out = {
            "name": self.name,
            "kind": self.kind,
            "dtype": self.dtype,
            "direction": self.direction,
            "shape": list(self.shape),
        }
        if self.declared is not None:
            out["declared_direction"] = self.declared
        return out


@dataclass(frozen=True)
class KernelSource:
    """C++ for one InCore kernel; the exported symbol is `name`."""

    name: str
    cpp: str
    core_type: str  # "vector" | "cube"
    signature: tuple[ParamSpec, ...]
    # On-chip high-water mark per memory space ("Vec", "Mat", ...): the end of the highest
    # tile AllocateMemoryAddr placed there, in bytes (0: the space is unused).  The
    # runtime poisons [0, mark) of each core before a run instead of whole buffers.
    on_chip: dict[str, int] = field(default_factory=dict)
    # CPU-model platforms: the launcher (templates/cpu_model_launch.cpp.j2) compiled into the
    # kernel's shared object beside `cpp`, which is the device source unchanged.
    launch_cpp: str = ""


@dataclass(frozen=True)
class GeneratedSources:
    """Everything codegen produced for one program, ready to compile."""

    entry: str
    params: tuple[ParamSpec, ...]
    outputs: tuple[int, ...]  # indices into params that the entry returns
    kernels: tuple[KernelSource, ...]  # manifest order = kernel_index in submit()
    orchestration_cpp: str
    # Text files published beside the binaries (passes_dump/..., report/...),
    # keyed by their path relative to the artifact directory.
    extra_files: dict[str, str] = field(default_factory=dict)
