"""pl.sin / pl.cos: FP32-only composite operators, expanded into primitive tile operators.

The PTO ISA has no sine or cosine instruction; upstream PyPTO's LowerCompositeOps pass
rewrites each tile sin / cos into a fixed sequence of multiplies, adds, subtracts and
casts (a Cody-Waite range reduction with pi split in five parts, the sign (-1)^k from
floor(k / 2), and a degree-9 odd polynomial evaluated by Horner's rule), the recipe of
CANN's PyPTO framework.  `expansion(op)` is that sequence, step for step and constant for
constant; LowerCompositeOps (pypto/passes) emits it and the torch semantics run it, so
the simulators, device code and torch compute the same operations, each rounded as the
primitive is.
"""

from __future__ import annotations

import struct

from ..dtypes import DataType
from ..errors import TypeCheckError
from .inference import is_block, like, meet_valid
from .registry import OpDef, OpParam, Step, register

FP32_ONLY = frozenset({DataType.FP32})


def fp32(literal: str) -> float:
    """The FP32 value of a C float literal (`literal` + "f"): the decimal rounded to
    nearest FP32 (through the nearest double: no constant below is a double-rounding
    case, tests/ops/test_ops_trig.py checks)."""
    return struct.unpack("<f", struct.pack("<f", float(literal)))[0]


# Upstream's constants (src/ir/transforms/lower_composite_ops_pass.cpp), as FP32 values.
PI_INV = fp32("0.31830988732818603515625")  # 1 / pi
PI_V2 = fp32("3.140625")  # pi = PI_V2 + PI_C1 + PI_C2 + PI_C3 + PI_C4 (Cody-Waite)
PI_C1 = fp32("0.0009670257568359375")
PI_C2 = fp32("6.2771141529083251953125e-7")
PI_C3 = fp32("1.21644916362129151821e-10")
PI_C4 = fp32("-1.0290623200529979163e-13")
PI_HALF_HEAD = fp32("1.57079637050628662109375")  # pi / 2 = HEAD + TAIL (cos only)
PI_HALF_TAIL = fp32("-4.371139000189375e-8")
HALF = fp32("0.5")
M4 = fp32("4.0")
NEG2 = fp32("-2.0")
ONE = fp32("1.0")
R0 = fp32("2.604926501e-6")  # sin(t) ~ t * P(t^2), P(u) = (((R0 u + R1) u + R2) u + R3) u + 1
R1 = fp32("-1.980894471e-4")
R2 = fp32("8.333049340e-3")
R3 = fp32("-1.666665792e-1")

_INT32, _FP32 = DataType.INT32, DataType.FP32


def _cast(dst: str, src: str, dtype: DataType, mode: str) -> Step:
    return Step(dst, "cast", (src,), (("dtype", dtype), ("mode", mode)))


def expansion(op: str) -> tuple[Step, ...]:
    """The primitive steps of `op` ("sin" or "cos") of the operand `x`, in upstream's
    order; the last step's value `y` is the result.  Names bound again (k, ki, kp, t, s,
    p) reuse their buffer: the values are upstream's, only its temporaries are fewer."""
    cos = op == "cos"
    # k: x / pi rounded to an integer (cos: x / pi + 1/2, ties to even; sin: ties away
    # from zero), then t = x - k * pi in five parts (cos adds pi / 2 in two).
    steps = [Step("k", "mul", ("x", PI_INV))]
    if cos:
        steps.append(Step("k", "add", ("k", HALF)))
    steps += [_cast("ki", "k", _INT32, "rint" if cos else "round"),
              _cast("k", "ki", _FP32, "none"),
              Step("kp", "mul", ("k", PI_V2)), Step("t", "sub", ("x", "kp")),
              Step("kp", "mul", ("k", PI_C1)), Step("t", "sub", ("t", "kp"))]
    if cos:
        steps.append(Step("t", "add", ("t", PI_HALF_HEAD)))
    for part in (PI_C2, PI_C3, PI_C4):
        steps += [Step("kp", "mul", ("k", part)), Step("t", "sub", ("t", "kp"))]
    if cos:
        steps.append(Step("t", "add", ("t", PI_HALF_TAIL)))
    # s = (-1)^k = floor(k / 2) * 4 - 2 k + 1.
    steps += [Step("s", "mul", ("k", HALF)), _cast("ki", "s", _INT32, "floor"),
              _cast("s", "ki", _FP32, "none"), Step("s", "mul", ("s", M4)),
              Step("kp", "mul", ("k", NEG2)), Step("s", "add", ("s", "kp")),
              Step("s", "add", ("s", ONE))]
    # y = s * (t * P(t^2)).
    steps += [Step("u", "mul", ("t", "t")), Step("p", "mul", ("u", R0)),
              Step("p", "add", ("p", R1)), Step("p", "mul", ("p", "u")),
              Step("p", "add", ("p", R2)), Step("p", "mul", ("p", "u")),
              Step("p", "add", ("p", R3)), Step("p", "mul", ("p", "u")),
              Step("p", "add", ("p", ONE)), Step("p", "mul", ("t", "p")),
              Step("y", "mul", ("s", "p"))]
    return tuple(steps)


def _infer(name: str):
    def infer(args, attrs, span):
        (x,) = (a.type for a in args)
        if not is_block(x):
            raise TypeCheckError(f"pl.{name} takes a tensor or tile, not a scalar", span)
        if x.dtype is not DataType.FP32:
            raise TypeCheckError(
                f"pl.{name} is FP32-only (upstream's recipe computes in FP32), got "
                f"{x.dtype.name}", span,
                hint=f"cast to FP32 first: pl.{name}(pl.cast(x, pl.FP32)), and the result "
                     "back with pl.cast if needed")
        return like(x, valid=meet_valid(x))

    return infer


_DOC = ("Elementwise {what} of x in radians, FP32 only (any other dtype is refused: cast "
        "to FP32 first).  Not an instruction: LowerCompositeOps expands it into upstream "
        "PyPTO's sequence of FP32 muls, adds, subs and casts (a Cody-Waite reduction by pi, "
        "the sign (-1)^k, a degree-9 odd polynomial), each rounded as that operator is; "
        "within 2e-7 of the true {what} of the FP32 input for |x| <= 2 pi * 1024 (upstream "
        "promises 1e-5), less accurate beyond |x| ~ 1e5 (docs/numerics.md).  NaN gives NaN.")

for _name, _what in (("sin", "sine"), ("cos", "cosine")):
    register(
        OpDef(
            _name,
            (OpParam("x", "value"),),
            _infer(_name),
            "unary",
            _DOC.format(what=_what),
            dtypes=FP32_ONLY,
            expansion=expansion(_name),
        )
    )
