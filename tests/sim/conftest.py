"""Builds the C++ test drivers for the simulator's tile-ISA headers once per session."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from pypto.sim import INCLUDE_DIR

HERE = Path(__file__).resolve().parent
# The flags generated kernels are compiled with, plus warnings that must stay quiet.
CXXFLAGS = ["-std=c++17", "-O2", "-fPIC", "-shared", "-ffp-contract=off",
            "-Wall", "-Wextra", "-Werror"]

c_i32, c_i64, c_int, c_double = ctypes.c_int32, ctypes.c_int64, ctypes.c_int, ctypes.c_double
c_ptr = ctypes.c_void_p

SIGNATURES = {
    "sim_convert": [c_int, c_int, c_ptr, c_ptr, c_i64, c_int],
    "sim_f16_inline": [c_ptr, c_ptr, c_i64, c_ptr, c_ptr, c_i64],
    "sim_binary": [c_int, c_int, c_ptr, c_ptr, c_ptr, c_i32, c_i32, c_i32, c_i32],
    "sim_unary": [c_int, c_int, c_ptr, c_ptr, c_i32, c_i32],
    "sim_scalar": [c_int, c_int, c_ptr, c_ptr, c_double, c_i32, c_i32],
    "sim_pad": [c_int, c_int, c_ptr],
    "sim_tload": [c_int, c_ptr, c_int, c_ptr, c_ptr, c_i64, c_i64, c_ptr, c_i64]
    + [c_i32] * 4
    + [c_int],
    "sim_tstore": [c_int, c_ptr, c_int, c_ptr, c_ptr, c_i64, c_i64, c_ptr, c_i64] + [c_i32] * 4,
    "sim_tcvt_f32_f16": [c_ptr, c_i32, c_ptr, c_i32, c_i32, c_i32, c_i32, c_int],
    "sim_texpands_f32": [c_ptr] + [c_i32] * 4 + [ctypes.c_float],
    "sim_tfillpad_f32": [c_ptr, c_ptr] + [c_i32] * 4 + [c_int],
    "sim_reduce": [c_int, c_int, c_ptr, c_ptr, c_ptr, c_i32, c_i32],
    "sim_matmul": [c_int, c_ptr, c_ptr, c_ptr, c_ptr, c_i32, c_i32, c_i32, c_int, c_int],
    "sim_matmul_kernel": [c_int, c_int, c_ptr, c_ptr, c_ptr, c_ptr, c_i32, c_i32, c_i32, c_int,
                          c_int],
    "sim_elementwise_reference": [c_int, c_int, c_ptr, c_ptr, c_ptr, c_double, c_i64],
    "sim_binary_portable_fp32": [c_int, c_ptr, c_ptr, c_ptr, c_i64],
    "sim_unary_portable_fp32": [c_int, c_ptr, c_ptr, c_i64],
    "sim_expand": [c_int, c_int, c_ptr, c_ptr, c_ptr, c_i32, c_i32],
    "sim_fast_narrow": [c_int, c_int, c_ptr, c_ptr, c_ptr, c_i64, c_ptr, c_ptr, c_ptr, c_i64],
}


@pytest.fixture(scope="session")
def sim(tmp_path_factory) -> SimpleNamespace:
    """Both drivers, compiled in parallel; one namespace of their extern "C" functions."""
    out = tmp_path_factory.mktemp("sim_drivers")
    jobs = []
    for name in ("sim_convert_driver", "sim_isa_driver"):
        so = out / f"{name}.so"
        cmd = ["g++", *CXXFLAGS, f"-I{INCLUDE_DIR}", str(HERE / f"{name}.cpp"), "-o", str(so)]
        jobs.append((so, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)))
    funcs = {}
    for so, proc in jobs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err
        lib = ctypes.CDLL(str(so))
        for fname, argtypes in SIGNATURES.items():
            if hasattr(lib, fname):
                fn = getattr(lib, fname)
                fn.argtypes = argtypes
                funcs[fname] = fn
    assert set(funcs) == set(SIGNATURES)
    return SimpleNamespace(**funcs, drivers={so.stem: so for so, _ in jobs})
