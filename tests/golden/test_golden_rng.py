"""SpecRNG version 2: Philox4x32-10 as Random123 specifies it, and the documented mappings
from its bits to values (docs/building.md), so that inputs are a pure function of the
case."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pypto.golden import GENERATOR_ID, SpecRNG
from pypto.golden.rng import generator_version, philox4x32
from pypto.spec import scalar, tensor

# Random123's kat_vectors: counter (4 words), key (2 words) -> output (4 words).
PHILOX_KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, want", PHILOX_KNOWN_ANSWERS)
def test_philox4x32_10_gives_random123s_known_answers(counter, key, want):
    got = philox4x32(np.array([counter], dtype=np.uint32), key)
    assert tuple(int(w) for w in got[0]) == want


def test_a_draws_words_are_philox_blocks_of_its_counter_low_half_first():
    rng = SpecRNG((0xA4093822 << 32) | 0x299F31D0)
    rng.bits(1)  # draw 0
    words = rng.bits(5)  # draw 1: blocks (0, 0, 1, 0), (1, 0, 1, 0), (2, 0, 1, 0)
    blocks = philox4x32(np.array([[j, 0, 1, 0] for j in range(3)], dtype=np.uint32),
                        (0x299F31D0, 0xA4093822)).astype(np.uint64).reshape(-1, 2)
    want = blocks[:, 0] | (blocks[:, 1] << np.uint64(32))
    np.testing.assert_array_equal(words, want[:5])


def test_a_draw_depends_on_its_own_shape_and_position_only():
    like = tensor("fp32", [8, 8])
    first = SpecRNG(7)
    first.normal(tensor("fp32", [3, 5]))
    second = SpecRNG(7)
    second.uniform(tensor("fp16", [100]), -1, 1)
    assert torch.equal(first.normal(like), second.normal(like))
    assert not torch.equal(SpecRNG(7).normal(like), first.normal(like))


def test_normals_are_standard_and_reach_the_tails():
    x = SpecRNG(3).normal(tensor("fp32", [1000, 100])).double()
    assert abs(x.mean().item()) < 0.01 and abs(x.std().item() - 1) < 0.01
    assert 4 < x.abs().max().item() < 8.3
    shifted = SpecRNG(3).normal(tensor("fp32", [1000, 100]), mean=1.0, std=3.0)
    # z * std + mean in float64 from the same z, then rounded: within FP32's roundings of x.
    assert torch.allclose(shifted.double(), x * 3 + 1, rtol=0, atol=32 * 2.0**-24)


def test_uniforms_cover_the_range_on_a_grid_of_2_to_the_minus_24():
    u = SpecRNG(4).uniform(tensor("fp32", [100000]), 0.0, 1.0).double()
    assert 0 <= u.min().item() < 1e-4 and 1 - 1e-4 < u.max().item() < 1
    assert torch.equal(u * 2**24, (u * 2**24).round())
    assert abs(u.mean().item() - 0.5) < 0.005


def test_integers_are_uniform_over_the_range_and_exact_in_a_float_dtype():
    k = SpecRNG(5).integers(tensor("int32", [70000]), -3, 4)
    counts = np.bincount(k.numpy() + 3)
    assert k.dtype == torch.int32 and len(counts) == 7 and counts.min() > 9500
    h = SpecRNG(5).integers(tensor("fp16", [70000]), -3, 4)
    assert h.dtype == torch.float16 and torch.equal(h.int(), k)


def test_choice_takes_table_entries_rounded_to_the_dtype():
    table = [math.ldexp(1.0, e) for e in range(-30, 30)] + [0.1]
    x = SpecRNG(6).choice(tensor("fp32", [4000]), table)
    assert set(x.tolist()) == {float(np.float32(v)) for v in table}


def test_scalars_are_python_numbers_rounded_to_their_dtype():
    rng = SpecRNG(8)
    value = rng.uniform(scalar("fp16"), 0.0, 1.0)
    assert isinstance(value, float) and float(np.float16(value)) == value
    assert isinstance(rng.integers(scalar("int64"), 0, 10), int)


@pytest.mark.parametrize("draw, message", [
    (lambda rng: rng.integers(tensor("int32", [2]), 0, (1 << 32) + 1), r"wider than 2\^32"),
    (lambda rng: rng.integers(tensor("int8", [2]), 0, 1000), "is not a INT8 value"),
    (lambda rng: rng.uniform(tensor("fp32", [2]), 1.0, 1.0), "need low < high"),
    (lambda rng: rng.normal(tensor("int32", [2])), "not a float dtype"),
])
def test_impossible_draws_are_refused(draw, message):
    with pytest.raises((ValueError, TypeError), match=message):
        draw(SpecRNG(9))


def test_the_generator_id_names_its_version():
    assert generator_version(GENERATOR_ID) == 2
    assert generator_version("pypto.golden.SpecRNG/1 torch.Generator(mt19937)") == 1
    assert generator_version("my own") is None and generator_version(None) is None
