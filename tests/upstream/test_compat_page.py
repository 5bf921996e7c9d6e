"""docs/upstream-compat.md cannot drift: it is generated from the table, every `pl.` name
the upstream snapshot uses is in the table, and each status agrees with the code."""

from __future__ import annotations

import functools
import importlib
import re

import pytest

import pypto.language as pl
from pypto.tools import upstream_compat
from pypto.tools.upstream_compat import ABSENT, NAMES, REFUSED, SUPPORTED

SNAPSHOT = upstream_compat.snapshot_root()


def _resolve(name: str):
    if name.startswith("pypto."):  # a module, or a name in one
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            module, _, attr = name.rpartition(".")
            try:
                return getattr(importlib.import_module(module), attr)
            except ModuleNotFoundError as error:
                raise AttributeError(name) from error
    return functools.reduce(getattr, name.removeprefix("pl.").split("."), pl)


def test_the_page_is_generated_from_the_table():
    assert upstream_compat.DEFAULT_OUTPUT.read_text() == upstream_compat.render(), \
        "docs/upstream-compat.md is stale: run `pypto upstream-compat`"


@pytest.mark.parametrize("name", [n for n, (s, _) in NAMES.items() if s != ABSENT])
def test_a_supported_or_refused_name_resolves(name):
    _resolve(name)


@pytest.mark.parametrize("name", [n for n, (s, _) in NAMES.items() if s == ABSENT])
def test_an_absent_name_does_not_resolve(name):
    with pytest.raises(AttributeError):
        _resolve(name)


def test_every_refusal_says_why():
    for name, (status, why) in NAMES.items():
        assert status in (SUPPORTED, REFUSED, ABSENT), name
        assert (status == SUPPORTED) == (why == ""), name


_NAME = re.compile(r"\bpl\.[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*")
# pypto's other modules: `pypto.debug.torch_codegen`, `from pypto.runtime import run, X`.
_MODULE_NAME = re.compile(r"\bpypto(?:\.(?:ir|backend|debug|runtime)\b)(?:\.[A-Za-z_]\w*)+")
_MODULE_IMPORT = re.compile(r"^\s*from pypto((?:\.[a-z_]+)*) import \(?([A-Za-z_0-9, ]+)", re.M)
_CATALOG = re.compile(r"\]\[pypto\.language\.([A-Za-z_][A-Za-z_0-9.]*)\]")


def _snapshot_names() -> set[str]:
    names = set()
    for path in [*(SNAPSHOT / "docs").rglob("*.md"), *(SNAPSHOT / "examples").rglob("*.py")]:
        text = path.read_text()
        names.update(_NAME.findall(text))
        names.update(f"pl.{n}" for n in _CATALOG.findall(text))
        names.update(_MODULE_NAME.findall(text))
        names.update(f"pypto{module}.{n.strip()}" for module, line in _MODULE_IMPORT.findall(text)
                     if not module.startswith(".language") for n in line.split(",") if n.strip())
    # Methods of dtypes and attributes of the module are not names of the language.
    # A private name of a module (`distributed_runner._tensor_from_continuous`) is not its
    # surface.
    return {n.removesuffix(".get_byte") for n in names
            if n != "pl.__all__" and "._" not in n}


@pytest.mark.skipif(not (SNAPSHOT / "docs").is_dir(),
                    reason=f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}); "
                           "set PYPTO_UPSTREAM_ROOT")
def test_every_name_the_snapshot_uses_is_in_the_table():
    missing = sorted(_snapshot_names() - set(NAMES))
    assert missing == [], f"add these to pypto/tools/upstream_compat.py: {missing}"


@pl.jit
def _joins_tasks(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    _gate = pl.task_dummy(deps=[])  # upstream's FAQ: not defined, it lives under pl.system
    return out


def test_a_name_upstream_keeps_elsewhere_is_an_error_saying_where_it_lives():
    import torch

    from pypto.ir.errors import ParseError

    with pytest.raises(ParseError, match=r"`pl\.task_dummy` is not a pypto operator") as info:
        _joins_tasks.frontend(torch.zeros(16, 16), torch.zeros(16, 16))
    assert info.value.hint == "it lives elsewhere: pl.system.task_dummy(deps=[...])"
    assert info.value.span.line == _joins_tasks.fn.__code__.co_firstlineno + 2
