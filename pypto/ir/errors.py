"""Errors raised by the compiler.  User errors carry the user's file:line."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A location in the user's source."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def syntax_error_line(exc: SyntaxError) -> int:
    """The line of the mistake a SyntaxError reports: Python detects a missing block on
    the line after the statement that needs one, and names that statement's line in
    the message ("expected an indented block after 'with' statement on line 5")."""
    named = re.search(r"\bon line (\d+)", exc.msg or "")
    return int(named.group(1)) if named else (exc.lineno or 1)


class PyptoError(Exception):
    """Base of every error pypto raises for bad user input."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        text = f"{self.span}: {self.message}" if self.span else self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ParseError(PyptoError):
    """The DSL source is not a valid pypto program."""


class ParseSyntaxError(ParseError, SyntaxError):
    """The source given to `pl.parse` is not valid Python (also a SyntaxError, as upstream
    PyPTO raises)."""


class ParseContentError(ParseError, ValueError):
    """The source given to `pl.parse` holds no program or function to read, or several
    (also a ValueError, as upstream PyPTO raises)."""


class TypeCheckError(PyptoError):
    """Operands have incompatible shapes or dtypes, or an op does not support a dtype."""


class LoweringError(PyptoError):
    """A pass cannot lower the program for the chosen backend (e.g. an illegal cast)."""


class CapacityError(LoweringError):
    """A tile does not fit the on-chip buffer of its memory space."""


class VerificationError(Exception):
    """An IR property does not hold after a pass; the message names the pass."""


class InternalError(Exception):
    """A broken compiler invariant: a pypto bug, please report it with this message."""
