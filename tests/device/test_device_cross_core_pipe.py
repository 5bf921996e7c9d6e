"""The explicit cross-core pipe as device code: a pl.FunctionType.Group task is one mixed
device source (its cube and vector functions with pto-isa's TPUSH / TPOP / TFREE on a TPipe
per ring), which pto-isa's CPU model runs on three threads (the cube and the two vector
sub-blocks at once).  Each program runs on a2a3cpu / a5cpu bit for bit as on its simulator
and as torch says; what the CPU model cannot run as the simulators do is refused at the
user's line (docs/device-code.md, "The cross-core pipe")."""

from __future__ import annotations

import pytest
import torch
from cpu_models import toolchain_or_skip
from pipe_programs import c2v_cluster, c2v_out_rows, c2v_source, parse, v2c_source
from split_aiv_programs import (
    LANES_ONLY,
    TWO_REGIONS,
    N,
    gather_only_source,
    round_trip_source,
    shard_out_rows,
    shard_source,
)

from pypto.codegen.cpp import generate
from pypto.codegen.device_group import MAX_RINGS
from pypto.compiler import CompileOptions, build_program, lower
from pypto.ir import LoweringError
from pypto.platform import get_platform
from pypto.runtime import load_artifact

pytestmark = pytest.mark.small_tiles


def _group_source(source: str, platform: str):
    """The generated kernel of `source`'s one group on `platform` (no compile)."""
    program = parse(source)
    p = get_platform(platform)
    (kernel,) = generate(lower(program, p), program, p).kernels
    return kernel


def _refusal(source: str, platform: str, marker: str, match: str) -> str:
    """The LoweringError of generating `source` on `platform`, matching `match`; it names
    the line holding `marker`."""
    with pytest.raises(LoweringError, match=match) as info:
        _group_source(source, platform)
    line = source.splitlines()[info.value.span.line - 1]
    assert marker in line, line
    return str(info.value)


# ----------------------------------------------------------------------------- the source


def test_a_group_is_one_mixed_source_with_a_tpipe_per_ring():
    kernel = _group_source(c2v_source(3, 2, 1), "a2a3cpu")
    cpp = kernel.cpp
    assert kernel.name == "group"
    assert "using Pipe0C2V = TPipe<0, Direction::DIR_C2V, 1024, 2, 2>;" in cpp
    # Both functions, each from the group's arguments; A2/A3's GM slot buffer is the last.
    assert "__aicore__ inline void group__aic(__gm__ int64_t *args)" in cpp
    assert "__aicore__ inline void group__aiv(__gm__ int64_t *args)" in cpp
    assert "__gm__ PtoTensor *bias = reinterpret_cast<__gm__ PtoTensor *>(args[2]);" in cpp
    assert cpp.count("Pipe0C2V pipe0_c2v(reinterpret_cast<__gm__ void *>(args[4] + "
                     "INT64_C(0)), 0x0, 0x0);") == 2
    assert "TPUSH<Pipe0C2V, decltype(acc), TileSplitAxis::TILE_UP_DOWN>(pipe0_c2v, acc);" in cpp
    assert "TPOP<Pipe0C2V, decltype(t), TileSplitAxis::TILE_UP_DOWN>(pipe0_c2v, t);" in cpp
    assert "TFREE<Pipe0C2V, TileSplitAxis::TILE_UP_DOWN>(pipe0_c2v);" in cpp
    assert "lane = static_cast<int64_t>(get_subblockid());" in cpp
    # Each function only in its core's build (pto-isa's CPU model defines both macros).
    assert cpp.index("#if defined(__DAV_CUBE__)") < cpp.index("void group__aic(") \
        < cpp.index("#if defined(__DAV_VEC__)") < cpp.index("void group__aiv(")
    entry = cpp[cpp.index('extern "C"'):]
    assert entry.index("#if defined(__DAV_CUBE__)") < entry.index("group__aic(args);") \
        < entry.index("#if defined(__DAV_VEC__)") < entry.index("group__aiv(args);")
    # The launcher: the GM slot buffer, the ring state hook, the three cores.
    launch = kernel.launch_cpp
    assert "std::vector<uint8_t> gm_slots(2048, 0xFF);" in launch
    assert "words[4] = reinterpret_cast<int64_t>(gm_slots.data());" in launch
    assert "injected_pipe_shared_state_hook = &pipe_state" in launch
    assert "ScopedExecutionContext context(block, subblock, 2);" in launch
    assert "std::thread lane0(vector, 0u);" in launch and "cube(0u);" in launch


