"""A built kernel library, opened without any compiler: `load_library(path)`.

A library is a directory (the build directory `scons` writes) or a package archive
(`scons package`) with the same layout:

    library-<platform>.json          the index: name, version, platform, ABI version and,
                                     per kernel and variant, where its artifact and its
                                     golden lie and the sha256 of their manifest/golden.json
    <platform>/<kernel>/<variant>/   artifact directories (manifest.json, binaries)
    goldens/<kernel>/<variant>/      goldens (golden.json, inputs/expected.safetensors)

Opening reads the index alone and checks it: who signed it (`trusted_keys`, see
`pypto.runtime.signature`; an unsigned library opens only with `allow_unsigned=True`),
its own digest (`index_sha256`, so a truncated or bit-flipped index is refused at once),
schema major version, platform, ABI version and the shape of every entry.  A package is
unpacked first, bounded by its index and checked file by file against it
(`pypto.runtime.unpack`); errors about its files name the archive and the member.

A variant is checked as a whole on its first use (`run`, `load`, `check`, `manifest`,
`golden_record` or `verify`), before anything of it runs: the sha256 of its manifest.json
and golden.json against the index, of every binary against the manifest (through
`verify_artifact`) and of both tensor files against golden.json (through
`GoldenRecord.read`).  So opening a 200-variant library costs one small JSON file, and a
damaged variant fails where it is used, naming the file (and, for a hash, both hashes),
while the others stay usable.  `Library.verify()` checks every variant at once, for a
deployment check.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self, TypeVar, overload

from pypto.comparison import Tolerance
from pypto.filesystem import read_recorded
from pypto.golden_files import GOLDEN_NAME
from pypto.ir.errors import api_boundary
from pypto.platform import get_platform
from pypto.records import MAX_RECORD_BYTES
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import ArtifactError
from pypto.runtime.golden import GoldenRecord
from pypto.runtime.library_index import field, index_name, inside, read_index
from pypto.runtime.loader import LoadedProgram, load_artifact, verify_artifact
from pypto.runtime.manifest import MANIFEST_NAME, Manifest
from pypto.runtime.signature import MAX_SIGNATURE_BYTES, Trust, signature_name
from pypto.runtime.unpack import unpack_package

# --------------------------------------------------------------------------- check results


@dataclass(frozen=True)
class CheckRow:
    """One output of one kernel variant checked against its golden."""

    kernel: str
    variant: str
    output: str
    max_abs: float
    max_rel: float
    tolerance: str
    passed: bool
    detail: str = ""  # what failed, for a failing row

    @property
    def verdict(self) -> str:
        """`pass` or `FAIL`."""
        return "pass" if self.passed else "FAIL"

    def to_json(self) -> dict[str, Any]:
        """A JSON object (infinities as strings, which JSON lacks)."""
        return {
            "kernel": self.kernel, "variant": self.variant, "output": self.output,
            "max_abs": _json_float(self.max_abs), "max_rel": _json_float(self.max_rel),
            "tolerance": self.tolerance, "passed": self.passed, "detail": self.detail,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> CheckRow:
        """Inverse of `to_json`."""
        return cls(raw["kernel"], raw["variant"], raw["output"], float(raw["max_abs"]),
                   float(raw["max_rel"]), raw["tolerance"], bool(raw["passed"]),
                   raw.get("detail", ""))


def _json_float(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


@dataclass(frozen=True)
class CheckTable:
    """Every checked output of a library: prints as a table, `passed` when all pass."""

    rows: tuple[CheckRow, ...]

    @property
    def passed(self) -> bool:
        """True when every row passed."""
        return all(row.passed for row in self.rows)

    @property
    def failures(self) -> tuple[CheckRow, ...]:
        """The rows that failed."""
        return tuple(row for row in self.rows if not row.passed)

    def __iter__(self) -> Iterator[CheckRow]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        header = ("kernel", "variant", "output", "max abs err", "max rel err", "tolerance",
                  "verdict")
        cells = [header] + [
            (r.kernel, r.variant, r.output, f"{r.max_abs:.3g}", f"{r.max_rel:.3g}", r.tolerance,
             r.verdict)
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                 for row in cells]
        lines.insert(1, "  ".join("-" * w for w in widths))
        for row in self.failures:
            lines.append(f"FAIL {row.kernel}/{row.variant}: {row.detail}")
        failed = len(self.failures)
        variants = len({(r.kernel, r.variant) for r in self.rows})
        lines.append(
            f"{len(self.rows) - failed} of {len(self.rows)} outputs of {variants} kernel "
            f"variants within tolerance" + (f"; {failed} FAILED" if failed else "")
        )
        return "\n".join(lines)


def check_artifact(
    artifact_dir: str | os.PathLike,
    golden_dir: str | os.PathLike,
    *,
    kernel: str,
    variant: str,
    platform: str | None = None,
    program: LoadedProgram | None = None,
) -> list[CheckRow]:
    """Runs the artifact on its golden's recorded inputs and compares every output with
    the golden's tolerance (the RunConfig default where the golden records none)."""

    record = GoldenRecord.read(golden_dir)
    if program is None:
        program = load_artifact(artifact_dir, platform=platform)
    args = record.run_arguments(program.manifest.params)
    config = RunConfig(platform=program.platform)
    program.run(args, config)
    outputs = {p.name: a for p, a in zip(program.manifest.params, args, strict=True)
               if p.direction.writes}
    report = record.compare(outputs, Tolerance(config.rtol, config.atol, "RunConfig default"))
    return [
        CheckRow(kernel, variant, c.name, c.max_abs, c.max_rel, c.tolerance.describe(),
                 c.passed, "" if c.passed else c.describe())
        for c in report.outputs
    ]


