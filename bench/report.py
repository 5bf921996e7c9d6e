"""The table `python -m bench` prints and the docs/performance.md it writes."""

from __future__ import annotations

from collections.abc import Sequence

from bench.harness import Row, Settings, fmt_time

HEADER = ("measurement", "pypto", "peer", "ratio", "target", "met")


def _cells(row: Row) -> tuple[str, ...]:
    met = "" if row.met is None else ("yes" if row.met else "NO")
    return (row.name, fmt_time(row.ours), f"{fmt_time(row.peer)} ({row.peer_name})",
            f"{row.ratio:.2f}x", row.target, met)


def table(rows: Sequence[Row]) -> str:
    """A plain-text table of every row, grouped as measured."""
    cells = [HEADER] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip()
             for cell in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(rows: Sequence[Row], machine: dict[str, str], settings: Settings,
             seconds: float, notes: str) -> str:
    """docs/performance.md: machine, method, one table per group, notes."""
    quick = " (--quick: tiny sizes, not for comparison)" if settings.quick else ""
    out = [
        "# Performance",
        "",
        "Written by `python -m bench` (also `pypto bench`); do not edit by hand, rerun it.",
        (f"Every number is a median of {settings.runs} runs or more{quick} (the simulator's "
         "rows time ours and the peer in alternation), and every ratio is against a peer "
         "measured in the same run on the same machine:"),
        "these machines are shared and noisy, so compare ratios across runs, not times.",
        "",
        "## Machine",
        "",
        "| | |",
        "|---|---|",
    ]
    out += [f"| {k} | {v} |" for k, v in machine.items()]
    out += [f"| benchmark wall time | {seconds:.0f} s |", ""]
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    for group, members in groups.items():
        out += [f"## {group.capitalize()}", "",
                "| measurement | pypto | peer | ratio | target | met | note |",
                "|---|---|---|---|---|---|---|"]
        for row in members:
            name, ours, peer, ratio, target, met = _cells(row)
            out.append(f"| {name} | {ours} | {peer} | {ratio} | {target} | {met} | "
                       f"{row.note} |")
        out.append("")
    out += [notes.strip(), ""]
    return "\n".join(out)
