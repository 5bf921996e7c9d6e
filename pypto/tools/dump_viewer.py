"""`pypto dump-viewer` (also `python -m simpler_setup.tools.dump_viewer`): read a run's
tensor dump (`dfx_outputs/args_dump/`, written with `RunConfig(enable_dump_args=1|2)`).

    pypto dump-viewer                         # list ./dfx_outputs/args_dump (or $PYPTO_WORK_DIR)
    pypto dump-viewer run1/ -t 2 -s before    # task 2's inputs (DIR: a work dir, dfx_outputs/,
                                              # args_dump/ or args_dump.json)
    pypto dump-viewer -r output -a out        # every dumped output named `out` (-a: index or name)
    pypto dump-viewer -i 4                    # record 4 in full: overview grid and every value
    pypto dump-viewer -t 1 -e -o tensors/     # one text file per selected tensor
    pypto dump-viewer -i 4 --compare golden/  # against a golden (write_golden) or a
                                              # .safetensors / .pt torch reference

`-t` takes a task id, a kernel name or the `name_hint` its `pl.at` was given; `-a` an
argument index, parameter name or buffer name; a filter that matches nothing says what
names the dump has.  A comparison looks the reference up by
`--ref-name`, else by the dumped buffer's name, else by the kernel's parameter name; a
dumped window of a larger tensor is compared with the same window of the reference.
The tolerance is `--rtol/--atol`, else the golden's for that output, else 1e-5.
Exit status: 0, or 1 when a comparison found a mismatch, 2 on unusable input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pypto.tools.command_line import run_tool

EXPORT_DIR = "export"
OVERVIEW_BLOCKS = 8
VALUES_PER_LINE = 8


# ----------------------------------------------------------------------------- selection


def select(records: list[dict], task: str | None = None, stage: str | None = None,
           role: str | None = None, arg: str | None = None,
           index: int | None = None) -> list[dict]:
    """The records matching every given filter (`task`: id, kernel name or the
    `name_hint` the kernel was given; `arg`: position, parameter name or buffer name)."""
    out = []
    for r in records:
        if index is not None and r["index"] != index:
            continue
        if task is not None and not _is_task(r, task):
            continue
        if stage is not None and r["stage"] != stage:
            continue
        if role is not None and r["role"] != role:
            continue
        if arg is not None and arg not in (str(r["arg"]), r["name"], r.get("tensor")):
            continue
        out.append(r)
    return out


def _is_task(record: dict, task: str) -> bool:
    """Whether `-t task` names the record's task: its id, its kernel's name, or the
    `name_hint` of its `pl.at` / `pl.spmd` (the kernel is `<function>_<name_hint>`)."""
    if task in (str(record["task"]), record["kernel"]):
        return True
    return task.isidentifier() and record["kernel"].endswith(f"_{task}")


def what_exists(records: list[dict]) -> str:
    """The names the filters take in this dump, for a selection that matched nothing."""
    tasks: dict[str, list[int]] = {}
    for r in records:
        tasks.setdefault(r["kernel"], []).append(r["task"])
    kernels = ", ".join(f"`{k}` ({_ids(ids)})" for k, ids in sorted(tasks.items()))
    names = sorted({r["name"] for r in records} | {r["tensor"] for r in records if r.get("tensor")})
    return (f"tasks (-t: id, kernel or its name_hint): {kernels or 'none'}\n"
            f"arguments (-a: index, parameter or buffer name): {', '.join(names) or 'none'}")


def _ids(ids: list[int]) -> str:
    unique = sorted(set(ids))
    shown = ", ".join(map(str, unique[:8])) + (", ..." if len(unique) > 8 else "")
    return f"task{'s' if len(unique) > 1 else ''} {shown}"


def describe_record(r: dict) -> str:
    """One line: `#3 task 1 three_second before input arg 1 a: FP32 [16, 128] ...`."""
    where = f" @{r['offsets']}" if r.get("offsets") and any(r["offsets"]) else ""
    flag = f" TRUNCATED ({r['bin_size']} of {r['nbytes']} bytes)" if r["truncated"] else ""
    block = f" block {r['block'][0]}/{r['block'][1]}" if r.get("block") else ""
    buffer = f" (buffer `{r['tensor']}`{where})" if r.get("tensor") else ""
    return (f"#{r['index']:<4} task {r['task']:<4} {r['kernel']}{block} {r['stage']} "
            f"{r['role']} arg {r['arg']} `{r['name']}`{buffer}: {r['dtype']} {r['shape']}{flag}")


def list_text(dump: Any, records: list[dict]) -> str:
    """The listing: one line per record, then what the manifest says about the run."""
    m = dump.manifest
    lines = [describe_record(r) for r in records]
    lines.append(f"{len(records)} of {len(dump.records)} records; `{m['entry']}` on "
                 f"{m['platform']}, level {m['level']}, "
                 f"{'complete' if m['complete'] else 'INCOMPLETE (the run failed)'}")
    if m["truncated_records"] or m["dropped_records"]:
        lines.append(f"budget {m['budget_bytes']} bytes exhausted: {m['truncated_records']} "
                     f"truncated, {m['dropped_records']} dropped ({m['dropped_bytes']} bytes "
                     "not written)")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- text form


def _rows(tensor: Any) -> Any:
    """The tensor as a 2-D grid: leading dimensions flattened into rows."""
    if tensor.dim() == 0:
        return tensor.reshape(1, 1)
    if tensor.dim() == 1:
        return tensor.reshape(1, -1)
    return tensor.reshape(-1, tensor.shape[-1])


def _number(value: Any, dtype: str = "FP32") -> str:
    """The shortest text that reads back as the same `dtype` value."""
    import numpy as np

    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return str(np.float16(value) if dtype == "FP16" else np.float32(value))


def _row_label(row: int, shape: list[int]) -> str:
    if len(shape) <= 1:
        return ""
    index = []
    for size in reversed(shape[:-1]):
        index.append(row % size)
        row //= size
    return ", ".join(str(i) for i in reversed(index)) + ", "


def tensor_text(dump: Any, record: dict) -> str:
    """A record as text: what it is, statistics, an overview grid, then every value."""
    import torch

    values = dump.tensor(record)
    shape = list(values.shape)
    grid = _rows(values)
    wide = grid.double() if grid.dtype != torch.bool else grid.to(torch.float64)
    finite = wide[torch.isfinite(wide)]
    lines = [
        f"# pypto args dump record {record['index']}",
        f"task {record['task']} ({record['kernel']}), core {record['core']}, stage "
        f"{record['stage']}, role {record['role']} ({record['direction']}), argument "
        f"{record['arg']} `{record['name']}`",
        f"buffer `{record['tensor']}` at offsets {record['offsets']} (element "
        f"{record['offset']}); dtype {record['dtype']}, shape {record['shape']}, strides "
        f"{record['strides']}",
        f"{record['bin_size']} of {record['nbytes']} bytes at {dump.bin_path.name}+"
        f"{record['bin_offset']}" + ("; TRUNCATED: the values below are the first "
                                     f"{values.numel()} elements" if record["truncated"] else ""),
        f"stats: min {_number(float(finite.min())) if finite.numel() else '-'}, max "
        f"{_number(float(finite.max())) if finite.numel() else '-'}, mean "
        f"{_number(float(finite.mean())) if finite.numel() else '-'}, nan "
        f"{int(torch.isnan(wide).sum())}, inf {int(torch.isinf(wide).sum())}, zero "
        f"{int((wide == 0).sum())}",
        "",
    ]
    lines += _overview(wide)
    lines += ["", "## values (row-major)"]
    rows, cols = grid.shape
    for r in range(rows):
        label = _row_label(r, shape)
        for c0 in range(0, cols, VALUES_PER_LINE):
            c1 = min(c0 + VALUES_PER_LINE, cols)
            items = " ".join(f"{_number(v, record['dtype']):>15}"
                             for v in grid[r, c0:c1].tolist())
            lines.append(f"[{label}{c0}:{c1}] {items}")
    return "\n".join(lines) + "\n"


def _overview(wide: Any) -> list[str]:
    """At most 8 x 8 blocks, each shown as the largest |x| it holds (nan/inf flagged)."""
    import torch

    rows, cols = wide.shape
    if rows * cols == 0:
        return ["## overview: empty"]
    rstep = -(-rows // min(rows, OVERVIEW_BLOCKS))
    cstep = -(-cols // min(cols, OVERVIEW_BLOCKS))
    lines = [f"## overview: max |x| per block of {rstep} x {cstep} elements"]
    heads = [f"c{c}:{min(c + cstep, cols)}" for c in range(0, cols, cstep)]
    lines.append(" " * 12 + " ".join(f"{h:>10}" for h in heads))
    for r in range(0, rows, rstep):
        cells = []
        for c in range(0, cols, cstep):
            block = wide[r:r + rstep, c:c + cstep]
            if torch.isnan(block).any():
                cells.append("nan")
            elif torch.isinf(block).any():
                cells.append("inf")
            else:
                cells.append(f"{float(block.abs().max()):.3e}")
        lines.append(f"{f'r{r}:{min(r + rstep, rows)}':<12}" + " ".join(f"{x:>10}" for x in cells))
    return lines


def export(dump: Any, records: list[dict], directory: Path) -> list[Path]:
    """One text file per record in `directory`; returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for r in records:
        name = (f"{r['index']:04d}_task{r['task']}_{r['kernel']}_{r['stage']}_{r['role']}_"
                f"arg{r['arg']}_{r['name']}.txt")
        path = directory / name
        path.write_text(tensor_text(dump, r), encoding="utf-8")
        written.append(path)
    return written


