"""Package signatures: the publisher's Ed25519 signature of a library index.

`scons package` with a signing key writes `library-<platform>.json.sig` beside the index
in the archive: a small JSON record naming the algorithm, the public key and the
signature of the index's exact bytes.  The index records the sha256 and size of every
other file of the package, so the signature covers them all.  `load_library(...,
trusted_keys=[...])` accepts a library only when one of those keys signed its index (see
docs/reliability.md, "Trust", for what this guards and what it does not).

`cryptography` (a dependency for this alone, docs/dependencies.md) is imported only by
the functions that sign or verify: opening an unsigned library, as every deployment
before signing did, costs nothing more.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto.records import RecordError, parse_record, record_text
from pypto.runtime.errors import ArtifactError

SIGNATURE_SCHEMA_VERSION = "1.0"
ALGORITHM = "ed25519"
MAX_SIGNATURE_BYTES = 4096
"""A signature record is about 250 bytes; anything much larger is not one."""

_HEX_KEY = re.compile(r"[0-9a-f]{64}")
_HEX_SIGNATURE = re.compile(r"[0-9a-f]{128}")


def signature_name(index_name: str) -> str:
    """The signature's file name beside the index `index_name`: `<index_name>.sig`."""
    return f"{index_name}.sig"


def public_key_hex(key: Any) -> str:
    """The raw Ed25519 public key `key`, as 64 hex digits (how pypto names keys).

    `key` is an `Ed25519PublicKey` or `Ed25519PrivateKey`, the 32 raw bytes, their 64
    hex digits, PEM text (str or bytes) or the path of a PEM file of a public or private
    key (`openssl genpkey -algorithm ed25519` writes one).  Anything else is a
    ValueError that says what was given."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if isinstance(key, ed25519.Ed25519PrivateKey):
        key = key.public_key()
    if isinstance(key, ed25519.Ed25519PublicKey):
        return key.public_bytes(serialization.Encoding.Raw,
                                serialization.PublicFormat.Raw).hex()
    if isinstance(key, str) and _HEX_KEY.fullmatch(key.strip().lower()):
        return key.strip().lower()
    if isinstance(key, bytes) and len(key) == 32:
        return key.hex()
    if isinstance(key, os.PathLike):
        try:
            key = Path(key).read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read the key file {os.fspath(key)}: {exc}") from None
    if isinstance(key, str):
        key = key.encode()
    if isinstance(key, bytes) and b"-----BEGIN" in key:
        return public_key_hex(_pem_key(key))
    raise ValueError(
        f"{key!r:.80} is not an Ed25519 key: pass an Ed25519PublicKey, 32 raw bytes, 64 hex "
        "digits, PEM text or a pathlib.Path to a PEM file"
    )


def _pem_key(pem: bytes) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    loaders = (lambda: serialization.load_pem_public_key(pem),
               lambda: serialization.load_pem_private_key(pem, password=None))
    for load in loaders:
        try:
            key = load()
        except (ValueError, TypeError):
            continue
        if isinstance(key, (ed25519.Ed25519PublicKey, ed25519.Ed25519PrivateKey)):
            return key
        raise ValueError(f"the PEM key is a {type(key).__name__}, not an Ed25519 key")
    raise ValueError("the PEM text holds no Ed25519 key (or an encrypted private key, which "
                     "pypto does not read)")


def sign_index(index: bytes, private_key: str | os.PathLike) -> bytes:
    """The signature record of the index bytes `index` by the Ed25519 private key in the
    PEM file `private_key`.  Ed25519 signatures are deterministic: the same index and key
    give the same bytes."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        pem = Path(private_key).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read the signing key {os.fspath(private_key)}: "
                         f"{exc.strerror or exc}") from None
    key = _pem_key(pem)
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ValueError(f"{os.fspath(private_key)} holds a public key; signing needs the "
                         "private key (`openssl genpkey -algorithm ed25519 -out key.pem`)")
    record = {
        "schema_version": SIGNATURE_SCHEMA_VERSION,
        "algorithm": ALGORITHM,
        "public_key": public_key_hex(key),
        "signature": key.sign(index).hex(),
    }
    return record_text(record).encode()


@dataclass(frozen=True)
class Trust:
    """What a caller of `load_library` accepts: indexes signed by one of `keys` (64-hex
    public keys), and unsigned ones only when `allow_unsigned`."""

    keys: frozenset[str]
    allow_unsigned: bool

    @classmethod
    def of(cls, trusted_keys: Iterable[Any] | None, allow_unsigned: bool) -> Trust:
        """From `load_library`'s arguments (each key as `public_key_hex` takes it)."""
        if isinstance(trusted_keys, (str, bytes, os.PathLike)):
            raise TypeError("trusted_keys takes a list of keys, e.g. trusted_keys=[key]")
        keys = frozenset(public_key_hex(k) for k in trusted_keys or ())
        if not isinstance(allow_unsigned, bool):
            raise TypeError(f"allow_unsigned must be True or False, got {allow_unsigned!r}")
        return cls(keys, allow_unsigned)

    def check(self, where: str, index: bytes, signature: bytes | None) -> str | None:
        """The key (64 hex) whose signature of `index` verified, or None for a library
        accepted unsigned; else an ArtifactError that starts with `where` (the archive or
        the index) and says what to do."""
        if signature is None:
            if self.allow_unsigned:
                return None
            if self.keys:
                raise ArtifactError(
                    f"{where}: the library is not signed, and trusted_keys asks for a "
                    "signature; sign it (`scons package signing_key=<key.pem>`) or pass "
                    "allow_unsigned=True to load it without one"
                )
            raise ArtifactError(
                f"{where}: the library is not signed; pass allow_unsigned=True to load it "
                "without a signature, or sign it (`scons package signing_key=<key.pem>`) and "
                "pass trusted_keys=[<public key>]"
            )
        key, value = _read_signature(where, signature)
        if not self.keys:
            if self.allow_unsigned:
                return None
            raise ArtifactError(
                f"{where}: the library is signed by key {key}; pass trusted_keys=[...] to "
                "check the signature (or allow_unsigned=True to load it unchecked)"
            )
        if key not in self.keys:
            raise ArtifactError(
                f"{where}: the library is signed by key {key}, which is not among the "
                f"trusted_keys ({', '.join(sorted(self.keys))})"
            )
        if not _verifies(key, value, index):
            raise ArtifactError(
                f"{where}: the signature by key {key} does not verify: the library index "
                "changed after it was signed, or the signature is forged; do not load it"
            )
        return key


def _read_signature(where: str, data: bytes) -> tuple[str, bytes]:
    """The (public key, signature) a signature record holds."""
    try:
        if len(data) > MAX_SIGNATURE_BYTES:
            raise RecordError(f"it is larger than {MAX_SIGNATURE_BYTES} bytes")
        raw = parse_record(data)
    except RecordError as exc:
        raise ArtifactError(f"{where}: cannot read the signature: {exc}") from None
    fields = raw if isinstance(raw, dict) else {}
    key, value = fields.get("public_key"), fields.get("signature")
    if (fields.get("algorithm") != ALGORITHM or not isinstance(key, str)
            or not _HEX_KEY.fullmatch(key) or not isinstance(value, str)
            or not _HEX_SIGNATURE.fullmatch(value)):
        raise ArtifactError(
            f"{where}: the signature is malformed: it should name algorithm {ALGORITHM!r}, a "
            "public_key of 64 and a signature of 128 lowercase hex digits"
        )
    return key, bytes.fromhex(value)


def _verifies(key: str, signature: bytes, index: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(key)).verify(signature, index)
    except InvalidSignature:
        return False
    return True
