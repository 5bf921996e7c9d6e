"""`pypto triage FILE.py:CALLABLE` on a file that cannot be used exits 64 (the documented
status for an unusable kernel) with one line naming the file and the line that failed,
never a traceback."""

from __future__ import annotations

import pytest

from pypto.tools.cli import main as pypto_cli
from pypto.tools.triage import EXIT_USAGE

BROKEN = {
    "missing_import": ("import torch\n\nimport no_such_module_here\n", 3,
                       "ModuleNotFoundError: No module named 'no_such_module_here'"),
    "syntax_error": ("import torch\n\n\ndef kernel(:\n    pass\n", 4, "SyntaxError: "),
    "raises_at_import": ("def setup():\n    raise RuntimeError('no device')\n\n\nsetup()\n", 2,
                         "RuntimeError: no device"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_kernel_file_that_fails_to_import_exits_64_naming_file_and_line(case, tmp_path,
                                                                          capsys):
    source, line, error = BROKEN[case]
    path = tmp_path / f"{case}.py"
    path.write_text(source)
    code = pypto_cli(["triage", f"{path}:kernel", "--golden", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE == 64
    assert err.startswith(f"pypto triage: {path}:{line}: importing it failed: {error}")
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_a_kernel_file_that_does_not_exist_exits_64_saying_so(tmp_path, capsys):
    code = pypto_cli(["triage", f"{tmp_path}/absent.py:kernel", "--golden", str(tmp_path)])
    assert code == 64
    assert capsys.readouterr().err == f"pypto triage: {tmp_path}/absent.py: no such file\n"
