"""Signed packages: a forged package is refused with `trusted_keys`, a signed one loads,
an unsigned one needs `allow_unsigned=True`; unpacking is bounded by the index, and every
refusal names the archive and the member, never a temporary path."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tarfile

import pytest
import torch
from catalogue import PLATFORM, assert_user_facing, edit_manifest, library, signing_key

from pypto.runtime import ArtifactError, load_library, unpack
from pypto.runtime.library_index import index_digest
from pypto.runtime.manifest import manifest_digest
from pypto.spec.package import write_package

TOP = f"lib-1.0-{PLATFORM}"
INDEX = f"library-{PLATFORM}.json"
KERNEL = f"{PLATFORM}/add/v/orchestration.so"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The library, the publisher's key and the package it signed."""
    base = tmp_path_factory.mktemp("packages")
    root = library(base / "lib")
    key, public = signing_key(base / "publisher.pem")
    return root, key, public, write_package(base / "signed.tar", root, PLATFORM, key)


def _members(archive) -> list[tuple[str, bytes]]:
    with tarfile.open(archive) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]


def _tar(path, members, *, compress=False):
    """A tar of `members`: (name, bytes) for regular files, (name, TarInfo) as given."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content in members:
            if isinstance(content, tarfile.TarInfo):
                tar.addfile(content)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    data = buffer.getvalue()
    path.write_bytes(gzip.compress(data, compresslevel=1) if compress else data)
    return path


def _refused(archive, **kwargs) -> str:
    with pytest.raises(ArtifactError) as info:
        load_library(archive, **kwargs)
    message = str(info.value)
    assert message.startswith(str(archive)), message
    assert "pypto-library-" not in message, message  # no temporary path
    assert_user_facing(info.value)
    return message


def test_a_signed_package_loads_with_its_key_and_runs(built):
    root, key, public, signed = built
    with load_library(signed, trusted_keys=[public]) as lib:
        assert lib.signed_by == public
        a, b, out = torch.randn(16, 128), torch.randn(16, 128), torch.zeros(16, 128)
        lib["add"]["v"].run(a, b, out)
        assert torch.equal(out, a + b)
        assert lib.check().passed


@pytest.mark.parametrize("form", ["hex", "raw", "pem_path", "pem_text", "private_key_path"])
def test_trusted_keys_take_every_usual_form_of_a_public_key(built, form):
    from cryptography.hazmat.primitives import serialization

    root, key, public, signed = built
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    pem_path = key.with_name("publisher.pub.pem")
    pem_path.write_bytes(pem)
    trusted = {"hex": public, "raw": bytes.fromhex(public), "pem_path": pem_path,
               "pem_text": pem.decode(), "private_key_path": key}[form]
    with load_library(signed, trusted_keys=[trusted]) as lib:
        assert lib.signed_by == public


def test_packaging_is_reproducible_with_a_signature(built, tmp_path):
    root, key, public, signed = built
    assert write_package(tmp_path / "again.tar", root, PLATFORM, key).read_bytes() == \
        signed.read_bytes()
    names = [name for name, _ in _members(signed)]
    assert names[:2] == [f"{TOP}/{INDEX}", f"{TOP}/{INDEX}.sig"]
    assert names[2:] == sorted(names[2:])


def test_an_unsigned_package_opens_only_when_allowed_explicitly(built, tmp_path):
    root = built[0]
    unsigned = write_package(tmp_path / "unsigned.tar", root, PLATFORM)
    assert "the library is not signed; pass allow_unsigned=True" in _refused(unsigned)
    assert "trusted_keys asks for a signature" in _refused(unsigned, trusted_keys=[built[2]])
    with load_library(unsigned, allow_unsigned=True) as lib:
        assert lib.signed_by is None and lib.check().passed


def test_a_signed_package_without_trusted_keys_says_how_to_check_it(built):
    signed, public = built[3], built[2]
    assert f"signed by key {public}; pass trusted_keys=[...]" in _refused(signed)
    with load_library(signed, allow_unsigned=True) as lib:
        assert lib.signed_by is None  # opened unchecked, as asked


def _forge(root, tmp_path):
    """A copy of the library whose kernel is replaced, with every digest recomputed: the
    manifest's record of the binary, the manifest's own digest, the index's record of
    the manifest and of every file, the index's own digest."""
    forged = tmp_path / "forged"
    shutil.copytree(root, forged)
    binary = forged / KERNEL
    binary.write_bytes(binary.read_bytes() + b"\0payload")
    data = binary.read_bytes()
    artifact = forged / PLATFORM / "add" / "v"
    edit_manifest(artifact, lambda raw: raw["orchestration"].update(
        sha256=hashlib.sha256(data).hexdigest()))
    index_path = forged / INDEX
    index = json.loads(index_path.read_text())
    for relpath in index["files"]:
        content = (forged / relpath).read_bytes()
        index["files"][relpath] = {"sha256": hashlib.sha256(content).hexdigest(),
                                   "size": len(content)}
    manifest = (artifact / "manifest.json").read_bytes()
    index["kernels"]["add"]["variants"]["v"]["manifest_sha256"] = \
        hashlib.sha256(manifest).hexdigest()
    index["index_sha256"] = index_digest(index)
    index_path.write_text(json.dumps(index, sort_keys=True, indent=2) + "\n")
    assert manifest_digest(json.loads(manifest)) == json.loads(manifest)["manifest_sha256"]
    return forged


