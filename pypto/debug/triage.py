"""Triage: walk the five steps of the precision workflow for one kernel and its golden.

`triage(kernel, golden)` runs the kernel on the golden's inputs and, when an output is
out of tolerance, asks the questions of docs/precision-workflow.md in order, stopping at
the first step whose answer explains the difference:

1. Is the golden's tolerance one the comparison's dtype can honour (the coarser of the
   output's and the expected tensor's: `comparison_dtype`)?  (`GoldenToleranceTooTight`;
   explains it when the run passes at a tolerance of a few roundings of that dtype.)
2. Do runs with different `schedule_seed`s differ?  Last-bit variation with an error of
   the same size is accumulation order (split-K, atomic adds): expected.  Larger
   variation, or a race `detect_races=True` reports, is an ordering bug: triage goes
   straight to step 5, since pass dumps cannot explain it.
3. Does a recompile at ROUNDTRIP verification with every diagnostic on report a
   verification error, or a warning that explains wrong values (`OutParamWriteDropped`,
   `InputParamWritten`)?
4. Does `validate_pass_dumps` find a pass dump that leaves tolerance?  It names the pass.
5. Dumps (`enable_dump_args=2`): for an ordering bug, the first task whose tensors differ
   between a good and a bad seed; otherwise the first task whose device results differ
   from the final IR run on torch, task by task.

`TriageReport.exit_code` is the explaining step (1-5), 0 when the kernel matches its
golden on every run, 6 when no step explains the difference.  `pypto triage` is the CLI.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..comparison import TensorComparison, Tolerance, compare_tensor
from ..ir.diagnostics import (
    DiagnosticCheck,
    DiagnosticPhase,
    comparison_dtype,
    tolerance_too_tight,
    unit_roundoff,
)
from ..ir.dtypes import from_torch
from ..ir.errors import PyptoError, VerificationError
from ..passes.manager import DUMP_DIR, dumped_pass, pass_dumps
from ..platform import default_platform, get_platform
from ..runtime.errors import RaceError
from ..runtime.memory import poison_

STEPS = {
    1: "golden tolerance vs output precision",
    2: "run-to-run differences (schedule seeds, race detector)",
    3: "compiler verification (ROUNDTRIP) and diagnostics",
    4: "pass bisection (validate_ir on every pass dump)",
    5: "tensor dumps of the first divergent task",
}
EXIT_MATCHES = 0
"""Exit code: every run matched the golden; nothing to explain."""
EXIT_UNEXPLAINED = 6
"""Exit code: no step explained the difference."""

HONEST_ROUNDINGS = 4
"""Step 1's tolerance: this many unit roundoffs of the least precise float (2 ulps)."""
LASTBIT_ULPS = 16
"""Step 2: run-to-run variation within this many ulps of the output's scale is last-bit."""
EXPLAINING_CHECKS = frozenset({DiagnosticCheck.OutParamWriteDropped,
                               DiagnosticCheck.InputParamWritten})
"""Step 3: warnings that by themselves explain wrong output values."""
DEFAULT_TOLERANCE = Tolerance(1e-5, 1e-5, "RunConfig rtol/atol defaults")


@dataclass
class Finding:
    """What one step found; `explains` stops the walk there."""

    step: int
    explains: bool
    lines: list[str]

    @property
    def title(self) -> str:
        return STEPS[self.step]


@dataclass
class TriageReport:
    """The steps walked, in order, and the one that explains the difference (if any)."""

    kernel: str
    platform: str
    findings: list[Finding] = field(default_factory=list)
    matches: bool = False
    work_dir: Path | None = None

    @property
    def step(self) -> int | None:
        """The step that explains the difference, if one does."""
        return next((f.step for f in self.findings if f.explains), None)

    @property
    def exit_code(self) -> int:
        if self.matches:
            return EXIT_MATCHES
        return self.step if self.step is not None else EXIT_UNEXPLAINED

    def finding(self, step: int) -> Finding | None:
        return next((f for f in self.findings if f.step == step), None)


