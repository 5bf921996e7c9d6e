"""Elementwise operators (arithmetic, bitwise, unary, compare, select, fills, casts)
and the integer arithmetic of index scalars."""

from __future__ import annotations

from collections.abc import Callable

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import (
    INDEX,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
)
from .inference import (
    alike,
    check_dtype,
    is_block,
    like,
    meet_valid,
    require_block,
    scalar_operand,
    static_shape,
)
from .registry import (
    ANY,
    CAST_MODES,
    CMP_TYPES,
    FLOATS,
    INTS,
    NUMERIC,
    WITH_4BIT,
    OpDef,
    OpParam,
    get_op,
    register,
)


def _binary(name: str, dtypes: frozenset, index_ok: bool = False, rscalar: bool = True,
            result: DataType | None = None) -> Callable:
    def infer(args, attrs, span):
        lhs, rhs = (a.type for a in args)
        if isinstance(lhs, ScalarType) and isinstance(rhs, ScalarType):
            if not index_ok:
                raise TypeCheckError(f"pl.{name} takes a tensor or tile operand", span)
            # Index arithmetic: integers stay INT64, anything with a float is FP32.
            if lhs.dtype.is_float or rhs.dtype.is_float:
                return ScalarType(DataType.FP32)
            return INDEX
        if is_block(lhs) and is_block(rhs):
            alike(name, lhs, rhs, span, "kind", "shape", "dtype")
            block = lhs
        elif is_block(lhs):
            block = lhs
            scalar_operand(name, rhs, lhs, span)
        elif is_block(rhs):
            if not rscalar:
                raise TypeCheckError(f"pl.{name} needs the tensor or tile as its first operand",
                                     span)
            block = rhs
            scalar_operand(name, lhs, rhs, span)
        else:
            raise TypeCheckError(f"pl.{name} takes tensors, tiles or scalars", span)
        check_dtype(name, block, dtypes, span)
        return like(block, dtype=result, valid=meet_valid(lhs, rhs))

    return infer


def _unary(name: str, dtypes: frozenset) -> Callable:
    def infer(args, attrs, span):
        (x,) = (a.type for a in args)
        if not is_block(x):
            raise TypeCheckError(f"pl.{name} takes a tensor or tile, not a scalar", span)
        check_dtype(name, x, dtypes, span)
        return like(x, valid=meet_valid(x))

    return infer


def _infer_cmp(args, attrs, span):
    code = attrs["cmp_type"]
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < len(CMP_TYPES):
        raise TypeCheckError(
            f"pl.cmp: cmp_type must be 0..5, got {code!r}",
            span,
            hint="codes: " + ", ".join(f"{i}={n.upper()}" for i, n in enumerate(CMP_TYPES)),
        )
    if all(isinstance(a.type, ScalarType) for a in args):
        return ScalarType(DataType.BOOL)  # a condition: `if i == n - 1:`
    return _binary("cmp", NUMERIC, result=DataType.BOOL)(args, attrs, span)


_BOOL = ScalarType(DataType.BOOL)


def _with_scalar_logic(infer: Callable) -> Callable:
    """`and` / `or` / `not` of conditions: BOOL scalars give a BOOL scalar; everything else
    is the elementwise operator's."""

    def logic(args, attrs, span):
        if args and all(a.type == _BOOL for a in args):
            return _BOOL
        return infer(args, attrs, span)

    return logic


def _infer_sel(args, attrs, span):
    mask, lhs, rhs = (a.type for a in args)
    for what, t in (("mask", mask), ("lhs", lhs), ("rhs", rhs)):
        require_block("sel", t, what, span)
    alike("sel", mask, lhs, span, "kind")
    alike("sel", lhs, rhs, span, "kind")
    alike("sel", mask, lhs, span, "shape")
    alike("sel", lhs, rhs, span, "shape", "dtype")
    if mask.dtype is not DataType.BOOL:
        raise TypeCheckError(f"pl.sel: the mask must be BOOL (from pl.cmp), got {mask.dtype.name}",
                             span)
    return like(lhs, valid=meet_valid(mask, lhs, rhs))


