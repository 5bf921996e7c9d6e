"""The pieces of generated control-flow programs (fuzz_control.py): a case's tensors and
source, loops, padded tiles, exact expressions of one input, kernel source text.

A *case* is one generated program over tensors of its own, named `<case>_...`: source
lines (a section of the shared tile kernel, statements of the entry, kernels of its own)
and a reference that computes its outputs from its inputs with `fuzz_reference` (plain
torch, no pypto), running its loops in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import fuzz_programs as fp
import fuzz_reference as ref
import torch
from fuzz_programs import Expr
from hypothesis import strategies as st

DTYPES = fp.DTYPES
TILE_SHAPES = ((8, 16), (8, 32), (16, 16), (16, 32), (4, 64))
PADS = ("zero", "max", "min")
FOLD_FLOAT = ("add", "sub", "maximum", "minimum", "mul")  # folds of carried values
FOLD_INT = FOLD_FLOAT + ("xor", "or_", "and_")
MATMUL_DTYPES = {"FP32": "FP32", "FP16": "FP32", "BF16": "FP32", "INT8": "INT32"}  # -> acc
AT = "with pl.at(level=pl.Level.CORE_GROUP"


@dataclass(frozen=True)
class Tensor:
    """A tensor parameter of a case: `role` "in", "out" or "inout"; `values` "mixed"
    (fuzz_programs.random_values), "small" (integers in [-8, 8]: exact in any order) or
    "const:<k>" (every element k: a loop bound read at run time)."""

    name: str
    shape: tuple[int, int]
    dtype: str
    role: str = "in"
    values: str = "mixed"


@dataclass
class Case:
    """One generated program: its tensors, its source lines and its reference."""

    family: str
    name: str
    tensors: list[Tensor]
    reference: Callable[[dict], dict] = field(repr=False)
    kernel: list[str] = field(default_factory=list)  # a section of fuzz_tiles
    orchestration: list[str] = field(default_factory=list)  # statements of fuzz_kernel
    functions: list[str] = field(default_factory=list)  # kernels of its own
    tolerance: dict[str, int] = field(default_factory=dict)  # output -> ulps / units


@dataclass(frozen=True)
class Loop:
    """`for v in pl.<kind>(...)` over blocks start, start + step, ... < stop; with `scale`
    the variable counts elements (blocks times the block size) instead of blocks."""

    kind: str
    start: int
    stop: int
    step: int = 1
    scale: int = 1

    def header(self, var: str) -> str:
        a, b, s = self.start * self.scale, self.stop * self.scale, self.step * self.scale
        args = (b,) if a == 0 and s == 1 else (a, b) if s == 1 else (a, b, s)
        return f"for {var} in pl.{self.kind}({', '.join(map(str, args))}):"

    def blocks(self) -> list[int]:
        return list(range(self.start, self.stop, self.step))

    def offset(self, var: str, size: int) -> str:
        """The element offset of block `var` for blocks of `size`."""
        return var if self.scale == size else f"{var} * {size}"

    def block(self, var: str) -> str:
        """The block index, as an expression of the variable."""
        return var if self.scale == 1 else f"{var} // {self.scale}"


@st.composite
def loops(draw, n: int, size: int, kinds=("range", "unroll"), partial: bool = True) -> Loop:
    """A loop over (some of) n blocks of `size` elements."""
    kind = draw(st.sampled_from(kinds))
    start, step = 0, 1
    if partial and draw(st.integers(0, 3)) == 0:
        start = draw(st.integers(0, n))  # n: a loop that never runs
        step = draw(st.integers(1, 2))
    scale = size if draw(st.booleans()) else 1
    return Loop(kind, start, n, step, scale)


def padded_tile(x: torch.Tensor, r: int, c: int, shape, pad: str, fill: str | None,
                dtype: str) -> torch.Tensor:
    """The tile a load of `shape` at (r, c) gives: x where it exists, the pad value
    elsewhere; `fill` (pl.fillpad) then replaces everything outside the valid region."""
    rows, cols = shape
    vr, vc = min(rows, x.shape[0] - r), min(cols, x.shape[1] - c)
    t = torch.full((rows, cols), fp.pad_value(pad, dtype), dtype=x.dtype)
    t[:vr, :vc] = x[r:r + vr, c:c + vc]
    if fill is not None:
        mask = torch.ones_like(t, dtype=torch.bool)
        mask[:vr, :vc] = False
        t[mask] = torch.tensor(fp.pad_value(fill, dtype), dtype=t.dtype)
    return t


def input_names(expr: Expr) -> list[str]:
    """The inputs an expression reads (`x_<dtype>_<k>`), sorted."""
    return sorted(expr.inputs())


def emit(expr: Expr, leaf, indent: str, prefix: str) -> tuple[list[str], str]:
    """(statements computing `expr`, the name or input text holding its value); `leaf`
    maps an input name to its text, `prefix` starts every value's name."""
    em = fp.Emitter(leaf, indent, prefix)
    value = em.emit(expr)
    return em.lines, value