# ----------------------------------------------------------------------------- comparison


def load_reference(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tensors by name, tolerances by name) of a golden directory, a .safetensors file or a
    .pt file holding a tensor or a dict of tensors."""
    import torch

    if path.is_dir():
        from pypto.runtime.golden import GoldenRecord

        golden = GoldenRecord.read(path)
        tensors = {k: v for k, v in golden.load_inputs().items() if isinstance(v, torch.Tensor)}
        tensors.update(golden.load_expected())  # an InOut output replaces its input
        return tensors, dict(golden.tolerances)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path)), {}
    loaded = torch.load(str(path), map_location="cpu", weights_only=True)
    if isinstance(loaded, torch.Tensor):
        return {path.stem: loaded}, {}
    if isinstance(loaded, dict):
        return {str(k): v for k, v in loaded.items() if isinstance(v, torch.Tensor)}, {}
    raise ValueError(f"{path}: holds a {type(loaded).__name__}, not a tensor or a dict of them")


def compare_records(dump: Any, records: list[dict], reference: dict[str, Any],
                    tolerances: dict[str, Any], ref_name: str | None = None,
                    rtol: float | None = None, atol: float | None = None) -> list[tuple]:
    """(record, TensorComparison or None, note) per record: None when no reference fits."""
    from pypto.comparison import Tolerance, compare_tensor

    results = []
    for r in records:
        names = [ref_name] if ref_name else [r.get("tensor"), r["name"]]
        name = next((n for n in names if n and n in reference), None)
        if name is None:
            results.append((r, None, f"no reference named {' or '.join(filter(None, names))}"))
            continue
        expected = _window(reference[name], r)
        actual = dump.tensor(r)
        if r["truncated"]:
            expected = expected.reshape(-1)[: actual.numel()]
        recorded = tolerances.get(name)
        tolerance = Tolerance(
            rtol if rtol is not None else (recorded.rtol if recorded else 1e-5),
            atol if atol is not None else (recorded.atol if recorded else 1e-5),
        )
        results.append((r, compare_tensor(name, actual, expected, tolerance), name))
    return results


def _window(reference: Any, record: dict) -> Any:
    """The part of `reference` the dumped view covers, when the view is a window of it."""
    shape = list(record["shape"])
    offsets = record.get("offsets")
    if list(reference.shape) == shape or not offsets or len(offsets) != reference.dim() \
            or len(shape) != reference.dim():
        return reference
    index = tuple(slice(o, o + s) for o, s in zip(offsets, shape, strict=True))
    return reference[index]


# ----------------------------------------------------------------------------- the command


def default_dir() -> Path:
    """`<work_dir>/dfx_outputs/args_dump` (work_dir: $PYPTO_WORK_DIR, else the cwd)."""
    from pypto.runtime.dfx import dfx_dir

    return dfx_dir() / "args_dump"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `pypto dump-viewer`."""
    parser.add_argument("dir", nargs="?", type=Path, default=None,
                        help="work dir, dfx_outputs/, args_dump/ or args_dump.json "
                             "(default: $PYPTO_WORK_DIR or . /dfx_outputs/args_dump)")
    parser.add_argument("-t", "--task", help="task id, kernel name or the kernel's name_hint")
    parser.add_argument("-s", "--stage", choices=("before", "after"),
                        help="snapshots taken before or after the task ran")
    parser.add_argument("-r", "--role", choices=("input", "output", "inout"),
                        help="the argument's role in its task")
    parser.add_argument("-a", "--arg", help="argument index, parameter name or buffer name")
    parser.add_argument("-i", "--index", type=int, help="one record, by its index")
    parser.add_argument("-e", "--export", action="store_true",
                        help="write one text file per selected tensor")
    parser.add_argument("-o", "--output", type=Path,
                        help=f"where -e writes (default: <dump dir>/{EXPORT_DIR})")
    parser.add_argument("--compare", type=Path, metavar="REF",
                        help="a golden directory, or a .safetensors / .pt torch reference")
    parser.add_argument("--ref-name", help="the reference tensor to compare with")
    parser.add_argument("--rtol", type=float, help="relative tolerance of --compare "
                        "(default: the golden's for that output, else 1e-5)")
    parser.add_argument("--atol", type=float, help="absolute tolerance of --compare "
                        "(default: the golden's for that output, else 1e-5)")


