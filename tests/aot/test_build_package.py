"""A package: loads and checks anywhere without the compiler; tampering is refused."""

from __future__ import annotations

import hashlib
import shutil
import tarfile

import pytest

from pypto.runtime import ArtifactError, load_library

PACKAGE = "dist/pypto_kernels-0.1.0-a5sim.tar"

BLOCKED_CHECK = r'''
import importlib.abc, sys

BLOCKED = ("pypto.language", "pypto.passes", "pypto.codegen", "pypto.toolchain",
           "pypto.compiler", "pypto.spec", "pypto.golden", "jinja2", "SCons")

def blocked(name):
    return name in BLOCKED or name.startswith(tuple(b + "." for b in BLOCKED))

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if blocked(name):
            raise ImportError(f"{name} is blocked in this process")
        return None

sys.meta_path.insert(0, Block())

from pypto.runtime import load_library

with load_library(sys.argv[1], platform="a5sim", allow_unsigned=True) as library:
    table = library.check()
    print(table)
    assert table.passed and len(table) >= 10
    assert not [m for m in sys.modules if blocked(m)]
print("CHECKED-WITHOUT-COMPILER")
'''


def test_package_copied_elsewhere_loads_and_checks_without_the_compiler(
        shipped_builds, tmp_path, run_script):
    project, _ = shipped_builds
    elsewhere = tmp_path / "deploy" / "kernels.tar"
    elsewhere.parent.mkdir()
    shutil.copy(project.root / PACKAGE, elsewhere)
    script = tmp_path / "check.py"
    script.write_text(BLOCKED_CHECK)
    proc = run_script(BLOCKED_CHECK.replace("sys.argv[1]", repr(str(elsewhere))))
    assert "CHECKED-WITHOUT-COMPILER" in proc.stdout


def _unpacked(project, tmp_path):
    with tarfile.open(project.root / PACKAGE) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "pypto_kernels-0.1.0-a5sim"


def _flip(path):
    data = bytearray(path.read_bytes())
    before = hashlib.sha256(data).hexdigest()
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    return before, hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("relpath", [
    "a5sim/add/f32_128x128/kernels/add_incore_0.so",
    "a5sim/add/f32_128x128/orchestration.so",
    "a5sim/add/f32_128x128/manifest.json",
    "goldens/add/f32_128x128/golden.json",
    "goldens/add/f32_128x128/inputs.safetensors",
    "goldens/add/f32_128x128/expected.safetensors",
])
def test_a_flipped_byte_is_refused_on_first_use_naming_the_file_and_both_hashes(
        shipped_builds, tmp_path, relpath):
    root = _unpacked(shipped_builds[0], tmp_path)
    recorded, found = _flip(root / relpath)
    library = load_library(root, platform="a5sim", allow_unsigned=True)  # reads the index alone
    with pytest.raises(ArtifactError) as info:
        library["add"]["f32_128x128"].verify()
    message = str(info.value)
    assert relpath.rsplit("/", 1)[-1] in message and "sha256 mismatch" in message
    assert recorded in message and found in message


def test_an_a5sim_package_is_refused_by_an_a2a3sim_runtime(shipped_builds):
    with pytest.raises(ArtifactError, match="built for a5sim, not for this runtime's platform "
                                            "'a2a3sim'"):
        load_library(shipped_builds[0].root / PACKAGE, platform="a2a3sim", allow_unsigned=True)


def test_an_index_that_claims_another_platform_is_refused(shipped_builds, tmp_path):
    root = _unpacked(shipped_builds[0], tmp_path)
    index = root / "library-a5sim.json"
    (root / "library-a2a3sim.json").write_text(index.read_text())
    index.unlink()
    with pytest.raises(ArtifactError, match="platform mismatch: this runtime runs 'a2a3sim', "
                                            "the library is built for 'a5sim'"):
        load_library(root, platform="a2a3sim", allow_unsigned=True)


def test_library_exposes_kernels_by_name_and_variant(shipped_builds):
    import torch

    with load_library(shipped_builds[0].root / PACKAGE, allow_unsigned=True) as library:
        assert library.name == "pypto_kernels" and library.platform == "a5sim"
        add = library["add"]["f32_33x100"]
        a, b = torch.randn(33, 100), torch.randn(33, 100)
        out = torch.empty(33, 100)
        add.run(a, b, out)
        assert torch.equal(out, a + b)
        with pytest.raises(KeyError, match="kernel 'add' has no variant 'f64'; it has \\["):
            library["add"]["f64"]
        with pytest.raises(KeyError, match="library 'pypto_kernels' has no kernel 'nope'; it "
                                           "has \\[.*'add'"):
            library["nope"]


def test_scons_package_signs_with_the_configured_key_and_again_when_it_changes(
        shipped_builds, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    project = shipped_builds[1].copy(tmp_path / "signing")
    publics = []
    for name in ("first.pem", "second.pem"):
        key = ed25519.Ed25519PrivateKey.generate()
        (tmp_path / name).write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        publics.append(key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex())
    project.scons("platform=a5sim", "package", f"signing_key={tmp_path / 'first.pem'}")
    with load_library(project.root / PACKAGE, trusted_keys=[publics[0]]) as library:
        assert library.signed_by == publics[0] and library.check().passed
    # The key is a source of the package, and $PYPTO_SIGNING_KEY names one too.
    project.scons("platform=a5sim", "package", PYPTO_SIGNING_KEY=str(tmp_path / "second.pem"))
    with pytest.raises(ArtifactError, match=f"signed by key {publics[1]}, which is not among"):
        load_library(project.root / PACKAGE, trusted_keys=[publics[0]])
    bad = project.scons("platform=a5sim", "package", f"signing_key={tmp_path / 'first.pem'}x",
                        ok=False)
    assert bad.returncode != 0 and "first.pemx" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
