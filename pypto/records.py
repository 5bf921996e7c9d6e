"""The JSON records an artifact or a library carries (manifest.json, golden.json, the
library index, a package signature): read with bounded size and nesting, digested
canonically.

pypto writes records a few levels deep and at most a few megabytes long; a damaged or
hostile one may be anything.  `parse_record` refuses what no pypto writer produces
before any reader walks it (a thousand nested lists exhaust the interpreter's stack in
`json.loads` or in the digest's `json.dumps`), so every refusal is a `RecordError`
the caller words for its file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MANIFEST_NAME = "manifest.json"
"""The record that describes an artifact directory (`pypto.runtime.manifest` reads it, and
holds its schema); the build writes it last, so its presence marks an artifact complete.
Named here, where the build and the artifact cache find it without loading the runtime."""

MAX_RECORD_BYTES = 16 << 20
"""The largest record pypto reads (a 1,000-variant library index is about 1 MB)."""

MAX_RECORD_NESTING = 32
"""The deepest nesting of objects and lists pypto reads (its records nest at most 6)."""


class RecordError(ValueError):
    """A record that does not parse or exceeds the bounds; the message says why, without
    the file's name (the caller adds it)."""


def read_record(path: str | os.PathLike) -> Any:
    """The parsed JSON of the file at `path` (see `parse_record`).  FileNotFoundError
    propagates (what a missing file means is the caller's to say); any other reason the
    file cannot be read is a RecordError."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RecordError(f"cannot read it: {exc.strerror or exc}") from None
    return parse_record(data)


def parse_record(data: bytes) -> Any:
    """`data` as JSON, after checking it is at most MAX_RECORD_BYTES long and nests at
    most MAX_RECORD_NESTING levels deep."""
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"it is larger than {MAX_RECORD_BYTES >> 20} MiB, which no pypto "
                          "record is")
    try:
        value = json.loads(data)
    except RecursionError:
        raise RecordError(_too_deep()) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an over-long integer
        raise RecordError(f"it is not valid JSON: {exc}") from None
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > MAX_RECORD_NESTING:
            raise RecordError(_too_deep())
        if isinstance(item, dict):
            pending.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            pending.extend((v, depth + 1) for v in item)
    return value


def versioned_record(where: str | os.PathLike, source: bytes | Path, *, noun: str,
                     major: int, error: type[Exception]) -> tuple[dict[str, Any], str]:
    """The record in `source` (its bytes, or the path of its file, read by `read_record`:
    FileNotFoundError propagates) and its schema version, once it parses, is a JSON object
    and its schema has major version `major`.  Every refusal is an `error` whose message
    starts with `where` and names the record as `noun` ("manifest", "golden.json")."""
    try:
        raw = parse_record(source) if isinstance(source, bytes) else read_record(source)
    except RecordError as exc:
        raise error(f"{where}: cannot read {noun}: {exc}") from None
    return raw, schema_version(where, raw, noun=noun, major=major, error=error)


def schema_version(where: str | os.PathLike, raw: Any, *, noun: str, major: int,
                   error: type[Exception]) -> str:
    """The schema version of the parsed record `raw`, once `raw` is a JSON object whose
    `schema_version` has major version `major`; otherwise an `error` as `versioned_record`
    words it."""
    if not isinstance(raw, dict):
        raise error(f"{where}: {noun} must be a JSON object")
    schema = raw.get("schema_version")
    found = schema.split(".")[0] if isinstance(schema, str) else None
    if not isinstance(schema, str) or found != str(major):
        raise error(f"{where}: {noun} schema version {schema!r} is not supported: expected "
                    f"major version {major}, found {found}")
    return schema


def _too_deep() -> str:
    return (f"it nests objects and lists deeper than {MAX_RECORD_NESTING} levels, which no "
            "pypto record does")


def record_text(record: Mapping[str, Any]) -> str:
    """A record as pypto writes it (manifest.json, golden.json, the library index, a
    signature): JSON with sorted keys, indented two spaces, ending in a newline, so equal
    records are equal bytes."""
    return json.dumps(record, sort_keys=True, indent=2) + "\n"


def record_digest(raw: Mapping[str, Any], own_field: str) -> str:
    """sha256 of a record's content without the field `own_field` that holds the digest
    itself, as canonical JSON (sorted keys, no whitespace, ASCII)."""
    content = {k: v for k, v in raw.items() if k != own_field}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()
