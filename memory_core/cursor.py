"""Opaque keyset cursors (R-CURSOR).

A cursor names the last item of a window (its keyset position) and a
fingerprint of the query it came from: the filter, the scope and the order,
not the page size. Passing it back resumes strictly after that position, so
concurrent inserts and deletes cause no gaps or repeats and the cost does
not grow with depth. A cursor from another query is a ValidationError.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from memory_core.errors import ValidationError

__all__ = ["decode_cursor", "encode_cursor", "fingerprint"]

_VERSION = 1


def fingerprint(*parts: Any) -> str:
    """A short stable hash of the query's identity (JSON-able parts)."""
    raw = json.dumps(parts, sort_keys=True, default=repr, ensure_ascii=True)
    return hashlib.blake2s(raw.encode("ascii"), digest_size=9).hexdigest()


def encode_cursor(query_fingerprint: str, key: tuple[Any, ...]) -> str:
    """Cursor text for "after ``key``" in the query with ``query_fingerprint``."""
    raw = json.dumps([_VERSION, query_fingerprint, list(key)], separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(cursor: Any, query_fingerprint: str, key_types: tuple[type, ...]) -> tuple[Any, ...]:
    """The keyset position in ``cursor``.

    Raises:
        ValidationError: not a cursor this library wrote, or written for a
            different query (filter, scope or order).
    """
    if not isinstance(cursor, str) or not cursor:
        raise ValidationError("cursor", "must be a non-empty str from a previous page's next_cursor", "R-CURSOR")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        version, found, key = json.loads(raw)
    except (ValueError, TypeError):
        raise ValidationError("cursor", "is not a memory-core cursor", "R-CURSOR") from None
    if version != _VERSION or not isinstance(key, list) or len(key) != len(key_types):
        raise ValidationError("cursor", "is not a memory-core cursor", "R-CURSOR")
    if not all(type(part) is kind for part, kind in zip(key, key_types, strict=True)):
        raise ValidationError("cursor", "is not a memory-core cursor", "R-CURSOR")
    if found != query_fingerprint:
        raise ValidationError("cursor", "was made for a different query (filter, scope or order)", "R-CURSOR")
    return tuple(key)
