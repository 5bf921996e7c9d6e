"""Goldens and libraries: golden generation for the shipped library, opening a library.

1. Every golden of the shipped library (kernels/*.py): seeded inputs, the reference on
   copies, safetensors + golden.json written; against the peer that only generates the
   inputs and runs the references (no files, no hashes).
2. `pypto.runtime.load_library` on a built 100-kernel library (the build benchmark's
   synthetic one: 100 specs x 2 variants), which reads the index alone and checks it
   (its own digest, schema, platform, ABI, entries); against reading and parsing every
   JSON file of the library (the index, each manifest and golden.json), what opening
   read before issue 9.  Target: ≤ 5 ms.
3. What opening no longer does, for the record: `Library.verify()`, the first-use check
   of every variant (manifest.json and golden.json against the index, each binary
   against its manifest, both tensor files against golden.json, the manifests parsed),
   against hashing the same files alone.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import warnings
from pathlib import Path

from bench.harness import Row, Settings, median_time

ROOT = Path(__file__).resolve().parents[1]


def _cases():
    """Every golden case of the shipped library, and the spec files that failed to load."""
    from pypto.spec.module import specs_of

    cases, skipped = [], []
    for path in sorted((ROOT / "kernels").glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            for kernel in specs_of(path, ROOT):
                cases.extend(kernel.golden_case(name) for name in kernel.variants)
        except Exception:  # noqa: BLE001 - a broken spec is the build's error, not ours
            skipped.append(path.name)
    return cases, skipped


def golden_rows(settings: Settings) -> list[Row]:
    """Golden generation for the shipped library against computing its references."""
    from pypto.golden import record_golden
    from pypto.golden.record import generate_inputs
    from pypto.golden.reference import run_reference
    from pypto.golden.rng import SpecRNG

    warnings.simplefilter("ignore")
    cases, skipped = _cases()
    work = Path(tempfile.mkdtemp(prefix="pypto-bench-goldens-"))

    def write_all() -> None:
        for i, case in enumerate(cases):
            record_golden(case, work / str(i), overwrite=True)

    def compute_all() -> None:
        for case in cases:
            rng = SpecRNG.for_case(case.kernel, case.variant_name)
            inputs = generate_inputs(case, rng)
            outputs = [(n, case.args[n].dtype, tuple(case.args[n].shape)) for n in case.outputs]
            run_reference(case.reference, {n: inputs[n] for n in case.inputs}, outputs,
                          case.where)

    try:
        runs = max(3, settings.runs)
        ours = median_time(write_all, runs)
        peer = median_time(compute_all, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [Row("library", f"golden generation, shipped library ({len(cases)} variants)",
                ours, peer, "inputs + references alone (no files)",
                note=f"{ours / max(1, len(cases)) * 1e3:.1f} ms per golden"
                + (f"; skipped (do not load): {', '.join(skipped)}" if skipped else ""))]


def open_rows(settings: Settings, build: Path) -> list[Row]:
    """Opening the built library at `build` against parsing its JSON files, and checking
    every variant against hashing its files."""
    from pypto.runtime import load_library

    library = load_library(build, allow_unsigned=True)
    variants = library.variants()
    json_files = [build / "library-a5sim.json"]
    for variant in variants:
        json_files += [variant.artifact / "manifest.json", variant.golden / "golden.json"]
    library.verify()
    hashed = list(json_files[1:])
    for variant in variants:
        hashed += [variant.artifact / k.file for k in variant.manifest.kernels]
        hashed += [variant.artifact / variant.manifest.orchestration_file,
                   variant.golden / "inputs.safetensors", variant.golden / "expected.safetensors"]

    def parse_all() -> None:
        for path in json_files:
            json.loads(path.read_bytes())

    def hash_all() -> None:
        for path in hashed:
            hashlib.sha256(path.read_bytes()).hexdigest()

    runs = max(3, settings.runs)
    ours = median_time(lambda: load_library(build, allow_unsigned=True), runs)
    peer = median_time(parse_all, runs)
    verify = median_time(lambda: load_library(build, allow_unsigned=True).verify(), runs)
    hashing = median_time(hash_all, runs)
    return [
        Row("library", f"open a library ({len(library.kernels)} kernels, {len(variants)} "
            "variants)", ours, peer, f"parsing its {len(json_files)} JSON files alone",
            target="<= 5 ms", met=ours <= 5e-3,
            note="reads and checks the index alone (its own sha256); each variant is "
                 "checked on first use"),
        Row("library", f"first use of every variant ({len(variants)}, `Library.verify()`)",
            verify, hashing, f"sha256 of the same {len(hashed)} files alone",
            note=f"{verify / max(1, len(variants)) * 1e3:.2f} ms per variant, paid on its "
                 "first use"),
    ]
