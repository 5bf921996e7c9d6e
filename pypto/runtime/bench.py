"""`pypto.runtime.benchmark`: upstream PyPTO's register-once, many-rounds timing loop.

`benchmark(compiled, args, rounds=100, warmup=3)` registers the compiled program on a
`ChipWorker` once, runs `warmup` launches it does not count, then `rounds` launches, and
returns a `BenchmarkStats`: per launch, the host wall time of the launch (the registered
handle's call: copying arguments in, the orchestration and its tasks on the simulated
cores, copying outputs back) and the device wall time.  A simulator has no device clock:
`device_wall_us` reads 0 for every launch and `all_zero_device` is true, as upstream's
benchmark reports on its `*sim` platforms, so read `host_wall_us` here.  Each launch's
spans form a `TraceInvocation` (one host span, `run`), rendered by `print_tree` and, as
means over the launches with their spread, `print_mean_tree`.  Multi-rank programs (L3)
are refused, as everywhere in this project; their per-rank views (`per_rank`,
`per_round("union")`) are empty, as upstream's are for single-chip programs.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto.ir.errors import api_boundary
from pypto.runtime.config import RunConfig
from pypto.runtime.errors import UnsupportedError
from pypto.runtime.worker import ChipWorker

METRICS = ("device", "host", "effective", "union")
_SPREADS = ("stdev", "minmax", "both", "none")
_NO_TREE = "BenchmarkStats: no span tree captured (no measured launch)"


@dataclass
class TraceSpan:
    """One timed span of a launch: `name` is a dotted path (its parent is the longest
    prefix that is a span too), `ts` / `dur` in nanoseconds of the host clock."""

    pid: int
    tid: int
    inv: int
    hid: str
    depth: int
    name: str
    ts: int
    dur: int
    attrs: str = ""

    @property
    def is_device(self) -> bool:
        """A span of the device's clock (none on a simulator)."""
        return "clk=dev" in self.attrs

    @property
    def dur_us(self) -> float:
        return self.dur / 1000.0


@dataclass
class TraceInvocation:
    """The spans of one launch; `hid` names the program (its artifact's content key)."""

    pid: int
    inv: int
    hid: str
    spans: list[TraceSpan] = field(default_factory=list)

    def root(self) -> TraceSpan | None:
        return next((s for s in self.spans if s.depth == 0), None)

    def by_name(self) -> dict[str, TraceSpan]:
        named: dict[str, TraceSpan] = {}
        for span in self.spans:
            named.setdefault(span.name, span)
        return named

    @property
    def task(self) -> str:
        return self.hid

    @property
    def host_wall_us(self) -> float:
        root = self.root()
        return root.dur_us if root is not None else 0.0

    @property
    def device_wall_us(self) -> float:
        return sum(s.dur_us for s in self.spans if s.is_device and s.depth == 1)

    @property
    def effective_us(self) -> float:
        """The launch's on-device window: 0 without device spans (a simulator)."""
        device = [s for s in self.spans if s.is_device]
        if not device:
            return 0.0
        return (max(s.ts + s.dur for s in device) - min(s.ts for s in device)) / 1000.0

    def format_tree(self, *, us: bool = True,
                    value_fn: Callable[[TraceSpan], list[str]] | None = None) -> str:
        """The spans as a tree (`|-` / `` `- `` connectors), siblings by start time, the
        value columns right-aligned (default: the duration)."""
        named = self.by_name()

        def parent(name: str) -> str | None:
            parts = name.split(".")
            return next((p for p in (".".join(parts[:k]) for k in range(len(parts) - 1, 0, -1))
                         if p in named), None)

        children: dict[str | None, list[str]] = defaultdict(list)
        for name in named:
            children[parent(name)].append(name)
        rows: list[tuple[str, list[str]]] = []

        def walk(name: str, lead: str, indent: str) -> None:
            up = parent(name)
            label = name[len(up) + 1:] if up is not None else name
            values = value_fn(named[name]) if value_fn is not None else [
                f"{named[name].dur / 1000.0:.1f}us" if us else f"{named[name].dur}ns"]
            rows.append((lead + label + (" [dev]" if named[name].is_device else ""), values))
            kids = sorted(children[name], key=lambda n: named[n].ts)
            for i, kid in enumerate(kids):
                last = i == len(kids) - 1
                walk(kid, indent + ("`- " if last else "|- "), indent + ("   " if last else "|  "))

        for name in sorted(children[None], key=lambda n: named[n].ts):
            walk(name, "", "")
        width = max((len(label) for label, _ in rows), default=0)
        columns = max((len(values) for _, values in rows), default=0)
        widths = [max((len(v[i]) for _, v in rows if i < len(v)), default=0)
                  for i in range(columns)]
        return "\n".join(
            (label.ljust(width) + "".join("  " + v.rjust(widths[i])
                                          for i, v in enumerate(values))).rstrip()
            for label, values in rows)