def _with_signature_of(archive, signed, into):
    """`archive` with the signature member of `signed` put back after its index."""
    signature = dict(_members(signed))[f"{TOP}/{INDEX}.sig"]
    members = _members(archive)
    return _tar(into, members[:1] + [(f"{TOP}/{INDEX}.sig", signature)] + members[1:])


def test_a_forged_package_with_the_signature_kept_is_refused(built, tmp_path):
    root, key, public, signed = built
    forged = write_package(tmp_path / "forged.tar", _forge(root, tmp_path), PLATFORM)
    resigned = _with_signature_of(forged, signed, tmp_path / "kept.tar")
    message = _refused(resigned, trusted_keys=[public])
    assert f"the signature by key {public} does not verify" in message


def test_a_forged_package_with_the_signature_removed_is_refused(built, tmp_path):
    root, key, public, signed = built
    forged = write_package(tmp_path / "forged.tar", _forge(root, tmp_path), PLATFORM)
    assert "not signed, and trusted_keys asks for a signature" in \
        _refused(forged, trusted_keys=[public])


def test_a_package_signed_by_another_key_is_refused(built, tmp_path):
    root, key, public, signed = built
    other, other_public = signing_key(tmp_path / "forger.pem")
    forged = write_package(tmp_path / "forged.tar", _forge(root, tmp_path), PLATFORM, other)
    message = _refused(forged, trusted_keys=[public])
    assert f"signed by key {other_public}, which is not among the trusted_keys" in message


def test_a_member_changed_after_signing_is_refused_naming_it(built, tmp_path):
    root, key, public, signed = built
    members = [(n, d + b"\0" if n.endswith(KERNEL) else d) for n, d in _members(signed)]
    message = _refused(_tar(tmp_path / "changed.tar", members), trusted_keys=[public])
    assert f"member '{TOP}/{KERNEL}': it is" in message and "the index lists" in message


def test_a_directory_library_checks_the_signature_beside_its_index(built, tmp_path):
    root, key, public, signed = built
    with tarfile.open(signed) as tar:
        tar.extractall(tmp_path, filter="data")
    unpacked = tmp_path / TOP
    assert load_library(unpacked, trusted_keys=[public]).signed_by == public
    index = unpacked / INDEX
    index.write_bytes(index.read_bytes().replace(b'"1.0"', b'"1.1"'))
    with pytest.raises(ArtifactError, match="does not verify"):
        load_library(unpacked, trusted_keys=[public])


def test_errors_after_unpacking_name_the_archive_and_the_member(built, tmp_path):
    root, key, public, signed = built
    bad = tmp_path / "bad-build"
    shutil.copytree(root, bad)
    edit_manifest(bad / PLATFORM / "add" / "v",
                  lambda raw: raw["core"].update(Vec=16))  # signed by the publisher, yet bad
    (bad / INDEX).unlink()
    from pypto.spec.package import LibraryEntry, write_library_index

    write_library_index(bad, "lib", "1.0", PLATFORM, [LibraryEntry(
        "add", "add.py", "v", f"{PLATFORM}/add/v", "goldens/add/v")])
    archive = write_package(tmp_path / "bad.tar", bad, PLATFORM, key)
    with load_library(archive, trusted_keys=[public]) as lib, \
            pytest.raises(ArtifactError) as info:
        lib["add"]["v"].run(torch.zeros(16, 128), torch.zeros(16, 128), torch.zeros(16, 128))
    message = str(info.value)
    assert message.startswith(f"{archive}:{TOP}/{PLATFORM}/add/v/manifest.json: "), message
    assert "are not those of 'a2a3sim'" in message and "pypto-library-" not in message


