"""Content keys: the one hash that decides whether an artifact must be rebuilt.

`program_key` spells out every input of a compiled program.  An environment variable that
can change an artifact's bytes is in OUTPUT_ENV_VARS and goes into the key; one that
cannot is in NEUTRAL_ENV_VARS.  A test requires every PYPTO_* variable pypto reads to be
in one of the two lists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import pypto
from pypto.platform import Platform
from pypto.toolchain.build import ABI_VERSION

KEY_SCHEMA_VERSION = 1

OUTPUT_ENV_VARS: tuple[str, ...] = (
    "PYPTO_CXX",  # selects the host compiler
    "PYPTO_DEVICE_CXX",  # selects the device compiler
    "ASCEND_HOME_PATH",  # selects the device compiler through the CANN install root
    "ASCEND_TOOLKIT_HOME",  # likewise
    "PYPTO_WARNING_LEVEL",  # decides which diagnostics are written to the artifact's report/
    "PYPTO_ENABLE_DIAGNOSTICS",  # turns on opt-in checks whose findings land in report/
    "PYPTO_SIM_DEBUG",  # builds sim kernels with bounds checks (another binary)
)

NEUTRAL_ENV_VARS: tuple[str, ...] = (
    "PYPTO_CACHE_DIR",  # where artifacts are stored, not what they hold
    "XDG_CACHE_HOME",  # likewise
    "PYPTO_BUILD_RULES",  # where platform data is read; the data itself is keyed
    "PYPTO_TEMPLATES_DIR",  # where templates are read; their contents are keyed
    "PYPTO_VERIFY_LEVEL",  # checks the IR between passes, never changes it
    "PYPTO_WORK_DIR",  # where a run writes dfx_outputs/; read by the runtime only
    "PYPTO_DUMP_BUDGET",  # bytes a run's tensor dump may write; read by the runtime only
    "PYPTO_SCHEDULER",  # which scheduler runs the tasks (same edges, same results); runtime only
    "PYPTO_PLATFORM",  # the platform when none is named; the platform itself is keyed
    "PATH",  # finds the compiler, whose identity is keyed
)


def content_key(parts: Iterable[tuple[str, bytes | str]]) -> str:
    """sha256 hex of KEY_SCHEMA_VERSION followed by `parts`, each name and value
    length-prefixed so that no two different part lists encode alike (str is UTF-8)."""
    digest = hashlib.sha256()
    for name, value in (("key_schema_version", str(KEY_SCHEMA_VERSION)), *parts):
        for field in (name, value):
            if isinstance(field, str):
                field = field.encode()
            elif not isinstance(field, bytes):
                raise TypeError(f"content key part {name!r}: expected str or bytes, got {field!r}")
            digest.update(len(field).to_bytes(8, "big"))
            digest.update(field)
    return digest.hexdigest()


def tree_digest(root: Path, suffixes: tuple[str, ...] = ()) -> str:
    """Digest of the files under `root` (sorted relative paths and contents), only those
    ending in one of `suffixes` when given.  Hidden files and caches are skipped."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"directory {root} does not exist")
    files = {
        path.relative_to(root).as_posix(): path
        for path in root.rglob("*")
        if path.is_file()
        and not any(p.startswith(".") or p == "__pycache__" for p in path.relative_to(root).parts)
        and (not suffixes or path.name.endswith(suffixes))
    }
    return content_key([(relpath, files[relpath].read_bytes()) for relpath in sorted(files)])


def templates_digest(templates_dir: Path) -> str:
    """Digest of every file under `templates_dir` and the Jinja2 version that renders them."""
    # Imported here so that importing pypto.toolchain stays cheap for a no-op SCons build.
    import jinja2

    return content_key([("jinja2", jinja2.__version__), ("tree", tree_digest(templates_dir))])


def program_key(
    ir_text: str,
    specialization: str,
    platform: Platform,
    pipeline_id: str,
    templates_digest: str,
    toolchain_identity: str,
) -> str:
    """The content key of one compiled program.

    ir_text: the serialized post-parse IR (not the user's source text);
    specialization: shapes, dtypes and scalar constants of the call;
    platform: its full build-rule data is keyed, so editing build_rules/ rebuilds;
    pipeline_id: identity of the pass pipeline and its options;
    templates_digest: `templates_digest(templates/)`;
    toolchain_identity: `Toolchain.identity()`.
    The pypto version, the ABI version and OUTPUT_ENV_VARS are added here.
    """
    platform_data = json.dumps(dataclasses.asdict(platform), sort_keys=True)
    return content_key(
        [
            ("ir", ir_text),
            ("specialization", specialization),
            ("platform", platform_data),
            ("pipeline", pipeline_id),
            ("templates", templates_digest),
            ("toolchain", toolchain_identity),
            ("pypto_version", pypto.__version__),
            ("abi_version", str(ABI_VERSION)),
            # Unset and empty read alike, as they do where the variables are consumed.
            *((f"env:{var}", os.environ.get(var, "")) for var in OUTPUT_ENV_VARS),
        ]
    )
