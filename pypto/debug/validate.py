"""Per-pass IR validation: run every pass dump on torch and find the first that diverges.

Statement order in a dump is program order, so running a dump's torch translation
sequentially gives what that IR means.  The first dump whose outputs leave tolerance
names the pass that changed the program's meaning; its IR diff against the previous
dump shows what it did.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from ..ir.nodes import Program
from ..ir.types import Direction, TensorType
from ..passes.manager import pass_dumps
from .torch_codegen import load_entry, torch_codegen


@dataclass(frozen=True)
class DumpResult:
    file: str
    max_abs_diff: float
    within_tolerance: bool


def _outputs(program: Program, expected) -> dict[int, torch.Tensor]:
    """Expected tensors keyed by entry parameter index."""
    params = program.entry_function.params
    names = [p.var.name for p in params]
    if isinstance(expected, torch.Tensor):
        expected = [expected]
    if isinstance(expected, dict):
        unknown = sorted(set(expected) - set(names))
        if unknown:
            raise ValueError(f"expected names {unknown} are not parameters of "
                             f"`{program.entry}` ({', '.join(names)})")
        return {names.index(k): v for k, v in expected.items()}
    outs = [i for i, p in enumerate(params)
            if isinstance(p.var.type, TensorType) and p.direction is not Direction.In]
    if len(outs) != len(expected):
        raise ValueError(f"{len(expected)} expected tensors for {len(outs)} outputs of "
                         f"`{program.entry}`; pass a dict keyed by parameter name")
    return dict(zip(outs, expected, strict=True))


def _args(program: Program, tensors) -> list:
    names = [p.var.name for p in program.entry_function.params]
    if isinstance(tensors, dict):
        missing = [n for n in names if n not in tensors]
        if missing:
            raise ValueError(f"no value for parameters {missing} of `{program.entry}`")
        tensors = [tensors[n] for n in names]
    if len(tensors) != len(names):
        raise ValueError(f"`{program.entry}` takes {len(names)} arguments, got {len(tensors)}")
    # Every dump runs on fresh copies: outputs start as the device would see them.
    return [t.clone() if isinstance(t, torch.Tensor) else t for t in tensors]


def max_abs_diff(actual: torch.Tensor, expected: torch.Tensor) -> float:
    a, e = actual.double(), expected.double()
    both_nan = torch.isnan(a) & torch.isnan(e)
    diff = torch.where(both_nan, torch.zeros_like(a), (a - e).abs())
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, math.inf), diff)
    return float(diff.max()) if diff.numel() else 0.0


def _close(actual, expected, rtol, atol) -> bool:
    a, e = actual.double(), expected.double()
    both_nan = torch.isnan(a) & torch.isnan(e)
    ok = (a - e).abs() <= atol + rtol * e.abs()
    return bool((ok | both_nan).all())


def validate_pass_dumps(dump_dir, tensors, expected, *, rtol: float = 5e-2,
                        atol: float = 5e-2, out=print, backend=None) -> list[DumpResult]:
    """Run every `NN_*.py` dump in `dump_dir` (or the one IR file it names) in order on
    copies of `tensors`; print
    `max_abs_diff` per dump; raise AssertionError naming the first dump that leaves
    tolerance, with its IR diff against the previous dump.  `backend`: the target's facts
    (pypto.platform.Backend), which a program with cross-block barriers needs."""
    from ..language.parser import parse_program

    files = [Path(dump_dir)] if Path(dump_dir).is_file() else pass_dumps(dump_dir)
    if not files:
        raise FileNotFoundError(f"no pass dumps in {dump_dir}: compile with dump_passes=True")
    results: list[DumpResult] = []
    previous = None
    for path in files:
        text = path.read_text()
        program = parse_program(text, str(path))
        entry = load_entry(torch_codegen(program, backend=backend), program.entry)
        args = _args(program, tensors)
        wanted = _outputs(program, expected)
        entry(*args)
        worst = max((max_abs_diff(args[i], e) for i, e in wanted.items()), default=0.0)
        ok = all(_close(args[i], e, rtol, atol) for i, e in wanted.items())
        out(f"{path.name}: max_abs_diff={worst:.3e} {'ok' if ok else 'OUT OF TOLERANCE'}")
        results.append(DumpResult(path.name, worst, ok))
        if not ok:
            raise AssertionError(_report(path, text, previous, worst, rtol, atol))
        previous = (path, text)
    return results


def _report(path: Path, text: str, previous, worst: float, rtol: float, atol: float) -> str:
    if previous is None:
        return (f"{path.name} already leaves tolerance (max_abs_diff={worst:.3e}, rtol={rtol:g}, "
                f"atol={atol:g}): the program as parsed disagrees with the expected outputs, "
                "before any pass ran; check the kernel and the golden (steps 1 and 2)")
    prev_path, prev_text = previous
    diff = "".join(difflib.unified_diff(
        prev_text.splitlines(keepends=True), text.splitlines(keepends=True),
        fromfile=prev_path.name, tofile=path.name))
    return (f"{path.name} is the first dump that leaves tolerance (max_abs_diff={worst:.3e}, "
            f"rtol={rtol:g}, atol={atol:g}); {prev_path.name} was within it. The pass that "
            f"produced {path.name} changed the program's meaning. IR diff:\n{diff}")


def validate_pass_ir_codegen_results(path, tensors, expected, *, rtol: float = 5e-2,
                                     atol: float = 5e-2) -> list[DumpResult]:
    """Upstream's name: `validate_pass_dumps` of a pass dump directory or one IR file, for
    the backend `pypto.backend.set_backend_type` configured (none: the target's facts are
    not needed unless the program has cross-block barriers)."""
    from ..backend import get_backend_type, is_backend_configured
    from ..platform import get_backend

    backend = get_backend(get_backend_type().name) if is_backend_configured() else None
    return validate_pass_dumps(path, tensors, expected, rtol=rtol, atol=atol, backend=backend)
