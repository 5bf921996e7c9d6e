"""Fuzzing the loader: mutated manifests, library indexes, golden.json files, signatures
and package archives raise the documented errors (`ArtifactError` and its subclasses,
`GoldenError` among them) and nothing else: no crash, no internal exception.

Each example mutates a real file of a built library: JSON-level edits (a value replaced
by another of any type, a key removed or added, a value nested deep, a huge number), then
optionally the record's own digest recomputed as a forger would, then byte-level damage
(flipped bytes, truncation, insertion).  Archives are mutated member by member (dropped,
duplicated, reordered, renamed, their contents edited) and byte by byte.  The default
run tries FUZZ_EXAMPLES examples per target; `pytest -m slow` runs SLOW_EXAMPLES.
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from catalogue import PLATFORM, library, signing_key
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto.records import record_digest
from pypto.runtime import ArtifactError, DeviceUnavailableError, load_artifact, load_library
from pypto.runtime.golden import GoldenRecord
from pypto.spec.package import write_package

FUZZ_EXAMPLES = 60
SLOW_EXAMPLES = 1000

INDEX = f"library-{PLATFORM}.json"
ARTIFACT = f"{PLATFORM}/add/v"
GOLDEN = "goldens/add/v"
HUGE = "<a number of 5000 digits>"  # replaced in the text: Python cannot print one


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A built library, its signed package, and the pristine bytes of each record."""
    base = tmp_path_factory.mktemp("fuzz-loader")
    root = library(base / "lib")
    key, public = signing_key(base / "key.pem")
    package = write_package(base / "lib.tar", root, PLATFORM, key)
    pristine = {name: (root / name).read_bytes() for name in
                (f"{ARTIFACT}/manifest.json", f"{GOLDEN}/golden.json", INDEX)}
    return root, package, public, pristine


def _examples(count):
    return settings(max_examples=count, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=8)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, -1, 16, 2**63, "a2a3sim", "a5", "../x", "/etc", "in", "out", "fp32"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=6,
)


def _paths(value, prefix=()):
    """Every (path, container) position in a JSON value."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, prefix + (index,))
    return found


def _mutate_json(draw, raw):
    """`raw` after one to three structural edits."""
    for _ in range(draw(st.integers(1, 3))):
        # Half the edits hit a top-level field: every reader's first checks.
        top = [(key,) for key in raw] if isinstance(raw, dict) and raw else []
        path = draw(st.sampled_from(top if top and draw(st.booleans()) else _paths(raw)))
        op = draw(st.sampled_from(["replace"] * 4 + ["delete", "add", "nest", "huge"]))
        if not path:
            if op == "replace":
                raw = draw(json_values)
            continue
        parent = raw
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if op == "replace":
            parent[last] = draw(json_values)
        elif op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent[last], dict):
            parent[last][draw(st.text(max_size=6))] = draw(json_values)
        elif op == "nest":
            parent[last] = json.loads("[" * 40 + json.dumps(parent[last]) + "]" * 40)
        elif op == "huge":  # a number too long for Python's int parsing, or infinity
            parent[last] = HUGE if draw(st.booleans()) else 1e308 * 10
    return raw


def _damage_bytes(draw, data: bytes) -> bytes:
    """`data` with one to three flipped, cut or inserted bytes."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "truncate", "insert"]))
        if op == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


@st.composite
def mutated_records(draw, pristine: bytes, digest_field: str):
    try:
        raw = json.loads(pristine)
    except ValueError:  # damaged by an earlier mutation already
        return _damage_bytes(draw, pristine)
    if draw(st.integers(0, 3)):
        raw = _mutate_json(draw, raw)
    if isinstance(raw, dict) and draw(st.integers(0, 3)):  # a forger recomputes the digest
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            raw[digest_field] = record_digest(raw, digest_field)
    try:
        text = json.dumps(raw, sort_keys=True, indent=2)
    except (ValueError, RecursionError):
        text = "[" * 100_000
    data = text.replace(json.dumps(HUGE), "9" * 5000).encode()
    return data if draw(st.integers(0, 3)) else _damage_bytes(draw, data)


