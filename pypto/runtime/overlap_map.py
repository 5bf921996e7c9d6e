"""`OverlapMap`: which task last wrote each byte range of device memory."""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class OverlapMap:
    """The last writer of every written byte range, as disjoint sorted intervals.

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

    def writers(self, start: int, end: int) -> list[int]:
        """Ids of the last writers of the bytes in [start, end), in address order."""
        if start >= end:
            return []
        lo, hi = self._span(start, end)
        return self._writers[lo:hi]

    def assign(self, start: int, end: int, writer: int) -> None:
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

    def _span(self, start: int, end: int) -> tuple[int, int]:
        """Index range of the entries overlapping [start, end)."""
        return bisect_right(self._ends, start), bisect_left(self._starts, end)
