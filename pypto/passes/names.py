"""Fresh variable names that cannot collide with the user's."""

from __future__ import annotations

from ..ir.names import claim_name
from ..ir.visitor import defs, uses


class NameSupply:
    """Hands out `<base>_<n>` names unused in a function."""

    def __init__(self, fn):
        self.taken = set(defs(fn.body)) | set(uses(fn.body)) | {p.var.name for p in fn.params}

    def fresh(self, base: str) -> str:
        return claim_name(base, self.taken, first=0)
