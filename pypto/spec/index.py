"""The spec index: what each spec file declares, cached under the file's meaning.

A no-op build must decide without importing torch or running a spec (ARCHITECTURE.md,
"Performance notes").  So SCons asks this index, which imports only the standard
library (and `pypto.filesystem`, which does too), for each spec's description (kernels,
variants, platforms, the digest of each variant's post-parse IR).  A description is
cached under the spec's *meaning*: the digest of the spec's syntax tree and of every
project module it imports, transitively (comments, docstrings and layout are not part of
a syntax tree, so editing them changes no meaning), plus the digest of the pypto sources
that read specs.  Only when a meaning is new does `describe` run the spec.

File digests are cached by (mtime, size, inode), so an unchanged file is not even read;
a file modified within the last two seconds is never trusted by its stat (its next
edit could keep the same mtime), as git does for racy files.  Paths are handled as
strings inside: a no-op build asks about hundreds of files, and pathlib costs more
than the system calls.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pypto.filesystem import atomic_write

INDEX_SCHEMA = 1
_RACY_NS = 2_000_000_000
_IGNORED_PACKAGE = "pypto"  # pypto's own sources are covered by the toolkit digests


class SpecIndex:
    """Digests of project files and descriptions of spec files, persisted as JSON."""

    def __init__(self, top: str | os.PathLike, path: str | os.PathLike) -> None:
        # Absolute, not resolved: symlinks stay as the user spelt them, and no path
        # lookup costs a system call (a no-op build asks for hundreds).
        self.top = Path(os.path.abspath(top))
        self._prefix = str(self.top).rstrip(os.sep) + os.sep
        self.path = Path(path)
        self._files: dict[str, dict[str, Any]] = {}
        self._specs: dict[str, dict[str, Any]] = {}
        self._memo: dict[str, dict[str, str]] = {}
        self._seen: dict[str, dict[str, Any]] = {}  # files checked during this run
        self._is_file: dict[str, bool] = {}  # package __init__ lookups during this run
        self._closures: dict[str, list[str]] = {}  # import closures computed this run
        self._dirty = False
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("schema") == INDEX_SCHEMA:
                self._files = dict(raw.get("files", {}))
                self._specs = dict(raw.get("specs", {}))
                self._memo = dict(raw.get("memo", {}))
        except (OSError, ValueError, AttributeError):
            pass  # no index, or a damaged one: it is a cache, start empty

    # ------------------------------------------------------------------ files
    def relpath(self, path: str | os.PathLike) -> str:
        """`path` relative to the project top, or its absolute path outside it."""
        return os.path.abspath(path).removeprefix(self._prefix).replace(os.sep, "/")

    def _full(self, rel: str) -> str:
        """The absolute path of `rel` (a relative path under the top, or an absolute one)."""
        return rel if os.path.isabs(rel) else self._prefix + rel

    def _entry(self, rel: str) -> dict[str, Any]:
        """The cached entry of the file `rel` (as `relpath` spells it), checked this run."""
        seen = self._seen.get(rel)
        if seen is not None:
            return seen
        full = self._full(rel)
        stat = os.stat(full)
        key = [stat.st_mtime_ns, stat.st_size, stat.st_ino]
        entry = self._files.get(rel)
        if entry is None or entry.get("stat") != key:
            with open(full, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if entry is None or entry.get("sha256") != digest:
                entry = {"sha256": digest}
            trusted = time.time_ns() - stat.st_mtime_ns > _RACY_NS
            entry = {**entry, "stat": key if trusted else None}
            self._files[rel] = entry
            self._dirty = True
        self._seen[rel] = entry
        return entry

    def sha256(self, path: str | os.PathLike) -> str:
        """sha256 of the file's bytes."""
        return self._entry(self.relpath(path))["sha256"]

    def _python(self, rel: str) -> dict[str, Any]:
        """The entry of the Python file `rel`, with its syntax digest and local imports
        filled in."""
        entry = self._entry(rel)
        if "ast" not in entry:
            full = Path(self._full(rel))
            # The content key's rule, imported only when a file is new or changed.
            from pypto.toolchain.key import syntax_digest

            tree = ast.parse(full.read_bytes(), filename=str(full))
            entry["imports"] = sorted(
                self.relpath(p) for p in local_imports(tree, full, self.top)
            )
            entry["ast"] = syntax_digest(tree)
            self._dirty = True
        return entry

    def code_digest(self, path: str | os.PathLike) -> str:
        """`pypto.toolchain.key.code_digest` of the file, from the cache while its stat
        holds: a Python file's syntax digest, any other file's sha256."""
        rel = self.relpath(path)
        if rel.endswith(".py"):
            return self._python(rel)["ast"]
        return self._entry(rel)["sha256"]

    def imports(self, path: str | os.PathLike) -> list[Path]:
        """Project modules `path` imports directly (package `__init__` files included)."""
        return [Path(self._full(rel)) for rel in self._python(self.relpath(path))["imports"]]

    def closure(self, path: str | os.PathLike) -> list[Path]:
        """`path`, its enclosing packages' `__init__` files and every project module they
        import, transitively, sorted."""
        return [Path(self._full(rel)) for rel in self._closure(self.relpath(path))]

    def _closure(self, rel: str) -> list[str]:
        """`closure` as sorted relative paths (memoised for this run)."""
        found = self._closures.get(rel)
        if found is not None:
            return found
        todo = [rel, *self._package_inits(rel)]
        seen: set[str] = set()
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(self._python(current)["imports"])
        self._closures[rel] = found = sorted(seen, key=lambda r: r.split("/"))
        return found

    def _package_inits(self, rel: str) -> list[str]:
        """The `__init__.py` of every package enclosing the module `rel` under the top."""
        if os.path.isabs(rel):
            return []
        inits = []
        parts = rel.split("/")[:-1]
        while parts:
            init = "/".join([*parts, "__init__.py"])
            if init != rel:
                known = self._is_file.get(init)
                if known is None:
                    known = self._is_file[init] = os.path.isfile(self._prefix + init)
                if known:
                    inits.append(init)
            parts.pop()
        return inits

    def meaning(self, path: str | os.PathLike, context: str = "") -> str:
        """Digest of the syntax of `path` and of its import closure, plus `context`."""
        digest = hashlib.sha256(context.encode())
        for module in self._closure(self.relpath(path)):
            digest.update(f"\0{module}\0{self._python(module)['ast']}".encode())
        return digest.hexdigest()

    def tree_digest(self, roots: Iterable[str | os.PathLike], skip: Iterable[str] = ()) -> str:
        """Digest of every file under `roots` (files or directories) by content and path
        from the root's parent (so the same files digest alike wherever they are
        installed); hidden files, `__pycache__` and paths under `skip` are left out."""
        skipped = tuple(os.path.abspath(s) for s in skip)
        below = tuple(s + os.sep for s in skipped)
        digest = hashlib.sha256()
        for root in roots:
            root = os.path.abspath(root)
            base = len(os.path.dirname(root)) + 1
            for file in sorted(_files_under(root)):
                if file in skipped or file.startswith(below):
                    continue
                digest.update(f"{file[base:]}\0{self.sha256(file)}\n".encode())
        return digest.hexdigest()

    # ------------------------------------------------------------------ specs
    def description(
        self,
        path: str | os.PathLike,
        context: str,
        describe: Callable[[Path], dict[str, Any]],
    ) -> dict[str, Any]:
        """The description of spec `path`: cached when its meaning is known, otherwise
        `describe(path)` (which runs the spec) and remembered."""
        rel = self.relpath(path)
        key = self.meaning(path, context)
        cached = self._specs.get(rel)
        if cached is not None and cached.get("meaning") == key:
            return cached["description"]
        description = describe(self.top / rel)
        self._specs[rel] = {"meaning": key, "description": description}
        self._dirty = True
        return description

    def memo(self, name: str, key: str, compute: Callable[[], str]) -> str:
        """`compute()`, remembered under `name` for as long as `key` (a digest of all it
        depends on) stays the same."""
        cached = self._memo.get(name)
        if cached is not None and cached.get("key") == key:
            return cached["value"]
        value = compute()
        self._memo[name] = {"key": key, "value": value}
        self._dirty = True
        return value

    def spec_meaning(self, path: str | os.PathLike) -> str:
        """The meaning recorded with the last description of `path`."""
        return self._specs[self.relpath(path)]["meaning"]

    def save(self) -> None:
        """Writes the index if anything changed (atomically: it is read by the next run)."""
        if not self._dirty:
            return
        # Forget files that are gone, so that the index does not grow with every rename.
        for entries in (self._files, self._specs):
            for rel in [r for r in entries if not (self.top / r).exists()]:
                del entries[rel]
        data = {"schema": INDEX_SCHEMA, "files": self._files, "specs": self._specs,
                "memo": self._memo}
        atomic_write(self.path, json.dumps(data, sort_keys=True, indent=1) + "\n")
        self._dirty = False


