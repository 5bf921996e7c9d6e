"""pypto/runtime/abi.py mirrors pypto/sim/include/pto/abi.h byte for byte."""

import ctypes
import json
import subprocess
from pathlib import Path

import pytest

from pypto.ir.dtypes import DataType
from pypto.runtime import abi
from pypto.sim import INCLUDE_DIR

PROBE = Path(__file__).resolve().parent / "fixtures" / "abi_layout_probe.c"
STRUCTS = [abi.PtoTensor, abi.PtoArg, abi.PtoCore, abi.PtoTaskIds, abi.PtoRuntimeApi]


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory) -> dict:
    """What the C compiler says about abi.h."""
    exe = tmp_path_factory.mktemp("abi_probe") / "probe"
    subprocess.run(
        ["gcc", "-std=c11", "-I", str(INCLUDE_DIR), str(PROBE), "-o", str(exe)], check=True
    )
    return json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)


@pytest.mark.parametrize("struct", STRUCTS, ids=lambda s: s.__name__)
def test_struct_size_and_field_offsets_match_the_header(c_layout, struct):
    assert ctypes.sizeof(struct) == c_layout[f"sizeof {struct.__name__}"]
    for name, _ in struct._fields_:
        field = getattr(struct, name)
        assert [field.offset, field.size] == c_layout[f"{struct.__name__}.{name}"], name


def test_constants_and_enums_match_the_header(c_layout):
    assert c_layout["PTO_ABI_VERSION"] == abi.ABI_VERSION
    assert c_layout["PTO_MAX_RANK"] == abi.MAX_RANK
    for kind in abi.ArgKind:
        assert kind == c_layout[f"PTO_ARG_{kind.name}"]
    for direction in abi.Direction:
        assert direction == c_layout[f"PTO_{direction.name}"]
    assert c_layout["PTO_NO_DEP"] == abi.NO_DEP
    assert c_layout["PTO_DUMP"] == abi.DUMP
    assert c_layout["PTO_DIRECTION_MASK"] == abi.DIRECTION_MASK
    assert c_layout["PTO_TASK_EARLY_RESOLVE"] == abi.TASK_EARLY_RESOLVE
    assert c_layout["PTO_TASK_GANG"] == abi.TASK_GANG


def test_dtype_codes_match_the_header(c_layout):
    assert {dt.name: dt.code for dt in DataType} == {
        k.removeprefix("PTO_"): v
        for k, v in c_layout.items()
        if k.removeprefix("PTO_") in DataType.__members__
    }
