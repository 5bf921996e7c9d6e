"""Row and column reductions, and the row and column broadcasts (`*_expand*`)."""

from __future__ import annotations

from collections.abc import Callable

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import (
    TileType,
    describe,
)
from .inference import (
    alike,
    check_dtype,
    fmt_shape,
    like,
    require_block,
    require_rank2,
    valid_min,
)
from .registry import (
    FLOATS,
    NUMERIC,
    OpDef,
    OpParam,
    get_op,
    register,
)

# -- reductions and broadcasts


def _infer_row_reduce(name: str) -> Callable:
    def infer(args, attrs, span):
        op = get_op(name)
        ops = op.operands(args, attrs)
        x = require_block(name, ops["x"].type, "x", span)
        require_rank2(name, x, span)
        check_dtype(name, x, op.dtypes, span)
        _tmp(name, x, ops["tmp_tile"], span, required=True)
        return like(x, shape=(x.shape[0], 1), dtype=_RESULT.get(name),
                    valid=(x.valid[0], 1) if isinstance(x, TileType) else None)

    return infer


def _tmp(name: str, x, tmp, span, required: bool) -> None:
    """Checks an operator's `tmp_tile` against x: the tile form needs one when `required`
    (the instruction takes it), the tensor form none (lowering allocates what it needs)."""
    if not isinstance(x, TileType):
        if tmp is not None:
            raise TypeCheckError(f"pl.{name} on a tensor takes no tmp_tile"
                                 + (": lowering allocates it" if required else ""), span)
        return
    if tmp is None:
        if required:
            raise TypeCheckError(
                f"the tile form of pl.{name} needs tmp_tile",
                span,
                hint=f"pass a scratch tile of x's dtype, at least {fmt_shape(x.shape)}: "
                     f"pl.{name}(x, pl.create_tile({list(x.shape)}, {x.dtype!r}))",
            )
        return
    if not isinstance(tmp.type, TileType) or tmp.type.dtype != x.dtype or len(
            tmp.type.shape) != 2 or any(
            t < d for t, d in zip(tmp.type.shape, x.shape, strict=True)):
        raise TypeCheckError(
            f"pl.{name}: tmp_tile must be a {x.dtype.name} tile of at least "
            f"{fmt_shape(x.shape)}, got {describe(tmp.type)}",
            span,
        )


def needs_scratch(name: str) -> bool:
    """Whether the tile form of operator `name` needs a tmp_tile (which TensorToTile
    allocates for the tensor form)."""
    return get_op(name).category == "reduce_row" or name in _COL_SCRATCH


def _infer_col_reduce(name: str, tmp_allowed: bool) -> Callable:
    def infer(args, attrs, span):
        op = get_op(name)
        ops = op.operands(args, attrs)
        x = require_block(name, ops["x"].type, "x", span)
        require_rank2(name, x, span)
        check_dtype(name, x, op.dtypes, span)
        if tmp_allowed:
            _tmp(name, x, ops["tmp_tile"], span, required=name in _COL_SCRATCH)
        return like(x, shape=(1, x.shape[1]), dtype=_RESULT.get(name),
                    valid=(1, x.valid[1]) if isinstance(x, TileType) else None)

    return infer


def _infer_expand(name: str, axis: int, dtypes: frozenset) -> Callable:
    """Row (axis 0: vector [R, 1]) or column (axis 1: vector [1, C]) broadcasts."""

    def infer(args, attrs, span):
        x, v = (a.type for a in args)
        require_block(name, x, "x", span)
        require_block(name, v, "the vector", span)
        alike(name, x, v, span, "kind")
        require_rank2(name, x, span)
        alike(name, x, v, span, "dtype")
        check_dtype(name, x, dtypes, span)
        want = (x.shape[0], 1) if axis == 0 else (1, x.shape[1])
        if tuple(v.shape) != want:
            raise TypeCheckError(
                f"pl.{name}: the vector must be {fmt_shape(want)} for x {fmt_shape(x.shape)}, "
                f"got {fmt_shape(v.shape)}",
                span,
                hint="row vectors come from pl.row_sum / pl.row_max; column vectors from "
                     "pl.col_sum or a [1, C] load",
            )
        valid = None
        if isinstance(x, TileType) and (x.valid_shape or v.valid_shape):
            vr = valid_min(x.valid[0], v.valid[0]) if axis == 0 else x.valid[0]
            vc = valid_min(x.valid[1], v.valid[1]) if axis == 1 else x.valid[1]
            valid = (vr, vc)
        return like(x, valid=valid)

    return infer



# -- reductions
_ROW_REDUCE = {
    "row_sum": ("sum", "trowsum"),
    "row_max": ("maximum", "trowmax"),
    "row_min": ("minimum", "trowmin"),
}
for _name, (_what, _isa) in _ROW_REDUCE.items():
    register(
        OpDef(
            _name,
            (OpParam("x", "value"), OpParam("tmp_tile", "value", None)),
            _infer_row_reduce(_name),
            "reduce_row",
            f"The {_what} of each row of a [R, C] value, as [R, 1].  Sequential: column 0 first, "
            "every step rounded to x's dtype (an FP16 tile accumulates in FP16).  Every column "
            "of the tile takes part, padding included; exclude padding with pl.fillpad.  The "
            "tile form needs tmp_tile, a scratch tile of x's dtype at least x's shape "
            "(contents undefined afterwards); the tensor form takes none.",
            emit="reduce",
            isa=_isa,
        )
    )