# --------------------------------------------------------------------------- the library


class LibraryVariant:
    """One built variant of a kernel: its artifact and golden, checked on first use."""

    def __init__(self, kernel: str, name: str, place: _Place, artifact: str, golden: str,
                 manifest_sha256: str, golden_sha256: str, platform: str) -> None:
        self.kernel = kernel
        self.name = name
        self.platform = platform
        self._place = place
        self._root = place.root
        self._artifact = artifact  # relative to the root, checked to stay inside it
        self._golden = golden
        self._manifest_sha256 = manifest_sha256
        self._golden_sha256 = golden_sha256
        self._lock = threading.Lock()
        self._manifest: Manifest | None = None
        self._record: GoldenRecord | None = None
        self._loaded: LoadedProgram | None = None

    @property
    def artifact(self) -> Path:
        """The artifact directory."""
        return self._root / self._artifact

    @property
    def golden(self) -> Path:
        """The golden directory."""
        return self._root / self._golden

    @property
    def verified(self) -> bool:
        """Whether every file of the variant has been checked (it has been used)."""
        return self._manifest is not None

    def verify(self) -> Manifest:
        """Checks every file of the variant, once: manifest.json and golden.json against the
        index's sha256, each binary against the manifest, both tensor files against
        golden.json.  Returns the manifest; raises `ArtifactError` naming the file."""
        if self._manifest is None:
            with self._lock, self._place.naming():
                if self._manifest is None:
                    artifact, golden, index = self.artifact, self.golden, self._place.index
                    _check_sha256(artifact / MANIFEST_NAME, self._manifest_sha256, index)
                    _check_sha256(golden / GOLDEN_NAME, self._golden_sha256, index)
                    record = GoldenRecord.read(golden)  # checks both tensor files' sha256
                    manifest = verify_artifact(artifact, platform=self.platform)
                    self._record = record
                    self._manifest = manifest
        return self._manifest

    @property
    def manifest(self) -> Manifest:
        """The artifact's manifest (checks the variant on first use)."""
        return self.verify()

    def load(self) -> LoadedProgram:
        """The mapped artifact (checked, then loaded once; the loader checks each binary's
        sha256 again right before mapping it)."""
        if self._loaded is None:
            self.verify()
            with self._lock, self._place.naming():
                if self._loaded is None:
                    self._loaded = load_artifact(self.artifact, platform=self.platform)
        return self._loaded

    @api_boundary
    def run(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Runs the kernel on `args` (parameter order), as `LoadedProgram.run` does."""
        return self.load().run(args, config or RunConfig(platform=self.platform))

    def golden_record(self) -> GoldenRecord:
        """The golden of this variant (checks the variant on first use)."""
        self.verify()
        assert self._record is not None
        return self._record

    def check(self) -> list[CheckRow]:
        """Runs the variant on its golden's inputs and compares the outputs."""
        return check_artifact(self.artifact, self.golden, kernel=self.kernel,
                              variant=self.name, program=self.load())

    def __repr__(self) -> str:
        return f"LibraryVariant({self.kernel!r}, {self.name!r}, platform={self.platform!r})"


class LibraryKernel:
    """A kernel of the library with its variants by name."""

    def __init__(self, name: str, spec: str, variants: dict[str, LibraryVariant]) -> None:
        self.name = name
        self.spec = spec
        self.variants = variants

    def __getitem__(self, variant: str) -> LibraryVariant:
        return _named(self.variants, variant, f"kernel {self.name!r} has no variant")

    def __repr__(self) -> str:
        return f"LibraryKernel({self.name!r}, variants={sorted(self.variants)})"


class Library:
    """A verified kernel library: `library["add"]["f32_128x128"].run(...)`, `check()`."""

    def __init__(self, root: Path, index: dict[str, Any], kernels: dict[str, LibraryKernel],
                 keep: Any = None, signed_by: str | None = None) -> None:
        self.root = root
        self.name: str = index["name"]
        self.version: str = index["version"]
        self.platform: str = index["platform"]
        self.kernels = kernels
        self.signed_by = signed_by
        """The public key (64 hex digits) whose signature of the index verified against the
        caller's `trusted_keys`; None for a library opened with `allow_unsigned=True`."""
        self._keep = keep  # the temporary directory of an unpacked archive

    def __getitem__(self, kernel: str) -> LibraryKernel:
        return _named(self.kernels, kernel, f"library {self.name!r} has no kernel")

    def variants(self) -> list[LibraryVariant]:
        """Every variant of every kernel, sorted by kernel then variant name."""
        return [k.variants[v] for _, k in sorted(self.kernels.items()) for v in sorted(k.variants)]

    def verify(self) -> None:
        """Checks every file of every variant now (opening checks the index alone, and a
        variant is checked on its first use); raises `ArtifactError` naming the first
        damaged file."""
        for variant in self.variants():
            variant.verify()

    def check(self) -> CheckTable:
        """Runs every variant on its golden and returns the table of results."""
        rows: list[CheckRow] = []
        for variant in self.variants():
            rows.extend(variant.check())
        return CheckTable(tuple(rows))

    def close(self) -> None:
        """Removes the unpacked copy of an archive (a directory library has none)."""
        if self._keep is not None:
            self._keep.cleanup()
            self._keep = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Library({self.name!r}, version={self.version!r}, platform={self.platform!r}, "
                f"kernels={sorted(self.kernels)})")


@api_boundary
def load_library(path: str | os.PathLike, *, platform: str | None = None,
                 trusted_keys: Iterable[Any] | None = None,
                 allow_unsigned: bool = False) -> Library:
    """Opens a built library directory or a package archive.

    Checks who signed the index first: a library signed by one of `trusted_keys`
    (Ed25519 public keys: 64 hex digits, raw bytes, PEM text, a `pathlib.Path` to a PEM
    file or an `Ed25519PublicKey`) opens, and `Library.signed_by` names the key; a
    signature by another key, or one that does not verify, is refused.  A library
    without a signature (a build directory, a package built without `signing_key`)
    opens only with `allow_unsigned=True`, as does a signed one without `trusted_keys`
    (unchecked).  A package is then unpacked, bounded by its index and checked against
    it file by file.  Then the index is checked (its digest, schema, platform, ABI
    version, entries); each variant's files are checked on the variant's first use
    (`Library.verify()` checks them all).  `platform` is the platform this runtime runs;
    a library built for another one is refused.  Without it, the library must hold
    exactly one platform's build.  Every refusal is an `ArtifactError`.
    """
    if platform is not None:
        get_platform(platform)  # an unknown name is the caller's mistake (ValueError)
    trust = Trust.of(trusted_keys, allow_unsigned)
    source = Path(path)
    if source.is_file():
        keep = tempfile.TemporaryDirectory(prefix="pypto-library-")
        try:
            package = unpack_package(source, Path(keep.name), platform, trust)
            place = _Place(package.root, package.index_name, f"{source}:{package.top}")
            return _library(place, package.index, keep, package.signed_by)
        except BaseException:
            keep.cleanup()
            raise
    if not source.is_dir():
        raise ArtifactError(f"{source}: no such library directory or package archive")
    index_path = _index_path(source, platform)
    index = _bounded_read(index_path, MAX_RECORD_BYTES)
    signature = _bounded_read(index_path.with_name(signature_name(index_path.name)),
                              MAX_SIGNATURE_BYTES, missing_ok=True)
    signed_by = trust.check(str(index_path), index, signature)
    place = _Place(source, index_path.name, None)
    return _library(place, read_index(str(index_path), index, platform), None, signed_by)


@dataclass(frozen=True)
class _Place:
    """Where a library's files lie (`root`, its index named `index`), and how messages
    show the root: a package's files lie in a temporary directory, named in messages by
    the archive and the member instead."""

    root: Path
    index: str
    shown: str | None

    @contextlib.contextmanager
    def naming(self) -> Iterator[None]:
        """Re-raises an ArtifactError with the root shown as `shown`."""
        try:
            yield
        except ArtifactError as exc:
            if self.shown is None:
                raise
            raise type(exc)(str(exc).replace(str(self.root), self.shown)) from None


def _library(place: _Place, raw: dict[str, Any], keep: Any, signed_by: str | None) -> Library:
    """The Library of the checked index `raw`."""
    where = place.shown + "/" + place.index if place.shown else str(place.root / place.index)
    kernels = {}
    for kernel, entry in sorted(raw["kernels"].items()):
        variants = {}
        for variant, files in sorted(field(where, entry, "variants", dict, kernel).items()):
            at = f"{kernel}.variants.{variant}"
            variants[variant] = LibraryVariant(
                kernel, variant, place,
                inside(where, field(where, files, "artifact", str, at)),
                inside(where, field(where, files, "golden", str, at)),
                field(where, files, "manifest_sha256", str, at),
                field(where, files, "golden_sha256", str, at),
                raw["platform"],
            )
        kernels[kernel] = LibraryKernel(kernel, str(entry.get("spec", "")), variants)
    return Library(place.root, raw, kernels, keep, signed_by)


@overload
def _bounded_read(path: Path, limit: int, missing_ok: Literal[False] = False) -> bytes: ...
@overload
def _bounded_read(path: Path, limit: int, missing_ok: bool) -> bytes | None: ...
def _bounded_read(path: Path, limit: int, missing_ok: bool = False) -> bytes | None:
    """The bytes of `path` (at most `limit` of them, else an ArtifactError); None for a
    missing file when `missing_ok`."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise ArtifactError(f"{path}: cannot read: no such file") from None
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ArtifactError(f"{path}: larger than the {limit} bytes pypto reads of it")
    return data


def _index_path(root: Path, platform: str | None) -> Path:
    available = sorted(p.name[len("library-"):-len(".json")] for p in root.glob("library-*.json"))
    if platform is not None:
        if platform not in available:
            built = ", ".join(available) or "no platform"
            raise ArtifactError(
                f"{root}: the library is built for {built}, not for this runtime's platform "
                f"{platform!r}; build it with `scons platform={platform}`"
            )
        return root / index_name(platform)
    if len(available) != 1:
        raise ArtifactError(
            f"{root}: " + (f"holds builds for {', '.join(available)}; pass platform=..."
                           if available else "no library index (library-<platform>.json) "
                           "here; build one with `scons platform=<p>`")
        )
    return root / index_name(available[0])


_T = TypeVar("_T")


def _named(table: Mapping[str, _T], name: str, missing: str) -> _T:
    """`table[name]`; a KeyError that says `missing` and the names it has otherwise."""
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"{missing} {name!r}; it has {sorted(table)}") from None


def _check_sha256(path: Path, expected: str, index: str) -> None:
    read_recorded(path, expected, ArtifactError, recorded_in=index,
                  remedy="the file changed after the build, rebuild the library")


def read_check_rows(paths: Sequence[str | os.PathLike]) -> CheckTable:
    """The table of the check results `scons check` wrote, one JSON file per variant."""
    rows: list[CheckRow] = []
    for path in paths:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        rows.extend(CheckRow.from_json(r) for r in raw["rows"])
    return CheckTable(tuple(rows))
