"""What the catalogue's test files share: the kernel they break, a built artifact and a
built library of it, signing keys, and the check that an error is one for users."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

import pypto.language as pl
from pypto.ir import PyptoError
from pypto.runtime import PyptoRuntimeError, RunConfig, write_golden
from pypto.runtime.manifest import manifest_digest
from pypto.spec.package import LibraryEntry, write_library_index
from pypto.toolchain import CacheStorageError, ToolchainNotFoundError

PLATFORM = "a2a3sim"


@pl.jit
def add(a: pl.Tensor[[16, 128], pl.FP32], b: pl.Tensor[[16, 128], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def copy(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 0.0)
    return out


def zeros(*shape, dtype=torch.float32):
    return torch.zeros(*shape, dtype=dtype)


def artifact(tmp_path: Path, platform: str = PLATFORM, name: str = "artifact") -> Path:
    """A private copy of `add`'s artifact, to damage."""
    compiled = add.compile(zeros(16, 128), zeros(16, 128), zeros(16, 128),
                           config=RunConfig(platform=platform))
    dst = tmp_path / name
    shutil.copytree(compiled.output_dir, dst)
    return dst


def edit_manifest(directory: Path, edit) -> None:
    """Applies `edit` to the manifest of the artifact `directory` and records the digest
    of the result: what a forger (not an accident) does."""
    path = directory / "manifest.json"
    raw = json.loads(path.read_text())
    edit(raw)
    raw["manifest_sha256"] = manifest_digest(raw)
    path.write_text(json.dumps(raw, sort_keys=True, indent=2) + "\n")


def library(root: Path) -> Path:
    """A built library of `add` at `root` (one variant, with its golden and its index),
    as `scons` writes one, for `platform` a2a3sim."""
    artifact(root / PLATFORM / "add", name="v")
    a, b = torch.randn(16, 128), torch.randn(16, 128)
    write_golden(root / "goldens" / "add" / "v", {"a": a, "b": b}, {"out": a + b},
                 rtol=0, atol=0, reason="one FP32 addition rounds once, as torch's does")
    write_library_index(root, "lib", "1.0", PLATFORM,
                        [LibraryEntry("add", "add.py", "v", f"{PLATFORM}/add/v", "goldens/add/v")])
    return root


def signing_key(path: Path) -> tuple[Path, str]:
    """A new Ed25519 private key written as PEM to `path`, and its public key in hex."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    public = key.public_key().public_bytes(serialization.Encoding.Raw,
                                           serialization.PublicFormat.Raw)
    return path, public.hex()


USER_ERRORS = (PyptoError, PyptoRuntimeError, ToolchainNotFoundError, CacheStorageError,
               TypeError, ValueError, FileNotFoundError)
"""What a user may see: pypto's own errors, TypeError / ValueError for arguments of the
wrong kind or value (a wrong call, a wrong environment value) and FileNotFoundError for a
path that holds no artifact."""


def assert_user_facing(error: BaseException) -> None:
    """`error` is one a user may see, raised without a chained internal error: the
    traceback Python prints for it shows no pypto internals failing underneath."""
    assert isinstance(error, USER_ERRORS), f"{type(error).__name__}: {error}"
    assert error.__cause__ is None, repr(error.__cause__)
    assert error.__suppress_context__ or error.__context__ is None, repr(error.__context__)
    assert "Traceback" not in str(error)