def local_imports(tree: ast.AST, path: Path, top: Path) -> set[Path]:
    """Files under `top` that the module at `path` imports (anywhere in its body): the
    modules and the `__init__` of every package on the way.  pypto itself is left out."""
    package = _package_of(path, top)
    found: set[Path] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found |= _module_files(alias.name.split("."), top)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None or node.level - 1 > len(package):
                    continue
                base = package[: len(package) - (node.level - 1)]
            else:
                base = []
            parts = base + (node.module.split(".") if node.module else [])
            found |= _module_files(parts, top)
            for alias in node.names:
                found |= _module_files([*parts, alias.name], top)  # `from pkg import submodule`
    found.discard(path)
    return found


def _module_files(parts: list[str], top: Path) -> set[Path]:
    if not parts or parts[0] == _IGNORED_PACKAGE or "*" in parts:
        return set()
    found = set()
    directory = top
    for i, part in enumerate(parts):
        module = directory / f"{part}.py"
        package = directory / part / "__init__.py"
        if i == len(parts) - 1 and module.is_file():
            found.add(module)
        if package.is_file():
            found.add(package)
        elif not (directory / part).is_dir():
            break
        directory = directory / part
    return found


def _package_of(path: Path, top: Path) -> list[str] | None:
    """Dotted package of the module at `path` (as parts), if it lies under `top`."""
    try:
        rel = path.relative_to(top)
    except ValueError:
        return None
    return list(rel.parts[:-1])


def _files_under(root: str) -> Iterable[str]:
    """Absolute paths of the files under `root` (or `root` itself, a file)."""
    if os.path.isfile(root):
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
        for name in filenames:
            if not name.startswith(".") and not name.endswith((".pyc", ".pyo")):
                yield os.path.join(dirpath, name)
