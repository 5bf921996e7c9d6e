"""Annotation objects of the DSL: `pl.Tensor[[16, 128], pl.FP16]`, `pl.Out[...]`, ..."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ..ir.dtypes import DataType
from ..ir.errors import Span, TypeCheckError
from ..ir.types import (
    Direction,
    MemorySpace,
    ScalarType,
    TaskIdArrayType,
    TaskIdType,
    TensorLayout,
    TensorType,
    TileMemRef,
    TileType,
)


@dataclass(frozen=True)
class DynamicDim:
    """`pl.dynamic("M")`: a dimension taken from the argument at call time."""

    name: str


def dynamic(name: str) -> DynamicDim:
    """A named dimension specialised from the caller's tensor shape."""
    return DynamicDim(name)


@dataclass(frozen=True)
class TensorSpec:
    """A tensor annotation whose shape or dtype is completed from the call's arguments."""

    shape: tuple | None  # None: any rank; entries are ints or DynamicDim
    dtype: DataType | None


def _annotation_error(message: str, hint: str) -> TypeCheckError:
    """An error at the user's annotation: Python evaluates annotations where they are
    written, so the caller's frame is the user's line."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    span = Span(frame.f_code.co_filename, frame.f_lineno) if frame is not None else None
    return TypeCheckError(message, span, hint)


def _shape(items, what: str) -> tuple:
    if not isinstance(items, (list, tuple)):
        raise _annotation_error(f"{what} shape must be a list, got {items!r}",
                                f"write {what}[[d0, d1, ...], dtype]")
    for d in items:
        if not isinstance(d, (int, DynamicDim)) or isinstance(d, bool):
            raise _annotation_error(f"{what} dimension {d!r} is not an int",
                                    "use integers or pl.dynamic(\"name\")")
    return tuple(items)


@dataclass(frozen=True)
class TensorView:
    """`pl.TensorView(valid_shape=[r, n], layout=pl.TensorLayout.ND)`, the third element of
    a `pl.Tensor[...]` annotation: how the argument lies in memory.  Here a tensor is
    row-major, its strides come with the argument (a view keeps its tensor's strides), and
    its valid region is its runtime shape: an orchestration's view is cut back to a
    slice's valid_shape and to its tensor's end, and every load and store of a kernel is
    checked against it.  So `valid_shape` (ints, or pl.dynamic names: known at run time)
    declares what call sites may pass, and is checked to fit the shape; `layout=` other
    than ND, `stride=` and `pad=` are refused (not modelled)."""

    stride: tuple | None = None
    layout: TensorLayout | None = None
    valid_shape: tuple | None = None
    pad: object = None

    def check(self, shape: tuple) -> None:
        """Refuses what this project does not model and a valid_shape that does not fit."""
        given = [name for name in ("stride", "valid_shape", "pad")
                 if getattr(self, name) is not None]
        if given and self.layout is None:
            raise _annotation_error(f"pl.TensorView({given[0]}=...) needs layout=",
                                    "write layout=pl.TensorLayout.ND")
        if self.layout not in (None, TensorLayout.ND):
            raise _annotation_error(f"pl.TensorView(layout={self.layout!r}): only row-major "
                                    "(ND) tensors are modelled here",
                                    "transpose with a_trans= / b_trans= or "
                                    "pl.tile.transpose_view")
        for name, why in (("stride", "a tensor argument's strides come with it (a view keeps "
                                     "its tensor's strides)"),
                          ("pad", "pad values are given to the pl.load that reads the window "
                                  "(pl.tile.fillpad)")):
            if getattr(self, name) is not None:
                raise _annotation_error(f"pl.TensorView({name}=...) is not supported here: "
                                        f"{why}", f"remove {name}=")
        if self.valid_shape is not None:
            valid = _shape(list(self.valid_shape), "pl.TensorView valid")
            if len(valid) != len(shape) or any(
                    isinstance(v, int) and isinstance(d, int) and not 0 <= v <= d
                    for v, d in zip(valid, shape, strict=True)):
                raise _annotation_error(f"pl.TensorView valid_shape {list(valid)} must fit "
                                        f"the shape {list(shape)}", "one extent per dimension")


def _check_layout_marker(layout: TensorLayout) -> None:
    """`pl.Tensor[shape, dtype, pl.ND]` says what every tensor is here (row-major); DN and NZ
    markers are refused as upstream refuses the DN shorthand (ParserTypeError there)."""
    if layout is TensorLayout.DN:
        raise _annotation_error(
            "pl.Tensor[..., pl.DN]: the layout-only DN shorthand is not supported (upstream "
            "removed it too: it puts two coordinate systems on one annotation)",
            "write the row-major source shape with no marker; for a transposed matmul operand "
            "pass a_trans=True / b_trans=True, or transpose at the use (pl.transpose, "
            "pl.tile.transpose_view)")
    if layout is TensorLayout.NZ:
        raise _annotation_error(
            "pl.Tensor[..., pl.NZ]: tensors in global memory are row-major here; NZ (the "
            "cube's fractal order) is the layout the compiler gives Mat / Left / Right tiles",
            "pass the tensor in row-major order and drop the marker")
    if layout in MX_LAYOUTS:
        raise _annotation_error(f"pl.Tensor[..., {layout!r}]: {MX_LAYOUTS[layout]}",
                                "pass the scales row-major, with no marker: the loads into "
                                "pl.Mem.Mat and the pl.move to LeftScale / RightScale keep "
                                "them in order")


MX_LAYOUTS = {
    TensorLayout.MX_A_ZZ: (
        "the marker says the tensor's bytes lie in pto-isa's MX_A_ZZ order, the [M, K / 32] "
        "lhs scales in blocks of 16 rows x 2 columns: scale (r, c) at byte (r // 16) * 16 * "
        "(K / 32) + (c // 2) * 32 + (r % 16) * 2 + c % 2, which a row-major read would "
        "misplace; tensors in global memory are row-major here (the simulators and the torch "
        "semantics read them so), and no MX layout is modelled"),
    TensorLayout.MX_B_NN: (
        "the marker says the tensor's bytes lie in pto-isa's MX_B_NN order, the [K / 32, N] "
        "rhs scales in blocks of 2 rows x 16 columns stored column by column: scale (r, c) at "
        "byte (c // 16) * 16 * (K / 32) + (r // 2) * 32 + (c % 16) * 2 + r % 2, which a "
        "row-major read would misplace; tensors in global memory are row-major here (the "
        "simulators and the torch semantics read them so), and no MX layout is modelled"),
}
"""Why each MX scale layout marker is refused (docs/language.md; upstream-compat)."""


class Tensor:
    """`pl.Tensor[[d0, d1], dtype]`: a tensor in global memory.  Bare `pl.Tensor` takes
    its shape and dtype from the argument at call time; a third element
    `pl.TensorView(...)` describes how the argument lies in memory (see TensorView)."""

    def __class_getitem__(cls, item):
        if isinstance(item, tuple) and len(item) == 3 and isinstance(item[2], TensorView):
            item[2].check(tuple(item[0]) if isinstance(item[0], (list, tuple)) else ())
            item = item[:2]
        elif isinstance(item, tuple) and len(item) == 3 and isinstance(item[2], TensorLayout):
            _check_layout_marker(item[2])
            item = item[:2]
        if not isinstance(item, tuple) or len(item) != 2:
            raise _annotation_error("pl.Tensor takes a shape and a dtype",
                                    "write pl.Tensor[[d0, d1, ...], dtype]")
        shape = _shape(item[0], "pl.Tensor")
        if not isinstance(item[1], DataType):
            raise _annotation_error(f"pl.Tensor dtype must be a pl dtype, got {item[1]!r}",
                                    "write e.g. pl.Tensor[[16, 128], pl.FP16]")
        if any(isinstance(d, DynamicDim) for d in shape):
            return TensorSpec(shape, item[1])
        return TensorType(shape, item[1])


class MemRef:
    """Upstream's `pl.MemRef("name")`: an on-chip allocation of the kernel's own, named in a
    tile annotation (`pl.Tile[[64, 128], pl.FP32, pl.MemRef("ub"), pl.Mem.Vec]`); nothing
    else is packed into it.  With `slots=n` it holds n equally sized slots and the tile
    picks one: `pl.MemRef("ub", slots=2)[i % 2]` (the slot is read where the tile is
    defined).  Tiles sharing a one-slot allocation must not be live at the same time."""

    def __init__(self, name: str, *, slots: int = 1):
        if not isinstance(name, str) or not name.isidentifier():
            raise _annotation_error(f"pl.MemRef({name!r}): the allocation's name is an "
                                    "identifier string", 'write e.g. pl.MemRef("ub")')
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise _annotation_error(f"pl.MemRef({name!r}, slots={slots!r}): slots is a "
                                    "positive int", 'write e.g. pl.MemRef("ub", slots=2)[i % 2]')
        self.name, self.slots = name, slots

    def __getitem__(self, slot) -> TileMemRef:
        if isinstance(slot, bool) or not isinstance(slot, int):
            raise _annotation_error(f"pl.MemRef({self.name!r})[{slot!r}]: a pl.MemRef slot is "
                                    "an integer index", "index the slots with an int, e.g. "
                                    "[i % 2]")
        if not 0 <= slot < self.slots:
            raise _annotation_error(f"pl.MemRef({self.name!r}, slots={self.slots})[{slot}]: "
                                    f"the slot is in [0, {self.slots})",
                                    "index the slots from 0, e.g. [i % 2]")
        return TileMemRef(self.name, self.slots, slot)

    def __repr__(self) -> str:
        return f"pl.MemRef({self.name!r}" + (f", slots={self.slots})" if self.slots > 1 else ")")


def _tile_memref(value) -> TileMemRef:
    """A tile annotation's allocation: `pl.MemRef("ub")` (one slot) or a slot of one."""
    if isinstance(value, TileMemRef):
        return value
    if value.slots > 1:
        raise _annotation_error(f"{value!r} holds {value.slots} slots: the tile names one",
                                f"write {value!r}[slot]")
    return TileMemRef(value.name)


_TILE_VIEW_REFUSED = {
    "stride": "a tile's elements lie row by row from its address here (the simulators', "
              "and device code declares each tile's fractals itself); a window of a tile is "
              "pl.slice, its transpose pl.tile.transpose_view",
    "start_offset": "a tile starts at its address (pl.Tile's last element); a window of a "
                    "tile is pl.slice",
    "blayout": "a tile's block layout follows its memory space and use here (row-major in "
               "Vec, the cube's fractals in Mat / Left / Right / Acc, chosen by the compiler) "
               "and is not declared",
    "slayout": "a tile's fractal (scatter) layout follows its memory space and use here and is "
               "not declared",
    "fractal": "a tile's fractal size follows its memory space and dtype here and is not "
               "declared",
    "pad": "what a tile's padding holds is not part of its type here: it is what its load "
           "(pad_value=) or pl.fillpad wrote",
}


class TileView:
    """Upstream's `pl.TileView(valid_shape=..., stride=..., start_offset=..., blayout=...,
    slayout=..., fractal=..., pad=...)`, an element of a `pl.Tile[...]` annotation: the tile's
    valid region and how it lies in its buffer.  `valid_shape` is the tile's valid region (as
    `pl.Tile[[r, c], dtype, [vr, vc]]` says it); the other fields describe a physical layout
    or a padding this project does not declare on a tile, each refused with why
    (`_TILE_VIEW_REFUSED`)."""

    def __init__(self, valid_shape=None, stride=None, start_offset=None, blayout=None,
                 slayout=None, fractal=None, pad=None):
        given = {"stride": stride, "start_offset": start_offset, "blayout": blayout,
                 "slayout": slayout, "fractal": fractal, "pad": pad}
        for name, value in given.items():
            if value is not None:
                raise _annotation_error(f"pl.TileView({name}=...) is not supported here: "
                                        f"{_TILE_VIEW_REFUSED[name]}", f"remove {name}=")
        self.valid_shape = None if valid_shape is None else \
            _shape(list(valid_shape), "pl.TileView valid")

    def __repr__(self) -> str:
        return f"pl.TileView(valid_shape={list(self.valid_shape)})" \
            if self.valid_shape is not None else "pl.TileView()"


def _view_valid(view, shape, valid):
    """The valid region a pl.TileView gives a pl.Tile annotation (`valid`: the one written
    before it, if any)."""
    if len(view) != len(shape) or any(
            isinstance(v, int) and not 0 <= v <= d for v, d in zip(view, shape, strict=True)):
        raise _annotation_error(f"pl.TileView valid_shape {list(view)} must fit in "
                                f"{list(shape)}", "one extent per dimension")
    if any(not isinstance(v, int) for v in view):
        raise _annotation_error(
            f"pl.TileView valid_shape {list(view)}: a tile annotation's valid region "
            "is constant here (a region known at run time comes from the load's "
            "valid_shape)", "write the extents as ints, or drop the annotation")
    if valid is not None and tuple(valid) != tuple(view):
        raise _annotation_error(f"pl.Tile's valid region {list(valid)} and its "
                                f"pl.TileView's {list(view)} differ", "give one")
    return view


class Tile:
    """`pl.Tile[[r, c], dtype]`: an on-chip tile.  Optional extras follow the dtype in this
    order: the valid region `[vr, vc]` (when smaller than the tile), the allocation
    `pl.MemRef("ub")` it lives in (or a slot of one, `pl.MemRef("ub", slots=2)[i % 2]`), the
    memory space `pl.Mem.Vec` and its byte address, as the IR printer writes them.  Upstream's
    `pl.TileView(valid_shape=[vr, vc])` may stand after the dtype, the allocation or the
    memory space (where upstream writes it): its valid region is the tile's."""

    def __class_getitem__(cls, item):
        if not isinstance(item, tuple) or not 2 <= len(item) <= 6:
            raise TypeError("write pl.Tile[[rows, cols], dtype]")
        shape = _shape(item[0], "pl.Tile")
        extras = [e for e in item[2:] if not isinstance(e, TileView)]
        views = [e for e in item[2:] if isinstance(e, TileView)]
        if len(views) > 1:
            raise _annotation_error("pl.Tile takes one pl.TileView", "merge them into one")
        valid = None
        if extras and isinstance(extras[0], (list, tuple)):
            valid = _shape(extras.pop(0), "pl.Tile valid")
            if len(valid) != len(shape) or any(
                    v < 0 or v > d for v, d in zip(valid, shape, strict=True)):
                raise TypeError(f"pl.Tile valid region {list(valid)} must fit in {list(shape)}")
        memref = _tile_memref(extras.pop(0)) if extras and isinstance(
            extras[0], (MemRef, TileMemRef)) else None
        memory = extras.pop(0) if extras else None
        if isinstance(memory, TensorLayout):
            raise _annotation_error(
                f"pl.Tile[..., {memory!r}]: a tile's layout follows its memory space here "
                "(row-major in Vec, the cube's fractal order in Mat / Left / Right)",
                "drop the layout; give the memory space, e.g. pl.Mem.Mat")
        addr = extras.pop(0) if extras else None
        if extras:
            raise TypeError("write pl.Tile[[rows, cols], dtype, [valid rows, valid cols], "
                            "pl.MemRef(...), memory, addr]")
        if memory is not None and not isinstance(memory, MemorySpace):
            raise _annotation_error(f"pl.Tile memory space must be a pl.Mem member, got "
                                    f"{memory!r}", "write e.g. pl.Mem.Vec")
        if views and views[0].valid_shape is not None:
            valid = _view_valid(views[0].valid_shape, shape, valid)
        return TileType(shape, item[1], memory, addr, valid, memref)


class _RuntimeValue:
    """`pl.RUNTIME`: a scalar parameter left unspecialised, its value passed at each run
    (`kernel.compile(n=pl.RUNTIME)`, or `n: pl.INDEX = pl.RUNTIME` in the signature)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "pl.RUNTIME"


RUNTIME = _RuntimeValue()


class Scalar:
    """`pl.Scalar[dtype]`: a scalar value."""

    def __class_getitem__(cls, dtype):
        if not isinstance(dtype, DataType):
            raise _annotation_error(f"pl.Scalar needs a pl dtype, got {dtype!r}",
                                    "write e.g. pl.Scalar[pl.INT64]")
        return ScalarType(dtype)


class Array:
    """`pl.Array[n, pl.TASK_ID]`: an array of n task ids (`pl.array.create(n, pl.TASK_ID)`)."""

    def __class_getitem__(cls, item):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int)
                and not isinstance(item[0], bool) and item[0] > 0
                and isinstance(item[1], TaskIdType)):
            raise _annotation_error(f"pl.Array[{item!r}] is not an array type here",
                                    "write pl.Array[n, pl.TASK_ID] (arrays hold task ids)")
        return TaskIdArrayType(item[0])


class Tuple:
    """`pl.Tuple[T1, T2]`: the return annotation of a function returning several values
    (upstream's spelling of `tuple[T1, T2]`)."""

    def __class_getitem__(cls, items):
        return tuple[items if isinstance(items, tuple) else (items,)]


@dataclass(frozen=True)
class DirectedType:
    """A parameter annotation with a direction: `pl.Out[T]`, `pl.InOut[T]`."""

    type: object
    direction: Direction


class Out:
    """`pl.Out[T]`: a parameter the function writes and does not read."""

    def __class_getitem__(cls, t):
        return DirectedType(t, Direction.Out)


class InOut:
    """`pl.InOut[T]`: a parameter the function reads and writes."""

    def __class_getitem__(cls, t):
        return DirectedType(t, Direction.InOut)
