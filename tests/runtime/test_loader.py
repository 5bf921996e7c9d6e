"""load_artifact: every check happens before a binary is mapped, and refusals say why."""

import ctypes
import hashlib
import json
from pathlib import Path

import pytest

from pypto.runtime import (
    ArtifactError,
    DeviceUnavailableError,
    LoadedProgram,
    PyptoRuntimeError,
    load_artifact,
)
from pypto.runtime.abi import ABI_VERSION


def edit_manifest(artifact: Path, edit) -> None:
    """Rewrites the artifact's manifest.json after `edit(manifest_dict)`."""
    path = artifact / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest))


@pytest.fixture
def no_mapping(monkeypatch):
    """Fails the test if anything is mapped with ctypes.CDLL."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"a binary was mapped: {args}")

    monkeypatch.setattr(ctypes, "CDLL", refuse)


def test_a_valid_artifact_loads_with_its_kernels_in_manifest_order(make_artifact):
    program = load_artifact(make_artifact("pipeline"), platform="a2a3sim")
    assert isinstance(program, LoadedProgram)
    assert program.platform == "a2a3sim"
    assert program.kernel_names == ("add_one", "times_two")
    assert program.manifest.outputs == (1,)


def test_artifact_errors_are_runtime_errors():
    assert issubclass(ArtifactError, PyptoRuntimeError)


def test_tampered_kernel_is_refused_before_mapping_naming_file_and_both_hashes(
    make_artifact, no_mapping
):
    artifact = make_artifact("pipeline")
    binary = artifact / "kernels" / "times_two.so"
    expected = json.loads((artifact / "manifest.json").read_text())["kernels"][1]["sha256"]
    data = bytearray(binary.read_bytes())
    data[len(data) // 2] ^= 0xFF
    binary.write_bytes(data)
    found = hashlib.sha256(data).hexdigest()
    with pytest.raises(ArtifactError) as info:
        load_artifact(artifact)
    message = str(info.value)
    assert "kernels/times_two.so" in message
    assert f"manifest.json records {expected}" in message and f"found {found}" in message


def test_tampered_orchestration_is_refused(make_artifact, no_mapping):
    artifact = make_artifact("pipeline")
    with open(artifact / "orchestration.so", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ArtifactError, match=r"orchestration\.so: sha256 mismatch: "
                                            r"manifest\.json records [0-9a-f]{64}"):
        load_artifact(artifact)


def test_wrong_platform_names_expected_and_found(make_artifact, no_mapping):
    with pytest.raises(ArtifactError, match="expected 'a5sim', found 'a2a3sim'"):
        load_artifact(make_artifact("pipeline"), platform="a5sim")


def test_unknown_requested_platform_is_a_value_error(make_artifact):
    with pytest.raises(ValueError, match="a2a3sim"):
        load_artifact(make_artifact("pipeline"), platform="a9")


def test_wrong_abi_version_is_refused(make_artifact, no_mapping):
    with pytest.raises(
        ArtifactError,
        match=f"ABI version mismatch: expected {ABI_VERSION}, found {ABI_VERSION + 1}",
    ):
        load_artifact(make_artifact("pipeline", abi_version=ABI_VERSION + 1))


def test_other_schema_major_version_is_refused(make_artifact, no_mapping):
    with pytest.raises(ArtifactError, match="expected major version 1, found 2"):
        load_artifact(make_artifact("pipeline", schema_version="2.0"))


def test_newer_schema_minor_version_loads(make_artifact):
    assert load_artifact(make_artifact("pipeline", schema_version="1.7")).platform == "a2a3sim"


def test_missing_manifest_is_refused(tmp_path):
    with pytest.raises(ArtifactError, match="manifest.json: no manifest"):
        load_artifact(tmp_path)


def test_corrupt_manifest_names_the_file(make_artifact):
    artifact = make_artifact("pipeline")
    (artifact / "manifest.json").write_text('{"schema_version": "1.0",')
    with pytest.raises(ArtifactError, match=r"manifest\.json: cannot read manifest"):
        load_artifact(artifact)


def test_missing_field_is_named(make_artifact):
    artifact = make_artifact("pipeline")
    edit_manifest(artifact, lambda m: m["kernels"][0].pop("sha256"))
    with pytest.raises(ArtifactError, match=r"lacks 'kernels\[0\]\.sha256'"):
        load_artifact(artifact)


def test_device_platform_artifact_cannot_run_here(make_artifact, no_mapping):
    artifact = make_artifact("pipeline", platform="a2a3")
    with pytest.raises(DeviceUnavailableError, match="device platform 'a2a3'.*no NPU runtime"):
        load_artifact(artifact)


def test_binary_outside_the_artifact_is_refused(make_artifact, no_mapping):
    artifact = make_artifact("pipeline")
    edit_manifest(artifact, lambda m: m["orchestration"].update(file="../elsewhere.so"))
    with pytest.raises(ArtifactError, match="outside the artifact directory"):
        load_artifact(artifact)


def test_missing_kernel_symbol_is_named(make_artifact):
    artifact = make_artifact("pipeline")
    edit_manifest(artifact, lambda m: m["kernels"][0].update(name="no_such_kernel"))
    with pytest.raises(ArtifactError, match="does not export the symbol 'no_such_kernel'"):
        load_artifact(artifact)


def test_unknown_platform_in_the_manifest_is_refused(make_artifact, no_mapping):
    with pytest.raises(ArtifactError, match="unknown platform 'a7sim'"):
        load_artifact(make_artifact("pipeline", platform="a7sim"))
