"""Upstream example kernels whose own `__main__` only lowers or builds them, run here and
compared with torch: the meaning upstream gives them, computed on the simulator.

The example modules are imported unmodified from the snapshot (skipped, saying so, when it
is absent); these tests are slow (each compiles several kernels).
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from pypto.tools.upstream_compat import snapshot_root

SNAPSHOT = snapshot_root()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pypto.ir.diagnostics.PyptoPerfHint"),
    pytest.mark.skipif(not (SNAPSHOT / "examples").is_dir(),
                       reason=f"the upstream PyPTO snapshot is absent (looked for {SNAPSHOT}); "
                              "set PYPTO_UPSTREAM_ROOT"),
]


def example(path: str):
    """The example module at `path` of the snapshot, imported as it is."""
    name = "upstream_" + path.replace("/", "_").removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SNAPSHOT / path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # @pl.program reads its class source through the module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_tile_assemble_kernels_insert_tiles_as_upstream_means():
    m = example("examples/intermediate/05_assemble.py")
    g = torch.Generator().manual_seed(5)
    x, out = torch.randn(32, 32, generator=g), torch.zeros(32, 32)
    src = torch.randn(32, 16, generator=g)
    inserted = x.clone()
    inserted[:, :16] = src
    for kernel in (m.tile_assemble_vec, m.tile_assemble_row_by_row, m.tile_assemble_double_loop):
        kernel(x, src, out)
        assert torch.equal(out, inserted), kernel.__name__
    narrow = torch.randn(32, 8, generator=g)
    m.tile_assemble_loop_col_broadcast(x, narrow, out)
    assert torch.equal(out, narrow.repeat(1, 4))
    quarter = torch.randn(16, 16, generator=g)
    m.tile_assemble_double_loop_broadcast(x, quarter, out)
    assert torch.equal(out, quarter.repeat(2, 2))


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_matmul_assembled_into_mat_moves_to_vec_as_upstream_means(platform):
    """tile_assemble_acc_mat: Acc inserted into a Mat tile, then `pl.move` to Vec, which is
    a transfer from the cube unit to the vector unit."""
    from pypto.runtime import RunConfig

    m = example("examples/intermediate/05_assemble.py")
    g = torch.Generator().manual_seed(5)
    x, a, b = torch.randn(32, 32, generator=g), torch.randn(32, 16, generator=g), \
        torch.randn(16, 16, generator=g)
    out = torch.zeros(32, 32)
    m.tile_assemble_acc_mat(x, a, b, out, config=RunConfig(platform=platform))
    assert torch.equal(out[:, :16], x[:, :16])
    assert torch.allclose(out[:, 16:], a @ b, rtol=1e-5, atol=1e-5)


def test_dynamic_valid_shape_kernels_store_only_the_valid_columns():
    m = example("examples/intermediate/06_dyn_valid_shape.py")
    data = torch.randn(64, 64, generator=torch.Generator().manual_seed(6))
    out = torch.zeros(64, 64)
    m.dyn_valid_shape(data, 0.5, 40, out)
    assert torch.equal(out[:, :40], data[:, :40] * 0.5) and out[:, 40:].isnan().all()
    for is_last, valid in ((1, 48), (0, 64)):
        out = torch.zeros(64, 64)
        m.dyn_valid_shape_if_else(data, torch.tensor([is_last, 48, 64]), out)
        assert torch.equal(out[:, :valid], data[:, :valid])
    sij, out = torch.cat([data, data * 2]), torch.zeros(128, 64)
    m.dyn_valid_shape_loop(sij, torch.tensor([2, 24, 64]), out)
    assert torch.equal(out[:64], data) and torch.equal(out[64:, :24], 2 * data[:, :24])
    assert out[64:, 24:].isnan().all()


def test_inline_helpers_compose_as_the_entry_says():
    m = example("examples/utils/cross_function_calls.py")
    a, c = torch.randn(128, 128), torch.zeros(128, 128)
    m.main_kernel(a, c)
    assert torch.equal(c, (a + 1.0) * 2.0)


def _rms_norm(x, eps=1e-6):
    return x / torch.sqrt((x * x).sum(dim=1, keepdim=True) / x.shape[1] + eps)


def _rope(x, cos, sin):
    half = x.shape[1] // 2
    left, right = x[:, :half], x[:, half:]
    return torch.cat([left * cos - right * sin, right * cos + left * sin], dim=1)


def test_llama_mini_matches_its_architecture_in_torch():
    from pypto import ir

    m = example("examples/models/08_llama_mini.py")
    seq, dim, vocab = 16, 64, 64
    g = torch.Generator().manual_seed(8)

    def randn(*shape, scale=0.1):
        return torch.randn(*shape, generator=g) * scale

    hidden = randn(seq, dim, scale=1.0)
    mask = torch.triu(torch.full((seq, seq), -1e9), diagonal=1)
    angle = torch.arange(seq).unsqueeze(1) * torch.arange(dim // 2).unsqueeze(0) * 0.1
    cos, sin = torch.cos(angle), torch.sin(angle)
    weights = [randn(dim, dim) for _ in range(7)]
    w_lm = randn(dim, vocab)
    logits = torch.zeros(seq, vocab)
    compiled = ir.compile(m.build_llama_mini_program(seq, dim, vocab), dump_passes=False)
    compiled(hidden, mask, cos, sin, *weights, w_lm, logits)

    wq, wk, wv, w_dense, w_gate, w_up, w_down = weights
    normed = _rms_norm(hidden)
    q, k, v = _rope(normed @ wq, cos, sin), _rope(normed @ wk, cos, sin), normed @ wv
    probs = torch.softmax(q @ k.T * dim ** -0.5 + mask, dim=1)
    attn = hidden + (probs @ v) @ w_dense
    normed2 = _rms_norm(attn)
    gate, up = normed2 @ w_gate, normed2 @ w_up
    h1 = attn + (gate * torch.sigmoid(gate) * up) @ w_down
    expected = _rms_norm(h1) @ w_lm
    assert torch.allclose(logits, expected, rtol=1e-3, atol=1e-3), \
        (logits - expected).abs().max()


@pytest.mark.parametrize("builder", ["build_chained_snapshot_phase_fence",
                                     "build_chained_snapshot_manual_dummy_phase_fence"])
def test_phase_fence_programs_order_each_phase_after_the_last_through_task_id_arrays(builder):
    from pypto.runtime import RunConfig, run

    m = example("examples/utils/phase_fence_dep_compression.py")
    program = getattr(m, builder)()
    rows, cols = m.chained_snapshot_shape()
    data, out = torch.randn(rows, cols, generator=torch.Generator().manual_seed(7)), \
        torch.zeros(rows, cols)
    # A manual scope: only the arrays' deps order the phases; the race detector would
    # raise for a read or write no edge orders.
    run(program, data, out, config=RunConfig(detect_races=True, schedule_seed=3))
    assert torch.equal(out, data + 1.0)