def run(args: argparse.Namespace) -> int:
    """Lists, prints, exports or compares the selected records."""
    from pypto.runtime.dump import ArgsDump, ArgsDumpError

    out = sys.stdout
    try:
        dump = ArgsDump.load(args.dir if args.dir is not None else default_dir())
    except ArgsDumpError as exc:
        print(f"pypto dump-viewer: {exc}", file=sys.stderr)
        return 2
    records = select(dump.records, args.task, args.stage, args.role, args.arg, args.index)
    if args.index is not None and not records:
        print(f"pypto dump-viewer: no record {args.index} (there are {len(dump.records)})",
              file=sys.stderr)
        return 2
    if not records and dump.records:
        filters = [f"{flag} {value}" for flag, value in (
            ("-t", args.task), ("-s", args.stage), ("-r", args.role), ("-a", args.arg))
            if value is not None]
        print(f"pypto dump-viewer: no record matches {' '.join(filters)}; this dump has\n"
              f"{what_exists(dump.records)}", file=sys.stderr)
        return 2
    if args.compare is not None:
        return _compare(args, dump, records, out)
    if args.export:
        directory = args.output if args.output is not None else dump.directory / EXPORT_DIR
        for path in export(dump, records, directory):
            out.write(f"{path}\n")
        return 0
    if args.index is not None:
        out.write(tensor_text(dump, records[0]))
        return 0
    out.write(list_text(dump, records))
    return 0


