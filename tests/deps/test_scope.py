"""`with pl.scope(...)`: upstream's runtime scope.  `mode=pl.ScopeMode.MANUAL` is
`pl.manual_scope()`; `pl.scope()` (AUTO) is a runtime scope (its tasks take the task ring of
its depth) whose tasks infer their edges as everywhere else."""

from __future__ import annotations

import json

import pytest
import torch
from located_errors import entry_error

import pypto.language as pl
from pypto.ir import ParseError
from pypto.runtime import RaceError, RunConfig

R, C = 32, 128


@pl.jit
def spelled_manual(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.scope(mode=pl.ScopeMode.MANUAL):
        with pl.at(level=pl.Level.CORE_GROUP) as produce:
            scratch = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[produce]):
            out[:] = pl.mul(scratch, 2.0)
    return out


@pl.jit
def manual_scope(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.manual_scope():
        with pl.at(level=pl.Level.CORE_GROUP) as produce:
            scratch = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP, deps=[produce]):
            out[:] = pl.mul(scratch, 2.0)
    return out


@pl.jit
def manual_unordered(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.scope(pl.ScopeMode.MANUAL):
        with pl.at(level=pl.Level.CORE_GROUP):
            scratch = pl.add(x, 1.0)
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(scratch, 2.0)
    return out


@pl.jit
def in_auto_scopes(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.scope():
        with pl.at(level=pl.Level.CORE_GROUP):
            scratch = pl.add(x, 1.0)
        with pl.scope(mode=pl.ScopeMode.AUTO), pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.mul(scratch, 2.0)
    return out


@pl.jit
def without_scopes(x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        scratch = pl.add(x, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(scratch, 2.0)
    return out


def _args():
    return torch.randn(R, C), torch.zeros(R, C)


def _body(program):
    """The entry's statements as printed, without its name."""
    text = program.as_python()
    return text[text.index("def ", text.index("Orchestration")):].split("\n", 1)[1]


def test_the_manual_mode_is_the_manual_scope():
    assert _body(spelled_manual.frontend(*_args())) == _body(manual_scope.frontend(*_args()))
    x, out = _args()
    spelled_manual(x, out, config=RunConfig(detect_races=True))
    assert torch.equal(out, (x + 1.0) * 2.0)


def test_a_manual_scope_infers_no_edge_whatever_its_spelling():
    x, out = _args()
    with pytest.raises(RaceError, match="read-after-write race on `scratch`"):
        manual_unordered(x, out, config=RunConfig(detect_races=True))


def test_auto_scopes_are_runtime_scopes_that_change_no_edge(tmp_path, monkeypatch):
    # They stay in the IR (they pick the task ring of their depth, pypto.runtime.rings);
    # the tasks inside infer the same edges.
    assert _body(in_auto_scopes.frontend(*_args())).count("with pl.scope():") == 2
    edges = []
    for name, kernel in (("scoped", in_auto_scopes), ("flat", without_scopes)):
        monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path / name))
        x, out = _args()
        kernel(x, out, config=RunConfig(enable_dep_gen=True))
        graph = json.loads((tmp_path / name / "dfx_outputs" / "deps.json").read_text())
        edges.append([(e["src"], e["dst"], e["kind"]) for e in graph["edges"]])
    assert edges[0] == edges[1] == [(0, 1, "RAW")]
    x, out = _args()
    in_auto_scopes(x, out, config=RunConfig(detect_races=True, schedule_seed=3))
    assert torch.equal(out, (x + 1.0) * 2.0)


@pytest.mark.parametrize("body, message", [
    ("    with pl.manual_scope():\n        with pl.scope():\n"
     "            with pl.at(level=pl.Level.CORE_GROUP):\n                out[:] = pl.add(x, 1.0)",
     "cannot be nested inside a manual scope"),
    ("    with pl.scope(mode=pl.Level.CORE_GROUP):\n"
     "        with pl.at(level=pl.Level.CORE_GROUP):\n            out[:] = pl.add(x, 1.0)",
     "takes pl.ScopeMode.AUTO or pl.ScopeMode.MANUAL"),
    ("    with pl.scope(mode=pl.ScopeMode.AUTO, depth=1):\n"
     "        with pl.at(level=pl.Level.CORE_GROUP):\n            out[:] = pl.add(x, 1.0)",
     "no other arguments"),
    ("    with pl.at(level=pl.Level.CORE_GROUP):\n        with pl.scope():\n"
     "            out[:] = pl.add(x, 1.0)", "cannot be nested inside a `pl.at`"),
])
def test_a_misplaced_or_misspelled_scope_is_refused_at_its_line(body, message):
    error, lines = entry_error(body, ParseError, rows=32)
    assert message in str(error)
    assert "pl.scope" in lines[error.span.line - 1]
