"""Opening a library reads its index alone; each variant is checked on its first use."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import zlib

import pytest
import torch

from pypto.runtime import ArtifactError, load_library
from pypto.runtime.library_index import index_digest

INDEX = "library-a5sim.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory, counting_cxx):
    """Three synthetic specs (k00, k01, k02: out = a * scale, one variant `v` each) built
    for a5sim."""
    from scons_project import new_project

    base = tmp_path_factory.mktemp("library-open")
    project = new_project(base / "lib", base / "cache", counting_cxx, specs=3, distinct=True)
    project.scons("platform=a5sim", "-j2")
    return project.build


@pytest.fixture
def library_dir(built, tmp_path):
    """A copy of the built library to damage."""
    root = tmp_path / "library"
    shutil.copytree(built, root, ignore=shutil.ignore_patterns("specs", "checks", ".*"))
    return root


def _flip(path, offset=None):
    data = bytearray(path.read_bytes())
    before = hashlib.sha256(data).hexdigest()
    data[len(data) // 2 if offset is None else offset] ^= 0x01
    path.write_bytes(bytes(data))
    return before, hashlib.sha256(data).hexdigest()


def _runs(variant, scale):
    a = torch.randn(8, 32)
    out = torch.empty(8, 32)
    variant.run(a, out)
    assert torch.equal(out, (a.double() * scale).float())


VARIANT_FILES = [
    "a5sim/k01/v/kernels/scale_incore_0.so",
    "a5sim/k01/v/orchestration.so",
    "a5sim/k01/v/manifest.json",
    "goldens/k01/v/golden.json",
    "goldens/k01/v/inputs.safetensors",
    "goldens/k01/v/expected.safetensors",
]


@pytest.mark.parametrize("relpath", VARIANT_FILES)
def test_a_damaged_variant_opens_fails_on_use_naming_the_file_and_the_others_run(
        library_dir, relpath):
    recorded, found = _flip(library_dir / relpath)
    library = load_library(library_dir, platform="a5sim", allow_unsigned=True)
    damaged = library["k01"]["v"]
    for use in (damaged.verify, lambda: damaged.run(torch.zeros(8, 32), torch.empty(8, 32)),
                damaged.check, damaged.golden_record, lambda: damaged.manifest):
        with pytest.raises(ArtifactError) as info:
            use()
        message = str(info.value)
        assert relpath.rsplit("/", 1)[-1] in message and "sha256 mismatch" in message, message
        assert recorded in message and found in message, message
    assert not damaged.verified
    _runs(library["k00"]["v"], 1.0)
    assert all(row.passed for row in library["k02"]["v"].check())


def test_a_missing_variant_directory_opens_and_fails_on_use_naming_the_file(library_dir):
    shutil.rmtree(library_dir / "a5sim" / "k02")
    library = load_library(library_dir, platform="a5sim", allow_unsigned=True)
    with pytest.raises(ArtifactError, match="k02/v/manifest.json: cannot read"):
        library["k02"]["v"].verify()
    _runs(library["k01"]["v"], 1.125)


def test_verify_checks_every_variant_and_names_the_damaged_file(library_dir):
    assert load_library(library_dir, platform="a5sim", allow_unsigned=True).verify() is None
    _flip(library_dir / "goldens/k02/v/expected.safetensors")
    library = load_library(library_dir, platform="a5sim", allow_unsigned=True)
    with pytest.raises(ArtifactError, match="expected.safetensors: sha256 mismatch"):
        library.verify()
    assert library["k00"]["v"].verified and not library["k02"]["v"].verified


def test_a_variant_is_checked_once_then_runs_from_its_mapping(library_dir):
    library = load_library(library_dir, platform="a5sim", allow_unsigned=True)
    variant = library["k00"]["v"]
    assert not variant.verified
    _runs(variant, 1.0)
    assert variant.verified and variant.load() is variant.load()


def _damage(data: bytearray, how: str, rng: random.Random) -> bytes:
    if how == "truncate":
        del data[rng.randrange(len(data) - 1):]  # at least two bytes: more than a newline
    else:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_a_damaged_index_is_refused_at_open_naming_it(library_dir, how):
    index = library_dir / INDEX
    pristine = index.read_bytes()
    rng = random.Random(zlib.crc32(how.encode()))
    for _ in range(20):
        index.write_bytes(_damage(bytearray(pristine), how, rng))
        with pytest.raises(ArtifactError) as info:
            load_library(library_dir, platform="a5sim", allow_unsigned=True)
        assert str(info.value).startswith(str(index)), str(info.value)


def test_an_edited_index_entry_is_refused_by_the_index_digest(library_dir):
    index = library_dir / INDEX
    raw = json.loads(index.read_text())
    raw["kernels"]["k00"]["variants"]["v"]["artifact"] = "a5sim/k01/v"  # swaps two kernels
    index.write_text(json.dumps(raw, sort_keys=True, indent=2) + "\n")
    with pytest.raises(ArtifactError, match="index_sha256 mismatch: the index records"):
        load_library(library_dir, platform="a5sim", allow_unsigned=True)
    del raw["index_sha256"]
    index.write_text(json.dumps(raw, sort_keys=True, indent=2) + "\n")
    with pytest.raises(ArtifactError, match="lacks 'index_sha256', which schema 1.2 records"):
        load_library(library_dir, platform="a5sim", allow_unsigned=True)


def test_a_schema_1_0_index_without_a_digest_still_opens(library_dir):
    index = library_dir / INDEX
    raw = json.loads(index.read_text())
    del raw["index_sha256"]
    raw["schema_version"] = "1.0"
    index.write_text(json.dumps(raw, sort_keys=True, indent=2) + "\n")
    _runs(load_library(library_dir, platform="a5sim", allow_unsigned=True)["k02"]["v"], 1.25)


def test_an_index_cannot_point_outside_the_library(library_dir):
    index = library_dir / INDEX
    raw = json.loads(index.read_text())
    raw["kernels"]["k00"]["variants"]["v"]["golden"] = "../goldens/k00/v"
    raw["index_sha256"] = index_digest(raw)
    index.write_text(json.dumps(raw, sort_keys=True, indent=2) + "\n")
    with pytest.raises(ArtifactError, match="'../goldens/k00/v' must stay inside the library"):
        load_library(library_dir, platform="a5sim", allow_unsigned=True)


def test_the_index_is_deterministic_and_records_its_own_digest(built):
    text = (built / INDEX).read_text()
    raw = json.loads(text)
    assert raw["schema_version"] == "1.2" and raw["index_sha256"] == index_digest(raw)
    assert text == json.dumps(raw, sort_keys=True, indent=2) + "\n"
    assert sorted(raw["kernels"]) == ["k00", "k01", "k02"]