@dataclass
class _Case:
    """The kernel, its arguments in parameter order and what the golden expects."""

    kernel: Any
    names: list[str]
    args: list[Any]
    expected: dict[str, torch.Tensor]
    tolerances: dict[str, Tolerance]
    platform: str

    def fresh_args(self) -> list[Any]:
        return [a.clone() if isinstance(a, torch.Tensor) else a for a in self.args]

    def outputs(self, args: list[Any]) -> dict[str, torch.Tensor]:
        return {n: a for n, a in zip(self.names, args, strict=True) if n in self.expected}


# ----------------------------------------------------------------------------- entry points


def triage(kernel: Any, golden: str | os.PathLike, *, inputs: Mapping[str, Any] | None = None,
           platform: str | None = None, rtol: float | None = None, atol: float | None = None,
           seeds: int = 8, work_dir: str | os.PathLike | None = None,
           out: Callable[[str], None] = print) -> TriageReport:
    """Walks the five steps for `kernel` (an `@pl.jit` / `@pl.jit.incore` function) against
    the golden directory `golden` (`write_golden`); prints each finding with `out`.

    `platform` None is `$PYPTO_PLATFORM`, else a2a3sim; `inputs` override or complete
    the golden's recorded inputs by parameter name;
    `rtol`/`atol` replace the golden's tolerance (the check you ran); `seeds` is the
    number of schedule seeds step 2 tries; dumps go under `work_dir` (default: a new
    temporary directory, named in the report).
    """
    from ..runtime.golden import GoldenRecord

    record = GoldenRecord.read(golden)
    given = dict(record.load_inputs())
    given.update(inputs or {})
    expected = record.load_expected()
    names = _parameters(kernel)
    args = [_argument(kernel, name, given, expected) for name in names]
    stray = sorted(set(expected) - set(names))
    if stray:
        raise ValueError(f"{record.path}: records outputs {stray}, which are not parameters "
                         f"of `{kernel.__name__}` ({', '.join(names)})")
    tolerances = {}
    for name in expected:
        base = record.tolerances.get(name, DEFAULT_TOLERANCE)
        tolerances[name] = Tolerance(base.rtol if rtol is None else rtol,
                                     base.atol if atol is None else atol, base.reason)
    case = _Case(kernel, names, args, expected, tolerances,
                 default_platform() if platform is None else platform)
    directory = Path(work_dir) if work_dir is not None else Path(
        tempfile.mkdtemp(prefix="pypto-triage-"))
    return _Triage(case, seeds, directory, out).walk(f"golden {record.directory}")


def triage_spec(name: str, *, top: str | os.PathLike | None = None,
                golden: str | os.PathLike | None = None, platform: str | None = None,
                work_dir: str | os.PathLike | None = None, **options: Any) -> TriageReport:
    """`triage` for a kernel of the library under `top` (default: the current directory):
    `name` is `kernel` or `kernel/variant` (default: the first variant).  Without `golden`
    the spec's golden is generated into the work directory first."""
    from ..golden import record_golden

    platform = default_platform() if platform is None else platform
    spec, variant = find_spec(name, top)
    if spec.platforms is not None and platform not in spec.platforms:
        raise ValueError(f"spec {spec.name!r} is not built for {platform}; its platforms: "
                         f"{', '.join(spec.platforms)}")
    directory = Path(work_dir) if work_dir is not None else Path(
        tempfile.mkdtemp(prefix="pypto-triage-"))
    if golden is None:
        golden = record_golden(spec.golden_case(variant), directory / "golden" / spec.name /
                               variant)
    return triage(spec.kernel, golden, platform=platform, work_dir=directory, **options)


def find_spec(name: str, top: str | os.PathLike | None = None) -> tuple[Any, str]:
    """The spec `kernel` or `kernel/variant` (also `module.kernel`) under `<top>/kernels/`,
    and the variant (default: its first)."""
    from ..spec.module import specs_of

    top = Path(top) if top is not None else Path.cwd()
    kernel, _, variant = name.replace(":", "/").partition("/")
    module, _, kernel = kernel.rpartition(".")
    files = sorted(p for p in (top / "kernels").glob("*.py") if not p.name.startswith("_"))
    if module:
        files = [p for p in files if p.stem == module]
    known = []
    for path in files:
        for spec in specs_of(path, top):
            known.append(spec.name)
            if spec.name == kernel:
                if variant and variant not in spec.variants:
                    raise ValueError(f"spec {kernel!r} has no variant {variant!r}; its "
                                     f"variants: {', '.join(spec.variants)}")
                return spec, variant or next(iter(spec.variants))
    raise ValueError(f"no kernel spec {name!r} under {top / 'kernels'}"
                     + (f"; the specs there: {', '.join(sorted(known))}" if known else ""))


