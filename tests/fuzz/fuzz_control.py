"""Random control-flow programs as DSL source text, with their reference semantics.

A *case* is one generated program over tensors of its own (fuzz_cases.py): a loop nest
over tiles, a loop-carried accumulation, a chain of tile views, a task graph.  A
`Program` packs several cases into one module so that one build checks many of them
(each build costs seconds of g++, each case milliseconds to run):

- the tile cases (fuzz_tile_cases.py: "tiles", "carry", "window", "matmul") are sections
  of one `@pl.jit.incore` kernel, `fuzz_tiles`, or of one `pl.at` block;
- the task cases (fuzz_task_cases.py: "chain", "grid", "reuse", "block", "update",
  "scan", "deps", "splitk") are statements of the `@pl.jit` entry `fuzz_kernel`, with
  `@pl.jit.incore` kernels of their own.

Casts in every mode come with the expressions (fuzz_programs.py).  The module protocol is
the one of fuzz_programs: `programs(...)` (a hypothesis strategy), `render`,
`parameters`, `make_inputs`, `evaluate`, `tolerances`; the program carries its run's
`workers`, `schedule_seed` and `detect_races`.  The references use fuzz_reference (plain
torch, no pypto).
"""

from __future__ import annotations

from dataclasses import dataclass

import fuzz_programs as fp
import fuzz_reference as ref
import fuzz_task_cases as tasks
import fuzz_tile_cases as tiles
import torch
from fuzz_cases import AT, Case, Tensor, annotation, kernel_source
from hypothesis import assume
from hypothesis import strategies as st


@dataclass
class Program:
    """A batch of cases, built and run as one module."""

    cases: list[Case]
    seed: int
    workers: int | None = None
    schedule_seed: int | None = None
    detect_races: bool = False
    tiles_in: str = "kernel"  # the tile cases' section: "kernel" (fuzz_tiles) or "block" (pl.at)
    kind: str = "control"


FAMILIES = {
    "tiles": tiles.tiles_case, "carry": tiles.carry_case, "window": tiles.window_case,
    "matmul": tiles.matmul_case, "chain": tasks.chain_case, "grid": tasks.grid_case,
    "reuse": tasks.reuse_case, "block": tasks.block_case, "update": tasks.update_case,
    "scan": tasks.scan_case, "deps": tasks.deps_case, "splitk": tasks.splitk_case,
    "piped": tasks.piped_case,
}
# Draw weights: task cases build a kernel per task body, tile cases share one kernel.
WEIGHTS = {"tiles": 5, "carry": 4, "window": 3, "matmul": 1, "chain": 1, "grid": 1, "reuse": 1,
           "block": 1, "update": 1, "scan": 1, "deps": 1, "splitk": 1, "piped": 1}


@st.composite
def programs(draw, cases: tuple[int, int] = (20, 30), families=tuple(FAMILIES)) -> Program:
    """A batch of between cases[0] and cases[1] cases of the given families."""
    pool = [f for f in families for _ in range(WEIGHTS[f])]
    count = draw(st.integers(*cases))
    drawn = [draw(FAMILIES[draw(st.sampled_from(pool))](f"c{k}")) for k in range(count)]
    # Hypothesis starts from the simplest example, every case alike: a batch checks
    # distinct programs only.
    assume(len({case_text(case) for case in drawn}) == count)
    schedule_seed = draw(st.sampled_from((None, 0, 1, 7, 12345)))
    return Program(
        drawn,
        seed=draw(st.integers(0, 2**31 - 1)),
        workers=draw(st.sampled_from((None, 1, 2, 4))),
        schedule_seed=schedule_seed,
        # The race detector runs on the seeded (Python) scheduler.
        detect_races=schedule_seed is not None and draw(st.booleans()),
        tiles_in=draw(st.sampled_from(("kernel", "kernel", "block"))),
    )


def case_text(case: Case) -> str:
    """A case's source and signature without its name: equal for equal programs."""
    text = "\n".join(case.functions + case.kernel + case.orchestration
                     + [f"{t.shape} {t.dtype} {t.role} {t.values}" for t in case.tensors])
    return text.replace(f"{case.name}_", "")


def tensors(program: Program) -> list[Tensor]:
    return [t for case in program.cases for t in case.tensors]


def parameters(program: Program) -> list[tuple[str, tuple[int, int], str, bool]]:
    """(name, shape, dtype, is_output) of every parameter of `fuzz_kernel`, in order."""
    return [(t.name, t.shape, t.dtype, t.role != "in") for t in tensors(program)]


def make_inputs(program: Program) -> dict[str, torch.Tensor]:
    """Seeded values of every input and of every InOut tensor (its contents before)."""
    g = torch.Generator().manual_seed(program.seed)
    out = {}
    for t in tensors(program):
        if t.role == "out":
            continue
        if t.values == "small":
            values = torch.randint(-8, 9, t.shape, generator=g, dtype=torch.int64)
            out[t.name] = values.to(ref.TORCH[t.dtype])
        elif t.values.startswith("const:"):
            out[t.name] = torch.full(t.shape, int(t.values[6:]), dtype=ref.TORCH[t.dtype])
        else:
            out[t.name] = fp.random_values(g, t.shape, t.dtype)
    return out


def evaluate(program: Program, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every output's expected contents."""
    expected = {}
    for case in program.cases:
        expected.update(case.reference(inputs))
    return expected


def tolerances(program: Program) -> dict[str, int]:
    return {name: tol for case in program.cases for name, tol in case.tolerance.items()}


def render(program: Program) -> str:
    """The batch as a Python module defining `fuzz_kernel` (and its kernels)."""
    parts = [fp.HEADER.rstrip("\n") + "\n"]
    for case in program.cases:
        parts += case.functions
    tile_cases = [c for c in program.cases if c.kernel]
    call = []
    body = [line for c in tile_cases for line in c.kernel]
    if tile_cases and program.tiles_in == "block":
        call = [f'{AT}, name_hint="tiles"):'] + [f"    {line}" for line in body]
    elif tile_cases:
        params = [t for c in tile_cases for t in c.tensors]
        outs = [t.name for t in params if t.role != "in"]
        parts.append(kernel_source("fuzz_tiles", [(t.name, t) for t in params], body, outs))
        call = [f"{', '.join(outs)} = fuzz_tiles({', '.join(t.name for t in params)})"]
    everything = tensors(program)
    sig = ",\n        ".join(f"{t.name}: {annotation(t)}" for t in everything)
    lines = [f"@pl.jit\ndef fuzz_kernel(\n        {sig}):"]
    lines += [f"    {line}" for line in call]
    lines += [f"    {line}" for c in program.cases for line in c.orchestration]
    lines.append(f"    return {', '.join(t.name for t in everything if t.role != 'in')}")
    parts.append("\n".join(lines) + "\n")
    return "\n\n".join(parts)