def _infer_expands(args, attrs, span):
    target, value = (a.type for a in args)
    require_block("expands", target, "the target", span)
    scalar_operand("expands", value, target, span)
    return like(target, valid=meet_valid(target))


def _dtype_attr(op: str, dtype, span) -> DataType:
    if not isinstance(dtype, DataType):
        raise TypeCheckError(f"pl.{op} needs a pl dtype such as pl.FP32, got {dtype!r}", span)
    return dtype


def _infer_full(args, attrs, span):
    (value,) = (a.type for a in args)
    shape = static_shape("full", attrs["shape"], span)
    dtype = _dtype_attr("full", attrs["dtype"], span)
    tile = TileType(shape, dtype)
    scalar_operand("full", value, tile, span)
    return tile


def _infer_tensor_full(args, attrs, span):
    tile = _infer_full(args, attrs, span)
    return TensorType(tile.shape, tile.dtype)


def _infer_create_tile(args, attrs, span):
    shape = static_shape("create_tile", attrs["shape"], span)
    dtype = _dtype_attr("create_tile", attrs["dtype"], span)
    if not isinstance(attrs["target_memory"], MemorySpace):
        raise TypeCheckError("pl.create_tile: target_memory must be a pl.Mem member", span)
    return TileType(shape, dtype)


def _infer_cast(args, attrs, span):
    (x,) = (a.type for a in args)
    dtype = attrs["dtype"]
    if not isinstance(dtype, DataType):
        raise TypeCheckError("pl.cast needs a pl dtype as its second argument", span)
    if attrs["mode"] not in CAST_MODES:
        raise TypeCheckError(
            f"unknown cast mode {attrs['mode']!r}", span, hint=f"use one of {', '.join(CAST_MODES)}"
        )
    if isinstance(x, TileType):
        return TileType(x.shape, dtype, valid_shape=x.valid_shape)
    if isinstance(x, TensorType):
        return TensorType(x.shape, dtype)
    return ScalarType(dtype)



def _infer_scalar_int(name):
    def infer(args, attrs, span):
        for a in args:
            if not isinstance(a.type, ScalarType) or a.type.dtype.is_float:
                raise TypeCheckError(f"`{name}` is only defined on integer scalars", span)
        return INDEX

    return infer




_SCALAR_FORM = " A Python number or scalar as either operand selects the scalar form."

# -- elementwise arithmetic: name -> (doc, dtypes, isa, isa_scalar, isa_rscalar)
_ARITH = {
    "add": ("Elementwise lhs + rhs.", NUMERIC, "tadd", "tadds", "tadds"),
    "sub": ("Elementwise lhs - rhs.", NUMERIC, "tsub", "tsubs", "trsubs"),
    "mul": ("Elementwise lhs * rhs.", NUMERIC, "tmul", "tmuls", "tmuls"),
    "div": ("Elementwise lhs / rhs (integers truncate toward zero; x / 0 gives 0).",
            NUMERIC, "tdiv", "tdivs", "trdivs"),
    "maximum": ("Elementwise max(lhs, rhs); NaN propagates, as in torch.maximum.",
                NUMERIC, "tmax", "tmaxs", "trmaxs"),
    "minimum": ("Elementwise min(lhs, rhs); NaN propagates, as in torch.minimum.",
                NUMERIC, "tmin", "tmins", "trmins"),
}
for _name, (_doc, _dtypes, _isa, _isa_s, _isa_r) in _ARITH.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _binary(_name, _dtypes, index_ok=_name in ("add", "sub", "mul", "div")),
            "binary",
            _doc + _SCALAR_FORM + " FP16/BF16 results are rounded after the operation.",
            dtypes=_dtypes,
            emit="binary",
            isa=_isa,
            isa_scalar=_isa_s,
            isa_rscalar=_isa_r,
        )
    )

