"""The build writes manifest.json by the loader's schema: one description for both sides."""

import json

import pytest

from pypto.runtime import ArtifactError, load_artifact
from pypto.runtime.abi import ABI_VERSION
from pypto.runtime.manifest import DIGEST_SCHEMAS, SCHEMA_VERSION, Manifest, manifest_record


def fields_of(artifact) -> dict:
    """What the build knows of an artifact: its manifest less the schema's own entries."""
    manifest = json.loads((artifact / "manifest.json").read_text())
    return {k: v for k, v in manifest.items()
            if k not in ("schema_version", "abi_version", "manifest_sha256")}


def test_a_written_manifest_records_the_schema_and_abi_this_runtime_reads(make_artifact):
    artifact = make_artifact("pipeline")
    record = manifest_record(fields_of(artifact), artifact / "manifest.json")
    assert (record["schema_version"], record["abi_version"]) == (SCHEMA_VERSION, ABI_VERSION)
    assert SCHEMA_VERSION in DIGEST_SCHEMAS
    (artifact / "manifest.json").write_text(json.dumps(record))
    assert load_artifact(artifact).manifest == Manifest.read(artifact)


def test_a_manifest_the_loader_would_refuse_is_refused_before_it_is_written(make_artifact):
    artifact = make_artifact("pipeline")
    fields = fields_of(artifact)
    del fields["entry"]
    with pytest.raises(ArtifactError, match=r"manifest\.json: manifest lacks 'entry'"):
        manifest_record(fields, artifact / "manifest.json")
