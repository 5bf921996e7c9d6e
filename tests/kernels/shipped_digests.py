"""The committed digests of the shipped library's goldens and simulator outputs
(tests/kernels/digests.json), and how to compute them.

A golden's digest covers its two tensor files and golden.json without `producer` (the
versions of the tools that wrote it, which say nothing about its values) and without
`golden_sha256` (which covers `producer`).  A simulator output's digest is the sha256 of
its bytes after a run on the golden's inputs with `schedule_seed=0` (one fixed order of
split-K's atomic adds).

    python tests/kernels/shipped_digests.py BUILD   # rewrites digests.json from BUILD/

where BUILD is a build directory of this checkout's library (`scons platform=a2a3sim`
and `scons platform=a5sim`); the tests say when that is needed.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "digests.json"
PLATFORMS = ("a2a3sim", "a5sim")
FILES = ("inputs.safetensors", "expected.safetensors")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def golden_digest(directory: Path) -> dict[str, str]:
    """The digests of one golden directory (see the module docstring)."""
    record = json.loads((directory / "golden.json").read_text())
    content = {k: v for k, v in record.items() if k not in ("producer", "golden_sha256")}
    found = {name: _sha256((directory / name).read_bytes()) for name in FILES}
    found["golden.json"] = _sha256(json.dumps(content, sort_keys=True).encode())
    return found


def golden_digests(goldens: Path) -> dict[str, dict[str, str]]:
    """`kernel/variant` -> digests, for every golden under `goldens` (kernel/variant/)."""
    return {f"{d.parent.name}/{d.name}": golden_digest(d)
            for d in sorted(goldens.glob("*/*")) if (d / "golden.json").is_file()}


def output_digests(program: Any, golden: Path) -> dict[str, str]:
    """{output: sha256 of its bytes} of one run of a loaded artifact on a golden's inputs."""
    import torch

    from pypto.runtime import GoldenRecord, RunConfig

    args = GoldenRecord.read(golden).run_arguments(program.manifest.params)
    program.run(args, RunConfig(platform=program.platform, schedule_seed=0))
    return {p.name: _sha256(a.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
            for p, a in zip(program.manifest.params, args, strict=True) if p.direction.writes}


def sim_digests(build: Path, platform: str) -> dict[str, dict[str, str]]:
    """`kernel/variant` -> output digests for every variant of the library built for
    `platform` under `build`."""
    from pypto.runtime import load_library

    with load_library(build, platform=platform, allow_unsigned=True) as library:
        return {f"{v.kernel}/{v.name}": output_digests(v.load(), v.golden)
                for v in sorted(library.variants(), key=lambda v: (v.kernel, v.name))}


def committed() -> dict[str, Any]:
    """digests.json: {"generator", "goldens": {...}, "sim": {platform: {...}}}."""
    return json.loads(DIGESTS.read_text())


def write(build: Path) -> None:
    """Rewrites digests.json from the goldens and both platforms' artifacts under `build`."""
    from pypto.golden import GENERATOR_ID

    data = {"generator": GENERATOR_ID, "goldens": golden_digests(build / "goldens"),
            "sim": {p: sim_digests(build, p) for p in PLATFORMS}}
    DIGESTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]).resolve())