def test_a5_rings_are_the_consumers_buffers_alone():
    cpp = _group_source(v2c_source(3, 4, 2), "a5cpu").cpp
    assert "using Pipe0V2C = TPipe<0, Direction::DIR_V2C, 1024, 4, 4>;" in cpp
    assert cpp.count("Pipe0V2C pipe0_v2c(nullptr, 0x0, 0x0);") == 2
    assert "gm_slots" not in _group_source(v2c_source(3, 4, 2), "a5cpu").launch_cpp


def test_each_ring_is_a_pipe_of_its_own_with_its_flags_and_bases():
    # A lane region's round trip: pipe 1 both ways, two TPipes, flag ids 0 and 2; each ring
    # at the bottom of its consumer's buffer (Vec for C2V, Mat for V2C), and in GM one after
    # the other.
    cpp = _group_source(round_trip_source("UP_DOWN"), "a2a3cpu").cpp
    assert "using Pipe1C2V = TPipe<0, Direction::DIR_C2V, 1024, 2, 2>;" in cpp
    assert "using Pipe1V2C = TPipe<2, Direction::DIR_V2C, 1024, 2, 2>;" in cpp
    assert "Pipe1V2C pipe1_v2c(reinterpret_cast<__gm__ void *>(args[4] + INT64_C(2048)), " \
           "0x0, 0x0);" in cpp
    assert "DIR_BOTH" not in cpp


def test_pipe_operators_are_fenced_and_need_no_flags():
    cpp = _group_source(c2v_source(3, 2, 1), "a5cpu").cpp
    lines = [line.strip() for line in cpp.splitlines()]
    push = lines.index("TPUSH<Pipe0C2V, decltype(acc), TileSplitAxis::TILE_UP_DOWN>(pipe0_c2v, "
                       "acc);")
    # TMATMUL writes acc on M, TPUSH reads it: a barrier, not a flag, orders them.
    assert lines[push - 2:push + 2] == [
        "TMATMUL(acc, move_0, move_1);", "pipe_barrier(PIPE_ALL);", lines[push],
        "pipe_barrier(PIPE_ALL);"]
    pop = next(i for i, line in enumerate(lines) if line.startswith("TPOP<"))
    assert lines[pop - 1] == lines[pop + 1] == "pipe_barrier(PIPE_ALL);"


def test_a_lane_region_kernel_without_crossings_is_one_group_kernel():
    # Its AIC and AIV functions run only in the group: no kernel of their own.
    kernel = _group_source(LANES_ONLY, "a5cpu")
    assert kernel.name == "k" and "TPipe" not in kernel.cpp
    assert "k__aiv(args);" in kernel.cpp


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_none_regions_shard_is_refused_at_the_shard(platform):
    message = _refusal(shard_source("NONE"), platform, "pl.aiv_shard(acc)",
                       "pl.aiv_shard of `t` in a pl.SplitMode.NONE region has no device code")
    assert "gives lane 1 of a no-split cube-to-vector pipe a tile of zeros" in message
    _refusal(TWO_REGIONS, platform, "pl.aiv_shard(acc)", "pl.SplitMode.NONE region")


def test_a_tile_with_padded_rows_is_refused_where_it_crosses():
    # LEFT_RIGHT halves of an FP16 [16, 16] tile are [16, 8]: 16-byte rows, padded to 32.
    message = _refusal(round_trip_source("LEFT_RIGHT"), "a2a3cpu", "pl.aic_gather(v)",
                       "pl.aic_gather on device platforms: a \\[16, 8\\] FP16 tile in Vec")
    assert "which the device holds as 16 x 16 elements" in message


