"""Upstream's explicit cross-core pipe (pto-isa TPUSH / TPOP / TFREE), `pl.system.*`.

A core group is one cube core (AIC) and two vector sub-blocks (AIV lanes 0 and 1).  A
`pl.FunctionType.Group` function calls one AIC function and one AIV function; they run
concurrently and hand tiles to each other through FIFO rings of `slot_num` slots, one ring
per direction (C2V: cube to vector, V2C: vector to cube):

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, ...):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
        acc = pl.matmul(...)
        pl.tpush_to_aiv(acc, split=0)          # blocks while the ring is full

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, ...):
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=8192, slot_num=2)
        t = pl.tpop_from_aic(shape=[16, 128], dtype=pl.FP32, split=0)  # blocks while empty
        ...
        pl.tfree_to_aic(t)                     # the slot goes back to the producer

`split` is the sub-block split of the tile (0 none, 1 up-down: lane i holds rows
i*H/2 .. (i+1)*H/2, 2 left-right: columns): a C2V push with a split hands each lane its
half; a V2C push with a split is each lane's half of the tile the cube pops whole.  With no
split a C2V tile goes to both lanes and a V2C push is lane 0's (pto-isa's CPU model: lane 1
of a no-split pipe does not take part).

`dir_mask` is 1 (C2V), 2 (V2C) or 3 (both).  `reserve_buffer` / `import_peer_buffer` name
the consumer's ring buffer (its base address); the simulators keep the rings beside the
cores' buffers, so the base is a name only there.  The checks of a program's pipes (pairing,
the core types, ring capacity) are in passes/cross_core_pipe.py.
"""

from __future__ import annotations

from ..dtypes import DataType
from ..errors import TypeCheckError
from ..types import INDEX, ScalarType, TileType, TupleType, describe
from .registry import ANY, OpDef, OpParam, register

PUSH_OPS = {"system.tpush_to_aiv": "C2V", "system.tpush_to_aic": "V2C"}
POP_OPS = {"system.tpop_from_aic": "C2V", "system.tpop_from_aiv": "V2C"}
FREE_OPS = {"system.tfree_to_aic": "C2V", "system.tfree_to_aiv": "V2C"}
INIT_OPS = ("system.aic_initialize_pipe", "system.aiv_initialize_pipe")
BUFFER_OPS = ("system.reserve_buffer", "system.import_peer_buffer")
PIPE_OPS = (*PUSH_OPS, *POP_OPS, *FREE_OPS, *INIT_OPS, *BUFFER_OPS)
# The core whose function may make each operator ("AIC" / "AIV").
CORE_OF = {"system.tpush_to_aiv": "AIC", "system.tpop_from_aiv": "AIC",
           "system.tfree_to_aiv": "AIC", "system.aic_initialize_pipe": "AIC",
           "system.tpush_to_aic": "AIV", "system.tpop_from_aic": "AIV",
           "system.tfree_to_aic": "AIV", "system.aiv_initialize_pipe": "AIV"}
SPLITS = (0, 1, 2)  # none, up-down, left-right (pto-isa's TileSplitAxis)
# A ring's split on the simulators when the no-split pipe is a lane region's (the functions'
# "split_aiv" attribute, language/split_aiv.py): both lanes take part, as in the hardware's
# no-split handshake: each pops the whole tile, and of the two tiles pushed the cube gets
# lane 0's (upstream: an unspecified one; both should hold the same).
BOTH_LANES = 3
DIR_MASKS = {1: ("C2V",), 2: ("V2C",), 3: ("C2V", "V2C")}
DEFAULT_SLOTS = 2  # upstream's default ring depth per direction
STATEMENT = TupleType(())


def _keyword(op: str, attrs: dict, name: str, span) -> None:
    if attrs.get(name) is None:
        raise TypeCheckError(f"pl.{op} needs {name}=", span)


def _split(op: str, attrs: dict, span) -> None:
    if attrs.get("split") not in SPLITS:
        raise TypeCheckError(f"pl.{op}(split=) is 0 (no split), 1 (up-down) or 2 "
                             f"(left-right), got {attrs.get('split')!r}", span)


def _pipe_id(op: str, attrs: dict, span) -> None:
    pid = attrs.get("id")
    if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool) or pid < 0):
        raise TypeCheckError(f"pl.{op}(id=) is a pipe number >= 0, got {pid!r}", span)