def _compare(args: argparse.Namespace, dump, records: list, out) -> int:
    """`--compare`: each selected record against the reference; 0 when all compared ones
    match, 1 when one differs, 2 when none could be compared."""
    try:
        reference, tolerances = load_reference(args.compare)
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"pypto dump-viewer: cannot read {args.compare}: {exc}", file=sys.stderr)
        return 2
    results = compare_records(dump, records, reference, tolerances, args.ref_name,
                              args.rtol, args.atol)
    failed = 0
    for record, comparison, note in results:
        head = describe_record(record)
        if comparison is None:
            out.write(f"{head}\n    skipped: {note}\n")
        elif comparison.passed:
            out.write(f"{head}\n    matches `{note}` ({comparison.tolerance.describe()}; "
                      f"max abs error {comparison.max_abs:.3g})\n")
        else:
            failed += 1
            out.write(f"{head}\n    DIFFERS from `{note}`: {comparison.describe()}\n")
    compared = sum(1 for _, c, _ in results if c is not None)
    out.write(f"{compared} compared, {failed} differ\n")
    if not compared:
        return 2
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """`python -m simpler_setup.tools.dump_viewer` / `python -m pypto.tools.dump_viewer`:
    `pypto dump-viewer`."""
    return run_tool(sys.modules[__name__], argv, "dump_viewer")


if __name__ == "__main__":
    sys.exit(main())