# -- bitwise (integer dtypes)
_BITWISE = {
    "and_": ("Elementwise bitwise lhs & rhs.", "tand", "tands", "tands"),
    "or_": ("Elementwise bitwise lhs | rhs.", "tor", "tors", "tors"),
    "xor": ("Elementwise bitwise lhs ^ rhs.", "txor", "txors", "txors"),
    "shl": ("Elementwise lhs << rhs; a shift count outside [0, bits) gives 0.",
            "tshl", "tshls", ""),
    "shr": (("Elementwise lhs >> rhs (arithmetic for signed dtypes); a count outside "
             "[0, bits) gives 0, or -1 for negative signed values."),
            "tshr", "tshrs", ""),
}
for _name, (_doc, _isa, _isa_s, _isa_r) in _BITWISE.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _with_scalar_logic(_binary(_name, INTS, rscalar=bool(_isa_r))),
            "binary",
            _doc + (" An integer as the second operand selects the scalar form." if not _isa_r
                    else " An integer as either operand selects the scalar form.")
            + (" On two BOOL scalars (conditions) it is the logical operator." if _name in
               ("and_", "or_") else ""),
            dtypes=INTS,
            emit="binary",
            isa=_isa,
            isa_scalar=_isa_s,
            isa_rscalar=_isa_r,
        )
    )

register(
    OpDef(
        "floordiv",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_scalar_int("//"),
        "index",
        "Integer floor division of index scalars (`a // b`).",
    )
)
register(
    OpDef(
        "mod",
        (OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_scalar_int("%"),
        "index",
        "Integer remainder of index scalars (`a % b`).",
    )
)
for _name, _what in (("min", "smaller"), ("max", "larger")):
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _infer_scalar_int(f"pl.{_name}"),
            "index",
            f"The {_what} of two integer scalars (index arithmetic: loop bounds, offsets, "
            "valid lengths); not a reduction of a tile (pl.row_max / pl.col_max are).",
        )
    )

# -- elementwise unary: name -> (doc, dtypes, isa)
_UNARY = {
    "exp": ("Elementwise e**x.", FLOATS, "texp"),
    "log": ("Elementwise natural logarithm.", FLOATS, "tlog"),
    "sqrt": ("Elementwise square root.", FLOATS, "tsqrt"),
    "rsqrt": ("Elementwise 1 / sqrt(x), computed as one reciprocal of the square root.",
              FLOATS, "trsqrt"),
    "recip": ("Elementwise 1 / x.", FLOATS, "trecip"),
    "neg": ("Elementwise -x (integers wrap).", NUMERIC, "tneg"),
    "abs": ("Elementwise |x| (integers wrap at the minimum).", NUMERIC, "tabs"),
    "relu": ("Elementwise max(x, 0); NaN stays NaN and -0.0 gives +0.0.", NUMERIC, "trelu"),
    "not_": ("Elementwise bitwise NOT.", INTS, "tnot"),
}
for _name, (_doc, _dtypes, _isa) in _UNARY.items():
    register(
        OpDef(
            _name,
            (OpParam("x", "value"),),
            _with_scalar_logic(_unary(_name, _dtypes)) if _name == "not_"
            else _unary(_name, _dtypes),
            "unary",
            _doc + (" Computed in FP32 and rounded once to FP16/BF16." if _dtypes is FLOATS
                    else "") + (" On a BOOL scalar (a condition) it is `not`." if _name == "not_"
                                else ""),
            dtypes=_dtypes,
            emit="unary",
            isa=_isa,
        )
    )