def load_callable(path: str | os.PathLike, name: str) -> Any:
    """The `@pl.jit` kernel called `name` in the Python file `path` (imported as a module)."""
    import importlib.util
    import sys

    path = Path(path).resolve()
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    module_name = f"_pypto_triage_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except PyptoError:
        raise  # a DSL error names the user's file and line already
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of the user's module
        del sys.modules[module_name]
        raise ValueError(f"{path}:{_failing_line(exc, path)}: importing it failed: "
                         f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}") from None
    kernel = getattr(module, name, None)
    if not getattr(kernel, "__pypto_kernel__", False):
        raise ValueError(f"{path}: `{name}` is not a @pl.jit or @pl.jit.incore kernel")
    return kernel


def _failing_line(exc: BaseException, path: Path) -> int | str:
    """The line of `path` where `exc` was raised: a syntax error's own, else the innermost
    traceback frame in that file ("?" when no frame is)."""
    if isinstance(exc, SyntaxError) and exc.filename == str(path) and exc.lineno:
        return exc.lineno
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if frame.filename == str(path)]
    return lines[-1] if lines else "?"


def _parameters(kernel: Any) -> list[str]:
    if not getattr(kernel, "__pypto_kernel__", False):
        raise TypeError(f"triage takes a @pl.jit or @pl.jit.incore kernel, got {kernel!r}")
    return list(inspect.signature(kernel.fn).parameters)


def _argument(kernel: Any, name: str, given: Mapping[str, Any], expected: Mapping[str, Any]):
    """The value of parameter `name`: the golden's input, else an output buffer holding the
    device's poison (so a kernel that reads an output before writing it shows up)."""
    if name in given:
        value = given[name]
        return value.clone() if isinstance(value, torch.Tensor) else value
    declared = _declared_tensor(kernel, name)
    if declared is not None:
        shape, dtype = declared
        return poison_(torch.empty(dtype.torch_shape(shape), dtype=dtype.to_torch()))
    if name in expected and expected[name].dtype != torch.float64:
        return poison_(torch.empty_like(expected[name]))
    raise ValueError(f"no value for parameter `{name}` of `{kernel.__name__}`: the golden "
                     "records no such input, and its shape and dtype are not declared; pass "
                     "it with inputs=")


def _declared_tensor(kernel: Any, name: str):
    """(shape, dtype) of a parameter annotated with a static `pl.Tensor[[...], dtype]`."""
    from ..ir.types import TensorType
    from ..language.parser import FunctionParser
    from ..language.typing import DirectedType

    fndef, info = kernel._parsed_source()
    parser = FunctionParser(info, kernel._namespace(), kernel.func_type, None)
    for a in fndef.args.args:
        if a.arg != name or a.annotation is None:
            continue
        annotation = parser.static(a.annotation)
        if isinstance(annotation, DirectedType):
            annotation = annotation.type
        if isinstance(annotation, TensorType):
            return tuple(annotation.shape), annotation.dtype
    return None


# ----------------------------------------------------------------------------- the walk


