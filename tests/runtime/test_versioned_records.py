"""One reading of a versioned record (parse, require an object, check the schema's major
version): manifest.json, golden.json and the library index refuse alike; and one reading
of a file against the sha256 its record holds."""

import hashlib
import json

import pytest

from pypto.filesystem import read_recorded
from pypto.records import versioned_record
from pypto.runtime.errors import ArtifactError
from pypto.runtime.golden import GoldenError, GoldenRecord
from pypto.runtime.library_index import read_index
from pypto.runtime.manifest import Manifest


def _manifest(directory, text):
    (directory / "manifest.json").write_text(text)
    return Manifest.read(directory)


def _golden(directory, text):
    (directory / "golden.json").write_text(text)
    return GoldenRecord.read(directory)


def _index(directory, text):
    return read_index(str(directory / "library-a2a3sim.json"), text.encode(), "a2a3sim")


READERS = {"manifest": (_manifest, ArtifactError), "golden.json": (_golden, GoldenError),
           "the library index": (_index, ArtifactError)}


@pytest.mark.parametrize("noun", sorted(READERS))
def test_each_record_refuses_another_schema_major_version_in_the_same_words(tmp_path, noun):
    read, error = READERS[noun]
    with pytest.raises(error, match=f"{noun} schema version '2.0' is not supported: "
                                    "expected major version 1, found 2"):
        read(tmp_path, json.dumps({"schema_version": "2.0"}))


@pytest.mark.parametrize("noun", sorted(READERS))
def test_each_record_refuses_a_json_array(tmp_path, noun):
    read, error = READERS[noun]
    with pytest.raises(error, match=f"{noun} must be a JSON object"):
        read(tmp_path, "[]")


@pytest.mark.parametrize("noun", sorted(READERS))
def test_each_record_refuses_text_that_is_not_json(tmp_path, noun):
    read, error = READERS[noun]
    with pytest.raises(error, match=f"cannot read {noun}: it is not valid JSON"):
        read(tmp_path, '{"schema_version": ')


@pytest.mark.parametrize(("schema", "found"), [(1, "None"), (None, "None"), ("", ""),
                                               ("1x.0", "1x")])
def test_a_schema_version_that_is_no_version_string_is_refused(schema, found):
    with pytest.raises(ValueError, match=f"expected major version 1, found {found}$"):
        versioned_record("r.json", json.dumps({"schema_version": schema}).encode(), noun="r",
                         major=1, error=ValueError)


def test_a_record_file_read_by_path_and_its_bytes_read_alike(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"schema_version": "1.3", "x": [1]}')
    by_path = versioned_record(path, path, noun="r", major=1, error=ValueError)
    assert by_path == versioned_record(path, path.read_bytes(), noun="r", major=1,
                                       error=ValueError) == ({"schema_version": "1.3",
                                                              "x": [1]}, "1.3")


def test_a_recorded_file_that_changed_names_itself_its_record_both_hashes_and_the_remedy(
        tmp_path):
    path = tmp_path / "k.so"
    path.write_bytes(b"new")
    recorded = hashlib.sha256(b"old").hexdigest()
    with pytest.raises(ArtifactError) as info:
        read_recorded(path, recorded, ArtifactError, recorded_in="manifest.json",
                      remedy="rebuild it")
    assert str(info.value) == (f"{path}: sha256 mismatch: manifest.json records {recorded}, "
                               f"found {hashlib.sha256(b'new').hexdigest()}; rebuild it")


def test_a_recorded_file_that_is_missing_says_it_cannot_be_read(tmp_path):
    with pytest.raises(GoldenError, match=r"k\.so: cannot read: No such file"):
        read_recorded(tmp_path / "k.so", "0" * 64, GoldenError, recorded_in="golden.json",
                      remedy="-")


def test_a_recorded_file_that_is_intact_is_read(tmp_path):
    path = tmp_path / "k.so"
    path.write_bytes(b"data")
    assert read_recorded(path, hashlib.sha256(b"data").hexdigest().upper(), ValueError,
                         recorded_in="r", remedy="-") == b"data"
