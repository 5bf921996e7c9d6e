"""Content keys: the one hash that decides whether an artifact must be rebuilt.

`artifact_key` is the key of every artifact, whoever builds it: `@pl.jit` and
`ir.compile` (through `pypto.compiler.artifact_key`) and SCons, whose artifact targets'
signatures are this same key (`pypto.scons`).  It covers:

- the post-parse IR (its digest: comments and layout of the kernel source are not in it),
- the compile options (`pypto.compiler.options_text`),
- `compiler_digest`: everything besides the program that decides the artifact's bytes:
  the compiler's own code (`compiler_sources`: the frontend, IR, passes, codegen,
  toolchain and platform code, the simulator headers), the templates and the Jinja2
  version, the platform's build-rule data (its backend and compiler flags included), the
  compiler's identity (`--version` line and every flag set), the pypto and ABI versions,
  and OUTPUT_ENV_VARS.

Code is keyed by meaning (`code_digest`): a Python file by its syntax tree without
docstrings, so a comment or docstring edit moves no key; any other file by its bytes.
An environment variable that can change an artifact's bytes is in OUTPUT_ENV_VARS and
goes into the key; one that cannot is in NEUTRAL_ENV_VARS.  A test requires every
PYPTO_* variable pypto reads to be in one of the two lists.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pypto
from pypto.platform import Platform
from pypto.resources import package_dir, templates_dir
from pypto.sim import ABI_VERSION

KEY_SCHEMA_VERSION = 1

OUTPUT_ENV_VARS: tuple[str, ...] = (
    "PYPTO_CXX",  # selects the host compiler
    "PYPTO_DEVICE_CXX",  # selects the device compiler
    "PYPTO_CPU_MODEL_CXX",  # selects the CPU-model platforms' compiler
    "PTO_ISA_ROOT",  # selects the pto-isa headers device code compiles against
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
    "PYPTO_SIMULATE_DEVICE",  # picks the sim / CPU-model platform built for; the platform is keyed
    "PYPTO_UPSTREAM_ROOT",  # where the upstream PyPTO snapshot is (tests, docs); builds nothing
    "PYPTO_SIGNING_KEY",  # signs packages (`scons package`), never an artifact
    "PATH",  # finds the compiler, whose identity is keyed
    "PYPTO_COMPILER_LAUNCHER",  # runs compiles through ccache/distcc/icecc: the same objects
    "PYPTO_CACHE_LIMIT",  # how large the artifact cache may grow, not what it holds
    "PYPTO_TRACEBACK",  # how a user error's traceback prints (errors.api_boundary)
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


def tree_digest(root: Path, suffixes: tuple[str, ...] = (),
                digest: Callable[[str], str] | None = None) -> str:
    """Digest of the files under `root` (sorted relative paths and each file's `digest`,
    by default its bytes' sha256), only those ending in one of `suffixes` when given.
    Hidden files and caches are skipped."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"directory {root} does not exist")
    digest = digest or _bytes_digest
    files = {
        path.relative_to(root).as_posix(): path
        for path in root.rglob("*")
        if path.is_file()
        and not any(p.startswith(".") or p == "__pycache__" for p in path.relative_to(root).parts)
        and (not suffixes or path.name.endswith(suffixes))
    }
    return content_key([(relpath, digest(str(files[relpath]))) for relpath in sorted(files)])


TEMPLATE_SUFFIXES = (".j2",)
"""What counts as a template (what the package ships from `templates/`)."""


def templates_digest(root: Path, digest: Callable[[str], str] | None = None) -> str:
    """Digest of every template under `root` and the Jinja2 version that renders them."""
    # The distribution's version, not jinja2.__version__: a no-op SCons build stays
    # without the import.
    return content_key([("jinja2", jinja2_version()),
                        ("tree", tree_digest(root, TEMPLATE_SUFFIXES, digest))])


@functools.cache
def jinja2_version() -> str:
    """The installed Jinja2's version."""
    return importlib.metadata.version("jinja2")


NOT_COMPILER = ("runtime", "golden", "spec", "tools", "debug", "scons", "sim/runtime",
                "templates", "build_rules")
"""Parts of the pypto package that cannot change an artifact's bytes (or, for the package
data, are keyed by themselves): every other file is a compiler source."""


def compiler_sources(package: Path | None = None) -> list[Path]:
    """Every file of pypto's own code that can change an artifact's bytes, sorted: the
    package (`package`, by default the installed one) less NOT_COMPILER, hidden files,
    caches and the built native scheduler."""
    package = Path(package or package_dir("pypto"))
    skipped = {os.path.join(package, part) for part in NOT_COMPILER}
    found = []
    for dirpath, dirnames, filenames in os.walk(package):
        # Pruned in place: a no-op build walks the package on every run.
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"
                       and os.path.join(dirpath, d) not in skipped]
        found += [Path(dirpath, name) for name in filenames
                  if not name.startswith(".") and not name.endswith((".pyc", ".so"))
                  and os.path.join(dirpath, name) not in skipped]
    return sorted(found)


def compiler_digest(platform: Platform, toolchain_identity: str, *,
                    package: Path | None = None,
                    digest: Callable[[str], str] | None = None) -> str:
    """Digest of everything besides the program and its options that decides an
    artifact's bytes on `platform` (see the module docstring).

    toolchain_identity: `Toolchain.identity()` (compiler version line and flags);
    package: where pypto's code lies (default: the installed package);
    digest: a file's `code_digest` (SCons passes a cached one; the result is the same).
    """
    digest = digest or code_digest
    package = Path(package or package_dir("pypto"))
    sources = content_key([(p.relative_to(package).as_posix(), digest(str(p)))
                           for p in compiler_sources(package)])
    platform_data = json.dumps(dataclasses.asdict(platform), sort_keys=True)
    return content_key(
        [
            ("sources", sources),
            ("templates", templates_digest(templates_dir(), digest)),
            ("platform", platform_data),
            ("toolchain", toolchain_identity),
            ("pypto_version", pypto.__version__),
            ("abi_version", str(ABI_VERSION)),
            # Unset and empty read alike, as they do where the variables are consumed.
            *((f"env:{var}", os.environ.get(var, "")) for var in OUTPUT_ENV_VARS),
        ]
    )


def artifact_key(ir_digest: str, options: str, compiler: str) -> str:
    """The content key of one artifact.

    ir_digest: sha256 hex of the printed post-parse IR (not the user's source text);
    options: the compile options that change what is built (`pypto.compiler.options_text`);
    compiler: `compiler_digest(...)`.
    """
    return content_key([("ir", ir_digest), ("options", options), ("compiler", compiler)])


def code_digest(path: str) -> str:
    """A source file as the key sees it: a Python file's `syntax_digest` (comments and
    docstrings are not part of it), any other file's bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".py"):
        return syntax_digest(ast.parse(data, filename=path))
    return hashlib.sha256(data).hexdigest()


def syntax_digest(tree: ast.AST) -> str:
    """Digest of a module's syntax tree without docstrings (positions are never part of
    `ast.dump`, comments never part of a tree).  Edits `tree`."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def _bytes_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()