class _Triage:
    def __init__(self, case: _Case, seeds: int, work_dir: Path, out: Callable[[str], None]):
        self.case = case
        self.seeds = max(2, seeds)
        self.work_dir = work_dir
        self.out = out
        self.report = TriageReport(case.kernel.__name__, case.platform, work_dir=work_dir)
        self.compiled = None
        self.runs: dict[int, dict[str, torch.Tensor]] = {}
        self.race: RaceError | None = None

    def walk(self, golden: str) -> TriageReport:
        case = self.case
        self.out(f"pypto triage: `{case.kernel.__name__}` on {case.platform} against {golden} "
                 f"(outputs: {', '.join(case.expected)}; work dir {self.work_dir})")
        baseline = self._check(self.run(0))
        self.out("baseline run (schedule_seed=0): " + _summary(baseline))
        if self._step1(baseline):
            return self._done()
        ordering = self._step2()
        if ordering is None:
            return self._done()
        if ordering:
            self._step5_ordering()
            return self._done()
        dump_dir = self._step3()
        if dump_dir is None or self._step4(dump_dir):
            return self._done()
        self._step5_device(dump_dir)
        return self._done()

    def _done(self) -> TriageReport:
        report = self.report
        if report.matches:
            self.out("result: the kernel matches its golden on every run (exit 0)")
        elif report.step is not None:
            self.out(f"result: step {report.step} ({STEPS[report.step]}) explains the "
                     f"difference (exit {report.step})")
        else:
            self.out(f"result: no step explains the difference (exit {EXIT_UNEXPLAINED})")
        return report

    def _record(self, step: int, explains: bool, lines: list[str]) -> Finding:
        finding = Finding(step, explains, lines)
        self.report.findings.append(finding)
        self.out(f"step {step} — {STEPS[step]}:")
        for line in lines:
            self.out(f"  {line}")
        if explains:
            self.out("  => explains the difference")
        return finding

    # -- running the kernel
    def run(self, seed: int | None, **config: Any) -> dict[str, torch.Tensor]:
        """The outputs of one run on fresh copies of the inputs."""
        from ..runtime import RunConfig

        if self.compiled is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # step 3 reports diagnostics
                self.compiled = self.case.kernel.compile(
                    *self.case.fresh_args(), config=RunConfig(platform=self.case.platform))
        args = self.case.fresh_args()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.compiled(*args, config=RunConfig(platform=self.case.platform,
                                                  schedule_seed=seed, **config))
        outputs = self.case.outputs(args)
        if seed is not None and not config:
            self.runs[seed] = outputs
        return outputs

    def _check(self, outputs: Mapping[str, torch.Tensor],
               tolerances: Mapping[str, Tolerance] | None = None) -> list[TensorComparison]:
        tolerances = tolerances or self.case.tolerances
        return [compare_tensor(n, outputs[n], e, tolerances[n])
                for n, e in self.case.expected.items()]

    # -- step 1
    def _step1(self, baseline: list[TensorComparison]) -> bool:
        case = self.case
        lines, honest, too_tight = [], {}, False
        for comparison in baseline:
            name = comparison.name
            tolerance = case.tolerances[name]
            expected = case.expected[name].dtype
            limit = comparison_dtype(from_torch(self.runs[0][name].dtype),
                                     None if expected == torch.float64 else from_torch(expected))
            if tolerance.policy == "exact" or limit is None:
                lines.append(f"`{name}`: {tolerance.describe()}; nothing to check against "
                             "the dtypes")
                honest[name] = tolerance
                continue
            found = tolerance_too_tight(tolerance.rtol, tolerance.atol, limit,
                                        what=f"output `{name}`")
            if found is None:
                lines.append(f"`{name}`: {tolerance.describe()} is one {limit.name} (the "
                             "comparison's dtype) can honour")
                honest[name] = tolerance
                continue
            too_tight = True
            roundings = HONEST_ROUNDINGS * unit_roundoff(limit)
            honest[name] = Tolerance(max(tolerance.rtol, roundings), max(tolerance.atol, roundings),
                                     f"step 1: a few roundings of {limit.name}")
            lines.append(f"[{found.check.value}] {found.message}")
        if not too_tight:
            self._record(1, False, lines)
            return False
        recheck = self._check(self.runs[0], honest)
        if any(not c.passed for c in baseline) and all(c.passed for c in recheck):
            worst = max(c.max_abs for c in baseline)
            lines.append(f"at {_describe_tolerances(honest)} the run matches (max abs error "
                         f"{worst:.3g}): the golden's tolerance, not the kernel, is wrong; "
                         "record the golden with a tolerance its dtypes can honour")
            self._record(1, True, lines)
            return True
        lines.append(f"continuing with {_describe_tolerances(honest)}"
                     + ("" if all(c.passed for c in recheck) else
                        "; the run still differs at it: " + _summary(recheck)))
        case.tolerances.update(honest)
        self._record(1, False, lines)
        return False

    # -- step 2
    def _step2(self) -> bool | None:
        """True: an ordering problem (go to step 5); False: deterministic (go on);
        None: the walk ends here (explained, or nothing differs)."""
        case = self.case
        for seed in range(1, self.seeds):
            self.run(seed)
        try:
            self.run(0, detect_races=True)
        except RaceError as exc:
            self.race = exc
        checks = {seed: self._check(outputs) for seed, outputs in self.runs.items()}
        failing = [s for s, c in checks.items() if not all(x.passed for x in c)]
        variation = {n: max(_max_diff(self.runs[s][n], self.runs[0][n]) for s in self.runs)
                     for n in case.expected}
        varies = any(not _same_bits(self.runs[s][n], self.runs[0][n])
                     for s in self.runs for n in case.expected)
        seeds = f"schedule_seed 0..{self.seeds - 1}"
        lines = [f"{len(failing)} of {len(self.runs)} runs ({seeds}) differ from the golden"
                 + (f" (seeds {', '.join(map(str, failing))})" if failing else "")]
        if self.race is not None:
            lines.append(f"the race detector (detect_races=True) reports: {self.race}")
            lines.append("an ordering bug: pass dumps cannot explain it (statement order "
                         "orders nothing); going to step 5")
            self._record(2, False, lines)
            return True
        if not failing:
            lines.append("every run matches the golden, bit-identical across seeds"
                         if not varies else "every run matches the golden")
            self._record(2, False, lines)
            self.report.matches = True
            return None
        if not varies:
            lines.append("every seed gives the same bits: the difference is deterministic, "
                         "not accumulation order; going on")
            self._record(2, False, lines)
            return False
        lastbit, bounds = True, []
        for name in case.expected:
            dtype = from_torch(self.runs[0][name].dtype)
            scale = float(case.expected[name].abs().max()) if case.expected[name].numel() else 0
            ulp = 2 * unit_roundoff(dtype) * scale if dtype.is_float else 0.0
            error = max(c.max_abs for s in self.runs for c in checks[s] if c.name == name)
            within = variation[name] <= LASTBIT_ULPS * ulp and error <= max(
                4 * variation[name], LASTBIT_ULPS * ulp)
            lastbit &= within
            units = variation[name] / ulp if ulp else math.inf
            bounds.append(f"`{name}` varies between seeds by up to {variation[name]:.3g} "
                          f"(~{units:.1f} ulp of its scale {scale:.3g}); the largest error "
                          f"against the golden is {error:.3g}")
        lines += bounds
        if lastbit:
            lines.append("last-bit variation that follows the schedule: the accumulation "
                         "order of concurrent atomic adds (split-K) differs run to run. This "
                         "is expected of a correct kernel: compare with a tolerance that "
                         "covers it (not an exact golden), or accumulate in a fixed order")
            self._record(2, True, lines)
            return None
        lines.append("the runs differ by more than the last bits: an ordering bug (a missing "
                     "edge the race detector could not see); going to step 5")
        self._record(2, False, lines)
        return True

    # -- step 3
    def _step3(self) -> Path | None:
        """The pass dumps' directory, or None when this step explains the difference."""
        from ..compiler import CompileOptions, run_pipeline
        from ..ir.options import PassDumpLevel, VerificationLevel

        case = self.case
        program = case.kernel.frontend(*case.fresh_args())
        options = CompileOptions(platform=case.platform, dump_passes=PassDumpLevel.CONCISE,
                                 verification_level=VerificationLevel.ROUNDTRIP,
                                 diagnostic_phase=DiagnosticPhase.POST_PIPELINE,
                                 enabled_diagnostics=frozenset(DiagnosticCheck))
        try:
            lowered = run_pipeline(program, get_platform(case.platform), options)
        except VerificationError as exc:
            self._record(3, True, [f"ROUNDTRIP verification fails: {exc}"])
            return None
        except PyptoError as exc:
            self._record(3, True, [f"the recompile fails: {exc}"])
            return None
        warnings_found = [d for d in lowered.diagnostics if not d.perf_hint]
        hints = [d for d in lowered.diagnostics if d.perf_hint]
        explaining = [d for d in warnings_found if d.check in EXPLAINING_CHECKS]
        lines = ["ROUNDTRIP verification passes after every pass"]
        lines += [str(d) for d in warnings_found] or ["no warnings"]
        if hints:
            lines.append(f"{len(hints)} performance hint(s) (not about values)")
        if explaining:
            lines.append(f"{explaining[0].check.value} explains wrong output values")
            self._record(3, True, lines)
            return None
        self._record(3, False, lines)
        dump_dir = self.work_dir / DUMP_DIR
        dump_dir.mkdir(parents=True, exist_ok=True)
        for old in dump_dir.glob("*.py"):
            old.unlink()
        for relpath, text in lowered.files.items():
            if relpath.startswith(f"{DUMP_DIR}/"):
                (dump_dir / relpath.removeprefix(f"{DUMP_DIR}/")).write_text(text)
        return dump_dir

    # -- step 4
    def _step4(self, dump_dir: Path) -> bool:
        from .validate import validate_pass_dumps

        case = self.case
        rtol = min(t.rtol for t in case.tolerances.values())
        atol = min(t.atol for t in case.tolerances.values())
        lines: list[str] = []
        try:
            validate_pass_dumps(dump_dir, case.fresh_args(), dict(case.expected), rtol=rtol,
                                atol=atol, out=lines.append,
                                backend=get_platform(case.platform).backend)
        except (PyptoError, RuntimeError, TypeError, ValueError) as exc:
            lines.append(f"the pass dumps cannot run on torch ({type(exc).__name__}: {exc}); "
                         "no pass can be named")
            self._record(4, False, lines)
            return False
        except AssertionError as exc:
            message = str(exc)
            first = message.splitlines()[0]
            dump = first.split(" ", 1)[0]
            lines.append(first)
            name = dumped_pass(dump)
            if name is not None:
                lines.append(f"the pass `{name}` changed the program's meaning (IR diff below; "
                             f"dumps in {dump_dir})")
            else:
                lines.append("the kernel as written already disagrees with the golden, before "
                             "any pass: check the kernel's source and the golden's reference")
            lines += message.splitlines()[1:][:60]
            self._record(4, True, lines)
            return True
        lines.append(f"every pass dump stays within rtol={rtol:g}, atol={atol:g}: the IR "
                     "means what the golden expects; the device disagrees with it")
        self._record(4, False, lines)
        return False

    # -- step 5
    def _dump_run(self, seed: int, label: str):
        from ..runtime.dump import ArgsDump

        directory = self.work_dir / label
        with _work_dir(directory):
            self.run(seed, enable_dump_args=2)
        return ArgsDump.load(directory)

    def _step5_ordering(self) -> None:
        passing = [s for s in self.runs if all(c.passed for c in self._check(self.runs[s]))]
        good = passing[0] if passing else 0
        bad = next((s for s in self.runs if not all(
            _same_bits(self.runs[s][n], self.runs[good][n]) for n in self.case.expected)), None)
        lines = []
        if self.race is not None:
            lines.append(f"race: task {self.race.writer} writes what task {self.race.reader} "
                         f"reads with no edge between them ({self.race.buffer})")
        if bad is None:
            lines.append("no two seeds give different outputs: nothing to compare")
            self._record(5, self.race is not None, lines)
            return
        first, second = self._dump_run(good, f"dumps_seed{good}"), self._dump_run(
            bad, f"dumps_seed{bad}")
        by_key = {(r["task"], r["stage"], r["arg"]): r for r in second.records}
        divergent = None
        for record in first.records:
            other = by_key.get((record["task"], record["stage"], record["arg"]))
            if other is not None and not _same_bits(first.tensor(record), second.tensor(other)):
                divergent = (record, other)
                break
        if divergent is None:
            lines.append(f"the dumps of seeds {good} and {bad} agree task by task")
            self._record(5, self.race is not None, lines)
            return
        record, other = divergent
        what = "before it ran" if record["stage"] == "before" else "after it completed"
        lines.append(f"first divergent task between schedule_seed {good} (matches) and {bad}: "
                     f"task {record['task']} ({record['kernel']}), {record['role']} "
                     f"`{record['name']}` (buffer `{record['tensor']}`) {what}")
        if record["stage"] == "before":
            lines.append("it read different data under the two schedules: another task wrote "
                         "that buffer before this one read it, with no edge ordering them; "
                         "add deps=[<reader task id>] on the writer (write-after-read is not "
                         "inferred)")
        lines.append(f"dumps: {first.directory} and {second.directory}; view them with "
                     f"`pypto dump-viewer {first.directory} -t {record['task']}`")
        self._record(5, True, lines)

    def _step5_device(self, dump_dir: Path) -> None:
        from .. import language as pl
        from . import torch_runtime
        from .torch_codegen import load_entry, torch_codegen

        device = self._dump_run(0, "dumps_device")
        final = pass_dumps(dump_dir)[-1]
        snapshots: list[tuple[str, dict[str, list]]] = []

        def observe(kernel_name, args, stage):
            if stage == "before":
                snapshots.append((kernel_name, {"before": [], "after": []}))
            snapshots[-1][1][stage] = [a.clone() if isinstance(a, torch.Tensor) else None
                                       for a in args]

        try:
            program = pl.parse(final.read_text(), str(final))
            backend = get_platform(self.case.platform).backend
            entry = load_entry(torch_codegen(program, backend=backend), program.entry)
            with torch_runtime.observing_tasks(observe):
                entry(*self.case.fresh_args())
        except (PyptoError, RuntimeError, TypeError, ValueError) as exc:
            self._record(5, False, [f"the final IR cannot run on torch ({type(exc).__name__}: "
                                    f"{exc}); dumps of the device run: {device.directory}"])
            return
        tolerance = max(self.case.tolerances.values(), key=lambda t: (t.rtol, t.atol))
        lines = []
        for record in device.records:
            task = record["task"]
            if task >= len(snapshots) or snapshots[task][0] != record["kernel"]:
                lines.append(f"the device's task {task} ({record['kernel']}) has no "
                             f"counterpart in the IR's torch run; cannot compare task by task")
                self._record(5, False, lines)
                return
            reference = snapshots[task][1][record["stage"]][record["arg"]]
            comparison = compare_tensor(record["name"], device.tensor(record), reference,
                                        tolerance)
            if comparison.passed:
                continue
            inputs_differ = record["stage"] == "before"
            lines.append(f"first divergent task: task {task} ({record['kernel']}), "
                         f"{record['role']} `{record['name']}` {record['stage']}: "
                         f"{comparison.describe()}")
            lines.append("its inputs already differ from the IR's: a task wrote them outside "
                         "the order the IR implies" if inputs_differ else
                         "its inputs match the IR's and its output does not: this kernel "
                         "computes something else on the device than its IR means")
            lines.append(f"dumps: {device.directory} (final IR: {final}); view with "
                         f"`pypto dump-viewer {device.directory} -t {task}`")
            self._record(5, True, lines)
            return
        lines.append("every dumped tensor of every task matches the IR run on torch")
        self._record(5, False, lines)


