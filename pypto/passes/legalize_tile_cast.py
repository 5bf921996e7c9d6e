"""LegalizeTileCast: expand casts the backend cannot do in one instruction.

The backend's native conversions (`build_rules/backends/*.toml`) form a graph; a
non-native cast becomes the shortest admissible chain through it, every hop keeping
the user's rounding mode.  Intermediates that provably narrow relative to the
destination are not admissible (rules in docs and BACKENDS.md); ties prefer an
integer's same-width float, then float→float hops.  On Ascend950 INT32→FP16 becomes
INT32→FP32→FP16, which is exact because every |x| < 65520 is exact in FP32.
"""

from __future__ import annotations

from functools import cache
from itertools import pairwise

from ..ir.dtypes import DataType
from ..ir.errors import LoweringError, Span
from ..ir.nodes import Assign, Call, Var
from ..ir.ops import make_call
from ..ir.types import FunctionType, TileType
from ..ir.visitor import IRMutator
from .manager import FunctionPass
from .names import NameSupply
from .properties import IRProperty

_MAX_HOPS = 4


def _admissible(mid: DataType, dst: DataType, src: DataType) -> bool:
    """May `mid` sit between `src` and `dst` without provably losing values?  From a 4-bit
    source, an intermediate holding every source value is (FP4 -> BF16 -> FP32 is exact,
    though BF16 is narrower than FP32); the rule for the other sources is BACKENDS.md's,
    which looks at the destination alone."""
    if src.packed and _holds(mid, src):
        return True
    if dst.is_float:
        if not mid.is_float:
            return False
        return (mid.value.mantissa_bits >= dst.value.mantissa_bits
                and mid.value.exponent_bits >= dst.value.exponent_bits)
    if mid.is_float:
        return mid.value.mantissa_bits >= dst.value.mantissa_bits
    if not mid.is_signed and dst.is_signed:
        return False
    return mid.value.mantissa_bits >= dst.value.mantissa_bits


def _holds(mid: DataType, src: DataType) -> bool:
    """Does `mid` hold every value of `src` (a 4-bit type: few values, small ones)?"""
    if src.is_float:
        return mid.is_float and mid.value.mantissa_bits >= src.value.mantissa_bits \
            and mid.value.exponent_bits >= src.value.exponent_bits
    if mid.is_float:
        return mid.value.mantissa_bits >= src.value.mantissa_bits + 1
    lo, hi = src.int_range
    return mid.is_int and mid.int_range[0] <= lo and hi <= mid.int_range[1]


def _hop_cost(a: DataType, b: DataType) -> int:
    if a.is_int and b.is_float and a.bits == b.bits:
        return 0
    if a.is_float and b.is_float:
        return 1
    return 2


@cache
def _graph(native_items: tuple) -> dict[DataType, tuple[DataType, ...]]:
    """Native edges between the dtypes pypto has (hardware-only names are skipped)."""
    known = {d.name for d in DataType}
    return {DataType[src]: tuple(DataType[d] for d in dsts if d in known)
            for src, dsts in native_items if src in known}


def cast_path(src: DataType, dst: DataType, backend, span: Span | None = None) -> list[DataType]:
    """The dtypes a cast from `src` to `dst` passes through, both ends included.

    A native pair is one hop; otherwise the shortest admissible chain, ties broken by
    hop cost, then by name.  No chain: a LoweringError at `span` naming the pair and
    the backend.
    """
    if src == dst:
        return [src]
    graph = _graph(tuple(sorted((k, tuple(v)) for k, v in backend.native_casts.items())))
    if dst in graph.get(src, ()):
        return [src, dst]
    frontier = [[src]]
    for _ in range(_MAX_HOPS):
        arrived: list[list[DataType]] = []
        nxt = []
        for path in frontier:
            for b in graph.get(path[-1], ()):
                if b == dst:
                    arrived.append([*path, b])
                elif b not in path and _admissible(b, dst, src):
                    nxt.append([*path, b])
        if arrived:
            return min(arrived, key=_chain_key)
        frontier = nxt
    targets = ", ".join(d.name for d in graph.get(src, ())) or "nothing"
    raise LoweringError(
        f"no conversion from {src.name} to {dst.name} on {backend.name}: the backend has no "
        "native instruction for it and no admissible chain of native ones",
        span,
        hint=f"{src.name} converts natively to {targets} on {backend.name}; cast to one of "
             "those, or choose another destination type",
    )


def _chain_key(chain: list[DataType]) -> tuple:
    """Order of equally short chains: cheaper hops first, then by name."""
    return (sum(_hop_cost(x, y) for x, y in pairwise(chain)), [d.name for d in chain])


class LegalizeTileCast(FunctionPass):
    name = "LegalizeTileCast"
    produces = (IRProperty.CastsLegal,)
    applies_to = (FunctionType.InCore,)

    def run_function(self, fn, ctx):
        return _CastExpander(ctx.backend, NameSupply(fn)).mutate_function(fn)


class _CastExpander(IRMutator):
    def __init__(self, backend, names: NameSupply):
        self.backend = backend
        self.names = names

    def mutate_Assign(self, stmt: Assign):
        call = stmt.value
        if not (isinstance(call, Call) and call.op == "cast" and isinstance(call.type, TileType)):
            return stmt
        (src,) = call.args
        path = cast_path(src.type.dtype, call.type.dtype, self.backend, call.span)
        if len(path) <= 2:
            return stmt
        out, current = [], src
        mode = call.attr("mode")
        for mid in path[1:-1]:
            hop = make_call("cast", current, span=call.span, dtype=mid, mode=mode)
            var = Var(self.names.fresh(f"{stmt.targets[0].name}_{mid.name.lower()}"), hop.type,
                      call.span)
            out.append(Assign((var,), hop, stmt.span))
            current = var
        out.append(Assign(stmt.targets, make_call("cast", current, span=call.span,
                                                  dtype=call.type.dtype, mode=mode), stmt.span))
        return out