def annotation(t: Tensor) -> str:
    """The parameter annotation of `t`: pl.Tensor, pl.Out or pl.InOut of its shape."""
    ty = f"pl.Tensor[[{t.shape[0]}, {t.shape[1]}], pl.{t.dtype}]"
    return {"in": ty, "out": f"pl.Out[{ty}]", "inout": f"pl.InOut[{ty}]"}[t.role]


def contents_before(t: Tensor, inputs: dict) -> torch.Tensor:
    """An output's contents before the program: the given values of an InOut tensor; an
    Out tensor is written everywhere, so its start does not matter."""
    if t.role == "inout":
        return inputs[t.name].clone()
    return torch.zeros(t.shape, dtype=ref.TORCH[t.dtype])


def _mode(draw, src: str, dst: str) -> str:
    """Any mode; one that composes for a cast some backend runs as a double rounding."""
    mode = draw(st.sampled_from(fp.MODES))
    if (src, dst) in fp.DOUBLE_ROUNDING and mode not in fp.COMPOSING_MODES:
        mode = draw(st.sampled_from(fp.COMPOSING_MODES))
    return mode


def cast_to(draw, e: Expr, dst: str) -> Expr:
    """`e` converted to `dst`: directly, or through FP32 (FP16 from INT8) where the fuzzer
    has no direct cast; every cast its own rounding, as the reference computes it."""
    if e.dtype == dst:
        return e
    if dst not in fp.CASTS[e.dtype]:
        mid = "FP16" if e.dtype == "INT8" else "FP32"
        e = Expr("cast", mid, "cast", (e,), mode=_mode(draw, e.dtype, mid))
        if mid == dst:
            return e
    return Expr("cast", dst, "cast", (e,), mode=_mode(draw, e.dtype, dst))


@st.composite
def path_exprs(draw, src: str, steps: int, dst: str | None = None) -> Expr:
    """An exact expression of the one input `x_<src>_0` through `steps` operators, casts
    in any mode among them; with `dst` it ends in that dtype."""
    e = Expr("input", src, value=f"x_{src}_0")
    for _ in range(steps):
        d = e.dtype
        kind = draw(st.sampled_from(("unary", "scalar", "binary", "cast")))
        if kind == "cast":
            e = cast_to(draw, e, draw(st.sampled_from(fp.CASTS[d])))
        elif kind == "unary":
            ops = fp.FLOAT_UNARY if d in fp.FLOATS else fp.INT_UNARY
            e = Expr("unary", d, draw(st.sampled_from(ops)), (e,))
        elif kind == "binary":
            ops = fp.FLOAT_BINARY if d in fp.FLOATS else fp.INT_BINARY
            e = Expr("binary", d, draw(st.sampled_from(ops)), (e, e))
        else:
            ops = fp.FLOAT_BINARY if d in fp.FLOATS else fp.INT_BINARY
            op = draw(st.sampled_from(ops))
            consts = fp.FLOAT_CONSTANTS if d in fp.FLOATS else (
                fp.SHIFT_COUNTS if op in ("shl", "shr") else fp.INT_CONSTANTS)
            rev = draw(st.booleans()) and (d in fp.FLOATS or op in fp.RSCALAR_INT)
            e = Expr("scalar", d, op, (e,), value=draw(st.sampled_from(consts)), reversed=rev)
    return cast_to(draw, e, dst) if dst is not None else e


def kernel_source(fname: str, params: list[tuple[str, Tensor | str]], body: list[str],
                  returns: list[str]) -> str:
    """An @pl.jit.incore function: params are (name, Tensor) or (name, annotation text)."""
    sig = ",\n        ".join(f"{p}: {annotation(t) if isinstance(t, Tensor) else t}"
                             for p, t in params)
    lines = [f"@pl.jit.incore\ndef {fname}(\n        {sig}):"]
    lines += [f"    {b}" for b in body]
    lines.append(f"    return {', '.join(returns)}")
    return "\n".join(lines) + "\n"


def window_text(tensor: str, rows: str, cols: str | None, R: int, C: int) -> str:
    """`t[rows:rows + R, cols:cols + C]` (all columns without `cols`)."""
    col = f", {cols}:{cols} + {C}" if cols is not None else ""
    return f"{tensor}[{rows}:{rows} + {R}{col}]"


def computed(value: str, leaves: set[str]) -> str:
    """A task's result must be computed (x * 1 is x, bit for bit), not a bare input."""
    return f"pl.mul({value}, 1)" if value in leaves else value
