"""The one Jinja2 environment every generated file comes from."""

from __future__ import annotations

import math
import os
from functools import cache

import jinja2

from pypto.resources import TEMPLATES_ENV, templates_dir

TEMPLATES_DIR = templates_dir()


def _cpp_float(value: float) -> str:
    if math.isnan(value):
        return "__builtin_nan(\"\")"
    if math.isinf(value):
        return "__builtin_inf()" if value > 0 else "(-__builtin_inf())"
    return repr(float(value))


def _py_literal(value) -> str:
    """A Python literal for a constant (floats that repr cannot express spelled out)."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return f'float("{value}")'
    return repr(value)


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["cpp_float"] = _cpp_float
    env.filters["pyrepr"] = _py_literal
    return env


def render(template: str, **context) -> str:
    """The text of `template` (a file of TEMPLATES_DIR) rendered with `context`."""
    try:
        return environment().get_template(template).render(**context)
    except jinja2.TemplateNotFound as exc:  # this one, or one it includes
        raise _wrong_templates(f"{TEMPLATES_DIR} holds no {exc.name}") from None
    except jinja2.TemplateSyntaxError as exc:
        raise _wrong_templates(f"{exc.filename}:{exc.lineno}: {exc.message}") from None


def _wrong_templates(what: str) -> ValueError:
    """The error for templates that are not pypto's: $PYPTO_TEMPLATES_DIR may point
    anywhere."""
    where = f"{TEMPLATES_ENV}={os.environ[TEMPLATES_ENV]!r}: " if TEMPLATES_ENV in os.environ \
        else ""
    return ValueError(f"{where}{what}; point {TEMPLATES_ENV} at a copy of pypto's templates/ "
                      "directory, or unset it to use the installed one")