def _restore(root, pristine):
    for name, data in pristine.items():
        (root / name).write_bytes(data)


def _fuzz_manifest(built, data):
    root, _, _, pristine = built
    _restore(root, pristine)
    path = root / ARTIFACT / "manifest.json"
    path.write_bytes(data.draw(mutated_records(pristine[f"{ARTIFACT}/manifest.json"],
                                               "manifest_sha256")))
    with contextlib.suppress(ArtifactError, DeviceUnavailableError):
        load_artifact(root / ARTIFACT)


def _fuzz_index(built, data):
    root, _, _, pristine = built
    _restore(root, pristine)
    (root / INDEX).write_bytes(data.draw(mutated_records(pristine[INDEX], "index_sha256")))
    with contextlib.suppress(ArtifactError):
        load_library(root, allow_unsigned=True).verify()


def _fuzz_golden(built, data):
    root, _, _, pristine = built
    _restore(root, pristine)
    golden = root / GOLDEN
    (golden / "golden.json").write_bytes(
        data.draw(mutated_records(pristine[f"{GOLDEN}/golden.json"], "golden_sha256")))
    with contextlib.suppress(ArtifactError):  # GoldenError is one
        GoldenRecord.read(golden)


@st.composite
def mutated_archives(draw, package: Path):
    with tarfile.open(package) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
    for _ in range(draw(st.integers(0, 3))):
        if not members:
            break
        at = draw(st.integers(0, len(members) - 1))
        op = draw(st.sampled_from(["drop", "duplicate", "swap", "rename", "edit", "record"]))
        name, content = members[at]
        if op == "drop":
            del members[at]
        elif op == "duplicate":
            members.insert(draw(st.integers(0, len(members))), (name, content))
        elif op == "swap":
            other = draw(st.integers(0, len(members) - 1))
            members[at], members[other] = members[other], members[at]
        elif op == "rename":
            members[at] = (draw(st.sampled_from(["x", "../x", "/x", name + "/x",
                                                 name.split("/")[0] + "/extra"])), content)
        elif op == "edit":
            members[at] = (name, _damage_bytes(draw, content))
        elif name.endswith((".json", ".sig")):
            digest = {"manifest.json": "manifest_sha256", "golden.json": "golden_sha256",
                      INDEX: "index_sha256"}.get(name.rsplit("/", 1)[-1], "signature")
            members[at] = (name, draw(mutated_records(content, digest)))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content in members:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return _damage_bytes(draw, buffer.getvalue()) if draw(st.booleans()) else buffer.getvalue()


def _fuzz_archive(built, tmp, data):
    _, package, public, _ = built
    archive = tmp / "fuzzed.tar"
    archive.write_bytes(data.draw(mutated_archives(package)))
    try:
        with load_library(archive, trusted_keys=[public],
                          allow_unsigned=data.draw(st.booleans())) as lib:
            lib.verify()
    except ArtifactError:
        pass


TARGETS = {"manifest": _fuzz_manifest, "index": _fuzz_index, "golden": _fuzz_golden}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_mutated_records_raise_only_the_documented_errors(built, target):
    @_examples(FUZZ_EXAMPLES)
    @given(data=st.data())
    def run(data):
        TARGETS[target](built, data)

    run()


def test_mutated_archives_raise_only_the_documented_errors(built, tmp_path):
    @_examples(FUZZ_EXAMPLES)
    @given(data=st.data())
    def run(data):
        _fuzz_archive(built, tmp_path, data)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(TARGETS) + ["archive"])
def test_a_thousand_mutations_of_each_file_raise_only_the_documented_errors(built, tmp_path,
                                                                            target):
    @_examples(SLOW_EXAMPLES)
    @given(data=st.data())
    def run(data):
        if target == "archive":
            _fuzz_archive(built, tmp_path, data)
        else:
            TARGETS[target](built, data)

    run()

