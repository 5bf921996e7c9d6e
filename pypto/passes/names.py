"""Fresh variable names that cannot collide with the user's."""

from __future__ import annotations

from ..ir.visitor import defs, uses


class NameSupply:
    """Hands out `<base>_<n>` names unused in a function."""

    def __init__(self, fn):
        self.taken = set(defs(fn.body)) | set(uses(fn.body)) | {p.var.name for p in fn.params}

    def fresh(self, base: str) -> str:
        n = 0
        while f"{base}_{n}" in self.taken:
            n += 1
        name = f"{base}_{n}"
        self.taken.add(name)
        return name