register(
    OpDef(
        "col_sum",
        (OpParam("x", "value"), OpParam("tmp_tile", "value", None)),
        _infer_col_reduce("col_sum", tmp_allowed=True),
        "reduce_col",
        "The sum of each column of a [R, C] tile, as [1, C].  Without tmp_tile the rows are "
        "added sequentially (row 0 first); with tmp_tile (a scratch tile of x's dtype, at "
        "least x's shape, left undefined) they are added as the device's pairwise tree: rows "
        "2i and 2i+1 in pairs, an odd last row added to the first pair's sum, until one row "
        "is left.  The two orders differ in the last bits.  Every row takes part, padding "
        "included.",
        emit="reduce",
        isa="tcolsum",
    )
)
for _name, (_what, _isa) in {
    "col_max": ("maximum", "tcolmax"),
    "col_min": ("minimum", "tcolmin"),
}.items():
    register(
        OpDef(
            _name,
            (OpParam("x", "value"),),
            _infer_col_reduce(_name, tmp_allowed=False),
            "reduce_col",
            f"The {_what} of each column of a [R, C] value, as [1, C]; every row takes part, "
            "padding included.",
            emit="reduce",
            isa=_isa,
        )
    )

# -- products and arg-reductions (pto-isa's TROWPROD / TCOLPROD, TROWARGMAX / TROWARGMIN /
# TCOLARGMAX / TCOLARGMIN): the element types both backends' instructions take.
_ISA_REDUCE = frozenset({DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32})
_COL_ARG = frozenset({DataType.FP16, DataType.FP32, DataType.UINT16, DataType.UINT32})
_RESULT = {f"{k}_arg{w}": DataType.INT32 for k in ("row", "col") for w in ("max", "min")}
_COL_SCRATCH = ("col_argmax", "col_argmin")
_SCRATCH_DOC = ("The tile form needs tmp_tile, a scratch tile of x's dtype at least x's shape "
                "(contents undefined afterwards); the tensor form takes none.")
register(
    OpDef(
        "row_prod",
        (OpParam("x", "value"), OpParam("tmp_tile", "value", None)),
        _infer_row_reduce("row_prod"),
        "reduce_row",
        "The product of each row of a [R, C] value, as [R, 1].  Sequential: column 0 first, "
        "every step rounded to x's dtype (an integer product wraps).  Every column of the "
        "tile takes part, padding included (zero padding makes the row's product 0).  "
        + _SCRATCH_DOC,
        dtypes=_ISA_REDUCE,
        emit="reduce",
        isa="trowprod",
    )
)
register(
    OpDef(
        "col_prod",
        (OpParam("x", "value"),),
        _infer_col_reduce("col_prod", tmp_allowed=False),
        "reduce_col",
        "The product of each column of a [R, C] value, as [1, C].  Sequential: row 0 first, "
        "every step rounded to x's dtype (an integer product wraps).  Every row takes part, "
        "padding included.",
        dtypes=_ISA_REDUCE,
        emit="reduce",
        isa="tcolprod",
    )
)
for _kind, _line, _over, _shape in (("row", "row", "column", "[R, 1]"),
                                    ("col", "column", "row", "[1, C]")):
    for _what, _cmp in (("max", "greater"), ("min", "less")):
        _name = f"{_kind}_arg{_what}"
        register(
            OpDef(
                _name,
                (OpParam("x", "value"), OpParam("tmp_tile", "value", None)),
                _infer_row_reduce(_name) if _kind == "row" else _infer_col_reduce(
                    _name, tmp_allowed=True),
                f"reduce_{_kind}",
                f"The {_over} index (INT32) of the {_what}imum of each {_line} of a [R, C] "
                f"value, as {_shape}.  Scanned from {_over} 0, an element wins only when it "
                f"compares {_cmp} than the best so far: a tie keeps the first index, and a "
                f"NaN never wins unless it is at index 0 (then nothing compares {_cmp} than "
                "it).  Every element of the tile takes part, padding included.  "
                + _SCRATCH_DOC,
                dtypes=_ISA_REDUCE if _kind == "row" else _COL_ARG,
                emit="reduce",
                isa=f"t{_kind}arg{_what}",
            )
        )

# -- broadcasts: suffix -> (formula on (x, v), dtypes, isa suffix)
_EXPAND = {
    "": ("v", NUMERIC, ""),
    "_add": ("x + v", NUMERIC, "add"),
    "_sub": ("x - v", NUMERIC, "sub"),
    "_mul": ("x * v", NUMERIC, "mul"),
    "_div": ("x / v", NUMERIC, "div"),
    "_max": ("torch.maximum(x, v)", NUMERIC, "max"),
    "_min": ("torch.minimum(x, v)", NUMERIC, "min"),
    "_expdif": ("torch.exp(x - v)", FLOATS, "expdif"),
}
for _axis, _kind, _vec in ((0, "row", "[R, 1]"), (1, "col", "[1, C]")):
    for _suffix, (_formula, _dtypes, _isa) in _EXPAND.items():
        _name = f"{_kind}_expand{_suffix}"
        _doc = (f"Broadcasts the {_vec} vector `v` along each {_kind} of the [R, C] value `x`: "
                f"the result is {_formula} elementwise")
        if _suffix == "_expdif":
            _doc += ", computed in FP32 and rounded once (the softmax numerator)"
        elif _suffix == "":
            _doc += " (x gives only the shape)"
        register(
            OpDef(
                _name,
                (OpParam("x", "value"), OpParam("v", "value")),
                _infer_expand(_name, _axis, _dtypes),
                f"expand_{_kind}",
                _doc + ".",
                dtypes=_dtypes,
                emit="binary",
                isa=f"t{_kind}expand{_isa}",
            )
        )