def _infer_push(op: str):
    def infer(args, attrs, span):
        (tile,) = args
        if not isinstance(tile.type, TileType):
            raise TypeCheckError(f"pl.{op} pushes a tile, not {describe(tile.type)}", span)
        _keyword(op, attrs, "split", span)
        _split(op, attrs, span)
        _pipe_id(op, attrs, span)
        return STATEMENT
    return infer


def _infer_pop(op: str):
    def infer(args, attrs, span):
        shape, dtype = attrs.get("shape"), attrs.get("dtype")
        if shape is None or dtype is None:
            raise TypeCheckError(
                f"pl.{op} needs the tile it receives: shape= and dtype=", span,
                hint=f"write pl.{op}(shape=[16, 128], dtype=pl.FP32, split=0), or annotate "
                     "the target `t: pl.Tile[[16, 128], pl.FP32] = ...`")
        if not isinstance(dtype, DataType) or not all(isinstance(d, int) and d > 0
                                                      for d in shape) or len(shape) != 2:
            raise TypeCheckError(f"pl.{op} receives a 2-D tile of constant shape and a pl "
                                 f"dtype, got shape={list(shape)} dtype={dtype!r}", span)
        _split(op, attrs, span)
        _pipe_id(op, attrs, span)
        rows, cols = shape
        split = attrs["split"]
        if (split == 1 and rows % 2) or (split == 2 and cols % 2):
            raise TypeCheckError(f"pl.{op}(split={split}) halves the tile between the two "
                                 f"vector lanes; {list(shape)} does not halve", span)
        return TileType(tuple(shape), dtype)
    return infer


def _infer_free(op: str):
    def infer(args, attrs, span):
        (tile,) = args
        if not isinstance(tile.type, TileType):
            raise TypeCheckError(f"pl.{op} releases the slot of a popped tile, not "
                                 f"{describe(tile.type)}", span)
        _pipe_id(op, attrs, span)
        return STATEMENT
    return infer


