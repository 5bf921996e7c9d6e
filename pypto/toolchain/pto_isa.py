"""Where the PTO-ISA headers are: the device and CPU-model platforms compile against them.

pypto does not ship pto-isa.  It is found, first match wins, at `$PTO_ISA_ROOT` (the
variable upstream tools use), else at the snapshot beside a source checkout of pypto
(`<checkout>/../shared/third_party/pto-isa`); its `include/` holds `pto/pto-inst.hpp`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from pypto.toolchain.key import tree_digest

PTO_ISA_ROOT_ENV = "PTO_ISA_ROOT"
# The checkout is the directory above the pypto package (where pyproject.toml lies).
_CHECKOUT = Path(__file__).resolve().parents[2]
SNAPSHOT = _CHECKOUT.parent / "shared" / "third_party" / "pto-isa"


class PtoIsaNotFoundError(RuntimeError):
    """Neither $PTO_ISA_ROOT nor the snapshot beside the checkout holds the pto-isa headers."""


def pto_isa_root() -> Path:
    """The pto-isa checkout to compile against (see the module docstring).  Raises
    PtoIsaNotFoundError naming both places it looked and what to do."""
    explicit = os.environ.get(PTO_ISA_ROOT_ENV)
    if explicit:
        root = Path(explicit).expanduser()
        if not _has_headers(root):
            # An explicit setting that is wrong must not silently fall back to the snapshot.
            raise PtoIsaNotFoundError(
                f"{PTO_ISA_ROOT_ENV}={explicit!r} holds no include/pto/pto-inst.hpp; point it "
                "at a checkout of pto-isa or unset it"
            )
        return root
    if _has_headers(SNAPSHOT):
        return SNAPSHOT
    raise PtoIsaNotFoundError(
        f"the device and CPU-model platforms compile against the PTO-ISA headers, and none "
        f"were found: ${PTO_ISA_ROOT_ENV} is unset and {SNAPSHOT} holds no "
        f"include/pto/pto-inst.hpp. Set {PTO_ISA_ROOT_ENV} to a checkout of pto-isa "
        "(its root, the directory holding include/)"
    )


def pto_isa_include() -> Path:
    """`<pto-isa root>/include`."""
    return pto_isa_root() / "include"


def pto_isa_digest() -> str:
    """Digest of the headers under `pto_isa_include()`: an edited or another pto-isa
    rebuilds every artifact compiled against it (computed once per root and process)."""
    return _digest(pto_isa_include().resolve())


@functools.cache
def _digest(include: Path) -> str:
    return tree_digest(include, (".h", ".hpp"))


def _has_headers(root: Path) -> bool:
    return (root / "include" / "pto" / "pto-inst.hpp").is_file()