def test_a_popped_tile_read_after_its_free_is_refused_at_the_read():
    # The simulators copy the slot into the tile; on the device the tile is the slot.
    source = c2v_source().replace(
        "            r = pl.add(t, bt)\n            pl.tfree_to_aic(t)\n",
        "            pl.tfree_to_aic(t)\n            r = pl.add(t, bt)\n")
    message = _refusal(source, "a5cpu", "r = pl.add(t, bt)", "`t` is read after its tfree")
    assert "the tfree hands back to the producer" in message


def test_a_popped_tile_read_as_another_element_type_is_refused():
    # A float -> integer cast reads the tile's bits through a tile of its own at the
    # popped tile's address, which TPOP's pointing at the slot does not move.
    source = c2v_source().replace("r = pl.add(t, bt)",
                                  "r = pl.cast(pl.cast(t, pl.INT32), pl.FP32)")
    _refusal(source, "a2a3cpu", "pl.cast(t, pl.INT32)",
             "pl.cast reads `t`, a tile popped from the cross-core pipe, as another element type")
    # A copy of it is a tile of its own.
    copied = c2v_source().replace("r = pl.add(t, bt)",
                                  "r = pl.cast(pl.cast(pl.move(t, pl.Mem.Vec), pl.INT32), "
                                  "pl.FP32)")
    assert "TCVT(" in _group_source(copied, "a2a3cpu").cpp


def test_a5_splits_only_32_bit_cube_tiles():
    source = c2v_source(3, 2, 1).replace(
        "pl.move(bm, pl.Mem.Right))", "pl.move(bm, pl.Mem.Right), out_dtype=pl.FP16)").replace(
        "pl.Tile[[8, 16], pl.FP32]", "pl.Tile[[8, 16], pl.FP16]").replace(
        "r = pl.add(t, bt)", "r = pl.add(pl.cast(t, pl.FP32), bt)")
    _refusal(source, "a5cpu", "pl.tpush_to_aiv(acc, split=1)",
             "A5's TPUSH splits a cube tile between the lanes for 32-bit elements only, not FP16")
    assert "TPUSH<Pipe0C2V, decltype(acc), TileSplitAxis::TILE_UP_DOWN>" in \
        _group_source(source, "a2a3cpu").cpp


def test_the_device_platforms_refuse_a_group_at_its_first_pipe_operator():
    source = c2v_source()
    message = _refusal(source, "a2a3", "pl.aic_initialize_pipe",
                       "the group `group` has no device code on a2a3 yet")
    assert "--cce-aicore-arch=dav-c220" in message
    _refusal(shard_source("UP_DOWN"), "a5", "pl.split_aiv(2", "no device code on a5 yet")


def test_more_rings_than_flags_is_refused_at_the_first_ring_over():
    ids = range(MAX_RINGS + 1)
    source = "\n".join([
        "@pl.program", "class Many:",
        "    @pl.function(type=pl.FunctionType.AIC)",
        "    def cube(self, a: pl.Tensor[[16, 16], pl.FP16]):",
        *(f"        pl.aic_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=1, id={i})"
          for i in ids),
        "        am = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)",
        "        acc = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(am, pl.Mem.Right))",
        *(f"        pl.tpush_to_aiv(acc, split=0, id={i})" for i in ids),
        "    @pl.function(type=pl.FunctionType.AIV)",
        "    def vector(self, out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> "
        "pl.Tensor[[16, 16], pl.FP32]:",
        *(f"        pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=1, id={i})"
          for i in ids),
        *(line for i in ids for line in (
            f"        t{i}: pl.Tile[[16, 16], pl.FP32] = pl.tpop_from_aic(split=0, id={i})",
            f"        out = pl.store(t{i}, [0, 0], out)",
            f"        pl.tfree_to_aic(t{i}, id={i})")),
        "        return out",
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        "    def main(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], "
        "pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:",
        "        with pl.cluster():",
        "            self.cube(a)",
        "            out = self.vector(out)",
        "        return out", ""])
    message = _refusal(source, "a5cpu", f"id={MAX_RINGS})", f"has {MAX_RINGS + 1} rings")
    assert f"so {MAX_RINGS} at most" in message


# ----------------------------------------------------------------------------- runs


