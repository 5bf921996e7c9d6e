"""The simulator computes the same bits on every host: its exp and log (fmath.hpp) are
pypto.golden.fp64's float64 functions rounded once to FP32, not the host's libm, and
PYPTO_SIM_SIMD=0 (no vector path, no F16C, no AVX2/AVX-512 matmul) changes no bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from pypto.golden import fp64
from pypto.ir.dtypes import DataType as DT

UNARY = {"exp": 0, "log": 1}
FP64 = {"exp": fp64.exp, "log": fp64.log}
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284,
                     -87.33655, -103.97, -103.98, -104.0, 1e-45, -1e-45, 1.17549435e-38,
                     3.4028235e38], dtype=np.float32)


def ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def sampled_floats() -> np.ndarray:
    """Every 4099th FP32 bit pattern (both signs, every binade, NaN payloads) and specials,
    as a [rows, 1024] tile."""
    bits = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), SPECIALS])
    return np.resize(x, (-(-x.size // 1024), 1024))


def sim_unary(sim, dtype: DT, op: str, x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    rows, cols = x.shape
    assert sim.sim_unary(dtype.code, UNARY[op], ptr(out), ptr(x), rows, cols) == 0
    return out


@pytest.mark.parametrize("op", list(UNARY))
def test_fp32_exp_and_log_are_the_float64_functions_rounded_once(sim, op):
    x = sampled_floats()
    with np.errstate(all="ignore"):
        want = FP64[op](x.astype(np.float64)).astype(np.float32)
    got = sim_unary(sim, DT.FP32, op, x)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("op", list(UNARY))
def test_fp16_exp_and_log_of_every_half_round_the_fp32_result_once_more(sim, op):
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).reshape(64, 1024)
    x = torch.from_numpy(halves.view(np.int16)).view(torch.float16)
    with np.errstate(all="ignore"):
        fp32 = FP64[op](x.double().numpy()).astype(np.float32)
    want = torch.from_numpy(fp32).half()
    want = torch.where(want.isnan(), torch.tensor(float("nan"), dtype=torch.float16), want)
    got = sim_unary(sim, DT.FP16, op, halves)
    np.testing.assert_array_equal(got, want.view(torch.int16).numpy().view(np.uint16))


def test_fp32_exp_is_within_half_an_ulp_and_a_hair_of_the_exact_value(sim):
    """Against float64 exp rounded to FP32 (glibc's, numpy's: within an ulp of float64),
    the results differ only where the exact value lies within a few float64 ulps of an
    FP32 rounding midpoint: almost never."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-103.0, 88.0, (512, 1024)).astype(np.float32)
    got = sim_unary(sim, DT.FP32, "exp", x)
    want = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.count_nonzero(got != want) <= 2
    assert np.max(np.abs(got.view(np.int32) - want.view(np.int32))) <= 1


SIMD_SCRIPT = r"""
import ctypes, hashlib, json, sys
import numpy as np
import torch

isa = ctypes.CDLL(sys.argv[1])
rng = np.random.default_rng(3)
digests = {}

def record(name, array):
    digests[name] = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()

def p(a):
    return ctypes.c_void_p(a.ctypes.data)

rows, cols = 37, 301  # tails after every vector width
f32 = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
f32.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, -0.0, 3e38, 1e-40]
g32 = rng.standard_normal((rows, cols)).astype(np.float32)
for dtype, code in (("fp32", 10), ("fp16", 8), ("bf16", 9)):
    if dtype == "fp32":
        a, b = f32, g32
    else:
        td = torch.float16 if dtype == "fp16" else torch.bfloat16
        a = torch.from_numpy(f32).to(td).view(torch.int16).numpy()
        b = torch.from_numpy(g32).to(td).view(torch.int16).numpy()
    for op in range(6):  # add sub mul div max min
        out = np.zeros_like(a)
        assert isa.sim_binary(code, op, p(out), p(a), p(b), rows, cols, rows, cols) == 0
        record(f"binary {dtype} {op}", out)
    for op in range(8):  # exp log sqrt rsqrt recip neg abs relu
        out = np.zeros_like(a)
        assert isa.sim_unary(code, op, p(out), p(a), rows, cols) == 0
        record(f"unary {dtype} {op}", out)
m, n, k = 45, 70, 131
for kind, dtype in enumerate((torch.float16, torch.bfloat16, torch.float32, torch.float16)):
    lhs = torch.from_numpy(rng.standard_normal((m, k)).astype(np.float32)).to(dtype)
    rhs = torch.from_numpy(rng.standard_normal((k, n)).astype(np.float32)).to(dtype)
    a, b = (t.numpy() if dtype == torch.float32 else t.view(torch.int16).numpy()
            for t in (lhs, rhs))
    c = np.zeros((m, n), dtype=np.float16 if kind == 3 else np.float32)
    assert isa.sim_matmul(kind, p(c), None, p(a), p(b), m, n, k, 0, 0) == 0
    record(f"matmul {kind}", c)
digests["matmul width"] = isa.sim_matmul_kernel(2, 3, p(c), None, p(a), p(b), m, n, k, 0, 0)
print(json.dumps(digests, sort_keys=True))
"""


def test_turning_every_simd_path_off_changes_no_bit(sim, tmp_path):
    """The same instructions in two processes, one with PYPTO_SIM_SIMD=0: equal bytes."""
    script = tmp_path / "simd.py"
    script.write_text(SIMD_SCRIPT)
    runs = {}
    for setting in ("0", "1"):
        proc = subprocess.run([sys.executable, str(script), str(sim.drivers["sim_isa_driver"])],
                              env={**os.environ, "PYPTO_SIM_SIMD": setting},
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        runs[setting] = json.loads(proc.stdout)
    assert len(runs["0"]) == 3 * (6 + 8) + 4 + 1
    assert runs["0"].pop("matmul width") == 4  # the scalar kernel: the switch took effect
    assert runs["1"].pop("matmul width") > 4
    assert runs["0"] == runs["1"]