register(
    OpDef(
        "cmp",
        (OpParam("lhs", "value"), OpParam("rhs", "value"), OpParam("cmp_type", "attr", 0)),
        _infer_cmp,
        "binary",
        "Elementwise comparison giving a BOOL mask: cmp_type 0=EQ, 1=NE, 2=LT, 3=LE, 4=GT, "
        "5=GE.  Comparisons with NaN are false except NE.  A Python number as either operand "
        "selects the scalar form.  Use the mask with pl.sel.",
        emit="compare",
        isa="tcmp",
        isa_scalar="tcmps",
        isa_rscalar="tcmps",
    )
)
register(
    OpDef(
        "sel",
        (OpParam("mask", "value"), OpParam("lhs", "value"), OpParam("rhs", "value")),
        _infer_sel,
        "select",
        "Elementwise mask ? lhs : rhs, with a BOOL mask from pl.cmp.",
        dtypes=ANY,
        emit="select",
        isa="tsel",
    )
)
register(
    OpDef(
        "expands",
        (OpParam("target", "value"), OpParam("scalar", "value")),
        _infer_expands,
        "expands",
        "A value shaped like `target` with every element equal to `scalar` (rounded once to "
        "target's dtype); target's data is not read.",
        emit="fill",
        isa="texpands",
    )
)
register(
    OpDef(
        "full",
        (OpParam("shape", "attr"), OpParam("dtype", "attr"), OpParam("value", "value")),
        _infer_full,
        "tile",
        "A new Vec tile of `shape` and `dtype` with every element equal to `value`.",
        emit="fill",
        isa="texpands",
    )
)
register(
    OpDef(
        "tensor.full",
        (OpParam("shape", "attr"), OpParam("dtype", "attr"), OpParam("value", "value")),
        _infer_tensor_full,
        "fill",
        "A new tensor value of `shape` and `dtype` with every element equal to `value`: what "
        "`pl.full` means in a `pl.at` block (upstream's tensor-level creation); TensorToTile "
        "computes it as `pl.full` tiles.",
        emit="",
    )
)
register(
    OpDef(
        "create_tile",
        (OpParam("shape", "attr"), OpParam("dtype", "attr"),
         OpParam("target_memory", "attr", MemorySpace.Vec)),
        _infer_create_tile,
        "tile",
        "A new tile of `shape` and `dtype` in `target_memory` whose contents are undefined: "
        "scratch space, e.g. the tmp_tile of a reduction.",
        dtypes=ANY,
        emit="create",
    )
)
register(
    OpDef(
        "cast",
        (OpParam("x", "value"), OpParam("dtype", "attr", aliases=("target_type",)),
         OpParam("mode", "attr", "rint")),
        _infer_cast,
        "cast",
        "Convert to `dtype` with rounding `mode`: rint (nearest, ties to even; torch's), round "
        "(ties away from zero), floor, ceil, trunc, odd (round to odd), none (rint for float "
        "targets, trunc for float->int).  Float->int saturates (NaN gives 0).  A conversion the "
        "backend cannot do in one instruction runs as the chain LegalizeTileCast chose, every "
        "hop with the same mode.",
        dtypes=WITH_4BIT,
        emit="cast",
        isa="tcvt",
    )
)


# -- remainders, leaky ReLUs and three-operand sums (upstream's pl.fmod, pl.tile.rem,
# pl.tile.lrelu, pl.tile.prelu, pl.tile.addc, ...; the PTO instructions TFMOD, TREM, ...)
_REMAINDERS = {
    "fmod": ("Elementwise remainder of lhs / rhs truncated toward zero, with the sign of "
             "lhs (C's fmod, torch.fmod): exact for floats; fmod(x, 0) and fmod(inf, y) are "
             "NaN, fmod(x, inf) is x.", "tfmod", "tfmods"),
    "rem": ("Elementwise remainder of lhs / rhs floored, with the sign of rhs (Python's %, "
            "torch.remainder): fmod, plus rhs (rounded once) where a non-zero fmod and rhs "
            "differ in sign; -0.0 stays -0.0.", "trem", "trems"),
}
for _name, (_doc, _isa, _isa_s) in _REMAINDERS.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value")),
            _binary(_name, NUMERIC, rscalar=False),
            "binary",
            _doc + " Integers: x % 0 is 0 (as x / 0 is) and MIN % -1 is 0.  A scalar as the "
            "second operand selects the scalar form (`pl.fmods`, `pl.tile.rems`).",
            dtypes=NUMERIC,
            emit="binary",
            isa=_isa,
            isa_scalar=_isa_s,
        )
    )


