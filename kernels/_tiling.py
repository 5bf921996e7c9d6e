"""Helpers of the tile-level spec modules (not a spec: the name starts with an underscore).

A tile kernel's tile shapes, valid regions and loop bounds are compile-time constants, and a
kernel body cannot read its tensors' shapes.  `shaped` gives it names for them: the function
it takes receives every parameter's declared type (`x.shape`, `x.dtype`) and returns
constants that the kernel body reads as `cfg.<NAME>`, once per variant:

    @shaped(lambda x, out: {"M": x.shape[0], "N": x.shape[1], "TN": round_up(x.shape[1], 16)})
    @pl.jit.incore
    def row_sum(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        t = pl.load(x, [0, 0], [16, cfg.TN], valid_shape=[cfg.M, cfg.N])
        ...

`cfg` is folded at parse time like any module-level name (the module imports the
placeholder below, which only names it), so the constants are part of the post-parse IR
(and so of the artifact's content key and the spec's IR digest).
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from pypto.language.jit import JitFunction
from pypto.language.parser import FunctionParser, parse_signature

FP32_ULP = 2.0**-23
"""One FP32 ulp relative to a value's binade: `rtol=n * FP32_ULP` allows n ulps anywhere."""
FP16_ULP = 2.0**-10
"""One FP16 ulp, relative, likewise."""
FP32_HALF_ULP = 2.0**-24
"""The relative error of one FP32 round-to-nearest: `rtol=n * FP32_HALF_ULP` covers n roundings."""


def round_up(n: int, multiple: int) -> int:
    """The smallest multiple of `multiple` that is at least `n`."""
    return -(-n // multiple) * multiple


class _Constants:
    """`cfg` outside a variant: any attribute is an error naming the cause."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"cfg.{name} is defined only in the body of a @shaped kernel")


cfg = _Constants()
"""What `@shaped` kernel bodies read their per-variant constants from."""


class ShapedKernel(JitFunction):
    """A `@pl.jit` / `@pl.jit.incore` kernel whose body also sees per-variant constants."""

    def __init__(self, kernel: JitFunction, constants: Callable[..., dict[str, Any]]) -> None:
        if not isinstance(kernel, JitFunction):
            raise TypeError("@shaped(...) goes above @pl.jit or @pl.jit.incore")
        super().__init__(kernel.fn, kernel.func_type)
        self.constants = constants

    def _parse(self, arg_types: list, resolve):
        fndef, info = self._parsed_source()
        names = [a.arg for a in fndef.args.args]
        extra = SimpleNamespace(**self.constants(**dict(zip(names, arg_types))))
        parser = FunctionParser(info, self._namespace().new_child({"cfg": extra}),
                                self.func_type, resolve)
        sig = parse_signature(fndef, parser, arg_types, skip_self=False)
        return parser.parse(fndef, sig)


def shaped(constants: Callable[..., dict[str, Any]]) -> Callable[[JitFunction], ShapedKernel]:
    """`@shaped(fn)` above `@pl.jit...`: `fn(**parameter_types)` gives the body's `cfg`."""
    return lambda kernel: ShapedKernel(kernel, constants)
