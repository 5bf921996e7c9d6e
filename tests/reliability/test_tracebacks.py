"""A user error leaving a public entry point shows the user's frames, not pypto's: the
message names the file and line; the traceback holds the user's script and one frame of
pypto's (`api_boundary`'s re-raise). `PYPTO_TRACEBACK=full` keeps every frame."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pypto

PACKAGE = str(Path(pypto.__file__).resolve().parent)

JIT_SCRIPT = """\
import torch
import pypto.language as pl


@pl.jit
def kernel(x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
    t = pl.no_such_operator(x)
    return out


kernel(torch.zeros(16, 16), torch.zeros(16, 16))
"""

PROGRAM_SCRIPT = """\
import pypto.language as pl


def build(cols):
    @pl.program
    class Program:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            t = pl.load(x, [0, 0], [16, cols])
            u = pl.no_such_operator(t)
            return out
    return Program


build(16)
"""

LOAD_SCRIPT = """\
from pypto.runtime import load_artifact

load_artifact("{path}")
"""


def stderr_of(run_script, text: str, full: bool = False) -> str:
    env = {"PYPTO_TRACEBACK": "full" if full else "filtered"}
    proc = run_script(text, name="user_script.py", env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    return proc.stderr


def frames(stderr: str) -> list[str]:
    return re.findall(r'^  File "([^"]+)", line \d+', stderr, flags=re.M)


def pypto_frames(stderr: str) -> list[str]:
    return [f for f in frames(stderr) if f.startswith(PACKAGE)]


@pytest.mark.parametrize("text, line, error", [
    (JIT_SCRIPT, 7, "ParseError"),
    (PROGRAM_SCRIPT, 10, "ParseError"),
])
def test_a_dsl_error_shows_the_users_frames_and_names_the_line(run_script, tmp_path, text, line,
                                                               error):
    stderr = stderr_of(run_script, text)
    assert f"{error}: {tmp_path / 'user_script.py'}:{line}: `pl.no_such_operator`" in stderr
    assert all(f == str(tmp_path / "user_script.py") or f.startswith(PACKAGE)
               for f in frames(stderr))
    assert [Path(f).name for f in pypto_frames(stderr)] == ["errors.py"]


def test_a_runtime_error_shows_the_users_frames(run_script, tmp_path):
    stderr = stderr_of(run_script, LOAD_SCRIPT.format(path=tmp_path / "no_such_artifact"))
    assert "ArtifactError" in stderr
    assert [Path(f).name for f in pypto_frames(stderr)] == ["errors.py"]


def test_pypto_traceback_full_keeps_every_frame(run_script):
    stderr = stderr_of(run_script, JIT_SCRIPT, full=True)
    assert "parser.py" in {Path(f).name for f in pypto_frames(stderr)}