# ----------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def _work_dir(directory: Path) -> Iterator[None]:
    """Runs in between write their dfx_outputs/ under `directory`."""
    from ..runtime.dfx import WORK_DIR_ENV

    directory.mkdir(parents=True, exist_ok=True)
    old = os.environ.get(WORK_DIR_ENV)
    os.environ[WORK_DIR_ENV] = str(directory)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(WORK_DIR_ENV, None)
        else:
            os.environ[WORK_DIR_ENV] = old


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(bits), b.contiguous().view(bits))
    return torch.equal(a, b)


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest |a - b| in float64; NaN against NaN is 0, NaN against a number inf."""
    x, y = a.double(), b.double()
    both = torch.isnan(x) & torch.isnan(y)
    diff = torch.nan_to_num(torch.where(both, torch.zeros_like(x), (x - y).abs()), nan=math.inf)
    return float(diff.max()) if diff.numel() else 0.0


def _summary(comparisons: list[TensorComparison]) -> str:
    bad = [c for c in comparisons if not c.passed]
    if not bad:
        return "every output within tolerance"
    return "; ".join(c.describe() for c in bad)


def _describe_tolerances(tolerances: Mapping[str, Tolerance]) -> str:
    texts = sorted({t.describe() for t in tolerances.values()})
    return ", ".join(texts)


__all__ = [
    "EXIT_MATCHES",
    "EXIT_UNEXPLAINED",
    "Finding",
    "STEPS",
    "TriageReport",
    "find_spec",
    "load_callable",
    "triage",
    "triage_spec",
]
