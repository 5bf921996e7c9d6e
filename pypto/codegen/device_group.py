"""Device code of a pl.FunctionType.Group task: its cube (AIC) and vector (AIV) functions
with pto-isa's cross-core pipe (TPUSH / TPOP / TFREE on a `TPipe` per ring), in one device
source (templates/device_group.cpp.j2), and on the CPU-model platforms the launcher that
runs the cube and the two vector sub-blocks at once (templates/cpu_model_group_launch.cpp.j2).

The device source is a mixed kernel: `kernel_entry` runs the cube's function where CANN
compiles it for the cube core (`__DAV_CUBE__`) and the vector's where it compiles it for
a vector core (`__DAV_VEC__`); the CPU-model launcher calls the two functions itself, on
three threads.  Each ring (pipe id, direction) is a `TPipe` of its own (never DIR_BOTH:
pto-isa's CPU model shares one set of slots between a DIR_BOTH pipe's directions, where
the simulators give each direction its ring), flag ids two apart, `slot_num` slots of
`slot_size` bytes and as many local slots.  Its slots lie at the bottom of the consumer's
buffer, the bytes AllocateMemoryAddr reserves there (Vec for cube to vector, Mat for
vector to cube), the rings of one buffer one after another by pipe id; on A2/A3 the rings
also take a GM slot buffer, which the task gets as one more argument (pto-isa's A2/A3
TPUSH stores a tile to GM and TPOP loads it back; A5's write the consumer's buffer).

What pto-isa's CPU model cannot run as the simulators do is refused at the user's line:
a NONE lane region's shard (the CPU model gives lane 1 of a no-split cube-to-vector pipe
a tile of zeros, where the region reads the cube's tile on both lanes), and, on the
device platforms themselves, every group (a mixed object and the GM slot buffer are not
built there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.errors import LoweringError
from ..ir.nodes import Assign, Call, ExprStmt, Function, Return
from ..ir.ops.cross_core import BOTH_LANES, FREE_OPS, POP_OPS
from ..ir.types import Level
from ..ir.visitor import defs, statements, uses
from ..passes.cross_core_pipe import pipe_calls
from .cpp import POISON_BASE, param_models, param_spec, refuse_bias_beside_vec
from .device import GroupPipes, PipeRing, device_function
from .environment import render
from .identifiers import symbol
from .sources import KernelSource

if TYPE_CHECKING:
    from ..platform import Platform

MAX_RINGS = 8
"""Rings a group may have: each takes two of the AI Core's 16 cross-core flag ids (pto-isa's
TPipe uses FlagID and FlagID + 1, below 16)."""

def device_group_source(group: Function, members: dict, rings: list[dict],
                        platform: Platform) -> KernelSource:
    """The device source of `group` (and its CPU-model launcher); `members` are its
    functions by level with the group parameter each of their parameters is, `rings` the
    group's rings as codegen/group.py finds them."""
    cube, vector = members.get(Level.AIC), members.get(Level.AIV)
    if platform.kind != "cpu_model":
        first = next((span for fn, _ in members.values() for _, span, _ in pipe_calls(fn)),
                     group.span)
        raise LoweringError(
            f"the group `{group.name}` has no device code on {platform.name} yet: a task of "
            "a cube and two vector cores is one mixed object (CANN's "
            "--cce-aicore-arch=dav-c220 / dav-c310), and on A2/A3 its rings need a GM slot "
            "buffer from the runtime, neither of which this project builds; its device "
            "source runs on pto-isa's CPU model", first,
            hint=f"run it on the CPU-model platform of {platform.backend.name} "
                 "(a2a3cpu, a5cpu) or on a simulator")
    if vector is not None:
        _refuse_shared_shards(vector[0], rings)
    for fn, _ in members.values():
        _refuse_reads_after_free(fn)
    pipes = _group_pipes(group, members, rings, platform)
    name = symbol(group.name, device_code=True)
    functions, sides, on_chip = [], {}, {}
    for level, member in ((Level.AIC, cube), (Level.AIV, vector)):
        if member is None:
            continue
        fn, positions = member
        function = device_function(fn, platform.backend.capacities["Vec"],
                                   platform.backend.name, pipes, positions)
        refuse_bias_beside_vec(fn, platform, function.on_chip)
        side = f"{name}__{level.name.lower()}"
        functions.append({**function.model, "symbol": side,
                          "side": "cube" if level is Level.AIC else "vector"})
        sides[level] = (side, function.on_chip)
        for space, mark in function.on_chip.items():
            on_chip[space] = max(on_chip.get(space, 0), mark)
    model = {"name": group.name, "functions": functions,
             "rings": sorted(pipes.rings.values(), key=lambda r: r.flag),
             "cube": sides[Level.AIC][0] if Level.AIC in sides else None,
             "vector": sides[Level.AIV][0] if Level.AIV in sides else None,
             **{flag: any(f[flag] for f in functions)
                for flag in ("batched", "saturates", "col_sum_tree", "mrgsort_lists")}}
    cpp = render("device_group.cpp.j2", g=model)
    launch = render("cpu_model_group_launch.cpp.j2", l={
        "name": name, "params": param_models(group), "arch": platform.cpu_model_arch,
        "words": len(group.params) + (1 if pipes.gm_arg is not None else 0),
        "gm_arg": pipes.gm_arg,
        "gm_bytes": sum(r.slot_num * r.slot_size for r in pipes.rings.values()
                        if r.gm_offset is not None),
        "block_num": "get_block_num()" in cpp,
        "cube": _side_launch(sides.get(Level.AIC)),
        "vector": _side_launch(sides.get(Level.AIV))})
    return KernelSource(name, cpp, "cube", tuple(param_spec(p) for p in group.params),
                        on_chip, launch)


