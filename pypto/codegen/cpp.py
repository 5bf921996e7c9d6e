"""IR → the models the C++ templates render (kernels and orchestration).

This module decides *what* to emit (identifiers, tile placement, operator forms);
the text itself comes only from `templates/`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..ir.dtypes import DataType
from ..ir.errors import InternalError, LoweringError
from ..ir.layout import tile_layout
from ..ir.nodes import (
    Assign,
    Call,
    Const,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Program,
    Return,
    Var,
    While,
)
from ..ir.ops import get_op
from ..ir.ops.barrier import SYNCALL
from ..ir.ops.cross_core import BUFFER_OPS, FREE_OPS, INIT_OPS, POP_OPS, PUSH_OPS
from ..ir.ops.gather import mgather_policies, mscatter_coalesce
from ..ir.ops.prefetch import without_prefetch_hints
from ..ir.ops.random import SEEDS
from ..ir.ops.task_arrays import SPECIALISED_PARAM_STATUS
from ..ir.types import (
    INDEX,
    Direction,
    FunctionType,
    MemorySpace,
    ScalarType,
    TaskIdArrayType,
    TaskIdType,
    TensorType,
    TileType,
)
from ..ir.visitor import IRVisitor, statements
from ..passes.allocate_memory_addr import memref_slot_bytes
from ..passes.barriers import barrier_calls, is_gang_kernel, launch_limit, query_count
from ..passes.cross_core_pipe import uses_pipe
from .device import device_kernel
from .environment import render
from .expressions import (
    CMP_MODES,
    LAUNCH_COUNT_IDENTS,
    SWAPPED_CMP,
    declare_scalar,
    expr_model,
    kernel_statements,
    operator_form,
    runtime_extent_source,
    scalar_ctype,
)
from .identifiers import ident, symbol, value_idents
from .sources import GeneratedSources, KernelSource, ParamSpec

if TYPE_CHECKING:
    from ..platform import Platform

_ROUND = {"none": "None", "rint": "Rint", "round": "Round", "floor": "Floor", "ceil": "Ceil",
          "trunc": "Trunc", "odd": "Odd"}
_SPACE = {"Vec": "vec", "Mat": "mat", "Left": "left", "Right": "right", "Acc": "acc",
          "Bias": "bias", "LeftScale": "left_scale", "RightScale": "right_scale"}
_DIRECTION = {Direction.In: "PTO_IN", Direction.Out: "PTO_OUT", Direction.InOut: "PTO_INOUT"}


def param_spec(p) -> ParamSpec:
    t = p.var.type
    if isinstance(t, TensorType):
        return ParamSpec(p.var.name, "tensor", t.dtype.name, p.direction.value, tuple(t.shape))
    return ParamSpec(p.var.name, "scalar", t.dtype.name)


def param_models(fn: Function) -> list[dict]:
    """The templates' model of `fn`'s parameters: C++ name, index, tensor / int / float."""
    out = []
    for i, p in enumerate(fn.params):
        t = p.var.type
        kind = "tensor" if isinstance(t, TensorType) else (
            "float" if t.dtype.is_float else "int")
        out.append({"ident": ident(p.var.name), "index": i, "kind": kind})
    return out


# ----------------------------------------------------------------------------- kernels


def _tile_key(var: Var) -> tuple:
    t = var.type
    return (var.name, t.shape, t.dtype, t.memory)


def _partially_valid(fn: Function) -> set[tuple]:
    """C++ tiles some definition gives a partial valid region: every definition of those
    sets the region, because one C++ tile serves all definitions of its buffer."""
    return {_tile_key(t) for s in statements(fn.body) if isinstance(s, Assign)
            for t in s.targets
            if isinstance(t.type, TileType) and t.type.valid_shape is not None}


class _StatementModels(IRVisitor):
    """The loop and branch models both C++ generators emit; `body` makes the models of
    a statement list."""

    def body(self, stmts) -> list[dict]:
        raise NotImplementedError

    def visit_For(self, s: For) -> dict:
        return {"kind": "for", "var": ident(s.var.name), "start": expr_model(s.start),
                "stop": expr_model(s.stop), "step": expr_model(s.step),
                "body": self.body(s.body)}

    def visit_While(self, s: While) -> dict:
        return {"kind": "while", "cond": expr_model(s.cond), "body": self.body(s.body)}

    def visit_If(self, s: If) -> dict:
        return {"kind": "if", "cond": expr_model(s.cond), "then_body": self.body(s.then_body),
                "else_body": self.body(s.else_body)}


class _KernelBuilder(_StatementModels):
    """Builds the kernel template's model: one statement model per IR statement, its
    form (template macro) and instruction taken from the op registry."""

    def __init__(self, fn: Function, backend=None):
        self.fn = fn
        self.tiles: dict[tuple, dict] = {}
        self.scalars: dict[str, dict] = {}
        self.params = {p.var.name for p in fn.params}
        self.names = value_idents(fn)
        self.partial = _partially_valid(fn)
        self.slot_bytes = memref_slot_bytes(fn)
        # A kernel with a pl.system.syncall runs its launch's blocks at once (pto/gang.hpp);
        # its hard barriers need the backend's core counts.
        self.gang = is_gang_kernel(fn)
        self.backend = backend
        if self.gang and backend is None:
            raise InternalError(f"the gang kernel {fn.name!r} needs the backend to generate")

    def tile(self, var: Var) -> str:
        t = var.type
        if not isinstance(t, TileType) or t.memory is None or t.addr is None:
            raise InternalError(f"tile `{var.name}` reached codegen without memory placement")
        key = _tile_key(var)
        if key not in self.tiles:
            taken = {m["ident"] for m in self.tiles.values()}
            name = ident(var.name)
            n = 1
            while name in taken or name in self.names:
                name, n = f"{ident(var.name)}__{n}", n + 1
            self.tiles[key] = {
                "ident": name,
                "elem": t.dtype.cpp_type,
                "space": _SPACE[t.memory.name],
                "addr": t.addr,
                # A rank-1 tile is one row, as tload / tstore view a rank-1 tensor ([1, n]).
                "rows": t.shape[0] if len(t.shape) > 1 else 1,
                "cols": t.shape[1] if len(t.shape) > 1 else t.shape[0],
            }
        return self.tiles[key]["ident"]

    def body(self, stmts) -> list[dict]:
        return kernel_statements(stmts, self.visit_For, self.visit_While, self.assign,
                                 self.visit_If, self.effect)

    def effect(self, s: ExprStmt) -> dict:
        """An operator made for its effect: the cross-core pipe's (push, free, initialize)
        and the cross-block barriers."""
        op, form = operator_form(self, s.value, s)
        model = form(op, s.value, None, s)
        model["valid"] = None
        return model

    def assign(self, s: Assign) -> dict:
        model = self._assign(s)
        call = s.value
        if self.gang and isinstance(call, Call) and call.op in ("load", "store"):
            # The statement pto/gang.hpp names when a block's access breaks the protocol.
            tensor = call.args[0] if call.op == "load" else call.args[2]
            model["gm"] = {"line": s.span.line if s.span else 0, "name": tensor.name}
        dst = s.targets[0]
        if isinstance(dst.type, TileType) and dst.type.memref is not None and \
                dst.type.memref.slots > 1:
            m = dst.type.memref  # the slot is read where the tile is defined
            model["seat"] = {"dst": self.tile(dst), "space": _SPACE[dst.type.memory.name],
                             "addr": dst.type.addr, "slot": expr_model(m.slot),
                             "slots": m.slots, "slot_bytes": self.slot_bytes[m.name]}
        return model

    def _assign(self, s: Assign) -> dict:
        (dst,) = s.targets
        call = s.value
        if isinstance(dst.type, ScalarType):
            declare_scalar(self.scalars, self.params, dst)
            if isinstance(call, Call) and call.op in BUFFER_OPS:
                op, form = operator_form(self, call, s)
                return self._with_valid(form(op, call, dst, s), dst)
            if isinstance(call, Call) and call.op == "read":
                return self._with_valid(self._form_read(get_op("read"), call, dst, s), dst)
            return {"kind": "scalar_assign", "dst": ident(dst.name), "value": expr_model(call),
                    "valid": None}
        if isinstance(call, Var) and isinstance(call.type, TileType):
            # `b = a`: a copy of the tile (value semantics; b has its own buffer).
            model = {"kind": "unary", "fn": "tmov", "dst": self.tile(dst), "a": self.tile(call)}
            return self._with_valid(model, dst, call)
        op, form = operator_form(self, call, s)
        return self._with_valid(form(op, call, dst, s), dst, call)

    def _with_valid(self, model: dict, dst: Var, value=None) -> dict:
        """Sets the definition's valid region where its C++ tile can hold a partial one.
        An extent known only at run time is the load's index expression, or for a value
        computed from such a tile that tile's extent as the simulator holds it."""
        model["valid"] = None
        if isinstance(dst.type, TileType) and _tile_key(dst) in self.partial:
            model["valid"] = [v if isinstance(v, int) else self._runtime_extent(v, axis, value)
                              for axis, v in enumerate(dst.type.valid)]
        return model

    def _runtime_extent(self, extent, axis: int, value) -> dict:
        source = runtime_extent_source(extent, axis, value)
        if source is not None:
            field_ = "vrows" if axis == 0 else "vcols"
            return {"kind": "var", "name": f"{self.tile(source)}.{field_}"}
        return expr_model(extent)

    # -- one builder per operator form (templates/ops.cpp.j2 macro of the same name)

    def _form_load(self, op, call, dst, s):
        tensor, offsets = call.args
        b0, (r0, c0) = _batch_window(offsets, s)
        return {"kind": "load", "dst": self.tile(dst), "src": ident(tensor.name),
                "b0": b0, "r0": expr_model(r0), "c0": expr_model(c0),
                "pad": call.attr("pad_value").name.replace("null", "zero"),
                "elem": dst.type.dtype.cpp_type}

    def _form_store(self, op, call, dst, s):
        tile, offsets, tensor = call.args
        b0, (r0, c0) = _batch_window(offsets, s)
        # The backend's atomic dtypes were checked by DeriveCallDirections.
        fn = "tstore_atomic_add" if call.attr("atomic").name == "Add" else "tstore"
        return {"kind": "store", "fn": fn, "dst": ident(tensor.name), "src": self.tile(tile),
                "b0": b0, "r0": expr_model(r0), "c0": expr_model(c0),
                "elem": tile.type.dtype.cpp_type}

    def _form_mgather(self, op, call, dst, s):
        mem, idx = call.args
        coalesce, oob = mgather_policies(dict(call.attrs))
        return {"kind": "mgather", "fn": op.isa, "dst": self.tile(dst), "src": ident(mem.name),
                "idx": self.tile(idx), "coalesce": coalesce.capitalize(),
                "oob": oob.capitalize()}

    def _form_mscatter(self, op, call, dst, s):
        src, idx, tensor = call.args
        return {"kind": "mscatter", "fn": op.isa, "dst": ident(tensor.name),
                "src": self.tile(src), "idx": self.tile(idx),
                "coalesce": mscatter_coalesce(dict(call.attrs)).capitalize()}

    def _form_index_gather(self, op, call, dst, s):
        return {"kind": "index_gather", "fn": op.isa, "dst": self.tile(dst),
                "args": [self.tile(a) for a in call.args]}

    def _form_tile_scatter(self, op, call, dst, s):
        return self._form_index_gather(op, call, dst, s) | {"kind": "tile_scatter"}

    def _form_binary(self, op, call, dst, s):
        a, b = call.args
        if isinstance(a.type, TileType) and isinstance(b.type, TileType):
            return {"kind": "binary", "fn": op.isa, "dst": self.tile(dst), "a": self.tile(a),
                    "b": self.tile(b)}
        if isinstance(a.type, TileType):
            return {"kind": "binary_scalar", "fn": op.isa_scalar, "dst": self.tile(dst),
                    "a": self.tile(a), "scalar": expr_model(b)}
        if not op.isa_rscalar:
            raise InternalError(f"pl.{call.op} has no reversed scalar form")
        return {"kind": "binary_scalar", "fn": op.isa_rscalar, "dst": self.tile(dst),
                "a": self.tile(b), "scalar": expr_model(a)}

    def _form_partial(self, op, call, dst, s):
        """pl.part_add, ...: two tiles, whose valid regions the instruction reads."""
        a, b = call.args
        return {"kind": "partial", "fn": op.isa, "dst": self.tile(dst), "a": self.tile(a),
                "b": self.tile(b)}

    def _form_unary(self, op, call, dst, s):
        return {"kind": "unary", "fn": op.isa, "dst": self.tile(dst), "a": self.tile(call.args[0])}

    def _form_cast(self, op, call, dst, s):
        return {"kind": "cast", "dst": self.tile(dst), "src": self.tile(call.args[0]),
                "mode": _ROUND[call.attr("mode")]}

    def _form_compare(self, op, call, dst, s):
        a, b = call.args
        mode = CMP_MODES[call.attr("cmp_type")]
        model = {"kind": "compare", "dst": self.tile(dst), "mode": mode, "b": None,
                 "scalar": None}
        if isinstance(a.type, TileType) and isinstance(b.type, TileType):
            model.update(fn=op.isa, a=self.tile(a), b=self.tile(b))
        elif isinstance(a.type, TileType):
            model.update(fn=op.isa_scalar, a=self.tile(a), scalar=expr_model(b))
        else:  # s OP x is x (mirrored OP) s
            model.update(fn=op.isa_rscalar, a=self.tile(b), scalar=expr_model(a),
                         mode=SWAPPED_CMP[mode])
        return model

    def _form_select(self, op, call, dst, s):
        mask, a, b = call.args
        return {"kind": "select", "fn": op.isa, "dst": self.tile(dst), "mask": self.tile(mask),
                "a": self.tile(a), "b": self.tile(b)}

    def _form_select_scalar(self, op, call, dst, s):
        """pl.tile.sels: the mask, src and the scalar (its tmp operand is not used)."""
        operands = op.operands(call.args, dict(call.attrs))
        return {"kind": "select_scalar", "fn": op.isa, "dst": self.tile(dst),
                "mask": self.tile(operands["mask"]), "a": self.tile(operands["src"]),
                "scalar": expr_model(operands["scalar"])}

    def _form_ternary(self, op, call, dst, s):
        """Three operands (pl.addc, pl.subsc, pl.prelu with its tmp), tiles or a scalar."""
        operands = [a for a in op.operands(call.args, dict(call.attrs)).values() if a is not None]
        return {"kind": "ternary", "fn": op.isa, "dst": self.tile(dst),
                "args": [self.tile(a) if isinstance(a.type, TileType) else expr_model(a)
                         for a in operands]}

    def _form_sort(self, op, call, dst, s):
        """pl.sort32 (src, idx[, tmp]) and pl.mrgsort: (src0, block_len), or (tmp, src0,
        src1[, src2[, src3]]) as sort.hpp takes them (the `ternary` macro's form)."""
        operands = op.operands(call.args, dict(call.attrs))
        if op.name == "sort32":
            tiles = [operands[n] for n in ("src", "idx", "tmp")]
            args = [self.tile(t) for t in tiles if t is not None]
        elif call.attr("block_len") is not None:
            args = [self.tile(operands["src0"]), call.attr("block_len")]
        else:
            tiles = [operands[n] for n in ("tmp", "src0", "src1", "src2", "src3")]
            args = [self.tile(t) for t in tiles if t is not None]
        return {"kind": "sort", "fn": op.isa, "dst": self.tile(dst), "args": args}

    def _form_fill(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        value = operands.get("scalar", operands.get("value"))
        return {"kind": "fill", "fn": op.isa, "dst": self.tile(dst), "value": expr_model(value)}

    def _form_ci(self, op, call, dst, s):
        return {"kind": "ci", "fn": op.isa, "dst": self.tile(dst),
                "start": expr_model(call.args[0]), "descending": call.attr("descending")}

    def _form_tri(self, op, call, dst, s):
        return {"kind": "tri", "fn": op.isa, "dst": self.tile(dst),
                "upper": call.attr("upper"), "diagonal": expr_model(call.args[0])}

    def _form_random(self, op, call, dst, s):
        """TRANDOM's words, with the row stride the instruction steps the counter by (the
        tile's on-chip rows: pypto/sim/include/pto/random.hpp)."""
        operands = op.operands(call.args, dict(call.attrs))
        seeds = [expr_model(operands[name]) for name in SEEDS]
        return {"kind": "random", "fn": op.isa, "rounds": call.attr("rounds"),
                "dst": self.tile(dst), "seeds": seeds, "row_stride": tile_layout(dst.type).cols}

    def _form_fillpad(self, op, call, dst, s):
        return {"kind": "fillpad", "fn": op.isa, "dst": self.tile(dst),
                "src": self.tile(call.args[0]), "pad": call.attr("pad_value").name,
                "elem": dst.type.dtype.cpp_type}

    def _form_extract(self, op, call, dst, s):
        src, offsets = call.args
        if not isinstance(src.type, TileType):
            raise InternalError(f"a tensor slice reached codegen: {s!r}")
        r0, c0 = _window_origin(offsets, s)
        return {"kind": "extract", "fn": op.isa, "dst": self.tile(dst), "src": self.tile(src),
                "r0": expr_model(r0), "c0": expr_model(c0)}

    def _form_reduce(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        tmp = operands.get("tmp_tile")
        return {"kind": "reduce", "fn": op.isa, "dst": self.tile(dst),
                "src": self.tile(operands["x"]), "tmp": self.tile(tmp) if tmp is not None else None}

    def _form_matmul(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        acc = operands.get("acc")
        return {"kind": "matmul", "fn": op.isa, "dst": self.tile(dst),
                "acc": self.tile(acc) if acc is not None else None,
                "a": self.tile(operands["lhs"]), "b": self.tile(operands["rhs"]),
                "bias": self.tile(bias) if (bias := operands.get("bias")) is not None else None,
                "a_trans": call.attr("a_trans"), "b_trans": call.attr("b_trans")}

    def _form_matmul_mx(self, op, call, dst, s):
        o = op.operands(call.args, dict(call.attrs))
        return {"kind": "matmul_mx", "fn": op.isa, "dst": self.tile(dst),
                "acc": self.tile(o["acc"]) if "acc" in o else None,
                "a": self.tile(o["lhs"]), "sa": self.tile(o["lhs_scale"]),
                "b": self.tile(o["rhs"]), "sb": self.tile(o["rhs_scale"]),
                "bias": self.tile(o["bias"]) if "bias" in o else None}

    def _form_read(self, op, call, dst, s):
        tile, indices = call.args
        if not isinstance(tile.type, TileType):
            raise InternalError(f"an element read of a tensor reached codegen: {s!r}")
        if not isinstance(dst.type, ScalarType):
            raise InternalError(f"an element read into a non-scalar: {s!r}")
        # A rank-1 tile is one row (see `tile`).
        r, c = indices.items if len(indices.items) == 2 else (Const(0, INDEX),) + indices.items
        return {"kind": "read", "fn": op.isa, "dst": ident(dst.name), "tile": self.tile(tile),
                "r": expr_model(r), "c": expr_model(c)}

    def _form_insert(self, op, call, dst, s):
        target, src, offsets = call.args
        r0, c0 = _window_origin(offsets, s)
        model = {"kind": "insert", "fn": op.isa, "dst": self.tile(dst), "src": self.tile(src),
                 "r0": expr_model(r0), "c0": expr_model(c0), "target": None}
        if self.tile(target) != model["dst"]:
            model["target"] = self.tile(target)  # the result has its own buffer: copy first
        return model

    def _pipe(self, call, s) -> dict:
        direction = {**PUSH_OPS, **POP_OPS, **FREE_OPS, **dict.fromkeys(INIT_OPS, "")}[call.op]
        return {"id": call.attr("id") or 0, "c2v": direction == "C2V",
                "op": call.op.split(".")[-1], "line": s.span.line if s.span else 0}

    def _form_tpush(self, op, call, dst, s):
        return {"kind": "tpush", "tile": self.tile(call.args[0]), **self._pipe(call, s)}

    def _form_tpop(self, op, call, dst, s):
        return {"kind": "tpop", "dst": self.tile(dst), **self._pipe(call, s)}

    def _form_tfree(self, op, call, dst, s):
        return {"kind": "tfree", **self._pipe(call, s)}

    def _form_syncall(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        model = {"kind": "syncall", "mode": call.attr("mode"),
                 "line": s.span.line if s.span else 0}
        if model["mode"] == "hard":
            blocks, cores = launch_limit(self.fn, self.backend)
            model.update(required=blocks, cores=cores)
        else:
            model.update(ws=ident(operands["gm_workspace"].name),
                         used=expr_model(operands["used_cores"]))
        return model

    def _form_fence(self, op, call, dst, s):
        return {"kind": "fence", "gang": self.gang}

    def _form_cacheinvalid(self, op, call, dst, s):
        operands = op.operands(call.args, dict(call.attrs))
        tensor, offsets = operands["tensor"], operands["offsets"]
        model = {"kind": "cacheinvalid", "gang": self.gang, "tensor": None}
        if tensor is not None:
            model.update(tensor=ident(tensor.name), itemsize=tensor.type.dtype.itemsize,
                         offsets=[expr_model(o) for o in offsets.items])
        return model

    def _form_pipe_buffer(self, op, call, dst, s):
        # A ring buffer's base: the bottom of the consumer's buffer, where
        # AllocateMemoryAddr leaves the ring's bytes (an explicit base is a name only).
        base = max(call.attr("base", 0), 0) if call.op == "system.reserve_buffer" else 0
        return {"kind": "pipe_buffer", "dst": ident(dst.name), "base": base}

    def _form_pipe_init(self, op, call, dst, s):
        return {"kind": "pipe_init", **self._pipe(call, s)}

    def _form_create(self, op, call, dst, s):
        return {"kind": "create", "dst": self.tile(dst)}


def _window_origin(offsets, stmt):
    """(row, column) of a window's origin; a rank-1 tensor is one row, [1, n]."""
    if len(offsets.items) == 1:
        return (Const(0, INDEX),) + tuple(offsets.items)
    if len(offsets.items) != 2:
        raise LoweringError("tile loads and stores need rank-1 or rank-2 tensors", stmt.span)
    return offsets.items


def _batch_window(offsets, stmt):
    """(the batch's expression model or None, (row, column)) of a load or store window:
    offsets [b, r, c] address a [rows, cols] tile of batch b of a [B, rows, cols] tensor
    (a rank-3 tile is one such tile per batch by then: passes/flatten_batch.py)."""
    if len(offsets.items) == 3:
        b0, *rest = offsets.items
        return expr_model(b0), tuple(rest)
    return None, _window_origin(offsets, stmt)


def kernel_model(fn: Function, backend=None) -> tuple[dict, dict[str, int]]:
    """The simulator kernel template's model of `fn` (templates/kernel_function.cpp.j2),
    and the on-chip bytes its tiles reach per space.  `backend`: the target's facts, which
    a kernel with a pl.system.syncall needs (its cores, its cache line)."""
    fn = without_prefetch_hints(fn)  # no L2 here: the cache hints change nothing
    builder = _KernelBuilder(fn, backend)
    body = builder.body(fn.body)
    on_chip = _on_chip_high_water(builder)
    model = {
        "name": fn.name,
        "symbol": symbol(fn.name),
        "params": param_models(fn),
        "tiles": sorted(builder.tiles.values(), key=lambda t: t["ident"]),
        "scalars": sorted(builder.scalars.values(), key=lambda v: v["ident"]),
        "body": body,
        "gang": None,
    }
    if builder.gang:
        # Each further block's core (pto/gang.hpp), in PtoCore order: buffers of the
        # backend's capacities, the bytes the kernel's tiles reach poisoned.
        blocks, cores = launch_limit(fn, backend)
        model["gang"] = {"line_bytes": backend.gm_cache_line,
                         "capacity": [backend.capacities[space] for space in _SPACE],
                         "poison": [on_chip[space] for space in _SPACE],
                         "max_blocks": blocks, "cores": cores}
    return model, on_chip


def kernel_source(fn: Function, backend=None) -> KernelSource:
    model, on_chip = kernel_model(fn, backend)
    return KernelSource(model["symbol"], render("kernel.cpp.j2", k=model), "vector",
                        tuple(param_spec(p) for p in fn.params), on_chip)


def _kernel(fn: Function, platform: Platform | None) -> KernelSource:
    if platform is None or not platform.device_code:
        return kernel_source(fn, platform.backend if platform is not None else None)
    _refuse_barriers(fn, platform)
    _refuse_transfers(fn, platform)
    _refuse_subblock_idx(fn, platform)
    kernel = device_kernel(fn, platform.backend.capacities["Vec"], platform.backend.name)
    launch = ""
    if platform.kind == "cpu_model":
        refuse_bias_beside_vec(fn, platform, kernel.on_chip)
        model = {"name": symbol(fn.name, device_code=True), "params": param_models(fn),
                 "arch": platform.cpu_model_arch,
                 "block_num": "get_block_num()" in kernel.cpp,
                 "poison": [{"base": POISON_BASE[space], "bytes": n}
                            for space, n in sorted(kernel.on_chip.items()) if n]}
        launch = render("cpu_model_launch.cpp.j2", l=model)
    return KernelSource(symbol(fn.name, device_code=True), kernel.cpp, kernel.core_type,
                        tuple(param_spec(p) for p in fn.params), kernel.on_chip, launch)


class _LaneIndexReads(IRVisitor):
    """Whether the expressions visited read pl.tensor.get_subblock_idx()."""

    found = False

    def visit_Call(self, e: Call) -> None:
        self.found = self.found or e.op == "get_subblock_idx"
        super().visit_Call(e)


def _refuse_subblock_idx(fn: Function, platform: Platform) -> None:
    """pl.tensor.get_subblock_idx() reads the vector lane of a Group task; in any other
    kernel the simulators answer 0, where the NPU answers the sub-block of whichever
    vector core runs the task, which nothing fixes."""
    for s in statements(fn.body):
        finds = _LaneIndexReads()
        for name in ("value", "cond", "start", "stop", "step"):
            if getattr(s, name, None) is not None:
                finds.visit_expr(getattr(s, name))
        if finds.found:
            raise LoweringError(
                    f"pl.tensor.get_subblock_idx() in `{fn.name}`, which is no function of a "
                    f"pl.FunctionType.Group, has no device code on {platform.name}: the "
                    "simulators answer 0 there, where the NPU answers the sub-block of "
                    "whichever vector core runs the task", s.span,
                    hint="read the lane in the AIV function of a group (or a pl.split_aiv "
                         "region), or run it on a2a3sim or a5sim")


def _refuse_barriers(fn: Function, platform: Platform) -> None:
    """The cross-block barriers have no device code here: pto-isa's CPU model makes SYNCALL
    and the cache maintenance it needs (dcci, dsb) empty (common/cpu_stub.hpp), so the
    blocks would run past a barrier that orders nothing."""
    for call, span in barrier_calls(fn):
        what = "SYNCALL" if call.op == SYNCALL else "the cache maintenance (dcci, dsb)"
        raise LoweringError(
            f"pl.{call.op} has no device code on {platform.name}: pto-isa's CPU model "
            f"implements {what} as an empty function (include/pto/common/cpu_stub.hpp), so "
            "the blocks would not wait for each other", span,
            hint="run it on a simulator platform (a2a3sim, a5sim), where the barrier and its "
                 "cache protocol are modelled")


def _refuse_transfers(fn: Function, platform: Platform) -> None:
    """A Mat tile moved to Vec (TransferCubeToVector: the cube side stores the Mat tile,
    which nothing else does) has no device code: pto-isa stores no Mat tile on A5, and the
    device sources run both sides as one core with no cross-core pipe."""
    for s in statements(fn.body):
        if (isinstance(s, Assign) and isinstance(s.value, Call) and s.value.op == "store"
                and s.value.args[0].type.memory is MemorySpace.Mat):
            raise LoweringError(
                f"pl.move of the Mat tile `{s.value.args[0].name}` to Vec is a transfer from "
                f"the cube unit to the vector unit, which has no device code on "
                f"{platform.name} yet", s.span,
                hint="run it on a simulator platform (a2a3sim, a5sim)")


def refuse_bias_beside_vec(fn: Function, platform: Platform, on_chip: dict[str, int]) -> None:
    """pto-isa's CPU model has no bias table: it resolves a Bias tile's address into UB, so
    a kernel with Vec tiles too would have both at the same bytes there."""
    if not (on_chip["Vec"] and on_chip["Bias"]):
        return
    span = next(s.span for s in statements(fn.body) if isinstance(s, Assign)
                and any(isinstance(t.type, TileType) and t.type.memory is MemorySpace.Bias
                        for t in s.targets))
    raise LoweringError(
        f"a kernel with both Vec and Bias tiles has no device code on {platform.name}: "
        f"pto-isa's CPU model places a Bias tile in UB, over the kernel's Vec tiles", span,
        hint="keep the bias forms in a kernel of cube work only (pl.at(level=pl.Level.AIC)), "
             "or run it on a simulator platform (a2a3sim, a5sim)")


# pto-isa's NPUMemoryModel names each on-chip space by its buffer.
# Its CPU model has no bias table: a Bias tile resolves into UB (NPUMemoryModel::GetPointer).
POISON_BASE = {"Vec": "UB", "Mat": "L1", "Left": "L0A", "Right": "L0B", "Acc": "L0C",
                "Bias": "UB"}


def _on_chip_high_water(builder: _KernelBuilder) -> dict[str, int]:
    """Bytes of each on-chip space the kernel's tiles can touch: the end of the highest
    C++ tile (`rows * cols` elements at its address) per space, 0 where none lives."""
    dtype = {dt.cpp_type: dt for dt in DataType}
    marks = dict.fromkeys(_SPACE, 0)
    space_name = {v: k for k, v in _SPACE.items()}
    for t in builder.tiles.values():
        space = space_name[t["space"]]
        end = t["addr"] + dtype[t["elem"]].nbytes(t["rows"] * t["cols"])
        marks[space] = max(marks[space], end)
    return marks


# ----------------------------------------------------------------------------- orchestration


class _OrchestrationBuilder(_StatementModels):
    def __init__(self, program: Program, fn: Function, kernel_index: dict[str, int]):
        self.program = program
        self.fn = fn
        self.kernel_index = kernel_index
        self.locals: dict[str, dict] = {}
        self.params = {p.var.name for p in fn.params}
        # `pl.dump_tag(t)` sets a run-time flag per tagged name (slot of `pypto_dump[]`),
        # OR-ed into every later dispatch of `t`: "later" holds across loop iterations.
        self.dump_slots: dict[str, int] = {}
        # Views the orchestration takes (`v = pl.slice(t, ...)`) → the tensor they view.
        self.view_base: dict[str, str] = {}
        # Tensors made by `pl.create_tensor(..., manual_dep=True)`, and the names tasks
        # rebind them to: every access to them is untracked (PTO_NO_DEP), for their life.
        self.untracked: set[str] = set()
        for name in _dump_tagged(fn.body):
            self.dump_slots.setdefault(name, len(self.dump_slots))
        _check_orchestration_reads(fn)

    def local(self, var: Var) -> str:
        if var.name not in self.params and var.name not in self.locals:
            if isinstance(var.type, TensorType):
                ctype, init = "PtoTensor", "{}"
            elif isinstance(var.type, (TaskIdType, TaskIdArrayType)):
                ctype, init = "PtoTaskIds", "{}"  # no tasks: a dep on it waits for nothing
            else:
                ctype, init = scalar_ctype(var.type.dtype), "0"
            length = var.type.length if isinstance(var.type, TaskIdArrayType) else None
            self.locals[var.name] = {"ident": ident(var.name), "ctype": ctype, "init": init,
                                     "length": length}
        return ident(var.name)

    def body(self, stmts) -> list[dict]:
        return [m for m in (self.visit_stmt(s) for s in stmts) if m is not None]

    def auto_scope(self, body: list[dict]) -> list[dict]:
        """Upstream's MaterializeRuntimeScopes: unless the function says
        `auto_scope=False`, the function body, each loop body and each branch is a
        runtime scope (its tasks take the ring of its depth, pypto.runtime.rings)."""
        if not body or self.fn.attr("auto_scope", True) is False:
            return body
        return [{"kind": "scope", "body": body}]

    def visit_For(self, s: For) -> dict:
        model = super().visit_For(s)
        model["body"] = self.auto_scope(model["body"])
        return model

    def visit_While(self, s: While) -> dict:
        model = super().visit_While(s)
        model["body"] = self.auto_scope(model["body"])
        return model

    def visit_If(self, s: If) -> dict:
        model = super().visit_If(s)
        model["then_body"] = self.auto_scope(model["then_body"])
        model["else_body"] = self.auto_scope(model["else_body"])
        return model

    def visit_Assign(self, s: Assign) -> dict:
        dst, value = s.targets[0], s.value
        if isinstance(value, FuncCall):
            return self.submit(value, s.targets)
        if isinstance(value, Call) and value.op == "create_tensor":
            t = dst.type
            if value.attr("manual_dep"):
                self.untracked.add(dst.name)
            return {"kind": "alloc", "dst": self.local(dst), "name": dst.name,
                    "dtype_code": t.dtype.code, "shape": list(t.shape)}
        if isinstance(value, Call) and value.op == "slice" and isinstance(dst.type, TensorType):
            return self.view(dst, value)
        if isinstance(dst.type, TaskIdArrayType):
            return self.task_array(dst, value)
        if isinstance(dst.type, TaskIdType) and isinstance(value, Var):
            # `d = pl.system.task_dummy(deps=[tid])`
            return {"kind": "scalar_assign", "dst": self.local(dst), "value": expr_model(value)}
        if isinstance(value, Call) and value.op == "array.get_element":
            array, index = value.args
            return {"kind": "task_array_entry", "dst": self.local(dst),
                    "src": ident(array.name), "length": array.type.length,
                    "index": expr_model(index)}
        if isinstance(dst.type, ScalarType):
            return {"kind": "scalar_assign", "dst": self.local(dst), "value": expr_model(value)}
        return self._refuse(s)

    def visit_ExprStmt(self, s: ExprStmt) -> dict:
        if isinstance(s.value, FuncCall):
            return self.submit(s.value, ())
        if isinstance(s.value, Call) and s.value.op == "expect_value":
            x = s.value.args[0]
            # A specialised scalar parameter returns SPECIALISED_PARAM_STATUS + its index;
            # an element read from an input tensor, 5 (runtime/errors.py says which).
            names = [p.var.name for p in self.fn.params]
            status = (SPECIALISED_PARAM_STATUS + names.index(x.name)
                      if getattr(x, "name", None) in names else 5)
            return {"kind": "expect", "x": expr_model(x), "status": status,
                    "value": expr_model(Const(s.value.attr("value"), x.type))}
        if _is_dump_tag(s):
            return {"kind": "dump_tag", "slot": self.dump_slots[s.value.args[0].name]}
        return self._refuse(s)

    def visit_Return(self, s: Return) -> None:
        if any(isinstance(v, FuncCall) for v in s.values):  # the parser makes it a statement
            raise InternalError("a kernel call inside a return reached codegen")
        return None

    def visit_AtScope(self, s) -> dict:
        return self._refuse(s)

    def visit_RuntimeScope(self, s) -> dict:
        """`with pl.scope():`: scope_begin, the body, scope_end (the runtime's rings)."""
        return {"kind": "scope", "body": [self.visit_stmt(x) for x in s.body]}

    def _refuse(self, s) -> dict:
        raise LoweringError("this statement cannot run in an orchestration function",
                            getattr(s, "span", None))

    def view(self, dst: Var, call: Call) -> dict:
        """`v = pl.slice(t, shape, offsets)`: a PtoTensor pointing into `t` with the window's
        shape and `t`'s strides; no data moves, and the runtime sees only the window's bytes."""
        src, offsets = call.args
        if dst.type.dtype.packed:  # the parser refuses them; NarrowTaskArguments makes none
            raise InternalError(f"a view of the 4-bit tensor `{src.name}` reached codegen")
        self.view_base[dst.name] = self.view_base.get(src.name, src.name)
        # valid_shape: the task sees only that part (the view is cut back to it, and to
        # the tensor's end, at run time).
        valid = call.attr("valid_shape") or dst.type.shape
        extent = [e if isinstance(e, int) else  # a runtime extent, at most the window's
                  {"kind": "select", "op": "<", "lhs": expr_model(e),
                   "rhs": {"kind": "int", "value": d}}
                  for e, d in zip(valid, dst.type.shape, strict=True)]
        return {"kind": "view", "dst": self.local(dst), "src": ident(src.name),
                "origin": [expr_model(o) for o in offsets.items], "extent": extent,
                "itemsize": dst.type.dtype.itemsize}

    def task_array(self, dst: Var, value) -> dict:
        """An array of task ids (pypto/ir/ops/task_arrays.py): created with no tasks, an entry
        set (the orchestration returns 4 for an index outside it), or copied."""
        model = {"kind": "task_array", "dst": self.local(dst), "length": dst.type.length,
                 "src": None, "index": None, "tid": None}
        if isinstance(value, Var):
            model["src"] = ident(value.name)
        elif value.op == "array.update_element":
            array, index, tid = value.args
            model.update(src=ident(array.name) if array.name != dst.name else None,
                         index=expr_model(index), tid=ident(tid.name))
        elif value.op != "array.create":
            raise LoweringError(f"pl.{value.op} does not make an array of task ids", value.span)
        return model

    def deps(self, deps) -> list[str]:
        """The C expressions of a dispatch's deps: a task id, or every entry of an array."""
        out = []
        for d in deps:
            if isinstance(d.type, TaskIdArrayType):
                out.extend(f"{ident(d.name)}[{k}]" for k in range(d.type.length))
            else:
                out.append(ident(d.name))
        return out

    def submit(self, call: FuncCall, targets) -> dict:
        """One dispatch: arguments with their access flags, deps, block count, task id."""
        callee = self.program.function(call.callee)
        accumulated = accumulated_params(callee)
        args = []
        for a, p in zip(call.args, callee.params, strict=True):
            if isinstance(p.var.type, TensorType):
                if not isinstance(a, Var):
                    raise InternalError(f"tensor argument is not a variable: {a!r}")
                direction = "PTO_ACCUM" if p.var.name in accumulated else _DIRECTION[p.direction]
                args.append({"kind": "tensor", "ident": ident(a.name),
                             "direction": direction + self._flags(call, a)})
            else:
                kind = "float" if p.var.type.dtype.is_float else "int"
                args.append({"kind": kind, "value": expr_model(a)})
        targets = tuple(targets)
        tid = None
        if call.task_id:
            tid = self.local(targets[-1]) if targets else None
            targets = targets[:-1]
        # A kernel with a pl.system.syncall runs its blocks at once: the runtime calls it
        # once per launch (pto/gang.hpp).
        flags = [f for f, on in (("PTO_TASK_EARLY_RESOLVE", call.early_resolve),
                                 ("PTO_TASK_GANG", is_gang_kernel(callee))) if on]
        return {"kind": "submit", "kernel_index": self.kernel_index[call.callee], "args": args,
                "deps": self.deps(call.deps),
                "blocks": expr_model(call.blocks) if call.blocks is not None else None,
                "tid": tid, "results": self._results(call, callee, targets),
                "flags": " | ".join(flags) or "0"}

    def _flags(self, call: FuncCall, arg: Var) -> str:
        """The flags OR-ed into a tensor argument's direction: no dependence tracking,
        a dump of this task, or the dump flag of a tagged tensor it views."""
        flags = ""
        base = self.view_base.get(arg.name, arg.name)
        if (call.manual or arg.name in {v.name for v in call.no_dep_args}
                or base in self.untracked):
            flags += " | PTO_NO_DEP"
        if arg.name in {v.name for v in call.dumps}:
            flags += " | PTO_DUMP"
        elif base in self.dump_slots:
            flags += f" | pypto_dump[{self.dump_slots[base]}]"
        return flags

    def _results(self, call: FuncCall, callee: Function, targets) -> list[dict]:
        """Copies of the tensors a task returns into the names its call binds (none where
        the name is the argument's own)."""
        returns = callee.returned_params()
        if -1 in returns:
            raise InternalError(f"kernel {callee.name!r} returns a value that is no parameter")
        results = []
        # A call may bind fewer names than the kernel returns (none as a statement).
        for target, param_index in zip(targets, returns, strict=False):
            src = call.args[param_index]
            dst = self.local(target)
            if self.view_base.get(src.name, src.name) in self.untracked:
                self.untracked.add(target.name)
            if src.name != target.name:
                results.append({"dst": dst, "src": ident(src.name)})
        return results


class _TensorReads(IRVisitor):
    def __init__(self):
        self.reads: list[Call] = []

    def visit_Call(self, expr: Call) -> None:
        if expr.op == "read" and isinstance(expr.args[0].type, TensorType):
            self.reads.append(expr)
        super().visit_Call(expr)


def _check_orchestration_reads(fn: Function) -> None:
    """An orchestration reads elements only of its input tensors: ones no task writes, so
    every read sees the caller's values whatever the tasks do meanwhile."""
    finder = _TensorReads()
    finder.visit_function(fn)
    for call in finder.reads:
        tensor = call.args[0]
        param = fn.param(tensor.name)
        if param is None or param.direction is not Direction.In:
            raise LoweringError(
                f"the orchestration reads an element of `{tensor.name}`, which "
                + ("is not a parameter" if param is None else "a task writes")
                + ": the read could race with the tasks",
                call.span,
                hint="read elements of input tensors only, or read inside a pl.at block")
        if tensor.type.dtype.cpp_type.startswith("pto::"):
            raise LoweringError(
                f"the orchestration reads an element of `{tensor.name}`, a "
                f"{tensor.type.dtype.name} tensor; it reads integer, BOOL and FP32 elements",
                call.span, hint="read it inside a pl.at block")


def _is_dump_tag(stmt: ExprStmt) -> bool:
    return isinstance(stmt.value, Call) and stmt.value.op == "dump_tag"


def _dump_tagged(stmts) -> list[str]:
    """Names `pl.dump_tag` marks anywhere in an orchestration body, in first-tag order."""
    return [s.value.args[0].name for s in statements(stmts)
            if isinstance(s, ExprStmt) and _is_dump_tag(s)]


def accumulated_params(fn: Function) -> set[str]:
    """Tensor parameters the kernel writes only through atomic-add stores and never reads
    otherwise: the runtime treats those accesses as accumulations (PTO_ACCUM), which
    commute with each other instead of being ordered like plain writes."""
    found = _Accumulations()
    found.visit_function(fn)
    return found.atomic - found.other


class _Accumulations(IRVisitor):
    """The names a kernel writes through atomic-add stores (`atomic`), and those it uses
    any other way (`other`): read, or written plainly."""

    def __init__(self):
        self.atomic: set[str] = set()
        self.other: set[str] = set()

    def visit_Var(self, expr: Var) -> None:
        self.other.add(expr.name)

    def visit_Call(self, expr: Call) -> None:
        if expr.op not in ("store", "assemble"):
            for a in expr.args:
                self.visit_expr(a)
            return
        dst_index = 2 if expr.op == "store" else 0
        dst = expr.args[dst_index]
        if isinstance(dst, Var):
            is_add = expr.attr("atomic") is not None and expr.attr("atomic").name == "Add"
            (self.atomic if is_add else self.other).add(dst.name)
        for i, a in enumerate(expr.args):
            if i != dst_index:
                self.visit_expr(a)

    def visit_Return(self, stmt: Return) -> None:
        """Returning the written tensor hands the buffer back; it reads nothing."""


def generate(program: Program, frontend: Program | None = None,
             platform: Platform | None = None) -> GeneratedSources:
    """C++ sources for a fully lowered program (passes already ran).

    `frontend`, the program before the passes, supplies the directions the user declared
    for the entry's parameters (the passes only ever widen them); the manifest records
    them so the runtime can tell an output the program reads from an input.  Kernels call
    the simulator's ISA model, or on device and CPU-model `platform`s are PTO-ISA device
    code (CPU-model kernels with the launcher that runs them on pto-isa's CPU model).
    """
    entry = program.entry_function
    if entry.func_type is not FunctionType.Orchestration:
        raise InternalError("the entry of a lowered program must be an orchestration function")
    # The kernels: every InCore function but those that run only in the Group calling
    # them (those of the cross-core pipe, and a lane region's kernel's other side), and
    # each Group (codegen/group.py).
    from .group import group_source  # the Group kernels build on this module's kernels

    in_groups = _group_only(program)
    incore = [f for f in program.functions
              if (f.func_type is FunctionType.InCore and not uses_pipe(f)
                  and f.name not in in_groups)
              or f.func_type is FunctionType.Group]
    kernels = tuple(group_source(program, f, platform) if f.func_type is FunctionType.Group
                    else _kernel(f, platform) for f in incore)
    index = {f.name: i for i, f in enumerate(incore)}
    builder = _OrchestrationBuilder(program, entry, index)
    body = builder.auto_scope(builder.body(entry.body))
    model = {
        "name": entry.name,
        "params": param_models(entry),
        "locals": sorted(builder.locals.values(), key=lambda v: v["ident"]),
        "dump_slots": len(builder.dump_slots),
        "launch_counts": _launch_counts(entry, platform),
        "body": body,
    }
    params = tuple(param_spec(p) for p in entry.params)
    if frontend is not None:
        declared = {p.var.name: p.direction.value for p in frontend.entry_function.params}
        params = tuple(replace(p, declared=declared.get(p.name, p.direction)) for p in params)
    return GeneratedSources(
        entry=entry.name,
        params=params,
        outputs=_entry_outputs(entry),
        kernels=kernels,
        orchestration_cpp=render("orchestration.cpp.j2", o=model),
    )


def _group_only(program: Program) -> set[str]:
    """The functions a pl.FunctionType.Group calls and no other function does."""
    by_group: set[str] = set()
    elsewhere: set[str] = set()
    for fn in program.functions:
        for s in statements(list(fn.body)):
            call = getattr(s, "value", None)
            if isinstance(call, FuncCall):
                (by_group if fn.func_type is FunctionType.Group else elsewhere).add(call.callee)
    return by_group - elsewhere


class _LaunchQueries(IRVisitor):
    """The pl.system.available_*_count() calls of the expressions visited."""

    def __init__(self):
        self.found: set[str] = set()

    def visit_Call(self, e: Call) -> None:
        if e.op in LAUNCH_COUNT_IDENTS:
            self.found.add(e.op)
        super().visit_Call(e)


def _launch_counts(fn: Function, platform: Platform | None) -> list[dict]:
    """The constants of the platform's core counts the orchestration reads: what
    pl.system.available_aiv_count() / available_cluster_count() give (the backend's data)."""
    finder = _LaunchQueries()
    finder.visit_function(fn)
    if finder.found and platform is None:
        raise InternalError("pl.system.available_*_count() needs the platform to generate")
    return [{"ident": LAUNCH_COUNT_IDENTS[op], "value": query_count(op, platform.backend),
             "op": op} for op in sorted(finder.found)]


def _entry_outputs(entry: Function) -> tuple[int, ...]:
    """Indices of the parameters the entry hands back: its returned names, else its outputs."""
    names = [p.var.name for p in entry.params]
    for s in entry.body:
        if isinstance(s, Return) and s.values:
            picked = [names.index(v.name) for v in s.values
                      if isinstance(v, Var) and v.name in names]
            if picked:
                return tuple(picked)
    return tuple(i for i, p in enumerate(entry.params) if p.direction is not Direction.In)