def _runs(source: str, arguments, platform: str, repeats: int = 1) -> list[torch.Tensor]:
    """The last argument after running `source` on the CPU model `platform` (`repeats`
    times, each from fresh `arguments()`), checked equal to its simulator's bit for bit."""
    toolchain_or_skip(platform)
    program = parse(source)
    outs = []
    for target in (platform, platform.replace("cpu", "sim")):
        artifact = load_artifact(build_program(program, CompileOptions(platform=target)))
        for _ in range(repeats if target == platform else 1):
            args = arguments()
            artifact.run(args)
            outs.append(args[-1])
    assert all(torch.equal(o, outs[-1]) for o in outs), "the CPU model and the simulator differ"
    return outs


def _c2v_arguments(n: int, split: int):
    def make():
        g = torch.Generator().manual_seed(split)
        return [torch.randn(n * 16, 32, dtype=torch.float16, generator=g),
                torch.randn(32, 16, dtype=torch.float16, generator=g),
                torch.randn(16, 16, generator=g), torch.zeros(c2v_out_rows(n, split), 16)]
    return make


@pytest.mark.slow
@pytest.mark.parametrize("platform, slots, split", [
    ("a2a3cpu", 1, 0), ("a5cpu", 2, 1), ("a2a3cpu", 4, 2), ("a5cpu", 1, 0)])
def test_cube_to_vector(platform, slots, split):
    n = 5  # more tiles than slots: the cube waits for the lanes' frees
    make = _c2v_arguments(n, split)
    (out, _) = _runs(c2v_source(n, slots, split), make, platform)
    a, b, bias, _ = make()
    want = ((a.float() @ b.float()).reshape(n, 16, 16) + bias).reshape(n * 16, 16)
    if split == 0:  # lane 1 takes no part in a no-split pipe: its pops are zeros
        want = torch.cat([want, bias.repeat(n, 1)])
    assert torch.equal(out, want)


@pytest.mark.slow
@pytest.mark.parametrize("platform, slots, split", [
    ("a2a3cpu", 1, 1), ("a5cpu", 2, 0), ("a5cpu", 4, 2), ("a2a3cpu", 2, 0)])
def test_vector_to_cube(platform, slots, split):
    n = 5

    def make():
        g = torch.Generator().manual_seed(slots)
        return [torch.randn(n * 16, 32, dtype=torch.float16, generator=g),
                torch.randn(32, 16, dtype=torch.float16, generator=g), torch.zeros(n * 16, 16)]

    (out, _) = _runs(v2c_source(n, slots, split), make, platform)
    x, b, _ = make()
    assert torch.equal(out, (x * 2).float() @ b.float())


@pytest.mark.slow
def test_a_cluster_block_runs_as_its_group_and_every_run_gives_the_same_bits():
    n, split = 4, 1
    make = _c2v_arguments(n, split)
    outs = _runs(c2v_cluster(n, 1, split), make, "a2a3cpu", repeats=3)
    a, b, bias, _ = make()
    want = ((a.float() @ b.float()).reshape(n, 16, 16) + bias).reshape(n * 16, 16)
    assert all(torch.equal(o, want) for o in outs)


def _shard_arguments(mode: str):
    def make():
        g = torch.Generator().manual_seed(len(mode))
        return [torch.randn(N * 16, 32, dtype=torch.float16, generator=g),
                torch.randn(32, 16, dtype=torch.float16, generator=g),
                torch.randn(16, 16, generator=g), torch.zeros(shard_out_rows(mode), 16)]
    return make


