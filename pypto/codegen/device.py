"""IR → PTO-ISA device C++ for InCore kernels (the device and CPU-model platforms).

Every tile becomes a `Tile<TileType::...>` placed with `TASSIGN` at the address
AllocateMemoryAddr chose, in the layout `pypto.ir.layout` gives it; every tensor window a
load or store touches becomes a `GlobalTensor` view; every IR operator one instruction
(`TLOAD`, `TADD`, `TMATMUL`, ...; a partial load adds the `TFILLPAD_INPLACE` that writes
its padding).  InsertPipeSync (`pipe_sync.py`) then adds the `set_flag` / `wait_flag`
pairs between pipes.  The entry point follows the upstream runtime's convention,
`extern "C" __aicore__ void kernel_entry(__gm__ int64_t *args)`: tensor arguments are
pointers to pypto's tensor descriptor (`PtoTensor`, pto/abi.h), scalars their 64 bits.

This module decides what to emit; the text comes from templates/device_kernel.cpp.j2.
The functions of a pl.FunctionType.Group (the cross-core pipe's TPUSH / TPOP / TFREE) are
built here too, one at a time; codegen/device_group.py puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ir.dtypes import DataType
from ..ir.errors import InternalError, LoweringError
from ..ir.layout import tile_footprint, tile_layout
from ..ir.names import claim_name
from ..ir.nodes import Assign, Call, Const, ExprList, ExprStmt, For, Function, If, Var, While
from ..ir.ops import get_op
from ..ir.ops.cross_core import BUFFER_OPS, FREE_OPS, INIT_OPS, POP_OPS, PUSH_OPS
from ..ir.ops.gather import mgather_policies, mscatter_coalesce, table_rows
from ..ir.ops.prefetch import first_prefetch
from ..ir.ops.random import SEEDS
from ..ir.types import INDEX, MemorySpace, ScalarType, TensorType, TileType
from ..ir.visitor import statements
from .environment import render
from .expressions import (
    CMP_MODES,
    SWAPPED_CMP,
    declare_scalar,
    expr_model,
    ident,
    kernel_statements,
    operator_form,
    runtime_extent_source,
    scalar_ctype,
)
from .identifiers import value_idents
from .pipe_sync import (
    Access,
    Branch,
    Instr,
    Loop,
    insert_pipe_sync,
    template_models,
    without_nodes,
)

# Element types of pto-isa (FP8 types exist only on A5 builds of pto-isa; not emitted yet).
_ELEM = {
    DataType.FP32: "float", DataType.FP16: "half", DataType.BF16: "bfloat16_t",
    DataType.INT8: "int8_t", DataType.INT16: "int16_t", DataType.INT32: "int32_t",
    DataType.INT64: "int64_t", DataType.UINT8: "uint8_t", DataType.UINT16: "uint16_t",
    DataType.UINT32: "uint32_t", DataType.BOOL: "uint8_t",  # a BOOL is a byte, 0 or 1
}
# Why an element type pypto has gets no device code (docs/numerics.md).
_NO_DEVICE_DTYPE = {
    DataType.HF8: "(A5 only, and pto-isa's CPU model of hifloat8_t does not have the format's "
                  "values: it decodes the codes of exponent width 0 and 1 with 5 - D mantissa "
                  "bits where HiFloat8 has 3, and its TCVT rounds to the nearest of those, ties "
                  "down, NaN to -inf and inf to 2^15, so no CPU-model run can check pl.cast's "
                  "HF8)",
    DataType.FP8E8M0: "(pto-isa has no TCVT to or from float8_e8m0_t: MX scales come from "
                      "TQUANT, which pypto does not model)",
    # The 4-bit types (docs/numerics.md; tests/ops/test_dtypes_4bit.py checks the facts).
    DataType.FP4: "(A5 only, and pto-isa's CPU model does not convert float4_e2m1x2_t as the "
                  "format rounds: its TCVT rounds an FP4 value to an integer on the way "
                  "(0.5 widens to 0, 1.5 to 2) and its float4 constructor truncates, so no "
                  "CPU-model run can check pl.cast's FP4)",
    DataType.HF4: "(no backend converts HF4, and pto-isa has its hifloat4x2_t on A6 only)",
    DataType.INT4: "(A2/A3 only, and pto-isa's int4b_t holds one element a byte, not the two "
                   "a byte of an INT4 tensor, so its tiles cannot load pl.INT4 data)",
    DataType.UINT4: "(pto-isa has no unsigned 4-bit element type)",
}
_ROUND = {"none": "CAST_NONE", "rint": "CAST_RINT", "round": "CAST_ROUND",
          "floor": "CAST_FLOOR", "ceil": "CAST_CEIL", "trunc": "CAST_TRUNC", "odd": "CAST_ODD"}
_PAD = {"null": "Zero", "zero": "Zero", "max": "Max", "min": "Min"}
# ±inf of the 16-bit floats as custom pad bits: pto-isa's PadValue::Max / Min take them from
# std::numeric_limits, which some C++ libraries leave unspecialised for _Float16 (a pad of 0
# on the CPU model); the bit patterns mean the same on every target.
_PAD_BITS = {(DataType.FP16, "Max"): "0x7c00", (DataType.FP16, "Min"): "0xfc00",
             (DataType.BF16, "Max"): "0x7f80", (DataType.BF16, "Min"): "0xff80"}
# Which pipe moves data between two places (a tile move or extract).
_MOVE_PIPE = {
    (MemorySpace.Mat, MemorySpace.Left): "PIPE_MTE1",
    (MemorySpace.Mat, MemorySpace.Right): "PIPE_MTE1",
    (MemorySpace.Mat, MemorySpace.Bias): "PIPE_MTE1",
    (MemorySpace.Acc, MemorySpace.Vec): "PIPE_FIX",
    (MemorySpace.Acc, MemorySpace.Mat): "PIPE_FIX",
    (MemorySpace.Vec, MemorySpace.Vec): "PIPE_V",
}
_CUBE_ALIAS = {MemorySpace.Left: "TileLeft", MemorySpace.Right: "TileRight",
               MemorySpace.Acc: "TileAcc"}


# Operators device code refuses, at the user's line, and why.
_NO_DEVICE_CODE = {
    "fmod": "pto-isa's TFMOD / TFMODS compute by default with 'lower precision' (an exact "
            "form exists only for FP32 on A5) and leave a zero divisor target-defined, where "
            "pl.fmod is the exact remainder and gives x % 0 = 0 for integers",
    "rem": "A2/A3's TREM computes src0 - floor(src0 / src1) * src1 from a rounded quotient "
           "(integers through FP32, exact only within 2**24), where pl.rem is the exact "
           "remainder and gives x % 0 = 0 for integers",
    "prelu": "A2/A3's TPRELU selects through a compare mask it writes into tmp (TCMPS, TSEL), "
             "which pto-isa's CPU model does not model, so no device code for it can be "
             "proven here",
}
# Why the MX product (pl.tile.matmul_mx and its forms) has no device code (docs/device-code.md).
_MX_NO_DEVICE_CODE = (
    "pto-isa's CPU model has TMATMUL_MX (cpu/TMatmul.hpp, whose order the simulators take), "
    "but device code here declares no FP8 or FP8E8M0 tiles and no MX scale buffers yet "
    "(ScaleLeft / ScaleRight tiles, the MX scale layouts their TLOAD and TMOV take); and that "
    "model reads FP8E4M3FN's NaN codes as +-480, FP8E5M2's infinities and NaNs as finite "
    "numbers and FP8E8M0's NaN (0xFF) as 2^128, where pl.matmul_mx propagates them")
_SORT_BLOCK = 32  # TSORT32 sorts blocks of 32 values
# The element types of TPARTADD ... TPARTMIN that both a backend and pto-isa's CPU model
# (cpu/TPartOp.hpp) take; with no backend named, those of every backend (A2/A3's).
_PARTIAL_DTYPES = {
    "": (DataType.FP16, DataType.FP32, DataType.INT16, DataType.INT32),
    "Ascend950": (DataType.FP16, DataType.BF16, DataType.FP32, DataType.INT8, DataType.UINT8,
                  DataType.INT16, DataType.INT32),
}
# The first instruction of pl.addc / subc / addsc / subsc (the second adds rhs2).
_SUM3_FIRST = {"addc": "TADD", "subc": "TSUB", "addsc": "TADDS", "subsc": "TSUBS"}
# pto-isa's TileSplitAxis of a pipe operator's `split`.
SPLIT_AXES = {0: "TILE_NO_SPLIT", 1: "TILE_UP_DOWN", 2: "TILE_LEFT_RIGHT"}


@dataclass(frozen=True)
class PipeRing:
    """One ring of a group's cross-core pipe (pipe `id`, one direction) as device code
    declares it: pto-isa's `TPipe<flag, direction, slot_size, slot_num, slot_num>` under the
    alias `type`, its slots `base` bytes into the consumer's buffer (Vec for cube to vector,
    Mat for vector to cube: the bytes AllocateMemoryAddr reserves there), and on A2/A3
    `gm_offset` bytes into the GM slot buffer the task is given (None on A5, whose rings
    are the consumer's buffer alone)."""

    id: int
    c2v: bool
    split: int  # the simulators' split of its pushes and pops (BOTH_LANES: a NONE region's)
    slot_num: int
    slot_size: int
    flag: int
    base: int
    gm_offset: int | None
    type: str


@dataclass(frozen=True)
class GroupPipes:
    """The rings of a group, by (pipe id, cube to vector?), and the argument of the task
    holding the GM slot buffer's address (None: no GM ring)."""

    rings: dict[tuple[int, bool], PipeRing]
    gm_arg: int | None


@dataclass
class _Tile:
    """One C++ tile object: a view of `rows` x `cols` (physical) elements at `addr`, valid
    over `vrows` x `vcols` (None: an extent known only at run time, declared `DYNAMIC` and
    set by `SetValidRow` / `SetValidCol` where the value is defined)."""

    ident: str
    type: TileType
    vrows: int | None
    vcols: int | None
    pad: str | None = None
    views: dict = field(default_factory=dict)  # (vrows, vcols, pad) -> the view's _Tile
    flat: bool = False  # a column [R, 1] seen as the row [1, R] its bytes also are
    # A transposed matmul operand (and the Mat tile it is moved from): declared as the
    # transpose of its IR shape, [cols, rows], its fractals column-major (ZN).
    transposed: bool = False
    # A Mat tile moved to Bias: one row-major row (TMOV into the bias table takes no
    # fractals), like the Bias tile it fills.
    bias_row: bool = False
    span: object = None  # where the tile's variable is first defined (for errors)

    def model(self) -> dict:
        t = self.type
        layout = tile_layout(_transpose(t) if self.transposed else t)
        rows, cols, col_major = layout.rows, layout.cols, layout.col_major
        if self.flat:
            rows, cols, col_major = 1, layout.rows, False
        if self.bias_row:
            rows, cols = 1, tile_layout(replace(t, memory=MemorySpace.Bias)).cols
        return {
            "ident": self.ident, "loc": t.memory.name, "elem": _ELEM[t.dtype],
            "rows": rows, "cols": cols,
            "blayout": "ColMajor" if col_major or (t.memory is MemorySpace.Mat
                                                   and not self.bias_row) else "RowMajor",
            "vrows": _extent_param(self.vrows), "vcols": _extent_param(self.vcols),
            "pad": self.pad,
            "pad_bits": _PAD_BITS.get((t.dtype, self.pad)),
            "alias": _CUBE_ALIAS.get(t.memory), "addr": f"{t.addr:#x}",
            "fractals": "ND" if self.bias_row else "ZN" if self.transposed else "NZ",
        }

    def access(self) -> Access:
        start = self.type.addr
        return Access(self.type.memory.name, start, start + tile_footprint(self.type))


class _DeviceKernelBuilder:
    """Builds the device template's model of one InCore function."""

    def __init__(self, fn: Function, vec_capacity: int | None = None, backend: str = "",
                 pipes: GroupPipes | None = None):
        self.fn = fn
        self.pipes = pipes  # the group's rings, for a function of a pl.FunctionType.Group
        self.pipe_objects: dict[tuple[int, bool], str] = {}  # ring -> its TPipe's C++ name
        self.pops: list[tuple[dict, _Tile]] = []  # each TPOP's model, with its tile
        self.popped_split: dict[str, int] = {}  # a popped tile's name -> its pop's split
        self.popped: set[str] = set()  # the names holding a popped tile where code stands
        self.vec_capacity = vec_capacity  # the backend's UB bytes (None: not checked)
        self.backend = backend  # its name ("Ascend910B"; "": none named)
        self.scratch_addr = _vec_high_water(fn.body)  # free UB above every tile
        self.params = {p.var.name: p.var.type for p in fn.params}
        self.tiles: dict[tuple, _Tile] = {}
        self.scalars: dict[str, dict] = {}
        # Made-up names (windows, views) keep clear of the kernel's own non-tile values.
        self.names: set[str] = value_idents(fn)
        self.windows = 0
        self.saturates = False  # does a scalar operand need `saturate<T>`?
        self.col_sum_tree = False  # does a col_sum with a tmp tile need `col_sum_tree`?
        self.mrgsort_lists = False  # does a merge of tiles need `mrgsort_lists`?
        self.batched = False  # does a window of one batch need `batch_stride`?
        self.transposed = _transposed_operands(fn.body)
        self.bias_rows = _bias_rows(fn.body)
        # Run-time valid extents: the tiles instructions name (their ids), the statements
        # setting a DYNAMIC view's extents with the views they read them from, and the
        # settings of views a statement uses besides a value's own (emitted before it).
        self.named: set[int] = set()
        self.extent_sets: list[tuple[Instr, _Tile, tuple[_Tile, ...]]] = []
        self.pending: list[Instr] = []

    # -- names and tiles

    def _fresh(self, base: str) -> str:
        return claim_name(base, self.names)

    def tile(self, var: Var) -> _Tile:
        t = var.type
        if not isinstance(t, TileType) or t.memory is None or t.addr is None:
            raise InternalError(f"tile `{var.name}` reached codegen without memory placement")
        if t.dtype not in _ELEM:
            why = _NO_DEVICE_DTYPE.get(t.dtype, "yet")
            raise LoweringError(f"tile `{var.name}`: {t.dtype.name} tiles have no device code "
                                f"{why}", var.span, hint="use a simulator platform")
        if t.memref is not None and t.memref.slots > 1:
            raise LoweringError(
                f"tile `{var.name}` in a slot of pl.MemRef(\"{t.memref.name}\", "
                f"slots={t.memref.slots}) has no device code yet: its address is chosen at "
                "run time, and the pipe synchronisation here tracks tiles at fixed addresses",
                var.span, hint="use a simulator platform, or a one-slot pl.MemRef per buffer")
        key = (var.name, t)
        if key not in self.tiles:
            rows, cols = t.shape[0], t.shape[1] if len(t.shape) > 1 else 1
            transposed = key in self.transposed
            if transposed:
                rows, cols = cols, rows
            self.tiles[key] = _Tile(self._fresh(ident(var.name)), t, rows, cols,
                                    transposed=transposed, bias_row=key in self.bias_rows,
                                    span=var.span)
        return self.tiles[key]

    def view(self, base: _Tile, vrows: int | None, vcols: int | None,
             pad: str | None) -> _Tile:
        """`base`'s bytes seen with another valid region or pad value (its own C++ object)."""
        # The value's own tile keeps PadValue::Null: instructions like TADD want their
        # operands of one C++ type, and a pad value is part of the type.
        if (vrows, vcols, pad) == (base.vrows, base.vcols, base.pad):
            return base
        key = (vrows, vcols, pad)
        if key not in base.views:
            suffix = "valid" if (vrows, vcols) != (base.vrows, base.vcols) else f"pad_{pad.lower()}"
            base.views[key] = _Tile(self._fresh(f"{base.ident}_{suffix}"), base.type, vrows,
                                    vcols, pad, transposed=base.transposed)
        return base.views[key]

    def elementwise(self, var: Var) -> _Tile:
        """The tile an elementwise instruction takes: a column [R, 1] (column-major) is
        passed as the row-major [1, R] of the same bytes, since those instructions need
        row-major tiles and compute every element alike."""
        base = self.tile(var)
        if not tile_layout(var.type).col_major:
            return base
        key = ("flat",)
        if key not in base.views:
            base.views[key] = _Tile(self._fresh(f"{base.ident}_row"), base.type, 1, base.vrows,
                                    flat=True)
        return base.views[key]

    def valid_view(self, var: Var, pad: str | None = None) -> _Tile:
        """The view of `var`'s tile valid over its value's region (with `pad`'s PadValue).
        A run-time extent is DYNAMIC: the value's own view (no pad) is set where the value
        is defined (`_set_extents`), another view from it just before the statement using
        it."""
        base = self.tile(var)
        extents = self._extents(var)
        vrows, vcols = (e if isinstance(e, int) else None for e in extents)
        if vrows is not None and vcols is not None:
            return self.view(base, vrows, vcols, pad)
        if var.type.memory is not MemorySpace.Vec:
            raise LoweringError(
                f"`{var.name}`'s valid region [{', '.join(_extent(v) for v in var.type.valid)}] "
                f"is known only at run time, in {var.type.memory.name}: device code gives "
                "DYNAMIC valid extents to Vec tiles only so far (a cube tile's run-time region, "
                "its fractals' zero padding and TSTORE from Acc, is not yet built and proven "
                "on pto-isa's CPU model)", var.span,
                hint="load a Vec tile with the run-time region and pl.fillpad it, or give "
                     "valid_shape constant extents")
        own = self.view(base, vrows, vcols, None)
        if pad is None:
            return own
        view = self.view(base, vrows, vcols, pad)
        self.pending.append(self._extent_set(view, [None if v is not None else
                                                   _getter(own, axis)
                                                   for axis, v in enumerate((vrows, vcols))],
                                             (own,)))
        return view

    def _extents(self, var: Var) -> tuple:
        """`var`'s valid extents as its device tile's (rows, cols): ints, or the index
        expressions of extents known only at run time."""
        vrows, vcols = (tuple(var.type.valid) + (1,))[:2]
        return (vcols, vrows) if self.tile(var).transposed else (vrows, vcols)

    def _set_extents(self, dst: Var, value) -> list:
        """Where a value whose valid region is known only at run time is defined: its own
        view's DYNAMIC extents set, as the simulators set the region (pypto.codegen.cpp):
        a load's from its index expressions, a value computed from such a tile from that
        tile's view (its extents when it was defined)."""
        extents = self._extents(dst)
        if all(isinstance(e, int) for e in extents):
            return []
        own = self.valid_view(dst)  # a Vec tile (valid_view refuses others): not transposed
        values, sources = [], []
        for axis, extent in enumerate(extents):
            source = None if isinstance(extent, int) else \
                runtime_extent_source(extent, axis, value)
            if source is None:
                values.append(None if isinstance(extent, int) else _expr(extent))
                continue
            view = self.valid_view(source)
            sources.append(view)
            values.append(_getter(view, axis))
        return [self._extent_set(own, values, tuple(sources))]

    def _extent_set(self, view: _Tile, values: list, sources: tuple) -> Instr:
        """`view.SetValidRow / SetValidCol / SetValidShape(...)` of the values given (None:
        a static extent), reading `sources`' extents."""
        model = {"kind": "set_valid", "tile": view.ident, "rows": values[0],
                 "cols": values[1]}
        instr = _statement(model)
        self.extent_sets.append((instr, view, sources))
        return instr

    # -- statements

    def body(self, stmts) -> list:
        return [node for nodes in kernel_statements(stmts, self.loop, self.while_loop,
                                                    self.assign, self.visit_If, self.effect)
                for node in nodes]

    def loop(self, s: For) -> list:
        return [Loop(self.body(s.body), _static_trips(s), {
            "kind": "for", "var": ident(s.var.name), "start": _expr(s.start),
            "stop": _expr(s.stop), "step": _expr(s.step)})]

    def while_loop(self, s: While) -> list:
        # Its trip count is never known: pipe synchronisation treats it as a `for` loop
        # with run-time bounds (it may run zero times; its back edge is synchronised).
        return [Loop(self.body(s.body), None, {"kind": "while", "cond": _expr(s.cond)})]

    def visit_If(self, s: If) -> list:
        # A name bound in both branches is one buffer (AllocateMemoryAddr: one name at one
        # tile type), so one C++ tile or scalar: the join needs no copy.  Pipe
        # synchronisation fences the `if` (pipe_sync.py).
        return [Branch(self.body(s.then_body), self.body(s.else_body),
                       {"kind": "if", "cond": _expr(s.cond)})]

    def assign(self, s: Assign) -> list:
        (dst,) = s.targets
        call = s.value
        if isinstance(dst.type, ScalarType):
            declare_scalar(self.scalars, self.params, dst)
            if isinstance(call, Call) and call.op == "read":
                return self._read(call, dst, s)
            if isinstance(call, Call) and call.op in BUFFER_OPS:
                # A ring buffer's base, as the simulators give it: the rings take the bottom
                # of the consumer's buffer (AllocateMemoryAddr), where device code's TPipes
                # place them whatever the program passes its initialize_pipe (`PipeRing`).
                base = max(call.attr("base", 0), 0) if call.op == "system.reserve_buffer" \
                    else 0
                return [_statement({"kind": "scalar_assign", "dst": ident(dst.name),
                                    "value": {"kind": "int", "value": base}})]
            return [_statement({"kind": "scalar_assign", "dst": ident(dst.name),
                                "value": _expr(call)})]
        self.popped.discard(dst.name)  # a pop (below) marks it again
        if isinstance(call, Var) and isinstance(call.type, TileType):
            return self._set_extents(dst, call) + [self._move(dst, call, s)]
        if isinstance(call, Call) and call.op in _NO_DEVICE_CODE:
            raise LoweringError(f"pl.{call.op} has no device code: {_NO_DEVICE_CODE[call.op]}",
                                s.span, hint="use a simulator platform (a2a3sim, a5sim)")
        op, form = operator_form(self, call, s)
        extents = self._set_extents(dst, call) if isinstance(dst.type, TileType) else []
        out = form(op, call, dst, s)
        views, self.pending = self.pending, []
        return extents + views + out

    def _instr(self, name: str, args: list, reads: list, writes: list, pipe: str,
               template: list | None = None, gm_reads=(), gm_writes=()) -> Instr:
        """One instruction: `name<template>(args)` on `pipe`, reading and writing tiles."""
        rendered = [_arg(a) for a in args]
        self.named.update(id(a) for a in args if isinstance(a, _Tile))
        model = {"kind": "instr", "op": name, "args": rendered,
                 "template": [_arg(a) for a in template] if template else []}
        accesses_r = tuple(t.access() for t in reads) + tuple(Access(f"GM:{g}") for g in gm_reads)
        accesses_w = tuple(t.access() for t in writes) + \
            tuple(Access(f"GM:{g}") for g in gm_writes)
        text = f"{name}({', '.join(a['name'] if a['kind'] == 'ref' else '...' for a in rendered)})"
        return Instr(pipe, accesses_r, accesses_w, text, model)

    # -- the cross-core pipe (a function of a pl.FunctionType.Group)

    def effect(self, s: ExprStmt) -> list:
        """A pipe operator called for its effect: TPUSH, TFREE; an initialize_pipe emits
        nothing where it stands (the function's TPipes are declared with its tiles)."""
        call = s.value
        if self.pipes is None:
            raise InternalError(f"a cross-core pipe operator outside a group: {s!r}")
        if call.op in INIT_OPS:
            return []
        if call.op in PUSH_OPS:
            (tile,) = call.args
            ring, pipe = self._ring(call)
            self._check_crossing(tile, self._spelled(call), s)
            if ring.c2v and call.attr("split") and self.backend != "Ascend910B" \
                    and tile.type.dtype.itemsize != 4:
                raise LoweringError(
                    f"{self._spelled(call)} on {self.backend or 'this backend'}: A5's TPUSH "
                    f"splits a cube tile between the lanes for 32-bit elements only, not "
                    f"{tile.type.dtype.name}", s.span, hint="push it with split=0")
            x = self.tile(tile)
            model = {"kind": "tpush", "ring": ring.type, "pipe": pipe, "tile": x.ident,
                     "split": SPLIT_AXES[call.attr("split")]}
            return [Instr("PIPE_ALL", (x.access(),), (), f"TPUSH({x.ident})", model,
                          fence=True)]
        if call.op in FREE_OPS:
            (tile,) = call.args
            ring, pipe = self._ring(call)
            model = {"kind": "tfree", "ring": ring.type, "pipe": pipe,
                     "split": SPLIT_AXES[self.popped_split[tile.name]]}
            return [Instr("PIPE_ALL", (), (), f"TFREE({ident(tile.name)})", model, fence=True)]
        raise InternalError(f"no device code for the pipe operator {call.op}: {s!r}")

    def _form_tpop(self, op, call, dst, s):
        """TPOP into the popped tile's C++ object.  On the NPU TPOP points the object at
        the ring's slot (it moves no data into the tile's own bytes), so every other view
        of the tile is pointed at the same bytes after it (`views`, filled in when the
        function's views are known); on pto-isa's CPU model it copies the slot into the
        tile's bytes, which the views already share."""
        ring, pipe = self._ring(call)
        self._check_crossing(dst, self._spelled(call), s)
        t = self.tile(dst)
        split = call.attr("split") or 0
        self.popped_split[dst.name] = split
        self.popped.add(dst.name)
        model = {"kind": "tpop", "ring": ring.type, "pipe": pipe, "tile": t.ident,
                 "split": SPLIT_AXES[split], "views": []}
        self.pops.append((model, t))
        return [Instr("PIPE_ALL", (), (t.access(),), f"TPOP({t.ident})", model, fence=True)]

    def _ring(self, call: Call) -> tuple[PipeRing, str]:
        """The ring a pipe operator uses, and the C++ name of its TPipe in this function."""
        direction = {**PUSH_OPS, **POP_OPS, **FREE_OPS}[call.op]
        key = (call.attr("id") or 0, direction == "C2V")
        if self.pipes is None or key not in self.pipes.rings:
            raise InternalError(f"pipe {key[0]} ({direction}) has no ring in its group")
        if key not in self.pipe_objects:
            self.pipe_objects[key] = self._fresh(f"pipe{key[0]}_{direction.lower()}")
        return self.pipes.rings[key], self.pipe_objects[key]

    def _refuse_popped_alias(self, var: Var, what: str, s) -> None:
        """Refuses, at `s`, reading a popped tile's bytes as another element type (a tile
        of its own declared at the popped tile's address): on the NPU TPOP points the popped
        tile at the ring's slot, which its own object and its views follow, and such a tile
        does not."""
        if var.name in self.popped:
            raise LoweringError(
                f"{what} reads `{var.name}`, a tile popped from the cross-core pipe, as "
                "another element type: on the NPU the popped tile is the ring's slot (TPOP "
                "points it there), which device code reaches through the tile and its views "
                "alone", s.span,
                hint=f"copy it first: pl.move({var.name}, pl.Mem.Vec) is a tile of its own")

    def _spelled(self, call: Call) -> str:
        """A push or pop as the program wrote it: in a lane region's kernel, the shard or
        gather it is (language/split_aiv.py)."""
        if self.fn.attr("split_aiv"):
            return "pl.aiv_shard" if ({**PUSH_OPS, **POP_OPS}[call.op] == "C2V") \
                else "pl.aic_gather"
        return f"pl.{call.op.split('.')[-1]}"

    def _check_crossing(self, var: Var, what: str, s) -> None:
        """Refuses, at `s`, a tile device code cannot hand through the pipe: one whose
        rows are padded on the device (pto-isa's TPUSH / TPOP copy a slot row by row at
        the tile's declared columns on one side and its valid columns on the other, which
        then disagree), a column held column-major, or a partial tile."""
        t = var.type
        layout = tile_layout(t)
        rows, cols = t.shape[0], t.shape[1] if len(t.shape) > 1 else 1
        if layout.col_major or (layout.rows, layout.cols) != (rows, cols):
            unit = "32-byte blocks" if t.memory is MemorySpace.Vec else "16 x 32-byte fractals"
            raise LoweringError(
                f"{what} on device platforms: a [{rows}, {cols}] {t.dtype.name} tile in "
                f"{t.memory.name}, which the device holds as {layout.rows} x {layout.cols} "
                f"elements; device code hands through the cross-core pipe only tiles whose rows "
                f"and columns fill whole {unit}", s.span,
                hint="push and pop tiles (a lane's half of them with a split) whose rows are "
                     "whole 32-byte blocks and, on the cube, whole 16 x 16 fractals")
        if tuple(t.valid) != tuple(t.shape):
            raise LoweringError(
                f"{what} on device platforms: `{var.name}` is valid over "
                f"[{', '.join(_extent(v) for v in t.valid)}] of [{rows}, {cols}]; device code "
                "hands only whole tiles through the cross-core pipe", s.span,
                hint="pl.fillpad the tile first, or push a tile of the valid shape")

    # -- one builder per operator form (the `emit` field of the op registry)

    def _window(self, tensor: Var, offsets, vrows: int | None, vcols: int | None, s,
                transposed: bool = False, view: _Tile | None = None) -> tuple[dict, str]:
        """A GlobalTensor view of the window at `offsets` as the tile sees it: `vrows` x
        `vcols`, an extent known only at run time (None) DYNAMIC and given by `view`'s;
        a transposed tile sees the window's columns as its rows (Layout::DN)."""
        if tensor.name not in self.params or not isinstance(tensor.type, TensorType):
            raise LoweringError("device kernels load and store only tensor parameters", s.span)
        items = offsets.items
        if len(items) == 1 and vrows == 1 and not transposed:
            # A rank-1 tensor is the one row [1, n] of its descriptor (row_stride 0): an
            # element read (`pl.tensor.read(lens, [b])`, a [1] tile) is the window [0, b].
            items = (Const(0, INDEX), *items)
        elif len(items) not in (2, 3):
            raise LoweringError(
                f"device code loads and stores rank-2 and rank-3 tensors, and single rows of "
                f"rank-1 ones; `{tensor.name}` is rank {len(items)} here", s.span,
                hint="view the tensor as rank 2 (pl.reshape) or use a simulator platform")
        # Offsets [b, r, c]: a tile of batch b of a [B, rows, cols] tensor.
        *batch, r0, c0 = items
        self.batched |= bool(batch)
        name = self._fresh(f"{ident(tensor.name)}_window")
        self.windows += 1
        return _statement({
            "kind": "window", "ident": name, "tensor": ident(tensor.name),
            "elem": _ELEM[tensor.type.dtype], "rows": _extent_param(vrows),
            "cols": _extent_param(vcols),
            "shape": [_getter(view, axis)["name"] for axis, v in enumerate((vrows, vcols))
                      if v is None],
            "b0": _expr(batch[0]) if batch else None,
            "r0": _expr(r0), "c0": _expr(c0), "transposed": transposed}), name

    def _form_load(self, op, call, dst, s):
        tensor, offsets = call.args
        full = self.tile(dst)
        pad = _PAD[call.attr("pad_value").name]
        partial = tuple(dst.type.valid) != tuple(dst.type.shape)
        if full.bias_row:  # TMOV copies the valid row: no padding to fill
            partial = False
        elif dst.type.memory is MemorySpace.Mat:
            if partial and pad != "Zero":
                raise LoweringError("a partial load into Mat pads with zeros only", s.span)
            # Zeros in every element outside the valid region, up to whole fractals: the
            # cube multiplies whole fractals, so a matmul's padded K must add nothing.
            whole = tile_layout(dst.type)
            partial = partial or (whole.rows, whole.cols) != tuple(dst.type.shape)
        target = self.valid_view(dst, pad if partial else None)
        decl, window = self._window(tensor, offsets, target.vrows, target.vcols, s,
                                    full.transposed, target)
        out = [decl, self._instr("TLOAD", [target, _Ref(window)], [], [target], "PIPE_MTE2",
                                 gm_reads=[tensor.name])]
        if dst.type.memory is MemorySpace.Mat:
            return out  # TLOAD's zero PadValue pads the fractals (the NZ / ZN load fills them)
        if partial:
            padded = self.view(full, full.vrows, full.vcols, pad)
            out.append(self._instr("TFILLPAD_INPLACE", [padded, target], [target], [padded],
                                   "PIPE_V"))
        return out

    def _form_store(self, op, call, dst, s):
        tile, offsets, tensor = call.args
        src = self.valid_view(tile)
        decl, window = self._window(tensor, offsets, src.vrows, src.vcols, s, view=src)
        pipe = "PIPE_FIX" if tile.type.memory is MemorySpace.Acc else "PIPE_MTE3"
        template = None
        if call.attr("atomic").name == "Add":
            template = [_Ref(f"decltype({src.ident})"), _Ref(f"decltype({window})"),
                        _Ref("AtomicType::AtomicAdd")]
        return [decl, self._instr("TSTORE", [_Ref(window), src], [src], [], pipe, template,
                                  gm_writes=[tensor.name])]

    def _table(self, tensor: Var, s) -> tuple[dict, str]:
        """A GlobalTensor of the whole tensor parameter a gather reads or a scatter writes
        (one of rank > 2, which only the row forms take, as its rows: packed, its row stride
        the stride of its last dim but one)."""
        rows, cols = table_rows(tensor.type), tensor.type.shape[-1]
        origin = ExprList((Const(0, INDEX), Const(0, INDEX)))
        return self._window(tensor, origin, rows, cols, s)

    def _zero_padding(self, dst: Var) -> tuple[list, _Tile]:
        """The gathers write their result's valid region only: a partial result's tile is
        zeroed first (the simulators' padding holds 0).  Returns (that, the valid view)."""
        full, target = self.tile(dst), self.valid_view(dst)
        if (target.vrows, target.vcols) == (full.vrows, full.vcols):
            return [], target
        return [self._instr("TEXPANDS", [full, _Ref("0")], [], [full], "PIPE_V")], target

    def _form_mgather(self, op, call, dst, s):
        mem, idx = call.args
        coalesce, oob = mgather_policies(dict(call.attrs))
        out, target = self._zero_padding(dst)
        index = self.valid_view(idx)
        decl, table = self._table(mem, s)
        template = [_Ref(f"Coalesce::{coalesce.capitalize()}"),
                    _Ref(f"GatherOOB::{oob.capitalize()}")]
        return out + [decl, self._instr("MGATHER", [target, _Ref(table), index], [index],
                                        [target], "PIPE_MTE2", template, gm_reads=[mem.name])]

    def _form_index_gather(self, op, call, dst, s):
        """TGATHER (src, indices, tmp) / TGATHERB (src, offsets) within Vec."""
        out, target = self._zero_padding(dst)
        src, *rest = call.args
        operands = [self.tile(src), *(self.valid_view(a) for a in rest)]
        # TGATHER's tmp (the third operand) is A2/A3's scratch: written too.
        return out + [self._instr(op.isa.upper(), [target, *operands], operands,
                                  [target, *operands[2:]], "PIPE_V")]

    def _form_mscatter(self, op, call, dst, s):
        src, idx, tensor = call.args
        values, index = self.valid_view(src), self.valid_view(idx)
        decl, table = self._table(tensor, s)
        template = [_Ref(f"Coalesce::{mscatter_coalesce(dict(call.attrs)).capitalize()}")]
        return [decl, self._instr("MSCATTER", [_Ref(table), values, index], [values, index], [],
                                  "PIPE_MTE3", template, gm_writes=[tensor.name])]

    def _form_tile_scatter(self, op, call, dst, s):
        """pl.tile.scatter.  TSCATTER writes src into its destination's storage at the flat
        indices; on A2/A3 and A5 it zeroes the whole destination tile first
        (npu/*/TScatter.hpp, InitUBBuffer), in pto-isa's CPU model it does not.  So the
        device code scatters only into zeroed scratch tiles, where both agree, and keeps
        dst's other elements in integer bits of the element's width: V = scatter(src) over
        zeros, M = scatter(-1) over zeros (every bit set where an element is written), and
        result = ((dst | M) ^ M) | V."""
        base, src, idx = call.args
        for what, var in (("src", src), ("indexes", idx)):
            if tile_layout(var.type).col_major:
                raise LoweringError(
                    f"pl.tile.scatter: {what} is a [{var.type.shape[0]}, 1] column, which "
                    "device code holds column-major; A2/A3's TSCATTER reads row-major tiles",
                    s.span, hint="scatter from rows, not [R, 1] columns, on device platforms")
        bits = _SAME_WIDTH_INT[dst.type.dtype.itemsize]
        what = "pl.tile.scatter"
        values = self._scratch("scatter_values", dst.type, what, s)
        mask = self._scratch("scatter_mask", replace(dst.type, dtype=bits), what, s,
                             above=values.access().end)
        ones = self._scratch("scatter_ones", replace(src.type, dtype=bits, valid_shape=None),
                             what, s, above=mask.access().end)
        tmp = self._scratch("scatter_tmp", replace(dst.type, dtype=bits), what, s,
                            above=ones.access().end)
        x, i = self.tile(src), self.valid_view(idx)
        self._refuse_popped_alias(base, "pl.tile.scatter", s)
        as_bits = [self.elementwise(Var(f"{v.name}_bits", replace(v.type, dtype=bits), v.span))
                   for v in (base, dst)]
        d, r = as_bits
        v = self.elementwise(Var("scatter_values_bits", replace(values.type, dtype=bits),
                                 s.span))
        p = "PIPE_V"
        return [self._instr("TEXPANDS", [values, _Ref("0")], [], [values], p),
                self._instr("TSCATTER", [values, x, i], [x, i], [values], p),
                self._instr("TEXPANDS", [mask, _Ref("0")], [], [mask], p),
                self._instr("TEXPANDS", [ones, _Ref("-1")], [], [ones], p),
                self._instr("TSCATTER", [mask, ones, i], [ones, i], [mask], p),
                self._instr("TOR", [r, d, mask], [d, mask], [r], p),
                self._instr("TXOR", [r, r, mask, tmp], [r, mask], [r, tmp], p),
                self._instr("TOR", [r, r, v], [r, v], [r], p)]

    def _form_binary(self, op, call, dst, s):
        a, b = call.args
        d = self.tile(dst)
        name = op.isa.upper()
        if op.name in ("row_expand", "col_expand"):  # the vector broadcast alone
            return [self._instr(name, [d, self.tile(b)], [self.tile(b)], [d], "PIPE_V")]
        if op.category == "expand_row" and not tile_layout(b.type).col_major:
            raise LoweringError(
                f"pl.{call.op} broadcasts a [{b.type.shape[0]}, 1] {b.type.dtype.name} column, "
                f"which device code holds column-major only when its rows fill whole 32-byte "
                f"blocks", s.span, hint="use a multiple of "
                f"{32 // b.type.dtype.itemsize} rows")
        if op.category.startswith("expand"):
            return [self._instr(name, [d, self.tile(a), self.tile(b)],
                                [self.tile(a), self.tile(b)], [d], "PIPE_V")]
        if op.name == "lrelu" and dst.type.dtype not in (DataType.FP16, DataType.FP32):
            raise LoweringError(f"pl.lrelu on device platforms: TLRELU takes FP16 and FP32 "
                                f"tiles, not {dst.type.dtype.name}", s.span,
                                hint="pl.cast the operand first")
        d = self.elementwise(dst)
        # TXOR / TXORS compute (a | b) & ~(a & b) through a tmp tile of the result's type.
        tmp = [self._scratch("xor_tmp", dst.type, "pl.xor", s)] if op.name == "xor" else []
        if isinstance(a.type, TileType) and isinstance(b.type, TileType):
            x, y = self.elementwise(a), self.elementwise(b)
            return [self._instr(name, [d, x, y, *tmp], [x, y], [d, *tmp], "PIPE_V")]
        dtype = dst.type.dtype
        if isinstance(a.type, TileType):
            x = self.elementwise(a)
            return [self._instr(op.isa_scalar.upper(),
                                [d, x, self._scalar_operand(b, dtype), *tmp], [x], [d, *tmp],
                                "PIPE_V")]
        x, scalar = self.elementwise(b), self._scalar_operand(a, dtype)
        if op.name == "div":  # s / x: TDIVS has the scalar-first form
            return [self._instr("TDIVS", [d, scalar, x], [x], [d], "PIPE_V")]
        if op.name in ("add", "mul", "maximum", "minimum", "and_", "or_", "xor"):  # commutative
            return [self._instr(op.isa_scalar.upper(), [d, x, scalar, *tmp], [x], [d, *tmp],
                                "PIPE_V")]
        if op.name == "sub":  # s - x = (-x) + s: the negation is exact, one rounding
            return [self._instr("TNEG", [d, x], [x], [d], "PIPE_V"),
                    self._instr("TADDS", [d, d, scalar], [d], [d], "PIPE_V")]
        raise LoweringError(f"pl.{call.op} with the scalar first has no device code yet",
                            s.span, hint="put the tile first")

    def _form_ternary(self, op, call, dst, s):
        """pl.addc / subc / addsc / subsc: pto-isa has TADDC, TSUBC, TADDSC and TSUBSC in its
        CPU model alone (no A2/A3 or A5 form), so device code is two instructions: the first
        operation into scratch UB (rhs2 may share the result's bytes), then TADD of rhs2;
        each rounds, as the registry's meaning does."""
        a, b, c = call.args
        tmp = self._scratch(f"{op.name}_tmp", dst.type, f"pl.{call.op}", s)
        x, z, d = self.elementwise(a), self.elementwise(c), self.elementwise(dst)
        if isinstance(b.type, TileType):
            y = self.elementwise(b)
            first = self._instr(_SUM3_FIRST[op.name], [tmp, x, y], [x, y], [tmp], "PIPE_V")
        else:
            y = self._scalar_operand(b, dst.type.dtype)
            first = self._instr(_SUM3_FIRST[op.name], [tmp, x, y], [x], [tmp], "PIPE_V")
        return [first, self._instr("TADD", [d, tmp, z], [tmp, z], [d], "PIPE_V")]

    def _form_partial(self, op, call, dst, s):
        """pl.part_add, ...: TPARTADD (TPARTMUL, ...) of views holding each operand's and
        the result's valid region, which the instruction reads to tell which operands hold
        an element.  It writes the result's region alone (its padding is not computed)."""
        a, b = call.args
        dtypes = _PARTIAL_DTYPES.get(self.backend, _PARTIAL_DTYPES[""])
        if dst.type.dtype not in dtypes:
            raise LoweringError(
                f"pl.{call.op} on device platforms: the {self.backend or 'unnamed'} backend's "
                f"{op.isa.upper()} with pto-isa's CPU model takes "
                f"{', '.join(d.name for d in dtypes)} tiles, not {dst.type.dtype.name}",
                s.span, hint="pl.cast the operands first")
        if tile_layout(dst.type).col_major:
            raise LoweringError(
                f"pl.{call.op} on device platforms: a [{dst.type.shape[0]}, 1] column, which "
                f"device code holds column-major; {op.isa.upper()} takes row-major tiles",
                s.span, hint="use tiles of rows")
        d, x, y = (self.valid_view(v) for v in (dst, a, b))
        return [self._instr(op.isa.upper(), [d, x, y], [x, y], [d], "PIPE_V")]

    def _form_unary(self, op, call, dst, s):
        (src,) = call.args[:1]
        if op.name in ("move", "set_validshape"):
            # set_validshape changes no data: the value's bytes, padding included, moved to
            # the result's tile, whose stores and partial views then take the new region.
            return [self._move(dst, src, s)]
        if op.isa == "treshape":
            return self._reshape(dst, src, s)
        if op.isa == "ttrans":
            return self._transpose(dst, src, s)
        d, x = self.elementwise(dst), self.elementwise(src)
        return [self._instr(op.isa.upper(), [d, x], [x], [d], "PIPE_V")]

    def _reshape(self, dst: Var, src: Var, s) -> list:
        """pl.reshape: `TRESHAPE` gives a tile of the result's shape over the source's bytes
        (pto-isa aliases them on every target: it points the view at the source), and
        `TMOV` copies them into the result's own tile, where AllocateMemoryAddr placed it.
        The copy is what keeps the allocator's model true: it frees the source's bytes
        after their last use, which the alias would go on reading.  A reshape is the same
        bytes in the same order only where both tiles are dense (row-major, every row whole
        32-byte blocks); any other is an error at its line.

        pl.reinterpret_view is the same with another element type.  pto-isa's TRESHAPE
        refuses that unless both types are C++ floating-point or both integral (FP16 and BF16
        are neither on the CPU model), so its view is the tile declared at the source's
        address alone: what TRESHAPE does on A2/A3 (TASSIGN of the source's pointer)."""
        what_op = "pl.reshape" if dst.type.dtype == src.type.dtype else "pl.reinterpret_view"
        if dst.type.dtype != src.type.dtype:  # TRESHAPE follows a popped tile; TASSIGN not
            self._refuse_popped_alias(src, what_op, s)
        for what, var in (("source", src), ("result", dst)):
            _check_linear(what_op, what, var.type, s)
        # A column [R, 1] (column-major) is the row [1, R] of the same bytes.
        d, x = self.elementwise(dst), self.elementwise(src)
        views, key = self.tile(dst).views, ("reshape", x.ident)
        if key not in views:
            views[key] = _Tile(self._fresh(f"{d.ident}_of_{x.ident}"),
                               replace(dst.type, addr=src.type.addr), d.vrows, d.vcols,
                               flat=d.flat)
        view = views[key]
        copy = self._instr("TMOV", [d, view], [view], [d], "PIPE_V")
        if dst.type.dtype != src.type.dtype:
            return [copy]
        # TRESHAPE moves no data (a pointer on the device, no pipe); TMOV reads the bytes.
        return [self._instr("TRESHAPE", [view, x], [], [], ""), copy]

    def _transpose(self, dst: Var, src: Var, s) -> list:
        """pl.transpose: `TTRANS` of the whole tile with a tmp tile in scratch UB of the
        size pto-isa asks for ([cols, rows rounded up to 32] elements: its RowStride)."""
        for what, var in (("source", src), ("result", dst)):
            if tile_layout(var.type).col_major:
                raise LoweringError(
                    f"pl.transpose: the {what} is a [{var.type.shape[0]}, 1] column, which "
                    "device code holds column-major; TTRANS takes row-major tiles", s.span,
                    hint="transpose rows and tiles, not [R, 1] columns, on device platforms")
        d, x = self.tile(dst), self.tile(src)
        rows, cols = src.type.shape
        tmp_type = replace(src.type, shape=(cols, -(-rows // 32) * 32), valid_shape=None)
        tmp = self._scratch("trans_tmp", tmp_type, "pl.transpose", s)
        if not d.access().overlaps(x.access()):
            return [self._instr("TTRANS", [d, x, tmp], [x], [d, tmp], "PIPE_V")]
        # In place (AllocateMemoryAddr gave the result the source's bytes): TTRANS reads
        # what it has written, so it transposes into scratch above tmp, and TMOV copies.
        out = self._scratch("trans_out", dst.type, "pl.transpose", s,
                            above=tmp.access().end)
        return [self._instr("TTRANS", [out, x, tmp], [x], [out, tmp], "PIPE_V"),
                self._instr("TMOV", [d, out], [out], [d], "PIPE_V")]

    def _move(self, dst: Var, src: Var, s) -> Instr:
        """`TMOV` of `src`'s tile into `dst`'s (`pl.move`, or one tile variable assigned to
        another)."""
        d, x = self.tile(dst), self.tile(src)
        if d.transposed != x.transposed:
            raise LoweringError(
                f"`{src.name}` is moved to `{dst.name}`, and only one of them is a transposed "
                f"matmul operand: device code lays a tile out transposed or not, for all its "
                f"uses", s.span, hint="load the tensor once per use")
        return self._instr("TMOV", [d, x], [x], [d], _move_pipe(src.type, dst.type, s))

    def _form_cast(self, op, call, dst, s):
        src = call.args[0]
        d, x = self.elementwise(dst), self.elementwise(src)
        mode = _Ref(f"RoundMode::{_ROUND[call.attr('mode')]}")
        guard = []
        if src.type.dtype.is_float and dst.type.dtype.is_int:
            guard, x = self._nan_guard(src, s)
        args = [d, x, mode]
        if dst.type.dtype.is_int:
            # pl.cast saturates every conversion to an integer.  TCVT's default keeps the low
            # bits (torch's wrap-around) of FP16 -> INT8 / UINT8, FP32 / FP16 -> INT16,
            # INT32 -> INT16 and INT64 -> INT32 on the device (`kIsNarrowingCvt`), and of
            # every narrowing conversion on the CPU model, so saturation is asked for; where
            # the target holds every source value it changes nothing.
            args.append(_Ref("SaturationMode::ON"))
        return [*guard, self._instr("TCVT", args, [x], [d], "PIPE_V")]

    def _nan_guard(self, src: Var, s) -> tuple[list, _Tile]:
        """pl.cast takes NaN to 0 in an integer (docs/numerics.md).  pto-isa does not say
        what TCVT makes of a NaN (its CPU model saturates it to the type's maximum), so the
        device code zeroes NaNs first, in integer arithmetic on the bits (defined on every
        target): with m = bits & abs_mask, m > inf_bits exactly for a NaN, and
        mask = max(min(m - (inf_bits + 1), 0), -1) is -1 for a number, 0 for a NaN;
        bits & mask is then converted.  The integer tile lives in scratch UB above every
        tile the allocator placed; the instructions return its float view."""
        t = src.type
        ibits, abs_mask, inf_bits = _FLOAT_BITS[t.dtype]
        self._refuse_popped_alias(src, f"pl.{s.value.op}", s)
        bits = self.elementwise(Var(f"{src.name}_bits", replace(t, dtype=ibits), src.span))
        m = self._scratch("nan_guard", replace(t, dtype=ibits), f"pl.{s.value.op}", s)
        value = self._scratch("nan_guard_value", t, f"pl.{s.value.op}", s)
        v = "PIPE_V"
        return [self._instr("TANDS", [m, bits, _Ref(abs_mask)], [bits], [m], v),
                self._instr("TADDS", [m, m, _Ref(f"-{inf_bits} - 1")], [m], [m], v),
                self._instr("TMINS", [m, m, _Ref("0")], [m], [m], v),
                self._instr("TMAXS", [m, m, _Ref("-1")], [m], [m], v),
                self._instr("TAND", [m, m, bits], [m, bits], [m], v)], value

    def _scratch(self, name: str, t: TileType, what: str, s, above: int = 0) -> _Tile:
        """A tile of type `t` in scratch UB: above every tile the allocator placed (and
        above the byte `above`, for a second scratch tile of one statement), so free for
        the whole kernel (the instructions that use it run in order on the V pipe).  What
        does not fit the backend's Vec is an error at the statement `s`."""
        start = -(-max(self.scratch_addr, above) // 32) * 32
        end = start + tile_footprint(t)
        if self.vec_capacity is not None and end > self.vec_capacity:
            raise LoweringError(
                f"{what} on device platforms takes {tile_footprint(t)} bytes of scratch above "
                f"the kernel's tiles, which end at {start} of the {self.vec_capacity} bytes of "
                "Vec", s.span, hint="use smaller tiles")
        return self.elementwise(Var(name, replace(t, addr=start), s.span))

    def _scalar_operand(self, e, dtype: DataType) -> dict:
        """A scalar operand of an instruction on `dtype` elements (`TADDS`, `TEXPANDS`, ...).

        The instruction takes the element type, and C++ converts a scalar (int64_t or
        double in device code) to it implicitly: to the nearest float, ties to even, as
        pl's `rint` does, but to an integer by keeping the low bits.  pl converts a scalar
        operand as `pl.cast` does, saturating (docs/numerics.md), so an integer operand that
        may not fit is saturated first (`saturate<T>`); a constant that fits, or a scalar
        whose type does, is passed as it is."""
        model = _expr(e)
        if not dtype.is_int:
            return model
        lo, hi = dtype.int_range
        if isinstance(e, Const):
            fits = lo <= int(e.value) <= hi
        else:
            src = e.type.dtype
            fits = not src.is_float and lo <= src.int_range[0] and src.int_range[1] <= hi
        if fits:
            return model
        self.saturates = True
        return {"kind": "saturate", "elem": _ELEM[dtype], "value": model}

    def _form_fill(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        value = operands.get("scalar", operands.get("value"))
        d = self.elementwise(dst)
        return [self._instr("TEXPANDS", [d, self._scalar_operand(value, dst.type.dtype)], [], [d],
                            "PIPE_V")]

    def _form_ci(self, op, call, dst, s):
        """pl.tile.ci: TCI<Tile, T, descending>(dst, start), its scalar form (pto-isa's
        A2/A3 overload without a tmp tile; A5 has no other)."""
        d = self.tile(dst)
        start = self._scalar_operand(call.args[0], dst.type.dtype)
        descending = _Ref("1" if call.attr("descending") else "0")
        return [self._instr("TCI", [d, start], [], [d], "PIPE_V",
                            [_Ref(f"decltype({d.ident})"), _Ref(_ELEM[dst.type.dtype]),
                             descending])]

    def _form_tri(self, op, call, dst, s):
        """pl.tile.tri: `TTRI<Tile, upper>` of the tile's valid region.  TTRI takes an
        `int` diagonal and pto-isa's CPU model adds the row to it, so the diagonal is first
        clamped to [-rows, cols], where every mask the tile can hold is already reached."""
        d = self.valid_view(dst)
        rows, cols = dst.type.shape
        diagonal = call.args[0]
        if isinstance(diagonal, Const):
            clamped = {"kind": "int", "value": max(-rows, min(cols, int(diagonal.value)))}
        else:
            low = {"kind": "select", "op": ">", "lhs": _expr(diagonal),
                   "rhs": {"kind": "int", "value": -rows}}
            clamped = {"kind": "select", "op": "<", "lhs": low,
                       "rhs": {"kind": "int", "value": cols}}
        upper = _Ref("1" if call.attr("upper") else "0")
        return [self._instr("TTRI", [d, {"kind": "cast", "ctype": "int", "fn": "",
                                          "operand": clamped}], [], [d], "PIPE_V",
                            template=[_Ref(f"decltype({d.ident})"), upper])]

    def _form_random(self, op, call, dst, s):
        """pl.tile.random: `TRANDOM<rounds>` of the tile's valid region, its key and counter
        words in local arrays (TRandomKey, TRandomCounter) of the scalars' low 32 bits."""
        operands = op.operands(call.args, dict(call.attrs))
        seeds = [_expr(operands[name]) for name in SEEDS]
        d = self.valid_view(dst)
        key, counter = self._fresh(f"{d.ident}_key"), self._fresh(f"{d.ident}_counter")
        return [_statement({"kind": "words", "type": "TRandomKey", "ident": key,
                            "values": seeds[:2]}),
                _statement({"kind": "words", "type": "TRandomCounter", "ident": counter,
                            "values": seeds[2:]}),
                self._instr("TRANDOM", [d, _Ref(key), _Ref(counter)], [], [d], "PIPE_V",
                            template=[_Ref(str(call.attr("rounds")))])]

    def _form_fillpad(self, op, call, dst, s):
        (src,) = call.args
        if dst.type.dtype.itemsize not in (1, 2, 4):
            raise LoweringError(
                f"pl.{call.op} on device platforms: {op.isa.upper()} takes 1-, 2- and 4-byte "
                f"elements, not {dst.type.dtype.name}", s.span, hint="pl.cast the tile first")
        pad = _PAD[call.attr("pad_value").name]
        d = self.view(self.tile(dst), *self._full(dst), pad)
        x = self.valid_view(src)
        return [self._instr(op.isa.upper(), [d, x], [x], [d], "PIPE_V")]

    def _full(self, var: Var) -> tuple[int, int]:
        t = self.tile(var)
        return t.vrows, t.vcols

    def _form_reduce(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        d, x = self.tile(dst), self.tile(operands["x"])
        tmp = operands.get("tmp_tile")
        name = op.isa.upper()
        if tmp is None:
            return [self._instr(name, [d, x], [x], [d], "PIPE_V")]
        t = self.tile(tmp)
        if op.name == "col_sum":
            # The device's pairwise tree, written out (templates/device_ops.cpp.j2): pto-isa's
            # CPU model ignores TCOLSUM's isBinary and would add the rows in sequence.
            self.col_sum_tree = True
            addrs = [_Ref(f"{v.type.addr:#x}") for v in (d, x, t)]
            return [self._instr("col_sum_tree", addrs, [x, t], [d, t], "PIPE_V",
                                [_Ref(f"decltype({x.ident})"), _Ref(f"decltype({t.ident})")])]
        return [self._instr(name, [d, x, t], [x, t], [d, t], "PIPE_V")]

    def _form_sort(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        d = self.valid_view(dst)
        if op.name == "sort32":
            return [self._sort32(operands, d, s)]
        block_len = call.attr("block_len")
        if block_len is not None:  # TMRGSORT's single-list form
            x = self.valid_view(operands["src0"])
            return [self._instr("TMRGSORT", [d, x, _Ref(str(block_len))], [x], [d], "PIPE_V")]
        # The list form takes the count of merged pairs it reports by reference: a helper
        # (templates/device_ops.cpp.j2) holds it.
        self.mrgsort_lists = True
        srcs = [self.valid_view(operands[f"src{i}"]) for i in range(4)
                if operands[f"src{i}"] is not None]
        t = self.tile(operands["tmp"])
        return [self._instr("mrgsort_lists", [d, t, *srcs], srcs, [d, t], "PIPE_V")]

    def _sort32(self, operands, d: _Tile, s) -> Instr:
        """TSORT32 (dst, src, idx), with a tmp tile (the user's, else scratch UB) where the
        last block of a row is partial: the NPU pads it to 32 with -inf there and writes 32
        pairs, so the tile's columns must hold whole blocks."""
        src = operands["src"]
        cols, whole = src.type.valid[1], src.type.shape[1]
        x, i = self.valid_view(src), self.valid_view(operands["idx"])
        if src.type.dtype is DataType.FP16 and cols > _SORT_BLOCK:
            raise LoweringError(
                "pl.sort32 of FP16 rows of more than 32 values has no device code: pto-isa's "
                "CPU model writes FP16 block b at column 64 * b, where its 128 columns of "
                "pairs overlap the next block's, so no device code for it can be proven here",
                s.span, hint="sort FP16 rows 32 values at a time, or use a simulator platform")
        args, reads, writes = [d, x, i], [x, i], [d]
        if cols % _SORT_BLOCK or operands["tmp"] is not None:
            if whole % _SORT_BLOCK:
                raise LoweringError(
                    f"pl.sort32 of rows of {cols} values on device platforms needs tiles of "
                    "whole blocks of 32 columns (the NPU sorts a partial last block padded to "
                    f"32), got {whole}", s.span,
                    hint="load into a tile of a multiple of 32 columns with a valid region")
            need = -(-cols // _SORT_BLOCK) * _SORT_BLOCK
            tmp = operands["tmp"]
            t = self.tile(tmp) if tmp is not None else self._scratch(
                "sort32_tmp", TileType((1, need), src.type.dtype, memory=MemorySpace.Vec),
                "pl.sort32", s)
            args, reads, writes = args + [t], reads + [t], writes + [t]
        return self._instr("TSORT32", args, reads, writes, "PIPE_V")

    def _form_matmul(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        # A transposed operand's tiles are declared transposed (`_transposed_operands`):
        # TMATMUL multiplies them as they are.
        d = self.tile(dst)
        a, b = self.tile(operands["lhs"]), self.tile(operands["rhs"])
        acc, bias = operands.get("acc"), operands.get("bias")
        if bias is not None:  # TMATMUL_BIAS, TGEMV_BIAS
            r = self.tile(bias)
            return [self._instr(op.isa.upper(), [d, a, b, r], [a, b, r], [d], "PIPE_M")]
        if acc is None:  # TMATMUL, TGEMV
            return [self._instr(op.isa.upper(), [d, a, b], [a, b], [d], "PIPE_M")]
        c = self.tile(acc)
        return [self._instr(op.isa.upper(), [d, c, a, b], [a, b, c], [d], "PIPE_M")]

    def _form_extract(self, op, call, dst, s):
        src, offsets = call.args
        if not isinstance(src.type, TileType) or len(offsets.items) != 2:
            raise InternalError(f"a tensor slice reached codegen: {s!r}")
        d, x = self.tile(dst), self.tile(src)
        r0, c0 = offsets.items
        return [self._instr("TEXTRACT", [d, x, _expr(r0), _expr(c0)], [x], [d],
                            _move_pipe(src.type, dst.type, s))]

    def _read(self, call, dst, s):
        tile, indices = call.args
        if not isinstance(tile.type, TileType) or tile.type.memory is not MemorySpace.Vec:
            raise LoweringError("an element read on device platforms reads a Vec tile", s.span)
        x = self.tile(tile)
        r, c = (tuple(indices.items) + (Const(0, INDEX),))[:2]
        layout = tile_layout(tile.type)
        stride = 1 if layout.col_major else layout.cols
        instr = self._instr("GetValue", [], [x], [], "PIPE_S")
        instr.payload = {"kind": "read", "dst": ident(dst.name), "tile": x.ident,
                         "r": _expr(r), "c": _expr(c), "stride": stride,
                         "ctype": scalar_ctype(dst.type.dtype)}
        return [instr]

    def _form_create(self, op, call, dst, s):
        self.tile(dst)
        return []

    def _form_compare(self, op, call, dst, s):
        """pl.cmp into a BOOL tile, a byte (0 or 1) per element, where pto-isa's `TCMP` /
        `TCMPS` write a bit per element: on A2/A3 the compare writes its bit mask into
        scratch UB, `TSEL` picks FP16 ones and zeros by it (what A2/A3's `vsel` reads:
        the bits of a row in order, up to 128 a row) and `TCVT` makes them bytes.  Which
        compares, shapes and backends this covers: `_check_mask`."""
        a, b = call.args
        mode = CMP_MODES[call.attr("cmp_type")]
        x_var, scalar = (a, b) if isinstance(a.type, TileType) else (b, a)
        if x_var is b:  # s OP x is x (mirrored OP) s
            mode = SWAPPED_CMP[mode]
        t = x_var.type
        self._check_mask("pl.cmp", t, s, 128)
        if t.dtype not in (DataType.FP16, DataType.FP32, DataType.INT32):
            raise LoweringError(f"pl.cmp on device platforms: A2/A3's TCMP compares FP16, FP32 "
                                f"and INT32 tiles, not {t.dtype.name}", s.span,
                                hint="pl.cast the operands first")
        if t.dtype is DataType.INT32 and mode not in ("EQ", "NE"):
            raise LoweringError(f"pl.cmp on device platforms: A2/A3's TCMP compares INT32 "
                                f"tiles for equality only, not {mode}", s.span,
                                hint="pl.cast the operands to FP32 first")
        x, d = self.tile(x_var), self.tile(dst)
        mask, tmp = self._mask_scratch("cmp", dst.type, s)
        half = replace(dst.type, dtype=DataType.FP16, valid_shape=None)
        ones = self._scratch("cmp_ones", half, "pl.cmp", s, above=tmp.access().end)
        zeros = self._scratch("cmp_zeros", half, "pl.cmp", s, above=ones.access().end)
        cmp_mode = _Ref(f"CmpMode::{mode}")
        if isinstance(scalar.type, TileType):
            y = self.tile(scalar)
            compare = self._instr("TCMP", [mask, x, y, cmp_mode], [x, y], [mask], "PIPE_V")
        else:
            value = self._scalar_operand(scalar, t.dtype)
            compare = self._instr("TCMPS", [mask, x, value, cmp_mode], [x], [mask], "PIPE_V")
        v = "PIPE_V"
        return [compare,
                self._instr("TEXPANDS", [ones, _Ref("1")], [], [ones], v),
                self._instr("TEXPANDS", [zeros, _Ref("0")], [], [zeros], v),
                self._instr("TSEL", [ones, mask, ones, zeros, tmp], [mask, ones, zeros],
                            [ones, tmp], v),
                self._instr("TCVT", [d, ones, _Ref("RoundMode::CAST_RINT")], [ones], [d], v)]

    def _form_select(self, op, call, dst, s):
        """pl.sel by a BOOL tile of bytes: the bit mask `_selecting_mask` makes, and `TSEL`
        picks (A2/A3's `vsel` reads up to 128 bits a row for 16-bit elements, 64 for 32-bit
        ones)."""
        mask_var, a, b = call.args
        x, y, d = self.tile(a), self.tile(b), self.tile(dst)
        mask, tmp, instrs = self._selecting_mask("sel", "pl.sel", "TSEL", mask_var, dst.type, s)
        return instrs + [self._instr("TSEL", [d, mask, x, y, tmp], [mask, x, y], [d, tmp],
                                     "PIPE_V")]

    def _form_select_scalar(self, op, call, dst, s):
        """pl.tile.sels by a BOOL tile of bytes: the bit mask as pl.sel makes it, then
        `TSELS`, whose tmp (scratch of the element type: A2/A3 keeps the scalar there) is
        not the user's tmp operand."""
        operands = op.operands(call.args, dict(call.attrs))
        t = dst.type
        x, d = self.tile(operands["src"]), self.tile(dst)
        mask, tmp, instrs = self._selecting_mask(
            "sels", "pl.tile.sels", "TSELS", operands["mask"], t, s,
            TileType((1, 64 // t.dtype.itemsize), t.dtype, MemorySpace.Vec))
        value = self._scalar_operand(operands["scalar"], t.dtype)
        return instrs + [self._instr("TSELS", [d, mask, x, tmp, value], [mask, x], [d, tmp],
                                     "PIPE_V")]

    def _selecting_mask(self, what: str, written: str, instr: str, mask_var: Var,
                        t: TileType, s, tmp_type: TileType | None = None):
        """(mask, tmp, instructions): the bit mask A2/A3's `instr` (TSEL, TSELS) reads, made
        from the BOOL tile of bytes `mask_var` (`TCVT` to FP16 0 / 1, `TCMPS` != 0), for a
        select of `t` elements (16- or 32-bit; else refused at `s`), and its tmp tile."""
        if t.dtype.itemsize not in (2, 4):
            raise LoweringError(f"{written} on device platforms: A2/A3's {instr} selects 16- "
                                f"and 32-bit elements, not {t.dtype.name}", s.span,
                                hint="pl.cast the operands first")
        self._check_mask(written, t, s, 128 if t.dtype.itemsize == 2 else 64)
        m = self.tile(mask_var)
        mask, tmp = self._mask_scratch(what, t, s, tmp_type)
        half = self._scratch(f"{what}_half", replace(t, dtype=DataType.FP16, valid_shape=None),
                             written, s, above=tmp.access().end)
        v = "PIPE_V"
        return mask, tmp, [
            self._instr("TCVT", [half, m, _Ref("RoundMode::CAST_RINT")], [m], [half], v),
            self._instr("TCMPS", [mask, half, _Ref("0"), _Ref("CmpMode::NE")], [half], [mask],
                        v)]

    def _check_mask(self, what: str, t: TileType, s, most: int) -> None:
        """Refuses, at `s`, a mask device code cannot make or read on this backend: on any
        but A2/A3, and of rows not whole bytes or longer than `most` bits (what A2/A3's
        TSEL reads of a row for these elements)."""
        if self.backend != "Ascend910B":
            # pto-isa's CPU model reads a TSEL mask a byte at a time whatever its type, A5's
            # TCMP and TSEL a 32-bit word at a time: no mask tile is right on both.
            raise LoweringError(
                f"{what} on device platforms: the {self.backend or 'unnamed'} backend's "
                "compare masks are 32-bit words, which pto-isa's CPU model of TSEL reads as "
                "bytes, so no device code for it can be proven here", s.span,
                hint="use the a2a3 platforms or a simulator platform")
        cols = t.shape[1] if len(t.shape) > 1 else 1
        if cols % 8 or cols > most:
            raise LoweringError(
                f"{what} on device platforms: a tile of {cols} columns: A2/A3's TSEL takes a "
                f"mask of whole bytes, at most {most} bits a row here", s.span,
                hint=f"use tiles of 8, 16, ..., {most} columns")

    def _mask_scratch(self, what: str, t: TileType, s,
                      tmp_type: TileType | None = None) -> tuple[_Tile, _Tile]:
        """Scratch for a bit mask of the [rows, cols] tile type `t` (a 32-byte row each,
        `cols / 8` bytes of it valid) and the tmp tile of the select: by default the uint32
        one A2/A3's TSEL copies a row's mask into."""
        rows, cols = t.shape
        mask_type = TileType((rows, 32), DataType.UINT8, MemorySpace.Vec)
        mask = self.view(self._scratch(f"{what}_mask", mask_type, f"pl.{what}", s), rows,
                         cols // 8, None)
        tmp_type = tmp_type or TileType((1, 16), DataType.UINT32, MemorySpace.Vec)
        tmp = self._scratch(f"{what}_tmp", tmp_type, f"pl.{what}", s, above=mask.access().end)
        return mask, tmp


# A float's bits as an integer: (its type, |x|'s bits mask, +inf's bits).
# The integer of each element width: pl.tile.scatter merges in bits of it.
_SAME_WIDTH_INT = {1: DataType.INT8, 2: DataType.INT16, 4: DataType.INT32}
_FLOAT_BITS = {DataType.FP16: (DataType.INT16, "0x7fff", "0x7c00"),
               DataType.BF16: (DataType.INT16, "0x7fff", "0x7f80"),
               DataType.FP32: (DataType.INT32, "0x7fffffff", "0x7f800000")}


def _vec_high_water(stmts) -> int:
    """The end of the highest Vec tile the allocator placed in `stmts`: UB above it is
    free for the whole kernel."""
    ends = [t.addr + tile_footprint(t) for s in statements(stmts) if isinstance(s, Assign)
            for t in (var.type for var in s.targets)
            if isinstance(t, TileType) and t.memory is MemorySpace.Vec and t.addr is not None]
    return max(ends, default=0)


@dataclass(frozen=True)
class _Ref:
    """A C++ name passed as an instruction argument as it is (a window, an enum value)."""

    name: str


def _arg(a) -> dict:
    if isinstance(a, _Tile):
        return {"kind": "ref", "name": a.ident}
    if isinstance(a, _Ref):
        return {"kind": "ref", "name": a.name}
    return a  # an expression model


# The SPMD block's index and the task's block count, in any expression: the AI Core's own
# registers (on pto-isa's CPU model, the launcher's: templates/cpu_model_launch.cpp.j2).
_BLOCK_READS = {f"{op}()": f"static_cast<int64_t>({op}())"
                for op in ("get_block_idx", "get_block_num")}
# The vector lane of a pl.FunctionType.Group's AIV function: its sub-block's index (0 on the
# cube; codegen/cpp.py refuses it in every other kernel).
_BLOCK_READS["get_subblock_idx()"] = "static_cast<int64_t>(get_subblockid())"


def _expr(e) -> dict:
    return expr_model(e, _BLOCK_READS)


def _statement(model: dict) -> Instr:
    """A statement that runs on no pipe (scalar code, declarations): never synchronised."""
    return Instr("", (), (), model["kind"], model)


def _move_pipe(src: TileType, dst: TileType, s) -> str:
    pipe = _MOVE_PIPE.get((src.memory, dst.memory))
    if pipe is None:
        raise LoweringError(f"no device data path from {src.memory.name} to {dst.memory.name}",
                            s.span)
    return pipe


def _static_trips(s: For) -> int | None:
    if all(isinstance(e, Const) for e in (s.start, s.stop, s.step)) and s.step.value > 0:
        return max(0, -(-(s.stop.value - s.start.value) // s.step.value))
    return None


def _check_linear(what: str, role: str, t: TileType, s) -> None:
    """Refuses, at `s`, a tile whose elements are not its first bytes in row-major order:
    a dense tile (rows of whole 32-byte blocks), one row (padded after its last element) or
    a column held column-major (pypto.ir.layout) are; the padded rows of any other are
    not.  Two such tiles of one byte size have the same footprint, the elements first."""
    layout = tile_layout(t)
    shape = (t.shape[0], t.shape[1] if len(t.shape) > 1 else 1)
    if not (layout.col_major or shape[0] == 1 or (layout.rows, layout.cols) == shape):
        per_block = 32 // t.dtype.itemsize
        raise LoweringError(
            f"{what}: the {role}, a {list(t.shape)} {t.dtype.name} tile, is not its elements "
            f"in row-major order on the device (its rows are padded to whole 32-byte "
            f"blocks), so its bytes are not the reshape's", s.span,
            hint=f"reshape tiles of one row, columns, or tiles whose columns are a multiple "
                 f"of {per_block}")


def _extent_param(v: int | None) -> int | str:
    """A tile's or window's extent as its C++ template argument."""
    return "DYNAMIC" if v is None else v


def _getter(view: _Tile, axis: int) -> dict:
    """The expression model of `view`'s run-time valid extent on `axis` (0: rows)."""
    getter = "GetValidRow" if axis == 0 else "GetValidCol"
    return {"kind": "var", "name": f"{view.ident}.{getter}()"}


def _extent(v) -> str:
    """An extent for a message: its value, or its variable's name ('?' for an expression)."""
    return str(v) if isinstance(v, int) else getattr(v, "name", "?")


def _transpose(t: TileType) -> TileType:
    valid = tuple(reversed(t.valid_shape)) if t.valid_shape is not None else None
    return replace(t, shape=tuple(reversed(t.shape)), valid_shape=valid)


def _transposed_operands(stmts) -> set[tuple]:
    """The (name, type) keys of the tiles device code declares transposed: each transposed
    matmul operand (`a_trans` / `b_trans`) and, back through `pl.move`, the Mat tile it was
    loaded into, which TLOAD fills from a column-major (Layout::DN) view of the tensor."""
    assigns = [s for s in statements(stmts)
               if isinstance(s, Assign) and isinstance(s.value, (Call, Var))]
    marked: set[tuple] = set()
    for s in reversed(assigns):
        _mark_transposed(s, marked)
    return marked


def _mark_transposed(s: Assign, marked: set[tuple]) -> None:
    """Adds to `marked` the tiles `s` makes transposed operands of (statements are met
    last to first, so a tile is marked before the statement defining it)."""
    call, (dst,) = s.value, s.targets
    if isinstance(call, Var):  # one tile variable assigned to another: a move
        if (dst.name, dst.type) in marked:
            marked.add((call.name, call.type))
        return
    op = get_op(call.op)
    if op.emit == "matmul":
        operands = op.operands(call.args, dict(call.attrs))
        for attr, role in (("a_trans", "lhs"), ("b_trans", "rhs")):
            if call.attr(attr):
                marked.add((operands[role].name, operands[role].type))
                _check_transposable(operands[role], s)
    elif (dst.name, dst.type) in marked:
        if call.op == "move":
            (src,) = call.args[:1]
            marked.add((src.name, src.type))
        elif call.op != "load":
            raise LoweringError(
                f"`{dst.name}` is a transposed matmul operand made by pl.{call.op}: device "
                f"code transposes an operand as TLOAD brings it in, from a tensor",
                s.span, hint="load the operand from a tensor (and move it to Left / Right)")


def _bias_rows(stmts) -> set[tuple]:
    """The (name, type) keys of the Mat tiles moved to Bias (by pl.move, or one tile
    variable assigned to another)."""
    rows = set()
    for s in statements(stmts):
        if not (isinstance(s, Assign) and len(s.targets) == 1
                and isinstance(s.targets[0].type, TileType)
                and s.targets[0].type.memory is MemorySpace.Bias):
            continue
        src = s.value.args[0] if isinstance(s.value, Call) and s.value.op == "move" else s.value
        if isinstance(src, Var) and src.type.memory is MemorySpace.Mat:
            rows.add((src.name, src.type))
    return rows


def _check_transposable(operand: Var, s) -> None:
    t = operand.type
    if tile_footprint(t) != tile_footprint(_transpose(t)):
        raise LoweringError(
            f"a transposed {t.dtype.name} matmul operand of {list(t.shape)}: its transpose "
            f"takes other bytes in whole fractals than AllocateMemoryAddr gave it", s.span,
            hint="use FP16, BF16 or FP32 operands, or transpose the tensor before loading it")


def _extents_read(builder: _DeviceKernelBuilder) -> tuple[set[int], set[int]]:
    """(The ids of the tiles an instruction names, and of the DYNAMIC views whose extents
    theirs are set from; the ids of the statements setting the extents of views nothing
    reads, which are left out with those views.)"""
    named = set(builder.named)
    grown = True
    while grown:
        grown = False
        for _, view, sources in builder.extent_sets:
            if id(view) in named and any(id(v) not in named for v in sources):
                named.update(id(v) for v in sources)
                grown = True
    unread = {id(instr) for instr, view, _ in builder.extent_sets if id(view) not in named}
    return named, unread


@dataclass(frozen=True)
class DeviceKernel:
    """A kernel's device source and the synchronised body it was rendered from (for the
    pipe-sync verifier and its tests)."""

    name: str
    cpp: str
    core_type: str
    body: list
    on_chip: dict[str, int]  # bytes each on-chip space's tiles reach (their footprints)


def device_kernel(fn: Function, vec_capacity: int | None = None,
                  backend: str = "") -> DeviceKernel:
    """The PTO-ISA C++ of one lowered InCore function, synchronised; `vec_capacity` (the
    backend's UB bytes) bounds the scratch instructions take (a float-to-integer cast's
    NaN guard, ...), and `backend` (its name) says which form an instruction takes where
    backends differ (pl.cmp)."""
    function = device_function(fn, vec_capacity, backend)
    return DeviceKernel(fn.name, render("device_kernel.cpp.j2", k=function.model),
                        function.core_type, function.body, function.on_chip)


@dataclass(frozen=True)
class DeviceFunction:
    """One function's model for the device templates (templates/device_function.cpp.j2),
    the synchronised body it was rendered from, its core and its on-chip high-water marks."""

    model: dict
    body: list
    core_type: str
    on_chip: dict[str, int]


def device_function(fn: Function, vec_capacity: int | None = None, backend: str = "",
                    pipes: GroupPipes | None = None,
                    arg_index: list[int] | None = None) -> DeviceFunction:
    """`device_kernel`'s model of `fn`; a function of a pl.FunctionType.Group also gets
    the group's rings (`pipes`) and reads its parameters from the task's arguments at
    `arg_index` (by default, in order)."""
    if (hint := first_prefetch(fn)) is not None:
        raise LoweringError(
            f"pl.{hint.op} in device code: TPREFETCH_ASYNC needs the SDMA workspace the host "
            "prepares for the kernel (pto-isa's SdmaWorkspaceManager), which this project's "
            "runtime does not provide", hint.span,
            hint="the prefetch changes no value: leave it out for device platforms, or run on "
                 "a simulator platform (a2a3sim, a5sim)")
    for stmt in statements(list(fn.body)):  # before its FP8 operands' tiles are declared
        value = getattr(stmt, "value", None)
        if isinstance(value, Call) and get_op(value.op).category == "matmul_mx":
            raise LoweringError(f"pl.{value.op} has no device code: {_MX_NO_DEVICE_CODE}",
                                value.span, hint="run it on a5sim, which computes TMATMUL_MX "
                                                 "as pto-isa's CPU model does")
    builder = _DeviceKernelBuilder(fn, vec_capacity, backend, pipes)
    stmts = builder.body(fn.body)
    named, unread = _extents_read(builder)
    body = insert_pipe_sync(without_nodes(stmts, unread))
    tiles = []
    declared: dict[int, list[str]] = {}  # a tile's id -> the idents of its declared views
    for tile in sorted(builder.tiles.values(), key=lambda t: t.ident):
        tiles.append(tile.model())
        views = [v for _, v in sorted(tile.views.items(), key=lambda kv: kv[1].ident)
                 if v.vrows is not None and v.vcols is not None or id(v) in named]
        tiles += [v.model() for v in views]
        declared[id(tile)] = [v.ident for v in views]
    for pop, tile in builder.pops:
        pop["views"] = declared[id(tile)]
    cube = any(t.type.memory not in (MemorySpace.Vec,) for t in builder.tiles.values())
    index = arg_index if arg_index is not None else list(range(len(fn.params)))
    model = {
        "name": fn.name,
        "params": [{"ident": ident(p.var.name), "index": index[i],
                    "kind": "tensor" if isinstance(p.var.type, TensorType)
                    else ("float" if p.var.type.dtype.is_float else "int")}
                   for i, p in enumerate(fn.params)],
        "tiles": tiles,
        "scalars": sorted(builder.scalars.values(), key=lambda v: v["ident"]),
        "body": _merged_barriers(template_models(body)),
        "saturates": builder.saturates,
        "col_sum_tree": builder.col_sum_tree,
        "mrgsort_lists": builder.mrgsort_lists,
        "batched": builder.batched,
        "pipes": [_pipe_model(pipes, builder.pipe_objects[key], pipes.rings[key])
                  for key in sorted(builder.pipe_objects, key=lambda k: pipes.rings[k].flag)]
        if pipes is not None else [],
    }
    on_chip = dict.fromkeys((m.name for m in MemorySpace if m is not MemorySpace.DDR), 0)
    for tile in builder.tiles.values():
        end = tile.access().end
        on_chip[tile.type.memory.name] = max(on_chip[tile.type.memory.name], end)
    return DeviceFunction(model, body, "cube" if cube else "vector", on_chip)


def _pipe_model(pipes: GroupPipes, name: str, ring: PipeRing) -> dict:
    """The declaration of a function's TPipe of `ring`: the GM slot buffer (A2/A3: its
    part of the task's, `args[gm_arg]`; A5: none) and the consumer's bases of the slots."""
    gm = "nullptr"
    if ring.gm_offset is not None and pipes.gm_arg is not None:
        gm = (f"reinterpret_cast<__gm__ void *>(args[{pipes.gm_arg}] + "
              f"INT64_C({ring.gm_offset}))")
    return {"type": ring.type, "ident": name, "gm": gm,
            "c2v_base": f"{ring.base:#x}" if ring.c2v else "0x0",
            "v2c_base": "0x0" if ring.c2v else f"{ring.base:#x}"}


def _merged_barriers(models: list[dict]) -> list[dict]:
    """`models` (a body's statement models, loops' and branches' bodies too) with the
    barrier before a pipe operator left out where the operator before it ends with one:
    both drain the same pipes."""
    out: list[dict] = []
    for m in models:
        m = dict(m)
        for key in ("body", "then_body", "else_body"):
            if key in m:
                m[key] = _merged_barriers(m[key])
        if m.get("kind") in _PIPE_OPERATORS:
            m["barrier_before"] = not (out and out[-1].get("kind") in _PIPE_OPERATORS)
        out.append(m)
    return out


_PIPE_OPERATORS = ("tpush", "tpop", "tfree")