def _infer_init(op: str):
    def infer(args, attrs, span):
        for buf in args:
            if not (isinstance(buf.type, ScalarType) and not buf.type.dtype.is_float):
                raise TypeCheckError(f"pl.{op}'s consumer buffers are integer base addresses "
                                     f"(pl.system.reserve_buffer / import_peer_buffer), not "
                                     f"{describe(buf.type)}", span)
        _keyword(op, attrs, "dir_mask", span)
        _keyword(op, attrs, "slot_size", span)
        if attrs["dir_mask"] not in DIR_MASKS:
            raise TypeCheckError(f"pl.{op}(dir_mask=) is 1 (cube to vector), 2 (vector to "
                                 f"cube) or 3 (both), got {attrs['dir_mask']!r}", span)
        for name in ("slot_size", "slot_num", "local_slot_num"):
            value = attrs.get(name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise TypeCheckError(f"pl.{op}({name}=) is a positive integer, got {value!r}",
                                     span)
        slots, local = attrs.get("slot_num"), attrs.get("local_slot_num")
        if local is not None and local > (slots or DEFAULT_SLOTS):
            raise TypeCheckError(f"pl.{op}(local_slot_num={local}) exceeds slot_num="
                                 f"{slots or DEFAULT_SLOTS}", span)
        _pipe_id(op, attrs, span)
        return STATEMENT
    return infer


def _infer_reserve(args, attrs, span):
    _keyword("system.reserve_buffer", attrs, "name", span)
    _keyword("system.reserve_buffer", attrs, "size", span)
    if not isinstance(attrs["name"], str) or not attrs["name"]:
        raise TypeCheckError("pl.system.reserve_buffer(name=) is a string", span)
    if not isinstance(attrs["size"], int) or attrs["size"] <= 0:
        raise TypeCheckError("pl.system.reserve_buffer(size=) is a positive byte count", span)
    base = attrs.get("base")
    if not isinstance(base, int) or base < -1:
        raise TypeCheckError("pl.system.reserve_buffer(base=) is a byte address, or -1 "
                             "(pl.system.AUTO: the compiler picks it)", span)
    return ScalarType(DataType.INT32)


def _infer_import(args, attrs, span):
    _keyword("system.import_peer_buffer", attrs, "name", span)
    _keyword("system.import_peer_buffer", attrs, "peer_func", span)
    for key in ("name", "peer_func"):
        if not isinstance(attrs[key], str) or not attrs[key]:
            raise TypeCheckError(f"pl.system.import_peer_buffer({key}=) is a string", span)
    return ScalarType(DataType.INT32)


_SPLIT = OpParam("split", "attr", None)
_ID = OpParam("id", "attr", None)
_IN_GROUP = ("Legal in a pl.FunctionType.{core} function that a pl.FunctionType.Group "
             "function calls (docs/language.md, the cross-core pipe).")

for name, doc in (
        ("system.tpush_to_aiv",
         "Pushes a cube tile into the cube-to-vector ring (TPUSH C2V), waiting while the "
         "ring is full; `split=` 0 hands the whole tile to both vector lanes, 1 / 2 the "
         "upper / left half to lane 0 and the other half to lane 1."),
        ("system.tpush_to_aic",
         "Pushes a vector tile into the vector-to-cube ring (TPUSH V2C), waiting while the "
         "ring is full; with `split=` 1 / 2 each lane pushes its half (rows / columns) of the "
         "tile the cube pops; with 0 lane 0's tile is the one pushed.")):
    register(OpDef(name, (OpParam("tile", "value"), _SPLIT, _ID), _infer_push(name), "pipe",
                   f"{doc}  {_IN_GROUP.format(core=CORE_OF[name])}", dtypes=ANY,
                   emit="tpush"))

for name, doc in (
        ("system.tpop_from_aic",
         "The tile at the head of the cube-to-vector ring (TPOP C2V), waiting while it is "
         "empty: `shape` / `dtype` name the tile pushed (a lane's half of it with a split)."),
        ("system.tpop_from_aiv",
         "The tile at the head of the vector-to-cube ring (TPOP V2C), waiting while it is "
         "empty (with a split, the two lanes' halves put together).")):
    register(OpDef(name, (OpParam("shape", "attr", None), OpParam("dtype", "attr", None),
                          OpParam("split", "attr", 0), _ID),
                   _infer_pop(name), "pipe",
                   f"{doc}  Its slot stays taken until the matching tfree.  "
                   f"{_IN_GROUP.format(core=CORE_OF[name])}", dtypes=ANY, emit="tpop"))

for name, doc in (
        ("system.tfree_to_aic",
         "Returns the slot of a tile popped with pl.tpop_from_aic to the cube's ring (TFREE)."),
        ("system.tfree_to_aiv",
         "Returns the slot of a tile popped with pl.tpop_from_aiv to the vector's ring "
         "(TFREE).")):
    register(OpDef(name, (OpParam("tile", "value"), _ID), _infer_free(name), "pipe",
                   f"{doc}  {_IN_GROUP.format(core=CORE_OF[name])}", dtypes=ANY,
                   emit="tfree"))

for name, core in (("system.aic_initialize_pipe", "AIC"),
                   ("system.aiv_initialize_pipe", "AIV")):
    register(OpDef(
        name,
        (OpParam("c2v_consumer_buf", "value", None), OpParam("v2c_consumer_buf", "value", None),
         OpParam("dir_mask", "attr", None), OpParam("slot_size", "attr", None),
         OpParam("slot_num", "attr", None), OpParam("local_slot_num", "attr", None), _ID),
        _infer_init(name), "pipe",
        f"Declares the {core} side of pipe `id`: `dir_mask` 1 (cube to vector), 2 (vector to "
        f"cube) or 3 (both), rings of `slot_num` slots (default {DEFAULT_SLOTS}) of "
        "`slot_size` bytes in the consuming core's buffer (`c2v_consumer_buf` / "
        "`v2c_consumer_buf`: the base pl.system.reserve_buffer / import_peer_buffer give).  "
        f"{_IN_GROUP.format(core=core)}",
        dtypes=ANY, emit="pipe_init"))

register(OpDef(
    "system.reserve_buffer",
    (OpParam("name", "attr", None), OpParam("size", "attr", None), OpParam("base", "attr", -1)),
    _infer_reserve, "pipe",
    "Reserves `size` bytes of this core's buffer as the named ring buffer of a cross-core "
    "pipe (consumer side) and gives its base (`base=-1`: the compiler picks it).  In a "
    "function of a pl.FunctionType.Group.", dtypes=ANY, emit="pipe_buffer"))
register(OpDef(
    "system.import_peer_buffer",
    (OpParam("name", "attr", None), OpParam("peer_func", "attr", None)),
    _infer_import, "pipe",
    "The base of the ring buffer `name` the peer function `peer_func` of the same "
    "pl.FunctionType.Group reserved (producer side).", dtypes=ANY, emit="pipe_buffer"))
register(OpDef(
    "get_subblock_idx", (), lambda args, attrs, span: INDEX, "index",
    "The vector lane running the code: 0 or 1 in a pl.FunctionType.AIV function of a "
    "pl.FunctionType.Group (the two lanes run it concurrently), 0 elsewhere.",
    dtypes=frozenset()))
