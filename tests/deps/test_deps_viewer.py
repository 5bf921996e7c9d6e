"""`pypto deps-viewer` renders a run's deps.json as text, Graphviz DOT and self-contained HTML."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig
from pypto.tools.cli import main

R, C = 32, 128


@pl.jit
def graph(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce") as produce:
        scratch = pl.add(x, 1.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume", deps=[produce]):
        y[:] = pl.mul(scratch, 2.0)
    return y


@pytest.fixture
def deps_file(work_dir):
    graph(torch.randn(R, C), torch.zeros(R, C), config=RunConfig(enable_dep_gen=True))
    return work_dir / "dfx_outputs" / "deps.json"


def test_text_lists_tasks_arguments_and_edges(deps_file, capsys):
    assert main(["deps-viewer"]) == 0  # default: <work_dir>/dfx_outputs/deps.json
    out = capsys.readouterr().out
    assert out.startswith("graph on a2a3sim: 2 tasks, 3 tensors, 2 edges")
    assert "#0 graph_produce" in out and "#1 graph_consume" in out
    assert "in    x: x (param FP32 [32, 128])" in out
    assert "waits for #0 (RAW scratch), #0 (explicit)" in out
    assert "#0 -> #1  tensormap RAW scratch" in out


def test_dot_is_a_digraph_with_one_edge_statement_per_edge(deps_file, tmp_path):
    target = tmp_path / "g.dot"
    assert main(["deps-viewer", str(deps_file.parent), "-f", "dot", "-o", str(target)]) == 0
    dot = target.read_text()
    assert dot.startswith("digraph deps {") and dot.rstrip().endswith("}")
    assert re.findall(r"^\s*t0 -> t1 \[label=\"([^\"]+)\"", dot, re.MULTILINE) == ["RAW scratch",
                                                                          "explicit"]
    assert 't0 [label="#0 graph_produce\\ncore 0"' in dot


def test_html_is_self_contained_with_an_svg_node_per_task(deps_file, tmp_path):
    target = tmp_path / "deps.html"
    assert main(["deps-viewer", str(deps_file), "--format", "html", "-o", str(target)]) == 0
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert page.count('<g class="node">') == 2 and page.count('<g class="edge">') == 2
    assert not re.search(r"(src|href)=\"(https?:|//)", page), "no external assets"
    assert "<script" not in page
    assert "graph_produce" in page and "explicit" in page


def test_a_missing_file_is_a_clear_error(work_dir, capsys):
    assert main(["deps-viewer"]) == 1
    err = capsys.readouterr().err
    assert "enable_dep_gen=True" in err


def test_a_file_of_another_kind_is_refused(tmp_path, capsys):
    bogus = tmp_path / "deps.json"
    bogus.write_text('{"traceEvents": []}')
    assert main(["deps-viewer", str(bogus)]) == 1
    assert "not a pypto deps.json" in capsys.readouterr().err


def test_the_console_script_runs_the_viewer(deps_file):
    proc = subprocess.run([sys.executable, "-m", "pypto.tools.cli", "deps-viewer",
                           str(deps_file)], capture_output=True, text=True, check=True)
    assert "graph on a2a3sim" in proc.stdout
