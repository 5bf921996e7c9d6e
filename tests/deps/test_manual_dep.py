"""`pl.create_tensor(..., manual_dep=True)`: every access to that tensor, for its whole life
(its views, and the names tasks rebind it to), is left out of dependency inference, as
`pl.no_dep` leaves out one argument (upstream's tensor-lifetime opt-out).  Readers are
ordered by an explicit `deps=`; without it, the race detector reports the read."""

from __future__ import annotations

import json

import pytest
import torch
from located_errors import COPY_KERNEL, entry_error

import pypto.language as pl
from pypto.ir import TypeCheckError
from pypto.runtime import RunConfig

N, TILE_ROWS, COLS = 4, 16, 128
ROWS = N * TILE_ROWS


@pl.jit
def tensor_claim(a: pl.Tensor[[ROWS, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
    scratch = pl.create_tensor([ROWS, COLS], pl.FP32, manual_dep=True)
    writers = pl.array.create(N, pl.TASK_ID)
    for i in pl.range(N):
        with pl.at(level=pl.Level.CORE_GROUP) as tid:
            t = pl.load(a, [i * TILE_ROWS, 0], [TILE_ROWS, COLS])
            pl.store(pl.mul(t, 2.0), [i * TILE_ROWS, 0], scratch)
        writers[i] = tid
    with pl.at(level=pl.Level.CORE_GROUP, deps=[writers]):
        for i in pl.range(N):
            t = pl.load(scratch, [i * TILE_ROWS, 0], [TILE_ROWS, COLS])
            pl.store(t, [i * TILE_ROWS, 0], out)
    return out


def unordered(manual_dep: bool):
    """Writers then one reader of `scratch`, no deps=: inferred edges order them unless
    scratch is manual_dep."""
    @pl.jit
    def scratch_copy(a: pl.Tensor[[ROWS, COLS], pl.FP32],
                     out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]):
        scratch = pl.create_tensor([ROWS, COLS], pl.FP32, layout=pl.ND, manual_dep=manual_dep)
        for i in pl.range(N):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(a, [i * TILE_ROWS, 0], [TILE_ROWS, COLS])
                pl.store(pl.mul(t, 2.0), [i * TILE_ROWS, 0], scratch)
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(N):
                t = pl.load(scratch, [i * TILE_ROWS, 0], [TILE_ROWS, COLS])
                pl.store(t, [i * TILE_ROWS, 0], out)
        return out
    return scratch_copy


claim_without_deps = unordered(manual_dep=True)  # deps= forgotten: nothing orders the read
tracked_scratch = unordered(manual_dep=False)


def _run(program, tmp_path, monkeypatch, detect_races=False, seed=None):
    monkeypatch.setenv("PYPTO_WORK_DIR", str(tmp_path))
    a, out = torch.randn(ROWS, COLS), torch.zeros(ROWS, COLS)
    program(a, out, config=RunConfig(platform="a2a3sim", enable_dep_gen=True,
                                     detect_races=detect_races, schedule_seed=seed))
    edges = json.loads(next(tmp_path.rglob("deps.json")).read_text())["edges"]
    return a, out, edges


def test_the_readers_deps_order_a_manual_dep_tensor(tmp_path, monkeypatch):
    a, out, edges = _run(tensor_claim, tmp_path, monkeypatch, detect_races=True)
    assert torch.equal(out, a * 2.0)
    # Only the four explicit edges writer -> reader: none inferred through scratch.
    assert sorted((e["src"], e["dst"]) for e in edges) == [(i, N) for i in range(N)]
    assert {e["source"] for e in edges} == {"explicit"}


def test_a_tracked_scratch_gets_its_edges_inferred(tmp_path, monkeypatch):
    a, out, edges = _run(tracked_scratch, tmp_path, monkeypatch, detect_races=True)
    assert torch.equal(out, a * 2.0)
    assert sorted((e["src"], e["dst"]) for e in edges) == [(i, N) for i in range(N)]
    assert {e["source"] for e in edges} == {"tensormap"}


def test_without_deps_the_read_of_a_manual_dep_tensor_is_a_race(tmp_path, monkeypatch):
    with pytest.raises(Exception, match="read-after-write race"):
        _run(claim_without_deps, tmp_path, monkeypatch, detect_races=True)
    # Not ordered: a schedule that runs the reader first reads what is not written yet.
    _, _, edges = _run(claim_without_deps, tmp_path, monkeypatch, seed=1)
    assert edges == []


def test_the_marker_prints_and_reads_back():
    a, out = torch.zeros(ROWS, COLS), torch.zeros(ROWS, COLS)
    text = tensor_claim.frontend(a, out).as_python()
    assert "manual_dep=True" in text
    assert pl.parse(text) == tensor_claim.frontend(a, out)
    assert "layout" not in tracked_scratch.frontend(a, out).as_python()  # ND: the default


@pytest.mark.parametrize("keyword, message", [
    ("layout=pl.DN", "row-major"),
    ("layout=pl.NZ", "row-major"),
    ("init_value=0.0", "init_value"),
    ("manual_dep=1", "True or False"),
])
def test_what_create_tensor_cannot_mean_here_is_refused_at_its_line(keyword, message):
    body = (f"    s = pl.create_tensor([16, 128], pl.FP32, {keyword})\n"
            "    s = k(x, s)\n    out = k(s, out)")
    error, lines = entry_error(body, TypeCheckError, before=COPY_KERNEL)
    assert message in str(error)
    assert "pl.create_tensor" in lines[error.span.line - 1]
