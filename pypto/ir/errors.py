"""Errors raised by the compiler.  User errors carry the user's file:line."""

from __future__ import annotations

import functools
import os
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar


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


class UserError(Exception):
    """An error about the user's input or run whose message says where and what to do
    (`PyptoError`, the runtime's `PyptoRuntimeError`): at a public entry point
    (`api_boundary`) its traceback loses pypto's own frames."""


class PyptoError(UserError):
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


# The package's own files: a UserError's traceback shows none of them but the boundary's.
_PACKAGE = str(Path(__file__).resolve().parents[1]) + os.sep
TRACEBACK_ENV = "PYPTO_TRACEBACK"  # "full": keep every frame (for a bug report)

F = TypeVar("F", bound=Callable[..., Any])


def _outside_package(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The frames of `tb` that are not pypto's, in their order."""
    kept = []
    while tb is not None:
        if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE):
            kept.append(tb)
        tb = tb.tb_next
    filtered = None
    for frame in reversed(kept):
        filtered = types.TracebackType(filtered, frame.tb_frame, frame.tb_lasti,
                                       frame.tb_lineno)
    return filtered


def user_frame() -> types.FrameType:
    """The innermost frame on the stack that is not pypto's: the user's code that called
    in (a decorator's class or function definition, a call's line)."""
    frame = sys._getframe(1)
    while frame.f_back is not None and \
            os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    return frame


def api_boundary(fn: F) -> F:
    """A public entry point: a UserError leaving it keeps only the frames outside pypto
    (the user's script, a golden function it called) and this one, as JAX does with its
    `api_boundary`; the message already names the user's file and line. Other exceptions
    (a pypto bug) keep every frame; `PYPTO_TRACEBACK=full` keeps them for UserErrors too."""

    @functools.wraps(fn)
    def boundary(*args, **kwargs):
        __tracebackhide__ = True  # noqa: F841 - pytest hides this frame
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            if os.environ.get(TRACEBACK_ENV) == "full":
                raise
            raise exc.with_traceback(_outside_package(exc.__traceback__)) from exc.__cause__

    return boundary  # type: ignore[return-value]
