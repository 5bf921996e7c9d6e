"""The dump viewer lists and filters records, prints and exports tensors as text whose
values are the tensors', and compares dumps with a golden or a torch reference."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from pypto.runtime import write_golden
from pypto.tools.cli import main as pypto

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def level2(dumped):
    """A level-2 dump of the three-task program."""
    return dumped(2)


def viewer(capsys, *args) -> tuple[int, str]:
    code = pypto(["dump-viewer", *map(str, args)])
    return code, capsys.readouterr().out


def listed(out: str) -> list[int]:
    return [int(m) for m in re.findall(r"^#(\d+)", out, flags=re.MULTILINE)]


def test_it_lists_every_record_of_the_work_dirs_dump(level2, capsys):
    code, out = viewer(capsys)  # PYPTO_WORK_DIR: the test's work dir
    assert code == 0 and listed(out) == list(range(9))
    assert "9 of 9 records; `three_tasks` on a2a3sim, level 2, complete" in out


@pytest.mark.parametrize("args, expected", [
    (["-t", "1"], [2, 3, 4]),
    (["-t", "three_tasks_third", "-s", "after"], [8]),
    (["-t", "third", "-s", "after"], [8]),          # the name_hint the pl.at was given
    (["-t", "second"], [2, 3, 4]),
    (["-s", "before", "-r", "input"], [0, 2, 3, 6, 7]),
    (["-r", "inout"], [5, 8]),
    (["-a", "a"], [1, 3, 6]),
    (["-t", "2", "-a", "2"], [7]),
    (["-i", "4", "-e"], [4]),
])
def test_filters_select_the_records_they_name(level2, capsys, tmp_path, args, expected):
    if "-e" in args:
        code, out = viewer(capsys, *args, "-o", tmp_path / "x")
        assert [int(Path(p).name[:4]) for p in out.split()] == expected
    else:
        code, out = viewer(capsys, level2.directory, *args)
        assert listed(out) == expected
    assert code == 0


def test_a_filter_matching_nothing_exits_2_listing_the_names_the_dump_has(level2, capsys):
    code = pypto(["dump-viewer", "-t", "secnod", "-a", "a"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "no record matches -t secnod -a a" in captured.err
    assert ("`three_tasks_first` (task 0), `three_tasks_second` (task 1), "
            "`three_tasks_third` (task 2)") in captured.err
    assert "index, parameter or buffer name): a, acc, b, x, y" in captured.err


def _values_of(text: str) -> list[float]:
    """Every number of the `## values` section of an exported tensor."""
    body = text.split("## values (row-major)\n", 1)[1]
    return [float(v) for line in body.splitlines() for v in line.split("]", 1)[1].split()]


def test_export_writes_one_text_file_per_tensor_holding_its_values(level2, tensors, tmp_path,
                                                                  capsys):
    code, out = viewer(capsys, level2.directory, "-t", "2", "-e", "-o", tmp_path / "txt")
    files = sorted((tmp_path / "txt").iterdir())
    assert code == 0 and [f.name for f in files] == [
        "0005_task2_three_tasks_third_before_inout_arg0_acc.txt",
        "0006_task2_three_tasks_third_before_input_arg1_a.txt",
        "0007_task2_three_tasks_third_before_input_arg2_b.txt",
        "0008_task2_three_tasks_third_after_inout_arg0_acc.txt",
    ]
    expected = [tensors["acc"], tensors["a"], tensors["b"], tensors["acc_after"]]
    for path, tensor in zip(files, expected, strict=True):
        text = path.read_text()
        assert "## overview: max |x| per block of 2 x 16 elements" in text
        values = torch.tensor(_values_of(text)).reshape(16, 128)
        assert torch.equal(values, tensor)  # %.8g round-trips FP32


def test_an_index_prints_that_tensor(level2, capsys):
    code, out = viewer(capsys, level2.directory, "-i", "1")
    assert code == 0
    assert "task 0 (three_tasks_first)" in out and "stage after, role output" in out
    assert "## values (row-major)" in out and out.count("\n[") == 16 * 16


def test_compare_with_the_golden_matches_the_outputs_and_inputs(level2, tensors, tmp_path,
                                                                capsys):
    golden = write_golden(tmp_path / "golden", {"x": tensors["x"], "y": tensors["y"],
                                                "acc": tensors["acc"]},
                          {"acc": tensors["acc_after"]})
    code, out = viewer(capsys, level2.directory, "-s", "after", "-a", "acc", "--compare", golden)
    assert code == 0 and "matches `acc`" in out and "1 compared, 0 differ" in out
    code, out = viewer(capsys, level2.directory, "-i", "0", "--compare", golden)
    assert code == 0 and "matches `x`" in out


def test_compare_with_a_torch_reference_reports_the_tensor_that_differs(level2, tensors,
                                                                         tmp_path, capsys):
    wrong_b = tensors["b"].clone()
    wrong_b[3, 7] += 1.0
    save_file({"a": tensors["a"], "b": wrong_b}, str(tmp_path / "ref.safetensors"))
    code, out = viewer(capsys, level2.directory, "-t", "2", "-r", "input", "--compare",
                       tmp_path / "ref.safetensors")
    assert code == 1 and "2 compared, 1 differ" in out
    assert "matches `a`" in out and "DIFFERS from `b`: b: 1 of 2048 elements" in out
    assert "worst at index [3, 7]" in out
    torch.save({"out": tensors["a"]}, tmp_path / "ref.pt")
    code, out = viewer(capsys, level2.directory, "-i", "1", "--compare", tmp_path / "ref.pt",
                       "--ref-name", "out")
    assert code == 0 and "matches `out`" in out


def test_a_truncated_record_is_listed_as_such(dumped, monkeypatch, capsys):
    monkeypatch.setenv("PYPTO_DUMP_BUDGET", "9K")
    with pytest.warns(UserWarning, match="budget"):
        dumped(2, schedule_seed=0)
    code, out = viewer(capsys)
    assert code == 0 and "TRUNCATED (1024 of 8192 bytes)" in out
    assert "budget 9216 bytes exhausted: 1 truncated, 7 dropped" in out


def test_python_m_simpler_setup_tools_dump_viewer_is_the_same_tool(level2):
    proc = subprocess.run(
        [sys.executable, "-m", "simpler_setup.tools.dump_viewer", str(level2.directory),
         "-t", "0"], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert listed(proc.stdout) == [0, 1]


def test_a_directory_without_a_dump_says_how_to_make_one(tmp_path, capsys):
    assert pypto(["dump-viewer", str(tmp_path)]) == 2
    assert "enable_dump_args" in capsys.readouterr().err
