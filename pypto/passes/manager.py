"""PassManager and PassContext: passes are small classes; instruments run around them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, TypeVar

from ..ir.nodes import Program

if TYPE_CHECKING:
    from ..platform import Backend


class Pass:
    """A program-to-program transformation.  Subclasses set `name` and implement `run`;
    `produces` lists the IR properties (passes/properties.py) the pass establishes."""

    name: str = ""
    produces: tuple = ()

    def run(self, program: Program, ctx: PassContext) -> Program:
        raise NotImplementedError


class PassInstrument:
    """Hooks around every pass (dumping, verification, profiling): never inside a pass."""

    def before_pipeline(self, program: Program, ctx: PassContext) -> None:
        pass

    def before_pass(self, index: int, pass_: Pass, program: Program, ctx: PassContext) -> None:
        pass

    def after_pass(self, index: int, pass_: Pass, program: Program, ctx: PassContext) -> None:
        pass


@dataclass
class PassContext:
    """What passes may consult: the backend's facts and the instruments to run."""

    backend: Backend
    instruments: list[PassInstrument] = field(default_factory=list)


class PassManager:
    """Runs an ordered list of passes, calling instruments around each."""

    def __init__(self, passes: list[Pass]):
        self.passes = list(passes)

    @property
    def identity(self) -> str:
        """Names the pipeline for content keys: a different pass list is a different build."""
        return ",".join(p.name for p in self.passes)

    def run(self, program: Program, ctx: PassContext) -> Program:
        for inst in ctx.instruments:
            inst.before_pipeline(program, ctx)
        for index, p in enumerate(self.passes, start=1):
            for inst in ctx.instruments:
                inst.before_pass(index, p, program, ctx)
            program = p.run(program, ctx)
            for inst in ctx.instruments:
                inst.after_pass(index, p, program, ctx)
        return program


class FunctionPass(Pass):
    """A pass applied to every function of the kinds listed in `applies_to`."""

    applies_to: tuple = ()

    def run(self, program: Program, ctx: PassContext) -> Program:
        return program.with_functions(
            self.run_function(f, ctx) if f.func_type in self.applies_to else f
            for f in program.functions
        )

    def run_function(self, fn, ctx: PassContext):
        raise NotImplementedError


DUMP_DIR = "passes_dump"
"""Where an artifact keeps its pass dumps."""
FRONTEND_DUMP = "00_frontend.py"
"""The dump of the program as parsed, before any pass."""


def dump_name(index: int, pass_name: str) -> str:
    """The dump written after the `index`-th pass (from 1) of a pipeline:
    `NN_after_<Pass>.py`, so that the dumps sort in pipeline order."""
    return f"{index:02d}_after_{pass_name}.py"


def dumped_pass(file_name: str) -> str | None:
    """The pass a dump (a file name) was written after; None for the frontend's dump and
    for any other file."""
    number, after, rest = file_name.partition("_after_")
    if not (after and number.isdigit() and rest.endswith(".py")):
        return None
    return rest.removesuffix(".py")


_Dump = TypeVar("_Dump", str, Path)


def dump_of(files: Iterable[_Dump], pass_name: str) -> _Dump:
    """Of `files` (names or paths of dumps), the one written after the pass `pass_name`.
    Name a pass, not its position: a pass added to the pipeline renumbers the dumps."""
    files = list(files)
    for file in files:
        if dumped_pass(PurePath(file).name) == pass_name:
            return file
    names = sorted(PurePath(f).name for f in files)
    raise KeyError(f"no dump after a pass named {pass_name!r} among {names}")


def pass_dumps(dump_dir: str | os.PathLike) -> list[Path]:
    """The dumps in `dump_dir` (its `NN_*.py` files) in pipeline order: the frontend's,
    then one per pass."""
    return sorted(Path(dump_dir).glob("[0-9][0-9]_*.py"))


class DumpInstrument(PassInstrument):
    """Records the frontend's dump and one after every pass (`dump_name`), written with
    the artifact under `DUMP_DIR`.

    `concise` leaves out placement (memory spaces, addresses); every dump parses back.
    """

    def __init__(self, concise: bool = False):
        self.concise = concise
        self.files: dict[str, str] = {}

    def before_pipeline(self, program, ctx):
        self.files[f"{DUMP_DIR}/{FRONTEND_DUMP}"] = program.as_python(concise=self.concise)

    def after_pass(self, index, pass_, program, ctx):
        name = f"{DUMP_DIR}/{dump_name(index, pass_.name)}"
        self.files[name] = program.as_python(concise=self.concise)


class ProfilingInstrument(PassInstrument):
    """Times every pass; `files` holds `report/pipeline_profile.{txt,json}`."""

    def __init__(self):
        self.times: list[tuple[str, int]] = []
        self._start = 0

    def before_pass(self, index, pass_, program, ctx):
        self._start = time.perf_counter_ns()

    def after_pass(self, index, pass_, program, ctx):
        self.times.append((pass_.name, time.perf_counter_ns() - self._start))

    @property
    def files(self) -> dict[str, str]:
        total = sum(t for _, t in self.times) or 1
        rows = [{"index": i, "pass": name, "time_us": round(t / 1000, 1)}
                for i, (name, t) in enumerate(self.times, start=1)]
        lines = [f"{'#':>2}  {'pass':<24} {'time (us)':>10} {'share':>6}"]
        for r, (_, t) in zip(rows, self.times, strict=True):
            lines.append(f"{r['index']:>2}  {r['pass']:<24} {r['time_us']:>10.1f} "
                         f"{100 * t / total:>5.1f}%")
        lines.append(f"    {'total':<24} {total / 1000:>10.1f}")
        return {
            "report/pipeline_profile.txt": "\n".join(lines) + "\n",
            "report/pipeline_profile.json": json.dumps({"passes": rows}, indent=2) + "\n",
        }
