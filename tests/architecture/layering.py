"""The layers of the `pypto` package, and the check that its imports respect them.

Every module belongs to one *unit* (a package, or a named part of one); `MAY_IMPORT`
says which other units a unit may import, and that relation is itself acyclic, so the
units form layers.  The check reads the source with `ast`.  Module-level and
function-level imports alike count: an import inside a function is a dependency all the
same, only a later one.  So does a pypto module named by a string for
`importlib.import_module` (given to it, or in a module-level table of a module that calls
it); a package named to `package_dir`, which reads the package's files, is not one.
Imports under `if TYPE_CHECKING:` do not count: they never run.  A violation names the
file and line of the import.

`EXCEPTIONS` lists the imports an outside contract fixes in place, each with its reason;
each must stay inside a function (a lazy hook), and each must still be needed.
"""

from __future__ import annotations

import ast
import functools
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# unit -> the module names it holds: "pkg.*" is every module under pkg (pkg itself
# included); a plain name is that module alone.  The most specific match wins.
UNITS: dict[str, tuple[str, ...]] = {
    # The package module: `__version__` (and the SCons hook, see EXCEPTIONS).
    "pypto": ("pypto",),
    "resources": ("pypto.resources",),
    # The bounded reader and canonical digest of the JSON records pypto writes.
    "records": ("pypto.records",),
    # How pypto publishes files and directories (atomic write, directory swap, lock).
    "filesystem": ("pypto.filesystem",),
    # What making goldens and checking runs against them share: the golden files' format
    # and writer, and the tolerance comparison.  A deployed runtime needs no `golden`.
    "golden_format": ("pypto.golden_files", "pypto.comparison"),
    "ir": ("pypto.ir.*",),
    "platform": ("pypto.platform",),
    "sim": ("pypto.sim.*",),
    "backend": ("pypto.backend.*",),
    "golden": ("pypto.golden.*",),
    "runtime": ("pypto.runtime.*",),
    # The DSL frontend: the parser and what it reads (typing, tasks, control flow, ...).
    "frontend": ("pypto.language.*",),
    "passes": ("pypto.passes.*",),
    "codegen": ("pypto.codegen.*",),
    "toolchain": ("pypto.toolchain.*",),
    # The digest index of project files (spec files, pypto's sources) by their meaning:
    # the standard library and `toolchain.key`'s syntax digest.
    "index": ("pypto.spec.index",),
    # Reference execution on torch and per-pass validation (torch_codegen, validate_ir).
    "debug": ("pypto.debug.*",),
    # The compile entry points: the driver, `compile` (upstream's `ir.compile`) and the
    # artifact handle it returns.
    "compiler": ("pypto.compiler", "pypto.compiled"),
    # `pl`, the namespace users import: `pl.jit` kernels and `pl.program` templates compile
    # and run when called, so it sits above the compiler; the frontend sits below.
    "pl": ("pypto.language", "pypto.language.jit", "pypto.language.program_template"),
    "spec": ("pypto.spec.*",),
    # The five-step precision walk: builds, runs, compares, reads specs.
    "triage": ("pypto.debug.triage",),
    "scons": ("pypto.scons.*",),
    "tools": ("pypto.tools.*",),
}

MAY_IMPORT: dict[str, frozenset[str]] = {
    unit: frozenset(allowed.split()) for unit, allowed in {
        "pypto": "",
        "resources": "",
        "records": "",
        "filesystem": "",
        "ir": "",
        "golden_format": "filesystem ir records",
        "platform": "resources",
        "sim": "resources",
        "backend": "ir platform",
        "golden": "filesystem ir records golden_format",
        "runtime": "filesystem pypto ir platform resources records sim golden_format",
        "frontend": "ir",
        "passes": "ir backend platform",
        "codegen": "ir resources passes",
        "toolchain": "filesystem pypto ir platform resources records sim codegen runtime",
        "index": "filesystem toolchain",
        "debug": "ir platform backend golden frontend passes codegen",
        "compiler": "filesystem ir platform resources backend runtime frontend passes "
                    "codegen toolchain index debug",
        "pl": "ir platform runtime frontend compiler",
        "spec": "filesystem pypto ir platform resources records golden_format golden runtime "
                "toolchain index compiler",
        "triage": "pypto ir platform golden_format golden runtime frontend passes debug "
                  "compiler pl spec",
        "scons": "filesystem pypto ir platform resources golden runtime toolchain index "
                 "compiler spec",
        "tools": "pypto ir platform resources golden_format golden runtime frontend codegen "
                 "toolchain debug compiler spec triage",
    }.items()
}

# (importing module, imported module) -> why the import must stay where it is.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("pypto.ir", "pypto.compiler"):
        "upstream's public `ir.compile`: a lazy facade onto the compile layer",
    ("pypto.ir", "pypto.compiled"):
        "upstream's public `ir.CompiledProgram`: a lazy facade onto the compile layer",
    ("pypto.ir.pass_manager", "pypto.compiler"):
        "upstream's public `PassManager.run_passes`: a lazy facade onto the compile layer",
    ("pypto.ir", "pypto.language.parser"):
        "upstream's public `ir.deserialize`: a lazy facade onto the parser",
    ("pypto", "pypto.scons.tool"):
        "SCons finds the tool \"pypto\" as the package itself and calls its `generate`",
}


