"""The library's goldens come from each spec's seeded generator and reference, and
regenerating them gives the same bytes: every golden the session's `scons` build wrote is
made again here, in this process, and compared file by file."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
from shipped_library import shipped_specs, spec_modules

from pypto.golden import record_golden
from pypto.golden.record import generate_inputs
from pypto.golden.rng import GENERATOR_ID, seed_for
from pypto.runtime import GoldenRecord

# Every test here needs the whole shipped library built for both simulators (minutes).
pytestmark = pytest.mark.slow

FILES = ("golden.json", "inputs.safetensors", "expected.safetensors")


def cases():
    return [(kernel, variant) for module in spec_modules() for kernel in shipped_specs(module)
            for variant in kernel.variants]


@pytest.fixture(scope="module")
def regenerated(library, tmp_path_factory):
    """Every golden written again into a fresh directory: (kernel, variant) -> directory."""
    root = tmp_path_factory.mktemp("regenerated")
    found = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tolerance diagnostics, reported by the build
        for kernel, variant in cases():
            found[kernel.name, variant] = record_golden(kernel.golden_case(variant),
                                                        root / kernel.name / variant)
    return found


def test_every_golden_regenerates_byte_for_byte(library, regenerated):
    assert len(regenerated) >= 40
    for (kernel, variant), directory in regenerated.items():
        built = library.golden(kernel, variant)
        for name in FILES:
            assert (directory / name).read_bytes() == (built / name).read_bytes(), (
                kernel, variant, name)


def test_goldens_record_the_seeded_generator_of_their_case(library):
    for kernel, variant in cases():
        record = json.loads((library.golden(kernel.name, variant) / "golden.json").read_text())
        assert record["seed"] == seed_for(kernel.name, variant)
        assert record["generator"] == GENERATOR_ID
        assert set(record["tolerance"]) == set(kernel.golden_case(variant).outputs)
        assert all(t["reason"] for t in record["tolerance"].values()), (kernel.name, variant)


def test_golden_inputs_are_what_the_generator_draws_for_the_case(library):
    for kernel, variant in cases():
        drawn = generate_inputs(kernel.golden_case(variant))
        recorded = GoldenRecord.read(library.golden(kernel.name, variant))
        tensors = recorded.load_inputs()
        for name, value in drawn.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value.view(torch.uint8), tensors[name].view(torch.uint8))
            else:
                assert recorded.scalars[name] == value