@dataclass
class BenchmarkStats:
    """Per launch (warmup excluded): `device_wall_us` (0 on a simulator) and
    `host_wall_us`; `invocations`, each launch's spans.  The `device_us_*` /
    `device_wall_us_*` aggregates are over `device_wall_us`, as upstream's."""

    device_wall_us: list[float] = field(default_factory=list)
    host_wall_us: list[float] = field(default_factory=list)
    rounds: int = 0
    warmup: int = 0
    invocations: list[TraceInvocation] = field(default_factory=list)
    rounds_dispatches: list[dict[int, list[TraceInvocation]]] = field(default_factory=list)
    fallback_flattened: bool = False

    def per_round(self, metric: str = "device") -> list[float]:
        """One value a measured launch: "device", "host", "effective" (the on-device
        window); "union" (a multi-rank round's host window) is empty for one chip."""
        if metric not in METRICS:
            raise ValueError(f"per_round(): metric must be one of {', '.join(METRICS)}, got "
                             f"{metric!r}")
        if metric == "union":
            return []
        if metric == "effective":
            return [inv.effective_us for inv in self.invocations]
        return list(self.device_wall_us if metric == "device" else self.host_wall_us)

    def per_rank(self, metric: str = "device") -> dict[int, list[float]]:
        """Per rank and round: multi-rank programs only (empty here)."""
        if metric not in METRICS[:3]:
            raise ValueError(f"per_rank(): metric must be one of {', '.join(METRICS[:3])}, "
                             f"got {metric!r}")
        return {}

    @property
    def samples(self) -> list[float]:
        return self.device_wall_us

    @property
    def device_us_min(self) -> float:
        return min(self.device_wall_us, default=0.0)

    @property
    def device_us_median(self) -> float:
        return statistics.median(self.device_wall_us) if self.device_wall_us else 0.0

    @property
    def device_us_mean(self) -> float:
        return statistics.fmean(self.device_wall_us) if self.device_wall_us else 0.0

    @property
    def device_us_max(self) -> float:
        return max(self.device_wall_us, default=0.0)

    @property
    def device_us_stdev(self) -> float:
        return statistics.stdev(self.device_wall_us) if len(self.device_wall_us) > 1 else 0.0

    device_wall_us_min = device_us_min
    device_wall_us_median = device_us_median
    device_wall_us_mean = device_us_mean
    device_wall_us_max = device_us_max
    device_wall_us_stdev = device_us_stdev

    @property
    def all_zero_device(self) -> bool:
        """No device wall was measured (a simulator): read `host_wall_us`."""
        return bool(self.device_wall_us) and not any(self.device_wall_us)

    def format_tree(self, launch: int | None = None, *, us: bool = True) -> str:
        if not self.invocations:
            return _NO_TREE
        chosen = (list(enumerate(self.invocations)) if launch is None
                  else [(launch, self.invocations[launch])])
        return "\n".join(f"launch[{i}] (pid={inv.pid} inv={inv.inv} hid={inv.hid}):\n"
                         + inv.format_tree(us=us) for i, inv in chosen)

    def print_tree(self, launch: int | None = None, *, us: bool = True, file: Any = None) -> None:
        print(self.format_tree(launch, us=us), file=file)

    def mean_invocation(self) -> TraceInvocation | None:
        """A launch whose every span lasts (and starts at) its mean over the launches."""
        if not self.invocations:
            return None
        durs, starts, first = _by_span(self.invocations)
        spans = [TraceSpan(t.pid, t.tid, -1, t.hid, t.depth, name,
                           round(statistics.fmean(starts[name])),
                           round(statistics.fmean(durs[name])), t.attrs)
                 for name, t in first.items()]
        head = self.invocations[0]
        return TraceInvocation(head.pid, -1, head.hid, spans)

    def format_mean_tree(self, *, us: bool = True, spread: str = "stdev") -> str:
        """The mean launch's tree, each span with its spread over the launches: "stdev"
        (±), "minmax" ([min..max]), "both" or "none"."""
        if spread not in _SPREADS:
            raise ValueError(f"spread must be one of {', '.join(_SPREADS)}, got {spread!r}")
        mean = self.mean_invocation()
        if mean is None:
            return _NO_TREE
        durs, _, _ = _by_span(self.invocations)
        scale, unit = (1000.0, "us") if us else (1.0, "ns")

        def columns(span: TraceSpan) -> list[str]:
            d = durs[span.name]
            out = [f"{statistics.fmean(d) / scale:.1f}{unit}"]
            if spread in ("stdev", "both"):
                out.append(f"±{(statistics.stdev(d) if len(d) > 1 else 0.0) / scale:.1f}")
            if spread in ("minmax", "both"):
                out.append(f"[{min(d) / scale:.1f}..{max(d) / scale:.1f}]")
            return out

        legend = "mean" + (" ±stdev" if spread in ("stdev", "both") else "") + (
            " [min..max]" if spread in ("minmax", "both") else "")
        return (f"mean of {len(self.invocations)} launches (warmup {self.warmup} excluded); "
                f"each node: {legend}:\n" + mean.format_tree(us=us, value_fn=columns))

    def print_mean_tree(self, *, us: bool = True, spread: str = "stdev",
                        file: Any = None) -> None:
        print(self.format_mean_tree(us=us, spread=spread), file=file)

    def __str__(self) -> str:
        if not self.host_wall_us:
            return f"BenchmarkStats(rounds={self.rounds}: no samples)"
        host = self.host_wall_us
        return (f"BenchmarkStats(rounds={self.rounds}, warmup={self.warmup}): "
                + ("device_wall_us all 0 (a simulator has no device clock); " if
                   self.all_zero_device else "")
                + f"host_wall_us min={min(host):.1f} median={statistics.median(host):.1f} "
                  f"mean={statistics.fmean(host):.1f} max={max(host):.1f}")