@pytest.mark.slow
@pytest.mark.parametrize("platform, mode", [("a2a3cpu", "UP_DOWN"), ("a5cpu", "LEFT_RIGHT")])
def test_a_lane_regions_shard(platform, mode):
    make = _shard_arguments(mode)
    (out, _) = _runs(shard_source(mode), make, platform)
    a, b, bias, _ = make()
    assert torch.equal(out, ((a.float() @ b.float()).reshape(N, 16, 16) + bias)
                       .reshape(N * 16, 16))


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_a_lane_regions_round_trip(platform):
    def make():
        g = torch.Generator().manual_seed(7)
        return [torch.randn(N * 16, 32, dtype=torch.float16, generator=g),
                torch.randn(32, 16, dtype=torch.float16, generator=g),
                torch.randn(16, 16, dtype=torch.float16, generator=g), torch.zeros(N * 16, 16)]

    (out, _) = _runs(round_trip_source("UP_DOWN"), make, platform)
    a, b, w, _ = make()
    doubled = ((a.float() @ b.float()) * 2).half()
    assert torch.equal(out, (doubled.reshape(N, 16, 16).float() @ w.float()).reshape(N * 16, 16))


@pytest.mark.slow
@pytest.mark.parametrize("platform", ["a2a3cpu", "a5cpu"])
def test_none_regions_without_a_shard(platform):
    # Each lane its own rows (no crossing), and a gather of a tile both lanes compute.
    x = torch.randn(32, 16, generator=torch.Generator().manual_seed(1))
    (out, _) = _runs(LANES_ONLY, lambda: [x.clone(), torch.zeros(32, 16)], platform)
    assert torch.equal(out, x + x)

    def make():
        g = torch.Generator().manual_seed(5)
        return [torch.randn(N * 16, 16, dtype=torch.float16, generator=g),
                torch.randn(16, 16, dtype=torch.float16, generator=g), torch.zeros(N * 16, 16)]

    (out, _) = _runs(gather_only_source(), make, platform)
    x, w, _ = make()
    assert torch.equal(out, ((x * 2).float().reshape(N, 16, 16) @ w.float()).reshape(N * 16, 16))


# Four blocks of one group at once (`pl.spmd`), each its own rows: pto-isa's TPipe keeps a
# ring's state per pipe type, so the tasks share it unless the launcher gives each its own
# (without that, most runs here mixed the blocks' tiles up).
SPMD = """
@pl.program
class Blocks:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[320, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=1)
        bm = pl.load(b, [0, 0], [32, 16], target_memory=pl.Mem.Mat)
        for i in pl.range(5):
            row = pl.tile.get_block_idx() * 80 + i * 16
            am = pl.load(a, [row, 0], [16, 32], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(am, pl.Mem.Left), pl.move(bm, pl.Mem.Right))
            pl.tpush_to_aiv(acc, split=1)

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, bias: pl.Tensor[[16, 16], pl.FP32],
               out: pl.Out[pl.Tensor[[320, 16], pl.FP32]]) -> pl.Tensor[[320, 16], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=1024, slot_num=1)
        lane = pl.tensor.get_subblock_idx()
        for i in pl.range(5):
            t: pl.Tile[[8, 16], pl.FP32] = pl.tpop_from_aic(split=1)
            r = pl.add(t, pl.load(bias, [lane * 8, 0], [8, 16]))
            pl.tfree_to_aic(t)
            out = pl.store(r, [pl.tile.get_block_idx() * 80 + i * 16 + lane * 8, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Group)
    def group(self, a: pl.Tensor[[320, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
              bias: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[320, 16], pl.FP32]]) -> pl.Tensor[[320, 16], pl.FP32]:
        self.cube(a, b)
        out = self.vector(bias, out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[320, 32], pl.FP16], b: pl.Tensor[[32, 16], pl.FP16],
             bias: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[320, 16], pl.FP32]]) -> pl.Tensor[[320, 16], pl.FP32]:
        with pl.spmd(4):
            out = self.group(a, b, bias, out)
        return out
"""


@pytest.mark.slow
def test_blocks_of_a_group_running_at_once_keep_their_rings_apart():
    def make():
        g = torch.Generator().manual_seed(4)
        return [torch.randn(320, 32, dtype=torch.float16, generator=g),
                torch.randn(32, 16, dtype=torch.float16, generator=g),
                torch.randn(16, 16, generator=g), torch.zeros(320, 16)]

    outs = _runs(SPMD, make, "a2a3cpu", repeats=4)
    a, b, bias, _ = make()
    want = ((a.float() @ b.float()).reshape(20, 16, 16) + bias).reshape(320, 16)
    assert all(torch.equal(o, want) for o in outs)