def _pax_bomb(members):
    """A member whose PAX header holds 64 MiB, which gzip shrinks to about 64 KiB."""
    info = tarfile.TarInfo(f"{TOP}/{PLATFORM}/add/v/manifest.json")
    info.pax_headers = {"comment": "x" * (64 << 20)}
    return members[:2] + [(info.name, info)] + members[2:]


def _member(name, kind):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    return info


# Archives no `scons package` writes: (the members, what the refusal says).
BAD_ARCHIVES = {
    "an_unlisted_member": (lambda m: m + [(f"{TOP}/extra.so", b"\x7fELF")],
                           f"member '{TOP}/extra.so': the library index does not list it"),
    "a_member_leaving_the_top": (lambda m: m + [(f"{TOP}/../escape", b"x")],
                                 f"member '{TOP}/../escape': the library index does not list"),
    "an_absolute_member": (lambda m: m + [("/etc/cron.d/x", b"x")],
                           "member '/etc/cron.d/x': the library index does not list it"),
    "a_symbolic_link": (lambda m: [(n, _member(n, tarfile.SYMTYPE)) if n.endswith(KERNEL) else
                                   (n, d) for n, d in m],
                        f"member '{TOP}/{KERNEL}': it is not a regular file"),
    "a_duplicate_member": (lambda m: m + [m[-1]], "it appears twice in the archive"),
    "a_missing_member": (lambda m: [(n, d) for n, d in m if not n.endswith(KERNEL)],
                         f"files the archive does not hold, first {TOP}/{KERNEL}"),
    "the_index_not_first": (lambda m: m[2:] + m[:2],
                            "a package starts with its library index"),
    "no_members": (lambda m: [], "the archive is empty"),
    "a_decompression_bomb": (_pax_bomb, "bytes its index allows (a decompression bomb"),
    "an_index_nested_deeply": (
        lambda m: [(m[0][0], b"[" * 100_000 + b"]" * 100_000)] + m[2:],
        "cannot read the library index: it nests objects and lists deeper than 32"),
}


@pytest.mark.parametrize("name", sorted(BAD_ARCHIVES))
def test_a_bad_archive_is_refused_naming_the_archive_and_the_member(built, tmp_path, name):
    make, message = BAD_ARCHIVES[name]
    archive = _tar(tmp_path / "bad.tar.gz", make(_members(built[3])), compress=True)
    found = _refused(archive, trusted_keys=[built[2]], allow_unsigned=True)
    assert message in found, found


def test_a_compressed_package_loads(built, tmp_path):
    archive = _tar(tmp_path / "lib.tar.gz", _members(built[3]), compress=True)
    with load_library(archive, trusted_keys=[built[2]]) as lib:
        assert lib.check().passed


@pytest.mark.parametrize("damage", ["truncated", "not_a_tar"])
def test_an_unreadable_archive_is_refused(built, tmp_path, damage):
    data = built[3].read_bytes()
    archive = tmp_path / "bad.tar"
    archive.write_bytes(data[: len(data) // 3] if damage == "truncated" else b"\x00junk" * 999)
    message = _refused(archive, allow_unsigned=True)
    # A tar cut inside a member's data reads as a shorter archive (tarfile stops at the
    # end of the file): it is refused for the files its index lists and it lacks; one cut
    # inside a header, or junk, does not read at all.
    assert "not a readable package archive" in message or (
        damage == "truncated" and "the archive does not hold" in message), message


def test_unpacking_stops_at_pyptos_own_limits_whatever_the_index_lists(built, monkeypatch):
    monkeypatch.setattr(unpack, "UNPACK_LIMIT_MEMBERS", 3)
    assert "more than pypto unpacks (3 files" in _refused(built[3], trusted_keys=[built[2]])


def test_a_deeply_nested_index_of_a_directory_is_refused(built, tmp_path):
    root = tmp_path / "lib"
    shutil.copytree(built[0], root)
    (root / INDEX).write_text('{"a": ' * 5000 + "1" + "}" * 5000)
    with pytest.raises(ArtifactError, match="nests objects and lists deeper than 32 levels"):
        load_library(root, allow_unsigned=True)
