"""The simulator's `convert<D, S>` over numpy arrays (tests/sim/sim_convert_driver.cpp), for
the element-format tests that check its every code against the numpy references."""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pypto.ir.dtypes import DataType
from pypto.sim import INCLUDE_DIR

MODES = {"none": 0, "rint": 1, "round": 2, "floor": 3, "ceil": 4, "trunc": 5, "odd": 6}
DRIVER = Path(__file__).resolve().parent / "sim" / "sim_convert_driver.cpp"


def sim_converter(directory: Path, storage: dict) -> Callable[..., np.ndarray]:
    """`convert(dst, src, values, mode="none")`: the driver built in `directory`, each
    dtype's elements held as numpy's `storage[dtype]`."""
    so = directory / "convert.so"
    cmd = ["g++", "-std=c++17", "-O1", "-fPIC", "-shared", "-ffp-contract=off", "-Wall",
           "-Wextra", "-Werror", f"-I{INCLUDE_DIR}", str(DRIVER), "-o", str(so)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    fn = ctypes.CDLL(str(so)).sim_convert
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                   ctypes.c_int]

    def convert(dst: DataType, src: DataType, values, mode: str = "none") -> np.ndarray:
        x = np.ascontiguousarray(values, dtype=storage[src])
        out = np.empty(x.shape, dtype=storage[dst])
        assert fn(dst.code, src.code, x.ctypes.data, out.ctypes.data, x.size, MODES[mode]) == 0
        return out

    return convert