def _by_span(invocations: list[TraceInvocation]):
    durs: dict[str, list[int]] = defaultdict(list)
    starts: dict[str, list[int]] = defaultdict(list)
    first: dict[str, TraceSpan] = {}
    for inv in invocations:
        for span in inv.spans:
            durs[span.name].append(span.dur)
            starts[span.name].append(span.ts)
            first.setdefault(span.name, span)
    return durs, starts, first


@api_boundary
def benchmark(compiled: Any, args: Sequence[Any], rounds: int = 100, warmup: int = 3, *,
              platform: str | None = None, device_id: int | None = None,
              config: RunConfig | None = None) -> BenchmarkStats:
    """Registers `compiled` once and times `rounds` launches on `args` after `warmup`
    uncounted ones (module docstring).  `platform=` / `device_id=`, or a whole `config=`,
    not both."""
    if config is not None and (platform is not None or device_id is not None):
        raise ValueError("benchmark takes platform= / device_id= or config=, not both")
    if type(compiled).__name__ == "DistributedCompiledProgram":
        raise UnsupportedError(
            "benchmark of a multi-rank (L3) program: this project compiles and runs "
            "single-chip programs only", hint="benchmark the chip-level compiled program")
    for name, value in (("rounds", rounds), ("warmup", warmup)):
        if not isinstance(value, int) or isinstance(value, bool) or value < (name == "rounds"):
            raise ValueError(f"{name} must be an integer of at least {int(name == 'rounds')}, "
                             f"got {value!r}")
    if config is None:
        chosen = platform if platform is not None else getattr(compiled, "platform", None)
        config = RunConfig(device_id=device_id) if chosen is None else \
            RunConfig(platform=chosen, device_id=device_id)
    pid = os.getpid()
    stats = BenchmarkStats(rounds=rounds, warmup=warmup)
    with ChipWorker(config) as worker:
        handle = worker.register(compiled)
        hid = handle.program.manifest.content_key
        for _ in range(warmup):
            handle(*args)
        for launch in range(rounds):
            start = time.perf_counter_ns()
            handle(*args)
            took = time.perf_counter_ns() - start
            span = TraceSpan(pid, threading.get_native_id(), launch, hid, 0, "run", start, took)
            stats.invocations.append(TraceInvocation(pid, launch, hid, [span]))
    stats.host_wall_us = [inv.host_wall_us for inv in stats.invocations]
    stats.device_wall_us = [inv.device_wall_us for inv in stats.invocations]  # no device spans
    return stats


__all__ = ["BenchmarkStats", "TraceInvocation", "TraceSpan", "benchmark"]
