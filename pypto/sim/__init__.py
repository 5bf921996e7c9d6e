"""The host simulator's C++ model of the PTO tile ISA (headers under include/), and the
artifact ABI's header, `pto/abi.h`, which every artifact is compiled against."""

import re

from pypto.resources import sim_include_dir

INCLUDE_DIR = sim_include_dir()
ABI_HEADER = INCLUDE_DIR / "pto" / "abi.h"


def _abi_version() -> int:
    defined = re.search(r"^#define PTO_ABI_VERSION (\d+)$", ABI_HEADER.read_text(), re.MULTILINE)
    return int(defined.group(1))


ABI_VERSION = _abi_version()
"""`PTO_ABI_VERSION` as pto/abi.h defines it (the header is its one definition): the
version a build records in each manifest and the loader requires."""
