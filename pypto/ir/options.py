"""Compile options users pass to `ir.compile`: dump and verification levels."""

from __future__ import annotations

import enum
import os


class PassDumpLevel(enum.Enum):
    """What `dump_passes` writes: nothing, the IR, or the IR with placement."""

    NONE = "none"
    CONCISE = "concise"  # shapes and dtypes
    EXPLICIT = "explicit"  # also memory spaces and on-chip addresses


def resolve_dump_level(dump_passes) -> PassDumpLevel:
    """`True` means CONCISE, `False` NONE; a PassDumpLevel is taken as it is."""
    if isinstance(dump_passes, PassDumpLevel):
        return dump_passes
    if isinstance(dump_passes, bool):
        return PassDumpLevel.CONCISE if dump_passes else PassDumpLevel.NONE
    raise TypeError(f"dump_passes must be a bool or an ir.PassDumpLevel, got {dump_passes!r}")


class VerificationLevel(enum.Enum):
    NONE = "none"
    BASIC = "basic"
    ROUNDTRIP = "roundtrip"


def resolve_level(level: VerificationLevel | None) -> VerificationLevel:
    """`None` defers to env PYPTO_VERIFY_LEVEL; the default is BASIC."""
    if level is not None:
        return level
    value = os.environ.get("PYPTO_VERIFY_LEVEL", "").strip().lower()
    if not value:
        return VerificationLevel.BASIC
    try:
        return VerificationLevel(value)
    except ValueError:
        names = ", ".join(v.value for v in VerificationLevel)
        raise ValueError(f"PYPTO_VERIFY_LEVEL={value!r} is not one of: {names}") from None