def _side_launch(side: tuple[str, dict[str, int]] | None) -> dict | None:
    if side is None:
        return None
    name, on_chip = side
    return {"symbol": name, "poison": [{"base": POISON_BASE[space], "bytes": n}
                                       for space, n in sorted(on_chip.items())
                                       if n and space in POISON_BASE]}


def _group_pipes(group: Function, members: dict, rings: list[dict],
                 platform: Platform) -> GroupPipes:
    """The group's rings as device code declares them (`PipeRing`): flag ids by ring, the
    consumer's bases in pipe-id order per buffer, and on A2/A3 the GM slot buffer's parts,
    the group's last argument."""
    if len(rings) > MAX_RINGS:
        span = _init_span(members, rings[MAX_RINGS])
        raise LoweringError(
            f"the group `{group.name}` has {len(rings)} rings (a pipe id and direction "
            f"each); device code gives each two of the AI Core's 16 cross-core flags, so "
            f"{MAX_RINGS} at most", span, hint="use fewer pipe ids")
    gm = platform.backend.name == "Ascend910B"  # A2/A3: TPUSH / TPOP through GM
    bases = {True: 0, False: 0}
    gm_offset = 0
    out = {}
    for flag, r in enumerate(rings):
        size = r["slot_num"] * r["slot_size"]
        direction = "C2V" if r["c2v"] else "V2C"
        out[(r["id"], r["c2v"])] = PipeRing(
            r["id"], r["c2v"], r["split"], r["slot_num"], r["slot_size"], 2 * flag,
            bases[r["c2v"]], gm_offset if gm else None, f"Pipe{r['id']}{direction}")
        bases[r["c2v"]] += size
        gm_offset += size
    return GroupPipes(out, len(group.params) if gm and out else None)


def _init_span(members: dict, ring: dict):
    """Where the initialize_pipe of `ring` is (the group's first, else)."""
    for fn, _ in members.values():
        for call, span, _ in pipe_calls(fn):
            if call.op.endswith("initialize_pipe") and (call.attr("id") or 0) == ring["id"]:
                return span
    return None


def _refuse_shared_shards(vector: Function, rings: list[dict]) -> None:
    """A NONE lane region's shard (a pop of a cube-to-vector ring both lanes take part in)
    is refused at its line: pto-isa's CPU model gives lane 1 of a no-split cube-to-vector
    pipe a tile of zeros (its TPOP fills lane 1's tile after the pop, in the dual-lane
    protocol too), where the region reads the cube's tile on both lanes."""
    shared = {r["id"] for r in rings if r["c2v"] and r["split"] == BOTH_LANES}
    for call, span, target in pipe_calls(vector):
        if call.op in POP_OPS and POP_OPS[call.op] == "C2V" and (call.attr("id") or 0) in shared:
            raise LoweringError(
                f"pl.aiv_shard of `{target.name}` in a pl.SplitMode.NONE region has no device "
                "code: it reads the cube's tile on both vector lanes, and pto-isa's CPU model "
                "gives lane 1 of a no-split cube-to-vector pipe a tile of zeros, so no device "
                "code for it can be proven here", span,
                hint="split the tile between the lanes (pl.SplitMode.UP_DOWN / LEFT_RIGHT), "
                     "or run it on a simulator (a2a3sim, a5sim)")


def _refuse_reads_after_free(fn: Function) -> None:
    """A popped tile read after its tfree is refused at the read: on the NPU the popped tile
    is the ring's slot (TPOP points it there), which the tfree hands back to the producer
    to fill again; the simulators and pto-isa's CPU model copy the slot into the tile's
    own bytes, so no run here would show it."""
    freed: dict[str, int] = {}  # a freed tile's name -> the line of its tfree
    for s in statements(list(fn.body)):
        if not isinstance(s, (Assign, ExprStmt, Return)):
            continue
        call = getattr(s, "value", None)
        if isinstance(call, Call) and call.op in FREE_OPS:
            freed[call.args[0].name] = s.span.line if s.span else 0
            continue
        read = sorted(set(uses(s)) & set(freed))
        if read:
            name = read[0]
            raise LoweringError(
                f"`{name}` is read after its tfree (line {freed[name]}): on the device a "
                "popped tile is the ring's slot, which the tfree hands back to the producer "
                "to fill again", s.span,
                hint=f"move the tfree of `{name}` after its last use")
        for name in defs(s):
            freed.pop(name, None)