def _infer_lrelu(args, attrs, span):
    x, slope = (a.type for a in args)
    require_block("lrelu", x, "x", span)
    if not isinstance(slope, ScalarType):
        raise TypeCheckError("pl.lrelu: the slope is a scalar; pl.prelu takes a slope per "
                             "element", span)
    check_dtype("lrelu", x, FLOATS, span)
    return like(x, valid=meet_valid(x))


register(
    OpDef(
        "lrelu",
        (OpParam("x", "value"), OpParam("slope", "value")),
        _infer_lrelu,
        "binary",
        "Elementwise leaky ReLU: x where x > 0, else x * slope (the slope rounded to x's "
        "dtype first; NaN stays NaN, -0.0 gives -0.0 * slope).",
        dtypes=FLOATS,
        emit="binary",
        isa_scalar="tlrelu",
    )
)


def _infer_prelu(args, attrs, span):
    ops = get_op("prelu").operands(args, attrs)
    x, slope = ops["x"].type, ops["slope"].type
    require_block("prelu", x, "x", span)
    require_block("prelu", slope, "slope", span)
    alike("prelu", x, slope, span, "kind", "shape", "dtype")
    check_dtype("prelu", x, FLOATS, span)
    tmp = ops["tmp"]
    if tmp is not None and (not isinstance(x, TileType) or not isinstance(tmp.type, TileType)
                            or tmp.type.dtype != x.dtype):
        raise TypeCheckError("pl.prelu: tmp is a scratch tile of x's dtype (tiles only)", span)
    return like(x, valid=meet_valid(x, slope))


register(
    OpDef(
        "prelu",
        (OpParam("x", "value"), OpParam("slope", "value"), OpParam("tmp", "value", None)),
        _infer_prelu,
        "ternary",
        "Elementwise parametric ReLU: x where x > 0, else x * slope, with a slope per "
        "element.  tmp (optional, upstream's signature) is the scratch tile A2/A3's TPRELU "
        "keeps its compare mask in: its contents afterwards are undefined.",
        dtypes=FLOATS,
        emit="ternary",
        isa="tprelu",
    )
)


def _sum3(name: str, scalar: bool) -> Callable:
    def infer(args, attrs, span):
        a, b, c = (arg.type for arg in args)
        for what, t in (("lhs", a), ("rhs2", c)) + (() if scalar else (("rhs", b),)):
            require_block(name, t, what, span)
        if scalar:
            scalar_operand(name, b, a, span)
        else:
            alike(name, a, b, span, "kind", "shape", "dtype")
        alike(name, a, c, span, "kind", "shape", "dtype")
        check_dtype(name, a, NUMERIC, span)
        return like(a, valid=meet_valid(a, b, c))

    return infer


# name -> (doc, the second operand is a scalar, isa)
_SUMS3 = {
    "addc": ("Elementwise lhs + rhs + rhs2.", False, "taddc"),
    "subc": ("Elementwise lhs - rhs + rhs2 (the PTO instruction TSUBC's meaning).", False,
             "tsubc"),
    "addsc": ("Elementwise lhs + rhs + rhs2 with a scalar rhs.", True, "taddsc"),
    "subsc": ("Elementwise lhs - rhs + rhs2 with a scalar rhs (TSUBSC's meaning).", True,
              "tsubsc"),
}
for _name, (_doc, _scalar, _isa) in _SUMS3.items():
    register(
        OpDef(
            _name,
            (OpParam("lhs", "value"), OpParam("rhs", "value"), OpParam("rhs2", "value")),
            _sum3(_name, _scalar),
            "ternary",
            _doc + " Each operation is rounded to the element type (the first, then the "
            "addition of rhs2); integers wrap." + (" The scalar is first rounded to it."
                                                  if _scalar else ""),
            dtypes=NUMERIC,
            emit="ternary",
            isa=_isa,
        )
    )
