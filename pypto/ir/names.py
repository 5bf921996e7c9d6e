"""Fresh names for what the compiler adds to a program (a hoisted call's result, a task id,
a lane region's tile): never one the user's program already binds."""

from __future__ import annotations

from collections.abc import Container


def fresh_name(base: str, taken: Container[str], first: int | None = None) -> str:
    """A name not in `taken`: `base` itself when `first` is None and it is free, else
    `base_<n>` for the least n from `first` (from 1 after a bare `base`)."""
    if first is None:
        if base not in taken:
            return base
        first = 1
    n = first
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def claim_name(base: str, taken: set[str], first: int | None = None) -> str:
    """`fresh_name(base, taken, first)`, added to `taken` so that it is handed out once."""
    name = fresh_name(base, taken, first)
    taken.add(name)
    return name
