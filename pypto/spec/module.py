"""Importing a spec module and collecting its `SPECS`, with errors at the user's line."""

from __future__ import annotations

import importlib
import sys
import threading
import traceback
from pathlib import Path
from types import ModuleType

from pypto.ir.errors import PyptoError, Span, syntax_error_line
from pypto.spec.declare import Kernel, SpecError

_LOCK = threading.Lock()  # SCons runs Python actions on worker threads (-j)


def module_name(path: Path, top: Path) -> str:
    """The dotted name a spec file is imported under: its path relative to the project top
    (`kernels/elementwise.py` → `kernels.elementwise`), so specs import helpers as
    `from kernels._shapes import ...` or `from ._shapes import ...`."""
    try:
        rel = path.resolve().relative_to(top.resolve()).with_suffix("")
    except ValueError:
        raise SpecError(f"{path}: a spec must lie inside the project ({top})") from None
    if not all(part.isidentifier() for part in rel.parts):
        raise SpecError(f"{path}: a spec's path must be importable: {'.'.join(rel.parts)!r} "
                        "is not a dotted Python name")
    return ".".join(rel.parts)


def load_spec_module(path: str | Path, top: str | Path) -> ModuleType:
    """Imports the spec file `path` with the project `top` first on sys.path."""
    path, top = Path(path).resolve(), Path(top).resolve()
    name = module_name(path, top)
    with _LOCK:
        existing = sys.modules.get(name)
        if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() == path:
            return existing
        _forget_other_project(name.split(".")[0], top)
        if sys.path[:1] != [str(top)]:
            # First, not merely present: the top of another project read earlier in this
            # process (inserted first) would otherwise shadow this project's package.
            if str(top) in sys.path:
                sys.path.remove(str(top))
            sys.path.insert(0, str(top))
        importlib.invalidate_caches()
        try:
            return importlib.import_module(name)
        except PyptoError:
            raise  # already names the user's file and line
        except SyntaxError as exc:
            raise SpecError(f"invalid Python: {exc.msg}", Span(exc.filename or str(path),
                                                               syntax_error_line(exc))) from None
        except Exception as exc:  # any error while running the user's module
            raise SpecError(
                f"running the spec module failed: {type(exc).__name__}: {exc}",
                _user_frame(exc, top, path),
            ) from exc


def specs_of(path: str | Path, top: str | Path) -> list[Kernel]:
    """The `SPECS` list of the spec module at `path`, checked."""
    module = load_spec_module(path, top)
    specs = getattr(module, "SPECS", None)
    where = Span(str(path), 1)
    if specs is None:
        raise SpecError(
            "the module declares no SPECS", where,
            hint="end it with `SPECS = [spec.Kernel(...), ...]`, or name it with a leading "
            "underscore if it is a helper module rather than a spec",
        )
    if not isinstance(specs, (list, tuple)) or not all(isinstance(s, Kernel) for s in specs):
        raise SpecError("SPECS must be a list of spec.Kernel(...)", where)
    names = [s.name for s in specs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SpecError(f"SPECS declares the kernels {repeated} more than once", where)
    return list(specs)


def _forget_other_project(package: str, top: Path) -> None:
    """Drops a same-named package imported from another directory (a test that builds
    several copies of a library in one process), so this project's modules load."""
    loaded = sys.modules.get(package)
    if loaded is None:
        return
    locations = [Path(p).resolve() for p in getattr(loaded, "__path__", [])]
    file = getattr(loaded, "__file__", None)
    if file:
        locations.append(Path(file).resolve().parent)
    if any(loc == top or top in loc.parents for loc in locations):
        return
    for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
        del sys.modules[name]


def _user_frame(exc: BaseException, top: Path, path: Path) -> Span:
    """The innermost frame of the traceback that lies in the user's project."""
    package = Path(__file__).resolve().parents[1]
    best = Span(str(path), 1)
    for frame in traceback.extract_tb(exc.__traceback__):
        file = Path(frame.filename).resolve()
        if top in file.parents and package not in file.parents:
            best = Span(frame.filename, frame.lineno or 0)
    return best
