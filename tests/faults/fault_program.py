"""The program the fault-injection tests build, kill, corrupt and rebuild.

Run as a script it builds the program into $PYPTO_CACHE_DIR and prints the artifact
directory: what a killed or concurrent builder process runs.  It needs no torch.
"""

from __future__ import annotations

import sys

import pypto.language as pl
from pypto.compiler import CompileOptions, build_program
from pypto.ir.dtypes import DataType
from pypto.ir.types import TensorType

R, C = 32, 128


@pl.jit
def three_stages(x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
        s = pl.add(x, y)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
        t = pl.mul(s, 3.0)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="third"):
        out[:] = pl.sub(t, x)
    return out


def expected(x, y):
    return (x + y) * 3.0 - x


def frontend(scale: float = 3.0):
    """The program's IR; another `scale` constant makes another content key."""
    program = three_stages.frontend_for_types([TensorType((R, C), DataType.FP32)] * 3)
    if scale == 3.0:
        return program
    return pl.parse(program.as_python().replace("3.0", repr(scale)))


def build(platform: str = "a2a3sim", scale: float = 3.0):
    """The artifact directory in the cache (built if missing)."""
    return build_program(frontend(scale), CompileOptions(platform=platform))


if __name__ == "__main__":
    scales = [float(s) for s in sys.argv[1:]] or [3.0]
    for scale in scales:
        print(build(scale=scale), flush=True)