@dataclass(frozen=True)
class Import:
    """One import of a pypto module by a pypto module."""

    source: str  # the importing module
    target: str  # the imported module
    path: Path
    line: int
    lazy: bool  # inside a function

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


def modules(root: Path) -> dict[str, Path]:
    """Every module of the `pypto` package under `root` (a checkout), by name."""
    found = {}
    for path in sorted((root / "pypto").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def unit_of(module: str) -> str | None:
    """The unit `module` belongs to: the most specific pattern that matches it."""
    best, best_len = None, -1
    for unit, patterns in UNITS.items():
        for pattern in patterns:
            prefix = pattern.removesuffix(".*")
            exact = pattern == prefix
            if module == prefix or (not exact and module.startswith(prefix + ".")):
                length = len(prefix) + (1 if exact else 0)  # an exact name beats "pkg.*"
                if length > best_len:
                    best, best_len = unit, length
    return best


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, lazy: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under `node`, with whether it runs inside a function; the bodies of
    `if TYPE_CHECKING:` are left out."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _type_checking_only(child):
            for stmt in child.orelse:
                yield stmt, lazy
                yield from _walk(stmt, lazy)
            continue
        inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield child, lazy
        yield from _walk(child, inner)


def imports(root: Path, known: dict[str, Path] | None = None) -> list[Import]:
    """Every import of a pypto module in the `pypto` package under `root`."""
    known = modules(root) if known is None else known
    found = []
    for source, path in known.items():
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        tree = _parse(path.read_text())
        named = {id(c) for c in _module_names(tree)}
        for node, lazy in _walk(tree):
            for target in _targets(node, package, known, named):
                found.append(Import(source, target, path, node.lineno, lazy))
    return found


@functools.cache
def _parse(text: str) -> ast.Module:
    """The syntax tree of a module's text (a planted copy of the package re-reads the
    same texts but one)."""
    return ast.parse(text)


def _module_names(tree: ast.Module) -> Iterator[ast.AST]:
    """The string constants that may name a module to import: the argument of an
    `import_module` call and, in a module that makes one, every string in a
    module-level table."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
             and "import_module" in (getattr(node.func, "attr", None),
                                     getattr(node.func, "id", None))]
    if not calls:
        return
    for call in calls:
        yield call.args[0]
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            yield from ast.walk(stmt.value)


def _targets(node: ast.AST, package: str, known: dict[str, Path],
             named: set[int]) -> Iterable[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if _is_pypto(alias.name)]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        if not _is_pypto(module):
            return []
        # `from pkg import sub` imports the submodule when there is one.
        subs = {f"{module}.{alias.name}" for alias in node.names}
        return sorted(subs & known.keys()) + ([module] if subs - known.keys() else [])
    if id(node) in named and isinstance(node, ast.Constant) and node.value in known:
        return [node.value]
    return []


def _is_pypto(name: str) -> bool:
    return name == "pypto" or name.startswith("pypto.")


def layer_violations(root: Path) -> list[str]:
    """Each import in the `pypto` package under `root` that `MAY_IMPORT` does not allow,
    as `file:line: message`."""
    found = []
    for imp in imports(root):
        source, target = unit_of(imp.source), unit_of(imp.target)
        if source is None or target is None or source == target:
            continue
        if (imp.source, imp.target) in EXCEPTIONS:
            if not imp.lazy:
                found.append(f"{imp.where(root)}: {imp.source} imports {imp.target} at module "
                             "level; the declared exception allows it only inside a function")
            continue
        if target not in MAY_IMPORT[source]:
            allowed = " ".join(sorted(MAY_IMPORT[source])) or "nothing"
            found.append(f"{imp.where(root)}: {imp.source} ({source}) imports {imp.target} "
                         f"({target}); {source} may import: {allowed}")
    return found


def unplaced_modules(root: Path) -> list[str]:
    """Modules of the package that no unit holds."""
    return sorted(m for m in modules(root) if unit_of(m) is None)


def unused_exceptions(root: Path) -> list[tuple[str, str]]:
    """Declared exceptions no import needs any more."""
    used = {(imp.source, imp.target) for imp in imports(root)}
    return sorted(set(EXCEPTIONS) - used)


def unit_cycle() -> list[str] | None:
    """A cycle in `MAY_IMPORT` itself, or None: the allowed imports must form layers."""
    return _cycle({u: sorted(allowed) for u, allowed in MAY_IMPORT.items()})


def module_cycles(root: Path, package: str) -> list[str]:
    """The import cycles among the modules of `package` (each as `a -> b -> a`, with the
    file:line of every edge)."""
    known = modules(root)
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports(root, known):
        if _inside(imp.source, package) and _inside(imp.target, package) \
                and imp.source != imp.target:
            edges.setdefault(imp.source, {}).setdefault(imp.target, imp)
    found = []
    for component in _strongly_connected({m: sorted(e) for m, e in edges.items()}):
        if len(component) < 2:
            continue
        members = set(component)
        graph = {m: [t for t in sorted(edges.get(m, {})) if t in members] for m in component}
        cycle = _cycle(graph)
        steps = [f"{a} -> {b} ({edges[a][b].where(root)})" for a, b in itertools.pairwise(cycle)]
        found.append("; ".join(steps))
    return found


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One cycle of `graph` as the list of its nodes, first repeated last; or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of `graph`."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components
