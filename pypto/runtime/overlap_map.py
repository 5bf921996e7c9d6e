"""`OverlapMap`: which task last wrote each byte range of device memory."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any


class OverlapMap:
    """The last writer of every written byte range, as disjoint sorted intervals.

    A value is whatever the caller records per range: the scheduler stores a task id
    for a plain writer and a small tuple for a set of unordered writers (accumulators).

    Entries never overlap, so both their starts and their ends are sorted and one
    bisection on each finds the entries overlapping a query: a lookup costs
    O(log n + k) for k hits, and an assignment adds at most two entries (the parts of
    partly covered neighbours it leaves), so thousands of tasks writing distinct tiles
    stay cheap.  Addresses of distinct allocations never overlap, so one map serves
    every buffer.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._writers: list[int] = []

    def __len__(self) -> int:
        return len(self._starts)

    def writers(self, start: int, end: int) -> list:
        """Values recorded for the bytes in [start, end), in address order."""
        if start >= end:
            return []
        lo, hi = self._span(start, end)
        return self._writers[lo:hi]

    def assign(self, start: int, end: int, writer) -> None:
        """Records `writer` as the last writer of [start, end)."""
        if start >= end:
            return
        lo, hi = self._span(start, end)
        starts, ends, writers = [start], [end], [writer]
        if lo < hi:
            # Neighbours that stick out on either side keep their uncovered part.
            if self._starts[lo] < start:
                starts.insert(0, self._starts[lo])
                ends.insert(0, start)
                writers.insert(0, self._writers[lo])
            if self._ends[hi - 1] > end:
                starts.append(end)
                ends.append(self._ends[hi - 1])
                writers.append(self._writers[hi - 1])
        self._starts[lo:hi] = starts
        self._ends[lo:hi] = ends
        self._writers[lo:hi] = writers

    def update(self, start: int, end: int, change: Callable[[Any], Any]) -> None:
        """Replaces the value of every byte in [start, end) by `change(value)`.

        Bytes nobody wrote get `change(None)`; entries partly covered are split, so the
        bytes outside [start, end) keep their value.
        """
        if start >= end:
            return
        lo, hi = self._span(start, end)
        starts: list[int] = []
        ends: list[int] = []
        values: list = []
        position = start
        for k in range(lo, hi):
            entry_start, entry_end, value = self._starts[k], self._ends[k], self._writers[k]
            if entry_start < start:
                starts.append(entry_start)
                ends.append(start)
                values.append(value)
            elif entry_start > position:
                starts.append(position)
                ends.append(entry_start)
                values.append(change(None))
            covered_start = max(entry_start, start)
            covered_end = min(entry_end, end)
            starts.append(covered_start)
            ends.append(covered_end)
            values.append(change(value))
            position = covered_end
            if entry_end > end:
                starts.append(end)
                ends.append(entry_end)
                values.append(value)
        if position < end:
            starts.append(position)
            ends.append(end)
            values.append(change(None))
        self._starts[lo:hi] = starts
        self._ends[lo:hi] = ends
        self._writers[lo:hi] = values

    def _span(self, start: int, end: int) -> tuple[int, int]:
        """Index range of the entries overlapping [start, end)."""
        return bisect_right(self._ends, start), bisect_left(self._starts, end)
